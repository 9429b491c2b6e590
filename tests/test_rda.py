"""Regularized dual averaging and its baselines (Xiao 2010, docs/math.md §6).

Compared against: the step-by-step NumPy implementations in
tests/reference/rda.py (dense, written from the paper's algorithm boxes),
LIBLINEAR through scikit-learn and scipy's L-BFGS-B for optima, and the
paper's own bounds.
"""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from reference import rda as ref
from scipy.optimize import minimize
from sklearn.linear_model import LogisticRegression

import fastrisk as fr
from fastrisk.losses import LOSSES
from fastrisk.solvers.rda import (
    ADAPTIVE_ETA,
    _integral_q,
    solve_rda,
    solve_sgd_l1,
    solve_truncated_gradient,
)


def _logistic(f, y):
    return LOSSES["logistic"].reference(f, y, 0.0)


def _hinge(f, y):
    return LOSSES["hinge"].reference(f, y, 0.0)


def _toy(layout, m=40, d=30, seed=1):
    """Sparse-ish data: many coordinates idle for many steps, so the lazy
    catch-up (threshold crossings inside idle windows) is exercised."""
    rng = np.random.default_rng(seed)
    X = sp.random(m, d, density=0.15, random_state=seed, format="csr") * 3.0
    X.sum_duplicates()
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    c = rng.uniform(0.5, 1.5, m)
    if layout == "csr64-f32":
        X = sp.csr_matrix((X.data.astype(np.float32), X.indices.astype(np.int64),
                           X.indptr.astype(np.int64)), shape=X.shape)
    elif layout == "dense-f64-ro":
        X = X.toarray()
        X.flags.writeable = False
    return X, y, c


def _dense(X, bias):
    A = X.toarray() if sp.issparse(X) else np.array(X)
    A = A.astype(np.float64)
    return np.c_[A, np.full(A.shape[0], bias)] if bias else A


def _problem(*args, **kw):
    """Problems on one thread: the tiny test problems would otherwise spend their
    time waking OpenMP threads in each objective evaluation."""
    return fr.Problem(*args, n_threads=1, **kw)


def _orders(m, epochs, seed):
    """The solver's row orders: one permutation per epoch (batches never straddle epochs)."""
    rng = np.random.default_rng(seed)
    return [rng.permutation(m) for _ in range(epochs)]


# (name, penalty, l1_ratio, alpha, lambda, sigma, solver options)
RDA_VARIANTS = [
    ("l1", "l1", 1.0, 0.05, 0.05, 0.0, {"gamma": 2.0}),
    ("enhanced-l1", "l1", 1.0, 0.05, 0.05, 0.0, {"gamma": 2.0, "rho": 0.3}),
    ("mixed", "elasticnet", 0.5, 0.1, 0.05, 0.05, {}),
    ("mixed-gamma", "elasticnet", 0.5, 0.1, 0.05, 0.05, {"gamma": 1.0, "rho": 0.2}),
    ("l2", "l2", 0.15, 0.1, 0.0, 0.1, {}),
]


@pytest.mark.parametrize("layout", ["csr32-f64", "csr64-f32", "dense-f64-ro"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("variant", RDA_VARIANTS, ids=[v[0] for v in RDA_VARIANTS])
def test_rda_matches_reference(variant, k, fit_intercept, layout):
    """Lazy kernel == dense Algorithm 1/2 after 3 epochs: w_{T+1}, w_bar_T and the
    summed loss at every query point (which checks every iterate w_t).
    1e-10: the two differ only by float64 rounding of O(100) additions."""
    _, penalty, l1_ratio, alpha, lam, sigma, opts = variant
    X, y, c = _toy(layout)
    prob = _problem(X, y, loss="logistic", penalty=penalty, alpha=alpha, l1_ratio=l1_ratio,
                      sample_weight=c, fit_intercept=fit_intercept)
    res = solve_rda(prob, batch_size=k, max_iter=3, random_state=3, **opts)
    r = ref.rda(_dense(X, 1.0 if fit_intercept else 0.0), prob.y, c, _orders(40, 3, 3), k,
                _logistic, lam, sigma, opts.get("gamma", 0.0), opts.get("rho", 0.0))
    np.testing.assert_allclose(res.extra["w_last"], r["w"], rtol=0, atol=1e-10)
    np.testing.assert_allclose(res.extra["w_bar"], r["w_bar"], rtol=0, atol=1e-10)
    assert res.extra["loss_sum"] == pytest.approx(r["loss"], rel=1e-10)
    # the zeros of the iterate are exact zeros, the same as the reference's
    np.testing.assert_array_equal(res.extra["w_last"] == 0.0, r["w"] == 0.0)
    if lam > 0:
        assert (r["w"] == 0.0).sum() >= 5   # the test data do produce sparsity
    assert res.w is not res.extra["w_bar"] and np.array_equal(res.w, res.extra["w_last"])


# (name, loss, penalty, l1_ratio, alpha, lambda, sigma)
ADAPTIVE_VARIANTS = [
    ("l1", "logistic", "l1", 1.0, 0.05, 0.05, 0.0),
    ("mixed", "logistic", "elasticnet", 0.5, 0.1, 0.05, 0.05),
    ("l2", "logistic", "l2", 0.15, 0.1, 0.0, 0.1),
    ("l1-squared", "squared", "l1", 1.0, 0.05, 0.05, 0.0),  # beta: the curvature offset
]


@pytest.mark.parametrize("layout", ["csr32-f64", "csr64-f32", "dense-f64-ro"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("variant", ADAPTIVE_VARIANTS, ids=[v[0] for v in ADAPTIVE_VARIANTS])
def test_adaptive_rda_matches_reference(variant, k, fit_intercept, layout):
    """Adaptive RDA's kernel (per-coordinate sums S_j, G_j) == the dense step-by-step
    reference after 3 epochs, w_{T+1} and the summed loss at the query points;
    tolerance as above."""
    _, loss, penalty, l1_ratio, alpha, lam, sigma = variant
    X, y, c = _toy(layout)
    prob = _problem(X, y, loss=loss, penalty=penalty, alpha=alpha, l1_ratio=l1_ratio,
                    sample_weight=c, fit_intercept=fit_intercept)
    res = solve_rda(prob, adaptive=True, eta=0.7, batch_size=k, max_iter=3, random_state=3)
    assert (res.extra["beta"] > 0) == (loss == "squared") and "w_bar" not in res.extra
    r = ref.adaptive_rda(_dense(X, 1.0 if fit_intercept else 0.0), prob.y, c,
                         _orders(40, 3, 3), k, lambda f, y: LOSSES[loss].reference(f, y, 0.0),
                         lam, sigma, 0.7, res.extra["beta"])
    np.testing.assert_allclose(res.w, r["w"], rtol=0, atol=1e-10)
    assert res.extra["loss_sum"] == pytest.approx(r["loss"], rel=1e-10)
    np.testing.assert_array_equal(res.w == 0.0, r["w"] == 0.0)
    if lam > 0:
        assert (r["w"] == 0.0).sum() >= 5


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("k", [1, 3])
def test_accelerated_rda_matches_reference(k, fit_intercept):
    """Lazy accelerated RDA (interpolated w_t kept as a weighted lazy sum) ==
    dense Algorithm 3; enhanced threshold (rho) included.  Tolerance as above."""
    X, y, c = _toy("csr32-f64")
    prob = _problem(X, y, loss="logistic", penalty="l1", alpha=0.15, sample_weight=c,
                      fit_intercept=fit_intercept)
    res = solve_rda(prob, accelerated=True, gamma=1.0, rho=0.1, L=2.0, batch_size=k,
                    max_iter=3, random_state=3)
    r = ref.accelerated_rda(_dense(X, 1.0 if fit_intercept else 0.0), prob.y, c,
                            _orders(40, 3, 3), k, _logistic, 0.15, 0.0, 1.0, 0.1, 2.0)
    np.testing.assert_allclose(res.w, r["w"], rtol=0, atol=1e-10)
    assert res.extra["loss_sum"] == pytest.approx(r["loss"], rel=1e-10)
    assert (r["w"] == 0.0).sum() >= 3
    np.testing.assert_array_equal(res.w == 0.0, r["w"] == 0.0)


@pytest.mark.parametrize("k", [1, 3])
def test_pnorm_rda_matches_reference(k):
    """p-norm RDA (section 7.2) == dense reference; tolerance as above."""
    X, y, c = _toy("csr64-f32")
    prob = _problem(X, y, loss="logistic", penalty="l1", alpha=0.05, sample_weight=c,
                      fit_intercept=True)
    res = solve_rda(prob, p_norm=1.5, gamma=1.0, rho=0.1, batch_size=k, max_iter=3,
                    random_state=3)
    r = ref.pnorm_rda(_dense(X, 1.0), prob.y, c, _orders(40, 3, 3), k, _logistic, 0.05, 1.0,
                      0.1, 1.5)
    np.testing.assert_allclose(res.extra["w_last"], r["w"], rtol=0, atol=1e-10)
    np.testing.assert_allclose(res.extra["w_bar"], r["w_bar"], rtol=0, atol=1e-10)
    assert res.extra["loss_sum"] == pytest.approx(r["loss"], rel=1e-10)
    np.testing.assert_array_equal(res.extra["w_last"] == 0.0, r["w"] == 0.0)


@pytest.mark.parametrize("rho", [0.0, 0.05])
@pytest.mark.parametrize("p", [1.5, 1.25, 1.7, 2.0])
@pytest.mark.parametrize("k", [1, 4])
def test_pnorm_kernels_match_dense_sums(p, k, rho):
    """Both p-norm kernels == the dense O(d)-per-step recursion
    (tests/reference/rda.py pnorm_rda_sums, the same sums S): the power-sum
    kernel (O(nnz(x_i)) per step) for p = 1.5, 1.25, 2 (q = 3, 5, 2), the
    active-set kernel for p = 1.7; threshold lambda t (rho = 0) and
    lambda t + gamma rho sqrt(t).  Through two streamed calls (the sums are
    rebuilt from S at a call boundary), on data where coordinates leave and
    re-enter the support (n_left counts it).  1e-12 relative (norm-wise): the
    norm and the lazy sums of the iterates are formed differently (power sums
    and prefix sums in double-double, or an active set in another order), so
    the two differ by float64 rounding amplified over ~300 steps; w_bar = acc
    / t, S checked through the next iterate w_{T+1}."""
    assert _integral_q(p) == (p != 1.7)
    rng = np.random.default_rng(5)
    m, d = 160, 120
    X = sp.random(m, d, density=0.05, random_state=7, format="csr") * 2.0
    X.sum_duplicates()
    y = np.where(rng.random(m) < 0.4, 1.0, -1.0)
    c = rng.uniform(0.5, 1.5, m)
    prob = _problem(X, y, loss="logistic", penalty="l1", alpha=0.02, sample_weight=c,
                    fit_intercept=True)
    opts = dict(p_norm=p, gamma=0.5, rho=rho, batch_size=k, random_state=3, check_every=0)
    first = solve_rda(prob, max_iter=1, **opts)
    res = solve_rda(prob, max_iter=1, start=first, **opts)
    # the solver's row orders: each call draws its permutation from random_state=3
    orders = _orders(m, 1, 3) * 2
    r = ref.pnorm_rda_sums(_dense(X, 1.0), prob.y, c, orders, k, _logistic, 0.02, 0.5, rho, p)
    T = res.extra["n_steps"]
    assert r["n_left"] >= 10
    np.testing.assert_allclose(res.extra["w_bar"] * T, r["w_sum"],
                               rtol=0, atol=1e-12 * np.linalg.norm(r["w_sum"]))
    np.testing.assert_allclose(res.extra["state"]["coords"][:, 0], r["S"],
                               rtol=0, atol=1e-12 * np.linalg.norm(r["S"]))
    assert first.extra["loss_sum"] + res.extra["loss_sum"] == pytest.approx(r["loss"], rel=1e-12)


def test_pnorm_with_p2_is_l1_rda():
    """With p = 2 the link map is the identity: the dense p-norm kernel and the
    lazy l1 kernel solve the same recursion (independent code paths)."""
    X, y, _ = _toy("csr32-f64")
    prob = _problem(X, y, loss="hinge", penalty="l1", alpha=0.05)
    a = solve_rda(prob, p_norm=2.0, gamma=2.0, rho=0.2, max_iter=2, random_state=0)
    b = solve_rda(prob, gamma=2.0, rho=0.2, max_iter=2, random_state=0)
    np.testing.assert_allclose(a.extra["w_last"], b.extra["w_last"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.extra["w_bar"], b.extra["w_bar"], rtol=0, atol=1e-12)


@pytest.mark.parametrize("layout", ["csr32-f64", "dense-f64-ro"])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("K", [1, 3])
def test_truncated_gradient_matches_reference(K, k, layout):
    """Lazy TG (truncations of idle coordinates in closed form) == dense (29).
    Tolerance 1e-10: rounding of n * threshold vs n subtractions."""
    X, y, c = _toy(layout)
    prob = _problem(X, y, loss="hinge", penalty="l1", alpha=0.05, sample_weight=c,
                      fit_intercept=True)
    res = solve_truncated_gradient(prob, eta=0.3, K=K, batch_size=k, max_iter=3, random_state=3)
    r = ref.truncated_gradient(_dense(X, 1.0), prob.y, c, _orders(40, 3, 3), k, _hinge, 0.05,
                               0.3, K)
    np.testing.assert_allclose(res.w, r["w"], rtol=0, atol=1e-10)
    assert res.extra["loss_sum"] == pytest.approx(r["loss"], rel=1e-10)
    assert (r["w"] == 0.0).sum() >= 5
    np.testing.assert_array_equal(res.w == 0.0, r["w"] == 0.0)


@pytest.mark.parametrize("layout", ["csr32-f64", "csr64-f32"])
@pytest.mark.parametrize("k", [1, 3])
def test_sgd_l1_matches_reference(k, layout):
    """Lazy SGD-l1 (idle subgradient steps, including the period-2 oscillation
    around zero, in closed form) == dense SGD with lambda sgn(w) on every
    coordinate.  lambda is large so that most coordinates oscillate."""
    X, y, c = _toy(layout)
    prob = _problem(X, y, loss="logistic", penalty="l1", alpha=0.2, sample_weight=c,
                      fit_intercept=True)
    res = solve_sgd_l1(prob, eta=0.3, batch_size=k, max_iter=3, random_state=3)
    r = ref.sgd_l1(_dense(X, 1.0), prob.y, c, _orders(40, 3, 3), k, _logistic, 0.2, 0.3)
    np.testing.assert_allclose(res.w, r["w"], rtol=0, atol=1e-10)
    assert res.extra["loss_sum"] == pytest.approx(r["loss"], rel=1e-10)
    assert (np.abs(r["w"]) < 0.2 * 0.3).sum() >= 5   # coordinates in the oscillating regime


@pytest.mark.parametrize("alpha", [1e-20, 1e-300])
def test_sgd_l1_with_a_penalty_step_far_below_the_weights(alpha):
    """A penalty step c = eta alpha so small that |w_j| / c exceeds every integer: the
    idle coordinates keep their sign through their idle steps, in closed form, with no
    integer step count formed (it would overflow, and a catch-up that counted the steps
    one by one would not end).  Against the dense reference."""
    X, y, c = _toy("csr32-f64")
    prob = _problem(X, y, loss="logistic", penalty="l1", alpha=alpha, sample_weight=c,
                    fit_intercept=True)
    res = solve_sgd_l1(prob, eta=0.3, batch_size=1, max_iter=3, random_state=3)
    r = ref.sgd_l1(_dense(X, 1.0), prob.y, c, _orders(40, 3, 3), 1, _logistic, alpha, 0.3)
    np.testing.assert_allclose(res.w, r["w"], rtol=1e-12, atol=1e-12)


# (id, solver, penalty, options, bitwise): plain RDA iterates are functions of
# the gradient sums S alone, so chunking cannot change a bit of them; the
# accelerated iterate and the lazy SGD/TG catch-ups add closed-form pieces that
# the chunk boundaries split, and p-norm RDA (p = 1.5) carries its norm as power
# sums updated step by step (rebuilt from S at a call boundary), so those agree
# to rounding only.
STREAMING = [
    ("rda-l1", solve_rda, "l1", {"gamma": 2.0, "rho": 0.1, "batch_size": 3}, True),
    ("rda-mixed", solve_rda, "elasticnet", {"gamma": 1.0, "batch_size": 1}, True),
    ("rda-pnorm", solve_rda, "l1", {"p_norm": 1.5, "gamma": 1.0, "batch_size": 1}, False),
    ("rda-accelerated", solve_rda, "l1",
     {"accelerated": True, "gamma": 1.0, "L": 2.0, "batch_size": 2},
     False),
    ("rda-adaptive", solve_rda, "l1", {"adaptive": True, "eta": 0.5, "batch_size": 3}, True),
    ("sgd_l1", solve_sgd_l1, "l1", {"eta": 0.2, "batch_size": 2}, False),
    ("tg", solve_truncated_gradient, "l1", {"eta": 0.2, "K": 3, "batch_size": 1}, False),
]


@pytest.mark.parametrize("case", STREAMING, ids=[s[0] for s in STREAMING])
def test_streaming_equals_one_pass(case):
    """Three chunks fed one after another with ``state`` == one pass over their
    concatenation (chunk sizes are multiples of the batch size and of K so the
    steps line up).  Bitwise where the iterate is a function of S alone;
    otherwise, and for the averages w_bar, to 1e-12 relative (float64
    rounding of sums split at the chunk boundaries)."""
    _, solve, penalty, opts, bitwise = case
    X, y, _ = _toy("csr32-f64", m=48)
    one = solve(_problem(X, y, loss="logistic", penalty=penalty, alpha=0.05),
                max_iter=1, shuffle=False, **opts)
    state = None
    for lo, hi in [(0, 12), (12, 30), (30, 48)]:
        part = _problem(X[lo:hi], y[lo:hi], loss="logistic", penalty=penalty, alpha=0.05)
        res = solve(part, max_iter=1, shuffle=False, start=state, **opts)
        state = res.extra["state"]
    assert state["t"] == one.extra["state"]["t"]
    check = np.testing.assert_array_equal if bitwise else (
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15))
    check(res.w, one.w)
    check(state["coords"][:, 0], one.extra["state"]["coords"][:, 0])   # S, or w (SGD/TG)
    if "w_bar" in res.extra:
        np.testing.assert_allclose(res.extra["w_bar"], one.extra["w_bar"], rtol=1e-12,
                                   atol=1e-15)
    assert np.count_nonzero(res.w) < res.w.size or penalty != "l1" or not bitwise


@pytest.mark.parametrize("solve", [solve_sgd_l1, solve_truncated_gradient])
def test_streaming_defaults_come_from_the_first_chunk(solve):
    """The default eta = sqrt(2/T) / gamma is read from the first chunk (T its number of
    steps) and kept in the state: chunks fed with the defaults give the pass over their
    concatenation with the first chunk's eta, to rounding (the lazy catch-ups split at
    the chunk boundaries, as in test_streaming_equals_one_pass)."""
    X, y, _ = _toy("csr32-f64", m=48)
    state, etas = None, []
    for lo, hi in [(0, 12), (12, 30), (30, 48)]:
        part = _problem(X[lo:hi], y[lo:hi], loss="logistic", penalty="l1", alpha=0.05)
        res = solve(part, max_iter=1, shuffle=False, start=state)
        state = res.extra["state"]
        etas.append(state["eta"])
    first_eta = etas[0]
    assert etas == [first_eta] * 3
    one = solve(_problem(X, y, loss="logistic", penalty="l1", alpha=0.05), max_iter=1,
                shuffle=False)
    assert one.extra["state"]["eta"] != first_eta  # T = 48 steps, not 12
    one = solve(_problem(X, y, loss="logistic", penalty="l1", alpha=0.05), max_iter=1,
                shuffle=False, eta=first_eta)
    np.testing.assert_allclose(res.w, one.w, rtol=1e-12, atol=1e-15)


def test_state_must_match_settings():
    X, y, _ = _toy("csr32-f64")
    prob = _problem(X, y, loss="logistic", penalty="l1", alpha=0.05)
    st = solve_rda(prob, gamma=1.0, max_iter=1).extra["state"]
    with pytest.raises(ValueError, match="different settings"):
        solve_rda(prob, gamma=2.0, max_iter=1, start=st)
    with pytest.raises(ValueError, match="start must be"):
        solve_sgd_l1(prob, eta=0.1, max_iter=1, start=st)
    with pytest.raises(ValueError, match="start must be"):
        solve_rda(prob, max_iter=1, start=solve_sgd_l1(prob, eta=0.1, max_iter=1).extra["state"])


def test_same_seed_same_bits():
    X, y, _ = _toy("csr32-f64")
    prob = _problem(X, y, loss="logistic", penalty="l1", alpha=0.05)
    a = solve_rda(prob, gamma=1.0, max_iter=2, random_state=7)
    b = solve_rda(prob, gamma=1.0, max_iter=2, random_state=7)
    c = solve_rda(prob, gamma=1.0, max_iter=2, random_state=8)
    assert np.array_equal(a.w, b.w) and np.array_equal(a.extra["w_bar"], b.extra["w_bar"])
    assert not np.array_equal(a.extra["w_bar"], c.extra["w_bar"])


def test_budget_callback_and_history():
    """time_limit and callback stop the run with a usable iterate; check_every=0 checks
    only at the end, so a run stopped by its time limit reports J(w_{T+1}) exactly."""
    X, y, _ = _toy("csr32-f64")
    prob = _problem(X, y, loss="logistic", penalty="l1", alpha=0.05)
    res = solve_rda(prob, gamma=1.0, max_iter=1000, time_limit=1e-9, check_every=0)
    assert res.status == "time_limit" and res.n_iter == 1
    np.testing.assert_array_equal(res.w, res.extra["w_last"])
    assert res.objective == pytest.approx(prob.objective(res.w), rel=1e-12)
    assert res.history.exact == [True]
    seen = []
    res = solve_sgd_l1(prob, eta=0.1, max_iter=10, callback=lambda r: seen.append(r.n_iter)
                       or len(seen) < 3)
    assert res.status == "callback" and seen == [1, 2, 3]
    assert res.objective == pytest.approx(prob.objective(res.w), rel=1e-12)
    res = solve_rda(prob, gamma=1.0, max_iter=4, check_every=2)
    assert np.isnan(res.history.objective[0]) and not np.isnan(res.history.objective[1])
    assert res.history.exact == [False, True, False, True]


def test_input_validation():
    X, y, _ = _toy("csr32-f64")
    l1 = _problem(X, y, loss="logistic", penalty="l1", alpha=0.05)
    with pytest.raises(ValueError, match="penalty"):
        solve_rda(_problem(X, y, loss="logistic", penalty="lp", p=1.5, alpha=0.1))
    with pytest.raises(ValueError, match="penalty"):
        solve_sgd_l1(_problem(X, y, loss="logistic", penalty="l2", alpha=0.1))
    with pytest.raises(ValueError, match="gamma"):
        solve_rda(l1, gamma=-1.0)
    with pytest.raises(ValueError, match="gamma must be > 0"):
        solve_rda(l1, gamma=0.0)
    with pytest.raises(ValueError, match="rho"):
        solve_rda(l1, rho=float("nan"))
    with pytest.raises(ValueError, match="batch_size"):
        solve_rda(l1, batch_size=0)
    with pytest.raises(ValueError, match="p_norm"):
        solve_rda(l1, p_norm=2.5)
    for L in (-1.0, float("nan")):  # also without acceleration, where L is unused
        with pytest.raises(ValueError, match="L must be a finite number >= 0"):
            solve_rda(l1, L=L)
    with pytest.raises(ValueError, match="smooth loss"):
        solve_rda(_problem(X, y, loss="hinge", penalty="l1", alpha=0.05), accelerated=True)
    with pytest.raises(ValueError, match="give L"):
        solve_rda(_problem(X, np.abs(y), loss="poisson", penalty="l1", alpha=0.05),
                  accelerated=True)
    for options in ({"accelerated": True}, {"p_norm": 1.5}, {"rho": 0.1}, {"average": True},
                    {"gamma": 1.0}):
        with pytest.raises(ValueError, match="adaptive RDA"):
            solve_rda(l1, adaptive=True, **options)
    with pytest.raises(ValueError, match="eta is the step size of adaptive RDA"):
        solve_rda(l1, eta=1.0)
    for eta in (0.0, -1.0, float("nan"), "1"):
        with pytest.raises(ValueError, match="eta"):
            solve_rda(l1, adaptive=True, eta=eta)
    with pytest.raises(ValueError, match="adaptive"):
        solve_rda(l1, adaptive="yes")
    state = solve_rda(l1, adaptive=True, max_iter=1).extra["state"]
    with pytest.raises(ValueError, match="different settings"):
        solve_rda(l1, max_iter=1, start=state)
    assert solve_rda(l1, adaptive=True, max_iter=1, start=state).extra["n_steps"] == 80
    with pytest.raises(ValueError, match="K"):
        solve_truncated_gradient(l1, K=0)
    with pytest.raises(ValueError, match="eta"):
        solve_truncated_gradient(l1, eta=0.0)
    with pytest.raises(ValueError, match="max_iter"):
        solve_rda(l1, max_iter=0)
    with pytest.raises(TypeError, match="problem"):
        solve_rda(X)
    assert fr.solve(l1, solver="rda", gamma=1.0, max_iter=1).solver == "rda"


# ---------------------------------------------------------------------------
# convergence against independent optima, within the paper's bounds

@pytest.fixture(scope="module")
def small_a9a():
    from fastrisk.datasets import load_a9a

    X, y, _, _ = load_a9a()
    return X[:600], np.where(y[:600] > 0, 1.0, -1.0)


def _liblinear_l1_logistic(X, y, alpha):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = LogisticRegression(solver="liblinear", l1_ratio=1.0, C=1.0 / (alpha * X.shape[0]),
                                 tol=1e-10, max_iter=100_000, fit_intercept=False).fit(X, y)
    return est.coef_.ravel()


def test_l1_rda_within_corollary2_bound(small_a9a):
    """l1-RDA with gamma = G/D: E J(w_bar_T) - J* <= (gamma D^2 + G^2/gamma)/sqrt(T)
    (Corollary 2 + Theorem 3), G = max ||x_i|| (|l'| <= 1), D^2 = h(w*) = ||w*||^2/2,
    J* from LIBLINEAR at tol 1e-10.  The bound is an expectation (one run
    here); it is checked to be well below J(0) - J*, so w = 0 would fail."""
    X, y = small_a9a
    alpha = 0.01
    prob = _problem(X, y, loss="logistic", penalty="l1", alpha=alpha)
    w_star = _liblinear_l1_logistic(X, y, alpha)
    J_star = prob.objective(w_star)
    G = math.sqrt(prob.data.row_sqnorms().max())
    D = math.sqrt(0.5 * w_star @ w_star)
    res = solve_rda(prob, gamma=G / D, max_iter=20, random_state=0, average=True)
    T = res.extra["n_steps"]
    gap = res.objective - J_star
    bound = 2 * G * D / math.sqrt(T)
    assert bound < prob.objective(np.zeros(X.shape[1])) - J_star   # the bound says something
    assert -1e-9 <= gap <= bound
    assert math.isnan(res.gap)                       # no certificate for l1
    assert np.isnan(res.history.bound).all()


@pytest.mark.parametrize("rho", [0.0, 0.2])
def test_default_gamma_is_scale_consistent(small_a9a, rho):
    """Scaling the data X -> c X with lambda -> c lambda scales the optimum (and,
    for a well-chosen gamma, every iterate) by 1/c: S -> c S and the threshold
    -> c lambda t, so w = -shrink(S) / (gamma sqrt t) needs gamma -> c^2 gamma
    (and rho, in the units of w, -> rho / c for the threshold gamma rho sqrt t).
    The default (G^2 / 2000) does this.  c = 2^10, so the scaling is exact in
    float64 and the iterates must agree to the last bit up to 1e-12 relative
    (with c = 1e3 the roundings of the 1200 steps already move w by 5e-5
    through threshold crossings).  Also pins the documented value."""
    X, y = small_a9a
    c, alpha = 2.0 ** 10, 0.01
    base = _problem(X, y, loss="logistic", penalty="l1", alpha=alpha)
    scaled = _problem(X * c, y, loss="logistic", penalty="l1", alpha=alpha * c)
    a = solve_rda(base, rho=rho, max_iter=2, random_state=0, check_every=0)
    b = solve_rda(scaled, rho=rho / c, max_iter=2, random_state=0, check_every=0)
    assert a.extra["gamma"] == pytest.approx(base.data.row_sqnorms().max() / 2000, rel=1e-12)
    assert b.extra["gamma"] == pytest.approx(c * c * a.extra["gamma"], rel=1e-12)
    np.testing.assert_allclose(b.w * c, a.w, rtol=0, atol=1e-12 * np.abs(a.w).max())
    assert np.array_equal(b.w != 0, a.w != 0) and np.count_nonzero(a.w) > 0


def test_adaptive_rda_default_eta_is_scale_consistent(small_a9a):
    """X -> c X with lambda -> c lambda: S and sqrt(G) scale by c, so w = -shrink(S) /
    (sqrt(G) / eta) scales by 1/c when eta does; the default (ADAPTIVE_ETA / rms ||x_i||)
    does.  c = 2^10 (exact in float64), as above; also pins the documented value."""
    X, y = small_a9a
    c, alpha = 2.0 ** 10, 0.01
    base = _problem(X, y, loss="logistic", penalty="l1", alpha=alpha)
    scaled = _problem(X * c, y, loss="logistic", penalty="l1", alpha=alpha * c)
    a = solve_rda(base, adaptive=True, max_iter=2, random_state=0, check_every=0)
    b = solve_rda(scaled, adaptive=True, max_iter=2, random_state=0, check_every=0)
    assert a.extra["eta"] == pytest.approx(
        ADAPTIVE_ETA / math.sqrt(base.data.row_sqnorms().mean()), rel=1e-12)
    assert b.extra["eta"] == pytest.approx(a.extra["eta"] / c, rel=1e-12)
    np.testing.assert_allclose(b.w * c, a.w, rtol=0, atol=1e-12 * np.abs(a.w).max())
    assert np.array_equal(b.w != 0, a.w != 0) and np.count_nonzero(a.w) > 0


def test_adaptive_rda_approaches_the_optimum(small_a9a):
    """The last iterate of adaptive RDA (default eta) against LIBLINEAR's optimum: more
    epochs, closer (one pass 4e-2 relative above J*, 100 passes below 1e-3)."""
    X, y = small_a9a
    alpha = 0.01
    prob = _problem(X, y, loss="logistic", penalty="l1", alpha=alpha)
    J_star = prob.objective(_liblinear_l1_logistic(X, y, alpha))
    gaps = [solve_rda(prob, adaptive=True, max_iter=epochs, random_state=0,
                      check_every=0).objective / J_star - 1 for epochs in (1, 10, 100)]
    assert gaps[0] > gaps[1] > gaps[2] > -1e-12
    assert gaps[0] > 1e-2 and gaps[2] < 1e-3


def test_mixed_rda_within_bound_and_certified(small_a9a):
    """Mixed l1/l2^2 RDA (beta_t = 0): E J(w_bar_T) - J* <= G^2 (6 + ln T)/(2 sigma T)
    (eq. (20) + Theorem 3); J* from scipy L-BFGS-B on the split w = u - v
    (smooth, bounded), gtol 1e-12.  The certificate dist(0, dJ)^2/(2 sigma) of
    the returned iterate must bound its true gap."""
    X, y = small_a9a
    alpha, l1_ratio = 0.02, 0.5
    prob = _problem(X, y, loss="logistic", penalty="elasticnet", alpha=alpha, l1_ratio=l1_ratio)
    lam, sigma = alpha * l1_ratio, alpha * (1 - l1_ratio)
    d = X.shape[1]

    def fg(z):
        w = z[:d] - z[d:]
        f = X @ w
        risk = np.logaddexp(0, -y * f).mean()
        gr = X.T @ (-y / (1 + np.exp(y * f))) / len(y) + sigma * w
        return (risk + lam * z.sum() + 0.5 * sigma * w @ w, np.r_[gr + lam, -gr + lam])

    opt = minimize(fg, np.zeros(2 * d), jac=True, method="L-BFGS-B", bounds=[(0, None)] * 2 * d,
                   options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000})
    J_star = prob.objective(opt.x[:d] - opt.x[d:])
    G = math.sqrt(prob.data.row_sqnorms().max())
    res = solve_rda(prob, max_iter=10, random_state=0, average=True, tol=0.0)
    T = res.extra["n_steps"]
    gap = res.objective - J_star
    assert -1e-9 <= gap <= G**2 * (6 + math.log(T)) / (2 * sigma * T)
    assert gap <= res.gap                             # the certificate is an upper bound
    last = solve_rda(prob, max_iter=10, random_state=0, tol=0.0)
    assert prob.objective(last.w) - J_star <= last.gap


def test_certificate_stops_l2_rda(small_a9a):
    """l2^2-RDA: with tol the run stops on the Lemma 5 bound, which must be at
    least the true gap against LIBLINEAR's objective at 1e-9."""
    from reference.liblinear import liblinear_solution

    X, y = small_a9a
    prob = _problem(X, y, loss="logistic", penalty="l2", alpha=0.05)
    res = solve_rda(prob, max_iter=200, tol=1e-3, random_state=0, average=True)
    J_star = liblinear_solution(X, y, "logistic", 0.05)[1]
    assert res.status == "converged"
    assert res.gap <= 1e-3 * res.objective
    assert -1e-9 <= res.objective - J_star <= res.gap


def test_accelerated_rda_within_corollary7_bound(small_a9a):
    """Accelerated RDA: E J(w_t) - J* <= 4 L D^2/t^2 + 4 Q D/sqrt(t) (Corollary 7,
    gamma = Q/D), L = max||x||^2/4, D^2 = ||w*||^2/2, mini-batches of k = 20:
    E||g_batch - grad phi||^2 <= E||g||^2 / k <= G^2/k, so Q = G/sqrt(k).
    J* from LIBLINEAR; the bound is checked to be below J(0) - J*."""
    X, y = small_a9a
    alpha, k = 0.01, 20
    prob = _problem(X, y, loss="logistic", penalty="l1", alpha=alpha)
    w_star = _liblinear_l1_logistic(X, y, alpha)
    J_star = prob.objective(w_star)
    G = math.sqrt(prob.data.row_sqnorms().max())
    D = math.sqrt(0.5 * w_star @ w_star)
    Q = G / math.sqrt(k)
    res = solve_rda(prob, accelerated=True, gamma=Q / D, batch_size=k, max_iter=60,
                    random_state=0)
    t = res.extra["n_steps"]
    bound = 4 * res.extra["L"] * D**2 / t**2 + 4 * Q * D / math.sqrt(t)
    assert res.extra["L"] == pytest.approx(0.25 * G**2)
    assert bound < prob.objective(np.zeros(X.shape[1])) - J_star
    assert -1e-9 <= res.objective - J_star <= bound


# ---------------------------------------------------------------------------
# Xiao 2010, section 6: MNIST digits 6 vs 7, sparsity against SGD, TG and the batch optimum

@pytest.fixture(scope="module")
def mnist67(libsvm):
    """Digits 6 (-1) and 7 (+1) of the MNIST test file, raw 0..255 pixels as in the
    paper (the file is scaled to [0, 1]), split in half at random."""
    X, y = libsvm("mnist")
    mask = (y == 6) | (y == 7)
    X = (X[mask] * 255.0).tocsr()
    y = np.where(y[mask] == 7, 1.0, -1.0)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    n = X.shape[0] // 2
    return X[perm[:n]], y[perm[:n]], X[perm[n:]], y[perm[n:]]


@pytest.mark.parametrize("lam", [0.01, 0.1, 1.0, 10.0])
def test_mnist_rda_sparsity(mnist67, lam):
    """Enhanced l1-RDA (gamma rho = 25 as in the paper; gamma = 1000 instead of
    the paper's 5000, picked among 500..5000 on this split as the paper picks
    by cross-validation: our training set is 12x smaller), T ~ 12000 steps as
    in the paper (12 epochs of 993 rows).  SGD-l1 and TG (K = 10, the paper's
    enhanced setting, and K = 1 = FOBOS) use the paper's step sqrt(2/T)/gamma.
    Nonzeros counted as in the paper: exact for RDA and FOBOS, |w| > 1e-5 for
    SGD and TG K=10.  Bias: a feature of value 255, regularized (LIBLINEAR's
    convention, so the batch optimum solves the same J).
    Asserts: nnz(RDA w_T) <= nnz of SGD and TG; within 1.5x (either way) of
    LIBLINEAR's optimum; test error at most 1.5 points (15 of 993 test digits)
    above the optimum's (the largest excess is at lambda = 10, where both models use
    about ten pixels)."""
    Xtr, ytr, Xte, yte = mnist67
    prob = _problem(Xtr, ytr, loss="logistic", penalty="l1", alpha=lam, fit_intercept=True,
                      intercept_scaling=255.0)
    run = {"gamma": 1000.0, "max_iter": 12, "random_state": 0, "check_every": 0}
    rda = solve_rda(prob, rho=0.025, **run).w
    sgd = solve_sgd_l1(prob, **run).w
    tg10 = solve_truncated_gradient(prob, K=10, **run).w
    fobos = solve_truncated_gradient(prob, K=1, **run).w
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = LogisticRegression(solver="liblinear", l1_ratio=1.0, C=1.0 / (lam * len(ytr)),
                                 tol=1e-8, max_iter=10_000, fit_intercept=True,
                                 intercept_scaling=255.0).fit(Xtr, ytr)
    batch = np.r_[est.coef_.ravel(), est.intercept_[0] / 255.0]

    def nnz(w, thr=0.0):
        return int((np.abs(w[:-1]) > thr).sum())

    def error(w):
        coef, b = prob.coef_intercept(w)
        return float(np.mean(np.sign(Xte @ coef + b) != yte))

    n_rda, n_batch = nnz(rda), nnz(batch)
    assert n_rda <= min(nnz(sgd, 1e-5), nnz(tg10, 1e-5), nnz(fobos))
    assert n_batch / 1.5 <= n_rda <= 1.5 * n_batch
    assert error(rda) <= error(batch) + 0.015


def test_threshold_beyond_the_doubles_gives_zero():
    """At alpha 1e308 the threshold lambda t overflows: every coordinate shrinks to 0, the
    optimum (J = log 2 for the logistic loss), instead of an error on an infinite step."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 5))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the averaged iterate's overflow
        r = fr.solve(fr.Problem(X, y, loss="logistic", penalty="l1", alpha=1e308), "rda",
                     max_iter=2, random_state=0)
    assert not r.w.any() and r.objective == pytest.approx(np.log(2.0), rel=1e-15)


@pytest.mark.parametrize("solver,options", [
    ("rda", {}), ("rda", {"adaptive": True}), ("sgd_l1", {}), ("truncated_gradient", {})])
def test_default_steps_name_the_row_whose_norm_overflows(solver, options):
    """Rows near the largest double overflow the norms that the default gamma and eta of
    RDA and of the truncation solvers are read from: the message names the first row
    whose squared norm overflows (Dataset.row_sqnorms)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5)) * 1e154
    norms = (X / 1e154) ** 2
    assert norms[0].sum() < 1.7976 < norms[1].sum()  # 1.7976e308: the largest double
    problem = fr.Problem(X, np.sign(X[:, 0]), loss="squared_hinge", penalty="l1")
    with pytest.raises(ValueError, match="^X: the squared norm of row 1 overflows"):
        fr.solve(problem, solver, max_iter=3, **options)


def test_a_non_finite_objective_is_an_error():
    """One weight of 1e300 (valid: finite, with a finite sum) makes the weighted loss of
    RDA's iterate overflow although its weights stay finite: a FloatingPointError naming
    the solver, not a Result with J = inf."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 5))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    problem = fr.Problem(X, y, loss="logistic", sample_weight=np.r_[1e300, np.ones(59)])
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(FloatingPointError, match="^rda: J\\(w\\) is not finite"):
            fr.solve(problem, "rda", max_iter=5, random_state=0)
