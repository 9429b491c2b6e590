# cython: language_level=3
"""Epoch kernels of regularized dual averaging (docs/math.md §6; Xiao, JMLR 2010).

The kernels each run one call (one or more epochs, or one streamed
chunk) without the GIL, over rows in the order Python gives (``order``), in
mini-batches of ``batch_size`` rows: every row of a batch is evaluated at the
same point, then the batch's averaged gradient is applied.

``dual_averaging_epoch`` -- l1-RDA, enhanced l1-RDA (rho), mixed l1/l2^2,
l2^2 (Algorithms 1, 2 and section 2.2) and accelerated RDA (Algorithm 3).
All these iterates have the per-coordinate form

    z_r(s) = 0                              if |s| <= theta_r
    z_r(s) = -(s - sgn(s) theta_r) * b_r    otherwise,

a function of the coordinate's running (weighted) gradient sum ``s = S_j``
and of the step r only; ``theta_r`` is nondecreasing in r.  A step therefore
evaluates only the coordinates of its rows: O(nnz(x_i)).  The running sum of
the iterates (``acc``, for w_bar of RDA and for the interpolated w_t of
accelerated RDA) is kept exactly and lazily: ``last_j`` is the first step not
yet in ``acc_j`` (S_j, acc_j, last_j sit side by side in one ``coords`` row);
while S_j stays constant the missing terms are
``sum_r omega_r z_r(s) = -s sum_r omega_r b_r + sgn(s) sum_r omega_r b_r theta_r``
over the steps where |s| > theta_r, an initial segment of the window found in
O(1) (or by bisection when the threshold is crossed inside the window).  The
two sums come from prefix sums (``PB``, ``PT``) that Python computes once
per call -- for l1-RDA these are the prefix sums of t^{-1/2} and t^{1/2} of
docs/math.md §6.  A coordinate is caught up just before its S_j changes, and every
coordinate at the end of the call (``flush_end``).

``pnorm_rda_epoch_integral`` / ``pnorm_rda_epoch`` -- p-norm RDA (section 7.2).
w = theta^{-1}(g_hat) divides by ||g_hat||_q^{q-2}, a norm over the
coordinates above a threshold lambda*t that moves at every step.  For an
integer q = p / (p - 1) the norm is a polynomial in the threshold over power
sums that only the rows' coordinates change: O(nnz(x_i)) per step.  For other
p only the nonzeros of w_t are visited (a compact active set):
O(nnz(x_i) + nnz(w_t)) per step, not O(d).

``adaptive_rda_epoch`` -- RDA with the diagonal h_t of Duchi, Hazan & Singer (2011):
the denominator of z_r is per coordinate, sigma r + beta + sqrt(G_j) / eta with G_j the
sum of the squares of the coordinate's step gradients, constant while no row touches
the coordinate: O(nnz(x_i)) per step, no schedule and no averaging.

``truncated_gradient_epoch`` -- the baselines of section 6: SGD with the l1
subgradient and truncated gradient (TG, period K; K = 1 is FOBOS), constant
step eta.  A coordinate that no row touches only feels the penalty: the
subgradient steps ``v <- v - eta lambda sgn(v)`` (which reach zero and then
oscillate with period 2) or the truncations at multiples of K; both have an
O(1) closed form, applied just in time (``last_j`` = last step applied, kept
next to w_j in one ``coords`` row).

The intercept is the virtual feature of value ``bias`` at coordinate
``len(S) - 1`` when bias != 0.  Status: 0 ok, 1 a loss value overflowed,
2 unknown loss id.
"""

import numpy as np
from cython cimport floating
from libc.math cimport fabs, sqrt, pow, ceil, fma, isfinite
from libc.stdint cimport int64_t

from fr_rows cimport index_t, row_view

cdef extern from "fr_rda.h" nogil:
    ctypedef double (*fr_loss_fn)(double f, double y, double p, double* d)
    fr_loss_fn fr_loss_pointer(int kind)

cdef enum:
    STATUS_OK = 0
    STATUS_OVERFLOW = 1
    STATUS_BAD_LOSS = 2


cdef inline double sgn(double x) noexcept nogil:
    return (x > 0) - (x < 0)


cdef inline double row_coef(fr_loss_fn fn, double fval, double yi, double loss_param,
                            double c, double weight, Py_ssize_t k,
                            double* total) noexcept nogil:
    """The row's coefficient weight * c * l'(fval) / k in its batch's averaged gradient;
    adds c * l(fval) to ``total`` (the summed loss at the query points)."""
    cdef double deriv
    total[0] += c * fn(fval, yi, loss_param, &deriv)
    return weight * c * deriv / k


# ---------------------------------------------------------------------------
# Lazy dual averaging (RDA, enhanced, mixed, l2^2, accelerated)

cdef struct Schedule:
    # rows i = r - r0 of (theta_r, PB[i], PT[i]), side by side so that a lookup
    # at a lagged step touches one cache line:
    # PB[i] = sum_{r0 <= r < r0 + i} omega_r b_r, PT[i] = sum_{r0 <= r < r0 + i} omega_r b_r theta_r
    const double* rows
    Py_ssize_t r0


cdef inline double z_value(double s, double th, double b) noexcept nogil:
    """The iterate z_r(s) at one coordinate, th = theta_r, b = b_r (closed form
    (10)/(30) of Xiao 2010)."""
    if fabs(s) <= th:
        return 0.0
    return -(s - sgn(s) * th) * b


cdef inline double window_sum(const Schedule* sc, double s, Py_ssize_t a,
                              Py_ssize_t e) noexcept nogil:
    """sum_{r=a}^{e} omega_r z_r(s) for a constant s, exactly, in O(1) (bisection
    only when the threshold crossing falls inside the window)."""
    cdef Py_ssize_t lo, hi, mid
    cdef double m = fabs(s)
    if a > e or s == 0.0:
        return 0.0
    cdef const double* R = sc.rows
    lo = a - sc.r0
    hi = e - sc.r0
    if R[3 * lo] >= m:
        return 0.0
    if R[3 * hi] >= m:
        # theta[lo] < m <= theta[hi]: find the last step with theta < m
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if R[3 * mid] < m:
                lo = mid
            else:
                hi = mid
        hi = lo
    lo = a - sc.r0
    return (-s * (R[3 * (hi + 1) + 1] - R[3 * lo + 1])
            + sgn(s) * (R[3 * (hi + 1) + 2] - R[3 * lo + 2]))


cdef inline void catch_up(const Schedule* sc, double* cj, Py_ssize_t upto) noexcept nogil:
    """Coordinate state cj = (S_j, acc_j, last_j): add the terms
    r = last_j .. upto - 1 to acc_j."""
    cdef Py_ssize_t last = <Py_ssize_t>cj[2]
    if last < upto:
        cj[1] += window_sum(sc, cj[0], last, upto - 1)
        cj[2] = <double>upto


cdef inline double lazy_coord(const Schedule* sc, double* cj, Py_ssize_t t, double th,
                              double b, bint accelerated, double mix,
                              double A_prev) noexcept nogil:
    """Coordinate j of the point where step t queries the gradient, th = theta_{t-1},
    b = b_{t-1}: RDA: w_t = z_{t-1}(S_j); accelerated: u_t = (1 - theta_t) w_{t-1}
    + theta_t v_{t-1} with w_{t-1} = acc_j / A_{t-1} (acc caught up to step t - 1)."""
    cdef double v = z_value(cj[0], th, b)
    if not accelerated:
        return v
    catch_up(sc, cj, t)
    if A_prev == 0.0:
        return mix * v
    return (1.0 - mix) * (cj[1] / A_prev) + mix * v


def dual_averaging_epoch(const floating[::1] data, const index_t[::1] indices,
                         const index_t[::1] indptr, bint dense, double bias,
                         const double[::1] y, const double[::1] sample_weight,
                         const int64_t[::1] order, Py_ssize_t batch_size,
                         int loss, double loss_param, double[:, ::1] coords,
                         Py_ssize_t t0, Py_ssize_t flush_end,
                         const double[:, ::1] schedule, const double[::1] b,
                         const double[::1] alpha, const double[::1] A):
    """Run the steps t = t0 + 1 .. t0 + ceil(len(order) / batch_size).

    ``coords`` (n_weights x 3) holds per coordinate (S_j, acc_j, last_j), side by
    side so that a step touches one cache line per coordinate.  ``schedule``
    row i = r - t0 holds (theta_r, PB[i], PT[i]) for r = t0 .. t0 + n_steps + 2
    (theta of the last row unused); ``b[r - t0]`` for r = t0 .. t0 + n_steps + 1.
    ``alpha``/``A`` empty: plain
    RDA, S_j = sum of gradients; else accelerated RDA with S_j = sum_t alpha_t
    g_t and ``alpha[r - t0]``, ``A[r - t0]`` as in Algorithm 3.  On return
    every acc_j holds the terms r <= flush_end.
    Returns (sum of c_i l_i at the query points, status).
    """
    cdef Py_ssize_t D = coords.shape[0], d = D - (bias != 0.0)
    cdef Py_ssize_t n_rows = order.shape[0], n_steps, step, t, lo, hi, q, i, kk, nnz, j
    cdef bint accelerated = alpha.shape[0] > 0
    cdef bint weighted = sample_weight.shape[0] > 0
    cdef double fval, c, coef, mix = 1.0, A_prev = 0.0, weight = 1.0
    cdef double th, bt, total = 0.0
    cdef double* cs = &coords[0, 0]
    cdef const floating* val
    cdef const index_t* idx
    cdef Schedule sc
    cdef fr_loss_fn fn = fr_loss_pointer(loss)
    if fn == NULL:
        return 0.0, STATUS_BAD_LOSS
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    if coords.shape[1] != 3:
        raise ValueError("coords must have shape (n_weights, 3)")
    n_steps = (n_rows + batch_size - 1) // batch_size
    if schedule.shape[0] < n_steps + 3 or schedule.shape[1] != 3 or b.shape[0] < n_steps + 2 \
            or flush_end > t0 + n_steps:
        raise ValueError("schedule arrays are too short for this call")
    if accelerated and (alpha.shape[0] < n_steps + 2 or A.shape[0] < n_steps + 2):
        raise ValueError("alpha and A are too short for this call")
    fbuf = np.empty(min(batch_size, max(n_rows, 1)))  # a step reads at most n_rows rows
    cdef double[::1] f = fbuf
    sc.rows = &schedule[0, 0]
    sc.r0 = t0
    with nogil:
        for step in range(n_steps):
            t = t0 + step + 1
            lo = step * batch_size
            hi = min(lo + batch_size, n_rows)
            th = schedule[t - 1 - t0, 0]
            bt = b[t - 1 - t0]
            if accelerated:
                weight = alpha[t - t0]
                mix = alpha[t - t0] / A[t - t0]
                A_prev = A[t - 1 - t0]
            # 1. query point at the rows of the batch
            for q in range(lo, hi):
                i = order[q]
                nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                fval = 0.0
                for kk in range(nnz):
                    fval += val[kk] * lazy_coord(&sc, cs + 3 * idx[kk], t, th, bt,
                                                 accelerated, mix, A_prev)
                if bias != 0.0:
                    fval += bias * lazy_coord(&sc, cs + 3 * d, t, th, bt, accelerated, mix,
                                              A_prev)
                f[q - lo] = fval
            # 2. the (weighted) averaged gradient enters the running sums
            for q in range(lo, hi):
                i = order[q]
                c = sample_weight[i] if weighted else 1.0
                coef = row_coef(fn, f[q - lo], y[i], loss_param, c, weight, hi - lo, &total)
                if coef == 0.0:
                    continue
                nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                for kk in range(nnz):
                    j = idx[kk]
                    catch_up(&sc, cs + 3 * j, t)
                    cs[3 * j] += coef * val[kk]
                if bias != 0.0:
                    catch_up(&sc, cs + 3 * d, t)
                    cs[3 * d] += coef * bias
        for j in range(D):
            catch_up(&sc, cs + 3 * j, flush_end + 1)
    return total, (STATUS_OK if total == total and fabs(total) < 1e308 else STATUS_OVERFLOW)


# ---------------------------------------------------------------------------
# Adaptive RDA (Duchi, Hazan & Singer 2011): a diagonal h_t from the gradients' squares

cdef inline double adaptive_coord(const double* cj, double th, double base,
                                  double inv_eta) noexcept nogil:
    """-shrink(S_j, th) / (base + sqrt(G_j) / eta) for cj = (S_j, G_j, pending); 0 while
    the denominator is 0 (a coordinate whose gradients' squares underflowed)."""
    cdef double s = cj[0], den
    if fabs(s) <= th:
        return 0.0
    den = base + sqrt(cj[1]) * inv_eta
    if den <= 0.0:
        return 0.0
    return -(s - sgn(s) * th) / den


def adaptive_rda_epoch(const floating[::1] data, const index_t[::1] indices,
                       const index_t[::1] indptr, bint dense, double bias,
                       const double[::1] y, const double[::1] sample_weight,
                       const int64_t[::1] order, Py_ssize_t batch_size,
                       int loss, double loss_param, double[:, ::1] coords, Py_ssize_t t0,
                       double lam, double sigma, double eta, double beta):
    """Run the steps t = t0 + 1 .. t0 + ceil(len(order) / batch_size) of RDA with the
    diagonal proximal term of Duchi, Hazan & Singer (2011, section 5.1).

    ``coords`` (n_weights x 3) holds per coordinate (S_j, G_j, pending): the sum of the
    step gradients' coordinates, the sum of their squares, and the batch's increment
    of S_j until the batch ends (then its square enters G_j).  Step t queries
    w_t = z_{t-1}, z_r(s, G) = -shrink(s, lam r) / (sigma r + beta + sqrt(G) / eta),
    a function of the coordinate's own sums and of r: only the rows' coordinates are
    read or written, O(nnz(x_i)) per step.
    Returns (sum of c_i l_i at the query points, status).
    """
    cdef Py_ssize_t D = coords.shape[0], d = D - (bias != 0.0)
    cdef Py_ssize_t n_rows = order.shape[0], n_steps, step, r, lo, hi, q, i, kk, nnz, j
    cdef bint weighted = sample_weight.shape[0] > 0
    cdef double fval, c, coef, th, base, inc, total = 0.0
    cdef double inv_eta = 1.0 / eta
    cdef double* cs = &coords[0, 0]
    cdef const floating* val
    cdef const index_t* idx
    cdef fr_loss_fn fn = fr_loss_pointer(loss)
    if fn == NULL:
        return 0.0, STATUS_BAD_LOSS
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    if coords.shape[1] != 3:
        raise ValueError("coords must have shape (n_weights, 3)")
    n_steps = (n_rows + batch_size - 1) // batch_size
    fbuf = np.empty(min(batch_size, max(n_rows, 1)))  # a step reads at most n_rows rows
    cdef double[::1] f = fbuf
    with nogil:
        for step in range(n_steps):
            r = t0 + step  # step r + 1 queries z_r
            lo = step * batch_size
            hi = min(lo + batch_size, n_rows)
            th = lam * r
            base = sigma * r + beta
            # 1. query point at the rows of the batch
            for q in range(lo, hi):
                i = order[q]
                nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                fval = 0.0
                for kk in range(nnz):
                    fval += val[kk] * adaptive_coord(cs + 3 * idx[kk], th, base, inv_eta)
                if bias != 0.0:
                    fval += bias * adaptive_coord(cs + 3 * d, th, base, inv_eta)
                f[q - lo] = fval
            # 2. the (weighted) averaged gradient enters S and, once the batch is summed,
            # its squares enter G
            for q in range(lo, hi):
                i = order[q]
                c = sample_weight[i] if weighted else 1.0
                coef = row_coef(fn, f[q - lo], y[i], loss_param, c, 1.0, hi - lo, &total)
                if coef == 0.0:
                    continue
                nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                for kk in range(nnz):
                    inc = coef * val[kk]
                    cs[3 * idx[kk]] += inc
                    cs[3 * idx[kk] + 2] += inc
                if bias != 0.0:
                    cs[3 * d] += coef * bias
                    cs[3 * d + 2] += coef * bias
            for q in range(lo, hi):
                i = order[q]
                nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                for kk in range(nnz):
                    j = 3 * idx[kk]
                    cs[j + 1] += cs[j + 2] * cs[j + 2]
                    cs[j + 2] = 0.0
                if bias != 0.0:
                    cs[3 * d + 1] += cs[3 * d + 2] * cs[3 * d + 2]
                    cs[3 * d + 2] = 0.0
    return total, (STATUS_OK if total == total and fabs(total) < 1e308 else STATUS_OVERFLOW)


# ---------------------------------------------------------------------------
# p-norm RDA (section 7.2): O(nnz(x_i) + nnz(w_t)) per step

cdef inline double pow_q1(double m, double e, bint integral) noexcept nogil:
    """m^e for the link map's exponent e = q - 1 (a small integer for p = 1 + 1/k,
    e.g. p = 1.5 -> e = 2, where repeated products replace pow)."""
    cdef double out
    cdef int k
    if not integral:
        return pow(m, e)
    out = m
    for k in range(1, <int>e):
        out *= m
    return out


def pnorm_rda_epoch(const floating[::1] data, const index_t[::1] indices,
                    const index_t[::1] indptr, bint dense, double bias,
                    const double[::1] y, const double[::1] sample_weight,
                    const int64_t[::1] order, Py_ssize_t batch_size,
                    int loss, double loss_param,
                    double[::1] S, double[::1] acc, Py_ssize_t t0,
                    double lam, double gamma, double rho, double p, double beta=0.0):
    """Steps t = t0 + 1 ..: w_t = theta^{-1}(g_hat_{t-1}) with
    g_hat_r = -((p - 1) / beta_r) shrink(S, lam r + rho beta_r), beta_r = gamma sqrt(r) + beta
    and theta^{-1}_j(g) = sgn(g_j) |g_j|^{q-1} / ||g||_q^{q-2}; acc += w_t.
    ``beta`` is 0 for Lipschitz losses and the curvature offset L of
    fastrisk/solvers/_steps.py for losses with an unbounded derivative.

    Every coordinate of w_t has the form w_{t,j} = c_t v_{t,j} with the
    global factor c_t = (p - 1) / beta_r / N_t^{(q-2)/q},
    N_t = sum_j m_j^q, and v_{t,j} = -sgn(S_j) m_j^{q-1}, m_j = |S_j| - th_r > 0.
    The threshold th_r is nondecreasing in r, so a coordinate with
    |S_j| <= th_r stays zero until a row changes S_j: only the active set
    (|S_j| > th_r, the nonzeros of w_t) enters N_t.  It is kept as a compact
    list of slots (``act[slot] = j``, ``pos[j] = slot`` or -1), each slot
    holding (S_j, v_j of the last step, acc terms not yet written to acc_j)
    contiguously; one pass per step over them adds c_{t-1} v_{t-1} (the
    previous step's iterate, deferred so that one pass suffices), drops the
    coordinates that fell under the threshold and forms N_t.  A step
    costs O(nnz(x_i) + nnz(w_t)); the norm is summed over the active set
    (the dense order differs only by rounding).  Returns (loss sum, status)."""
    cdef Py_ssize_t D = S.shape[0], d = D - (bias != 0.0)
    cdef Py_ssize_t n_rows = order.shape[0], n_steps, step, t, lo, hi, q, i, kk, nnz, j
    cdef Py_ssize_t n_act = 0, slot
    cdef bint weighted = sample_weight.shape[0] > 0
    cdef double fval, c, coef, total = 0.0
    cdef double q_exp = p / (p - 1.0), th, m, norm_q, scale = 0.0, scale_prev = 0.0, r, pq1
    cdef bint integral = q_exp == <double>(<int>q_exp) and q_exp <= 16.0
    cdef const floating* val
    cdef const index_t* idx
    cdef fr_loss_fn fn = fr_loss_pointer(loss)
    if fn == NULL:
        return 0.0, STATUS_BAD_LOSS
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    if acc.shape[0] != D:
        raise ValueError("S and acc must have the same length")
    n_steps = (n_rows + batch_size - 1) // batch_size
    fbuf = np.empty(min(batch_size, max(n_rows, 1)))  # a step reads at most n_rows rows
    cdef double[::1] f = fbuf
    pos_buf = np.full(D, -1, dtype=np.intp)
    act_buf = np.empty(D, dtype=np.intp)
    slots_buf = np.zeros((D + 1, 3))
    cdef Py_ssize_t[::1] pos = pos_buf
    cdef Py_ssize_t[::1] act = act_buf
    # per slot, side by side: (S_j, v_j, the acc terms not yet written to acc_j)
    cdef double[:, ::1] slots = slots_buf
    cdef double* sl = &slots[0, 0]
    cdef double* e
    with nogil:
        # the active set at the first step: the coordinates above th_{t0}
        th = lam * t0 + gamma * rho * sqrt(<double>t0) + rho * beta
        for j in range(D):
            if fabs(S[j]) > th:
                pos[j] = n_act
                act[n_act] = j
                sl[3 * n_act] = S[j]
                n_act += 1
        for step in range(n_steps):
            t = t0 + step + 1
            lo = step * batch_size
            hi = min(lo + batch_size, n_rows)
            # 1. acc += w_{t-1} (deferred); w_t = scale * v over the active set
            r = <double>(t - 1)
            th = lam * r + gamma * rho * sqrt(r) + rho * beta
            norm_q = 0.0
            slot = 0
            while slot < n_act:
                e = sl + 3 * slot
                e[2] += scale_prev * e[1]
                m = fabs(e[0]) - th
                if m <= 0.0:
                    # below the threshold: zero until S_j changes; the last slot
                    # moves here and is visited next (its acc term still owed)
                    j = act[slot]
                    acc[j] += e[2]
                    pos[j] = -1
                    n_act -= 1
                    if slot < n_act:
                        act[slot] = act[n_act]
                        pos[act[slot]] = slot
                        e[0] = sl[3 * n_act]
                        e[1] = sl[3 * n_act + 1]
                        e[2] = sl[3 * n_act + 2]
                    continue
                pq1 = pow_q1(m, q_exp - 1.0, integral)
                norm_q += pq1 * m
                e[1] = -sgn(e[0]) * pq1
                slot += 1
            if norm_q > 0.0:
                # |g_hat_j| = k m_j, k = (p-1)/beta_r: w_j = -sgn k m^{q-1} / N^{(q-2)/q}
                scale = (p - 1.0) / (gamma * sqrt(r) + beta) / pow(norm_q, (q_exp - 2.0) / q_exp)
            else:
                scale = 0.0
            scale_prev = scale
            # 2. gradient at w_t
            for q in range(lo, hi):
                i = order[q]
                nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                fval = 0.0
                for kk in range(nnz):
                    slot = pos[idx[kk]]
                    if slot >= 0:
                        fval += val[kk] * (scale * sl[3 * slot + 1])
                if bias != 0.0 and pos[d] >= 0:
                    fval += bias * (scale * sl[3 * pos[d] + 1])
                f[q - lo] = fval
            for q in range(lo, hi):
                i = order[q]
                c = sample_weight[i] if weighted else 1.0
                coef = row_coef(fn, f[q - lo], y[i], loss_param, c, 1.0, hi - lo, &total)
                if coef == 0.0:
                    continue
                nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                for kk in range(nnz + (bias != 0.0)):
                    j = idx[kk] if kk < nnz else d
                    S[j] += coef * (val[kk] if kk < nnz else bias)
                    slot = pos[j]
                    if slot < 0:
                        # w_{t,j} = 0: it joins with nothing owed to acc
                        slot = n_act
                        pos[j] = slot
                        act[slot] = j
                        sl[3 * slot + 1] = 0.0
                        sl[3 * slot + 2] = 0.0
                        n_act += 1
                    sl[3 * slot] = S[j]
        for slot in range(n_act):
            acc[act[slot]] += sl[3 * slot + 2] + scale_prev * sl[3 * slot + 1]
    return total, (STATUS_OK if total == total and fabs(total) < 1e308 else STATUS_OVERFLOW)


# ---------------------------------------------------------------------------
# p-norm RDA with an integer q: O(nnz(x_i)) per step

# The sums of this kernel are kept in double-double (hi + lo, |lo| <= ulp(hi)/2):
# the norm and the lazy acc terms are polynomials whose terms cancel when a
# coordinate sits near the threshold, so they are formed from sums carried to
# about 2^-104 relative and rounded once at the end.
cdef struct DD:
    double hi
    double lo


cdef inline DD two_sum(double a, double b) noexcept nogil:
    cdef DD r
    cdef double bb
    r.hi = a + b
    bb = r.hi - a
    r.lo = (a - (r.hi - bb)) + (b - bb)
    return r


cdef inline DD dd_add(DD a, DD b) noexcept nogil:
    cdef DD s = two_sum(a.hi, b.hi)
    return two_sum(s.hi, s.lo + (a.lo + b.lo))


cdef inline DD dd_mul(DD a, double b) noexcept nogil:
    cdef DD r
    cdef double p = a.hi * b
    return two_sum(p, fma(a.hi, b, -p) + a.lo * b)


cdef inline void dd_acc(DD* a, double x) noexcept nogil:
    cdef DD s = two_sum(a.hi, x)
    a.hi = s.hi
    a.lo += s.lo


cdef inline double pnorm_threshold(double lam, double grho, double off,
                                   Py_ssize_t r) noexcept nogil:
    """th_r = lam r + gamma rho sqrt(r) + rho beta (off = rho beta), nondecreasing in r
    also in floating point (each operation is monotone)."""
    if grho == 0.0:
        return lam * <double>r + off
    return lam * <double>r + grho * sqrt(<double>r) + off


cdef struct PCoord:
    # the state of one coordinate in the p-norm kernel: S_j, acc_j, the last step
    # the coordinate is active (w_{r,j} != 0 for r <= drop) and the first step not
    # yet in acc_j
    double S
    double acc
    Py_ssize_t drop
    Py_ssize_t last


cdef inline Py_ssize_t drop_step(double a, Py_ssize_t t, Py_ssize_t t_end, double lam,
                                 double grho, double off) noexcept nogil:
    """The first r >= t with th_r >= a (t_end when none up to t_end - 1): from the
    root of lam r + grho sqrt(r) = a - off, then corrected against the exact th_r."""
    cdef double u, est, b = a - off
    cdef Py_ssize_t r
    if pnorm_threshold(lam, grho, off, t) >= a:
        return t
    if lam > 0.0 and grho == 0.0:
        est = b / lam
    elif lam > 0.0:
        u = (-grho + sqrt(grho * grho + 4.0 * lam * b)) / (2.0 * lam)
        est = u * u
    elif grho > 0.0:
        est = (b / grho) * (b / grho)
    else:
        return t_end
    r = max(t + 1, <Py_ssize_t>ceil(est)) if est < <double>t_end else t_end
    while r > t + 1 and pnorm_threshold(lam, grho, off, r - 1) >= a:
        r -= 1
    while r < t_end and pnorm_threshold(lam, grho, off, r) < a:
        r += 1
    return r


cdef inline void power_update(DD* A, Py_ssize_t qi, double a_old, double a_new) noexcept nogil:
    """A_k += a_new^k - a_old^k, k = 1 .. qi (0 for a coordinate that leaves or joins)."""
    cdef double po = a_old, pn = a_new
    cdef Py_ssize_t k
    for k in range(1, qi + 1):
        if k > 1:
            po *= a_old
            pn *= a_new
        dd_acc(&A[k], pn - po)


cdef inline void bucket_link(Py_ssize_t* head, Py_ssize_t* nxt, Py_ssize_t* prv, Py_ssize_t j,
                             Py_ssize_t r) noexcept nogil:
    """Put coordinate j first in the doubly linked list of bucket r."""
    nxt[j] = head[r]
    prv[j] = -1
    if head[r] >= 0:
        prv[head[r]] = j
    head[r] = j


cdef inline void bucket_unlink(Py_ssize_t* head, Py_ssize_t* nxt, Py_ssize_t* prv, Py_ssize_t j,
                               Py_ssize_t r) noexcept nogil:
    """Take coordinate j out of the list of bucket r."""
    if prv[j] >= 0:
        nxt[prv[j]] = nxt[j]
    else:
        head[r] = nxt[j]
    if nxt[j] >= 0:
        prv[nxt[j]] = prv[j]


cdef inline void pnorm_catch_up(const DD* P, const double* cth, Py_ssize_t ne, Py_ssize_t t0,
                                const double* binom, double s, double* acc_j,
                                Py_ssize_t* last_j, Py_ssize_t drop_j,
                                Py_ssize_t upto) noexcept nogil:
    """acc_j += sum_{r = last_j}^{min(upto, drop_j)} w_{r,j} for a constant S_j = s:
    w_{r,j} = -sgn(s) c_r (|s| - th_{r-1})^{ne-1}, expanded binomially over the
    prefix sums P[i][k] = sum_{t0 < r <= t0 + i} c_r th_{r-1}^k (Horner in |s|);
    a window of one step takes its term directly from cth[i] = (c_r, th_{r-1})."""
    cdef Py_ssize_t e = min(upto, drop_j), k
    cdef DD res, lo_k, diff
    cdef double a = fabs(s)
    res.hi = 0.0
    res.lo = 0.0
    if e == last_j[0]:
        acc_j[0] -= sgn(s) * (cth[2 * (e - t0)]
                              * pow_q1(a - cth[2 * (e - t0) + 1], <double>(ne - 1), True))
    elif e > last_j[0]:
        for k in range(ne):
            lo_k = P[(last_j[0] - 1 - t0) * ne + k]
            lo_k.hi = -lo_k.hi
            lo_k.lo = -lo_k.lo
            diff = dd_mul(dd_add(P[(e - t0) * ne + k], lo_k), binom[k])
            res = diff if k == 0 else dd_add(dd_mul(res, a), diff)
        acc_j[0] -= sgn(s) * (res.hi + res.lo)
    last_j[0] = upto + 1


def pnorm_rda_epoch_integral(const floating[::1] data, const index_t[::1] indices,
                             const index_t[::1] indptr, bint dense, double bias,
                             const double[::1] y, const double[::1] sample_weight,
                             const int64_t[::1] order, Py_ssize_t batch_size,
                             int loss, double loss_param,
                             double[::1] S, double[::1] acc, Py_ssize_t t0,
                             double lam, double gamma, double rho, double p,
                             double beta=0.0):
    """The steps of ``pnorm_rda_epoch`` for p = 1 + 1/n (q = p / (p - 1) = n + 1 an
    integer, 2 <= q <= 8) in O(nnz(x_i)) per step, with the same iterates up to
    rounding.

    With a_j = |S_j| and th = th_{t-1}, the norm N_t = sum_{a_j > th} (a_j - th)^q
    is the polynomial sum_k binom(q, k) (-th)^{q-k} A_k in th over the power sums
    A_k = sum_{a_j > th} a_j^k of the active coordinates: a step updates the
    A_k of the coordinates its rows change, and a coordinate leaves them at the
    step where th first reaches a_j, known when S_j is set (th_r is a known
    nondecreasing sequence): it waits in the bucket of that step (a linked list).
    The iterate w_{t,j} = -sgn(S_j) c_t (a_j - th)^{q-1} is formed only where a
    row needs it, and acc_j receives the terms of the steps since S_j last changed
    at once, from the prefix sums of c_r th_{r-1}^k (``pnorm_catch_up``).
    O(d) once per call (the initial active set and the final catch-up).
    Returns (loss sum, status)."""
    cdef Py_ssize_t D = S.shape[0], d = D - (bias != 0.0)
    cdef Py_ssize_t n_rows = order.shape[0], n_steps, step, t, lo, hi, q, i, kk, nnz, j, k
    cdef Py_ssize_t t_end, qi, ne, n_act = 0, r, nb
    cdef bint weighted = sample_weight.shape[0] > 0
    cdef double fval, c, coef, total = 0.0, grho = gamma * rho, off = rho * beta
    cdef double q_exp = p / (p - 1.0), th, m, a_old, a_new, scale, x, v
    cdef DD norm, thk
    cdef DD A[9]
    cdef double binom_q[9]
    cdef double binom_e[9]
    cdef const floating* val
    cdef const index_t* idx
    cdef fr_loss_fn fn = fr_loss_pointer(loss)
    if fn == NULL:
        return 0.0, STATUS_BAD_LOSS
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    if acc.shape[0] != D:
        raise ValueError("S and acc must have the same length")
    qi = <Py_ssize_t>q_exp
    if qi != q_exp or qi < 2 or qi > 8:
        raise ValueError("p must be 1 + 1/n with q = p / (p - 1) in 2 .. 8")
    ne = qi                                   # P holds k = 0 .. q - 1
    n_steps = (n_rows + batch_size - 1) // batch_size
    t_end = t0 + n_steps
    fbuf = np.empty(min(batch_size, max(n_rows, 1)))  # a step reads at most n_rows rows
    cdef double[::1] f = fbuf
    # per coordinate, side by side (one cache line per row coordinate; see PCoord),
    # and the bucket links
    coord_buf = np.empty(4 * D)
    cdef double[::1] coord_mem = coord_buf
    cdef PCoord* cs = <PCoord*>&coord_mem[0]
    nxt_buf = np.empty(D, dtype=np.intp)
    prv_buf = np.empty(D, dtype=np.intp)
    head_buf = np.full(n_steps + 1, -1, dtype=np.intp)
    P_buf = np.zeros((n_steps + 1) * ne * 2)
    cth_buf = np.zeros(2 * (n_steps + 1))
    cdef double[::1] cth = cth_buf
    cdef Py_ssize_t[::1] nxt = nxt_buf
    cdef Py_ssize_t[::1] prv = prv_buf
    cdef Py_ssize_t[::1] head = head_buf
    cdef double[::1] P_mem = P_buf
    cdef DD* P = <DD*>&P_mem[0]
    for k in range(qi + 1):
        A[k].hi = 0.0
        A[k].lo = 0.0
        binom_q[k] = 1.0 if k == 0 else binom_q[k - 1] * (qi - k + 1) / k
    for k in range(ne):
        # (-1)^k binom(q - 1, k): the Horner coefficients of (a - th)^{q-1}
        binom_e[k] = 1.0 if k == 0 else -binom_e[k - 1] * (qi - k) / k
    with nogil:
        for j in range(D):
            cs[j].S = S[j]
            cs[j].acc = acc[j]
            cs[j].last = t0 + 1
            cs[j].drop = t0
            if cs[j].S != 0.0:
                cs[j].drop = drop_step(fabs(cs[j].S), t0, t_end, lam, grho, off)
                if cs[j].drop > t0:
                    n_act += 1
                    power_update(A, qi, 0.0, fabs(cs[j].S))
                    if cs[j].drop < t_end:
                        bucket_link(&head[0], &nxt[0], &prv[0], j, cs[j].drop - t0)
        for step in range(n_steps):
            t = t0 + step + 1
            lo = step * batch_size
            hi = min(lo + batch_size, n_rows)
            th = pnorm_threshold(lam, grho, off, t - 1)
            # 1. the coordinates whose threshold th_{t-1} was reached leave the sums
            j = head[t - 1 - t0]
            while j >= 0:
                n_act -= 1
                power_update(A, qi, fabs(cs[j].S), 0.0)
                j = nxt[j]
            # 2. N_t and w_t = c_t v over the active set, in closed form
            scale = 0.0
            if n_act > 0:
                x = -th
                norm = A[0]
                norm.hi = <double>n_act
                norm.lo = 0.0
                for k in range(1, qi + 1):
                    norm = dd_add(dd_mul(norm, x), dd_mul(A[k], binom_q[k]))
                if norm.hi + norm.lo > 0.0:
                    scale = (p - 1.0) / (gamma * sqrt(<double>(t - 1)) + beta) \
                        / pow(norm.hi + norm.lo, (q_exp - 2.0) / q_exp)
            cth[2 * (t - t0)] = scale
            cth[2 * (t - t0) + 1] = th
            thk.hi = 1.0
            thk.lo = 0.0
            for k in range(ne):
                if k > 0:
                    thk = dd_mul(thk, th)
                P[(t - t0) * ne + k] = dd_add(P[(t - 1 - t0) * ne + k], dd_mul(thk, scale))
            # 3. gradient at w_t
            for q in range(lo, hi):
                i = order[q]
                nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                fval = 0.0
                for kk in range(nnz + (bias != 0.0)):
                    j = idx[kk] if kk < nnz else d
                    if cs[j].drop >= t:
                        m = fabs(cs[j].S) - th
                        v = -sgn(cs[j].S) * pow_q1(m, q_exp - 1.0, True)
                        fval += (val[kk] if kk < nnz else bias) * (scale * v)
                f[q - lo] = fval
            for q in range(lo, hi):
                i = order[q]
                c = sample_weight[i] if weighted else 1.0
                coef = row_coef(fn, f[q - lo], y[i], loss_param, c, 1.0, hi - lo, &total)
                if coef == 0.0:
                    continue
                nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                for kk in range(nnz + (bias != 0.0)):
                    j = idx[kk] if kk < nnz else d
                    pnorm_catch_up(P, &cth[0], ne, t0, binom_e, cs[j].S, &cs[j].acc, &cs[j].last,
                                   cs[j].drop, t)
                    a_old = 0.0
                    if cs[j].drop >= t:
                        # active: leaves the sums and its bucket, rejoins below if still above
                        a_old = fabs(cs[j].S)
                        n_act -= 1
                        if cs[j].drop < t_end:
                            bucket_unlink(&head[0], &nxt[0], &prv[0], j, cs[j].drop - t0)
                    cs[j].S += coef * (val[kk] if kk < nnz else bias)
                    # active from step t + 1 on, or not (marked as t - 1: the catch-up
                    # above already holds step t's term)
                    r = (drop_step(fabs(cs[j].S), t, t_end, lam, grho, off) if cs[j].S != 0.0
                         else t)
                    cs[j].drop = r if r > t else t - 1
                    a_new = 0.0
                    if r > t:
                        a_new = fabs(cs[j].S)
                        n_act += 1
                        if r < t_end:
                            bucket_link(&head[0], &nxt[0], &prv[0], j, r - t0)
                    power_update(A, qi, a_old, a_new)
        for j in range(D):
            pnorm_catch_up(P, &cth[0], ne, t0, binom_e, cs[j].S, &cs[j].acc, &cs[j].last,
                           cs[j].drop, t_end)
            S[j] = cs[j].S
            acc[j] = cs[j].acc
    return total, (STATUS_OK if total == total and fabs(total) < 1e308 else STATUS_OVERFLOW)


# ---------------------------------------------------------------------------
# Baselines: SGD with the l1 subgradient and truncated gradient

cdef inline double idle_steps(double v, Py_ssize_t a, Py_ssize_t e, double c, Py_ssize_t K,
                              bint truncate) noexcept nogil:
    """v after the penalty-only steps r = a .. e.

    SGD-l1 (truncate=0): v <- v - c sgn(v) each step; it reaches the other side
    of zero after k = ceil(|v|/c) steps and then alternates with period 2.
    TG (truncate=1): at each r with r % K == 0, v <- sgn(v) max(|v| - c K, 0).
    A v that is not finite is returned as it is (the epoch's status reports the
    overflow); when |v| / c exceeds the n steps by more than the rounding of that
    ratio, v keeps its sign throughout and no step count is formed (|v| / c may be
    beyond any integer)."""
    cdef Py_ssize_t n = e - a + 1, k
    cdef double s = sgn(v), v2, kf
    if n <= 0 or v == 0.0 or c == 0.0 or not isfinite(v):
        return v
    if truncate:
        n = e // K - (a - 1) // K
        return s * max(fabs(v) - n * (c * K), 0.0) if n > 0 else v
    kf = ceil(fabs(v) / c)
    if not kf <= <double>n + 2.0:
        return v - n * c * s
    k = <Py_ssize_t>kf
    if k < 1:
        k = 1
    # make k the exact first step count at which the sign is lost
    while k > 1 and sgn(v - (k - 1) * c * s) != s:
        k -= 1
    while sgn(v - k * c * s) == s:
        k += 1
    if n < k:
        return v - n * c * s
    v2 = v - k * c * s
    if v2 == 0.0 or (n - k) % 2 == 0:
        return v2
    return v2 + c * s


def truncated_gradient_epoch(const floating[::1] data, const index_t[::1] indices,
                             const index_t[::1] indptr, bint dense, double bias,
                             const double[::1] y, const double[::1] sample_weight,
                             const int64_t[::1] order, Py_ssize_t batch_size,
                             int loss, double loss_param, double[:, ::1] coords,
                             Py_ssize_t t0, double eta, double lam, Py_ssize_t K,
                             bint truncate):
    """Steps t = t0 + 1 .. of SGD-l1 (truncate=0):
    w_{t+1} = w_t - eta (g_t + lam sgn(w_t)), or TG (truncate=1):
    w_{t+1} = trnc(w_t - eta g_t, eta lam K) when t % K == 0 (Xiao 2010 (29),
    theta = inf).  ``coords`` (n_weights x 2) holds per coordinate (w_j, last_j):
    w_j is the value after step last_j; on return every coordinate is brought
    to the last step.  Returns (loss sum, status)."""
    cdef Py_ssize_t D = coords.shape[0], d = D - (bias != 0.0)
    cdef Py_ssize_t n_rows = order.shape[0], n_steps, step, t, lo, hi, q, i, kk, nnz, j, t_end
    cdef bint weighted = sample_weight.shape[0] > 0
    cdef double fval, c, coef, total = 0.0, pen = eta * lam
    cdef double* cs = &coords[0, 0]
    cdef double* cj
    cdef const floating* val
    cdef const index_t* idx
    cdef fr_loss_fn fn = fr_loss_pointer(loss)
    if fn == NULL:
        return 0.0, STATUS_BAD_LOSS
    if batch_size < 1 or K < 1:
        raise ValueError("batch_size and K must be >= 1")
    if coords.shape[1] != 2:
        raise ValueError("coords must have shape (n_weights, 2)")
    n_steps = (n_rows + batch_size - 1) // batch_size
    t_end = t0 + n_steps
    fbuf = np.empty(min(batch_size, max(n_rows, 1)))  # a step reads at most n_rows rows
    cdef double[::1] f = fbuf
    with nogil:
        for step in range(n_steps):
            t = t0 + step + 1
            lo = step * batch_size
            hi = min(lo + batch_size, n_rows)
            # 1. bring the batch's coordinates to w_t, evaluate
            for q in range(lo, hi):
                i = order[q]
                nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                fval = 0.0
                for kk in range(nnz + (bias != 0.0)):
                    cj = cs + 2 * (idx[kk] if kk < nnz else d)
                    if cj[1] < t - 1:
                        cj[0] = idle_steps(cj[0], <Py_ssize_t>cj[1] + 1, t - 1, pen, K, truncate)
                        cj[1] = t - 1
                    fval += (val[kk] if kk < nnz else bias) * cj[0]
                f[q - lo] = fval
            # 2. gradient step (SGD-l1: with the penalty subgradient at w_t)
            for q in range(lo, hi):
                i = order[q]
                c = sample_weight[i] if weighted else 1.0
                coef = row_coef(fn, f[q - lo], y[i], loss_param, c, eta, hi - lo, &total)
                if coef == 0.0:
                    continue
                nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                for kk in range(nnz + (bias != 0.0)):
                    cj = cs + 2 * (idx[kk] if kk < nnz else d)
                    if not truncate and cj[1] == t - 1:
                        cj[0] -= pen * sgn(cj[0])
                        cj[1] = t
                    cj[0] -= coef * (val[kk] if kk < nnz else bias)
            # 3. TG: truncate the touched coordinates at multiples of K
            if truncate:
                for q in range(lo, hi):
                    i = order[q]
                    nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                    for kk in range(nnz + (bias != 0.0)):
                        cj = cs + 2 * (idx[kk] if kk < nnz else d)
                        if cj[1] == t - 1:
                            if t % K == 0:
                                cj[0] = sgn(cj[0]) * max(fabs(cj[0]) - pen * K, 0.0)
                            cj[1] = t
        for j in range(D):
            cj = cs + 2 * j
            if cj[1] < t_end:
                cj[0] = idle_steps(cj[0], <Py_ssize_t>cj[1] + 1, t_end, pen, K, truncate)
                cj[1] = t_end
    return total, (STATUS_OK if total == total and fabs(total) < 1e308 else STATUS_OVERFLOW)
