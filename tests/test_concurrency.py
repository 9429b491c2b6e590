"""Fits in several Python threads at once give the bits of the same fits run one by one.

The kernels release the GIL and keep all their state in the arrays a call owns (no
globals, no shared scratch), so concurrent fits on one shared, read-only X must not see
each other.  Each fit runs 2 OpenMP threads of its own, as a user's thread pool would.
"""

import threading

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
