"""Risk oracle benchmarks (docs/math.md §3): logistic loss, value + gradient.

Compared in the same process, interleaved repeats (best and median of each):

* ``ours_1``, ``ours_2``: ``Problem(...).oracle(w)`` on 1 and 2 threads;
* ``matvecs``: scipy's ``X @ w`` plus ``X.T @ g`` (the two passes the oracle
  must make; goal: ours_1 <= 1.1 x matvecs);
* ``numpy``: the same oracle written with scipy/NumPy (goal: >= 2 x slower
  than ours_1);
* speed-up ``ours_1 / ours_2`` (goal >= 1.6).

Wall-clock ratios are noisy on a shared machine, so the 1-thread ratios are
also given in thread CPU time (``time.thread_time``), which other processes
disturb much less.

Data: the IMDB unigram+bigram tf-idf problem (``imdb_bigrams`` fixture,
25000 x 1.5M, 8.8M nnz) and the small a9a.  Both run in CI
(``--benchmark-disable``): one repetition each, a few seconds once the IMDB
cache exists (its first build, ~1-2 min, is shared with the other IMDB
benchmarks).  Print the table with ``python -m pytest benchmarks/bench_oracle.py -s``.
"""

import time

import numpy as np
import pytest

import fastrisk as fr


def numpy_oracle(X, y, w):
    """R_emp and its gradient for the logistic loss, written with scipy/NumPy."""
    f = X @ w
    z = y * f
    risk = np.mean(np.logaddexp(0.0, -z))
    g = -y * np.exp(-np.logaddexp(0.0, z))
    return risk, (X.T @ g) / len(y)


def interleaved(fns, repeats):
    """{name: array of (wall, thread cpu) seconds}, each fn timed once per round."""
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t, c = time.perf_counter(), time.thread_time()
            fn()
            times[name].append((time.perf_counter() - t, time.thread_time() - c))
    return {name: np.array(v) for name, v in times.items()}


@pytest.fixture(params=["a9a", "imdb"])
def dataset(request):
    if request.param == "imdb":
        X, y = request.getfixturevalue("imdb_bigrams")
    else:
        X, y = request.getfixturevalue("libsvm")("a9a")
    return request.param, X, y


def test_logistic_oracle(benchmark, dataset):
    name, X, y = dataset
    w = np.random.default_rng(0).normal(size=X.shape[1]) * 0.1
    ours = {t: fr.Problem(X, y, loss="logistic", n_threads=t).oracle for t in (1, 2)}
    g = np.random.default_rng(1).normal(size=X.shape[0])

    # smoke check (what CI's --benchmark-disable run verifies): same numbers as NumPy,
    # 1e-10 relative for float64 sums of up to 8.8M terms in another order
    ref_risk, ref_grad = numpy_oracle(X, y, w)
    for oracle in ours.values():
        risk, grad = oracle(w)
        assert risk == pytest.approx(ref_risk, rel=1e-10)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-8, atol=1e-12 * np.abs(ref_grad).max())

    repeats = 1 if benchmark.disabled else 15
    t = interleaved({
        "ours_1": lambda: ours[1](w),
        "ours_2": lambda: ours[2](w),
        "matvecs": lambda: (X @ w, X.T @ g),
        "numpy": lambda: numpy_oracle(X, y, w),
    }, repeats)
    best = {k: v[:, 0].min() for k, v in t.items()}
    med = {k: np.median(v[:, 0]) for k, v in t.items()}
    cpu = {k: v[:, 1].min() for k, v in t.items()}
    ratios = {
        "ours_1/matvecs (wall best)": best["ours_1"] / best["matvecs"],
        "ours_1/matvecs (wall median)": med["ours_1"] / med["matvecs"],
        "ours_1/matvecs (cpu best)": cpu["ours_1"] / cpu["matvecs"],
        "numpy/ours_1 (wall best)": best["numpy"] / best["ours_1"],
        "numpy/ours_1 (cpu best)": cpu["numpy"] / cpu["ours_1"],
        "ours_1/ours_2 (wall best)": best["ours_1"] / best["ours_2"],
        "ours_1/ours_2 (wall median)": med["ours_1"] / med["ours_2"],
    }
    print(f"\n[{name}] {X.shape[0]} x {X.shape[1]}, nnz {X.nnz}, {repeats} rounds; "
          + ", ".join(f"{k} {1e3 * best[k]:.1f}/{1e3 * med[k]:.1f} ms" for k in best))
    for k, v in ratios.items():
        print(f"  {k:30s} {v:.3f}")
    benchmark.extra_info.update({k: round(float(v), 4) for k, v in ratios.items()})
    benchmark.group = f"oracle-{name}"
    benchmark(ours[1], w)
