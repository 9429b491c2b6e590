"""Accelerated dual coordinate ascent for the l2 penalty (docs/math.md §7).

Shalev-Shwartz & Zhang, "Accelerated proximal stochastic dual coordinate
ascent for regularized loss minimization" (2014), Algorithm 2 (Catalyst of Lin,
Mairal & Harchaoui 2015 is the same outer loop for any inner method).  With
``J(w) = risk(w) + alpha/2 ||w||^2`` and ``kappa > 0``, outer iteration t
solves, starting from the previous dual variables,

    J_t(w) = J(w) + kappa/2 ||w - y_{t-1}||^2
           = risk(w) + lambda/2 ||w - z||^2 + const,
    lambda = alpha + kappa,  z = kappa y_{t-1} / lambda,

an l2 problem with a larger weight, so plain (multiclass) SDCA needs O(1)
epochs for it instead of O(1 / (alpha n)).  Its dual point is
``v = z + (1/(lambda n)) sum_i c_i x_i u_i^T``, the kernels' own dual sum
offset by the centre, so the kernels run unchanged with lambda in place of
alpha; moving the centre moves v by the same amount (O(d), no pass).  The
inner problem's dual is

    D_t(u) = (1/n) sum_i c_i h_i(u_i) - lambda/2 ||v||^2 + lambda/2 ||z||^2,

and its gap at w = v is ``risk(v) - (1/n) sum c_i h_i(u_i) + lambda <v, v - z>``.
Inner iteration t stops when that gap, estimated after each epoch from the
kernels' running sums (the loss at the scores the epoch visited; no pass over
the data), is below
``eps_t = eta / (2 (1 + eta^-2)) xi_{t-1}``, ``xi_t = (1 - eta/2) xi_{t-1}``,
``xi_1 = (1 + eta^-2) (J(w_0) - D(u_0))``, ``eta = sqrt(alpha / lambda)``
(SS&Z 2014, Algorithm 2); then ``x_t = v`` and
``y_t = x_t + beta (x_t - x_{t-1})``, ``beta = (1 - eta) / (1 + eta)``.

Certificate of the original problem: the same u is feasible for J's dual,
whose primal point is ``(1/(alpha n)) sum c_i x_i u_i^T = (lambda/alpha)(v - z)``, so

    D(u) = (1/n) sum_i c_i h_i(u_i) - (lambda^2 / (2 alpha)) ||v - z||^2.

The estimates between checks read v - z, O(d) once the dual terms are summed; the
exact check computes ``(1/(lambda n)) sum_i c_i x_i u_i^T`` anew from u (one pass)
instead: v and z both move with every centre, and the rounding of those moves (of
the size of z, not of v - z) would leave D above the dual value of u, and the
certificate above J*, near tight tolerances.  J(v) needs an exact pass too; the
exact check runs when the estimate of J(v) - D(u) reaches the target and at least
every FORCED_CHECK epochs (it then also gives the exact inner gap).  The run
reports the best J(v) of the exact checks against the best D(u) (weak duality:
any feasible u bounds J*), with that u as ``extra["dual"]``.

kappa = R^2 / n - alpha, R^2 = max_i c_i ||x_i||^2 (SS&Z 2014's choice, which
makes the inner condition number lambda n / R^2 = 1); :func:`pays` says where the
outer loop may pay, and :class:`Probe` decides there (sdca's ``accelerated="auto"``):
plain epochs first, the outer loop only when their estimated gap contracts slowly.

The inner method (fastrisk/solvers/sdca.py's ``_SDCA``, msdca.py's ``_MSDCA``)
provides: ``v`` (its dual sum, updated in place), ``n``, ``problem``,
``set_l2(lam)``, ``run_epoch()``, ``sums`` ([loss at the visited scores, dual
terms, ||v||^2, ||v||_1], kept by the kernels), ``exact_sums()`` (one pass:
the exact loss sum at v and the dual-term sum, re-synchronizing ``sums``),
``exact_dual_sum()`` (one pass: v - z computed anew from the dual variables),
``unshrink()``, ``tighten_steps(gap)`` (inexact coordinate steps follow the
inner gap), ``output(v)`` (v as the Result's w), ``dual()`` and ``extra()``.  This
module is the method :func:`fastrisk.solvers._epochs.run_epochs` drives.
"""

import math

import numpy as np

from fastrisk.regularizers import is_l2
from fastrisk.solvers._epochs import observed_rate

ACCELERATED = (False, True, "auto")
# "auto" accelerates when AUTO_BAND[0] <= alpha n / R^2 < AUTO_BAND[1] and the data has
# fewer features than rows.  alpha n / R^2 is the inverse of plain SDCA's worst-case
# epoch count scale (SS&Z 2014): near 1 the inner problems are as hard as the original;
# far below the band the outer contraction 1 - eta/2 (eta = sqrt(alpha n / R^2)) is slow,
# and plain SDCA with shrinking often needs far fewer epochs than its worst case (one
# long row also inflates R^2 over the typical row).  With more features than rows
# (sparse text) the rows are nearly orthogonal and plain SDCA beats its worst case too.
# The band is the one where the outer loop was ahead on the binary grid of
# benchmarks/compare_binary.py (its "sdca" and "sdca-acc" columns in
# benchmarks/RESULTS.md) and on MNIST in benchmarks/compare_multiclass.py.
AUTO_BAND = (1e-3, 0.02)
# sdca's accelerated="auto" with a smooth loss probes on the wider PROBE_BAND (a nonsmooth
# loss, whose plain SDCA has no linear rate to observe (SS&Z 2013, Theorem 2), and msdca
# keep AUTO_BAND), and solver="auto" (fastrisk/solvers/auto.py) probes the same way below
# it: PROBE_EPOCHS plain epochs,
# then the observed per-epoch contraction rho of the estimated gap (_epochs.observed_rate)
# and the fraction of rows shrinking left active.  Plain SDCA's worst case is
# 1 - alpha n / (R^2 + alpha n) per epoch (SS&Z 2013, Theorem 1); where it does far better
# (separable data, one long row inflating R^2) the outer loop's 1 - eta/2 is the slower
# contraction, and the outer loop brings every shrunk row back at each new centre, so it
# loses where shrinking removes many rows.  The outer loop runs when rho > PROBE_RATE and
# at least PROBE_ACTIVE of the rows are active.  On benchmarks/compare_binary.py's data
# (rho and the active fraction after PROBE_EPOCHS epochs against the plain and accelerated
# times, in its "sdca" and "sdca-acc" columns) plain SDCA is ahead where rho is at most
# about half (mushrooms, w8a logistic) or where shrinking left a fifth of the rows or more
# out (w8a squared hinge and hinge at small alpha, mushrooms hinge), and the outer loop
# where rho is near 1 with nearly every row active (a9a, ijcnn1, phishing at small alpha).
# The probe's epochs are not lost: the outer loop starts from their dual point.
PROBE_BAND = (AUTO_BAND[0], 0.5)
PROBE_EPOCHS = 4
PROBE_RATE = 0.6
PROBE_ACTIVE = 0.85
# most epochs between two exact passes (the running estimates can stay pessimistic
# with stale loss terms of shrunk rows)
FORCED_CHECK = 10


def check_accelerated(accelerated, problem):
    """Validate the ``accelerated`` option; True/"auto" need the l2 penalty."""
    if isinstance(accelerated, (bool, np.bool_)):
        accelerated = bool(accelerated)
    elif not (isinstance(accelerated, str) and accelerated == "auto"):
        raise ValueError(f"accelerated must be True, False or 'auto', got {accelerated!r}")
    if accelerated is True and not is_l2(problem.regularizer):
        raise ValueError(f"accelerated=True needs the l2 penalty, got {problem.penalty!r}")
    return accelerated


def radius_sq(sqnorm, sample_weight):
    """R^2 = max_i c_i ||x_i||^2 (SS&Z 2014's bound on the rows)."""
    return float(np.max(sqnorm if sample_weight is None else sample_weight * sqnorm))


def pays(problem, R2, band=AUTO_BAND):
    """True when alpha n / R^2 is in ``band`` and n_features < n_samples (l2 only); rows all
    of norm 0 (R^2 = 0) leave nothing to accelerate."""
    ratio = problem.alpha * problem.n_samples / R2 if R2 > 0.0 else math.inf
    return (is_l2(problem.regularizer) and band[0] <= ratio < band[1]
            and problem.data.n_features < problem.n_samples)


def accelerate_after_probe(rate, active_fraction):
    """The probe's decision (see PROBE_RATE): the outer loop from here on."""
    return rate > PROBE_RATE and active_fraction >= PROBE_ACTIVE


def use_acceleration(accelerated, problem, R2):
    """The decision for ``accelerated`` (checked) on ``problem`` with R^2."""
    if accelerated == "auto":
        return pays(problem, R2)
    return accelerated and problem.alpha * problem.n_samples < R2  # kappa > 0


class Accelerated:
    """The outer loop of SS&Z 2014's Algorithm 2 as a method for ``run_epochs``."""

    # The certificate of the original problem improves in steps: D(u) carries the term
    # -(lambda^2 / (2 alpha)) ||v - z||^2, which stays large until the centres settle,
    # and J(v) of a new centre can be above the best one (the extrapolation beta).  The
    # best pair can stay flat for many epochs of a run that converges (the hinge loss at
    # alpha m = 0.01), so run_epochs' stall rule does not apply.
    plateaus = True

    def __init__(self, inner, R2):
        problem, n = inner.problem, inner.n
        self.inner, self.n, self.alpha = inner, n, problem.alpha
        self.kappa = R2 / n - self.alpha
        self.lam = self.alpha + self.kappa
        self.eta = math.sqrt(self.alpha / self.lam)
        self.beta = (1.0 - self.eta) / (1.0 + self.eta)
        # the inner method was started for alpha: v = (1/(alpha n)) X^T c u = w(u) =: y_0;
        # with centre z = kappa y_0 / lambda the same u gives v = y_0 (x_0 = y_0)
        self.y = inner.v.copy()
        self.x_prev = self.y.copy()
        self.z = self.kappa / self.lam * self.y
        inner.set_l2(self.lam)
        self.best_w, self.best_J, self.best_D, self.best_u = None, np.inf, -np.inf, None
        gap0 = self._exact()
        self.xi = (1.0 + self.eta ** -2) * max(gap0, 0.0)
        self.eps = self.eta / (2.0 * (1.0 + self.eta ** -2)) * self.xi
        self.outer, self.inner_epochs, self.since_check = 1, 0, 0
        self.inner_gap = np.inf

    def _exact(self):
        """Two passes: J(v), the original D(u) (from v - z computed anew: module
        docstring), the inner gap; the best pair kept.  Returns the original gap
        J(v) - D(u) at this point."""
        inner, n, v, z, lam = self.inner, self.n, self.inner.v, self.z, self.lam
        loss_sum, dual_sum = inner.exact_sums()
        vv, vz = float(np.vdot(v, v)), float(np.vdot(v, z))
        J = loss_sum / n + 0.5 * self.alpha * vv
        a = inner.exact_dual_sum()
        D = dual_sum / n - lam * lam / (2.0 * self.alpha) * float(np.vdot(a, a))
        self.inner_gap = (loss_sum - dual_sum) / n + lam * (vv - vz)
        if J <= self.best_J:
            self.best_w, self.best_J = inner.output(v), J
        if D >= self.best_D:
            self.best_D, self.best_u = D, inner.dual().copy()
        return J - D

    def _next_centre(self):
        """x_t = v; y_t = x_t + beta (x_t - x_{t-1}); v and z follow the centre."""
        inner, v = self.inner, self.inner.v
        x = v.copy()
        y = x + self.beta * (x - self.x_prev)
        shift = (self.kappa / self.lam) * (y - self.y)
        v += shift
        self.z += shift
        self.x_prev, self.y = x, y
        inner.sums[2], inner.sums[3] = float(np.vdot(v, v)), float(np.abs(v).sum())
        inner.unshrink()
        self.xi *= 1.0 - 0.5 * self.eta
        self.eps = self.eta / (2.0 * (1.0 + self.eta ** -2)) * self.xi
        self.outer += 1
        self.inner_epochs = 0
        self.inner_gap = np.inf  # the new inner problem has had no exact check yet

    def run_epoch(self):
        self.inner.run_epoch()
        self.inner_epochs += 1
        self.since_check += 1
        return False

    def estimate(self, tol, abs_tol):
        """(estimated J(v), whether to check exactly now), from the kernels' sums.

        The inner gap's estimate (the loss at the scores the last epoch visited) decides
        the move to the next centre without a pass over the data; the exact pass runs
        when the estimated gap of the original problem reaches the target (so the run
        stops on a certified gap) and at least every FORCED_CHECK epochs.
        """
        s, n, v, z = self.inner.sums, self.n, self.inner.v, self.z
        vz = float(np.vdot(v, z))
        inner_est = (s[0] - s[1]) / n + self.lam * (s[2] - vz)
        self.inner.tighten_steps(inner_est)
        J_est = s[0] / n + 0.5 * self.alpha * s[2]
        D = s[1] / n - self.lam * self.lam / (2.0 * self.alpha) * (
            s[2] - 2.0 * vz + float(np.vdot(z, z)))
        if J_est - D <= max(tol * abs(J_est), abs_tol) or self.since_check >= FORCED_CHECK:
            return J_est, True
        if inner_est <= self.eps:
            self._next_centre()
        return J_est, False

    def certify(self):
        """The exact check; the next outer iteration when the inner gap is below eps_t.
        An inner gap above eps_t and no smaller than at the previous check of the same
        inner problem brings every row back into the epochs: shrinking judges a row by the
        projected gradients of the epochs so far, and a row it set aside wrongly would keep
        the inner gap above eps_t (and the centre still) for good."""
        previous = self.inner_gap
        self._exact()
        self.inner.tighten_steps(self.inner_gap)
        self.since_check = 0
        if self.inner_gap <= self.eps:
            self._next_centre()
        elif self.inner_gap >= previous:
            self.inner.unshrink()
        return self.best_w, self.best_J, max(self.best_J - self.best_D, 0.0)

    def weights(self):
        return self.inner.output(self.inner.v)

    def extra(self):
        return dict(self.inner.extra(), dual=self.best_u, dual_objective=self.best_D,
                    accelerated=True, kappa=self.kappa, outer_iterations=self.outer)


class Probe:
    """sdca's ``accelerated="auto"`` for a smooth loss inside PROBE_BAND, as a method for
    ``run_epochs``: the inner method's plain epochs; after PROBE_EPOCHS of them the outer
    loop from the current dual point when :func:`accelerate_after_probe` says so."""

    def __init__(self, inner, R2):
        self.inner, self.R2, self.method = inner, R2, inner
        self.epochs, self.rate = 0, None

    def run_epoch(self):
        self.epochs += 1
        return self.method.run_epoch()

    def estimate(self, tol, abs_tol):
        J_est, wants_check = self.method.estimate(tol, abs_tol)
        if self.method is self.inner and self.epochs == PROBE_EPOCHS and not wants_check:
            self.rate = observed_rate(self.inner.gap_estimates)
            if accelerate_after_probe(self.rate, self.inner.n_active / self.inner.n):
                self.method = Accelerated(self.inner, self.R2)
        return J_est, wants_check

    @property
    def plateaus(self):
        return getattr(self.method, "plateaus", False)

    def certify(self):
        return self.method.certify()

    def checked(self, epoch):
        if self.method is self.inner:
            self.inner.checked(epoch)

    def weights(self):
        return self.method.weights()

    def extra(self):
        return dict(self.method.extra(), probe_rate=self.rate)
