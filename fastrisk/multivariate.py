"""Multivariate, ranking and user-defined losses as risk oracles (BMRM 3.1-3.3; docs/math.md §2-3).

BMRM only needs ``R_emp(w)`` and a subgradient.  For a loss of the whole
score vector ``f = X w`` (or score matrix ``F = X W^T`` with one column per
output) that is: compute F, ask the loss for ``(value, G = dR/dF)``, return
``(value, X^T G)``.  ``ScoreOracle`` does exactly that for any object with

    risk(F, y) -> (value, G)      # value = R_emp, G has F's shape
    n_outputs                     # optional, columns of F (default 1: F is the vector f)
    risk_floor                    # optional lower bound on R_emp (default 0: R_emp >= 0)
    check_targets(y, n_samples)   # optional: y checked and converted as risk takes it

so a user-defined loss (a CRF, a max-margin structured loss, ...) plugs in
by writing that one method; ``make_problem`` turns it into a ``Problem``
that BMRM, the proximal bundle method and L-BFGS solve.  A loss that needs
more than the scores (its own features, e.g. a sequence model) implements
the full oracle instead: any object with ``n_samples``, ``n_weights`` and
``__call__(w) -> (value, subgradient)`` (and optionally ``risk_floor``),
given to ``Problem.from_oracle`` (``FunctionOracle`` wraps a plain function).

``ScoreOracle`` checks that y has one entry per row of X and, when the loss has
``check_targets``, keeps what it returns: invalid targets fail when the problem
is built, not at the first oracle call.  The losses here have ``check_targets``
and run the same checks in ``risk``, which may also be called directly.

The losses here, each ``risk(f, y)`` normalized as stated:

* ``OrdinalRegression`` / ``ROCArea``: pairwise hinge over the pairs with
  ``y_i > y_j``, ``(1/P) sum max(0, 1 - (f_i - f_j))``; equal to the
  structural-SVM loss of Joachims (2005) with Delta = swapped pairs, an upper
  bound on 1 - AUC (two levels) or on the fraction of mis-ordered pairs.
  One sort of f, then counts and sums by binary search: O(m log m) for ROC
  area, O(L m log m) with L levels.
* ``FBeta``: ``max_{y'} [1 - F_beta(y, y') + (1/(2m)) sum_i (y'_i - y_i) f_i]``
  (Joachims 2005; with Delta = error rate this is the mean hinge loss),
  maximized over contingency tables: O(m log m + n_+ n_-).
* ``RankingLoss`` (NDCG@k, precision@k): per query,
  ``max_pi sum_i c_i (f_{pi(i)} - f_{sigma(i)}) + 1 - <a(pi), b(y)> / Z``
  (Le and Smola 2007, BMRM 3.1 "Document Ranking"), maximized by a linear
  assignment (scipy's ``linear_sum_assignment``), averaged over queries.
* ``ScaledSoftMargin`` and ``MultivariateRegression``: the vector losses of
  BMRM Table 2 (``fastrisk.losses.vector_loss``), averaged over samples.
"""

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from fastrisk.data import (
    Dataset,
    _check_labels,
    _finite_or_raise,
    check_targets,
    encode_binary,
    encode_labels,
)
from fastrisk.losses import vector_loss
from fastrisk.oracle import checked_output
from fastrisk.solvers._checks import check_choice, check_int, check_number, real_array


def _check_scores(f, m, name="f"):
    """The scores of m items as a finite float64 vector, else an error naming ``f``."""
    a = real_array(f)
    if a is None:
        raise TypeError(f"{name} must be a vector of real scores")
    if a.shape != (m,):
        raise ValueError(f"{name} must have shape ({m},) (one score per entry of y), got "
                         f"{a.shape}")
    _finite_or_raise(a, name)
    return a


def _n_items(y):
    """The number of items of a label vector (its length), the length of f."""
    shape = np.shape(y)
    if len(shape) != 1:
        raise ValueError(f"y must be a 1-d vector of labels, got shape {shape}")
    return shape[0]


def _binary_labels(y, m):
    """Labels with exactly two values -> bool (True = the larger value, the positive class)."""
    return encode_binary(y, m)[0] > 0


def _square_matrix(value, name, k=None):
    """A finite float64 square matrix (k x k when k is given)."""
    a = real_array(value)
    if a is None:
        raise TypeError(f"{name} must be a matrix of real numbers")
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 1 \
            or (k is not None and a.shape[0] != k):
        raise ValueError(f"{name} must be a {'square' if k is None else (k, k)} matrix, "
                         f"got shape {a.shape}")
    _finite_or_raise(a, name)
    return a


class OrdinalRegression:
    """Pairwise hinge over the pairs with y_i > y_j, normalized by their number P.

    ``R(f) = (1/P) sum_{y_i > y_j} max(0, 1 - (f_i - f_j))``; a pair is active
    when ``f_j > f_i - 1`` (computed once as ``t_i = f_i - 1``, the same test
    on both sides).  For each level u (ascending): the items i at u against
    all lower items j, by binary search in the sorted lower scores.
    """

    def _levels(self, y, m):
        """y as m finite float64 levels, at least two distinct ones."""
        y = check_targets(y, m)
        if y.min() == y.max():
            raise ValueError("y must hold at least two distinct levels")
        return y

    def check_targets(self, y, n_samples):
        return self._levels(y, n_samples)

    def risk(self, f, y):
        m = _n_items(y)
        f = _check_scores(f, m)
        y = self._levels(y, m)
        order = np.argsort(f, kind="stable")
        f_sorted, y_sorted = f[order], y[order]
        levels = np.unique(y)
        value, n_pairs = 0.0, 0
        g = np.zeros(m)
        for u in levels[1:]:
            hi = np.flatnonzero(y == u)
            lower = y_sorted < u
            s = f_sorted[lower]  # scores of all lower items, ascending
            # top[c] = sum of the c largest lower scores: the active j of an item are a
            # suffix of s, summed from the top so that the inactive scores' rounding
            # (prefix sums differenced) does not enter its hinge terms
            top = np.concatenate([[0.0], np.cumsum(s[::-1])])
            t = f[hi] - 1.0
            first = np.searchsorted(s, t, side="right")  # lower j with f_j > t_i start here
            count = s.shape[0] - first
            # item i's sum over its active pairs of f_j - t_i > 0, each term positive: kept
            # >= 0 where rounding leaves it below (R_emp >= 0 is the oracle's risk_floor)
            value += float(np.sum(np.maximum(top[count] - count * t, 0.0)))
            g[hi] -= count
            # each lower j is active with the hi items whose t_i < f_j
            g[order[lower]] += np.searchsorted(np.sort(t), s, side="left")
            n_pairs += hi.shape[0] * s.shape[0]
        return value / n_pairs, g / n_pairs


class ROCArea(OrdinalRegression):
    """1 - AUC surrogate: mean hinge over (positive, negative) pairs, O(m log m).

    The larger label value is the positive class (as in ``encode_binary``).
    """

    def _levels(self, y, m):
        return _binary_labels(y, m).astype(np.float64)


class FBeta:
    """Structural hinge for F_beta (Joachims 2005), see the module docstring.

    For a labeling with a true positives and b false positives the best
    score term flips the a highest positives to positive and the b highest
    negatives to positive, so ``max_{y'}`` is a max over (a, b) of
    ``1 - F_beta(a, b) + (SN_b - (SP - SP_a)) / m`` with prefix sums of the
    sorted positive (SP) and negative (SN) scores; F_beta = 0 when a = 0.
    """

    def __init__(self, beta=1.0):
        # beta^2 (1 + m) must stay finite in F_beta's sums; beyond 1e100, F_beta is recall
        # to every digit of a double
        self.beta = check_number(beta, "beta", 0.0, 1e100, low_open=True)

    def check_targets(self, y, n_samples):
        return _binary_labels(y, n_samples)

    def risk(self, f, y):
        m = _n_items(y)
        f = _check_scores(f, m)
        pos = _binary_labels(y, m)
        P, N = np.flatnonzero(pos), np.flatnonzero(~pos)
        P = P[np.argsort(-f[P], kind="stable")]
        N = N[np.argsort(-f[N], kind="stable")]
        sp_ = np.concatenate([[0.0], np.cumsum(f[P])])
        sn_ = np.concatenate([[0.0], np.cumsum(f[N])])
        b2 = self.beta ** 2
        b = np.arange(N.shape[0] + 1)
        best = (-np.inf, 0, 0)
        for a in range(P.shape[0] + 1):
            fbeta = (1 + b2) * a / ((1 + b2) * a + b2 * (P.shape[0] - a) + b) if a else 0.0 * b
            v = 1.0 - fbeta + (sn_ - (sp_[-1] - sp_[a])) / m
            j = int(np.argmax(v))
            if v[j] > best[0]:
                best = (float(v[j]), a, j)
        value, a, nb = best
        g = np.zeros(m)
        g[P[a:]] = -1.0 / m
        g[N[:nb]] = 1.0 / m
        return value, g


def ndcg_weights(n, k):
    """DCG position discounts 1/log2(1 + i), i = 1..n, zero beyond position k."""
    a = 1.0 / np.log2(np.arange(2, n + 2))
    a[k:] = 0.0
    return a


class RankingLoss:
    """NDCG@k or precision@k ranking loss over query groups (Le and Smola 2007).

    ``query`` (length m) gives each document's query id: numbers, strings or
    other values of one sortable type (not NaN); the documents with equal ids
    form a query wherever they are in the data (they need not be contiguous).
    ``y`` in ``risk`` is each document's relevance: finite and >= 0, and for
    NDCG small enough that the gains ``2^y - 1`` sum to a finite float64.
    Per query with n documents: ideal order sigma (by
    relevance, ties by document index), position weights ``c_i = 1/log2(1+i)``
    (decreasing), measure vectors a (positions) and b(y) (documents):
    NDCG@k: ``a_i = 1/log2(1+i)`` for i <= k, ``b = 2^y - 1``;
    precision@k: ``a_i = 1/k`` for i <= k, ``b = [y > 0]``;
    ``Z = <a, b(y)_sigma>``.  The loss
    ``max_pi sum_i c_i (f_{pi(i)} - f_{sigma(i)}) + 1 - <a, b_pi> / Z`` is a
    linear assignment of documents to positions; its subgradient in f_j is
    ``c_{pi*^-1(j)} - c_{sigma^-1(j)}``.  Queries with Z = 0 (nothing
    relevant) carry no information and are skipped; R is the mean over the
    other queries.  ``k=None`` means all positions.
    """

    def __init__(self, query, measure="ndcg", k=None):
        measure = check_choice(measure, "measure", ("ndcg", "precision"))
        k = check_int(k, "k", low=1, allow_none=True)
        query = np.asarray(query)
        if query.ndim != 1:
            raise ValueError(f"query must be 1-dimensional, got shape {query.shape}")
        # refuses NaN (and infinite) ids, which equal no other id, and unsortable ones
        query = _check_labels(query, query.shape[0], "query")
        self.measure, self.k, self.query = measure, k, query
        index = encode_labels(query, None, "query")[1]  # ids -> 0..Q-1, in sorted id order
        order = np.argsort(index, kind="stable")
        cuts = np.flatnonzero(np.diff(index[order])) + 1
        self.groups = np.split(order, cuts)

    def _gains(self, rel):
        """b(y): 2^y - 1 (NDCG) or [y > 0] (precision)."""
        return np.exp2(rel) - 1.0 if self.measure == "ndcg" else (rel > 0).astype(np.float64)

    def _relevance(self, y, m):
        """y as m finite float64 relevance levels >= 0 whose gains the measure can sum, with
        a positive gain somewhere (a query's Z > 0 exactly when one of its gains is)."""
        rel = check_targets(y, m)
        if (rel < 0).any():
            raise ValueError(f"y must hold relevance levels >= 0, got {rel.min():g}")
        with np.errstate(over="ignore"):
            gains = self._gains(rel)
        if not np.isfinite(gains.sum()):
            raise ValueError(f"y holds relevance levels up to {rel.max():g}: their NDCG "
                             "gains 2**y - 1 overflow float64")
        if not (gains > 0).any():
            raise ValueError("y: no query has a relevant document (every gain "
                             f"{'2**y - 1' if self.measure == 'ndcg' else '[y > 0]'} is 0)")
        return rel

    def check_targets(self, y, n_samples):
        if self.query.shape[0] != n_samples:
            raise ValueError(f"query has {self.query.shape[0]} entries but X has {n_samples} "
                             "rows")
        return self._relevance(y, n_samples)

    def _query_loss(self, f, rel):
        n = f.shape[0]
        k = n if self.k is None else min(self.k, n)
        b = self._gains(rel)
        a = ndcg_weights(n, k) if self.measure == "ndcg" else \
            np.where(np.arange(n) < k, 1.0 / k, 0.0)
        sigma = np.argsort(-rel, kind="stable")
        Z = float(a @ b[sigma])
        if Z <= 0:
            return None
        c = 1.0 / np.log2(np.arange(2, n + 2))
        S = np.outer(c, f) - np.outer(a, b) / Z  # S[position, document]
        positions, docs = linear_sum_assignment(S, maximize=True)  # positions = 0..n-1
        # the maximizer's value as differences from sigma's, position by position: exactly
        # 0 where pi agrees with sigma (and its gains with sigma's), where the sums of S
        # and of c f[sigma] cancel to rounding errors of either sign
        value = float(c @ (f[docs] - f[sigma]) + (1.0 - (a @ b[docs]) / Z))
        if not value > 0.0:
            # sigma, of value 0 (and subgradient 0), is a maximizer up to rounding
            return 0.0, np.zeros(n)
        g = np.empty(n)
        g[docs] = c
        g[sigma] -= c
        return value, g

    def risk(self, f, y):
        m = self.query.shape[0]
        f = _check_scores(f, m)
        rel = self._relevance(y, m)
        value, g, n_queries = 0.0, np.zeros(m), 0
        for idx in self.groups:
            out = self._query_loss(f[idx], rel[idx])
            if out is not None:
                value += out[0]
                g[idx] = out[1]
                n_queries += 1
        return value / n_queries, g / n_queries


class ScaledSoftMargin:
    """Mean of BMRM Table 2's scaled soft margin over samples (``vector_loss``).

    ``cost`` is the k x k matrix Delta(y, y') (default 0/1; finite, >= 0, zero
    diagonal), ``beta`` >= 0 the scaling exponent; y holds class indices 0..k-1
    (integers, or floats with integral values).
    """

    def __init__(self, n_classes, cost=None, beta=1.0):
        k = self.n_outputs = check_int(n_classes, "n_classes", low=2)
        self.cost = None if cost is None else _square_matrix(cost, "cost", k)
        self.beta = check_number(beta, "beta", 0.0)
        # vector_loss refuses a negative cost or a nonzero diagonal: checked here once
        vector_loss("scaled_soft_margin", np.zeros((1, k)), np.zeros(1, dtype=np.intp),
                    cost=self.cost, beta=self.beta)

    def check_targets(self, y, n_samples):
        y = check_targets(y, n_samples)
        bad = (y != np.floor(y)) | (y < 0) | (y >= self.n_outputs)
        if bad.any():
            raise ValueError(f"y must hold integer class indices in [0, {self.n_outputs}), "
                             f"got {y[bad][0]:g}")
        return y.astype(np.intp)

    def risk(self, F, y):
        y = self.check_targets(y, F.shape[0])
        values, G = vector_loss("scaled_soft_margin", F, y, cost=self.cost, beta=self.beta)
        return float(values.mean()), G / F.shape[0]


class MultivariateRegression:
    """Mean of 0.5 (f - y)^T M (f - y) over samples; y is a finite (m, k) target matrix
    (or a vector of m targets when k = 1); M a finite symmetric positive semidefinite k x k
    matrix."""

    def __init__(self, M):
        M = _square_matrix(M, "M")
        self.n_outputs, self.M = M.shape[0], M
        # vector_loss refuses an asymmetric M: checked here once
        vector_loss("multivariate_regression", np.zeros((1, M.shape[0])),
                    np.zeros((1, M.shape[0])), M=M)

    def check_targets(self, y, n_samples):
        Y = real_array(y)
        if Y is None:
            raise TypeError("y must be a matrix of real targets")
        if Y.ndim == 1 and self.n_outputs == 1:
            Y = Y[:, None]
        if Y.shape != (n_samples, self.n_outputs):
            raise ValueError(f"y must be a target matrix of shape ({n_samples}, "
                             f"{self.n_outputs}), got shape {Y.shape}")
        _finite_or_raise(Y, "y")
        return Y

    def risk(self, F, y):
        F = F.reshape(F.shape[0], -1)
        Y = self.check_targets(y, F.shape[0])
        values, G = vector_loss("multivariate_regression", F, Y, M=self.M)
        return float(values.mean()), G / F.shape[0]


def _n_entries(y):
    """len(y) (rows of an array or sparse matrix), or a TypeError when y has no length."""
    shape = getattr(y, "shape", None)
    if shape is not None and len(shape) > 0:
        return int(shape[0])
    try:
        return len(y)
    except TypeError:
        raise TypeError(f"y must hold one target per row of X, got {type(y).__name__}") from None


class ScoreOracle:
    """RiskOracle for any loss of the scores: R_emp(w) = loss.risk(F, y), grad X^T G.

    w is W (n_outputs x n_weights) flattened; ``F = X W^T`` (+ intercept
    feature), passed to ``risk`` as a vector when n_outputs is 1.  y must have
    one entry (or row) per row of X; a loss with ``check_targets(y, n_samples)``
    checks it here, and ``risk`` gets what that returns.
    """

    checked = True  # a non-finite risk or gradient of the loss raises (``__call__``)

    def __init__(self, X, y, loss, *, fit_intercept=False, intercept_scaling=1.0):
        if not callable(getattr(loss, "risk", None)):
            raise TypeError("loss must have a method risk(f, y) -> (value, gradient wrt f)")
        k = getattr(loss, "n_outputs", 1)
        check_int(k, "loss.n_outputs", low=1)
        if not isinstance(fit_intercept, (bool, np.bool_)):
            raise ValueError(f"fit_intercept must be a bool, got {fit_intercept!r}")
        self.data = Dataset(X, intercept_scaling=intercept_scaling if fit_intercept else 0.0)
        self.n_samples = self.data.n_samples
        n_y = _n_entries(y)
        if n_y != self.n_samples:
            raise ValueError(f"y has {n_y} entries but X has {self.n_samples} rows")
        if callable(getattr(loss, "check_targets", None)):
            y = loss.check_targets(y, self.n_samples)
        self.loss, self.y, self.n_outputs = loss, y, int(k)
        self.n_weights = self.n_outputs * self.data.n_weights
        self.risk_floor = check_number(getattr(loss, "risk_floor", 0.0), "loss.risk_floor")
        self.n_calls = 0

    def __call__(self, w):
        d = self.data
        w = np.ascontiguousarray(w, dtype=np.float64)
        if w.shape != (self.n_weights,):
            raise ValueError(f"w has shape {w.shape}, expected ({self.n_weights},)")
        self.n_calls += 1
        W = w.reshape(self.n_outputs, d.n_weights)
        F = np.asarray(d.X @ W[:, : d.n_features].T, dtype=np.float64)
        if d.bias:
            F += d.bias * W[:, -1]
        value, G = self.loss.risk(F[:, 0] if self.n_outputs == 1 else F, self.y)
        G = np.asarray(G, dtype=np.float64).reshape(self.n_samples, self.n_outputs)
        if not np.isfinite(value) or not np.isfinite(G).all():
            raise FloatingPointError(f"{type(self.loss).__name__}.risk returned a non-finite "
                                     "value or gradient")
        grad = np.empty((self.n_outputs, d.n_weights))
        XtG = d.X.T @ G
        grad[:, : d.n_features] = (XtG.toarray() if sp.issparse(XtG) else np.asarray(XtG)).T
        if d.bias:
            grad[:, -1] = d.bias * G.sum(axis=0)
        return float(value), grad.ravel()


class FunctionOracle:
    """A RiskOracle from a plain function ``oracle(w) -> (R_emp(w), subgradient)``."""

    def __init__(self, func, n_weights, n_samples=1, risk_floor=0.0):
        if not callable(func):
            raise TypeError("func must be callable: func(w) -> (risk, subgradient)")
        for name, v in (("n_weights", n_weights), ("n_samples", n_samples)):
            check_int(v, name, low=1)
        self.func, self.n_weights, self.n_samples = func, int(n_weights), int(n_samples)
        self.risk_floor = check_number(risk_floor, "risk_floor")
        self.n_calls = 0

    checked = True  # its outputs pass checked_output (Problem.from_oracle)

    def __call__(self, w):
        self.n_calls += 1
        return checked_output(self.func(np.asarray(w, dtype=np.float64)), self.n_weights)


def make_problem(X, y, loss, *, penalty="l2", alpha=1e-4, fit_intercept=False,
                 intercept_scaling=1.0, l1_ratio=0.15, p=2.0):
    """A Problem minimizing ``alpha Omega(w) + loss.risk(X W^T, y)``; see ScoreOracle."""
    from fastrisk.problem import Problem

    oracle = ScoreOracle(X, y, loss, fit_intercept=fit_intercept,
                         intercept_scaling=intercept_scaling)
    return Problem.from_oracle(oracle, penalty=penalty, alpha=alpha, l1_ratio=l1_ratio, p=p,
                               n_features=oracle.data.n_features, bias=oracle.data.bias,
                               n_classes=oracle.n_outputs)
