"""The paper examples (examples/paper_*.py) run end to end with a reduced budget.

Each script runs in a subprocess with FASTRISK_EXAMPLE_QUICK=1 (a few seconds),
must exit with status 0, print its table and write a PNG file.  The quick
numbers are a smoke test, not the figures: the full runs are described in
the examples' docstrings and in docs/examples.md.  A script whose shared data
file is absent is skipped (failed when FASTRISK_REQUIRE_DATA=1, as in CI);
the others fall back to the bundled a9a.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("FASTRISK_SHARED_DATA", ROOT.parent / "shared" / "data"))

# script -> (shared data files it needs, a line its output must contain)
EXAMPLES = {
    "paper_do2009_proximal.py": ((), "certified bound on J(w) - J*"),
    "paper_xiao2010_rda.py": (("mnist.scale.t.bz2",), "nonzeros of w_t after step t"),
    "paper_takac2013_minibatch.py": ((), "iterations to the target"),
    "paper_zhu2009_inverse_time.py": ((), "examples processed until the test accuracy"),
    "paper_teo2007_bmrm.py": ((), "one oracle call on"),
}


@pytest.mark.parametrize("script", sorted(EXAMPLES))
def test_example_runs(script, tmp_path):
    needs, expected = EXAMPLES[script]
    missing = [name for name in needs if not (SHARED_DATA / name).exists()]
    if missing:
        message = f"shared data {missing} not in {SHARED_DATA} (set FASTRISK_SHARED_DATA)"
        if os.environ.get("FASTRISK_REQUIRE_DATA") == "1":     # CI: the data must be there
            pytest.fail(message + "; FASTRISK_REQUIRE_DATA=1 requires it", pytrace=False)
        pytest.skip(message)
    png = tmp_path / "figure.png"
    env = dict(os.environ, FASTRISK_EXAMPLE_QUICK="1", FASTRISK_SHARED_DATA=str(SHARED_DATA),
               MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), str(png)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert expected in proc.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
