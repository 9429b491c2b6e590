"""What a solver declares about itself: the one place its capabilities are written.

Every solver module defines ``SOLVER_INFO``, a :class:`SolverInfo` or a tuple of
them (one per public solver name the module provides).  ``fastrisk.solvers``
collects them; ``solver="auto"``, the estimators, the command line, the Dask
path and the error messages read these records instead of keeping lists of
solver names of their own.
"""

from dataclasses import dataclass
from typing import Callable, Optional, Tuple

# Warm-start kinds a solver can take through its ``start=`` option:
#   "w":     a primal weight vector of length problem.n_weights, or a Result (its w);
#   "dual":  a Result of an earlier run of the same solver (dual variables in
#            Result.extra["dual"]; projected or rebuilt when they do not fit), or a
#            primal w or any Result (the dual is derived from w);
#   "state": a Result of an earlier run of the same solver (its Result.extra["state"]),
#            or that state; the run continues exactly where that one stopped.
START_KINDS = ("w", "dual", "state")


@dataclass(frozen=True)
class SolverInfo:
    """Capabilities of one solver.

    name:         the ``solver=`` name.
    func:         ``func(problem, *, tol, abs_tol, max_iter, time_limit, callback, verbose,
                  start=None, random_state=None, **options) -> Result``.
    accepts_penalty: predicate on a regularizer (fastrisk/regularizers.py): True when the
                  solver handles that penalty, read from the regularizer's facts (its
                  l1/l2 split, flags), never its name, so that a new penalty with those
                  facts reaches the solver with no change here.
    penalty_rule: the predicate in words, for error messages.
    accepts_loss: predicate on a ``LossSpec``: True when the solver handles that loss.
    loss_rule:    the predicate in words, for error messages ("smooth losses", ...).
    streams:      usable by ``partial_fit`` (each call continues from ``start``).
    start:        warm-start kind (one of START_KINDS) or None.
    certificate:  what ``Result.gap`` bounds, in words; None when ``gap`` is NaN.
    threads:      honours ``n_threads`` (OpenMP kernels).
    oracle_only:  needs only ``problem.oracle`` (Dask oracles, user-defined risks).
    epochs:       ``max_iter`` counts epochs (passes over the rows), not iterations.
    auto_max_iter: the ``max_iter`` that ``solver="auto"`` gives it when none is given
                  (None: auto's AUTO_MAX_ITER, with its time limit).
    stream_options: options ``partial_fit`` adds to one ordered epoch per chunk
                  (``max_iter=1, shuffle=False``), as (name, value) pairs.
    """

    name: str
    func: Callable
    accepts_penalty: Callable
    penalty_rule: str
    accepts_loss: Callable
    loss_rule: str
    streams: bool = False
    start: Optional[str] = None
    certificate: Optional[str] = None
    threads: bool = True
    oracle_only: bool = False
    epochs: bool = False
    auto_max_iter: Optional[int] = None
    stream_options: Tuple[Tuple[str, object], ...] = ()

    def __post_init__(self):
        if self.start is not None and self.start not in START_KINDS:
            raise ValueError(f"start must be one of {START_KINDS} or None, got {self.start!r}")

    def penalties(self):
        """Names of the registered penalties this solver accepts (at their default
        parameters)."""
        from fastrisk.regularizers import PENALTIES, make_regularizer

        return [name for name in PENALTIES if self.accepts_penalty(make_regularizer(name))]

    def losses(self):
        """Names of the registered losses this solver accepts."""
        from fastrisk.losses import LOSSES

        return [name for name, spec in LOSSES.items() if self.accepts_loss(spec)]

    def why_not(self, problem):
        """None when this solver can solve ``problem``, else the reason in one sentence."""
        reg = problem.regularizer
        if not self.accepts_penalty(reg):
            setting = f" ({reg.parameter}={getattr(reg, reg.parameter)!r})" \
                if reg.parameter is not None else ""
            return (f"solver {self.name!r} takes {self.penalty_rule}, got penalty "
                    f"{problem.penalty!r}{setting}")
        spec = getattr(problem.loss, "spec", None)
        if spec is None:
            if not self.oracle_only:
                return f"solver {self.name!r} needs a Problem built from data (X, y)"
        elif not self.accepts_loss(spec):
            return (f"solver {self.name!r} takes {self.loss_rule} "
                    f"({', '.join(self.losses())}), got loss {spec.name!r}")
        if problem.data is None and not self.oracle_only:
            return f"solver {self.name!r} needs the rows of X, not only a risk oracle"
        return None

    def check(self, problem):
        """Raise ValueError with the reason (and the solvers that would work) when it cannot."""
        from fastrisk.problem import Problem

        if not isinstance(problem, Problem):
            raise TypeError(f"problem must be a fastrisk Problem, got {type(problem).__name__}")
        reason = self.why_not(problem)
        if reason is not None:
            from fastrisk.solvers import solvers_for

            ok = [info.name for info in solvers_for(problem)]
            raise ValueError(f"{reason}; solvers for this problem: {ok}")
