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

A rank that fails says so before any collective: it prints its rank, the
phase and its error to stderr, and posts them in the process group's store
(which needs no collective). A rank that fails inside a collective of the
model itself (an FSDP all-gather whose peer left it) reads the store and
raises :class:`RankFailedError` naming the rank that failed first and why,
rather than only the collective's own error.

May import: torch. Imports nothing else of the package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch

__all__ = ["RankFailedError", "agree", "announce", "gather_objects", "max_over_ranks", "posted_failure", "rank",
           "world_size"]

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


#: The store key prefix under which a failing rank posts its error (read by the others).
_FAILED = "remat_knapsack/failed/"
#: How long a rank whose collective failed waits for the failing rank's post, in seconds.
POST_WAIT_S = 5.0


def rank() -> int:
    """This process's rank (0 without torch.distributed)."""
    return torch.distributed.get_rank() if world_size() > 1 else 0


def _store() -> Any:
    try:
        from torch.distributed.distributed_c10d import _get_default_store

        return _get_default_store()
    except Exception:  # no store (a fake process group): posting is skipped
        return None


def announce(phase: str, error: BaseException) -> str:
    """Say, before any collective, that this rank failed in ``phase``: on stderr, and in the store."""
    import sys

    text = f"{type(error).__name__}: {error}".strip()
    print(f"[remat-knapsack] rank {rank()} failed while {phase}: {text}", file=sys.stderr, flush=True)
    store = _store()
    if store is not None:
        try:
            store.set(f"{_FAILED}{rank()}", f"{phase}: {text}"[:4000])
        except Exception:  # pragma: no cover - a store that refuses: the message above still stands
            pass
    return text


def posted_failure(wait_s: float = POST_WAIT_S) -> tuple[int, str] | None:
    """The first other rank that posted a failure (its rank and text), waiting up to ``wait_s``; None: none."""
    import time

    store = _store()
    if store is None:
        return None
    deadline = time.monotonic() + wait_s
    while True:
        for other in range(world_size()):
            if other == rank():
                continue
            key = f"{_FAILED}{other}"
            try:
                if store.check([key]):
                    return other, store.get(key).decode(errors="replace")
            except Exception:
                return None
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)


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
    if error is not None:
        announce(phase, error)
    try:
        reports = gather_objects(None if error is None else f"{type(error).__name__}: {error}")
    except Exception as exc:  # the gather failed: a peer left (its own failure, or a collective it broke)
        other = posted_failure()
        if other is not None:
            raise RankFailedError(f"{phase} failed on rank {other[0]}: {other[1]}") from (error or exc)
        raise (error or exc) from None
    failed = [(rank, text) for rank, text in enumerate(reports) if text is not None]
    if error is not None:
        raise error
    if failed:
        rank, text = failed[0]
        raise RankFailedError(f"{phase} failed on rank {rank}: {text}")
    return result
