"""Oracle against a plain NumPy computation on the bundled a9a (foundation smoke test)."""

import numpy as np
import pytest

import fastrisk as fr
from fastrisk.datasets import load_a9a


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_logistic_oracle_matches_numpy(n_threads, fit_intercept):
    X, y, _, _ = load_a9a()
    prob = fr.Problem(X, y, loss="logistic", alpha=1e-4, n_threads=n_threads,
                      fit_intercept=fit_intercept, n_partitions=3)
    w = np.random.default_rng(0).normal(size=prob.n_weights) * 0.1
    risk, grad = prob.oracle(w)
    f = X @ w[:123] + (w[-1] if fit_intercept else 0.0)
    yy = np.where(y > 0, 1.0, -1.0)
    g = -yy / (1 + np.exp(yy * f))
    ref_grad = X.T @ g / len(y)
    if fit_intercept:
        ref_grad = np.r_[ref_grad, g.mean()]
    # float64 sums of 32561 terms in a different order: 1e-12 relative is ample
    assert risk == pytest.approx(np.mean(np.logaddexp(0, -yy * f)), rel=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-14)
