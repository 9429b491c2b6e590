"""Stochastic dual coordinate ascent, single-coordinate and mini-batch (docs/math.md §7).

Shalev-Shwartz & Zhang (2013) for the single-coordinate method with the
proximal form for the elastic net; Takac, Bijral, Richtarik & Srebro,
"Mini-batch primal and dual methods for SVMs", ICML 2013, for the
mini-batch variants:

* naive: every delta of a batch is the single-coordinate step (beta = 1);
  it can cycle (two identical points) or diverge;
* safe: the interaction term is bounded in expectation by a separable
  surrogate from the spectral norm L = ||diag(c) X||_2^2 (power iteration),
  beta_b = 1 + (b - 1)(n sigma^2 - 1)/(n - 1) with n sigma^2 = L for unit
  rows; with rows of any norm the per-row curvature becomes
  ((1 - theta) ||c_i x_i||^2 + theta L) / (c_i lambda n), theta = (b-1)/(n-1),
  which is the same bound and reduces to beta_b for unit rows;
* aggressive: beta adapted from the measured interaction of each batch,
  batches that lower the dual are undone (no spectral norm needed).

The problem ``J(w) = alpha Omega(w) + (1/n) sum c_i l(<w, x_i>, y_i)`` is
written as ``lambda g(w) + risk`` with ``g = 0.5 ||w||^2 + kappa ||w||_1``
(l2: lambda = alpha, kappa = 0; elastic net with ratio r < 1:
lambda = alpha (1 - r), kappa = r / (1 - r)); then
``w = soft(v, kappa)``, ``v = (1/(lambda n)) sum c_i u_i x_i`` and
``D(u) = (1/n) sum c_i (-l*(-u_i)) - lambda 0.5 ||w||^2``.

Each epoch (one random permutation, shuffled in the kernel by a splitmix64
stream seeded from ``random_state``) the kernel updates the dual sum and the
loss at the scores it visited, a cheap estimate of the primal P(w).  When
that estimated gap says ``tol`` is reached (also every max(10, epoch/4)
epochs, at the epoch where the linear rate between the last two certified
gaps predicts ``tol``, every ``check_every`` epochs, and at the end), one
more parallel pass computes the exact P(w) and the certified duality gap
P(w) - D(u) >= J(w) - J*, which the run stops on; w is the best primal iterate
of the exact checks (any dual-feasible u certifies it).  Epochs without that pass are logged in the
history with the estimated objective, ``exact=False`` and a NaN bound; their
estimated gaps are in ``extra``.  The estimate costs O(1) per epoch:
the kernels keep the sums of the per-row loss and dual terms and ||w||^2,
||w||_1 up to date, and shuffle the visiting order themselves.

The logistic, exponential and Poisson losses have no closed-form step: their 1-D Newton
solves stop at a tolerance (Yu, Huang & Lin 2011, Algorithm 3, for the logistic) tied to
the duality gap, from the gap of the start, then each epoch's estimate and each exact
check (STEP_TOL_GAP below); any tolerance keeps the dual point feasible, so the
certificate is the same.

Shrinking (Hsieh et al. 2008, as in LIBLINEAR) skips rows whose dual is at a
bound of its box and pushed outward; it is what makes single-coordinate SDCA
competitive with LIBLINEAR on hinge-type losses.  Shrunk rows are swapped behind the active
ones in the kernel's index array (no Python work per epoch beyond O(1)).

With ``blocks`` > 1 (the default on several threads for smooth losses on large data,
``cocoa_blocks``) an epoch is a round of CoCoA+ (Ma, Smith, Jaggi, Jordan, Richtarik &
Takac 2015; adding, gamma = 1, sigma' = K): the rows, in a seeded order, form K fixed
blocks; each thread runs the single-coordinate method above over its block on the local
subproblem (scores and curvature with sigma'), on a private copy of w, and the blocks' w
increments are then added in block order (``_sdca.sdca_cocoa_round``), so the bits depend
on K, not on the threads.  The local objectives bound the dual from below, so D(u) rises
every round and the exact checks certify as before.

Mini-batch epochs run in one OpenMP region: each thread owns blocks of
coordinates, computes the batch's partial scores on them, and after one
barrier per batch (two for aggressive) every thread forms the same deltas and
updates its own blocks (see ``_sdca.sdca_minibatch_epoch``).

Single-coordinate epochs on several threads split each row the same way (on long
rows, ``split_parts``): every thread visits the same rows in the same order,
owns a range of coordinates, and the threads sum each row's partial scores through
one cache line each instead of a barrier (``_sdca.sdca_epoch`` with ``parts``); every
thread then takes the same step, the same shrinking decision, and updates its own
coordinates.  The iterates are those of the one-thread epoch up to the rounding of
a score summed in parts; the bits depend on the ranges, which depend on the thread
count.
"""

import numpy as np

from fastrisk import _sdca
from fastrisk.config import single_threaded_blas, solver_threads
from fastrisk.regularizers import L2_TERM_RULE, has_l2_term, scaled_weights, soft_threshold
from fastrisk.solvers._catalyst import (PROBE_BAND, Accelerated, Probe, check_accelerated, pays,
                                        radius_sq, use_acceleration)
from fastrisk.solvers._checks import (check_bool, check_choice, check_int, check_rng,
                                      check_size, start_weights)
from fastrisk.solvers._epochs import check_kernel_status, run_epochs
from fastrisk.solvers._info import SolverInfo
from fastrisk.stopping import check_budget

VARIANTS = ("naive", "safe", "aggressive")
# nonzeros per thread below which a parallel region costs more than it saves (a region
# costs microseconds, far more when the cores are shared): exact pass, mini-batch update
PASS_GRAIN, BATCH_GRAIN = 50_000, 4_000
# row-split epochs (see split_parts): stored entries per row per part (times the weights
# per feature), at least; the sample and the granularity of the coordinate ranges
# (_column_bounds)
SPLIT_GRAIN = 128
BOUND_SAMPLE, BOUND_BUCKET = 2**18, 64
# CoCoA+ (see cocoa_blocks): nonzeros per row block below which it does not pay, the
# least alpha n / R^2 where it does (losses without, with a box-constrained dual), and the
# most weights (a block's private copy of w, 2 MiB: about one core's L2 cache)
COCOA_GRAIN, COCOA_CONDITION, COCOA_MAX_WEIGHTS = 500_000, (1.0, 2.0), 2**18
AGGRESSIVE_OMEGA = 0.25  # weight of rho in the geometric decrease of beta
# The logistic, exponential and Poisson steps are inexact (csrc/fr_sdca.h; Yu, Huang & Lin
# 2011, Algorithm 3): at the tolerance eps a row's coordinate dual falls short of its maximum
# by at most (c_i / n) eps^2 / 4 (logistic: |t - t*| <= eps in t = logit(y u), so |h'| <= eps
# and |s - s*| <= eps / 4; exponential and Poisson: the step stops at that bound), an
# epoch's dual by mean(c) eps^2 / 4.  eps = sqrt(STEP_TOL_GAP gap / mean(c)), from the gap of
# the start (exact) and then the estimated gap of each epoch (never increased), keeps the
# shortfall below STEP_TOL_GAP / 4 of the gap.
STEP_TOL_GAP = 0.04


def penalty_split(problem):
    """(lambda, kappa) with alpha Omega(w) = lambda (0.5 ||w||^2 + kappa ||w||_1); the
    penalties the solver takes (SOLVER_INFO: has_l2_term) all have this form."""
    return scaled_weights(problem.regularizer, problem.alpha)


def _weighted_rows_matvec(data, c):
    """x -> Z^T Z x for Z = diag(c) [X, bias 1]."""
    X, bias, d = data.X, data.bias, data.n_features

    def apply(x):
        z = X @ x[:d]
        if bias:
            z = z + bias * x[d]
        if c is not None:
            z = z * (c * c)
        out = np.empty_like(x)
        out[:d] = X.T @ z
        if bias:
            out[d] = bias * z.sum()
        return out

    return apply


def spectral_norm_sq(data, sample_weight=None, *, rtol=1e-4, max_iter=100):
    """Estimate L = ||diag(c) X||_2^2 (bias feature included) by power iteration.

    Deterministic start (its own seed), stops when the Rayleigh quotient changes
    by less than ``rtol`` (relative).  A lower estimate of L, accurate to about
    rtol for data with a separated top singular value.
    """
    apply = _weighted_rows_matvec(data, sample_weight)
    x = np.random.default_rng(0).standard_normal(data.n_weights)
    x /= np.linalg.norm(x)
    L = 0.0
    for _ in range(max_iter):
        z = apply(x)
        L_new = float(x @ z)
        norm = np.linalg.norm(z)
        if norm == 0.0:
            return 0.0
        x = z / norm
        if abs(L_new - L) <= rtol * L_new:
            return L_new
        L = L_new
    return L


def _column_bounds(data, n_threads):
    """Coordinate ranges [b_t, b_{t+1}) with about equal nonzeros, one per thread.

    The cuts fall on multiples of BOUND_BUCKET coordinates, placed from the counts of
    every k-th stored entry of X (at most BOUND_SAMPLE of them): a count of every entry
    would cost a pass over all the indices and a cumulative sum over every coordinate,
    as much as an epoch on wide data, and the balance is no better for it."""
    D = data.n_weights
    if n_threads == 1:
        return np.array([0, D], dtype=np.int64)
    if data.dense:
        cuts = (np.arange(1, n_threads) * D) // n_threads
    else:
        stride = max(1, data.nnz // BOUND_SAMPLE)
        buckets = -(-D // BOUND_BUCKET)
        counts = np.bincount(data.indices[::stride] // BOUND_BUCKET,
                             minlength=buckets).astype(np.float64)
        if data.bias:
            counts[-1] += data.n_samples / stride
        cum = np.cumsum(counts)
        cuts = BOUND_BUCKET * (1 + np.searchsorted(
            cum, cum[-1] * np.arange(1, n_threads) / n_threads))
    return np.concatenate([[0], np.minimum(cuts, D), [D]]).astype(np.int64)


def split_parts(data, n_threads, width=1):
    """The coordinate ranges of row-split epochs (``_sdca.sdca_epoch``'s and
    ``_msdca.msdca_epoch``'s ``parts``) and each row's entries per part
    (``_sdca.row_cuts``), or (None, None) for whole rows on one thread:
    min(n_threads, width nnz(X) / (n SPLIT_GRAIN)) parts, ``width`` the weights per
    feature (the classes of a multiclass model).

    A row-split epoch sums every row's scores across the cores, a cache-line round trip
    per row; each part then reads and updates only its share of the row.  The round
    trip pays where a row costs several times as much: long rows, sparse ones whose
    weights miss the caches (IMDB bigrams) or dense ones of several hundred features,
    and rows of many classes; on shorter binary rows (20 Newsgroups, Reuters) whole rows
    on one thread run as fast or faster (benchmarks/compare_threads.py times the epoch
    both ways)."""
    parts = min(n_threads, int(width * data.nnz / (data.n_samples * SPLIT_GRAIN)))
    if parts < 2:
        return None, None
    bounds = _column_bounds(data, parts)
    return bounds, _sdca.row_cuts(data.indices, data.indptr, data.dense, bounds)


def cocoa_blocks(problem, n_threads, batch_size, R2):
    """Row blocks of CoCoA+ for ``blocks=None``, the one size rule: min(n_threads,
    nnz // COCOA_GRAIN) with n_threads > 1, single-coordinate steps, the l2 penalty, a
    smooth loss, at most COCOA_MAX_WEIGHTS weights and alpha n / R^2 (R^2 = max_i c_i
    ||x_i||^2) at least COCOA_CONDITION[0], or [1] for a loss with a box-constrained dual
    (squared hinge); else 1 (the sequential epoch).

    From benchmarks/bench_cocoa.py (2 blocks on 2 threads against sequential epochs on
    1, certified 1e-3, alpha 1e-4; its report has the times): on 20 Newsgroups (130k
    weights, alpha n / R^2 = 1.1) logistic needs 3 rounds for 4 epochs and finishes
    first on 2 threads, squared hinge 6 rounds for 4 epochs; on IMDB bigrams (1.5M
    weights, 2.5) logistic needs 3 rounds for 3 epochs and squared hinge 5 for 4, but
    two threads writing into two 12 MB copies of w run their first rounds at about half
    speed, and the sequential epochs finish first.  At alpha 1e-6 and on the hinge loss
    rounds need 2.5 to 15 times as many passes as sequential epochs."""
    if (n_threads < 2 or batch_size > 1 or not problem.loss.spec.smooth
            or penalty_split(problem)[1] != 0.0 or problem.n_weights > COCOA_MAX_WEIGHTS):
        return 1
    ratio = problem.alpha * problem.n_samples / R2 if R2 > 0.0 else np.inf
    if ratio < COCOA_CONDITION[problem.loss.spec.dual_box]:
        return 1
    return max(1, min(n_threads, problem.n_samples, problem.data.nnz // COCOA_GRAIN))


def _dual_from_weights(problem, w):
    """u_i = -l'(<w, x_i>, y_i): a dual-feasible point (-u_i is a subgradient of the loss, so
    l*(-u_i) is finite) that is optimal when w is (the primal-dual link of docs/math.md §7)."""
    _, deriv = problem.loss.values(problem.data.decision(w), problem.y)
    return -deriv


def _initial_dual(problem, start, lam_n):
    """(u, v) from ``start``: zeros; the dual of a previous SDCA Result when it fits this
    problem (length n_samples and dual feasible); otherwise the dual derived from a weight
    vector (a Result's w or an array), so a warm start never makes a valid fit fail."""
    data, n = problem.data, problem.n_samples
    if start is None:
        return np.zeros(n), np.zeros(data.n_weights)
    dual = getattr(start, "extra", {}).get("dual") if getattr(start, "solver", None) == "sdca" \
        else None
    u = None
    if isinstance(dual, np.ndarray) and dual.shape == (n,):
        u = np.array(dual, dtype=np.float64)
        if not np.isfinite(problem.loss.conjugate(-u, problem.y)).all():
            u = None  # labels or rows changed: the previous dual is not feasible here
    if u is None:
        u = _dual_from_weights(problem, start_weights(problem, start))
    return u, _dual_sum(problem, u, lam_n)


def _dual_sum(problem, u, lam_n):
    """v = (1/(lambda n)) sum_i c_i u_i x_i, computed anew from u (one pass over X)."""
    data = problem.data
    cu = u if problem.sample_weight is None else u * problem.sample_weight
    v = np.empty(data.n_weights)
    v[: data.n_features] = data.X.T @ cu
    if data.bias:
        v[-1] = data.bias * cu.sum()
    return v / lam_n


class _SDCA:
    """SDCA's state and per-epoch step for the epoch driver (fastrisk/solvers/_epochs.py).

    The kernels keep per-row loss and dual terms and ``sums = [sum row_loss, sum row_dual,
    ||w||^2, ||w||_1]`` current, so the estimated gap costs O(1) per epoch; exact checks
    (one parallel pass) resynchronise the sums and certify.
    """

    def __init__(self, problem, *, batch_size, variant, n_threads, start, shrinking, seed,
                 blocks=1):
        spec, data, n = problem.loss.spec, problem.data, problem.n_samples
        self.problem, self.n, self.variant = problem, n, variant
        self.lam, self.kappa = penalty_split(problem)
        self.lam_n = self.lam * n
        # threads only where each gets enough work: the exact pass reads nnz entries, a
        # mini-batch about nnz b / n
        self.pass_threads = max(1, min(n_threads, data.nnz // PASS_GRAIN))
        batch_threads = max(1, min(n_threads, data.nnz * batch_size // (n * BATCH_GRAIN)))
        self.c_arg = np.empty(0) if problem.sample_weight is None else problem.sample_weight
        self.rows = (data.data, data.indices, data.indptr, data.dense, data.bias)
        self.sqnorm = data.row_sqnorms()
        self.u, self.v = _initial_dual(problem, start, self.lam_n)
        self.kid, self.p = spec.kernel_id, problem.loss.param
        self.b = b = min(batch_size, n)
        self.info = {"batch_size": b, "variant": variant if b > 1 else "single"}
        self.beta, self.gamma = 1.0, 0.0
        if b > 1:
            self._setup_minibatch(data, batch_threads)
        self.shrinking = shrinking and b == 1 and spec.dual_box
        self.row_loss, self.row_dual, self.sums = np.zeros(n), np.empty(n), np.zeros(4)
        self.index = np.arange(n, dtype=np.int64)  # active rows first (shrinking)
        self.n_active = n
        self.order_state = np.array([seed], dtype=np.uint64)  # the kernels' shuffle
        self.R2 = radius_sq(self.sqnorm, problem.sample_weight)
        if blocks is None:
            blocks = cocoa_blocks(problem, n_threads, b, self.R2)
        self.blocks = min(blocks, n)
        if self.blocks > 1:
            self._setup_cocoa(data, seed, n_threads)
        # row-split epochs: single-coordinate steps outside CoCoA+ (split_parts)
        self.parts, self.cuts = split_parts(data, n_threads) \
            if b == 1 and self.blocks == 1 else (None, None)
        if self.parts is not None:
            self.info.update(parts=len(self.parts) - 1)
        # shrinking's pg_max_old, pg_min_old and the projected-gradient range below which
        # all rows come back (NaN: set by the first pass); _sdca.shrinking_passes
        self.pg = np.array([np.inf, -np.inf, np.nan])
        self.gap_estimates, self.row_visits, self.epoch = [], 0, 0
        # no exact pass at the start (but a warm start of an inexact step, _start_gap):
        # the first epoch visits every row and sets its terms
        w = self.weights()
        self.sums[:] = (0.0, self._dual_terms(), float(w @ w),
                        float(np.abs(w).sum()) if self.kappa else 0.0)
        self.best, self.D = (w, np.inf), self._estimated_objectives()[1]
        c = problem.sample_weight
        self.mean_c, self.step_tol = (1.0 if c is None else float(np.mean(c))), 0.0
        self.certified = []  # (epoch, certified gap, P) of the start (when known), each check
        inexact = _sdca.has_inexact_step(self.kid)  # the other steps ignore step_tol
        if start is None or inexact:
            gap = self._start_gap(start)
            if inexact and np.isfinite(gap) and gap > 0.0 and self.mean_c > 0.0:
                self.step_tol = float(np.sqrt(STEP_TOL_GAP * gap / self.mean_c))
        # exact checks: when the estimate says converged, at least 10% more epochs after
        # the last one; every max(10, 25%) epochs (the estimate can stay pessimistic); and
        # at the epoch the last two certified gaps predict (_predicted_epochs), a check
        # that leaves the other two schedules as they are
        self.next_exact, self.next_forced, self.triggered = 1, 10, False
        self.next_predicted, self.predicted_only = np.inf, False
        self.target = (0.0, 0.0)  # (tol, abs_tol) of the driver's last estimate call

    def _start_gap(self, start):
        """P(w) - D(u) at the start (recorded for the check schedule): in closed form at
        u = 0, w = 0 (every score is 0), else from one exact pass (which also sets the
        per-row loss terms)."""
        problem, n = self.problem, self.n
        if start is None:
            loss0, _ = problem.loss.values(np.zeros(n), problem.y)
            c = problem.sample_weight
            P = float(np.sum(loss0 if c is None else c * loss0)) / n
        else:
            P, self.D = self._resync(self.weights())
        self.certified.append((0, P - self.D, P))
        return P - self.D

    def tighten_steps(self, gap):
        """The inexact steps' tolerance lowered to match a gap (see STEP_TOL_GAP); an estimate
        that is not positive (it is not a bound) leaves it as it is."""
        if np.isfinite(gap) and gap > 0.0 and self.mean_c > 0.0:
            self.step_tol = min(self.step_tol, float(np.sqrt(STEP_TOL_GAP * gap / self.mean_c)))

    def _setup_minibatch(self, data, batch_threads):
        c, b, n = self.problem.sample_weight, self.b, self.n
        self.col_bounds = _column_bounds(data, batch_threads)
        self.batch_threads = batch_threads
        if self.variant == "safe":
            L = spectral_norm_sq(data, c)
            theta = (b - 1) / (n - 1)
            self.beta, self.gamma = 1.0 - theta, theta * L
            # the paper's beta_b, for rows scaled to max ||c_i x_i|| = 1 (reported only)
            R2 = float(np.max(self.sqnorm if c is None else c * c * self.sqnorm))
            self.info.update(spectral_norm_sq=L, beta_b=1.0 + theta * (L / R2 - 1.0))
        self.info["n_undone"] = 0
        self.workspace = _minibatch_workspace(data, b, len(self.col_bounds) - 1,
                                              self.variant == "aggressive")

    def _setup_cocoa(self, data, seed, n_threads):
        """CoCoA+ (Ma et al. 2015): the rows, in a seeded random order, cut into K blocks of
        about equal nonzeros (none empty), one shuffle state per block, and the blocks'
        private rows w + sigma' dw_k (sigma' = K, the paper's safe choice for gamma = 1),
        which after each round all hold w: v becomes the first of them (K copies of w in
        all, not K + 1)."""
        K, n = self.blocks, self.n
        rng = np.random.default_rng(seed)
        self.index = rng.permutation(n).astype(np.int64)
        self.order_state = rng.integers(2**63, size=K, dtype=np.uint64)
        cum = np.cumsum(np.diff(data.indptr)[self.index] if not data.dense else np.ones(n))
        bounds = np.concatenate([[0], np.searchsorted(cum, cum[-1] * np.arange(1, K) / K,
                                                      side="right"), [n]]).astype(np.int64)
        for k in range(1, K):  # every block holds at least one row
            bounds[k] = min(max(bounds[k], bounds[k - 1] + 1), n - (K - k))
        self.block_bounds, self.block_active = bounds, np.diff(bounds)
        # per block: the shrinking state of self.pg
        self.block_pg = np.tile([np.inf, -np.inf, np.nan], (K, 1))
        self.cocoa_threads = min(n_threads, K)
        self.local = np.empty((K, len(self.v)))
        self.local[:] = self.v
        self.v = self.local[0]
        self.info.update(variant="cocoa+", blocks=K)

    def _dual_terms(self):
        return _sdca.dual_terms(self.problem.y, self.c_arg, self.u, self.kid, self.p,
                                self.row_dual)

    def _dual_terms_sum(self):
        """sum_i c_i (-l*(-u_i)): single-coordinate epochs (CoCoA+'s too) store each visited
        row's term in ``row_dual`` with its new u_i (the logistic's from the root t of its
        step, H(sigma(t)), fr_sdca.h), so their sum is current without a pass of the
        conjugate (two logarithms a row for the logistic); mini-batch epochs keep only the
        running sum, and the terms are recomputed."""
        return float(self.row_dual.sum()) if self.b == 1 else self._dual_terms()

    def weights(self):
        return self.v.copy() if self.kappa == 0.0 else soft_threshold(self.v, self.kappa)

    def unshrink(self):
        self.n_active, self.pg[:2] = self.n, (np.inf, -np.inf)
        if self.blocks > 1:
            self.block_active = np.diff(self.block_bounds)
            self.block_pg[:, :2] = np.inf, -np.inf

    def set_l2(self, lam):
        """The l2 weight the epochs use (fastrisk/solvers/_catalyst.py's inner problems).

        The accelerated outer loop moves v between epochs, which CoCoA+'s private rows
        (copies of w) would not see: its epochs are single-coordinate."""
        self.lam, self.lam_n = lam, lam * self.n
        if self.blocks > 1:
            self.unshrink()
            self.blocks, self.v, self.local = 1, self.v.copy(), None
            self.order_state = self.order_state[:1].copy()

    def exact_sums(self):
        """(sum c_i l(<v, x_i>), sum of the dual terms) in one pass; ``sums`` resynchronised."""
        self._resync(self.v)
        return self.sums[0], self.sums[1]

    def exact_dual_sum(self):
        """(1/(lambda n)) sum_i c_i u_i x_i from u (one pass), not from the running v."""
        return _dual_sum(self.problem, self.u, self.lam_n)

    def output(self, v):
        return v.copy()

    def dual(self):
        return self.u

    def run_epoch(self):
        self.epoch += 1
        if self.blocks > 1:
            self._cocoa_epoch()
        elif self.b == 1:
            self._single_epoch()
        else:
            self.row_visits += self.n
            self._minibatch_epoch()
        return False

    def _single_epoch(self):
        """Passes of single-coordinate SDCA over the active rows, each followed by
        LIBLINEAR's shrinking bookkeeping, until they add up to n row visits, all rows
        come back, or the estimated gap reaches the driver's last target
        (``_sdca.shrinking_passes``): an epoch is one pass over all rows, or several over
        a shrunk set (a pass over a few active rows costs less than the driver's work
        between epochs)."""
        self.n_active, visits, status = _sdca.sdca_epoch(
            *self.rows, self.problem.y, self.c_arg, self.sqnorm, self.index, self.n_active,
            self.order_state, self.kid, self.p, self.lam_n, self.kappa, self.u, self.v,
            self.row_loss, self.row_dual, self.sums, self.shrinking, self.pg, *self.target,
            self.step_tol, self.parts, self.cuts)
        self._check_status(status)
        self.row_visits += visits

    def _cocoa_epoch(self):
        """One CoCoA+ round: every block runs SDCA passes over its active rows (n / K row
        visits, shrinking per block as in ``_single_epoch``) on its local subproblem, then
        the merge (``_sdca.sdca_cocoa_round``)."""
        visits, status = _sdca.sdca_cocoa_round(
            *self.rows, self.problem.y, self.c_arg, self.sqnorm, self.index,
            self.block_bounds, self.block_active, self.order_state, self.block_pg, self.kid,
            self.p, self.lam_n, self.u, self.local, self.row_loss, self.row_dual, self.sums,
            self.shrinking, self.step_tol, self.cocoa_threads)
        self._check_status(status)
        self.row_visits += visits
        self.n_active = int(self.block_active.sum())

    def _minibatch_epoch(self):
        aggressive = self.variant == "aggressive"
        beta_new, undone, status = _sdca.sdca_minibatch_epoch(
            *self.rows, self.problem.y, self.c_arg, self.sqnorm, self.index, self.order_state,
            self.b, self.kid, self.p, self.lam_n, self.kappa, self.u, self.v, self.sums,
            self.beta, self.gamma, aggressive, AGGRESSIVE_OMEGA, self.col_bounds,
            *self.workspace, self.batch_threads, self.step_tol)
        self._check_status(status)
        if aggressive:
            self.beta = beta_new
            self.info["n_undone"] += undone

    def _check_status(self, status):
        check_kernel_status(status, "sdca", self.problem,
                            f"a non-finite value with the {self.problem.loss.name} loss; "
                            "check the scale of X and alpha")

    def _estimated_objectives(self):
        """(P(w), D(u)) from the running sums, in O(1) (the formula the epochs' own stop
        reads, ``_sdca.objectives_from_sums``; exact right after ``_resync``)."""
        return _sdca.estimated_objectives(self.sums, self.n, self.lam, self.kappa)

    def estimate(self, tol, abs_tol):
        """(estimated P(w), whether to check exactly now) from the running sums."""
        P_est, D_est = self._estimated_objectives()
        gap = P_est - D_est
        self.gap_estimates.append(gap)
        self.tighten_steps(gap)
        self.target = (tol, abs_tol)
        self.triggered = gap <= max(tol * abs(P_est), abs_tol) and self.epoch >= self.next_exact
        scheduled = self.triggered or self.epoch >= self.next_forced
        self.predicted_only = not scheduled and self.epoch >= self.next_predicted
        return P_est, scheduled or self.predicted_only

    def _resync(self, w):
        """Exact sums (drift of the running differences) and the exact P(w), D(u)."""
        problem, n = self.problem, self.n
        total, status = _sdca.primal_loss_sum(*self.rows, w, problem.y, self.c_arg, self.kid,
                                              self.p, self.row_loss, self.pass_threads)
        self._check_status(status)
        # ||w||_1 enters the estimate only with kappa > 0 (no temporary array for l2)
        self.sums[:] = (total, self._dual_terms_sum(), float(w @ w),
                        float(np.abs(w).sum()) if self.kappa else 0.0)
        P = total / n + problem.alpha * problem.regularizer.value(w)
        return P, self._estimated_objectives()[1]

    def certify(self):
        """(w, P(w), P(w) - D(u)) for the best primal iterate of the exact checks.

        P(w_best) - D(u) >= J(w_best) - J* for any dual-feasible u (weak duality), so the
        certificate may pair the best checked primal point with the current dual: with a
        nonsmooth loss P(w(u)) oscillates while D(u) climbs (hinge at small alpha).
        """
        w_now = self.v if self.kappa == 0.0 else soft_threshold(self.v, self.kappa)
        P_now, self.D = self._resync(w_now)
        self.tighten_steps(P_now - self.D)
        if P_now <= self.best[1]:
            # the previous best dropped before the copy: one copy of w at a time
            self.best = (None, P_now)
            self.best = (w_now.copy() if w_now is self.v else w_now, P_now)
        w, P = self.best
        self.certified.append((self.epoch, max(P - self.D, 0.0), P))
        return w, P, max(P - self.D, 0.0)

    def _predicted_epochs(self):
        """Epochs until the certified gap meets the target, from the linear rate between
        the last two certified gaps, r = (g_1 / g_0)^(1 / (e_1 - e_0)) (SDCA's gap
        contracts linearly for smooth losses, SS&Z 2013 Theorem 1); inf without a rate."""
        if len(self.certified) < 2:
            return np.inf
        (e0, g0, _), (e1, g1, P) = self.certified[-2:]
        target = max(self.target[0] * abs(P), self.target[1])
        if not (g0 > 0.0 and g1 > target > 0.0 and e1 > e0):
            return np.inf
        rate = (g1 / g0) ** (1.0 / (e1 - e0))
        return max(1, int(np.ceil(np.log(target / g1) / np.log(rate)))) if rate < 1.0 else np.inf

    def checked(self, epoch):
        # a check is cheaper than an epoch: the predicted epoch is checked, not waited past
        self.next_predicted = epoch + self._predicted_epochs()
        if self.predicted_only:
            return
        self.next_exact = epoch + 1 + epoch // 10
        self.next_forced = epoch + max(10, epoch // 4)
        if self.triggered and self.n_active < self.n:
            # the estimate said converged but the certificate did not: all rows back
            self.unshrink()

    def extra(self):
        return dict(self.info, dual=self.u, dual_objective=self.D,
                    gap_estimates=np.array(self.gap_estimates), beta=self.beta,
                    n_active=self.n_active, row_visits=self.row_visits, step_tol=self.step_tol)


def solve_sdca(problem, *, tol=1e-4, abs_tol=0.0, max_iter=1000, time_limit=None,
               callback=None, verbose=0, random_state=None, batch_size=1, variant="safe",
               n_threads=None, start=None, check_every=0, shrinking=True, accelerated="auto",
               blocks=None):
    """Minimize ``problem`` by SDCA; returns a Result (docs/math.md §7; Shalev-Shwartz &
    Zhang 2013; Takac et al. 2013).

    Parameters beyond the common ones (``max_iter`` counts epochs: a pass over all rows,
    or with shrinking the passes over the active rows that add up to n row visits):
    batch_size: rows per mini-batch (1 = single-coordinate SDCA).
    variant: "naive", "safe" or "aggressive" mini-batch step (ignored for b = 1).
    n_threads: threads for mini-batch deltas, row-split epochs (``split_parts``) and the
        exact primal pass (None = the problem's n_threads).
    start: a previous Result (e.g. along a regularization path): its dual variables
        ``extra["dual"]`` when they fit this problem, else the dual derived from its w;
        or a weight vector w (dual u_i = -l'(<w, x_i>, y_i)).
    check_every: also compute the exact duality gap every k epochs (0: only when
        the running estimate says converged, every max(10, epoch / 4) epochs,
        at the epoch the last two certified gaps predict, and at the end).
    shrinking: skip rows whose dual sits at a bound of its box and is pushed
        outward (LIBLINEAR's rule; b = 1 and box-constrained duals only: hinge,
        squared/smoothed hinge, Huber, absolute, quantile, epsilon-insensitive); all rows come
        back when the active rows' projected-gradient range is below a
        threshold (0.1 of the first epoch's range, divided by 10 each time)
        and when the estimated gap says converged but the exact one does not.
    blocks: None or an int k >= 1: single-coordinate SDCA as CoCoA+ rounds (Ma et al.
        2015, adding with sigma' = k) over k fixed row blocks, one thread per block up to
        ``n_threads``, the blocks' w increments added in a fixed order (the bits depend on k,
        not on the threads); l2 penalty, batch_size 1; k copies of w.  1: the sequential
        epoch; None: ``cocoa_blocks`` (the size rule).  An epoch is then one round.
    accelerated: True, False or "auto": run the epochs inside the accelerated outer
        loop of Shalev-Shwartz & Zhang 2014 (fastrisk/solvers/_catalyst.py; l2 penalty
        only); "auto" (the default), with n_features < n_samples: for a smooth loss where
        alpha n / max_i c_i ||x_i||^2 is in ``_catalyst.PROBE_BAND``, after
        ``_catalyst.PROBE_EPOCHS`` plain epochs when their estimated gap contracts slowly
        and shrinking left most rows active (``_catalyst.accelerate_after_probe``; the
        observed rate in ``extra["probe_rate"]``); for a nonsmooth loss where that ratio
        is in ``_catalyst.AUTO_BAND``.
        The Result then also has ``extra["kappa"]`` and ``extra["outer_iterations"]``.

    ``result.extra``: ``dual`` (dual variables u, with w = soft(v, kappa),
    v = (1/(lambda n)) sum c_i u_i x_i; for binary losses y_i u_i is the
    paper's alpha_i), ``dual_objective`` (D(u)), ``gap_estimates`` (per epoch),
    ``beta`` (final step factor), ``spectral_norm_sq`` and ``beta_b`` (safe), ``n_undone``
    (aggressive), ``batch_size``, ``variant`` ("cocoa+" with ``blocks``: K),
    ``parts`` (the threads of row-split epochs, when they run), ``row_visits`` (rows read
    by the epochs), ``n_active`` (rows not shrunk at the end), ``step_tol`` (the final
    tolerance eps of the inexact steps of the logistic, exponential and Poisson losses:
    each leaves its coordinate's dual within c_i eps^2 / (4 n) of the maximum; 0 for the
    closed-form steps).
    """
    SOLVER_INFO.check(problem)
    check_budget(tol, max_iter, time_limit)
    batch_size = check_size(batch_size, "batch_size")
    shrinking = check_bool(shrinking, "shrinking")
    variant = check_choice(variant, "variant", VARIANTS)
    accelerated = check_accelerated(accelerated, problem)
    n_threads = solver_threads(problem, n_threads)
    blocks = check_int(blocks, "blocks", low=1, allow_none=True)
    if blocks is not None and blocks > 1 and batch_size > 1:
        raise ValueError(f"blocks={blocks} (CoCoA+) needs batch_size=1, got {batch_size}")
    if blocks is not None and blocks > 1 and penalty_split(problem)[1] != 0.0:
        raise ValueError(f"blocks={blocks} (CoCoA+) needs the l2 penalty (an elastic net "
                         "with l1_ratio 0); use blocks=1")
    rng = check_rng(random_state)
    # the vector operations of length n_weights run in BLAS: its pool, left to spin after
    # a call, would take the cores from the OpenMP threads (row-split epochs wait on
    # each other at every row)
    with single_threaded_blas():
        method = _SDCA(problem, batch_size=batch_size, variant=variant, n_threads=n_threads,
                       start=start, shrinking=shrinking, seed=rng.integers(2**63),
                       blocks=blocks)
        R2 = method.R2
        if accelerated == "auto" and problem.loss.spec.smooth:
            method = Probe(method, R2) if pays(problem, R2, PROBE_BAND) else method
        elif use_acceleration(accelerated, problem, R2):
            method = Accelerated(method, R2)
        return run_epochs(problem, "sdca", method, tol=tol, abs_tol=abs_tol,
                          max_iter=max_iter, time_limit=time_limit, callback=callback,
                          verbose=verbose, check_every=check_every,
                          stall_rule=True)


def _minibatch_workspace(data, b, n_blocks, aggressive):
    """(seen, touched, old) for the aggressive variant's undo, else empty arrays."""
    if not aggressive:
        return np.zeros(0, np.uint8), np.zeros((0, 0), np.int64), np.zeros((0, 0))
    # a batch touches at most the nonzeros of its b longest rows, plus the bias
    lengths = np.diff(data.indptr)
    cap = int(np.partition(lengths, len(lengths) - b)[-b:].sum()) + 1
    return (np.zeros(data.n_weights, np.uint8), np.empty((n_blocks, cap), np.int64),
            np.empty((n_blocks, cap)))


SOLVER_INFO = SolverInfo(
    "sdca", solve_sdca, accepts_penalty=has_l2_term, penalty_rule=L2_TERM_RULE,
    accepts_loss=lambda spec: spec.dual_step, loss_rule="losses with an SDCA dual step",
    start="dual", epochs=True,
    certificate="duality gap P(w) - D(u)")
