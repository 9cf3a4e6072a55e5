"""sparse against dp on many small structured instances (near-line, correlated,
inverse, subset sum): the shapes where the cardinality bounds are active."""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remat_knapsack import solve
from remat_knapsack.sparse import _sparse
from tests.oracles import small_hard_instance


def _instance(rng: random.Random) -> tuple[list[int], list[int], int]:
    n = rng.randint(1, 12)
    R = rng.choice([5, 10, 100, 1000])
    kind = rng.randrange(6)
    w = [rng.randint(1, R) for _ in range(n)]
    if kind == 0:
        v = [rng.randint(1, R) for _ in range(n)]
    elif kind == 1:
        v = [x + R // 10 for x in w]
    elif kind == 2:
        v = list(w)
    elif kind == 3:
        v = [max(1, x + rng.randint(-R // 10, R // 10)) for x in w]
    elif kind == 4:
        v = [rng.randint(1, R) for _ in range(n)]
        w = [x + R // 10 for x in v]
    else:
        a, b = rng.randint(1, 3), rng.randint(-R // 5, R // 5)
        v = [max(1, a * x + b + rng.randint(0, 2)) for x in w]
    return w, v, rng.randint(0, sum(w))


@pytest.mark.parametrize("seed", range(4))
def test_structured_small_instances_against_dp(seed):
    rng = random.Random(seed)
    for _ in range(1500):
        w, v, c = _instance(rng)
        ref = solve(w, v, c, scale=1, solver="dp")
        got = solve(w, v, c, scale=1, solver="sparse")
        assert (got.value, got.saved) == (ref.value, ref.saved), (w, v, c)


@pytest.mark.parametrize(
    ("w", "v", "c", "saved"),
    [
        # The cardinality bound's target skipped past the optimum (a fixpoint
        # that jumped over budgets with a looser count term): sparse kept 4.
        ([3, 4, 3, 5], [1, 4, 1, 5], 6, [3]),
        ([93, 96, 82, 88, 30, 8, 10], [171, 175, 148, 159, 45, 1, 5], 100, [1]),
    ],
)
def test_cardinality_target_is_an_upper_bound(w, v, c, saved):
    assert solve(w, v, c, scale=1, solver="sparse").saved == saved
    real = [x / 4 for x in w]
    assert solve(real, v, c / 4, scale=None).saved == saved


@pytest.fixture
def pair_every_step():
    """Pair states with outside items at every core step of every run
    (``_pairs.pxd``), so small instances exercise every pairing path."""
    from remat_knapsack.sparse import _expand

    old = _expand._configure_pairing(1)
    yield
    _expand._configure_pairing(old)


@pytest.mark.parametrize("seed", range(3))
def test_pairing_against_dp(seed, pair_every_step):
    rng = random.Random(100 + seed)
    for i in range(400):
        w, v, c = _instance(rng) if i % 2 else small_hard_instance(rng)
        ref = solve(w, v, c, scale=1, solver="dp")
        got = solve(w, v, c, scale=1, solver="sparse")
        assert (got.value, got.saved) == (ref.value, ref.saved), (w, v, c)


@pytest.mark.parametrize("d", [2, 3, 6])
def test_common_divisors_change_nothing(d):
    # Values and weights that are all multiples of d are divided by their gcd
    # (divisibility): the set is the one dp keeps on the undivided instance.
    rng = random.Random(d)
    for _ in range(300):
        w, v, c = _instance(rng)
        w, v = [d * x for x in w], [d * x for x in v]
        c = rng.randint(0, sum(w))
        ref = solve(w, v, c, scale=1, solver="dp")
        assert solve(w, v, c, scale=1, solver="sparse").saved == ref.saved, (w, v, c)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(0, 70_000).map(float), st.floats(0, 1e300, allow_nan=False, allow_infinity=False)),
        max_size=300,
    )
)
def test_radix_sort_is_a_stable_argsort(x):
    # The kernels' weight order (_radix.pxd): integer keys, or bit patterns
    # when a value is not an integer below 2**53; ties by position.
    from remat_knapsack.sparse import _sparse

    a = np.array(x, dtype=float)
    assert np.array_equal(_sparse._sort_ascending_py(a), np.argsort(a, kind="stable"))


def test_radix_sort_packs_positions_when_they_fit():
    # Integer keys with room for the position below them sort one packed
    # array (_radix._sort_packed); larger keys and fractions keep key and
    # position apart (_sort_pairs). Both stable, at sizes whose positions
    # take 1 to 19 bits.
    from remat_knapsack.sparse import _sparse

    rng = np.random.default_rng(1)
    for n in (1, 2, 3, 257, 100_000, 300_000):
        for top in (2, 70_000, 10**6, 2**40, 2**52):
            a = rng.integers(0, top, n).astype(float)
            assert np.array_equal(_sparse._sort_ascending_py(a), np.argsort(a, kind="stable")), (n, top)
        a = rng.random(n) * 1e6
        assert np.array_equal(_sparse._sort_ascending_py(a), np.argsort(a, kind="stable")), n


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**53 - 1), max_size=40), st.integers(1, 2**20))
def test_gcd_of_matches_numpy(values, factor):
    """``_sparse.gcd_of`` (early exit at 1, remainders by a multiplication)
    against ``np.gcd.reduce``, on values sharing a factor and not."""
    for xs in (values, [x * factor for x in values if x * factor < 2**53]):
        g = np.array(xs, dtype=np.float64)
        expected = int(np.gcd.reduce(np.array(xs, dtype=np.int64))) if xs else 0
        assert _sparse.gcd_of(g) == expected
