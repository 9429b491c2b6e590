"""Data-scaled steps of pegasos, rda and pgs for losses with an unbounded derivative
(fastrisk/solvers/_steps.py, docs/math.md §5-§6).

The offset L = max_i c_i l''_i ||x_i||^2 is checked against a NumPy computation from
the losses' NumPy references, the solvers' iterates with it against the plain NumPy
algorithms of tests/reference, and the estimators' online regression against
scikit-learn's SGDRegressor and the least-squares optimum.
"""

import warnings

import numpy as np
import pytest
from reference.pegasos import pegasos_steps
from reference.pgs import pgs_steps
from reference.rda import pnorm_rda, rda
from reference.stochastic import dense_with_bias, dloss
from scipy.optimize import minimize_scalar
from sklearn.linear_model import SGDRegressor
from sklearn.metrics import mean_poisson_deviance, r2_score

import fastrisk as fr
from fastrisk.losses import LOSSES, SCALAR_LOSSES
from fastrisk.solvers.pegasos import ball_radius, solve_pegasos
from fastrisk.solvers.pgs import solve_pgs
from fastrisk.solvers.rda import solve_rda
from fastrisk.solvers._steps import curvature_offset

SOLVERS = ["pegasos", "rda", "pgs"]


def regression_data(scale=1.0, m=3000, d=10, seed=0):
    """A linear model with Gaussian noise (R^2 of the truth about 0.98); ``scale``
    multiplies X and y (an unstandardized problem with the same R^2)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    y = X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(m)
    return X * scale, y * scale


def chunks(m, n_chunks=10):
    return np.array_split(np.arange(m), n_chunks)


def numpy_offset(problem):
    """L from the NumPy reference: sup l'' (the registry's bound) or, without one, the
    larger central difference of l' at f = 0 and at the best constant score."""
    Xb = dense_with_bias(problem)
    c = np.ones(problem.n_samples) if problem.sample_weight is None else problem.sample_weight
    sq = c * np.einsum("ij,ij->i", Xb, Xb)
    if problem.loss.curvature is not None:
        return problem.loss.curvature * sq.max()
    ref = problem.loss.spec.reference
    y = problem.y

    def second(f, h=1e-5):
        return (ref(f + h, y, None)[1] - ref(f - h, y, None)[1]) / (2 * h)

    f_bar = minimize_scalar(lambda f: c @ ref(np.full_like(y, f), y, None)[0],
                            bounds=(-30, 30), method="bounded",
                            options={"xatol": 1e-10}).x  # the best constant score
    return float((np.maximum(second(np.zeros_like(y)), second(np.full_like(y, f_bar))) * sq)
                 .max())


@pytest.mark.parametrize("loss", SCALAR_LOSSES)
def test_offset_only_for_unbounded_derivatives(loss):
    """L = 0 exactly for the Lipschitz losses (the papers' steps run unchanged), else
    the NumPy value to 1e-4 (the central differences and the grid's resolution)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 4)) * 3
    spec = LOSSES[loss]
    y = {"binary": np.where(rng.random(30) < 0.3, -1.0, 1.0), "novelty": np.ones(30),
         "counts": rng.poisson(4.0, 30).astype(float)}.get(spec.task, rng.standard_normal(30))
    c = rng.random(30) + 0.5
    problem = fr.Problem(X, y, loss=loss, alpha=0.01, sample_weight=c)
    if spec.lipschitz is not None:
        assert curvature_offset(problem) == 0.0
    else:
        assert curvature_offset(problem) == pytest.approx(numpy_offset(problem), rel=1e-4)


def small_regression(seed=0, m=60, d=6):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d)) * 4.0
    return X, X @ rng.standard_normal(d) + 10.0 + rng.standard_normal(m)


def test_pegasos_step_with_offset_matches_numpy():
    """Squared loss, small alpha: every iterate is the NumPy Pegasos's with
    eta_t = 1/(alpha t + L), to 1e-10 relative (rounding of 120 steps)."""
    X, y = small_regression()
    problem = fr.Problem(X, y, loss="squared", alpha=1e-3)
    L = numpy_offset(problem)
    order = np.tile(np.arange(60), 2)
    w_ref, _, _, _ = pegasos_steps(dense_with_bias(problem), y, order, lam=1e-3,
                                   rule="pegasos", radius=ball_radius(problem),
                                   dloss=dloss("squared"), offset=L)
    result = solve_pegasos(problem, max_iter=2, shuffle=False, average="last", tol=0)
    np.testing.assert_allclose(result.w, w_ref, rtol=1e-10, atol=1e-10 * np.abs(w_ref).max())
    assert result.extra["state"].offset == pytest.approx(L, rel=1e-12)


@pytest.mark.parametrize("p", [2.0, 1.5])
def test_pgs_step_with_offset_matches_numpy(p):
    """PGS's map w_t = grad r*(theta / ((t+1) alpha + L)) against the NumPy PGS, 1e-9
    relative (p < 2 goes through the kernel's table-driven power)."""
    X, y = small_regression(1)
    problem = fr.Problem(X, y, loss="squared", penalty="lp" if p < 2 else "l2", p=p,
                         alpha=1e-3)
    L = numpy_offset(problem)
    ref = pgs_steps(dense_with_bias(problem), y, np.arange(60), sigma=1e-3, p=p,
                    dloss=dloss("squared"), offset=L)[-1]
    result = solve_pgs(problem, max_iter=1, shuffle=False, tol=0)
    np.testing.assert_allclose(result.w, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())


def _value_and_derivative(name):
    ref = LOSSES[name].reference
    return lambda f, y: ref(f, y, None)


@pytest.mark.parametrize("penalty", ["l2", "l1", "elasticnet"])
def test_rda_with_offset_matches_numpy(penalty):
    """RDA with beta_t = gamma sqrt(t) + L (Xiao 2010, Alg. 1) against the dense NumPy
    algorithm, 1e-9 relative."""
    X, y = small_regression(2)
    problem = fr.Problem(X, y, loss="squared", penalty=penalty, alpha=1e-3)
    lam, sigma = {"l2": (0.0, 1e-3), "l1": (1e-3, 0.0),
                  "elasticnet": (1e-3 * 0.15, 1e-3 * 0.85)}[penalty]
    gamma = 0.0 if penalty == "l2" else 0.5
    L = numpy_offset(problem)
    ref = rda(dense_with_bias(problem), y, np.ones(60), np.arange(60), 1,
              _value_and_derivative("squared"), lam, sigma, gamma, 0.1, beta=L)
    result = solve_rda(problem, max_iter=1, shuffle=False, gamma=gamma, rho=0.1, tol=0)
    np.testing.assert_allclose(result.w, ref["w"], rtol=1e-9,
                               atol=1e-9 * np.abs(ref["w"]).max())
    np.testing.assert_allclose(result.extra["w_bar"], ref["w_bar"], rtol=1e-9,
                               atol=1e-9 * np.abs(ref["w_bar"]).max())
    assert result.extra["beta"] == pytest.approx(L, rel=1e-12)


@pytest.mark.parametrize("p_norm", [1.5, 1.4])   # q = 3 (power-sum kernel), q = 3.5
def test_pnorm_rda_with_offset_matches_numpy(p_norm):
    X, y = small_regression(3)
    problem = fr.Problem(X, y, loss="squared", penalty="l1", alpha=1e-3)
    L = numpy_offset(problem)
    ref = pnorm_rda(dense_with_bias(problem), y, np.ones(60), np.arange(60), 1,
                    _value_and_derivative("squared"), 1e-3, 0.5, 0.1, p_norm, beta=L)
    result = solve_rda(problem, max_iter=1, shuffle=False, gamma=0.5, rho=0.1, p_norm=p_norm,
                       tol=0)
    np.testing.assert_allclose(result.w, ref["w"], rtol=1e-9,
                               atol=1e-9 * np.abs(ref["w"]).max())


@pytest.mark.parametrize("solver", SOLVERS)
def test_stream_offset_is_the_largest_so_far(solver):
    """A later chunk with larger rows raises L (the schedule stays nondecreasing); a
    chunk with smaller rows keeps it."""
    X, y = regression_data()
    est = fr.LinearRegressor(solver=solver)
    offsets = []
    for scale in (1.0, 3.0, 0.5):
        est.partial_fit(X[:500] * scale, y[:500])
        state = est._results[0].extra["state"]
        offsets.append(state["beta"] if solver == "rda" else state.offset)
    first = curvature_offset(fr.Problem(X[:500], y[:500], loss="squared", alpha=1e-4,
                                        fit_intercept=True))
    assert offsets == pytest.approx([first, 9.0 * first - 8.0, 9.0 * first - 8.0], rel=1e-9)


def sgd_partial_fit_r2(X, y, parts):
    sgd = SGDRegressor(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # it may overflow on unstandardized data
        for part in parts:
            sgd.partial_fit(X[part], y[part])
        pred = sgd.predict(X)
    return r2_score(y, pred) if np.isfinite(pred).all() else -np.inf


def partial_fit_r2(solver, X, y, parts, **params):
    est = fr.LinearRegressor(solver=solver, random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no divergence warning, no overflow
        for part in parts:
            est.partial_fit(X[part], y[part])
    return r2_score(y, est.predict(X))


@pytest.mark.parametrize("solver", SOLVERS)
def test_partial_fit_abalone_matches_sgdregressor(solver, libsvm):
    """One pass over abalone (raw targets, mean 9.9) in 10 chunks with the defaults:
    R^2 at least SGDRegressor's (defaults, same chunks) minus 0.02, no warning."""
    X, y = libsvm("abalone")
    parts = chunks(X.shape[0])
    assert partial_fit_r2(solver, X, y, parts) >= sgd_partial_fit_r2(X, y, parts) - 0.02


@pytest.mark.parametrize("solver", SOLVERS)
def test_fit_abalone_reaches_least_squares(solver, libsvm):
    """fit() with the defaults and as many epochs as SGDRegressor's default fit takes:
    R^2 within 0.02 of least squares (the epochs stop short of the optimum: rda's
    1/sqrt(t) and pgs's 1/t rates), above SGDRegressor's, and no
    warning but the honest 'stopped on max_iter' one."""
    X, y = libsvm("abalone")
    sgd = SGDRegressor(random_state=0).fit(X, y)
    est = fr.LinearRegressor(solver=solver, random_state=0, max_iter=int(sgd.n_iter_))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    assert all("stopped on max_iter" in str(w.message) for w in caught)
    lstsq = np.linalg.lstsq(np.hstack([X.toarray(), np.ones((X.shape[0], 1))]), y, rcond=None)
    r2_ls = 1 - lstsq[1][0] / ((y - y.mean()) ** 2).sum()
    r2 = r2_score(y, est.predict(X))
    assert r2 >= r2_ls - 0.02 and r2 >= r2_score(y, sgd.predict(X))


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("scale", [1.0, 30.0])
def test_partial_fit_synthetic_reaches_least_squares(solver, scale):
    """Standardized (scale 1) and unstandardized (X and y times 30: SGDRegressor's
    defaults overflow there) data: one pass in 6 chunks reaches the least-squares R^2
    within 0.01 (the noise of a single pass at step about 1/L), no warning."""
    X, y = regression_data(scale)
    parts = chunks(X.shape[0], 6)
    w_ls = np.linalg.lstsq(np.hstack([X, np.ones((len(y), 1))]), y, rcond=None)[0]
    r2_ls = r2_score(y, X @ w_ls[:-1] + w_ls[-1])
    assert partial_fit_r2(solver, X, y, parts) >= r2_ls - 0.01


@pytest.mark.parametrize("solver", ["rda", "pgs"])
def test_poisson_partial_fit_abalone(solver, libsvm):
    """The Poisson loss (no global curvature bound; ring counts as targets): one pass in
    10 chunks without overflow or warning, mean Poisson deviance at most 0.7 (between the
    best constant's and that of scikit-learn's PoissonRegressor at the optimum)."""
    X, y = libsvm("abalone")
    est = fr.LinearRegressor(loss="poisson", solver=solver, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for part in chunks(X.shape[0]):
            est.partial_fit(X[part], y[part])
    assert mean_poisson_deviance(y, est.predict(X)) <= 0.7
