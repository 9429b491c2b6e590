"""Solver registry and ``fastrisk.solve``.

Every solver is ``solve_<name>(problem, *, tol, max_iter, time_limit,
callback, verbose, **options) -> Result`` in its own module (one module per
seed family).  Modules are imported on first use.
"""

import importlib

# name -> (module, function, penalties it supports)
SOLVERS = {
    "bmrm": ("fastrisk.solvers.bmrm", "solve_bmrm"),
    "prox_bundle": ("fastrisk.solvers.prox_bundle", "solve_prox_bundle"),
    "lbfgs": ("fastrisk.solvers.lbfgs", "solve_lbfgs"),
    "newton": ("fastrisk.solvers.newton", "solve_newton"),
    "sdca": ("fastrisk.solvers.sdca", "solve_sdca"),
    "msdca": ("fastrisk.solvers.msdca", "solve_msdca"),
    "pegasos": ("fastrisk.solvers.pegasos", "solve_pegasos"),
    "adaptive": ("fastrisk.solvers.pegasos", "solve_adaptive"),
    "proximal": ("fastrisk.solvers.pegasos", "solve_proximal"),
    "optimistic": ("fastrisk.solvers.pegasos", "solve_optimistic"),
    "pgs": ("fastrisk.solvers.pgs", "solve_pgs"),
    "rda": ("fastrisk.solvers.rda", "solve_rda"),
    "sgd_l1": ("fastrisk.solvers.rda", "solve_sgd_l1"),
    "truncated_gradient": ("fastrisk.solvers.rda", "solve_truncated_gradient"),
}


def get_solver(name):
    """The solve function registered under ``name``."""
    if name not in SOLVERS:
        raise ValueError(f"solver must be one of {sorted(SOLVERS)} or 'auto', got {name!r}")
    module, func = SOLVERS[name]
    return getattr(importlib.import_module(module), func)


def choose_solver(problem):
    """The solver ``solver="auto"`` uses for this problem (see fastrisk/solvers/auto.py)."""
    from fastrisk.solvers.auto import choose

    return choose(problem)


def solve(problem, solver="auto", **options):
    """Minimize ``problem``'s objective with ``solver``; returns a Result."""
    if solver == "auto":
        solver = choose_solver(problem)
    return get_solver(solver)(problem, **options)
