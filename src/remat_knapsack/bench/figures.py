"""The PNGs: runtime against n, the optimality gap of inexact solvers, peak memory against n.

Small on purpose (6x4 inches at 100 dpi) so they can be committed. Needs
matplotlib (the ``bench`` extra); without it :func:`write_figures` returns [].
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any

__all__ = ["write_figures"]

_FAILED = ("oom", "timeout", "crash", "error")
_MARKERS = "osD^v<>ph*"


def _color(plt, k: int):
    return plt.get_cmap("tab10")(k % 10)


def write_figures(rows: list[dict[str, Any]], solvers: list[str], out_dir: str) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    paper = [r for r in rows if r.get("suite") == "paper"]
    paths = []
    if paper:
        paths.append(_versus_n(plt, paper, solvers, "seconds", "mean runtime per call (s)", "Runtime against n",
                               out_dir, "runtime_vs_n.png"))
        paths.append(_versus_n(plt, paper, solvers, "peak_extra", "peak extra memory (MiB)",
                               "Peak solver memory against n", out_dir, "memory_vs_n.png"))
    gap_path = _gaps(plt, rows, solvers, out_dir)
    if gap_path:
        paths.append(gap_path)
    return paths


def _series(rows, solver, key, unit=1.0):
    by_n: dict[int, list] = defaultdict(list)
    for r in rows:
        if r["solver"] == solver:
            by_n[r["n"]].append(r)
    ok, failed = [], []
    for n in sorted(by_n):
        vals = [r[key] for r in by_n[n] if r.get("status") == "ok" and r.get(key) is not None]
        if vals:
            ok.append((n, sum(vals) / len(vals) / unit))
        elif any(r.get("status") in _FAILED for r in by_n[n]):
            failed.append(n)
    return ok, failed


def _versus_n(plt, rows, solvers, key, ylabel, title, out_dir, name):
    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    unit = 2**20 if key.startswith("peak") else 1.0
    top = max((r.get(key) or 0 for r in rows if r.get("status") == "ok"), default=1) / unit or 1
    for k, s in enumerate(x for x in solvers if any(r["solver"] == x for r in rows)):
        ok, failed = _series(rows, s, key, unit)
        color = _color(plt, k)
        style = "-" if any(r["solver"] == s and r.get("family") == "ours" for r in rows) else "--"
        if ok:
            ax.plot(*zip(*ok), style, marker=_MARKERS[k % len(_MARKERS)], ms=4, color=color, label=s)
        if failed:
            ax.plot(failed, [top * 3] * len(failed), "x", color=color, ms=8, label=None if ok else f"{s} (failed)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    sizes = sorted({r["n"] for r in rows})
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(n) for n in sizes])
    ax.minorticks_off()
    ax.set_xlabel("n (paper-like instances)")
    ax.set_ylabel(ylabel)
    ax.set_title(title + "  (x: OOM or timeout)", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    return _save(plt, fig, out_dir, name)


def _gaps(plt, rows, solvers, out_dir):
    gapped = [r for r in rows if r.get("gap_pct") is not None and r.get("feasible")]  # over budget: see table.md
    show = [
        s for s in solvers if any(r["solver"] == s and (not r.get("exact") or abs(r["gap_pct"]) > 1e-9) for r in gapped)
    ]
    if not show:
        return None
    groups = list(dict.fromkeys(r["group"] for r in gapped))
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(groups) + 2), 4), dpi=100)
    width = 0.8 / len(show)
    for k, s in enumerate(show):
        means, maxes = [], []
        for g in groups:
            gaps = [r["gap_pct"] for r in gapped if r["solver"] == s and r["group"] == g]
            means.append(sum(gaps) / len(gaps) if gaps else 0.0)
            maxes.append(max(gaps) if gaps else 0.0)
        xs = [i + (k - (len(show) - 1) / 2) * width for i in range(len(groups))]
        ax.bar(xs, means, width, color=_color(plt, k), label=s)
        ax.plot(xs, maxes, "_", color="k", ms=6)
    ax.set_xticks(range(len(groups)))
    suite = {r["group"]: r["suite"] for r in gapped}
    labels = [f"paper {g}" if suite[g] == "paper" else g for g in groups]
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("gap below best exact value (%)")
    ax.set_title("Optimality gap of inexact solvers (bar: mean, tick: max)", fontsize=10)
    ax.axhline(0, color="k", lw=0.5)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(plt, fig, out_dir, "gap.png")


def _save(plt, fig, out_dir, name):
    path = os.path.join(out_dir, name)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
