"""Extra peak memory of the binary l2 solvers on IMDB bigrams, as a multiple of the data (issue 16).

Each solver runs in a fresh process (logistic loss, alpha 1e-4, tol 1e-3,
``--threads``, default one; ``--row-path`` sets ``problem.oracle.columns = False``,
the oracle's row path, which holds no column copy of X); tracemalloc records the
peak of the memory that NumPy and Python allocate (the kernels allocate through
NumPy) while the Problem is built and while the solver runs, both above what was
allocated before
(the CSR matrix: data + indices + indptr).

    python benchmarks/memory_binary.py --out benchmarks/results/memory_binary.md
    python benchmarks/memory_binary.py --threads 2 --solvers lbfgs,newton,bmrm,prox_bundle
    (the same with --row-path: the oracle without the column copy)
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLVERS = ("sdca", "lbfgs", "newton", "bmrm")

CHILD = r"""
import json, sys, time, tracemalloc
sys.path[:0] = [{root!r}, {tests!r}]
from conftest import load_imdb_bigrams
X, y = load_imdb_bigrams()
data_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
from fastrisk.problem import Problem
from fastrisk.solvers import get_solver
tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
problem = Problem(X, y, loss="logistic", alpha=1e-4, n_threads={threads})
if {row_path}:
    problem.oracle.columns = False
built, peak_build = tracemalloc.get_traced_memory()
tracemalloc.reset_peak()
start = time.perf_counter()
res = get_solver({solver!r})(problem, tol=1e-3, time_limit={limit}, max_iter=10**6,
                             **({{"random_state": 0}} if {solver!r} == "sdca" else {{}}))
seconds = time.perf_counter() - start
peak_solve = tracemalloc.get_traced_memory()[1]
print(json.dumps(dict(data=data_bytes, build=peak_build - base, problem=built - base,
                      solve=peak_solve - built, seconds=seconds, status=res.status,
                      n_iter=res.n_iter)))
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solvers", default=",".join(SOLVERS))
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--row-path", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    threads = f"{args.threads} thread" + ("s" if args.threads > 1 else "")
    path = ", oracle row path" if args.row_path else ""
    lines = [f"# Extra peak memory on IMDB bigrams (logistic, alpha 1e-4, tol 1e-3, {threads}"
             f"{path})", "",
             "Command: `python benchmarks/memory_binary.py " + " ".join(sys.argv[1:]) + "`", "",
             "| solver | data MiB | Problem build peak MiB (x data) | solve peak MiB (x data) | "
             "total (x data) | status | iterations | seconds |",
             "|---|---|---|---|---|---|---|---|"]
    for solver in args.solvers.split(","):
        code = CHILD.format(root=str(ROOT), tests=str(ROOT / "tests"), solver=solver,
                            limit=args.time_limit, threads=args.threads,
                            row_path=args.row_path)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if out.returncode != 0:
            lines.append(f"| {solver} | failed: {out.stderr.strip().splitlines()[-1][:80]} |")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        mib, d = 2.0 ** 20, r["data"]
        lines.append(f"| {solver} | {d / mib:.0f} | {r['build'] / mib:.0f} ({r['build'] / d:.2f}) "
                     f"| {r['solve'] / mib:.0f} ({r['solve'] / d:.2f}) | "
                     f"{(r['problem'] + r['solve']) / d:.2f} | {r['status']} | {r['n_iter']} | "
                     f"{r['seconds']:.1f} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
