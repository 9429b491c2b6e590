"""DaskOracle on a LocalCluster(processes=True) with 2 workers against the LocalOracle.

The Dask oracle runs the same kernel on the same partitions with the same
thread count and adds the partial sums in the same order, so the results
must be identical bit for bit (gradients compared as uint64 bit patterns,
values with ==): no tolerance.
"""

import os
import re
import time

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("distributed")
import dask.array as da

import fastrisk as fr
from fastrisk.datasets import load_a9a
from fastrisk.distributed import DaskOracle, PartitionLostError, make_dask_problem
from fastrisk.oracle import LocalOracle


@pytest.fixture(scope="module")
def a9a_small():
    X, y, _, _ = load_a9a()
    return X[:3000], y[:3000]


def weights(n, seed=0):
    return np.random.default_rng(seed).normal(size=n) * 0.1


def assert_same(dask_oracle, local_oracle, seeds=(0, 1)):
    for seed in seeds:
        w = weights(dask_oracle.n_weights, seed)
        v1, g1 = dask_oracle(w)
        v2, g2 = local_oracle(w)
        assert v1 == v2
        np.testing.assert_array_equal(g1.view(np.uint64), g2.view(np.uint64))  # bits: -0.0 too


@pytest.mark.parametrize("loss,fit_intercept,weighted,dtype", [
    ("hinge", False, False, np.float64),
    ("logistic", True, True, np.float32),
    ("squared", True, False, np.float64),
])
def test_from_array_equals_local(client, a9a_small, loss, fit_intercept, weighted, dtype):
    X, y = a9a_small
    X = X.astype(dtype)
    c = np.random.default_rng(3).uniform(0.5, 1.5, size=len(y)) if weighted else None
    oracle = DaskOracle.from_array(client, X, y, loss=loss, sample_weight=c, n_partitions=5,
                                   fit_intercept=fit_intercept, intercept_scaling=2.0)
    assert oracle.partition_sizes == [600] * 5
    local = LocalOracle(fr.Dataset(X, intercept_scaling=2.0 if fit_intercept else 0.0),
                        fr.Loss(loss), np.where(y > 0, 1.0, -1.0), c, n_partitions=5,
                        n_threads=1)
    assert_same(oracle, local)
    # the local oracle at its own thread count also agrees to rounding
    w = weights(oracle.n_weights)
    np.testing.assert_allclose(oracle(w)[1], oracle.local_equivalent(X, y, c)(w)[1])
    oracle.close()
    with pytest.raises(ValueError, match="DaskOracle is closed"):
        oracle(w)


@pytest.mark.parametrize("shared", [True, False])
def test_transports_equal_local(client, a9a_small, shared):
    """Through shared memory (the LocalCluster's workers share the client's host) and over
    the network: the same bits as the local oracle; partitions with few columns included
    (their gradient outside the columns is +0.0, as in a full-width partial)."""
    X, y = a9a_small
    oracle = DaskOracle.from_array(client, X, y, loss="hinge", n_partitions=[5, 2000, 995],
                                   shared_memory=shared)
    assert_same(oracle, oracle.local_equivalent(X, y))
    assert oracle.transport == ("shared memory" if shared else "network")
    cols = [np.arange(oracle.n_weights) if isinstance(c, slice) else c for c in oracle.columns]
    assert oracle.last_bytes == (0 if shared else 8 * 2 * sum(c.size for c in cols))
    oracle.close()


def test_a_full_shared_memory_falls_back_to_the_network(client, a9a_small, monkeypatch):
    """When the shared-memory file system has less room than the blocks (a container's
    small /dev/shm), the oracle passes w and the gradients over the network: writing
    beyond a tmpfs's space kills the process with SIGBUS."""
    import fastrisk.distributed as distributed

    X, y = a9a_small
    n = X.shape[1]  # the weights: no intercept
    blocks = 8 * (n + 2) + 8 * n * 2  # w and one gradient per partition
    assert distributed._shared_memory_fits(blocks)  # the test machine has the room
    monkeypatch.setattr(os, "statvfs", lambda path: type(
        "S", (), {"f_bavail": blocks // 4096, "f_frsize": 4096})())  # less than the blocks
    oracle = DaskOracle.from_array(client, X, y, loss="hinge", n_partitions=2)
    assert_same(oracle, oracle.local_equivalent(X, y))
    assert oracle.transport == "network"
    oracle.close()


def test_from_array_dense_two_threads(client, a9a_small):
    """Dense rows, 2 OpenMP threads per partition: the same blocks and order as locally."""
    X, y = a9a_small
    X = np.asarray(X[:500].todense())
    oracle = DaskOracle.from_array(client, X, y[:500], loss="squared_hinge", n_partitions=[100, 400],
                                   n_threads=2)
    assert_same(oracle, oracle.local_equivalent(X, y[:500]))


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_partition_local_columns(client, fit_intercept):
    """Partitions touching disjoint, overlapping or no columns (empty rows, an explicitly
    stored zero, gradient entries that cancel to 0.0): each worker holds exactly the columns
    its rows store, and the sum of the column-restricted partials has the local bits."""
    rng = np.random.default_rng(4)
    X = sp.lil_matrix((40, 30))
    X[0:10, 0:10] = rng.normal(size=(10, 10)) * (rng.random((10, 10)) < 0.5)
    X[10:20, 10:20] = rng.normal(size=(10, 10))
    X[30:40, 5:9] = 1.0  # rows 20-29 stay empty
    X[30:40, 20:25] = 1.0
    X[35, 9] = 1.0
    X = X.tocsr()
    row = slice(X.indptr[35], X.indptr[36])
    X.data[row][X.indices[row] == 9] = 0.0  # stored zero: partition 3 uses column 9 only by it
    assert X.nnz == 10 * 9 + 1 + np.count_nonzero(X[:20].toarray()) and 0.0 in X.data
    y = np.tile([1.0, -1.0], 20)
    oracle = DaskOracle.from_array(client, X, y, loss="hinge", n_partitions=4,
                                   fit_intercept=fit_intercept)
    assert oracle.n_threads == 1  # the fixture's workers run 1 thread each
    bias = [oracle.n_weights - 1] if fit_intercept else []
    for k, (a, b) in enumerate([(0, 10), (10, 20), (20, 30), (30, 40)]):
        expected = (sorted(set(X[a:b].indices)) or [0]) + bias
        np.testing.assert_array_equal(oracle.columns[k], expected)
    local = oracle.local_equivalent(X, y)
    assert_same(oracle, local, seeds=(0, 1, 2))
    # w = 0: every hinge term is active, g_i = -y_i, and columns 20-24 (rows 30-39 only) sum
    # to an exact 0.0; columns 25-29 belong to no partition
    v, g = oracle(np.zeros(oracle.n_weights))
    assert (g[20:30] == 0).all() and (g[:20] != 0).any()
    assert v == local(np.zeros(oracle.n_weights))[0]
    np.testing.assert_array_equal(g.view(np.uint64),
                                  local(np.zeros(oracle.n_weights))[1].view(np.uint64))
    oracle.close()


def test_from_svmlight_files_equals_local(client, a9a_small, tmp_path):
    X, y = a9a_small
    paths, cuts = [], [0, 700, 1800, 3000]
    for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        paths.append(tmp_path / f"part{k}.svm")
        fr.dump_svmlight(X[a:b], y[a:b], paths[-1])
    oracle = DaskOracle.from_svmlight(client, paths, loss="hinge", fit_intercept=True)
    assert oracle.partition_sizes == [700, 1100, 1200]
    assert oracle.n_features <= 123  # widest file; the last columns of a9a may be empty
    X_all = sp.vstack([fr.load_svmlight(p, n_features=oracle.n_features)[0] for p in paths])
    assert_same(oracle, oracle.local_equivalent(X_all.tocsr(), y))


def test_from_svmlight_zero_based_files(client, tmp_path):
    """0-based files without the header, one of which lacks index 0: zero_based=True reads
    every partition in the same coding (the oracle equals the local one on the true X);
    "auto" decides per file and reads that one shifted by a column."""
    X = np.array([[1.0, 2.0, 0.0], [-1.0, 0.0, 3.0], [0.0, 1.0, 0.0], [0.0, 0.0, -2.0]])
    y = np.array([1.0, -1.0, 1.0, -1.0])
    paths = [tmp_path / "a.svm", tmp_path / "b.svm"]
    paths[0].write_text("1 0:1 1:2\n-1 0:-1 2:3\n")
    paths[1].write_text("1 1:1\n-1 2:-2\n")
    oracle = DaskOracle.from_svmlight(client, paths, loss="logistic", n_features=3,
                                      zero_based=True)
    assert_same(oracle, oracle.local_equivalent(sp.csr_matrix(X), y))
    shifted = DaskOracle.from_svmlight(client, paths, loss="logistic", n_features=3)
    w = np.array([0.5, -1.0, 2.0])
    assert shifted(w)[0] != oracle(w)[0]
    with pytest.raises(ValueError, match="zero_based must be True, False or 'auto'"):
        DaskOracle.from_svmlight(client, paths, zero_based="yes")
    oracle.close()
    shifted.close()


def test_from_dask_array(client, a9a_small):
    X, y = a9a_small
    Xd = np.asarray(X[:900].todense())
    oracle = DaskOracle.from_dask(client, da.from_array(Xd, chunks=(250, 60)),
                                  da.from_array(y[:900], chunks=300), loss="logistic")
    assert oracle.partition_sizes == [250, 250, 250, 150]
    assert_same(oracle, oracle.local_equivalent(Xd, y[:900]))


def test_from_dask_skips_empty_row_blocks(client):
    """Row blocks without rows (left by a filter) add nothing: they are dropped, and the
    oracle returns the local oracle's bits; data without any row are refused."""
    X, y = small_problem()
    sizes = (5, 0, 10, 0, 5)
    dX = da.from_array(X, chunks=(sizes, X.shape[1]))
    oracle = DaskOracle.from_dask(client, dX, da.from_array(y, chunks=(sizes,)),
                                  loss="logistic")
    assert oracle.partition_sizes == [5, 10, 5]
    assert_same(oracle, oracle.local_equivalent(X, y))
    oracle.close()
    with pytest.raises(ValueError, match="no rows"):
        DaskOracle.from_dask(client, dX[:0], da.from_array(y[:0], chunks=(0,)),
                             loss="logistic")


def test_from_dask_dataframe(client, a9a_small):
    dd = pytest.importorskip("dask.dataframe")  # needs pandas, not a fastrisk dependency
    import pandas as pd

    X, y = a9a_small
    Xd = np.asarray(X[:900].todense())
    df = dd.from_pandas(pd.DataFrame(Xd[:, :20]), npartitions=3)
    oracle = DaskOracle.from_dask(client, df, y[:900], loss="hinge")
    assert sum(oracle.partition_sizes) == 900 and len(oracle.partition_sizes) == 3
    assert_same(oracle, oracle.local_equivalent(Xd[:, :20], y[:900]))


def test_validation_errors(client, a9a_small):
    X, y = a9a_small
    with pytest.raises(ValueError, match="exactly two classes"):
        DaskOracle.from_array(client, X[:50], np.arange(50), loss="hinge", n_partitions=2)
    with pytest.raises(ValueError, match="scalar losses"):
        DaskOracle.from_array(client, X[:50], y[:50], loss="softmax")
    with pytest.raises(ValueError, match="y has 40 entries but X has 50 rows"):
        DaskOracle.from_array(client, X[:50], y[:40])
    with pytest.raises(ValueError, match="paths"):
        DaskOracle.from_svmlight(client, "one_file.svm")
    oracle = DaskOracle.from_array(client, X[:50], y[:50], n_partitions=2)
    with pytest.raises(ValueError, match="w has shape"):
        oracle(np.zeros(3))
    with pytest.raises(ValueError, match="n_partitions"):
        DaskOracle.from_array(client, X[:50], y[:50], n_partitions=[20, 20])


def test_partitions_check_targets_and_weights_as_problem_does(client):
    """A partition whose sample weights are all zero is fine when the whole has a positive
    sum (as for Problem): the oracle equals the local one on the same rows; negative
    targets of a counts loss (poisson) are refused by name, as Problem refuses them."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 5))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    c = np.r_[np.zeros(30), np.ones(30)]
    oracle = DaskOracle.from_array(client, X, y, sample_weight=c, loss="logistic",
                                   n_partitions=2)
    w = rng.standard_normal(5)
    local = LocalOracle(fr.Dataset(X), fr.Loss("logistic"), y, c, n_partitions=[30, 30],
                        n_threads=oracle.n_threads, columns=False)
    value, grad = oracle(w)
    assert value == local(w)[0] and np.array_equal(grad, local(w)[1])
    oracle.close()
    with pytest.raises(ValueError, match="sample_weight must have a positive sum"):
        DaskOracle.from_array(client, X, y, sample_weight=np.zeros(60), n_partitions=2)
    with pytest.raises(ValueError, match="y must be non-negative for the poisson loss"):
        DaskOracle.from_array(client, X, -np.ones(60), loss="poisson", n_partitions=2)


def test_make_dask_problem_checks_its_arguments_by_name(client, tmp_path):
    """The problem's own arguments are checked before any data are sent; a single path, an
    empty source, a non-integer n_features and a bool replicas are refused by name."""
    X, y = small_problem()
    sent = len(client.who_has())
    with pytest.raises(ValueError, match="alpha must be a finite number > 0"):
        make_dask_problem(X, y, client=client, alpha=-1)
    with pytest.raises(ValueError, match="penalty must be one of"):
        make_dask_problem(X, y, client=client, penalty="l3")
    assert len(client.who_has()) == sent  # nothing was scattered
    with pytest.raises(ValueError, match="source must be a list of svmlight files.*single path"):
        make_dask_problem(str(tmp_path / "data.svm"), client=client)
    with pytest.raises(ValueError, match="source is empty"):
        make_dask_problem([], client=client)
    for bad in ("5", 5.0, True):
        with pytest.raises(ValueError, match="n_features must be"):
            make_dask_problem(X, y, client=client, n_features=bad)
    with pytest.raises(ValueError, match="replicas must be an integer"):
        make_dask_problem(X, y, client=client, replicas=True)


def small_problem(seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((20, 4)), np.where(np.arange(20) % 2, 1.0, -1.0)


def problem_error(X, y):
    """The message fr.Problem gives for (X, y)."""
    with pytest.raises((ValueError, TypeError)) as info:
        fr.Problem(X, y)
    return str(info.value)


@pytest.mark.parametrize("corrupt,message", [
    (lambda S: S.indices.__setitem__(0, 99), r"X has column index 99 out of range \[0, 4\)"),
    (lambda S: S.indices.__setitem__(0, -1), r"X has column index -1 out of range \[0, 4\)"),
    (lambda S: S.indptr.__setitem__(3, 0), "X.indptr decreases at row 2"),
], ids=["index 99", "index -1", "indptr"])
def test_from_array_checks_csr_before_slicing(client, corrupt, message):
    """scipy's row slicing drops entries of an out-of-range column: X is checked first,
    with Problem's messages."""
    X, y = small_problem()
    S = sp.csr_matrix(X)
    corrupt(S)
    with pytest.raises(ValueError, match=message) as info:
        make_dask_problem(S, y, client=client, n_partitions=2, n_threads=1)
    assert str(info.value) == problem_error(S, y)


def test_from_array_sparse_formats(client):
    """CSC and COO are checked and converted (the caller's arrays untouched); a CSR with
    unsorted indices is refused as by Problem."""
    X, y = small_problem()
    C = sp.csc_matrix(X)
    C.indices[0] = 99
    with pytest.raises(ValueError, match=r"X has row index 99 out of range \[0, 20\)"):
        make_dask_problem(C, y, client=client, n_partitions=2)
    coo = sp.coo_matrix(X)
    D = sp.coo_matrix((np.r_[coo.data, 1.0], (np.r_[coo.row, 0], np.r_[coo.col, 0])),
                      shape=X.shape)  # a duplicate entry at (0, 0): summed
    before = [a.copy() for a in (D.data, D.row, D.col)]
    oracle = DaskOracle.from_array(client, D, y, n_partitions=2)
    assert_same(oracle, oracle.local_equivalent(D, y))
    assert all(np.array_equal(a, b) for a, b in zip(before, (D.data, D.row, D.col)))
    S = sp.csr_matrix(X)
    S.indices[:2] = S.indices[1::-1].copy()  # unsorted row 0
    indices = S.indices.copy()
    with pytest.raises(ValueError, match="X has unsorted or duplicate column indices"):
        make_dask_problem(S, y, client=client, n_partitions=2)
    np.testing.assert_array_equal(S.indices, indices)
    with pytest.raises(ValueError, match="X contains NaN"):
        make_dask_problem(np.where(X > 0.9, np.nan, X), y, client=client, n_partitions=2)


def test_from_dask_checks_sparse_blocks(client):
    """A sparse block is checked before its column indices are renumbered: -1 would
    become a valid local column."""
    X, y = small_problem()

    def corrupt(block):
        block = sp.csr_matrix(block)
        block.indices[0] = -1
        return block

    dX = da.from_array(X, chunks=(10, 4)).map_blocks(corrupt, dtype=X.dtype)
    with pytest.raises(ValueError, match=r"X has column index -1 out of range \[0, 4\)"):
        make_dask_problem(dX, y, client=client)


def test_nan_is_not_a_class_label(client):
    """NaN or infinite labels, in memory or in a dask y, and NaN sample weights are refused
    with Problem's message (np.unique would make NaN a class)."""
    X, y = small_problem()
    y_nan = np.full(20, -1.0)
    y_nan[12] = np.nan
    y_three = (np.arange(20) % 2).astype(float)  # labels {0, 1, NaN}
    y_three[5] = np.nan
    y_inf = y.copy()
    y_inf[3] = np.inf
    message = problem_error(X, y_nan)
    assert message == "y contains NaN or infinity"
    dX = da.from_array(X, chunks=5)
    for labels in (y_nan, y_three, y_inf):
        for source, target in ((X, labels), (dX, labels), (dX, da.from_array(labels, chunks=5))):
            with pytest.raises(ValueError, match=message):
                make_dask_problem(source, target, client=client, n_partitions=2)
    c = np.ones(20)
    c[2] = np.nan
    for source, weight in ((X, c), (dX, c), (dX, da.from_array(c, chunks=5))):
        with pytest.raises(ValueError, match="sample_weight contains NaN"):
            make_dask_problem(source, y, sample_weight=weight, client=client, n_partitions=2)


def test_from_dask_unknown_chunk_sizes(client):
    """X, y or sample_weight with unknown chunk sizes (after boolean indexing) are refused
    naming the argument and the dask call that fixes it."""
    X, y = small_problem()
    dX, dy = da.from_array(X, chunks=5), da.from_array(y, chunks=5)
    keep = da.from_array(np.arange(20) != 3, chunks=5)
    with pytest.raises(ValueError, match=r"X has unknown chunk sizes .*X\.compute_chunk_sizes"):
        make_dask_problem(dX[keep], y[np.arange(20) != 3], client=client)
    with pytest.raises(ValueError, match=r"y has unknown chunk sizes .*y\.compute_chunk_sizes"):
        make_dask_problem(dX[:19], dy[keep], client=client)
    with pytest.raises(ValueError, match="sample_weight has unknown chunk sizes"):
        make_dask_problem(dX[:19], dy[:19], sample_weight=dy[keep] ** 2, client=client)


def test_y_must_be_one_dimensional(client):
    """A 2-D y or sample_weight is refused with Problem's message; a column vector y is a
    vector, whose oracle returns the local oracle's bits."""
    X, y = small_problem()
    Y = np.stack([y, y], axis=1)
    dX = da.from_array(X, chunks=5)
    message = problem_error(X, Y)
    assert message == "y must be 1-dimensional, got shape (20, 2)"
    for source, target in ((X, Y), (dX, Y), (dX, da.from_array(Y, chunks=(5, 2)))):
        with pytest.raises(ValueError, match=re.escape(message)):
            make_dask_problem(source, target, client=client, n_partitions=2)
    with pytest.raises(ValueError, match=re.escape("sample_weight must be 1-dimensional, got "
                                                   "shape (20, 2)")):
        make_dask_problem(dX, y, sample_weight=da.ones((20, 2), chunks=5), client=client)
    # a column vector is a vector, as in Problem
    for source, target in ((X, y[:, None]), (dX, da.from_array(y[:, None], chunks=(5, 1)))):
        oracle = make_dask_problem(source, target, client=client, n_partitions=4).oracle
        assert_same(oracle, oracle.local_equivalent(X, y), seeds=(0,))


def test_novelty_takes_no_y(client):
    """A loss without labels takes y=None on the in-memory and dask paths, as Problem does
    (zero targets: the bits of the local oracle on the same partitions); the other losses
    refuse it by name."""
    X, _ = small_problem()
    for source in (X, da.from_array(X, chunks=5)):
        oracle = make_dask_problem(source, None, loss="novelty", client=client,
                                   n_partitions=2).oracle
        assert_same(oracle, oracle.local_equivalent(X, np.zeros(X.shape[0])), seeds=(0,))
        with pytest.raises(ValueError, match="^y is required"):
            make_dask_problem(source, None, loss="hinge", client=client, n_partitions=2)


@pytest.mark.parametrize("solver,loss", [("bmrm", "hinge"), ("prox_bundle", "hinge"),
                                         ("lbfgs", "logistic")])
def test_fit_equals_local_fit(client, a9a_small, solver, loss):
    """The same deterministic solver on bit-identical oracles takes identical steps."""
    X, y = a9a_small
    dprob = make_dask_problem(X, y, client=client, loss=loss, alpha=1e-2, fit_intercept=True,
                              n_partitions=4)
    lprob = fr.Problem(X, y, loss=loss, alpha=1e-2, fit_intercept=True,
                       n_partitions=dprob.oracle.partition_sizes, n_threads=1)
    fits = [fr.solve(p, solver=solver, tol=1e-2, max_iter=30) for p in (dprob, lprob)]
    assert fits[0].status == fits[1].status  # converged or max_iter, the same
    np.testing.assert_array_equal(fits[0].w, fits[1].w)
    assert fits[0].n_iter == fits[1].n_iter > 5
    assert fits[0].objective == fits[1].objective
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert fits[0].intercept_ == fits[1].intercept_
    np.testing.assert_array_equal(dprob.classes_, [-1.0, 1.0])


def test_risk_floor_matches_local(client):
    """BMRM's first cut b_0 = -(1/m) sum c_i l*(0, y_i): negative for Poisson with y > e."""
    from fastrisk.solvers.bmrm import risk_floor

    rng = np.random.default_rng(2)
    X, y = rng.random((60, 4)), rng.poisson(5.0, size=60).astype(float)
    c = rng.uniform(0.5, 2.0, size=60)
    dprob = make_dask_problem(X, y, client=client, loss="poisson", sample_weight=c,
                              n_partitions=3)
    local = risk_floor(fr.Problem(X, y, loss="poisson", sample_weight=c))
    assert local < 0 and risk_floor(dprob) == local


def kill_worker(client, address):
    """SIGKILL one worker process; its nanny starts an empty replacement."""
    pid = client.run(os.getpid, workers=[address])[address]
    os.kill(pid, 9)
    deadline = time.time() + 30
    while address in client.scheduler_info()["workers"] and time.time() < deadline:
        time.sleep(0.1)
    client.wait_for_workers(2, timeout=30)


def holders(client, oracle):
    return {a for addrs in client.who_has(oracle.partitions).values() for a in addrs}


def test_worker_failure_recovery(client, a9a_small, tmp_path):
    """Mid-fit worker loss: replicated or file-backed partitions give the exact result again;
    a scattered partition without a replica raises PartitionLostError."""
    X, y = a9a_small
    replicated = DaskOracle.from_array(client, X, y, loss="hinge", n_partitions=4, replicas=2)
    cuts = [0, 800, 1500, 2200, 3000]
    paths = [tmp_path / f"{k}.svm" for k in range(4)]
    for path, a, b in zip(paths, cuts[:-1], cuts[1:]):
        fr.dump_svmlight(X[a:b], y[a:b], path)
    from_files = DaskOracle.from_svmlight(client, paths, loss="hinge", n_features=123)
    single = DaskOracle.from_array(client, X, y, loss="hinge", n_partitions=2)
    oracles = (replicated, from_files, single)
    locals_ = [o.local_equivalent(X, y) for o in oracles]
    for oracle, local in zip(oracles, locals_):
        assert_same(oracle, local, seeds=(0,))
    victim = next(iter(client.who_has(single.partitions[0]).values()))[0]
    assert victim in holders(client, from_files)  # the kill does hit a file partition
    for copies in replicated.copies:  # each partition: one copy on each worker
        assert len({client.who_has(p)[p.key] for p in copies}) == 2
    time.sleep(2.5)  # past one cycle of Dask's memory manager, which drops redundant replicas
    kill_worker(client, victim)
    assert_same(replicated, locals_[0], seeds=(1,))
    assert_same(from_files, locals_[1], seeds=(1,))  # re-read from its file elsewhere
    with pytest.raises(PartitionLostError, match="replicas >= 2"):
        single(weights(single.n_weights))
