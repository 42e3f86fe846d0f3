"""Every way a version is made records who made it (actor, session) and, when known, where the content came from."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from memdir import DirectoryStore, MemoryTool, open_store
from memdir.archive import export_namespace, import_namespace
from memdir.cli import cli


def test_the_tool_the_cli_an_import_and_an_editor_each_leave_their_mark(tmp_path: Path) -> None:
    url = str(tmp_path / "store")
    with open_store(url) as store, MemoryTool(store, actor="model", session="s-1", source="untrusted-context") as tool:
        tool.execute({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
        tool.execute({"command": "str_replace", "path": "/memories/a.md", "old_str": "one", "new_str": "two"})
    assert CliRunner().invoke(cli, ["--store", url, "restore", "/memories/a.md", "1"]).exit_code == 0
    (tmp_path / "store" / "memories" / "a.md").write_text("edited by hand\n")
    with DirectoryStore(tmp_path / "store") as store:
        history = [(v.op, v.actor, v.session, v.source) for v in store.history("/memories/a.md")]
        export_namespace(store, tmp_path / "a.zip")
    assert history == [
        ("create", "model", "s-1", "untrusted-context"),
        ("str_replace", "model", "s-1", "untrusted-context"),
        ("restore", "user", None, "restored from version 1"),
        ("write", "external", None, None),
    ]
    with open_store("memory:") as copy:
        import_namespace(copy, tmp_path / "a.zip")
        assert [(v.op, v.actor, v.session, v.source) for v in copy.history("/memories/a.md")] == history
