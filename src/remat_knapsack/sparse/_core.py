"""The core: the items a cheap bound leaves undecided, solved alone.

Combo (Martello, Pisinger & Toth, Management Science 45, 1999) and the core
algorithms before it solve only the items around the break item; bounds fix
the rest. ``core`` does that at the start of the sparse kernel, once the
items are in efficiency order:

1. **A lower bound.** The break solution completed greedily (every later
   item that still fits, in efficiency order): a feasible set, worth LB.
2. **Reduction.** With lam the break item's efficiency and d = v - lam w,
   Dantzig's bound of every set is L = lam c + sum max(0, d); leaving item i
   out caps a set at L - max(0, d_i), taking it at L + min(0, d_i)
   (``decided``). Items for which that falls below LB (less the tolerance)
   are in (out of) every set worth at least LB, so in (out of) every optimal
   set.

Every optimal set is then the fixed-in items plus an optimal set of the
core with the capacity they leave, so dp_knapsack's canonical set (the
backtrack leaves out the highest index whenever the optimum stays
reachable) is the fixed-in items plus the core's canonical set, its items
kept in their order: the kernel solves the core alone, and skips its
set-up, its runs and its reduction over all n items. The core is used when
it holds at most ``CORE_SHARE`` of the items (uncorrelated, weakly
correlated and similar-weights classes); on correlated classes the greedy bound is loose,
the core is most items, and the kernel goes on with all of them (the test
costs a few O(n) passes).

Complexity: O(n) after the sort. Memory: O(n).

>>> import numpy as np
>>> w = np.array([10.0, 10.0, 10.0, 10.0] * 8)
>>> v = np.array([30.0, 11.0, 10.0, 1.0] * 8)
>>> order = np.argsort(-(v / w))
>>> b = int(np.searchsorted(np.cumsum(w[order]), 150.0, side="right"))  # the break item
>>> idx, fixed_in, room = core(w, v, w[order], v[order], 150.0, b, 0.0)
>>> len(fixed_in), len(idx), room  # the 30s in, the 10s and 1s out: the 11s are the core
(8, 8, 70.0)
"""

from __future__ import annotations

import numpy as np

from . import _sparse
from ._fixing import fix_by_bound

__all__ = ["core", "worth_it", "decided", "MIN_ITEMS", "CORE_SHARE", "LOOSE"]

_TOL = _sparse.TOLERANCES
#: Below this many items the kernel's own set-up is as cheap.
MIN_ITEMS = 2048
#: The core is solved alone when it holds at most this share of the items.
CORE_SHARE = 0.15
#: When the greedy bound leaves more than this share free, the weight bound
#: is loose: the kernel's short trial of ``optimum`` is skipped (it ran out
#: of its states on every such instance measured, almost strongly correlated
#: and circle items, at 0.2-2.6 ms each).
LOOSE = 0.5


def core(w: np.ndarray, v: np.ndarray, ws: np.ndarray, vs: np.ndarray, c: float, b: int, tol: float):
    """(the items the greedy bound leaves free, the items it fixes in, the
    capacity those leave) for items (w, v) (float64, w > 0, integer weights
    with exact sums; ``ws``, ``vs`` the same in efficiency order, ``b`` the
    break item's position there, below n) within capacity c. The caller
    solves the free items alone when they are few (``worth_it``)."""
    n = w.size
    x = np.zeros(n, dtype=np.uint8)
    x[:b] = 1
    added = _sparse.greedy_fill(ws, vs, b, c - float(ws[:b].sum()), x)  # exact: integer weights below 2**53
    # sums of n terms are within n 2**-53 of their magnitude: LB stays reachable.
    # (Not np.dot: at n=10^5 OpenBLAS hands a dot product to worker threads that
    # then spin, a second core busy for the rest of the solve.)
    lower = (float(vs[:b].sum()) + added) * (1.0 - n * 2.0**-52)
    _, fix_in, fix_out = decided(w, v, c, float(vs[b] / ws[b]), 0.0, 0.0, _TOL["rel_lp"], lower - tol,
                                   reduced=False)
    fixed = np.flatnonzero(fix_in)
    return np.flatnonzero(~(fix_in | fix_out)), fixed, c - float(w[fixed].sum())


def worth_it(free: np.ndarray, n: int, share: float | None = None) -> bool:
    """Whether a core of these free items (of n) is solved alone: some item
    is fixed and at most ``share`` (default ``CORE_SHARE``) stay free."""
    return free.size < n and free.size <= (CORE_SHARE if share is None else share) * n


def decided(w, v, c, lam, mu, k, rel, thr, reduced=True):
    """Items a Lagrangian bound decides against ``thr``. With d = v - lam w - mu,
    L = lam c + mu k + sum max(0, d) bounds every set the multipliers cover
    (k: its item count, or the count term's k); leaving item i out caps the
    value at L - max(0, d_i), taking it at L + min(0, d_i). Returns (d, or
    None unless ``reduced``; the items whose exclusion falls below ``thr``,
    those whose inclusion does, as bool masks), with a rounding allowance of
    ``rel`` times the magnitudes (``_fixing``: one compiled pass)."""
    n = w.shape[0]
    d = np.empty(n) if reduced else None
    fix_in = np.zeros(n, dtype=np.uint8)
    fix_out = np.zeros(n, dtype=np.uint8)
    fix_by_bound(w, v, c, lam, mu, k, rel, thr, fix_in, fix_out, d)
    return d, fix_in.view(bool), fix_out.view(bool)
