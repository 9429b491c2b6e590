"""Sparsity of regularized dual averaging (Xiao 2010, Figures 3 and 4).

The paper's claim: for l1-regularized online learning, RDA truncates every
coordinate whose averaged gradient is below lambda, a threshold that does not
shrink with the step size, so its iterate w_T is much sparser than that of
stochastic subgradient descent (SGD) and of truncated gradient (TG), at the
same or similar test error; TG's number of nonzeros oscillates strongly along
the pass, RDA's evolves smoothly; enhanced l1-RDA (a larger threshold early
on, gamma * rho = 25) is sparser still.  The paper classifies MNIST digits 6
against 7 with l1-regularized logistic regression, lambda from 0.01 to 10,
about 12000 training steps.

This script uses the digits 6 and 7 of the MNIST test file (1986 images;
pixels scaled back to 0..255 as in the paper), half for training and half for
testing, so 12 passes over the 993 training digits make the paper's ~12000
steps.  Solvers (Xiao 2010, section 6 settings): ``rda`` with gamma = 1000 and
rho = 0 (plain) or rho = 0.025 (enhanced, gamma rho = 25), ``sgd_l1`` and
``truncated_gradient`` with K = 1 (FOBOS) and K = 10, all with the paper's
constant step for the baselines.  Nonzeros are counted exactly for RDA and
TG with K = 1, and as |w_j| > 1e-5 for SGD and TG with K = 10 (as the paper
does).

* left: nonzeros of w_T against lambda;
* middle: test error of w_T against lambda;
* right: nonzeros of w_t along the steps, at lambda = 0.1 and 10.

Run: ``python examples/paper_xiao2010_rda.py [figure.png]``.
"""

import numpy as np

import fastrisk as fr

from _common import QUICK, figure, load, save

LAMBDAS = (1.0,) if QUICK else (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
PASSES = 2 if QUICK else 12
CHUNKS = 3 if QUICK else 24
ALONG = (1.0,) if QUICK else (0.1, 10.0)      # lambdas of the nonzeros-along-the-pass plot
GAMMA = 1000.0
METHODS = {                   # name -> (solver, options, nonzero threshold)
    "l1-RDA": ("rda", {"gamma": GAMMA}, 0.0),
    "enhanced l1-RDA": ("rda", {"gamma": GAMMA, "rho": 25.0 / GAMMA}, 0.0),
    "SGD": ("sgd_l1", {"gamma": GAMMA}, 1e-5),
    "TG (K=1)": ("truncated_gradient", {"gamma": GAMMA, "K": 1}, 0.0),
    "TG (K=10)": ("truncated_gradient", {"gamma": GAMMA, "K": 10}, 1e-5),
}


def digits():
    """Training stream (PASSES shuffled passes) and test set of MNIST 6 (-1) vs 7 (+1)."""
    X, y = load("mnist.scale.t.bz2", 780)
    keep = (y == 6) | (y == 7)
    X, y = (X[keep] * 255.0).tocsr(), np.where(y[keep] == 7, 1.0, -1.0)
    rng = np.random.default_rng(0)
    perm = rng.permutation(X.shape[0])
    train, test = perm[: len(perm) // 2], perm[len(perm) // 2:]
    stream = np.concatenate([rng.permutation(train) for _ in range(PASSES)])
    return X[stream], y[stream], X[test], y[test]


def problem(X, y, lam):
    # the bias is a feature of value 255 (as large as a pixel), regularized like the weights
    return fr.Problem(X, y, loss="logistic", penalty="l1", alpha=lam, fit_intercept=True,
                      intercept_scaling=255.0)


def nonzeros(res, threshold):
    return int(np.sum(np.abs(res.coef_) > threshold))


def step_size(options, n_steps):
    """The baselines' constant step sqrt(2/T)/gamma for the whole stream (Xiao 2010, (19))."""
    return {"eta": np.sqrt(2.0 / n_steps) / options["gamma"]}


def one_pass(solver, options, X, y, lam, start=None):
    """One pass over the rows in order; ``start`` continues a previous pass."""
    return fr.solve(problem(X, y, lam), solver=solver, max_iter=1, shuffle=False,
                    eval_every=0, state=start, **options)


def main():
    X, y, X_test, y_test = digits()
    T = X.shape[0]
    print(f"MNIST 6 vs 7: {T} steps ({PASSES} passes over {T // PASSES} digits), "
          f"{X_test.shape[0]} test digits")

    nnz, err = {}, {}
    for name, (solver, options, thr) in METHODS.items():
        extra = step_size(options, T) if solver != "rda" else {}
        for lam in LAMBDAS:
            res = one_pass(solver, {**options, **extra}, X, y, lam)
            nnz[name, lam] = nonzeros(res, thr)
            scores = X_test @ res.coef_.ravel() + res.intercept_
            err[name, lam] = float(np.mean(np.sign(scores) != y_test))
    print(f"\n{'method':<18}" + "".join(f"{'lambda=' + format(l, 'g'):>22}" for l in LAMBDAS))
    print(f"{'':<18}" + "".join(f"{'nnz / test error':>22}" for _ in LAMBDAS))
    for name in METHODS:
        print(f"{name:<18}" + "".join(f"{nnz[name, l]:>13d} / {err[name, l]:.3f}"
                                      for l in LAMBDAS))

    bounds = np.linspace(0, T, CHUNKS + 1).astype(int)
    along = {}
    for lam in ALONG:
        for name, (solver, options, thr) in METHODS.items():
            extra = step_size(options, T) if solver != "rda" else {}
            state, counts = None, []
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                res = one_pass(solver, {**options, **extra}, X[lo:hi], y[lo:hi], lam, state)
                state = res.extra["state"]
                counts.append(nonzeros(res, thr))
            along[name, lam] = counts
    print("\nnonzeros of w_t after step t:")
    for lam in ALONG:
        print(f"lambda = {lam:g}, t = " + " ".join(f"{t:>5d}" for t in bounds[1:]))
        for name in METHODS:
            print(f"  {name:<16}" + " ".join(f"{c:>5d}" for c in along[name, lam]))

    fig, (ax1, ax2, ax3) = figure(3)
    for k, name in enumerate(METHODS):
        ax1.plot(LAMBDAS, [nnz[name, l] for l in LAMBDAS], marker="o", color=f"C{k}", label=name)
        ax2.plot(LAMBDAS, [err[name, l] for l in LAMBDAS], marker="o", color=f"C{k}", label=name)
        for lam, style in zip(ALONG, ("-", "--")):
            ax3.plot(bounds[1:], along[name, lam], style, color=f"C{k}",
                     label=f"{name}, lambda={lam:g}")
    ax1.set(xscale="log", yscale="log", xlabel="lambda", ylabel="nonzeros of w_T",
            title="MNIST 6 vs 7, l1 logistic")
    ax2.set(xscale="log", xlabel="lambda", ylabel="test error of w_T")
    ax3.set(yscale="log", xlabel="step t", ylabel="nonzeros of w_t")
    ax1.legend(fontsize="small")
    ax3.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    save(fig, __file__)


if __name__ == "__main__":
    main()
