"""Proximal regularization at small lambda (Do, Le & Foo 2009, Table 1, Figures 1 and 3).

The paper's claim: when the regularization parameter lambda is small, the
objective has little curvature and the step sizes of Pegasos (1 / (lambda t))
are far too large; adding proximal terms fixes this.  Online, the adaptive
and proximal (optimistic) Pegasos variants reach a much lower linear-SVM
objective than Pegasos in the same number of epochs (Table 1: ijcnn1 at
lambda = 1e-7, best training objective 0.358 for Pegasos, 0.209 adaptive,
0.186 proximal).  In batch, the proximal bundle method closes its certified
gap in far fewer iterations than the standard bundle method (BMRM), and the
advantage grows as lambda shrinks (Figure 3).

This script runs, with the hinge loss and the l2 penalty:

* left: ``pegasos``, ``adaptive``, ``proximal`` and ``optimistic`` for a
  number of epochs on ijcnn1 (49990 x 22) at lambda = 1e-7, and the objective
  J(w) after each epoch;
* right: ``bmrm`` and ``prox_bundle`` on a9a at lambda = 1e-4, 1e-5, 1e-6 and
  the certified bound on J(w) - J* after each iteration.

Run: ``python examples/paper_do2009_proximal.py [figure.png]``.
"""

import numpy as np

import fastrisk as fr
from fastrisk.datasets import load_a9a

from _common import QUICK, MissingData, figure, load, save

ONLINE = ("pegasos", "adaptive", "proximal", "optimistic")
EPOCHS = 3 if QUICK else 30
BUNDLE_ITERS = 20 if QUICK else 300
LAMBDAS = (1e-4, 1e-5, 1e-6)


def online_curves():
    """Objective after each epoch of the four Pegasos-type solvers (Table 1 setting)."""
    try:
        X, y = load("ijcnn1.trn.bz2", 22)
        name, lam = "ijcnn1", 1e-7
    except MissingData as err:
        print(f"{err}; using the bundled a9a instead")
        X, y, _, _ = load_a9a()
        name, lam = "a9a", 1e-6
    problem = fr.Problem(X, y, loss="hinge", penalty="l2", alpha=lam)
    curves = {}
    for solver in ONLINE:
        res = fr.solve(problem, solver=solver, max_iter=EPOCHS, tol=0.0, random_state=0)
        curves[solver] = res.history.as_arrays()["objective"]
    return name, lam, curves


def epochs_to_99(curve):
    """Epochs until J fell by 99% of (J(epoch 1) - best J), the paper's Table 1 measure."""
    best = curve.min()
    target = curve[0] - 0.99 * (curve[0] - best)
    return int(np.argmax(curve <= target)) + 1


def bundle_bounds():
    """Certified bound per iteration of BMRM and the proximal bundle method on a9a."""
    X, y, _, _ = load_a9a()
    bounds = {}
    for lam in LAMBDAS:
        problem = fr.Problem(X, y, loss="hinge", penalty="l2", alpha=lam)
        for solver in ("bmrm", "prox_bundle"):
            res = fr.solve(problem, solver=solver, max_iter=BUNDLE_ITERS, tol=1e-5)
            bounds[lam, solver] = res.history.as_arrays()["bound"]
    return bounds


def main():
    name, lam, curves = online_curves()
    print(f"{name}, hinge, lambda = {lam:g}: objective J(w) after each epoch")
    print(f"{'solver':<12}{'best J':>10}{'epochs to 99%':>15}   J per epoch")
    for solver, curve in curves.items():
        print(f"{solver:<12}{curve.min():>10.4f}{epochs_to_99(curve):>15d}   "
              + " ".join(f"{v:.4f}" for v in curve))

    bounds = bundle_bounds()
    checkpoints = [i for i in (1, 10, 50, 100, 200, 300) if i <= BUNDLE_ITERS]
    print("\na9a, hinge: certified bound on J(w) - J* after iteration")
    print(f"{'lambda':>8} {'solver':<12}" + "".join(f"{i:>11d}" for i in checkpoints))
    for (lam_b, solver), b in bounds.items():
        row = "".join(f"{b[min(i, len(b)) - 1]:>11.2e}" for i in checkpoints)
        print(f"{lam_b:>8.0e} {solver:<12}{row}   ({len(b)} iterations)")

    fig, (ax1, ax2) = figure(2)
    for solver, curve in curves.items():
        ax1.plot(np.arange(1, len(curve) + 1), curve, marker=".", label=solver)
    ax1.set(xlabel="epoch", ylabel="objective J(w)", yscale="log",
            title=f"{name}, hinge, lambda = {lam:g}")
    ax1.legend()
    for k, lam_b in enumerate(LAMBDAS):
        for solver, style in (("bmrm", "--"), ("prox_bundle", "-")):
            b = bounds[lam_b, solver]
            ax2.plot(np.arange(1, len(b) + 1), b, style, color=f"C{k}",
                     label=f"{solver}, lambda = {lam_b:g}")
    ax2.set(xlabel="iteration", ylabel="certified bound on J(w) - J*", yscale="log",
            title="a9a, hinge: BMRM vs proximal bundle")
    ax2.legend(fontsize="small")
    save(fig, __file__)


if __name__ == "__main__":
    main()
