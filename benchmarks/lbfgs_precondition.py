"""L-BFGS with and without its diagonal scaling: iterations and time to a certified tol.

For each case, ``solve(problem, "lbfgs", tol=eps, precondition=p)`` with
p = "none", "sqrt" and "diagonal" (fastrisk/solvers/lbfgs.py), eps = 1e-3 and
1e-4, on ``--threads`` threads: the iterations, the oracle calls, the
seconds (best of ``--repeat`` runs, the variants interleaved in one
process) and the true relative suboptimality of the returned point against
J* (newton for the binary cases, msdca for softmax, to a certified 1e-9
within ``--ref-seconds``; its certified gap is reported).  Cases:

* MNIST test set (10000 x 778, 10 classes), softmax, alpha 1e-4;
* 20 Newsgroups tf-idf (11314 x 130107, 20 classes), softmax, alpha 1e-4 and 1e-6;
* a9a, ijcnn1, w8a, logistic, alpha 1e-6.

Standard invocation (about 5 minutes on a quiet 2-core machine):

    python benchmarks/lbfgs_precondition.py --threads 1 --repeat 3

writes benchmarks/results/lbfgs_precondition.md (regenerated) and prints it.
"""

import argparse
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import fastrisk as fr  # noqa: E402

CASES = {  # name -> (data set, loss, alpha)
    "mnist-softmax-1e-4": ("mnist", "softmax", 1e-4),
    "news20-softmax-1e-4": ("news20", "softmax", 1e-4),
    "news20-softmax-1e-6": ("news20", "softmax", 1e-6),
    "a9a-logistic-1e-6": ("a9a", "logistic", 1e-6),
    "ijcnn1-logistic-1e-6": ("ijcnn1", "logistic", 1e-6),
    "w8a-logistic-1e-6": ("w8a", "logistic", 1e-6),
}
EPSILONS = (1e-3, 1e-4)
VARIANTS = ("none", "sqrt", "diagonal")


def reference(problem, loss, ref_seconds):
    solver = "msdca" if loss == "softmax" else "newton"
    res = fr.solve(problem, solver, tol=1e-9, max_iter=10**6, time_limit=ref_seconds,
                   random_state=0)
    return res.objective, res.gap


def run_case(case, threads, repeat, ref_seconds, log):
    dataset, loss, alpha = CASES[case]
    from conftest import load_dataset

    X, y = load_dataset(dataset)
    problem = fr.Problem(X, y, loss=loss, alpha=alpha, n_threads=threads)
    J_ref, ref_gap = reference(problem, loss, ref_seconds)
    rows = []
    for eps in EPSILONS:
        best = {}
        for _ in range(repeat):
            for p in VARIANTS:  # interleaved: the variants see the same machine load
                start = time.perf_counter()
                res = fr.solve(problem, "lbfgs", tol=eps, max_iter=10**5, precondition=p)
                seconds = time.perf_counter() - start
                if p not in best or seconds < best[p][0]:
                    best[p] = (seconds, res)
        J_star = min([J_ref] + [r.objective for _, r in best.values()])
        for p in VARIANTS:
            seconds, res = best[p]
            rows.append((case, eps, p, res.status, res.n_iter, res.extra["n_evaluations"],
                         seconds, (res.objective - J_star) / J_star))
            log(f"  {case} tol {eps:g} {p:8s} {res.n_iter:5d} it {seconds:7.3f} s")
    return rows, (case, J_ref, ref_gap)


def render(rows, refs, threads, repeat, command):
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    lines = [f"# L-BFGS diagonal scaling: {threads} thread(s), best of {repeat}", "",
             f"`{command}`, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
             f"{platform.node()}, load average at the end {load}.", "",
             "| case | tol | precondition | status | iterations | oracle calls | seconds "
             "| ratio to none | true rel. subopt. |",
             "|---|---:|---|---|---:|---:|---:|---:|---:|"]
    plain = {(r[0], r[1]): r[6] for r in rows if r[2] == "none"}
    for case, eps, p, status, it, nfev, seconds, sub in rows:
        lines.append(f"| {case} | {eps:g} | {p} | {status} | {it} | {nfev} | {seconds:.3f} "
                     f"| {seconds / plain[case, eps]:.2f} | {sub:.2g} |")
    lines += ["", "J* = min(reference, every run); references:"]
    lines += [f"* {case}: J_ref = {J:.12g} (certified gap {gap:.2g})" for case, J, gap in refs]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ref-seconds", type=float, default=60.0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"
                                         / "lbfgs_precondition.md"))
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    rows, refs = [], []
    with threadpool_limits(args.threads):
        for case in args.cases.split(","):
            r, ref = run_case(case, args.threads, args.repeat, args.ref_seconds,
                              lambda s: print(s, file=sys.stderr, flush=True))
            rows += r
            refs.append(ref)
    text = render(rows, refs, args.threads, args.repeat,
                  "python benchmarks/lbfgs_precondition.py " + " ".join(argv or sys.argv[1:]))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
