"""Stopping rules, History and Result shared by every solver.

``tol`` always means one thing: stop when a certified upper bound on
``J(w) - J*`` (BMRM's gamma_t, the SDCA duality gap, the Lemma 5 bound of
MATH.md 4) is at most ``tol * J(w)`` (or at most ``abs_tol`` when given).  Solvers without a certificate say so
(``bound`` is NaN) and stop on their budget (max_iter, time_limit).
"""

import contextlib
import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np

logger = logging.getLogger("fastrisk")

# "stalled": the solver cannot make further progress in floating point (e.g. a line search
# failing at the precision limit) before its certificate reached ``tol``.
STATUSES = ("converged", "max_iter", "time_limit", "callback", "interrupted", "stalled")


@dataclass
class History:
    """Per-iteration record: iteration, seconds since start, objective J(w), certified bound."""

    iteration: list = field(default_factory=list)
    seconds: list = field(default_factory=list)
    objective: list = field(default_factory=list)
    bound: list = field(default_factory=list)

    def append(self, iteration, seconds, objective, bound):
        self.iteration.append(int(iteration))
        self.seconds.append(float(seconds))
        self.objective.append(float(objective))
        self.bound.append(float(bound))

    def __len__(self):
        return len(self.iteration)

    def as_arrays(self):
        return {k: np.asarray(getattr(self, k)) for k in ("iteration", "seconds", "objective", "bound")}


@dataclass
class Result:
    """What every solver returns.

    ``w`` is the full weight vector (intercept feature last); ``coef_`` and
    ``intercept_`` follow scikit-learn; ``gap`` is the certified bound on
    J(w) - J* (NaN when the solver has none); ``status`` is one of STATUSES.
    ``extra`` holds solver-specific state (dual variables, bundle size, ...).
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
    """Validate the common stopping arguments."""
    if not isinstance(tol, (int, float, np.number)) or isinstance(tol, bool) or not tol >= 0:
        raise ValueError(f"tol must be a number >= 0, got {tol!r}")
    if not isinstance(max_iter, (int, np.integer)) or isinstance(max_iter, bool) or max_iter < 1:
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    if time_limit is not None and not (isinstance(time_limit, (int, float, np.number))
                                       and time_limit > 0):
        raise ValueError(f"time_limit must be None or a number > 0, got {time_limit!r}")


class Monitor:
    """Runs a solver's stopping rule, history, logging and callback.

    A solver calls ``check(it, w, objective, bound)`` after each iteration;
    it returns a status string when the run must stop, else None.  The
    callback receives the Result so far and stops the run by returning False.
    """

    def __init__(self, problem, solver, *, tol, max_iter, time_limit=None, callback=None,
                 verbose=0, abs_tol=0.0):
        check_budget(tol, max_iter, time_limit)
        if not isinstance(abs_tol, (int, float, np.number)) or isinstance(abs_tol, bool) \
                or not abs_tol >= 0:
            raise ValueError(f"abs_tol must be a number >= 0, got {abs_tol!r}")
        if callback is not None and not callable(callback):
            raise TypeError("callback must be callable or None")
        self.problem, self.solver = problem, solver
        self.tol, self.max_iter, self.time_limit = float(tol), int(max_iter), time_limit
        self.abs_tol = float(abs_tol)
        self.interrupted = False
        self.callback, self.verbose = callback, int(verbose)
        self.history = History()
        self.start = time.perf_counter()
        self.best_w, self.best_objective, self.best_bound = None, math.inf, math.nan

    def elapsed(self):
        return time.perf_counter() - self.start

    def check(self, iteration, w, objective, bound=math.nan, keep_best=True):
        """Record one iteration; return a stop status or None."""
        seconds = self.elapsed()
        self.history.append(iteration, seconds, objective, bound)
        if not keep_best or objective <= self.best_objective:
            self.best_w, self.best_objective = w, objective
        self.best_bound = bound
        if self.verbose:
            level = logging.INFO if self.verbose == 1 else logging.DEBUG
            logger.log(level, "%s it %d  %.3fs  J=%.10g  bound=%.3g", self.solver, iteration,
                       seconds, objective, bound)
        if bound <= max(self.tol * abs(self.best_objective), self.abs_tol):
            return "converged"
        if self.callback is not None and self.callback(self.result("running", iteration)) is False:
            return "callback"
        if iteration >= self.max_iter:
            return "max_iter"
        if self.time_limit is not None and seconds >= self.time_limit:
            return "time_limit"
        return None

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
