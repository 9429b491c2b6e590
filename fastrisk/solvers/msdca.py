"""Multiclass SDCA with a certified duality gap (docs/math.md §7).

Shalev-Shwartz & Zhang (2014), proximal SDCA for a k-output linear model:
``J(W) = lambda g(W) + (1/n) sum_i c_i phi(W x_i, y_i)`` with
``g = 0.5 ||W||^2 + kappa ||W||_1`` (l2: lambda = alpha, kappa = 0; elastic net
with ratio r < 1: lambda = alpha (1 - r), kappa = r / (1 - r)).  Each row owns a
dual point p_i on the k-simplex, ``A_i = e_{y_i} - p_i``,
``V = (1/(lambda n)) sum_i c_i x_i A_i^T`` and ``W = soft(V, kappa)``;

    D(A) = (1/n) sum_i c_i h(p_i) - lambda 0.5 ||W||^2,

h the entropy for softmax (multinomial logistic) and ``1 - p_iy`` for the
multiclass hinge of Crammer & Singer (2001).  An epoch visits the rows in a
random order and maximizes D over one p_i at a time (csrc/_msdca.pyx: Newton
on the simplex for softmax, as Yu, Huang & Lin 2011's dual coordinate
descent for maximum entropy; the exact simplex projection of Keerthi et al.
2008 / LIBLINEAR ``-s 4`` for the hinge).

Stopping: the kernel keeps the loss at the scores it visited and the dual
terms, whose difference estimates the gap in O(1) per epoch; when the
estimate reaches ``tol`` (and at least every ``check_every`` epochs and at
the end) one parallel pass computes the exact P(W) and the certified gap
P(W_best) - D(A) >= J(W_best) - J* (weak duality), which the Monitor stops on.
"""

import numpy as np

from fastrisk import _msdca
from fastrisk.config import solver_threads
from fastrisk.solvers._info import SolverInfo
from fastrisk.solvers._checks import check_int
from fastrisk.solvers.sdca import _penalty_split
from fastrisk.stopping import Monitor

LOSS_IDS = {"softmax": 0, "multiclass_hinge": 1}  # fr_vec.pxd's FR_VEC_* ids
# epochs between two returns of all shrunk rows: a shrunk row's margin goes stale as W
# moves, and a row left out for long slows the dual ascent per row visited more than
# the skipped visits save (20 Newsgroups, multiclass hinge)
UNSHRINK_EVERY = 3


def _initial_dual(problem, start, k):
    """The dual points P (n, k): vertices e_y (A = 0, W = 0), or a previous run's."""
    n = problem.n_samples
    if start is None:
        P = np.zeros((n, k))
        P[np.arange(n), problem.y] = 1.0
        return P
    dual = getattr(start, "extra", {}).get("dual") if hasattr(start, "extra") else start
    P = np.array(dual, dtype=np.float64)
    if P.shape != (n, k) or not np.isfinite(P).all() or (P < 0).any() \
            or not np.allclose(P.sum(axis=1), 1.0, atol=1e-12):
        raise ValueError(f"start must be a Result of solver 'msdca' or dual points of shape "
                         f"{(n, k)} on the simplex")
    return P / P.sum(axis=1, keepdims=True)


def _dual_sum(problem, P, lam_n):
    """V (D, k), feature-major: (1/(lambda n)) sum_i c_i x_i (e_{y_i} - p_i)^T."""
    data, n = problem.data, problem.n_samples
    A = -P.copy()
    A[np.arange(n), problem.y] += 1.0
    if problem.sample_weight is not None:
        A *= problem.sample_weight[:, None]
    V = np.empty((data.n_weights, P.shape[1]))
    V[: data.n_features] = np.asarray(data.X.T @ A)
    if data.bias:
        V[-1] = data.bias * A.sum(axis=0)
    return V / lam_n


def solve_msdca(problem, *, tol=1e-4, abs_tol=0.0, max_iter=1000, time_limit=None,
                callback=None, verbose=0, start=None, check_every=10, random_state=None,
                n_threads=None, shrinking=True):
    """Minimize a softmax or multiclass_hinge ``problem`` by multiclass SDCA.

    ``max_iter`` counts epochs; ``check_every``: the most epochs between two exact
    gap computations; ``n_threads``: threads of the exact primal pass (None: the
    problem's n_threads; the epochs are sequential); ``start``: a previous Result (its ``extra["dual"]``) or dual points;
    ``shrinking`` (multiclass hinge): skip the rows at the vertex e_y with a margin above
    1 (their step would not move them) until all rows are visited again, every
    ``UNSHRINK_EVERY`` epochs and after each exact gap computation (the exact gap is
    always over all rows).
    ``result.extra``: ``dual`` (the dual points p_i, (n, k)), ``dual_objective``
    (D), ``gap_estimates`` (per epoch), ``row_visits``, ``n_active`` (rows not shrunk).
    """
    spec = problem.loss.spec
    if problem.data is None or spec.name not in LOSS_IDS:
        raise ValueError(f"solver 'msdca' takes the losses {sorted(LOSS_IDS)} on data (X, y), "
                         f"got {getattr(problem.loss, 'name', problem.loss)!r}")
    lam, kappa = _penalty_split(problem)
    check_every = check_int(check_every, "check_every", low=1)
    if not isinstance(shrinking, (bool, np.bool_)):
        raise ValueError(f"shrinking must be a bool, got {shrinking!r}")
    shrinking = shrinking and spec.name == "multiclass_hinge"
    n_threads = solver_threads(problem, n_threads)
    mon = Monitor(problem, "msdca", tol=tol, max_iter=max_iter, time_limit=time_limit,
                  callback=callback, verbose=verbose, abs_tol=abs_tol)
    rng = np.random.default_rng(random_state)
    data, n, k = problem.data, problem.n_samples, problem.n_classes
    y = np.ascontiguousarray(problem.y, dtype=np.int64)
    c = problem.sample_weight
    c_arg = np.empty(0) if c is None else c
    lam_n = lam * n
    loss = LOSS_IDS[spec.name]
    rows = (data.data, data.indices, data.indptr, data.dense, data.bias)
    sqnorm = data.row_sqnorms()

    P = _initial_dual(problem, start, k)
    V = _dual_sum(problem, P, lam_n) if start is not None else np.zeros((data.n_weights, k))
    W = V if kappa == 0.0 else np.sign(V) * np.maximum(np.abs(V) - kappa, 0.0)
    row_loss, row_dual = np.zeros(n), np.empty(n)
    sums = np.zeros(4)

    def class_major(Wt):
        return np.ascontiguousarray(Wt.T).ravel()

    def certify(best):
        """Exact P(W_now), D(A) (sums re-synchronized); the better of W_now and best."""
        P_loss = _msdca.primal_loss_sum(*rows, W, y, c_arg, loss, row_loss, n_threads)
        sums[:] = (P_loss, _msdca.dual_terms(P, y, c_arg, loss, row_dual), float((W * W).sum()),
                   float(np.abs(W).sum()))
        P_now = P_loss / n + lam * (0.5 * sums[2] + kappa * sums[3])
        D_now = sums[1] / n - 0.5 * lam * sums[2]
        return ((class_major(W), P_now) if P_now <= best[1] else best), D_now

    if start is None:
        # W = 0 and every p_i = e_{y_i}: phi(0, y) = log k (softmax) or 1 (hinge), and
        # every dual term h(e_y) is 0; no pass over the data needed
        row_loss[:] = (np.log(k) if loss == LOSS_IDS["softmax"] else 1.0) * (
            1.0 if c is None else c)
        row_dual[:] = 0.0
        sums[:] = (row_loss.sum(), 0.0, 0.0, 0.0)
        w, P_obj, D = np.zeros(k * data.n_weights), sums[0] / n, 0.0
    else:
        (w, P_obj), D = certify((None, np.inf))
    status = mon.check(0, w, P_obj, max(P_obj - D, 0.0), keep_best=False)
    epoch, gap_estimates, next_exact, row_visits = 0, [], check_every, 0
    active = np.arange(n, dtype=np.int64)  # rows not shrunk (shrinking: the hinge only)
    shrunk = np.zeros(n, dtype=np.uint8)
    while status is None:
        epoch += 1
        order = rng.permutation(active)
        row_visits += len(order)
        _msdca.msdca_epoch(*rows, y, c_arg, sqnorm, order, loss, lam_n, kappa, P, V, W,
                           row_loss, row_dual, sums, shrunk)
        if shrinking:
            active = active[shrunk[active] == 0]
        P_est = sums[0] / n + lam * (0.5 * sums[2] + kappa * sums[3])
        D_est = sums[1] / n - 0.5 * lam * sums[2]
        gap_estimates.append(P_est - D_est)
        triggered = P_est - D_est <= max(mon.tol * abs(P_est), mon.abs_tol)
        if triggered or epoch >= next_exact or epoch >= mon.max_iter or not len(active):
            (w, P_obj), D = certify((w, P_obj))
            status = mon.check(epoch, w, P_obj, max(P_obj - D, 0.0), keep_best=False)
            next_exact = epoch + check_every
            if len(active) < n:
                # not converged with shrunk rows (whose terms the exact pass has just
                # refreshed): all rows back
                active = np.arange(n, dtype=np.int64)
        else:
            if len(active) < n and epoch % UNSHRINK_EVERY == 0:
                active = np.arange(n, dtype=np.int64)
            # O(1): the Monitor gets the last certified iterate (the current one, transposed,
            # only for a callback)
            status = mon.check(epoch, class_major(W) if callback is not None else w, P_est,
                               np.nan, keep_best=False, exact=False)
            if status is not None:
                (w, P_obj), D = certify((w, P_obj))
    return mon.result(status, epoch, w=w, objective=P_obj, bound=max(P_obj - D, 0.0), dual=P,
                      dual_objective=D, gap_estimates=np.array(gap_estimates),
                      row_visits=row_visits, n_active=len(active))


SOLVER_INFO = SolverInfo(
    name="msdca", func=solve_msdca, penalties=("l2", "elasticnet"),
    accepts_loss=lambda spec: spec.name in LOSS_IDS,
    loss_rule="the softmax and multiclass_hinge losses", start="dual",
    certificate="duality gap P(W) - D(A) >= J(W) - J*", threads=True, strongly_convex=True)
