"""Proximal Newton with coordinate-descent inner solves for l1 and elastic-net penalties.

The problem is ``J(w) = (1/m) sum_i c_i l(<w, x_i>, y_i) + lam1 ||w||_1 + lam2/2 ||w||^2``
with ``lam1 = alpha r`` and ``lam2 = alpha (1 - r)`` (r = l1_ratio; penalty "l1":
r = 1, "l2": r = 0) for any smooth scalar loss; the intercept is the constant
feature of the Problem, regularized like the other weights.

Algorithm (newGLMNET, Yuan, Ho & Lin 2012, Algorithm 3; LIBLINEAR's ``solve_l1r_lr``):

1. at w, the per-example derivatives g = c l'(Xw) / m and curvatures h = c l''(Xw) / m
   (csrc/fr_loss.h) and, for every column not screened out, G_j = x_j^T g + lam2 w_j
   and the Hessian diagonal x_j^T diag(h) x_j (one pass over X by columns);
2. certificate (below) and Gap Safe screening, at the first iteration and after steps
   that decreased J by at most GAP_DECREASE J (or tol J): since gap >= J(w) - J*, a
   larger decrease says w was far from the optimum one step ago, and the rescaled
   dual point of such an iterate in practice certifies nothing and screens nothing,
   while it costs m conjugates.  The other iterations, when the previous working set
   holds at most RESTRICT of the columns, compute step 1 on that set only and choose
   the next one inside it (LIBLINEAR's shrinking of the active set between full
   checks; w is zero off that set, so J is exact): a column left out re-enters at the
   next certificate iteration, which comes once the steps on the restricted problem
   decrease J little (or one of them fails);
3. working set: every coordinate except the zero ones whose |G_j| is below
   lam1 - M / m, M the largest optimality violation of the previous iteration
   (newGLMNET's outer shrinking, their eq. (31)), M = 0 at the first iteration: the
   nonzeros and the violators only (with M = inf, every column of a wide problem would
   enter the first inner solve);
4. coordinate descent on the quadratic model over the working set until the sum of
   its violations is at most eps_in times that of the first iteration (eps_in
   starts at 1 and is divided by 4 each time a single pass suffices) and at most
   FORCING times the current outer violations (an inexact-Newton forcing term; while the
   steps still decrease J by more than GAP_DECREASE, far from the optimum where the
   quadratic model is a poor guide, FORCING_FAR); the passes
   run over the columns of X_W (O(nnz(X_W)) each) or, when the working set is small and
   the passes many, over its Gram matrix X_W^T diag(h) X_W (built once per iteration,
   O(|W|^2) per pass; ``inner=``), where every few passes a Newton step on the model's
   nonzero coordinates (one Cholesky solve of their Gram block, kept in their orthant)
   takes over along the directions coordinate descent creeps on (collinear columns);
5. Armijo line search along the model's minimizer (their eqs. (19)-(20)); with
   ``damping="adaptive"`` the step it accepts sets the next model's damping nu
   (Levenberg-Marquardt, below).

Certificate (Massias, Gramfort & Salmon 2018, Section 3): any dual point u gives
``D(u) = -(1/m) sum_i c_i l*(u_i) - (1/(2 lam2)) ||S_lam1(X^T (c u / m))||^2 <= J*``
(docs/math.md §1 for l*; the second term is the indicator of
||X^T (c u / m)||_inf <= lam1 when lam2 = 0).  The solver uses u = s l'(Xw): s = 1
with lam2 > 0, and for the l1 penalty the rescaling s = min(1, lam1 /
||X^T g||_inf), which makes u dual feasible (the domain of l* is an interval
containing 0 and l'(f)).  ``gap = J(w) - max_k D(u_k) >= J(w) - J*`` over all
dual points met so far; ``tol`` stops on gap <= tol J(w) as for every solver.  That
test comes first at each iteration: when the dual points met so far already certify
the new w (the model's, after a tight step below), the run ends without step 1's pass.

The rescaled residual is a poor dual point near the optimum: its rescaling
costs (1 - s) lam1 ||w||_1 in D, first order in the largest violation of the
optimality conditions, while J(w) - J* is second order in it.  After the steps of
the certificate iterations whose previous step also decreased J by at most
GAP_DECREASE J (tight steps; at the first certificate iteration the step is still
long, the model's error, of second order in it, is in practice above tol J, and an
ordinary step is cheaper and lands about as close to the optimum; a warm start counts
as such an iterate), a second dual point comes from the quadratic model
that gave the step d (step 4): u = l'(Xw) + l''(Xw) X d, the per-example
derivatives of the model at w + d, whose X^T (c u / m) meets the model's optimality
conditions on the working set up to the inner solve's tolerance (exactly, on the
support, after a Newton step on it; on those iterations the inner solve goes on
past its stopping rule toward CERT_TIGHT times it, for at most the cost of the
passes already made or of the Gram matrix's build, and W takes in the kept columns
that the outer shrinking left out but that violate the model's optimality at w + d,
which would otherwise set the rescaling); it is rescaled as above, and its rows outside
the domain of l* take l'(X(w + t d)) instead.  Its D differs from J* by the model's
error, of second order in d: it certifies the iterate that the rescaled residual
certifies one outer iteration later.

Gap Safe screening (Ndiaye, Fercoq, Gramfort & Salmon 2017, Theorem 6): when l'
is L-Lipschitz (the loss's ``curvature``, sup l''), D is (m / (L max c))-strongly concave
in v = c u / m, so the dual optimum lies in the ball of radius
r = sqrt(2 (J(w) - D(u)) L max c / m) around v, and a column with
|x_j^T v| + ||x_j|| r < lam1 has w*_j = 0: it is set to zero and never read
again.  The restricted problem has the same optimum, so its gaps remain
certificates.

Damping: the model's Hessian diagonal carries nu (newGLMNET's 1e-12 by default, in units
of the largest x_ij^2).  For a loss whose curvature vanishes outside a narrow zone (the
smoothed hinge of fastrisk/solvers/smoothing.py) the model is flat along the columns whose
rows left the zone, its minimizer lies far beyond the region where it describes J, and
the line search cuts most steps to t << 1 after inner solves that crept to the model's
far minimizer.  ``damping="adaptive"`` adapts nu as Levenberg (1944) and Marquardt (1963)
do: after a step cut to t < 1, nu / t (along directions the damping dominates, a step
about t times as long), at most 1 (times max x_ij^2); after a full step, nu DAMP_SHRINK,
down to the ``nu`` given; and back to it once a step decreases J by at most DAMP_RESET
times its round-off: there the line search's cuts are round-off, not the model's error,
and the undamped model gives the dual point that certifies (a damped model's step, and
its dual point, shrink toward the rescaled residual's).

Columns: X is copied once into column order (``column_view``): for CSR input a
CSC copy, i.e. the values and row indices of X again (nnz * (itemsize + index
size) bytes) plus m entries for the intercept column, 8 (n_weights + 1) bytes of
column pointers and 16 n_weights bytes of column scales (norms for the screening and
maxima for the step limits, made with the copy; fastrisk/columns.py for the memory
held while the copy is made).
For dense input a column-major copy of X.  The Gram matrix of a working set is built
from the rows of X or, when cheaper (W's columns hold few of X's entries), from W's
columns sorted into rows: 16 nnz(X_W) + 8 (m + 1) bytes while it is built.  Pass
``columns=`` to reuse one copy across solves (regularization paths).  The inner
passes are sequential; ``n_threads`` splits the copy (by rows, then by buckets of
columns) and the column pass of step 1 (each column summed in row order:
the bits do not depend on the thread count); the BLAS calls (products with the Gram
matrix, LAPACK's Cholesky factorization of the support's block) run on one BLAS thread.
"""

import math

import numpy as np
from scipy.linalg import lapack

from fastrisk import _cd
from fastrisk.columns import check_columns, column_view
from fastrisk.config import single_threaded_blas, solver_threads
from fastrisk.regularizers import penalty_weights
from fastrisk.solvers._checks import (check_bool, check_choice, check_int, check_number,
                                      check_rng, start_weights)
from fastrisk.solvers._info import SolverInfo
from fastrisk.stopping import Monitor

GAP_DECREASE = 0.01               # relative decrease of J below which the gap is computed
RESTRICT = 0.5                    # largest fraction of the kept columns of a restricted step 1
SIGMA, MAX_LINE_STEPS = 0.01, 30  # Armijo constant and backtracking steps (newGLMNET)
NU = 1e-12                        # added to the model's Hessian diagonal (newGLMNET), times
                                  # the largest x_ij^2 (``score_step``)
DAMP_SHRINK = 0.25                # damping="adaptive": nu's factor after a full step
DAMP_RESET = 1e3                  # and the decrease of J, in units of its round-off, below
                                  # which nu returns to its least value
MAX_INNER_PASSES = 1000
FORCING = 0.1                     # inner stop: violations <= FORCING x the outer ones
FORCING_FAR = 0.5                 # the same before the steps are certificate iterations
PASS_GRAIN = 50_000               # nonzeros per thread below which the column pass is serial
ROUNDOFF = 1e-15                  # relative round-off of evaluating J (line search slack)
SCREEN_MARGIN = 1e-9              # relative slack of the sphere test against rounding
STALL_ITERATIONS = 3              # certificate iterations without progress: "stalled"
SCORE_STEP = 10.0                 # largest change of a score in one coordinate step
                                  # (``score_step``; LIBLINEAR's clip)
POLISH_EVERY = 4                  # Gram inner passes between Newton steps on the support
POLISH_MAX_SUPPORT = 1000         # largest support of those steps (an |S|^3 solve)
CERT_TIGHT = 1e-3                 # inner stop on certificate iterations, x the usual one
# passes toward CERT_TIGHT, in units of the previous solve's: at a linear rate, each factor
# FORCING of the violations costs about one solve
TIGHT_PASSES = 1.0 + math.log(CERT_TIGHT) / math.log(FORCING)
GRAM_MAX_COLUMNS = 2000           # largest working set of the Gram inner solve (32 MB)
GRAM_READ = 3.0                   # cost of the Gram build's read of an entry of X (a lookup
                                  # of its column's position and a branch) in multiply-adds
GRAM_SORT = 6.0                   # the same for an entry of X_W sorted into rows (two
                                  # passes with scattered writes)


def penalty_split(problem):
    """(lam1, lam2) with alpha Omega(w) = lam1 ||w||_1 + lam2/2 ||w||^2."""
    weights = penalty_weights(problem.regularizer, problem.alpha)
    if weights is not None:
        return weights
    raise ValueError(SOLVER_INFO.why_not(problem))


def bordered(H, B):
    """The symmetric matrix [[H, B_W^T], [B_W, C]] with B = [B_W, C] (the rows of new
    columns against the old ones and against each other); C's lower triangle is taken
    from its upper one, so that the result is exactly symmetric although the two were
    summed in different orders."""
    n_w, n_add = H.shape[0], B.shape[0]
    out = np.empty((n_w + n_add, n_w + n_add))
    out[:n_w, :n_w] = H
    out[n_w:] = B
    out[:n_w, n_w:] = B[:, :n_w].T
    C = out[n_w:, n_w:]
    C[:] = np.triu(C) + np.triu(C, 1).T
    return out


def screens(problem, screening=True):
    """Whether solve_cd runs Gap Safe screening on ``problem`` (and reads the column
    norms): asked for, an l1 term, and a loss with bounded l'' (module docstring)."""
    return bool(screening) and penalty_split(problem)[0] > 0 \
        and problem.loss.curvature is not None


def _check_problem(problem):
    spec = getattr(problem.loss, "spec", None)
    if problem.data is None or spec is None:
        raise ValueError("solver 'cd' needs a Problem built from data (X, y)")
    if spec.vector or not spec.smooth:
        raise ValueError(f"solver 'cd' takes smooth scalar losses, got loss {spec.name!r}")


def _raise_on(status, problem):
    if status != _cd.STATUS_OK:
        raise FloatingPointError(f"the {problem.loss.name} loss is not finite at the current "
                                 "weights; check the scale of X and alpha")


def score_step(problem):
    """The largest change of a score in one coordinate step: SCORE_STEP in units of the
    scores' scale, 1 for the binary and count losses (scores are log-odds, margins or
    log-means) and max |y| for the regression losses (scores in the units of y).  A
    coordinate then moves by at most score_step / max_i |x_ij| (``_cd.step_limit``):
    for features in [-1, 1] and labels -1/+1 LIBLINEAR's clip of every coordinate step
    to [-10, 10]; here the limits follow the scale of X and y, so that a rescaled
    problem takes rescaled steps (the optimum of X / s is s times that of X)."""
    scale = 1.0
    if problem.loss.spec.task == "regression":
        top = float(np.abs(problem.y).max(initial=0.0))
        scale = top if top > 0.0 else 1.0
    return SCORE_STEP * scale


def solve_cd(problem, *, tol=1e-4, abs_tol=0.0, max_iter=1000, time_limit=None, callback=None,
             verbose=0, start=None, check_every=1, n_threads=None, random_state=None,
             screening=True, columns=None, inner="auto", nu=NU, damping="fixed"):
    """Minimize ``problem`` by proximal Newton / coordinate descent; see the module docstring.

    ``max_iter`` counts Newton (outer) iterations.  Options beyond the common ones:
    start: a weight vector or a Result to warm-start from (replaced by w = 0 when
    J(start) > J(0)).
    check_every: outer iterations between certificates (each costs m conjugates), among
    those where step 2 computes one.
    n_threads: threads of the column pass (None = the problem's n_threads).
    random_state: seed of the coordinate order in the inner passes.
    screening: Gap Safe screening (needs a loss with bounded l'', an l1 term).
    columns: the ``column_view(problem.data)`` to use (made here when None).
    inner: "columns" (inner passes over X_W), "gram" (over the Gram matrix of W) or
    "auto" (the one estimated cheaper, and from columns to Gram when the column passes
    creep; Gram up to GRAM_MAX_COLUMNS working columns).
    nu: the term added to the model's Hessian diagonal, times the largest x_ij^2
    (newGLMNET's nu, NU; at most 1); a larger one damps the steps along directions where
    the loss has no curvature at w (fastrisk/solvers/smoothing.py's smoothed hinge).
    damping: "fixed" (nu throughout) or "adaptive" (nu from the line search's steps, at
    least ``nu``; module docstring).

    ``result.extra``: ``dual`` (the dual point u of the best D), ``dual_objective``,
    ``n_screened`` (columns removed by screening), ``screened`` (their boolean mask),
    ``n_working`` (working-set size of the last iteration), ``n_inner_passes``,
    ``n_gram`` (outer iterations whose inner solve ran on the Gram matrix),
    ``n_tight`` (tight steps: outer iterations whose model gives a dual point),
    ``n_restricted`` (outer iterations whose step 1 ran on the previous working set).
    """
    _check_problem(problem)
    lam1, lam2 = penalty_split(problem)
    check_every = check_int(check_every, "check_every", low=1)
    screening = check_bool(screening, "screening")
    check_choice(inner, "inner", ("auto", "columns", "gram"))
    nu = check_number(nu, "nu", 0.0, 1.0, low_open=True)
    adaptive = check_choice(damping, "damping", ("fixed", "adaptive")) == "adaptive"
    mon = Monitor(problem, "cd", tol=tol, max_iter=max_iter, time_limit=time_limit,
                  callback=callback, verbose=verbose, abs_tol=abs_tol,
                  stall_rule=True)
    data, loss = problem.data, problem.loss
    m, n_weights = data.n_samples, data.n_weights
    threads = max(1, min(solver_threads(problem, n_threads), data.nnz // PASS_GRAIN))
    curv = problem.loss.curvature  # sup l'', None when unbounded
    screen = screens(problem, screening)
    cols = column_view(data, threads, scales=True) if columns is None else \
        check_columns(columns, data)
    kid, p, y = loss.spec.kernel_id, loss.param, problem.y
    c = problem.sample_weight
    c_arg = np.empty(0) if c is None else c
    inv_m = 1.0 / m
    rng = np.array([check_rng(random_state).integers(2**63)], dtype=np.uint64)
    step, maxabs = score_step(problem), cols.maxabs
    # newGLMNET's nu for features in [-1, 1], in the units of the model's Hessian (x^2;
    # its square kept finite)
    top = min(float(maxabs.max(initial=0.0)), 1e150)
    scale = top * top if top > 0.0 else 1.0
    nu_min = nu = nu * scale

    w = start_weights(problem, start)
    f = np.empty(m)  # X w, from the columns of the support only (warm starts on a path)
    support = np.flatnonzero(w)
    _cd.column_combination(*cols.arrays, support, w[support], f)
    kept = np.arange(n_weights, dtype=np.int64)  # columns not screened out
    # grad and hdiag are read on the kept columns after column_stats writes them, wpd on
    # the working set after it is set to w there
    grad, hdiag, wpd = np.zeros(n_weights), np.empty(n_weights), np.empty(n_weights)
    dots = np.empty(n_weights)  # X^T (c u / m) of the model's dual point on the kept columns
    deriv, g, h, xtd, work = (np.empty(m) for _ in range(5))
    trial = tuple(np.empty(m) for _ in range(3))  # the line search's deriv, g, h
    if start is not None:
        # a coordinate moves at most its step limit per step: from a start worse than
        # w = 0 (a refit after y was rescaled) the run would creep back for many iterations
        loss_value, _ = _cd.derivatives(kid, p, f, y, c_arg, inv_m, deriv, g, h, threads)
        with np.errstate(over="ignore"):  # a penalty that overflows is above J(0)
            J_start = loss_value + lam1 * float(np.abs(w).sum()) + 0.5 * lam2 * float(w @ w)
        if not J_start <= problem.objective_at_zero():
            w[:], f[:], start = 0.0, 0.0, None
    buffer = np.empty(n_weights, dtype=np.int64)  # the working set, or the screened columns
    if screen:
        radius_scale = 2.0 * curv * (1.0 if c is None else float(c.max())) * inv_m

    def dual_objective(u, shrunk):
        """D(u) (rows of weight 0 contribute nothing); ``shrunk`` is
        ||S_lam1(X^T (c u / m))||^2 (u unscaled whenever lam2 > 0)."""
        conj = loss.conjugate(u, y)
        risk = conj.sum() if c is None else conj[c > 0] @ c[c > 0]
        reg = 0.0 if lam2 == 0.0 else shrunk / (2.0 * lam2)
        return -inv_m * risk - reg

    def model_dual(deriv_old, h_old, deriv_new):
        """(D, dual point) for the model's dual point u = l'(f) + l''(f) X d (module
        docstring) from the derivatives at the step's start and end; X d is in xtd."""
        curv_old = h_old * m if c is None else np.divide(h_old * m, c, out=np.zeros(m),
                                                           where=c > 0)
        u = deriv_old + curv_old * xtd
        outside = ~np.isfinite(loss.conjugate(u, y))
        u[outside] = deriv_new[outside]
        return rescaled_dual(u)

    def rescaled_dual(u):
        """(D(s u), s u), s the rescaling of the module docstring (one pass over the kept
        columns; u in the domain of l*)."""
        v = inv_m * u if c is None else inv_m * c * u
        _cd.column_stats(*cols.arrays, v, np.empty(0), kept, dots, dots, threads)
        top, _, _, shrunk = _cd.kept_sums(kept, dots, w, lam1)
        s = 1.0 if lam2 > 0.0 or top <= lam1 else lam1 / top
        return dual_objective(s * u, shrunk), s * u

    rows, pos = None, None  # the row view and column -> position in W, made at first use
    last_gram = None  # the Gram matrix of gram_inner's last working set
    row_sq = float(np.square(np.diff(data.indptr).astype(np.float64)).sum()) \
        if not data.dense else float(m) * data.n_features ** 2  # sum_i nnz(x_i)^2

    def nnz_of(working):
        """nnz(X_W)."""
        return int((cols.indptr[working + 1] - cols.indptr[working]).sum())

    def gram_costs(working):
        """(cost of building the Gram matrix of W, of one Gram pass, of one column pass,
        whether the build reads W's columns rather than the rows of X).

        Column passes cost 2 nnz(X_W) each; the Gram matrix costs sum_i r_i^2 / 2 (r_i
        the row's nonzeros in W, estimated as the row's nonzeros in X times nnz(X_W) /
        nnz(X)) plus GRAM_READ nnz(X) from the rows (``_cd.gram_rows``) or GRAM_SORT
        nnz(X_W) + m from W's columns (``_cd.gram_columns``), whichever is less, once, and
        X d afterwards; then |W|^2 per pass.
        """
        n_w = working.shape[0]
        nnz_w = float(nnz_of(working))
        pairs = row_sq * (nnz_w / max(data.nnz, 1)) ** 2  # rows' nonzeros thinned evenly
        from_rows, from_columns = GRAM_READ * data.nnz, GRAM_SORT * nnz_w + m
        return (min(from_rows, from_columns) + pairs / 2.0 + nnz_w, float(n_w * n_w),
                2.0 * nnz_w, from_columns < from_rows)

    def inner_solve(working, stop, passes_before, tight):
        """newGLMNET's inner solve on W (``inner``); sets wpd and X d, returns (passes,
        whether the Gram matrix was used).

        "auto" runs on the Gram matrix when it is estimated cheaper for as many passes
        as the previous inner solve took, TIGHT_PASSES times as many toward ``tight``
        (< stop); otherwise on the columns, until the passes
        have cost as much as building the Gram matrix, and then (still short of the
        stopping rule: the passes creep) on the Gram matrix from the point reached,
        which costs at most twice the better of the two choices made in hindsight.
        """
        n_w = working.shape[0]
        gram_ok = inner == "gram" or (inner == "auto" and n_w <= GRAM_MAX_COLUMNS)
        cap = MAX_INNER_PASSES
        if gram_ok and inner == "auto":
            build, gram_pass, column_pass, _ = gram_costs(working)
            expected = passes_before * (TIGHT_PASSES if tight < stop else 1.0)
            if build + expected * gram_pass < expected * column_pass:
                return gram_inner(working, stop, tight), True
            cap = max(1, min(MAX_INNER_PASSES, int(build / max(column_pass, 1.0))))
        if inner == "gram":
            return gram_inner(working, stop, tight), True
        xtd[:] = 0.0
        p_, done = _cd.inner_cd(*cols.arrays, h, working, working.shape[0], grad, hdiag, w,
                                wpd, xtd, maxabs, step, lam1, lam2, nu, stop, cap, inv_m, rng)
        if done and tight < stop:
            # toward ``tight``: on the Gram matrix if its build costs at most twice the
            # passes made, else for as many column passes again
            if gram_ok and build <= 2 * p_ * column_pass:
                return p_ + gram_inner(working, tight, tight), True
            p_ += _cd.inner_cd(*cols.arrays, h, working, working.shape[0], grad, hdiag, w,
                               wpd, xtd, maxabs, step, lam1, lam2, nu, tight, p_, inv_m,
                               rng)[0]
        if done or not gram_ok:
            return p_, False
        return p_ + gram_inner(working, stop, tight), True

    def row_view():
        """(the row view of X for the Gram kernels, column -> position in W: -1), made at
        first use."""
        nonlocal rows, pos
        if rows is None:
            rows = (data.data, data.indices, data.indptr.astype(np.int64), data.dense)
            pos = np.full(data.n_features + 1, -1, dtype=np.int64)
        return rows, pos

    def gram(working):
        """X_W^T diag(h) X_W from the rows of X or from W's columns (``gram_costs``)."""
        n_w = working.shape[0]
        H = np.empty((n_w, n_w))
        if gram_costs(working)[3]:
            nnz_w = nnz_of(working)
            _cd.gram_columns(*cols.arrays, working, h, H, np.empty(m + 1, dtype=np.int64),
                             np.empty(nnz_w, dtype=np.int64), np.empty(nnz_w))
        else:
            rows, pos = row_view()
            pos[working] = np.arange(n_w)
            _cd.gram_rows(*rows, data.bias, pos, h, H, np.empty(n_w),
                          np.empty(n_w, dtype=np.int64))
            pos[working] = -1
        return H

    def gram_extended(H, working, add):
        """The Gram matrix of W + ``add`` from H, W's, and the rows that the added columns
        add to it, computed from the rows of X that touch them (``_cd.gram_cross``); or
        built anew when reading those rows (GRAM_READ per entry) costs more than that
        (``gram_costs``: wide rows, W's Gram built from its columns)."""
        n_w, n_add = working.shape[0], add.shape[0]
        both = np.concatenate([working, add])
        if data.dense:
            visits = float(n_add) * m * data.n_features
        else:
            row_len = np.diff(data.indptr)
            visits = float(sum(int(row_len[cols.indices[cols.indptr[a]:cols.indptr[a + 1]]].sum())
                               for a in add))
        if GRAM_READ * visits > gram_costs(both)[0]:
            return gram(both)
        rows, pos = row_view()
        pos[both] = np.arange(n_w + n_add)
        B = np.empty((n_add, n_w + n_add))
        _cd.gram_cross(*rows, data.bias, *cols.arrays, pos, add, h, B)
        pos[both] = -1
        return bordered(H, B)

    def gram_inner(working, stop, tight, H=None):
        """newGLMNET's inner coordinate descent on the Gram matrix H of W (built here when
        None, and kept for ``complete_model``); sets wpd and X d.

        Every POLISH_EVERY passes without meeting the stopping rule, a Newton step on
        the model's nonzero coordinates S (``polish``) before the passes go on: on
        nearly collinear columns coordinate descent creeps, the reduced system does not
        (after a step cut short at a sign change, twice as many passes as before the
        last one).
        Once ``stop`` is met, the passes go on toward ``tight`` (< stop on certificate
        iterations: the model's dual point is as good as the model's minimizer) for at
        most as many passes as cost the Gram matrix's build, starting with a polish.
        """
        nonlocal last_gram
        n_w = working.shape[0]
        H = last_gram = gram(working) if H is None else H
        w_w, grad_w = w[working], grad[working]
        limit_w = _cd.step_limits(step, maxabs[working])
        wpd_w = wpd[working]  # w + d on entry: d = 0, or where the column passes stopped
        q = H @ (wpd_w - w_w)
        order = np.arange(n_w, dtype=np.int64)
        passes, last, every = 0, MAX_INNER_PASSES, POLISH_EVERY
        while passes < last:
            p_, done = _cd.inner_cd_gram(H, order, grad_w, w_w, wpd_w, q, limit_w, lam1,
                                         lam2, nu, stop, min(every, last - passes), inv_m,
                                         rng)
            passes += p_
            if done:
                if stop <= tight:
                    break
                build, gram_pass, _, _ = gram_costs(working)
                stop = tight
                last = min(last, passes + max(POLISH_EVERY, int(build / max(gram_pass, 1.0))))
            t = polish(H, grad_w, w_w, wpd_w, limit_w)
            if t > 0.0:
                np.dot(H, wpd_w - w_w, out=q)
            # a step cut short at a sign change, which the passes may undo (the face's
            # system singular along collinear columns: one-hot groups), is followed by
            # twice as many passes before the next; a full one, by the usual number
            every = POLISH_EVERY if t == 1.0 else 2 * every
        wpd[working] = wpd_w
        _cd.column_combination(*cols.arrays, working, wpd_w - w_w, xtd)
        return passes

    def complete_model(working, n_working, stop, passes, used_gram):
        """Extend the inner solve of a tight step to the kept columns that violate the
        model's optimality at w + d; returns (|W|, passes).

        The model's dual point is rescaled by its largest violation over every kept
        column, and a column left out of W by the outer shrinking (zero, and inside
        (-lam1, lam1) by more than M / m at w) can violate at w + d: such columns,
        |x_j^T (g + h X d)| > lam1 (one pass over the kept columns outside W), join W at
        0 and the inner solve goes on toward the tight tolerance from the point reached:
        on the Gram matrix of the larger W if it ran on one (W's, extended by the rows
        of X that touch the added columns: ``gram_extended``), else for at most as many
        column passes again (at least 2).  Only when needed: when the rescaling that
        their largest violation v would set costs (1 - lam1 / v) lam1 ||w + d||_1 in D
        (module docstring) above half the tolerance (with lam2 > 0, s = 1: whenever one
        violates).
        """
        outside = np.ones(n_weights, dtype=bool)
        outside[working] = False
        rest = columns_now[outside[columns_now]]
        _cd.column_stats(*cols.arrays, g + h * xtd, np.empty(0), rest, dots, dots, threads)
        add = rest[np.abs(dots[rest]) > lam1]
        if add.shape[0] == 0:
            return n_working, 0
        if lam2 == 0.0:
            top = float(np.abs(dots[add]).max())
            cost = (1.0 - lam1 / top) * lam1 * float(np.abs(wpd[working]).sum())
            if cost <= 0.5 * max(mon.tol * abs(P), mon.abs_tol):
                return n_working, 0
        buffer[n_working:n_working + add.shape[0]] = add
        n_working += add.shape[0]
        wpd[add] = 0.0
        tight = CERT_TIGHT * stop
        if used_gram:  # the Gram matrix of W, extended by the added columns
            H = gram_extended(last_gram, working, add)
            return n_working, gram_inner(buffer[:n_working], tight, tight, H)
        more, _ = _cd.inner_cd(*cols.arrays, h, buffer[:n_working], n_working, grad, hdiag, w,
                               wpd, xtd, maxabs, step, lam1, lam2, nu, tight, max(passes, 2),
                               inv_m, rng)
        return n_working, more

    def polish(H, grad_w, w_w, wpd_w, limit_w):
        """Move wpd toward the minimizer of the model on its orthant face; returns the
        fraction of the way taken (0 if no move).

        On the face {x: x_j = 0 off S, sign(x_S) = sign(wpd_S)} the model is the smooth
        quadratic with gradient grad + H (x - w) + (lam2 + nu)(x - w) + lam1 sign; its
        minimizer solves one |S| x |S| system.  The step goes from wpd toward it and
        stops at the first coordinate that would change sign (set to 0 there): the
        model decreases along the segment (convex, minimized at its end), as in the
        orthant-wise Newton steps of Andrew & Gao (2007).
        """
        S = np.flatnonzero(wpd_w)
        if S.shape[0] == 0 or S.shape[0] > POLISH_MAX_SUPPORT:
            return 0.0
        x, sign = wpd_w[S], np.sign(wpd_w[S])
        off = wpd_w - w_w
        off[S] = 0.0  # d off S
        A = H[np.ix_(S, S)]
        A.flat[::S.shape[0] + 1] += lam2 + nu
        b = grad_w[S] + lam1 * sign + H[S] @ off  # the face model: b^T e + e^T A e / 2, e = x - w
        factor, info = lapack.dpotrf(A, lower=1)  # A = L L^T (LAPACK, one BLAS thread)
        if info != 0:
            return 0.0  # not numerically positive definite
        e, _ = lapack.dpotrs(factor, b, lower=1)
        target = w_w[S] - e
        step = target - x
        ratios = np.full(S.shape[0], np.inf)
        flips = np.sign(target) != sign
        ratios[flips] = -x[flips] / step[flips]
        hit = int(np.argmin(ratios))
        # at most the step limits, as the coordinate steps (a singular A, e.g. rows of zero
        # curvature, leaves the face model unbounded along its null space)
        with np.errstate(divide="ignore"):
            t = min(1.0, float(ratios[hit]), float((limit_w[S] / np.abs(step)).min()))
        new = x + t * step
        if t == ratios[hit]:
            new[hit] = 0.0

        def face_model(v):
            e = v - w_w[S]
            return float(b @ e + 0.5 * e @ (A @ e))

        if not np.isfinite(new).all() or not face_model(new) < face_model(x):
            return 0.0  # round-off of a near-singular solve
        wpd_w[S] = new
        return t

    M_prev, gnorm1_init, inner_eps = 0.0, None, 1.0
    D_best, u_best, gap = -math.inf, None, math.nan
    extra = getattr(start, "extra", None)
    u_start = extra.get("dual") if isinstance(extra, dict) else None
    if u_start is not None:
        # a warm start from a Result keeps its dual point (any u in the domain of l* is
        # one, once rescaled): a certified w stays certified
        u_start = np.array(u_start, dtype=np.float64)
        if u_start.shape == (m,) and np.isfinite(loss.conjugate(u_start, y)).all():
            D_best, u_best = rescaled_dual(u_start)
    P = math.inf if start is None else -math.inf  # a warm start counts as near the optimum
    near = start is not None  # and as one whose previous step was near it (tight steps)
    status, it, n_passes, n_working, passes, n_gram = None, 0, 0, n_weights, 1, 0
    n_restricted, n_tight = 0, 0
    t_step = 0.0  # the last line search's step
    stuck, D_seen = 0, -math.inf  # certificate iterations without progress, the last D
    # whether deriv, g, h and loss_value are those of the current f (a kept start's are)
    fresh = start is not None
    active, force_full = kept, True  # the columns of step 1 on restricted iterations
    with mon.interruptible(), single_threaded_blas():
        while status is None:
            it += 1
            if not fresh:
                loss_value, st = _cd.derivatives(kid, p, f, y, c_arg, inv_m, deriv, g, h, threads)
                _raise_on(st, problem)
            fresh = False
            _, l1, sq, _ = _cd.kept_sums(active, grad, w, lam1)  # w = 0 off active
            P_prev, P = P, loss_value + lam1 * l1 + 0.5 * lam2 * sq
            bound = math.nan
            was_near = near
            near = P_prev - P <= max(GAP_DECREASE * abs(P), mon.tol * abs(P), mon.abs_tol)
            if adaptive and t_step > 0.0:  # Levenberg-Marquardt (module docstring)
                if P_prev - P <= DAMP_RESET * ROUNDOFF * abs(P):
                    nu = nu_min
                elif t_step < 1.0:
                    nu = min(nu / t_step, scale)
                else:
                    nu = max(nu_min, DAMP_SHRINK * nu)
                t_step = 0.0  # once per step (screening can repeat an iteration)
            if mon.met(P, P - D_best):
                # a dual point met before (the model's, after a tight step) certifies w:
                # no pass over the columns
                status = mon.check(it, w, P, max(P - D_best, 0.0), keep_best=False)
                break
            full = force_full or (it % check_every == 0 and near)
            force_full = False
            restricted = not full and active.shape[0] <= RESTRICT * kept.shape[0]
            columns_now = active if restricted else kept
            n_restricted += restricted
            _cd.column_stats(*cols.arrays, g, h, columns_now, grad, hdiag, threads)
            if full:
                top, _, _, shrunk = _cd.kept_sums(kept, grad, w, lam1)
                s = 1.0 if lam2 > 0.0 or top <= lam1 else lam1 / top
                D_now = dual_objective(s * deriv, shrunk)
                if D_now > D_best:
                    D_best, u_best = D_now, s * deriv
                bound = gap = max(P - D_best, 0.0)
                # no decrease of J beyond its round-off and no better dual point: at the
                # limit of floating point (tiny alpha), the iterations repeat themselves
                stuck = stuck + 1 if P_prev - P <= ROUNDOFF * abs(P) and D_best <= D_seen \
                    else 0
                D_seen = D_best
                if screen:  # Gap Safe sphere test around v = s g
                    radius = math.sqrt(radius_scale
                                       * (max(P - D_now, 0.0) + SCREEN_MARGIN * abs(P)))
                    n_kept, n_moved = _cd.screen(kept, grad, cols.norms, w, s, radius,
                                                 lam1 * (1.0 - SCREEN_MARGIN), buffer)
                    kept = columns_now = kept[:n_kept]
                    if n_moved:  # zero them; the derivatives change: start over
                        for j in buffer[:n_moved]:
                            _cd.column_axpy(*cols.arrays, j, -w[j], f)
                            w[j] = 0.0
                        active, force_full = kept, True
                        continue
            status = mon.check(it, w, P, bound, keep_best=False)
            if status is not None:
                break
            if stuck >= STALL_ITERATIONS:
                status = "stalled"
                break
            # working set (outer shrinking) from the violations of the optimality conditions;
            # grad[columns_now] becomes G
            n_working, gnorm1, M_now = _cd.working_set(columns_now, grad, w, lam1, lam2,
                                                       lam1 - M_prev * inv_m, buffer)
            working = buffer[:n_working]
            gnorm1_init = gnorm1 if gnorm1_init is None else gnorm1_init
            M_prev = M_now
            wpd[working] = w[working]
            stop = min(inner_eps * gnorm1_init, (FORCING if near else FORCING_FAR) * gnorm1)
            tight_step = full and near and was_near  # a model dual point (module docstring)
            n_tight += tight_step
            passes, used_gram = inner_solve(working, stop, passes,
                                            CERT_TIGHT * stop if tight_step else stop)
            n_gram += used_gram
            if tight_step:
                n_working, more = complete_model(working, n_working, stop, passes, used_gram)
                working = buffer[:n_working]
                passes += more
            n_passes += passes
            if passes == 1:
                inner_eps *= 0.25
            t, loss_value, st = _cd.line_search(kid, p, f, xtd, y, c_arg, inv_m, working,
                                                n_working, w, wpd, grad, lam1, lam2, loss_value,
                                                SIGMA, MAX_LINE_STEPS, ROUNDOFF * P, work, *trial,
                                                threads)
            _raise_on(st, problem)
            active = working.copy()
            t_step = t
            if t == 0.0:  # no step: stalled, unless only the restricted problem was looked at
                force_full = restricted
                status = None if force_full else "stalled"
            else:  # the derivatives at the new f come from the line search
                (deriv, g, h), trial = trial, (deriv, g, h)
                fresh = True
                if tight_step:
                    D_model, u_model = model_dual(trial[0], trial[2], deriv)
                    if D_model > D_best:
                        D_best, u_best = D_model, u_model
    if mon.interrupted:
        status = "interrupted"
    # the reported objective and gap are recomputed from X w (f accumulated updates), read
    # from the support's columns only
    support = np.flatnonzero(w)
    _cd.column_combination(*cols.arrays, support, w[support], f)
    loss_value, st = _cd.derivatives(kid, p, f, y, c_arg, inv_m, deriv, g, h, threads)
    _raise_on(st, problem)
    w_s = w[support]
    P = loss_value + lam1 * float(np.abs(w_s).sum()) + 0.5 * lam2 * float(w_s @ w_s)
    gap = max(P - D_best, 0.0)
    screened = np.ones(n_weights, dtype=bool)
    screened[kept] = False
    return mon.result(status, it, w=w, objective=P, bound=gap, dual=u_best, dual_objective=D_best,
                      n_screened=n_weights - int(kept.shape[0]), screened=screened,
                      n_working=int(n_working), n_inner_passes=int(n_passes),
                      n_gram=int(n_gram), n_restricted=int(n_restricted), n_tight=int(n_tight))


SOLVER_INFO = SolverInfo(
    name="cd",
    func=solve_cd,
    accepts_penalty=lambda reg: reg.l1_l2() is not None,
    penalty_rule="penalties with an l1/l2 split (l1, elasticnet, l2)",
    accepts_loss=lambda spec: spec.smooth and not spec.vector,
    loss_rule="smooth scalar losses",
    start="w",
    certificate="duality gap J(w) - D(u), u the rescaled loss derivatives",
    threads=True,
    # Newton steps, its own default (solvers/auto.py's Budget)
    auto_max_iter=solve_cd.__kwdefaults__["max_iter"],
)
