"""The core: items a cheap bound decides before the kernel sorts anything.

Combo (Martello, Pisinger & Toth, Management Science 45, 1999) and the core
algorithms before it solve only the items around the break item; bounds fix
the rest. ``core`` does that in front of the sparse kernel:

1. **The break item without a full sort.** A sample of the efficiencies
   v / w (every k-th item, ``SAMPLE`` of them) is sorted and its weights
   scaled up to guess where the capacity runs out; only the items whose
   efficiency lies in a band around that guess are sorted. The guess is
   checked exactly: the items above the band fit, and the band holds the
   break item. Otherwise there is no core (the kernel sorts as before).
2. **A lower bound.** The break solution, completed greedily within the
   band: a feasible set, worth LB.
3. **Reduction.** With lam the break item's efficiency and d = v - lam w,
   Dantzig's bound of every set is L = lam c + sum max(0, d); leaving item i
   out caps a set at L - max(0, d_i), taking it at L + min(0, d_i)
   (``decided``). Items for which that falls below LB (less the tolerance)
   are in (out of) every set worth at least LB, so in (out of) every optimal
   set.

Every optimal set is then the fixed-in items plus an optimal set of the
core with the capacity they leave, so dp_knapsack's canonical set (the
backtrack leaves out the highest index whenever the optimum stays
reachable) is the fixed-in items plus the core's canonical set, its items
kept in their order: the kernel solves the core alone. The core is used
when it holds at most ``CORE_SHARE`` of the items; on strongly correlated
classes the bound is loose, the core is most items, and the kernel runs on
all of them as before (the attempt costs a few O(n) passes).

Complexity: O(n) plus O(m log m) for a band of m items (about 2
``MARGIN`` / ``SAMPLE`` of them). Memory: O(n).

>>> import numpy as np
>>> w = np.array([10.0, 10.0, 10.0, 10.0] * 8)
>>> v = np.array([30.0, 11.0, 10.0, 1.0] * 8)
>>> idx, fixed_in, room = core(w, v, 150.0, 0.0, share=1.0)
>>> len(fixed_in), len(idx), room  # the 30s in, the 10s and 1s out: the 11s are the core
(8, 8, 70.0)
"""

from __future__ import annotations

import numpy as np

from . import _sparse

__all__ = ["core", "decided", "MIN_ITEMS", "CORE_SHARE"]

_TOL = _sparse.TOLERANCES
#: Below this many items the kernel alone is as fast.
MIN_ITEMS = 2048
#: The core is solved alone when it holds at most this share of the items.
CORE_SHARE = 0.05
#: Efficiencies sampled to guess the break item's.
SAMPLE = 512
#: Sample positions either side of the guess that bound the band sorted.
MARGIN = 24


def core(w: np.ndarray, v: np.ndarray, c: float, tol: float, share: float | None = None):
    """(the core's items, the items fixed in, the capacity they leave) for
    items (w, v) (float64, w > 0, integer weights with exact sums) within
    capacity c, or None when the break item is not where the sample put it
    or the core holds more than ``share`` (default ``CORE_SHARE``) of the
    items."""
    n = w.size
    e = v / w
    brk = _break(w, v, e, c)
    if brk is None:
        return None
    lam, lower = brk
    d = v - lam * w
    gain = np.maximum(d, 0.0)
    L = lam * c + float(gain.sum())
    # ``decided`` with mu = 0: item i is fixed in when d_i > gap, out when
    # d_i < -gap (the same bound and rounding allowance, rearranged)
    gap = L + _TOL["abs_slack"] + _TOL["rel_lp"] * (abs(L) + float(np.abs(d).sum())) - (lower - tol)
    if gap < 0:
        return None  # cannot happen for a reachable ``lower``; no core then
    free = np.abs(d) <= gap
    most = (CORE_SHARE if share is None else share) * n
    if np.count_nonzero(free) > most:
        return None
    fixed = np.flatnonzero(d > gap)
    return np.flatnonzero(free), fixed, c - float(w[fixed].sum())


def _break(w, v, e, c):
    """(lam, LB): the break item's efficiency and the value of the break
    solution completed greedily within the band; None when the band does
    not hold the break item (or every item fits)."""
    n = e.size
    step = max(1, n // SAMPLE)
    se, sw = e[::step], w[::step]
    o = np.argsort(-se)
    est = np.cumsum(sw[o]) * (float(w.sum()) / float(sw.sum()))  # weight above each sampled efficiency
    p = int(np.searchsorted(est, c, side="right"))
    if p >= o.size:
        return None
    hi = float(se[o[p - MARGIN]]) if p > MARGIN else np.inf
    lo = float(se[o[min(o.size - 1, p + MARGIN)]])
    above = e > hi
    room = c - float(np.dot(w, above))  # exact: integer weights below 2**53
    band = np.flatnonzero((e >= lo) & ~above)
    wb = np.ascontiguousarray(w[band])
    if room < 0 or float(wb.sum()) <= room:
        return None
    o = np.argsort(-e[band])  # ties in any (deterministic) order, as the kernel
    band, wb = band[o], wb[o]
    b = int(np.searchsorted(np.cumsum(wb), room, side="right"))  # the break item: band[b]
    x = np.zeros(band.size, dtype=np.uint8)
    x[:b] = 1
    _sparse.greedy_fill(wb, b, room - float(wb[:b].sum()), x)  # exact: integer weights below 2**53
    lower = float(np.dot(v, above)) + float(np.dot(v[band], x))
    # a dot product of n terms is within n 2**-53 of their magnitude: LB stays reachable
    return float(e[band[b]]), lower * (1.0 - n * 2.0**-52)


def decided(w, v, c, lam, mu, k, rel, thr):
    """Items a Lagrangian bound decides against ``thr``. With d = v - lam w - mu,
    L = lam c + mu k + sum max(0, d) bounds every set the multipliers cover
    (k: its item count, or the count term's k); leaving item i out caps the
    value at L - max(0, d_i), taking it at L + min(0, d_i). Returns (d, the
    items whose exclusion falls below ``thr``, those whose inclusion does),
    with a rounding allowance of ``rel`` times the magnitudes."""
    d = v - lam * w - mu
    gain = np.maximum(d, 0)
    L = lam * c + mu * k + float(gain.sum())
    sl = _TOL["abs_slack"] + rel * (abs(L) + float(np.abs(d).sum()) + abs(mu) * d.shape[0])
    return d, L - gain + sl < thr, L + np.minimum(d, 0) + sl < thr
