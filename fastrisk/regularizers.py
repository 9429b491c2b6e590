"""Regularizers Omega(w) (MATH.md 1, 5, 6): value, subgradient, prox, conjugate.

``prox(v, t) = argmin_w t Omega(w) + 0.5 ||w - v||^2``;
``conjugate(u) = sup_w <u, w> - Omega(w)`` and ``conjugate_grad(u)`` its
gradient, the argmax (the link map the dual-averaging and PGS solvers use).
"""

import numbers

import numpy as np


def soft_threshold(v, t):
    """sgn(v) max(|v| - t, 0): the prox of t ||.||_1."""
    return np.sign(v) * np.maximum(np.abs(v) - t, 0.0)


class L2:
    """Omega = 0.5 ||w||^2."""

    name = "l2"
    strongly_convex = True

    def value(self, w):
        return 0.5 * float(np.dot(w, w))

    def subgradient(self, w):
        return np.array(w, dtype=np.float64)

    def prox(self, v, t):
        return np.asarray(v, dtype=np.float64) / (1.0 + t)

    def conjugate(self, u):
        return 0.5 * float(np.dot(u, u))

    def conjugate_grad(self, u):
        return np.array(u, dtype=np.float64)


class L1:
    """Omega = ||w||_1 (not strongly convex: its conjugate is the indicator of ||u||_inf <= 1)."""

    name = "l1"
    strongly_convex = False

    def value(self, w):
        return float(np.abs(w).sum())

    def subgradient(self, w):
        return np.sign(w).astype(np.float64)

    def prox(self, v, t):
        return soft_threshold(np.asarray(v, dtype=np.float64), t)

    def conjugate(self, u):
        return 0.0 if np.abs(u).max(initial=0.0) <= 1.0 else np.inf

    def conjugate_grad(self, u):
        raise ValueError("the l1 conjugate is an indicator function: it has no gradient map; "
                         "use penalty='elasticnet' with l1_ratio < 1 for a link map")


class ElasticNet:
    """Omega = l1_ratio ||w||_1 + (1 - l1_ratio)/2 ||w||^2 (scikit-learn's convention)."""

    name = "elasticnet"

    def __init__(self, l1_ratio=0.15):
        if not isinstance(l1_ratio, numbers.Real) or not 0.0 <= l1_ratio <= 1.0:
            raise ValueError(f"l1_ratio must be in [0, 1], got {l1_ratio!r}")
        self.l1_ratio = float(l1_ratio)
        self.strongly_convex = self.l1_ratio < 1.0

    def value(self, w):
        r = self.l1_ratio
        return r * float(np.abs(w).sum()) + 0.5 * (1.0 - r) * float(np.dot(w, w))

    def subgradient(self, w):
        r = self.l1_ratio
        return r * np.sign(w) + (1.0 - r) * np.asarray(w, dtype=np.float64)

    def prox(self, v, t):
        r = self.l1_ratio
        return soft_threshold(np.asarray(v, dtype=np.float64), t * r) / (1.0 + t * (1.0 - r))

    def conjugate(self, u):
        r = self.l1_ratio
        if r == 1.0:
            return L1().conjugate(u)
        s = soft_threshold(u, r)
        return float(np.dot(s, s)) / (2.0 * (1.0 - r))

    def conjugate_grad(self, u):
        r = self.l1_ratio
        if r == 1.0:
            return L1().conjugate_grad(u)
        return soft_threshold(np.asarray(u, dtype=np.float64), r) / (1.0 - r)


class Lp:
    """Omega = ||w||_p^2 / (2 (p - 1)), p in (1, 2] (PGS, MATH.md 5); 1/p + 1/q = 1."""

    name = "lp"
    strongly_convex = True  # 1-strongly convex w.r.t. ||.||_p

    def __init__(self, p=2.0):
        if not isinstance(p, numbers.Real) or not 1.0 < p <= 2.0:
            raise ValueError(f"p must be in (1, 2], got {p!r}")
        self.p = float(p)
        self.q = self.p / (self.p - 1.0)

    @staticmethod
    def _link(u, r):
        """Gradient of ||u||_r^2 / 2: ||u||_r^{2-r} |u_i|^{r-1} sgn(u_i)."""
        u = np.asarray(u, dtype=np.float64)
        norm = np.linalg.norm(u, r)
        if norm == 0.0:
            return np.zeros_like(u)
        return norm ** (2.0 - r) * np.abs(u) ** (r - 1.0) * np.sign(u)

    def value(self, w):
        return float(np.linalg.norm(w, self.p)) ** 2 / (2.0 * (self.p - 1.0))

    def subgradient(self, w):
        return self._link(w, self.p) / (self.p - 1.0)

    def conjugate(self, u):
        return float(np.linalg.norm(u, self.q)) ** 2 / (2.0 * (self.q - 1.0))

    def conjugate_grad(self, u):
        return self._link(u, self.q) / (self.q - 1.0)


PENALTIES = ("l2", "l1", "elasticnet", "lp")


def make_regularizer(penalty, *, l1_ratio=0.15, p=2.0):
    """Regularizer for ``penalty`` in PENALTIES."""
    if penalty == "l2":
        return L2()
    if penalty == "l1":
        return L1()
    if penalty == "elasticnet":
        return ElasticNet(l1_ratio)
    if penalty == "lp":
        return Lp(p)
    raise ValueError(f"penalty must be one of {PENALTIES}, got {penalty!r}")
