"""Logistic SDCA against Newton and snapml: epoch time and time to a certified 1e-3 / 1e-4.

Per data set (a9a, w8a, ijcnn1, Reuters money-fx, phishing, mushrooms; labels
y == max -> +1), l2 logistic at ``--alpha`` (default 1e-4), no intercept,
``--threads`` threads (default 1; BLAS pools limited to the same count), in one
process:

* epoch: one single-coordinate SDCA epoch (the kernel alone, with the step
  tolerance the solver has there) from the state after 3 epochs, best of
  ``--repeat`` from the same state;
* time to eps = 1e-3 and 1e-4: fastrisk ``sdca`` and ``newton`` at ``tol=eps``
  (their certificates stop them) and snapml's ``LogisticRegression``
  (regularizer = alpha m, as in compare_binary.py) at the first tolerance of
  1e-1, 1e-2, ... whose J reaches J* (1 + eps); the three are run interleaved,
  best of ``--repeat`` each.  J* is Newton's at tol 1e-11; every J is
  computed by fastrisk on the method's weights.

Ratios are sdca / snapml and sdca / newton.  Writes
benchmarks/results/logistic_sdca.md (regenerated).  Standard invocation (about
a minute on a quiet 2-core machine):

    python benchmarks/logistic_sdca.py
"""

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastrisk.problem import Problem  # noqa: E402
from fastrisk.solvers import SOLVERS  # noqa: E402
from fastrisk.solvers.sdca import _SDCA  # noqa: E402

DATASETS = ("mushrooms", "phishing", "a9a", "w8a", "ijcnn1", "reuters")
EPSILONS = (1e-3, 1e-4)
SNAP_TOLS = [10.0 ** -k for k in range(1, 10)]


def load(name):
    from conftest import load_libsvm

    X, y = load_libsvm(name)
    return X, np.where(y == np.max(y), 1.0, -1.0)


def epoch_time(problem, threads, repeat, warm=3):
    """Seconds of one single-coordinate epoch from the state after ``warm`` epochs."""
    method = _SDCA(problem, batch_size=1, variant="safe", n_threads=threads, start=None,
                   shrinking=True, seed=0)
    for _ in range(warm):
        method.run_epoch()
        method.estimate(0.0, 0.0)  # the step tolerance follows the estimated gap
    arrays = (method.u, method.v, method.row_loss, method.row_dual, method.sums, method.index,
              method.order_state, method.pg)
    saved, n_active = [a.copy() for a in arrays], method.n_active
    best = np.inf
    for _ in range(repeat):
        for a, s in zip(arrays, saved):
            a[:] = s
        method.n_active = n_active
        t0 = time.perf_counter()
        method._single_epoch()
        best = min(best, time.perf_counter() - t0)
    return best


def snapml_fit(X, y, reg, tol, threads):
    from snapml import LogisticRegression

    return LogisticRegression(regularizer=reg, tol=tol, max_iter=100_000, fit_intercept=False,
                              n_jobs=threads).fit(X, y).coef_.ravel()


def row(name, alpha, threads, repeat):
    X, y = load(name)
    m = X.shape[0]
    problem = Problem(X, y, loss="logistic", alpha=alpha, n_threads=threads)
    J_star = SOLVERS["newton"].func(problem, tol=1e-11).objective
    out = {"data": name, "m": m, "epoch": epoch_time(problem, threads, repeat)}
    for eps in EPSILONS:
        target = J_star * (1 + eps)
        snap_tol = next((t for t in SNAP_TOLS
                         if problem.objective(snapml_fit(X, y, alpha * m, t, threads)) <= target),
                        None)
        runs = {"sdca": lambda: SOLVERS["sdca"].func(problem, tol=eps, random_state=0),
                "newton": lambda: SOLVERS["newton"].func(problem, tol=eps)}
        if snap_tol is not None:
            runs["snapml"] = lambda: snapml_fit(X, y, alpha * m, snap_tol, threads)
        best = {k: np.inf for k in runs}
        for _ in range(repeat):  # interleaved
            for k, fn in runs.items():
                t0 = time.perf_counter()
                res = fn()
                best[k] = min(best[k], time.perf_counter() - t0)
                if k == "sdca":
                    out[f"epochs {eps:g}"] = res.n_iter
                    out[f"subopt {eps:g}"] = (res.objective - J_star) / J_star
        out[eps] = best
    return out


def render(rows, alpha, threads):
    lines = [f"# Logistic SDCA: epoch time and time to a certified eps (alpha {alpha:g}, "
             f"{threads} thread{'s' if threads > 1 else ''})", "",
             f"Generated {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC by "
             "benchmarks/logistic_sdca.py; load average at the end "
             f"{os.getloadavg()[0]:.2f}.", "",
             "| data | rows | epoch ms | eps | sdca s (epochs, true rel. subopt.) | newton s | "
             "snapml s | sdca / snapml | sdca / newton |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for eps in EPSILONS:
            b = r[eps]
            snap = b.get("snapml", np.inf)
            lines.append(
                f"| {r['data']} | {r['m']} | {1e3 * r['epoch']:.2f} | {eps:g} | "
                f"{b['sdca']:.4f} ({r[f'epochs {eps:g}']}, {r[f'subopt {eps:g}']:.1e}) | "
                f"{b['newton']:.4f} | {snap:.4f} | {b['sdca'] / snap:.2f} | "
                f"{b['sdca'] / b['newton']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--alpha", type=float, default=1e-4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "logistic_sdca.md"))
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    rows = []
    with threadpool_limits(args.threads):
        for name in args.datasets.split(","):
            rows.append(row(name, args.alpha, args.threads, args.repeat))
            print(render(rows[-1:], args.alpha, args.threads).splitlines()[-1], flush=True)
    text = render(rows, args.alpha, args.threads)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
