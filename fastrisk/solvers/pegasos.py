"""The Pegasos family: projected subgradient descent for l2-regularized risk (MATH.md 5).

Seed 000 (Do, Le, Foo, ICML 2009): Algorithm 1 with eta_t = 1/(lambda t) is
Pegasos; Algorithm 2 adds the proximal terms tau_t/2 ||w - w_t||^2 chosen by
the balancing heuristic (``solve_proximal``); Bartlett et al.'s adaptive
online gradient descent adds tau_t/2 ||w||^2 instead (``solve_adaptive``);
Algorithm 3 is the optimistic proximal solver that starts from a small norm
bound R and doubles R^2 when ||w_t|| approaches it (``solve_optimistic``).
Seed 002 (Takac et al., ICML 2013): mini-batches of size k with the tail
average w_bar = (2/T) sum_{t > T/2} w_t, and the spectral quantity
beta_b = 1 + (b - 1)(m sigma^2 - 1)/(m - 1) that controls the speed-up.

Each epoch is one kernel call (csrc/_pegasos.pyx) on the lazily scaled
weight vector (csrc/fr_scaled.h): O(nnz(x_i)) per example, the shrink, the
projection onto the ball and the tail average are O(1) per step.

Conventions (our choices where the papers leave them open):

* Problem: penalty "l2", J(w) = alpha/2 ||w||^2 + (1/m) sum_i c_i l(<w,x_i>, y_i),
  alpha = lambda.  The intercept, if any, is the regularized last feature.
* Ball S: radius 1/sqrt(alpha) for the hinge loss (Pegasos' duality argument:
  alpha ||w*||^2 <= mean c_i = 1), else sqrt(2 R_emp(0)/alpha), from
  alpha/2 ||w*||^2 <= J(w*) <= J(0) for a nonnegative loss (the Poisson loss,
  which can be negative, is refused).  Neither cuts off the optimum.
* G (bound on ||g_t||, used by tau_t): alpha * radius + L * max_i c_i ||x_i||,
  which is Alg. 3's sqrt(lambda) + max ||x|| for the hinge loss; the rules
  that use G need a Lipschitz loss (L = LossSpec.lipschitz).
* Optimistic phases keep the current w when R doubles (warm start) and
  restart the step counter t (lambda_{1:t}), but keep the proximal weight
  tau_{1:t} accumulated so far (Alg. 3 restarts both): restarted, the first
  step of each phase jumps by up to 2R and sets off a cascade of doublings
  up to the radius of S, after which the run is Pegasos-like and at small
  lambda far from J* (csrc/_pegasos.pyx).  The output is the tail average or
  the last iterate rather than Alg. 3's random iterate (the paper's footnote 6).
* Output: ``average="tail"`` (default) averages the iterates after step
  t0 = floor(T/2) of the planned T = max_iter * ceil(m/k) steps; if the run
  stops before t0 the last iterate is reported.  ``average="last"`` reports
  the last iterate; an integer t0 averages after that global step.
* Stopping: max_iter epochs, time_limit, and every ``check_every`` epochs the
  Lemma 5 certificate (MATH.md 4) ``J(w) - J_-(w) = ||a + alpha w||^2/(2 alpha)``
  with a = dR_emp(w) from ``problem.oracle``: converged when it is at most
  ``tol * J(w)``.  Each check costs one oracle pass; it is recorded in History.

Streaming (``partial_fit``): pass ``state=result.extra["state"]`` with the
Problem of the next chunk and ``shuffle=False`` (rows in the given order);
the run continues exactly where the previous one stopped (same step counter,
tau sums, R, average).  With max_iter=1 per chunk, the chunks give the same
iterate as one pass over their concatenation, provided every chunk but the
last has a multiple of ``batch_size`` rows and ``average`` is "last" or an
integer t0 (the same for every chunk).  G and the radius are fixed by the
first chunk (pass ``G=`` to the tau-based solvers to use a bound for the
whole stream, e.g. from max ||x_i||, as one pass over the concatenation does).
"""

import math

import numpy as np

from fastrisk import _pegasos
from fastrisk.stopping import Monitor

RULES = {"pegasos": _pegasos.RULE_PEGASOS, "adaptive": _pegasos.RULE_ADAPTIVE,
         "proximal": _pegasos.RULE_PROXIMAL, "optimistic": _pegasos.RULE_PROXIMAL}


class PegasosState:
    """Everything a run needs to continue: w = scale * v, tail average, counters, tau_{1:t}, R.

    ``weights()`` is the current iterate, ``average()`` the running tail
    average (None before it starts), ``steps`` the number of steps taken.
    """

    def __init__(self, solver, n_weights, alpha, radius, G, R, eps, delta, batch_size):
        self.solver, self.alpha, self.radius, self.G = solver, alpha, radius, G
        self.eps, self.delta, self.batch_size = eps, delta, batch_size
        self.v = np.zeros(n_weights)
        self.u = np.zeros(0)
        phase = _pegasos.optimistic_phase_length(G, alpha, delta, eps, R) if eps > 0 else 0.0
        # [scale, ||v||^2, S, tau_{1:t}, R, T_phase]
        self.scalars = np.array([1.0, 0.0, 0.0, 0.0, R, phase])
        # [t in phase, n_avg, avg_start, total steps, R doublings]
        self.counters = np.array([0, 0, -1, 0, 0], dtype=np.int64)

    @property
    def steps(self):
        return int(self.counters[3])

    @property
    def R(self):
        return float(self.scalars[4])

    @property
    def doublings(self):
        return int(self.counters[4])

    def weights(self):
        return self.scalars[0] * self.v

    def average(self):
        if self.counters[1] == 0:
            return None
        out = np.empty_like(self.v)
        _pegasos.average(self.v, self.u, self.scalars, self.counters, out)
        return out

    def output(self):
        avg = self.average()
        return self.weights() if avg is None else avg

    def set_average_start(self, start):
        if start < 0 or self.counters[2] == start:
            return
        if self.counters[1] > 0:
            raise ValueError(f"state already averages after step {self.counters[2]}; "
                             f"pass the same integer average= to continue it")
        self.counters[2] = start
        self.u = np.zeros_like(self.v)


def _check_int(value, name, low):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def check_l2_problem(problem, solver):
    from fastrisk.problem import Problem

    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a fastrisk Problem, got {type(problem).__name__}")
    if problem.penalty != "l2":
        raise ValueError(f"solver {solver!r} needs penalty='l2', got {problem.penalty!r}")
    if problem.loss.spec.vector:
        raise ValueError(f"solver {solver!r} needs a scalar loss, got {problem.loss.name!r}")


def ball_radius(problem):
    """Radius of the ball S that contains the minimizer (module docstring)."""
    if problem.loss.name == "hinge":
        return 1.0 / math.sqrt(problem.alpha)
    if problem.loss.name == "poisson":
        raise ValueError("the Pegasos family needs a nonnegative loss; poisson can be negative")
    return math.sqrt(2.0 * max(problem.risk(np.zeros(problem.n_weights)), 0.0) / problem.alpha)


def gradient_bound(problem, radius, solver):
    """G = alpha * radius + L * max_i c_i ||x_i|| (module docstring)."""
    L = problem.loss.spec.lipschitz
    if L is None:
        raise ValueError(f"solver {solver!r} needs a Lipschitz loss (hinge, logistic, absolute, "
                         f"huber, ...); {problem.loss.name!r} has unbounded derivative")
    norms = np.sqrt(problem.data.row_sqnorms())
    if problem.sample_weight is not None:
        norms = norms * problem.sample_weight
    return problem.alpha * radius + L * float(norms.max())


def spectral_beta(problem, batch_size):
    """(beta_b, sigma^2) of seed 002: sigma^2 = ||X||_2^2 / (m max_i ||x_i||^2)."""
    from scipy.sparse.linalg import LinearOperator, svds

    data, m = problem.data, problem.n_samples
    if batch_size == 1:
        return 1.0, math.nan

    def matvec(w):
        return data.decision(np.ravel(w).astype(np.float64))

    def rmatvec(g):
        g = np.ravel(g).astype(np.float64)
        out = np.asarray(data.X.T @ g, dtype=np.float64).ravel()
        return np.append(out, data.bias * g.sum()) if data.bias else out

    op = LinearOperator((m, data.n_weights), matvec=matvec, rmatvec=rmatvec, dtype=np.float64)
    v0 = np.ones(min(m, data.n_weights))
    top = float(svds(op, k=1, return_singular_vectors=False, v0=v0)[0])
    sigma2 = top**2 / (m * float(data.row_sqnorms().max()))
    beta = 1.0 + (batch_size - 1) * (m * sigma2 - 1.0) / max(m - 1, 1)
    return beta, sigma2


def _run(problem, solver, *, tol, max_iter, time_limit, callback, verbose, random_state,
         batch_size, average, check_every, shuffle, state, R=None, G=None, epsilon=0.0,
         delta=0.1):
    check_l2_problem(problem, solver)
    batch_size = _check_int(batch_size, "batch_size", 1)
    check_every = _check_int(check_every, "check_every", 1)
    if not isinstance(shuffle, (bool, np.bool_)):
        raise ValueError(f"shuffle must be a bool, got {shuffle!r}")
    if not (average in ("tail", "last") or (isinstance(average, (int, np.integer))
                                            and not isinstance(average, bool) and average >= 0)):
        raise ValueError(f"average must be 'tail', 'last' or an integer step >= 0, got {average!r}")
    mon = Monitor(problem, solver, tol=tol, max_iter=max_iter, time_limit=time_limit,
                  callback=callback, verbose=verbose)
    m, alpha = problem.n_samples, problem.alpha
    rule = RULES[solver]
    if state is None:
        radius = ball_radius(problem)
        if rule == _pegasos.RULE_PEGASOS:
            G = 0.0
        elif G is None:
            G = gradient_bound(problem, radius, solver)
        elif not (isinstance(G, (int, float, np.number)) and G > 0):
            raise ValueError(f"G must be None or a number > 0, got {G!r}")
        if solver == "optimistic":
            R0 = min(1.0, radius)
        else:
            R0 = radius if R is None else float(R)
            if not R0 > 0:
                raise ValueError(f"R must be a number > 0, got {R!r}")
        state = PegasosState(solver, problem.n_weights, alpha, radius, G, R0, epsilon, delta,
                             batch_size)
    else:
        if not isinstance(state, PegasosState) or state.solver != solver:
            raise ValueError(f"state must be the extra['state'] of a previous {solver!r} run")
        if state.v.shape[0] != problem.n_weights or state.alpha != alpha \
                or state.batch_size != batch_size:
            raise ValueError("state does not match this problem (n_weights, alpha, batch_size)")
    steps_per_epoch = -(-m // batch_size)
    if average == "tail":
        state.set_average_start(state.steps + (max_iter * steps_per_epoch) // 2)
    elif average != "last":
        state.set_average_start(int(average))

    d = problem.data
    rng = np.random.default_rng(random_state)
    c = problem.sample_weight if problem.sample_weight is not None else np.empty(0)
    y = np.ascontiguousarray(problem.y, dtype=np.float64)
    identity = np.arange(m, dtype=np.intp)
    status, epoch = None, 0
    while status is None:
        epoch += 1
        order = rng.permutation(m).astype(np.intp) if shuffle else identity
        code, _ = _pegasos.pegasos_epoch(
            d.data, d.indices, d.indptr, d.dense, d.bias, y, c, order, batch_size,
            problem.loss.spec.kernel_id, problem.loss.param, alpha, rule, state.G,
            state.radius, state.eps, state.delta, state.v, state.u, state.scalars,
            state.counters)
        if code == _pegasos.STATUS_OVERFLOW:
            raise FloatingPointError(f"{solver}: the iterate overflowed; scale X down")
        if code == _pegasos.STATUS_BAD_LOSS:
            raise ValueError(f"{solver}: loss {problem.loss.name!r} has no kernel")
        phase_done = code == _pegasos.STATUS_PHASE_DONE
        if phase_done or epoch % check_every == 0 or epoch >= max_iter \
                or (time_limit is not None and mon.elapsed() >= time_limit):
            w = state.output()
            objective, subgrad = problem.objective_gradient(w)
            bound = float(subgrad @ subgrad) / (2.0 * alpha)  # Lemma 5
            status = mon.check(epoch, w, objective, bound, keep_best=False)
            if phase_done and status is None:
                status = "converged"
    beta, sigma2 = spectral_beta(problem, batch_size)
    return mon.result(status, epoch, state=state, steps=state.steps, radius=state.radius,
                      G=state.G, R=state.R, doublings=state.doublings, beta_b=beta,
                      sigma2=sigma2, averaged=state.counters[1] > 0)


_DOC_ARGS = """
    Options: tol (relative Lemma 5 bound), max_iter (epochs), time_limit (s),
    callback, verbose, random_state (permutation seed), batch_size (k),
    average ("tail", "last" or a step t0), check_every (epochs between
    certificate checks), shuffle (False: rows in order, for streaming),
    state (continue a previous run; see the module docstring).  The Result's
    extra holds state, steps, radius, G, R, doublings, beta_b and sigma2.
"""


def solve_pegasos(problem, *, tol=1e-4, max_iter=100, time_limit=None, callback=None,
                  verbose=0, random_state=None, batch_size=1, average="tail", check_every=1,
                  shuffle=True, state=None):
    """Pegasos / mini-batch Pegasos: eta_t = 1/(alpha t), projection on S (seed 000 Alg. 1, seed 002)."""
    return _run(problem, "pegasos", tol=tol, max_iter=max_iter, time_limit=time_limit,
                callback=callback, verbose=verbose, random_state=random_state,
                batch_size=batch_size, average=average, check_every=check_every,
                shuffle=shuffle, state=state)


def solve_adaptive(problem, *, tol=1e-4, max_iter=100, time_limit=None, callback=None,
                   verbose=0, random_state=None, batch_size=1, average="tail", check_every=1,
                   shuffle=True, state=None, R=None, G=None):
    """Adaptive online gradient descent (Bartlett et al. 2008): steps on f_t + tau_t/2 ||w||^2.

    ``R`` is the norm bound in tau_t (default: the radius of S), ``G`` the
    gradient bound (default: module docstring)."""
    return _run(problem, "adaptive", tol=tol, max_iter=max_iter, time_limit=time_limit,
                callback=callback, verbose=verbose, random_state=random_state,
                batch_size=batch_size, average=average, check_every=check_every,
                shuffle=shuffle, state=state, R=R, G=G)


def solve_proximal(problem, *, tol=1e-4, max_iter=100, time_limit=None, callback=None,
                   verbose=0, random_state=None, batch_size=1, average="tail", check_every=1,
                   shuffle=True, state=None, R=None, G=None):
    """Proximal projected subgradient descent, balancing tau_t (seed 000 Alg. 2).

    ``R`` is the norm bound in tau_t (default: the radius of S), ``G`` the
    gradient bound (default: module docstring)."""
    return _run(problem, "proximal", tol=tol, max_iter=max_iter, time_limit=time_limit,
                callback=callback, verbose=verbose, random_state=random_state,
                batch_size=batch_size, average=average, check_every=check_every,
                shuffle=shuffle, state=state, R=R, G=G)


def solve_optimistic(problem, *, tol=1e-4, max_iter=100, time_limit=None, callback=None,
                     verbose=0, random_state=None, batch_size=1, average="tail", check_every=1,
                     shuffle=True, state=None, epsilon=None, delta=0.1, G=None):
    """Optimistic proximal SVM solver (seed 000 Alg. 3): R from min(1, radius), doubled as needed.

    ``epsilon`` is Alg. 3's desired suboptimality (default tol * R_emp(0),
    1e-4 * R_emp(0) when tol = 0),
    ``delta`` its failure probability, ``G`` the gradient bound; a phase of T(R) steps without a
    doubling ends the run with status "converged"."""
    if epsilon is None:
        check_l2_problem(problem, "optimistic")
        epsilon = (tol if tol > 0 else 1e-4) * problem.risk(np.zeros(problem.n_weights))
    if not (isinstance(epsilon, (int, float, np.number)) and epsilon > 0):
        raise ValueError(f"epsilon must be a number > 0, got {epsilon!r}")
    if not (isinstance(delta, (int, float, np.number)) and 0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return _run(problem, "optimistic", tol=tol, max_iter=max_iter, time_limit=time_limit,
                callback=callback, verbose=verbose, random_state=random_state,
                batch_size=batch_size, average=average, check_every=check_every,
                shuffle=shuffle, state=state, G=G, epsilon=float(epsilon), delta=float(delta))


for _f in (solve_pegasos, solve_adaptive, solve_proximal, solve_optimistic):
    _f.__doc__ += _DOC_ARGS
