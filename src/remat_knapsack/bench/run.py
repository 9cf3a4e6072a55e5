"""``remat-knapsack bench``: build the grid, run it, score it, write the outputs.

A run writes ``results.csv``, ``table.md`` and the figures to its ``--out``
directory, and nothing else. With ``--update-results``, run from a source
checkout (an editable install, with ``benchmarks/results/`` beside ``src/``),
a default run (``--quick`` or the full grid, every available solver) also
rewrites that suite's current file, ``benchmarks/results/bench-quick.csv`` or
``bench-full.csv``, which the documentation's benchmark page reads.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from .._common import _io
from ..instances import CLASSES
from . import figures, peers, report, suites
from .runner import Job, Runner, progress

__all__ = ["BenchConfig", "QUICK", "FULL", "run_bench", "machine", "rerender", "results_file"]


@dataclass
class BenchConfig:
    sizes: list[int]
    repeats: int
    classes: list[str]
    class_sizes: list[int]
    timeout: float
    memory_cap_gb: float
    solvers: list[str] | None = None  # None: every available peer
    recorded: list[str] = field(default_factory=list)
    out: str = "bench-results"
    scale: float = 10_000
    R: int = 10_000
    min_time: float = 0.2
    quiet: bool = False
    fork: bool = True  # fork servers; False spawns a fresh interpreter per run
    update_results: bool = False  # also rewrite the checkout's benchmarks/results/ file (results_file)


#: Paper sizes to n=100 plus n=2000 (where no dense table fits: W ~ 5.5e9),
#: and every class at n=500 (W ~ 1.25e6 at R=10^4; PyTorch's dp_knapsack table is 2.5 GB).
#: The timeout leaves room for PyTorch's sliding Hirschberg at n=100 (44-47 s idle, >120 s on a busy machine).
FULL = dict(sizes=[5, 10, 20, 50, 100, 2000], repeats=3, class_sizes=[500], timeout=300.0, memory_cap_gb=16.0)
#: Under 3 minutes on 2 cores with torch installed: PyTorch's sliding Hirschberg
#: at n=20 takes 3-5 s and its dp_knapsack 13-15 s.
QUICK = dict(sizes=[5, 10, 20], repeats=1, class_sizes=[50], timeout=60.0, memory_cap_gb=8.0, min_time=0.05)


#: ``benchmarks/results/`` of the source checkout this package runs from, if it is one.
RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), *[os.pardir] * 3, "benchmarks", "results")


def results_file(cfg: BenchConfig, results_dir: str = RESULTS_DIR) -> str | None:
    """The checkout's current file for this run's suite, or None.

    ``bench-quick.csv`` or ``bench-full.csv`` under ``results_dir`` when ``cfg`` is
    the quick or the full preset with every class, every available solver, the
    default scale and no recorded instances, and ``results_dir`` exists (a
    source checkout); otherwise None.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> quick = BenchConfig(classes=list(CLASSES), **QUICK)
    >>> os.path.basename(results_file(quick, d)), results_file(BenchConfig(classes=[], **QUICK), d)
    ('bench-quick.csv', None)
    """
    default = cfg.classes == list(CLASSES) and cfg.scale == 10_000 and cfg.R == 10_000
    if not default or cfg.solvers is not None or cfg.recorded or not os.path.isdir(results_dir):
        return None
    for name, preset in (("bench-quick", QUICK), ("bench-full", FULL)):
        if all(getattr(cfg, key) == value for key, value in preset.items()):
            return os.path.normpath(os.path.join(results_dir, f"{name}.csv"))
    return None


def machine() -> str:
    """One line: CPU model, cores, RAM, Python, torch."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    ram = ""
    try:
        ram = f", {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB RAM"
    except (ValueError, OSError, AttributeError):
        pass
    versions = [f"Python {platform.python_version()}"]
    for mod in ("torch", "scipy", "ortools"):
        try:
            versions.append(f"{mod} {__import__(mod).__version__}")
        except Exception:  # noqa: BLE001 - optional
            pass
    return f"{cpu}, {os.cpu_count()} cores{ram}; {platform.system()}; " + ", ".join(versions)


def build_jobs(cfg: BenchConfig, names: list[str]) -> tuple[list[Job], dict[str, dict[str, Any]]]:
    entries = suites.paper_suite(cfg.sizes, cfg.repeats)
    entries += suites.class_suite(cfg.classes, cfg.class_sizes, cfg.repeats, cfg.R, cfg.scale)
    for path in cfg.recorded:
        _fmt, docs = _io.read_instances(path)
        entries += suites.recorded_suite(path, docs)
    jobs, by_name = [], {}
    for inst, meta in entries:
        by_name[inst["name"]] = inst
        jobs += [Job(s, inst, meta) for s in names]
    return jobs, by_name


def run_bench(cfg: BenchConfig) -> int:
    avail = peers.available()
    names = cfg.solvers or peers.default_names(avail)
    unknown = [s for s in names if s not in avail]
    if unknown:
        raise ValueError(f"unknown or unavailable solver(s) {', '.join(unknown)}; available here: {', '.join(avail)}")
    os.makedirs(cfg.out, exist_ok=True)
    jobs, instances = build_jobs(cfg, names)
    cap = int(cfg.memory_cap_gb * 2**30) if cfg.memory_cap_gb > 0 else None
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    gave_up: dict[tuple[str, str], int] = {}  # (solver, series) -> n at which it timed out
    with Runner(scale=cfg.scale, timeout=cfg.timeout, memory_cap=cap, min_time=cfg.min_time, fork=cfg.fork) as runner:
        for job, label in progress(jobs, quiet=cfg.quiet):
            rows.append(_run_one(runner, job, label, gave_up))
    elapsed = time.perf_counter() - started
    report.score(rows, instances, avail, cfg.scale)
    report.write_csv(rows, os.path.join(cfg.out, "results.csv"))
    current = results_file(cfg) if cfg.update_results else None
    if current:
        report.write_csv(rows, current)
    header = _header(cfg, names, elapsed)
    with open(os.path.join(cfg.out, "table.md"), "w", encoding="utf-8") as f:
        f.write(report.markdown(rows, names, header))
    pngs = figures.write_figures(rows, names, cfg.out)
    print(report.summary(rows, names))
    print(f"\n{len(rows)} runs in {elapsed:.0f} s; wrote {os.path.join(cfg.out, 'results.csv')}, "
          f"{os.path.join(cfg.out, 'table.md')}" + "".join(f", {p}" for p in (current, *pngs) if p))
    if not pngs:
        print("(no figures: install matplotlib, e.g. pip install 'remat-knapsack[bench]')", file=sys.stderr)
    return 0


def _run_one(runner: Runner, job: Job, label, gave_up: dict[tuple[str, str], int]) -> dict[str, Any]:
    """One row. A solver that timed out on a series (paper-like, or one class) at some n
    is not run again on that series at that n or above: it would only time out again."""
    label(f"{job.solver} {job.instance['name']}")
    series, n = job.meta.get("series"), job.meta["n"]
    n0 = gave_up.get((job.solver, series)) if series else None
    if n0 is not None and n >= n0:
        return {**job.meta, "solver": job.solver, "status": "skipped", "message": f"not run: timed out at n={n0}"}
    row = runner.run(job)
    if row["status"] == "timeout" and series:
        gave_up[(job.solver, series)] = min(n, gave_up.get((job.solver, series), n))
    return row


def _header(cfg: BenchConfig, names: list[str], elapsed: float) -> str:
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    settings = {
        "sizes": cfg.sizes, "repeats": cfg.repeats, "classes": cfg.classes, "class_sizes": cfg.class_sizes,
        "timeout_s": cfg.timeout, "memory_cap_gb": cfg.memory_cap_gb, "scale": cfg.scale, "R": cfg.R,
        "recorded": cfg.recorded,
    }  # fmt: skip
    return (
        "## remat-knapsack bench\n\n"
        f"- machine: {machine()}\n"
        f"- run: {now}, {elapsed:.0f} s in all; every (solver, instance) in its own "
        f"{'process forked from a server that imported its modules' if cfg.fork else 'fresh interpreter'} "
        f"(RLIMIT_AS {cfg.memory_cap_gb:g} GiB, timeout {cfg.timeout:g} s)\n"
        f"- solvers: {', '.join(names)}\n"
        f"- settings: `{json.dumps(settings)}`\n"
        "- paper-like: memory U[100, 1000] with 4 decimals, runtimes U[1, 100], budget half the total memory; "
        "Pisinger's classes: weights divided by the scale, so every solver quantises them back exactly\n"
    )


def rerender(out_dir: str) -> list[str]:
    """Redraw DIR/table.md (keeping its header) and the figures from DIR/results.csv."""
    rows = report.read_csv(os.path.join(out_dir, "results.csv"))
    names = list(dict.fromkeys(r["solver"] for r in rows))
    table = os.path.join(out_dir, "table.md")
    header = ""
    if os.path.exists(table):
        with open(table, encoding="utf-8") as f:
            header = f.read().split("\n### ", 1)[0].rstrip() + "\n"
    with open(table, "w", encoding="utf-8") as f:
        f.write(report.markdown(rows, names, header))
    return [table, *figures.write_figures(rows, names, out_dir)]


if __name__ == "__main__":  # python -m remat_knapsack.bench.run DIR: redraw from results.csv
    for path in rerender(sys.argv[1]):
        print(path)
