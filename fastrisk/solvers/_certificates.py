"""Certified upper bounds on J(w) - J* from one oracle call (docs/math.md §4).

Each function returns ``(J(w), bound)`` with ``bound >= J(w) - J*`` (NaN when
the problem gives no such bound).  The stochastic solvers call one of them at
their exact checks; the batch solvers carry their own certificates (BMRM's
gamma_t, Teo et al. 2007, Lemma 1) and SDCA its duality gap from the kernel's
sums.  An exact duality gap for smooth losses lives in
fastrisk/solvers/_dual_gap.py.
"""

import math

import numpy as np

from fastrisk.regularizers import soft_threshold


def lemma5_bound(problem, w):
    """Teo et al. (2007), Lemma 5, for J = alpha/2 ||w||^2 + R_emp:
    ``J(w) - J* <= ||dJ(w)||^2 / (2 alpha)`` (any subgradient; alpha-strong convexity)."""
    objective, grad = problem.objective_gradient(w)
    return objective, float(grad @ grad) / (2.0 * problem.alpha)


def fenchel_bound(problem, w):
    """Lemma 5 generalised from 0.5 ||w||^2 to any Omega (Fenchel duality, docs/math.md §4).

    With a = dR_emp(w), J(u) >= R_emp(w) + <a, u - w> + alpha Omega(u) for all u, so
    ``J(w) - J* <= alpha Omega(w) + <a, w> + alpha Omega*(-a / alpha)``; for the l2
    penalty this is ||a + alpha w||^2 / (2 alpha).
    """
    risk, a = problem.oracle(w)
    return problem.alpha * problem.regularizer.value(w) + risk, fenchel_gap(problem, w, a)


def fenchel_gap(problem, w, a):
    """``fenchel_bound``'s bound from a = dR_emp(w) already at hand (no oracle call)."""
    reg, alpha = problem.regularizer, problem.alpha
    bound = alpha * reg.value(w) + float(a @ w) + alpha * reg.conjugate(-a / alpha)
    return max(bound, 0.0)  # >= 0 by Fenchel-Young: a negative value is rounding


def strong_convexity_bound(problem, w, l1, l2):
    """For alpha Omega = l1 ||w||_1 + l2/2 ||w||^2 with l2 > 0 (sigma-strong convexity):
    ``J(w) - J* <= dist(0, dJ(w))^2 / (2 l2)``, the subgradient of least norm taken
    coordinate-wise; NaN when l2 == 0 (no strong convexity, no certificate)."""
    risk, a = problem.oracle(w)
    J = problem.alpha * problem.regularizer.value(w) + risk
    if l2 == 0.0:
        return J, math.nan
    g = np.where(w != 0, a + l1 * np.sign(w) + l2 * w, soft_threshold(a, l1))
    return J, float(g @ g) / (2.0 * l2)
