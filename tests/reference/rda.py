"""Plain NumPy, step-by-step, dense implementations of Xiao 2010's algorithms.

Written from the paper's algorithm boxes (running average g_bar, dense w at
every step, penalty applied to every coordinate every step), independently of
the lazy kernels in csrc/_rda.pyx.  X is a dense array that already holds the
intercept column (if any); ``deriv(f, y)`` is the loss derivative (the NumPy
reference of fastrisk.losses); ``c`` the sample weights; ``order`` the row
sequence, consumed in batches of k.  Each returns a dict of final quantities
and ``loss``, the sum of c_i l_i at the query points.
"""

import numpy as np


def _batches(order, k):
    """Batches of k rows; ``order`` may be a list of epochs (batches never straddle them)."""
    if isinstance(order, list):
        return [b for epoch in order for b in _batches(epoch, k)]
    return [order[s:s + k] for s in range(0, len(order), k)]


def _shrink(v, c):
    return np.sign(v) * np.maximum(np.abs(v) - c, 0.0)


def _batch_grad(X, y, c, rows, w, loss):
    f = X[rows] @ w
    val, der = loss(f, y[rows])
    return (c[rows] * der) @ X[rows] / len(rows), float(c[rows] @ val)


def rda(X, y, c, order, k, loss, lam, sigma, gamma, rho, t0=0, g_bar=None, w_sum=None,
        beta=0.0):
    """Algorithms 1/2 with Psi = lam||w||_1 + sigma/2||w||^2, h = 0.5||w||^2 + rho||w||_1,
    beta_t = gamma sqrt(t) + beta.  Returns w_{T+1}, w_bar_T = mean(w_1..w_T), g_bar_T."""
    n = X.shape[1]
    g_bar = np.zeros(n) if g_bar is None else g_bar.copy()
    w_sum = np.zeros(n) if w_sum is None else w_sum.copy()
    t = t0
    w = _rda_w(g_bar, t, lam, sigma, gamma, rho, beta)
    total = 0.0
    for rows in _batches(order, k):
        t += 1
        w_sum += w                                   # w_t
        g, lv = _batch_grad(X, y, c, rows, w, loss)
        total += lv
        g_bar = (t - 1) / t * g_bar + g / t          # step 2
        w = _rda_w(g_bar, t, lam, sigma, gamma, rho, beta)  # step 3 -> w_{t+1}
    return {"w": w, "w_bar": w_sum / t, "g_bar": g_bar, "w_sum": w_sum, "t": t, "loss": total}


def _rda_w(g_bar, t, lam, sigma, gamma, rho, beta=0.0):
    if t == 0:
        return np.zeros_like(g_bar)
    beta_t = gamma * np.sqrt(t) + beta
    lam_t = lam + rho * beta_t / t                   # Algorithm 2, step 3
    return -_shrink(g_bar, lam_t) / (sigma + beta_t / t)


def adaptive_rda(X, y, c, order, k, loss, lam, sigma, eta, beta=0.0):
    """RDA with the diagonal proximal term of Duchi, Hazan & Singer (2011, section 5.1):
    H_t = diag(sqrt(sum_{tau <= t} g_tau^2)) / eta, and Psi = lam||w||_1 + sigma/2||w||^2,
    w_{t+1} = argmin <g_bar_t, w> + Psi(w) + (1/(2t)) <w, (H_t + beta) w>.
    Returns w_{T+1}."""
    n = X.shape[1]
    g_bar, sq = np.zeros(n), np.zeros(n)
    w, total = np.zeros(n), 0.0
    for t, rows in enumerate(_batches(order, k), start=1):
        g, lv = _batch_grad(X, y, c, rows, w, loss)
        total += lv
        g_bar = (t - 1) / t * g_bar + g / t
        sq += g * g
        den = sigma + (np.sqrt(sq) / eta + beta) / t
        w = np.divide(-_shrink(g_bar, lam), den, out=np.zeros(n), where=den > 0)
    return {"w": w, "loss": total}


def accelerated_rda(X, y, c, order, k, loss, lam, sigma, gamma, rho, L):
    """Algorithm 3 with alpha_t = t/2, beta_t = gamma (t+1)^{3/2}/2, h = 0.5||w||^2 + rho||w||_1."""
    n = X.shape[1]
    w, v, g_tilde, A, total = np.zeros(n), np.zeros(n), np.zeros(n), 0.0, 0.0
    for t, rows in enumerate(_batches(order, k), start=1):
        alpha = t / 2.0
        A += alpha
        theta = alpha / A
        u = (1 - theta) * w + theta * v
        g, lv = _batch_grad(X, y, c, rows, u, loss)
        total += lv
        g_tilde = (1 - theta) * g_tilde + theta * g
        beta = gamma * (t + 1) ** 1.5 / 2.0
        kappa = (L + beta) / A
        v = -_shrink(g_tilde, lam + kappa * rho) / (sigma + kappa)
        w = (1 - theta) * w + theta * v
    return {"w": w, "loss": total}


def pnorm_rda(X, y, c, order, k, loss, lam, gamma, rho, p, beta=0.0):
    """Section 7.2: w_{t+1} = link_q(g_hat_t),
    g_hat_t = -((p-1) t / beta_t) shrink(g_bar_t, lam + rho beta_t / t),
    beta_t = gamma sqrt(t) + beta."""
    q = p / (p - 1.0)
    n = X.shape[1]
    g_bar, w, w_sum, t, total = np.zeros(n), np.zeros(n), np.zeros(n), 0, 0.0
    for rows in _batches(order, k):
        t += 1
        w_sum += w
        g, lv = _batch_grad(X, y, c, rows, w, loss)
        total += lv
        g_bar = (t - 1) / t * g_bar + g / t
        beta_t = gamma * np.sqrt(t) + beta
        g_hat = -(p - 1) * t / beta_t * _shrink(g_bar, lam + rho * beta_t / t)
        norm = np.linalg.norm(g_hat, q)
        w = (np.zeros(n) if norm == 0
             else np.sign(g_hat) * np.abs(g_hat) ** (q - 1) / norm ** (q - 2))
    return {"w": w, "w_bar": w_sum / t, "loss": total}


def sgd_l1(X, y, c, order, k, loss, lam, eta, w=None, t0=0):
    """w_{t+1} = w_t - eta (g_t + lam sgn(w_t)) on every coordinate (Xiao 2010, section 6)."""
    w = np.zeros(X.shape[1]) if w is None else w.copy()
    total = 0.0
    for rows in _batches(order, k):
        g, lv = _batch_grad(X, y, c, rows, w, loss)
        total += lv
        w = w - eta * (g + lam * np.sign(w))
    return {"w": w, "loss": total}


def truncated_gradient(X, y, c, order, k, loss, lam, eta, K, w=None, t0=0):
    """Seed 001 (29) with theta = inf: w - eta g_t, soft threshold eta lam K when t % K == 0."""
    w = np.zeros(X.shape[1]) if w is None else w.copy()
    t, total = t0, 0.0
    for rows in _batches(order, k):
        t += 1
        g, lv = _batch_grad(X, y, c, rows, w, loss)
        total += lv
        w = w - eta * g
        if t % K == 0:
            w = _shrink(w, eta * lam * K)
    return {"w": w, "loss": total}


def pnorm_rda_sums(X, y, c, order, k, loss, lam, gamma, rho, p):
    """Section 7.2 in the dense per-step form of the former O(d) kernel: the
    gradient sum S, w_t = link_q(g_hat_{t-1}) with
    g_hat_r = -((p-1)/(gamma sqrt r)) shrink(S, lam r + gamma rho sqrt r),
    the norm over every coordinate.  Also counts the coordinates that leave the
    support between consecutive steps (``n_left``), to show a test exercises it."""
    q = p / (p - 1.0)
    n = X.shape[1]
    S, w_sum, total, n_left, prev = np.zeros(n), np.zeros(n), 0.0, 0, np.zeros(n, bool)
    w = np.zeros(n)
    for t, rows in enumerate(_batches(order, k), start=1):
        r = t - 1
        mag = np.maximum(np.abs(S) - (lam * r + gamma * rho * np.sqrt(r)), 0.0)
        norm_q = float(np.sum(mag ** q))
        w = (np.zeros(n) if norm_q == 0.0 else
             -np.sign(S) * ((p - 1) / (gamma * np.sqrt(r)) / norm_q ** ((q - 2) / q))
             * mag ** (q - 1))
        n_left += int(np.sum(prev & (w == 0)))
        prev = w != 0
        w_sum += w
        g, lv = _batch_grad(X, y, c, rows, w, loss)
        total += lv
        S += g
    return {"w_last_query": w, "w_sum": w_sum, "S": S, "loss": total, "n_left": n_left}
