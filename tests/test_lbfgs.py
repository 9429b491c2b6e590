"""L-BFGS on the oracle (Teo et al. 2007 section 4.2) against independent optima.

Random problems: run to a Lemma 5 relative bound of 1e-10 (l2) or until it
stalls (lp, no certificate); the optimum must match scipy on a NumPy
formulation (tests/reference/batch.py) to 1e-6 relative, and
J(w) - bound (= J_-(w), Lemma 5) must not exceed the reference optimum.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import REL, multiclass_data, random_problem
from reference import batch as ref
from reference.liblinear import assert_matches_liblinear, liblinear_objective
from scipy.optimize import minimize
from sklearn.linear_model import LogisticRegression

from fastrisk.problem import Problem as FRProblem
from fastrisk.solvers import solve
from fastrisk.solvers._diagonal import has_diagonal, hessian_diagonal
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


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_lp_penalty_is_certified_by_the_fenchel_bound(loss):
    """lp (p = 1.5): the Fenchel bound at the gradient certifies the run (tol 1e-8), the
    optimum matches L-BFGS-B's on the smooth problem, and every recorded bound is at
    least J - J* along the run."""
    X, y = random_problem(12)
    J_ref = ref.lp_smooth_optimum(X, y, loss, 0.05, 1.5)
    res = solve_lbfgs(Problem(X, y, loss=loss, penalty="lp", p=1.5, alpha=0.05), tol=1e-8,
                      max_iter=300)
    assert res.status == "converged" and res.gap <= 1e-8 * res.objective
    assert abs(res.objective - J_ref) <= REL * res.objective
    for J, bound in zip(res.history.objective, res.history.bound):
        assert bound >= J - J_ref - 1e-12 * J_ref


def test_softmax_vector_loss():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 4))
    y = np.argmax(X @ rng.normal(size=(4, 3)) + 0.5 * rng.normal(size=(60, 3)), axis=1)
    res = solve_lbfgs(Problem(X, y, loss="softmax", alpha=0.05), tol=1e-10)
    J_ref = ref.softmax_l2_optimum(X, y, 3, 0.05)
    assert res.status == "converged" and abs(res.objective - J_ref) <= REL * J_ref


@pytest.mark.parametrize("loss", ["softmax", "multiclass_hinge"])
def test_vector_loss_runs_feature_major_like_class_major(loss):
    """L-BFGS on W feature-major (the oracle's layout) takes the steps of L-BFGS-B on W
    class-major: scipy run on problem.objective_gradient (class-major) for the same 15
    iterations from the same start (not 0, where the hinge has a kink in every row) ends
    at the same W, to 1e-9 relative (the two only sum the same terms of L-BFGS's inner
    products in another order); coef_ keeps the (k, d) shape."""
    X, y = multiclass_data(m=80, d=7, k=5, seed=8)
    problem = Problem(X, y, loss=loss, alpha=0.01, fit_intercept=True)
    start = np.random.default_rng(9).normal(size=problem.n_weights) * 0.1
    res = solve_lbfgs(problem, tol=0.0, max_iter=15, precondition="none", start=start)
    ref_run = minimize(problem.objective_gradient, start, jac=True,
                       method="L-BFGS-B",
                       options=dict(maxcor=10, maxiter=15, ftol=0.0, gtol=0.0))
    assert res.n_iter == ref_run.nit == 15
    assert res.coef_.shape == (5, 7) and res.intercept_.shape == (5,)
    np.testing.assert_allclose(res.w, ref_run.x, rtol=1e-9, atol=1e-12)
    assert res.objective == pytest.approx(problem.objective(ref_run.x), rel=1e-12)


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_overflowing_iterate_is_a_floating_point_error(loss):
    """With X near the largest double the first step overflows: a FloatingPointError that
    names the solver and the loss, not scipy's error on a non-finite w."""
    X, y = random_problem(1)
    prob = Problem(X * 1e300, y, loss=loss, alpha=1e-2)
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(FloatingPointError, match=f"^lbfgs: a non-finite iterate with the "
                                                      f"{loss} loss"):
            solve_lbfgs(prob)


def test_rejects_l1_and_validates():
    X, y = random_problem(1)
    with pytest.raises(ValueError, match="differentiable"):
        solve_lbfgs(Problem(X, y, loss="logistic", penalty="l1"))
    with pytest.raises(ValueError, match="differentiable"):
        solve_lbfgs(Problem(X, y, loss="logistic", penalty="elasticnet", l1_ratio=0.5))
    prob = Problem(X, y, loss="logistic", alpha=1e-3)
    for bad in [dict(memory=0), dict(tol=-1.0), dict(max_iter=0), dict(start=[1.0])]:
        with pytest.raises(ValueError, match=f"^{next(iter(bad))} must"):
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


# Diagonal scaling (fastrisk/solvers/_diagonal.py): data whose columns differ in scale by
# four orders of magnitude, so that P is far from a multiple of the identity.
def scaled_binary(layout="dense", dtype=np.float64, seed=3):
    X, y = random_problem(seed, m=80, d=7)
    X = X * np.logspace(-2, 2, 7) * (np.random.default_rng(seed).random(X.shape) < 0.6)
    X = X.astype(dtype)
    return (sp.csr_matrix(X) if layout == "csr" else X), y


def scaled_multiclass(layout="dense", dtype=np.float64):
    X, y = multiclass_data(m=120, d=6, k=3, seed=2)
    X = (X * np.logspace(-1.5, 1.5, 6)).astype(dtype)
    return (sp.csr_matrix(X) if layout == "csr" else X), y


def sklearn_optimum(problem, X, y):
    """J at scikit-learn's LogisticRegression optimum (newton-cg to 1e-12: the Newton method
    is not slowed by the column scales), C = 1 / (alpha m), no intercept."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LogisticRegression(C=1.0 / (problem.alpha * X.shape[0]), fit_intercept=False,
                                   solver="newton-cg", tol=1e-12, max_iter=10000).fit(X, y)
    return problem.objective(model.coef_.ravel())


def numpy_diagonal(problem, X, w, c):
    """The Hessian diagonal of J at w from its formula, in NumPy: binary logistic
    (1/m) sum_i c_i s_i (1 - s_i) x_ij^2 + alpha, s_i = sigmoid(f_i); softmax
    (1/m) sum_i c_i p_ic (1 - p_ic) x_ij^2 + alpha per (class c, feature j)."""
    Xb = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    if problem.data.bias:
        Xb = np.hstack([Xb, np.full((Xb.shape[0], 1), problem.data.bias)])
    m = Xb.shape[0]
    if problem.n_classes > 1:
        F = Xb @ w.reshape(problem.n_classes, -1).T
        P = np.exp(F - F.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        return ((c[:, None] * P * (1 - P)).T @ Xb**2 / m + problem.alpha).ravel()
    s = 1.0 / (1.0 + np.exp(-(Xb @ w)))
    return (c * s * (1 - s)) @ Xb**2 / m + problem.alpha


@pytest.mark.parametrize("layout", ["dense", "csr"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("loss", ["logistic", "softmax"])
@pytest.mark.parametrize("point", ["random", "zero"])
def test_diagonal_matches_numpy(layout, dtype, loss, point):
    """P at a random point and at 0 (intercept, sample weights, 2 threads) equals the NumPy
    formula to 1e-12 relative (float64 sums in another order; float32 X is read as the same
    values) and is positive."""
    X, y = (scaled_binary if loss == "logistic" else scaled_multiclass)(layout, dtype)
    rng = np.random.default_rng(1)
    c = rng.uniform(0.5, 2.0, X.shape[0])
    problem = Problem(X, y, loss=loss, alpha=1e-3, sample_weight=c, fit_intercept=True,
                      intercept_scaling=2.0, n_threads=2)
    assert has_diagonal(problem)
    w = rng.normal(size=problem.n_weights) * 0.3 * (point == "random")
    P = hessian_diagonal(problem, w)
    np.testing.assert_allclose(P, numpy_diagonal(problem, X, w, c), rtol=1e-12)
    assert (P >= problem.alpha).all()


def test_diagonal_only_where_defined():
    """Non-smooth and coupled losses, and row-partitioned problems (a Dask oracle's local
    mirror), run unscaled: the same iterates, bit for bit, as precondition="none" (the
    default "sqrt" and "diagonal" alike)."""
    X, y = scaled_binary()
    for problem in (Problem(X, y, loss="hinge", alpha=1e-2),
                    Problem(*scaled_multiclass(), loss="multiclass_hinge", alpha=1e-2),
                    Problem(X, y, loss="logistic", alpha=1e-2, n_partitions=2)):
        assert not has_diagonal(problem)
        a, b, c = (solve_lbfgs(problem, tol=0.0, max_iter=20, precondition=p)
                   for p in ("sqrt", "diagonal", "none"))
        for r in (a, b):
            assert np.array_equal(r.w, c.w)
            assert list(r.history.objective) == list(c.history.objective)


@pytest.mark.parametrize("layout", ["dense", "csr"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("loss", ["logistic", "softmax"])
@pytest.mark.parametrize("precondition", ["sqrt", "diagonal", "none"])
def test_optimum_matches_sklearn(layout, dtype, loss, precondition):
    """With and without the scaling, the certified optimum is scikit-learn's to 1e-6 relative
    in J (REL), the certified lower bound J - gap never exceeds it (rounding slack 1e-12),
    and the reported gap is ||grad J(w)||^2 / (2 alpha) at the returned w in the original
    variables (NumPy gradient, 1e-6 relative: it is a difference of rounded terms)."""
    X, y = (scaled_binary if loss == "logistic" else scaled_multiclass)(layout, dtype)
    problem = Problem(X, y, loss=loss, alpha=1e-3)
    res = solve_lbfgs(problem, tol=1e-10, max_iter=5000, precondition=precondition)
    J_ref = sklearn_optimum(problem, X, y)
    assert res.status == "converged" and abs(res.objective - J_ref) <= REL * J_ref
    assert res.objective - res.gap <= J_ref * (1 + 1e-12)
    _, grad = problem.objective_gradient(res.w)
    assert res.gap == pytest.approx(grad @ grad / (2 * problem.alpha), rel=1e-6)


def test_scaling_saves_iterations():
    """On columns scaled over four orders of magnitude both scalings reach the same
    certified tolerance in fewer iterations (a work count, not a time): the Jacobi scaling
    in less than half, its square root (which leaves P^{1/2} of the spread) in fewer."""
    X, y = scaled_binary(seed=4)
    problem = Problem(X, y, loss="logistic", alpha=1e-4)
    runs = {p: solve_lbfgs(problem, tol=1e-8, max_iter=5000, precondition=p)
            for p in ("sqrt", "diagonal", "none")}
    assert all(r.status == "converged" for r in runs.values())
    assert runs["diagonal"].n_iter < runs["none"].n_iter / 2
    assert runs["sqrt"].n_iter < runs["none"].n_iter


@pytest.mark.parametrize("loss", ["logistic", "softmax"])
def test_scaled_runs_repeat_bits_and_warm_start(loss):
    """Two threads: a rerun gives the same bits; a warm start from a loose run starts at its
    objective and reaches the cold run's optimum in fewer iterations."""
    X, y = (scaled_binary if loss == "logistic" else scaled_multiclass)("csr")
    problem = Problem(X, y, loss=loss, alpha=1e-3, n_threads=2)
    cold, again = (solve_lbfgs(problem, tol=1e-9, max_iter=5000) for _ in range(2))
    assert np.array_equal(cold.w, again.w) and cold.n_iter == again.n_iter
    loose = solve_lbfgs(problem, tol=1e-3)
    warm = solve_lbfgs(problem, tol=1e-9, max_iter=5000, start=loose)
    assert warm.history.objective[0] == loose.objective
    assert warm.status == "converged" and warm.n_iter < cold.n_iter
    assert abs(warm.objective - cold.objective) <= REL * cold.objective


def test_precondition_validated():
    X, y = random_problem(2)
    with pytest.raises(ValueError, match="precondition"):
        solve_lbfgs(Problem(X, y, loss="logistic"), precondition="jacobi")
