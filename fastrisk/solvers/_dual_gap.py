"""Duality gaps of a primal iterate for smooth losses (docs/math.md §7; Fenchel duality).

With ``alpha Omega(w) = lambda (0.5 ||w||^2 + kappa ||w||_1)`` (l2: lambda =
alpha, kappa = 0; elastic net with ratio r < 1: lambda = alpha (1 - r),
kappa = r / (1 - r)) the dual of J is, for any u (SDCA's convention,
Shalev-Shwartz & Zhang 2013, eq. (2))

    D(u) = (1/m) sum_i c_i (-l*(-u_i)) - lambda 0.5 ||soft(v, kappa)||^2,
    v = (1/(lambda m)) sum_i c_i u_i x_i,

and J(w) - J* <= J(w) - D(u) (weak duality).  A primal iterate w of a
smooth loss gives the dual point ``u_i = -l'(f_i)``, f_i = <w, x_i>, whose
v is ``-dR_emp(w) / lambda``: no pass over X beyond the oracle's.

For l2 this gap is not new: Fenchel-Young holds with equality at a
derivative, l*(l'(f)) = f l'(f) - l(f), and the gap collapses to
``||grad J(w)||^2 / (2 lambda)``, the strong-convexity bound (Teo et al.
2010, Lemma 5).  Both are loose by up to the condition number: near w*,
J(w) - J* ~ 0.5 g^T H^{-1} g while the bound divides by lambda.

The tighter certificate here is dual extrapolation (Massias, Gramfort &
Salmon 2018, "Celer", section 3): D is concave and every affine combination
``u(theta) = sum_k theta_k u_k`` (sum theta = 1) of the dual points of the
last K iterates is a dual candidate whose v is the same combination of
the v_k.  Maximizing D over theta (K - 1 unknowns; Newton's method with a
backtracking search that keeps u in the domain of l*) cancels the slowly
decaying error directions of the iterates, and the gap
``J(w) - max(D(u_K), D(u(theta)))`` certifies J(w) - J* with the exact
conjugates of csrc/fr_loss.h.  Cost per check: O(K m) for the mixture,
O(K d) to extend the Gram matrix of the v_k; memory K (m + d) numbers.

A Newton step gives one more dual point (``step_gap``): linearizing -l'
along the step, ``u_i = -(l'(f_i) + l''(f_i) (f_new,i - f_i))``, whose v is
known without a pass over X: with the conjugate-gradient residual
``r = -g - H s`` and the step w_new = w + t s,
``v = w_new + (t r - (1 - t) g) / lambda``.  At w_new the gap is the sum of
the rows' Fenchel-Young residuals, of the order of l'''^2 (X s)^4 / l'', and
``lambda/2 ||w_new - v||^2 = ||t r - (1 - t) g||^2 / (2 lambda)``: the
gradient of w_new is not divided by lambda as for the single point, only
the residual that conjugate gradient left.  Rows where the linearized u
leaves the domain of l* take the domain point nearest to it on the segment
towards -l'(f_new) instead, with v corrected on those rows (a pass over them
alone): the least correction, since v moves by it divided by lambda.
"""

import math

import numpy as np

from fastrisk import _hessian, _oracle
from fastrisk.regularizers import scaled_weights

# the extrapolation runs when the gradient bound is within this factor of the target
REACH = 10.0


def _soft_sq(v, kappa):
    if kappa == 0.0:
        return float(v @ v)
    s = np.maximum(np.abs(v) - kappa, 0.0)
    return float(s @ s)


class GapCertificate:
    """Evaluates J with the oracle and certifies J(w) - J* for smooth losses.

    ``evaluate(w)`` -> (J(w), grad J(w)), keeping the scores of that pass
    (when dual points are kept or ``need_scores``);
    ``gap(w, value, grad)`` -> a certified upper bound on J(w) - J* (NaN when
    the problem has none: a penalty that is not strongly convex or a loss
    that is not smooth).  ``memory``: K, the dual points kept for the
    extrapolation (1: the single dual point u = -l'(Xw); 0: the gradient
    bound alone, from the oracle's (risk, gradient) without scores).
    """

    def __init__(self, problem, memory=4, need_scores=False):
        self.problem = problem
        split = scaled_weights(problem.regularizer, problem.alpha)
        spec = getattr(problem.loss, "spec", None)
        smooth = spec is not None and spec.smooth and not spec.vector
        self.certified = split is not None
        self.lam, self.kappa = split if split is not None else (math.nan, math.nan)
        # dual points need the rows' scores: a compiled oracle over the data
        self.derivatives = spec.conjugate_derivatives \
            if smooth and hasattr(problem.oracle, "with_scores") else None
        if int(memory) < 1:
            self.derivatives = None
        self.memory = int(memory) if self.derivatives is not None else 0
        self._scored = (self.memory > 0 or need_scores) and hasattr(problem.oracle,
                                                                    "with_scores")
        self.A, self.V, self.G = [], [], np.zeros((0, 0))  # a_k = l'(f_k), v_k, V^T V
        self._last = None
        self.n_evaluations = 0

    def evaluate(self, w):
        """(J(w), grad J(w)) from one oracle pass; its scores are kept (``scores``)."""
        problem, reg = self.problem, self.problem.regularizer
        self.n_evaluations += 1
        if not self._scored:
            value, grad = problem.objective_gradient(w)
            self._last = None
            return value, grad
        risk, grad_risk, f = problem.oracle.with_scores(w)
        self._last = (np.array(w, dtype=np.float64), f, grad_risk)
        return (risk + problem.alpha * reg.value(w),
                grad_risk + problem.alpha * reg.subgradient(w))

    def record(self, w, scores, grad_risk):
        """Make (w, its scores, the risk's gradient there) the last evaluation, for a point
        whose J and gradient the caller computed from its scores without an oracle pass
        (Newton's line search, fastrisk/solvers/newton.py)."""
        self._last = (np.array(w, dtype=np.float64), scores, grad_risk)

    @property
    def scores(self):
        """f_i = <w, x_i> at the last evaluated w (None for oracles without rows)."""
        return None if self._last is None else self._last[1]

    def gap(self, w, value, grad, target=None, known=math.inf, derivative=None):
        """Certified bound on J(w) - J* (see the module docstring); ``value`` and ``grad``
        are J(w) and a subgradient of J at w.  ``target`` is the solver's stopping
        threshold: the dual points are extrapolated only when the gradient bound is
        within REACH times it (an extrapolation costs several conjugate evaluations,
        O(K m) each; far from the target it cannot stop the run) and the
        refinement stops once the gap is at most ``target``; None: always, to the end.
        ``known``: a certified bound the caller already holds (e.g. ``step_gap``); the
        result is at most it, and nothing more is computed when it meets ``target``.
        ``derivative``: l'(f_i) of the rows at w, without sample weights, when the caller
        has them from the pass that gave ``grad`` (else computed from the scores)."""
        if not self.certified:
            return math.nan
        # J is lambda-strongly convex: J(w) - J* <= ||g||^2 / (2 lambda) for any subgradient
        # g; for l2 and a smooth loss it equals J(w) - D(-l'(Xw)) exactly
        grad_bound = float(grad @ grad) / (2.0 * self.lam)
        bound = min(grad_bound, known)
        if self.derivatives is None:
            return bound
        if target is not None and not target < bound:
            return bound
        if self._last is None or not np.array_equal(self._last[0], w):
            self.evaluate(w)
        _, f, grad_risk = self._last
        spec = self.problem.loss.spec
        a = derivative if derivative is not None else _oracle.loss_values(
            spec.kernel_id, self.problem.loss.param, f, self.problem.y)[1]
        # every point is kept (O(m + K d)): the extrapolation near the target needs the
        # earlier iterates
        self._push(a, -grad_risk / self.lam)
        # the gate is the newest point's own gap, not ``known``: the extrapolation
        # combines the points -l'(X w_k), and a tighter bound from elsewhere does not
        # bring their combination closer to the target
        if target is not None and grad_bound > REACH * target:
            return bound
        # J(w) - D >= 0 by weak duality: a negative difference is rounding
        return min(bound, max(value - self._best_dual(value, 0.0 if target is None else target),
                              0.0))

    def step_gap(self, value, f_old, t, g_old, r, derivatives=None):
        """Certified bound on J(w_new) - J* from the dual point of a Newton step (module
        docstring): w_new, its scores and ``value`` = J(w_new) are the last evaluation;
        ``f_old`` and ``g_old`` are the scores and the gradient of J at the step's start,
        t the step length and r the residual -g_old - H s of the direction s.
        ``derivatives``: (l'(f_old), l''(f_old), l'(f_new)) without sample weights when
        the caller has them (Newton's line search computes them), else computed here.  inf
        when the problem has no such certificate (not l2, or no scores)."""
        if not self.certified or self.kappa != 0.0 or self._last is None \
                or self.derivatives is None:
            return math.inf
        p = self.problem
        kid, param, y, c, m = (p.loss.spec.kernel_id, p.loss.param, p.y, p.sample_weight,
                               p.n_samples)
        w_new, f_new, _ = self._last
        if derivatives is None:
            h_old = np.empty(m)
            _hessian.curvature(kid, param, f_old, y, np.empty(0), h_old)
            derivatives = (_oracle.loss_values(kid, param, f_old, y)[1], h_old,
                           _oracle.loss_values(kid, param, f_new, y)[1])
        conj, shift = np.empty(m), np.empty(m)
        a_old, h_old, a_new = derivatives
        replaced = _hessian.step_dual(kid, param, a_old, h_old, f_new - f_old, a_new, y, conj,
                                      shift)
        v = w_new + (t * r - (1.0 - t) * g_old) / self.lam
        if replaced:
            # u_i = -a_i moves by -shift_i on the replaced rows: v moves by X^T of that
            v -= self._transpose(shift if c is None else shift * c) / (self.lam * m)
        total = conj.sum() if c is None else float(conj @ c)
        return max(value - (-total / m - 0.5 * self.lam * float(v @ v)), 0.0)  # as ``gap``

    def _transpose(self, coef):
        """X^T coef (with the intercept feature) by the compiled scatter, which skips the
        rows whose coefficient is 0."""
        p = self.problem
        d, oracle = p.data, p.oracle
        out = np.empty(p.n_weights)
        _hessian.scatter(d.data, d.indices, d.indptr, d.dense, d.bias, coef, out,
                         oracle._workspace, oracle.n_threads)
        return out

    # ---- dual extrapolation ------------------------------------------------------------------

    def _push(self, a, v):
        if len(self.A) == max(self.memory, 1):
            self.A.pop(0)
            self.V.pop(0)
            self.G = self.G[1:, 1:]
        dots = np.array([float(vk @ v) for vk in self.V] + [float(v @ v)])
        G = np.empty((len(dots),) * 2)
        G[:-1, :-1] = self.G
        G[-1, :], G[:, -1] = dots, dots
        self.A.append(a)
        self.V.append(v)
        self.G = G

    def _dual(self, a, vv):
        """D at l'-values a (u = -a) with ||soft(v)||^2 = vv; -inf outside the domain."""
        p = self.problem
        conj = _oracle.loss_conjugates(p.loss.spec.kernel_id, p.loss.param, a, p.y)
        c = p.sample_weight
        total = -(conj.sum() if c is None else conj @ c)
        return total / p.n_samples - 0.5 * self.lam * vv if np.isfinite(total) else -math.inf

    def _best_dual(self, value, target, max_newton=20, max_halvings=10):
        """max D over the affine hull of the kept dual points, by damped Newton from the
        newest; it stops once ``value - D <= target``, when the predicted increase is below
        1% of the gap or cannot bring it to ``target`` (twice the quadratic model's increase
        still short), and after a step whose gain fell below half the model's: a damped
        step means the maximizer lies at the border of the domain of l*, where the next
        steps are damped as well."""
        a_last, v_last = self.A[-1], self.V[-1]
        d_last = self._dual(a_last, _soft_sq(v_last, self.kappa))
        K = len(self.A)
        if K < 2 or self.kappa != 0.0:
            return d_last
        p, y, m, lam = self.problem, self.problem.y, self.problem.n_samples, self.lam
        c = np.ones(m) if p.sample_weight is None else p.sample_weight
        dA = np.stack([ak - a_last for ak in self.A[:-1]])  # (K-1, m)
        G = self.G
        # with v(z) = v_last + dV^T z: ||v||^2 = G_ll + 2 z.b + z^T Q z
        b = G[:-1, -1] - G[-1, -1]
        Q = G[:-1, :-1] - G[:-1, -1:] - G[-1:, :-1] + G[-1, -1]
        z, best = np.zeros(K - 1), d_last
        for _ in range(max_newton):
            if value - best <= target:
                break
            a = a_last + z @ dA
            d1, d2 = self.derivatives(a, y, p.loss.param)
            grad = -(dA @ (c * d1)) / m - lam * (b + Q @ z)
            hess = -((dA * (c * d2)) @ dA.T) / m - lam * Q
            try:
                step = np.linalg.solve(hess, -grad)
            except np.linalg.LinAlgError:
                break
            increase = 0.5 * float(grad @ step)  # of the quadratic model (concave: >= 0)
            if not increase > 0.01 * (value - best) or value - best - 2.0 * increase > target:
                break
            for halving in range(max_halvings):
                zt = z + 0.5 ** halving * step
                dt = self._dual(a_last + zt @ dA, G[-1, -1] + 2 * zt @ b + zt @ Q @ zt)
                if dt > best:
                    damped = dt - best < 0.5 * increase
                    z, best = zt, dt
                    break
            else:
                break
            if damped:
                break
        return best
