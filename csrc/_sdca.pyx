# cython: language_level=3
"""SDCA epoch kernels (MATH.md 7; Takac, Bijral, Richtarik & Srebro 2013, seed 002).

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
from cython.parallel cimport prange
from libc.math cimport INFINITY, isfinite, pow
from libc.stdint cimport int64_t

from fr_rows cimport index_t, row_view, row_dot, row_axpy
from fr_loss cimport FR_OK, FR_ERR_OVERFLOW, FR_ERR_BAD_LOSS

cdef extern from "fr_sdca.h" nogil:
    ctypedef double (*fr_sdca_step_fn)(double, double, double, double, double)
    ctypedef double (*fr_loss_fn)(double, double, double, double*)
    ctypedef double (*fr_conj_fn)(double, double, double)
    ctypedef double (*fr_sdca_grad_fn)(double, double, double, double, int*)
    fr_sdca_step_fn fr_sdca_step_for(int kind)
    fr_sdca_grad_fn fr_sdca_grad_for(int kind)
    fr_loss_fn fr_loss_for(int kind)
    fr_conj_fn fr_conj_for(int kind)
    double fr_soft_threshold(double x, double t)
    double FR_SDCA_QMIN

STATUS_OK = FR_OK
STATUS_NONFINITE = FR_ERR_OVERFLOW
STATUS_BAD_LOSS = FR_ERR_BAD_LOSS


def has_dual_step(int loss):
    """True when the loss id has a coordinate step in fr_sdca.h."""
    return fr_sdca_step_for(loss) != NULL


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
              const double[::1] y, const double[::1] q):
    """Element-wise coordinate maximiser of -l*(-u) - (u - u0) f - q (u - u0)^2 / 2 (tests)."""
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
            o[i] = step(u0[i], f[i], y[i], loss_param, q[i] if q[i] > FR_SDCA_QMIN else FR_SDCA_QMIN)
    return out


def sdca_epoch(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
               bint dense, double bias, const double[::1] y, const double[::1] sample_weight,
               const double[::1] sqnorm, const int64_t[::1] order, int loss, double loss_param,
               double lam_n, double kappa, double[::1] u, double[::1] v, double[::1] row_loss,
               double[::1] row_dual, unsigned char[::1] shrink, double pg_max_old,
               double pg_min_old):
    """One pass of single-coordinate SDCA over the rows in ``order``.

    Row i: f = <w, x_i>, u_i <- step(u_i, f, q_i) with
    q_i = c_i ||x_i||^2 / (lambda n), then v += c_i (u_i_new - u_i) x_i / (lambda n).
    ``sample_weight`` is empty for unit weights; rows of weight 0 are skipped.
    Each visited row stores its terms ``row_loss[i] = c_i l(f, y_i)`` and
    ``row_dual[i] = c_i (-l*(-u_i))``, so the sums over all rows (shrunk ones
    at their last visit) are one ``sum()`` away.

    Shrinking (LIBLINEAR, Hsieh et al. 2008), when ``shrink`` is not empty and
    the loss has a box-constrained dual: a row at an end of its box whose
    ascent direction G points outside by more than the largest violation of
    the previous pass (``pg_max_old`` / ``pg_min_old``) is not updated and gets
    ``shrink[i] = 1``.  Returns (loss_sum, dual_sum, pg_max, pg_min, status)
    with pg_max / pg_min the extreme projected gradients of this pass.
    """
    cdef Py_ssize_t t, i, nnz, n_order = order.shape[0]
    cdef Py_ssize_t d = v.shape[0] - (bias != 0.0)
    cdef const floating* val
    cdef const index_t* idx
    cdef const double* c = &sample_weight[0] if sample_weight.shape[0] > 0 else NULL
    cdef double ci, f, q, unew, a, deriv, G, pg, loss_sum = 0.0, dual_sum = 0.0
    cdef double pg_max = -INFINITY, pg_min = INFINITY
    cdef int bound
    cdef fr_sdca_step_fn step = fr_sdca_step_for(loss)
    cdef fr_loss_fn lossfn = fr_loss_for(loss)
    cdef fr_conj_fn conj = fr_conj_for(loss)
    cdef fr_sdca_grad_fn grad = fr_sdca_grad_for(loss) if shrink.shape[0] > 0 else NULL
    if step == NULL:
        return 0.0, 0.0, 0.0, 0.0, FR_ERR_BAD_LOSS
    if (u.shape[0] != y.shape[0] or sqnorm.shape[0] != y.shape[0]
            or row_loss.shape[0] != y.shape[0] or row_dual.shape[0] != y.shape[0]):
        raise ValueError("u, y, sqnorm, row_loss and row_dual must have one entry per row")
    if grad != NULL and shrink.shape[0] != y.shape[0]:
        raise ValueError("shrink must be empty or have one entry per row")
    with nogil:
        for t in range(n_order):
            i = order[t]
            ci = c[i] if c != NULL else 1.0
            if ci == 0.0:
                continue
            nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
            f = score(val, idx, nnz, &v[0], d, bias, kappa)
            row_loss[i] = ci * lossfn(f, y[i], loss_param, &deriv)
            loss_sum += row_loss[i]
            if grad != NULL:
                G = grad(u[i], f, y[i], loss_param, &bound)
                pg = G
                if bound < 0:
                    if G < pg_min_old:
                        shrink[i] = 1
                        dual_sum += row_dual[i]
                        continue
                    pg = G if G > 0.0 else 0.0
                elif bound > 0:
                    if G > pg_max_old:
                        shrink[i] = 1
                        dual_sum += row_dual[i]
                        continue
                    pg = G if G < 0.0 else 0.0
                pg_max = pg if pg > pg_max else pg_max
                pg_min = pg if pg < pg_min else pg_min
            q = ci * sqnorm[i] / lam_n
            unew = step(u[i], f, y[i], loss_param, q if q > FR_SDCA_QMIN else FR_SDCA_QMIN)
            row_dual[i] = -ci * conj(-unew, y[i], loss_param)
            dual_sum += row_dual[i]
            a = ci * (unew - u[i]) / lam_n
            u[i] = unew
            if a != 0.0:
                row_axpy(a, val, idx, nnz, &v[0])
                if bias != 0.0:
                    v[d] += a * bias
    if not (isfinite(loss_sum) and isfinite(dual_sum)):
        return loss_sum, dual_sum, pg_max, pg_min, FR_ERR_OVERFLOW
    return loss_sum, dual_sum, pg_max, pg_min, FR_OK


def sdca_minibatch_epoch(const floating[::1] data, const index_t[::1] indices,
                         const index_t[::1] indptr, bint dense, double bias,
                         const double[::1] y, const double[::1] sample_weight,
                         const double[::1] sqnorm, const int64_t[::1] order,
                         Py_ssize_t batch_size, int loss, double loss_param, double lam_n,
                         double kappa, double[::1] u, double[::1] v, double beta, double gamma,
                         bint adaptive, double omega, const int64_t[::1] col_bounds,
                         int n_threads):
    """One pass of mini-batch SDCA: consecutive batches of ``batch_size`` rows of ``order``.

    Every delta of a batch is computed from the same v (in parallel), with
    curvature q_i = (beta c_i ||x_i||^2 + gamma / c_i) / (lambda n):
    naive beta = 1, gamma = 0; safe (separable bound of the expected
    interaction, MATH.md 7) beta = 1 - theta, gamma = theta L with
    theta = (b - 1)/(n - 1), L = ||diag(c) X||_2^2.  Then v is updated by
    ``n_threads`` threads, thread t owning coordinates
    [col_bounds[t], col_bounds[t + 1]) and adding rows in batch order, so
    every coordinate gets the same sum whatever the thread count.

    ``adaptive`` (aggressive variant): gamma = 0 and beta is adapted after each
    batch from rho = ||sum_A c_i delta_i x_i||^2 / sum_A ||c_i delta_i x_i||^2
    clipped to [1, b]: raised to rho at once when rho > beta, else lowered
    geometrically, beta <- beta^(1 - omega) rho^omega.  A batch whose exact
    dual change is negative is undone (v restored, u unchanged).

    Returns (loss_sum, dual_sum, beta, n_undone, status).
    """
    cdef Py_ssize_t n_order = order.shape[0], b = batch_size
    cdef Py_ssize_t D = v.shape[0], d = D - (bias != 0.0)
    cdef Py_ssize_t k0, nb, j, t, i, k, klo, khi, nnz, col, cnt
    cdef Py_ssize_t cap = 0
    cdef const floating* val
    cdef const index_t* idx
    cdef const double* c = &sample_weight[0] if sample_weight.shape[0] > 0 else NULL
    cdef double ci, f, q, a, deriv, lo_, hi_
    cdef double loss_sum = 0.0, dual_sum = 0.0, gain, sq, dg, denom, rho
    cdef Py_ssize_t n_undone = 0
    cdef bint undo
    cdef fr_sdca_step_fn step = fr_sdca_step_for(loss)
    cdef fr_loss_fn lossfn = fr_loss_for(loss)
    cdef fr_conj_fn conj = fr_conj_for(loss)
    if step == NULL:
        return 0.0, 0.0, beta, 0, FR_ERR_BAD_LOSS
    if b < 1 or n_threads < 1 or col_bounds.shape[0] != n_threads + 1:
        raise ValueError("batch_size, n_threads and col_bounds are inconsistent")
    if u.shape[0] != y.shape[0] or sqnorm.shape[0] != y.shape[0]:
        raise ValueError("u, y and sqnorm must have one entry per row")
    f_ = np.empty(b)
    unew_ = np.empty(b)
    lossv_ = np.empty(b)
    dual_new_ = np.empty(b)
    dual_old_ = np.empty(b)
    part_ = np.zeros((n_threads, 2))
    cdef double[::1] fb = f_, unew = unew_, lossv = lossv_, dual_new = dual_new_, dual_old = dual_old_
    cdef double[:, ::1] part = part_
    cdef int64_t[::1] stamp
    cdef int64_t[:, ::1] touched
    cdef double[:, ::1] old
    cdef int64_t[::1] count
    if adaptive:
        # a batch touches at most the nonzeros of its b longest rows, plus the bias
        cap = int(np.sort(np.diff(np.asarray(indptr)))[-b:].sum()) + 1
        stamp = np.full(D, -1, dtype=np.int64)
        touched = np.empty((n_threads, cap), dtype=np.int64)
        old = np.empty((n_threads, cap))
        count = np.zeros(n_threads, dtype=np.int64)
    with nogil:
        k0 = 0
        while k0 < n_order:
            nb = b if k0 + b <= n_order else n_order - k0
            # deltas of the whole batch from the same v
            for j in prange(nb, num_threads=n_threads, schedule="static"):
                i = order[k0 + j]
                ci = c[i] if c != NULL else 1.0
                if ci == 0.0:
                    lossv[j] = 0.0
                    unew[j] = u[i]
                    dual_new[j] = 0.0
                    dual_old[j] = 0.0
                else:
                    nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                    f = score(val, idx, nnz, &v[0], d, bias, kappa)
                    lossv[j] = ci * lossfn(f, y[i], loss_param, &deriv)
                    q = (beta * ci * sqnorm[i] + gamma / ci) / lam_n
                    unew[j] = step(u[i], f, y[i], loss_param, q if q > FR_SDCA_QMIN else FR_SDCA_QMIN)
                    dual_new[j] = -ci * conj(-unew[j], y[i], loss_param)
                    dual_old[j] = -ci * conj(-u[i], y[i], loss_param) if adaptive else 0.0
            # v += sum_A c_i delta_i x_i / (lambda n), coordinates split by thread
            for t in prange(n_threads, num_threads=n_threads, schedule="static", chunksize=1):
                cnt = 0
                for j in range(nb):
                    i = order[k0 + j]
                    ci = c[i] if c != NULL else 1.0
                    a = ci * (unew[j] - u[i]) / lam_n
                    if a == 0.0:
                        continue
                    nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                    klo = lower_bound(idx, nnz, col_bounds[t])
                    khi = lower_bound(idx, nnz, col_bounds[t + 1])
                    for k in range(klo, khi):
                        col = idx[k]
                        if adaptive and stamp[col] != k0:
                            stamp[col] = k0
                            touched[t, cnt] = col
                            old[t, cnt] = v[col]
                            cnt = cnt + 1
                        v[col] += a * val[k]
                    if bias != 0.0 and col_bounds[t] <= d and d < col_bounds[t + 1]:
                        if adaptive and stamp[d] != k0:
                            stamp[d] = k0
                            touched[t, cnt] = d
                            old[t, cnt] = v[d]
                            cnt = cnt + 1
                        v[d] += a * bias
                if adaptive:
                    count[t] = cnt
                    part[t, 0] = 0.0
                    part[t, 1] = 0.0
                    for k in range(cnt):
                        col = touched[t, k]
                        part[t, 0] += (v[col] - old[t, k]) * (v[col] - old[t, k])
                        part[t, 1] += dual_g(v[col], kappa) - dual_g(old[t, k], kappa)
            undo = False
            if adaptive:
                sq = 0.0
                dg = 0.0
                for t in range(n_threads):
                    sq += part[t, 0]
                    dg += part[t, 1]
                gain = 0.0
                denom = 0.0
                for j in range(nb):
                    i = order[k0 + j]
                    ci = c[i] if c != NULL else 1.0
                    gain += dual_new[j] - dual_old[j]
                    denom += ci * ci * (unew[j] - u[i]) * (unew[j] - u[i]) * sqnorm[i]
                # n (D(new) - D(old)) = sum c_i (-l*) changes - lambda n (g*(v_new) - g*(v_old))
                undo = gain - lam_n * dg < 0.0
                if denom > 0.0:
                    rho = lam_n * lam_n * sq / denom
                    rho = 1.0 if rho < 1.0 else (<double>nb if rho > nb else rho)
                    if rho > beta:
                        beta = rho
                    else:
                        beta = pow(beta, 1.0 - omega) * pow(rho, omega)
                if undo:
                    n_undone += 1
                    for t in prange(n_threads, num_threads=n_threads, schedule="static", chunksize=1):
                        for k in range(count[t]):
                            v[touched[t, k]] = old[t, k]
            for j in range(nb):
                i = order[k0 + j]
                loss_sum += lossv[j]
                if undo:
                    dual_sum += dual_old[j]
                else:
                    dual_sum += dual_new[j]
                    u[i] = unew[j]
            k0 = k0 + nb
    if not (isfinite(loss_sum) and isfinite(dual_sum)):
        return loss_sum, dual_sum, beta, n_undone, FR_ERR_OVERFLOW
    return loss_sum, dual_sum, beta, n_undone, FR_OK


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
            nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
            f = score(val, idx, nnz, &w[0], d, bias, 0.0)
            values[i] = (c[i] if c != NULL else 1.0) * lossfn(f, y[i], loss_param, &deriv)
        for i in range(n):
            total += values[i]
    return total, (FR_OK if isfinite(total) else FR_ERR_OVERFLOW)
