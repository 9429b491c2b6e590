"""L-BFGS on the risk oracle (Teo et al. 2007, section 4.2 and Lemma 5; docs/math.md §4).

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
and the bound stays the same on a Dask oracle, which gives no scores.  The lp
penalty (not strongly convex in ||.||_2) takes the Fenchel bound of the same
gradient instead, ``alpha Omega(w) + <a, w> + alpha Omega*(-a / alpha)`` with
``a = grad J - alpha grad Omega(w)`` the risk's gradient
(fastrisk/solvers/_certificates.py): 0 at the optimum of a smooth loss.
scipy's own stopping tests are switched off (``ftol = gtol = 0``); a line
search that fails at the precision limit ends the run with status "stalled"
(or "converged" if the bound is met).

Diagonal scaling (Nocedal & Wright 2006, section 7.2; Liu & Nocedal
1989 on scaling the initial matrix): L-BFGS-B runs on ``v = S w`` with S a
fixed positive diagonal, minimizing ``J(S^{-1} v)`` whose gradient is
``S^{-1} grad J``; this is L-BFGS on w with the initial inverse Hessian S^{-2}
(times scipy's scalar s^T y / y^T y) in place of a multiple of the identity.
With P the diagonal of the Hessian of J (fastrisk/solvers/_diagonal.py),
``precondition="diagonal"`` takes S = P^{1/2} (Jacobi scaling) and
``"sqrt"`` (the default) S = P^{1/4}, the geometric mean of the identity and
P^{1/2}.  Either lets features whose curvature differs by orders of
magnitude (one-hot columns of very different frequencies, pixels that are
almost always 0) take steps of their own scale.  The full scaling
overshoots on text with more columns than rows (20 Newsgroups softmax at
alpha 1e-6), likely because the data part of the Hessian has rank at most m
and its diagonal credits a feature seen in a
handful of rows with curvature of its own that it shares with the other
features of those rows; the square root keeps most of the gain where the
full scaling pays and costs nothing where it does not (benchmarks/
lbfgs_precondition.py).  The certificate above is computed from w, J(w) and
grad J(w) in the original variables, unchanged by the scaling.

Vector losses: L-BFGS runs on W flattened feature-major (``w[j k + c] = W[c, j]``,
``VectorOracle.feature_major_view``), the layout the oracle's kernel reads, so that no
call converts W or its gradient.  L-BFGS's iterates do not depend on the order of the
coordinates, nor does J (every penalty accepted here is a symmetric function of them)
or the certificate; the scaling S is permuted alike.  Each iterate reaches the
stopping monitor, and so the result, in scikit-learn's class-major order.
"""

import copy

import numpy as np
from scipy.optimize import minimize

from fastrisk.config import single_threaded_blas
from fastrisk.oracle import VectorOracle
from fastrisk.solvers._certificates import fenchel_gap
from fastrisk.solvers._checks import check_choice, check_int, start_weights
from fastrisk.solvers._diagonal import has_diagonal, hessian_diagonal
from fastrisk.solvers._dual_gap import GapCertificate
from fastrisk.solvers._info import SolverInfo
from fastrisk.stopping import Monitor

# The diagonal is taken at the start point and once more after this many iterations: at
# w = 0 every row has the same curvature l''(0), which weighs a feature by all the rows
# holding it, while near the optimum the well-classified rows carry almost none.  Each
# refresh discards L-BFGS's correction pairs (they live in the old variables), so it
# happens once.
REFRESH_AT = 30
# precondition -> the power of P in the scaling S (module docstring)
SCALE_POWER = {"sqrt": 0.25, "diagonal": 0.5, "none": 0.0}


def solve_lbfgs(problem, *, tol=1e-4, abs_tol=0.0, max_iter=1000, time_limit=None,
                callback=None, verbose=0, random_state=None, memory=10, start=None,
                precondition="sqrt"):
    """Minimize ``problem`` with L-BFGS-B; see the module docstring.

    memory: number of correction pairs (scipy's ``maxcor``).  start: w (or a Result) to
    start from (default 0).  precondition: "sqrt" (default) runs L-BFGS on v = P^{1/4} w,
    "diagonal" on v = P^{1/2} w, with P the diagonal of the Hessian of J where
    ``_diagonal.has_diagonal`` gives one (smooth scalar losses and softmax on in-memory
    data in one row partition; elsewhere the scaling is the identity), "none" on w
    itself.  random_state is accepted for the common signature; the method is
    deterministic.
    """
    SOLVER_INFO.check(problem)
    memory = check_int(memory, "memory", low=1)
    precondition = check_choice(precondition, "precondition", tuple(SCALE_POWER))
    scaled = SCALE_POWER[precondition] > 0 and has_diagonal(problem)
    mon = Monitor(problem, "lbfgs", tol=tol, max_iter=max_iter, time_limit=time_limit,
                  callback=callback, verbose=verbose, abs_tol=abs_tol,
                  stall_rule=True)
    # the variables L-BFGS runs on: w itself, or W feature-major (module docstring)
    if isinstance(problem.oracle, VectorOracle):
        runs_on = copy.copy(problem)
        runs_on.oracle = problem.oracle.feature_major_view()
        to_w, from_w = runs_on.oracle.to_class_major, runs_on.oracle.from_class_major
    else:
        runs_on, to_w, from_w = problem, np.array, np.asarray
    cert = GapCertificate(runs_on, memory=0)
    last = {"n_evaluations": 0}

    def fun(w):  # kept without a copy: scaled_fun passes a new array, never written to
        if not np.isfinite(w).all():  # a step overflowed: |X| or |y| near the largest double
            risk = "a user-defined risk" if problem.loss is None else \
                f"the {problem.loss.name} loss"
            raise FloatingPointError(f"lbfgs: a non-finite iterate with {risk}; check the "
                                     "scale of X and alpha")
        value, grad = cert.evaluate(w)
        last.update(w=w, value=value, grad=grad, n_evaluations=last["n_evaluations"] + 1)
        return value, grad

    def check(iteration, w):
        if "w" in last and np.array_equal(last["w"], w):
            value, grad = last["value"], last["grad"]
        else:
            value, grad = fun(w)
        bound = cert.gap(w, value, grad, max(tol * abs(value), abs_tol)) if cert.certified \
            else fenchel_gap(runs_on, w, grad - runs_on.alpha * runs_on.regularizer.subgradient(w))
        return mon.check(iteration, to_w(w), value, bound)

    state = {"status": None, "it": 0, "until": 0, "scale": None}

    def on_iteration(intermediate_result):
        state["it"] += 1
        state["w"] = intermediate_result.x / state["scale"]
        state["status"] = check(state["it"], state["w"])
        if state["status"] is not None or state["it"] >= state["until"]:
            raise StopIteration

    def scaled_fun(v):  # J and its gradient in the variables v = S w
        value, grad = fun(v / state["scale"])
        return value, grad / state["scale"]

    w = from_w(start_weights(problem, start))
    with mon.interruptible(), single_threaded_blas():
        state["status"] = check(0, w)
        while state["status"] is None:
            # P at the start point, then once more at REFRESH_AT iterations
            refresh = scaled and state["it"] < REFRESH_AT
            state["until"] = min(REFRESH_AT, max_iter) if refresh else max_iter
            state["scale"] = (from_w(hessian_diagonal(problem, to_w(w)))
                              ** SCALE_POWER[precondition]
                              if scaled else np.ones(problem.n_weights))
            minimize(scaled_fun, w * state["scale"], jac=True, method="L-BFGS-B",
                     callback=on_iteration,
                     options=dict(maxcor=int(memory), maxiter=int(state["until"] - state["it"]),
                                  maxfun=100 * int(max_iter) + 100, ftol=0.0, gtol=0.0))
            w = state.get("w", w)
            if state["status"] is None and not (refresh and REFRESH_AT == state["it"] < max_iter):
                bound = mon.best_bound
                state["status"] = ("converged" if bound <= max(tol * abs(mon.best_objective),
                                                                abs_tol)
                                   else "max_iter" if state["it"] >= max_iter else "stalled")
    status = "interrupted" if mon.interrupted else state["status"]
    return mon.result(status, state["it"], n_evaluations=last["n_evaluations"])


SOLVER_INFO = SolverInfo(
    "lbfgs", solve_lbfgs, accepts_penalty=lambda reg: reg.differentiable,
    penalty_rule="differentiable penalties (l2, lp; no l1 term)", accepts_loss=lambda spec: True,
    loss_rule="every loss (no guarantee for nonsmooth ones)", start="w",
    certificate="||dJ(w)||^2 / (2 sigma) (Teo et al. 2007, Lemma 5; strongly convex "
    "penalties); the Fenchel bound at the same gradient for lp",
    oracle_only=True)
