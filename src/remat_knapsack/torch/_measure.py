"""What one training step allocates, measured: its peak above its start, and the bytes it saves for backward.

:func:`~remat_knapsack.torch.sweep`, :func:`~remat_knapsack.torch.fit` and the
peak model's calibration of the code outside the compiled graphs measure with
these. May import: torch. Imports nothing else of the package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

__all__ = ["profile_peak_bytes", "saved_tensor_bytes"]


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
    the kineto events named ``"[memory]"``, their ``nbytes`` summed in time
    order; the peak is the largest running sum (0 when nothing is allocated).
    """
    if device == "cuda":
        torch.cuda.synchronize()
        start = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step()
        torch.cuda.synchronize()
        return max(0, torch.cuda.max_memory_allocated() - start)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    events = [e for e in events if str(e.device_type()).endswith("CPU")]
    events.sort(key=lambda e: e.start_ns())
    running = peak = 0
    for e in events:
        running += e.nbytes()
        peak = max(peak, running)
    return peak
