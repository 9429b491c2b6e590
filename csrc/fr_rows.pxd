# Row view over CSR or dense rows: the one accessor every kernel reads X through.
#
# A data set reaches the kernels as (data, indices, indptr, dense): for CSR
# these are scipy's arrays; for a C-contiguous dense matrix, data is the
# flattened matrix, indptr[i] = i * d and indices = arange(d) is shared by
# every row.  One loop therefore serves both layouts.  C has no generics, so
# the dtype-generic row operations are Cython `cdef inline` functions over
# fused types, which Cython emits as static inline C.

from libc.stdint cimport int32_t, int64_t
from cython cimport floating

# Software prefetch of the weight an access FR_PREFETCH_DISTANCE entries ahead
# will touch: w and the gradient buffer are too large for the core's caches on
# text data (1.5M features) and their addresses come from idx, which the
# hardware prefetcher cannot predict.  The distance must cover a memory
# latency's worth of row entries; within a factor of two either way it matters
# little.
cdef extern from *:
    """
    #define FR_PREFETCH_DISTANCE 40
    #if defined(__GNUC__) || defined(__clang__)
    #define fr_prefetch(p) __builtin_prefetch(p)
    #else
    #define fr_prefetch(p) ((void)(p))
    #endif
    """
    enum: FR_PREFETCH_DISTANCE
    void fr_prefetch(const void* p) noexcept nogil

ctypedef fused index_t:
    int32_t
    int64_t


cdef inline Py_ssize_t row_view(const floating* data, const index_t* indices,
                                const index_t* indptr, bint dense, Py_ssize_t i,
                                const floating** val, const index_t** idx) noexcept nogil:
    """Point val/idx at row i; return its number of stored entries."""
    cdef Py_ssize_t start = indptr[i]
    val[0] = data + start
    idx[0] = indices if dense else indices + start
    return indptr[i + 1] - start


cdef inline double row_dot(const floating* val, const index_t* idx, Py_ssize_t nnz,
                           const double* w) noexcept nogil:
    """<x, w> over the stored entries of x, for a solver whose next step waits on it
    (SDCA's row score).  The products go to four partial sums (entry k to sum k mod 4),
    added as (s0 + s1) + (s2 + s3) and then the last nnz mod 4 entries in order: one
    running sum would chain every multiply-add on the latency of the previous one, and
    nothing else can run meanwhile.  The order depends on nnz alone: the same bits on
    every call.  A pass over independent rows overlaps one row's sum with the next
    row's and uses ``row_dot_ahead``.  Prefetches as ``row_dot_ahead`` within the row."""
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s
    cdef Py_ssize_t k = 0, m = nnz - FR_PREFETCH_DISTANCE
    while k + 4 <= nnz:
        if k + 4 <= m:
            fr_prefetch(&w[idx[k + FR_PREFETCH_DISTANCE]])
            fr_prefetch(&w[idx[k + 1 + FR_PREFETCH_DISTANCE]])
            fr_prefetch(&w[idx[k + 2 + FR_PREFETCH_DISTANCE]])
            fr_prefetch(&w[idx[k + 3 + FR_PREFETCH_DISTANCE]])
        s0 += val[k] * w[idx[k]]
        s1 += val[k + 1] * w[idx[k + 1]]
        s2 += val[k + 2] * w[idx[k + 2]]
        s3 += val[k + 3] * w[idx[k + 3]]
        k += 4
    s = (s0 + s1) + (s2 + s3)
    while k < nnz:
        s += val[k] * w[idx[k]]
        k += 1
    return s


cdef inline double row_dot_ahead(const floating* val, const index_t* idx, Py_ssize_t nnz,
                                 Py_ssize_t ahead, const double* w,
                                 Py_ssize_t stride) noexcept nogil:
    """<x, w> with w_j at ``w[stride * j]``, prefetching the weights of the
    entries up to ``ahead`` (>= nnz) after the row start.

    In CSR the next rows' indices follow this row's in memory, so a pass over
    consecutive rows can prefetch across row ends (``ahead`` = entries left
    in the pass) instead of stalling on the first entries of every row.
    """
    cdef double s = 0.0
    cdef Py_ssize_t k, m = min(nnz, ahead - FR_PREFETCH_DISTANCE)
    for k in range(m):
        fr_prefetch(&w[stride * idx[k + FR_PREFETCH_DISTANCE]])
        s += val[k] * w[stride * idx[k]]
    for k in range(max(m, 0), nnz):
        s += val[k] * w[stride * idx[k]]
    return s


cdef inline void row_axpy(double a, const floating* val, const index_t* idx, Py_ssize_t nnz,
                          double* w) noexcept nogil:
    """w += a * x, prefetching like row_dot_ahead within the row."""
    cdef Py_ssize_t k, m = nnz - FR_PREFETCH_DISTANCE
    for k in range(m):
        fr_prefetch(&w[idx[k + FR_PREFETCH_DISTANCE]])
        w[idx[k]] += a * val[k]
    for k in range(max(m, 0), nnz):
        w[idx[k]] += a * val[k]


cdef inline double row_sqnorm(const floating* val, Py_ssize_t nnz) noexcept nogil:
    """||x||^2."""
    cdef double s = 0.0
    cdef Py_ssize_t k
    for k in range(nnz):
        s += <double>val[k] * val[k]
    return s


cdef inline void block_bounds(const index_t* indptr, Py_ssize_t start, Py_ssize_t stop,
                              int n_blocks, Py_ssize_t* bounds) noexcept nogil:
    """bounds[t]..bounds[t+1] are the rows of block t, balanced by nnz."""
    cdef Py_ssize_t r = start, t
    cdef double total = <double>(indptr[stop] - indptr[start])
    bounds[0] = start
    for t in range(1, n_blocks):
        while r < stop and indptr[r] - indptr[start] < total * t / n_blocks:
            r += 1
        bounds[t] = r
    bounds[n_blocks] = stop


cdef inline void row_axpy_pairs(double a, const floating* val, const index_t* idx,
                                Py_ssize_t nnz, double* wg) noexcept nogil:
    """wg[2j + 1] += a * x_j: the lines are in cache from the row's gather."""
    cdef Py_ssize_t k
    for k in range(nnz):
        wg[2 * idx[k] + 1] += a * val[k]


cdef inline bint chunks_ok(const Py_ssize_t* bounds, Py_ssize_t n_chunks,
                           Py_ssize_t n) noexcept nogil:
    """bounds[0..n_chunks] runs from 0 to n without decreasing (n_chunks >= 1)."""
    cdef Py_ssize_t t
    if n_chunks < 1 or bounds[0] != 0 or bounds[n_chunks] != n:
        return False
    for t in range(n_chunks):
        if bounds[t] > bounds[t + 1]:
            return False
    return True
