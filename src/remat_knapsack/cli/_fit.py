"""``remat-knapsack fit MODULE:FUNCTION --max-peak 2GiB``: the fastest plan within a peak, from the command line.

``FUNCTION`` is loaded as ``sweep`` loads it (it returns ``(model, args)`` or
``(model, args, loss)``). The command runs :func:`remat_knapsack.torch.fit`,
prints the report and writes it as JSON (``--out``, default ``fit.json``).
With ``--eager`` it runs :func:`remat_knapsack.torch.plan_checkpoints`
instead (selective activation checkpointing, no compile; ``--units`` names
the submodules), then measures one step under the plan, and prints the plan
with its predicted and measured peak. ``--meta`` calls FUNCTION under
``with torch.device("meta"):`` and plans the model without allocating it;
nothing is measured (compiled: ``fit(..., measure=False)``; with ``--eager``,
``--device`` names where it will train).
Exit 0 when a plan fits, 3 when none does (``PeakLimitError``, or a step
planning had to run ran out of memory: ``StepOutOfMemoryError``), 2 on bad
input, 1 without torch. Only the parser is built at import.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._errors import EXIT_FAIL, EXIT_OK, CliError
from ._sweep import _load_target, _repeats_arg, _size_arg

__all__ = ["add_parser", "cmd_fit", "EXIT_NO_FIT"]

#: Exit status when no plan keeps the peak within the limit.
EXIT_NO_FIT = 3


def _limit_arg(text: str) -> int:
    n = _size_arg(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"--max-peak must be at least 1 byte, got {text!r}")
    return n


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``fit`` on the CLI's subparsers."""
    s = sub.add_parser("fit", help="the fastest activation-checkpointing plan whose training step fits in --max-peak")
    s.add_argument("target", metavar="MODULE:FUNCTION",
                   help="FUNCTION() returns (model, args) or (model, args, loss); MODULE: a .py file too")  # fmt: skip
    s.add_argument("--max-peak", type=_limit_arg, required=True, metavar="BYTES|MiB|GiB",
                   help="peak of one training step (forward and backward) above its start")  # fmt: skip
    s.add_argument("--backend", default="inductor", help="torch.compile backend (default inductor, torch.compile's)")
    s.add_argument("--repeats", type=_repeats_arg, default=5, metavar="N", help="timed steps (default 5)")
    s.add_argument("--regions", nargs="+", metavar="NAME",
                   help="submodules compiled one by one, the rest eager (default: the whole model)")  # fmt: skip
    s.add_argument("--eager", action="store_true",
                   help="plan selective activation checkpointing for eager training (no torch.compile)")  # fmt: skip
    s.add_argument("--units", nargs="+", metavar="NAME",
                   help="with --eager: submodules that may be checkpointed (default: the largest ModuleList's blocks)")
    s.add_argument("--meta", action="store_true",
                   help="build the model on the meta device and plan it without allocating it "
                        "(no step is measured)")  # fmt: skip
    s.add_argument("--device", choices=("cpu", "cuda"),
                   help="with --eager: where the step will run (default: the model's device, cpu on meta)")
    s.add_argument("--drop-output", action="store_true",
                   help="plan the step loss(model(x)).backward(), the output freed before the backward "
                        "(as Hugging Face's Trainer); default: out = model(x) kept through the backward")
    s.add_argument("--out", default="fit.json", metavar="FILE", help="the report as JSON (default fit.json)")
    s.set_defaults(func=cmd_fit)
    return s


def cmd_fit(args: argparse.Namespace) -> int:
    """Run fit; exit 0, 1 (torch missing), 2 (bad target or input) or 3 (no plan fits)."""
    from ..errors import StepOutOfMemoryError

    try:
        from ..torch import PeakLimitError, fit
    except ImportError as e:
        raise CliError(f"fit needs PyTorch: {e}", EXIT_FAIL) from None
    if args.eager:
        return _cmd_eager(args)
    if args.units:
        raise CliError("--units needs --eager (compiled plans take --regions)")
    if args.device:
        raise CliError("--device needs --eager: a compiled plan is for the device the model is on "
                       "(the CPU for --meta)")  # fmt: skip
    model, inputs, loss = _load_target(args.target, meta=args.meta)
    try:
        report = fit(model, inputs, args.max_peak, loss=loss, backend=args.backend, repeats=args.repeats,
                     regions=args.regions, keep_output=not args.drop_output, measure=not args.meta)  # fmt: skip
    except (PeakLimitError, StepOutOfMemoryError) as e:
        raise CliError(str(e), EXIT_NO_FIT) from None
    except ValueError as e:
        raise CliError(str(e)) from None
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    report.to_json(out)
    print(report.summary())
    for i, a in enumerate(report.attempts, 1):
        pred = a["predicted_peak_bytes"]
        pred_text = "n/a" if pred is None else f"{pred / 2**20:.1f} MiB"
        if a.get("out_of_memory"):
            measured = f"ran out of memory ({a['out_of_memory']})"
        elif a["peak_bytes"] is None:
            measured = "not measured: the model was built on the meta device (nothing of its size was allocated)"
        else:
            measured = f"measured {a['peak_bytes'] / 2**20:.1f} MiB, step {a['step_seconds'] * 1e3:.1f} ms"
        what = "plan" if a["peak_bytes"] is None else "compile"
        print(f"  {what} {i}: target {a['target_bytes'] / 2**20:.1f} MiB, predicted {pred_text}, {measured}")
    print(f"use it: with remat_knapsack.torch.use_solver({report.solver!r}): ...")
    print(f"wrote {out}")
    return EXIT_OK


def _cmd_eager(args: argparse.Namespace) -> int:
    """plan_checkpoints, then one measured step under the plan; the plan printed and written as JSON."""
    import json

    from ..errors import SolverMemoryError, StepOutOfMemoryError
    from ..torch import PeakLimitError, plan_checkpoints

    if args.regions:
        raise CliError("--regions is for compiled plans; with --eager name the submodules with --units")
    model, inputs, loss = _load_target(args.target, meta=args.meta)
    try:
        plan = plan_checkpoints(model, inputs, args.max_peak, loss=loss, units=args.units, device=args.device,
                                keep_output=not args.drop_output)  # fmt: skip
        measured = None if args.meta else plan.measure(inputs, loss=loss)
    except (PeakLimitError, StepOutOfMemoryError) as e:
        raise CliError(str(e), EXIT_NO_FIT) from None
    except (ValueError, SolverMemoryError) as e:
        raise CliError(str(e)) from None
    result = plan.to_dict() | {"measured_peak_bytes": measured}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(plan.summary())
    if measured is None:
        print("not measured: the model was built on the meta device (nothing of its size was allocated)")
    else:
        print(f"measured peak {measured / 2**20:.1f} MiB ({measured / args.max_peak:.2f} of the limit)")
    print("use it: plan = remat_knapsack.torch.plan_checkpoints(model, args, limit); plan.apply()")
    print(f"wrote {out}")
    return EXIT_OK
