# cython: language_level=3
"""Batched risk oracle (docs/math.md §3; Teo et al. 2007, section 4).

One call computes, over the rows [start, stop) of one partition,
``f = X w``, ``sum_i c_i l(f_i, y_i)``, ``g_i = c_i l'(f_i, y_i)`` and
``X^T g``, without the GIL.  ``risk_gradient``: rows are split into
``n_threads`` contiguous blocks of roughly equal nnz; block t scatters into its
own buffer and the buffers are added in block order, so a fixed thread count
gives identical bits on every run.  ``risk_gradient_columns``: g from a pass
over the rows, then ``X^T g`` column by column from the column copy of X
(fastrisk/columns.py), with the same bits for every thread count; which one an
oracle calls is decided in fastrisk/oracle.py (``use_columns``).
"""

import numpy as np
from cython cimport floating
from cython.parallel cimport prange
from libc.stdint cimport int64_t

from fr_rows cimport (index_t, row_view, row_dot_ahead, block_bounds, row_axpy_pairs,
                      chunks_ok)
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



cdef int loss_rows(const floating* data, const index_t* indices, const index_t* indptr,
                   double b, Py_ssize_t d, const double* w, int loss, double loss_param,
                   const double* y, const double* c, Py_ssize_t lo, Py_ssize_t hi,
                   double* f, double* g, double* value) noexcept nogil:
    """Rows [lo, hi) of CSR X: f_i = <x_i, w>, g_i = c_i l'(f_i, y_i) and
    value = sum_i c_i l_i in row order; returns a status."""
    cdef Py_ssize_t i, nnz, end = indptr[hi]
    cdef const floating* val
    cdef const index_t* idx
    cdef double s, li, total = 0.0
    cdef int status = FR_OK, row_status
    for i in range(lo, hi):
        nnz = row_view(data, indices, indptr, False, i, &val, &idx)
        s = row_dot_ahead(val, idx, nnz, end - indptr[i], w, 1)
        if b != 0.0:
            s += b * w[d]
        f[i] = s
        row_status = fr_loss_batch(loss, loss_param, 1, &s, &y[i], c + i if c != NULL else NULL,
                                   &g[i], &li)
        if row_status != FR_OK:
            status = row_status
        total += li
    value[0] = total
    return status


cdef void column_sums(const floating* values, const index_t* rows, const int64_t* colptr,
                      const double* g, Py_ssize_t lo, Py_ssize_t hi, double* out) noexcept nogil:
    """out[j] = sum_k values[k] g[rows[k]] over the entries of column j, j in [lo, hi).

    Four partial sums (entries k mod 4, added as (s0 + s1) + (s2 + s3)) so that the
    reads of g, in cache, overlap instead of waiting on one chain of additions; the
    order is fixed by the column alone.
    """
    cdef Py_ssize_t j
    cdef int64_t k, end
    cdef double s0, s1, s2, s3
    for j in range(lo, hi):
        s0 = s1 = s2 = s3 = 0.0
        k, end = colptr[j], colptr[j + 1]
        while k + 4 <= end:
            s0 += values[k] * g[rows[k]]
            s1 += values[k + 1] * g[rows[k + 1]]
            s2 += values[k + 2] * g[rows[k + 2]]
            s3 += values[k + 3] * g[rows[k + 3]]
            k += 4
        while k < end:
            s0 += values[k] * g[rows[k]]
            k += 1
        out[j] = (s0 + s1) + (s2 + s3)


def risk_gradient_columns(const floating[::1] data, const index_t[::1] indices,
                          const index_t[::1] indptr, double bias,
                          const floating[::1] col_values, const index_t[::1] col_rows,
                          const int64_t[::1] col_indptr, const Py_ssize_t[::1] row_chunks,
                          const Py_ssize_t[::1] col_chunks, const double[::1] w, int loss,
                          double loss_param, const double[::1] y,
                          const double[::1] sample_weight, double[::1] grad,
                          double[::1] multipliers, double[::1] scores, int n_threads):
    """Risk of all rows of CSR X from its rows and its column copy; returns
    (sum_i c_i l_i, status).

    ``col_values``, ``col_rows``, ``col_indptr``: the column view of [X, intercept
    column] (fastrisk/columns.py), D = len(grad) = len(w) columns.  ``multipliers``
    and ``scores`` (length m) receive g and f; ``grad`` receives ``X^T g``.
    ``row_chunks`` and ``col_chunks`` cut the rows and the columns into chunks of
    about equal nnz (bounds, first 0, last m resp. D).

    Two passes, each over chunks taken by the threads as they come:
    1. rows: f_i = <x_i, w> (the gather reads w), g_i = c_i l'(f_i, y_i), the chunk's
       sum of c_i l_i;
    2. columns: (X^T g)_j = sum_i x_ij g_i.  A column belongs to one chunk, so no
       thread needs a gradient buffer of its own and nothing is reduced; the reads of
       g (m doubles) stay in cache.
    Every row, column and chunk sum has an order fixed by the data, and the chunk
    values are added in chunk order: the output has the same bits for every thread
    count.
    """
    cdef Py_ssize_t m = indptr.shape[0] - 1, D = grad.shape[0], d = D - (bias != 0)
    cdef Py_ssize_t n_rc = row_chunks.shape[0] - 1, n_cc = col_chunks.shape[0] - 1, ch
    cdef double value = 0.0
    cdef int status = FR_OK
    cdef const double* c = &sample_weight[0] if sample_weight.shape[0] > 0 else NULL
    check_loss_id(loss)
    if n_threads < 1 or w.shape[0] != D or col_indptr.shape[0] != D + 1 or d < 1:
        raise ValueError("w, grad and the column view have inconsistent lengths")
    if m < 1 or y.shape[0] != m or multipliers.shape[0] != m or scores.shape[0] != m or (
            c != NULL and sample_weight.shape[0] != m):
        raise ValueError("y, sample_weight, multipliers and scores must have length m")
    if col_values.shape[0] != col_indptr[D] or col_rows.shape[0] != col_indptr[D] or (
            indptr[m] + (m if bias != 0 else 0) != col_indptr[D]):
        raise ValueError("the column view does not match X")
    if not (chunks_ok(&row_chunks[0], n_rc, m) and chunks_ok(&col_chunks[0], n_cc, D)):
        raise ValueError("row_chunks and col_chunks must run from 0 to m and to len(w), "
                         "non-decreasing")
    cdef double[::1] values = np.zeros(n_rc)
    cdef int[::1] statuses = np.zeros(n_rc, dtype=np.intc)
    with nogil:
        for ch in prange(n_rc, num_threads=n_threads, schedule="dynamic"):
            statuses[ch] = loss_rows(&data[0], &indices[0], &indptr[0], bias, d, &w[0], loss,
                                     loss_param, &y[0], c, row_chunks[ch], row_chunks[ch + 1],
                                     &scores[0], &multipliers[0], &values[ch])
        for ch in prange(n_cc, num_threads=n_threads, schedule="dynamic"):
            column_sums(&col_values[0], &col_rows[0], &col_indptr[0], &multipliers[0],
                        col_chunks[ch], col_chunks[ch + 1], &grad[0])
        for ch in range(n_rc):
            value += values[ch]
            if statuses[ch] != FR_OK:
                status = statuses[ch]
    return value, status
