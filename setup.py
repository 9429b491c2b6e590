"""Build the C/Cython extensions of fastrisk.

Every ``csrc/_<name>.pyx`` becomes ``fastrisk._<name>``. OpenMP is used when
the compiler accepts ``-fopenmp`` (probed by compiling a tiny program); a
serial build is produced otherwise. ``FASTRISK_NATIVE=1`` adds
``-march=native`` and ``FASTRISK_NO_OPENMP=1`` forces the serial build.
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


class BuildExt(build_ext):
    def build_extensions(self):
        cc = list(self.compiler.compiler_so[:1]) if hasattr(self.compiler, "compiler_so") else ["cc"]
        omp = sys.platform != "win32" and openmp_works(cc)
        flags = ["-O3", "-fno-math-errno", "-Wno-unused-function"]
        if os.environ.get("FASTRISK_NATIVE") == "1":
            flags.append("-march=native")
        for ext in self.extensions:
            ext.extra_compile_args = flags + (["-fopenmp"] if omp else [])
            ext.extra_link_args = ["-fopenmp"] if omp else []
            ext.define_macros = list(ext.define_macros or []) + [("FR_OPENMP", "1" if omp else "0")]
        config = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fastrisk", "_build_config.py")
        with open(config, "w") as fh:
            fh.write("# Written by setup.py at build time.\n")
            fh.write(f"OPENMP = {omp!r}\nCOMPILER = {' '.join(cc)!r}\nCFLAGS = {' '.join(flags)!r}\n")
        super().build_extensions()


extensions = [
    Extension(
        "fastrisk." + os.path.splitext(os.path.basename(path))[0],
        [path],
        include_dirs=["csrc", np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
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
