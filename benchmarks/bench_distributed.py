"""Dask risk oracle: time per call against workers, T(n) = s + t/n (BMRM Figure 6).

IMDB unigram+bigram tf-idf (25000 x 1.5M, hinge loss).  For n = 1, 2
single-threaded workers (one partition each) the oracle call time T(n) is
split into compute (the slowest partition's kernel time, measured on the
worker) and the rest: broadcasting w (12 MB), gathering the partial
gradients (12 MB each), scheduling and the client's sum.  From T(1) and
T(2), t = 2 (T(1) - T(2)) is the parallelizable part and s = T(1) - t the
serial one.  The in-process LocalOracle (1 thread) is the baseline.

Run ``python -m pytest benchmarks/bench_distributed.py -s`` for the table;
with ``--benchmark-disable`` (CI smoke test) it uses every 12th row and 2
workers only, and checks that the Dask and local oracles agree bit for bit.
"""

import statistics
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import fastrisk as fr
from fastrisk.distributed import DaskOracle


def timed_calls(oracle, w, repeats):
    walls, computes = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        oracle(w)
        walls.append(time.perf_counter() - start)
        if isinstance(oracle, DaskOracle):
            computes.append(max(oracle.last_timing[1]))
    return statistics.median(walls), (statistics.median(computes) if computes else None)


def test_dask_oracle_scaling(benchmark, imdb_bigrams):
    X, y = imdb_bigrams
    smoke = benchmark.disabled
    if smoke:
        X, y = X[::12], y[::12]  # both classes (the file is sorted by label)
    repeats = 1 if smoke else 5
    w = np.random.default_rng(0).normal(size=X.shape[1]) * 0.01
    local = fr.Problem(X, y, loss="hinge", n_threads=1).oracle
    T_local, _ = timed_calls(local, w, repeats)
    rows = {}
    for n in ((2,) if smoke else (1, 2)):
        with distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                      dashboard_address=None, silence_logs=40) as cluster, \
                distributed.Client(cluster) as client:
            oracle = DaskOracle.from_array(client, X, y, loss="hinge", n_partitions=n)
            value, grad = oracle(w)
            v_ref, g_ref = oracle.local_equivalent(X, y)(w)
            assert value == v_ref and np.array_equal(grad, g_ref)
            wall, compute = timed_calls(oracle, w, repeats)
            rows[n] = (wall, compute, 1.0 - compute / wall)
            if n == 2:
                benchmark.pedantic(oracle, args=(w,), rounds=repeats, iterations=1)
            oracle.close()
    if smoke:
        return
    t = 2 * (rows[1][0] - rows[2][0])
    s = rows[1][0] - t
    benchmark.extra_info.update(T_local=T_local, T1=rows[1][0], T2=rows[2][0], s=s, t=t,
                                comm_share_1=rows[1][2], comm_share_2=rows[2][2])
    print(f"\nlocal oracle (1 thread): {T_local * 1e3:.1f} ms")
    for n, (wall, compute, share) in rows.items():
        print(f"n={n}: T={wall * 1e3:.1f} ms  compute={compute * 1e3:.1f} ms  "
              f"communication/scheduling share={share:.0%}")
    print(f"T(n) = s + t/n: s={s * 1e3:.1f} ms, t={t * 1e3:.1f} ms")
