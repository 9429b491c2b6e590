"""One driver for the epoch-based solvers: SDCA, the Pegasos family, PGS, RDA and its baselines.

A solver builds a *method*: its state and its per-epoch step (one kernel call
over the rows), and hands it to :func:`run_epochs`, which owns everything else:
the common options, the epoch loop, the schedule of exact checks, the time
limit, the callback, Ctrl-C, the history and the status.  A method has

``run_epoch() -> bool``
    one pass over the rows; True when the method has converged by its own rule
    (the last phase of the optimistic solver).
``certify() -> (w, J, bound)``
    the iterate to report, J(w) and a certified bound on J(w) - J* (NaN when
    the method has none; see fastrisk/solvers/_certificates.py).  Called at the
    exact checks and when the run ends between them.
``weights() -> w``
    the current iterate (for a callback between exact checks).
``estimate(tol) -> (J_estimate, wants_check)`` (optional)
    an O(1) estimate of J logged between exact checks (NaN by default) and
    whether the method asks for an exact check now (SDCA's estimated gap).
``checked(epoch)`` (optional)
    called after each exact check (SDCA moves its schedule, unshrinks rows).
``extra() -> dict``
    the method's ``Result.extra`` entries.
``plateaus`` (optional, default False)
    True while the method's certified pair (best J, best lower bound) may stay flat
    for many epochs as it progresses (the outer loop of accelerated SDCA, whose centre
    moves between its certificates): Monitor's stall rule is then off.

Exact checks happen every ``check_every`` epochs (0: only when the method asks
and at the end), at ``max_iter``, at the time limit and when the method
converges.  Epochs between checks are recorded in the history with
``exact=False`` (the estimate, or NaN).  Ctrl-C (KeyboardInterrupt) between or
during epochs ends the run with status "interrupted" and the current iterate,
certified: kernels update the state only in whole epochs, so it is consistent.
"""

import logging
import math

import numpy as np

from fastrisk.solvers._checks import check_int, check_rng
from fastrisk.stopping import Monitor

logger = logging.getLogger("fastrisk")

# status codes shared by the epoch kernels (csrc/fr_loss.h: FR_OK, FR_ERR_OVERFLOW,
# FR_ERR_BAD_LOSS)
KERNEL_OK, KERNEL_OVERFLOW, KERNEL_BAD_LOSS = 0, 1, 2


def epoch_orders(n_rows, shuffle, random_state, dtype=np.intp):
    """Row orders, one per epoch: a fresh permutation from ``random_state`` (checked here,
    before the first epoch) or the identity."""
    rng = check_rng(random_state)

    def orders():
        identity = None if shuffle else np.arange(n_rows, dtype=dtype)
        while True:
            yield identity if identity is not None else rng.permutation(n_rows).astype(dtype)

    return orders()


def observed_rate(gap_estimates):
    """rho = (g(t) / g(t - 2))^(1/2) from the last three estimated gaps: the per-epoch linear
    contraction the run shows (inf with fewer than three or a first one not positive;
    0 when the last is not positive: the estimate says converged)."""
    g = np.asarray(gap_estimates, dtype=np.float64)
    if len(g) < 3 or not g[-3] > 0.0:
        return math.inf
    return float(np.sqrt(max(g[-1], 0.0) / g[-3]))


def check_kernel_status(code, solver, problem, overflow_advice):
    """Raise for a kernel's error status: FloatingPointError with advice on overflow."""
    if code == KERNEL_OK:
        return
    if code == KERNEL_BAD_LOSS:
        raise ValueError(f"solver {solver!r} has no kernel for the {problem.loss.name!r} loss")
    raise FloatingPointError(f"{solver}: {overflow_advice}")


def other_solvers(problem, solver):
    """Advice for an error: the other solvers of the registry that take this problem."""
    from fastrisk.solvers import solvers_for

    names = [info.name for info in solvers_for(problem) if info.name != solver]
    return f"solvers for this problem: {names}" if names else "no other solver takes it"


def _check_objective(solver, J):
    """FloatingPointError when J of the certified iterate is not finite: its weights are
    finite (the kernels check them), but a score or a weighted loss overflowed."""
    if not math.isfinite(J):
        raise FloatingPointError(f"{solver}: J(w) is not finite at the iterate (a score or a "
                                 "weighted loss overflowed); scale X or sample_weight down, "
                                 "or lower the step size")


def run_epochs(problem, solver, method, *, tol, abs_tol, max_iter, time_limit, callback,
               verbose, check_every, stall_rule=False):
    """Run ``method`` epoch by epoch until a stop status; returns the Result
    (``stall_rule``: Monitor's, for a method whose bound is a duality gap, off while the
    method ``plateaus``)."""
    check_every = check_int(check_every, "check_every", low=0)
    mon = Monitor(problem, solver, tol=tol, max_iter=max_iter, time_limit=time_limit,
                  callback=callback, verbose=verbose, abs_tol=abs_tol, stall_rule=stall_rule)
    estimate = getattr(method, "estimate", None)
    checked = getattr(method, "checked", None)
    status, epochs, last = None, 0, None
    try:
        while status is None:
            done = method.run_epoch()
            epochs += 1
            J_est, asked = estimate(mon.tol, mon.abs_tol) if estimate else (math.nan, False)
            mon.stall_rule = stall_rule and not getattr(method, "plateaus", False)
            if (done or asked or epochs >= mon.max_iter
                    or (check_every and epochs % check_every == 0)
                    or (time_limit is not None and mon.elapsed() >= time_limit)):
                last = method.certify()
                _check_objective(solver, last[1])
                status = mon.check(epochs, *last, keep_best=False)
                if checked:
                    checked(epochs)
                if done and status is None:
                    status = "converged"
            else:
                w = method.weights() if callback is not None else None
                status = mon.check(epochs, w, J_est, math.nan, keep_best=False, exact=False)
                if status is not None:
                    last = method.certify()
    except KeyboardInterrupt:
        logger.warning("%s interrupted; returning the current iterate", solver)
        status, last = "interrupted", method.certify()
    w, J, bound = last
    return mon.result(status, epochs, w=w, objective=J, bound=bound, **method.extra())
