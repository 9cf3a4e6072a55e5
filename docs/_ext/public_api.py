"""``.. public-api:: MODULE``: a summary table and the full entry of every name in ``MODULE.__all__``.

The API pages list no names by hand: a name added to a module's ``__all__``
appears in the docs at the next build. Each name is documented under its public
path (``remat_knapsack.solve``, not ``remat_knapsack.api.solve``) with the
autodoc directive its kind calls for. ``:aliases-from: OTHER ...`` turns a name
that ``OTHER`` also exports (the same object) into a short entry pointing to
``OTHER``'s, so a class re-exported in two places is described once.
"""

from __future__ import annotations

import importlib
import inspect
import sys

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective

__all__ = ["PublicAPI", "data_doc", "kind_of", "public_names", "setup", "summary"]


def public_names(module_name: str) -> list[str]:
    """``module.__all__``, in its order."""
    return list(importlib.import_module(module_name).__all__)


def kind_of(obj: object) -> str:
    """The Python domain's kind: ``exception``, ``class``, ``function`` or ``data``."""
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if callable(obj):
        return "function"
    return "data"


def data_doc(obj: object, name: str, package: str) -> list[str]:
    """The ``#:`` comment of the module that defines ``name`` (one of ``package``'s), as lines.

    A constant has no ``__module__``: the modules of ``package`` already imported
    that hold the same object under ``name`` are searched, shortest name first.
    """
    root = package.split(".")[0]
    candidates = sorted((m for m in list(sys.modules) if m == root or m.startswith(root + ".")), key=len)
    for mod_name in candidates:
        if getattr(sys.modules[mod_name], name, None) is not obj:
            continue
        try:
            docs = ModuleAnalyzer.for_module(mod_name).find_attr_docs()
        except Exception:  # noqa: BLE001 - no source (a compiled module): try the next
            continue
        if ("", name) in docs:
            return [line for line in docs[("", name)] if line is not None]
    return []


def summary(lines: list[str]) -> str:
    """The first sentence of a docstring's first paragraph, on one line."""
    para = []
    for line in lines:
        if not line.strip():
            if para:
                break
            continue
        para.append(line.strip())
    text = " ".join(para)
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


class PublicAPI(SphinxDirective):
    required_arguments = 1
    option_spec = {"aliases-from": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        module = importlib.import_module(name)
        others = [importlib.import_module(m) for m in self.options.get("aliases-from", "").split()]
        roles = {"exception": "exc", "class": "class", "function": "func", "data": "data"}
        lines = [".. currentmodule:: " + name, "", ".. list-table::", "   :widths: 30 70",
                 "   :class: api-summary", ""]
        for n in module.__all__:
            obj = getattr(module, n)
            kind = kind_of(obj)
            text = data_doc(obj, n, name) if kind == "data" else (inspect.getdoc(obj) or "").splitlines()
            lines += [f"   * - :{roles[kind]}:`~{name}.{n}`", f"     - {summary(text)}"]
        lines.append("")
        for n in module.__all__:
            obj = getattr(module, n)
            kind = kind_of(obj)
            home = next((o.__name__ for o in others if n in getattr(o, "__all__", ()) and getattr(o, n) is obj), None)
            if home:
                lines += [f".. py:{kind}:: {n}", "", f"   The same object as :{roles[kind]}:`{home}.{n}`.", ""]
                continue
            if kind == "data":
                lines += [f".. py:data:: {n}", f"   :value: {obj!r}", ""]
                lines += ["   " + line if line else "" for line in data_doc(obj, n, name)] + [""]
                continue
            auto = {"exception": "autoexception", "class": "autoclass", "function": "autofunction"}[kind]
            lines.append(f".. {auto}:: {name}.{n}")
            if kind == "class":
                lines.append("   :members:")
            lines.append("")
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source=f"<public-api {name}>"), self.content_offset, container)
        return container.children


def setup(app):
    app.add_directive("public-api", PublicAPI)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
