"""fastrisk's truncated Newton against LIBLINEAR's primal Newton, step by step (issue 16).

For l2 logistic (LIBLINEAR ``-s 0``) and squared hinge (``-s 2``) on a9a, ijcnn1,
phishing, w8a and Reuters at alpha 1e-6 and 1e-4, no intercept, in one process,
interleaved, best of ``--repeat`` wall times:

* ``newton`` at ``tol=1e-3`` (stopped by its certificate): Newton steps, conjugate-
  gradient iterations (Hessian-vector products, HVPs), seconds in conjugate gradient
  per HVP (the kernel call: products and vector updates), seconds outside it (oracle,
  gradient passes, line search, certificates), the first step whose iterate is within
  1e-3 of J* next to the step that certifies it, and the true relative suboptimality
  returned;
* liblinear-official with the loosest ``-e`` in 1e-1, 1e-2, ... whose solution is within
  1e-3 of J* (no certificate), its Newton steps and CG iterations read from its
  verbose log, and its time (which includes copying the data into LIBLINEAR's format).

J* is J - gap of a newton run at tol 1e-10.  The objective is
``alpha/2 ||w||^2 + (1/m) sum_i loss``: C = 1/(alpha m) for ``-s 0``, 1/(2 alpha m)
for ``-s 2`` (LIBLINEAR's squared hinge has no 1/2).

    python benchmarks/newton_liblinear.py

writes benchmarks/results/newton_liblinear.md (about a minute on a quiet 2-core
machine).
"""

import argparse
import datetime
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastrisk.problem import Problem  # noqa: E402
from fastrisk.solvers import newton  # noqa: E402

ROWS = (("a9a", "logistic"), ("ijcnn1", "logistic"), ("phishing", "logistic"),
        ("w8a", "squared_hinge"), ("w8a", "logistic"), ("reuters", "logistic"))
ALPHAS = (1e-6, 1e-4)
EPS = 1e-3
LIBLINEAR_SOLVER = {"logistic": 0, "squared_hinge": 2}


def load(name):
    from conftest import load_dataset

    X, y = load_dataset(name)
    return X, np.where(y == np.max(y), 1.0, -1.0)


def liblinear_train(prob, solver, C, eps, verbose=False):
    """(model, verbose log or ""): LIBLINEAR prints its log from C, so stdout's file
    descriptor is pointed at a temporary file while it trains."""
    from liblinear import liblinearutil as lu

    param = lu.parameter(f"-s {solver} -c {C} -e {eps} -B -1" + ("" if verbose else " -q"))
    if not verbose:
        return lu.train(prob, param), ""
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+") as log:
        os.dup2(log.fileno(), 1)
        try:
            model = lu.train(prob, param)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        log.seek(0)
        return model, log.read()


def liblinear_weights(model):
    w = np.array(model.get_decfun()[0])
    return w if model.get_labels()[0] == 1 else -w


def timed_newton(problem):
    """(seconds, seconds inside conjugate gradient, result) of one tol=1e-3 run."""
    inside = [0.0]
    solve_cg = newton._steihaug_cg

    def cg(*args, **kwargs):
        start = time.perf_counter()
        out = solve_cg(*args, **kwargs)
        inside[0] += time.perf_counter() - start
        return out

    newton._steihaug_cg = cg
    try:
        start = time.perf_counter()
        res = newton.solve_newton(problem, tol=EPS)
        seconds = time.perf_counter() - start
    finally:
        newton._steihaug_cg = solve_cg
    return seconds, inside[0], res


def row(name, loss, alpha, repeat):
    from liblinear import liblinearutil as lu

    X, y = load(name)
    problem = Problem(X, y, loss=loss, alpha=alpha, n_threads=1)
    ref = newton.solve_newton(problem, tol=1e-10, max_iter=1000)
    J_star = ref.objective - ref.gap
    solver = LIBLINEAR_SOLVER[loss]
    C = 1.0 / (alpha * len(y)) / (2.0 if loss == "squared_hinge" else 1.0)
    prob = lu.problem(y, X)
    for eps in (10.0 ** -k for k in range(1, 10)):
        model, _ = liblinear_train(prob, solver, C, eps)
        if problem.objective(liblinear_weights(model)) <= J_star * (1 + EPS):
            break
    ours, theirs = (math.inf,), math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        liblinear_train(prob, solver, C, eps)
        theirs = min(theirs, time.perf_counter() - start)
        run = timed_newton(problem)
        ours = min(ours, run, key=lambda r: r[0])
    seconds, inside, res = ours
    rel = (np.asarray(res.history.objective) - J_star) / J_star
    first = int(np.argmax(rel <= EPS)) if np.any(rel <= EPS) else None
    _, log = liblinear_train(prob, solver, C, eps, verbose=True)
    cg = [int(part.split()[0]) for part in log.split("CG ")[1:]]
    hvp = res.extra["n_cg"]
    return dict(name=name, loss=loss, alpha=alpha, seconds=seconds, inside=inside,
                steps=res.n_iter, hvp=hvp, first=first,
                rel=(res.objective - J_star) / J_star, status=res.status, theirs=theirs,
                eps=eps, their_steps=len(cg), their_cg=sum(cg))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/newton_liblinear.md"))
    args = parser.parse_args()
    lines = [
        "# newton against LIBLINEAR's Newton (1 thread)", "",
        f"`python benchmarks/newton_liblinear.py --repeat {args.repeat}`, "
        f"{datetime.datetime.now().isoformat(timespec='minutes')}, load "
        f"{os.getloadavg()[0]:.2f}; wall seconds, best of {args.repeat}, interleaved.", "",
        "| problem | newton s | steps | HVPs | ms / HVP | ms outside CG | step within 1e-3 / "
        "certified | true rel. subopt. | liblinear s (-e) | its steps | its CG | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for alpha in ALPHAS:
        for name, loss in ROWS:
            r = row(name, loss, alpha, args.repeat)
            status = "" if r["status"] == "converged" else f" ({r['status']})"
            lines.append(
                f"| {name} {loss} {alpha:g} | {r['seconds']:.4f}{status} | {r['steps']} | "
                f"{r['hvp']} | {1e3 * r['inside'] / max(r['hvp'], 1):.3f} | "
                f"{1e3 * (r['seconds'] - r['inside']):.1f} | {r['first']} / {r['steps']} | "
                f"{r['rel']:.1e} | {r['theirs']:.4f} ({r['eps']:g}) | {r['their_steps']} | "
                f"{r['their_cg']} | {r['seconds'] / r['theirs']:.2f} |")
            print(lines[-1], flush=True)
    lines += ["", "ratio: newton's seconds to a certified 1e-3 over LIBLINEAR's to an "
              "uncertified 1e-3.  ms / HVP: newton's time inside its conjugate-gradient "
              "kernel per Hessian-vector product."]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
