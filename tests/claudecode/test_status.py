"""``memdir claude-code status``: every directory, what of MEMORY.md Claude Code loads, secrets, bad notes."""

from __future__ import annotations

import json

from click.testing import CliRunner

from memdir.claudecode import store_id
from memdir.cli import cli

from .helpers import TOKEN, FakeHome, Layout, key


def status(*args: str) -> str:
    result = CliRunner().invoke(cli, ["claude-code", "status", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_report(layout: Layout) -> None:
    def ns(directory: object) -> str:
        return store_id(directory)  # type: ignore[arg-type]

    app, cloned, scratch = (key(p) for p in (layout.app, layout.cloned, layout.scratch))
    assert (
        status()
        == f"""\
Claude Code memory in ~/.claude: 4 project directories, 3 agents

project ~/code/app
  ~/.claude/projects/{app}/memory: 4 files, 10.9K, last change 2026-05-28T20:26:40Z
  namespace {ns(layout.app_memory)}
  MEMORY.md: 230 lines, 10.7K: Claude Code loads only lines 1-200 (the first 200 lines or 25 KB); lines 201-230 \
are not loaded. Move the detail into topic files and keep one short line per note in MEMORY.md.
  secret: api_access.md line 7: github-token
  note: broken.md: frontmatter cannot be read: it opens with `---` on line 1 but no closing `---` line follows

project ~/code/blog
  ~/notes/blog: 2 files, 135B, last change 2026-05-28T20:26:40Z
  namespace {ns(layout.blog_memory)}
  moved there by autoMemoryDirectory in ~/code/blog/.claude/settings.local.json
  MEMORY.md: 2 lines, 43B: Claude Code loads all of it

project ~/code/cloned
  ~/.claude/projects/{cloned}/memory: 1 file, 9B, last change 2026-05-28T20:26:40Z
  namespace {ns(layout.cloned_memory)}
  MEMORY.md: 1 line, 9B: Claude Code loads all of it

project ~/code/scratch
  ~/.claude/projects/{scratch}/memory: 1 file, 25B, last change 2026-05-28T20:26:40Z
  namespace {ns(layout.scratch_memory)}
  MEMORY.md: 2 lines, 25B: Claude Code loads all of it

agent planner (local scope of ~/code/app)
  ~/code/app/.claude/agent-memory-local/planner: 1 file, 37B, last change 2026-05-28T20:26:40Z
  namespace {ns(layout.planner_local)}
  MEMORY.md: 2 lines, 37B: Claude Code loads all of it

agent planner (project scope of ~/code/app)
  ~/code/app/.claude/agent-memory/planner: 1 file, 42B, last change 2026-05-28T20:26:40Z
  namespace {ns(layout.planner_project)}
  MEMORY.md: 2 lines, 42B: Claude Code loads all of it

agent reviewer (user scope)
  ~/.claude/agent-memory/reviewer: 1 file, 32B, last change 2026-05-28T20:26:40Z
  namespace {ns(layout.reviewer)}
  MEMORY.md: 2 lines, 32B: Claude Code loads all of it

Settings:
  ~/code/cloned: Claude Code ignores autoMemoryDirectory in ~/code/cloned/.claude/settings.json: the workspace is \
not trusted
"""
    )


def test_the_secret_itself_is_never_shown(layout: Layout) -> None:
    assert TOKEN not in status()
    assert TOKEN[4:12] not in status("--json")


def test_a_secret_in_a_file_name_is_masked_and_reported(fake: FakeHome) -> None:
    memory = fake.memory(fake.repo("named"))
    fake.write(memory, f"{TOKEN}.md", "password = hunter2Xy9!zzQ\n")
    out = status()
    assert TOKEN not in out and TOKEN[4:12] not in status("--json")
    assert "  secret: ghp_****(40 chars).md in its name: github-token\n" in out
    assert "  secret: ghp_****(40 chars).md line 1: password\n" in out


def test_json(layout: Layout) -> None:
    report = json.loads(status("--json"))
    (app,) = [d for d in report["directories"] if d["project"] == str(layout.app) and d["kind"] == "project"]
    text = (layout.app_memory / "MEMORY.md").read_bytes()
    loaded = len(b"".join(text.split(b"\n")[:200])) + 200
    index = {"lines": 230, "bytes": len(text), "loaded_lines": 200, "loaded_bytes": loaded, "whole": False}
    assert app["index"] == index
    assert app["secrets"] == [{"path": "api_access.md", "line": 7, "what": "github-token"}]
    assert app["directory"] == str(layout.app_memory)
    assert [d["label"] for d in report["directories"]][-1] == "agent reviewer (user scope)"


def test_a_memory_index_cut_by_its_size(fake: FakeHome) -> None:
    project = fake.repo("big")
    memory = fake.memory(project)
    fake.write(
        memory, "MEMORY.md", "".join(f"- {i:03} " + "x" * 290 + "\n" for i in range(100))
    )  # 297 B a line: 86 fit in 25 KB
    out = status()
    assert (
        "  MEMORY.md: 100 lines, 29.0K: Claude Code loads only lines 1-86 (the first 200 lines or 25 KB); "
        "lines 87-100 are not loaded." in out
    )
    assert "note:" not in out and "secret:" not in out


def test_one_line_over_the_byte_limit_is_not_loaded_whole(fake: FakeHome) -> None:
    memory = fake.memory(fake.repo("long"))
    fake.write(memory, "MEMORY.md", "x" * 30_000 + "\n")
    out = status()
    assert (
        "  MEMORY.md: 1 line, 29.3K: Claude Code loads only the first 25 KB of line 1 (the first 200 lines or "
        "25 KB); the rest is not loaded." in out
    )
    (index,) = [d["index"] for d in json.loads(status("--json"))["directories"]]
    assert (index["loaded_lines"], index["loaded_bytes"], index["whole"]) == (0, 25 * 1024, False)


def test_lines_end_at_line_feeds_only(fake: FakeHome) -> None:
    memory = fake.memory(fake.repo("seps"))
    # U+2028, a form feed and a lone CR are no line ends for Claude Code: 10 short lines, all loaded.
    fake.write(memory, "MEMORY.md", "".join(f"- line {i} " + "a\u2028\x0c\r" * 30 + "\n" for i in range(10)))
    assert "  MEMORY.md: 10 lines, 1.9K: Claude Code loads all of it\n" in status()


def test_one_line_past_the_line_limit_is_named_as_one(fake: FakeHome) -> None:
    memory = fake.memory(fake.repo("lines"))
    fake.write(memory, "MEMORY.md", "".join(f"- {i}\n" for i in range(201)))
    assert "loads only lines 1-200 (the first 200 lines or 25 KB); line 201 is not loaded." in status()


def test_notes_missing_their_fields(fake: FakeHome) -> None:
    memory = fake.memory(fake.repo("p"))
    fake.write(memory, "odd.md", "---\nname: Odd\ntype: diary\n---\nx\n")
    fake.write(memory, "plain.md", "no frontmatter: a plain file\n")
    out = status()
    assert "  note: odd.md: frontmatter: `description` is missing\n" in out
    assert "  note: odd.md: frontmatter: `type` is 'diary', not one of user, feedback, project, reference\n" in out
    assert "plain.md" not in out and "MEMORY.md" not in out  # no index: nothing to say about one


def test_no_claude_code_at_all(fake: FakeHome) -> None:
    assert status() == "Claude Code memory in ~/.claude: 0 project directories, 0 agents\n"
