"""The exact core's benchmark: ``solve(W, P, c, scale=1)`` on Python lists, family by family, beside combo.

Usage::

    python benchmarks/bench_sparse.py                     # the full grid (timeout 60 s per run)
    python benchmarks/bench_sparse.py --n 1000 10000 --R 10000 1000000 --seeds 3 --timeout 5 \\
        --real-timeout 10                                  # benchmarks/results/sparse.csv
    python benchmarks/bench_sparse.py --n 100000 --R 10000 1000000 --seeds 2 --timeout 15 \\
        --no-real --no-ortools                             # benchmarks/results/sparse-n1e5.csv
    python benchmarks/bench_sparse.py --quick             # n=10^3, R=10^6, 1 seed: about a minute
    python benchmarks/bench_sparse.py --families strongly circle --n 1000 10000 --seeds 3 \\
        --timeout 10 --out /tmp/some.csv
    python benchmarks/bench_sparse.py --timeout 10 --skip 'spanner_*:100000' \\
        --before old.csv                                    # beside an older build's times
    python benchmarks/bench_sparse.py --from-csv benchmarks/results/sparse.csv --timeout 5   # print the tables again

For every family (Pisinger's seven classic classes and his six hard ones,
:data:`remat_knapsack.instances.ALL_CLASSES`), every n in ``--n``, every R in
``--R`` and ``--seeds`` seeds, each solver (``auto``, ``sparse``, and OR-Tools'
branch and bound where installed) solves the instance in its own child process
(:mod:`remat_knapsack.bench.runner`), killed after ``--timeout`` seconds. A
child calls ``solve`` on the instance's Python lists again and again until
``--min-time`` has passed and reports the median call after the first; a cell
is the median of those times over the seeds. A run that times out is shown as
``> T s``; the cell's remaining seeds, and the same solver at larger n in that
family and R, are then not run (they would only time out again).

Beside each cell: combo's reference time (measured with combo itself, best
of 5, on another machine; see :mod:`remat_knapsack.bench.combo`), our ratio to it, the target
(2x combo + 0.5 ms at n <= 10^4, 2x combo + 5 ms at n = 10^5) and a verdict.
Every instance's answers are checked: each saved set fits the capacity and all
solvers that finished reach the same value.

Real-shape rows (left out with ``--no-real``) solve with ``scale=None``:
10^4 items drawn from a recorded torch.compile graph
(``benchmarks/data/transformer12_d128.json``), that graph tiled 48 times, and
``paper(250_000)``, with the child's peak extra memory (RSS high-water mark
during the solve minus RSS before it). Beside them, the other targets:
the paper-like n=100 at the default scale (under 1 ms), and n=10^5 instances
scaled to a capacity W = 10^12 (peak extra memory at most 64 MiB).

Timings on a shared machine are noisy; compare ratios within one run.
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import json
import math
import os
import shlex
import statistics
import sys
import time
from collections import defaultdict
from typing import Any

import _results  # benchmarks/_results.py: where each suite's CSV lives

from remat_knapsack import instances
from remat_knapsack.bench import combo, peers
from remat_knapsack.bench.run import machine
from remat_knapsack.bench.runner import Job, Runner, progress

HERE = os.path.dirname(os.path.abspath(__file__))
GRAPH = os.path.join(HERE, "data", "transformer12_d128.json")
OURS = ("auto", "sparse")
ORTOOLS = "ortools_bb"
INF = math.inf

QUICK = {
    "families": list(instances.ALL_CLASSES), "n": [1000], "R": [10**6], "seeds": 1, "timeout": 2.0,
    "min_time": 0.05, "real_n": 10**4, "real_k": 48, "real_paper": 0, "real_timeout": 5.0, "paper_small": 100,
    "memory_W": 0, "memory_n": 10**5, "memory_families": ["paper", "uncorrelated", "strongly"],
}  # fmt: skip
FULL = {
    "families": list(instances.ALL_CLASSES), "n": [10**3, 10**4, 10**5], "R": [10**4, 10**6], "seeds": 3,
    "timeout": 60.0, "min_time": 0.2, "real_n": 10**4, "real_k": 48, "real_paper": 250_000, "real_timeout": 30.0,
    "paper_small": 100, "memory_W": 1e12, "memory_n": 10**5, "memory_families": ["paper", "uncorrelated", "strongly"],
}  # fmt: skip

CSV_FIELDS = [
    "section", "family", "target", "instance", "n", "R", "seed", "scale", "solver", "status",
    "seconds_median", "seconds_min", "seconds", "calls", "value", "used", "capacity", "feasible",
    "peak_extra", "peak_rss_kernel", "wall", "timeout", "message",
]  # fmt: skip


# ------------------------------------------------------------------ the grid


def family_cells(families, sizes, Rs, seeds):
    """[(family, n, R, [seeds])], n ascending within each (family, R): the order the skip rule needs."""
    return [(f, n, R, list(range(seeds))) for f in families for R in Rs for n in sorted(sizes)]


def real_instances(args) -> list[tuple[str, str, dict[str, Any], float | None]]:
    """(target key, label, instance dict, scale) for the rows outside the families (see combo.REAL_TARGETS)."""
    out = []
    if os.path.exists(GRAPH):
        with open(GRAPH, encoding="utf-8") as f:
            graph = json.load(f)
        if args.real_n:
            out.append(("captured", "captured", instances.captured(graph, args.real_n, seed=0).as_dict(), None))
        if args.real_k:
            out.append(("tiled", "tiled", instances.tiled(graph, args.real_k).as_dict(), None))
    else:
        print(f"(no {GRAPH}: captured and tiled rows left out)", file=sys.stderr)
    if args.real_paper:
        out.append(("paper", "paper", instances.paper(args.real_paper, 0).as_dict(), None))
    if args.paper_small:
        out.append(("paper_small", "paper_small", instances.paper(args.paper_small, 0).as_dict(), 10_000))
    if args.memory_W:
        for fam in args.memory_families:
            inst = (instances.paper(args.memory_n, 0) if fam == "paper"
                    else instances.pisinger(fam, args.memory_n, R=10**4, seed=0)).as_dict()  # fmt: skip
            inst["name"] += f"-W{args.memory_W:.0e}"
            out.append(("memory", f"memory:{fam}", inst, args.memory_W / inst["max_memory"]))
    return out


def skipped(patterns: list[str], family: str, n: int) -> bool:
    """``--skip`` patterns are FAMILY:N with shell wildcards, e.g. ``spanner_*:100000``."""
    return any(fnmatch.fnmatch(f"{family}:{n}", p) for p in patterns)


# ------------------------------------------------------------------ running


def run_grid(args, solvers: list[str], runner: Runner) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    gave_up: dict[tuple[str, str, int], int] = {}  # (solver, family, R) -> n that timed out
    jobs = []
    for family, n, R, seeds in family_cells(args.families, args.n, args.R, args.seeds):
        if skipped(args.skip, family, n):
            continue
        for seed in seeds:
            for s in solvers:
                jobs.append((family, n, R, seed, s))
    cache: dict[tuple[str, int, int, int], dict[str, Any]] = {}
    for (family, n, R, seed, s), label in progress(jobs, quiet=args.quiet):
        label(f"{s} {family} n={n} R={R} s{seed}")
        meta = {"section": "families", "family": family, "n": n, "R": R, "seed": seed, "scale": 1, "solver": s}
        n0 = gave_up.get((s, family, R))
        if n0 is not None and n >= n0:
            rows.append({**meta, "status": "skipped", "message": f"timed out at n={n0}"})
            continue
        key = (family, n, R, seed)
        if key not in cache:
            cache = {key: instances.pisinger(family, n, R=R, seed=seed).as_dict()}  # one instance at a time
        row = {**meta, "timeout": args.timeout, **runner.run(Job(s, cache[key], options={"scale": 1}))}
        _check_one(row, cache[key], scale=1)
        if row["status"] == "timeout":
            gave_up[(s, family, R)] = n
        rows.append(row)
    return rows


def run_real(args, runner: Runner) -> list[dict[str, Any]]:
    rows = []
    jobs = [(key, label, inst, scale, s) for key, label, inst, scale in real_instances(args) for s in OURS]
    timeout = max(args.timeout, args.real_timeout)
    for (key, label, inst, scale, s), set_label in progress(jobs, quiet=args.quiet):
        set_label(f"{s} {inst['name']}")
        n = len(inst["memory"])
        shown = "None" if scale is None else f"{scale:.6g}"
        meta = {"section": "real", "family": label, "target": key, "n": n, "R": "", "seed": 0, "scale": shown,
                "solver": s, "instance": inst["name"]}  # fmt: skip
        row = {**meta, "timeout": timeout, **runner.run(Job(s, inst, options={"scale": scale, "timeout": timeout}))}
        _check_one(row, inst, scale)
        rows.append(row)
    return rows


def _check_one(row: dict[str, Any], inst: dict[str, Any], scale: float | None) -> None:
    """Value and feasibility of one finished run, from its saved indices (the solver's report is not trusted).

    Feasible means: the quantised weights fit the quantised capacity (as ``solve`` defines it for a
    scale), or, with ``scale=None``, the real memory fits the budget (1e-12 relative slack for the sum).
    """
    row["capacity"] = inst["max_memory"]
    if row.get("status") != "ok":
        return
    saved = row.pop("saved", [])
    mem, rt = inst["memory"], inst["runtimes"]
    row["value"] = math.fsum(rt[i] for i in saved)
    row["used"] = math.fsum(mem[i] for i in saved)
    if scale is None:
        fits = row["used"] <= inst["max_memory"] + 1e-12 * max(1.0, abs(inst["max_memory"]))
    else:
        fits = sum(round(mem[i] * scale) for i in saved) <= round(inst["max_memory"] * scale)
    row["feasible"] = len(set(saved)) == len(saved) and fits


def exactness(rows: list[dict[str, Any]]) -> dict[tuple, str]:
    """Per instance: ``yes`` when every finished run is feasible and all reach one value, else what differs."""
    by_inst: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_inst[(r["section"], r["family"], r["n"], r["R"], r["seed"])].append(r)
    out = {}
    for key, runs in by_inst.items():
        done = [r for r in runs if r.get("status") == "ok"]
        if not done:
            out[key] = "-"
            continue
        bad = [r["solver"] for r in done if not r["feasible"]]
        values = [r["value"] for r in done]
        top = max(values)
        tol = 0.0 if key[0] == "families" else 1e-9 * max(1.0, abs(top))
        low = [r["solver"] for r in done if top - r["value"] > tol]
        out[key] = "yes" if not bad and not low else "NO: " + ", ".join(
            [f"{s} infeasible" for s in bad] + [f"{s} below the best" for s in low]
        )
    return out


# ------------------------------------------------------------------ the tables


def fmt(t: float | None) -> str:
    if t is None:
        return "-"
    if t >= 1:
        return f"{t:.2f} s"
    if t >= 1e-3:
        return f"{t * 1e3:.2f} ms"
    return f"{t * 1e6:.0f} us"


def cell(runs: list[dict[str, Any]], timeout: float) -> tuple[float | None, str]:
    """(median seconds, text) over one cell's seeds.

    A timed-out seed counts as infinite, so a median of inf reads "> T s". Seeds not run after a
    timeout (same n) count as infinite too, and the text says how many seeds ran. A cell whose
    runs were all skipped (the solver timed out at a smaller n) is "not run", with median None,
    as is a cell with errors only.
    """
    if not runs:
        return None, "-"
    timeout = runs[0].get("timeout", timeout)  # the run's own, where the CSV has it
    status = [r.get("status") for r in runs]
    if all(st == "skipped" for st in status):
        return None, "not run*"
    counted = [(r, st) for r, st in zip(runs, status) if st in ("ok", "timeout", "skipped")]
    times = [r["seconds_median"] if st == "ok" else INF for r, st in counted]
    notes = sorted({{"oom": "OOM"}.get(st, st) for st in status if st not in ("ok", "timeout", "skipped")})
    if not times:
        return None, "/".join(notes)
    med = statistics.median(times)
    ran = sum(st != "skipped" for st in status)
    n_out = status.count("timeout")
    if med == INF:
        text = f"> {timeout:g} s" + (f" ({ran} of {len(runs)} seeds run)" if ran < len(runs) else "")
    else:
        text = fmt(med) + (f" ({n_out}/{len(times)} > {timeout:g} s)" if n_out else "")
    if notes:
        text += " " + "/".join(notes)
    return med, text


def ratio(t: float | None, ref: combo.ComboRef | None, timeout: float) -> str:
    if t is None or ref is None:
        return "-"
    if t == INF:
        return f"> {_times(timeout / ref.hi)}x"
    if ref.lo == ref.hi:
        return f"{_times(t / ref.hi)}x"
    return f"{_times(t / ref.hi)}-{_times(t / ref.lo)}x"


def _times(r: float) -> str:
    """A ratio to two significant figures (0.0021, 0.45, 3.1), whole above 10."""
    return f"{r:,.0f}" if r >= 10 else f"{r:.2g}"


def _groups(rows, section: str) -> tuple[list[tuple], dict[tuple, dict[str, list]]]:
    groups: dict[tuple, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    order = []
    for r in rows:
        if r["section"] != section:
            continue
        key = (r["family"], r["n"], r["R"])
        if key not in groups:
            order.append(key)
        groups[key][r["solver"]].append(r)
    return order, groups


def family_table(rows, solvers, timeout, before=None) -> str:
    """The families table; ``before``: rows of an earlier run (``--before CSV``), shown as "auto (before)"."""
    exact = exactness(rows)
    order, groups = _groups(rows, "families")
    _o, old = _groups(before or [], "families")
    head = ["family", "n", "R", "seeds", *(["auto (before)"] if before else []), *[_col(s) for s in solvers],
            "combo (reference)", "auto/combo", "target", "verdict (auto)", "exact"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for family, n, R in order:
        g = groups[(family, n, R)]
        cells = {s: cell(g.get(s, []), timeout) for s in solvers}
        was = [cell(old[(family, n, R)].get("auto", []), timeout)[1]] if before else []
        ref = combo.reference(family, n, R)
        t_auto = cells.get("auto", (None, ""))[0]
        if ref is not None:
            ref_text, tgt = ref.label(), fmt(combo.target(ref, n))
        elif family.startswith("spanner_") and n >= 10**5:
            ref_text, tgt = combo.SPANNER_1E5_NOTE, "-"
        else:
            ref_text, tgt = "-", "-"
        seeds = sorted({r["seed"] for runs in g.values() for r in runs})
        checks = {exact[("families", family, n, R, s)] for s in seeds}
        ok = "yes" if checks <= {"yes"} and "yes" in checks else "; ".join(sorted(checks - {"yes"})) or "-"
        lines.append("| " + " | ".join([
            family, _pow10(n), _pow10(R), str(len(seeds)), *was, *[cells[s][1] for s in solvers], ref_text,
            ratio(t_auto, ref, timeout), tgt, combo.verdict(t_auto, ref, n), ok,
        ]) + " |")  # fmt: skip
    return "\n".join(lines)


def combo_geomean(rows, timeout) -> str:
    """``auto``'s time over combo's, as a geometric mean over the family cells
    that have a combo reference. A range's class time is unknown within it,
    so the mean is given with every range at its top (the most favourable)
    and at its bottom (the least)."""
    order, groups = _groups(rows, "families")
    top, bottom = [], []
    for family, n, R in order:
        ref = combo.reference(family, n, R)
        t = cell(groups[(family, n, R)].get("auto", []), timeout)[0]
        if ref is None or t is None:
            continue
        top.append(math.log(t / ref.hi))
        bottom.append(math.log(t / ref.lo))
    if not top:
        return "no cell with a combo reference"
    if any(math.isinf(x) for x in top):
        return f"over {len(top)} cells with a combo reference: some timed out"
    hi, lo = math.exp(sum(top) / len(top)), math.exp(sum(bottom) / len(bottom))
    ranged = sum(a != b for a, b in zip(top, bottom))
    cells = f"the {len(top)} cells" if len(top) > 1 else "the one cell"
    return (f"{hi:.2f}x over {cells} with a combo reference"
            + (f" ({ranged} of them ranges, at their top; {lo:.2f}x with every range at its bottom)"
               if ranged else ""))


def real_table(rows, timeout, before=None) -> str:
    exact = exactness(rows)
    old = {r["instance"]: r for r in before or []
           if r["section"] == "real" and r["solver"] == "auto" and "instance" in r}  # fmt: skip
    head = ["instance", "n", "scale", *(["auto (before)"] if before else []), "auto", "sparse",
            "peak extra (auto / sparse)", "target", "verdict (auto)", "exact"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    by: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in rows:
        if r["section"] == "real":
            by[r["family"]][r["solver"]] = r
    for label, runs in by.items():
        a, s = runs.get("auto"), runs.get("sparse")
        first = a or s
        ta, text_a = cell([a] if a else [], timeout)
        _ts, text_s = cell([s] if s else [], timeout)
        t_target, m_target = combo.REAL_TARGETS[first.get("target") or first["family"]]
        peak = " / ".join(_mib(r) for r in (a, s))
        verdict = "-"
        if ta is not None:
            fast = t_target is None or ta <= t_target
            fits = m_target is None or (a.get("peak_extra") is not None and a["peak_extra"] <= m_target)
            verdict = "meets" if fast and fits and ta != INF else "trails"
        tgt = ", ".join(([f"<= {fmt(t_target)}"] if t_target else []) +
                        ([f"<= {m_target / 2**20:.0f} MiB"] if m_target else []))  # fmt: skip
        name = first.get("instance", label)
        was = [cell([old[name]] if name in old else [], timeout)[1]] if before else []
        lines.append("| " + " | ".join([name, f"{first['n']:,}", str(first["scale"]), *was, text_a, text_s, peak, tgt,
                                        verdict, exact[("real", label, first["n"], "", 0)]]) + " |")
    return "\n".join(lines)


def _mib(r: dict[str, Any] | None) -> str:
    if not r:
        return "-"
    if r.get("status") == "ok" and r.get("peak_extra") is not None:
        return f"{r['peak_extra'] / 2**20:.1f} MiB"
    if r.get("peak_rss_kernel"):
        return f"(peak RSS {r['peak_rss_kernel'] / 2**20:.0f} MiB when stopped)"
    return "-"


def _col(solver: str) -> str:
    return "OR-Tools B&B" if solver == ORTOOLS else solver


def _pow10(x: int) -> str:
    e = round(math.log10(x)) if x > 0 else 0
    return f"10^{e}" if 10**e == x else f"{x:,}"


def read_csv(path: str) -> list[dict[str, Any]]:
    """The rows :func:`write_csv` wrote, with their types back."""
    ints, floats = ("n", "seed", "calls", "peak_extra", "peak_rss_kernel"), (
        "seconds_median", "seconds_min", "seconds", "value", "used", "capacity", "wall", "timeout")
    out = []
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            r: dict[str, Any] = {k: v for k, v in row.items() if v != ""}
            r.setdefault("R", "")
            for k in ints:
                if k in r:
                    r[k] = int(float(r[k]))
            for k in floats:
                if k in r:
                    r[k] = float(r[k])
            if r["R"] != "":
                r["R"] = int(r["R"])
            if "feasible" in r:
                r["feasible"] = r["feasible"] == "True"
            out.append(r)
    return out


def write_csv(rows, path: str) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


# ------------------------------------------------------------------ main


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="n=10^3, R=10^6, one seed, 2 s timeout; real-shape rows (5 s timeout) without paper(250000)")
    p.add_argument("--families", nargs="+", choices=instances.ALL_CLASSES, metavar="FAMILY",
                   help="families to run (default: all 13): " + ", ".join(instances.ALL_CLASSES))
    p.add_argument("--n", nargs="+", type=int, help="sizes (default 1000 10000 100000)")
    p.add_argument("--R", nargs="+", type=int, help="coefficient ranges (default 10000 1000000)")
    p.add_argument("--seeds", type=int, help="seeds 0..S-1 per cell (default 3)")
    p.add_argument("--timeout", type=float, help="seconds per run before the child is killed (default 60)")
    p.add_argument("--real-timeout", type=float, help="timeout of the real-shape rows (default 30; --quick: 5)")
    p.add_argument("--min-time", type=float, help="repeat a fast solve until this many seconds (default 0.2)")
    p.add_argument("--skip", nargs="+", default=[], metavar="FAMILY:N",
                   help="cells not run, shell patterns, e.g. 'spanner_*:100000'")
    p.add_argument("--no-ortools", action="store_true", help="leave OR-Tools out")
    p.add_argument("--no-real", action="store_true", help="leave the real-shape rows out")
    p.add_argument("--no-families", action="store_true", help="only the real-shape rows")
    p.add_argument("--real-n", type=int, help="items drawn from the captured graph (default 10000)")
    p.add_argument("--real-k", type=int, help="copies of the captured graph (default 48)")
    p.add_argument("--real-paper", type=int, help="n of the paper-like instance, 0 for none (default 250000)")
    p.add_argument("--paper-small", type=int, help="n of the paper-like row at scale 10^4, 0 for none (default 100)")
    p.add_argument("--memory-W", type=float, help="capacity W of the memory rows, 0 for none (default 1e12)")
    p.add_argument("--memory-n", type=int, help="n of the memory rows (default 100000)")
    p.add_argument("--memory-families", nargs="+", choices=("paper", *instances.ALL_CLASSES), metavar="FAMILY",
                   help="families of the memory rows (default paper uncorrelated strongly)")
    p.add_argument("--memory-cap-gb", type=float, default=8.0, help="RLIMIT_AS of each child (default 8)")
    p.add_argument("--out", metavar="CSV",
                   help="write every run as a CSV row here (default: benchmarks/results/sparse.csv; "
                        "sparse-n1e5.csv when every n is 10^5 or more; sparse-quick.csv with --quick; "
                        "'-' for none)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--before", nargs="+", metavar="CSV",
                   help="--out files of an earlier build: their auto times become an 'auto (before)' column")
    p.add_argument("--from-csv", nargs="+", metavar="CSV",
                   help="run nothing: print the tables of earlier --out files (give their --timeout too)")
    args = p.parse_args(argv)
    preset = QUICK if args.quick else FULL
    for key, value in preset.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    if args.out is None:
        name = "sparse-quick" if args.quick else "sparse-n1e5" if min(args.n) >= 10**5 else "sparse"
        args.out = _results.default(name)
    elif args.out == "-":
        args.out = None
    return args


def main(argv=None) -> int:
    args = parse(argv)
    avail = peers.available()
    solvers = list(OURS) + ([ORTOOLS] if ORTOOLS in avail and not args.no_ortools else [])
    started = time.perf_counter()
    cap = int(args.memory_cap_gb * 2**30) if args.memory_cap_gb > 0 else None
    rows: list[dict[str, Any]] = []
    before = [r for path in args.before or [] for r in read_csv(path)] or None
    if args.from_csv:
        for path in args.from_csv:
            rows += read_csv(path)
        solvers = [s for s in (*OURS, ORTOOLS) if any(r["solver"] == s for r in rows)]
    else:
        with Runner(scale=1, timeout=args.timeout, memory_cap=cap, min_time=args.min_time) as runner:
            if not args.no_families:
                rows += run_grid(args, solvers, runner)
            if not args.no_real:
                rows += run_real(args, runner)
    elapsed = time.perf_counter() - started
    cmd = "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0])] + sys.argv[1:])
    print(f"# bench_sparse: Pisinger's families beside combo ({time.strftime('%Y-%m-%d %H:%M %Z')})\n")
    print(f"- command: `{cmd}`")
    print(f"- machine: {machine()}")
    if args.from_csv:
        print(f"- tables of {', '.join(args.from_csv)} ({len(rows)} runs), not run again")
    print(f"- {len(rows)} runs{'' if args.from_csv else f' in {elapsed:.0f} s'}; timeout {args.timeout:g} s per run "
          f"({max(args.timeout, args.real_timeout):g} s for real-shape rows), each run in its own child process; "
          f"a cell is the median over seeds of each run's median call (calls repeated for {args.min_time:g} s)")
    if "ortools_bb" not in solvers:
        print("- OR-Tools: not run" + ("" if args.no_ortools else " (not installed: pip install ortools)"))
    print("- combo's times: measured with combo itself (best of 5) on another machine, not here; "
          "targets: 2x combo + 0.5 ms (n <= 10^4), 2x combo + 5 ms (n = 10^5), ranges checked at their top")
    if any(r["section"] == "families" for r in rows):
        print("\n## Pisinger's families, scale=1, capacity half the weight sum\n")
        print(family_table(rows, solvers, args.timeout, before))
        if any(r.get("status") == "skipped" for r in rows):
            print("\n\\* not run: the same solver timed out at a smaller n of this family and R.")
        print(f"\nauto / combo, geometric mean: {combo_geomean(rows, args.timeout)}")
    if any(r["section"] == "real" for r in rows):
        print("\n## Real shape (scale=None) and the other targets (paper-like n=100, memory at large W)\n")
        print(real_table(rows, max(args.timeout, args.real_timeout), before))
    bad = [k for k, v in exactness(rows).items() if v.startswith("NO")]
    verdict = "every finished run feasible and all solvers agree" if not bad else f"{len(bad)} instance(s) DISAGREE"
    print(f"\nexactness: {verdict}")
    if args.out and not args.from_csv:
        write_csv(rows, args.out)
        print(f"wrote {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
