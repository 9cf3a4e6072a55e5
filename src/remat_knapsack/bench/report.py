"""Scoring rows, and writing results.csv, table.md and the terminal summary.

Every ``ok`` row is scored the same way, whatever the solver reported: its value
is re-summed in float64 from the saved indices, and it is *feasible* when the
saved memory fits the budget (quantised at the benchmark's scale, or in real
units). The *gap* of a row is how far its value is below the best value any
exact solver reached feasibly on that instance, in percent.
"""

from __future__ import annotations

import csv
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from .peers import Peer

__all__ = ["score", "write_csv", "read_csv", "markdown", "summary", "CSV_FIELDS", "cell_status"]

CSV_FIELDS = [
    "suite", "group", "instance", "n", "seed", "capacity", "solver", "family", "exact", "status",
    "seconds", "calls", "value", "reported_value", "best_exact", "gap_pct", "feasible", "used",
    "peak_rss", "peak_extra",
    "rss_before", "peak_rss_kernel", "wall", "message",
]  # fmt: skip

_STATUS_LABEL = {"oom": "OOM", "timeout": "timeout", "error": "error", "crash": "crash", "skipped": "skipped"}


def score(
    rows: list[dict[str, Any]], instances: dict[str, dict[str, Any]], peers: dict[str, Peer], scale: float
) -> None:
    """Add value, feasibility, capacity, family/exact and gap to ``rows`` in place."""
    for row in rows:
        inst = instances[row["instance"]]
        peer = peers.get(row["solver"])
        row["family"] = peer.family if peer else ""
        row["exact"] = bool(peer and peer.exact)
        row["capacity"] = round(inst["max_memory"] * scale)
        if row.get("status") != "ok":
            continue
        saved = row.pop("saved", [])
        mem, rt = inst["memory"], inst["runtimes"]
        row["value"] = math.fsum(rt[i] for i in saved)
        q_used = sum(round(mem[i] * scale) for i in saved)
        real_used = math.fsum(mem[i] for i in saved)
        row["used"] = real_used
        tol = 1e-12 * max(1.0, abs(inst["max_memory"]))
        row["feasible"] = q_used <= row["capacity"] or real_used <= inst["max_memory"] + tol
    best: dict[str, float] = {}
    for row in rows:
        if row.get("status") == "ok" and row["exact"] and row["feasible"]:
            best[row["instance"]] = max(best.get(row["instance"], -math.inf), row["value"])
    for row in rows:
        b = best.get(row["instance"])
        if b is not None:
            row["best_exact"] = b
            if row.get("status") == "ok":
                row["gap_pct"] = 100.0 * (b - row["value"]) / b if b > 0 else 0.0


def write_csv(rows: Iterable[dict[str, Any]], path: str) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for row in rows:
            w.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in CSV_FIELDS})


_INT = {"n", "seed", "capacity", "calls", "peak_rss", "peak_extra", "rss_before", "peak_rss_kernel"}
_FLOAT = {"seconds", "value", "reported_value", "best_exact", "gap_pct", "used", "wall"}
_BOOL = {"exact", "feasible"}


def read_csv(path: str) -> list[dict[str, Any]]:
    """Rows as :func:`write_csv` wrote them, typed again (empty cells become None)."""
    def typed(k: str, v: str) -> Any:
        if v == "":
            return None
        if k in _INT:
            return int(float(v))
        if k in _FLOAT:
            return float(v)
        return v == "True" if k in _BOOL else v

    with open(path, newline="", encoding="utf-8") as f:
        return [{k: typed(k, v) for k, v in row.items()} for row in csv.DictReader(f)]


# ---------------------------------------------------------------- tables


def fmt_seconds(x: float) -> str:
    """Table 1's style.

    >>> fmt_seconds(1.1e-6), fmt_seconds(0.1071), fmt_seconds(35.1)
    ('1.1e-06', '0.107', '35.100')
    """
    return f"{x:.1e}" if x < 1e-2 else f"{x:.3f}"


def fmt_bytes(x: float) -> str:
    """>>> fmt_bytes(3 * 2**20), fmt_bytes(5.5 * 2**30)
    ('3.0 MiB', '5.50 GiB')
    """
    if x >= 2**30:
        return f"{x / 2**30:.2f} GiB"
    if x >= 2**20:
        return f"{x / 2**20:.1f} MiB"
    return f"{x / 2**10:.0f} KiB"


def fmt_gap(rows: list[dict[str, Any]]) -> str:
    """Mean (max) gap over the feasible runs, and how many runs exceeded the budget."""
    gaps = [r["gap_pct"] for r in rows if r.get("gap_pct") is not None and r.get("feasible")]
    over = sum(1 for r in rows if r.get("status") == "ok" and not r.get("feasible"))
    parts = []
    if gaps:
        mean, worst = sum(gaps) / len(gaps), max(gaps)
        parts.append("0" if abs(worst) <= 1e-9 and abs(min(gaps)) <= 1e-9 else f"{mean:.3g}% (max {worst:.3g}%)")
    if over:
        parts.append(f"{over} of {len(rows)} over budget")
    return "; ".join(parts) or "n/a"


def cell_status(rows: list[dict[str, Any]], metric: Callable[[list[dict[str, Any]]], str]) -> str:
    """A table cell: the metric over the ok runs, or the failure (OOM, timeout...) when none ran."""
    ok = [r for r in rows if r.get("status") == "ok"]
    failed = Counter(_STATUS_LABEL.get(r.get("status"), str(r.get("status"))) for r in rows if r.get("status") != "ok")
    if not ok:
        return failed.most_common(1)[0][0] if failed else ""
    text = metric(ok)
    if failed:
        text += " (" + ", ".join(f"{k} {v}" for k, v in failed.items()) + f" of {len(rows)})"
    return text


def _mean_seconds(rows):
    return fmt_seconds(sum(r["seconds"] for r in rows) / len(rows))


def _max_of(key):
    return lambda rows: fmt_bytes(max(r.get(key) or 0 for r in rows))


def pivot(rows: list[dict[str, Any]], suite: str, metric, solvers: list[str]) -> str:
    rows = [r for r in rows if r.get("suite") == suite]
    groups = list(dict.fromkeys(r["group"] for r in rows))
    if not rows:
        return ""
    cells: dict[tuple[str, str], list] = defaultdict(list)
    for r in rows:
        cells[(r["solver"], r["group"])].append(r)
    names = [s for s in solvers if any((s, g) in cells for g in groups)]
    lines = ["| Solver | " + " | ".join(groups) + " |", "| --- |" + " --- |" * len(groups)]
    for s in names:
        lines.append(f"| {s} | " + " | ".join(cell_status(cells.get((s, g), []), metric) for g in groups) + " |")
    return "\n".join(lines)


_SUITES = (("paper", "paper-like instances"), ("classes", "Pisinger's classes"), ("recorded", "recorded instances"))


def markdown(rows: list[dict[str, Any]], solvers: list[str], header: str = "") -> str:
    """table.md: runtime tables (Table 1's layout), then peak memory, then optimality gap."""
    parts = [header] if header else []
    sections = (
        ("Mean solver runtime in seconds", "per call, measured inside the child around the call only", _mean_seconds),
        ("Peak extra memory", "peak RSS during the solve minus RSS before it; the largest over runs",
         _max_of("peak_extra")),
        ("Peak RSS", "the whole child process, interpreter and imports included; the largest over runs",
         _max_of("peak_rss")),
        ("Optimality gap", "below the best feasible value of any exact solver, mean (max) over runs", fmt_gap),
    )
    for title, note, metric in sections:
        for suite, label in _SUITES:
            table = pivot(rows, suite, metric, solvers)
            if table:
                parts.append(f"### {title}: {label}\n\n_{note}._\n\n{table}\n")
    return "\n".join(parts).rstrip() + "\n"


def summary(rows: list[dict[str, Any]], solvers: list[str]) -> str:
    """Plain-text runtime and gap tables for the terminal."""
    out = []
    for title, metric in (("mean seconds", _mean_seconds), ("optimality gap", fmt_gap)):
        for suite, label in _SUITES:
            table = pivot(rows, suite, metric, solvers)
            if table:
                out.append(f"{label}, {title}:\n" + _plain(table))
    return "\n\n".join(out)


def _plain(md: str) -> str:
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines() if "---" not in line]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
