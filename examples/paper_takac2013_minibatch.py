"""Mini-batch SDCA and Pegasos: iterations against batch size (Takac et al. 2013, Figure 1).

The paper's claim: with mini-batches of size b, the number of iterations
(mini-batch steps) needed for a given accuracy falls by the factor
b / beta_b, where beta_b = 1 + (b - 1)(n sigma^2 - 1)/(n - 1) is set by the
spectral norm sigma^2 = ||X||^2 / n of the data: nearly linear speed-up while
b <= 1 / sigma^2, less after.  Safe mini-batch SDCA (steps divided by
beta_b) and mini-batch Pegasos enjoy this guarantee; the aggressive SDCA
variant, which adapts beta to the curvature it measures, does at least as
well in practice; naive mini-batch SDCA (beta = 1) can stall or diverge for
large b.

This script fits a linear SVM (hinge loss, l2, lambda = 1e-4) on Reuters
money-fx (7770 x 8315, tf-idf; the bundled a9a when the shared data is
absent) and counts, for each batch size b, the iterations
``epochs * n / b`` until

* SDCA (naive, safe, aggressive): its certified duality gap is at most
  1e-3 * J(w) (checked once per epoch);
* mini-batch Pegasos: the objective of its last iterate is within 1e-2 * J*
  of the optimum J* (Pegasos has no duality gap for the hinge loss; J* comes
  from a long SDCA run).

It plots the iterations against b on log axes, with the theoretical curve
iterations(b = 1) * beta_b / b of safe SDCA, and prints the table.

Run: ``python examples/paper_takac2013_minibatch.py [figure.png]``.
"""

import numpy as np

import fastrisk as fr
from fastrisk.datasets import load_a9a

from _common import QUICK, MissingData, figure, load, save

LAMBDA = 1e-3 if QUICK else 1e-4
BATCHES = (1, 16, 256) if QUICK else (1, 4, 16, 64, 256, 1024)
SDCA_EPOCHS = 20 if QUICK else 2000
PEGASOS_EPOCHS = 5 if QUICK else 300
SDCA_TOL, PEGASOS_TOL = (1e-2, 1e-1) if QUICK else (1e-3, 1e-2)


def data():
    try:
        return ("Reuters money-fx",) + load("reuters-moneyfx.trn.bz2", 8315)
    except MissingData as err:
        print(f"{err}; using the bundled a9a instead")
        X, y, _, _ = load_a9a()
        return "a9a", X, y


def iterations(epochs, n, b):
    return epochs * n / b


def main():
    name, X, y = data()
    n = X.shape[0]
    problem = fr.Problem(X, y, loss="hinge", penalty="l2", alpha=LAMBDA)
    reference = fr.solve(problem, solver="sdca", tol=1e-5, max_iter=SDCA_EPOCHS, random_state=0)
    j_star = reference.objective - reference.gap          # a lower bound on J*, within 1e-5 J

    table = {}
    beta_b = {1: 1.0}
    for b in BATCHES:
        for variant in ("naive", "safe", "aggressive"):
            res = fr.solve(problem, solver="sdca", batch_size=b, variant=variant, tol=SDCA_TOL,
                           max_iter=SDCA_EPOCHS, random_state=0)
            done = res.status == "converged"
            table[variant, b] = iterations(res.n_iter, n, b) if done else np.nan
            if variant == "safe" and "beta_b" in res.extra:
                beta_b[b] = res.extra["beta_b"]
        res = fr.solve(problem, solver="pegasos", batch_size=b, tol=0.0, max_iter=PEGASOS_EPOCHS,
                       average="last", random_state=0)
        objective = res.history.as_arrays()["objective"]
        reached = np.flatnonzero(objective <= j_star * (1 + PEGASOS_TOL))
        table["pegasos", b] = iterations(reached[0] + 1, n, b) if reached.size else np.nan

    methods = ("naive", "safe", "aggressive", "pegasos")
    print(f"{name}, hinge, lambda = {LAMBDA:g}, n = {n}: iterations to the target "
          f"(SDCA: gap <= {SDCA_TOL:g} J; Pegasos: J <= (1 + {PEGASOS_TOL:g}) J*; "
          "nan: not reached within the budget)")
    print(f"{'b':>6}{'beta_b':>9}{'b/beta_b':>10}" + "".join(f"{m:>12}" for m in methods)
          + "   speed-up of safe SDCA")
    for b in BATCHES:
        speedup = table["safe", 1] / table["safe", b]
        print(f"{b:>6}{beta_b[b]:>9.2f}{b / beta_b[b]:>10.1f}"
              + "".join(f"{table[m, b]:>12.0f}" for m in methods) + f"   {speedup:.1f}")

    fig, (ax,) = figure(1, width=6.0, height=4.5)
    bs = np.array(BATCHES)
    for method, marker in zip(methods, "ox^s"):
        ax.plot(bs, [table[method, b] for b in BATCHES], marker=marker, label=method)
    theory = table["safe", 1] * np.array([beta_b[b] for b in BATCHES]) / bs
    ax.plot(bs, theory, "k:", label="safe SDCA at b=1 times beta_b / b")
    ax.set(xscale="log", yscale="log" if np.isfinite(theory).any() else "linear",
           xlabel="mini-batch size b", ylabel="iterations",
           title=f"{name}, hinge, lambda = {LAMBDA:g}")
    ax.legend(fontsize="small")
    save(fig, __file__)


if __name__ == "__main__":
    main()
