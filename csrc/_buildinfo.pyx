# cython: language_level=3
"""Build facts compiled into the extensions, and an OpenMP probe.

setup.py compiles this module with the flags of every other kernel module and
passes the compiler command and flags as the macros ``FR_COMPILER`` and
``FR_CFLAGS``.  Whether OpenMP is on is not passed at all: it is the
compiler's own ``_OPENMP`` macro, defined exactly when the code was compiled
with OpenMP.  So an installed wheel, sdist build or editable build reports
what was compiled, with no generated file that a packaging step could drop.
"""

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    #define FR_OPENMP_VERSION _OPENMP
    #else
    #define FR_OPENMP_VERSION 0
    #endif
    #ifndef FR_COMPILER
    #define FR_COMPILER "unknown"
    #endif
    #ifndef FR_CFLAGS
    #define FR_CFLAGS "unknown"
    #endif
    #ifdef __VERSION__
    #define FR_COMPILER_VERSION __VERSION__
    #else
    #define FR_COMPILER_VERSION "unknown"
    #endif

    /* Threads in a parallel region that asked for n of them, as seen inside it. */
    static int fr_team_size(int n)
    {
        int size = 1;
    #ifdef _OPENMP
        #pragma omp parallel num_threads(n)
        {
            #pragma omp single
            size = omp_get_num_threads();
        }
    #else
        (void)n;
    #endif
        return size;
    }
    """
    int FR_OPENMP_VERSION
    const char* FR_COMPILER
    const char* FR_CFLAGS
    const char* FR_COMPILER_VERSION
    int fr_team_size(int n) nogil

#: ``_OPENMP`` of the compiler (yyyymm of the OpenMP specification), 0 in a serial build.
OPENMP_VERSION = FR_OPENMP_VERSION
OPENMP = OPENMP_VERSION != 0
COMPILER = FR_COMPILER.decode()
COMPILER_VERSION = FR_COMPILER_VERSION.decode()
CFLAGS = FR_CFLAGS.decode()


def team_size(int n_threads):
    """Threads that an OpenMP parallel region asking for ``n_threads`` actually runs.

    The region is opened without the GIL, as the kernels open theirs; a serial
    build returns 1.
    """
    if n_threads < 1:
        raise ValueError(f"n_threads must be an integer >= 1, got {n_threads!r}")
    cdef int size
    with nogil:
        size = fr_team_size(n_threads)
    return size
