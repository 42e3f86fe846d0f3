"""Bounded and malformed requests: bodies, URLs and headers past their bounds, bad parameters, unknown routes.
Every refusal is a JSON error with a stable code, and the server goes on serving."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from backends import LiveServer
from memdir.server import ServerConfig
from memdir.server._protocols import http_protocol

from .conftest import Client, Raw
from .helpers import error_of, get, raw_sender

PROTOCOLS = ("NoDelayH11Protocol", "BoundedHttpToolsProtocol")

KIB, MIB = 1024, 1024 * 1024


@pytest.fixture
def config(store_url: str) -> ServerConfig:
    return ServerConfig(
        store_url=store_url,
        rate=0,
        max_body_bytes=2 * KIB,
        max_upload_bytes=4 * KIB,
        max_archive_bytes=8 * KIB,
        max_url_bytes=2 * KIB,
        max_header_bytes=4 * KIB,
    )


def still_serving(http: httpx.Client) -> None:
    assert http.post("/v1/tool", json={"command": "view", "path": "/memories"}).json()["is_error"] is False


def test_a_json_body_past_its_bound_is_refused(client: Client) -> None:
    http = client("alice")
    big = {"command": "create", "path": "/memories/a.md", "file_text": "x" * (2 * KIB)}
    assert error_of(http.post("/v1/tool", json=big)) == (413, "payload_too_large")
    # Without a Content-Length (chunked), the body is counted as it arrives.
    chunks = iter([b'{"command": "create", "path": "/memories/a.md", "file_text": "', b"x" * (4 * KIB), b'"}'])
    response = http.post("/v1/tool", content=chunks, headers={"Content-Type": "application/json"})
    assert error_of(response) == (413, "payload_too_large")
    assert http.get("/v1/stat/memories/a.md").status_code == 404
    still_serving(http)


def test_uploads_and_archives_have_their_own_bounds(client: Client) -> None:
    http = client("alice")
    assert http.put("/v1/files/memories/a.bin", content=b"x" * (4 * KIB)).status_code == 200
    assert error_of(http.put("/v1/files/memories/b.bin", content=b"x" * (4 * KIB + 1))) == (413, "payload_too_large")
    archive = {"Content-Type": "application/zip"}
    assert error_of(http.post("/v1/import", content=b"x" * (8 * KIB + 1), headers=archive)) == (
        413,
        "payload_too_large",
    )
    assert error_of(http.post("/v1/import", content=b"PK not a zip", headers=archive)) == (422, "archive_error")
    assert error_of(http.post("/v1/import", content=b"{}", headers={"Content-Type": "application/json"})) == (
        415,
        "unsupported_media_type",
    )
    still_serving(http)


def test_a_url_past_its_bound_is_refused_before_routing(server: LiveServer, raw: Raw) -> None:
    token = server.token("alice")
    response = raw(get("/v1/files/memories/" + "a" * (2 * KIB), token))
    assert (response.status, response.json()["error"]["code"]) == (414, "uri_too_long")
    response = raw(get("/v1/log?since=1&pad=" + "a" * (2 * KIB), token))
    assert (response.status, response.json()["error"]["code"]) == (414, "uri_too_long")


def test_a_path_past_the_path_rules_bound_is_a_path_error(client: Client) -> None:
    response = client("alice").get("/v1/files/memories/" + "a" * 300)  # a segment over 255 bytes
    assert error_of(response) == (400, "path_error")


@pytest.mark.parametrize("protocol", [f"memdir.server._protocols:{name}" for name in PROTOCOLS])
def test_headers_past_their_bound_are_refused(config: ServerConfig, protocol: str) -> None:
    with LiveServer(config, http=protocol) as server:
        raw = raw_sender(server)
        token = server.token("alice")
        response = raw(get("/v1/whoami", token, extra=f"X-Padding: {'p' * (5 * KIB)}\r\n"))
        assert (response.status, response.json()["error"]["code"]) == (431, "headers_too_large")
        # Far past it, the HTTP parser refuses the request itself, before the app: nothing is buffered unbounded.
        for size in (256 * KIB, 4 * MIB):
            response = raw(get("/v1/whoami", token, extra=f"X-Padding: {'p' * size}\r\n"))
            assert response.status in (0, 400, 431)  # an error, or the connection closed on the sender
        assert raw(get("/v1/whoami", token)).json()["namespace"] == "alice"


@pytest.mark.parametrize(
    ("method", "path", "kwargs"),
    [
        ("GET", "/v1/log", {"params": {"since": "-1"}}),
        ("GET", "/v1/log", {"params": {"since": "abc"}}),
        ("GET", "/v1/log", {"params": {"since": str(10**30)}}),  # past any database's integers: was a 500
        ("GET", "/v1/log", {"params": {"limit": "0"}}),
        ("GET", "/v1/log", {"params": {"limit": "5001"}}),
        ("GET", "/v1/files/memories/a.md", {"params": {"version": "0"}}),
        ("PUT", "/v1/files/memories/a.md", {"headers": {"If-Match": "three"}}),
        ("PUT", "/v1/files/memories/a.md", {"headers": {"If-None-Match": '"3"'}}),
        ("PUT", "/v1/files/memories/a.md", {"headers": {"If-Match": '"1"', "If-None-Match": "*"}}),
        ("PUT", "/v1/files/memories/a.md", {"params": {"op": "delete"}}),
        ("PUT", "/v1/files/memories/a.md", {"headers": {"X-Memdir-Actor": "%FF%FE"}}),
        ("PUT", "/v1/files/memories/a.md", {"headers": {"X-Memdir-Session": "a%0Ab"}}),
        ("POST", "/v1/move", {"json": {"from": "/memories/a.md"}}),
        ("POST", "/v1/move", {"json": ["/memories/a.md", "/memories/b.md"]}),
        ("POST", "/v1/restore/memories/a.md", {"json": {"version": "1"}}),
        ("POST", "/v1/restore/memories/a.md", {"json": {"version": True}}),
        ("POST", "/v1/versions", {"json": {"version": {"version": 1}}}),
        ("POST", "/v1/versions", {"json": {"version": None}}),
    ],
)
def test_bad_parameters_are_invalid_requests(client: Client, method: str, path: str, kwargs: dict[str, object]) -> None:
    http = client("alice")
    http.put("/v1/files/memories/a.md", content=b"one")
    response = http.request(method, path, **kwargs)  # type: ignore[arg-type]
    assert error_of(response) == (400, "invalid_request")
    assert http.get("/v1/files/memories/a.md").content == b"one"


def test_unknown_routes_and_methods(client: Client) -> None:
    http = client("alice")
    assert error_of(http.get("/v1/nothing")) == (404, "route_not_found")
    assert error_of(http.get("/v1/usage/")) == (404, "route_not_found")  # no redirects: one URL per resource
    assert error_of(http.get("/index.html")) == (404, "route_not_found")  # the page is "/" only
    response = http.delete("/v1/usage")
    assert error_of(response) == (405, "method_not_allowed")
    assert set(response.headers["allow"].split(", ")) == {"GET", "HEAD"}


def test_an_unknown_blob_hash_or_a_malformed_one_is_not_found(client: Client) -> None:
    http = client("alice")
    assert error_of(http.get("/v1/blobs/" + "a" * 64)) == (404, "not_found")
    assert error_of(http.get("/v1/blobs/../../etc/passwd")) in ((404, "not_found"), (404, "route_not_found"))
    assert error_of(http.get("/v1/blobs/ABC")) == (404, "not_found")


@pytest.fixture
def default_server(store_url: str) -> Iterator[LiveServer]:
    with LiveServer(ServerConfig(store_url=store_url, rate=0)) as live:
        yield live


def test_the_default_json_bound_is_1_mib(default_server: LiveServer) -> None:
    headers = {"Authorization": f"Bearer {default_server.token('alice')}", "Content-Type": "application/json"}
    with httpx.Client(base_url=default_server.url, headers=headers) as http:
        body = b'{"command": "view", "path": "/memories", "pad": "' + b"x" * MIB + b'"}'
        assert error_of(http.post("/v1/tool", content=body)) == (413, "payload_too_large")
        fits = b'{"command": "view", "path": "/memories", "pad": "' + b"x" * (MIB - 100) + b'"}'
        assert http.post("/v1/tool", content=fits).json()["is_error"] is False


def test_a_number_of_thousands_of_digits_is_an_invalid_request(default_server: LiveServer) -> None:
    """Python refuses to convert more than 4,300 digits (a ValueError): within the default URL bound, that was
    a 500 for every integer query parameter."""
    headers = {"Authorization": f"Bearer {default_server.token('alice')}"}
    with httpx.Client(base_url=default_server.url, headers=headers) as http:
        http.put("/v1/files/memories/a.md", content=b"one")
        for url in ("/v1/log?since=", "/v1/files/memories/a.md?version=", "/v1/audit?limit="):
            assert error_of(http.get(url + "9" * 4400)) == (400, "invalid_request"), url


def test_a_number_too_large_for_a_version_says_so(default_server: LiveServer) -> None:
    headers = {"Authorization": f"Bearer {default_server.token('alice')}"}
    with httpx.Client(base_url=default_server.url, headers=headers) as http:
        http.put("/v1/files/memories/a.md", content=b"one")
        for number in ("999999999999999999999999", "9223372036854775808"):
            response = http.get(f"/v1/files/memories/a.md?version={number}")
            assert error_of(response) == (400, "invalid_request")
            assert response.json()["error"]["message"] == (
                "query parameter 'version' is too large: at most 9223372036854775807"
            )
        assert error_of(http.get("/v1/files/memories/a.md?version=0")) == (400, "invalid_request")
        assert http.get("/v1/files/memories/a.md?version=0001").content == b"one"


def test_an_answer_quoting_a_lone_surrogate_is_json_all_the_same() -> None:
    """What a client sent may come back in an answer; a lone surrogate (JSON's "\\ud800") is no UTF-8, so the
    answer escapes it as JSON does instead of failing as a 500 whose own answer would fail too."""
    import json

    from memdir.server._errors import json_response

    answer = json_response({"query": "a\ud800b", "note": "ü"})
    assert answer.body == b'{"query":"a\\ud800b","note":"\\u00fc"}'
    assert json.loads(answer.body) == {"query": "a\ud800b", "note": "ü"}
    assert json_response({"note": "ü"}).body == '{"note":"ü"}'.encode()


@pytest.mark.parametrize(
    "request_head",
    [
        "FOO / HTTP/1.1\r\nHost: {host}\r\n\r\n",  # a method the parser does not know
        "PUT /v1/files/memories/a.md HTTP/1.1\r\nHost: {host}\r\nContent-Length: -1\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: {host}\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
    ],
    ids=["method", "negative length", "length and chunked"],
)
def test_what_the_http_parser_refuses_is_a_json_error_with_the_security_headers(
    config: ServerConfig, request_head: str
) -> None:
    """The parser `memdir serve` runs (httptools) refuses these before the app, and uvicorn answered in plain text
    ("Invalid HTTP request received."), without the headers. (h11, the fallback, lets the first and last through
    to the app, as RFC 9112 allows.)"""
    with LiveServer(config, http=http_protocol()) as server:
        response = raw_sender(server)(request_head)
    assert response.status == 400 and response.json()["error"]["code"] == "invalid_request"
    assert response.headers["x-content-type-options"] == "nosniff" and response.headers["x-frame-options"] == "DENY"
