"""scikit-learn estimators: the sklearn API checks, and the fitted models against
independent references (closed-form ridge, LIBLINEAR, separate binary fits, one
pass of the solver over the concatenated stream)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.utils.estimator_checks import parametrize_with_checks

import fastrisk as fr
from fastrisk.estimators import LinearClassifier, LinearRegressor
from fastrisk.regularizers import PENALTIES

# ---- scikit-learn's estimator checks ------------------------------------------------------

# Small, strongly regularized problems so that the solvers converge to round-off quickly;
# every estimator path: binary, one-vs-rest, native multiclass, regression, partial_fit.
CHECKED = [
    LinearClassifier(loss="logistic", alpha=1e-2, solver="sdca", tol=1e-12),
    LinearClassifier(loss="hinge", alpha=1e-2, solver="sdca", tol=1e-12),
    LinearClassifier(loss="multiclass_hinge", alpha=1e-2, solver="bmrm", tol=1e-8),
    LinearRegressor(loss="squared", alpha=1e-2, solver="sdca", tol=1e-12),
    LinearClassifier(loss="hinge", alpha=1e-2, solver="pegasos", max_iter=5),  # has partial_fit
]

_WEIGHTS_VS_REPEATS = (
    "predictions must agree to 1e-7 relative, but the solver certifies J(w) - J* <= tol J, "
    "which bounds ||w - w*|| only by sqrt(2 tol J / alpha) (strong convexity); SDCA's gap "
    "stalls near 1e-12 relative for these smooth losses, leaving ~1e-7 differences")
_STOCHASTIC_REPEATS = ("repeating a row changes the stochastic solver's sequence of steps, so "
                       "its budget-limited iterate differs (the objective is the same)")


def expected_failed_checks(est):
    """Checks that fail by design, with the reason (scikit-learn marks them xfail)."""
    if est.solver == "pegasos":
        reason = _STOCHASTIC_REPEATS
    elif est.solver == "sdca" and est.loss in ("logistic", "squared"):
        reason = _WEIGHTS_VS_REPEATS
    else:
        return {}
    return {"check_sample_weight_equivalence_on_dense_data": reason,
            "check_sample_weight_equivalence_on_sparse_data": reason}


_checks = parametrize_with_checks(CHECKED, expected_failed_checks=expected_failed_checks)


@_checks
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        check(estimator)


def test_number_of_sklearn_checks():
    # the suite must not shrink silently: 64 checks for each of the 4 classifiers, 60 for
    # the regressor in scikit-learn 1.9 (a newer scikit-learn may add checks: update then)
    params = _checks.args[1]
    counts = {}
    for p in params:
        est = p.values[0] if hasattr(p, "values") else p[0]  # pytest.param for the xfails
        counts[repr(est)] = counts.get(repr(est), 0) + 1
    assert sorted(counts.values()) == [60, 64, 64, 64, 64], counts


# ---- fitted models against references -------------------------------------------------------


def _binary(n=300, d=8, seed=0):
    X, y = make_classification(n, d, n_informative=4, random_state=seed)
    return X, y


def test_logistic_matches_liblinear_with_regularized_intercept():
    # LIBLINEAR regularizes the intercept feature exactly as fastrisk does, so both minimize
    # the same J; C = 1 / (alpha m).  Both solved to ~1e-10 relative: weights agree to 1e-5.
    X, y = _binary()
    alpha = 1e-3
    ours = LinearClassifier(loss="logistic", alpha=alpha, solver="sdca", tol=1e-12,
                            max_iter=5000).fit(X, y)
    ref = LogisticRegression(solver="liblinear", C=1 / (alpha * len(y)), tol=1e-10,
                             intercept_scaling=1.0, max_iter=10000).fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, rtol=1e-5, atol=1e-6)
    assert ours.solver_ == "sdca" and ours.status_ == "converged"
    p = ours.predict_proba(X)
    np.testing.assert_allclose(p, ref.predict_proba(X), atol=1e-6)


def test_ridge_closed_form():
    # squared loss + l2 with the (regularized) intercept feature: normal equations
    # (Z^T Z / m + alpha I) w = Z^T y / m with Z = [X, 1]; solved by numpy to round-off.
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 6))
    y = X @ rng.normal(size=6) + 0.5 + 0.1 * rng.normal(size=200)
    alpha = 1e-2
    Z = np.column_stack([X, np.ones(len(y))])
    w = np.linalg.solve(Z.T @ Z / len(y) + alpha * np.eye(7), Z.T @ y / len(y))
    est = LinearRegressor(alpha=alpha, solver="sdca", tol=1e-13, max_iter=5000).fit(X, y)
    # gap <= 1e-13 J bounds ||w - w*|| by sqrt(2e-13 J / alpha) ~ 1e-6
    np.testing.assert_allclose(est.coef_, w[:6], atol=2e-6)
    assert est.intercept_ == pytest.approx(w[6], abs=2e-6)
    np.testing.assert_allclose(est.predict(X), Z @ w, atol=1e-5)


def test_softmax_matches_sklearn_multinomial():
    # same objective: alpha/2 ||W||_F^2 + mean softmax loss, no intercept, C = 1/(alpha m);
    # both solved to ~1e-10 relative, so the weights agree to 1e-5
    X, y = make_classification(300, 6, n_informative=4, n_classes=3, random_state=11)
    alpha = 1e-2
    ours = LinearClassifier(loss="softmax", alpha=alpha, solver="lbfgs", tol=1e-12,
                            fit_intercept=False).fit(X, y)
    ref = LogisticRegression(C=1 / (alpha * len(y)), tol=1e-12, max_iter=10000,
                             fit_intercept=False).fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-6)


@pytest.mark.parametrize("penalty", PENALTIES)
def test_auto_picks_a_solver_that_accepts_every_problem(penalty):
    # every classifier / regressor loss (its default parameter) with every penalty: the
    # rule's choice must accept the problem and end below J(0) within 30 iterations or
    # epochs (a solver unsuited to the loss, e.g. a stochastic one with an unbounded loss
    # derivative, diverges here)
    rng = np.random.default_rng(12)
    X = rng.normal(size=(40, 5))
    for loss, spec in fr.LOSSES.items():
        if spec.task == "novelty":
            continue
        y = {"binary": np.sign(X[:, 0] + 0.1), "multiclass": np.arange(40) % 3,
             "regression": X[:, 0], "counts": np.arange(40) % 4}[spec.task]
        prob = fr.Problem(X, y, loss=loss, penalty=penalty, alpha=1e-2, p=1.5)
        name = fr.solvers.choose_solver(prob)
        res = fr.solve(prob, solver=name, tol=1e-3, max_iter=30, random_state=0)
        # (<=: for zero_margin, w = 0 is optimal)
        assert res.objective <= prob.objective(np.zeros(prob.n_weights)), (loss, name)


@pytest.mark.parametrize("penalty", PENALTIES)
def test_auto_certifies_tol_for_every_loss(penalty):
    """Every loss (its default parameter) with every penalty: solver="auto" with its
    default budget ends "converged" with a certified gap at most tol J, so the rule
    never picks a solver whose certificate cannot reach tol on the problem (PGS's
    Fenchel bound at a kink of a non-smooth loss stays far from 0)."""
    rng = np.random.default_rng(13)
    X = rng.normal(size=(200, 5))
    for loss, spec in fr.LOSSES.items():
        if spec.task == "novelty":
            continue
        y = {"binary": np.sign(X[:, 0] + 0.3 * rng.normal(size=200)),
             "multiclass": (X[:, 0] > 0).astype(int) + (X[:, 1] > 0),
             "regression": X[:, 0] + 0.3 * rng.normal(size=200),
             "counts": rng.poisson(np.exp(0.5 * X[:, 0])).astype(float)}[spec.task]
        prob = fr.Problem(X, y, loss=loss, penalty=penalty, alpha=1e-2, p=1.5)
        res = fr.solve(prob, tol=1e-3, time_limit=60, random_state=0)
        assert res.status == "converged", (loss, res.solver, res.status, res.gap)
        assert res.gap <= 1e-3 * abs(res.objective), (loss, res.solver)


def test_auto_choice_is_visible():
    X, y = _binary()
    assert LinearClassifier(loss="hinge").fit(X, y).solver_ == "sdca"
    assert LinearClassifier(loss="logistic").fit(X, y).solver_ == "newton"  # small d
    assert LinearClassifier(loss="logistic", penalty="l1").fit(X, y).solver_ == "cd"
    assert LinearClassifier(loss="softmax").fit(X, y).solver_ == "msdca"


def test_auto_rule_for_smooth_l2_depends_on_shape():
    # rule 2 of fastrisk/solvers/auto.py: newton when its vectors (18 of n_weights) fit
    # in half the bytes of X (tall) and alpha m < SDCA_ALPHA_M, else sdca (wide:
    # 18 * 50 doubles > 20 * 50 / 2; or tall with alpha m = 2)
    rng = np.random.default_rng(3)
    tall, wide = rng.normal(size=(200, 5)), rng.normal(size=(20, 50))
    for X, alpha, expected in [(tall, 1e-4, "newton"), (tall, 1e-2, "sdca"),
                               (wide, 1e-3, "sdca")]:
        y = np.sign(X[:, 0] + 0.1)
        assert fr.solvers.choose_solver(fr.Problem(X, y, loss="logistic", alpha=alpha)) == expected
        # the hinge loss is not smooth: sdca whatever alpha and shape
        assert fr.solvers.choose_solver(fr.Problem(X, y, loss="hinge", alpha=alpha)) == "sdca"
        # regression losses with a dual step follow the same rule (Huber's box: no probe)
        for loss in ("squared", "huber"):
            assert fr.solvers.choose_solver(fr.Problem(X, X[:, 0], loss=loss, alpha=alpha)) \
                == expected, loss
        # Poisson and exponential: their curvature is unbounded, so on tall data newton where
        # its vectors fit whatever alpha m; else as the others (their inexact dual steps)
        counts = np.abs(np.round(X[:, 0]))
        assert fr.solvers.choose_solver(fr.Problem(X, counts, loss="poisson", alpha=alpha)) \
            == ("newton" if X is tall else expected)
        assert fr.solvers.choose_solver(fr.Problem(X, y, loss="exponential", alpha=alpha)) \
            == ("newton" if X is tall else expected)
    # more features than samples with Newton's vectors fitting (18 * 100 doubles <= 80 * 100
    # / 2): Poisson and exponential follow SDCA_ALPHA_M there (alpha m = 0.8 and 0.008)
    X = rng.normal(size=(80, 100))
    for alpha, expected in [(1e-2, "sdca"), (1e-4, "newton")]:
        for loss, y in [("poisson", np.abs(np.round(X[:, 0]))), ("exponential", np.sign(X[:, 0]))]:
            assert fr.solvers.choose_solver(fr.Problem(X, y, loss=loss, alpha=alpha)) == expected


def test_warm_start_w0_lbfgs():
    X, y = _binary(seed=13)
    est = LinearClassifier(loss="logistic", alpha=1e-3, solver="lbfgs", tol=1e-10,
                           warm_start=True).fit(X, y)
    cold_iters, J = est.n_iter_, est.objective_
    est.fit(X, y)  # starts from the previous weights
    assert est.n_iter_ < cold_iters
    assert est.objective_ == pytest.approx(J, rel=1e-9)


def test_one_vs_rest_equals_separate_binary_fits_bitwise():
    # 3 classes, 3 threads: the classes are fitted in parallel, one thread each; each must
    # be bit-identical to the same binary problem fitted alone with one thread.
    X, y = make_classification(240, 6, n_informative=4, n_classes=3, random_state=2)
    kw = dict(loss="hinge", alpha=1e-2, solver="sdca", tol=1e-8, random_state=3)
    ovr = LinearClassifier(n_threads=3, **kw).fit(X, y)
    assert ovr.coef_.shape == (3, 6) and len(ovr.history_) == 3
    for k in range(3):
        alone = LinearClassifier(n_threads=1, **kw).fit(X, np.where(y == k, 1, -1))
        assert np.array_equal(ovr.coef_[k], alone.coef_[0])
        assert ovr.intercept_[k] == alone.intercept_[0]
    f = ovr.decision_function(X)
    np.testing.assert_array_equal(ovr.predict(X), ovr.classes_[f.argmax(1)])


def test_same_seed_same_bits_and_threads():
    X, y = _binary(seed=4)
    a = LinearClassifier(solver="pegasos", max_iter=3, random_state=7, n_threads=2).fit(X, y)
    b = LinearClassifier(solver="pegasos", max_iter=3, random_state=7, n_threads=2).fit(X, y)
    assert np.array_equal(a.coef_, b.coef_) and a.intercept_ == b.intercept_


def test_partial_fit_is_one_epoch_over_the_stream():
    # the online solvers' streaming state: chunks one after another = one ordered pass
    # over the concatenation, checked against fastrisk.solve on the whole data (1e-12:
    # identical steps, the only difference is where the chunk boundaries fall)
    X, y = _binary(seed=5)
    for solver in ("pegasos", "rda"):
        est = LinearClassifier(loss="hinge", alpha=1e-2, solver=solver, random_state=0)
        for part in np.array_split(np.arange(len(y)), 3):
            est.partial_fit(X[part], y[part], classes=np.unique(y))
        prob = fr.Problem(X, y, loss="hinge", alpha=1e-2, fit_intercept=True)
        last = {"average": "last"} if solver == "pegasos" else {}  # partial_fit's choice
        res = fr.solve(prob, solver=solver, max_iter=1, shuffle=False, **last)
        np.testing.assert_allclose(est.coef_[0], res.coef_, rtol=1e-12, atol=1e-14)


def test_partial_fit_chunk_with_one_class_and_availability():
    X, y = _binary(seed=6)
    est = LinearClassifier(solver="pegasos")
    est.partial_fit(X[y == 0], y[y == 0], classes=[0, 1])  # a chunk may lack a class
    est.partial_fit(X[y == 1], y[y == 1])
    assert est.coef_.shape == (1, X.shape[1])
    with pytest.raises(ValueError, match="classes"):
        LinearClassifier(solver="pegasos").partial_fit(X, y)
    assert not hasattr(LinearClassifier(solver="sdca"), "partial_fit")
    assert not hasattr(LinearClassifier(loss="hinge"), "predict_proba")
    assert hasattr(LinearClassifier(loss="logistic"), "predict_proba")


def test_a_refused_call_leaves_the_estimator_as_it_was():
    # a refused first partial_fit must not fix classes_ or n_features_in_ for the retry, and a
    # refused refit must leave the previous fit usable (its coef_ next to its own width)
    X, y = _binary(seed=6)
    est = LinearClassifier(solver="pegasos", random_state=0)
    with pytest.raises(ValueError, match="NaN"):
        est.partial_fit(np.full((3, X.shape[1]), np.nan), [0, 1, 2], classes=[0, 1, 2])
    with pytest.raises(ValueError, match="labels that are not in classes"):
        est.partial_fit(X[:, :2], np.full(len(y), 7), classes=[0, 1])
    assert vars(est) == vars(LinearClassifier(solver="pegasos", random_state=0))
    est.partial_fit(X, y, classes=[0, 1])
    fresh = LinearClassifier(solver="pegasos", random_state=0).partial_fit(X, y, classes=[0, 1])
    np.testing.assert_array_equal(est.coef_, fresh.coef_)

    for est in (LinearClassifier(loss="logistic", solver="lbfgs"),
                LinearRegressor(solver="lbfgs")):
        est.fit(X, y)
        before = {k: v for k, v in vars(est).items() if k.endswith("_")}
        with pytest.raises(ValueError):
            est.fit(X[:, :3], np.full(len(y), np.nan))
        with pytest.raises(FloatingPointError):  # the solver's failure, after validation
            est.fit(X[:, :3] * 1e300, y)
        after = {k: v for k, v in vars(est).items() if k.endswith("_")}
        assert after.keys() == before.keys()
        assert all(after[k] is before[k] for k in before)
        est.predict(X)


def test_warm_start_continues_sdca():
    X, y = _binary(seed=7)
    est = LinearClassifier(loss="logistic", alpha=1e-3, solver="sdca", tol=1e-10,
                           warm_start=True, max_iter=2000).fit(X, y)
    cold_iters, J = est.n_iter_, est.objective_
    est.fit(X, y)  # starts from the previous dual variables: already converged
    assert est.n_iter_ < cold_iters
    assert est.objective_ == pytest.approx(J, rel=1e-9)


def test_class_weight_is_sample_weight():
    X, y = _binary(seed=8)
    kw = dict(loss="logistic", alpha=1e-2, solver="sdca", tol=1e-10, random_state=0)
    a = LinearClassifier(class_weight={0: 3.0, 1: 1.0}, **kw).fit(X, y)
    b = LinearClassifier(**kw).fit(X, y, sample_weight=np.where(y == 0, 3.0, 1.0))
    assert np.array_equal(a.coef_, b.coef_)


def test_float32_sparse_and_dense_agree():
    X, y = _binary(seed=9)
    kw = dict(loss="hinge", alpha=1e-2, solver="sdca", tol=1e-10, random_state=0)
    dense = LinearClassifier(**kw).fit(X, y)
    sparse32 = LinearClassifier(**kw).fit(sp.csr_matrix(X.astype(np.float32)), y)
    # float32 rounding of X (6e-8 relative) moves the optimum by about that much
    np.testing.assert_allclose(sparse32.coef_, dense.coef_, rtol=1e-4, atol=1e-5)


def test_save_load_round_trip(tmp_path):
    X, y = make_classification(200, 5, n_informative=3, n_classes=3, random_state=10)
    est = LinearClassifier(loss="logistic", alpha=1e-2, solver="sdca").fit(X, y)
    model = fr.load(est.save(tmp_path / "clf.frm"))
    assert model.solver == "sdca" and model.n_samples == 200
    np.testing.assert_array_equal(model.decision_function(X), est.decision_function(X))
    np.testing.assert_array_equal(model.predict_proba(X), est.predict_proba(X))
    back = fr.estimator_from_model(model)
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    reg = LinearRegressor(alpha=1e-2, solver="sdca").fit(X, y.astype(float))
    np.testing.assert_array_equal(fr.load(reg.save(tmp_path / "r.frm")).predict(X), reg.predict(X))


@pytest.mark.parametrize("kwargs,message", [
    (dict(loss="squared"), "loss must be one of"),
    (dict(loss="hinge", solver="nope"), "solver must be 'auto' or one of"),
    (dict(max_iter=0), "max_iter must be None or an integer >= 1"),
    (dict(alpha=-1.0), "alpha must be a finite number > 0"),
    (dict(penalty="l3"), "penalty must be one of"),
    (dict(random_state=-1), "random_state must be None, an integer from 0 to 2"),
    (dict(random_state=2**32), "random_state must be None, an integer from 0 to 2"),
    (dict(n_threads=1025), "n_threads must be None or an integer from 1 to 1024"),
])
def test_argument_errors_name_the_argument(kwargs, message):
    X, y = _binary()
    with pytest.raises(ValueError, match=message):
        LinearClassifier(**kwargs).fit(X, y)


@pytest.mark.parametrize("est", [fr.LinearClassifier, fr.LinearRegressor,
                                 fr.LinearClassifierCV, fr.LinearRegressorCV])
def test_masked_entries_are_refused_by_name(est):
    """A numpy masked array with masked entries as X, y or sample_weight (fit) or X
    (predict) is refused naming it: the conversion to an array drops the mask and the
    masked values would be used.  Without masked entries it fits like the plain array;
    Problem refuses the same arguments."""
    X, y = _binary()
    kw = dict({"n_alphas": 2, "cv": 2} if est.__name__.endswith("CV") else {}, random_state=0)

    def masked(a, index):
        out = np.ma.masked_array(a, mask=np.zeros(a.shape, dtype=bool))
        out.mask[index] = True
        return out

    fitted = est(**kw).fit(X, y)
    for args, name in (((masked(X, (0, 0)), y), "X"), ((X, masked(y, 3)), "y"),
                       ((X, y, masked(np.ones(len(y)), 2)), "sample_weight")):
        with pytest.raises(ValueError, match=f"^{name} is a masked array with masked entries"):
            est(**kw).fit(*args)
        with pytest.raises(ValueError, match=f"^{name} is a masked array with masked entries"):
            fr.Problem(*args[:2], sample_weight=args[2] if len(args) > 2 else None)
    with pytest.raises(ValueError, match="^X is a masked array with masked entries"):
        fitted.predict(masked(X, (1, 1)))
    np.testing.assert_array_equal(est(**kw).fit(np.ma.masked_array(X), y).coef_, fitted.coef_)


@pytest.mark.parametrize("est", [fr.LinearClassifier, fr.LinearRegressor,
                                 fr.LinearClassifierCV, fr.LinearRegressorCV])
def test_x_of_strings_dates_or_ragged_rows_is_refused_by_name(est):
    """X of strings, bytes, dates or durations would be parsed or reinterpreted by a cast
    to float; ragged rows fail inside numpy: fit and predict refuse them naming X.  Lists
    of numbers and object arrays of numbers stay accepted (scikit-learn's conversion)."""
    X, y = _binary()
    kw = {"n_alphas": 2, "cv": 2} if est.__name__.endswith("CV") else {}
    fitted = est(**kw).fit(X, y)
    days = np.arange(X.size).reshape(X.shape).astype("datetime64[D]")
    for bad in (X.astype(str), X.astype(str).tolist(), X.astype(bytes), days,
                days - days[0, 0]):
        with pytest.raises(ValueError, match="^X must hold real numbers, got dtype"):
            est(**kw).fit(bad, y)
        with pytest.raises(ValueError, match="^X must hold real numbers, got dtype"):
            fitted.predict(bad)
    with pytest.raises(ValueError, match="^X must be a 2-D array of real numbers"):
        est(**kw).fit([[1.0, 2.0], [3.0]], [0, 1])
    for good in (X.tolist(), X.astype(object)):
        np.testing.assert_array_equal(fitted.predict(good), fitted.predict(X))


def test_regressor_rejects_classification_losses():
    with pytest.raises(ValueError, match="loss must be one of"):
        LinearRegressor(loss="hinge").fit(np.ones((3, 2)), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("scale", [1e308, 1e-320])
def test_sample_weight_scale_does_not_matter(scale):
    """Weights at the ends of the double range (their sum overflows; n / their sum overflows)
    fit the same model as the same ratios of order 1: the estimators rescale by the largest
    weight before the mean, the CV estimators score with the same ratios."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5))
    yb = np.where(X[:, 0] + rng.normal(size=40) > 0, 1, -1)
    yr = X @ np.arange(5.0) + rng.normal(size=40)
    # compared with the weights' own ratios: subnormal weights keep fewer digits
    w = rng.uniform(0.5, 1.0, 40) * scale
    for est, y in ((fr.LinearClassifier, yb), (fr.LinearRegressor, yr),
                   (fr.LinearClassifierCV, yb), (fr.LinearRegressorCV, yr)):
        kw = {"n_alphas": 3, "cv": 2} if est.__name__.endswith("CV") else {}
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no overflow anywhere
            a = est(random_state=0, **kw).fit(X, y, sample_weight=w)
        b = est(random_state=0, **kw).fit(X, y, sample_weight=w / w.max())
        np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="sample_weight sums to infinity"):
        fr.Problem(X, yb, loss="logistic", sample_weight=np.full(40, 1e308))


def test_labels_weights_and_seeds_are_checked_by_name():
    """Label values with no class meaning, non-numeric weights and class weights are
    refused naming the argument (not inside numpy or scikit-learn); a numpy Generator is
    a random_state (the same seed, the same bits)."""
    X, y = _binary()
    with_nan = np.array(["a", "b"] * (len(y) // 2), dtype=object)
    with_nan[3] = np.nan
    cases = [
        (dict(y=np.array(["a", 1] * (len(y) // 2), dtype=object)),
         TypeError, r"^y mixes labels of types \['int', 'str'\]"),
        (dict(y=y + 0j), TypeError, "^y holds complex numbers"),
        (dict(y=with_nan), ValueError, "^y contains NaN or infinity"),
        (dict(sample_weight=np.full(len(y), "1")), TypeError,
         "^sample_weight must be numeric, got dtype <U1"),
    ]
    for kw, error, message in cases:
        args = dict(dict(y=y), **kw)
        with pytest.raises(error, match=message):
            LinearClassifier().fit(X, **args)
    with pytest.raises(TypeError, match=r"^class_weight\[1\] must be a number, got 'a'"):
        LinearClassifier(class_weight={0: 1.0, 1: "a"}).fit(X, y)
    for classes, message in (([0.0, 1.0, np.nan], "^classes contains NaN or infinity"),
                             ([[0.0, 1.0]], r"^classes must be 1-dimensional")):
        with pytest.raises(ValueError, match=message):
            LinearClassifier(solver="pegasos").partial_fit(X, y, classes=classes)
    with pytest.raises(ValueError, match="^classes contains NaN or infinity"):
        fr.Problem(X, y.astype(float), loss="softmax", classes=[0.0, 1.0, np.nan])
    for est in (LinearRegressor(), fr.LinearRegressorCV(cv=2)):
        with pytest.raises(TypeError, match="^y holds complex numbers; regression targets"):
            est.fit(X, y + 0j)
    fits = [LinearClassifier(solver="sdca", random_state=np.random.default_rng(5)).fit(X, y)
            for _ in range(2)]
    assert np.array_equal(fits[0].coef_, fits[1].coef_)


def test_stale_canonical_flag_is_not_trusted():
    """A CSR X whose indices were unsorted in place after scipy cached it as canonical:
    the estimators fit its sorted copy (the fit of the dense X, X untouched), and Problem's
    refusal gives advice that works when followed."""
    X, y = _binary()
    S = sp.csr_matrix(X)
    assert S.has_canonical_format
    S.indices[:2], S.data[:2] = S.indices[1::-1].copy(), S.data[1::-1].copy()
    before = S.indices.copy()
    est = LinearClassifier(solver="sdca", random_state=0)
    np.testing.assert_allclose(est.fit(S, y).coef_,
                               LinearClassifier(solver="sdca", random_state=0).fit(X, y).coef_,
                               rtol=1e-12)
    assert np.array_equal(S.indices, before)
    # the one-vs-rest problems share one laid-out copy, the regressor has its own
    y3 = np.arange(X.shape[0]) % 3
    for make, target in ((lambda: LinearClassifier(loss="hinge", solver="sdca",
                                                   random_state=0), y3),
                         (lambda: LinearRegressor(solver="sdca", random_state=0), X[:, 0])):
        np.testing.assert_allclose(make().fit(S, target).coef_, make().fit(X, target).coef_,
                                   rtol=1e-12)
    assert np.array_equal(S.indices, before)
    with pytest.raises(ValueError, match=r"call X.has_sorted_indices = False; "
                                         r"X.sum_duplicates\(\) first"):
        fr.Problem(S, y)
    S.has_sorted_indices = False
    S.sum_duplicates()
    fr.Problem(S, y)


def test_string_labels_held_as_objects_are_saved(tmp_path):
    """Labels that are Python strings in an object array (pandas' usual dtype) fit and are
    saved as strings: the loaded model predicts the same labels."""
    X, y = _binary()
    labels = np.where(y == 1, "yes", "no").astype(object)
    est = LinearClassifier().fit(X, labels)
    model = fr.load(est.save(tmp_path / "m.frm"))
    assert model.classes.tolist() == ["no", "yes"]
    assert np.array_equal(model.predict(X), est.predict(X))
    with pytest.raises(ValueError, match=r"^classes must be a 1-d array of numbers, bools or "
                                         r"strings, got shape \(2,\) and dtype datetime64"):
        LinearClassifier().fit(X, (y + 1).astype("datetime64[D]")).to_model()


def test_memory_error_names_the_problem_size():
    """An X too wide for its weight vector (256 TiB here) fails with the problem's size
    in the message, from solve and from fit."""
    X = sp.csr_matrix((6, 2**45))
    y = np.array([1.0, -1.0] * 3)
    with pytest.raises(MemoryError, match=rf"on a problem of 6 rows and {2**45} weights"):
        fr.solve(fr.Problem(X, y), solver="sdca")
    with pytest.raises(MemoryError, match=rf"6 rows and {2**45 + 1} weights"):
        LinearClassifier(solver="sdca").fit(X, y)


@pytest.mark.parametrize("scale", [1e300, 1e-300])
def test_weights_of_extreme_scale_fit_as_their_ratios(scale):
    """class_weight and sample_weight both near the largest (or smallest) double: their
    product overflows (underflows), but only ratios matter to the fit, which equals the
    fit with the same ratios at scale 1."""
    X, y = _binary()
    ref = LinearClassifier(random_state=0, class_weight={0: 1.0, 1: 3.0}).fit(X, y)
    est = LinearClassifier(random_state=0, class_weight={0: scale, 1: 3.0 * scale})
    est.fit(X, y, sample_weight=np.full(len(y), scale))
    np.testing.assert_array_equal(est.coef_, ref.coef_)


def test_no_convergence_warning_for_a_run_without_a_certificate():
    """A run that ends 'stalled' with no certificate (L-BFGS on the lp penalty: gap NaN)
    gets no ConvergenceWarning: there is no gap above tol to report."""
    X, y = _binary()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = LinearClassifier(loss="logistic", penalty="lp", p=1.5, random_state=0).fit(X, y)
    assert est.solver_ == "lbfgs"


@pytest.mark.parametrize("fill", [1.0, np.nan])
def test_sparse_frame_with_a_nonzero_fill_value_is_refused_by_name(fill):
    # scikit-learn reads a frame of sparse columns through a scipy matrix (fill 0 only);
    # with fill 0 it fits and predicts as the dense frame does
    pd = pytest.importorskip("pandas")
    X = np.array([[1.0, 0.0], [1.0, 2.0], [0.0, 0.0], [0.0, 1.0]])
    y = np.array([0, 1, 0, 1])

    def frame(fill_b):
        return pd.DataFrame({"a": pd.arrays.SparseArray(X[:, 0], fill_value=0.0),
                             "b": pd.arrays.SparseArray(X[:, 1], fill_value=fill_b)})

    with pytest.raises(ValueError, match="^X has a pandas sparse column 'b' with fill value"):
        fr.LinearClassifier().fit(frame(fill), y)
    fitted = fr.LinearClassifier(random_state=0).fit(frame(0.0), y)
    dense = fr.LinearClassifier(random_state=0).fit(pd.DataFrame(X, columns=["a", "b"]), y)
    np.testing.assert_allclose(fitted.coef_, dense.coef_, rtol=1e-12)
    with pytest.raises(ValueError, match="^X has a pandas sparse column 'b' with fill value"):
        fitted.predict(frame(fill))
