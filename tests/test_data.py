"""Data layer (fastrisk/data.py): zero-copy views, label encodings, input validation."""

import numpy as np
import pytest
import scipy.sparse as sp

import fastrisk as fr
from fastrisk.data import (
    Dataset,
    check_sample_weight,
    check_targets,
    check_X,
    encode_binary,
    encode_labels,
    encode_multiclass,
)


def random_csr(dtype=np.float64, itype=np.int32, shape=(20, 7), seed=0):
    X = sp.random(*shape, density=0.4, format="csr", dtype=dtype, random_state=seed)
    # assigned after construction: scipy's constructor would shrink small int64 indices
    X.indices, X.indptr = X.indices.astype(itype), X.indptr.astype(itype)
    return X


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("itype", [np.int32, np.int64])
@pytest.mark.parametrize("read_only", [False, True])
def test_csr_is_not_copied(dtype, itype, read_only):
    X = random_csr(dtype, itype)
    if read_only:
        for a in (X.data, X.indices, X.indptr):
            a.flags.writeable = False
    D = Dataset(X)
    assert np.shares_memory(D.data, X.data) and np.shares_memory(D.indices, X.indices)
    assert np.shares_memory(D.indptr, X.indptr)
    assert D.dtype == dtype and D.indices.dtype == itype and not D.dense


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("read_only", [False, True])
def test_dense_is_not_copied(dtype, read_only):
    X = np.random.default_rng(0).normal(size=(6, 4)).astype(dtype)
    X.flags.writeable = not read_only
    D = Dataset(X)
    assert np.shares_memory(D.data, X) and D.dense and D.data.shape == (24,)
    np.testing.assert_array_equal(D.indptr, np.arange(0, 28, 4))


def test_conversions_that_must_copy_give_the_same_matrix():
    X = random_csr()
    for other in (X.tocsc(), X.tocoo(), sp.csr_array(X)):
        np.testing.assert_array_equal(check_X(other).toarray(), X.toarray())
    counts = (X * 10).astype(np.int64)
    assert check_X(counts).dtype == np.float64
    np.testing.assert_array_equal(check_X(counts).toarray(), counts.toarray())
    dense = X.toarray()
    Xf = np.asfortranarray(dense)
    out = check_X(Xf)
    assert out.flags.c_contiguous and not np.shares_memory(out, Xf)
    np.testing.assert_array_equal(out, dense)
    assert check_X(dense.astype(np.int64)).dtype == np.float64
    assert check_X(dense > 0.5).dtype == np.float64
    # mixed index dtypes (int32 indices, int64 indptr) become int64 for one kernel signature
    mixed = X.copy()
    mixed.indptr = mixed.indptr.astype(np.int64)
    out = check_X(mixed)
    assert out.indices.dtype == out.indptr.dtype  # scipy may shrink them to int32
    np.testing.assert_array_equal(out.toarray(), X.toarray())


def test_intercept_is_virtual_and_row_norms_include_it():
    X = random_csr()
    D = Dataset(X, intercept_scaling=3.0)
    assert D.n_weights == 8 and D.bias == 3.0 and D.nnz == X.nnz
    np.testing.assert_allclose(D.row_sqnorms(), (X.toarray() ** 2).sum(1) + 9.0, rtol=1e-14)
    w = np.arange(8.0)
    np.testing.assert_allclose(D.decision(w), X.toarray() @ w[:7] + 3.0 * 7.0, rtol=1e-14)
    coef, intercept = D.split(w)
    assert intercept == 21.0 and coef.shape == (7,)
    Dd = Dataset(X.toarray().astype(np.float32))
    np.testing.assert_allclose(Dd.row_sqnorms(), (X.toarray() ** 2).sum(1), rtol=1e-6)
    # a squared norm beyond the largest double (1e160^2) is refused naming the row
    big = X.toarray()
    big[3, 0] = 1e160
    with pytest.raises(ValueError, match="^X: the squared norm of row 3 overflows"):
        Dataset(big).row_sqnorms()


def test_solvers_refuse_rows_whose_squared_norm_overflows():
    """SDCA's dual step 1/||x_i||^2 vanishes on such rows, so it would run to its epoch
    budget without moving; every solver that reads the norms refuses the data instead."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4)) * 1e160
    y = np.sign(X[:, 0])
    for solver in ("sdca", "auto"):
        with pytest.raises(ValueError, match="^X: the squared norm of row 0 overflows"):
            fr.solve(fr.Problem(X, y, loss="hinge"), solver)


def test_label_encodings():
    y_pm, classes = encode_binary(np.array(["spam", "ham", "spam"]), 3)
    np.testing.assert_array_equal(y_pm, [1, -1, 1])
    assert list(classes) == ["ham", "spam"]
    y_pm, classes = encode_binary([0, 7, 7, 0], 4)
    np.testing.assert_array_equal(y_pm, [-1, 1, 1, -1])
    idx, classes = encode_multiclass([3, 1, 2, 3], 4)
    np.testing.assert_array_equal(idx, [2, 0, 1, 2])
    np.testing.assert_array_equal(check_targets([[0.5], [2.0]], 2), [0.5, 2.0])
    np.testing.assert_array_equal(check_sample_weight(2.0, 3), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("y", [[1, -1, 1, 1], [0.0, 0.0], [2.5, -0.5, 2.5], [True, False, True],
                               np.array([7, 3], dtype=np.uint8), [3, 1, 2, 1], ["b", "a", "b"],
                               [4.0]])
def test_label_encoding_matches_numpy_unique(y):
    # numeric labels with at most two values take a path without np.unique's sort
    y = np.asarray(y)
    classes, index = encode_labels(y, None)
    ref_classes, ref_index = np.unique(y, return_inverse=True)
    assert classes.dtype == ref_classes.dtype and index.dtype == ref_index.dtype
    np.testing.assert_array_equal(classes, ref_classes)
    np.testing.assert_array_equal(index, ref_index)


def test_problem_encodes_by_task():
    X = random_csr()
    y = np.where(np.arange(20) % 3 == 0, 5, 9)
    prob = fr.Problem(X, y, loss="hinge")
    np.testing.assert_array_equal(prob.y, np.where(y == 9, 1.0, -1.0))
    assert list(prob.classes_) == [5, 9]
    prob = fr.Problem(X, np.linspace(-1, 1, 20), loss="squared")
    np.testing.assert_array_equal(prob.y, np.linspace(-1, 1, 20))
    prob = fr.Problem(X, np.arange(20) % 4, loss="softmax")
    assert prob.n_classes == 4 and prob.n_weights == 4 * 7
    prob = fr.Problem(X, None, loss="novelty")
    assert (prob.y == 0).all()


BAD = [
    (lambda X, y: fr.Problem(np.where(X.toarray() > 0.9, np.nan, X.toarray()), y), ValueError, "X contains NaN"),
    (lambda X, y: fr.Problem(X.multiply(np.inf).tocsr(), y), ValueError, "X contains NaN or inf"),
    (lambda X, y: fr.Problem(X, y[:-1]), ValueError, "y has 19 entries but X has 20"),
    (lambda X, y: fr.Problem(X[:0], y[:0]), ValueError, "X is empty"),
    (lambda X, y: fr.Problem(np.zeros((3, 0)), y[:3]), ValueError, "X is empty"),
    (lambda X, y: fr.Problem(X, np.ones(20)), ValueError, "y must hold exactly two classes"),
    (lambda X, y: fr.Problem(X, np.zeros(20), loss="softmax"), ValueError, "y must hold at least two"),
    (lambda X, y: fr.Problem(X, y, sample_weight=-np.ones(20)), ValueError, "sample_weight must be non-neg"),
    (lambda X, y: fr.Problem(X, y, sample_weight=np.ones(3)), ValueError, "sample_weight has shape"),
    (lambda X, y: fr.Problem(X, y, sample_weight=np.r_[np.nan, np.ones(19)]), ValueError,
     "sample_weight contains NaN"),
    (lambda X, y: fr.Problem(X, y, sample_weight=["a"] * 20), TypeError, "sample_weight must be numeric"),
    (lambda X, y: fr.Problem(X, y, sample_weight=np.zeros(20)), ValueError, "positive sum"),
    (lambda X, y: fr.Problem(X, np.r_[np.nan, y[1:]].astype(float)), ValueError, "y contains NaN"),
    (lambda X, y: fr.Problem(X, ["a"] * 20, loss="squared"), TypeError, "y must be numeric"),
    (lambda X, y: fr.Problem(X, -np.ones(20), loss="poisson"), ValueError, "non-negative"),
    (lambda X, y: fr.Problem(X.toarray().astype(complex), y), TypeError, "X must have a real numeric"),
    (lambda X, y: fr.Problem(np.array([["a", "b"]] * 20), y), TypeError, "X must have a real numeric"),
    (lambda X, y: fr.Problem(np.ones(20), y), ValueError, "X must be 2-dimensional"),
    (lambda X, y: fr.Problem(X, y, fit_intercept=True, intercept_scaling=-1.0), ValueError,
     r"^intercept_scaling must be a finite number > 0 and <= 1e\+154, got -1.0$"),
    (lambda X, y: fr.Problem(X, y, fit_intercept=True, intercept_scaling=np.inf), ValueError,
     r"^intercept_scaling must be a finite number > 0 and <= 1e\+154, got inf$"),
    # its square enters every row's norm
    (lambda X, y: fr.Problem(X, y, fit_intercept=True, intercept_scaling=1e155), ValueError,
     r"^intercept_scaling must be a finite number > 0 and <= 1e\+154, got 1e\+155$"),
    (lambda X, y: fr.LinearClassifier(intercept_scaling=1e300).fit(X, y), ValueError,
     r"^intercept_scaling must be a finite number >= 0 and <= 1e\+154, got 1e\+300$"),
    (lambda X, y: fr.Problem(X, y, fit_intercept=1), ValueError,
     r"^fit_intercept must be a bool, got 1$"),
    (lambda X, y: fr.Problem(X, y, alpha=True), ValueError,
     r"^alpha must be a finite number > 0, got True$"),
    (lambda X, y: fr.Problem(X, y, alpha=0.0), ValueError, "alpha must be"),
    (lambda X, y: fr.Problem(X, y, n_threads=0), ValueError, "n_threads"),
    (lambda X, y: fr.Problem(X, y, n_partitions=0), ValueError, "n_partitions"),
    # sizes whose uint64 sum wraps around to n_samples
    (lambda X, y: fr.Problem(X, y, n_partitions=np.array([2**63, 2**63 + 20], dtype=np.uint64)),
     ValueError, "^n_partitions as a sequence"),
    # integer options reach the kernels as 64-bit integers
    (lambda X, y: fr.solve(fr.Problem(X, y), "pegasos", batch_size=2**63), ValueError,
     r"^batch_size must be an integer <= 2\*\*62, got 9223372036854775808$"),
    (lambda X, y: fr.solve(fr.Problem(X, y, loss="logistic"), "newton", max_cg=2**63),
     ValueError, r"^max_cg must be an integer <= 2\*\*62"),
    (lambda X, y: fr.solve(fr.Problem(X, y), "bmrm", max_bundle="10"), ValueError,
     r"^max_bundle must be None or an integer >= 2, got '10'$"),
    (lambda X, y: fr.solve(fr.Problem(X, y), "prox_bundle", R=1e-300), ValueError,
     r"^R must be a finite number >= 1e-150 and <= 1e\+150, got 1e-300$"),
    (lambda X, y: fr.Problem(X, y).coef_intercept(np.zeros(3)), ValueError,
     r"^w has shape \(3,\), expected \(7,\)$"),
    (lambda X, y: fr.Problem(X, y).coef_intercept(np.array(["x"] * 7)), TypeError,
     "^w must be a real numeric vector, got dtype <U1$"),
    (lambda X, y: fr.LinearClassifierCV(cv=[1, 2]).fit(X, y), ValueError, "^cv: fold 1 "),
    (lambda X, y: fr.LinearClassifierCV(n_alphas=10**30).fit(X, y), ValueError,
     r"^n_alphas must be an integer >= 1 and <= 1e\+06"),
    (lambda X, y: fr.path(X, y, n_alphas=10**30), ValueError, "^n_alphas must be"),
    (lambda X, y: fr.LinearClassifierCV(n_alphas=2, scoring=lambda e, X, y: "a").fit(X, y),
     TypeError, "^scoring must return a number, got 'a'$"),
    # a prox's threshold would map NaN to 0
    (lambda X, y: fr.make_regularizer("l1").prox(np.array([np.nan, 1.0]), 0.1), ValueError,
     "^v contains NaN or infinity$"),
    (lambda X, y: fr.make_regularizer("lp", p=1.5).prox(np.array([np.inf, 1.0]), 0.1),
     ValueError, "^v contains NaN or infinity$"),
    (lambda X, y: fr.Loss("logistic").values(np.zeros((3, 2)), np.ones(3)), ValueError,
     r"^f must be a 1-d array of real numbers, got dtype float64, shape \(3, 2\)$"),
    (lambda X, y: fr.Loss("logistic").conjugate(np.zeros(3), np.ones(4)), ValueError,
     "^a and y must have the same length, got 3 and 4$"),
    (lambda X, y: fr.show_config(file=5), TypeError, "^file must be a text stream"),
    # a penalty's parameter is checked where another penalty is asked for too
    (lambda X, y: fr.Problem(X, y, penalty="l2", l1_ratio="x"), ValueError,
     r"^l1_ratio must be a finite number >= 0 and <= 1, got 'x'$"),
    (lambda X, y: fr.LinearClassifier(penalty="l1", p=5.0).fit(X, y), ValueError,
     r"^p must be a finite number > 1 and <= 2, got 5.0$"),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_input_names_the_argument(case):
    make, exc, msg = BAD[case]
    X = random_csr()
    y = np.where(np.arange(20) % 2 == 0, 1, -1)
    with pytest.raises(exc, match=msg):
        make(X, y)


def test_unsorted_or_duplicate_csr_indices_are_rejected():
    data, indptr = np.array([1.0, 2.0]), np.array([0, 2])
    unsorted = sp.csr_matrix((data, np.array([3, 1]), indptr), shape=(1, 4))
    dup = sp.csr_matrix((data, np.array([1, 1]), indptr), shape=(1, 4))
    for X in (unsorted, dup):
        with pytest.raises(ValueError, match="unsorted or duplicate column indices"):
            Dataset(X)
        X.sum_duplicates()  # the documented fix
        assert Dataset(X).nnz == X.nnz


def _csr(data, indices, indptr, shape):
    """A CSR matrix whose arrays are set after construction (scipy checks nothing then)."""
    X = sp.csr_matrix(shape)
    X.data, X.indices, X.indptr = (np.asarray(data, dtype=float), np.asarray(indices),
                                   np.asarray(indptr))
    return X


MALFORMED = [
    # a column index far beyond n_features (a kernel would index outside w)
    (lambda: sp.csr_matrix((np.ones(3), np.array([0, 10**8, 2]), np.array([0, 1, 2, 3])),
                           shape=(3, 5)), "column index 100000000 out of range"),
    # a column equal to n_features (it would index the intercept's weight)
    (lambda: _csr(np.ones(3), [0, 5, 2], [0, 1, 2, 3], (3, 5)),
     r"column index 5 out of range \[0, 5\) \(1-based indices\?"),
    (lambda: _csr(np.ones(3), [0, -3, 2], [0, 1, 2, 3], (3, 5)), "column index -3"),
    (lambda: _csr(np.ones(3), [0, 1, 2], [0, 2, 1, 3], (3, 5)), "X.indptr decreases at row 1"),
    (lambda: _csr(np.ones(3), [0, 1, 2], [0, 1, 2, 30], (3, 5)), "X.indptr runs from 0 to 30"),
    (lambda: _csr(np.ones(3), [0, 1, 2], [1, 1, 2, 3], (3, 5)), "X.indptr runs from 1"),
    (lambda: _csr(np.ones(3), [0, 1, 2], [0, 1, 3], (3, 5)), "X.indptr has 3 entries, expected 4"),
    (lambda: _csr(np.ones(2), [0, 1, 2], [0, 1, 2, 3], (3, 5)), "len.X.data. = 2"),
    (lambda: _csr(np.ones(3), np.array([0.0, 1, 2]), [0, 1, 2, 3], (3, 5)),
     "X.indices must be a 1-d integer array"),
    (lambda: sp.csc_matrix((np.ones(2), np.array([0, 7]), np.array([0, 1, 2])), shape=(3, 2)),
     "row index 7 out of range"),
]


@pytest.mark.parametrize("case", range(len(MALFORMED)))
@pytest.mark.parametrize("entry", ["Dataset", "solve", "fit", "predict", "model"])
def test_malformed_sparse_structure_is_refused_by_every_entry_point(case, entry):
    make, message = MALFORMED[case]
    X = make()
    arrays = [a.copy() for a in (X.data, X.indices, X.indptr)]
    y = np.array([1.0, -1.0, 1.0])[: X.shape[0]]
    good = np.random.default_rng(0).normal(size=X.shape)
    with pytest.raises((ValueError, TypeError), match=message):
        if entry == "Dataset":
            Dataset(X)
        elif entry == "solve":
            fr.solve(fr.Problem(X, y, loss="hinge"), solver="sdca", max_iter=2)
        elif entry == "fit":
            fr.LinearRegressor(solver="lbfgs", max_iter=2).fit(X, y)
        elif entry == "predict":
            fr.LinearClassifier(solver="lbfgs", max_iter=2).fit(good, y).predict(X)
        else:
            fr.LinearModel(np.ones(X.shape[1]), 0.0, loss="hinge", penalty="l2", alpha=1.0,
                           solver="sdca", n_samples=3, classes=np.array([-1, 1])).predict(X)
    for before, after in zip(arrays, (X.data, X.indices, X.indptr)):  # nothing changed
        np.testing.assert_array_equal(before, after)


def test_structure_check_is_vectorised_and_copies_nothing():
    """Valid CSR with unsigned or mixed index dtypes passes the check (check_X then copies
    to one signed dtype, documented); the check itself returns the canonical flag."""
    from fastrisk.data import check_sparse_structure

    X = random_csr()
    assert check_sparse_structure(X) is True
    Y = X.copy()
    Y.indices = Y.indices.astype(np.uint32)
    assert check_sparse_structure(Y) is True
    np.testing.assert_array_equal(check_X(Y).toarray(), X.toarray())
    Z = _csr([1.0, 2.0], [3, 1], [0, 2, 2], (2, 4))
    assert check_sparse_structure(Z) is False  # valid, unsorted


def test_oracle_checks_w_and_class_indices():
    from fastrisk.losses import Loss
    from fastrisk.oracle import LocalOracle, VectorOracle

    D = Dataset(random_csr(), intercept_scaling=1.0)
    y = np.where(np.arange(20) % 2 == 0, 1.0, -1.0)
    oracle = LocalOracle(D, Loss("hinge"), y)
    with pytest.raises(ValueError, match=r"w has shape \(7,\), expected \(8,\)"):
        oracle(np.zeros(7))
    with pytest.raises(TypeError, match="w must be a real numeric vector"):
        oracle(np.array(["a"] * 8))
    with pytest.raises(ValueError, match="k must be a partition number"):
        oracle.partial(np.zeros(8), 1)
    with pytest.raises(ValueError, match="y must be a numeric vector of length 20"):
        LocalOracle(D, Loss("hinge"), y[:5])
    with pytest.raises(ValueError, match=r"class indices in \[0, 3\)"):
        VectorOracle(D, "softmax", np.arange(20) % 4, 3)
    value, grad = oracle(np.zeros(8))
    assert value == pytest.approx(1.0) and grad.shape == (8,)  # hinge at w = 0: mean of 1


def test_dataset_arrays_are_read_only_views():
    """The kernels trust the index arrays checked when the Dataset was built: the Dataset
    cannot be used to change them (the caller's X itself is not copied and stays writable)."""
    import scipy.sparse as sp

    X = sp.random(6, 4, density=0.5, format="csr", random_state=0)
    d = Dataset(X)
    for a in (d.data, d.indices, d.indptr):
        assert not a.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            a[:1] = 0
    assert np.shares_memory(d.indices, X.indices) and X.indices.flags.writeable
    dense = Dataset(np.ones((3, 2)))
    assert not dense.data.flags.writeable


def test_labels_of_mixed_types_are_named():
    """Labels with no common order (an object array of str and int) give a TypeError naming
    y (or classes), not numpy's comparison error."""
    X = np.eye(4)
    mixed = np.array(["a", 1, "a", 1], dtype=object)
    with pytest.raises(TypeError, match="y mixes labels of types"):
        fr.Problem(X, mixed, loss="logistic")
    with pytest.raises(TypeError, match="classes mixes labels of types"):
        fr.Problem(X, [1, 2, 1, 2], loss="logistic", classes=mixed[:2])


def test_other_sparse_formats_become_canonical_csr():
    """A BSR matrix (whose conversion can leave the column indices unsorted) or a COO matrix
    with duplicate entries is converted to canonical CSR on the converted copy: the same
    matrix, accepted by Problem as by the estimators."""
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 4)) * (rng.random((6, 4)) > 0.4)
    y = np.where(np.arange(6) % 2, 1.0, -1.0)
    coo = sp.coo_matrix((np.r_[1.0, 2.0, 3.0], (np.r_[0, 0, 5], np.r_[1, 1, 3])), shape=(6, 4))
    for M, dense in ((sp.bsr_matrix(A, blocksize=(2, 2)), A), (coo, coo.toarray())):
        d = Dataset(M)
        assert d.X.format == "csr" and d.X.has_canonical_format
        np.testing.assert_array_equal(d.X.toarray(), dense)
        fr.Problem(M, y, loss="logistic")


@pytest.mark.parametrize("loss", ["hinge", "softmax", "squared"])
def test_complex_or_sparse_targets_are_refused_by_name(loss):
    """Complex labels are not classes and a sparse y is not a vector (np.asarray makes
    it a 0-d object array): both are refused, naming y."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    if loss != "squared":  # real targets: complex numbers are refused as non-numeric
        with pytest.raises(TypeError, match="y holds complex numbers"):
            fr.Problem(X, y + 1j, loss=loss)
    else:
        with pytest.raises(TypeError, match="y must be numeric"):
            fr.Problem(X, y + 1j, loss=loss)
    with pytest.raises(TypeError, match="y must be an array, not a scipy sparse matrix"):
        fr.Problem(X, sp.csr_matrix(y[:, None]), loss=loss)
    with pytest.raises(TypeError, match="^sample_weight must be an array, not a scipy sparse"):
        fr.Problem(X, y, loss=loss, sample_weight=sp.csr_matrix(np.ones((12, 1))))
    with pytest.raises(ValueError, match="^y is required: one label or target per row"):
        fr.Problem(X, None, loss=loss)


@pytest.mark.parametrize("start", [np.full(3, 1 + 5j), np.array(["1"] * 3), [None] * 3])
def test_a_start_that_is_not_real_numbers_is_refused(start):
    """start= of complex numbers (whose imaginary parts a cast dropped, with a warning)
    or of strings (which a cast parsed) is refused; integers are real numbers."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    problem = fr.Problem(X, np.where(X[:, 0] > 0, 1.0, -1.0), loss="logistic")
    for solver in ("lbfgs", "newton", "sdca", "cd"):
        with pytest.raises(ValueError, match="start must be a Result or a finite real vector"):
            fr.solve(problem, solver, start=start)
    assert fr.solve(problem, "lbfgs", start=[1, 0, 0]).status == "converged"


def test_x_wider_than_a_weight_vector_can_be_is_refused_by_name():
    """A CSR X whose shape claims more columns than a float64 weight vector can hold (its
    bytes beyond the address space) is refused naming X, not by an allocation in a solver;
    the widest accepted width is 2**60 - 2 (n_features + 1 weights of 8 bytes < 2**63)."""
    def wide(n):
        return sp.csr_matrix((np.ones(2), np.array([0, 1]), np.array([0, 1, 2])), shape=(2, n))

    with pytest.raises(ValueError, match=r"^X has 1152921504606846975 columns, more than a "
                                         r"float64 weight vector can hold"):
        fr.Problem(wide(2**60 - 1), [1.0, -1.0])
    from fastrisk.data import check_X
    assert check_X(wide(2**60 - 2), "X").shape[1] == 2**60 - 2


def test_frames_of_nullable_numeric_columns_are_numbers(tmp_path):
    """A DataFrame of pandas' nullable Float64, Int64 and boolean columns (np.asarray makes
    it an object array) is X for Problem, LinearModel.predict and dump_svmlight, the same
    as its float64 values; a missing value (pd.NA) is refused as NaN."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    X[:, 1], X[:, 2] = np.round(X[:, 1] * 10), X[:, 2] > 0
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    frame = pd.DataFrame({"a": pd.array(X[:, 0], dtype="Float64"),
                          "b": pd.array(X[:, 1].astype(int), dtype="Int64"),
                          "c": pd.array(X[:, 2].astype(bool), dtype="boolean")})
    prob = fr.Problem(frame, y, loss="logistic")
    np.testing.assert_array_equal(prob.data.X, X)
    model = fr.LinearClassifier(random_state=0).fit(X, y).to_model()
    # the frame's values come out column-major: the products of X in that order
    np.testing.assert_array_equal(model.decision_function(frame),
                                  model.decision_function(np.asfortranarray(X)))
    fr.dump_svmlight(frame, y, tmp_path / "f.svm")
    fr.dump_svmlight(X, y, tmp_path / "x.svm")
    assert (tmp_path / "f.svm").read_bytes() == (tmp_path / "x.svm").read_bytes()
    missing = frame.copy()
    missing.loc[3, "a"] = pd.NA
    with pytest.raises(ValueError, match="^X contains NaN or infinity"):
        fr.Problem(missing, y)


@pytest.mark.parametrize("where", ["X", "X_csr", "y", "sample_weight"])
def test_longdouble_beyond_float64_is_refused_by_name(where):
    # 1e400 is finite in (x86) long double and overflows float64: the cast must not turn
    # it into inf and then report "NaN or infinity" in an input that holds neither
    if np.finfo(np.longdouble).max <= np.finfo(np.float64).max:
        pytest.skip("long double is float64 on this platform")
    big = np.longdouble("1e400")
    X, y, c = np.ones((3, 2)), np.array([0.5, 1.0, 2.0]), np.ones(3)
    args = {"X": X, "y": y, "sample_weight": c}
    name = "X" if where == "X_csr" else where
    value = args[name].astype(np.longdouble)
    value[1] = big
    args[name] = sp.csr_matrix(value) if where == "X_csr" else value
    with pytest.raises(ValueError, match=f"^{name} has values beyond the float64 range"):
        fr.Problem(args["X"], args["y"], loss="squared", sample_weight=args["sample_weight"])
