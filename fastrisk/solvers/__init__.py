"""The solver registry and ``fastrisk.solve``.

Every public module of this package (a name without a leading underscore)
that defines ``SOLVER_INFO`` (a :class:`SolverInfo` or a tuple of them, see
fastrisk/solvers/_info.py) is a solver family; ``SOLVERS`` maps each solver
name to its record.  The modules are found and imported on first use of the
registry, so adding a solver is adding its module: no list to extend here,
in ``solver="auto"``, the estimators or the command line.
"""

import contextlib
import importlib
import os
import pkgutil
from collections.abc import Mapping

from fastrisk.config import one_thread_at_a_time
from fastrisk.solvers._checks import check_rng
from fastrisk.solvers._info import SolverInfo


class _Registry(Mapping):
    """name -> SolverInfo, discovered from the package's modules on first access."""

    def __init__(self):
        self._infos = None

    def _load(self):
        if self._infos is None:
            infos = {}
            for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
                if module.startswith("_"):
                    continue
                declared = getattr(importlib.import_module(f"{__name__}.{module}"),
                                   "SOLVER_INFO", None)
                if declared is None:
                    continue
                for info in declared if isinstance(declared, tuple) else (declared,):
                    if not isinstance(info, SolverInfo):
                        raise TypeError(f"{module}.SOLVER_INFO must hold SolverInfo records")
                    if info.name in infos or info.name == "auto":
                        raise ValueError(f"solver name {info.name!r} declared twice")
                    infos[info.name] = info
            self._infos = infos
        return self._infos

    def __getitem__(self, name):
        return self._load()[name]

    def __iter__(self):
        return iter(self._load())

    def __len__(self):
        return len(self._load())

    def __repr__(self):
        return f"SOLVERS({sorted(self._load())})"


SOLVERS = _Registry()


def solver_info(name):
    """The SolverInfo registered under ``name``."""
    if not isinstance(name, str) or name not in SOLVERS:
        raise ValueError(f"solver must be 'auto' or one of {sorted(SOLVERS)}, got {name!r}")
    return SOLVERS[name]


def get_solver(name):
    """The solve function registered under ``name``."""
    return solver_info(name).func


def takes(name, problem):
    """Whether solver ``name`` is registered and its record accepts ``problem``."""
    return name in SOLVERS and SOLVERS[name].why_not(problem) is None


def solvers_for(problem):
    """The SolverInfo of every solver that can solve ``problem``, in name order."""
    return [SOLVERS[name] for name in sorted(SOLVERS) if takes(name, problem)]


def choose_solver(problem):
    """The solver ``solver="auto"`` uses for this problem (see fastrisk/solvers/auto.py)."""
    from fastrisk.solvers.auto import choose

    return choose(problem)


# a Problem's oracle keeps its buffers and per-call outputs (scores, multipliers), which one
# run at a time may use
_BUSY_PROBLEM = ("this Problem is being solved in another thread, and its oracle's buffers "
                 "serve one run at a time: give each thread its own Problem (built from the "
                 "same X, which is shared without a copy)")


def _physical_memory():
    """Bytes of physical memory, or None where the platform does not tell."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None


@contextlib.contextmanager
def sized_memory_errors(problem, solver):
    """Re-raise a failed allocation (numpy's message names only bytes and a shape) with
    the size of ``problem`` that asked for it, e.g. an empty X 2**40 columns wide.

    Every solver holds at least two float64 vectors of n_weights (w and a gradient or
    its running sum); when those exceed the physical memory the run is refused before
    it starts: with the kernel's overcommit such allocations succeed and the process is
    killed when it touches them, with no message."""
    total = _physical_memory()
    if total is not None and 2 * 8 * problem.n_weights > total:
        raise MemoryError(f"not enough memory for solver {solver!r} on a problem of "
                          f"{problem.n_samples} rows and {problem.n_weights} weights: two "
                          f"float64 vectors of that length take {16 * problem.n_weights:.3g} "
                          f"bytes, more than the {total:.3g} bytes of physical memory")
    try:
        yield
    except MemoryError as exc:
        raise MemoryError(f"not enough memory for solver {solver!r} on a problem of "
                          f"{problem.n_samples} rows and {problem.n_weights} weights (X's "
                          f"columns and the intercept): {exc}") from None


def solve(problem, solver="auto", **options):
    """Minimize ``problem``'s objective with ``solver``; returns a Result.

    ``solver="auto"`` picks one (fastrisk/solvers/auto.py) and, without ``max_iter``,
    runs until ``tol`` under a time limit instead of the solver's iteration default.
    ``random_state`` is checked here for every solver, those without random steps too."""
    from fastrisk.problem import Problem

    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a fastrisk Problem (fastrisk.Problem(X, y, ...)), got "
                        f"{type(problem).__name__}")
    if "random_state" in options:
        check_rng(options["random_state"])
    with one_thread_at_a_time(problem, _BUSY_PROBLEM):
        if solver == "auto":
            from fastrisk.solvers.auto import default_budget, run

            solver = choose_solver(problem)
            solver_info(solver).check(problem)
            with sized_memory_errors(problem, solver):
                return run(problem, solver, default_budget(options, solver))
        info = solver_info(solver)
        info.check(problem)
        with sized_memory_errors(problem, solver):
            return info.func(problem, **options)
