"""``_front``, the grouped solver's compiled DP steps, against what they
replaced: ``merge`` against a sorted merge (a stable sort of both lists, then
the Pareto filter), ``lp_keep`` against the numpy bound, ``fill_one_limb``
against Python's integer division."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from remat_knapsack._front import LIMB, fill_one_limb, lp_keep, merge

MASK = (1 << LIMB) - 1


def _sorted_merge(h, lo, V, ph, pl, pv, Jh, Jl):
    """The reference: every state and its shifted copy within J, in exact
    weight order (old first on ties), then the first state of each new
    largest value, the last of equal weight kept."""
    J = (Jh << LIMB) + Jl
    rows = [((int(a) << LIMB) + int(b), float(p), i, False) for i, (a, b, p) in enumerate(zip(h, lo, V))]
    w = (ph << LIMB) + pl
    rows += [(x + w, p + pv, i, True) for x, p, i, _ in rows[: len(V)] if x + w <= J]
    rows.sort(key=lambda r: (r[0], r[3]))  # stable: old states first on ties, in their order
    out = []
    for x, p, i, took in rows:
        if not out or p > out[-1][1]:
            if out and out[-1][0] == x:
                out.pop()
            out.append((x, p, i, took))
    return out


@st.composite
def fronts(draw):
    big = draw(st.booleans())  # weights beyond one limb
    top = 1 << 70 if big else 60
    ws = sorted(set(draw(st.lists(st.integers(0, top), min_size=1, max_size=30))))
    gains = draw(st.lists(st.integers(1, 9), min_size=len(ws), max_size=len(ws)))
    V = np.cumsum(np.array(gains, dtype=np.float64))  # values rise along the front
    piece = draw(st.integers(0, top))
    pv = float(draw(st.integers(-3, 12)))
    J = draw(st.integers(0, 2 * top))
    return ws, V, piece, pv, J


@settings(max_examples=400, deadline=None)
@given(fronts())
def test_merge_is_the_sorted_merge(case):
    ws, V, piece, pv, J = case
    h = np.array([x >> LIMB for x in ws], dtype=np.int64)
    lo = np.array([x & MASK for x in ws], dtype=np.int64)
    H, L, P, parent, took = merge(h, lo, V, piece >> LIMB, piece & MASK, pv, J >> LIMB, J & MASK)
    want = _sorted_merge(h, lo, V, piece >> LIMB, piece & MASK, pv, J >> LIMB, J & MASK)
    got = [((int(a) << LIMB) + int(b), float(p), int(i), bool(t)) for a, b, p, i, t in zip(H, L, P, parent, took)]
    assert got == want
    assert all(0 <= int(b) <= MASK for b in L)  # limbs normalised
    assert took.dtype == bool


def test_merge_of_an_empty_front():
    e = np.zeros(0, dtype=np.int64)
    H, L, P, parent, took = merge(e, e, np.zeros(0), 0, 1, 1.0, 0, 5)
    assert H.size == L.size == P.size == parent.size == took.size == 0


def _numpy_lp_keep(h, lo, V, Jh, Jl, cw, cv, eff, thr):
    # the numpy expression lp_keep replaced (``_types._dp``'s Dantzig bound)
    R = (Jh - h).astype(np.float64) * float(1 << LIMB) + (Jl - lo).astype(np.float64)
    k = np.minimum(np.searchsorted(cw, R, side="right") - 1, len(cw) - 1)
    return V + cv[k] + np.maximum(R - cw[k], 0.0) * eff[k] >= thr


@settings(max_examples=300, deadline=None)
@given(fronts(), st.lists(st.tuples(st.integers(1, 1 << 66), st.integers(1, 50)), max_size=6), st.floats(-5, 400))
def test_lp_keep_is_the_numpy_bound(case, types, thr):
    ws, V, _, _, J = case
    ws = [x for x in ws if x <= J] or [0]
    V = V[: len(ws)]
    h = np.array([x >> LIMB for x in ws], dtype=np.int64)
    lo = np.array([x & MASK for x in ws], dtype=np.int64)
    types = sorted(types, key=lambda t: -t[1] / t[0])  # efficiency order
    cw = np.concatenate(([0.0], np.cumsum([float(g) for g, _ in types])))
    cv = np.concatenate(([0.0], np.cumsum([float(p) for _, p in types])))
    eff = np.array([p / g for g, p in types] + [0.0])
    args = (h, lo, V, J >> LIMB, J & MASK, cw, cv, eff, thr)
    assert np.array_equal(lp_keep(*args), _numpy_lp_keep(*args))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, (1 << 61) - 1), min_size=1, max_size=40), st.integers(1, 1 << 40), st.integers(0, 99))
def test_fill_one_limb_is_integer_division(ws, g, most):
    J = max(ws)
    lo = np.array(ws, dtype=np.int64)
    assert fill_one_limb(lo, J, g, most).tolist() == [min(most, (J - x) // g) for x in ws]
