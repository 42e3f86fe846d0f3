"""Limits and encodings at their edges, on every backend: one past a limit is refused with an error that names
the limit and writes nothing; exactly at the limit is accepted. Bytes that are not UTF-8, images, long views,
huge line counts and unpaired surrogates all come back as clean results.

The ``store`` and ``backend`` fixtures (tests/backends.py) run each test on memory, SQLite and directory stores.
"""

from __future__ import annotations

import base64
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from backends import BACKENDS
from memdir import MemoryTool, Store, ToolResult, open_store

KIB, MIB = 1024, 1024 * 1024
LISTING = "Here're the files and directories up to 2 levels deep in {}, excluding hidden items and node_modules:"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(256)) * 4
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(256)) * 4

# A memdir server's store has the server's limits (a client's options have nothing to act on: the commands run on
# the server), and its gate refuses a file over them before it can be planted: tests/gate/test_doors.py.
LOCAL = [b for b in BACKENDS if b != "remote"]


def run(tool: MemoryTool, **command: Any) -> ToolResult:
    return tool.execute(command)


def state(store: Store) -> tuple[object, ...]:
    """What a refused command must leave alone: every file's bytes, and the change log."""
    files = {e.path.virtual: store.read(e.path).content for e in store.list_files()}
    return files, [(v.version, v.path.virtual, v.sha256) for v in store.log()]


def too_big(noun: str, size: int, limit: int = 100 * KIB, shown: str = "100.0K") -> str:
    return (
        f"Error: The {noun} would be {size:,} bytes, over the limit of {limit:,} bytes ({shown}) per memory file. "
        "Nothing was written."
    )


# -- one file: 100 KiB ----------------------------------------------------------------------------------------


def test_create_one_byte_over_the_file_limit_writes_nothing(store: Store) -> None:
    tool = MemoryTool(store)
    before = state(store)
    for text in ("a" * (100 * KIB + 1), "é" * (50 * KIB) + "a"):  # the limit counts UTF-8 bytes, not characters
        result = run(tool, command="create", path="/memories/big.md", file_text=text)
        assert (result.is_error, result.text) == (True, too_big("file", 100 * KIB + 1))
    assert state(store) == before
    assert store.stat("/memories/big.md") is None


def test_create_exactly_at_the_file_limit_is_accepted(store: Store) -> None:
    tool = MemoryTool(store)
    for name, text in (("ascii", "a" * (100 * KIB)), ("two-byte", "é" * (50 * KIB)), ("four-byte", "😀" * (25 * KIB))):
        assert len(text.encode()) == 100 * KIB
        result = run(tool, command="create", path=f"/memories/{name}.md", file_text=text)
        assert result.text == f"File created successfully at: /memories/{name}.md"
        assert store.read(f"/memories/{name}.md").content == text.encode()


def test_str_replace_that_would_grow_past_the_limit_writes_nothing(store: Store) -> None:
    tool = MemoryTool(store)
    base = "MARK\n" + "a" * (100 * KIB - 10) + "\n"  # 102,396 bytes
    run(tool, command="create", path="/memories/f.md", file_text=base)
    before = state(store)
    result = run(tool, command="str_replace", path="/memories/f.md", old_str="MARK", new_str="MARK+12345")
    assert (result.is_error, result.text) == (True, too_big("edited file", 100 * KIB + 2))
    assert state(store) == before
    # Growing to exactly the limit is fine.
    exact = run(tool, command="str_replace", path="/memories/f.md", old_str="MARK", new_str="MARK1234")
    assert not exact.is_error, exact.text
    assert len(store.read("/memories/f.md").content) == 100 * KIB


def test_insert_that_would_grow_past_the_limit_writes_nothing(store: Store) -> None:
    tool = MemoryTool(store)
    run(tool, command="create", path="/memories/f.md", file_text="a" * (100 * KIB - 2) + "\n")
    before = state(store)
    result = run(tool, command="insert", path="/memories/f.md", insert_line=1, insert_text="xy")
    assert (result.is_error, result.text) == (True, too_big("edited file", 100 * KIB + 2))
    assert state(store) == before
    # An empty line (one byte) still fits exactly.
    assert run(tool, command="insert", path="/memories/f.md", insert_line=0, insert_text="").text == (
        "The file /memories/f.md has been edited."
    )
    assert len(store.read("/memories/f.md").content) == 100 * KIB


@pytest.mark.parametrize("backend", LOCAL, indirect=True)
def test_a_configured_file_limit_is_named_in_the_error(store: Store) -> None:
    tool = MemoryTool(store, max_file_bytes=10)
    assert run(tool, command="create", path="/memories/a.md", file_text="0123456789").text == (
        "File created successfully at: /memories/a.md"
    )
    result = run(tool, command="create", path="/memories/b.md", file_text="0123456789A")
    assert result.text == too_big("file", 11, limit=10, shown="10B")
    result = run(tool, command="insert", path="/memories/a.md", insert_line=0, insert_text="")
    assert result.text == too_big("edited file", 12, limit=10, shown="10B")  # "\n" + text + "\n"


# -- one namespace: 10,000 files, 50 MiB ----------------------------------------------------------------------


@pytest.mark.parametrize("backend", LOCAL, indirect=True)
def test_the_file_count_limit_refuses_new_files_only(store: Store) -> None:
    tool = MemoryTool(store, max_files=3)
    for path in ("/memories/a.md", "/memories/d/b.md", "/memories/d/e/c.md"):
        assert not run(tool, command="create", path=path, file_text="x\n").is_error
    before = state(store)
    refused = run(tool, command="create", path="/memories/d/new.md", file_text="x\n")
    assert refused.text == (
        "Error: The memory directory already holds 3 files, the limit is 3 files. Nothing was written; "
        "delete or merge files you no longer need."
    )
    assert state(store) == before
    assert store.stat("/memories/d/new.md") is None
    # Edits and renames add no file: still allowed at the limit.
    assert not run(tool, command="str_replace", path="/memories/a.md", old_str="x", new_str="y").is_error
    assert not run(tool, command="insert", path="/memories/a.md", insert_line=0, insert_text="z").is_error
    assert not run(tool, command="rename", old_path="/memories/d", new_path="/memories/moved").is_error
    assert not run(tool, command="delete", path="/memories/moved/b.md").is_error
    assert not run(tool, command="create", path="/memories/again.md", file_text="x\n").is_error
    assert store.usage().files == 3


@pytest.mark.parametrize("backend", LOCAL, indirect=True)
def test_the_namespace_byte_limit_counts_every_write(store: Store) -> None:
    tool = MemoryTool(store, max_total_bytes=100)
    assert not run(tool, command="create", path="/memories/a.md", file_text="a" * 60).is_error
    before = state(store)
    refused = run(tool, command="create", path="/memories/b.md", file_text="b" * 41)
    assert refused.text == (
        "Error: The memory directory would hold 101B, over the limit of 100B. Nothing was written; "
        "delete or shorten files you no longer need."
    )
    grown = run(tool, command="str_replace", path="/memories/a.md", old_str="a" * 60, new_str="a" * 101)
    assert grown.text.startswith("Error: The memory directory would hold 101B, over the limit of 100B.")
    inserted = run(tool, command="insert", path="/memories/a.md", insert_line=0, insert_text="i" * 40)
    assert inserted.text.startswith("Error: The memory directory would hold 102B, over the limit of 100B.")
    assert state(store) == before
    assert not run(tool, command="create", path="/memories/b.md", file_text="b" * 40).is_error  # exactly 100
    assert store.usage().bytes == 100
    # Shrinking is always allowed.
    assert not run(tool, command="str_replace", path="/memories/a.md", old_str="a" * 60, new_str="a").is_error
    assert store.usage().bytes == 41


@pytest.mark.parametrize("backend", ["memory", "sqlite"], indirect=True)
def test_the_default_limit_of_10000_files(store: Store) -> None:
    # The real default, seeded through the store (10,000 single writes through the tool would be the slow part);
    # the directory store shares the tool's counting and is covered with a small limit above.
    for i in range(10_000):
        store.write(f"/memories/d{i // 500}/f{i}.md", b"x")
    tool = MemoryTool(store)
    assert run(tool, command="create", path="/memories/one-more.md", file_text="x").text == (
        "Error: The memory directory already holds 10,000 files, the limit is 10,000 files. Nothing was written; "
        "delete or merge files you no longer need."
    )
    assert store.stat("/memories/one-more.md") is None
    assert not run(tool, command="str_replace", path="/memories/d0/f0.md", old_str="x", new_str="y").is_error
    assert not run(tool, command="delete", path="/memories/d0/f1.md").is_error
    assert not run(tool, command="create", path="/memories/one-more.md", file_text="x").is_error


@pytest.mark.parametrize("backend", ["memory", "sqlite"], indirect=True)
def test_the_default_limit_of_50_mib(store: Store) -> None:
    chunk = b"m" * (100 * KIB)
    store.write("/memories/big/0.md", b"UNIQUE" + chunk[6:])
    for i in range(1, 512):  # 512 x 100 KiB = 50 MiB exactly
        store.write(f"/memories/big/{i}.md", chunk)
    assert store.usage().bytes == 50 * MIB
    tool = MemoryTool(store)
    refused = run(tool, command="create", path="/memories/x.md", file_text="x")
    assert refused.text == (
        "Error: The memory directory would hold 50.0M, over the limit of 50.0M. Nothing was written; "
        "delete or shorten files you no longer need."
    )
    assert store.stat("/memories/x.md") is None
    # At the limit, shrinking a file is still allowed.
    assert not run(tool, command="str_replace", path="/memories/big/0.md", old_str="UNIQUE", new_str="").is_error
    assert store.usage().bytes == 50 * MIB - 6


# -- encodings ------------------------------------------------------------------------------------------------

NOT_UTF8 = {
    "invalid-byte": (b"hello\xff\xfeworld\n", 5),
    "latin-1": ("café au lait\n".encode("latin-1"), 3),
    "utf-16": ("hello\n".encode("utf-16"), 0),
    "truncated-sequence": (b"ok \xe2\x82", 3),
    "overlong": (b"a\xc0\xafb", 1),
    "encoded-surrogate": (b"x\xed\xa0\x80y", 1),
}


@pytest.mark.parametrize(("content", "offset"), NOT_UTF8.values(), ids=NOT_UTF8.keys())
def test_non_utf8_content_gives_a_clear_error_and_keeps_the_bytes(store: Store, content: bytes, offset: int) -> None:
    store.write("/memories/bad.md", content)
    tool = MemoryTool(store)
    before = state(store)
    expected = (
        f"Error: The file /memories/bad.md is not valid UTF-8 text (invalid byte at offset {offset:,}), so it "
        "cannot be shown or edited as text. Its bytes are unchanged."
    )
    for command in (
        {"command": "view", "path": "/memories/bad.md"},
        {"command": "view", "path": "/memories/bad.md", "view_range": [1, 1]},
        {"command": "str_replace", "path": "/memories/bad.md", "old_str": "hello", "new_str": "x"},
        {"command": "insert", "path": "/memories/bad.md", "insert_line": 0, "insert_text": "x"},
    ):
        result = tool.execute(command)
        assert (result.is_error, result.text) == (True, expected)
    assert state(store) == before
    # Still listed, and still deletable or movable: the model can clean it up.
    assert f"{len(content)}B\t/memories/bad.md" in run(tool, command="view", path="/memories").text
    assert not run(tool, command="rename", old_path="/memories/bad.md", new_path="/memories/b.md").is_error
    assert store.read("/memories/b.md").content == content
    assert not run(tool, command="delete", path="/memories/b.md").is_error


def test_non_utf8_bytes_written_outside_memdir(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "store"))
    tool = MemoryTool(store)
    raw = b"notes \xff\xfe\n"
    (tmp_path / "store" / "memories" / "ext.md").write_bytes(raw)
    for command in (
        {"command": "view", "path": "/memories/ext.md"},
        {"command": "str_replace", "path": "/memories/ext.md", "old_str": "notes", "new_str": "x"},
        {"command": "insert", "path": "/memories/ext.md", "insert_line": 1, "insert_text": "x"},
    ):
        result = tool.execute(command)
        assert result.is_error
        assert "is not valid UTF-8 text (invalid byte at offset 6)" in result.text
    assert (tmp_path / "store" / "memories" / "ext.md").read_bytes() == raw
    # A file name that is not UTF-8 cannot be addressed by the model, so it is not listed.
    os.close(os.open(os.fsencode(tmp_path / "store" / "memories") + b"/\xff\xfe.md", os.O_CREAT | os.O_WRONLY, 0o600))
    listing = run(tool, command="view", path="/memories").text
    assert listing.splitlines()[1:] == ["9B\t/memories", "9B\t/memories/ext.md"]
    assert [e.path.virtual for e in store.list_files()] == ["/memories/ext.md"]
    store.close()


SURROGATES = {
    "create": ({"command": "create", "path": "/memories/n.md", "file_text": "a\ud800b"}, "file_text"),
    "create-low": ({"command": "create", "path": "/memories/n.md", "file_text": "\udfff"}, "file_text"),
    "create-split-pair": ({"command": "create", "path": "/memories/n.md", "file_text": "\ud83d\ude00"}, "file_text"),
    "old_str": ({"command": "str_replace", "path": "/memories/f.md", "old_str": "\ud800", "new_str": "x"}, "old_str"),
    "new_str": (
        {"command": "str_replace", "path": "/memories/f.md", "old_str": "text", "new_str": "\udc00"},
        "new_str",
    ),
    "insert_text": (
        {"command": "insert", "path": "/memories/f.md", "insert_line": 0, "insert_text": "\ud800"},
        "insert_text",
    ),
}


@pytest.mark.parametrize(("command", "field"), SURROGATES.values(), ids=SURROGATES.keys())
def test_unpaired_surrogates_are_refused_and_nothing_is_written(
    store: Store, command: dict[str, Any], field: str
) -> None:
    tool = MemoryTool(store)
    run(tool, command="create", path="/memories/f.md", file_text="text\n")
    before = state(store)
    result = tool.execute(command)
    assert (result.is_error, result.text) == (
        True,
        f"Error: Parameter `{field}` is not valid UTF-8 text (it contains an unpaired surrogate). Nothing was written.",
    )
    assert state(store) == before
    # The same character, properly encoded, is fine.
    assert not run(tool, command="create", path="/memories/emoji.md", file_text="\U0001f600\n").is_error


# -- images ---------------------------------------------------------------------------------------------------

IMAGES = {
    "png": ("/memories/pic.png", PNG, "image/png"),
    "upper-case-png": ("/memories/PIC.PNG", PNG, "image/png"),
    "jpg": ("/memories/pic.jpg", JPEG, "image/jpeg"),
    "jpeg": ("/memories/pic.jpeg", JPEG, "image/jpeg"),
}


@pytest.mark.parametrize(("path", "content", "media_type"), IMAGES.values(), ids=IMAGES.keys())
def test_images_come_back_as_image_blocks(store: Store, path: str, content: bytes, media_type: str) -> None:
    store.write(path, content)
    result = MemoryTool(store).execute({"command": "view", "path": path})
    assert not result.is_error
    text_block, image_block = result.blocks
    assert text_block == {"type": "text", "text": result.text}
    assert path in result.text and media_type in result.text
    assert image_block["type"] == "image"
    assert image_block["source"]["type"] == "base64"
    assert image_block["source"]["media_type"] == media_type
    assert base64.b64decode(image_block["source"]["data"]) == content


def test_a_name_with_an_image_extension_but_text_inside_is_text(store: Store) -> None:
    tool = MemoryTool(store)
    run(tool, command="create", path="/memories/not-really.png", file_text="just text\n")
    result = run(tool, command="view", path="/memories/not-really.png")
    assert result.text == "Here's the content of /memories/not-really.png with line numbers:\n     1\tjust text"
    assert [b["type"] for b in result.blocks] == ["text"]
    # JPEG bytes under a .png name: the magic is wrong, so it is not an image, and not UTF-8 either.
    store.write("/memories/wrong.png", JPEG)
    wrong = run(tool, command="view", path="/memories/wrong.png")
    assert wrong.is_error and "is not valid UTF-8 text" in wrong.text
    # Image bytes under a text name are not shown as an image either.
    store.write("/memories/png.md", PNG)
    assert run(tool, command="view", path="/memories/png.md").is_error


@pytest.mark.parametrize("backend", LOCAL, indirect=True)
def test_images_over_the_image_limit_are_refused(store: Store) -> None:
    tool = MemoryTool(store, max_image_bytes=len(PNG))
    store.write("/memories/ok.png", PNG)
    assert not run(tool, command="view", path="/memories/ok.png").is_error  # exactly at the limit
    store.write("/memories/big.png", PNG + b"\x00")
    result = run(tool, command="view", path="/memories/big.png")
    assert (result.is_error, result.text) == (
        True,
        f"Error: The image /memories/big.png is {len(PNG) + 1:,} bytes, over the limit of {len(PNG):,} bytes for "
        "one image; it cannot be shown.",
    )
    assert [b["type"] for b in result.blocks] == ["text"]


@pytest.mark.parametrize("backend", LOCAL, indirect=True)
def test_the_default_image_limit_is_5_mib(store: Store) -> None:
    tool = MemoryTool(store)
    store.write("/memories/exact.png", PNG + b"\x00" * (5 * MIB - len(PNG)))
    assert not run(tool, command="view", path="/memories/exact.png").is_error
    store.write("/memories/over.jpg", JPEG + b"\x00" * (5 * MIB + 1 - len(JPEG)))
    result = run(tool, command="view", path="/memories/over.jpg")
    assert result.is_error
    assert "5,242,881 bytes, over the limit of 5,242,880 bytes" in result.text


def test_an_image_cannot_be_edited_as_text(store: Store) -> None:
    store.write("/memories/pic.png", PNG)
    tool = MemoryTool(store)
    before = state(store)
    for command in (
        {"command": "str_replace", "path": "/memories/pic.png", "old_str": "PNG", "new_str": "GIF"},
        {"command": "insert", "path": "/memories/pic.png", "insert_line": 0, "insert_text": "x"},
    ):
        result = tool.execute(command)
        assert result.is_error and "is not valid UTF-8 text" in result.text
    assert state(store) == before


# -- long views -----------------------------------------------------------------------------------------------

FOOTER = re.compile(
    r"\[Showing lines (\d+)-(\d+) of (\d+): the view is cut at 16,000 characters\. "
    r"Use view_range, e\.g\. \[(\d+), -1\], to see the rest\.\]"
)


def test_a_long_view_is_cut_at_a_line_boundary_with_a_footer(store: Store) -> None:
    lines = [f"line {i:04d} " + "x" * (i % 97) for i in range(1, 1201)]
    tool = MemoryTool(store, max_file_bytes=None)
    run(tool, command="create", path="/memories/long.md", file_text="\n".join(lines) + "\n")
    first_view = run(tool, command="view", path="/memories/long.md")
    assert not first_view.is_error
    body, footer = first_view.text.rsplit("\n", 1)
    match = FOOTER.fullmatch(footer)
    assert match, footer
    first, last, total, resume = (int(g) for g in match.groups())
    assert (first, total, resume) == (1, 1200, last + 1)
    assert len(body) <= 16_000
    shown = body.split("\n")[1:]
    assert shown == [f"{n:>6}\t{lines[n - 1]}" for n in range(1, last + 1)], "not cut at a line boundary"
    # Following the footer's advice continues exactly where the view stopped.
    rest = run(tool, command="view", path="/memories/long.md", view_range=[resume, -1]).text
    assert rest.split("\n")[1] == f"{resume:>6}\t{lines[resume - 1]}"


def test_a_view_of_exactly_16000_characters_is_not_cut(store: Store) -> None:
    path = "/memories/edge.md"
    header = f"Here's the content of {path} with line numbers:"
    lines: list[str] = []
    length = len(header)
    while True:
        number = f"{len(lines) + 1:>6}\t"
        if length + 1 + len(number) + 60 > 16_000:
            lines.append("z" * (16_000 - length - 1 - len(number)))
            break
        lines.append("y" * 60)
        length += 1 + len(number) + 60
    tool = MemoryTool(store)
    run(tool, command="create", path=path, file_text="\n".join(lines) + "\n")
    exact = run(tool, command="view", path=path).text
    assert len(exact) == 16_000
    assert "[Showing lines" not in exact
    run(tool, command="insert", path=path, insert_line=len(lines), insert_text="")  # one more (empty) line
    cut = run(tool, command="view", path=path).text
    assert FOOTER.fullmatch(cut.rsplit("\n", 1)[1])
    assert len(cut.rsplit("\n", 1)[0]) <= 16_000


def test_a_listing_of_exactly_16000_characters_is_not_cut_and_one_more_is(store: Store) -> None:
    header = LISTING.format("/memories")

    def listing_of(names: list[str]) -> str:
        rows = [f"1B\t/memories/{name}" for name in sorted(names)]
        return "\n".join([header, f"{len(names)}B\t/memories", *rows])

    names = [f"n{i:03d}-" + "p" * 40 for i in range(400)]
    while len(listing_of(names)) > 16_000:
        names.pop()
    names[-1] += "q" * (16_000 - len(listing_of(names)))
    for name in names:
        store.write(f"/memories/{name}", b"1")
    tool = MemoryTool(store)
    exact = run(tool, command="view", path="/memories").text
    assert len(exact) == 16_000
    assert exact == listing_of(names)
    # One character more: the listing is cut, and what is shown (footer aside) still fits in 16,000.
    run(tool, command="rename", old_path=f"/memories/{names[-1]}", new_path=f"/memories/{names[-1]}q")
    cut = run(tool, command="view", path="/memories").text
    body, footer = cut.rsplit("\n", 1)
    assert footer == (
        "[1 more entries not shown: the listing is cut at 16,000 characters. View a subdirectory to see them.]"
    )
    assert len(body) <= 16_000
    assert body == listing_of(names)[: len(body)]


@pytest.mark.parametrize("backend", LOCAL, indirect=True)
def test_more_than_999999_lines_cannot_be_viewed(store: Store) -> None:
    tool = MemoryTool(store)
    store.write("/memories/many.md", b"\n" * 1_000_000)
    started = time.perf_counter()
    result = run(tool, command="view", path="/memories/many.md")
    assert (result.is_error, result.text) == (
        True,
        "File /memories/many.md exceeds maximum line limit of 999,999 lines.",
    )
    assert time.perf_counter() - started < 5
    store.write("/memories/just.md", b"\n" * 999_999)
    just = run(tool, command="view", path="/memories/just.md")
    assert not just.is_error
    assert just.text.rsplit("\n", 1)[1].startswith("[Showing lines 1-")


@pytest.mark.parametrize("backend", LOCAL, indirect=True)
def test_a_configured_line_limit(store: Store) -> None:
    tool = MemoryTool(store, max_lines=3)
    run(tool, command="create", path="/memories/three.md", file_text="1\n2\n3\n")
    run(tool, command="create", path="/memories/four.md", file_text="1\n2\n3\n4")
    assert not run(tool, command="view", path="/memories/three.md").is_error
    assert run(tool, command="view", path="/memories/four.md").text == (
        "File /memories/four.md exceeds maximum line limit of 3 lines."
    )


# -- giant files planted on disk ------------------------------------------------------------------------------


def test_a_giant_planted_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "store"))
    memories = tmp_path / "store" / "memories"
    with open(memories / "giant.md", "wb") as fh:  # sparse: costs no disk, but claims 64 MiB + 1
        fh.truncate(64 * MIB + 1)
    with open(memories / "huge.png", "wb") as fh:
        fh.write(PNG)
        fh.truncate(6 * MIB)
    tool = MemoryTool(store)
    started = time.perf_counter()
    giant = run(tool, command="view", path="/memories/giant.md")
    assert giant.is_error and "too large" in giant.text and "67,108,865 bytes" in giant.text
    assert str(tmp_path) not in giant.text
    huge = run(tool, command="view", path="/memories/huge.png")
    assert huge.is_error and "over the limit of 5,242,880 bytes" in huge.text
    assert time.perf_counter() - started < 10
    store.close()


def test_a_giant_planted_file_is_left_out_of_listings_and_of_outside_edits(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "store"))
    tool = MemoryTool(store)
    run(tool, command="create", path="/memories/note.md", file_text="a note\n")
    memories = tmp_path / "store" / "memories"
    (memories / "logs").mkdir()
    for giant in (memories / "build.log.md", memories / "logs" / "big.md"):
        with open(giant, "wb") as fh:  # sparse: costs no disk, but claims 64 MiB + 1
            fh.truncate(64 * MIB + 1)
    assert [e.path.virtual for e in store.list_files()] == ["/memories/note.md"]
    listing = run(tool, command="view", path="/memories")
    assert not listing.is_error and "build.log" not in listing.text and "big.md" not in listing.text
    assert [(v.op, v.path.virtual) for v in store.log()] == [("create", "/memories/note.md")]
    # Asked for by name, it is still refused plainly.
    giant = run(tool, command="view", path="/memories/build.log.md")
    assert giant.is_error and "67,108,865 bytes, too large to read" in giant.text
    store.close()
