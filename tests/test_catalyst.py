"""Accelerated SDCA and multiclass SDCA (fastrisk/solvers/_catalyst.py; Shalev-Shwartz &
Zhang 2014, Algorithm 2) against independent optima.

References, on the same objective (C = 1/(alpha m), no intercept): the binary hinge
as a quadratic program with slacks (scipy's trust-constr; LIBLINEAR's LinearSVC does not
stop close enough to the optimum at this alpha), scikit-learn's lbfgs
LogisticRegression for the logistic and softmax losses, LIBLINEAR's Crammer-Singer
solver for the multiclass hinge.  alpha is small enough (alpha m well below
max ||x_i||^2) that the outer loop runs with kappa > 0.  Tolerances: 1e-6 relative
in J for the smooth losses (both sides driven to ~1e-10), 1e-5 for the hinge losses
(the QP solver's and LIBLINEAR's own stopping criteria); every certified gap is at least the
true gap (J* from the reference, minus 1e-9 relative slack for the reference's error).
"""

import warnings

import numpy as np
import scipy.sparse as sp
import pytest
from scipy.optimize import LinearConstraint, minimize
from sklearn.linear_model import LogisticRegression

from fastrisk.problem import Problem
from fastrisk.solvers import solve
from fastrisk.solvers._catalyst import (AUTO_BAND, PROBE_BAND, PROBE_EPOCHS,
                                        accelerate_after_probe)
from fastrisk.solvers._epochs import observed_rate
from helpers import liblinear_cs, multiclass_data, random_problem, sklearn_softmax

ALPHA = 1e-3  # alpha m = 0.2 for m = 200, below max ||x_i||^2 (1 for the multiclass data)


def hinge_qp(X, y, alpha):
    """argmin alpha/2 ||w||^2 + (1/m) sum xi_i, xi_i >= 1 - y_i <w, x_i>, xi >= 0."""
    m, d = X.shape
    A = np.hstack([y[:, None] * X, np.eye(m)])
    slack = np.hstack([np.zeros((m, d)), np.eye(m)])
    res = minimize(lambda z: 0.5 * alpha * z[:d] @ z[:d] + z[d:].sum() / m,
                   np.concatenate([np.zeros(d), np.ones(m)]),
                   jac=lambda z: np.concatenate([alpha * z[:d], np.full(m, 1.0 / m)]),
                   constraints=[LinearConstraint(A, 1.0, np.inf),
                                LinearConstraint(slack, 0.0, np.inf)],
                   method="trust-constr", options=dict(gtol=1e-12, xtol=1e-14, maxiter=20000))
    return res.x[:d]


def binary_reference(X, y, loss, alpha):
    if loss == "hinge":
        return hinge_qp(X, y, alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LogisticRegression(C=1.0 / (alpha * X.shape[0]), fit_intercept=False,
                                   tol=1e-12, max_iter=100_000)
        return model.fit(X, y).coef_.ravel()


@pytest.mark.parametrize("loss,rel", [("hinge", 1e-5), ("logistic", 1e-6)])
def test_sdca_accelerated_matches_liblinear_and_lbfgs(loss, rel):
    X, y = random_problem(0, m=200, d=5)
    prob = Problem(X, y, loss=loss, alpha=ALPHA)
    J_ref = prob.objective(binary_reference(X, y, loss, ALPHA))
    r = solve(prob, "sdca", tol=1e-10, max_iter=100_000, random_state=0, accelerated=True)
    assert r.status == "converged" and r.extra["accelerated"]
    assert r.extra["outer_iterations"] > 1 and r.extra["kappa"] > 0
    assert r.objective == pytest.approx(J_ref, rel=rel)
    assert r.gap >= r.objective - J_ref - 1e-9 * J_ref
    plain = solve(prob, "sdca", tol=1e-10, max_iter=100_000, random_state=0)
    assert r.objective == pytest.approx(plain.objective, rel=rel)


@pytest.mark.parametrize("loss,rel", [("softmax", 1e-6), ("multiclass_hinge", 1e-5)])
def test_msdca_accelerated_matches_sklearn_and_liblinear(loss, rel):
    X, y = multiclass_data(m=200, d=8, k=3, seed=1)
    prob = Problem(X, y, loss=loss, alpha=ALPHA)
    ref = sklearn_softmax(X, y, ALPHA) if loss == "softmax" else liblinear_cs(X, y, ALPHA)
    J_ref = prob.objective(ref.ravel())
    r = solve(prob, "msdca", tol=1e-10, max_iter=100_000, random_state=0, accelerated=True)
    assert r.status == "converged" and r.extra["outer_iterations"] > 1
    assert r.objective == pytest.approx(J_ref, rel=rel)
    assert r.gap >= r.objective - J_ref - 1e-9 * J_ref
    P = r.extra["dual"]  # the certifying dual points stay on the simplex
    assert (P >= 0).all() and np.allclose(P.sum(axis=1), 1.0)


@pytest.mark.parametrize("solver,loss", [("sdca", "hinge"), ("sdca", "logistic"),
                                         ("msdca", "softmax"), ("msdca", "multiclass_hinge")])
def test_certified_gap_bounds_the_true_gap_along_the_run(solver, loss):
    """Each early stop's certificate >= J(w) - J*, J* from the tight reference."""
    if solver == "sdca":
        X, y = random_problem(2, m=200, d=5)
        J_ref = Problem(X, y, loss=loss, alpha=ALPHA).objective(
            binary_reference(X, y, loss, ALPHA))
    else:
        X, y = multiclass_data(m=200, d=8, k=3, seed=2, layout="csr")
        ref = sklearn_softmax(X, y, ALPHA) if loss == "softmax" else liblinear_cs(X, y, ALPHA)
        J_ref = Problem(X, y, loss=loss, alpha=ALPHA).objective(ref.ravel())
    prob = Problem(X, y, loss=loss, alpha=ALPHA)
    gaps = []
    for epochs in (1, 3, 10, 30, 100):
        r = solve(prob, solver, tol=1e-14, max_iter=epochs, random_state=0, accelerated=True)
        assert r.gap >= prob.objective(r.w) - J_ref - 1e-9 * J_ref
        assert r.objective == pytest.approx(prob.objective(r.w), rel=1e-12)
        gaps.append(r.gap)
    assert gaps[-1] < 1e-2 * gaps[0]


def _numpy_dual(X, y, alpha, loss, U):
    """D of the dual variables U (binary logistic: u_i in [0, 1] with y_i u_i the weight of
    row i, softmax: the rows' probabilities p_i), with an intercept column of ones:
    (1/m) sum of the conjugate terms - alpha/2 ||w(U)||^2."""
    m = X.shape[0]
    A = np.hstack([X, np.ones((m, 1))])
    if loss == "logistic":
        a = np.abs(U)  # the weight y_i u_i lies in [0, 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = np.where(a > 0, a * np.log(a), 0.0) + np.where(a < 1, (1 - a) * np.log1p(-a), 0.0)
        W = A.T @ U / (alpha * m)
    else:
        E = np.zeros_like(U)
        E[np.arange(m), y] = 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = np.where(U > 0, U * np.log(U), 0.0)
        W = A.T @ (E - U) / (alpha * m)
    return -ent.sum() / m - alpha / 2 * float((W * W).sum())


@pytest.mark.parametrize("solver,loss", [("sdca", "logistic"), ("msdca", "softmax")])
def test_certificate_is_the_dual_value_of_its_dual_point(solver, loss):
    """After many centre moves (tol 1e-11, columns of scales 0.1 to 10, an intercept),
    the reported D equals NumPy's dual objective of the reported dual point to rounding:
    v and z both move with every centre, and D read from their difference drifted
    above the dual value (and J*) by the rounding of z."""
    scales = np.array([0.1, 1, 10, 1, 0.1, 10, 1, 1])
    if solver == "sdca":
        X, y = random_problem(3, m=200, d=8)
    else:
        X, y = multiclass_data(m=200, d=8, k=3, seed=1)
    X = X * scales
    prob = Problem(X, y, loss=loss, alpha=ALPHA, fit_intercept=True)
    r = solve(prob, solver, tol=1e-11, max_iter=100_000, random_state=0, accelerated=True)
    assert r.status == "converged" and r.extra["outer_iterations"] > 10
    D = _numpy_dual(X, y, ALPHA, loss, r.extra["dual"])
    assert r.extra["dual_objective"] == pytest.approx(D, rel=1e-14, abs=0)
    assert r.objective - r.gap <= D + 1e-15 * abs(D)


@pytest.mark.parametrize("solver", ["sdca", "msdca"])
def test_same_bits_and_warm_start(solver):
    if solver == "sdca":
        X, y = random_problem(3, m=300, d=6)
        prob = Problem(X, y, loss="logistic", alpha=ALPHA, n_threads=2)
    else:
        X, y = multiclass_data(m=300, d=8, k=3, seed=3, layout="csr")
        prob = Problem(X, y, loss="softmax", alpha=ALPHA, n_threads=2)
    a = solve(prob, solver, tol=1e-4, random_state=3, accelerated=True)
    b = solve(prob, solver, tol=1e-4, random_state=3, accelerated=True)
    assert np.array_equal(a.w, b.w) and a.gap == b.gap
    assert np.array_equal(a.extra["dual"], b.extra["dual"])
    warm = solve(prob, solver, tol=1e-8, max_iter=100_000, random_state=4, start=a,
                 accelerated=True)
    cold = solve(prob, solver, tol=1e-8, max_iter=100_000, random_state=4, accelerated=True)
    assert warm.status == "converged" and warm.n_iter < cold.n_iter
    assert warm.objective == pytest.approx(cold.objective, rel=1e-7)


def probe_decision(problem, random_state):
    """(rate, outer loop?) by the documented rule, from an independent plain run of
    PROBE_EPOCHS epochs (same random_state: the same first epochs)."""
    plain = solve(problem, "sdca", tol=1e-3, random_state=random_state, accelerated=False,
                  max_iter=PROBE_EPOCHS)
    rate = observed_rate(plain.extra["gap_estimates"])
    return rate, accelerate_after_probe(rate, plain.extra["n_active"] / problem.n_samples)


def test_auto_probe_follows_its_rule():
    """"auto" (the default) for a smooth loss inside PROBE_BAND: the outer loop after
    PROBE_EPOCHS plain epochs exactly when their observed rate and active fraction say so;
    both ways occur: overlapping classes (slow plain SDCA, few rows shrunk) and separable
    ones."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(400, 5))
    noisy = np.where(X[:, 0] + 2.0 * rng.normal(size=400) > 0, 1.0, -1.0)
    separable = np.where(X[:, 0] > 0, 1.0, -1.0)
    R2 = float((X * X).sum(axis=1).max())
    alpha = np.sqrt(PROBE_BAND[0] * 0.02) * R2 / 400  # alpha m / R^2 in the band
    decisions = []
    for y in (noisy, separable):
        prob = Problem(X, y, loss="squared_hinge", alpha=alpha)
        res = solve(prob, "sdca", tol=1e-4, random_state=1)
        rate, accelerate = probe_decision(prob, 1)
        assert res.status == "converged" and res.extra["probe_rate"] == rate
        assert res.extra.get("accelerated", False) == accelerate
        again = solve(prob, "sdca", tol=1e-4, random_state=1)
        assert np.array_equal(res.w, again.w) and res.gap == again.gap  # deterministic
        decisions.append(accelerate)
    assert decisions == [True, False]


def test_auto_and_validation():
    """"auto" (the default) for a nonsmooth loss: on inside _catalyst.AUTO_BAND of
    alpha m / R^2 with fewer features than rows, off otherwise (no probe)."""
    X, y = random_problem(4, m=200, d=5)
    small = Problem(X, y, loss="hinge", alpha=ALPHA)
    R2 = float((X * X).sum(axis=1).max())
    assert AUTO_BAND[0] <= ALPHA * 200 / R2 < AUTO_BAND[1]
    assert solve(small, "sdca", tol=1e-3, accelerated="auto").extra.get("accelerated")
    assert solve(small, "sdca", tol=1e-3).extra.get("accelerated")  # the default
    assert "probe_rate" not in solve(small, "sdca", tol=1e-3).extra
    assert "accelerated" not in solve(small, "sdca", tol=1e-3, accelerated=False).extra
    above = Problem(X, y, loss="hinge", alpha=2 * AUTO_BAND[1] * R2 / 200)  # above the band
    assert "accelerated" not in solve(above, "sdca", tol=1e-3).extra
    tiny = Problem(X, y, loss="hinge", alpha=1e-4 * R2 / 200)  # below the band
    assert "accelerated" not in solve(tiny, "sdca", tol=1e-3, accelerated="auto").extra
    assert solve(tiny, "sdca", tol=1e-3, accelerated=True).extra.get("accelerated")
    large = Problem(X, y, loss="hinge", alpha=1.0)  # alpha m > R^2: kappa would be < 0
    assert "accelerated" not in solve(large, "sdca", tol=1e-3, accelerated=True).extra
    Xw, yw = multiclass_data(m=30, d=60, k=3)  # wide: more features than rows
    wide = Problem(Xw, yw, loss="softmax", alpha=1e-5)
    assert "accelerated" not in solve(wide, "msdca", tol=1e-3, accelerated="auto").extra
    with pytest.raises(ValueError, match="accelerated"):
        solve(small, "sdca", accelerated="yes")
    with pytest.raises(ValueError, match="accelerated"):
        solve(Problem(X, y, loss="hinge", alpha=ALPHA, penalty="elasticnet", l1_ratio=0.5),
              "sdca", accelerated=True)
    with pytest.raises(ValueError, match="accelerated"):
        solve(Problem(Xw, yw, loss="softmax", penalty="elasticnet", l1_ratio=0.5), "msdca",
              accelerated=True)


def _sparse_hinge_problem(seed, alpha_m, m=500, d=40):
    """Binary features at density 0.3, noisy linear labels, the hinge loss at a small alpha m
    (far below max ||x_i||^2 ~ 12: kappa / alpha ~ 4000)."""
    rng = np.random.default_rng(seed)
    X = sp.random(m, d, density=0.3, random_state=rng, data_rvs=np.ones).tocsr()
    y = np.where(X @ rng.standard_normal(d) + 0.8 * rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y, Problem(X, y, loss="hinge", alpha=alpha_m / m)


@pytest.mark.parametrize("seed", [0, 2])
def test_accelerated_hinge_runs_through_flat_certificates_and_shrinking(seed):
    """At alpha m = 0.003 the outer loop's best certified pair (J, J - gap) stays flat for
    more than half of its first 128 epochs (seed 0), which the stall rule of the plain
    dual methods would take for a stuck run; and shrinking sets rows aside that keep an
    inner gap above eps_t (seed 2) until the exact check brings them back.  Both runs
    converge; J* from plain SDCA's certified 1e-9 (the QP reference takes a minute at
    this size; plain SDCA meets it in the tests above)."""
    X, y, prob = _sparse_hinge_problem(seed, 0.003)
    plain = solve(prob, "sdca", tol=1e-9, max_iter=100_000, random_state=0, accelerated=False)
    assert plain.status == "converged"
    J_ref = plain.objective - plain.gap
    tol = 1e-3
    r = solve(prob, "sdca", tol=tol, max_iter=50_000, random_state=0, accelerated=True)
    assert r.status == "converged" and r.n_iter > 128
    assert r.gap <= tol * r.objective and r.gap >= r.objective - J_ref - 1e-9 * J_ref
    if seed == 0:
        h = r.history
        exact = np.asarray(h.exact)
        J = np.asarray(h.objective)[exact]
        lower = (J - np.asarray(h.bound)[exact])
        it = np.asarray(h.iteration)[exact]
        first, second = it <= 64, (it > 64) & (it <= 128)
        assert J[second].min() >= J[first].min() and lower[second].max() <= lower[first].max()
