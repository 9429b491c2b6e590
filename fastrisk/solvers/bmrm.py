"""BMRM: the bundle method for regularized risk minimization (Teo et al. 2007, Algorithm 1; docs/math.md §4).

Teo, Le, Smola, Vishwanathan, KDD 2007.  With ``a_t = dR_emp(w_{t-1})`` and
``b_t = R_emp(w_{t-1}) - <a_t, w_{t-1}>`` the piecewise linear model
``R_t(w) = max(b_0, max_{i<=t} <a_i, w> + b_i)`` lower-bounds R_emp and
``w_t = argmin_w J_t(w) = lambda Omega(w) + R_t(w)``.  The constant cut
``b_0 = inf R_emp = -(1/m) sum_i c_i l*(0, y_i)`` is the paper's 0 for the
non-negative losses (poisson can be negative: its b_0 is its true infimum).

Inner problems, by penalty:

* ``l2``: the dual QP (12) over ``alpha >= 0, sum alpha <= 1`` with the Gram
  matrix ``A^T A`` of the cuts kept incrementally (one new row per iteration,
  see "Cut storage" below) and the
  compiled warm-started active-set solver of ``qp.py`` (csrc/_qp.pyx), started
  from the previous multipliers with 0 for the new cut;
  ``w = -A alpha / lambda`` (reading only the cuts with alpha_i > 0) and
  ``D_t(alpha)`` is the lower bound.  The QP is solved only to a duality gap
  ``J_t(w_t) - D_t(alpha) <= QP_RTOL (min_j J(w_j) - D_t(alpha))``: its
  violation bounds ``J_t(w_t) - D_t(alpha)`` (times lambda) and
  ``-lambda min_j J(w_j)`` bounds its minimum from below.  The certificate
  does not rely on this accuracy (D_t(alpha) <= J* for every feasible alpha,
  next paragraph); it keeps J_t(w_t) within 1% of the current gap of min J_t,
  so Theorem 2's per-step decrease is lost only up to about that fraction.
* ``l1``: the LP (11), solved in its dual form by one HiGHS (``highspy``) model
  that gains the new cut's column and loses the dropped cuts' columns at each
  iteration, warm-started from its previous basis (``LinearProgram``); the
  certified lower bound is the LP dual value at the HiGHS multipliers scaled
  back into the dual feasible set
  (``alpha >= 0, sum alpha <= 1, ||A alpha||_inf <= lambda``).  This is
  Kelley's cutting-plane method (no proximal term): on a9a, logistic,
  alpha = 3e-3 it needs ~600 iterations for a 2e-5 relative gap.  Without a
  proximal term the aggregation below loses what the LP needs: a vertex with
  s nonzero weights rests on s + 1 cuts, and a bundle smaller than that stalls
  (8 weights, 3 or 4 cuts: still 30% suboptimal after 20000 iterations), so
  ``max_bundle`` should exceed the expected number of nonzero weights.
* ``elasticnet`` (l1_ratio < 1) and ``lp``: the generic inner solver, the
  dual ``max_{alpha in simplex} b^T alpha - lambda Omega*(-A alpha / lambda)``
  by accelerated projected gradient (FISTA) on the simplex, with
  ``w = grad Omega*(-A alpha / lambda)`` and the gradient in alpha equal to the
  cut values ``b_i + <a_i, w>``; it stops when its own primal-dual gap is a
  quarter of ``min_j J(w_j) - D(alpha)`` (the outer gap it certifies).  Each
  inner step costs O(k n_weights).

Any feasible alpha gives a lower bound on J* (weak duality), so the
certificate never depends on how exactly the inner problem was solved:
``gamma_t = min_{j<t} J(w_j) - max_{i<=t} J_i^-`` bounds ``J(w_best) - J*``
(Lemma 1) and the run stops when ``gamma_t <= max(tol J(w_best), abs_tol)``.
In exact arithmetic the new cut lifts the model at w_t unless gamma_t = 0, so
w_{t+1} != w_t; at the precision of HiGHS's feasibility tolerances the l1 LP can
return w_t itself, whose cut the bundle already holds: the LP, solved exactly, no
longer changes and every later iterate repeats, so the run ends as "stalled".  (The
l2 QP and the generic inner solver are solved to a tolerance relative to the gap and
warm-started: a repeated w_t can move again at the next solve.)

Cut storage (``make_bundle``): a cut on data X is ``a = X^T g / m`` with one
multiplier per row, so on wide data (m << n_weights, text) it is kept as g
(``SampleCuts``): the Gram row of a new cut is ``G (X a) / m``, the combination
``sum_i beta_i a_i = X^T (G^T beta) / m``, i.e. O(nnz(X) + k m) per iteration
instead of O(k n_weights), the same numbers up to rounding.  Otherwise, and for
oracles that return only the gradient, the cuts are dense rows (``DenseCuts``).

Bounded bundle: at most ``max_bundle`` cuts are kept.  When full, the cut
that has been inactive (alpha = 0) the longest is dropped; if every cut is
active, the older half is aggregated into one cut ``sum_S alpha_i (a_i, b_i)
/ sum_S alpha_i`` carrying their total multiplier, so the previous dual
solution stays feasible with the same value: the lower bounds never
decrease and Theorem 2's argument (a line search between the aggregate and
the new cut) still applies.
"""

import math
import mmap
import os
import sys
import time

import highspy
import numpy as np

from fastrisk._qp import cut_combination, sample_combination, sample_products
from fastrisk.solvers._checks import (check_int, check_number, check_size, finite_iterate,
                                      start_weights)
from fastrisk.solvers._info import SolverInfo
from fastrisk.solvers.qp import simplex_qp
from fastrisk.stopping import Monitor

QP_RTOL = 1e-2  # QP gap allowed, relative to the current bound gap (see _inner_l2)
OVERFLOW_HALVINGS = 60  # halvings toward the best iterate of an exponential loss's step
OVERFLOW_GROWTH = 1e3  # largest R_emp - b_0 of a cut, relative to the first iterate's
CUT_MEMORY = 2 ** 28  # bytes of cut storage the default bundle bound allows
INF = highspy.kHighsInf
MATRIX_COLWISE, MAXIMIZE = int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMaximize)
_highs_banner_shown = False


def quiet_highs():
    """A silent highspy.Highs().

    HiGHS's C++ constructor writes a copyright banner to the process's stdout
    the first time one is made (``output_flag`` can only be set afterwards),
    which would land in the output of scripts and of ``fastrisk train``; that
    first construction runs with file descriptor 1 pointed at os.devnull.
    """
    global _highs_banner_shown
    if _highs_banner_shown:
        highs = highspy.Highs()
    else:
        sys.stdout.flush()
        saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            highs = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(devnull)
        _highs_banner_shown = True
    highs.setOptionValue("output_flag", False)
    return highs


def default_max_bundle(cut_length):
    """Cuts kept by default: 200, fewer when a stored cut is long (at most ~256 MB of cuts).

    ``cut_length`` is the number of floats a cut takes in its storage (``n_weights``
    for dense cuts, ``n_samples`` for sample-space cuts, see ``make_bundle``).
    """
    return int(min(200, max(10, CUT_MEMORY // (8 * cut_length))))


def risk_floor(problem):
    """b_0 = inf_w R_emp(w) >= (1/m) sum_i c_i inf_f l(f, y_i) = -(1/m) sum_i c_i l*(0, y_i).

    0 for every non-negative loss; vector losses are non-negative.  A Problem
    built by ``Problem.from_oracle`` (no data on the client) takes the
    oracle's ``risk_floor`` attribute, 0 when it has none (R_emp >= 0).
    """
    if problem.data is None:
        return check_number(getattr(problem.oracle, "risk_floor", 0.0), "oracle.risk_floor")
    if problem.loss.spec.vector:
        return 0.0
    conj = problem.loss.conjugate(np.zeros(problem.n_samples), problem.y)
    if problem.sample_weight is not None:
        conj = conj * problem.sample_weight
    return float(-conj.mean())


def cut_matrix(rows, cols):
    """Zeroed C-contiguous (rows, cols) float64 cut storage, from an anonymous mmap.

    NumPy asks the kernel for transparent huge pages on large arrays; with the
    common THP setting ``defrag=madvise`` the first write to each page may then
    compact memory synchronously, which makes the first write to a large bundle several
    times slower.  Each cut row is written once and then streamed, so ordinary pages
    cost nothing.
    """
    buffer = mmap.mmap(-1, max(rows * cols * 8, 1))
    return np.frombuffer(buffer, dtype=np.float64, count=rows * cols).reshape(rows, cols)


class DenseCuts:
    """Each cut a_i as a row of a (capacity, n_weights) matrix ``A``.

    A Gram row costs O(k n_weights) and combining the active cuts
    O(k_active n_weights): the storage for oracles that only return the
    gradient (Dask, vector losses, ``Problem.from_oracle``).
    """

    def __init__(self, capacity, n_weights):
        self.A = cut_matrix(capacity, n_weights)
        self.n_weights = n_weights

    def store(self, i, a):
        self.A[i] = a

    def gram_row(self, i, a):
        """<a_j, a> for the slots j <= i (slot i already holds a)."""
        return self.A[: i + 1] @ a

    def query_product(self, a, w):
        """<a, w> for the cut a the oracle just returned at w."""
        return float(a @ w)

    def combine(self, coef, scale, out, accumulate=False):
        """out = scale * sum_i coef_i a_i over the slots i < len(coef) (coef_i = 0 not read);
        ``accumulate``: out += that sum instead."""
        if accumulate:
            out += self._combination(coef, scale)
        else:
            cut_combination(self.A, coef, scale, out)

    def _combination(self, coef, scale):
        out = np.empty(self.n_weights)
        cut_combination(self.A, coef, scale, out)
        return out

    def products(self, w, k):
        """<a_i, w> for the slots i < k."""
        return self.A[:k] @ w

    def move(self, src, dst):
        self.A[dst] = self.A[src]

    def merge(self, keep, old, gamma, k):
        """Slot ``keep`` := sum_j gamma_j (cut in slot old_j)."""
        coef = np.zeros(k)
        coef[old] = gamma
        aggregate = np.empty(self.n_weights)
        cut_combination(self.A, coef, 1.0, aggregate)
        self.A[keep] = aggregate


class SampleCuts:
    """Each cut in the sample space: a_i = X^T g_i / m, stored as g_i (length m).

    The oracle's gradient on data X is ``X^T g / m`` with
    ``g_j = c_j l'(<w, x_j>, y_j)`` (``LocalOracle.multipliers``), so a cut needs
    m floats, not n_weights, and every product with the cuts goes through X:
    the Gram row of a new cut a is ``G (X a) / m`` (one pass over X plus O(k m)),
    the combination ``sum_i beta_i a_i = X^T (G^T beta) / m`` (O(k m) plus one
    pass over X) and the products ``A w = G (X w) / m``.  The bookkeeping of a
    step is then O(nnz(X) + n_weights + k m) instead of O(k n_weights): on wide
    data (text: m << n_weights) the oracle's own cost.
    """

    def __init__(self, capacity, problem):
        self.G = cut_matrix(capacity, problem.n_samples)
        self.last_Xa = None
        self.oracle, self.data, self.m = problem.oracle, problem.data, problem.n_samples
        self.n_weights = problem.n_weights

    def store(self, i, a):
        """Slot i := the multipliers of the oracle call that returned a."""
        self.G[i] = self.oracle.multipliers

    def times_X(self, w):
        """X w (length m)."""
        d, out = self.data, np.empty(self.m)
        sample_products(d.data, d.indices, d.indptr, d.dense, d.bias, w, out)
        return out

    def query_product(self, a, w):
        """<a, w> = <g, X w> / m from the oracle's multipliers and scores of the call at w."""
        return float(self.oracle.multipliers @ self.oracle.scores) / self.m

    def gram_row(self, i, a):
        self.last_Xa = self.times_X(a)  # X a_i, kept for the caller's products with a_i
        return (self.G[: i + 1] @ self.last_Xa) / self.m

    def combine(self, coef, scale, out, accumulate=False):
        v = (coef * (scale / self.m)) @ self.G[: len(coef)]
        d = self.data
        sample_combination(d.data, d.indices, d.indptr, d.dense, d.bias, v, out, accumulate)

    def products(self, w, k):
        return (self.G[:k] @ self.times_X(np.ascontiguousarray(w, dtype=np.float64))) / self.m

    def move(self, src, dst):
        self.G[dst] = self.G[src]

    def merge(self, keep, old, gamma, k):
        self.G[keep] = gamma @ self.G[old]


def check_floor(problem, risk, floor, solver):
    """A user oracle's risk below its declared ``risk_floor`` (0 when absent) is an error:
    the bundle's constant cut b_0 = floor would cut off R_emp, and the certified gap
    could be negative.  (The floor of a loss on data is its exact infimum.)"""
    if problem.data is None and risk < floor:
        raise ValueError(f"{solver}: the oracle returned R_emp = {risk!r}, below its "
                         f"risk_floor {floor!r} (0 when it has none); give the oracle a "
                         "risk_floor attribute that bounds R_emp from below")


def make_bundle(problem, max_bundle, floor, *, gram=True, extra=(), storage=None):
    """The bundle of ``problem``'s cuts, in the storage with the smaller bookkeeping.

    Sample-space cuts (``SampleCuts``) need an oracle that reports its
    multipliers (``LocalOracle``: a scalar loss on local data); per step they
    cost about ``2 nnz(X) + n_weights + 2 k m`` (two passes over X, one
    combination written out, the Gram row and the combination in G) against
    ``2 k n_weights`` for dense cuts, k the bundle capacity (by default set by
    the memory bound for each storage, ``default_max_bundle``).  ``storage``
    ("dense" or "samples") overrides the choice.
    """
    from fastrisk.oracle import LocalOracle

    max_bundle = check_size(max_bundle, "max_bundle", low=2, allow_none=True)
    n = problem.n_weights
    dense_k = default_max_bundle(n) if max_bundle is None else max_bundle
    if isinstance(problem.oracle, LocalOracle) and storage != "dense":
        data, m = problem.data, problem.n_samples
        sample_k = default_max_bundle(m) if max_bundle is None else max_bundle
        if storage == "samples" or 2 * data.nnz + n + 2 * sample_k * m < 2 * dense_k * n:
            return Bundle(n, sample_k, floor, gram=gram, extra=extra,
                          storage=lambda capacity: SampleCuts(capacity, problem))
    return Bundle(n, dense_k, floor, gram=gram, extra=extra)


class Bundle:
    """Cutting planes (a_i, b_i) in slots 0..k-1, slot 0 the constant cut (0, b_0).

    ``cuts`` stores the a_i (``DenseCuts``, or what ``storage(capacity)`` makes,
    e.g. ``SampleCuts``; ``A`` is the matrix of dense cuts), ``b``, the Gram
    matrix ``Q = A A^T`` (kept only when
    ``gram``), the current multipliers ``beta`` (on the simplex, slot 0 is the
    slack) and, per cut, the last iteration it was active (``mark_active``);
    a cut not active at the last solve is "inactive" and dropped first.  ``extra`` names
    further per-cut arrays that are linear in the cut (aggregated alike).
    ``add`` takes the cut right after the oracle call that produced it (sample-space
    cuts read the oracle's multipliers of that call).
    """

    def __init__(self, n_weights, max_size, floor, *, gram=True, extra=(), storage=None):
        cap = check_int(max_size, "max_bundle", low=2) + 1
        self.cuts = DenseCuts(cap, n_weights) if storage is None else storage(cap)
        self.b = np.zeros(cap)
        self.b[0] = floor
        self.Q = np.zeros((cap, cap)) if gram else None
        self.beta = np.zeros(cap)
        self.beta[0] = 1.0
        self.last_active = np.zeros(cap, dtype=np.int64)
        # serial number of each cut (a new one for an aggregate), and the last cut added
        self.serial = np.zeros(cap, dtype=np.int64)
        self.last_serial, self.last_cut = 0, None
        self.extra = {name: np.zeros(cap) for name in extra}
        self.k = 1
        self.iteration = 0
        self.n_dropped = 0
        self.n_aggregated = 0
        self.qp_solves = 0
        self.combination_seconds = 0.0

    @property
    def capacity(self):
        return len(self.b)

    @property
    def A(self):
        return self.cuts.A

    def add(self, a, b, iteration, **extra):
        """Append the cut (a, b) with multiplier 0; make room first when full."""
        if self.k == self.capacity:
            self._make_room()
        i = self.k
        self.cuts.store(i, a)
        self.b[i] = b
        if self.Q is not None:
            row = self.cuts.gram_row(i, a)
            self.Q[i, : i + 1] = row
            self.Q[: i + 1, i] = row
        self.beta[i] = 0.0
        self.last_active[i] = iteration
        self.last_serial += 1
        self.serial[i], self.last_cut = self.last_serial, a
        for name, value in extra.items():
            self.extra[name][i] = value
        self.k += 1

    def mark_active(self, iteration, *more):
        """Record that the cuts with a positive multiplier (in beta or in ``more``) are in use."""
        k = self.k
        for beta in (self.beta[:k], *more):
            self.last_active[:k][beta > 0.0] = iteration
        self.iteration = iteration

    def _move(self, src, dst):
        """Copy slot src into slot dst (used to close holes)."""
        self.cuts.move(src, dst)
        for arr in (self.b, self.beta, self.last_active, self.serial, *self.extra.values()):
            arr[dst] = arr[src]
        if self.Q is not None:
            self.Q[dst, :] = self.Q[src, :]
            self.Q[:, dst] = self.Q[:, src]
            self.Q[dst, dst] = self.Q[src, src]

    def _remove(self, slots):
        """Remove the given slots (>= 1), keeping the others packed in 0..k-1."""
        for s in sorted(slots, reverse=True):
            last = self.k - 1
            if s != last:
                self._move(last, s)
            self.k -= 1

    def _make_room(self):
        k = self.k
        cuts = np.arange(1, k)
        inactive = cuts[self.last_active[1:k] < self.iteration]
        if len(inactive):
            self._remove([inactive[np.argmin(self.last_active[inactive])]])
            self.n_dropped += 1
            return
        old = cuts[np.argsort(self.last_active[cuts], kind="stable")[: max(2, (k - 1) // 2)]]
        weight = self.beta[old].sum()
        gamma = self.beta[old] / weight if weight > 0 else np.full(len(old), 1.0 / len(old))
        keep, rest = old[0], old[1:]
        self.cuts.merge(keep, old, gamma, k)
        self.b[keep] = gamma @ self.b[old]
        for arr in self.extra.values():
            arr[keep] = gamma @ arr[old]
        if self.Q is not None:
            self_product = gamma @ self.Q[np.ix_(old, old)] @ gamma
            row = gamma @ self.Q[old, :k]
            self.Q[keep, :k] = row
            self.Q[:k, keep] = row
            self.Q[keep, keep] = self_product
        self.beta[keep] = weight
        self.last_active[keep] = self.last_active[old].max()
        self.last_serial += 1
        self.serial[keep] = self.last_serial
        self.beta[rest] = 0.0
        self._remove(list(rest))
        self.n_aggregated += 1

    def combination(self, scale=1.0, coef=None, base=None, base_scale=1.0):
        """scale * sum_i coef_i a_i over the used slots (default coef = beta; the cuts
        with coef_i = 0 are not read), plus ``base_scale * base`` when a base vector is
        given (formed in the output, without a temporary).

        Its time accumulates in ``combination_seconds`` (a pass over the active cuts:
        with Gram rows, the memory-bound part of the bookkeeping when n_weights is large).
        """
        start = time.perf_counter()
        out = np.empty(self.cuts.n_weights)
        if base is not None:
            np.multiply(base, base_scale, out=out)
        self.cuts.combine(self.beta[: self.k] if coef is None else coef, scale, out,
                          accumulate=base is not None)
        self.combination_seconds += time.perf_counter() - start
        return out

    def products(self, w):
        """<a_i, w> for the used slots."""
        return self.cuts.products(w, self.k)


# ---------------------------------------------------------------- inner solvers

def _inner_l2(bundle, lam, regularizer, best):
    """Dual QP (12): w = -A alpha / lambda, lower bound D_t(alpha) = -f(beta) / lambda.

    ``lambda`` times (12) is ``f(beta) = 0.5 beta^T Q beta - lambda b^T beta`` on the
    simplex; ``-lambda best`` bounds min f from below (D_t <= J* <= best), so the QP
    stops once its gap is at most ``QP_RTOL (best - D_t(beta))`` (see the module docstring).
    """
    k = bundle.k
    beta, info = simplex_qp(bundle.Q[:k, :k], lam * bundle.b[:k], bundle.beta[:k],
                            rtol=QP_RTOL, f_lower=-lam * best)
    bundle.beta[:k] = beta
    bundle.qp_solves += info.n_solves
    return bundle.combination(-1.0 / lam), -info.value / lam


LP_MAX_COEF = 1e15  # HiGHS's default large_matrix_value: larger entries count as infinite
LP_MIN_COEF = 1e-12  # HiGHS's smallest small_matrix_value: smaller entries are dropped


class LinearProgram:
    """LP (11) in its dual form, one HiGHS model changed in place and warm-started.

    Dual of (11) over the cuts 1..k-1 (the constant cut 0 takes the slack):
    ``max b_0 + sum_i (b_i - b_0) alpha_i`` subject to ``alpha >= 0``,
    ``sum alpha <= 1`` and ``-lambda <= A^T alpha <= lambda`` (one ranged row per
    weight).  Its size is (n + 1) rows by k - 1 columns, so the simplex basis
    stays (n + 1) x (n + 1) however many cuts there are, and a new cut is a new
    column at ``alpha_i = 0``: the previous basis stays primal feasible and a few
    primal simplex pivots restore optimality.  w is the multiplier of the ranged
    rows.  The ranged rows are divided by ``scale``, a power of two near the largest
    entry of the first cut (exact in floating point): HiGHS's tolerances and its range
    of matrix entries are absolute, and unscaled rows of X of scale 1e12 (entries near
    1e12 against bounds ``lambda``) are out of their reach; scaled, the LP of (X s,
    alpha s) is that of (X, alpha) for every s.

    The model is built once (the rows) and then only changed: at each solve the
    columns of the cuts the bundle dropped or aggregated away are deleted and
    the new cuts' columns added (the new cut's nonzeros come from the dense
    gradient just added, ``bundle.last_cut``; an aggregate is formed once).
    Columns are matched to bundle slots by the cut's serial number.  HiGHS keeps
    its basis through these changes (new columns nonbasic at 0); when a deleted
    column was basic the basis is no longer valid and HiGHS starts cold
    (``n_cold``).
    """

    def __init__(self, n_weights, lam, b0, scale=1.0):
        self.n, self.lam, self.scale = n_weights, lam, scale
        lam = lam / scale
        self.highs = quiet_highs()
        self.highs.setOptionValue("presolve", "off")
        self.highs.setOptionValue("simplex_strategy", 4)  # primal simplex
        self.highs.setOptionValue("small_matrix_value", LP_MIN_COEF)
        n = n_weights
        self.highs.passModel(
            0, n + 1, 0, MATRIX_COLWISE, MAXIMIZE, float(b0), np.zeros(0), np.zeros(0),
            np.zeros(0), np.append(np.full(n, -lam), -INF), np.append(np.full(n, lam), 1.0),
            np.zeros(1, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0),
            np.zeros(0, dtype=np.int32))
        self.serials = np.zeros(0, dtype=np.int64)  # serial number of each HiGHS column
        self.n_cold = 0

    def _column(self, bundle, slot):
        """(row indices, values) of the column of the cut in ``slot``: a_i, then 1 in row n."""
        if bundle.serial[slot] == bundle.last_serial:
            a = bundle.last_cut
        else:
            coef = np.zeros(bundle.k)
            coef[slot] = 1.0
            a = bundle.combination(1.0, coef)
        rows = np.flatnonzero(a)
        values = a[rows] / self.scale
        # entries below LP_MIN_COEF are dropped: harmless for a few (the lower bound is
        # computed from the cuts themselves), but a cut dropped whole reads as a constant
        top = np.abs(values).max(initial=0.0)
        if rows.size and not LP_MIN_COEF <= top < LP_MAX_COEF:
            raise FloatingPointError(
                f"a cut of BMRM's l1 LP has entries {top:.3g} times the first cut's largest, "
                f"outside HiGHS's range [{LP_MIN_COEF:g}, {LP_MAX_COEF:g}]: bring the rows "
                "and columns of X to similar scales")
        return np.append(rows, self.n).astype(np.int32), np.append(values, 1.0)

    def _update(self, bundle):
        """Delete the columns of the cuts gone from the bundle, add those of the new ones."""
        k, b0 = bundle.k, bundle.b[0]
        current = bundle.serial[1:k]
        gone = ~np.isin(self.serials, current)
        if gone.any():
            self.highs.deleteCols(int(gone.sum()), np.flatnonzero(gone).astype(np.int32))
            self.serials = self.serials[~gone]
        for slot in np.flatnonzero(~np.isin(current, self.serials)) + 1:
            rows, values = self._column(bundle, slot)
            self.highs.addCol(float(bundle.b[slot] - b0), 0.0, INF, len(rows), rows, values)
            self.serials = np.append(self.serials, bundle.serial[slot])

    def solve(self, bundle):
        """Solve the LP over the bundle's cuts: (w_t, certified lower bound); sets bundle.beta."""
        k, n, lam = bundle.k, self.n, self.lam
        self._update(bundle)
        if self.serials.size == 0:  # only the constant cut 0: the LP's optimum is alpha = 0
            bundle.beta[:k] = 0.0
            bundle.beta[0] = 1.0
            return np.zeros(n), float(bundle.b[0])
        warm = self.highs.getBasis().valid
        self.n_cold += not warm
        self.highs.run()
        status = self.highs.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal and warm:
            # the primal simplex can lose its way from the previous basis on a badly scaled
            # LP (HiGHS's "Unknown": rows with bounds lambda far below the cuts' entries);
            # from no basis it solves the same LP
            self.highs.clearSolver()
            self.n_cold += 1
            self.highs.run()
            status = self.highs.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError("HiGHS failed on the BMRM LP (11): "
                               + self.highs.modelStatusToString(status))
        solution = self.highs.getSolution()
        w = -np.asarray(solution.row_dual)[:n] / self.scale
        # HiGHS column j holds the cut with serial self.serials[j]: back to bundle slots
        slot_of = {s: i + 1 for i, s in enumerate(bundle.serial[1:k])}
        alpha = np.zeros(k)
        alpha[[slot_of[s] for s in self.serials]] = np.maximum(
            np.asarray(solution.col_value), 0.0)
        # Scale the HiGHS alpha into the dual feasible set (it may violate it by the
        # simplex tolerance) so that its value is a certified lower bound.
        combo = np.abs(bundle.combination(1.0, alpha)).max(initial=0.0)
        alpha /= max(1.0, alpha.sum(), float(combo) / lam)
        bundle.beta[1:k] = alpha[1:]
        bundle.beta[0] = 1.0 - alpha[1:].sum()
        return w, float(bundle.b[:k] @ bundle.beta[:k])


def _inner_l1(bundle, lam, regularizer, best):
    """LP (11) through the warm-started HiGHS model ``bundle.lp`` (see LinearProgram)."""
    if not hasattr(bundle, "lp"):
        top = float(np.abs(bundle.last_cut).max(initial=0.0))
        scale = 2.0 ** round(math.log2(top)) if 0.0 < top < math.inf else 1.0
        bundle.lp = LinearProgram(bundle.cuts.n_weights, lam, bundle.b[0], scale)
    return bundle.lp.solve(bundle)


def project_simplex(v):
    """Euclidean projection onto {x >= 0, sum x = 1} (sort-based).

    Entries of +inf (a dual step that overflowed) share the mass equally: the limit of the
    projection as those entries grow.  The result is divided by its sum: v - theta cancels
    with an error of about eps max |v|, which on huge entries (a dual step 1 / L with a
    tiny L) leaves a sum off 1 by far more than rounding, and the lower bound b^T x -
    lambda Omega*(-A x / lambda) is one only on the simplex.  When rounding leaves no
    positive entry, the largest entry takes the mass.
    """
    top = np.isposinf(v)
    if top.any():
        return top / top.sum()
    if np.isnan(v).any():
        raise FloatingPointError("the bundle's inner problem produced NaN; alpha is too large "
                                 "for the scale of the data")
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    ind = np.arange(1, len(v) + 1)
    positive = np.flatnonzero(u - css / ind > 0)
    rho = positive[-1] if positive.size else 0
    x = np.maximum(v - css[rho] / (rho + 1.0), 0.0)
    total = x.sum()
    if not total > 0.0:
        x[np.argmax(v)], total = 1.0, 1.0
    return x / total


def _inner_generic(bundle, lam, regularizer, best, max_steps=5000):
    """FISTA on the simplex dual for a strongly convex Omega with a conjugate gradient map.

    Backtracking on the step 1/L (from ``L = lambda_max(A A^T) / (lambda mu)``, mu the strong
    convexity of Omega, halved before each step and doubled until the quadratic model holds)
    and an adaptive restart when the dual value decreases.
    """
    k = bundle.k
    b = bundle.b[:k]

    def dual(beta):
        u = bundle.combination(-1.0 / lam, beta)
        w = regularizer.conjugate_grad(u)
        # lambda Omega*(u) = lambda (<u, w> - Omega(w)) at w = grad Omega*(u)
        return float(b @ beta - lam * (u @ w - regularizer.value(w))), w

    # Omega's strong convexity modulus in ||.||_2: its l2 weight, or 1 for lp (1-strongly
    # convex in ||.||_p, p <= 2, and ||w||_p >= ||w||_2)
    split = regularizer.l1_l2()
    mu = 1.0 if split is None else split[1]
    lip_max = max(float(np.linalg.eigvalsh(bundle.Q[:k, :k])[-1]) / (lam * mu), 1e-300)
    lip = getattr(bundle, "lip", lip_max)
    beta = bundle.beta[:k].copy()
    value, w = dual(beta)
    z, z_value, z_w, theta = beta, value, w, 1.0
    for _ in range(max_steps):
        primal = lam * regularizer.value(w) + float((b + bundle.products(w)).max())
        if primal - value <= max(0.25 * (best - value), 1e-13 * abs(best)):
            break
        grad = b + bundle.products(z_w)  # cut values at w(z): the gradient of the dual at z
        lip = max(lip / 2.0, 1e-12 * lip_max)
        while True:
            with np.errstate(over="ignore"):  # an overflow to +inf is handled by the projection
                new = project_simplex(z + grad / lip)
            new_value, new_w = dual(new)
            step = new - z
            if new_value >= z_value + grad @ step - 0.5 * lip * (step @ step) - 1e-15 * abs(best) \
                    or lip >= lip_max:
                break
            lip = min(2.0 * lip, lip_max)
        if new_value < value:  # restart the momentum
            z, z_value, z_w, theta = beta, value, w, 1.0
            continue
        theta_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * theta * theta))
        z = project_simplex(new + ((theta - 1.0) / theta_next) * (new - beta))
        z_value, z_w = dual(z)
        beta, value, w, theta = new, new_value, new_w, theta_next
        if z_value > value:
            beta, value, w = z, z_value, z_w
    if z_value > value:
        beta, value, w = z, z_value, z_w
    bundle.lip = lip
    bundle.beta[:k] = beta
    return w, value


def cut_point(problem, w, best_w, floor, scale):
    """(w', R_emp(w'), dR_emp(w')) at w' = w, or, for a loss that grows exponentially in
    the score (``LossSpec.exponential``) whose risk at w overflows or exceeds the floor
    b_0 by more than OVERFLOW_GROWTH times ``scale`` (that excess at the first iterate),
    at the first point of the segment from the best iterate toward w, halved from w,
    whose risk does not.

    The cutting-plane model of such a loss predicts a risk near its infimum far from the
    data (the first LP step from a warm start near the optimum, whose cut is nearly
    flat); a cut at a point where the risk is finite but huge has entries (of the order
    of R_emp - b_0 times those of X) beyond the inner solver's numerical reach.  Any point
    gives a valid cut (R_emp is convex), so the lower bounds stay certified.  By convexity
    along the segment, w' = w_best + t (w - w_best) with 0 < t < 1, the new cut's value at
    w is at least R_emp(w') + (1 - t) / t (R_emp(w') - R_emp(w_best)): above R_emp(w'),
    far above the model's value at w, wherever the halving stopped above the best
    iterate's risk, as it does from a point where the risk overflowed.
    """
    spec = getattr(problem.loss, "spec", None)
    if best_w is None or spec is None or not spec.exponential:
        return (w, *problem.oracle(w))
    for _ in range(OVERFLOW_HALVINGS):
        try:
            risk, a = problem.oracle(w)
        except FloatingPointError:
            pass
        else:
            if risk - floor <= OVERFLOW_GROWTH * scale:
                return w, risk, a
        w = best_w + 0.5 * (w - best_w)
    return (best_w, *problem.oracle(best_w))


def inner_solver(problem):
    """The inner solver for ``problem.penalty`` (see the module docstring)."""
    split = problem.regularizer.l1_l2()
    if split == (0.0, 1.0):
        return _inner_l2
    if split is not None and split[1] == 0.0:
        return _inner_l1
    return _inner_generic


def solve_bmrm(problem, *, tol=1e-4, abs_tol=0.0, max_iter=1000, time_limit=None,
               callback=None, verbose=0, random_state=None, max_bundle=None, start=None):
    """Minimize ``problem`` with BMRM (Teo et al. 2007 Algorithm 1); see the module docstring.

    tol / abs_tol: stop when ``gamma_t <= max(tol * J(w_best), abs_tol)``.
    max_bundle: cuts kept (default ``default_max_bundle``).  start: w (or a Result) to
    start from (default 0).
    random_state is accepted for the common signature; BMRM is deterministic.
    ``Result.extra``: lower_bound, bundle_size, n_dropped, n_aggregated,
    inner_seconds (inner QP/LP, including combination_seconds), gram_seconds (cut
    storage and Gram rows), combination_seconds (l2: the passes over the
    active cuts for w = -A alpha / lambda), qp_solves (face solves of the l2 QP);
    for l1 also lp_cold_starts (LP solves HiGHS started without the previous basis).
    """
    SOLVER_INFO.check(problem)
    mon = Monitor(problem, "bmrm", tol=tol, max_iter=max_iter, time_limit=time_limit,
                  callback=callback, verbose=verbose, abs_tol=abs_tol)
    lam, reg = problem.alpha, problem.regularizer
    inner = inner_solver(problem)
    l1 = inner is _inner_l1
    floor = risk_floor(problem)
    bundle = make_bundle(problem, max_bundle, floor, gram=not l1)
    w = start_weights(problem, start)
    lower, first_excess = -np.inf, None
    inner_seconds = gram_seconds = 0.0
    status, t = None, 0
    with mon.interruptible():
        while status is None:
            t += 1
            w, risk, a = cut_point(problem, finite_iterate(w, "bmrm", problem), mon.best_w,
                                   floor, first_excess)
            first_excess = risk - floor if t == 1 else first_excess
            check_floor(problem, risk, floor, "bmrm")
            objective = lam * reg.value(w) + risk
            start = time.perf_counter()
            bundle.add(a, risk - bundle.cuts.query_product(a, w), t)
            gram_seconds += time.perf_counter() - start
            start = time.perf_counter()
            w_next, lower_t = inner(bundle, lam, reg, min(mon.best_objective, objective))
            inner_seconds += time.perf_counter() - start
            bundle.mark_active(t)
            lower = max(lower, lower_t)
            # >= 0 but for rounding (lower bounds J*)
            gamma = max(min(mon.best_objective, objective) - lower, 0.0)
            status = mon.check(t, w, objective, gamma)
            if status is None and l1 and np.array_equal(w_next, w):
                status = "stalled"
            w = w_next
    if mon.interrupted:
        status = "interrupted"
    lp_stats = {"lp_cold_starts": bundle.lp.n_cold} if l1 else {}
    return mon.result(status, t, lower_bound=lower, bundle_size=bundle.k - 1,
                      n_dropped=bundle.n_dropped, n_aggregated=bundle.n_aggregated,
                      inner_seconds=inner_seconds, gram_seconds=gram_seconds,
                      combination_seconds=bundle.combination_seconds,
                      qp_solves=bundle.qp_solves, **lp_stats)


SOLVER_INFO = SolverInfo(
    "bmrm", solve_bmrm, accepts_penalty=lambda reg: True, penalty_rule="every penalty",
    accepts_loss=lambda spec: True, loss_rule="every loss", start="w",
    certificate="gamma_t = min J(w_i) - (lower bound of the bundle) (Teo et al. 2007, Lemma 1)",
    oracle_only=True)
