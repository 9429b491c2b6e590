"""The l2 grid: time to a certified 1e-3 for fastrisk against the best peer (issue 16).

Grid: data sets x losses x alpha {1e-4, 1e-6}, l2, no intercept; every method minimizes
``J(w) = alpha/2 ||w||^2 + (1/m) sum_i loss(<w, x_i>, y_i)``.  Binary losses {hinge,
logistic, squared_hinge} (the default): squared hinge with the 1/2, so LIBLINEAR's
L2-loss SVM gets C = 1/(2 alpha m), its other problems C = 1/(alpha m); snapml's
regularizer = alpha m; cyanure's lambda_1 = alpha.  Regression losses {squared, huber}
(delta 1), on abalone and housing with their targets and on the binary sets with the
labels as targets: scikit-learn's Ridge gets alpha m, LIBLINEAR's L2-loss SVR with
epsilon 0 (``-s 11`` primal, ``-s 12`` dual) C = 1/(2 alpha m), snapml's
LinearRegression regularizer = alpha m, cyanure's lambda_1 = alpha; for Huber,
scikit-learn's SGDRegressor (its ``huber`` loss is this one; HuberRegressor fits a
scale too, another objective).  Poisson (``--losses poisson``, on the sets with
counts: abalone's rings, housing's values, the star ratings of the IMDB reviews on their
bigrams, ``imdb_ratings``): scikit-learn's PoissonRegressor (half its deviance is this
loss plus a constant) gets alpha; its newton-cholesky solver (a dense Hessian of
n_features^2) only where there are fewer features than samples.  J is always computed by fastrisk on
the method's weights, and a peer whose objective differs in scale never reaches the
target.

Per row, in one process, one method after another:

* a reference run (Newton at tol 1e-9 for smooth losses, SDCA at tol 1e-6
  for hinge, within ``--ref-limit`` seconds); J_best is the smallest J any run
  reached and the target is J_best (1 + 1e-3);
* fastrisk: ``solver="auto"`` (``fastrisk.solve``, with its probe; "auto picks" names
  the solver that finished) and each applicable solver at ``tol=1e-3`` (``sdca``: its
  defaults; ``sdca-acc``: sdca with ``accelerated=True``)
  (their own certificate stops them); the time is the run's wall time, and the
  true relative suboptimality it returned is reported next to it;
* peers (scikit-learn LinearSVC / LogisticRegression with liblinear, lbfgs,
  newton-cg, saga, Ridge, SGDRegressor; snapml; cyanure; liblinear-official): each run from
  scratch with a tightening tolerance (or growing iteration count) until its
  J reaches the target, then with the quarter steps before that budget
  (compare_peers.tighten); its time is the wall time of the first budget that
  reaches the target (no certificate is asked of the peers).

Ratio = fastrisk time / best peer time (best of ``--repeat`` runs each; runs
longer than ``--repeat-below`` seconds are not repeated).
``--threads`` sets fastrisk's n_threads and the peers' thread counts; BLAS
pools are limited to the same count (threadpoolctl).

Budget: a run stops at ``--budget`` seconds (a peer's tightening sequence ends
after a run that took longer), the reference at ``--ref-limit``; rows not
started within ``--max-minutes`` of the start are listed as not run.  The
standard invocations (at most about 10 minutes each on a quiet 2-core machine)
write benchmarks/results/compare_binary_1thread.md and compare_binary_2threads.md
(the six smaller data sets), compare_binary_imdb_1thread.md and
compare_binary_imdb_2threads.md (IMDB bigrams, the grid's large problem, on its
own so that each run stays within its time):

    python benchmarks/compare_binary.py
    python benchmarks/compare_binary.py --threads 2
    python benchmarks/compare_binary.py --datasets imdb --threads 1 --out benchmarks/results/compare_binary_imdb_1thread.md
    python benchmarks/compare_binary.py --datasets imdb --threads 2 --out benchmarks/results/compare_binary_imdb_2threads.md
    python benchmarks/compare_binary.py --datasets abalone,housing,reuters,a9a,w8a,ijcnn1 --losses squared,huber,poisson --out benchmarks/results/compare_regression.md
    python benchmarks/compare_binary.py --datasets imdb_ratings --losses poisson --budget 60 --ref-limit 60 --max-minutes 30 --out benchmarks/results/compare_counts_imdb.md
"""

import argparse
import datetime
import math
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastrisk.losses import LOSSES as LOSS_SPECS  # noqa: E402
from fastrisk.problem import Problem  # noqa: E402
from fastrisk.solvers import get_solver, solve  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from compare_peers import TOLS, iteration_grid, tighten, time_to  # noqa: E402

DATASETS = ("a9a", "w8a", "ijcnn1", "reuters", "phishing", "mushrooms")
LOSSES = ("hinge", "logistic", "squared_hinge")
ALPHAS = (1e-4, 1e-6)
EPS = 1e-3
ITERS = iteration_grid(2, 14)


REGRESSION_SETS = ("abalone", "housing", "imdb_ratings")  # real targets, kept as they are


def load(name):
    from conftest import load_dataset

    X, y = load_dataset(name)
    return X, (y if name in REGRESSION_SETS else np.where(y == np.max(y), 1.0, -1.0))


# ---- peers: name -> (fit(budget index) -> w, number of budgets) ------------------------------


def peers(loss, alpha, m, d, threads):
    from sklearn.linear_model import LogisticRegression, PoissonRegressor, Ridge, SGDRegressor
    from sklearn.svm import LinearSVC

    C = 1.0 / (alpha * m)
    out = {}

    def sk(make):
        return lambda X, y, i: make(i).fit(X, y).coef_.ravel()

    if loss in ("hinge", "squared_hinge"):
        Csvm = C if loss == "hinge" else C / 2
        out["LinearSVC dual"] = (sk(lambda i: LinearSVC(
            loss=loss, dual=True, C=Csvm, tol=TOLS[i], max_iter=1_000_000,
            fit_intercept=False, random_state=0)), len(TOLS))
        if loss == "squared_hinge":
            out["LinearSVC primal"] = (sk(lambda i: LinearSVC(
                loss=loss, dual=False, C=Csvm, tol=TOLS[i], max_iter=100_000,
                fit_intercept=False, random_state=0)), len(TOLS))
            out["cyanure"] = (_cyanure("sqhinge", alpha, threads), len(TOLS))
        else:
            out["snapml SVM"] = (_snapml_svm(alpha * m, threads), len(TOLS))
        s = {"hinge": [3], "squared_hinge": [1, 2]}[loss]
        for solver in s:
            out[f"liblinear -s {solver}"] = (_liblinear(solver, Csvm), len(TOLS))
    elif loss == "squared":
        for solver in ("cholesky", "sparse_cg", "lsqr", "sag"):
            out[f"Ridge {solver}"] = (sk(lambda i, s=solver: Ridge(
                alpha=alpha * m, solver=s, tol=TOLS[i], fit_intercept=False,
                random_state=0)), 1 if solver == "cholesky" else len(TOLS))
        out["snapml LinReg"] = (_snapml_linreg(alpha * m, threads), len(TOLS))
        out["cyanure"] = (_cyanure_regression(alpha, threads), len(TOLS))
        for solver in (11, 12):
            out[f"liblinear -s {solver}"] = (_liblinear(f"{solver} -p 0", C / 2), len(TOLS))
    elif loss == "poisson":  # half the deviance: this loss plus a constant of y
        for solver in ("lbfgs", "newton-cholesky") if d < m else ("lbfgs",):
            out[f"PoissonRegressor {solver}"] = (sk(lambda i, s=solver: PoissonRegressor(
                alpha=alpha, solver=s, tol=TOLS[i], max_iter=100_000,
                fit_intercept=False)), len(TOLS))
    elif loss == "huber":
        out["SGDRegressor"] = (sk(lambda i: SGDRegressor(
            loss="huber", epsilon=1.0, alpha=alpha, penalty="l2", fit_intercept=False,
            max_iter=ITERS[i], tol=None, random_state=0)), len(ITERS))
    else:
        for solver in ("liblinear", "newton-cg"):
            out[f"LogReg {solver}"] = (sk(lambda i, s=solver: LogisticRegression(
                solver=s, C=C, tol=TOLS[i], max_iter=100_000, fit_intercept=False,
                random_state=0)), len(TOLS))
        for solver in ("lbfgs", "saga"):
            out[f"LogReg {solver}"] = (sk(lambda i, s=solver: LogisticRegression(
                solver=s, C=C, tol=0.0, max_iter=ITERS[i], fit_intercept=False,
                random_state=0)), len(ITERS))
        out["snapml LogReg"] = (_snapml_logreg(alpha * m, threads), len(TOLS))
        out["cyanure"] = (_cyanure("logistic", alpha, threads), len(TOLS))
        for solver in (0, 7):
            out[f"liblinear -s {solver}"] = (_liblinear(solver, C), len(TOLS))
    return out


def _snapml_logreg(reg, threads):
    from snapml import LogisticRegression

    return lambda X, y, i: LogisticRegression(regularizer=reg, tol=TOLS[i], max_iter=100_000,
                                              fit_intercept=False, n_jobs=threads
                                              ).fit(X, y).coef_.ravel()


def _snapml_svm(reg, threads):
    from snapml import SupportVectorMachine

    return lambda X, y, i: SupportVectorMachine(regularizer=reg, tol=TOLS[i], max_iter=100_000,
                                                fit_intercept=False, n_jobs=threads
                                                ).fit(X, y).coef_.ravel()


def _snapml_linreg(reg, threads):
    from snapml import LinearRegression

    return lambda X, y, i: LinearRegression(regularizer=reg, tol=TOLS[i], max_iter=100_000,
                                            fit_intercept=False, n_jobs=threads
                                            ).fit(X, y).coef_.ravel()


def _cyanure_regression(alpha, threads):
    from cyanure.estimators import Regression

    return lambda X, y, i: np.asarray(Regression(
        penalty="l2", lambda_1=alpha, fit_intercept=False, tol=TOLS[i], max_iter=100_000,
        verbose=False, n_threads=threads).fit(X, y).coef_).ravel()


def _cyanure(loss, alpha, threads):
    from cyanure.estimators import Classifier

    return lambda X, y, i: np.asarray(Classifier(
        loss=loss, penalty="l2", lambda_1=alpha, fit_intercept=False, tol=TOLS[i],
        max_iter=100_000, verbose=False, n_threads=threads).fit(X, y).coef_).ravel()


def _liblinear(solver, C):
    from liblinear import liblinearutil as lu

    def fit(X, y, i):
        model = lu.train(lu.problem(y, X), lu.parameter(f"-s {solver} -c {C} -e {TOLS[i]} "
                                                        "-B -1 -q"))
        w = np.array(model.get_decfun()[0])
        return w if model.is_regression_model() or model.get_labels()[0] == 1 else -w

    return fit


# ---- runs ----------------------------------------------------------------------------------


def time_peer(fit, n, problem, X, y, target, budget):
    """(seconds of the first budget whose J <= target, or inf; best J seen), over a
    tightening budget (compare_peers.tighten) whose coarse sequence ends after a run longer
    than ``budget`` or a failed one."""
    def run(i):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            try:
                w = fit(X, y, i)
            except Exception as exc:  # a peer that rejects the setting
                print(f"    peer failed: {exc!r}"[:200], flush=True)
                return math.inf, math.inf
            seconds = time.perf_counter() - start
        return seconds, problem.objective(w)

    points = tighten(run, n, [target], lambda pts: pts[-1][0] > budget)
    seconds = time_to(points, target)
    return (math.inf if seconds is None else seconds), min(J for _, J in points)


def fastrisk_solvers(problem):
    spec = problem.loss.spec
    names = (["sdca", "sdca-acc"] if spec.dual_step else []) + (
        ["lbfgs", "newton"] if spec.smooth else [])
    return {"auto": "auto", **{n: n for n in names}}


def best_of(run, repeat, repeat_below):
    """The fastest of up to ``repeat`` calls of run() -> (seconds, ...); a call that took
    longer than ``repeat_below`` seconds is not repeated."""
    best = run()
    for _ in range(repeat - 1):
        if best[0] > repeat_below:
            break
        best = min(best, run(), key=lambda r: r[0])
    return best


def run_fastrisk(make_problem, solver, limit):
    """(wall seconds, Result) of one solve on a Problem built in the timed span (as a peer's
    fit validates its input: compare_peers.timed_solve)."""
    options = dict(tol=EPS, time_limit=limit, max_iter=10 ** 6)
    if solver == "sdca-acc":  # SDCA in the accelerated outer loop (solvers/_catalyst.py)
        solver, options["accelerated"] = "sdca", True
    if solver in ("sdca", "auto"):
        options["random_state"] = 0
    start = time.perf_counter()
    # "auto": with its probe (solvers/auto.py)
    res = solve(make_problem(), solver, **options)
    return time.perf_counter() - start, res


def row(name, X, y, loss, alpha, args):
    threads = args.threads
    def make_problem():
        return Problem(X, y, loss=loss, alpha=alpha, n_threads=threads)

    problem = make_problem()
    ref_solver = "newton" if problem.loss.spec.smooth else "sdca"
    ref = get_solver(ref_solver)(problem, tol=1e-9 if ref_solver == "newton" else 1e-6,
                                 time_limit=args.ref_limit, max_iter=10 ** 6,
                                 **({"random_state": 0} if ref_solver == "sdca" else {}))
    lower = ref.objective - ref.gap
    J_best = ref.objective
    ours = {}
    for label, solver in fastrisk_solvers(problem).items():
        t, res = best_of(lambda: run_fastrisk(make_problem, solver, args.budget), args.repeat,
                         args.repeat_below)
        ours[label] = (t if res.status == "converged" else math.inf, res, solver)
        J_best = min(J_best, res.objective)
    theirs = {}
    target_guess = J_best + EPS * abs(J_best)  # (Poisson J can be negative)
    for pname, (fit, n) in peers(loss, alpha, len(y), X.shape[1], threads).items():
        theirs[pname] = best_of(
            lambda: time_peer(fit, n, problem, X, y, target_guess, args.budget), args.repeat,
            args.repeat_below)
        J_best = min(J_best, theirs[pname][1])
        print(f"    {pname}: {theirs[pname][0]:.3f}s", flush=True)
    return dict(dataset=name, loss=loss, alpha=alpha, ours=ours, theirs=theirs, J_best=J_best,
                lower=lower)


def fmt_row(r):
    best_peer = min(r["theirs"].items(), key=lambda kv: kv[1][0])
    t_auto, res, _ = r["ours"]["auto"]
    solver = (res.solver + ("-acc" if res.extra.get("accelerated") else "")
              + (" after probe" if "probe" in res.extra else ""))
    rel = (res.objective - r["J_best"]) / abs(r["J_best"])
    ours = ", ".join(f"{k} {v[0]:.3f}" for k, v in r["ours"].items() if k != "auto")
    fastest = min((v[0], k) for k, v in r["ours"].items() if k != "auto")
    return (f"| {r['dataset']} | {r['loss']} | {r['alpha']:g} | {solver} | {t_auto:.3f} | "
            f"{rel:.1e} | {best_peer[0]} {best_peer[1][0]:.3f} | "
            f"{t_auto / best_peer[1][0]:.2f} | {fastest[1]} {fastest[0] / best_peer[1][0]:.2f} | "
            f"{ours} |")


HEADER = ("| data | loss | alpha | auto picks | auto s | auto true rel. subopt. at tol 1e-3 | "
          "best peer s | auto / best peer | best fastrisk solver / best peer | "
          "fastrisk solvers s |\n|---|---|---|---|---|---|---|---|---|---|")


def machine():
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",) * 3
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load "
            f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, python {platform.python_version()}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--losses", default=",".join(LOSSES))
    parser.add_argument("--alphas", default=",".join(map(str, ALPHAS)))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--budget", type=float, default=5.0, help="seconds per run")
    parser.add_argument("--ref-limit", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--repeat-below", type=float, default=1.0,
                        help="runs longer than this (seconds) are not repeated")
    parser.add_argument("--max-minutes", type=float, default=9.0,
                        help="rows not started by then are listed as not run")
    parser.add_argument("--out", default=None, help="default: benchmarks/results/"
                        "compare_binary_1thread.md (_2threads.md, ...)")
    args = parser.parse_args(argv)
    if args.out is None:
        suffix = "1thread" if args.threads == 1 else f"{args.threads}threads"
        args.out = str(ROOT / "benchmarks" / "results" / f"compare_binary_{suffix}.md")
    deadline = time.perf_counter() + 60.0 * args.max_minutes
    from threadpoolctl import threadpool_limits

    lines = [f"# compare_binary: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} "
             f"UTC, {args.threads} thread(s)", "",
             "Command: `python benchmarks/compare_binary.py " + " ".join(sys.argv[1:]) + "`", "",
             f"Machine: {machine()}", "", HEADER]
    with threadpool_limits(limits=args.threads):
        for name in args.datasets.split(","):
            X, y = load(name)
            for loss in args.losses.split(","):
                if LOSS_SPECS[loss].task == "counts" and y.min() < 0:
                    continue  # labels, not counts
                for alpha in map(float, args.alphas.split(",")):
                    print(f"{name} {loss} {alpha:g}", flush=True)
                    if time.perf_counter() > deadline:
                        lines.append(f"| {name} | {loss} | {alpha:g} | not run: "
                                     f"--max-minutes {args.max_minutes:g} reached |")
                        continue
                    r = row(name, X, y, loss, alpha, args)
                    lines.append(fmt_row(r))
                    print(lines[-1], flush=True)
                    if args.out:
                        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                        Path(args.out).write_text("\n".join(lines + ["", f"Machine at the end: "
                                                                      f"{machine()}"]) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
