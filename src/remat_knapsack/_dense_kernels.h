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

#define RK_CHUNK 8192

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
    unsigned char m[64];                                                           \
    uint64_t word = 0;                                                             \
    for (int64_t j = 0; j < len; j++) {                                            \
        T c = src[j] + v;                                                          \
        T d = dst[j];                                                              \
        m[j] = c > d;                                                              \
        dst[j] = c > d ? c : d;                                                    \
    }                                                                              \
    for (int64_t j = 0; j < len; j++) word |= (uint64_t)m[j] << j;                 \
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

#endif
