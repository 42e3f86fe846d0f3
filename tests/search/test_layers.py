"""Search sits below the doors: nothing in ``memdir.search`` imports the memory tool, the server, the agent or
the CLI (they offer search; it must not need them, or an import cycle runs through it)."""

from __future__ import annotations

import ast
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
