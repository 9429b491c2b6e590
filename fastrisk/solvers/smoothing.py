"""Smoothing with continuation: a non-smooth loss with an l1 term, certified.

The problem is ``J(w) = (1/m) sum_i c_i l(<w, x_i>, y_i) + lam1 ||w||_1 + lam2/2 ||w||^2``
(fastrisk/solvers/cd.py's split of the penalty) with a loss l that is not differentiable
but whose Moreau envelope of parameter gamma,

    l_gamma(f) = min_v l(v) + (f - v)^2 / (2 gamma),   l_gamma* = l* + gamma a^2 / 2,

is a registered smooth loss (``LossSpec.moreau``: the hinge's is the smoothed hinge;
Nesterov 2005, Section 2, with the prox-function a^2 / 2 on the dual).  It is below l by
at most gamma L^2 / 2 (L = sup |l'|), and its derivative is (1/gamma)-Lipschitz, so the
smoothed problem J_gamma is one for the proximal Newton solver ``cd``.

Algorithm (stages k = 0, 1, ...; gamma_0 = ``gamma``):

1. minimize J_gamma_k by ``cd`` (its model's damping adapted to its line search's steps,
   from STAGE_NU) from the previous stage's w, to a relative gap tol_k (the column copy
   of X that cd makes is kept on the shared Dataset: one for every stage, and for the
   other problems of a one-vs-rest fit);
2. certificate of J: cd's dual point u lies in the domain of l_gamma*, which is that of l*,
   so it is feasible for J's dual too, and since the two conjugates differ by
   gamma a^2 / 2,

       D(u) = D_gamma(u) + (gamma / (2m)) sum_i c_i u_i^2 <= J*;

   ``gap = J(w) - max_k D(u_k) >= J(w) - J*``, and the run stops when gap <= tol J(w),
   as for every solver;
3. the next stage: at w the smoothing error e = J(w) - J_gamma(w) (each row in the
   smoothing zone of the loss contributes at most gamma L^2 / 2, so e shrinks about in
   proportion to gamma) sets gamma_{k+1} = gamma_k max(SHRINK, min(1/2, tol J(w) / (2 e))):
   the error aimed at is half the tolerance, in steps of at most a factor 1/SHRINK, as
   warm starts from a far smoother problem take cd many more steps; tol_{k+1} is a
   tenth of the error predicted for gamma_{k+1} (at least tol / 2): a stage need not
   be solved beyond the accuracy its smoothing allows.

``max_iter`` counts stages; each stage's ``cd`` keeps its own budget of Newton steps
(``stage_max_iter``) within the run's time limit.
"""

import math

from fastrisk.solvers._checks import check_bool, check_int, check_number, start_weights
from fastrisk.solvers._info import SolverInfo
from fastrisk.solvers.cd import SOLVER_INFO as CD_INFO, solve_cd
from fastrisk.stopping import Monitor

SHRINK = 0.1          # the smallest factor of gamma from one stage to the next
STAGE_ERROR = 0.1     # a stage's tolerance: this fraction of its predicted smoothing error
# cd's smallest nu (its model's Hessian diagonal term, times max x_ij^2) for the stages,
# whose damping adapts to the line search's steps (cd's damping="adaptive"): the smoothed
# loss has no curvature outside its zone, so the model is flat along every column whose
# rows left it, and newGLMNET's 1e-12 lets those coordinates jump to their step limits,
# after which the inner passes creep and the line searches cut the steps back
STAGE_NU = 1e-5


def solve_smoothing(problem, *, tol=1e-4, abs_tol=0.0, max_iter=100, time_limit=None,
                    callback=None, verbose=0, start=None, random_state=None, n_threads=None,
                    gamma=1.0, stage_max_iter=1000, screening=True):
    """Minimize ``problem`` by smoothing with continuation; see the module docstring.

    Options beyond the common ones: gamma: the first stage's smoothing parameter (in the
    units of the scores: 1 is the width of the hinge's margin; a ``start=`` Result of this
    solver starts from its last stage's, when smaller); stage_max_iter: each
    stage's budget of cd (Newton) steps; n_threads, screening, random_state: cd's.

    ``result.extra``: ``dual`` (the dual point of the best D), ``dual_objective``,
    ``gamma`` (the last stage's), ``n_newton`` (cd's steps over all stages),
    ``stage_status`` (the last stage's cd status).
    """
    SOLVER_INFO.check(problem)
    gamma = check_number(gamma, "gamma", 0.0, low_open=True)
    stage_max_iter = check_int(stage_max_iter, "stage_max_iter", low=1)
    screening = check_bool(screening, "screening")
    mon = Monitor(problem, "smoothing", tol=tol, max_iter=max_iter, time_limit=time_limit,
                  callback=callback, verbose=verbose, abs_tol=abs_tol)
    spec, m, c = problem.loss.spec, problem.n_samples, problem.sample_weight
    w = None if start is None else start_weights(problem, start)
    if getattr(start, "solver", None) == "smoothing":  # continue from its last stage's gamma
        gamma = min(gamma, float(start.extra["gamma"]))
    stage_tol = max(0.5 * mon.tol, STAGE_ERROR)
    D_best, u_best, n_newton, status, k = -math.inf, None, 0, None, 0
    with mon.interruptible():
        while status is None:
            smoothed = problem.with_loss(spec.moreau, gamma)
            left = None if time_limit is None else max(time_limit - mon.elapsed(), 0.0)
            stage = solve_cd(smoothed, tol=stage_tol, abs_tol=0.5 * mon.abs_tol,
                             max_iter=stage_max_iter, time_limit=left, start=w,
                             n_threads=n_threads, random_state=random_state,
                             screening=screening, nu=STAGE_NU, damping="adaptive",
                             verbose=max(verbose - 1, 0))
            k += 1
            n_newton += stage.n_iter
            w, u = stage.w, stage.extra["dual"]  # cd certifies its first iterate: u is set
            J = problem.objective(w)
            sq = u * u if c is None else c * u * u
            D = stage.extra["dual_objective"] + 0.5 * gamma * float(sq.sum()) / m
            if D > D_best:
                D_best, u_best = D, u
            status = mon.check(k, w, J, max(J - D_best, 0.0))
            if status is None and stage.status != "converged":
                status = stage.status  # the smoothed problem itself stopped short
            if status is None:
                error = max(J - stage.objective, 0.0)
                target = max(mon.tol * abs(J), mon.abs_tol)
                factor = max(SHRINK, min(0.5, 0.5 * target / error)) if error > 0.0 else SHRINK
                gamma *= factor
                stage_tol = max(0.5 * mon.tol, min(STAGE_ERROR, STAGE_ERROR * factor * error
                                                   / max(abs(J), 1e-300)))
    if mon.interrupted:
        status = "interrupted"
    # the best J met, certified by the best D met (both kept over the stages)
    J = mon.best_objective
    return mon.result(status, k, objective=J, bound=max(J - D_best, 0.0), dual=u_best,
                      dual_objective=D_best, gamma=gamma, n_newton=n_newton,
                      stage_status=stage.status)


SOLVER_INFO = SolverInfo(
    name="smoothing",
    func=solve_smoothing,
    # the stages are cd's problems: its penalties
    accepts_penalty=CD_INFO.accepts_penalty,
    penalty_rule=CD_INFO.penalty_rule,
    accepts_loss=lambda spec: spec.moreau is not None and not spec.vector,
    loss_rule="non-smooth scalar losses with a registered Moreau envelope",
    start="w",
    certificate="duality gap J(w) - D(u), u the smoothed problem's dual point",
    threads=True,
    # stages, its own default (solvers/auto.py's Budget)
    auto_max_iter=solve_smoothing.__kwdefaults__["max_iter"],
)
