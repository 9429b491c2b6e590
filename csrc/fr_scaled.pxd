# Cython view of fr_scaled.h plus the row operations on the scaled vector.
#
# The row operations are generic over the row dtypes (float/double values,
# int32/int64 indices), so like fr_rows.pxd they are Cython `cdef inline`
# functions over fused types.  `bias` is the value of the virtual constant
# feature (0 = none); its weight is v[d - 1].

from fr_rows cimport index_t
from cython cimport floating

cdef extern from "fr_scaled.h" nogil:
    double FR_SCALE_MIN
    double FR_SCALE_MAX
    void FR_PREFETCH(const double* ptr)
    ctypedef struct fr_scaled:
        double* v
        double* u
        Py_ssize_t d
        double scale
        double sqnorm
        double S
        long long n_avg
        int averaging
    double fr_scaled_sqnorm(const fr_scaled* w)
    void fr_scaled_fold(fr_scaled* w)
    void fr_scaled_shrink(fr_scaled* w, double a)
    double fr_scaled_project(fr_scaled* w, double radius)
    void fr_scaled_accumulate(fr_scaled* w)
    void fr_scaled_average(const fr_scaled* w, double* out)


cdef inline double scaled_dot(const fr_scaled* w, const floating* val, const index_t* idx,
                              Py_ssize_t nnz, double bias) noexcept nogil:
    """<w, x>, x = (row, bias)."""
    cdef double s = 0.0
    cdef Py_ssize_t k
    for k in range(nnz):
        s += val[k] * w.v[idx[k]]
    if bias != 0.0:
        s += bias * w.v[w.d - 1]
    return w.scale * s


cdef inline void scaled_add(fr_scaled* w, double c, const floating* val, const index_t* idx,
                            Py_ssize_t nnz, double bias) noexcept nogil:
    """w += c x in O(nnz(x)): v += (c / scale) x, ||v||^2 and the average kept exact."""
    cdef double a = c / w.scale, dot = 0.0, xx = 0.0, old, x
    cdef double S = w.S if (w.averaging and w.u != NULL) else 0.0
    cdef Py_ssize_t k, j
    for k in range(nnz):
        j = idx[k]
        x = val[k]
        old = w.v[j]
        w.v[j] = old + a * x
        dot += old * x
        xx += x * x
        if S != 0.0:
            w.u[j] += S * (a * x)
    if bias != 0.0:
        j = w.d - 1
        old = w.v[j]
        w.v[j] = old + a * bias
        dot += old * bias
        xx += bias * bias
        if S != 0.0:
            w.u[j] += S * (a * bias)
    w.sqnorm += 2.0 * a * dot + a * a * xx
    if w.sqnorm < 0.0:
        w.sqnorm = 0.0



cdef inline void prefetch_row(const double* v, const index_t* idx, Py_ssize_t nnz) noexcept nogil:
    """Ask the cache for v[idx[k]] ahead of the row's dot product."""
    cdef Py_ssize_t k
    for k in range(nnz):
        FR_PREFETCH(v + idx[k])
