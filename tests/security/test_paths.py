"""Hostile virtual paths, through `MemoryTool.execute`, for every command and every backend.

Each refused path must come back with SPEC.md's wording for its class (outside the root / an escape / not allowed
and why), identically from all six commands (and from both sides of ``rename``), and must leave storage exactly
as it was: nothing created on disk anywhere, the listing and the change log unchanged.
"""

from __future__ import annotations

import os
import re
import time
import unicodedata
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdir import ConfigError, MemoryTool, PathError, Store, ToolResult, open_store, parse

BACKENDS = ["memory", "sqlite", "directory"]
EXISTING = "/memories/existing.md"
FREE = "/memories/free.md"


# -- the cases ------------------------------------------------------------------------------------------------

# Traversal in every encoding we know of: `Error: Path {path} would escape /memories directory`.
ESCAPES = {
    "dotdot": "/memories/..",
    "dotdot-slash": "/memories/../",
    "dotdot-etc": "/memories/../etc/passwd",
    "deep-dotdot": "/memories/a/b/../../../x.md",
    "dotdot-backslash": "/memories/..\\",
    "backslash-traversal": "/memories/a\\..\\..\\etc",
    "pct-dotdot-slash": "/memories/%2e%2e%2f",
    "pct-dotdot": "/memories/%2e%2e",
    "pct-dotdot-then-slash": "/memories/%2e%2e/",
    "pct-dotdot-then-path": "/memories/%2e%2e/%2e%2e/etc/passwd",
    "dotdot-pct-slash": "/memories/..%2f",
    "dotdot-pct-slash-chain": "/memories/..%2f..%2fetc%2fpasswd",
    "dotdot-pct-backslash": "/memories/..%5c",
    "half-encoded": "/memories/.%2e",
    "half-encoded-other": "/memories/%2e.",
    "mixed-case-hex": "/memories/%2E%2e%2F",
    "upper-hex": "/memories/%2E%2E%2F",
    "double-encoded": "/memories/%252e%252e%252f",
    "double-encoded-mixed": "/memories/%252E%252e%252F",
    "triple-encoded": "/memories/%25252e%25252e%25252f",
    "nested-encoding": "/memories/%%32%65%%32%65",
    "overlong-dots": "/memories/%c0%ae%c0%ae/",
    "overlong-dots-upper": "/memories/%C0%AE%C0%AE",
    "overlong-slash": "/memories/..%c0%af",
    "overlong-3-byte": "/memories/%e0%80%ae%e0%80%ae",
    "overlong-4-byte": "/memories/%f0%80%80%ae%f0%80%80%ae",
    "pct-u": "/memories/%u002e%u002e%u2215",
    "pct-u-fullwidth": "/memories/%uff0e%uff0e",
    "dotdot-pct-u-slash": "/memories/..%u2215",
    "fullwidth-dots-slash": "/memories/．．／",
    "fullwidth-dots": "/memories/．．",
    "fullwidth-encoded": "/memories/%ef%bc%8e%ef%bc%8e",
    "two-dot-leader": "/memories/\u2025",
    "two-dot-leader-encoded": "/memories/%e2%80%a5",
    "one-dot-leaders": "/memories/\u2024\u2024",
    "small-full-stops": "/memories/\ufe52\ufe52",
    "ideographic-full-stops": "/memories/\u3002\u3002",
    "halfwidth-ideographic-stops": "/memories/\uff61\uff61",
    "dotdot-division-slash": "/memories/..\u2215etc",
    "dotdot-fullwidth-solidus-encoded": "/memories/..%ef%bc%8f",
    "trailing-space": "/memories/.. ",
    "trailing-spaces-then-path": "/memories/..   /etc",
    "encoded-trailing-space": "/memories/%2e%2e%20",
    "in-the-middle": "/memories/a/%2e%2e/%2e%2e/b.md",
}

# Not below the root at all: `Error: Path must start with /memories, got: {path}`.
OUTSIDE = {
    "sibling-prefix": "/memoriesX/a.md",
    "sibling-underscore": "/memories_backup/a.md",
    "sibling-dots": "/memories../a.md",
    "sibling-extension": "/memories.md",
    "relative": "memories/a.md",
    "etc-passwd": "/etc/passwd",
    "empty": "",
    "slash": "/",
    "dot": ".",
    "dotdot": "..",
    "relative-traversal": "../memories/a.md",
    "upper-case": "/Memories/a.md",
    "all-caps": "/MEMORIES",
    "tilde": "~/memories/a.md",
    "url": "file:///memories/a.md",
    "leading-space": " /memories/a.md",
    "space-in-root": "/ memories/a.md",
    "encoded-root-slash": "%2fmemories/a.md",
    "encoded-root-letter": "/%6demories/a.md",
    "fullwidth-root-slash": "／memories/a.md",
    "traversal-before-root": "/tmp/../memories/a.md",
}

# Refused for another reason: `Error: Path {path} is not allowed: {why}`; the second item is a word the why says.
NOT_ALLOWED = {
    "dot-segment": ("/memories/./a.md", "'.'"),
    "dot-last": ("/memories/a/.", "'.'"),
    "encoded-dot": ("/memories/%2e", "'.'"),
    "double-encoded-dot": ("/memories/%252e", "'.'"),
    "fullwidth-dot": ("/memories/．", "'.'"),
    "one-dot-leader": ("/memories/\u2024", "'.'"),
    "backslash": ("/memories/a\\b.md", "backslash"),
    "windows-root": ("C:\\memories\\a.md", "backslash"),
    "unc-root": ("\\\\memories\\a.md", "backslash"),
    "encoded-slash": ("/memories/a%2fb.md", "separator"),
    "encoded-backslash": ("/memories/a%5Cb.md", "separator"),
    "division-slash": ("/memories/a\u2215b.md", "separator"),
    "fraction-slash": ("/memories/a\u2044b.md", "separator"),
    "fullwidth-solidus": ("/memories/a／b.md", "separator"),
    "set-minus": ("/memories/a\u2216b.md", "separator"),
    "nul": ("/memories/a\x00b.md", "NUL"),
    "nul-after-extension": ("/memories/a.md\x00.png", "NUL"),
    "soh": ("/memories/a\x01b", "control character"),
    "tab": ("/memories/a\tb", "control character"),
    "newline": ("/memories/a\nb", "control character"),
    "carriage-return": ("/memories/a\rb", "control character"),
    "escape": ("/memories/a\x1b[31mb", "control character"),
    "unit-separator": ("/memories/a\x1fb", "control character"),
    "delete": ("/memories/a\x7fb", "control character"),
    "c1-next-line": ("/memories/a\x85b", "control character"),
    "c1-csi": ("/memories/a\x9bb", "control character"),
    "line-separator": ("/memories/a\u2028b", "line separator"),
    "paragraph-separator": ("/memories/a\u2029b", "line separator"),
    "bidi-override": ("/memories/evil\u202egpj.md", "invisible"),
    "bidi-isolate": ("/memories/a\u2066b", "invisible"),
    "left-to-right-mark": ("/memories/a\u200eb", "invisible"),
    "zero-width-space": ("/memories/a\u200bb", "invisible"),
    "word-joiner": ("/memories/a\u2060b", "invisible"),
    "byte-order-mark": ("/memories/\ufeffa.md", "invisible"),
    "soft-hyphen": ("/memories/a\u00adb", "invisible"),
    "lone-high-surrogate": ("/memories/a\ud800b.md", "surrogate"),
    "lone-low-surrogate": ("/memories/\udfff.md", "surrogate"),
    "segment-256-bytes": ("/memories/" + "a" * 256, "255"),
    "segment-258-bytes-multibyte": ("/memories/" + "€" * 86, "255"),
    "path-1025-bytes": ("/memories/" + "/".join(["b" * 200] * 5) + "/" + "c" * 10, "1,024"),
    "hidden": ("/memories/.hidden", "hidden"),
    "hidden-dir": ("/memories/a/.git/config", "hidden"),
    "sidecar": ("/memories/.memdir/index.db", "hidden"),
    "temp-file-prefix": ("/memories/.memdir-tmp-1-abc", "hidden"),
    "three-dots": ("/memories/...", "hidden"),
    "dotdot-name": ("/memories/..hidden", "hidden"),
}


@dataclass
class Target:
    """A store with a file and a directory in it, the tool over it, and the host directory it lives in."""

    kind: str
    tool: MemoryTool
    store: Store
    home: Path


@pytest.fixture(scope="module", params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    kind = str(request.param)
    home = tmp_path_factory.mktemp(f"paths-{kind}")
    (home / "outside").mkdir()
    (home / "outside" / "canary.txt").write_text("canary\n")
    url = {"memory": "memory:", "sqlite": f"sqlite:///{home / 'store.db'}", "directory": str(home / "store")}[kind]
    store = open_store(url)
    tool = MemoryTool(store)
    for path in (EXISTING, "/memories/dir/inner.md"):
        assert not tool.execute({"command": "create", "path": path, "file_text": "old\n"}).is_error
    yield Target(kind, tool, store, home)
    store.close()


def host_tree(home: Path) -> dict[str, bytes | None]:
    """Everything under ``home`` (files with their bytes, directories as None), links not followed. SQLite's own
    files are left out: a read may legitimately touch them."""
    found: dict[str, bytes | None] = {}
    for top, dirs, files in os.walk(home):
        for name in dirs:
            found[os.path.relpath(os.path.join(top, name), home)] = None
        for name in files:
            full = os.path.join(top, name)
            rel = os.path.relpath(full, home)
            if not rel.startswith(("store.db", os.path.join("store", ".memdir"))):
                found[rel] = Path(full).read_bytes()
    return found


def store_state(target: Target) -> tuple[object, ...]:
    entries = [(e.path.virtual, e.size) for e in target.store.list_files()]
    return entries, len(list(target.store.log())), host_tree(target.home)


def every_command(tool: MemoryTool, path: str) -> Iterator[tuple[str, ToolResult, str]]:
    """Each command with ``path`` in its path argument: (label, result, the path the error should name)."""
    commands: list[tuple[str, dict[str, Any], str]] = [
        ("view", {"command": "view", "path": path}, path),
        ("view-range", {"command": "view", "path": path, "view_range": [1, 1]}, path),
        ("create", {"command": "create", "path": path, "file_text": "pwned\n"}, path),
        ("str_replace", {"command": "str_replace", "path": path, "old_str": "old", "new_str": "pwned"}, path),
        ("insert", {"command": "insert", "path": path, "insert_line": 0, "insert_text": "pwned"}, path),
        ("delete", {"command": "delete", "path": path}, path),
        ("rename-old", {"command": "rename", "old_path": path, "new_path": FREE}, path),
        ("rename-new", {"command": "rename", "old_path": EXISTING, "new_path": path}, path),
    ]
    for label, command, named in commands:
        yield label, tool.execute(command), named


def assert_refused_everywhere(target: Target, path: str, expected: str) -> None:
    before = store_state(target)
    for label, result, _ in every_command(target.tool, path):
        assert result.is_error, f"{label}: {result.text!r}"
        assert result.text == expected, f"{label}: {result.text!r}"
    assert store_state(target) == before, "a refused path touched storage"


def shown(path: str) -> str:
    """The path as an error echoes it: unpaired surrogates cannot travel as UTF-8, so they show as U+FFFD."""
    return path.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


# -- per class, every command, every backend ------------------------------------------------------------------


@pytest.mark.parametrize("path", ESCAPES.values(), ids=ESCAPES.keys())
def test_traversal_in_any_encoding_is_an_escape(target: Target, path: str) -> None:
    assert_refused_everywhere(target, path, f"Error: Path {path} would escape /memories directory")


@pytest.mark.parametrize("path", OUTSIDE.values(), ids=OUTSIDE.keys())
def test_paths_outside_the_root_are_refused(target: Target, path: str) -> None:
    assert_refused_everywhere(target, path, f"Error: Path must start with /memories, got: {path}")


@pytest.mark.parametrize(("path", "why"), NOT_ALLOWED.values(), ids=NOT_ALLOWED.keys())
def test_other_refusals_say_why(target: Target, path: str, why: str) -> None:
    before = store_state(target)
    prefix = f"Error: Path {shown(path)} is not allowed: "
    for label, result, _ in every_command(target.tool, path):
        assert result.is_error, f"{label}: {result.text!r}"
        assert result.text.startswith(prefix), f"{label}: {result.text!r}"
        assert why in result.text[len(prefix) :], f"{label}: {result.text!r}"
    assert store_state(target) == before


def test_the_parser_names_the_same_class_as_the_tool() -> None:
    for path in ESCAPES.values():
        with pytest.raises(PathError) as caught:
            parse(path)
        assert caught.value.kind == "escape", path
    for path in OUTSIDE.values():
        with pytest.raises(PathError) as caught:
            parse(path)
        assert caught.value.kind == "outside", path
    for path, _ in NOT_ALLOWED.values():
        with pytest.raises(PathError) as caught:
            parse(path)
        assert caught.value.kind == "not_allowed", path


# -- limits at their exact edges ------------------------------------------------------------------------------


def test_a_segment_of_255_bytes_is_accepted(target: Target) -> None:
    for name in ("a" * 255, "€" * 85):  # 255 bytes either way; the limit counts UTF-8 bytes, not characters
        path = f"/memories/long/{name}"
        assert len(name.encode()) == 255
        result = target.tool.execute({"command": "create", "path": path, "file_text": "x\n"})
        assert result.text == f"File created successfully at: {path}"
        assert target.tool.execute({"command": "view", "path": path}).text.endswith("     1\tx")
        assert target.tool.execute({"command": "delete", "path": path}).text == f"Successfully deleted {path}"


def test_a_path_of_exactly_1024_bytes_is_accepted_and_1025_is_not(target: Target) -> None:
    stem = "/memories/" + "/".join(["d" * 200] * 5) + "/"
    exact = stem + "f" * (1024 - len(stem))
    assert len(exact.encode()) == 1024
    result = target.tool.execute({"command": "create", "path": exact, "file_text": "x\n"})
    assert result.text == f"File created successfully at: {exact}"
    assert target.tool.execute({"command": "delete", "path": exact}).text == f"Successfully deleted {exact}"
    over = exact + "g"
    assert target.tool.execute({"command": "create", "path": over, "file_text": "x\n"}).text.startswith(
        f"Error: Path {over} is not allowed: "
    )


def test_the_deepest_path_allowed_works_everywhere(target: Target) -> None:
    # 505 nested directories: the directory store walks them one descriptor at a time, so the host's PATH_MAX
    # (and the store's own location) never matter.
    deep = "/memories/" + "n/" * 505 + "f.md"
    assert len(deep.encode()) == 1024
    tool = target.tool
    assert tool.execute({"command": "create", "path": deep, "file_text": "deep\n"}).text == (
        f"File created successfully at: {deep}"
    )
    assert tool.execute({"command": "view", "path": deep}).text.endswith("     1\tdeep")
    assert not tool.execute({"command": "str_replace", "path": deep, "old_str": "deep", "new_str": "deeper"}).is_error
    assert tool.execute({"command": "rename", "old_path": "/memories/n", "new_path": "/memories/m"}).text == (
        "Successfully renamed /memories/n to /memories/m"
    )
    assert tool.execute({"command": "delete", "path": "/memories/m"}).text == "Successfully deleted /memories/m"


@pytest.mark.parametrize("namespace", ["..", "../x", "a/../../x", "/etc", "a..b", ".hidden", "-rf", "x" * 65, ""])
def test_namespaces_cannot_name_a_way_out(tmp_path: Path, namespace: str) -> None:
    with pytest.raises(ConfigError):
        open_store(str(tmp_path / "store"), namespace=namespace)
    with pytest.raises(ConfigError):
        open_store(f"sqlite:///{tmp_path / 'memory.db'}", namespace=namespace)
    assert sorted(os.listdir(tmp_path)) == []


def test_the_length_limit_counts_the_normal_form() -> None:
    # Repeated slashes collapse before the limit applies, so a path that is long only in slashes is fine.
    assert parse("/memories" + "/" * 2000 + "a.md").virtual == "/memories/a.md"


def test_multi_megabyte_paths_are_refused_fast_and_not_echoed_whole(target: Target) -> None:
    for path in ("/memories/" + "a" * 4_000_000, "/memories/" + "a/" * 2_000_000, "/memories/" + "../" * 1_500_000):
        before = store_state(target)
        started = time.perf_counter()
        results = list(every_command(target.tool, path))
        elapsed = time.perf_counter() - started
        assert elapsed < 2.0, f"refusing eight multi-megabyte paths took {elapsed:.2f}s"
        for label, result, _ in results:
            assert result.is_error, label
            assert result.text.startswith("Error: Path /memories/"), label
            assert "not allowed" in result.text or "would escape" in result.text, label
            assert len(result.text) < 3000, f"{label}: echoed {len(result.text):,} characters"
        assert store_state(target) == before


# -- accepted and normalised ----------------------------------------------------------------------------------


def test_repeated_and_trailing_slashes_are_normalised(target: Target) -> None:
    tool = target.tool
    assert tool.execute({"command": "create", "path": "//memories//norm//a.md", "file_text": "n\n"}).text == (
        "File created successfully at: //memories//norm//a.md"
    )
    assert tool.execute({"command": "view", "path": "/memories/norm/a.md"}).text.endswith("     1\tn")
    assert tool.execute({"command": "view", "path": "/memories/norm/a.md/"}).text.endswith("     1\tn")
    assert tool.execute({"command": "create", "path": "/memories/norm/a.md/", "file_text": "again"}).text == (
        "Error: File /memories/norm/a.md/ already exists"
    )
    assert (
        tool.execute({"command": "delete", "path": "/memories/norm//"}).text == "Successfully deleted /memories/norm//"
    )


def test_unicode_is_normalised_to_nfc(target: Target) -> None:
    tool = target.tool
    composed, decomposed = "/memories/caf\u00e9.md", "/memories/cafe\u0301.md"
    assert not tool.execute({"command": "create", "path": decomposed, "file_text": "nfc\n"}).is_error
    assert tool.execute({"command": "view", "path": composed}).text.endswith("     1\tnfc")
    assert tool.execute({"command": "create", "path": composed, "file_text": "x"}).text == (
        f"Error: File {composed} already exists"
    )
    assert not tool.execute({"command": "delete", "path": composed}).is_error


@pytest.mark.parametrize("root", ["/memories", "/memories/", "//memories", "/memories//", "//memories///"])
def test_the_root_in_any_spelling_is_the_root(target: Target, root: str) -> None:
    view = target.tool.execute({"command": "view", "path": root})
    assert not view.is_error
    assert view.text.startswith(
        f"Here're the files and directories up to 2 levels deep in {root}, excluding hidden items and node_modules:\n"
    )
    before = store_state(target)
    delete = target.tool.execute({"command": "delete", "path": root})
    assert (delete.is_error, delete.text) == (True, "Error: Cannot delete the /memories directory itself")
    rename = target.tool.execute({"command": "rename", "old_path": root, "new_path": FREE})
    assert (rename.is_error, rename.text) == (True, "Error: Cannot rename the /memories directory itself")
    assert target.tool.execute({"command": "create", "path": root, "file_text": "x"}).is_error
    assert store_state(target) == before


def test_listings_never_show_hidden_names(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "store"))
    tool = MemoryTool(store)
    assert not tool.execute({"command": "create", "path": "/memories/seen.md", "file_text": "x"}).is_error
    memories = tmp_path / "store" / "memories"
    (memories / ".hidden.md").write_text("secret")
    (memories / ".git").mkdir()
    (memories / ".git" / "config").write_text("secret")
    (memories / "%2e%2e").mkdir()  # a name the model could never address: left out, never decoded
    (memories / "%2e%2e" / "x.md").write_text("y")
    listing = tool.execute({"command": "view", "path": "/memories"}).text
    assert ".hidden" not in listing
    assert ".git" not in listing
    assert "secret" not in listing
    assert [(e.path.virtual) for e in store.list_files()] == ["/memories/seen.md"]
    store.close()


# -- properties -----------------------------------------------------------------------------------------------

PIECES = [
    "..",
    ".",
    "/",
    "//",
    "\\",
    "%",
    "%2e",
    "%2E",
    "%2f",
    "%5c",
    "%25",
    "%c0",
    "%ae",
    "%af",
    "%u002e",
    "%u2215",
    "．",
    "／",
    "\u2024",
    "\u2025",
    "\ufe52",
    "\u3002",
    "\u2215",
    "a",
    "b.md",
    "memories",
    " ",
    "\x00",
    "\x1f",
    "\u202e",
    "\u200b",
    "\u2028",
    "é",
    "e\u0301",
    "\ud800",
    "~",
    ":",
]
piece_paths = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)
raw_paths = st.one_of(
    piece_paths.map(lambda rest: "/memories/" + rest),
    piece_paths.map(lambda rest: "/memories" + rest),
    piece_paths,
    st.text(max_size=80).map(lambda rest: "/memories/" + rest),
    st.text(max_size=80),
)

_PCT_U = re.compile(r"%u([0-9a-fA-F]{4})")


def decoded_forms(segment: str) -> Iterator[str]:
    """What a segment might become in a lenient consumer: percent-decoding (``%uXXXX`` too) repeated, NFKC.
    (An oracle written apart from memdir.paths; overlong UTF-8 has its own explicit cases above.)"""
    current = segment
    for _ in range(6):
        yield current
        widened = _PCT_U.sub(lambda m: chr(int(m.group(1), 16)), current)
        following = unicodedata.normalize("NFKC", urllib.parse.unquote(widened, errors="replace"))
        if following == current:
            return
        current = following


def assert_safe_segment(part: str) -> None:
    assert part, "empty segment"
    assert part not in (".", ".."), part
    assert "/" not in part and "\\" not in part, part
    assert not part.startswith("."), part
    assert len(part.encode("utf-8")) <= 255, part
    assert unicodedata.normalize("NFC", part) == part, part
    for ch in part:
        code = ord(ch)
        assert code >= 0x20 and not 0x7F <= code < 0xA0, repr(part)
        assert not 0xD800 <= code < 0xE000, repr(part)
    for form in decoded_forms(part):
        pieces = re.split(r"[/\\\u2215\u2044]", form)
        assert all(p.rstrip(" ") not in (".", "..") for p in pieces), (
            part,
            form,
        )  # trailing spaces: Windows drops them
        assert len(pieces) == 1, (part, form)


@settings(max_examples=600, deadline=None)
@given(raw_paths)
def test_parse_refuses_or_returns_only_safe_segments(raw: str) -> None:
    try:
        path = parse(raw)
    except PathError as exc:
        assert exc.kind in ("outside", "escape", "not_allowed")
        assert exc.tool_text().startswith("Error: Path ")
        return
    for part in path.parts:
        assert_safe_segment(part)
    # The normal form is a fixed point, and is what the store will be keyed by.
    assert parse(path.virtual) == path
    assert len(path.virtual.encode()) <= 1024


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, MemoryTool]]:
    home = tmp_path_factory.mktemp("fuzz")
    (home / "outside").mkdir()
    (home / "outside" / "canary.txt").write_text("canary\n")
    store = open_store(str(home / "store"))
    yield home, MemoryTool(store)
    store.close()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=raw_paths, other=raw_paths)
def test_random_paths_never_leave_the_directory_store(sandbox: tuple[Path, MemoryTool], raw: str, other: str) -> None:
    home, tool = sandbox
    outside_before = sorted(p.name for p in home.iterdir()), sorted(os.listdir(home / "outside"))
    results = [
        tool.execute({"command": "create", "path": raw, "file_text": "fuzz\n"}),
        tool.execute({"command": "view", "path": raw}),
        tool.execute({"command": "str_replace", "path": raw, "old_str": "fuzz", "new_str": "fizz"}),
        tool.execute({"command": "insert", "path": raw, "insert_line": 0, "insert_text": "top"}),
        tool.execute({"command": "rename", "old_path": raw, "new_path": other}),
        tool.execute({"command": "delete", "path": other}),
        tool.execute({"command": "delete", "path": raw}),
    ]
    for result in results:
        assert "Internal error" not in result.text
        assert str(home) not in result.text  # never a host path
    after = sorted(p.name for p in home.iterdir()), sorted(os.listdir(home / "outside"))
    assert after == outside_before
    assert (home / "outside" / "canary.txt").read_text() == "canary\n"
    assert sorted(os.listdir(home / "store")) == [".memdir", "memories"]
    # Everything on disk under the root is a name the rules accept (so it was reached structurally).
    memories = home / "store" / "memories"
    for top, dirs, files in os.walk(memories):
        for name in dirs + files:
            rel = os.path.relpath(os.path.join(top, name), memories)
            assert not os.path.islink(os.path.join(top, name))
            parse("/memories/" + rel)
