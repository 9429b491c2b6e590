"""NumPy reference for the vector-loss risk oracle (BMRM Table 2; docs/math.md §2-3).

``F = X W^T`` (+ intercept column), each row's loss and gradient in F written
from its definition with NumPy, then ``grad = G^T X / m``: the computation the
compiled kernel (csrc/_voracle.pyx) must reproduce.  Independent of
fastrisk.losses.  ``numpy_oracle`` is also the NumPy/scipy oracle the
benchmarks compare the kernel with.
"""

import numpy as np
import scipy.sparse as sp


def row_losses(name, F, y, *, cost=None, beta=1.0, M=None):
    """(values (m,), G (m, k)) of a vector loss at scores F."""
    m, k = F.shape
    rows = np.arange(m)
    if name == "softmax":
        mx = F.max(axis=1, keepdims=True)
        E = np.exp(F - mx)
        Z = E.sum(axis=1)
        G = E / Z[:, None]
        G[rows, y] -= 1.0
        return mx[:, 0] + np.log(Z) - F[rows, y], G
    if name == "multivariate_regression":
        R = F - y
        G = R @ M
        return 0.5 * (G * R).sum(axis=1), G
    if name == "multiclass_hinge":
        cost, S = 1.0 - np.eye(k), np.ones((k, k))
    else:
        cost = 1.0 - np.eye(k) if cost is None else cost
        S = cost ** beta
    T = S[y] * (F - F[rows, y][:, None] + cost[y])
    T[rows, y] = 0.0
    star = T.argmax(axis=1)  # first maximizer, the y term counting as 0
    G = np.zeros_like(F)
    G[rows, star] += S[y, star]
    G[rows, y] -= S[y, star]
    return T[rows, star], G


def numpy_oracle(X, y, W, name, *, c=None, bias=0.0, **params):
    """(R_emp, gradient (k, D)) for W of shape (k, D), D = d (+1 with bias)."""
    d = X.shape[1]
    F = np.asarray(X @ W[:, :d].T, dtype=np.float64)
    if bias:
        F += bias * W[:, d]
    values, G = row_losses(name, F, y, **params)
    if c is not None:
        values = values * c
        G *= c[:, None]
    grad = np.empty_like(W)
    grad[:, :d] = np.asarray(X.T @ G).T if sp.issparse(X) else (np.asarray(X).T @ G).T
    if bias:
        grad[:, d] = bias * G.sum(axis=0)
    return values.sum() / len(F), grad / len(F)
