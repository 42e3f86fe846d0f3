"""The layers: doors (the tool, the server, the agent, the CLI, the integrations) above the gate and the policy, the
gate above the store backends; nothing lower imports anything higher, and no import runs in a circle (imports
made only for type checking aside: they never run). Every import counts, those inside functions too."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import memdir

SOURCE = Path(memdir.__file__).parent
DOORS = ("memdir.tool", "memdir.server", "memdir.agent", "memdir.cli", "memdir.integrations")
ABOVE_THE_STORE = (*DOORS, "memdir.gate", "memdir.policy", "memdir.search", "memdir.automemory")


def module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(SOURCE.rglob("*.py"))}


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The memdir modules ``path`` imports at run time (an ``if TYPE_CHECKING:`` block's imports left out)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text("utf-8"))
    typing_only = {id(node) for block in ast.walk(tree) if _is_type_checking(block) for node in ast.walk(block)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        for target in _targets(node, package):
            module = _resolve(target, known)
            if module is not None and module != name:
                found.add(module)
    return found


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _targets(node: ast.AST, package: str) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package if node.level else ""
        module = ".".join(part for part in (base, node.module or "") if part)
        yield from (f"{module}.{alias.name}" for alias in node.names)


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The module an imported name lives in (``memdir.store.open_store`` -> ``memdir.store``)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(path, known) for name, path in known.items()}


# The one exception: `Store.search` returns search's own hit type, which the remote store builds from the server's
# JSON (a data module of plain values; the search engine itself is never imported by a store).
CONTRACT_TYPES = frozenset({"memdir.search._hit"})


def test_the_store_imports_nothing_above_it() -> None:
    wrong = {
        m: sorted(i for i in found if i.startswith(ABOVE_THE_STORE) and i not in CONTRACT_TYPES)
        for m, found in graph().items()
    }
    assert {m: w for m, w in wrong.items() if m.startswith("memdir.store") and w} == {}


def test_the_gate_and_the_policy_import_no_door() -> None:
    wrong = {m: sorted(i for i in found if i.startswith(DOORS)) for m, found in graph().items()}
    below = ("memdir.gate", "memdir.policy", "memdir.search", "memdir.automemory")
    assert {m: w for m, w in wrong.items() if m.startswith(below) and w} == {}


def test_no_import_runs_in_a_circle() -> None:
    edges = graph()
    circles = [sorted(c) for c in _strongly_connected(edges) if len(c) > 1]
    assert circles == []


def test_the_check_sees_a_circle() -> None:
    """The check itself: a circle of two and one of three are found, a chain is not."""
    found = _strongly_connected({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}})
    assert sorted(sorted(c) for c in found if len(c) > 1) == [["a", "b"], ["c", "d", "e"]]


def _strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph has a few hundred modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    found.append(component)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found
