"""The smoothing solver (fastrisk/solvers/smoothing.py): the l1-regularized hinge against
its linear program solved by scipy's HiGHS (an independent exact optimum), its
certificates against that optimum along the run, the elastic net against SDCA's certified
optimum, the loss registry's Moreau envelope against its definition, and the checks.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog, minimize_scalar

from fastrisk import LinearClassifier
from fastrisk.losses import LOSSES, Loss
from fastrisk.problem import Problem
from fastrisk.solvers import choose_solver, solve
from fastrisk.solvers.cd import solve_cd
from helpers import multiclass_data, random_problem


def hinge_l1_lp(X, y, alpha, c=None, bias=0.0):
    """min (1/m) sum_i c_i xi_i + alpha sum_j (p_j + q_j), xi, p, q >= 0,
    xi_i >= 1 - y_i <p - q, x_i> (with a constant column ``bias`` when nonzero)."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X)
    if bias:
        X = np.hstack([X, np.full((X.shape[0], 1), bias)])
    m, d = X.shape
    c = np.ones(m) if c is None else c
    YX = y[:, None] * X
    A = np.hstack([-np.eye(m), -YX, YX])
    res = linprog(np.concatenate([c / m, np.full(2 * d, alpha)]), A_ub=A, b_ub=-np.ones(m),
                  bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun


@pytest.mark.parametrize("layout", ["dense", "csr"])
@pytest.mark.parametrize("intercept,weights", [(False, False), (True, False), (True, True)])
def test_matches_the_linear_program(layout, intercept, weights):
    X, y = random_problem(3, m=120, d=15)
    X[np.abs(X) < 0.7] = 0.0  # sparse, so that l1 zeros out some columns
    c = np.random.default_rng(1).uniform(0.5, 2.0, size=len(y)) if weights else None
    alpha = 0.01
    J_lp = hinge_l1_lp(X, y, alpha, c, bias=1.0 if intercept else 0.0)
    Xin = sp.csr_matrix(X) if layout == "csr" else X
    prob = Problem(Xin, y, loss="hinge", penalty="l1", alpha=alpha, sample_weight=c,
                   fit_intercept=intercept)
    tol = 1e-6
    r = solve(prob, "smoothing", tol=tol)
    assert r.status == "converged" and r.gap <= tol * r.objective
    assert r.objective == pytest.approx(prob.objective(r.w), rel=1e-12)
    assert r.objective - J_lp <= r.gap + 1e-12 * J_lp  # the certificate holds
    assert r.objective == pytest.approx(J_lp, rel=2e-6)
    assert 0 < np.count_nonzero(r.coef_) < X.shape[1]
    assert r.extra["dual_objective"] <= J_lp + 1e-12 * J_lp  # weak duality


def test_certificates_bound_the_true_gap_at_every_stage():
    X, y = random_problem(4, m=150, d=10)
    alpha = 0.005
    J_lp = hinge_l1_lp(X, y, alpha)
    prob = Problem(X, y, loss="hinge", penalty="l1", alpha=alpha)
    gaps = []
    for stages in (1, 2, 3, 4):
        r = solve(prob, "smoothing", tol=1e-12, max_iter=stages)
        assert r.n_iter == stages and r.status in ("max_iter", "stalled")
        assert r.gap >= r.objective - J_lp - 1e-12 * J_lp
        gaps.append(r.gap)
    assert gaps[-1] < 1e-2 * gaps[0]


def test_elastic_net_matches_sdca():
    """With an l2 part SDCA certifies the same J: the two optima agree within both gaps."""
    X, y = random_problem(5, m=200, d=8)
    prob = Problem(X, y, loss="hinge", penalty="elasticnet", l1_ratio=0.5, alpha=0.02)
    r = solve(prob, "smoothing", tol=1e-7)
    ref = solve(prob, "sdca", tol=1e-9, max_iter=100_000, random_state=0)
    assert r.status == ref.status == "converged"
    assert abs(r.objective - ref.objective) <= r.gap + ref.gap + 1e-12


def test_auto_estimator_and_reproducibility():
    X, y = random_problem(6, m=100, d=12)
    l1 = Problem(X, y, loss="hinge", penalty="l1", alpha=0.01)
    assert choose_solver(l1) == "smoothing"
    # an l2 part keeps SDCA (strongly convex), a smooth loss keeps cd
    assert choose_solver(Problem(X, y, loss="hinge", penalty="elasticnet", alpha=0.01)) == "sdca"
    assert choose_solver(Problem(X, y, loss="squared_hinge", penalty="l1", alpha=0.01)) == "cd"
    est = LinearClassifier(loss="hinge", penalty="l1", alpha=0.01, tol=1e-6).fit(X, y)
    assert est.solver_ == "smoothing" and est.status_ == "converged"
    J_lp = hinge_l1_lp(X, y, 0.01, bias=1.0)
    assert est.objective_ == pytest.approx(J_lp, rel=1e-5)
    a, b = (solve(l1, "smoothing", tol=1e-6, random_state=0) for _ in range(2))
    assert np.array_equal(a.w, b.w) and a.gap == b.gap
    warm = solve(l1, "smoothing", tol=1e-6, start=a)  # a certified start: one stage
    assert warm.status == "converged" and warm.n_iter == 1


def test_moreau_envelope_of_the_registry():
    """LossSpec.moreau: l_gamma(f) = min_v l(v) + (f - v)^2 / (2 gamma) and
    l_gamma* = l* + gamma a^2 / 2, checked numerically for every loss that declares one."""
    names = [n for n, s in LOSSES.items() if s.moreau is not None]
    assert names  # the hinge at least
    f = np.linspace(-3.0, 3.0, 61)
    for name in names:
        loss = Loss(name)
        for gamma in (0.05, 0.5, 2.0):
            env = Loss(LOSSES[name].moreau, gamma)
            for label in (-1.0, 1.0):
                y = np.full_like(f, label)
                brute = [minimize_scalar(
                    lambda v, fi=fi: loss.values(np.array([v]), np.array([label]))[0][0]
                    + (fi - v) ** 2 / (2 * gamma), bounds=(fi - 10, fi + 10),
                    method="bounded", options=dict(xatol=1e-10)).fun for fi in f]
                np.testing.assert_allclose(env.values(f, y)[0], brute, atol=1e-8)
                a = -label * np.linspace(0.0, 1.0, 11)  # inside the domain of l*
                np.testing.assert_allclose(env.conjugate(a, y[:11]),
                                           loss.conjugate(a, y[:11]) + 0.5 * gamma * a * a,
                                           atol=1e-14)


def test_with_loss_shares_the_data():
    X, y = random_problem(7, m=30, d=4)
    prob = Problem(X, y, loss="hinge", penalty="l1", alpha=0.1, fit_intercept=True)
    other = prob.with_loss("smoothed_hinge", 0.5)
    assert other.data is prob.data and other.loss.param == 0.5 and prob.loss.name == "hinge"
    assert other.alpha == prob.alpha and other.regularizer is prob.regularizer
    with pytest.raises(ValueError, match="same task"):
        prob.with_loss("squared")


@pytest.mark.parametrize("options,match", [
    (dict(gamma=0.0), "gamma"), (dict(gamma=float("nan")), "gamma"),
    (dict(gamma=float("inf")), "gamma"), (dict(stage_max_iter=0), "stage_max_iter"),
    (dict(screening="yes"), "screening")])
def test_options_are_checked(options, match):
    X, y = random_problem(8, m=30, d=4)
    prob = Problem(X, y, loss="hinge", penalty="l1", alpha=0.1)
    with pytest.raises((ValueError, TypeError), match=match):
        solve(prob, "smoothing", **options)


@pytest.mark.parametrize("loss,penalty", [("logistic", "l1"), ("absolute", "l1"),
                                          ("hinge", "lp")])
def test_problems_it_does_not_take(loss, penalty):
    X, y = random_problem(9, m=30, d=4, task="regression" if loss == "absolute" else "binary")
    prob = Problem(X, y, loss=loss, penalty=penalty, alpha=0.1, p=1.5)
    with pytest.raises(ValueError, match="smoothing"):
        solve(prob, "smoothing")


def test_adaptive_damping_of_a_smoothed_stage():
    """cd's damping="adaptive" (Levenberg-Marquardt, what the stages run) on a smoothed
    hinge: the same certified optimum as the fixed damping, with far fewer inner passes
    (the fixed model is flat off the smoothing zone and its inner solves creep to a
    minimizer the line search then cuts back)."""
    rng = np.random.default_rng(0)
    X = sp.random(300, 400, density=0.03, random_state=0, format="csr")
    w_true = np.zeros(400)
    w_true[:20] = rng.standard_normal(20)
    y = np.where(X @ w_true + 0.1 * rng.standard_normal(300) >= 0, 1.0, -1.0)
    smoothed = Problem(X, y, loss="hinge", penalty="l1", alpha=1e-3).with_loss(
        "smoothed_hinge", 0.1)
    runs = {damping: solve_cd(smoothed, tol=1e-6, nu=1e-5, damping=damping, random_state=0,
                              max_iter=10_000)
            for damping in ("fixed", "adaptive")}
    for r in runs.values():
        assert r.status == "converged" and r.gap <= 1e-6 * r.objective
        assert r.objective == pytest.approx(smoothed.objective(r.w), rel=1e-12)
    fixed, adaptive = runs["fixed"], runs["adaptive"]
    assert abs(fixed.objective - adaptive.objective) <= fixed.gap + adaptive.gap
    assert adaptive.extra["n_inner_passes"] < fixed.extra["n_inner_passes"] / 3


def test_stage_budget_ends_the_run():
    """A stage that stops short of its tolerance ends the run with its status, certified."""
    X, y = random_problem(10, m=150, d=10)
    prob = Problem(X, y, loss="hinge", penalty="l1", alpha=0.005)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = solve(prob, "smoothing", tol=1e-10, stage_max_iter=1)
    assert r.status == "max_iter" and r.extra["stage_status"] == "max_iter"
    assert r.n_iter == 1 and np.isfinite(r.gap)


def test_one_vs_rest_fits_in_parallel_threads():
    """The one-vs-rest problems share one Dataset and are solved in threads: each run's
    stages read the column copy of X that the Dataset keeps (made by whichever run came
    first), and every class's result is certified against its own linear program."""
    X, y = multiclass_data(m=2000, d=60, k=4, seed=3)
    est = LinearClassifier(loss="hinge", penalty="l1", alpha=1e-3, tol=1e-6, n_threads=2,
                           random_state=0).fit(X, y)
    assert est.solver_ == "smoothing" and set(est.status_) == {"converged"}
    for j, label in enumerate(est.classes_):
        yj = np.where(y == label, 1.0, -1.0)
        J_lp = hinge_l1_lp(X, yj, 1e-3, bias=1.0)
        w = np.append(est.coef_[j], est.intercept_[j])
        J = Problem(X, yj, loss="hinge", penalty="l1", alpha=1e-3,
                    fit_intercept=True).objective(w)
        assert J == pytest.approx(J_lp, rel=2e-6)
