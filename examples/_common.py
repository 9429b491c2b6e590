"""Shared plumbing of the paper examples: data location, quick mode, output file.

* Data: the LIBSVM files are read from ``../shared/data`` relative to the
  repository root, or from the directory in ``FASTRISK_SHARED_DATA``.
  ``data_path`` raises ``MissingData`` when a file is absent, and the scripts
  fall back to the bundled a9a where that still shows the paper's point.
* Quick mode: ``FASTRISK_EXAMPLE_QUICK=1`` shrinks every budget so that a run
  takes seconds (the test suite runs the examples this way); the numbers are
  then only a smoke test, not the figure.
* Output: the PNG goes to the path given as the first command-line argument,
  or to ``examples/output/<script name>.png``.
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED_DATA = Path(os.environ.get("FASTRISK_SHARED_DATA",
                                  HERE.parent.parent / "shared" / "data"))
QUICK = os.environ.get("FASTRISK_EXAMPLE_QUICK", "") not in ("", "0")


class MissingData(FileNotFoundError):
    """A data file of ../shared/data is not there."""


def data_path(name):
    """Path of ``name`` in the shared data directory; MissingData when absent."""
    path = SHARED_DATA / name
    if not path.exists():
        raise MissingData(f"{path} is missing (set FASTRISK_SHARED_DATA to the data directory)")
    return path


def load(name, n_features):
    """(X, y) of a LIBSVM file of the shared data directory."""
    from fastrisk import load_svmlight

    return load_svmlight(data_path(name), n_features=n_features)


def output_path(script):
    """Where the figure goes: argv[1] if given, else examples/output/<script>.png."""
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    out = HERE / "output"
    out.mkdir(exist_ok=True)
    return out / (Path(script).stem + ".png")


def figure(n_panels, width=5.0, height=3.8):
    """A row of ``n_panels`` matplotlib axes (Agg backend: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, n_panels, figsize=(width * n_panels, height), squeeze=False)
    return fig, list(axes[0])


def save(fig, script):
    """Write the figure and say where."""
    path = output_path(script)
    fig.tight_layout()
    fig.savefig(path, dpi=90, bbox_inches="tight")
    print(f"figure written to {path}")
