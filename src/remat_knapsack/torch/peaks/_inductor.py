"""The peak model under inductor: each graph's memory timeline as the code inductor generates runs it.

Inductor fuses chains of pointwise ops and reductions into kernels, so their
intermediates never exist; it reorders the kernels for peak memory, frees
each buffer after its last use and hands a freed buffer to a later one of
the same size. A liveness pass over the FX graph (what ``aot_eager`` runs,
:mod:`._liveness`) sees none of that and over-predicts inductor's peak by
12-36%. The scheduler's own estimate
(``torch._inductor.memory.compute_memory_timeline``) misses what the
wrapper code does after it: on the CPU, the C++ backend gathers consecutive
nodes into one kernel, allocates all their outputs before its call and
frees what they read after it (a conv net's backward: 30% under); buffers
are reused in place and across kernels. This module reads the wrapper
instead: for a plan's forward and backward graph modules it runs inductor's
compile pipeline (``compile_fx_inner``: decompositions, post-grad passes,
lowering, fusion, the peak-memory reordering and the wrapper's code
generation and buffer-reuse planning), stops before any kernel is compiled,
and walks the wrapper's allocation, reuse and free lines in program order.
The backward is lowered for the strides inductor gave the forward's saved
outputs (channels-last convolutions), as aot_autograd does. Vectorisation
is turned off for the call: it changes no allocation and costs a third of
the time.

Cost: one to two seconds per graph on a 4-layer decoder (d = 256) or a
4-block conv net, against ten to thirty for a compile that builds the kernels.

How a step is put together (:func:`plan_events`): the forward's inputs
(parameters, the user's inputs) exist before the step; its buffers are
allocated at their kernel and freed after their last reader, its outputs (the
user's outputs and the tensors saved for backward) outlive it. The backward
starts with its tangents allocated; each input the forward allocated (a saved
activation, a tangent) is freed after its last reader, as inductor's backward
does; parameters and their views are never freed; its outputs (the gradients)
outlive it.

May import: torch and :mod:`..step` (:mod:`._graph` calls it).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..step import (
    CUDA_BLOCK,
    WORKSPACE_MAX_BYTES,
    WORKSPACE_MAX_FLOPS,
    made_up_tensor,
    op_cost,
    over_workspace_cap,
    profile_timeline,
)

__all__ = ["Timeline", "extern_workspace", "is_inductor_compile", "plan_events", "timeline"]

_lock = threading.Lock()
_local = threading.local()


@dataclass(frozen=True)
class Timeline:
    """One graph as inductor's generated code allocates and frees.

    ``deltas[t]``: the bytes step ``t`` of the wrapper allocates (positive)
    or frees (negative), for the buffers inductor computes.
    ``input_frees``: ``(input name, step after which it is freed, bytes)`` for
    each graph input inductor frees after its last reader (or after the last
    reader of the output that took its storage over).
    ``output_strides``: ``(output name, strides)`` for each tensor output whose
    layout inductor fixed (a forward's saved activations: with layout
    optimisation, convolutions' outputs are channels-last, and the backward is
    compiled for those strides).
    """

    deltas: tuple[int, ...]
    input_frees: tuple[tuple[str, int, int], ...]
    output_strides: tuple[tuple[str, tuple[int, ...]], ...] = ()
    #: Names of the outputs whose storage the graph allocated (not an input's, nor a view of one): with
    #: layout optimisation, a weight saved for backward is a channels-last copy, which the backward frees.
    fresh_outputs: tuple[str, ...] = ()


class _WrapperRead(Exception):
    """Raised in place of building the kernels once the wrapper's timeline is read (caught by :func:`timeline`)."""


def _output_strides(graph: Any, names: Sequence[str]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """``(name, strides)`` of each output of a lowered graph with static strides (``names``: the outputs' names).

    What aot_autograd reads back from inductor's forward compile
    (``TracingContext.report_output_strides``) to restride the backward's saved inputs.
    """
    from torch._inductor.ir import IRNode

    found = []
    for name, out in zip(names, graph.graph_outputs or ()):
        if name is None or not isinstance(out, IRNode) or not out.has_tensor_output():
            continue
        try:
            found.append((name, tuple(int(s) for s in out.get_layout().stride)))
        except TypeError:  # a symbolic stride: left as traced
            continue
    return tuple(found)


#: Workspace bytes of each fallback kernel measured so far, by :func:`_kernel_signature`.
_WORKSPACES: dict[Any, int] = {}
#: Per device: the most bytes a fallback kernel's input and output storages may hold together, and the most
#: FLOPs it may take, for it to be run for its workspace (the size cap of ``eager._workspace``, same values).
#: Over either, it counts 0 and a RuntimeWarning names it (once per signature).
MAX_EXTERN_BYTES = WORKSPACE_MAX_BYTES  # the cap every peak model shares (:mod:`..step._cap`)
MAX_EXTERN_FLOPS = WORKSPACE_MAX_FLOPS


def _kernel_signature(node: Any) -> Any:
    """A fallback kernel's op and its inputs' sizes, strides and dtypes and its constant arguments."""
    layouts = tuple((tuple(int(d) for d in x.get_size()), tuple(int(d) for d in x.get_stride()), str(x.get_dtype()))
                    for x in node.inputs)  # fmt: skip
    return str(node.op_overload), layouts, repr(node.constant_args), str(node.get_device())


def extern_workspace(node: Any) -> int:
    """Bytes an aten op inductor calls as a fallback allocates beyond its outputs while it runs.

    CPU kernels such as attention's and convolution's backward allocate
    scratch buffers of the size of an output; the wrapper does not see them.
    Measured once per :func:`_kernel_signature` by running the op on real
    tensors of the inductor layouts of its inputs: on CUDA from the
    allocator's peak, on the CPU from ``torch.profiler``'s memory events.
    0 for any other kernel, symbolic sizes, or an op that fails on made-up inputs.
    An op whose inputs and outputs hold more than :data:`MAX_EXTERN_BYTES` or
    that takes more than :data:`MAX_EXTERN_FLOPS` (its outputs and FLOPs from a
    run on meta tensors) is not run: 0, with a ``RuntimeWarning`` naming it
    (a large model's attention on the CPU: gigabytes and minutes of compute).
    """
    from torch._inductor import ir

    if not isinstance(node, ir.FallbackKernel) or not isinstance(node.op_overload, torch._ops.OpOverload):
        return 0
    try:
        signature = _kernel_signature(node)
    except (TypeError, AttributeError, NotImplementedError):  # symbolic sizes, or an input with no layout
        return 0
    if signature not in _WORKSPACES:
        _WORKSPACES[signature] = _measure_workspace(node)
    return _WORKSPACES[signature]


def _measure_workspace(node: Any) -> int:
    """Run ``node``'s op once on real tensors of its inputs' layouts: its peak above its outputs (0 if it fails)."""
    from torch._inductor import ir
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    from torch.utils._pytree import tree_map

    device = node.get_device() or torch.device("cpu")
    if _over_cap(node, device.type):
        return 0

    def real(x: Any) -> Any:
        if not isinstance(x, ir.IRNode):
            return x
        return made_up_tensor(x.get_size(), x.get_stride(), x.get_dtype(), device)

    outputs: list[Any] = []  # held, so that the step ends with its outputs still allocated
    with unset_fake_temporarily(), torch.no_grad():
        try:
            args, kwargs = tree_map(real, node.unflatten_args(node.inputs, node.constant_args))
            if device.type == "cuda":
                torch.cuda.synchronize(device)
                torch.cuda.reset_peak_memory_stats(device)
                outputs.append(node.op_overload(*args, **kwargs))
                torch.cuda.synchronize(device)
                return max(0, torch.cuda.max_memory_allocated(device) - torch.cuda.memory_allocated(device))
            run = profile_timeline(lambda: outputs.append(node.op_overload(*args, **kwargs)), [], "cpu")
        except Exception:
            return 0
    return max(0, run.peak_bytes - sum(nbytes for _, nbytes in run.events))


def _over_cap(node: Any, device: str) -> bool:
    """Whether ``node``'s op is over :data:`MAX_EXTERN_BYTES` or :data:`MAX_EXTERN_FLOPS` (warned), from a meta run."""
    from torch._inductor import ir
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    from torch.utils._pytree import tree_map

    def meta(x: Any) -> Any:
        if not isinstance(x, ir.IRNode):
            return x
        return torch.empty_strided([int(d) for d in x.get_size()], [int(d) for d in x.get_stride()],
                                   dtype=x.get_dtype(), device="meta")  # fmt: skip

    with unset_fake_temporarily(), torch.no_grad():
        try:
            args, kwargs = tree_map(meta, node.unflatten_args(node.inputs, node.constant_args))
            out = node.op_overload(*args, **kwargs)
        except Exception:  # no meta kernel: measured as before
            return False
        size, flops = op_cost(node.op_overload, args, kwargs, out)
    if not over_workspace_cap(size, flops, device):
        return False
    import warnings

    cap_bytes, cap_flops = MAX_EXTERN_BYTES.get(device, 0), MAX_EXTERN_FLOPS.get(device, 0)
    warnings.warn(f"workspace not measured for {node.op_overload} over the size cap on {device} "
                  f"({size / 2**20:.0f} MiB of inputs and outputs, {flops:.2g} FLOPs; MAX_EXTERN_BYTES "
                  f"{cap_bytes / 2**20:.0f} MiB, MAX_EXTERN_FLOPS {cap_flops:.2g}): it counts 0", RuntimeWarning,
                  stacklevel=4)  # fmt: skip
    return True


def _storage_bytes(graph: Any, buffer: Any) -> int:
    """Bytes of the storage inductor allocates for ``buffer`` (0 for a symbolic size)."""
    from torch._inductor.utils import get_dtype_size

    try:
        return int(graph.get_allocation_storage_size(buffer)) * get_dtype_size(buffer.get_dtype())
    except (TypeError, AttributeError):  # a symbolic size, or no layout
        return 0


def _read_wrapper_timeline(graph: Any) -> Timeline:
    """The timeline of the wrapper code inductor generates, once its buffer reuse is planned.

    Each allocation, reuse and free the generated ``call`` makes is a step,
    in program order: a kernel group's outputs allocated before its call,
    the buffers it last read freed after it, a freed buffer taken over by a
    later one of the same size, an input buffer (a donated saved activation)
    taken over by an output.
    """
    from torch._inductor import ir
    from torch._inductor.codegen import wrapper as w

    cuda = "cuda" in getattr(graph, "device_types", ())

    def counted(nbytes: int) -> int:  # the CUDA caching allocator rounds each block up to 512 bytes
        return -(-int(nbytes) // CUDA_BLOCK) * CUDA_BLOCK if cuda and nbytes > 0 else int(nbytes)

    multi: dict[str, list[Any]] = {}  # an extern kernel with several outputs: its outputs' buffers
    for buffer in graph.buffers:
        if isinstance(buffer, ir.MultiOutput) and buffer.inputs:
            multi.setdefault(buffer.inputs[0].get_name(), []).append(buffer)
    inputs = graph.graph_inputs
    live: dict[str, int] = {}  # buffer name -> bytes it holds
    origin: dict[str, str] = {}  # buffer name -> the graph input whose storage it took over
    deltas: list[int] = [0]
    input_frees: list[tuple[str, int, int]] = []

    def free_input(name: str) -> None:  # a step of its own; plan_events decides whether it frees memory
        deltas.append(0)
        input_frees.append((name, len(deltas) - 2, _storage_bytes(graph, inputs[name])))

    def release(name: str) -> None:
        if name in origin:
            free_input(origin.pop(name))
        elif name in live:
            deltas.append(-live.pop(name))

    for line in graph.wrapper_code.lines:
        if isinstance(line, w.AllocateLine):
            live[line.node.get_name()] = size = counted(_storage_bytes(graph, line.node))
            deltas.append(size)
        elif isinstance(line, w.ExternKernelAllocLine):
            outs = multi.get(line.node.get_name(), [line.node])
            for out in outs:
                if out.get_name() not in graph.removed_buffers:
                    live[out.get_name()] = size = counted(_storage_bytes(graph, out))
                    deltas.append(size)
            workspace = counted(extern_workspace(line.node))
            if workspace:  # a spike on top of the outputs while the kernel runs
                deltas += [workspace, -workspace]
        elif isinstance(line, w.ReuseLine):
            old, new = line.node.get_name(), line.reused_as.get_name()
            if old in inputs:
                origin[new] = old
            elif old in origin:
                origin[new] = origin.pop(old) if line.delete_old else origin[old]
            elif old in live:  # kept under both names (rare): the bytes go with the old name
                live[new] = live.pop(old) if line.delete_old else 0
        elif isinstance(line, w.FreeIfNotReusedLine) and not line.is_reused:
            release(line.node.get_name())
        elif isinstance(line, w.FreeLine):
            name = line.node.get_name()
            if name in inputs:
                free_input(name)
            else:
                release(name)
    # The wrapper drops its trailing frees ("pointless" lines): the function's return frees those
    # buffers, and the inputs it still holds (its caller cleared the argument list), all but the outputs.
    outputs = {_buffer_name(out) for out in graph.graph_outputs or ()}
    for name in [n for n in live if n not in outputs]:
        deltas.append(-live.pop(name))
    for name in [n for n in origin if n not in outputs]:
        free_input(origin.pop(name))
    freed = {name for name, _, _ in input_frees}
    for name in inputs:
        if name not in freed and name not in outputs and name not in origin.values():
            free_input(name)
    deltas.append(0)
    names = getattr(_local, "output_names", ())
    fresh = tuple(name for name, out in zip(names, graph.graph_outputs or ())
                  if name is not None and _buffer_name(out) in live)  # fmt: skip
    return Timeline(deltas=tuple(deltas), input_frees=tuple(input_frees),
                    output_strides=_output_strides(graph, names), fresh_outputs=fresh)  # fmt: skip


def _buffer_name(node: Any) -> str | None:
    """The name of the buffer whose storage an output of a lowered graph is (through views), if any."""
    try:
        return node.get_name()
    except (AttributeError, NotImplementedError):
        return None


def _read_instead_of_codegen(self: Any) -> Any:
    """``GraphLowering.codegen`` while :func:`timeline` runs: generate the wrapper, read it, stop.

    The scheduler's code generation emits the kernels' sources (not built)
    and the wrapper's lines; the wrapper's buffer-reuse planning runs as in a
    compile. Nothing is compiled or loaded.
    """
    if not getattr(_local, "active", False):
        return _ORIGINAL_CODEGEN(self)
    self.init_wrapper_code()
    self._update_scheduler()
    self.wrapper_code.push_codegened_graph(self)
    try:
        self.scheduler.codegen()
        self.wrapper_code.run_wrapper_ir_passes(self.is_inference)
        _local.timeline = _read_wrapper_timeline(self)
    finally:
        self.wrapper_code.pop_codegened_graph()
    raise _WrapperRead


_ORIGINAL_CODEGEN: Any = None
_ORIGINAL_DONATED: Any = None


def _donated_idxs() -> Any:
    """``torch._inductor.graph.get_donated_idxs`` while it is patched: during our lowering of a backward, the
    donated inputs :func:`timeline` was given; otherwise inductor's own answer."""
    if getattr(_local, "active", False):
        return list(getattr(_local, "donated", ())) or None
    return _ORIGINAL_DONATED()


def timeline(gm: Any, *, is_backward: bool, strides: Sequence[tuple[str, tuple[int, ...]]] = (),
             donated: Sequence[int] = ()) -> Timeline:  # fmt: skip
    """The memory timeline of the code inductor generates for graph module ``gm`` (a forward or a backward).

    ``gm``'s placeholders carry fake tensors (``meta['val']``), as the
    partitioner's modules do; they are the example inputs. ``strides``:
    ``(placeholder name, strides)`` to give those inputs instead of their
    traced strides (the forward's :attr:`Timeline.output_strides`, as
    aot_autograd restrides a backward's saved inputs). inductor's FX graph
    cache is off for the call (a cached graph skips code generation), and so is
    vectorisation (it changes no allocation and costs a third of the time). ``gm`` is
    changed by inductor's passes: pass a fresh module. ``donated``: the indices
    of a backward's placeholders that are donated buffers (saved activations no
    input, user output or gradient aliases, which inductor may write over once
    read, as aot_autograd tells it).
    """
    global _ORIGINAL_CODEGEN, _ORIGINAL_DONATED
    import torch._inductor.config as inductor_config
    import torch._inductor.graph as inductor_graph
    from torch._inductor.compile_fx import compile_fx_inner
    from torch._inductor.graph import GraphLowering

    restride = dict(strides)
    example = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        val = node.meta.get("val")
        if node.name in restride and isinstance(val, torch.Tensor) and tuple(val.stride()) != restride[node.name]:
            val = val.as_strided(val.size(), restride[node.name])
        example.append(val)
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    outputs = output.args[0] if isinstance(output.args[0], (list, tuple)) else (output.args[0],)
    _local.output_names = tuple(a.name if hasattr(a, "name") else None for a in outputs)
    with _lock:
        if _ORIGINAL_CODEGEN is None:
            _ORIGINAL_CODEGEN = GraphLowering.codegen
            GraphLowering.codegen = _read_instead_of_codegen
        if _ORIGINAL_DONATED is None and hasattr(inductor_graph, "get_donated_idxs"):
            _ORIGINAL_DONATED = inductor_graph.get_donated_idxs
            inductor_graph.get_donated_idxs = _donated_idxs
    _local.active, _local.timeline = True, None
    _local.donated = tuple(donated) if is_backward else ()
    try:
        with inductor_config.patch({"fx_graph_cache": False, "cpp.simdlen": 0}):
            compile_fx_inner(gm, example, is_backward=is_backward)
    except Exception:  # _WrapperRead, possibly wrapped by inductor's error handling
        if _local.timeline is None:
            raise
    finally:
        _local.active = False
    read, _local.timeline = _local.timeline, None
    if read is None:  # pragma: no cover - a pipeline that built the graph without generating its wrapper
        raise RuntimeError("inductor compiled the graph without generating its wrapper code")
    return read


def plan_events(fw: Any, bw: Any, tangent_bytes: dict[str, int], owned: set[str], *, kept: set[str] = frozenset(),
                donated: Sequence[int] = (), allocate_tangents: bool = True,
                ) -> tuple[tuple[int, ...], tuple[int, ...]]:  # fmt: skip
    """Forward and backward allocation deltas of one plan's graphs under inductor (see the module doc).

    ``tangent_bytes``: the bytes the autograd engine hands each tangent input
    of ``bw``, by name (a loss such as ``out.sum()`` hands an expanded
    scalar). ``owned``: the names of ``bw``'s other inputs that the step
    allocated (saved activations); parameters and their views are not among
    them and are never freed, unless inductor's forward saved a copy of one
    (:attr:`Timeline.fresh_outputs`). ``kept``: the names of ``bw``'s inputs that the step
    holds through the backward (a user output the forward also saved, when the step keeps
    its outputs): never freed there. ``donated``: the indices of ``bw``'s placeholders
    that aot_autograd donates (:func:`timeline`). ``allocate_tangents=False``: the tangents exist
    before the backward starts (made by the step around it); they are only freed.
    """
    fw_time = timeline(fw, is_backward=False)
    bw_time = timeline(bw, is_backward=True, strides=fw_time.output_strides, donated=donated)
    owned = (set(owned) | set(fw_time.fresh_outputs)) - set(kept)
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
