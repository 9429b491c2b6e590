# cython: language_level=3
"""Hessian-vector products of the empirical risk (Lin, Weng & Keerthi 2008, section 3).

For a loss twice differentiable in the score, the Hessian of
``R_emp(w) = (1/m) sum_i c_i l(<w, x_i>, y_i)`` is ``(1/m) X^T D X`` with
``D_ii = c_i l''(f_i, y_i)``.  ``curvature`` computes D once per Newton
step; ``cg`` then solves the Newton system by conjugate gradient in one
call, each iteration one product ``X^T (D (X v))`` without forming the
matrix.  For losses with a kink in l'
(squared hinge, Huber, smoothed hinge) D is the generalized Hessian of
Mangasarian (2002), as in LIBLINEAR's primal Newton solver: the products
read only the rows with D_ii != 0, found once per system as runs of
consecutive rows.  With few features the long systems form
``G = X^T D X`` once (``gram``, nnz_i (nnz_i + 1) / 2 updates per row) and
multiply by G instead, O(d^2) per product (``cg``'s gram_cost).

The line search of Galli & Lin (2021) keeps ``X s`` for the
Newton direction s: ``cg`` adds up the ``X d`` its products compute on the
rows with curvature into ``X s``, ``inactive_dots`` completes the other
rows, and ``scatter`` gives the gradient ``X^T g`` of the accepted point
from its scores, together with the diagonal of the next ``X^T D X``, in one
pass.

The threading follows csrc/_oracle.pyx: nnz-balanced contiguous blocks of
rows (of the rows with curvature for the products), each thread gathers
from its own copy of v interleaved with its own accumulation buffer, and the
buffers are added in thread order, so a fixed thread count gives identical
bits on every run.
"""

import numpy as np

from cython cimport floating
from libc.math cimport isfinite, sqrt, INFINITY
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


cdef object active_runs(const index_t[::1] indptr, const double[::1] D, int n_threads):
    """The rows with D_ii != 0 (the only rows the products read) as runs of consecutive
    rows, split into n_blocks = min(n_threads, rows with curvature) blocks balanced by
    their nonzeros: (runs, bounds) with run k the rows [runs[2k], runs[2k + 1]) and block t
    the runs [bounds[t], bounds[t + 1]); bounds is None when no row has curvature.  Runs
    keep the row loop contiguous (a list of row indices costs an indirection per row)."""
    cdef Py_ssize_t n = indptr.shape[0] - 1
    if D.shape[0] != n:
        raise ValueError("D must have n_samples entries")
    if n_threads < 1:
        raise ValueError("n_threads must be >= 1")
    cdef Py_ssize_t i, n_act = 0, n_runs = 0, t = 1
    cdef double total = 0.0, done = 0.0
    with nogil:
        for i in range(n):
            if D[i] != 0.0:
                n_act += 1
                total += indptr[i + 1] - indptr[i]
    cdef int n_blocks = <int>min(n_threads, n_act)
    # each block boundary splits at most one run: n_act runs + n_blocks - 1 splits at most
    runs = np.empty(2 * (min(n_act, n - n_act + 1) + n_blocks), dtype=np.intp)
    bounds = np.zeros(n_blocks + 1, dtype=np.intp)
    if n_act == 0:
        return runs, None
    cdef Py_ssize_t[::1] r = runs, b = bounds
    cdef bint open_run = False
    with nogil:
        for i in range(n):
            if D[i] == 0.0:
                if open_run:
                    r[2 * n_runs + 1] = i
                    n_runs += 1
                    open_run = False
                continue
            if t < n_blocks and done >= total * t / n_blocks:
                if open_run:  # the block ends here: close the run, the next block opens one
                    r[2 * n_runs + 1] = i
                    n_runs += 1
                    open_run = False
                b[t] = n_runs
                t += 1
            if not open_run:
                r[2 * n_runs] = i
                open_run = True
            done += indptr[i + 1] - indptr[i]
        if open_run:
            r[2 * n_runs + 1] = n
            n_runs += 1
        while t <= n_blocks:
            b[t] = n_runs
            t += 1
    return runs, bounds


cdef void hess_runs(const floating* data, const index_t* indices, const index_t* indptr,
                    bint dense, double b, Py_ssize_t d, const double* D,
                    const Py_ssize_t* runs, Py_ssize_t lo, Py_ssize_t hi, double* vg,
                    double* xv) noexcept nogil:
    """The runs lo..hi-1 of ``active_runs``: vg[2j + 1] += (X^T (D (X v)))_j over their
    rows, v_j at vg[2j] (as in the oracle), and xv[i] = (X v)_i on those rows."""
    cdef Py_ssize_t i, k, nnz, end
    cdef const floating* val
    cdef const index_t* idx
    cdef double s
    for k in range(lo, hi):
        end = indptr[runs[2 * k + 1]]  # prefetch on through the run, as the oracle does
        for i in range(runs[2 * k], runs[2 * k + 1]):
            nnz = row_view(data, indices, indptr, dense, i, &val, &idx)
            s = row_dot_ahead(val, idx, nnz, nnz if dense else end - indptr[i], vg, 2)
            if b != 0.0:
                s += b * vg[2 * d]
            xv[i] = s
            s *= D[i]
            row_axpy_pairs(s, val, idx, nnz, vg)
            if b != 0.0:
                vg[2 * d + 1] += b * s


cdef void product(const floating* data, const index_t* indices, const index_t* indptr,
                  bint dense, double b, const double* D, const Py_ssize_t* runs,
                  const Py_ssize_t[::1] bounds, const double* v, double[::1] out,
                  double[:, ::1] workspace, double* xv) noexcept nogil:
    """out = X^T (D (X v)) over the blocks of ``active_runs`` (each thread gathers from
    its own copy of v, the buffers are added in block order); xv as in ``hess_runs``."""
    cdef Py_ssize_t Dn = out.shape[0], d = Dn - (b != 0.0), j
    cdef int t, n_blocks = <int>(bounds.shape[0] - 1)
    cdef double* vg
    for t in prange(n_blocks, num_threads=n_blocks, schedule="static", chunksize=1):
        vg = &workspace[t, 0]
        for j in range(Dn):
            vg[2 * j] = v[j]
            vg[2 * j + 1] = 0.0
        hess_runs(data, indices, indptr, dense, b, d, D, runs, bounds[t], bounds[t + 1], vg,
                  xv)
    sum_blocks(workspace, n_blocks, out)


cdef object check_workspace(double[:, ::1] workspace, Py_ssize_t Dn, int n_threads):
    if n_threads < 1 or workspace.shape[0] < n_threads or workspace.shape[1] != 2 * Dn:
        raise ValueError("workspace must have shape (n_threads, 2 len(out))")


cdef object row_blocks(const index_t[::1] indptr, const double[::1] D, double[::1] out,
                       double[:, ::1] workspace, int n_threads):
    """The argument checks and the row set-up of ``scatter``: the
    per-thread row blocks as n_blocks + 1 offsets balanced by nonzeros
    (n_blocks = min(n_threads, n_samples)), or None when X has no rows (out is then 0)."""
    cdef Py_ssize_t n = indptr.shape[0] - 1
    if D.shape[0] != n:
        raise ValueError("D must have n_samples entries")
    check_workspace(workspace, out.shape[0], n_threads)
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


cdef void gram_runs(const floating* data, const index_t* indices, const index_t* indptr,
                    bint dense, double b, Py_ssize_t d, const double* D,
                    const Py_ssize_t* runs, Py_ssize_t lo, Py_ssize_t hi,
                    double* G) noexcept nogil:
    """The runs lo..hi-1 of ``active_runs``: G[j, k] += D_ii x_ij x_ik for j <= k (the
    upper triangle of the (d + b != 0) square G, row-major) over their rows.  Column
    indices are sorted within a row (fastrisk/data.py), so k >= j is the pair's order."""
    cdef Py_ssize_t i, k, p, q, nnz, Dn = d + (b != 0.0)
    cdef const floating* val
    cdef const index_t* idx
    cdef double a
    cdef double* Gj
    for k in range(lo, hi):
        for i in range(runs[2 * k], runs[2 * k + 1]):
            nnz = row_view(data, indices, indptr, dense, i, &val, &idx)
            for p in range(nnz):
                a = D[i] * val[p]
                Gj = G + idx[p] * Dn
                for q in range(p, nnz):
                    Gj[idx[q]] += a * val[q]
                if b != 0.0:
                    Gj[d] += a * b
            if b != 0.0:
                G[d * Dn + d] += D[i] * b * b


cdef void gram(const floating* data, const index_t* indices, const index_t* indptr,
               bint dense, double b, const double* D, const Py_ssize_t* runs,
               const Py_ssize_t[::1] bounds, double[:, :, ::1] blocks,
               double[:, ::1] G) noexcept nogil:
    """G = X^T D X (both triangles) over the blocks of ``active_runs``: each thread
    accumulates its block's rows in its own square, added in block order (the same bits
    for any scheduling)."""
    cdef Py_ssize_t Dn = G.shape[0], d = Dn - (b != 0.0), j, k
    cdef int t, n_blocks = <int>(bounds.shape[0] - 1)
    cdef double acc
    cdef double* gt
    for t in prange(n_blocks, num_threads=n_blocks, schedule="static", chunksize=1):
        gt = &blocks[t, 0, 0]
        for k in range(Dn * Dn):
            gt[k] = 0.0
        gram_runs(data, indices, indptr, dense, b, d, D, runs, bounds[t], bounds[t + 1], gt)
    for j in prange(Dn, num_threads=n_blocks, schedule="static"):
        for k in range(j, Dn):
            acc = blocks[0, j, k]
            for t in range(1, n_blocks):
                acc = acc + blocks[t, j, k]
            G[j, k] = acc
            G[k, j] = acc


cdef void gram_product(const double[:, ::1] G, const double* v, double[::1] out,
                       int n_threads) noexcept nogil:
    """out = G v, each entry one thread's dot product in index order."""
    cdef Py_ssize_t j, k, Dn = G.shape[0]
    cdef double acc
    for j in prange(Dn, num_threads=n_threads, schedule="static"):
        acc = 0.0
        for k in range(Dn):
            acc = acc + G[j, k] * v[k]
        out[j] = acc


cdef void dots_runs(const floating* data, const index_t* indices, const index_t* indptr,
                    bint dense, double b, Py_ssize_t d, const Py_ssize_t* runs,
                    Py_ssize_t lo, Py_ssize_t hi, const double* v, double* out) noexcept nogil:
    """The runs lo..hi-1 of ``active_runs``: out_i = <x_i, v> (+ b v_d) on their rows."""
    cdef Py_ssize_t i, k, nnz, end
    cdef const floating* val
    cdef const index_t* idx
    for k in range(lo, hi):
        end = indptr[runs[2 * k + 1]]
        for i in range(runs[2 * k], runs[2 * k + 1]):
            nnz = row_view(data, indices, indptr, dense, i, &val, &idx)
            out[i] = row_dot_ahead(val, idx, nnz, nnz if dense else end - indptr[i], v,
                                   1) + (b * v[d] if b != 0.0 else 0.0)


cdef void active_dots(const floating* data, const index_t* indices, const index_t* indptr,
                      bint dense, double b, Py_ssize_t d, const Py_ssize_t* runs,
                      const Py_ssize_t[::1] bounds, const double* v,
                      double* out) noexcept nogil:
    """out_i = <x_i, v> (+ b v_d) on the rows of the runs of ``active_runs``, a block of
    runs per thread (``dots_runs``: row_view's out-pointers are locals of that call, so
    every thread has its own; a prange body's would be shared)."""
    cdef int t, n_blocks = <int>(bounds.shape[0] - 1)
    for t in prange(n_blocks, num_threads=n_blocks, schedule="static", chunksize=1):
        dots_runs(data, indices, indptr, dense, b, d, runs, bounds[t], bounds[t + 1], v, out)


def cg(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
       bint dense, double bias, const double[::1] D, double alpha, const double[::1] g,
       const double[::1] M, double delta, double cg_tol, Py_ssize_t max_cg,
       double finish_decrease, double finish_residual, Py_ssize_t finish_cg,
       double[::1] s, double[::1] r, double[::1] xs, double[:, ::1] workspace,
       int n_threads, double gram_cost=INFINITY, double expected=0.0):
    """Conjugate gradient on the Newton system H s = -g with
    ``H = alpha I + (1/m) X^T D X``, all iterations in one call (fastrisk/solvers/newton.py
    ``_steihaug_cg`` states the rules: Steihaug's boundary ||s|| <= delta, the diagonal
    preconditioner M (empty: none), the quadratic-model stop with cg_tol, the finishing
    residual for at most finish_cg times the cost of that stop, counted in passes over the
    rows with curvature: with G below, a product G d costs len(g)^2 / (their entries
    touched) of a pass, and the finishing runs that much longer).

    The products X^T (D (X d)) pass over the rows with curvature, touching their stored
    entries twice; ``gram_cost``: once the products so far have touched gram_cost times
    the entries that forming G = X^T D X touches (nnz_i (nnz_i + 1) / 2 per row) plus the
    gather pass it costs at the end (X s on the rows with curvature, which the products
    G d no longer give), G is formed and the further products are G d, O(len(g)^2) each
    (inf: never; 0: from the second product on).  ``expected``: the products the caller
    expects this system to take (the last system's count); G is also formed, at any
    iteration, once the products still expected would touch twice the entries of
    forming it (``expected`` 0: no forecast).

    Writes s, the residual r = -g - H s and xs = X s on the rows with D_ii != 0 (0 on
    the others); returns the number of conjugate-gradient iterations (Hessian-vector
    products).  Vector sums run in index order: the same bits on every run for a fixed
    thread count."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, Dn = g.shape[0], i, j, k, it, n_done
    cdef bint pre = M.shape[0] > 0, boundary, use_gram = False
    cdef double entries = 0.0, pairs = 0.0, nnz_i, spent = 0.0, budget = INFINITY
    cdef double inv_m, rz, rz_new, rr, gs, Q, Q_prev, dHd, step, ss, sd, dd, rad, beta
    if s.shape[0] != Dn or r.shape[0] != Dn or (pre and M.shape[0] != Dn):
        raise ValueError("s, r (and M) must have len(g) entries")
    if xs.shape[0] != n:
        raise ValueError("xs must have n_samples entries")
    if max_cg < 1 or finish_cg < 1:
        raise ValueError("max_cg and finish_cg must be >= 1")
    if n <= 0:
        raise ValueError("X must have rows")
    check_workspace(workspace, Dn, n_threads)
    runs, blocks = active_runs(indptr, D, n_threads)
    cdef const Py_ssize_t[::1] rv = runs, bounds = blocks
    cdef Py_ssize_t n_runs = 0 if blocks is None else bounds[bounds.shape[0] - 1]
    cdef double[:, ::1] vecs = np.empty((3, Dn))
    cdef double[::1] z = vecs[0], dvec = vecs[1], Hd = vecs[2]
    cdef double[::1] xv = np.empty(n)
    cdef double[:, ::1] G
    cdef double[:, :, ::1] G_blocks
    inv_m = 1.0 / n
    if gram_cost < INFINITY and n_runs > 0:
        for k in range(n_runs):
            for i in range(rv[2 * k], rv[2 * k + 1]):
                nnz_i = indptr[i + 1] - indptr[i] + (bias != 0.0)
                entries += 2.0 * nnz_i
                pairs += 0.5 * nnz_i * (nnz_i + 1.0)
        G = np.empty((Dn, Dn))
        G_blocks = np.empty((bounds.shape[0] - 1, Dn, Dn))
    with nogil:
        xs[:] = 0.0
        rz = rr = gs = 0.0
        for j in range(Dn):
            s[j] = 0.0
            r[j] = -g[j]
            z[j] = r[j] / M[j] if pre else r[j]
            dvec[j] = z[j]
            rz += r[j] * z[j]
            rr += r[j] * r[j]
        n_done = max_cg
        Q = 0.0
        for it in range(1, max_cg + 1):
            # the model at the iterate: g.s + 0.5 s.H s = 0.5 g.s (r is orthogonal to s)
            Q_prev, Q = Q, 0.5 * gs
            if rr == 0.0 or (it > 1 and (it - 1) * (Q - Q_prev) >= cg_tol * Q):
                budget = min(budget, finish_cg * spent)
                if sqrt(rr) <= finish_residual or spent > budget or -Q > finish_decrease:
                    n_done = it - 1
                    break
            if pairs > 0.0 and not use_gram and gram_cost < INFINITY and (
                    (it - 1) * entries >= gram_cost * pairs + 0.5 * entries
                    or (expected - it + 1) * entries >= 2.0 * (pairs + 0.5 * entries)):
                use_gram = True
                gram(&data[0], &indices[0], &indptr[0], dense, bias, &D[0], &rv[0], bounds,
                     G_blocks, G)
                spent += (pairs + 0.5 * entries) / entries
            if use_gram:
                gram_product(G, &dvec[0], Hd, <int>(bounds.shape[0] - 1))
                spent += <double>Dn * Dn / entries
            elif n_runs > 0:
                product(&data[0], &indices[0], &indptr[0], dense, bias, &D[0], &rv[0],
                        bounds, &dvec[0], Hd, workspace, &xv[0])
                spent += 1.0
            else:
                Hd[:] = 0.0
                spent += 1.0
            dHd = 0.0
            for j in range(Dn):
                Hd[j] = Hd[j] * inv_m + alpha * dvec[j]
                dHd += dvec[j] * Hd[j]
            step = rz / dHd
            boundary = False
            if delta < INFINITY:
                sd = ss = dd = 0.0
                for j in range(Dn):
                    sd += s[j] * dvec[j]
                    ss += s[j] * s[j]
                    dd += dvec[j] * dvec[j]
                if ss + step * (2.0 * sd + step * dd) > delta * delta:
                    # to the boundary along d instead: ||s + tau d|| = delta
                    boundary = True
                    rad = sqrt(sd * sd + dd * (delta * delta - ss))
                    step = (delta * delta - ss) / (sd + rad) if sd >= 0 else (rad - sd) / dd
            rz_new = rr = gs = 0.0
            for j in range(Dn):
                s[j] += step * dvec[j]
                r[j] -= step * Hd[j]
                z[j] = r[j] / M[j] if pre else r[j]
                rz_new += r[j] * z[j]
                rr += r[j] * r[j]
                gs += g[j] * s[j]
            if not use_gram:
                for k in range(n_runs):
                    for i in range(rv[2 * k], rv[2 * k + 1]):
                        xs[i] += step * xv[i]
            if boundary:
                n_done = it
                break
            beta = rz_new / rz
            for j in range(Dn):
                dvec[j] = z[j] + beta * dvec[j]
            rz = rz_new
        if use_gram:
            active_dots(&data[0], &indices[0], &indptr[0], dense, bias, Dn - (bias != 0.0),
                        &rv[0], bounds, &s[0], &xs[0])
    return n_done


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
    """out_i = <x_i, v> on the rows with D_ii == 0, the rows the products of ``cg``
    skip; the other entries of ``out`` are left as they are.  Each row is one thread's:
    no reduction."""
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
    the products of ``cg``."""
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


# halvings of the segment in ``step_dual``: the point found is within 2^-BISECT of its
# length from the domain's boundary, so |shift| exceeds the least by at most that
# fraction of |a_new - a|, a relative change of the same order in the gap's v term
cdef enum:
    BISECT = 10


def step_dual(int loss, double loss_param, const double[::1] a_old, const double[::1] h_old,
              const double[::1] df, const double[::1] a_new, const double[::1] y,
              double[::1] conj, double[::1] shift):
    """The dual point of a Newton step (fastrisk/solvers/_dual_gap.py, ``step_gap``), row
    by row, from a_old = l'(f_old), h_old = l''(f_old), df = f_new - f_old and
    a_new = l'(f_new): a_i = a_old,i + h_old,i df_i linearizes l' along the step;
    conj_i = l*(a_i), or where that is not finite (a_i outside the domain of l*)
    l*(b_i) with shift_i = b_i - a_i (0 on the other rows), b_i the point of the segment
    from a_new,i (inside the domain: l*(l'(f)) is finite) to a_i nearest to a_i inside
    the domain, to BISECT halvings of the segment: the dual point moves by the least
    shift, and v with it (by X^T shift / (lambda m), divided by the small lambda).
    Returns the number of rows replaced."""
    cdef Py_ssize_t i, k, n = a_old.shape[0], replaced = 0
    cdef double a, b, cj, lo, hi, mid
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
                # the domain is an interval: bisect on the finiteness of l* along the
                # segment, lo the largest fraction towards a known to be inside
                lo, hi = 0.0, 1.0
                for k in range(BISECT):
                    mid = 0.5 * (lo + hi)
                    b = a_new[i] + mid * (a - a_new[i])
                    fr_loss_conj_batch(loss, loss_param, 1, &b, &y[i], &cj)
                    if isfinite(cj):
                        lo = mid
                    else:
                        hi = mid
                b = a_new[i] + lo * (a - a_new[i])
                fr_loss_conj_batch(loss, loss_param, 1, &b, &y[i], &cj)
                shift[i] = b - a
                replaced += 1
            conj[i] = cj
    return replaced
