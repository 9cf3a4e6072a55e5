"""The peak model: predicted peak bytes of one training step for a saved set, from the graphs themselves.

The activation budget caps a proxy (the knapsack's normalised saved size). The
physical peak of a step depends on where the partitioner puts the recomputation
in the backward, on what lives across the forward/backward boundary, and on the
gradients and temporaries. This module therefore never models a plan in the
abstract: for a saved set it calls PyTorch's own partitioner pieces on the
captured joint graph (``solve_min_cut`` for a plan, ``_extract_fwd_bwd_modules``,
``reordering_to_mimic_autograd_engine``, ``raise_getitems``, as
``min_cut_rematerialization_partition`` does), and runs a liveness pass over the
forward and backward graphs it gets back, with sizes from each node's
``meta['val']`` (fake tensors: views share a storage and cost nothing).

The liveness pass follows how AOTAutograd runs the graphs with ``aot_eager``: a
value is freed right after its last use; the forward's inputs (parameters,
inputs) exist before the step; its outputs (the user's outputs and the tensors
saved for backward) outlive it; the user's outputs live to the end of the step;
the backward allocates its tangents when it starts, frees each saved tensor
after its last use there, and its outputs (the gradients) live to the end of
the step. Graph breaks give several graphs: their forwards run in order, their
backwards in reverse order, on one timeline.

:class:`Capture` holds one joint graph (captured during one compile by wrapping
``choose_saved_values_set``); :func:`predict_peaks` compiles once and predicts
every budget from the captures.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch._functorch.config as _fconfig
import torch._functorch.partitioners as _partitioners

from . import _inductor_peaks, _rng
from ._measure import CUDA_BLOCK, allocated_bytes  # noqa: F401  (the allocator's rounding, used here)
from .capture import OutsideStep, measure_outside  # noqa: F401  (the loss around the graphs; re-exported)

__all__ = ["Capture", "GraphPeak", "OutsideStep", "PeakPrediction", "capture_graphs", "measure_outside",
           "op_workspaces", "step_peak"]

_cap_lock = threading.RLock()
#: Lists told of every joint graph partitioned while they are registered.
_capture_sinks: list[list[Capture]] = []
#: How many holders need ``choose_saved_values_set`` wrapped.
_cap_holds = 0
#: Whether :func:`guard_choose` holds the wrapper for the rest of the process.
_guarded = False


@dataclass(frozen=True)
class PeakPrediction:
    """The peak model's answer for one budget.

    Attributes
    ----------
    budget : float
        ``activation_memory_budget``.
    peak_bytes : int
        Predicted peak of one training step (forward, then backward) above what
        was allocated when it began, as :func:`~remat_knapsack.torch.sweep` measures it.
    saved_bytes : int
        Predicted bytes of the distinct storages saved for backward (parameters
        and inputs the graphs save included, as ``sweep`` counts them).
    """

    budget: float
    peak_bytes: int
    saved_bytes: int


@dataclass(frozen=True)
class GraphPeak:
    """One joint graph partitioned for one saved set, as the liveness pass sees it.

    ``fw_events`` and ``bw_events`` are running-byte deltas in program order
    (positive: allocation, negative: free); ``held`` the bytes the forward leaves
    allocated (user outputs and saved tensors); ``saved_bytes`` the saved storages.
    """

    fw_events: tuple[int, ...]
    bw_events: tuple[int, ...]
    saved_bytes: int
    recomputed: int  # forward ops that the backward runs again
    #: The storage (fake-tensor storage identity) of each event, parallel to the events (aot_eager; empty
    #: under inductor, whose events are the generated code's).
    fw_keys: tuple[int, ...] = ()
    bw_keys: tuple[int, ...] = ()
    #: Names of the forward ops the backward runs again.
    recomputed_names: tuple[str, ...] = ()


# ---------------------------------------------------------------------- liveness


def _tensors(val: Any) -> list[torch.Tensor]:
    if isinstance(val, torch.Tensor):
        return [val]
    if isinstance(val, (list, tuple)):
        return [t for v in val for t in _tensors(v)]
    return []




def _storage(t: torch.Tensor) -> tuple[int, int] | None:
    """(storage identity, bytes as its device's allocator counts them) of a fake or real tensor; None
    when it has none."""
    try:
        if not torch._C._has_storage(t):
            return None
        st = t.untyped_storage()
        return st._cdata, allocated_bytes(int(st.nbytes()), t.device.type)
    except Exception:
        try:
            return id(t), allocated_bytes(int(t.numel() * t.element_size()), t.device.type)
        except Exception:
            return None


def _node_storages(node: Any) -> list[tuple[int, int]]:
    out = []
    for t in _tensors(node.meta.get("val")):
        s = _storage(t)
        if s is not None:
            out.append(s)
    return out


def _liveness(
    gm: Any, *, preexisting: set[int], fresh_inputs: dict[int, int] | None, keep_outputs: set[int] | None,
    workspaces: dict[Any, int] | None = None,
) -> tuple[list[int], dict[int, int], set[int]]:
    """Allocation deltas of running ``gm`` once, freeing each value after its last use.

    ``preexisting``: storages allocated before (never counted, never freed here).
    ``fresh_inputs``: placeholder storages allocated when the graph starts (tangents), with their bytes.
    ``keep_outputs``: output positions whose storages outlive the graph (None: all).
    ``workspaces``: :func:`op_workspaces`; each op's workspace is allocated and
    freed right after its outputs (a spike on top of them).
    Placeholders that are neither are live on entry and freed after their last use.
    Returns (deltas, sizes of the storages still allocated at the end, storages
    the graph freed that were live on entry).
    """
    nodes = list(gm.graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    sizes: dict[int, int] = {}
    last: dict[int, int] = {}
    end = len(nodes) + 1
    for n in nodes:
        for key, nbytes in _node_storages(n):
            sizes[key] = max(sizes.get(key, 0), nbytes)
            use = max([index[n]] + [index[u] for u in n.users if u.op != "output"])
            last[key] = max(last.get(key, -1), use)
    output = next((n for n in reversed(nodes) if n.op == "output"), None)
    outs = output.args[0] if output is not None else ()
    outs = outs if isinstance(outs, (list, tuple)) else (outs,)
    for pos, o in enumerate(outs):
        if isinstance(o, torch.fx.Node) and (keep_outputs is None or pos in keep_outputs):
            for key, _ in _node_storages(o):
                last[key] = end
    alive: dict[int, int] = {}
    deltas: list[int] = []
    keys: list[int] = []
    entered: set[int] = set()
    freed_inputs: set[int] = set()
    frees_at: dict[int, list[int]] = {}
    for key, i in last.items():
        frees_at.setdefault(i, []).append(key)
    for n in nodes:
        if n.op == "placeholder":
            for key, _nbytes in _node_storages(n):
                if key in preexisting or key in alive or key in entered:
                    continue
                if fresh_inputs is not None and key in fresh_inputs:
                    alive[key] = sizes[key] = fresh_inputs[key]
                    deltas.append(fresh_inputs[key])
                    keys.append(key)
                else:
                    entered.add(key)
    for n in nodes:
        i = index[n]
        if n.op == "call_function":
            for key, nbytes in _node_storages(n):
                if key in alive or key in entered or key in preexisting:
                    continue
                alive[key] = nbytes
                deltas.append(nbytes)
                keys.append(key)
            w = workspaces.get(_signature(n), 0) if workspaces else 0
            if w:
                deltas += [w, -w]
                keys += [-1, -1]
        for key in frees_at.get(i, ()):
            if key in alive:
                deltas.append(-alive.pop(key))
                keys.append(key)
            elif key in entered:
                entered.discard(key)
                freed_inputs.add(key)
                deltas.append(-sizes[key])
                keys.append(key)
    gm._remat_event_keys = keys  # read by Capture._peak
    return deltas, alive, freed_inputs


def _signature(node: Any) -> Any:
    """What an op's workspace depends on: the op and its arguments' shapes, strides and dtypes."""

    def one(a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            v = a.meta.get("val")
            if isinstance(v, torch.Tensor):
                return ("T", tuple(v.shape), tuple(v.stride()), str(v.dtype))
            return ("V", repr(v))
        if isinstance(a, (list, tuple)):
            return tuple(one(x) for x in a)
        return repr(a)

    return (str(node.target), one(tuple(node.args)), one(tuple(sorted(node.kwargs.items()))))


def _real(v: Any) -> Any:
    """A real tensor like the fake ``v`` (random floats, zero integers), or ``v`` itself."""
    if not isinstance(v, torch.Tensor):
        return v
    shape = [int(d) for d in v.shape]
    stride = [int(d) for d in v.stride()]
    t = torch.empty_strided(shape, stride, dtype=v.dtype, device="cpu")
    if t.is_floating_point() or t.is_complex():
        t.normal_()
    else:
        t.zero_()
    return t


def op_workspaces(nodes: Sequence[Any]) -> dict[Any, int]:
    """Bytes each op allocates beyond its outputs while it runs (its workspace), by :func:`_signature`.

    Each distinct signature is run once on real tensors shaped like its fake
    arguments (CPU), all inside one ``torch.profiler`` session; the workspace is
    the highest running total of the allocator's events during the op minus
    what is still allocated when it returns (its outputs). CPU kernels such as
    ``convolution_backward`` (reordered copies of their inputs) and attention
    allocate such buffers; most ops none. An op that fails on made-up inputs
    (or has symbolic shapes, or is not on the CPU) counts 0.
    """
    from torch.profiler import ProfilerActivity, profile, record_function
    from torch.utils._pytree import tree_map

    todo: dict[Any, Any] = {}
    for n in nodes:
        if n.op != "call_function" or not isinstance(n.target, torch._ops.OpOverload):
            continue
        if n.target.is_view or any(isinstance(t, torch.Tensor) and t.device.type != "cpu"
                                   for t in _tensors(n.meta.get("val"))):  # fmt: skip
            continue
        todo.setdefault(_signature(n), n)
    if not todo:
        return {}
    ctx = contextlib.ExitStack()
    with ctx:
        try:
            from torch._subclasses.fake_tensor import unset_fake_temporarily

            ctx.enter_context(unset_fake_temporarily())
        except ImportError:  # pragma: no cover
            pass
        ctx.enter_context(_dispatch_allowed())
        ctx.enter_context(torch.no_grad())
        labels: dict[str, Any] = {}
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            for i, (sig, n) in enumerate(todo.items()):
                try:
                    args = torch.fx.node.map_aggregate(
                        n.args, lambda a: _real(a.meta.get("val")) if isinstance(a, torch.fx.Node) else a)
                    kwargs = torch.fx.node.map_aggregate(
                        n.kwargs, lambda a: _real(a.meta.get("val")) if isinstance(a, torch.fx.Node) else a)
                except Exception:
                    continue
                label = f"remat_ws_{i}"
                labels[label] = sig
                try:
                    with record_function(label):
                        out = n.target(*args, **kwargs)
                    tree_map(lambda _: None, out)
                except Exception:
                    labels.pop(label, None)
                out = args = kwargs = None
    events = prof.profiler.kineto_results.events()
    windows = sorted((e.start_ns(), e.start_ns() + e.duration_ns(), labels[e.name()])
                     for e in events if e.name() in labels)  # fmt: skip
    mem = sorted((e.start_ns(), e.nbytes()) for e in events
                 if e.name() == "[memory]" and str(e.device_type()).endswith("CPU"))  # fmt: skip
    out: dict[Any, int] = {}
    j = 0
    for start, end, sig in windows:
        while j < len(mem) and mem[j][0] < start:
            j += 1
        running = high = 0
        k = j
        while k < len(mem) and mem[k][0] <= end:
            running += mem[k][1]
            high = max(high, running)
            k += 1
        if high - running > 0:
            out[sig] = high - running
    return out


def _is_tangent(node: Any) -> bool:
    return node.op == "placeholder" and "tangents" in node.name


# ---------------------------------------------------------------------- capture


def _find_partition_locals() -> dict[str, Any]:
    """``min_cut_rematerialization_partition``'s locals, from the call stack (empty when not found)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "min_cut_rematerialization_partition":
            return frame.f_locals
        frame = frame.f_back  # type: ignore[assignment]
    return {}


@contextlib.contextmanager
def _dispatch_allowed() -> Iterator[None]:
    """Lift ``no_dispatch()`` (the FLOP counter needs the Python key) for the block."""
    keys = [torch._C.DispatchKey.Python, torch._C.DispatchKey.PythonTLSSnapshot]
    was = [torch._C._dispatch_tls_is_dispatch_key_excluded(k) for k in keys]
    try:
        for k in keys:
            torch._C._dispatch_tls_set_dispatch_key_excluded(k, False)
        yield
    finally:
        for k, w in zip(keys, was):
            torch._C._dispatch_tls_set_dispatch_key_excluded(k, w)


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
        #: Whose timeline :meth:`peak` models: "aot_eager" (the FX graphs run op by op, freeing
        #: each value after its last use) or "inductor" (:mod:`._inductor_peaks`).
        self.backend = "inductor" if _inductor_peaks.is_inductor_compile() else "aot_eager"
        #: :func:`op_workspaces` of the joint graph's ops, measured on first use (None: not yet).
        self.workspaces: dict[Any, int] | None = None
        self._cache: dict[tuple[str, int, bool, frozenset[str]], GraphPeak] = {}
        self._plan_cache: dict[frozenset[int], tuple[frozenset[str], list[Any]]] = {}

    # saved sets
    def saved_for_budget(self, budget: float, solver: Any) -> list[Any]:
        """The saved set the partitioner picks at ``budget`` with ``solver``, as the compile would run it.

        With one of our solvers that is PyTorch's choice made random-safe
        (:func:`_rng.random_safe`), as the wrapped ``choose_saved_values_set``
        makes it during a compile. The caller holds the plug-in's runtime
        wrapper (``_plugin._wrapper_held``) when ``solver`` needs PyTorch's
        runtimes, as ours do."""
        with _fconfig.patch(activation_memory_budget_solver=solver), _dispatch_allowed():
            with _bypass():
                saved = list(_original_choose()(self.joint_graph, self.node_info, memory_budget=budget))
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
    def peak(self, saved_values: Sequence[Any]) -> GraphPeak:
        """Partition the joint graph for ``saved_values`` and run the liveness pass over both halves."""
        key = (self.backend, self.loss_peak_bytes, self.tangents_given, frozenset(n.name for n in saved_values))
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._peak(list(saved_values))
        return hit

    def partition(self, saved_values: Sequence[Any]) -> tuple[Any, Any]:
        """The forward and backward graph modules the partitioner makes for ``saved_values``.

        PyTorch's own pieces, in ``min_cut_rematerialization_partition``'s order:
        ``_extract_fwd_bwd_modules``, ``reordering_to_mimic_autograd_engine``,
        ``raise_getitems``. Fresh modules on every call (inductor's passes mutate them).
        """
        is_sym = _partitioners.is_sym_node
        saved_sym = [n for n in saved_values if is_sym(n)]
        saved = [n for n in saved_values if not is_sym(n) and not _partitioners.is_opaque_node(n)]
        opaque = [n for n in saved_values if _partitioners.is_opaque_node(n)]
        fw, bw = _partitioners._extract_fwd_bwd_modules(
            self.joint_module, saved, saved_sym_nodes=saved_sym, saved_opaque_nodes=opaque,
            num_fwd_outputs=self.num_fwd_outputs,
            static_lifetime_input_nodes=self.node_info.static_lifetime_input_nodes,
        )  # fmt: skip
        bw = _partitioners.reordering_to_mimic_autograd_engine(bw)
        return _partitioners.raise_getitems(fw), _partitioners.raise_getitems(bw)

    def _peak(self, saved_values: list[Any]) -> GraphPeak:
        is_sym = _partitioners.is_sym_node
        saved_sym = [n for n in saved_values if is_sym(n)]
        saved = [n for n in saved_values if not is_sym(n) and not _partitioners.is_opaque_node(n)]
        opaque = [n for n in saved_values if _partitioners.is_opaque_node(n)]
        fw, bw = self.partition(saved_values)
        inputs = {k for n in fw.graph.nodes if n.op == "placeholder" for k, _ in _node_storages(n)}
        out = next(n for n in reversed(fw.graph.nodes) if n.op == "output")
        fw_outs = [o for o in out.args[0] if isinstance(o, torch.fx.Node)]
        n_saved = len(saved) + len(saved_sym) + len(opaque)
        saved_nodes = fw_outs[len(fw_outs) - n_saved:] if n_saved else []
        saved_keys: dict[int, int] = {}
        for n in saved_nodes:
            for k, b in _node_storages(n):
                saved_keys[k] = b
        tangent_nodes = [n for n in bw.graph.nodes if _is_tangent(n)]
        given = self.tangent_bytes
        if given is not None and len(given) != len(tangent_nodes):
            given = None
        tangents: dict[int, int] = {}
        tangents_by_name: dict[str, int] = {}
        for i, n in enumerate(tangent_nodes):
            for k, b in _node_storages(n):
                tangents[k] = b if given is None else min(b, given[i])
                tangents_by_name[str(n.target)] = tangents[k]
        fw_bw_recomputed = {n.name for n in fw.graph.nodes if n.op == "call_function"} & {
            n.name for n in bw.graph.nodes if n.op == "call_function"
        }
        fw_keys: tuple[int, ...] = ()
        bw_keys: tuple[int, ...] = ()
        if self.backend == "inductor":
            # The same partition, as inductor's generated code runs it (fusion, reordering, frees, reuse).
            owned = {str(n.target) for n in bw.graph.nodes if n.op == "placeholder" and not _is_tangent(n)
                     and not any(k in inputs for k, _ in _node_storages(n))}  # fmt: skip
            fresh_fw, fresh_bw = self.partition(saved_values)
            fw_deltas, bw_deltas = _inductor_peaks.plan_events(fresh_fw, fresh_bw, tangents_by_name, owned,
                                                               allocate_tangents=not self.tangents_given)  # fmt: skip
        else:
            if self.workspaces is None:
                self.workspaces = op_workspaces(list(self.joint_graph.nodes))
            ws = self.workspaces
            fw_deltas, fw_alive, _ = _liveness(fw, preexisting=inputs, fresh_inputs=None, keep_outputs=None,
                                               workspaces=ws)  # fmt: skip
            # User outputs stay; saved tensors the forward allocated are live on entry to the
            # backward (freed after their last use there); parameters and inputs pre-exist.
            user_keys = set(fw_alive) - set(saved_keys)
            bw_deltas, _, _ = _liveness(
                bw, preexisting=inputs | user_keys, fresh_inputs={} if self.tangents_given else tangents,
                keep_outputs=None, workspaces=ws,
            )  # fmt: skip
            fw_keys, bw_keys = tuple(fw._remat_event_keys), tuple(bw._remat_event_keys)
        if self.loss_peak_bytes:  # the eager loss runs between the forward and the backward
            bw_deltas = (self.loss_peak_bytes, -self.loss_peak_bytes, *bw_deltas)
        return GraphPeak(
            fw_events=tuple(fw_deltas),
            bw_events=tuple(bw_deltas),
            saved_bytes=sum(saved_keys.values()),
            recomputed=len(fw_bw_recomputed),
            fw_keys=fw_keys,
            bw_keys=bw_keys,
            recomputed_names=tuple(sorted(fw_bw_recomputed)),
        )

    def recompute_cost(self, g: GraphPeak) -> float:
        """PyTorch's runtime estimate (``estimate_runtime``, FLOPs by default) of the ops ``g`` recomputes."""
        if not hasattr(self, "_runtime_of"):
            self._runtime_of: dict[str, float] = {}
            self._by_name = {n.name: n for n in self.joint_graph.nodes}
        total = 0.0
        for name in g.recomputed_names:
            if name not in self._runtime_of:
                node = self._by_name.get(name)
                try:
                    with _dispatch_allowed():
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
    import hashlib

    return hashlib.sha256(joint_graph.python_code("self").src.encode()).hexdigest()[:16]


def step_peak(graphs: Sequence[GraphPeak], between: int = 0) -> int:
    """Peak of one step over several graphs: forwards in order, then backwards in reverse.

    ``between``: a spike between the last forward and the first backward (the
    eager loss's own peak, when no graph carries it).
    """
    running = peak = 0
    for g in graphs:
        for d in g.fw_events:
            running += d
            peak = max(peak, running)
    peak = max(peak, running + between)
    for g in reversed(graphs):
        for d in g.bw_events:
            running += d
            peak = max(peak, running)
    return peak


# ---------------------------------------------------------------------- wrapping choose_saved_values_set

_ORIGINAL: dict[str, Any] = {}
_bypass_local = threading.local()


@contextlib.contextmanager
def _bypass() -> Iterator[None]:
    """Inside the block the wrapper calls through without capturing (our own nested calls)."""
    depth = getattr(_bypass_local, "depth", 0)
    _bypass_local.depth = depth + 1
    try:
        yield
    finally:
        _bypass_local.depth = depth


def _min_cut_options(kind: str) -> Any:
    """``choose_saved_values_set``'s min-cut options: "default" (budget 1) or "more_aggressive"."""
    c = _fconfig
    opts = _partitioners.MinCutOptions(
        ban_if_used_far_apart=c.ban_recompute_used_far_apart,
        ban_if_long_fusible_chains=c.ban_recompute_long_fusible_chains,
        ban_if_materialized_backward=c.ban_recompute_materialized_backward,
        ban_if_not_in_allowlist=c.ban_recompute_not_in_allowlist,
        ban_if_reduction=c.ban_recompute_reductions,
    )
    if c.aggressive_recomputation or kind == "more_aggressive":
        opts = dataclasses.replace(opts, ban_if_used_far_apart=False, ban_if_long_fusible_chains=False,
                                   ban_if_materialized_backward=False)  # fmt: skip
    if c.aggressive_recomputation:
        opts = dataclasses.replace(opts, ban_if_not_in_allowlist=False)
    return opts


def _choose_for_peak(cap: Capture, solver: Any, knapsack_saved: list[Any], searched_min: int | None) -> list[Any]:
    """The saved set a peak-constrained solver's graph gets: its knapsack plan or one the budgets' shortcuts give.

    Besides the knapsack plan (found by :func:`search_plan` in the solver's
    call), PyTorch's budgets reach saved sets no knapsack plan gives: the
    default min-cut (budget 1), the more aggressive one, and the inputs only
    (budget 0). Among these, those whose modelled peak is within the limit are
    compared by what they recompute (PyTorch's runtime estimate of every op the
    backward runs again, candidates or not), the least winning; when none fits,
    the smallest modelled peak.
    """
    limit = solver.max_peak_bytes
    plans: list[tuple[str, list[Any]]] = [("knapsack", list(knapsack_saved))]
    with _bypass():
        for kind in ("default", "more_aggressive"):
            try:
                plans.append((kind, list(_partitioners.solve_min_cut(cap.joint_graph, cap.node_info,
                                                                     _min_cut_options(kind))[0])))  # fmt: skip
            except Exception:  # a min-cut PyTorch itself would fail on: not a plan
                continue
        plans.append(("inputs", list(cap.node_info.inputs)))
    compose = solver._step_scorer(cap.joint_graph)
    scored = []
    for kind, saved in plans:
        # What the partitioner would run: no random op recomputed (budget 0's rule for "inputs").
        saved = _rng.random_safe(cap.joint_graph, cap.node_info, saved, 0 if kind == "inputs" else 1)
        g = cap.peak(saved)
        peak = compose(g) if compose is not None else step_peak([g])
        scored.append((peak, cap.recompute_cost(g), kind, saved, g))
    fitting = [x for x in scored if x[0] <= limit]
    best = min(fitting, key=lambda x: (x[1], x[0])) if fitting else min(scored, key=lambda x: (x[0], x[1]))
    peaks = [x[0] for x in scored] + ([searched_min] if searched_min is not None else [])
    solver._graph_peaks.append(best[4])
    solver._planned(cap.joint_graph, best[4])
    choice = {
        "plan": best[2], "predicted_peak_bytes": best[0], "fits": bool(fitting), "recompute_cost": best[1],
        "min_peak_bytes": min(peaks), "saved": len(best[3]),
        "others": {x[2]: {"predicted_peak_bytes": x[0], "recompute_cost": x[1]} for x in scored},
    }  # fmt: skip
    solver.choices.append(choice)
    solver.plans[graph_key(cap.joint_graph)] = ChosenPlan(tuple(n.name for n in best[3]), best[4], choice)
    return best[3]


@dataclass(frozen=True)
class ChosenPlan:
    """A peak-constrained solver's plan for one joint graph: what it saves, its modelled peak, the choice's record.

    Kept by the solver under the graph's :func:`graph_key`, so that compiling
    the same graph again (the real compile after planning on fake tensors, or
    the user's own with ``use_solver(report.solver)``) saves the same nodes
    without searching again.
    """

    saved_names: tuple[str, ...]
    graph_peak: GraphPeak
    choice: dict[str, Any]


def _replayed_plan(solver: Any, joint_graph: Any) -> list[Any] | None:
    """The saved nodes of the plan ``solver`` already chose for a graph with ``joint_graph``'s code (None: none)."""
    plans = getattr(solver, "plans", None)
    if not plans:
        return None
    plan = plans.get(graph_key(joint_graph))
    if plan is None:
        return None
    by_name = {n.name: n for n in joint_graph.nodes}
    if any(name not in by_name for name in plan.saved_names):
        return None
    solver._graph_peaks.append(plan.graph_peak)
    solver._planned(joint_graph, plan.graph_peak)
    solver.choices.append(dict(plan.choice, replayed=True))
    return [by_name[name] for name in plan.saved_names]


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
    random-safe (:func:`_rng.random_safe`) at every budget, 0 included,
    where PyTorch returns before any solver is asked.
    """
    if getattr(_bypass_local, "depth", 0) != 0:
        return _ORIGINAL["choose"](joint_graph, node_info, memory_budget=memory_budget)
    with _cap_lock:
        sinks = list(_capture_sinks)
    solver = _peak_solver()
    cap = None
    if sinks or solver is not None:
        loc = _find_partition_locals()
        cap = Capture(joint_graph, node_info, loc.get("num_fwd_outputs"), loc.get("joint_module"))
        for s in sinks:
            s.append(cap)
    if solver is None or cap is None:
        saved = _ORIGINAL["choose"](joint_graph, node_info, memory_budget=memory_budget)
        if _keeps_random(_fconfig.activation_memory_budget_solver):
            saved = _rng.random_safe(joint_graph, node_info, saved, memory_budget)
        return saved
    replayed = _replayed_plan(solver, joint_graph)
    if replayed is not None:
        return replayed
    solver._current_capture = cap
    calls = len(solver.history)
    try:
        saved = _ORIGINAL["choose"](joint_graph, node_info, memory_budget=memory_budget)
    finally:
        solver._current_capture = None
    cap.tangent_bytes = solver._tangent_bytes
    cap.loss_peak_bytes = solver._loss_peak_bytes
    cap.tangents_given = solver._step is not None  # in a recorded step, the step makes the tangents
    searched = solver.history[-1].min_peak_bytes if len(solver.history) > calls else None
    return _choose_for_peak(cap, solver, list(saved), searched)


def _acquire_choose() -> None:
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
            _acquire_choose()
            _guarded = True


def _release_choose() -> None:
    global _cap_holds
    with _cap_lock:
        _cap_holds = max(0, _cap_holds - 1)
        if _cap_holds == 0 and _partitioners.choose_saved_values_set is _hooked_choose:
            _partitioners.choose_saved_values_set = _ORIGINAL["choose"]


def _original_choose() -> Any:
    with _cap_lock:
        if _partitioners.choose_saved_values_set is _hooked_choose:
            return _ORIGINAL["choose"]
        return _partitioners.choose_saved_values_set


@contextlib.contextmanager
def capture_graphs() -> Iterator[list[Capture]]:
    """Collect a :class:`Capture` of every joint graph partitioned inside the block."""
    sink: list[Capture] = []
    _acquire_choose()
    with _cap_lock:
        _capture_sinks.append(sink)
    try:
        yield sink
    finally:
        with _cap_lock:
            _capture_sinks.remove(sink)
        _release_choose()


# ---------------------------------------------------------------------- predict_peaks


def _capture_backend(backend: Any) -> Any:
    """The backend that captures ``backend``'s joint graphs: inductor's own, with no kernel built.

    Under ``"inductor"`` the joint graph the partitioner gets is inductor's
    (its decompositions and joint-graph passes), but the graphs it returns run
    eagerly (``compile_fx``'s ``inner_compile``): the capture needs no lowering,
    code generation or C++/Triton compile (mixer: 17 s to 2 s with inductor's
    caches cold). Any other backend as given.
    """
    if backend != "inductor":
        return backend
    from torch._functorch.aot_autograd import make_boxed_func
    from torch._inductor.compile_fx import compile_fx

    def run_eagerly(gm: Any, example_inputs: Any, **kwargs: Any) -> Any:
        return make_boxed_func(gm.forward)

    def inductor_graphs(gm: Any, example_inputs: Any) -> Any:
        return compile_fx(gm, example_inputs, inner_compile=run_eagerly)

    return inductor_graphs


def _compile_and_capture(model: Any, args: tuple, backend: Any, fake: Any = None) -> list[Capture]:
    """Compile ``model`` once (forward only, see :func:`_capture_backend`) and return its joint graphs.

    ``fake`` (a :class:`~.capture.FakeModel`): the forward runs on its fake
    tensors, so the capture allocates nothing of the step's size.
    """
    torch._dynamo.reset()
    try:
        with capture_graphs() as caps, _fconfig.patch(enable_autograd_cache=False, activation_memory_budget=1.0):
            compiled = torch.compile(model, backend=_capture_backend(backend))
            if fake is not None:
                with fake.mode:
                    compiled(*fake.args)
            else:
                compiled(*args)
    finally:
        torch._dynamo.reset()
    if not caps:
        raise ValueError(
            "no joint graph was partitioned: the backend does not use min_cut_rematerialization_partition "
            "(use aot_eager or inductor), or nothing requires grad"
        )
    return caps


# ---------------------------------------------------------------------- the peak-constrained search


@dataclass(frozen=True)
class PlanChoice:
    """What :func:`search_plan` chose for one graph."""

    recompute: tuple[int, ...]  # candidate indices the knapsack lets the min-cut recompute
    value: float  # runtime saved: the runtimes of the candidates kept
    peak_bytes: int  # the modelled peak of this graph's step
    fits: bool  # peak_bytes <= the limit
    exact: bool  # the search proved no plan saves more runtime within the limit
    evaluated: int  # plans partitioned and run through the liveness pass
    min_peak_bytes: int  # the smallest modelled peak among them
    graph_peak: GraphPeak


def search_plan(cap: Capture, candidates: Sequence[Any], runtimes: Sequence[float], memory: Sequence[float],
                limit: int, *, max_plans: int = 48, frontier_points: int = 24,
                bisect: bool = False, compose: Callable[[GraphPeak], int] | None = None) -> PlanChoice:  # fmt: skip
    """The plan that keeps the most runtime among those whose modelled peak is within ``limit``.

    A plan is a set of candidates the knapsack lets the min-cut recompute (the
    rest stay banned), turned into a saved set by ``solve_min_cut`` exactly as
    ``choose_saved_values_set`` does, and scored by :meth:`Capture.peak`.
    First the plans every budget reaches (up to ``frontier_points`` breakpoints
    of the exact runtime-memory frontier, plus "save all" and "recompute all")
    give a lower bound; then plans are enumerated in descending runtime kept
    (removal sets in ascending removed runtime, each generated once), and the
    first one that fits is optimal. The enumeration stops there, at the lower
    bound (optimal too), or after ``max_plans`` plans (``exact=False``: the best
    plan found). ``bisect=True`` halves the gap between the samples instead
    of scanning it (for costly peak models: inductor's generated code per plan).
    ``compose``: a plan's GraphPeak -> the peak it is held to (default: this
    graph's step alone; with several graphs, the whole step's).
    Random candidates are in no plan's recompute set
    (:mod:`._rng`). Deterministic: same graph, same limit, same plan.
    """
    import heapq

    from ..tradeoff._curve import frontier

    n = len(candidates)
    r = [max(0.0, float(x)) for x in runtimes]
    total = math.fsum(r)
    # Random ops are never recomputed (``_rng``): plans choose among the other candidates.
    random = set(_rng.random_indices(candidates))
    free = [i for i in range(n) if i not in random]
    seen: dict[frozenset[int], tuple[int, GraphPeak]] = {}

    def score(rec: frozenset[int]) -> tuple[int, GraphPeak]:
        hit = seen.get(rec)
        if hit is None:
            g = cap.peak(cap.saved_for_plan(candidates, rec))
            hit = seen[rec] = (compose(g) if compose is not None else step_peak([g]), g)
        return hit

    def value(rec: frozenset[int]) -> float:
        return total - math.fsum(r[i] for i in rec)

    best: tuple[float, frozenset[int]] | None = None

    def consider(rec: frozenset[int]) -> bool:
        nonlocal best
        peak, _ = score(rec)
        if peak <= limit:
            v = value(rec)
            if best is None or v > best[0] or (v == best[0] and peak < seen[best[1]][0]):
                best = (v, rec)
            return True
        return False

    everything = frozenset(free)
    for rec in (frozenset(), everything):
        consider(rec)
    if free:
        # The plans budgets reach: the exact frontier's breakpoints, ascending in value.
        # Sample them evenly, then scan every breakpoint between the best sampled one
        # that fits and the next sampled one, from the top: the first that fits there
        # is the best budget-reachable plan when the peak rises with the value
        # between samples (it need not; the enumeration below covers the rest).
        f = frontier([memory[i] for i in free], [r[i] for i in free], None)
        pts = f.memory

        def at(j: int) -> frozenset[int]:
            return everything - frozenset(free[i] for i in f.selection(pts[j]))

        k = min(len(pts), frontier_points)
        picks = sorted({round(j * (len(pts) - 1) / max(1, k - 1)) for j in range(k)}) if pts else []
        fitting = [j for j in picks if consider(at(j))]
        if not fitting and len(picks) > 1:
            fitting = _lowest_between_picks(picks, lambda j: score(at(j))[0], lambda j: consider(at(j)))
        if fitting:
            lo = max(fitting)
            above = [j for j in picks if j > lo]
            hi = min(above) if above else lo
            if bisect:
                while hi - lo > 1:  # lo fits, hi does not (or is lo): halve the gap
                    mid = (lo + hi) // 2
                    lo, hi = (mid, hi) if consider(at(mid)) else (lo, mid)
            else:
                for j in range(hi - 1, lo, -1):
                    if consider(at(j)):
                        break

    exact = True
    order = sorted(free, key=lambda i: (r[i], i))
    heap: list[tuple[float, int, tuple[int, ...]]] = [(r[order[0]], 0, (0,))] if order else []
    budget = max_plans
    while heap:
        removed, last, pos = heapq.heappop(heap)
        if best is not None and total - removed <= best[0]:
            break  # nothing left can keep more runtime than the plan in hand
        rec = frozenset(order[p] for p in pos)
        if rec not in seen:
            if budget <= 0:
                exact = False
                break
            budget -= 1
        if consider(rec):
            break  # the first plan that fits, in descending runtime kept
        if last + 1 < len(order):
            nxt = r[order[last + 1]]
            heapq.heappush(heap, (removed + nxt, last + 1, pos + (last + 1,)))
            heapq.heappush(heap, (removed - r[order[last]] + nxt, last + 1, pos[:-1] + (last + 1,)))
    min_rec = min(seen, key=lambda k: (seen[k][0], -value(k)))
    min_peak = seen[min_rec][0]
    if best is None:
        chosen, fits = min_rec, False
    else:
        chosen, fits = best[1], True
    peak, g = seen[chosen]
    return PlanChoice(recompute=tuple(sorted(chosen)), value=value(chosen), peak_bytes=peak, fits=fits,
                      exact=exact and fits, evaluated=len(seen), min_peak_bytes=min_peak,
                      graph_peak=g)  # fmt: skip


def _lowest_between_picks(picks: list[int], peak_at: Callable[[int], int],
                          fits_at: Callable[[int], bool]) -> list[int]:  # fmt: skip
    """When no sampled breakpoint fits: search the gaps beside the sampled one with the lowest peak.

    The peak need not fall as the plan keeps less (recomputing moves bytes
    into the backward): a budget between two samples can reach a lower peak
    than either (GPT-2 under inductor: 191 MiB at budget 0.02, 155 MiB at
    0.05, 170 MiB at 0.1). A ternary search narrows the two gaps beside the
    lowest sample, as if the peak were unimodal there, and stops at the
    first breakpoint that fits. Returns the breakpoints found to fit (at most one).
    """
    lowest = min(picks, key=peak_at)
    lo = max((j for j in picks if j < lowest), default=lowest)
    hi = min((j for j in picks if j > lowest), default=lowest)
    while hi - lo > 2:
        left, right = lo + (hi - lo) // 3, hi - (hi - lo) // 3
        for j in (left, right):
            if fits_at(j):
                return [j]
        if peak_at(left) <= peak_at(right):
            hi = right
        else:
            lo = left
    return [j for j in range(lo, hi + 1) if fits_at(j)][:1]


def _dataclass_dict(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.name != "graph_peak"}
