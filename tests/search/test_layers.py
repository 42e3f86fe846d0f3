"""Search sits below the doors: nothing in ``memdir.search`` imports the memory tool, the server, the agent or
the CLI (they offer search; it must not need them, or an import cycle runs through it)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import memdir.search

HIGHER = ("memdir.tool", "memdir.server", "memdir.agent", "memdir.cli", "memdir.integrations")


def imported(path: Path) -> set[str]:
    """The absolute names of the modules a source file imports (relative imports resolved)."""
    package = "memdir.search"
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_search_imports_no_door() -> None:
    folder = Path(memdir.search.__file__).parent
    for source in sorted(folder.glob("*.py")):
        wrong = sorted(name for name in imported(source) if name.startswith(HIGHER))
        assert wrong == [], f"{source.name} imports {wrong}"


def test_store_search_works_after_a_plain_import_memdir(tmp_path: Path) -> None:
    """``import memdir`` loads its parts lazily: opening a store does not load the engine, and `Store.search` loads
    it on first use (it registers itself: the store never imports it)."""
    (tmp_path / "config.toml").write_text('[search]\nmode = "fts"\n')
    code = (
        "import sys, memdir\n"
        "store = memdir.open_store('memory:')\n"
        "assert not [m for m in sys.modules if m.startswith('memdir.search')], 'loaded with the store'\n"
        "store.write('/memories/trips.md', b'hiked the Dolomites\\n')\n"
        "print([hit.path.virtual for hit in store.search('Dolomites')])\n"
    )
    env = {**os.environ, "MEMDIR_CONFIG": str(tmp_path / "config.toml")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "['/memories/trips.md']\n", "")
