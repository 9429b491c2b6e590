# Row view over CSR or dense rows (DESIGN.md, kernel conventions).
#
# A data set reaches the kernels as (data, indices, indptr, dense): for CSR
# these are scipy's arrays; for a C-contiguous dense matrix, data is the
# flattened matrix, indptr[i] = i * d and indices = arange(d) is shared by
# every row.  One loop therefore serves both layouts.  C has no generics, so
# the dtype-generic row operations are Cython `cdef inline` functions over
# fused types, which Cython emits as static inline C.

from libc.stdint cimport int32_t, int64_t
from cython cimport floating

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
    """<x, w> over the stored entries of x."""
    cdef double s = 0.0
    cdef Py_ssize_t k
    for k in range(nnz):
        s += val[k] * w[idx[k]]
    return s


cdef inline void row_axpy(double a, const floating* val, const index_t* idx, Py_ssize_t nnz,
                          double* w) noexcept nogil:
    """w += a * x."""
    cdef Py_ssize_t k
    for k in range(nnz):
        w[idx[k]] += a * val[k]


cdef inline double row_sqnorm(const floating* val, Py_ssize_t nnz) noexcept nogil:
    """||x||^2."""
    cdef double s = 0.0
    cdef Py_ssize_t k
    for k in range(nnz):
        s += <double>val[k] * val[k]
    return s
