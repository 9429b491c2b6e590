"""Helpers shared by several test modules (test modules never import each other)."""

import functools
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

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


def wide_data():
    """(X, y, c) of wide_problem: sparse X (60 x 400), -1/+1 labels, sample weights."""
    rng = np.random.default_rng(0)
    m, d = 60, 400
    X = sp.random(m, d, density=0.05, random_state=1, format="csr")
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    return X, y, rng.uniform(0.5, 1.5, m)


def wide_problem(penalty="l2", loss="hinge", **kw):
    """Sparse data with more weights than rows (text-like), intercept and sample weights;
    one thread (small problems); alpha 0.01."""
    X, y, c = wide_data()
    kw.setdefault("n_threads", 1)
    return Problem(X, y, loss=loss, penalty=penalty, alpha=0.01, sample_weight=c,
                   fit_intercept=True, **kw)


def run_with_storage(monkeypatch, storage, solver, *args, **kw):
    """Run ``solver`` with the bundle's cut storage forced to "dense" or "samples"."""
    from fastrisk.solvers import bmrm, prox_bundle

    forced = functools.partial(bmrm.make_bundle, storage=storage)
    with monkeypatch.context() as mp:
        mp.setattr(bmrm, "make_bundle", forced)
        mp.setattr(prox_bundle, "make_bundle", forced)
        return solver(*args, **kw)


def multiclass_data(m=200, d=12, k=4, seed=0, layout="dense", dtype=np.float64):
    """(X, y): k Gaussian clusters, 30% of the entries zeroed, rows of unit norm."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(k, d))
    y = rng.integers(0, k, m)
    X = centers[y] + rng.normal(size=(m, d)) * 1.5
    X *= rng.random((m, d)) < 0.7
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    X = X.astype(dtype)
    return (sp.csr_matrix(X) if layout == "csr" else X), y


def sklearn_softmax(X, y, alpha, penalty="l2", l1_ratio=None):
    """scikit-learn's multinomial optimum of the same J (C = 1/(alpha m), no intercept)."""
    m = X.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = dict(solver="lbfgs") if penalty == "l2" else dict(solver="saga", penalty=penalty,
                                                                l1_ratio=l1_ratio)
        model = LogisticRegression(C=1.0 / (alpha * m), fit_intercept=False, tol=1e-12,
                                   max_iter=100000, **kw).fit(X, y)
    return model.coef_


def liblinear_cs(X, y, alpha, sample_weight=None):
    """LIBLINEAR's Crammer-Singer optimum of the same J (C = 1/(alpha m), no intercept);
    sample weights c_i scale the rows' C as they scale the rows' losses in J."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LinearSVC(multi_class="crammer_singer", C=1.0 / (alpha * X.shape[0]),
                          fit_intercept=False, tol=1e-10, max_iter=1000000).fit(
                              X, y, sample_weight=sample_weight)
    return model.coef_
