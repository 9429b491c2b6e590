"""Fixtures shared by tests/ and benchmarks/: the real data sets of ../shared/data, a Dask cluster.

The real data sets live outside the repository (``../shared/data`` next to the clone, or
``$FASTRISK_SHARED_DATA``).  A test that needs a missing file is skipped with the reason,
so a plain clone passes; with ``FASTRISK_REQUIRE_DATA=1`` (CI) the same test fails
instead.  Tests that use the data fixtures carry the ``realdata`` marker
(``-m "not realdata"`` deselects them).
"""

import functools
import os
from pathlib import Path

import numpy as np
import pytest

SHARED_DATA = Path(os.environ.get("FASTRISK_SHARED_DATA",
                                  Path(__file__).resolve().parent.parent / "shared" / "data"))

REAL_DATA_FIXTURES = {"libsvm", "imdb_bigrams", "shared_file"}


def shared_path(filename):
    """Path of a file of the shared data folder; skips the calling test when it is absent
    (fails it when ``FASTRISK_REQUIRE_DATA=1``)."""
    path = SHARED_DATA / filename
    if not path.exists():
        message = (f"real data file {path} is absent (clone next to shared/data or set "
                   "FASTRISK_SHARED_DATA)")
        if os.environ.get("FASTRISK_REQUIRE_DATA") == "1":
            pytest.fail(message + "; FASTRISK_REQUIRE_DATA=1 requires it", pytrace=False)
        pytest.skip(message)
    return path


def pytest_configure(config):
    config.addinivalue_line("markers", "realdata: needs the data sets of ../shared/data")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if REAL_DATA_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.realdata)


# file stem -> (train file, test file or None, n_features)
LIBSVM_SETS = {
    "a9a": ("a9a.bz2", "a9a.t.bz2", 123),
    "w8a": ("w8a.bz2", None, 300),
    "ijcnn1": ("ijcnn1.trn.bz2", "ijcnn1.tst.bz2", 22),
    "reuters": ("reuters-moneyfx.trn.bz2", "reuters-moneyfx.tst.bz2", 8315),
    "mushrooms": ("mushrooms.bz2", None, 112),
    "phishing": ("phishing.bz2", None, 68),
    "mnist": ("mnist.scale.t.bz2", None, 780),
    "abalone": ("abalone_scale.bz2", None, 8),
    "housing": ("housing_scale.bz2", None, 13),
}


@functools.cache
def load_libsvm(name, split="train"):
    """(X, y) of a ../shared/data set by short name (see LIBSVM_SETS); cached per process."""
    from fastrisk.svmlight import load_svmlight

    train, test, d = LIBSVM_SETS[name]
    path = shared_path(train if split == "train" else test)
    X, y = load_svmlight(path, n_features=d)
    return X, y


@pytest.fixture(scope="session")
def shared_file():
    """Callable: shared_file(filename) -> Path in the shared data folder (see shared_path)."""
    return shared_path


@pytest.fixture(scope="session")
def libsvm():
    """Callable: libsvm(name, split="train") -> (X, y), read-only arrays."""

    def get(name, split="train"):
        X, y = load_libsvm(name, split)
        for a in (X.data, X.indices, X.indptr, y):
            a.flags.writeable = False
        return X, y

    return get


IMDB_CACHE = Path(os.environ.get("FASTRISK_CACHE", Path.home() / ".cache" / "fastrisk"))


def _read_cache(name):
    """(X CSR, y) from ``$FASTRISK_CACHE/name``, or None when it is not cached yet."""
    import scipy.sparse as sp

    cache = IMDB_CACHE / name
    if not cache.exists():
        return None
    with np.load(cache, allow_pickle=False) as z:
        return sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"])), z["y"]


def _write_cache(name, X, y):
    """Sort X's indices, store (X, y) as ``$FASTRISK_CACHE/name`` atomically; return them."""
    X.sort_indices()
    IMDB_CACHE.mkdir(parents=True, exist_ok=True)
    cache = IMDB_CACHE / name
    tmp = cache.with_suffix(".tmp.npz")
    np.savez(tmp, data=X.data, indices=X.indices, indptr=X.indptr, shape=np.array(X.shape), y=y)
    os.replace(tmp, cache)
    return X, y


def _imdb_train_reviews(tar):
    """The members of the IMDB archive that are labeled training reviews (train/pos, neg)."""
    for member in tar:
        parts = member.name.split("/")
        if member.isfile() and len(parts) == 4 and parts[1] == "train" \
                and parts[2] in ("pos", "neg"):
            yield member


@functools.cache
def load_imdb_bigrams():
    """IMDB train set as unigram+bigram tf-idf, (X CSR float64, y -1/+1): 25000 x ~1.5M, ~8.8M nnz.

    Built from ../shared/data/aclImdb-v1-train-test.tar.xz with scikit-learn's
    ``TfidfVectorizer(ngram_range=(1, 2))`` once, then cached as .npz in
    ``$FASTRISK_CACHE`` (default ~/.cache/fastrisk), outside the repository.
    """
    import tarfile

    cached = _read_cache("imdb_bigrams_train.npz")
    if cached is not None:
        return cached
    from sklearn.feature_extraction.text import TfidfVectorizer

    with tarfile.open(shared_path("aclImdb-v1-train-test.tar.xz")) as tar:
        docs = [(member.name, tar.extractfile(member).read().decode("utf-8", "replace"))
                for member in _imdb_train_reviews(tar)]
    docs.sort()
    labels = np.array([1.0 if name.split("/")[2] == "pos" else -1.0 for name, _ in docs])
    X = TfidfVectorizer(ngram_range=(1, 2)).fit_transform([text for _, text in docs]).tocsr()
    return _write_cache("imdb_bigrams_train.npz", X, labels)


@functools.cache
def load_imdb_ratings():
    """The IMDB bigram matrix of ``load_imdb_bigrams`` with each review's star rating (1-4,
    7-10, from its file name ``<id>_<rating>.txt``) as the target: a wide count problem.
    The ratings are cached as .npy next to the matrix."""
    import tarfile

    X, _ = load_imdb_bigrams()
    cache = IMDB_CACHE / "imdb_ratings_train.npy"
    if not cache.exists():
        with tarfile.open(shared_path("aclImdb-v1-train-test.tar.xz")) as tar:
            names = sorted(member.name for member in _imdb_train_reviews(tar))  # the rows' order
        ratings = np.array([float(n.rsplit("_", 1)[1].split(".")[0]) for n in names])
        IMDB_CACHE.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp.npy")
        np.save(tmp, ratings)
        os.replace(tmp, cache)
    ratings = np.load(cache, allow_pickle=False)
    if ratings.shape != (X.shape[0],):
        raise ValueError(f"{cache} holds {ratings.shape} ratings for {X.shape[0]} reviews")
    return X, ratings


@functools.cache
def load_20news():
    """20 Newsgroups "bydate" train set as tf-idf, (X CSR float64, y class 0..19): 11314 x 130108.

    Built from ../shared/data/20news-bydate.tar.xz (files read as latin-1, sorted by
    path) with scikit-learn's ``TfidfVectorizer()`` once, then cached as .npz in
    ``$FASTRISK_CACHE`` (default ~/.cache/fastrisk), outside the repository.
    """
    import tarfile

    cached = _read_cache("20news_train.npz")
    if cached is not None:
        return cached
    from sklearn.feature_extraction.text import TfidfVectorizer

    docs = []
    with tarfile.open(SHARED_DATA / "20news-bydate.tar.xz") as tar:
        for member in tar:
            parts = member.name.split("/")
            if member.isfile() and len(parts) >= 3 and parts[-3] == "20news-bydate-train":
                docs.append((member.name, tar.extractfile(member).read().decode("latin-1")))
    docs.sort()
    groups = sorted({name.split("/")[-2] for name, _ in docs})
    labels = np.array([groups.index(name.split("/")[-2]) for name, _ in docs])
    X = TfidfVectorizer().fit_transform([text for _, text in docs]).tocsr()
    return _write_cache("20news_train.npz", X, labels)


def load_dataset(name):
    """(X, y) of a data set by short name: "imdb" (load_imdb_bigrams), "imdb_ratings"
    (load_imdb_ratings), "news20" (load_20news) or a LIBSVM_SETS name (load_libsvm,
    training split)."""
    if name == "imdb":
        return load_imdb_bigrams()
    if name == "imdb_ratings":
        return load_imdb_ratings()
    if name == "news20":
        return load_20news()
    return load_libsvm(name)


@pytest.fixture(scope="session")
def news20():
    """(X, y) of the 20 Newsgroups tf-idf problem (cached outside the repo)."""
    return load_20news()


@pytest.fixture(scope="session")
def imdb_bigrams(request):
    """(X, y) of the IMDB unigram+bigram tf-idf problem (cached outside the repo).

    With ``--benchmark-disable`` (the benchmarks as smoke tests, as CI runs them) the
    Reuters money-fx training set stands in: also sparse tf-idf text, read in a second
    where the IMDB problem takes a minute or two to build the first time.
    """
    if request.config.getoption("benchmark_disable", False):
        return load_libsvm("reuters")
    return load_imdb_bigrams()


@pytest.fixture(scope="module")
def client():
    """A client of a 2-worker LocalCluster with worker processes, one cluster per test module."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster) as c:
        yield c
