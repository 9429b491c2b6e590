"""Ctrl-C: a run interrupted by SIGINT returns its iterate with status "interrupted".

Each case runs in a subprocess that prints "started" from its third callback; the test
then sends SIGINT (what Ctrl-C sends) and reads the Result the process prints.  The
run is unbounded otherwise (tol=0, a huge max_iter; a 120 s time limit only guards the
test), so an ignored interrupt shows up as status "time_limit".  The reported objective
must be J(w) of the returned w, recomputed independently by ``Problem.objective``.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np, scipy.sparse as sp
    import fastrisk as fr

    solver, loss, penalty, options = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    rng = np.random.default_rng(0)
    X = sp.random(20000, 500, density=0.02, random_state=0, format="csr")
    y = np.where(X @ rng.standard_normal(500) > 0, 1.0, -1.0)
    prob = fr.Problem(X, y, loss=loss, penalty=penalty, alpha=1e-6, p=1.5)
    calls = []

    def callback(result):
        calls.append(True)
        if len(calls) == 3:
            print("started", flush=True)

    res = fr.solve(prob, solver=solver, tol=0.0, max_iter=10**7, time_limit=120,
                   callback=callback, **options)
    print(json.dumps({"status": res.status, "n_iter": res.n_iter, "objective": res.objective,
                      "J": prob.objective(res.w), "finite": bool(np.isfinite(res.w).all()),
                      "nonzero": bool(np.any(res.w != 0))}), flush=True)
""")


def _interrupt(args):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        first = proc.stdout.readline()
        assert first.strip() == "started", (first, proc.stderr.read())
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    return out, err


@pytest.mark.parametrize("solver,loss,penalty,options", [
    ("bmrm", "hinge", "l2", {}),                                   # batch
    ("lbfgs", "logistic", "l2", {}),
    ("sdca", "hinge", "l2", {"random_state": 0}),                  # SDCA
    ("sdca", "hinge", "l2", {"random_state": 0, "batch_size": 16}),
    ("pegasos", "hinge", "l2", {"random_state": 0}),               # Pegasos family
    ("optimistic", "hinge", "l2", {"random_state": 0, "epsilon": 1e-12}),
    ("pgs", "hinge", "lp", {"random_state": 0}),                   # PGS
    ("rda", "logistic", "l1", {"random_state": 0}),                # RDA and its baselines
    ("truncated_gradient", "logistic", "l1", {"random_state": 0}),
])
def test_sigint_returns_the_iterate(solver, loss, penalty, options):
    out, _ = _interrupt(["-c", CHILD, solver, loss, penalty, json.dumps(options)])
    res = json.loads(out.strip().splitlines()[-1])
    assert res["status"] == "interrupted"
    assert res["n_iter"] >= 2 and res["finite"] and res["nonzero"]
    # the reported objective is J(w) of the returned w (exact, 1e-9: summation order)
    assert res["objective"] == pytest.approx(res["J"], rel=1e-9)


ESTIMATOR = textwrap.dedent("""
    import json
    import numpy as np
    from sklearn.datasets import make_classification
    import fastrisk as fr

    X, y = make_classification(30000, 50, n_informative=10, n_classes=3, random_state=0)
    started = []

    def callback(result):
        if not started:
            started.append(True)
            print("started", flush=True)

    est = fr.LinearClassifier(loss="hinge", alpha=1e-9, solver="sdca", tol=0.0,
                              max_iter=10**7, time_limit=120, random_state=0, n_threads=2,
                              callback=callback)
    est.fit(X, y)
    print(json.dumps({"status": est.status_, "score": est.score(X, y)}), flush=True)
""")


def test_sigint_one_vs_rest_estimator_keeps_every_problem():
    """The one-vs-rest problems run in a thread pool; Ctrl-C reaches the main thread,
    which stops every run at its next check: all three keep their iterates."""
    out, err = _interrupt(["-c", ESTIMATOR])
    res = json.loads(out.strip().splitlines()[-1])
    assert res["status"] == ["interrupted"] * 3
    assert res["score"] > 1.0 / 3.0          # a trained model, better than chance
    assert "interrupted" in err              # the estimator's warning


def test_sigint_fastrisk_train_saves_the_model(tmp_path):
    from sklearn.datasets import dump_svmlight_file, make_classification

    X, y = make_classification(30000, 50, n_informative=10, random_state=0)
    data, model = tmp_path / "train.svm", tmp_path / "model.frm"
    dump_svmlight_file(X, y, str(data))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "fastrisk.cli", "train", str(data), "-o",
                             str(model), "--loss", "hinge", "--alpha", "1e-9", "--solver",
                             "sdca", "--tol", "1e-300", "--max-iter", "10000000", "--time-limit",
                             "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=tmp_path)
    try:
        first = proc.stderr.readline()          # the first progress line
        assert "it" in first, first
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "status interrupted" in out
    import fastrisk as fr

    m = fr.load(model)
    assert np.isfinite(m.coef).all() and np.any(m.coef != 0)


def test_an_interrupt_in_the_first_check_returns_an_iterate():
    """A KeyboardInterrupt from the callback of iteration 0 (before any step) ends every
    solver with status "interrupted" and its iterate, not an error."""
    import fastrisk as fr

    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    problem = fr.Problem(X, np.sign(X[:, 0]), loss="logistic", alpha=1e-2)

    def interrupt(*args):
        raise KeyboardInterrupt

    for info in fr.solvers.solvers_for(problem):
        res = fr.solve(problem, info.name, callback=interrupt, random_state=0)
        assert res.status == "interrupted" and res.w.shape == (4,), info.name
