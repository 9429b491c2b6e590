"""Multinomial proximal Newton (``solver="mcd"``): the optimum of scipy's L-BFGS-B on the
split form and of scikit-learn's saga, supports, certified gaps never below the true gap,
layouts and dtypes, warm starts and the auto rule."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import logsumexp

import fastrisk as fr


def _problem_data(m=90, d=5, k=3, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    if sparse:
        X[rng.random((m, d)) < 0.6] = 0.0
    W = rng.normal(size=(k, d))
    y = np.argmax(X @ W.T + rng.gumbel(size=(m, k)), axis=1)
    return (sp.csr_matrix(X) if sparse else X), y


def _reference(X, y, k, lam1, lam2, c=None, bias=0.0):
    """J* by L-BFGS-B on W = W+ - W- (W+, W- >= 0: the l1 term is linear there)."""
    X = np.asarray(X.todense()) if sp.issparse(X) else X
    m = X.shape[0]
    Xb = np.hstack([X, np.full((m, 1), bias)]) if bias else X
    n = Xb.shape[1] * k
    c = np.ones(m) if c is None else c
    Y = np.eye(k)[y]

    def f(z):
        W = (z[:n] - z[n:]).reshape(k, -1)
        S = Xb @ W.T
        lse = logsumexp(S, axis=1)
        P = np.exp(S - lse[:, None])
        value = (c * (lse - S[np.arange(m), y])).sum() / m
        gW = ((c[:, None] * (P - Y)).T @ Xb / m + lam2 * W).ravel()
        value += lam1 * z.sum() + 0.5 * lam2 * (W * W).sum()
        return value, np.concatenate([gW + lam1, -gW + lam1])

    res = minimize(f, np.zeros(2 * n), jac=True, method="L-BFGS-B", bounds=[(0, None)] * (2 * n),
                   options={"ftol": 0.0, "gtol": 1e-13, "maxiter": 50_000, "maxfun": 100_000})
    return res.fun, res.x[:n] - res.x[n:]


CASES = [  # (penalty kwargs, fit_intercept, sample weights)
    ({"penalty": "l1"}, False, False),
    ({"penalty": "elasticnet", "l1_ratio": 0.7}, True, True),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("sparse", [False, True])
def test_reaches_the_scipy_optimum_and_support(case, sparse):
    pen, fit_intercept, weighted = CASES[case]
    X, y = _problem_data(sparse=sparse)
    c = np.random.default_rng(1).uniform(0.3, 2.0, len(y)) if weighted else None
    alpha = 0.02
    prob = fr.Problem(X, y, loss="softmax", alpha=alpha, sample_weight=c,
                      fit_intercept=fit_intercept, **pen)
    r = pen.get("l1_ratio", 1.0)
    J_star, w_ref = _reference(X, y, 3, alpha * r, alpha * (1 - r), c,
                               1.0 if fit_intercept else 0.0)
    res = fr.solve(prob, solver="mcd", tol=1e-10, max_iter=500)
    assert res.status == "converged"
    # certified: 0 <= J(w) - J* <= gap <= 1e-10 J; L-BFGS-B's J* is good to ~1e-9
    assert res.objective == pytest.approx(J_star, rel=1e-7)
    assert res.objective == pytest.approx(prob.objective(res.w), rel=1e-12)
    assert res.gap >= res.objective - J_star - 1e-9
    # the support: L-BFGS-B's split variables are exact zeros off it (the bounds are active)
    assert np.array_equal(res.w != 0.0, np.abs(w_ref) > 1e-7)
    assert (res.w == 0.0).any()  # the l1 term zeroes coordinates: the check is not vacuous


def test_certified_gap_never_below_the_true_gap():
    X, y = _problem_data(m=120, d=6, seed=3)
    prob = fr.Problem(X, y, loss="softmax", penalty="l1", alpha=0.01)
    J_star, _ = _reference(X, y, 3, 0.01, 0.0)
    res = fr.solve(prob, solver="mcd", tol=0.0, max_iter=6)
    h = res.history.as_arrays()
    assert np.all(h["objective"] - J_star <= h["bound"] + 1e-9)
    assert h["bound"][1] > 1e-4  # early iterates: not yet converged, the check bites


def test_matches_scikit_learn_saga():
    from sklearn.linear_model import LogisticRegression

    X, y = _problem_data(m=150, d=8, k=4, seed=5, sparse=True)
    alpha = 0.01
    prob = fr.Problem(X, y, loss="softmax", penalty="l1", alpha=alpha)
    res = fr.solve(prob, solver="mcd", tol=1e-10)
    sk = LogisticRegression(l1_ratio=1.0, solver="saga", C=1.0 / (alpha * len(y)),
                            fit_intercept=False, tol=1e-12, max_iter=200_000).fit(X, y)
    J_sk = prob.objective(sk.coef_.ravel())
    assert res.objective <= J_sk * (1 + 1e-9)  # certified optimum, at or below saga's
    assert res.objective == pytest.approx(J_sk, rel=1e-6)
    assert res.objective - res.gap <= J_sk * (1 + 1e-12)  # weak duality


@pytest.mark.parametrize("layout", ["dense32", "csr64", "csr32_int64"])
def test_layouts_and_dtypes_give_the_same_solution(layout):
    X, y = _problem_data(m=100, d=6, seed=7, sparse=True)
    ref = fr.solve(fr.Problem(X.toarray(), y, loss="softmax", penalty="l1", alpha=0.01),
                   solver="mcd", tol=1e-10)
    if layout == "dense32":
        Xl = X.toarray().astype(np.float32)
    elif layout == "csr64":
        Xl = X.copy()
    else:
        Xl = sp.csr_matrix(X, dtype=np.float32)
        Xl.indices, Xl.indptr = Xl.indices.astype(np.int64), Xl.indptr.astype(np.int64)
    for a in ((Xl,) if layout == "dense32" else (Xl.data, Xl.indices, Xl.indptr)):
        a.flags.writeable = False  # read-only input is taken as it is
    res = fr.solve(fr.Problem(Xl, y, loss="softmax", penalty="l1", alpha=0.01), solver="mcd",
                   tol=1e-10)
    rel = 1e-6 if "32" in layout.split("_")[0] else 1e-10
    assert res.objective == pytest.approx(ref.objective, rel=rel)


def test_warm_start_from_the_optimum_certifies_at_once():
    X, y = _problem_data(seed=9)
    prob = fr.Problem(X, y, loss="softmax", penalty="l1", alpha=0.02)
    cold = fr.solve(prob, solver="mcd", tol=1e-9)
    warm = fr.solve(prob, solver="mcd", tol=1e-9, start=cold)
    assert cold.n_iter >= 3 and warm.n_iter == 0
    assert warm.objective == pytest.approx(cold.objective, rel=1e-12)


def test_auto_and_the_solver_rules():
    X, y = _problem_data()
    l1 = fr.Problem(X, y, loss="softmax", penalty="l1", alpha=0.01)
    assert fr.solvers.choose_solver(l1) == "mcd"
    # with an l2 term multiclass SDCA stays first (rule 1)
    net = fr.Problem(X, y, loss="softmax", penalty="elasticnet", l1_ratio=0.5, alpha=0.01)
    assert fr.solvers.choose_solver(net) == "msdca"
    with pytest.raises(ValueError, match="softmax"):
        fr.solve(fr.Problem(X, y, loss="multiclass_hinge", penalty="l1"), solver="mcd")


def test_extrapolation_finds_the_fixed_point_of_a_linear_iteration():
    """Anderson's extrapolation of x_{k+1} = A x_k + b from ANDERSON + 1 iterates in 3
    dimensions is the fixed point (I - A)^-1 b: the differences A^k (x_1 - x_0) satisfy
    A's characteristic polynomial, whose coefficients (normalized to sum 1) are an exact
    c; their Gram matrix is singular there (the ridge's case)."""
    from fastrisk.solvers import mcd

    rng = np.random.default_rng(0)
    n = 3
    Q = np.linalg.qr(rng.normal(size=(n, n)))[0]
    A = Q @ np.diag([0.3, 0.6, 0.9]) @ Q.T  # linear convergence, rate 0.9
    b = rng.normal(size=n)
    xs = [np.zeros(n)]
    for _ in range(mcd.ANDERSON):
        xs.append(A @ xs[-1] + b)
    fixed = np.linalg.solve(np.eye(n) - A, b)
    assert np.linalg.norm(xs[-1] - fixed) > 0.1 * np.linalg.norm(fixed)  # not there yet
    np.testing.assert_allclose(mcd._extrapolate(xs), fixed, rtol=1e-6)
    assert mcd._extrapolate([np.ones(n)] * (mcd.ANDERSON + 1)) is None


@pytest.mark.parametrize("sparse", [False, True])
def test_inner_solve_minimizes_the_explicit_quadratic_model(sparse):
    """The inner solve (coordinate passes with extrapolation) against the model built
    from the explicit multinomial Hessian: _model_value equals g.d + d.H d / 2 + the
    penalty, and with lam1 = 0 the solve reaches the model's minimizer, the solution of
    (H + lam2 I) d = -(g + lam2 w)."""
    from fastrisk import _mcd
    from fastrisk.columns import column_view
    from fastrisk.solvers import mcd

    X, y = _problem_data(m=60, d=4, k=3, seed=5, sparse=sparse)
    prob = fr.Problem(X, y, loss="softmax", penalty="l2", alpha=0.05)
    Xd = np.asarray(X.todense()) if sp.issparse(X) else X
    m, d, k = Xd.shape[0], Xd.shape[1], 3
    rng = np.random.default_rng(1)
    W = rng.normal(size=(d, k))  # feature-major, as mcd keeps it
    S = Xd @ W
    P = np.exp(S - logsumexp(S, axis=1)[:, None])
    g = (Xd.T @ (P - np.eye(k)[y]) / m).ravel()  # coordinate t = (j, c) at j k + c
    Hl = sum(np.kron(np.outer(Xd[i], Xd[i]), np.diag(P[i]) - np.outer(P[i], P[i]))
             for i in range(m)) / m
    lam2 = 0.05
    cols, classes = np.repeat(np.arange(d), k), np.tile(np.arange(k), d)
    w = W.ravel()
    cols_x = column_view(prob.data, 1).arrays
    PT = np.ascontiguousarray(P.T)
    r = np.full(m, 1.0 / m)
    CPT = PT * r
    H = np.empty(d * k)
    _mcd.hessian_diagonal(*cols_x, cols, classes, CPT * (1.0 - PT), H)
    np.testing.assert_allclose(H, np.diag(Hl), rtol=1e-12)
    H += lam2
    # the model's value at an arbitrary D
    D = rng.normal(size=d * k)
    Z = np.zeros((m, k))
    _mcd.add_columns(*cols_x, cols, classes, D, Z)
    value = mcd._model_value(g, w, D, np.ascontiguousarray(Z.T), (P * Z).sum(1), CPT, r,
                             0.3, lam2)
    u = w + D
    expected = g @ D + 0.5 * D @ Hl @ D + 0.3 * np.abs(u).sum() + 0.5 * lam2 * u @ u
    assert value == pytest.approx(expected, rel=1e-12)
    # the minimizer with lam1 = 0
    D_star = np.linalg.solve(Hl + lam2 * np.eye(d * k), -(g + lam2 * w))
    D_hat, Z_hat, passes = mcd._inner_solve(cols_x, cols, classes, g, H, w, PT, CPT, r, 0.0,
                                            lam2, 1e-13)
    assert passes > mcd.ANDERSON  # the extrapolation took part
    np.testing.assert_allclose(D_hat, D_star, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(Z_hat, Xd @ D_hat.reshape(d, k), rtol=1e-8, atol=1e-10)
