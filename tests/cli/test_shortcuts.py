"""Everyday commands without JSON in shell quotes (write, edit, rm, mv), and the rest of the CLI's words: restore
of the current content, ``export -`` / ``import -`` / ``tool -``, ``config``, settings that do nothing, the log."""

from __future__ import annotations

import json
import logging
import os
import sys
import zipfile
from pathlib import Path

import pytest

from cli.helpers import Run
from memdir import Store, open_store
from memdir.cli._logfile import BACKUPS, MAX_BYTES, open_log

AWS_KEY = "AKIA" + "Q7ZXRT4M2PLW9HVB"  # a key of the real shape (the documented example is not screened as one)


def editor(tmp_path: Path, code: str) -> str:
    """An $EDITOR that runs ``code`` with ``path`` the file to edit (and ``memdir`` importable)."""
    script = tmp_path / "editor.py"
    script.write_text(f"import sys\npath = sys.argv[1]\n{code}\n")
    return f"{sys.executable} {script}"


# -- write ------------------------------------------------------------------------------------------------------


def test_write_from_stdin_or_a_file(run: Run, sqlite_url: str, tmp_path: Path) -> None:
    result = run("write", "/memories/a.md", store=sqlite_url, input="- prefers email\n")
    assert (result.exit_code, result.stdout) == (0, "File created successfully at: /memories/a.md\n")
    (tmp_path / "notes.md").write_text("from a file\n")
    assert run("write", "/memories/b.md", str(tmp_path / "notes.md"), store=sqlite_url).exit_code == 0
    with open_store(sqlite_url) as store:
        assert store.read("/memories/a.md").content == b"- prefers email\n"
        assert store.read("/memories/b.md").content == b"from a file\n"
        assert [(v.op, v.actor) for v in store.history("/memories/a.md")] == [("create", "user")]


def test_write_refuses_an_existing_file_unless_told_to_overwrite(run: Run, sqlite_url: str) -> None:
    run("write", "/memories/a.md", store=sqlite_url, input="one\n")
    refused = run("write", "/memories/a.md", store=sqlite_url, input="two\n")
    assert (refused.exit_code, refused.stdout) == (1, "")
    assert refused.stderr == "Error: /memories/a.md already exists: pass --overwrite to replace it\n"
    replaced = run("write", "/memories/a.md", "--overwrite", store=sqlite_url, input="two\n")
    assert (replaced.exit_code, replaced.stdout) == (0, "Saved /memories/a.md (version 2).\n")  # not "File created"
    with open_store(sqlite_url) as store:
        assert store.read("/memories/a.md").content == b"two\n"
        assert [v.op for v in store.history("/memories/a.md")] == ["create", "write"]


def test_write_goes_through_the_memory_tool_and_its_policy(run: Run, sqlite_url: str) -> None:
    result = run("write", "/memories/keys.md", store=sqlite_url, input=f"aws: {AWS_KEY}\n")
    assert result.exit_code == 0
    assert "Note: 1 secret was redacted before saving ([REDACTED:aws-access-key])." in result.stdout
    with open_store(sqlite_url) as store:
        assert store.read("/memories/keys.md").content == b"aws: [REDACTED:aws-access-key]\n"


def test_write_refuses_what_the_path_rules_refuse_and_text_that_is_not_utf8(run: Run, sqlite_url: str) -> None:
    escape = run("write", "/memories/../x.md", store=sqlite_url, input="x")
    assert (escape.exit_code, escape.stderr) == (1, "Error: Path /memories/../x.md would escape /memories directory\n")
    binary = run("write", "/memories/b.md", store=sqlite_url, input=b"\xff\xfe")
    assert (binary.exit_code, binary.stderr) == (
        1,
        "Error: the input is not UTF-8 text (byte 0); memory files are text\n",
    )


# -- edit -------------------------------------------------------------------------------------------------------


def test_edit_records_the_change_as_a_new_version(
    run: Run, sqlite_url: str, opened: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened.write("/memories/a.md", b"- tea\n")
    monkeypatch.setenv("EDITOR", editor(tmp_path, "open(path, 'a').write('- coffee\\n')"))
    result = run("edit", "/memories/a.md", store=sqlite_url)
    assert result.exit_code == 0, result.output
    assert result.stdout == "Saved /memories/a.md (version 2).\n"  # an edit, not a file created
    assert opened.read("/memories/a.md").content == b"- tea\n- coffee\n"
    assert [(v.op, v.actor) for v in opened.history("/memories/a.md")][-1] == ("write", "user")


def test_edit_of_a_new_path_creates_it_and_an_unchanged_text_writes_nothing(
    run: Run, sqlite_url: str, opened: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDITOR", editor(tmp_path, "open(path, 'w').write('new\\n')"))
    assert run("edit", "/memories/new.md", store=sqlite_url).exit_code == 0
    assert opened.read("/memories/new.md").content == b"new\n"
    monkeypatch.setenv("EDITOR", editor(tmp_path, "pass"))  # quits without saving
    same = run("edit", "/memories/new.md", store=sqlite_url)
    assert (same.exit_code, same.stderr) == (0, "No changes; /memories/new.md was not written.\n")
    assert len(opened.history("/memories/new.md")) == 1


def test_an_edit_keeps_what_the_policy_said_about_it(
    run: Run, sqlite_url: str, opened: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened.write("/memories/a.md", b"- tea\n")
    monkeypatch.setenv("EDITOR", editor(tmp_path, f"open(path, 'a').write('aws: {AWS_KEY}\\n')"))
    result = run("edit", "/memories/a.md", store=sqlite_url)
    assert (result.exit_code, result.stdout) == (
        0,
        "Saved /memories/a.md (version 2).\n\nNote: 1 secret was redacted before saving ([REDACTED:aws-access-key]).\n",
    )


def test_edited_text_that_is_not_utf8_is_refused_in_one_line_and_kept(
    run: Run, sqlite_url: str, opened: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened.write("/memories/a.md", b"one\n")
    monkeypatch.setenv("EDITOR", editor(tmp_path, "open(path, 'wb').write(b'\\xff\\xfecaf\\xe9')"))
    result = run("edit", "/memories/a.md", store=sqlite_url)
    assert (result.exit_code, result.stdout) == (1, "")
    message, _, kept = result.stderr.rstrip("\n").rpartition(" ")
    assert message == "Error: the edited text is not UTF-8 (byte 0); nothing was saved to /memories/a.md. It is in"
    assert Path(kept).read_bytes() == b"\xff\xfecaf\xe9" and oct(Path(kept).stat().st_mode)[-3:] == "600"
    Path(kept).unlink()
    assert [v.version for v in opened.history("/memories/a.md")] == [1]


def test_an_editor_that_removes_its_file_saves_nothing(
    run: Run, sqlite_url: str, opened: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened.write("/memories/a.md", b"one\n")
    monkeypatch.setenv("EDITOR", editor(tmp_path, "import os\nos.remove(path)"))
    result = run("edit", "/memories/a.md", store=sqlite_url)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == "Error: the file being edited was removed; nothing was saved to /memories/a.md\n"
    assert opened.read("/memories/a.md").content == b"one\n"


def test_an_editor_that_is_not_installed_is_named_without_python_error_text(
    run: Run, sqlite_url: str, opened: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened.write("/memories/a.md", b"one\n")
    monkeypatch.setenv("EDITOR", str(tmp_path / "no-such-editor"))
    result = run("edit", "/memories/a.md", store=sqlite_url)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: could not start the editor {tmp_path / 'no-such-editor'} (not found); set $VISUAL or $EDITOR to an "
        "editor that is installed\n"
    )


def test_edit_refuses_to_overwrite_a_change_made_meanwhile_and_keeps_the_text(
    run: Run, sqlite_url: str, opened: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened.write("/memories/a.md", b"one\n")
    code = (
        "import memdir\n"
        f"memdir.open_store({sqlite_url!r}).write('/memories/a.md', b'someone else\\n')\n"
        "open(path, 'w').write('mine\\n')"
    )
    monkeypatch.setenv("EDITOR", editor(tmp_path, code))
    result = run("edit", "/memories/a.md", store=sqlite_url)
    assert result.exit_code == 1
    message, _, kept = result.stderr.rstrip("\n").rpartition(" ")
    assert message == (
        "Error: /memories/a.md changed while you were editing (now version 2); nothing was written. Your text is in"
    )
    assert Path(kept).read_text() == "mine\n" and oct(Path(kept).stat().st_mode)[-3:] == "600"
    assert opened.read("/memories/a.md").content == b"someone else\n"
    Path(kept).unlink()


# -- rm and mv --------------------------------------------------------------------------------------------------


def test_rm_and_mv(run: Run, sqlite_url: str, opened: Store) -> None:
    opened.write("/memories/a.md", b"a")
    opened.write("/memories/dir/b.md", b"b")
    moved = run("mv", "/memories/a.md", "/memories/archive/a.md", store=sqlite_url)
    assert moved.stdout == "Successfully renamed /memories/a.md to /memories/archive/a.md\n"
    taken = run("mv", "/memories/dir/b.md", "/memories/archive/a.md", store=sqlite_url)
    assert (taken.exit_code, taken.stderr) == (1, "Error: The destination /memories/archive/a.md already exists\n")
    itself = run("mv", "/memories/archive/a.md", "/memories/archive/a.md", store=sqlite_url)
    assert (itself.exit_code, itself.stderr) == (1, "Error: The destination /memories/archive/a.md already exists\n")
    into = run("mv", "/memories/dir", "/memories/dir", store=sqlite_url)
    assert into.stderr == "Error: Cannot rename /memories/dir to /memories/dir: a directory cannot move into itself\n"
    directory = run("rm", "/memories/dir", store=sqlite_url)
    assert directory.exit_code == 1
    assert directory.stderr == "Error: /memories/dir is a directory: pass -r to delete it and everything below\n"
    assert run("rm", "-r", "/memories/dir", store=sqlite_url).stdout == "Successfully deleted /memories/dir\n"
    assert run("rm", "/memories/archive/a.md", store=sqlite_url).exit_code == 0
    missing = run("rm", "/memories/archive/a.md", store=sqlite_url)
    assert (missing.exit_code, missing.stderr) == (1, "Error: The path /memories/archive/a.md does not exist\n")
    assert opened.usage().files == 0
    assert [v.actor for v in opened.history("/memories/archive/a.md")][-1] == "user"


# -- restore ----------------------------------------------------------------------------------------------------


def test_restoring_the_content_already_there_writes_nothing_and_says_so(
    run: Run, sqlite_url: str, opened: Store
) -> None:
    opened.write("/memories/a.md", b"one\n")
    opened.write("/memories/a.md", b"two\n")
    assert run("restore", "/memories/a.md", "1", store=sqlite_url).stdout == "3\n"
    again = run("restore", "/memories/a.md", "1", store=sqlite_url)
    assert (again.exit_code, again.stdout) == (0, "3\n")
    assert (
        again.stderr
        == "/memories/a.md already holds the content of version 1 (it is version 3); nothing was written.\n"
    )
    current = run("restore", "/memories/a.md", "3", store=sqlite_url)
    assert (current.stdout, "nothing was written" in current.stderr) == ("3\n", True)
    assert len(opened.history("/memories/a.md")) == 3
    unknown = run("restore", "/memories/a.md", "9", store=sqlite_url)
    assert (unknown.exit_code, unknown.stderr) == (1, "Error: /memories/a.md has no version 9\n")


# -- standard input and output ----------------------------------------------------------------------------------


def test_export_to_stdout_and_import_from_stdin(run: Run, sqlite_url: str, opened: Store, tmp_path: Path) -> None:
    opened.write("/memories/a.md", b"x\n")
    exported = run("export", "-", store=sqlite_url)
    assert exported.exit_code == 0
    assert exported.stderr == "Exported namespace 'default' to standard output: 1 file, 1 version.\n"
    assert not Path("-").exists()
    archive = tmp_path / "piped.zip"
    archive.write_bytes(exported.stdout_bytes)
    assert zipfile.ZipFile(archive).testzip() is None
    copy = str(tmp_path / "copy")
    imported = run("import", "-", store=copy, input=exported.stdout_bytes)
    assert imported.exit_code == 0, imported.output
    with open_store(copy) as store:
        assert store.read("/memories/a.md").content == b"x\n"


def test_tool_reads_its_command_from_stdin(run: Run, sqlite_url: str) -> None:
    command = json.dumps({"command": "create", "path": "/memories/a.md", "file_text": "hi"})
    assert run("tool", "-", store=sqlite_url, input=command).stdout == "File created successfully at: /memories/a.md\n"
    nested = run("tool", "-", store=sqlite_url, input="[" * 100_000)
    assert (nested.exit_code, nested.stderr) == (1, "Error: the command is not valid JSON: it is nested too deeply\n")


# -- settings ---------------------------------------------------------------------------------------------------


def test_an_unknown_settings_table_is_a_warning_naming_file_and_line(
    run: Run, sqlite_url: str, opened: Store, _isolated_home: Path
) -> None:
    (_isolated_home / "config.toml").write_text('[agent]\nmodel = "x"\n\n[polcy]\nsecrets = "block"\n')
    result = run("ls", store=sqlite_url)
    assert result.exit_code == 0
    assert result.stderr == (
        f"Warning: {_isolated_home / 'config.toml'}:4: unknown table [polcy] (did you mean [policy]?); it is ignored\n"
    )


def test_config_shows_the_files_read_and_the_values_in_effect(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _isolated_home: Path
) -> None:
    (_isolated_home / "config.toml").write_text(
        '[agent]\nmodel = "user-model"\nmax_turns = 5\n[search]\nmode = "fts"\n'
    )
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "memdir.toml").write_text('[agent]\nmodel = "project-model"\n[zzz]\nx = 1\n')
    monkeypatch.chdir(project)
    monkeypatch.setenv("MEMDIR_DISABLE_AUTO_MEMORY", "1")
    monkeypatch.setenv("MEMDIR_AGENT_MAX_TOKENS", "999")
    result = run("config")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        "Settings files (the project's values win over the user's):",
        f"  user:     {_isolated_home / 'config.toml'}",
        f"  project:  {project / 'memdir.toml'}",
    ]
    assert "Auto memory:  off (MEMDIR_DISABLE_AUTO_MEMORY is set)" in lines
    assert f'model = "project-model"  # {project / "memdir.toml"}' in lines
    assert f"max_turns = 5  # {_isolated_home / 'config.toml'}" in lines
    assert "max_tokens = 999  # environment (MEMDIR_AGENT_MAX_TOKENS)" in lines
    assert "compact_at = 150000  # default" in lines
    assert f'mode = "fts"  # {_isolated_home / "config.toml"}' in lines
    assert (
        result.stderr
        == f"Warning: {project / 'memdir.toml'}:3: unknown table [zzz] (known: [agent], [limits], [memory], [policy], [search]); it is ignored\n"
    )
    report = json.loads(run("config", "--json").stdout)
    assert report["tables"]["agent"]["model"] == {"value": "project-model", "source": str(project / "memdir.toml")}
    assert report["auto_memory"]["enabled"] is False


# -- the log file -----------------------------------------------------------------------------------------------


def test_the_log_keeps_problems_with_time_and_level_and_stays_bounded(_isolated_home: Path) -> None:
    close = open_log()
    logger = logging.getLogger("memdir.test")
    try:
        logger.info("request")  # traffic: not for this file
        logger.warning("something odd")
        for _ in range(3 * MAX_BYTES // 1000 + 10):
            logger.error("x" * 1000)
    finally:
        close()
    log = _isolated_home / "memdir.log"
    first = (_isolated_home / f"memdir.log.{BACKUPS}").read_text().splitlines()[0]
    assert first.endswith(f" WARNING memdir.test [pid {os.getpid()}]: something odd")
    assert first[:24].endswith("Z") and first[4] == "-" and first[10] == "T"  # 2026-11-29T14:38:01.123Z
    assert "request" not in (_isolated_home / f"memdir.log.{BACKUPS}").read_text()
    kept = sorted(p.name for p in _isolated_home.glob("memdir.log*"))
    assert kept == ["memdir.log", *(f"memdir.log.{n}" for n in range(1, BACKUPS + 1))]
    for path in _isolated_home.glob("memdir.log*"):
        assert path.stat().st_size <= MAX_BYTES + 2000
        assert oct(path.stat().st_mode)[-3:] == "600"
    assert log.exists()


def test_an_editor_that_exits_with_an_error_is_said_plainly_and_saves_nothing(
    run: Run, sqlite_url: str, opened: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened.write("/memories/a.md", b"one\n")
    command = editor(tmp_path, "open(path, 'a').write('two\\n'); sys.exit(3)")
    monkeypatch.setenv("EDITOR", command)
    monkeypatch.delenv("VISUAL", raising=False)
    result = run("edit", "/memories/a.md", store=sqlite_url)
    assert (result.exit_code, result.stderr) == (
        1,
        f"Error: the editor {command} exited with an error; nothing was saved to /memories/a.md\n",
    )
    assert opened.read("/memories/a.md").content == b"one\n"
