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
(which needs no collective). When every rank reaches the same :func:`agree`,
one small gather shares the outcome and the process group stays usable. When
a rank fails inside the model while the others already wait in one of the
model's collectives (FSDP's all-gather of the next layer), they never reach
it: the failing rank then leaves the process group
(``destroy_process_group``) and raises its own error, so that their
collective fails, and each of them raises :class:`RankFailedError` naming the
failing rank and its cause, read from the store. Without this, gloo meets
two collectives that do not match and aborts both processes.

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
#: The store key prefix under which each rank says it reached a call of :func:`agree`.
_ARRIVED = "remat_knapsack/arrived/"
#: How long a failing rank waits for every rank to reach the same :func:`agree`, in seconds. A rank
#: that does not is taken to wait in a collective of the model (an FSDP all-gather) that the failure
#: left unmatched: the failing rank then leaves the process group, so that collective fails there.
ARRIVAL_WAIT_S = 60.0
_calls = 0  # calls of agree in this process: every rank makes the same calls in the same order


def rank() -> int:
    """This process's rank (0 without torch.distributed)."""
    return torch.distributed.get_rank() if world_size() > 1 else 0


def _store() -> Any:
    try:
        from torch.distributed.distributed_c10d import _get_default_store

        return _get_default_store()
    except Exception:  # no store (a fake process group): posting is skipped
        return None


def announce(phase: str, error: BaseException, call: int | None = None) -> str:
    """Say, before any collective, that this rank failed in ``phase``: on stderr, and in the store
    under call ``call`` of :func:`agree` (the current one by default)."""
    import sys

    call = _calls if call is None else call
    text = f"{type(error).__name__}: {error}".strip()
    first = posted_failure(call, wait_s=0.0)
    after = f" (after rank {first[0]} failed)" if first is not None else ""
    print(f"[remat-knapsack] rank {rank()} failed while {phase}{after}: {text}", file=sys.stderr, flush=True)
    store = _store()
    if store is not None:
        try:
            store.set(f"{_FAILED}{call}/{rank()}", f"{phase}: {text}"[:4000])
        except Exception:  # pragma: no cover - a store that refuses: the message above still stands
            pass
    return text


def posted_failure(call: int | None = None, wait_s: float = POST_WAIT_S) -> tuple[int, str] | None:
    """The first other rank that posted a failure in call ``call`` of :func:`agree` (the current one by
    default): its rank and text, waiting up to ``wait_s`` seconds; None: none."""
    import time

    store = _store()
    if store is None:
        return None
    call = _calls if call is None else call
    deadline = time.monotonic() + wait_s
    while True:
        for other in range(world_size()):
            if other == rank():
                continue
            key = f"{_FAILED}{call}/{other}"
            try:
                if store.check([key]):
                    return other, store.get(key).decode(errors="replace")
            except Exception:
                return None
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)


def _arrive(store: Any) -> int:
    """Say in the store that this rank reached the next call of :func:`agree`; that call's number."""
    global _calls
    _calls += 1
    if store is not None:
        try:
            store.set(f"{_ARRIVED}{_calls}/{rank()}", "1")
        except Exception:  # pragma: no cover - a store that refuses: the gather decides
            pass
    return _calls


def _all_arrived(store: Any, call: int, wait_s: float = ARRIVAL_WAIT_S) -> bool:
    """Whether every rank reached call ``call`` of :func:`agree` within ``wait_s`` seconds."""
    import time

    keys = [f"{_ARRIVED}{call}/{other}" for other in range(world_size())]
    deadline = time.monotonic() + wait_s
    while True:
        try:
            if store.check(keys):
                return True
        except Exception:
            return True  # the store cannot tell: let the gather decide, as without one
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def agree(phase: str, fn: Callable[[], T]) -> T:
    """Run ``fn()`` on every rank; if it raised on any rank, raise on every rank.

    This rank's own exception is raised as it is; a rank whose ``fn``
    succeeded raises :class:`RankFailedError` naming the first rank that
    failed and its error. One small collective per call, and a key in the
    store; a rank that fails waits up to :data:`ARRIVAL_WAIT_S` for the others
    to arrive before it leaves the process group.
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
    store = _store()
    call = _arrive(store)
    if error is not None:
        announce(phase, error, call)
        if store is not None and not _all_arrived(store, call):
            # another rank waits in a collective of the model that this failure left unmatched: a
            # gather here would not match it (gloo aborts both processes); leave the group instead,
            # which fails that collective there, and that rank reads this one's post
            torch.distributed.destroy_process_group()
            raise error
    try:
        reports = gather_objects(None if error is None else f"{type(error).__name__}: {error}")
    except Exception as exc:  # the gather failed: a peer left (its own failure, or a collective it broke)
        other = posted_failure(call)
        if other is not None:
            raise RankFailedError(f"{phase} failed on rank {other[0]}: {other[1]}") from (error or exc)
        raise (error or exc) from None
    failed = [(who, text) for who, text in enumerate(reports) if text is not None]
    if error is not None:
        raise error
    if failed:
        who, text = failed[0]
        raise RankFailedError(f"{phase} failed on rank {who}: {text}")
    return result
