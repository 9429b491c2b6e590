"""Build facts and the thread-count convention (``n_threads=None`` = all cores)."""

import os
import sys

import numpy as np


def _build_config():
    try:
        from fastrisk import _build_config as cfg
    except ImportError:  # pragma: no cover - only in a broken source tree
        return {"OPENMP": False, "COMPILER": "unknown", "CFLAGS": "unknown"}
    return {"OPENMP": cfg.OPENMP, "COMPILER": cfg.COMPILER, "CFLAGS": cfg.CFLAGS}


OPENMP = _build_config()["OPENMP"]


def n_cores():
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def resolve_n_threads(n_threads):
    """Validate ``n_threads``: None means all cores; 1 without OpenMP."""
    if n_threads is None:
        n = n_cores()
    elif isinstance(n_threads, (int, np.integer)) and not isinstance(n_threads, bool) and n_threads >= 1:
        n = int(n_threads)
    else:
        raise ValueError(f"n_threads must be None or an integer >= 1, got {n_threads!r}")
    return n if OPENMP else 1


def single_threaded_blas():
    """Context in which the BLAS pools of the process (OpenBLAS, MKL, ...) use one thread.

    The solvers' own parallel work runs in fastrisk's OpenMP kernels with
    ``n_threads``; the BLAS calls around them (scipy's L-BFGS-B, vector updates
    of length n_weights) are too small to gain from threads, and a BLAS pool
    of its own competing with the OpenMP threads for the same cores
    oversubscribes them.  The pools are looked up once per process (the
    lookup scans the loaded libraries).
    """
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None:
        from threadpoolctl import ThreadpoolController

        _BLAS_CONTROLLER = ThreadpoolController()
    return _BLAS_CONTROLLER.limit(limits=1, user_api="blas")


_BLAS_CONTROLLER = None


def show_config(file=None):
    """Print version, OpenMP status, thread count and compiler flags."""
    from fastrisk import __version__

    cfg = _build_config()
    lines = [
        f"fastrisk {__version__}",
        f"python   {sys.version.split()[0]}, numpy {np.__version__}",
        f"openmp   {'on' if cfg['OPENMP'] else 'off (serial build)'}",
        f"threads  {resolve_n_threads(None)} (n_threads=None), "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}",
        f"compiler {cfg['COMPILER']}",
        f"cflags   {cfg['CFLAGS']}",
    ]
    print("\n".join(lines), file=file or sys.stdout)
