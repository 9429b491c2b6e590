"""The capability records (losses, regularizers, solvers) agree with what the code does.

Each record is checked against behaviour, not against itself: the loss table against
the C kernel's list of ids, a regularizer's ``differentiable`` / ``l1_l2`` against
finite differences and its value, and every solver record against a short run on every
(loss, penalty) pair: a solver the record accepts must run, one it refuses must be
refused by ``fastrisk.solve`` with the record's reason.
"""

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

import fastrisk as fr
from fastrisk import _oracle
from fastrisk.losses import LOSSES
from fastrisk.regularizers import PENALTIES, make_regularizer, penalty_weights, scaled_weights
from fastrisk.solvers import SOLVERS, solvers_for
from fastrisk.solvers._info import SolverInfo
from reference import batch


def test_loss_table_matches_the_kernel_ids():
    """fastrisk.losses' scalar losses are exactly the kernel's (csrc/fr_loss.h's one list)."""
    scalar = {name: spec.kernel_id for name, spec in LOSSES.items() if not spec.vector}
    assert scalar == _oracle.LOSS_IDS
    assert sorted(_oracle.LOSS_IDS.values()) == list(range(len(_oracle.LOSS_IDS)))
    assert all(spec.kernel_id == -1 for spec in LOSSES.values() if spec.vector)


@pytest.mark.parametrize("name", [n for n, s in LOSSES.items() if not s.vector])
def test_lipschitz_and_curvature_bound_the_kernel_derivatives(name):
    """sup |l'| <= Loss.lipschitz and |l'(f+h) - l'(f)| <= curvature |h| on a grid of
    scores and labels (kernel derivatives; 1e-9 slack for rounding)."""
    loss = fr.Loss(name)
    f = np.linspace(-30, 30, 6001)
    y = {"binary": 1.0, "novelty": 0.0, "counts": 2.0}.get(loss.spec.task, 0.5)
    y = np.full_like(f, y)
    _, d = loss.values(f, y)
    if loss.lipschitz is not None:
        assert np.abs(d).max() <= loss.lipschitz + 1e-9
    else:
        assert np.abs(d).max() > 5.0           # unbounded: grows on this grid
    if loss.curvature is not None:
        slope = np.abs(np.diff(d)) / np.diff(f)
        assert slope.max() <= loss.curvature * (1 + 1e-6)


def test_huber_is_lipschitz_with_constant_delta():
    """The adaptive solver (Lipschitz losses only) takes the huber loss: three iterations
    report J(w) of their w (NumPy, 1e-12: rounding of the sums), which lies between J* from
    scipy (tests/reference/batch.py; 1e-12 J: its rounding) and J(0)."""
    assert fr.Loss("huber", 0.5).lipschitz == 0.5
    X, y = np.random.default_rng(0).normal(size=(40, 3)), np.linspace(-1, 1, 40)
    res = fr.solve(fr.Problem(X, y, loss="huber", alpha=0.1), solver="adaptive", max_iter=3,
                   random_state=0)
    J_w = batch.smooth_loss("huber", X @ res.w, y, param=1.0)[0] + 0.05 * res.w @ res.w
    assert res.objective == pytest.approx(J_w, rel=1e-12)
    J_star = batch.l2_smooth_optimum(X, y, "huber", 0.1, param=1.0)
    J_0 = batch.smooth_loss("huber", np.zeros(40), y, param=1.0)[0]
    assert J_star - 1e-12 * J_star <= res.objective < J_0


def test_refusal_lists_the_accepted_losses():
    X, y = np.random.default_rng(0).normal(size=(40, 3)), np.linspace(-1, 1, 40)
    with pytest.raises(ValueError, match=r"Lipschitz .*huber.*got loss 'squared'"):
        fr.solve(fr.Problem(X, y, loss="squared", alpha=0.1), solver="adaptive")


@pytest.mark.parametrize("penalty", PENALTIES)
def test_regularizer_properties(penalty):
    """differentiable: the subgradient is the gradient (central differences, 1e-6);
    l1_l2: Omega(w) = a ||w||_1 + b/2 ||w||^2 exactly (1e-12)."""
    reg = make_regularizer(penalty, l1_ratio=0.3, p=1.5)
    w = np.random.default_rng(1).normal(size=6)
    if reg.differentiable:
        h, eye = 1e-6, np.eye(6)
        fd = np.array([(reg.value(w + h * e) - reg.value(w - h * e)) / (2 * h) for e in eye])
        np.testing.assert_allclose(reg.subgradient(w), fd, rtol=1e-6, atol=1e-8)
    else:   # an l1 term: the one-sided derivatives at 0 differ
        e = np.eye(6)[0]
        w0 = np.zeros(6)
        assert reg.value(w0 + 1e-3 * e) + reg.value(w0 - 1e-3 * e) > 1.5e-3 * reg.l1_l2()[0]
    split = reg.l1_l2()
    if split is None:
        assert not reg.separable
    else:
        a, b = split
        assert reg.value(w) == pytest.approx(a * np.abs(w).sum() + 0.5 * b * w @ w, rel=1e-12)
        assert reg.strongly_convex == (b > 0)


@pytest.mark.parametrize("penalty", PENALTIES)
def test_penalty_weight_forms(penalty):
    """penalty_weights and scaled_weights write alpha Omega(w) as lam1 ||w||_1 + lam2/2
    ||w||^2 and as lam (0.5 ||w||^2 + kappa ||w||_1) (1e-12), and are None exactly when
    the penalty has no such form (decided here by fitting the two terms to Omega's values
    at random points; for the scaled one, also when the fitted l2 weight is 0)."""
    alpha, w = 0.7, np.random.default_rng(3).normal(size=6)
    reg = make_regularizer(penalty, l1_ratio=0.3, p=1.5)
    target = alpha * reg.value(w)
    l1, sq = np.abs(w).sum(), w @ w
    points = np.random.default_rng(4).normal(size=(12, 6)) * np.geomspace(0.1, 10, 12)[:, None]
    terms = np.column_stack([np.abs(points).sum(axis=1), 0.5 * (points ** 2).sum(axis=1)])
    values = np.array([alpha * reg.value(v) for v in points])
    fit = np.linalg.lstsq(terms, values, rcond=None)[0]
    has_form = np.allclose(terms @ fit, values, rtol=1e-10, atol=1e-12)
    weights, scaled = penalty_weights(reg, alpha), scaled_weights(reg, alpha)
    assert (weights is not None) == has_form
    assert (scaled is not None) == (has_form and fit[1] > 1e-12 * abs(fit).max())
    if weights is not None:
        assert weights[0] * l1 + 0.5 * weights[1] * sq == pytest.approx(target, rel=1e-12)
    if scaled is not None:
        assert scaled[0] * (0.5 * sq + scaled[1] * l1) == pytest.approx(target, rel=1e-12)


@pytest.mark.parametrize("penalty", PENALTIES)
def test_regularizer_parameter_names_what_sets_its_value(penalty):
    """``parameter`` is the make_regularizer keyword that changes the penalty's value (the
    model files store it under that name); a penalty without one ignores both keywords."""
    w = np.random.default_rng(2).normal(size=6)
    reg = make_regularizer(penalty)
    if reg.parameter is None:
        assert make_regularizer(penalty, l1_ratio=0.3, p=1.5).value(w) == reg.value(w)
        return
    other = make_regularizer(penalty, **{reg.parameter: 0.3 if reg.parameter == "l1_ratio"
                                         else 1.5})
    assert getattr(other, reg.parameter) != getattr(reg, reg.parameter)
    assert other.value(w) != reg.value(w)


# the keywords every solver function takes (docs/extending.md): fastrisk.solve and the
# estimators pass them to any solver
COMMON_KEYWORDS = {"tol", "abs_tol", "max_iter", "time_limit", "callback", "verbose", "start",
                   "random_state"}


def test_every_solver_module_declares_itself():
    """Every record names its function, which takes the common keywords (keyword-only)."""
    assert len(SOLVERS) >= 12
    for name, info in SOLVERS.items():
        assert isinstance(info, SolverInfo) and info.name == name and callable(info.func)
        assert set(info.penalties()) <= set(PENALTIES) and info.penalties()
        keywords = {k for k, v in inspect.signature(info.func).parameters.items()
                    if v.kind is inspect.Parameter.KEYWORD_ONLY}
        assert COMMON_KEYWORDS <= keywords, (name, COMMON_KEYWORDS - keywords)


def _problem(loss, penalty):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 4))
    task = LOSSES[loss].task
    y = {"binary": np.where(X[:, 0] > 0, 1.0, -1.0), "multiclass": np.arange(30) % 3,
         "counts": rng.poisson(1.0, 30).astype(float)}.get(task, X[:, 0])
    return fr.Problem(X, y, loss=loss, penalty=penalty, alpha=0.1, l1_ratio=0.5, p=1.5)


@pytest.mark.parametrize("penalty", PENALTIES)
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_records_say_what_runs(loss, penalty):
    """Accepted by the record => two iterations run and return a finite objective;
    refused => fr.solve raises ValueError with the record's reason."""
    prob = _problem(loss, penalty)
    accepted = {info.name for info in solvers_for(prob)}
    for name, info in SOLVERS.items():
        if name in accepted:
            opts = {"random_state": 0} if info.epochs else {}
            res = fr.solve(prob, solver=name, max_iter=2, **opts)
            assert np.isfinite(res.objective) and res.w.shape == (prob.n_weights,)
        else:
            with pytest.raises(ValueError, match=f"solver {name!r}"):
                fr.solve(prob, solver=name, max_iter=2)
    assert fr.solvers.choose_solver(prob) in accepted


def test_model_does_not_import_the_estimators():
    """The dependency points one way (estimators -> model): no import of the estimators
    anywhere in model.py, at module level or inside a function."""
    tree = ast.parse(Path(fr.model.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for a in node.names}
    assert "fastrisk.estimators" not in imported


def test_verbose_reports_progress_on_stderr():
    """verbose=1 prints progress lines without any logging setup (BMRM with lp, whose
    iterations are slow, was silent)."""
    import subprocess
    import sys

    code = ("import numpy as np, fastrisk as fr\n"
            "X = np.random.default_rng(0).normal(size=(200, 5)); y = np.sign(X[:, 0] + 0.1)\n"
            "fr.solve(fr.Problem(X, y, loss='hinge', penalty='lp', p=1.5, alpha=1e-2),\n"
            "         solver='bmrm', max_iter=5, verbose=2)\n")
    env_root = str(Path(__file__).resolve().parent.parent)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=env_root,
                         env={**__import__("os").environ, "PYTHONPATH": env_root})
    assert out.stderr.count("bmrm it ") == 5
    # the progress lines go to the sys.stderr of the moment they are written, not to the
    # one of the first verbose run (a redirect, then closed, raised at every later line)
    code = ("import contextlib, io, sys, numpy as np, fastrisk as fr\n"
            "X = np.random.default_rng(0).normal(size=(200, 5)); y = np.sign(X[:, 0] + 0.1)\n"
            "p = fr.Problem(X, y, loss='hinge', alpha=1e-2)\n"
            "buf = io.StringIO()\n"
            "with contextlib.redirect_stderr(buf):\n"
            "    fr.solve(p, solver='bmrm', max_iter=3, verbose=2)\n"
            "buf.close()\n"
            "fr.solve(p, solver='bmrm', max_iter=4, verbose=2)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=env_root,
                         env={**__import__("os").environ, "PYTHONPATH": env_root})
    assert out.stderr.count("bmrm it ") == 4 and "Logging error" not in out.stderr


def test_pgs_overflow_says_what_works():
    """p near 1: the link map's exponent q - 1 is huge and theta overflows; the message
    names the solver that handles the problem (BMRM takes every lp)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 20)) * 10
    prob = fr.Problem(X, np.sign(X[:, 0]), loss="hinge", penalty="lp", p=1.0001, alpha=1e-4)
    with pytest.raises(FloatingPointError, match="'bmrm' takes penalty='lp'"):
        fr.solve(prob, solver="pgs", max_iter=50, random_state=0)
    assert np.isfinite(fr.solve(prob, solver="bmrm", max_iter=20).objective)


def test_callback_gets_a_copy_and_returns_a_bool():
    """Every solver that takes the problem: a callback that edits the weights it is given
    changes neither the run nor its Result (the bits of a run without it); numpy's False_
    stops the run like False; a return value other than None, True or False is refused."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=60) > 0, 1.0, -1.0)
    problem = fr.Problem(X, y, loss="logistic", alpha=0.01)

    def edit(result):
        result.w[:] = 7.0

    for info in fr.solvers.solvers_for(problem):
        plain = fr.solve(problem, info.name, max_iter=4, random_state=0)
        edited = fr.solve(problem, info.name, max_iter=4, random_state=0, callback=edit)
        assert np.array_equal(plain.w, edited.w) and plain.objective == edited.objective, \
            info.name
        stopped = fr.solve(problem, info.name, max_iter=50, tol=0.0, random_state=0,
                           callback=lambda r: np.False_)
        assert stopped.status == "callback" and stopped.n_iter <= 1, info.name
        with pytest.raises(TypeError, match="^callback must return None, True or False"):
            fr.solve(problem, info.name, max_iter=4, random_state=0, callback=lambda r: 0)


def test_callback_time_is_not_the_solvers(monkeypatch):
    """Every solver that takes the problem: the clock of History.seconds and time_limit
    stops while the callback runs (a clock that only the callback advances, by 100 s per
    call, leaves every recorded second at 0 and a time_limit of 50 s never reached), and
    History.callback_seconds holds the callback's time."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 5))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=60) > 0, 1.0, -1.0)
    problem = fr.Problem(X, y, loss="logistic", alpha=0.01)
    clock = [0.0]
    monkeypatch.setattr(fr.stopping.time, "perf_counter", lambda: clock[0])

    def slow(result):
        clock[0] += 100.0

    for info in fr.solvers.solvers_for(problem):
        clock[0] = 0.0
        res = fr.solve(problem, info.name, max_iter=5, tol=0.0, time_limit=50.0,
                       random_state=0, callback=slow)
        assert res.status in ("max_iter", "stalled"), (info.name, res.status)
        assert max(res.history.seconds) == 0.0, info.name
        assert clock[0] >= 100.0 * (res.n_iter - 1), info.name
        assert res.history.callback_seconds == clock[0], info.name


def test_time_limit_inf_means_no_limit():
    """Every solver that takes the problem: ``time_limit=math.inf`` runs like no time limit
    (the same bits as ``time_limit=None``), and a time limit that is not a number > 0 (0,
    -1, NaN, a bool, a string) is refused naming time_limit."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 5))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=60) > 0, 1.0, -1.0)
    problem = fr.Problem(X, y, loss="logistic", alpha=0.01)
    for info in fr.solvers.solvers_for(problem):
        plain = fr.solve(problem, info.name, max_iter=4, random_state=0)
        unlimited = fr.solve(problem, info.name, max_iter=4, random_state=0,
                             time_limit=np.float64(np.inf))
        assert np.array_equal(plain.w, unlimited.w) and plain.status == unlimited.status, \
            info.name
        for bad in (0, -1.0, float("nan"), -np.inf, True, "1"):
            with pytest.raises(ValueError, match="^time_limit must be a number > 0, or None"):
                fr.solve(problem, info.name, max_iter=4, random_state=0, time_limit=bad)
    auto = fr.solve(problem, tol=1e-6, time_limit=np.inf)
    assert auto.status == "converged"
