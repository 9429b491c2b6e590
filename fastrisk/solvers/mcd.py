"""Proximal Newton with coordinate descent for the multinomial logistic (softmax) loss.

The problem is ``J(W) = (1/m) sum_i c_i phi(W x_i, y_i) + lam1 ||W||_1 + lam2/2 ||W||^2``
with phi the softmax loss ``log sum_c e^{s_c} - s_y`` of the k scores s = W x, lam1 =
alpha r and lam2 = alpha (1 - r) (r = l1_ratio; "l1": r = 1).  It is the multiclass
counterpart of ``cd`` (newGLMNET, Yuan, Ho & Lin 2012, Algorithm 3), with the full
multinomial Hessian in its quadratic model (Friedman, Hastie & Tibshirani 2010, Section
3, take one class at a time instead).  A coordinate is a pair (j, c), feature j and
class c; W is kept feature-major, W[j, c].  Each outer iteration:

1. at W, the class probabilities P = softmax(S) of the scores S = X W^T (kept up to
   date by the accepted steps), J, and the loss gradient G = X^T (c (P - Y) / m) (one
   pass over the columns of X, csrc/_mcd.pyx ``column_products``);
2. certificate (below); stop when it meets ``tol``;
3. working set: the nonzero coordinates and the zero ones whose |G| exceeds lam1;
4. coordinate descent on the quadratic model
   ``G.d + 0.5 d.H d + lam1 ||W + D||_1 + lam2/2 ||W + D||^2`` over the working set,
   H = (1/m) sum_i c_i x_i x_i^T (x) (diag(p_i) - p_i p_i^T) the loss Hessian: each step
   minimizes the model along one coordinate exactly (a soft threshold with the Hessian's
   diagonal), the model's score changes Z = X D^T and their p-weighted row sums kept up
   to date (``model_pass``), until the coordinates' violations in a pass sum to at most
   eps_in times those of J at W (an inexact Newton forcing term), or MAX_INNER_PASSES.
   eps_in starts at FORCING and is divided by 4 each time one pass meets it (as in
   ``cd``, after LIBLINEAR): a pass's sum is taken as it goes, each coordinate's
   violation before its step and after the steps before it, so on correlated columns
   one pass can meet a loose eps_in while the model's minimizer is still far.  There
   coordinate descent converges linearly along a few slow directions: every ANDERSON
   passes the last ANDERSON + 1 iterates D are extrapolated (Anderson acceleration of
   coordinate descent, Bertrand & Massias 2021; Z of the extrapolation costs one pass
   without the slopes), and the extrapolation replaces the iterate when it lowers the
   model;
5. Armijo line search along D (newGLMNET's eqs. (19)-(20)), J(W + t D) from S + t Z in
   O(m k) per trial, with the slack of J's rounding: near the optimum J is flat to
   machine precision while W, and with it the certificate, still moves by the Newton
   steps.

Certificate (Massias, Gramfort & Salmon 2018, Section 3, for this loss): the dual point
of the rows' loss derivatives A = P - Y gives, with l2 (lam2 > 0),
``D = (1/m) sum_i c_i H(p_i) - (1/(2 lam2)) ||S_lam1(X^T (c A) / m)||^2 <= J*`` (H the
entropy: the softmax loss's conjugate at p - e_y is -H(p), docs/math.md §1); with the l1
penalty alone A is rescaled by s = min(1, lam1 / ||X^T (c A) / m||_inf) into the dual's
feasible set, p_i then becoming s p_i + (1 - s) e_{y_i} (the domain, the simplex shifted
by e_y, is convex and holds 0).  ``gap = J(W) - max D`` over the iterations, the test of
every other solver.  G of step 1 is the pass the certificate needs: it costs O(m k) more.

Columns: X's column view (fastrisk/columns.py: a CSC copy for CSR input, column-major for
dense, made once and kept on the Dataset).  Memory beyond it: P, S, Z and a few other
(m, k) arrays, G (n_weights, k) and the inner solve's last ANDERSON + 1 iterates (vectors
over the working set).
"""

import math

import numpy as np

from fastrisk import _mcd, _msdca
from fastrisk.columns import column_view
from fastrisk.config import solver_threads
from fastrisk.losses import vector_loss
from fastrisk.regularizers import penalty_weights
from fastrisk.solvers._checks import start_weights
from fastrisk.solvers._info import SolverInfo
from fastrisk.solvers.msdca import LOSS_IDS as _msdca_ids
from fastrisk.stopping import Monitor

LOSS = "softmax"                  # the loss whose gradient, Hessian and conjugate are below
FORCING = 0.1                     # inner stop: violations <= FORCING x those of J at W
MAX_INNER_PASSES = 1000
SIGMA, MAX_LINE_STEPS = 0.01, 30  # Armijo constant and backtracking steps (newGLMNET)
NU = 1e-12                        # added to the model's Hessian diagonal (newGLMNET)
ROUNDOFF = 1e-15                  # relative round-off of evaluating J (line search slack)
ANDERSON = 5                      # passes between extrapolations of the inner iterates
EXTRAPOLATION_RIDGE = 1e-12       # relative ridge of the extrapolation's Gram matrix
STALL_ITERATIONS = 3              # line searches failing in a row: "stalled"


def _loss(S, yi, c, m):
    """(the rows' loss derivatives P - Y, the loss (1/m) sum_i c_i phi(s_i, y_i)) at the
    scores S (fastrisk.losses.vector_loss)."""
    values, R = vector_loss(LOSS, S, yi)
    return R, float((values if c is None else c * values).sum()) / m


def _dual(P, yi, c_arg, m, lam1, lam2, top, shrunk):
    """D of the module docstring at the rows' probabilities P, from max |G| (``top``) and
    ||S_lam1(G)||^2 (``shrunk``), G = X^T (c (P - Y)) / m; P is overwritten."""
    if lam2 == 0.0 and top > lam1:  # the l1 dual's box: rescale toward e_y
        s = lam1 / top
        P *= s
        P[np.arange(m), yi] += 1.0 - s
    entropy = _msdca.dual_terms(P, yi, c_arg, _msdca_ids[LOSS], np.empty(m))
    return entropy / m - (shrunk / (2 * lam2) if lam2 > 0.0 else 0.0)


def _model_value(g, w, d, ZT, pz, CPT, r, lam1, lam2):
    """The quadratic model of step 4 at D (up to its constant): G.d + lam1 ||w + d||_1 +
    lam2/2 ||w + d||^2 + (1/2) sum_i r_i (sum_c p_ic z_ic^2 - pz_i^2), the last term
    d.H_loss d (r_i = c_i / m, CPT = r P class-major)."""
    u = w + d
    curv = float(np.einsum("ci,ci->", CPT, ZT * ZT)) - float(r @ (pz * pz))
    return float(g @ d) + lam1 * float(np.abs(u).sum()) + 0.5 * lam2 * float(u @ u) + 0.5 * curv


def _inner_solve(cols_x, cols, classes, g, H, w, PT, CPT, r, lam1, lam2, tol):
    """(D on the working set, its score changes Z = X D^T (m, k), passes) of step 4."""
    k, m = PT.shape
    d, ZT, pz = np.zeros(cols.shape[0]), np.zeros((k, m)), np.zeros(m)
    iterates, passes = [d.copy()], 0
    while passes < MAX_INNER_PASSES:
        total = _mcd.model_pass(*cols_x, cols, classes, g, H, w, d, PT, CPT, ZT, pz, lam1,
                                lam2)
        passes += 1
        if total <= tol:
            break
        iterates.append(d.copy())
        if len(iterates) == ANDERSON + 1:
            d_ex, iterates = _extrapolate(iterates), [d.copy()]
            if d_ex is None:
                continue
            Z_ex = np.zeros((m, k))
            _mcd.add_columns(*cols_x, cols, classes, d_ex, Z_ex)
            ZT_ex = np.ascontiguousarray(Z_ex.T)
            pz_ex = np.einsum("ci,ci->i", PT, ZT_ex)
            if (_model_value(g, w, d_ex, ZT_ex, pz_ex, CPT, r, lam1, lam2)
                    < _model_value(g, w, d, ZT, pz, CPT, r, lam1, lam2)):
                d, ZT, pz = d_ex, ZT_ex, pz_ex
    return d, np.ascontiguousarray(ZT.T), passes


def _extrapolate(iterates):
    """Anderson's extrapolation sum_k c_k x_k of the iterates x_1..x_K of the list
    [x_0, ..., x_K]: sum c = 1 and c minimizing ||sum_k c_k (x_k - x_{k-1})||
    (Bertrand & Massias 2021), c proportional to (U U^T)^-1 1 for the differences U,
    whose Gram matrix gets a relative ridge of EXTRAPOLATION_RIDGE (it is singular once
    the iterates span fewer than K directions); None when the iterates do not move."""
    X = np.array(iterates)
    U = np.diff(X, axis=0)
    M = U @ U.T
    scale = float(np.trace(M))
    if not scale > 0.0:
        return None
    M.flat[::M.shape[0] + 1] += EXTRAPOLATION_RIDGE * scale
    z = np.linalg.solve(M, np.ones(M.shape[0]))
    return (z / z.sum()) @ X[1:]


def solve_mcd(problem, *, tol=1e-4, abs_tol=0.0, max_iter=1000, time_limit=None,
              callback=None, verbose=0, start=None, random_state=None, n_threads=None):
    """Minimize ``problem`` (softmax loss, a penalty with an l1/l2 split) by proximal Newton
    with coordinate-descent inner solves; see the module docstring.

    ``max_iter`` counts Newton (outer) iterations.  ``start``: a weight vector or a Result
    to warm-start from.  ``n_threads``: threads of the column pass of step 1 (None = the
    problem's n_threads).  ``random_state`` is accepted for the common signature (the
    passes are cyclic).

    ``result.extra``: ``dual_objective`` (the best D), ``n_working`` (the last working
    set's size), ``n_inner_passes``, ``line_step`` (the last line search's step).
    """
    SOLVER_INFO.check(problem)
    lam1, lam2 = penalty_weights(problem.regularizer, problem.alpha)
    threads = solver_threads(problem, n_threads)
    data, m, k = problem.data, problem.n_samples, problem.n_classes
    n_w = data.n_weights
    cols_x = column_view(data, threads).arrays  # (values, indices, indptr, dense)
    yi = problem.y.astype(np.int64)
    c = problem.sample_weight
    c_arg = np.empty(0) if c is None else c
    r = np.full(m, 1.0 / m) if c is None else c / m  # the rows' weights c_i / m
    W = np.ascontiguousarray(start_weights(problem, start).reshape(k, n_w).T)
    S = np.zeros((m, k))
    support = np.flatnonzero(W.reshape(-1))
    _mcd.add_columns(*cols_x, support // k, support % k,
                     W.reshape(-1)[support], S)
    G = np.empty((n_w, k))
    mon = Monitor(problem, "mcd", tol=tol, max_iter=max_iter, time_limit=time_limit,
                  callback=callback, verbose=verbose, abs_tol=abs_tol,
                  stall_rule=True)
    D_best, n_passes, n_set, stalls, t, eps_in = -math.inf, 0, 0, 0, 1.0, FORCING
    it, status = 0, None
    with mon.interruptible():
        while status is None:
            R, loss = _loss(S, yi, c, m)
            P = R.copy()
            P[np.arange(m), yi] += 1.0
            R *= r[:, None]
            _mcd.column_products(*cols_x, R, G, threads)
            viol, l1, l2, top, shrunk, cols, classes = _mcd.scan(G, W, lam1, lam2)
            J = loss + lam1 * l1 + 0.5 * lam2 * l2
            np.copyto(R, P)  # R's pass is done: its memory takes the rescaled P
            D_best = max(D_best, _dual(R, yi, c_arg, m, lam1, lam2, top, shrunk))
            status = mon.check(it, W.T.reshape(-1), J, max(J - D_best, 0.0), keep_best=False)
            if status is not None:
                break
            it += 1
            # the model over the working set (step 4)
            n_set = cols.shape[0]
            PT = np.ascontiguousarray(P.T)  # class-major for the coordinate kernels
            CPT = PT * r
            H = np.empty(n_set)
            _mcd.hessian_diagonal(*cols_x, cols, classes, CPT * (1.0 - PT), H)
            H += lam2 + NU
            g, w = G[cols, classes], W[cols, classes]
            d, Z, passes = _inner_solve(cols_x, cols, classes, g, H, w, PT, CPT, r, lam1, lam2,
                                        eps_in * viol)
            n_passes += passes
            if passes == 1:
                eps_in *= 0.25
            # Armijo along D (step 5): J(W + t D) - J(W) <= SIGMA t decrease; the penalty's
            # changes summed coordinate by coordinate, free of the cancellation of
            # differences of sums
            decrease = float(np.sum(g * d + lam1 * (np.abs(w + d) - np.abs(w))
                                    + lam2 * (w * d + 0.5 * d * d)))
            t, accepted = 1.0, False
            for _ in range(MAX_LINE_STEPS):
                _, loss_t = _loss(S + t * Z, yi, c, m)
                J_t = loss_t + lam1 * l1 + 0.5 * lam2 * l2 + float(np.sum(
                    lam1 * (np.abs(w + t * d) - np.abs(w)) + lam2 * t * (w * d + 0.5 * t * d * d)))
                if J_t <= J + SIGMA * t * decrease + ROUNDOFF * abs(J):
                    accepted = True
                    break
                t *= 0.5
            if not accepted or decrease >= 0.0:
                # the same W gives the same model: only a tighter inner solve can give
                # another direction; STALL_ITERATIONS of them fail: the precision limit
                eps_in *= 0.25
                stalls += 1
                if stalls >= STALL_ITERATIONS:
                    status = "stalled"
                continue
            stalls = 0
            W[cols, classes] = w + t * d
            S += t * Z
    if mon.interrupted:
        status = "interrupted"
    return mon.result(status, it, w=W.T.reshape(-1), objective=J, bound=max(J - D_best, 0.0),
                      dual_objective=D_best, n_working=int(n_set),
                      n_inner_passes=int(n_passes), line_step=t)


SOLVER_INFO = SolverInfo(
    name="mcd",
    func=solve_mcd,
    accepts_penalty=lambda reg: reg.l1_l2() is not None,
    penalty_rule="penalties with an l1/l2 split (l1, elasticnet, l2)",
    accepts_loss=lambda spec: spec.name == LOSS,
    loss_rule="the softmax loss",
    start="w",
    certificate="duality gap J(W) - D(A), A the rescaled loss derivatives",
    threads=True,
    # Newton steps, its own default (solvers/auto.py's Budget)
    auto_max_iter=solve_mcd.__kwdefaults__["max_iter"],
)
