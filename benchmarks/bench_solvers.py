"""Every solver on a few real problems, grouped by problem (pytest-benchmark).

Each benchmark records the final objective, the certified bound and the
iteration count in ``extra_info``.  Timed runs are capped by ``time_limit``; as a smoke
test (``--benchmark-disable``, as CI runs it) each run is capped by ``max_iter`` instead,
so that it is short and does the same work on any machine.  Every run is checked against
outside references: the objective it reports is J of the weights it returns, computed in
NumPy, and below J(0); its certified lower bound is at most LIBLINEAR's objective
(tests/reference/liblinear.py) where LIBLINEAR solves the problem (hinge and logistic
with l2, logistic with l1).  Each problem runs with the solvers whose declared
capabilities (``SolverInfo.losses`` and ``penalties``) take its loss and penalty.

    python -m pytest benchmarks/bench_solvers.py --benchmark-group-by=group
"""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import fastrisk as fr
from conftest import load_libsvm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from reference.liblinear import liblinear_objective, objective  # noqa: E402

PROBLEMS = {  # group -> (data set, loss, penalty, alpha)
    "a9a hinge l2 1e-4": ("a9a", "hinge", "l2", 1e-4),
    "a9a logistic l2 1e-4": ("a9a", "logistic", "l2", 1e-4),
    "a9a logistic l1 1e-4": ("a9a", "logistic", "l1", 1e-4),
    "reuters hinge l2 1e-4": ("reuters", "hinge", "l2", 1e-4),
    "abalone absolute l2 1e-4": ("abalone", "absolute", "l2", 1e-4),
}
TIME_LIMIT = 1.0  # seconds per run (timed)
SMOKE_MAX_ITER = 10  # iterations (epochs for the stochastic solvers) with --benchmark-disable
_problems = {}


def _problem(group):
    if group not in _problems:
        name, loss, penalty, alpha = PROBLEMS[group]
        X, y = load_libsvm(name)
        _problems[group] = fr.Problem(X, y, loss=loss, penalty=penalty, alpha=alpha)
    return _problems[group]


def _numpy_objective(group, w):
    """J(w) of the group's problem in plain NumPy (labels -1/+1 for classification; no
    intercept)."""
    name, loss, penalty, alpha = PROBLEMS[group]
    X, y = load_libsvm(name)
    if loss == "absolute":
        return alpha * 0.5 * w @ w + np.abs(X @ w - y).mean()
    return objective(X, np.where(y == np.max(y), 1.0, -1.0), w, loss, alpha, penalty)


def _liblinear(group):
    """LIBLINEAR's objective at tol 1e-9 for the group's problem (cached per process), or
    None where LIBLINEAR does not solve it."""
    name, loss, penalty, alpha = PROBLEMS[group]
    if loss not in ("hinge", "logistic") or (loss, penalty) == ("hinge", "l1"):
        return None
    return liblinear_objective(name, loss, alpha, penalty)


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
    budget = dict(max_iter=SMOKE_MAX_ITER) if benchmark.disabled else dict(time_limit=TIME_LIMIT)
    res = benchmark.pedantic(fr.solve, args=(problem,),
                             kwargs=dict(solver=solver, tol=1e-4, random_state=0, **budget),
                             rounds=3, iterations=1)
    benchmark.extra_info.update(objective=res.objective, bound=res.gap, n_iter=res.n_iter,
                                status=res.status)
    assert problem.n_weights == load_libsvm(PROBLEMS[group][0])[0].shape[1]  # no intercept
    # the reported objective is J of the returned weights in NumPy (1e-9: summation order
    # only), and the run decreased J from w = 0
    assert res.objective == pytest.approx(_numpy_objective(group, res.w), rel=1e-9)
    assert math.isfinite(res.objective)
    assert res.objective < _numpy_objective(group, np.zeros(problem.n_weights))
    # a certified lower bound is at most J* <= LIBLINEAR's objective J_ll (weak duality;
    # 1e-12 relative for the rounding of the bound)
    J_ll = _liblinear(group)
    if J_ll is not None and math.isfinite(res.gap):
        assert res.objective - res.gap <= J_ll * (1 + 1e-12)
    if benchmark.disabled:  # the work bound: converged early, or ran all its iterations
        assert res.status == "converged" or (res.status, res.n_iter) == ("max_iter",
                                                                          SMOKE_MAX_ITER)
