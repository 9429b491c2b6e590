"""Duality gaps of primal iterates (fastrisk/solvers/_dual_gap.py) against independent optima.

The certificate must never be below the true suboptimality J(w) - J*, with J*
from scipy's L-BFGS-B on a NumPy formulation at tight tolerance
(tests/reference/batch.py; J_ref >= J*, so J(w) - J_ref <= J(w) - J*), and
never above the gradient bound ||g||^2 / (2 alpha) it replaces.  The rounding
slack is 1e-12 relative to J (the sums of m terms in double precision).
"""

import numpy as np
import pytest
from helpers import random_problem
from reference import batch as ref

from fastrisk.problem import Problem
from fastrisk.solvers._dual_gap import REACH, GapCertificate
from fastrisk.solvers.lbfgs import solve_lbfgs

SLACK = 1e-12


def ill_conditioned(seed, m=300, d=40, task="binary"):
    """Columns scaled over three decades: small alpha leaves a wide Hessian spectrum."""
    X, y = random_problem(seed, m=m, d=d, task=task)
    return X * np.logspace(0, -3, d), y


def trajectory(problem, n=40):
    """The first n iterates of an L-BFGS run (the callback sees each one)."""
    ws = []
    solve_lbfgs(problem, tol=1e-14, max_iter=n, callback=lambda r: ws.append(r.w.copy()))
    return ws


def numpy_dual(X, y, loss, alpha, a):
    """D(u), u = -a, for l2 in plain NumPy with the reference conjugates (unit weights)."""
    from fastrisk.losses import LOSSES

    conj = LOSSES[loss].conjugate_reference(a, y, None)
    v = -(X.T @ a) / (alpha * len(y))
    return -conj.mean() - 0.5 * alpha * v @ v


@pytest.mark.parametrize("loss,task", [("logistic", "binary"), ("squared_hinge", "binary"),
                                       ("squared", "regression")])
def test_single_dual_point_gap_is_the_gradient_bound(loss, task):
    """For l2 and a smooth loss, J(w) - D(-l'(Xw)) = ||grad J(w)||^2 / (2 alpha)
    (Fenchel-Young with equality), with D computed independently in NumPy."""
    X, y = ill_conditioned(1, task=task)
    alpha = 1e-3
    problem = Problem(X, y, loss=loss, alpha=alpha, n_threads=1)
    rng = np.random.default_rng(0)
    for w in (rng.normal(size=X.shape[1]), np.zeros(X.shape[1])):
        J, g = problem.objective_gradient(w)
        _, dloss = ref.smooth_loss(loss, X @ w, y)  # d mean / d f = l'(f) / m
        gap = J - numpy_dual(X, y, loss, alpha, dloss * len(y))
        assert gap == pytest.approx(g @ g / (2 * alpha), rel=1e-9)


@pytest.mark.parametrize("loss,task", [("logistic", "binary"), ("squared_hinge", "binary"),
                                       ("squared", "regression")])
def test_gap_certifies_and_is_no_looser_than_the_gradient_bound(loss, task):
    X, y = ill_conditioned(2, task=task)
    alpha = 1e-4
    problem = Problem(X, y, loss=loss, alpha=alpha, n_threads=1)
    J_ref = ref.l2_smooth_optimum(X, y, loss, alpha)
    cert = GapCertificate(problem, memory=4)
    tighter = 0
    for w in trajectory(problem):
        J, g = cert.evaluate(w)
        gap = cert.gap(w, J, g)
        bound = g @ g / (2 * alpha)
        assert gap >= J - J_ref - SLACK * J_ref
        assert gap <= bound * (1 + SLACK)
        tighter += gap < 0.5 * bound
    # the extrapolated dual point does better than the gradient bound on most iterates
    assert tighter >= 10


@pytest.mark.parametrize("loss,task", [("logistic", "binary"), ("squared_hinge", "binary")])
def test_gap_with_a_target_and_a_known_bound(loss, task):
    """With a stopping target the extrapolation may stop early (or be skipped) but the
    result still bounds J(w) - J_ref from above; a bound the caller already holds
    (``known``) caps the result, and one that meets the target skips the dual point."""
    X, y = ill_conditioned(3, task=task)
    alpha = 1e-4
    problem = Problem(X, y, loss=loss, alpha=alpha, n_threads=1)
    J_ref = ref.l2_smooth_optimum(X, y, loss, alpha)
    cert = GapCertificate(problem, memory=4)
    for k, w in enumerate(trajectory(problem)):  # one gap per iterate, as in a solver
        J, g = cert.evaluate(w)
        bound = g @ g / (2 * alpha)
        kept = len(cert.A)
        if k % 3 < 2:
            gap = cert.gap(w, J, g, 1e-3 * bound if k % 3 == 0 else 1e-8 * J)
            assert J - J_ref - SLACK * J_ref <= gap <= bound * (1 + SLACK)
            continue
        known = 0.5 * (J - J_ref) + 1e-3 * bound  # an arbitrary value, below the bound
        gap = cert.gap(w, J, g, target=2.0 * known, known=known)
        assert gap == known
        assert len(cert.A) == kept  # met the target: no dual point, no extrapolation


def test_known_bound_does_not_open_the_extrapolation(monkeypatch):
    """The extrapolation is gated by the newest point's gradient bound: with that bound
    beyond REACH times the target, a ``known`` bound between the target and REACH times
    it is returned as it is and the extrapolation is not run (it is replaced by a
    function that fails the test); with the gradient bound within REACH of the target it
    runs (called once, its result still capped by ``known``)."""
    X, y = ill_conditioned(4)
    problem = Problem(X, y, loss="logistic", alpha=1e-4, n_threads=1)
    cert = GapCertificate(problem, memory=4)
    points = list(trajectory(problem, n=6))
    for w in points[:-1]:
        J, g = cert.evaluate(w)
        cert.gap(w, J, g)
    J, g = cert.evaluate(points[-1])
    grad_bound = float(g @ g) / (2 * 1e-4)
    target = grad_bound / (2 * REACH)
    known = 2 * target

    def refuse(*args):
        raise AssertionError("extrapolated although the gradient bound is out of reach")

    with monkeypatch.context() as patch:
        patch.setattr(GapCertificate, "_best_dual", refuse)
        assert cert.gap(points[-1], J, g, target, known=known) == known
    calls = []
    best_dual = GapCertificate._best_dual

    def counted(self, *args):
        calls.append(args)
        return best_dual(self, *args)

    monkeypatch.setattr(GapCertificate, "_best_dual", counted)
    near = grad_bound / (0.5 * REACH)
    assert cert.gap(points[-1], J, g, near, known=2 * near) <= 2 * near
    assert len(calls) == 1


def test_sample_weights_and_elastic_net():
    """Weighted rows and the elastic net (kappa > 0): the gap still bounds J(w) - J*,
    with J* from scipy on the split formulation (tests/reference/batch.py)."""
    X, y = ill_conditioned(3, m=120, d=12)
    alpha, r = 1e-3, 0.3
    problem = Problem(X, y, loss="logistic", penalty="elasticnet", l1_ratio=r, alpha=alpha,
                      n_threads=1)
    J_ref = ref.enet_smooth_optimum(X, y, "logistic", alpha, r)
    cert = GapCertificate(problem)
    rng = np.random.default_rng(1)
    for scale in (1.0, 0.1, 0.0):
        w = scale * rng.normal(size=X.shape[1])
        J, g = cert.evaluate(w)
        gap = cert.gap(w, J, g)
        assert J - J_ref - SLACK * J_ref <= gap < np.inf

    c = rng.uniform(0.5, 2.0, size=len(y))
    weighted = Problem(X, y, loss="logistic", alpha=alpha, sample_weight=c, n_threads=1)
    cert = GapCertificate(weighted)
    # integer weights = repeated rows: J* from the reference on the repeated data
    reps = np.array([1, 2] * (len(y) // 2))
    rep = Problem(X, y, loss="logistic", alpha=alpha, sample_weight=reps.astype(float),
                  n_threads=1)
    J_rep = ref.l2_smooth_optimum(np.repeat(X, reps, axis=0), np.repeat(y, reps),
                                  "logistic", alpha * reps.sum() / len(y))
    J_rep *= reps.sum() / len(y)  # (1/m) sum c_i l_i = (sum c / m) mean over repeated rows
    cert_rep = GapCertificate(rep)
    for w in trajectory(rep, n=15):
        J, g = cert_rep.evaluate(w)
        assert cert_rep.gap(w, J, g) >= J - J_rep - SLACK * abs(J_rep)
    J, g = cert.evaluate(np.zeros(X.shape[1]))
    assert cert.gap(np.zeros(X.shape[1]), J, g) == pytest.approx(g @ g / (2 * alpha), rel=1e-9)


def test_no_certificate_without_strong_convexity():
    X, y = random_problem(4)
    problem = Problem(X, y, loss="logistic", penalty="lp", p=1.5, alpha=1e-2, n_threads=1)
    cert = GapCertificate(problem)
    J, g = cert.evaluate(np.zeros(X.shape[1]))
    assert np.isnan(cert.gap(np.zeros(X.shape[1]), J, g))


def test_lbfgs_certificate_bounds_the_true_suboptimality():
    """L-BFGS at tol 1e-3 on an ill-conditioned problem returns a certified gap within tol and
    a true suboptimality at most that gap."""
    X, y = ill_conditioned(5)
    problem = Problem(X, y, loss="logistic", alpha=1e-5, n_threads=1)
    J_ref = ref.l2_smooth_optimum(X, y, "logistic", 1e-5)
    res = solve_lbfgs(problem, tol=1e-3, max_iter=2000)
    assert res.status == "converged"
    assert res.gap <= 1e-3 * res.objective
    assert res.objective - J_ref <= res.gap + SLACK * J_ref


def numpy_curvature(loss, f, y):
    """l''(f) in NumPy for the losses of these tests."""
    if loss == "logistic":
        p = 1.0 / (1.0 + np.exp(-y * f))
        return p * (1.0 - p)
    if loss == "squared_hinge":
        return (y * f < 1.0).astype(float)
    return np.ones_like(f)  # squared


@pytest.mark.parametrize("loss,task", [("logistic", "binary"), ("squared_hinge", "binary"),
                                       ("squared", "regression")])
@pytest.mark.parametrize("t", [1.0, 0.25])
def test_newton_step_gap_is_the_numpy_dual_of_the_linearized_point(loss, task, t):
    """step_gap against its dual point built in NumPy: u = -(l'(f) + t l''(f) X s), rows
    outside the domain of l* (reference conjugate inf) moved to the domain point nearest
    to them on the segment towards -l'(f_new) (the kernel's 10 halvings of the segment
    replayed in NumPy), and D(u)
    with v = X^T u / (alpha m) from X itself, not from the residual shortcut of the
    solver.  Inexact directions (r != 0) and overshooting ones (rows leave the logistic
    domain).  Equal to 1e-9 relative to J (sums of m terms); never below J(w_new) - J_ref."""
    from fastrisk.losses import LOSSES

    X, y = ill_conditioned(6, task=task)
    m, d = X.shape
    alpha = 1e-4
    problem = Problem(X, y, loss=loss, alpha=alpha, n_threads=1)
    J_ref = ref.l2_smooth_optimum(X, y, loss, alpha)
    cert = GapCertificate(problem)
    rng = np.random.default_rng(0)
    replaced = 0
    for w in trajectory(problem, n=24)[::4]:
        for overshoot in (1.0, 4.0):
            J, g = cert.evaluate(w)
            f = cert.scores.copy()
            H = alpha * np.eye(d) + X.T @ (numpy_curvature(loss, X @ w, y)[:, None] * X) / m
            s = overshoot * np.linalg.solve(H, -g) * (1.0 + 0.1 * rng.normal(size=d))
            r = -g - H @ s
            w_new = w + t * s
            J_new, _ = cert.evaluate(w_new)
            gap = cert.step_gap(J_new, f, t, g, r)

            a = m * ref.smooth_loss(loss, X @ w, y)[1] + \
                t * numpy_curvature(loss, X @ w, y) * (X @ s)
            conj = LOSSES[loss].conjugate_reference
            out = ~np.isfinite(conj(a, y, None))
            a_new = m * ref.smooth_loss(loss, X @ w_new, y)[1]
            lo, hi = np.zeros(m), np.ones(m)
            for _ in range(10):
                mid = 0.5 * (lo + hi)
                inside = np.isfinite(conj(a_new + mid * (a - a_new), y, None))
                lo, hi = np.where(inside, mid, lo), np.where(inside, hi, mid)
            a[out] = (a_new + lo * (a - a_new))[out]
            replaced += out.sum()
            assert gap == pytest.approx(J_new - numpy_dual(X, y, loss, alpha, a),
                                        abs=1e-9 * J_new)
            assert gap >= J_new - J_ref - SLACK * J_ref
    if loss == "logistic":
        assert replaced > 0
