"""``memdir claude-code restore --all --at TIME``: a memory directory back to how it was at a moment.

The state at ``TIME`` is rebuilt from the history (every version up to it, replayed: writes, deletions,
renames). Then each file whose content differs is written back (op ``restore``) and each file that did not exist
then is deleted, unless ``keep_newer``: every change a new version, so nothing of the history goes and the
restore itself can be undone the same way. Times are those memdir recorded the versions at: when it noticed a
change (at a hook, or at once with ``watch``).

Claude Code keeps no limits, so a file may have been bigger then than the gate now writes. Given a rehearsal (an
empty store under the same rules, `memdir.gate.GatedStore.rehearsal`), every write is tried there first
(`rehearse`): a plan the gate would stop half-way changes nothing, and says which files and why.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConfigError, HeldError, MemdirError
from ..store._records import Origin

if TYPE_CHECKING:
    from ..paths import MemoryPath
    from ..store._base import Store
    from ..store._records import Version

__all__ = ["Change", "Refused", "parse_time", "plan_restore", "rehearse", "restore_all"]

_AGO = re.compile(r"(\d+)\s*([smhdw])(?:\s*ago)?")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass(frozen=True)
class Change:
    """One change a restore makes: ``write`` the content with ``sha256``, or ``delete``."""

    path: MemoryPath
    action: str
    sha256: str | None = None


def parse_time(text: str, now: float | None = None) -> float:
    """``2026-11-29T14:38:01Z``, ``2026-11-29 14:38`` (local time without a zone), ``2026-11-29`` (its start),
    a span ago (``30m``, ``2h``, ``3d``, ``1w``) or seconds since the epoch."""
    value = text.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", value):  # seconds since the epoch, as scripts have them
        return float(value)
    ago = _AGO.fullmatch(value)
    if ago:
        return (time.time() if now is None else now) - int(ago.group(1)) * _UNITS[ago.group(2)]
    try:
        when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"cannot read {text!r} as a time: use 2026-11-29T14:38:01Z, 2026-11-29 or 2h") from None
    return when.timestamp()  # a time without a zone is local, as people mean it


def state_at(store: Store, moment: float) -> dict[MemoryPath, str]:
    """Each file that existed at ``moment`` and the SHA-256 of its content then."""
    state: dict[MemoryPath, str] = {}
    for version in store.log(0):
        if version.timestamp <= moment:
            _apply(state, version)
    return state


def _apply(state: dict[MemoryPath, str], version: Version) -> None:
    if version.old_path is not None:
        state.pop(version.old_path, None)
    if version.sha256 is None:
        state.pop(version.path, None)
    else:
        state[version.path] = version.sha256


def plan_restore(store: Store, moment: float, *, keep_newer: bool = False) -> list[Change]:
    """What `restore_all` would change, in order: deletions first (a file may come back where one was)."""
    then = state_at(store, moment)
    now = {entry.path: entry.sha256 for entry in store.list_files()}
    deletions = [] if keep_newer else [Change(p, "delete") for p in sorted(now.keys() - then.keys(), key=str)]
    changed = sorted((p for p, sha in then.items() if now.get(p) != sha), key=str)
    writes = [Change(p, "write", then[p]) for p in changed]
    return deletions + writes


@dataclass(frozen=True)
class Refused:
    """A write of the plan the rules refuse, and why (`rehearse`)."""

    change: Change
    reason: str

    def __str__(self) -> str:
        where = self.change.path.virtual
        return self.reason if self.reason.startswith(where) else f"{where}: {self.reason}"


def rehearse(store: Store, changes: list[Change], rehearsal: Store) -> list[Refused]:
    """The writes of ``changes`` that ``rehearsal`` refuses; nothing but ``rehearsal`` is written to."""
    refused: list[Refused] = []
    for change in changes:
        if change.action != "write":
            continue
        assert change.sha256 is not None
        try:
            rehearsal.write(change.path, store.read_blob(change.sha256), op="restore")
        except HeldError as exc:  # the item is the rehearsal's own, in memory: not one a person could review
            refused.append(Refused(change, f"the memory policy would hold it for review: {exc.reasons}"))
        except MemdirError as exc:
            refused.append(Refused(change, exc.reason))
    return refused


def restore_all(
    store: Store, moment: float, *, keep_newer: bool = False, actor: str = "user", rehearsal: Store | None = None
) -> list[Version]:
    """Bring ``store`` back to its state at ``moment`` as new versions (see the module docstring); with a
    ``rehearsal``, all of it or, when the rules would refuse a file, nothing (`ConfigError` naming them)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))
    origin = Origin(actor=actor, source=f"restored to {stamp}")
    plan = plan_restore(store, moment, keep_newer=keep_newer)
    refused = [] if rehearsal is None else rehearse(store, plan, rehearsal)
    if refused:
        count = f"{len(refused)} file{'s' if len(refused) != 1 else ''}"
        raise ConfigError(f"nothing was restored: the rules would refuse {count}: {'; '.join(map(str, refused))}")
    done: list[Version] = []
    for change in plan:
        if change.action == "delete":
            done += store.delete(change.path, origin=origin)
        else:
            assert change.sha256 is not None
            done.append(store.write(change.path, store.read_blob(change.sha256), origin=origin, op="restore"))
    return done
