"""Multivariate, ranking and vector losses against brute-force references (tests/reference).

Values are compared at rtol 1e-12: the references sum the same terms in
another order (float64 rounding only).  Subgradients are checked two ways:
against the reference maximizer (the loss value at the labeling/permutation
the gradient encodes equals the max), and by the subgradient inequality
R(f') >= R(f) + <g, f' - f> at random f' (slack 1e-12 for rounding), which
holds for any valid subgradient, also at ties.
"""

import itertools

import numpy as np
import pytest
from reference import multivariate as ref

import fastrisk as fr
import fastrisk.multivariate as mv
from fastrisk.losses import vector_loss
from fastrisk.multivariate import (
    FBeta,
    FunctionOracle,
    MultivariateRegression,
    OrdinalRegression,
    RankingLoss,
    ROCArea,
    ScaledSoftMargin,
    ScoreOracle,
    make_problem,
)


def assert_subgradient(loss, f, y, rng, n_dirs=30):
    value, g = loss.risk(f, y)
    for _ in range(n_dirs):
        f2 = f + rng.normal(size=f.shape) * rng.choice([0.01, 0.3, 3.0])
        assert loss.risk(f2, y)[0] >= value + g @ (f2 - f) - 1e-12


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("levels", [2, 4])
def test_ordinal_matches_pair_loop(seed, levels):
    rng = np.random.default_rng(seed)
    m = 40
    y = rng.integers(0, levels, size=m).astype(float)
    f = rng.normal(size=m)
    loss = OrdinalRegression()
    value, g = loss.risk(f, y)
    assert value == pytest.approx(ref.pairwise_hinge(f, y), rel=1e-12)
    # the gradient of the pair sum (no ties at random scores): explicit pair loop
    g_ref = np.zeros(m)
    P = sum(y[i] > y[j] for i in range(m) for j in range(m))
    for i, j in itertools.product(range(m), range(m)):
        if y[i] > y[j] and 1 - (f[i] - f[j]) > 0:
            g_ref[i] -= 1 / P
            g_ref[j] += 1 / P
    np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-15)
    assert_subgradient(loss, f, y, rng)


def test_ordinal_subgradient_at_ties():
    """Integer scores make many pairs sit exactly on the hinge kink."""
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, size=30).astype(float)
    f = rng.integers(-2, 3, size=30).astype(float)
    loss = OrdinalRegression()
    assert loss.risk(f, y)[0] == pytest.approx(ref.pairwise_hinge(f, y), rel=1e-12)
    assert_subgradient(loss, f, y, rng)


def test_pairwise_hinge_of_active_pairs_is_not_lost_to_inactive_scores():
    """The positive's one active pair has hinge 2^-54 (f_j one ulp above f_i - 1); the
    inactive score -1000.3 must not enter its sum: a prefix sum differenced across it
    gave -2.3e-14, an R_emp below the loss's floor 0 that BMRM refuses.  Reference: the
    mean of the two hinges in exact rational arithmetic."""
    from fractions import Fraction

    f = np.array([1.3, np.nextafter(1.3 - 1.0, 2.0), -1000.3])
    y = np.array([1.0, -1.0, -1.0])
    exact = sum(max(Fraction(0), 1 - (Fraction(f[0]) - Fraction(fj))) for fj in f[1:]) / 2
    assert exact == Fraction(2) ** -55
    for loss in (ROCArea(), OrdinalRegression()):
        assert loss.risk(f, y)[0] == exact
    # BMRM on an l1 problem whose iterates separate the pairs with margins near 1
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 15)) * rng.choice([0.1, 1, 10], size=15)
    labels = np.where(X @ rng.standard_normal(15) + rng.standard_normal(200) > 0, 1.0, -1.0)
    problem = make_problem(X, labels, ROCArea(), penalty="l1", alpha=1e-4, fit_intercept=True)
    res = fr.solve(problem, solver="bmrm", tol=1e-3, max_iter=3000)
    assert res.status == "converged"
    f = X @ res.coef_ + res.intercept_
    assert res.objective == pytest.approx(
        ref.pairwise_hinge(f, labels) + 1e-4 * np.abs(res.w).sum(), rel=1e-12)


def test_roc_area_bounds_auc_and_labels():
    rng = np.random.default_rng(1)
    labels = rng.choice([3, 7], size=50)  # any two values; the larger is positive
    f = rng.normal(size=50)
    value, _ = ROCArea().risk(f, labels)
    y01 = (labels == 7).astype(float)
    assert value == pytest.approx(ref.pairwise_hinge(f, y01), rel=1e-12)
    # the hinge is an upper bound on the 0-1 pair loss, scale invariant: 1 - AUC <= R(s f)
    for s in (1.0, 10.0, 1000.0):
        assert 1 - ref.auc(f, y01) <= ROCArea().risk(s * f, labels)[0] + 1e-12
    assert_subgradient(ROCArea(), f, labels, rng)
    with pytest.raises(ValueError, match="exactly two classes"):
        ROCArea().risk(f, np.arange(50))


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("seed", range(3))
def test_fbeta_matches_enumeration(beta, seed):
    rng = np.random.default_rng(seed)
    m = 10
    y = np.where(rng.random(m) < 0.4, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    f = rng.normal(size=m) * rng.choice([0.1, 1.0, 10.0])
    value, g = FBeta(beta).risk(f, y)
    assert value == pytest.approx(ref.fbeta_max(f, y, beta), rel=1e-12)
    # g = (y* - y) / (2m) for the maximizing labeling y*
    y_star = y + 2 * m * g
    assert set(np.round(y_star, 9)) <= {-1.0, 1.0}
    assert ref.fbeta_loss(f, y, beta, np.round(y_star)) == pytest.approx(value, rel=1e-12)
    assert_subgradient(FBeta(beta), f, y, rng)


@pytest.mark.parametrize("measure,k", [("ndcg", None), ("ndcg", 3), ("precision", 2),
                                       ("precision", None)])
def test_ranking_matches_permutation_enumeration(measure, k):
    rng = np.random.default_rng(2)
    sizes = [5, 6, 4, 3]
    query = np.repeat(np.arange(len(sizes)) * 7 + 1, sizes)
    rng.shuffle(query)  # documents of a query need not be contiguous
    rel = rng.integers(0, 3, size=len(query)).astype(float)
    rel[query == query[0]] = 0.0  # one query with nothing relevant: skipped
    f = rng.normal(size=len(query))
    loss = RankingLoss(query, measure=measure, k=k)
    value, g = loss.risk(f, rel)
    per_query = [ref.ranking_query_max(f[query == q], rel[query == q], measure, k)
                 for q in np.unique(query) if q != query[0]]
    assert value == pytest.approx(np.mean(per_query), rel=1e-12)
    # g encodes the maximizing permutation: g_j = (c_pos(j) - c_sigma(j)) / Q
    c = 1.0 / np.log2(np.arange(2, 8))
    for q in np.unique(query):
        idx = np.flatnonzero(query == q)
        if q == query[0]:
            assert (g[idx] == 0).all()
            continue
        n = len(idx)
        sigma = sorted(range(n), key=lambda j: (-rel[idx][j], j))
        c_pos = g[idx] * len(per_query) + c[np.argsort(sigma)]
        pos = [int(np.argmin(np.abs(c[:n] - v))) for v in c_pos]
        perm = np.argsort(pos)
        assert sorted(pos) == list(range(n))
        assert ref.ranking_query_loss(f[idx], rel[idx], measure, k, perm) == \
            pytest.approx(ref.ranking_query_max(f[idx], rel[idx], measure, k), rel=1e-12)
    assert_subgradient(loss, f, rel, rng)


def test_ranking_loss_zero_for_a_good_ranking():
    """Scores in relevance order with margins >> 1: the ideal ranking maximizes, loss 0."""
    query = np.array([0, 0, 0, 1, 1])
    rel = np.array([2.0, 0.0, 1.0, 0.0, 1.0])
    assert RankingLoss(query).risk(100 * rel, rel)[0] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("measure,k", [("ndcg", None), ("ndcg", 3), ("precision", 2)])
def test_ranking_loss_of_the_ideal_order_is_exactly_zero(measure, k):
    """Scores strictly in the ideal order (ties by index): sigma's value is 0 in exact
    arithmetic, and where no other permutation is above it (the enumeration's max is 0)
    the loss is exactly 0, never below.  Summing S over the assignment and subtracting
    c f[sigma] left -4.4e-16 (precision@2, first case), an R_emp below the loss's floor 0
    that BMRM refuses."""
    rng = np.random.default_rng(0)
    cases = [(np.array([2.0, 3, 2, 2, 1, 3, 0, 2]), 0.37)]
    cases += [(rng.integers(0, 4, size=7).astype(float), step) for step in (1.0, 0.37, 1e3)]
    for rel, step in cases:
        n = len(rel)
        sigma = sorted(range(n), key=lambda j: (-rel[j], j))
        f = np.empty(n)
        f[sigma] = -step * np.arange(n)
        value, g = RankingLoss(np.zeros(n), measure=measure, k=k).risk(f, rel)
        best = ref.ranking_query_max(f, rel, measure, k)
        assert best >= 0.0 and value == pytest.approx(best, rel=1e-12, abs=0.0)
        if best == 0.0:
            np.testing.assert_array_equal(g, 0.0)


@pytest.mark.parametrize("beta", [0.0, 1.0, 2.0])
def test_scaled_soft_margin_matches_loop(beta):
    rng = np.random.default_rng(3)
    n, k = 30, 4
    F, y = rng.normal(size=(n, k)), rng.integers(0, k, size=n)
    cost = rng.uniform(0.5, 2.0, size=(k, k))
    np.fill_diagonal(cost, 0.0)
    values, G = vector_loss("scaled_soft_margin", F, y, cost=cost, beta=beta)
    np.testing.assert_allclose(values, ref.scaled_soft_margin(F, y, cost, beta), rtol=1e-12)
    # random F has no ties: the loss is differentiable there; central differences
    # of a piecewise-linear function are exact up to rounding (h = 1e-6 -> 1e-8)
    h = 1e-6
    for i, j in itertools.product(range(3), range(k)):
        E = np.zeros_like(F)
        E[i, j] = h
        fd = (ref.scaled_soft_margin(F + E, y, cost, beta)[i]
              - ref.scaled_soft_margin(F - E, y, cost, beta)[i]) / (2 * h)
        assert G[i, j] == pytest.approx(fd, abs=1e-8)
    # beta = 0 with the 0/1 cost is the multiclass hinge
    v0, G0 = vector_loss("scaled_soft_margin", F, y, beta=0.0)
    v1, G1 = vector_loss("multiclass_hinge", F, y)
    np.testing.assert_allclose(v0, v1, rtol=1e-15)
    np.testing.assert_array_equal(G0, G1)


def test_multivariate_regression_closed_form():
    rng = np.random.default_rng(4)
    F, Y = rng.normal(size=(20, 3)), rng.normal(size=(20, 3))
    A = rng.normal(size=(3, 3))
    M = A @ A.T
    values, G = vector_loss("multivariate_regression", F, Y, M=M)
    np.testing.assert_allclose(values, [0.5 * (f - t) @ M @ (f - t) for f, t in zip(F, Y)],
                               rtol=1e-12)
    np.testing.assert_allclose(G, (F - Y) @ M, rtol=1e-12)
    with pytest.raises(ValueError, match="symmetric"):
        vector_loss("multivariate_regression", F, Y, M=A)


def test_multivariate_regression_with_a_singular_M():
    """M = a a^T (PSD, rank 1): the loss is 0.5 (a^T r)^2, and with targets far along M's
    null space r^T (M r) cancels to rounding errors of either sign, R_emp < 0 near the
    optimum (BMRM and the proximal bundle method refused it as below the floor 0).
    Both oracles (NumPy's ScoreOracle, the kernel's VectorOracle) against 0.5 mean
    (R a)^2, and the certified runs against the optimum of the linear system
    (alpha I + (M kron X^T X) / m) vec(W) = vec(M Y^T X) / m."""
    from fastrisk.data import Dataset
    from fastrisk.oracle import VectorOracle

    rng = np.random.default_rng(0)
    m, d, k, alpha = 100, 5, 2, 1e-8
    X = rng.standard_normal((m, d))
    a = np.array([0.6, 0.7])
    M = np.outer(a, a)
    Y = X @ rng.standard_normal((k, d)).T + 1e3 * np.outer(rng.standard_normal(m), [0.7, -0.6])
    A = alpha * np.eye(k * d) + np.kron(M, X.T @ X) / m
    w_star = np.linalg.solve(A, (M @ Y.T @ X).ravel() / m)

    def reference(w):
        R = X @ w.reshape(k, d).T - Y
        return 0.5 * np.mean((R @ a) ** 2) + 0.5 * alpha * w @ w

    vector = fr.Problem.from_oracle(VectorOracle(Dataset(X), "multivariate_regression", Y, k,
                                                 M=M), alpha=alpha, n_features=d, n_classes=k)
    for prob in (make_problem(X, Y, MultivariateRegression(M), alpha=alpha), vector):
        for w in (w_star, w_star + 1e-6 * rng.standard_normal(k * d)):
            assert prob.risk(w) >= 0
            assert prob.objective(w) == pytest.approx(reference(w), rel=1e-6)
        for solver in ("bmrm", "prox_bundle"):
            res = fr.solve(prob, solver=solver, tol=1e-4, max_iter=500)
            assert res.status == "converged"
            assert res.objective - res.gap <= reference(w_star) <= res.objective


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_score_oracle_gradient(fit_intercept, sparse):
    """grad = X^T G (+ bias column) against finite differences of a smooth vector loss."""
    import scipy.sparse as sp

    rng = np.random.default_rng(6)
    X = rng.normal(size=(25, 5)).astype(np.float32)
    X[X < 0.3] = 0
    Y = rng.normal(size=(25, 2))
    loss = MultivariateRegression(np.array([[2.0, 0.5], [0.5, 1.0]]))
    oracle = ScoreOracle(sp.csr_matrix(X) if sparse else X, Y, loss,
                         fit_intercept=fit_intercept, intercept_scaling=2.0)
    assert oracle.n_weights == 2 * (5 + fit_intercept)
    w = rng.normal(size=oracle.n_weights)
    grad = oracle(w)[1]
    # quadratic in w: central differences are exact up to rounding (~1e-9 at h=1e-5)
    h = 1e-5
    fd = [(oracle(w + h * e)[0] - oracle(w - h * e)[0]) / (2 * h) for e in np.eye(len(w))]
    np.testing.assert_allclose(grad, fd, rtol=1e-7, atol=1e-9)


def test_make_problem_layout_and_errors():
    rng = np.random.default_rng(7)
    X, y = rng.normal(size=(12, 3)), rng.integers(0, 3, size=12)
    prob = make_problem(X, y, ScaledSoftMargin(3), alpha=0.1, fit_intercept=True)
    assert prob.n_weights == 3 * 4 and prob.n_samples == 12
    w = rng.normal(size=12)
    coef, intercept = prob.coef_intercept(w)
    np.testing.assert_array_equal(coef, w.reshape(3, 4)[:, :3])
    np.testing.assert_array_equal(intercept, w.reshape(3, 4)[:, 3])
    assert prob.objective(w) == pytest.approx(0.1 * 0.5 * w @ w + prob.oracle(w)[0], rel=1e-15)
    with pytest.raises(TypeError, match="risk"):
        make_problem(X, y, object())
    with pytest.raises(TypeError, match="n_samples"):
        fr.Problem.from_oracle(lambda w: (0.0, w))
    fo = FunctionOracle(lambda w: (float(w @ w), 2 * w), n_weights=4)
    p2 = fr.Problem.from_oracle(fo, alpha=1.0)
    assert p2.objective_gradient(np.ones(4))[0] == pytest.approx(4 + 2.0)
    with pytest.raises(ValueError, match="n_weights"):
        FunctionOracle(lambda w: (0.0, w), n_weights=0)
    with pytest.raises(ValueError, match="beta"):
        FBeta(-1)
    with pytest.raises(ValueError, match="measure"):
        RankingLoss([0, 0], measure="map")


def load_example(name):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sequence_labeling_example_oracle_matches_enumeration():
    """Loss-augmented Viterbi against all k^L labelings of short chains (k=3, L=4: 81)."""
    ex = load_example("sequence_labeling")
    rng = np.random.default_rng(8)
    X, Y = ex.make_chains(5, 4, rng.normal(size=(3, 4)), rng)
    oracle = ex.ChainHingeOracle(X, Y, n_states=3)
    w = rng.normal(size=oracle.n_weights)
    value, grad = oracle(w)
    per_seq = []
    for x, y in zip(X, Y):
        scores = [np.mean(np.array(s) != y) + w @ (oracle.phi(x, np.array(s)) - oracle.phi(x, y))
                  for s in itertools.product(range(3), repeat=4)]
        per_seq.append(max(scores))
    assert value == pytest.approx(np.mean(per_seq), rel=1e-12)
    # R_emp is convex in w (a max of affine functions): subgradient inequality
    for _ in range(20):
        w2 = w + rng.normal(size=w.shape)
        assert oracle(w2)[0] >= value + grad @ (w2 - w) - 1e-12


def test_roc_area_bmrm_auc_on_a9a(libsvm):
    """BMRM on the ROC-area loss reaches a test AUC at least that of the hinge-loss model.

    Both at alpha = 1e-3, tol = 1e-2; AUC by scikit-learn.
    """
    from sklearn.metrics import roc_auc_score

    X, y = libsvm("a9a")
    X_test, y_test = libsvm("a9a", "test")
    roc = fr.solve(make_problem(X, y, ROCArea(), alpha=1e-3), solver="bmrm", tol=1e-2)
    hinge = fr.solve(fr.Problem(X, y, loss="hinge", alpha=1e-3), solver="bmrm", tol=1e-2)
    assert roc.status == hinge.status == "converged"
    assert roc_auc_score(y_test, X_test @ roc.coef_) >= roc_auc_score(y_test, X_test @ hinge.coef_)


@pytest.mark.parametrize("solver,tol", [("bmrm", 1e-8), ("prox_bundle", 1e-4),
                                        ("lbfgs", 1e-8)])
def test_user_loss_solvers_reach_closed_form(solver, tol):
    """Multivariate regression through ScoreOracle: the optimum solves the linear system
    (alpha I + (M kron X^T X) / m) vec(W) = vec(M Y^T X) / m.  Each solver certifies
    J(w) - J* <= tol J(w), so ||w - w*||^2 <= 2 (J - J*) / alpha bounds the distance."""
    rng = np.random.default_rng(9)
    m, d, k, alpha = 80, 4, 2, 0.1
    X, Y = rng.normal(size=(m, d)), rng.normal(size=(m, k))
    M = np.array([[2.0, 0.5], [0.5, 1.0]])
    A = alpha * np.eye(k * d) + np.kron(M, X.T @ X) / m
    w_star = np.linalg.solve(A, (M @ Y.T @ X).ravel() / m)
    prob = make_problem(X, Y, MultivariateRegression(M), alpha=alpha)
    res = fr.solve(prob, solver=solver, tol=tol, max_iter=2000)
    assert res.status == "converged"
    gap = res.objective - prob.objective(w_star)
    assert -1e-12 <= gap <= tol * res.objective + 1e-12
    assert np.linalg.norm(res.w - w_star) <= np.sqrt(2 * (tol * res.objective + 1e-12) / alpha)
    np.testing.assert_array_equal(res.coef_, res.w.reshape(k, d))


def test_function_oracle_with_bmrm():
    """A plain function oracle: R(w) = mean_i |w - c_i|_1 (minimum at the coordinatewise
    median for alpha -> 0); BMRM's certificate bounds J(w) - J* against scipy's LP optimum."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(10)
    C = rng.normal(size=(7, 3))

    def oracle(w):
        return np.abs(w - C).sum(axis=1).mean(), np.sign(w - C).mean(axis=0)

    alpha = 1e-3
    res = fr.solve(fr.Problem.from_oracle(FunctionOracle(oracle, n_weights=3), alpha=alpha,
                                          penalty="l1"), solver="bmrm", tol=1e-9)
    # LP: min alpha 1^T (u + v) + mean_i 1^T t_i,  t_i >= +-(u - v - c_i)
    n, d = C.shape
    cost = np.r_[alpha * np.ones(2 * d), np.ones(n * d) / n]
    rows, rhs = [], []
    for i in range(n):
        for j in range(d):
            for s in (1, -1):
                r = np.zeros(2 * d + n * d)
                r[j], r[d + j], r[2 * d + i * d + j] = s, -s, -1
                rows.append(r)
                rhs.append(s * C[i, j])
    lp = linprog(cost, A_ub=np.array(rows), b_ub=rhs, bounds=(0, None), method="highs")
    assert res.status == "converged"
    assert lp.fun - 1e-9 <= res.objective <= lp.fun + 1e-9 * lp.fun + 1e-9


def test_sequence_labeling_example_runs():
    """The example's BMRM fit converges and the transitions help (sticky chains)."""
    ex = load_example("sequence_labeling")
    res, acc, acc_iid = ex.main(alpha=0.1, tol=1e-2, n_train=30)
    assert res.status == "converged"
    assert acc > acc_iid


def small_problem_data():
    rng = np.random.default_rng(11)
    return rng.normal(size=(12, 3)), np.arange(12) % 3


@pytest.mark.parametrize("bad,shown", [(-1, "-1"), (0.7, "0.7"), (3, "3")])
def test_scaled_soft_margin_refuses_labels_outside_the_classes(bad, shown):
    """Negative labels would wrap around (-1 -> class 2), 0.7 be truncated to class 0."""
    X, y = small_problem_data()
    y = y.astype(type(bad))
    y[4] = bad
    message = rf"y must hold integer class indices in \[0, 3\), got {shown}$"
    with pytest.raises(ValueError, match=message):
        make_problem(X, y, ScaledSoftMargin(3))
    with pytest.raises(ValueError, match=message):
        ScaledSoftMargin(3).risk(np.zeros((12, 3)), y)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_scaled_soft_margin_refuses_non_finite_labels(bad):
    """NaN and infinite labels are refused naming y when the problem is built."""
    X, y = small_problem_data()
    y = y.astype(float)
    y[0] = bad
    with pytest.raises(ValueError, match="y contains NaN or infinity"):
        make_problem(X, y, ScaledSoftMargin(3))


def test_scaled_soft_margin_takes_integral_float_labels():
    """Float labels with integral values give the objective of the integer labels."""
    X, y = small_problem_data()
    w = np.random.default_rng(12).normal(size=9)
    as_float = make_problem(X, y.astype(float), ScaledSoftMargin(3))
    assert as_float.oracle(w)[0] == make_problem(X, y, ScaledSoftMargin(3)).oracle(w)[0]


@pytest.mark.parametrize("loss,y", [
    (ScaledSoftMargin(3), np.arange(5) % 3),
    (ROCArea(), np.arange(5) % 2),
    (OrdinalRegression(), np.arange(5) % 3),
    (FBeta(), np.arange(5) % 2),
    (RankingLoss(np.arange(12) // 4), np.arange(5) % 2),
    (MultivariateRegression(np.eye(2)), np.zeros((5, 2))),
])
def test_score_oracle_checks_the_length_of_y(loss, y):
    """Every loss, a user-defined one too, gets y's length checked against X's rows."""
    X, _ = small_problem_data()
    with pytest.raises(ValueError, match="y has 5 entries but X has 12 rows"):
        make_problem(X, y, loss)


def test_score_oracle_checks_targets_of_every_loss_when_built():
    """Each loss's check_targets runs at make_problem, before any oracle call."""
    X, _ = small_problem_data()
    with pytest.raises(ValueError, match="y contains NaN"):
        make_problem(X, np.r_[np.nan, np.ones(5), np.zeros(6)], ROCArea())
    with pytest.raises(ValueError, match="y must hold at least two distinct levels"):
        make_problem(X, np.ones(12), OrdinalRegression())
    with pytest.raises(ValueError, match="y must hold exactly two classes"):
        make_problem(X, np.arange(12) % 3, FBeta())
    with pytest.raises(ValueError, match=r"y must be a target matrix of shape \(12, 2\)"):
        make_problem(X, np.ones((12, 3)), MultivariateRegression(np.eye(2)))

    class NoLength:
        def risk(self, f, y):
            return 0.0, np.zeros_like(f)

    with pytest.raises(TypeError, match="y must hold one target per row of X"):
        make_problem(X, None, NoLength())


def test_ranking_query_ids_of_any_sortable_type():
    """String ids (as in LETOR files) group like the numbers they stand for; documents of
    a query need not be contiguous."""
    rng = np.random.default_rng(13)
    ids = rng.integers(0, 4, size=20)
    rel = rng.integers(0, 3, size=20).astype(float)
    f = rng.normal(size=20)
    names = np.array(["qid:10", "qid:2", "qid:x", "qid:7"])[ids]
    as_numbers = RankingLoss(ids).risk(f, rel)
    for query in (names, names.astype(object)):
        value, g = RankingLoss(query).risk(f, rel)
        assert value == as_numbers[0]
        np.testing.assert_array_equal(g, as_numbers[1])


@pytest.mark.parametrize("query,error,message", [
    (np.array([1, "a"] * 6, dtype=object), TypeError, "query mixes labels of types"),
    (np.r_[np.nan, np.nan, np.zeros(10)], ValueError, "query contains NaN"),
    (np.array([1.0, np.nan] * 6, dtype=object), ValueError, "query contains NaN"),
    (np.zeros((12, 2)), ValueError, "query must be 1-dimensional"),
])
def test_ranking_refuses_bad_query_ids(query, error, message):
    """NaN (floats, or in an object array), mixed-type and 2-D query ids are refused
    naming query."""
    with pytest.raises(error, match=message):
        RankingLoss(query)


def test_ranking_checks_query_and_relevance_when_built():
    """A query of the wrong length, negative relevance, NDCG gains that overflow and
    relevance without a positive gain anywhere (every query's Z = 0: nothing to rank) are
    refused at make_problem."""
    X, _ = small_problem_data()
    with pytest.raises(ValueError, match="query has 9 entries but X has 12 rows"):
        make_problem(X, np.arange(12) % 2, RankingLoss(np.arange(9) // 3))
    query = np.arange(12) // 4
    with pytest.raises(ValueError, match="y holds relevance levels up to 1100: their NDCG gains"):
        make_problem(X, np.r_[1100.0, np.zeros(11)], RankingLoss(query))
    with pytest.raises(ValueError, match="y must hold relevance levels >= 0, got -1"):
        make_problem(X, np.r_[-1.0, np.ones(11)], RankingLoss(query))
    with pytest.raises(ValueError, match="y contains NaN"):
        make_problem(X, np.r_[np.nan, np.ones(11)], RankingLoss(query))
    # precision@k looks only at y > 0: no gain to overflow
    make_problem(X, np.r_[1100.0, np.zeros(11)], RankingLoss(query, measure="precision"))
    for y, measure in [(np.zeros(12), "ndcg"), (np.zeros(12), "precision"),
                       (np.r_[1e-320, np.zeros(11)], "ndcg")]:  # 2**1e-320 - 1 == 0
        with pytest.raises(ValueError, match="^y: no query has a relevant document"):
            make_problem(X, y, RankingLoss(query, measure=measure))


@pytest.mark.parametrize("build,message", [
    pytest.param(lambda: FBeta(True), "beta must be a finite number > 0 .*, got True",
                 id="fbeta-bool"),
    pytest.param(lambda: FBeta(np.inf), "beta must be a finite number > 0", id="fbeta-inf"),
    pytest.param(lambda: FBeta(1e160), "beta must be a finite number > 0 and <= 1e\\+100",
                 id="fbeta-huge"),
    pytest.param(lambda: ScaledSoftMargin(3, beta=True),
                 "beta must be a finite number >= 0, got True", id="ssm-beta-bool"),
    pytest.param(lambda: ScaledSoftMargin(3, beta=-1.0), "beta must be a finite number >= 0",
                 id="ssm-beta-negative"),
    pytest.param(lambda: ScaledSoftMargin(True), "n_classes must be an integer >= 2, got True",
                 id="ssm-n_classes-bool"),
    pytest.param(lambda: ScaledSoftMargin(3, cost=np.ones((3, 3))),
                 "cost must be a non-negative", id="ssm-cost-diagonal"),
    pytest.param(lambda: ScaledSoftMargin(3, cost=np.where(np.eye(3), 0.0, np.nan)),
                 "cost contains NaN", id="ssm-cost-nan"),
    pytest.param(lambda: ScaledSoftMargin(3, cost=np.zeros((2, 2))),
                 r"cost must be a \(3, 3\) matrix", id="ssm-cost-shape"),
    pytest.param(lambda: MultivariateRegression([[1.0, 2.0], [0.0, 1.0]]),
                 "M must be a symmetric", id="mvr-asymmetric"),
    pytest.param(lambda: MultivariateRegression([[np.inf]]), "M contains NaN or infinity",
                 id="mvr-inf"),
    pytest.param(lambda: MultivariateRegression([[1.0, 0.0], [0.0, -1.0]]),
                 "M must be positive semidefinite", id="mvr-indefinite"),
    pytest.param(lambda: RankingLoss(np.zeros(4), k=True),
                 "k must be None or an integer >= 1", id="ranking-k-bool"),
    pytest.param(lambda: FunctionOracle(lambda w: (0.0, w), 3, risk_floor=True),
                 "risk_floor must be a finite number, got True", id="function-risk_floor"),
])
def test_loss_constructors_refuse_bad_numbers(build, message):
    """Bool, non-finite or out-of-range beta, and cost / M that are not finite square
    matrices of the right size (M also positive semidefinite), are refused by name."""
    with pytest.raises(ValueError, match=message):
        build()


def test_auto_solves_oracle_problems_as_bmrm():
    """solver="auto" on problems without a loss object (make_problem, FunctionOracle)
    picks BMRM, which takes any risk oracle, and reaches BMRM's objective."""
    X, y = small_problem_data()
    problems = [
        lambda: make_problem(X, y, ScaledSoftMargin(3), alpha=0.1),
        lambda: make_problem(X, np.arange(12) % 2, ROCArea(), alpha=0.1),
        lambda: fr.Problem.from_oracle(
            FunctionOracle(lambda w: (float(np.abs(w - 1).sum()), np.sign(w - 1)), n_weights=3),
            alpha=0.1),
    ]
    for make in problems:
        assert fr.solvers.choose_solver(make()) == "bmrm"
        auto = fr.solve(make(), tol=1e-8)
        explicit = fr.solve(make(), solver="bmrm", tol=1e-8)
        assert auto.status == explicit.status == "converged"
        assert auto.objective == pytest.approx(explicit.objective, rel=1e-12)


@pytest.mark.parametrize("loss", [mv.ROCArea(), mv.FBeta(), mv.OrdinalRegression()])
def test_risk_checks_the_scores_against_y(loss):
    # f has one finite score per entry of y: a matrix of 12 scores, a scalar, NaN are
    # refused naming f (len(f) had been taken as the number of items)
    y = np.r_[np.ones(6), np.zeros(6)]
    with pytest.raises(ValueError, match=r"^f must have shape \(12,\)"):
        loss.risk(np.zeros((3, 4)), y)
    with pytest.raises(ValueError, match=r"^f must have shape \(12,\)"):
        loss.risk(1.0, y)
    with pytest.raises(ValueError, match="^f contains NaN or infinity"):
        loss.risk(np.full(12, np.nan), y)


def test_a_function_oracle_with_a_nonfinite_risk_stops_the_solver():
    oracle = mv.FunctionOracle(lambda w: (np.nan, np.zeros(3)), 3)
    with pytest.raises(FloatingPointError, match="non-finite risk"):
        fr.solve(fr.Problem.from_oracle(oracle), solver="bmrm")
    oracle = mv.FunctionOracle(lambda w: (1.0, np.full(3, np.inf)), 3)
    with pytest.raises(FloatingPointError, match="non-finite subgradient"):
        oracle(np.zeros(3))


@pytest.mark.parametrize("solver", ["bmrm", "lbfgs", "prox_bundle"])
def test_user_oracles_with_bad_outputs_are_refused(solver):
    """A user-defined risk (any object with n_samples, n_weights and __call__) whose value
    or subgradient is not finite, or whose subgradient has the wrong shape, stops the run
    with an error (a NaN risk compares false with every bound, so a stopping test would
    read it as met)."""
    class Risk:
        n_samples, n_weights = 1, 5

        def __init__(self, out):
            self.out = out

        def __call__(self, w):
            return self.out(w)

    cases = [(lambda w: (np.nan, 2 * (w - 1)), FloatingPointError, "non-finite risk"),
             (lambda w: (float(np.sum((w - 1) ** 2)), np.full(5, np.inf)), FloatingPointError,
              "non-finite subgradient"),
             (lambda w: (0.0, np.zeros(4)), ValueError, r"subgradient of shape \(4,\)"),
             (lambda w: 1.0, TypeError, "must return \\(risk, subgradient\\)")]
    for out, error, message in cases:
        with pytest.raises(error, match=message):
            fr.solve(fr.Problem.from_oracle(Risk(out)), solver)
    # a good one: the minimizer of alpha/2 ||w||^2 + ||w - 1||^2, w = 2 / (2 + alpha)
    good = fr.Problem.from_oracle(Risk(lambda w: (float(np.sum((w - 1) ** 2)), 2 * (w - 1))),
                                  alpha=0.5)
    assert good.oracle.n_weights == 5  # the wrapper shows the oracle's attributes
    res = fr.solve(good, solver, tol=1e-10)
    # J* = 1 and J is (2 + alpha)-strongly convex: ||w - w*||^2 <= 2 tol J / 2.5, about
    # (9e-6)^2, i.e. 1.1e-5 relative to w* = 0.8 (rtol 1e-4 leaves room for rounding of J)
    np.testing.assert_allclose(res.w, np.full(5, 2 / 2.5), rtol=1e-4)


def test_user_oracle_sizes_layout_and_floor_are_checked():
    """from_oracle names a size or layout that cannot describe w, and BMRM and the proximal
    bundle method refuse a risk below the oracle's declared risk_floor (their constant cut
    b_0) instead of reporting a negative gap."""
    class Risk:
        n_samples, n_weights = 1, 3

        def __call__(self, w):
            return float(w @ w), 2 * w

    for attrs, kwargs, message in [({"n_weights": -3}, {}, "^oracle.n_weights must be"),
                                   ({"n_samples": 0}, {}, "^oracle.n_samples must be"),
                                   ({}, {"n_classes": 0}, "^n_classes must be"),
                                   ({}, {"n_features": -1}, "^n_features must be"),
                                   ({}, {"bias": np.nan}, "^bias must be")]:
        oracle = Risk()
        vars(oracle).update(attrs)
        with pytest.raises(ValueError, match=message):
            fr.Problem.from_oracle(oracle, **kwargs)
    for floor, solver in [(1.0, "bmrm"), (1.0, "prox_bundle")]:
        oracle = Risk()
        oracle.risk_floor = floor
        with pytest.raises(ValueError, match=f"^{solver}: the oracle returned R_emp = 0.0, "
                                             "below its risk_floor 1.0"):
            fr.solve(fr.Problem.from_oracle(oracle), solver)
    oracle.risk_floor = np.nan
    with pytest.raises(ValueError, match="^oracle.risk_floor must be a finite number"):
        fr.solve(fr.Problem.from_oracle(oracle), "bmrm")


def test_lbfgs_names_the_overflow_of_a_user_defined_risk():
    """A multivariate risk has no scalar loss (Problem.loss is None): the overflow error of
    L-BFGS names a user-defined risk."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 5))
    problem = mv.make_problem(X * 1e200, np.sign(X[:, 0]), mv.ROCArea())
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(FloatingPointError, match="^lbfgs: a non-finite iterate with a "
                                                     "user-defined risk"):
            fr.solve(problem, "lbfgs")
