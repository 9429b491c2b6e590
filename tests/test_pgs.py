"""Primal Gradient Solver (docs/math.md §5; Zhu et al. 2009) against independent references.

The O(nnz) kernel (cached phi(theta), one scalar K_t, incremental
||theta||_q^q) against tests/reference/pgs.py, which applies Fig. 2's O(d)
formula to the whole vector at every step: iterates agree to 1e-10 relative
(a few hundred steps of float64 rounding, pow included).  The optimum for
the convergence test comes from scipy's L-BFGS on the smooth lp-regularized
logistic objective.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from reference.pgs import pgs_steps
from reference.stochastic import dense_with_bias, dloss, small_data
from scipy.optimize import minimize

import fastrisk as fr
from fastrisk import _pgs
from fastrisk.solvers._certificates import fenchel_bound
from fastrisk.solvers.pgs import PGSState, solve_pgs


@pytest.mark.parametrize("p", [2.0, 1.8, 1.3])
@pytest.mark.parametrize("B", [None, 0.5])
@pytest.mark.parametrize("batch_size", [1, 4])
def test_kernel_matches_numpy_step_by_step(p, B, batch_size):
    X, y = small_data(1)
    prob = fr.Problem(X, y, loss="hinge", penalty="lp", p=p, alpha=0.05, fit_intercept=True)
    order = np.random.default_rng(0).permutation(np.tile(np.arange(40), 2)).astype(np.intp)
    iterates = pgs_steps(dense_with_bias(prob), prob.y, order, sigma=prob.alpha, p=p, B=B,
                         batch_size=batch_size, dloss=dloss("hinge"))
    state = PGSState(prob.n_weights, prob.alpha, p, B, batch_size)
    d = prob.data
    for step, ref in enumerate(iterates):
        rows = order[step * batch_size:(step + 1) * batch_size]
        status, done, n_updates = _pgs.pgs_epoch(d.data, d.indices, d.indptr, d.dense, d.bias, prob.y,
                                      np.empty(0), rows, batch_size, prob.loss.spec.kernel_id,
                                      0.0, prob.alpha, p, B or 0.0, state.theta, state.phi,
                                      state.scalars)
        assert status == _pgs.STATUS_OK and done == len(rows) and n_updates >= 0
        np.testing.assert_allclose(state.weights(), ref, rtol=0,
                                   atol=1e-10 * max(1.0, np.abs(ref).max()))
    if B is not None:
        assert np.sum(np.abs(iterates[-1]) ** p) ** (1 / p) <= B * (1 + 1e-12)


@pytest.mark.parametrize("a", [1.25, 1 / 0.3, 1.0 + 1e-7, 10.5, 14.0])
def test_fixed_power_against_long_double(a):
    """fr_pow.h (the kernel's |theta|^{q-1}, q - 1 = a) against numpy's long double
    power.  Inside [2^-64, 2^64) the table path: a few roundings (three products
    and the series), relative error <= 2e-15 (a few ulps).  Outside it, and
    for a = 14 where the 7-term series is too short (|binom(14, 7)| > 256), the
    fallback exp(a log x) loses about |a log x| ulps: tolerance 4 ulps (1 + |a log x|).
    Zero and subnormals must work (0^a = 0)."""
    rng = np.random.default_rng(0)
    x = np.concatenate([np.exp(rng.uniform(-44.0, 44.0, 20000)),         # table range
                        2.0 ** rng.uniform(-1074.0, -64.0, 2000),         # tiny, subnormal
                        2.0 ** rng.uniform(64.0, 1023.0 / a, 2000),       # large, no overflow
                        [0.0, 5e-324, 2.0 ** -64, 2.0 ** 64 * (1 - 2 ** -53), 1.0]])
    out = np.empty_like(x)
    _pgs.fixed_power(x, a, out)
    ref = np.power(x.astype(np.longdouble), np.longdouble(a))
    with np.errstate(divide="ignore"):
        ulps = np.where(x > 0, 1.0 + np.abs(a * np.log(x)), 1.0)
    inside = (x >= 2.0 ** -64) & (x < 2.0 ** 64) & (a < 12)
    tol = np.where(inside, 2e-15, 4 * 2.0 ** -53 * ulps) * ref
    tiny = ref < np.finfo(np.float64).tiny          # results in the subnormal range
    tol = np.where(tiny, np.maximum(tol, 2 * 5e-324), tol)
    assert np.all(np.abs(out - ref) <= tol)
    assert out[-5] == 0.0


@pytest.mark.parametrize("layout", ["csr64", "csr32_i64", "dense32"])
def test_solver_matches_numpy(layout):
    """Through the solver (its permutations, sample weights, logistic loss), to 1e-10."""
    dtype = np.float32 if layout.startswith(("dense32", "csr32")) else np.float64
    X, y = small_data(2, dtype=dtype, sparse=layout.startswith("csr"))
    if layout == "csr32_i64":
        X = sp.csr_matrix((X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)),
                          shape=X.shape)
    for a in ((X.data, X.indices, X.indptr) if sp.issparse(X) else (X,)) + (y,):
        a.flags.writeable = False  # read-only inputs (memmaps) must work
    c = np.random.default_rng(3).random(40) + 0.5
    prob = fr.Problem(X, y, loss="logistic", penalty="lp", p=1.6, alpha=0.02, sample_weight=c)
    res = solve_pgs(prob, max_iter=3, random_state=5, batch_size=2, tol=0)
    rng = np.random.default_rng(5)
    order = np.concatenate([rng.permutation(40) for _ in range(3)])
    ref = pgs_steps(dense_with_bias(prob), prob.y, order, sigma=prob.alpha, p=1.6,
                    batch_size=2, dloss=dloss("logistic"), c=c)[-1]
    assert res.extra["steps"] == 60
    np.testing.assert_allclose(res.w, ref, rtol=0, atol=1e-10 * np.abs(ref).max())


def test_streaming_chunks_equal_one_pass():
    X, y = small_data(4, m=60)
    kw = dict(max_iter=1, shuffle=False, batch_size=3, tol=0, B=2.0)
    prob = fr.Problem(X, y, penalty="lp", p=1.7, alpha=0.01)
    whole = solve_pgs(prob, **kw)
    state = None
    for a, b in [(0, 21), (21, 45), (45, 60)]:
        part = solve_pgs(fr.Problem(X[a:b], y[a:b], penalty="lp", p=1.7, alpha=0.01),
                         start=state, **kw)
        state = part.extra["state"]
    np.testing.assert_array_equal(part.w, whole.w)


def lp_logistic_optimum(X, y, lam, p):
    def J(w):
        z = y * (X @ w)
        norm = np.sum(np.abs(w) ** p) ** (1 / p)
        reg = norm**2 / (2 * (p - 1))
        greg = (norm ** (2 - p) * np.abs(w) ** (p - 1) * np.sign(w) / (p - 1)) if norm > 0 \
            else np.zeros_like(w)
        s = -y / (1 + np.exp(z))
        return lam * reg + np.logaddexp(0, -z).mean(), lam * greg + X.T @ s / len(y)

    sol = minimize(J, np.full(X.shape[1], 0.1), jac=True, method="L-BFGS-B",
                   options=dict(ftol=1e-15, gtol=1e-10, maxiter=5000))
    return sol.fun


@pytest.mark.parametrize("p", [2.0, 1.5])
def test_convergence_within_rate_and_certificate(p):
    """Gap below the dual-averaging rate L^2 (1 + log T) / (delta sigma T), delta = 0.1,
    with L = max ||x_i||_q (Prop. 1); the certificate bounds the true gap from above."""
    rng = np.random.default_rng(6)
    m, dim = 200, 8
    X = rng.standard_normal((m, dim)) / np.sqrt(dim)
    y = np.sign(X @ rng.standard_normal(dim) + 0.5 * rng.standard_normal(m))
    lam = 0.05
    J_star = lp_logistic_optimum(X, y, lam, p)
    prob = fr.Problem(X, y, loss="logistic", penalty="lp", p=p, alpha=lam)
    res = solve_pgs(prob, max_iter=30, random_state=0, tol=0)
    q = p / (p - 1)
    T = res.extra["steps"]
    L = (np.abs(X) ** q).sum(1).max() ** (1 / q)
    gap = res.objective - J_star
    assert -1e-9 <= gap <= L**2 * (1 + np.log(T)) / (0.1 * lam * T)
    assert gap < 1e-3 * J_star
    assert res.gap >= gap - 1e-12
    if p == 2.0:  # the certificate is Lemma 5's ||a + lam w||^2 / (2 lam)
        J, g = prob.objective_gradient(res.w)
        assert res.gap == pytest.approx(g @ g / (2 * lam), rel=1e-9)


def test_certificate_is_tight_at_optimum():
    """At the scipy optimum the Fenchel certificate is ~0 (it is a gap, not just a bound)."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((100, 5))
    y = np.sign(rng.standard_normal(100))
    prob = fr.Problem(X, y, loss="logistic", penalty="lp", p=1.5, alpha=0.1)
    sol = minimize(lambda w: prob.objective_gradient(w), np.full(5, 0.1), jac=True,
                   method="L-BFGS-B", options=dict(ftol=1e-15, gtol=1e-11))
    assert 0 <= fenchel_bound(prob, sol.x)[1] < 1e-9


def test_input_validation():
    X, y = small_data(8)
    prob = fr.Problem(X, y, penalty="lp", p=1.5, alpha=0.1)
    with pytest.raises(ValueError, match="penalty"):
        solve_pgs(fr.Problem(X, y, penalty="l1", alpha=0.1))
    with pytest.raises(ValueError, match="B"):
        solve_pgs(prob, B=0)
    with pytest.raises(ValueError, match="batch_size"):
        solve_pgs(prob, batch_size=2.5)
    with pytest.raises(ValueError, match="state"):
        solve_pgs(prob, start=solve_pgs(prob, max_iter=1, B=1.0).extra["state"])
