# cython: language_level=3
"""One step of the expanding core: the state list merged with its copy
shifted by the step's item (``_merge``: dominance, Pisinger's bound and the
count bounds of each state, the rule for identical copies in avoid mode),
states paired with one item outside the core (``_pair``), a new incumbent
(``_improve``), and the items the core skips (``_skip_fixed``, minknap's
item test).

Inline, for ``_expand._core``, whose loop calls them once per step.
"""

from libc.math cimport INFINITY
from libc.stdint cimport int32_t, uint64_t
from libc.stdlib cimport malloc

from ._pairs cimport Pair, Pairs, pair_pass
from ._pool cimport AVOID_FREE, CLASS_D, COUNT_MASK, KWIN, VBITS, VW, Pool, _kcount, _slack
from ._run cimport Run


cdef inline double _lp_state_bound(double W, double P, double c, double et, double es,
                                   bint can_remove) noexcept nogil:
    """Pisinger's bound of a state, with its rounding allowance: P + (c - W) e_t
    when it fits (e_t: the next item to add), P - (W - c) e_s when it must
    still shed weight (e_s: the next item to remove; -inf when there is none)."""
    cdef double term
    if W <= c:
        term = (c - W) * et
    elif can_remove:
        term = -(W - c) * es
    else:
        return -INFINITY
    return P + term + _slack(P, term)


cdef inline double _count_state_bound(const double* D, Py_ssize_t n, Py_ssize_t s, Py_ssize_t t,
                                      Py_ssize_t nd, double W, double P, double kc, double c,
                                      double lcmk, double lam, double mu) noexcept nogil:
    """Count mode: the bound of a state of kc items that must end with kfix =
    kc + nd. ``D``: prefix sums of the reduced profits d = v - lam w - mu in
    the run's order; the state still adds the nd best items after t, or sheds
    the -nd worst before s + 1, or (nd = 0) makes one swap or none. -inf when
    it cannot reach kfix. ``lcmk`` = lam c + mu kfix."""
    cdef double dj, ub
    if nd > 0:  # the nd best items still to add
        if t + nd > n:
            return -INFINITY
        dj = D[t + nd] - D[t]
    elif nd < 0:  # the -nd worst items still to remove
        if s + 1 + nd < 0:
            return -INFINITY
        dj = D[s + 1 + nd] - D[s + 1]
    elif t < n and s >= 0:  # one swap, or none
        dj = (D[t + 1] - D[t]) - (D[s + 1] - D[s])
    else:
        dj = -INFINITY
    ub = lcmk + (P - lam * W - mu * kc) + dj
    if nd == 0 and W <= c and P > ub:
        ub = P
    return ub


cdef inline void _improve(Run* r, const Pool* pool, double P, Py_ssize_t k, Py_ssize_t item,
                          const uint64_t* V) noexcept nogil:
    """A state (decision bits ``V`` at core step k, plus ``item`` flipped when
    >= 0) worth P becomes the incumbent. A decide run is done; an optimise run
    raises its threshold, and is done when that passes a global bound."""
    cdef Py_ssize_t q
    r.best_P = P
    r.best_k = k
    r.best_item = item
    for q in range(VW):
        r.best_V[q] = V[q]
    if r.decide:
        r.found = 1
        return
    r.thr = P + 1.0 if r.integral else P + r.tol
    if r.A != NULL:
        r.kk = _kcount(r.card, r.thr)
    if r.ub0 + _slack(r.psum, r.ub0 - r.psum) < r.thr or r.ubc + r.sl2 < r.thr or pool.opt_bound < r.thr:
        r.found = 1


cdef inline bint _dominated_in_count(Py_ssize_t nd, double Px, double* maxPK) noexcept nogil:
    """Count mode, states met by ascending weight: dominance only among
    states nd items short of kfix (a lighter, better state with another
    count may not complete to kfix). Records Px when it is not dominated."""
    if nd < -KWIN or nd > KWIN:
        return False
    if Px <= maxPK[nd + KWIN]:
        return True
    maxPK[nd + KWIN] = Px
    return False


cdef inline bint _dominated(int32_t kraw, double Px, double* maxP, double* maxPD) noexcept nogil:
    """States met by ascending weight: dominated by a lighter state of at
    least its value (``maxP``: of any class; ``maxPD``: of D states, the only
    ones that dominate a D state in avoid mode). Records Px when it is not."""
    if kraw & CLASS_D:
        if Px <= maxPD[0]:
            return True
        maxPD[0] = Px
        if Px > maxP[0]:
            maxP[0] = Px
        return False
    if Px <= maxP[0]:
        return True
    maxP[0] = Px
    return False


cdef inline bint _dominated_open(int32_t kraw, double Px, Py_ssize_t o, double* U, double* UD) noexcept nogil:
    """``_dominated`` with the open steps (``_open_steps``): bit 0 / 1 of
    ``o`` says whether the state lets the next item to add / to remove
    flip, and a dominating state must let it wherever this one does. U[o]
    (UD[o]: of D states) is the most valuable lighter state whose bits
    contain o's. Records Px at every o' within o."""
    cdef Py_ssize_t q
    cdef bint d = (kraw & CLASS_D) != 0
    if Px <= (UD[o] if d else U[o]):
        return True
    for q in range(4):
        if (q & o) == q:
            if Px > U[q]:
                U[q] = Px
            if d and Px > UD[q]:
                UD[q] = Px
    return False


cdef inline uint64_t* _push(Pool* pool, Py_ssize_t out, double W, double P, int32_t K, const uint64_t* hist,
                            Py_ssize_t word, uint64_t bit, bint shifted) noexcept nogil:
    """State ``out`` of the next list: weight, value, count (with its class
    bit) and its parent's history with this step's decision (``bit`` of
    ``word``: set for the shifted child). Returns its history."""
    cdef Py_ssize_t q
    cdef uint64_t* vo = &pool.V2[out * VW]
    for q in range(VW):
        vo[q] = hist[q]
    if shifted:
        vo[word] |= bit
    else:
        vo[word] &= ~bit
    pool.W2[out] = W
    pool.P2[out] = P
    pool.K2[out] = K
    return vo


cdef inline void _child_classes(const Run* r, Py_ssize_t m, int32_t* dev_a, int32_t* dev_b) noexcept nogil:
    """Avoid mode: the class bit each child of core step item m gains. The
    child that decides m unlike the avoided set becomes D: the unshifted one
    (m keeps its break-solution value) when that value differs from it, else
    the shifted one; neither when m is out of range."""
    dev_a[0] = dev_b[0] = 0
    if r.avoid[m] == AVOID_FREE:
        return
    if r.avoid[m] != (m < r.b):
        dev_a[0] = CLASS_D
    else:
        dev_b[0] = CLASS_D


cdef inline int _twin_setup(Run* r) noexcept nogil:
    """Avoid mode with identical copies: the steps that decide items
    (``Run.step_of``), none yet. -1 if out of memory."""
    cdef Py_ssize_t i
    r.step_of = <Py_ssize_t*>malloc(r.n * sizeof(Py_ssize_t))
    if r.step_of == NULL:
        return -1
    for i in range(r.n):
        r.step_of[i] = -1
    return 0


cdef inline bint _linked(const Run* r, Py_ssize_t i) noexcept nogil:
    """Whether item i is linked to item i - 1, its copy (``Run.twin``):
    adjacent copies only, so each rule reads its side's last step."""
    return 0 < i < r.n and r.twin[i] == i - 1


cdef inline bint _twin_rule(const Run* r, Py_ssize_t k, Py_ssize_t m, Py_ssize_t* word, uint64_t* bit,
                            uint64_t* need) noexcept nogil:
    """Core step k flips item m: may a state do so? Among identical copies
    (``Run.twin``) the sets with the lowest-indexed ones (their copies lie
    in index order) add the copies after the break in order, remove those
    before it from the highest down, and never do both. So m is added only
    when the copy before it was added (or, the first after the break, when
    the last before it was not removed), and removed only when the copy
    after it was removed (or, the last before the break, when the first
    after it was not added). True when the copy that rule reads was decided
    within the last VBITS steps: a state may flip m only if bit ``bit`` of
    word ``word`` of its history is ``need`` (``bit`` or 0). Every set that
    holds the lowest-indexed copies keeps to it. Only adjacent copies are
    linked, so a rule reads the last step on its side (or, across the
    break, the first on the other), which ``_open_steps`` tells the merge."""
    cdef Py_ssize_t p, kp
    cdef bint same_side
    if m >= r.b:  # m joins
        p = m - 1 if _linked(r, m) else -1
        same_side = p >= r.b
    else:  # m leaves
        p = m + 1 if _linked(r, m + 1) else -1
        same_side = 0 <= p < r.b
    if p < 0:
        return False
    kp = r.step_of[p]
    if kp < 0 or k - kp >= VBITS:
        return False
    word[0] = (kp % VBITS) >> 6
    bit[0] = (<uint64_t>1) << (kp & 63)
    need[0] = bit[0] if same_side else 0
    return True


cdef inline void _open_steps(const Run* r, Py_ssize_t k, Py_ssize_t* ka, Py_ssize_t* kr, int* pa,
                             int* pr) noexcept nogil:
    """After core step k: the steps whose decisions the next item to add
    and the next to remove will read (``_twin_rule``), or -1, and the
    decision there that lets the item flip (``pa``, ``pr``: 1 when the rule
    reads a copy on the same side, 0 across the break). A state that lets it
    flip where another does not can complete as that one can, not the other
    way round; so the merge lets a state dominate only states it is at
    least as free as on both (``_dominated_open``)."""
    cdef Py_ssize_t kp
    ka[0] = kr[0] = -1
    if _linked(r, r.t):
        kp = r.step_of[r.t - 1]
        if kp >= 0 and k + 1 - kp < VBITS:
            ka[0] = kp
            pa[0] = r.t - 1 >= r.b
    if r.s >= 0 and _linked(r, r.s + 1):
        kp = r.step_of[r.s + 1]
        if kp >= 0 and k + 1 - kp < VBITS:
            kr[0] = kp
            pr[0] = r.s + 1 < r.b


cdef inline int _bit_at(const uint64_t* hist, Py_ssize_t kp, Py_ssize_t k, bint shifted) noexcept nogil:
    """A child's decision at step kp <= k (its parent's history ``hist``, and
    ``shifted`` at step k itself)."""
    if kp == k:
        return shifted
    return (hist[(kp % VBITS) >> 6] >> (kp & 63)) & 1


cdef inline Py_ssize_t _merge(Run* r, Pool* pool, Py_ssize_t cnt, Py_ssize_t k, Py_ssize_t m, double dw, double dv,
                              int32_t kx, Py_ssize_t* work) noexcept nogil:
    """One core step: merge the list (W, P, V, K; ``cnt`` states) with its
    copy shifted by the step's item m (dw, dv, kx = +-1 item) into W2.. in
    weight order, dropping dominated states and those whose bounds cannot
    reach ``r.thr``; the step's decision is bit k of each state's history.
    A kept state that reaches the threshold within c becomes the incumbent
    (in avoid mode a D state only: ``Run.avoid``).
    Returns the states kept; ``work`` gets the states read."""
    cdef Py_ssize_t ia = 0, ib = 0, out = 0, q, nd
    cdef int32_t dev_a = 0, dev_b = 0, answers = 0, kraw  # class bits: CLASS_D or 0
    cdef Py_ssize_t s = r.s, t = r.t, n = r.n, word = (k % VBITS) >> 6
    cdef uint64_t bit = (<uint64_t>1) << (k & 63)
    cdef double c = r.c, lam = r.lam, mu = r.mu, sl2 = r.sl2, kf = r.kf, lcmk = r.lcmk
    cdef double thr = r.thr, kk = r.kk  # change only with the incumbent (``_improve``)
    cdef const double* A = r.A
    cdef const double* B = r.B
    cdef const double* D = r.D
    cdef int cm = r.cm
    cdef double et = r.v[t] / r.w[t] if t < n else 0.0
    cdef double es = r.v[s] / r.w[s] if s >= 0 else 0.0
    cdef double Wx, Px, kc, ub
    cdef double maxP[4]  # by what the open steps let flip (``_dominated_open``): of any class ...
    cdef double maxPD[4]  # ... of D states
    cdef Py_ssize_t ka = -1, kr = -1, o = 3
    cdef int pa = 0, pr = 0
    cdef double maxPK[2 * KWIN + 1]
    cdef uint64_t* va
    cdef uint64_t* vo
    cdef int take_a
    cdef Py_ssize_t tword = 0
    cdef uint64_t tbit = 0, tneed = 0
    cdef bint twin = r.twin != NULL and _twin_rule(r, k, m, &tword, &tbit, &tneed)
    for q in range(4):
        maxP[q] = maxPD[q] = -INFINITY
    if r.twin != NULL:
        _open_steps(r, k, &ka, &kr, &pa, &pr)
    if cm:
        for q in range(2 * KWIN + 1):
            maxPK[q] = -INFINITY
    if r.avoid != NULL:
        answers = CLASS_D
        _child_classes(r, m, &dev_a, &dev_b)
    while ia < cnt or ib < cnt:
        if ib >= cnt:
            take_a = 1
        elif ia >= cnt:
            take_a = 0
        else:
            Wx = pool.W[ib] + dw
            take_a = pool.W[ia] < Wx or (pool.W[ia] == Wx and pool.P[ia] >= pool.P[ib] + dv)
        if take_a:
            Wx = pool.W[ia]
            Px = pool.P[ia]
            va = &pool.V[ia * VW]
            kraw = pool.K[ia] | dev_a
            ia += 1
        else:
            va = &pool.V[ib * VW]
            if twin and (va[tword] & tbit) != tneed:  # not the lowest-indexed copies (``_twin_rule``)
                ib += 1
                continue
            Wx = pool.W[ib] + dw
            Px = pool.P[ib] + dv
            kraw = (pool.K[ib] | dev_b) + kx
            ib += 1
        kc = kraw & COUNT_MASK
        if cm:
            nd = <Py_ssize_t>kf - <Py_ssize_t>kc
            if _dominated_in_count(nd, Px, maxPK):
                continue
            ub = _count_state_bound(D, n, s, t, nd, Wx, Px, kc, c, lcmk, lam, mu)
            if ub == -INFINITY or ub + sl2 < thr:
                continue
        else:
            if ka >= 0 or kr >= 0:
                o = ((1 if ka < 0 or _bit_at(va, ka, k, not take_a) == pa else 0)
                     | (2 if kr < 0 or _bit_at(va, kr, k, not take_a) == pr else 0))
                if _dominated_open(kraw, Px, o, maxP, maxPD):
                    continue
            elif _dominated(kraw, Px, &maxP[3], &maxPD[3]):
                continue
            ub = _lp_state_bound(Wx, Px, c, et, es, s >= 0)
            if ub == -INFINITY or ub < thr:
                continue
        if A != NULL:
            ub = Px + lam * (c - Wx) + mu * (kk - kc) + A[t] + B[s + 1]
            if ub + sl2 < thr:
                continue
        vo = _push(pool, out, Wx, Px, kraw, va, word, bit, not take_a)
        out += 1
        if Wx <= c and Px >= thr and (not cm or kc == kf) and (kraw & answers) == answers:
            _improve(r, pool, Px, k, -1, vo)
            if r.found:
                break
            thr = r.thr
            kk = r.kk
    work[0] = ia + ib + 1
    return out


cdef inline int _pair(Run* r, Pool* pool, Pairs* pr, Py_ssize_t out, Py_ssize_t k,
                      const Py_ssize_t* by_weight) noexcept nogil:
    """Pair the merged states with one item outside the core (``_pairs.pxd``);
    a pair reaching the threshold becomes the incumbent. -1 on allocation failure."""
    cdef Pair pb
    # in avoid mode only D states answer (``Run.avoid``)
    if pair_pass(r.w, r.v, r.n, r.c, r.s, r.t, pool.W2, pool.P2, pool.K2, CLASS_D if r.avoid != NULL else 0,
                 out, pr, &pb, by_weight) < 0:
        return -1
    if pb.item >= 0 and pb.value >= r.thr:
        _improve(r, pool, pb.value, k, pb.item, &pool.V2[pb.state * VW])
    return 0


cdef inline void _skip_fixed(Run* r) noexcept nogil:
    """Reduce items as the core reaches them (Pisinger's minknap): the next
    item to add, t, joins only if some set containing it can still reach
    ``r.thr``, and the next to remove, s, leaves only if some set without it
    can; the others keep their break-solution value and cost no step. The
    test is Dembo and Hammer's bound around the break item b, P_b +- v_j +
    (c - W_b -+ w_j) e_b, an upper bound of every set with item j flipped
    (items before b are at least as efficient as b, those after at most).
    ``r.thr`` only rises, so an item skipped stays skippable."""
    cdef double eb = r.v[r.b] / r.w[r.b], room = r.c - r.wsum, base, term
    while r.t < r.n:
        base = r.psum + r.v[r.t]
        term = (room - r.w[r.t]) * eb
        if base + term + _slack(base, term) >= r.thr:
            break
        r.t += 1
    while r.s >= 0:
        base = r.psum - r.v[r.s]
        term = (room + r.w[r.s]) * eb
        if base + term + _slack(base, term) >= r.thr:
            break
        r.s -= 1


cdef inline void _skip_fixed_count(Run* r) noexcept nogil:
    """``_skip_fixed`` in count mode (sets of exactly kf items, items in
    descending order of d = v - lam w - mu, the start state the first kf):
    with item j flipped, the best kf items sum at most D[kf - 1] + d_t (t
    joins, the worst of the first kf leaves) or D[kf] - d_s + d_kf (s leaves,
    the best item after them joins), and every such set is worth at most
    lam c + mu kf plus that."""
    cdef Py_ssize_t kf = <Py_ssize_t>r.kf
    cdef const double* D = r.D
    if kf == 0:
        r.t = r.n  # no item joins a set of no items
    while r.t < r.n and r.lcmk + D[kf - 1] + (D[r.t + 1] - D[r.t]) + r.sl2 < r.thr:
        r.t += 1
    if kf >= r.n:
        r.s = -1  # every item is in every set of kf items
    while r.s >= 0 and r.lcmk + D[kf] - (D[r.s + 1] - D[r.s]) + (D[kf + 1] - D[kf]) + r.sl2 < r.thr:
        r.s -= 1
