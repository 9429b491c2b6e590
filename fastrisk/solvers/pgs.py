"""Primal Gradient Solver for lp-regularized risk (MATH.md 5; seed 003, Zhu et al. ICDM 2009).

J(w) = alpha ||w||_p^2 / (2(p - 1)) + R_emp(w), p in (1, 2] (penalty="lp";
penalty="l2" is p = 2).  Fig. 1: theta = -sum_t lambda_t (loss subgradients
on the mini-batches), w_t = grad r*(theta / ((t+1) alpha)); Fig. 2's optional
bounded domain ||w||_p <= B rescales w_t by min(1, B / ||w_t||_p).  The
kernel (csrc/_pgs.pyx) keeps w_t = K_t phi(theta) with one scalar K_t and an
incrementally kept ||theta||_q^q, so a step is O(nnz(x)), not the paper's O(d);
for p < 2 each updated coordinate costs one power |theta_j|^{q-1}
(csrc/fr_pow.h, table-driven for the fixed exponent).

Output: the last iterate w_T (the paper returns a random iterate; w is not
linear in theta for p < 2, so an exact lazy average is not available).

Stopping: max_iter epochs, time_limit, and every ``check_every`` epochs the
Fenchel-duality certificate, the Lemma 5 bound (MATH.md 4) generalised from
0.5||w||^2 to any Omega: with a = dR_emp(w),
J(u) >= R_emp(w) + <a, u - w> + alpha Omega(u) for all u, so
J(w) - J* <= alpha Omega(w) + <a, w> + alpha Omega*(-a / alpha),
Omega*(z) = ||z||_q^2 / (2(q - 1)); for p = 2 it is ||a + alpha w||^2 / (2 alpha).

Streaming: as for the Pegasos family (fastrisk/solvers/pegasos.py):
``state=result.extra["state"]`` with the next chunk's Problem and
``shuffle=False`` continues exactly; chunks but the last must hold a
multiple of ``batch_size`` rows.
"""

import numbers

import numpy as np

from fastrisk import _pgs
from fastrisk.stopping import Monitor


class PGSState:
    """theta, phi(theta), ||theta||_q^q and the step counter t; ``weights()`` is w_t."""

    def __init__(self, n_weights, alpha, p, B, batch_size):
        self.alpha, self.p, self.B, self.batch_size = alpha, p, B, batch_size
        self.theta = np.zeros(n_weights)
        self.phi = np.zeros(n_weights)
        self.scalars = np.zeros(2)  # [||theta||_q^q, t]

    @property
    def steps(self):
        return int(self.scalars[1])

    def weights(self):
        out = np.empty_like(self.theta)
        _pgs.pgs_weights(self.theta, self.phi, self.scalars, self.alpha, self.p,
                         self.B or 0.0, out)
        return out


def _p_of(problem):
    from fastrisk.problem import Problem

    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a fastrisk Problem, got {type(problem).__name__}")
    if problem.loss.spec.vector:
        raise ValueError(f"solver 'pgs' needs a scalar loss, got {problem.loss.name!r}")
    if problem.penalty == "lp":
        return problem.regularizer.p
    if problem.penalty == "l2":
        return 2.0
    raise ValueError(f"solver 'pgs' needs penalty='lp' (or 'l2'), got {problem.penalty!r}")


def certificate(problem, w):
    """(J(w), upper bound on J(w) - J*) from one oracle call (module docstring)."""
    risk, a = problem.oracle(w)
    reg, alpha = problem.regularizer, problem.alpha
    objective = alpha * reg.value(w) + risk
    return objective, alpha * reg.value(w) + float(a @ w) + alpha * reg.conjugate(-a / alpha)


def solve_pgs(problem, *, tol=1e-4, max_iter=100, time_limit=None, callback=None, verbose=0,
              random_state=None, batch_size=1, B=None, check_every=1, shuffle=True,
              state=None):
    """Primal Gradient Solver (seed 003, Fig. 1/2); see the module docstring.

    Options: batch_size (k), B (radius of the domain ||w||_p <= B, None for
    R^n), check_every (epochs between certificate checks), shuffle (False:
    rows in the given order, for streaming), state (continue a previous run),
    random_state (permutation seed).  extra holds state, steps, p.
    """
    p = _p_of(problem)
    if not isinstance(batch_size, (int, np.integer)) or isinstance(batch_size, bool) \
            or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    if not isinstance(check_every, (int, np.integer)) or isinstance(check_every, bool) \
            or check_every < 1:
        raise ValueError(f"check_every must be an integer >= 1, got {check_every!r}")
    if B is not None and not (isinstance(B, numbers.Real) and B > 0):
        raise ValueError(f"B must be None or a number > 0, got {B!r}")
    if not isinstance(shuffle, (bool, np.bool_)):
        raise ValueError(f"shuffle must be a bool, got {shuffle!r}")
    mon = Monitor(problem, "pgs", tol=tol, max_iter=max_iter, time_limit=time_limit,
                  callback=callback, verbose=verbose)
    if state is None:
        state = PGSState(problem.n_weights, problem.alpha, p, B, int(batch_size))
    elif not isinstance(state, PGSState) or state.theta.shape[0] != problem.n_weights \
            or (state.alpha, state.p, state.B, state.batch_size) != (problem.alpha, p, B,
                                                                      batch_size):
        raise ValueError("state must be the extra['state'] of a previous pgs run on the same "
                         "n_weights, alpha, p, B and batch_size")
    d, m = problem.data, problem.n_samples
    c = problem.sample_weight if problem.sample_weight is not None else np.empty(0)
    y = np.ascontiguousarray(problem.y, dtype=np.float64)
    rng = np.random.default_rng(random_state)
    identity = np.arange(m, dtype=np.intp)
    status, epoch = None, 0
    while status is None:
        epoch += 1
        order = rng.permutation(m).astype(np.intp) if shuffle else identity
        code, _, _ = _pgs.pgs_epoch(d.data, d.indices, d.indptr, d.dense, d.bias, y, c, order,
                                 batch_size, problem.loss.spec.kernel_id, problem.loss.param,
                                 problem.alpha, p, B or 0.0, state.theta, state.phi,
                                 state.scalars)
        if code == _pgs.STATUS_OVERFLOW:
            raise FloatingPointError("pgs: theta overflowed; scale X down")
        if code == _pgs.STATUS_BAD_LOSS:
            raise ValueError(f"pgs: loss {problem.loss.name!r} has no kernel")
        if epoch % check_every == 0 or epoch >= max_iter \
                or (time_limit is not None and mon.elapsed() >= time_limit):
            w = state.weights()
            objective, bound = certificate(problem, w)
            status = mon.check(epoch, w, objective, bound, keep_best=False)
    return mon.result(status, epoch, state=state, steps=state.steps, p=p)
