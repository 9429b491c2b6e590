# cython: language_level=3
"""Epoch kernels of the Pegasos family (docs/math.md §5; Do, Le & Foo 2009 Alg. 1-3, Takac et al. 2013).

One call runs the projected subgradient steps over the rows ``order[0..n)``
in mini-batches of ``batch_size`` consecutive entries, without the GIL, on
the lazily scaled weight vector of fr_scaled.h.  Step t (counted from the
start of the run, or of the optimistic phase) on the batch A_t:

    g_t    = lambda w_t + (1/|A_t|) sum_{i in A_t} c_i l'(<w_t, x_i>, y_i) x_i
    tau_t  = (-(lambda t + tau_{1:t-1}) + sqrt((lambda t + tau_{1:t-1})^2 + G^2/R^2)) / 2
             (0 for Pegasos; written in the cancellation-free form c / (b + sqrt(b^2 + c)))
    eta_t  = 1 / (lambda t + L + tau_{1:t})
    w_t+1  = Pi_S[w_t - eta_t g_t]          (proximal, Do, Le & Foo 2009 Alg. 2)
    w_t+1  = Pi_S[w_t - eta_t (g_t + tau_t w_t)]   (adaptive: Bartlett et al.'s f + tau/2 ||w||^2)

L (``offset``) is 0 for Lipschitz losses (the papers' steps) and the curvature
bound max_i c_i l''_i ||x_i||^2 for losses with an unbounded derivative, so
that eta_t = 1/(lambda (t + L/lambda)) starts at a safe step
(fastrisk/solvers/_steps.py).  S is the ball of radius ``radius``.  The shrink is O(1) and every example
costs O(nnz(x_i)); the tail average is kept exactly and lazily (fr_scaled.h).
The optimistic solver (Alg. 3) multiplies R by sqrt(2) and starts a new
phase (t = 1, so lambda_{1:t} restarts) whenever
||w_t+1|| >= R - sqrt(2 eps / lambda), and stops with STATUS_PHASE_DONE once a
phase runs its T steps without doubling.  The proximal weight tau_{1:t}
accumulated so far is kept across phases (Alg. 3 restarts it with the
loop): restarted, the first step of a phase is eta_1 = 1/(lambda + tau_1),
about 2R/G, a jump of up to 2R that by itself crosses the next threshold
sqrt(2) R, so one doubling set off a cascade of them up to the radius of S
(on a9a, hinge, lambda = 1e-6 the runs ended anywhere from 1.0 to 1.5 times
J* depending on the row order).  Kept, the proximal terms of the earlier
iterates still weigh on the new phase's steps and R grows only as far as
the iterates need.

State lives in arrays owned by Python (so a run can stop and continue):
``scalars`` = [scale, ||v||^2, S, tau_{1:t}, R, T_phase] and
``counters`` = [t (steps in the phase), n_avg, avg_start, steps in total,
number of R doublings].  Iterates after total step ``avg_start`` enter the
average (avg_start < 0: no averaging).
"""

import numpy as np
from libc.math cimport sqrt, log, isfinite, ceil
from libc.stdlib cimport malloc, free
from cython cimport floating
from libc.stdint cimport int32_t

from fr_rows cimport index_t, row_view
from fr_scaled cimport *
from fr_lossfn cimport fr_loss_fn, fr_loss_pointer

cdef enum:
    PEGASOS = 0
    ADAPTIVE = 1
    PROXIMAL = 2
    OK = 0
    OVERFLOW = 1
    BAD_LOSS = 2
    PHASE_DONE = 3

RULE_PEGASOS, RULE_ADAPTIVE, RULE_PROXIMAL = PEGASOS, ADAPTIVE, PROXIMAL
STATUS_OK, STATUS_OVERFLOW, STATUS_BAD_LOSS, STATUS_PHASE_DONE = OK, OVERFLOW, BAD_LOSS, PHASE_DONE
cdef double T_MAX = 4611686018427387904.0  # 2^62: cap on the phase length


cdef double phase_length(double G, double lam, double delta, double eps, double R) noexcept nogil:
    """Smallest T with min(G^2 (1 + log T) / (delta lam T), 4 R G / (delta sqrt T)) <= eps (Alg. 3)."""
    cdef double T2 = ceil((4.0 * R * G / (delta * eps)) ** 2), lo = 1.0, hi = 1.0, mid
    if T2 < 1.0:
        T2 = 1.0
    while G * G * (1.0 + log(hi)) / (delta * lam * hi) > eps and hi < T_MAX:
        hi *= 2.0
    if hi > 1.0:
        lo = hi / 2.0
        while hi - lo > 1.0:
            mid = ceil(lo + (hi - lo) / 2.0)
            if mid <= lo or mid >= hi:  # beyond 2^53 the doubles run out of integers
                break
            if G * G * (1.0 + log(mid)) / (delta * lam * mid) > eps:
                lo = mid
            else:
                hi = mid
    return hi if hi < T2 else T2


def optimistic_phase_length(double G, double lam, double delta, double eps, double R):
    """Python access to the phase length T of Algorithm 3 (tests)."""
    return phase_length(G, lam, delta, eps, R)


cdef inline void load(fr_scaled* w, double[::1] v, double[::1] u, double[::1] scalars,
                      long long[::1] counters) noexcept:
    w.v = &v[0]
    w.u = &u[0] if u.shape[0] > 0 else NULL
    w.d = v.shape[0]
    w.scale = scalars[0]
    w.sqnorm = scalars[1]
    w.S = scalars[2]
    w.n_avg = counters[1]
    w.averaging = counters[1] > 0


def pegasos_epoch(const floating[::1] data, const index_t[::1] indices,
                  const index_t[::1] indptr, bint dense, double bias,
                  const double[::1] y, const double[::1] sample_weight,
                  const Py_ssize_t[::1] order, Py_ssize_t batch_size,
                  int loss, double loss_param, double lam, int rule, double G,
                  double radius, double eps, double delta,
                  double[::1] v, double[::1] u, double[::1] scalars,
                  long long[::1] counters, double offset=0.0):
    """Run the steps over ``order``; returns (status, rows processed).

    See the module docstring for the update and the state arrays.
    ``sample_weight`` is empty for unit weights; ``u`` is empty when no
    average is kept, else has len(v).  ``eps > 0`` turns on the optimistic
    R doubling of Algorithm 3 (with failure probability ``delta``).
    ``offset`` is L in eta_t (module docstring).
    """
    cdef fr_scaled w
    cdef fr_loss_fn lossfn = fr_loss_pointer(loss)
    cdef Py_ssize_t n = order.shape[0], pos = 0, b, k, i, nnz
    cdef const floating* val
    cdef const index_t* idx
    cdef double* deriv
    cdef double f, dl, Lam, base, c, tau, eta, factor, norm
    cdef double tau_sum = scalars[3], R = scalars[4], T_phase = scalars[5]
    cdef double threshold = sqrt(2.0 * eps / lam) if eps > 0 else 0.0
    cdef long long t = counters[0], total = counters[3], avg_start = counters[2]
    cdef long long doublings = counters[4]
    cdef const double* cw = &sample_weight[0] if sample_weight.shape[0] > 0 else NULL
    cdef int status = OK
    if lossfn == NULL:
        return BAD_LOSS, 0
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    if avg_start >= 0 and u.shape[0] != v.shape[0]:
        raise ValueError("u must have len(v) when averaging")
    load(&w, v, u, scalars, counters)
    deriv = <double*>malloc(min(batch_size, max(n, 1)) * sizeof(double))  # a step: <= n rows
    if deriv == NULL:
        raise MemoryError()
    with nogil:
        while pos < n:
            b = batch_size if n - pos >= batch_size else n - pos
            if pos + b < n and not dense:
                nnz = row_view(&data[0], &indices[0], &indptr[0], dense, order[pos + b],
                               &val, &idx)
                prefetch_row(w.v, idx, nnz)
            for k in range(b):
                i = order[pos + k]
                nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                f = scaled_dot(&w, val, idx, nnz, bias)
                lossfn(f, y[i], loss_param, &dl)
                deriv[k] = dl * cw[i] if cw != NULL else dl
            t += 1
            total += 1
            Lam = lam * t + offset
            tau = 0.0
            if rule != PEGASOS:
                base = Lam + tau_sum
                c = G * G / (R * R)
                tau = 0.5 * c / (base + sqrt(base * base + c))
                tau_sum += tau
            eta = 1.0 / (Lam + tau_sum)
            factor = 1.0 - eta * (lam + tau) if rule == ADAPTIVE else 1.0 - eta * lam
            fr_scaled_shrink(&w, factor)
            for k in range(b):
                if deriv[k] != 0.0:
                    i = order[pos + k]
                    nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                    scaled_add(&w, -eta * deriv[k] / b, val, idx, nnz, bias)
            norm = fr_scaled_project(&w, radius)
            if avg_start >= 0 and total > avg_start:
                w.averaging = 1
                fr_scaled_accumulate(&w)
            pos += b
            if not (isfinite(w.scale) and isfinite(w.sqnorm)):
                status = OVERFLOW
                break
            if eps > 0:
                if norm >= R - threshold:
                    R *= sqrt(2.0)
                    doublings += 1
                    t = 0  # a new phase: lambda_{1:t} restarts, tau_{1:t} runs on (see above)
                    T_phase = phase_length(G, lam, delta, eps, R)
                elif t >= T_phase:
                    status = PHASE_DONE
                    break
    free(deriv)
    scalars[0], scalars[1], scalars[2] = w.scale, w.sqnorm, w.S
    scalars[3], scalars[4], scalars[5] = tau_sum, R, T_phase
    counters[0], counters[1], counters[3], counters[4] = t, w.n_avg, total, doublings
    return status, pos


def average(double[::1] v, double[::1] u, double[::1] scalars, long long[::1] counters,
            double[::1] out):
    """out <- the tail average kept by pegasos_epoch (requires counters[1] > 0)."""
    cdef fr_scaled w
    if counters[1] <= 0 or u.shape[0] != v.shape[0] or out.shape[0] != v.shape[0]:
        raise ValueError("no average recorded")
    load(&w, v, u, scalars, counters)
    fr_scaled_average(&w, &out[0])


def scaled_ops(const double[::1] data, const int32_t[::1] indices, const int32_t[::1] indptr,
               const long long[::1] ops, const double[::1] args, const long long[::1] rows,
               double bias, double[::1] v, double[::1] u):
    """Test wrapper of fr_scaled.h: apply op codes to w = scale * v (v updated in place).

    ops[k]: 0 shrink by args[k]; 1 add args[k] * row rows[k]; 2 project onto
    radius args[k]; 3 start averaging and record the iterate; 4 record the
    iterate; 5 w <- w (one explicit fold).  Returns (scale, ||v||^2, average
    or None, number of folds seen as scale resets).
    """
    cdef fr_scaled w
    cdef Py_ssize_t k, nnz
    cdef const double* val
    cdef const int32_t* idx
    cdef long long folds = 0
    cdef double before
    cdef double[::1] avg_view
    w.v = &v[0]
    w.u = &u[0]
    w.d = v.shape[0]
    w.scale = 1.0
    w.sqnorm = float(np.dot(v, v))
    w.S = 0.0
    w.n_avg = 0
    w.averaging = 0
    for k in range(ops.shape[0]):
        before = w.scale
        if ops[k] == 0:
            fr_scaled_shrink(&w, args[k])
        elif ops[k] == 1:
            nnz = row_view(&data[0], &indices[0], &indptr[0], False, rows[k], &val, &idx)
            scaled_add(&w, args[k], val, idx, nnz, bias)
        elif ops[k] == 2:
            fr_scaled_project(&w, args[k])
        elif ops[k] == 3:
            w.averaging = 1
            fr_scaled_accumulate(&w)
        elif ops[k] == 4:
            fr_scaled_accumulate(&w)
        elif ops[k] == 5:
            fr_scaled_fold(&w)
        if w.scale == 1.0 and before != 1.0 and ops[k] != 5:
            folds += 1
    avg = None
    if w.n_avg > 0:
        avg = np.empty(w.d)
        avg_view = avg
        fr_scaled_average(&w, &avg_view[0])
    return w.scale, w.sqnorm, avg, folds
