"""Planning under torch.distributed: one decision for every rank, and a failure that reaches every rank.

Under ``torchrun`` every rank runs :func:`~remat_knapsack.torch.predict_peaks`
or :func:`~remat_knapsack.torch.fit`. Ranks measure slightly different steps
(FSDP's shards, DDP's buckets, the allocator), and a decision taken per rank
would split them: different plans, a different number of compiles, and
collectives that no longer match, which hangs training. So:

* every measurement that feeds a decision is shared: the recorded step's eager
  segments are gathered from all ranks (:func:`gather_step`), and a plan's
  peak is the maximum over the ranks' replays; a measured peak is reduced to
  its maximum over ranks (:func:`max_over_ranks`);
* every phase runs under :func:`agree`: a rank that raises tells the others,
  which raise too, instead of waiting in the next collective.

A rank that fails inside a collective of the model itself (an FSDP
all-gather) leaves the others waiting there until the process group's
timeout, as any training step would.

May import: torch. Imports nothing else of the package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch

__all__ = ["RankFailedError", "agree", "gather_objects", "max_over_ranks", "world_size"]

T = TypeVar("T")


class RankFailedError(RuntimeError):
    """Another rank failed in a phase this rank completed; the message names the rank and its error."""


def world_size() -> int:
    """Ranks in the default process group (1 without torch.distributed)."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return 1


def gather_objects(value: Any) -> list[Any]:
    """``value`` from every rank, in rank order (``[value]`` alone without torch.distributed)."""
    if world_size() == 1:
        return [value]
    out: list[Any] = [None] * world_size()
    torch.distributed.all_gather_object(out, value)
    return out


def max_over_ranks(value: int) -> int:
    """The largest ``value`` over the ranks: the peak that counts is the worst rank's."""
    return max(gather_objects(int(value)))


def agree(phase: str, fn: Callable[[], T]) -> T:
    """Run ``fn()`` on every rank; if it raised on any rank, raise on every rank.

    This rank's own exception is raised as it is; a rank whose ``fn``
    succeeded raises :class:`RankFailedError` naming the first rank that
    failed and its error. One small collective per call.
    """
    error: BaseException | None = None
    result: Any = None
    try:
        result = fn()
    except Exception as exc:  # shared below, then raised
        error = exc
    if world_size() == 1:
        if error is not None:
            raise error
        return result
    reports = gather_objects(None if error is None else f"{type(error).__name__}: {error}")
    failed = [(rank, text) for rank, text in enumerate(reports) if text is not None]
    if error is not None:
        raise error
    if failed:
        rank, text = failed[0]
        raise RankFailedError(f"{phase} failed on rank {rank}: {text}")
    return result
