"""Regularizers Omega(w) (docs/math.md §1, §5, §6): value, subgradient, prox, conjugate.

Each class declares its properties once, as class attributes read by the
solver registry, ``solver="auto"`` and the solvers:
``strongly_convex`` (1-strongly convex in some norm: the dual certificates and
SDCA need it), ``separable`` (a sum over coordinates: coordinate-wise prox and
lazy updates), ``differentiable`` (L-BFGS), ``smooth_conjugate`` (Omega* has
the gradient map ``conjugate_grad``: dual averaging, PGS), and ``l1_l2()``,
the split ``Omega = a ||w||_1 + b/2 ||w||^2`` of the elastic-net family
(and of lp at p = 2, which is l2; None for the others).

``prox(v, t) = argmin_w t Omega(w) + 0.5 ||w - v||^2`` (t >= 0);
``conjugate(u) = sup_w <u, w> - Omega(w)`` and ``conjugate_grad(u)`` its
gradient, the maximizing w (the link map of dual averaging and PGS).
The maps run in the compiled kernels of csrc/fr_conj.h (fastrisk._conj).
Every method takes a 1-D array-like and returns a new float64 array (or a
float); the argument is never modified.
"""

import numpy as np
from scipy.optimize import brentq

from fastrisk import _conj
from fastrisk.data import _finite_or_raise
from fastrisk.solvers._checks import check_choice, check_number


def _vec(x, name, finite=False):
    """``x`` as a contiguous float64 vector; ``finite``: NaN and inf refused (a prox's
    thresholds would map NaN to 0)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {x.shape}")
    if finite:
        _finite_or_raise(x, name)
    return x


def _step(t):
    return check_number(t, "t", 0.0)


def soft_threshold(v, t):
    """sgn(v) max(|v| - t, 0): the prox of t ||.||_1."""
    v = _vec(v, "v")
    out = np.empty_like(v)
    _conj.shrink(v, _step(t), 1.0, out)
    return out


class L2:
    """Omega = 0.5 ||w||^2 (self-conjugate)."""

    name = "l2"
    parameter = None  # the name of its parameter (make_regularizer), or None
    strongly_convex = True
    separable = True
    differentiable = True
    smooth_conjugate = True

    def l1_l2(self):
        return 0.0, 1.0

    def value(self, w):
        w = _vec(w, "w")
        return 0.5 * float(np.dot(w, w))

    def subgradient(self, w):
        return _vec(w, "w").copy()

    def prox(self, v, t):
        return _vec(v, "v", finite=True) / (1.0 + _step(t))

    def conjugate(self, u):
        return self.value(u)

    def conjugate_grad(self, u):
        return _vec(u, "u").copy()


class L1:
    """Omega = ||w||_1 (not strongly convex: its conjugate is the indicator of ||u||_inf <= 1)."""

    name = "l1"
    parameter = None  # the name of its parameter (make_regularizer), or None
    strongly_convex = False
    separable = True
    differentiable = False
    smooth_conjugate = False

    def l1_l2(self):
        return 1.0, 0.0

    def value(self, w):
        return float(np.abs(_vec(w, "w")).sum())

    def subgradient(self, w):
        return np.sign(_vec(w, "w"))

    def prox(self, v, t):
        return soft_threshold(_vec(v, "v", finite=True), t)

    def conjugate(self, u):
        return 0.0 if np.abs(_vec(u, "u")).max(initial=0.0) <= 1.0 else np.inf

    def conjugate_grad(self, u):
        raise ValueError("the l1 conjugate is an indicator function: it has no gradient map; "
                         "use penalty='elasticnet' with l1_ratio < 1 for a link map")


class ElasticNet:
    """Omega = r ||w||_1 + (1 - r)/2 ||w||^2, r = l1_ratio (scikit-learn's convention).

    prox(v, t) = S_{t r}(v) / (1 + t (1 - r)); conjugate_grad(u) = S_r(u) / (1 - r)
    and conjugate(u) = ||S_r(u)||^2 / (2 (1 - r)) (docs/math.md §6, mixed Psi).
    """

    name = "elasticnet"
    parameter = "l1_ratio"  # the name of its parameter (make_regularizer), or None
    separable = True

    def __init__(self, l1_ratio=0.15):
        self.l1_ratio = check_number(l1_ratio, "l1_ratio", 0.0, 1.0)
        self.strongly_convex = self.l1_ratio < 1.0
        self.differentiable = self.l1_ratio == 0.0
        self.smooth_conjugate = self.l1_ratio < 1.0

    def l1_l2(self):
        return self.l1_ratio, 1.0 - self.l1_ratio

    def value(self, w):
        w, r = _vec(w, "w"), self.l1_ratio
        return r * float(np.abs(w).sum()) + 0.5 * (1.0 - r) * float(np.dot(w, w))

    def subgradient(self, w):
        w, r = _vec(w, "w"), self.l1_ratio
        return r * np.sign(w) + (1.0 - r) * w

    def prox(self, v, t):
        v, t, r = _vec(v, "v", finite=True), _step(t), self.l1_ratio
        out = np.empty_like(v)
        _conj.shrink(v, t * r, 1.0 / (1.0 + t * (1.0 - r)), out)
        return out

    def conjugate(self, u):
        r = self.l1_ratio
        if r == 1.0:
            return L1().conjugate(u)
        u = _vec(u, "u")
        sq = _conj.shrink(u, r, 1.0, np.empty_like(u))
        return sq / (2.0 * (1.0 - r))

    def conjugate_grad(self, u):
        r = self.l1_ratio
        if r == 1.0:
            return L1().conjugate_grad(u)
        u = _vec(u, "u")
        out = np.empty_like(u)
        _conj.shrink(u, r, 1.0 / (1.0 - r), out)
        return out


class Lp:
    """Omega = ||w||_p^2 / (2 (p - 1)), p in (1, 2] (PGS, docs/math.md §5); 1/p + 1/q = 1.

    conjugate(u) = ||u||_q^2 / (2 (q - 1)), and conjugate_grad(u) =
    grad(||u||_q^2 / 2) / (q - 1), whose p-norm is ||u||_q / (q - 1).
    Omega is 1-strongly convex with respect to ||.||_p.
    """

    name = "lp"
    parameter = "p"  # the name of its parameter (make_regularizer), or None
    strongly_convex = True
    separable = False
    differentiable = True
    smooth_conjugate = True

    def l1_l2(self):
        return (0.0, 1.0) if self.p == 2.0 else None  # p = 2 is the l2 penalty

    def __init__(self, p=2.0):
        self.p = check_number(p, "p", 1.0, 2.0, low_open=True)
        self.q = self.p / (self.p - 1.0)

    def value(self, w):
        norm = _conj.norm(_vec(w, "w"), self.p)
        return norm * norm / (2.0 * (self.p - 1.0))  # inf on overflow, as for l2

    def subgradient(self, w):
        w = _vec(w, "w")
        out = np.empty_like(w)
        _conj.lp_link(w, self.p, out)
        return out / (self.p - 1.0)

    def conjugate(self, u):
        norm = _conj.norm(_vec(u, "u"), self.q)
        return norm * norm / (2.0 * (self.q - 1.0))

    def conjugate_grad(self, u):
        u = _vec(u, "u")
        out = np.empty_like(u)
        _conj.lp_link(u, self.q, out)
        return out / (self.q - 1.0)

    def prox(self, v, t):
        """argmin_w t ||w||_p^2 / (2(p-1)) + 0.5 ||w - v||^2 by a 1-D root find on N = ||w||_p.

        Optimality: w + (t/(p-1)) N^{2-p} |w_i|^{p-1} sgn(w_i) = v.  For a
        trial N the coordinates solve x_i + lam x_i^{p-1} = |v_i| with
        lam = t N^{2-p} / (p-1) (Newton per coordinate, lp_prox_coords);
        phi(N) = ||x(N)||_p - N is decreasing, phi(0) = ||v||_p >= 0 and
        phi(||v||_p) <= 0, so Brent's method on [0, ||v||_p] finds the N
        at which the trial point is the prox.  p = 2 is v / (1 + t).
        """
        v, t, p = _vec(v, "v", finite=True), _step(t), self.p
        if p == 2.0 or t == 0.0:
            return v / (1.0 + t)
        c = t / (p - 1.0)
        out = np.empty_like(v)
        top = _conj.norm(v, p)
        if top == 0.0:
            return np.zeros_like(v)

        def phi(N):
            return _conj.lp_prox_coords(v, c * N ** (2.0 - p), p, out) - N

        N = brentq(phi, 0.0, top, xtol=1e-15 * top, rtol=4 * np.finfo(float).eps)
        _conj.lp_prox_coords(v, c * N ** (2.0 - p), p, out)
        return out


def penalty_weights(regularizer, alpha):
    """(lam1, lam2) with alpha Omega(w) = lam1 ||w||_1 + lam2/2 ||w||^2, from the
    regularizer's ``l1_l2()`` split; None when Omega has no such form (lp)."""
    split = regularizer.l1_l2()
    return None if split is None else (alpha * split[0], alpha * split[1])


def scaled_weights(regularizer, alpha):
    """(lam, kappa) with alpha Omega(w) = lam (0.5 ||w||^2 + kappa ||w||_1), the form of
    the dual coordinate methods (Shalev-Shwartz & Zhang 2013); None when Omega has no
    such form (lp) or no l2 term (lam = 0: l1)."""
    weights = penalty_weights(regularizer, alpha)
    if weights is None or weights[1] == 0.0:
        return None
    return weights[1], weights[0] / weights[1]


def has_l2_term(regularizer):
    """Whether Omega = a ||w||_1 + b/2 ||w||^2 with b > 0 (the dual coordinate methods'
    form, ``scaled_weights``)."""
    return scaled_weights(regularizer, 1.0) is not None


L2_TERM_RULE = "penalties with an l2 term (l2; elasticnet with l1_ratio < 1)"


def has_l1_term(regularizer):
    """Whether Omega = a ||w||_1 + b/2 ||w||^2 with a > 0 (what cd's sparsity, alpha_max
    and auto's rule for sparse models need)."""
    split = regularizer.l1_l2()
    return split is not None and split[0] > 0.0


def is_l2(regularizer):
    """Whether Omega is 0.5 ||w||^2 by its split (l2, or an elastic net with l1_ratio 0)."""
    return regularizer.l1_l2() == (0.0, 1.0)


def is_l1(regularizer):
    """Whether Omega is ||w||_1 by its split (l1, or an elastic net with l1_ratio 1)."""
    return regularizer.l1_l2() == (1.0, 0.0)


def norm_exponent(regularizer):
    """p when Omega(w) = ||w||_p^2 / (2 (p - 1)) (the lp penalty; 2 for l2, whose split
    says so), else None."""
    p = getattr(regularizer, "p", None)
    return p if p is not None else (2.0 if is_l2(regularizer) else None)


# penalty name -> constructor from the Problem's options
REGULARIZERS = {
    "l2": lambda l1_ratio, p: L2(),
    "l1": lambda l1_ratio, p: L1(),
    "elasticnet": lambda l1_ratio, p: ElasticNet(l1_ratio),
    "lp": lambda l1_ratio, p: Lp(p),
}
PENALTIES = tuple(REGULARIZERS)


def make_regularizer(penalty, *, l1_ratio=0.15, p=2.0):
    """Regularizer for ``penalty`` in PENALTIES.  Every penalty's parameter is checked by its
    own regularizer, used or not: a mistyped l1_ratio beside penalty="l2" is an error (as in
    scikit-learn), not a value silently ignored."""
    check_choice(penalty, "penalty", PENALTIES)
    made = {name: make(l1_ratio, p) for name, make in REGULARIZERS.items()}
    return made[penalty]
