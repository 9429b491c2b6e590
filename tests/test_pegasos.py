"""Pegasos, adaptive, proximal, optimistic and mini-batch Pegasos (docs/math.md §5; Do, Le & Foo 2009, Takac et al. 2013).

References: the plain NumPy step-by-step implementations of
tests/reference/pegasos.py (same rows, same order: iterates agree to 1e-10
relative, the rounding of a few hundred float64 steps), the optimum of the
dual QP solved by scipy's L-BFGS-B (independent of every fastrisk solver) for
the convergence rate, and numpy's SVD for the spectral quantity beta_b.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from reference.pegasos import pegasos_steps
from reference.stochastic import dense_with_bias, dloss, small_data
from scipy.optimize import minimize

import fastrisk as fr
from fastrisk import _pegasos
from fastrisk.solvers.pegasos import (
    RULES,
    PegasosState,
    ball_radius,
    gradient_bound,
    solve_adaptive,
    solve_optimistic,
    solve_pegasos,
    solve_proximal,
)

SOLVERS = {"pegasos": solve_pegasos, "adaptive": solve_adaptive, "proximal": solve_proximal}


@pytest.mark.parametrize("weight", [0.01, 1.0, 100.0])
def test_ball_holds_the_optimum_with_any_sample_weights(weight):
    """||w*|| <= sqrt(R_emp(0) / alpha) (module docstring), w* from the SVM's dual QP
    (hinge: R_emp(0) = mean c_i, so weights of 100 put w* outside Pegasos' 1/sqrt(alpha))
    and from scipy's L-BFGS-B (logistic)."""
    from reference import batch

    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 5))
    y = np.where(X @ np.arange(1.0, 6.0) + 0.5 * rng.standard_normal(200) > 0, 1.0, -1.0)
    alpha, m = 0.01, X.shape[0]
    c = np.full(m, weight)
    # weights c: the SVM of alpha / c (J scales by c)
    _, w_hinge = batch.hinge_l2_optimum(X, y, alpha / weight, return_w=True)

    def logistic(w):
        z = y * (X @ w)
        return (0.5 * alpha * w @ w + weight * np.logaddexp(0.0, -z).mean(),
                alpha * w - weight * X.T @ (y * np.exp(-np.logaddexp(0.0, z))) / m)

    w_logistic = minimize(logistic, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B",
                          options=dict(ftol=1e-15, gtol=1e-12)).x
    for loss, w_star in [("hinge", w_hinge), ("logistic", w_logistic)]:
        radius = ball_radius(fr.Problem(X, y, loss=loss, alpha=alpha, sample_weight=c))
        assert np.linalg.norm(w_star) <= radius, (loss, np.linalg.norm(w_star), radius)


@pytest.mark.parametrize("solver", ["pegasos", "adaptive", "proximal"])
@pytest.mark.parametrize("loss", ["hinge", "logistic"])
@pytest.mark.parametrize("batch_size", [1, 3])
def test_kernel_matches_numpy_step_by_step(solver, loss, batch_size):
    """One kernel call per step: every iterate equals the NumPy reference's to 1e-10."""
    X, y = small_data(1)
    prob = fr.Problem(X, y, loss=loss, alpha=0.05, fit_intercept=True)
    radius = ball_radius(prob)
    G = gradient_bound(prob, radius)
    order = np.random.default_rng(0).permutation(np.tile(np.arange(40), 3)).astype(np.intp)
    _, _, iterates, _ = pegasos_steps(dense_with_bias(prob), prob.y, order, lam=prob.alpha,
                                      rule=solver, radius=radius, G=G, R=radius,
                                      batch_size=batch_size, dloss=dloss(loss))
    state = PegasosState(solver, prob.n_weights, prob.alpha, radius, G, radius, 0.0, 0.1,
                         batch_size)
    d = prob.data
    for step, ref in enumerate(iterates):
        rows = order[step * batch_size:(step + 1) * batch_size]
        status, done = _pegasos.pegasos_epoch(
            d.data, d.indices, d.indptr, d.dense, d.bias, prob.y, np.empty(0), rows,
            batch_size, prob.loss.spec.kernel_id, 0.0, prob.alpha, RULES[solver], G, radius, 0.0, 0.1, state.v, state.u, state.scalars, state.counters)
        assert status == _pegasos.STATUS_OK and done == len(rows)
        np.testing.assert_allclose(state.weights(), ref, rtol=0,
                                   atol=1e-10 * max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("solver", ["pegasos", "proximal"])
@pytest.mark.parametrize("layout", ["csr64", "csr32_i64", "dense32", "dense64"])
def test_solver_matches_numpy_tail_average(solver, layout):
    """Through the solver: 3 epochs with the solver's permutations, tail average to 1e-10."""
    dtype = np.float32 if "32" in layout.split("_")[0] else np.float64
    X, y = small_data(2, dtype=dtype, sparse=layout.startswith("csr"))
    if layout == "csr32_i64":
        X = sp.csr_matrix((X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)),
                          shape=X.shape)
    for a in ((X.data, X.indices, X.indptr) if sp.issparse(X) else (X,)) + (y,):
        a.flags.writeable = False  # read-only inputs (memmaps) must work
    w0 = np.random.default_rng(3).random(40) + 0.5
    prob = fr.Problem(X, y, loss="hinge", alpha=0.02, sample_weight=w0)
    res = SOLVERS[solver](prob, max_iter=3, random_state=7, batch_size=2, tol=0)
    rng = np.random.default_rng(7)
    order = np.concatenate([rng.permutation(40) for _ in range(3)])
    radius, G = res.extra["radius"], res.extra["G"]
    # batches never straddle epochs: 40 rows = 20 batches of 2
    _, avg, _, _ = pegasos_steps(dense_with_bias(prob), prob.y, order, lam=prob.alpha,
                                 rule=solver, radius=radius, G=G, R=radius, batch_size=2,
                                 dloss=dloss("hinge"), c=w0, avg_start=30)
    assert res.extra["steps"] == 60 and res.extra["averaged"]
    np.testing.assert_allclose(res.w, avg, rtol=0, atol=1e-10 * np.abs(avg).max())
    assert res.objective == pytest.approx(prob.objective(res.w), rel=1e-12)


def test_optimistic_matches_numpy_with_doublings():
    """Alg. 3: R doubling and phase restarts follow the NumPy reference step by step."""
    X, y = small_data(4, m=60)
    prob = fr.Problem(X, y, loss="hinge", alpha=1e-3)
    eps, delta = 0.05, 0.1
    res = solve_optimistic(prob, max_iter=2, random_state=1, epsilon=eps, delta=delta,
                           average="last", tol=0)
    radius, G = res.extra["radius"], res.extra["G"]
    rng = np.random.default_rng(1)
    order = np.concatenate([rng.permutation(60) for _ in range(2)])
    w, _, _, R = pegasos_steps(
        dense_with_bias(prob), prob.y, order, lam=prob.alpha, rule="proximal", radius=radius,
        G=G, R=min(1.0, radius), dloss=dloss("hinge"), eps=eps, delta=delta,
        phase_length=lambda r: _pegasos.optimistic_phase_length(G, prob.alpha, delta, eps, r))
    assert res.extra["doublings"] >= 2
    assert res.extra["R"] == pytest.approx(R, rel=1e-15)
    np.testing.assert_allclose(res.w, w, rtol=0, atol=1e-10 * np.abs(w).max())


@pytest.mark.parametrize("R", [0.5, 3.0, 40.0])
def test_optimistic_phase_length_is_smallest(R):
    """T of Alg. 3 is the smallest integer meeting the bound (checked at T and T - 1)."""
    G, lam, delta, eps = 2.0, 1e-3, 0.1, 0.01

    def ok(T):
        return min(G * G * (1 + np.log(T)) / (delta * lam * T), 4 * R * G / (delta * np.sqrt(T))) <= eps

    T = _pegasos.optimistic_phase_length(G, lam, delta, eps, R)
    assert T == int(T) and ok(T) and (T == 1 or not ok(T - 1))


def test_optimistic_phase_length_huge():
    """Tiny lambda and eps give T near 2^62: the search ends (doubles lose integers past 2^53)."""
    T = _pegasos.optimistic_phase_length(10.0, 1e-8, 0.1, 1e-12, 1e4)
    assert 1e18 < T <= 2.0**62


@pytest.mark.parametrize("solver", ["pegasos", "adaptive", "proximal", "optimistic"])
def test_streaming_chunks_equal_one_pass(solver):
    """Chunks with start= give the same bits as one pass over the concatenation."""
    X, y = small_data(5, m=60)
    kw = dict(max_iter=1, shuffle=False, batch_size=2, average=20, tol=0)
    if solver != "pegasos":
        kw.update(G=3.0)  # one bound for the whole stream (the first chunk cannot know it)
    if solver == "optimistic":
        kw.update(epsilon=0.05)
    solve = getattr(fr.solvers.pegasos, f"solve_{solver}")
    whole = solve(fr.Problem(X, y, alpha=1e-2), **kw)
    state = None
    for a, b in [(0, 24), (24, 50), (50, 60)]:
        part = solve(fr.Problem(X[a:b], y[a:b], alpha=1e-2), start=state, **kw)
        state = part.extra["state"]
    assert part.extra["steps"] == whole.extra["steps"]
    np.testing.assert_array_equal(state.output(), whole.extra["state"].output())


def hinge_optimum(X, y, lam):
    """J* from the dual box QP (L-BFGS-B): max mean(a) - ||X^T (a y)||^2 / (2 lam m^2)."""
    m = X.shape[0]
    Z = X * y[:, None]

    def neg_dual(a):
        v = Z.T @ a
        return -(a.mean() - v @ v / (2 * lam * m * m)), -(np.full(m, 1 / m) - Z @ v / (lam * m * m))

    sol = minimize(neg_dual, np.full(m, 0.5), jac=True, method="L-BFGS-B",
                   bounds=[(0, 1)] * m, options=dict(ftol=1e-15, gtol=1e-12, maxiter=10000))
    w = Z.T @ sol.x / (lam * m)
    primal = lam / 2 * w @ w + np.maximum(0, 1 - Z @ w).mean()
    assert primal - (-sol.fun) < 1e-7  # the duality gap certifies J*
    return primal


@pytest.fixture(scope="module")
def svm_problem():
    rng = np.random.default_rng(6)
    m, d = 200, 10
    X = rng.standard_normal((m, d)) / np.sqrt(d)
    y = np.sign(X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(m))
    lam = 0.01
    return X, y, lam, hinge_optimum(X, y, lam)


@pytest.mark.parametrize("solver", ["pegasos", "proximal", "adaptive"])
def test_convergence_within_rate(solver, svm_problem):
    """Tail-averaged iterate within the seed-000 rate G^2 (1 + log T) / (delta lam T), delta = 0.1."""
    X, y, lam, J_star = svm_problem
    prob = fr.Problem(X, y, loss="hinge", alpha=lam)
    res = SOLVERS[solver](prob, max_iter=40, random_state=0, tol=0)
    T = res.extra["steps"]
    G = np.sqrt(lam) + np.sqrt((X * X).sum(1)).max()
    rate = G**2 * (1 + np.log(T)) / (0.1 * lam * T)
    gap = res.objective - J_star
    assert -1e-9 <= gap <= rate, (gap, rate)
    assert gap < 0.01 * J_star  # and, in practice, far inside it
    # the recorded certificate is the Lemma 5 bound, an upper bound on J(w) - J*
    assert res.history.bound[-1] >= gap


def test_minibatch_beta_b_against_numpy():
    """beta_b = 1 + (b - 1)(m sigma^2 - 1)/(m - 1), sigma^2 from numpy's spectral norm."""
    X, y = small_data(8, m=50)
    prob = fr.Problem(X, y, alpha=0.1, fit_intercept=True, intercept_scaling=2.0)
    res = solve_pegasos(prob, max_iter=1, batch_size=5, random_state=0, tol=0)
    Xa = dense_with_bias(prob)
    sigma2 = np.linalg.norm(Xa, 2) ** 2 / (50 * (Xa * Xa).sum(1).max())
    assert res.extra["sigma2"] == pytest.approx(sigma2, rel=1e-8)
    assert res.extra["beta_b"] == pytest.approx(1 + 4 * (50 * sigma2 - 1) / 49, rel=1e-8)
    assert 1 <= res.extra["beta_b"] <= 5


def test_same_seed_same_bits_and_history():
    X, y = small_data(9)
    a = solve_proximal(fr.Problem(X, y, alpha=0.01), max_iter=4, random_state=3, check_every=2)
    b = solve_proximal(fr.Problem(X, y, alpha=0.01), max_iter=4, random_state=3, check_every=2)
    np.testing.assert_array_equal(a.w, b.w)
    assert a.history.iteration == [1, 2, 3, 4]
    assert a.history.exact == [False, True, False, True]   # certificate every 2 epochs
    assert np.isnan(a.history.objective[0]) and a.history.objective == b.history.objective[:1] \
        + b.history.objective[1:]


def test_lemma5_bound_stops_logistic():
    """A smooth loss: the Lemma 5 bound goes to 0 and tol stops the run early."""
    X, y = small_data(10, m=60)
    prob = fr.Problem(X, y, loss="logistic", alpha=0.1)
    res = solve_pegasos(prob, max_iter=500, random_state=0, tol=1e-3)
    assert res.status == "converged" and res.n_iter < 500
    assert res.gap <= 1e-3 * res.objective


def test_input_validation():
    X, y = small_data(11)
    prob = fr.Problem(X, y, alpha=0.01)
    with pytest.raises(ValueError, match="penalty"):
        solve_pegasos(fr.Problem(X, y, penalty="l1", alpha=0.01))
    with pytest.raises(ValueError, match="batch_size"):
        solve_pegasos(prob, batch_size=0)
    with pytest.raises(ValueError, match="average"):
        solve_pegasos(prob, average="mean")
    with pytest.raises(ValueError, match="Lipschitz"):
        solve_proximal(fr.Problem(X, y, loss="squared_hinge", alpha=0.01))
    with pytest.raises(ValueError, match="state"):
        solve_proximal(prob, start=solve_pegasos(prob, max_iter=1).extra["state"])
    with pytest.raises(ValueError, match="epsilon"):
        solve_optimistic(prob, epsilon=-1.0)
    with pytest.raises(TypeError, match="problem"):
        solve_pegasos((X, y))
    # tol sets optimistic's default epsilon: checked first, by name
    for tol in ("a", None, -1.0):
        with pytest.raises(ValueError, match="^tol must be"):
            solve_optimistic(prob, tol=tol)
    # a max_iter beyond any run (its planned tail start exceeds int64) runs to its limit
    res = solve_pegasos(prob, max_iter=10**19, time_limit=0.05, tol=0.0, random_state=0)
    assert res.status == "time_limit" and np.isfinite(res.w).all()
    res = solve_pegasos(prob, max_iter=2, average=10**19, random_state=0)  # the same start
    assert not res.extra["averaged"] and np.isfinite(res.w).all()


def test_optimistic_small_alpha_does_not_depend_on_the_row_order(libsvm):
    """a9a, hinge, alpha = 1e-6, 30 epochs, default tail average, 5 row orders: the median
    objective within 5% of LIBLINEAR's (tol 1e-9, so J_lib ~ J*), the worst within 10%.
    Phases keep tau_{1:t} across R doublings, so R stops far below the radius 1/sqrt(alpha)
    of S (a cascade of doublings up to it would leave the run Pegasos-like)."""
    from reference.liblinear import liblinear_objective

    X, y = libsvm("a9a")
    prob = fr.Problem(X, y, loss="hinge", alpha=1e-6)
    J_lib = liblinear_objective("a9a", "hinge", 1e-6)
    runs = [solve_optimistic(prob, max_iter=30, random_state=seed, tol=0) for seed in range(5)]
    ratios = np.array([r.objective / J_lib for r in runs])
    assert np.median(ratios) <= 1.05 and ratios.max() <= 1.10, ratios
    assert all(1 <= r.extra["doublings"] and r.extra["R"] < r.extra["radius"] / 10 for r in runs)


def test_optimistic_default_epsilon_that_underflows_is_named():
    """With sample weights at the smallest subnormal, tol * R_emp(0) underflows to 0: the
    message says where the default epsilon comes from (the caller passed none)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5))
    problem = fr.Problem(X, np.sign(X[:, 0] + 0.1), loss="hinge",
                         sample_weight=np.full(40, 5e-324))
    with pytest.raises(ValueError, match=r"^the default epsilon, tol \* R_emp\(0\)"):
        fr.solve(problem, "optimistic", max_iter=5)


@pytest.mark.parametrize("solver", ["pegasos", "adaptive", "proximal", "optimistic"])
def test_a_risk_zero_at_zero_gives_w_zero(solver):
    """The zero-margin (perceptron) loss is 0 at w = 0, so w* = 0, J* = 0 and the ball S is
    {0}: every rule returns w = 0 (the proximal rules' weights divide by R and must not
    see R = 0)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5))
    problem = fr.Problem(X, np.sign(X[:, 0]), loss="zero_margin", alpha=1e-2)
    res = fr.solve(problem, solver, max_iter=3, random_state=0)
    assert res.status == "converged" and not res.w.any() and res.objective == 0.0


@pytest.mark.parametrize("solver, penalty", [
    ("pegasos", {}), ("adaptive", {}), ("optimistic", {}), ("proximal", {}),
    ("pgs", dict(penalty="lp", p=1.5)), ("rda", dict(penalty="l1")),
    ("truncated_gradient", dict(penalty="l1")), ("sgd_l1", dict(penalty="l1"))])
def test_a_batch_beyond_the_rows_is_one_step_over_all_of_them(solver, penalty):
    """A step takes at most the m rows of an epoch, so batch_size = 2**62 (the largest the
    options take) is batch_size = m, bit for bit; the kernels size their per-step buffers
    by the rows a step can take (a buffer of batch_size entries would overflow its byte
    count and be written past)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5))
    problem = fr.Problem(X, np.where(rng.standard_normal(40) > 0, 1, -1), alpha=1e-2,
                         **penalty)
    huge = fr.solve(problem, solver, batch_size=2**62, max_iter=3, random_state=0)
    whole = fr.solve(problem, solver, batch_size=40, max_iter=3, random_state=0)
    assert np.array_equal(huge.w, whole.w) and huge.n_iter == whole.n_iter == 3
