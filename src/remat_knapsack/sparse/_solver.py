"""``sparse``: exact dynamic programming over Pareto-optimal (weight, value) states.

A dense DP touches every capacity 0..W, but W is only an artefact of
quantisation (about 3.1e8 for the paper's n=100). This solver's time and memory
depend on the number of (weight, value) states that can still be optimal, not
on W, and it also runs on unquantised real weights (``scale=None``).

Algorithm (orchestrated by ``_kernel`` below; each run is compiled, ``_expand.pyx``
through ``_sparse.pyx`` and, for step 3, ``_canonical.pyx``; GIL released):

Items whose values are their weights (subset sums; values proportional to
the weights are the same after gcd division) first try ``_subset_sum``:
when some subset weighs exactly c, dp_knapsack's set follows from the least
prefix holding such a subset and a scan down from it: O(n) and a few
bit-set questions that stop at their first yes. When no subset fills c, or
the questions outgrow their budget, the steps below decide.

0. **The core.** After the efficiency sort, the greedy set's value and the
   Dantzig bound at the break fix the items no optimal set can change
   (``_core.py``); when at most 15% of the items stay free (uncorrelated,
   weakly correlated, similar weights) the steps below run on those alone.
1. **OPT.** Items in efficiency order (runtime / memory; ties in any
   deterministic order, which steers the search but never the answer); the
   break item ``b`` is the first that no longer fits. Starting from the break
   solution, an expanding core adds the next item after ``b`` and removes the
   next one before it, alternately, as in Pisinger's *minknap* (Pisinger 1997,
   "A minimal algorithm for the 0-1 knapsack problem", Oper. Res. 45(5)). After
   each step the state list (sorted by weight) is merged, dominated states are
   dropped, and a state is pruned when its upper bound cannot beat the
   incumbent (which starts at greedy): ``P + (c - W) e_t`` when it fits, and
   ``P - (W - c) e_s`` when it must still shed weight (e_t, e_s: efficiencies
   of the next items to add and to remove). A second, Lagrangian bound also
   counts items: ``P + lam (c - W) + mu (k - |state|) + sum of the remaining
   positive reduced profits v_j - lam w_j - mu``, with k the most items that
   fit (mu >= 0) or the fewest that can reach the goal (mu < 0), and (lam, mu)
   fitted to the items around the break. On strongly correlated items
   (v = w + R/10), where the LP bound is weak, it is exact. With integer
   runtimes the bounds are rounded down.
   When that bound is active, a heuristic run first looks for a set reaching
   it, keeping at most 512 states per step spread evenly over the weights;
   if it finds one, that set is optimal with nothing to prove.
   When the states reach a quarter of the items (and each time they
   double; under the heuristic run's cap, every n / 1,024 steps, at least
   every 16th), each state is *paired* with one item outside the core: a state
   that fits gains the most valuable later item within its slack, one over
   the capacity sheds the least valuable earlier item heavy enough
   (``_pairs.pxd``; Martello, Pisinger and Toth, "Dynamic programming and
   strong bounds for the 0-1 knapsack problem", Management Science 45,
   1999). O(n + states) a pass; a pair that beats the incumbent becomes it,
   and one that reaches an upper bound ends the run.
   **Two value lines.** When every item lies on one of two parallel lines
   q v = p w + e_A or p w + e_B (integers; Pisinger's multiple strongly
   correlated items, v = w + 3R/10 when 6 | w, else w + 2R/10), a set with
   a items of one class and b of the other is worth at most
   (p c + e_A a + e_B b) / q, and its lightest a and b items must fit:
   the best count pair (O(n), ``_lines.py``) bounds OPT, tighter than the LP
   and single-count bounds there. The run stops when its
   incumbent reaches that bound, and the canonical pass (3.) asks the same
   bound of the items below k before each decide run.
   Divisibility: integer values and weights are divided by their greatest
   common divisor first (``_values.divide_gcd``), so the integer rounding of the
   bounds sees that a better set of profit ceiling items is worth d more.
   Items are reduced as the core reaches them (minknap's item test): an
   item joins (or leaves) only if Dembo and Hammer's bound with it flipped,
   P_b +- v_j + (c - W_b -+ w_j) e_b, still reaches the incumbent (in count
   mode: the best k items with it flipped); otherwise it keeps its break
   value and costs no step.
   Each state keeps the decisions of its last 64 core steps; when the optimum
   needs older ones, the known items are fixed and a *decide* run (goal: reach
   the now-known value) recovers the rest, Pisinger's own device. Memory is
   O(states + n).

   **The count path.** When the items are count-structured (the fitted
   multiplier mu is not 0) but do not lie on a line, as almost strongly
   correlated items (v = w + R/10 +- R/500) or similar weights, the bounds
   above stay loose and the run can keep very many states. When that run
   outgrows 1,000 states, OPT is found count by count instead,
   with the cardinality bounds of Martello, Pisinger and Toth ("Dynamic
   programming and strong bounds for the 0-1 knapsack problem", Management
   Science 45, 1999). For a count k,
   ``U_k = min over lam >= 0 of lam c + (sum of the k largest v_j - lam w_j)``
   bounds every set of exactly k items (it is the LP with the count constraint
   added; ``_count_bound`` finds lam by tangent intersection in O(n) per
   step). U_k is concave in k with its peak at the break count b or b + 1, so
   the counts worth a run are an interval around them. Each run orders the
   items by d_j = v_j - lam_k w_j - mu_k, starts from the LP's k items and
   grows the same core, pruning a state of count K with
   ``lam c + mu k + (P - lam W - mu K) + (the k - K best d still to add, or
   the K - k worst still to remove, or one swap when K = k)`` and dominance
   among states of equal count only. On integer weights a run first fixes
   what the *swap window* of its count fixes (``_count_window.pxd``: with s
   the slack of the k lightest items, an item lighter than w_(k+1) - s is
   in every k-set and one heavier than w_(k) + s in none) and refits the
   multipliers to the items left: near the most items that fit that makes
   the count bound nearly exact (circle items; docs/algorithms.md). A
   count k below the most that fit, m, whose run outgrows max(32,768, 2 n) states is
   first tried by its *lift* (``_lift.py``): a k-set plus its m - k lightest
   missing items is an m-set, so the windowed bound of m-sets, less what
   those items are worth, bounds it. Runs accept
   ties, so each count either attains OPT or is proved below it; the counts
   that attain it feed the reduction (2.) and, when there is one, the decide
   runs of the canonical pass (3.) become count runs too. The path has a
   budget (200,000 + 20 n states); beyond it the run above takes over
   (count-mode decide runs get a quarter of it each, and the first one over it
   ends them for the pass). On
   items that lie on a line (strongly, inverse strongly correlated) it is not
   used: equal-count states are never dominated there, and the count bound of
   the run above is already exact.
2. **Reduction.** With OPT known, the Lagrangian bound with the break item's
   efficiency ``lam``, ``L = lam c + sum max(0, v_i - lam w_i)``, fixes every
   item whose exclusion (or inclusion) cannot reach OPT: they are in (out of)
   every optimal set, and so in (out of) the canonical one.
3. **Canonical set.** The answer must be the set PyTorch's ``dp_knapsack``
   backtrack returns: scanning from the highest index down, item ``i`` is left
   out whenever the optimum stays reachable with the items below it. Among the
   free items, from the top down: an item not in the current optimal witness
   is left out at no cost; an item in it is kept when O(1) bounds (value sum
   and Lagrangian bound of the free items below it) show the target cannot be
   reached without it; then the greedy set of the free items below it (one
   pass) may reach the target (left out, the new witness); otherwise a
   *decide* run on the free items below it either finds a new witness
   without it (left out) or proves it is needed (a 512-state heuristic run
   is tried first, unless the last one found nothing). Before it, a decide
   run on the shortest prefix the bounds allow, within a budget, may leave
   out every witness item above that prefix at once. A set S below k with
   w(S) <= j and v(S) >= tgt exists iff the prefix holds a set E to drop
   with v(E) <= pre_v - tgt and w(E) >= pre_w - j (its sums pre_v, pre_w):
   a knapsack with weights and values swapped, over the items of value at
   most pre_v - tgt only. At a tight prefix that is the smaller question;
   it is asked when pre_v - tgt < tgt, unless the direct run has an exact
   count bound (items on the multipliers' line), and a yes is followed by
   bisection down to the least prefix that holds a set.
   **Subset sums.** On items whose value is their weight, that question
   is whether some light items of the prefix sum to a value in a range:
   first the two lists below, over the items by ascending weight, then,
   while the sums reached fit 2**20 words, bit sets (the sums the first
   i items reach, S_i = S_{i-1} | S_{i-1} << w_i, 64 to a word; Pisinger,
   "Dynamic programming on the word RAM", Algorithmica 35, 2003), which
   answer no as fast as yes (``_subset_bits.pxd``); and the search for the
   least prefix gallops up from the shortest one before it bisects. Knowing OPT makes these runs
   cheap: every state whose bound is below the target is pruned. When the
   optimal set is (nearly) unique and the bounds are loose, every item of it
   costs a decide run that must exhaust its search; that is what the count
   path's reduction avoids on almost strongly correlated items. With the
   cardinality multipliers, the
   count bound of a decide run's root (kmax, or the fewest most valuable items
   reaching the target) comes from block sums over the free items below
   (``_blocks``: O(1) an item dropped, O(sqrt n) a read), so most runs that
   would stop at their root are never started; kmax only falls as the pass
   goes down, so the last one is tried first, and the sums drop the items
   passed only when they are read again.
   **Two lists.** Before a decide run on integer items that lie on the
   count multipliers' line (strongly correlated: a set reaching the target
   must fill the capacity exactly), Horowitz and Sahni's two lists search
   the sets that differ from the break solution on 24 items only: 2^24 sets
   in two sorted lists of 2^12 subsets and one sweep; first the 24 nearest
   the break, then with a quarter and a half of them spread over each side
   (larger flips). It is tried while the last yes of a run cost 16,384
   states or more, and not after two misses in a row.
   **Count fills.** On strongly correlated items (every free value is its
   weight plus one D > 0) a set of c items is worth w(S) + D c; when the
   most items that fit below k, m, are the only count that can reach the
   target (m - 1 items are worth at most j + D (m - 1)), the question is
   whether some m of them weigh between tgt - D m and j. Every m-set is the
   lightest m with r items swapped out and r in; measured by their
   distance u to the heaviest of the lightest m (u = p - w in, w - p out),
   its weight is the lightest m's plus the distances of the 2r items moved.
   So the question is a subset sum over distances with the balance (in
   minus out) back at 0: one bit set per balance, over the sums up to
   j minus the lightest m's weight, the items taken by ascending distance
   (balanced subset sums, Pisinger, J. Algorithms 33, 1999;
   ``_count_fill.pxd``). Its easy yes comes first, in O(n): a window of m
   consecutive items by weight slid up while it fits, then one last swap
   with an item above it (or, from the next window, below it) whose gain
   lands in the range, found by two pointers (``fill_greedy``); on dense
   weights, where the range lies far above the lightest m's weight and the
   bit sets would be wide, it nearly always finds one. Then the bit sets,
   while they cost at most 2^22 word operations with room for their history
   (every step's layers, to read a yes back), or 2^17 without; above 2^17
   the two lists go first. Without room for the history, a search with at
   most two more items in than out (or out than in) at any step, over the
   nearest items whose history fits, may still find a set (a miss proves
   nothing; the runs decide). On inverse strongly correlated items (one
   D < 0: w = v + |D|) a c-set is worth w(S) + D c, fewer items are worth
   more, and the same greedy asks for c items weighing in [tgt - D c, j],
   c the fewest whose heaviest c reach the target (``_fill_fewest``; a
   yes only).
   **Window runs.** On 16,384 free items or more, a decide run is preceded
   by the same question on the 512 of them nearest the break in efficiency
   order (those before the window kept, those after it left out), within
   2,048 states: a set found there is an answer, found without the full
   run's O(n) set-up; when none is found the full run decides.
   Identical items (same weight and runtime, the shape of real graphs) cost
   one decide run per group, not one per copy: once an item is needed, every
   identical item below it that the witness holds is needed too, so the
   lowest-indexed copies are kept.
   **Uniqueness runs.** Once the proofs that items are needed grow expensive
   (250,000 states and a quarter of OPT's), the pass asks instead whether
   any set T other than the witness is left (the free items up to k, the
   same capacity and target): a decide run in *avoid mode*, whose states
   carry one bit, "differs from the witness on an item in range"; states
   that do dominate both kinds, the others only their own kind, and only
   states that differ answer. If none is left, every witness item from k
   down is needed and the pass is done; if T is found, it becomes the
   witness when dp_knapsack's rule prefers it (at the highest item h where
   the two differ, T leaves it out), and the question is asked again for
   the items above h, until no set differs there: those items are settled
   at once. A chain starts above the highest item where a set an earlier
   chain found, if it is still an answer, differs from the witness
   (``_unique._chain_start``): no set left differs any higher, so it
   ends where the chain from the first item does. Each such search costs about what OPT cost; it runs within 4x
   the states the proofs used or OPT took, and again once the proofs since
   cost as much. A nearly unique optimum under loose bounds (circle items:
   300 proofs of 11 M states each on one seed) is then settled in a few
   runs. Identical copies: a set that differs from the witness only in
   which copies of a group it holds is no answer (dp_knapsack keeps the
   lowest-indexed ones), so where a group allows that (the witness holds
   some of its copies but not all, or they lie on both sides of the range's
   first item) the runs' core steps take its copies lowest-indexed first
   (``_unique._link_copies``, ``_step._twin_rule``), and a state
   dominates only states it is at least as free as under that rule.

Ctrl-C: every compiled loop counts its work and runs the pending signal
handlers every ``CHECK_EVERY`` units (``_interrupt.pxd``, a few ms); on
KeyboardInterrupt it frees what it holds and the exception propagates.

Why not a Hirschberg split on sparse profiles: the canonical rule is about
index order while fast pruning needs efficiency order; a profile split in index
order keeps every state of a prefix (no efficiency-ordered bound reaches
there) and on subset-sum-like instances a prefix has millions of states. The
top-down decide runs keep the minknap order and its bounds, and cost one run
per item whose membership bounds cannot settle, typically a handful.

Complexity: O(n log n) for sorting plus O(states) per core step; worst case
O(n * min(W, 2**n)) like any Pareto DP (state counts measured per family:
docs/algorithms.md). Memory O(states + n), independent of W.

Exactness. Quantised weights are integers (exact in float64 below 2**53).
With ``scale=None`` the weights are made integers first, exactly: every
float64 is m * 2**e, so with e0 the smallest such exponent (``_grid_exponent``)
g_i = w_i / 2**e0 are integers, and since every subset sum is a multiple of
2**e0, ``sum <= c`` iff ``sum(g) <= C = floor(c / 2**e0)``.

* If sum(g) < 2**52 (dyadic sizes such as bytes / 2**k, integers, weights of a
  similar magnitude with short mantissas) the kernel gets the g_i: every sum,
  difference and comparison it makes on them is exact, so it solves the
  problem itself, canonical set included.
* Otherwise (0.1, 0.2, 0.3 have 53-bit mantissas on a 2**-56 grid) with a
  shift s making the sums fit, the kernel solves the relaxation with weights
  floor(g_i / 2**s) + 1 and capacity floor(C / 2**s) + n: every exactly
  feasible set fits it (sum of floors <= floor of the sum, at most n
  items), so OPT <= OPT(relaxation). If the relaxation's canonical set R fits
  exactly (``excess_weight``: fsum is correctly rounded and rounding is monotone, so
  fsum != c settles it; rationals only when equal), R is the canonical set:
  OPT = value(R), and in the top-down scan each item R leaves out is left out
  exactly too (R itself is a witness without it), while each item R keeps is
  one the relaxation cannot do without, so neither can the (tighter) exact
  problem, by induction from the highest index.
  (Value comparisons are as everywhere in ``sparse``; see "Values" below.)
* If R is over the exact budget (its weight is within about n * 2**(s + e0)
  of the budget), ``_real._reduced``: a restriction run (weights
  ceil(g / 2**s)) gives an exactly feasible lower bound, a Lagrangian
  reduction fixes the items no near-optimal set can change, and the free
  items are solved on their exact grid; behind that, ``_exact_canonical``
  reruns dp_knapsack's recursion on Python integers (the Pareto frontier of
  every prefix, then its backtrack), its states counted against the same
  memory limit.

Few distinct (weight, value) pairs (the shape of real graphs) go to
``_types`` first, quantised and ``scale=None`` alike: the items are solved as
types with counts, and the canonical set is the lowest copies of each type
for the right count vector (proofs in ``_types``).

Why not double-double state weights or __int128 in the kernel: both would
touch every weight operation of the kernel and its bounds, and the quantised
path must not pay for them; the relaxation keeps the kernel as it is, costs
O(n) vectorised work and falls back only when the
answer sits within rounding of the budget. Before this, ``scale=None`` summed
float64 weights in core order and returned {0.1} for memory [0.1, 0.2, 0.3],
budget 0.3, instead of {0.3}.
That is the point of ``scale=None``: with quantisation a tensor smaller than
half a quantum rounds to weight 0 and is saved for free, so a quantised plan
can exceed the true budget.

Values. Runtimes are compared exactly, ties included, whenever they lie on a
common power-of-two grid whose integer sum is below 2**53 (``_values.value_grid``):
with G_i = v_i / 2**e0 (e0 the largest exponent shared by all runtimes) every
subset sum is an integer below 2**53, exact in float64. This holds for
integer runtimes (FLOP counts) whose total is below 2**53, for larger ones
whose total divided by their greatest common divisor is (2**52 + 8 d:
total / 8 < 2**53), and for dyadic runtimes of a limited range (k / 2**m).

Integer runtimes beyond that (odd FLOP counts whose total passes 2**53,
counts up to 2**62 and beyond) are compared exactly too: the float64 run
below gives a feasible set, and ``_exact.exact_canonical`` takes its exact
value as a lower bound, fixes the items a Lagrangian bound in exact integers
settles, and finds the optimum and dp_knapsack's canonical set among the
rest by Pareto fronts of Python integers in index order, pruned by the same
bound (``stats["exact_values"]``; its states count against the memory
limit). ``dp``, ``hirschberg`` and ``frontier`` do the same for such runtimes.

Other runtimes (decimal ones such as 0.1 and 0.37 whose 53-bit mantissas on
one grid need more than 53 bits) are summed in float64, and values within
tol = min(n 2**-52, ``_values.VALUE_TOL`` = 1e-12) of the total compare as ties
(``_values.value_tolerance``; n 2**-52 covers the rounding of any float64 subset
sum). The optimise run takes a new incumbent only tol above the last, and
the canonical pass accepts a witness tol below the optimum it found, so the
exact sum of the runtimes returned is within 2 tol + (2 n + 1) 2**-52 of the
total of the optimum (the two tolerances, the rounding of both sums, and
the rounding of the targets as items are kept): at most 4 n 2**-52 of the
total. The tie rule applies among such near-ties.

>>> from remat_knapsack import solve
>>> s = solve([0.2, 0.3, 0.5], [2.0, 3.0, 4.0], 0.5, solver="sparse")
>>> s.value, s.saved
(5.0, [0, 1])
>>> solve([1e-5, 0.5, 0.5], [1.0, 2.0, 2.0], 0.5, solver="sparse", scale=None).saved
[1]
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from .._common._grid import floor_grid, grid_integers
from .._common._grid import grid_exponent as _grid_exponent
from .._common._validate import Items
from . import _canonical, _core, _fit, _sparse, _subset_sum
from ._core import core_of_split, sorted_split, split_at_break, worth_it
from ._exact import exact_canonical, integer_values
from ._fixing import reduce_items
from ._lift import Lift, count_bound_at
from ._lines import find_lines
from ._order import descending
from ._real import solve_real
from ._states import STATE_BYTES, max_states_within, sparse_bytes, state_error
from ._types import solve_items
from ._values import EXACT, value_grid, value_tolerance

__all__ = ["STATE_BYTES", "solve_sparse", "sparse_bytes"]

def solve_sparse(items: Items, memory_limit: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Exact canonical solution by sparse Pareto DP. Returns chosen positions and stats."""
    n = items.weights.size
    w = np.ascontiguousarray(items.weights, dtype=np.float64)
    v = np.ascontiguousarray(items.values, dtype=np.float64)
    c = float(items.capacity)
    quantised = items.weights.dtype.kind in "iu"  # integer weights: every sum is exact
    if quantised and n and float(w.sum()) >= EXACT:
        raise ValueError("sparse: the total weight of the items must stay below 2**53 to be exact")
    detail = f"{n} items"
    max_states = max_states_within(n, memory_limit, detail)
    v, integral = value_grid(v)
    tol = 0.0 if integral else value_tolerance(v)
    # Few distinct (weight, value) pairs are solved as types with counts.
    grouped = solve_items(w, v, c, None, integral, tol, max_states, STATE_BYTES) if quantised else None
    if grouped is not None:
        chosen, stats = grouped
    elif quantised or n == 0:
        chosen, stats = _run(w, v, c, integral, tol, max_states, detail)
    else:
        chosen, stats = solve_real(w, v, c, integral, tol, max_states, detail, _run)
    stats["peak_bytes"] = sparse_bytes(n, stats["peak_states"]) + stats.pop("extra_bytes", 0)  # bit sets
    stats["integral"] = integral
    if not integral and integer_values(items.values):
        # Integer runtimes whose sums pass float64's exact range: the float64
        # answer is a lower bound, the canonical set comes from exact integers.
        if quantised:
            g, cap = w.astype(np.int64), int(c)
        else:
            e = _grid_exponent(w)
            g, cap = grid_integers(w, e), floor_grid(c, e)
        chosen = exact_canonical(g, items.values, cap, chosen, max_states, detail)
        stats["exact_values"] = True
    return chosen, stats


# Count-structured items off a line: ``optimum`` goes first, within
# _TRY_STATES states; then the count path (``_count_path``), which gives up
# after its own budget (_COUNT_STATES plus _COUNT_PER_ITEM per item), and
# ``optimum`` takes over unbounded.
_TRY_STATES = 1_000
# The count path's scan tries the count bound at a neighbour's lam before
# searching its own (``below_cut_at_neighbour``); a test knob.
_QUICK_BOUNDS = True
_COUNT_STATES = 200_000
_COUNT_PER_ITEM = 20
_FORCE_COUNT = False
# A count below the most that fit whose run outgrows max(_LIFT_AFTER,
# _LIFT_PER_ITEM n) states is tried by its lift (``_lift``) before the run
# goes on: a lift that fails costs up to ~75 O(n) bounds. A trial's states
# do not count against the count path's budget (docs/algorithms.md).
_LIFT = True
_LIFT_AFTER = 32_768
_LIFT_PER_ITEM = 2

_TOL = _sparse.TOLERANCES
# The line of the cardinality multipliers is fitted to max(32, n / _FIT_DIV)
# items either side of the break: around it the weights of count-structured
# items span little (efficiency follows weight), and a narrow span fits the
# slope to the noise (almost strongly correlated items, n = 10^5: mu fell to 0
# and the count bound with it; docs/algorithms.md).
_FIT_DIV = 128


def _configure_count_path(force: bool, states: int, per_item: int) -> tuple[bool, int, int]:
    """For tests: ``force`` takes the count path on every instance (with no
    budget); ``states``/``per_item`` set its budget. Returns the previous
    (force, states, per_item)."""
    global _FORCE_COUNT, _COUNT_STATES, _COUNT_PER_ITEM
    old = (_FORCE_COUNT, _COUNT_STATES, _COUNT_PER_ITEM)
    _FORCE_COUNT, _COUNT_STATES, _COUNT_PER_ITEM = force, states, per_item
    return old


def _configure_lift(on: bool) -> tuple[bool]:
    """For tests: whether the count path tries the lift first. Returns the previous setting."""
    global _LIFT
    old = (_LIFT,)
    _LIFT = on
    return old


def _kernel(w: np.ndarray, v: np.ndarray, c: float, integral: bool, tol: float, max_states: int,
            sel: np.ndarray) -> dict[str, Any]:
    """Steps 1-3 of the module docs: the canonical optimal set of items (w, v)
    (float64, integer weights) within capacity c, into ``sel`` (n zeroed
    bytes, 1 for the chosen items). Returns a dict of counters; raises
    ``_sparse.StateLimit`` when the states would exceed ``max_states``."""
    n = w.shape[0]
    if n == 0:
        return {"states": 0, "runs": 0, "free": 0, "queries": 0, "peak_states": 0}
    if _SUBSET_SUM and integral:  # subset-sum items (v = w): one pass when a subset fills c
        settled = _subset_sum_items(w, v, c, max_states, sel)
        if settled is not None:
            return settled
    t0 = time.perf_counter()
    # Efficiency order. Ties in any (deterministic) order: the order steers
    # the search, never the canonical set (``_order``: a sort of packed
    # integer keys, cheaper than np.argsort of float64). On many items, the
    # break item and the core come first: from a split that sorts only the
    # items around the break (``_core.split_at_break``), and the full order
    # only when the core is not solved alone; below ``_core.SPLIT_FROM``
    # items from one full sort (``_core.sorted_split``).
    eff = v / w
    loose = False  # whether the weight bound leaves most items free
    # Equal efficiencies (subset sums): Dantzig's bound fixes no item, so the
    # split would only find the whole set as its core.
    if n >= _core.MIN_ITEMS and float(w.sum()) > c and float(eff.min()) < float(eff.max()):
        split = split_at_break(w, eff, c) if n >= _core.SPLIT_FROM else sorted_split(w, eff, c)
        idx, fixed_in, room = core_of_split(w, v, c, split, tol)
        if worth_it(idx, n):  # bounds fix all but a few items: the kernel on those alone
            sub = np.zeros(idx.size, dtype=np.uint8)
            stats = _kernel(w[idx], v[idx], room, integral, tol, max_states, sub)
            sel[fixed_in] = 1
            sel[idx] = sub
            return {**stats, "core": idx.size}
        loose = idx.size > _core.LOOSE * n
        order = split.order(eff)
        b = split.top.size + split.b  # the break count: ``top`` and ``mid[:b]`` fit, ``mid[b]`` does not
    else:
        order = descending(eff)
        b = -1
    ws = np.ascontiguousarray(w[order])
    vs = np.ascontiguousarray(v[order])
    if b < 0:
        b = _sparse.break_count(ws, c)
    topv = _TopValues(v, vs)
    lam_c, mu_c, kmax, on_line = _multipliers(ws, vs, c, b, topv, integral)
    # The count term reads the value prefix sums only when mu < 0 (``_kcount``).
    work = _sparse.Workspace(max_states, lam_c, mu_c, kmax, topv.sums() if mu_c < 0 else _NO_TOP_VALUES)
    try:
        lines = find_lines(ws, vs, b) if integral and not on_line and b < n else None
        if lines is not None:  # items on two parallel lines: a bound by class counts
            work.opt_bound = lines.bound(ws, vs, c)
        xs = np.zeros(n, dtype=np.uint8)
        t1 = time.perf_counter()
        r, z, cards = 0, 0.0, None
        if b < n and not _FORCE_COUNT and (mu_c != 0 or lam_c == 0) and not on_line:
            # Count-structured but not on a line: the count bound of
            # ``optimum`` can be loose. It still solves most such instances
            # (small ones, similar weights) in few states, so it
            # goes first, and the count path only when it outgrows that,
            # or at once when the greedy bound left most items free. No
            # fitted line at all (values that do not grow with the weights
            # around the break: similar weights, n=10^3) leaves ``optimum``
            # the LP bound alone, and the count path its own bounds per count.
            if loose:
                r = _sparse.RUN_OVER_BUDGET
            else:
                r, z, b = work.optimum(ws, vs, c, integral, tol, xs, _TRY_STATES)
        if b < n and (_FORCE_COUNT or r == _sparse.RUN_OVER_BUDGET):
            work.limit = 0 if _FORCE_COUNT else work.generated + _COUNT_STATES + _COUNT_PER_ITEM * n
            cards = _count_path(work, ws, vs, c, b, int(kmax), lam_c, integral, tol, xs)
            work.limit = 0
        lifted = [0, 0, 0]
        if cards is not None:
            z, cards, lifted = cards
        else:
            cards = []
            if r != _sparse.RUN_FOUND:
                r, z, b = work.optimum(ws, vs, c, integral, tol, xs, 0)
        t2 = time.perf_counter()
        S = np.empty(n, dtype=np.uint8)
        S[order] = xs  # a permutation: every position written
        Sb = S.view(bool)  # the same optimal set, as a mask
        stats = {"opt_states": work.generated, "free": 0, "queries": 0,
                 "t_sort": t1 - t0, "t_opt": t2 - t1, "counts": [k for k, _, _ in cards],
                 "lifted": lifted[0], "lifted_first": lifted[1], "quick_cuts": lifted[2]}
        if b == n:
            sel[:] = S
            return work.stats(stats)
        free_idx, fix1, weight_in, tgt, d, lam = _reduce(w, v, c, ws, vs, b, z - tol, Sb,
                                                         (lam_c, mu_c, work.kcount(z - tol)), cards)
        stats["free"] = nu = free_idx.shape[0]
        sel[:] = fix1
        if nu == 0:
            return work.stats(stats)
        stats["t_reduce"] = time.perf_counter() - t2
        every = nu == n  # nothing fixed: no gathers
        count = None
        if len(cards) == 1:
            k, lamk, muk = cards[0]
            count = (k - (0 if every else int(fix1.sum())), lamk, muk)
        _canonical.canonical(work, w, v, order, free_idx, S, c - weight_in, tgt, lam, d, integral, tol,
                             count, _COUNT_STATES, _COUNT_PER_ITEM, lines, stats)
        stats["t_canon"] = time.perf_counter() - t2 - stats["t_reduce"]
        if every:
            sel[:] = S
        else:
            sel[free_idx] = S[free_idx]
        return work.stats(stats)
    finally:
        work.close()


#: ``_subset_sum_items``: the widest question (words of 64 sums; 1 MiB), and
#: the word operations its questions may take, fixed and per item, before
#: the layers or the general path decide (on dense weights they take a few
#: thousand); then the most words the layers of every prefix's sums may take
#: (32 MiB, about as many word operations).
_SUBSET_SUM = True
_SUBSET_WORDS = 1 << 17
_SUBSET_WORK = 1 << 20
_SUBSET_WORK_PER_ITEM = 16
_SUBSET_LAYER_WORDS = 1 << 22


def _configure_subset_sum(on: bool) -> tuple[bool]:
    """For tests: whether subset-sum items try ``_subset_sum_items`` first
    (off: the general path, whose canonical pass they exercise). Returns the
    previous setting."""
    global _SUBSET_SUM
    old = (_SUBSET_SUM,)
    _SUBSET_SUM = on
    return old


def _subset_sum_items(w: np.ndarray, v: np.ndarray, c: float, max_states: int,
                      sel: np.ndarray) -> dict[str, Any] | None:
    """dp_knapsack's set when every value is its weight (``_subset_sum``):
    first in one pass with a few bit-set questions, when some subset weighs
    exactly c; else from the sums of every prefix, when they fit. None (the
    sel bytes untouched) when a value is not its weight, or neither settles
    it. Each bit set takes at most what ``max_states`` states would."""
    room = max_states * STATE_BYTES // 8
    code, asked, work, held = _subset_sum.canonical_subset_sum(
        w, v, c, sel, min(_SUBSET_WORDS, room), _SUBSET_WORK + _SUBSET_WORK_PER_ITEM * w.size)
    if code == _subset_sum.OTHER_VALUES:
        return None
    stats = {"states": 0, "runs": 0, "free": w.size, "queries": asked, "peak_states": 0,
             "subset_sum_words": work, "extra_bytes": 8 * held}
    if code != _subset_sum.SETTLED:
        code, _opt, layers = _subset_sum.canonical_subset_sum_layers(w, c, sel, min(_SUBSET_LAYER_WORDS, room))
        if code != _subset_sum.SETTLED:
            return None
        stats["subset_sum_layers"] = w.size + 1
        stats["extra_bytes"] = max(stats["extra_bytes"], 8 * layers)
    return stats


#: Prefix sums of no values: what the count term gets when it never reads them (mu >= 0).
_NO_TOP_VALUES = np.zeros(1)


class _TopValues:
    """The prefix sums of the values, largest first (n + 1 of them), made on
    first use: a sort of n values that only a negative count multiplier mu
    needs (``_multipliers``, ``_kcount``)."""

    def __init__(self, v: np.ndarray, vs: np.ndarray) -> None:
        self._v, self._vs, self._sums = v, vs, None

    def sums(self) -> np.ndarray:
        if self._sums is None:
            self._sums = np.zeros(self._v.size + 1)
            np.cumsum(_descending(self._v, self._vs), out=self._sums[1:])
        return self._sums


def _descending(v: np.ndarray, vs: np.ndarray) -> np.ndarray:
    """``v`` sorted in descending order, given ``vs``, the same values in
    efficiency order: on the items of a line (strongly correlated: ascending
    there; inverse strongly: descending) that order itself, checked in O(n)."""
    if vs.size > 1:
        if bool(np.all(vs[1:] <= vs[:-1])):
            return vs
        if bool(np.all(vs[1:] >= vs[:-1])):
            return vs[::-1]
    return np.sort(v)[::-1]


class _OverBudget(Exception):
    """A count-mode run outgrew the count path's budget."""


def _count_path(work, ws, vs, c, b, kmax, lam_fit, integral, tol, xs):
    """OPT by counts: for every item count k whose count bound can reach the
    incumbent, one count-mode run over the items in descending order of
    d_j = v_j - lam_k w_j - mu_k, starting from the LP's k items.

    On almost strongly correlated items (v = w + R/10 +- R/500) the
    weight-only bound is loose, but the optimum has one count and that
    count's bound is tight (docs/algorithms.md). The LP optimum has b + f items
    (b: break count), and the count bound is concave in k, so the counts
    worth a run are an interval around b, b + 1; scanning outwards stops at
    the first count whose bound is below the incumbent. Runs accept ties, so
    a count either attains OPT (it is returned, with its multipliers) or is
    proved below it.

    ``lam_fit``: the slope of the line fitted around the break item
    (``_multipliers``), where the first count bound's search starts.
    ``xs`` (efficiency order) gets an optimal set. Returns (OPT, [(k, lam,
    mu) for every count an optimal set can have], [counts the lift proved
    after a trial run, counts it proved first, counts cut at a neighbour's
    lam]), or None when the runs outgrow ``work.limit`` states.
    """
    n = ws.shape[0]
    x0 = np.zeros(n, dtype=np.uint8)  # greedy: the break solution, then what fits
    x0[:b] = 1
    _sparse.greedy_fill(ws, vs, b, c - float(ws[:b].sum()), x0)  # exact: integer weights below 2**53
    z = float(vs[x0.astype(bool)].sum())
    xs[:] = x0
    sl = _TOL["abs_slack"] + _TOL["rel_card"] * float(vs.sum() + ws.sum() * (vs / ws).max())
    found: dict[int, tuple[float, float, float]] = {}  # k -> (best value of a k-set >= the cut, lam, mu)
    bounds: dict[int, tuple[float, float, float]] = {}

    def bound(k):
        if k not in bounds:
            if k < 1 or k > kmax:
                bounds[k] = (-math.inf, 0.0, 0.0)
            else:
                # the search starts at the lam of the nearest count bounded,
                # else at the fitted line's slope: about half the selections
                # of a start at the break item's efficiency (almost strongly
                # correlated items, n=10^4: 110 us instead of 250)
                near = [(abs(k - j), t[1]) for j, t in bounds.items() if t[1] > 0]
                if near:
                    hint = min(near)[1]
                elif lam_fit > 0:
                    hint = lam_fit
                else:
                    hint = float(vs[b] / ws[b]) if b < n else 1.0
                bounds[k] = work.count_bound(ws, vs, c, k, hint)
        return bounds[k]

    def below_cut_at_neighbour(k):
        # Any lam >= 0 bounds the k-sets (lam c plus the k largest v - lam
        # w): at the lam of the count next to k, one selection instead of a
        # search, often already below the cut on the counts the scan ends at.
        near = bounds.get(k + 1) or bounds.get(k - 1)
        if not _QUICK_BOUNDS or near is None or near[1] <= 0 or not 1 <= k <= kmax or k in bounds:
            return False
        return count_bound_at(ws, vs, c, k, near[1]) + sl < z - tol

    lift = None
    lift_first = False  # the last count tried by its lift fell to it: the next one tries it first
    # counts the lift proved below the cut (after a trial run, before any run), counts a neighbour's lam cut
    lifted = [0, 0, 0]

    def run(k, lam, mu, states):
        # One count run within ``states`` more states (0: only the path's budget).
        xk = np.zeros(n, dtype=np.uint8)
        goal = z - 1.0 if integral else z - 2 * tol  # ties are found too
        path, g0 = work.limit, work.generated
        trial = states > 0 and (path == 0 or g0 + states < path)
        if trial:
            work.limit = g0 + states
        try:
            r, zk = work.count_run(ws, vs, c, goal, integral, tol, lam, mu, k, kmax, xk)
        finally:
            # a trial's states do not count against the path's budget
            work.limit = path + (work.generated - g0) if trial and path > 0 else path
        if r == _sparse.RUN_OVER_BUDGET and not trial:
            raise _OverBudget
        return r, zk, xk

    def attempt(k):
        # False when k's bound is below the cut (ties included): no k-set is
        # optimal. True when k is done: run, or below the cut by its lift
        # (asked when a count below the most that fit outgrows its trial
        # states, and first when the last count asked fell to it).
        nonlocal z, lift, lift_first
        if below_cut_at_neighbour(k):
            lifted[2] += 1
            return False
        L, lam, mu = bound(k)
        if L + sl < z - tol:
            return False
        liftable = integral and k < kmax and _LIFT
        first = liftable and lift_first
        if first:
            lift_first = lift.excludes(k, z - tol - sl)
            if lift_first:
                lifted[1] += 1
                return True
        r, zk, xk = run(k, lam, mu, max(_LIFT_AFTER, _LIFT_PER_ITEM * n) if liftable and not first else 0)
        if r == _sparse.RUN_OVER_BUDGET:
            if lift is None:
                lift = Lift(ws, vs, c, kmax, work.count_bound)
            lift_first = lift.excludes(k, z - tol - sl)
            if lift_first:
                lifted[0] += 1
                return True
            r, zk, xk = run(k, lam, mu, 0)
        if r == _sparse.RUN_FOUND and zk >= z - tol:
            found[k] = (zk, lam, mu)
            if zk > z:
                z = zk
                xs[:] = xk
        return True

    try:
        up = down = False
        for k in sorted((b, b + 1), key=lambda k: -bound(k)[0]):
            if k == b:
                down = attempt(k)
            else:
                up = attempt(k)
        k = b - 1
        while down and k >= 1 and attempt(k):
            k -= 1
        k = b + 2
        while up and k <= kmax and attempt(k):
            k += 1
    except _OverBudget:
        return None
    return z, [(k, lam, mu) for k, (zk, lam, mu) in sorted(found.items()) if zk >= z - tol], lifted


def _multipliers(ws, vs, c, b, topv, integral=False):
    """Multipliers of the cardinality bound, from the items around the break.

    The items near the break item (efficiency order ``ws``, ``vs``; 32 or
    n / ``_FIT_DIV`` either side, whichever is more) are fitted by a line
    v = lam w + mu; for strongly correlated classes
    (v = w + R/10, w = v + R/10, ...) that is the exact relation, and the
    bound then counts items instead of weight. Given lam, mu is the best value
    for it: the k-th largest reduced profit v - lam w, with k = kmax (mu >= 0)
    or kmin (mu < 0). ``b``: the break count; ``topv``: the value prefix
    sums, largest first (a ``_TopValues``: sorted only if mu < 0 on values
    that are not ``integral``, see ``_fewest_reaching``). Returns (lam, mu,
    kmax, whether those items lie exactly on the line); (0, 0) is no bound.
    """
    n = ws.shape[0]
    if b >= n or n < 4:
        return 0.0, 0.0, float(n), False
    kmax = float(_sparse.lightest_count_py(ws, c))  # the most items any set holds
    h = max(32, n // _FIT_DIV)
    lam, mu0, on_line = _fit.line_fit(ws, vs, max(0, b - h), min(n, b + h + 1), _TOL["line"])
    if lam == 0:
        return 0.0, 0.0, kmax, False
    # mu is the k-th largest v - lam w clamped at 0: k = kmax from below, or,
    # when the line's intercept is negative, the fewest items that beat the
    # break solution (any improving set is worth more) from above.
    if mu0 >= 0:
        mu = _fit.count_multiplier(ws, vs, lam, int(kmax), True)
    else:
        k = _fewest_reaching(vs, float(vs[:b].sum()), topv, integral)
        mu = _fit.count_multiplier(ws, vs, lam, k, False)
    return lam, mu, kmax, on_line


def _fewest_reaching(vs, psum, topv, integral):
    """The fewest values, largest first, whose sum reaches ``psum`` (a set
    with fewer items is worth less). The k largest reach it exactly when the
    n - k smallest stay within total - psum, so on integer values (exact
    sums) it is n less ``_sparse.lightest_count_py`` of the values, in O(n); other
    values take the sorted prefix sums of ``topv`` (0.06 ms at n = 10^3,
    0.4 ms at 10^4)."""
    if integral:
        return vs.size - _sparse.lightest_count_py(vs, float(vs.sum()) - psum)
    return int(np.searchsorted(topv.sums(), psum, side="left"))


def _reduce(w, v, c, ws, vs, b, thr, Sb, card, cards):
    """Step 2: the items fixed in (out of) every set worth at least ``thr``,
    by the Lagrangian bound with the break item's efficiency, with the
    cardinality multipliers ``card`` = (lam, mu, k) and, from the count path,
    every count an optimal set can have (``cards``: an item is decided when
    every count's bound decides it). ``Sb``: an optimal set (mask). One
    compiled call (``_fixing.reduce_items``). Returns (the free items, the
    items fixed in, their weight, the witness's value on the free items,
    d = v - lam w, lam)."""
    lam = float(vs[b] / ws[b])
    d = np.empty(w.shape[0])
    each = [(lam, 0.0, 0.0, _TOL["rel_lp"]), (*card, _TOL["rel_card"])]
    every = [(lamk, muk, k, _TOL["rel_card"]) for k, lamk, muk in cards]
    free, fix1, weight_in, value_free = reduce_items(w, v, c, thr, Sb.view(np.uint8), d, each, every)
    return free, fix1.view(bool), weight_in, value_free, d, lam


def _run(w, v, c, integral, tol, max_states, detail):
    """The kernel on integer weights (float64, sums below 2**53)."""
    sel = np.zeros(w.size, dtype=np.uint8)
    if w.size and float(w.max()) < EXACT:  # integers, exact in int64 too
        d = float(_sparse.gcd_of(np.ascontiguousarray(w, dtype=np.float64)))
        if d > 1:  # every subset sum is a multiple of d (``_values.divide_gcd``)
            w, c = w / d, math.floor(c / d)
    try:
        stats = _kernel(w, v, c, integral, tol, max_states, sel)
    except _sparse.StateLimit:
        raise state_error(w.size, max_states, detail + ", Pareto states outgrew the limit") from None
    return np.flatnonzero(sel.view(bool)), stats  # 0/1 bytes; on bools numpy's count is 6x faster
