"""The documentation site builds with warnings as errors and its API pages name every public name.

Needs the ``docs`` extra (Sphinx); skipped without it, and when the tests run
outside a checkout (no ``docs/conf.py``). torch is optional: without it the
build mocks torch, and ``remat_knapsack.torch``'s public names are read from
its ``__all__`` in the source.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("numpydoc")
pytest.importorskip("myst_parser")
pytest.importorskip("pydata_sphinx_theme")

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
if not (DOCS / "conf.py").exists():
    pytest.skip("no docs/ here (tests run outside a checkout)", allow_module_level=True)

#: Module -> its API page; every name in the module's __all__ must be documented there.
PAGES = {
    "remat_knapsack": "api/remat_knapsack.html",
    "remat_knapsack.compat": "api/compat.html",
    "remat_knapsack.instances": "api/instances.html",
    "remat_knapsack.errors": "api/errors.html",
    "remat_knapsack.torch": "api/torch.html",
}

#: Markdown pages whose ``>>>`` examples run as doctests.
DOCTEST_PAGES = ["index.md", "getting-started.md", "user-guide.md"]


def public_names(module: str) -> list[str]:
    """``module.__all__``; for the torch plug-in without torch, read from its source."""
    if module == "remat_knapsack.torch" and importlib.util.find_spec("torch") is None:
        package = importlib.util.find_spec("remat_knapsack").submodule_search_locations[0]
        tree = ast.parse((Path(package) / "torch" / "__init__.py").read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
                return list(ast.literal_eval(node.value))
        raise AssertionError("remat_knapsack/torch/__init__.py has no __all__")
    return list(importlib.import_module(module).__all__)


@pytest.fixture(scope="module")
def html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "html"
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS), str(out)]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"sphinx -W failed:\n{r.stdout}\n{r.stderr}"
    return out


@pytest.mark.parametrize("module", list(PAGES))
def test_api_page_names_every_public_name(html: Path, module: str) -> None:
    page = (html / PAGES[module]).read_text(encoding="utf-8")
    names = public_names(module)
    assert names, module
    missing = [n for n in names if f'id="{module}.{n}"' not in page]
    assert not missing, f"{PAGES[module]} does not document {missing}"


def test_every_page_is_built(html: Path) -> None:
    for page in ("index", "getting-started", "user-guide", "algorithms", "benchmarks", "contract", "changelog",
                 "api/index"):
        assert (html / f"{page}.html").is_file(), page


#: The suites whose current tables the benchmark page shows.
SHOWN = ["bench-full", "bench-quick", "dense", "sparse", "sparse-n1e5", "fixed-cost", "sweep-llama-aot_eager",
         "sweep-llama-inductor"]


@pytest.mark.parametrize("suite", SHOWN)
def test_benchmark_tables_come_from_the_results(html: Path, suite: str) -> None:
    assert (ROOT / "benchmarks" / "results" / f"{suite}.csv").is_file(), suite
    page = (html / "benchmarks.html").read_text(encoding="utf-8")
    source = f'Data: <code class="docutils literal notranslate"><span class="pre">benchmarks/results/{suite}.csv'
    assert source in page, f"benchmarks.md shows no table from benchmarks/results/{suite}.csv"


@pytest.mark.parametrize("name", DOCTEST_PAGES)
def test_page_examples(name: str) -> None:
    result = doctest.testfile(str(DOCS / name), module_relative=False, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
