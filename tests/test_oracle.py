"""The risk oracle (csrc/_oracle.pyx via fastrisk/oracle.py) against a plain NumPy computation.

Reference: R = (1/m) sum_i c_i l(f_i, y_i), grad = (1/m) X^T (c * l'(f)) with f = X w + b w_b,
computed on a dense float64 copy of X with the NumPy loss references of fastrisk/losses.py.
Both sum the same float64 products in different orders: 1e-12 relative is ample.
"""

import io

import numpy as np
import pytest
import scipy.sparse as sp

import fastrisk as fr
from fastrisk import _oracle
from fastrisk import oracle as oracle_module
from fastrisk.config import resolve_n_threads
from fastrisk.losses import LOSSES, SCALAR_LOSSES

PARAMS = {"quantile": 0.3, "epsilon_insensitive": 0.2, "huber": 0.7, "smoothed_hinge": 0.5}


def reference(X, y, w, name, param, c=None, bias=0.0):
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X)
    Xd = Xd.astype(np.float64)
    d = Xd.shape[1]
    f = Xd @ w[:d] + (bias * w[d] if bias else 0.0)
    value, deriv = LOSSES[name].reference(f, y, param)
    c = np.ones(len(y)) if c is None else c
    g = c * deriv
    grad = Xd.T @ g
    if bias:
        grad = np.r_[grad, bias * g.sum()]
    return np.sum(c * value) / len(y), grad / len(y)


def make_data(layout, dtype=np.float64, itype=np.int32, read_only=False, m=120, d=30, seed=0):
    rng = np.random.default_rng(seed)
    Xd = rng.normal(size=(m, d)) * (rng.random((m, d)) < 0.2)
    Xd[5] = 0.0  # an empty row
    Xd = Xd.astype(dtype)
    if layout == "dense":
        X = Xd
        arrays = [X]
    else:
        X = sp.csr_matrix(Xd)
        X.indices, X.indptr = X.indices.astype(itype), X.indptr.astype(itype)
        arrays = [X.data, X.indices, X.indptr]
    if read_only:
        for a in arrays:
            a.flags.writeable = False
    return X


def targets(name, m, seed=1):
    rng = np.random.default_rng(seed)
    task = LOSSES[name].task
    if task == "binary":
        return rng.choice([-1.0, 1.0], m)
    if task == "counts":
        return rng.poisson(2.0, m).astype(float)
    if task == "novelty":
        return np.zeros(m)
    return rng.normal(0, 1, m)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", SCALAR_LOSSES)
def test_every_loss_matches_numpy(name, dtype):
    X = make_data("csr", dtype)
    y = targets(name, X.shape[0])
    prob = fr.Problem(X, y, loss=name, loss_param=PARAMS.get(name), n_threads=2)
    w = np.random.default_rng(2).normal(size=prob.n_weights) * 0.3
    value, grad = prob.oracle(w)
    ref_value, ref_grad = reference(X, prob.y, w, name, prob.loss.param)
    assert value == pytest.approx(ref_value, rel=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("name", SCALAR_LOSSES)
def test_objective_at_zero_reads_the_labels_only(name):
    """J(0) from the labels alone equals the NumPy reference at w = 0 (sample weights and
    an intercept included) and the oracle's objective(0) up to rounding."""
    X = make_data("csr")
    y = targets(name, X.shape[0])
    c = np.random.default_rng(3).random(X.shape[0]) * 2.0
    for weights, intercept in ((None, False), (c, True)):
        prob = fr.Problem(X, y, loss=name, loss_param=PARAMS.get(name), sample_weight=weights,
                          fit_intercept=intercept, penalty="elasticnet", alpha=0.3)
        w0 = np.zeros(prob.n_weights)
        ref = reference(X, prob.y, w0, name, prob.loss.param, weights,
                        1.0 if intercept else 0.0)[0]
        assert prob.objective_at_zero() == pytest.approx(ref, rel=1e-13)
        assert prob.objective_at_zero() == pytest.approx(prob.objective(w0), rel=1e-13)


@pytest.mark.parametrize("name", [*SCALAR_LOSSES, "softmax", "multiclass_hinge"])
def test_weights_that_are_not_finite_are_refused(name):
    """A NaN or infinite weight is refused for every loss, also those whose value stays
    finite at a NaN score (the hinge family: max(0, 1 - y NaN) is 0), on the row and the
    column paths and with several partitions."""
    X = make_data("csr")
    vector = name in ("softmax", "multiclass_hinge")
    y = np.arange(X.shape[0]) % 3 if vector else targets(name, X.shape[0])
    for n_partitions in (1, 3):
        prob = fr.Problem(X, y, loss=name, loss_param=PARAMS.get(name),
                          n_partitions=n_partitions)
        for bad in (np.nan, np.inf, -np.inf):
            w = np.zeros(prob.n_weights)
            w[3] = bad
            with pytest.raises(ValueError, match="^w contains NaN or infinity"):
                prob.oracle(w)
            for columns in (True, False):
                prob.oracle.columns = columns
                with pytest.raises(ValueError, match="^w contains NaN or infinity"):
                    prob.risk(w)
            prob.oracle.columns = "auto"


def test_objective_at_zero_of_a_vector_loss_is_the_oracle_value():
    X = make_data("csr")
    prob = fr.Problem(X, np.arange(X.shape[0]) % 3, loss="softmax")
    assert prob.objective_at_zero() == prob.objective(np.zeros(prob.n_weights)) \
        == pytest.approx(np.log(3.0), rel=1e-14)


@pytest.mark.parametrize("layout,dtype,itype,read_only", [
    ("dense", np.float64, None, False), ("dense", np.float32, None, True),
    ("csr", np.float64, np.int32, False), ("csr", np.float32, np.int32, True),
    ("csr", np.float64, np.int64, True), ("csr", np.float32, np.int64, False),
])
@pytest.mark.parametrize("n_threads,n_partitions", [(1, 1), (2, 1), (2, 3), (3, 2)])
@pytest.mark.parametrize("intercept,weighted", [(False, False), (True, True)])
def test_layouts_threads_partitions(layout, dtype, itype, read_only, n_threads, n_partitions,
                                    intercept, weighted):
    X = make_data(layout, dtype, itype or np.int32, read_only)
    m = X.shape[0]
    y = targets("logistic", m)
    c = np.random.default_rng(3).uniform(0, 2, m) if weighted else None
    prob = fr.Problem(X, y, loss="logistic", sample_weight=c, fit_intercept=intercept,
                      intercept_scaling=1.5, n_threads=n_threads, n_partitions=n_partitions)
    if layout == "csr":  # the kernel read the caller's arrays
        assert np.shares_memory(prob.data.data, X.data)
    w = np.random.default_rng(4).normal(size=prob.n_weights)
    value, grad = prob.oracle(w)
    ref_value, ref_grad = reference(X, y, w, "logistic", 0.0, c, 1.5 if intercept else 0.0)
    assert value == pytest.approx(ref_value, rel=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-11, atol=1e-14)
    # the call leaves the scores f = X w (+ bias * w_b) of its pass in oracle.scores
    Xd = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    f = Xd @ w[:30] + (1.5 * w[30] if intercept else 0.0)
    np.testing.assert_allclose(prob.oracle.scores, f, rtol=1e-12, atol=1e-14)


def test_real_data_and_repeatable_bits(libsvm):
    # a9a (read-only arrays from the fixture), 1 and 2 threads and 3 partitions; the same
    # thread count gives the same bits on every call and for a fresh oracle.
    X, y = libsvm("a9a")
    w = np.random.default_rng(0).normal(size=124) * 0.1
    results = {}
    for n_threads in (1, 2):
        prob = fr.Problem(X, y, loss="logistic", fit_intercept=True, n_threads=n_threads,
                          n_partitions=3)
        first = prob.oracle(w)
        for _ in range(3):
            again = prob.oracle(w)
            assert again[0] == first[0] and np.array_equal(again[1], first[1])
        fresh = fr.Problem(X, y, loss="logistic", fit_intercept=True, n_threads=n_threads,
                           n_partitions=3).oracle(w)
        assert fresh[0] == first[0] and np.array_equal(fresh[1], first[1])
        results[n_threads] = first
    ref_value, ref_grad = reference(X, y, w, "logistic", 0.0, bias=1.0)
    for value, grad in results.values():
        assert value == pytest.approx(ref_value, rel=1e-12)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-15)


def test_partial_sums_add_up():
    X = make_data("csr")
    y = targets("hinge", X.shape[0])
    oracle = fr.Problem(X, y, loss="hinge", n_partitions=4, n_threads=1).oracle
    w = np.random.default_rng(5).normal(size=30)
    parts = [oracle.partial(w, k) for k in range(4)]
    value, grad = oracle(w)
    assert sum(p[0] for p in parts) / 120 == pytest.approx(value, rel=1e-14)
    np.testing.assert_allclose(sum(p[1] for p in parts) / 120, grad, rtol=1e-13, atol=1e-16)
    assert [b - a for a, b in oracle.partitions] == [30, 30, 30, 30]


def test_more_threads_than_rows():
    # the kernel itself with 4 threads for 2 rows (Problem caps n_threads at the cores)
    X = np.array([[1.0, 2.0], [0.0, -1.0]])
    prob = fr.Problem(X, [1, -1], loss="squared_hinge", n_threads=1)
    w = np.array([0.3, 0.1])
    d, grad = prob.data, np.empty(2)
    value, status = _oracle.risk_gradient(d.data, d.indices, d.indptr, d.dense, d.bias, w,
                                          prob.loss.spec.kernel_id, prob.loss.param, prob.y,
                                          np.empty(0), 0, 2, grad, np.empty((4, 4)), 4)
    assert status == _oracle.STATUS_OK
    value, grad = value / 2, grad / 2
    ref_value, ref_grad = reference(X, np.array([1.0, -1.0]), w, "squared_hinge", 0.0)
    assert value == pytest.approx(ref_value, rel=1e-15)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-15)


@pytest.mark.parametrize("name,scale", [("exponential", -1.0), ("poisson", 1.0)])
def test_overflow_is_a_clear_error(name, scale):
    X = np.ones((4, 2))
    y = np.array([1.0, -1.0, 1.0, 0.0]) if name == "poisson" else np.array([1.0, -1.0, 1.0, -1.0])
    prob = fr.Problem(X, np.abs(y) if name == "poisson" else y, loss=name)
    prob.oracle(np.array([1.0, 1.0]))  # moderate scores are fine
    with pytest.raises(FloatingPointError, match=f"the {name} loss is not finite"):
        prob.oracle(np.array([400.0, 400.0]) * scale)
    with pytest.raises(ValueError, match="w contains NaN"):  # not reported as an overflow
        prob.oracle(np.array([np.nan, 1.0]))


def test_local_oracle_checks_its_rows():
    """y and sample_weight given to a LocalOracle directly: finite, weights non-negative,
    labels -1/+1 for a binary loss (the kernel reads any other value as a margin factor)
    and non-negative counts for the Poisson loss."""
    d = fr.Dataset(np.ones((3, 2)))
    loss = fr.Loss("logistic")
    with pytest.raises(ValueError, match="y contains NaN"):
        fr.LocalOracle(d, loss, np.array([1.0, np.nan, -1.0]))
    for c in ([1.0, -1.0, 1.0], [1.0, np.inf, 1.0]):
        with pytest.raises(ValueError, match="sample_weight must be finite and non-negative"):
            fr.LocalOracle(d, loss, np.ones(3), np.array(c))
    for labels in ([0.0, 1.0, 1.0], [3.0, -1.0, 1.0]):
        with pytest.raises(ValueError, match="y must hold the labels -1 and \\+1 for the "
                                             "logistic loss"):
            fr.LocalOracle(d, loss, np.array(labels))
    with pytest.raises(ValueError, match="y must be non-negative for the poisson loss"):
        fr.LocalOracle(d, fr.Loss("poisson"), np.array([1.0, -2.0, 0.0]))
    fr.LocalOracle(d, fr.Loss("poisson"), np.array([1.0, 2.5, 0.0]))  # counts may be real


def test_kernel_argument_checks():
    X = make_data("csr", m=10, d=3)
    D = fr.Dataset(X)
    args = [D.data, D.indices, D.indptr, D.dense, 0.0, np.zeros(3), 0, 0.0, np.zeros(10),
            np.empty(0), 0, 10, np.empty(3), np.empty((2, 6)), 2]
    _oracle.risk_gradient(*args)
    for bad in (np.zeros((1, 6)), np.zeros((2, 3))):
        with pytest.raises(ValueError, match="workspace"):
            _oracle.risk_gradient(*args[:-2], bad, 2)
    with pytest.raises(ValueError, match="inconsistent"):
        _oracle.risk_gradient(*args[:12], np.empty(4), np.empty((2, 8)), 2)
    with pytest.raises(ValueError, match="out of range"):
        _oracle.risk_gradient(*args[:11], 11, *args[12:])
    with pytest.raises(ValueError, match="loss id"):
        _oracle.risk_gradient(*args[:6], 42, *args[7:])
    with pytest.raises(ValueError, match=r"w has shape \(2,\)"):
        fr.Problem(X, np.r_[np.ones(5), -np.ones(5)]).oracle(np.zeros(2))


def test_threads_config_and_show_config():
    assert resolve_n_threads(1) == 1
    assert resolve_n_threads(None) >= 1
    with pytest.raises(ValueError, match="n_threads"):
        resolve_n_threads(1.5)
    buf = io.StringIO()
    fr.show_config(file=buf)
    text = buf.getvalue()
    assert f"fastrisk {fr.__version__}" in text and "openmp" in text and "cflags" in text
    assert ("on" in text.split("openmp")[1].split("\n")[0]) == fr.config.OPENMP


@pytest.mark.parametrize("user_value", [None, "ACTIVE"])
def test_omp_wait_policy_default_respects_the_user(user_value):
    """import fastrisk makes idle OpenMP threads sleep (PASSIVE) unless the user set a policy."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if user_value:
        env["OMP_WAIT_POLICY"] = user_value
    out = subprocess.run([sys.executable, "-c", "import fastrisk, os; "
                          "print(os.environ['OMP_WAIT_POLICY'])"],
                         env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert out == (user_value or "PASSIVE")


# ---- the column path (X^T g from the column copy of X, fastrisk/columns.py) ----------------

def column_problem(monkeypatch, name="logistic", dtype=np.float64, itype=np.int32,
                   read_only=False, intercept=False, weighted=False, n_threads=2, m=120, d=30):
    """A Problem whose oracle takes the column path, cut into chunks of 16 stored entries
    (a real data set has CHUNK_NNZ-sized ones) so that the threads share many chunks; X
    has an empty row (make_data) and an empty column."""
    monkeypatch.setattr(oracle_module, "CHUNK_NNZ", 16)
    X = make_data("csr", dtype, itype, m=m, d=d)
    X = sp.csr_matrix(X.multiply(np.r_[np.ones(d - 1), 0.0][None, :]).astype(dtype))
    X.eliminate_zeros()
    X.indices, X.indptr = X.indices.astype(itype), X.indptr.astype(itype)
    if read_only:
        for a in (X.data, X.indices, X.indptr):
            a.flags.writeable = False
    y = targets(name, m)
    c = np.random.default_rng(3).uniform(0, 2, m) if weighted else None
    prob = fr.Problem(X, y, loss=name, loss_param=PARAMS.get(name), sample_weight=c,
                      fit_intercept=intercept, intercept_scaling=1.5, n_threads=n_threads)
    prob.oracle.columns = True
    assert prob.oracle.uses_columns()
    return X, prob, c


@pytest.mark.parametrize("dtype,itype,read_only", [
    (np.float64, np.int32, False), (np.float32, np.int32, True),
    (np.float64, np.int64, True), (np.float32, np.int64, False)])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("intercept,weighted", [(False, False), (True, True)])
def test_column_path_matches_numpy(monkeypatch, dtype, itype, read_only, n_threads, intercept,
                                   weighted):
    """Value, gradient, scores and multipliers of the column path against the NumPy
    reference (tolerances of test_layouts_threads_partitions: sums of 120 terms of
    O(1) in another order than NumPy's), for a smooth and a non-smooth loss."""
    for name in ("logistic", "hinge", "poisson", "huber"):
        X, prob, c = column_problem(monkeypatch, name, dtype, itype, read_only, intercept,
                                    weighted, n_threads)
        w = np.random.default_rng(4).normal(size=prob.n_weights) * 0.3
        value, grad = prob.oracle(w)
        ref_value, ref_grad = reference(X, prob.y, w, name, prob.loss.param, c,
                                        1.5 if intercept else 0.0)
        assert value == pytest.approx(ref_value, rel=1e-12)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-11, atol=1e-14)
        assert grad[29] == 0.0  # the empty column
        Xd = X.toarray().astype(np.float64)
        f = Xd @ w[:30] + (1.5 * w[30] if intercept else 0.0)
        np.testing.assert_allclose(prob.oracle.scores, f, rtol=1e-12, atol=1e-14)
        _, deriv = LOSSES[name].reference(f, prob.y, prob.loss.param)
        g = deriv if c is None else c * deriv
        np.testing.assert_allclose(prob.oracle.multipliers, g, rtol=1e-12, atol=1e-14)
        # the same data on the row path: the same sums in another order
        prob.oracle.columns = False
        row_value, row_grad = prob.oracle(w)
        assert value == pytest.approx(row_value, rel=1e-13)
        np.testing.assert_allclose(grad, row_grad, rtol=1e-12, atol=1e-15)


def test_column_path_same_bits_for_every_thread_count(monkeypatch):
    """The column kernel with 1, 2 and 3 threads and with more threads than columns
    (8 threads, 5 columns): every row, column and chunk sum has an order fixed by the
    data, so every call and every thread count gives the same bits."""
    X, prob, _ = column_problem(monkeypatch, "logistic", intercept=True, m=200, d=5)
    d = prob.data
    args = (d.data, d.indices, d.indptr, d.bias, *prob.oracle._column_args())
    assert len(args[-1]) > 2  # several column chunks
    w = np.random.default_rng(6).normal(size=prob.n_weights)
    results = []
    for n_threads in (1, 2, 3, 8, 2, 3):
        grad, g, f = np.empty(prob.n_weights), np.empty(200), np.empty(200)
        value, status = _oracle.risk_gradient_columns(
            *args, w, prob.loss.spec.kernel_id, 0.0, prob.y, np.empty(0), grad, g, f, n_threads)
        assert status == _oracle.STATUS_OK
        results.append((value, grad, g, f))
    for value, grad, g, f in results[1:]:
        assert value == results[0][0]
        for a, b in zip((grad, g, f), results[0][1:]):
            assert np.array_equal(a, b)
    ref_value, ref_grad = reference(X, prob.y, w, "logistic", 0.0, bias=1.5)
    assert results[0][0] / 200 == pytest.approx(ref_value, rel=1e-12)
    np.testing.assert_allclose(results[0][1] / 200, ref_grad, rtol=1e-11, atol=1e-14)


def test_column_path_overflow_and_argument_checks(monkeypatch):
    X, prob, _ = column_problem(monkeypatch, "poisson", n_threads=1)
    with pytest.raises(FloatingPointError, match="the poisson loss is not finite"):
        prob.oracle(np.full(30, 400.0))
    d = prob.data
    values, rows, colptr, rc, cc = prob.oracle._column_args()
    good = [d.data, d.indices, d.indptr, 0.0, values, rows, colptr, rc, cc, np.zeros(30), 0,
            0.0, prob.y, np.empty(0), np.empty(30), np.empty(120), np.empty(120), 2]
    _oracle.risk_gradient_columns(*good)
    for i, bad, match in [(6, colptr[:-1], "inconsistent"), (4, values[:-1], "column view"),
                          (7, rc[::-1].copy(), "chunks"), (8, cc[:-1], "chunks"),
                          (15, np.empty(119), "length m"), (9, np.zeros(31), "inconsistent")]:
        args = list(good)
        args[i] = bad
        with pytest.raises(ValueError, match=match):
            _oracle.risk_gradient_columns(*args)


def test_column_rule_and_shared_copy():
    """use_columns: sparse X, one partition and a row-path buffer above COLUMN_BYTES
    (16 bytes per weight: w interleaved with the gradient); the copy is made once per
    Dataset and shared with coordinate descent."""
    from fastrisk.columns import column_view

    wide = sp.random(50, oracle_module.COLUMN_BYTES // 16 + 1, density=1e-4, format="csr",
                     random_state=0)
    y = np.r_[np.ones(25), -np.ones(25)]
    prob = fr.Problem(wide, y, loss="logistic", n_threads=2)
    assert prob.oracle.uses_columns()
    # one thread: only where the copy (8 bytes per column and 12 per entry) is no larger
    # than the one buffer it replaces (16 bytes per column)
    assert fr.Problem(wide, y, loss="logistic", n_threads=1).oracle.uses_columns()
    denser = sp.random(50, wide.shape[1], density=0.03, format="csr", random_state=0)
    assert not fr.Problem(denser, y, loss="logistic", n_threads=1).oracle.uses_columns()
    assert fr.Problem(denser, y, loss="logistic", n_threads=2).oracle.uses_columns()
    assert not fr.Problem(wide, y, loss="logistic", n_partitions=2).oracle.uses_columns()
    assert not fr.Problem(wide[:, :1000], y, loss="logistic").oracle.uses_columns()
    assert not fr.Problem(wide[:, :1000].toarray(), y, loss="logistic").oracle.uses_columns()
    w = np.random.default_rng(0).normal(size=prob.n_weights)
    value, grad = prob.oracle(w)
    assert prob.data._columns is column_view(prob.data)  # made by the call, kept
    prob.oracle.columns = False
    assert not prob.oracle.uses_columns()
    row_value, row_grad = prob.oracle(w)
    assert value == pytest.approx(row_value, rel=1e-13)
    np.testing.assert_allclose(grad, row_grad, rtol=1e-12, atol=1e-15)
    prob.oracle.columns = "yes"
    with pytest.raises(ValueError, match="columns must be"):
        prob.oracle(w)
    with pytest.raises(ValueError, match="columns must be"):
        oracle_module.LocalOracle(prob.data, prob.loss, prob.y, columns=1)
