"""``memdir sync SRC DST``: mirror a memdir store and a memory store of any Memory Stores API, either way.

Three-way, against the state both sides agreed on at the last sync (`memdir.memstores._syncstate`): a memory
new or changed (by SHA-256) in SRC since then is created or changed in DST, one deleted is deleted, one renamed is
renamed (a memory's id stays; a store's renames come from its change log). A memory changed on *both* sides since
the last sync is a conflict: reported and left as it is on both, never overwritten, until a person settles it
(the report names it again on every run). A change made in DST alone is left there and reported (``both=True``
copies it to SRC as well). Each change is applied with a precondition on what DST held when the sync looked, so
one made meanwhile turns into a conflict rather than being lost, and is recorded as soon as it is made: a sync
killed at any point, run again, finds what it did (the same content on both sides) and carries on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ..errors import (
    AlreadyExistsError,
    ConflictError,
    EncodingError,
    LimitError,
    NotADirectoryError_,
    NotAFileError,
    NotFoundError,
    PathError,
    PolicyError,
)
from ._errors import InvalidRequestError
from ._syncstate import Link, SyncState

if TYPE_CHECKING:
    from pathlib import Path

    from ._sides import Item, Side

__all__ = ["Change", "SyncReport", "sync"]

Kind = Literal["create", "change", "delete", "link", "conflict", "kept", "skipped"]
Progress = Callable[[int, int], None]

_REFUSALS = (InvalidRequestError, PathError, EncodingError, LimitError, PolicyError)  # what a side cannot hold
_TAKEN = (AlreadyExistsError, NotADirectoryError_, NotAFileError)


@dataclass(frozen=True, slots=True)
class Change:
    """One line of the report: done (or, in a dry run, to do), or left for a person."""

    kind: Kind
    key: str
    side: str = ""  # the side it is (or would be) made on
    detail: str = ""


@dataclass
class SyncReport:
    changes: list[Change] = field(default_factory=list)
    dry_run: bool = False

    def of(self, *kinds: Kind) -> list[Change]:
        return [c for c in self.changes if c.kind in kinds]

    @property
    def conflicts(self) -> list[Change]:
        return self.of("conflict")


@dataclass(slots=True)
class _Action:
    kind: Literal["create", "change", "delete", "link"]
    key: str
    to: Side
    source: Item | None  # what the change comes from (None: deleted there)
    target: Item | None  # what it replaces on ``to`` (None: nothing yet)
    link: Link | None  # the link it updates (None: a new one)


@dataclass
class _View:
    """One side as the sync found it."""

    side: Side
    items: dict[str, Item]
    where: dict[str, str]  # id at the last sync -> id now
    cursor: int | None

    def now(self, ident: str) -> Item | None:
        current = self.where.get(ident)
        return None if current is None else self.items.get(current)


def sync(
    src: Side,
    dst: Side,
    *,
    state_path: Path,
    both: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> SyncReport:
    """Mirror ``src`` into ``dst`` (and, with ``both``, ``dst`` into ``src``); see the module docstring."""
    flipped = src.identity > dst.identity  # the state keeps a pair in one order, whichever way it is synced
    state = SyncState(state_path, *sorted((src.identity, dst.identity)))
    try:
        with state.running():
            return _Run(src, dst, state, flipped, both, progress).go(dry_run)
    finally:
        state.close()


class _Run:
    def __init__(
        self, src: Side, dst: Side, state: SyncState, flipped: bool, both: bool, progress: Progress | None
    ) -> None:
        self.src, self.dst, self.state, self.flipped, self.both = src, dst, state, flipped, both
        self.progress = progress or (lambda _done, _total: None)
        self.report = SyncReport()

    # -- the two sides' ids in a link ---------------------------------------------------------------------------

    def ids(self, link: Link) -> tuple[str, str]:
        """(the id in SRC, the id in DST)."""
        return (link.b, link.a) if self.flipped else (link.a, link.b)

    def shas(self, link: Link) -> tuple[str, str]:
        """(the SHA-256 agreed in SRC, the one in DST)."""
        return (link.b_sha256, link.a_sha256) if self.flipped else (link.a_sha256, link.b_sha256)

    def link(self, src: Item, dst: Item) -> Link:
        if self.flipped:
            return Link(dst.ident, src.ident, dst.key, dst.sha256, src.sha256)
        return Link(src.ident, dst.ident, dst.key, src.sha256, dst.sha256)

    # -- planning -------------------------------------------------------------------------------------------

    def go(self, dry_run: bool) -> SyncReport:
        links = self.state.links()
        src_cursor, dst_cursor = self.state.cursors()
        if self.flipped:
            src_cursor, dst_cursor = dst_cursor, src_cursor
        src = self.view(self.src, {self.ids(k)[0] for k in links}, src_cursor)
        dst = self.view(self.dst, {self.ids(k)[1] for k in links}, dst_cursor)
        actions = self.plan(links, src, dst)
        self.report.dry_run = dry_run
        if dry_run:
            self.report.changes[:0] = [Change(a.kind, a.key, a.to.label) for a in actions]
            return self.report
        self.apply(actions)
        cursors = (self.src.settled(src.cursor), self.dst.settled(dst.cursor))
        self.state.set_cursors(*(reversed(cursors) if self.flipped else cursors))
        return self.report

    @staticmethod
    def view(side: Side, idents: set[str], cursor: int | None) -> _View:
        items = side.scan()
        where, last = side.locate(idents, cursor)
        return _View(side, items, where, last)

    def plan(self, links: list[Link], src: _View, dst: _View) -> list[_Action]:
        actions: list[_Action] = []
        claimed_src: set[str] = set()
        claimed_dst: set[str] = set()
        for link in links:
            src_id, dst_id = self.ids(link)
            here, there = src.now(src_id), dst.now(dst_id)
            claimed_src.update([] if here is None else [here.ident])
            claimed_dst.update([] if there is None else [there.ident])
            actions += self.judge(link, here, there)
        actions += self.new_items(src, dst, claimed_src, claimed_dst)
        return actions

    def judge(self, link: Link, here: Item | None, there: Item | None) -> list[_Action]:
        src_sha, dst_sha = self.shas(link)
        src_same, dst_same = _same(here, link.key, src_sha), _same(there, link.key, dst_sha)
        if src_same and dst_same:
            return []
        if dst_same:
            return [_carry(link, here, there, self.dst)]
        if src_same:
            if self.both:
                return [_carry(link, there, here, self.src)]
            what = _what(there, link.key, dst_sha)
            self.left("kept", link.key, self.dst, f"changed only in {self.dst.label} ({what}); not copied back: "
                      "sync the other way, or with --both")  # fmt: skip
            return []
        if _state(here) == _state(there):  # both sides made the same change: just remember it
            return [_Action("link", link.key, self.dst, here, there, link)]
        mine, theirs = _what(here, link.key, src_sha), _what(there, link.key, dst_sha)
        self.left("conflict", link.key, "", f"changed on both sides since the last sync ({mine} in {self.src.label}, "
                  f"{theirs} in {self.dst.label}); left as it is on both")  # fmt: skip
        return []

    def new_items(self, src: _View, dst: _View, claimed_src: set[str], claimed_dst: set[str]) -> list[_Action]:
        actions: list[_Action] = []
        fresh_dst = {i.key: i for i in dst.items.values() if i.ident not in claimed_dst}
        linked_dst_keys = {i.key for i in dst.items.values() if i.ident in claimed_dst}
        linked_src_keys = {i.key for i in src.items.values() if i.ident in claimed_src}
        for item in sorted((i for i in src.items.values() if i.ident not in claimed_src), key=lambda i: i.key):
            there = fresh_dst.pop(item.key, None)
            if there is not None and there.sha256 == item.sha256:
                actions.append(_Action("link", item.key, self.dst, item, there, None))
            elif there is not None:
                self.left("conflict", item.key, "", "created on both sides with different content; left as it is")
            elif item.key in linked_dst_keys:
                self.left("conflict", item.key, "", f"new in {self.src.label}, while in {self.dst.label} another "
                          "memory came to this path; left as it is")  # fmt: skip
            else:
                actions.append(_Action("create", item.key, self.dst, item, None, None))
        for there in sorted(fresh_dst.values(), key=lambda i: i.key):
            if self.both and there.key not in linked_src_keys:
                actions.append(_Action("create", there.key, self.src, there, None, None))
            else:
                self.left("kept", there.key, self.dst, f"only in {self.dst.label}; not copied back")
        return actions

    def left(self, kind: Kind, key: str, side: Side | str, detail: str) -> None:
        self.report.changes.append(Change(kind, key, side if isinstance(side, str) else side.label, detail))

    # -- applying -------------------------------------------------------------------------------------------

    def apply(self, actions: list[_Action]) -> None:
        order = {"delete": 0, "change": 1, "create": 2, "link": 3}
        pending = sorted(actions, key=lambda a: (order[a.kind], a.key))
        done, total = 0, len(pending)
        while pending:
            deferred: list[_Action] = []
            for action in pending:
                outcome = self.attempt(action, last_pass=False)
                if outcome is None:
                    deferred.append(action)  # its path is taken for now: perhaps by one that moves away later
                    continue
                done += 1
                self.progress(done, total)
            if len(deferred) == len(pending):  # no progress: what is left really is in the way
                for action in deferred:
                    self.attempt(action, last_pass=True)
                    done += 1
                    self.progress(done, total)
                return
            pending = deferred

    def attempt(self, action: _Action, *, last_pass: bool) -> bool | None:
        """Apply one action and record it; None when its path is taken (to try again after the others)."""
        try:
            self.carry_out(action)
        except _TAKEN as exc:
            if not last_pass and action.kind in ("change", "create"):
                return None
            self.left("conflict", action.key, action.to, f"the path is taken in {action.to.label}: {exc}")
        except ConflictError as exc:
            self.left("conflict", action.key, action.to, f"{str(exc).removeprefix('Error: ')}; left as it is")
        except NotFoundError:
            self.left("conflict", action.key, action.to, "it went away during the sync; left as it is")
        except _REFUSALS as exc:
            self.left("skipped", action.key, action.to, f"cannot be copied: {str(exc).removeprefix('Error: ')}")
        return True

    def carry_out(self, action: _Action) -> None:
        to, source, target, link = action.to, action.source, action.target, action.link
        towards_dst = to is self.dst
        if action.kind == "link":
            if source is None or target is None:
                assert link is not None
                self.state.drop(link)  # gone on both sides
            else:
                self.remember(source, target, towards_dst, link)
        elif action.kind == "delete":
            assert target is not None and link is not None
            to.delete(target)
            self.state.drop(link)
        elif action.kind == "create":
            assert source is not None
            made = to.create(source.key, self.read(source, towards_dst))
            self.remember(source, made, towards_dst, None)
        else:
            assert source is not None and target is not None
            content = None if source.sha256 == target.sha256 else self.read(source, towards_dst)
            made = to.change(target, source.key, content)
            self.remember(source, made, towards_dst, link)
        self.report.changes.append(Change(action.kind, action.key, to.label))

    def read(self, item: Item, towards_dst: bool) -> bytes:
        return (self.src if towards_dst else self.dst).read(item)

    def remember(self, source: Item, made: Item, towards_dst: bool, replaces: Link | None) -> None:
        src_item, dst_item = (source, made) if towards_dst else (made, source)
        self.state.put(self.link(src_item, dst_item), replaces)


def _carry(link: Link, now: Item | None, there: Item | None, to: Side) -> _Action:
    """The action making ``there`` (unchanged since ``link``) what ``now`` became."""
    if now is None:
        return _Action("delete", link.key, to, None, there, link)
    return _Action("change", now.key, to, now, there, link)


def _same(item: Item | None, key: str, sha: str) -> bool:
    """Whether ``item`` is still as the last sync left it on its side (``key``, ``sha``)."""
    return item is not None and (item.key, item.sha256) == (key, sha)


def _state(item: Item | None) -> tuple[str, str] | None:
    return None if item is None else (item.key, item.sha256)


def _what(item: Item | None, key: str, sha: str) -> str:
    if item is None:
        return "deleted"
    moved, edited = item.key != key, item.sha256 != sha
    if moved and edited:
        return f"renamed to {item.key} and edited"
    return f"renamed to {item.key}" if moved else "edited"
