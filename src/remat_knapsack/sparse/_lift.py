"""The lift: a proof that no set of k items reaches a value, from the sets
of the most items that fit.

Items by ascending weight w_0 <= w_1 <= ... (positions), m the most items
that fit within c, A the m lightest. Take any set S of k < m items within
c, let Z be the r = m - k lightest items (by position) outside S and p the
position of the heaviest of them (p < m: S holds at most k of A). Then
T = S + Z has m items, holds every position up to p, weighs at most
c + x(p) with x(p) = w_(p-r+1) + ... + w_p, and

    v(S) = v(T) - v(Z),    v(Z) >= v_p + V_(r-1)

(V_(r-1): the r - 1 smallest values in A). For every p in [p1, p2] that is

    v(S) <= U(m, c + x(p2), p1 + 1) - min(v_p1 .. v_p2) - V_(r-1)

with U(m, C, f) an upper bound on every m-set within C that holds the
positions below f: the swap window of m within C (``_count_window.pxd``)
fixes the items far from the m-th weight, the forced prefix fixes more,
and the count bound (``_count_bound``) of what is left does the rest. U
grows with C and falls with f, so a bound for [p1, p2] covers every p in
it; bisection on [r - 1, m - 1] splits the ranges it cannot prove.

Where the most items that fit are optimal and light items are worth much
more than the capacity they free (Pisinger's circle items, v = (2/3)
sqrt(4R^2 - (w - 2R)^2)), the window makes U(m, c, 0) nearly exact while
the count bound of k = m - 1 sits hundreds above the optimum; there a few
bounds replace count runs of millions of states (docs/algorithms.md).
O(n) a bound; a proof splits at most ``2 log2 m + 8`` ranges (``4 log2 m
+ 17`` bounds).

Weights: integers > 0 below 2**53 in total (exact sums and comparisons).
"""

from __future__ import annotations

import math

import numpy as np

#: A place split by the last proof gets a bound again once in this many proofs.
SPLIT_AGAIN = 8


def count_bound_at(w: np.ndarray, v: np.ndarray, cap: float, k: int, lam: float) -> float:
    """The count bound at one lam >= 0 on every set of exactly k of the
    items (w, v) within ``cap``: lam cap plus the k largest v - lam w (any
    lam >= 0 bounds them; the best one is searched by ``count_bound``).
    One selection, O(n)."""
    d = v - lam * w
    return lam * cap + float(np.partition(d, d.size - k)[d.size - k:].sum())


class Lift:
    """The lift of one instance: items (``w``, ``v``; float64, integer
    weights > 0) within ``c``; ``m``: the most items that fit.
    ``count_bound``: ``Workspace.count_bound``."""

    def __init__(self, w: np.ndarray, v: np.ndarray, c: float, m: int, count_bound) -> None:
        o = np.argsort(w, kind="stable")
        self.w = np.ascontiguousarray(w[o])
        self.v = np.ascontiguousarray(v[o])
        self.cw = np.concatenate(([0.0], np.cumsum(self.w)))
        self.cv = np.concatenate(([0.0], np.cumsum(self.v)))
        self.c, self.m, self.n = c, m, w.shape[0]
        self.count_bound = count_bound
        self.low_v = np.concatenate(([0.0], np.cumsum(np.sort(self.v[:m]))))  # V_r
        self.hint = 1.0
        # The proofs of successive counts split alike, and the bounds at the
        # same place of their splits have nearly the same lam: each place
        # keeps its last lam, and the next bound there is first the count
        # bound at that lam (one selection; any lam >= 0 gives a bound),
        # searched for its best lam only when that does not prove the range
        # (circle items, n=10^5: docs/algorithms.md).
        self.lams: dict[int, tuple[float, float]] = {}  # place -> (its last lam, the one before, or the last)
        # ... and a place the last proof split is split again without its bound
        self.split: set[int] = set()
        self.skips: dict[int, int] = {}
        self.bounds = 0  # U evaluated, over all proofs

    def bound(self, cap: float, f: int, place: int = 0, at: float | None = None) -> tuple[float, float]:
        """U(m, cap, f): an upper bound on every set of m items within
        ``cap`` that holds positions 0..f-1 (-inf when none fits), and its
        capacity multiplier lam >= 0: within cap - y the same bound less
        lam y holds too. ``place``: where the proof's splits stand (0: none);
        ``at``: the lam to take (None: the best, searched for)."""
        self.bounds += 1
        m, n, w, cw = self.m, self.n, self.w, self.cw
        slack = cap - cw[m]
        if slack < 0:
            return -math.inf, 0.0
        lo = int(np.searchsorted(w, w[m] - slack, side="left")) if m < n else m
        a = max(f, lo)  # in every such set: the prefix the window fixes, or the forced one
        e = int(np.searchsorted(w, w[m - 1] + slack, side="right"))  # none holds an item from e on
        k = m - a
        if k == 0 or e - a == k:
            return float(self.cv[a + k]), 0.0  # every free item is in (it fits: slack >= 0)
        if at is not None:  # at lam: lam (cap - x(a)) + the k largest v - lam w of the free items
            return count_bound_at(w[a:e], self.v[a:e], cap - cw[a], k, at) + float(self.cv[a]), at
        L, lam, _ = self.count_bound(w[a:e], self.v[a:e], cap - cw[a], k, self.lams.get(place, (self.hint,))[0])
        if lam > 0:
            self.lams[place] = (lam, self.lams.get(place, (lam,))[0])
            self.hint = lam
        return float(L + self.cv[a]), max(lam, 0.0)

    def excludes(self, k: int, cut: float) -> bool:
        """True when it proves that no set of k < m items within c is worth
        ``cut`` or more; False when it cannot, within its budget. The bounds
        are exact up to rounding: ``cut`` is the value to stay below less
        the caller's allowance for it (the count path's ``sl``)."""
        m = self.m
        r = m - k
        if not 1 <= r < m:
            return False
        low = float(self.low_v[r - 1])
        budget = 2 * m.bit_length() + 8  # splits
        todo = [(r - 1, m - 1, 1)]  # (p1, p2, its place among the splits: the root 1, halves 2q and 2q + 1)
        while todo:
            p1, p2, place = todo.pop()
            if not (place in self.split and p1 < p2 and self._split_again(place)):
                x = float(self.cw[p2 + 1] - self.cw[p2 + 1 - r])
                if place in self.lams and self._proves(self.bound(self.c + x, p1 + 1, place, self._guess(place)),
                                                        cut, low, x, r, p1, p2):
                    self.split.discard(place)
                    continue
                if self._proves(self.bound(self.c + x, p1 + 1, place), cut, low, x, r, p1, p2):
                    self.split.discard(place)
                    continue
            budget -= 1
            if p1 == p2 or budget <= 0:
                return False
            self.split.add(place)
            mid = (p1 + p2) // 2
            todo += [(mid + 1, p2, 2 * place + 1), (p1, mid, 2 * place)]
        return True

    def _guess(self, place: int) -> float:
        """The lam to try first at ``place``: its last lam moved on by as much
        as it moved from the one before (lam drifts with the count; circle
        items, n=10^5: a quarter fewer searched bounds), or the last lam."""
        last, before = self.lams[place]
        guess = 2 * last - before
        return guess if guess > 0 else last

    def _split_again(self, place: int) -> bool:
        """Whether to split ``place`` again without a bound, as the last proof
        did: once in SPLIT_AGAIN times a bound is asked there anyway (a
        range the last proof had to split may be proved whole now)."""
        self.skips[place] = self.skips.get(place, 0) + 1
        return self.skips[place] % SPLIT_AGAIN != 0

    def _proves(self, bound: tuple[float, float], cut: float, low: float, x: float, r: int, p1: int,
                p2: int) -> bool:
        """Whether U (``bound``: U and its lam) keeps every k-set whose r
        lightest outside items have their heaviest at a position in [p1, p2]
        below ``cut``."""
        U, lam = bound
        return U - float(self.v[p1:p2 + 1].min()) - low < cut or U - lam * x - self._reduced(lam, r, p1, p2) < cut

    def _reduced(self, lam: float, r: int, p1: int, p2: int) -> float:
        """A lower bound on v(Z) - lam w(Z) for r items Z whose heaviest is at
        a position p in [p1, p2], the others below it."""
        d = self.v[:p2 + 1] - lam * self.w[:p2 + 1]
        top = float(d[p1:].min())
        if r == 1:
            return top
        rest = d[:p2]
        return top + float(np.partition(rest, r - 2)[:r - 1].sum())
