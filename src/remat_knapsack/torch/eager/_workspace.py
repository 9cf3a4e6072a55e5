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

May import: torch, and ``..step`` (the profiler's allocator events).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_map

from ..step import Timeline, profile_timeline

__all__ = ["OpCall", "TensorSpec", "measure_workspaces", "op_call"]

#: Profiler range around the measured run of signature ``i``: RANGE + str(i).
RANGE = "remat_knapsack.workspace "


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
    t = torch.empty_strided(value.shape, value.stride, dtype=value.dtype, device=device)
    if t.is_floating_point() or t.is_complex():
        t.normal_()
    else:
        t.zero_()
    return t


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


def measure_workspaces(calls: Mapping[Any, OpCall], device: str) -> dict[Any, int]:
    """Workspace bytes per signature of ``calls`` (those with none are left out), measured on ``device``.

    ``device``: "cpu", or "cuda" (an empty answer where no GPU is available).
    """
    if not calls or device not in ("cpu", "cuda") or (device == "cuda" and not torch.cuda.is_available()):
        return {}
    labels: dict[str, Any] = {}
    forked = [torch.cuda.current_device()] if device == "cuda" else []
    with torch.random.fork_rng(devices=forked):
        timeline = profile_timeline(lambda: _run_each(calls, device, labels), [RANGE], device)
    return _workspaces(timeline, labels)
