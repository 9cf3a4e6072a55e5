"""Differential checks: every exact solver against dp and exact brute force.

``draw_case(rng)`` draws one instance (memory, runtimes, max_memory, scale) of
a shape the solvers must get right: duplicates (real graphs repeat 4-6 item
shapes), Pisinger's families, zero and negative runtimes, capacities at 0, at
the total and beside item weights, integer runtimes from 1 to 2**62,
decimal runtimes, subnormal and huge memories, ``scale=None``.
``check(case)`` solves it with every solver and returns the mismatches, and
``counts`` tallies the checks made per (oracle, solver). Used by
tests/test_differential.py (Hypothesis) and tests/fuzz_differential.py
(the timed runner behind .ci/fuzz-differential).

Oracles: ``brute`` (tests/oracles.py's enumeration in exact integers or
fractions, n <= 11) and ``dp`` (``solve(..., solver="dp")``, scale=1 only).
Where runtimes are exact (integers of any size, or on a power-of-two grid
whose sum is below 2**53) the set must be the oracle's canonical set; other
runtimes must be within the documented float64 bound of the optimum
(``sparse._solver``, "Values"), feasible exactly.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
from oracles import brute_force

from remat_knapsack import frontier, instances, solve
from remat_knapsack._common._grid import grid_exponent
from remat_knapsack._common._validate import validate

BRUTE_MAX = 11
DP_MAX_CELLS = 2_000_000

#: (oracle, solver) -> number of checks made
counts: Counter = Counter()


def _runtimes(rng, n):
    kind = rng.choice(["small", "big", "odd52", "flops", "decimal", "dyadic", "mixed"])
    if kind == "small":
        return [float(rng.randint(-2, 10)) for _ in range(n)]
    if kind == "big":
        e = rng.randint(1, 62)
        return [float(rng.randint(1, 1 << e)) for _ in range(n)]
    if kind == "odd52":
        e = rng.randint(50, 62)
        return [float((1 << e) + 2 * rng.randint(0, 50) + 1) for _ in range(n)]
    if kind == "flops":
        shapes = [float(rng.randint(1, 1 << rng.randint(20, 62)) | 1) for _ in range(rng.randint(1, 5))]
        return [rng.choice(shapes) for _ in range(n)]
    if kind == "decimal":
        return [round(rng.uniform(-1, 100), rng.randint(0, 3)) for _ in range(n)]
    if kind == "dyadic":
        return [rng.randint(0, 64) / 2.0 ** rng.randint(0, 8) for _ in range(n)]
    vals = [float(rng.randint(1, 1 << 62)) for _ in range(n)]  # mixed: big integers and a fraction
    if n:
        vals[rng.randrange(n)] = rng.choice([0.5, 2.0**-1000, 1e-3, -3.0, 0.0])
    return vals


def _memory_int(rng, n):
    kind = rng.choice(["small", "shapes", "wide", "zeros"])
    if kind == "small":
        return [float(rng.randint(1, 12)) for _ in range(n)]
    if kind == "shapes":
        shapes = [float(rng.randint(1, 50)) for _ in range(rng.randint(1, 5))]
        return [rng.choice(shapes) for _ in range(n)]
    if kind == "wide":
        return [float(rng.randint(1, 1000)) for _ in range(n)]
    return [float(rng.choice([0, 0, rng.randint(1, 9)])) for _ in range(n)]


def _memory_real(rng, n):
    kind = rng.choice(["decimal", "subnormal", "huge", "dyadic", "shapes"])
    if kind == "decimal":
        return [round(rng.uniform(0, 1), rng.randint(1, 4)) for _ in range(n)]
    if kind == "subnormal":
        return [rng.choice([5e-324 * rng.randint(0, 9), 2.0**-1060 * rng.randint(1, 5), 1e-310])
                for _ in range(n)]
    if kind == "huge":
        return [rng.choice([1e300, 1.5e300, 3e299, 7e304]) * rng.randint(1, 3) for _ in range(n)]
    if kind == "dyadic":
        return [rng.randint(0, 16) / 2.0 ** rng.randint(0, 60) for _ in range(n)]
    shapes = [rng.uniform(0, 1) for _ in range(rng.randint(1, 4))]
    return [rng.choice(shapes) for _ in range(n)]


def _capacity(rng, mem):
    pos = [m for m in mem if m > 0]
    total = math.fsum(mem)
    kind = rng.choice(["zero", "total", "beside", "random", "random", "sum_of_some"])
    if kind == "zero" or not pos:
        return 0.0
    if kind == "total":
        return total
    if kind == "beside":
        m = rng.choice(pos)
        return max(0.0, rng.choice([m, math.nextafter(m, 0), math.nextafter(m, math.inf), m - 1, m + 1]))
    if kind == "sum_of_some":
        s = math.fsum(rng.sample(pos, rng.randint(1, len(pos))))
        return rng.choice([s, math.nextafter(s, 0), math.nextafter(s, math.inf)])
    return rng.uniform(0, total)


def draw_case(rng):
    """One random instance: (memory, runtimes, max_memory, scale)."""
    n = rng.randint(0, BRUTE_MAX) if rng.random() < 0.75 else rng.randint(BRUTE_MAX + 1, 60)
    scale = rng.choice([1, 1, None])
    if rng.random() < 0.2 and n >= 3:  # one of Pisinger's families, small
        inst = instances.pisinger(rng.choice(instances.CLASSES + instances.HARD_CLASSES), n,
                                  rng.choice([10, 100, 1000]), rng.randrange(10**6))
        mem = [float(x) for x in inst.memory]
        run = [float(x) for x in inst.runtimes]
        if rng.random() < 0.5:  # the same shape with huge odd runtimes
            sh = 1 << rng.randint(40, 52)
            run = [float(x * sh + 1) for x in run]
    else:
        mem = _memory_int(rng, n) if scale == 1 else _memory_real(rng, n)
        run = _runtimes(rng, n)
    if rng.random() < 0.1 and (n <= BRUTE_MAX or scale == 1):  # subset sums: runtimes proportional to memory
        # (Not on many real weights: with no subset filling the budget, exact
        # subset sums over 53-bit or 60-octave weights keep up to 2**n states.)
        k = rng.choice([1.0, 1.0, 3.0, 0.5])
        run = [x * k for x in mem]
    if rng.random() < 0.3 and n >= 2:  # duplicates: copy some items over others
        for _ in range(rng.randint(1, n)):
            i, j = rng.randrange(n), rng.randrange(n)
            mem[j], run[j] = mem[i], run[i]
    if math.fsum(x for x in run if x > 0) >= 2.0**900:
        run = [x / 2.0**200 for x in run]
    return mem, run, _capacity(rng, mem), scale


def _exact_regime(v):
    """Whether sums of the positive runtimes ``v`` are compared exactly."""
    v = np.asarray([x for x in v if x > 0], dtype=np.float64)
    if v.size == 0 or bool(np.array_equal(v, np.floor(v))):
        return True
    with np.errstate(over="ignore"):
        g = np.ldexp(v, -grid_exponent(v))
    return bool(np.all(np.isfinite(g))) and math.fsum(g.tolist()) < 2.0**53


def _bound(v):
    """The documented float64 bound on the miss (``sparse._solver``, "Values")."""
    pos = [x for x in v if x > 0]
    n, total = len(pos), math.fsum(pos)
    return 2 * min(1e-12, n * 2.0**-52) * total + (2 * n + 1) * 2.0**-52 * total


def _exact_value(run, saved):
    return sum((Fraction(run[i]) for i in saved), Fraction(0))


def check(case):
    """Solve ``case`` with every solver and compare with the oracles; returns
    a list of mismatch descriptions (empty: all agree)."""
    mem, run, cap, scale = case
    problem = validate(mem, run, cap, scale)
    n = len(mem)
    exact = _exact_regime(run)
    if scale is None:
        w_exact = [Fraction(x) for x in mem]
        c_exact = Fraction(cap)
    else:
        w_exact = [int(x) for x in problem.weights.tolist()]
        c_exact = int(problem.capacity)
    runs = {}
    solvers = ["sparse", "auto"] + (["hirschberg", "dp"] if scale is not None else [])
    for s in solvers:
        if s in ("hirschberg", "dp") and n * (int(c_exact) + 1) > DP_MAX_CELLS:
            continue
        runs[s] = solve(mem, run, cap, solver=s, scale=scale)
    fr = frontier(mem, run, cap, scale=scale)
    out = []
    oracles = []
    if n <= BRUTE_MAX:
        vals = [int(x) if x == int(x) else Fraction(x) for x in run]
        bv, bs = brute_force(w_exact, vals, c_exact)
        oracles.append(("brute", max(Fraction(bv), Fraction(0)), bs))
    if "dp" in runs and exact:
        oracles.append(("dp", _exact_value(run, runs["dp"].saved), runs["dp"].saved))
    bound = _bound(run)
    for oname, ov, osaved in oracles:
        for s, sol in runs.items():
            if s == oname:
                continue
            counts[(oname, s)] += 1
            got = _exact_value(run, sol.saved)
            used = sum((Fraction(w_exact[i]) for i in sol.saved), Fraction(0))
            if used > c_exact:
                out.append(f"{s} over budget vs {oname}: saved {sol.saved}, weight {used} > {c_exact}")
            elif exact and sol.saved != osaved:
                out.append(f"{s} vs {oname}: saved {sol.saved} ({got}), oracle {osaved} ({ov})")
            elif not exact and ov - got > bound:
                out.append(f"{s} vs {oname}: value {float(got)} misses {float(ov)} by more than {bound}")
        counts[(oname, "frontier")] += 1
        fb = Fraction(fr.best(cap))
        want = Fraction(float(ov)) if exact else ov
        if (exact and fb != want) or (not exact and abs(fb - ov) > bound):
            out.append(f"frontier vs {oname}: best {float(fb)}, oracle {float(ov)}")
    return out


def reproducer(case):
    mem, run, cap, scale = case
    return f"solve({mem!r}, {run!r}, {cap!r}, scale={scale!r})"
