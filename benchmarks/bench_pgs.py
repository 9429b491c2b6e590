"""PGS benchmark (docs/math.md §5, Zhu et al. 2009): epoch time for p = 1.8 against p = 2 on Reuters money-fx.

p = 2 is the paper's fast case (w = theta / ((t+1) sigma), no power); for
p < 2 our kernel pays one table-driven power (csrc/fr_pow.h) per updated
coordinate and nothing per read (phi(theta) is cached); the issue's goal is
a ratio within 1.5.  The kernel also reports its coordinate updates: the two
runs take different paths (at the same alpha, p = 1.8 regularizes harder and
has more margin violators on Reuters: after 20 epochs 682 rows vs 365 for
p = 2), so the update counts and the time per update (fitted as in the
test's docstring) are printed next to the times.  Epoch kernels run interleaved in one process and are timed in CPU
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
    """Epoch time ratio p = 1.8 / p = 2 at alpha = 1e-4, and the cost per coordinate
    update: an epoch costs read + updates * per_update, where read (the dot products,
    every row once) is the same for every run; p = 2 at alpha 1e-5, 1e-4, 1e-3
    (11k..71k updates) gives read and the p = 2 per-update cost by least squares,
    then the p = 1.8 per-update cost is (time - read) / updates."""
    X, y = libsvm("reuters")
    runs = [(2.0, 1e-4), (1.8, 1e-4), (2.0, 1e-5), (2.0, 1e-3)]
    problems = {r: fr.Problem(X, y, loss="hinge", penalty="lp", p=r[0], alpha=r[1])
                for r in runs}
    order = np.random.default_rng(0).permutation(X.shape[0]).astype(np.intp)
    repeats = 1 if benchmark.disabled else 40
    times, updates = {r: [] for r in runs}, {}
    for _ in range(repeats):
        for r in runs:
            seconds, updates[r] = one_epoch(problems[r], r[0], order, epochs_before=1)
            times[r].append(seconds)
    benchmark.pedantic(one_epoch, args=(problems[runs[1]], 1.8, order), rounds=1)
    best = {r: min(times[r]) for r in runs}
    p2 = [r for r in runs if r[0] == 2.0]
    (read, per_update_p2), *_ = np.linalg.lstsq(np.array([[1.0, updates[r]] for r in p2]),
                                                np.array([best[r] for r in p2]), rcond=None)
    per_update_p18 = (best[runs[1]] - read) / updates[runs[1]]
    ratio = best[runs[1]] / best[runs[0]]
    benchmark.extra_info.update(p2_s=best[runs[0]], p18_s=best[runs[1]], ratio=ratio,
                                updates_p2=updates[runs[0]], updates_p18=updates[runs[1]],
                                read_s=read, per_update_p2_s=per_update_p2,
                                per_update_p18_s=per_update_p18)
    print(f"\nReuters money-fx PGS epoch (2nd epoch): p=2 {best[runs[0]] * 1e3:.2f} ms "
          f"({updates[runs[0]]} coordinate updates), p=1.8 {best[runs[1]] * 1e3:.2f} ms "
          f"({updates[runs[1]]} updates), ratio {ratio:.2f}; read {read * 1e3:.2f} ms, "
          f"per update p=2 {per_update_p2 * 1e9:.1f} ns, p=1.8 {per_update_p18 * 1e9:.1f} ns; "
          f"load average {os.getloadavg()[0]:.1f}")
    assert np.isfinite(ratio)
