"""Regularizers (fastrisk/regularizers.py) against closed forms, finite differences and
scipy.optimize."""

import re

import numpy as np
import pytest
from scipy.optimize import minimize

from fastrisk.regularizers import (L1, L2, PENALTIES, ElasticNet, Lp, make_regularizer,
                                  soft_threshold)

SMOOTH = [L2(), ElasticNet(0.0), Lp(1.2), Lp(1.5), Lp(2.0)]


def IDS(r):
    return f"{r.name}-{getattr(r, 'l1_ratio', getattr(r, 'p', ''))}"


def test_values_closed_form():
    w = np.array([3.0, -4.0, 0.0])
    assert L2().value(w) == 12.5
    assert L1().value(w) == 7.0
    assert ElasticNet(0.3).value(w) == pytest.approx(0.3 * 7 + 0.35 * 25, rel=1e-15)
    assert Lp(2.0).value(w) == pytest.approx(12.5, rel=1e-15)
    p = 1.5
    assert Lp(p).value(w) == pytest.approx((3**p + 4**p) ** (2 / p) / (2 * (p - 1)), rel=1e-14)


@pytest.mark.parametrize("reg", SMOOTH + [ElasticNet(0.3), L1()], ids=IDS)
def test_subgradient_by_finite_differences(reg):
    # central differences with h = 1e-6 away from the kinks (all |w_i| >= 0.1): error ~1e-9.
    rng = np.random.default_rng(0)
    w = rng.choice([-1, 1], 6) * rng.uniform(0.1, 2, 6)
    h = 1e-6
    fd = np.array([(reg.value(w + h * e) - reg.value(w - h * e)) / (2 * h) for e in np.eye(6)])
    np.testing.assert_allclose(reg.subgradient(w), fd, rtol=1e-7, atol=1e-8)


def closed_form_prox(reg, v, t):
    """argmin_w t Omega(w) + 0.5 ||w - v||^2 in closed form, for Omega = 0.5 ||w||^2 (l2, lp
    at p = 2): v / (1 + t); ||w||_1: the soft threshold sgn(v) max(|v| - t, 0); the
    elastic net r ||w||_1 + (1 - r)/2 ||w||^2: the soft threshold at t r, shrunk by
    1 / (1 + t (1 - r)) (coordinate-wise optimality of the strongly convex sum)."""
    if isinstance(reg, (L2, Lp)):
        assert not isinstance(reg, Lp) or reg.p == 2.0
        return v / (1.0 + t)
    r = 1.0 if isinstance(reg, L1) else reg.l1_ratio
    return np.sign(v) * np.maximum(np.abs(v) - t * r, 0.0) / (1.0 + t * (1.0 - r))


CLOSED_FORM = [L2(), L1(), ElasticNet(0.0), ElasticNet(0.3), ElasticNet(1.0), Lp(2.0)]


@pytest.mark.parametrize("reg", CLOSED_FORM, ids=IDS)
@pytest.mark.parametrize("t", [0.0, 0.3, 2.5])
def test_prox_closed_form(reg, t):
    # Random entries and those on the thresholds (|v| = t r, where the prox is 0) and at 0;
    # the kernel and the closed form differ in rounding only (a product for a quotient):
    # 1e-14 relative, zeros exact.
    rng = np.random.default_rng(1)
    r = {L2: 0.0, L1: 1.0, Lp: 0.0}.get(type(reg), getattr(reg, "l1_ratio", 0.0))
    v = np.r_[rng.normal(size=9) * 1.5, t * r, -t * r, 0.0, 1e-300, -1e300]
    w = reg.prox(v, t)
    expected = closed_form_prox(reg, v, t)
    np.testing.assert_allclose(w, expected, rtol=1e-14, atol=0.0)
    np.testing.assert_array_equal(w == 0.0, expected == 0.0)


@pytest.mark.parametrize("reg", [Lp(1.2), Lp(1.5)], ids=IDS)
@pytest.mark.parametrize("t", [0.0, 0.3, 2.5])
def test_lp_prox_is_the_argmin(reg, t):
    # prox(v, t) = argmin t Omega(w) + 0.5||w - v||^2 (no closed form for p < 2).  The
    # objective at the prox must not be beaten by a scipy BFGS minimization by more than
    # 1e-10, and the points agree to the optimizer's 1e-5.
    rng = np.random.default_rng(1)
    v = rng.normal(size=5) * 1.5

    def obj(w):
        return t * reg.value(w) + 0.5 * np.sum((w - v) ** 2)

    ref = minimize(obj, v, method="BFGS", options={"gtol": 1e-11}).x
    w = reg.prox(v, t)
    assert obj(w) <= obj(ref) + 1e-10
    np.testing.assert_allclose(w, ref, atol=1e-5)


@pytest.mark.parametrize("p", [1.05, 1.3, 1.7])
def test_lp_prox_optimality_condition(p):
    # The exact first-order condition w + t grad Omega(w) = v, evaluated with NumPy formulas;
    # Brent's method stops at 1e-15 relative in N = ||w||_p, so the residual is ~1e-12.
    reg, t = Lp(p), 0.8
    v = np.random.default_rng(2).normal(size=30) * np.logspace(-2, 2, 30)
    w = reg.prox(v, t)
    N = np.linalg.norm(w, p)
    grad = N ** (2 - p) * np.abs(w) ** (p - 1) * np.sign(w) / (p - 1)
    np.testing.assert_allclose(w + t * grad, v, rtol=1e-9, atol=1e-9 * np.abs(v).max())


@pytest.mark.parametrize("reg", [L2(), ElasticNet(0.0), ElasticNet(0.3), Lp(1.2), Lp(1.5), Lp(2.0)],
                         ids=IDS)
def test_conjugate_fenchel_young_and_argmax(reg):
    # Fenchel-Young equality Omega(w) + Omega*(u) = <u, w> at w = conjugate_grad(u)
    # (exact up to rounding: 1e-12), and w is the argmax of <u, w> - Omega(w) (scipy, 1e-5).
    u = np.random.default_rng(3).normal(size=5) * 2
    w = reg.conjugate_grad(u)
    assert reg.value(w) + reg.conjugate(u) == pytest.approx(u @ w, rel=1e-12)
    x0 = np.full(5, 0.1)
    if isinstance(reg, ElasticNet):
        r = reg.l1_ratio
        res = minimize(lambda z: r * z.sum() + 0.5 * (1 - r) * np.sum((z[:5] - z[5:]) ** 2)
                       - u @ (z[:5] - z[5:]), np.full(10, 0.5), method="L-BFGS-B",
                       bounds=[(0, None)] * 10, options={"ftol": 1e-15, "gtol": 1e-12})
        ref = res.x[:5] - res.x[5:]
    else:
        ref = minimize(lambda x: reg.value(x) - u @ x, x0, method="BFGS", options={"gtol": 1e-11}).x
    np.testing.assert_allclose(w, ref, atol=1e-5)
    # Fenchel-Young inequality at any other point
    z = np.random.default_rng(4).normal(size=5)
    assert reg.value(z) + reg.conjugate(u) >= u @ z - 1e-12


# every registered penalty, at its default parameter and at another one
REGISTERED = [make_regularizer(name, **params) for name in PENALTIES
              for params in ({}, {"l1_ratio": 0.7, "p": 1.5})]


@pytest.mark.parametrize("reg", REGISTERED, ids=IDS)
@pytest.mark.parametrize("t", [0.3, 2.5])
def test_every_penalty_prox_is_the_argmin(reg, t):
    """phi(w) = t Omega(w) + 0.5 ||w - v||^2 is 1-strongly convex, so at its minimizer p,
    phi(p + e d) - phi(p) >= e^2 ||d||^2 / 2 for every step e d; a point that is not the
    minimizer has a descent direction, found here among the coordinate directions and
    random ones (the definition alone: no closed form, so a new penalty is checked as it
    is registered)."""
    rng = np.random.default_rng(5)
    v = rng.normal(size=6) * 1.5
    p = reg.prox(v, t)

    def phi(w):
        return t * reg.value(w) + 0.5 * float((w - v) @ (w - v))

    eps = 1e-4
    directions = np.vstack([np.eye(6), -np.eye(6), rng.normal(size=(20, 6))])
    for d in directions:
        assert phi(p + eps * d) - phi(p) >= 0.5 * eps**2 * float(d @ d) - 1e-12, d


@pytest.mark.parametrize("reg", REGISTERED, ids=IDS)
def test_every_penalty_conjugate_satisfies_fenchel_young(reg):
    """Omega(w) + Omega*(u) >= <u, w> for all w and u, with equality exactly when u is a
    subgradient of Omega at w: checked at u = subgradient(w) and at w = conjugate_grad(u)
    where the conjugate is smooth (its gradient is the w of equality)."""
    rng = np.random.default_rng(6)
    for _ in range(5):
        w, z = rng.normal(size=(2, 6)) * 1.5
        u = reg.subgradient(w)
        assert reg.value(w) + reg.conjugate(u) == pytest.approx(u @ w, rel=1e-12, abs=1e-12)
        assert reg.value(z) + reg.conjugate(u) >= u @ z - 1e-12
        if reg.smooth_conjugate:
            u = rng.normal(size=6) * 2
            x = reg.conjugate_grad(u)
            assert reg.value(x) + reg.conjugate(u) == pytest.approx(u @ x, rel=1e-12)
            assert reg.value(z) + reg.conjugate(u) >= u @ z - 1e-12


def test_l1_conjugate_is_an_indicator():
    assert L1().conjugate([0.5, -1.0]) == 0.0
    assert L1().conjugate([0.5, -1.01]) == np.inf
    assert ElasticNet(1.0).conjugate([2.0]) == np.inf
    with pytest.raises(ValueError, match="indicator"):
        L1().conjugate_grad([0.1])


def test_soft_threshold_closed_form_and_no_mutation():
    v = np.array([-3.0, -0.5, 0.0, 0.5, 3.0])
    v.flags.writeable = False
    np.testing.assert_array_equal(soft_threshold(v, 1.0), [-2.0, 0.0, 0.0, 0.0, 2.0])
    np.testing.assert_array_equal(v, [-3.0, -0.5, 0.0, 0.5, 3.0])


def test_bad_arguments():
    with pytest.raises(ValueError, match="penalty"):
        make_regularizer("l3")
    with pytest.raises(ValueError, match="l1_ratio"):
        ElasticNet(1.5)
    with pytest.raises(ValueError, match="p must be"):
        Lp(1.0)
    with pytest.raises(ValueError, match="p must be"):
        Lp(2.5)
    with pytest.raises(ValueError, match="t must be"):
        L2().prox([1.0], -1.0)
    with pytest.raises(ValueError, match="t must be"):
        Lp(1.5).prox([1.0], np.nan)
    with pytest.raises(ValueError, match="w must be 1-dimensional"):
        L1().value(np.ones((2, 2)))


@pytest.mark.parametrize("make,message", [
    (lambda: make_regularizer("l3"), re.escape(f"penalty must be one of {tuple(PENALTIES)}, "
                                               f"got 'l3'")),
    (lambda: ElasticNet(True), r"l1_ratio must be a finite number >= 0 and <= 1, got True"),
    (lambda: ElasticNet(1.5), r"l1_ratio must be a finite number >= 0 and <= 1, got 1.5"),
    (lambda: Lp("1.5"), r"p must be a finite number > 1 and <= 2, got '1.5'"),
    (lambda: Lp(1.0), r"p must be a finite number > 1 and <= 2, got 1.0"),
    (lambda: L2().prox([1.0], np.inf), r"t must be a finite number >= 0, got inf"),
])
def test_argument_messages(make, message):
    """The shared validators' messages (fastrisk/solvers/_checks.py): the argument, its
    range and the value received; bools and strings are not numbers."""
    with pytest.raises(ValueError, match=f"^{message}$"):
        make()


def test_lp_at_p_2_is_the_l2_penalty():
    """lp with p = 2 is 0.5 ||w||^2 (its value, here against NumPy): its split says so,
    so the solvers of the l2 penalty take it and give the l2 weights bit for bit."""
    import fastrisk as fr
    from fastrisk.regularizers import is_l2, norm_exponent

    w = np.random.default_rng(1).normal(size=7)
    reg = make_regularizer("lp", p=2.0)
    assert reg.value(w) == pytest.approx(0.5 * w @ w, rel=1e-14)
    assert is_l2(reg) and norm_exponent(reg) == 2.0 and not is_l2(make_regularizer("lp", p=1.5))
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 4))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    for solver in ("newton", "sdca", "pegasos"):
        runs = [fr.solve(fr.Problem(X, y, loss="logistic", penalty=pen, p=2.0, alpha=0.1),
                         solver, max_iter=5, random_state=0) for pen in ("lp", "l2")]
        assert np.array_equal(runs[0].w, runs[1].w), solver
