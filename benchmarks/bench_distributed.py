"""Dask risk oracle: time per call against workers, T(n) = s + t/n (BMRM Figure 6).

IMDB unigram+bigram tf-idf (25000 x 1.5M, hinge loss, w ~ N(0, 0.01^2)).
Two clusters live side by side (1 and 2 single-threaded worker processes,
``LocalCluster(processes=True)``), each with 1 or 2 partitions per worker,
and every round calls the in-process LocalOracle (1 thread) and each Dask
oracle back to back, so a busy machine slows them alike; the table gives
medians over the rounds and the load average.  For each Dask oracle:
T (wall per call), compute (the kernel seconds of the busiest worker, its
partitions run one after another), the communication share 1 - compute / T
(passing w and the partial gradients, the actor calls and the client's
sums), the megabytes sent over the network per call and the extra
CPU: the CPU seconds of the client (with the scheduler) and the workers
minus those of the local call in the same round, the same kernel work
(the cost of the communication, less sensitive to the load than T).  With one
partition per worker, T(n) = s + t/n through T(1) and T(2) gives
t = 2 (T(1) - T(2)) and s = T(1) - t.

Workers of a LocalCluster share the client's host, so the calls pass w and
the gradients through shared memory (``DaskOracle.transport``);
benchmarks/bench_scale.py compares that with the network transport.

Run ``python -m pytest benchmarks/bench_distributed.py -s`` for the table;
with ``--benchmark-disable`` (CI smoke test) it uses every 12th row, one
round and the 2-worker cluster, and checks that the Dask and local oracles
agree bit for bit.

The summary of issue 17's target (the standard invocation, about a minute on a
quiet 2-core machine): ``PYTHONPATH=. python benchmarks/bench_distributed.py
[rounds]`` writes ``benchmarks/results/bench_distributed.md``: T(1), T(2) and
the local oracle (1 and 2 single-thread workers, one partition each, through
shared memory and over the network, interleaved rounds, medians, default 15
rounds), their ratios, and the bytes each call moves: over the network, and
through shared memory (the client writes w, each worker writes its full-width
partial gradient, the client reads them).
"""

import contextlib
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")  # a dependency of distributed

import fastrisk as fr
from fastrisk.distributed import DaskOracle


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_seconds(processes):
    return sum(sum(p.cpu_times()[:2]) for p in processes)


def call(oracle, w, processes):
    """(wall seconds, kernel seconds of the busiest worker, CPU seconds of this process
    (client, scheduler) and the workers) of one call."""
    cpu = cpu_seconds(processes)
    start = time.perf_counter()
    oracle(w)
    wall = time.perf_counter() - start
    cpu = cpu_seconds(processes) - cpu
    if not isinstance(oracle, DaskOracle):
        return wall, np.nan, cpu
    _, computes, pids = oracle.last_timing
    return wall, max(sum(c for c, p in zip(computes, pids) if p == pid) for pid in set(pids)), cpu


def test_dask_oracle_scaling(benchmark, imdb_bigrams):
    X, y = imdb_bigrams
    smoke = benchmark.disabled
    if smoke:
        X, y = X[::12], y[::12]  # both classes (the file is sorted by label)
    rounds = 1 if smoke else 15
    w = np.random.default_rng(0).normal(size=X.shape[1]) * 0.01
    local = fr.Problem(X, y, loss="hinge", n_threads=1).oracle
    workers = (2,) if smoke else (1, 2)
    per_worker = (1,) if smoke else (1, 2)
    with contextlib.ExitStack() as stack:
        oracles = {}
        for n in workers:
            cluster = stack.enter_context(distributed.LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                silence_logs=40))
            client = stack.enter_context(distributed.Client(cluster, set_as_default=False))
            for p in per_worker:
                oracle = DaskOracle.from_array(client, X, y, loss="hinge", n_partitions=n * p)
                value, grad = oracle(w)
                v_ref, g_ref = oracle.local_equivalent(X, y)(w)
                assert value == v_ref and np.array_equal(grad.view(np.uint64),
                                                         g_ref.view(np.uint64))
                oracles[n, p] = oracle
        processes = [psutil.Process()] + [psutil.Process(pid) for pid in
                                          {pid for o in oracles.values() for pid in o.last_timing[2]}]
        load_before = load()
        times = {key: [] for key in ["local", *oracles]}
        for _ in range(rounds):
            times["local"].append(call(local, w, processes))
            for key, oracle in oracles.items():
                times[key].append(call(oracle, w, processes))
        benchmark.pedantic(oracles[2, 1], args=(w,), rounds=rounds, iterations=1)
        if smoke:
            return
        load_after = load()
        megabytes = {key: 1e-6 * o.last_bytes for key, o in oracles.items()}
    local_wall, _, local_cpu = np.array(times["local"]).T
    T_local = np.median(local_wall)
    rows = {}
    for key in oracles:
        wall, compute, cpu = np.array(times[key]).T
        rows[key] = (np.median(wall), np.median(compute), np.median(1 - compute / wall),
                     np.median(wall / local_wall), np.median(cpu - local_cpu))
    fit = {}
    for p in per_worker:
        t = 2 * (rows[1, p][0] - rows[2, p][0])
        fit[p] = (rows[1, p][0] - t, t)
    benchmark.extra_info.update(T_local=T_local, load=[load_before, load_after],
                                **{f"T{n}_p{p}": r[0] for (n, p), r in rows.items()},
                                **{f"comm_share{n}_p{p}": r[2] for (n, p), r in rows.items()},
                                s=fit[1][0], t=fit[1][1])
    print(f"\nload average before / after: {load_before} / {load_after}; {rounds} rounds")
    print(f"local oracle (1 thread, same process): {T_local * 1e3:.1f} ms")
    for (n, p), (wall, compute, share, ratio, overhead) in rows.items():
        print(f"{n} worker(s) x {p} partition(s): T={wall * 1e3:.1f} ms ({ratio:.2f} x local)  "
              f"compute={compute * 1e3:.1f} ms  communication share={share:.0%}  "
              f"{megabytes[n, p]:.1f} MB/call  extra CPU={overhead * 1e3:.1f} ms")
    for p, (s, t) in fit.items():
        print(f"T(n) = s + t/n ({p} partition(s) per worker): s={s * 1e3:.1f} ms, "
              f"t={t * 1e3:.1f} ms")


def summary(rounds=15):
    """The T(1) / T(2) / local table with bytes per call, as Markdown lines."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from conftest import load_imdb_bigrams

    X, y = load_imdb_bigrams()
    w = np.random.default_rng(0).normal(size=X.shape[1]) * 0.01
    local = fr.Problem(X, y, loss="hinge", n_threads=1).oracle
    lines = ["# Dask oracle: T(1), T(2) and the local oracle", "",
             f"IMDB unigram+bigram tf-idf {X.shape}, nnz {X.nnz}, hinge, w ~ N(0, 0.01^2); "
             f"LocalCluster of 1 or 2 single-thread worker processes, one partition per "
             f"worker; local oracle on 1 thread in the client; {rounds} interleaved rounds, "
             f"medians; load average before: {load()}.", ""]
    with contextlib.ExitStack() as stack:
        oracles = {}
        for n in (1, 2):
            cluster = stack.enter_context(distributed.LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                silence_logs=40))
            client = stack.enter_context(distributed.Client(cluster, set_as_default=False))
            for shared in (True, False):
                oracle = DaskOracle.from_array(client, X, y, loss="hinge", n_partitions=n,
                                               shared_memory=shared)
                value, grad = oracle(w)
                v_ref, g_ref = oracle.local_equivalent(X, y)(w)
                assert value == v_ref and np.array_equal(grad.view(np.uint64),
                                                         g_ref.view(np.uint64))
                oracles[n, oracle.transport] = oracle
        times = {key: [] for key in ["local", *oracles]}
        kernel = {key: [] for key in oracles}
        for _ in range(rounds):
            for key, oracle in [("local", local), *oracles.items()]:
                start = time.perf_counter()
                oracle(w)
                times[key].append(time.perf_counter() - start)
                if key != "local":
                    kernel[key].append(max(oracle.last_timing[1]))
        T_local = np.median(times["local"])
        lines += ["| oracle | T ms | T / local | slowest kernel ms | network MB/call | "
                  "shared-memory MB/call |", "|---|---|---|---|---|---|",
                  f"| local (1 thread) | {1e3 * T_local:.1f} | 1.00 | | 0 | 0 |"]
        for (n, transport), oracle in oracles.items():
            T = np.median(times[n, transport])
            shm = 8e-6 * X.shape[1] * (1 + n) if transport == "shared memory" else 0.0
            lines.append(f"| T({n}) {transport} | {1e3 * T:.1f} | {T / T_local:.2f} | "
                         f"{1e3 * np.median(kernel[n, transport]):.1f} | "
                         f"{oracle.last_bytes / 1e6:.1f} | {shm:.1f} |")
        lines.append("")
        for transport in ("shared memory", "network"):
            T1, T2 = np.median(times[1, transport]), np.median(times[2, transport])
            lines.append(f"* {transport}: T(2) / T(1) = {T2 / T1:.2f}; "
                         f"T(n) = s + t/n gives t = {2e3 * (T1 - T2):.1f} ms, "
                         f"s = {1e3 * (2 * T2 - T1):.1f} ms")
        for oracle in oracles.values():
            oracle.close()
    lines.append(f"* load average after: {load()}")
    return lines


if __name__ == "__main__":
    import sys
    from pathlib import Path

    report = "\n".join(summary(int(sys.argv[1]) if len(sys.argv) > 1 else 15)) + "\n"
    print(report)
    out = Path(__file__).resolve().parent / "results" / "bench_distributed.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)
