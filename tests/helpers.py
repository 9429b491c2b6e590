"""Helpers shared by several test modules (test modules never import each other)."""

import functools

import numpy as np
import scipy.sparse as sp

from fastrisk.problem import Problem

REL = 1e-6  # relative tolerance on objectives of the batch-solver tests (see test_bmrm)


def random_problem(seed, m=40, d=6, task="binary"):
    """(X, y): a small dense problem; task "binary" (+-1 labels), "regression" or counts."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    w = rng.normal(size=d)
    if task == "binary":
        y = np.where(X @ w + 0.5 * rng.normal(size=m) > 0, 1.0, -1.0)
    elif task == "regression":
        y = X @ w + 0.3 * rng.normal(size=m)
    else:  # counts
        y = rng.poisson(np.exp(0.3 * X @ w)).astype(float)
    return X, y


def check_against(res, J_ref):
    """A converged batch run within REL of an independent optimum, with a valid certificate."""
    assert res.status == "converged"
    assert abs(res.objective - J_ref) <= REL * abs(J_ref)
    # certificate: lower bound <= J* <= J_ref (rounding slack 1e-12 relative)
    assert res.extra["lower_bound"] <= J_ref + 1e-12 * abs(J_ref)
    assert res.objective - res.gap <= J_ref + 1e-12 * abs(J_ref)


def wide_problem(penalty="l2", loss="hinge", **kw):
    """Sparse data with more weights than rows (text-like), intercept and sample weights;
    one thread (small problems)."""
    rng = np.random.default_rng(0)
    m, d = 60, 400
    X = sp.random(m, d, density=0.05, random_state=1, format="csr")
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    kw.setdefault("n_threads", 1)
    return Problem(X, y, loss=loss, penalty=penalty, alpha=0.01,
                   sample_weight=rng.uniform(0.5, 1.5, m), fit_intercept=True, **kw)


def run_with_storage(monkeypatch, storage, solver, *args, **kw):
    """Run ``solver`` with the bundle's cut storage forced to "dense" or "samples"."""
    from fastrisk.solvers import bmrm, prox_bundle

    forced = functools.partial(bmrm.make_bundle, storage=storage)
    with monkeypatch.context() as mp:
        mp.setattr(bmrm, "make_bundle", forced)
        mp.setattr(prox_bundle, "make_bundle", forced)
        return solver(*args, **kw)
