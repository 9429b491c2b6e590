"""svmlight/libsvm I/O (fastrisk/svmlight.py) against scikit-learn's reader and round trips."""

import bz2
import gzip
import lzma
import zlib

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from fastrisk.datasets import load_a9a
from fastrisk.svmlight import dump_svmlight, load_svmlight


def assert_same(X, y, X_ref, y_ref):
    assert X.shape == X_ref.shape and X.has_canonical_format
    assert (X != X_ref).nnz == 0
    np.testing.assert_array_equal(y, y_ref)


# Small real files chosen to cover CRLF line ends and labels 1/2, real targets and sparse
# text; scikit-learn's reader is the reference (exact equality: both parse decimals
# to the nearest double).
@pytest.mark.parametrize("fname", ["mushrooms.bz2", "housing_scale.bz2", "reuters-moneyfx.tst.bz2"])
def test_real_files_match_sklearn(shared_file, fname):
    X, y = load_svmlight(shared_file(fname))
    assert_same(X, y, *load_svmlight_file(str(shared_file(fname))))


@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2", ".xz"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("zero_based", [False, True])
def test_round_trip(tmp_path, suffix, dtype, zero_based):
    # repr() of a float is exact, so write then read gives the same bits.
    rng = np.random.default_rng(0)
    X = sp.random(30, 12, density=0.3, format="csr", random_state=1) * 1e3
    X.data = (X.data * rng.choice([-1, 1], X.nnz)
              * 10.0 ** rng.integers(-20, 20, X.nnz)).astype(dtype)
    y = rng.normal(size=30)
    path = tmp_path / f"data.svm{suffix}"
    dump_svmlight(X, y, path, zero_based=zero_based)
    X2, y2 = load_svmlight(path, n_features=12, dtype=dtype, zero_based=zero_based)
    assert X2.dtype == dtype
    assert_same(X2, y2, X.astype(dtype), y)
    if suffix in (".gz", ".bz2"):  # really compressed: scikit-learn (no .xz) reads it back
        X3, y3 = load_svmlight_file(str(path), n_features=12, dtype=dtype, zero_based=zero_based)
        assert_same(X2, y2, X3, y3)


def test_dense_round_trip_and_empty_rows(tmp_path):
    X = np.array([[0.0, 1.5, 0.0], [0.0, 0.0, 0.0], [-2.0, 0.0, 3.0]])
    dump_svmlight(X, [1, -1, 1], tmp_path / "d.svm")
    X2, y2 = load_svmlight(tmp_path / "d.svm", n_features=3)
    np.testing.assert_array_equal(X2.toarray(), X)
    np.testing.assert_array_equal(y2, [1, -1, 1])


@pytest.mark.parametrize("token", ["qid:abc", "qid:", "qid:1:5", "qid:-1", "qid:1.5", "qid"])
def test_a_malformed_query_id_is_refused_with_its_line(tmp_path, token):
    path = tmp_path / "q.svm"
    path.write_text(f"1 qid:1 1:2\n-1 {token} 1:1\n")
    with pytest.raises(ValueError, match=f"q.svm: line 2: bad query id b'{token}'"):
        load_svmlight(path)


def test_comments_qid_and_auto_zero_based(tmp_path):
    path = tmp_path / "q.svm"
    path.write_text("# header\n+1 qid:3 1:0.5 4:2 # tail\n-1 qid:3 2:1e-3\n\n0 0:7\n")
    X, y = load_svmlight(path)  # index 0 present: "auto" reads it 0-based
    np.testing.assert_array_equal(y, [1, -1, 0])
    np.testing.assert_array_equal(X.toarray(), [[0, 0.5, 0, 0, 2], [0, 0, 1e-3, 0, 0],
                                                [7, 0, 0, 0, 0]])
    Xs, ys = load_svmlight_file(str(path), zero_based="auto")
    assert_same(X, y, Xs, ys)


def test_zero_based_header_decides_the_base(tmp_path):
    """A 0-based file whose column 0 is empty reads back unshifted: dump_svmlight writes the
    header "# Column indices are zero-based", which zero_based="auto" reads (scikit-learn
    reads the file the same with zero_based=True); a "one-based" header makes index 0 an
    error; a comment after the first data line says nothing about the base."""
    from fastrisk.svmlight import read_svmlight

    X = np.array([[0.0, 1.0, 2.0], [0.0, 3.0, 0.0]])
    path = tmp_path / "z.svm"
    dump_svmlight(X, [1, -1], path, zero_based=True)
    X2, y2, base = read_svmlight(path)
    assert base is True
    np.testing.assert_array_equal(X2.toarray(), X)
    assert_same(X2, y2, *load_svmlight_file(str(path), zero_based=True))
    dump_svmlight(X, [1, -1], path)
    assert read_svmlight(path)[2] is False
    np.testing.assert_array_equal(load_svmlight(path)[0].toarray(), X)
    path.write_text("# Column indices are one-based\n1 0:1\n")
    with pytest.raises(ValueError, match="line 2: index 0 in a 1-based file"):
        load_svmlight(path)
    path.write_text("1 2:1\n# Column indices are zero-based\n-1 1:1\n")
    np.testing.assert_array_equal(load_svmlight(path)[0].toarray(), [[0, 1], [1, 0]])


@pytest.mark.parametrize("text,msg", [
    ("1 1:2\nabc 2:3\n", "line 2: bad label"),
    ("1 1:2:3\n", "index:value"),
    ("1 1:x\n", "index:value"),
    ("1 1.5:2\n", "non-negative integers"),
    ("1 0:2\n", "index 0 in a 1-based file"),
    ("1 1:nan\n", "NaN or infinity"),
    ("# nothing\n", "no data lines"),
])
def test_malformed_files(tmp_path, text, msg):
    path = tmp_path / "bad.svm"
    path.write_text(text)
    with pytest.raises(ValueError, match=msg):
        load_svmlight(path, zero_based=False if "index 0" in msg else "auto")


def test_bad_arguments(tmp_path):
    path = tmp_path / "ok.svm"
    path.write_text("1 5:1\n")
    with pytest.raises(ValueError, match="n_features=3"):
        load_svmlight(path, n_features=3)
    with pytest.raises(ValueError, match="dtype"):
        load_svmlight(path, dtype=np.int32)
    with pytest.raises(ValueError, match="zero_based"):
        load_svmlight(path, zero_based="yes")
    with pytest.raises(ValueError, match="y has 2 entries but X has 1"):
        dump_svmlight(np.ones((1, 2)), [1, 2], tmp_path / "x.svm")


def test_bundled_a9a(shared_file):
    # shapes, nnz and label counts from ../shared/data/README.md; the test split equals
    # scikit-learn's reading of the shared copy.
    X, y, Xt, yt = load_a9a()
    assert X.shape == (32561, 123) and X.nnz == 451592 and Xt.shape == (16281, 123)
    assert Xt.nnz == 225732
    assert (y == -1).sum() == 24720 and (y == 1).sum() == 7841
    assert (yt == -1).sum() == 12435 and (yt == 1).sum() == 3846
    assert_same(Xt, yt, *load_svmlight_file(str(shared_file("a9a.t.bz2")), n_features=123))


def test_duplicate_indices_in_a_line_are_rejected_with_the_line_number(tmp_path):
    path = tmp_path / "dup.svm"
    path.write_text("1 1:1 2:2\n# comment\n-1 3:1 1:2 3:5\n")
    with pytest.raises(ValueError, match="line 3: duplicate feature index 3"):
        load_svmlight(path)
    with pytest.raises(ValueError):  # scikit-learn refuses them too
        load_svmlight_file(str(path))
    # distinct indices in any order are fine (scikit-learn wants them sorted): the same
    # matrix as scikit-learn's reading of the sorted lines
    path.write_text("1 1:1 2:2\n-1 3:1 1:2 2:5\n")
    X, y = load_svmlight(path)
    (tmp_path / "sorted.svm").write_text("1 1:1 2:2\n-1 1:2 2:5 3:1\n")
    assert_same(X, y, *load_svmlight_file(str(tmp_path / "sorted.svm")))


def test_huge_index_is_refused_without_building_the_matrix(tmp_path):
    path = tmp_path / "huge.svm"
    path.write_text(f"1 1:1\n-1 {2**40}:1\n")
    with pytest.raises(ValueError, match=r"line 2: feature index 1099511627776 is above "
                                         r"2\*\*31 - 1.*pass n_features"):
        load_svmlight(path)
    with pytest.raises(ValueError, match="line 2: feature index 1099511627776 is beyond "
                                         "n_features=1000"):
        load_svmlight(path, n_features=1000)
    # an explicit width that large is honoured (int64 indices; nothing of that size allocated)
    X, _ = load_svmlight(path, n_features=2**40)
    assert X.shape == (2, 2**40) and X.indices.dtype == np.int64 and X.indices[1] == 2**40 - 1


def test_reader_errors_name_the_line(tmp_path):
    path = tmp_path / "bad.svm"
    for text, msg in [("1 1:2\n\n2 3:x\n", "line 3: feature b'3:x'"),
                      ("1 1:2\nnan 3:1\n", "line 2: bad label"),
                      ("1 1:2\n1 -3:1\n", "line 2: feature indices must be non-negative"),
                      ("1 1:2\n1 2:inf\n", "line 2: contains NaN or infinity"),
                      ("1 1:2 5\n", "line 1: feature b'5'")]:
        path.write_text(text)
        with pytest.raises(ValueError, match=msg):
            load_svmlight(path)


def test_memory_is_about_the_size_of_the_result(tmp_path, monkeypatch):
    """Blocks of lines are parsed one at a time: the peak of traced allocations stays
    within twice the arrays returned plus a few blocks (a token list of the whole file
    would hold several times the result)."""
    import tracemalloc

    import fastrisk.svmlight as svm

    monkeypatch.setattr(svm, "_CHUNK_BYTES", 1 << 20)
    rng = np.random.default_rng(0)
    counts = rng.integers(50, 150, size=6000)
    indices = np.concatenate([np.sort(rng.choice(50000, c, replace=False)) for c in counts])
    X = sp.csr_matrix((rng.random(indices.size), indices, np.r_[0, np.cumsum(counts)]),
                      shape=(6000, 50000))
    y = np.where(np.arange(6000) % 3 == 0, 1.0, -1.0)
    path = tmp_path / "mid.svm"
    dump_svmlight(X, y, path)
    tracemalloc.start()
    try:
        X2, y2 = load_svmlight(path, n_features=50000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert_same(X2, y2, X, y)
    result = X2.data.nbytes + X2.indices.nbytes + X2.indptr.nbytes + y2.nbytes
    assert peak < 2 * result + 8 * svm._CHUNK_BYTES, (peak, result)


# ---- rows without features ------------------------------------------------------------------

@pytest.mark.parametrize("zero_based", [False, True, "auto"])
@pytest.mark.parametrize("n_features", [None, 3])
def test_lines_without_features_are_empty_rows(tmp_path, zero_based, n_features):
    path = tmp_path / "empty.svm"
    path.write_text("1\n-1\n")
    X, y = load_svmlight(path, n_features=n_features, zero_based=zero_based)
    np.testing.assert_array_equal(X.toarray(), np.zeros((2, n_features or 1)))
    np.testing.assert_array_equal(y, [1, -1])
    # mixed with a comment, a blank line and a line with a feature
    path.write_text("1\n-1 2:5\n\n3 qid:1\n# comment\n-2 # no feature\n")
    X, y = load_svmlight(path, n_features=n_features, zero_based=zero_based)
    col = 2 if zero_based is True else 1  # "auto": no index 0, so 1-based
    expected = np.zeros((4, n_features or col + 1))
    expected[1, col] = 5
    np.testing.assert_array_equal(X.toarray(), expected)
    np.testing.assert_array_equal(y, [1, -1, 3, -2])


def test_blocks_of_lines_without_features(tmp_path, monkeypatch):
    # tiny blocks: some hold only lines without features
    import fastrisk.svmlight as svm

    monkeypatch.setattr(svm, "_CHUNK_BYTES", 8)
    path = tmp_path / "blocks.svm"
    path.write_text("1 1:2\n" + "-1\n" * 7 + "1 3:0.5\n" + "2\n" * 3)
    X, y = load_svmlight(path)
    expected = np.zeros((12, 3))
    expected[0, 0], expected[8, 2] = 2, 0.5
    np.testing.assert_array_equal(X.toarray(), expected)
    np.testing.assert_array_equal(y, [1] + [-1] * 7 + [1] + [2] * 3)


# ---- malformed files and arguments of load_svmlight ----------------------------------------

DIGITS = "feature indices must be non-negative integers written as digits, got "


@pytest.mark.parametrize("line,msg", [
    ("1 inf:1", DIGITS + "b'inf:1'"),
    ("1 1e400:1", DIGITS + "b'1e400:1'"),
    ("1 nan:1", DIGITS + "b'nan:1'"),
    ("1 1.5:1", DIGITS + "b'1.5:1'"),
    ("1 1_0:2", "feature b'1_0:2' is not of the form index:value"),
    ("1 1e1:2", DIGITS + "b'1e1:2'"),
    ("1 -3:2", DIGITS + "b'-3:2'"),
    ("1 +3:2", DIGITS + "b'\\+3:2'"),
    ("1 3.0:2", DIGITS + "b'3.0:2'"),
    ("1 2:1 0x3:2", "feature b'0x3:2' is not of the form index:value"),
    ("inf 1:1", "bad label"),
    ("-inf 1:1", "bad label"),
    ("1e400 1:1", "bad label"),
    ("nan 1:1", "bad label"),
    ("1_0 1:1", "bad label b'1_0'"),
])
def test_non_finite_or_non_integer_numbers_name_the_file_and_line(tmp_path, line, msg):
    path = tmp_path / "bad.svm"
    path.write_text(f"1 1:2\n{line}\n")
    with pytest.raises(ValueError, match=f"{path}: line 2: {msg}"):
        load_svmlight(path)
    with pytest.raises(ValueError, match=f"{path}: line 2: {msg}"):
        load_svmlight(path, n_features=10)


def test_value_too_large_for_float32_names_the_line(tmp_path):
    """A finite value beyond float32's range is refused when float32 is asked for (it
    would become infinity), and read as it is in float64."""
    path = tmp_path / "big.svm"
    path.write_text("1 1:2\n-1 2:-1e39\n")
    with pytest.raises(ValueError, match=f"{path}: line 2: value -1e[+]?39 is too large for "
                                         "dtype float32"):
        load_svmlight(path, dtype=np.float32)
    X, _ = load_svmlight(path)
    assert X[1, 1] == -1e39
    path.write_text("1 1:3.4e38\n")  # float32's largest is 3.4028e38: still finite
    X32, _ = load_svmlight(path, dtype=np.float32)
    assert np.isfinite(X32.data).all() and X32.dtype == np.float32


def test_train_command_reports_the_bad_line(tmp_path, capsys):
    from fastrisk.cli import main

    path = tmp_path / "bad.svm"
    path.write_text("1 1:2\n-1 inf:1\n")
    assert main(["train", str(path), "-o", str(tmp_path / "m.frm")]) == 1
    assert f"{path}: line 2: feature indices" in capsys.readouterr().err


@pytest.mark.parametrize("suffix,kind,compress", [
    (".gz", "gzip", gzip.compress), (".bz2", "bzip2", bz2.compress), (".xz", "xz", lzma.compress),
])
@pytest.mark.parametrize("damage", ["truncated", "not compressed"])
def test_corrupt_compressed_files_name_the_file(tmp_path, suffix, kind, compress, damage):
    raw = b"1 1:2\n-1 2:3\n" * 500
    path = tmp_path / f"bad.svm{suffix}"
    path.write_bytes(compress(raw)[:-12] if damage == "truncated" else raw)
    with pytest.raises(ValueError, match=f"{path} is not a valid {kind} file") as info:
        load_svmlight(path)
    assert isinstance(info.value.__cause__, (OSError, EOFError, zlib.error, lzma.LZMAError))


def test_load_argument_types(tmp_path):
    path = tmp_path / "zero.svm"
    path.write_text("1 0:1\n")
    with pytest.raises(TypeError, match="zero_based must be True, False or 'auto', got 0"):
        load_svmlight(path, zero_based=0)
    with pytest.raises(ValueError, match="index 0 in a 1-based file"):  # a NumPy False is False
        load_svmlight(path, zero_based=np.False_)
    X, _ = load_svmlight(path, zero_based=np.True_)
    np.testing.assert_array_equal(X.toarray(), [[1]])
    with pytest.raises(TypeError, match="dtype must be float32 or float64"):
        load_svmlight(path, dtype="no such type")
    with pytest.raises(TypeError, match="path must be a file name"):
        load_svmlight(None)
    # indices are read as doubles: wider data could not be indexed exactly
    with pytest.raises(ValueError, match="n_features must be None or an integer from 1 to 2"):
        load_svmlight(path, n_features=2**53)
    with pytest.raises(ValueError, match="n_features must be None"):
        load_svmlight(path, n_features=2**64)


# ---- dump_svmlight: checked input, the caller's arrays untouched -------------------------------

def _eye_csc():
    return sp.csc_matrix(np.eye(20, 5))


def _set(X, attr, pos, value):
    """X with one entry of its index array ``attr`` replaced (on a copy of that array)."""
    a = getattr(X, attr).copy()
    a[pos] = value
    setattr(X, attr, a)
    return X


@pytest.mark.parametrize("make,msg", [
    (lambda: _set(_eye_csc(), "indices", 0, 10**7), "X has row index 10000000 out of range"),
    (lambda: _set(sp.coo_matrix(np.eye(20, 5)), "row", 0, 10**7),
     "X has row index 10000000 out of range"),
    (lambda: _set(sp.coo_matrix(np.eye(20, 5)), "col", 1, -1), "X has column index -1"),
    (lambda: _set(sp.csr_matrix(np.eye(20, 5)), "indptr", 5, 10**6), r"X\.indptr"),
    (lambda: _set(sp.csr_matrix(np.eye(20, 5)), "indptr", 5, 0), r"X\.indptr decreases"),
    (lambda: _set(sp.csr_matrix(np.eye(20, 5)), "indices", 0, 7),
     r"X has column index 7 out of range \[0, 5\)"),
])
def test_dump_refuses_a_malformed_sparse_structure(tmp_path, make, msg):
    path = tmp_path / "out.svm"
    with pytest.raises(ValueError, match=msg):
        dump_svmlight(make(), np.where(np.arange(20) % 2, 1.0, -1.0), path)
    assert not path.exists()  # checked before the file is opened


def _nan_at(a, pos):
    a = np.array(a, dtype=np.float64)
    a[pos] = np.nan
    return a


X20 = np.eye(20, 5)
Y20 = np.where(np.arange(20) % 2, 1.0, -1.0)


@pytest.mark.parametrize("X,y,kwargs,exc,msg", [
    (_nan_at(X20, (0, 0)), Y20, {}, ValueError, "X contains NaN or infinity"),
    (sp.csr_matrix(X20) * np.inf, Y20, {}, ValueError, "X contains NaN or infinity"),
    (X20, _nan_at(Y20, 3), {}, ValueError, "y contains NaN or infinity"),
    (X20, Y20 * np.inf, {}, ValueError, "y contains NaN or infinity"),
    (X20 * 1.7 + 0j, Y20, {}, TypeError, "X must have a real numeric dtype, got complex128"),
    (sp.csr_matrix(X20 + 0j), Y20, {}, TypeError, "X must have a real numeric dtype"),
    (X20.astype(str), Y20, {}, TypeError, "X must have a real numeric dtype"),
    (X20, Y20 + 0j, {}, TypeError, "y must have a real numeric dtype"),
    (X20, ["a"] * 20, {}, TypeError, "y must have a real numeric dtype"),
    (X20, np.ones((20, 2)), {}, ValueError, r"y must be 1-dimensional, got shape \(20, 2\)"),
    (X20, Y20[:19], {}, ValueError, "y has 19 entries but X has 20 rows"),
    (X20[0], Y20[:5], {}, ValueError, r"X must be 2-dimensional, got shape \(5,\)"),
    (np.ones((0, 5)), [], {}, ValueError, "X has no rows"),
    (X20, Y20, {"zero_based": "no"}, TypeError, "zero_based must be True or False, got 'no'"),
    (X20, Y20, {"zero_based": 1}, TypeError, "zero_based must be True or False"),
])
def test_dump_refuses_bad_values_and_arguments(tmp_path, X, y, kwargs, exc, msg):
    path = tmp_path / "out.svm"
    with pytest.raises(exc, match=msg):
        dump_svmlight(X, y, path, **kwargs)
    assert not path.exists()
    with pytest.raises(TypeError, match="path must be a file name"):
        dump_svmlight(X20, Y20, 3)


def test_dump_does_not_modify_the_callers_matrix(tmp_path):
    # an explicit zero, unsorted and duplicate indices: the file holds one entry per index
    # (duplicates summed, zeros skipped) and X keeps its arrays
    X = sp.csr_matrix((np.array([1.0, 0.0, 2.0, 5.0]), np.array([2, 1, 0, 2]), np.array([0, 4])),
                      shape=(1, 3))
    arrays = (X.data, X.indices, X.indptr)
    before = [a.copy() for a in arrays]
    path = tmp_path / "out.svm"
    dump_svmlight(X, [1], path)
    assert all(a is b for a, b in zip((X.data, X.indices, X.indptr), arrays))
    for a, b in zip(arrays, before):
        np.testing.assert_array_equal(a, b)
    assert path.read_text() == "1.0 1:2.0 3:6.0\n"


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("zero_based", [False, np.True_])
def test_sparse_round_trip_with_empty_rows(tmp_path, fmt, dtype, zero_based):
    rng = np.random.default_rng(3)
    dense = np.where(rng.random((15, 7)) < 0.3, rng.normal(size=(15, 7)), 0).astype(dtype)
    dense[[0, 4, 5, 14]] = 0  # empty rows, the first and last among them
    X = sp.csr_matrix(dense).asformat(fmt)
    y = rng.choice([-1.0, 1.0], 15)
    arrays = [X.row, X.col, X.data] if fmt == "coo" else [X.data, X.indices, X.indptr]
    before = [a.copy() for a in arrays + [y]]
    path = tmp_path / "rt.svm"
    dump_svmlight(X, y, path, zero_based=zero_based)
    X2, y2 = load_svmlight(path, n_features=7, dtype=dtype, zero_based=bool(zero_based))
    assert X2.dtype == dtype and X2.shape == (15, 7) and X2.has_canonical_format
    np.testing.assert_array_equal(X2.toarray(), dense)
    np.testing.assert_array_equal(y2, y)
    for a, b in zip(arrays + [y], before):
        np.testing.assert_array_equal(a, b)
