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

#define RK_CHUNK 8192

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
    int64_t chunk = w < RK_CHUNK ? w : RK_CHUNK;                                   \
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
 * _profile for the semantics of extra, blo/bhi, bits/off/tail).
 *
 * With threads == 2 the passes run as a wavefront: thread t does items
 * i = t, t+2, ... and item i works down its capacities in chunks, starting a
 * chunk only once every capacity it reads is final for item i - 1. done[i]
 * publishes "every capacity >= done[i] is final after item i"; it is the
 * larger of item i's own progress and done[i - 1], so it also covers cells
 * item i does not touch. Returns RK_OK, RK_NO_MEMORY if a scratch allocation
 * failed or RK_INTERRUPTED (dp is then partial). */
#define RK_WAVEFRONT_CELLS 65536
#define RK_DONE_NONE INT64_MAX
#define RK_DONE_ALL INT64_MIN
#define RK_WAVEFRONT_CHUNK 4096

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

/* Item i's passes, by one thread of the wavefront; returns nonzero if the work
 * must stop. *work counts this thread's cells since its last check. */
#define RK_DEFINE_ITEM(T, SUF)                                                     \
static int rk_item_##SUF(int64_t i, const int64_t *w, const double *v, T *dp,     \
                         const int64_t *lo, const int64_t *hi,                    \
                         const int64_t *start, int64_t *done, const T *run,       \
                         uint64_t *bits, const int64_t *off, rk_interrupt *irq,   \
                         int may_check, int64_t *work) {                          \
    int64_t wi = w[i], l = lo[i], h = hi[i];                                       \
    T vi = (T)v[i], Ti = run[i];                                                   \
    int64_t *prev = done + i, *mine = done + i + 1;                                \
    if (bits != NULL && h >= l  /* this item's bit row starts zeroed */            \
        && rk_zero(bits + off[i], (h >> 6) - (l >> 6) + 1, 8, work, irq, may_check)) \
        return 1;                                                                  \
    /* Cells from P_i up hold the running total. */                                \
    for (int64_t f = rk_max64(start[i], l), k; f <= h; f += k) {                   \
        k = h - f + 1 < irq->every ? h - f + 1 : irq->every;                       \
        for (int64_t j = f; j < f + k; j++) dp[j] = Ti;                            \
        if (rk_tick(work, k, irq, may_check)) return 1;                            \
    }                                                                              \
    int64_t bot = l > wi ? l : wi;                                                 \
    int64_t top = h + 1;                                                           \
    while (top > bot) {                                                            \
        int64_t s0 = rk_max64(bot, (top - RK_WAVEFRONT_CHUNK) & ~(int64_t)63);     \
        if (rk_wait(prev, s0 - wi, irq, may_check)) return 1;                      \
        if (bits == NULL)                                                          \
            rk_pass_##SUF(dp, s0, top - 1, wi, vi);                                \
        else                                                                       \
            rk_pass_bits_##SUF(dp, s0, top - 1, wi, vi, bits + off[i], l >> 6);    \
        rk_store(mine, rk_max64(s0, rk_load(prev)));                               \
        if (rk_tick(work, top - s0, irq, may_check)) return 1;                     \
        top = s0;                                                                  \
    }                                                                              \
    if (rk_wait(prev, RK_DONE_ALL, irq, may_check)) return 1;                      \
    rk_store(mine, RK_DONE_ALL);                                                   \
    return 0;                                                                      \
}

#define RK_DEFINE_PROFILE(T, SUF)                                                  \
RK_DEFINE_SETUP(T, SUF)                                                            \
RK_DEFINE_ITEM(T, SUF)                                                             \
static int rk_profile_##SUF(const int64_t *w, const double *v, int64_t n,         \
                            int64_t c, int64_t extra, const int64_t *blo,         \
                            const int64_t *bhi, T *dp, uint64_t *bits,            \
                            const int64_t *off, uint8_t *tail, int threads,       \
                            rk_interrupt *irq, int may_check) {                   \
    int64_t *lo = (int64_t *)malloc(sizeof(int64_t) * (size_t)(4 * n + 1));       \
    if (lo == NULL) return RK_NO_MEMORY;                                           \
    int64_t *hi = lo + n, *start = hi + n, *done = start + n;                      \
    T *run = (T *)malloc(sizeof(T) * (size_t)(n + 1));                             \
    if (run == NULL) { free(lo); return RK_NO_MEMORY; }                            \
    int64_t zero[2];                                                               \
    int64_t cells = rk_setup_##SUF(w, v, n, c, extra, blo, bhi, tail,              \
                                   lo, hi, start, done, run, zero);                \
    int64_t zwork = 0;                                                             \
    if (zero[1] >= zero[0])                                                        \
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
            if (rk_item_##SUF(i, w, v, dp, lo, hi, start, done, run, bits, off,    \
                              irq, checks, &work))                                 \
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
                                      x->bhi, (T *)x->dp, NULL, NULL, NULL, 1,     \
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
