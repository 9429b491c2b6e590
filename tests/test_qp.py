"""The compiled simplex QP of the bundle methods (csrc/_qp.pyx, fastrisk/solvers/qp.py).

References, independent of the active-set code:
* enumeration of the faces (k <= 9): the optimum lies in the relative interior of
  its smallest optimal face, where it is the unique minimizer of f on the face's
  affine hull; ``lstsq`` on each face's KKT system and a feasibility check give
  min f exactly up to rounding;
* SLSQP (scipy) at ftol 1e-15 for larger k.
Tolerances: 1e-8 relative (floor 1e-12) on the objective; the QP's own
violation, which bounds f(beta) - min f, is checked against the exact optimum.
"""

import itertools

import numpy as np
import pytest
from fastrisk._qp import cut_combination
from scipy.optimize import minimize

from fastrisk.solvers.bmrm import QP_RTOL, Bundle, _inner_l2
from fastrisk.solvers.qp import simplex_qp

OBJ_TOL = 1e-8


def enumerate_optimum(H, c):
    """min 0.5 b^T H b - c^T b on the simplex by enumerating the faces (small k only)."""
    k = len(c)
    best = np.inf
    for size in range(1, k + 1):
        for S in itertools.combinations(range(k), size):
            S = list(S)
            K = np.zeros((size + 1, size + 1))
            K[:size, :size] = H[np.ix_(S, S)]
            K[:size, size] = K[size, :size] = 1.0
            sol = np.linalg.lstsq(K, np.append(c[S], 1.0), rcond=None)[0]
            beta = np.zeros(k)
            beta[S] = sol[:size]
            if beta.min() >= -1e-12 and abs(beta.sum() - 1) < 1e-9 and \
                    np.allclose(K @ sol, np.append(c[S], 1.0), atol=1e-9):
                beta = np.maximum(beta, 0.0)
                best = min(best, 0.5 * beta @ H @ beta - c @ beta)
    return best


def instance(seed, k, d, kind="random"):
    """A Gram matrix of k cuts in d dimensions (row 0 = the zero cut) and a linear term.

    kind: random; "duplicates" (repeated cuts and tied c); "collinear" (cuts on a line)."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(k, d))
    c = rng.normal(size=k)
    if kind == "duplicates":
        A[k // 2:] = A[1: 1 + k - k // 2]
        c[k // 2:] = c[1: 1 + k - k // 2]
    elif kind == "collinear":
        A = np.outer(rng.normal(size=k), rng.normal(size=d))
    A[0] = 0.0
    c[0] = 0.0
    return A @ A.T, c


def start(k):
    beta0 = np.zeros(k)
    beta0[0] = 1.0
    return beta0


def value(H, c, beta):
    return 0.5 * beta @ H @ beta - c @ beta


CASES = [(s, k, d, kind) for s, (k, d, kind) in enumerate(
    [(6, 3, "random"), (8, 2, "random"), (9, 12, "random"), (8, 3, "duplicates"),
     (9, 4, "collinear"), (7, 1, "random")])]


@pytest.mark.parametrize("seed,k,d,kind", CASES)
def test_matches_face_enumeration(seed, k, d, kind):
    """Rank-deficient (d < k), repeated cuts with tied c, collinear cuts: value to 1e-8
    relative of the exact optimum; feasible; violation >= the true suboptimality."""
    H, c = instance(seed, k, d, kind)
    f_star = enumerate_optimum(H, c)
    beta, info = simplex_qp(H, c, start(k))
    assert info.status == "converged"
    assert beta.min() >= 0.0 and abs(beta.sum() - 1.0) <= 1e-15
    f = value(H, c, beta)
    assert abs(f - f_star) <= OBJ_TOL * max(abs(f_star), 1e-4)
    assert info.value == pytest.approx(f, rel=1e-12, abs=1e-14)
    assert f - f_star <= info.violation + 1e-12


@pytest.mark.parametrize("seed,kind", [(10, "random"), (11, "duplicates")])
def test_matches_slsqp_on_larger_instances(seed, kind):
    """k = 40 cuts in 10 dimensions: never worse than SLSQP (ftol 1e-15) by more than 1e-8."""
    H, c = instance(seed, 40, 10, kind)
    beta, info = simplex_qp(H, c, start(40))
    res = minimize(lambda b: value(H, c, b), np.full(40, 1 / 40), jac=lambda b: H @ b - c,
                   method="SLSQP", bounds=[(0, None)] * 40,
                   constraints=[{"type": "eq", "fun": lambda b: b.sum() - 1.0}],
                   options={"ftol": 1e-15, "maxiter": 2000})
    assert info.status == "converged"
    assert value(H, c, beta) <= res.fun + OBJ_TOL * max(abs(res.fun), 1.0)


@pytest.mark.parametrize("seed,kind", [(20, "random"), (21, "duplicates"), (22, "collinear")])
def test_from_the_full_face(seed, kind):
    """Start with every variable free (uniform beta): the optimum's small support is reached
    by many deletions from the factored face (Givens updates, and a refactorization when the
    reference leaves); value to 1e-8 relative of the face enumeration."""
    H, c = instance(seed, 9, 3, kind)
    f_star = enumerate_optimum(H, c)
    beta, info = simplex_qp(H, c, np.ones(9))
    assert info.status == "converged"
    assert abs(value(H, c, beta) - f_star) <= OBJ_TOL * max(abs(f_star), 1e-4)


@pytest.mark.parametrize("kind", ["random", "duplicates"])
def test_from_arbitrary_feasible_starts(kind):
    """The proximal bundle method warm-starts from the previous solution of a different QP,
    which is not a minimizer of any face: from 30 random feasible starts (random supports,
    Dirichlet weights) the value must reach the face enumeration's optimum to 1e-8."""
    rng = np.random.default_rng(7)
    for trial in range(30):
        H, c = instance(100 + trial, 8, 3, kind)
        f_star = enumerate_optimum(H, c)
        beta0 = np.zeros(8)
        support = rng.choice(8, size=rng.integers(1, 9), replace=False)
        beta0[support] = rng.dirichlet(np.ones(len(support)))
        beta, info = simplex_qp(H, c, beta0)
        assert info.status == "converged"
        assert abs(value(H, c, beta) - f_star) <= OBJ_TOL * max(abs(f_star), 1e-4), trial


def test_warm_start_equals_cold_start():
    """BMRM's use: the optimum for k - 1 cuts padded with 0 for a new cut.  With affinely
    independent cuts (d >= k) the minimizer is unique: same beta to 1e-9, same value to 1e-12."""
    H, c = instance(3, 12, 15)
    old, _ = simplex_qp(H[:11, :11], c[:11], start(11))
    warm, info_warm = simplex_qp(H, c, np.append(old, 0.0))
    cold, info_cold = simplex_qp(H, c, start(12))
    np.testing.assert_allclose(warm, cold, atol=1e-9)
    assert value(H, c, warm) == pytest.approx(value(H, c, cold), rel=1e-12)
    assert info_warm.n_solves <= info_cold.n_solves


def test_leading_block_of_larger_matrix_without_copy():
    """H given as Q[:k, :k] of a larger Gram matrix (strided rows) gives the same solution."""
    H, c = instance(4, 9, 5)
    Q = np.zeros((15, 15))
    Q[:9, :9] = H
    a, _ = simplex_qp(Q[:9, :9], c, start(9))
    b, _ = simplex_qp(H.copy(), c, start(9))
    np.testing.assert_array_equal(a, b)


def test_read_only_and_float32_inputs():
    """Read-only float64 and float32 H, c give the float64 result (float32 to its rounding)."""
    H, c = instance(6, 8, 4)
    ref, _ = simplex_qp(H, c, start(8))
    Hr, cr = H.copy(), c.copy()
    Hr.setflags(write=False)
    cr.setflags(write=False)
    np.testing.assert_array_equal(simplex_qp(Hr, cr, start(8))[0], ref)
    beta32, _ = simplex_qp(H.astype(np.float32), c.astype(np.float32), start(8))
    assert value(H, c, beta32) == pytest.approx(value(H, c, ref), rel=1e-5)


def test_relative_stopping_rule():
    """With rtol and a lower bound f_lower of min f, the returned violation is at most
    rtol (f(beta) - f_lower) and the true suboptimality at most the violation."""
    H, c = instance(5, 9, 9)
    f_star = enumerate_optimum(H, c)
    f_lower = f_star - 0.5
    beta, info = simplex_qp(H, c, start(9), tol=0.0, rtol=0.1, f_lower=f_lower)
    f = value(H, c, beta)
    assert info.violation <= 0.1 * (f - f_lower) + 1e-13
    assert f_star <= f <= f_star + info.violation + 1e-12


def test_degenerate_instances():
    """Zero H (a linear program: all mass on the largest c, ties shared); one variable."""
    c = np.array([0.0, 2.0, 1.0, 2.0])
    beta, _ = simplex_qp(np.zeros((4, 4)), c, start(4))
    assert value(np.zeros((4, 4)), c, beta) == -2.0 and beta[[0, 2]].sum() == 0.0
    beta, info = simplex_qp(np.zeros((1, 1)), np.zeros(1), np.ones(1))
    assert beta[0] == 1.0 and info.status == "converged"


def test_input_validation():
    H, c = instance(0, 4, 2)
    with pytest.raises(ValueError, match="H must"):
        simplex_qp(H[:3], c, start(4))
    with pytest.raises(ValueError, match="beta0"):
        simplex_qp(H, c, np.zeros(4))
    with pytest.raises(ValueError, match="beta0"):
        simplex_qp(H, c, start(3))


def test_cut_combination_matches_numpy():
    """Rows with beta_i = 0 skipped, scale applied, rows beyond len(beta) ignored; the
    column blocking covers n not a multiple of the block size."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(7, 5000))
    beta = np.array([0.0, 0.3, 0.0, 0.5, 0.2])
    out = np.empty(5000)
    cut_combination(A, beta, -2.0, out)
    np.testing.assert_allclose(out, -2.0 * beta @ A[:5], rtol=1e-13, atol=1e-13)
    wrong = "cut_combination: beta longer than A or out of the wrong length"
    with pytest.raises(ValueError, match=wrong):
        cut_combination(A, beta, 1.0, np.empty(3))
    with pytest.raises(ValueError, match=wrong):  # 8 coefficients for the 7 rows of A
        cut_combination(A, np.full(8, 0.1), 1.0, out)
    cut_combination(A, np.full(7, 0.1), 1.0, out)  # as many as A's rows: accepted
    np.testing.assert_allclose(out, 0.1 * A.sum(axis=0), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("layout", ["csr32-f64", "csr64-f32", "dense"])
@pytest.mark.parametrize("bias", [0.0, 2.0])
def test_sample_space_products_match_numpy(layout, bias):
    """X^T v (fresh and accumulated) and X w of the sample-space cuts against NumPy on the
    dense matrix with its intercept column, rows with v_i = 0 included.  1e-12: rounding."""
    import scipy.sparse as sp

    from fastrisk._qp import sample_combination, sample_products
    from fastrisk.data import Dataset

    rng = np.random.default_rng(1)
    X = sp.random(30, 200, density=0.1, random_state=2, format="csr")
    if layout == "csr64-f32":
        X = sp.csr_matrix((X.data.astype(np.float32), X.indices.astype(np.int64),
                           X.indptr.astype(np.int64)), shape=X.shape)
    elif layout == "dense":
        X = X.toarray()
    d = Dataset(X, intercept_scaling=bias)
    Z = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    Z = np.c_[Z, np.full(30, bias)] if bias else Z
    v = rng.normal(size=30)
    v[::3] = 0.0
    out = np.full(d.n_weights, np.nan)
    sample_combination(d.data, d.indices, d.indptr, d.dense, d.bias, v, out)
    np.testing.assert_allclose(out, Z.T @ v, rtol=1e-12, atol=1e-12)
    base = rng.normal(size=d.n_weights)
    out = base.copy()
    sample_combination(d.data, d.indices, d.indptr, d.dense, d.bias, v, out, True)
    np.testing.assert_allclose(out, base + Z.T @ v, rtol=1e-12, atol=1e-12)
    w, f = rng.normal(size=d.n_weights), np.empty(30)
    sample_products(d.data, d.indices, d.indptr, d.dense, d.bias, w, f)
    np.testing.assert_allclose(f, Z @ w, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="sample_products: out must have one entry per row"):
        sample_products(d.data, d.indices, d.indptr, d.dense, d.bias, w, np.empty(3))


def test_bmrm_inner_l2_lower_bound_is_honest():
    """The inexact QP of BMRM (rtol = QP_RTOL against the best primal value): the returned
    lower bound is D_t(beta) recomputed in NumPy (1e-12), it is below the exact min J_t,
    and J_t(w) - D_t(beta) <= QP_RTOL (best - D_t(beta)) (up to 1e-12 rounding)."""
    rng = np.random.default_rng(1)
    lam, n = 0.01, 6
    bundle = Bundle(n, 30, 0.0)
    w = np.zeros(n)
    for t in range(1, 25):
        bundle.add(rng.normal(size=n), rng.uniform(0.5, 1.5), t)
        best = 2.0
        w, lower = _inner_l2(bundle, lam, None, best)
        k = bundle.k
        A, b, beta = bundle.A[:k], bundle.b[:k], bundle.beta[:k]
        assert beta.min() >= 0 and abs(beta.sum() - 1) < 1e-14
        D = b @ beta - beta @ (A @ A.T) @ beta / (2 * lam)
        assert lower == pytest.approx(D, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(w, -beta @ A / lam, rtol=1e-12, atol=1e-12)
        J_t = 0.5 * lam * w @ w + (b + A @ w).max()
        exact, _ = simplex_qp(A @ A.T, lam * b, beta)
        D_exact = b @ exact - exact @ (A @ A.T) @ exact / (2 * lam)
        assert lower <= D_exact + 1e-12
        assert J_t - lower <= QP_RTOL * (best - lower) + 1e-12
        bundle.mark_active(t)
