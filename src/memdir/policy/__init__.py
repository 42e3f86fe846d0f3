"""Policy applied to what the model asks: limits, and the safety of writes.

- `Limits`: sizes and counts (SPEC.md "Limits");
- `WritePolicy` / `scan`: secrets and injected instructions, screened before a write is committed
  (`memdir.policy.pipeline`, with the checks in `secrets` and `injection`); `undisguised`, text as its reader
  sees it (the disguises those checks read through, for a door that must read text the same way);
- the quarantine of held writes (`quarantine`), the audit log and access times (`audit`), integrity checks
  (`integrity`), expiry and retention (`retention`), and the ``[policy]`` settings (`config`).
"""

from __future__ import annotations

from ._disguise import View, undisguised
from .config import PolicyConfig, TtlRule, load_policy
from .findings import ACTIONS, Action, Finding
from .limits import Limits
from .pipeline import Screened, WritePolicy, scan

__all__ = [
    "ACTIONS",
    "Action",
    "Finding",
    "Limits",
    "PolicyConfig",
    "Screened",
    "TtlRule",
    "View",
    "WritePolicy",
    "load_policy",
    "scan",
    "undisguised",
]
