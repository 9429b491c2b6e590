# cython: language_level=3
"""SDCA epoch kernels (docs/math.md §7; Takac, Bijral, Richtarik & Srebro 2013).

Dual variables ``u`` (one per row, ``u_i = -l'(f_i, y_i)`` at the optimum)
and ``v = (1 / (lambda n)) sum_i c_i u_i x_i`` are updated in place; the
primal iterate is ``w = soft(v, kappa)`` (``w = v`` for l2, ``kappa = 0``),
evaluated lazily on each row's nonzeros.  The constant feature of value
``bias`` is the last coordinate of v.  One call runs one epoch over the rows
in ``order`` without the GIL and returns

* ``loss_sum = sum c_i l(f_i, y_i)`` at the scores f_i seen before each
  row's update (a running estimate of the primal risk), and
* ``dual_sum = sum c_i (-l*(-u_i))`` at the new dual values,

so the solver forms the duality gap without another pass.  Status codes
(fr_loss.h) are returned, never raised, inside the kernels.
"""

import numpy as np
from cython cimport floating
from cython.parallel cimport parallel, prange, threadid
from libc.math cimport INFINITY, fabs, isfinite, pow
from libc.stdint cimport int64_t, uint64_t

from fr_rows cimport index_t, row_view, row_dot, row_axpy, row_sqnorm, fr_prefetch
from fr_loss cimport FR_OK, FR_ERR_OVERFLOW, FR_ERR_BAD_LOSS
from fr_split cimport (fr_split, fr_barrier, fr_exchange_sum, fr_num_threads, fr_split_bytes,
                       fr_split_end, fr_split_init, fr_split_start)

cdef extern from "fr_sdca.h" nogil:
    ctypedef double (*fr_sdca_step_fn)(double, double, double, double, double, double)
    ctypedef double (*fr_loss_fn)(double, double, double, double*)
    ctypedef double (*fr_conj_fn)(double, double, double)
    ctypedef double (*fr_sdca_grad_fn)(double, double, double, double, int*)
    ctypedef double (*fr_sdca_visit_fn)(double, double, double, double, double, double, double*,
                                        double*, double*, int*)
    fr_sdca_visit_fn fr_sdca_visit_for(int kind)
    fr_sdca_step_fn fr_sdca_step_for(int kind)
    int fr_sdca_inexact(int kind)
    fr_sdca_grad_fn fr_sdca_grad_for(int kind)
    fr_loss_fn fr_loss_for(int kind)
    fr_conj_fn fr_conj_for(int kind)
    double fr_soft_threshold(double x, double t)
    void fr_shuffle(int64_t* a, int64_t n, uint64_t* state)
    double FR_SDCA_QMIN

STATUS_OK = FR_OK
STATUS_NONFINITE = FR_ERR_OVERFLOW
STATUS_BAD_LOSS = FR_ERR_BAD_LOSS


def has_dual_step(int loss):
    """True when the loss id has a coordinate step in fr_sdca.h."""
    return fr_sdca_step_for(loss) != NULL


def has_inexact_step(int loss):
    """True when the loss's coordinate step stops at a tolerance (``step_tol``)."""
    return fr_sdca_inexact(loss) != 0


def has_dual_box(int loss):
    """True when the loss's dual is box-constrained (shrinking applies)."""
    return fr_sdca_grad_for(loss) != NULL


cdef inline double score(const floating* val, const index_t* idx, Py_ssize_t nnz,
                         const double* v, Py_ssize_t d, double bias, double kappa) noexcept nogil:
    """<w, x> with w = soft(v, kappa) and the bias feature at coordinate d."""
    cdef double s = 0.0
    cdef Py_ssize_t k
    if kappa == 0.0:
        s = row_dot(val, idx, nnz, v)
        if bias != 0.0:
            s += bias * v[d]
    else:
        for k in range(nnz):
            s += val[k] * fr_soft_threshold(v[idx[k]], kappa)
        if bias != 0.0:
            s += bias * fr_soft_threshold(v[d], kappa)
    return s


cdef inline Py_ssize_t lower_bound(const index_t* idx, Py_ssize_t nnz, Py_ssize_t x) noexcept nogil:
    """First k with idx[k] >= x in a sorted row."""
    cdef Py_ssize_t lo = 0, hi = nnz, mid
    while lo < hi:
        mid = (lo + hi) // 2
        if idx[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline double dual_g(double x, double kappa) noexcept nogil:
    """Coordinate term of g*(v) = 0.5 ||soft(v, kappa)||^2."""
    cdef double s = fr_soft_threshold(x, kappa)
    return 0.5 * s * s


def dual_step(int loss, double loss_param, const double[::1] u0, const double[::1] f,
              const double[::1] y, const double[::1] q, double tol=0.0):
    """Element-wise coordinate maximiser of -l*(-u) - (u - u0) f - q (u - u0)^2 / 2 (tests);
    ``tol``: the logistic step's tolerance on its optimality condition (fr_sdca.h)."""
    cdef Py_ssize_t i, n = u0.shape[0]
    cdef fr_sdca_step_fn step = fr_sdca_step_for(loss)
    if step == NULL:
        raise ValueError(f"loss id {loss} has no dual coordinate step")
    if f.shape[0] != n or y.shape[0] != n or q.shape[0] != n:
        raise ValueError("u0, f, y, q must have the same length")
    out = np.empty(n)
    cdef double[::1] o = out
    with nogil:
        for i in range(n):
            o[i] = step(u0[i], f[i], y[i], loss_param,
                        q[i] if q[i] > FR_SDCA_QMIN else FR_SDCA_QMIN, tol)
    return out


cdef inline void prefetch_row_state(Py_ssize_t i, const index_t* indptr, const double* y,
                                    const double* c, const double* sqnorm, const double* u,
                                    const double* row_loss, const double* row_dual) noexcept nogil:
    """Ask for the per-row scalars of a row visited soon (random rows miss every cache)."""
    fr_prefetch(&indptr[i])
    fr_prefetch(&y[i])
    fr_prefetch(&sqnorm[i])
    fr_prefetch(&u[i])
    fr_prefetch(&row_loss[i])
    fr_prefetch(&row_dual[i])
    if c != NULL:
        fr_prefetch(&c[i])


cdef inline void axpy_tracked(double a, const floating* val, const index_t* idx, Py_ssize_t nnz,
                              double* v, double bias, Py_ssize_t d, double kappa,
                              double* wsq, double* wl1) noexcept nogil:
    """v += a x (bias feature at d) with w = soft(v, kappa): ||w||^2 and ||w||_1 updated."""
    cdef Py_ssize_t k, col
    cdef double old, new, so, sn
    for k in range(nnz + (bias != 0.0)):
        if k < nnz:
            col = idx[k]
            old = v[col]
            new = old + a * val[k]
        else:
            col = d
            old = v[d]
            new = old + a * bias
        v[col] = new
        so = fr_soft_threshold(old, kappa)
        sn = fr_soft_threshold(new, kappa)
        wsq[0] += sn * sn - so * so
        wl1[0] += fabs(sn) - fabs(so)


# rows ahead of the current one whose scalars / first nonzeros are prefetched
cdef enum:
    STATE_AHEAD = 16
    ROW_AHEAD = 8


cdef inline Py_ssize_t sdca_pass(
        const floating* data, const index_t* indices, const index_t* indptr, bint dense,
        double bias, Py_ssize_t d, const double* y, const double* c, const double* sqnorm,
        int64_t* index, Py_ssize_t n_active, fr_sdca_visit_fn visit, double loss_param,
        double lam_n, double kappa, double sigma, bint local, double* u, double* v,
        double* row_loss, double* row_dual, bint shrink, double pg_max_old, double pg_min_old,
        double step_tol, double* acc, fr_split* sp) noexcept nogil:
    """Single-coordinate SDCA over the rows ``index[:n_active]`` in that order; returns the
    new n_active (shrunk rows swapped behind the active ones).

    ``local`` False: v is the shared iterate (w = soft(v, kappa)), sigma = 1.  ``local``
    True (CoCoA+, Ma et al. 2015, the local subproblem with sigma'): v is the block's
    private copy w + sigma' dv_k of the round-start w plus its scaled increments, kappa = 0;
    the curvature is sigma' q_i and the increment is added times sigma'.
    ``acc`` = [loss sum, dual sum, ||w||^2, ||w||_1, pg_max, pg_min] updated by differences
    (the norms only when not ``local``).

    ``sp`` not NULL (not ``local``): this thread is one part of a row-split pass.  Every
    part visits the same rows (``index`` is its copy of the order), scores its own
    coordinates of each row, and the parts' sum (fr_split.h) is the row's score, so
    every part takes the same step and makes the same shrinking swaps; each part adds
    the step to its own coordinates.  Each part keeps its own copies of ``u``,
    ``row_loss`` and ``row_dual`` (part 0's are the caller's), which take the same
    values, so no part reads a cache line that another writes.  With kappa > 0,
    ``acc[2]`` and ``acc[3]`` then hold this part's coordinates' share of the change
    of the norms (``shrinking_passes`` sums them); with kappa = 0, ``acc[2]`` is the
    whole ||v||^2, updated from the whole score.
    """
    cdef Py_ssize_t t = 0, i, j, nnz, klo, khi
    cdef const floating* val
    cdef const index_t* idx
    cdef double ci, f, q, unew, a, G, pg, lv, dv, u_i, loss_i, dual_i, b = bias
    cdef double loss_total = acc[0], dual_total = acc[1], wsq = acc[2], wl1 = acc[3]
    cdef double pg_max = acc[4], pg_min = acc[5]
    cdef int bound
    cdef int64_t tmp
    cdef Py_ssize_t lo = 0 if sp == NULL else sp.bounds[sp.part]
    cdef Py_ssize_t hi = d + 1 if sp == NULL else sp.bounds[sp.part + 1]
    if not lo <= d < hi:
        b = 0.0  # the constant feature belongs to another part
    while t < n_active:
        if t + STATE_AHEAD < n_active:
            prefetch_row_state(index[t + STATE_AHEAD], indptr, y, c, sqnorm, u, row_loss,
                               row_dual)
        if t + ROW_AHEAD < n_active:
            j = index[t + ROW_AHEAD]
            fr_prefetch(&data[indptr[j]])
            if not dense:
                fr_prefetch(&indices[indptr[j]])
        i = index[t]
        ci = c[i] if c != NULL else 1.0
        if ci == 0.0:
            t += 1
            continue
        nnz = row_view(data, indices, indptr, dense, i, &val, &idx)
        u_i, loss_i, dual_i = u[i], row_loss[i], row_dual[i]
        if sp == NULL:
            f = score(val, idx, nnz, v, d, b, kappa)
        else:
            klo, khi = fr_split_start(sp, i), fr_split_end(sp, i, nnz)
            val, idx, nnz = val + klo, idx + klo, khi - klo
            f = fr_exchange_sum(sp, score(val, idx, nnz, v, d, b, kappa))
        q = sigma * ci * sqnorm[i] / lam_n
        unew = visit(u_i, f, y[i], loss_param, q if q > FR_SDCA_QMIN else FR_SDCA_QMIN,
                     step_tol, &lv, &dv, &G, &bound)
        lv = ci * lv
        loss_total += lv - loss_i
        row_loss[i] = lv
        if shrink:
            pg = G
            if (bound < 0 and G < pg_min_old) or (bound > 0 and G > pg_max_old):
                n_active -= 1
                tmp = index[t]
                index[t] = index[n_active]
                index[n_active] = tmp
                continue
            if bound < 0:
                pg = G if G > 0.0 else 0.0
            elif bound > 0:
                pg = G if G < 0.0 else 0.0
            pg_max = pg if pg > pg_max else pg_max
            pg_min = pg if pg < pg_min else pg_min
        dv = ci * dv
        dual_total += dv - dual_i
        a = ci * (unew - u_i) / lam_n
        row_dual[i] = dv
        u[i] = unew
        if a != 0.0:
            if local:
                a = sigma * a
                row_axpy(a, val, idx, nnz, v)
                if b != 0.0:
                    v[d] += a * b
            elif kappa == 0.0:
                wsq += a * (2.0 * f + a * sqnorm[i])
                row_axpy(a, val, idx, nnz, v)
                if b != 0.0:
                    v[d] += a * b
            else:
                axpy_tracked(a, val, idx, nnz, v, b, d, kappa, &wsq, &wl1)
        t += 1
    acc[0], acc[1], acc[2], acc[3], acc[4], acc[5] = (loss_total, dual_total, wsq, wl1,
                                                      pg_max, pg_min)
    return n_active


cdef inline double objectives_from_sums(const double* sums, Py_ssize_t n, double lam,
                                        double kappa, double* D) noexcept nogil:
    """The primal and dual objectives from the running sums of an SDCA epoch (sum of the
    rows' losses, sum of their dual terms, ||w||^2, ||w||_1; msdca's epochs keep the same
    four): returns P = sum l / n + lam (||w||^2 / 2 + kappa ||w||_1), D gets
    sum (-l*) / n - lam ||w||^2 / 2."""
    D[0] = sums[1] / n - 0.5 * lam * sums[2]
    return sums[0] / n + lam * (0.5 * sums[2] + kappa * sums[3])


def estimated_objectives(const double[::1] sums, Py_ssize_t n, double lam, double kappa):
    """(estimated P, D) from ``sums`` (``objectives_from_sums``), in O(1)."""
    cdef double P, D
    if sums.shape[0] != 4 or n <= 0:
        raise ValueError("sums must have 4 entries and n must be positive")
    P = objectives_from_sums(&sums[0], n, lam, kappa, &D)
    return P, D


cdef inline Py_ssize_t shrinking_passes(
        const floating* data, const index_t* indices, const index_t* indptr, bint dense,
        double bias, Py_ssize_t d, const double* y, const double* c, const double* sqnorm,
        int64_t* index, Py_ssize_t size, Py_ssize_t n_active, uint64_t* rng,
        fr_sdca_visit_fn visit, double loss_param, double lam_n, double kappa, double sigma,
        bint local, double* u, double* v, double* row_loss, double* row_dual, bint shrink,
        double* pg, double step_tol, double gap_tol, double gap_abs, double* acc,
        fr_split* sp) noexcept nogil:
    """SDCA passes (``sdca_pass``) over the active rows of a set of ``size`` rows
    ``index[:size]``, each shuffled first (unless ``rng`` is NULL) and followed by
    LIBLINEAR's shrinking bookkeeping (Hsieh et al. 2008, Algorithm 3), until the passes
    add up to ``size`` row visits.  Without ``shrink``: one pass.

    pg = [pg_max_old, pg_min_old, eps] carries the bookkeeping from call to call: a pass
    shrinks against the previous pass's extreme projected gradients (+-inf: none); when
    a pass's range pg_max - pg_min is at most eps while rows are shrunk, the shrunk
    problem is solved to eps, all rows come back (n_active = size), eps drops tenfold and
    the passes stop (eps NaN: set to a tenth of the first pass's range).  With
    ``gap_tol >= 0`` (the shared iterate, not ``local``) the passes also stop once the
    duality gap estimated from the running sums ``acc`` (``sdca_epoch``) is at most
    max(gap_tol |P|, gap_abs).  Returns the new n_active; acc[6] counts the row visits.

    ``sp`` (a part of a row-split pass, see ``sdca_pass``; every part calls this with
    its own ``acc`` and ``pg``, which stay equal): part 0 shuffles ``index`` and the
    other parts copy it into their ``sp.order`` between two barriers; after each pass
    the parts' shares of the norms' change are summed.
    """
    cdef Py_ssize_t visits = 0, k
    cdef double P, D, sq0, l10
    cdef int64_t* order = index
    while True:
        visits += n_active
        if rng != NULL and (sp == NULL or sp.part == 0):
            fr_shuffle(index, n_active, rng)
        if sp != NULL:
            fr_barrier()
            if sp.part > 0:
                order = sp.order
                for k in range(size):
                    order[k] = index[k]
            fr_barrier()
        acc[4] = -INFINITY
        acc[5] = INFINITY
        sq0, l10 = acc[2], acc[3]
        n_active = sdca_pass(data, indices, indptr, dense, bias, d, y, c, sqnorm, order,
                             n_active, visit, loss_param, lam_n, kappa, sigma, local, u, v,
                             row_loss, row_dual, shrink, pg[0], pg[1], step_tol, acc, sp)
        if sp != NULL and kappa != 0.0:
            acc[2] = sq0 + fr_exchange_sum(sp, acc[2] - sq0)
            acc[3] = l10 + fr_exchange_sum(sp, acc[3] - l10)
        if not shrink:
            break
        if pg[2] != pg[2]:
            pg[2] = 0.1 * (acc[4] - acc[5])
        if acc[4] - acc[5] <= pg[2] and n_active < size:
            n_active = size
            pg[0] = INFINITY
            pg[1] = -INFINITY
            pg[2] = 0.1 * pg[2]
            break
        pg[0] = acc[4] if acc[4] > 0.0 else INFINITY
        pg[1] = acc[5] if acc[5] < 0.0 else -INFINITY
        if visits >= size:
            break
        if gap_tol >= 0.0:
            P = objectives_from_sums(acc, size, lam_n / size, kappa, &D)
            if P - D <= max(gap_tol * fabs(P), gap_abs):
                break
    acc[6] = visits
    return n_active


def row_cuts(const index_t[::1] indices, const index_t[::1] indptr, bint dense,
             const int64_t[::1] parts):
    """(len(parts) - 2, n_rows) array: row i's stored entries below the coordinate
    parts[p + 1] (its entries are sorted), the row-split epoch's boundary between parts
    p and p + 1 (``sdca_epoch``); the constant feature, the last coordinate, is stored in
    no row.  One binary search per row and boundary, once per solve instead of per
    visit."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, P = parts.shape[0] - 1, i, p, nnz
    out_ = np.empty((max(P - 1, 0), n), dtype=np.int64)
    cdef int64_t[:, ::1] out = out_
    cdef const index_t* idx
    with nogil:
        for p in range(P - 1):
            for i in range(n):
                nnz = indptr[i + 1] - indptr[i]
                idx = &indices[0] if dense else &indices[indptr[i]]
                out[p, i] = lower_bound(idx, nnz, parts[p + 1])
    return out_


cdef Py_ssize_t split_passes(
        const floating* data, const index_t* indices, const index_t* indptr, bint dense,
        double bias, Py_ssize_t d, const double* y, const double* c, const double* sqnorm,
        int64_t[::1] index, Py_ssize_t n_active, uint64_t* rng, fr_sdca_visit_fn visit,
        double loss_param, double lam_n, double kappa, double[::1] u, double* v,
        double[::1] row_loss, double[::1] row_dual, bint shrink, double[::1] pg,
        double step_tol, double gap_tol, double gap_abs, double* acc,
        const int64_t[::1] parts, const int64_t[:, ::1] cuts):
    """``shrinking_passes`` as a row-split pass on len(parts) - 1 threads (``sdca_epoch``):
    each part gets its fr_split, copies of ``acc`` and ``pg``, of the rows' u, row_loss
    and row_dual (4 n doubles with its row order), all equal on every part at the end:
    part 0's are kept."""
    cdef int P = <int>parts.shape[0] - 1, part
    cdef Py_ssize_t n = index.shape[0], k
    cdef Py_ssize_t[::1] result = np.full(1, n_active, dtype=np.intp)
    cdef int64_t[:, ::1] orders = np.empty((P, n), dtype=np.int64)
    cdef double[:, :, ::1] rows = np.tile(np.stack([u, row_loss, row_dual]), (P, 1, 1))
    cdef double[:, ::1] accs = np.tile([acc[k] for k in range(7)], (P, 1))
    cdef double[:, ::1] pgs = np.tile(pg, (P, 1))
    cdef unsigned char[::1] raw = np.zeros(fr_split_bytes(P, 1), dtype=np.uint8)
    cdef unsigned char[::1] mem = np.empty(P * sizeof(fr_split), dtype=np.uint8)
    cdef fr_split* splits = <fr_split*>&mem[0]
    fr_split_init(splits, P, &parts[0], &cuts[0, 0], cuts.shape[1], &raw[0])
    for part in range(P):
        splits[part].order = &orders[part, 0]
    with nogil, parallel(num_threads=P):
        part = threadid()
        if fr_num_threads() == P:
            k = shrinking_passes(data, indices, indptr, dense, bias, d, y, c, sqnorm,
                                 &index[0], n, n_active, rng, visit, loss_param, lam_n,
                                 kappa, 1.0, False, &rows[part, 0, 0], v, &rows[part, 1, 0],
                                 &rows[part, 2, 0], shrink, &pgs[part, 0], step_tol, gap_tol,
                                 gap_abs, &accs[part, 0], &splits[part])
        elif part == 0:  # fewer threads than parts: the whole rows on one
            k = shrinking_passes(data, indices, indptr, dense, bias, d, y, c, sqnorm,
                                 &index[0], n, n_active, rng, visit, loss_param, lam_n,
                                 kappa, 1.0, False, &rows[0, 0, 0], v, &rows[0, 1, 0],
                                 &rows[0, 2, 0], shrink, &pgs[0, 0], step_tol, gap_tol,
                                 gap_abs, &accs[0, 0], NULL)
        if part == 0:
            result[0] = k
    u[:], row_loss[:], row_dual[:] = rows[0, 0], rows[0, 1], rows[0, 2]
    for k in range(7):
        acc[k] = accs[0, k]
    pg[:] = pgs[0]
    return result[0]


def sdca_epoch(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
               bint dense, double bias, const double[::1] y, const double[::1] sample_weight,
               const double[::1] sqnorm, int64_t[::1] index, Py_ssize_t n_active,
               uint64_t[::1] rng, int loss, double loss_param, double lam_n, double kappa,
               double[::1] u, double[::1] v, double[::1] row_loss, double[::1] row_dual,
               double[::1] sums, bint shrinking, double[::1] pg, double gap_tol=-1.0,
               double gap_abs=0.0, double step_tol=0.0, const int64_t[::1] parts=None,
               const int64_t[:, ::1] cuts=None):
    """One epoch of single-coordinate SDCA over the rows ``index`` (active rows
    ``index[:n_active]`` first): ``shrinking_passes`` over all of them.

    When ``rng`` (one uint64 state) is not empty the active rows are shuffled in place
    (``fr_shuffle``) before each pass; else they are visited as given.
    Row i: f = <w, x_i>, u_i <- step(u_i, f, q_i) with
    q_i = c_i ||x_i||^2 / (lambda n), then v += c_i (u_i_new - u_i) x_i / (lambda n);
    ``step_tol`` is the tolerance of the inexact logistic step (fr_sdca.h).
    ``sample_weight`` is empty for unit weights; rows of weight 0 are skipped.
    Each visited row stores its terms ``row_loss[i] = c_i l(f, y_i)`` and
    ``row_dual[i] = c_i (-l*(-u_i))``; ``sums`` = [sum row_loss, sum row_dual,
    ||w||^2, ||w||_1] is kept up to date by differences (||w||^2 from
    ||v + a x||^2 = ||v||^2 + 2 a f + a^2 ||x||^2 for l2), so the solver forms
    the estimated duality gap without touching all rows or coordinates.

    Shrinking (LIBLINEAR, Hsieh et al. 2008), when ``shrinking`` and the loss
    has a box-constrained dual: a row at an end of its box whose ascent
    direction G points outside by more than the largest violation of the
    previous pass (``pg[0]``, ``pg[1]``) is not updated and is swapped behind the
    active rows; ``pg`` (3 entries) as in ``shrinking_passes``, which also gives the
    passes' stop on the estimated gap (``gap_tol``, ``gap_abs``; gap_tol < 0: none).
    Returns (n_active, row visits, status); ``index`` stays a permutation of its entries.

    ``parts`` (P + 1 increasing coordinate bounds from 0 to len(v), P > 1) and ``cuts``
    (``row_cuts(..., parts)``, made here when None): the epoch runs on P threads, thread
    p owning the coordinates [parts[p], parts[p + 1]) of v (``sdca_pass``'s row-split
    pass): the same rows, steps and shrinking as one thread, each row's score summed
    over the parts in order, so the bits depend on ``parts`` only.  If OpenMP grants
    fewer than P threads, the epoch runs on one.
    """
    cdef Py_ssize_t d = v.shape[0] - (bias != 0.0), n = index.shape[0]
    cdef const double* c = &sample_weight[0] if sample_weight.shape[0] > 0 else NULL
    cdef double acc[7]
    cdef fr_sdca_visit_fn visit = fr_sdca_visit_for(loss)
    cdef bint shrink = shrinking and fr_sdca_grad_for(loss) != NULL
    cdef int P = 1 if parts is None else <int>parts.shape[0] - 1
    cdef Py_ssize_t k
    cdef uint64_t* state = &rng[0] if rng.shape[0] > 0 else NULL
    if visit == NULL:
        return n_active, 0, FR_ERR_BAD_LOSS
    if (u.shape[0] != y.shape[0] or sqnorm.shape[0] != y.shape[0]
            or row_loss.shape[0] != y.shape[0] or row_dual.shape[0] != y.shape[0]):
        raise ValueError("u, y, sqnorm, row_loss and row_dual must have one entry per row")
    if n_active < 0 or n_active > n or n == 0 or sums.shape[0] != 4 or pg.shape[0] != 3:
        raise ValueError("n_active must be in [0, len(index)], len(index) > 0, sums must "
                         "have 4 entries and pg 3")
    if P > 1 and (parts[0] != 0 or parts[P] != v.shape[0]
                  or any(parts[k + 1] < parts[k] for k in range(P))):
        raise ValueError("parts must increase from 0 to len(v)")
    if P > 1 and cuts is None:
        cuts = row_cuts(indices, indptr, dense, parts)
    if P > 1 and (cuts.shape[0] != P - 1 or cuts.shape[1] != y.shape[0]):
        raise ValueError("cuts must be row_cuts(..., parts): (len(parts) - 2, n_rows)")
    acc[0], acc[1], acc[2], acc[3] = sums[0], sums[1], sums[2], sums[3]
    if P == 1:
        with nogil:
            n_active = shrinking_passes(&data[0], &indices[0], &indptr[0], dense, bias, d,
                                        &y[0], c, &sqnorm[0], &index[0], n, n_active, state,
                                        visit, loss_param, lam_n, kappa, 1.0, False, &u[0],
                                        &v[0], &row_loss[0], &row_dual[0], shrink, &pg[0],
                                        step_tol, gap_tol, gap_abs, acc, NULL)
    else:
        n_active = split_passes(&data[0], &indices[0], &indptr[0], dense, bias, d, &y[0], c,
                                &sqnorm[0], index, n_active, state, visit, loss_param,
                                lam_n, kappa, u, &v[0], row_loss, row_dual, shrink, pg,
                                step_tol, gap_tol, gap_abs, acc, parts, cuts)
    sums[0], sums[1], sums[2], sums[3] = acc[0], acc[1], acc[2], acc[3]
    if not (isfinite(acc[0]) and isfinite(acc[1]) and isfinite(acc[2])):
        return n_active, <Py_ssize_t>acc[6], FR_ERR_OVERFLOW
    return n_active, <Py_ssize_t>acc[6], FR_OK


def sdca_cocoa_round(const floating[::1] data, const index_t[::1] indices,
                     const index_t[::1] indptr, bint dense, double bias, const double[::1] y,
                     const double[::1] sample_weight, const double[::1] sqnorm,
                     int64_t[::1] index, const int64_t[::1] block_bounds,
                     int64_t[::1] n_active, uint64_t[::1] rng, double[:, ::1] pg, int loss,
                     double loss_param, double lam_n, double[::1] u, double[:, ::1] local,
                     double[::1] row_loss, double[::1] row_dual, double[::1] sums,
                     bint shrinking, double step_tol, int n_threads):
    """One round of CoCoA+ (Ma, Smith, Jaggi, Jordan, Richtarik & Takac 2015, Algorithm 1
    with gamma = 1, sigma' = K) over K = len(block_bounds) - 1 row blocks, l2 penalty
    (w = v), in ONE parallel region.

    Block k is ``index[block_bounds[k]:block_bounds[k + 1]]``, its active rows first
    (``n_active[k]``); it belongs to thread k mod (threads), shuffles with its own state
    ``rng[k]`` and keeps its own shrinking state ``pg[k]`` (see ``shrinking_passes``).  Its
    local solver is single-coordinate SDCA on the local subproblem G_k^sigma' (the paper's
    (10)): scores <w + sigma' dw_k, x_i> and curvature sigma' q_i, on the private row
    ``local[k]``, which holds w on entry and w + sigma' dw_k after the block's passes.
    After one barrier every thread merges fixed ranges of coordinates: the new
    w_j = w_j + sum_k dw_k,j = (sum_k local[k, j]) / K (k in order), written back to every
    row, so ``local[0]`` is the solver's v.  The bits depend on K only, not on the
    threads that run the blocks.

    With sigma' = K the sum of the local objectives bounds the dual from below (the
    paper's Lemma 3), so a round that raises them raises D(u).  ``sums`` as in
    ``sdca_epoch``: [0], [1] updated by the blocks' differences (in block order), [2]
    (||w||^2) recomputed in the merge.  Returns (row visits, status).
    """
    cdef Py_ssize_t K = block_bounds.shape[0] - 1, D = local.shape[1], d = D - (bias != 0.0)
    cdef const double* c = &sample_weight[0] if sample_weight.shape[0] > 0 else NULL
    cdef fr_sdca_visit_fn visit = fr_sdca_visit_for(loss)
    cdef bint shrink = shrinking and fr_sdca_grad_for(loss) != NULL
    cdef Py_ssize_t blk, k, j, lo, hi
    cdef int tid, nt
    cdef double s, sq, total_sq = 0.0, visits = 0.0, sigma = <double>K, inv_k = 1.0 / K
    if visit == NULL:
        return 0, FR_ERR_BAD_LOSS
    if (u.shape[0] != y.shape[0] or sqnorm.shape[0] != y.shape[0]
            or row_loss.shape[0] != y.shape[0] or row_dual.shape[0] != y.shape[0]):
        raise ValueError("u, y, sqnorm, row_loss and row_dual must have one entry per row")
    if (K < 1 or block_bounds[0] != 0 or block_bounds[K] != index.shape[0]
            or n_active.shape[0] != K or rng.shape[0] != K or pg.shape[0] != K
            or pg.shape[1] != 3 or local.shape[0] != K or sums.shape[0] != 4
            or n_threads < 1):
        raise ValueError("block_bounds, n_active, rng, pg, local, sums and n_threads are "
                         "inconsistent")
    for blk in range(K):
        if not 0 < block_bounds[blk + 1] - block_bounds[blk] >= n_active[blk] >= 0:
            raise ValueError("blocks must not be empty and n_active[k] in [0, size of block k]")
    acc_ = np.zeros((K, 7))
    norms_ = np.zeros(K)
    cdef double[:, ::1] acc = acc_
    cdef double[::1] norms = norms_
    with nogil, parallel(num_threads=n_threads):
        tid = threadid()
        nt = fr_num_threads()
        for blk in range(K):
            if blk % nt != tid:  # block blk belongs to thread blk mod nt
                continue
            lo = block_bounds[blk]
            n_active[blk] = shrinking_passes(
                &data[0], &indices[0], &indptr[0], dense, bias, d, &y[0], c, &sqnorm[0],
                &index[lo], block_bounds[blk + 1] - lo, n_active[blk], &rng[blk], visit,
                loss_param, lam_n, 0.0, sigma, True, &u[0], &local[blk, 0], &row_loss[0],
                &row_dual[0], shrink, &pg[blk, 0], step_tol, -1.0, 0.0, &acc[blk, 0], NULL)
        fr_barrier()
        # the merge, coordinate range blk of K (fixed ranges: the same bits on any threads)
        for blk in range(K):
            if blk % nt != tid:
                continue
            lo = blk * D // K
            hi = (blk + 1) * D // K
            sq = 0.0
            for j in range(lo, hi):
                s = local[0, j]
                for k in range(1, K):
                    s = s + local[k, j]
                s = s * inv_k
                for k in range(K):
                    local[k, j] = s
                sq = sq + s * s
            norms[blk] = sq
    for blk in range(K):
        sums[0] += acc[blk, 0]
        sums[1] += acc[blk, 1]
        total_sq += norms[blk]
        visits += acc[blk, 6]
    sums[2] = total_sq
    if not (isfinite(sums[0]) and isfinite(sums[1]) and isfinite(sums[2])):
        return <Py_ssize_t>visits, FR_ERR_OVERFLOW
    return <Py_ssize_t>visits, FR_OK


def dual_terms(const double[::1] y, const double[::1] sample_weight, const double[::1] u,
               int loss, double loss_param, double[::1] out):
    """out[i] = c_i (-l*(-u_i)); returns their sum (in row order)."""
    cdef Py_ssize_t i, n = y.shape[0]
    cdef const double* c = &sample_weight[0] if sample_weight.shape[0] > 0 else NULL
    cdef fr_conj_fn conj = fr_conj_for(loss)
    cdef double total = 0.0
    if conj == NULL:
        raise ValueError(f"loss id {loss} has no conjugate")
    if u.shape[0] != n or out.shape[0] != n:
        raise ValueError("y, u and out must have the same length")
    with nogil:
        for i in range(n):
            out[i] = -(c[i] if c != NULL else 1.0) * conj(-u[i], y[i], loss_param)
            total += out[i]
    return total


cdef inline void batch_partial_scores(
        const floating* data, const index_t* indices, const index_t* indptr, bint dense,
        const int64_t* rows, Py_ssize_t nb, Py_ssize_t lo_col, Py_ssize_t hi_col,
        Py_ssize_t D, Py_ssize_t d, double bias, double kappa, const double* v,
        int64_t* ranges, double* partial) noexcept nogil:
    """Phase 1, one block [lo_col, hi_col): each batch row's score over the block's
    coordinates into partial[j], and the row's nonzero range in the block into ranges."""
    cdef Py_ssize_t j, i, nnz, klo, khi
    cdef const floating* val
    cdef const index_t* idx
    for j in range(nb):
        i = rows[j]
        val = &data[indptr[i]]
        idx = &indices[0] if dense else &indices[indptr[i]]
        nnz = indptr[i + 1] - indptr[i]
        klo = lower_bound(idx, nnz, lo_col) if lo_col > 0 else 0
        khi = lower_bound(idx, nnz, hi_col) if hi_col < D else nnz
        ranges[2 * j] = klo
        ranges[2 * j + 1] = khi
        partial[j] = score(val + klo, idx + klo, khi - klo, v, d,
                           bias if lo_col <= d < hi_col else 0.0, kappa)


cdef inline double batch_deltas(
        double loss_sum, bint count_loss, const int64_t* rows, Py_ssize_t nb,
        const double* partial, int n_blocks, Py_ssize_t b, const double* c,
        const double* sqnorm, const double* y, const double* u, double beta, double gamma,
        double lam_n, fr_sdca_visit_fn visit, double step_tol, double loss_param,
        double* unew, double* dnew) noexcept nogil:
    """Phase 2: the new duals of the batch from the scores summed in block order (every
    thread computes the same ones) and their conjugate terms -l*(-u_i) in dnew (the
    visit of sdca_epoch); returns loss_sum plus, when ``count_loss``, the batch's
    sum c_i l(f_i, y_i) (added row by row, in order)."""
    cdef Py_ssize_t j, i
    cdef int blk, bound
    cdef double ci, f, q, lv, G
    for j in range(nb):
        i = rows[j]
        ci = c[i] if c != NULL else 1.0
        if ci == 0.0:
            unew[j] = u[i]
            dnew[j] = 0.0
            continue
        f = partial[j]
        for blk in range(1, n_blocks):
            f = f + partial[blk * b + j]
        q = (beta * ci * sqnorm[i] + gamma / ci) / lam_n
        unew[j] = visit(u[i], f, y[i], loss_param, q if q > FR_SDCA_QMIN else FR_SDCA_QMIN,
                        step_tol, &lv, &dnew[j], &G, &bound)
        if count_loss:
            loss_sum = loss_sum + ci * lv
    return loss_sum


cdef inline Py_ssize_t block_update(
        const floating* data, const index_t* indices, const index_t* indptr, bint dense,
        const int64_t* rows, Py_ssize_t nb, const int64_t* ranges, Py_ssize_t lo_col,
        Py_ssize_t hi_col, Py_ssize_t d, double bias, const double* c, const double* u,
        const double* unew, double lam_n, double* v, bint adaptive, unsigned char* seen,
        int64_t* touched, double* old) noexcept nogil:
    """Phase 3, one block: v += (c_i (unew_i - u_i) / (lambda n)) x_i on the block's
    coordinates; the aggressive variant first records each touched coordinate's value
    (touched/old, ``seen`` marks them).  Returns the number of touched coordinates."""
    cdef Py_ssize_t j, i, k, klo, khi, col, cnt = 0
    cdef bint has_bias = bias != 0.0 and lo_col <= d < hi_col
    cdef double a
    cdef const floating* val
    cdef const index_t* idx
    for j in range(nb):
        i = rows[j]
        a = (c[i] if c != NULL else 1.0) * (unew[j] - u[i]) / lam_n
        if a == 0.0:
            continue
        val = &data[indptr[i]]
        idx = &indices[0] if dense else &indices[indptr[i]]
        klo = ranges[2 * j]
        khi = ranges[2 * j + 1]
        if adaptive:  # first touch of a coordinate in this batch: keep its value
            for k in range(klo, khi + has_bias):
                col = idx[k] if k < khi else d
                if not seen[col]:
                    seen[col] = 1
                    touched[cnt] = col
                    old[cnt] = v[col]
                    cnt = cnt + 1
        row_axpy(a, val + klo, idx + klo, khi - klo, v)
        if has_bias:
            v[d] += a * bias
    return cnt


cdef inline void block_change(const int64_t* touched, const double* old, Py_ssize_t cnt,
                              unsigned char* seen, const double* v, double kappa,
                              double* change) noexcept nogil:
    """Aggressive variant, one block: ||v_new - v_old||^2 and the change of g*(v) over
    the touched coordinates (and clears their ``seen`` marks)."""
    cdef Py_ssize_t k, col
    cdef double sq = 0.0, dg = 0.0
    for k in range(cnt):
        col = touched[k]
        seen[col] = 0
        sq = sq + (v[col] - old[k]) * (v[col] - old[k])
        dg = dg + (dual_g(v[col], kappa) - dual_g(old[k], kappa))
    change[0] = sq
    change[1] = dg


cdef inline bint aggressive_decision(
        const double* change, int n_blocks, const int64_t* rows, Py_ssize_t nb,
        const double* c, const double* sqnorm, const double* y, const double* u,
        const double* unew, fr_conj_fn conj, double loss_param, double lam_n, double omega,
        double* beta) noexcept nogil:
    """Aggressive variant, after the second barrier: every thread adds the blocks' sums
    in block order and takes the same decision.  beta follows the measured interaction
    rho (raised at once, lowered geometrically); returns True when the batch lowered the
    dual and must be undone: n (D(new) - D(old)) = sum c_i (-l*) changes
    - lambda n (g*(v_new) - g*(v_old))."""
    cdef Py_ssize_t j, i
    cdef int blk
    cdef double sq = 0.0, dg = 0.0, gain = 0.0, denom = 0.0, ci, rho
    for blk in range(n_blocks):
        sq = sq + change[2 * blk]
        dg = dg + change[2 * blk + 1]
    for j in range(nb):
        i = rows[j]
        ci = c[i] if c != NULL else 1.0
        if ci == 0.0:
            continue
        gain = gain + ci * (conj(-u[i], y[i], loss_param) - conj(-unew[j], y[i], loss_param))
        denom = denom + ci * ci * (unew[j] - u[i]) * (unew[j] - u[i]) * sqnorm[i]
    if denom > 0.0:
        rho = lam_n * lam_n * sq / denom
        rho = 1.0 if rho < 1.0 else (<double>nb if rho > nb else rho)
        if rho > beta[0]:
            beta[0] = rho
        else:
            beta[0] = pow(beta[0], 1.0 - omega) * pow(rho, omega)
    return gain - lam_n * dg < 0.0


cdef inline double batch_dual_sum(double dual_sum, const int64_t* rows, Py_ssize_t nb,
                                  const double* c, const double* dnew) noexcept nogil:
    """dual_sum plus the batch's sum c_i (-l*(-u_i)) at its new duals (in row order)."""
    cdef Py_ssize_t j, i
    cdef double ci
    for j in range(nb):
        i = rows[j]
        ci = c[i] if c != NULL else 1.0
        if ci != 0.0:
            dual_sum = dual_sum + ci * dnew[j]
    return dual_sum


def sdca_minibatch_epoch(const floating[::1] data, const index_t[::1] indices,
                         const index_t[::1] indptr, bint dense, double bias,
                         const double[::1] y, const double[::1] sample_weight,
                         const double[::1] sqnorm, int64_t[::1] index, uint64_t[::1] rng,
                         Py_ssize_t batch_size, int loss, double loss_param, double lam_n,
                         double kappa, double[::1] u, double[::1] v, double[::1] sums,
                         double beta, double gamma, bint adaptive, double omega,
                         const int64_t[::1] col_bounds, unsigned char[::1] seen,
                         int64_t[:, ::1] touched, double[:, ::1] old, int n_threads,
                         double step_tol=0.0):
    """One pass of mini-batch SDCA: consecutive batches of ``batch_size`` rows of ``index``.

    ``index`` is shuffled first when ``rng`` (one uint64 state) is not empty.
    Every delta of a batch is computed from the same v, with curvature
    q_i = (beta c_i ||x_i||^2 + gamma / c_i) / (lambda n): naive beta = 1,
    gamma = 0; safe (separable bound of the expected interaction, docs/math.md §7)
    beta = 1 - theta, gamma = theta L with theta = (b - 1)/(n - 1),
    L = ||diag(c) X||_2^2.

    Coordinates are split into the blocks [col_bounds[k], col_bounds[k + 1]);
    block k belongs to thread k mod (threads), for the whole epoch, inside ONE
    parallel region.  Per batch, each thread (1) computes the partial scores
    of the batch's rows over its blocks, (2) waits at one barrier, (3) adds
    the partial scores in block order (so every thread gets the same f_i and
    the same deltas, computed redundantly: a step is cheap next to a row) and
    updates v on its own blocks.  No other thread touches those blocks, so
    the next batch's partial scores need no further barrier.  The bits depend
    on the number of blocks only; with one block every row is summed as in
    ``sdca_epoch`` (b = 1 gives its exact iterates).  Thread 0 writes u,
    one batch late (when no thread reads those rows any more).

    The phases are the cdef inline functions above, in the order they run per batch:
    batch_partial_scores, batch_deltas, block_update (+ block_change), then for the
    aggressive variant aggressive_decision, and batch_dual_sum.

    ``adaptive`` (aggressive variant): gamma = 0 and beta is adapted after each
    batch from rho = ||sum_A c_i delta_i x_i||^2 / sum_A ||c_i delta_i x_i||^2
    clipped to [1, b]: raised to rho at once when rho > beta, else lowered
    geometrically, beta <- beta^(1 - omega) rho^omega.  A batch whose exact
    dual change is negative is undone (v restored, u unchanged).  This needs a
    second barrier per batch (the per-block sums of the change); ``seen``
    (zeros, length of v), ``touched`` and ``old`` (blocks x the nonzeros of
    the b longest rows + 1) are its workspace, empty otherwise.

    ``step_tol``: the logistic step's tolerance, as in ``sdca_epoch``.

    ``sums``: [0] and [1] are set to this pass's sum c_i l(f_i, y_i) (scores
    before the update) and sum c_i (-l*(-u_i)) (new u); [2] and [3] to
    ||w||^2 and ||w||_1 (one O(D) loop after the pass).
    Returns (beta, n_undone, status).
    """
    cdef Py_ssize_t n_order = index.shape[0], b = batch_size
    cdef Py_ssize_t D = v.shape[0], d = D - (bias != 0.0)
    cdef int n_blocks = col_bounds.shape[0] - 1
    cdef const double* c = &sample_weight[0] if sample_weight.shape[0] > 0 else NULL
    cdef fr_sdca_visit_fn visit = fr_sdca_visit_for(loss)
    cdef fr_conj_fn conj = fr_conj_for(loss)
    cdef Py_ssize_t blk
    # per-thread variables of the parallel region (private because assigned in it)
    cdef int tid, nt, slot
    cdef Py_ssize_t k0, k0_prev, nb, nb_prev, j, k
    cdef double s, beta_t, loss_sum, dual_sum
    cdef bint undo
    cdef Py_ssize_t undone_t
    if visit == NULL:
        return beta, 0, FR_ERR_BAD_LOSS
    if b < 1 or n_threads < 1 or n_blocks < 1 or col_bounds[n_blocks] != D:
        raise ValueError("batch_size, n_threads and col_bounds are inconsistent")
    if u.shape[0] != y.shape[0] or sqnorm.shape[0] != y.shape[0] or sums.shape[0] != 4:
        raise ValueError("u, y and sqnorm must have one entry per row, sums 4 entries")
    if adaptive and (seen.shape[0] != D or touched.shape[0] != n_blocks
                     or old.shape[0] != n_blocks or old.shape[1] != touched.shape[1]):
        raise ValueError("seen, touched and old must be the aggressive variant's workspace")
    if b > n_order:
        b = n_order if n_order > 0 else 1
    # shared: partial scores (two batches' worth: thread 0 may start the next batch's
    # partial scores while another thread still reads this batch's), per-block row ranges,
    # new duals and their conjugate terms per thread, per-block change sums (aggressive),
    # per-thread outputs
    partial_ = np.zeros((2, n_blocks, b))
    ranges_ = np.zeros((n_blocks, b, 2), dtype=np.int64)
    unew_ = np.zeros((n_threads, b))
    dnew_ = np.zeros((n_threads, b))
    change_ = np.zeros((n_blocks, 2))  # aggressive, per block: ||dv||^2, change of g*(v)
    out_ = np.zeros(4)
    count_ = np.zeros(n_blocks, dtype=np.int64)
    cdef double[:, :, ::1] partial = partial_
    cdef int64_t[:, :, ::1] ranges = ranges_
    cdef double[:, ::1] unew = unew_, dnew = dnew_, change = change_
    cdef double[::1] out = out_
    cdef int64_t[::1] count = count_
    cdef unsigned char* seen_p = &seen[0] if adaptive else NULL
    cdef int64_t* touched_p = &touched[0, 0] if adaptive else NULL
    cdef double* old_p = &old[0, 0] if adaptive else NULL
    cdef Py_ssize_t cap = touched.shape[1] if adaptive else 0
    with nogil:
        if rng.shape[0] > 0:
            fr_shuffle(&index[0], n_order, &rng[0])
        with parallel(num_threads=n_threads):
            tid = threadid()
            nt = fr_num_threads()
            beta_t = beta
            loss_sum = 0.0
            dual_sum = 0.0
            undone_t = 0
            k0_prev = 0
            nb_prev = 0
            k0 = 0
            while k0 < n_order:
                nb = b if k0 + b <= n_order else n_order - k0
                slot = k0 // b % 2
                # (1) partial scores over this thread's blocks
                for blk in range(n_blocks):
                    if blk % nt != tid:  # block blk belongs to thread blk mod nt
                        continue
                    batch_partial_scores(&data[0], &indices[0], &indptr[0], dense, &index[k0],
                                         nb, col_bounds[blk], col_bounds[blk + 1], D, d, bias,
                                         kappa, &v[0], &ranges[blk, 0, 0],
                                         &partial[slot, blk, 0])
                fr_barrier()
                # thread 0: the previous batch's u, read by no thread from here on
                if tid == 0:
                    for j in range(nb_prev):
                        u[index[k0_prev + j]] = unew[0, j]
                # (2) the same deltas in every thread, (3) then v on this thread's blocks
                loss_sum = batch_deltas(loss_sum, tid == 0, &index[k0], nb,
                                        &partial[slot, 0, 0], n_blocks, b, c, &sqnorm[0],
                                        &y[0], &u[0], beta_t, gamma, lam_n, visit, step_tol,
                                        loss_param, &unew[tid, 0], &dnew[tid, 0])
                for blk in range(n_blocks):
                    if blk % nt != tid:  # block blk belongs to thread blk mod nt
                        continue
                    count[blk] = block_update(
                        &data[0], &indices[0], &indptr[0], dense, &index[k0], nb,
                        &ranges[blk, 0, 0], col_bounds[blk], col_bounds[blk + 1], d, bias, c,
                        &u[0], &unew[tid, 0], lam_n, &v[0], adaptive, seen_p,
                        touched_p + blk * cap if adaptive else NULL,
                        old_p + blk * cap if adaptive else NULL)
                    if adaptive:
                        block_change(touched_p + blk * cap, old_p + blk * cap, count[blk],
                                     seen_p, &v[0], kappa, &change[blk, 0])
                if adaptive:
                    # (4) the batch's measured interaction sets beta; a batch that lowered
                    # the dual is undone
                    fr_barrier()
                    undo = aggressive_decision(&change[0, 0], n_blocks, &index[k0], nb, c,
                                               &sqnorm[0], &y[0], &u[0], &unew[tid, 0], conj,
                                               loss_param, lam_n, omega, &beta_t)
                    if undo:
                        undone_t = undone_t + 1
                        for blk in range(n_blocks):
                            if blk % nt != tid:  # block blk belongs to thread blk mod nt
                                continue
                            for k in range(count[blk]):
                                v[touched[blk, k]] = old[blk, k]
                        for j in range(nb):
                            unew[tid, j] = u[index[k0 + j]]
                            dnew[tid, j] = -conj(-unew[tid, j], y[index[k0 + j]], loss_param)
                if tid == 0:
                    dual_sum = batch_dual_sum(dual_sum, &index[k0], nb, c, &dnew[0, 0])
                k0_prev = k0
                nb_prev = nb
                k0 = k0 + nb
            fr_barrier()  # every thread has read the last batch's u
            if tid == 0:
                for j in range(nb_prev):
                    u[index[k0_prev + j]] = unew[0, j]
                out[0] = loss_sum
                out[1] = dual_sum
                out[2] = beta_t
                out[3] = undone_t
        # ||w||^2 and ||w||_1 afresh: O(D), small next to a pass over all rows
        sums[2] = 0.0
        sums[3] = 0.0
        for k in range(D):
            s = fr_soft_threshold(v[k], kappa)
            sums[2] += s * s
            sums[3] += fabs(s)
    sums[0], sums[1] = out[0], out[1]
    if not (isfinite(sums[0]) and isfinite(sums[1]) and isfinite(sums[2])):
        return out[2], <Py_ssize_t>out[3], FR_ERR_OVERFLOW
    return out[2], <Py_ssize_t>out[3], FR_OK


def row_sqnorms(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
                bint dense, double bias, double[::1] out):
    """out[i] = ||x_i||^2 + bias^2 (the intercept feature included), in one pass; returns out."""
    cdef Py_ssize_t i, nnz, n = out.shape[0]
    cdef const floating* val
    cdef const index_t* idx
    if indptr.shape[0] != n + 1:
        raise ValueError("out must have one entry per row")
    with nogil:
        for i in range(n):
            nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
            out[i] = row_sqnorm(val, nnz) + bias * bias
    return np.asarray(out)


def primal_loss_sum(const floating[::1] data, const index_t[::1] indices,
                    const index_t[::1] indptr, bint dense, double bias, const double[::1] w,
                    const double[::1] y, const double[::1] sample_weight, int loss,
                    double loss_param, double[::1] values, int n_threads):
    """(sum_i c_i l(<w, x_i>, y_i), status): the exact primal risk times n, rows in parallel.

    The terms c_i l(<w, x_i>, y_i) are written to ``values`` and added in row order.
    """
    cdef Py_ssize_t i, nnz, n = y.shape[0], d = w.shape[0] - (bias != 0.0)
    cdef const floating* val
    cdef const index_t* idx
    cdef const double* c = &sample_weight[0] if sample_weight.shape[0] > 0 else NULL
    cdef double f, deriv, total = 0.0
    cdef fr_loss_fn lossfn = fr_loss_for(loss)
    if lossfn == NULL:
        return 0.0, FR_ERR_BAD_LOSS
    if values.shape[0] != n:
        raise ValueError("values must have one entry per row")
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="static"):
            # by assignment, so prange makes val / idx private (row_view's out-pointers would not)
            val = &data[indptr[i]]
            idx = &indices[0] if dense else &indices[indptr[i]]
            nnz = indptr[i + 1] - indptr[i]
            f = score(val, idx, nnz, &w[0], d, bias, 0.0)
            deriv = 0.0  # assigned, so private: lossfn writes it through the pointer
            values[i] = (c[i] if c != NULL else 1.0) * lossfn(f, y[i], loss_param, &deriv)
        for i in range(n):
            total += values[i]
    return total, (FR_OK if isfinite(total) else FR_ERR_OVERFLOW)
