/* Inner loops of the dense DP, one in-place pass of one item over a range of
 * capacities: dp[b] = max(dp[b], dp[b - w] + v) for b in [lo, hi], b >= w,
 * with the semantics of a descending sweep (each cell reads the row as it was
 * before this item).
 *
 * The sweep goes down in chunks of at most w cells; inside a chunk the cells
 * read (b - w) all lie below the chunk, so the chunk can be processed upwards
 * with restrict pointers and the compiler vectorises it. The bit-recording
 * variant works a 64-cell word at a time and returns which cells improved.
 */
#ifndef REMAT_KNAPSACK_DENSE_KERNELS_H
#define REMAT_KNAPSACK_DENSE_KERNELS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Portability: the atomics, the clock and the yield, with GCC/Clang builtins
 * and POSIX, or their MSVC/Windows equivalents (x86-64 only, where volatile
 * accesses have acquire/release semantics under MSVC's default /volatile:ms).
 * The MSVC branch is built by the Windows wheel job only. */
#if defined(_MSC_VER) && !defined(__clang__)
#include <windows.h>
#include <intrin.h>
#define restrict __restrict
#define RK_LOAD_RELAXED(p) (*(volatile const int *)(p))
#define RK_STORE_RELAXED(p, x) (*(volatile int *)(p) = (x))
#define RK_LOAD_ACQUIRE(p) (*(volatile const int *)(p))
#define RK_DECREMENT_RELEASE(p) _InterlockedDecrement((volatile long *)(p))
static inline int64_t rk_load(const int64_t *p) { return *(volatile const int64_t *)p; }
static inline void rk_store(int64_t *p, int64_t x) { *(volatile int64_t *)p = x; }
static inline void rk_pause(void) { _mm_pause(); }
static inline void rk_yield(void) { SwitchToThread(); }
static inline void rk_nap(void) { Sleep(0); }
static inline int64_t rk_now_ns(void) {
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&c);
    return (int64_t)((double)c.QuadPart * (1e9 / (double)f.QuadPart));
}
#else
#include <sched.h>
#include <time.h>
#define RK_LOAD_RELAXED(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define RK_STORE_RELAXED(p, x) __atomic_store_n((p), (x), __ATOMIC_RELAXED)
#define RK_LOAD_ACQUIRE(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define RK_DECREMENT_RELEASE(p) __atomic_sub_fetch((p), 1, __ATOMIC_RELEASE)
static inline int64_t rk_load(const int64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void rk_store(int64_t *p, int64_t x) { __atomic_store_n(p, x, __ATOMIC_RELEASE); }
static inline void rk_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}
static inline void rk_yield(void) { sched_yield(); }
static inline void rk_nap(void) {
    struct timespec t = {0, 20000};
    nanosleep(&t, NULL);
}
static inline int64_t rk_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
#endif

#define RK_PASS_CHUNK 8192

/* A parallel region of nt threads with OpenMP; without it (Apple clang) the
 * block runs once on the calling thread, which the kernels handle (stride 1). */
#if defined(_OPENMP) && defined(_MSC_VER) && !defined(__clang__)
#define RK_PARALLEL(nt) __pragma(omp parallel num_threads(nt))
#elif defined(_OPENMP)
#define RK_PRAGMA(x) _Pragma(#x)
#define RK_PARALLEL(nt) RK_PRAGMA(omp parallel num_threads(nt))
#else
#define RK_PARALLEL(nt) (void)(nt);
#endif

/* SIMD part of the masked update: handles a multiple of the vector width,
 * sets the improved cells' bits in *word, returns how many cells it did. */
#if defined(__SSE2__)
#include <emmintrin.h>
static inline int64_t rk_simd_mask_f32(float *restrict dst, const float *restrict src,
                                       int64_t len, float v, uint64_t *word) {
    __m128 vv = _mm_set1_ps(v);
    uint64_t acc = 0;
    int64_t j = 0;
    for (; j + 4 <= len; j += 4) {
        __m128 c = _mm_add_ps(_mm_loadu_ps(src + j), vv);
        __m128 d = _mm_loadu_ps(dst + j);
        _mm_storeu_ps(dst + j, _mm_max_ps(c, d));
        acc |= (uint64_t)_mm_movemask_ps(_mm_cmpgt_ps(c, d)) << j;
    }
    *word |= acc;
    return j;
}
static inline int64_t rk_simd_mask_f64(double *restrict dst, const double *restrict src,
                                       int64_t len, double v, uint64_t *word) {
    __m128d vv = _mm_set1_pd(v);
    uint64_t acc = 0;
    int64_t j = 0;
    for (; j + 2 <= len; j += 2) {
        __m128d c = _mm_add_pd(_mm_loadu_pd(src + j), vv);
        __m128d d = _mm_loadu_pd(dst + j);
        _mm_storeu_pd(dst + j, _mm_max_pd(c, d));
        acc |= (uint64_t)_mm_movemask_pd(_mm_cmpgt_pd(c, d)) << j;
    }
    *word |= acc;
    return j;
}
#define RK_SIMD_MASK_f32 rk_simd_mask_f32
#define RK_SIMD_MASK_f64 rk_simd_mask_f64
#else
#define RK_SIMD_MASK_f32(dst, src, len, v, word) ((int64_t)0)
#define RK_SIMD_MASK_f64(dst, src, len, v, word) ((int64_t)0)
#endif

#define RK_DEFINE(T, SUF)                                                          \
static inline void rk_update_##SUF(T *restrict dst, const T *restrict src,        \
                                   int64_t len, T v) {                             \
    for (int64_t j = 0; j < len; j++) {                                            \
        T c = src[j] + v;                                                          \
        T d = dst[j];                                                              \
        dst[j] = c > d ? c : d;                                                    \
    }                                                                              \
}                                                                                  \
static inline uint64_t rk_update_mask_##SUF(T *restrict dst, const T *restrict src,\
                                            int64_t len, T v) {                    \
    uint64_t word = 0;                                                             \
    int64_t j = RK_SIMD_MASK_##SUF(dst, src, len, v, &word);                       \
    for (; j < len; j++) {                                                         \
        T c = src[j] + v;                                                          \
        if (c > dst[j]) {                                                          \
            dst[j] = c;                                                            \
            word |= (uint64_t)1 << j;                                              \
        }                                                                          \
    }                                                                              \
    return word;                                                                   \
}                                                                                  \
/* The whole pass; lo >= w. */                                                     \
static inline void rk_pass_##SUF(T *dp, int64_t lo, int64_t hi, int64_t w, T v) { \
    int64_t chunk = w < RK_PASS_CHUNK ? w : RK_PASS_CHUNK;                         \
    int64_t top = hi + 1;                                                          \
    while (top > lo) {                                                             \
        int64_t start = top - chunk;                                               \
        if (start < lo) start = lo;                                                \
        rk_update_##SUF(dp + start, dp + start - w, top - start, v);               \
        top = start;                                                               \
    }                                                                              \
}                                                                                  \
/* The pass recording improvements: the bit of capacity b is bit (b & 63) of     \
 * words[(b >> 6) - base] (words must start zeroed). lo >= w. */                   \
static inline void rk_pass_bits_##SUF(T *dp, int64_t lo, int64_t hi, int64_t w,   \
                                      T v, uint64_t *words, int64_t base) {       \
    int64_t top = hi + 1;                                                          \
    if (w < 64) {                                                                  \
        for (int64_t b = hi; b >= lo; b--) {                                       \
            T c = dp[b - w] + v;                                                   \
            if (c > dp[b]) {                                                       \
                dp[b] = c;                                                         \
                words[(b >> 6) - base] |= (uint64_t)1 << (b & 63);                 \
            }                                                                      \
        }                                                                          \
        return;                                                                    \
    }                                                                              \
    while (top > lo) {                                                             \
        int64_t start = (top - 1) & ~(int64_t)63;                                  \
        if (start < lo) start = lo;                                                \
        uint64_t m = rk_update_mask_##SUF(dp + start, dp + start - w,              \
                                          top - start, v);                         \
        words[(start >> 6) - base] |= m << (start & 63);                           \
        top = start;                                                               \
    }                                                                              \
}

RK_DEFINE(float, f32)
RK_DEFINE(double, f64)


/* Result codes of rk_profile_*. */
#define RK_OK 0
#define RK_NO_MEMORY (-1)
#define RK_INTERRUPTED (-2)

/* Ctrl-C from inside a profile. check (or NULL) runs Python's signal handlers
 * and returns nonzero when one raised; only the caller's own thread may call it
 * (OpenMP thread 0 of a profile called with may_check), at most every `every`
 * cells of its work and while it waits. Its first nonzero result sets stop,
 * which every thread reads between chunks and while it waits, and the profile
 * returns RK_INTERRUPTED. Profiles running side by side share one rk_interrupt. */
typedef int (*rk_check_fn)(void);
typedef struct {
    rk_check_fn check;
    int64_t every;
    int stop;
} rk_interrupt;

static inline int rk_stopped(rk_interrupt *irq) {
    return RK_LOAD_RELAXED(&irq->stop);
}
/* Run the check now; returns whether the work must stop. */
static inline int rk_poll(rk_interrupt *irq) {
    if (irq->check != NULL && !rk_stopped(irq) && irq->check())
        RK_STORE_RELAXED(&irq->stop, 1);
    return rk_stopped(irq);
}


/* A whole profile: items 0..n-1 added one pass each (see _dense.pyx's
 * _profile for the semantics of extra, blo/bhi, bits/off/tail; gate, or
 * NULL, see above; zeroed: dp is known to be zero already, as fresh pages are,
 * so the cells pruned passes read need no zeroing and the cells no pass
 * touches are never faulted in).
 *
 * With threads == 2 the passes run as a wavefront: thread t does items
 * i = t, t+2, ... and item i works down its capacities in chunks of
 * RK_WAVEFRONT_CHUNK, aligned to multiples of it (the gate's blocks), starting a
 * chunk only once every capacity it reads is final for item i - 1. done[i]
 * publishes "every capacity >= done[i] is final after item i"; it is the
 * larger of item i's own progress and done[i - 1], so it also covers cells
 * item i does not touch. Returns RK_OK, RK_NO_MEMORY if a scratch allocation
 * failed or RK_INTERRUPTED (dp is then partial). */
#define RK_WAVEFRONT_CELLS 65536
#define RK_DONE_NONE INT64_MAX
#define RK_DONE_ALL INT64_MIN
#define RK_CHUNK_SHIFT 12
#define RK_WAVEFRONT_CHUNK ((int64_t)1 << RK_CHUNK_SHIFT)

static inline int64_t rk_max64(int64_t a, int64_t b) { return a > b ? a : b; }
/* Count cells of work done; when `every` have gone by, poll (or, without
 * may_check, only look at stop). Returns whether the work must stop. */
static inline int rk_tick(int64_t *work, int64_t cells, rk_interrupt *irq, int may_check) {
    *work += cells;
    if (*work < irq->every) return 0;
    *work = 0;
    return may_check ? rk_poll(irq) : rk_stopped(irq);
}

/* Zero n cells of `size` bytes from p, a stretch of at most `every` cells at
 * a time (fresh pages are slow to touch), counting them as work. */
static inline int rk_zero(void *p, int64_t n, size_t size, int64_t *work,
                          rk_interrupt *irq, int may_check) {
    char *q = (char *)p;
    for (int64_t k; n > 0; n -= k, q += size * (size_t)k) {
        k = n < irq->every ? n : irq->every;
        memset(q, 0, size * (size_t)k);
        if (rk_tick(work, k, irq, may_check)) return 1;
    }
    return 0;
}

/* Waiting threads poll by the clock: a sched_yield or a nap can take a whole
 * time slice on a loaded machine. */
#define RK_POLL_NS 5000000
/* One round of waiting: spin a little, then give the core away (the other
 * thread may be descheduled; with nap, sleep too). When polling is due (may_check
 * and RK_POLL_NS since *last, which starts at 0), poll. Returns whether the
 * work must stop. */
static inline int rk_idle(unsigned *spins, int64_t *last, int nap, rk_interrupt *irq,
                          int may_check) {
    if (rk_stopped(irq)) return 1;
    if (++*spins < 2048) {
        rk_pause();
        return 0;
    }
    if (nap)
        rk_nap();
    else
        rk_yield();
    if (may_check && irq->check != NULL) {
        int64_t now = rk_now_ns();
        if (*last == 0) *last = now;
        if (now - *last >= RK_POLL_NS) {
            *last = now;
            return rk_poll(irq);
        }
    }
    return 0;
}
/* Wait until *p <= need; returns nonzero if the work must stop instead. */
static inline int rk_wait(const int64_t *p, int64_t need, rk_interrupt *irq, int may_check) {
    unsigned spins = 0;
    int64_t last = 0;
    while (rk_load(p) > need)
        if (rk_idle(&spins, &last, 0, irq, may_check)) return 1;
    return 0;
}

/* The gate: a leaf's passes skip the chunks that no optimal path can use,
 * judged by the row's own values (the static intervals of _bounds.pyx judge
 * by an LP bound on both sides). After item i, capacity b can lie on an
 * optimal path only if dp_i[b] + LP(S_i, c - b) >= thr, with S_i the items
 * after i, LP the fractional (Dantzig) bound and thr a lower bound on the
 * optimum less the rows' rounding. A path through capacity b after item i
 * comes from b or b - w_i after item i - 1, so a chunk of item i is updated
 * only if one of the capacities it writes or reads passed that test after
 * item i - 1. The test is kept per block of 2**RK_GATE_SHIFT capacities, one
 * wavefront chunk (a chunk never straddles one): a block passes when its largest value plus the bound
 * at its lowest capacity reaches thr, which over-approximates, so the gate may
 * update a cell it could skip but never skips one on an optimal path. Cells it
 * skips keep a value no larger than their true one, as statically pruned
 * cells do (see _dense.pyx). Three maps, one per item, in a ring: the two
 * items the threads work on and the one before. */
#define RK_GATE_SHIFT RK_CHUNK_SHIFT  /* a block is a chunk */

/* The LP bound of a set of items: cumulative weights w[0..m] and values
 * v[0..m] of the items by ratio, largest first, and r[p], the ratio of the
 * p-th. */
typedef struct {
    int64_t m;
    double *w, *v, *r;
} rk_lp;

typedef struct {
    double thr;        /* a lower bound on the optimum, less the rows' rounding */
    int64_t blocks;    /* blocks per map: (c >> RK_GATE_SHIFT) + 1 */
    const int64_t *order;  /* the items by ratio v / w, largest first */
    int *map;          /* 3 maps of `blocks` flags: block passed after item i (map i % 3) */
    double *scratch;   /* per thread, two LP lists of 3 (n + 1) doubles */
    int64_t skipped[2];    /* cells each thread's gate skipped */
} rk_gate;

/* The LP list of the items j >= first. */
static void rk_lp_build(rk_lp *lp, double *mem, const int64_t *w, const double *v,
                        const int64_t *order, int64_t n, int64_t first) {
    int64_t m = 0;
    lp->w = mem;
    lp->v = mem + (n + 1);
    lp->r = mem + 2 * (n + 1);
    lp->w[0] = 0.0;
    lp->v[0] = 0.0;
    for (int64_t k = 0; k < n; k++) {
        int64_t j = order[k];
        if (j < first) continue;
        lp->r[m] = v[j] / (double)w[j];
        lp->w[m + 1] = lp->w[m] + (double)w[j];
        lp->v[m + 1] = lp->v[m] + v[j];
        m++;
    }
    lp->m = m;
}

/* LP(x): the whole items of the longest prefix that fits, then a fraction. */
static double rk_lp_value(const rk_lp *lp, double x) {
    if (x <= 0.0) return 0.0;
    if (x >= lp->w[lp->m]) return lp->v[lp->m];
    int64_t a = 0, z = lp->m;  /* w[a] <= x < w[z] */
    while (z - a > 1) {
        int64_t mid = a + (z - a) / 2;
        if (lp->w[mid] <= x) a = mid; else z = mid;
    }
    return lp->v[a] + (x - lp->w[a]) * lp->r[a];
}

/* Whether any block overlapping capacities [s, t] passed (map of one item). */
static inline int rk_gate_any(const int *map, int64_t s, int64_t t) {
    if (t < s || t < 0) return 0;
    if (s < 0) s = 0;
    for (int64_t k = s >> RK_GATE_SHIFT; k <= (t >> RK_GATE_SHIFT); k++)
        if (RK_LOAD_RELAXED(map + k)) return 1;
    return 0;
}

/* Whether item i's chunk [s0, top) may hold a cell of an optimal path: a
 * capacity it writes or reads passed after item i - 1 (map `before`), or lies
 * in item i - 1's tail (capacities >= P_i, which hold T_i) and passes there. */
static inline int rk_gate_open(const int *before, const rk_lp *lp_before, double thr,
                               int64_t c, int64_t s0, int64_t top, int64_t wi,
                               int64_t P, double T) {
    if (rk_gate_any(before, s0, top - 1) || rk_gate_any(before, s0 - wi, top - 1 - wi))
        return 1;
    return top - 1 >= P && T + rk_lp_value(lp_before, (double)(c - rk_max64(s0, P))) >= thr;
}

/* After item i's chunks, the capacities below bot that it does not update:
 * one passes only if it passed after item i - 1 (the bound only shrinks as
 * items go by), or if it is in the tail [P_i, ...] (Ti there) and passes.
 * bot = max(lo_i, w_i) can exceed c (in a sub-problem an item may weigh more
 * than its capacity): the maps end at block c >> RK_GATE_SHIFT. */
static inline void rk_gate_inherit(const int *before, int *after, const rk_lp *lp_after,
                                   double thr, int64_t c, int64_t l, int64_t h,
                                   int64_t bot, int64_t P, double T) {
    int64_t last = (bot - 1 < c ? bot - 1 : c) >> RK_GATE_SHIFT;
    for (int64_t k = 0; k <= last && bot > 0; k++)
        if (RK_LOAD_RELAXED(before + k)) RK_STORE_RELAXED(after + k, 1);
    int64_t f = rk_max64(P, l), t = h < bot - 1 ? h : bot - 1;
    for (int64_t k = f >> RK_GATE_SHIFT; f <= t && k <= (t >> RK_GATE_SHIFT); k++) {
        int64_t s = rk_max64(f, k << RK_GATE_SHIFT);
        if (T + rk_lp_value(lp_after, (double)(c - s)) >= thr) RK_STORE_RELAXED(after + k, 1);
    }
}

/* Per-item ranges lo/hi (the capacities item i updates), start (its running
 * weight P_i), run (running value totals), tail, done, and the cells pruned
 * passes read, which must start at zero: [zero[0], zero[1]] (empty if
 * zero[1] < zero[0]). Returns the number of cells the passes update. */
#define RK_DEFINE_SETUP(T, SUF)                                                    \
static int64_t rk_setup_##SUF(const int64_t *w, const double *v, int64_t n,       \
                              int64_t c, int64_t extra, const int64_t *blo,       \
                              const int64_t *bhi, uint8_t *tail,                  \
                              int64_t *lo, int64_t *hi, int64_t *start,           \
                              int64_t *done, T *run, int64_t *zero) {             \
    int64_t rem = 0, P = 0, zlo = INT64_MAX, zhi = -1, cells = 0;                  \
    for (int64_t i = 0; i < n; i++) rem += w[i];                                   \
    run[0] = 0;                                                                    \
    for (int64_t i = 0; i < n; i++) {                                              \
        rem -= w[i];                                                               \
        int64_t l = c - rem - extra, h = P + w[i] - 1;                             \
        if (l < 0) l = 0;                                                          \
        if (h > c) h = c;                                                          \
        if (blo != NULL) {                                                         \
            if (blo[i] > l) l = blo[i];                                            \
            if (bhi[i] < h) h = bhi[i];                                            \
            if (h >= l) {                                                          \
                int64_t z = l >= w[i] ? l - w[i] : 0;                              \
                if (z < zlo) zlo = z;                                              \
                if (h > zhi) zhi = h;                                              \
            }                                                                      \
        }                                                                          \
        lo[i] = l; hi[i] = h; start[i] = P;                                        \
        if (h >= l) cells += h - l + 1;                                            \
        run[i + 1] = run[i] + (T)v[i];                                             \
        if (tail != NULL) tail[i] = run[i + 1] > run[i];                           \
        done[i + 1] = RK_DONE_NONE;                                                \
        P += w[i];                                                                 \
    }                                                                              \
    done[0] = RK_DONE_ALL;                                                         \
    zero[0] = zlo;                                                                 \
    zero[1] = zhi;                                                                 \
    return cells;                                                                  \
}

/* Cells [f, t] of item i's tail (capacities >= P_i) get the running total Ti. */
#define RK_DEFINE_FILL(T, SUF)                                                     \
static inline int rk_fill_##SUF(T *dp, int64_t f, int64_t t, T Ti, int64_t *work, \
                                rk_interrupt *irq, int may_check) {               \
    for (int64_t k; f <= t; f += k) {                                              \
        k = t - f + 1 < irq->every ? t - f + 1 : irq->every;                       \
        for (int64_t j = f; j < f + k; j++) dp[j] = Ti;                            \
        if (rk_tick(work, k, irq, may_check)) return 1;                            \
    }                                                                              \
    return 0;                                                                      \
}                                                                                  \
/* The gate's verdict on item i's chunk [s0, top), just updated: whether its      \
 * block may hold a cell of an optimal path (largest value plus the bound at     \
 * its lowest capacity). */                                                        \
static inline int rk_gate_pass_##SUF(const T *dp, int64_t s0, int64_t top,        \
                                     const rk_lp *lp_after, double thr, int64_t c) { \
    T best = dp[s0];                                                               \
    for (int64_t j = s0 + 1; j < top; j++) best = dp[j] > best ? dp[j] : best;     \
    return (double)best + rk_lp_value(lp_after, (double)(c - s0)) >= thr;         \
}

/* Item i's passes, by one thread of the wavefront; returns nonzero if the work
 * must stop. *work counts this thread's cells since its last check. With a
 * gate (leaves with static intervals only), thread t's LP lists live in its
 * scratch and item i's verdicts go into map i % 3. */
#define RK_DEFINE_ITEM(T, SUF)                                                     \
RK_DEFINE_FILL(T, SUF)                                                             \
static int rk_item_##SUF(int64_t i, int64_t n, int64_t c, const int64_t *w,       \
                         const double *v, T *dp, const int64_t *lo,               \
                         const int64_t *hi, const int64_t *start, int64_t *done,  \
                         const T *run, uint64_t *bits, const int64_t *off,        \
                         rk_gate *gate, int t, rk_interrupt *irq, int may_check,  \
                         int64_t *work) {                                         \
    int64_t wi = w[i], l = lo[i], h = hi[i], P = start[i];                         \
    T vi = (T)v[i], Ti = run[i];                                                   \
    int64_t *prev = done + i, *mine = done + i + 1;                                \
    int *before = NULL, *after = NULL;                                             \
    rk_lp lp_before, lp_after;                                                     \
    if (gate != NULL) {                                                            \
        double *mem = gate->scratch + (size_t)t * 6 * (size_t)(n + 1);             \
        rk_lp_build(&lp_before, mem, w, v, gate->order, n, i);                     \
        rk_lp_build(&lp_after, mem + 3 * (n + 1), w, v, gate->order, n, i + 1);    \
        before = gate->map + ((i + 2) % 3) * gate->blocks;                         \
        after = gate->map + (i % 3) * gate->blocks;                                \
        memset(after, 0, sizeof(int) * (size_t)gate->blocks);                      \
    }                                                                              \
    if (bits != NULL && h >= l  /* this item's bit row starts zeroed */            \
        && rk_zero(bits + off[i], (h >> 6) - (l >> 6) + 1, 8, work, irq, may_check)) \
        return 1;                                                                  \
    int64_t bot = l > wi ? l : wi;                                                 \
    /* Cells from P_i up hold the running total: below bot now, above it in the   \
     * chunks that are updated. */                                                 \
    if (rk_fill_##SUF(dp, rk_max64(P, l), h < bot - 1 ? h : bot - 1, Ti, work, irq, may_check)) \
        return 1;                                                                  \
    int64_t top = h + 1;                                                           \
    while (top > bot) {                                                            \
        int64_t s0 = rk_max64(bot, (top - 1) & ~(RK_WAVEFRONT_CHUNK - 1));         \
        if (rk_wait(prev, s0 - wi, irq, may_check)) return 1;                      \
        if (gate == NULL || rk_gate_open(before, &lp_before, gate->thr, c, s0, top, wi, P, (double)Ti)) { \
            if (rk_fill_##SUF(dp, rk_max64(P, s0), top - 1, Ti, work, irq, may_check)) \
                return 1;                                                          \
            if (bits == NULL)                                                      \
                rk_pass_##SUF(dp, s0, top - 1, wi, vi);                            \
            else                                                                   \
                rk_pass_bits_##SUF(dp, s0, top - 1, wi, vi, bits + off[i], l >> 6); \
            if (gate != NULL && rk_gate_pass_##SUF(dp, s0, top, &lp_after, gate->thr, c)) \
                RK_STORE_RELAXED(after + (s0 >> RK_GATE_SHIFT), 1);                \
        } else {                                                                   \
            gate->skipped[t] += top - s0;                                          \
        }                                                                          \
        rk_store(mine, rk_max64(s0, rk_load(prev)));                               \
        if (rk_tick(work, top - s0, irq, may_check)) return 1;                     \
        top = s0;                                                                  \
    }                                                                              \
    if (rk_wait(prev, RK_DONE_ALL, irq, may_check)) return 1;                      \
    if (gate != NULL)                                                              \
        rk_gate_inherit(before, after, &lp_after, gate->thr, c, l, h, bot, P, (double)Ti); \
    rk_store(mine, RK_DONE_ALL);                                                   \
    return 0;                                                                      \
}

#define RK_DEFINE_PROFILE(T, SUF)                                                  \
RK_DEFINE_SETUP(T, SUF)                                                            \
RK_DEFINE_ITEM(T, SUF)                                                             \
static int rk_profile_##SUF(const int64_t *w, const double *v, int64_t n,         \
                            int64_t c, int64_t extra, const int64_t *blo,         \
                            const int64_t *bhi, T *dp, uint64_t *bits,            \
                            const int64_t *off, uint8_t *tail, rk_gate *gate,     \
                            int zeroed, int threads, rk_interrupt *irq,           \
                            int may_check) {                                      \
    int64_t *lo = (int64_t *)malloc(sizeof(int64_t) * (size_t)(4 * n + 1));       \
    if (lo == NULL) return RK_NO_MEMORY;                                           \
    int64_t *hi = lo + n, *start = hi + n, *done = start + n;                      \
    T *run = (T *)malloc(sizeof(T) * (size_t)(n + 1));                             \
    if (run == NULL) { free(lo); return RK_NO_MEMORY; }                            \
    int64_t zero[2];                                                               \
    int64_t cells = rk_setup_##SUF(w, v, n, c, extra, blo, bhi, tail,              \
                                   lo, hi, start, done, run, zero);                \
    int64_t zwork = 0;                                                             \
    if (!zeroed && zero[1] >= zero[0])                                             \
        rk_zero(dp + zero[0], zero[1] - zero[0] + 1, sizeof(T), &zwork, irq,       \
                may_check);                                                        \
    int64_t P = n > 0 ? start[n - 1] + w[n - 1] : 0;                               \
    /* Two threads only pay when each pass is long enough to hide the hand-off. */ \
    int nt = threads > 1 && n > 1 && cells >= RK_WAVEFRONT_CELLS * n ? 2 : 1;      \
    RK_PARALLEL(nt)                                                               \
    {                                                                              \
        int t = 0, stride = 1;                                                     \
        RK_THREAD_NUM(t, stride);                                                  \
        int checks = may_check && t == 0;                                          \
        int64_t work = t == 0 ? zwork : 0;                                         \
        for (int64_t i = t; i < n && !rk_stopped(irq); i += stride)                \
            if (rk_item_##SUF(i, n, c, w, v, dp, lo, hi, start, done, run, bits,  \
                              off, gate, t, irq, checks, &work))                   \
                break;                                                             \
    }                                                                              \
    int stopped = rk_stopped(irq);                                                 \
    if (!stopped && P <= c) dp[P] = run[n];                                        \
    free(run);                                                                     \
    free(lo);                                                                      \
    return stopped ? RK_INTERRUPTED : RK_OK;                                       \
}

/* The two profiles of a Hirschberg split, side by side: one per thread when
 * threads > 1. Each half's result code goes into its err. The caller's thread
 * (OpenMP thread 0) polls for Ctrl-C during its own half and then while it
 * waits for the other one, which never polls. */
typedef struct {
    const int64_t *w;
    const double *v;
    int64_t n, extra;
    const int64_t *blo, *bhi;
    void *dp;
    int err;
} rk_half;

/* Wait for *running to reach 0, napping and polling. */
static inline void rk_watch(const int *running, rk_interrupt *irq) {
    unsigned spins = 0;
    int64_t last = 0;
    while (RK_LOAD_ACQUIRE(running) > 0)
        if (rk_idle(&spins, &last, 1, irq, 1)) return;
}

#define RK_DEFINE_PAIR(T, SUF)                                                     \
static void rk_pair_##SUF(rk_half *half, int64_t c, int threads,                  \
                          rk_interrupt *irq) {                                    \
    int running = 2;                                                               \
    int nt = threads > 1 ? 2 : 1;                                                  \
    RK_PARALLEL(nt)                                                               \
    {                                                                              \
        int t = 0, stride = 1;                                                     \
        RK_THREAD_NUM(t, stride);                                                  \
        for (int h = t; h < 2; h += stride) {                                      \
            rk_half *x = half + h;                                                 \
            x->err = rk_profile_##SUF(x->w, x->v, x->n, c, x->extra, x->blo,       \
                                      x->bhi, (T *)x->dp, NULL, NULL, NULL, NULL, 0, 1, \
                                      irq, t == 0);                                \
            RK_DECREMENT_RELEASE(&running);                                        \
        }                                                                          \
        if (t == 0 && stride > 1) rk_watch(&running, irq);                         \
    }                                                                              \
}

#ifdef _OPENMP
#include <omp.h>
/* OpenMP may give fewer threads than asked: the stride is what it gave. */
#define RK_THREAD_NUM(t, stride) ((t) = omp_get_thread_num(), (stride) = omp_get_num_threads())
#else
#define RK_THREAD_NUM(t, stride) ((void)0)
#endif

RK_DEFINE_PROFILE(float, f32)
RK_DEFINE_PROFILE(double, f64)
RK_DEFINE_PAIR(float, f32)
RK_DEFINE_PAIR(double, f64)

#endif
