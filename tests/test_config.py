"""Build facts read from the compiled extensions, and the n_threads convention."""

import warnings
from pathlib import Path

import numpy as np
import pytest

import fastrisk as fr
from fastrisk import _buildinfo, _oracle, _sdca, config


def test_build_facts_come_from_the_compiler():
    assert config.OPENMP == _buildinfo.OPENMP == (_buildinfo.OPENMP_VERSION > 0)
    assert ("-fopenmp" in _buildinfo.CFLAGS.split()) == _buildinfo.OPENMP
    assert _buildinfo.COMPILER != "unknown" and _buildinfo.COMPILER_VERSION != "unknown"


def test_team_size_is_what_the_parallel_region_runs():
    assert _buildinfo.team_size(1) == 1
    assert _buildinfo.team_size(2) == (2 if config.OPENMP else 1)
    with pytest.raises(ValueError, match="n_threads"):
        _buildinfo.team_size(0)


@pytest.mark.parametrize("module", [_oracle, _sdca])
def test_kernels_call_the_openmp_runtime_iff_openmp_is_on(module):
    # the parallel kernels are compiled with the same flags as _buildinfo: their shared
    # object references the OpenMP runtime's entry points (GNU or LLVM) exactly when it is on
    binary = Path(module.__file__).read_bytes()
    assert (b"GOMP_parallel" in binary or b"__kmpc_fork_call" in binary) == config.OPENMP


@pytest.fixture
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(config, "_WARNED", set())


def _resolve_recording(n_threads):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        n = config.resolve_n_threads(n_threads)
    return n, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def test_more_threads_than_cores_are_kept_with_one_warning(fresh_warnings, monkeypatch):
    monkeypatch.setattr(config, "OPENMP", True)
    monkeypatch.setattr(config, "n_cores", lambda: 3)
    assert _resolve_recording(3) == (3, [])
    n, messages = _resolve_recording(1000)
    assert n == 1000 and len(messages) == 1 and "n_threads=1000" in messages[0]
    assert "3 cores" in messages[0]
    assert _resolve_recording(1000) == (1000, [])  # once per process
    assert _resolve_recording(None) == (3, [])


def test_serial_build_runs_one_thread_and_says_so_once(fresh_warnings, monkeypatch):
    monkeypatch.setattr(config, "OPENMP", False)
    assert _resolve_recording(1) == (1, [])
    assert _resolve_recording(None) == (1, [])  # "all cores" asks for nothing specific
    n, messages = _resolve_recording(2)
    assert n == 1 and len(messages) == 1 and "no OpenMP" in messages[0]
    assert _resolve_recording(4) == (1, [])


def test_more_threads_than_cores_give_the_bits_of_that_thread_count(fresh_warnings,
                                                                    monkeypatch):
    """A thread count above the cores is kept, not lowered to them: a run with n threads
    is reproduced bit for bit on a machine with fewer cores.  The machine is made to
    have 1 core; 2 threads must give the 2-thread bits (the oracle's two row blocks summed
    in block order), which differ from the 1-thread sum."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 30))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    w = rng.normal(size=30)
    two = fr.Problem(X, y, loss="logistic", n_threads=2)
    assert two.oracle.n_threads == 2
    risk2, grad2 = two.oracle(w)
    monkeypatch.setattr(config, "n_cores", lambda: 1)
    with pytest.warns(RuntimeWarning, match="more than the 1 cores"):
        again = fr.Problem(X, y, loss="logistic", n_threads=2)
    assert again.oracle.n_threads == 2
    risk, grad = again.oracle(w)
    assert risk == risk2 and np.array_equal(grad, grad2)
    one_risk, one_grad = fr.Problem(X, y, loss="logistic", n_threads=1).oracle(w)
    assert not (one_risk == risk and np.array_equal(one_grad, grad))  # the test can fail


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", config.MAX_THREADS + 1, 2**64])
def test_bad_n_threads_is_an_error_naming_it(bad):
    with pytest.raises(ValueError, match="n_threads"):
        config.resolve_n_threads(bad)


def _problems_for_threads():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 5))
    y2 = np.where(X[:, 0] > 0, 1.0, -1.0)
    y3 = np.argmax(X[:, :3], axis=1)
    return [fr.Problem(X, y2, loss=loss, penalty=penalty, alpha=1e-2, n_threads=1)
            for loss, penalty in (("logistic", "l2"), ("logistic", "l1"), ("hinge", "l1"))] + [
        fr.Problem(X, y3, loss="softmax", penalty="l2", alpha=1e-2, n_threads=1)]


def test_solver_threads_default_to_the_problems(monkeypatch):
    """A solver with its own ``n_threads`` option runs, when it is None, the threads its
    Problem was built with (not all cores): the one n_threads of an estimator governs the
    whole fit.  Every such solver of the registry is run on a 1-thread problem it takes,
    and the thread count it resolves is recorded."""
    import inspect

    from fastrisk.solvers import SOLVERS

    seen = []
    real = config.resolve_n_threads
    monkeypatch.setattr(config, "resolve_n_threads", lambda n: seen.append(n) or real(n))
    threaded = [info for info in SOLVERS.values()
                if "n_threads" in inspect.signature(info.func).parameters]
    assert threaded, "no solver has an n_threads option"
    for info in threaded:
        problem = next(p for p in _problems_for_threads() if info.why_not(p) is None)
        seen.clear()
        info.func(problem, max_iter=1)
        # (a solver that runs another, smoothing's stages of cd, resolves it once per call)
        assert seen and set(seen) == {1}, (info.name, seen)
    assert config.solver_threads(_problems_for_threads()[0], 2) == min(2, config.n_cores())
