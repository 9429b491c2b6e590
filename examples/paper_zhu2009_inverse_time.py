"""Inverse time dependency of the Primal Gradient Solver (Zhu et al. 2009, Figures 6-9).

The paper's claim: to reach a fixed test accuracy, a stochastic solver such
as PGS needs to process *fewer* examples, not more, when the training set is
larger.  A small training set only reaches the target near its empirical
optimum, which takes many steps (or never, if the target is out of its
reach); a large training set has an optimum well above the target, so a
rough solution suffices.  The paper shows it for l2- and l_1.8-regularized
logistic regression on RCV1 CCAT, with the regularization weight sigma chosen
best for each training-set size and the median over repeated runs.

This script samples training sets of m = 500 ... 32561 rows of the bundled
a9a, runs PGS (``solver="pgs"``, logistic loss, l2, one example per step) on a
stream of shuffled passes over each, measures the test accuracy on the 16281
a9a test rows after every 250 examples, and reports, for each m and target
accuracy, the number of examples processed until the target is first
reached by the median accuracy of 7 runs (different samples and orders), for
the best sigma of a small grid.  The chunks are fed one after another with the
solver's streaming state, which gives the iterates of one uninterrupted run.

Run: ``python examples/paper_zhu2009_inverse_time.py [figure.png]``.
"""

import numpy as np

import fastrisk as fr
from fastrisk.datasets import load_a9a

from _common import QUICK, figure, save

SIZES = (1000, 32561) if QUICK else (500, 1000, 2000, 4000, 8000, 16000, 32561)
SIGMAS = (1e-2,) if QUICK else (1e-1, 3e-2, 1e-2, 3e-3, 1e-3)
TARGETS = (0.835, 0.84, 0.845)
RUNS = 1 if QUICK else 7
CHUNK = 250
BUDGET = 2000 if QUICK else 40000      # examples processed at most


def accuracy_curve(X, y, X_test, y_test, rows, sigma, rng):
    """Test accuracy after every CHUNK examples of a stream of shuffled passes over ``rows``."""
    passes = BUDGET // len(rows) + 1
    stream = np.concatenate([rng.permutation(rows) for _ in range(passes)])[:BUDGET]
    state, accuracy = None, []
    for lo in range(0, BUDGET, CHUNK):
        part = stream[lo:lo + CHUNK]
        problem = fr.Problem(X[part], y[part], loss="logistic", penalty="l2", alpha=sigma,
                             classes=[-1.0, 1.0])
        res = fr.solve(problem, solver="pgs", max_iter=1, shuffle=False, state=state, tol=0.0)
        state = res.extra["state"]
        accuracy.append(np.mean(np.sign(X_test @ res.coef_.ravel()) == y_test))
    return np.array(accuracy)


def examples_to(curve, target):
    hit = np.flatnonzero(curve >= target)
    return (hit[0] + 1) * CHUNK if hit.size else np.inf


def main():
    X, y, X_test, y_test = load_a9a()
    counts = {}                                   # (m, target) -> median examples, best sigma
    best_accuracy = {}
    for m in SIZES:
        per_sigma = {target: [] for target in TARGETS}
        best_accuracy[m] = 0.0
        for sigma in SIGMAS:
            curves = []
            for run in range(RUNS):
                rng = np.random.default_rng(run)
                rows = rng.permutation(X.shape[0])[:m]
                curves.append(accuracy_curve(X, y, X_test, y_test, rows, sigma, rng))
            curve = np.median(curves, axis=0)
            best_accuracy[m] = max(best_accuracy[m], curve.max())
            for target in TARGETS:
                per_sigma[target].append((examples_to(curve, target), sigma))
        for target in TARGETS:
            counts[m, target] = min(per_sigma[target])

    print("a9a, PGS, logistic + l2: examples processed until the test accuracy first reaches "
          "the target (median curve of the runs, best sigma; inf: not reached within "
          f"{BUDGET} examples)")
    print(f"{'m':>7}{'best acc.':>11}" + "".join(f"{'target ' + str(t):>22}" for t in TARGETS))
    for m in SIZES:
        cells = "".join(f"{counts[m, t][0]:>12.0f} (s={counts[m, t][1]:.0e})" for t in TARGETS)
        print(f"{m:>7}{best_accuracy[m]:>11.4f}{cells}")

    fig, (ax,) = figure(1, width=6.0, height=4.5)
    for target in TARGETS:
        values = [counts[m, target][0] for m in SIZES]
        ax.plot(SIZES, [v if np.isfinite(v) else np.nan for v in values], marker="o",
                label=f"test accuracy {target}")
    reached = any(np.isfinite(v[0]) for v in counts.values())
    ax.set(xscale="log", yscale="log" if reached else "linear", xlabel="training-set size m",
           ylabel="examples processed", title="a9a, PGS (logistic, l2)")
    ax.legend()
    save(fig, __file__)


if __name__ == "__main__":
    main()
