# cython: language_level=3
"""Batched risk oracle (docs/math.md §3; Teo et al. 2007, section 4).

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

from fr_rows cimport index_t, row_view, row_dot_ahead, block_bounds, row_axpy_pairs
from fr_loss cimport *

# name -> kernel id, read from fr_loss.h's list of losses (its only copy)
LOSS_IDS = {fr_loss_names[i].decode("ascii"): i for i in range(FR_N_LOSSES)}
STATUS_OK = FR_OK
STATUS_OVERFLOW = FR_ERR_OVERFLOW


cdef int risk_block(const floating* data, const index_t* indices, const index_t* indptr,
                    bint dense, double b, Py_ssize_t d, int loss, double loss_param,
                    const double* y, const double* c, Py_ssize_t lo, Py_ssize_t hi,
                    double* wg, double* value, double* g_out, double* scores) noexcept nogil:
    """Rows [lo, hi): wg[2j + 1] += (X^T g)_j, value = sum c_i l_i; returns a status.
    ``g_out`` (NULL: not wanted) receives g_i at ``g_out[i]``, ``scores`` (NULL: not
    wanted) f_i at ``scores[i]``.

    ``wg`` interleaves the weights and this block's gradient buffer, w_j at
    ``wg[2j]`` and its partial derivative at ``wg[2j + 1]``.  Each row is
    read once: the gather ``f_i = <x_i, w>`` brings the cache lines of its
    columns in, ``g_i = c_i l'(f_i, y_i)`` follows, and the scatter
    ``+= g_i x_i`` hits the same lines: on text data w and the buffer are
    far larger than the core's caches, and these random accesses, not the
    streaming of X, set the time, so one cache line per column beats one in w
    and one in the buffer.  The loss is dispatched once per row
    (``fr_loss_batch`` on one row, a perfectly predicted switch), which costs
    less than a second pass over the rows for a batched loss.
    """
    cdef Py_ssize_t i, nnz, end = indptr[hi]
    cdef const floating* val
    cdef const index_t* idx
    cdef double s, gi, li, total = 0.0
    cdef int status = FR_OK, row_status
    for i in range(lo, hi):
        nnz = row_view(data, indices, indptr, dense, i, &val, &idx)
        s = row_dot_ahead(val, idx, nnz, nnz if dense else end - indptr[i], wg, 2)
        if b != 0.0:
            s += b * wg[2 * d]
        if scores != NULL:
            scores[i] = s
        row_status = fr_loss_batch(loss, loss_param, 1, &s, &y[i], c + i if c != NULL else NULL,
                                   &gi, &li)
        if row_status != FR_OK:
            status = row_status
        total += li
        if g_out != NULL:
            g_out[i] = gi
        if gi == 0.0:  # e.g. hinge beyond the margin: 0 * x_i changes no bit of the buffer
            continue
        row_axpy_pairs(gi, val, idx, nnz, wg)
        if b != 0.0:
            wg[2 * d + 1] += b * gi
    value[0] = total
    return status


def risk_gradient(const floating[::1] data, const index_t[::1] indices,
                  const index_t[::1] indptr, bint dense, double bias,
                  const double[::1] w, int loss, double loss_param,
                  const double[::1] y, const double[::1] sample_weight,
                  Py_ssize_t start, Py_ssize_t stop, double[::1] grad,
                  double[:, ::1] workspace, int n_threads, double[::1] multipliers=None,
                  double[::1] scores=None):
    """Partial risk of rows [start, stop); returns (sum_i c_i l_i, status).

    ``w`` has length d, or d + 1 when ``bias != 0`` (the constant feature of
    value ``bias`` is the last coordinate).  ``grad`` (len(w)) is
    overwritten with ``X^T g``, ``g_i = c_i l'(f_i, y_i)``.
    ``sample_weight`` is empty for unit weights.  ``workspace`` (shape
    (n_threads, 2 len(w)), any content) holds each thread's copy of w
    interleaved with its gradient buffer (see ``risk_block``).
    ``multipliers`` (optional, length stop - start) receives g: the gradient
    in the sample space, ``X^T g`` (what bundle methods store, see
    fastrisk/solvers/bmrm.py).  ``scores`` (optional, length >= stop) receives
    ``f_i = <w, x_i>`` of the rows [start, stop) at their row index: the dual
    point of a smooth loss (fastrisk/solvers/_dual_gap.py) and Newton's
    curvature weights need them.

    Thread t owns the rows of block t (nnz-balanced, contiguous), fills its
    own workspace row and runs gather, loss and scatter row by row over its
    block; then the buffers are added into ``grad`` in thread order and the
    block values in block order, so a fixed thread count gives the same bits
    on every run.
    """
    cdef Py_ssize_t n = stop - start, D = grad.shape[0], d = D - (bias != 0)
    cdef Py_ssize_t j, t
    cdef double* wg
    cdef double s, value = 0.0
    cdef int status = FR_OK
    cdef const double* c = &sample_weight[0] if sample_weight.shape[0] > 0 else NULL
    cdef double* g_out = NULL
    cdef double* f_out = NULL
    check_loss_id(loss)
    if n_threads < 1 or workspace.shape[0] < n_threads or workspace.shape[1] != 2 * D:
        raise ValueError("workspace must have shape (n_threads, 2 len(w))")
    if w.shape[0] != D:
        raise ValueError("w and grad have inconsistent lengths")
    if start < 0 or stop > indptr.shape[0] - 1 or y.shape[0] < stop or (
            c != NULL and sample_weight.shape[0] < stop):
        raise ValueError("rows [start, stop) out of range of X, y or sample_weight")
    if scores is not None:
        if scores.shape[0] < stop:
            raise ValueError("scores must have length >= stop")
        f_out = &scores[0]
    if multipliers is not None:
        if multipliers.shape[0] != n:
            raise ValueError("multipliers must have length stop - start")
        if n > 0:
            g_out = &multipliers[0] - start
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
            wg = &workspace[t, 0]
            for j in range(D):
                wg[2 * j] = w[j]
                wg[2 * j + 1] = 0.0
            statuses[t] = risk_block(&data[0], &indices[0], &indptr[0], dense, bias, d,
                                     loss, loss_param, &y[0], c, bounds[t], bounds[t + 1],
                                     wg, &values[t], g_out, f_out)
        for j in prange(D, num_threads=n_threads, schedule="static"):
            s = workspace[0, 2 * j + 1]
            for t in range(1, n_threads):
                s = s + workspace[t, 2 * j + 1]
            grad[j] = s
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
