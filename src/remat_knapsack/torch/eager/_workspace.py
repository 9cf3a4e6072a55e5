"""What an op allocates and frees inside itself (its workspace), measured on real tensors one op at a time.

A step recorded on fake tensors allocates nothing, so what a kernel allocates
for itself (the reordered copies of a CPU convolution's backward, attention's
buffers) cannot be seen in it. Each distinct op signature of the step (the op,
its arguments' shapes, strides and dtypes, and its other arguments) is run once
more, alone, on real tensors of those shapes on the step's device, inside one
``torch.profiler`` session; its workspace is the highest running total of the
allocator's events while it runs, less what is still allocated when it
returns (its outputs).

Made-up tensors hold random floats and zero integers; an op that fails on
them, or that runs out of memory, counts 0, as does every op of a step planned
for CUDA where no GPU is available. A generator passed to an op is replaced by
a fresh one, and the default generators are put back afterwards, so the
measurement draws nothing from the caller's random streams.

The size cap. Running an op alone for real allocates its inputs and outputs:
at the size a large model trains (Llama 3 8B, 8192 tokens: the bf16 logits are
2 GiB, their float32 copy 4 GiB) that is more memory than planning may take,
and at the CPU's bf16 matmul rate (about 1 GFLOP/s on an AVX2 machine) one
projection of that model runs for minutes. So an op is run only when the
storages of its inputs and outputs together hold at most
:data:`MAX_OP_BYTES` bytes and its FLOPs (``torch.utils.flop_counter``'s
formula, :func:`._roofline.op_flops`) are at most :data:`MAX_OP_FLOPS`, per
device (its outputs' sizes come from running it on the meta device, which
allocates nothing). An op over either cap is not run: its workspace counts
0, and one ``RuntimeWarning`` per measurement lists those ops with their
shapes. It is not scaled from a run at a smaller size, because no one rule
holds across kernels: the CPU's flash attention allocates per thread and
per block (the same bytes at 1024 and 2048 tokens), ``cumsum`` in proportion
to its input, a matmul nothing. Counting 0 is an under-count only where such
an op has a workspace; the warning says which ops those may be.

May import: torch, ``..step`` (the profiler's allocator events) and
``._roofline`` (an op's FLOPs).
"""

from __future__ import annotations

import bisect
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_leaves, tree_map

from ..step import WORKSPACE_MAX_BYTES, WORKSPACE_MAX_FLOPS, Timeline, made_up_tensor, profile_timeline
from ._roofline import op_flops

__all__ = ["MAX_OP_BYTES", "MAX_OP_FLOPS", "OpCall", "TensorSpec", "measure_workspaces", "op_call"]

#: Profiler range around the measured run of signature ``i``: RANGE + str(i).
RANGE = "remat_knapsack.workspace "
#: Per device: the most bytes an op's input and output storages may hold together for the op to be run
#: for its workspace (module docstring). A larger op counts 0 and is named in a RuntimeWarning.
MAX_OP_BYTES = WORKSPACE_MAX_BYTES
#: Per device: the most FLOPs an op may take to be run for its workspace (2e10: 20 s of bf16 matmul on
#: an AVX2 CPU, 0.4 s in float32; 1e13: about 20 ms on an H100).
MAX_OP_FLOPS = WORKSPACE_MAX_FLOPS
#: How many of the ops over the cap the warning names (the rest are counted).
_NAMED = 8


@dataclass(frozen=True)
class TensorSpec:
    """What a made-up tensor needs to stand for an argument: shape, strides and dtype."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype


@dataclass(frozen=True)
class OpCall:
    """One op with its arguments as :class:`TensorSpec` (tensors) and values (everything else)."""

    func: Any
    args: tuple
    kwargs: dict


def _spec(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return TensorSpec(tuple(int(d) for d in value.shape), tuple(int(s) for s in value.stride()), value.dtype)
    return value


def op_call(func: Any, args: tuple, kwargs: dict) -> tuple[Any, OpCall]:
    """``(signature, call)`` of one op: the signature is hashable and equal for calls of equal workspace."""
    call = OpCall(func, tree_map(_spec, tuple(args)), tree_map(_spec, dict(kwargs)))
    return (str(func), _key(call.args), _key(call.kwargs)), call


def _key(value: Any) -> Any:
    if isinstance(value, TensorSpec):
        return value
    if isinstance(value, (list, tuple)):
        return tuple(_key(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _key(v)) for k, v in value.items()))
    return repr(value)


def _real(value: Any, device: str) -> Any:
    """A real tensor for a :class:`TensorSpec` (random floats, zero integers), a fresh generator for a
    generator, anything else as it is."""
    if isinstance(value, torch.Generator):
        return torch.Generator(device=device)
    if not isinstance(value, TensorSpec):
        return value
    return made_up_tensor(value.shape, value.stride, value.dtype, device)


def _run_each(calls: Mapping[Any, OpCall], device: str, labels: dict[str, Any]) -> None:
    """Run every call once on made-up tensors, each inside its own profiler range (named in ``labels``)."""
    from torch.profiler import record_function

    with torch.no_grad():
        for i, (signature, call) in enumerate(calls.items()):
            try:
                args = tree_map(lambda v: _real(v, device), call.args)
                kwargs = tree_map(lambda v: _real(v, device), call.kwargs)
            except Exception:  # no memory for its arguments, or a spec torch cannot build
                continue
            label = f"{RANGE}{i}"
            try:
                with record_function(label):
                    out = call.func(*args, **kwargs)
                labels[label] = signature
            except Exception:  # it does not run on made-up values (or runs out of memory): counts 0
                pass
            out = args = kwargs = None  # noqa: F841  (freed after its range, so its outputs count at its end)


def _workspaces(timeline: Timeline, labels: dict[str, Any]) -> dict[Any, int]:
    """Per signature: the highest running total of the allocator's events inside its range, less its end total."""
    times = [t for t, _ in timeline.events]
    out: dict[Any, int] = {}
    for name, start, end in timeline.intervals:
        signature = labels.get(name)
        if signature is None:
            continue
        first, last = bisect.bisect_left(times, start), bisect.bisect_right(times, end)
        running = high = 0
        for _, nbytes in timeline.events[first:last]:
            running += nbytes
            high = max(high, running)
        if high > running:
            out[signature] = high - running
    return out


def _storage_bytes(spec: TensorSpec) -> int:
    """Bytes of the smallest storage that holds a tensor of ``spec`` (an expanded one: its one row)."""
    if any(d == 0 for d in spec.shape):
        return 0
    span = 1 + sum((d - 1) * abs(s) for d, s in zip(spec.shape, spec.stride))
    return span * spec.dtype.itemsize


def _meta(value: Any) -> Any:
    """A meta tensor for a :class:`TensorSpec`, None for a generator (meta ops draw nothing), else the value."""
    if isinstance(value, torch.Generator):
        return None
    if not isinstance(value, TensorSpec):
        return value
    return torch.empty_strided(value.shape, value.stride, dtype=value.dtype, device="meta")


def op_size(call: OpCall) -> tuple[int, int]:
    """``(bytes, flops)`` of one op: the bytes of its input and output storages, and its FLOPs.

    The outputs' sizes and the FLOPs come from running the op on meta
    tensors; where it has no meta kernel, its inputs' bytes alone and 0 FLOPs.
    """
    nbytes = sum(_storage_bytes(v) for v in tree_leaves((call.args, call.kwargs)) if isinstance(v, TensorSpec))
    try:
        args, kwargs = tree_map(_meta, call.args), tree_map(_meta, call.kwargs)
        with torch.no_grad():
            out = call.func(*args, **kwargs)
    except Exception:  # no meta kernel, or arguments it does not take on meta tensors
        return nbytes, 0
    outs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
    nbytes += sum(_storage_bytes(TensorSpec(tuple(t.shape), tuple(t.stride()), t.dtype)) for t in outs)
    return nbytes, op_flops(call.func, args, kwargs, out)


def _describe(call: OpCall) -> str:
    shapes = ", ".join("x".join(map(str, v.shape)) or "()" for v in tree_leaves(call.args) if isinstance(v, TensorSpec))
    return f"{call.func}({shapes})"


def _within_cap(calls: Mapping[Any, OpCall], device: str) -> dict[Any, OpCall]:
    """The calls under :data:`MAX_OP_BYTES` and :data:`MAX_OP_FLOPS`; one RuntimeWarning naming the others."""
    max_bytes, max_flops = MAX_OP_BYTES[device], MAX_OP_FLOPS[device]
    kept: dict[Any, OpCall] = {}
    over: list[tuple[int, str]] = []
    for signature, call in calls.items():
        nbytes, flops = op_size(call)
        if nbytes <= max_bytes and flops <= max_flops:
            kept[signature] = call
        else:
            over.append((nbytes, f"{_describe(call)}: {nbytes / 2**20:.0f} MiB, {flops:.2g} FLOPs"))
    if over:
        over.sort(key=lambda o: -o[0])
        named = "; ".join(text for _, text in over[:_NAMED])
        more = f"; and {len(over) - _NAMED} more" if len(over) > _NAMED else ""
        warnings.warn(f"workspace not measured for {len(over)} op(s) over the size cap on {device} "
                      f"(MAX_OP_BYTES {max_bytes / 2**20:.0f} MiB of inputs and outputs, MAX_OP_FLOPS "
                      f"{max_flops:.2g}); each counts 0: {named}{more}", RuntimeWarning, stacklevel=4)  # fmt: skip
    return kept


def measure_workspaces(calls: Mapping[Any, OpCall], device: str) -> dict[Any, int]:
    """Workspace bytes per signature of ``calls`` (those with none are left out), measured on ``device``.

    ``device``: "cpu", or "cuda" (an empty answer where no GPU is available).
    Ops over the size cap (:data:`MAX_OP_BYTES`, :data:`MAX_OP_FLOPS`) are not
    run and count 0, with one ``RuntimeWarning`` naming them.
    """
    if not calls or device not in ("cpu", "cuda") or (device == "cuda" and not torch.cuda.is_available()):
        return {}
    calls = _within_cap(calls, device)
    if not calls:
        return {}
    labels: dict[str, Any] = {}
    forked = [torch.cuda.current_device()] if device == "cuda" else []
    with torch.random.fork_rng(devices=forked):
        timeline = profile_timeline(lambda: _run_each(calls, device, labels), [RANGE], device)
    return _workspaces(timeline, labels)
