"""One door command, one audit entry: `Scope` opens a `Receipt` for a command (or joins the door's open one) and
hands it to the gate to record when the command ends; `shown_as` is how a path is recorded and said back (its
normal form, any secret in it redacted)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Protocol

from .._wire import code_for
from ..errors import HeldError, MemdirError, PathError
from ..paths import parse
from ..policy.pipeline import redact
from ._receipt import _ACTIVE, Receipt
from ._screen import redacted_label, secrets_in_name

if TYPE_CHECKING:
    import contextvars

    from ..policy.pipeline import WritePolicy
    from ..store._records import PathLike

__all__ = ["Scope", "shown_as", "shown_valid"]

_MAX_SHOWN = 1100  # a refused path is recorded as sent: bound what a hostile one adds to the log


class _Recorder(Protocol):
    """What a `Scope` needs of its gate (`memdir.gate.GatedStore`)."""

    def _shown(self, path: PathLike | None) -> str | None: ...
    def _record(self, receipt: Receipt) -> None: ...
    @property
    def _owner(self) -> object: ...


@functools.lru_cache(maxsize=4096)
def shown_as(policy: WritePolicy, path: str) -> str:
    """`GatedStore._shown` of a path string (cached: a command names its path once per store operation)."""
    try:
        virtual = parse(path).virtual
    except PathError:
        shown = path if len(path) <= _MAX_SHOWN else path[:_MAX_SHOWN] + "…"
        return redacted_label(policy, shown) or ""
    return shown_valid(policy, virtual)


@functools.lru_cache(maxsize=4096)
def shown_valid(policy: WritePolicy, virtual: str) -> str:
    """`shown_as` of a path in its normal form (a `MemoryPath`'s ``virtual``): no second parse."""
    found = secrets_in_name(policy, virtual)
    return redact(virtual, list(found))[0] if found else virtual


class Scope:
    """`GatedStore.call` and `GatedStore._op` as one small context manager (a generator-based one costs several
    times more, and every store operation enters one). ``nested``: join the door's open call when there is one."""

    __slots__ = ("_command", "_gate", "_nested", "_new_path", "_path", "_receipt", "_token")

    def __init__(
        self, gate: _Recorder, command: str, path: PathLike | None, new_path: PathLike | None, *, nested: bool
    ) -> None:
        self._gate, self._command, self._path, self._new_path, self._nested = gate, command, path, new_path, nested
        self._token: contextvars.Token[Receipt | None] | None = None

    def __enter__(self) -> Receipt:
        if self._nested:
            found = _ACTIVE.get()
            # Only a call on this store: migrate-store's writes to the destination, made inside its call on the
            # source, were recorded in the source's audit log, as the source's.
            if found is not None and found.owner is self._gate._owner:
                if found.path is None and self._path is not None:  # a door that named no path: its first op's
                    found.path = self._gate._shown(self._path)
                self._receipt = found
                return found
        gate = self._gate
        self._receipt = Receipt(self._command, gate._shown(self._path), gate._shown(self._new_path), owner=gate._owner)
        self._token = _ACTIVE.set(self._receipt)
        return self._receipt

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if self._token is None:
            return  # part of the door's call: it records
        _ACTIVE.reset(self._token)
        receipt = self._receipt
        if exc is not None and not isinstance(exc, HeldError):  # held: the receipt says "quarantine"
            # A refused command is recorded with the error's code (`conflict`, `not_found`...) and no content.
            receipt.failed = True
            receipt.sha256 = receipt.size = receipt.version = None
            if isinstance(exc, MemdirError) and receipt.detail is None:
                receipt.detail = code_for(exc)
        self._gate._record(receipt)
