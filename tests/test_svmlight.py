"""svmlight/libsvm I/O (fastrisk/svmlight.py) against scikit-learn's reader and round trips."""

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
    X.data = (X.data * rng.choice([-1, 1], X.nnz) * 10.0 ** rng.integers(-20, 20, X.nnz)).astype(dtype)
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


def test_comments_qid_and_auto_zero_based(tmp_path):
    path = tmp_path / "q.svm"
    path.write_text("# header\n+1 qid:3 1:0.5 4:2 # tail\n-1 qid:3 2:1e-3\n\n0 0:7\n")
    X, y = load_svmlight(path)  # index 0 present: "auto" reads it 0-based
    np.testing.assert_array_equal(y, [1, -1, 0])
    np.testing.assert_array_equal(X.toarray(), [[0, 0.5, 0, 0, 2], [0, 0, 1e-3, 0, 0],
                                                [7, 0, 0, 0, 0]])
    Xs, ys = load_svmlight_file(str(path), zero_based="auto")
    assert_same(X, y, Xs, ys)


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
    within twice the arrays returned plus a few blocks (a whole-file token list took
    ~12 times the result)."""
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
