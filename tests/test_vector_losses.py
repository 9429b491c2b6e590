"""Vector losses (softmax, multiclass_hinge; docs/math.md §2) against per-row brute force and
finite differences, directly and through the multiclass oracle of Problem."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.special

import fastrisk as fr
from fastrisk.losses import vector_loss


def brute_force(name, F, y):
    """Row by row in Python floats: softmax by log-sum-exp with max shift, hinge by max over
    classes."""
    out = []
    for row, yi in zip(F.tolist(), y.tolist()):
        if name == "softmax":
            m = max(row)
            out.append(m + math.log(math.fsum(math.exp(v - m) for v in row)) - row[yi])
        else:
            out.append(max(v - row[yi] + (j != yi) for j, v in enumerate(row)))
    return np.array(out)


def untied_sample(n, k, seed):
    """Scores whose multiclass-hinge maximizer is unique by a margin of >= 1e-3."""
    rng = np.random.default_rng(seed)
    F, y = rng.normal(0, 2, (n, k)), rng.integers(0, k, n)
    aug = F - F[np.arange(n), y][:, None] + 1.0
    aug[np.arange(n), y] = 0.0
    top2 = np.sort(aug, axis=1)[:, -2:]
    keep = top2[:, 1] - top2[:, 0] > 1e-3
    return F[keep], y[keep]


@pytest.mark.parametrize("name", ["softmax", "multiclass_hinge"])
def test_values_match_brute_force(name):
    # Same quantity summed differently: 1e-13 relative.
    F, y = untied_sample(200, 5, 0)
    values, _ = vector_loss(name, F, y)
    np.testing.assert_allclose(values, brute_force(name, F, y), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("name", ["softmax", "multiclass_hinge"])
def test_gradient_by_finite_differences(name):
    # Central differences in every score, h = 1e-6, away from ties of the hinge maximizer
    # (margin 1e-3 > h): error ~1e-9 for softmax, exact for the piecewise linear hinge.
    F, y = untied_sample(40, 4, 1)
    _, G = vector_loss(name, F, y)
    h = 1e-6
    fd = np.empty_like(F)
    for j in range(F.shape[1]):
        E = np.zeros_like(F)
        E[:, j] = h
        fd[:, j] = (vector_loss(name, F + E, y)[0] - vector_loss(name, F - E, y)[0]) / (2 * h)
    np.testing.assert_allclose(G, fd, atol=1e-7)


def test_softmax_is_stable_for_huge_scores():
    """Scores far beyond exp's range: the loss by its closed form, the gradient as
    softmax(F) - e_y with scipy's softmax (max-shifted, so finite where exp(F) overflows):
    rows 0 and 1 are (1, 0, 0) - e_0 and (0, 1, 0) - e_0 in double (e^-1000 underflows);
    row 2, scores 1e5 + (1, 0, -2) (exact in double, and so are their differences), has the
    softmax of (1, 0, -2), to rounding (1e-14)."""
    F = np.array([[1000.0, 0.0, -1000.0], [-1e5, 1e5, 0.0], [1e5 + 1.0, 1e5, 1e5 - 2.0]])
    y = np.array([0, 0, 2])
    values, G = vector_loss("softmax", F, y)
    assert values[0] == pytest.approx(np.log1p(np.exp(-1000.0) + np.exp(-2000.0)), abs=1e-300)
    assert values[1] == pytest.approx(2e5, rel=1e-15)
    assert values[2] == pytest.approx(np.log(np.exp([3.0, 2.0, 0.0]).sum()), rel=1e-15)
    expected = scipy.special.softmax(F, axis=1) - np.eye(3)[y]
    np.testing.assert_array_equal(expected[:2], [[0.0, 0.0, 0.0], [-1.0, 1.0, 0.0]])
    np.testing.assert_allclose(G, expected, rtol=1e-14, atol=1e-300)


@pytest.mark.parametrize("top", [1e20, 1e300])
def test_softmax_keeps_the_log_term_beside_huge_scores(top):
    # Two classes tied at a score that dwarfs log 2 (and a third far below): the loss of
    # either tied class is exactly log 2 (closed form), which (M + log z) - s_y rounds to 0;
    # through NumPy and through the compiled multiclass oracle.
    F = np.array([[top, top, -top], [top, top, -top]])
    values, G = vector_loss("softmax", F, np.array([0, 1]))
    np.testing.assert_allclose(values, np.log(2.0), rtol=1e-15)
    np.testing.assert_allclose(G, [[-0.5, 0.5, 0.0], [0.5, -0.5, 0.0]], atol=1e-16)
    # scores W x for x = 1 and W = (top, top, -top): the risk is the mean loss, log 2
    prob = fr.Problem(np.ones((2, 1)), np.array([0, 1]), loss="softmax")
    prob_3 = fr.Problem(np.ones((3, 1)), np.array([0, 1, 2]), loss="softmax")
    assert prob.risk(np.array([top, top])) == pytest.approx(np.log(2.0), rel=1e-15)
    # rows of class 0, 1 (log 2 each) and 2 (2 top + log(1 + 2 exp(-2 top)) = 2 top)
    assert prob_3.risk(np.array([top, top, -top])) == pytest.approx(
        (2 * np.log(2.0) + 2 * top) / 3, rel=1e-15)


@pytest.mark.parametrize("name", ["softmax", "multiclass_hinge"])
@pytest.mark.parametrize("sparse", [False, True])
def test_multiclass_oracle_matches_brute_force(name, sparse):
    # R(W) = (1/m) sum c_i l(W x_i + b, y_i) in plain NumPy, gradient by finite differences
    # in each of the k (d + 1) weights (1e-6 step; hinge ties are avoided by the random draw).
    rng = np.random.default_rng(2)
    m, d, k = 30, 4, 3
    X = rng.normal(size=(m, d))
    X[rng.random((m, d)) < 0.3] = 0.0
    labels = np.array(["a", "b", "c"])[rng.integers(0, k, m)]
    c = rng.uniform(0.5, 2.0, m)
    prob = fr.Problem(sp.csr_matrix(X) if sparse else X, labels, loss=name, sample_weight=c,
                      fit_intercept=True, intercept_scaling=2.0, n_partitions=2)
    assert prob.n_weights == k * (d + 1) and list(prob.classes_) == ["a", "b", "c"]
    yi = np.searchsorted(["a", "b", "c"], labels)

    def risk(w):
        W = w.reshape(k, d + 1)
        F = X @ W[:, :d].T + 2.0 * W[:, d]
        return np.sum(c * brute_force(name, F, yi)) / m

    w = rng.normal(size=prob.n_weights)
    value, grad = prob.oracle(w)
    assert value == pytest.approx(risk(w), rel=1e-13)
    h = 1e-6
    fd = np.array([(risk(w + h * e) - risk(w - h * e)) / (2 * h) for e in np.eye(w.size)])
    np.testing.assert_allclose(grad, fd, atol=1e-7)
