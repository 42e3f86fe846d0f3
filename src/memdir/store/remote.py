"""A store on a memdir server (``memdir serve``), over its HTTP API: ``http://`` and ``https://`` URLs.

    >>> store = memdir.open_store("http://127.0.0.1:8765", token="mdt_...")  # doctest: +SKIP

The token decides the namespace (``namespace=`` is accepted, for `open_store`'s sake, and ignored). It comes from
``token=``, else the URL's user part (``http://TOKEN@host:8765``, as database URLs carry passwords: convenient
in a configuration file, but visible in process listings), else ``MEMDIR_TOKEN``.

Every method is one request (``update`` is the base class's optimistic read and conditional write, retried on conflict).
It is a thin client: the write policy, the limits, the review queue and the audit log run on the server, under the
server's settings, whatever this process's settings say. The memory tool on a `RemoteStore` sends each command to the
server's own tool (`run_command`, ``POST /v1/tool``), search is one ``/v1/search`` request, and the review queue and
audit log are the server's (`api`). One `httpx.Client` keeps connections open between calls and may be shared by
threads. The server's errors come back as the same `MemdirError` subclasses a local store raises.

Retries (``retries`` more attempts, with jittered exponential backoff, so a hundred clients of a restarted server
do not come back in step):

- a request that never left (connection refused, connect timeout) is sent again, whatever it is;
- a read is sent again when the connection broke, and on ``503 unavailable`` (after its ``Retry-After``);
- a change carries an ``Idempotency-Key`` made for the call and reused by its retries. On a server whose store
  records keys (``idempotent_writes`` in ``/v1/whoami``: SQLite and PostgreSQL stores) it is retried like a read:
  the server makes it at most once and answers what the first attempt did. On any other server a change whose
  connection broke is never sent again (the first may have been applied);
- a 429 is waited out (``Retry-After``, up to 10 s) a few times before `RateLimitError`.

When the attempts run out, an unreachable or unavailable server is `StorageUnavailableError` (temporary).
"""

from __future__ import annotations

import base64
import os
import random
import time
import urllib.parse
import uuid
from typing import TYPE_CHECKING, Any

import httpx

from .._version import __version__
from .._wire import (
    HEADER_ACTOR,
    HEADER_IDEMPOTENCY,
    HEADER_SESSION,
    HEADER_SOURCE,
    encode_header,
    entry_from_json,
    error_from_body,
    parse_time,
    stat_from_json,
    version_from_json,
    version_to_json,
)
from ..errors import (
    ConfigError,
    HistoryUnavailableError,
    NotFoundError,
    RateLimitError,
    StorageError,
    StorageUnavailableError,
)
from ..paths import MemoryPath
from ._base import Store
from ._chain import ChainReport
from ._records import ANY, MISSING, Entry, Expect, FileData, Op, Origin, PathLike, Quota, Stat, Usage, Version, as_path

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..search._hit import SearchHit

__all__ = ["TOKEN_ENV", "RemoteStore", "check_server_url"]

TOKEN_ENV = "MEMDIR_TOKEN"
_PAGE = 1000
_MAX_HITS = 100  # the server's bound on one search
_MAX_QUERY = 1000  # and on its query, in characters
_TOOL_ACTORS = frozenset({"model", "user"})
_MAX_RETRY_AFTER = 10.0  # seconds: a longer wait is the caller's decision, not a library's
_BACKOFF = 0.1  # seconds before the first retry; doubled each time, up to _MAX_BACKOFF
_MAX_BACKOFF = 2.0
_NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)  # no byte of the request left
_BROKEN = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)  # it may have arrived, and been applied


class RemoteStore(Store):
    """One namespace on a memdir server: the one its token opens."""

    runs_commands = True

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        namespace: str | None = None,
        timeout: float = 30.0,
        retries: int = 5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        del namespace  # the token alone decides the namespace (see the module docstring)
        base, url_token = _split_url(url)
        secret = token or url_token or os.environ.get(TOKEN_ENV)
        if not secret:
            raise ConfigError(
                f"a memdir server needs a token: pass token=..., set {TOKEN_ENV}, or use http://TOKEN@host:port"
            )
        self.url = base
        self.retries = retries
        self._client = httpx.Client(
            base_url=base,
            headers={"Authorization": f"Bearer {secret}", "User-Agent": f"memdir/{__version__}"},
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            transport=transport or httpx.HTTPTransport(),  # retried here, with one backoff for every failure
            follow_redirects=False,
        )
        try:
            who = self._json("GET", "/v1/whoami")
            self.namespace = str(who["namespace"])
            self.token_id = str(who["token_id"])
            # Whether the server's store records idempotency keys, so that a change may be sent again.
            self.idempotent_writes = who.get("idempotent_writes") is True
            # Whether the token's imports keep the provenance they carry (else they are recorded as the token's).
            self.admin = who.get("admin") is True
        except BaseException:
            self._client.close()
            raise

    def __repr__(self) -> str:
        return f"RemoteStore({self.url!r}, namespace={self.namespace!r})"

    def close(self) -> None:
        self._client.close()
        super().close()

    # -- reading ------------------------------------------------------------------------------------------

    def stat(self, path: PathLike) -> Stat | None:
        try:
            return stat_from_json(self._json("GET", _at("stat", as_path(path))))
        except NotFoundError:
            return None

    def read(self, path: PathLike) -> FileData:
        target = as_path(path)
        response = self._send("GET", _at("files", target))
        headers = response.headers
        try:
            version, sha, modified = (
                int(headers["x-memdir-version"]),
                headers["x-memdir-sha256"],
                headers["x-memdir-modified"],
            )
            return FileData(target, response.content, version, sha, parse_time(modified))
        except (KeyError, ValueError) as exc:
            raise StorageError("the server's answer lacks the file's version headers") from exc

    def list_files(self, path: PathLike = MemoryPath(())) -> list[Entry]:
        data = self._json("GET", _at("list", as_path(path)))
        return [entry_from_json(item) for item in data["entries"]]

    def usage(self) -> Usage:
        data = self._json("GET", "/v1/usage")
        return Usage(int(data["files"]), int(data["bytes"]))

    # -- writing ------------------------------------------------------------------------------------------

    def _precheck(self, path: PathLike, content: bytes, quota: Quota) -> None:
        """``quota`` for writing ``content`` to ``path``, checked before the request against what the server says
        now (`checks_quota` is False: the server's own gate holds the namespace to its limits in the write)."""
        before = self.stat(path)
        size = before.size if before is not None and before.kind == "file" else None
        quota.check(self.usage(), 0 if size is not None else 1, len(content) - (size or 0))

    def write(
        self,
        path: PathLike,
        content: bytes,
        *,
        expect: Expect = ANY,
        origin: Origin = Origin(),
        op: Op = "write",
        quota: Quota | None = None,
    ) -> Version:
        if quota is not None:
            self._precheck(path, content, quota)
        headers = _origin_headers(origin)
        if expect is MISSING:
            headers["If-None-Match"] = "*"
        elif isinstance(expect, int):
            headers["If-Match"] = f'"{expect}"'
        url = _at("files", as_path(path))
        return _version(self._json("PUT", url, content=content, headers=headers, params={"op": op}))

    def delete(self, path: PathLike, *, origin: Origin = Origin()) -> list[Version]:
        return _versions(self._json("DELETE", _at("files", as_path(path)), headers=_origin_headers(origin)))

    def move(self, src: PathLike, dst: PathLike, *, origin: Origin = Origin()) -> list[Version]:
        body = {"from": as_path(src).virtual, "to": as_path(dst).virtual}
        return _versions(self._json("POST", "/v1/move", json=body, headers=_origin_headers(origin)))

    # -- history ------------------------------------------------------------------------------------------

    def log(self, since: int = 0, *, rescan: bool = True) -> Iterator[Version]:
        del rescan  # the server's store looks for outside edits on its own
        after: int | None = since
        while after is not None:
            page = self._json("GET", "/v1/log", params={"since": after, "limit": _PAGE})
            yield from _versions(page)
            after = page.get("next")

    def _versions_touching(self, path: MemoryPath, before: int | None) -> list[Version]:
        # Only the base class's `history` asks for this, and `history` is one request here: a fallback.
        return [
            v for v in self.log() if (v.path == path or v.old_path == path) and (before is None or v.version < before)
        ]

    def read_blob(self, sha256: str) -> bytes:
        return self._send("GET", f"/v1/blobs/{urllib.parse.quote(sha256, safe='')}").content

    def history(self, path: PathLike) -> list[Version]:
        return _versions(self._json("GET", _at("history", as_path(path))))

    def read_version(self, path: PathLike, version: int) -> bytes:
        return self._send("GET", _at("files", as_path(path)), params={"version": version}).content

    def restore(self, path: PathLike, version: int, *, origin: Origin = Origin()) -> Version:
        url = _at("restore", as_path(path))
        return _version(self._json("POST", url, json={"version": version}, headers=_origin_headers(origin)))

    def namespaces(self) -> list[str]:
        return [self.namespace]  # a token reaches its own namespace and no other

    def integrity(self) -> dict[str, Any]:
        """The server's `memdir verify` of this namespace (``GET /v1/verify``): checked where the data is."""
        return dict(self._json("GET", "/v1/verify"))

    def verify_chain(self) -> ChainReport:
        history = self.integrity().get("history")
        if history is None:
            raise HistoryUnavailableError("the server's store keeps no hash chain of its history")
        return ChainReport.from_json(history)

    def import_version(self, version: Version, content: bytes | None, *, quota: Quota | None = None) -> Version:
        if quota is not None and content is not None and version.sha256 is not None and not version.moved:
            self._precheck(version.path, content, quota)
        encoded = None if content is None else base64.b64encode(content).decode("ascii")
        body = {"version": version_to_json(version), "content": encoded}
        return _version(self._json("POST", "/v1/versions", json=body))

    # -- run where the store lives ------------------------------------------------------------------------

    def run_command(self, command: object, *, origin: Origin, overwrite: bool = False) -> dict[str, Any]:
        """One memory tool command, run by the server's tool as ``origin`` (the server accepts the actors
        ``model`` and ``user``; its own record of the token otherwise); ``overwrite``: ``create`` may replace
        an existing file."""
        headers: dict[str, str] = {}
        if origin.actor in _TOOL_ACTORS:
            headers[HEADER_ACTOR] = origin.actor
        if origin.session is not None:
            headers[HEADER_SESSION] = encode_header(origin.session)
        if origin.source is not None:
            headers[HEADER_SOURCE] = encode_header(origin.source)
        if isinstance(command, dict) and command.get("command") != "view":
            headers[HEADER_IDEMPOTENCY] = origin.request or uuid.uuid4().hex
        params = {"create_overwrites": "true"} if overwrite else None
        answer = self._json("POST", "/v1/tool", json=command, headers=headers, params=params)
        if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
            raise StorageError("the server's answer to a memory tool command is not a tool result")
        return answer

    def search(self, query: str, *, limit: int = 10, path_prefix: PathLike | None = None) -> list[SearchHit]:
        """The server's search of this namespace: one request, the server's index."""
        return self.search_page(query, limit=limit, path_prefix=path_prefix)[0]

    def search_page(
        self, query: str, *, limit: int = 10, path_prefix: PathLike | None = None, mode: str = "auto"
    ) -> tuple[list[SearchHit], str, str]:
        """(hits, the mode the server used, its note): one ``GET /v1/search``."""
        from ..search._hit import hit_from_json  # search loads only when searching

        # What a query parameter can carry: no NUL, no lone surrogate (a local search treats them as no word).
        query = query.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")
        if not query.strip():
            return [], "fts", "An empty query matches nothing."  # as a local store's search answers it
        # The server bounds a query (1,000 characters); a longer one is searched by its first words.
        shown = query if len(query) <= _MAX_QUERY else query[:_MAX_QUERY].rsplit(" ", 1)[0] or query[:_MAX_QUERY]
        params: dict[str, Any] = {"q": shown, "limit": min(max(limit, 1), _MAX_HITS), "mode": mode}
        if path_prefix is not None:
            params["prefix"] = as_path(path_prefix).virtual
        data = self._json("GET", "/v1/search", params=params)
        try:
            hits = [hit_from_json(hit) for hit in data["hits"]]
            return hits, str(data["mode"]), str(data.get("note") or "")
        except (KeyError, TypeError, ValueError) as exc:
            raise StorageError("the server's search answer is malformed") from exc

    def api(self, method: str, url: str, **kwargs: Any) -> Any:
        """One call of the server's API (``/v1/review``, ``/v1/audit``...), its JSON answer; errors as
        `MemdirError` subclasses. Used by the review queue and audit log of a remote store (`memdir.gate`)."""
        return self._json(method, url, **kwargs)

    # -- HTTP ---------------------------------------------------------------------------------------------

    def _json(self, method: str, url: str, **kwargs: Any) -> Any:
        response = self._send(method, url, **kwargs)
        try:
            return response.json()
        except ValueError as exc:
            raise StorageError(f"the server's answer to {method} {url} is not JSON") from exc

    def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """One call: the request, sent again as the module docstring says."""
        changes_nothing = method in ("GET", "HEAD")
        keyed = HEADER_IDEMPOTENCY in kwargs.get("headers", {})
        resendable = changes_nothing or (keyed and self.idempotent_writes)
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._client.request(method, url, **kwargs)
            except httpx.TransportError as exc:
                if not last and (isinstance(exc, _NEVER_SENT) or (resendable and isinstance(exc, _BROKEN))):
                    _pause(attempt)
                    continue
                raise _transport_error(self.url, exc, resendable) from exc
            if response.status_code == 429 and not last:
                wait = _retry_after(response)
                if wait <= _MAX_RETRY_AFTER:
                    time.sleep(wait)
                    continue
            if response.status_code == 503 and resendable and not last:
                _pause(attempt, min(_retry_after(response), _MAX_RETRY_AFTER))
                continue
            if response.is_success:
                return response
            raise _error(response)
        raise AssertionError("unreachable")  # the last attempt returns or raises


def _pause(attempt: int, floor: float = 0.0) -> None:
    """Wait before attempt ``attempt + 1``: exponential, at least ``floor``, jittered by ±50% so that clients
    that failed together do not all come back together."""
    base = max(floor, min(_MAX_BACKOFF, _BACKOFF * 2**attempt))
    time.sleep(base * random.uniform(0.5, 1.5))


def check_server_url(url: str) -> None:
    """`ConfigError` unless ``url`` is a memdir server's URL that parses (a port that is a number, a closed
    ``[`` around an IPv6 address), without sending anything."""
    _split_url(url)


def _split_url(url: str) -> tuple[str, str | None]:
    """(the URL without its user part, the token the user part held)."""
    try:
        urllib.parse.urlsplit(url).port  # noqa: B018 - it raises for a bad port or host, in clearer words than httpx
        parsed = httpx.URL(url)
    except (ValueError, httpx.InvalidURL) as exc:  # the reason quotes the wrong part, never the token
        raise ConfigError(f"not a valid URL ({exc}): use http://host:port or https://host") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(f"not a memdir server URL: use http://host:port or https://host (got {parsed.scheme}:)")
    token = urllib.parse.unquote(parsed.username) if parsed.username else None
    clean = parsed.copy_with(username=None, password=None, query=None, fragment=None)
    return str(clean).rstrip("/"), token


def _at(area: str, path: MemoryPath) -> str:
    """``/v1/{area}/memories/...``, each segment percent-encoded (``%`` in a name travels as ``%25``)."""
    return f"/v1/{area}/" + "/".join(urllib.parse.quote(part, safe="") for part in ("memories", *path.parts))


def _origin_headers(origin: Origin) -> dict[str, str]:
    """The headers of a change: who makes it, and its idempotency key (the origin's, else one made for this call
    and sent again by its retries, so the server makes the change at most once)."""
    headers = {HEADER_ACTOR: encode_header(origin.actor), HEADER_IDEMPOTENCY: origin.request or uuid.uuid4().hex}
    if origin.session is not None:
        headers[HEADER_SESSION] = encode_header(origin.session)
    if origin.source is not None:
        headers[HEADER_SOURCE] = encode_header(origin.source)
    return headers


def _version(data: object) -> Version:
    try:
        return version_from_json(data)
    except ValueError as exc:
        raise StorageError(f"the server answered with a malformed version: {exc}") from exc


def _versions(data: dict[str, Any]) -> list[Version]:
    return [_version(item) for item in data["versions"]]


def _retry_after(response: httpx.Response) -> float:
    raw = response.headers.get("retry-after", "1")
    return float(raw) if raw.isdigit() else 1.0


def _error(response: httpx.Response) -> StorageError | Exception:
    try:
        body = response.json()
    except ValueError:
        body = None
    error = error_from_body(response.status_code, body)
    if isinstance(error, RateLimitError):
        error.retry_after = max(error.retry_after, _retry_after(response))
    return error


def _transport_error(url: str, exc: httpx.TransportError, resendable: bool) -> StorageError:
    if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, _NEVER_SENT) and not resendable:
        return StorageError(f"the memdir server at {url} did not answer in time; the change may have been applied")
    if isinstance(exc, _BROKEN) and not resendable:
        return StorageError(
            f"could not reach the memdir server at {url} ({type(exc).__name__}); the change may have been applied"
        )
    return StorageUnavailableError(f"could not reach the memdir server at {url} ({type(exc).__name__})")
