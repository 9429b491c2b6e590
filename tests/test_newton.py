"""Trust-region Newton-CG (fastrisk/solvers/newton.py) and its Hessian-vector kernel.

* the conjugate-gradient kernel against numpy.linalg.solve of the dense Newton system
  (CSR and dense, float32/64, int32/int64 indices, with the intercept column), and the
  same bits on repeated runs with a fixed thread count;
* the curvature D_ii = c_i l''(f_i) against central differences of the NumPy
  reference derivatives (tests in the smooth region, away from kinks);
* optima against scipy's L-BFGS-B on a NumPy formulation at tight tolerance
  (tests/reference/batch.py) to 1e-6 relative (the reference's own accuracy),
  and the certificate J(w) - gap never above the reference optimum (1e-12
  relative slack for rounding);
* real data against LIBLINEAR's objective (tests/reference/liblinear.py);
* the line search along X s: the X s that cg leaves, the gather of the
  other rows and the scatter (gradient and Hessian diagonal in one pass) against
  NumPy; the O(m) trial J(w + t s) against problem.objective from scratch, the
  gradient from scores against the oracle's, every accepted step of whole runs
  checked for Armijo's condition with J and g from scratch, and the exact step
  of the squared hinge against the root of dJ/dt computed in NumPy.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import random_problem
from reference import batch as ref
from reference.liblinear import assert_matches_liblinear, liblinear_objective
from scipy.optimize import minimize

from fastrisk import _hessian
from fastrisk.losses import LOSSES, Loss
from fastrisk.problem import Problem
from fastrisk.solvers import newton, solve
from fastrisk.solvers._dual_gap import GapCertificate
from fastrisk.solvers.newton import SOLVER_INFO, solve_newton

REL = 1e-6
SLACK = 1e-12


def hess_times(hess, v):
    """H v = alpha v + (1/m) X^T (D (X v)) in dense NumPy at the curvature ``hess`` holds."""
    p = hess.problem
    X = p.data.X.toarray() if sp.issparse(p.data.X) else p.data.X
    X = np.asarray(X, dtype=np.float64)
    if p.data.bias:
        X = np.hstack([X, np.full((X.shape[0], 1), p.data.bias)])
    return X.T @ (hess.D * (X @ v)) / p.n_samples + p.alpha * v


def _cg_system(m, d, density, dtype, itype, seeds, low, flat):
    """(X, D, rng): a random CSR X (m x d, the given value and index types, seeds[0]) and
    curvatures D_ii uniform in [low, 1), zero on about a fraction ``flat`` of the rows,
    drawn from rng = default_rng(seeds[1]) (returned for the test's further draws)."""
    X = sp.random(m, d, density=density, random_state=seeds[0], format="csr").astype(dtype)
    X.indices = X.indices.astype(itype)
    X.indptr = X.indptr.astype(itype)
    rng = np.random.default_rng(seeds[1])
    return X, rng.uniform(low, 1, m) * (rng.uniform(size=m) > flat), rng


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("dtype,itype", [(np.float64, np.int32), (np.float32, np.int64)])
@pytest.mark.parametrize("bias", [0.0, 1.5])
@pytest.mark.parametrize("gram_cost", [np.inf, 0.0])
def test_kernel_cg_against_a_direct_solve(dense, dtype, itype, bias, gram_cost):
    """The conjugate-gradient kernel (_hessian.cg) on H s = -g with H = alpha I +
    X^T D X / m (60 x 9, a third of the rows without curvature, preconditioned; products
    by passes over the rows, or by the Gram matrix X^T D X from the second on) against
    numpy.linalg.solve of the dense H: run to a residual of 1e-12 ||g|| it returns s
    within 1e-9 of the direct solve (cond(H) is below 1e3: rounding of m-term sums times
    the condition number), r = -g - H s and xs = X s on the rows with curvature (0 on the
    others) to 1e-9, in at most 2 (d + 1) iterations (n exact steps in exact arithmetic);
    with a trust region of half the solution's norm it stops on the boundary (||s|| =
    delta to 1e-12) with the same residual identity; the same bits on a repeated call for
    1 and 3 threads."""
    m, d = 60, 9
    X, D, rng = _cg_system(m, d, 0.5, dtype, itype, seeds=(2, 5), low=0.1, flat=0.33)
    alpha = 1e-2
    Xb = X.toarray().astype(np.float64)
    if bias:
        Xb = np.hstack([Xb, np.full((m, 1), bias)])
    n_w = Xb.shape[1]
    H = alpha * np.eye(n_w) + (Xb.T * D) @ Xb / m
    g = rng.normal(size=n_w)
    M = 1.0 + 0.3 * np.diag(H) / alpha
    if dense:
        A = np.ascontiguousarray(X.toarray())
        rows = (A.ravel(), np.arange(d, dtype=itype), (np.arange(m + 1) * d).astype(itype),
                True, bias)
    else:
        rows = (X.data, X.indices, X.indptr, False, bias)
    direct = np.linalg.solve(H, -g)
    gnorm = np.linalg.norm(g)
    for n_threads in (1, 3):
        work = np.empty((n_threads, 2 * n_w))
        outs = []
        for _ in range(2):
            s, r, xs = np.empty(n_w), np.empty(n_w), np.empty(m)
            n = _hessian.cg(*rows, D, alpha, g, M, np.inf, 0.5, 100, np.inf, 1e-12 * gnorm,
                            1000, s, r, xs, work, n_threads, gram_cost)
            outs.append((n, s, r, xs))
        n, s, r, xs = outs[0]
        assert n == outs[1][0] and np.array_equal(s, outs[1][1])
        assert np.array_equal(r, outs[1][2]) and np.array_equal(xs, outs[1][3])
        assert n <= 2 * (n_w + 1)
        np.testing.assert_allclose(s, direct, rtol=0, atol=1e-9 * np.linalg.norm(direct))
        np.testing.assert_allclose(r, -g - H @ s, rtol=0, atol=1e-9 * gnorm)
        assert np.linalg.norm(r) <= 1e-12 * gnorm
        np.testing.assert_allclose(xs, np.where(D != 0, Xb @ s, 0.0), rtol=0,
                                   atol=1e-9 * np.abs(Xb @ s).max())
        # the boundary of a trust region half as wide as the solution (no preconditioner)
        delta = 0.5 * np.linalg.norm(direct)
        _hessian.cg(*rows, D, alpha, g, np.empty(0), delta, 0.5, 100, np.inf, 0.0, 1000,
                    s, r, xs, work, n_threads, gram_cost)
        assert np.linalg.norm(s) == pytest.approx(delta, rel=1e-12)
        np.testing.assert_allclose(r, -g - H @ s, rtol=0, atol=1e-9 * gnorm)
        np.testing.assert_allclose(xs, np.where(D != 0, Xb @ s, 0.0), rtol=0,
                                   atol=1e-9 * np.abs(Xb @ s).max())


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("dtype,itype", [(np.float64, np.int32), (np.float32, np.int64)])
@pytest.mark.parametrize("bias", [0.0, 0.7])
def test_gram_products_equal_the_row_passes(dense, dtype, itype, bias):
    """A fixed number of conjugate-gradient iterations (5, no stop before) gives the same
    s, r and X s whether the products pass over the rows or use the Gram matrix from the
    second product on, after the rent-or-buy switch (gram_cost 1) or at once on a forecast
    of 50 products (``expected``): each product is the
    same H d up to the order of the sums, so the iterates agree to 1e-10 relative (5
    iterations, cond(H) below 1e3, 200 x 12 with 40% of the entries stored and a quarter
    of the rows without curvature); 2 threads give the 1-thread result up to rounding."""
    m, d = 200, 12
    X, D, rng = _cg_system(m, d, 0.4, dtype, itype, seeds=(4, 11), low=0.2, flat=0.25)
    if dense:
        A = np.ascontiguousarray(X.toarray())
        rows = (A.ravel(), np.arange(d, dtype=itype), (np.arange(m + 1) * d).astype(itype),
                True, bias)
    else:
        rows = (X.data, X.indices, X.indptr, False, bias)
    n_w = d + (bias != 0)
    g = rng.normal(size=n_w)
    out = {}
    for gram_cost, expected in ((np.inf, 0), (np.inf, 50), (0.0, 0), (1.0, 0), (1.0, 50)):
        for n_threads in (1, 2):
            s, r, xs = np.empty(n_w), np.empty(n_w), np.empty(m)
            n = _hessian.cg(*rows, D, 1e-2, g, np.empty(0), np.inf, 1e-300, 5, np.inf, 0.0,
                            1, s, r, xs, np.empty((n_threads, 2 * n_w)), n_threads, gram_cost,
                            expected)
            assert n == 5
            out[gram_cost, expected, n_threads] = (s, r, xs)
    ref_s, ref_r, ref_xs = out[np.inf, 0, 1]
    # inf never forms G, whatever the forecast: the same bits as without one
    assert all(np.array_equal(a, b) for a, b in zip(out[np.inf, 50, 1], out[np.inf, 0, 1]))
    # a forecast of 50 products forms G before the first: other bits than the row passes
    assert not np.array_equal(out[1.0, 50, 1][0], ref_s)
    for key, (s, r, xs) in out.items():
        np.testing.assert_allclose(s, ref_s, rtol=0, atol=1e-10 * np.abs(ref_s).max())
        np.testing.assert_allclose(r, ref_r, rtol=0, atol=1e-10 * np.abs(ref_r).max())
        np.testing.assert_allclose(xs, ref_xs, rtol=0, atol=1e-10 * np.abs(ref_xs).max())


def test_gram_path_x_s_on_two_threads_equals_numpy():
    """After Gram products the kernel forms X s by one gather pass over the rows with
    curvature, a block of rows per thread: on 2 threads over 20,000 rows (two long
    blocks, so the threads overlap) it equals NumPy's X @ s to 1e-12 relative on the rows
    with curvature and is 0 on the others, on every one of 5 calls.  (Each thread's row
    pointers must be its own: were they shared, one thread's rows would be read through
    the other's pointers.)"""
    m, d = 20_000, 8
    X, D, rng = _cg_system(m, d, 0.5, np.float64, np.int32, seeds=(6, 13), low=0.2, flat=0.2)
    g = rng.normal(size=d)
    for _ in range(5):
        s, r, xs = np.empty(d), np.empty(d), np.empty(m)
        _hessian.cg(X.data, X.indices, X.indptr, False, 0.0, D, 1e-2, g, np.empty(0), np.inf,
                    1e-300, 3, np.inf, 0.0, 1, s, r, xs, np.empty((2, 2 * d)), 2, 0.0)
        ref = np.where(D != 0, X @ s, 0.0)
        np.testing.assert_allclose(xs, ref, rtol=0, atol=1e-12 * np.abs(ref).max())


def test_finishing_budget_counts_gram_products_at_their_cost():
    """The finishing conjugate gradient may spend finish_cg times the cost of the cg_tol
    stop, counted in passes over the rows: with finish_cg = 2 the row passes stop at twice
    the iterations of the cg_tol stop, short of the finishing residual, while products by
    the Gram matrix (400 x 20: a product G d costs 400 / (2 nnz) ~ 0.05 of a pass) go on
    within the same budget until the residual is met."""
    rng = np.random.default_rng(2)
    m, d = 400, 20
    X = sp.random(m, d, density=0.5, random_state=6, format="csr")
    X = X @ sp.diags(np.logspace(0, 3, d))  # ill-conditioned: many iterations to converge
    X = sp.csr_matrix(X)
    X.sort_indices()
    rows = (X.data, X.indices, X.indptr, False, 0.0)
    D = rng.uniform(0.5, 1, m)
    g = rng.normal(size=d)
    target = 1e-11 * np.linalg.norm(g)
    out = {}
    for gram_cost in (np.inf, 0.0):
        s, r, xs = np.empty(d), np.empty(d), np.empty(m)
        n = _hessian.cg(*rows, D, 1e-6, g, np.empty(0), np.inf, 0.5, 500, np.inf, target, 2,
                        s, r, xs, np.empty((1, 2 * d)), 1, gram_cost)
        out[gram_cost] = (n, np.linalg.norm(r))
    assert out[np.inf][1] > target
    assert out[0.0][1] <= target and out[0.0][0] > out[np.inf][0]


def test_newton_takes_the_gram_products_on_low_dimensional_data():
    """On 2000 x 20 (d^2 <= GRAM_SIZE nnz) the solver's products switch to the Gram
    matrix and the optimum is that of the run with row passes only (GRAM = inf) to 1e-9
    relative in J, with the same number of Newton steps and products (the two differ
    only in the rounding of each H d, so the bits of w differ: the Gram path was taken);
    the certificate stays above the true gap, J* from scikit-learn's newton-cholesky
    LogisticRegression (tol 1e-12, C = 1 / (alpha m): the same minimizer as J)."""
    from sklearn.linear_model import LogisticRegression

    X, y = sp.random(2000, 20, density=0.5, random_state=3, format="csr"), None
    rng = np.random.default_rng(3)
    y = np.sign(X @ rng.normal(size=20) + 0.3 * rng.normal(size=2000))
    alpha = 1e-5
    problem = Problem(X, y, loss="logistic", alpha=alpha)
    assert problem.n_weights ** 2 <= newton.GRAM_SIZE * problem.data.nnz
    sk = LogisticRegression(solver="newton-cholesky", C=1.0 / (alpha * X.shape[0]),
                            fit_intercept=False, tol=1e-12, max_iter=1000).fit(X, y)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(newton, "GRAM", np.inf)
        rows = solve_newton(problem, tol=1e-6)
    gram = solve_newton(problem, tol=1e-6)
    assert gram.objective == pytest.approx(rows.objective, rel=1e-9)
    assert (gram.n_iter, gram.extra["n_cg"]) == (rows.n_iter, rows.extra["n_cg"])
    assert not np.array_equal(gram.w, rows.w)  # the Gram products were taken: other bits
    # J_sk >= J*: J(w) - J_sk is at most the true gap, so at most the certified one; and
    # the run's optimum is scikit-learn's to REL (the run is certified to tol = REL)
    J_sk = problem.objective(sk.coef_.ravel())
    assert gram.objective - J_sk <= gram.gap * (1 + SLACK) + SLACK * J_sk
    assert abs(gram.objective - J_sk) <= REL * J_sk


def test_kernel_cg_checks_its_arguments():
    """Wrong buffer lengths, a workspace of the wrong shape, no rows and max_cg < 1 are
    refused with the buffer named."""
    X = sp.random(5, 3, density=0.5, random_state=0, format="csr")
    rows = (X.data, X.indices, X.indptr, False, 0.0)
    D, g, work = np.ones(5), np.ones(3), np.empty((1, 6))

    def call(s=np.empty(3), r=np.empty(3), xs=np.empty(5), M=np.empty(0), max_cg=5,
             workspace=work, rows=rows, D=D):
        _hessian.cg(*rows, D, 1.0, g, M, np.inf, 0.5, max_cg, 0.0, 0.0, 8, s, r, xs,
                    workspace, 1)

    call()
    for kwargs, message in [({"s": np.empty(2)}, "s, r"), ({"r": np.empty(4)}, "s, r"),
                            ({"M": np.ones(2)}, "M"), ({"xs": np.empty(4)}, "xs"),
                            ({"max_cg": 0}, "max_cg"), ({"workspace": np.empty((1, 5))},
                                                        "workspace"),
                            ({"D": np.ones(4)}, "D")]:
        with pytest.raises(ValueError, match=message):
            call(**kwargs)
    empty = sp.csr_matrix((0, 3))
    with pytest.raises(ValueError, match="rows"):
        call(rows=(empty.data, empty.indices, empty.indptr, False, 0.0), D=np.ones(0),
             xs=np.empty(0))
    # 8 threads, 5 rows: one block per row, the step of 1 thread up to rounding
    s1, s8 = np.empty(3), np.empty(3)
    call(s=s1)
    _hessian.cg(*rows, D, 1.0, g, np.empty(0), np.inf, 0.5, 5, 0.0, 0.0, 8, s8, np.empty(3),
                np.empty(5), np.empty((8, 6)), 8)
    np.testing.assert_allclose(s8, s1, rtol=1e-12)


def test_scatter_checks_its_buffers():
    """scatter's argument checks (with D, the diagonal in ``out`` and a zero coefficient
    vector in ``coef``) name the wrong buffer; a matrix without rows gives 0 (more threads
    than rows is fine)."""
    X = sp.random(5, 3, density=0.5, random_state=0, format="csr")
    rows = (X.data, X.indices, X.indptr, False, 0.0)
    out = np.empty(3)

    def call(D, workspace, n_threads, rows=rows):
        coef = np.zeros(len(rows[2]) - 1)
        _hessian.scatter(*rows, coef, np.empty(3), workspace, n_threads, D, out)

    with pytest.raises(ValueError, match="^D must have n_samples entries$"):
        call(np.ones(4), np.empty((1, 6)), 1)
    bad = r"^workspace must have shape \(n_threads, 2 len\(out\)\)$"
    for shape, n_threads in (((1, 6), 2), ((2, 4), 1), ((1, 6), 0)):
        with pytest.raises(ValueError, match=bad):
            call(np.ones(5), np.empty(shape), n_threads)
    out[:] = np.nan
    empty = sp.csr_matrix((0, 3))
    call(np.ones(0), np.empty((4, 6)), 4,
         rows=(empty.data, empty.indices, empty.indptr, False, 0.0))
    np.testing.assert_array_equal(out, 0.0)
    call(np.ones(5), np.empty((8, 6)), 8)  # 8 threads, 5 rows: one block per row
    np.testing.assert_allclose(out, np.asarray(X.multiply(X).sum(axis=0)).ravel(), rtol=1e-12)


# every loss with a (generalized) second derivative, from the registry
CURVED = sorted(name for name, spec in LOSSES.items() if spec.smooth and not spec.vector)


@pytest.mark.parametrize("loss", CURVED)
def test_curvature_is_the_derivative_of_the_reference_derivative(loss):
    param = Loss(loss).param  # the default
    rng = np.random.default_rng(2)
    f = rng.uniform(-2, 2, 200)
    task = LOSSES[loss].task
    y = {"binary": lambda: rng.choice([-1.0, 1.0], 200), "counts": lambda: np.abs(
        rng.normal(size=200)), "regression": lambda: rng.normal(size=200),
         "novelty": lambda: np.zeros(200)}[task]()
    c = rng.uniform(0.5, 2, 200)
    h = 1e-6
    d_plus = LOSSES[loss].reference(f + h, y, param)[1]
    d_minus = LOSSES[loss].reference(f - h, y, param)[1]
    numeric = (d_plus - d_minus) / (2 * h)
    smooth = np.abs(np.diff(np.stack([d_minus, LOSSES[loss].reference(f, y, param)[1],
                                      d_plus]), 2, axis=0))[0] < 1e-9  # no kink within h
    D = np.empty(200)
    active = _hessian.curvature(LOSSES[loss].kernel_id, param, f, y, c, D)
    assert active == np.count_nonzero(D)
    np.testing.assert_allclose(D[smooth], (c * numeric)[smooth], rtol=1e-5, atol=1e-8)
    assert smooth.sum() > 150


def huber_optimum(X, y, alpha, delta):
    def fun(w):
        r = X @ w - y
        a = np.abs(r)
        value = np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta)).mean()
        grad = X.T @ np.clip(r, -delta, delta) / len(y)
        return value + 0.5 * alpha * w @ w, grad + alpha * w

    return minimize(fun, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B",
                    options=ref.TIGHT).fun


@pytest.mark.parametrize("loss,task", [("logistic", "binary"), ("squared_hinge", "binary"),
                                       ("squared", "regression"), ("poisson", "counts"),
                                       ("huber", "regression")])
@pytest.mark.parametrize("dense,globalization,precondition", [
    (True, "line_search", False), (False, "line_search", True), (False, "trust_region", False)])
def test_matches_reference_optimum(loss, task, dense, globalization, precondition):
    X, y = random_problem(21, m=80, d=7, task=task)
    alpha = 0.01
    J_ref = (huber_optimum(X, y, alpha, 1.0) if loss == "huber"
             else ref.l2_smooth_optimum(X, y, loss, alpha))
    data = X if dense else sp.csr_matrix(X)
    res = solve_newton(Problem(data, y, loss=loss, alpha=alpha, n_threads=1), tol=1e-10,
                       globalization=globalization, precondition=precondition)
    assert res.status == "converged"
    assert abs(res.objective - J_ref) <= REL * abs(J_ref)
    assert res.objective - res.gap <= J_ref + SLACK * abs(J_ref)


def test_intercept_and_sample_weights_match_repeated_rows():
    """Integer sample weights = repeated rows (same J up to the factor sum c / m)."""
    X, y = random_problem(22, m=60, d=5)
    reps = np.arange(60) % 3 + 1
    weighted = solve_newton(Problem(X, y, loss="logistic", alpha=0.01, fit_intercept=True,
                                    sample_weight=reps.astype(float), n_threads=1), tol=1e-12)
    alpha_rep = 0.01 * len(y) / reps.sum()
    repeated = solve_newton(Problem(np.repeat(X, reps, axis=0), np.repeat(y, reps),
                                    loss="logistic", alpha=alpha_rep, fit_intercept=True,
                                    n_threads=1), tol=1e-12)
    np.testing.assert_allclose(weighted.w, repeated.w, rtol=1e-6, atol=1e-8)
    # the certificates along a loose run (the step certificate with weights, an intercept
    # and sparse rows) never below the suboptimality against scipy's weighted optimum
    # (the intercept a penalized column of ones; J_star >= J*), which the tight run reaches
    problem = Problem(sp.csr_matrix(X), y, loss="logistic", alpha=0.01, fit_intercept=True,
                      sample_weight=reps.astype(float), n_threads=1)
    J_star = ref.l2_smooth_optimum(np.c_[X, np.ones(len(y))], y, "logistic", 0.01,
                                   c=reps.astype(float))
    assert abs(weighted.objective - J_star) <= REL * J_star
    for tol in (1e-1, 1e-2, 1e-3, 1e-5):
        res = solve_newton(problem, tol=tol)
        assert res.status == "converged"
        assert res.gap >= res.objective - J_star - SLACK * abs(J_star)


def test_thread_count_changes_no_more_than_rounding():
    X, y = random_problem(23, m=500, d=20)
    runs = [solve_newton(Problem(sp.csr_matrix(X), y, loss="logistic", alpha=1e-3,
                                 n_threads=t), tol=1e-10) for t in (1, 2, 2)]
    assert np.array_equal(runs[1].w, runs[2].w)  # same thread count: same bits
    np.testing.assert_allclose(runs[0].w, runs[1].w, rtol=1e-7, atol=1e-10)


def test_warm_start_and_validation():
    X, y = random_problem(24)
    problem = Problem(X, y, loss="logistic", alpha=0.01, n_threads=1)
    res = solve(problem, solver="newton", tol=1e-8)
    again = solve_newton(problem, tol=1e-8, start=res)
    assert again.n_iter == 0 and again.status == "converged"
    with pytest.raises(ValueError, match="second derivative"):
        solve_newton(Problem(X, y, loss="hinge", n_threads=1))
    with pytest.raises(ValueError, match="penalty"):
        solve_newton(Problem(X, y, loss="logistic", penalty="l1", n_threads=1))
    for bad in [dict(start=[1.0]), dict(cg_tol=1.5), dict(max_cg=0), dict(tol=-1.0),
                dict(globalization="dogleg")]:
        with pytest.raises(ValueError, match=f"^{next(iter(bad))} must"):
            solve_newton(problem, **bad)
    with pytest.raises(ValueError, match="precondition must be a bool"):
        solve_newton(problem, precondition="no")  # not bool("no"), which is True
    assert SOLVER_INFO.why_not(problem) is None
    res = solve_newton(problem, tol=0.0, max_iter=2)
    assert res.status == "max_iter" and res.n_iter == 2


@pytest.mark.parametrize("loss,task", [("logistic", "binary"), ("squared", "regression")])
def test_a_far_start_is_certified_at_the_point_returned(loss, task):
    """From |w| = 1e12 and more the O(m) updates of the scores and of J along the steps
    cancel catastrophically; the run recomputes them by an oracle pass, so that the
    returned objective is J of the returned w (NumPy, on the dense X) and its gap bounds
    J - J* (J* from scipy's L-BFGS-B); a start whose J overflows starts from 0."""
    X, y = random_problem(3, m=60, d=5, task=task)
    alpha = 1e-2
    problem = Problem(X, y, loss=loss, alpha=alpha, n_threads=1)
    J_star = ref.l2_smooth_optimum(X, y, loss, alpha)
    for v in (1e12, 1e18, 1e100, 1e300):
        res = solve_newton(problem, tol=1e-8, start=np.r_[v, np.zeros(4)])
        J = alpha / 2 * res.w @ res.w + ref.smooth_loss(loss, X @ res.w, y)[0]
        assert res.status == "converged", v
        assert res.objective == pytest.approx(J, rel=1e-12), v
        assert 0.0 <= res.objective - J_star <= res.gap + 1e-12 * J_star, v


@pytest.mark.parametrize("name,alpha", [("a9a", 1e-4), ("a9a", 1e-6), ("reuters", 1e-4)])
def test_real_data_logistic_matches_liblinear(libsvm, name, alpha):
    """Within 1e-4 relative of LIBLINEAR (tol 1e-9); the certified gap never below
    J(w) - J_lib (<= J(w) - J*)."""
    X, y = libsvm(name)
    res = solve_newton(Problem(X, y, loss="logistic", alpha=alpha), tol=1e-6)
    assert_matches_liblinear(res, liblinear_objective(name, "logistic", alpha))


def test_real_data_squared_hinge_matches_liblinear_primal(libsvm):
    """ijcnn1, squared hinge, alpha 1e-4: LIBLINEAR's primal solver (LinearSVC(dual=False),
    tol 1e-10).  LIBLINEAR's L2-loss SVM has no 1/2 on the loss: C = 1 / (2 alpha m)."""
    from sklearn.svm import LinearSVC

    X, y = libsvm("ijcnn1")
    alpha = 1e-4
    y = np.where(y == y.max(), 1.0, -1.0)
    est = LinearSVC(loss="squared_hinge", dual=False, C=1 / (2 * alpha * len(y)), tol=1e-10,
                    max_iter=10_000, fit_intercept=False).fit(X, y)
    problem = Problem(X, y, loss="squared_hinge", alpha=alpha)
    res = solve_newton(problem, tol=1e-6)
    assert_matches_liblinear(res, problem.objective(est.coef_.ravel()))


@pytest.mark.parametrize("solver", ["newton", "lbfgs"])
def test_blas_pools_run_single_threaded_inside_the_solver(solver):
    """n_threads counts fastrisk's OpenMP threads; BLAS pools (OpenBLAS under scipy's
    L-BFGS-B and NumPy's vector operations) run one thread during the solve and are
    restored after it."""
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads():
        return [p["num_threads"] for p in threadpoolctl.threadpool_info()
                if p["user_api"] == "blas"]

    if not blas_threads():
        pytest.skip("no BLAS pool loaded")
    seen = []
    X, y = random_problem(25)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        solve(Problem(X, y, loss="logistic", alpha=0.01, n_threads=1), solver=solver,
              tol=1e-8, callback=lambda r: seen.append(blas_threads()))
        assert blas_threads() == before
    assert seen and all(threads == [1] * len(threads) for threads in seen)


@pytest.mark.realdata
@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
@pytest.mark.parametrize("alpha", [1e-4, 1e-6])
def test_real_data_tol_is_met_and_certified(libsvm, loss, alpha):
    """phishing at tol 1e-3: the returned J(w) - J_lib is at most 1e-3 J(w) and at most the
    certified gap (J_lib: LIBLINEAR at tol 1e-9 >= J*, so J(w) - J_lib <= J(w) - J*; slack
    1e-9 relative for LIBLINEAR's own residual suboptimality)."""
    X, y = libsvm("phishing")
    y = np.where(y == y.max(), 1.0, -1.0)
    J_lib = liblinear_objective("phishing", loss, alpha)
    res = solve_newton(Problem(X, y, loss=loss, alpha=alpha), tol=1e-3)
    assert res.status == "converged"
    assert res.objective - J_lib <= 1e-3 * res.objective
    assert res.gap >= res.objective - J_lib - 1e-9 * J_lib


def kernel_rows(X, dense, itype):
    """(data, indices, indptr, dense) of X for the kernels: CSR, or a dense matrix's rows."""
    if dense:
        A = np.ascontiguousarray(X.toarray())
        m, d = A.shape
        return (A.ravel(), np.arange(d, dtype=itype), (np.arange(m + 1) * d).astype(itype), True)
    return (X.data, X.indices.astype(itype), X.indptr.astype(itype), False)


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("dtype,itype", [(np.float64, np.int32), (np.float32, np.int64)])
@pytest.mark.parametrize("bias", [0.0, 1.5])
def test_line_search_kernels_match_numpy(dense, dtype, itype, bias):
    """inactive_dots (X v on the rows without curvature, the others untouched) and
    scatter (X^T coef, and diag(X^T D X) in the same pass) against
    NumPy; same bits on repeated runs.  float32 data: 1e-5 relative (the data's rounding
    is exact in float64, so only the float32 products of the kernels' fused type add to
    it); float64: 1e-12."""
    rng = np.random.default_rng(3)
    X = sp.random(57, 13, density=0.3, random_state=2, format="csr").astype(dtype)
    D = rng.uniform(0, 1, 57) * (rng.uniform(size=57) > 0.4)
    v = rng.normal(size=13 + (bias != 0))
    coef = rng.normal(size=57) * (rng.uniform(size=57) > 0.2)
    Xb = X.toarray().astype(np.float64)
    Xb = np.hstack([Xb, np.full((57, 1), bias)]) if bias else Xb
    rows = kernel_rows(X, dense, itype) + (bias,)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    for n_threads in (1, 3):
        work = np.empty((n_threads, 2 * len(v)))
        Xv = np.where(D != 0, Xb @ v, np.nan)  # the rows cg's products fill
        filled = Xv.copy()
        _hessian.inactive_dots(*rows, D, v, filled, n_threads)
        np.testing.assert_array_equal(filled[D != 0], Xv[D != 0])
        np.testing.assert_allclose(filled, Xb @ v, rtol=rtol, atol=1e-12)
        runs = []
        for _ in range(2):
            grad, diag = np.empty(len(v)), np.empty(len(v))
            _hessian.scatter(*rows, coef, grad, work, n_threads, D, diag)
            runs.append((grad, diag))
            alone = np.empty(len(v))
            _hessian.scatter(*rows, coef, alone, work, n_threads)
            np.testing.assert_array_equal(alone, grad)
        np.testing.assert_allclose(runs[0][0], Xb.T @ coef, rtol=rtol, atol=1e-12)
        np.testing.assert_allclose(runs[0][1], (D[:, None] * Xb * Xb).sum(axis=0), rtol=rtol,
                                   atol=1e-12)
        assert all(np.array_equal(a, b) for a, b in zip(runs[0], runs[1]))


def test_line_search_kernels_check_their_buffers():
    X = sp.random(5, 3, density=0.5, random_state=0, format="csr")
    rows = (X.data, X.indices, X.indptr, False, 0.0)
    work = np.empty((1, 6))
    with pytest.raises(ValueError, match="^D and out must have n_samples entries$"):
        _hessian.inactive_dots(*rows, np.ones(5), np.ones(3), np.empty(4), 1)
    with pytest.raises(ValueError, match="^coef must have n_samples entries$"):
        _hessian.scatter(*rows, np.ones(4), np.empty(3), work, 1)
    with pytest.raises(ValueError, match="^D and diag go together$"):
        _hessian.scatter(*rows, np.ones(5), np.empty(3), work, 1, np.ones(5))
    with pytest.raises(ValueError, match=r"^diag must have len\(out\) entries$"):
        _hessian.scatter(*rows, np.ones(5), np.empty(3), work, 1, np.ones(5), np.empty(2))


LINE_CASES = [("logistic", "binary", False), ("squared_hinge", "binary", True),
              ("huber", "regression", False), ("poisson", "counts", True)]


def line_problem(loss, task, sparse, dtype=np.float64):
    """A problem with an intercept and sample weights, its Hessian at a point and a
    CG direction from it."""
    X, y = random_problem(31, m=90, d=8, task=task)
    c = np.random.default_rng(4).uniform(0.5, 2.0, len(y))
    data = sp.csr_matrix(X.astype(dtype)) if sparse else X.astype(dtype)
    problem = Problem(data, y, loss=loss, alpha=0.05, fit_intercept=True, sample_weight=c,
                      n_threads=1)
    w = 0.1 * np.random.default_rng(5).normal(size=problem.n_weights)
    return problem, w


@pytest.mark.parametrize("loss,task,sparse", LINE_CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_trial_objective_and_gradient_from_scores(loss, task, sparse, dtype):
    """Along a CG direction s: X s from CG and the gather equals X s from the data (1e-12,
    sums of a few products); J(w + t s) in O(m) equals problem.objective to 1e-12 relative
    (the same loss values, summed in another order); the gradient from the scores
    f + t X s equals the oracle's to 1e-12 relative to its norm, dJ/dt and d2J/dt2 equal
    g.s and s.H s, and the scatter's diagonal equals diag(X^T D X) in NumPy (1e-10:
    sums of m products)."""
    problem, w = line_problem(loss, task, sparse, dtype)
    J, g = problem.objective_gradient(w)
    f = problem.data.X @ w[:-1] + problem.data.bias * w[-1]
    hess = newton._Hessian(problem)
    hess.update(f)
    s, _, _, xs = newton._steihaug_cg(hess, g, np.inf, 0.1, 50)
    Xb = np.hstack([np.asarray(problem.data.X.toarray() if sparse else problem.data.X,
                               dtype=np.float64), np.full((90, 1), problem.data.bias)])
    z = hess.directional(s, xs)
    np.testing.assert_allclose(z, Xb @ s, rtol=1e-12, atol=1e-12 * np.abs(Xb @ s).max())
    line = newton._Line(problem, w, s, f, z)
    for t in (1.0, 0.5, 0.03, 2.5):
        expected = problem.objective(w + t * s)
        assert line.value(t) == pytest.approx(expected, rel=1e-12)
        w_t = w + t * s
        J_t, g_t = problem.objective_gradient(w_t)
        grad = hess.gradient(line.rows(t)[0] * problem.sample_weight) + problem.alpha * w_t
        np.testing.assert_allclose(grad, g_t, rtol=0, atol=1e-12 * np.linalg.norm(g_t))
        # phi'(t) = g(w + t s).s from scratch; phi''(t) = s.H s with H in dense NumPy
        # (1e-10: sums of m products)
        d1, d2 = line.slope(t)
        assert d1 == pytest.approx(float(g_t @ s), rel=1e-10, abs=1e-12 * abs(J))
        at_t = newton._Hessian(problem)
        at_t.update(f + t * z)
        assert d2 == pytest.approx(float(s @ hess_times(at_t, s)), rel=1e-10)
    # the step certificate from the line's derivatives equals the one computed from the
    # scores alone (the same formulas; 1e-12 relative to J)
    cert = GapCertificate(problem, need_scores=True)
    cert.evaluate(w)
    a0, h0 = newton._derivatives(problem, f)
    r = -g - hess_times(hess, s)  # the CG residual at w (hess still holds D at w)
    cert.evaluate(w + t * s)
    J_t = problem.objective(w + t * s)
    assert cert.step_gap(J_t, f, t, g, r, derivatives=(a0, h0, line.rows(t)[0])) == \
        pytest.approx(cert.step_gap(J_t, f, t, g, r), rel=0, abs=1e-12 * J_t)
    a, h = line.rows(t)
    expected_h = np.empty(len(h))
    _hessian.curvature(LOSSES[loss].kernel_id, problem.loss.param, f + t * z, problem.y,
                       np.empty(0), expected_h)
    np.testing.assert_allclose(h, expected_h, rtol=1e-12, atol=0)
    hess.update(D=h * problem.sample_weight)
    hess.gradient(a * problem.sample_weight, diag=True)
    np.testing.assert_allclose(hess.diag, (hess.D[:, None] * Xb * Xb).sum(axis=0), rtol=1e-10,
                               atol=1e-12 * np.abs(hess.D).max())


@pytest.mark.parametrize("loss,task,sparse", LINE_CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_accepted_step_satisfies_armijo_from_scratch(loss, task, sparse, dtype,
                                                           monkeypatch):
    """Whole runs (line search, exact start for the squared hinge and Huber) from a start
    far from w* (some steps shorter than the full Newton step, except for Poisson): each
    accepted w + t s satisfies J(w + t s) <= J(w) + ARMIJO t g.s with J and g recomputed
    by problem.objective_gradient (slack 1e-12 relative for rounding)."""
    problem, w0 = line_problem(loss, task, sparse, dtype)
    w0 = 30.0 * w0
    lines = []

    class Recording(newton._Line):
        def __init__(self, problem, w, s, f, z):
            super().__init__(problem, w, s, f, z)
            lines.append(self)
            self.w, self.s = w.copy(), s.copy()

        def value(self, t):
            self.last_t = t
            return super().value(t)

    accepted = []
    real_step = newton._line_search_step

    def step(line, J, gs, exact, **kw):
        out = real_step(line, J, gs, exact, **kw)
        if out is not None:
            accepted.append((line, out[0]))
        return out

    monkeypatch.setattr(newton, "_Line", Recording)
    monkeypatch.setattr(newton, "_line_search_step", step)
    res = solve_newton(problem, tol=1e-10, start=w0)
    assert res.status == "converged" and len(accepted) >= 3
    assert loss == "poisson" or any(t != 1.0 for _, t in accepted)
    for line, t in accepted:
        J, g = problem.objective_gradient(line.w)
        J_t = problem.objective(line.w + t * line.s)
        assert J_t <= J + newton.ARMIJO * t * float(g @ line.s) + 1e-12 * abs(J)


@pytest.mark.parametrize("sparse", [False, True])
def test_exact_step_of_squared_hinge_is_the_minimizer_along_s(sparse):
    """From a point where the full Newton step overshoots (separable data, small alpha),
    the 1-D minimizer of J along s: dJ/dt in NumPy (the squared hinge's derivative on
    X (w + t s)) vanishes at it to 1e-9 of dJ/dt(0), and J there is below J at t = 1 and
    at t * (1 +- 1e-3)."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(200, 10))
    y = np.where(X @ rng.normal(size=10) > 0, 1.0, -1.0)
    problem = Problem(sp.csr_matrix(X) if sparse else X, y, loss="squared_hinge", alpha=1e-6,
                      n_threads=1)
    w = np.zeros(10)
    for _ in range(2):  # a few Newton steps in: the active set is small
        J, g = problem.objective_gradient(w)
        f = X @ w
        hess = newton._Hessian(problem)
        hess.update(f)
        s, _, _, xs = newton._steihaug_cg(hess, g, np.inf, 0.5, 100)
        line = newton._Line(problem, w, s, f, hess.directional(s, xs))
        t = newton._minimizer(line, float(g @ s))

        def slope(t):
            margin = 1.0 - y * (X @ (w + t * s))
            # l(f) = max(0, 1 - y f)^2 / 2: l'(f) = -y max(0, 1 - y f)
            return problem.alpha * float((w + t * s) @ s) + float(
                (-y * np.maximum(margin, 0.0)) @ (X @ s)) / 200

        assert abs(slope(t)) <= 1e-9 * abs(float(g @ s))
        J_t = problem.objective(w + t * s)
        assert J_t <= min(problem.objective(w + s), problem.objective(w + t * 1.001 * s),
                          problem.objective(w + t * 0.999 * s))
        w = w + t * s


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_finishing_cg_reaches_the_residual_of_a_direct_solve(loss):
    """The finishing conjugate gradient (finish=(decrease, residual)) on an ill-conditioned
    Newton system (alpha 1e-6, 300 x 40, preconditioned as in the solver): its s and r
    against the dense H from NumPy: r = -g - H s to 1e-9 of ||g|| (r is updated, not
    recomputed), ||r|| meets the asked residual (ten times below where the cg_tol stop
    left it), s within ||r|| / lambda_min(H) of the direct solve H^{-1}(-g) (1e-6 relative
    slack for rounding), and the iterations stay within FINISH_CG times those of the
    cg_tol stop."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(300, 40)) * np.logspace(0, -2, 40)
    y = np.where(X @ rng.normal(size=40) + 0.3 * rng.normal(size=300) > 0, 1.0, -1.0)
    problem = Problem(X, y, loss=loss, alpha=1e-6, n_threads=1)
    w = 0.3 * rng.normal(size=40)
    J, g = problem.objective_gradient(w)
    f = X @ w
    hess = newton._Hessian(problem)
    hess.update(f)
    hess.gradient(np.zeros(300), diag=True)
    H = problem.alpha * np.eye(40) + (X.T * hess.D) @ X / 300
    M = hess.preconditioner()
    _, r0, n0, _ = newton._steihaug_cg(hess, g, np.inf, 0.5, 500, M)
    need = 0.1 * np.linalg.norm(r0)
    s, r, n, _ = newton._steihaug_cg(hess, g, np.inf, 0.5, 500, M, finish=(np.inf, need))
    np.testing.assert_allclose(r, -g - H @ s, rtol=0, atol=1e-9 * np.linalg.norm(g))
    assert np.linalg.norm(r) <= need
    assert n0 < n <= newton.FINISH_CG * n0
    # the error against the direct solve is H^{-1} r: at most ||r|| / lambda_min(H)
    direct = np.linalg.solve(H, -g)
    assert np.linalg.norm(s - direct) <= (1 + 1e-6) * need / np.linalg.eigvalsh(H)[0]
    # a decrease threshold below the step's decrement: no finishing, the cg_tol stop
    _, _, n_plain, _ = newton._steihaug_cg(hess, g, np.inf, 0.5, 500, M, finish=(0.0, need))
    assert n_plain == n0


@pytest.mark.parametrize("tol", [1e-3, 1e-8])
def test_squared_loss_is_one_conjugate_gradient_solve(tol):
    """For the squared loss J is its own Newton model (LossSpec.quadratic): the first
    step's conjugate gradient runs on to the certificate's residual, so the run ends after
    at most two steps (the second when J fell so far that tol J needs a smaller residual),
    on the ridge solution of the normal equations (NumPy) within the certified gap, on an
    ill-conditioned 400 x 60 problem (columns scaled over 3 decades, alpha 1e-6) where
    steps stopped by cg_tol, as for the other losses, take 5 and 11."""
    rng = np.random.default_rng(5)
    m, d, alpha = 400, 60, 1e-6
    X = rng.normal(size=(m, d)) * np.logspace(0, -3, d)
    y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=m)
    problem = Problem(X, y, loss="squared", alpha=alpha, n_threads=1)
    w_star = np.linalg.solve(X.T @ X / m + alpha * np.eye(d), X.T @ y / m)
    J_star = problem.objective(w_star)
    res = solve_newton(problem, tol=tol, max_iter=100)
    assert res.status == "converged" and res.n_iter <= 2
    assert 0.0 <= res.objective - J_star <= res.gap + 1e-12 * J_star
    assert res.gap <= tol * res.objective


def test_step_certificate_of_a_shortened_step_against_numpy():
    """The dual point of the full step at a shortened step (t = 0.3), squared loss: the
    gap from _step_certificate equals J(w + t s) - D(u) computed in NumPy for
    u_i = -(f_i + (X s)_i - y_i) (l' linearized to w + s; l*(a) = a^2 / 2 + a y) and
    v = X^T u / (alpha m), to 1e-9 of J (sums of m products); it is below the step_gap of
    the point linearized to w + t s (which carries (1 - t) g / alpha) and never below the
    true gap J(w + t s) - J* (J* from the closed form of ridge regression)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 8)) * np.logspace(0, -1.5, 8)
    y = X @ rng.normal(size=8) + 0.1 * rng.normal(size=120)
    alpha, m = 1e-4, 120
    problem = Problem(X, y, loss="squared", alpha=alpha, n_threads=1)
    w = rng.normal(size=8)
    J, g = problem.objective_gradient(w)
    f = X @ w
    hess = newton._Hessian(problem)
    hess.update(f)
    s, r, _, xs = newton._steihaug_cg(hess, g, np.inf, 0.9, 50)
    z = hess.directional(s, xs)
    t = 0.3
    cert = GapCertificate(problem, need_scores=True)
    cert.evaluate(w + t * s)
    J_t = problem.objective(w + t * s)
    derivatives = (f - y, np.ones(m), f + t * z - y)
    both = newton._step_certificate(cert, alpha, J_t, f, z, t, g, r, s, derivatives, np.inf)
    first = cert.step_gap(J_t, f, t, g, r, derivatives=derivatives)
    a = f + X @ s - y
    v = X.T @ (-a) / (alpha * m)
    dual = -np.mean(0.5 * a * a + a * y) - 0.5 * alpha * float(v @ v)
    assert both == pytest.approx(J_t - dual, rel=0, abs=1e-9 * J_t)
    assert both < first
    w_star = np.linalg.solve(X.T @ X / m + alpha * np.eye(8), X.T @ y / m)
    assert both >= J_t - problem.objective(w_star) - 1e-12 * J_t
