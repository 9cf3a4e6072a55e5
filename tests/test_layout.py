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


#: The planner (``remat_knapsack.torch``) from the bottom up: a part may import only parts of lower
#: layers (and modules of its own subpackage). Parts of one layer do not import each other.
TORCH_LAYERS = [
    {"_symbols", "_rng", "step"},  # the private torch names; random ops; the user's step run for real
    {"peaks"},  # what does this plan peak at
    {"capture"},  # what are the graphs
    {"search"},  # which plan for a limit
    {"_plugin"},  # the solver inside the partitioner
    {"_regions"},  # the step of a model compiled region by region
    {"_predict", "eager"},  # predict_peaks; plan_checkpoints
    {"_fit", "_sweep"},  # fit; sweep
]
TORCH = f"{NAME}.torch"


def _torch_part(module: str) -> str | None:
    """The part of the planner ``module`` belongs to (``peaks`` for ``...torch.peaks._graph``), None outside it."""
    if not module.startswith(TORCH + "."):
        return None
    return module[len(TORCH) + 1:].split(".")[0]


def _upward(graph: dict[str, set[str]], layer: dict[str, int]) -> list[str]:
    """Imports between the planner's parts that point up or sideways in ``layer``."""
    wrong = []
    for module, imported in graph.items():
        here = _torch_part(module)
        if here is None:
            continue
        for target in imported:
            there = _torch_part(target)
            if there is not None and there != here and layer[there] >= layer[here]:
                wrong.append(f"{module} -> {target}")
    return sorted(wrong)


def test_the_planners_arrows_point_down():
    parts = {p.stem if p.suffix == ".py" else p.name for p in (PACKAGE / "torch").iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}  # fmt: skip
    layer = {part: i for i, parts_of in enumerate(TORCH_LAYERS) for part in parts_of}
    assert parts == set(layer), f"place every part of the planner in a layer: {sorted(parts ^ set(layer))}"
    wrong = _upward(_graph(), layer)
    assert not wrong, "imports that point up or sideways: " + ", ".join(wrong)


def test_an_upward_or_sideways_import_is_found():
    layer = {"step": 0, "peaks": 1, "_fit": 2, "_sweep": 2}
    graph = {
        f"{TORCH}.peaks._graph": {f"{TORCH}.step._memory", f"{TORCH}.peaks._liveness", f"{NAME}.api"},
        f"{TORCH}.step._memory": {f"{TORCH}.peaks"},  # up
        f"{TORCH}._fit": {f"{TORCH}._sweep", f"{TORCH}.peaks"},  # sideways, then down
    }
    assert _upward(graph, layer) == [f"{TORCH}._fit -> {TORCH}._sweep", f"{TORCH}.step._memory -> {TORCH}.peaks"]


#: No source file of the planner or of the sparse solver is longer than this: past it, a file does two jobs.
MAX_LINES = 900


def test_no_source_file_is_too_long():
    long = []
    for folder in ("torch", "sparse"):
        for path in sorted((PACKAGE / folder).rglob("*")):
            if path.suffix in (".py", ".pyx", ".pxd"):
                lines = len(path.read_text().splitlines())
                if lines > MAX_LINES:
                    long.append(f"{path.relative_to(PACKAGE)} ({lines} lines)")
    assert not long, f"over {MAX_LINES} lines: " + ", ".join(long)
