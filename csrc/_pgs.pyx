# cython: language_level=3
"""Epoch kernel of the Primal Gradient Solver (MATH.md 5; seed 003, Fig. 1 and 2).

Objective sigma ||w||_p^2 / (2(p-1)) + R_emp(w), p in (1, 2], 1/p + 1/q = 1.
Step t on the mini-batch A_t (rows order[pos..pos+k)):

    lambda_t = (1/|A_t|) sum_{i in A_t} c_i l'(<w_{t-1}, x_i>, y_i) x_i
    theta   <- theta - lambda_t
    w_t      = grad r*(theta / ((t+1) sigma)) = K_t * phi(theta),
    phi_j    = |theta_j|^{q-1} sgn(theta_j),
    K_t      = ||theta||_q^{2-q} / ((q-1)(t+1) sigma)   [* min(1, B / ||w_t||_p)]

with ||w_t||_p = ||theta||_q / ((q-1)(t+1) sigma).  phi is stored next to
theta and ||theta||_q^q is kept incrementally (|theta_j|^q = |theta_j| |phi_j|),
so a step costs O(nnz) (one exp and one log per updated coordinate, none
for p = 2 where phi = theta; plus one exp/log per step for K_t) instead of
the paper's O(d).  ||theta||_q^q is recomputed
exactly at the start of every call.

State arrays owned by Python: theta, phi (length n_weights) and
``scalars`` = [||theta||_q^q, t].
"""

from libc.math cimport exp, log, fabs, isfinite
from libc.stdlib cimport malloc, free
from cython cimport floating

from fr_rows cimport index_t, row_view
from fr_lossfn cimport fr_loss_fn, fr_loss_pointer

cdef enum:
    OK = 0
    OVERFLOW = 1
    BAD_LOSS = 2

STATUS_OK, STATUS_OVERFLOW, STATUS_BAD_LOSS = OK, OVERFLOW, BAD_LOSS


cdef inline double norm_p_of(double norm_qq, double t, double q, double sigma) noexcept nogil:
    """||w_t||_p = ||theta||_q / ((q-1)(t+1) sigma) before any rescaling."""
    return exp(log(norm_qq) / q) / ((q - 1.0) * (t + 1.0) * sigma) if norm_qq > 0.0 else 0.0


cdef inline double link_scale(double norm_qq, double t, double q, double sigma,
                              double B) noexcept nogil:
    """K_t of the module docstring (one exp/log per step; the norm only when B > 0)."""
    cdef double K, norm_p
    if norm_qq <= 0.0:
        return 0.0
    K = (1.0 if q == 2.0 else exp((2.0 - q) / q * log(norm_qq))) / ((q - 1.0) * (t + 1.0) * sigma)
    if B > 0.0:
        norm_p = norm_p_of(norm_qq, t, q, sigma)
        if norm_p > B:
            K *= B / norm_p
    return K


cdef inline double phi_of(double theta, double q) noexcept nogil:
    """|theta|^{q-1} sgn(theta), as exp((q-1) log|theta|): about twice as fast as pow
    and within a few ulps of it (relative error ~1e-16 |(q-1) log|theta||)."""
    if q == 2.0:
        return theta
    if theta > 0.0:
        return exp((q - 1.0) * log(theta))
    if theta < 0.0:
        return -exp((q - 1.0) * log(-theta))
    return 0.0


cdef inline double update(double* theta, double* phi, Py_ssize_t j, double delta,
                          double q) noexcept nogil:
    """theta_j += delta, phi_j follows; returns the change of |theta_j|^q."""
    cdef double before = fabs(theta[j]) * fabs(phi[j])
    theta[j] += delta
    phi[j] = phi_of(theta[j], q)
    return fabs(theta[j]) * fabs(phi[j]) - before


def pgs_epoch(const floating[::1] data, const index_t[::1] indices,
              const index_t[::1] indptr, bint dense, double bias,
              const double[::1] y, const double[::1] sample_weight,
              const Py_ssize_t[::1] order, Py_ssize_t batch_size,
              int loss, double loss_param, double sigma, double p, double B,
              double[::1] theta, double[::1] phi, double[::1] scalars):
    """Run the PGS steps over ``order``; returns (status, rows processed, coordinate updates).

    ``B > 0`` restricts w to {||w||_p <= B}; ``sample_weight`` is empty for
    unit weights.  See the module docstring for the state.
    """
    cdef fr_loss_fn lossfn = fr_loss_pointer(loss)
    cdef double q = p / (p - 1.0), t = scalars[1], norm_qq = 0.0, K, f, dl, s
    cdef Py_ssize_t n = order.shape[0], D = theta.shape[0], pos = 0, b, k, i, j, nnz, last
    cdef Py_ssize_t n_updates = 0
    cdef const floating* val
    cdef const index_t* idx
    cdef double* deriv
    cdef const double* cw = &sample_weight[0] if sample_weight.shape[0] > 0 else NULL
    cdef int status = OK
    if lossfn == NULL:
        return BAD_LOSS, 0, 0
    if batch_size < 1 or phi.shape[0] != D:
        raise ValueError("batch_size must be >= 1 and phi must have len(theta)")
    deriv = <double*>malloc(batch_size * sizeof(double))
    if deriv == NULL:
        raise MemoryError()
    last = D - 1
    with nogil:
        for j in range(D):
            norm_qq += fabs(theta[j]) * fabs(phi[j])
        K = link_scale(norm_qq, t, q, sigma, B)
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
            for k in range(b):
                if deriv[k] != 0.0:
                    i = order[pos + k]
                    dl = -deriv[k] / b
                    nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
                    n_updates += nnz
                    for j in range(nnz):
                        norm_qq += update(&theta[0], &phi[0], idx[j], dl * val[j], q)
                    if bias != 0.0:
                        norm_qq += update(&theta[0], &phi[0], last, dl * bias, q)
            if norm_qq < 0.0:
                norm_qq = 0.0
            t += 1.0
            K = link_scale(norm_qq, t, q, sigma, B)
            pos += b
            if not isfinite(norm_qq):
                status = OVERFLOW
                break
    free(deriv)
    scalars[0], scalars[1] = norm_qq, t
    return status, pos, n_updates


def pgs_weights(double[::1] theta, double[::1] phi, double[::1] scalars, double sigma,
                double p, double B, double[::1] out):
    """out <- w_t = K_t phi (the current iterate); returns ||w_t||_p."""
    cdef double q = p / (p - 1.0), norm_qq = 0.0, norm_p, K
    cdef Py_ssize_t j, D = theta.shape[0]
    if phi.shape[0] != D or out.shape[0] != D:
        raise ValueError("theta, phi and out must have the same length")
    for j in range(D):
        norm_qq += fabs(theta[j]) * fabs(phi[j])
    K = link_scale(norm_qq, scalars[1], q, sigma, B)
    norm_p = norm_p_of(norm_qq, scalars[1], q, sigma)
    for j in range(D):
        out[j] = K * phi[j]
    return min(norm_p, B) if B > 0.0 else norm_p
