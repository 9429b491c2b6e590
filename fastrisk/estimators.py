"""scikit-learn estimators: LinearClassifier and LinearRegressor.

Both minimize ``J(w) = alpha * Omega(w) + (1/m) sum_i c_i loss(<w, x_i>, y_i)``
(docs/math.md §1) with any solver of the registry (``solver="auto"`` picks one from
measurements, see fastrisk/solvers/auto.py; the choice is in ``solver_``).

* ``sample_weight`` is rescaled to mean 1 (docs/math.md §1: "c_i mean 1"), so an
  integer weight is exactly the same as repeating the sample, and ``alpha``
  keeps its meaning; ``class_weight`` then multiplies the weights per class.
* Classifiers with a binary loss (hinge, logistic, ...) and more than two
  classes fit one-vs-rest: one binary problem per class, the problems solved
  in parallel threads (the kernels release the GIL; each problem gets
  ``n_threads // n_parallel`` threads so the total stays ``n_threads``).
  The vector losses ``softmax`` and ``multiclass_hinge`` fit all classes
  jointly (one weight matrix) instead.
* The intercept is the weight of a constant feature of value
  ``intercept_scaling``, regularized like the other weights (as in
  LIBLINEAR), so every solver minimizes the same objective.
* ``scheduler`` (a Dask scheduler address or a ``distributed.Client``) builds
  the problem with ``fastrisk.distributed.make_dask_problem``: the rows are
  cut into ``n_partitions`` partitions held by the Dask workers, and the risk
  oracle runs there (Teo et al. 2007, section 4).  Only the solvers that need no
  more than the oracle (``SolverInfo.oracle_only``, listed by ``dask_solvers()``)
  run on such a problem; ``solver="auto"`` picks among them.  With the same partition sizes and
  threads per partition the Dask oracle returns the local oracle's bits, so
  the fit equals the local fit with the same ``n_partitions`` and ``n_threads``.
"""

import contextlib
import functools
import math
import numbers
import sys
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import _check_partial_fit_first_call, check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from fastrisk.config import one_thread_at_a_time, resolve_n_threads
from fastrisk.data import (Dataset, canonical_csr, check_label_values, check_sparse_structure,
                           encode_labels, refuse_masked)
from fastrisk.losses import LOSSES
from fastrisk.model import LinearModel, scores_to_proba
from fastrisk.problem import Problem
from fastrisk.solvers import SOLVERS, choose_solver, sized_memory_errors, solvers_for
from fastrisk.solvers._checks import StartMismatch, check_bool, check_int
from fastrisk.solvers.auto import default_budget, run as run_auto

CLASSIFIER_TASKS = ("binary", "multiclass")
REGRESSOR_TASKS = ("regression", "counts")
BINARY_CLASSES = np.array([-1.0, 1.0])
# the parameters that set the problem a fit solves and its solver: partial_fit keeps them,
# warm_start continues a solver's state only while they are kept (but alpha)
PROBLEM_PARAMS = ("loss", "loss_param", "penalty", "alpha", "l1_ratio", "p", "solver",
                  "fit_intercept", "intercept_scaling")


def _check_structure(X):
    """Check a sparse X's index arrays before scikit-learn's or scipy's routines read them
    (CSR index arrays of other integer dtypes are copied to int64, which scipy's routines
    need), and refuse by name values that are not real numbers: complex ones, and strings,
    bytes, dates and durations, which a cast to float would parse or reinterpret; and a
    pandas frame of sparse columns (the one kind with a ``.sparse`` accessor) with a fill
    value other than 0: scikit-learn reads such a frame as a scipy matrix, and pandas
    refuses that conversion with a message that names no argument."""
    refuse_masked(X, "X")
    sparse_frame = hasattr(X, "sparse") and hasattr(X, "columns")
    for column, dtype in X.dtypes.items() if sparse_frame else ():
        fill = getattr(dtype, "fill_value", 0)
        if not fill == 0:
            raise ValueError(f"X has a pandas sparse column {column!r} with fill value {fill}; "
                             "give it fill value 0 or convert X with X.sparse.to_dense()")
    if isinstance(X, (list, tuple)):
        try:  # as scikit-learn's validation would, to see the element type
            X = np.asarray(X)
        except ValueError as exc:  # ragged rows
            raise ValueError(f"X must be a 2-D array of real numbers: {exc}") from None
    if sp.issparse(X):
        check_sparse_structure(X, "X")
        itypes = {X.indices.dtype, X.indptr.dtype} if X.format == "csr" else set()
        if itypes and (len(itypes) > 1 or not itypes <= {np.dtype(np.int32), np.dtype(np.int64)}):
            X = type(X)((X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)),
                        shape=X.shape)
    kind = getattr(getattr(X, "dtype", None), "kind", None)
    if kind == "c":
        raise ValueError("X: Complex data not supported (X must be real)")
    if kind is not None and kind in "USMmV":
        raise ValueError(f"X must hold real numbers, got dtype {X.dtype}")
    return X


def _check_X(est, X, reset):
    """X for prediction: the product ``X @ coef.T`` reads a dense X in any memory order and
    a CSR X with unsorted or duplicate indices, so neither is copied."""
    X = _check_structure(X)
    return validate_data(est, X, reset=reset, accept_sparse="csr",
                         dtype=[np.float64, np.float32])


def _canonical(X):
    """X, or for a CSR X with unsorted or duplicate indices its canonical copy (decided by
    reading the indices: scipy's cached flag is stale after an in-place change)."""
    if sp.issparse(X) and not check_sparse_structure(X, "X"):
        return canonical_csr(X)
    return X


def _check_target_values(y):
    """Refuse by name complex regression targets (scikit-learn's message prints y whole)
    and a masked y with masked entries (its conversion drops the mask)."""
    refuse_masked(y, "y")
    if not sp.issparse(y) and np.asarray(y).dtype.kind == "c":
        raise TypeError("y holds complex numbers; regression targets must be real")


def _sample_weight(sample_weight, X):
    """scikit-learn's checked sample_weight (float64, non-negative); values its float
    conversion would parse (strings) are refused by name, as Problem refuses them."""
    if sample_weight is not None and not sp.issparse(sample_weight):
        dtype = np.asarray(refuse_masked(sample_weight, "sample_weight")).dtype
        if dtype.kind not in "biuf":
            raise TypeError(f"sample_weight must be numeric, got dtype {dtype}")
    return _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)


def _class_weights(class_weight, classes, y):
    """The weight of each class (scikit-learn's compute_class_weight), refused by name when
    one is negative or not finite (it would reach the solvers as a bad sample weight)."""
    if isinstance(class_weight, dict):
        for key, value in class_weight.items():
            if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)):
                raise TypeError(f"class_weight[{key!r}] must be a number, got {value!r}")
    weights = np.asarray(compute_class_weight(class_weight, classes=classes, y=y),
                         dtype=np.float64)
    bad = ~(np.isfinite(weights) & (weights >= 0))
    if bad.any():
        raise ValueError(f"class_weight must give every class a finite weight >= 0, got "
                         f"{float(weights[bad][0])!r} for class {classes[bad][0].item()!r}")
    return weights


def _largest_one(c):
    """The non-negative weights c divided by their largest (as they are when all are 0)."""
    top = c.max()
    return c / top if top > 0 else c


def _mean_one(c):
    """The non-negative weights c rescaled to mean 1, by their largest first: c.sum() would
    overflow for weights near the largest double and n / c.sum() for subnormal ones."""
    if not c.max() > 0:
        raise ValueError("sample_weight must have a positive sum")
    c = _largest_one(c)
    return c * (c.shape[0] / c.sum())


def _seed(random_state):
    """One integer seed from ``random_state`` (same random_state -> same seed -> same bits);
    a RandomState or Generator is advanced by the draw, as scikit-learn's estimators do."""
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(np.iinfo(np.int32).max))
    try:
        rng = check_random_state(random_state)
    except ValueError as exc:  # numpy's message names no argument
        raise ValueError(f"random_state must be None, an integer from 0 to 2**32 - 1, a "
                         f"numpy RandomState or Generator, got {random_state!r} ({exc})") from None
    return int(rng.randint(np.iinfo(np.int32).max))


def one_fit_at_a_time(method):
    """``method`` (fit, partial_fit) refused with a RuntimeError while another thread runs
    one of them on the same estimator: both would write its fitted attributes.

    A call that raises (refused input, a solver's numerical failure) leaves the estimator
    as it was before the call: the fitted attributes it set on the way (``classes_``,
    ``n_features_in_``, ...) are put back, so a corrected retry sees the previous fit, or
    none.  The attributes are replaced, never changed in place, so a shallow copy of them
    is the whole state.
    """
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        message = (f"{type(self).__name__}.{method.__name__}: this estimator is being fitted "
                   f"in another thread; give each thread its own (sklearn.base.clone)")
        with one_thread_at_a_time(self, message):
            before = dict(vars(self))
            try:
                return method(self, *args, **kwargs)
            except BaseException:
                vars(self).clear()
                vars(self).update(before)
                raise
    return run


def _streaming(solver):
    """partial_fit's options: one ordered epoch per chunk, plus the solver's own
    (SolverInfo.stream_options, e.g. the Pegasos family's last iterate)."""
    return dict({"max_iter": 1, "shuffle": False}, **dict(SOLVERS[solver].stream_options))


def _continuation(info, previous, problem, changed):
    """``start=`` to continue from a previous Result, as the solver's record declares
    (SolverInfo.start): its state, its dual or its weights.  ``changed``: the parameters of
    PROBLEM_PARAMS set differently since that fit.  Weights start any problem of their
    shape, and a dual start is checked by its solver (rebuilt from the weights when it does
    not fit); a state continues one run of its solver on one problem (an alpha change the
    solver checks itself), so after other changes the run starts cold, with a warning."""
    if info.start is None:
        warnings.warn(f"solver {info.name!r} cannot continue from a previous fit; warm_start "
                      "is ignored", UserWarning, stacklevel=6)
        return {}
    why = None
    if previous.w.shape != (problem.n_weights,):
        why = f"the problem has {problem.n_weights} weights, the previous fit {previous.w.size}"
    elif info.start == "state" and previous.solver != info.name:
        why = f"the previous fit's state is solver {previous.solver!r}'s"
    elif info.start == "state" and set(changed) - {"alpha"}:
        why = f"{', '.join(sorted(set(changed) - {'alpha'}))} changed since the previous fit"
    if why is not None:
        warnings.warn(f"warm_start: {why}; solver {info.name!r} starts cold", UserWarning,
                      stacklevel=6)
        return {}
    return {"start": previous}


def _same(a, b):
    """Whether two parameter values are equal (False when == gives no truth value)."""
    try:
        return a is b or bool(a == b)
    except (TypeError, ValueError):  # values without a truth value for ==
        return False


def dask_solvers():
    """The solvers that run on a Dask problem (they need only the risk oracle)."""
    return sorted(name for name, info in SOLVERS.items() if info.oracle_only)


def _streams(solver):
    return isinstance(solver, str) and solver in SOLVERS and SOLVERS[solver].streams


def _stop_on(event, callback):
    """A callback that also stops the run once ``event`` is set (Ctrl-C in another thread)."""
    def check(result):
        if event.is_set():
            return False
        return None if callback is None else callback(result)

    return check


class _LinearModelBase(BaseEstimator):
    """Fitting and prediction shared by the classifier and the regressor."""

    _tasks = ()

    def _validate_params(self):
        if not isinstance(self.loss, str) or self.loss not in LOSSES \
                or LOSSES[self.loss].task not in self._tasks:
            allowed = sorted(n for n, s in LOSSES.items() if s.task in self._tasks)
            raise ValueError(f"loss must be one of {allowed}, got {self.loss!r}")
        if self.solver != "auto" and (not isinstance(self.solver, str)
                                      or self.solver not in SOLVERS):
            raise ValueError(f"solver must be 'auto' or one of {sorted(SOLVERS)}, "
                             f"got {self.solver!r}")
        check_int(self.max_iter, "max_iter", low=1, allow_none=True)
        check_bool(self.warm_start, "warm_start")
        check_int(self.verbose, "verbose", low=0)
        check_int(self.n_partitions, "n_partitions", low=1, allow_none=True)
        if self.scheduler is not None and self.solver != "auto" \
                and not SOLVERS[self.solver].oracle_only:
            raise ValueError(f"solver={self.solver!r} cannot run with scheduler=: a Dask "
                             f"problem has only its risk oracle; use 'auto' or one of "
                             f"{dask_solvers()}")

    @contextlib.contextmanager
    def _cluster(self):
        """The dask Client of ``scheduler`` during a fit (None without one); a client made
        here from an address is closed afterwards."""
        if self.scheduler is None:
            yield None
            return
        from fastrisk.distributed import check_client, connect

        if not isinstance(self.scheduler, str):
            yield check_client(self.scheduler, "scheduler")
            return

        with connect(self.scheduler, "scheduler", set_as_default=False,
                     direct_to_workers=True) as client:
            yield client

    def _threads(self):
        """Threads in total, or with a scheduler the threads of each partition task (None: 1)."""
        if self.scheduler is not None:
            return 1 if self.n_threads is None else resolve_n_threads(self.n_threads)
        return resolve_n_threads(self.n_threads)

    def _layout(self, X, client):
        """X checked and laid out once for the fit's problems (a Dataset, which every
        one-vs-rest problem shares); a CSR X with unsorted or duplicate indices becomes its
        canonical copy, as scikit-learn's estimators accept such X.  On Dask the matrix,
        which make_dask_problem splits into blocks."""
        if client is not None:
            return _canonical(X)
        return Dataset(X, intercept_scaling=self.intercept_scaling if self.fit_intercept
                       else 0.0, repair=True)

    def _problem(self, X, y, sample_weight, n_threads, classes=None, client=None):
        """The local Problem, or with a client the problem whose oracle runs on Dask."""
        options = dict(loss=self.loss, penalty=self.penalty, alpha=self.alpha,
                       loss_param=self.loss_param, l1_ratio=self.l1_ratio, p=self.p,
                       sample_weight=sample_weight, fit_intercept=self.fit_intercept,
                       intercept_scaling=self.intercept_scaling, n_threads=n_threads)
        if client is None:
            return Problem(X, y, n_partitions=self.n_partitions or 1, classes=classes, **options)
        from fastrisk.distributed import make_dask_problem

        return make_dask_problem(X, y, client=client, n_partitions=self.n_partitions, **options)

    def _solve(self, problem, seed, previous=None, stop=None, changed=(), **overrides):
        """Run the solver on one problem; returns (Result, solver name).

        ``previous``: the Result of the previous fit of the same problem, to continue
        from (see ``_continuation``; ``changed``: the parameters set differently since);
        ``stop``: an Event that ends the run (Ctrl-C).
        """
        name = choose_solver(problem) if self.solver == "auto" else self.solver
        info = SOLVERS[name]
        info.check(problem)
        callback = self.callback if stop is None else _stop_on(stop, self.callback)
        options = dict(tol=self.tol, time_limit=self.time_limit, callback=callback,
                       verbose=self.verbose, random_state=seed)
        if self.max_iter is not None:
            options["max_iter"] = self.max_iter
        options.update(overrides)
        if self.solver == "auto":
            options = default_budget(options, name)
        if previous is not None:
            options.update(_continuation(info, previous, problem, changed))
        run = (lambda opts: run_auto(problem, name, opts)) if self.solver == "auto" \
            else (lambda opts: info.func(problem, **opts))
        try:
            with sized_memory_errors(problem, name):
                try:
                    result = run(options)
                except StartMismatch as exc:
                    if overrides:  # partial_fit: the chunks must continue one run
                        raise ValueError(f"partial_fit: {exc}; the solver's options cannot "
                                         "change between partial_fit calls") from None
                    warnings.warn(f"warm_start: {exc}; solver {name!r} starts cold",
                                  UserWarning, stacklevel=5)
                    result = run({k: v for k, v in options.items() if k != "start"})
            # auto's probe may hand over to another solver (fastrisk/solvers/auto.py)
            name = result.solver if "probe" in result.extra else name
        except FloatingPointError as exc:
            others = [i.name for i in solvers_for(problem) if i.name != name and not i.epochs]
            raise FloatingPointError(
                f"{exc}; with this estimator: standardize X (and y for regression), raise "
                f"alpha, or use a batch solver ({others})") from None
        finally:
            if self.scheduler is not None:
                problem.oracle.close()  # release the partitions on the workers
        if stop is not None and stop.is_set() and result.status == "callback":
            result.status = "interrupted"
        self._check_divergence(problem, result, name)
        if result.status == "interrupted":
            warnings.warn(f"solver {name!r} was interrupted; the estimator keeps the iterate "
                          "reached so far", UserWarning, stacklevel=5)
        if result.status in ("max_iter", "time_limit") and math.isfinite(result.gap) \
                and not overrides:
            warnings.warn(f"solver {name!r} stopped on {result.status} with a certified gap "
                          f"{result.gap:.3g} above tol * J = {self.tol * result.objective:.3g}; "
                          "increase max_iter or time_limit", ConvergenceWarning, stacklevel=5)
        if result.status == "stalled" and math.isfinite(result.gap) \
                and result.gap > self.tol * result.objective and not overrides:
            warnings.warn(f"solver {name!r} stalled (its steps no longer improve J or its "
                          f"bound) with a certified gap {result.gap:.3g} above tol * J = "
                          f"{self.tol * result.objective:.3g}; raise alpha or tol, standardize "
                          "X, or try another solver", ConvergenceWarning, stacklevel=5)
        return result, name

    @staticmethod
    def _check_divergence(problem, result, name):
        """Warn when a run ends above J(0): the zero model is better, the steps diverged
        (stochastic solvers with unbounded loss derivatives, e.g. squared loss on raw y)."""
        if not SOLVERS[name].epochs:
            return
        J0 = problem.objective_at_zero()
        if not result.objective <= J0 + 1e-12 * abs(J0):  # rounding: J0's order of summation
            warnings.warn(f"solver {name!r} diverged: J(w) = {result.objective:.6g} is above "
                          f"J(0) = {J0:.6g}; standardize X (and y for regression), raise "
                          f"alpha, or use a batch solver", ConvergenceWarning, stacklevel=6)

    def _previous(self, n_problems, streaming):
        """(Results of the previous fit to continue from (warm_start or partial_fit), or None
        per problem; the PROBLEM_PARAMS changed since that fit).

        partial_fit continues one run: a change of those parameters is refused by name."""
        previous = getattr(self, "_results", None)
        if not ((self.warm_start or streaming) and previous and len(previous) == n_problems):
            return [None] * n_problems, ()
        before = self._fitted_params
        changed = tuple(k for k in PROBLEM_PARAMS if not _same(getattr(self, k), before[k]))
        if streaming and changed:
            told = ", ".join(f"{k} from {before[k]!r} to {getattr(self, k)!r}" for k in changed)
            raise ValueError(f"partial_fit continues the run of the previous calls, whose "
                             f"problem and solver cannot change: {told}; call fit to start "
                             f"a new run")
        return previous, changed

    def _store(self, results, names, joint):
        """Set the fitted attributes from the solver results (one per problem)."""
        self._results = results
        self._fitted_params = {k: getattr(self, k) for k in PROBLEM_PARAMS}
        self.solver_ = names[0] if len(set(names)) == 1 else names
        self.n_iter_ = max(r.n_iter for r in results)
        self.status_ = [r.status for r in results] if len(results) > 1 else results[0].status
        self.objective_ = (np.array([r.objective for r in results]) if len(results) > 1
                           else results[0].objective)
        self.gap_ = np.array([r.gap for r in results]) if len(results) > 1 else results[0].gap
        self.history_ = [r.history for r in results] if len(results) > 1 else results[0].history
        if joint:  # one problem: the vector loss's (k, d) or a single binary / real score
            return results[0].coef_, results[0].intercept_
        coef = np.vstack([r.coef_ for r in results])
        intercept = np.array([r.intercept_ for r in results], dtype=np.float64)
        return coef, intercept

    def _decision(self, X):
        check_is_fitted(self, "coef_")
        X = _check_X(self, X, reset=False)
        return np.asarray(X @ self.coef_.T, dtype=np.float64) + self.intercept_

    def to_model(self):
        """The fitted model as a LinearModel (see fastrisk/model.py)."""
        check_is_fitted(self, "coef_")
        coef = self.coef_
        intercept = self.intercept_
        if coef.ndim == 2 and coef.shape[0] == 1:
            coef, intercept = coef[0], float(intercept[0])
        info = {"objective": float(np.max(self.objective_)), "gap": float(np.max(self.gap_)),
                "n_iter": int(self.n_iter_), "fit_intercept": bool(self.fit_intercept),
                "intercept_scaling": float(self.intercept_scaling)}
        solver = self.solver_ if isinstance(self.solver_, str) else ",".join(self.solver_)
        return LinearModel(coef, intercept, classes=getattr(self, "classes_", None),
                           loss=self.loss, loss_param=self.loss_param, penalty=self.penalty,
                           alpha=self.alpha, solver=solver, n_samples=self._n_samples,
                           l1_ratio=self.l1_ratio, p=self.p, info=info,
                           feature_names=getattr(self, "feature_names_in_", None))

    def save(self, path):
        """Write the fitted model (npz + JSON; read it back with ``fastrisk.load``)."""
        return self.to_model().save(path)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class LinearClassifier(ClassifierMixin, _LinearModelBase):
    """Linear classifier minimizing ``alpha * Omega(w) + (1/m) sum_i c_i loss(<w, x_i>, y_i)``.

    Parameters
    ----------
    loss : a binary loss ("hinge", "logistic", "squared_hinge", "smoothed_hinge", ...; one-vs-rest
        for more than two classes) or a vector loss ("softmax", "multiclass_hinge").
    penalty : "l2", "l1", "elasticnet" (``l1_ratio``) or "lp" (``p``).
    alpha : regularization strength, as in ``SGDClassifier(alpha=...)``.
    loss_param : the loss parameter where it has one (smoothed_hinge gamma).
    solver : "auto" (see fastrisk/solvers/auto.py) or a name of ``fastrisk.SOLVERS``.
    tol : stop when the solver's certified bound on J(w) - J* is at most tol * J(w).
    max_iter : iteration (batch) or epoch (stochastic) budget; None = the solver's default
        (with solver="auto": until ``tol``, within a time limit; see fastrisk/solvers/auto.py).
    time_limit : seconds per problem, or None or math.inf for no limit (None with
        solver="auto" and no max_iter: auto's budget).
    fit_intercept, intercept_scaling : constant feature of this value (regularized; at most
        1e154, as its square enters the row norms).
    class_weight : None, "balanced" or {label: weight}; multiplies the sample weights.
    warm_start : continue from the previous fit (online solvers' state, SDCA's dual variables,
        the previous weights: ``start=`` as each solver declares in its SolverInfo).  An
        online solver's state made with other settings (the loss, penalty, alpha, intercept,
        solver or batch size) cannot continue, nor can weights of another shape: the fit
        then starts cold with a warning.  partial_fit refuses a change of those parameters
        (PROBLEM_PARAMS) between its calls; fit starts a new run.
    random_state : seed of the stochastic solvers.
    n_threads : threads in total (None = all cores); with ``scheduler``, the OpenMP threads of
        each partition task on its Dask worker (None = 1).
    scheduler : None, a Dask scheduler address ("tcp://host:8786") or a ``distributed.Client``:
        fit on the cluster (see the module docstring; solver "auto" or one of
        ``fastrisk.estimators.dask_solvers()``, the solvers that need only the risk oracle;
        scalar losses; one-vs-rest problems are solved one after another).
    n_partitions : row partitions of the risk oracle (None: 1 locally, with ``scheduler`` the
        number of worker threads); the same count gives the same sums locally and on Dask.
    verbose, callback : passed to the solver (the callback gets each problem's Result so far).

    Attributes
    ----------
    coef_ (1 or n_classes, n_features), intercept_ (1 or n_classes,), classes_, n_iter_ (max over
    problems), n_features_in_, feature_names_in_ (DataFrame input), solver_ (the solver used),
    objective_, gap_ (certified bound, NaN without one), status_, history_ (History or one per
    class).
    """

    _tasks = CLASSIFIER_TASKS

    def __init__(self, loss="hinge", penalty="l2", alpha=1e-4, *, loss_param=None, l1_ratio=0.15,
                 p=2.0, solver="auto", tol=1e-4, max_iter=None, time_limit=None,
                 fit_intercept=True, intercept_scaling=1.0, class_weight=None, warm_start=False,
                 random_state=None, n_threads=None, verbose=0, callback=None, scheduler=None,
                 n_partitions=None):
        self.loss = loss
        self.penalty = penalty
        self.alpha = alpha
        self.loss_param = loss_param
        self.l1_ratio = l1_ratio
        self.p = p
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.time_limit = time_limit
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.random_state = random_state
        self.n_threads = n_threads
        self.verbose = verbose
        self.callback = callback
        self.scheduler = scheduler
        self.n_partitions = n_partitions

    @one_fit_at_a_time
    def fit(self, X, y, sample_weight=None):
        """Fit on X (n, d) dense or sparse, labels y; ``sample_weight`` rescaled to mean 1."""
        self._validate_params()
        X = _check_structure(X)
        check_label_values(y, "y")
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             order="C")
        check_classification_targets(y)
        classes, y_index = np.unique(y, return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError(f"y must hold at least two classes, got {classes.shape[0]} class")
        c = _sample_weight(sample_weight, X)
        if self.class_weight is not None:
            # each factor scaled to a largest of 1 first (the fit takes c to mean 1, so only
            # ratios matter): the product of two large or two tiny ones stays representable
            c = _largest_one(c) * _largest_one(
                _class_weights(self.class_weight, classes, y))[y_index]
        if np.bincount(y_index, weights=c, minlength=len(classes)).astype(bool).sum() < 2:
            raise ValueError("sample_weight and class_weight leave fewer than two classes with "
                             "positive weight")
        previous = getattr(self, "classes_", None)
        if previous is None or not np.array_equal(previous, classes):
            self._results = None
        self.classes_ = classes
        return self._fit_problems(X, y_index, _mean_one(c))

    def _online(self):
        return _streams(self.solver)

    @available_if(_online)
    @one_fit_at_a_time
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One epoch of the online solver over this chunk, continuing the previous state.

        ``classes`` (all labels) is required on the first call.  Chunks fed one after
        another continue one epoch over their concatenation in order (the solvers'
        streaming state; no shuffling inside a chunk).  Step parameters that a solver
        reads from the data (a step size from the number of rows or the row norms: see
        the solver's docstring) are read from the first chunk, so the iterates are those
        of one epoch over the concatenation where the solver's steps do not depend on
        the data, and otherwise those of an epoch with the first chunk's parameters
        (``fastrisk.solve`` with ``start=`` takes them as options).  ``sample_weight``
        is used as given (not rescaled, so that chunks stay consistent); ``class_weight``
        must be None or a dict.
        """
        self._validate_params()
        if classes is not None:
            if check_label_values(classes, "classes").ndim != 1:
                raise ValueError(f"classes must be 1-dimensional, got shape "
                                 f"{np.shape(classes)}")
        first = _check_partial_fit_first_call(self, classes)
        X = _check_structure(X)
        check_label_values(y, "y")
        X, y = validate_data(self, X, y, reset=first, accept_sparse="csr",
                             dtype=[np.float64, np.float32], order="C")
        check_classification_targets(y)
        if len(self.classes_) < 2:
            raise ValueError(f"classes must hold at least two classes, got {self.classes_}")
        _, y_index = encode_labels(y, self.classes_, "y")
        c = _sample_weight(sample_weight, X)
        if isinstance(self.class_weight, str):
            raise ValueError("class_weight='balanced' needs all of y; pass a dict to partial_fit")
        if self.class_weight is not None:
            c = c * _class_weights(self.class_weight, self.classes_, y)[y_index]
        if first:
            self._results = None
        return self._fit_problems(X, y_index, c, streaming=True)

    def _fit_problems(self, X, y_index, c, streaming=False):
        """Solve the joint problem or the one-vs-rest problems; set the fitted attributes.

        ``streaming``: partial_fit's one ordered epoch, continuing the previous state.
        """
        overrides = _streaming(self.solver) if streaming else {}
        k = len(self.classes_)
        self._n_samples = X.shape[0]
        seed = _seed(self.random_state)
        n_threads = self._threads()
        joint = LOSSES[self.loss].vector or k == 2
        previous, changed = self._previous(1 if joint else k, streaming)
        with self._cluster() as client:
            X = self._layout(X, client)
            if joint:
                problem = self._problem(X, y_index, c, n_threads, classes=np.arange(k),
                                        client=client)
                results, names = zip(self._solve(problem, seed, previous[0], None, changed,
                                                 **overrides))
            else:
                # on Dask the workers hold the parallelism: one problem after another
                n_parallel = 1 if client is not None else min(k, n_threads)
                threads_each = n_threads if client is not None else max(1, n_threads // n_parallel)
                stop = threading.Event()

                def fit_one(j):
                    try:
                        problem = self._problem(X, np.where(y_index == j, 1.0, -1.0), c,
                                                threads_each, classes=BINARY_CLASSES,
                                                client=client)
                        return self._solve(problem, seed, previous[j], stop, changed,
                                           **overrides)
                    except Exception:  # e.g. the callback's: the other classes stop too
                        stop.set()
                        raise

                with ThreadPoolExecutor(n_parallel) as pool:
                    futures = [pool.submit(fit_one, j) for j in range(k)]
                    try:
                        results, names = zip(*[f.result() for f in futures])
                    except KeyboardInterrupt:
                        # Ctrl-C reaches this thread only: the runs in the pool stop at
                        # their next check and keep their iterates
                        stop.set()
                        results, names = zip(*[f.result() for f in futures])
        coef, intercept = self._store(list(results), list(names), joint)
        coef = np.atleast_2d(coef)
        intercept = np.atleast_1d(np.asarray(intercept, dtype=np.float64))
        if LOSSES[self.loss].vector and k == 2:
            # two-class vector loss: the score difference f_1 - f_0 is the binary score
            coef, intercept = coef[1:] - coef[:1], intercept[1:] - intercept[:1]
        self.coef_, self.intercept_ = coef, intercept
        return self

    def decision_function(self, X):
        """Scores: (n,) for two classes (positive means classes_[1]), else (n, n_classes)."""
        f = self._decision(X)
        return f.ravel() if f.shape[1] == 1 else f

    def predict(self, X):
        f = self.decision_function(X)
        return self.classes_[(f > 0).astype(np.intp) if f.ndim == 1 else np.argmax(f, axis=1)]

    def _probabilistic(self):
        return LOSSES[self.loss].probabilistic if self.loss in LOSSES else False

    @available_if(_probabilistic)
    def predict_proba(self, X):
        """Probabilities (logistic: sigmoid, one-vs-rest normalized; softmax: softmax of scores)."""
        return scores_to_proba(self.decision_function(X), self.loss)

    @available_if(_probabilistic)
    def predict_log_proba(self, X):
        return np.log(self.predict_proba(X))


class LinearRegressor(RegressorMixin, _LinearModelBase):
    """Linear regression minimizing ``alpha * Omega(w) + (1/m) sum_i c_i loss(<w, x_i>, y_i)``.

    ``loss``: "squared", "absolute", "huber" (``loss_param`` = delta), "epsilon_insensitive"
    (epsilon), "quantile" (tau) or "poisson" (y >= 0; ``predict`` returns exp(score)).
    The other parameters and attributes are those of LinearClassifier (no class_weight);
    ``coef_`` has shape (n_features,) and ``intercept_`` is a float.
    """

    _tasks = REGRESSOR_TASKS

    def __init__(self, loss="squared", penalty="l2", alpha=1e-4, *, loss_param=None,
                 l1_ratio=0.15, p=2.0, solver="auto", tol=1e-4, max_iter=None, time_limit=None,
                 fit_intercept=True, intercept_scaling=1.0, warm_start=False, random_state=None,
                 n_threads=None, verbose=0, callback=None, scheduler=None, n_partitions=None):
        self.loss = loss
        self.penalty = penalty
        self.alpha = alpha
        self.loss_param = loss_param
        self.l1_ratio = l1_ratio
        self.p = p
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.time_limit = time_limit
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.warm_start = warm_start
        self.random_state = random_state
        self.n_threads = n_threads
        self.verbose = verbose
        self.callback = callback
        self.scheduler = scheduler
        self.n_partitions = n_partitions

    @one_fit_at_a_time
    def fit(self, X, y, sample_weight=None):
        """Fit on X (n, d) dense or sparse, real targets y; ``sample_weight`` rescaled to mean 1."""
        self._validate_params()
        X = _check_structure(X)
        _check_target_values(y)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             order="C", y_numeric=True)
        c = _sample_weight(sample_weight, X)
        return self._fit_problem(X, y, _mean_one(c))

    def _online(self):
        return _streams(self.solver)

    @available_if(_online)
    @one_fit_at_a_time
    def partial_fit(self, X, y, sample_weight=None):
        """One epoch of the online solver over this chunk, continuing the previous state
        (see LinearClassifier.partial_fit)."""
        self._validate_params()
        first = not hasattr(self, "coef_")
        X = _check_structure(X)
        _check_target_values(y)
        X, y = validate_data(self, X, y, reset=first, accept_sparse="csr",
                             dtype=[np.float64, np.float32], order="C", y_numeric=True)
        c = _sample_weight(sample_weight, X)
        if first:
            self._results = None
        return self._fit_problem(X, y, c, streaming=True)

    def _fit_problem(self, X, y, c, streaming=False):
        overrides = _streaming(self.solver) if streaming else {}
        self._n_samples = X.shape[0]
        with self._cluster() as client:
            problem = self._problem(self._layout(X, client), y, c, self._threads(),
                                    client=client)
            previous, changed = self._previous(1, streaming)
            result, name = self._solve(problem, _seed(self.random_state), previous[0], None,
                                       changed, **overrides)
        coef, intercept = self._store([result], [name], joint=True)
        self.coef_, self.intercept_ = np.asarray(coef, dtype=np.float64), float(intercept)
        return self

    def predict(self, X):
        """The score, or the loss's inverse link of it (poisson: exp(score), the mean)."""
        f = self._decision(X)
        link = LOSSES[self.loss].inverse_link
        return f if link is None else link(f)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        spec = LOSSES.get(self.loss) if isinstance(self.loss, str) else None
        tags.target_tags.positive_only = spec is not None and spec.task == "counts"
        return tags


def estimator_from_model(model):
    """A fitted LinearClassifier / LinearRegressor holding a LinearModel's weights (the
    model module does not import the estimators: the dependency points one way)."""
    if not isinstance(model, LinearModel):
        raise TypeError(f"model must be a fastrisk LinearModel (fastrisk.load(path)), got "
                        f"{type(model).__name__}")
    params = dict(loss=model.loss, penalty=model.penalty, alpha=model.alpha,
                  loss_param=model.loss_param,
                  solver=model.solver if model.solver in SOLVERS else "auto",
                  fit_intercept=_info_field(model, "fit_intercept", True, bool),
                  intercept_scaling=_info_field(model, "intercept_scaling", 1.0, float))
    # the penalty's parameter as saved; None (the parameter of another penalty, or one a
    # file written before the field does not record) leaves the estimator's default
    params.update({k: v for k, v in (("l1_ratio", model.l1_ratio), ("p", model.p))
                   if v is not None})
    if model.is_classifier:
        est = LinearClassifier(**params)
        est.classes_ = model.classes
        est.coef_ = np.atleast_2d(model.coef).copy()
        est.intercept_ = np.atleast_1d(np.asarray(model.intercept, dtype=np.float64)).copy()
    else:
        est = LinearRegressor(**params)
        est.coef_, est.intercept_ = model.coef.copy(), float(model.intercept)
    est.n_features_in_ = model.n_features
    if model.feature_names is not None:
        est.feature_names_in_ = np.array(model.feature_names, dtype=object)
    est.solver_ = model.solver
    est._n_samples = model.n_samples
    est.n_iter_ = _info_field(model, "n_iter", 0, int)
    est.objective_ = _info_field(model, "objective", math.nan, float)
    est.gap_ = _info_field(model, "gap", math.nan, float)
    return est


def _info_field(model, key, default, kind):
    """``model.info[key]`` (``default`` when absent) as a ``kind``: bool, int (>= 0) or float
    (None: NaN); ValueError naming the entry for any other value (a file's info is free JSON,
    and bool("false") or int("x") would mislead or fail without saying where)."""
    value = model.info.get(key, default)
    if kind is bool:
        ok = isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    else:
        value = math.nan if value is None else value
        ok = isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)
                                          and abs(value) <= sys.float_info.max)
    if not ok:
        expected = {bool: "a bool", int: "an integer >= 0", float: "a number or None"}[kind]
        raise ValueError(f"model.info[{key!r}] must be {expected}, got {value!r:.80}")
    return kind(value)
