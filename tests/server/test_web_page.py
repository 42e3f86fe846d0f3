"""The web page's files and the security headers of every response.

What the browser is told (Content-Security-Policy, nosniff, no framing, no caching of memory) and what the page
is made of (no inline script or style, nothing from another site, no HTML sink in its script) are checked here
without a browser; tests/server/test_browser.py drives the page itself.
"""

from __future__ import annotations

import importlib.resources
import re
from collections.abc import Iterator
from html.parser import HTMLParser

import httpx
import pytest

from backends import LiveServer

from .conftest import Client

STATIC = importlib.resources.files("memdir.server") / "static"


def directives(header: str) -> dict[str, str]:
    return {part.strip().split(" ", 1)[0]: part.strip().partition(" ")[2] for part in header.split(";") if part.strip()}


@pytest.fixture
def anonymous(server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url) as http:
        yield http


def test_the_page_is_served_without_a_token_under_a_strict_policy(anonymous: httpx.Client) -> None:
    page = anonymous.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert "<title>memdir</title>" in page.text
    policy = directives(page.headers["content-security-policy"])
    assert policy["default-src"] == "'none'"
    assert policy["script-src"] == "'self'" and policy["style-src"] == "'self'"
    assert policy["connect-src"] == "'self'" and policy["img-src"] == "'self' blob:"
    assert policy["frame-ancestors"] == "'none'" and policy["form-action"] == "'none'"
    assert policy["base-uri"] == "'none'" and policy["object-src"] == "'none'"
    assert policy["require-trusted-types-for"] == "'script'" and policy["trusted-types"] == "'none'"
    assert "unsafe" not in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["cross-origin-opener-policy"] == "same-origin"


@pytest.mark.parametrize(
    ("name", "media_type"),
    [
        ("app.js", "text/javascript; charset=utf-8"),
        ("app.css", "text/css; charset=utf-8"),
        ("icon.svg", "image/svg+xml"),
    ],
)
def test_static_files_have_their_types_and_the_same_policy(anonymous: httpx.Client, name: str, media_type: str) -> None:
    response = anonymous.get(f"/static/{name}")
    assert response.status_code == 200
    assert response.headers["content-type"] == media_type
    assert response.content == (STATIC / name).read_bytes()
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "require-trusted-types-for" in response.headers["content-security-policy"]


@pytest.mark.parametrize("name", ["index.html", "nothing.js", "..%2fapp.js", "%2e%2e", "app.js.map"])
def test_only_the_shipped_files_are_served(anonymous: httpx.Client, name: str) -> None:
    response = anonymous.get(f"/static/{name}")
    assert response.status_code == 404
    assert response.json()["error"]["code"] in ("not_found", "route_not_found")


def test_api_responses_and_errors_carry_the_api_policy_and_are_never_cached(client: Client, server: LiveServer) -> None:
    http = client("alice")
    http.put("/v1/files/memories/x.html", content=b"<script>alert(1)</script>")
    for response in (
        http.get("/v1/files/memories/x.html"),
        http.get("/v1/view/memories/x.html"),
        http.get("/v1/files/memories/none.md"),
        httpx.get(server.url + "/v1/usage"),
        httpx.get(server.url + "/healthz"),
    ):
        assert response.headers["x-content-type-options"] == "nosniff"
        assert directives(response.headers["content-security-policy"])["default-src"] == "'none'"
        assert response.headers["cache-control"] == "no-store"
        assert response.headers["x-frame-options"] == "DENY"
    assert http.get("/v1/files/memories/x.html").headers["content-type"] == "application/octet-stream"


class _Markup(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.inline_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        if self.tags and self.tags[-1][0] in ("script", "style") and data.strip():
            self.inline_script = True


def test_the_page_has_no_inline_script_style_or_handler_and_nothing_from_elsewhere() -> None:
    parser = _Markup()
    parser.feed((STATIC / "index.html").read_text(encoding="utf-8"))
    assert not parser.inline_script
    for tag, attrs in parser.tags:
        assert not any(name.startswith("on") or name == "style" for name in attrs), (tag, attrs)
        if tag == "script":
            assert attrs["src"] == "/static/app.js"
        for name in ("src", "href", "action"):
            value = attrs.get(name) or ""
            assert not re.match(r"^(?:[a-z]+:|//)", value), (tag, name, value)
    for name in ("index.html", "app.css", "app.js"):
        text = (STATIC / name).read_text(encoding="utf-8")
        assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text), name
        assert "@import" not in text and "url(" not in text


def test_the_script_uses_no_html_sink_and_keeps_the_token_out_of_urls() -> None:
    script = (STATIC / "app.js").read_text(encoding="utf-8")
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("//"))
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        "localStorage",
    ):
        assert sink not in code, sink
    assert "sessionStorage" in code and '"Bearer "' in code
    assert code.count("sessionStorage.setItem") == 1


def test_the_files_ship_as_package_data() -> None:
    names = {item.name for item in STATIC.iterdir()}
    assert {"index.html", "app.js", "app.css", "icon.svg"} <= names
