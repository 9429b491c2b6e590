"""Build the C/Cython extensions of fastrisk.

Every ``csrc/_<name>.pyx`` becomes ``fastrisk._<name>``. OpenMP is used when
the compiler accepts ``-fopenmp`` (probed by compiling a tiny program); a
serial build is produced otherwise. ``FASTRISK_NATIVE=1`` adds
``-march=native``, ``FASTRISK_NO_OPENMP=1`` forces the serial build and
``FASTRISK_OPT`` replaces the optimization flag ``-O3`` (tools/sanitize.sh uses
``-O1``). ``$CFLAGS`` and the flags above are compiled into ``fastrisk._buildinfo``.
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

PROBE = "#include <omp.h>\nint main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }\n"


def openmp_works(compiler_cmd):
    """Return True when ``compiler_cmd -fopenmp`` compiles and links a probe."""
    if os.environ.get("FASTRISK_NO_OPENMP") == "1":
        return False
    tmp = tempfile.mkdtemp()
    try:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as fh:
            fh.write(PROBE)
        cmd = compiler_cmd + ["-fopenmp", src, "-o", os.path.join(tmp, "probe")]
        return subprocess.run(cmd, capture_output=True).returncode == 0
    except OSError:
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def c_string(text):
    """``text`` as a C string literal, for a ``-D`` macro (argv, no shell in between)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class BuildExt(build_ext):
    """Adds the OpenMP and optimization flags, and compiles them into ``fastrisk._buildinfo``."""

    def finalize_options(self):
        if self.parallel is None:  # compile the extensions side by side unless -j says otherwise
            self.parallel = True
        super().finalize_options()

    def build_extensions(self):
        cc = list(self.compiler.compiler_so[:1]) if hasattr(self.compiler, "compiler_so") else ["cc"]
        omp = sys.platform != "win32" and openmp_works(cc)
        flags = [os.environ.get("FASTRISK_OPT", "-O3"), "-fno-math-errno", "-Wno-unused-function"]
        if os.environ.get("FASTRISK_NATIVE") == "1":
            flags.append("-march=native")
        cflags = flags + (["-fopenmp"] if omp else [])
        reported = " ".join([os.environ.get("CFLAGS", "")] + cflags).strip()  # CFLAGS: e.g. sanitizers
        facts = [("FR_COMPILER", c_string(" ".join(cc))), ("FR_CFLAGS", c_string(reported))]
        for ext in self.extensions:
            ext.extra_compile_args = cflags
            ext.extra_link_args = ["-fopenmp"] if omp else []
            ext.define_macros = list(ext.define_macros or []) + facts
        super().build_extensions()


# every extension depends on every C header: the headers include one another (fr_loss.h
# reaches the Pegasos, PGS and RDA kernels through fr_lossfn.h), so a changed header must
# rebuild every extension, which cythonize's tracking of the .pyx sources does not see
HEADERS = sorted(glob.glob("csrc/*.h"))

extensions = [
    Extension(
        "fastrisk." + os.path.splitext(os.path.basename(path))[0],
        [path],
        include_dirs=["csrc", np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        depends=HEADERS,
    )
    for path in sorted(glob.glob("csrc/_*.pyx"))
]

setup(
    ext_modules=cythonize(
        extensions,
        include_path=["csrc"],
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    ),
    cmdclass={"build_ext": BuildExt},
)
