"""Training on a Dask cluster: ``fastrisk train --scheduler`` and the estimators' ``scheduler=``.

The Dask oracle adds the same partial sums as the local oracle with the same
partition sizes and threads per partition (tests/test_distributed.py), and the
batch solvers are deterministic, so a fit through a LocalCluster(processes=True)
must equal the local fit with the same ``n_partitions`` bit for bit
(assert_array_equal: no tolerance).
"""

import io
import time

import numpy as np
import pytest

pytest.importorskip("distributed")

import fastrisk as fr
from fastrisk.cli import main
from fastrisk.datasets import load_a9a


@pytest.fixture(scope="module")
def a9a_small():
    X, y, _, _ = load_a9a()
    return X[:1500], y[:1500]


def run(argv):
    out = io.StringIO()
    code = main([str(a) for a in argv], out=out)
    return code, out.getvalue()


def worker_items(client, timeout=10.0):
    """Number of data items every worker holds, once it is zero (releases are asynchronous)
    or after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        items = sorted(client.run(lambda dask_worker: len(dask_worker.data)).values())
        if not any(items) or time.monotonic() > deadline:
            return items
        time.sleep(0.05)


# ---- the CLI --------------------------------------------------------------------------------


@pytest.mark.parametrize("loss,alpha,solver,used", [("hinge", 1e-2, "bmrm", "bmrm"),
                                                    ("logistic", 1e-3, "auto", "lbfgs")])
def test_cli_train_scheduler_equals_local(client, a9a_small, tmp_path, loss, alpha, solver, used):
    # (each iteration is one round trip to the cluster: alpha keeps BMRM's count small)
    X, y = a9a_small
    data = tmp_path / "train.svm"
    fr.dump_svmlight(X, y, data)
    common = ["train", data, "--loss", loss, "--alpha", alpha, "--tol", "1e-6", "--threads", "1",
              "--partitions", "3", "-q", "--n-features", "123"]
    code, out = run(common + ["--solver", solver, "--scheduler", client.scheduler.address,
                              "-o", tmp_path / "dask.frm"])
    assert code == 0 and f"solver {used}" in out
    code, out = run(common + ["--solver", used, "-o", tmp_path / "local.frm"])
    assert code == 0
    on_dask, local = fr.load(tmp_path / "dask.frm"), fr.load(tmp_path / "local.frm")
    np.testing.assert_array_equal(on_dask.coef, local.coef)
    assert on_dask.intercept == local.intercept
    assert on_dask.info["n_iter"] == local.info["n_iter"]
    assert worker_items(client) == [0, 0]  # the partitions were released


@pytest.mark.parametrize("argv,message", [
    (["--solver", "sdca"], "--solver sdca: a solver that cannot run with --scheduler"),
    (["--solver", "bmrm", "--compare", "pegasos"], "--compare pegasos: a solver that cannot"),
])
def test_cli_scheduler_rejects_stochastic_solvers(client, tmp_path, capsys, argv, message):
    code, _ = run(["train", tmp_path / "never_read.svm", "-o", tmp_path / "m.frm",
                   "--scheduler", client.scheduler.address] + argv)
    err = capsys.readouterr().err
    assert code == 1 and message in err and err.count("\n") == 1


def test_cli_partitions_must_be_positive(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        run(["train", tmp_path / "x.svm", "-o", tmp_path / "m.frm", "--partitions", "0"])
    assert exc.value.code == 2 and "--partitions must be >= 1" in capsys.readouterr().err


def test_cli_unreachable_scheduler(a9a_small, tmp_path, capsys):
    import dask

    X, y = a9a_small
    data = tmp_path / "train.svm"
    fr.dump_svmlight(X[:100], y[:100], data)
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code, _ = run(["train", data, "-o", tmp_path / "m.frm", "-q",
                       "--scheduler", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("fastrisk: error: --scheduler tcp://127.0.0.1:9:")
    assert err.count("\n") == 1


@pytest.mark.parametrize("address", ["notaurl", "", "tcp://host", "tcp://host:port"])
def test_malformed_scheduler_address_is_an_error_and_the_process_exits(tmp_path, address):
    """A scheduler address that does not parse is a ValueError naming the argument, before
    any Client is built (a Client that fails in its constructor keeps the interpreter from
    exiting): the estimator in a subprocess, and the command, end within the timeout."""
    import subprocess
    import sys

    script = ("import numpy as np, fastrisk as fr\n"
              "X = np.random.default_rng(0).normal(size=(20, 3)); y = np.sign(X[:, 0])\n"
              "try:\n"
              f"    fr.LinearClassifier(scheduler={address!r}).fit(X, y)\n"
              "except ValueError as exc:\n"
              "    print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"scheduler must be a scheduler address such as "
                                  f"'tcp://host:8786', got {address!r}")
    data = tmp_path / "train.svm"
    data.write_text("1 1:1\n-1 1:-1\n")
    proc = subprocess.run([sys.executable, "-m", "fastrisk.cli", "train", str(data), "-o",
                           str(tmp_path / "m.frm"), "-q", "--scheduler", address],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.startswith("fastrisk: error: --scheduler must be a scheduler address")


# ---- the estimators -------------------------------------------------------------------------


def test_classifier_scheduler_equals_local(client, a9a_small):
    X, y = a9a_small
    c = np.random.default_rng(0).uniform(0.5, 2.0, size=len(y))
    params = dict(loss="logistic", alpha=1e-3, solver="lbfgs", tol=1e-8, n_threads=1,
                  n_partitions=4)
    local = fr.LinearClassifier(**params).fit(X, y, sample_weight=c)
    # the scheduler's address: the estimator connects and disconnects itself
    on_dask = fr.LinearClassifier(scheduler=client.scheduler.address, **params)
    on_dask.fit(X, y, sample_weight=c)
    np.testing.assert_array_equal(on_dask.coef_, local.coef_)
    np.testing.assert_array_equal(on_dask.intercept_, local.intercept_)
    assert on_dask.objective_ == local.objective_ and on_dask.solver_ == "lbfgs"
    np.testing.assert_array_equal(on_dask.predict(X), local.predict(X))
    assert worker_items(client) == [0, 0]


def test_one_vs_rest_and_regressor_on_dask(client, a9a_small):
    X, y = a9a_small
    X = X.astype(np.float32)
    # 3 classes (671 / 458 / 371 rows): y, and for y < 0 a feature group
    labels = np.where(y > 0, 2, (np.asarray(X[:, 10:15].sum(axis=1)).ravel() > 0).astype(int))
    params = dict(loss="hinge", alpha=1e-1, solver="auto", tol=1e-4, n_threads=1,
                  n_partitions=2)
    local = fr.LinearClassifier(**dict(params, solver="bmrm")).fit(X, labels)
    on_dask = fr.LinearClassifier(scheduler=client, **params).fit(X, labels)
    assert on_dask.solver_ == "bmrm" and on_dask.coef_.shape == (3, 123)
    np.testing.assert_array_equal(on_dask.coef_, local.coef_)
    np.testing.assert_array_equal(on_dask.intercept_, local.intercept_)

    params = dict(loss="absolute", alpha=1e-1, solver="prox_bundle", tol=1e-3, n_threads=1,
                  n_partitions=3)
    local = fr.LinearRegressor(**params).fit(X, y)
    on_dask = fr.LinearRegressor(scheduler=client, **params).fit(X, y)
    np.testing.assert_array_equal(on_dask.coef_, local.coef_)
    assert on_dask.intercept_ == local.intercept_
    assert worker_items(client) == [0, 0]


def test_estimator_scheduler_errors(client, a9a_small):
    X, y = a9a_small
    for solver in ("sdca", "pegasos", "pgs"):
        est = fr.LinearClassifier(solver=solver, scheduler=client)
        with pytest.raises(ValueError, match=f"solver='{solver}' cannot run with scheduler="):
            est.fit(X, y)
    with pytest.raises(ValueError, match="supports the scalar losses"):
        fr.LinearClassifier(loss="softmax", scheduler=client).fit(X, y)
    with pytest.raises(ValueError, match="n_partitions must be None or an integer >= 1"):
        fr.LinearClassifier(n_partitions=0).fit(X, y)
    with pytest.raises(TypeError, match="^scheduler must be a dask Client"):
        fr.LinearClassifier(scheduler=3).fit(X, y)
