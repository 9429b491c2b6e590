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
2008 / LIBLINEAR ``-s 4`` for the hinge; both over-relaxed when the dual is
ill-conditioned: ``_MSDCA.relaxation``).  Hinge rows shrink class by class
(Keerthi et al. 2008, Sec. 4): a row's scores, step and update cover only its
active classes, and a row whose only active class is y_i leaves the epoch.

Stopping: the kernel keeps the loss at the scores it visited and the dual
terms, whose difference estimates the gap in O(1) per epoch; when the
estimate reaches ``tol`` (and at least every ``check_every`` epochs and at
the end) one parallel pass computes the exact P(W) and the certified gap
P(W_best) - D(A) >= J(W_best) - J* (weak duality), which the Monitor stops on.
The last such pass (at max_iter, or once the estimate reached tol), and on the hinge
every pass, follows finishing epochs of shorter steps (``FINISHING``), whose W is
nearer the optimum than a plain epoch's (``_MSDCA.run_epoch``); the last one also
certifies the mean W of a long finishing run, the averaged output of Shalev-Shwartz &
Zhang (2013, Thm. 2) over the run's tail.

Threads: on several threads, where W exceeds HOT_FIRST_BYTES, the epochs split every long
row (``sdca.split_parts``, with k weights per feature): each thread owns a range of the
features' weight rows of V and W,
visits the same rows in the same order, and the threads add up each row's k partial
scores through one cache line per thread (csrc/fr_split.h); every thread then takes the
same step and updates its own weight rows.  The iterates are the one-thread epoch's up
to the rounding of scores summed in parts.  Where W stays in cache the step, which every
thread computes, is most of a row's time: the rows run whole on one thread.
"""

import numpy as np

from fastrisk import _msdca, _sdca, _voracle
from fastrisk.config import single_threaded_blas, solver_threads
from fastrisk.losses import vector_loss
from fastrisk.regularizers import L2_TERM_RULE, has_l2_term
from fastrisk.solvers._catalyst import Accelerated, check_accelerated, radius_sq, use_acceleration
from fastrisk.solvers._epochs import KERNEL_OVERFLOW, check_kernel_status, run_epochs
from fastrisk.solvers._info import SolverInfo
from fastrisk.solvers._checks import check_int, check_rng, real_array, start_weights
from fastrisk.solvers.sdca import penalty_split, split_parts
from fastrisk.stopping import Monitor

# the losses this solver takes, with their kernel ids (csrc/fr_vec.pxd's FR_VEC_*)
LOSS_IDS = {name: _voracle.LOSS_IDS[name] for name in ("softmax", "multiclass_hinge")}
# epochs between two returns of all shrunk rows: a shrunk row's margin goes stale as W
# moves, and a row left out for long slows the dual ascent per row visited more than
# the skipped visits save (20 Newsgroups, multiclass hinge)
UNSHRINK_EVERY = 3
# a finishing epoch (_MSDCA.run_epoch's ``finishing``) takes steps of this fraction of the
# relaxed length
FINISH_STEP = 0.5
# per loss: (whether the epoch before each periodic exact gap computation is a finishing one,
# the least number of finishing epochs before the last computation, at max_iter or once the
# estimated gap reached tol, and the fraction of the epochs run that the finishing run
# spans when that is more: ``finishing_run``).  The hinge: one before every check, and at
# least three before the last, each one more lowering P(W) - P* again where the steps are
# strongly over-relaxed (20 Newsgroups at alpha 1e-6), while in every periodic check they
# would slow the dual; a sixteenth of the run in long runs, whose mean W (``AVERAGE_AFTER``)
# is nearer P* than any one of them (20 Newsgroups at alpha 1e-6: 1e-3 relative
# suboptimality in fewer epochs), while in short runs (alpha 1e-4) more
# finishing epochs would slow the dual more than they gain.  Softmax: one before the last,
# after which W is nearer P* than after a plain epoch (MNIST at alpha 1e-4, 20 Newsgroups at
# 1e-4 and 1e-6), while one before each periodic check slows the dual more than it gains
# (MNIST)
FINISHING = {"multiclass_hinge": (True, 3, 1 / 16), "softmax": (False, 1, 0.0)}
# the finishing epochs of a run whose W enter the mean certified with the last one: all but
# the first AVERAGE_AFTER, which bring the over-relaxed iterate to the shorter steps' regime
AVERAGE_AFTER = 2
# the least over-relaxation of the multiclass hinge's steps (_MSDCA.relaxation): on 20
# Newsgroups at alpha 1e-2 to 1e-4, where Young's omega is 1, it reaches 1e-3 and 1e-4
# relative suboptimality in as many or fewer epochs than omega = 1 (fewest near 1.5)
HINGE_MIN_OMEGA = 1.5
# V and W larger than this (bytes) are laid out hot-first (``_hot_first``) on sparse data
HOT_FIRST_BYTES = 1 << 20


def finishing_run(loss_name, epochs):
    """The finishing epochs before the last exact gap of a run of ``epochs`` epochs
    (``FINISHING``)."""
    _, least, fraction = FINISHING[loss_name]
    return max(least, round(fraction * epochs))


def _on_simplex(P, n, k):
    """P as n points of the k-simplex (rows renormalized), or None when it is not one."""
    P = real_array(P)
    if P is None or P.shape != (n, k) or not np.isfinite(P).all() or (P < 0).any() \
            or not np.allclose(P.sum(axis=1), 1.0, atol=1e-12):
        return None
    return P / P.sum(axis=1, keepdims=True)


def _dual_from_weights(problem, w, k):
    """p_i = e_{y_i} + grad phi(W x_i) (softmax: the class probabilities; multiclass hinge:
    the vertex of the most violating class), so that A_i = -grad phi: the primal-dual link,
    optimal when W is, and on the simplex for every W (a subgradient of phi at W x_i)."""
    data, n = problem.data, problem.n_samples
    W = w.reshape(k, data.n_weights)
    F = np.asarray(data.X @ W[:, : data.n_features].T, dtype=np.float64)
    if data.bias:
        F += data.bias * W[:, -1]
    y = np.asarray(problem.y, dtype=np.intp)
    _, G = vector_loss(problem.loss.spec.name, F, y)
    G[np.arange(n), y] += 1.0
    return G


def _initial_dual(problem, start, k):
    """The dual points P (n, k): vertices e_y (A = 0, W = 0) without ``start``; a previous
    msdca run's (its Result, or its dual points (n, k) on the simplex); from the weights of
    any other Result, a weight vector, or an msdca Result whose points no longer fit (the
    rows changed), the points of ``_dual_from_weights``."""
    n = problem.n_samples
    if start is None:
        P = np.zeros((n, k))
        P[np.arange(n), problem.y] = 1.0
        return P
    refused = ValueError(f"start must be a Result, a weight vector of length "
                         f"{problem.n_weights} or dual points of shape {(n, k)} on the simplex")
    if hasattr(start, "extra"):  # a Result
        P = _on_simplex(start.extra.get("dual"), n, k) if start.solver == "msdca" else None
        return P if P is not None else _dual_from_weights(problem, start_weights(problem,
                                                                                  start), k)
    array = real_array(start)
    if array is not None and array.shape == (n, k):  # dual points
        P = _on_simplex(array, n, k)
    else:  # weights: a vector, or the (k, D) matrix W, as the other solvers take them
        P = _dual_from_weights(problem, start_weights(problem, array), k) \
            if array is not None and array.size == problem.n_weights else None
    if P is None:
        raise refused
    return P


def _hot_first(data, q):
    """(rows, order): the epoch kernel's row arguments with the features renumbered by
    decreasing number of rows that store them, and ``order`` (D,) the original index of
    each renumbered weight row (the intercept's stays last); (data's rows, None) for
    dense data or V of at most HOT_FIRST_BYTES.

    Every row visit reads and writes the q-wide blocks of V and W of the row's features,
    in random row order.  On sparse text most rows share a few frequent features: packed
    at the front, their blocks share cache lines and pages and stay cached, where in the
    data's own order they are spread over all of W.  Each row keeps its entries in their
    order, so the sums over a row and every iterate are the same numbers; the renumbered
    column indices are a copy of X's (nnz index entries) that lives as long as the solve.
    """
    rows = (data.data, data.indices, data.indptr, data.dense, data.bias)
    if data.dense or data.n_weights * q * 8 <= HOT_FIRST_BYTES:
        return rows, None
    d = data.n_features
    counts = np.bincount(data.indices, minlength=d)
    order = np.argsort(-counts, kind="stable")
    rank = np.empty(d, dtype=data.indices.dtype)
    rank[order] = np.arange(d, dtype=data.indices.dtype)
    indices = rank[data.indices]
    return (data.data, indices, data.indptr, False, data.bias), \
        np.concatenate([order, np.arange(d, data.n_weights)])


def _dual_sum(problem, P, lam_n):
    """V (D, q), feature-major: (1/(lambda n)) sum_i c_i x_i (e_{y_i} - p_i)^T in the first
    k columns, the padding up to q = _msdca.block_width(k) zero."""
    data, n = problem.data, problem.n_samples
    A = -P.copy()
    A[np.arange(n), problem.y] += 1.0
    if problem.sample_weight is not None:
        A *= problem.sample_weight[:, None]
    k = P.shape[1]
    V = np.zeros((data.n_weights, _msdca.block_width(k)))
    V[: data.n_features, :k] = np.asarray(data.X.T @ A)
    if data.bias:
        V[-1, :k] = data.bias * A.sum(axis=0)
    return V / lam_n


class _MSDCA:
    """Multiclass SDCA's state and epoch: the loop of :func:`solve_msdca`, or the inner
    method of the accelerated outer loop (fastrisk/solvers/_catalyst.py)."""

    def __init__(self, problem, start, n_threads, shrinking, rng):
        data, n, k = problem.data, problem.n_samples, problem.n_classes
        self.problem, self.n, self.k, self.rng = problem, n, k, rng
        self.lam, self.kappa = penalty_split(problem)
        self.lam_n = self.lam * n
        self.n_threads = n_threads
        self.shrinking = shrinking and problem.loss.spec.name == "multiclass_hinge"
        self.y = np.ascontiguousarray(problem.y, dtype=np.int64)
        c = problem.sample_weight
        self.c_arg = np.empty(0) if c is None else c
        self.loss = LOSS_IDS[problem.loss.spec.name]
        # row-split epochs on several threads (sdca.split_parts) where W does not stay in
        # cache (HOT_FIRST_BYTES: the parts' scores and updates then wait on memory, which
        # two cores serve in parallel; a cached W leaves the step, which every part
        # computes, most of a row's time), or the rows with V's and W's rows in the order
        # of ``_hot_first`` (None: X's own): a part owns a range of X's sorted features,
        # which the renumbering would scatter over its rows
        far = data.n_weights * _msdca.block_width(k) * 8 > HOT_FIRST_BYTES
        self.parts, self.cuts = split_parts(data, n_threads, k) if far else (None, None)
        self.rows, self.order = _hot_first(data, _msdca.block_width(k)) \
            if self.parts is None else ((data.data, data.indices, data.indptr, data.dense,
                                         data.bias), None)
        self.sqnorm = data.row_sqnorms()
        self.R2 = radius_sq(self.sqnorm, c)
        self.P = _initial_dual(problem, start, k)
        # a row of norm 0 (an empty document without an intercept) scores 0 whatever W
        # is, and the epochs skip it: its dual point is set to its own optimum, where the
        # row's dual term equals its loss (softmax: uniform p, entropy log k; hinge: p on
        # a class c != y_i, 1 - p_y = 1); its x_i = 0 leaves V unchanged
        empty = np.flatnonzero(self.sqnorm == 0.0)
        if empty.shape[0]:
            if self.loss == LOSS_IDS["softmax"]:
                self.P[empty] = 1.0 / k
            else:
                self.P[empty] = 0.0
                self.P[empty, (self.y[empty] + 1) % k] = 1.0
        # log P for the softmax steps (csrc/_msdca.pyx: softmax_step); -inf at 0
        with np.errstate(divide="ignore"):
            self.logP = np.log(self.P) if self.loss == LOSS_IDS["softmax"] else np.empty((0, 0))
        # V and W (D, q) with zero padding columns (csrc/_msdca.pyx: block_width)
        if start is None:
            self.v = np.zeros((data.n_weights, _msdca.block_width(k)))
        else:
            self.v = _dual_sum(problem, self.P, self.lam_n)
            if self.order is not None:
                self.v = self.v[self.order]
        self.W = self.v if self.kappa == 0.0 \
            else np.sign(self.v) * np.maximum(np.abs(self.v) - self.kappa, 0.0)
        self.row_loss, self.row_dual, self.sums = np.zeros(n), np.empty(n), np.zeros(4)
        self.active = np.arange(n, dtype=np.int64)  # rows not shrunk (the hinge only)
        self.shrunk = np.zeros(n, dtype=np.uint8)
        # each row's active classes (the hinge only): classes[i, :n_classes[i]]
        self.classes = np.tile(np.arange(k, dtype=np.intc), (n, 1))
        self.n_classes = np.full(n, k, dtype=np.intc)
        self.epoch, self.row_visits, self.class_visits = 0, 0, 0
        self.best_W = None  # the best certified W (``certify``)
        # the sum of the W of the finishing epochs to average (``accumulate``) and their number
        self.W_sum, self.n_sum = None, 0

    def relaxation(self):
        """The over-relaxation factor omega of the steps.

        Mangasarian & Musicant (1999) solve the SVM dual by projected successive
        over-relaxation: each step moves omega in (0, 2) times the exact one.  Here
        both losses' steps solve their row's sub-problem with the curvature a / omega
        in place of a (the hinge: the projection of p_old + omega (s + 1 - e_y)/a;
        softmax: the entropic step of csrc/_msdca.pyx with a / omega).  That
        sub-problem's objective is (a/omega)-strongly concave and p_old is feasible
        for it, so the step raises it by at least (a / (2 omega)) ||p_new - p_old||^2,
        and the dual, whose quadratic term has curvature at most a, rises by at least
        a (1/omega - 1/2) ||p_new - p_old||^2: it stays feasible (p_new is on the
        simplex) and the gap certified.  Young's optimal omega = 2 / (1 + sqrt(1 - rho^2)), with
        1 - rho^2 taken as the conditioning lambda n / R^2 of SS&Z 2014's rate, is 1 for
        a well-conditioned dual (lambda n >= R^2) and tends to 2 as lambda n / R^2 -> 0,
        where plain coordinate ascent crawls (small alpha on sparse text).

        That rate is the one of a smooth loss, whose conjugate adds curvature to the
        dual (the softmax's entropy).  The hinge's dual term is linear: only the
        quadratic term curves the dual, degenerate along the rows' correlations, so its
        steps are over-relaxed by at least HINGE_MIN_OMEGA even where lambda n >= R^2.
        """
        conditioning = self.lam_n / self.R2 if self.R2 > 0.0 else 1.0  # rows of norm 0: 1
        omega = 2.0 / (1.0 + np.sqrt(min(1.0, conditioning)))
        return max(omega, HINGE_MIN_OMEGA) if self.loss == LOSS_IDS["multiclass_hinge"] \
            else omega

    def set_l2(self, lam):
        """The l2 weight the epochs use (the accelerated outer loop's inner problems)."""
        self.lam, self.lam_n = lam, lam * self.n

    def tighten_steps(self, gap):
        """Nothing to do: every step solves its row's sub-problem to machine precision (the
        accelerated outer loop calls this on every inner method with its inner gap)."""

    def unshrink(self):
        """All rows back, each with all k classes."""
        if len(self.active) < self.n:
            self.active = np.arange(self.n, dtype=np.int64)
        if self.shrinking:
            self.classes[:] = np.arange(self.k, dtype=np.intc)
            self.n_classes[:] = self.k

    def run_epoch(self, finishing=False):
        """One pass over the active rows in a fresh random order; returns (P_est, D_est).

        ``finishing``: steps of FINISH_STEP times the relaxed length (omega
        FINISH_STEP, still in (0, 2): the dual rises and stays feasible, see
        ``relaxation``).  The primal gap P(W(A)) - D(A) is the sum of the rows'
        Fenchel-Young gaps (the hinge: max_c u_c - <p_i, u>, u = s + 1 - e_y): zero
        for a row just after its exact step, first order in the change of its scores by
        the later steps of the epoch.  Over-relaxed steps overshoot, so in the tail they
        oscillate about the optimum, and shorter last steps end nearer their average,
        the output whose gap Shalev-Shwartz & Zhang (2013, Thm. 2) bound for Lipschitz
        losses; on the hinge the dual converges far ahead of P(W(A)).
        """
        if self.epoch % UNSHRINK_EVERY == 0:
            self.unshrink()
        self.epoch += 1
        order = self.rng.permutation(self.active)
        self.row_visits += len(order)
        self.class_visits += int(self.n_classes[order].sum())
        _msdca.msdca_epoch(*self.rows, self.y, self.c_arg, self.sqnorm, order, self.loss,
                           self.lam_n, self.kappa, self.P, self.logP, self.v, self.W,
                           self.row_loss,
                           self.row_dual, self.sums, self.shrunk, self.classes,
                           self.n_classes, self.shrinking,
                           self.relaxation() * (FINISH_STEP if finishing else 1.0),
                           self.parts, self.cuts)
        if not np.isfinite(self.sums).all():  # the running sums take every row's terms
            check_kernel_status(KERNEL_OVERFLOW, "msdca", self.problem,
                                f"a non-finite value with the {self.problem.loss.name} loss; "
                                "check the scale of X and alpha")
        if self.shrinking:
            self.active = self.active[self.shrunk[self.active] == 0]
        return self.estimate()

    def estimate(self):
        """(P, D) from the kernel's running sums: the loss at the visited scores (the
        formula of binary SDCA, ``_sdca.objectives_from_sums``)."""
        return _sdca.estimated_objectives(self.sums, self.n, self.lam, self.kappa)

    def _primal_sums(self, W, values):
        """The running sums' primal entries for W (epochs' layout) in one parallel pass:
        [sum c_i phi(W x_i, y_i), 0 (the dual terms' place), ||W||^2, ||W||_1] (the norms
        without a temporary of W's size; ||W||_1 only with an l1 term, the only case that
        reads it); ``values`` gets the rows' terms."""
        loss_sum = _msdca.primal_loss_sum(*self.rows, W, self.k, self.y, self.c_arg, self.loss,
                                          values, self.n_threads)
        return np.array([loss_sum, 0.0, float(np.einsum("ij,ij->", W, W)),
                         float(np.abs(W).sum()) if self.kappa else 0.0])

    def exact_sums(self):
        """(sum c_i phi(W x_i, y_i), sum of the dual terms) in one pass; ``sums`` resynced."""
        self.sums[:] = self._primal_sums(self.W, self.row_loss)
        self.sums[1] = _msdca.dual_terms(self.P, self.y, self.c_arg, self.loss, self.row_dual)
        return self.sums[0], self.sums[1]

    def exact_dual_sum(self):
        """V computed anew from the dual variables (one pass), in V's layout."""
        V = _dual_sum(self.problem, self.P, self.lam_n)
        return V if self.order is None else V[self.order]

    def certify(self, best):
        """Exact P(W_now), D(A); the best of (W_now, P(W_now)), the mean of the accumulated
        W (when there are two or more) and ``best``, kept in ``best_W`` in the epochs' layout
        (``output`` makes the Result's w of it)."""
        self.exact_sums()
        P_now, D_now = self.estimate()
        best = self._better(self.W, P_now, best)
        if self.n_sum > 1:
            mean = self.W_sum / self.n_sum
            sums = self._primal_sums(mean, np.empty(self.n))
            best = self._better(mean, _sdca.estimated_objectives(sums, self.n, self.lam,
                                                                 self.kappa)[0], best)
        return best, D_now

    def _better(self, W, P, best):
        """(W copied to ``best_W``, P) when P <= best[1], else ``best``."""
        if P > best[1]:
            return best
        if self.best_W is None:
            self.best_W = np.empty_like(self.W)
        np.copyto(self.best_W, W)
        return self.best_W, P

    def accumulate(self):
        """W into the sum of the finishing epochs' W that ``certify`` averages."""
        if self.W_sum is None:
            self.W_sum = np.zeros_like(self.W)
        self.W_sum += self.W
        self.n_sum += 1

    def clear_mean(self):
        """A new sum to average from the next ``accumulate`` on."""
        if self.n_sum:
            self.W_sum[:] = 0.0
            self.n_sum = 0

    def output(self, V):
        """V (D, q) feature-major (rows in ``order``) as the Result's class-major w (the k
        classes, features in X's order)."""
        if self.order is not None:
            ordered = np.empty((V.shape[0], self.k))
            ordered[self.order] = V[:, : self.k]
            V = ordered
        return np.ascontiguousarray(V[:, : self.k].T).ravel()

    def dual(self):
        return self.P

    def extra(self):
        return dict(dual=self.P, row_visits=self.row_visits, class_visits=self.class_visits,
                    n_active=len(self.active),
                    parts=None if self.parts is None else len(self.parts) - 1)


def solve_msdca(problem, *, tol=1e-4, abs_tol=0.0, max_iter=1000, time_limit=None,
                callback=None, verbose=0, start=None, check_every=10, random_state=None,
                n_threads=None, shrinking=True, accelerated="auto"):
    """Minimize a softmax or multiclass_hinge ``problem`` by multiclass SDCA.

    ``max_iter`` counts epochs; ``check_every``: the most epochs between two exact
    gap computations (the last one, at ``max_iter`` or once the estimated gap reached
    ``tol``, follows ``finishing_run`` finishing epochs and also certifies the mean W
    of those after the first ``AVERAGE_AFTER``; on the multiclass hinge every one
    follows one: ``_MSDCA.run_epoch``); ``n_threads``: threads of the row-split epochs
    and of the exact primal passes (None: the problem's n_threads); ``start``: a
    previous msdca Result (its ``extra["dual"]``) or dual points, or weights (a vector or
    another solver's Result) whose dual points ``_dual_from_weights`` derives;
    ``shrinking`` (multiclass hinge): drop from a row's active classes a class c with
    p_ic = 0 whose dual gradient s_c + 1 is below that of every class with p_ic' > 0
    (its step would not move it), and skip the rows left with y_i alone (at the vertex
    e_y with a margin above 1), until all rows and classes are visited again, every
    ``UNSHRINK_EVERY`` epochs and after each exact gap computation (the exact gap is
    always over all rows and classes).
    ``accelerated``: True, False or "auto": run the epochs inside the accelerated outer
    loop of Shalev-Shwartz & Zhang 2014 (fastrisk/solvers/_catalyst.py; l2 penalty
    only); "auto" (the default): for the multiclass hinge when
    alpha n / max_i c_i ||x_i||^2 is in ``_catalyst.AUTO_BAND`` and
    n_features < n_samples, never for softmax (its over-relaxed plain epochs).
    The Result then also has ``extra["kappa"]`` and ``extra["outer_iterations"]``.
    ``result.extra``: ``dual`` (the dual points p_i, (n, k)), ``dual_objective``
    (D), ``gap_estimates`` (per epoch), ``row_visits``, ``class_visits`` (the sum over
    the visited rows of their active classes), ``n_active`` (rows not shrunk), ``parts``
    (the threads of row-split epochs, None when the rows run whole on one).
    """
    spec = problem.loss.spec
    if problem.data is None or spec.name not in LOSS_IDS:
        raise ValueError(f"solver 'msdca' takes the losses {sorted(LOSS_IDS)} on data (X, y), "
                         f"got {getattr(problem.loss, 'name', problem.loss)!r}")
    check_every = check_int(check_every, "check_every", low=1)
    if not isinstance(shrinking, (bool, np.bool_)):
        raise ValueError(f"shrinking must be a bool, got {shrinking!r}")
    accelerated = check_accelerated(accelerated, problem)
    if accelerated == "auto" and spec.name == "softmax":
        # the plain over-relaxed epochs (_MSDCA.relaxation) reach 1e-3 and 1e-4 in fewer
        # epochs than the outer loop on MNIST at alpha 1e-4, the softmax case inside
        # _catalyst.AUTO_BAND (benchmarks/compare_multiclass.py)
        accelerated = False
    n_threads = solver_threads(problem, n_threads)
    rng = check_rng(random_state)
    # the operations on W run in BLAS: its pool, left to spin after a call, would take the
    # cores from the OpenMP threads (row-split epochs wait on each other at every row)
    with single_threaded_blas():
        state = _MSDCA(problem, start, n_threads, shrinking, rng)
        R2 = state.R2
        if use_acceleration(accelerated, problem, R2):
            return run_epochs(problem, "msdca", Accelerated(state, R2), tol=tol, abs_tol=abs_tol,
                              max_iter=max_iter, time_limit=time_limit, callback=callback,
                              verbose=verbose, check_every=check_every,
                              stall_rule=True)
        mon = Monitor(problem, "msdca", tol=tol, max_iter=max_iter, time_limit=time_limit,
                      callback=callback, verbose=verbose, abs_tol=abs_tol,
                      stall_rule=True)
        n, k, c = problem.n_samples, problem.n_classes, problem.sample_weight
        if start is None:
            state.row_loss[:] = (np.log(k) if state.loss == LOSS_IDS["softmax"] else 1.0) * (
                1.0 if c is None else c)
            dual_sum = _msdca.dual_terms(state.P, state.y, state.c_arg, state.loss,
                                         state.row_dual)  # 0 but for the rows of norm 0
            state.sums[:] = (state.row_loss.sum(), dual_sum, 0.0, 0.0)
            w, P_obj, D = np.zeros_like(state.W), state.sums[0] / n, dual_sum / n
        else:
            (w, P_obj), D = state.certify((None, np.inf))

        def result_w(W):
            # the Monitor reads the certified iterate only for a callback's Result: the Result's
            # layout is made then, and once at the end
            return state.output(W) if callback is not None else None

        status = mon.check(0, result_w(w), P_obj, max(P_obj - D, 0.0), keep_best=False)
        epoch, gap_estimates, next_exact = 0, [], check_every
        periodic = FINISHING[spec.name][0]
        n_last = finishing_run(spec.name, mon.max_iter)
        last_run = mon.max_iter - n_last + 1  # the first epoch of the last finishing run
        final, n_run = last_run, n_last  # the next finishing run: its first epoch, its length
        while status is None:
            epoch += 1
            # the last certified iterate comes after a finishing run (finishing_run), the
            # hinge's periodic ones after one finishing epoch (_MSDCA.run_epoch)
            finishing = (periodic and epoch >= next_exact) or epoch >= final
            P_est, D_est = state.run_epoch(finishing)
            # the run's epochs after the first AVERAGE_AFTER enter its mean, when two or more do
            if epoch >= final + AVERAGE_AFTER and n_run >= AVERAGE_AFTER + 2:
                state.accumulate()
            gap_estimates.append(P_est - D_est)
            triggered = P_est - D_est <= max(mon.tol * abs(P_est), mon.abs_tol)
            if triggered and epoch < min(next_exact, mon.max_iter) and len(state.active):
                # the estimate reached tol: the check follows a finishing run
                triggered = False
                if epoch < final:
                    n_run = finishing_run(spec.name, epoch)
                    final, next_exact = epoch + 1, epoch + n_run
            if triggered or epoch >= next_exact or epoch >= mon.max_iter or not len(state.active):
                (w, P_obj), D = state.certify((w, P_obj))
                status = mon.check(epoch, result_w(w), P_obj, max(P_obj - D, 0.0), keep_best=False)
                if epoch < last_run:  # a periodic check within the last run keeps its mean
                    state.clear_mean()
                next_exact, final, n_run = epoch + check_every, last_run, n_last
                # not converged with shrunk rows (whose terms the exact pass has just
                # refreshed): all rows back
                state.unshrink()
            else:
                # O(1): the current iterate for a callback, as the estimate is the current one's
                status = mon.check(epoch, result_w(state.W), P_est, np.nan, keep_best=False,
                                   exact=False)
                if status is not None:
                    (w, P_obj), D = state.certify((w, P_obj))
        return mon.result(status, epoch, w=state.output(w), objective=P_obj,
                          bound=max(P_obj - D, 0.0), dual_objective=D,
                          gap_estimates=np.array(gap_estimates), **state.extra())


SOLVER_INFO = SolverInfo(
    name="msdca", func=solve_msdca, accepts_penalty=has_l2_term, penalty_rule=L2_TERM_RULE,
    accepts_loss=lambda spec: spec.name in LOSS_IDS,
    loss_rule="the softmax and multiclass_hinge losses", start="dual",
    certificate="duality gap P(W) - D(A) >= J(W) - J*", threads=True)
