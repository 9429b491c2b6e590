"""A warm start never makes a valid fit fail, and lands where a cold fit does.

Refits with ``warm_start=True`` on flipped labels, shuffled rows and cross-validation
folds of another size: the previous SDCA dual is infeasible or of the wrong length
there, so the solver starts from the dual derived from the previous w.  Each warm fit is
compared with a cold fit of the same data: both are certified to ``tol`` relative
(duality gap), so their objectives agree within 2 tol.
"""

import copy
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.model_selection import KFold

import fastrisk as fr

TOL = 1e-6


def _data():
    X, y = make_classification(400, 8, n_informative=5, random_state=0)
    return X, np.where(y == 1, 1.0, -1.0)


def _pair(X, y, warm_from, **kw):
    opts = dict(loss="logistic", alpha=1e-3, solver="sdca", tol=TOL, random_state=0, **kw)
    warm = fr.LinearClassifier(warm_start=True, **opts).fit(*warm_from)
    warm.fit(X, y)
    cold = fr.LinearClassifier(**opts).fit(X, y)
    return warm, cold


def _agree(warm, cold):
    assert warm.status_ == cold.status_ == "converged"
    assert warm.objective_ == pytest.approx(cold.objective_, rel=2 * TOL)


def test_refit_on_flipped_labels():
    X, y = _data()
    _agree(*_pair(X, -y, (X, y)))


def test_refit_on_shuffled_rows():
    X, y = _data()
    perm = np.random.default_rng(1).permutation(len(y))
    _agree(*_pair(X[perm], y[perm], (X, y)))


def test_refit_on_cv_folds_of_other_sizes():
    X, y = _data()
    warm = fr.LinearClassifier(loss="logistic", alpha=1e-3, solver="sdca", tol=TOL,
                               random_state=0, warm_start=True).fit(X, y)
    for train, _ in KFold(3, shuffle=True, random_state=0).split(X):   # 266 or 267 rows
        warm.fit(X[train], y[train])
        cold = fr.LinearClassifier(loss="logistic", alpha=1e-3, solver="sdca", tol=TOL,
                                   random_state=0).fit(X[train], y[train])
        _agree(warm, cold)


@pytest.mark.filterwarnings("ignore:solver .* stopped on max_iter")
@pytest.mark.parametrize("solver", ["pegasos", "adaptive", "proximal", "optimistic"])
def test_pegasos_family_refit_continues_its_state(solver):
    """A second fit with warm_start continues the first fit's state, tail average included
    (under the default average="tail" the continued run keeps the tail start of a state
    that already averages): the same iterate as the solver continued by hand from the
    first Result, bit for bit, after twice the steps."""
    X, y = _data()
    opts = dict(loss="hinge", alpha=1e-2, solver=solver, max_iter=3, random_state=0)
    est = fr.LinearClassifier(warm_start=True, **opts).fit(X, y)
    first = est._results[0]
    est.fit(X, y)
    again = est._results[0]
    assert again.extra["steps"] == 2 * first.extra["steps"] and again.extra["averaged"]
    problem = fr.Problem(X, y, loss="hinge", alpha=1e-2, fit_intercept=True)
    seed = fr.estimators._seed(0)
    one = fr.solve(problem, solver, max_iter=3, random_state=seed)
    two = fr.solve(problem, solver, max_iter=3, random_state=seed, start=one)
    assert np.array_equal(one.w, first.w) and np.array_equal(two.w, again.w)


@pytest.mark.filterwarnings("ignore:solver .* stopped on max_iter")
@pytest.mark.filterwarnings("ignore:solver .* diverged")
@pytest.mark.parametrize("solver,penalty", [("pegasos", "l2"), ("pgs", "l2"), ("rda", "l1"),
                                            ("sgd_l1", "l1")])
def test_state_solver_refit_at_another_alpha_starts_cold(solver, penalty):
    """A state made at another alpha cannot continue: warm_start warns and fits cold (the
    same bits as a fresh estimator at the new alpha); partial_fit refuses to mix them."""
    X, y = _data()
    opts = dict(loss="hinge" if penalty == "l2" else "logistic", penalty=penalty,
                solver=solver, max_iter=3, random_state=0)
    est = fr.LinearClassifier(warm_start=True, alpha=1e-2, **opts).fit(X, y)
    est.set_params(alpha=1e-3)
    with pytest.warns(UserWarning, match=f"warm_start: .*solver '{solver}' starts cold"):
        est.fit(X, y)
    cold = fr.LinearClassifier(alpha=1e-3, **opts).fit(X, y)
    assert np.array_equal(est.coef_, cold.coef_)
    assert est.intercept_ == cold.intercept_
    stream = fr.LinearClassifier(alpha=1e-2, **opts).partial_fit(X, y, classes=[-1.0, 1.0])
    stream.set_params(alpha=1e-3)
    with pytest.raises(ValueError, match="partial_fit continues .*: alpha from 0.01 to 0.001"):
        stream.partial_fit(X, y)


def test_sdca_start_from_another_solver_or_a_vector():
    """start= takes any Result (its w) or a weight vector: the dual u_i = -l'(<w, x_i>)."""
    X, y = _data()
    prob = fr.Problem(X, y, loss="logistic", alpha=1e-3)
    lb = fr.solve(prob, solver="lbfgs", tol=1e-10)
    cold = fr.solve(prob, solver="sdca", tol=1e-8, random_state=0)
    for start in (lb, lb.w):
        warm = fr.solve(prob, solver="sdca", tol=1e-8, random_state=0, start=start)
        assert warm.status == "converged" and warm.n_iter < cold.n_iter
        assert warm.objective == pytest.approx(cold.objective, rel=2e-8)


def test_auto_default_budget_honours_tol():
    """solver="auto" without max_iter runs until tol is certified: this hinge problem
    needs more SDCA epochs than SDCA's own default of 1,000, where sdca alone stops (with
    more than a tenth as many features as samples: no probe hands it to smoothing)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 40))
    y = np.sign(X @ rng.normal(size=40) + 1.0 * rng.normal(size=300))
    prob = fr.Problem(X, y, loss="hinge", alpha=3e-6)
    assert fr.solve(prob, solver="sdca", tol=1e-3, random_state=0).status == "max_iter"
    res = fr.solve(prob, tol=1e-3, random_state=0)
    assert res.solver == "sdca" and res.status == "converged" and res.n_iter > 1000
    assert res.gap <= 1e-3 * res.objective
    est = fr.LinearClassifier(loss="hinge", alpha=3e-6, tol=1e-3, fit_intercept=False,
                              random_state=0).fit(X, y)
    assert est.status_ == "converged" and est.gap_ <= 1e-3 * est.objective_
    short = fr.solve(prob, tol=1e-3, random_state=0, max_iter=1000)   # a given budget holds
    assert short.status == "max_iter" and short.n_iter == 1000


def test_auto_ends_where_a_tiny_alpha_leaves_nothing_to_certify():
    """alpha 1e-20 on separable data: the optimum's weights are huge, J decreases towards 0
    step after step and the dual points certify nothing of it.  solver="auto" without
    max_iter gives the proximal Newton solvers their record's Newton steps (cd: J keeps
    falling, the run ends on max_iter after them), and the Monitor's stall rule ends the
    runs that repeat themselves (msdca's dual steps at such an alpha leave w = 0, mcd's
    J and D stop moving), instead of running for auto's time limit."""
    from fastrisk.solvers import SOLVERS

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5))
    y = np.where(X[:, 0] > 0, 1, -1)
    res = fr.solve(fr.Problem(X, y, loss="logistic", penalty="l1", alpha=1e-20), tol=1e-4)
    assert res.solver == "cd" and res.status == "max_iter"
    assert res.n_iter == SOLVERS["cd"].auto_max_iter
    assert res.objective < 1e-9 * np.log(2)  # the steps went on decreasing J
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    for penalty, solver in (("l2", "msdca"), ("l1", "mcd")):
        res = fr.solve(fr.Problem(X, y3, loss="softmax", penalty=penalty, alpha=1e-20), tol=1e-4)
        assert res.solver == solver and res.status == "stalled", (solver, res.status)
        assert res.n_iter <= 256 and res.gap > 1e-4 * res.objective


def test_the_stall_rule_needs_a_run_that_repeats_itself():
    """Monitor's stall rule (fastrisk/stopping.py): checked at powers of two from
    STALL_START recorded iterations; a run whose second half improved neither J nor the
    certified lower bound J - bound stops "stalled"; one that improved either goes on;
    a Monitor without the rule never stops so."""
    from fastrisk.stopping import STALL_START, Monitor

    prob = fr.Problem(np.eye(3), np.array([1.0, -1.0, 1.0]), alpha=1.0)

    def run(objective, bound, stall_rule=True, n=4 * STALL_START):
        mon = Monitor(prob, "test", tol=0.0, max_iter=10 ** 9, stall_rule=stall_rule)
        for it in range(1, n + 1):
            status = mon.check(it, np.zeros(3), objective(it), bound(it))
            if status is not None:
                return status, it
        return None, n

    assert run(lambda it: 1.0, lambda it: 0.5) == ("stalled", STALL_START)
    assert run(lambda it: 1.0, lambda it: 0.5, stall_rule=False) == (None, 4 * STALL_START)
    assert run(lambda it: 1.0 + 1.0 / it, lambda it: 1.0) == (None, 4 * STALL_START)  # J falls
    # J flat while the lower bound J - bound rises: progress
    assert run(lambda it: 1.0, lambda it: 1.0 / it) == (None, 4 * STALL_START)
    # no certificate at all (NaN bounds) and J flat: stalled
    assert run(lambda it: 1.0, lambda it: np.nan) == ("stalled", STALL_START)
    # J rises after the first half's best and stays above it: stalled at the first check
    assert run(lambda it: 1.0 if it < 10 else 2.0, lambda it: np.nan) == ("stalled",
                                                                         STALL_START)


def test_online_regression_divergence_is_reported():
    """On an uncentred target (abalone-like: y in [1, 29]) the squared loss's data-scaled
    steps (fastrisk/solvers/_steps.py) neither diverge nor warn; a Lipschitz loss keeps the
    papers' 1/(alpha t) steps, whose one-pass iterate ends above J(0) at this small alpha:
    the estimator warns; an overflow (PGS, p near 1) comes with advice in the estimator's
    terms."""
    from sklearn.exceptions import ConvergenceWarning

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(1000, 8))
    y = 10 + 5 * X[:, 0] + rng.normal(size=1000)
    for solver in ("pegasos", "rda", "pgs"):
        est = fr.LinearRegressor(solver=solver)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for i in range(0, 1000, 250):
                est.partial_fit(X[i:i + 250], y[i:i + 250])
        assert est.score(X, y) > 0.25  # clearly above the constant predictor's R^2 of 0
    est = fr.LinearRegressor(loss="absolute", solver="pegasos")
    with pytest.warns(ConvergenceWarning, match=r"diverged: J\(w\) = .* above J\(0\)"):
        for i in range(0, 1000, 250):
            est.partial_fit(X[i:i + 250], y[i:i + 250])
    with pytest.raises(FloatingPointError, match=r"standardize X .* batch solver .*lbfgs"):
        fr.LinearRegressor(loss="absolute", penalty="lp", p=1.0001, solver="pgs").partial_fit(X, y)


def test_history_marks_estimates_and_plots_draw_only_exact_entries(tmp_path):
    """SDCA logs an estimated objective between its exact checks; such entries are marked
    exact=False (their values can be below J*, i.e. below the final certified lower bound
    J(w) - gap), and the plot helper keeps only the exact ones."""
    pytest.importorskip("matplotlib")
    from fastrisk.cli import _exact_entries, plot_convergence

    X, y = _data()
    prob = fr.Problem(X, y, loss="hinge", alpha=1e-5)
    res = fr.solve(prob, solver="sdca", tol=1e-9, max_iter=60, random_state=0)
    h = res.history.as_arrays()
    assert h["exact"].dtype == bool and h["exact"].any() and not h["exact"].all()
    # every exact entry is J(w) of an iterate: never below the certified lower bound on J*
    lower = res.objective - res.gap
    assert (h["objective"][h["exact"]] >= lower - 1e-12).all()
    kept = _exact_entries(res.history)
    np.testing.assert_array_equal(kept["objective"], h["objective"][h["exact"]])
    plot_convergence({"sdca": res.history}, tmp_path / "p.png", "t")
    assert (tmp_path / "p.png").stat().st_size > 0


@pytest.mark.parametrize("change", [dict(fit_intercept=False), dict(solver="adaptive"),
                                    dict(loss="logistic"), dict(intercept_scaling=2.0)])
def test_partial_fit_refuses_a_changed_problem_or_solver(change):
    """partial_fit continues one run: after a change of the loss, the intercept or the
    solver the next call is refused naming the parameter, its old and its new value, and
    the estimator keeps its fit."""
    X, y = _data()
    est = fr.LinearClassifier(loss="hinge", solver="pegasos", random_state=0)
    est.partial_fit(X[:200], y[:200], classes=[-1.0, 1.0])
    coef = est.coef_.copy()
    (name, value), = change.items()
    old = est.get_params()[name]
    est.set_params(**change)
    with pytest.raises(ValueError, match=rf"^partial_fit continues .*: {name} from "
                                         rf"{old!r} to {value!r}; call fit"):
        est.partial_fit(X[200:], y[200:])
    assert np.array_equal(est.coef_, coef)
    est.fit(X, y)  # fit starts a new run with the new parameters


@pytest.mark.filterwarnings("ignore:solver .* stopped on max_iter")
@pytest.mark.parametrize("solver", ["pegasos", "pgs", "sdca"])
def test_warm_start_after_a_loss_or_intercept_change_starts_cold(solver):
    """A solver's state belongs to its loss, the weights (and a dual point's v) to their
    shape: after a change of the loss (state solvers) or of the number of weights (every
    solver), warm_start warns and fits cold (the bits of a fresh estimator)."""
    X, y = _data()
    opts = dict(solver=solver, alpha=1e-2, max_iter=3, random_state=0)
    changes = [(dict(loss="hinge", fit_intercept=True), dict(loss="hinge", fit_intercept=False))]
    if solver != "sdca":  # SDCA checks a dual start itself (a hinge dual fits squared hinge)
        changes.append((dict(loss="hinge"), dict(loss="squared_hinge")))
    for first, then in changes:
        est = fr.LinearClassifier(warm_start=True, **opts, **first).fit(X, y)
        est.set_params(**then)
        with pytest.warns(UserWarning, match=f"^warm_start: .*; solver '{solver}' starts cold"):
            est.fit(X, y)
        cold = fr.LinearClassifier(**opts, **dict(first, **then)).fit(X, y)
        assert np.array_equal(est.coef_, cold.coef_) and est.intercept_ == cold.intercept_


def test_warm_start_from_weights_takes_a_new_loss():
    """Weights start any problem of their shape: lbfgs warm-started from a hinge fit after
    the loss became logistic reaches the logistic optimum, without a warning."""
    X, y = _data()
    warm = fr.LinearClassifier(loss="hinge", solver="lbfgs", alpha=1e-2, tol=1e-8,
                               warm_start=True).fit(X, y)
    warm.set_params(loss="logistic")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warm.fit(X, y)
    cold = fr.LinearClassifier(loss="logistic", solver="lbfgs", alpha=1e-2, tol=1e-8).fit(X, y)
    assert warm.objective_ == pytest.approx(cold.objective_, rel=1e-7)


def test_a_continued_run_leaves_the_earlier_result_as_it_was():
    """Every solver that continues a state (its record's start="state"): a run from an
    earlier Result does not change that Result, so the same continuation twice gives the
    same bits."""
    X, y = make_classification(60, 5, random_state=4)
    problem = fr.Problem(X, y, loss="hinge", penalty="l2", alpha=0.05)
    l1 = fr.Problem(X, y, loss="hinge", penalty="l1", alpha=0.05)
    for name, info in fr.SOLVERS.items():
        if info.start != "state":
            continue
        prob = problem if info.why_not(problem) is None else l1
        first = fr.solve(prob, name, max_iter=2, random_state=0)
        before = copy.deepcopy(first.extra["state"])
        runs = [fr.solve(prob, name, max_iter=2, random_state=1, start=first) for _ in range(2)]
        assert np.array_equal(runs[0].w, runs[1].w), name
        after = first.extra["state"]
        items = before.items() if isinstance(before, dict) else vars(before).items()
        for key, value in items:
            now = after[key] if isinstance(after, dict) else getattr(after, key)
            assert np.array_equal(np.asarray(value), np.asarray(now)), (name, key)
