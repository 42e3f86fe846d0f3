"""The two types every SQL piece of a store speaks in, in a module of their own (the connections and the
migrations both need them, and neither needs the other for them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["AuxCursor", "Dialect"]

Dialect = Literal["sqlite", "postgres"]


class AuxCursor(Protocol):
    """The part of a DB-API cursor the features use (`sqlite3.Cursor` and `memdir.store._pg.PgCursor`)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...
