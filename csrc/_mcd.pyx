# cython: language_level=3
"""Column kernels of the multinomial proximal Newton solver (fastrisk/solvers/mcd.py).

X reaches them as its column view (fastrisk/columns.py: values, row indices and int64
column pointers of [X, intercept column]; for dense X the column-major values, whose
column j holds every row in order: the row of entry p is p - indptr[j], the shared
``indices`` unread).  A coordinate is a pair (j, c): feature j, class c; W is kept
feature-major, ``W[j, c]``.  ``column_products`` and ``add_columns`` take per-row
quantities as (n, k) C-ordered arrays, one row per example; ``hessian_diagonal`` and
``model_pass`` take them class-major, (k, n), since a coordinate walks one class
down a column: its reads and writes are then contiguous over a dense column's rows.
"""

import numpy as np
from cython cimport floating
from cython.parallel cimport prange
from libc.math cimport fabs
from libc.stdint cimport int64_t

from fr_rows cimport index_t


def column_products(const floating[::1] values, const index_t[::1] indices,
                    const int64_t[::1] indptr, bint dense, const double[:, ::1] R,
                    double[:, ::1] out, int n_threads=1):
    """out[j, :] = sum_i x_ij R[i, :] for every column j (X^T R), columns split over
    ``n_threads`` threads (each column summed in row order: the bits do not depend on
    the thread count)."""
    cdef Py_ssize_t n_cols = indptr.shape[0] - 1, k = R.shape[1], j, p, c, i
    cdef double x
    with nogil:
        for j in prange(n_cols, num_threads=max(1, n_threads), schedule="static"):
            for c in range(k):
                out[j, c] = 0.0
            for p in range(indptr[j], indptr[j + 1]):
                i = p - indptr[j] if dense else indices[p]
                x = values[p]
                for c in range(k):
                    out[j, c] += x * R[i, c]


def add_columns(const floating[::1] values, const index_t[::1] indices,
                const int64_t[::1] indptr, bint dense, const int64_t[::1] cols,
                const int64_t[::1] classes, const double[::1] coef, double[:, ::1] S):
    """S[:, c_t] += coef[t] x_{j_t} for the coordinates (j_t, c_t) = (cols[t], classes[t])."""
    cdef Py_ssize_t t, p, j, c
    cdef double a
    with nogil:
        for t in range(cols.shape[0]):
            j, c, a = cols[t], classes[t], coef[t]
            if a != 0.0:
                for p in range(indptr[j], indptr[j + 1]):
                    S[p - indptr[j] if dense else indices[p], c] += a * values[p]


def hessian_diagonal(const floating[::1] values, const index_t[::1] indices,
                     const int64_t[::1] indptr, bint dense, const int64_t[::1] cols,
                     const int64_t[::1] classes, const double[:, ::1] QT, double[::1] out):
    """out[t] = sum_i x_ij^2 QT[c, i] for the coordinates (j, c) = (cols[t], classes[t])
    (QT class-major, (k, n))."""
    cdef Py_ssize_t t, p, j, c, lo
    cdef double s, x
    with nogil:
        for t in range(cols.shape[0]):
            j, c, lo = cols[t], classes[t], indptr[cols[t]]
            s = 0.0
            for p in range(lo, indptr[j + 1]):
                x = values[p]
                s += x * x * QT[c, p - lo if dense else indices[p]]
            out[t] = s


cdef inline double soft(double x, double a) noexcept nogil:
    return x - a if x > a else (x + a if x < -a else 0.0)


cdef inline double dense_slope(const floating* x, const double* cp, const double* z,
                               const double* pz, Py_ssize_t n) noexcept nogil:
    """sum_i x_i cp_i (z_i - pz_i) over a dense column, in four interleaved partial sums
    added in a fixed order (one running sum would chain every step on the previous
    one's latency)."""
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t i = 0
    while i + 4 <= n:
        s0 += x[i] * cp[i] * (z[i] - pz[i])
        s1 += x[i + 1] * cp[i + 1] * (z[i + 1] - pz[i + 1])
        s2 += x[i + 2] * cp[i + 2] * (z[i + 2] - pz[i + 2])
        s3 += x[i + 3] * cp[i + 3] * (z[i + 3] - pz[i + 3])
        i += 4
    while i < n:
        s0 += x[i] * cp[i] * (z[i] - pz[i])
        i += 1
    return (s0 + s1) + (s2 + s3)


def model_pass(const floating[::1] values, const index_t[::1] indices,
               const int64_t[::1] indptr, bint dense, const int64_t[::1] cols,
               const int64_t[::1] classes, const double[::1] G, const double[::1] H,
               const double[::1] w, double[::1] d, const double[:, ::1] PT,
               const double[:, ::1] CPT, double[:, ::1] ZT, double[::1] pz, double lam1,
               double lam2):
    """One pass of cyclic coordinate descent on the proximal Newton model over the
    working set.

    The model of J(W + D) - J(W) on the coordinates t = (j, c) of the set is
    ``G.d + 0.5 d.H_loss d + lam1 ||w + d||_1 + (lam2 / 2) ||w + d||^2`` with the
    multinomial Hessian H_loss = (1/m) sum_i c_i x_i x_i^T (x) (diag(p_i) - p_i p_i^T):
    along coordinate (j, c) its slope is
    ``G_t + sum_i x_ij CP[i, c] (Z[i, c] - pz[i]) + lam2 (w_t + d_t)``, where
    Z = X D^T (the model's score changes), pz[i] = sum_c P[i, c] Z[i, c] and
    CP = c_i P / m; H is the model's diagonal (with lam2).  P, CP and Z arrive
    class-major (PT, CPT, ZT: (k, n)), so that a coordinate's reads and writes are
    contiguous over the rows of a dense column.  Each step is the exact minimizer along
    the coordinate (a soft threshold), after which Z and pz follow.  Returns the sum of
    the coordinates' violations (the minimum-norm subgradient), each taken before its
    step."""
    cdef Py_ssize_t n_set = cols.shape[0], t, p, j, c, i, lo, hi
    cdef double slope, u, v, delta, viol, total = 0.0, x
    with nogil:
        for t in range(n_set):
            j, c = cols[t], classes[t]
            lo, hi = indptr[j], indptr[j + 1]
            if dense:
                slope = G[t] + dense_slope(&values[lo], &CPT[c, 0], &ZT[c, 0], &pz[0], hi - lo)
            else:
                slope = G[t]
                for p in range(lo, hi):
                    i = indices[p]
                    slope += values[p] * CPT[c, i] * (ZT[c, i] - pz[i])
            u = w[t] + d[t]
            slope += lam2 * u
            # the violation: the distance of -slope to lam1 sign(u) (or to [-lam1, lam1])
            if u > 0.0:
                viol = fabs(slope + lam1)
            elif u < 0.0:
                viol = fabs(slope - lam1)
            else:
                viol = fabs(slope) - lam1 if fabs(slope) > lam1 else 0.0
            total += viol
            v = soft(u - slope / H[t], lam1 / H[t])
            delta = v - u
            if delta != 0.0:
                d[t] += delta
                for p in range(lo, hi):
                    i = p - lo if dense else indices[p]
                    x = delta * values[p]
                    ZT[c, i] += x
                    pz[i] += PT[c, i] * x
    return total


def scan(const double[:, ::1] G, const double[:, ::1] W, double lam1, double lam2):
    """One pass over the coordinates at W with the loss gradient G (both (n_weights, k)):
    (the sum of the optimality violations of J's coordinates, ||W||_1, ||W||^2,
    max |G|, ||S_lam1(G)||^2 (the certificate's two readings of G), the working set's
    features, its classes).  The violation of (j, c) is the distance from 0
    of the minimum-norm subgradient of J along it; the working set holds the nonzero
    coordinates and the zero ones whose |G| exceeds lam1 (newGLMNET's set without its
    shrinking margin)."""
    cdef Py_ssize_t n_w = G.shape[0], k = G.shape[1], j, c, n_set = 0, t = 0
    cdef double viol = 0.0, l1 = 0.0, l2 = 0.0, top = 0.0, shrunk = 0.0, g, w, a
    with nogil:
        for j in range(n_w):
            for c in range(k):
                w = W[j, c]
                g = G[j, c] + lam2 * w
                if w > 0.0:
                    viol += fabs(g + lam1)
                elif w < 0.0:
                    viol += fabs(g - lam1)
                elif fabs(g) > lam1:
                    viol += fabs(g) - lam1
                if w != 0.0 or fabs(g) > lam1:
                    n_set += 1
                l1 += fabs(w)
                l2 += w * w
                a = fabs(G[j, c])
                top = a if a > top else top
                if a > lam1:
                    shrunk += (a - lam1) * (a - lam1)
    cols = np.empty(n_set, dtype=np.int64)
    classes = np.empty(n_set, dtype=np.int64)
    cdef int64_t[::1] cv = cols, kv = classes
    with nogil:
        for j in range(n_w):
            for c in range(k):
                w = W[j, c]
                if w != 0.0 or fabs(G[j, c] + lam2 * w) > lam1:
                    cv[t] = j
                    kv[t] = c
                    t += 1
    return viol, l1, l2, top, shrunk, cols, classes
