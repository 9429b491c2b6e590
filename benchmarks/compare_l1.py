"""l1 problems side by side: time to 1e-3 and 1e-4 relative suboptimality of the same J.

Settings (no intercept anywhere, so every method minimizes exactly
J(w) = alpha ||w||_1 + (1/m) sum_i loss(<w, x_i>, y_i)):

* ``logistic``: l1-logistic at alpha 1e-4 on a9a, w8a, reuters, imdb (bigrams);
  peers: LIBLINEAR through scikit-learn (C = 1/(alpha m)) and liblinear-official
  (``-s 6``), scikit-learn saga, snapml (regularizer = alpha m), skglm
  SparseLogisticRegression (alpha) and cyanure (lambda_1 = alpha);
* ``squared``: l1 least squares on a data set with its -1/+1 labels as targets, alpha
  from ``--lasso-alpha`` (about 200 nonzeros on IMDB bigrams); peers: scikit-learn
  Lasso (alpha: (1/(2m))||y - Xw||^2 + alpha ||w||_1 is fastrisk's J), skglm Lasso;
* ``hinge``: the l1-regularized hinge (the 1-norm SVM) at alpha 1e-4; fastrisk's auto
  (``smoothing``) against BMRM's LP (the other certified solver that takes it) and
  scikit-learn's SGDClassifier (loss="hinge", penalty="l1": the same J; no other peer
  takes it); J* from the linear program itself (scipy's HiGHS, ``hinge_lp``);
* ``path``: 20 alphas from alpha_max down to 1e-4 (l1-logistic), fastrisk.path
  against skglm warm-started along the same grid and LIBLINEAR per alpha, each at
  one tolerance (saga, the slowest peer of the single problems, is left out);
  reported: total seconds and the worst relative suboptimality along the grid
  (against fastrisk's certified optima);
* ``rda``: one pass of l1-RDA at alpha 1e-4, for five row orders (``random_state`` 0-4),
  with Xiao's schedule and adaptive (``adaptive=True``): nonzeros and J against the
  optimum's.

fastrisk runs ``solver="auto"``; its trajectory is the objective of each Newton
iterate (captured by the callback, evaluated after the run), and "certified" is
the first time its duality gap was at most eps J.  Peers expose no trajectory: each
is re-run from scratch with a tighter tolerance or more iterations (decades of tol
or doublings of max_iter, then the quarter steps before the first run that reached
each eps: compare_peers.tighten), and a run's point is (its seconds, J of its
weights).  J* is fastrisk's optimum at tol 1e-10 (or the smallest J any method
reached, if lower).  Every method's runs are
repeated ``--repeat`` times, interleaved, and the best time is kept.

Usage:
    python benchmarks/compare_l1.py
runs the standard plan (``STANDARD``: logistic on a9a, w8a, reuters, imdb; hinge on
a9a, w8a, reuters; squared, path and rda on imdb) with each peer's runs capped at
``--budget`` 5 seconds per repeat; about 12 minutes on two quiet cores.  A part of it:
    python benchmarks/compare_l1.py --datasets a9a,w8a --settings logistic

Writes benchmarks/results/compare_l1.md (regenerated) and prints the command.
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import fastrisk as fr  # noqa: E402
from compare_peers import (TOLS, iteration_grid, load_dataset, machine, tighten,  # noqa: E402
                           time_to, timed_solve)

EPSILONS = (1e-3, 1e-4)
# the standard invocation (no --datasets / --settings): every target of the comparison
STANDARD = [("a9a", "logistic"), ("w8a", "logistic"), ("reuters", "logistic"),
            ("imdb", "logistic"), ("a9a", "hinge"), ("w8a", "hinge"), ("reuters", "hinge"),
            ("imdb", "squared"), ("imdb", "path"), ("imdb", "rda")]
ITERS = iteration_grid(0, 11)
# fastrisk's own run is one run, not a sequence of growing budgets: it gets this limit
# (or --budget, if longer), so that its row shows the time it takes where that is long
AUTO_LIMIT = 60.0


class _LiblinearOfficial:
    """liblinear-official's ``-s 6`` (l1-logistic) behind fit / coef_."""

    def __init__(self, C, eps):
        self.C, self.eps = C, eps

    def fit(self, X, y):
        from liblinear import liblinearutil as ll

        model = ll.train(y, X, f"-s 6 -c {self.C} -e {self.eps} -B -1 -q")
        w = np.array(model.get_decfun()[0])
        self.coef_ = w if model.get_labels()[0] == 1 else -w
        return self


def peers(setting, alpha, m):
    """{name: (make(i) -> estimator, number of budgets)} for a setting."""
    from sklearn.linear_model import Lasso, LogisticRegression

    C = 1.0 / (alpha * m)
    out = {}
    if setting == "logistic":
        import snapml
        from cyanure.estimators import Classifier
        from skglm import SparseLogisticRegression

        out["sklearn liblinear"] = (lambda i: LogisticRegression(
            solver="liblinear", l1_ratio=1.0, C=C, tol=TOLS[i], max_iter=10000,
            fit_intercept=False, random_state=0), len(TOLS))
        out["liblinear-official"] = (lambda i: _LiblinearOfficial(C, TOLS[i]), len(TOLS))
        out["sklearn saga"] = (lambda i: LogisticRegression(
            solver="saga", l1_ratio=1.0, C=C, tol=0.0, max_iter=ITERS[i],
            fit_intercept=False, random_state=0), len(ITERS))
        out["snapml"] = (lambda i: snapml.LogisticRegression(
            regularizer=alpha * m, penalty="l1", dual=False, fit_intercept=False,
            tol=TOLS[i], max_iter=100000), len(TOLS))
        out["skglm"] = (lambda i: SparseLogisticRegression(
            alpha=alpha, fit_intercept=False, tol=TOLS[i], max_iter=1000), len(TOLS))
        out["cyanure"] = (lambda i: Classifier(
            loss="logistic", penalty="l1", lambda_1=alpha, fit_intercept=False, tol=TOLS[i],
            max_iter=100000, verbose=False), len(TOLS))
    elif setting == "hinge":
        from sklearn.linear_model import SGDClassifier

        out["sklearn SGD"] = (lambda i: SGDClassifier(
            loss="hinge", penalty="l1", alpha=alpha, fit_intercept=False, tol=None,
            max_iter=ITERS[i], random_state=0), len(ITERS))
    else:
        from skglm import Lasso as SkglmLasso

        out["sklearn Lasso"] = (lambda i: Lasso(
            alpha=alpha, fit_intercept=False, tol=TOLS[i], max_iter=100000), len(TOLS))
        out["skglm Lasso"] = (lambda i: SkglmLasso(
            alpha=alpha, fit_intercept=False, tol=TOLS[i], max_iter=1000), len(TOLS))
    return out


class _Bmrm:
    """fastrisk's BMRM (its LP for the l1 term) behind fit / coef_, for the hinge rows."""

    def __init__(self, alpha, max_iter):
        self.alpha, self.max_iter = alpha, max_iter

    def fit(self, X, y):
        problem = fr.Problem(X, y, loss="hinge", penalty="l1", alpha=self.alpha)
        self.coef_ = fr.solve(problem, "bmrm", tol=1e-10, max_iter=self.max_iter).w
        return self


def hinge_lp(X, y, alpha):
    """min (1/m) sum xi_i + alpha sum (p_j + q_j) over xi, p, q >= 0 with
    xi_i >= 1 - y_i <p - q, x_i>: the l1-regularized hinge as a linear program (HiGHS).
    Returns its optimal value."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    m, d = X.shape
    YX = sp.csr_matrix(sp.diags(y) @ sp.csr_matrix(X))
    A = sp.hstack([-sp.identity(m, format="csr"), -YX, YX], format="csr")
    cost = np.concatenate([np.full(m, 1.0 / m), np.full(2 * d, alpha)])
    res = linprog(cost, A_ub=A, b_ub=-np.ones(m), bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(f"hinge_lp: {res.message}")
    return float(res.fun)


def run_peer(make, n, problem, X, y, J_star, budget):
    """[(seconds, J)] over a tightening budget (compare_peers.tighten) for the targets
    J* (1 + eps); its coarse sequence ends once they are reached or after ``budget``
    seconds of runs in all."""
    def fit(i):
        est = make(i)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            est.fit(X, y)
            seconds = time.perf_counter() - start
        return seconds, problem.objective(np.asarray(est.coef_, dtype=np.float64).ravel())

    targets = [J_star * (1 + eps) for eps in EPSILONS]
    return tighten(fit, n, targets, lambda points: sum(s for s, _ in points) > budget)


def run_auto(make_problem, budget):
    """([(seconds, J)], certified seconds per eps, Result) of solver="auto" on a Problem
    built in the timed span (compare_peers.timed_solve)."""
    snaps = []
    res, problem, setup = timed_solve(
        make_problem, "auto", tol=min(EPSILONS) / 10, max_iter=10**6, time_limit=budget,
        callback=lambda r: snaps.append((r.n_iter, r.w.copy())) or True)
    h = res.history
    sec = dict(zip(h.iteration, h.seconds))
    points = [(sec[it] + setup, problem.objective(w)) for it, w in snaps if it in sec]
    points.append((h.seconds[-1] + setup, res.objective))
    certified = [next((s + setup for s, J, b in zip(h.seconds, h.objective, h.bound)
                       if b <= eps * J), None) for eps in EPSILONS]
    return points, certified, res


def _fmt(t):
    return "-" if t is None else f"{t:.3f}"


def compare(dataset, setting, alpha, budget, repeat, log):
    X, y = load_dataset(dataset)
    y = np.where(y == np.unique(y)[1], 1.0, -1.0)
    loss = {"logistic": "logistic", "hinge": "hinge"}.get(setting, "squared")
    def make_problem():
        return fr.Problem(X, y, loss=loss, penalty="l1", alpha=alpha)

    problem = make_problem()
    ref = fr.solve(problem, tol=1e-7 if setting == "hinge" else 1e-10, max_iter=10**6)
    J_star = min(ref.objective, hinge_lp(X, y, alpha)) if setting == "hinge" else ref.objective
    nnz = X.nnz if hasattr(X, "nnz") else X.size
    log(f"{dataset} {setting} alpha={alpha:g}: shape {X.shape}, nnz {nnz}, "
        f"J* = {J_star:.12g} ({ref.solver}: {ref.status}, gap {ref.gap:.2e}), "
        f"{int((ref.w != 0).sum())} nonzeros, auto -> {fr.solvers.choose_solver(problem)}")
    times, certified = {}, None
    peer_list = peers(setting, alpha, X.shape[0])
    if setting == "hinge":
        peer_list["fastrisk bmrm (not a peer)"] = (lambda i: _Bmrm(alpha, ITERS[i]), len(ITERS))
    for _ in range(repeat):
        pts, cert, res = run_auto(make_problem, max(budget, AUTO_LIMIT))
        certified = cert if certified is None else [min(a, b) if a and b else a or b
                                                    for a, b in zip(certified, cert)]
        J_star = min(J_star, min(J for _, J in pts))
        runs = {"fastrisk auto": pts}
        for name, (make, n) in peer_list.items():
            try:
                runs[name] = run_peer(make, n, problem, X, y, J_star, budget)
            except Exception as exc:  # a failing peer must not end the comparison
                log(f"  {name}: FAILED ({type(exc).__name__}: {str(exc)[:80]})")
        for name, pts in runs.items():
            J_star = min(J_star, min(J for _, J in pts))
            times.setdefault(name, []).append(pts)
    best = {}
    for name, all_pts in times.items():
        per_eps = []
        for eps in EPSILONS:
            ts = [time_to(p, J_star * (1 + eps)) for p in all_pts]
            ts = [t for t in ts if t is not None]
            per_eps.append(min(ts) if ts else None)
        best[name] = per_eps
    return dict(dataset=dataset, setting=setting, alpha=alpha, J_star=J_star, best=best,
                certified=certified, nnz=int((ref.w != 0).sum()))


def table(r):
    peers_only = {k: v for k, v in r["best"].items() if not k.startswith("fastrisk")}
    best_peer = [min((v[k] for v in peers_only.values() if v[k] is not None), default=None)
                 for k in range(len(EPSILONS))]
    lines = [f"### {r['dataset']}, {r['setting']}, alpha {r['alpha']:g} "
             f"(J* = {r['J_star']:.10g}, {r['nnz']} nonzeros)", "",
             "| method | " + " | ".join(f"s to {e:g}" for e in EPSILONS) + " | "
             + " | ".join(f"ratio to best peer {e:g}" for e in EPSILONS) + " |",
             "|---" * (1 + 2 * len(EPSILONS)) + "|"]
    for name, ts in r["best"].items():
        ratios = [("-" if t is None or b is None else f"{t / b:.2f}")
                  for t, b in zip(ts, best_peer)]
        lines.append(f"| {name} | " + " | ".join(_fmt(t) for t in ts) + " | "
                     + " | ".join(ratios) + " |")
    ratios = [("-" if t is None or b is None else f"{t / b:.2f}")
              for t, b in zip(r["certified"], best_peer)]
    lines.append("| fastrisk auto, certified gap | " + " | ".join(_fmt(t) for t in r["certified"])
                 + " | " + " | ".join(ratios) + " |")
    return "\n".join(lines) + "\n"


def run_path(dataset, log, n_alphas=20, low=1e-4):
    """Seconds of a warm-started 20-alpha l1-logistic path for fastrisk and the peers."""
    from sklearn.linear_model import LogisticRegression
    from skglm import SparseLogisticRegression

    X, y = load_dataset(dataset)
    y = np.where(y == np.unique(y)[1], 1.0, -1.0)
    m = X.shape[0]
    top = fr.alpha_max(fr.Problem(X, y, loss="logistic", penalty="l1", alpha=1.0))
    alphas = np.geomspace(top, low, n_alphas)
    start = time.perf_counter()
    p = fr.path(X, y, loss="logistic", alphas=alphas, tol=1e-4)
    out = {"fastrisk path (tol 1e-4, certified)": (time.perf_counter() - start, p.objectives)}
    J = p.objectives - p.gaps  # certified lower bounds on J*

    def run(make, warm):
        est, objs, t = None, [], 0.0
        for a in alphas:
            est = make(a) if est is None or not warm else est.set_params(**make.params(a))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s = time.perf_counter()
                est.fit(X, y)
                t += time.perf_counter() - s
            prob = fr.Problem(X, y, loss="logistic", penalty="l1", alpha=a)
            objs.append(prob.objective(np.asarray(est.coef_, dtype=np.float64).ravel()))
        return t, np.array(objs)

    class Make:
        def __init__(self, f, params):
            self.f, self.params = f, params

        def __call__(self, a):
            return self.f(a)

    skglm = Make(lambda a: SparseLogisticRegression(alpha=a, fit_intercept=False, tol=1e-4,
                                                    max_iter=1000, warm_start=True),
                 lambda a: {"alpha": a})
    lib = Make(lambda a: LogisticRegression(solver="liblinear", l1_ratio=1.0, C=1 / (a * m),
                                            tol=1e-4, max_iter=1000, fit_intercept=False),
               lambda a: {"C": 1 / (a * m)})
    out["skglm (warm, tol 1e-4)"] = run(skglm, True)
    out["sklearn liblinear (cold, tol 1e-4)"] = run(lib, False)
    lines = [f"### {dataset}: {n_alphas}-alpha l1-logistic path, {top:.3g} to {low:g}", "",
             "| method | seconds | worst (J - J*) / J* over the grid |", "|---|---|---|"]
    for name, (t, objs) in out.items():
        lines.append(f"| {name} | {t:.2f} | {np.max((objs - J) / J):.1e} |")
    log("\n".join(lines))
    return "\n".join(lines) + "\n"


def run_rda(dataset, log, alpha=1e-4, seeds=range(5)):
    """One pass of l1-RDA per row order, with Xiao's schedule (default gamma) and adaptive
    (default eta): one pass of a stochastic method depends on the order, so each of
    ``seeds`` gets its row."""
    X, y = load_dataset(dataset)
    prob = fr.Problem(X, y, loss="logistic", penalty="l1", alpha=alpha)
    opt = fr.solve(prob, tol=1e-8)
    lines = [f"### {dataset}: one pass of l1-RDA, alpha {alpha:g}\n",
             "| | nonzeros | J | seconds |", "|---|---|---|---|",
             f"| optimum (cd, tol 1e-8) | {int((opt.w != 0).sum())} | {opt.objective:.6g} | - |"]
    for name, options in (("RDA", {}), ("adaptive RDA", {"adaptive": True})):
        for seed in seeds:
            start = time.perf_counter()
            rda = fr.solve(prob, solver="rda", max_iter=1, random_state=seed, **options)
            t = time.perf_counter() - start
            lines.append(f"| {name} one pass, random_state={seed} | {int((rda.w != 0).sum())} "
                         f"| {rda.objective:.6g} ({rda.objective / opt.objective - 1:+.1%}) "
                         f"| {t:.2f} |")
    text = "\n".join(lines) + "\n"
    log(text)
    return text


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", help="comma-separated (default: the standard plan)")
    ap.add_argument("--settings", help="comma-separated (default: the standard plan)")
    ap.add_argument("--alpha", type=float, default=1e-4)
    ap.add_argument("--lasso-alpha", type=float, default=2.2e-4)
    ap.add_argument("--budget", type=float, default=5.0,
                    help="seconds per peer and repeat (its runs with growing budgets)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "compare_l1.md"))
    args = ap.parse_args(argv)
    command = "python benchmarks/compare_l1.py " + " ".join(argv if argv is not None
                                                             else sys.argv[1:])
    print(command, flush=True)
    if args.datasets is None and args.settings is None:
        plan = STANDARD
    else:
        plan = [(d, st) for d in (args.datasets or "a9a,w8a,reuters,imdb").split(",")
                for st in (args.settings or "logistic").split(",")]
    sections = []
    for dataset, setting in plan:
        if setting in ("logistic", "squared", "hinge"):
            alpha = args.lasso_alpha if setting == "squared" else args.alpha
            r = compare(dataset, setting, alpha, args.budget, args.repeat, print)
            sections.append(table(r))
            print(sections[-1], flush=True)
        elif setting == "path":
            sections.append(run_path(dataset, print))
        elif setting == "rda":
            sections.append(run_rda(dataset, print))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        f"# l1 comparison\n\nCommand: `{command}`\n\nMachine: {machine()}; load average at "
        f"the end {os.getloadavg()[0]:.1f}\n\n" + "\n".join(sections))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
