"""Objectives reached by LIBLINEAR through scikit-learn: the outside reference for l2/l1 problems.

With ``C = 1 / (alpha m)`` LIBLINEAR minimizes ``m C`` times our J (no
intercept), so its solution is ours; our squared hinge carries a factor 1/2 that
LIBLINEAR's L2-loss SVM does not, so there ``C = 1 / (2 alpha m)``.  Tolerances are
tight (1e-9 by default).
"""

import functools

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC


def objective(X, y, w, loss, alpha, penalty="l2"):
    """J(w) computed in plain NumPy (labels -1/+1)."""
    f = np.asarray(X @ w).ravel()
    z = y * f
    if loss == "hinge":
        risk = np.maximum(0.0, 1.0 - z).mean()
    elif loss == "squared_hinge":
        risk = 0.5 * (np.maximum(0.0, 1.0 - z) ** 2).mean()
    elif loss == "logistic":
        risk = np.logaddexp(0.0, -z).mean()
    else:
        raise ValueError(loss)
    reg = 0.5 * w @ w if penalty == "l2" else np.abs(w).sum()
    return alpha * reg + risk


def liblinear_solution(X, y, loss, alpha, penalty="l2", tol=1e-9, max_iter=100_000):
    """(w, J(w)) from LIBLINEAR at tight tolerance, labels -1/+1, no intercept."""
    C = 1.0 / (alpha * X.shape[0]) / (2.0 if loss == "squared_hinge" else 1.0)
    if loss in ("hinge", "squared_hinge") and penalty == "l2":
        est = LinearSVC(loss=loss, dual=True, C=C, tol=tol, max_iter=max_iter, fit_intercept=False,
                        random_state=0)
    elif loss == "logistic":
        est = LogisticRegression(solver="liblinear", C=C, tol=tol, max_iter=max_iter,
                                 fit_intercept=False, l1_ratio=1.0 if penalty == "l1" else 0.0)
    else:
        raise ValueError((loss, penalty))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    w = est.coef_.ravel().astype(np.float64)
    return w, objective(X, y, w, loss, alpha, penalty)


@functools.cache
def liblinear_objective(name, loss, alpha, penalty="l2"):
    """Cached LIBLINEAR objective on a ../shared/data set by short name."""
    from conftest import load_libsvm

    X, y = load_libsvm(name)
    y = np.where(y == np.max(y), 1.0, -1.0)
    return liblinear_solution(X, y, loss, alpha, penalty)[1]


def assert_matches_liblinear(res, J_lib):
    """A converged Result within 1e-4 relative of LIBLINEAR's objective J_lib (tol 1e-9),
    with its certified bound never below the true gap: J_lib >= J*, so
    J(w) - J_lib <= J(w) - J* <= gamma (LIBLINEAR's inexactness only loosens this check;
    1e-12 relative allows the rounding of gamma itself)."""
    assert res.status == "converged"
    assert abs(res.objective - J_lib) <= 1e-4 * J_lib
    assert res.objective - J_lib <= res.gap * (1 + 1e-12)
