# cython: language_level=3
"""Batched risk oracle for vector losses (docs/math.md §2-3, BMRM Table 2).

One call computes, over the rows [start, stop) of one partition, each row's
k scores ``s = W x_i``, its loss ``scale c_i l(s, y_i)`` and gradient ``g_i``,
and the scatter ``G += x_i g_i^T`` in the same pass, without the GIL.  Rows
are split into ``n_threads`` contiguous blocks of roughly equal nnz.  The
kernel reads W feature-major, the k weights of feature j contiguous
(fr_vec.pxd, block stride kp: k padded to a multiple of 4 for the
register-blocked row kernels of fr_vec.h), shared by the threads; each thread
adds into its own feature-major gradient buffer, whose blocks a row prefetches
before its scores so that its scatter finds them in cache (on text data W is
far larger than the caches).

W and the gradient come in one of two layouts.  Class-major (scikit-learn's
``(k, D)``, ``w[c D + j]``): the threads first lay W out feature-major
together, each a range of features, and at the end add their buffers into the
class-major gradient.  Feature-major (``w[j k + c]``, the layout a solver can
run in, since its iterations do not depend on the order of the coordinates):
with kp = k the kernel reads w in place and thread 0 scatters straight into
``grad``, so nothing is converted; otherwise only the padding is added and
removed.  The buffers are added in block order either way, so a fixed thread
count gives identical bits on every run and in both layouts (as
csrc/_oracle.pyx does).

``vector_risk_gradient_columns`` is the column path (as in csrc/_oracle.pyx): the
rows' gradients g_i stored as the rows of U (m x kp), then ``G[j, :] = sum_i x_ij
U[i, :]`` column by column from the column copy of X, with the same bits for every
thread count.
"""

import numpy as np
from cython cimport floating
from cython.parallel cimport prange, threadid
from libc.stdint cimport int64_t
from libc.string cimport memset

from fr_rows cimport index_t, row_view, block_bounds, chunks_ok
from fr_vec cimport *

LOSS_IDS = {
    "softmax": FR_VEC_SOFTMAX,
    "multiclass_hinge": FR_VEC_MULTICLASS_HINGE,
    "scaled_soft_margin": FR_VEC_SCALED_SOFT_MARGIN,
    "multivariate_regression": FR_VEC_MULTIVARIATE_REGRESSION,
}


cdef enum:
    # gradient buffers larger than this (a typical L2) have their blocks prefetched
    PREFETCH_BYTES = 1 << 20
    # features per tile of the layout changes: a tile's blocks (TILE kp doubles) stay
    # in L1 while the k class rows of w (or grad) are read (written) in short runs
    TILE = 16


cdef inline Py_ssize_t padded(Py_ssize_t k) noexcept nogil:
    """Classes per weight block: k rounded up to a multiple of 4 when the
    register-blocked row kernels (fr_vec.h) cover it, else k.  The padding
    weights are zero, so the padding scores and gradients are zero."""
    cdef Py_ssize_t kp = (k + 3) // 4 * 4
    return kp if kp <= 4 * FR_VEC_MAX_NV else k


def padded_classes(Py_ssize_t n_classes):
    """kp: the classes per weight block of the kernels for k = ``n_classes``."""
    return padded(n_classes)


def workspace_shape(Py_ssize_t n_threads, Py_ssize_t n_weights, Py_ssize_t n_classes):
    """The shape of vector_risk_gradient's workspace for D = ``n_weights`` (features
    and intercept) and k = ``n_classes``: row 0 the feature-major weights, row t + 1
    thread t's gradient buffer followed by its scratch (3 kp doubles)."""
    cdef Py_ssize_t kp = padded(n_classes)
    return (n_threads + 1, n_weights * kp + 3 * kp)


cdef double risk_block(const floating* data, const index_t* indices, const index_t* indptr,
                       bint dense, double b, Py_ssize_t d, const double* wt, double* gt,
                       Py_ssize_t k, Py_ssize_t kp, int loss, const int64_t* y,
                       const double* Y, const double* P, const double* S, const double* c,
                       double scale, Py_ssize_t lo, Py_ssize_t hi, double* scratch,
                       int* active) noexcept nogil:
    """Rows [lo, hi): adds sum_i x_i g_i^T to the gradient buffer ``gt`` at the
    weights ``wt`` (both feature-major, block stride kp = padded(k)); returns
    sum_i scale c_i l_i.  The row weight scale c_i enters g_i, so that a thread's
    buffer needs no pass of its own to be scaled.

    A row's gradient blocks are prefetched before its scores are computed, so
    that the scatter finds them in cache, unless the buffer fits in L2
    (PREFETCH_BYTES), where the prefetches would only cost instructions.
    ``scratch`` holds 2 kp doubles (the scores and the row gradient).
    """
    cdef Py_ssize_t i, j, nnz, n_active, ahead, end = indptr[hi]
    cdef bint prefetch_g = (d + 1) * kp * sizeof(double) > PREFETCH_BYTES
    cdef const floating* val
    cdef const index_t* idx
    cdef double total = 0.0
    cdef double* s = scratch
    cdef double* g = scratch + kp
    for i in range(2 * kp):
        scratch[i] = 0.0
    for i in range(lo, hi):
        nnz = row_view(data, indices, indptr, dense, i, &val, &idx)
        ahead = nnz if dense else end - indptr[i]
        if prefetch_g:
            for j in range(nnz):
                fr_prefetch_block(gt + idx[j] * kp, kp)
        row_scores(val, idx, nnz, ahead, b, d, wt, kp, kp, s)
        total += vector_loss_row(loss, s, k, y[i] if y != NULL else 0,
                                 Y + i * k if Y != NULL else NULL, P, S,
                                 scale * c[i] if c != NULL else scale, g, active, &n_active)
        if n_active == k:
            n_active = kp
        row_scatter(val, idx, nnz, b, d, g, kp, kp, active, n_active, gt)
    return total


cdef void fill_tile(const double* w, Py_ssize_t D, Py_ssize_t k, Py_ssize_t q,
                    bint feature_major, Py_ssize_t j0, Py_ssize_t j1, double* ws) noexcept nogil:
    """ws[j q + c] = W[c, j] for c < k, and 0 for k <= c < q, features [j0, j1);
    W[c, j] is w[j k + c] (feature_major) or w[c D + j]."""
    cdef Py_ssize_t j, cc
    for j in range(j0, j1):
        for cc in range(k, q):
            ws[j * q + cc] = 0.0
    if feature_major:
        for j in range(j0, j1):
            for cc in range(k):
                ws[j * q + cc] = w[j * k + cc]
        return
    for cc in range(k):
        for j in range(j0, j1):
            ws[j * q + cc] = w[cc * D + j]


cdef void zero_tile(Py_ssize_t q, Py_ssize_t j0, Py_ssize_t j1, double* gt) noexcept nogil:
    """gt[j q + c] = 0 for c < q, features [j0, j1)."""
    memset(gt + j0 * q, 0, (j1 - j0) * q * sizeof(double))


cdef void reduce_tile(const double* first, const double* others, Py_ssize_t stride,
                      int n_threads, Py_ssize_t D, Py_ssize_t k, Py_ssize_t q,
                      bint feature_major, Py_ssize_t j0, Py_ssize_t j1,
                      double* grad) noexcept nogil:
    """G[c, j] = first[j q + c] + sum_{t >= 1} others[(t - 1) stride + j q + c], t in
    order, features [j0, j1) (the fixed-order sum of the threads' gradient buffers,
    thread 0's at ``first``); G[c, j] is grad[j k + c] (feature_major, which may be
    ``first`` itself when q = k) or grad[c D + j]."""
    cdef Py_ssize_t j, cc, t
    cdef double s
    if feature_major:
        for j in range(j0, j1):
            for cc in range(k):
                s = first[j * q + cc]
                for t in range(1, n_threads):
                    s = s + others[(t - 1) * stride + j * q + cc]
                grad[j * k + cc] = s
        return
    for cc in range(k):
        for j in range(j0, j1):
            s = first[j * q + cc]
            for t in range(1, n_threads):
                s = s + others[(t - 1) * stride + j * q + cc]
            grad[cc * D + j] = s


cdef struct LossArgs:
    const int64_t* y
    const double* Y
    const double* P
    const double* S
    const double* c


cdef LossArgs loss_args(int loss, Py_ssize_t k, Py_ssize_t start, Py_ssize_t stop,
                        const int64_t[::1] y, const double[:, ::1] Y, const double[:, ::1] P,
                        const double[:, ::1] S, const double[::1] sample_weight) except *:
    """The loss arguments of both entry points checked for rows [start, stop) and k
    classes, as pointers (NULL for an empty array): y's class indices (multivariate
    regression: Y (m, k) and M's factor L instead), the cost matrix and its power, the weights."""
    cdef LossArgs a
    cdef Py_ssize_t j
    a.c = &sample_weight[0] if sample_weight.shape[0] > 0 else NULL
    a.y = &y[0] if y.shape[0] > 0 else NULL
    a.Y = &Y[0, 0] if Y.shape[0] > 0 else NULL
    a.P = &P[0, 0] if P.shape[0] > 0 else NULL
    a.S = &S[0, 0] if S.shape[0] > 0 else NULL
    if not 0 <= loss < FR_VEC_N_LOSSES:
        raise ValueError(f"vector loss id must be in [0, {FR_VEC_N_LOSSES}), got {loss}")
    if a.c != NULL and sample_weight.shape[0] < stop:
        raise ValueError("sample_weight must cover the rows")
    if loss == FR_VEC_MULTIVARIATE_REGRESSION:
        if a.Y == NULL or Y.shape[0] < stop or Y.shape[1] != k or a.P == NULL:
            raise ValueError("multivariate_regression needs Y (m, k) and the factor L (k, k) of M")
    elif a.y == NULL or y.shape[0] < stop:
        raise ValueError("y must hold a class index for every row")
    if loss == FR_VEC_SCALED_SOFT_MARGIN and (a.P == NULL or a.S == NULL):
        raise ValueError("scaled_soft_margin needs the cost matrix and its power")
    if (a.P != NULL and (P.shape[0] != k or P.shape[1] != k)) or (
            a.S != NULL and (S.shape[0] != k or S.shape[1] != k)):
        raise ValueError("P and S must have shape (n_classes, n_classes)")
    if a.y != NULL:
        for j in range(start, stop):
            if not 0 <= a.y[j] < k:
                raise ValueError(f"y[{j}] = {a.y[j]} is not a class index in [0, {k})")
    return a


def vector_risk_gradient(const floating[::1] data, const index_t[::1] indices,
                         const index_t[::1] indptr, bint dense, double bias,
                         const double[::1] w, Py_ssize_t n_classes, int loss,
                         const int64_t[::1] y, const double[:, ::1] Y,
                         const double[:, ::1] P, const double[:, ::1] S,
                         const double[::1] sample_weight, Py_ssize_t start, Py_ssize_t stop,
                         double scale, double[::1] grad, double[:, ::1] workspace,
                         int n_threads, bint feature_major=False):
    """Partial risk of rows [start, stop); returns scale sum_i c_i l(W x_i, y_i).

    ``w`` and ``grad`` (length k D, D = d or d + 1 with ``bias != 0``) are W
    and the gradient, class-major (``w[c D + j]``) or with ``feature_major``
    feature-major (``w[j k + c]``).  ``y`` holds
    class indices (empty for multivariate_regression), ``Y`` the (m, k)
    targets of multivariate_regression (else empty); ``P`` is the cost matrix
    (scaled_soft_margin) or L with L^T L = M (multivariate_regression), ``S = P^beta``
    (scaled_soft_margin), both (k, k) or empty.  ``sample_weight`` is empty
    for unit weights.  ``grad`` (not overlapping ``w``) receives scale sum_i x_i g_i^T.
    ``workspace`` (at least ``workspace_shape(n_threads, D, k)``, any content) holds
    the feature-major weights (row 0), each thread's gradient buffer and its scratch.
    """
    cdef Py_ssize_t k = n_classes, D = w.shape[0] // max(n_classes, 1), d = D - (bias != 0)
    cdef Py_ssize_t kp = padded(k)
    cdef Py_ssize_t n = stop - start, j, jt, t, width = D * kp, n_tiles = (D + TILE - 1) // TILE
    cdef Py_ssize_t stride = workspace.shape[1]
    cdef double* ws
    cdef double value = 0.0
    if k < 1 or D * k != w.shape[0] or grad.shape[0] != w.shape[0] or D < (bias != 0) + 1:
        raise ValueError("w and grad must hold n_classes x D weights")
    if D - (bias != 0) != (indptr[1] - indptr[0] if dense else D - (bias != 0)):
        raise ValueError("w does not match the number of columns of dense X")
    if n_threads < 1 or workspace.shape[0] < n_threads + 1 or stride < width + 3 * kp:
        raise ValueError("workspace must have workspace_shape(n_threads, D, n_classes)")
    if start < 0 or stop > indptr.shape[0] - 1:
        raise ValueError("rows [start, stop) out of range of X")
    cdef LossArgs a = loss_args(loss, k, start, stop, y, Y, P, S, sample_weight)
    if n <= 0:
        grad[:] = 0.0
        return 0.0
    if n_threads > n:
        n_threads = <int>n
    # feature-major with unpadded blocks: w is read in place, thread 0 adds into grad
    cdef bint direct = feature_major and kp == k
    cdef const double* wt = &w[0] if direct else &workspace[0, 0]
    cdef double* first = &grad[0] if direct else &workspace[1, 0]
    cdef Py_ssize_t[::1] bounds = np.empty(n_threads + 1, dtype=np.intp)
    cdef double[::1] values = np.zeros(n_threads)
    with nogil:
        block_bounds(&indptr[0], start, stop, n_threads, &bounds[0])
        for jt in prange(n_tiles, num_threads=n_threads, schedule="static"):
            if not direct:
                fill_tile(&w[0], D, k, kp, feature_major, jt * TILE, min(jt * TILE + TILE, D),
                          &workspace[0, 0])
            zero_tile(kp, jt * TILE, min(jt * TILE + TILE, D), first)
            for t in range(1, n_threads):
                zero_tile(kp, jt * TILE, min(jt * TILE + TILE, D), &workspace[t + 1, 0])
        for t in prange(n_threads, num_threads=n_threads, schedule="static", chunksize=1):
            ws = &workspace[t + 1, 0]
            values[t] = risk_block(&data[0], &indices[0], &indptr[0], dense, bias, d, wt,
                                   first if t == 0 else ws, k, kp, loss, a.y, a.Y, a.P, a.S, a.c,
                                   scale, bounds[t], bounds[t + 1],
                                   ws + width, <int*>(ws + width + 2 * kp))
        if not (direct and n_threads == 1):
            for jt in prange(n_tiles, num_threads=n_threads, schedule="static"):
                reduce_tile(first, &workspace[2, 0] if n_threads > 1 else NULL, stride,
                            n_threads, D, k, kp, feature_major, jt * TILE,
                            min(jt * TILE + TILE, D), &grad[0])
        for t in range(n_threads):
            value += values[t]
    return value


cdef double loss_rows(const floating* data, const index_t* indices, const index_t* indptr,
                      double b, Py_ssize_t d, const double* wt, Py_ssize_t k, Py_ssize_t kp,
                      int loss, const int64_t* y, const double* Y, const double* P,
                      const double* S, const double* c, double scale, Py_ssize_t lo,
                      Py_ssize_t hi, double* U, double* s, int* active) noexcept nogil:
    """Rows [lo, hi) of CSR X: U[i, :] = g_i (kp doubles, the padding 0), the row
    gradient of scale c_i l(W x_i, y_i) at the feature-major weights ``wt``; returns the
    sum of those losses in row order.  ``s`` (kp doubles) holds a row's scores."""
    cdef Py_ssize_t i, cc, nnz, n_active, end = indptr[hi]
    cdef const floating* val
    cdef const index_t* idx
    cdef double total = 0.0
    for i in range(lo, hi):
        nnz = row_view(data, indices, indptr, False, i, &val, &idx)
        row_scores(val, idx, nnz, end - indptr[i], b, d, wt, kp, kp, s)
        total += vector_loss_row(loss, s, k, y[i] if y != NULL else 0,
                                 Y + i * k if Y != NULL else NULL, P, S,
                                 scale * c[i] if c != NULL else scale, U + i * kp, active,
                                 &n_active)
        for cc in range(k, kp):
            U[i * kp + cc] = 0.0
    return total


def vector_risk_gradient_columns(const floating[::1] data, const index_t[::1] indices,
                                 const index_t[::1] indptr, double bias,
                                 const floating[::1] col_values, const index_t[::1] col_rows,
                                 const int64_t[::1] col_indptr,
                                 const Py_ssize_t[::1] row_chunks,
                                 const Py_ssize_t[::1] col_chunks, const double[::1] w,
                                 Py_ssize_t n_classes, int loss, const int64_t[::1] y,
                                 const double[:, ::1] Y, const double[:, ::1] P,
                                 const double[:, ::1] S, const double[::1] sample_weight,
                                 double scale,
                                 double[::1] grad, double[:, ::1] layout, double[:, ::1] U,
                                 double[:, ::1] scratch, int n_threads,
                                 bint feature_major=False):
    """Risk of all rows of CSR X from its rows and its column copy; returns
    scale sum_i c_i l(W x_i, y_i).

    The arguments are those of ``vector_risk_gradient`` except: the column view of
    [X, intercept column] (``col_values``, ``col_rows``, ``col_indptr``,
    fastrisk/columns.py); ``row_chunks`` and ``col_chunks``, chunks of rows and of
    columns of about equal nnz (bounds from 0 to m, resp. to D); ``layout`` (2, D kp),
    the feature-major weights and gradient when W is class-major or padded (see
    ``column_buffers``); ``U`` (m, kp) and ``scratch`` (n_threads, 2 kp), any content.

    Two passes, each over chunks taken by the threads as they come:
    1. rows: the k scores of row i, its loss and its gradient g_i, stored as U[i, :];
    2. columns: G[j, :] = sum_i x_ij U[i, :], a column's entries gathered in row order
       (the same register-blocked kernel as a row's scores, over U instead of W).
       A column belongs to one chunk: no thread has a gradient buffer of its own and
       nothing is reduced; U (m kp doubles) is read in place.
    The chunk losses are added in chunk order: the output has the same bits for every
    thread count.
    """
    cdef Py_ssize_t k = n_classes, D = w.shape[0] // max(n_classes, 1), d = D - (bias != 0)
    cdef Py_ssize_t kp = padded(k), m = indptr.shape[0] - 1, ch, j, jt
    cdef Py_ssize_t n_rc = row_chunks.shape[0] - 1, n_cc = col_chunks.shape[0] - 1
    cdef Py_ssize_t n_tiles = (D + TILE - 1) // TILE
    cdef double value = 0.0
    cdef double* s
    if k < 1 or D * k != w.shape[0] or grad.shape[0] != w.shape[0] or d < 1:
        raise ValueError("w and grad must hold n_classes x D weights")
    if col_indptr.shape[0] != D + 1 or col_values.shape[0] != col_indptr[D] or (
            col_rows.shape[0] != col_indptr[D]) or (
            m < 1 or indptr[m] + (m if bias != 0 else 0) != col_indptr[D]):
        raise ValueError("the column view does not match X")
    if n_threads < 1 or scratch.shape[0] < n_threads or scratch.shape[1] < 2 * kp or (
            U.shape[0] != m or U.shape[1] != kp):
        raise ValueError("U must have shape (m, kp) and scratch (n_threads, 2 kp)")
    cdef bint direct = feature_major and kp == k
    if not direct and (layout.shape[0] != 2 or layout.shape[1] != D * kp):
        raise ValueError("layout must have shape (2, D kp)")
    cdef LossArgs a = loss_args(loss, k, 0, m, y, Y, P, S, sample_weight)
    if not (chunks_ok(&row_chunks[0], n_rc, m) and chunks_ok(&col_chunks[0], n_cc, D)):
        raise ValueError("row_chunks and col_chunks must run from 0 to m and to D, "
                         "non-decreasing")
    cdef const double* wt = &w[0] if direct else &layout[0, 0]
    cdef double* G = &grad[0] if direct else &layout[1, 0]
    cdef double[::1] values = np.zeros(n_rc)
    with nogil:
        if not direct:
            for jt in prange(n_tiles, num_threads=n_threads, schedule="static"):
                fill_tile(&w[0], D, k, kp, feature_major, jt * TILE, min(jt * TILE + TILE, D),
                          &layout[0, 0])
        for ch in prange(n_rc, num_threads=n_threads, schedule="dynamic"):
            s = &scratch[threadid(), 0]
            values[ch] = loss_rows(&data[0], &indices[0], &indptr[0], bias, d, wt, k, kp,
                                   loss, a.y, a.Y, a.P, a.S, a.c, scale, row_chunks[ch],
                                   row_chunks[ch + 1], &U[0, 0], s, <int*>(s + kp))
        for ch in prange(n_cc, num_threads=n_threads, schedule="dynamic"):
            for j in range(col_chunks[ch], col_chunks[ch + 1]):
                row_scores(&col_values[col_indptr[j]], &col_rows[col_indptr[j]],
                           col_indptr[j + 1] - col_indptr[j], col_indptr[col_chunks[ch + 1]]
                           - col_indptr[j], 0.0, 0, &U[0, 0], kp, kp, G + j * kp)
        if not direct:
            for jt in prange(n_tiles, num_threads=n_threads, schedule="static"):
                reduce_tile(G, NULL, 0, 1, D, k, kp, feature_major, jt * TILE,
                            min(jt * TILE + TILE, D), &grad[0])
        for ch in range(n_rc):
            value += values[ch]
    return value


def column_buffers(Py_ssize_t n_threads, Py_ssize_t n_samples, Py_ssize_t n_classes):
    """(U, scratch) for vector_risk_gradient_columns, uninitialized."""
    cdef Py_ssize_t kp = padded(n_classes)
    return np.empty((n_samples, kp)), np.empty((n_threads, 2 * kp))


def column_layout(Py_ssize_t n_weights, Py_ssize_t n_classes):
    """The layout buffer of vector_risk_gradient_columns (needed unless W is feature-major
    with unpadded blocks), uninitialized."""
    return np.empty((2, n_weights * padded(n_classes)))

