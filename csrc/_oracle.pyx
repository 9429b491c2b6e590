# cython: language_level=3
"""Batched risk oracle (MATH.md section 3, BMRM section 4).

One call computes, over the rows [start, stop) of one partition,
``f = X w``, ``sum_i c_i l(f_i, y_i)``, ``g_i = c_i l'(f_i, y_i)`` and
``X^T g``, without the GIL.  Rows are split into ``n_threads`` contiguous
blocks of roughly equal nnz; block t scatters into its own buffer and the
buffers are added in block order, so a fixed thread count gives identical
bits on every run.
"""

import numpy as np
from cython cimport floating
from cython.parallel cimport prange
from libc.string cimport memset

from fr_rows cimport index_t, row_view, row_dot, row_axpy
from fr_loss cimport *

LOSS_IDS = {
    "hinge": FR_HINGE,
    "squared_hinge": FR_SQUARED_HINGE,
    "zero_margin": FR_ZERO_MARGIN,
    "squared_zero_margin": FR_SQUARED_ZERO_MARGIN,
    "logistic": FR_LOGISTIC,
    "exponential": FR_EXPONENTIAL,
    "novelty": FR_NOVELTY,
    "squared": FR_SQUARED,
    "absolute": FR_ABSOLUTE,
    "quantile": FR_QUANTILE,
    "epsilon_insensitive": FR_EPSILON_INSENSITIVE,
    "huber": FR_HUBER,
    "poisson": FR_POISSON,
    "smoothed_hinge": FR_SMOOTHED_HINGE,
}
STATUS_OK = FR_OK
STATUS_OVERFLOW = FR_ERR_OVERFLOW


cdef void block_bounds(const index_t* indptr, Py_ssize_t start, Py_ssize_t stop,
                       bint dense, int n_blocks, Py_ssize_t* bounds) noexcept nogil:
    """bounds[t]..bounds[t+1] are the rows of block t, balanced by nnz."""
    cdef Py_ssize_t r = start, t
    cdef double total = <double>(indptr[stop] - indptr[start])
    bounds[0] = start
    for t in range(1, n_blocks):
        while r < stop and indptr[r] - indptr[start] < total * t / n_blocks:
            r += 1
        bounds[t] = r
    bounds[n_blocks] = stop


def risk_gradient(const floating[::1] data, const index_t[::1] indices,
                  const index_t[::1] indptr, bint dense, double bias,
                  const double[::1] w, int loss, double loss_param,
                  const double[::1] y, const double[::1] sample_weight,
                  Py_ssize_t start, Py_ssize_t stop,
                  double[::1] f, double[::1] g, double[::1] grad,
                  double[:, ::1] workspace, int n_threads):
    """Partial risk of rows [start, stop); returns (sum_i c_i l_i, status).

    ``w`` has length d, or d + 1 when ``bias != 0`` (the constant feature of
    value ``bias`` is the last coordinate).  ``f`` and ``g`` (length
    stop - start) receive the scores and ``c_i l'(f_i, y_i)``; ``grad``
    (len(w)) is overwritten with ``X^T g``.  ``sample_weight`` is empty for
    unit weights.  ``workspace`` has shape (n_threads - 1, len(w)), must be
    zero on entry and is left zero on return.
    """
    cdef Py_ssize_t n = stop - start, D = grad.shape[0], d = D - (bias != 0)
    cdef Py_ssize_t i, j, t, nnz
    cdef const floating* val
    cdef const index_t* idx
    cdef double* buf
    cdef double value = 0.0, s, b = bias
    cdef int status
    cdef const double* c = &sample_weight[0] if sample_weight.shape[0] > 0 else NULL
    cdef Py_ssize_t[:] bounds = np.empty(n_threads + 1, dtype=np.intp)
    if n_threads < 1 or workspace.shape[0] < n_threads - 1 or (n_threads > 1 and workspace.shape[1] != D):
        raise ValueError("workspace must have shape (n_threads - 1, len(w))")
    if w.shape[0] != D or f.shape[0] < n or g.shape[0] < n:
        raise ValueError("w, f, g have inconsistent lengths")
    if n <= 0:
        grad[:] = 0.0
        return 0.0, FR_OK
    with nogil:
        block_bounds(&indptr[0], start, stop, dense, n_threads, &bounds[0])
        for i in prange(start, stop, num_threads=n_threads, schedule="static"):
            nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
            s = row_dot(val, idx, nnz, &w[0])
            if b != 0.0:
                s = s + b * w[d]
            f[i - start] = s
        status = fr_loss_batch(loss, loss_param, n, &f[0], &y[start],
                               c + start if c != NULL else NULL, &g[0], &value)
        for t in prange(n_threads, num_threads=n_threads, schedule="static", chunksize=1):
            buf = &grad[0] if t == 0 else &workspace[t - 1, 0]
            if t == 0:
                memset(buf, 0, D * sizeof(double))
            for i in range(bounds[t], bounds[t + 1]):
                nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                row_axpy(g[i - start], val, idx, nnz, buf)
                if b != 0.0:
                    buf[d] += b * g[i - start]
        if n_threads > 1:
            for j in prange(D, num_threads=n_threads, schedule="static"):
                for t in range(n_threads - 1):
                    grad[j] += workspace[t, j]
                    workspace[t, j] = 0.0
    return value, status


def loss_values(int loss, double loss_param, const double[::1] f, const double[::1] y):
    """Element-wise (l(f_i, y_i), l'(f_i, y_i)); non-finite values stay inf."""
    cdef Py_ssize_t i, n = f.shape[0]
    out = np.empty(n)
    deriv = np.empty(n)
    cdef double[::1] v = out, dv = deriv
    if y.shape[0] != n:
        raise ValueError("f and y must have the same length")
    with nogil:
        for i in range(n):
            fr_loss_batch(loss, loss_param, 1, &f[i], &y[i], NULL, &dv[i], &v[i])
    return out, deriv


def loss_conjugates(int loss, double loss_param, const double[::1] a, const double[::1] y):
    """Element-wise l*(a_i) for the loss at y_i (+inf outside the domain)."""
    cdef Py_ssize_t n = a.shape[0]
    out = np.empty(n)
    cdef double[::1] v = out
    if y.shape[0] != n:
        raise ValueError("a and y must have the same length")
    if n:
        fr_loss_conj_batch(loss, loss_param, n, &a[0], &y[0], &v[0])
    return out
