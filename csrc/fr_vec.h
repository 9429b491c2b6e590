/* k-wide kernels on one feature's weight block (csrc/fr_vec.pxd). */
#ifndef FR_VEC_H
#define FR_VEC_H

#include <stddef.h>

/* dst[c] += a * src[c] for c < k.  The blocks of the weights, of a thread's
 * gradient buffer and of a row's scores never overlap; ``restrict`` says so,
 * letting the compiler vectorize the loop without run-time alias checks. */
static inline void fr_axpy_k(double a, const double *restrict src, double *restrict dst,
                             ptrdiff_t k)
{
#if defined(_OPENMP)
#pragma omp simd
#endif
    for (ptrdiff_t c = 0; c < k; c++)
        dst[c] += a * src[c];
}

/* dst[c] += a0 * src0[c] + a1 * src1[c] for c < k: two stored entries of a row in
 * one pass over its scores, which halves the loads and stores of dst (the
 * chain that bounds a row's gather when the weights are in cache). */
static inline void fr_axpy2_k(double a0, const double *restrict src0, double a1,
                              const double *restrict src1, double *restrict dst, ptrdiff_t k)
{
#if defined(_OPENMP)
#pragma omp simd
#endif
    for (ptrdiff_t c = 0; c < k; c++)
        dst[c] += a0 * src0[c] + a1 * src1[c];
}

/* Prefetch every cache line of the k-double block at p: the blocks a row
 * touches are scattered over w, which the hardware prefetcher cannot follow. */
static inline void fr_prefetch_block(const double *p, ptrdiff_t k)
{
#if defined(__GNUC__) || defined(__clang__)
    for (ptrdiff_t c = 0; c < k; c += 8)
        __builtin_prefetch(p + c);
    __builtin_prefetch(p + k - 1);
#else
    (void)p;
    (void)k;
#endif
}

/* Prefetch the cache lines of the first ``bytes`` bytes at p (a row's stored
 * entries when the rows are visited in random order). */
static inline void fr_prefetch_bytes(const void *p, ptrdiff_t bytes)
{
#if defined(__GNUC__) || defined(__clang__)
    for (ptrdiff_t b = 0; b < bytes; b += 64)
        __builtin_prefetch((const char *)p + b);
#else
    (void)p;
    (void)bytes;
#endif
}

#endif
