"""Problem = data + loss + regularizer + alpha (docs/math.md §1).

``J(w) = alpha * Omega(w) + (1/m) sum_i c_i l(<w, x_i>, y_i)`` where alpha is
lambda of the papers and means exactly what ``SGDClassifier(alpha=...)``
means.  With ``fit_intercept=True`` the intercept is the weight of a constant
feature of value ``intercept_scaling`` and is regularized like the others
(as LIBLINEAR does), so every solver minimizes the same J.
"""

import copy

import numpy as np

from fastrisk.data import (
    MAX_INTERCEPT_SCALING,
    Dataset,
    check_sample_weight,
    check_targets,
    encode_binary,
    encode_multiclass,
)
from fastrisk.losses import Loss
from fastrisk.oracle import CheckedOracle, LocalOracle, VectorOracle, check_weights
from fastrisk.regularizers import make_regularizer
from fastrisk.solvers._checks import check_bool, check_int, check_number


def check_alpha(alpha):
    return check_number(alpha, "alpha", 0.0, low_open=True)


class Problem:
    """A regularized risk minimization problem; see the module docstring.

    Attributes: ``data`` (Dataset), ``y`` (encoded targets: -1/+1 for binary
    losses, class indices for vector losses), ``classes_`` (original labels
    or None), ``loss``, ``regularizer``, ``alpha``, ``oracle``, ``n_weights``
    (length of w: n_features [+1], times n_classes for vector losses).
    ``classes``: the full label set for classification losses when ``y``
    (a chunk of a stream) may lack some labels; default: the labels of ``y``.
    ``X`` may be a ``Dataset`` (validated once and shared by several problems).
    """

    def __init__(self, X, y=None, loss="hinge", penalty="l2", alpha=1e-4, *, loss_param=None,
                 l1_ratio=0.15, p=2.0, sample_weight=None, fit_intercept=False,
                 intercept_scaling=1.0, n_threads=None, n_partitions=1, classes=None):
        self.loss = Loss(loss, loss_param)
        self.regularizer = make_regularizer(penalty, l1_ratio=l1_ratio, p=p)
        self.penalty = penalty
        self.alpha = check_alpha(alpha)
        fit_intercept = check_bool(fit_intercept, "fit_intercept")
        bias = (check_number(intercept_scaling, "intercept_scaling", 0.0,
                             MAX_INTERCEPT_SCALING, low_open=True)
                if fit_intercept else 0.0)
        if isinstance(X, Dataset):  # already validated, e.g. shared by one-vs-rest problems
            if X.bias != bias:
                raise ValueError(f"X is a Dataset with intercept feature {X.bias}, but "
                                 f"fit_intercept={fit_intercept}, intercept_scaling="
                                 f"{intercept_scaling} ask for {bias}")
            self.data = X
        else:
            self.data = Dataset(X, intercept_scaling=bias)
        m = self.data.n_samples
        self.sample_weight = check_sample_weight(sample_weight, m)
        task = self.loss.spec.task
        self.classes_ = None
        self.n_classes = 1
        if task == "binary":
            self.y, self.classes_ = encode_binary(y, m, classes=classes)
        elif task == "multiclass":
            self.y, self.classes_ = encode_multiclass(y, m, classes=classes)
            self.n_classes = len(self.classes_)
        elif task == "novelty":
            self.y = np.zeros(m) if y is None else check_targets(y, m)
        else:
            self.y = check_targets(y, m)  # counts: the oracle refuses negative ones
        if self.loss.spec.vector:
            self.oracle = VectorOracle(self.data, loss, self.y, self.n_classes,
                                       self.sample_weight, n_partitions=n_partitions,
                                       n_threads=n_threads)
        else:
            self.oracle = LocalOracle(self.data, self.loss, self.y, self.sample_weight,
                                      n_partitions=n_partitions, n_threads=n_threads)
        self.n_weights = self.oracle.n_weights

    @classmethod
    def from_oracle(cls, oracle, *, penalty="l2", alpha=1e-4, l1_ratio=0.15, p=2.0,
                    n_features=None, bias=0.0, n_classes=1, loss=None, classes=None):
        """A Problem whose R_emp is any RiskOracle (BMRM section 3.3: user-defined risks).

        ``oracle`` has ``n_samples``, ``n_weights`` and ``__call__(w) -> (risk,
        subgradient)`` (e.g. fastrisk.multivariate.ScoreOracle, or
        fastrisk.distributed.DaskOracle); the solvers only use ``.oracle``,
        ``.regularizer`` and ``.alpha``; BMRM also reads ``oracle.risk_floor``
        (a lower bound on R_emp, 0 when absent).  ``n_features`` and ``bias`` (the
        intercept feature's value, 0 = none) and ``n_classes`` describe how w
        splits into coef_ and intercept_; by default w is all coef_.  ``data``
        and ``y`` are None: the data live inside the oracle.  An oracle without
        ``checked = True`` (fastrisk's own have it) is wrapped in
        ``fastrisk.oracle.CheckedOracle``: a non-finite risk or subgradient raises
        FloatingPointError, a wrong shape ValueError, instead of misleading the solver.
        """
        for name in ("n_samples", "n_weights"):
            value = getattr(oracle, name, None)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
                raise TypeError(f"oracle must have an integer attribute {name!r}")
            check_int(value, f"oracle.{name}", low=1)
        n_classes = check_int(n_classes, "n_classes", low=1)
        n_features = check_int(n_features, "n_features", low=0, allow_none=True)
        bias = check_number(bias, "bias")
        if not callable(oracle):
            raise TypeError("oracle must be callable: oracle(w) -> (risk, subgradient)")
        if not getattr(oracle, "checked", False):  # a user-defined risk: check its outputs
            oracle = CheckedOracle(oracle)
        self = cls.__new__(cls)
        self.loss, self.penalty, self.alpha = loss, penalty, check_alpha(alpha)
        self.regularizer = make_regularizer(penalty, l1_ratio=l1_ratio, p=p)
        self.data, self.y, self.sample_weight, self.classes_ = None, None, None, classes
        self.oracle, self.n_weights, self.n_classes = oracle, int(oracle.n_weights), int(n_classes)
        per_class = self.n_weights // self.n_classes
        self._layout = (per_class - (bias != 0) if n_features is None else int(n_features),
                        float(bias))
        if per_class * self.n_classes != self.n_weights \
                or self._layout[0] + (bias != 0) != per_class:
            raise ValueError(f"n_weights={self.n_weights} does not split into n_classes="
                             f"{n_classes} x (n_features={n_features} [+1 intercept])")
        return self

    def with_loss(self, loss, loss_param=None):
        """This problem with another scalar loss of the same task: the same data (shared, not
        copied), targets, sample weights, penalty and alpha, and an oracle with the same
        threads and row partitions (the smoothing solver's smoothed problems)."""
        new = Loss(loss, loss_param)
        old = getattr(self.loss, "spec", None)
        if self.data is None or old is None or old.vector or new.spec.task != old.task:
            raise ValueError(f"with_loss needs a Problem on data (X, y) with a scalar loss, "
                             f"and a loss of the same task, got {loss!r} for {self!r}")
        other = copy.copy(self)
        other.loss = new
        other.oracle = LocalOracle(
            self.data, new, self.y, self.sample_weight, n_threads=self.oracle.n_threads,
            n_partitions=[stop - start for start, stop in self.oracle.partitions],
            columns=self.oracle.columns)
        return other

    @property
    def n_samples(self):
        return self.oracle.n_samples

    def risk(self, w):
        """R_emp(w)."""
        return self.oracle(w)[0]

    def objective(self, w):
        """J(w) = alpha Omega(w) + R_emp(w)."""
        return self.alpha * self.regularizer.value(w) + self.oracle(w)[0]

    def objective_at_zero(self):
        """J(0) = R_emp(0), as Omega(0) = 0: for a scalar loss on local data the weighted
        mean (1/m) sum_i c_i l(0, y_i), read from the labels alone (no pass over X); else
        one oracle call.  Summed in another order than the oracle's: equal to
        ``objective(0)`` up to rounding."""
        if self.data is None or self.loss.spec.vector:
            return self.objective(np.zeros(self.n_weights))
        values = self.loss.values(np.zeros(self.n_samples), self.y)[0]
        if self.sample_weight is not None:
            values = values * self.sample_weight
        return float(values.sum() / self.n_samples)

    def objective_gradient(self, w):
        """(J(w), a subgradient of J at w)."""
        risk, grad = self.oracle(w)
        return (self.alpha * self.regularizer.value(w) + risk,
                grad + self.alpha * self.regularizer.subgradient(w))

    def coef_intercept(self, w):
        """(coef_, intercept_) in scikit-learn's shapes: (d,), float or (k, d), (k,)."""
        n_features, bias = ((self.data.n_features, self.data.bias) if self.data is not None
                            else self._layout)
        W = check_weights(w, self.n_weights).reshape(self.n_classes, -1)
        coef = W[:, :n_features]  # a view of w: no second copy of a wide model
        intercept = W[:, -1] * bias if bias else np.zeros(self.n_classes)
        if self.n_classes > 1:
            return coef, intercept
        return coef[0], float(intercept[0])

    def __repr__(self):
        n_features = self.data.n_features if self.data is not None else self._layout[0]
        loss = getattr(self.loss, "name", type(self.oracle).__name__)
        return (f"Problem(n_samples={self.n_samples}, n_features={n_features}, "
                f"loss={loss!r}, penalty={self.penalty!r}, alpha={self.alpha})")
