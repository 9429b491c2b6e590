"""Data-scaled step sizes for losses whose derivative is unbounded (docs/math.md §5, §6).

The step sizes of Pegasos (eta_t = 1/(lambda t)), of RDA with a strongly convex
Psi (beta_t = 0) and of PGS (w_t = grad r*(theta / ((t+1) lambda))) are derived
for losses with a bounded subgradient (Lipschitz losses: hinge, logistic,
absolute, quantile, Huber, ...).  With a loss whose derivative is unbounded
(squared, squared hinge, exponential, Poisson: ``LossSpec.lipschitz`` is None)
and a small lambda, the first steps are about 1/lambda: far beyond the
curvature of the loss, so the iterates oscillate and grow geometrically until
they overflow.

For those losses the solvers add one data-scaled constant L to the
denominator of their steps:

    L = max_i c_i l''_i ||x_i||^2,

the Lipschitz constant of the gradient of the steepest single term
c_i l(<w, x_i>, y_i) (of a mini-batch average too), with l'' the loss's
curvature bound (``Loss.curvature``) or, when it has none (exponential,
Poisson), the larger of its curvatures at the two scores the first iterates
move between: f = 0 (the start w = 0) and the best constant score
f_bar = argmin_f sum_i c_i l(f, y_i) (for Poisson l''(f_bar) = mean count).
That is a local bound, not a global one: such a loss has no step that is safe
everywhere.  Then

* Pegasos: eta_t = 1/(lambda t + L) = 1/(lambda (t + t0)) with t0 = L / lambda.
  The first step is 1/(lambda + L), the classic safe step of gradient
  descent on a term whose gradient is (lambda + L)-Lipschitz, for which the
  gradient step is non-expansive, so the iterates grow at most linearly; the
  schedule beta / (gamma + t) with beta = 1/lambda and gamma = t0 is the one
  of Bottou, Curtis & Nocedal (SIAM Review 2018, Theorem 4.7) for a strongly
  convex objective, which keeps the O(1/(lambda t)) rate.
* RDA (Xiao 2010, Algorithm 1): beta_t = gamma sqrt(t) + L, a nondecreasing
  sequence as Xiao's Theorem 1 requires; with a strongly convex Psi it is the
  "positive constant sequence" of Xiao's section 3.2 (O(ln t) regret) in place
  of the zero sequence, and the denominator sigma t + beta_t of w_{t+1} never
  falls below L.
* PGS (Zhu et al. 2009, Fig. 1): w_t = grad r*(theta / ((t + 1) lambda + L)),
  the same offset t0 = L / lambda on the PGS step counter (r* is homogeneous of
  degree 2, so this scales w_t by (t + 1) lambda / ((t + 1) lambda + L)).

For Lipschitz losses L = 0 and the papers' algorithms run unchanged.  In a
stream (``start=``), the offset is the largest one seen so far: a later chunk
with larger rows raises it, which keeps the schedule nondecreasing.
"""

import numpy as np

from fastrisk import _hessian


def curvature_offset(problem):
    """L = max_i c_i l''_i ||x_i||^2 when the loss's derivative is unbounded, else 0."""
    loss = problem.loss
    if loss.spec.lipschitz is not None:
        return 0.0
    c = problem.sample_weight
    curv = loss.curvature
    if curv is None:  # no global bound: the curvatures at f = 0 and f = f_bar
        y = np.ascontiguousarray(problem.y, dtype=np.float64)
        c_arg = np.empty(0) if c is None else c
        h, h_bar = np.empty(problem.n_samples), np.empty(problem.n_samples)
        f = np.zeros(problem.n_samples)
        _hessian.curvature(loss.spec.kernel_id, loss.param, f, y, c_arg, h)
        f.fill(_best_constant(loss, y, c))
        _hessian.curvature(loss.spec.kernel_id, loss.param, f, y, c_arg, h_bar)
        np.maximum(h, h_bar, out=h)
    else:
        h = curv if c is None else curv * c
    return float(np.max(h * problem.data.row_sqnorms(), initial=0.0))


def _best_constant(loss, y, c, iterations=60):
    """f_bar = argmin_f sum_i c_i l(f, y_i) by bisection on the (nondecreasing) derivative
    sum_i c_i l'(f, y_i); clipped to [-2^30, 2^30] when the infimum is not attained."""

    def slope(f):
        _, d = loss.values(np.full(y.shape[0], f), y)
        return float(d.sum() if c is None else d @ c)

    lo, hi = -1.0, 1.0
    while slope(lo) > 0.0 and lo > -2.0**30:
        lo *= 2.0
    while slope(hi) < 0.0 and hi < 2.0**30:
        hi *= 2.0
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if slope(mid) < 0.0 else (lo, mid)
    return 0.5 * (lo + hi)


def stream_offset(problem, previous):
    """The offset of this call: the largest of ``previous`` (None for a new run) and this
    problem's ``curvature_offset``."""
    offset = curvature_offset(problem)
    return offset if previous is None else max(previous, offset)
