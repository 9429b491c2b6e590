"""LinearClassifierCV and LinearRegressorCV: alpha chosen by cross-validation.

As scikit-learn's ``LogisticRegressionCV`` and ``LassoCV``: for every fold of
``cv`` (scikit-learn's ``check_cv``: stratified k-fold for classifiers) the
model is fitted for each alpha of the grid on the training part and scored on
the held-out part (``scoring``, default the estimator's ``score``: accuracy or
R^2); ``alpha_`` maximizes the mean score (the largest such alpha on ties: the
sparsest model), and the final model is fitted on all the data with it.  An alpha whose
mean score is NaN (a fold's score undefined, e.g. R^2 on a held-out fold of one row) ranks
last, as in scikit-learn's ``GridSearchCV``; when every alpha's is NaN there is nothing to
choose from and fit raises.  The folds are checked before any fit: every class of y must
have members of positive weight in every training fold (a class whose weights are all 0
is the estimator's to refuse), and every fold, training or held-out, weights of
positive sum (the fold's fit, or its weighted score, is undefined otherwise).  Folds
run in parallel threads (``n_jobs``; the solver kernels release the GIL), each
fold's fits single-threaded, so the result does not depend on ``n_jobs``.

Default grid: for penalties with an l1 term, ``n_alphas`` values from
``alpha_max`` of the whole data (fastrisk.regpath.alpha_max: the smallest
alpha with w = 0) down to ``eps * alpha_max``, geometric; for the others,
``n_alphas`` values from 1 down to ``eps``.  alpha_max uses the weights of the fit
(sample_weight times class_weight), so the grid starts where the fitted model is 0.
When the best alpha is the last of the default grid, fit warns: a better one may lie
below (a target far from 0 sets alpha_max through the penalized intercept).
"""

import inspect
import itertools
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from fastrisk.config import n_cores
from fastrisk.data import check_label_values
from fastrisk.estimators import (LinearClassifier, LinearRegressor, _canonical,
                                 _check_structure, _check_target_values, _class_weights,
                                 _mean_one, _sample_weight, one_fit_at_a_time)
from fastrisk.losses import LOSSES
from fastrisk.problem import Problem
from fastrisk.regpath import MAX_ALPHAS, alpha_max, check_alphas
from fastrisk.regularizers import make_regularizer
from fastrisk.solvers._checks import check_int, check_number

_CV_PARAMS = ("alphas", "n_alphas", "eps", "cv", "scoring", "n_jobs")


def _fold_indices(folds, n):
    """The (train, test) folds of ``cv`` as integer index arrays, refused by name when
    there are none (an empty iterable, or a generator used up by a previous fit) or a part
    is not a non-empty array of row indices in [0, n) (a boolean mask of length n is
    taken as its indices, as scikit-learn takes it)."""
    out, folds = [], iter(folds)
    for f in itertools.count(1):
        try:  # a splitter's generator unpacks the folds of an iterable cv itself
            fold = next(folds)
        except StopIteration:
            break
        except (TypeError, ValueError) as exc:
            raise ValueError(f"cv: fold {f} is not a (train, test) pair of row indices "
                             f"({exc})") from None
        try:
            train, test = fold
        except (TypeError, ValueError):
            raise ValueError(f"cv: fold {f} must be a (train, test) pair of row indices, got "
                             f"{fold!r}") from None
        pair = []
        for part, rows in (("training", train), ("held-out", test)):
            rows = np.asarray(rows)
            if rows.dtype == bool and rows.shape == (n,):
                rows = np.flatnonzero(rows)
            if rows.ndim != 1 or rows.dtype.kind not in "iu":
                raise ValueError(f"cv: the {part} part of fold {f} must be a 1-d array of "
                                 f"integer row indices, got dtype {rows.dtype}, shape "
                                 f"{rows.shape}")
            if rows.size == 0:
                raise ValueError(f"cv: the {part} part of fold {f} is empty")
            if rows.min() < 0 or rows.max() >= n:
                raise ValueError(f"cv: the {part} part of fold {f} has row indices outside "
                                 f"[0, {n}) (X has {n} rows)")
            pair.append(rows)
        out.append(tuple(pair))
    if not out:
        raise ValueError("cv gave no folds (an empty iterable, or a generator used up by a "
                         "previous fit: pass a list of folds or a splitter)")
    return out


def _scores_weighted(scorer):
    """Whether ``scorer`` takes ``sample_weight`` (scikit-learn's scorers do; a callable
    ``(estimator, X, y)`` does not, and scores the held-out rows unweighted)."""
    try:
        params = inspect.signature(scorer).parameters
    except (TypeError, ValueError):
        return True
    return "sample_weight" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _check_folds(folds, y, classifier, weights, weights_name):
    """Refuse, naming the fold, folds on which a fit or a score is undefined: a training
    fold without a class of y (its model cannot predict that class, and a binary problem
    would have one class left) and a training or held-out fold whose ``weights`` (the
    weights of the fits and of the scores, None for unit weights) are all zero."""
    n = len(folds)
    if classifier:
        classes, counts = np.unique(y, return_counts=True)
        for f, (train, _) in enumerate(folds, 1):
            missing = np.setdiff1d(classes, y[train])
            if missing.size:
                index = np.searchsorted(classes, missing)
                held = ", ".join(f"{k.item()!r} ({c} of y's {y.shape[0]} samples)"
                                 for k, c in zip(missing[:5], counts[index][:5]))
                more = f" and {missing.size - 5} more" if missing.size > 5 else ""
                raise ValueError(
                    f"cv: training fold {f} of {n} has no sample of class"
                    f"{'es' if missing.size > 1 else ''} {held}{more}; every class of y needs "
                    f"samples in every training fold: use fewer folds (cv) or a stratified "
                    f"splitter, or merge or drop the classes with fewer samples than folds")
    if weights is None:
        return
    if classifier:  # a class of positive weight whose rows all weigh 0 in a training fold
        weighted = np.unique(y[weights > 0])  # is missing from the fold's fit
        for f, (train, _) in enumerate(folds, 1):
            present = np.unique(y[train][weights[train] > 0])
            missing = np.setdiff1d(weighted, present)
            if missing.size and present.size:
                raise ValueError(
                    f"{weights_name}: training fold {f} of {n} gives every sample of class"
                    f"{'es' if missing.size > 1 else ''} "
                    f"{', '.join(repr(k.item()) for k in missing[:5])} weight 0, so its fit "
                    f"cannot predict {'them' if missing.size > 1 else 'it'}; give those "
                    f"rows positive weights or choose other folds (cv)")
    for f, (train, test) in enumerate(folds, 1):
        for part, rows, why in (("training", train, "its fit"),
                                ("held-out", test, "its weighted score")):
            if rows.shape[0] and not weights[rows].max() > 0:
                raise ValueError(
                    f"{weights_name}: {part} fold {f} of {n} has weights that are all zero, "
                    f"so {why} is undefined; give some of its rows a positive weight or "
                    f"choose other folds (cv)")


class _CVMixin:
    """Cross-validation of alpha around a LinearClassifier / LinearRegressor fit."""

    _base = None
    _classifier = False

    @property
    def alpha(self):  # the fit of the base estimator reads self.alpha
        return self.alpha_

    def _base_params(self):
        params = {k: v for k, v in self.get_params(deep=False).items() if k not in _CV_PARAMS}
        return params

    def _grid(self, X, y, sample_weight):
        if self.alphas is not None:
            return check_alphas(self.alphas)
        check_int(self.n_alphas, "n_alphas", low=1, high=MAX_ALPHAS)
        check_number(self.eps, "eps", low=0.0, high=1.0, low_open=True, high_open=True)
        split = make_regularizer(self.penalty, l1_ratio=self.l1_ratio, p=self.p).l1_l2()
        top = 0.0
        if split is not None and split[0] > 0.0:  # an l1 term: alpha_max
            classes = np.unique(y) if self._classifier else [None]
            vector = self.loss in LOSSES and LOSSES[self.loss].vector
            targets = ([np.where(y == k, 1.0, -1.0) for k in classes[-1 if len(classes) == 2
                                                                      else 0:]]
                       if self._classifier and not vector else [y])
            c = np.ones(X.shape[0]) if sample_weight is None else sample_weight
            if self._classifier and self.class_weight is not None:
                index = np.searchsorted(classes, y)
                c = c * _class_weights(self.class_weight, classes, y)[index]
            c = _mean_one(c)  # the weights of the fit (LinearClassifier.fit)
            for target in targets:  # one-vs-rest problems: the largest alpha_max
                prob = Problem(X, target, loss=self.loss, penalty=self.penalty, alpha=1.0,
                               l1_ratio=self.l1_ratio, loss_param=self.loss_param,
                               sample_weight=c, fit_intercept=self.fit_intercept,
                               intercept_scaling=self.intercept_scaling)
                top = max(top, alpha_max(prob))
        top = top if top > 0.0 else 1.0
        return np.geomspace(top, top * self.eps, int(self.n_alphas))

    @one_fit_at_a_time
    def fit(self, X, y, sample_weight=None, groups=None):
        """Choose alpha by cross-validation, then fit on all of X, y with it.

        ``groups``: the group labels of the rows, for group splitters in ``cv``
        (scikit-learn's GroupKFold, LeaveOneGroupOut, ...).

        Raises a ValueError, before any fit, on a fold that lacks a class of y in its
        training part or whose weights are all zero, and after the folds' fits when every
        alpha's mean score is NaN."""
        self._validate_params()
        # the index arrays are checked before scikit-learn's and scipy's routines read them
        X = _check_structure(X)
        if self._classifier:
            check_label_values(y, "y")
        else:
            _check_target_values(y)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             order="C", y_numeric=not self._classifier)
        if self._classifier:  # before np.unique, which cannot sort labels of mixed types
            check_classification_targets(y)
        X = _canonical(X)
        check_int(self.n_jobs, "n_jobs", low=1, allow_none=True)
        if X.shape[0] < 2:
            raise ValueError(f"cross-validation needs more than 1 sample, got n_samples = "
                             f"{X.shape[0]}")
        if sample_weight is not None:
            sample_weight = _sample_weight(sample_weight, X)
            if not sample_weight.max() > 0:
                raise ValueError("sample_weight is all zero: the weights must have a positive sum")
            # the fits and the scores depend on the weights' ratios only; scaled to a largest
            # of 1, their sums stay finite (the scorers' weighted means overflow otherwise)
            sample_weight = sample_weight / sample_weight.max()
        alphas = self._grid(X, y, sample_weight)
        folds = _fold_indices(check_cv(self.cv, y, classifier=self._classifier)
                              .split(X, y, groups), X.shape[0])
        scorer = check_scoring(self._base(), scoring=self.scoring)
        weighted_scores = _scores_weighted(scorer)
        params = dict(self._base_params(), n_threads=1)
        sw = sample_weight
        score_w = sw
        if self._classifier and self.class_weight is not None:
            classes = np.unique(y)
            cw = _class_weights(self.class_weight, classes, y)
            score_w = (np.ones(X.shape[0]) if sw is None else sw) * cw[np.searchsorted(classes, y)]
        # the fits weight a fold's rows as score_w does, up to a positive factor per class
        weights_name = ("sample_weight" if not self._classifier or self.class_weight is None
                        else "class_weight" if sw is None else "sample_weight times class_weight")
        _check_folds(folds, y, self._classifier, score_w, weights_name)

        def fold_scores(split):
            train, test = split
            out = np.empty(alphas.shape[0])
            for k, a in enumerate(alphas):
                est = self._base(**dict(params, alpha=float(a)))
                est.fit(X[train], y[train], **({} if sw is None else
                                                {"sample_weight": sw[train]}))
                score = scorer(est, X[test], y[test],
                               **({} if score_w is None or not weighted_scores else
                                  {"sample_weight": score_w[test]}))
                try:
                    out[k] = score
                except (TypeError, ValueError):
                    raise TypeError(f"scoring must return a number, got {score!r}") from None
            return out

        # the folds' threads (each fit runs one kernel thread): None means one per core
        n_jobs = min(len(folds), n_cores() if self.n_jobs is None else int(self.n_jobs))
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            scores = np.array(list(pool.map(fold_scores, folds)))
        self.alphas_ = alphas
        self.scores_ = scores  # (n_folds, n_alphas)
        mean = scores.mean(axis=0)
        # NaN ranks last (np.argmax would take a NaN as the largest): the best defined mean,
        # the first of the decreasing grid on ties
        defined = np.flatnonzero(~np.isnan(mean))
        if defined.size == 0:
            nan_folds = np.flatnonzero(np.isnan(scores).all(axis=1)) + 1
            which = (f"held-out fold{'s' if nan_folds.size > 1 else ''} "
                     f"{', '.join(map(str, nan_folds[:10]))}"
                     f"{', ...' if nan_folds.size > 10 else ''} of {scores.shape[0]} "
                     f"score{'' if nan_folds.size > 1 else 's'} NaN for every alpha"
                     if nan_folds.size else "some held-out fold scores NaN for each alpha")
            raise ValueError(
                f"scoring: the mean held-out score is NaN for every alpha, so none can be "
                f"chosen ({which}; e.g. R^2 is undefined on a held-out fold of one row); "
                f"use fewer folds (cv) or another scoring")
        best = int(defined[np.argmax(mean[defined])])
        self.alpha_ = float(alphas[best])
        if self.alphas is None and best == alphas.shape[0] - 1 and alphas.shape[0] > 1:
            warnings.warn(
                f"the best alpha is the smallest of the default grid ({self.alpha_:.3g} = eps "
                f"x alpha_max): a better one may lie below it; lower eps or pass alphas (the "
                f"intercept is penalized, so a target far from 0 sets alpha_max by its "
                f"mean: center y, or fit_intercept=False on centered data)", UserWarning)
        # the final fit is the base estimator's, on self: its alpha is alpha_
        super().fit(X, y, sample_weight=sample_weight)
        return self


class LinearClassifierCV(_CVMixin, LinearClassifier):
    """LinearClassifier with alpha chosen by cross-validation (see the module docstring).

    Parameters are LinearClassifier's (except ``alpha``) plus ``alphas`` (grid or None),
    ``n_alphas``, ``eps`` (grid depth), ``cv`` (folds, a splitter or an iterable),
    ``scoring`` (a scikit-learn scorer name or callable, which gets the held-out rows'
    weights when it takes ``sample_weight``; None: accuracy) and ``n_jobs``
    (folds fitted in parallel threads; None: all cores).  Attributes: those of
    LinearClassifier plus ``alpha_``, ``alphas_`` and ``scores_`` (n_folds, n_alphas).
    """

    _base = LinearClassifier
    _classifier = True

    def __init__(self, loss="logistic", penalty="l1", *, alphas=None, n_alphas=10, eps=1e-3,
                 cv=None, scoring=None, n_jobs=None, loss_param=None, l1_ratio=0.15, p=2.0,
                 solver="auto", tol=1e-4, max_iter=None, time_limit=None, fit_intercept=True,
                 intercept_scaling=1.0, class_weight=None, random_state=None, n_threads=None,
                 verbose=0):
        self.loss, self.penalty, self.alphas, self.n_alphas, self.eps = (loss, penalty, alphas,
                                                                         n_alphas, eps)
        self.cv, self.scoring, self.n_jobs = cv, scoring, n_jobs
        self.loss_param, self.l1_ratio, self.p, self.solver, self.tol = (loss_param, l1_ratio,
                                                                          p, solver, tol)
        self.max_iter, self.time_limit, self.fit_intercept = max_iter, time_limit, fit_intercept
        self.intercept_scaling, self.class_weight = intercept_scaling, class_weight
        self.random_state, self.n_threads, self.verbose = random_state, n_threads, verbose

    # fixed for the CV estimators: no streaming, no warm start, no Dask, no callback
    warm_start, callback, scheduler, n_partitions = False, None, None, None


class LinearRegressorCV(_CVMixin, LinearRegressor):
    """LinearRegressor with alpha chosen by cross-validation (as LinearClassifierCV;
    ``scoring`` None: R^2)."""

    _base = LinearRegressor

    def __init__(self, loss="squared", penalty="l1", *, alphas=None, n_alphas=10, eps=1e-3,
                 cv=None, scoring=None, n_jobs=None, loss_param=None, l1_ratio=0.15, p=2.0,
                 solver="auto", tol=1e-4, max_iter=None, time_limit=None, fit_intercept=True,
                 intercept_scaling=1.0, random_state=None, n_threads=None, verbose=0):
        self.loss, self.penalty, self.alphas, self.n_alphas, self.eps = (loss, penalty, alphas,
                                                                         n_alphas, eps)
        self.cv, self.scoring, self.n_jobs = cv, scoring, n_jobs
        self.loss_param, self.l1_ratio, self.p, self.solver, self.tol = (loss_param, l1_ratio,
                                                                          p, solver, tol)
        self.max_iter, self.time_limit, self.fit_intercept = max_iter, time_limit, fit_intercept
        self.intercept_scaling = intercept_scaling
        self.random_state, self.n_threads, self.verbose = random_state, n_threads, verbose

    warm_start, callback, scheduler, n_partitions = False, None, None, None
