"""Shared fixtures for the step-by-step tests of the stochastic primal solvers."""

import numpy as np
import scipy.sparse as sp

from fastrisk.losses import LOSSES


def small_data(seed=0, m=40, d=12, density=0.4, dtype=np.float64, sparse=True):
    """A small random binary problem: X (CSR or dense, Gaussian entries), y in {-1, +1}."""
    rng = np.random.default_rng(seed)
    X = sp.random(m, d, density=density, random_state=seed, format="csr", dtype=np.float64)
    X.data = rng.standard_normal(X.nnz)
    X = X.astype(dtype)
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    return (X if sparse else X.toarray()), y


def dloss(name):
    """Scalar derivative l'(f, y) from the loss registry's NumPy reference."""
    ref = LOSSES[name].reference
    return lambda f, y: float(ref(np.array([f]), np.array([y]), None)[1][0])


def dense_with_bias(problem):
    """The problem's X as a dense float64 matrix, with the intercept column appended."""
    X = problem.data.X
    X = (X.toarray() if sp.issparse(X) else np.asarray(X)).astype(np.float64)
    if problem.data.bias:
        X = np.hstack([X, np.full((X.shape[0], 1), problem.data.bias)])
    return X


DENSE_CELLS = 2**24  # at most this many entries in a replay's dense block (wide data: IMDB)


def replay_prefix(X, order, steps):
    """The first rows of ``order`` (CSR X), at most ``steps`` of them, halved until the
    dense block of the columns they touch holds at most DENSE_CELLS entries: the rows a
    benchmark replays through a NumPy reference on those columns."""
    while steps > 1 and steps * len(np.unique(X[order[:steps]].indices)) > DENSE_CELLS:
        steps //= 2
    return order[:steps]
