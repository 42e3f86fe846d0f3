"""Random command sequences through `MemoryTool`, checked against a plain dict of files, on every backend.

A Hypothesis `RuleBasedStateMachine` sends create / view / str_replace / insert / delete / rename over a small
alphabet of paths (nested directories, and paths that run *through* a file), predicts each result's exact text and
``is_error`` from the model, and after every step checks that the store holds exactly the model's files and that
the change log grew by one version per file the command touched (none for a failed command).

Example counts come from a settings profile: ``memdir-stateful`` (default, a few seconds per backend) or
``memdir-stateful-thorough`` (set ``MEMDIR_STATEFUL_PROFILE=memdir-stateful-thorough``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from memdir import MemoryTool, Store, ToolResult, open_store

settings.register_profile(
    "memdir-stateful",
    max_examples=80,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "memdir-stateful-thorough",
    max_examples=400,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
PROFILE = settings.get_profile(os.environ.get("MEMDIR_STATEFUL_PROFILE", "memdir-stateful"))

NAMES = ["a.md", "b.md", "d", "d/a.md", "d/b.md", "d/e", "d/e/a.md", "e", "e/a.md", "a.md/x.md", "d/a.md/y.md"]
paths = st.sampled_from(["/memories/" + name for name in NAMES])
rename_paths = st.one_of(paths, st.just("/memories"))
texts = st.text(alphabet="xy\n", max_size=14)
needles = st.text(alphabet="xy\n", max_size=3)

LISTING = "Here're the files and directories up to 2 levels deep in {}, excluding hidden items and node_modules:"


def split_lines(text: str) -> list[str]:
    lines = text.split("\n") if text else []
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def numbered(lines: list[str], first: int) -> list[str]:
    return [f"{n:>6}\t{line}" for n, line in enumerate(lines, start=first)]


def key_of(path: str) -> str:
    return path.removeprefix("/memories").strip("/")


def ancestors(key: str) -> list[str]:
    parts = key.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def within(key: str, other: str) -> bool:
    return key == other or key.startswith(other + "/") or other == ""


class CommandMachine(RuleBasedStateMachine):
    """Subclassed once per backend; ``open_in`` makes a fresh store in a fresh directory."""

    open_in: Callable[[str], Store] = staticmethod(lambda _home: open_store("memory:"))

    def __init__(self) -> None:
        super().__init__()
        self.home = tempfile.mkdtemp(prefix="memdir-stateful-")
        self.store = type(self).open_in(self.home)
        self.tool = MemoryTool(self.store)
        self.files: dict[str, str] = {}
        self.versions = 0

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.home, ignore_errors=True)

    # -- the model ------------------------------------------------------------------------------------------

    def is_file(self, key: str) -> bool:
        return key in self.files

    def is_dir(self, key: str) -> bool:
        return key == "" or any(f.startswith(key + "/") for f in self.files)

    def blocker(self, key: str) -> str | None:
        return next((a for a in ancestors(key) if a in self.files), None)

    def below(self, key: str) -> list[str]:
        return sorted(f for f in self.files if within(f, key) and f != key) if self.is_dir(key) else []

    def listing(self, path: str, key: str) -> str:
        prefix = key + "/" if key else ""
        virtual = "/memories" + ("/" + key if key else "")
        rows: dict[tuple[str, ...], tuple[int, bool]] = {}
        total = 0
        for name, text in self.files.items():
            if not name.startswith(prefix):
                continue
            size = len(text.encode())
            total += size
            parts = name[len(prefix) :].split("/")
            for depth in (1, 2):
                if len(parts) < depth:
                    break
                grown, is_dir = rows.get(tuple(parts[:depth]), (0, False))
                rows[tuple(parts[:depth])] = (grown + size, is_dir or len(parts) > depth)
        assert total < 1024  # sizes below print as "{n}B"
        lines = [LISTING.format(path), f"{total}B\t{virtual}"]
        lines += [f"{size}B\t{virtual}/{'/'.join(k)}{'/' if d else ''}" for k, (size, d) in sorted(rows.items())]
        return "\n".join(lines)

    # -- checking one command -------------------------------------------------------------------------------

    def check(self, command: Mapping[str, object], text: str, error: bool, touched: list[tuple[str, str]]) -> None:
        result: ToolResult = self.tool.execute(command)
        assert (result.text, result.is_error) == (text, error), command
        new = list(self.store.log(self.versions))
        assert sorted((v.op, v.path.key) for v in new) == sorted(touched), (command, new)
        self.versions += len(new)

    # -- rules ----------------------------------------------------------------------------------------------

    @rule(path=paths, text=texts)
    def create(self, path: str, text: str) -> None:
        key = key_of(path)
        command = {"command": "create", "path": path, "file_text": text}
        blocker = self.blocker(key)
        if self.is_file(key) or self.is_dir(key):
            self.check(command, f"Error: File {path} already exists", True, [])
        elif blocker is not None:
            self.check(
                command, f"Error: Cannot create {path}: /memories/{blocker} is a file, not a directory", True, []
            )
        else:
            self.check(command, f"File created successfully at: {path}", False, [("create", key)])
            self.files[key] = text

    @rule(path=st.one_of(paths, st.just("/memories")))
    def view(self, path: str) -> None:
        key = key_of(path)
        command = {"command": "view", "path": path}
        if self.is_file(key):
            body = "\n".join(numbered(split_lines(self.files[key]), 1))
            self.check(command, f"Here's the content of {path} with line numbers:\n{body}", False, [])
        elif self.is_dir(key):
            self.check(command, self.listing(path, key), False, [])
        else:
            self.check(command, f"The path {path} does not exist. Please provide a valid path.", True, [])

    @rule(path=paths, old=needles, new=st.none() | needles)
    def str_replace(self, path: str, old: str, new: str | None) -> None:
        key = key_of(path)
        command: dict[str, object] = {"command": "str_replace", "path": path, "old_str": old}
        if new is not None:
            command["new_str"] = new
        replacement = new or ""
        if old == "":
            self.check(command, "Error: Parameter `old_str` of command `str_replace` must not be empty.", True, [])
            return
        if not self.is_file(key):
            self.check(command, f"Error: The path {path} does not exist. Please provide a valid path.", True, [])
            return
        text = self.files[key]
        found = [i for i in range(len(text)) if text.startswith(old, i)]  # overlapping matches count
        if not found:
            expected = f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
            self.check(command, expected, True, [])
        elif len(found) > 1:
            numbers = ", ".join(str(n) for n in dict.fromkeys(text.count("\n", 0, i) + 1 for i in found))
            expected = (
                f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: {numbers}. "
                "Please ensure it is unique"
            )
            self.check(command, expected, True, [])
        else:
            at = found[0]
            changed = text[:at] + replacement + text[at + len(old) :]
            first = text.count("\n", 0, at)
            lines = split_lines(changed)
            start, end = max(0, first - 2), min(len(lines), first + replacement.count("\n") + 3)
            expected = (
                "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
                + "\n".join(numbered(lines[start:end], start + 1))
            )
            self.check(command, expected, False, [("str_replace", key)])
            self.files[key] = changed

    @rule(path=paths, line=st.integers(min_value=-1, max_value=6), text=texts)
    def insert(self, path: str, line: int, text: str) -> None:
        key = key_of(path)
        command = {"command": "insert", "path": path, "insert_line": line, "insert_text": text}
        if not self.is_file(key):
            self.check(command, f"Error: The path {path} does not exist", True, [])
            return
        lines = split_lines(self.files[key])
        if not 0 <= line <= len(lines):
            expected = (
                f"Error: Invalid `insert_line` parameter: {line}. It should be within the range of lines of the "
                f"file: [0, {len(lines)}]"
            )
            self.check(command, expected, True, [])
            return
        block = text.removesuffix("\n")
        self.check(command, f"The file {path} has been edited.", False, [("insert", key)])
        self.files[key] = "\n".join([*lines[:line], block, *lines[line:]]) + "\n"

    @rule(path=st.one_of(paths, st.just("/memories")))
    def delete(self, path: str) -> None:
        key = key_of(path)
        command = {"command": "delete", "path": path}
        if key == "":
            self.check(command, "Error: Cannot delete the /memories directory itself", True, [])
        elif self.is_file(key):
            self.check(command, f"Successfully deleted {path}", False, [("delete", key)])
            del self.files[key]
        elif self.is_dir(key):
            gone = self.below(key)
            self.check(command, f"Successfully deleted {path}", False, [("delete", k) for k in gone])
            for k in gone:
                del self.files[k]
        else:
            self.check(command, f"Error: The path {path} does not exist", True, [])

    @rule(old=rename_paths, new=rename_paths)
    def rename(self, old: str, new: str) -> None:
        source, dest = key_of(old), key_of(new)
        command = {"command": "rename", "old_path": old, "new_path": new}
        blocker = self.blocker(dest)
        if source == "":
            self.check(command, "Error: Cannot rename the /memories directory itself", True, [])
        elif within(dest, source) and dest != "" and (dest != source or self.is_dir(source)):
            expected = f"Error: Cannot rename {old} to {new}: a directory cannot move into itself"
            self.check(command, expected, True, [])
        elif not (self.is_file(source) or self.is_dir(source)):
            self.check(command, f"Error: The path {old} does not exist", True, [])
        elif dest == "" or self.is_file(dest) or self.is_dir(dest):
            self.check(command, f"Error: The destination {new} already exists", True, [])
        elif blocker is not None:
            expected = f"Error: Cannot rename to {new}: /memories/{blocker} is a file, not a directory"
            self.check(command, expected, True, [])
        else:
            moving = [source] if self.is_file(source) else self.below(source)
            renamed = {k: dest + k[len(source) :] for k in moving}
            self.check(
                command, f"Successfully renamed {old} to {new}", False, [("rename", k) for k in renamed.values()]
            )
            for was, now in renamed.items():
                self.files[now] = self.files.pop(was)

    # -- invariants -----------------------------------------------------------------------------------------

    @invariant()
    def store_holds_exactly_the_model(self) -> None:
        entries = self.store.list_files()
        assert [e.path.key for e in entries] == sorted(self.files, key=lambda k: k.split("/"))
        for entry in entries:
            content = self.store.read(entry.path).content
            assert content.decode() == self.files[entry.path.key]
            assert entry.size == len(content)
        assert (self.store.usage().files, self.store.usage().bytes) == (
            len(self.files),
            sum(len(t.encode()) for t in self.files.values()),
        )

    @invariant()
    def history_follows_each_file(self) -> None:
        # Reading and listing record nothing; each live file's last version holds its current content.
        assert len(list(self.store.log())) == self.versions
        for key, text in self.files.items():
            last = self.store.history("/memories/" + key)[-1]
            assert last.path.key == key and last.size == len(text.encode()) and last.sha256 is not None


class MemoryMachine(CommandMachine):
    open_in = staticmethod(lambda _home: open_store("memory:"))


class SQLiteMachine(CommandMachine):
    open_in = staticmethod(lambda home: open_store(f"sqlite:///{home}/memory.db"))


class DirectoryMachine(CommandMachine):
    open_in = staticmethod(lambda home: open_store(os.path.join(home, "store")))


TestMemoryStore = MemoryMachine.TestCase
TestMemoryStore.settings = PROFILE
TestSQLiteStore = SQLiteMachine.TestCase
TestSQLiteStore.settings = PROFILE
TestDirectoryStore = DirectoryMachine.TestCase
TestDirectoryStore.settings = PROFILE
