"""Primal Gradient Solver for lp-regularized risk (Zhu et al., ICDM 2009; docs/math.md §5).

J(w) = alpha ||w||_p^2 / (2(p - 1)) + R_emp(w), p in (1, 2] (penalty="lp";
penalty="l2" is p = 2).  Fig. 1: theta = -sum_t lambda_t (loss subgradients
on the mini-batches), w_t = grad r*(theta / ((t+1) alpha)); Fig. 2's optional
bounded domain ||w||_p <= B rescales w_t by min(1, B / ||w_t||_p).  The
kernel (csrc/_pgs.pyx) keeps w_t = K_t phi(theta) with one scalar K_t and an
incrementally kept ||theta||_q^q, so a step is O(nnz(x)), not the paper's O(d);
for p < 2 each updated coordinate costs one power |theta_j|^{q-1}
(csrc/fr_pow.h, table-driven for the fixed exponent).

Step: for losses whose derivative is unbounded (squared, squared hinge, exponential,
Poisson: LossSpec.lipschitz None) the map is w_t = grad r*(theta / ((t+1) alpha + L))
with L = max_i c_i l''_i ||x_i||^2, a step counter offset by L / alpha that keeps the
first steps safe whatever the scale of the data (fastrisk/solvers/_steps.py); for
Lipschitz losses L = 0, the paper's map.

Output: the last iterate w_T (the paper returns a random iterate; w is not
linear in theta for p < 2, so an exact lazy average is not available).

Stopping: max_iter epochs, time_limit, and every ``check_every`` epochs the
Fenchel-duality certificate, the Lemma 5 bound (docs/math.md §4) generalised from
0.5||w||^2 to any Omega: with a = dR_emp(w),
J(u) >= R_emp(w) + <a, u - w> + alpha Omega(u) for all u, so
J(w) - J* <= alpha Omega(w) + <a, w> + alpha Omega*(-a / alpha),
Omega*(z) = ||z||_q^2 / (2(q - 1)); for p = 2 it is ||a + alpha w||^2 / (2 alpha).

Streaming: as for the Pegasos family (fastrisk/solvers/pegasos.py):
``start=result`` (the previous Result) with the next chunk's Problem and
``shuffle=False`` continues exactly; chunks but the last must hold a
multiple of ``batch_size`` rows; the offset L is the largest over the chunks so far.
"""

import numpy as np

from fastrisk import _pgs
from fastrisk.regularizers import norm_exponent
from fastrisk.solvers._certificates import fenchel_bound
from fastrisk.solvers._checks import (StartMismatch, check_bool, check_number, check_size,
                                      finite_iterate, start_state)
from fastrisk.solvers._epochs import check_kernel_status, epoch_orders, other_solvers, run_epochs
from fastrisk.solvers._info import SolverInfo
from fastrisk.solvers._steps import stream_offset
from fastrisk.stopping import check_budget


class PGSState:
    """theta, phi(theta), ||theta||_q^q and the step counter t; ``weights()`` is w_t."""

    def __init__(self, n_weights, alpha, p, B, batch_size, offset=0.0):
        self.alpha, self.p, self.B, self.batch_size = alpha, p, B, batch_size
        self.offset = offset  # L of the link map (fastrisk/solvers/_steps.py)
        self.theta = np.zeros(n_weights)
        self.phi = np.zeros(n_weights)
        self.scalars = np.zeros(2)  # [||theta||_q^q, t]

    @property
    def steps(self):
        return int(self.scalars[1])

    def weights(self):
        out = np.empty_like(self.theta)
        _pgs.pgs_weights(self.theta, self.phi, self.scalars, self.alpha, self.p,
                         self.B or 0.0, out, self.offset)
        return out


def _p_of(problem):
    return norm_exponent(problem.regularizer)


class _Epochs:
    """The per-epoch step of PGS for the epoch driver (fastrisk/solvers/_epochs.py)."""

    def __init__(self, problem, state, orders):
        self.problem, self.state, self.orders = problem, state, orders
        d = problem.data
        self.rows = (d.data, d.indices, d.indptr, d.dense, d.bias)
        self.c = problem.sample_weight if problem.sample_weight is not None else np.empty(0)
        self.y = np.ascontiguousarray(problem.y, dtype=np.float64)

    def run_epoch(self):
        st, problem = self.state, self.problem
        code, _, _ = _pgs.pgs_epoch(*self.rows, self.y, self.c, next(self.orders),
                                    st.batch_size, problem.loss.spec.kernel_id,
                                    problem.loss.param, st.alpha, st.p, st.B or 0.0,
                                    st.theta, st.phi, st.scalars, st.offset)
        check_kernel_status(code, "pgs", problem, _overflow_advice(problem, st))
        return False

    def weights(self):
        return self.state.weights()

    def certify(self):
        w = finite_iterate(self.state.weights(), "pgs", self.problem)
        return (w, *fenchel_bound(self.problem, w))

    def extra(self):
        return dict(state=self.state, steps=self.state.steps, p=self.state.p)


def _overflow_advice(problem, state):
    """What to do when theta overflows: with p near 1 the link map's exponent q - 1 is
    large, so |theta_j|^(q-1) leaves the double range even for moderate data."""
    advice = "theta overflowed"
    if state.p < 2.0:
        advice += (f" (p = {state.p:g}: the link map raises |theta_j| to the power "
                   f"q - 1 = {1.0 / (state.p - 1.0):.3g})")
    return (f"{advice}; scale X down, raise p, or use a batch solver "
            f"({other_solvers(problem, 'pgs')}; 'bmrm' takes penalty='lp' with any p)")


def solve_pgs(problem, *, tol=1e-4, abs_tol=0.0, max_iter=100, time_limit=None, callback=None,
              verbose=0, random_state=None, batch_size=1, B=None, check_every=1, shuffle=True,
              start=None):
    """Primal Gradient Solver (Zhu et al. 2009, Fig. 1/2); see the module docstring.

    Options: batch_size (k), B (radius of the domain ||w||_p <= B, None for
    R^n), check_every (epochs between certificate checks, 0: only at the end),
    shuffle (False: rows in the given order, for streaming), start (the Result of
    a previous pgs run, or its extra["state"], to continue it), random_state
    (permutation seed).  extra holds state, steps, p.
    """
    SOLVER_INFO.check(problem)
    check_budget(tol, max_iter, time_limit)
    p = _p_of(problem)
    batch_size = check_size(batch_size, "batch_size")
    if B is not None:
        B = check_number(B, "B", 0.0, low_open=True)
    shuffle = check_bool(shuffle, "shuffle")
    state = start_state(start, "pgs", PGSState, copy=True)
    if state is None:
        state = PGSState(problem.n_weights, problem.alpha, p, B, batch_size,
                         stream_offset(problem, None))
    elif state.theta.shape[0] != problem.n_weights \
            or (state.alpha, state.p, state.B, state.batch_size) != (problem.alpha, p, B,
                                                                      batch_size):
        raise StartMismatch("start: its state must come from a pgs run on the same "
                            "n_weights, alpha, p, B and batch_size")
    else:
        state.offset = stream_offset(problem, state.offset)
    orders = epoch_orders(problem.n_samples, shuffle, random_state)
    return run_epochs(problem, "pgs", _Epochs(problem, state, orders), tol=tol, abs_tol=abs_tol,
                      max_iter=max_iter, time_limit=time_limit, callback=callback,
                      verbose=verbose, check_every=check_every)


SOLVER_INFO = SolverInfo(
    "pgs", solve_pgs, accepts_penalty=lambda reg: norm_exponent(reg) is not None,
    penalty_rule="the lp penalty (l2: p = 2)", accepts_loss=lambda spec: not spec.vector,
    loss_rule="scalar losses", streams=True, start="state", threads=False, epochs=True,
    certificate="alpha Omega(w) + <a, w> + alpha Omega*(-a / alpha) (Fenchel duality)")
