"""The scalar loss kernels (csrc/fr_loss.h) against the NumPy references of fastrisk/losses.py,
finite differences and the Fenchel-Young equality (docs/math.md §2)."""

import numpy as np
import pytest

from fastrisk import _oracle
from fastrisk.losses import LOSSES, SCALAR_LOSSES, Loss, vector_loss

PARAMS = {"quantile": 0.3, "epsilon_insensitive": 0.2, "huber": 0.7, "smoothed_hinge": 0.5}

# distance of (f, y) to the points where l' jumps (or, for squared_hinge, l'' jumps)
KINKS = {
    "hinge": lambda f, y, p: np.abs(y * f - 1),
    "squared_hinge": lambda f, y, p: np.abs(y * f - 1),
    "zero_margin": lambda f, y, p: np.abs(f),
    "squared_zero_margin": lambda f, y, p: np.abs(f),
    "novelty": lambda f, y, p: np.abs(f - 1),
    "absolute": lambda f, y, p: np.abs(f - y),
    "quantile": lambda f, y, p: np.abs(f - y),
    "epsilon_insensitive": lambda f, y, p: np.abs(np.abs(f - y) - p),
    "huber": lambda f, y, p: np.abs(np.abs(f - y) - p),
    "smoothed_hinge": lambda f, y, p: np.minimum(np.abs(y * f - 1), np.abs(y * f - 1 + p)),
}


def sample(name, n=400, seed=0):
    """(f, y) typical for the loss's task, with f spread over all the pieces of l."""
    rng = np.random.default_rng(seed)
    task = LOSSES[name].task
    f = rng.normal(0, 2, n)
    if task == "binary":
        y = rng.choice([-1.0, 1.0], n)
    elif task == "counts":
        y = rng.choice([0.0, 1.0, 2.0, 5.0], n)
        f = rng.normal(0, 1, n)
    elif task == "novelty":
        y = np.zeros(n)
    else:
        y = rng.normal(0, 2, n)
    return f, y


def test_registry_and_kernel_ids_agree():
    assert set(SCALAR_LOSSES) == set(_oracle.LOSS_IDS)
    assert sorted(_oracle.LOSS_IDS.values()) == list(range(len(SCALAR_LOSSES)))
    for name in SCALAR_LOSSES:
        assert LOSSES[name].kernel_id == _oracle.LOSS_IDS[name]
        assert LOSSES[name].reference is not None and LOSSES[name].conjugate_reference is not None
    with pytest.raises(ValueError, match="loss id"):
        _oracle.loss_values(99, 0.0, np.zeros(1), np.zeros(1))


@pytest.mark.parametrize("name", SCALAR_LOSSES)
def test_piecewise_quadratic_flag(name):
    # A loss flagged piecewise quadratic has a zero third difference wherever the stencil
    # [f - h, f + 2h] stays within one piece (away from the kinks); a smooth loss that is
    # not flagged has a nonzero one there.  Third differences of a quadratic vanish up to
    # rounding, about 1e-12 of the values here.
    loss = Loss(name, PARAMS.get(name))
    spec = LOSSES[name]
    if not spec.smooth:
        assert not spec.piecewise_quadratic
        return
    f, y = sample(name)
    h = 1e-2
    kink = KINKS.get(name, lambda f, y, p: np.full(f.shape, np.inf))
    away = (kink(f, y, loss.param) > 3 * h) & (kink(f + h, y, loss.param) > 3 * h)
    vals = [spec.reference(f + j * h, y, loss.param)[0] for j in (-1, 0, 1, 2)]
    third = (vals[3] - 3 * vals[2] + 3 * vals[1] - vals[0])[away]
    scale = np.abs(np.stack(vals)).max(axis=0)[away] + 1.0
    if spec.piecewise_quadratic:
        assert np.all(np.abs(third) <= 1e-12 * scale)
    else:
        assert np.max(np.abs(third)) > 1e-9


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", SCALAR_LOSSES)
def test_value_and_derivative_match_numpy_reference(name, dtype):
    # Same formula in another form (e.g. logaddexp vs log1p(exp(-|z|))): 1e-13 relative.
    # float32 scores are widened to double exactly, so the reference sees the same numbers.
    loss = Loss(name, PARAMS.get(name))
    f, y = sample(name)
    f = f.astype(dtype)
    value, deriv = loss.values(f, y)
    ref_value, ref_deriv = LOSSES[name].reference(f.astype(np.float64), y, loss.param)
    np.testing.assert_allclose(value, ref_value, rtol=1e-13, atol=1e-15)
    kink = KINKS.get(name, lambda f, y, p: np.full(f.shape, np.inf))(f, y, loss.param)
    away = kink > 1e-12  # at a kink the subgradient choice may differ
    np.testing.assert_allclose(deriv[away], ref_deriv[away], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", SCALAR_LOSSES)
def test_derivative_by_finite_differences(name):
    # Central differences, h = 1e-6, at points at least 1e-3 from a kink: the error is
    # O(h^2 l''') + O(eps |l| / h) ~ 1e-9 for these magnitudes, so 1e-6 absolute is safe.
    loss = Loss(name, PARAMS.get(name))
    f, y = sample(name, seed=1)
    keep = KINKS.get(name, lambda f, y, p: np.full(f.shape, np.inf))(f, y, loss.param) > 1e-3
    f, y = f[keep], y[keep]
    assert f.size > 200
    h = 1e-6
    _, deriv = loss.values(f, y)
    fd = (loss.values(f + h, y)[0] - loss.values(f - h, y)[0]) / (2 * h)
    np.testing.assert_allclose(deriv, fd, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", [n for n in SCALAR_LOSSES if LOSSES[n].conjugate_derivatives])
def test_conjugate_derivatives_by_finite_differences(name):
    """The registry's first and second derivatives of l* against central differences of
    the conjugate kernel and of the first derivative, at a = l'(f) at least 1e-3 inside
    the domain of l*: h = 1e-6, an error of O(h^2) + O(eps |l*| / h), below 1e-6 here."""
    loss = Loss(name, PARAMS.get(name))
    f, y = sample(name, n=4000, seed=4)
    a = loss.values(f, y)[1]
    inside = np.isfinite(loss.conjugate(a - 1e-3, y)) & np.isfinite(loss.conjugate(a + 1e-3, y))
    a, y = a[inside], y[inside]
    assert a.size > 100
    derivatives = LOSSES[name].conjugate_derivatives
    d1, d2 = derivatives(a, y, loss.param)
    h = 1e-6
    fd1 = (loss.conjugate(a + h, y) - loss.conjugate(a - h, y)) / (2 * h)
    np.testing.assert_allclose(d1, fd1, rtol=1e-6, atol=1e-6)
    up, down = (derivatives(a + s * h, y, loss.param)[0] for s in (1, -1))
    np.testing.assert_allclose(d2, (up - down) / (2 * h), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", SCALAR_LOSSES)
def test_conjugate_fenchel_young(name):
    # l(f) + l*(a) = a f exactly when a = l'(f) (rounding: 1e-12 of the magnitudes), and
    # l(f) + l*(a) >= a f for every a (checked on random a, f).
    loss = Loss(name, PARAMS.get(name))
    f, y = sample(name, seed=2)
    value, deriv = loss.values(f, y)
    conj = loss.conjugate(deriv, y)
    scale = 1 + np.abs(value) + np.abs(deriv * f)
    np.testing.assert_allclose((value + conj - deriv * f) / scale, 0.0, atol=1e-12)
    rng = np.random.default_rng(3)
    a = deriv + rng.normal(0, 0.5, f.size)
    other_f = rng.normal(0, 2, f.size) if name != "poisson" else rng.normal(0, 1, f.size)
    other_value, _ = loss.values(other_f, y)
    gap = other_value + loss.conjugate(a, y) - a * other_f
    assert (gap >= -1e-12 * (1 + np.abs(a * other_f))).all()


@pytest.mark.parametrize("name", SCALAR_LOSSES)
def test_conjugate_matches_reference_including_domain(name):
    # Kernel l*(a) equals the NumPy closed form, +inf outside the domain (same set).
    loss = Loss(name, PARAMS.get(name))
    _, y = sample(name, seed=4)
    a = np.random.default_rng(5).uniform(-2.5, 2.5, y.size)
    conj = loss.conjugate(a, y)
    ref = LOSSES[name].conjugate_reference(a, y, loss.param)
    np.testing.assert_array_equal(np.isinf(conj), np.isinf(ref))
    fin = np.isfinite(ref)
    assert fin.sum() > 50
    np.testing.assert_allclose(conj[fin], ref[fin], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", SCALAR_LOSSES)
def test_conjugate_is_the_sup_on_a_grid(name):
    """l*(a) = sup_f a f - l(f), written independently of the closed forms: a fine grid of
    f gets within 1e-4 (1 + |a|) of it from below.  The slopes a = l'(f0) of points f0 in
    [-3, 3] lie in the domain and the sup is attained at f0, inside the grid."""
    loss = Loss(name, PARAMS.get(name))
    task = LOSSES[name].task
    targets = {"binary": (-1.0, 1.0), "counts": (0.0, 2.0), "novelty": (0.0,)}.get(task,
                                                                                (0.7,))
    grid = np.linspace(-30, 30, 600_001) if task != "counts" else np.linspace(-30, 5, 350_001)
    for y_val in targets:
        f0 = np.linspace(-3.0, 3.0, 13) if task != "counts" else np.linspace(-2.0, 2.0, 9)
        _, slopes = loss.values(f0, np.full(f0.size, y_val))
        vals, _ = loss.values(grid, np.full(grid.size, y_val))
        conj = loss.conjugate(slopes, np.full(slopes.size, y_val))
        for a, c in zip(slopes, conj):
            sup = np.max(a * grid - vals)
            assert sup <= c + 1e-12 * (1 + abs(c)) and c - sup < 1e-4 * (1 + abs(a)), (a, y_val)


def test_logistic_is_stable_for_huge_scores():
    # log(1 + exp(-z)) = -z for z -> -inf, exp(-z) for z -> +inf; derivative in [-1, 0].
    loss = Loss("logistic")
    f = np.array([-1e4, -800.0, -40.0, 40.0, 800.0, 1e4])
    value, deriv = loss.values(f, np.ones(6))
    np.testing.assert_allclose(value[:2], [1e4, 800.0], rtol=1e-15)
    assert value[2] == pytest.approx(40.0 + np.exp(-40.0), rel=1e-15)
    assert value[3] == pytest.approx(np.exp(-40.0), rel=1e-14)
    assert (value[4:] >= 0).all() and (value[4:] < 1e-300).all()
    np.testing.assert_allclose(deriv, [-1, -1, -1 / (1 + np.exp(-40.0)), -np.exp(-40) / (1 + np.exp(-40)), 0, 0],
                               rtol=1e-14, atol=1e-300)


def test_exponential_overflow_is_reported_not_silenced():
    # exp(-y f) beyond ~709 is not representable: the kernel returns inf, the oracle raises
    # (see test_oracle.py); the value is never a silent NaN.
    value, deriv = Loss("exponential").values([-800.0], [1.0])
    assert value[0] == np.inf and deriv[0] == -np.inf


@pytest.mark.parametrize("name,bad", [("quantile", 1.0), ("huber", 0.0), ("epsilon_insensitive", -1.0),
                                      ("smoothed_hinge", np.nan), ("hinge", 0.5)])
def test_bad_loss_parameter(name, bad):
    with pytest.raises(ValueError, match="loss_param"):
        Loss(name, bad)


@pytest.mark.parametrize("name,bad,message", [
    ("quantile", 1.0, r"loss_param \(tau of loss 'quantile'\) must be a finite number > 0 and < 1, "
                      r"got 1.0"),
    ("huber", True, r"loss_param \(delta of loss 'huber'\) must be a finite number > 0, got True"),
    ("epsilon_insensitive", np.inf, r"loss_param \(epsilon of loss 'epsilon_insensitive'\) must "
                                    r"be a finite number >= 0, got inf"),
])
def test_loss_parameter_messages(name, bad, message):
    """The parameter's name, its interval and the value received (shared validators)."""
    with pytest.raises(ValueError, match=f"^{message}$"):
        Loss(name, bad)


def test_scaled_soft_margin_beta_message():
    F, y = np.zeros((2, 3)), np.array([0, 1])
    with pytest.raises(ValueError, match=r"^beta must be a finite number >= 0, got -1.0$"):
        vector_loss("scaled_soft_margin", F, y, beta=-1.0)


def test_unknown_loss():
    with pytest.raises(ValueError, match="loss must be one of"):
        Loss("hingee")
