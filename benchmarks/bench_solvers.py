"""Every solver on a few real problems, grouped by problem (pytest-benchmark).

Each benchmark records the final objective, the certified bound and the
iteration count in ``extra_info``.  Runs are capped by ``time_limit`` so that
the suite stays quick as a smoke test (``--benchmark-disable``, as CI runs
it); there it checks that the solver decreases J from w = 0 and that the
objective it reports is J of the weights it returns.  Each problem runs with the
solvers whose declared capabilities (``SolverInfo.losses`` and ``penalties``) take its
loss and penalty.

    python -m pytest benchmarks/bench_solvers.py --benchmark-group-by=group
"""

import math

import numpy as np
import pytest

import fastrisk as fr
from conftest import load_libsvm

PROBLEMS = {  # group -> (data set, loss, penalty, alpha)
    "a9a hinge l2 1e-4": ("a9a", "hinge", "l2", 1e-4),
    "a9a logistic l2 1e-4": ("a9a", "logistic", "l2", 1e-4),
    "a9a logistic l1 1e-4": ("a9a", "logistic", "l1", 1e-4),
    "reuters hinge l2 1e-4": ("reuters", "hinge", "l2", 1e-4),
    "abalone absolute l2 1e-4": ("abalone", "absolute", "l2", 1e-4),
}
TIME_LIMIT = 1.0  # seconds per run (timed)
SMOKE_TIME_LIMIT = 0.2  # seconds per run with --benchmark-disable
_problems = {}


def _problem(group):
    if group not in _problems:
        name, loss, penalty, alpha = PROBLEMS[group]
        X, y = load_libsvm(name)
        _problems[group] = fr.Problem(X, y, loss=loss, penalty=penalty, alpha=alpha)
    return _problems[group]


def _pairs():
    """(group, solver) for every solver whose capabilities take the group's loss and
    penalty (read from the names, so the data are loaded only by the tests that run)."""
    return [(group, solver) for group, (_, loss, penalty, _) in PROBLEMS.items()
            for solver in sorted(fr.SOLVERS)
            if loss in fr.SOLVERS[solver].losses() and penalty in fr.SOLVERS[solver].penalties()]


@pytest.mark.parametrize("group, solver", _pairs())
def test_solver(benchmark, group, solver):
    problem = _problem(group)
    assert fr.SOLVERS[solver].why_not(problem) is None  # the declared names match the problem
    benchmark.group = group
    time_limit = SMOKE_TIME_LIMIT if benchmark.disabled else TIME_LIMIT
    res = benchmark.pedantic(fr.solve, args=(problem,),
                             kwargs=dict(solver=solver, tol=1e-4, time_limit=time_limit,
                                         random_state=0), rounds=3, iterations=1)
    benchmark.extra_info.update(objective=res.objective, bound=res.gap, n_iter=res.n_iter,
                                status=res.status)
    J0 = problem.objective(np.zeros(problem.n_weights))
    assert math.isfinite(res.objective) and res.objective < J0
    # the reported objective is J of the returned weights (1e-9: summation order only)
    assert res.objective == pytest.approx(problem.objective(res.w), rel=1e-9)
