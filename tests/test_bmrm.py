"""BMRM (Teo et al. 2007 Algorithm 1, docs/math.md §4) against independent optima.

Small random problems: BMRM runs to a certified relative gap of 1e-8 and must
match the optimum of an independent scipy formulation (tests/reference/batch.py)
to 1e-6 relative (the issue's tolerance; the references themselves are
solved to ~1e-10), and its certified lower bound must not exceed that optimum
(weak duality: any violation beyond rounding means a wrong certificate).
"""

import math

import numpy as np
import pytest
from helpers import check_against, random_problem, run_with_storage, wide_data, wide_problem
from reference import batch as ref
from reference.liblinear import assert_matches_liblinear, liblinear_objective
from scipy.optimize import minimize

from fastrisk.problem import Problem as FRProblem
from fastrisk.solvers import solve
from fastrisk.solvers.bmrm import Bundle, solve_bmrm
from fastrisk.solvers.qp import simplex_qp


def Problem(*args, **kw):
    """Small problems run the oracle on one thread (OpenMP start-up dominates below ~1e4 nnz)."""
    kw.setdefault("n_threads", 1)
    return FRProblem(*args, **kw)


# ------------------------------------------------------------------ inner QP

@pytest.mark.parametrize("seed", range(4))
def test_simplex_qp_matches_slsqp_and_kkt(seed):
    """Active-set QP vs SLSQP on a singular PSD Gram matrix (repeated cut); tolerance 1e-9
    relative on the value (SLSQP's own accuracy at ftol=1e-14); KKT checked to 1e-9."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(8, 3))
    A = np.vstack([np.zeros(3), A, A[2]])  # constant cut + a duplicate: H singular
    H = A @ A.T / 0.1
    c = np.concatenate([[0.0], rng.normal(size=9)])
    beta0 = np.zeros(10)
    beta0[0] = 1.0
    beta, _ = simplex_qp(H, c, beta0)

    def f(b):
        return 0.5 * b @ H @ b - c @ b

    res = minimize(f, np.full(10, 0.1), jac=lambda b: H @ b - c, method="SLSQP",
                   bounds=[(0, None)] * 10, options=dict(ftol=1e-14, maxiter=1000),
                   constraints=[dict(type="eq", fun=lambda b: b.sum() - 1.0)])
    assert beta.min() >= 0 and abs(beta.sum() - 1.0) < 1e-14
    assert f(beta) <= res.fun + 1e-9 * max(1.0, abs(res.fun))
    g = H @ beta - c
    level = g[beta > 0].min()
    assert np.all(g >= level - 1e-9 * np.abs(g).max())
    assert np.all(np.abs(g[beta > 1e-12] - level) <= 1e-9 * np.abs(g).max())


# ------------------------------------------------------------------ random problems, l2

@pytest.mark.parametrize("seed", [0, 1])
def test_hinge_l2_matches_svm_dual(seed):
    X, y = random_problem(seed)
    res = solve_bmrm(Problem(X, y, loss="hinge", alpha=0.05), tol=1e-8, max_iter=2000)
    check_against(res, ref.hinge_l2_optimum(X, y, 0.05))


@pytest.mark.parametrize("loss,task", [("logistic", "binary"), ("squared", "regression"),
                                       ("squared_hinge", "binary"), ("poisson", "counts")])
def test_smooth_l2_matches_lbfgs(loss, task):
    X, y = random_problem(3, task=task)
    alpha = 0.02
    res = solve_bmrm(Problem(X, y, loss=loss, alpha=alpha), tol=1e-8, max_iter=2000)
    check_against(res, ref.l2_smooth_optimum(X, y, loss, alpha))


def test_softmax_vector_loss_l2():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 4))
    y = np.argmax(X @ rng.normal(size=(4, 3)) + 0.5 * rng.normal(size=(60, 3)), axis=1)
    res = solve_bmrm(Problem(X, y, loss="softmax", alpha=0.05), tol=1e-8, max_iter=2000)
    check_against(res, ref.softmax_l2_optimum(X, y, 3, 0.05))


def test_intercept_and_sample_weight_same_objective():
    """With fit_intercept and sample weights, BMRM's J(w) is Problem.objective(w) and the
    optimum matches L-BFGS-B on the same J (constant column appended, weights folded in)."""
    X, y = random_problem(7)
    c = np.random.default_rng(7).uniform(0.5, 1.5, size=len(y))
    prob = Problem(X, y, loss="logistic", alpha=0.03, fit_intercept=True, sample_weight=c)
    res = solve_bmrm(prob, tol=1e-8, max_iter=2000)
    assert res.objective == pytest.approx(prob.objective(res.w), rel=1e-14)
    Xb = np.hstack([X, np.ones((len(y), 1))])

    def fun(w):
        z = y * (Xb @ w)
        v = c * np.logaddexp(0, -z)
        g = -c * y * np.exp(-np.logaddexp(0, z))
        return v.mean() + 0.015 * w @ w, Xb.T @ g / len(y) + 0.03 * w

    J_ref = minimize(fun, np.zeros(7), jac=True, method="L-BFGS-B", options=ref.TIGHT).fun
    check_against(res, J_ref)


# ------------------------------------------------------------------ bounded bundle

@pytest.mark.parametrize("max_bundle,tol", [(2, 1e-3), (6, 1e-5)])
def test_bounded_bundle_still_converges(max_bundle, tol):
    """Dropping and aggregating cuts keeps every lower bound valid: with 2 slots (aggregate +
    new cut: Theorem 2's line search, slow) to 1e-3, with 6 slots to 1e-5; the optimum must be
    within the certified gap (+1e-9 relative for the reference's own accuracy)."""
    X, y = random_problem(2, m=60, d=8)
    res = solve_bmrm(Problem(X, y, loss="hinge", alpha=0.02), tol=tol, max_iter=20000,
                     max_bundle=max_bundle)
    J_ref = ref.hinge_l2_optimum(X, y, 0.02)
    assert res.status == "converged" and res.extra["bundle_size"] <= max_bundle
    assert res.extra["n_dropped"] + res.extra["n_aggregated"] > 0
    assert 0 <= res.objective - J_ref + 1e-9 * J_ref and res.objective - J_ref <= res.gap
    assert res.extra["lower_bound"] <= J_ref * (1 + 1e-12)


def test_bundle_aggregation_keeps_gram_exact():
    """After aggregation the stored Gram matrix equals A A^T recomputed from the cuts."""
    rng = np.random.default_rng(0)
    bundle = Bundle(5, 4, 0.0)
    for t in range(1, 5):
        bundle.add(rng.normal(size=5), rng.normal(), t)
    bundle.beta[: bundle.k] = rng.dirichlet(np.ones(bundle.k)) + 0.01  # all active
    bundle.beta[: bundle.k] /= bundle.beta[: bundle.k].sum()
    combo = bundle.combination().copy()
    value = bundle.b[: bundle.k] @ bundle.beta[: bundle.k]
    bundle.add(rng.normal(size=5), rng.normal(), 5)
    k = bundle.k
    assert bundle.n_aggregated == 1
    np.testing.assert_allclose(bundle.Q[:k, :k], bundle.A[:k] @ bundle.A[:k].T, rtol=1e-12,
                               atol=1e-12)
    # the previous dual point is unchanged by the aggregation
    np.testing.assert_allclose(bundle.combination(), combo, rtol=1e-12, atol=1e-14)
    assert bundle.b[:k] @ bundle.beta[:k] == pytest.approx(value, rel=1e-12)


# ------------------------------------------------------------------ Theorem 2

def test_theorem2_iteration_bound_and_per_step_decrease():
    """Hinge, alpha = 1: R_emp(0) = 1 and every subgradient has norm <= G = mean ||x_i||.
    Rows scaled so lambda R_emp(0) >= 4 G^2 (the theorem's first phase is then nonnegative).
    The proof's per-step inequality gamma_{t+1} <= gamma_t - gamma_t/2 min(1, gamma_t lambda /
    (4G^2)) must hold at every step (up to 1e-12 rounding) and the step count must respect (13)."""
    X, y = random_problem(4, m=200, d=10)
    X *= 0.05 / np.linalg.norm(X, axis=1).max()
    lam, eps = 1.0, 1e-6
    G = np.linalg.norm(X, axis=1).mean()
    res = solve_bmrm(Problem(X, y, loss="hinge", alpha=lam), tol=0.0, abs_tol=eps, max_iter=10**5)
    assert res.status == "converged"
    bound = math.log2(lam * 1.0) - 2 * math.log2(G) + 8 * G * G / (lam * eps) - 4
    assert res.n_iter - 1 <= bound  # n_iter counts oracle calls: t steps use t + 1 of them
    gam = np.asarray(res.history.bound)
    for g0, g1 in zip(gam[:-1], gam[1:]):
        assert g1 <= g0 - 0.5 * g0 * min(1.0, g0 * lam / (4 * G * G)) + 1e-12


# ------------------------------------------------------------------ API

def test_stopping_budget_callback_and_validation():
    X, y = random_problem(1)
    prob = Problem(X, y, loss="hinge", alpha=1e-3)
    assert solve_bmrm(prob, tol=0.0, max_iter=3).status == "max_iter"
    seen = []
    res = solve(prob, solver="bmrm", tol=0.0, callback=lambda r: seen.append(r.n_iter) or
                len(seen) < 4)
    assert res.status == "callback" and seen == [1, 2, 3, 4] and len(res.history) == 4
    # the returned iterate is the best one seen
    assert res.objective == min(res.history.objective)
    for bad in [dict(tol=-1), dict(max_iter=0), dict(abs_tol=-1.0), dict(max_bundle=1),
                dict(start=np.ones(3))]:
        with pytest.raises(ValueError, match=f"^{next(iter(bad))} must"):
            solve_bmrm(prob, **bad)


def test_keyboard_interrupt_returns_best_iterate():
    X, y = random_problem(1)
    prob = Problem(X, y, loss="hinge", alpha=1e-3)
    calls = []

    def cb(r):
        calls.append(r.objective)
        if len(calls) == 5:
            raise KeyboardInterrupt

    res = solve_bmrm(prob, tol=0.0, callback=cb)
    assert res.status == "interrupted" and res.objective == min(res.history.objective)


# ------------------------------------------------------------------ real data

@pytest.mark.parametrize("name,loss,alpha", [("a9a", "logistic", 1e-4), ("w8a", "hinge", 1e-4),
                                              ("w8a", "logistic", 1e-4),
                                              ("reuters", "logistic", 1e-4),
                                              ("reuters", "logistic", 1e-6)])
def test_real_data_matches_liblinear(libsvm, name, loss, alpha):
    """The issue's real-data settings that fit the CI budget (26 to ~600 iterations); the
    others (hinge on a9a and reuters, alpha = 1e-6 on a9a and w8a: O(1/(lambda eps))
    steps, thousands of iterations) are measured by benchmarks/real_data_matrix.py.
    Within 1e-4 relative of LIBLINEAR (tol 1e-9), and the certificate is never below the
    true gap: J_lib >= J*, so J(w) - J_lib <= J(w) - J* <= gamma (LIBLINEAR's inexactness
    only loosens this check)."""
    X, y = libsvm(name)
    res = solve_bmrm(FRProblem(X, y, loss=loss, alpha=alpha), tol=2e-5, max_iter=5000)
    J_lib = liblinear_objective(name, loss, alpha)
    assert_matches_liblinear(res, J_lib)


def test_real_data_l1_logistic_matches_liblinear(libsvm):
    """l1 logistic on a9a through the LP (11) vs LogisticRegression(l1, liblinear, tol 1e-9).

    alpha = 3e-3 (C = 1/(alpha m) = 0.0102): LIBLINEAR keeps 26 of the 123 weights, a
    moderately sparse model.  BMRM-LP is Kelley's cutting-plane method, ~600 iterations to
    a certified relative gap of 2e-5 here (smaller alpha needs many more: ~1350 at 1e-3).
    Within 1e-4 relative of LIBLINEAR, and the certificate is never below the true gap
    (J_lib >= J*, so J(w) - J_lib <= J(w) - J* <= gamma)."""
    X, y = libsvm("a9a")
    alpha = 3e-3
    # one oracle thread: ~600 short oracle calls, where spinning OpenMP threads on a busy
    # machine cost more than they save
    prob = FRProblem(X, y, loss="logistic", penalty="l1", alpha=alpha, n_threads=1)
    res = solve_bmrm(prob, tol=2e-5, max_iter=3000)
    J_lib = liblinear_objective("a9a", "logistic", alpha, penalty="l1")
    assert_matches_liblinear(res, J_lib)
    assert res.extra["lp_cold_starts"] < res.n_iter / 10  # the warm start is in use


# ------------------------------------------------------------------ other penalties

def test_hinge_l1_matches_lp():
    """l1 inner problems through the LP (11) with HiGHS; reference: the whole l1-SVM as one LP."""
    X, y = random_problem(6)
    res = solve_bmrm(Problem(X, y, loss="hinge", penalty="l1", alpha=0.02), tol=1e-8,
                     max_iter=2000)
    check_against(res, ref.hinge_l1_optimum(X, y, 0.02))


@pytest.mark.parametrize("scale", [1e-12, 1e12, 1e15])
def test_hinge_l1_lp_on_rescaled_data(scale):
    """J(w; X s, alpha s) = J(w s; X, alpha): the LP of the rescaled problem, its rows
    divided by a power of two near the first cut's largest entry, is HiGHS's LP of the
    original, and the run certifies the original's optimum (reference: the whole l1-SVM
    on X as one LP)."""
    X, y = random_problem(6)
    res = solve_bmrm(Problem(X * scale, y, loss="hinge", penalty="l1", alpha=0.02 * scale),
                     tol=1e-8, max_iter=2000)
    check_against(res, ref.hinge_l1_optimum(X, y, 0.02))


def test_hinge_l1_bounded_bundle_keeps_warm_start():
    """LP (11) with room for 12 cuts (8 weights, so a vertex needs at most 9 active cuts):
    once full, an inactive cut is dropped every iteration and the kept HiGHS basis follows
    the remaining cuts, so HiGHS starts cold only rarely (the first LP); reference: the
    whole l1-SVM as one LP, 1e-6 relative."""
    X, y = random_problem(2, m=60, d=8)
    res = solve_bmrm(Problem(X, y, loss="hinge", penalty="l1", alpha=0.02), tol=1e-8,
                     max_iter=2000, max_bundle=12)
    check_against(res, ref.hinge_l1_optimum(X, y, 0.02))
    assert res.extra["n_dropped"] > 10 and res.extra["bundle_size"] <= 12
    assert res.extra["lp_cold_starts"] < res.n_iter / 10


@pytest.mark.parametrize("penalty,kw", [("l1", {}), ("elasticnet", dict(l1_ratio=0.5)),
                                        ("lp", dict(p=1.5))])
def test_logistic_other_penalties(penalty, kw):
    """l1 and elastic net vs L-BFGS-B on the split form w = u - v; lp vs L-BFGS-B directly.
    Certified relative gap 5e-7 (cutting planes on a smooth loss with an LP/FISTA inner
    solver have a slow tail: the l1 run stalls near 1e-7), enough for the 1e-6 comparison."""
    X, y = random_problem(8)
    alpha = 0.03
    res = solve_bmrm(Problem(X, y, loss="logistic", penalty=penalty, alpha=alpha, **kw),
                     tol=5e-7, max_iter=3000)
    if penalty == "lp":
        J_ref = ref.lp_smooth_optimum(X, y, "logistic", alpha, kw["p"])
    else:
        J_ref = ref.enet_smooth_optimum(X, y, "logistic", alpha, kw.get("l1_ratio", 1.0))
    check_against(res, J_ref)



def _simplex_by_bisection(v):
    """Euclidean projection onto the simplex: theta with sum max(v - theta, 0) = 1 by
    bisection on v - max(v) (shift-invariant; no huge numbers cancel)."""
    u = v - v.max()
    lo, hi = -1.0, 0.0  # sum max(u - lo, 0) >= 1 > sum max(u - hi, 0) = 0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.maximum(u - mid, 0.0).sum() >= 1.0 else (lo, mid)
    return np.maximum(u - lo, 0.0)


@pytest.mark.parametrize("offset", [0.0, 1e8, -1e12])
def test_project_simplex_on_huge_entries(offset):
    """The projection of v + offset: on the simplex to rounding (a dual step with a tiny
    Lipschitz estimate makes entries huge, and v - theta cancels), and equal to the
    bisection's projection of v."""
    from fastrisk.solvers.bmrm import project_simplex

    rng = np.random.default_rng(0)
    v = rng.standard_normal(30)
    x = project_simplex(v + offset)
    assert (x >= 0).all() and abs(x.sum() - 1.0) <= 4e-16
    # each entry carries the cancellation's error of about eps |offset|
    np.testing.assert_allclose(x, _simplex_by_bisection(v),
                               atol=4 * np.finfo(float).eps * max(1.0, abs(offset)))


@pytest.mark.parametrize("penalty,kw", [("elasticnet", dict(l1_ratio=0.5)),
                                        ("lp", dict(p=1.5))])
def test_generic_inner_lower_bound_stays_below_the_optimum(penalty, kw):
    """A tight tolerance drives the FISTA inner solver to tiny Lipschitz estimates and
    huge dual steps: its lower bound must stay a lower bound (at most J at the L-BFGS-B
    reference optimum, which is at least J*), with the run certified."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 20))
    y = np.sign(X[:, 0] + 0.5 * rng.standard_normal(300))
    alpha = 1e-2
    res = solve_bmrm(Problem(X, y, loss="logistic", penalty=penalty, alpha=alpha, **kw),
                     tol=1e-10, max_iter=1500)
    if penalty == "lp":
        J_ref = ref.lp_smooth_optimum(X, y, "logistic", alpha, kw["p"])
    else:
        J_ref = ref.enet_smooth_optimum(X, y, "logistic", alpha, kw["l1_ratio"])
    assert res.status == "converged" and res.gap >= 0.0
    assert res.extra["lower_bound"] <= J_ref
    assert res.objective == pytest.approx(J_ref, rel=1e-8)


def test_l1_lp_at_its_precision_stalls():
    """A tol below HiGHS's precision: once the LP returns the iterate whose cut it holds,
    the run ends as "stalled" (not after max_iter repeats of it), with a lower bound below
    the L-BFGS-B optimum and J at it to 1e-6; the estimator warns that tol was not met."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    import fastrisk as fr

    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 20))
    y = np.sign(X[:, 0] + 0.5 * rng.standard_normal(300))
    alpha = 1e-2
    res = solve_bmrm(Problem(X, y, loss="logistic", penalty="l1", alpha=alpha), tol=1e-12,
                     max_iter=3000)
    J_ref = ref.enet_smooth_optimum(X, y, "logistic", alpha, 1.0)
    assert res.status == "stalled" and res.n_iter < 1000
    assert res.extra["lower_bound"] <= J_ref
    assert res.objective == pytest.approx(J_ref, rel=1e-6)
    est = fr.LinearClassifier("logistic", penalty="l1", alpha=alpha, solver="bmrm", tol=1e-12,
                              max_iter=3000, fit_intercept=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    assert any(issubclass(c.category, ConvergenceWarning) and "stalled" in str(c.message)
               for c in caught)


def test_l1_lp_recovers_from_a_lost_warm_start():
    """Poisson counts on sparse columns of scales 0.1 to 10 with sample weights at alpha
    1e-4: the LP's rows (bounds +-lambda, cuts with entries far above them) make HiGHS's primal
    simplex lose its way from the previous basis ("Unknown"); the solve is repeated from
    no basis, and the run certifies the L-BFGS-B optimum."""
    import scipy.sparse as sp

    rng = np.random.default_rng(33)
    m, n = 200, 15
    X = rng.standard_normal((m, n)) * rng.choice([0.1, 1, 10], size=n)
    X = sp.csr_matrix(X * (rng.random((m, n)) < 0.4))
    score = X @ rng.standard_normal(n)
    rng.standard_normal(m)  # the draws of the sweep that found the case
    rng.standard_normal(m)
    y = rng.poisson(np.exp(np.clip(score / (np.abs(score).max() + 1e-12), -2, 2))).astype(float)
    c = rng.uniform(0.1, 3, m)
    alpha = 1e-4
    # two threads: the oracle's sums in the order that gave the case
    res = solve_bmrm(Problem(X, y, loss="poisson", penalty="l1", alpha=alpha, sample_weight=c,
                             n_threads=2), tol=1e-6, max_iter=3000)
    J_ref = ref.enet_smooth_optimum(X.toarray(), y, "poisson", alpha, 1.0, c)
    assert res.status == "converged"
    assert res.extra["lp_cold_starts"] >= 2  # the first solve, and at least one repeat
    assert res.extra["lower_bound"] <= J_ref
    assert res.objective == pytest.approx(J_ref, rel=1e-6)


def test_l1_bmrm_writes_nothing_to_stdout():
    # HiGHS's constructor prints a banner once per process; BMRM-l1 must not let it through
    import subprocess
    import sys

    code = ("import numpy as np, fastrisk as fr\n"
            "X = np.random.default_rng(0).normal(size=(30, 4)); y = np.sign(X[:, 0])\n"
            "fr.solve(fr.Problem(X, y, loss='logistic', penalty='l1', alpha=1e-2),"
            " solver='bmrm', max_iter=5)\n"
            "print('done')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "done\n"


# ------------------------------------------------------------------ cut storage

@pytest.mark.parametrize("penalty", ["l2", "l1"])
def test_sample_space_cuts_same_iterates_as_dense(monkeypatch, penalty):
    """Cuts kept as their multipliers g (a = X^T g / m; Gram rows and combinations through
    X) against dense cuts: the same iterates, the bundle small enough (8 cuts) that cuts are
    dropped and aggregated.  1e-10 relative: the Gram entries and the combinations differ only
    by float64 rounding of sums over O(100) terms."""
    prob = wide_problem(penalty)
    runs = [run_with_storage(monkeypatch, s, solve_bmrm, prob, tol=1e-10, max_iter=60,
                             max_bundle=8) for s in ("dense", "samples")]
    dense, samples = runs
    assert dense.extra["n_aggregated"] > 0 and dense.extra["n_dropped"] > 0
    h0, h1 = np.array(dense.history.objective), np.array(samples.history.objective)
    assert len(h0) == len(h1) == 60
    np.testing.assert_allclose(h1, h0, rtol=1e-10)
    np.testing.assert_allclose(samples.w, dense.w, rtol=0, atol=1e-10 * np.abs(dense.w).max())
    assert samples.extra["lower_bound"] == pytest.approx(dense.extra["lower_bound"], rel=1e-10)


def test_sample_space_cuts_generic_inner_solver(monkeypatch):
    """Elastic net (FISTA inner solver, which stops on its own gap test, so rounding can change
    its step count: not the same iterates) with sample-space cuts reaches the same certified
    optimum as with dense cuts: each run within REL of scipy's optimum of the weighted
    problem, split w = u - v, the intercept a penalized column of ones (check_against)."""
    prob = wide_problem("elasticnet", "logistic", l1_ratio=0.5)
    X, y, c = wide_data()
    J_star = ref.enet_smooth_optimum(np.c_[X.toarray(), np.ones(X.shape[0])], y, "logistic",
                                     prob.alpha, 0.5, c=c)
    runs = [run_with_storage(monkeypatch, s, solve_bmrm, prob, tol=1e-8, max_iter=3000)
            for s in ("dense", "samples")]
    for r in runs:
        check_against(r, J_star)


def test_default_storage_follows_the_cost():
    """Wide sparse data take sample-space cuts (and the bundle bound of m-float cuts), tall
    data dense cuts; an oracle without multipliers always dense cuts."""
    import scipy.sparse as sp

    from fastrisk.solvers.bmrm import DenseCuts, SampleCuts, make_bundle

    wide = Problem(sp.random(50, 20000, density=0.01, random_state=0, format="csr"),
                   np.where(np.arange(50) % 2, 1.0, -1.0), loss="hinge")
    bundle = make_bundle(wide, None, 0.0)
    assert isinstance(bundle.cuts, SampleCuts) and bundle.capacity == 201
    X, y = random_problem(0, m=500, d=5)
    assert isinstance(make_bundle(Problem(X, y, loss="hinge"), None, 0.0).cuts, DenseCuts)
    oracle_only = FRProblem.from_oracle(_OracleOnly(wide.oracle))
    assert isinstance(make_bundle(oracle_only, None, 0.0).cuts, DenseCuts)


class _OracleOnly:
    """A bare oracle (no multipliers), as a user or a Dask cluster would give."""

    def __init__(self, oracle):
        self.oracle, self.n_samples, self.n_weights = oracle, oracle.n_samples, oracle.n_weights

    def __call__(self, w):
        return self.oracle(w)


def _scipy_lp_inner(bundle, lam, regularizer, best):
    """LP (11) rebuilt and solved from scratch by scipy's HiGHS at every step (reference for
    the incrementally updated, warm-started model)."""
    from scipy.optimize import linprog

    k = bundle.k
    A = np.array([bundle.combination(1.0, np.eye(k)[i]) for i in range(1, k)])
    b, b0, n = bundle.b[1:k], bundle.b[0], A.shape[1]
    res = linprog(-(b - b0), A_ub=np.vstack([A.T, -A.T, np.ones((1, k - 1))]),
                  b_ub=np.r_[np.full(2 * n, lam), 1.0], bounds=(0, None), method="highs")
    mu = res.ineqlin.marginals
    alpha = np.maximum(res.x, 0.0)
    alpha /= max(1.0, alpha.sum(), np.abs(alpha @ A).max() / lam)
    bundle.beta[1:k], bundle.beta[0] = alpha, 1.0 - alpha.sum()
    bundle.lp = type("ColdLP", (), {"n_cold": k})
    return mu[:n] - mu[n:2 * n], float(bundle.b[:k] @ bundle.beta[:k])


@pytest.mark.parametrize("seed", [1, 5])
def test_incremental_lp_same_iterates_as_rebuilt_lp(monkeypatch, seed):
    """The HiGHS model changed in place (new cut's column added, dropped cuts' columns
    deleted, warm basis) gives the same iterates as the LP rebuilt from scratch each step
    (scipy), with a 12-cut bundle that drops a cut nearly every step.  On these data every
    LP has a unique optimal w (a degenerate LP may have several, and then any of them is a
    valid BMRM step).  1e-9: simplex tolerances."""
    from fastrisk.solvers import bmrm

    X, y = random_problem(seed, m=60, d=8)
    prob = Problem(X, y, loss="hinge", penalty="l1", alpha=0.02)
    ours = solve_bmrm(prob, tol=1e-9, max_iter=300, max_bundle=12)
    with monkeypatch.context() as mp:
        mp.setattr(bmrm, "_inner_l1", _scipy_lp_inner)
        ref_run = solve_bmrm(prob, tol=1e-9, max_iter=300, max_bundle=12)
    assert ours.extra["n_dropped"] > 20 and ours.extra["lp_cold_starts"] <= 2
    np.testing.assert_allclose(ours.history.objective, ref_run.history.objective, rtol=1e-9)


def test_an_infinite_objective_is_not_converged():
    """The Monitor's stop on bound <= tol |J|: with J = inf that test would hold for any
    bound (tol * inf = inf); an infinite objective certifies nothing."""
    from fastrisk.stopping import Monitor

    prob = FRProblem(np.eye(3), [1, -1, 1], loss="hinge")
    mon = Monitor(prob, "test", tol=1e-3, max_iter=10)
    assert mon.check(1, np.zeros(3), math.inf, math.inf) is None
    assert mon.check(2, np.zeros(3), 1.0, 1e-4) == "converged"


@pytest.mark.parametrize("loss", ["exponential", "poisson"])
def test_l1_warm_start_near_the_optimum_of_an_exponential_loss(loss):
    """Warm-started at the optimum, the first LP step of an exponential loss goes where
    the nearly flat cut predicts the risk's infimum: scores of hundreds, a risk that
    overflows or a cut with entries of 1e200.  The cut is taken on the way there
    (``cut_point``) and the run certifies L-BFGS-B's optimum."""
    rng = np.random.default_rng(0)
    m, n = 200, 15
    X = rng.standard_normal((m, n)) * rng.choice([0.1, 1, 10], size=n)
    score = X @ rng.standard_normal(n)
    if loss == "exponential":
        y = np.where(score + rng.standard_normal(m) > 0, 1.0, -1.0)
    else:
        y = rng.poisson(np.exp(np.clip(score / np.abs(score).max(), -2, 2))).astype(float)
    alpha = 1e-3
    problem = Problem(X, y, loss=loss, penalty="l1", alpha=alpha)
    J_ref = ref.enet_smooth_optimum(X, y, loss, alpha, 1.0)
    cold = solve_bmrm(problem, tol=1e-8, max_iter=3000)
    warm = solve_bmrm(problem, tol=1e-6, max_iter=3000, start=cold.w)
    assert warm.status == "converged"
    assert warm.extra["lower_bound"] <= J_ref
    assert warm.objective == pytest.approx(J_ref, rel=1e-6)
