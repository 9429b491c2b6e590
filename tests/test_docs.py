"""The documentation builds with Sphinx, warnings as errors (a broken reference fails).

The sources (docs/, with the files they include from examples/ and
benchmarks/) are copied to a temporary directory first, so the build writes
nothing into the repository (autosummary generates pages next to the
sources).  Skipped, with the reason, when Sphinx or one of the extensions of
docs/conf.py is not installed (``pip install -e ".[docs]"``).
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

for module in ("sphinx", "numpydoc", "myst_parser"):
    pytest.importorskip(module, reason=f"{module} is not installed (the docs extra)")

ROOT = Path(__file__).resolve().parent.parent


def test_docs_build_without_warnings(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "docs", src / "docs",
                    ignore=shutil.ignore_patterns("_build", "generated"))
    shutil.copytree(ROOT / "examples", src / "examples",
                    ignore=shutil.ignore_patterns("output", "__pycache__"))
    (src / "benchmarks").mkdir()
    shutil.copy(ROOT / "benchmarks" / "RESULTS.md", src / "benchmarks" / "RESULTS.md")
    out = tmp_path / "html"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q",
                           "-b", "html", str(src / "docs"), str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-5000:]
    math = (out / "math.html").read_text(encoding="utf-8")
    for section in range(1, 8):           # the code cites docs/math.md sections 1 to 7
        assert f'id="math-{section}"' in math
    assert (out / "generated" / "fastrisk.Problem.html").exists()
