"""What one training step allocates, measured: its peak above its start, and the bytes it saves for backward.

:func:`~remat_knapsack.torch.sweep`, :func:`~remat_knapsack.torch.fit` and the
peak model's calibration of the code outside the compiled graphs measure with
these. A step that runs out of memory is an answer too ("this plan does not
fit"): :func:`is_out_of_memory` tells it from a broken model, and
:func:`release` gives the memory back after one. May import: torch. Imports
nothing else of the package.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["CUDA_BLOCK", "Timeline", "allocated_bytes", "is_out_of_memory", "out_of_memory_message",
           "profile_peak_bytes", "profile_timeline", "release", "saved_tensor_bytes"]

_STEP = "remat_knapsack.step"  # a profiler range around the step: its thread is the step's

#: The CUDA caching allocator rounds every block up to a multiple of this many bytes, and
#: ``torch.cuda.max_memory_allocated`` counts the rounded sizes.
CUDA_BLOCK = 512

#: What the CPU allocator's failure says (``DefaultCPUAllocator: can't allocate memory``); CUDA's
#: is ``torch.OutOfMemoryError``. Both are matched in the message too, for errors that wrap them.
_OOM_TEXTS = ("can't allocate memory", "CUDA out of memory", "out of memory")


def allocated_bytes(nbytes: int, device_type: str) -> int:
    """What the allocator of ``device_type`` counts for a tensor of ``nbytes``: rounded up to
    :data:`CUDA_BLOCK` on CUDA, exact on the CPU."""
    if device_type == "cuda" and nbytes > 0:
        return -(-nbytes // CUDA_BLOCK) * CUDA_BLOCK
    return nbytes


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc``, or an exception it was raised from, is the allocator running out of memory.

    The CPU allocator raises ``RuntimeError: ... DefaultCPUAllocator: can't
    allocate memory``, CUDA's ``torch.OutOfMemoryError``; ``MemoryError`` is
    Python's own. A compile that fails because of one (dynamo wraps it) counts too.
    """
    oom_types: tuple[type, ...] = (MemoryError,)
    if hasattr(torch, "OutOfMemoryError"):
        oom_types += (torch.OutOfMemoryError,)
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, oom_types):
            return True
        if isinstance(exc, RuntimeError) and any(text in str(exc) for text in _OOM_TEXTS):
            return True
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return False


def out_of_memory_message(exc: BaseException) -> str:
    """The allocator's own words from ``exc`` (its first line, shortened), for a message that says what ran out."""
    seen: set[int] = set()
    first = exc
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if any(text in str(exc) for text in _OOM_TEXTS) or isinstance(exc, MemoryError):
            first = exc
            break
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    text = str(first).strip().splitlines()[0] if str(first).strip() else type(first).__name__
    return text[:300]


def release(device: str) -> None:
    """Give back what a failed step left: collect the garbage its frames held, empty CUDA's cache."""
    import gc

    gc.collect()
    if device == "cuda" and torch.cuda.is_available():
        torch.cuda.empty_cache()


def saved_tensor_bytes(step: Callable[[], Any]) -> int:
    """Bytes of the distinct storages saved for backward while ``step()`` runs.

    Seen through ``torch.autograd.graph.saved_tensors_hooks`` (compiled graphs
    save through ``ctx.save_for_backward``, so the hooks see them); a storage
    saved by several tensors counts once.
    """
    seen: dict[tuple[str, int], int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        seen[(str(t.device), st.data_ptr())] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        step()
    return sum(seen.values())


def profile_peak_bytes(step: Callable[[], Any], device: str = "cpu") -> int:
    """Highest memory allocated while ``step()`` runs, above what was allocated when it began.

    CUDA: ``torch.cuda.max_memory_allocated`` after resetting the peak. CPU:
    the allocator's events from ``torch.profiler`` (``profile_memory=True``),
    the kineto events named ``"[memory]"`` of the thread that runs ``step``,
    their ``nbytes`` summed in time order; the peak is the largest running
    sum (0 when nothing is allocated). Other threads' allocations (gloo's
    workers inside a collective) are left out, as a GPU's allocator does not
    count a communication library's own buffers.
    """
    if device == "cuda":
        torch.cuda.synchronize()
        start = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step()
        torch.cuda.synchronize()
        return max(0, torch.cuda.max_memory_allocated() - start)
    return profile_timeline(step, [], device).peak_bytes


@dataclass(frozen=True)
class Timeline:
    """One profiled step: the allocator's events and the intervals of chosen profiler events, in time order.

    ``events``: ``(time_ns, bytes)``, positive for an allocation, negative
    for a free. ``intervals``: ``(name, start_ns, end_ns)`` for every event
    whose name is among those asked for.
    """

    events: tuple[tuple[int, int], ...]
    intervals: tuple[tuple[str, int, int], ...]

    @property
    def peak_bytes(self) -> int:
        """The highest running sum of the events (0 when nothing is allocated)."""
        running = peak = 0
        for _, nbytes in self.events:
            running += nbytes
            peak = max(peak, running)
        return peak


def profile_timeline(step: Callable[[], Any], names: Sequence[str], device: str = "cpu") -> Timeline:
    """Run ``step()`` under ``torch.profiler`` with memory profiling; its :class:`Timeline`.

    The allocator's events of ``device`` (``"[memory]"`` events, on the CPU
    those of the step's own thread, as :func:`profile_peak_bytes` reads them)
    and the intervals of the
    profiler events named in ``names`` (such as ``"CompiledFunction"``, one
    compiled forward graph's run); a name ending in a space is a prefix
    (``"Torch-Compiled Region: "`` matches every compiled frame's run).
    """
    from torch.profiler import ProfilerActivity, profile, record_function

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities, profile_memory=True) as prof:
        with record_function(_STEP):
            step()
    results = list(prof.profiler.kineto_results.events())
    # CPU: the step's own thread (the backward runs on it too); CUDA: every thread, as the
    # caching allocator counts them (the backward runs on the device's own thread)
    step_thread = next((e.start_thread_id() for e in results if e.name() == _STEP), None)
    wanted = set(names)
    prefixes = tuple(n for n in names if n.endswith(" "))  # a name ending in a space: a prefix
    kind = "CUDA" if device == "cuda" else "CPU"
    events, intervals = [], []
    for e in results:
        name = e.name()
        if name == "[memory]":
            same_thread = kind == "CUDA" or step_thread is None or e.start_thread_id() == step_thread
            if str(e.device_type()).endswith(kind) and same_thread:
                events.append((e.start_ns(), e.nbytes()))
        elif name in wanted or any(name.startswith(w) for w in prefixes):
            intervals.append((name, e.start_ns(), e.start_ns() + e.duration_ns()))
    return Timeline(events=tuple(sorted(events)), intervals=tuple(sorted(intervals, key=lambda x: x[1])))
