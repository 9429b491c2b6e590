"""Inner problems of the bundle methods: small dense QPs over the simplex.

BMRM's dual (12) (docs/math.md §4) and the proximal bundle dual both have the form

    minimize  f(beta) = 0.5 beta^T H beta - c^T beta   over the simplex  beta >= 0, sum beta = 1

once the constant cut ``max(0, ...)`` of the model ``R_t`` is kept as an
explicit cut (a = 0, b = 0): its multiplier is the slack of ``sum alpha <= 1``.
H is the (scaled) Gram matrix of the cuts, positive semidefinite and possibly
singular (repeated or collinear cuts), of size at most the bundle bound.

``simplex_qp`` runs the compiled primal active-set method of
``fastrisk._qp.simplex_active_set`` (Nocedal & Wright, Algorithm 16.3,
specialised to one equality and non-negativity bounds; csrc/_qp.pyx) from a
feasible start, in practice the previous solution with 0 for the new cut.
On the current face F (the free variables) it solves for the face's
minimizer with a Cholesky factor of the face's reduced Hessian (one reference
variable eliminated through sum beta = 1) that is updated, not recomputed,
when a variable enters or leaves (O(|F|^2) per step, |F| = the active cuts,
a few tens in BMRM), moves towards that minimizer until a variable hits zero
(ratio test) and, at the face's minimizer, lets in the fixed variable of
smallest gradient.  The tiny ridge ``rho`` (1e-13 of the scale) keeps the
factor positive definite when cuts repeat or are affinely dependent; it moves
the minimizer by O(rho) only.  Warm-started, a call usually needs a few
cheap steps.

Accuracy and certificates: the solver stops when the violation
``v = max_{beta_i > 0} g_i - min_i g_i`` (g = H beta - c) is at most
``max(tol * scale, rtol * (f(beta) - f_lower))``; v bounds the duality gap
``f(beta) - min f`` of the QP.  Any feasible beta is a valid dual point, so
the bundle methods' lower bounds computed from the returned beta are true
lower bounds whatever the accuracy; the accuracy only decides how close
the next iterate is to the exact minimizer of the model (see bmrm.py).
"""

from typing import NamedTuple

import numpy as np

from fastrisk._qp import simplex_active_set

RIDGE = 1e-13
STATUS = {0: "converged", 1: "max_solves"}


class QPInfo(NamedTuple):
    value: float      # f(beta) at the returned beta
    violation: float  # max_{beta_i > 0} g_i - min_i g_i >= f(beta) - min f
    n_solves: int
    status: str


def simplex_qp(H, c, beta0, *, tol=1e-13, rtol=0.0, f_lower=-np.inf, max_solves=None):
    """Minimize 0.5 b^T H b - c^T b over the simplex, from ``beta0`` (non-negative, non-zero).

    H: (k, k) symmetric PSD with contiguous rows (a leading block of a larger
    array is used without a copy); c: (k,); beta0 is clipped at 0 and scaled
    onto the simplex.  Stops when the violation is at most ``tol`` times
    ``max(max_i |H_ii|, max_i |c_i|)`` or at most ``rtol * (f(beta) - f_lower)``,
    ``f_lower`` a lower bound of the minimum, or when no fixed variable can
    enter at a face's KKT point; ``max_solves`` (default ``10 k + 50``) bounds
    the face solves.  Returns (beta, QPInfo).
    """
    H = np.asarray(H, dtype=np.float64)
    if H.ndim != 2 or H.strides[1] != 8:
        H = np.ascontiguousarray(H, dtype=np.float64)
    c = np.ascontiguousarray(c, dtype=np.float64)
    k = len(c)
    if H.shape != (k, k) or k == 0:
        raise ValueError(f"H must be a square matrix matching c (length {k} > 0), "
                         f"got H of shape {H.shape}")
    beta = np.maximum(np.asarray(beta0, dtype=np.float64).ravel(), 0.0)
    if beta.shape != (k,) or not beta.sum() > 0 or not np.isfinite(beta).all():
        raise ValueError(f"beta0 must be a finite non-negative non-zero vector of length {k}")
    beta /= beta.sum()
    max_solves = 10 * k + 50 if max_solves is None else int(max_solves)
    status, n_solves, value, violation = simplex_active_set(
        H, c, beta, RIDGE, tol, rtol, float(f_lower), max_solves)
    return beta, QPInfo(value, violation, n_solves, STATUS[status])
