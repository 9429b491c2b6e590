"""CoCoA+ rounds against sequential SDCA epochs on the large sparse binary problems (issue 16).

On IMDB bigrams (25,000 x 1.5M tf-idf) and 20 Newsgroups as a binary problem
(comp.* against the rest; the data of ``compare_threads.py``), l2, no
intercept, for the hinge, logistic and squared hinge losses at alpha 1e-4 and
1e-6, in one process:

1. progress per epoch: the certified duality gap after each of the first
   ``--epochs`` epochs (``check_every=1``) of ``sdca`` with ``blocks=1`` (the
   sequential epoch, 1 thread) and ``blocks=2`` (CoCoA+, 2 threads; one epoch
   is one round);
2. wall time to a certified relative gap of 1e-3, best of ``--repeat``,
   interleaved after ``compare_threads.WARMUP`` seconds of untimed rounds of all calls: ``blocks=1`` on 1 thread,
   ``blocks=2`` on 2 threads, and the default ``sdca`` on 2 threads (the size
   rule ``sdca.cocoa_blocks``), with the epochs each took.

    python benchmarks/bench_cocoa.py          # writes benchmarks/results/bench_cocoa.md
"""

import argparse
import datetime
import os
import platform
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import fastrisk as fr  # noqa: E402
from compare_threads import best_times, load  # noqa: E402
from fastrisk.solvers import solve  # noqa: E402

TOL = 1e-3
RUNS = {"1 thread, sequential": (1, 1), "2 threads, CoCoA+ 2 blocks": (2, 2),
        "2 threads, default": (2, None)}


def run(X, y, loss, alpha, n_threads, blocks, **options):
    problem = fr.Problem(X, y, loss=loss, alpha=alpha, fit_intercept=False, n_threads=n_threads)
    return solve(problem, solver="sdca", random_state=0, blocks=blocks, **options)


def progress(X, y, loss, alpha, epochs):
    """name -> certified gaps per epoch (relative to P) of the first ``epochs`` epochs."""
    out = {}
    for name, (n_threads, blocks) in list(RUNS.items())[:2]:
        res = run(X, y, loss, alpha, n_threads, blocks, tol=1e-12, max_iter=epochs,
                  check_every=1)
        h = res.history.as_arrays()
        out[name] = h["bound"] / np.abs(h["objective"])
    return out


def wall_times(X, y, loss, alpha, repeat, time_limit):
    """name -> (best seconds, epochs, status, variant), timed by compare_threads.best_times
    (interleaved, after WARMUP seconds of untimed rounds of every call: an idle second core
    runs slowly for its first fraction of a second)."""
    calls = {name: (lambda nt=nt, b=b: run(X, y, loss, alpha, nt, b, tol=TOL,
                                           max_iter=10 ** 4, time_limit=time_limit))
             for name, (nt, b) in RUNS.items()}
    wall, _ = best_times(calls, repeat)
    out = {}
    for name, call in calls.items():
        res = call()  # the same bits as the timed runs: epochs, status, variant
        out[name] = (wall[name], res.n_iter, res.status, res.extra.get("variant"))
    return out


def render(rows, command, epochs):
    lines = ["# CoCoA+ rounds against sequential SDCA epochs", "", f"Command: `{command}`", "",
             f"Machine: {platform.platform()}, {os.cpu_count()} cores, load average "
             f"{os.getloadavg()[0]:.1f} at the end; "
             f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC.", "",
             f"Certified relative gap (bound / J) after each of the first {epochs} epochs "
             "(CoCoA+: rounds), and the best wall time to a certified relative gap of "
             f"{TOL:g} with its epochs; ratio = time / time of the sequential run.", ""]
    for (data, loss, alpha), (prog, times) in rows.items():
        lines += [f"## {data}, {loss}, alpha {alpha:g}", "", "| run | gap per epoch |",
                  "|---|---|"]
        for name, gaps in prog.items():
            lines.append(f"| {name} | " + " ".join(f"{g:.1e}" for g in gaps) + " |")
        lines += ["", "| run | seconds | epochs | status | variant | ratio |",
                  "|---|---:|---:|---|---|---:|"]
        base = times["1 thread, sequential"][0]
        for name, (t, n_iter, status, variant) in times.items():
            lines.append(f"| {name} | {t:.3f} | {n_iter} | {status} | {variant} | "
                         f"{t / base:.2f} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="imdb,news20")
    parser.add_argument("--losses", default="hinge,logistic,squared_hinge")
    parser.add_argument("--alphas", default="1e-4,1e-6")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bench_cocoa.md"))
    args = parser.parse_args(argv)
    rows = {}
    for data in args.datasets.split(","):
        X, y = load(data)
        for loss in args.losses.split(","):
            for alpha in map(float, args.alphas.split(",")):
                key = (f"{data} ({X.shape[0]} x {X.shape[1]})", loss, alpha)
                rows[key] = (progress(X, y, loss, alpha, args.epochs),
                             wall_times(X, y, loss, alpha, args.repeat, args.time_limit))
                print(render({key: rows[key]}, "", args.epochs), flush=True)
    command = "python benchmarks/bench_cocoa.py " + " ".join(argv or sys.argv[1:])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(render(rows, command.strip(), args.epochs) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
