"""LinearClassifierCV / LinearRegressorCV (fastrisk/cv.py): scikit-learn's estimator checks,
and the chosen alpha against a plain loop over the grid with scikit-learn's folds."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.utils.estimator_checks import parametrize_with_checks

import fastrisk as fr
from fastrisk.cv import LinearClassifierCV, LinearRegressorCV

# API checks at a certified 1e-8 under the default (unbounded) iteration budget; their data
# (e.g. two features near 100 with an intercept) are nearly collinear
CHECKED = [
    LinearClassifierCV(loss="logistic", penalty="l1", n_alphas=5, eps=1e-4, cv=3, tol=1e-8),
    LinearRegressorCV(loss="squared", penalty="elasticnet", l1_ratio=0.5, n_alphas=3,
                      eps=1e-2, cv=3, tol=1e-8),
]


# check_sample_weight_equivalence compares predict_proba of the weighted and the repeated
# fits to rtol 1e-7, i.e. w to ~1e-7: more than a certified J (gap <= tol J, with a round-off
# floor near 1e-11 J) determines along the flat directions of an l1-logistic optimum, as for
# scikit-learn's own tolerance-stopped solvers; the equivalence of the two objectives is
# tested within their certificates in tests/test_cd.py
# (test_sample_weights_equal_repeated_rows_within_the_certificates)
WEIGHT_CHECKS = {name: "a certified J does not fix w to the check's rtol 1e-7"
                 for name in ("check_sample_weight_equivalence_on_dense_data",
                              "check_sample_weight_equivalence_on_sparse_data")}


@parametrize_with_checks(CHECKED, expected_failed_checks=lambda est: WEIGHT_CHECKS
                         if isinstance(est, LinearClassifierCV) else {})
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        check(estimator)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_classifier_cv_picks_the_best_mean_accuracy_of_a_plain_loop(n_jobs):
    X, y = make_classification(240, 40, n_informative=5, random_state=0)
    cv = LinearClassifierCV(n_alphas=6, eps=1e-3, cv=4, tol=1e-8, n_jobs=n_jobs,
                            random_state=0).fit(X, y)
    # the reference: the same grid, scikit-learn's stratified folds, a sequential loop
    top = fr.alpha_max(fr.Problem(X, y, loss="logistic", penalty="l1", fit_intercept=True))
    alphas = np.geomspace(top, top * 1e-3, 6)
    np.testing.assert_allclose(cv.alphas_, alphas, rtol=1e-12)
    scores = np.zeros((4, 6))
    for f, (tr, te) in enumerate(StratifiedKFold(4).split(X, y)):
        for k, a in enumerate(alphas):
            est = fr.LinearClassifier(loss="logistic", penalty="l1", alpha=a, tol=1e-8,
                                      n_threads=1, random_state=0).fit(X[tr], y[tr])
            scores[f, k] = est.score(X[te], y[te])
    np.testing.assert_array_equal(cv.scores_, scores)
    assert cv.alpha_ == alphas[int(np.argmax(scores.mean(axis=0)))]
    final = fr.LinearClassifier(loss="logistic", penalty="l1", alpha=cv.alpha_, tol=1e-8).fit(X, y)
    assert abs(final.objective_ - cv.objective_) <= final.gap_ + cv.gap_


def test_regressor_cv_matches_a_plain_loop_and_is_sparse():
    X, y = make_regression(200, 30, n_informative=4, noise=1.0, random_state=1)
    cv = LinearRegressorCV(n_alphas=5, cv=KFold(3), tol=1e-8, random_state=0).fit(X, y)
    scores = np.zeros((3, 5))
    for f, (tr, te) in enumerate(KFold(3).split(X, y)):
        for k, a in enumerate(cv.alphas_):
            est = fr.LinearRegressor(loss="squared", penalty="l1", alpha=a, tol=1e-8,
                                     n_threads=1, random_state=0).fit(X[tr], y[tr])
            scores[f, k] = est.score(X[te], y[te])
    np.testing.assert_array_equal(cv.scores_, scores)
    assert cv.alpha_ == cv.alphas_[int(np.argmax(scores.mean(axis=0)))]
    assert (cv.coef_ != 0).sum() < X.shape[1]


def test_n_jobs_counts_fold_threads_not_kernel_threads(monkeypatch):
    """n_jobs above the cores runs that many fold threads without the kernels' thread
    warning (each fit runs one kernel thread) and gives the scores of n_jobs=1."""
    from fastrisk import config
    monkeypatch.setattr(config, "_WARNED", set())
    monkeypatch.setattr(config, "n_cores", lambda: 1)
    X, y = make_classification(120, 10, random_state=0)
    one = LinearClassifierCV(n_alphas=3, cv=3, n_jobs=1).fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        three = LinearClassifierCV(n_alphas=3, cv=3, n_jobs=3).fit(X, y)
    assert not [w for w in caught if "n_threads" in str(w.message)]
    np.testing.assert_array_equal(one.scores_, three.scores_)


def test_cv_validates_its_arguments():
    X, y = make_classification(60, 5, random_state=0)
    with pytest.raises(ValueError, match="n_alphas"):
        LinearClassifierCV(n_alphas=0).fit(X, y)
    with pytest.raises(ValueError, match="alphas"):
        LinearClassifierCV(alphas=[-1.0]).fit(X, y)
    with pytest.raises(ValueError, match="n_jobs"):
        LinearClassifierCV(n_jobs=0).fit(X, y)
    with pytest.raises(ValueError, match=r"^eps must be a finite number > 0 and < 1, got 1.5$"):
        LinearClassifierCV(eps=1.5).fit(X, y)
    with pytest.raises(ValueError,
                       match=r"^n_alphas must be an integer >= 1 and <= 1e\+06, got True$"):
        LinearClassifierCV(n_alphas=True).fit(X, y)
    # refused by name, not inside numpy or a comparison
    for alphas in ("a", [1e-2 + 1j], []):
        with pytest.raises(ValueError, match="^alphas must be a non-empty array"):
            LinearClassifierCV(alphas=alphas).fit(X, y)
        with pytest.raises(ValueError, match="^alphas must be a non-empty array"):
            fr.path(X, np.where(y == 1, 1.0, -1.0), alphas=alphas)
    for l1_ratio in (None, "a", 1.5):
        with pytest.raises(ValueError, match="^l1_ratio must be a finite number"):
            LinearClassifierCV(penalty="elasticnet", l1_ratio=l1_ratio).fit(X, y)
    with pytest.raises(TypeError, match=r"^y mixes labels of types \['int', 'str'\]"):
        LinearClassifierCV(cv=2).fit(X, np.array([1, "a"] * 30, dtype=object))
    for cw in ({0: -1.0, 1: 1.0}, {0: np.nan, 1: 1.0}):
        with pytest.raises(ValueError, match="^class_weight must give every class a finite"):
            LinearClassifierCV(penalty="l1", class_weight=cw, cv=2).fit(X, y)
        with pytest.raises(ValueError, match="^class_weight must give every class a finite"):
            fr.LinearClassifier(class_weight=cw).fit(X, y)


def _malformed(kind):
    """A sparse 20 x 5 matrix whose index arrays are out of range, in three formats."""
    import scipy.sparse as sp

    M = sp.csr_matrix(np.eye(20, 5))
    if kind == "csc_index":
        M = M.tocsc()
        M.indices = M.indices.copy()
        M.indices[0] = 10**7
    elif kind == "coo_row":
        M = M.tocoo()
        M.row = M.row.copy()
        M.row[0] = 10**7
    else:  # a CSR indptr that decreases
        M.indptr = M.indptr.copy()
        M.indptr[5] = 10**6
    return M


@pytest.mark.parametrize("kind", ["csc_index", "coo_row", "csr_indptr"])
@pytest.mark.parametrize("cv_class,penalty", [(LinearClassifierCV, "l1"),
                                              (LinearClassifierCV, "l2"),
                                              (LinearRegressorCV, "l1")])
def test_malformed_sparse_X_is_refused_before_any_slicing(kind, cv_class, penalty):
    """The CV estimators check X's index arrays before scikit-learn or scipy read them (a
    fold's X[train] on an out-of-range index reads outside the arrays)."""
    y = np.where(np.arange(20) % 2, 1.0, -1.0)
    with pytest.raises(ValueError, match="X"):
        cv_class(penalty=penalty, n_alphas=2, cv=2).fit(_malformed(kind), y)


def test_unsorted_csr_is_fitted_as_its_canonical_form():
    """As the plain estimators do: a CSR X with unsorted or duplicate column indices is
    fitted as the matrix it represents (a canonical copy; the caller's X unchanged)."""
    import scipy.sparse as sp

    X, y = make_classification(60, 6, random_state=0)
    M = sp.csr_matrix(X)
    perm = np.arange(M.indices.shape[0])
    for i in range(M.shape[0]):  # reverse each row's entries
        lo, hi = M.indptr[i], M.indptr[i + 1]
        perm[lo:hi] = perm[lo:hi][::-1]
    unsorted = sp.csr_matrix((M.data[perm], M.indices[perm], M.indptr), shape=M.shape)
    unsorted.has_sorted_indices = False
    before = unsorted.indices.copy()
    a = LinearClassifierCV(n_alphas=3, cv=3, random_state=0).fit(unsorted, y)
    b = LinearClassifierCV(n_alphas=3, cv=3, random_state=0).fit(M, y)
    assert np.array_equal(unsorted.indices, before)
    assert a.alpha_ == b.alpha_
    assert np.array_equal(a.coef_, b.coef_)


def _mse_with_nan(nan_alpha, nan_rows=None):
    """A scorer: minus the mean squared error, NaN for the alpha ``nan_alpha`` (on every
    held-out fold, or only on those of ``nan_rows`` rows)."""
    def scorer(est, X, y):
        if est.alpha == nan_alpha and (nan_rows is None or X.shape[0] == nan_rows):
            return np.nan
        return -np.mean((est.predict(X) - y) ** 2)
    return scorer


@pytest.mark.parametrize("nan_at,nan_rows", [(3, None), (0, None), (3, 14)])
def test_an_alpha_with_a_nan_mean_score_ranks_last(nan_at, nan_rows):
    """An alpha whose mean score is NaN (NaN on every fold, or only on the fold of 14 rows
    of KFold(3) on 40) is never chosen: alpha_ is the best defined mean of a plain NumPy
    reference, not np.argmax's choice (the NaN)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 3))
    y = X @ np.array([1.0, -2.0, 0.5])
    alphas = np.array([1.0, 0.1, 0.01, 1e-4])
    est = LinearRegressorCV(alphas=alphas, scoring=_mse_with_nan(alphas[nan_at], nan_rows),
                            cv=KFold(3), n_jobs=1, tol=1e-8, random_state=0).fit(X, y)
    assert np.isnan(est.scores_[:, nan_at]).sum() == (3 if nan_rows is None else 1)
    mean = est.scores_.mean(axis=0)
    defined = np.flatnonzero(~np.isnan(mean))
    assert est.alpha_ == alphas[defined[np.argmax(mean[defined])]]
    assert np.argmax(mean) == nan_at and est.alpha_ != alphas[nan_at]


def test_classifier_cv_ranks_a_nan_mean_score_last():
    """As for the regressor: a scoring callable that is NaN for the alpha of the best
    accuracy leaves alpha_ the best of the other alphas' mean accuracies."""
    X, y = make_classification(120, 10, random_state=0)
    best = LinearClassifierCV(n_alphas=5, cv=3, n_jobs=1, random_state=0).fit(X, y)

    def scorer(est, X, y):
        return np.nan if est.alpha == best.alpha_ else est.score(X, y)

    est = LinearClassifierCV(n_alphas=5, cv=3, n_jobs=1, scoring=scorer,
                             random_state=0).fit(X, y)
    mean = best.scores_.mean(axis=0)
    mean[best.alphas_ == best.alpha_] = -np.inf
    assert est.alpha_ == best.alphas_[np.argmax(mean)]


def test_every_mean_score_nan_raises_naming_scoring_and_cv():
    """R^2 on held-out folds of one row (5 rows, the default 5 folds) is NaN for every fold
    and alpha: fit raises, naming the folds, scoring and cv, instead of fitting the first
    alpha of the grid."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(5, 3))
    y = X @ np.array([1.0, -2.0, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's UndefinedMetricWarning
        with pytest.raises(ValueError, match=r"^scoring: the mean held-out score is NaN for "
                           r"every alpha.*held-out folds 1, 2, 3, 4, 5 of 5 score NaN.*"
                           r"use fewer folds \(cv\) or another scoring$"):
            LinearRegressorCV(n_jobs=1).fit(X, y)
    # another scoring or fewer folds fit
    LinearRegressorCV(n_jobs=1, scoring="neg_mean_squared_error").fit(X, y)


@pytest.mark.parametrize("zero,part", [(slice(0, 10), "held-out fold 1 of 3"),
                                       (slice(10, 30), "training fold 1 of 3")])
def test_a_fold_with_all_zero_weights_is_refused_by_fold_before_any_fit(zero, part,
                                                                          monkeypatch):
    """Weights legal for fit (non-negative, positive sum) but zero on all of a fold's
    held-out or training rows: a ValueError naming sample_weight and the fold, raised
    before any fold's fit (the fit is replaced by a failure)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 5))
    y = X @ rng.normal(size=5)
    sw = np.ones(30)
    sw[zero] = 0.0

    def no_fit(self, *args, **kwargs):
        raise AssertionError("a fold was fitted")

    monkeypatch.setattr(fr.LinearRegressor, "fit", no_fit)
    with pytest.raises(ValueError, match=rf"^sample_weight: {part} has weights that are all "
                       r"zero"):
        LinearRegressorCV(cv=KFold(3), n_jobs=1).fit(X, y, sample_weight=sw)


def test_a_held_out_fold_of_zero_class_weight_is_refused_naming_class_weight():
    """A class weight of 0 makes a held-out fold of that class only weigh nothing: the
    error names class_weight and the fold."""
    X, y = make_classification(60, 5, random_state=0)
    order = np.argsort(y, kind="stable")
    with pytest.raises(ValueError, match=r"^class_weight: held-out fold 1 of 3 has weights "
                       r"that are all zero"):
        LinearClassifierCV(cv=KFold(3), class_weight={0: 0.0, 1: 1.0},
                           n_jobs=1).fit(X[order], y[order])


@pytest.mark.parametrize("y,cv,message", [
    (np.where(np.arange(30) == 0, 1, -1), 3,
     r"^cv: training fold 1 of 3 has no sample of class 1 \(1 of y's 30 samples\); "),
    (np.repeat([0, 1, 2], 10), KFold(3),
     r"^cv: training fold 1 of 3 has no sample of class 0 \(10 of y's 30 samples\); "),
])
def test_a_training_fold_without_a_class_is_refused_naming_fold_and_counts(y, cv, message):
    """A class absent from a training fold (one member held out by stratified folds, or
    unshuffled KFold on sorted labels) is refused naming the fold, the class and its count
    in y, where the fold's fit said y held one class or fitted a model without it."""
    X = np.random.default_rng(5).normal(size=(30, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # StratifiedKFold: a class with fewer members
        with pytest.raises(ValueError, match=message + r".*use fewer folds \(cv\)"):
            LinearClassifierCV(cv=cv, n_jobs=1).fit(X, y)


def test_group_splitters_get_the_groups():
    # GroupKFold needs fit's groups; its folds keep each group on one side, so the
    # scores equal those of the same folds passed as a list
    from sklearn.model_selection import GroupKFold
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] > 0).astype(int)
    groups = np.repeat(np.arange(12), 5)
    est = fr.LinearClassifierCV(n_alphas=3, cv=GroupKFold(3)).fit(X, y, groups=groups)
    folds = list(GroupKFold(3).split(X, y, groups))
    same = fr.LinearClassifierCV(n_alphas=3, cv=folds).fit(X, y)
    np.testing.assert_array_equal(est.scores_, same.scores_)
    for train, test in folds:
        assert not set(groups[train]) & set(groups[test])


@pytest.mark.parametrize("cv, message", [
    ([], "^cv gave no folds"),
    ([(np.arange(30), np.array([30, 99]))], "^cv: the held-out part of fold 1 has row indices "
                                            "outside"),
    ([(np.arange(30.0), np.arange(30.0, 40.0))], "^cv: the training part of fold 1 must be a "
                                                 "1-d array of integer"),
    ([(np.arange(40), np.array([], dtype=int))], "^cv: the held-out part of fold 1 is empty"),
])
def test_bad_folds_are_refused_by_name(cv, message):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match=message):
        fr.LinearClassifierCV(n_alphas=2, cv=cv).fit(X, y)


def test_a_used_up_generator_of_folds_is_refused_at_the_second_fit():
    from sklearn.model_selection import KFold
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=40)
    est = fr.LinearRegressorCV(n_alphas=2, cv=KFold(3).split(X))
    est.fit(X, y)
    with pytest.raises(ValueError, match="^cv gave no folds"):
        est.fit(X, y)


def test_a_scorer_without_sample_weight_scores_unweighted():
    # a callable (estimator, X, y) with class weights: scored unweighted, as the same
    # folds scored by hand (cv=3 is StratifiedKFold(3) for a classifier; each fold's fit a
    # LinearClassifier with the CV estimator's settings on one thread, as the folds run);
    # the default scorer weights the held-out rows by the class weights of all of y
    from sklearn.metrics import accuracy_score
    from sklearn.utils.class_weight import compute_class_weight

    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=60) > 0.3).astype(int)

    def accuracy(est, X, y):
        return float(np.mean(est.predict(X) == y))

    est = fr.LinearClassifierCV(n_alphas=2, cv=3, scoring=accuracy, class_weight="balanced",
                                random_state=0).fit(X, y)
    weighted = fr.LinearClassifierCV(n_alphas=2, cv=3, class_weight="balanced",
                                     random_state=0).fit(X, y)
    assert weighted.alphas_.tolist() == est.alphas_.tolist()
    cw = compute_class_weight("balanced", classes=np.unique(y), y=y)[y]
    plain, balanced = np.empty((3, 2)), np.empty((3, 2))
    for f, (train, test) in enumerate(StratifiedKFold(3).split(X, y)):
        for k, alpha in enumerate(est.alphas_):
            fit = fr.LinearClassifier(loss="logistic", penalty="l1", alpha=float(alpha),
                                      class_weight="balanced", random_state=0,
                                      n_threads=1).fit(X[train], y[train])
            pred = fit.predict(X[test])
            plain[f, k] = np.mean(pred == y[test])
            balanced[f, k] = accuracy_score(y[test], pred, sample_weight=cw[test])
    np.testing.assert_array_equal(est.scores_, plain)
    np.testing.assert_array_equal(weighted.scores_, balanced)
    assert not np.array_equal(plain, balanced)  # the class weights change the scores


@pytest.mark.parametrize("alphas", [[[1.0, 2.0], [3.0, 4.0]], 1.0])
def test_alphas_must_be_a_1d_grid(alphas):
    X = np.random.default_rng(4).normal(size=(30, 3))
    with pytest.raises(ValueError, match="^alphas must be a 1-d array"):
        fr.LinearRegressorCV(alphas=alphas, cv=3).fit(X, X[:, 0])


@pytest.mark.parametrize("make, loss", [(fr.LinearClassifierCV, "hinge"),
                                        (fr.LinearClassifierCV, "softmax"),
                                        (fr.LinearRegressorCV, "absolute")])
def test_default_grid_starts_where_the_model_is_zero_for_every_loss(make, loss):
    # non-smooth and vector losses get alpha_max from the risk's subgradient at 0: the
    # fit at the grid's first alpha is the zero model, the smallest alpha's is not
    from scipy.optimize import minimize_scalar

    rng = np.random.default_rng(5)
    X = rng.normal(size=(90, 4))
    y = X[:, 0] + 0.3 * rng.normal(size=90)
    if make is fr.LinearClassifierCV:
        y = np.digitize(y, [-0.5, 0.5]) if loss == "softmax" else (y > 0).astype(int)
    est = make(loss=loss, n_alphas=4, eps=1e-3, cv=3, fit_intercept=False,
               solver="bmrm", tol=1e-6).fit(X, y)
    # alpha_max = ||X^T G||_inf / m with G the risk's gradient in the scores at w = 0 (unit
    # weights, no intercept; every loss here is differentiable at 0): hinge -y (labels
    # -1/+1, every margin 0 < 1), absolute sign(0 - y), softmax 1/k - [y = class] (k x d)
    m = X.shape[0]
    if loss == "softmax":
        G = np.full((m, 3), 1.0 / 3)
        G[np.arange(m), y] -= 1.0
    else:
        G = (-np.where(y == 1, 1.0, -1.0) if loss == "hinge" else -np.sign(y))[:, None]
    grad = X.T @ G / m
    assert est.alphas_[0] == pytest.approx(np.abs(grad).max(), rel=1e-12)

    def risk(W):  # (d, k) weights, NumPy
        F = X @ W
        if loss == "hinge":
            return np.maximum(0.0, 1.0 - np.where(y == 1, 1.0, -1.0) * F[:, 0]).mean()
        if loss == "absolute":
            return np.abs(F[:, 0] - y).mean()
        return (np.logaddexp.reduce(F, axis=1) - F[np.arange(m), y]).mean()

    # just below alpha_max, w = 0 is not optimal: J decreases by some `drop` along the
    # weight of the largest |gradient| (a 1-D minimization in NumPy), so J* <= J(0) - drop,
    # and a fit certified to tol < drop / J(0) cannot be w = 0 (whose J(0) - J* >= drop >
    # tol J(0)); converged, without a ConvergenceWarning
    alpha = est.alphas_[0] * 0.999
    e = np.zeros_like(grad)
    e[np.unravel_index(np.argmax(np.abs(grad)), grad.shape)] = 1.0
    line = minimize_scalar(lambda t: risk(t * e) + alpha * abs(t), bounds=(-10.0, 10.0),
                           method="bounded", options={"xatol": 1e-12})
    J0 = risk(0 * e)
    drop = J0 - line.fun
    assert drop > 0
    base = {"loss": loss, "penalty": "l1", "fit_intercept": False, "solver": "bmrm"}
    single = fr.LinearClassifier if make is fr.LinearClassifierCV else fr.LinearRegressor
    top = single(alpha=est.alphas_[0] * 1.0001, tol=1e-6, **base).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        below = single(alpha=alpha, tol=min(1e-6, 0.5 * drop / J0), **base).fit(X, y)
    low = single(alpha=est.alphas_[-1], tol=1e-6, **base).fit(X, y)
    assert np.abs(top.coef_).max() < 1e-8 < np.abs(low.coef_).max()
    assert np.abs(below.coef_).max() > 0


def test_a_class_weighted_zero_in_a_training_fold_is_refused_naming_the_fold():
    from sklearn.model_selection import StratifiedKFold
    rng = np.random.default_rng(6)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    folds = list(StratifiedKFold(3).split(X, y))
    w = np.ones(60)
    w[folds[0][0][y[folds[0][0]] == 1]] = 0.0  # class 1 weighs 0 in training fold 1 only
    with pytest.raises(ValueError, match="^sample_weight: training fold 1 of 3 gives every "
                                         "sample of class 1 weight 0"):
        fr.LinearClassifierCV(n_alphas=2, cv=folds).fit(X, y, sample_weight=w)


def test_a_best_alpha_at_the_end_of_the_default_grid_warns():
    # y far from 0 with a penalized intercept: alpha_max follows mean(y), and the best
    # alpha of the default grid is its smallest
    rng = np.random.default_rng(7)
    X = rng.normal(size=(200, 5))
    y = 1000.0 + X @ [1.0, 0.5, 0.0, 0.0, 0.0] + 0.1 * rng.normal(size=200)
    with pytest.warns(UserWarning, match="^the best alpha is the smallest of the default grid"):
        est = fr.LinearRegressorCV(cv=3).fit(X, y)
    assert est.alpha_ == est.alphas_[-1]
