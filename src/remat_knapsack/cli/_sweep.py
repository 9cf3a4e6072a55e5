"""``remat-knapsack sweep MODULE:FUNCTION``: the budget sweep from the command line.

``FUNCTION`` (in an importable module, or a ``.py`` file given by path) takes
no arguments and returns ``(model, args)`` or ``(model, args, loss)``. The
command writes ``sweep.csv`` and ``sweep.png`` (with matplotlib) to ``--out``,
prints the table, and with ``--max-peak`` the budget :meth:`SweepReport.best`
picks. Only the parser is built at import; torch is imported when the command runs.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from ..sweep_report import check_budgets, parse_bytes
from ._errors import EXIT_FAIL, EXIT_OK, CliError

__all__ = ["add_parser", "cmd_sweep"]


def _budget_arg(text: str) -> float:
    try:
        return check_budgets([text])[0]
    except ValueError:
        raise argparse.ArgumentTypeError(f"budget {text!r} must be a number in [0, 1]") from None


def _size_arg(text: str) -> int:
    try:
        return parse_bytes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _repeats_arg(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"repeats must be an integer >= 1, got {text!r}")
    return n


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``sweep`` on the CLI's subparsers."""
    s = sub.add_parser("sweep", help="compile a model at each activation_memory_budget; measure peak and step time")
    s.add_argument("target", metavar="MODULE:FUNCTION",
                   help="FUNCTION() returns (model, args) or (model, args, loss); MODULE: a .py file too")  # fmt: skip
    s.add_argument("--budgets", nargs="+", type=_budget_arg, metavar="B", help="default: 0.0 0.1 ... 1.0")
    s.add_argument("--backend", default="inductor", help="torch.compile backend (default inductor)")
    s.add_argument("--repeats", type=_repeats_arg, default=5, metavar="N", help="timed steps per budget (default 5)")
    s.add_argument("--solver", default="auto", metavar="S",
                   help="one of our solvers (default auto), or PyTorch's dp_knapsack, greedy_knapsack, "
                   "ilp_knapsack, dp_knapsack_sliding_hirschberg")  # fmt: skip
    s.add_argument("--max-peak", type=_size_arg, metavar="BYTES|MiB|GiB", help="print the fastest budget within it")
    s.add_argument("--regions", nargs="+", metavar="NAME",
                   help="submodules compiled one by one, the rest eager (default: the whole model)")  # fmt: skip
    s.add_argument("--out", default="sweep-results", metavar="DIR",
                   help="for sweep.csv and sweep.png (default sweep-results)")  # fmt: skip
    s.add_argument("--drop-output", action="store_true",
                   help="measure the step loss(model(x)).backward(), the output freed before the backward "
                        "(as Hugging Face's Trainer); default: out = model(x) kept through the backward")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=cmd_sweep)
    return s


def _load_target(target: str, meta: bool = False) -> tuple[Any, Any, Any]:
    """``MODULE:FUNCTION`` called: (model, args, loss or None); with ``meta``, called under
    ``with torch.device("meta"):``, so that what it builds allocates nothing."""
    module_name, sep, func_name = target.rpartition(":")
    if not sep or not module_name or not func_name:
        raise CliError(f"target {target!r} must be MODULE:FUNCTION")
    try:
        if module_name.endswith(".py") or Path(module_name).is_file():
            path = Path(module_name)
            if not path.is_file():
                raise CliError(f"no such file: {module_name}")
            spec = importlib.util.spec_from_file_location(f"_remat_sweep_{path.stem}", path)
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            spec.loader.exec_module(module)  # type: ignore[union-attr]
        else:
            module = importlib.import_module(module_name)
    except CliError:
        raise
    except Exception as e:
        raise CliError(f"cannot import {module_name!r}: {type(e).__name__}: {e}") from None
    func = getattr(module, func_name, None)
    if not callable(func):
        raise CliError(f"{module_name!r} has no function {func_name!r}")
    if meta:
        import torch

        with torch.device("meta"):
            made = func()
    else:
        made = func()
    if not isinstance(made, tuple) or len(made) not in (2, 3):
        raise CliError(f"{target}() must return (model, args) or (model, args, loss), got {type(made).__name__}")
    return made[0], made[1], made[2] if len(made) == 3 else None


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run the sweep; exit 0, 1 (torch missing) or 2 (bad target or input)."""

    try:
        from ..torch import sweep
    except ImportError as e:
        raise CliError(f"sweep needs PyTorch: {e}", EXIT_FAIL) from None
    model, inputs, loss = _load_target(args.target)
    try:
        report = sweep(model, inputs, budgets=args.budgets, loss=loss, backend=args.backend, regions=args.regions,
                       solver=args.solver, repeats=args.repeats, progress=not args.quiet,
                       keep_output=not args.drop_output)  # fmt: skip
    except ValueError as e:
        raise CliError(str(e)) from None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report.to_csv(out / "sweep.csv")
    wrote = [str(out / "sweep.csv")]
    try:
        report.plot(out / "sweep.png", max_peak_bytes=args.max_peak)
        wrote.append(str(out / "sweep.png"))
    except ImportError as e:
        print(f"no figure: {e}", file=sys.stderr)
    print(", ".join(f"{k} {v}" for k, v in report.meta.items()))
    print(report.table(args.max_peak))
    if report.non_monotonic:
        pairs = ", ".join(f"{a:g} -> {b:g}" for a, b in report.non_monotonic)
        print(f"peak falls while the budget rises: {pairs}")
    if args.max_peak is not None:
        pick = report.best(args.max_peak)
        if pick is None:
            print(f"no budget keeps the peak within {args.max_peak / 2**20:.1f} MiB")
        else:
            print(f"best within {args.max_peak / 2**20:.1f} MiB: budget {pick.budget:g} "
                  f"(peak {pick.peak_bytes / 2**20:.1f} MiB, step {pick.step_seconds * 1e3:.1f} ms)")  # fmt: skip
    print("wrote " + ", ".join(wrote))
    return EXIT_OK
