# cython: language_level=3
"""Hessian-vector products of the empirical risk (Lin, Weng & Keerthi 2008, section 3).

For a loss twice differentiable in the score, the Hessian of
``R_emp(w) = (1/m) sum_i c_i l(<w, x_i>, y_i)`` is ``(1/m) X^T D X`` with
``D_ii = c_i l''(f_i, y_i)``.  ``curvature`` computes D once per Newton
step; ``hess_vec`` then gives ``X^T (D (X v))`` for each conjugate-gradient
iteration without forming the matrix.  For losses with a kink in l'
(squared hinge, Huber, smoothed hinge) D is the generalized Hessian of
Mangasarian (2002), as in LIBLINEAR's primal Newton solver: rows with
D_ii = 0 are skipped by both products.

The line search of Galli & Lin (2021) keeps ``X s`` for the
Newton direction s: ``hess_vec`` can also write the ``X v`` it computes on
the rows with curvature (conjugate gradient adds them up into ``X s``),
``inactive_dots`` completes the other rows, and ``scatter`` gives the
gradient ``X^T g`` of the accepted point from its scores, together with the
diagonal of the next ``X^T D X``, in one pass.

The threading follows csrc/_oracle.pyx: nnz-balanced contiguous row blocks,
each thread gathers from its own copy of v interleaved with its own
accumulation buffer, and the buffers are added in thread order, so a fixed
thread count gives identical bits on every run.
"""

import numpy as np

from cython cimport floating
from libc.math cimport isfinite
from cython.parallel cimport prange

from fr_rows cimport (index_t, row_view, row_dot_ahead, block_bounds, row_axpy_pairs,
                     fr_prefetch, FR_PREFETCH_DISTANCE)
from fr_loss cimport *


def curvature(int loss, double loss_param, const double[::1] f, const double[::1] y,
              const double[::1] sample_weight, double[::1] out):
    """out_i = c_i l''(f_i, y_i); ``sample_weight`` empty for unit weights.

    Returns the number of rows with out_i != 0 (the rows the products read).
    """
    cdef Py_ssize_t i, n = f.shape[0], active = 0
    cdef bint weighted = sample_weight.shape[0] > 0
    if y.shape[0] != n or out.shape[0] != n or (weighted and sample_weight.shape[0] != n):
        raise ValueError("f, y, out (and sample_weight) must have the same length")
    with nogil:
        for i in range(n):
            out[i] = fr_loss_curv(loss, loss_param, f[i], y[i])
            if weighted:
                out[i] *= sample_weight[i]
            active += out[i] != 0.0
    return active


cdef void hess_block(const floating* data, const index_t* indices, const index_t* indptr,
                     bint dense, double b, Py_ssize_t d, const double* D, Py_ssize_t lo,
                     Py_ssize_t hi, double* vg, double* xv) noexcept nogil:
    """Rows [lo, hi): vg[2j + 1] += (X^T (D (X v)))_j, v_j at vg[2j] (as in the oracle);
    xv (NULL: not wanted) receives (X v)_i on the rows with D_ii != 0 and 0 on the others."""
    cdef Py_ssize_t i, nnz, end = indptr[hi]
    cdef const floating* val
    cdef const index_t* idx
    cdef double s
    for i in range(lo, hi):
        if D[i] == 0.0:
            if xv != NULL:
                xv[i] = 0.0
            continue
        nnz = row_view(data, indices, indptr, dense, i, &val, &idx)
        s = row_dot_ahead(val, idx, nnz, nnz if dense else end - indptr[i], vg, 2)
        if b != 0.0:
            s += b * vg[2 * d]
        if xv != NULL:
            xv[i] = s
        s *= D[i]
        row_axpy_pairs(s, val, idx, nnz, vg)
        if b != 0.0:
            vg[2 * d + 1] += b * s


cdef object row_blocks(const index_t[::1] indptr, const double[::1] D, double[::1] out,
                       double[:, ::1] workspace, int n_threads):
    """The argument checks and the row set-up of ``hess_vec`` and ``scatter``: the
    per-thread row blocks as n_blocks + 1 offsets balanced by nonzeros
    (n_blocks = min(n_threads, n_samples)), or None when X has no rows (out is then 0)."""
    cdef Py_ssize_t n = indptr.shape[0] - 1
    if D.shape[0] != n:
        raise ValueError("D must have n_samples entries")
    if n_threads < 1 or workspace.shape[0] < n_threads or workspace.shape[1] != 2 * out.shape[0]:
        raise ValueError("workspace must have shape (n_threads, 2 len(out))")
    if n <= 0:
        out[:] = 0.0
        return None
    bounds = np.empty(min(n_threads, n) + 1, dtype=np.intp)
    cdef Py_ssize_t[::1] b = bounds
    block_bounds(&indptr[0], 0, n, b.shape[0] - 1, &b[0])
    return bounds


cdef void sum_blocks(double[:, ::1] workspace, int n_blocks, double[::1] out,
                     int slot=1) noexcept nogil:
    """out_j = sum over the blocks t (in order: same bits for any scheduling) of
    workspace[t, 2j + slot] (slot 1: the odd slots)."""
    cdef Py_ssize_t j, t
    cdef double s
    for j in prange(out.shape[0], num_threads=n_blocks, schedule="static"):
        s = workspace[0, 2 * j + slot]
        for t in range(1, n_blocks):
            s = s + workspace[t, 2 * j + slot]
        out[j] = s


def hess_vec(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
             bint dense, double bias, const double[::1] D, const double[::1] v,
             double[::1] out, double[:, ::1] workspace, int n_threads,
             double[::1] Xv=None):
    """out = X^T (D (X v)) over all rows (X with the bias column when ``bias != 0``).

    ``workspace`` has shape (>= n_threads, 2 len(v)), any content.  ``Xv``
    (optional, n_samples entries) receives (X v)_i on the rows with D_ii != 0
    and 0 on the others (``inactive_dots`` fills those).
    """
    cdef Py_ssize_t Dn = v.shape[0], d = Dn - (bias != 0)
    cdef Py_ssize_t j, t
    cdef double* vg
    cdef double* xv = NULL
    if out.shape[0] != Dn:
        raise ValueError("out must have len(v) entries")
    if Xv is not None:
        if Xv.shape[0] != indptr.shape[0] - 1:
            raise ValueError("Xv must have n_samples entries")
        if Xv.shape[0] > 0:
            xv = &Xv[0]
    blocks = row_blocks(indptr, D, out, workspace, n_threads)
    if blocks is None:
        return
    cdef Py_ssize_t[::1] bounds = blocks
    cdef int n_blocks = <int>(bounds.shape[0] - 1)
    with nogil:
        for t in prange(n_blocks, num_threads=n_blocks, schedule="static", chunksize=1):
            vg = &workspace[t, 0]
            for j in range(Dn):
                vg[2 * j] = v[j]
                vg[2 * j + 1] = 0.0
            hess_block(&data[0], &indices[0], &indptr[0], dense, bias, d, &D[0],
                       bounds[t], bounds[t + 1], vg, xv)
        sum_blocks(workspace, n_blocks, out)


cdef void dots_block(const floating* data, const index_t* indices, const index_t* indptr,
                     bint dense, double b, Py_ssize_t d, const double* D, const double* v,
                     Py_ssize_t lo, Py_ssize_t hi, double* out) noexcept nogil:
    """Rows [lo, hi) with D_ii == 0: out_i = <x_i, v> (+ b v_d)."""
    cdef Py_ssize_t i, nnz, end = indptr[hi]
    cdef const floating* val
    cdef const index_t* idx
    cdef double s
    for i in range(lo, hi):
        if D[i] != 0.0:
            continue
        nnz = row_view(data, indices, indptr, dense, i, &val, &idx)
        s = row_dot_ahead(val, idx, nnz, nnz if dense else end - indptr[i], v, 1)
        if b != 0.0:
            s += b * v[d]
        out[i] = s


def inactive_dots(const floating[::1] data, const index_t[::1] indices,
                  const index_t[::1] indptr, bint dense, double bias, const double[::1] D,
                  const double[::1] v, double[::1] out, int n_threads):
    """out_i = <x_i, v> on the rows with D_ii == 0, the rows ``hess_vec`` skips; the other
    entries of ``out`` are left as they are.  Each row is one thread's: no reduction."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, Dn = v.shape[0], d = Dn - (bias != 0)
    cdef Py_ssize_t t
    if D.shape[0] != n or out.shape[0] != n:
        raise ValueError("D and out must have n_samples entries")
    if n_threads < 1:
        raise ValueError("n_threads must be >= 1")
    if n <= 0:
        return
    bounds = np.empty(min(n_threads, n) + 1, dtype=np.intp)
    cdef Py_ssize_t[::1] b = bounds
    cdef int n_blocks = <int>(b.shape[0] - 1)
    with nogil:
        block_bounds(&indptr[0], 0, n, n_blocks, &b[0])
        for t in prange(n_blocks, num_threads=n_blocks, schedule="static", chunksize=1):
            dots_block(&data[0], &indices[0], &indptr[0], dense, bias, d, &D[0], &v[0],
                       b[t], b[t + 1], &out[0])


cdef void scatter_block(const floating* data, const index_t* indices, const index_t* indptr,
                        bint dense, double b, Py_ssize_t d, const double* coef,
                        const double* D, Py_ssize_t lo, Py_ssize_t hi,
                        double* vg) noexcept nogil:
    """Rows [lo, hi): vg[2j] += coef_i x_ij and, when D != NULL, vg[2j + 1] += D_ii x_ij^2."""
    cdef Py_ssize_t i, k, j, nnz, ahead, end = indptr[hi]
    cdef const floating* val
    cdef const index_t* idx
    cdef double a, h
    for i in range(lo, hi):
        a = coef[i]
        h = D[i] if D != NULL else 0.0
        if a == 0.0 and h == 0.0:
            continue
        nnz = row_view(data, indices, indptr, dense, i, &val, &idx)
        ahead = nnz if dense else end - indptr[i]  # prefetch across row ends, as row_dot_ahead
        for k in range(nnz):
            if k + FR_PREFETCH_DISTANCE < ahead:
                fr_prefetch(&vg[2 * idx[k + FR_PREFETCH_DISTANCE]])
            j = 2 * idx[k]
            vg[j] += a * val[k]
            if h != 0.0:
                vg[j + 1] += h * val[k] * val[k]
        if b != 0.0:
            vg[2 * d] += a * b
            vg[2 * d + 1] += h * b * b


def scatter(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
            bint dense, double bias, const double[::1] coef, double[::1] out,
            double[:, ::1] workspace, int n_threads, const double[::1] D=None,
            double[::1] diag=None):
    """out = X^T coef (the gradient of the risk from the rows' derivatives), skipping the
    rows with coef_i == 0 and D_ii == 0; with ``D`` and ``diag`` also
    diag_j = sum_i D_ii x_ij^2, the diagonal of X^T D X for the preconditioner of conjugate
    gradient (Hsia, Chiang & Lin 2018), in the same pass.  Threads and buffers as in
    ``hess_vec``."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, Dn = out.shape[0], d = Dn - (bias != 0)
    cdef Py_ssize_t j, t
    cdef double* vg
    cdef const double* h = NULL
    if coef.shape[0] != n:
        raise ValueError("coef must have n_samples entries")
    if (D is None) != (diag is None):
        raise ValueError("D and diag go together")
    if D is not None:
        if diag.shape[0] != Dn:
            raise ValueError("diag must have len(out) entries")
        blocks = row_blocks(indptr, D, out, workspace, n_threads)
        if blocks is None:
            diag[:] = 0.0
            return
        h = &D[0]
    else:
        blocks = row_blocks(indptr, coef, out, workspace, n_threads)
        if blocks is None:
            return
    cdef Py_ssize_t[::1] bounds = blocks
    cdef int n_blocks = <int>(bounds.shape[0] - 1)
    with nogil:
        for t in prange(n_blocks, num_threads=n_blocks, schedule="static", chunksize=1):
            vg = &workspace[t, 0]
            for j in range(2 * Dn):
                vg[j] = 0.0
            scatter_block(&data[0], &indices[0], &indptr[0], dense, bias, d, &coef[0], h,
                          bounds[t], bounds[t + 1], vg)
        sum_blocks(workspace, n_blocks, out, 0)
        if h != NULL:
            sum_blocks(workspace, n_blocks, diag, 1)


def along(int loss, double loss_param, const double[::1] f, const double[::1] z,
          const double[::1] y, const double[::1] sample_weight, double t,
          double[::1] deriv, double[::1] curv):
    """The risk along a direction from the scores f = X w and z = X s, at f + t z:
    (sum_i c_i l_i, sum_i c_i l'_i z_i, sum_i c_i l''_i z_i^2); ``deriv`` and ``curv``
    receive l'_i and l''_i (without c_i).  ``sample_weight`` empty for unit weights.  One
    loop in row order (the same bits on every run); a loss value that overflows makes the
    first sum inf."""
    cdef Py_ssize_t i, n = f.shape[0]
    cdef bint weighted = sample_weight.shape[0] > 0
    cdef double s, ci, gi, li, hi, value = 0.0, d1 = 0.0, d2 = 0.0
    if not 0 <= loss < FR_N_LOSSES:
        raise ValueError(f"loss id must be in [0, {FR_N_LOSSES}), got {loss}")
    if z.shape[0] != n or y.shape[0] != n or deriv.shape[0] != n or curv.shape[0] != n or (
            weighted and sample_weight.shape[0] != n):
        raise ValueError("f, z, y, deriv, curv (and sample_weight) must have the same length")
    with nogil:
        for i in range(n):
            s = f[i] + t * z[i]
            fr_loss_batch(loss, loss_param, 1, &s, &y[i], NULL, &gi, &li)
            hi = fr_loss_curv(loss, loss_param, s, y[i])
            deriv[i] = gi
            curv[i] = hi
            ci = sample_weight[i] if weighted else 1.0
            value += ci * li
            d1 += ci * gi * z[i]
            d2 += ci * hi * z[i] * z[i]
    return value, d1, d2


def step_dual(int loss, double loss_param, const double[::1] a_old, const double[::1] h_old,
              const double[::1] df, const double[::1] a_new, const double[::1] y,
              double[::1] conj, double[::1] shift):
    """The dual point of a Newton step (fastrisk/solvers/_dual_gap.py, ``step_gap``), row
    by row, from a_old = l'(f_old), h_old = l''(f_old), df = f_new - f_old and
    a_new = l'(f_new): a_i = a_old,i + h_old,i df_i linearizes l' along the step;
    conj_i = l*(a_i), or where that is not finite (a_i outside the domain of l*)
    l*(a_new,i) with shift_i = a_new,i - a_i (0 on the other rows).  Returns the number
    of rows replaced."""
    cdef Py_ssize_t i, n = a_old.shape[0], replaced = 0
    cdef double a, cj
    if not 0 <= loss < FR_N_LOSSES:
        raise ValueError(f"loss id must be in [0, {FR_N_LOSSES}), got {loss}")
    if h_old.shape[0] != n or df.shape[0] != n or a_new.shape[0] != n or y.shape[0] != n \
            or conj.shape[0] != n or shift.shape[0] != n:
        raise ValueError("a_old, h_old, df, a_new, y, conj and shift must have the same "
                         "length")
    with nogil:
        for i in range(n):
            a = a_old[i] + h_old[i] * df[i]
            fr_loss_conj_batch(loss, loss_param, 1, &a, &y[i], &cj)
            shift[i] = 0.0
            if not isfinite(cj):
                fr_loss_conj_batch(loss, loss_param, 1, &a_new[i], &y[i], &cj)
                shift[i] = a_new[i] - a
                replaced += 1
            conj[i] = cj
    return replaced
