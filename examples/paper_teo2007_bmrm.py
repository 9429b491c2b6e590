"""Scaling of the bundle method BMRM (Teo et al. 2007, Figures 5-7 and Theorem 2).

The paper's claims:

* iterations grow as lambda shrinks and as the tolerance epsilon shrinks
  (Theorem 2 bounds them by O(1 / (lambda epsilon)); Figure 7 shows the
  certified gap gamma_t falling fast at first, then linearly on a log scale);
* for a fixed lambda the number of iterations does not grow with the number
  of examples, so the training time grows at most linearly with the data
  (Figure 5; smaller subsets even took longer);
* the risk oracle (the loss value and subgradient over all examples) is the
  part that runs in parallel, its time falling like s + t / n with n
  workers (Figure 6; there a cluster, here OpenMP threads in one process).

This script fits a linear SVM (hinge loss, l2) with ``solver="bmrm"``:

1. on the bundled a9a for lambda = 1e-2 ... 1e-5 and tol = 1e-2, 1e-3,
   counting iterations, and plotting the certified gap per iteration;
2. on random subsets of ijcnn1 (49990 rows; a9a when the shared data is
   absent) at lambda = 1e-5, counting iterations and seconds;
3. timing one oracle call on ijcnn1's training and test rows together
   (141691 rows, 1.8 million nonzeros) with 1, 2, ... threads up to the
   number of cores: the best of repeated calls, the thread counts interleaved.

Run: ``python examples/paper_teo2007_bmrm.py [figure.png]``.
"""

import os
import time

import numpy as np
import scipy.sparse as sp

import fastrisk as fr
from fastrisk.datasets import load_a9a

from _common import QUICK, MissingData, figure, load, save

LAMBDAS = (1e-2, 1e-3) if QUICK else (1e-2, 1e-3, 1e-4, 1e-5)
TOLS = (1e-2, 1e-3)
MAX_ITER = 3000
FRACTIONS = (1 / 8, 1) if QUICK else (1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1)
SIZE_LAMBDA = 1e-4 if QUICK else 1e-5
REPEATS = 3 if QUICK else 30


def iterations_against_lambda():
    X, y, _, _ = load_a9a()
    iters, gaps = {}, {}
    for lam in LAMBDAS:
        problem = fr.Problem(X, y, loss="hinge", penalty="l2", alpha=lam)
        for tol in TOLS:
            res = fr.solve(problem, solver="bmrm", tol=tol, max_iter=MAX_ITER)
            iters[lam, tol] = res.n_iter if res.status == "converged" else np.nan
            gaps[lam] = res.history.as_arrays()["bound"]      # the last (tightest) tol's run
    return iters, gaps


def training_rows():
    try:
        X, y = load("ijcnn1.trn.bz2", 22)
        if QUICK:                               # the oracle timing on the training rows only
            return "ijcnn1", X, y, X, y
        X_test, y_test = load("ijcnn1.tst.bz2", 22)
        return "ijcnn1", X, y, sp.vstack([X, X_test]).tocsr(), np.r_[y, y_test]
    except MissingData as err:
        print(f"{err}; using the bundled a9a instead")
        X, y, X_test, y_test = load_a9a()
        return "a9a", X, y, sp.vstack([X, X_test]).tocsr(), np.r_[y, y_test]


def iterations_against_size(X, y):
    perm = np.random.default_rng(0).permutation(X.shape[0])
    rows = {}
    for fraction in FRACTIONS:
        part = perm[: int(round(fraction * X.shape[0]))]
        problem = fr.Problem(X[part], y[part], loss="hinge", penalty="l2", alpha=SIZE_LAMBDA)
        start = time.perf_counter()
        res = fr.solve(problem, solver="bmrm", tol=1e-2, max_iter=MAX_ITER)
        rows[len(part)] = (res.n_iter, time.perf_counter() - start, res.status)
    return rows


def oracle_time_against_threads(X, y):
    counts = sorted({1, 2, os.cpu_count() or 1})
    problems = {n: fr.Problem(X, y, loss="hinge", penalty="l2", alpha=1e-4, n_threads=n)
                for n in counts}
    w = np.random.default_rng(0).normal(size=problems[1].n_weights)
    best = {n: np.inf for n in counts}
    for _ in range(REPEATS):                     # interleaved: the load hits every count alike
        for n in counts:
            start = time.perf_counter()
            problems[n].oracle(w)
            best[n] = min(best[n], time.perf_counter() - start)
    return best


def main():
    iters, gaps = iterations_against_lambda()
    print("a9a, hinge: BMRM iterations until the certified gap is at most tol * J(w)")
    print(f"{'lambda':>8}" + "".join(f"{'tol=' + format(t, 'g'):>12}" for t in TOLS))
    for lam in LAMBDAS:
        print(f"{lam:>8.0e}" + "".join(f"{iters[lam, t]:>12.0f}" for t in TOLS))

    name, X, y, X_all, y_all = training_rows()
    sizes = iterations_against_size(X, y)
    print(f"\n{name}, hinge, lambda = {SIZE_LAMBDA:g}, tol = 1e-2: subsets of the training set")
    print(f"{'rows':>8}{'iterations':>12}{'seconds':>10}  status")
    for m, (n_iter, seconds, status) in sizes.items():
        print(f"{m:>8d}{n_iter:>12d}{seconds:>10.2f}  {status}")

    times = oracle_time_against_threads(X_all, y_all)
    print(f"\none oracle call on {X_all.shape[0]} rows ({X_all.nnz} nonzeros), best of {REPEATS}")
    print(f"{'threads':>8}{'ms':>10}{'speed-up':>10}")
    for n, seconds in times.items():
        print(f"{n:>8d}{seconds * 1e3:>10.2f}{times[1] / seconds:>10.2f}")

    fig, (ax1, ax2, ax3, ax4) = figure(4, width=4.2)
    for tol in TOLS:
        ax1.plot(LAMBDAS, [iters[lam, tol] for lam in LAMBDAS], marker="o", label=f"tol {tol:g}")
    ax1.set(xscale="log", yscale="log", xlabel="lambda", ylabel="iterations",
            title="a9a, hinge: iterations")
    ax1.legend()
    for lam in LAMBDAS:
        ax2.plot(np.arange(1, len(gaps[lam]) + 1), gaps[lam], label=f"lambda {lam:g}")
    ax2.set(yscale="log", xlabel="iteration", ylabel="certified gap gamma_t",
            title=f"a9a: convergence (tol {TOLS[-1]:g})")
    ax2.legend(fontsize="small")
    ms = list(sizes)
    ax3.plot(ms, [sizes[m][0] for m in ms], marker="o", label="iterations")
    ax3.set(xscale="log", xlabel="training rows", ylabel="iterations",
            title=f"{name}, lambda {SIZE_LAMBDA:g}")
    ax3.minorticks_off()
    ax3b = ax3.twinx()
    ax3b.plot(ms, [sizes[m][1] for m in ms], "s--", color="C1", label="seconds")
    ax3b.set(ylabel="seconds")
    ax3.legend(loc="upper left")
    ax3b.legend(loc="lower right")
    ax4.bar([str(n) for n in times], [t * 1e3 for t in times.values()])
    ax4.set(xlabel="threads", ylabel="ms per oracle call (best of repeats)",
            title="risk oracle")
    save(fig, __file__)


if __name__ == "__main__":
    main()
