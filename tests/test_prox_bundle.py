"""Proximal bundle method (Do, Le & Foo 2009 Algorithm 4) against independent optima and BMRM."""

import math

import numpy as np
import pytest
from helpers import check_against, random_problem, run_with_storage, wide_problem
from reference import batch as ref
from reference.liblinear import assert_matches_liblinear, liblinear_objective

from fastrisk.problem import Problem as FRProblem
from fastrisk.solvers.bmrm import solve_bmrm
from fastrisk.solvers.prox_bundle import solve_prox_bundle


def Problem(*args, **kw):
    kw.setdefault("n_threads", 1)
    return FRProblem(*args, **kw)


# Certified relative gap 5e-7 (the method's tail is slow: thousands of steps for 1e-7 on some
# seeds), so the optimum must lie within 1e-6 of the independent reference (itself ~1e-7 exact).

def test_hinge_matches_svm_dual():
    X, y = random_problem(1)
    res = solve_prox_bundle(Problem(X, y, loss="hinge", alpha=0.05), tol=5e-7, max_iter=5000)
    check_against(res, ref.hinge_l2_optimum(X, y, 0.05))


def test_logistic_matches_lbfgs_reference():
    X, y = random_problem(4)
    res = solve_prox_bundle(Problem(X, y, loss="logistic", alpha=0.1), tol=5e-7, max_iter=5000)
    check_against(res, ref.l2_smooth_optimum(X, y, "logistic", 0.1))


def test_bounded_bundle_and_validation():
    X, y = random_problem(2, m=60, d=8)
    res = solve_prox_bundle(Problem(X, y, loss="hinge", alpha=0.02), tol=1e-4, max_iter=20000,
                            max_bundle=6)
    J_ref = ref.hinge_l2_optimum(X, y, 0.02)
    assert res.status == "converged" and res.extra["bundle_size"] <= 6
    assert res.objective - J_ref <= res.gap and res.extra["lower_bound"] <= J_ref * (1 + 1e-12)
    with pytest.raises(ValueError, match="l2"):
        solve_prox_bundle(Problem(X, y, loss="hinge", penalty="l1"))
    with pytest.raises(ValueError, match="R must"):
        solve_prox_bundle(Problem(X, y, loss="hinge"), R=0.0)
    with pytest.raises(ValueError, match="restart must"):
        solve_prox_bundle(Problem(X, y, loss="hinge"), restart=1.0)


def test_phases_only_on_growth_of_R():
    """restart=None: phases start only when R grows (Algorithm 3 as written), still the
    optimum of the independent SVM dual to 1e-6 (certified 5e-7, see above); R starts
    below ||w*|| here, so it must grow, and each growth step (one or more sqrt(2) factors)
    starts one phase."""
    X, y = random_problem(1)
    res = solve_prox_bundle(Problem(X, y, loss="hinge", alpha=0.05), tol=5e-7, max_iter=5000,
                            restart=None, R=0.25)
    check_against(res, ref.hinge_l2_optimum(X, y, 0.05))
    growths = round(2 * math.log2(res.extra["R"] / 0.25))
    assert 2 <= res.extra["n_phases"] <= 1 + growths


@pytest.mark.parametrize("name,loss,alpha", [("a9a", "hinge", 1e-4), ("a9a", "logistic", 1e-4),
                                              ("a9a", "hinge", 1e-6), ("a9a", "logistic", 1e-6),
                                              ("w8a", "hinge", 1e-4), ("w8a", "logistic", 1e-4),
                                              ("w8a", "logistic", 1e-6),
                                              ("reuters", "hinge", 1e-4),
                                              ("reuters", "logistic", 1e-4),
                                              ("reuters", "logistic", 1e-6)])
def test_real_data_matches_liblinear(libsvm, name, loss, alpha):
    """The issue's real-data settings that fit the CI budget (up to several hundred
    iterations).  Left out: reuters-hinge at 1e-6 (tens of thousands of iterations to a
    certified 1e-4, BMRM too) and w8a-hinge at 1e-6, where LIBLINEAR (tol 1e-9,
    random_state 0) itself stops further above the optimum than the 1e-4 checked here;
    both are measured by benchmarks/real_data_matrix.py.  Certified relative gap 1e-4 (status
    converged), so within 1e-4 relative of LIBLINEAR (tol 1e-9; on a9a-hinge at 1e-6 it
    is 3e-5 above J*), and the certificate is never below the true gap: J_lib >= J*, so
    J(w) - J_lib <= J(w) - J* <= gamma (LIBLINEAR's inexactness only loosens this
    check)."""
    X, y = libsvm(name)
    res = solve_prox_bundle(FRProblem(X, y, loss=loss, alpha=alpha), tol=1e-4, max_iter=5000)
    J_lib = liblinear_objective(name, loss, alpha)
    assert_matches_liblinear(res, J_lib)
    assert res.extra["lower_bound"] <= J_lib


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_small_lambda_beats_bmrm_on_a9a(libsvm, loss):
    """Figure 3's claim on real data: at lambda = 1e-6 on a9a, after 60 iterations the best
    objective of the proximal bundle method is far lower than BMRM's: BMRM's early
    iterates -A alpha / lambda are huge and it stalls for thousands of iterations,
    while the proximal step keeps the iterates near the stability center.  The ratio of
    the relative suboptimalities is asserted below 0.05; it is typically two orders of
    magnitude smaller.  Both certificates stay above the true gap
    (J_lib >= J*)."""
    X, y = libsvm("a9a")
    prob = FRProblem(X, y, loss=loss, alpha=1e-6)
    prox = solve_prox_bundle(prob, tol=0.0, max_iter=60)
    bmrm = solve_bmrm(prob, tol=0.0, max_iter=60)
    J_lib = liblinear_objective("a9a", loss, 1e-6)
    assert prox.objective - J_lib < 0.05 * (bmrm.objective - J_lib)
    for res in (prox, bmrm):
        assert res.objective - J_lib <= res.gap and res.extra["lower_bound"] <= J_lib


def test_sample_space_cuts_same_iterates_as_dense(monkeypatch):
    """Cuts as multipliers (products A w through X) against dense cuts: the same iterates over
    60 steps with an 8-cut bundle (drops and aggregations, a phase at an earlier best point
    when the products A w_best are formed from the cuts).  1e-10 relative: float64 rounding."""

    prob = wide_problem()
    dense, samples = [run_with_storage(monkeypatch, s, solve_prox_bundle, prob, tol=1e-10,
                                       max_iter=60, max_bundle=8) for s in ("dense", "samples")]
    assert dense.extra["n_aggregated"] + dense.extra["n_dropped"] > 0
    assert dense.extra["n_phases"] > 1
    np.testing.assert_allclose(samples.history.objective, dense.history.objective, rtol=1e-10)
    np.testing.assert_allclose(samples.w, dense.w, rtol=0, atol=1e-10 * np.abs(dense.w).max())


def test_cut_offsets_from_gram_row_match_direct_products(monkeypatch):
    """<a_t, w_t> is formed from the new Gram row and the previous step's multipliers
    (w_t = (c - t A^T beta) / s) instead of a pass over a_t: every stored cut must still
    pass through its query point, b_t = R_emp(w_t) - <a_t, w_t> with the product taken
    directly, over 40 steps with phases (a bundle large enough that no cut is dropped, so
    slot t holds the cut of step t).  1e-12 relative to R_emp + |<a_t, w_t>|: the two
    products differ by float64 rounding of the dual combination."""

    from fastrisk.solvers import bmrm

    prob = wide_problem()
    points, bundles = [], []
    oracle_call = type(prob.oracle).__call__

    def recording(obj, w):
        points.append(np.array(w))
        return oracle_call(obj, w)

    def keep(*args, **kw):
        bundles.append(bmrm.make_bundle(*args, storage="dense", **kw))
        return bundles[-1]

    monkeypatch.setattr(type(prob.oracle), "__call__", recording)
    monkeypatch.setattr("fastrisk.solvers.prox_bundle.make_bundle", keep)
    res = solve_prox_bundle(prob, tol=0.0, max_iter=40, max_bundle=60)
    bundle = bundles[0]
    assert res.extra["n_phases"] > 1 and bundle.n_dropped + bundle.n_aggregated == 0
    for t, w in enumerate(points, start=1):
        a = bundle.A[t]
        risk = oracle_call(prob.oracle, w)[0]
        aw = float(a @ w)
        assert bundle.b[t] == pytest.approx(risk - aw, rel=0, abs=1e-12 * (risk + abs(aw)))
        assert bundle.Q[t, t] == pytest.approx(float(a @ a), rel=1e-12)



def test_objectives_from_gram_quantities_match_direct(monkeypatch):
    """||w_t||^2 (and so J(w_t)) is formed from ||c||^2, A c and the Gram matrix, and with
    sample-space cuts a phase at an earlier best point takes X w_best from the oracle's
    scores of that point's call.  Over 60 steps (8-cut bundle: drops and aggregations;
    logistic with R = 0.05: R grows while the last iterate is not the best, so a phase starts
    at an earlier point) every recorded objective must equal J of its query point computed
    from scratch (``Problem.objective``), 1e-12 relative (float64 rounding of the two
    formulas), and both storages must give the same iterates: 1e-7 of max |w|, looser than
    above because here the rounding differences of the two storages pass through the
    logistic model's many active-set changes (a wrong X w_best moves them by 1e-2)."""

    prob = wide_problem(loss="logistic")
    oracle_call = type(prob.oracle).__call__
    runs = {}
    for storage in ("dense", "samples"):
        points = []

        def recording(obj, w, points=points):
            points.append(np.array(w))
            return oracle_call(obj, w)

        with monkeypatch.context() as mp:
            mp.setattr(type(prob.oracle), "__call__", recording)
            res = run_with_storage(monkeypatch, storage, solve_prox_bundle, prob, tol=0.0,
                                   max_iter=60, max_bundle=8, R=0.05)
        assert res.extra["n_phases"] > 1
        assert res.extra["n_aggregated"] + res.extra["n_dropped"] > 0
        direct = [prob.objective(w) for w in points]
        np.testing.assert_allclose(res.history.objective, direct, rtol=1e-12)
        runs[storage] = points
    np.testing.assert_allclose(runs["samples"], runs["dense"], rtol=0,
                               atol=1e-7 * np.abs(runs["dense"]).max())


def test_an_iterate_that_overflows_is_reported_by_the_solver():
    """Sample weights near the largest double make the steps overflow: a FloatingPointError
    names the solver, not the oracle's message about the caller's w."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5))
    y = np.sign(X[:, 0] + 0.1)
    problem = FRProblem(X, y, loss="hinge", sample_weight=np.full(40, 1e300))
    with np.errstate(all="ignore"), \
            pytest.raises(FloatingPointError, match="^prox_bundle: an iterate is not finite"):
        solve_prox_bundle(problem, max_iter=5)
