"""Path rules: every documented refusal of the API, and memdir's stricter rules, are 400 with nothing written; an
accepted path round-trips exactly and is the namespace's /memories path for every other door."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

import anthropic
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends import LiveServer
from memdir.server import ServerConfig

REFUSED = {
    "no leading slash": "food.md",
    "the root": "/",
    "empty segment": "/a//b.md",
    "trailing slash": "/a/",
    "dot segment": "/a/./b.md",
    "dot-dot segment": "/a/../b.md",
    "21 segments": "/" + "/".join(["d"] * 20) + "/f.md",
    "control character": "/a\x07.md",
    "NUL": "/a\x00.md",
    "DEL": "/a\x7f.md",
    "format character (zero-width space)": "/a\u200b.md",
    "format character (bidi override)": "/\u202egnp.md",
    "format character (ZWJ, which the memory tool accepts)": "/a\u200db.md",
    "BOM": "/\ufeffa.md",
    "line separator": "/a\u2028b.md",
    "paragraph separator": "/a\u2029b.md",
    "not NFC": "/cafe\u0301.md",
    "over 1,024 bytes": "/" + "a" * 200 + "/" + "b" * 200 + "/" + "c" * 200 + "/" + "d" * 200 + "/" + "e" * 225,
    # memdir's own rules, stricter than the API's:
    "hidden segment": "/.git/config",
    "hidden file": "/notes/.secret.md",
    "backslash": "/a\\b.md",
    "encoded traversal": "/%2e%2e/etc.md",
    "doubly encoded traversal": "/%252e%252e/x.md",
    "fullwidth dots": "/\uff0e\uff0e/x.md",
    "division slash look-alike": "/a\u2215..\u2215b.md",
    "segment over 255 bytes": "/" + "s" * 256 + ".md",
    "over 1,024 bytes under /memories": "/" + "/".join(["x" * 200] * 5) + "/abcdefghij",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server for the module (each test has a memory store of its own): these tests only read and create."""
    db = tmp_path_factory.mktemp("paths") / "memory.db"
    with LiveServer(ServerConfig(store_url=f"sqlite://{db}", rate=0)) as live:
        yield live


@pytest.fixture(scope="module")
def api(server: LiveServer) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=server.url, api_key=server.token("alice"), max_retries=0) as made:
        yield made


@pytest.fixture
def store_id(api: anthropic.Anthropic) -> str:
    return api.beta.memory_stores.create(name="paths").id


@pytest.mark.parametrize("path", REFUSED.values(), ids=REFUSED.keys())
def test_refused_paths_are_400_and_nothing_is_written(api: anthropic.Anthropic, store_id: str, path: str) -> None:
    memories = api.beta.memory_stores.memories
    with pytest.raises(anthropic.BadRequestError) as refused:
        memories.create(store_id, path=path, content="x")
    assert refused.value.type == "invalid_request_error" and "path" in (refused.value.api_message or "")
    keep = memories.create(store_id, path="/keep.md", content="k")
    with pytest.raises(anthropic.BadRequestError):
        memories.update(keep.id, memory_store_id=store_id, path=path)
    assert [m.path for m in memories.list(store_id)] == ["/keep.md"]


ACCEPTED = [
    "/food.md",
    "/" + "/".join(["d"] * 19) + "/f.md",  # 20 segments
    "/北京/笔记.md",
    "/café.md",  # NFC
    "/100%.md",
    "/50%20off.md",  # names are stored as sent, never decoded
    "/a b/c-d_e.f.md",
    "/emoji 🎉.md",
    "/" + "é" * 126 + "abc",  # a segment of 255 bytes, the most memdir takes
]


@pytest.mark.parametrize("path", ACCEPTED)
def test_accepted_paths_round_trip_and_are_the_namespaces_files(
    server: LiveServer, api: anthropic.Anthropic, store_id: str, path: str
) -> None:
    made = api.beta.memory_stores.memories.create(store_id, path=path, content="hello")
    assert made.path == path
    assert api.beta.memory_stores.memories.retrieve(made.id, memory_store_id=store_id).path == path
    with server.services.tenants.lease(store_id) as store:  # one namespace: /food.md is /memories/food.md
        assert store.read("/memories" + path).content == b"hello"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=12))
def test_any_name_is_either_refused_or_stored_exactly_as_sent(
    server: LiveServer, api: anthropic.Anthropic, store_id: str, name: str
) -> None:
    path = "/h/" + name
    try:
        made = api.beta.memory_stores.memories.create(store_id, path=path, content="x")
    except anthropic.BadRequestError:
        return
    except anthropic.ConflictError:  # the same name drawn twice
        return
    assert made.path == path and unicodedata.is_normalized("NFC", path)
    assert not any(unicodedata.category(c) in ("Cc", "Cf") for c in path)
    with server.services.tenants.lease(store_id) as store:
        assert store.stat("/memories" + path) is not None


def test_the_memory_tool_sees_the_same_files(server: LiveServer, api: anthropic.Anthropic, store_id: str) -> None:
    api.beta.memory_stores.memories.create(store_id, path="/prefs/food.md", content="No spicy food.\n")
    token = server.token(store_id)  # a token for the memory store's namespace
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}) as http:
        listing = http.post("/v1/tool", json={"command": "view", "path": "/memories"}).json()["text"]
        viewed = http.post("/v1/tool", json={"command": "view", "path": "/memories/prefs/food.md"}).json()["text"]
    assert "/memories/prefs/food.md" in listing
    assert viewed.endswith("     1\tNo spicy food.")
