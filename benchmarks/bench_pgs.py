"""PGS benchmark (issue 5; MATH.md 5, seed 003): epoch time for p = 1.8 against p = 2 on Reuters money-fx.

p = 2 is the paper's fast case (w = theta / ((t+1) sigma), no power); for
p < 2 our kernel pays one table-driven power (csrc/fr_pow.h) per updated
coordinate and nothing per read (phi(theta) is cached); the issue's goal is
a ratio within 1.5.  The kernel also reports its coordinate updates: the two
runs take different paths (at the same alpha, p = 1.8 regularizes harder and
has more margin violators on Reuters: after 20 epochs 682 rows vs 365 for
p = 2), so the update counts and the time per update are printed next to the
times.  Epoch kernels run interleaved in one process and are timed in CPU
time of the thread (the machine is shared); the best of the repeats is
compared.  ``--benchmark-disable`` runs one repeat.
"""

import os
import time

import numpy as np

import fastrisk as fr
from fastrisk import _pgs
from fastrisk.solvers.pgs import PGSState


def one_epoch(problem, p, order, epochs_before=0):
    """(seconds, coordinate updates) of one epoch after `epochs_before` untimed epochs."""
    d = problem.data
    state = PGSState(problem.n_weights, problem.alpha, p, None, 1)

    def run():
        return _pgs.pgs_epoch(d.data, d.indices, d.indptr, d.dense, d.bias, problem.y, np.empty(0),
                       order, 1, problem.loss.spec.kernel_id, 0.0, problem.alpha, p, 0.0,
                       state.theta, state.phi, state.scalars)

    for _ in range(epochs_before):
        run()
    t = time.thread_time()
    updates = run()[2]
    return time.thread_time() - t, updates


def test_pgs_p18_vs_p2_reuters(benchmark, libsvm):
    X, y = libsvm("reuters")
    problems = {p: fr.Problem(X, y, loss="hinge", penalty="lp", p=p, alpha=1e-4)
                for p in (2.0, 1.8)}
    order = np.random.default_rng(0).permutation(X.shape[0]).astype(np.intp)
    repeats = 1 if benchmark.disabled else 40
    times, updates = {2.0: [], 1.8: []}, {}
    for _ in range(repeats):
        for p in (2.0, 1.8):
            seconds, updates[p] = one_epoch(problems[p], p, order, epochs_before=1)
            times[p].append(seconds)
    benchmark.pedantic(one_epoch, args=(problems[1.8], 1.8, order), rounds=1)
    ratio = min(times[1.8]) / min(times[2.0])
    benchmark.extra_info.update(p2_s=min(times[2.0]), p18_s=min(times[1.8]), ratio=ratio,
                                updates_p2=updates[2.0], updates_p18=updates[1.8])
    print(f"\nReuters money-fx PGS epoch (2nd epoch): p=2 {min(times[2.0]) * 1e3:.2f} ms "
          f"({updates[2.0]} coordinate updates, {min(times[2.0]) / updates[2.0] * 1e9:.1f} ns "
          f"per update), p=1.8 {min(times[1.8]) * 1e3:.2f} ms ({updates[1.8]} updates, "
          f"{min(times[1.8]) / updates[1.8] * 1e9:.1f} ns), ratio {ratio:.2f}, "
          f"load average {os.getloadavg()[0]:.1f}")
    assert np.isfinite(ratio)
