"""Inner problems of the bundle methods: small dense QPs over the simplex.

BMRM's dual (12) (MATH.md 4) and the proximal bundle dual both have the form

    minimize  f(beta) = 0.5 beta^T H beta - c^T beta   over the simplex  beta >= 0, sum beta = 1

once the constant cut ``max(0, ...)`` of the model ``R_t`` is kept as an
explicit cut (a = 0, b = 0): its multiplier is the slack of ``sum alpha <= 1``.
H is the (scaled) Gram matrix of the cuts, positive semidefinite and possibly
singular (repeated or collinear cuts), of size at most the bundle bound.

``simplex_qp`` is a primal active-set method (Nocedal & Wright, Algorithm
16.3, specialised to one equality and non-negativity bounds).  Each step
solves the KKT system on the free set F,

    [H_FF + rho I   1] [beta_F]   [c_F]
    [1^T            0] [  nu  ] = [ 1 ],

moves towards its solution until a variable hits zero (ratio test) and, at a
KKT point of the face, frees the fixed variable with the most negative
reduced gradient ``g_i + nu``.  The tiny ridge ``rho`` (1e-13 of the largest
diagonal entry) makes the systems non-singular when cuts repeat; it moves the
minimizer by O(rho) only, and the bundle methods never rely on the exact
minimizer for their certificate: any feasible beta gives a lower bound.
Warm-started from the previous solution (the new cut enters at 0), a call
usually needs one to three solves of size |F| + 1.
"""

import numpy as np

RIDGE = 1e-13


def simplex_qp(H, c, beta0, *, max_iter=None, tol=1e-13):
    """Minimize 0.5 b^T H b - c^T b over the simplex, from the feasible ``beta0``.

    Returns (beta, n_solves).  ``tol`` is relative to the scale of the
    gradient; the result is feasible to rounding (non-negative, sum 1).
    """
    k = len(c)
    beta = np.maximum(np.asarray(beta0, dtype=np.float64), 0.0)
    beta /= beta.sum()
    scale = max(float(np.abs(np.diag(H)).max(initial=0.0)), float(np.abs(c).max(initial=0.0)),
                1e-300)
    rho = RIDGE * scale
    free = beta > 0.0
    max_iter = 10 * k + 50 if max_iter is None else max_iter
    n_solves = 0
    for _ in range(max_iter):
        F = np.flatnonzero(free)
        n = len(F)
        K = np.empty((n + 1, n + 1))
        K[:n, :n] = H[np.ix_(F, F)]
        K.flat[: (n + 1) * n: n + 2] += rho
        K[:n, n] = 1.0
        K[n, :n] = 1.0
        K[n, n] = 0.0
        rhs = np.empty(n + 1)
        rhs[:n] = c[F]
        rhs[n] = 1.0
        try:
            sol = np.linalg.solve(K, rhs)
        except np.linalg.LinAlgError:
            sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
        n_solves += 1
        target, nu = sol[:n], sol[n]
        current = beta[F]
        step = target - current
        shrinking = np.flatnonzero(step < 0.0)
        if len(shrinking):
            ratios = current[shrinking] / -step[shrinking]
            j = int(np.argmin(ratios))
            if ratios[j] < 1.0:
                beta[F] = np.maximum(current + ratios[j] * step, 0.0)
                hit = F[shrinking[j]]
                beta[hit] = 0.0
                free[hit] = False
                continue
        beta[F] = target
        # KKT of the face reached: the reduced gradients g_i + nu of the fixed variables
        # (nu the multiplier of sum beta = 1) must be >= 0; free the most negative one.
        reduced = H @ beta - c + nu
        reduced[free] = np.inf
        j = int(np.argmin(reduced))
        if reduced[j] >= -tol * scale:
            break
        free[j] = True
    beta = np.maximum(beta, 0.0)
    return beta / beta.sum(), n_solves
