"""The ``remat-knapsack`` command line.

Subcommands::

    remat-knapsack solve FILE [--solver NAME] [--scale S | --no-quantize] [--json]
    remat-knapsack frontier FILE [--plot out.png]
    remat-knapsack generate paper|CLASS --n N [--seed S] [-o FILE]
    remat-knapsack bench [--quick] [--out DIR] [--solvers ...] [--sizes ...] [--repeats R]
                         [--timeout S] [--memory-cap GB]

FILE is one JSON object ``{"memory", "runtimes", "max_memory"}``, a JSON list
of them, or JSONL (what ``record_instances`` writes); ``-`` reads stdin.
Exit codes: 0 success, 1 the solve could not run (out of memory, missing
optional dependency), 2 bad usage or a malformed file.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from typing import Any

from ._errors import EXIT_FAIL, EXIT_OK, CliError, Parser

__all__ = ["main"]

PROG = "remat-knapsack"


# ------------------------------------------------------------------ solve


def _load(path: str) -> tuple[str, list[dict[str, Any]]]:
    from .._common._io import InstanceFileError, read_instances

    try:
        return read_instances(path)
    except InstanceFileError as e:
        raise CliError(str(e)) from None


def _solve_one(doc: dict[str, Any], k: int, label: str, solver: str, scale: float | None):
    from .. import SolverMemoryError, solve

    try:
        return solve(doc["memory"], doc["runtimes"], doc["max_memory"], solver=solver, scale=scale)
    except SolverMemoryError as e:
        raise CliError(f"{label}: instance {k}: {e}", EXIT_FAIL) from None
    except ValueError as e:
        raise CliError(f"{label}: instance {k}: {e}") from None
    except ImportError as e:  # an optional dependency, e.g. scipy for "ilp"
        raise CliError(f"{label}: instance {k}: solver {solver!r} needs {e.name or e}", EXIT_FAIL) from None


def _indices(idx: list[int], limit: int = 20) -> str:
    if len(idx) <= limit:
        return str(idx)
    return "[" + ", ".join(map(str, idx[:limit])) + f", ... {len(idx) - limit} more]"


def cmd_solve(args: argparse.Namespace) -> int:
    fmt, docs = _load(args.file)
    label = "<stdin>" if args.file == "-" else args.file
    scale = None if args.no_quantize else args.scale
    results = []
    for k, doc in enumerate(docs):
        sol = _solve_one(doc, k, label, args.solver, scale)
        results.append(
            {
                "name": doc.get("name") or doc.get("graph") or f"instance {k}",
                "value": sol.value,
                "saved": sol.saved,
                "recomputed": sol.recomputed,
                "solver": sol.solver,
                "seconds": sol.stats.get("seconds"),
                "_used": math.fsum(doc["memory"][i] for i in sol.saved),
                "_doc": doc,
            }
        )
    if args.json:
        public = [{k: v for k, v in r.items() if not k.startswith("_")} for r in results]
        if fmt == "object":
            print(json.dumps(public[0]))
        elif fmt == "list":
            print(json.dumps(public))
        else:
            for r in public:
                print(json.dumps(r))
        return EXIT_OK
    for r in results:
        doc = r["_doc"]
        n = len(doc["memory"])
        total = math.fsum(x for x in doc["runtimes"] if x > 0)
        print(f"{r['name']}: n={n}, budget {doc['max_memory']:g}")
        print(f"  solver      {r['solver']} ({r['seconds'] * 1e3:.3f} ms)")
        pct = f" ({100 * r['value'] / total:.1f}% of {total:g})" if total > 0 else ""
        print(f"  saved       {len(r['saved'])} of {n}: runtime saved {r['value']:.10g}{pct}")
        print(f"  memory used {r['_used']:.10g} of {doc['max_memory']:g}")
        print(f"  saved idx   {_indices(r['saved'])}")
    return EXIT_OK


# ------------------------------------------------------------------ frontier


def cmd_frontier(args: argparse.Namespace) -> int:
    from .. import frontier
    from .._common._validate import as_real

    fmt, docs = _load(args.file)
    if not 0 <= args.index < len(docs):
        raise CliError(f"--index {args.index} is out of range: the file holds {len(docs)} instance(s)")
    doc = docs[args.index]
    where = f"{'<stdin>' if args.file == '-' else args.file}: instance {args.index}"
    try:
        budget = as_real(doc["max_memory"], "max_memory")
        if not budget >= 0:  # NaN too
            raise ValueError(f"max_memory must be a number >= 0, got {doc['max_memory']!r}")
        fr = frontier(doc["memory"], doc["runtimes"], None, scale=None if args.no_quantize else args.scale)
        mem, val = fr.memory, fr.value
        knee = float(fr.knee())
        knee_val, budget_val = fr.best(knee), fr.best(budget)
    except MemoryError as e:
        raise CliError(f"{where}: frontier: {e}", EXIT_FAIL) from None
    except ValueError as e:
        raise CliError(f"{where}: {e}") from None
    print(f"{len(mem)} breakpoints; knee at memory {knee:.10g} (runtime saved {knee_val:.10g}); "
          f"file budget {budget:.10g} -> {budget_val:.10g}")  # fmt: skip
    knee_i = mem.index(knee) if knee in mem else None
    shown = range(len(mem)) if args.all or len(mem) <= args.rows else _spread(len(mem), args.rows)
    shown = sorted(set(shown) | ({knee_i} if knee_i is not None else set()))
    print(f"{'memory':>16}  {'runtime saved':>16}")
    for i in shown:
        print(f"{mem[i]:>16.10g}  {val[i]:>16.10g}" + ("  <- knee" if i == knee_i else ""))
    if args.plot:
        _plot_frontier(mem, val, knee, knee_val, budget, args.plot)
        print(f"wrote {args.plot}")
    return EXIT_OK


def _spread(n: int, k: int) -> list[int]:
    """``k`` indices spread evenly over ``range(n)``, first and last included
    (the last alone when ``k`` is 1).

    >>> _spread(10, 4), _spread(10, 1)
    ([0, 3, 6, 9], [9])
    """
    if k <= 1:
        return [n - 1]
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


def _plot_frontier(mem, val, knee, knee_val, budget, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CliError("--plot needs matplotlib (pip install 'remat-knapsack[bench]')", EXIT_FAIL) from None
    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    ax.step([0.0, *mem], [0.0, *val], where="post", lw=1.2, label="best runtime saved")
    ax.plot([knee], [knee_val], "o", color="C3", ms=7, label=f"knee ({knee:.4g})")
    ax.axvline(budget, color="C2", ls="--", lw=1, label=f"file budget ({budget:.4g})")
    ax.set_xlabel("memory budget")
    ax.set_ylabel("runtime saved")
    ax.set_title("Memory / runtime trade-off (exact)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    try:
        fig.savefig(path)
    except OSError as e:
        raise CliError(f"cannot write {path}: {e.strerror or e}", EXIT_FAIL) from None
    finally:
        plt.close(fig)


# ------------------------------------------------------------------ generate


def cmd_generate(args: argparse.Namespace) -> int:
    from .. import instances

    try:
        if args.kind == "paper":
            inst = instances.paper(args.n, args.seed)
        else:
            inst = instances.pisinger(args.kind, args.n, R=args.R, seed=args.seed)
    except ValueError as e:
        raise CliError(str(e)) from None
    text = json.dumps(inst.as_dict())
    if args.output in (None, "-"):
        print(text)
    else:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        except OSError as e:
            raise CliError(f"cannot write {args.output}: {e.strerror or e}", EXIT_FAIL) from None
    return EXIT_OK


# ------------------------------------------------------------------ bench


def cmd_bench(args: argparse.Namespace) -> int:
    from .._common._io import InstanceFileError
    from ..bench.run import FULL, QUICK, BenchConfig, run_bench
    from ..instances import CLASSES

    preset = dict(QUICK if args.quick else FULL)
    keys = ("sizes", "repeats", "class_sizes", "timeout", "memory_cap_gb")
    given = {k: getattr(args, k) for k in keys if getattr(args, k) is not None}
    preset.update(given)
    classes = CLASSES if args.classes is None else [c for c in args.classes if c != "none"]
    bad = [c for c in classes if c not in CLASSES]
    if bad:
        raise CliError(f"unknown class(es) {', '.join(bad)}; choose from {', '.join(CLASSES)} or none")
    cfg = BenchConfig(
        classes=list(classes),
        solvers=args.solvers,
        recorded=args.instances or [],
        out=args.out,
        scale=args.scale,
        quiet=args.quiet,
        fork=not args.spawn,
        update_results=args.update_results,
        **preset,  # type: ignore[arg-type]
    )
    try:
        return run_bench(cfg)
    except (ValueError, InstanceFileError) as e:
        raise CliError(str(e)) from None


# ------------------------------------------------------------------ parser


def _number(text: str, allow_zero: bool) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(x) or x < 0 or (x == 0 and not allow_zero):
        raise argparse.ArgumentTypeError(f"must be a finite number {'>=' if allow_zero else '>'} 0, got {text}")
    return x


def _positive_float(text: str) -> float:
    return _number(text, allow_zero=False)


def _nonneg_float(text: str) -> float:
    return _number(text, allow_zero=True)


def _integer(text: str, low: int) -> int:
    try:
        x = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if x < low:
        raise argparse.ArgumentTypeError(f"must be >= {low}, got {x}")
    return x


def _count(text: str) -> int:
    return _integer(text, 1)


def _size(text: str) -> int:
    return _integer(text, 0)


def _seed(text: str) -> int:
    return _integer(text, 0)


def build_parser() -> argparse.ArgumentParser:
    from .. import SOLVERS
    from ..instances import CLASSES

    p = Parser(prog=PROG, description="Exact, memory-lean 0/1 knapsack for activation checkpointing.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    s = sub.add_parser("solve", help="solve instance file(s) and print the plan")
    s.add_argument("file", metavar="FILE", help="JSON object, JSON list of objects, or JSONL; - for stdin")
    s.add_argument("--solver", default="auto", choices=SOLVERS, help="default: auto")
    q = s.add_mutually_exclusive_group()
    q.add_argument(
        "--scale", type=_positive_float, default=10_000, help="quantisation scale (default 10000, as PyTorch)"
    )
    q.add_argument("--no-quantize", action="store_true", help="exact on real-valued memory (scale=None)")
    s.add_argument("--json", action="store_true", help="print value, saved, recomputed, solver, seconds as JSON")
    s.set_defaults(func=cmd_solve)

    f = sub.add_parser("frontier", help="the memory/runtime trade-off curve, with its knee")
    f.add_argument("file", metavar="FILE")
    f.add_argument("--plot", metavar="OUT.png", help="write a matplotlib figure with the knee marked")
    qf = f.add_mutually_exclusive_group()
    qf.add_argument("--scale", type=_positive_float, default=10_000, help="quantisation scale (default 10000)")
    qf.add_argument("--no-quantize", action="store_true", help="exact on real-valued memory")
    f.add_argument("--index", type=int, default=0, help="which instance of a multi-instance file (default 0)")
    f.add_argument("--rows", type=_count, default=25, help="table rows to print (default 25)")
    f.add_argument("--all", action="store_true", help="print every breakpoint")
    f.set_defaults(func=cmd_frontier)

    g = sub.add_parser("generate", help="write a seeded instance file")
    g.add_argument(
        "kind", metavar="paper|CLASS", choices=("paper", *CLASSES), help="paper or one of: " + ", ".join(CLASSES)
    )
    g.add_argument("--n", type=_size, required=True)
    g.add_argument("--seed", type=_seed, default=0, help="a non-negative integer (default 0)")
    g.add_argument("--R", type=int, default=10_000, help="range of Pisinger's classes (default 10000)")
    g.add_argument("-o", "--output", metavar="FILE", help="default: stdout")
    g.set_defaults(func=cmd_generate)

    from ..bench.run import FULL, QUICK

    def preset(key: str, unit: str = "") -> str:
        show = lambda v: " ".join(map(str, v)) if isinstance(v, list) else f"{v:g}"  # noqa: E731
        return f"full: {show(FULL[key])}{unit}, quick: {show(QUICK[key])}{unit}"

    b = sub.add_parser("bench", help="every solver side by side, each in a capped subprocess")
    b.add_argument("--quick", action="store_true", help="small grid, under 3 minutes")
    b.add_argument("--out", default="bench-results", metavar="DIR", help="output directory (default bench-results)")
    b.add_argument("--update-results", action="store_true",
                   help="also rewrite the checkout's benchmarks/results/bench-quick.csv or bench-full.csv")  # fmt: skip
    b.add_argument("--solvers", nargs="+", metavar="NAME", help="default: every solver available here")
    b.add_argument("--sizes", nargs="+", type=int, metavar="N", help=f"paper-like sizes ({preset('sizes')})")
    b.add_argument("--repeats", type=_count, help=f"instances (seeds) per size ({preset('repeats')})")
    b.add_argument("--timeout", type=_positive_float, metavar="S", help=f"per run ({preset('timeout', ' s')})")
    b.add_argument("--memory-cap", dest="memory_cap_gb", type=_nonneg_float, metavar="GB",
                   help=f"RLIMIT_AS per run in GiB, 0 for none ({preset('memory_cap_gb')})")  # fmt: skip
    b.add_argument("--classes", nargs="+", metavar="CLASS", help="Pisinger classes (default all; 'none' for none)")
    b.add_argument(
        "--class-sizes", nargs="+", type=int, metavar="N", help=f"n for the classes ({preset('class_sizes')})"
    )
    b.add_argument(
        "--instances", nargs="+", metavar="FILE", help="recorded instance files (JSONL from record_instances)"
    )
    b.add_argument("--scale", type=_positive_float, default=10_000, help="quantisation scale (default 10000)")
    b.add_argument("--spawn", action="store_true",
                   help="start a fresh interpreter per run (default: fork each run from a server that imported "
                   "the solver's modules once, e.g. torch)")  # fmt: skip
    b.add_argument("--quiet", action="store_true", help="no progress output")
    b.set_defaults(func=cmd_bench)

    from ._sweep import add_parser as add_sweep_parser  # torch only when the command runs

    add_sweep_parser(sub)
    from ._fit import add_parser as add_fit_parser  # torch only when the command runs

    add_fit_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except CliError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK

