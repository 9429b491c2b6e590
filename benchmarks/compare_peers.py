"""Side by side with scikit-learn: time to reach 1e-2, 1e-3, 1e-4 relative suboptimality.

For each data set and setting (hinge / logistic with l2 at alpha 1e-4 and
1e-6, logistic with l1 at 1e-4; no intercept, so that every method minimizes
the same J(w) = alpha Omega(w) + (1/m) sum_i loss(<w, x_i>, y_i)) this runs,
in one process, one after another:

* every fastrisk solver that supports the setting, once; its trajectory is
  (seconds of its History, exact J of the iterate captured by the callback);
* every peer: LinearSVC (LIBLINEAR dual CD, hinge), LogisticRegression with
  liblinear, lbfgs and saga, SGDClassifier.  Peers expose no trajectory, so
  each is run repeatedly with a growing budget (tighter tol or more
  iterations), timing each run from scratch; each run gives a (seconds,
  J(w)) point computed with fastrisk's objective on the peer's weights.

J_best is the smallest objective any method reached; the time to reach
relative suboptimality eps is the first time a method's J(w) is at most
J_best (1 + eps).  The table reports these times and their ratio to the best
peer's time.  J_best is only as near J* as the methods got: J_lower, the largest
certified lower bound J - gap of fastrisk's runs, is reported next to it (None when
no run has a finite gap), so that a problem no method solved shows a J_best far
above J_lower instead of passing for its optimum.  Multiclass (20 Newsgroups):
fastrisk's softmax / multiclass_hinge against LogisticRegression (multinomial, lbfgs
and saga) and LinearSVC (crammer_singer), with the matching multiclass objectives.

Usage (the full run is long; run subsets):

    python benchmarks/compare_peers.py --datasets a9a,w8a --settings hinge-l2-1e-4 \
        --budget 30 [--plot benchmarks/results/compare_peers.png]

Each problem's result (times, J_best, the command and the machine) is written
to ``benchmarks/results/compare_peers/<data>__<setting>.json``, replacing the
previous result of that problem; ``python benchmarks/report.py`` turns them
into benchmarks/RESULTS.md, and ``python benchmarks/report.py --run`` runs the
standard grid of this script first.
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

import fastrisk as fr
from fastrisk.solvers.auto import choose

sys.path.insert(0, str(ROOT / "benchmarks"))
from report import DATASETS, EPSILONS, RESULTS_DIR, summary, table, write_result  # noqa: E402

SETTINGS = {  # name -> (loss, penalty, alpha)
    "hinge-l2-1e-4": ("hinge", "l2", 1e-4),
    "hinge-l2-1e-6": ("hinge", "l2", 1e-6),
    "logistic-l2-1e-4": ("logistic", "l2", 1e-4),
    "logistic-l2-1e-6": ("logistic", "l2", 1e-6),
    "logistic-l1-1e-4": ("logistic", "l1", 1e-4),
}
MULTICLASS_LOSS = {"hinge": "multiclass_hinge", "logistic": "softmax"}


# ---- data ----------------------------------------------------------------------------------


def load_news20():
    """20 Newsgroups 'bydate' train split as tf-idf (11314 x ~130k, 20 classes), cached."""
    from conftest import load_20news

    return load_20news()


def load_dataset(name):
    from conftest import load_imdb_bigrams, load_libsvm

    if name == "imdb":
        return load_imdb_bigrams()
    if name == "news20":
        return load_news20()
    return load_libsvm(name)


# ---- tightening budgets (every compare_*.py) -----------------------------------------------

# A method without a trajectory is rerun from scratch with a tightening budget: tol 1e-1,
# 1e-2, ... or max_iter 1, 2, 4, ..., with REFINE fine steps per coarse one (a quarter
# decade of tol, a quarter doubling of max_iter).  ``tighten`` runs the coarse budgets
# first and, once one reaches a target, the fine budgets before it, so that a time to eps is
# that of the smallest budget on the fine grid that reaches it (a decade of tol can cost a
# solver several times the seconds: the coarse grid alone would time that whole step).
REFINE = 4
TOLS = [10.0 ** (-k / REFINE) for k in range(REFINE, 9 * REFINE + 1)]  # 1e-1 ... 1e-9


def iteration_grid(low, high):
    """max_iter from 2**low to 2**high, REFINE steps per doubling (rounded: the first
    few may repeat), the powers of 2 at the indices that are multiples of REFINE."""
    return [max(1, round(2.0 ** (k / REFINE))) for k in range(low * REFINE, high * REFINE + 1)]


def tighten(fit, n, targets, stop=lambda points: False):
    """[(seconds, J)] of ``fit(i) -> (seconds, J)`` over budgets i of a fine grid of n.

    The coarse budgets i = 0, REFINE, 2 REFINE, ... run in order until one's J is at
    most every target or ``stop(points so far)``; then for each target reached, the
    fine budgets between the first coarse one that reached it and the coarse one
    before, in order, up to the first that reaches it too.  Each budget runs at most
    once.  With ``time_to`` the time to a target is then the first budget of the fine
    grid that reaches it (J falling as the budget grows)."""
    done = {}

    def run(i):
        if i not in done:
            done[i] = fit(i)
        return done[i]

    for i in range(0, n, REFINE):
        run(i)
        if done[i][1] <= min(targets) or stop([done[j] for j in sorted(done)]):
            break
    for target in targets:
        first = next((i for i in sorted(done) if done[i][1] <= target), None)
        if first is not None:
            for j in range(max(first - REFINE + 1, 0), first):
                if run(j)[1] <= target:
                    break
    return [done[i] for i in sorted(done)]


# ---- peers ---------------------------------------------------------------------------------


def peers(loss, penalty, alpha, m, multiclass):
    """{name: (make(budget_index) -> estimator, n_budgets)} for this setting."""
    from sklearn.linear_model import LogisticRegression, SGDClassifier
    from sklearn.svm import LinearSVC

    C = 1.0 / (alpha * m)
    tols, iters = TOLS, iteration_grid(0, 13)
    out = {}
    l1_ratio = 1.0 if penalty == "l1" else 0.0
    if loss == "hinge":
        if multiclass:
            out["LinearSVC crammer_singer"] = (lambda i: LinearSVC(
                loss="hinge", multi_class="crammer_singer", C=C, tol=tols[i], max_iter=100000,
                fit_intercept=False, random_state=0), len(tols))
        elif penalty == "l2":
            out["LinearSVC (liblinear dual)"] = (lambda i: LinearSVC(
                loss="hinge", dual=True, C=C, tol=tols[i], max_iter=100000,
                fit_intercept=False, random_state=0), len(tols))
    else:
        if not multiclass:
            out["LogReg liblinear"] = (lambda i: LogisticRegression(
                solver="liblinear", l1_ratio=l1_ratio, C=C, tol=tols[i], max_iter=10000,
                fit_intercept=False, random_state=0), len(tols))
        if penalty == "l2":
            out["LogReg lbfgs"] = (lambda i: LogisticRegression(
                solver="lbfgs", C=C, tol=0.0, max_iter=iters[i], fit_intercept=False),
                len(iters))
        out["LogReg saga"] = (lambda i: LogisticRegression(
            solver="saga", l1_ratio=l1_ratio, C=C, tol=0.0, max_iter=iters[i],
            fit_intercept=False, random_state=0), len(iters))
    if not multiclass:
        out["SGDClassifier"] = (lambda i: SGDClassifier(
            loss="hinge" if loss == "hinge" else "log_loss", penalty=penalty, alpha=alpha,
            max_iter=iters[i], tol=None, fit_intercept=False, random_state=0), len(iters))
    return out


def peer_weights(est, problem):
    """Peer's coefficients as a fastrisk weight vector (binary: sign as classes_[1] = +1)."""
    coef = np.asarray(est.coef_, dtype=np.float64)
    return coef.ravel() if problem.n_classes > 1 else coef[0]


def run_peer(make, n_budgets, problem, X, y, budget, targets):
    """[(seconds, J)] over a tightening budget (``tighten``), each run timed from scratch;
    the coarse sequence ends after a run longer than ``budget`` or when J stops changing."""
    def fit(i):
        est = make(i)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            est.fit(X, y)
            seconds = time.perf_counter() - start
        return seconds, problem.objective(peer_weights(est, problem))

    def stop(points):
        return points[-1][0] > budget or (len(points) > 2 and abs(points[-2][1] - points[-1][1])
                                          <= 1e-10 * abs(points[-1][1]))

    return tighten(fit, n_budgets, targets, stop)


def timed_solve(make_problem, solver, **options):
    """(Result, Problem, setup seconds) of ``fr.solve`` on a Problem built in the timed span.

    A peer's fit validates and converts its input on every call; so every timed fastrisk
    run builds its Problem (validation) and pays for the copies a solve keeps on it (the
    column-major copy of X, fastrisk/columns.py), not only the first run.  ``setup`` is
    the wall time outside the solver's History clock (the Problem, the solver's set-up and
    its return; not the callback's time, which that clock also leaves out): added to the
    History's seconds, a trajectory starts where a user's call does."""
    start = time.perf_counter()
    problem = make_problem()
    res = fr.solve(problem, solver=solver, **options)
    h = res.history
    return res, problem, time.perf_counter() - start - h.seconds[-1] - h.callback_seconds


def run_fastrisk(name, make_problem, budget, snapshot_bytes=4e8):
    """[(seconds, J)] of one run (``timed_solve``), J computed exactly after the run.

    A solver's History may hold estimated objectives (SDCA between its exact
    passes), so the iterates are captured by the callback and evaluated afterwards,
    outside the timed run: a copy of w at every ``stride``-th iteration (and the
    first), the stride doubled, and the copies off it dropped, whenever they exceed
    ``snapshot_bytes``.  The iterations kept are evenly spaced over the whole run: a
    solver that runs more iterations within the budget is not seen more coarsely at
    its start.
    """
    problem = make_problem()
    max_snapshots = int(min(4096, max(16, snapshot_bytes // (8 * problem.n_weights))))
    snapshots, stride = [], [1]

    def keep(result_so_far):
        it = result_so_far.n_iter
        if not snapshots or it % stride[0] == 0:
            snapshots.append((it, result_so_far.w.copy()))
        if len(snapshots) > max_snapshots:
            stride[0] *= 2
            snapshots[1:] = [s for s in snapshots[1:] if s[0] % stride[0] == 0]
        return True

    res, problem, setup = timed_solve(make_problem, name, tol=1e-9, max_iter=10**7,
                                      time_limit=budget, random_state=0, callback=keep)
    h = res.history
    seconds = dict(zip(h.iteration, h.seconds))
    points = [(seconds[it] + setup, problem.objective(w)) for it, w in snapshots
              if it in seconds]
    points.append((h.seconds[-1] + setup, problem.objective(res.w)))
    return points, res


# ---- the comparison ------------------------------------------------------------------------


def time_to(points, target):
    """First time at which the objective is <= target, or None."""
    best = math.inf
    for seconds, J in sorted(points):
        best = min(best, J)
        if best <= target:
            return seconds
    return None


def compare(dataset, setting, solvers, budget, log):
    loss, penalty, alpha = SETTINGS[setting]
    X, y = load_dataset(dataset)
    multiclass = len(np.unique(y)) > 2
    floss = MULTICLASS_LOSS[loss] if multiclass else loss
    def make_problem():
        return fr.Problem(X, y, loss=floss, penalty=penalty, alpha=alpha)

    problem = make_problem()
    runs, peer_names, lower = {}, [], -math.inf
    for name in solvers:
        try:
            runs[name], res = run_fastrisk(name, make_problem, budget)
            if math.isfinite(res.gap):
                lower = max(lower, res.objective - res.gap)
            log(f"  {name:26s} {res.status:10s} it {res.n_iter:6d}  {res.history.seconds[-1]:8.2f}s"
                f"  J={runs[name][-1][1]:.10g}")
        except (ImportError, ValueError, NotImplementedError) as exc:
            log(f"  {name:26s} n/a ({str(exc).splitlines()[0][:70]})")
        except Exception as exc:  # a failing solver must not end the whole comparison
            log(f"  {name:26s} FAILED ({type(exc).__name__}: {str(exc).splitlines()[0][:70]})")
    y_fit = y if multiclass else np.where(y == np.unique(y)[1], 1, -1)
    # the peers' targets from the best objective so far (fastrisk's runs): J_best can only
    # be lower, so a refined budget may stop a little short of the final target
    J_so_far = min((min(J for _, J in pts) for pts in runs.values() if pts), default=-math.inf)
    targets = [J_so_far * (1 + eps) for eps in EPSILONS]
    for name, (make, n) in peers(loss, penalty, alpha, X.shape[0], multiclass).items():
        runs[name] = run_peer(make, n, problem, X, y_fit, budget, targets)
        peer_names.append(name)
        s, J = runs[name][-1]
        log(f"  {name:26s} {len(runs[name]):3d} runs, last {s:8.2f}s  J={J:.10g}")
    J_best = min(min(J for _, J in pts) for pts in runs.values() if pts)
    times = {name: [time_to(pts, J_best * (1 + eps)) for eps in EPSILONS]
             for name, pts in runs.items()}
    return dict(dataset=dataset, setting=setting, shape=X.shape, loss=floss, J_best=J_best,
                J_lower=lower if math.isfinite(lower) else None, runs=runs, times=times,
                peers=peer_names, auto=choose(problem))


def machine():
    from fastrisk.config import OPENMP, n_cores

    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import scipy
    import sklearn

    return (f"{platform.platform()}, CPU {cpu}, {n_cores()} cores available; "
            f"Python {platform.python_version()}, numpy {np.__version__}, "
            f"scipy {scipy.__version__}, scikit-learn {sklearn.__version__}, fastrisk "
            f"{fr.__version__} (OpenMP {'on' if OPENMP else 'off'})")


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(results)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 4 * rows), squeeze=False)
    for ax, r in zip(axes.flat, results):
        for name, pts in r["runs"].items():
            if not pts:
                continue
            pts = sorted(pts)
            t = np.array([p[0] for p in pts])
            gap = np.maximum(np.minimum.accumulate([p[1] for p in pts]) - r["J_best"],
                             1e-12) / abs(r["J_best"])
            style = "o--" if name in r["peers"] else "-"
            ax.loglog(np.maximum(t, 1e-3), gap, style, markersize=3, label=name)
        ax.set_title(f"{r['dataset']} {r['setting']}", fontsize=9)
        ax.set_xlabel("seconds")
        ax.set_ylabel("relative suboptimality")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="a9a", help=f"comma list of {','.join(DATASETS)}")
    parser.add_argument("--settings", default=",".join(SETTINGS),
                        help=f"comma list of {','.join(SETTINGS)}")
    parser.add_argument("--solvers", default=",".join(fr.SOLVERS),
                        help="fastrisk solvers (those that do not support a setting are skipped)")
    parser.add_argument("--budget", type=float, default=30.0,
                        help="seconds per method and problem (default 30)")
    parser.add_argument("--results", default=str(RESULTS_DIR),
                        help="directory of the result files (default benchmarks/results)")
    parser.add_argument("--plot", help="convergence plot file (png; keep it under results/)")
    args = parser.parse_args(argv)
    datasets = [d for d in args.datasets.split(",") if d]
    settings = [s for s in args.settings.split(",") if s]
    for d in datasets:
        if d not in DATASETS:
            parser.error(f"--datasets: unknown {d!r}")
    for s in settings:
        if s not in SETTINGS:
            parser.error(f"--settings: unknown {s!r}")
    solvers = [s for s in args.solvers.split(",") if s]
    desc = machine()
    load = round(os.getloadavg()[0], 1) if hasattr(os, "getloadavg") else None
    print(f"{desc}; load average {load}", flush=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python benchmarks/compare_peers.py " + " ".join(
        a for a in (argv if argv is not None else sys.argv[1:]))
    results = []
    for d in datasets:
        for s in settings:
            print(f"{d} {s}", flush=True)
            r = compare(d, s, solvers, args.budget, lambda msg: print(msg, flush=True))
            r.update(budget=args.budget, machine=desc, load=load, date=stamp, command=command)
            results.append(r)
            print(table(r), flush=True)
            print(f"  -> {write_result(args.results, r)}", flush=True)
    if results:
        print(summary(results), flush=True)
    if args.plot and results:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
