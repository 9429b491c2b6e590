"""The documentation builds with Sphinx, warnings as errors (a broken reference fails),
and the benchmark report it includes is regenerated, not appended to.

The sources (docs/, with the files they include from examples/ and
benchmarks/) are copied to a temporary directory first, so the build writes
nothing into the repository (autosummary generates pages next to the
sources).  Skipped, with the reason, when Sphinx or one of the extensions of
docs/conf.py is not installed (``pip install -e ".[docs]"``).
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_docs_build_without_warnings(tmp_path):
    for module in ("sphinx", "numpydoc", "myst_parser"):
        pytest.importorskip(module, reason=f"{module} is not installed (the docs extra)")
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


def test_benchmark_report_is_regenerated_not_appended(tmp_path):
    """benchmarks/report.py rewrites RESULTS.md from the latest result of each problem:
    a second result of the same problem replaces the first, the ratios are the times
    divided by the best peer's (checked against hand-computed values), and another
    script's report in the results directory appears once, as a section."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import report
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    base = dict(dataset="a9a", setting="hinge-l2-1e-4", shape=[10, 3], loss="hinge",
                J_best=0.5, peers=["LinearSVC"], auto="sdca", budget=1.0,
                machine="test machine", load=0.0, date="today", command="cmd")
    out = tmp_path / "RESULTS.md"
    (tmp_path / "other.md").write_text("# Another script\n\n| x |\n|---|\n| 1 |\n")
    report.write_result(tmp_path, dict(base, times={"sdca": [9.0, 9.0, None],
                                                    "LinearSVC": [1.0, 2.0, 4.0]}))
    report.write_report(tmp_path, out)
    report.write_result(tmp_path, dict(base, times={"sdca": [0.5, 1.0, None],
                                                    "LinearSVC": [1.0, 2.0, 4.0]}))
    assert report.write_report(tmp_path, out) == 1
    text = out.read_text()
    assert text.count("### a9a (10 x 3), hinge-l2-1e-4") == 1
    assert "(fastrisk loss hinge), J_best = 0.5\n" in text  # no bound stored: none claimed
    assert "| sdca | 0.500 | 0.50 | 1.000 | 0.50 | - | - |" in text
    assert "| a9a | hinge-l2-1e-4 | sdca | sdca | 0.50 | 0.50 | sdca | 0.50 | 0.50 | - | - | - |" \
        in text
    # a certified lower bound is shown with J_best's distance from it
    report.write_result(tmp_path, dict(base, J_lower=0.25, times={"sdca": [0.5, 1.0, None],
                                                                  "LinearSVC": [1.0, 2.0, 4.0]}))
    report.write_report(tmp_path, out)
    assert "J_best = 0.5, certified J* >= 0.25 (J_best - that bound = 5.0e-01 J_best)" \
        in out.read_text()
    assert "9.000" not in text
    assert text.count("### Another script") == 1        # another script's report, once


def test_cited_math_sections_exist():
    """Every ``docs/math.md §N`` cited in the code, tests, benchmarks and examples is a
    section heading ``## §N ...`` of docs/math.md (sections 1 to 7 at least)."""
    headings = set(re.findall(r"^## §(\d+) ", (ROOT / "docs" / "math.md").read_text(
        encoding="utf-8"), re.M))
    assert {str(n) for n in range(1, 8)} <= headings
    cited = {}
    for folder in ("fastrisk", "csrc", "tests", "benchmarks", "examples", "docs"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".pyx", ".pxd", ".h", ".md", ".rst") and path.is_file():
                for n in re.findall(r"docs/math\.md §(\d+)", path.read_text(errors="replace")):
                    cited.setdefault(n, path.relative_to(ROOT))
    missing = {n: str(p) for n, p in cited.items() if n not in headings}
    assert not missing, f"cited sections absent from docs/math.md: {missing}"


def test_benchmark_report_standard_runs_exist():
    """Every standard run of ``report.py --run`` names a script in benchmarks/, and an
    unknown name is refused with the list of known ones."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import report
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    for name, argv in report.STANDARD_RUNS.items():
        if argv is not None:
            assert (ROOT / "benchmarks" / argv[0]).is_file(), name
    assert report._run_names("all") == list(report.STANDARD_RUNS)
    with pytest.raises(SystemExit, match="unknown benchmark"):
        report._run_names("peers,nope")


def _table_names(text):
    """The names in backquotes that open the rows of the Markdown tables of ``text``."""
    return set(re.findall(r"^\| `([A-Za-z0-9_]+)`", text, flags=re.M))


def test_every_registered_name_is_documented():
    """Each registered scalar loss has a row in both loss tables of
    docs/losses_penalties.md (the loss and its conjugate), each penalty a row in its table,
    and each solver appears in the table of docs/solvers/index.md: a new entry of a
    registry shows up here until its documentation is written (docs/extending.md)."""
    from fastrisk.losses import SCALAR_LOSSES
    from fastrisk.regularizers import PENALTIES
    from fastrisk.solvers import SOLVERS

    text = (ROOT / "docs" / "losses_penalties.md").read_text()
    tables = text.split("### Conjugates")
    assert len(tables) == 2
    for table in tables:
        assert set(SCALAR_LOSSES) <= _table_names(table)
    assert set(PENALTIES) <= _table_names(text)
    solvers = (ROOT / "docs" / "solvers" / "index.md").read_text()
    rows = [line for line in solvers.splitlines() if line.startswith("| {doc}")]
    listed = {name for row in rows for name in re.findall(r"`([a-z0-9_]+)`", row.split("|")[2])}
    assert set(SOLVERS) == listed
