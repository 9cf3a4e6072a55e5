"""The plug-in: :class:`KnapsackSolver` inside PyTorch's partitioner, and the runtimes it needs.

See :mod:`remat_knapsack.torch` for how PyTorch calls a knapsack solver and when.
With ``max_peak_bytes`` the solver chooses each graph's saved set itself
(:meth:`KnapsackSolver.choose_saved`, called from the wrapped
``choose_saved_values_set`` in :mod:`.capture`) by the peak-constrained search
(:mod:`.search`).

May import: torch, the exact core (:mod:`remat_knapsack.api`,
:mod:`remat_knapsack.tradeoff`), :mod:`._rng`, :mod:`._symbols`,
:mod:`.capture`, :mod:`.peaks` and :mod:`.search`.
"""


from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import math
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch._functorch.config as _fconfig
import torch._functorch.partitioners as _partitioners

from .. import __version__
from .._common import _io
from ..api import SOLVERS, solve
from ..solution import Solution
from ..tradeoff._curve import frontier
from . import _rng, _symbols, capture, search
from .peaks import dispatch_allowed

#: Values of ``KnapsackSolver(budget=...)``: PyTorch's budget, or each graph's knee.
BUDGETS = (None, "knee")

#: ``activation_memory_budget`` that :func:`use_solver` and :func:`install` set when
#: given ``max_peak_bytes``: positive (at 0 PyTorch never calls the knapsack) and so
#: small that the more aggressive min-cuts fit it only when they save nothing beyond
#: the graph's inputs, so PyTorch reaches the solver on every graph with candidates.
PEAK_BUDGET = 1e-9

__all__ = [
    "PEAK_BUDGET",
    "KnapsackSolver",
    "SolveRecord",
    "estimate_runtimes",
    "install",
    "read_instances",
    "record_instances",
    "uninstall",
    "use_solver",
]

#: Every private torch name the plug-in uses, checked now: an unsupported torch fails
#: here, naming what it lacks, not inside a compile.
_TORCH = _symbols.check()
_HOOK: type = _TORCH["torch._inductor.custom_graph_pass.CustomKnapsackSolver"]

# --------------------------------------------------------------------------------------
# The wrapper around PyTorch's dispatch point
# --------------------------------------------------------------------------------------

_local = threading.local()
_lock = threading.RLock()
_recorders: list[_Recorder] = []
#: Callables ``obs(memory, runtimes, max_memory, result, seconds)`` told of every knapsack solved.
_observers: list[Any] = []
#: How many holders (install, use_solver and record_instances blocks) need the wrapper.
_holds = 0


def _pending() -> list[list[Any]]:
    """This thread's knapsack calls in progress: [joint_graph, memory, runtimes, graph name or None]."""
    stack = getattr(_local, "pending", None)
    if stack is None:
        stack = _local.pending = []
    return stack


def _hooked_optimize(joint_graph, memory, runtimes, max_memory, *args, **kwargs):
    """Pass-through for ``_optimize_runtime_with_given_memory`` that records and shares the runtimes."""
    with _lock:
        recorders = list(_recorders)
        observers = list(_observers)
    name = _graph_name(joint_graph) if recorders else None  # computed lazily otherwise
    for rec in recorders:
        rec.write(name, memory, runtimes, max_memory)
    stack = _pending()
    stack.append([joint_graph, memory, runtimes, name])
    start = time.perf_counter()
    try:
        result = _hooked_optimize.__wrapped__(joint_graph, memory, runtimes, max_memory, *args, **kwargs)
    finally:
        stack.pop()
    seconds = time.perf_counter() - start
    for obs in observers:
        obs(memory, runtimes, max_memory, result, seconds)
    return result


def _wrapped() -> bool:
    return _partitioners._optimize_runtime_with_given_memory is _hooked_optimize


def _acquire_wrapper() -> None:
    """Put the pass-through in place (once) and count one more holder."""
    global _holds
    with _lock:
        if not _wrapped():
            _hooked_optimize.__wrapped__ = _partitioners._optimize_runtime_with_given_memory  # type: ignore[attr-defined]
            _partitioners._optimize_runtime_with_given_memory = _hooked_optimize
        _holds += 1


def _release_wrapper() -> None:
    """One holder fewer; the last one puts PyTorch's function back (if ours is still on top)."""
    global _holds
    with _lock:
        _holds = max(0, _holds - 1)
        if _holds == 0 and _wrapped():
            _partitioners._optimize_runtime_with_given_memory = _hooked_optimize.__wrapped__  # type: ignore[attr-defined]


@contextlib.contextmanager
def _wrapper_held() -> Iterator[None]:
    _acquire_wrapper()
    try:
        yield
    finally:
        _release_wrapper()


def estimate_runtimes(nodes: list[Any]) -> list[float]:
    """``estimate_runtime(node)`` for each node, as PyTorch computes it for its own solvers.

    PyTorch calls custom solvers under ``no_dispatch()``, where the FLOP counter sees
    nothing; this lifts that for the duration of the estimate.
    """
    keys = [torch._C.DispatchKey.Python, torch._C.DispatchKey.PythonTLSSnapshot]
    was = [torch._C._dispatch_tls_is_dispatch_key_excluded(k) for k in keys]
    try:
        for k in keys:
            torch._C._dispatch_tls_set_dispatch_key_excluded(k, False)
        return [_partitioners.estimate_runtime(node) for node in nodes]
    finally:
        for k, w in zip(keys, was):
            torch._C._dispatch_tls_set_dispatch_key_excluded(k, w)


def _sizes(nodes: list[Any]) -> list[int]:
    """Bytes of each node's value, as the partitioner measures them (-1 where it cannot)."""
    out = []
    for node in nodes:
        try:
            out.append(int(_partitioners._size_of(node)))
        except Exception:
            out.append(-1)
    return out


def _graph_name(joint_graph: Any) -> str:
    """The AOT graph's name (when PyTorch tracks one) and a hash of its code."""
    try:
        code = joint_graph.python_code("self").src
    except Exception:  # pragma: no cover - any graph-like object
        code = str(joint_graph)
    digest = hashlib.sha256(code.encode()).hexdigest()[:16]
    try:
        from torch._functorch._aot_autograd.logging_utils import get_aot_graph_name

        name = get_aot_graph_name()
    except Exception:  # pragma: no cover
        name = ""
    return f"{name}#{digest}" if name else digest


# --------------------------------------------------------------------------------------
# The solver
# --------------------------------------------------------------------------------------


def _solve_defaults() -> dict[str, Any]:
    params = inspect.signature(solve).parameters
    return {
        name: p.default
        for name, p in params.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and name != "solver"
    }


@dataclass(frozen=True)
class SolveRecord:
    """One knapsack solved by a :class:`KnapsackSolver` while compiling."""

    graph: str
    memory: list[float]
    runtimes: list[float]
    max_memory: float
    solution: Solution
    #: Where the runtimes came from: "partitioner" (PyTorch's own list) or "estimate_runtime".
    runtimes_source: str
    #: The candidate nodes' names and sizes in bytes, in knapsack order.
    node_names: list[str]
    node_bytes: list[int]
    #: The budget PyTorch passed; ``max_memory`` is the one solved at (they differ with ``budget="knee"``).
    requested_max_memory: float | None = None
    #: With ``max_peak_bytes``: the chosen plan's modelled peak of this graph's step, in bytes.
    predicted_peak_bytes: int | None = None
    #: With ``max_peak_bytes``: whether that peak is within the limit, whether the
    #: search proved the plan optimal, how many plans it scored, and the smallest
    #: modelled peak among them.
    fits: bool | None = None
    exact: bool | None = None
    plans_evaluated: int | None = None
    min_peak_bytes: int | None = None


class PlanDoesNotFit(Exception):
    """Raised from the partitioner when no plan of a graph fits the limit and the caller asked to stop there.

    ``fit`` compiles with it armed (``KnapsackSolver._stop_unless_fits``), so that a plan whose modelled peak
    is over the limit is neither built nor run; dynamo wraps it (:func:`plan_did_not_fit` finds it).
    """

    def __init__(self, min_peak_bytes: int) -> None:
        super().__init__(f"no plan's modelled peak fits; the smallest is {min_peak_bytes} bytes")
        self.min_peak_bytes = min_peak_bytes


def plan_did_not_fit(exc: BaseException) -> PlanDoesNotFit | None:
    """The :class:`PlanDoesNotFit` behind ``exc`` (dynamo wraps a backend's errors), or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, PlanDoesNotFit):
            return exc
        seen.add(id(exc))
        exc = getattr(exc, "inner_exception", None) or exc.__cause__ or exc.__context__
    return None


class KnapsackSolver(_HOOK):
    """A ``CustomKnapsackSolver`` that solves with :func:`remat_knapsack.solve`.

    Parameters
    ----------
    solver : str
        One of :data:`remat_knapsack.SOLVERS`; ``"auto"`` by default.
    budget : None or "knee"
        ``None`` (default) solves at the budget PyTorch passes
        (``activation_memory_budget``). ``"knee"`` solves each graph at the knee
        of its own trade-off curve up to that budget
        (:meth:`remat_knapsack.Frontier.knee`, PyTorch's ``KnapsackEvaluator``
        definition), found in one Pareto pass instead of the 100 dp solves of
        PyTorch's experimental ``"dynamic_memory_budget_dp"``;
        :attr:`SolveRecord.max_memory` is then the knee, at most that budget.
        PyTorch calls the knapsack only when ``activation_memory_budget`` < 1
        (and > 0), and not when a more aggressive min-cut already fits it
        (common near 1), so the knee is searched below a budget such as 0.5.
    max_peak_bytes : int, optional
        Plan for bytes instead of the budget fraction: among the plans the
        search reaches, keep the one that saves the most runtime (the
        knapsack's objective, PyTorch's runtime estimates) whose *modelled*
        peak of one training step is at most this many bytes. The peak model
        partitions the joint graph for each plan with PyTorch's own min-cut and
        runs a liveness pass over the forward and backward graphs
        (:mod:`remat_knapsack.torch.peaks`). ``max_memory`` is ignored; set the
        budget with :data:`PEAK_BUDGET` (:func:`use_solver` and :func:`install`
        do) so that PyTorch calls the solver. Each graph is planned against the
        whole limit; :func:`~remat_knapsack.torch.fit` measures the step and
        corrects. When no plan fits, the plan with the smallest modelled peak
        is used and its record says ``fits=False``.
    max_plans : int
        With ``max_peak_bytes``: plans to score beyond the budget-reachable
        ones before the search stops (``SolveRecord.exact`` says whether it
        proved its plan optimal first). Default 48.
    **options
        Keyword arguments of :func:`remat_knapsack.solve` (``scale``,
        ``memory_limit``, ...), passed through unchanged.

    Random ops (dropout and every op tagged ``nondeterministic_seeded``) are
    never recomputed: they are not knapsack items but always kept, their
    memory taken out of the budget, and at budget 0 (where PyTorch calls no
    solver) the saved set keeps them too. Making an instance wraps
    ``choose_saved_values_set`` for the process for that; the wrapper passes
    straight through while no ``KnapsackSolver`` is configured. See
    :mod:`remat_knapsack.torch._rng`.

    Set an instance as ``torch._functorch.config.activation_memory_budget_solver``
    (or use :func:`install` / :func:`use_solver`). Each call appends a
    :class:`SolveRecord` to :attr:`history`.
    """

    #: Its plans never recompute a random op (read by the partitioner's wrapper in :mod:`.capture`).
    keeps_random = True

    def __init__(
        self,
        solver: str = "auto",
        *,
        budget: str | None = None,
        max_peak_bytes: int | None = None,
        max_plans: int = 48,
        **options: Any,
    ) -> None:
        if max_peak_bytes is not None:
            max_peak_bytes = check_peak_limit(max_peak_bytes)
        if isinstance(max_plans, bool) or not isinstance(max_plans, int) or max_plans < 0:
            raise ValueError(f"max_plans must be an integer >= 0, got {max_plans!r}")
        if solver not in SOLVERS:
            raise ValueError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
        if budget not in BUDGETS:
            raise ValueError(f"unknown budget {budget!r}; choose None (PyTorch's) or 'knee'")
        defaults = _solve_defaults()
        unknown = sorted(set(options) - set(defaults))
        if unknown:
            raise TypeError(
                f"unknown option(s) {', '.join(unknown)}; solve() accepts {', '.join(sorted(defaults))}"
            )
        capture.guard_choose()  # budget 0 never reaches a solver: guard the partitioner's early return too
        self.solver = solver
        self.budget = budget
        self.max_peak_bytes = max_peak_bytes
        self.max_plans = max_plans
        self.options = dict(options)
        self.history: list[SolveRecord] = []
        self._graph_peaks: list[Any] = []  # with max_peak_bytes: each graph's chosen GraphPeak, in order
        #: With ``max_peak_bytes`` (under :func:`use_solver` or :func:`install`): one dict per graph
        #: partitioned, the plan chosen ("knapsack", "default", "more_aggressive" or "inputs"),
        #: its modelled peak, whether it fits, its recompute cost and the others' (see :func:`.search.choose_for_peak`).
        self.choices: list[dict[str, Any]] = []
        #: With ``max_peak_bytes``: the plan chosen for each joint graph, by its code's hash
        #: (:class:`.search.ChosenPlan`); a graph compiled again gets the same plan without a search.
        self.plans: dict[str, Any] = {}
        self._current_capture: Any = None
        #: What the engine hands each tangent and the eager loss's own peak (:class:`.capture.OutsideStep`);
        #: set by ``fit``. None and 0: the tangents' sizes, no loss modelled.
        self._tangent_bytes: list[int] | None = None
        self._loss_peak_bytes = 0
        #: Whether the step keeps the model's output through the backward (``keep_output`` of ``fit``).
        self._keep_output = True
        #: The loss's phases, when the outputs are dropped between them (``OutsideStep.loss_phases``).
        self._loss_phases: tuple[int, int, int] | None = None
        #: With regions (``_regions.Step``, set by ``fit``): the step every graph's plan is held to.
        self._step: Any = None
        #: Set by ``fit``: a graph whose chosen plan's modelled peak does not fit stops the compile
        #: (:class:`PlanDoesNotFit`) before any of its code is built or run.
        self._stop_unless_fits = False
        key: dict[str, Any] = {"solver": solver, "options": {**defaults, **options}}
        if budget is not None:  # keeps the key of budget=None plans unchanged
            key["budget"] = budget
        if max_peak_bytes is not None:
            key["max_peak_bytes"] = max_peak_bytes
            key["max_plans"] = max_plans
        self._key = json.dumps(key, sort_keys=True, default=repr)

    def __repr__(self) -> str:
        opts = "".join(f", {k}={v!r}" for k, v in self.options.items())
        knee = "" if self.budget is None else f", budget={self.budget!r}"
        if self.max_peak_bytes is not None:
            knee += f", max_peak_bytes={self.max_peak_bytes}"
            if self.max_plans != 48:
                knee += f", max_plans={self.max_plans}"
        return f"KnapsackSolver({self.solver!r}{knee}{opts})"

    def uuid(self) -> str:
        """Key for AOTAutograd's cache: our version, the solver and its options (defaults filled in).

        Stable across processes; changes when any of them changes.
        """
        blob = f"remat-knapsack {__version__} {self._key}"
        return "remat-knapsack-" + hashlib.sha256(blob.encode()).hexdigest()

    def solve(self, memory: list[float], runtimes: list[float], max_memory: float) -> Solution:
        """Solve one instance with this solver's settings, at ``max_memory`` as given."""
        return solve(memory, runtimes, max_memory, solver=self.solver, **self.options)

    def choose_budget(self, memory: list[float], runtimes: list[float], max_memory: float) -> float:
        """The budget this solver solves at: ``max_memory``, or with ``budget="knee"`` its frontier's knee.

        The knee comes from one Pareto pass over the instance capped at
        ``max_memory`` (:func:`remat_knapsack.frontier`), O(n * S) for S
        Pareto states.

        >>> KnapsackSolver(budget="knee").choose_budget([0.2, 0.3, 0.5], [2.0, 3.0, 4.0], 1.0)  # doctest: +SKIP
        0.5
        """
        if self.budget is None:
            return float(max_memory)
        opts = {k: v for k, v in self.options.items() if k in ("scale", "memory_limit")}
        return float(frontier(memory, runtimes, max_memory, **opts).knee())

    def __call__(
        self,
        memory: list[float],
        joint_graph: Any,
        max_memory: float,
        node_info: Any,
        all_recomputable_banned_nodes: list[Any],
    ) -> tuple[list[int], list[int]]:
        runtimes, source, graph = self._runtimes(memory, joint_graph, all_recomputable_banned_nodes)
        if self.max_peak_bytes is not None:
            return self._call_for_peak(memory, joint_graph, max_memory, node_info, all_recomputable_banned_nodes,
                                       runtimes, source, graph)  # fmt: skip
        random = _rng.random_indices(all_recomputable_banned_nodes)
        budget, solution = self._solve_keeping(memory, runtimes, max_memory, random)
        self.history.append(
            SolveRecord(
                graph=graph,
                memory=list(memory),
                runtimes=list(runtimes),
                max_memory=budget,
                solution=solution,
                runtimes_source=source,
                node_names=[getattr(n, "name", str(n)) for n in all_recomputable_banned_nodes],
                node_bytes=_sizes(all_recomputable_banned_nodes),
                requested_max_memory=float(max_memory),
            )
        )
        # dp_knapsack's convention: saved ascending, recomputable descending.
        return list(solution.saved), solution.recomputed[::-1]

    def _solve_keeping(self, memory: list[float], runtimes: list[float], max_memory: float,
                       kept: list[int]) -> tuple[float, Solution]:  # fmt: skip
        """The budget solved at and the solution, with the items ``kept`` always saved.

        The kept items (random ops, which must never run again in the
        backward) take their memory out of the budget; the knapsack over the
        other items gets what is left (at least 0). The solution is over all
        items: the kept ones are in ``saved`` and their runtime in ``value``.
        """
        if not kept:
            budget = self.choose_budget(memory, runtimes, max_memory)
            return budget, self.solve(memory, runtimes, budget)
        is_kept = set(kept)
        free = [i for i in range(len(memory)) if i not in is_kept]
        sub_memory = [memory[i] for i in free]
        sub_runtimes = [runtimes[i] for i in free]
        room = max(0.0, float(max_memory) - math.fsum(float(memory[i]) for i in kept))
        budget = self.choose_budget(sub_memory, sub_runtimes, room) if free else room
        sub = self.solve(sub_memory, sub_runtimes, budget) if free else None
        saved = sorted(kept + ([free[i] for i in sub.saved] if sub else []))
        recomputed = [free[i] for i in sub.recomputed] if sub else []
        value = math.fsum(float(runtimes[i]) for i in saved)
        stats = dict(sub.stats) if sub else {}
        stats["kept_random"] = list(kept)
        solution = Solution(value=value, saved=saved, recomputed=recomputed,
                            solver=sub.solver if sub else self.solver, stats=stats)  # fmt: skip
        return budget, solution

    def _call_for_peak(self, memory, joint_graph, max_memory, node_info, nodes, runtimes, source, graph):
        cap = getattr(self, "_current_capture", None)
        if cap is None or cap.joint_graph is not joint_graph:
            loc = capture.find_partition_locals()
            cap = capture.Capture(joint_graph, node_info, loc.get("num_fwd_outputs"), loc.get("joint_module"))
        self._describe_step(cap)
        start = time.perf_counter()
        with dispatch_allowed():
            if cap.backend == "inductor":
                choice = search.search_guided(cap, nodes, runtimes, memory, self.max_peak_bytes,
                                              compose=self._step_scorer(joint_graph),
                                              max_plans=min(self.max_plans, INDUCTOR_MAX_PLANS),
                                              frontier_points=INDUCTOR_FRONTIER_POINTS)  # fmt: skip
            elif len(joint_graph.nodes) > LARGE_GRAPH_NODES:  # each plan's min-cut and partition grow with it
                choice = search.search_plan(cap, nodes, runtimes, memory, self.max_peak_bytes,
                                            compose=self._step_scorer(joint_graph),
                                            max_plans=min(self.max_plans, INDUCTOR_MAX_PLANS),
                                            frontier_points=INDUCTOR_FRONTIER_POINTS, bisect=True)  # fmt: skip
            else:
                choice = search.search_plan(cap, nodes, runtimes, memory, self.max_peak_bytes,
                                            compose=self._step_scorer(joint_graph), max_plans=self.max_plans)
        recomputed = list(choice.recompute)
        dropped = set(recomputed)
        saved = [i for i in range(len(memory)) if i not in dropped]
        solution = Solution(
            value=choice.value, saved=saved, recomputed=recomputed, solver=f"{self.solver}+peak",
            stats={"seconds": time.perf_counter() - start, "plans": choice.evaluated},
        )  # fmt: skip
        self.history.append(
            SolveRecord(
                graph=graph, memory=list(memory), runtimes=list(runtimes), max_memory=float(max_memory),
                solution=solution, runtimes_source=source,
                node_names=[getattr(n, "name", str(n)) for n in nodes], node_bytes=_sizes(nodes),
                requested_max_memory=float(max_memory), predicted_peak_bytes=choice.peak_bytes,
                fits=choice.fits, exact=choice.exact, plans_evaluated=choice.evaluated,
                min_peak_bytes=choice.min_peak_bytes,
            )
        )  # fmt: skip
        return saved, recomputed[::-1]

    def choose_saved(self, cap: Any, memory_budget: float, choose: Any) -> list[Any]:
        """The saved set for ``cap``'s graph, chosen for :attr:`max_peak_bytes` (the wrapped partitioner calls it).

        A graph this solver planned before gets the same plan again
        (:func:`.search.replayed_plan`). Otherwise PyTorch's
        ``choose_saved_values_set`` (``choose``) runs, which calls this solver's
        knapsack (the peak-constrained search, on ``cap``), and the knapsack
        plan is then compared with the budgets' own saved sets
        (:func:`.search.choose_for_peak`).
        """
        joint_graph = cap.joint_graph
        replayed = search.replayed_plan(self, joint_graph)
        if replayed is not None:
            return replayed
        self._current_capture = cap
        calls = len(self.history)
        try:
            saved = choose(joint_graph, cap.node_info, memory_budget=memory_budget)
        finally:
            self._current_capture = None
        self._describe_step(cap)
        searched = self.history[-1].min_peak_bytes if len(self.history) > calls else None
        chosen = search.choose_for_peak(cap, self, list(saved), searched)
        if self._stop_unless_fits and not self.choices[-1]["fits"]:
            raise PlanDoesNotFit(self.choices[-1]["min_peak_bytes"])
        return chosen

    def _describe_step(self, cap: Any) -> None:
        """Tell ``cap`` the step around its graph: the tangents, the loss, whether the output is kept.

        In a recorded step (regions, torchrun) the step makes the tangents, and dropping the
        output is part of the eager code it measured.
        """
        cap.tangent_bytes = self._tangent_bytes
        cap.loss_peak_bytes = self._loss_peak_bytes
        cap.loss_phases = self._loss_phases
        cap.tangents_given = self._step is not None
        cap.keep_output = self._keep_output if self._step is None else True

    def _step_scorer(self, joint_graph: Any) -> Any:
        """With a recorded step: a plan's GraphPeak -> the step's peak with it, for this graph (else None)."""
        if self._step is None:
            return None
        return self._step.scorer(capture.graph_key(joint_graph))

    def _planned(self, joint_graph: Any, graph_peak: Any) -> None:
        """Note the plan chosen for ``joint_graph`` in the recorded step, so later graphs see it."""
        if self._step is not None:
            key = capture.graph_key(joint_graph)
            if key in self._step.current:
                self._step.current[key] = graph_peak

    @staticmethod
    def _runtimes(memory: list[float], joint_graph: Any, nodes: list[Any]) -> tuple[list[float], str, str]:
        """PyTorch's runtime list for this call when the partitioner is around it, else estimate_runtime's."""
        stack = _pending()
        if stack:
            entry = stack[-1]
            graph, mem, runtimes, name = entry
            if mem is memory and graph is joint_graph and len(runtimes) == len(memory):
                if name is None:
                    name = entry[3] = _graph_name(joint_graph)
                return list(runtimes), "partitioner", name
        return estimate_runtimes(nodes), "estimate_runtime", _graph_name(joint_graph)


#: Under inductor the search is steered by the liveness pass (:func:`.search.search_guided`): it samples
#: this many budget points and bisects between them, then enumerates at most this many plans beyond them.
INDUCTOR_FRONTIER_POINTS = 6
INDUCTOR_MAX_PLANS = 2

#: Under aot_eager, a joint graph with more nodes than this gets the same sampled, bisected search (each plan's
#: min-cut and partition take seconds there: a 32-layer Llama's exact search took 14 minutes); smaller ones the
#: exact search.
LARGE_GRAPH_NODES = 3000


def check_peak_limit(limit: Any) -> int:
    """``limit`` as a positive int of bytes; ValueError naming it (0 or below, NaN, inf, a string, a bool)."""
    if isinstance(limit, bool) or not isinstance(limit, (int, float)):
        raise ValueError(f"max_peak_bytes must be a number of bytes > 0, got {limit!r}")
    if isinstance(limit, float) and not math.isfinite(limit):
        raise ValueError(f"max_peak_bytes must be a finite number of bytes > 0, got {limit!r}")
    if limit < 1:
        raise ValueError(f"max_peak_bytes must be at least 1 byte, got {limit!r}")
    return int(limit)


def _make(
    solver: str | KnapsackSolver, budget: str | None, options: dict[str, Any], max_peak_bytes: Any = None
) -> KnapsackSolver:
    if isinstance(solver, KnapsackSolver):
        if budget is not None or options:
            raise TypeError("pass budget= and options to KnapsackSolver(), not beside an instance")
        if max_peak_bytes is not None and check_peak_limit(max_peak_bytes) != solver.max_peak_bytes:
            raise TypeError("pass max_peak_bytes= to KnapsackSolver(), not beside an instance")
        return solver
    return KnapsackSolver(solver, budget=budget, max_peak_bytes=max_peak_bytes, **options)


# What install() found: the config value and whether it holds the wrapper; None when not installed.
_installed: dict[str, Any] | None = None


def install(
    solver: str | KnapsackSolver = "auto",
    *,
    budget: str | None = None,
    max_peak_bytes: int | None = None,
    **options: Any,
) -> KnapsackSolver:
    """Make ``KnapsackSolver(solver, budget=budget, max_peak_bytes=..., **options)`` PyTorch's solver for this process.

    ``solver`` may also be a :class:`KnapsackSolver` instance. Returns the
    instance (its :attr:`~KnapsackSolver.history` shows what it solved). The
    budget fraction itself stays ``torch._functorch.config.activation_memory_budget``
    (``budget="knee"``: see :class:`KnapsackSolver`). :func:`uninstall` undoes it.
    With ``max_peak_bytes`` (or an instance that has it) it also sets
    ``activation_memory_budget`` to :data:`PEAK_BUDGET`, so that PyTorch calls the
    solver; :func:`uninstall` puts the budget back.
    """
    global _installed
    instance = _make(solver, budget, options, max_peak_bytes)
    with _lock:
        if _installed is None:
            _acquire_wrapper()
            capture.acquire_choose()
            _installed = {"solver": _fconfig.activation_memory_budget_solver,
                          "budget": _fconfig.activation_memory_budget}  # fmt: skip
        _fconfig.activation_memory_budget_solver = instance
        _fconfig.activation_memory_budget = (
            PEAK_BUDGET if instance.max_peak_bytes is not None else _installed["budget"]
        )
    return instance


def uninstall() -> None:
    """Undo :func:`install`: the solver setting it found and PyTorch's own dispatch function come back.

    The wrapper stays while a :func:`use_solver` or :func:`record_instances`
    block is still open (they release it on exit). A no-op when nothing is installed.
    """
    global _installed
    with _lock:
        if _installed is None:
            return
        _fconfig.activation_memory_budget_solver = _installed["solver"]
        _fconfig.activation_memory_budget = _installed["budget"]
        _installed = None
        _release_wrapper()
        capture.release_choose()


@contextlib.contextmanager
def use_solver(
    solver: str | KnapsackSolver = "auto",
    *,
    budget: str | None = None,
    max_peak_bytes: int | None = None,
    **options: Any,
) -> Iterator[KnapsackSolver]:
    """Use ``KnapsackSolver(solver, budget=budget, max_peak_bytes=..., **options)`` inside the block.

    ``solver`` may also be a :class:`KnapsackSolver` instance. With
    ``max_peak_bytes`` (or an instance that has it) ``activation_memory_budget``
    is :data:`PEAK_BUDGET` inside the block, so that PyTorch calls the solver
    (it skips the knapsack at 0 and 1, and when a more aggressive min-cut fits
    the budget). On exit, even when the block raises, the solver and budget
    settings are what they were before, and PyTorch's dispatch function is
    wrapped only if it was wrapped before.
    """
    instance = _make(solver, budget, options, max_peak_bytes)
    previous = _fconfig.activation_memory_budget_solver
    previous_budget = _fconfig.activation_memory_budget
    peak = instance.max_peak_bytes is not None
    with _wrapper_held():
        if peak:
            capture.acquire_choose()
        _fconfig.activation_memory_budget_solver = instance
        if peak:
            _fconfig.activation_memory_budget = PEAK_BUDGET
        try:
            yield instance
        finally:
            _fconfig.activation_memory_budget_solver = previous
            _fconfig.activation_memory_budget = previous_budget
            if peak:
                capture.release_choose()


# --------------------------------------------------------------------------------------
# Recording
# --------------------------------------------------------------------------------------


class _Recorder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.count = 0

    def write(self, graph: str, memory: Any, runtimes: Any, max_memory: Any) -> None:
        record = {
            "memory": [float(m) for m in memory],
            "runtimes": [float(r) for r in runtimes],
            "max_memory": float(max_memory),
            "n": len(memory),
            "graph": graph,
        }
        line = json.dumps(record, allow_nan=False) + "\n"
        with _lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            self.count += 1


@contextlib.contextmanager
def record_instances(path: str | os.PathLike[str], *, bypass_cache: bool = True) -> Iterator[_Recorder]:
    """Append every knapsack instance met while compiling to the JSONL file ``path``.

    One object per line: ``{"memory", "runtimes", "max_memory", "n", "graph"}``,
    exactly the lists PyTorch hands its solver, with ``graph`` the AOT graph's name
    and a hash of its code. It works with whatever solver is configured, PyTorch's
    own strings included. A graph served from AOTAutograd's cache is never
    partitioned, so by default the cache is bypassed inside the block
    (``bypass_cache=False`` keeps it); a function torch.compile already compiled
    in this process is not compiled again (``torch._dynamo.reset()`` forgets it).

    Yields an object whose ``count`` is the number of instances written.
    """
    recorder = _Recorder(Path(path))
    recorder.path.parent.mkdir(parents=True, exist_ok=True)
    recorder.path.touch()
    previous_cache = _fconfig.enable_autograd_cache
    with _wrapper_held():
        with _lock:
            _recorders.append(recorder)
        if bypass_cache:
            _fconfig.enable_autograd_cache = False
        try:
            yield recorder
        finally:
            if bypass_cache:
                _fconfig.enable_autograd_cache = previous_cache
            with _lock:
                _recorders.remove(recorder)


def read_instances(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The instances :func:`record_instances` wrote, one dict per line.

    Parsed and checked by :mod:`remat_knapsack._common._io` (the reader the CLI and the
    bench use); a file with no instance yet gives ``[]``. A malformed line raises
    :class:`~remat_knapsack._common._io.InstanceFileError` (a ``ValueError``) naming it.
    """
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if not text.strip():
        return []
    return _io.parse_instances(text, path)[1]
