"""The diagonal of the Hessian of J at a point: L-BFGS's diagonal scaling (docs/math.md §4).

For a scalar loss twice differentiable in the score, the Hessian of
``R_emp(w) = (1/m) sum_i c_i l(<w, x_i>, y_i)`` is ``(1/m) X^T D X`` with
``D_ii = c_i l''(f_i, y_i)`` (Lin, Weng & Keerthi 2008, section 3), so its
diagonal is ``(1/m) sum_i D_ii x_ij^2``.  For softmax,
``l(s, y) = log sum_c exp(s_c) - s_y``, the block of class c has
``D_ic = c_i p_ic (1 - p_ic)``, the diagonal of the score Hessian
``diag(p_i) - p_i p_i^T`` with p_i = softmax(s_i), so the
diagonal entry of (class c, feature j) is ``(1/m) sum_i D_ic x_ij^2``.  The
penalty adds ``alpha`` (the curvature of ``alpha/2 ||w||^2``; for the other
differentiable penalties the same positive floor, which keeps P positive).

Both come from ``_hessian.scatter``, which forms diag(X^T D X) in one pass
over the rows (one pass per class for softmax), with the oracle's threads and
fixed-order sums: the same bits on every run for a fixed thread count.
"""

import numpy as np

from fastrisk import _hessian
from fastrisk.oracle import LocalOracle, VectorOracle


def has_diagonal(problem):
    """True when ``hessian_diagonal`` applies: a smooth scalar loss on a local oracle, or
    softmax; other losses (kinks, coupled classes) and oracle-only problems have none.  A
    problem split into row partitions (``n_partitions > 1``, the local mirror of a Dask
    oracle, whose rows stay on the workers) has none either, so that both run the same
    steps."""
    oracle, spec = problem.oracle, getattr(problem.loss, "spec", None)
    if spec is None or problem.data is None or len(getattr(oracle, "partitions", ())) != 1:
        return False
    if isinstance(oracle, LocalOracle):
        return spec.smooth and not spec.vector
    return isinstance(oracle, VectorOracle) and oracle.loss_name == "softmax"


def _softmax_curvature(problem, w):
    """(m, k) matrix D_ic = c_i p_ic (1 - p_ic) at W = w reshaped (k, n_weights / k); at
    W = 0 (the default start) p_ic = 1/k and the k columns coincide: (m, 1)."""
    data, k = problem.data, problem.n_classes
    if not np.any(w):
        D = np.full((problem.n_samples, 1), (k - 1.0) / k**2)
    else:
        W = np.asarray(w, dtype=np.float64).reshape(k, -1)
        S = np.column_stack([data.decision(W[c]) for c in range(k)])
        S -= S.max(axis=1, keepdims=True)
        P = np.exp(S)
        P /= P.sum(axis=1, keepdims=True)
        D = P * (1.0 - P)
    if problem.sample_weight is not None:
        D *= np.asarray(problem.sample_weight, dtype=np.float64)[:, None]
    return D


def hessian_diagonal(problem, w):
    """P, the diagonal of the Hessian of J at w (float64, n_weights entries, each at least
    alpha > 0); requires ``has_diagonal(problem)``.  Away from 0, one oracle pass for the
    scores of a scalar loss (k matrix-vector products for softmax), then one scatter pass
    (k for softmax; one at W = 0)."""
    data, oracle = problem.data, problem.oracle
    rows = (data.data, data.indices, data.indptr, data.dense, data.bias)
    m = problem.n_samples
    workspace = np.empty((oracle.n_threads, 2 * data.n_weights))
    zeros = np.zeros(m)
    out = np.empty(data.n_weights)
    if isinstance(oracle, VectorOracle):
        D = _softmax_curvature(problem, w)
        k = D.shape[1]  # 1 at W = 0: one pass gives every class's block
        diag = np.empty((k, data.n_weights))
        for c in range(k):
            _hessian.scatter(*rows, zeros, out, workspace, oracle.n_threads,
                             np.ascontiguousarray(D[:, c]), diag[c])
        diag = np.tile(diag, (problem.n_classes // k, 1)).ravel()
    else:
        f = oracle.with_scores(w)[2] if np.any(w) else zeros  # the scores (0 at w = 0)
        D = np.empty(m)
        _hessian.curvature(problem.loss.spec.kernel_id, problem.loss.param, f, oracle.y,
                           oracle.c, D)
        diag = np.empty(data.n_weights)
        _hessian.scatter(*rows, zeros, out, workspace, oracle.n_threads, D, diag)
    return diag * (1.0 / m) + problem.alpha
