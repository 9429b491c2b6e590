"""Multiclass SDCA (fastrisk/solvers/msdca.py) against independent optima.

* softmax, l2: scikit-learn's multinomial LogisticRegression (lbfgs) on the same
  objective, C = 1/(alpha m), no intercept; elastic net: its saga solver.  J agrees to
  1e-6 relative (both runs are driven to ~1e-10; 1e-6 is the issue's criterion).
* multiclass hinge: LIBLINEAR's Crammer-Singer solver via
  ``LinearSVC(multi_class="crammer_singer")``, whose objective C sum_i loss + 0.5 ||W||^2
  is m C J; J agrees to 1e-5 relative (LIBLINEAR stops on its own dual criterion).
  Sample weights scale the rows' C; an intercept is a penalized column of ones.
* softmax with sample weights or an intercept column: scipy's L-BFGS-B on the same J
  (tests/reference/batch.py).
* every certified gap is at least the true gap J(W) - J* (J* from the references,
  minus their own 1e-9 slack).
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastrisk as fr
from fastrisk.problem import Problem
from fastrisk.solvers import msdca, solve
from helpers import liblinear_cs, multiclass_data as data, sklearn_softmax
from reference import batch


@pytest.mark.parametrize("layout,dtype", [("dense", np.float64), ("csr", np.float32)])
@pytest.mark.parametrize("alpha", [1e-2, 1e-3])
def test_softmax_matches_sklearn(alpha, layout, dtype):
    X, y = data(layout=layout, dtype=dtype)
    prob = Problem(X, y, loss="softmax", alpha=alpha)
    ref = prob.objective(sklearn_softmax(X.astype(np.float64), y, alpha).ravel())
    r = solve(prob, "msdca", tol=1e-10, max_iter=20000, random_state=0)
    assert r.status == "converged"
    assert r.objective == pytest.approx(ref, rel=1e-6)
    assert r.gap >= r.objective - ref - 1e-9 * ref
    assert r.coef_.shape == (4, X.shape[1])


def test_softmax_elasticnet_matches_saga():
    X, y = data(m=120, d=8, k=3)
    alpha, l1_ratio = 1e-2, 0.5
    prob = Problem(X, y, loss="softmax", penalty="elasticnet", l1_ratio=l1_ratio, alpha=alpha)
    ref = prob.objective(sklearn_softmax(X, y, alpha, "elasticnet", l1_ratio).ravel())
    r = solve(prob, "msdca", tol=1e-10, max_iter=20000, random_state=0)
    assert r.status == "converged"
    assert r.objective == pytest.approx(ref, rel=1e-6)
    assert r.gap >= r.objective - ref - 1e-9 * ref
    assert (r.coef_ == 0).any()  # the l1 term's exact zeros (soft-thresholded V)


# alpha 1e-4: lambda n / R^2 = 0.015 (unit rows), where the hinge steps are over-relaxed
# (omega = 2 / (1 + sqrt(0.015)) ~ 1.78, msdca.py's relaxation); at 1e-1 and 1e-2, the
# hinge's least over-relaxation HINGE_MIN_OMEGA
@pytest.mark.parametrize("alpha", [1e-1, 1e-2, 1e-4])
def test_crammer_singer_matches_liblinear(alpha):
    X, y = data(m=150, d=10, k=3, seed=1)
    prob = Problem(X, y, loss="multiclass_hinge", alpha=alpha)
    ref = prob.objective(liblinear_cs(X, y, alpha).ravel())
    r = solve(prob, "msdca", tol=1e-9, max_iter=50000, random_state=0)
    assert r.status == "converged"
    assert r.objective == pytest.approx(ref, rel=1e-5)
    assert r.gap >= r.objective - ref - 1e-8 * ref


@pytest.mark.parametrize("loss", ["softmax", "multiclass_hinge"])
def test_certified_gap_bounds_true_gap_along_the_run(loss):
    """Every recorded certificate is >= J(W_t) - J*, J* from a run to 1e-12."""
    X, y = data(m=150, d=10, k=3, seed=2, layout="csr")
    prob = Problem(X, y, loss=loss, alpha=1e-2, fit_intercept=True)
    best = solve(prob, "msdca", tol=1e-12, max_iter=50000, random_state=1)
    J_star = best.objective - best.gap  # a lower bound on J*: the comparison is conservative
    gaps = []
    for it in (1, 3, 10, 30):
        r = solve(prob, "msdca", tol=1e-14, max_iter=it, random_state=0, check_every=1)
        true_gap = prob.objective(r.w) - J_star
        gaps.append(r.gap)
        assert r.gap >= true_gap - 1e-12
    assert gaps[-1] < gaps[0]


def test_history_marks_estimated_objectives():
    """Between the exact passes the recorded objective is the O(1) estimate (exact=False,
    no bound); at each exact pass (every check_every epochs) it is J of the returned-so-far
    iterate, with its certified gap."""
    X, y = data(layout="csr")
    prob = Problem(X, y, loss="multiclass_hinge", alpha=1e-3)
    r = solve(prob, "msdca", tol=1e-14, max_iter=12, random_state=0, check_every=5,
              shrinking=False)
    h = r.history.as_arrays()
    assert list(h["iteration"][h["exact"]]) == [0, 5, 10, 12]
    assert np.isfinite(h["bound"][h["exact"]]).all()
    assert np.isnan(h["bound"][~h["exact"]]).all()
    assert h["objective"][-1] == pytest.approx(prob.objective(r.w), rel=1e-12)


def test_same_bits_for_same_seed_and_warm_start():
    X, y = data(layout="csr")
    prob = Problem(X, y, loss="softmax", alpha=1e-3, n_threads=2)
    a = solve(prob, "msdca", tol=1e-6, random_state=3)
    b = solve(prob, "msdca", tol=1e-6, random_state=3)
    assert np.array_equal(a.w, b.w) and a.gap == b.gap
    warm = solve(prob, "msdca", tol=1e-9, random_state=4, start=a)
    cold = solve(prob, "msdca", tol=1e-9, random_state=4)
    assert warm.status == "converged" and warm.n_iter < cold.n_iter
    P = a.extra["dual"]
    assert P.shape == (200, 4) and np.allclose(P.sum(axis=1), 1.0) and (P >= 0).all()


@pytest.mark.parametrize("loss", ["softmax", "multiclass_hinge"])
def test_start_from_weights_is_the_primal_dual_link(loss):
    """The dual points derived from weights W, p_i = e_y + grad phi(W x_i), lie on the
    simplex and give V = -grad R(W) / alpha (the risk's gradient from the oracle, 1e-9),
    which is W at the optimum; a run started from another solver's optimum certifies in
    at most the epochs of a cold one, and the estimator's warm_start from an lbfgs
    (softmax) or bmrm (hinge) fit to msdca takes that start without a warning."""
    X, y = data(layout="csr")
    prob = Problem(X, y, loss=loss, alpha=1e-2)
    other = "lbfgs" if loss == "softmax" else "bmrm"
    ref = solve(prob, other, tol=1e-10, max_iter=5000)
    k = prob.n_classes
    P = msdca._initial_dual(prob, ref, k)
    assert np.allclose(P.sum(axis=1), 1.0) and (P >= 0).all()
    V = msdca._dual_sum(prob, P, prob.alpha * prob.n_samples)[:, :k].T.ravel()
    np.testing.assert_allclose(V, -prob.oracle(ref.w)[1] / prob.alpha, rtol=1e-9, atol=1e-12)
    assert np.array_equal(msdca._initial_dual(prob, ref.w, k), P)
    # the (k, D) matrix W, as lbfgs and bmrm take it
    assert np.array_equal(msdca._initial_dual(prob, ref.w.reshape(k, -1), k), P)
    warm = solve(prob, "msdca", tol=1e-6, random_state=0, start=ref)
    cold = solve(prob, "msdca", tol=1e-6, random_state=0)
    assert warm.status == "converged" and warm.n_iter <= cold.n_iter
    est = fr.LinearClassifier(loss=loss, solver=other, alpha=1e-2, warm_start=True).fit(X, y)
    est.set_params(solver="msdca")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        est.fit(X, y)
    assert est.solver_ == "msdca" and est.status_ == "converged"


def test_rejects_what_it_cannot_solve():
    X, y = data()
    with pytest.raises(ValueError, match="msdca"):
        solve(Problem(X, np.where(y > 1, 1, -1), loss="logistic"), "msdca")
    with pytest.raises(ValueError, match="takes penalties with an l2 term"):
        solve(Problem(X, y, loss="softmax", penalty="l1"), "msdca")
    prob = Problem(X, y, loss="softmax")
    # the wrong shape; not an array of real numbers (refused by name, not inside numpy)
    for start in (np.ones((3, 3)), {}, "dual", np.full((200, 4), 0.25) + 0j, np.ones(7),
                  np.full(prob.n_weights, np.nan)):
        with pytest.raises(ValueError, match="^start must be a Result"):
            solve(prob, "msdca", start=start)
    with pytest.raises(ValueError, match="check_every"):
        solve(prob, "msdca", check_every=0)


def test_one_vs_rest_validates_once_and_equals_separate_fits(monkeypatch):
    """OvR: X is checked once for all classes, and each class's coef_ equals a separate
    binary fit of the same problem (same solver, seed; deterministic kernels: 1e-12)."""
    import fastrisk.data as frdata

    X, y = data(m=150, d=10, k=4, seed=5, layout="csr")
    calls = []
    real = frdata.check_X
    monkeypatch.setattr(frdata, "check_X", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    est = fr.LinearClassifier(loss="logistic", alpha=1e-2, solver="sdca", tol=1e-10,
                              random_state=0, n_threads=2).fit(X, y)
    assert len(calls) == 1
    monkeypatch.setattr(frdata, "check_X", real)
    for j in range(4):
        single = fr.LinearClassifier(loss="logistic", alpha=1e-2, solver="sdca", tol=1e-10,
                                     random_state=0, n_threads=1).fit(X, np.where(y == j, 1, 0))
        np.testing.assert_allclose(est.coef_[j], single.coef_[0], rtol=1e-12, atol=1e-14)


def test_softmax_step_with_large_curvature_matches_sklearn():
    """Rows of squared norm 25 at alpha 1e-3: the step's a = ||x||^2 / (lambda n) is 125,
    where p moves little from a vertex of the simplex (the regime of MNIST at alpha 1e-4);
    lambda n / R^2 ~ 0.008, so the steps are over-relaxed (omega ~ 1.84)."""
    X, y = data(m=200, d=12, k=3, seed=6)
    X = X * 5.0
    alpha = 1e-3
    prob = Problem(X, y, loss="softmax", alpha=alpha)
    ref = prob.objective(sklearn_softmax(X, y, alpha).ravel())
    r = solve(prob, "msdca", tol=1e-9, max_iter=200000, random_state=0)
    assert r.status == "converged"
    assert r.objective == pytest.approx(ref, rel=1e-6)


def test_softmax_over_relaxed_steps_raise_the_dual_and_save_epochs(monkeypatch):
    """With omega ~ 1.84 (lambda n / R^2 ~ 0.008) every epoch raises the exact dual D(A)
    (each step by at least a (1/omega - 1/2) ||p_new - p_old||^2, msdca.py's
    relaxation), and the certified 1e-8 takes fewer epochs than the exact steps
    (omega = 1) to the same optimum."""
    from fastrisk.solvers import msdca

    X, y = data(m=200, d=12, k=3, seed=6)
    prob = Problem(X * 5.0, y, loss="softmax", alpha=1e-3)
    state = msdca._MSDCA(prob, None, 1, True, np.random.default_rng(0))
    assert 1.8 < state.relaxation() < 1.9
    duals = []
    for _ in range(30):
        state.run_epoch()
        state.exact_sums()
        duals.append(state.estimate()[1])
    assert all(b >= a - 1e-15 * abs(a) for a, b in zip(duals, duals[1:]))
    relaxed = solve(prob, "msdca", tol=1e-8, max_iter=200000, random_state=0, check_every=1)
    monkeypatch.setattr(msdca._MSDCA, "relaxation", lambda self: 1.0)
    exact = solve(prob, "msdca", tol=1e-8, max_iter=200000, random_state=0, check_every=1)
    assert relaxed.status == exact.status == "converged"
    assert relaxed.objective == pytest.approx(exact.objective, rel=1e-7)
    assert relaxed.n_iter < exact.n_iter


@pytest.mark.parametrize("alpha", [1e-2, 1e-4])
def test_crammer_singer_finishing_epochs_raise_the_dual(alpha):
    """Finishing epochs (steps of FINISH_STEP times the relaxed length, msdca.py's
    run_epoch) between plain ones: every epoch raises the exact dual D(A) (alpha 1e-4:
    omega ~ 1.78, finishing steps omega / 2)."""
    from fastrisk.solvers import msdca

    X, y = data(m=150, d=10, k=3, seed=1)
    prob = Problem(X, y, loss="multiclass_hinge", alpha=alpha)
    state = msdca._MSDCA(prob, None, 1, True, np.random.default_rng(0))
    duals = []
    for epoch in range(40):
        state.run_epoch(finishing=epoch % 3 == 2)
        state.exact_sums()
        duals.append(state.estimate()[1])
    assert all(b >= a - 1e-15 * abs(a) for a, b in zip(duals, duals[1:]))


@pytest.mark.parametrize("loss", ["multiclass_hinge", "softmax"])
def test_estimate_at_tol_certifies_after_the_finishing_epochs(loss):
    """Without periodic checks (check_every above the run), the first epoch whose estimated
    gap P_est - D_est reaches tol * P_est (the history's estimated objective) is followed by
    the loss's finishing run (msdca.finishing_run) and then the first exact gap computation
    (on the hinge the only one: it certifies tol here)."""
    from fastrisk.solvers import msdca

    X, y = data(m=300, d=15, k=5, seed=11, layout="csr")
    prob = Problem(X, y, loss=loss, alpha=1e-2)
    r = solve(prob, "msdca", tol=1e-4, check_every=1000, max_iter=10000, random_state=0)
    h = r.history.as_arrays()
    estimated = dict(zip(h["iteration"][~h["exact"]], h["objective"][~h["exact"]]))
    first = next(e for e, gap in enumerate(r.extra["gap_estimates"], 1)
                 if gap <= 1e-4 * estimated[e])
    exact = list(h["iteration"][h["exact"]])
    assert r.status == "converged"
    assert exact[1] == first + msdca.finishing_run(loss, first)
    if loss == "multiclass_hinge":
        assert exact == [0, r.n_iter]


@pytest.mark.parametrize("alpha", [1e-4, 1e-6])
def test_crammer_singer_finishing_epochs_lower_the_primal(shared_file, monkeypatch, alpha):
    """On text, where the dual converges far ahead of P(W(A)) (the first 3000 rows of 20
    Newsgroups), a run of 20 epochs ends at a lower objective with its finishing epochs
    (msdca.FINISH_STEP, FINISHING) than with plain ones (FINISH_STEP = 1), for each of
    five seeds; at alpha 1e-6 (omega ~ 1.8) also than with one finishing epoch only."""
    shared_file("20news-bydate.tar.xz")
    from conftest import load_20news
    from fastrisk.solvers import msdca

    X, y = load_20news()
    prob = Problem(X[:3000], y[:3000], loss="multiclass_hinge", alpha=alpha)

    def objectives():
        runs = [solve(prob, "msdca", tol=1e-14, max_iter=20, random_state=s) for s in range(5)]
        assert all(r.n_iter == 20 for r in runs)
        return np.array([prob.objective(r.w) for r in runs])

    finished = objectives()
    if alpha == 1e-6:
        monkeypatch.setitem(msdca.FINISHING, "multiclass_hinge", (True, 1, 0.0))
        one = objectives()
        assert (finished < one).all()
    monkeypatch.setattr(msdca, "FINISH_STEP", 1.0)
    assert (finished < objectives()).all()


def test_crammer_singer_long_finishing_run_certifies_a_lower_mean(shared_file, monkeypatch):
    """A run of 96 epochs at alpha 1e-6 on the first 3000 rows of 20 Newsgroups ends with
    msdca.finishing_run's six finishing epochs, and the mean W of the last four (the
    averaged output of Shalev-Shwartz & Zhang 2013) certified with the last one: a lower
    objective than with the same six epochs and no mean, and than with three and no mean,
    for each of five seeds; the Result's objective is J(w) of its w."""
    shared_file("20news-bydate.tar.xz")
    from conftest import load_20news
    from fastrisk.solvers import msdca

    X, y = load_20news()
    prob = Problem(X[:3000], y[:3000], loss="multiclass_hinge", alpha=1e-6)
    assert msdca.finishing_run("multiclass_hinge", 96) == 6 and msdca.AVERAGE_AFTER == 2

    def objectives():
        runs = [solve(prob, "msdca", tol=1e-14, max_iter=96, random_state=s) for s in range(5)]
        J = np.array([prob.objective(r.w) for r in runs])
        assert np.allclose([r.objective for r in runs], J, rtol=1e-12, atol=0)
        return J

    averaged = objectives()
    monkeypatch.setattr(msdca, "AVERAGE_AFTER", 96)  # the same six epochs, no mean
    assert (averaged < objectives()).all()
    monkeypatch.setitem(msdca.FINISHING, "multiclass_hinge", (True, 3, 0.0))
    assert (averaged < objectives()).all()


def test_softmax_finishing_epoch_lowers_the_primal(shared_file, monkeypatch):
    """On the first 3000 rows of MNIST at alpha 1e-4 (omega ~ 1.9), a run of 20 epochs
    ends at a lower objective after its finishing epoch (msdca.FINISHING) than after a
    plain one, for each of five seeds."""
    shared_file("mnist.scale.t.bz2")
    from conftest import load_dataset
    from fastrisk.solvers import msdca

    X, y = load_dataset("mnist")
    prob = Problem(X[:3000], y[:3000], loss="softmax", alpha=1e-4)

    def objectives():
        runs = [solve(prob, "msdca", tol=1e-14, max_iter=20, random_state=s) for s in range(5)]
        assert all(r.n_iter == 20 for r in runs)
        return np.array([prob.objective(r.w) for r in runs])

    finished = objectives()
    monkeypatch.setitem(msdca.FINISHING, "softmax", (False, 0, 0.0))
    assert (finished < objectives()).all()


def test_auto_choice():
    """solver='auto' (fastrisk/solvers/auto.py): msdca for the multiclass hinge and for
    softmax with an l2 penalty on more or fewer features than samples, lbfgs where msdca
    does not apply (no strongly convex penalty), mcd for softmax with l1 and bmrm for the
    hinge with l1."""
    from fastrisk.solvers import choose_solver

    X, y = data(m=50, d=80, k=3)
    assert choose_solver(Problem(X, y, loss="softmax")) == "msdca"
    assert choose_solver(Problem(X, y, loss="multiclass_hinge")) == "msdca"
    assert choose_solver(Problem(X, y, loss="softmax", penalty="l1")) == "mcd"
    assert choose_solver(Problem(X, y, loss="multiclass_hinge", penalty="l1")) == "bmrm"
    X, y = data(m=100, d=10, k=3)
    assert choose_solver(Problem(X, y, loss="softmax")) == "msdca"
    assert choose_solver(Problem(X, y, loss="multiclass_hinge")) == "msdca"
    assert choose_solver(Problem(X, y, loss="softmax", penalty="lp", p=1.5)) == "lbfgs"


def test_crammer_singer_shrinking_same_optimum_fewer_visits(monkeypatch):
    """Shrinking skips rows at e_y with margin > 1; the certified optimum is the same.
    With exact steps (omega = 1): on this small problem the over-relaxed steps
    (HINGE_MIN_OMEGA) take the unshrunk run to 1e-8 in fewer row visits than the shrunk
    one, so the visits saved by shrinking alone are compared at omega = 1."""
    from fastrisk.solvers import msdca

    monkeypatch.setattr(msdca, "HINGE_MIN_OMEGA", 1.0)
    X, y = data(m=300, d=10, k=3, seed=7, layout="csr")
    prob = Problem(X, y, loss="multiclass_hinge", alpha=1e-2)
    full = solve(prob, "msdca", tol=1e-8, max_iter=50000, random_state=0, shrinking=False)
    shrunk = solve(prob, "msdca", tol=1e-8, max_iter=50000, random_state=0)
    assert full.status == shrunk.status == "converged"
    assert shrunk.objective == pytest.approx(full.objective, rel=2e-8)
    assert shrunk.extra["row_visits"] < full.extra["row_visits"]


# alpha 1e-3: lambda n / R^2 = 0.3, over-relaxed steps (omega = HINGE_MIN_OMEGA)
@pytest.mark.parametrize("alpha", [1e-2, 1e-3])
def test_crammer_singer_class_shrinking_same_optimum(alpha):
    """Per-class shrinking (a row's scores and step over its active classes only) reaches
    the optimum of shrinking=False: the two objectives agree within the sum of their
    certified gaps (each bounds its distance to J*), both equal LIBLINEAR's to 1e-5, and
    classes did leave the rows' active sets (fewer class visits than k per row visit).
    Five well-separated classes: most rows end with a few of the five."""
    X, y = data(m=300, d=15, k=5, seed=11, layout="csr")
    prob = Problem(X, y, loss="multiclass_hinge", alpha=alpha)
    full = solve(prob, "msdca", tol=1e-9, max_iter=20000, random_state=0, shrinking=False)
    shrunk = solve(prob, "msdca", tol=1e-9, max_iter=20000, random_state=0)
    assert full.status == shrunk.status == "converged"
    assert abs(shrunk.objective - full.objective) <= shrunk.gap + full.gap
    ref = prob.objective(liblinear_cs(X, y, alpha).ravel())
    assert shrunk.objective == pytest.approx(ref, rel=1e-5)
    assert full.extra["class_visits"] == 5 * full.extra["row_visits"]
    assert shrunk.extra["class_visits"] < 0.8 * 5 * shrunk.extra["row_visits"]


@pytest.mark.parametrize("loss", ["softmax", "multiclass_hinge"])
def test_cold_start_certificate_is_the_objective_at_zero(loss):
    """A cold start records J(0) and the certificate J(0) - D(e_y) = J(0) without a pass
    over the data; both must equal the problem's own objective at W = 0 (weighted rows:
    the closed form weights each row's loss)."""
    X, y = data(layout="csr", seed=3)
    weights = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    prob = Problem(X, y, loss=loss, alpha=1e-3, sample_weight=weights, fit_intercept=True)
    r = solve(prob, "msdca", tol=1e-14, max_iter=3, random_state=0)
    h = r.history.as_arrays()
    J0 = prob.objective(np.zeros_like(r.w))
    assert h["iteration"][0] == 0 and h["exact"][0]
    assert h["objective"][0] == pytest.approx(J0, rel=1e-12)
    assert h["bound"][0] == pytest.approx(J0, rel=1e-12)
    # the run continues from that state: its final certificate still bounds the true gap,
    # so it is at least J(W) - J_ref with J_ref >= J* the objective of an independent
    # optimum (the intercept a penalized column of ones; 1e-12 J: rounding of the sums)
    Xb = np.c_[X.toarray(), np.ones(len(y))]
    J_ref = (batch.softmax_l2_optimum(Xb, y, 4, 1e-3, c=weights) if loss == "softmax"
             else prob.objective(liblinear_cs(Xb, y, 1e-3, sample_weight=weights).ravel()))
    assert r.gap >= prob.objective(r.w) - J_ref - 1e-12 * J_ref


@pytest.mark.parametrize("loss,penalty,kw", [
    ("softmax", "l2", {}), ("softmax", "elasticnet", {}),
    ("multiclass_hinge", "l2", {"accelerated": True}), ("multiclass_hinge", "l2", {})])
def test_hot_first_layout_gives_the_same_bits(monkeypatch, loss, penalty, kw):
    """V and W in the order of decreasing feature frequency (msdca._hot_first) change
    where the weights live, not the steps: the same w bit for bit and the same epochs as
    in X's order, cold and warm-started, with an intercept, and the same iterates seen
    by a callback.  The objectives agree to rounding: ||W||^2 is summed over W's rows in
    the layout's order (and the dual objective, a difference of two larger terms, loses
    digits to cancellation)."""
    from fastrisk.solvers import msdca

    rng = np.random.default_rng(5)
    m, d, k = 300, 60, 4
    # column j kept with probability falling from 0.9 to 0.05: frequencies far from sorted
    keep = rng.random((m, d)) < rng.permutation(np.linspace(0.9, 0.05, d))
    X = sp.csr_matrix(rng.normal(size=(m, d)) * keep)
    y = rng.integers(0, k, m)
    prob = Problem(X, y, loss=loss, alpha=1e-3, penalty=penalty, fit_intercept=True)
    q = msdca._msdca.block_width(k)

    def run(limit):
        monkeypatch.setattr(msdca, "HOT_FIRST_BYTES", limit)
        rows, order = msdca._hot_first(prob.data, q)
        first = solve(prob, "msdca", tol=1e-5, max_iter=40, random_state=1, **kw)
        seen = []
        warm = solve(prob, "msdca", tol=1e-9, max_iter=40, random_state=2, start=first,
                     callback=lambda r: seen.append(r.w.copy()), **kw)
        return order, seen, first, warm

    order, seen, *hot = run(0)
    assert not np.array_equal(order, np.arange(d + 1)) and order[-1] == d
    counts = np.bincount(X.indices, minlength=d)
    assert (np.diff(counts[order[:-1]]) <= 0).all()
    none, seen_plain, *plain = run(1 << 62)
    assert none is None
    assert len(seen) == len(seen_plain) > 1
    assert all(np.array_equal(a, b) for a, b in zip(seen, seen_plain))
    for a, b in zip(hot, plain):
        assert np.array_equal(a.w, b.w) and a.n_iter == b.n_iter
        assert a.objective == pytest.approx(b.objective, rel=1e-13, abs=0)
        assert a.extra["dual_objective"] == pytest.approx(b.extra["dual_objective"], rel=1e-9)


@pytest.mark.parametrize("loss,penalty,layout", [
    ("softmax", "l2", "csr"), ("softmax", "elasticnet", "csr"),
    ("multiclass_hinge", "l2", "csr"), ("multiclass_hinge", "l2", "dense")])
@pytest.mark.parametrize("n_threads", [2, 3])
def test_row_split_epochs_take_the_steps_of_one_thread(monkeypatch, loss, penalty, layout,
                                                       n_threads):
    """Row-split epochs (each thread owns a range of the weight rows and the threads sum
    each row's k partial scores) visit the same rows and take the same steps as one
    thread, to the rounding of scores summed in parts, with the same shrinking of rows and
    classes; the running sums follow W; repeated runs give the same bits (3 parts on 2
    cores: the waits must yield).  The split runs where W exceeds HOT_FIRST_BYTES, here
    set to 0."""
    from fastrisk import _msdca
    from fastrisk.solvers import msdca
    from fastrisk.solvers.msdca import _MSDCA

    monkeypatch.setattr(msdca, "HOT_FIRST_BYTES", 0)

    rng = np.random.default_rng(11)
    m, d, k = 200, 160, 5
    X = sp.random(m, d, density=0.6, random_state=11, format="csr")
    X = X.toarray() if layout == "dense" else X
    y = rng.integers(0, k, m)
    c = rng.uniform(0.5, 2.0, m)
    c[::13] = 0.0
    kw = {"l1_ratio": 0.3} if penalty == "elasticnet" else {}
    prob = Problem(X, y, loss=loss, alpha=1e-3, penalty=penalty, fit_intercept=True,
                   sample_weight=c, **kw)

    def epochs(threads):
        state = _MSDCA(prob, None, threads, True, np.random.default_rng(4))
        state.exact_sums()  # the rows' terms and the sums, as the solver starts
        for _ in range(6):
            state.run_epoch()
        return state

    one, split, again = epochs(1), epochs(n_threads), epochs(n_threads)
    assert one.parts is None and split.parts is not None
    assert split.extra()["parts"] == len(split.parts) - 1 == min(n_threads, 3)
    for name in ("P", "v", "W", "sums", "classes", "n_classes", "active"):
        np.testing.assert_array_equal(getattr(split, name), getattr(again, name))
    np.testing.assert_array_equal(split.active, one.active)
    np.testing.assert_array_equal(split.n_classes, one.n_classes)
    np.testing.assert_allclose(split.P, one.P, rtol=1e-9, atol=1e-12)
    # one thread on sparse data: W's rows hot-first (msdca._hot_first)
    assert split.order is None and (one.order is None) == (layout == "dense")
    W_one = one.W if one.order is None else one.W[np.argsort(one.order)]
    np.testing.assert_allclose(split.W, W_one, rtol=1e-9, atol=1e-12)
    W = split.W[:, :k]
    assert split.sums[0] == pytest.approx(split.row_loss.sum(), rel=1e-10)
    dual = _msdca.dual_terms(split.P, split.y, split.c_arg, split.loss, np.empty(m))
    assert split.sums[1] == pytest.approx(dual, rel=1e-10)
    assert split.sums[2] == pytest.approx((W * W).sum(), rel=1e-10)
    if penalty == "elasticnet":
        assert split.sums[3] == pytest.approx(np.abs(W).sum(), rel=1e-10)


def test_row_split_solve_reaches_the_one_thread_optimum(monkeypatch):
    from fastrisk.solvers import msdca

    rng = np.random.default_rng(12)
    X = sp.random(300, 400, density=0.2, random_state=12, format="csr")
    y = rng.integers(0, 6, 300)
    # W of 400 x 8 doubles stays in cache: whole rows on one thread even with two
    prob = Problem(X, y, loss="softmax", alpha=1e-3, n_threads=2)
    assert solve(prob, "msdca", max_iter=2).extra["parts"] is None
    monkeypatch.setattr(msdca, "HOT_FIRST_BYTES", 0)
    results = []
    for threads in (1, 2):
        prob = Problem(X, y, loss="softmax", alpha=1e-3, n_threads=threads)
        results.append(solve(prob, "msdca", tol=1e-8, max_iter=500, random_state=0))
    one, two = results
    assert one.extra["parts"] is None and two.extra["parts"] == 2
    assert two.status == "converged" and two.gap <= 1e-8 * two.objective
    assert two.objective == pytest.approx(one.objective, rel=2e-8)


@pytest.mark.parametrize("loss", ["softmax", "multiclass_hinge"])
@pytest.mark.parametrize("accelerated", [False, True])
def test_rows_of_norm_zero_are_certified(loss, accelerated):
    """Empty rows without an intercept score 0 for every W; the epochs skip them, so their
    dual points start at their optimum (else their loss stays a gap the run never
    closes): msdca certifies tol and reaches the optimum of an independent solver (scipy's
    L-BFGS-B at tight tolerance on the softmax J, LIBLINEAR's Crammer-Singer at tol 1e-10;
    both far tighter than msdca's certified 1e-6 J, so 2e-6 relative apart at most), also
    with every row empty (w = 0)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 6))
    X[::12] = 0.0
    # labels that X predicts: the hinge's optimum is not W = 0 (as it is for labels
    # independent of X at this alpha)
    y = np.argmax(X[:, :3] + 0.5 * rng.normal(size=(120, 3)), axis=1)
    prob = Problem(sp.csr_matrix(X), y, loss=loss, alpha=1e-2)
    r = solve(prob, "msdca", tol=1e-6, max_iter=2000, random_state=0, accelerated=accelerated)
    J_ref = (batch.softmax_l2_optimum(X, y, 3, 1e-2) if loss == "softmax"
             else prob.objective(liblinear_cs(X, y, 1e-2).ravel()))
    assert r.status == "converged" and r.gap <= 1e-6 * r.objective
    assert r.objective == pytest.approx(J_ref, rel=2e-6)
    # the certified lower bound is below J_ref >= J* (1e-12 J: rounding of the sums)
    assert r.objective - r.gap <= J_ref + 1e-12 * J_ref
    empty = Problem(np.zeros((30, 4)), np.arange(30) % 3, loss=loss, alpha=1e-3)
    r = solve(empty, "msdca", tol=1e-6, random_state=0)
    assert r.status == "converged" and not r.w.any()
    assert r.objective == pytest.approx(np.log(3) if loss == "softmax" else 1.0, rel=1e-12)


def test_alpha_too_small_for_doubles_raises():
    """At alpha 1e-200 the softmax steps' scale 1 / (alpha n) overflows: a named
    FloatingPointError, not NaN weights returned as a result (nor an estimator that runs
    on NaN until its time limit)."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 5)), np.arange(20) % 3
    with pytest.raises(FloatingPointError, match="msdca.*alpha"):
        solve(Problem(X, y, loss="softmax", alpha=1e-200), "msdca", max_iter=3)
    with pytest.raises(FloatingPointError, match="msdca"):
        fr.LinearClassifier(loss="softmax", alpha=1e-200).fit(X, y)
