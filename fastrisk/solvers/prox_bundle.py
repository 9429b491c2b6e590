"""Proximal bundle method (Do, Le & Foo 2009, Algorithm 4 with Algorithm 3's optimistic R; docs/math.md §4).

Do, Le, Foo, ICML 2009.  For ``J(w) = lambda/2 ||w||^2 + R_emp(w)`` with the
cuts ``(a_i, b_i)`` of BMRM taken at the iterates ``w_i``, step t of a phase
maximizes over ``alpha >= 0, sum alpha <= t``

    D'_t(alpha) = sum_i (tau_i/2 ||w_i||^2 + alpha_i b_i)
                  - ||sum_i (tau_i w_i - alpha_i a_i)||^2 / (2 (lambda t + tau_{1:t}))

and sets ``w_{t+1} = sum_i (tau_i w_i - alpha_i a_i) / (lambda t + tau_{1:t})``
(the minimizer of ``P'_t(w) = t P_t(w) + sum_i tau_i/2 ||w - w_i||^2``, eq. 10).
The proximal points enter only through ``c = sum_i tau_i w_i``, so nothing but
c and the cuts is stored (with cuts in the sample space, c itself in the form
``kappa w0 + X^T u``, w0 the start, see ``_SampleCentre``).  With ``alpha = t beta`` (beta on the simplex, the
constant cut (0, b_0) of BMRM carrying the slack) the dual is the QP of
``qp.py`` with ``H = (t / s) A A^T`` and linear term ``b + A c / s``,
``s = lambda t + tau_{1:t}``.  ``A c`` and ``A w`` are kept per cut without a pass
over the cut matrix: ``A c`` grows by ``tau_t A w_t`` and, from the step's formula,
``A w_{t+1} = (A c - t Q beta) / s`` (O(k^2) with the Gram matrix Q = A A^T); a new
cut gets ``<a, c>`` (from ``X a`` in the sample space) and
``<a, w> = (<a, c> - t (Q beta)_new) / s`` from its Gram row (w was formed from the
same c and beta), its norm from the Gram diagonal; likewise
``||w_{t+1}||^2 = (||c||^2 - 2 t beta^T A c + t^2 beta^T Q beta) / s^2`` with
``||c||^2`` grown by ``tau (2 <c, p> + tau ||p||^2)`` for a proximal point p
(``<c, w> = (||c||^2 - t beta^T A c) / s``), no pass over w; a phase start forms the products with its start point once (``Bundle.products``; cuts stored as in
BMRM, in the sample space on wide data).  The bundle is BMRM's (same bound and
aggregation; both arrays are linear in the cut, so they aggregate alike).

Balancing choice of the proximal weight, with ``A_t = ||a_t||`` and R a bound
on ``||w||``:
``tau_t = (-(lambda t + tau_{1:t-1}) + sqrt((lambda t + tau_{1:t-1})^2 + (lambda R + A_t)^2 / R^2)) / 2``.

Phases.  The paper gives no pseudocode for the optimistic bundle method
("the optimistic strategy ... carries over with little modification",
Section 4); in Algorithm 3 an increase of R ends the phase (``break``) and the
next phase runs its loop again from ``t = 1``, so ``lambda_{1:t}`` and
``tau_{1:t}`` start afresh.  Here likewise a phase is a run of Algorithm 4
with its own t, ``tau_{1:t}`` and proximal points; the cuts are kept (they
lower-bound R_emp whatever the phase), and the phase's first proximal point
is the best iterate so far (in the batch setting J is known, so the best
iterate replaces Algorithm 3's randomly drawn ``w_r``).  A phase starts

* when R grows (Algorithm 3): R starts at ``min(1, 1/sqrt(lambda))`` and is
  multiplied by sqrt(2) whenever an iterate comes within ``sqrt(2 eps / lambda)``
  of it, eps the target suboptimality ``max(tol J(w_best), abs_tol)``;
* on progress (our extension, ``restart``, default 0.03): when the best
  objective has dropped by ``restart`` times the certified gap ``gamma`` of the
  phase's start.  Then
  ``J(w_best) - J* <= (1 - restart) (J(w_phase start) - J*)`` (as
  ``gamma >= J(w_best) - J*``), so each such restart contracts the true
  suboptimality; it moves the proximal centre to the best point like the
  serious steps of the proximal bundle methods of Kiwiel (1983) that
  Section 4 cites.  A small fraction is the better default: the certified gap is
  loose at small lambda, so a large fraction seldom triggers a restart;
  ``restart`` is an option for users who want to tune it.

Why: without phases, tau_1 (the largest weight, ``~ (lambda R + A_1) / (2 R)``)
keeps ``w_1 = 0`` a proximal point for ever, and the proximal weight per step
``tau_{1:t} / t ~ A / (R sqrt(2 t))`` stays far above lambda (a9a, hinge,
lambda = 1e-4, R = 4: 4.5e-4 after 2000 steps), so ``w_{t+1}`` stays pulled toward
the tau-weighted mean of all past iterates and the method stalls far from the
optimum; with phases it reaches LIBLINEAR's objective on the real data sets
(tests/test_prox_bundle.py).

Certificate: the cuts lower-bound R_emp exactly as in BMRM, so BMRM's dual
(12) over the same bundle, maximized by a second warm-started QP, gives a
lower bound on J*; ``gamma_t = min_j J(w_j) - max lower bound`` drives
``tol`` as in BMRM (Lemma 3's bound needs the unknown R and is not used to
stop).
"""

import math
import time

import numpy as np
from scipy.linalg.blas import daxpy as axpy

from fastrisk._qp import sample_combination
from fastrisk.regularizers import is_l2
from fastrisk.solvers._checks import check_number, finite_iterate, start_weights
from fastrisk.solvers._info import SolverInfo
from fastrisk.solvers.bmrm import SampleCuts, check_floor, make_bundle, risk_floor
from fastrisk.solvers.qp import simplex_qp
from fastrisk.stopping import Monitor

# below this s = lam t + tau_{1:t}, s^2 underflows: ||w||^2 is summed from w instead
SMALLEST_S = 1e-150


class _DenseCentre:
    """The phase's ``c = sum_i tau_i point_i`` as a vector of n_weights."""

    def __init__(self, bundle, n_weights):
        self.bundle, self.c = bundle, np.zeros(n_weights)

    def keep_best(self):
        """The current iterate is the best so far (nothing to keep: A w_best comes from the cuts)."""

    def reset(self, point, products):
        """Start a phase at ``point`` (c = 0); returns A point (``products`` if known)."""
        self.c[:] = 0.0
        return self.bundle.products(point) if products is None else products

    def add(self, tau, point):
        axpy(point, self.c, a=tau)  # c += tau * point, in place

    def dot_new_cut(self, a):
        """<a, c> for the cut just added."""
        return float(a @ self.c)

    def iterate(self, t, s, k):
        """w = (c - t A^T beta) / s."""
        return self.bundle.combination(-t / s, base=self.c, base_scale=1.0 / s)


class _SampleCentre:
    """The same c for cuts stored in the sample space (``SampleCuts``, a_i = X^T g_i / m).

    Every iterate is ``w = (c - t X^T G^T beta / m) / s`` and c adds up the phase's start
    point (an earlier point of the run) and such iterates, so every point of the run,
    and c, is ``kappa w0 + X^T u`` with w0 the run's start, a scalar kappa and u of
    length m (the iterate's ``kappa_w``, ``u_w``): adding tau w to c costs O(m), not a
    pass over n_weights, forming w is one pass over X (no pass over w0 when w0 = 0),
    and ``<a, c> = kappa <g, X w0> / m + <X a, u>`` comes from ``X a`` (formed for the
    Gram row).  A phase starts at the best point; its products ``A p0 = G X p0 / m``
    take ``X p0`` from the oracle's scores of its call (``LocalOracle.scores``), kept,
    with its (kappa, u), when it became the best.
    """

    def __init__(self, bundle, problem, w0):
        self.bundle, self.cuts, self.data = bundle, bundle.cuts, problem.data
        self.oracle, self.m = problem.oracle, problem.n_samples
        self.w0, self.w0_zero, self.Xw0 = w0, not w0.any(), None
        self.u, self.u_w, self.best_u = np.zeros(self.m), np.zeros(self.m), np.zeros(self.m)
        self.kappa, self.kappa_w, self.best_kappa = 0.0, 1.0, 1.0  # the start w0: (1, 0)
        self.best_Xw, self.at_start = np.zeros(self.m), False

    def keep_best(self):
        """The current point is the best so far: keep its X w (the last oracle call's
        scores) and its (kappa, u)."""
        self.best_Xw[:] = self.oracle.scores
        if self.Xw0 is None:  # the first call, at w0
            self.Xw0 = self.best_Xw.copy()
        self.best_kappa, self.best_u[:] = self.kappa_w, self.u_w

    def reset(self, point, products):
        """Start a phase at the best point (c = 0); returns A point (``products`` if known)."""
        self.kappa, self.u[:], self.at_start = 0.0, 0.0, True
        if products is not None:
            return products
        return (self.cuts.G[: self.bundle.k] @ self.best_Xw) / self.m

    def add(self, tau, point):
        """c += tau point, point the phase's start (the best point) or the last iterate."""
        kappa, u = (self.best_kappa, self.best_u) if self.at_start else (self.kappa_w, self.u_w)
        self.at_start = False
        self.kappa += tau * kappa
        self.u += tau * u

    def dot_new_cut(self, a):
        if self.Xw0 is None:  # before the first phase: c = 0
            return 0.0
        g = self.cuts.G[self.bundle.k - 1]
        return self.kappa * float(g @ self.Xw0) / self.m + float(self.cuts.last_Xa @ self.u)

    def iterate(self, t, s, k):
        z = self.u - (t / self.m) * (self.bundle.beta[:k] @ self.cuts.G[:k])
        self.kappa_w, self.u_w = self.kappa / s, z / s
        out = np.empty(len(self.w0)) if self.w0_zero else np.multiply(self.w0, self.kappa_w)
        d = self.data
        sample_combination(d.data, d.indices, d.indptr, d.dense, d.bias, self.u_w, out,
                           not self.w0_zero)
        return out


def solve_prox_bundle(problem, *, tol=1e-4, abs_tol=0.0, max_iter=1000, time_limit=None,
                      callback=None, verbose=0, random_state=None, max_bundle=None, start=None,
                      R=None, restart=0.03):
    """Minimize an l2 ``problem`` with the proximal bundle method; see the module docstring.

    R: initial norm bound (default ``min(1, 1/sqrt(alpha))``), multiplied by sqrt(2)
    when an iterate comes within sqrt(2 eps/alpha) of it (Algorithm 3's optimistic rule).
    restart: fraction in (0, 1) of the phase's starting gap by which the best objective
    must drop to start a new phase at the best iterate; None starts phases only when R grows.
    ``Result.extra``: lower_bound, R, tau_sum (of the last phase), n_phases, bundle_size,
    inner_seconds (proximal QP), bound_seconds (certificate QP), gram_seconds.
    """
    SOLVER_INFO.check(problem)
    lam = problem.alpha
    # R^2 divides the weights below: kept within the squares' range
    R = min(1.0, 1.0 / math.sqrt(lam)) if R is None else check_number(R, "R", 1e-150, 1e150)
    if restart is not None:
        restart = check_number(restart, "restart", 0.0, 1.0, low_open=True, high_open=True)
    mon = Monitor(problem, "prox_bundle", tol=tol, max_iter=max_iter, time_limit=time_limit,
                  callback=callback, verbose=verbose, abs_tol=abs_tol)
    floor = risk_floor(problem)
    bundle = make_bundle(problem, max_bundle, floor,
                         extra=("Ac", "Aw", "beta_lb"))
    bundle.extra["beta_lb"][0] = 1.0
    Ac, Aw = bundle.extra["Ac"], bundle.extra["Aw"]
    w = start_weights(problem, start)
    # ||w||^2 of the query point; after the first step from the Gram quantities (below)
    w_sq = best_sq = float(w @ w)
    # c = sum_i tau_i w_i over the phase's proximal points
    centre = (_SampleCentre(bundle, problem, w) if isinstance(bundle.cuts, SampleCuts)
              else _DenseCentre(bundle, problem.n_weights))
    lower, best_A, t_phase, tau_sum = -np.inf, 0.0, 0, 0.0
    c_sq = c_w = 0.0  # ||c||^2 and <c, w> for the current c and iterate w
    new_phase, n_phases, phase_J, phase_gap = True, 0, math.inf, math.inf
    inner_seconds = bound_seconds = gram_seconds = 0.0
    status, t = None, 0
    s = math.nan  # lam t + tau_{1:t} of the last step, read from the second step on
    with mon.interruptible():
        while status is None:
            t += 1
            risk, a = problem.oracle(finite_iterate(w, "prox_bundle", problem))
            check_floor(problem, risk, floor, "prox_bundle")
            objective = 0.5 * lam * w_sq + risk
            start = time.perf_counter()
            bundle.add(a, 0.0, t, beta_lb=0.0)
            k = bundle.k
            ac = centre.dot_new_cut(a)
            Ac[k - 1] = ac
            Q, b = bundle.Q[:k, :k], bundle.b[:k]
            A_t = math.sqrt(Q[k - 1, k - 1])  # ||a_t||, the new Gram row's diagonal entry
            if t == 1:
                aw = bundle.cuts.query_product(a, w)
            else:
                # w = (c - t' A^T beta) / s' of the previous step (c, beta unchanged since;
                # making room keeps A^T beta), so <a_t, w> comes from the new Gram row
                aw = (ac - t_phase * float(Q[k - 1] @ bundle.beta[:k])) / s
            b[k - 1] = risk - aw
            Aw[k - 1] = aw
            gram_seconds += time.perf_counter() - start

            start = time.perf_counter()
            beta_lb, _ = simplex_qp(Q, lam * b, bundle.extra["beta_lb"][:k])
            bundle.extra["beta_lb"][:k] = beta_lb
            lower = max(lower, float(b @ beta_lb - beta_lb @ Q @ beta_lb / (2.0 * lam)))
            bound_seconds += time.perf_counter() - start

            if objective <= mon.best_objective:
                best_A, best_sq = A_t, w_sq
                centre.keep_best()
            # >= 0 but for rounding (lower bounds J*)
            gamma = max(min(mon.best_objective, objective) - lower, 0.0)
            status = mon.check(t, w, objective, gamma)

            start = time.perf_counter()
            point, A_point, A_times_point, point_sq = w, A_t, Aw[:k], w_sq
            if new_phase or (restart is not None
                             and mon.best_objective <= phase_J - restart * phase_gap):
                new_phase, n_phases = False, n_phases + 1
                phase_J, phase_gap = mon.best_objective, gamma
                if mon.best_w is not w:
                    point, A_point, A_times_point, point_sq = mon.best_w, best_A, None, best_sq
                A_times_point = centre.reset(point, A_times_point)
                t_phase, tau_sum, c_sq, c_w = 0, 0.0, 0.0, 0.0
                Ac[:k] = 0.0
            t_phase += 1
            base = lam * t_phase + tau_sum
            tau = 0.5 * (-base + math.sqrt(base * base + (lam * R + A_point) ** 2 / (R * R)))
            tau_sum += tau
            s = lam * t_phase + tau_sum
            centre.add(tau, point)
            c_sq += tau * (2.0 * c_w + tau * point_sq)  # <c, point> = c_w (0 at a phase start)
            Ac[:k] += tau * A_times_point
            beta, _ = simplex_qp((t_phase / s) * Q, b + Ac[:k] / s, bundle.beta[:k])
            bundle.beta[:k] = beta
            w = centre.iterate(t_phase, s, k)  # (c - t A beta) / s
            Q_beta, beta_Ac = Q @ beta, float(beta @ Ac[:k])
            Aw[:k] = (Ac[:k] - t_phase * Q_beta) / s
            # <c, w> and ||w||^2 from ||c||^2, A c and the Gram matrix, without a pass over w
            # (with one where s^2 would underflow: alpha near the smallest floats)
            c_w = (c_sq - t_phase * beta_Ac) / s
            w_sq = max((c_sq - 2.0 * t_phase * beta_Ac + t_phase ** 2 * float(beta @ Q_beta))
                       / (s * s), 0.0) if s > SMALLEST_S else float(w @ w)
            inner_seconds += time.perf_counter() - start

            bundle.mark_active(t, beta_lb)
            # Algorithm 3's optimistic test with the target suboptimality eps; a new phase
            # starts when R grows
            eps = max(tol * abs(mon.best_objective), abs_tol)
            while math.sqrt(w_sq) >= R - math.sqrt(2.0 * eps / lam):
                R *= math.sqrt(2.0)
                new_phase = True
    if mon.interrupted:
        status = "interrupted"
    return mon.result(status, t, lower_bound=lower, R=R, tau_sum=tau_sum, n_phases=n_phases,
                      bundle_size=bundle.k - 1, n_dropped=bundle.n_dropped,
                      n_aggregated=bundle.n_aggregated, inner_seconds=inner_seconds,
                      bound_seconds=bound_seconds, gram_seconds=gram_seconds)


SOLVER_INFO = SolverInfo(
    "prox_bundle", solve_prox_bundle, accepts_penalty=is_l2, penalty_rule="the l2 penalty",
    accepts_loss=lambda spec: True,
    loss_rule="every loss", start="w",
    certificate="J(w_best) - (lower bound of the cutting-plane model)", oracle_only=True)
