"""A store that is not there: reading commands refuse it in one line and create nothing; writing commands create it
and say so once. The library underneath: ``open_store(url, create=False)`` and ``store_exists``."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cli.helpers import Run
from memdir import StoreNotFoundError, open_store, store_exists
from support.postgres import database_url

# Every command that only reads (or changes only what is already there): none may create a store.
READING = [
    ["ls"],
    ["cat", "/memories/a.md"],
    ["history", "/memories/a.md"],
    ["show", "/memories/a.md@1"],
    ["diff", "/memories/a.md"],
    ["restore", "/memories/a.md", "1"],
    ["search", "tea"],
    ["doctor"],
    ["export", "{tmp}/out.zip"],
    ["audit"],
    ["verify"],
    ["review"],
    ["gc"],
    ["rm", "/memories/a.md"],
    ["mv", "/memories/a.md", "/memories/b.md"],
    ["tool", '{"command": "view", "path": "/memories"}'],
    ["token", "list"],
]


def everything_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.mark.parametrize("args", READING, ids=lambda a: " ".join(a[:1]))
@pytest.mark.parametrize("kind", ["directory", "sqlite"])
def test_reading_commands_refuse_a_store_that_is_not_there(
    run: Run, tmp_path: Path, kind: str, args: list[str]
) -> None:
    url = str(tmp_path / "typo") if kind == "directory" else f"sqlite://{tmp_path / 'nonexistent' / 'dir' / 'x.db'}"
    result = run(*[a.replace("{tmp}", str(tmp_path)) for a in args], store=url)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: no store at {url} (check --store or MEMDIR_STORE; a writing command such as `memdir write` creates it)\n"
    )
    assert everything_under(tmp_path) == []  # no directory, no database, no archive


def test_the_default_store_too(run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _isolated_home: Path) -> None:
    monkeypatch.chdir(tmp_path)  # not inside a git repository: the default store is <data dir>/store
    result = run("ls")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: no store at {_isolated_home / 'store'} yet (the default store (not inside a git repository); a "
        "writing command such as `memdir write` creates it)\n"
    )
    assert not (_isolated_home / "store").exists()


def test_a_directory_that_is_not_a_store_is_not_filled_with_one(run: Run, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")  # an existing folder given by mistake (say, --store ~)
    assert run("ls", store=str(tmp_path)).exit_code == 1
    assert everything_under(tmp_path) == ["notes.txt"]


@pytest.fixture
def unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A directory store whose directory may not be read (mode 000 as any user but root: tests run as root, whom
    the mode does not stop, so the refusal is made where memdir looks)."""
    with open_store(str(tmp_path / "store")) as store:
        store.write("/memories/a.md", b"x\n")
    for name in ("stat", "lstat"):  # what looks inside a directory that may not be read fails
        monkeypatch.setattr(os, name, refused_inside(tmp_path / "store", getattr(os, name)))
    return str(tmp_path / "store")


def refused_inside(folder: Path, real: Callable[..., os.stat_result]) -> Callable[..., os.stat_result]:
    def stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if not isinstance(path, int) and Path(os.fsdecode(path)).parent == folder:  # (an int is an open file)
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real(path, *args, **kwargs)

    return stat


@pytest.mark.parametrize(
    "args",
    [["ls"], ["tool", '{"command": "view", "path": "/memories"}'], ["doctor"], ["verify"], ["export", "{tmp}/a.zip"]],
    ids=lambda a: a[0],
)
def test_a_store_that_may_not_be_read_is_not_reported_missing(
    run: Run, tmp_path: Path, unreadable: str, args: list[str]
) -> None:
    result = run(*[a.replace("{tmp}", str(tmp_path)) for a in args], store=unreadable)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == "Error: could not open the store: permission denied by the operating system\n"
    assert not (tmp_path / "a.zip").exists()


def test_writing_commands_create_the_store_and_say_so_once(run: Run, tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'new' / 'memory.db'}"
    first = run("write", "/memories/a.md", "-", store=url, input="hello\n")
    assert first.exit_code == 0, first.output
    assert first.stderr == f"Created a new store at {url}.\n"
    again = run("write", "/memories/b.md", store=url, input="again\n")
    assert (again.exit_code, again.stderr) == (0, "")
    assert run("cat", "/memories/a.md", store=url).stdout == "hello\n"


@pytest.mark.parametrize(
    "args",
    [
        ["tool", '{"command": "create", "path": "/memories/a.md", "file_text": "x"}'],
        ["token", "create", "-n", "alice"],
    ],
    ids=["tool create", "token create"],
)
def test_other_writing_commands_create_it_too(run: Run, tmp_path: Path, args: list[str]) -> None:
    url = str(tmp_path / "fresh")
    if args[0] == "token":
        url = f"sqlite://{tmp_path / 'fresh.db'}"
    result = run(*args, store=url)
    assert result.exit_code == 0, result.output
    assert f"Created a new store at {url}.\n" in result.stderr
    assert store_exists(url)


def test_import_creates_the_store_it_imports_into(run: Run, tmp_path: Path, sqlite_url: str) -> None:
    with open_store(sqlite_url) as source:
        source.write("/memories/a.md", b"x\n")
    assert run("export", str(tmp_path / "a.zip"), store=sqlite_url).exit_code == 0
    target = str(tmp_path / "copy")
    result = run("import", str(tmp_path / "a.zip"), store=target)
    assert result.exit_code == 0, result.output
    assert result.stderr == f"Created a new store at {target}.\n"


def test_where_expands_the_home_directory_and_says_when_the_store_is_not_there(
    run: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    result = run("where", store="~/memory")
    assert result.stdout == f"{tmp_path / 'memory'}\n"
    assert result.stderr == "(--store was given; it does not exist yet: a writing command creates it)\n"
    assert run("where", store="sqlite:~/m.db").stdout == f"sqlite://{tmp_path / 'm.db'}\n"


def test_a_remote_store_without_a_token_says_how_to_give_one(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMDIR_TOKEN", raising=False)
    result = run("ls", store="http://127.0.0.1:9")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        "Error: the memdir server at http://127.0.0.1:9 needs a token: set MEMDIR_TOKEN=TOKEN or use a URL such as "
        "http://TOKEN@host:port (whoever runs the server makes one with `memdir token create`)\n"
    )
    assert "token=" not in result.stderr  # the Python API's wording is not the CLI's


def test_the_store_option_names_every_kind_of_url(run: Run) -> None:
    text = " ".join(run("--help").stdout.split())
    for form in ("file:PATH", "sqlite:PATH", "postgresql://", "http(s)://", "memory:"):
        assert form in text, form


# -- the library ----------------------------------------------------------------------------------------------


def test_open_store_with_create_false_creates_nothing(tmp_path: Path) -> None:
    for url in (str(tmp_path / "d"), f"file://{tmp_path / 'f'}", f"sqlite://{tmp_path / 's' / 'x.db'}"):
        assert not store_exists(url)
        with pytest.raises(StoreNotFoundError, match=f"^no store at {url}$"):
            open_store(url, create=False)
        with open_store(url):  # the default creates, as it always did
            pass
        assert store_exists(url)
        open_store(url, create=False).close()
    assert sorted(os.listdir(tmp_path)) == ["d", "f", "s"]


def test_memory_and_remote_stores_always_exist() -> None:
    assert store_exists("memory:") and store_exists("memory:shared")
    assert store_exists("http://127.0.0.1:9")  # the server holds the store; nothing to create here


def test_a_postgresql_store_exists_once_it_has_its_tables(tmp_path: Path) -> None:
    url = database_url(str(tmp_path))
    with psycopg.connect(url) as conn:  # an empty database: reachable, but not a store
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'memdir%'").fetchone() == (0,)
    assert not store_exists(url)
    with pytest.raises(StoreNotFoundError):
        open_store(url, create=False)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'memdir%'").fetchone() == (0,)
    open_store(url).close()
    assert store_exists(url)
