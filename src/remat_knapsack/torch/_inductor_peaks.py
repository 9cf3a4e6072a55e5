"""The peak model under inductor: each graph's memory timeline as inductor's own scheduler plans it.

Inductor fuses chains of pointwise ops and reductions into kernels, so their
intermediates never exist; it reorders the kernels for peak memory and frees
each buffer after its last use. A liveness pass over the FX graph (what
``aot_eager`` runs, :mod:`._peaks`) sees none of that and over-predicts
inductor's peak by 12-36%. This module asks inductor instead: for a plan's
forward and backward graph modules it runs inductor's compile pipeline
(``compile_fx_inner``: decompositions, post-grad passes, lowering, fusion and
the peak-memory reordering) up to the scheduler, stops before any code is
generated, and reads the scheduled buffers' sizes and lifetimes from
``torch._inductor.memory.compute_memory_timeline``, the timeline inductor's
``reorder_for_peak_memory`` itself minimises.

Cost: about one second per graph on a 4-layer decoder (d = 256), against ten
to thirty for a compile with code generation.

How a step is put together (:func:`plan_events`): the forward's inputs
(parameters, the user's inputs) exist before the step; its buffers are
allocated at their kernel and freed after their last reader, its outputs (the
user's outputs and the tensors saved for backward) outlive it. The backward
starts with its tangents allocated; each input the forward allocated (a saved
activation, a tangent) is freed after its last reader, as inductor's backward
does; parameters and their views are never freed; its outputs (the gradients)
outlive it.

May import: torch. Imports nothing else of the package (:mod:`._peaks` calls it).
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["Timeline", "is_inductor_compile", "plan_events", "schedule"]

_lock = threading.Lock()
#: The CUDA caching allocator's block size (``_peaks.CUDA_BLOCK``; restated: this module imports no other).
CUDA_BLOCK = 512
_local = threading.local()


@dataclass(frozen=True)
class Timeline:
    """One graph as inductor schedules it.

    ``deltas[t]``: bytes allocated at step ``t`` (a kernel or extern call) less
    those freed after step ``t - 1``, for the buffers inductor computes.
    ``input_frees``: ``(input name, step after which it is freed, bytes)`` for
    each graph input inductor frees after its last reader.
    """

    deltas: tuple[int, ...]
    input_frees: tuple[tuple[str, int, int], ...]


class _Scheduled(Exception):
    """Raised in place of code generation once the schedule is read (caught by :func:`schedule`)."""


def _read_timeline(graph: Any) -> Timeline:
    """The timeline of a ``GraphLowering`` whose scheduler has run."""
    from torch._inductor import memory
    from torch.utils._ordered_set import OrderedSet

    scheduler = graph.scheduler
    nodes = scheduler.nodes
    inputs = OrderedSet(graph.graph_inputs.keys())
    outputs = OrderedSet(graph.get_output_names())
    freeable = memory.get_freeable_input_buf(nodes, inputs)
    memory.assign_memory_planning_info_for_scheduler_buffers(nodes, scheduler.name_to_buf)
    memory.assign_memory_planning_info_for_scheduler_nodes(nodes, scheduler.name_to_fused_node,
                                                           scheduler.name_to_buf, freeable)  # fmt: skip
    infos, _, _ = memory.compute_memory_timeline(nodes, freeable, outputs)
    cuda = "cuda" in getattr(graph, "device_types", ())

    def counted(nbytes: int) -> int:  # the CUDA caching allocator rounds each block up to 512 bytes
        return -(-int(nbytes) // CUDA_BLOCK) * CUDA_BLOCK if cuda and nbytes > 0 else int(nbytes)

    deltas = [0] * (len(nodes) + 1)
    input_frees = []
    for info in infos:
        if isinstance(info.buffer, memory.FreeableInputBuffer):
            if info.end_step != -1:
                input_frees.append((info.buffer.get_name(), info.end_step, counted(info.size_free)))
            continue
        deltas[info.start_step] += counted(info.size_alloc)
        if info.end_step != -1:
            deltas[info.end_step + 1] -= counted(info.size_free)
    return Timeline(deltas=tuple(deltas), input_frees=tuple(input_frees))


def _schedule_instead_of_codegen(self: Any) -> Any:
    """``GraphLowering.codegen`` while :func:`schedule` runs: schedule, read the timeline, stop."""
    if not getattr(_local, "active", False):
        return _ORIGINAL_CODEGEN(self)
    self.init_wrapper_code()
    self._update_scheduler()
    _local.timeline = _read_timeline(self)
    raise _Scheduled


_ORIGINAL_CODEGEN: Any = None


def schedule(gm: Any, *, is_backward: bool) -> Timeline:
    """Inductor's schedule of graph module ``gm`` (a forward or a backward), without code generation.

    ``gm``'s placeholders carry fake tensors (``meta['val']``), as the
    partitioner's modules do; they are the example inputs. inductor's FX graph
    cache is off for the call (a cached graph skips the scheduler). ``gm`` is
    changed by inductor's passes: pass a fresh module.
    """
    global _ORIGINAL_CODEGEN
    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx_inner
    from torch._inductor.graph import GraphLowering

    example = [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]
    with _lock:
        if _ORIGINAL_CODEGEN is None:
            _ORIGINAL_CODEGEN = GraphLowering.codegen
            GraphLowering.codegen = _schedule_instead_of_codegen
    _local.active, _local.timeline = True, None
    try:
        with inductor_config.patch(fx_graph_cache=False):
            compile_fx_inner(gm, example, is_backward=is_backward)
    except Exception:
        if _local.timeline is None:
            raise
    finally:
        _local.active = False
    timeline, _local.timeline = _local.timeline, None
    if timeline is None:  # pragma: no cover - a pipeline that generated code without asking
        raise RuntimeError("inductor compiled the graph without running its scheduler")
    return timeline


def plan_events(fw: Any, bw: Any, tangent_bytes: dict[str, int], owned: set[str], *,
                allocate_tangents: bool = True) -> tuple[tuple[int, ...], tuple[int, ...]]:  # fmt: skip
    """Forward and backward allocation deltas of one plan's graphs under inductor (see the module doc).

    ``tangent_bytes``: the bytes the autograd engine hands each tangent input
    of ``bw``, by name (a loss such as ``out.sum()`` hands an expanded
    scalar). ``owned``: the names of ``bw``'s other inputs that the step
    allocated (saved activations); parameters and their views are not among
    them and are never freed. ``allocate_tangents=False``: the tangents exist
    before the backward starts (made by the step around it); they are only freed.
    """
    fw_time = schedule(fw, is_backward=False)
    bw_time = schedule(bw, is_backward=True)
    deltas = list(bw_time.deltas) + [0]
    for name, end, size in bw_time.input_frees:
        if name in tangent_bytes:
            deltas[end + 1] -= min(size, tangent_bytes[name])
        elif name in owned:
            deltas[end + 1] -= size
    start = sum(tangent_bytes.values()) if allocate_tangents else 0
    return tuple(fw_time.deltas), (start, *deltas)


def is_inductor_compile() -> bool:
    """Whether the partition being run belongs to an inductor compile (``compile_fx`` is on the stack)."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "compile_fx" and code.co_filename.endswith(("_inductor/compile_fx.py",
                                                                       "_inductor\\compile_fx.py")):  # fmt: skip
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False
