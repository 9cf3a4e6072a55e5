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

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RK_CHUNK 8192

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


/* A whole profile: items 0..n-1 added one pass each (see _dense.pyx's
 * _profile for the semantics of extra, blo/bhi, bits/off/tail).
 *
 * With threads == 2 the passes run as a wavefront: thread t does items
 * i = t, t+2, ... and item i works down its capacities in chunks, starting a
 * chunk only once every capacity it reads is final for item i - 1. done[i]
 * publishes "every capacity >= done[i] is final after item i"; it is the
 * larger of item i's own progress and done[i - 1], so it also covers cells
 * item i does not touch. Returns 0, or -1 if a scratch allocation failed. */
#define RK_WAVEFRONT_CELLS 65536
#define RK_DONE_NONE INT64_MAX
#define RK_DONE_ALL INT64_MIN

static inline int64_t rk_load(const int64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void rk_store(int64_t *p, int64_t x) { __atomic_store_n(p, x, __ATOMIC_RELEASE); }
static inline int64_t rk_max64(int64_t a, int64_t b) { return a > b ? a : b; }
/* Spin a little, then give the core away: the other thread may be descheduled. */
static inline void rk_relax(unsigned *spins) {
    if (++*spins < 2048) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else {
        sched_yield();
    }
}

#define RK_DEFINE_PROFILE(T, SUF)                                                  \
static int rk_profile_##SUF(const int64_t *w, const double *v, int64_t n,         \
                            int64_t c, int64_t extra, const int64_t *blo,         \
                            const int64_t *bhi, T *dp, uint64_t *bits,            \
                            const int64_t *off, uint8_t *tail, int threads) {     \
    int64_t *lo = (int64_t *)malloc(sizeof(int64_t) * (size_t)(4 * n + 1));       \
    if (lo == NULL) return -1;                                                     \
    int64_t *hi = lo + n, *start = hi + n, *done = start + n;                      \
    T *run = (T *)malloc(sizeof(T) * (size_t)(n + 1));                             \
    if (run == NULL) { free(lo); return -1; }                                      \
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
    /* Pruned passes read cells no pass wrote: they must start at zero. */         \
    if (blo != NULL && zhi >= zlo)                                                 \
        memset(dp + zlo, 0, sizeof(T) * (size_t)(zhi - zlo + 1));                  \
    /* Two threads only pay when each pass is long enough to hide the hand-off. */ \
    int nt = threads > 1 && n > 1 && cells >= RK_WAVEFRONT_CELLS * n ? 2 : 1;      \
    _Pragma("omp parallel num_threads(nt)")                                        \
    {                                                                              \
        int t = 0, stride = 1;                                                     \
        RK_THREAD_NUM(t, stride);                                                  \
        for (int64_t i = t; i < n; i += stride) {                                  \
            int64_t wi = w[i], l = lo[i], h = hi[i];                               \
            T vi = (T)v[i], Ti = run[i];                                           \
            int64_t *prev = done + i, *mine = done + i + 1;                        \
            for (int64_t b = rk_max64(start[i], l); b <= h; b++) dp[b] = Ti;       \
            int64_t bot = l > wi ? l : wi;                                         \
            int64_t chunk = 4096;                                                  \
            int64_t top = h + 1;                                                   \
            while (top > bot) {                                                    \
                int64_t s0 = top - chunk;                                          \
                s0 = rk_max64(bot, s0 & ~(int64_t)63);                             \
                int64_t need = s0 - wi;                                            \
                unsigned spins = 0;                                                \
                while (rk_load(prev) > need) rk_relax(&spins);                     \
                if (bits == NULL)                                                  \
                    rk_pass_##SUF(dp, s0, top - 1, wi, vi);                        \
                else                                                               \
                    rk_pass_bits_##SUF(dp, s0, top - 1, wi, vi, bits + off[i],     \
                                       l >> 6);                                    \
                rk_store(mine, rk_max64(s0, rk_load(prev)));                       \
                top = s0;                                                          \
            }                                                                      \
            unsigned spins = 0;                                                    \
            while (rk_load(prev) != RK_DONE_ALL) rk_relax(&spins);                 \
            rk_store(mine, RK_DONE_ALL);                                           \
        }                                                                          \
    }                                                                              \
    if (P <= c) dp[P] = run[n];                                                    \
    free(run);                                                                     \
    free(lo);                                                                      \
    return 0;                                                                      \
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

#endif
