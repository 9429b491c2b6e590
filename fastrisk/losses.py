"""The loss registry (docs/math.md §2): name -> kernel id, properties, NumPy reference.

Scalar losses are evaluated by the C kernels (csrc/fr_loss.h); their NumPy
references here are independent implementations used by the tests.  Vector
losses act on a score matrix F = X W^T (one column per class) and are
evaluated in NumPy.
"""

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from fastrisk import _oracle, _sdca
from fastrisk.solvers._checks import check_choice, check_number


def _sgn(x):
    return np.sign(x)


def _xlogx(s):
    return np.where(s > 0, s * np.log(np.where(s > 0, s, 1.0)), 0.0)


def _in(cond, value):
    return np.where(cond, value, np.inf)


# Each reference: (f, y, p) -> (value, derivative); conjugate: (a, y, p) -> l*(a).
_REFERENCES = {
    "hinge": (
        lambda f, y, p: (np.maximum(0, 1 - y * f), np.where(y * f < 1, -y, 0.0)),
        lambda a, y, p: _in((-a * y >= 0) & (-a * y <= 1), a * y),
    ),
    "squared_hinge": (
        lambda f, y, p: (0.5 * np.maximum(0, 1 - y * f) ** 2, -y * np.maximum(0, 1 - y * f)),
        lambda a, y, p: _in(-a * y >= 0, a * y + 0.5 * a * a),
    ),
    "zero_margin": (
        lambda f, y, p: (np.maximum(0, -y * f), np.where(y * f < 0, -y, 0.0)),
        lambda a, y, p: _in((-a * y >= 0) & (-a * y <= 1), 0.0 * a),
    ),
    "squared_zero_margin": (
        lambda f, y, p: (0.5 * np.minimum(0, y * f) ** 2, y * np.minimum(0, y * f)),
        lambda a, y, p: _in(-a * y >= 0, 0.5 * a * a),
    ),
    "logistic": (
        lambda f, y, p: (np.logaddexp(0, -y * f), -y * np.exp(-np.logaddexp(0, y * f))),
        lambda a, y, p: _in((-a * y >= 0) & (-a * y <= 1), _xlogx(-a * y) + _xlogx(1 + a * y)),
    ),
    "exponential": (
        lambda f, y, p: (np.exp(-y * f), -y * np.exp(-y * f)),
        lambda a, y, p: _in(-a * y >= 0, _xlogx(-a * y) + a * y),
    ),
    "novelty": (
        lambda f, y, p: (np.maximum(0, 1 - f), np.where(f < 1, -1.0, 0.0)),
        lambda a, y, p: _in((a >= -1) & (a <= 0), a),
    ),
    "squared": (
        lambda f, y, p: (0.5 * (f - y) ** 2, f - y),
        lambda a, y, p: a * y + 0.5 * a * a,
    ),
    "absolute": (
        lambda f, y, p: (np.abs(f - y), _sgn(f - y)),
        lambda a, y, p: _in(np.abs(a) <= 1, a * y),
    ),
    "quantile": (
        lambda f, y, p: (np.maximum(p * (f - y), (p - 1) * (f - y)), np.where(f > y, p, p - 1)),
        lambda a, y, p: _in((a >= p - 1) & (a <= p), a * y),
    ),
    "epsilon_insensitive": (
        lambda f, y, p: (np.maximum(0, np.abs(f - y) - p), np.where(np.abs(f - y) > p, _sgn(f - y), 0.0)),
        lambda a, y, p: _in(np.abs(a) <= 1, a * y + p * np.abs(a)),
    ),
    "huber": (
        lambda f, y, p: (
            np.where(np.abs(f - y) <= p, 0.5 * (f - y) ** 2, p * (np.abs(f - y) - 0.5 * p)),
            np.clip(f - y, -p, p),
        ),
        lambda a, y, p: _in(np.abs(a) <= p, a * y + 0.5 * a * a),
    ),
    "poisson": (
        lambda f, y, p: (np.exp(f) - y * f, np.exp(f) - y),
        lambda a, y, p: _in(a + y >= 0, _xlogx(a + y) - (a + y)),
    ),
    "smoothed_hinge": (
        lambda f, y, p: (
            np.where(y * f >= 1, 0.0, np.where(y * f <= 1 - p, 1 - y * f - 0.5 * p, (1 - y * f) ** 2 / (2 * p))),
            -y * np.clip((1 - y * f) / p, 0, 1),
        ),
        lambda a, y, p: _in((-a * y >= 0) & (-a * y <= 1), a * y + 0.5 * p * a * a),
    ),
}


_TINY = 1e-12


def _logistic_conj_derivatives(a, y, p):
    # s = -a y in [0, 1], kept off the ends, where l*' and l*'' are infinite
    s = np.clip(-a * y, _TINY, 1.0 - _TINY)
    return -y * np.log(s / (1.0 - s)), 1.0 / (s * (1.0 - s))


def _shifted_quadratic_derivatives(a, y, p):  # l*(a) = a y + a^2 / 2 on its domain
    return y + a, np.ones_like(a)


def _param(p):
    return p


def _inverse_param(p):
    return 1.0 / p


@dataclass(frozen=True)
class LossSpec:
    """Static facts about one loss: the one place they are written.

    task: "binary" (labels -1/+1), "regression" (real y), "counts" (y >= 0),
    "novelty" (y unused) or "multiclass" (vector loss over classes).
    smooth: differentiable in f with a Lipschitz derivative.
    lipschitz: sup |l'| in f for |y| <= 1, None when unbounded; a function of
        the loss parameter when it depends on it (``Loss.lipschitz`` evaluates it).
    curvature: sup l'' (the Lipschitz constant of l'), None when unbounded or not
        smooth; a function of the parameter when it depends on it.
    nonnegative: l >= 0 everywhere (the Pegasos family's ball argument needs it).
    param: name, default and valid open/closed interval of the loss parameter.
    kernel_id: its id in csrc/fr_loss.h (-1: evaluated in NumPy, vector losses).
    dual_step: SDCA has a coordinate step for it (csrc/fr_sdca.h, read from the kernel).
    dual_box: its SDCA dual is box-constrained (shrinking applies; read from the kernel).
    piecewise_quadratic: l is a quadratic in f on each of finitely many intervals, so J
        is piecewise quadratic along a line (Newton's line search starts from its minimizer).
    conjugate_derivatives: (a, y, p) -> (l*'(a), l*''(a)) inside the domain of l*, for the
        smooth losses whose conjugate is twice differentiable there (a = l'(f)); the
        certificates' dual extrapolation (fastrisk/solvers/_dual_gap.py) needs it.
    inverse_link: the prediction from a score, for the losses whose score is not the
        prediction (poisson: the mean exp(f)); None: the score itself.
    quadratic: l is one quadratic in f (l'' constant): J with the l2 penalty is its own
        Newton model, whose conjugate gradient then runs on to the certificate's residual.
    exponential: l grows exponentially in the score (its value and derivatives overflow
        at scores of a few hundred; BMRM keeps its cuts at points where they do not).
    moreau: for a non-smooth loss without a parameter, the name of the registered loss
        whose instance with parameter gamma is its Moreau envelope
        l_gamma(f) = min_v l(v) + (f - v)^2 / (2 gamma), i.e. l_gamma* = l* + gamma a^2 / 2
        on the same domain (Nesterov 2005's smoothing); then
        l - gamma lipschitz^2 / 2 <= l_gamma <= l.  The smoothing solver reads it.
    """

    name: str
    task: str
    smooth: bool
    lipschitz: Optional[object]
    curvature: Optional[object] = None
    nonnegative: bool = True
    probabilistic: bool = False
    param: Optional[tuple] = None  # (name, default, low, high, low_open, high_open)
    kernel_id: int = -1
    dual_step: bool = False
    dual_box: bool = False
    piecewise_quadratic: bool = False
    conjugate_derivatives: Optional[Callable] = field(default=None, repr=False, compare=False)
    inverse_link: Optional[Callable] = field(default=None, repr=False, compare=False)
    quadratic: bool = False
    exponential: bool = False
    moreau: Optional[str] = None
    reference: Optional[Callable] = field(default=None, repr=False, compare=False)
    conjugate_reference: Optional[Callable] = field(default=None, repr=False, compare=False)

    @property
    def vector(self):
        return self.task == "multiclass"


def _spec(name, task, smooth, lipschitz, **kw):
    ref, conj = _REFERENCES.get(name, (None, None))
    kid = _oracle.LOSS_IDS.get(name, -1)
    return LossSpec(name, task, smooth, lipschitz, kernel_id=kid,
                    dual_step=kid >= 0 and bool(_sdca.has_dual_step(kid)),
                    dual_box=kid >= 0 and bool(_sdca.has_dual_box(kid)),
                    reference=ref, conjugate_reference=conj, **kw)


LOSSES = {
    s.name: s
    for s in [
        _spec("hinge", "binary", False, 1.0, moreau="smoothed_hinge"),
        _spec("squared_hinge", "binary", True, None, curvature=1.0,
              piecewise_quadratic=True, conjugate_derivatives=_shifted_quadratic_derivatives),
        _spec("zero_margin", "binary", False, 1.0),
        _spec("squared_zero_margin", "binary", True, None, curvature=1.0,
              piecewise_quadratic=True,
              conjugate_derivatives=lambda a, y, p: (a, np.ones_like(a))),
        _spec("logistic", "binary", True, 1.0, curvature=0.25, probabilistic=True,
              conjugate_derivatives=_logistic_conj_derivatives),
        _spec("exponential", "binary", True, None, exponential=True),
        _spec("novelty", "novelty", False, 1.0),
        _spec("squared", "regression", True, None, curvature=1.0, piecewise_quadratic=True,
              quadratic=True, conjugate_derivatives=_shifted_quadratic_derivatives),
        _spec("absolute", "regression", False, 1.0),
        _spec("quantile", "regression", False, 1.0, param=("tau", 0.5, 0.0, 1.0, True, True)),
        _spec("epsilon_insensitive", "regression", False, 1.0,
              param=("epsilon", 0.1, 0.0, np.inf, False, True)),
        _spec("huber", "regression", True, _param, curvature=1.0, piecewise_quadratic=True,
              param=("delta", 1.0, 0.0, np.inf, True, True),
              conjugate_derivatives=_shifted_quadratic_derivatives),
        _spec("poisson", "counts", True, None, nonnegative=False, inverse_link=np.exp,
              exponential=True),
        _spec("smoothed_hinge", "binary", True, 1.0, curvature=_inverse_param,
              piecewise_quadratic=True, param=("gamma", 1.0, 0.0, np.inf, True, True),
              conjugate_derivatives=lambda a, y, p: (y + p * a, np.full_like(a, p))),
        _spec("softmax", "multiclass", True, None, probabilistic=True),
        _spec("multiclass_hinge", "multiclass", False, None),
    ]
}
SCALAR_LOSSES = tuple(n for n, s in LOSSES.items() if not s.vector)
VECTOR_LOSSES = tuple(n for n, s in LOSSES.items() if s.vector)


class Loss:
    """A registry entry bound to its parameter value (``loss.param``)."""

    def __init__(self, name, param=None):
        check_choice(name, "loss", sorted(LOSSES))
        self.spec = LOSSES[name]
        self.name = name
        if self.spec.param is None:
            if param is not None:
                raise ValueError(f"loss {name!r} takes no parameter, got loss_param={param!r}")
            self.param = 0.0
        else:
            pname, default, lo, hi, lo_open, hi_open = self.spec.param
            self.param = check_number(default if param is None else param,
                                      f"loss_param ({pname} of loss {name!r})", lo,
                                      hi if np.isfinite(hi) else None, low_open=lo_open,
                                      high_open=hi_open)

    def __repr__(self):
        return f"Loss({self.name!r}, param={self.param})"

    @property
    def lipschitz(self):
        """sup |l'| at this parameter (None: unbounded)."""
        value = self.spec.lipschitz
        return value(self.param) if callable(value) else value

    @property
    def curvature(self):
        """sup l'' at this parameter (None: unbounded or not smooth)."""
        value = self.spec.curvature
        return value(self.param) if callable(value) else value

    def values(self, f, y):
        """Kernel (l(f_i, y_i), l'(f_i, y_i)) for scalar losses."""
        f, y = self._vectors(f, "f", y)
        return _oracle.loss_values(self.spec.kernel_id, self.param, f, y)

    def conjugate(self, a, y):
        """Kernel l*(a_i) at y_i for scalar losses (+inf outside the domain)."""
        a, y = self._vectors(a, "a", y)
        return _oracle.loss_conjugates(self.spec.kernel_id, self.param, a, y)

    def _vectors(self, v, name, y):
        """(v, y) as float64 vectors of one length, for the element-wise kernels."""
        if self.spec.vector:
            raise ValueError(f"the {self.name} loss is a vector loss: it has no element-wise "
                             "values (fastrisk.losses.vector_loss)")
        out = []
        for arg, label in ((v, name), (y, "y")):
            arr = np.asarray(arg)
            if arr.dtype.kind not in "biuf" or arr.ndim != 1:
                raise ValueError(f"{label} must be a 1-d array of real numbers, got dtype "
                                 f"{arr.dtype}, shape {arr.shape}")
            out.append(np.ascontiguousarray(arr, dtype=np.float64))
        if out[0].shape != out[1].shape:
            raise ValueError(f"{name} and y must have the same length, got {out[0].shape[0]} "
                             f"and {out[1].shape[0]}")
        return out


def psd_factor(M):
    """L with L^T L = M for a symmetric positive semidefinite M (k x k), from M's
    eigendecomposition V diag(lambda) V^T as diag(sqrt(lambda)) V^T; eigenvalues above
    -1e-12 max(1, max |M|) (rounding's) count as 0, lower ones are refused.

    The multivariate regression loss 0.5 r^T M r is computed as 0.5 ||L r||^2, a sum of
    squares: >= 0, and accurate for r near M's null space (a singular M), where
    r^T (M r) cancels to rounding errors of eps |M| |r|^2 of either sign."""
    lam, V = np.linalg.eigh(M)
    # an indefinite M makes the loss, and J, unbounded below
    if lam.min() < -1e-12 * max(1.0, float(np.abs(M).max())):
        raise ValueError("M must be positive semidefinite (an indefinite M makes the "
                         "risk unbounded below)")
    return np.ascontiguousarray(np.sqrt(np.maximum(lam, 0.0))[:, None] * V.T)


def vector_loss(name, F, y, *, cost=None, beta=1.0, M=None):
    """Vector losses on scores F (n x k) (docs/math.md §2; Teo et al. 2007, Table 2).

    Returns (values (n,), G (n x k)) with G the gradient in F:
    softmax: log sum exp(F) - F_y, G = softmax(F) - e_y;
    multiclass_hinge: max_y' (F_y' - F_y + [y' != y]), G = e_{y*} - e_y;
    scaled_soft_margin: max_y' Delta(y,y')^beta (F_y' - F_y + Delta(y,y')),
    G = Delta(y,y*)^beta (e_{y*} - e_y), with ``cost`` the k x k matrix Delta
    (zero diagonal; default 0/1);
    multivariate_regression: 0.5 (F_i - Y_i)^T M (F_i - Y_i), G = (F - Y) M
    for a target matrix y = Y (n x k) and a symmetric PSD M (k x k), summed as
    0.5 ||L (F_i - Y_i)||^2 with M = L^T L (``psd_factor``).
    y holds class indices for the other losses.
    """
    n = F.shape[0]
    rows = np.arange(n)
    if name == "scaled_soft_margin":
        k = F.shape[1]
        cost = 1.0 - np.eye(k) if cost is None else np.asarray(cost, dtype=np.float64)
        if cost.shape != (k, k) or (np.diag(cost) != 0).any() or (cost < 0).any():
            raise ValueError(f"cost must be a non-negative ({k}, {k}) matrix with zero diagonal")
        beta = check_number(beta, "beta", 0.0)
        scale = cost[y] ** beta
        terms = scale * (F - F[rows, y][:, None] + cost[y])
        terms[rows, y] = 0.0
        star = np.argmax(terms, axis=1)
        G = np.zeros_like(F)
        G[rows, star] += scale[rows, star]
        G[rows, y] -= scale[rows, star]
        return terms[rows, star], G
    if name == "multivariate_regression":
        M = np.asarray(M, dtype=np.float64)
        Y = np.asarray(y, dtype=np.float64)
        if Y.shape != F.shape:
            raise ValueError(f"y must be a target matrix of shape {F.shape}, got {Y.shape}")
        if M.shape != (F.shape[1],) * 2 or not np.allclose(M, M.T):
            raise ValueError(f"M must be a symmetric ({F.shape[1]}, {F.shape[1]}) matrix")
        L = psd_factor(M)
        T = (F - Y) @ L.T
        return 0.5 * np.einsum("ij,ij->i", T, T), T @ L
    if name == "softmax":
        # log sum exp(F - M) + (M - F_y), M the row's largest score: the log term (in
        # [0, log k]) is kept when |M| dwarfs it, which M + log(...) - F_y would round away
        top = F.max(axis=1)
        E = np.exp(F - top[:, None])
        z = E.sum(axis=1)
        G = E / z[:, None]
        G[rows, y] -= 1.0
        return np.log(z) + (top - F[rows, y]), G
    if name == "multiclass_hinge":
        margin = F - F[rows, y][:, None] + 1.0
        margin[rows, y] = 0.0
        star = np.argmax(margin, axis=1)
        G = np.zeros_like(F)
        G[rows, star] += 1.0
        G[rows, y] -= 1.0
        return margin[rows, star], G
    raise ValueError(f"{name!r} is not a vector loss")
