"""SDCA speed: ratios measured in one process, peer and ours back to back.

* epoch time (1 thread, single coordinate) vs one 1-thread oracle call, IMDB bigrams;
* time to a relative duality gap of 1e-3 (hinge) vs LIBLINEAR's dual CD
  (``LinearSVC(loss="hinge", dual=True)``) reaching the same primal objective;
* mini-batch: epochs needed vs b for safe and aggressive (Takac et al. 2013,
  Figures 1-2) and the wall-clock speedup on 2 threads vs b = 1.

Run ``pytest benchmarks/bench_sdca.py -s`` to see the tables; with
``--benchmark-disable`` (CI) every benchmark runs once on a small slice.  Every run is
checked in both modes against outside references (``_assert_run``): LIBLINEAR's objective
on the same data bounds its certificate, NumPy recomputes its objective, and its epoch
count matches its status.
"""

import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.svm import LinearSVC

import fastrisk as fr
from fastrisk import _sdca

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from reference.liblinear import liblinear_solution, objective  # noqa: E402


def _small(X, y, disabled, rows=2000):
    """The full data, or (smoke mode) a fixed random subset of rows (IMDB is sorted by label)."""
    if not disabled:
        return X, y
    keep = np.sort(np.random.default_rng(0).choice(X.shape[0], min(rows, X.shape[0]),
                                                   replace=False))
    X = X[keep]
    return X[:, np.unique(X.indices)], y[keep]


def _best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def test_epoch_vs_oracle_imdb(benchmark, imdb_bigrams):
    X, y = _small(*imdb_bigrams, benchmark.disabled)
    prob = fr.Problem(X, y, loss="hinge", alpha=1e-4, n_threads=1)
    d, n = prob.data, prob.n_samples
    sqnorm = d.row_sqnorms()
    u, v = np.zeros(n), np.zeros(d.n_weights)
    row_loss, row_dual, sums = np.zeros(n), np.zeros(n), np.zeros(4)
    index, state = np.arange(n, dtype=np.int64), np.array([0], dtype=np.uint64)
    kid = prob.loss.spec.kernel_id

    def epoch():  # the shuffle of the visiting order is part of the cost
        return _sdca.sdca_epoch(d.data, d.indices, d.indptr, d.dense, d.bias, prob.y,
                                np.empty(0), sqnorm, index, n, state, kid, 0.0, prob.alpha * n,
                                0.0, u, v, row_loss, row_dual, sums, False,
                                np.array([np.inf, -np.inf, np.nan]))

    epoch()  # leave the all-zero start: later epochs update most rows
    w = v.copy()
    repeat = 1 if benchmark.disabled else 5
    ratios = []
    for _ in range(repeat):  # interleaved, so both see the same machine load
        t_oracle = _best_of(lambda: prob.oracle(w), 1)
        t_epoch = _best_of(epoch, 1)
        ratios.append(t_epoch / t_oracle)
    benchmark.extra_info.update(ratio_median=float(np.median(ratios)), ratios=ratios)
    print(f"\nIMDB bigrams {X.shape}, nnz {X.nnz}: epoch / oracle (1 thread) = "
          f"{np.median(ratios):.2f} (runs {np.round(ratios, 2).tolist()})")
    status = benchmark.pedantic(epoch, rounds=1 if benchmark.disabled else 3)[2]
    assert status == 0
    # what the timed epochs computed: v = X^T u / (alpha n) (the primal-dual map, kept by
    # differences: 1e-9 relative covers the rounding of some 10^5 updates), ||v||^2 kept in
    # sums[2], and weak duality D(u) <= J(v) (J in NumPy)
    assert d.bias == 0.0 and v.shape == (X.shape[1],)
    v_ref = X.T @ u / (prob.alpha * n)
    np.testing.assert_allclose(v, v_ref, rtol=1e-9, atol=1e-9 * np.abs(v_ref).max())
    assert sums[2] == pytest.approx(v @ v, rel=1e-9)
    dual = sums[1] / n - 0.5 * prob.alpha * (v @ v)
    assert dual <= _hinge_objective(X, y, v, prob.alpha) * (1 + 1e-12)


def _certified_lower_bound(res):
    return res.objective - res.gap


_LIBLINEAR = {}


def _liblinear_optimum(key, X, y, alpha):
    """LIBLINEAR's hinge objective at tol 1e-9 (tests/reference/liblinear.py) on (X, y),
    cached per process under ``key`` (the tests that share a data slice share it)."""
    if key not in _LIBLINEAR:
        _LIBLINEAR[key] = liblinear_solution(X, y, "hinge", alpha)[1]
    return _LIBLINEAR[key]


def _assert_run(res, X, y, alpha, tol, max_iter, J_upper):
    """Checks of an SDCA run (hinge, no intercept, labels -1/+1) that hold at any iterate.

    * The certified lower bound J - gap is at most J_upper, the objective of LIBLINEAR's
      weights on the same data: J_upper >= J* >= every dual value (weak duality); 1e-12
      relative for the rounding of the bound.
    * The reported objective is J(res.w) computed in NumPy (1e-9 relative: summation
      order only), and it is below J(0) = 1 (no theorem for SDCA's primal iterate w(u),
      but every run starts from u = 0, and a wrong step or sign sends J above 1).
    * The stopping rule: converged with gap <= tol * J, else stopped at max_iter after
      exactly max_iter epochs (no time limit is set).
    """
    J = objective(X, y, res.w, "hinge", alpha)
    assert res.objective == pytest.approx(J, rel=1e-9)
    assert _certified_lower_bound(res) <= J_upper * (1 + 1e-12)
    assert res.objective < objective(X, y, np.zeros(X.shape[1]), "hinge", alpha) == 1.0
    if res.status == "converged":
        assert res.gap <= tol * res.objective
    else:
        assert res.status == "max_iter" and res.n_iter == max_iter


def _hinge_objective(X, y, w, alpha):
    return alpha * 0.5 * w @ w + np.maximum(0.0, 1.0 - y * (X @ w)).mean()


def _liblinear_time_to(X, y, alpha, target):
    """Seconds LinearSVC(hinge, dual) needs to reach J <= target (fewest outer iterations)."""
    C = 1.0 / (alpha * X.shape[0])

    def fit(k):
        est = LinearSVC(loss="hinge", dual=True, C=C, tol=1e-12, max_iter=k, fit_intercept=False,
                        random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            est.fit(X, y)
            t = time.perf_counter() - t
        return t, _hinge_objective(X, y, est.coef_.ravel(), alpha)

    k, lo = 1, 0
    while True:
        t, J = fit(k)
        if J <= target or k >= 1 << 16:
            break
        lo, k = k, 2 * k
    while k - lo > max(1, k // 16):  # narrow the iteration count to ~6%
        mid = (lo + k) // 2
        t_mid, J_mid = fit(mid)
        if J_mid <= target:
            k, t, J = mid, t_mid, J_mid
        else:
            lo = mid
    return min(t, fit(k)[0]), k, J


@pytest.mark.parametrize("alpha", [1e-4, 1e-6])
@pytest.mark.parametrize("name", ["a9a", "w8a", "imdb"])
def test_time_to_gap_vs_liblinear(benchmark, libsvm, imdb_bigrams, name, alpha):
    X, y = imdb_bigrams if name == "imdb" else libsvm(name)
    X, y = _small(X, y, benchmark.disabled)
    y = np.where(y == y.max(), 1.0, -1.0)
    prob = fr.Problem(X, y, loss="hinge", alpha=alpha)
    tol, max_iter = (1e-3, 10) if benchmark.disabled else (1e-3, 6000)

    def run():
        t = time.perf_counter()
        res = fr.solve(prob, solver="sdca", tol=tol, max_iter=max_iter, random_state=0,
                       n_threads=1)
        return res, time.perf_counter() - t

    res, t_sdca = benchmark.pedantic(run, rounds=1, iterations=1)
    if t_sdca < 30 and not benchmark.disabled:  # same seed, same run: keep the faster timing
        t_sdca = min(t_sdca, run()[1])
    t_ll, k, J_ll = _liblinear_time_to(X, y, alpha, res.objective)
    # LIBLINEAR reached SDCA's objective (the timing compares like with like), and its
    # objective there bounds SDCA's certificate (_assert_run)
    assert J_ll <= res.objective or k >= 1 << 16
    _assert_run(res, X, y, alpha, tol, max_iter, J_ll)
    ratio = t_sdca / t_ll
    benchmark.extra_info.update(ratio=ratio, sdca_s=t_sdca, liblinear_s=t_ll, epochs=res.n_iter,
                                liblinear_iter=k, status=res.status, gap=res.gap / res.objective)
    print(f"\n{name} alpha={alpha:g}: SDCA {t_sdca:.2f}s ({res.n_iter} epochs, {res.status}, "
          f"rel gap {res.gap / res.objective:.1e}, J={res.objective:.6g}) vs LIBLINEAR "
          f"{t_ll:.2f}s ({k} iter, J={J_ll:.6g}): ratio {ratio:.2f}")


def _assert_certificates_agree(runs):
    """Every run's certified lower bound is below every run's objective (all bound the same
    J*; 1e-12 relative for rounding)."""
    runs = list(runs)
    assert all(np.isfinite(r.objective) and r.gap >= 0 for r in runs)
    assert max(map(_certified_lower_bound, runs)) <= min(r.objective for r in runs) * (1 + 1e-12)


BATCHES = {"a9a": [1, 4, 16, 64, 256], "imdb": [1, 64, 256, 1024]}


@pytest.mark.parametrize("name", ["a9a", "imdb"])
def test_minibatch_iterations_vs_b(benchmark, libsvm, imdb_bigrams, name):
    """Takac et al. Figures 1-2: epochs (and mini-batch iterations) to a gap, vs b."""
    X, y = imdb_bigrams if name == "imdb" else libsvm(name)
    X, y = _small(X, y, benchmark.disabled)
    y = np.where(y == y.max(), 1.0, -1.0)
    prob = fr.Problem(X, y, loss="hinge", alpha=1e-4)
    tol, max_iter = (1e-2, 5) if benchmark.disabled else (1e-3, 300 if name == "a9a" else 60)
    batches = [1, 16] if benchmark.disabled else BATCHES[name]
    lines = [f"\n{name}: hinge, alpha 1e-4, exact gap every epoch, epochs to rel gap {tol:g}"]
    table, runs = {}, {}

    def sweep():
        for variant in ("safe", "naive", "aggressive"):
            for b in batches:
                if b == 1 and variant != "safe":
                    continue
                res = fr.solve(prob, solver="sdca", batch_size=b, variant=variant, tol=tol,
                               max_iter=max_iter, random_state=0, n_threads=1, shrinking=False,
                               check_every=1)
                key = f"{variant if b > 1 else 'single'} b={b}"
                beta = res.extra.get("beta_b", res.extra["beta"])
                runs[key] = res
                table[key] = dict(epochs=res.n_iter, status=res.status, beta=beta,
                                  iterations=res.n_iter * -(-prob.n_samples // b),
                                  final_gap=res.gap / res.objective)
                lines.append(f"  {key:>16}: {res.n_iter:4d} epochs ({res.status}, rel gap "
                             f"{res.gap / res.objective:.1e}), {table[key]['iterations']:8d} "
                             f"iterations, beta {beta:.2f}")

    benchmark.pedantic(sweep, rounds=1, iterations=1)
    print("\n".join(lines))
    benchmark.extra_info.update(table=table)
    _assert_certificates_agree(runs.values())
    J_ll = _liblinear_optimum((name, 1e-4), X, y, 1e-4)
    for res in runs.values():
        _assert_run(res, X, y, 1e-4, tol, max_iter, J_ll)


def test_minibatch_speedup_imdb(benchmark, imdb_bigrams):
    """Time to a relative gap of 1e-3 on 2 threads vs single-coordinate SDCA on 1 thread.

    The mini-batch kernel synchronizes its threads once per batch (twice for aggressive):
    on a machine busier than its cores a descheduled thread stalls every batch, so the
    load average is printed with the times (OMP_WAIT_POLICY=passive helps there).
    """
    X, y = _small(*imdb_bigrams, benchmark.disabled)
    y = np.where(y == y.max(), 1.0, -1.0)
    prob = fr.Problem(X, y, loss="hinge", alpha=1e-4)
    tol, max_iter = (1e-2, 5) if benchmark.disabled else (1e-3, 200)

    def timed(**kw):
        t = time.perf_counter()
        res = fr.solve(prob, solver="sdca", tol=tol, max_iter=max_iter, random_state=0, **kw)
        return time.perf_counter() - t, res

    base, ref = timed(n_threads=1)
    lines = [(f"\nIMDB hinge alpha 1e-4 to rel gap {tol:g}: single b=1, 1 thread {base:.2f}s "
              f"({ref.n_iter} epochs)")]
    table, runs = {"single": base}, [ref]

    def sweep():
        for variant in ("safe", "aggressive"):
            for b in ([16] if benchmark.disabled else [256, 1024]):
                t1, res1 = timed(batch_size=b, variant=variant, n_threads=1)
                t2, res = timed(batch_size=b, variant=variant, n_threads=2)
                runs.extend([res1, res])
                table[f"{variant} b={b}"] = dict(t1=t1, t2=t2, epochs=res.n_iter)
                lines.append(f"  {variant:>10} b={b:5d}: {res.n_iter:3d} epochs, 1 thread "
                             f"{t1:.2f}s, 2 threads {t2:.2f}s: speedup vs b=1 {base / t2:.2f}, "
                             f"threads {t1 / t2:.2f} (load average {os.getloadavg()[0]:.1f})")
                print(lines[-1] if len(lines) > 2 else "\n".join(lines), flush=True)

    benchmark.pedantic(sweep, rounds=1, iterations=1)
    benchmark.extra_info.update(table=table)
    _assert_certificates_agree(runs)
    J_ll = _liblinear_optimum(("imdb", 1e-4), X, y, 1e-4)
    for res in runs:
        _assert_run(res, X, y, 1e-4, tol, max_iter, J_ll)
