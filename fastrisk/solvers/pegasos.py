"""The Pegasos family: projected subgradient descent for l2-regularized risk (docs/math.md §5).

Do, Le & Foo (ICML 2009): Algorithm 1 with eta_t = 1/(lambda t) is
Pegasos; Algorithm 2 adds the proximal terms tau_t/2 ||w - w_t||^2 chosen by
the balancing heuristic (``solve_proximal``); Bartlett et al.'s adaptive
online gradient descent adds tau_t/2 ||w||^2 instead (``solve_adaptive``);
Algorithm 3 is the optimistic proximal solver that starts from a small norm
bound R and doubles R^2 when ||w_t|| approaches it (``solve_optimistic``).
Takac, Bijral, Richtarik & Srebro (ICML 2013): mini-batches of size k with the tail
average w_bar = (2/T) sum_{t > T/2} w_t, and the spectral quantity
beta_b = 1 + (b - 1)(m sigma^2 - 1)/(m - 1) that controls the speed-up.

Each epoch is one kernel call (csrc/_pegasos.pyx) on the lazily scaled
weight vector (csrc/fr_scaled.h): O(nnz(x_i)) per example, the shrink, the
projection onto the ball and the tail average are O(1) per step.

Conventions (our choices where the papers leave them open):

* Problem: penalty "l2", J(w) = alpha/2 ||w||^2 + (1/m) sum_i c_i l(<w,x_i>, y_i),
  alpha = lambda.  The intercept, if any, is the regularized last feature.
* Ball S: radius sqrt(R_emp(0)/alpha).  At the optimum alpha w* = -g for a
  subgradient g of R_emp, and convexity gives R_emp(0) >= R_emp(w*) + <g, -w*> =
  R_emp(w*) + alpha ||w*||^2 >= alpha ||w*||^2 for a nonnegative loss
  (LossSpec.nonnegative; the Poisson loss, which can be negative, is refused), so S
  holds the optimum.  For the hinge loss with unit weights (R_emp(0) = 1) this is
  Pegasos' 1/sqrt(alpha); sample weights scale it by sqrt(mean c_i).
* G (bound on ||g_t||, used by tau_t): alpha * radius + L * max_i c_i ||x_i||,
  which is Alg. 3's sqrt(lambda) + max ||x|| for the hinge loss; the rules
  that use G need a Lipschitz loss (L = Loss.lipschitz).
* Optimistic phases keep the current w when R grows (warm start) and
  restart the step counter t (lambda_{1:t}), but keep the proximal weight
  tau_{1:t} accumulated so far (Alg. 3 restarts both): restarted, the first
  step of each phase jumps by up to 2R and sets off a cascade of doublings
  up to the radius of S, after which the run is Pegasos-like and at small
  lambda far from J* (csrc/_pegasos.pyx).  The output is the tail average or
  the last iterate rather than Alg. 3's random iterate (the paper's footnote 6).
* Step: eta_t = 1/(alpha t) for Lipschitz losses (Alg. 1); for losses whose
  derivative is unbounded (squared, squared hinge, exponential: LossSpec.lipschitz
  None) eta_t = 1/(alpha t + L) with L = max_i c_i l''_i ||x_i||^2, a first step
  that is safe whatever the scale of the data (fastrisk/solvers/_steps.py).
* Output: ``average="tail"`` (default) averages the iterates after step
  t0 = floor(T/2) of the planned T = max_iter * ceil(m/k) steps; if the run
  stops before t0 the last iterate is reported; a run continued from a state
  that already averages (``start=``) continues that average.  ``average="last"``
  reports the last iterate; an integer t0 averages after that global step.
* Stopping: max_iter epochs, time_limit, and every ``check_every`` epochs the
  Lemma 5 certificate (docs/math.md §4) ``J(w) - J_-(w) = ||a + alpha w||^2/(2 alpha)``
  with a = dR_emp(w) from ``problem.oracle``: converged when it is at most
  ``max(tol * J(w), abs_tol)``.  Each check costs one oracle pass (epoch loop,
  schedule and Ctrl-C: fastrisk/solvers/_epochs.py).

Streaming (``partial_fit``): pass ``start=result`` (the previous Result) with the
Problem of the next chunk and ``shuffle=False`` (rows in the given order);
the run continues exactly where the previous one stopped (same step counter,
tau sums, R, average).  With max_iter=1 per chunk, the chunks give the same
iterate as one pass over their concatenation, provided every chunk but the
last has a multiple of ``batch_size`` rows and ``average`` is "last" or an
integer t0 (the same for every chunk).  G and the radius are fixed by the
first chunk (pass ``G=`` to the tau-based solvers to use a bound for the
whole stream, e.g. from max ||x_i||, as one pass over the concatenation does);
the step offset L is the largest over the chunks so far.
"""

import math

import numpy as np

from fastrisk import _pegasos
from fastrisk.regularizers import is_l2
from fastrisk.solvers._certificates import lemma5_bound
from fastrisk.solvers._checks import (StartMismatch, check_bool, check_number, check_size,
                                      finite_iterate, start_state)
from fastrisk.solvers._epochs import check_kernel_status, epoch_orders, run_epochs
from fastrisk.solvers._info import SolverInfo
from fastrisk.solvers._steps import stream_offset
from fastrisk.stopping import check_budget

RULES = {"pegasos": _pegasos.RULE_PEGASOS, "adaptive": _pegasos.RULE_ADAPTIVE,
         "proximal": _pegasos.RULE_PROXIMAL, "optimistic": _pegasos.RULE_PROXIMAL}


class PegasosState:
    """Everything a run needs to continue: w = scale * v, tail average, counters, tau_{1:t}, R.

    ``weights()`` is the current iterate, ``average()`` the running tail
    average (None before it starts), ``steps`` the number of steps taken.
    """

    def __init__(self, solver, n_weights, alpha, radius, G, R, eps, delta, batch_size, offset=0.0):
        self.solver, self.alpha, self.radius, self.G = solver, alpha, radius, G
        self.offset = offset  # L of eta_t = 1/(alpha t + L) (fastrisk/solvers/_steps.py)
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
        # the step counters are int64: a start beyond any run means no average
        start = min(int(start), 2**62)
        if start < 0 or self.counters[2] == start:
            return
        if self.counters[1] > 0:
            raise ValueError(f"state already averages after step {self.counters[2]}; "
                             f"pass the same integer average= to continue it")
        self.counters[2] = start
        self.u = np.zeros_like(self.v)


def ball_radius(problem):
    """Radius sqrt(R_emp(0) / alpha) of the ball S that contains the minimizer (module
    docstring)."""
    return math.sqrt(max(problem.objective_at_zero(), 0.0) / problem.alpha)


def gradient_bound(problem, radius):
    """G = alpha * radius + L * max_i c_i ||x_i|| (module docstring)."""
    L = problem.loss.lipschitz
    norms = np.sqrt(problem.data.row_sqnorms())
    if problem.sample_weight is not None:
        norms = norms * problem.sample_weight
    return problem.alpha * radius + L * float(norms.max())


def spectral_beta(problem, batch_size):
    """(beta_b, sigma^2) of Takac et al. (2013): sigma^2 = ||X||_2^2 / (m max_i ||x_i||^2)."""
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


class _Epochs:
    """The per-epoch step of the Pegasos family for the epoch driver (solvers/_epochs.py)."""

    def __init__(self, problem, solver, state, orders):
        self.problem, self.solver, self.state, self.orders = problem, solver, state, orders
        d = problem.data
        self.rows = (d.data, d.indices, d.indptr, d.dense, d.bias)
        self.c = problem.sample_weight if problem.sample_weight is not None else np.empty(0)
        self.y = np.ascontiguousarray(problem.y, dtype=np.float64)
        self.rule = RULES[solver]

    def run_epoch(self):
        st, problem = self.state, self.problem
        code, _ = _pegasos.pegasos_epoch(
            *self.rows, self.y, self.c, next(self.orders), st.batch_size,
            problem.loss.spec.kernel_id, problem.loss.param, st.alpha, self.rule, st.G,
            st.radius, st.eps, st.delta, st.v, st.u, st.scalars, st.counters, st.offset)
        if code == _pegasos.STATUS_PHASE_DONE:
            return True
        check_kernel_status(code, self.solver, problem, "the iterate overflowed; scale X down")
        return False

    def weights(self):
        return self.state.output()

    def certify(self):
        w = finite_iterate(self.state.output(), self.state.solver, self.problem)
        return (w, *lemma5_bound(self.problem, w))

    def extra(self):
        st = self.state
        beta, sigma2 = spectral_beta(self.problem, st.batch_size)
        return dict(state=st, steps=st.steps, radius=st.radius, G=st.G, R=st.R,
                    doublings=st.doublings, beta_b=beta, sigma2=sigma2,
                    averaged=st.counters[1] > 0)


def _run(problem, solver, *, tol, abs_tol, max_iter, time_limit, callback, verbose,
         random_state, batch_size, average, check_every, shuffle, start, R=None, G=None,
         epsilon=0.0, delta=0.1):
    _INFO[solver].check(problem)
    check_budget(tol, max_iter, time_limit)
    batch_size = check_size(batch_size, "batch_size")
    shuffle = check_bool(shuffle, "shuffle")
    if not (average in ("tail", "last") or (isinstance(average, (int, np.integer))
                                            and not isinstance(average, bool) and average >= 0)):
        raise ValueError(f"average must be 'tail', 'last' or an integer step >= 0, got {average!r}")
    alpha = problem.alpha
    state = start_state(start, solver, PegasosState, copy=True)
    if state is None:
        radius = ball_radius(problem)
        if RULES[solver] == _pegasos.RULE_PEGASOS:
            G = 0.0
        elif G is None:
            G = gradient_bound(problem, radius)
        else:
            G = check_number(G, "G", 0.0, low_open=True)
        if solver == "optimistic":
            R0 = min(1.0, radius)
        else:
            R0 = radius if R is None else check_number(R, "R", 0.0, low_open=True)
        if R0 == 0.0:
            # R_emp(0) = 0 (a nonnegative loss): w* = 0 and S = {0}; the proximal weights
            # tau_t divide by R, and every R > 0 gives steps that the projection onto S
            # turns into w = 0
            R0 = 1.0
        state = PegasosState(solver, problem.n_weights, alpha, radius, G, R0, epsilon, delta,
                             batch_size, stream_offset(problem, None))
    elif state.solver != solver or state.v.shape[0] != problem.n_weights \
            or state.alpha != alpha or state.batch_size != batch_size:
        raise StartMismatch(f"start: its state does not continue a {solver!r} run on this "
                            "problem (n_weights, alpha, batch_size)")
    else:
        state.offset = stream_offset(problem, state.offset)
    steps_per_epoch = -(-problem.n_samples // batch_size)
    if average == "tail":
        if not state.counters[1]:  # a continued state that averages keeps its tail
            state.set_average_start(state.steps + (max_iter * steps_per_epoch) // 2)
    elif average != "last":
        state.set_average_start(int(average))
    orders = epoch_orders(problem.n_samples, shuffle, random_state)
    return run_epochs(problem, solver, _Epochs(problem, solver, state, orders), tol=tol,
                      abs_tol=abs_tol, max_iter=max_iter, time_limit=time_limit,
                      callback=callback, verbose=verbose, check_every=check_every)


_DOC_ARGS = """
    Options: tol / abs_tol (stop when the Lemma 5 bound is at most max(tol J, abs_tol)),
    max_iter (epochs), time_limit (s), callback, verbose, random_state (permutation
    seed), batch_size (k), average ("tail", "last" or a step t0), check_every (epochs
    between certificate checks, 0: only at the end), shuffle (False: rows in order, for
    streaming), start (the Result of a previous run of the same solver, or its
    extra["state"], to continue it; see the module docstring).  The Result's extra
    holds state, steps, radius, G, R, doublings, beta_b, sigma2 and averaged.
"""


def solve_pegasos(problem, *, tol=1e-4, abs_tol=0.0, max_iter=100, time_limit=None,
                  callback=None, verbose=0, random_state=None, batch_size=1, average="tail",
                  check_every=1, shuffle=True, start=None):
    """Pegasos / mini-batch Pegasos: eta_t = 1/(alpha t), projection on S (Do et al. 2009,
    Alg. 1; Takac et al. 2013); eta_t = 1/(alpha t + L) for losses with an unbounded
    derivative (module docstring)."""
    return _run(problem, "pegasos", tol=tol, abs_tol=abs_tol, max_iter=max_iter,
                time_limit=time_limit, callback=callback, verbose=verbose,
                random_state=random_state, batch_size=batch_size, average=average,
                check_every=check_every, shuffle=shuffle, start=start)


def solve_adaptive(problem, *, tol=1e-4, abs_tol=0.0, max_iter=100, time_limit=None,
                   callback=None, verbose=0, random_state=None, batch_size=1, average="tail",
                   check_every=1, shuffle=True, start=None, R=None, G=None):
    """Adaptive online gradient descent (Bartlett et al. 2008): steps on f_t + tau_t/2 ||w||^2.

    ``R`` is the norm bound in tau_t (default: the radius of S), ``G`` the
    gradient bound (default: module docstring)."""
    return _run(problem, "adaptive", tol=tol, abs_tol=abs_tol, max_iter=max_iter,
                time_limit=time_limit, callback=callback, verbose=verbose,
                random_state=random_state, batch_size=batch_size, average=average,
                check_every=check_every, shuffle=shuffle, start=start, R=R, G=G)


def solve_proximal(problem, *, tol=1e-4, abs_tol=0.0, max_iter=100, time_limit=None,
                   callback=None, verbose=0, random_state=None, batch_size=1, average="tail",
                   check_every=1, shuffle=True, start=None, R=None, G=None):
    """Proximal projected subgradient descent, balancing tau_t (Do et al. 2009, Alg. 2).

    ``R`` is the norm bound in tau_t (default: the radius of S), ``G`` the
    gradient bound (default: module docstring)."""
    return _run(problem, "proximal", tol=tol, abs_tol=abs_tol, max_iter=max_iter,
                time_limit=time_limit, callback=callback, verbose=verbose,
                random_state=random_state, batch_size=batch_size, average=average,
                check_every=check_every, shuffle=shuffle, start=start, R=R, G=G)


def solve_optimistic(problem, *, tol=1e-4, abs_tol=0.0, max_iter=100, time_limit=None,
                     callback=None, verbose=0, random_state=None, batch_size=1, average="tail",
                     check_every=1, shuffle=True, start=None, epsilon=None, delta=0.1, G=None):
    """Optimistic proximal SVM solver (Do et al. 2009, Alg. 3): R from min(1, radius),
    doubled as needed.

    ``epsilon`` is Alg. 3's desired suboptimality (default tol * R_emp(0),
    1e-4 * R_emp(0) when tol = 0; R_emp(0) read as 1 when it is 0, where w = 0 is
    optimal), ``delta`` its failure probability, ``G`` the
    gradient bound; a phase of T(R) steps without a doubling ends the run with
    status "converged"."""
    check_budget(tol, max_iter, time_limit)  # tol sets the default epsilon
    if epsilon is None:
        _INFO["optimistic"].check(problem)
        risk0 = problem.risk(np.zeros(problem.n_weights))
        epsilon = (tol if tol > 0 else 1e-4) * (risk0 if risk0 > 0 else 1.0)
        if not epsilon > 0.0:
            raise ValueError(f"the default epsilon, tol * R_emp(0) = {tol:g} * {risk0:g}, "
                             "underflows to 0: rescale sample_weight (only its ratios "
                             "matter) or pass epsilon")
    epsilon = check_number(epsilon, "epsilon", 0.0, low_open=True)
    delta = check_number(delta, "delta", 0.0, 1.0, low_open=True, high_open=True)
    return _run(problem, "optimistic", tol=tol, abs_tol=abs_tol, max_iter=max_iter,
                time_limit=time_limit, callback=callback, verbose=verbose,
                random_state=random_state, batch_size=batch_size, average=average,
                check_every=check_every, shuffle=shuffle, start=start, G=G, epsilon=epsilon,
                delta=delta)


for _f in (solve_pegasos, solve_adaptive, solve_proximal, solve_optimistic):
    _f.__doc__ += _DOC_ARGS


def _scalar_nonnegative(spec):
    return not spec.vector and spec.nonnegative


def _lipschitz_nonnegative(spec):
    return _scalar_nonnegative(spec) and spec.lipschitz is not None


_COMMON = dict(accepts_penalty=is_l2, penalty_rule="the l2 penalty", streams=True, start="state",
               threads=False, epochs=True,
               certificate="||dJ(w)||^2 / (2 alpha) (Teo et al. 2007, Lemma 5)",
               stream_options=(("average", "last"),))
SOLVER_INFO = (
    SolverInfo("pegasos", solve_pegasos, accepts_loss=_scalar_nonnegative,
               loss_rule="nonnegative scalar losses", **_COMMON),
    SolverInfo("adaptive", solve_adaptive, accepts_loss=_lipschitz_nonnegative,
               loss_rule="Lipschitz nonnegative scalar losses", **_COMMON),
    SolverInfo("proximal", solve_proximal, accepts_loss=_lipschitz_nonnegative,
               loss_rule="Lipschitz nonnegative scalar losses", **_COMMON),
    SolverInfo("optimistic", solve_optimistic, accepts_loss=_lipschitz_nonnegative,
               loss_rule="Lipschitz nonnegative scalar losses", **_COMMON),
)
_INFO = {info.name: info for info in SOLVER_INFO}
