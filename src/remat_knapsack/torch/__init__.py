"""Plan activation memory for PyTorch training, compiled or eager, for a limit in bytes.

What to call
------------
Training with ``torch.compile``:

* :func:`fit` finds the fastest plan whose training step peaks within a
  limit (it compiles, measures and corrects itself); use its plan with
  :func:`use_solver`. The command is ``remat-knapsack fit``.
* :func:`predict_peaks` gives the peak of one step at each
  ``activation_memory_budget`` from one compile, and :func:`sweep` measures
  them (``remat-knapsack sweep``).
* :func:`use_solver` and :func:`install` put our exact solvers inside
  PyTorch's partitioner, in place of its ``dp_knapsack``.

Training eagerly, without ``torch.compile``:

* :func:`plan_checkpoints` chooses selective activation checkpointing (which
  ops of which blocks to save, the rest recomputed) for a limit, and
  :meth:`CheckpointPlan.apply` installs it with ``torch.utils.checkpoint``.
  The command is ``remat-knapsack fit --eager``.

Every plan trains as eager training does: no random op is drawn afresh in
the backward, and batch norm's statistics are updated once.

When the step does not fit
--------------------------
No planning call runs the unplanned step: :func:`predict_peaks`, :func:`fit`
and :func:`plan_checkpoints` trace it on fake tensors (nothing of its size is
allocated), and :func:`fit` runs for real only a plan whose modelled peak
fits. A step that runs out of memory is an answer ("this plan does not fit"):
:func:`fit` aims lower, :func:`sweep` records that budget's error and goes on.
A model built under ``with torch.device("meta"):`` is sized and planned by
:func:`predict_peaks` and :func:`plan_checkpoints` (``device=`` names where it
will train) before it has memory.

This is the only subpackage that imports torch; ``import remat_knapsack`` never does.
It needs a PyTorch with the ``CustomKnapsackSolver`` hook (:data:`MIN_TORCH`) and
the private names listed in ``_symbols.REQUIRED``; importing it on a torch that
lacks one raises :class:`~remat_knapsack.errors.UnsupportedTorchError` naming it.

How PyTorch calls a knapsack solver
-----------------------------------
With ``torch._functorch.config.activation_memory_budget`` below 1, the min-cut
partitioner's ``choose_saved_values_set`` builds one 0/1 knapsack per joint graph:
one item per recomputable candidate activation, ``memory[i]`` its size normalised
so that the budget fraction is the capacity, and ``runtimes[i] =
estimate_runtime(node)`` (FLOPs by default, at least 1). It passes them to
``_optimize_runtime_with_given_memory``, which dispatches on
``activation_memory_budget_solver``. A ``CustomKnapsackSolver`` gets the memory,
the graph and the candidate nodes but *not* the runtimes, and it is called under
``no_dispatch()``, where the FLOP counter counts nothing (every estimate comes out
as 1). So this module wraps ``_optimize_runtime_with_given_memory`` (a
pass-through) to hand :class:`KnapsackSolver` the very runtimes PyTorch computed
for its own solvers; plans stay comparable with PyTorch's ``"dp"``. The same
wrapper feeds :func:`record_instances`, whichever solver is configured.

When PyTorch calls the knapsack at all
--------------------------------------
Only when ``activation_memory_budget`` is strictly between 0 and 1. At 0 the
partitioner saves only the graph inputs and at 1 it keeps its default min-cut
plan; in both cases no solver runs (so ``budget="knee"`` needs a budget < 1,
e.g. 0.99, to have any effect). It also skips the knapsack when a more
aggressive min-cut already fits the budget, and when there is no recomputable
candidate. So a solver's :attr:`~KnapsackSolver.history` may stay empty.

Measuring the budget
--------------------
The budget caps the knapsack's normalised saved size, not the memory a step
uses. :func:`sweep` compiles the model at each budget and measures the peak of
one training step, the bytes saved for backward and the step time; its
:class:`SweepReport` picks the fastest budget within a real limit
(:meth:`SweepReport.best`) and lists where the peak falls as the budget rises
(:attr:`SweepReport.non_monotonic`). The report classes live in the torch-free
:mod:`remat_knapsack.sweep_report`; the command is ``remat-knapsack sweep``.

Planning for bytes
------------------
:func:`predict_peaks` gives the peak and saved bytes of one training step at
each budget from one compile: it captures the joint graph, asks the
partitioner for each budget's saved set, partitions the graph for it with
PyTorch's own pieces and runs a liveness pass over the forward and backward
graphs (sizes from ``meta['val']``; the workspace of each op measured once on
real tensors). ``KnapsackSolver(max_peak_bytes=N)`` (also
``use_solver(max_peak_bytes=N)`` and ``install(max_peak_bytes=N)``) plans each
graph for bytes: the plan that keeps the most runtime whose modelled peak is
within N, found among the plans any budget reaches and by best-first
enumeration beyond them. PyTorch asks a knapsack solver only when
``0 < activation_memory_budget < 1`` and no more aggressive min-cut fits the
budget, so these set the budget to :data:`PEAK_BUDGET` (1e-9) inside the
block: then only a graph whose aggressive min-cut saves nothing beyond its
inputs skips the solver. :func:`fit` compiles with such a solver, measures the
step as :func:`sweep` does and corrects itself when the measured peak is above
the limit (at most 3 compiles); :class:`FitReport` says what it chose, and
:class:`~remat_knapsack.errors.PeakLimitError` (a ``ValueError``) that nothing
fits. The command is ``remat-knapsack fit MODULE:FUNCTION --max-peak 2GiB``.
Under ``inductor`` (the default of all three, as of ``torch.compile``) each
plan's graphs go through inductor's own pipeline up to its wrapper code
(no kernel is built) and the peak is read from the wrapper's allocations,
reuses and frees; under ``aot_eager``
the liveness pass models them. A loss computed outside the compiled model is
measured once eagerly and added between the forward and the backward.
``regions=["layers.0", ...]`` plans a model compiled block by block (the
rest eager), and under ``torchrun`` (DDP, FSDP2) every rank plans alike: both
learn the step from one profiled run of it (``_regions``, ``step``).

Random ops
----------
No plan of ours recomputes a random op: the backward reads the forward's
dropout mask instead of drawing a new one (PyTorch's own partitioner does draw
one below budget 1, pytorch/pytorch#190758). ``_rng`` holds the rule.

>>> from remat_knapsack.torch import fit, use_solver                # doctest: +SKIP
>>> report = fit(model, (x,), 64 << 20)                             # doctest: +SKIP
>>> with use_solver(report.solver):                                 # doctest: +SKIP
...     torch.compile(model, backend="aot_eager")(x).sum().backward()

Undoing it
----------
:func:`install` sets the solver and the wrapper for the whole process;
:func:`uninstall` puts back both as :func:`install` found them.
:func:`use_solver` and :func:`record_instances` restore on exit exactly what
they found: the config values and whether the wrapper was in place.

>>> import torch                                               # doctest: +SKIP
>>> from remat_knapsack.torch import use_solver                # doctest: +SKIP
>>> torch._functorch.config.activation_memory_budget = 0.5     # doctest: +SKIP
>>> with use_solver("auto") as solver:                         # doctest: +SKIP
...     torch.compile(model)(x).sum().backward()
>>> solver.history[-1].solution.saved                          # doctest: +SKIP

For maintainers
---------------
The planner is laid out by the question each part answers (the
architecture page of the docs draws it), each arrow pointing down:

* ``_fit`` (:func:`fit`), ``_predict`` (:func:`predict_peaks`), ``_sweep``
  (:func:`sweep`) and ``eager`` (:func:`plan_checkpoints`): the planning calls;
* ``_regions``: the step of a model compiled region by region, or under
  torchrun, recorded once and replayed with any plan;
* ``_plugin``: :class:`KnapsackSolver` inside PyTorch's partitioner,
  :func:`install`, :func:`use_solver`, :func:`record_instances`;
* ``search``: which plan for a limit (the peak-constrained search per graph);
* ``capture``: what are the graphs (the partitioner's joint graphs, one
  compile on real, fake or meta tensors, the loss around them);
* ``peaks``: what does this plan peak at (``aot_eager``'s liveness,
  inductor's wrapper code, several graphs on one step);
* ``step``: the user's step run for real (checks, measured memory, what
  planning puts back, the ranks under torchrun);
* ``_rng`` (no random op recomputed) and ``_symbols`` (the private torch
  names relied on) at the bottom.

May import: torch, and every torch-free part of the package
(:mod:`remat_knapsack.api`, :mod:`remat_knapsack.tradeoff`,
:mod:`remat_knapsack.sweep_report`, :mod:`remat_knapsack._common`).
The documentation build drops this section from the API page.
"""

try:
    import torch  # noqa: F401
except ImportError as exc:  # exercised without torch, in a subprocess
    raise ImportError("remat_knapsack.torch needs PyTorch: pip install 'remat-knapsack[torch]'") from exc

from ..errors import PeakLimitError, StepOutOfMemoryError, UnsupportedTorchError  # noqa: E402
from ..sweep_report import BudgetPoint, SweepReport  # noqa: E402
from ._symbols import MIN_TORCH, check  # noqa: E402

check()  # an unsupported torch fails here, naming the first private name it lacks

from ._fit import FitReport, fit  # noqa: E402
from ._plugin import (  # noqa: E402
    PEAK_BUDGET,
    KnapsackSolver,
    SolveRecord,
    estimate_runtimes,
    install,
    read_instances,
    record_instances,
    uninstall,
    use_solver,
)
from ._predict import predict_peaks  # noqa: E402
from ._sweep import sweep  # noqa: E402
from .eager import CheckpointPlan, UnitPlan, plan_checkpoints  # noqa: E402
from .peaks import PeakPrediction  # noqa: E402

__all__ = [
    "MIN_TORCH",
    "KnapsackSolver",
    "SolveRecord",
    "UnsupportedTorchError",
    "estimate_runtimes",
    "install",
    "read_instances",
    "record_instances",
    "uninstall",
    "use_solver",
    "BudgetPoint",
    "SweepReport",
    "sweep",
    "PEAK_BUDGET",
    "PeakLimitError",
    "StepOutOfMemoryError",
    "PeakPrediction",
    "predict_peaks",
    "FitReport",
    "fit",
    "CheckpointPlan",
    "UnitPlan",
    "plan_checkpoints",
]
