"""The l1 / elastic-net proximal Newton solver (fastrisk/solvers/cd.py) against LIBLINEAR,
scikit-learn's Lasso / ElasticNet, and scipy's optima of the split form w = u - v
(tests/reference/batch.py) for the other smooth losses."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ElasticNet, Lasso, LogisticRegression

import fastrisk as fr
from fastrisk import _cd, columns
from fastrisk.columns import (COPY_GRAIN, DIRECT_BYTES, MAX_BUCKETS, bucket_shift, column_view,
                              copy_nbytes, transpose)
from fastrisk.data import Dataset
from fastrisk.solvers.cd import bordered, solve_cd
from reference import batch

# Tightest tolerance the certificate reaches reliably: J and D are sums of m terms in double
# precision, so the computed gap has a round-off floor near 1e-11 J, and the line search stalls
# when J(w) stops decreasing in floating point, sometimes before the dual point catches up.
TOL = 1e-9


def _classification(n=200, d=30, seed=0):
    X, y = make_classification(n, d, n_informative=6, random_state=seed)
    return X, y


def _regression(n=150, d=40, seed=0):
    X, y = make_regression(n, d, n_informative=8, noise=5.0, random_state=seed)
    return X, y / np.std(y)


def _liblinear_l1(X, y, alpha, fit_intercept, tol=1e-12):
    # LIBLINEAR minimizes ||w||_1 + C sum log(1 + exp(-y w.x)): J / (alpha m) with C = 1/(alpha m);
    # its intercept is a feature of value intercept_scaling = 1, l1-penalized like fastrisk's
    m = X.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegression(penalty="l1", solver="liblinear", tol=tol, max_iter=100000,
                                 C=1.0 / (alpha * m), fit_intercept=fit_intercept,
                                 intercept_scaling=1.0).fit(X, y)
    w = clf.coef_.ravel()
    return np.append(w, clf.intercept_[0]) if fit_intercept else w


def _liblinear_l2(X, y, alpha, tol=1e-12):
    # 0.5 ||w||^2 + C sum log(1 + exp(-y w.x)) = J / (alpha m) for the l2 penalty
    clf = LogisticRegression(solver="liblinear", tol=tol, max_iter=100000,
                             C=1.0 / (alpha * X.shape[0]), fit_intercept=False).fit(X, y)
    return clf.coef_.ravel()


# the inner solvers: passes over the columns of X_W, or over the Gram matrix of W
INNER = ["columns", "gram"]


@pytest.mark.parametrize("inner", INNER)
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("alpha", [1e-2, 1e-3])
def test_l1_logistic_matches_liblinear(fit_intercept, alpha, inner):
    X, y = _classification()
    prob = fr.Problem(X, y, loss="logistic", penalty="l1", alpha=alpha,
                      fit_intercept=fit_intercept)
    res = solve_cd(prob, tol=TOL, inner=inner)
    assert (res.extra["n_gram"] > 0) == (inner == "gram")
    w_ll = _liblinear_l1(X, y, alpha, fit_intercept)
    J_ll = prob.objective(w_ll)
    assert res.status == "converged"
    # both solved to ~1e-9: the objectives agree to 1e-6 relative (the requirement),
    # fastrisk's never above LIBLINEAR's by more than its certified gap
    assert abs(res.objective - J_ll) <= 1e-6 * J_ll
    assert res.objective <= J_ll + res.gap + 1e-14
    # the supports agree exactly (coefficients far from 0 once nonzero: checked below)
    np.testing.assert_array_equal(res.w != 0, np.abs(w_ll) > 1e-10)
    assert np.abs(res.w[res.w != 0]).min() > 1e-6


def test_restricted_iterations_on_a_wide_problem_match_liblinear():
    # 2000 sparse columns, 120 examples: after the first iteration the working set holds far
    # fewer than RESTRICT of the columns, so the next ones read only that set; the columns
    # left out must re-enter at the certificate iterations: the optimum and support of
    # LIBLINEAR's l1-logistic (both to ~1e-9: objectives to 1e-6 relative; LIBLINEAR's
    # default 1e-12 is slow here) are reached
    rng = np.random.default_rng(3)
    X = sp.random(120, 2000, density=0.02, format="csr", random_state=rng)
    y = np.sign(X @ rng.standard_normal(2000) + 0.1 * rng.standard_normal(120))
    prob = fr.Problem(X, y, loss="logistic", penalty="l1", alpha=2e-3)
    res = solve_cd(prob, tol=TOL)
    assert res.status == "converged" and res.extra["n_restricted"] > 0
    w_ll = _liblinear_l1(X, y, 2e-3, False, tol=1e-9)
    J_ll = prob.objective(w_ll)
    assert abs(res.objective - J_ll) <= 1e-6 * J_ll
    np.testing.assert_array_equal(res.w != 0, np.abs(w_ll) > 1e-10)


@pytest.mark.parametrize("inner", INNER)
@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
def test_squared_loss_matches_sklearn_lasso_and_elastic_net(l1_ratio, inner):
    # sklearn: (1/(2m)) ||y - Xw||^2 + a r ||w||_1 + a (1 - r)/2 ||w||^2; fastrisk's squared
    # loss is 0.5 (f - y)^2 averaged over the rows and elasticnet is r |w|_1 + (1-r)/2 |w|^2:
    # the same J with alpha = a (no intercept on either side)
    X, y = _regression()
    a = 0.05
    penalty = "l1" if l1_ratio == 1.0 else "elasticnet"
    prob = fr.Problem(X, y, loss="squared", penalty=penalty, alpha=a, l1_ratio=l1_ratio)
    res = solve_cd(prob, tol=TOL, inner=inner)
    est = (Lasso(alpha=a, fit_intercept=False, tol=1e-14, max_iter=100000) if l1_ratio == 1.0
           else ElasticNet(alpha=a, l1_ratio=l1_ratio, fit_intercept=False, tol=1e-14,
                           max_iter=100000))
    w_sk = est.fit(X, y).coef_
    J_sk = prob.objective(w_sk)
    assert abs(res.objective - J_sk) <= 1e-6 * J_sk
    np.testing.assert_array_equal(res.w != 0, w_sk != 0)
    assert 0 < (res.w != 0).sum() < X.shape[1]  # a sparse, non-trivial support


CASES = [
    ("logistic", "l1", 1.0, None),
    ("logistic", "elasticnet", 0.5, None),
    ("squared", "l1", 1.0, None),
    ("squared_hinge", "l1", 1.0, None),
    ("smoothed_hinge", "l1", 1.0, 0.5),
    ("huber", "elasticnet", 0.7, 1.0),
    ("poisson", "l1", 1.0, None),
    ("exponential", "l1", 1.0, None),
]


def _data(loss):
    """(X, y) of a CASES loss: -1/+1 labels for the binary ones."""
    if loss in ("squared", "huber"):
        return _regression()
    if loss == "poisson":
        X, _ = _regression()
        X = X / 4.0
        return X, np.random.default_rng(0).poisson(np.exp(X[:, :3].sum(axis=1) * 0.5))
    X, y = _classification()
    return X, np.where(y == 1, 1.0, -1.0)


def _problem(loss, penalty, l1_ratio, param, c=None, fit_intercept=True):
    X, y = _data(loss)
    return fr.Problem(X, y, loss=loss, penalty=penalty, alpha=0.02, l1_ratio=l1_ratio,
                      loss_param=param, sample_weight=c, fit_intercept=fit_intercept)


def _numpy_objective(loss, l1_ratio, param, w, c=None):
    """J(w) of _problem (intercept: the weight of a column of ones, penalized) in NumPy."""
    X, y = _data(loss)
    X = np.c_[X, np.ones(X.shape[0])]
    risk = batch.smooth_loss(loss, X @ w, y, c, param)[0]
    return risk + 0.02 * (l1_ratio * np.abs(w).sum() + 0.5 * (1 - l1_ratio) * w @ w)


def _optimum(loss, l1_ratio, param, c=None):
    """J* of _problem by scipy (tests/reference/batch.py): J at scipy's point, so never below
    the true J* (up to rounding)."""
    X, y = _data(loss)
    return batch.enet_smooth_optimum(np.c_[X, np.ones(X.shape[0])], y, loss, 0.02, l1_ratio,
                                   c=c, param=param)


@pytest.mark.parametrize("loss, penalty, l1_ratio, param", CASES)
def test_certified_gap_is_never_below_the_true_gap(loss, penalty, l1_ratio, param):
    c = np.random.default_rng(1).uniform(0.2, 2.0, 200 if loss not in
                                         ("squared", "huber", "poisson") else 150)
    prob = _problem(loss, penalty, l1_ratio, param, c=c)
    J_star = _optimum(loss, l1_ratio, param, c)  # J_star >= J*: J(w) - J_star <= J(w) - J*
    for max_iter in (1, 2, 3, 5, 8, 12, 100):
        res = solve_cd(prob, tol=TOL, max_iter=max_iter)
        # the reported J(w) is the objective at w (1e-13 J: round-off of two sums of m
        # terms), and the certified gap is at least J(w) - J_star (1e-14 J: round-off of
        # the two objective evaluations)
        assert res.objective == pytest.approx(_numpy_objective(loss, l1_ratio, param, res.w, c),
                                              rel=1e-13, abs=0), max_iter
        assert res.gap >= res.objective - J_star - 1e-14 * J_star, max_iter
    # the last run reached the optimum (converged, or stalled at the round-off floor just
    # before the gap reaches TOL, see TOL), and J_star is that optimum to the same 10 TOL:
    # the check above is sharp
    assert res.status in ("converged", "stalled") and res.gap <= 10 * TOL * res.objective
    assert abs(res.objective - J_star) <= 10 * TOL * J_star


def _logistic_dual_numpy(X, y, u, c, alpha):
    """(D(u), ||X^T (c u / m)||_inf / alpha) for the l1-logistic problem, in NumPy: with
    a = u = l'(f) = -y s, s in [0, 1], l*(a) = s log s + (1 - s) log(1 - s)."""
    m = X.shape[0]
    s = -u * y
    assert np.all((s >= 0) & (s <= 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        conj = np.where(s > 0, s * np.log(s), 0.0) + np.where(s < 1, (1 - s) * np.log1p(-s), 0.0)
    return -float(conj @ c) / m, float(np.abs(X.T @ (c * u)).max() / m) / alpha


@pytest.mark.parametrize("inner", INNER)
@pytest.mark.parametrize("weighted", [False, True])
def test_model_dual_point_certifies_against_liblinear(inner, weighted):
    # the certificate of every run below comes from the dual points of the Newton model
    # and of the warm start (cd.py module docstring) as well as the rescaled residuals
    X, y = _classification()
    alpha, m = 1e-2, X.shape[0]
    c = np.random.default_rng(2).uniform(0.2, 2.0, m) if weighted else np.ones(m)
    prob = fr.Problem(X, y, loss="logistic", penalty="l1", alpha=alpha,
                      sample_weight=c if weighted else None)
    ys = np.where(y == np.unique(y)[1], 1.0, -1.0)
    if weighted:  # LIBLINEAR has no sample weights: scipy's optimum of the split form
        J_ref = batch.enet_smooth_optimum(X, ys, "logistic", alpha, 1.0, c=c)
    else:
        J_ref = prob.objective(_liblinear_l1(X, y, alpha, False, tol=1e-12))
    for tol in (1e-3, 1e-6, TOL):
        res = solve_cd(prob, tol=tol, inner=inner)
        assert res.status == "converged"
        # the dual point and its D recomputed independently: feasible (|X^T v| <= alpha up
        # to round-off), D as reported (to the round-off of two sums of m terms), and a
        # lower bound on J* <= J_ref: J(w) - D >= J(w) - J* (1e-12 J: the accuracy of J_ref)
        D, ratio = _logistic_dual_numpy(X, ys, res.extra["dual"], c, alpha)
        assert ratio <= 1 + 1e-12
        assert abs(D - res.extra["dual_objective"]) <= 1e-13 * abs(D)
        assert D <= J_ref + 1e-12 * J_ref
        assert res.gap >= res.objective - J_ref - 1e-12 * J_ref
        assert res.gap <= tol * res.objective
        # a warm start from the Result keeps its certificate: converged at the first check,
        # whose only pass over the columns rescales the Result's dual point (X^T v, no
        # curvatures): that point certifies w, the derivatives at w are not needed
        passes, column_stats = [], _cd.column_stats
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_cd, "column_stats",
                       lambda *a: passes.append(a[5].shape[0]) or column_stats(*a))
            again = solve_cd(prob, tol=tol, inner=inner, start=res)
        assert again.n_iter == 1 and again.gap <= res.gap + 1e-14 * res.objective
        assert passes == [0]



@pytest.mark.parametrize("check_every", [1, 2])
def test_tight_steps_follow_a_near_step_for_any_check_every(check_every):
    # the model's dual point is taken on the certificate iterations whose previous step also
    # decreased J little (cd.py module docstring): with check_every=2 the iteration before a
    # certificate iteration is not one, and tight steps must still come; a warm start from
    # plain weights (no dual point) counts as such an iterate, so its first step is tight
    X, y = _classification()
    alpha = 1e-2
    prob = fr.Problem(X, y, loss="logistic", penalty="l1", alpha=alpha)
    J_ref = prob.objective(_liblinear_l1(X, y, alpha, False, tol=1e-12))
    res = solve_cd(prob, tol=TOL, check_every=check_every, random_state=0)
    assert res.status == "converged" and res.extra["n_tight"] >= 1
    # the certificate against LIBLINEAR's optimum (1e-12 J: the accuracy of J_ref)
    assert res.gap >= res.objective - J_ref - 1e-12 * J_ref
    assert res.gap <= TOL * res.objective
    # from the weights of a run stopped at tol 1e-3: one tight step certifies TOL
    loose = solve_cd(prob, tol=1e-3, random_state=0)
    again = solve_cd(prob, tol=TOL, start=loose.w.copy(), random_state=0)
    assert again.status == "converged" and again.extra["n_tight"] == 1 and again.n_iter == 2
    assert again.gap >= again.objective - J_ref - 1e-12 * J_ref


def test_sample_weights_equal_repeated_rows_within_the_certificates():
    # integer weights c_i against each row repeated c_i times (weight 0: the row removed):
    # (1/m) sum_i c_i l_i with c averaging 1 is the repeated problem's J, so each solution's
    # objective in the other problem is within the two certified gaps of the other's
    X, y = _classification()
    reps = np.random.default_rng(3).integers(0, 4, X.shape[0])
    c = reps * (X.shape[0] / reps.sum())  # mean 1: the same J as the repeated rows
    weighted = fr.Problem(X, y, loss="logistic", penalty="l1", alpha=1e-2, sample_weight=c)
    repeated = fr.Problem(np.repeat(X, reps, axis=0), np.repeat(y, reps), loss="logistic",
                          penalty="l1", alpha=1e-2)
    a = solve_cd(weighted, tol=1e-10)
    b = solve_cd(repeated, tol=1e-10)
    assert a.status == b.status == "converged"
    slack = a.gap + b.gap + 1e-13 * a.objective  # 1e-13 J: round-off of the sums
    assert abs(weighted.objective(b.w) - a.objective) <= slack
    assert abs(repeated.objective(a.w) - b.objective) <= slack


@pytest.mark.parametrize("loss, penalty, l1_ratio, param",
                         [cs for cs in CASES if cs[0] not in ("poisson", "exponential")])
def test_screening_keeps_every_feature_of_the_optimum(loss, penalty, l1_ratio, param):
    prob = _problem(loss, penalty, l1_ratio, param)
    # the support reference: a run without screening, certified within 10 TOL (see TOL)
    # of scipy's J_star >= J* (J_star - J(w) <= J_star - J*: scipy's error, ~TOL at most)
    ref = solve_cd(prob, tol=TOL, screening=False)
    J_star = _optimum(loss, l1_ratio, param)
    assert ref.gap <= 10 * TOL * ref.objective
    assert -10 * TOL * J_star <= ref.objective - J_star <= ref.gap + 1e-14 * J_star
    # tol 0: the run goes on to the round-off floor (status "stalled" or max_iter), through
    # certificate iterations with gaps as small as they get, the test's hardest case (at
    # tol TOL it may stop on an earlier dual point, before the rule fires)
    res = solve_cd(prob, tol=0.0, max_iter=100, screening=True)
    screened = res.extra["screened"]
    assert screened.dtype == bool and screened.shape == ref.w.shape
    assert screened.sum() == res.extra["n_screened"] > 0  # the rule fired (else the test
    # proves nothing)
    assert not (ref.w[screened] != 0).any()
    np.testing.assert_array_equal(res.w != 0, ref.w != 0)


def _layouts(X):
    X32 = X.astype(np.float32)  # values exactly representable in float32: one problem
    X64 = X32.astype(np.float64)
    S = sp.csr_matrix(X64)
    S64 = sp.csr_matrix((S.data, S.indices.astype(np.int64), S.indptr.astype(np.int64)),
                        shape=S.shape)
    ro = X64.copy()
    ro.flags.writeable = False
    return {"dense64": X64, "dense32": X32, "csr64": S, "csr32": sp.csr_matrix(X32),
            "csr_int64": S64, "readonly": ro}


def test_auto_inner_switches_to_the_gram_matrix_on_collinear_one_hot_columns():
    # a9a-like data: one-hot codes of correlated categorical variables (every row has one
    # nonzero per variable, the columns of a variable sum to 1: collinear with each other),
    # where the inner passes multiply and the Gram matrix of the small working set pays
    rng = np.random.default_rng(0)
    m, n_vars, levels = 3000, 12, 6
    z = rng.normal(size=(m, 1)) + 0.5 * rng.normal(size=(m, n_vars))
    codes = np.clip(((z + 2.0) * levels / 4.0).astype(int), 0, levels - 1)
    X = sp.csr_matrix((np.ones(m * n_vars), (np.repeat(np.arange(m), n_vars),
                                             (codes + levels * np.arange(n_vars)).ravel())),
                      shape=(m, n_vars * levels))
    y = np.where(z[:, 0] + 0.3 * rng.normal(size=m) > 0, 1.0, -1.0)
    prob = fr.Problem(X, y, loss="logistic", penalty="l1", alpha=1e-4, fit_intercept=True)
    auto = solve_cd(prob, tol=TOL, random_state=0)
    cols = solve_cd(prob, tol=TOL, inner="columns", random_state=0)
    assert auto.extra["n_gram"] > 0 and cols.extra["n_gram"] == 0
    # (the column passes may stall at the round-off floor just short of TOL, see TOL)
    assert auto.gap <= 10 * TOL * auto.objective and cols.gap <= 10 * TOL * cols.objective
    # two certified solutions of one problem: each objective within the other's gap, and
    # LIBLINEAR's to 1e-6 relative (the supports need not agree: with the intercept the
    # columns are linearly dependent and the optimum need not be unique)
    assert abs(auto.objective - cols.objective) <= max(auto.gap, cols.gap)
    J_ll = prob.objective(_liblinear_l1(X, y, 1e-4, True))
    assert abs(auto.objective - J_ll) <= 1e-6 * J_ll


def test_newton_steps_on_the_support_converge_on_nearly_collinear_columns():
    # two features near 100 and the intercept (scikit-learn's estimator checks use such
    # data): coordinate descent creeps along the near-null direction of the Hessian; the
    # Gram inner solve's Newton steps on the support reach a certified 1e-8 in a few
    # dozen outer iterations (the column passes alone need over 10^4)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(67, 2)) + 100.0
    y = np.where(rng.uniform(size=67) > 0.5, 1.0, -1.0)
    prob = fr.Problem(X, y, loss="logistic", penalty="l1", alpha=7.6e-5, fit_intercept=True)
    res = solve_cd(prob, tol=1e-8, max_iter=1000, random_state=0)
    assert res.status == "converged" and res.n_iter <= 200 and res.extra["n_gram"] > 0
    J_ll = prob.objective(_liblinear_l1(X, y, 7.6e-5, True))
    assert abs(res.objective - J_ll) <= 1e-6 * J_ll
    assert res.objective <= J_ll + res.gap + 1e-14


@pytest.mark.parametrize("inner", INNER)
def test_layouts_dtypes_and_index_types_give_the_same_solution(inner):
    X, y = _classification()
    X[np.abs(X) < 0.8] = 0.0  # sparse
    sols = {}
    for name, Xl in _layouts(X).items():
        prob = fr.Problem(Xl, y, loss="logistic", penalty="l1", alpha=5e-3, fit_intercept=True)
        res = solve_cd(prob, tol=TOL, inner=inner)
        assert res.status == "converged", name
        sols[name] = res
    J = sols["dense64"].objective
    for name, res in sols.items():
        # each layout's objective is certified within TOL J of J*
        assert abs(res.objective - J) <= TOL * J, name
        np.testing.assert_array_equal(res.w != 0, sols["dense64"].w != 0, err_msg=name)
    if isinstance(_layouts(X)["readonly"], np.ndarray):
        assert not _layouts(X)["readonly"].flags.writeable


def _sparse_with_empty_rows_and_columns(dtype, itype, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((40, 30)) * (rng.random((40, 30)) < 0.2)
    A[[3, 17, 39]] = 0.0     # empty rows, the last one included
    A[:, [0, 11, 29]] = 0.0  # empty columns, the last one included
    X = sp.csr_matrix(A.astype(dtype))
    X.indices, X.indptr = X.indices.astype(itype), X.indptr.astype(itype)
    return X


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("itype", [np.int32, np.int64])
@pytest.mark.parametrize("bias", [0.0, 2.5])
def test_column_view_equals_scipy_csc(dtype, itype, bias):
    # reference: scipy's tocsc of [X, bias column] (row indices sorted in every column)
    X = _sparse_with_empty_rows_and_columns(dtype, itype)
    data = Dataset(X, intercept_scaling=bias)
    assert data.indices.dtype == itype
    A = X if not bias else sp.hstack([X, np.full((40, 1), bias, dtype=dtype)], format="csr")
    C = A.tocsc()
    C.sort_indices()
    cols = column_view(data, n_threads=2)
    assert cols.values.dtype == dtype and cols.indices.dtype == itype and not cols.dense
    np.testing.assert_array_equal(cols.indptr, C.indptr)
    np.testing.assert_array_equal(cols.indices, C.indices)
    np.testing.assert_array_equal(cols.values, C.data)
    # norms summed in double in another order than numpy's: equal to round-off
    ref = np.linalg.norm(A.toarray().astype(np.float64), axis=0)
    np.testing.assert_allclose(cols.norms, ref, rtol=1e-13, atol=0)
    dense = column_view(Dataset(A.toarray()))
    np.testing.assert_array_equal(dense.values, A.toarray().T.ravel())
    np.testing.assert_allclose(dense.norms, ref, rtol=1e-13, atol=0)


def test_column_maxima_equal_numpy():
    X = _sparse_with_empty_rows_and_columns(np.float32, np.int64)
    A = sp.hstack([X, np.full((40, 1), 2.5, dtype=np.float32)], format="csr")
    ref = np.abs(A.toarray().astype(np.float64)).max(axis=0)
    for data in (Dataset(X, intercept_scaling=2.5), Dataset(A.toarray())):
        np.testing.assert_array_equal(column_view(data).maxabs, ref)


@pytest.mark.parametrize("loss,penalty", [("logistic", "l1"), ("logistic", "l2"),
                                          ("squared", "l1")])
def test_a_rescaled_problem_is_solved_like_the_original(loss, penalty):
    """J(w; X s, alpha s) = J(w s; X, alpha) for the l1 penalty (and for l2 with
    alpha s^2), and y t with alpha t for the lasso scales J by t^2:
    the certified optimum of each rescaled problem is the original's, whose J is checked
    against LIBLINEAR (logistic) or scikit-learn (squared).  The coordinate steps' limits
    and newGLMNET's nu follow the scale of X and y."""
    X, y = _classification() if loss == "logistic" else _regression()
    alpha = 1e-2
    base = fr.Problem(X, y, loss=loss, penalty=penalty, alpha=alpha)
    res = solve_cd(base, tol=1e-9)
    if loss == "logistic":
        w_ref = _liblinear_l1(X, y, alpha, False) if penalty == "l1" else \
            _liblinear_l2(X, y, alpha)
    else:
        w_ref = Lasso(alpha=alpha, fit_intercept=False, tol=1e-12,
                      max_iter=100_000).fit(X, y).coef_
    assert res.objective == pytest.approx(base.objective(w_ref), rel=1e-6)
    cases = [(s, 1.0) for s in (1e-6, 1e6, 1e12, 1e14)]
    if loss == "squared":
        cases += [(1.0, t) for t in (1e-6, 1e6)]
    for s, t in cases:
        a = alpha * s * t if penalty == "l1" else alpha * s**2
        prob = fr.Problem(X * s, y * t, loss=loss, penalty=penalty, alpha=a)
        scaled = solve_cd(prob, tol=1e-9)
        assert scaled.status == "converged", (s, t)
        assert scaled.n_iter <= res.n_iter + 10, (s, t)
        J = scaled.objective / t**2
        assert J == pytest.approx(res.objective, rel=1e-8), (s, t)
        assert J - scaled.gap / t**2 <= res.objective * (1 + 1e-12)


def test_step_limits_stay_finite_and_the_run_converges():
    """A column of 1e-305 against targets of 1e4: its limit 10 max|y| / max|x_j| overflows
    and is kept finite (a limit of inf would zero every step of the column); the run
    certifies the lasso's optimum, which scikit-learn's Lasso confirms."""
    from fastrisk import _cd
    from fastrisk.solvers.cd import score_step

    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    X[:, 2] *= 1e-305
    y = X[:, 0] * 1e4 + rng.standard_normal(50)
    prob = fr.Problem(X, y, loss="squared", penalty="l1", alpha=1e-2)
    with np.errstate(over="ignore"):  # the unclamped limit
        assert 10.0 * np.abs(y).max() / np.abs(X[:, 2]).max() == np.inf
    assert np.isfinite(_cd.step_limits(score_step(prob), column_view(prob.data).maxabs)).all()
    res = solve_cd(prob, tol=1e-8)
    w_ref = Lasso(alpha=1e-2, fit_intercept=False, tol=1e-14, max_iter=100_000).fit(X, y).coef_
    assert res.status == "converged"
    assert res.objective == pytest.approx(prob.objective(w_ref), rel=1e-9)


def test_a_start_worse_than_zero_starts_from_zero():
    """A refit after y was rescaled starts far from the optimum: the run takes no more
    iterations than from w = 0 and certifies scikit-learn Lasso's optimum (both at tol
    1e-8 relative: 1e-7 leaves room for the two certificates), and a start whose J
    overflows is no error."""
    X, y = _regression()
    prob = fr.Problem(X, y, loss="squared", penalty="l1", alpha=1e-2)
    J_ref = prob.objective(Lasso(alpha=1e-2, fit_intercept=False, tol=1e-14,
                                 max_iter=100_000).fit(X, y).coef_)
    cold = solve_cd(prob, tol=1e-8, random_state=0)
    far = solve_cd(fr.Problem(X, y * 1e6, loss="squared", penalty="l1", alpha=1e4),
                   tol=1e-8, random_state=0)
    for start in (far, far.w * 1e300):
        warm = solve_cd(prob, tol=1e-8, start=start, random_state=0)
        assert warm.status == "converged" and warm.n_iter <= cold.n_iter
        assert warm.objective == pytest.approx(J_ref, rel=1e-7)


def test_columns_of_another_matrix_are_refused():
    """solve_cd and alpha_max read X through ``columns``: the view of another matrix of the
    same shape would solve another problem, so only the problem's own view is taken (the
    one a path shares between the Problems of its alphas, which share one Dataset)."""
    rng = np.random.default_rng(0)
    X, other = rng.normal(size=(30, 4)), rng.normal(size=(30, 4))
    y = np.sign(X[:, 0])
    problem = fr.Problem(X, y, loss="logistic", penalty="l1", alpha=1e-2)
    foreign = column_view(fr.Problem(other, y, loss="logistic", penalty="l1").data)
    for call in (lambda: solve_cd(problem, columns=foreign),
                 lambda: fr.alpha_max(problem, columns=foreign),
                 lambda: solve_cd(problem, columns="x")):
        with pytest.raises(ValueError, match="columns must be column_view\\(problem.data\\)"):
            call()
    own = column_view(problem.data)
    same_data = fr.Problem(problem.data, y, loss="logistic", penalty="l1", alpha=5e-3)
    a = solve_cd(same_data, columns=own, tol=1e-10, random_state=0)
    b = solve_cd(fr.Problem(X, y, loss="logistic", penalty="l1", alpha=5e-3), tol=1e-10,
                 random_state=0)
    np.testing.assert_array_equal(a.w, b.w)


@pytest.mark.parametrize("bias", [0.0, 2.5])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("direct_bytes", [0, DIRECT_BYTES])
def test_column_view_of_wide_data_with_scales(bias, n_threads, direct_bytes, monkeypatch):
    # 3000 columns (buckets of 16 with DIRECT_BYTES = 0, else of 1) and enough entries for
    # two row blocks: scipy's CSC, and the scales made by the copy equal to those computed
    # when first read (the same order)
    monkeypatch.setattr(columns, "DIRECT_BYTES", direct_bytes)
    X = sp.random(2000, 3000, density=0.2, format="csr", random_state=5)
    assert X.nnz // COPY_GRAIN >= 1
    assert bucket_shift(3000, copy_nbytes(Dataset(X))) == (4 if direct_bytes == 0 else 0)
    A = X if not bias else sp.hstack([X, np.full((2000, 1), bias)], format="csr")
    C = A.tocsc()
    C.sort_indices()
    data = Dataset(X, intercept_scaling=bias)
    with_norms = column_view(data, n_threads, scales=True)
    lazy = column_view(Dataset(X, intercept_scaling=bias), n_threads)
    for cols in (with_norms, lazy):
        np.testing.assert_array_equal(cols.indptr, C.indptr)
        np.testing.assert_array_equal(cols.indices, C.indices)
        np.testing.assert_array_equal(cols.values, C.data)
    assert with_norms._scales is not None and lazy._scales is None
    np.testing.assert_array_equal(with_norms.norms, lazy.norms)
    np.testing.assert_array_equal(with_norms.maxabs, lazy.maxabs)
    np.testing.assert_allclose(with_norms.norms, np.linalg.norm(A.toarray(), axis=0),
                               rtol=1e-13, atol=0)
    np.testing.assert_array_equal(with_norms.maxabs, np.abs(A.toarray()).max(axis=0))
    assert with_norms.nbytes == lazy.nbytes == copy_nbytes(data) + 16 * A.shape[1]


@pytest.mark.parametrize("itype", [np.int32, np.int64])
@pytest.mark.parametrize("blocks", [1, 2, 3, 7])
@pytest.mark.parametrize("shift", [0, 1, 3, 5, 16])
def test_csr_transpose_any_row_blocks_buckets_and_unsorted_rows(itype, blocks, shift):
    # rows with their column indices in random order (no duplicates): the kernel's output
    # is still scipy's sorted CSC, the same for every split of the rows into thread blocks
    # and of the 30 columns into buckets (1, 2, 8, 32 and 65536 columns: one bucket for
    # all); the norms against NumPy's, to round-off, and the maxima exactly
    X = _sparse_with_empty_rows_and_columns(np.float64, itype, seed=1)
    rng = np.random.default_rng(2)
    indices, data = X.indices.copy(), X.data.copy()
    for i in range(X.shape[0]):
        order = X.indptr[i] + rng.permutation(X.indptr[i + 1] - X.indptr[i])
        indices[X.indptr[i]:X.indptr[i + 1]] = X.indices[order]
        data[X.indptr[i]:X.indptr[i + 1]] = X.data[order]
    C = X.tocsc()
    C.sort_indices()
    values, rows = np.empty(X.nnz), np.empty(X.nnz, dtype=itype)
    indptr = np.empty(X.shape[1] + 1, dtype=np.int64)
    norms, maxabs = np.empty(X.shape[1]), np.empty(X.shape[1])
    transpose(data, indices, X.indptr, X.shape[1], blocks, shift, values, rows, indptr, norms,
              maxabs)
    np.testing.assert_array_equal(indptr, C.indptr)
    np.testing.assert_array_equal(rows, C.indices)
    np.testing.assert_array_equal(values, C.data)
    np.testing.assert_allclose(norms, np.linalg.norm(X.toarray(), axis=0), rtol=1e-13, atol=0)
    np.testing.assert_array_equal(maxabs, np.abs(X.toarray()).max(axis=0))
    # without scales: the same arrays
    again = np.empty(X.nnz), np.empty(X.nnz, dtype=itype), np.empty(X.shape[1] + 1, np.int64)
    transpose(data, indices, X.indptr, X.shape[1], blocks, shift, *again, np.empty(0),
              np.empty(0))
    for got, want in zip(again, (values, rows, indptr)):
        np.testing.assert_array_equal(got, want)


def test_csr_transpose_random_shapes():
    # reference: scipy's sorted CSC, on random shapes and densities (empty matrices,
    # single rows, column counts that are not multiples of the bucket width, more row
    # blocks than rows), every bucket width and a few block counts; norms against scipy's,
    # maxima against NumPy's
    rng = np.random.default_rng(7)
    for trial in range(60):
        m, n = int(rng.integers(1, 60)), int(rng.integers(1, 300))
        density = float(rng.choice([0.0, 0.01, 0.1, 0.5]))
        X = sp.random(m, n, density=density, format="csr", random_state=trial)
        C = X.tocsc()
        C.sort_indices()
        ref_norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=0))).ravel()
        ref_max = np.abs(X.toarray()).max(axis=0)
        itype = (np.int32, np.int64)[trial % 2]
        indices, indptr = X.indices.astype(itype), X.indptr.astype(itype)
        for shift in (0, 1, 2, 5, 9, 16):
            for blocks in (1, 2, 3):
                values, rows = np.empty(X.nnz), np.empty(X.nnz, dtype=itype)
                col_indptr = np.empty(n + 1, dtype=np.int64)
                norms, maxabs = np.empty(n), np.empty(n)
                transpose(X.data, indices, indptr, n, blocks, shift, values, rows, col_indptr,
                          norms, maxabs)
                np.testing.assert_array_equal(col_indptr, C.indptr)
                np.testing.assert_array_equal(rows, C.indices)
                np.testing.assert_array_equal(values, C.data)
                np.testing.assert_allclose(norms, ref_norms, rtol=1e-13, atol=0)
                np.testing.assert_array_equal(maxabs, ref_max)


def test_bucket_shift():
    # one column per bucket for copies up to DIRECT_BYTES or up to MAX_BUCKETS columns,
    # else at most MAX_BUCKETS buckets
    assert bucket_shift(10**7, DIRECT_BYTES) == 0
    assert bucket_shift(MAX_BUCKETS, DIRECT_BYTES + 1) == 0
    for n in (MAX_BUCKETS + 1, 10**4, 1_513_832, 10**7):
        s = bucket_shift(n, DIRECT_BYTES + 1)
        assert -(-n // (1 << s)) <= MAX_BUCKETS < -(-n // (1 << (s - 1)))
    assert bucket_shift(10**12, DIRECT_BYTES + 1) == 16  # the range of the column offsets


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("itype", [np.int32, np.int64])
@pytest.mark.parametrize("layout", ["csr", "dense"])
@pytest.mark.parametrize("kernel", ["rows", "columns", "cross"])
def test_gram_kernels_match_numpy(dtype, itype, layout, kernel):
    # reference: X_W^T diag(h) X_W in NumPy, W in a shuffled order with the intercept column,
    # h with zeros (rows skipped); the kernels sum each entry over the rows in another order
    # than NumPy's matmul: equal to round-off (1e-12 relative)
    X = _sparse_with_empty_rows_and_columns(dtype, itype, seed=3)
    data = Dataset(X if layout == "csr" else X.toarray(), intercept_scaling=1.5)
    cols = column_view(data)
    A = np.hstack([X.toarray().astype(np.float64), np.full((40, 1), 1.5)])
    rng = np.random.default_rng(4)
    h = rng.random(40) * (rng.random(40) > 0.3)
    working = rng.permutation(A.shape[1])[:12].astype(np.int64)
    working[0] = A.shape[1] - 1
    H = np.full((12, 12), np.nan)
    if kernel == "columns":
        nnz_w = int((cols.indptr[working + 1] - cols.indptr[working]).sum())
        _cd.gram_columns(*cols.arrays, working, h, H, np.empty(41, dtype=np.int64),
                         np.empty(nnz_w, dtype=np.int64), np.empty(nnz_w))
    else:
        pos = np.full(31, -1, dtype=np.int64)
        pos[working] = np.arange(12)
        rows = (data.data, data.indices, data.indptr.astype(np.int64), data.dense)
        if kernel == "rows":
            _cd.gram_rows(*rows, 1.5, pos, h, H, np.empty(12), np.empty(12, dtype=np.int64))
        else:  # the rows of 4 columns of W, the intercept among them
            added = [0, 9, 10, 11]
            H = np.full((4, 12), np.nan)
            _cd.gram_cross(*rows, 1.5, *cols.arrays, pos, working[added], h, H)
    ref = A[:, working].T @ (h[:, None] * A[:, working])
    if kernel == "cross":
        ref = ref[added]
    np.testing.assert_allclose(H, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    if kernel != "cross":
        np.testing.assert_array_equal(H, H.T)


def test_bordered_gram_matrix():
    # the Gram matrix of W + A assembled from W's and the rows of A's columns equals the
    # whole one; C, the A x A block, is made exactly symmetric from its upper triangle
    rng = np.random.default_rng(5)
    Z = rng.standard_normal((30, 9))
    G = Z.T @ Z
    B = G[6:].copy()
    B[:, 6:] += np.triu(rng.standard_normal((3, 3)) * 1e-15, 1)  # summed in another order
    out = bordered(G[:6, :6], B)
    np.testing.assert_allclose(out, G, rtol=1e-13)
    np.testing.assert_array_equal(out, out.T)
    np.testing.assert_array_equal(out[6:, 6:], np.triu(B[:, 6:]) + np.triu(B[:, 6:], 1).T)


def test_same_bits_for_the_same_seed_and_any_thread_count():
    X, y = _classification(n=400, d=60)
    prob = fr.Problem(sp.csr_matrix(X), y, loss="logistic", penalty="l1", alpha=1e-3)
    runs = [solve_cd(prob, tol=1e-8, n_threads=t, random_state=3) for t in (1, 1, 2)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.w, runs[0].w)
        assert r.gap == runs[0].gap


def test_warm_start_and_inputs_unchanged():
    X, y = _classification()
    X.flags.writeable = False
    prob = fr.Problem(X, y, loss="logistic", penalty="l1", alpha=1e-2)
    first = solve_cd(prob, tol=1e-10)
    again = solve_cd(prob, tol=1e-10, start=first)
    assert again.n_iter <= 2  # already certified at the first check
    w0 = first.w.copy()
    solve_cd(prob, tol=1e-10, start=w0)
    np.testing.assert_array_equal(w0, first.w)


def test_zero_is_optimal_above_alpha_max():
    X, y = _classification()
    prob = fr.Problem(X, y, loss="logistic", penalty="l1", alpha=1.0)
    res = solve_cd(prob, tol=1e-10)
    # alpha_max = ||X^T l'(0, y)||_inf / m: above it w = 0 and the certificate is exact
    g = -np.where(y == 1, 1.0, -1.0) * 0.5
    assert np.abs(X.T @ g).max() / X.shape[0] < 1.0
    assert not res.w.any() and res.n_iter == 1 and res.gap <= 1e-12


def test_input_errors_name_the_argument():
    X, y = _classification()
    with pytest.raises(ValueError, match="smooth scalar losses"):
        solve_cd(fr.Problem(X, y, loss="hinge", penalty="l1"))
    with pytest.raises(ValueError, match="penalty"):
        solve_cd(fr.Problem(X, y, loss="logistic", penalty="lp", p=1.5))
    prob = fr.Problem(X, y, loss="logistic", penalty="l1")
    with pytest.raises(ValueError, match="start"):
        solve_cd(prob, start=np.zeros(3))
    with pytest.raises(ValueError, match="check_every"):
        solve_cd(prob, check_every=0)
    with pytest.raises(ValueError, match="screening"):
        solve_cd(prob, screening="yes")
    with pytest.raises(ValueError, match="inner"):
        solve_cd(prob, inner="newton")
    with pytest.raises(ValueError, match="damping"):
        solve_cd(prob, damping="lm")
    for nu in (0.0, 2.0, float("nan"), "1e-5"):
        with pytest.raises((ValueError, TypeError), match="nu"):
            solve_cd(prob, nu=nu)
    with pytest.raises(ValueError, match="tol"):
        solve_cd(prob, tol=-1.0)


def test_a_run_at_the_limit_of_floating_point_stalls():
    """At alpha 1e-15 the lasso's J stops decreasing within a few iterations while the
    certificate stays above tol (the rescaled residual at round-off): the run ends
    "stalled" after STALL_ITERATIONS certificate iterations instead of running to its
    budget, its gap still a bound (J - D of a dual point: at least J - J*, J* from the
    least-squares solution, which alpha 1e-15 leaves unchanged to 1e-12), and the
    estimator warns.  Seeded: where the round-off leaves the last gap depends on the
    coordinate order (some orders end within tol)."""
    from fastrisk.solvers.cd import STALL_ITERATIONS

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 7))
    y = X @ rng.standard_normal(7) + 0.1 * rng.standard_normal(40)
    prob = fr.Problem(X, y, loss="squared", penalty="l1", alpha=1e-15)
    res = solve_cd(prob, tol=1e-4, max_iter=2000, random_state=0)
    assert res.status == "stalled" and res.n_iter <= 10 + STALL_ITERATIONS
    w_ls = np.linalg.lstsq(X, y, rcond=None)[0]
    J_star = 0.5 * np.mean((X @ w_ls - y) ** 2)
    assert res.gap > 1e-4 * res.objective and res.gap >= res.objective - J_star - 1e-12
    with pytest.warns(ConvergenceWarning, match="solver 'cd' stalled"):
        fr.LinearRegressor(penalty="l1", alpha=1e-15, fit_intercept=False,
                           random_state=0).fit(X, y)


def test_registered_and_chosen_by_auto_for_l1_with_smooth_losses():
    X, y = _classification()
    assert "cd" in fr.SOLVERS
    for loss, penalty in [("logistic", "l1"), ("squared_hinge", "elasticnet")]:
        prob = fr.Problem(X, y, loss=loss, penalty=penalty, alpha=1e-2)
        assert fr.solvers.choose_solver(prob) == "cd"
    # a non-smooth loss: the hinge by its Moreau envelope (smoothing), the others by BMRM
    assert fr.solvers.choose_solver(fr.Problem(X, y, loss="hinge", penalty="l1")) == "smoothing"
    assert fr.solvers.choose_solver(fr.Problem(X, y, loss="absolute", penalty="l1")) == "bmrm"
    # an elastic net without its l1 term is the l2 penalty (its split): rule 2, as for l2
    no_l1 = fr.Problem(X, y, loss="logistic", penalty="elasticnet", l1_ratio=0.0, alpha=1e-2)
    assert fr.solvers.choose_solver(no_l1) == fr.solvers.choose_solver(
        fr.Problem(X, y, loss="logistic", alpha=1e-2)) == "sdca"


def test_objective_matches_liblinear_on_reuters(libsvm):
    X, y = libsvm("reuters")
    alpha = 1e-4
    prob = fr.Problem(X, y, loss="logistic", penalty="l1", alpha=alpha)
    res = fr.solve(prob, tol=1e-6)
    w_ll = _liblinear_l1(X, y, alpha, False, tol=1e-7)
    J_ll = prob.objective(w_ll)
    # fastrisk certifies J(w) - J* <= 1e-6 J; LIBLINEAR's relative gradient-norm stop at 1e-7
    # leaves it within ~1e-8 of J* here (at 1e-12 it runs for minutes)
    assert res.status == "converged" and res.solver == "cd"
    assert res.objective <= J_ll * (1 + 1e-6)
    assert J_ll <= res.objective + res.gap + 1e-12


# ---- regularization paths (fastrisk/regpath.py) ---------------------------------------------


@pytest.mark.parametrize("loss, penalty, l1_ratio", [("logistic", "l1", 1.0),
                                                     ("squared", "elasticnet", 0.5)])
def test_path_starts_at_alpha_max_and_matches_cold_solves(loss, penalty, l1_ratio):
    X, y = _classification() if loss == "logistic" else _regression()
    p = fr.path(X, y, loss=loss, penalty=penalty, l1_ratio=l1_ratio, n_alphas=8, eps=1e-2,
                tol=1e-8, fit_intercept=True)
    assert p.alphas.shape == (8,) and (np.diff(p.alphas) < 0).all()
    # w = 0 at alpha_max, not at the next alpha; alpha_max = ||[X 1]^T l'(0, y)||_inf / (m r)
    # (the optimality condition of w = 0), computed here with NumPy
    assert not p.coefs[0].any() and p.coefs[1].any()
    prob0 = fr.Problem(X, y, loss=loss, fit_intercept=True)
    _, d0 = prob0.loss.values(np.zeros(X.shape[0]), prob0.y)
    top = np.abs(np.append(X.T @ d0, d0.sum())).max() / X.shape[0] / l1_ratio
    assert p.alphas[0] == pytest.approx(top, rel=1e-12)
    for k, alpha in enumerate(p.alphas):
        prob = fr.Problem(X, y, loss=loss, penalty=penalty, l1_ratio=l1_ratio, alpha=alpha,
                          fit_intercept=True)
        cold = solve_cd(prob, tol=1e-8)
        # both certified to 1e-8 J: their objectives differ by at most the two gaps
        assert abs(p.objectives[k] - cold.objective) <= p.gaps[k] + cold.gap + 1e-14
        assert p.gaps[k] <= 1e-8 * p.objectives[k]
        assert p.objectives[k] == pytest.approx(prob.objective(p.coefs[k]), rel=1e-12)


def test_path_on_a_given_grid_takes_the_l2_penalty():
    """With alphas given, the path solves any penalty cd takes: l2-logistic matches
    scikit-learn's Newton LogisticRegression (C = 1 / (alpha m)) at every alpha, in J
    (NumPy) to the certified 1e-10 J and in w to sqrt(2 gap / alpha) (alpha-strong
    convexity)."""
    from sklearn.linear_model import LogisticRegression

    X, y01 = _classification()
    m, y = X.shape[0], np.where(y01 == 1, 1.0, -1.0)
    p = fr.path(X, y01, loss="logistic", penalty="l2", alphas=[1e-3, 1e-1, 1e-2], tol=1e-10)
    np.testing.assert_array_equal(p.alphas, [1e-1, 1e-2, 1e-3])
    for alpha, w, gap in zip(p.alphas, p.coefs, p.gaps):
        ref = LogisticRegression(C=1.0 / (alpha * m), fit_intercept=False, tol=1e-12,
                                 solver="newton-cholesky", max_iter=100).fit(X, y01)
        ref = ref.coef_.ravel()
        J = [np.logaddexp(0.0, -y * (X @ v)).mean() + alpha / 2 * v @ v for v in (w, ref)]
        assert gap <= 1e-10 * J[0] and abs(J[0] - J[1]) <= 1e-10 * J[1] + 1e-15
        assert np.abs(w - ref).max() <= np.sqrt(2.0 * (gap + 1e-15) / alpha)


def test_path_validates_its_arguments():
    """Each bad argument is refused naming it: a default grid without an l1 term, a
    penalty cd does not take, bad grids (bool alphas would read as 1.0), and keywords
    solve_cd does not take or that the path sets itself."""
    X, y = _classification()
    for penalty, l1_ratio in (("l2", 1.0), ("elasticnet", 0.0)):
        with pytest.raises(ValueError, match="^path: the default grid starts at alpha_max, "
                                             "which needs an l1 term"):
            fr.path(X, y, penalty=penalty, l1_ratio=l1_ratio)
    # lp at its default p = 2 is the l2 penalty (its split), which cd solves
    np.testing.assert_array_equal(
        fr.path(X, y, penalty="lp", alphas=[0.1], random_state=0).coefs,
        fr.path(X, y, penalty="l2", alphas=[0.1], random_state=0).coefs)
    for alphas in ([True], [True, 0.1]):
        with pytest.raises(ValueError, match="^alphas must be"):
            fr.path(X, y, alphas=alphas)
    with pytest.raises(TypeError, match="^path\\(\\) got an unexpected keyword argument 'bogus'"):
        fr.path(X, y, alphas=[0.1], bogus=1)
    for key in ("start", "columns"):
        with pytest.raises(TypeError, match=f"^path\\(\\) sets {key}= itself"):
            fr.path(X, y, alphas=[0.1], **{key: None})
    with pytest.raises(ValueError, match="n_alphas"):
        fr.path(X, y, n_alphas=0)
    with pytest.raises(ValueError, match="eps"):
        fr.path(X, y, eps=2.0)
    with pytest.raises(ValueError, match="alphas"):
        fr.path(X, y, alphas=[0.1, -1.0])
    # the losses cd does not take: named, before any kernel reads y as class indices
    with pytest.raises(ValueError, match="path: solver 'cd' takes smooth scalar losses"):
        fr.path(X, np.arange(X.shape[0]) % 3, loss="softmax")
    with pytest.raises(ValueError, match="path: .*got loss 'hinge'"):
        fr.path(X, y, loss="hinge", alphas=[0.1])
    with pytest.raises(ValueError, match="^alpha_max: problem must be a fastrisk Problem"):
        fr.alpha_max(None)


def test_alpha_max_of_the_problems_cd_does_not_take():
    # from the risk's subgradient at 0 (a NumPy reference per loss); w = 0 is optimal
    # at alpha_max (bmrm's certified solution is 0) and not below it
    X, y = _classification(n=120, d=8)
    m = X.shape[0]
    labels = np.arange(m) % 3
    # softmax at W = 0: probabilities 1/3, gradient (1/3 - e_y) x_i / m per class
    G = np.full((m, 3), 1.0 / 3.0)
    G[np.arange(m), labels] -= 1.0
    softmax = fr.Problem(X, labels, loss="softmax", penalty="l1", alpha=1.0)
    assert fr.alpha_max(softmax) == pytest.approx(np.abs(X.T @ G / m).max(), rel=1e-12)
    # hinge at w = 0: every margin 0 < 1, gradient -y x_i / m (differentiable there)
    hinge = fr.Problem(X, y, loss="hinge", penalty="l1", alpha=1.0)
    top = fr.alpha_max(hinge)
    signs = np.where(y == 1, 1.0, -1.0)  # y's labels 0 / 1 as the Problem encodes them
    assert top == pytest.approx(np.abs(X.T @ -signs / m).max(), rel=1e-12)
    for alpha, zero in ((top * 1.0001, True), (top * 0.8, False)):
        res = fr.solve(fr.Problem(X, y, loss="hinge", penalty="l1", alpha=alpha), "bmrm",
                       tol=1e-8)
        assert bool(np.abs(res.w).max() < 1e-9) is zero
    # an oracle-only problem: the oracle's gradient, as for the same problem on data
    oracle_only = fr.Problem.from_oracle(fr.Problem(X, y, loss="logistic").oracle,
                                         penalty="l1", alpha=1.0)
    on_data = fr.Problem(X, y, loss="logistic", penalty="l1", alpha=1.0)
    assert fr.alpha_max(oracle_only) == pytest.approx(fr.alpha_max(on_data), rel=1e-12)
