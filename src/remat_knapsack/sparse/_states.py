"""``sparse``'s memory accounting: bytes per item and per state slot.

Shared by the kernel's entry point (``sparse``), the ``scale=None`` path
(``_real``) and the grouped solver's budgets: one estimate, checked before
allocating, and one error when the states outgrow it.

>>> sparse_bytes(1000) == 1000 * ITEM_BYTES + MIN_STATES * STATE_BYTES
True
"""

from __future__ import annotations

from .._common._memory import limit_bytes
from ..errors import SolverMemoryError
from . import _sparse

__all__ = ["ITEM_BYTES", "MIN_STATES", "STATE_BYTES", "max_states_within", "sparse_bytes", "state_error"]

#: Bytes per state slot the kernel keeps (two buffers).
STATE_BYTES: int = int(_sparse.STATE_BYTES)
#: Per-item arrays: sorted copies, reduction, free-item prefix sums, selection.
ITEM_BYTES = 160
#: States the kernel starts with; it grows by doubling up to the memory limit.
MIN_STATES = 256


def sparse_bytes(n: int, states: int = MIN_STATES) -> int:
    """Bytes ``sparse`` allocates for ``n`` items and ``states`` state slots."""
    return ITEM_BYTES * n + STATE_BYTES * states


def max_states_within(n: int, memory_limit: int | None, detail: str) -> int:
    """Check the up-front allocation (as ``check_memory`` does) and return how
    many state slots the kernel may grow to within the same limit."""
    base = sparse_bytes(n)
    limit = limit_bytes(memory_limit)
    if base > limit:
        raise SolverMemoryError("sparse", base, limit, detail)
    return max(MIN_STATES, (limit - ITEM_BYTES * n) // STATE_BYTES)


def state_error(n: int, max_states: int, detail: str) -> SolverMemoryError:
    """The error when the states would outgrow ``max_states`` (the next doubling)."""
    return SolverMemoryError("sparse", sparse_bytes(n, 2 * max_states), sparse_bytes(n, max_states), detail)
