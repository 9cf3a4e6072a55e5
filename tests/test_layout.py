"""The package's layout: subpackages with a stated purpose, a short top level, no import circle."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "remat_knapsack"
NAME = "remat_knapsack"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*"):
        if path.suffix in (".py", ".pyx") and "__pycache__" not in path.parts:
            found[_module_name(path)] = path
    return found


def _python_import(line: str) -> bool:
    if not line.startswith(("import ", "from ")) or " cimport " in line:
        return False
    try:
        ast.parse(line)
    except SyntaxError:
        return False
    return True


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Package modules that ``name`` imports, anywhere in its body (functions too)."""
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    text = path.read_text()
    if path.suffix == ".pyx":  # Cython: the one-line Python imports (cimports are compile-time)
        text = "\n".join(line.strip() for line in text.splitlines() if _python_import(line.strip()))
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            submodules = [f"{target}.{alias.name}" for alias in node.names]
            # ``from pkg import module`` imports the module; ``from pkg import name``, pkg
            candidates = [m for m in submodules if m in modules] or [target]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        for candidate in candidates:
            if candidate in modules and candidate != name:
                found.add(candidate)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    # importing a submodule runs its package's __init__ first: that edge is implicit
    for name in graph:
        parent = name.rpartition(".")[0]
        while parent and parent != NAME:
            graph[name].discard(parent)
            parent = parent.rpartition(".")[0]
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_circle():
    assert _cycle(_graph()) is None, " -> ".join(_cycle(_graph()))


def test_a_cycle_is_found():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_top_level_stays_short():
    top = [p for p in PACKAGE.iterdir() if p.suffix in (".py", ".pyx")]
    assert len(top) <= 20, sorted(p.name for p in top)


def test_every_subpackage_says_what_it_holds_and_may_import():
    inits = [init for init in PACKAGE.rglob("__init__.py") if init.parent != PACKAGE]
    assert any(init.parent.parent != PACKAGE for init in inits)  # nested subpackages are checked too
    for init in inits:
        where = init.relative_to(PACKAGE)
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "import" in doc.lower(), f"{where}: say what it may import"
        assert len(doc) > 200, f"{where}: say what it holds"
