"""SDCA as CoCoA+ rounds over row blocks (``blocks=k``; Ma et al. 2015): the optimum of the
sequential method and of LIBLINEAR, a dual that never decreases, a certificate never below
the true gap, and the same bits for a fixed random_state and number of blocks."""

import numpy as np
import pytest
import scipy.sparse as sp

import fastrisk as fr
from fastrisk.solvers import sdca
from reference.liblinear import liblinear_solution, objective

LOSSES = ("hinge", "logistic", "squared_hinge")


def sparse_problem(m=120, d=300, density=0.05, seed=0, dtype=np.float64):
    """Text-like (CSR, more columns than rows, rows of norm 1) labels from a sparse model."""
    rng = np.random.default_rng(seed)
    X = sp.random(m, d, density=density, random_state=seed, format="csr", dtype=dtype)
    X = sp.csr_matrix(X.multiply(1.0 / np.sqrt(np.maximum(X.multiply(X).sum(1), 1e-12))),
                      dtype=dtype)
    y = np.where(X @ rng.normal(size=d) + 0.1 * rng.normal(size=m) > 0, 1.0, -1.0)
    return X, y


def fit(X, y, loss, alpha=1e-2, n_threads=2, blocks=2, **options):
    problem = fr.Problem(X, y, loss=loss, alpha=alpha, fit_intercept=False, n_threads=n_threads)
    options = dict(dict(tol=1e-10, max_iter=20_000, random_state=0), **options)
    return fr.solve(problem, solver="sdca", blocks=blocks, **options)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("layout", ["csr", "dense"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_optimum_matches_sequential_and_liblinear(loss, layout, dtype):
    X, y = sparse_problem(dtype=dtype)
    X = X.toarray() if layout == "dense" else X
    res = fit(X, y, loss, blocks=2)
    seq = fit(X, y, loss, blocks=1, n_threads=1)
    assert res.status == seq.status == "converged"
    assert res.extra["variant"] == "cocoa+" and res.extra["blocks"] == 2
    # both certified to 1e-10 J: their objectives agree to 2e-10 J (1e-9: rounding of J)
    assert abs(res.objective - seq.objective) <= 1e-9 * seq.objective
    # the reported objective is J(w) computed independently in NumPy (float32 data: 1e-6)
    X64 = X.astype(np.float64)
    J = objective(X64, y, res.w, loss, 1e-2)
    assert abs(res.objective - J) <= (1e-6 if dtype == np.float32 else 1e-12) * J
    # LIBLINEAR (tol 1e-9) is at or above J*: J(w) - J_lib <= certified gap; 1e-6 relative
    # covers LIBLINEAR's own stopping error
    _, J_lib = liblinear_solution(X64, y, loss, 1e-2)
    assert res.objective - J_lib <= res.gap * (1 + 1e-12) + 1e-12
    assert abs(res.objective - J_lib) <= 1e-6 * J_lib


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("shrinking", [True, False])
def test_dual_never_decreases_between_rounds(loss, shrinking):
    X, y = sparse_problem(m=200, d=150, density=0.1, seed=3)
    problem = fr.Problem(X, y, loss=loss, alpha=1e-3, fit_intercept=False, n_threads=2)
    method = sdca._SDCA(problem, batch_size=1, variant="safe", n_threads=2, start=None,
                        shrinking=shrinking, seed=7, blocks=3)
    P, D = method._resync(method.v)
    duals, shortfall = [D], []
    for _ in range(40):
        method.tighten_steps(P - D)  # as the driver does at its exact checks
        # the inexact logistic step (fastrisk/solvers/sdca.py, STEP_TOL_GAP) may fall short of
        # each coordinate's maximum by (c_i / n) step_tol^2 / 4, a round by at most this
        shortfall.append(method.mean_c * method.step_tol ** 2 / 4)
        method.run_epoch()
        P, D = method._resync(method.v)  # D(u) from one exact pass
        duals.append(D)
    steps = np.diff(duals)
    # the paper's Lemma 3 with sigma' = K: the local objectives bound D from below, and
    # each block's SDCA pass raises its own (exact steps: hinge, squared hinge); 1e-13
    # relative allows the rounding of the sums
    assert np.all(steps >= -np.array(shortfall) - 1e-13 * abs(duals[-1])), steps.min()
    assert duals[-1] > duals[0]
    if loss != "logistic":
        assert max(shortfall) == 0.0


@pytest.mark.parametrize("loss", LOSSES)
def test_certified_gap_never_below_true_gap(loss):
    X, y = sparse_problem(m=150, d=200, density=0.08, seed=5)
    ref = fit(X, y, loss, alpha=1e-3, blocks=1, n_threads=1, tol=1e-13)
    res = fit(X, y, loss, alpha=1e-3, blocks=2, tol=1e-8, check_every=1)
    h = res.history.as_arrays()
    exact = h["exact"]
    assert exact.sum() >= 3
    # J_ref >= J*, so J(w_t) - J_ref <= J(w_t) - J* must stay below every certified bound;
    # 1e-12 relative: rounding of J
    slack = 1e-12 * abs(ref.objective)
    assert np.all(h["objective"][exact] - ref.objective <= h["bound"][exact] + slack)
    assert res.objective - ref.objective <= res.gap + slack


@pytest.mark.parametrize("blocks, n_threads", [(2, 2), (3, 2), (3, 1)])
def test_same_bits_across_runs(blocks, n_threads):
    X, y = sparse_problem(seed=2)
    runs = [fit(X, y, "logistic", n_threads=n_threads, blocks=blocks, tol=1e-6)
            for _ in range(3)]
    for r in runs[1:]:
        assert np.array_equal(r.w, runs[0].w) and r.n_iter == runs[0].n_iter
        assert np.array_equal(r.extra["dual"], runs[0].extra["dual"])
    # the bits depend on the blocks, not on the threads that run them
    other = fit(X, y, "logistic", n_threads=3 - n_threads if n_threads < 3 else 1,
                blocks=blocks, tol=1e-6)
    assert np.array_equal(other.w, runs[0].w)


def test_more_blocks_than_rows():
    X, y = sparse_problem(m=5, d=40, density=0.3, seed=4)
    runs = [fit(X, y, "squared_hinge", n_threads=2, blocks=16) for _ in range(2)]
    assert runs[0].extra["blocks"] == 5  # one row per block
    assert np.array_equal(runs[0].w, runs[1].w)
    seq = fit(X, y, "squared_hinge", blocks=1, n_threads=1)
    assert abs(runs[0].objective - seq.objective) <= 1e-9 * seq.objective


def test_size_rule_and_sequential_default(monkeypatch):
    X, y = sparse_problem()
    # small data: the size rule keeps the sequential epoch, on any number of threads
    for loss in LOSSES:
        problem = fr.Problem(X, y, loss=loss, alpha=1e-2, fit_intercept=False, n_threads=2)
        assert sdca.cocoa_blocks(problem, 2, 1, 1.0) == 1
    # enough nonzeros per block: one block per thread for a smooth loss when alpha n / R^2
    # reaches COCOA_CONDITION (1 without a dual box, 2 with one); the hinge loss never
    big = sp.random(2000, 1000, density=0.6, random_state=0, format="csr")
    yb = np.where(np.arange(2000) % 2 == 0, 1.0, -1.0)
    for loss, alpha, expected in [("logistic", 1e-3, 2), ("logistic", 4e-4, 1),
                                  ("squared_hinge", 1e-3, 2), ("squared_hinge", 8e-4, 1),
                                  ("hinge", 1e-2, 1)]:
        problem = fr.Problem(big, yb, loss=loss, alpha=alpha, fit_intercept=False, n_threads=2)
        R2 = 1.0  # alpha n / R^2 = 2000 alpha
        assert sdca.cocoa_blocks(problem, 2, 1, R2) == expected
        assert sdca.cocoa_blocks(problem, 1, 1, R2) == 1
        assert sdca.cocoa_blocks(problem, 2, 8, R2) == 1  # mini-batches keep their own path
    # more weights than COCOA_MAX_WEIGHTS: sequential
    problem = fr.Problem(big, yb, loss="logistic", alpha=1e-3, fit_intercept=False, n_threads=2)
    monkeypatch.setattr(sdca, "COCOA_MAX_WEIGHTS", 999)
    assert sdca.cocoa_blocks(problem, 2, 1, 1.0) == 1
    monkeypatch.setattr(sdca, "COCOA_MAX_WEIGHTS", 1000)
    assert sdca.cocoa_blocks(problem, 2, 1, 1.0) == 2
    # the rule as solve applies it (R^2 from the rows)
    problem = fr.Problem(big, yb, loss="logistic", alpha=1.0, fit_intercept=False, n_threads=2)
    res = fr.solve(problem, solver="sdca", tol=1e-2, random_state=0)
    assert res.extra["variant"] == "cocoa+" and res.extra["blocks"] == 2
    # blocks=1 on 2 threads is the sequential epoch of 1 thread, bit for bit
    a = fit(X, y, "logistic", n_threads=1, blocks=1, tol=1e-6)
    b = fit(X, y, "logistic", n_threads=2, blocks=None, tol=1e-6)
    assert a.extra["variant"] == b.extra["variant"] == "single"
    assert np.array_equal(a.w, b.w)


def test_elastic_net_rejected():
    X, y = sparse_problem(seed=6)
    problem = fr.Problem(X, y, loss="logistic", alpha=1e-2, penalty="elasticnet",
                         l1_ratio=0.3, n_threads=2)
    with pytest.raises(ValueError, match="blocks=2.*l2 penalty"):
        fr.solve(problem, solver="sdca", blocks=2)
    assert sdca.cocoa_blocks(problem, 2, 1, 1.0) == 1


def test_intercept_and_sample_weight():
    X, y = sparse_problem(seed=8)
    c = np.random.default_rng(0).uniform(0.2, 2.0, size=len(y))
    c[:3] = 0.0  # rows of weight 0 are skipped
    kw = dict(loss="squared_hinge", alpha=1e-2, fit_intercept=True, sample_weight=c)
    par = fr.solve(fr.Problem(X, y, n_threads=2, **kw), solver="sdca", blocks=2, tol=1e-10,
                   max_iter=20_000, random_state=0)
    seq = fr.solve(fr.Problem(X, y, n_threads=1, **kw), solver="sdca", blocks=1, tol=1e-10,
                   max_iter=20_000, random_state=0)
    assert par.status == seq.status == "converged"
    assert abs(par.objective - seq.objective) <= 1e-9 * seq.objective


@pytest.mark.parametrize("blocks", [0, -1, 1.5, True, "2"])
def test_invalid_blocks(blocks):
    X, y = sparse_problem()
    with pytest.raises(ValueError, match="blocks"):
        fit(X, y, "logistic", blocks=blocks)


def test_blocks_with_minibatch_rejected():
    X, y = sparse_problem()
    with pytest.raises(ValueError, match="blocks=2.*batch_size=1"):
        fit(X, y, "logistic", blocks=2, batch_size=4)


def test_accelerated_runs_sequential_epochs():
    # the accelerated outer loop moves v between epochs: its inner epochs are sequential
    X, y = sparse_problem(m=300, d=40, density=0.3, seed=9)
    acc = fit(X, y, "logistic", alpha=1e-3, blocks=2, accelerated=True, tol=1e-8)
    seq = fit(X, y, "logistic", alpha=1e-3, blocks=1, n_threads=1, tol=1e-8)
    assert acc.status == seq.status == "converged"
    assert acc.extra["outer_iterations"] >= 1
    # both certified to 1e-8 J
    assert abs(acc.objective - seq.objective) <= 2e-8 * seq.objective
