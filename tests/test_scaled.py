"""The lazily scaled weight vector of csrc/fr_scaled.h (docs/math.md §5) against a plain NumPy vector.

A long random sequence of shrinks, sparse adds, projections and averaging
records is applied both to the scaled representation (through the test
wrapper ``fastrisk._pegasos.scaled_ops``) and to an explicit NumPy vector.
Tolerance 1e-12 relative: every operation is a handful of float64 flops, so
after a few thousand operations the two agree to ~1e-14; the shrink factors
are chosen so that the scale leaves [1e-9, 1e9] many times (folding).
"""

import numpy as np
import pytest
import scipy.sparse as sp

from fastrisk import _pegasos

D = 50


def run_both(seed, n_ops, bias):
    rng = np.random.default_rng(seed)
    X = sp.random(40, D - (bias != 0), density=0.2, format="csr", random_state=seed)
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    Xa = np.hstack([X.toarray(), np.full((40, 1), bias)]) if bias else X.toarray()
    v = rng.standard_normal(D)
    w = v.copy()
    ops = rng.choice([0, 1, 1, 1, 2, 4], size=n_ops).astype(np.int64)
    ops[n_ops // 3] = 3                   # averaging starts a third of the way in
    ops[: n_ops // 3][ops[: n_ops // 3] == 4] = 1
    big = rng.random(n_ops) < 0.05        # huge shrink factors, each followed by a projection
    big[-1] = False
    ops[big] = 0
    ops[np.flatnonzero(big) + 1] = 2
    args = np.empty(n_ops)
    rows = rng.integers(0, 40, size=n_ops).astype(np.int64)
    acc, count, peak = np.zeros(D), 0, 0.0
    for k, op in enumerate(ops):
        if op == 0:
            # tiny factors (the scale underflows and folds every few shrinks) and
            # huge ones (it overflows); O(1) adds and projections keep ||w|| moderate
            args[k] = (1e5 if big[k] else rng.choice([1e-3, 1e-4, 0.5])) * rng.uniform(0.9, 1.1)
            w *= args[k]
        elif op == 1:
            args[k] = rng.standard_normal()
            w += args[k] * Xa[rows[k]]
        elif op == 2:
            args[k] = rng.uniform(0.5, 3.0)
            w *= min(1.0, args[k] / np.linalg.norm(w))
        elif op in (3, 4):
            acc += w
            count += 1
            peak = max(peak, np.abs(w).max())
    vv, uu = v.copy(), np.zeros(D)
    scale, sqnorm, avg, folds = _pegasos.scaled_ops(X.data, X.indices, X.indptr, ops, args,
                                                     rows, bias, vv, uu)
    return w, scale * vv, scale**2 * sqnorm, acc / count, avg, folds, peak


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("bias", [0.0, 1.5])
def test_scaled_vector_matches_numpy(seed, bias):
    w, w_scaled, sqnorm, avg_ref, avg, folds, peak = run_both(seed, 3000, bias)
    assert folds > 20, "the sequence must exercise folding"
    np.testing.assert_allclose(w_scaled, w, rtol=0, atol=1e-12 * np.abs(w).max())
    assert sqnorm == pytest.approx(w @ w, rel=1e-12)
    # the average is a sum of ~2000 iterates with cancelling signs: its rounding
    # error scales with the summands (peak |w_t|), in NumPy's sum as in ours
    np.testing.assert_allclose(avg, avg_ref, rtol=0, atol=1e-12 * peak)


def test_shrink_to_zero_resets_vector():
    """A zero factor (Pegasos' first step, eta_1 lambda = 1) gives exactly w = 0."""
    X = sp.csr_matrix(np.eye(3), dtype=np.float64)
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    v = np.array([1.0, 2.0, 3.0])
    ops = np.array([0, 1], dtype=np.int64)
    scale, sqnorm, avg, _ = _pegasos.scaled_ops(X.data, X.indices, X.indptr, ops,
                                                np.array([0.0, 2.0]), np.array([0, 1]),
                                                0.0, v, np.zeros(3))
    np.testing.assert_array_equal(scale * v, [0.0, 2.0, 0.0])
    assert sqnorm * scale**2 == 4.0
