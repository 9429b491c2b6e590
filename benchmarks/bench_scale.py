"""The seed methods at scale and at small alpha (issue 17), side by side in one run.

Sections (all in one process, one after another; the load average is printed
with each, the machine being shared):

1. ``bundle``: BMRM and the proximal bundle method on IMDB unigram+bigram
   tf-idf, m = 2000 rows (a fixed random subset), all ~1.5M columns, hinge,
   alpha = 1e-4, at most 300 iterations (tol = 0: a run stops earlier only when
   its certified gap reaches 0 in floating point): the share of the solver's
   wall time spent in the oracle, with the cuts stored in the sample space (the
   default on these data, bundle bound 200) and as dense rows (the storage for
   oracles without multipliers, bundle bound 22 by the memory rule).
2. ``full``: BMRM and the proximal bundle method on all 25000 IMDB rows to a
   certified relative gap of 1e-3, against LIBLINEAR (scikit-learn's
   ``LinearSVC(loss="hinge", dual=True)``, C = 1 / (alpha m), no intercept,
   default tol) on the same objective: times, objectives and their ratios.
3. ``rda``: p-norm RDA (p = 1.5) against l1-RDA, time per epoch on Reuters
   money-fx (logistic, intercept, lambda 1e-4 and 1e-5, default gamma):
   the marginal epoch (best of 3 of a 3-epoch call minus best of 3 of a 1-epoch
   call, halved), interleaved.
4. ``lp``: BMRM with l1 (LP (11) changed in place) on Reuters, hinge, alpha
   1e-4, 200 iterations: seconds in the LP and HiGHS cold starts.
5. ``pegasos``: the optimistic proximal solver on a9a, hinge, alpha 1e-6,
   30 epochs, 5 row orders, against LIBLINEAR's objective.
The Dask oracle's table (T(1), T(2), bytes per call) is benchmarks/bench_distributed.py's.

Threads: the oracles run on 1 thread and BLAS is limited to 1 thread
(threadpoolctl): with 2 cores shared by many processes, multithreaded BLAS
on vectors of 1.5M entries spends its time waiting for its threads.

Usage (from the repository root):
``PYTHONPATH=. python benchmarks/bench_scale.py [bundle full rda lp pegasos]``;
the report is written to benchmarks/results/bench_scale.txt (regenerated).
"""

import contextlib
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import fastrisk as fr  # noqa: E402
from conftest import load_imdb_bigrams, load_libsvm  # noqa: E402
from fastrisk.solvers import bmrm as bmrm_module  # noqa: E402
from fastrisk.solvers import prox_bundle as prox_module  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "bench_scale.txt"
LINES = []


def say(line=""):
    print(line, flush=True)
    LINES.append(line)


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


class TimedOracle:
    """Wraps problem.oracle's class call to add up its wall time."""

    def __init__(self, oracle):
        self.oracle, self.seconds = oracle, 0.0
        self.cls = type(oracle)
        self.call = self.cls.__call__

    def __enter__(self):
        timer, call = self, self.call

        def timed(obj, w):
            start = time.perf_counter()
            try:
                return call(obj, w)
            finally:
                timer.seconds += time.perf_counter() - start

        self.cls.__call__ = timed
        return self

    def __exit__(self, *exc):
        self.cls.__call__ = self.call


@contextlib.contextmanager
def storage(kind):
    """Force the bundle's cut storage ("dense" or "samples") in both bundle solvers."""
    original = bmrm_module.make_bundle

    def forced(*args, **kw):
        return original(*args, storage=kind, **kw)

    bmrm_module.make_bundle = prox_module.make_bundle = forced
    try:
        yield
    finally:
        bmrm_module.make_bundle = prox_module.make_bundle = original


def imdb(m=None):
    X, y = load_imdb_bigrams()
    if m is not None:
        rows = np.sort(np.random.default_rng(0).permutation(X.shape[0])[:m])
        X, y = X[rows], y[rows]
    return X, y


def section_bundle(iterations=300):
    X, y = imdb(2000)
    prob = fr.Problem(X, y, loss="hinge", alpha=1e-4, n_threads=1)
    say(f"## 1. bundle bookkeeping: IMDB m={X.shape[0]}, n_weights={prob.n_weights}, "
        f"nnz={X.nnz}, hinge, alpha 1e-4, {iterations} iterations (load {load()})")
    say(f"{'solver':12s} {'cuts':8s} {'iter':>5s} {'total s':>8s} {'oracle s':>9s} "
        f"{'oracle %':>9s} {'bundle':>7s} {'J':>10s} {'rel. gap':>9s}")
    for name, solve in (("bmrm", bmrm_module.solve_bmrm),
                        ("prox_bundle", prox_module.solve_prox_bundle)):
        results = {}
        for kind in ("samples", "dense"):
            with storage(kind), TimedOracle(prob.oracle) as timer:
                start = time.perf_counter()
                res = solve(prob, tol=0.0, max_iter=iterations)
                total = time.perf_counter() - start
            results[kind] = res
            say(f"{name:12s} {kind:8s} {res.n_iter:5d} {total:8.2f} {timer.seconds:9.2f} "
                f"{100 * timer.seconds / total:8.1f}% {res.extra['bundle_size']:7d} "
                f"{res.objective:10.6f} {res.gap / res.objective:9.1e}")
    say(f"(load after: {load()})")


def liblinear(X, y, alpha):
    from sklearn.svm import LinearSVC

    C = 1.0 / (alpha * X.shape[0])
    clf = LinearSVC(loss="hinge", dual=True, C=C, fit_intercept=False, max_iter=100000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        clf.fit(X, y)
    return time.perf_counter() - start, clf.coef_.ravel()


def section_full(alpha=1e-4, tol=1e-3):
    X, y = imdb()
    prob = fr.Problem(X, y, loss="hinge", alpha=alpha, n_threads=1)
    say(f"## 2. full IMDB bigrams {X.shape}, hinge, alpha {alpha:g}, certified gap {tol:g} "
        f"(load {load()})")
    t_lib, w_lib = liblinear(X, y, alpha)
    J_lib = prob.objective(w_lib)
    say(f"LIBLINEAR (LinearSVC dual, default tol): {t_lib:.2f} s, J = {J_lib:.6f}")
    for name, solve in (("bmrm", bmrm_module.solve_bmrm),
                        ("prox_bundle", prox_module.solve_prox_bundle)):
        with TimedOracle(prob.oracle) as timer:
            start = time.perf_counter()
            res = solve(prob, tol=tol, max_iter=5000)
            total = time.perf_counter() - start
        say(f"{name:12s} {res.status:9s} {res.n_iter:5d} it {total:8.2f} s "
            f"(oracle {100 * timer.seconds / total:.0f}%), J = {res.objective:.6f} "
            f"(J/J_lib - 1 = {res.objective / J_lib - 1:+.2e}, certified gap "
            f"{res.gap / res.objective:.1e}), time / LIBLINEAR = {total / t_lib:.2f}")
    say(f"(load after: {load()})")


def section_rda(repeats=3):
    from fastrisk.solvers.rda import solve_rda

    X, y = load_libsvm("reuters")
    y = np.where(y > 0, 1.0, -1.0)
    say(f"## 3. p-norm RDA (p = 1.5) vs l1-RDA, Reuters money-fx {X.shape}, logistic "
        f"(load {load()})")
    say(f"{'lambda':>7s} {'l1 epoch ms':>12s} {'p-norm epoch ms':>16s} {'ratio':>6s} "
        f"{'nnz(w) l1':>10s} {'nnz(w) p':>9s}")
    for lam in (1e-4, 1e-5):
        prob = fr.Problem(X, y, loss="logistic", penalty="l1", alpha=lam, fit_intercept=True,
                          n_threads=1)
        times = {None: ([], []), 1.5: ([], [])}
        nnz = {}
        for _ in range(repeats):
            for p in times:
                for epochs, bucket in ((1, 0), (3, 1)):
                    start = time.perf_counter()
                    res = solve_rda(prob, max_iter=epochs, random_state=0, check_every=0,
                                    p_norm=p)
                    times[p][bucket].append(time.perf_counter() - start)
                nnz[p] = int(np.count_nonzero(res.extra["w_last"]))
        epoch = {p: (min(t3) - min(t1)) / 2 for p, (t1, t3) in times.items()}
        say(f"{lam:7.0e} {1e3 * epoch[None]:12.1f} {1e3 * epoch[1.5]:16.1f} "
            f"{epoch[1.5] / epoch[None]:6.2f} {nnz[None]:10d} {nnz[1.5]:9d}")
    say(f"(load after: {load()})")


def section_lp(iterations=200):
    X, y = load_libsvm("reuters")
    prob = fr.Problem(X, y, loss="hinge", penalty="l1", alpha=1e-4, n_threads=1)
    say(f"## 4. BMRM l1 (LP changed in place), Reuters {X.shape}, hinge, alpha 1e-4, "
        f"{iterations} iterations (load {load()})")
    with TimedOracle(prob.oracle) as timer:
        start = time.perf_counter()
        res = bmrm_module.solve_bmrm(prob, tol=0.0, max_iter=iterations)
        total = time.perf_counter() - start
    say(f"total {total:.2f} s, oracle {timer.seconds:.2f} s, LP {res.extra['inner_seconds']:.2f} s"
        f" ({1e3 * res.extra['inner_seconds'] / iterations:.1f} ms per LP), cold starts "
        f"{res.extra['lp_cold_starts']}, bundle {res.extra['bundle_size']}, "
        f"relative gap {res.gap / res.objective:.1e}")


def section_pegasos(seeds=5):
    sys.path.insert(0, str(ROOT / "tests"))
    from reference.liblinear import liblinear_objective

    from fastrisk.solvers.pegasos import solve_optimistic

    X, y = load_libsvm("a9a")
    prob = fr.Problem(X, y, loss="hinge", alpha=1e-6, n_threads=1)
    J_lib = liblinear_objective("a9a", "hinge", 1e-6)
    say(f"## 5. optimistic proximal solver, a9a, hinge, alpha 1e-6, 30 epochs, J_lib = "
        f"{J_lib:.4f} (load {load()})")
    for average in ("tail", "last"):
        res = [solve_optimistic(prob, max_iter=30, random_state=s, tol=0, average=average)
               for s in range(seeds)]
        ratios = [r.objective / J_lib for r in res]
        say(f"average={average}: J/J_lib per seed {np.round(ratios, 4).tolist()}, median "
            f"{np.median(ratios):.4f}, worst {max(ratios):.4f}; "
            f"R {[round(r.extra['R'], 1) for r in res]}")


SECTIONS = {"bundle": section_bundle, "full": section_full, "rda": section_rda,
            "lp": section_lp, "pegasos": section_pegasos}

if __name__ == "__main__":
    names = sys.argv[1:] or list(SECTIONS)
    with threadpool_limits(1, user_api="blas"):
        for name in names:
            SECTIONS[name]()
            say()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(LINES) + "\n")
