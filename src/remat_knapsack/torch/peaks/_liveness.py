"""The peak model under ``aot_eager``: a liveness pass over the forward and backward FX graphs.

``aot_eager`` runs each graph op by op: a value is allocated by its op and
freed right after its last use. :func:`liveness` replays one graph that way,
with sizes from each node's ``meta['val']`` (fake tensors: views share a
storage and cost nothing) as the device's allocator counts them, and returns
its allocation deltas in program order. :func:`op_workspaces` measures what an
op allocates within itself (convolution backward, attention), once per
distinct op and shapes, so that the pass adds it as a spike on top of the op's
outputs.

May import: torch and :mod:`..step` (the allocator's rounding, the workspace size cap).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from ..step import allocated_bytes, made_up_tensor, op_cost, over_workspace_cap

__all__ = ["dispatch_allowed", "has_symbolic_sizes", "is_tangent", "liveness", "node_storages", "op_workspaces"]


@contextlib.contextmanager
def dispatch_allowed() -> Iterator[None]:
    """Lift ``no_dispatch()`` (the FLOP counter and made-up tensors need the Python key) for the block."""
    keys = [torch._C.DispatchKey.Python, torch._C.DispatchKey.PythonTLSSnapshot]
    was = [torch._C._dispatch_tls_is_dispatch_key_excluded(k) for k in keys]
    try:
        for k in keys:
            torch._C._dispatch_tls_set_dispatch_key_excluded(k, False)
        yield
    finally:
        for k, w in zip(keys, was):
            torch._C._dispatch_tls_set_dispatch_key_excluded(k, w)


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


def node_storages(node: Any) -> list[tuple[int, int]]:
    out = []
    for t in _tensors(node.meta.get("val")):
        s = _storage(t)
        if s is not None:
            out.append(s)
    return out


#: Added to a storage identity for a new allocation that a recomputed node makes (see :func:`_graph_storages`).
_RECOMPUTED = 1 << 62


def _graph_storages(nodes: Sequence[Any], preexisting: set[int]) -> dict[Any, list[tuple[int, int]]]:
    """Each node's storages as it runs, keyed so that a recomputation is a new allocation.

    The partitioner copies ``meta['val']`` from the joint graph, so an op the backward recomputes has the
    fake storage of the forward's op: when the forward's value is alive (a user output, or a saved view of
    it), the recomputation would look like the same storage and allocate nothing, yet it allocates anew.
    A node whose storage was already seen (an input, an earlier node) while none of its own inputs has it
    (it is no view or in-place op of them) gets a key of its own, and its views inherit it.
    """
    out: dict[Any, list[tuple[int, int]]] = {}
    fake: dict[Any, list[tuple[int, int]]] = {}  # the fake storages, as ``meta['val']`` has them
    seen = set(preexisting)
    for n in nodes:
        own = fake[n] = node_storages(n)
        if n.op != "call_function":
            out[n] = own
            seen.update(k for k, _ in own)
            continue
        mapped = []
        for key, nbytes in own:
            inherited = None
            for m in n.all_input_nodes:
                orig = fake.get(m) or node_storages(m)
                for (ko, _), (km, _) in zip(orig, out.get(m, orig)):
                    if ko == key:
                        inherited = km
                        break
                if inherited is not None:
                    break
            if inherited is not None:
                mapped.append((inherited, nbytes))
            elif key in seen:
                mapped.append((key | _RECOMPUTED, nbytes))
            else:
                mapped.append((key, nbytes))
        out[n] = mapped
        seen.update(k for k, _ in own)
    return out


def liveness(
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
    storages = _graph_storages(nodes, preexisting)
    sizes: dict[int, int] = {}
    last: dict[int, int] = {}
    end = len(nodes) + 1
    for n in nodes:
        for key, nbytes in storages[n]:
            sizes[key] = max(sizes.get(key, 0), nbytes)
            use = max([index[n]] + [index[u] for u in n.users if u.op != "output"])
            last[key] = max(last.get(key, -1), use)
    output = next((n for n in reversed(nodes) if n.op == "output"), None)
    outs = output.args[0] if output is not None else ()
    outs = outs if isinstance(outs, (list, tuple)) else (outs,)
    for pos, o in enumerate(outs):
        if isinstance(o, torch.fx.Node) and (keep_outputs is None or pos in keep_outputs):
            for key, _ in storages[o]:
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
            for key, _nbytes in storages[n]:
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
            for key, nbytes in storages[n]:
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
    gm._remat_event_keys = keys  # read by ._graph.graph_peak
    return deltas, alive, freed_inputs


def _signature(node: Any) -> Any:
    """What an op's workspace depends on: the op and its arguments' shapes, strides and dtypes."""

    def dims(values: Any) -> tuple[Any, ...]:  # a symbolic size (a block compiled with dynamic shapes) by its name
        return tuple(d if isinstance(d, int) else str(d) for d in values)

    def one(a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            v = a.meta.get("val")
            if isinstance(v, torch.Tensor):
                return ("T", dims(v.shape), dims(v.stride()), str(v.dtype))
            return ("V", repr(v))
        if isinstance(a, (list, tuple)):
            return tuple(one(x) for x in a)
        return repr(a)

    return (str(node.target), one(tuple(node.args)), one(tuple(sorted(node.kwargs.items()))))


def has_symbolic_sizes(node: Any) -> bool:
    """Whether a tensor among ``node``'s arguments or outputs has a symbolic size or stride (a graph compiled
    with dynamic shapes)."""
    values = [a.meta.get("val") for a in node.all_input_nodes] + [node.meta.get("val")]
    return any(not isinstance(d, int) for v in values for t in _tensors(v) for d in (*t.shape, *t.stride()))


def _real(v: Any) -> Any:
    """A real tensor like the fake ``v`` (random floats, zero integers), or ``v`` itself."""
    if not isinstance(v, torch.Tensor):
        return v
    return made_up_tensor(v.shape, v.stride(), v.dtype, "cpu")


def _under_cap(todo: dict[Any, Any]) -> dict[Any, Any]:
    """The ops of ``todo`` (signature -> node) small enough to run for their workspace; a RuntimeWarning names
    the others (:func:`~..step.over_workspace_cap`: a large model's matmuls and logits)."""
    import warnings

    kept, over = {}, []

    def val(a: Any) -> Any:
        return a.meta.get("val") if isinstance(a, torch.fx.Node) else a

    for sig, n in todo.items():
        try:
            nbytes, flops = op_cost(n.target, torch.fx.node.map_aggregate(n.args, val),
                                    torch.fx.node.map_aggregate(n.kwargs, val), n.meta.get("val"))  # fmt: skip
        except Exception:  # symbolic sizes: run as before (and fail there, counting 0)
            nbytes, flops = 0, 0
        if over_workspace_cap(nbytes, flops, "cpu"):
            over.append(f"{n.target} ({nbytes / 2**20:.0f} MiB, {flops:.2g} FLOPs)")
        else:
            kept[sig] = n
    if over:
        warnings.warn(f"workspace not measured for {len(over)} op(s) over the size cap (WORKSPACE_MAX_BYTES, "
                      f"WORKSPACE_MAX_FLOPS), counted 0: {', '.join(over[:8])}", RuntimeWarning, stacklevel=4)
    return kept


def op_workspaces(nodes: Sequence[Any]) -> dict[Any, int]:
    """Bytes each op allocates beyond its outputs while it runs (its workspace), by :func:`_signature`.

    Each distinct signature is run once on real tensors shaped like its fake
    arguments (CPU), all inside one ``torch.profiler`` session; the workspace is
    the highest running total of the allocator's events during the op minus
    what is still allocated when it returns (its outputs). CPU kernels such as
    ``convolution_backward`` (reordered copies of their inputs) and attention
    allocate such buffers; most ops none. An op that fails on made-up inputs
    (or has symbolic shapes, or is not on the CPU) counts 0, and so does one over
    the size cap (:mod:`..step._cap`), named in one ``RuntimeWarning``.
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
        if has_symbolic_sizes(n):  # no real tensor of a symbolic size: counts 0
            continue
        todo.setdefault(_signature(n), n)
    todo = _under_cap(todo)
    if not todo:
        return {}
    ctx = contextlib.ExitStack()
    with ctx:
        try:
            from torch._subclasses.fake_tensor import unset_fake_temporarily

            ctx.enter_context(unset_fake_temporarily())
        except ImportError:  # pragma: no cover
            pass
        ctx.enter_context(dispatch_allowed())
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


def is_tangent(node: Any) -> bool:
    return node.op == "placeholder" and "tangents" in node.name
