"""The six commands through `MemoryTool.execute`, asserting SPEC.md's exact strings on every backend."""

from __future__ import annotations

from typing import Any

import pytest

from backends import BACKENDS
from memdir import MemoryTool, Store, ToolResult

LISTING = "Here're the files and directories up to 2 levels deep in {}, excluding hidden items and node_modules:"


@pytest.fixture
def tool(store: Store) -> MemoryTool:
    return MemoryTool(store)


def run(tool: MemoryTool, **command: Any) -> ToolResult:
    return tool.execute(command)


def ok(tool: MemoryTool, **command: Any) -> str:
    result = run(tool, **command)
    assert not result.is_error, result.text
    return result.text


def err(tool: MemoryTool, **command: Any) -> str:
    result = run(tool, **command)
    assert result.is_error, result.text
    return result.text


def create(tool: MemoryTool, path: str, text: str) -> None:
    assert ok(tool, command="create", path=path, file_text=text) == f"File created successfully at: {path}"


# -- view: directories ----------------------------------------------------------------------------------------


def test_viewing_the_empty_root_is_not_an_error(tool: MemoryTool) -> None:
    assert ok(tool, command="view", path="/memories") == LISTING.format("/memories") + "\n0B\t/memories"


def test_listing_two_levels_sorted_with_directory_totals(tool: MemoryTool) -> None:
    create(tool, "/memories/b.md", "x" * 1536)
    create(tool, "/memories/a/one.md", "1" * 100)
    create(tool, "/memories/a/deep/two.md", "2" * 2000)
    create(tool, "/memories/a/deep/er/three.md", "3" * 10)
    create(tool, "/memories/node_modules/pkg.js", "n" * 5)
    create(tool, "/memories/a/node_modules/x.js", "n" * 7)
    assert ok(tool, command="view", path="/memories") == "\n".join(
        [
            LISTING.format("/memories"),
            "3.6K\t/memories",
            "2.1K\t/memories/a/",
            "2.0K\t/memories/a/deep/",
            "100B\t/memories/a/one.md",
            "1.5K\t/memories/b.md",
        ]
    )


def test_listing_a_subdirectory_uses_the_path_as_sent_in_the_header(tool: MemoryTool) -> None:
    create(tool, "/memories/p/q.md", "hi")
    assert ok(tool, command="view", path="/memories/p/") == "\n".join(
        [LISTING.format("/memories/p/"), "2B\t/memories/p", "2B\t/memories/p/q.md"]
    )


def test_a_long_listing_is_cut_with_a_note() -> None:
    from memdir import MemoryStore

    tool = MemoryTool(MemoryStore(), max_view_chars=400)
    for i in range(40):
        create(tool, f"/memories/file-{i:02d}.md", "x")
    text = ok(tool, command="view", path="/memories")
    assert len(text) < 600
    assert text.endswith("View a subdirectory to see them.]")
    assert "more entries not shown" in text


# -- view: files ----------------------------------------------------------------------------------------------


def test_file_view_numbers_lines_six_wide(tool: MemoryTool) -> None:
    create(tool, "/memories/notes.txt", "Hello World\nThis is line two\n")
    assert ok(tool, command="view", path="/memories/notes.txt") == (
        "Here's the content of /memories/notes.txt with line numbers:\n     1\tHello World\n     2\tThis is line two"
    )


def test_no_final_newline_and_empty_file(tool: MemoryTool) -> None:
    create(tool, "/memories/a.txt", "one\ntwo")
    create(tool, "/memories/empty.txt", "")
    assert ok(tool, command="view", path="/memories/a.txt").endswith("     1\tone\n     2\ttwo")
    assert ok(tool, command="view", path="/memories/empty.txt") == (
        "Here's the content of /memories/empty.txt with line numbers:\n"
    )


def test_view_range_shows_real_line_numbers(tool: MemoryTool) -> None:
    create(tool, "/memories/n.txt", "".join(f"line {i}\n" for i in range(1, 121)))
    assert ok(tool, command="view", path="/memories/n.txt", view_range=[99, 101]) == (
        "Here's the content of /memories/n.txt with line numbers:\n    99\tline 99\n   100\tline 100\n   101\tline 101"
    )
    assert ok(tool, command="view", path="/memories/n.txt", view_range=[119, -1]).endswith(
        "   119\tline 119\n   120\tline 120"
    )
    assert ok(tool, command="view", path="/memories/n.txt", view_range=[120, 500]).endswith("   120\tline 120")


@pytest.mark.parametrize("bad", [[5, 2], [0, 3], [121, -1], [1], [1, 2, 3], ["1", "2"], [True, 2], "1-2", [1.0, 2]])
def test_a_bad_view_range_says_the_valid_range(tool: MemoryTool, bad: object) -> None:
    create(tool, "/memories/n.txt", "".join(f"{i}\n" for i in range(120)))
    text = err(tool, command="view", path="/memories/n.txt", view_range=bad)
    assert text.startswith("Error: Invalid `view_range` parameter: ")
    assert "1 <= start <= 120 and start <= end" in text and "/memories/n.txt has 120 lines" in text


def test_a_bad_view_range_states_the_bound_applied_in_good_english(tool: MemoryTool) -> None:
    """An end past the last line is accepted (it reads to the end), so the error bounds only the start; and a
    one-line file has "1 line"."""
    create(tool, "/memories/a.md", "only\n")
    assert ok(tool, command="view", path="/memories/a.md", view_range=[1, 5]).endswith("     1\tonly")
    assert err(tool, command="view", path="/memories/a.md", view_range=[2, 5]) == (
        "Error: Invalid `view_range` parameter: [2, 5]. It should be two integers [start, end] with "
        "1 <= start <= 1 and start <= end, or [start, -1] to read to the end; /memories/a.md has 1 line."
    )


def test_null_view_range_means_the_whole_file(tool: MemoryTool) -> None:
    create(tool, "/memories/a.txt", "x\n")
    assert ok(tool, command="view", path="/memories/a.txt", view_range=None).endswith("     1\tx")


def test_a_long_view_is_cut_at_a_line_boundary_with_a_footer(tool: MemoryTool) -> None:
    create(tool, "/memories/big.txt", "".join(f"{i:05d} " + "y" * 90 + "\n" for i in range(1, 1001)))
    text = ok(tool, command="view", path="/memories/big.txt")
    body, footer = text.rsplit("\n", 1)
    assert len(body) <= 16_000
    last_line = body.rsplit("\n", 1)[1]
    shown = int(last_line.split("\t")[0])
    assert last_line == f"{shown:>6}\t{shown:05d} " + "y" * 90
    assert footer == (
        f"[Showing lines 1-{shown} of 1000: the view is cut at 16,000 characters. "
        f"Use view_range, e.g. [{shown + 1}, -1], to see the rest.]"
    )


def test_view_of_a_missing_path(tool: MemoryTool) -> None:
    assert err(tool, command="view", path="/memories/nope.md") == (
        "The path /memories/nope.md does not exist. Please provide a valid path."
    )


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "remote"], indirect=True)
def test_line_limit(store: Store) -> None:  # a server's store: the server's limits (tests/server/test_remote.py)
    tool = MemoryTool(store, max_lines=3)
    create(tool, "/memories/l.txt", "1\n2\n3\n4\n")
    assert err(tool, command="view", path="/memories/l.txt") == (
        "File /memories/l.txt exceeds maximum line limit of 3 lines."
    )


def test_images_come_back_as_image_blocks(store: Store) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 20
    store.write("/memories/pic.png", png)
    result = MemoryTool(store).execute({"command": "view", "path": "/memories/pic.png"})
    assert not result.is_error
    assert result.blocks[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgoAAAAAAAAAAAAAAAAAAAAAAAAAAA=="},
    }


# -- create ---------------------------------------------------------------------------------------------------


def test_create_makes_parents_and_refuses_an_existing_file(tool: MemoryTool) -> None:
    create(tool, "/memories/a/b/c.md", "x")
    assert err(tool, command="create", path="/memories/a/b/c.md", file_text="y") == (
        "Error: File /memories/a/b/c.md already exists"
    )
    assert err(tool, command="create", path="/memories/a", file_text="y") == "Error: File /memories/a already exists"
    assert ok(tool, command="view", path="/memories/a/b/c.md").endswith("     1\tx")


def test_create_below_a_file(tool: MemoryTool) -> None:
    create(tool, "/memories/a.md", "x")
    assert err(tool, command="create", path="/memories/a.md/b.md", file_text="y") == (
        "Error: Cannot create /memories/a.md/b.md: /memories/a.md is a file, not a directory"
    )


def test_create_may_be_switched_to_overwrite(store: Store) -> None:
    tool = MemoryTool(store, create_overwrites=True)
    create(tool, "/memories/a.md", "one")
    create(tool, "/memories/a.md", "two")
    assert store.read("/memories/a.md").content == b"two"
    assert [v.op for v in store.history("/memories/a.md")] == ["create", "write"]


# -- str_replace ----------------------------------------------------------------------------------------------


def test_str_replace_shows_the_changed_lines_with_context(tool: MemoryTool) -> None:
    create(tool, "/memories/p.txt", "a\nb\nc\nFavorite color: blue\nd\ne\nf\n")
    text = ok(tool, command="str_replace", path="/memories/p.txt", old_str="blue", new_str="green\nand teal")
    assert text == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     2\tb\n     3\tc\n     4\tFavorite color: green\n     5\tand teal\n     6\td\n     7\te"
    )


def test_str_replace_without_new_str_deletes(tool: MemoryTool) -> None:
    create(tool, "/memories/p.txt", "keep drop keep\n")
    ok(tool, command="str_replace", path="/memories/p.txt", old_str=" drop")
    assert ok(tool, command="view", path="/memories/p.txt").endswith("     1\tkeep keep")


def test_str_replace_errors(tool: MemoryTool) -> None:
    create(tool, "/memories/p.txt", "x one\ny one one\nz\n")
    create(tool, "/memories/d/f.txt", "")
    assert err(tool, command="str_replace", path="/memories/p.txt", old_str="two", new_str="2") == (
        "No replacement was performed, old_str `two` did not appear verbatim in /memories/p.txt."
    )
    assert err(tool, command="str_replace", path="/memories/p.txt", old_str="one", new_str="1") == (
        "No replacement was performed. Multiple occurrences of old_str `one` in lines: 1, 2. Please ensure it is unique"
    )
    for missing in ("/memories/none.txt", "/memories/d", "/memories"):
        assert err(tool, command="str_replace", path=missing, old_str="a", new_str="b") == (
            f"Error: The path {missing} does not exist. Please provide a valid path."
        )
    assert err(tool, command="str_replace", path="/memories/p.txt", old_str="", new_str="b") == (
        "Error: Parameter `old_str` of command `str_replace` must not be empty."
    )
    assert ok(tool, command="view", path="/memories/p.txt").endswith("     1\tx one\n     2\ty one one\n     3\tz")


def test_overlapping_occurrences_are_ambiguous(tool: MemoryTool) -> None:
    create(tool, "/memories/p.txt", "aaa\n")
    assert "Multiple occurrences of old_str `aa` in lines: 1." in err(
        tool, command="str_replace", path="/memories/p.txt", old_str="aa", new_str="b"
    )


# -- insert ---------------------------------------------------------------------------------------------------


def test_insert_at_top_middle_and_end(tool: MemoryTool) -> None:
    create(tool, "/memories/t.txt", "one\ntwo\n")
    assert ok(tool, command="insert", path="/memories/t.txt", insert_line=0, insert_text="zero\n") == (
        "The file /memories/t.txt has been edited."
    )
    ok(tool, command="insert", path="/memories/t.txt", insert_line=2, insert_text="one and a half")
    ok(tool, command="insert", path="/memories/t.txt", insert_line=4, insert_text="three\nfour\n")
    assert ok(tool, command="view", path="/memories/t.txt").split("\n")[1:] == [
        "     1\tzero",
        "     2\tone",
        "     3\tone and a half",
        "     4\ttwo",
        "     5\tthree",
        "     6\tfour",
    ]


def test_insert_errors(tool: MemoryTool) -> None:
    create(tool, "/memories/t.txt", "one\ntwo\n")
    create(tool, "/memories/d/x.txt", "")
    for line in (-1, 3):
        assert err(tool, command="insert", path="/memories/t.txt", insert_line=line, insert_text="x") == (
            f"Error: Invalid `insert_line` parameter: {line}. It should be within the range of lines of the file: [0, 2]"
        )
    for missing in ("/memories/none.txt", "/memories/d"):
        assert err(tool, command="insert", path=missing, insert_line=0, insert_text="x") == (
            f"Error: The path {missing} does not exist"
        )


# -- delete ---------------------------------------------------------------------------------------------------


def test_delete_files_and_directories(tool: MemoryTool) -> None:
    create(tool, "/memories/a.md", "x")
    create(tool, "/memories/d/e/f.md", "y")
    assert ok(tool, command="delete", path="/memories/a.md") == "Successfully deleted /memories/a.md"
    assert ok(tool, command="delete", path="/memories/d") == "Successfully deleted /memories/d"
    assert ok(tool, command="view", path="/memories") == LISTING.format("/memories") + "\n0B\t/memories"
    assert err(tool, command="delete", path="/memories/a.md") == "Error: The path /memories/a.md does not exist"


@pytest.mark.parametrize("root", ["/memories", "/memories/", "//memories//", "/memories///"])
def test_the_root_cannot_be_deleted(tool: MemoryTool, root: str) -> None:
    create(tool, "/memories/a.md", "x")
    assert err(tool, command="delete", path=root) == "Error: Cannot delete the /memories directory itself"
    assert ok(tool, command="view", path="/memories/a.md")


# -- rename ---------------------------------------------------------------------------------------------------


def test_rename_files_and_directories(tool: MemoryTool) -> None:
    create(tool, "/memories/draft.txt", "d")
    create(tool, "/memories/dir/x.txt", "x")
    assert ok(tool, command="rename", old_path="/memories/draft.txt", new_path="/memories/final/final.txt") == (
        "Successfully renamed /memories/draft.txt to /memories/final/final.txt"
    )
    ok(tool, command="rename", old_path="/memories/dir", new_path="/memories/dir2")
    assert ok(tool, command="view", path="/memories/dir2/x.txt").endswith("     1\tx")


def test_rename_errors(tool: MemoryTool) -> None:
    create(tool, "/memories/a.txt", "a")
    create(tool, "/memories/b.txt", "b")
    create(tool, "/memories/d/x.txt", "x")
    assert err(tool, command="rename", old_path="/memories/none", new_path="/memories/z") == (
        "Error: The path /memories/none does not exist"
    )
    assert err(tool, command="rename", old_path="/memories/a.txt", new_path="/memories/b.txt") == (
        "Error: The destination /memories/b.txt already exists"
    )
    assert err(tool, command="rename", old_path="/memories/a.txt", new_path="/memories") == (
        "Error: The destination /memories already exists"
    )
    assert err(tool, command="rename", old_path="/memories/", new_path="/memories/x") == (
        "Error: Cannot rename the /memories directory itself"
    )
    assert err(tool, command="rename", old_path="/memories/d", new_path="/memories/d/e") == (
        "Error: Cannot rename /memories/d to /memories/d/e: a directory cannot move into itself"
    )
    assert err(tool, command="rename", old_path="/memories/d", new_path="/memories/d") == (
        "Error: Cannot rename /memories/d to /memories/d: a directory cannot move into itself"
    )
    assert ok(tool, command="view", path="/memories/b.txt").endswith("     1\tb")


def test_renaming_a_file_onto_itself_is_an_existing_destination(tool: MemoryTool) -> None:
    create(tool, "/memories/a.txt", "a")
    assert err(tool, command="rename", old_path="/memories/a.txt", new_path="/memories/a.txt") == (
        "Error: The destination /memories/a.txt already exists"
    )
    assert err(tool, command="rename", old_path="/memories/none", new_path="/memories/none") == (
        "Error: The path /memories/none does not exist"
    )
    assert ok(tool, command="view", path="/memories/a.txt").endswith("     1\ta")


# -- anything else --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            {"path": "/memories"},
            "Error: Missing required parameter `command`. Use one of: view, create, str_replace, insert, delete, "
            "rename.",
        ),
        (
            {"command": "launch", "path": "/memories"},
            "Error: Unknown command `launch`. Use one of: view, create, str_replace, insert, delete, rename.",
        ),
        ({"command": "view"}, "Error: Missing required parameter `path` for command `view`."),
        (
            {"command": "create", "path": "/memories/a"},
            "Error: Missing required parameter `file_text` for command `create`.",
        ),
        (
            {"command": "create", "path": "/memories/a", "file_text": 5},
            "Error: Parameter `file_text` of command `create` must be a string, got an integer.",
        ),
        (
            {"command": "insert", "path": "/memories/a", "insert_line": "2", "insert_text": "x"},
            "Error: Parameter `insert_line` of command `insert` must be an integer, got a string.",
        ),
        (
            {"command": "insert", "path": "/memories/a", "insert_line": True, "insert_text": "x"},
            "Error: Parameter `insert_line` of command `insert` must be an integer, got a boolean.",
        ),
        (
            {"command": "view", "path": ["/memories"]},
            "Error: Parameter `path` of command `view` must be a string, got an array.",
        ),
        ("view /memories", "Error: The memory tool expects a JSON object with a `command` field."),
        (
            {"command": "create", "path": "/memories/a", "file_text": "\ud800"},
            "Error: Parameter `file_text` is not valid UTF-8 text (it contains an unpaired surrogate). Nothing was written.",
        ),
    ],
)
def test_malformed_commands_get_clear_errors(tool: MemoryTool, command: object, expected: str) -> None:
    result = tool.execute(command)
    assert (result.is_error, result.text) == (True, expected)


def test_unknown_extra_parameters_are_ignored(tool: MemoryTool) -> None:
    assert ok(tool, command="view", path="/memories", colour="blue").endswith("0B\t/memories")


def test_path_errors_use_the_spec_wording(tool: MemoryTool) -> None:
    assert err(tool, command="view", path="/etc/passwd") == "Error: Path must start with /memories, got: /etc/passwd"
    assert err(tool, command="view", path="/memoriesX/a.md") == (
        "Error: Path must start with /memories, got: /memoriesX/a.md"
    )
    assert err(tool, command="create", path="/memories/../x", file_text="") == (
        "Error: Path /memories/../x would escape /memories directory"
    )
    assert err(tool, command="create", path="/memories/.hidden", file_text="") == (
        "Error: Path /memories/.hidden is not allowed: names starting with '.' are hidden and reserved"
    )


def test_every_change_is_recorded_with_the_tools_actor_and_session(store: Store) -> None:
    tool = MemoryTool(store, actor="model", session="sess-7")
    create(tool, "/memories/a.md", "1\n")
    ok(tool, command="insert", path="/memories/a.md", insert_line=1, insert_text="2")
    ok(tool, command="str_replace", path="/memories/a.md", old_str="2", new_str="3")
    ok(tool, command="rename", old_path="/memories/a.md", new_path="/memories/b.md")
    ok(tool, command="delete", path="/memories/b.md")
    history = store.history("/memories/b.md")
    assert [v.op for v in history] == ["create", "insert", "str_replace", "rename", "delete"]
    assert {(v.actor, v.session) for v in history} == {("model", "sess-7")}
