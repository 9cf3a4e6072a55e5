"""What are the graphs? The joint graphs the partitioner is handed, caught where it chooses what to save.

PyTorch's min-cut partitioner calls ``choose_saved_values_set`` once per joint
graph (forward and backward traced together). This module wraps that function
(:func:`acquire_choose`, :func:`release_choose`, :func:`guard_choose`) and,
while :func:`capture_graphs` is open or one of our peak-constrained solvers is
configured, keeps a :class:`Capture` of each graph: the joint graph, what the
partitioner knows of its nodes, and the saved set any budget or plan gives on
it. Asking a :class:`Capture` for a saved set's peak (:meth:`Capture.peak`)
partitions the graph again, without a compile (:mod:`..peaks`).

May import: torch, :mod:`.._rng` and :mod:`..peaks`. The solver is reached
through the configured ``activation_memory_budget_solver`` (its
``choose_saved``), never imported: the plug-in imports this module.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import torch._functorch.config as _fconfig
import torch._functorch.partitioners as _partitioners

from .. import _rng, peaks

__all__ = ["Capture", "acquire_choose", "bypass", "capture_graphs", "find_partition_locals", "graph_key",
           "guard_choose", "original_choose", "release_choose"]

_cap_lock = threading.RLock()
#: Lists told of every joint graph partitioned while they are registered.
_capture_sinks: list[list[Capture]] = []
#: How many holders need ``choose_saved_values_set`` wrapped.
_cap_holds = 0
#: Whether :func:`guard_choose` holds the wrapper for the rest of the process.
_guarded = False


_ORIGINAL: dict[str, Any] = {}
_bypass_local = threading.local()


@contextlib.contextmanager
def bypass() -> Iterator[None]:
    """Inside the block the wrapper calls through without capturing (our own nested calls)."""
    depth = getattr(_bypass_local, "depth", 0)
    _bypass_local.depth = depth + 1
    try:
        yield
    finally:
        _bypass_local.depth = depth


def find_partition_locals() -> dict[str, Any]:
    """``min_cut_rematerialization_partition``'s locals, from the call stack (empty when not found)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "min_cut_rematerialization_partition":
            return frame.f_locals
        frame = frame.f_back  # type: ignore[assignment]
    return {}


class Capture:
    """One joint graph as the partitioner saw it, and the peak of any saved set on it.

    Built while the partitioner runs (``choose_saved_values_set`` is wrapped while
    :func:`capture_graphs` is open, and a peak-constrained
    :class:`~remat_knapsack.torch.KnapsackSolver` builds one inside its call).
    Partitioning it again for a saved set is graph work only (no compile).
    """

    def __init__(self, joint_graph: Any, node_info: Any, num_fwd_outputs: int | None = None,
                 joint_module: Any = None) -> None:  # fmt: skip
        self.joint_graph = joint_graph
        self.node_info = node_info
        #: dynamo's compile id ("frame/compile", as its profiler regions name it) of the compile that made it.
        self.compile_id = _current_compile_id()
        self.joint_module = joint_module if joint_module is not None else joint_graph.owning_module
        if num_fwd_outputs is None:
            num_fwd_outputs = _partition_num_fwd_outputs(joint_graph)
        self.num_fwd_outputs = int(num_fwd_outputs)
        #: Bytes of the gradient the autograd engine hands each tangent, in order
        #: (:class:`OutsideStep`); None: each tangent's own size.
        self.tangent_bytes: list[int] | None = None
        #: The loss's own peak between the forward and the backward (:class:`OutsideStep`); 0: not modelled.
        self.loss_peak_bytes = 0
        #: Whether the backward's tangents exist before it starts (a region's: the step made them,
        #: ``_regions``); they are then not allocated by it, only freed after their last use.
        self.tangents_given = False
        #: Whether the step keeps the model's outputs through the backward (``out = model(x);
        #: loss(out).backward()``); False: it drops them after the loss (``loss(model(x)).backward()``).
        self.keep_output = True
        #: The loss's phases (:attr:`OutsideStep.loss_phases`): with ``keep_output`` false, the outputs are
        #: freed between its forward and its backward. None: after both.
        self.loss_phases: tuple[int, int, int] | None = None
        #: Whose timeline :meth:`peak` models: "aot_eager" (the FX graphs run op by op, freeing
        #: each value after its last use) or "inductor" (:mod:`..peaks`).
        self.backend = "inductor" if peaks.is_inductor_compile() else "aot_eager"
        #: :func:`~..peaks.op_workspaces` of the joint graph's ops, measured on first use (None: not yet).
        self.workspaces: dict[Any, int] | None = None
        self._cache: dict[tuple[Any, ...], peaks.GraphPeak] = {}
        self._plan_cache: dict[frozenset[int], tuple[frozenset[str], list[Any]]] = {}

    # saved sets
    def saved_for_budget(self, budget: float, solver: Any) -> list[Any]:
        """The saved set the partitioner picks at ``budget`` with ``solver``, as the compile would run it.

        With one of our solvers that is PyTorch's choice made random-safe
        (:func:`_rng.random_safe`), as the wrapped ``choose_saved_values_set``
        makes it during a compile. The caller holds the plug-in's runtime
        wrapper (``_plugin._wrapper_held``) when ``solver`` needs PyTorch's
        runtimes, as ours do."""
        with _fconfig.patch(activation_memory_budget_solver=solver), peaks.dispatch_allowed():
            with bypass():
                saved = list(original_choose()(self.joint_graph, self.node_info, memory_budget=budget))
        if _keeps_random(solver):
            saved = _rng.random_safe(self.joint_graph, self.node_info, saved, budget)
        return saved

    def saved_for_plan(self, candidates: Sequence[Any], recompute: Sequence[int]) -> list[Any]:
        """The saved set when the knapsack lets ``candidates[i]`` (i in ``recompute``) be recomputed."""
        key = frozenset(int(i) for i in recompute)
        hit = self._plan_cache.get(key)
        if hit is not None:
            return hit[1]
        # A random op stays banned whatever the plan says (see ``_rng``).
        dont_ban = _partitioners.OrderedSet(candidates[i] for i in sorted(key) if not _rng.is_random(candidates[i]))
        saved, _ = _partitioners.solve_min_cut(self.joint_graph, self.node_info, _rng.aggressive_options(), dont_ban)
        saved = _rng.keep_random(self.joint_graph, self.node_info, list(saved))
        self._plan_cache[key] = (frozenset(n.name for n in saved), saved)
        return saved

    # partition and liveness
    def peak(self, saved_values: Sequence[Any], backend: str | None = None) -> peaks.GraphPeak:
        """Partition the joint graph for ``saved_values`` and put both halves on one timeline.

        ``backend``: whose timeline (default :attr:`backend`); ``"aot_eager"`` on an inductor graph is the
        liveness pass that guides inductor's search (:func:`~..search.search_guided`), without workspaces.
        """
        return self.peaks([saved_values], backend)[0]

    def peaks(self, saved_sets: Sequence[Sequence[Any]], backend: str | None = None) -> list[peaks.GraphPeak]:
        """:meth:`peak` of each saved set; those not modelled yet side by side (:func:`~..peaks.graph_peaks`)."""
        backend = self.backend if backend is None else backend
        keys = [(backend, self.loss_peak_bytes, self.loss_phases, self.tangents_given, self.keep_output,
                 frozenset(n.name for n in saved)) for saved in saved_sets]  # fmt: skip
        missing: dict[Any, Sequence[Any]] = {}
        for key, saved in zip(keys, saved_sets):
            if key not in self._cache:
                missing.setdefault(key, saved)
        if missing:
            found = peaks.graph_peaks(self, list(missing.values()), backend)
            self._cache.update(zip(missing, found))
        return [self._cache[key] for key in keys]

    def partition(self, saved_values: Sequence[Any]) -> tuple[Any, Any]:
        """The forward and backward graph modules the partitioner makes for ``saved_values``
        (:func:`~..peaks.partition`)."""
        return peaks.partition(self, saved_values)

    def recompute_cost(self, g: peaks.GraphPeak) -> float:
        """PyTorch's runtime estimate (``estimate_runtime``, FLOPs by default) of the ops ``g`` recomputes."""
        if not hasattr(self, "_runtime_of"):
            self._runtime_of: dict[str, float] = {}
            self._by_name = {n.name: n for n in self.joint_graph.nodes}
        total = 0.0
        for name in g.recomputed_names:
            if name not in self._runtime_of:
                node = self._by_name.get(name)
                try:
                    with peaks.dispatch_allowed():
                        cost = float(_partitioners.estimate_runtime(node)) if node is not None else 0.0
                    self._runtime_of[name] = cost
                except Exception:
                    self._runtime_of[name] = 0.0
            total += self._runtime_of[name]
        return total


def _current_compile_id() -> str | None:
    """The compile id of the dynamo compile running now ("4/1"), None outside one."""
    try:
        from torch._guards import CompileContext

        cid = CompileContext.current_compile_id()
    except Exception:  # pragma: no cover - a torch without it
        return None
    return None if cid is None else str(cid)


def _partition_num_fwd_outputs(joint_graph: Any) -> int:
    """Forward outputs of a joint graph: all outputs but one gradient per primal input."""
    placeholders = [n for n in joint_graph.nodes if n.op == "placeholder"]
    primals = sum(1 for n in placeholders if "primals" in n.name)
    out = next(n for n in reversed(joint_graph.nodes) if n.op == "output")
    return len(out.args[0]) - primals


def graph_key(joint_graph: Any) -> str:
    """A joint graph's identity across compiles: a hash of its code (the same model gives the same key)."""
    return hashlib.sha256(joint_graph.python_code("self").src.encode()).hexdigest()[:16]


def _keeps_random(solver: Any) -> bool:
    """Whether ``solver`` is one of ours (a ``KnapsackSolver``): its plans never recompute a random op."""
    return bool(getattr(solver, "keeps_random", False))


def _peak_solver() -> Any:
    value = _fconfig.activation_memory_budget_solver
    return value if getattr(value, "max_peak_bytes", None) is not None else None  # a KnapsackSolver's


def _hooked_choose(joint_graph: Any, node_info: Any, memory_budget: float = 1) -> Any:
    """``choose_saved_values_set`` with captures, the random-op guard and the peak-constrained choice.

    A pass-through unless a capture is open or one of our solvers is
    PyTorch's configured solver. With ours, the saved set is made
    random-safe (:func:`.._rng.random_safe`) at every budget, 0 included,
    where PyTorch returns before any solver is asked; a peak-constrained
    one (``max_peak_bytes``) chooses the saved set itself
    (``KnapsackSolver.choose_saved``), given this graph's capture and
    PyTorch's own ``choose_saved_values_set``.
    """
    if getattr(_bypass_local, "depth", 0) != 0:
        return _ORIGINAL["choose"](joint_graph, node_info, memory_budget=memory_budget)
    with _cap_lock:
        sinks = list(_capture_sinks)
    solver = _peak_solver()
    cap = None
    if sinks or solver is not None:
        loc = find_partition_locals()
        cap = Capture(joint_graph, node_info, loc.get("num_fwd_outputs"), loc.get("joint_module"))
        for s in sinks:
            s.append(cap)
    if solver is None or cap is None:
        saved = _ORIGINAL["choose"](joint_graph, node_info, memory_budget=memory_budget)
        if _keeps_random(_fconfig.activation_memory_budget_solver):
            saved = _rng.random_safe(joint_graph, node_info, saved, memory_budget)
        return saved
    return solver.choose_saved(cap, memory_budget, _ORIGINAL["choose"])


def acquire_choose() -> None:
    """Wrap ``choose_saved_values_set`` (once), for one more holder; :func:`release_choose` gives it back."""
    global _cap_holds
    with _cap_lock:
        if _partitioners.choose_saved_values_set is not _hooked_choose:
            _ORIGINAL["choose"] = _partitioners.choose_saved_values_set
            _partitioners.choose_saved_values_set = _hooked_choose
        _cap_holds += 1


def guard_choose() -> None:
    """Wrap ``choose_saved_values_set`` for the rest of the process (once; later calls do nothing).

    :class:`~remat_knapsack.torch.KnapsackSolver` calls this when it is made,
    so that a solver set by hand as ``activation_memory_budget_solver`` is
    guarded at budget 0 too, where PyTorch never calls it. The wrapper passes
    straight through while no solver of ours is configured and no capture is
    open.
    """
    global _guarded
    with _cap_lock:
        if not _guarded:
            acquire_choose()
            _guarded = True


def release_choose() -> None:
    """One holder less; the last one puts PyTorch's ``choose_saved_values_set`` back."""
    global _cap_holds
    with _cap_lock:
        _cap_holds = max(0, _cap_holds - 1)
        if _cap_holds == 0 and _partitioners.choose_saved_values_set is _hooked_choose:
            _partitioners.choose_saved_values_set = _ORIGINAL["choose"]


def original_choose() -> Any:
    """PyTorch's own ``choose_saved_values_set``, wrapped or not."""
    with _cap_lock:
        if _partitioners.choose_saved_values_set is _hooked_choose:
            return _ORIGINAL["choose"]
        return _partitioners.choose_saved_values_set


@contextlib.contextmanager
def capture_graphs() -> Iterator[list[Capture]]:
    """Collect a :class:`Capture` of every joint graph partitioned inside the block."""
    sink: list[Capture] = []
    acquire_choose()
    with _cap_lock:
        _capture_sinks.append(sink)
    try:
        yield sink
    finally:
        with _cap_lock:
            _capture_sinks.remove(sink)
        release_choose()
