"""Identical items as one type with a count: exact canonical sets for instances
with few distinct (weight, value) pairs, the shape of real graphs.

Items are grouped into T types (equal exact weight and equal value); type t
has ``count_t`` copies at ascending positions ``pos_t``. Every set is then a
count vector y (0 <= y_t <= count_t) plus a choice of copies.

**Which copies.** Among sets with the same counts, dp_knapsack's tie rule
(leave out the highest index whenever the optimum stays reachable) prefers
the lowest y_t copies of each type: at the highest index where such a set
and any other set with the same counts differ, the other set holds a copy
above one that this set holds, so this set is the one leaving it out.

**Which counts.** With L(y) the last position used, max over t of
``pos_t[y_t - 1]``, the backtrack's first kept item is the smallest L(y)
over optimal y: every item above it can be left out (a witness avoids them)
and the item at it cannot (no optimal y stays below it). That item has some
type t; then every copy of t below it is kept too: if a lower copy could be
left out, a witness y' without it plus the items kept since (K) and that
copy would be an optimal set below the first kept item, y' + K + e_t, a
contradiction. So each *round* fixes one type completely (its copies up to
the round's item are kept) and at most T rounds finish the scan. A round
finds the smallest L by search on the position p ("can the optimum be
reached with copies at positions <= p only?", monotone in p): one probe just
below the last witness's L (often the answer), then bisection; a successful
probe returns a witness and the search jumps to its L.

**Probes** are bounded knapsacks over the free types, solved exactly: first
O(T) checks (the LP bound with the counts available below p, a greedy
witness), then a Lagrangian reduction of each type's count range
(``reduce``), then a Pareto DP over the types in efficiency order, each count
split in binary pieces (1, 2, 4, ..., rest: any count up to count_t is a sum
of distinct pieces), pruning states whose LP bound over the pieces and types
still to come cannot reach the target. Types that are exact multiples of a
lighter one (weight and value) enter the DP as units of it, and one type
that is a multiple less a few ulps (in float64 3 * (x / 64) and 3 * x / 64
differ) joins them (``_units``); one type, or that class, is not merged but
completes every state in closed form. The DP's loop is compiled
(``_front.pareto_dp``); its weights are exact 128-bit integers, and totals
are kept below 2**104 (float64 bounds on them stay within ``_BOUND_SLACK``):
the grid weights of ``scale=None`` (``_grid``) need
about 53 + log2(max / min weight) bits. Values are compared as in
:mod:`remat_knapsack.sparse._solver` (exact on their grid, else within ``tol``).

Complexity: O(n) grouping plus, per probe, O(T) checks or a DP of
O(sum over pieces of the states kept); at most T rounds of O(log n) probes.
Memory: O(n + T * states).

>>> import numpy as np
>>> g = [3, 3, 2, 3, 2]
>>> v = np.array([4.0, 4.0, 3.0, 4.0, 3.0])
>>> solve_types(g, v, 7, True, 0.0, 10**6)[0].tolist()
[0, 2, 4]
"""

from __future__ import annotations

import math

import numpy as np

from .._common._grid import floor_grid
from ._front import TooManyStates, more_pairs_than, pair_groups, pareto_dp  # the DP and the grouping, compiled

__all__ = ["group", "solve_items", "solve_types", "MAX_TYPES", "MIN_COPIES"]

#: Instances with more distinct (weight, value) pairs go to the item kernel.
MAX_TYPES = 24
#: Grouping is used when there are at least this many items per type on
#: average (below, the item kernel is as fast and has no Python overhead).
MIN_COPIES = 32
#: A probe's DP front beyond this many states (or its records beyond four
#: times as many) ends the grouped route: the item kernel takes over. Real
#: graphs stay far below (captured n=10^4: 71 states); subset-sum-like types
#: would not (the kernel stops at a full knapsack, this DP does not).
MAX_STATES = 1 << 17
#: Totals at or above this go to the item kernel (``_front`` holds weights
#: in 128 bits and bounds them in float64).
_MAX_TOTAL = 1 << 104
#: Relative slack on float bounds: a state is pruned only when its bound,
#: computed in float64, is below the threshold by more than this share of the
#: value total (float error is ~1e-16 of it), so rounding never prunes a state
#: that could reach the target.
_BOUND_SLACK = 1e-9


def group(w: np.ndarray, v: np.ndarray, max_types: int = MAX_TYPES):
    """Group items by (weight, value): (type of each item, first item of each
    type), types numbered in (weight, value) order, or None when there are
    more than ``max_types`` pairs. Expected O(n): a quick reject on the
    first items (``_front.more_pairs_than``), then hashing
    (``_front.pair_groups``)."""
    n = w.size
    head = min(n, 8 * max_types)
    if w.dtype != np.float64 or v.dtype != np.float64:  # exact integers beyond float64: sort them
        return None if _pairs(w[:head], v[:head]) > max_types else _group_sorted(w, v, max_types)
    if more_pairs_than(np.ascontiguousarray(w[:head]), np.ascontiguousarray(v[:head]), max_types):
        return None
    found = pair_groups(np.ascontiguousarray(w), np.ascontiguousarray(v), max_types)
    if found is None:
        return None
    ids, first = found
    rank = np.lexsort((v[first], w[first]))  # the groups in (weight, value) order
    label = np.empty(rank.size, dtype=np.int64)
    label[rank] = np.arange(rank.size)
    return label[ids], first[rank].astype(np.int64)


def _group_sorted(w: np.ndarray, v: np.ndarray, max_types: int):
    """``group`` by a sort on (weight, value): for any comparable dtype."""
    order = np.lexsort((v, w))
    ws, vs = w[order], v[order]
    new = np.empty(w.size, dtype=bool)
    new[:1] = True
    new[1:] = (ws[1:] != ws[:-1]) | (vs[1:] != vs[:-1])
    if int(new.sum()) > max_types:
        return None
    kind = np.empty(w.size, dtype=np.int64)
    kind[order] = np.cumsum(new) - 1
    return kind, order[new]


def _pairs(w: np.ndarray, v: np.ndarray) -> int:
    """How many distinct (weight, value) pairs."""
    if w.size == 0:
        return 0
    order = np.lexsort((v, w))
    ws, vs = w[order], v[order]
    return 1 + int(np.count_nonzero((ws[1:] != ws[:-1]) | (vs[1:] != vs[:-1])))


def solve_items(w, v, cap, e, integral, tol, max_states, state_bytes):
    """``sparse``'s entry point: float64 weights ``w`` that are integers
    (``e`` None, quantised) or multiples of 2**e (``scale=None``; capacity
    ``cap`` a float, floored onto the grid), values on their grid or not
    (``integral``, ``tol``). Returns (chosen positions, stats) or None (more
    than ``MAX_TYPES`` pairs, fewer than ``MIN_COPIES`` items per type, or a
    probe over budget): then the caller solves item by item. ``max_states``
    and ``state_bytes`` are the kernel's state budget and state size; the DP
    keeps to the same bytes and reports ``peak_states`` in kernel states."""
    # The MIN_COPIES rule: n >= MIN_COPIES * types exactly when types <=
    # n // MIN_COPIES, so the grouping stops past that many pairs (at
    # n < MIN_COPIES it does not run).
    most = min(MAX_TYPES, w.size // MIN_COPIES)
    kg = group(w, v, most) if most else None
    if kg is None:
        return None
    kind, first = kg
    if e is None:
        G, J = [int(x) for x in w[first].tolist()], int(cap)
    else:
        G, J = [floor_grid(x, e) for x in w[first].tolist()], floor_grid(cap, e)  # exact
    per_state = 16 * (3 + len(G))  # conservative: the DP holds two fronts of 24 bytes and 5 bytes of records a state
    budget = max(1, min(MAX_STATES, max_states * state_bytes // per_state))
    res = solve_grouped(kind, G, v[first].tolist(), J, integral, tol, budget)
    if res is None:
        return None
    chosen, stats = res
    stats["grouped"] = True
    stats["peak_states"] = -(-stats["peak_states"] * per_state // state_bytes)
    return chosen, stats


def solve_types(g, v, cap: int, integral: bool, tol: float, max_states: int):
    """Exact canonical set of items with exact integer weights ``g`` (ints or
    integer-valued floats), values ``v`` and capacity ``cap``, grouped by
    type. Returns (chosen positions, stats), or None when the items have more
    than ``MAX_TYPES`` pairs, their total is 2**104 or more, or a probe
    outgrows ``max_states`` (the caller then solves item by item)."""
    g = np.asarray(g)
    kg = group(g, v)
    if kg is None:
        return None
    kind, first = kg
    G = [int(x) for x in g[first].tolist()]
    return solve_grouped(kind, G, v[first].tolist(), int(cap), integral, tol, max_states)


def solve_grouped(kind, G, V, cap: int, integral: bool, tol: float, max_states: int):
    """``solve_types`` on grouped items: ``kind[i]`` is item i's type, ``G``
    and ``V`` each type's exact integer weight and value."""
    counts = np.bincount(kind, minlength=len(G))
    if sum(c * x for c, x in zip(counts.tolist(), G)) >= _MAX_TOTAL or cap >= _MAX_TOTAL:
        return None
    problem = _Grouped(kind, G, V, counts, tol, max_states)
    try:
        chosen = problem.canonical(cap)
    except TooManyStates:
        return None
    stats = {
        "types": len(G), "probes": problem.probes, "dp_runs": problem.dp_runs, "peak_states": problem.peak,
    }
    return chosen, stats


class _Grouped:
    """Types, their positions and the exact probes on them."""

    def __init__(self, kind, G, V, counts, tol, max_states):
        self.T = len(G)
        self.G = G
        self.V = [float(x) for x in V]
        self.Gf = [float(x) for x in G]
        self.counts = counts.astype(np.int64)
        small = np.int8 if self.T <= 127 else np.int16 if self.T <= 32767 else np.int64
        order = np.argsort(kind.astype(small), kind="stable")  # radix sort on small ints
        self.pos = np.split(order, np.cumsum(counts)[:-1])
        self.kind = kind
        # Efficiency order (ties by type number: it steers the search only).
        self.eff = [self.V[t] / self.Gf[t] for t in range(self.T)]
        self.by_eff = sorted(range(self.T), key=lambda t: (-self.eff[t], t))
        # ``avail`` in one search: each type's positions shifted into its own
        # block of n + 1 (ascending across blocks, as each type's are)
        block = np.arange(self.T, dtype=np.int64) * (kind.size + 1)
        self._flat = order + np.repeat(block, counts)
        self._blocks = block
        self._starts = np.cumsum(counts) - counts
        # ``_lp_sums``: the types' weights, values and efficiencies in efficiency order
        self._eff_types = np.array(self.by_eff, dtype=np.int64)
        self._eff_G = np.array([self.Gf[t] for t in self.by_eff])
        self._eff_V = np.array([self.V[t] for t in self.by_eff])
        self._eff_e = np.array([self.eff[t] for t in self.by_eff])
        self.tol = tol
        self.slack = _BOUND_SLACK * float(sum(c * x for c, x in zip(counts.tolist(), self.V))) + tol
        self.max_states = max_states
        self.probes = self.dp_runs = self.peak = 0
        self.classes = self._proportional()

    # -- positions ---------------------------------------------------------
    def avail(self, p: int, free) -> np.ndarray:
        """Copies of each free type at positions <= p (0 for fixed types)."""
        b = np.searchsorted(self._flat, self._blocks + p, side="right") - self._starts
        if len(free) < self.T:
            b[[t for t in range(self.T) if t not in free]] = 0
        return b

    def last(self, y, free) -> int:
        """L(y): the highest position y uses among the free types (-1: none)."""
        return max((int(self.pos[t][y[t] - 1]) for t in free if y[t] > 0), default=-1)

    # -- the canonical scan ------------------------------------------------
    def canonical(self, cap: int) -> np.ndarray:
        full = self.counts.copy()
        opt, y = self.best(full, cap)
        free = set(range(self.T))
        kept = {}
        J, P = cap, opt
        while P > self.tol:  # the target is not reached by the empty set
            hi, lo = self.last(y, free), -1
            if hi < 0:
                break
            first = True  # the witness's last position is often the answer: try it, then bisect
            while hi - lo > 1:
                mid = hi - 1 if first else (lo + hi) // 2
                first = False
                z = self.decide(self.avail(mid, free), J, P)
                if z is None:
                    lo = mid
                else:
                    y, hi = z, self.last(z, free)
            # The item at hi is kept, and with it every copy of its type below.
            t = int(self.kind[hi])
            k = int(y[t])
            kept[t] = k
            J -= k * self.G[t]
            P -= k * self.V[t]
            free.discard(t)
            y = y.copy()
            y[t] = 0
        if not kept:
            return np.zeros(0, dtype=np.int64)
        return np.sort(np.concatenate([self.pos[t][:k] for t, k in kept.items()]))

    # -- probes ------------------------------------------------------------
    def decide(self, b, J: int, P: float):
        """A count vector y <= b with weight <= J and value >= P - tol, or None."""
        self.probes += 1
        if P <= self.tol:
            return np.zeros(self.T, dtype=np.int64)
        bl = b.tolist()
        if self.lp(bl, float(J)) < P - self.slack:
            return None
        y, val = self.greedy(bl, J)
        if val >= P - self.tol:
            return y
        if sum(1 for t in range(self.T) if bl[t] > 0 and self.G[t] <= J) <= 1:
            return None  # one type: as many copies as fit is the best
        return self.dp(b, J, P)

    def best(self, b, J: int):
        """(OPT, an optimal count vector) within counts b and capacity J."""
        y, val = self.greedy(b.tolist(), J)
        z = self.dp(b, J, None, lower=val)
        if z is None or self.value(z) < val:
            return val, y
        return self.value(z), z

    def value(self, y) -> float:
        """The value of count vector ``y`` (an array or a list), correctly rounded."""
        return math.fsum(k * v for k, v in zip(y.tolist() if isinstance(y, np.ndarray) else y, self.V))  # noqa: B905

    def greedy(self, b: list, J: int):
        """Greedy in efficiency order, exact: a feasible y and its value
        (counts ``b`` as a list)."""
        y = [0] * self.T
        for t in self.by_eff:
            k = min(b[t], J // self.G[t])
            y[t] = k
            J -= k * self.G[t]
        return np.array(y, dtype=np.int64), self.value(y)

    def lp(self, b: list, R: float):
        """Dantzig's bound: the best fractional fill of capacity R (float),
        counts ``b`` as a list."""
        total = 0.0
        for t in self.by_eff:
            w = b[t] * self.Gf[t]
            if w >= R:
                return total + R * self.eff[t]
            total += b[t] * self.V[t]
            R -= w
        return total

    def dp(self, b, J: int, target, lower: float = -math.inf):
        """``_dp`` on the counts the reduction leaves free, with proportional
        types merged into units (``_units``); same results."""
        box = self.reduce(b, J, lower if target is None else target)
        if box is None:
            return None
        low, free, J2 = box
        base = self.value(low)
        units, merged, near = self._units(free)
        z = self._dp(units, J2, None if target is None else target - base, lower - base, near)
        return None if z is None else low + self._split(z, free, merged, near)

    def _proportional(self):
        """Classes of proportional types: for each root s (the lightest), the
        types t with G_t = k G_s and V_t = k V_s exactly (integer k >= 2), as
        (t, k); and ``self.near``: for a root s, one type t with V_t = k V_s
        exactly and G_t = k G_s - delta, 0 < delta <= k G_s / 2**30 (a few
        ulps lighter, as 3 * (x / 64) and 3 * x / 64 in float64)."""
        classes = {}
        for t in sorted(range(self.T), key=lambda t: (self.G[t], t)):
            for r in classes:
                k, rem = divmod(self.G[t], self.G[r])
                if rem == 0 and k >= 2 and self.V[t] == k * self.V[r]:
                    classes[r].append((t, k))
                    break
            else:
                classes[t] = []
        self.near = {}
        members = {t for m in classes.values() for t, _ in m}
        for r in classes:
            for t in range(self.T):
                if t == r or t in members or classes.get(t) or t in [x for x, *_ in self.near.values()]:
                    continue
                q = self.V[t] / self.V[r] if self.V[r] > 0 else 0.0
                k = round(q) if q < 2.0**62 else 0  # runtimes 10^300 apart: inf, no multiple
                delta = k * self.G[r] - self.G[t]
                if k >= 2 and self.V[t] == k * self.V[r] and 0 < delta <= (k * self.G[r]) >> 30:
                    self.near[r] = (t, k, delta)
                    break
        return {r: m for r, m in classes.items() if m or r in self.near}

    def _units(self, b):
        """Counts with each proportional class as units of its root type.

        A class (root s, members t with G_t = k_t G_s, V_t = k_t V_s) offers
        exactly the unit totals 0..U, U = b_s + sum k_t b_t, when b_s >=
        max k_t - 1 (see ``_split``); every count vector of the class has the
        weight and value of its units. So within counts b the problem is the
        same with the root's count U and the members' 0. Classes whose root
        has too few copies stay as they are.

        One class may also take its near type (k copies of the root less
        delta, with b_near delta < G_s): u units then weigh at least
        u G_s - min(b_near, u // k) delta (as many near copies as u allows;
        each saves delta), value u V_s. Returns (units, merged classes, the
        near class as {root: (type, k, delta, count)}).
        """
        units = b.copy()
        merged = []
        near = {}
        for r, members in self.classes.items():
            used = [(t, k) for t, k in members if b[t] > 0]
            nt = self.near.get(r)
            take_near = (
                not near and nt is not None and b[nt[0]] > 0 and int(b[nt[0]]) * nt[2] < self.G[r]
            )
            ks = [k for _, k in used] + ([nt[1]] if take_near else [])
            if not ks or int(b[r]) < max(ks) - 1:
                continue
            units[r] = int(b[r]) + sum(k * int(b[t]) for t, k in used)
            for t, _ in used:
                units[t] = 0
            if take_near:
                t, k, delta = nt
                units[r] += k * int(b[t])
                units[t] = 0
                near[r] = (t, k, delta, int(b[t]))
            merged.append((r, used))
        return units, merged, near

    def _split(self, y, b, merged, near):
        """Units back to copies: the near type first, as many as u // k (the
        lightest way to hold u units), then members largest k first, each as
        many as the units allow, the root takes the rest. The rest is at
        most b_s: if a type is short of its b_t, fewer than k_t <= b_s + 1
        units were left after it; if none is, the rest is u - sum k_t b_t
        <= b_s."""
        y = y.copy()
        for r, used in merged:
            u = int(y[r])
            if r in near:
                t, k, _, cnt = near[r]
                y[t] = min(cnt, u // k)
                u -= k * int(y[t])
            for t, k in sorted(used, key=lambda tk: -tk[1]):
                y[t] = min(int(b[t]), u // k)
                u -= k * int(y[t])
            y[r] = u
        return y

    def reduce(self, b, J: int, thr: float):
        """Counts every y <= b of weight <= J and value >= thr keeps:
        (lowest counts, free range above them, capacity left), or None when
        no such y exists.

        With lam the efficiency of the LP's break type and d_t = V_t - lam G_t,
        any y of weight <= J has V.y = lam G.y + d.y <= U - sum_{d_t > 0}
        d_t (b_t - y_t) - sum_{d_t < 0} |d_t| y_t, where U = lam J +
        sum_{d_t > 0} d_t b_t (Dantzig's bound). So V.y >= thr bounds each
        term by U - thr: b_t - y_t <= (U - thr) / d_t, y_t <= (U - thr) / |d_t|.
        ``slack`` on U covers its float rounding.
        """
        R, lam = float(J), 0.0
        for t in self.by_eff:
            w = int(b[t]) * self.Gf[t]
            if w >= R and b[t] > 0:
                lam = self.eff[t]
                break
            R -= w
        d = [self.V[t] - lam * self.Gf[t] for t in range(self.T)]
        gap = lam * float(J) + math.fsum(dt * int(bt) for dt, bt in zip(d, b.tolist()) if dt > 0) - thr + self.slack
        if gap < 0:
            return None
        low = np.zeros(self.T, dtype=np.int64)
        free = b.copy()
        for t in range(self.T):
            if d[t] > 0 and gap < d[t] * int(b[t]):
                low[t] = int(b[t]) - math.floor(gap / d[t])
                free[t] = int(b[t]) - low[t]
            elif d[t] < 0 and gap < -d[t] * int(b[t]):
                free[t] = math.floor(gap / -d[t])
        J2 = J - sum(int(low[t]) * self.G[t] for t in range(self.T) if low[t])
        if J2 < 0:
            return None
        return low, free, J2

    def _dp(self, b, J: int, target, lower: float = -math.inf, near=None):
        """Pareto DP over binary pieces of the types in efficiency order; one
        type (``last``) is not merged but completes each state in closed form
        (as many copies as fit: the best use of one type).

        ``target`` given: a state reaching it (its count vector) or None.
        ``target`` None: the best state's count vector (None when no state
        beats ``lower``, the value of a known feasible set).
        """
        self.dp_runs += 1
        fits = [t for t in self.by_eff if b[t] > 0 and self.G[t] <= J]
        if not fits:
            reached = target is None or target <= self.tol
            return np.zeros(self.T, dtype=np.int64) if reached else None
        # Two types: complete by the one with more copies (the front is then
        # at most the other's count). More: by the least efficient, merging
        # the rest in efficiency order, where dominance keeps fronts small.
        last = max(fits, key=lambda t: (int(b[t]), -t)) if len(fits) == 2 else fits[-1]
        if near and next(iter(near)) in fits:
            last = next(iter(near))  # its weight is not linear in its units: closed form only
        pieces = []
        for t in fits:
            rest, k = int(b[t]), 1
            while rest > 0 and t != last:
                q = min(k, rest)
                pieces.append((t, q))
                rest -= q
                k <<= 1
        pt = np.array([t for t, _ in pieces], dtype=np.int64)
        pq = np.array([q for _, q in pieces], dtype=np.int64)
        pv = np.array([q * self.V[t] for t, q in pieces])
        fill = near[last][1:] if near and last in near else None  # (k, delta, count) of the near class
        y, peak = pareto_dp(
            pt, pq, [q * self.G[t] for t, q in pieces], pv, J, (last, self.G[last], int(b[last]), self.V[last]), fill,
            np.ascontiguousarray(b, dtype=np.int64), self._eff_types, self._eff_G, self._eff_V, self._eff_e,
            None if target is None else float(target), float(lower), self.tol, self.slack, self.max_states,
        )
        self.peak = max(self.peak, peak)
        return y
