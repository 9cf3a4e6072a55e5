"""Sphinx configuration: ``python -m sphinx -W -b html docs docs/_build/html``.

Needs the ``docs`` extra (``pip install -e '.[docs]'``). torch is optional: when
it is not installed, autodoc mocks it, so ``remat_knapsack.torch``'s pages still
build from its docstrings.
"""

from __future__ import annotations

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "_ext"))
if importlib.util.find_spec("remat_knapsack") is None:  # a checkout built in place, not installed
    sys.path.insert(0, os.path.join(ROOT, "src"))

import remat_knapsack  # noqa: E402

project = "remat-knapsack"
author = "the remat-knapsack authors"
copyright = "the remat-knapsack authors"  # noqa: A001
release = version = remat_knapsack.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "public_api",
    "bench_tables",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_ext", "_static/*.py", "README.md"]
root_doc = "index"

# --- torch is optional -------------------------------------------------------
TORCH = importlib.util.find_spec("torch") is not None
autodoc_mock_imports = [] if TORCH else ["torch"]

# --- autodoc / numpydoc ------------------------------------------------------
autodoc_default_options = {"members": False}
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()
numpydoc_xref_param_type = False

# --- MyST --------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3

# --- HTML --------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "remat-knapsack"
html_static_path = ["_static"]
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
# A left column only where a section has pages of its own (the API reference).
html_sidebars = {page: [] for page in ("index", "getting-started", "user-guide", "algorithms", "benchmarks",
                                       "contract", "changelog")}
html_css_files = ["custom.css"]
html_show_sourcelink = False
html_copy_source = False


def _init_signature(app, what, name, obj, options, signature, return_annotation):
    """Without torch, a class built on a mocked torch base shows the mock's ``(*args, **kwargs)``:
    show its own ``__init__``'s signature instead."""
    if TORCH or what not in ("class", "exception") or "__init__" not in vars(obj):
        return None
    from sphinx.util.inspect import signature as sig_of
    from sphinx.util.inspect import stringify_signature

    try:
        sig = sig_of(obj.__init__, bound_method=True)
    except (TypeError, ValueError):
        return None
    return stringify_signature(sig, show_return_annotation=False), return_annotation


def _drop_maintainers_notes(app, what, name, obj, options, lines):
    """A module docstring's "For maintainers" section (its layout, what may import what) stays in the code."""
    if what == "module" and "For maintainers" in lines:
        del lines[lines.index("For maintainers"):]


def setup(app):
    app.connect("autodoc-process-signature", _init_signature)
    app.connect("autodoc-process-docstring", _drop_maintainers_notes)
