"""Stochastic dual coordinate ascent, single-coordinate and mini-batch (MATH.md 7).

Shalev-Shwartz & Zhang (2013) for the single-coordinate method with the
proximal form for the elastic net; Takac, Bijral, Richtarik & Srebro,
"Mini-batch primal and dual methods for SVMs", ICML 2013 (seed 002) for the
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
loss at the scores it visited, a cheap estimate of the primal P(w).  When that estimated gap says ``tol`` is reached (also every
max(10, epoch/4) epochs, every ``gap_every`` epochs, and at the end), one
more parallel pass computes the exact P(w) and the certified duality gap
P(w) - D(u) >= J(w) - J*, which the Monitor stops on; w is the best primal
iterate of the exact checks (any dual-feasible u certifies it).  Epochs
without that pass are logged with the estimated objective and a NaN bound;
their estimated gaps are in ``extra``.  The estimate costs O(1) per epoch:
the kernels keep the sums of the per-row loss and dual terms and ||w||^2,
||w||_1 up to date, and shuffle the visiting order themselves.

Shrinking (Hsieh et al. 2008, as in LIBLINEAR) skips rows whose dual is at a
bound of its box and pushed outward; it is what makes single-coordinate SDCA
competitive with LIBLINEAR on hinge-type losses (a9a/w8a hinge at 1e-5: 12-14x
fewer seconds than without it).  Shrunk rows are swapped behind the active
ones in the kernel's index array (no Python work per epoch beyond O(1)).

Mini-batch epochs run in one OpenMP region: each thread owns blocks of
coordinates, computes the batch's partial scores on them, and after one
barrier per batch (two for aggressive) every thread forms the same deltas and
updates its own blocks (see ``_sdca.sdca_minibatch_epoch``).
"""

import numpy as np

from fastrisk import _sdca
from fastrisk.config import resolve_n_threads
from fastrisk.regularizers import L2, ElasticNet
from fastrisk.stopping import Monitor

VARIANTS = ("naive", "safe", "aggressive")
# nonzeros per thread below which a parallel region costs more than it saves (a region
# costs microseconds, far more when the cores are shared): exact pass, mini-batch update
PASS_GRAIN, BATCH_GRAIN = 50_000, 4_000
AGGRESSIVE_OMEGA = 0.25  # weight of rho in the geometric decrease of beta


def _penalty_split(problem):
    """(lambda, kappa) with alpha Omega(w) = lambda (0.5 ||w||^2 + kappa ||w||_1)."""
    reg = problem.regularizer
    if isinstance(reg, L2):
        return problem.alpha, 0.0
    if isinstance(reg, ElasticNet) and reg.l1_ratio < 1.0:
        r = reg.l1_ratio
        return problem.alpha * (1.0 - r), r / (1.0 - r)
    raise ValueError("solver 'sdca' needs a strongly convex penalty: penalty='l2' or "
                     f"'elasticnet' with l1_ratio < 1, got {problem.penalty!r}")


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
    """Coordinate ranges [b_t, b_{t+1}) with about equal nonzeros, one per thread."""
    D = data.n_weights
    if n_threads == 1:
        return np.array([0, D], dtype=np.int64)
    if data.dense:
        counts = np.ones(D)
    else:
        counts = np.bincount(data.indices, minlength=data.n_features).astype(np.float64)
        if data.bias:
            counts = np.append(counts, data.n_samples)
    cum = np.cumsum(counts)
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, n_threads) / n_threads, side="right")
    return np.concatenate([[0], cuts, [D]]).astype(np.int64)


def _check_int(value, name, low):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _initial_dual(problem, warm_start, lam_n):
    """(u, v) from zeros or a previous dual vector (result.extra['alpha'])."""
    data, n = problem.data, problem.n_samples
    if warm_start is None:
        return np.zeros(n), np.zeros(data.n_weights)
    u = np.array(warm_start, dtype=np.float64)
    if u.shape != (n,):
        raise ValueError(f"warm_start has shape {u.shape}, expected ({n},)")
    if not np.isfinite(problem.loss.conjugate(-u, problem.y)).all():
        raise ValueError(f"warm_start is not dual feasible for the {problem.loss.name} loss")
    cu = u if problem.sample_weight is None else u * problem.sample_weight
    v = np.empty(data.n_weights)
    v[: data.n_features] = data.X.T @ cu
    if data.bias:
        v[-1] = data.bias * cu.sum()
    return u, v / lam_n


def solve_sdca(problem, *, tol=1e-4, max_iter=1000, time_limit=None, callback=None, verbose=0,
               random_state=None, batch_size=1, variant="safe", n_threads=None,
               warm_start=None, gap_every=0, shrinking=True):
    """Minimize ``problem`` by SDCA; returns a Result (MATH.md 7, seed 002).

    Parameters beyond the common ones (``max_iter`` counts epochs):
    batch_size: rows per mini-batch (1 = single-coordinate SDCA).
    variant: "naive", "safe" or "aggressive" mini-batch step (ignored for b = 1).
    n_threads: threads for mini-batch deltas and the exact primal pass (None = all cores).
    warm_start: dual vector of a previous run (``result.extra["alpha"]``), e.g.
        along a regularization path; any dual-feasible vector of length n_samples.
    gap_every: also compute the exact duality gap every k epochs (0: only when
        the running estimate says converged, every max(10, epoch / 4) epochs,
        and at the end).
    shrinking: skip rows whose dual sits at a bound of its box and is pushed
        outward (LIBLINEAR's rule; b = 1 and box-constrained duals only: hinge,
        squared/smoothed hinge, absolute, epsilon-insensitive); all rows come
        back when the active rows' projected-gradient range is below a
        threshold (0.1 of the first epoch's range, divided by 10 each time)
        and when the estimated gap says converged but the exact one does not.

    ``result.extra``: ``alpha`` (dual variables u, with w = soft(v, kappa),
    v = (1/(lambda n)) sum c_i u_i x_i; for binary losses y_i u_i is the
    paper's alpha_i), ``dual`` (D(u)), ``gap_estimates`` (per epoch),
    ``beta`` (final step factor), ``spectral_norm_sq`` and ``beta_b`` (safe), ``n_undone``
    (aggressive), ``batch_size``, ``variant``, ``row_visits`` (rows read by the
    epochs), ``n_active`` (rows not shrunk at the end).
    """
    spec = problem.loss.spec
    if spec.vector or not _sdca.has_dual_step(spec.kernel_id):
        raise ValueError(f"solver 'sdca' has no dual step for the {problem.loss.name!r} loss; "
                         "supported: hinge, squared_hinge, smoothed_hinge, logistic, squared, "
                         "absolute, epsilon_insensitive")
    lam, kappa = _penalty_split(problem)
    batch_size = _check_int(batch_size, "batch_size", 1)
    gap_every = _check_int(gap_every, "gap_every", 0)
    if not isinstance(shrinking, (bool, np.bool_)):
        raise ValueError(f"shrinking must be a bool, got {shrinking!r}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    n_threads = resolve_n_threads(n_threads)
    data = problem.data
    # threads only where each gets enough work: the exact pass reads nnz entries, a
    # mini-batch about nnz b / n
    pass_threads = max(1, min(n_threads, data.nnz // PASS_GRAIN))
    batch_threads = max(1, min(n_threads, data.nnz * batch_size // (data.n_samples * BATCH_GRAIN)))
    mon = Monitor(problem, "sdca", tol=tol, max_iter=max_iter, time_limit=time_limit,
                  callback=callback, verbose=verbose)
    rng = np.random.default_rng(random_state)

    n, y = problem.n_samples, problem.y
    c = problem.sample_weight
    c_arg = np.empty(0) if c is None else c
    lam_n = lam * n
    rows = (data.data, data.indices, data.indptr, data.dense, data.bias)
    sqnorm = _sdca.row_sqnorms(*rows[:4], data.bias, np.empty(n))
    u, v = _initial_dual(problem, warm_start, lam_n)
    kid, p = spec.kernel_id, problem.loss.param
    b = min(batch_size, n)

    extra = {"batch_size": b, "variant": variant if b > 1 else "single"}
    beta, gamma = 1.0, 0.0
    if b > 1:
        col_bounds = _column_bounds(data, batch_threads)
        if variant == "safe":
            L = spectral_norm_sq(data, c)
            theta = (b - 1) / (n - 1)
            beta, gamma = 1.0 - theta, theta * L
            # the paper's beta_b, for rows scaled to max ||c_i x_i|| = 1 (reported only)
            R2 = float(np.max(sqnorm if c is None else c * c * sqnorm))
            extra.update(spectral_norm_sq=L, beta_b=1.0 + theta * (L / R2 - 1.0))
        extra["n_undone"] = 0
        workspace = _minibatch_workspace(data, b, len(col_bounds) - 1, variant == "aggressive")

    def weights():
        return v.copy() if kappa == 0.0 else np.sign(v) * np.maximum(np.abs(v) - kappa, 0.0)

    shrinking = shrinking and b == 1 and _sdca.has_dual_box(kid)
    # per-row terms at the last visit, and sums = [sum row_loss, sum row_dual, ||w||^2,
    # ||w||_1] kept current by the kernels: the estimated gap costs O(1) per epoch
    row_loss, row_dual = np.zeros(n), np.empty(n)
    sums = np.zeros(4)
    index = np.arange(n, dtype=np.int64)  # active rows first (shrinking)
    n_active = n
    order_state = np.array([rng.integers(2**63)], dtype=np.uint64)  # the kernels' shuffle
    pg_max_old, pg_min_old = np.inf, -np.inf
    pg_eps = None  # unshrink when the active rows' projected-gradient range falls below it

    def resync(w):
        """Exact sums (drift of the running differences) and the exact P(w), D(u)."""
        total, status = _sdca.primal_loss_sum(*rows, w, y, c_arg, kid, p, row_loss, pass_threads)
        _raise_on(status, problem)
        sums[:] = (total, _sdca.dual_terms(y, c_arg, u, kid, p, row_dual), float(w @ w),
                   float(np.abs(w).sum()))
        P = total / n + problem.alpha * problem.regularizer.value(w)
        D = sums[1] / n - 0.5 * lam * sums[2]
        return P, D

    def certify(best):
        """Exact check: (w, P) the best primal iterate so far, and D(u) now.

        P(w_best) - D(u) >= J(w_best) - J* for any dual-feasible u (weak duality), so the
        certificate may pair the best checked primal point with the current dual: with a
        nonsmooth loss P(w(u)) oscillates while D(u) climbs (hinge at small alpha).
        """
        w_now = weights()
        P_now, D_now = resync(w_now)
        return ((w_now, P_now) if P_now <= best[1] else best), D_now

    gap_estimates, row_visits = [], 0
    # no exact pass at the start: the first epoch visits every row and sets its terms
    status, epoch, w, P = None, 0, weights(), np.inf
    sums[:] = (0.0, _sdca.dual_terms(y, c_arg, u, kid, p, row_dual), float(w @ w),
               float(np.abs(w).sum()))
    D = sums[1] / n - 0.5 * lam * sums[2]
    # exact checks: when the estimate says converged, at least 10% more epochs after the last
    # one; and unconditionally every max(10, 25%) epochs (the estimate can stay pessimistic)
    next_exact, next_forced = 1, 10
    while status is None:
        epoch += 1
        row_visits += n_active
        if b == 1:
            n_active, pg_max, pg_min, st = _sdca.sdca_epoch(
                *rows, y, c_arg, sqnorm, index, n_active, order_state, kid, p, lam_n, kappa,
                u, v, row_loss, row_dual, sums, shrinking, pg_max_old, pg_min_old)
            if shrinking:
                pg_eps = 0.1 * (pg_max - pg_min) if pg_eps is None else pg_eps
                if pg_max - pg_min <= pg_eps and n_active < n:
                    # the shrunk problem is solved to pg_eps (LIBLINEAR): all rows back
                    n_active, pg_max_old, pg_min_old = n, np.inf, -np.inf
                    pg_eps *= 0.1
                else:
                    pg_max_old = pg_max if pg_max > 0 else np.inf
                    pg_min_old = pg_min if pg_min < 0 else -np.inf
        else:
            beta_new, undone, st = _sdca.sdca_minibatch_epoch(
                *rows, y, c_arg, sqnorm, index, order_state, b, kid, p, lam_n, kappa, u, v,
                sums, beta, gamma, variant == "aggressive", AGGRESSIVE_OMEGA, col_bounds,
                *workspace, batch_threads)
            if variant == "aggressive":
                beta = beta_new
                extra["n_undone"] += undone
        _raise_on(st, problem)
        P_est = sums[0] / n + lam * (0.5 * sums[2] + kappa * sums[3])
        D_est = sums[1] / n - 0.5 * lam * sums[2]
        gap_estimates.append(P_est - D_est)
        triggered = P_est - D_est <= mon.tol * abs(P_est) and epoch >= next_exact
        exact = (triggered or epoch >= next_forced or epoch >= mon.max_iter
                 or (gap_every and epoch % gap_every == 0))
        if exact:
            (w, P), D = certify((w, P))
            status = mon.check(epoch, w, P, max(P - D, 0.0), keep_best=False)
            next_exact = epoch + 1 + epoch // 10
            next_forced = epoch + max(10, epoch // 4)
            if triggered and n_active < n:
                # the estimate said converged but the certificate did not: all rows back
                n_active, pg_max_old, pg_min_old = n, np.inf, -np.inf
        else:
            # O(1) per epoch: the Monitor gets the best checked iterate (the current one,
            # copied, only for a callback)
            status = mon.check(epoch, weights() if callback is not None else w, P_est, np.nan,
                               keep_best=False)
            if status is not None:
                (w, P), D = certify((w, P))
    extra.update(alpha=u, dual=D, gap_estimates=np.array(gap_estimates), beta=beta,
                 n_active=n_active, row_visits=row_visits)
    return mon.result(status, epoch, w=w, objective=P, bound=max(P - D, 0.0), **extra)


def _minibatch_workspace(data, b, n_blocks, aggressive):
    """(seen, touched, old) for the aggressive variant's undo, else empty arrays."""
    if not aggressive:
        return np.zeros(0, np.uint8), np.zeros((0, 0), np.int64), np.zeros((0, 0))
    # a batch touches at most the nonzeros of its b longest rows, plus the bias
    lengths = np.diff(data.indptr)
    cap = int(np.partition(lengths, len(lengths) - b)[-b:].sum()) + 1
    return (np.zeros(data.n_weights, np.uint8), np.empty((n_blocks, cap), np.int64),
            np.empty((n_blocks, cap)))


def _raise_on(status, problem):
    if status == _sdca.STATUS_OK:
        return
    if status == _sdca.STATUS_BAD_LOSS:
        raise ValueError(f"no SDCA kernel for the {problem.loss.name!r} loss")
    raise FloatingPointError(f"SDCA produced a non-finite value with the {problem.loss.name} "
                             "loss; check the scale of X and alpha")
