"""Regularization paths for l1 and elastic-net penalties (fastrisk/solvers/cd.py).

``path(X, y, ...)`` solves J_alpha for a decreasing grid of alphas starting at
``alpha_max``, the smallest alpha at which w = 0 is optimal:
0 is in the subdifferential of J at 0 iff ||X^T g||_inf <= alpha r with
g = c l'(0, y) / m (r = l1_ratio; intercept column included, as it is
regularized), so ``alpha_max = ||X^T g||_inf / r``.  The default grid is
geometric from alpha_max down to ``eps * alpha_max`` (glmnet's and
scikit-learn's ``lasso_path`` convention).  Each solve starts from the previous
solution (warm start), so Gap Safe screening removes most columns at its first
certificate (sequential screening, Ndiaye et al. 2017, Section 4); the column copy
of X is made once for the whole path.
"""

import functools
import inspect
from dataclasses import dataclass

import numpy as np

from fastrisk import _cd
from fastrisk.config import solver_threads
from fastrisk.problem import Problem
from fastrisk.regularizers import has_l1_term
from fastrisk.columns import check_columns, column_view
from fastrisk.solvers._checks import check_int, real_array
from fastrisk.solvers.cd import SOLVER_INFO as CD_INFO, solve_cd


# the longest default grid (path, the CV estimators): each alpha is a solve
MAX_ALPHAS = 10 ** 6
# solve_cd's keyword arguments (the options a path passes on)
_CD_KEYWORDS = frozenset(name for name, par in inspect.signature(solve_cd).parameters.items()
                         if par.kind is inspect.Parameter.KEYWORD_ONLY)


@dataclass
class Path:
    """``alphas`` (decreasing), ``gaps`` and ``objectives`` (certified J(w) - J* bound and J
    per alpha), ``results`` (the solver's Result per alpha) and ``coefs``: the
    (n_alphas, n_weights) weight vectors (intercept feature last), stacked from the
    results' ``w`` when first read (n_alphas n_weights doubles)."""

    alphas: np.ndarray
    gaps: np.ndarray
    objectives: np.ndarray
    results: list

    @functools.cached_property
    def coefs(self):
        return np.array([r.w for r in self.results])


def alpha_max(problem, columns=None):
    """Smallest alpha at which w = 0 minimizes ``problem``'s objective (l1 / elastic net).

    With g a subgradient of the risk at w = 0, w = 0 is optimal for every alpha with
    ||g||_inf <= alpha r (r = l1_ratio), so alpha_max = ||g||_inf / r.  For a problem
    solver 'cd' takes (smooth scalar losses on data) g is the gradient, read from the
    columns of X as cd reads them (``columns``: its column copy); for any other problem
    (non-smooth or vector losses, oracle-only problems) g is the risk oracle's subgradient
    at 0, and the value is exact where the risk is differentiable at 0 (the hinge's is:
    every margin is 0 < 1) and otherwise an alpha from which w = 0 is certainly optimal."""
    if not isinstance(problem, Problem):
        raise ValueError(f"alpha_max: problem must be a fastrisk Problem, got "
                         f"{type(problem).__name__}")
    split = problem.regularizer.l1_l2()
    if split is None or split[0] <= 0.0:
        raise ValueError("alpha_max needs an l1 term: penalty 'l1' or 'elasticnet' with "
                         "l1_ratio > 0")
    r = split[0]
    if CD_INFO.why_not(problem) is not None:
        return float(np.abs(problem.oracle(np.zeros(problem.n_weights))[1]).max()) / r
    data, m = problem.data, problem.n_samples
    cols = column_view(data) if columns is None else check_columns(columns, data)
    f = np.zeros(m)
    d, g, h = np.empty(m), np.empty(m), np.empty(m)
    c = np.empty(0) if problem.sample_weight is None else problem.sample_weight
    _, st = _cd.derivatives(problem.loss.spec.kernel_id, problem.loss.param, f, problem.y, c,
                            1.0 / m, d, g, h)
    grad, hdiag = np.empty(data.n_weights), np.empty(data.n_weights)
    _cd.column_stats(*cols.arrays, g, h, np.arange(data.n_weights, dtype=np.int64), grad, hdiag,
                     1)
    return float(np.abs(grad).max()) / r


def check_alphas(alphas):
    """A grid of alphas given by the caller, sorted decreasing: a non-empty 1-d array of
    real finite numbers > 0, else a ValueError naming ``alphas``."""
    a = real_array(alphas)
    if a is not None and any(isinstance(v, (bool, np.bool_))
                             for v in np.asarray(alphas, dtype=object).ravel()):
        a = None  # True would be read as 1.0
    if a is None or a.size == 0:
        raise ValueError(f"alphas must be a non-empty array of finite numbers > 0, got "
                         f"{alphas!r}")
    if a.ndim != 1:
        raise ValueError(f"alphas must be a 1-d array (a grid), got shape {a.shape}")
    a = np.sort(a)[::-1]
    if not (np.isfinite(a).all() and (a > 0).all()):
        raise ValueError("alphas must be a non-empty array of finite numbers > 0")
    return a


def _check_options(options):
    """Refuse keywords that solve_cd does not take or that the path sets itself, naming
    ``path`` (else solve_cd's TypeError names solve_cd, or a duplicate keyword)."""
    for key in options:
        if key in ("start", "columns"):
            raise TypeError(f"path() sets {key}= itself (the previous alpha's solution, one "
                            f"column copy of X); it cannot be passed")
        if key not in _CD_KEYWORDS:
            raise TypeError(f"path() got an unexpected keyword argument {key!r}; it passes "
                            f"these to solve_cd: {sorted(_CD_KEYWORDS - {'start', 'columns'})}")


def path(X, y, *, loss="logistic", penalty="l1", l1_ratio=1.0, alphas=None, n_alphas=20,
         eps=1e-3, tol=1e-4, sample_weight=None, fit_intercept=False, intercept_scaling=1.0,
         loss_param=None, n_threads=None, random_state=None, **options):
    """Solve along a decreasing grid of alphas with warm starts; returns a :class:`Path`.

    alphas: the grid (sorted decreasing here); default ``n_alphas`` values from
    ``alpha_max`` to ``eps * alpha_max``, geometric (the penalty needs an l1 term).
    ``tol`` and ``options`` go to ``solve_cd`` for every alpha: its keywords other than
    ``start`` and ``columns``, which the path sets (the previous solution, one column
    copy of X).
    """
    _check_options(options)
    common = dict(loss=loss, penalty=penalty, l1_ratio=l1_ratio, loss_param=loss_param,
                  sample_weight=sample_weight, fit_intercept=fit_intercept,
                  intercept_scaling=intercept_scaling, n_threads=n_threads)
    first = Problem(X, y, alpha=1.0, **common)
    reason = CD_INFO.why_not(first)  # every alpha is solved by cd
    if reason is not None:
        raise ValueError(f"path: {reason}")
    cols = column_view(first.data, solver_threads(first, n_threads), scales=True)
    if alphas is None:
        if not has_l1_term(first.regularizer):
            reg = first.regularizer
            setting = f", {reg.parameter}={getattr(reg, reg.parameter)!r}" \
                if reg.parameter is not None else ""
            raise ValueError(f"path: the default grid starts at alpha_max, which needs an l1 "
                             f"term (penalty {penalty!r}{setting}); pass alphas= for a "
                             f"penalty without one")
        n_alphas = check_int(n_alphas, "n_alphas", low=1, high=MAX_ALPHAS)
        if not isinstance(eps, (int, float, np.number)) or not 0.0 < eps < 1.0:
            raise ValueError(f"eps must be a number in (0, 1), got {eps!r}")
        top = alpha_max(first, cols)
        if top == 0.0:
            raise ValueError("alpha_max is 0: w = 0 is optimal for every alpha")
        alphas = np.geomspace(top, top * eps, int(n_alphas))
    else:
        alphas = check_alphas(alphas)
    results, w = [], None
    for alpha in alphas:
        problem = Problem(first.data, y, alpha=float(alpha), **common)  # X validated once
        res = solve_cd(problem, tol=tol, start=w, columns=cols, n_threads=n_threads,
                       random_state=random_state, **options)
        results.append(res)
        w = res.w
    return Path(alphas=alphas, gaps=np.array([r.gap for r in results]),
                objectives=np.array([r.objective for r in results]), results=results)
