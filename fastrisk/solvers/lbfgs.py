"""L-BFGS on the risk oracle (seed 004 section 4.2; MATH.md 4, Lemma 5).

scipy's L-BFGS-B (Byrd, Lu, Nocedal, Zhu 1995) minimizes
``J(w) = alpha Omega(w) + R_emp(w)`` with the value and gradient from
``problem.objective_gradient`` (the oracle plus the regularizer), so it runs
on any RiskOracle.  It needs a differentiable Omega: ``l2``, ``lp``
(p in (1, 2]) and ``elasticnet`` with ``l1_ratio = 0``; l1 terms are refused
(the paper: "convergence with LBFGS is poor").  Non-smooth losses (hinge)
are accepted, as in the paper, but L-BFGS has no guarantee there.

Certificate (strongly convex penalties), Lemma 5 / eq. (16): with ``g`` the
gradient of J, ``J_-(w) = J(w) - ||g||^2 / (2 lambda) <= J*``; for l2 and a
smooth loss this is exactly the duality gap of the dual point u = -l'(Xw)
(fastrisk/solvers/_dual_gap.py).  The extrapolated dual point is not used
here: the iterates it would save were measured to cost as much as it does,
and the bound stays the same on a Dask oracle, which gives no scores.  Other penalties have no certificate (bound NaN): the run
stops on its budget or when L-BFGS-B stalls.  scipy's own stopping tests are switched off
(``ftol = gtol = 0``); a line search that fails at the precision limit ends
the run with status "stalled" (or "converged" if the bound is met).
"""

import numpy as np
from scipy.optimize import minimize

from fastrisk.config import single_threaded_blas
from fastrisk.solvers._dual_gap import GapCertificate
from fastrisk.solvers.bmrm import check_w0
from fastrisk.stopping import Monitor


def solve_lbfgs(problem, *, tol=1e-4, abs_tol=0.0, max_iter=1000, time_limit=None,
                callback=None, verbose=0, random_state=None, memory=10, w0=None):
    """Minimize ``problem`` with L-BFGS-B; see the module docstring.

    memory: number of correction pairs (scipy's ``maxcor``).  random_state is
    accepted for the common signature; the method is deterministic.
    """
    reg = problem.regularizer
    if reg.name == "l1" or (reg.name == "elasticnet" and reg.l1_ratio > 0):
        raise ValueError(f"solver 'lbfgs' needs a differentiable penalty; penalty="
                         f"{problem.penalty!r} has an l1 term (use 'bmrm')")
    if not isinstance(memory, (int, np.integer)) or isinstance(memory, bool) or memory < 1:
        raise ValueError(f"memory must be an integer >= 1, got {memory!r}")
    mon = Monitor(problem, "lbfgs", tol=tol, max_iter=max_iter, time_limit=time_limit,
                  callback=callback, verbose=verbose, abs_tol=abs_tol)
    cert = GapCertificate(problem, memory=0)
    last = {"n_evaluations": 0}

    def fun(w):
        value, grad = cert.evaluate(w)
        last.update(w=w.copy(), value=value, grad=grad, n_evaluations=last["n_evaluations"] + 1)
        return value, grad

    def check(iteration, w):
        if "w" in last and np.array_equal(last["w"], w):
            value, grad = last["value"], last["grad"]
        else:
            value, grad = fun(w)
        return mon.check(iteration, np.array(w), value, 
                         cert.gap(w, value, grad, max(tol * abs(value), abs_tol)))

    state = {"status": None, "it": 0}

    def on_iteration(intermediate_result):
        state["it"] += 1
        state["status"] = check(state["it"], intermediate_result.x)
        if state["status"] is not None:
            raise StopIteration

    w = check_w0(problem, w0)
    with mon.interruptible(), single_threaded_blas():
        state["status"] = check(0, w)
        if state["status"] is None:
            res = minimize(fun, w, jac=True, method="L-BFGS-B", callback=on_iteration,
                           options=dict(maxcor=int(memory), maxiter=int(max_iter),
                                        maxfun=100 * int(max_iter) + 100, ftol=0.0, gtol=0.0))
            if state["status"] is None:
                bound = mon.best_bound
                state["status"] = ("converged" if bound <= max(tol * abs(mon.best_objective),
                                                                abs_tol)
                                   else "max_iter" if res.nit >= max_iter else "stalled")
    status = "interrupted" if mon.interrupted else state["status"]
    return mon.result(status, state["it"], n_evaluations=last["n_evaluations"])
