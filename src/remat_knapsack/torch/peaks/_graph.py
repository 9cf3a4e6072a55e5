"""What one plan of one joint graph peaks at: the partition PyTorch makes for a saved set, then its timeline.

For a saved set this module calls PyTorch's own partitioner pieces on the
captured joint graph, in ``min_cut_rematerialization_partition``'s order
(``_extract_fwd_bwd_modules``, ``reordering_to_mimic_autograd_engine``,
``raise_getitems``), and puts the forward and backward it gets back on one
timeline (:class:`~._step.GraphPeak`): the forward's inputs (parameters,
inputs) exist before the step; its outputs (the user's outputs and the tensors
saved for backward) outlive it; the user's outputs live to the end of the
step; the backward allocates its tangents when it starts, frees each saved
tensor after its last use there, and its outputs (the gradients) live to the
end of the step, unless the step drops them after the loss (``keep_output``
false: ``loss(model(*args)).backward()``), when they are freed before the
backward starts. Graph work only: no compile.

May import: torch, :mod:`..step`, and this package's :mod:`._liveness`,
:mod:`._inductor`, :mod:`._fork` and :mod:`._step`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch._functorch.partitioners as _partitioners

from ._fork import side_by_side
from ._inductor import plan_events
from ._liveness import is_tangent, liveness, node_storages, op_workspaces
from ._step import GraphPeak

__all__ = ["graph_peak", "graph_peaks", "partition"]


def _split_saved(saved_values: Sequence[Any]) -> tuple[list[Any], list[Any], list[Any]]:
    """A saved set as the partitioner takes it: tensors, symbolic sizes, opaque objects."""
    is_sym, is_opaque = _partitioners.is_sym_node, _partitioners.is_opaque_node
    saved = [n for n in saved_values if not is_sym(n) and not is_opaque(n)]
    return saved, [n for n in saved_values if is_sym(n)], [n for n in saved_values if is_opaque(n)]


def partition(cap: Any, saved_values: Sequence[Any]) -> tuple[Any, Any]:
    """The forward and backward graph modules the partitioner makes for ``saved_values``.

    PyTorch's own pieces, in ``min_cut_rematerialization_partition``'s order:
    ``_extract_fwd_bwd_modules``, ``reordering_to_mimic_autograd_engine``,
    ``raise_getitems``. Fresh modules on every call (inductor's passes mutate them).
    """
    saved, saved_sym, opaque = _split_saved(saved_values)
    fw, bw = _partitioners._extract_fwd_bwd_modules(
        cap.joint_module, saved, saved_sym_nodes=saved_sym, saved_opaque_nodes=opaque,
        num_fwd_outputs=cap.num_fwd_outputs,
        static_lifetime_input_nodes=cap.node_info.static_lifetime_input_nodes,
    )  # fmt: skip
    bw = _partitioners.reordering_to_mimic_autograd_engine(bw)
    return _partitioners.raise_getitems(fw), _partitioners.raise_getitems(bw)


def graph_peak(cap: Any, saved_values: Sequence[Any], backend: str | None = None) -> GraphPeak:
    """Partition ``cap``'s joint graph for ``saved_values`` and put both halves on one timeline.

    Under ``aot_eager`` (``backend``, default ``cap.backend``) the liveness pass (:mod:`._liveness`), under
    inductor the wrapper code it generates (:mod:`._inductor`). The liveness pass asked of an inductor
    graph (``backend="aot_eager"``, the guide of inductor's search) counts no op workspace: it only steers. ``cap`` is a
    :class:`~..capture.Capture`: the joint graph, how the step hands its backward the
    tangents, the eager loss's own peak between the forward and the backward, and
    whether the step keeps its outputs through the backward (``keep_output``).
    """
    return graph_peaks(cap, [saved_values], backend)[0]


def graph_peaks(cap: Any, saved_sets: Sequence[Sequence[Any]], backend: str | None = None) -> list[GraphPeak]:
    """:func:`graph_peak` of each saved set; under inductor, their lowerings side by side (:mod:`._fork`)."""
    backend = cap.backend if backend is None else backend
    plans = [_Plan(cap, list(saved), backend) for saved in saved_sets]
    if backend == "inductor":
        events = side_by_side([plan.lowering for plan in plans])
    else:
        events = [plan.liveness() for plan in plans]
    return [plan.finish(fw, bw) for plan, (fw, bw) in zip(plans, events)]


class _Plan:
    """One saved set of one joint graph, partitioned: what its timeline needs besides the backend's events."""

    def __init__(self, cap: Any, saved_values: list[Any], backend: str) -> None:
        self.cap = cap
        saved, saved_sym, opaque = _split_saved(saved_values)
        fw, bw = self.fw, self.bw = partition(cap, saved_values)
        inputs = self.inputs = {k for n in fw.graph.nodes if n.op == "placeholder" for k, _ in node_storages(n)}
        out = next(n for n in reversed(fw.graph.nodes) if n.op == "output")
        fw_outs = [o for o in out.args[0] if isinstance(o, torch.fx.Node)]
        n_saved = len(saved) + len(saved_sym) + len(opaque)
        saved_nodes = fw_outs[len(fw_outs) - n_saved:] if n_saved else []
        self.saved_keys: dict[int, int] = {}
        for n in saved_nodes:
            for k, b in node_storages(n):
                self.saved_keys[k] = b
        # The user's outputs: freed before the backward when the step drops them (``keep_output=False``),
        # unless they share a storage with a saved tensor or an input.
        self.user_nodes = fw_outs[:len(fw_outs) - n_saved]
        self.output_keys = {k: b for n in self.user_nodes for k, b in node_storages(n)
                            if k not in self.saved_keys and k not in inputs}  # fmt: skip
        tangent_nodes = [n for n in bw.graph.nodes if is_tangent(n)]
        given = cap.tangent_bytes
        if given is not None and len(given) != len(tangent_nodes):
            given = None
        self.tangents: dict[int, int] = {}
        self.tangents_by_name: dict[str, int] = {}
        for i, n in enumerate(tangent_nodes):
            for k, b in node_storages(n):
                self.tangents[k] = b if given is None else min(b, given[i])
                self.tangents_by_name[str(n.target)] = self.tangents[k]
        self.recomputed = {n.name for n in fw.graph.nodes if n.op == "call_function"} & {
            n.name for n in bw.graph.nodes if n.op == "call_function"
        }
        self.fw_keys: tuple[int, ...] = ()
        self.bw_keys: tuple[int, ...] = ()
        self.owned: set[str] = set()
        self.kept: set[str] = set()
        self.donated: list[int] = []
        if backend == "inductor":
            # The saved activations the backward frees: not parameters, inputs or their views, nor (when the
            # step keeps its outputs) a user output that is also saved, whose storage the step still holds.
            placeholders = [n for n in bw.graph.nodes if n.op == "placeholder" and not is_tangent(n)]
            self.owned = {str(n.target) for n in placeholders if not any(k in inputs for k, _ in node_storages(n))}
            user_keys = {k for n in self.user_nodes for k, _ in node_storages(n)}
            kept = user_keys if cap.keep_output else set()
            self.kept = {str(n.target) for n in placeholders if any(k in kept for k, _ in node_storages(n))}
            self.donated = _donated(bw, inputs | user_keys)

    def lowering(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The same partition, as inductor's generated code runs it (fusion, reordering, frees, reuse).

        Inductor's passes change the modules: everything read from them is read already (``__init__``)."""
        return plan_events(self.fw, self.bw, self.tangents_by_name, self.owned, kept=self.kept,
                           donated=self.donated, allocate_tangents=not self.cap.tangents_given)  # fmt: skip

    def liveness(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The FX graphs run op by op, each value freed after its last use (``aot_eager``)."""
        cap, fw, bw, inputs = self.cap, self.fw, self.bw, self.inputs
        if cap.workspaces is None and cap.backend == "aot_eager":
            cap.workspaces = op_workspaces(list(cap.joint_graph.nodes))
        ws = cap.workspaces or {}
        fw_deltas, fw_alive, _ = liveness(fw, preexisting=inputs, fresh_inputs=None, keep_outputs=None,
                                          workspaces=ws)  # fmt: skip
        # User outputs stay; saved tensors the forward allocated are live on entry to the
        # backward (freed after their last use there); parameters and inputs pre-exist.
        user_keys = set(fw_alive) - set(self.saved_keys)
        if cap.keep_output:  # a kept output that is also saved (or a view of it is) lives to the end of the step
            user_keys |= {k for n in self.user_nodes for k, _ in node_storages(n) if k not in inputs}
        bw_deltas, _, _ = liveness(
            bw, preexisting=inputs | user_keys, fresh_inputs={} if cap.tangents_given else self.tangents,
            keep_outputs=None, workspaces=ws,
        )  # fmt: skip
        self.fw_keys, self.bw_keys = tuple(fw._remat_event_keys), tuple(bw._remat_event_keys)
        return tuple(fw_deltas), tuple(bw_deltas)

    def finish(self, fw_deltas: tuple[int, ...], bw_deltas: tuple[int, ...]) -> GraphPeak:
        """The plan's :class:`GraphPeak`: its events, and the eager loss between forward and backward."""
        cap = self.cap
        dropped = 0 if cap.keep_output else sum(self.output_keys.values())
        if cap.loss_peak_bytes and dropped and cap.loss_phases is not None:
            # the eager loss's forward, the outputs dropped (the loss saved none), then the loss's backward
            forward, held, backward = cap.loss_phases
            bw_deltas = (forward, held - forward, -dropped, backward - held, -backward, *bw_deltas)
            dropped = 0
        elif cap.loss_peak_bytes:  # the eager loss runs between the forward and the backward
            bw_deltas = (cap.loss_peak_bytes, -cap.loss_peak_bytes, -dropped, *bw_deltas)
            dropped = 0
        # else: the loss is inside the graphs; the step drops the outputs before its first backward (step_peak)
        return GraphPeak(
            tangent_bytes=0 if cap.tangents_given else sum(self.tangents.values()),
            dropped_bytes=dropped,
            input_grad_bytes=_input_grad_bytes(cap),
            fw_events=tuple(fw_deltas),
            bw_events=tuple(bw_deltas),
            saved_bytes=sum(self.saved_keys.values()),
            recomputed=len(self.recomputed),
            fw_keys=self.fw_keys,
            bw_keys=self.bw_keys,
            recomputed_names=tuple(sorted(self.recomputed)),
        )


def _donated(bw: Any, forward_keys: set[int]) -> list[int]:
    """The indices of ``bw``'s placeholders that aot_autograd donates to inductor's backward
    (``torch._functorch.config.donated_buffer``): the saved activations whose storage no forward input or
    user output (``forward_keys``) nor gradient shares, so the backward may write over them once read."""
    import torch._functorch.config as functorch_config

    if not functorch_config.donated_buffer:
        return []
    out = next(n for n in reversed(bw.graph.nodes) if n.op == "output")
    aliased = forward_keys | {k for n in out.all_input_nodes for k, _ in node_storages(n)}
    placeholders = [n for n in bw.graph.nodes if n.op == "placeholder"]
    return [i for i, n in enumerate(placeholders) if not is_tangent(n) and isinstance(n.meta.get("val"), torch.Tensor)
            and node_storages(n) and not any(k in aliased for k, _ in node_storages(n))]  # fmt: skip


def _input_grad_bytes(cap: Any) -> int:
    """Bytes of the joint graph's gradients for inputs that are not parameters or buffers (static inputs)."""
    joint = cap.joint_graph
    primals = [n for n in joint.nodes if n.op == "placeholder" and "primals" in n.name]
    out = next(n for n in reversed(joint.nodes) if n.op == "output")
    grads = list(out.args[0])[cap.num_fwd_outputs:]
    static = set(cap.node_info.static_lifetime_input_nodes or ())
    total = 0
    for primal, grad in zip(primals, grads):
        if isinstance(grad, torch.fx.Node) and primal not in static:
            total += sum(b for _, b in node_storages(grad))
    return total

