"""API tokens: each one opens exactly one namespace of the served store (``memdir token create|list|revoke``).

Each token also belongs to a *tenant*: the owner of the memory stores the token may reach through the Memory Stores
API (`memdir.memstores`). A token made without one (every token made before tenants existed) belongs to the
tenant named after its namespace, so an existing token keeps opening its namespace and nothing else.

A token is ``mdt_`` followed by 43 URL-safe characters (32 random bytes): the prefix lets secret scanners and
people recognise one in a log or a commit. Only its SHA-256 is stored, in the store's auxiliary database
(`Store.aux`, table ``memdir_tokens``), next to a short public id used to list and revoke it. Whoever reads the
database learns the namespaces and labels, never a usable token: 256 bits of randomness need no slow hash.

Every request looks its token up again: a revocation takes effect on the next request, in every worker process
that shares the store, with nothing cached to expire.

A token may be made to expire (``memdir token create --expires 30d``): past that time it is refused exactly like a
revoked one. Each token's last use is kept (``memdir token list`` shows it) to the minute: recording every request
would make each one a write, so a use is recorded only when the last recorded one is `TOUCH_SECONDS` old.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, NotFoundError
from ..store._migrations import Migrations
from ..store._records import check_namespace

if TYPE_CHECKING:
    from ..store._db import AuxConnection, AuxDatabase
    from ..store._migrations import Schema

__all__ = ["TOKEN_PREFIX", "TOUCH_SECONDS", "TokenInfo", "TokenRegistry", "looks_like_token"]

TOKEN_PREFIX = "mdt_"
_TOKEN = re.compile(r"mdt_[A-Za-z0-9_-]{43}")
_ID = re.compile(r"[0-9a-f]{12}")
_MAX_LABEL = 200
TOUCH_SECONDS = 60.0  # a token's last use is recorded at most this often

migrations = Migrations("memdir-tokens")


@migrations("0001-tokens")
def _create_tokens(schema: Schema) -> None:
    real = "DOUBLE PRECISION" if schema.dialect == "postgres" else "REAL"
    schema.script(
        f"""
        CREATE TABLE memdir_tokens (
            id TEXT PRIMARY KEY,
            sha256 TEXT NOT NULL UNIQUE,
            namespace TEXT NOT NULL,
            label TEXT,
            created {real} NOT NULL,
            revoked {real}
        );
        """
    )


@migrations("0002-expiry-and-last-use")
def _add_expiry_and_last_use(schema: Schema) -> None:
    real = "DOUBLE PRECISION" if schema.dialect == "postgres" else "REAL"
    # Both NULL for the tokens made before: they never expire, and have not been used since the upgrade.
    schema.execute(f"ALTER TABLE memdir_tokens ADD COLUMN expires {real}")
    schema.execute(f"ALTER TABLE memdir_tokens ADD COLUMN last_used {real}")


@migrations("0003-tenants")
def _add_tenants(schema: Schema) -> None:
    # NULL for the tokens made before: their tenant is their namespace (`TokenInfo.tenant`).
    schema.execute("ALTER TABLE memdir_tokens ADD COLUMN tenant TEXT")


@migrations("0004-admin")
def _admin_tokens(schema: Schema) -> None:
    schema.script("ALTER TABLE memdir_tokens ADD COLUMN admin INTEGER NOT NULL DEFAULT 0;")


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """What is known about a token (never the token itself). Times are seconds since the epoch."""

    id: str
    namespace: str
    label: str | None
    created: float
    revoked: float | None = None
    expires: float | None = None
    # When it was last used (to `TOUCH_SECONDS`): not part of which token this is, so not compared.
    last_used: float | None = field(default=None, compare=False)
    admin: bool = False  # may replay versions with the actors and times they carry (an import, a migration)
    tenant: str = ""  # set from the namespace when empty (see `__post_init__`)

    def __post_init__(self) -> None:
        if not self.tenant:
            object.__setattr__(self, "tenant", self.namespace)

    @property
    def active(self) -> bool:
        return self.revoked is None and not self.expired

    @property
    def expired(self) -> bool:
        return self.expires is not None and self.expires <= time.time()

    def touch_due(self, now: float) -> bool:
        """Whether a use at ``now`` should be recorded (see `TOUCH_SECONDS`)."""
        return self.last_used is None or now - self.last_used >= TOUCH_SECONDS


def looks_like_token(text: str) -> bool:
    """The shape check done before any database work (anything else is refused outright)."""
    return _TOKEN.fullmatch(text) is not None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


_COLUMNS = "id, namespace, label, created, revoked, expires, last_used, tenant, admin"


def _info(row: tuple[Any, ...]) -> TokenInfo:
    id_, namespace, label, created, revoked, expires, last_used, tenant, admin = row
    return TokenInfo(
        str(id_),
        str(namespace),
        None if label is None else str(label),
        float(created),
        _optional_float(revoked),
        _optional_float(expires),
        _optional_float(last_used),
        tenant=str(tenant or ""),
        admin=bool(admin),
    )


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


class TokenRegistry:
    """The tokens kept in one auxiliary database."""

    def __init__(self, db: AuxDatabase) -> None:
        self._db = db
        db.ensure(migrations)

    def create(
        self,
        namespace: str,
        label: str | None = None,
        *,
        expires_in: float | None = None,
        tenant: str | None = None,
        admin: bool = False,
    ) -> tuple[str, TokenInfo]:
        """A new token for ``namespace``: (the token, shown once and never stored, and its record). With
        ``expires_in`` (seconds), it is refused from then on, like a revoked one. ``tenant``: who owns the memory
        stores it reaches (default: the tenant named after ``namespace``). An ``admin`` token's imports keep the
        provenance they carry (`memdir.gate.Caller.admin`)."""
        check_namespace(namespace)
        if tenant is not None:
            check_namespace(tenant)  # the same alphabet: a tenant is named like a namespace
        if label is not None and (len(label) > _MAX_LABEL or not label.isprintable()):
            raise ConfigError(f"a token label is printable text of at most {_MAX_LABEL} characters")
        if expires_in is not None and not expires_in > 0:
            raise ConfigError("a token's lifetime must be a positive duration, such as 30d or 12h")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        now = time.time()
        expires = None if expires_in is None else now + expires_in
        info = TokenInfo(
            secrets.token_hex(6), namespace, label, now, expires=expires, tenant=tenant or namespace, admin=admin
        )
        with self._db.transaction("create a token") as conn:
            conn.execute(
                "INSERT INTO memdir_tokens (id, sha256, namespace, label, created, expires, tenant, admin) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    info.id,
                    _digest(token),
                    info.namespace,
                    info.label,
                    info.created,
                    info.expires,
                    info.tenant,
                    int(admin),
                ),
            )
        return token, info

    def list(self, *, include_revoked: bool = False) -> list[TokenInfo]:
        """The tokens that still open their namespace; with ``include_revoked``, the revoked and expired too."""
        with self._db.reading("list tokens") as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM memdir_tokens ORDER BY created, id").fetchall()
        found = [_info(row) for row in rows]
        return found if include_revoked else [info for info in found if info.active]

    def touch(self, token_id: str, now: float | None = None) -> None:
        """Record a use of the token (the caller decides how often: `TokenInfo.touch_due`)."""
        when = time.time() if now is None else now
        with self._db.transaction("record a token's use") as conn:
            # Never backwards: two servers recording uses of one token at once keep the later time.
            conn.execute(
                "UPDATE memdir_tokens SET last_used = ? WHERE id = ? AND (last_used IS NULL OR last_used < ?)",
                (when, token_id, when),
            )

    def revoke(self, token_id: str) -> TokenInfo:
        """Revoke a token by id (revoking twice is harmless). `NotFoundError` for an unknown id."""
        if not _ID.fullmatch(token_id):
            raise NotFoundError(f"no token with id {token_id[:40]!r} (ids are 12 hex digits, see `memdir token list`)")
        with self._db.transaction("revoke a token") as conn:
            conn.execute(
                "UPDATE memdir_tokens SET revoked = ? WHERE id = ? AND revoked IS NULL", (time.time(), token_id)
            )
            row = self._row(conn, "id = ?", token_id)
        if row is None:
            raise NotFoundError(f"no token with id {token_id!r}")
        return row

    def verify(self, token: str) -> TokenInfo | None:
        """The active token's record, or None for anything else (malformed, unknown, revoked, expired)."""
        if not looks_like_token(token):
            return None
        # Looked up by its SHA-256: timing can at most tell an attacker about digests, never about a token.
        # Read afresh on every request (nothing cached), so a revocation by any server applies to the next one.
        with self._db.reading("check a token") as conn:
            info = self._row(conn, "sha256 = ?", _digest(token))
        return info if info is not None and info.active else None

    @staticmethod
    def _row(conn: AuxConnection, where: str, value: str) -> TokenInfo | None:
        row = conn.execute(f"SELECT {_COLUMNS} FROM memdir_tokens WHERE {where}", (value,)).fetchone()
        return None if row is None else _info(row)
