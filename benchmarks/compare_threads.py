"""Threads that pay: fastrisk on 1 thread against 2 on the large binary problems (issue 16).

Two data sets: IMDB bigrams (25,000 x 1.5M tf-idf, positive against negative
reviews) and 20 Newsgroups as a binary problem (11,314 x 130,108 tf-idf, the
five ``comp.*`` groups against the other fifteen).  For each, in one process:

1. the risk oracle (value and gradient, logistic loss, w ~ N(0, 0.01^2)):
   best of ``--repeat`` calls on 1 and on 2 threads, interleaved, after WARMUP
   seconds of calls, wall time and process CPU time (summed over the threads, which
   a busy machine disturbs less), on the path the oracle takes by its rule
   (fastrisk/oracle.py ``use_columns``) and on the other one (``oracle.columns``);
2. hinge and logistic loss, l2, alpha 1e-4, no intercept: every fastrisk
   solver that certifies these problems and runs threads (the registry's
   ``certificate`` and ``threads``), and ``solver="auto"``, to a certified
   relative gap of 1e-3 on 1 thread and on 2 (``n_threads`` of the Problem,
   which every kernel of the solver follows), wall time best of ``--repeat``;
3. SDCA's epoch (hinge, alpha 1e-4, the rows shuffled as in the solver, no
   shrinking): whole rows on 1 thread against the row-split epoch on 2
   (``_sdca.sdca_epoch``'s ``parts``, coordinate ranges of ``sdca._column_bounds``),
   best of interleaved rounds as for the oracle, with the rule's choice
   (``sdca.split_parts``).

Solver runs are repeated ``--repeat`` times (3) unless one takes longer than
REPEAT_BELOW seconds.  A BLAS call leaves its pool's threads spinning for about
0.1 s; on two cores they take a core from the threads of the next parallel run,
and SDCA's row-split epochs, which wait for each other at every row, suffer
most: the best of the repeats measures the solvers, not the previous run.

The summary row of each problem compares the fastest 2-thread run with the
fastest 1-thread run: the claim to check is that the parallel solvers on 2
threads beat the best single-thread solver.

    python benchmarks/compare_threads.py              # writes benchmarks/results/compare_threads.md
    python benchmarks/compare_threads.py --losses ''  # the oracle only
"""

import argparse
import datetime
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import fastrisk as fr  # noqa: E402
from fastrisk.solvers import choose_solver, solve, solvers_for  # noqa: E402

ALPHA, TOL = 1e-4, 1e-3
REPEAT_BELOW = 2.0  # seconds: longer solver runs are not repeated
LOSSES = ("hinge", "logistic")


def load(name):
    from conftest import load_20news, load_imdb_bigrams

    if name == "imdb":
        X, y = load_imdb_bigrams()
        return X, np.where(y == np.max(y), 1.0, -1.0)
    X, labels = load_20news()
    return X, np.where((labels >= 1) & (labels <= 5), 1.0, -1.0)   # comp.* groups: 1..5


# timing starts after WARMUP seconds of calls: a core that has been idle takes a while
# to reach full speed, which the first calls of a 2-thread run would otherwise measure
WARMUP = 2.0


def best_times(calls, repeat, warmup=WARMUP):
    """(wall, process CPU): the best of ``repeat`` interleaved rounds of ``calls`` (name ->
    function), seconds per name, after ``warmup`` seconds of untimed rounds."""
    end = time.perf_counter() + warmup
    while time.perf_counter() < end:
        for call in calls.values():
            call()
    wall, cpu = dict.fromkeys(calls, np.inf), dict.fromkeys(calls, np.inf)
    for _ in range(repeat):
        for name, call in calls.items():
            t, c = time.perf_counter(), time.process_time()
            call()
            wall[name] = min(wall[name], time.perf_counter() - t)
            cpu[name] = min(cpu[name], time.process_time() - c)
    return wall, cpu


def oracle_times(X, y, repeat):
    """({(path, threads): wall}, {(path, threads): CPU}, {threads: the rule's path}) for
    the paths "rows" and "columns" of X^T g, each forced with ``oracle.columns``."""
    calls, rule = {}, {}
    w = None
    for n in (1, 2):
        for path in ("rows", "columns"):
            p = fr.Problem(X, y, loss="logistic", alpha=ALPHA, fit_intercept=False, n_threads=n)
            rule[n] = "columns" if p.oracle.uses_columns() else "rows"
            p.oracle.columns = path == "columns"
            if w is None:
                w = np.random.default_rng(0).normal(scale=0.01, size=p.n_weights)
            calls[path, n] = lambda p=p: p.oracle(w)
    wall, cpu = best_times(calls, repeat)
    return wall, cpu, rule


def epoch_times(X, y, repeat):
    """({"whole rows, 1 thread": wall, "row-split, 2 threads": wall}, the rule's parts on
    2 threads, stored entries per row): one SDCA epoch each, on states of their own."""
    from fastrisk import _sdca
    from fastrisk.config import single_threaded_blas
    from fastrisk.solvers.sdca import _SDCA, _column_bounds, split_parts

    calls = {}
    for label, n in (("whole rows, 1 thread", 1), ("row-split, 2 threads", 2)):
        p = fr.Problem(X, y, loss="hinge", alpha=ALPHA, fit_intercept=False, n_threads=n)
        with single_threaded_blas():  # as in the solver (see the module docstring)
            s = _SDCA(p, batch_size=1, variant="safe", n_threads=n, start=None,
                      shrinking=False, seed=0, blocks=1)
        parts = _column_bounds(p.data, 2) if n == 2 else None
        calls[label] = lambda p=p, s=s, parts=parts: _sdca.sdca_epoch(
            *s.rows, p.y, s.c_arg, s.sqnorm, s.index, s.n, s.order_state, s.kid, s.p,
            s.lam_n, 0.0, s.u, s.v, s.row_loss, s.row_dual, s.sums, False, s.pg,
            parts=parts)
    wall, _ = best_times(calls, repeat)
    rule, _ = split_parts(p.data, 2)
    return wall, 1 if rule is None else len(rule) - 1, p.data.nnz / p.n_samples


def solver_times(X, y, loss, repeat, time_limit):
    rows = {}
    for n in (1, 2):
        def make_problem(n=n):
            return fr.Problem(X, y, loss=loss, alpha=ALPHA, fit_intercept=False, n_threads=n)

        problem = make_problem()
        names = ["auto"] + [i.name for i in solvers_for(problem) if i.certificate and i.threads]
        for name in names:
            best, status = np.inf, None
            for r in range(repeat):
                if r > 0 and best > REPEAT_BELOW:
                    break
                opts = dict(tol=TOL, time_limit=time_limit)
                if name != "auto":
                    opts["max_iter"] = 10 ** 6
                # the Problem in the timed span, as in compare_peers.timed_solve: every run
                # pays for its validation and for the copies a solve keeps on it
                start = time.perf_counter()
                res = solve(make_problem(), solver=name, **opts)
                best, status = min(best, time.perf_counter() - start), res.status
            label = f"auto ({choose_solver(problem)})" if name == "auto" else name
            rows.setdefault(label, {})[n] = (best, status)
    return rows


def render(results, command):
    lines = ["# Threads: 1 against 2 on the large binary problems", "",
             f"Command: `{command}`", "",
             f"Machine: {platform.platform()}, {os.cpu_count()} cores, "
             f"load average {os.getloadavg()[0]:.1f} at the end; "
             f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC.", "",
             "Each time is the best of the repeats, in seconds; a run that did not reach a "
             f"certified relative gap of {TOL:g} shows its status.", ""]
    for (name, shape), ((wall, cpu, rule), epochs, problems) in results.items():
        lines += [f"## {name} ({shape[0]} x {shape[1]})", "",
                  f"Oracle (logistic): the rule's path 1 thread "
                  f"{wall[rule[1], 1] * 1e3:.1f} ms ({rule[1]}), 2 threads "
                  f"{wall[rule[2], 2] * 1e3:.1f} ms ({rule[2]}), speed-up "
                  f"{wall[rule[1], 1] / wall[rule[2], 2]:.2f}.", "",
                  "| X^T g | 1 thread ms | 2 threads ms | speed-up | CPU ms, 1 thread | "
                  "CPU ms, summed over 2 threads |", "|---|---:|---:|---:|---:|---:|"]
        for path in ("rows", "columns"):
            lines.append(f"| {path} | {wall[path, 1] * 1e3:.1f} | {wall[path, 2] * 1e3:.1f} | "
                         f"{wall[path, 1] / wall[path, 2]:.2f} | {cpu[path, 1] * 1e3:.1f} | "
                         f"{cpu[path, 2] * 1e3:.1f} |")
        lines.append("")
        ewall, parts, per_row = epochs
        (l1, t1), (l2, t2) = ewall.items()
        lines += [f"SDCA epoch (hinge, {per_row:.0f} stored entries per row): {l1} "
                  f"{t1 * 1e3:.1f} ms, {l2} {t2 * 1e3:.1f} ms, speed-up {t1 / t2:.2f}; "
                  f"the rule (sdca.split_parts) on 2 threads: "
                  f"{'row-split' if parts > 1 else 'whole rows'}.", ""]
        for loss, rows in problems.items():
            lines += [f"### {loss}, l2, alpha {ALPHA:g}", "",
                      "| solver | 1 thread s | 2 threads s | speed-up |", "|---|---:|---:|---:|"]
            best = {}
            for label, by_n in rows.items():
                cells = []
                for n in (1, 2):
                    t, status = by_n[n]
                    ok = status == "converged"
                    cells.append(f"{t:.2f}" if ok else f"{t:.2f} ({status})")
                    if ok and not label.startswith("auto"):
                        best[n] = min(best.get(n, (np.inf, "")), (t, label))
                speed = by_n[1][0] / by_n[2][0]
                lines.append(f"| {label} | {cells[0]} | {cells[1]} | {speed:.2f} |")
            if 1 in best and 2 in best:
                (t1, s1), (t2, s2) = best[1], best[2]
                lines += ["", f"Fastest on 1 thread: {s1} {t1:.2f} s; fastest on 2 threads: "
                              f"{s2} {t2:.2f} s; ratio 2 threads / 1 thread = {t2 / t1:.2f}."]
            lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="imdb,news20")
    parser.add_argument("--losses", default=",".join(LOSSES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" /
                                             "compare_threads.md"))
    args = parser.parse_args(argv)
    results = {}
    for name in args.datasets.split(","):
        X, y = load(name)
        oracle = oracle_times(X, y, max(15, args.repeat))
        epochs = epoch_times(X, y, max(15, args.repeat))
        problems = {loss: solver_times(X, y, loss, args.repeat, args.time_limit)
                    for loss in args.losses.split(",") if loss}
        results[(name, X.shape)] = (oracle, epochs, problems)
        print(render({(name, X.shape): results[(name, X.shape)]}, ""), flush=True)
    command = "python benchmarks/compare_threads.py " + shlex.join(argv or sys.argv[1:])
    text = render(results, command.strip())
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
