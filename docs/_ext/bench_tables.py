"""Tables read from ``benchmarks/results/*.csv`` at build time, so a rerun updates the docs.

``.. bench-table:: PATH`` shows chosen columns of a CSV, one row per line::

    .. bench-table:: ../benchmarks/results/sweep-llama-aot_eager.csv
       :fields: budget peak_bytes:mib step_seconds:ms
       :headers: budget, peak MiB, step ms

``.. bench-pivot:: PATH`` summarises a CSV of single runs: one row per value of
``:rows:``, one column per value of ``:columns:``, each cell the median (over
seeds and repeats) of ``:value:``; a cell whose runs all failed shows their
status (``timeout``: ``> T s``); ``:strip: TEXT`` drops TEXT from the column labels::

    .. bench-pivot:: ../benchmarks/results/sparse.csv
       :filter: section=families
       :rows: family n R
       :columns: solver
       :value: seconds_median:time

Formats (after a colon): ``time`` (us, ms or s), ``us``, ``ms``, ``s``, ``mib`` (bytes
to MiB), ``x`` (a ratio), ``pow10`` (10^k), ``g`` (3 significant digits),
``int`` (rounded, thousands separated), ``text`` (as is; the default).
"""

from __future__ import annotations

import csv
import math
import os
import statistics

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

__all__ = ["fmt", "setup"]


def _num(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def fmt(text: str, how: str) -> str:
    """``text`` (a CSV cell) formatted as ``how`` says; non-numbers pass through."""
    x = _num(text)
    if how == "text" or x is None:
        return {"True": "yes", "False": "no"}.get(text, text)
    x += 0.0  # -0.0 prints as 0
    if how == "time":
        if x < 1e-3:
            return f"{x * 1e6:.0f} us"
        return f"{x * 1e3:.3g} ms" if x < 1 else f"{x:.3g} s"
    if how == "us":
        return f"{x * 1e6:.0f}"
    if how == "ms":
        return f"{x * 1e3:.1f}"
    if how == "s":
        return f"{x:.3g}"
    if how == "mib":
        return f"{x / 2**20:.1f}"
    if how == "x":
        return f"{x:.2f}x"
    if how == "pow10":
        k = math.log10(x) if x > 0 else 0.5
        return f"10^{round(k)}" if k == round(k) else f"{x:g}"
    if how == "g":
        return f"{x:.3g}"
    if how == "int":
        return f"{x:,.0f}"
    raise ValueError(f"unknown format {how!r}")


def _spec(item: str) -> tuple[str, str]:
    name, _, how = item.partition(":")
    return name, how or "text"


def _table(header: list[str], body: list[list[str]]) -> nodes.table:
    table = nodes.table(classes=["bench-table"])
    group = nodes.tgroup(cols=len(header))
    table += group
    group += [nodes.colspec(colwidth=1) for _ in header]
    thead, tbody = nodes.thead(), nodes.tbody()
    for target, rows in ((thead, [header]), (tbody, body)):
        for cells in rows:
            row = nodes.row()
            for cell in cells:
                entry = nodes.entry()
                entry += nodes.paragraph(text=cell)
                row += entry
            target += row
    group += thead
    group += tbody
    return table


class _CSVDirective(SphinxDirective):
    required_arguments = 1

    def rows(self) -> list[dict[str, str]]:
        rel, path = self.env.relfn2path(self.arguments[0], self.env.docname)
        self.env.note_dependency(rel)
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        for cond in self.options.get("filter", "").split():
            key, _, value = cond.partition("=")
            rows = [r for r in rows if r.get(key) in value.split(",")]
        return rows

    def source_line(self) -> nodes.Node:
        name = os.path.normpath(os.path.join("docs", self.arguments[0]))
        para = nodes.paragraph(classes=["bench-source"])
        para += nodes.Text("Data: ")
        para += nodes.literal(text=name)
        return para


class BenchTable(_CSVDirective):
    option_spec = {"fields": directives.unchanged_required, "headers": directives.unchanged,
                   "filter": directives.unchanged}  # fmt: skip

    def run(self) -> list[nodes.Node]:
        specs = [_spec(f) for f in self.options["fields"].split()]
        headers = [h.strip() for h in self.options.get("headers", "").split(",") if h.strip()]
        header = headers if len(headers) == len(specs) else [name for name, _ in specs]
        body = [[fmt(r.get(name, ""), how) for name, how in specs] for r in self.rows()]
        return [_table(header, body), self.source_line()]


class BenchPivot(_CSVDirective):
    option_spec = {"rows": directives.unchanged_required, "columns": directives.unchanged_required,
                   "value": directives.unchanged_required, "filter": directives.unchanged,
                   "order": directives.unchanged, "formats": directives.unchanged,
                   "strip": directives.unchanged}  # fmt: skip

    def run(self) -> list[nodes.Node]:
        row_keys = self.options["rows"].split()
        col_key = self.options["columns"]
        value, how = _spec(self.options["value"])
        formats = dict(_spec(s) for s in self.options.get("formats", "").split())
        cells: dict[tuple, dict[str, list[dict[str, str]]]] = {}
        columns: list[str] = self.options.get("order", "").split()
        for r in self.rows():
            key = tuple(r.get(k, "") for k in row_keys)
            col = r.get(col_key, "")
            if col not in columns:
                if self.options.get("order"):
                    continue
                columns.append(col)
            cells.setdefault(key, {}).setdefault(col, []).append(r)
        body = []
        for key, by_col in cells.items():
            line = [fmt(k, formats.get(name, "text")) for name, k in zip(row_keys, key)]
            for col in columns:
                runs = by_col.get(col, [])
                ok = [x for x in (_num(r.get(value)) for r in runs if r.get("status", "ok") == "ok") if x is not None]
                if ok:
                    line.append(fmt(repr(statistics.median(ok)), how))
                elif runs:
                    status = runs[0].get("status", "")
                    timeout = runs[0].get("timeout", "")
                    line.append(f"> {fmt(timeout, 's')} s" if status == "timeout" and timeout else status)
                else:
                    line.append("")
            body.append(line)
        strip = self.options.get("strip", "").strip("\"")
        labels = [c.replace(strip, "") if strip else c for c in columns]
        return [_table(row_keys + labels, body), self.source_line()]


def setup(app):
    app.add_directive("bench-table", BenchTable)
    app.add_directive("bench-pivot", BenchPivot)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
