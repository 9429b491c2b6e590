# cython: language_level=3
"""Epoch kernel of the Primal Gradient Solver (docs/math.md §5; Zhu et al. 2009, Fig. 1 and 2).

Objective sigma ||w||_p^2 / (2(p-1)) + R_emp(w), p in (1, 2], 1/p + 1/q = 1.
Step t on the mini-batch A_t (rows order[pos..pos+k)):

    lambda_t = (1/|A_t|) sum_{i in A_t} c_i l'(<w_{t-1}, x_i>, y_i) x_i
    theta   <- theta - lambda_t
    w_t      = grad r*(theta / ((t+1) sigma + L)) = K_t * phi(theta),
    phi_j    = |theta_j|^{q-1} sgn(theta_j),
    K_t      = ||theta||_q^{2-q} / ((q-1)((t+1) sigma + L))   [* min(1, B / ||w_t||_p)]

with ||w_t||_p = ||theta||_q / ((q-1)((t+1) sigma + L)).  L (``offset``) is 0 for
Lipschitz losses (the paper's map) and max_i c_i l''_i ||x_i||^2 for losses with an
unbounded derivative (fastrisk/solvers/_steps.py).  phi is stored next to
theta and ||theta||_q^q is kept incrementally (|theta_j|^q = |theta_j| |phi_j|),
so a step costs O(nnz) instead of the paper's O(d): the dot products read the
cached phi (no power), each updated coordinate costs one power
|theta_j|^{q-1} (fr_pow.h: table-driven, exponent fixed per call; none for
p = 2 where phi = theta), and ||theta||_q = (||theta||_q^q)^{1/q} (one exp/log)
is recomputed only after steps that changed theta.  ||theta||_q^q is
recomputed exactly at the start of every call.

State arrays owned by Python: theta, phi (length n_weights) and
``scalars`` = [||theta||_q^q, t].
"""

from libc.math cimport exp, log, sqrt, fabs, copysign, isfinite
from libc.stdlib cimport malloc, free
from cython cimport floating

from fr_rows cimport index_t, row_view
from fr_lossfn cimport fr_loss_fn, fr_loss_pointer

cdef enum:
    OK = 0
    OVERFLOW = 1
    BAD_LOSS = 2

STATUS_OK, STATUS_OVERFLOW, STATUS_BAD_LOSS = OK, OVERFLOW, BAD_LOSS


cdef extern from "fr_pow.h" nogil:
    ctypedef struct fr_pow_t:
        pass
    void fr_pow_init(fr_pow_t* P, double a)
    double fr_pow(const fr_pow_t* P, double x)


cdef inline double norm_q_of(double norm_qq, double q) noexcept nogil:
    """||theta||_q from ||theta||_q^q."""
    if norm_qq <= 0.0:
        return 0.0
    return sqrt(norm_qq) if q == 2.0 else exp(log(norm_qq) / q)


cdef inline double link_scale(double norm_q, double norm_qq, double t, double q,
                              double sigma, double B, double offset) noexcept nogil:
    """K_t of the module docstring, from ||theta||_q and ||theta||_q^q (no power)."""
    cdef double c = 1.0 / ((q - 1.0) * (t + 1.0) * sigma + (q - 1.0) * offset), K
    if norm_qq <= 0.0:
        return 0.0
    K = c if q == 2.0 else norm_q * norm_q / norm_qq * c   # ||theta||_q^{2-q} c
    if B > 0.0 and norm_q * c > B:                            # ||w_t||_p = ||theta||_q c
        K *= B / (norm_q * c)
    return K


cdef inline double update(double* theta, double* phi, Py_ssize_t j, double delta,
                          const fr_pow_t* power, bint linear) noexcept nogil:
    """theta_j += delta, phi_j = |theta_j|^{q-1} sgn(theta_j) follows (phi = theta
    for p = 2); returns the change of |theta_j|^q = |theta_j| |phi_j|."""
    cdef double before = fabs(theta[j]) * fabs(phi[j]), th = theta[j] + delta, mag
    theta[j] = th
    if linear:
        phi[j] = th
        return th * th - before
    mag = fr_pow(power, fabs(th))       # fr_pow(0) = 0
    phi[j] = copysign(mag, th)          # no branch on the sign (it is unpredictable)
    return fabs(th) * mag - before


def pgs_epoch(const floating[::1] data, const index_t[::1] indices,
              const index_t[::1] indptr, bint dense, double bias,
              const double[::1] y, const double[::1] sample_weight,
              const Py_ssize_t[::1] order, Py_ssize_t batch_size,
              int loss, double loss_param, double sigma, double p, double B,
              double[::1] theta, double[::1] phi, double[::1] scalars, double offset=0.0):
    """Run the PGS steps over ``order``; returns (status, rows processed, coordinate updates).

    ``B > 0`` restricts w to {||w||_p <= B}; ``sample_weight`` is empty for
    unit weights; ``offset`` is L (module docstring).  See the module docstring for
    the state.
    """
    cdef fr_loss_fn lossfn = fr_loss_pointer(loss)
    cdef double q = p / (p - 1.0), t = scalars[1], norm_qq = 0.0, norm_q, K, f, dl, s
    cdef Py_ssize_t n = order.shape[0], D = theta.shape[0], pos = 0, b, k, i, j, nnz, last
    cdef Py_ssize_t n_updates = 0
    cdef bint linear = q == 2.0, changed
    cdef fr_pow_t power
    cdef const floating* val
    cdef const index_t* idx
    cdef double* deriv
    cdef const double* cw = &sample_weight[0] if sample_weight.shape[0] > 0 else NULL
    cdef int status = OK
    if lossfn == NULL:
        return BAD_LOSS, 0, 0
    if batch_size < 1 or phi.shape[0] != D:
        raise ValueError("batch_size must be >= 1 and phi must have len(theta)")
    deriv = <double*>malloc(min(batch_size, max(n, 1)) * sizeof(double))  # a step: <= n rows
    if deriv == NULL:
        raise MemoryError()
    last = D - 1
    with nogil:
        fr_pow_init(&power, q - 1.0)
        for j in range(D):
            norm_qq += fabs(theta[j]) * fabs(phi[j])
        norm_q = norm_q_of(norm_qq, q)
        K = link_scale(norm_q, norm_qq, t, q, sigma, B, offset)
        while pos < n:
            b = batch_size if n - pos >= batch_size else n - pos
            for k in range(b):
                i = order[pos + k]
                nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                s = 0.0
                for j in range(nnz):
                    s += val[j] * phi[idx[j]]
                if bias != 0.0:
                    s += bias * phi[last]
                f = K * s
                lossfn(f, y[i], loss_param, &dl)
                deriv[k] = dl * cw[i] if cw != NULL else dl
            changed = False
            for k in range(b):
                if deriv[k] != 0.0:
                    changed = True
                    i = order[pos + k]
                    dl = -deriv[k] / b
                    nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                    n_updates += nnz
                    for j in range(nnz):
                        norm_qq += update(&theta[0], &phi[0], idx[j], dl * val[j], &power, linear)
                    if bias != 0.0:
                        norm_qq += update(&theta[0], &phi[0], last, dl * bias, &power, linear)
            if changed:
                if norm_qq < 0.0:
                    norm_qq = 0.0
                norm_q = norm_q_of(norm_qq, q)
            t += 1.0
            K = link_scale(norm_q, norm_qq, t, q, sigma, B, offset)
            pos += b
            if not isfinite(norm_qq):
                status = OVERFLOW
                break
    free(deriv)
    scalars[0], scalars[1] = norm_qq, t
    return status, pos, n_updates


def pgs_weights(double[::1] theta, double[::1] phi, double[::1] scalars, double sigma,
                double p, double B, double[::1] out, double offset=0.0):
    """out <- w_t = K_t phi (the current iterate); returns ||w_t||_p."""
    cdef double q = p / (p - 1.0), norm_qq = 0.0, norm_q, norm_p, K
    cdef Py_ssize_t j, D = theta.shape[0]
    if phi.shape[0] != D or out.shape[0] != D:
        raise ValueError("theta, phi and out must have the same length")
    for j in range(D):
        norm_qq += fabs(theta[j]) * fabs(phi[j])
    norm_q = norm_q_of(norm_qq, q)
    K = link_scale(norm_q, norm_qq, scalars[1], q, sigma, B, offset)
    norm_p = norm_q / ((q - 1.0) * (scalars[1] + 1.0) * sigma + (q - 1.0) * offset)
    for j in range(D):
        out[j] = K * phi[j]
    return min(norm_p, B) if B > 0.0 else norm_p


def fixed_power(const double[::1] x, double a, double[::1] out):
    """out_j <- x_j^a for x_j >= 0 with fr_pow.h (the kernel's |theta_j|^{q-1}); for tests."""
    cdef fr_pow_t power
    cdef Py_ssize_t j
    if out.shape[0] != x.shape[0]:
        raise ValueError("x and out must have the same length")
    fr_pow_init(&power, a)
    for j in range(x.shape[0]):
        out[j] = fr_pow(&power, x[j])
