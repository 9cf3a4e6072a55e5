"""The forward canonical DP (``_forward``) against brute force, and sparse
with the canonical pass forced onto it against dp."""

import random

import numpy as np
import pytest

from remat_knapsack import _canonical, _forward, solve
from tests.oracles import brute_force, small_hard_instance


def test_forward_canonical_against_brute_force():
    rng = random.Random(1)
    for _ in range(2000):
        n, R = rng.randint(1, 11), rng.choice([5, 10, 100])
        w = [rng.randint(1, R) for _ in range(n)]
        kind = rng.randrange(3)
        v = [rng.randint(1, R) for _ in range(n)] if kind == 0 else [x + kind * (R // 10) for x in w]
        c = rng.randint(0, sum(w))
        opt, saved = brute_force(w, v, c)
        code, x = _forward.canonical(np.array(w, float), np.array(v, float), float(c), float(opt), True, 0.0)
        assert code == 0 and np.flatnonzero(x).tolist() == saved, (w, v, c)


def test_forward_over_budget_or_state_limit():
    w = np.arange(1.0, 40.0)
    code, x = _forward.canonical(w, w + 3, 300.0, 0.0, True, 0.0, budget=10)
    assert code == -1 and not x.any()
    code, _ = _forward.canonical(w, w + 3, 300.0, 0.0, True, 0.0, max_states=4)
    assert code == -1


@pytest.fixture
def forward_always():
    old = _canonical._configure_forward(0)
    yield
    _canonical._configure_forward(old)


@pytest.mark.parametrize("seed", range(2))
def test_sparse_with_forward_against_dp(seed, forward_always):
    rng = random.Random(300 + seed)
    for _ in range(300):
        w, v, c = small_hard_instance(rng, n_max=60)
        ref = solve(w, v, c, scale=1, solver="dp")
        got = solve(w, v, c, scale=1, solver="sparse")
        assert (got.value, got.saved) == (ref.value, ref.saved), (w, v, c)
