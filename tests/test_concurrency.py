"""Fits in several Python threads at once give the bits of the same fits run one by one.

The kernels release the GIL and keep all their state in the arrays a call owns (no
globals, no shared scratch), so concurrent fits on one shared, read-only X must not see
each other.  Each fit runs 2 OpenMP threads of its own, as a user's thread pool would.
"""

import threading
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastrisk as fr


@pytest.fixture(scope="module")
def shared_X():
    """A sparse binary problem whose arrays are read-only, shared by every fit."""
    rng = np.random.default_rng(0)
    X = sp.random(20000, 300, density=0.03, format="csr", random_state=rng, dtype=np.float64)
    w = rng.normal(size=300)
    y = np.where(X @ w + 0.1 * rng.normal(size=20000) > 0, 1.0, -1.0)
    for a in (X.data, X.indices, X.indptr, y):
        a.flags.writeable = False
    return X, y


# (solver, Problem options, solve options): four solver families, different kernels
FITS = [
    ("sdca", dict(loss="hinge", alpha=1e-4), dict(tol=1e-9, max_iter=40)),
    ("lbfgs", dict(loss="logistic", alpha=1e-4), dict(tol=1e-9, max_iter=200)),
    ("bmrm", dict(loss="hinge", alpha=1e-3), dict(tol=1e-7, max_iter=300)),
    ("pegasos", dict(loss="hinge", alpha=1e-4), dict(tol=0, max_iter=30)),
    ("rda", dict(loss="logistic", penalty="l1", alpha=1e-4), dict(max_iter=30)),
]


def fit(X, y, solver, problem_kw, solve_kw):
    problem = fr.Problem(X, y, n_threads=2, **problem_kw)
    res = fr.solve(problem, solver=solver, random_state=0, **solve_kw)
    return res.w.copy(), res.objective, res.n_iter


def same_bits(a, b):
    (wa, ja, na), (wb, jb, nb) = a, b
    return np.array_equal(wa.view(np.uint64), wb.view(np.uint64)) and \
        np.float64(ja).view(np.uint64) == np.float64(jb).view(np.uint64) and na == nb


def test_concurrent_fits_equal_sequential_fits_bitwise(shared_X):
    X, y = shared_X
    sequential = [fit(X, y, *case) for case in FITS]
    data_before = X.data.copy()
    for _ in range(3):  # all start together; three rounds vary the overlaps
        results = [None] * len(FITS)
        errors = []
        start = threading.Barrier(len(FITS))

        def run(k):
            try:
                start.wait()
                results[k] = fit(X, y, *FITS[k])
            except BaseException as exc:  # reported below, in the main thread
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(k,)) for k in range(len(FITS))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        for case, seq, conc in zip(FITS, sequential, results):
            assert same_bits(seq, conc), f"{case[0]} differs when run concurrently"
    assert np.array_equal(X.data, data_before)  # the shared input was not written


def _blocked_in_callback(start_run):
    """Start ``start_run(callback)`` in a thread whose callback waits until released;
    returns (release, join) once the run is inside its first callback."""
    inside, release, out = threading.Event(), threading.Event(), {}

    def callback(result):
        inside.set()
        release.wait(30)

    def target():
        out["value"] = start_run(callback)

    thread = threading.Thread(target=target)
    thread.start()
    assert inside.wait(30)

    def join():
        release.set()
        thread.join(30)
        return out["value"]

    return join


def test_one_problem_is_solved_in_one_thread_at_a_time(shared_X):
    """A Problem's oracle keeps buffers and per-call outputs: while one thread solves it,
    another thread's solve is refused with a RuntimeError (it returned wrong answers);
    the first run finishes with the bits of an undisturbed run, and the Problem is free
    again afterwards."""
    X, y = shared_X
    problem = fr.Problem(X, y, loss="logistic", alpha=1e-3, n_threads=1)
    reference = fr.solve(problem, "lbfgs", max_iter=5)
    join = _blocked_in_callback(lambda cb: fr.solve(problem, "lbfgs", max_iter=5, callback=cb))
    with pytest.raises(RuntimeError, match="^this Problem is being solved in another thread"):
        fr.solve(problem, "lbfgs", max_iter=5)
    assert np.array_equal(join().w, reference.w)
    assert np.array_equal(fr.solve(problem, "lbfgs", max_iter=5).w, reference.w)


def test_one_estimator_is_fitted_in_one_thread_at_a_time(shared_X):
    """fit and partial_fit on an estimator that another thread is fitting are refused (both
    would write its fitted attributes); the first fit ends with the bits of a fit alone."""
    X, y = shared_X
    est = fr.LinearClassifier(loss="hinge", solver="pegasos", max_iter=2, random_state=0)
    alone = fr.LinearClassifier(loss="hinge", solver="pegasos", max_iter=2,
                                random_state=0).fit(X, y)
    join = _blocked_in_callback(lambda cb: est.set_params(callback=cb).fit(X, y))
    for call in (lambda: est.fit(X[:100], y[:100]),
                 lambda: est.partial_fit(X[:100], y[:100], classes=[-1.0, 1.0])):
        with pytest.raises(RuntimeError, match="being fitted in another thread"):
            call()
    join()
    assert np.array_equal(est.coef_, alone.coef_)


def test_a_failing_class_stops_the_other_one_vs_rest_fits():
    """One-vs-rest classes fit in parallel threads: when one class's run raises (here its
    callback), the others stop at their next check instead of running to their budget,
    and the exception reaches the caller."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 5))
    y = np.arange(300) % 3
    calls = []

    def callback(result):
        calls.append(1)
        if len(calls) == 1:
            raise ZeroDivisionError("from the callback")

    est = fr.LinearClassifier(solver="pegasos", max_iter=10**7, tol=0.0, time_limit=60,
                              n_threads=3, callback=callback)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the stopped classes' "interrupted" warnings
        with pytest.raises(ZeroDivisionError, match="from the callback"):
            est.fit(X, y)
    assert len(calls) < 1000  # epochs of 300 rows: a run to its budget makes millions
