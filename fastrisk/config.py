"""Build facts and the thread-count convention (``n_threads=None`` = all cores).

The build facts are read from the compiled extension ``fastrisk._buildinfo``
(constants set by the compiler when the kernels were built), so every kind of
install reports what it actually runs.
"""

import contextlib
import os
import sys
import threading
import warnings

import numpy as np

from fastrisk import _buildinfo

OPENMP = _buildinfo.OPENMP
_WARNED = set()  # the kinds of n_threads warning already given in this process
# the largest explicit thread count (None, all cores, may be more)
MAX_THREADS = 1024


_OWNERS = {}  # id(object) -> [thread ident, depth] while ``one_thread_at_a_time`` runs
_OWNERS_LOCK = threading.Lock()


@contextlib.contextmanager
def one_thread_at_a_time(obj, message):
    """Run the body for ``obj`` in one thread at a time: another thread entering while it
    runs gets a RuntimeError with ``message`` (the owner thread may enter again).  For
    objects whose state serves one run at a time: a Problem's oracle buffers, an
    estimator's fitted attributes."""
    key, me = id(obj), threading.get_ident()
    with _OWNERS_LOCK:
        owner = _OWNERS.setdefault(key, [me, 0])
        if owner[0] != me:
            raise RuntimeError(message)
        owner[1] += 1
    try:
        yield
    finally:
        with _OWNERS_LOCK:
            owner[1] -= 1
            if owner[1] == 0:
                del _OWNERS[key]


def n_cores():
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def solver_threads(problem, n_threads):
    """Threads of a solver's own kernels: ``n_threads``, or for None the ``n_threads``
    the problem was built with (its oracle's), so that the one ``n_threads`` of a
    Problem or an estimator governs every kernel of the fit."""
    if n_threads is None:
        n_threads = getattr(problem.oracle, "n_threads", None)
    return resolve_n_threads(n_threads)


def _warn_once(kind, message):
    if kind not in _WARNED:
        _WARNED.add(kind)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def resolve_n_threads(n_threads):
    """Threads a kernel will run: None means all cores.

    An integer is the count, also above the cores available: the thread count fixes
    how the kernels split their sums, so the same count gives the same bits whatever
    the cores (docs/threads.md); more threads than cores share them and run slower,
    which warns once per process.  At most MAX_THREADS: each thread holds scratch
    vectors of the problem's size.  A serial build runs one thread (warned once too).
    """
    if n_threads is None:
        n = n_cores()
    elif isinstance(n_threads, (int, np.integer)) and not isinstance(n_threads, bool) \
            and 1 <= n_threads <= MAX_THREADS:
        n = int(n_threads)
    else:
        raise ValueError(f"n_threads must be None or an integer from 1 to {MAX_THREADS}, got "
                         f"{n_threads!r}")
    if not OPENMP:
        if n_threads is not None and n > 1:
            _warn_once("serial", f"n_threads={n}: this fastrisk build has no OpenMP, it runs "
                                 "1 thread (rebuild with a compiler that accepts -fopenmp)")
        return 1
    cores = n_cores()
    if n > cores:
        _warn_once("cores", f"n_threads={n} is more than the {cores} cores available: the "
                            f"{n} threads share them (slower than n_threads={cores}; the same "
                            f"results as {n} threads on {n} cores)")
    return n


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
    """Print version, OpenMP status, thread count and compiler flags (to ``file``, a text
    stream; None: stdout)."""
    from fastrisk import __version__

    if file is not None and not callable(getattr(file, "write", None)):
        raise TypeError(f"file must be a text stream with a write method or None, got "
                        f"{type(file).__name__}")

    openmp = f"on (OpenMP {_buildinfo.OPENMP_VERSION})" if OPENMP else "off (serial build)"
    lines = [
        f"fastrisk {__version__}",
        f"python   {sys.version.split()[0]}, numpy {np.__version__}",
        f"openmp   {openmp}",
        f"threads  {resolve_n_threads(None)} (n_threads=None), "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}",
        f"compiler {_buildinfo.COMPILER} ({_buildinfo.COMPILER_VERSION})",
        f"cflags   {_buildinfo.CFLAGS}",
    ]
    print("\n".join(lines), file=file or sys.stdout)
