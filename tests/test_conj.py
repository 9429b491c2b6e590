"""The conjugate maps of csrc/fr_conj.h against closed forms where they have one (the soft
threshold, the elastic-net link) and otherwise against the argmin they claim to solve
(scipy.optimize).

Small random vectors; against a closed form the tolerance is rounding, against a numerical
minimization that of the optimizer (stated per test), while identities that hold exactly
are checked to a few ulps.
"""

import numpy as np
import pytest
from scipy.optimize import minimize

from fastrisk import _conj

P_VALUES = [1.1, 1.25, 1.5, 1.8, 2.0]


def dual(r):
    return r / (r - 1.0)


def soft_threshold(v, t):
    """sgn(v) max(|v| - t, 0) = argmin_w t ||w||_1 + 0.5 ||w - v||^2 (coordinate-wise)."""
    return np.sign(v) * np.maximum(np.abs(v) - t, 0.0)


@pytest.mark.parametrize("seed", range(3))
def test_shrink_is_the_l1_prox(seed):
    # shrink(v, t, scale) = scale S_t(v), against the closed form on random entries and on
    # those at the threshold and at 0; rounding only (a product for a product): 1e-14
    # relative, zeros exact; the returned squared norm is ||out||^2 to a few ulps.
    rng = np.random.default_rng(seed)
    t, scale = 0.6, 1.0 / 1.3
    v = np.r_[rng.normal(size=7), t, -t, 0.0]
    out = np.empty(v.size)
    sq = _conj.shrink(v, t, scale, out)
    expected = scale * soft_threshold(v, t)
    np.testing.assert_allclose(out, expected, rtol=1e-14, atol=0.0)
    np.testing.assert_array_equal(out == 0.0, expected == 0.0)
    assert sq == pytest.approx(np.dot(out, out), rel=1e-15)
    assert (out[np.abs(v) <= t] == 0).all()


@pytest.mark.parametrize("seed", range(3))
def test_elastic_net_link_is_the_conjugate_argmax(seed):
    # grad r*(u) = argmax <u, w> - (l1 ||w||_1 + (1 - l1)/2 ||w||^2) = S_l1(u) / (1 - l1)
    # (the coordinate-wise optimality condition u_i - (1 - l1) w_i in l1 d|w_i|); against
    # that closed form, rounding only: 1e-14 relative, zeros exact.
    rng = np.random.default_rng(seed)
    l1 = 0.4
    u = np.r_[1.5 * rng.normal(size=6), l1, -l1, 0.0]
    out = np.empty(u.size)
    _conj.shrink(u, l1, 1.0 / (1.0 - l1), out)
    expected = soft_threshold(u, l1) / (1.0 - l1)
    np.testing.assert_allclose(out, expected, rtol=1e-14, atol=0.0)
    np.testing.assert_array_equal(out == 0.0, expected == 0.0)


@pytest.mark.parametrize("r", [1.1, 1.5, 2.0, 3.0, 8.0])
def test_lp_link_is_the_conjugate_argmax(r):
    # grad(||u||_r^2 / 2) = argmax_w <u, w> - ||w||_{r'}^2 / 2 (conjugate pair of norms
    # squared); smooth for r' > 1, BFGS with gtol 1e-10 gives ~1e-6 on the argmax.
    rng = np.random.default_rng(int(r * 10))
    u = rng.normal(size=5)
    rp = dual(r)
    res = minimize(lambda w: 0.5 * np.linalg.norm(w, rp) ** 2 - u @ w, np.zeros(5) + 0.1,
                   method="BFGS", options={"gtol": 1e-10})
    out = np.empty(5)
    N = _conj.lp_link(u, r, out)
    np.testing.assert_allclose(out, res.x, atol=2e-6)
    # returned norm and the duality of norms: ||link(u)||_{r'} = ||u||_r; exact up to rounding
    assert N == pytest.approx(np.linalg.norm(u, r), rel=1e-14)
    assert np.linalg.norm(out, rp) == pytest.approx(N, rel=1e-13)


@pytest.mark.parametrize("r", [1.1, 1.5, 2.0, 4.0])
def test_lp_link_inverse_round_trip(r):
    # inverse(link(u)) = u: a composition of closed forms, ~1e-13 relative in double.
    u = np.random.default_rng(1).normal(size=9)
    w, back = np.empty(9), np.empty(9)
    _conj.lp_link(u, r, w)
    N = _conj.lp_link_inverse(w, r, back)
    np.testing.assert_allclose(back, u, rtol=1e-12, atol=1e-14)
    assert N == pytest.approx(np.linalg.norm(u, r), rel=1e-13)


@pytest.mark.parametrize("p", P_VALUES)
def test_pgs_link_norm_identity(p):
    # docs/math.md §5: ||grad r*(u)||_p = ||u||_q / (q - 1) for r = ||w||_p^2 / (2(p-1)).
    q = dual(p)
    u = np.random.default_rng(2).normal(size=50) * 3
    out = np.empty(50)
    _conj.lp_link(u, q, out)
    grad = out / (q - 1)
    assert np.linalg.norm(grad, p) == pytest.approx(np.linalg.norm(u, q) / (q - 1), rel=1e-13)


@pytest.mark.parametrize("scale", [1e-200, 1.0, 1e200])
@pytest.mark.parametrize("r", [1.0, 1.3, 2.0, 7.0])
def test_norm_no_overflow(scale, r):
    # ||s u||_r = s ||u||_r; the naive sum of |u_i|^r would over/underflow at these scales.
    u = np.random.default_rng(3).normal(size=11)
    expect = scale * np.linalg.norm(u, r)
    assert _conj.norm(u * scale, r) == pytest.approx(expect, rel=1e-13)
    out = np.empty(11)
    _conj.lp_link(u * scale, max(r, 1.3), out)
    assert np.isfinite(out).all()
    assert np.linalg.norm(out / scale, dual(max(r, 1.3))) == pytest.approx(
        np.linalg.norm(u, max(r, 1.3)), rel=1e-12)


@pytest.mark.parametrize("p", [1.05, 1.3, 1.7, 2.0])
@pytest.mark.parametrize("lam", [0.0, 0.3, 50.0])
def test_lp_prox_coords_solve_their_equation(p, lam):
    # x + lam x^{p-1} = |a| per coordinate (closed-form residual): Newton stops at ~1e-15 relative.
    a = np.random.default_rng(4).normal(size=40) * np.logspace(-3, 3, 40)
    a[3] = 0.0
    out = np.empty(40)
    N = _conj.lp_prox_coords(a, lam, p, out)
    x = np.abs(out)
    np.testing.assert_allclose(x + lam * x ** (p - 1), np.abs(a), rtol=1e-13, atol=1e-300)
    assert (np.sign(out) == np.sign(a)).all()
    assert N == pytest.approx(np.linalg.norm(out, p), rel=1e-14)


def test_kernels_accept_read_only_and_check_lengths():
    u = np.arange(1.0, 5.0)
    u.flags.writeable = False
    out = np.empty(4)
    assert _conj.lp_link(u, 2.0, out) == pytest.approx(np.linalg.norm(u))
    np.testing.assert_array_equal(out, u)  # r = 2: the identity map
    with pytest.raises(ValueError, match="out has length 3"):
        _conj.shrink(u, 0.1, 1.0, np.empty(3))
    assert _conj.norm(np.empty(0), 1.5) == 0.0
