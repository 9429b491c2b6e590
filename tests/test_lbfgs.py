"""L-BFGS on the oracle (Teo et al. 2007 section 4.2) against independent optima.

Random problems: run to a Lemma 5 relative bound of 1e-10 (l2) or until it
stalls (lp, no certificate); the optimum must match scipy on a NumPy
formulation (tests/reference/batch.py) to 1e-6 relative, and
J(w) - bound (= J_-(w), Lemma 5) must not exceed the reference optimum.
"""

import numpy as np
import pytest
from helpers import REL, random_problem
from reference import batch as ref
from reference.liblinear import assert_matches_liblinear, liblinear_objective

from fastrisk.problem import Problem as FRProblem
from fastrisk.solvers import solve
from fastrisk.solvers.lbfgs import solve_lbfgs


def Problem(*args, **kw):
    kw.setdefault("n_threads", 1)
    return FRProblem(*args, **kw)


@pytest.mark.parametrize("loss,task", [("logistic", "binary"), ("squared", "regression"),
                                       ("poisson", "counts"), ("squared_hinge", "binary")])
def test_smooth_l2_matches_reference(loss, task):
    X, y = random_problem(11, task=task)
    res = solve_lbfgs(Problem(X, y, loss=loss, alpha=0.02), tol=1e-10, max_iter=1000)
    J_ref = ref.l2_smooth_optimum(X, y, loss, 0.02)
    assert res.status == "converged"
    assert abs(res.objective - J_ref) <= REL * J_ref
    assert res.objective - res.gap <= J_ref * (1 + 1e-12)  # Lemma 5 lower bound


def test_lp_penalty_matches_reference():
    """lp (p = 1.5) has no certificate: the run ends when L-BFGS-B stalls or hits max_iter."""
    X, y = random_problem(12)
    res = solve_lbfgs(Problem(X, y, loss="logistic", penalty="lp", p=1.5, alpha=0.05),
                      tol=1e-10, max_iter=300)
    assert np.isnan(res.gap) and res.status in ("stalled", "max_iter")
    assert abs(res.objective - ref.lp_smooth_optimum(X, y, "logistic", 0.05, 1.5)) <= REL * \
        res.objective


def test_softmax_vector_loss():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 4))
    y = np.argmax(X @ rng.normal(size=(4, 3)) + 0.5 * rng.normal(size=(60, 3)), axis=1)
    res = solve_lbfgs(Problem(X, y, loss="softmax", alpha=0.05), tol=1e-10)
    J_ref = ref.softmax_l2_optimum(X, y, 3, 0.05)
    assert res.status == "converged" and abs(res.objective - J_ref) <= REL * J_ref


def test_rejects_l1_and_validates():
    X, y = random_problem(1)
    with pytest.raises(ValueError, match="differentiable"):
        solve_lbfgs(Problem(X, y, loss="logistic", penalty="l1"))
    with pytest.raises(ValueError, match="differentiable"):
        solve_lbfgs(Problem(X, y, loss="logistic", penalty="elasticnet", l1_ratio=0.5))
    prob = Problem(X, y, loss="logistic", alpha=1e-3)
    for bad in [dict(memory=0), dict(tol=-1.0), dict(max_iter=0), dict(start=[1.0])]:
        with pytest.raises(ValueError):
            solve_lbfgs(prob, **bad)
    res = solve(prob, solver="lbfgs", tol=0.0, max_iter=4)
    assert res.status == "max_iter" and res.n_iter == 4 and len(res.history) == 5
    assert res.objective == min(res.history.objective)


@pytest.mark.parametrize("name,alpha", [("a9a", 1e-4), ("a9a", 1e-6), ("w8a", 1e-4),
                                        ("reuters", 1e-4), ("reuters", 1e-6)])
def test_real_data_logistic_matches_liblinear(libsvm, name, alpha):
    """Logistic l2 within 1e-4 relative of LIBLINEAR (tol 1e-9); the Lemma 5 bound is never
    below J(w) - J_lib (<= J(w) - J* since J_lib >= J*)."""
    X, y = libsvm(name)
    res = solve_lbfgs(FRProblem(X, y, loss="logistic", alpha=alpha), tol=1e-5, max_iter=5000)
    J_lib = liblinear_objective(name, "logistic", alpha)
    assert_matches_liblinear(res, J_lib)
