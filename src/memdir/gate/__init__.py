"""The gate: one layer between every door and every store, where policy, limits, review and audit are enforced.

Doors (the memory tool, MCP, the HTTP server and its web page, the CLI, the agent, import, migrate, review) talk
to a `GatedStore`; backends (`memdir.store`) sit below it and know nothing of it.

    >>> import memdir
    >>> from memdir.gate import Caller, GatedStore
    >>> gate = GatedStore(memdir.open_store("memory:"), Caller(actor="model", channel="python"))
    >>> gate.write("/memories/a.md", b"key AKIA" + b"Z" * 16 + b"\\n").size  # doctest: +SKIP

A new door gets the gate by wrapping the store it opened (or by asking its framework for the gated store of the
authenticated caller, as the server's handlers do): it writes no policy code. See docs/decisions.md, "The gate".
"""

from __future__ import annotations

import dataclasses

from ._caller import UNTRUSTED_PREFIX, Caller
from ._receipt import Receipt, active
from ._remote import ReviewQueue, audit_entries, review_queue
from ._review import Review
from ._rules import Rules
from ._screen import changed_spans as changed_spans_of
from ._screen import describe, is_redaction_of
from ._store import GatedStore

__all__ = [
    "UNTRUSTED_PREFIX",
    "Caller",
    "GatedStore",
    "Receipt",
    "Review",
    "ReviewQueue",
    "Rules",
    "active",
    "audit_entries",
    "changed_spans_of",
    "describe",
    "gated",
    "is_redaction_of",
    "review_queue",
]


def gated(store: GatedStore | object, caller: Caller | None = None, rules: Rules | None = None) -> GatedStore:
    """``store`` behind a gate: a backend wrapped (for ``caller``, under ``rules``), or a gate for ``caller``."""
    from ..store._base import Store

    if isinstance(store, GatedStore):
        if caller is None:
            return store if rules is None else store.with_rules(rules)
        twin = store.with_caller(**{f.name: getattr(caller, f.name) for f in dataclasses.fields(caller)})
        return twin if rules is None else twin.with_rules(rules)
    if not isinstance(store, Store):
        raise TypeError(f"expected a memdir Store, got {type(store).__name__}")
    return GatedStore(store, caller, rules)
