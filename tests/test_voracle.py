"""The compiled vector-loss oracle (csrc/_voracle.pyx via oracle.VectorOracle) against NumPy.

Reference: tests/reference/vector.py, F = X W^T on a float64 copy of X, each row's loss
and gradient from its definition (BMRM Table 2), grad = G^T X / m.  Both sum the same
float64 products in different orders, so 1e-12 relative (values) and 1e-11 relative with a
1e-14 floor (gradient entries near 0) are ample; float32 X is read as the same float64
numbers by both.  The 0/1 losses' argmax ties are broken alike (first maximizer).
"""

import numpy as np
import pytest
import scipy.sparse as sp

import fastrisk as fr
from fastrisk.data import Dataset
from fastrisk import oracle as oracle_module
from fastrisk.oracle import VectorOracle
from reference.vector import numpy_oracle

K = 4


def make_X(layout, dtype=np.float64, itype=np.int32, read_only=False, m=90, d=25, seed=0):
    rng = np.random.default_rng(seed)
    Xd = (rng.normal(size=(m, d)) * (rng.random((m, d)) < 0.3)).astype(dtype)
    Xd[3] = 0.0  # an empty row
    if layout == "dense":
        X, arrays = Xd, [Xd]
    else:
        X = sp.csr_matrix(Xd)
        X.indices, X.indptr = X.indices.astype(itype), X.indptr.astype(itype)
        arrays = [X.data, X.indices, X.indptr]
    for a in arrays:
        a.flags.writeable = not read_only
    return X


def loss_setup(name, m, rng, k=K):
    """(y for the oracle, params for both) of a loss with non-trivial parameters."""
    if name == "multivariate_regression":
        A = rng.normal(size=(k, k))
        return rng.normal(size=(m, k)), {"M": A @ A.T}
    y = rng.integers(0, k, m)
    if name == "scaled_soft_margin":
        cost = rng.random((k, k)) * 2
        np.fill_diagonal(cost, 0.0)
        return y, {"cost": cost, "beta": 0.7}
    return y, {}


LOSSES = ["softmax", "multiclass_hinge", "scaled_soft_margin", "multivariate_regression"]


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("layout,dtype,itype,read_only", [
    ("csr", np.float64, np.int32, False), ("csr", np.float32, np.int64, True),
    ("dense", np.float64, None, True), ("dense", np.float32, None, False)])
@pytest.mark.parametrize("name", LOSSES)
def test_matches_numpy_reference(name, layout, dtype, itype, read_only, n_threads):
    rng = np.random.default_rng(1)
    X = make_X(layout, dtype, itype, read_only)
    m = X.shape[0]
    y, params = loss_setup(name, m, rng)
    for bias, c in [(0.0, None), (1.5, rng.random(m) * 2)]:
        data = Dataset(X, intercept_scaling=bias)
        oracle = VectorOracle(data, name, y, K, c, n_threads=n_threads, **params)
        W = rng.normal(size=(K, data.n_weights)) * 0.5
        value, grad = oracle(W.ravel())
        ref_value, ref_grad = numpy_oracle(X, y, W, name, c=c, bias=bias, **params)
        assert value == pytest.approx(ref_value, rel=1e-12)
        np.testing.assert_allclose(grad, ref_grad.ravel(), rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("layout,dtype,itype", [
    ("csr", np.float32, np.int64), ("csr", np.float64, np.int32), ("dense", np.float64, None)])
@pytest.mark.parametrize("k", [2, 3, 8, 10, 20, 32, 35])
@pytest.mark.parametrize("name", LOSSES)
def test_class_counts_match_numpy(name, k, layout, dtype, itype, n_threads):
    """Every block width: k a multiple of 4 (the register-blocked row kernels of fr_vec.h
    as they are), k padded to the next multiple of 4 (zero padding weights), k = 32 (the
    widest kernel) and k = 35 (the generic k-wide loops), against the NumPy reference
    with an intercept and sample weights (tolerances as above)."""
    rng = np.random.default_rng(k)
    X = make_X(layout, dtype, itype, m=70, d=13, seed=k)
    m = X.shape[0]
    y, params = loss_setup(name, m, rng, k)
    c = rng.random(m) * 2
    data = Dataset(X, intercept_scaling=1.5)
    oracle = VectorOracle(data, name, y, k, c, n_threads=n_threads, **params)
    W = rng.normal(size=(k, data.n_weights)) * 0.5
    value, grad = oracle(W.ravel())
    ref_value, ref_grad = numpy_oracle(X, y, W, name, c=c, bias=1.5, **params)
    assert value == pytest.approx(ref_value, rel=1e-12)
    np.testing.assert_allclose(grad, ref_grad.ravel(), rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("layout,dtype,itype", [
    ("csr", np.float32, np.int64), ("csr", np.float64, np.int32), ("dense", np.float64, None)])
@pytest.mark.parametrize("k", [3, 4, 10, 20, 35])
@pytest.mark.parametrize("name", LOSSES)
def test_feature_major_view_is_the_same_oracle(name, k, layout, dtype, itype, n_threads):
    """The feature-major view (w[j k + c] = W[c, j]) gives the same J and the same
    gradient, permuted, to the bit: the kernel sums the same products in the same order
    whether it reads W in place (k = 4, 20, 35: unpadded blocks) or a padded copy
    (k = 3, 10).  With n_partitions = 2 its multiplexer adds the same partial sums."""
    rng = np.random.default_rng(k + 100)
    X = make_X(layout, dtype, itype, m=70, d=13, seed=k)
    m = X.shape[0]
    y, params = loss_setup(name, m, rng, k)
    c = rng.random(m) * 2
    data = Dataset(X, intercept_scaling=1.5)
    for n_partitions in (1, 2):
        oracle = VectorOracle(data, name, y, k, c, n_threads=n_threads,
                              n_partitions=n_partitions, **params)
        view = oracle.feature_major_view()
        W = rng.normal(size=(k, data.n_weights)) * 0.5
        w = W.ravel()
        v = view.from_class_major(w)
        np.testing.assert_array_equal(v, W.T.ravel())
        np.testing.assert_array_equal(view.to_class_major(v), w)
        value, grad = oracle(w)
        value_fm, grad_fm = view(v)
        assert value_fm == value
        np.testing.assert_array_equal(view.to_class_major(grad_fm), grad)
        assert grad_fm.shape == (oracle.n_weights,) and view.n_calls == 1
        assert not oracle.feature_major and oracle.from_class_major(w) is not w


@pytest.mark.parametrize("bias", [0.0, 1.5])
@pytest.mark.parametrize("name", ["softmax", "multiclass_hinge"])
def test_rows_of_every_small_length_match_numpy(name, bias):
    """A row's scores take its stored entries two at a time (even and odd accumulators,
    fr_vec.h) and the odd one last: rows of 0 to 7 entries against the NumPy reference (tolerances as above)."""
    rng = np.random.default_rng(6)
    d, rows = 30, []
    for length in list(range(8)) * 3:
        cols = np.sort(rng.choice(d, size=length, replace=False))
        rows.append((cols, rng.normal(size=length)))
    indptr = np.cumsum([0] + [len(c) for c, _ in rows])
    X = sp.csr_matrix((np.concatenate([v for _, v in rows]),
                       np.concatenate([c for c, _ in rows]).astype(np.int32), indptr),
                      shape=(len(rows), d))
    y = rng.integers(0, K, X.shape[0])
    data = Dataset(X, intercept_scaling=bias)
    W = rng.normal(size=(K, data.n_weights))
    value, grad = VectorOracle(data, name, y, K)(W.ravel())
    ref_value, ref_grad = numpy_oracle(X, y, W, name, bias=bias)
    assert value == pytest.approx(ref_value, rel=1e-12)
    np.testing.assert_allclose(grad, ref_grad.ravel(), rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("name", LOSSES)
def test_partitions_add_up(name):
    """n_partitions=3 (the multiplexer's partial sums) equals one partition."""
    rng = np.random.default_rng(2)
    X = make_X("csr")
    y, params = loss_setup(name, X.shape[0], rng)
    data = Dataset(X)
    W = rng.normal(size=K * data.n_weights)
    v1, g1 = VectorOracle(data, name, y, K, **params)(W)
    v3, g3 = VectorOracle(data, name, y, K, n_partitions=3, **params)(W)
    assert v3 == pytest.approx(v1, rel=1e-13)
    np.testing.assert_allclose(g3, g1, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_same_bits_for_a_thread_count(n_threads):
    """Fixed-order reductions: repeated calls give identical bits."""
    X = make_X("csr", m=400, d=60)
    y = np.random.default_rng(3).integers(0, K, 400)
    prob = fr.Problem(X, y, loss="softmax", n_threads=n_threads)
    w = np.random.default_rng(4).normal(size=prob.n_weights)
    first = prob.oracle(w)
    for _ in range(3):
        again = prob.oracle(w)
        assert again[0] == first[0]
        assert np.array_equal(again[1], first[1])


def test_problem_uses_kernel_and_checks_input():
    X = make_X("csr")
    y = np.random.default_rng(5).integers(0, K, X.shape[0])
    prob = fr.Problem(X, y, loss="multiclass_hinge", fit_intercept=True, n_threads=2)
    assert isinstance(prob.oracle, VectorOracle) and prob.oracle.n_threads in (1, 2)
    with pytest.raises(ValueError, match="w has shape"):
        prob.oracle(np.zeros(3))
    data = Dataset(X)
    with pytest.raises(ValueError, match="class indices"):
        VectorOracle(data, "softmax", np.full(X.shape[0], K), K)
    with pytest.raises(ValueError, match="symmetric"):
        VectorOracle(data, "multivariate_regression", np.zeros((X.shape[0], K)), K,
                     M=np.triu(np.ones((K, K))))
    with pytest.raises(ValueError, match="cost"):
        VectorOracle(data, "scaled_soft_margin", y, K, cost=np.ones((K, K)))
    with pytest.raises(ValueError, match="loss_name"):
        VectorOracle(data, "hinge", y, K)


# ---- the column path (G = X^T U from the column copy of X, fastrisk/columns.py) ------------

def column_oracle(monkeypatch, name, k, dtype, itype, n_threads, m=70, d=13, seed=0, **kw):
    """(X, oracle, y, params, c) with the oracle on the column path, cut into chunks of 16
    stored entries so that the threads share many; X has an empty row and an empty column."""
    monkeypatch.setattr(oracle_module, "CHUNK_NNZ", 16)
    rng = np.random.default_rng(seed + 7)
    X = make_X("csr", dtype, itype, m=m, d=d, seed=seed)
    X = sp.csr_matrix(X.multiply(np.r_[np.ones(d - 1), 0.0][None, :]).astype(dtype))
    X.eliminate_zeros()
    X.indices, X.indptr = X.indices.astype(itype), X.indptr.astype(itype)
    y, params = loss_setup(name, m, rng, k)
    c = rng.random(m) * 2
    data = Dataset(X, intercept_scaling=1.5)
    oracle = VectorOracle(data, name, y, k, c, n_threads=n_threads, columns=True, **params, **kw)
    assert oracle.uses_columns()
    return X, oracle, y, params, c


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("dtype,itype", [(np.float32, np.int64), (np.float64, np.int32)])
@pytest.mark.parametrize("k", [3, 4, 10, 20, 35])
@pytest.mark.parametrize("name", LOSSES)
def test_column_path_matches_numpy(monkeypatch, name, k, dtype, itype, n_threads):
    """Every block width (as test_class_counts_match_numpy), with an intercept and sample
    weights, against the NumPy reference (same tolerances); the feature-major view gives
    the same bits, permuted (the same products in the same order, read in place or from
    the padded copy)."""
    X, oracle, y, params, c = column_oracle(monkeypatch, name, k, dtype, itype, n_threads,
                                            seed=k)
    for a in (X.data, X.indices, X.indptr):
        a.flags.writeable = False
    W = np.random.default_rng(k).normal(size=(k, 14)) * 0.5
    value, grad = oracle(W.ravel())
    ref_value, ref_grad = numpy_oracle(X, y, W, name, c=c, bias=1.5, **params)
    assert value == pytest.approx(ref_value, rel=1e-12)
    np.testing.assert_allclose(grad, ref_grad.ravel(), rtol=1e-11, atol=1e-14)
    assert not grad.reshape(k, 14)[:, 12].any()  # the empty column
    view = oracle.feature_major_view()
    value_fm, grad_fm = view(view.from_class_major(W.ravel()))
    assert value_fm == value
    np.testing.assert_array_equal(view.to_class_major(grad_fm), grad)
    oracle.columns = False
    row_value, row_grad = oracle(W.ravel())
    assert value == pytest.approx(row_value, rel=1e-13)
    np.testing.assert_allclose(grad, row_grad, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("k", [4, 10])
def test_column_path_same_bits_for_every_thread_count(monkeypatch, k):
    """The column kernel with 1, 2 and 3 threads and with more threads than columns
    (8 threads, 5 columns and the intercept): the same bits on every call and for every
    thread count."""
    from fastrisk import _voracle

    X, oracle, y, params, c = column_oracle(monkeypatch, "softmax", k, np.float64, np.int32,
                                            1, m=200, d=5)
    d = oracle.data
    w = np.random.default_rng(8).normal(size=oracle.n_weights)
    results = []
    for n_threads in (1, 2, 3, 8, 2, 3):
        grad = np.empty(oracle.n_weights)
        layout = _voracle.column_layout(d.n_weights, k)
        U, scratch = _voracle.column_buffers(n_threads, 200, k)
        value = _voracle.vector_risk_gradient_columns(
            d.data, d.indices, d.indptr, d.bias, *oracle._column_args(), w, k, oracle.kernel_id,
            oracle.y, oracle._Y, oracle._P, oracle._S, oracle.c, 1.0, grad, layout, U, scratch,
            n_threads)
        results.append((value, grad))
    assert len(oracle._column_args()[-1]) > 2  # several column chunks
    for value, grad in results[1:]:
        assert value == results[0][0] and np.array_equal(grad, results[0][1])
    ref_value, ref_grad = numpy_oracle(X, y, w.reshape(k, -1), "softmax", c=c, bias=1.5)
    assert results[0][0] / 200 == pytest.approx(ref_value, rel=1e-12)
    np.testing.assert_allclose(results[0][1] / 200, ref_grad.ravel(), rtol=1e-11, atol=1e-14)


def test_column_rule_and_argument_checks(monkeypatch):
    """use_columns for the vector oracle: a thread's row-path buffer is 8 D kp bytes
    (kp = k rounded up to a multiple of 4), the column path holds the copy and U
    (8 m kp bytes); the kernel checks its arguments."""
    from fastrisk import _voracle

    X = sp.random(40, oracle_module.COLUMN_BYTES // (8 * 12) + 1, density=1e-3, format="csr",
                  random_state=0)
    y = np.arange(40) % 10
    # kp = 12; on one thread too: the copy and U are smaller than the one buffer
    assert fr.Problem(X, y, loss="softmax", n_threads=1).oracle.uses_columns()
    assert fr.Problem(X, y, loss="softmax", n_threads=2).oracle.uses_columns()
    assert not fr.Problem(X, y % 2 + 2 * (y % 3 == 0), loss="softmax").oracle.uses_columns()
    assert not fr.Problem(X, y, loss="softmax", n_partitions=2).oracle.uses_columns()
    _, oracle, *_ = column_oracle(monkeypatch, "softmax", 4, np.float64, np.int32, 2)
    d = oracle.data
    values, rows, colptr, rc, cc = oracle._column_args()
    layout = _voracle.column_layout(14, 4)
    U, scratch = _voracle.column_buffers(2, 70, 4)
    good = [d.data, d.indices, d.indptr, d.bias, values, rows, colptr, rc, cc, np.zeros(56), 4,
            0, oracle.y, oracle._Y, oracle._P, oracle._S, oracle.c, 1.0, np.empty(56), layout,
            U, scratch, 2]
    _voracle.vector_risk_gradient_columns(*good)
    for i, bad, match in [(6, colptr[:-1], "column view"), (7, rc[::-1].copy(), "chunks"),
                          (20, U[:-1], "U must"), (21, scratch[:1], "scratch"),
                          (19, layout[:1], "layout"), (12, oracle.y[:-1], "class index"),
                          (9, np.zeros(55), "n_classes x D")]:
        args = list(good)
        args[i] = bad
        with pytest.raises(ValueError, match=match):
            _voracle.vector_risk_gradient_columns(*args)
