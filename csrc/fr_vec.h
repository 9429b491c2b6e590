/* k-wide kernels on one feature's weight block (csrc/fr_vec.pxd). */
#ifndef FR_VEC_H
#define FR_VEC_H

#include <stddef.h>
#include <stdint.h>

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

/* entries ahead whose weight block is prefetched (the blocks are scattered over w) */
#define FR_VEC_PREFETCH 40

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

/* Register-blocked row kernels for k = 4 nv classes, nv <= FR_VEC_MAX_NV.
 *
 * A row's k scores stay in nv four-wide registers for the whole row (two sets,
 * even and odd entries, so that consecutive FMAs do not wait on each other)
 * instead of being loaded and stored once per stored entry; the scatter keeps
 * the row gradient in registers the same way.  Each kernel is compiled for
 * AVX-512, AVX2+FMA and the baseline ISA (``target_clones``: the loader picks
 * the widest one the CPU runs, so one portable build uses the wide units).
 * The order of the additions is fixed by the row, never by the ISA, except that
 * the FMA clones round each multiply-add once. */
#if defined(__GNUC__) || defined(__clang__)
#define FR_VEC_MAX_NV 8

typedef double fr_v4 __attribute__((vector_size(32), aligned(8), may_alias));

#if defined(__GNUC__) && __GNUC__ >= 12 && !defined(__clang__) && defined(__x86_64__) \
    && defined(__linux__)
#define FR_VEC_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FR_VEC_CLONES
#endif

#define FR_VEC_ROW_KERNELS(SUF, VT, IT)                                                         \
static inline __attribute__((always_inline)) void                                             \
fr_vec_scores_nv_##SUF(const VT *val, const IT *idx, ptrdiff_t nnz, ptrdiff_t ahead,          \
                       const double *wt, ptrdiff_t q, double *s, const int nv)               \
{                                                                                             \
    fr_v4 even[FR_VEC_MAX_NV], odd[FR_VEC_MAX_NV];                                            \
    ptrdiff_t p = 0;                                                                          \
    for (int v = 0; v < nv; v++)                                                              \
        even[v] = odd[v] = (fr_v4){0.0, 0.0, 0.0, 0.0};                                       \
    for (; p + 1 < nnz; p += 2) {                                                             \
        if (p + FR_VEC_PREFETCH < ahead)                                                      \
            fr_prefetch_block(wt + (ptrdiff_t)idx[p + FR_VEC_PREFETCH] * q, q);               \
        if (p + 1 + FR_VEC_PREFETCH < ahead)                                                  \
            fr_prefetch_block(wt + (ptrdiff_t)idx[p + 1 + FR_VEC_PREFETCH] * q, q);           \
        const fr_v4 *b0 = (const fr_v4 *)(wt + (ptrdiff_t)idx[p] * q);                        \
        const fr_v4 *b1 = (const fr_v4 *)(wt + (ptrdiff_t)idx[p + 1] * q);                    \
        const double x0 = (double)val[p], x1 = (double)val[p + 1];                            \
        for (int v = 0; v < nv; v++) {                                                        \
            even[v] += x0 * b0[v];                                                            \
            odd[v] += x1 * b1[v];                                                             \
        }                                                                                     \
    }                                                                                         \
    if (p < nnz) {                                                                            \
        const fr_v4 *b0 = (const fr_v4 *)(wt + (ptrdiff_t)idx[p] * q);                        \
        const double x0 = (double)val[p];                                                     \
        for (int v = 0; v < nv; v++)                                                          \
            even[v] += x0 * b0[v];                                                            \
    }                                                                                         \
    for (int v = 0; v < nv; v++)                                                              \
        ((fr_v4 *)s)[v] = even[v] + odd[v];                                                   \
}                                                                                             \
                                                                                              \
static inline __attribute__((always_inline)) void                                             \
fr_vec_scatter_nv_##SUF(const VT *val, const IT *idx, ptrdiff_t nnz, const double *g,         \
                        ptrdiff_t q, double *gt, const int nv)                                \
{                                                                                             \
    fr_v4 r[FR_VEC_MAX_NV];                                                                   \
    for (int v = 0; v < nv; v++)                                                              \
        r[v] = ((const fr_v4 *)g)[v];                                                         \
    for (ptrdiff_t p = 0; p < nnz; p++) {                                                     \
        fr_v4 *blk = (fr_v4 *)(gt + (ptrdiff_t)idx[p] * q);                                   \
        const double x = (double)val[p];                                                      \
        for (int v = 0; v < nv; v++)                                                          \
            blk[v] += x * r[v];                                                               \
    }                                                                                         \
}                                                                                             \
                                                                                              \
/* s[c] = sum_p val[p] wt[idx[p] q + c], c < 4 nv (row_scores in fr_vec.pxd). */              \
FR_VEC_CLONES static void                                                                     \
fr_vec_scores_##SUF(const VT *val, const IT *idx, ptrdiff_t nnz, ptrdiff_t ahead,             \
                    const double *wt, ptrdiff_t q, double *s, int nv)                         \
{                                                                                             \
    switch (nv) {                                                                             \
    case 1: fr_vec_scores_nv_##SUF(val, idx, nnz, ahead, wt, q, s, 1); break;                 \
    case 2: fr_vec_scores_nv_##SUF(val, idx, nnz, ahead, wt, q, s, 2); break;                 \
    case 3: fr_vec_scores_nv_##SUF(val, idx, nnz, ahead, wt, q, s, 3); break;                 \
    case 4: fr_vec_scores_nv_##SUF(val, idx, nnz, ahead, wt, q, s, 4); break;                 \
    case 5: fr_vec_scores_nv_##SUF(val, idx, nnz, ahead, wt, q, s, 5); break;                 \
    case 6: fr_vec_scores_nv_##SUF(val, idx, nnz, ahead, wt, q, s, 6); break;                 \
    case 7: fr_vec_scores_nv_##SUF(val, idx, nnz, ahead, wt, q, s, 7); break;                 \
    default: fr_vec_scores_nv_##SUF(val, idx, nnz, ahead, wt, q, s, 8); break;                \
    }                                                                                         \
}                                                                                             \
                                                                                              \
/* gt[idx[p] q + c] += val[p] g[c], c < 4 nv (row_scatter in fr_vec.pxd). */                  \
FR_VEC_CLONES static void                                                                     \
fr_vec_scatter_##SUF(const VT *val, const IT *idx, ptrdiff_t nnz, const double *g,            \
                     ptrdiff_t q, double *gt, int nv)                                         \
{                                                                                             \
    switch (nv) {                                                                             \
    case 1: fr_vec_scatter_nv_##SUF(val, idx, nnz, g, q, gt, 1); break;                       \
    case 2: fr_vec_scatter_nv_##SUF(val, idx, nnz, g, q, gt, 2); break;                       \
    case 3: fr_vec_scatter_nv_##SUF(val, idx, nnz, g, q, gt, 3); break;                       \
    case 4: fr_vec_scatter_nv_##SUF(val, idx, nnz, g, q, gt, 4); break;                       \
    case 5: fr_vec_scatter_nv_##SUF(val, idx, nnz, g, q, gt, 5); break;                       \
    case 6: fr_vec_scatter_nv_##SUF(val, idx, nnz, g, q, gt, 6); break;                       \
    case 7: fr_vec_scatter_nv_##SUF(val, idx, nnz, g, q, gt, 7); break;                       \
    default: fr_vec_scatter_nv_##SUF(val, idx, nnz, g, q, gt, 8); break;                      \
    }                                                                                         \
}

FR_VEC_ROW_KERNELS(d32, double, int32_t)
FR_VEC_ROW_KERNELS(d64, double, int64_t)
FR_VEC_ROW_KERNELS(f32, float, int32_t)
FR_VEC_ROW_KERNELS(f64, float, int64_t)

#else
/* No vector extensions: every k takes the k-wide loops of fr_vec.pxd. */
#define FR_VEC_MAX_NV 0
#define fr_vec_scores_d32(...) ((void)0)
#define fr_vec_scores_d64(...) ((void)0)
#define fr_vec_scores_f32(...) ((void)0)
#define fr_vec_scores_f64(...) ((void)0)
#define fr_vec_scatter_d32(...) ((void)0)
#define fr_vec_scatter_d64(...) ((void)0)
#define fr_vec_scatter_f32(...) ((void)0)
#define fr_vec_scatter_f64(...) ((void)0)
#endif

#endif
