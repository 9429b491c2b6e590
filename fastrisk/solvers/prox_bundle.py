"""Proximal bundle method (seed 000, Algorithm 4; MATH.md 4).

Do, Le, Foo, ICML 2009.  For ``J(w) = lambda/2 ||w||^2 + R_emp(w)`` with the
cuts ``(a_i, b_i)`` of BMRM taken at the iterates ``w_i``, step t maximizes
over ``alpha >= 0, sum alpha <= t``

    D'_t(alpha) = sum_i (tau_i/2 ||w_i||^2 + alpha_i b_i)
                  - ||sum_i (tau_i w_i - alpha_i a_i)||^2 / (2 (lambda t + tau_{1:t}))

and sets ``w_{t+1} = sum_i (tau_i w_i - alpha_i a_i) / (lambda t + tau_{1:t})``.
The points enter only through ``c = sum_i tau_i w_i``, so nothing but c and
the cuts is stored.  With ``alpha = t beta`` (beta on the simplex, the
constant cut (0, b_0) of BMRM carrying the slack) the dual is the QP of
``qp.py`` with ``H = (t / s) A A^T`` and linear term ``b + A c / s``,
``s = lambda t + tau_{1:t}``; ``A c`` is kept per cut (one product with the
cut matrix per step).  The bundle is BMRM's (same bound and aggregation).

Balancing choice of the proximal weight, with ``A_t = ||a_t||`` and R a bound
on ``||w||``:
``tau_t = (-(lambda t + tau_{1:t-1}) + sqrt((lambda t + tau_{1:t-1})^2 + (lambda R + A_t)^2 / R^2)) / 2``.
R is optimistic (Algorithm 3): it starts at ``min(1, 1/sqrt(lambda))`` and is
multiplied by sqrt(2) whenever an iterate comes within ``sqrt(2 eps / lambda)``
of it, eps the target suboptimality ``max(tol J(w_best), abs_tol)``.

Certificate: the cuts lower-bound R_emp exactly as in BMRM, so BMRM's dual
(12) over the same bundle, maximized by a second warm-started QP, gives a
lower bound on J*; ``gamma_t = min_j J(w_j) - max lower bound`` drives
``tol`` as in BMRM (Lemma 3's bound needs the unknown R and is not used to
stop).
"""

import math
import time

import numpy as np

from fastrisk.solvers.bmrm import Bundle, check_w0, default_max_bundle, risk_floor
from fastrisk.solvers.qp import simplex_qp
from fastrisk.stopping import Monitor


def solve_prox_bundle(problem, *, tol=1e-4, abs_tol=0.0, max_iter=1000, time_limit=None,
                      callback=None, verbose=0, random_state=None, max_bundle=None, w0=None,
                      R=None):
    """Minimize an l2 ``problem`` with the proximal bundle method; see the module docstring.

    R: initial norm bound (default ``min(1, 1/sqrt(alpha))``), doubled optimistically.
    ``Result.extra``: lower_bound, R, tau_sum, bundle_size, inner_seconds (proximal QP),
    bound_seconds (certificate QP), gram_seconds.
    """
    if problem.regularizer.name != "l2":
        raise ValueError(f"solver 'prox_bundle' needs penalty='l2', got {problem.penalty!r}")
    lam = problem.alpha
    R = min(1.0, 1.0 / math.sqrt(lam)) if R is None else R
    if not isinstance(R, (int, float, np.number)) or not R > 0:
        raise ValueError(f"R must be a number > 0, got {R!r}")
    mon = Monitor(problem, "prox_bundle", tol=tol, max_iter=max_iter, time_limit=time_limit,
                  callback=callback, verbose=verbose, abs_tol=abs_tol)
    max_bundle = default_max_bundle(problem.n_weights) if max_bundle is None else max_bundle
    bundle = Bundle(problem.n_weights, max_bundle, risk_floor(problem), extra=("Ac", "beta_lb"))
    bundle.extra["beta_lb"][0] = 1.0
    w = check_w0(problem, w0)
    c = np.zeros(problem.n_weights)  # sum_i tau_i w_i
    tau_sum, lower = 0.0, -np.inf
    inner_seconds = bound_seconds = gram_seconds = 0.0
    status, t = None, 0
    with mon.interruptible():
        while status is None:
            t += 1
            risk, a = problem.oracle(w)
            objective = 0.5 * lam * float(w @ w) + risk
            base = lam * t + tau_sum
            A_t = float(np.linalg.norm(a))
            tau = 0.5 * (-base + math.sqrt(base * base + (lam * R + A_t) ** 2 / (R * R)))
            tau_sum += tau
            s = lam * t + tau_sum
            start = time.perf_counter()
            c += tau * w
            k = bundle.k
            bundle.extra["Ac"][:k] += tau * (bundle.A[:k] @ w)
            bundle.add(a, risk - float(a @ w), t, Ac=float(a @ c), beta_lb=0.0)
            gram_seconds += time.perf_counter() - start

            start = time.perf_counter()
            k = bundle.k
            Q, b = bundle.Q[:k, :k], bundle.b[:k]
            beta, _ = simplex_qp((t / s) * Q, b + bundle.extra["Ac"][:k] / s, bundle.beta[:k])
            bundle.beta[:k] = beta
            w_next = (c - t * bundle.combination()) / s
            inner_seconds += time.perf_counter() - start

            start = time.perf_counter()
            beta_lb, _ = simplex_qp(Q, lam * b, bundle.extra["beta_lb"][:k])
            bundle.extra["beta_lb"][:k] = beta_lb
            lower = max(lower, float(b @ beta_lb - beta_lb @ Q @ beta_lb / (2.0 * lam)))
            bound_seconds += time.perf_counter() - start

            bundle.mark_active(t, beta_lb)
            gamma = min(mon.best_objective, objective) - lower
            status = mon.check(t, w, objective, gamma)
            w = w_next
            # Algorithm 3's optimistic test with the target suboptimality eps
            eps = max(tol * abs(mon.best_objective), abs_tol)
            while float(np.linalg.norm(w)) >= R - math.sqrt(2.0 * eps / lam):
                R *= math.sqrt(2.0)
    if mon.interrupted:
        status = "interrupted"
    return mon.result(status, t, lower_bound=lower, R=R, tau_sum=tau_sum,
                      bundle_size=bundle.k - 1, n_dropped=bundle.n_dropped,
                      n_aggregated=bundle.n_aggregated, inner_seconds=inner_seconds,
                      bound_seconds=bound_seconds, gram_seconds=gram_seconds)
