# cython: language_level=3
"""Multiclass SDCA epoch kernels (Shalev-Shwartz & Zhang 2014, prox-SDCA; docs/math.md §7).

Each row i has a dual point p_i on the k-simplex; its dual vector is
``A_i = e_{y_i} - p_i`` and ``V = (1/(lambda n)) sum_i c_i x_i A_i^T`` is kept in
the feature-major layout of fr_vec.pxd (the k entries of feature j contiguous).
The primal iterate is ``W = soft(V, kappa)`` (``W = V`` for l2).  The per-row
dual terms are ``-phi*(-A_i)``:

* softmax: the entropy ``H(p_i) = -sum_c p_ic log p_ic`` (the conjugate of
  log-sum-exp restricted to the simplex);
* multiclass hinge (Crammer & Singer 2001): ``1 - p_iy``.

V and W have ``q = block_width(k)`` columns: k rounded up to a multiple of 4
where the register-blocked row kernels of fr_vec.h cover it, the padding
columns zero, so that a row's scores and its update run in those kernels
(a block width that is not a multiple of 4 takes the scalar loops).

A coordinate step maximizes the dual in p_i with the other rows fixed, the
quadratic term of ``lambda g*`` bounded by its smoothness (exact for l2):
with s = W^T x_i and ``a = c_i ||x_i||^2 / (lambda n)``,

    max_{p in simplex}  h(p) + <s, p> - (a/2) ||p - p_old||^2,

h the row's dual term.  For the hinge, h(p) = <1 - e_y, p> + const is linear
and the step is the Euclidean projection of ``p_old + (s + 1 - e_y)/a`` onto
the simplex (the sub-problem of Keerthi et al. 2008, solved exactly by
sorting), taken over the row's active classes only (Keerthi et al. 2008, Sec. 4).
Both steps are over-relaxed: a is replaced by a / omega (Mangasarian & Musicant
1999; msdca.py's ``relaxation``).  For softmax the optimality conditions are
``log p_c + a p_c = s_c + a p_old,c - 1 - nu`` with nu the multiplier of
sum p = 1; Newton's method solves them to machine precision (in (log p, nu),
or, where that crawls, in nu alone with ``p_c = W0(a e^{r_c - nu}) / a``,
Lambert's W): the dual coordinate step of Yu, Huang & Lin 2011, over all k
coordinates of the row at once.
"""

import numpy as np
from cython cimport floating
from cython.parallel cimport parallel, prange, threadid
from libc.math cimport exp, log, fabs, INFINITY
from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, free

from fr_rows cimport index_t, row_view
from fr_vec cimport *

from fr_split cimport (fr_split, fr_exchange, fr_num_threads, fr_split_bytes, fr_split_end,
                       fr_split_init, fr_split_start)

cdef enum:
    NEWTON_MAX_ITER = 100
    JOINT_MAX_ITER = 12

# the largest |t| for which exp_small(t) rounds like exp(t)
cdef double EXP_SMALL = 1e-3
# W (or V) larger than this (a typical L2) has the blocks of the next row prefetched
cdef Py_ssize_t W_PREFETCH_BYTES = 1 << 20


def block_width(Py_ssize_t k):
    """Columns of V and W for k classes: k rounded up to a multiple of 4 when the
    register-blocked row kernels (fr_vec.h) cover it, else k."""
    cdef Py_ssize_t q = (k + 3) // 4 * 4
    return q if q <= 4 * FR_VEC_MAX_NV else k


cdef inline double soft(double v, double t) noexcept nogil:
    return v - t if v > t else (v + t if v < -t else 0.0)


cdef void project_simplex(double* v, Py_ssize_t m, double* work) noexcept nogil:
    """v <- argmin_{p in simplex} ||p - v|| (sort, then threshold; Held et al. 1974).

    The threshold tau is at least max(v) - 1 (the largest coordinate alone would
    exceed 1 otherwise), so only the coordinates above max(v) - 1 are sorted: in a
    Crammer-Singer step the others are most of them, and they end at 0.
    """
    cdef Py_ssize_t c, j, n_cand = 0
    cdef double cum = 0.0, tau = 0.0, t, mx = v[0]
    for c in range(1, m):
        if v[c] > mx:
            mx = v[c]
    for c in range(m):  # insertion sort of the candidates, descending (few)
        t = v[c]
        if t <= mx - 1.0:
            continue
        j = n_cand
        while j > 0 and work[j - 1] < t:
            work[j] = work[j - 1]
            j -= 1
        work[j] = t
        n_cand += 1
    for c in range(n_cand):
        cum += work[c]
        t = (cum - 1.0) / (c + 1)
        if work[c] - t > 0.0:
            tau = t
    for c in range(m):
        v[c] = v[c] - tau if v[c] > tau else 0.0


cdef double lambert_w_exp(double L, double w) noexcept nogil:
    """W0(e^L), the w >= 0 with w e^w = e^L, to rounding level; ``w`` > 0 is a start
    (a recent value, see softmax_step) or 0 for the cold start.

    Newton on w e^w - x (convex increasing) for e^L < 1/e, from x >= W(x),
    else on w + log w - L (concave increasing) from a lower bound: 0.2 <= W(1/e),
    and L - log L <= W(e^L) for L > 1 (Hoorfar & Hassani 2008).  From those
    sides the iterates converge monotonically.
    """
    cdef double x, dw, ew
    cdef int it
    if L < -1.0:
        x = exp(L)
        if w <= 0.0:
            w = x
        for it in range(NEWTON_MAX_ITER):
            ew = exp(w)
            dw = (w * ew - x) / (ew * (1.0 + w))
            w -= dw
            if fabs(dw) <= 4e-16 * w:
                break
        return w
    if w <= 0.0:
        w = 0.2 if L <= 1.0 else L - log(L)
    for it in range(NEWTON_MAX_ITER):
        dw = (w + log(w) - L) * w / (w + 1.0)
        w -= dw
        if fabs(dw) <= 4e-16 * w:
            break
    return w


cdef inline double exp_small(double t) noexcept nogil:
    """e^t for |t| <= EXP_SMALL by its Taylor polynomial of degree 4: the remainder,
    below |t|^5 / 120 <= 1e-17, is under half a unit in the last place."""
    return 1.0 + t * (1.0 + t * (0.5 + t * (1.0 / 6.0 + t * (1.0 / 24.0))))


cdef bint joint_newton(const double* r, double nu, Py_ssize_t k, double a, double* z,
                       double* e, double* work) noexcept nogil:
    """Newton in (z = log p, nu) on z_c + a e^{z_c} = r_c - nu, sum e^{z_c} = 1, from
    the given (z, nu) with e = e^z (the caller has it without exponentials); True when
    the residuals reach rounding level within JOINT_MAX_ITER iterations (z then holds
    log p, e = e^z).  ``work``: 2k scratch doubles.

    Eliminating dz: with h_c = p_c / (1 + a p_c), F_c the residuals and
    G = sum p - 1, dnu = (G - sum h_c F_c) / sum h_c and
    dz_c = -(F_c + dnu) / (1 + a p_c).  Cheap (k exponentials and k divisions an
    iteration) and quadratically convergent near the solution; from far away (large a,
    where p stays near p_old) it can crawl, hence the bounded iteration count.  Near the
    solution the steps dz_c are tiny and e^{z + dz} = e^z e^{dz} takes e^{dz} from its
    Taylor polynomial (exp_small) instead of an exponential.

    The step zeroes the residuals' linear part, so what it leaves is the Taylor
    remainder: a e_c (e^{dz_c} - 1 - dz_c) in F_c and sum_c e_c (e^{dz_c} - 1 - dz_c)
    in G, with e_c before the step.  As e^t - 1 - t is at most t^2 / 2 for t <= 0 and
    e^t t^2 for t >= 0, they are at most a q_c and sum_c q_c with
    q_c = max(e_c before, e_c after) dz_c^2; when those are below the rounding level
    the iteration stops without another pass to measure it.
    """
    cdef Py_ssize_t c
    cdef int it
    cdef double G, sh, shf, res, tol = 0.0, dnu, dz, h, e_old, q2, qmax, qsum
    cdef double* F = work
    cdef double* inv = work + k
    for c in range(k):
        tol = max(tol, fabs(r[c]))
    tol = 4e-16 * (1.0 + tol + a + fabs(nu))
    for it in range(JOINT_MAX_ITER):
        G = -1.0
        sh = 0.0
        shf = 0.0
        res = 0.0
        for c in range(k):
            G += e[c]
            F[c] = z[c] + a * e[c] - r[c] + nu
            res = max(res, fabs(F[c]))
            inv[c] = 1.0 / (1.0 + a * e[c])
            h = e[c] * inv[c]
            sh += h
            shf += F[c] * h
        if res <= tol and fabs(G) <= 4e-16 * k:
            return True
        dnu = (G - shf) / sh
        qmax = 0.0
        qsum = 0.0
        for c in range(k):
            dz = -(F[c] + dnu) * inv[c]
            z[c] += dz
            e_old = e[c]
            e[c] = e_old * exp_small(dz) if fabs(dz) <= EXP_SMALL else exp(z[c])
            q2 = max(e_old, e[c]) * dz * dz
            qmax = max(qmax, q2)
            qsum += q2
        nu += dnu
        if a * qmax <= tol and qsum <= 4e-16 * k:
            return True
    return False


cdef double softmax_step(const double* s, const double* p_old, double* logp, Py_ssize_t k,
                         double a, double* p, double* work) noexcept nogil:
    """p <- the softmax dual step (module docstring); returns H(p).  ``logp`` holds
    log p_old (the step's own output at the row's last visit) and gets log p;
    ``work``: 4k scratch doubles.

    With r = s + a p_old - 1: first the cheap joint Newton (joint_newton), from
    p_old when it lies inside the simplex (z = log p_old, nu = the p_old-weighted
    mean of r - z - a p_old: with a large a the step moves p little, and this
    start is within Newton's fast range), then from the a = 0 solution
    z = r - logsumexp(r); when neither converges quickly, the conditions are
    solved in nu alone:
    p_c(nu) = W0(a e^{r_c - nu}) / a (Lambert's W) and
    phi(nu) = sum_c p_c(nu) - 1 is convex and decreasing
    (phi' = -sum_c p_c / (1 + a p_c)), so Newton's method on nu converges from
    any start, monotonically after its first step.  Both start at
    nu = logsumexp(r), the a = 0 solution, and stop at rounding level (or after
    NEWTON_MAX_ITER steps: p is normalized onto the simplex anyway, so the dual
    stays feasible and the gap stays certified).  Each W starts from its value
    at the previous nu: nu first moves down, then up by ever smaller steps, so
    these starts lie below the new W or above it by less than a step of nu,
    where Newton on the concave form cannot leave w > 0 while the step is
    below 1 (a cold start otherwise).
    """
    cdef Py_ssize_t c
    cdef int it
    cdef double mx, tot, nu, dnu, phi, dphi, loga, H, t, inv_tot, pmin = INFINITY
    cdef double* r = work
    cdef double* z = work + k
    cdef bint joint = False
    mx = -INFINITY
    nu = 0.0
    for c in range(k):
        r[c] = s[c] + a * p_old[c] - 1.0
        if r[c] > mx:
            mx = r[c]
        pmin = min(pmin, p_old[c])
    if a > 0.0 and pmin > 0.0:
        for c in range(k):
            z[c] = logp[c]
            p[c] = p_old[c]
            nu += p_old[c] * (r[c] - z[c] - a * p_old[c])
        joint = joint_newton(r, nu, k, a, z, p, work + 2 * k)  # p = e^z when it converged
    if not joint:
        tot = 0.0
        for c in range(k):
            p[c] = exp(r[c] - mx)
            tot += p[c]
        nu = mx + log(tot)
        for c in range(k):
            z[c] = r[c] - nu
            p[c] = p[c] / tot
        joint = a > 0.0 and joint_newton(r, nu, k, a, z, p, work + 2 * k)
    if not joint and a > 0.0:
        loga = log(a)
        dnu = INFINITY  # cold starts in the first iteration
        for it in range(NEWTON_MAX_ITER):
            phi = -1.0
            dphi = 0.0
            for c in range(k):
                p[c] = lambert_w_exp(loga + r[c] - nu, a * p[c] if dnu < 1.0 else 0.0) / a
                phi += p[c]
                dphi -= p[c] / (1.0 + a * p[c])
            dnu = -phi / dphi
            nu += dnu
            if fabs(phi) <= 4e-16 * k or fabs(dnu) <= 4e-16 * (1.0 + fabs(nu)):
                break
    elif not joint:
        for c in range(k):
            p[c] = exp(r[c] - nu)
    tot = 0.0
    for c in range(k):
        tot += p[c]
    H = 0.0
    if joint:
        # z = log p: H(p / tot) = -(1/tot) sum_c p_c z_c + log tot, no logarithm per class;
        # the converged tot is 1 to rounding, where log tot = t - t^2/2 (t = tot - 1) to
        # within |t|^3 / 3
        t = tot - 1.0
        loga = t - 0.5 * t * t if fabs(t) <= 1e-6 else log(tot)
        inv_tot = 1.0 / tot
        for c in range(k):
            H -= p[c] * z[c]
            p[c] = p[c] * inv_tot
            logp[c] = z[c] - loga
        return H * inv_tot + loga
    for c in range(k):
        p[c] = p[c] / tot
        logp[c] = log(p[c]) if p[c] > 0.0 else -INFINITY
        if p[c] > 0.0:
            H -= p[c] * logp[c]
    return H


cdef double dual_term(int loss, const double* p, Py_ssize_t k, int64_t yi) noexcept nogil:
    """-phi*(-A) at A = e_y - p: the entropy (softmax) or 1 - p_y (hinge)."""
    cdef Py_ssize_t c
    cdef double H = 0.0
    if loss == FR_VEC_MULTICLASS_HINGE:
        return 1.0 - p[yi]
    for c in range(k):
        if p[c] > 0.0:
            H -= p[c] * log(p[c])
    return H


cdef inline void prefetch_row_start(const floating[::1] data, const index_t[::1] indices,
                                    const index_t[::1] indptr, bint dense, Py_ssize_t i,
                                    const double* P, Py_ssize_t k) noexcept nogil:
    """Prefetch row i's first FR_VEC_PREFETCH stored entries and its dual point P[i]."""
    cdef Py_ssize_t start = indptr[i], nnz = min(indptr[i + 1] - start, FR_VEC_PREFETCH)
    if nnz > 0:
        fr_prefetch_bytes(&data[start], nnz * sizeof(floating))
        if not dense:
            fr_prefetch_bytes(&indices[start], nnz * sizeof(index_t))
    fr_prefetch_bytes(P + i * k, k * sizeof(double))


cdef inline void prefetch_row_blocks(const floating[::1] data, const index_t[::1] indices,
                                     const index_t[::1] indptr, bint dense, Py_ssize_t i,
                                     Py_ssize_t skip, const double* W,
                                     Py_ssize_t k) noexcept nogil:
    """Prefetch the weight blocks of row i's first FR_VEC_PREFETCH stored entries after
    its first ``skip``."""
    cdef Py_ssize_t p, start = indptr[i] + skip
    cdef Py_ssize_t nnz = min(indptr[i + 1] - start, FR_VEC_PREFETCH)
    if dense:
        return  # the blocks of a dense row are consecutive: the hardware follows them
    for p in range(nnz):
        fr_prefetch_block(W + indices[start + p] * k, k)


cdef inline void row_scores_classes(const floating* val, const index_t* idx, Py_ssize_t nnz,
                                    double b, Py_ssize_t d, const double* wt, Py_ssize_t k,
                                    Py_ssize_t q, const int* cls, Py_ssize_t m,
                                    double* s) noexcept nogil:
    """s[c] = <x, w_c> (+ b w_{c,d}) for the m classes in ``cls`` (ascending), -inf for
    the other of the k classes: a shrunk class never attains the row's loss maximum and
    its coordinate of the projection stays 0.  Block stride q.

    Four classes per pass over the row, their sums in registers (a group short of
    four repeats its last class); the first pass prefetches each entry's block
    FR_VEC_PREFETCH entries ahead over the span of the listed classes, and the
    later passes find the blocks in cache.
    """
    cdef Py_ssize_t p, u, c0, c1, c2, c3, lo = cls[0], span = cls[m - 1] - cls[0] + 1
    cdef double x, t0, t1, t2, t3
    cdef const double* blk
    for u in range(k):
        s[u] = -INFINITY
    for u in range(0, m, 4):
        c0, c1, c2, c3 = cls[u], cls[min(u + 1, m - 1)], cls[min(u + 2, m - 1)], \
            cls[min(u + 3, m - 1)]
        t0 = t1 = t2 = t3 = 0.0
        for p in range(nnz):
            if u == 0 and p + FR_VEC_PREFETCH < nnz:
                fr_prefetch_block(wt + idx[p + FR_VEC_PREFETCH] * q + lo, span)
            x = val[p]
            blk = wt + idx[p] * q
            t0 += x * blk[c0]
            t1 += x * blk[c1]
            t2 += x * blk[c2]
            t3 += x * blk[c3]
        if b != 0.0:
            blk = wt + d * q
            t0 += b * blk[c0]
            t1 += b * blk[c1]
            t2 += b * blk[c2]
            t3 += b * blk[c3]
        s[c0], s[c1], s[c2], s[c3] = t0, t1, t2, t3


cdef void epoch_rows(const floating[::1] data, const index_t[::1] indices,
                     const index_t[::1] indptr, bint dense, double bias, const int64_t[::1] y,
                     const double[::1] sample_weight, const double[::1] sqnorm,
                     const int64_t[::1] order, int loss, double lam_n, double kappa,
                     double[:, ::1] P, double[:, ::1] logP, double[:, ::1] V,
                     double[:, ::1] W, double[::1] row_loss, double[::1] row_dual,
                     double* sums, unsigned char[::1] shrink, int[:, ::1] classes,
                     int[::1] n_classes, bint shrinking, double omega, double* buf,
                     fr_split* sp) noexcept nogil:
    """The row loop of ``msdca_epoch``; ``buf``: 12 q scratch doubles.

    ``sp`` not NULL: this thread is one part of a row-split epoch.  Every part visits
    the same rows, scores its share of each row's entries, and the parts' sums
    (fr_exchange) are the row's scores, so every part takes the same step and makes the
    same shrinking decision; each part adds the step to its own weight rows.  A part
    works on copies of the row's dual point, log dual point and active classes, read
    before the exchange; part 0 writes the new ones (and the row's terms) after it, so no
    part reads what another writes.  With kappa > 0, sums[2] and sums[3] take each part's
    share of the change, summed at the end.
    """
    cdef Py_ssize_t k = P.shape[1], q = V.shape[1], D = V.shape[0], d = D - (bias != 0)
    cdef Py_ssize_t t, i, c, nnz, n_active, e, j, u, m, kept, yi, klo = 0
    cdef const floating* val
    cdef const index_t* idx
    cdef double ci, a, scale, old, old_dual, new, xv, min_g, rl, b = bias
    cdef double sq0 = sums[2], l10 = sums[3]
    cdef double* s = buf
    cdef double* g = buf + q
    cdef double* pn = buf + 2 * q
    cdef double* z = buf + 3 * q  # 4 q scratch doubles
    cdef double* p_row = buf + 7 * q  # the split's copies of P[i] and logP[i]
    cdef double* logp_row = buf + 8 * q
    cdef int* active = <int*>(buf + 9 * q)
    cdef int* cls_row = <int*>(buf + 10 * q)
    cdef int* cls
    cdef double* pold
    cdef double* logp
    cdef bint same = &V[0, 0] == &W[0, 0], hinge = loss == FR_VEC_MULTICLASS_HINGE
    cdef bint owner = sp == NULL or sp.part == 0
    # W's blocks are prefetched only when W is larger than W_PREFETCH_BYTES: else they
    # stay in cache, and the prefetch loop's index loads are pure cost
    cdef bint far = D * q * sizeof(double) > W_PREFETCH_BYTES
    if sp != NULL and not sp.bounds[sp.part] <= d < sp.bounds[sp.part + 1]:
        b = 0.0  # the intercept's weight row belongs to another part
    for c in range(k, q):  # the padding columns' updates: zero
        g[c] = 0.0
    for t in range(order.shape[0]):
        # the rows come in random order, so the hardware cannot guess the next one:
        # two rows ahead, its first stored entries and its dual point are fetched;
        # one row ahead, the weight blocks of those entries (row_scores prefetches
        # the rest of a row from within), when W is ``far``
        if t + 2 < order.shape[0]:
            prefetch_row_start(data, indices, indptr, dense, order[t + 2], &P[0, 0], k)
        if far and t + 1 < order.shape[0]:
            j = order[t + 1]
            prefetch_row_blocks(data, indices, indptr, dense, j,
                                0 if sp == NULL else fr_split_start(sp, j), &W[0, 0], q)
        i = order[t]
        yi = y[i]
        ci = sample_weight[i] if sample_weight.shape[0] > 0 else 1.0
        nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
        m = n_classes[i] if hinge else k
        cls, pold = &classes[i, 0], &P[i, 0]
        logp = &logP[i, 0] if not hinge else NULL
        if sp != NULL:
            klo = fr_split_start(sp, i)
            nnz = fr_split_end(sp, i, nnz) - klo
            val, idx = val + klo, idx + klo
            for c in range(k):
                p_row[c] = pold[c]
            pold = p_row
            if hinge:
                for u in range(m):
                    cls_row[u] = cls[u]
                cls = cls_row
            else:
                for c in range(k):
                    logp_row[c] = logp[c]
                logp = logp_row
        old, old_dual = row_loss[i], row_dual[i]
        if m == k:
            row_scores(val, idx, nnz, nnz if far else 0, b, d, &W[0, 0], q, q, s)
        else:
            row_scores_classes(val, idx, nnz, b, d, &W[0, 0], k, q, cls, m, s)
        if sp != NULL:
            fr_exchange(sp, s, q)
        # the softmax gradient is not needed (g is the step's update below)
        rl = vector_loss_row(loss, s, k, yi, NULL, NULL, NULL, ci, g if hinge else NULL,
                             active, &n_active)
        sums[0] += rl - old
        if owner:
            row_loss[i] = rl
            shrink[i] = 0
        if hinge:
            # the classes the step would not move: p_c = 0 and g_c below every
            # g_c' with p_c' > 0 (g_c = s_c + [c != y], the dual gradient)
            min_g = INFINITY
            for u in range(m):
                c = cls[u]
                if pold[c] > 0.0:
                    min_g = min(min_g, s[c] + (c != yi))
            kept = 0
            for u in range(m):
                c = cls[u]
                if c == yi or pold[c] > 0.0 or s[c] + 1.0 >= min_g:
                    if shrinking:
                        cls[kept] = <int>c
                    kept += 1
            if shrinking:
                m = kept
                if owner:
                    n_classes[i] = <int>m
                    if sp != NULL:
                        for u in range(m):
                            classes[i, u] = cls[u]
            if kept == 1:  # p = e_y and the step leaves it there
                if owner:
                    shrink[i] = 1
                continue
        if ci == 0.0 or sqnorm[i] == 0.0:
            continue
        a = ci * sqnorm[i] / lam_n
        if hinge:
            # the projection of p_old + omega (s + 1 - e_y)/a over the active classes
            for u in range(m):
                c = cls[u]
                z[u] = pold[c] + omega * (s[c] + (c != yi)) / a
            project_simplex(z, m, z + q)
            for u in range(m):
                pn[cls[u]] = z[u]
            new = ci * (1.0 - pn[yi])
        else:
            new = ci * softmax_step(s, pold, logp, k, a / omega, pn, z)
        sums[1] += new - old_dual
        # A changes by p_old - p_new: V += c_i x_i (p_old - p_new)^T / (lambda n)
        n_active = 0
        scale = ci / lam_n
        for u in range(m):
            c = cls[u] if hinge else u
            g[c] = scale * (pold[c] - pn[c])
            pold[c] = pn[c]
            if g[c] != 0.0:
                active[n_active] = <int>c
                n_active += 1
        if owner:
            row_dual[i] = new
            if sp != NULL:
                for c in range(k):
                    P[i, c] = p_row[c]
                    if not hinge:
                        logP[i, c] = logp_row[c]
        if n_active == 0:
            continue
        if same:
            # W = V: ||W + x g^T||^2 - ||W||^2 = 2 <g, s> + ||x||^2 ||g||^2 with s = W^T x
            # the scores (||W||_1 is not needed without an l1 term)
            for u in range(n_active):
                c = active[u]
                sums[2] += g[c] * (2.0 * s[c] + sqnorm[i] * g[c])
            # only the classes whose dual moved (a hinge step moves a few of the k);
            # all of them: the whole padded block (the padding's g is 0)
            row_scatter(val, idx, nnz, b, d, g, q, q, active,
                        q if n_active == k else n_active, &V[0, 0])
        else:
            for e in range(nnz + (b != 0)):
                j = idx[e] if e < nnz else d
                xv = val[e] if e < nnz else b
                for u in range(n_active):
                    c = active[u]
                    V[j, c] += xv * g[c]
                    old = W[j, c]
                    new = soft(V[j, c], kappa)
                    W[j, c] = new
                    sums[2] += new * new - old * old
                    sums[3] += fabs(new) - fabs(old)
    if sp != NULL and not same:  # each part's share of the change of the norms
        s[0], s[1] = sums[2] - sq0, sums[3] - l10
        fr_exchange(sp, s, 2)
        sums[2], sums[3] = sq0 + s[0], l10 + s[1]


def msdca_epoch(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
                bint dense, double bias, const int64_t[::1] y, const double[::1] sample_weight,
                const double[::1] sqnorm, const int64_t[::1] order, int loss, double lam_n,
                double kappa, double[:, ::1] P, double[:, ::1] logP, double[:, ::1] V,
                double[:, ::1] W,
                double[::1] row_loss, double[::1] row_dual, double[::1] sums,
                unsigned char[::1] shrink, int[:, ::1] classes, int[::1] n_classes,
                bint shrinking, double omega, const int64_t[::1] parts=None,
                const int64_t[:, ::1] cuts=None):
    """One epoch of coordinate steps over the rows in ``order``, in place.

    Multiclass hinge rows carry an active class set (Keerthi et al. 2008, Sec. 4;
    LIBLINEAR ``-s 4``): ``classes[i, :n_classes[i]]``, ascending, always with y_i.
    A row's scores, step and update cover its active classes only.  With
    ``shrinking``, a class c leaves the set when p_ic = 0 and its dual gradient
    g_c = s_c + [c != y] is below min {g_c' : p_ic' > 0}: the step would not move it
    while W stays near (the solver restores all classes periodically and before
    every exact gap).  ``shrink[i]`` is set to 1 for a row with y_i the only class
    left (without ``shrinking``: a row at the vertex e_y whose margin
    s_y - max_{c != y} s_c exceeds 1): its dual point is e_y and its step would
    leave it there, so the solver may skip it; 0 otherwise.  Softmax rows use all k
    classes (``classes`` and ``n_classes`` are not read).  ``omega`` in (0, 2): the
    hinge step is over-relaxed, the projection of p_old + omega (s + 1 - e_y)/a
    (msdca.py's ``relaxation``; 1 is the exact step), and the softmax step is the
    same sub-problem with curvature a / omega.

    ``P`` (n, k) holds the dual points and, for softmax, ``logP`` (n, k) their
    logarithms (-inf at 0; kept by the steps: a step starts from log p_old without a
    logarithm; a (0, 0) array for the hinge), ``V`` and ``W`` (D, q) the dual sum and
    the primal iterate (the same array when kappa = 0), q = block_width(k) with zero
    padding columns.  ``row_loss[i]`` gets
    c_i phi_i at the scores before the step (over the active classes), ``row_dual[i]``
    c_i times the new dual term; ``sums`` = [sum row_loss, sum row_dual, ||W||^2,
    ||W||_1] is updated by differences, so the estimated gap costs O(1) (||W||_1 only
    when kappa > 0, the only case that uses it).

    ``parts`` (P + 1 increasing coordinate bounds from 0 to len(V), P > 1) and
    ``cuts`` (``_sdca.row_cuts`` of X's sorted rows and ``parts``): the epoch runs on P
    threads, each owning the weight rows [parts[p], parts[p + 1]) of V and W
    (``epoch_rows``): the same rows and steps as one thread, each row's scores summed
    over the parts in order, so the bits depend on ``parts`` only.  If OpenMP grants
    fewer than P threads, the epoch runs on one.
    """
    cdef Py_ssize_t k = P.shape[1], q = V.shape[1], D = V.shape[0], r
    cdef int n_parts = 1 if parts is None else <int>parts.shape[0] - 1, part
    cdef bint same = &V[0, 0] == &W[0, 0]
    cdef double* buf
    if loss not in (FR_VEC_SOFTMAX, FR_VEC_MULTICLASS_HINGE):
        raise ValueError("msdca_epoch supports the softmax and multiclass_hinge losses")
    if q != block_width(k) or W.shape[0] != D or W.shape[1] != q or (kappa != 0.0 and same):
        raise ValueError("V and W must be distinct (D, block_width(k)) arrays unless "
                         "kappa = 0")
    if (loss != FR_VEC_MULTICLASS_HINGE and (logP.shape[0] != P.shape[0]
                                             or logP.shape[1] != k)):
        raise ValueError("logP must have the shape of P for softmax")
    if shrink.shape[0] != P.shape[0] or row_loss.shape[0] != P.shape[0] \
            or row_dual.shape[0] != P.shape[0] or y.shape[0] != P.shape[0] \
            or n_classes.shape[0] != P.shape[0] or classes.shape[0] != P.shape[0] \
            or classes.shape[1] != k:
        raise ValueError("shrink, row_loss, row_dual, y, n_classes and classes must have one "
                         "entry per row (classes: k)")
    if n_parts > 1 and (parts[0] != 0 or parts[n_parts] != D
                        or any(parts[r + 1] < parts[r] for r in range(n_parts))
                        or cuts is None or cuts.shape[0] != n_parts - 1
                        or cuts.shape[1] != P.shape[0]):
        raise ValueError("parts must increase from 0 to len(V) and cuts be "
                         "_sdca.row_cuts(..., parts)")
    if n_parts == 1:
        buf = <double*>malloc(12 * q * sizeof(double))
        if buf == NULL:
            raise MemoryError()
        with nogil:
            epoch_rows(data, indices, indptr, dense, bias, y, sample_weight, sqnorm, order,
                       loss, lam_n, kappa, P, logP, V, W, row_loss, row_dual, &sums[0],
                       shrink, classes, n_classes, shrinking, omega, buf, NULL)
        free(buf)
        return
    # per part: its fr_split, sums (equal on every part at the end: part 0's are kept) and
    # scratch; the exchange's lines (fr_split.h)
    cdef double[:, ::1] accs = np.tile(np.asarray(sums), (n_parts, 1))
    cdef double[:, ::1] bufs = np.empty((n_parts, 12 * q))
    cdef unsigned char[::1] raw = np.zeros(fr_split_bytes(n_parts, q), dtype=np.uint8)
    cdef unsigned char[::1] mem = np.empty(n_parts * sizeof(fr_split), dtype=np.uint8)
    cdef fr_split* splits = <fr_split*>&mem[0]
    fr_split_init(splits, n_parts, &parts[0], &cuts[0, 0], cuts.shape[1], &raw[0])
    with nogil, parallel(num_threads=n_parts):
        part = threadid()
        if fr_num_threads() == n_parts:
            epoch_rows(data, indices, indptr, dense, bias, y, sample_weight, sqnorm, order,
                       loss, lam_n, kappa, P, logP, V, W, row_loss, row_dual,
                       &accs[part, 0], shrink, classes, n_classes, shrinking, omega,
                       &bufs[part, 0], &splits[part])
        elif part == 0:  # fewer threads than parts: the whole rows on one
            epoch_rows(data, indices, indptr, dense, bias, y, sample_weight, sqnorm, order,
                       loss, lam_n, kappa, P, logP, V, W, row_loss, row_dual, &accs[0, 0],
                       shrink, classes, n_classes, shrinking, omega, &bufs[0, 0], NULL)
    sums[:] = accs[0]


def primal_loss_sum(const floating[::1] data, const index_t[::1] indices,
                    const index_t[::1] indptr, bint dense, double bias, const double[:, ::1] W,
                    Py_ssize_t k, const int64_t[::1] y, const double[::1] sample_weight,
                    int loss, double[::1] values, int n_threads):
    """sum_i c_i phi(W^T x_i, y_i) over the k classes (W: (D, block_width(k)), zero
    padding), rows in parallel; the terms go to ``values`` and are added in row order
    (same bits for any thread count)."""
    cdef Py_ssize_t q = W.shape[1], D = W.shape[0], d = D - (bias != 0), n = y.shape[0]
    cdef Py_ssize_t i, nnz
    cdef const floating* val
    cdef const index_t* idx
    cdef double total = 0.0
    cdef double[:, ::1] scratch = np.empty((max(n_threads, 1), 4 * q))
    cdef double* s
    if values.shape[0] != n or indptr.shape[0] != n + 1:
        raise ValueError("values and y must have one entry per row")
    if q != block_width(k):
        raise ValueError("W must have block_width(k) columns")
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="static"):
            s = &scratch[threadid(), 0]
            nnz = indptr[i + 1] - indptr[i]
            val = &data[indptr[i]]
            idx = &indices[0] if dense else &indices[indptr[i]]
            row_scores(val, idx, nnz, nnz if dense else indptr[n] - indptr[i], bias, d,
                       &W[0, 0], q, q, s)
            values[i] = vector_loss_row(loss, s, k, y[i], NULL, NULL, NULL,
                                        sample_weight[i] if sample_weight.shape[0] > 0 else 1.0,
                                        s + q if loss != FR_VEC_SOFTMAX else NULL,
                                        <int*>(s + 2 * q), <Py_ssize_t*>(s + 3 * q))
        for i in range(n):
            total += values[i]
    return total


def dual_terms(const double[:, ::1] P, const int64_t[::1] y, const double[::1] sample_weight,
               int loss, double[::1] out):
    """out[i] = c_i (-phi*(-A_i)); returns their sum in row order."""
    cdef Py_ssize_t i, n = P.shape[0], k = P.shape[1]
    cdef double total = 0.0
    with nogil:
        for i in range(n):
            out[i] = dual_term(loss, &P[i, 0], k, y[i]) * (
                sample_weight[i] if sample_weight.shape[0] > 0 else 1.0)
            total += out[i]
    return total
