"""solver="auto"'s probes (rules 2 and 5 of fastrisk/solvers/auto.py): plain SDCA for
PROBE_EPOCHS epochs, then SDCA, or Newton (the squared hinge) or smoothing (the hinge)
warm-started from the probe, by the documented rule (inside PROBE_BAND, rule 2 leaves it
to sdca's own probe in one run).

Each choice is checked against the rule evaluated independently (a plain SDCA run of
PROBE_EPOCHS epochs with the same random_state, whose first epochs are the probe's),
and each run's result against the optimum of scipy's L-BFGS-B on the same squared hinge
objective (continuously differentiable; driven to a gradient norm of 1e-12, so its J*
is exact to far below the tolerances): the certified gap bounds the true gap (1e-9
relative slack for the reference) and the true relative gap is within tol.
"""

import numpy as np
import pytest
from scipy.optimize import minimize

import fastrisk as fr
from fastrisk.solvers import choose_solver, solve
from fastrisk.solvers._catalyst import PROBE_BAND, PROBE_EPOCHS, PROBE_RATE
from fastrisk.solvers._epochs import observed_rate
from fastrisk.solvers.auto import SDCA_ALPHA_M, SMOOTHING_ALPHA_M, SMOOTHING_RATE, SMOOTHING_ROWS

M, TOL = 400, 1e-4


def squared_hinge_optimum(X, y, alpha):
    """min alpha/2 ||w||^2 + (1/m) sum max(0, 1 - y <w, x>)^2 by L-BFGS-B."""
    m = len(y)

    def f(w):
        slack = np.maximum(0.0, 1.0 - y * (X @ w))
        return (0.5 * alpha * w @ w + slack @ slack / m,
                alpha * w - 2.0 / m * X.T @ (y * slack))

    res = minimize(f, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B",
                   options=dict(gtol=1e-12, ftol=1e-15, maxiter=100_000))
    return res.fun


def expected_choice(problem):
    """The rule of auto.py from an independent plain run of PROBE_EPOCHS epochs."""
    plain = solve(problem, "sdca", tol=TOL, random_state=0, accelerated=False,
                  max_iter=PROBE_EPOCHS)
    return "sdca" if observed_rate(plain.extra["gap_estimates"]) <= PROBE_RATE else "newton"


def data(kind):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(M, 5))
    if kind == "separable":  # a margin of 0.5 along the first feature
        y = np.where(X[:, 0] > 0, 1.0, -1.0)
        X[:, 0] += 0.5 * y
    else:  # overlapping classes
        y = np.where(X[:, 0] + 2.0 * rng.normal(size=M) > 0, 1.0, -1.0)
    return X, y, float(np.max(np.einsum("ij,ij->i", X, X)))


@pytest.mark.parametrize("kind, band_ratio, expected", [
    ("separable", 2e-4, "sdca"),    # fast plain SDCA: it continues
    ("noisy", 2e-4, "newton"),      # slow plain SDCA: Newton
])
def test_probe_choice_and_certified_tol(kind, band_ratio, expected):
    X, y, R2 = data(kind)
    alpha = band_ratio * R2 / M  # alpha m / R^2 = band_ratio
    assert alpha * M < SDCA_ALPHA_M
    prob = fr.Problem(X, y, loss="squared_hinge", alpha=alpha)
    assert choose_solver(prob) == "sdca"  # the probe starts with SDCA
    res = solve(prob, "auto", tol=TOL, random_state=0)
    assert res.extra["probe"]["choice"] == expected_choice(prob) == expected
    assert res.extra["probe"]["epochs"] == PROBE_EPOCHS
    assert res.solver == expected and "accelerated" not in res.extra
    J_star = squared_hinge_optimum(X, y, alpha)
    assert res.status == "converged" and res.gap <= TOL * res.objective
    assert res.objective - J_star <= res.gap + 1e-9 * J_star  # the certificate holds
    assert res.objective - J_star <= TOL * J_star
    again = solve(prob, "auto", tol=TOL, random_state=0)
    assert np.array_equal(res.w, again.w)  # deterministic


def test_in_the_band_sdca_probes_alone():
    # alpha m / R^2 in PROBE_BAND: one sdca run whose accelerated="auto" decides (its
    # rule is tested in tests/test_catalyst.py); the certified tol holds against scipy
    X, y, R2 = data("noisy")
    alpha = 4.5e-3 * R2 / M
    assert PROBE_BAND[0] <= 4.5e-3 < PROBE_BAND[1] and alpha * M < SDCA_ALPHA_M
    prob = fr.Problem(X, y, loss="squared_hinge", alpha=alpha)
    res = solve(prob, "auto", tol=TOL, random_state=0)
    assert "probe" not in res.extra and res.extra["probe_rate"] > PROBE_RATE
    assert res.extra["accelerated"]  # overlapping classes: few rows shrunk, slow plain
    J_star = squared_hinge_optimum(X, y, alpha)
    assert res.status == "converged" and res.gap <= TOL * res.objective
    assert res.objective - J_star <= res.gap + 1e-9 * J_star


@pytest.mark.parametrize("kind, expected", [
    ("separable", "sdca"),      # fast plain SDCA: it continues
    ("noisy", "smoothing"),     # slow plain SDCA: smoothing
])
def test_hinge_probe_and_certified_tol(kind, expected):
    X, y, R2 = data(kind)
    alpha = 2e-4 * R2 / M
    assert alpha * M < SMOOTHING_ALPHA_M and X.shape[1] * SMOOTHING_ROWS <= M
    prob = fr.Problem(X, y, loss="hinge", alpha=alpha)
    assert choose_solver(prob) == "sdca"  # the probe starts with SDCA
    res = solve(prob, "auto", tol=TOL, random_state=0)
    plain = solve(prob, "sdca", tol=TOL, random_state=0, accelerated=False,
                  max_iter=PROBE_EPOCHS)
    rule = "sdca" if observed_rate(plain.extra["gap_estimates"]) <= SMOOTHING_RATE \
        else "smoothing"
    assert res.extra["probe"]["choice"] == rule == expected == res.solver
    # the optimum certified by SDCA far below TOL (a dual method, independent of smoothing)
    ref = solve(prob, "sdca", tol=1e-12, max_iter=10**7, random_state=0)
    assert ref.status == "converged"
    assert res.status == "converged" and res.gap <= TOL * res.objective
    assert res.objective - ref.objective <= res.gap + ref.gap + 1e-12 * ref.objective
    assert res.objective - ref.objective <= TOL * ref.objective + ref.gap
    again = solve(prob, "auto", tol=TOL, random_state=0)
    assert np.array_equal(res.w, again.w)  # deterministic


def test_where_the_probes_apply():
    X, y, R2 = data("noisy")
    alpha = 2e-4 * R2 / M
    # logistic keeps Newton; the hinge above SMOOTHING_ALPHA_M or with more than
    # 1/SMOOTHING_ROWS as many features as samples: sdca alone
    assert choose_solver(fr.Problem(X, y, loss="logistic", alpha=alpha)) == "newton"
    assert "probe" not in solve(fr.Problem(X, y, loss="hinge", alpha=2 * SMOOTHING_ALPHA_M / M),
                                "auto", tol=1e-3, random_state=0).extra
    wide = np.hstack([X] * (M // (SMOOTHING_ROWS * X.shape[1]) + 1))
    assert "probe" not in solve(fr.Problem(wide, y, loss="hinge", alpha=alpha), "auto",
                                tol=1e-3, random_state=0).extra
    above = fr.Problem(X, y, loss="squared_hinge", alpha=2 * SDCA_ALPHA_M / M)
    assert "probe" not in solve(above, "auto", tol=1e-3, random_state=0).extra
    # a budget within the probe: the probe's own result
    short = solve(fr.Problem(X, y, loss="squared_hinge", alpha=alpha), "auto", max_iter=2,
                  random_state=0)
    assert short.n_iter == 2 and short.extra["probe"]["choice"] == "sdca"
    # the estimators report the solver that finished
    clf = fr.LinearClassifier(loss="squared_hinge", alpha=alpha, tol=TOL, random_state=0)
    assert clf.fit(X, y).solver_ == "newton"
    clf = fr.LinearClassifier(loss="hinge", alpha=alpha, tol=TOL, random_state=0)
    assert clf.fit(X, y).solver_ == "smoothing"
