"""Plain NumPy Primal Gradient Solver (Zhu et al. 2009, Fig. 1 and Fig. 2), one explicit O(d) step at a time.

w_t is computed from theta with Fig. 2's formula over every coordinate (no
cached phi, no incremental norm), as the paper states it.
"""

import numpy as np


def link(theta, t, sigma, p, B=None, offset=0.0):
    """w_t = grad r*(theta / ((t+1) sigma + offset)), projected on ||w||_p <= B (Fig. 2;
    ``offset`` is the L of losses with an unbounded derivative, 0 in the paper)."""
    q = p / (p - 1.0)
    u = theta / ((t + 1) * sigma + offset)
    norm_q = np.sum(np.abs(u) ** q) ** (1.0 / q)
    if norm_q == 0.0:
        return np.zeros_like(theta)
    w = norm_q ** (2.0 - q) * np.abs(u) ** (q - 1.0) * np.sign(u) / (q - 1.0)
    if B is not None:
        norm_p = np.sum(np.abs(w) ** p) ** (1.0 / p)
        if norm_p > B:
            w = w * (B / norm_p)
    return w


def pgs_steps(X, y, order, *, sigma, p, B=None, batch_size=1, dloss, c=None, offset=0.0):
    """Iterates w_1, w_2, ... of PGS over ``order`` in mini-batches."""
    X = np.asarray(X, dtype=np.float64)
    m, d = X.shape
    c = np.ones(m) if c is None else c
    theta = np.zeros(d)
    w = np.zeros(d)
    iterates = []
    for t, pos in enumerate(range(0, len(order), batch_size), start=1):
        batch = order[pos:pos + batch_size]
        lam_t = sum(c[i] * dloss(X[i] @ w, y[i]) * X[i] for i in batch) / len(batch)
        theta = theta - lam_t
        w = link(theta, t, sigma, p, B, offset)
        iterates.append(w.copy())
    return iterates
