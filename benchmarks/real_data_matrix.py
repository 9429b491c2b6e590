"""Iterations and seconds to a certified 2e-5 relative gap on the real-data matrix (issues 3, 4).

BMRM, the proximal bundle method, L-BFGS (logistic only) and SDCA (iterations are
epochs, ``random_state=0``) on a9a, w8a and Reuters money-fx, hinge and logistic loss,
l2 penalty, alpha in {1e-4, 1e-6}: the settings the issues ask to match LIBLINEAR to
1e-4 relative.  A certified gap of 2e-5 is what the
tests in tests/ ask for before comparing with LIBLINEAR.  Each run is one process,
one thread for the oracle (``n_threads=1``), capped at ``--time-limit`` seconds; the
table tells which combinations fit a CI test (a few seconds) and how far the others get.
It also gives the iterations and seconds at which the best objective so far first came
within 1e-4 relative of LIBLINEAR's (``tests/reference/liblinear.py``, tol 1e-9), what
the issue asks for, and the best relative distance reached.

    python benchmarks/real_data_matrix.py [--time-limit 60] [--datasets a9a,w8a,reuters]
        [--losses hinge,logistic] [--alphas 1e-4,1e-6] [--solvers bmrm,prox_bundle,lbfgs,sdca]
"""

import argparse
import functools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import numpy as np
from conftest import load_libsvm
from reference.liblinear import liblinear_objective

from fastrisk.problem import Problem
from fastrisk.solvers.bmrm import solve_bmrm
from fastrisk.solvers.lbfgs import solve_lbfgs
from fastrisk.solvers.prox_bundle import solve_prox_bundle
from fastrisk.solvers.sdca import solve_sdca

SOLVERS = {"bmrm": solve_bmrm, "prox_bundle": solve_prox_bundle, "lbfgs": solve_lbfgs,
           "sdca": functools.partial(solve_sdca, random_state=0)}
TOL = 2e-5
CLOSE = 1e-4  # relative distance to LIBLINEAR's objective the issue asks for


def exact_objectives(history):
    """The history's objectives with a certified bound; SDCA logs a running estimate
    of the objective (bound NaN) between its exact checks, which does not count."""
    h = history.as_arrays()
    exact = np.isfinite(h["bound"])
    return h["iteration"][exact], h["seconds"][exact], h["objective"][exact]


def first_within(history, target):
    """(iteration, seconds) at which the best exact objective so far first fell to <= target."""
    iteration, seconds, objective = exact_objectives(history)
    hit = np.flatnonzero(np.minimum.accumulate(objective) <= target)
    if not hit.size:
        return "-"
    k = hit[0]
    return f"{iteration[k]} it, {seconds[k]:.1f} s"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--datasets", default="a9a,w8a,reuters")
    parser.add_argument("--solvers", default="bmrm,prox_bundle,lbfgs")
    parser.add_argument("--losses", default="hinge,logistic")
    parser.add_argument("--alphas", default="1e-4,1e-6")
    args = parser.parse_args()
    print("| data | loss | alpha | solver | status | iterations | seconds | certified gap / J "
          f"| within {CLOSE:g} of LIBLINEAR | best (J - J_lib) / J_lib |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets.split(","):
        X, y = load_libsvm(name)
        for loss in args.losses.split(","):
            for alpha in map(float, args.alphas.split(",")):
                J_lib = liblinear_objective(name, loss, alpha)
                problem = Problem(X, y, loss=loss, alpha=alpha, n_threads=1)
                for solver in args.solvers.split(","):
                    if solver == "lbfgs" and loss == "hinge":
                        continue
                    start = time.perf_counter()
                    res = SOLVERS[solver](problem, tol=TOL, max_iter=100_000,
                                          time_limit=args.time_limit)
                    seconds = time.perf_counter() - start
                    print(f"| {name} | {loss} | {alpha:g} | {solver} | {res.status} | "
                          f"{len(res.history.objective)} | {seconds:.1f} | "
                          f"{res.gap / abs(res.objective):.1e} | "
                          f"{first_within(res.history, J_lib * (1 + CLOSE))} | "
                          f"{(exact_objectives(res.history)[2].min() - J_lib) / J_lib:.1e} |",
                          flush=True)


if __name__ == "__main__":
    main()
