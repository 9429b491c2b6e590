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

from fr_rows cimport index_t, row_view, row_dot_ahead, row_axpy_ahead
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


cdef int risk_block(const floating* data, const index_t* indices, const index_t* indptr,
                    bint dense, double b, Py_ssize_t d, const double* w, int loss,
                    double loss_param, const double* y, const double* c, Py_ssize_t start,
                    Py_ssize_t lo, Py_ssize_t hi, double* f, double* g, double* buf,
                    double* value) noexcept nogil:
    """Rows [lo, hi): f and g of those rows, buf += X^T g, value = sum c_i l_i; returns a status.

    One gather pass (f = X w), the loss over the block (switch once), one
    scatter pass.  Interleaving the two passes chunk by chunk (to reuse the
    cached rows) was measured slower on IMDB (thread CPU time 98 vs 72 ms
    with chunks of 4096 or 32768 nnz): w and buf then compete for the
    last-level cache, and the random accesses into them, not the streaming
    of X, dominate the time.  A column-split scatter (thread t writes
    grad[b_t:b_{t+1}] from every row, no private buffers) measured the same
    CPU time on IMDB and +40% on a9a (short rows), so the buffers stay.
    """
    cdef Py_ssize_t i, nnz, end = indptr[hi]
    cdef const floating* val
    cdef const index_t* idx
    cdef double s
    for i in range(lo, hi):
        nnz = row_view(data, indices, indptr, dense, i, &val, &idx)
        s = row_dot_ahead(val, idx, nnz, nnz if dense else end - indptr[i], w)
        if b != 0.0:
            s += b * w[d]
        f[i - start] = s
    cdef int status = fr_loss_batch(loss, loss_param, hi - lo, &f[lo - start], &y[lo],
                                    c + lo if c != NULL else NULL, &g[lo - start], value)
    for i in range(lo, hi):
        s = g[i - start]
        if s == 0.0:  # e.g. hinge beyond the margin: 0 * x_i changes no bit of buf
            continue
        nnz = row_view(data, indices, indptr, dense, i, &val, &idx)
        row_axpy_ahead(s, val, idx, nnz, nnz if dense else end - indptr[i], buf)
        if b != 0.0:
            buf[d] += b * s
    return status


def risk_gradient(const floating[::1] data, const index_t[::1] indices,
                  const index_t[::1] indptr, bint dense, double bias,
                  const double[::1] w, int loss, double loss_param,
                  const double[::1] y, const double[::1] sample_weight,
                  Py_ssize_t start, Py_ssize_t stop,
                  double[::1] f, double[::1] g, double[::1] grad,
                  double[:, ::1] workspace, int n_threads):
    """Partial risk of rows [start, stop); returns (sum_i c_i l_i, status).

    ``w`` has length d, or d + 1 when ``bias != 0`` (the constant feature of
    value ``bias`` is the last coordinate).  ``f`` and ``g`` (length >=
    stop - start) receive the scores and ``c_i l'(f_i, y_i)``; ``grad``
    (len(w)) is overwritten with ``X^T g``.  ``sample_weight`` is empty for
    unit weights.  ``workspace`` (shape (n_threads - 1, len(w)), any content)
    holds the buffers of threads 1.. .

    Thread t owns the rows of block t (nnz-balanced, contiguous), zeroes its
    own buffer (thread 0 uses ``grad``) and runs gather, loss and scatter
    over its block; then the buffers are added to ``grad`` in thread order and the
    block values in block order.
    """
    cdef Py_ssize_t n = stop - start, D = grad.shape[0], d = D - (bias != 0)
    cdef Py_ssize_t j, t
    cdef double* buf
    cdef double value = 0.0
    cdef int status = FR_OK
    cdef const double* c = &sample_weight[0] if sample_weight.shape[0] > 0 else NULL
    check_loss_id(loss)
    if n_threads < 1 or workspace.shape[0] < n_threads - 1 or (n_threads > 1 and workspace.shape[1] != D):
        raise ValueError("workspace must have shape (n_threads - 1, len(w))")
    if w.shape[0] != D or f.shape[0] < n or g.shape[0] < n:
        raise ValueError("w, f, g have inconsistent lengths")
    if start < 0 or stop > indptr.shape[0] - 1 or y.shape[0] < stop or (
            c != NULL and sample_weight.shape[0] < stop):
        raise ValueError("rows [start, stop) out of range of X, y or sample_weight")
    if n <= 0:
        grad[:] = 0.0
        return 0.0, FR_OK
    if n_threads > n:
        n_threads = <int>n
    cdef Py_ssize_t[::1] bounds = np.empty(n_threads + 1, dtype=np.intp)
    cdef double[::1] values = np.zeros(n_threads)
    cdef int[::1] statuses = np.zeros(n_threads, dtype=np.intc)
    with nogil:
        block_bounds(&indptr[0], start, stop, n_threads, &bounds[0])
        for t in prange(n_threads, num_threads=n_threads, schedule="static", chunksize=1):
            buf = &grad[0] if t == 0 else &workspace[t - 1, 0]
            memset(buf, 0, D * sizeof(double))
            statuses[t] = risk_block(&data[0], &indices[0], &indptr[0], dense, bias, d, &w[0],
                                     loss, loss_param, &y[0], c, start, bounds[t], bounds[t + 1],
                                     &f[0], &g[0], buf, &values[t])
        if n_threads > 1:
            for j in prange(D, num_threads=n_threads, schedule="static"):
                for t in range(n_threads - 1):
                    grad[j] += workspace[t, j]
        for t in range(n_threads):
            value += values[t]
            if statuses[t] != FR_OK:
                status = statuses[t]
    return value, status


cdef check_loss_id(int loss):
    if not 0 <= loss < FR_N_LOSSES:
        raise ValueError(f"loss id must be in [0, {FR_N_LOSSES}), got {loss}")


def loss_values(int loss, double loss_param, const double[::1] f, const double[::1] y):
    """Element-wise (l(f_i, y_i), l'(f_i, y_i)); non-finite values stay inf."""
    cdef Py_ssize_t i, n = f.shape[0]
    check_loss_id(loss)
    if y.shape[0] != n:
        raise ValueError("f and y must have the same length")
    out = np.empty(n)
    deriv = np.empty(n)
    cdef double[::1] v = out, dv = deriv
    with nogil:
        for i in range(n):
            fr_loss_batch(loss, loss_param, 1, &f[i], &y[i], NULL, &dv[i], &v[i])
    return out, deriv


def loss_conjugates(int loss, double loss_param, const double[::1] a, const double[::1] y):
    """Element-wise l*(a_i) for the loss at y_i (+inf outside the domain)."""
    cdef Py_ssize_t n = a.shape[0]
    check_loss_id(loss)
    if y.shape[0] != n:
        raise ValueError("a and y must have the same length")
    out = np.empty(n)
    cdef double[::1] v = out
    if n:
        with nogil:
            fr_loss_conj_batch(loss, loss_param, n, &a[0], &y[0], &v[0])
    return out
