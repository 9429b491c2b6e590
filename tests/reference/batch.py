"""Independent optima for the batch-solver tests: scipy on textbook formulations.

Nothing here calls fastrisk: losses come from plain NumPy, problems go to
scipy's L-BFGS-B (smooth or box-constrained forms) or HiGHS (LPs).
"""

import functools

import numpy as np
from scipy.optimize import linprog, minimize
from scipy.special import logsumexp
from threadpoolctl import threadpool_limits

TIGHT = dict(ftol=1e-15, gtol=1e-12, maxiter=50_000, maxfun=100_000)


def _one_blas_thread(solve):
    """Run ``solve`` with one BLAS thread: on these small problems more threads only add
    synchronization, and they contend with the OpenMP threads left by fastrisk's kernels."""

    @functools.wraps(solve)
    def wrapper(*args, **kwargs):
        with threadpool_limits(1, user_api="blas"):
            return solve(*args, **kwargs)

    return wrapper


def smooth_loss(name, f, y, c=None, param=None):
    """(mean loss, d mean / d f) for the smooth losses used in the tests: the mean is
    (1/m) sum_i c_i l(f_i, y_i) (c: sample weights, default ones; not renormalized), the
    losses as in docs/math.md section 2 (param: huber's delta, smoothed_hinge's gamma)."""
    m = len(y)
    c = np.ones(m) if c is None else np.asarray(c, dtype=np.float64)
    if name == "logistic":
        z = y * f
        value, deriv = np.logaddexp(0.0, -z), -y * np.exp(-np.logaddexp(0.0, z))
    elif name == "squared":
        r = f - y
        value, deriv = 0.5 * r * r, r
    elif name == "squared_hinge":
        s = np.maximum(0.0, 1.0 - y * f)
        value, deriv = 0.5 * s * s, -y * s
    elif name == "poisson":
        e = np.exp(f)
        value, deriv = e - y * f, e - y
    elif name == "exponential":
        e = np.exp(-y * f)
        value, deriv = e, -y * e
    elif name == "huber":  # quadratic within delta of y, linear (slope delta) outside
        r = f - y
        a = np.abs(r)
        value = np.where(a <= param, 0.5 * r * r, param * (a - 0.5 * param))
        deriv = np.clip(r, -param, param)
    elif name == "smoothed_hinge":  # 0 above margin 1, linear below 1 - gamma, quadratic between
        s = 1.0 - y * f
        value = np.where(s <= 0.0, 0.0,
                         np.where(s >= param, s - 0.5 * param, s * s / (2.0 * param)))
        deriv = -y * np.clip(s / param, 0.0, 1.0)
    else:
        raise ValueError(name)
    return (c @ value) / m, c * deriv / m


@_one_blas_thread
def l2_smooth_optimum(X, y, loss, alpha, c=None, param=None):
    """min alpha/2 ||w||^2 + (1/m) sum_i c_i l_i by L-BFGS-B at tight tolerance (an
    intercept is a column of X, penalized like the others)."""

    def fun(w):
        v, g = smooth_loss(loss, X @ w, y, c, param)
        return v + 0.5 * alpha * w @ w, X.T @ g + alpha * w

    res = minimize(fun, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B", options=TIGHT)
    return res.fun


@_one_blas_thread
def lp_smooth_optimum(X, y, loss, alpha, p):
    """min alpha ||w||_p^2 / (2(p-1)) + mean loss (p in (1, 2]: differentiable) by L-BFGS-B."""

    def fun(w):
        v, g = smooth_loss(loss, X @ w, y)
        norm = np.linalg.norm(w, p)
        grad_reg = (norm ** (2 - p) * np.abs(w) ** (p - 1) * np.sign(w) if norm > 0
                    else np.zeros_like(w))
        return v + alpha * norm ** 2 / (2 * (p - 1)), X.T @ g + alpha * grad_reg / (p - 1)

    res = minimize(fun, np.full(X.shape[1], 0.1), jac=True, method="L-BFGS-B", options=TIGHT)
    return res.fun


@_one_blas_thread
def enet_smooth_optimum(X, y, loss, alpha, l1_ratio, c=None, param=None):
    """min alpha (r ||w||_1 + (1-r)/2 ||w||^2) + (1/m) sum_i c_i l_i, split w = u - v,
    u, v >= 0, L-BFGS-B (an intercept is a column of X, penalized like the others)."""
    d = X.shape[1]

    def fun(z):
        u, v = z[:d], z[d:]
        w = u - v
        val, g = smooth_loss(loss, X @ w, y, c, param)
        gw = X.T @ g + alpha * (1 - l1_ratio) * w
        reg = alpha * (l1_ratio * z.sum() + 0.5 * (1 - l1_ratio) * w @ w)
        return val + reg, np.concatenate([gw + alpha * l1_ratio, -gw + alpha * l1_ratio])

    res = minimize(fun, np.zeros(2 * d), jac=True, method="L-BFGS-B",
                   bounds=[(0, None)] * (2 * d), options=TIGHT)
    return res.fun


@_one_blas_thread
def hinge_l2_optimum(X, y, alpha, return_w=False):
    """Linear SVM through its dual box QP:
    max sum(a)/m - ||X^T (a y)||^2 / (2 alpha m^2), 0 <= a <= 1.

    Returns the primal J at w = X^T (a y) / (alpha m) (an upper bound, equal to J* at the optimum),
    and w with ``return_w``.
    """
    m = X.shape[0]
    Z = X * y[:, None]

    def neg_dual(a):
        v = Z.T @ a
        return v @ v / (2 * alpha * m * m) - a.sum() / m, Z @ v / (alpha * m * m) - 1.0 / m

    res = minimize(neg_dual, np.full(m, 0.5), jac=True, method="L-BFGS-B",
                   bounds=[(0, 1)] * m, options=TIGHT)
    w = Z.T @ res.x / (alpha * m)
    J = 0.5 * alpha * w @ w + np.maximum(0.0, 1.0 - Z @ w).mean()
    return (J, w) if return_w else J


@_one_blas_thread
def hinge_l1_optimum(X, y, alpha):
    """l1-regularized hinge as an LP: min alpha 1^T (u + v) + mean xi,
    xi >= 1 - y x^T (u - v), HiGHS."""
    m, d = X.shape
    Z = X * y[:, None]
    cost = np.concatenate([np.full(2 * d, alpha), np.full(m, 1.0 / m)])
    A_ub = np.hstack([-Z, Z, -np.eye(m)])
    res = linprog(cost, A_ub=A_ub, b_ub=-np.ones(m), bounds=(0, None), method="highs")
    assert res.status == 0, res.message
    return res.fun


@_one_blas_thread
def softmax_l2_optimum(X, y, n_classes, alpha, c=None):
    """Multiclass softmax with alpha/2 ||W||^2 by L-BFGS-B (W is n_classes x d, flattened);
    the risk is (1/m) sum_i c_i l_i (c: sample weights, default ones; not renormalized)."""
    m, d = X.shape
    c = np.ones(m) if c is None else np.asarray(c, dtype=np.float64)

    def fun(wflat):
        W = wflat.reshape(n_classes, d)
        F = X @ W.T
        lse = logsumexp(F, axis=1)
        P = np.exp(F - lse[:, None])
        P[np.arange(m), y] -= 1.0
        val = c @ (lse - F[np.arange(m), y]) / m
        grad = ((c[:, None] * P).T @ X / m).ravel()
        return val + 0.5 * alpha * wflat @ wflat, grad + alpha * wflat

    res = minimize(fun, np.zeros(n_classes * d), jac=True, method="L-BFGS-B", options=TIGHT)
    return res.fun
