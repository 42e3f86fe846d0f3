"""Policy applied to what the model asks: limits, and the safety of writes.

- `Limits`: sizes and counts (SPEC.md "Limits");
- `WritePolicy` / `scan`: secrets and injected instructions, screened before a write is committed
  (`memdir.policy.pipeline`, with the checks in `secrets` and `injection`);
- the quarantine of held writes (`quarantine`), the audit log and access times (`audit`), integrity checks
  (`integrity`), expiry and retention (`retention`), and the ``[policy]`` settings (`config`).
"""

from __future__ import annotations

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
    "WritePolicy",
    "load_policy",
    "scan",
]
