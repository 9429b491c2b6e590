"""Truncated Newton-CG on the compiled oracle (Lin, Weng & Keerthi 2008; LIBLINEAR's primal solver).

For ``J(w) = alpha/2 ||w||^2 + (1/m) sum_i c_i l(<w, x_i>, y_i)`` with a loss
whose derivative l' is differentiable almost everywhere (logistic, squared
hinge, squared, Huber, smoothed hinge, exponential, Poisson), each outer
iteration is:

1. D_ii = c_i l''(f_i) from the scores of the current w (the oracle pass that
   gave J and grad J also wrote f; csrc/_hessian.pyx, the generalized Hessian
   of Mangasarian (2002) where l' has a kink);
2. the Newton system ``H s = -g`` with ``H s = alpha s + (1/m) X^T (D (X s))``
   is solved approximately by conjugate gradient (Lin, Weng & Keerthi 2008,
   Algorithm 2; with a trust region, Steihaug's CG also stops on the region's
   boundary), preconditioned by a blend of the identity and diag(H) (Hsia,
   Chiang & Lin 2018) and stopped when the quadratic model
   ``Q_i = g.s_i + 0.5 s_i.H s_i`` stalls, ``i (Q_i - Q_{i-1}) >= cg_tol Q_i``
   (Nash & Sofer 1996; the rule Galli & Lin 2021 use, cg_tol 0.5); with few features
   (len(w)^2 <= GRAM_SIZE nnz(X)) the products switch to the Gram matrix
   ``X^T D X`` once they have cost as much as forming it (rent-or-buy), or at
   once when the last system's length forecasts it: the long systems of the last steps
   pay O(len(w)^2) per product, the short first ones nothing;
3. globalization, one of the two Galli & Lin (2021) compare:
   ``line_search`` (default): backtracking from the full step until Armijo's
   sufficient decrease holds; ``trust_region``: the 2008 paper's Algorithm 1,
   the step accepted when J decreases by at least ETA0 of the model's
   prediction and the radius updated by its eq. (2.5) (the constants of
   LIBLINEAR's tron).  The line search is the default because the radius
   can collapse where the generalized Hessian of the squared hinge changes
   (at small alpha the trust region then takes several times the line search's
   steps) and was otherwise within the noise of it on the benchmark sets.

Both evaluate J along the direction as Galli & Lin (2021) do:
conjugate gradient adds up ``z = X s`` from the products ``X d`` its
Hessian-vector kernel computes anyway (the rows without curvature, which the
kernel skips, take one gather pass), so that with f = X w each trial
``J(w + t s) = alpha/2 (w.w + 2 t w.s + t^2 s.s) + (1/m) sum_i c_i l(f_i + t z_i)``
costs O(m), and the accepted point takes one scatter pass for its gradient
``X^T (c l'(f + t z)) / m``, which also gives the diagonal of the next Hessian
for the preconditioner.  For losses that are piecewise quadratic in the score
(squared hinge, squared, Huber, smoothed hinge) J is piecewise quadratic along
s and the line search starts from its minimizer (safeguarded 1-D Newton on
dJ/dt, O(m) per iteration) instead of t = 1: where the set of rows with
curvature changes along s (the squared hinge on nearly separable data, the
first steps from w = 0) the full step can be far from that minimizer on
either side, and backtracking only shortens it.  These updates round: each score is
off by a few ulps of |f_i| + |t z_i| per step and the penalty's sum cancels to within a
few ulps of its terms, negligible from ordinary starts; where the bound on that error
(``_rounding``) reaches REFRESH times the stopping threshold (a start with |w| of 1e12
or more), J, the gradient and the scores are recomputed by an oracle pass instead.

Certificate: the smaller of two duality gaps (fastrisk/solvers/_dual_gap.py,
Fenchel duality, docs/math.md §7), checked after every step: the extrapolated
dual point of the last iterates, never looser than ``||g||^2 / (2 alpha)``,
and the dual point of the step just taken (-l' linearized along it), whose
gap at the new iterate is the rows' Fenchel-Young residuals plus the CG
residual's ``||r||^2 / (2 alpha)`` instead of the new gradient's; where the
line search shortens the step, -l' is also linearized to the full step, which
misses the shortened one by (1 - t) s instead of (1 - t) g / alpha
(``_step_certificate``).  The step
predicted to be the last (its decrement within FINISH times the target) runs CG
on towards the residual that makes this certificate meet ``tol``, so the run
stops at the first iterate that meets it instead of one step later.  For the
squared loss (``LossSpec.quadratic``) J is its own quadratic model and every step is
taken to be the last: one conjugate-gradient solve of the normal equations, run to
that residual (a second step only where J fell so far that ``tol`` J asks for a
smaller one), instead of Newton steps that each restart CG from s = 0.
"""

import math

import numpy as np

from fastrisk import _hessian, _oracle
from fastrisk.config import single_threaded_blas
from fastrisk.regularizers import is_l2
from fastrisk.solvers._dual_gap import REACH, GapCertificate
from fastrisk.solvers._checks import check_bool, check_size, start_weights
from fastrisk.solvers._info import SolverInfo
from fastrisk.stopping import Monitor

# acceptance and radius-update constants (LIBLINEAR tron: eta0, eta1, eta2; sigma1-3)
ETA0, ETA1, ETA2 = 1e-4, 0.25, 0.75
SIGMA1, SIGMA2, SIGMA3 = 0.25, 0.5, 4.0
ARMIJO = 0.01  # sufficient-decrease constant of the line search (LIBLINEAR's newton)
# a Newton step whose decrement is within FINISH times the target is solved to the
# residual the step certificate needs (_steihaug_cg's finish), in at most FINISH_CG times
# the cost of the cg_tol stop (in passes over the rows): the step certificate needs
# ||r|| <= sqrt(2 alpha tol J), which at small alpha is several times below where cg_tol
# stops, and each further CG iteration costs less than the Newton step that would
# otherwise follow (its scatter pass, line search and certificate)
FINISH = 10.0
FINISH_CG = 8
PRECONDITION = 0.01  # weight of diag(H) in the CG preconditioner (Hsia, Chiang & Lin 2018)
# stored entries of X per thread below which the Hessian passes run on one thread: a
# Newton solve makes hundreds of short passes, and waking a second thread for each costs
# about as much as it saves below this size (csrc/_hessian.pyx passes; the oracle pass
# keeps the problem's thread count)
PASS_GRAIN = 250_000
# conjugate gradient forms G = X^T D X once its products have touched GRAM times the
# stored entries that forming G touches (csrc/_hessian.pyx ``cg``; the two cost about the
# same per entry), or at once when the last system's product count, taken as the
# forecast, would touch twice that: the systems grow longer towards the optimum, and
# the short systems of the first steps (which a late switch would make dearer) pay
# nothing.  Only where len(w)^2 <= GRAM_SIZE nnz(X): a product G d then costs a fraction
# of a pass and the n_threads squares of the build stay at most 2 bytes per stored entry
# each
GRAM, GRAM_SIZE = 1.0, 0.25
GLOBALIZATIONS = ("line_search", "trust_region")
# the 1-D minimization stops when |dJ/dt| falls to EXACT_TOL |dJ/dt(0)| (on a piecewise
# quadratic it lands on the root once t is in the root's piece) or after MAX_EXACT steps
EXACT_TOL, MAX_EXACT = 1e-6, 30
EPS = np.finfo(np.float64).eps
# J, its gradient and the scores are recomputed by an oracle pass (``cert.evaluate``) when
# the rounding of their O(m) updates along the steps (``_rounding``) may exceed REFRESH
# times the stopping threshold
REFRESH = 0.01


class _Hessian:
    """H = alpha I + (1/m) X^T D X at the curvature D of the last ``update``: its rows,
    buffers and product count for ``_steihaug_cg``, and the passes at the same D."""

    def __init__(self, problem):
        data, oracle = problem.data, problem.oracle
        self.problem, self.data = problem, data
        self.rows = (data.data, data.indices, data.indptr, data.dense, data.bias)
        self.D = np.empty(problem.n_samples)
        self.c = np.empty(0) if problem.sample_weight is None else problem.sample_weight
        self.n_threads = max(1, min(oracle.n_threads, data.nnz // PASS_GRAIN))
        n_w = problem.n_weights
        self.gram_cost = GRAM if n_w * n_w <= GRAM_SIZE * data.nnz else math.inf
        # the oracle's per-thread buffers have the same shape; calls never overlap
        self.workspace = oracle._workspace
        self.diag = None  # diag(X^T D X) at the current D, when a scatter pass gave it
        self.n_products = 0
        self.last_products = 0  # of the last system: the forecast for the next

    def update(self, scores=None, D=None):
        """D_ii = c_i l''(f_i) from the scores, or the given D; returns the number of rows
        with D_ii != 0."""
        p = self.problem
        self.diag = None
        if D is not None:
            self.D = D
            return int(np.count_nonzero(D))
        return _hessian.curvature(p.loss.spec.kernel_id, p.loss.param, scores, p.y, self.c,
                                  self.D)

    def gradient(self, multipliers, diag=False):
        """(1/m) X^T g from the rows' g_i = c_i l'_i (one scatter pass); with ``diag``
        the same pass also keeps diag(X^T D X) for ``preconditioner``."""
        p = self.problem
        coef = multipliers * (1.0 / p.n_samples)
        out = np.empty(p.n_weights)
        if diag:
            self.diag = np.empty(p.n_weights)
            _hessian.scatter(*self.rows, coef, out, self.workspace, self.n_threads, self.D,
                             self.diag)
        else:
            _hessian.scatter(*self.rows, coef, out, self.workspace, self.n_threads)
        return out

    def directional(self, s, z):
        """X s, given z = X s on the rows with curvature (conjugate gradient's sum):
        the rows without curvature are filled in by one gather pass over them alone."""
        _hessian.inactive_dots(*self.rows, self.D, s, z, self.n_threads)
        return z

    def preconditioner(self):
        """M = (1 - PRECONDITION) I + PRECONDITION diag(H / alpha) (Hsia, Chiang & Lin 2018,
        eq. (9), for LIBLINEAR's scaling of the Hessian, I + C X^T D X = H / alpha)."""
        p = self.problem
        if self.diag is None:  # no gradient pass at this D yet (the first step)
            self.gradient(np.zeros(p.n_samples), diag=True)
        diag = self.diag * (PRECONDITION / (p.n_samples * p.alpha))
        diag += 1.0
        return diag


def _steihaug_cg(hess, g, delta, cg_tol, max_cg, M=None, finish=(0.0, 0.0),
                 finish_cg=FINISH_CG):
    """Approximate argmin_s g.s + 0.5 s.H s over ||s|| <= delta (the paper's Algorithm 2),
    preconditioned by the diagonal M when given (only without a trust region, delta = inf).

    Conjugate gradient from s = 0 with the residual r = -g - H s, the preconditioned
    residual z = M^{-1} r and the direction d; each iteration takes the exact step along d,
    stops on the region's boundary (Steihaug) when ||s|| would exceed delta, and stops
    when the quadratic model ``Q = g.s + 0.5 s.H s = 0.5 g.s`` (r is orthogonal to s)
    stalls: ``i (Q_i - Q_{i-1}) >= cg_tol Q_i``.
    finish = (decrease, residual): a step whose model decrease -Q (the Newton decrement,
    about J(w) - J* near w*) is at most ``decrease`` is taken to be the last one, and CG
    goes on until ||r|| <= ``residual`` (the step certificate's ||r||^2 / (2 alpha) term,
    ``GapCertificate.step_gap``), for at most ``finish_cg`` times the cost of the cg_tol
    stop (in passes over the rows: products by the Gram matrix cost a fraction of one).
    The whole loop runs in one kernel call (csrc/_hessian.pyx ``cg``).
    Returns (s, r, n_cg, xs) with r = -g - H s the final residual and xs = X s on the rows
    with curvature (the sum of the products X d the kernel computes anyway).
    """
    s, r = np.empty_like(g), np.empty_like(g)
    xs = np.empty(hess.problem.n_samples)
    n_cg = _hessian.cg(*hess.rows, hess.D, hess.problem.alpha, g,
                       np.empty(0) if M is None else M, delta, cg_tol, max_cg,
                       finish[0], finish[1], finish_cg, s, r, xs, hess.workspace,
                       hess.n_threads, hess.gram_cost, hess.last_products)
    hess.n_products += n_cg
    hess.last_products = n_cg
    return s, r, n_cg, xs


class _Line:
    """phi(t) = J(w + t s) in O(m) from f = X w and z = X s (the module docstring).  Each
    evaluation also keeps the rows' l'_i and l''_i at w + t s: the accepted point's
    gradient, Hessian and step certificate start from them."""

    def __init__(self, problem, w, s, f, z):
        self.problem, self.f, self.z = problem, f, z
        self.ww, self.ws, self.ss = float(w @ w), float(w @ s), float(s @ s)
        self.c = np.empty(0) if problem.sample_weight is None else problem.sample_weight
        self.n_trials = 0
        self._at = (None,)  # (t, sums, l', l'') of the last evaluation

    def _sums(self, t):
        if self._at[0] != t:
            self.n_trials += 1
            p, m = self.problem, len(self.z)
            a, h = np.empty(m), np.empty(m)
            sums = _hessian.along(p.loss.spec.kernel_id, p.loss.param, self.f, self.z, p.y,
                                  self.c, t, a, h)
            self._at = (t, sums, a, h)
        return self._at[1]

    def value(self, t):
        """J(w + t s)."""
        reg = 0.5 * self.problem.alpha * (self.ww + t * (2.0 * self.ws + t * self.ss))
        return reg + self._sums(t)[0] / len(self.z)

    def slope(self, t):
        """(phi'(t), phi''(t)), the second the generalized one where l' has a kink."""
        p, m = self.problem, len(self.z)
        _, d1, d2 = self._sums(t)
        return p.alpha * (self.ws + t * self.ss) + d1 / m, p.alpha * self.ss + d2 / m

    def rows(self, t):
        """(l'_i, l''_i) at w + t s, without sample weights."""
        self._sums(t)
        return self._at[2], self._at[3]


def solve_newton(problem, *, tol=1e-4, abs_tol=0.0, max_iter=200, time_limit=None,
                 callback=None, verbose=0, start=None, random_state=None, cg_tol=0.5,
                 max_cg=500, globalization="line_search", precondition=True):
    """Minimize ``problem`` by truncated Newton-CG; see the module docstring.

    max_iter counts Newton (outer) iterations.  start: a weight vector or a
    Result (warm start; replaced by w = 0 when J(start) overflows).  cg_tol: conjugate
    gradient stops once the relative decrease of the quadratic model, times the
    iteration count, is at most cg_tol (Nash & Sofer 1996).  max_cg: conjugate-gradient
    iterations per Newton step.
    globalization: "line_search" (backtracking on the untruncated CG step) or
    "trust_region" (the 2008 paper's).  precondition: the diagonal preconditioner
    for CG (line search only; with the quadratic-model stop it cut the
    Hessian-vector products on most problems of benchmarks/compare_binary.py).
    random_state is accepted for the common signature; the method is deterministic.
    ``result.extra``: ``n_cg`` (Hessian-vector products in all),
    ``n_evaluations`` (oracle passes), ``n_trials`` (evaluations of J or dJ/dt along a
    direction, O(m) each), ``n_active`` (rows with nonzero curvature at the end).
    """
    reason = SOLVER_INFO.why_not(problem)
    if reason is not None:
        raise ValueError(reason)
    if not isinstance(cg_tol, (int, float, np.number)) or not 0 < cg_tol < 1:
        raise ValueError(f"cg_tol must be a number in (0, 1), got {cg_tol!r}")
    max_cg = check_size(max_cg, "max_cg")
    if globalization not in GLOBALIZATIONS:
        raise ValueError(f"globalization must be one of {GLOBALIZATIONS}, got {globalization!r}")
    mon = Monitor(problem, "newton", tol=tol, max_iter=max_iter, time_limit=time_limit,
                  callback=callback, verbose=verbose, abs_tol=abs_tol,
                  stall_rule=True)
    cert = GapCertificate(problem, need_scores=True)
    hess = _Hessian(problem)

    w = start_weights(problem, start)
    it = n_trials = 0  # defined before the first check, which an interrupt can end
    with mon.interruptible(), single_threaded_blas():
        try:
            with np.errstate(over="ignore"):
                J, g = cert.evaluate(w)
        except FloatingPointError:  # the loss overflows at the start
            if start is None:
                raise
            J = math.inf
        if not math.isfinite(J) and start is not None:  # from w = 0 instead
            w = np.zeros(problem.n_weights)
            J, g = cert.evaluate(w)
        n_active = hess.update(cert.scores)
        bound = cert.gap(w, J, g, _target(mon, J))
        status = mon.check(0, w, J, bound)
        delta = math.sqrt(float(g @ g)) if globalization == "trust_region" else math.inf
        precondition = check_bool(precondition, "precondition") and globalization == "line_search"
        exact = problem.loss.spec.piecewise_quadratic
        quadratic = problem.loss.spec.quadratic
        f = cert.scores
        rows = _derivatives(problem, f)  # l', l'' of the rows at w
        drift = 0.0  # bound on |f - X w| since the last pass (``_rounding``)
        while status is None:
            it += 1
            M = hess.preconditioner() if precondition else None
            target = _target(mon, J)
            # the squared loss's every step is the last: J is its own quadratic model
            decrease, finish_cg = (math.inf, int(max_cg)) if quadratic else \
                (FINISH * target, FINISH_CG)
            s, r, _, xs = _steihaug_cg(hess, g, delta, cg_tol, int(max_cg), M,
                                       finish=(decrease, math.sqrt(problem.alpha * target)),
                                       finish_cg=finish_cg)
            line = _Line(problem, w, s, f, hess.directional(s, xs))
            if globalization == "trust_region":
                step, delta = _trust_region_step(line, J, g, s, r, delta, first=it == 1)
            else:
                step = _line_search_step(line, J, float(g @ s), exact)
            n_trials += line.n_trials
            if step is not None:
                t, J = step
                f_old, f = f, f + t * line.z
                w = w + t * s
                a_old, h_old = rows
                rows = line.rows(t)
                stop_at = _target(mon, J)
                drift += EPS * (np.abs(f_old).max(initial=0.0)
                                + abs(t) * np.abs(line.z).max(initial=0.0))
                if _rounding(problem, line, t, drift, rows[0]) > REFRESH * stop_at:
                    J, g = cert.evaluate(w)
                    f, drift = cert.scores, 0.0
                    rows = _derivatives(problem, f)
                    n_active = hess.update(D=_weighted(problem, rows[1]))
                    bound = cert.gap(w, J, g, _target(mon, J), derivative=rows[0])
                else:
                    n_active = hess.update(D=_weighted(problem, rows[1]))
                    grad_risk = hess.gradient(_weighted(problem, rows[0]), diag=precondition)
                    cert.record(w, f, grad_risk)
                    g_new = grad_risk + problem.alpha * w
                    known = _step_certificate(cert, problem.alpha, J, f_old, line.z, t, g, r,
                                              s, (a_old, h_old, rows[0]), REACH * stop_at)
                    bound = cert.gap(w, J, g_new, stop_at, known=known, derivative=rows[0])
                    g = g_new
            status = mon.check(it, w, J, bound)
            if status is None and (step is None and globalization == "line_search"
                                   or delta <= 1e-12 * math.sqrt(float(w @ w))):
                # no decrease of J found along s (or the region shrank to the rounding of
                # w): the precision limit of J
                status = "stalled"
    status = "interrupted" if mon.interrupted else status
    return mon.result(status, it, w=w, objective=J, bound=bound, n_cg=hess.n_products,
                      n_evaluations=cert.n_evaluations, n_trials=n_trials,
                      n_active=n_active)


def _rounding(problem, line, t, drift, derivative):
    """A bound on the rounding error of J(w + t s) as ``_Line`` sums it: the penalty
    alpha/2 (w.w + 2 t w.s + t^2 s.s) cancels to within a few ulps of its terms, and each
    score f_i + t z_i is off by at most ``drift`` (the rounding of the updates since the
    last pass), which moves the risk by at most drift (1/m) sum_i c_i |l'_i|.  Both are
    negligible next to ``tol`` J from ordinary starts; from a start far from the optimum
    (|w| of 1e12 and more) they are not, and J, its gradient and the certificate would
    describe another point."""
    reg = 0.5 * problem.alpha * (line.ww + abs(2.0 * t * line.ws) + t * t * line.ss)
    loss = drift * float(np.abs(_weighted(problem, derivative)).mean())
    return 4.0 * EPS * reg + loss


def _step_certificate(cert, alpha, J, f_old, z, t, g, r, s, derivatives, reach):
    """The smaller gap at w_new = w + t s of two dual points of the Newton step s (or inf):
    -l' linearized to w_new (``GapCertificate.step_gap``), whose v misses w_new by
    (t r - (1 - t) g) / alpha, and linearized to the full step w + s, whose v is
    w + s + r / alpha and misses w_new by (r + alpha (1 - t) s) / alpha: where the line
    search shortens the step (the squared hinge whose active rows change along s), g is
    about H s and the first miss carries (1 - t) H s / alpha, the second only (1 - t) s.
    The second is ``step_gap`` of a unit step from the scores f_new - z with the residual
    r + alpha (1 - t) s (the same u and v).  Each gap is at least its miss's
    ||.||^2 / (2 alpha) (the rows' Fenchel-Young residuals are >= 0) up to the rows it
    replaces: it is computed (O(m), plus a pass over the replaced rows) only when that
    term is within ``reach``."""
    best = math.inf
    candidates = [(f_old, t, r, t * r - (1.0 - t) * g)]
    if t != 1.0:
        full = r + (alpha * (1.0 - t)) * s
        candidates.append((f_old + (t - 1.0) * z, 1.0, full, full))
    for start, length, residual, miss in candidates:
        if float(miss @ miss) <= 2.0 * alpha * reach:
            best = min(best, cert.step_gap(J, start, length, g, residual,
                                           derivatives=derivatives))
    return best


def _trust_region_step(line, J, g, s, r, delta, first):
    """(accepted (1, J(w + s)) or None, new radius): the paper's Algorithm 1, eq. (2.5)."""
    gs = float(g @ s)
    predicted = -0.5 * (gs - float(s @ r))
    J_new = line.value(1.0)
    actual = J - J_new
    snorm = math.sqrt(float(s @ s))
    if first:
        delta = min(delta, snorm)
    # minimizer of the 1-D quadratic through J, g.s and J_new (Lin & More 1999)
    curv = J_new - J - gs
    step = SIGMA3 if curv <= 0 else max(SIGMA1, -0.5 * gs / curv)
    if actual < ETA0 * predicted:
        delta = min(max(step, SIGMA1) * snorm, SIGMA2 * delta)
    elif actual < ETA1 * predicted:
        delta = max(SIGMA1 * delta, min(step * snorm, SIGMA2 * delta))
    elif actual < ETA2 * predicted:
        delta = max(SIGMA1 * delta, min(step * snorm, SIGMA3 * delta))
    else:
        delta = max(delta, min(step * snorm, SIGMA3 * delta))
    if predicted > 0 and actual > ETA0 * predicted:
        return (1.0, J_new), delta
    return None, delta


def _line_search_step(line, J, gs, exact, max_halvings=20):
    """Accepted (t, J(w + t s)) or None: backtracking from the full Newton step, or from
    the minimizer along s when ``exact``, until Armijo's condition
    J(w + t s) <= J(w) + ARMIJO t g.s holds (Galli & Lin 2021, Algorithm 2)."""
    if not gs < 0:
        return None
    t = _minimizer(line, gs) if exact else 1.0
    for _ in range(max_halvings):
        J_new = line.value(t)
        if J_new <= J + ARMIJO * t * gs:
            return t, J_new
        t *= 0.5
    return None


def _minimizer(line, gs):
    """argmin_t phi(t) for a convex phi with phi'(0) = gs < 0: 1-D Newton from t = 1 on
    phi', kept inside the bracket [lo, hi] of the root (phi'(lo) < 0 < phi'(hi)) by
    bisection, or doubling while no hi is known; exact on a piecewise quadratic phi once
    t and the root share a piece."""
    lo, hi, t = 0.0, math.inf, 1.0
    for _ in range(MAX_EXACT):
        d1, d2 = line.slope(t)
        if abs(d1) <= EXACT_TOL * -gs:
            break
        if d1 < 0:
            lo = t
        else:
            hi = t
        t_new = t - d1 / d2
        if not lo < t_new < hi:
            t_new = 2.0 * lo if hi == math.inf else 0.5 * (lo + hi)
        t = t_new
    return t


def _derivatives(problem, f):
    """(l'(f_i), l''(f_i)) of every row, without sample weights."""
    kid, param, y = problem.loss.spec.kernel_id, problem.loss.param, problem.y
    h = np.empty(len(f))
    _hessian.curvature(kid, param, f, y, np.empty(0), h)
    return _oracle.loss_values(kid, param, f, y)[1], h


def _weighted(problem, v):
    """c_i v_i (v itself for unit weights)."""
    return v if problem.sample_weight is None else v * problem.sample_weight


def _target(mon, J):
    """The bound at which the Monitor stops (tol relative to J, or abs_tol)."""
    return max(mon.tol * abs(J), mon.abs_tol)


def _twice_differentiable(spec):
    return spec.smooth and not spec.vector


SOLVER_INFO = SolverInfo(
    name="newton",
    func=solve_newton,
    accepts_penalty=is_l2,
    penalty_rule="the l2 penalty",
    accepts_loss=_twice_differentiable,
    loss_rule="losses with a (generalized) second derivative",
    start="w",
    certificate="duality gap of the extrapolated dual point of the last iterates or of "
                "the dual point of the Newton step",
    threads=True,
)
