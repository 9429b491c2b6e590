"""Stopping rules, History and Result shared by every solver.

``tol`` always means one thing: stop when a certified upper bound on
``J(w) - J*`` (BMRM's gamma_t, the SDCA duality gap, the Lemma 5 bound of
docs/math.md §4) is at most ``max(tol * J(w), abs_tol)``.  Solvers without a
certificate say so (``bound`` is NaN) and stop on their budget (max_iter,
time_limit).
"""

import contextlib
import logging
import math
import numbers
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from fastrisk.solvers._checks import check_int, check_number

logger = logging.getLogger("fastrisk")

# "stalled": the solver cannot make further progress in floating point (e.g. a line search
# failing at the precision limit) before its certificate reached ``tol``, or its iterations
# stopped improving J and the certified lower bound (``Monitor.stalled``).
STATUSES = ("converged", "max_iter", "time_limit", "callback", "interrupted", "stalled")

# Monitor.stalled: after STALL_START recorded iterations, at each power of two, the run is
# stalled when its second half improved neither the best objective nor the best certified
# lower bound J - bound of its first half by more than STALL_GAIN |J|: the iterations
# repeat themselves (a dual method at an alpha so small that its primal point X^T u /
# (alpha m) is useless, a Newton method whose steps no longer change J and whose dual
# point no longer moves).
STALL_START, STALL_GAIN = 128, 1e-12


class _CurrentStderr(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is when a line is logged (a redirect,
    pytest's capture, a notebook's stream), not to the stream of its creation."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):  # StreamHandler.__init__ sets it
        pass


def _log_to_stderr():
    """verbose > 0: progress lines on stderr, unless the application configured logging
    (a handler on the "fastrisk" logger or the root logger), which then decides."""
    if logger.handlers or logging.getLogger().handlers:
        return
    handler = _CurrentStderr()
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)


@dataclass
class History:
    """Per-iteration record: iteration, seconds since start, objective J(w), certified bound,
    and ``exact``: whether ``objective`` is J(w) computed exactly (False: an estimate, e.g.
    SDCA's running sums between its exact checks, or NaN; plot only the exact entries).
    ``callback_seconds``: the time spent in the callback, which ``seconds`` leaves out."""

    iteration: list = field(default_factory=list)
    seconds: list = field(default_factory=list)
    objective: list = field(default_factory=list)
    bound: list = field(default_factory=list)
    exact: list = field(default_factory=list)
    callback_seconds: float = 0.0

    def append(self, iteration, seconds, objective, bound, exact=True):
        self.iteration.append(int(iteration))
        self.seconds.append(float(seconds))
        self.objective.append(float(objective))
        self.bound.append(float(bound))
        self.exact.append(bool(exact))

    def __len__(self):
        return len(self.iteration)

    def as_arrays(self):
        return {k: np.asarray(getattr(self, k))
                for k in ("iteration", "seconds", "objective", "bound", "exact")}


@dataclass
class Result:
    """What every solver returns.

    ``w`` is the full weight vector (intercept feature last); ``coef_`` and
    ``intercept_`` follow scikit-learn; ``gap`` is the certified bound on
    J(w) - J* (NaN when the solver has none); ``status`` is one of STATUSES.
    A Result can be passed as ``start=`` to the next run (SolverInfo.start).

    ``extra`` holds solver-specific entries; the shared keys mean one thing:

    * ``dual``: dual variables (SDCA: u, one per row), never ``alpha``, which is
      the regularization strength everywhere;
    * ``dual_objective``: D(u) of those duals (SDCA);
    * ``state``: the resumable state of an online solver, what ``start=`` continues;
    * ``lower_bound``: a certified lower bound on J* (bundle methods);
    * ``gap_estimates``: per-epoch estimated gaps between exact checks (SDCA).

    Each solver's docstring lists its other keys (bundle sizes, step counts, ...).
    """

    w: np.ndarray
    coef_: np.ndarray
    intercept_: object
    objective: float
    gap: float
    status: str
    n_iter: int
    solver: str
    history: History
    extra: dict = field(default_factory=dict)


def check_budget(tol, max_iter, time_limit):
    """Validate the common stopping arguments; ``time_limit`` is seconds > 0, or None or
    ``math.inf`` for no limit (for ``solver="auto"`` None means its default budget)."""
    check_number(tol, "tol", 0.0)
    check_int(max_iter, "max_iter", low=1)
    if time_limit is not None and not _is_inf(time_limit):
        try:
            check_number(time_limit, "time_limit", 0.0, low_open=True)
        except ValueError:
            raise ValueError(f"time_limit must be a number > 0, or None or math.inf for no "
                             f"limit, got {time_limit!r}") from None


def _is_inf(value):
    """Whether ``value`` is the real number +inf (not a bool, string or array)."""
    return isinstance(value, (numbers.Real, np.floating)) and not isinstance(value, bool) \
        and value == math.inf


class Monitor:
    """Runs a solver's stopping rule, history, logging and callback.

    ``verbose``: 0 silent; 1 a progress line at most once a second; 2 every iteration
    (on stderr through the "fastrisk" logger).

    A solver calls ``check(it, w, objective, bound)`` after each iteration;
    it returns a status string when the run must stop, else None.  The
    callback receives the Result so far, its weights a copy (editing them changes neither
    the run nor what it returns), and stops the run by returning False (or numpy's
    False_); None or True go on, and any other value is refused as a likely mistake.

    ``stall_rule``: stop with "stalled" when the run stops making progress (``stalled``);
    for the solvers whose every iteration moves J or their dual point unless they are
    stuck (Newton and dual coordinate methods), not for the cutting-plane methods, whose
    model can improve for many iterations without changing the best J or the lower bound,
    nor for the stochastic methods, whose iterates wander.

    The clock (``History.seconds``, ``time_limit``) stops while the callback runs, the
    copy of w it receives included: what a callback records (a trajectory of iterates,
    say) does not count as the solver's time.
    """

    def __init__(self, problem, solver, *, tol, max_iter, time_limit=None, callback=None,
                 verbose=0, abs_tol=0.0, stall_rule=False):
        check_budget(tol, max_iter, time_limit)
        check_number(abs_tol, "abs_tol", 0.0)
        if callback is not None and not callable(callback):
            raise TypeError("callback must be callable or None")
        self.problem, self.solver = problem, solver
        self.tol, self.max_iter, self.time_limit = float(tol), int(max_iter), time_limit
        self.abs_tol = float(abs_tol)
        self.stall_rule = bool(stall_rule)
        self.interrupted = False
        self.callback, self.verbose = callback, check_int(verbose, "verbose", low=0)
        self.last_log = -math.inf
        if self.verbose:
            _log_to_stderr()
        self.history = History()
        self.start = time.perf_counter()
        self.best_w, self.best_objective, self.best_bound = None, math.inf, math.nan

    def elapsed(self):
        """Seconds since the start, without the callback's."""
        return time.perf_counter() - self.start - self.history.callback_seconds

    def check(self, iteration, w, objective, bound=math.nan, keep_best=True, exact=True):
        """Record one iteration; return a stop status or None.

        ``exact=False``: ``objective`` is an estimate (or NaN), recorded as such."""
        seconds = self.elapsed()
        self.history.append(iteration, seconds, objective, bound, exact)
        if not keep_best or objective <= self.best_objective:
            self.best_w, self.best_objective = w, objective
        self.best_bound = bound
        if self.verbose and (self.verbose >= 2 or seconds - self.last_log >= 1.0):
            self.last_log = seconds
            logger.info("%s it %d  %.3fs  J%s%.10g  bound=%.3g", self.solver, iteration,
                        seconds, "=" if exact else "~", objective, bound)
        if self.met(self.best_objective, bound):
            return "converged"
        if self.callback is not None and self._callback_stops(iteration):
            return "callback"
        if iteration >= self.max_iter:
            return "max_iter"
        if self.time_limit is not None and seconds >= self.time_limit:
            return "time_limit"
        if self.stall_rule and self.stalled():
            return "stalled"
        return None

    def stalled(self):
        """Whether the run stopped making progress (STALL_START's rule), checked when the
        number of recorded iterations is a power of two (amortized O(1))."""
        n = len(self.history)
        if n < STALL_START or n & (n - 1):
            return False
        J = np.asarray(self.history.objective)
        with np.errstate(invalid="ignore"):
            lower = J - np.asarray(self.history.bound)
        exact = np.asarray(self.history.exact)
        half = n // 2
        J_first, J_second = J[:half][exact[:half]], J[half:][exact[half:]]
        if J_first.shape[0] == 0 or J_second.shape[0] == 0:
            return False
        slack = STALL_GAIN * float(np.abs(J_second).min())
        if not float(J_second.min()) >= float(J_first.min()) - slack:
            return False  # J decreased (or is NaN: no verdict)
        low_first, low_second = lower[:half], lower[half:]
        low_first = low_first[np.isfinite(low_first)]
        low_second = low_second[np.isfinite(low_second)]
        return low_second.shape[0] == 0 or (
            low_first.shape[0] > 0 and float(low_second.max()) <= float(low_first.max()) + slack)

    def _callback_stops(self, iteration):
        entered = time.perf_counter()
        try:
            answer = self.callback(self.result("running", iteration, w=np.array(self.best_w)))
        finally:
            self.history.callback_seconds += time.perf_counter() - entered
        if answer is None or isinstance(answer, (bool, np.bool_)):
            return answer is not None and not answer
        raise TypeError(f"callback must return None, True or False (False stops the run), "
                        f"got {type(answer).__name__}")

    def met(self, objective, bound):
        """Whether ``bound`` on J(w) - J* meets the stopping rule for J(w) = ``objective``:
        bound <= max(tol |J(w)|, abs_tol) (an infinite objective certifies nothing: tol |J|
        would be infinite too)."""
        return math.isfinite(objective) and bound <= max(self.tol * abs(objective), self.abs_tol)

    @contextlib.contextmanager
    def interruptible(self):
        """Context for a solver's loop: Ctrl-C (KeyboardInterrupt) ends it cleanly.

        Sets ``self.interrupted`` so the solver returns ``result("interrupted", ...)``
        with the best iterate so far; re-raised when no iterate was recorded yet.
        """
        try:
            yield
        except KeyboardInterrupt:
            if self.best_w is None:
                raise
            self.interrupted = True
            logger.warning("%s interrupted; returning the best iterate so far", self.solver)

    def result(self, status, n_iter, w=None, objective=None, bound=None, **extra):
        """Result from the best iterate (or the given one)."""
        w = self.best_w if w is None else w
        objective = self.best_objective if objective is None else objective
        bound = self.best_bound if bound is None else bound
        coef, intercept = self.problem.coef_intercept(w)
        return Result(w=w, coef_=coef, intercept_=intercept, objective=float(objective),
                      gap=float(bound), status=status, n_iter=int(n_iter), solver=self.solver,
                      history=self.history, extra=extra)
