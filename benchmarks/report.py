"""Assemble benchmarks/RESULTS.md from the result files of the benchmark scripts.

    python benchmarks/report.py --run              # run every standard benchmark, then write RESULTS.md
    python benchmarks/report.py --run peers,l1     # run some of them (names in STANDARD_RUNS)
    python benchmarks/report.py                    # only rewrite RESULTS.md from benchmarks/results/

``benchmarks/compare_peers.py`` writes one JSON file per (data set, setting)
to ``benchmarks/results/compare_peers/`` (overwriting the previous one); this
script reads all of them and overwrites ``benchmarks/RESULTS.md`` with the
tables, the command and the machine they came from.  The report is never
appended to: it shows the latest result of each problem and nothing else.
The rendering of the compare_peers tables lives here, and compare_peers.py
prints them with the same functions.

The other benchmark scripts write their own regenerated reports to
``benchmarks/results/`` (``NAME.md`` in Markdown, ``NAME.txt`` as plain
text); each becomes a section of RESULTS.md, headings demoted to fit.

``--run`` runs the standard invocations in ``STANDARD_RUNS``, one process
each, one after another (so that no two compete for the cores): "peers" is the
compare_peers grid (``GRID``, all of ``DATASETS``), the others are the
scripts' own standard invocations.
"""

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"
REPORT = HERE / "RESULTS.md"
EPSILONS = (1e-2, 1e-3, 1e-4)
DATASETS = ("a9a", "w8a", "ijcnn1", "reuters", "imdb", "news20")
L2_SETTINGS = "hinge-l2-1e-4,hinge-l2-1e-6,logistic-l2-1e-4,logistic-l2-1e-6"
# the standard grid: (settings, fastrisk solvers) for every data set, budget in seconds; a
# solver that does not take a problem (the binary sdca and cd on 20 Newsgroups, the
# multiclass msdca and mcd on the binary sets) is skipped by compare_peers
GRID = ((L2_SETTINGS, "sdca,msdca,newton,lbfgs,bmrm,prox_bundle"),
        ("logistic-l1-1e-4", "cd,mcd,bmrm,rda"))
GRID_BUDGET = 6.0
# name -> the arguments of one standard benchmark run (script first); "peers" is run_grid
STANDARD_RUNS = {
    "peers": None,
    "binary": ["compare_binary.py", "--threads", "1",
               "--out", "benchmarks/results/compare_binary_1thread.md"],
    "binary2": ["compare_binary.py", "--threads", "2",
                "--out", "benchmarks/results/compare_binary_2threads.md"],
    "binary_imdb": ["compare_binary.py", "--datasets", "imdb", "--threads", "1",
                    "--out", "benchmarks/results/compare_binary_imdb_1thread.md"],
    "binary_imdb2": ["compare_binary.py", "--datasets", "imdb", "--threads", "2",
                     "--out", "benchmarks/results/compare_binary_imdb_2threads.md"],
    "regression": ["compare_binary.py", "--datasets", "abalone,housing,reuters,a9a,w8a,ijcnn1",
                   "--losses", "squared,huber,poisson",
                   "--out", "benchmarks/results/compare_regression.md"],
    "counts_imdb": ["compare_binary.py", "--datasets", "imdb_ratings", "--losses", "poisson",
                    "--budget", "60", "--ref-limit", "60", "--max-minutes", "30",
                    "--out", "benchmarks/results/compare_counts_imdb.md"],
    "exp_losses_auto": ["exp_losses_auto.py"],
    "l1": ["compare_l1.py"],
    "logistic_sdca": ["logistic_sdca.py"],
    "lbfgs_precondition": ["lbfgs_precondition.py"],
    "multiclass": ["compare_multiclass.py"],
    "multiclass_l1": ["compare_multiclass.py", "--cases",
                      "news20-softmax-l1-1e-4,mnist-softmax-l1-1e-4", "--threads", "1",
                      "--budget", "30", "--ref-seconds", "90", "--out",
                      "benchmarks/results/compare_multiclass_l1.md"],
    "newton_liblinear": ["newton_liblinear.py"],
    "rda_eta": ["rda_eta.py"],
    "threads": ["compare_threads.py"],
    "cocoa": ["bench_cocoa.py"],
    "voracle": ["bench_voracle.py"],
    "scale": ["bench_scale.py"],
    "distributed": ["bench_distributed.py"],
    "memory": ["memory_binary.py", "--out", "benchmarks/results/memory_binary.md"],
}

HOW_TO_READ = """\
fastrisk's solvers against the strongest peers (scikit-learn's LIBLINEAR, lbfgs,
saga and SGD), run one after another in one process on the same data and the same
objective (no intercept: every method minimizes the same J(w)), by
`benchmarks/compare_peers.py`. J_best is the smallest objective any method
reached (fastrisk's iterates and the peers' final weights, all evaluated with the
same J); t(eps) is the first time a method's objective is within a factor
(1 + eps) of J_best; ratio = t / (the best peer's t), so a ratio below 1 means
the fastrisk solver was faster than every peer. "-" means "not reached within the
budget" (peers are rerun with growing budgets from scratch), not "never".
"auto" is the solver `solver="auto"` picked for the problem when it ran.
A heading's "certified J* >= L" is the best lower bound J - gap of fastrisk's runs:
J_best is within J_best - L of J*, and where that is large no method solved the
problem within its budget (the times are then to J_best, not to J*)."""


# ---- rendering (also used by compare_peers.py for its printed output) -------------------

def _best_peer_times(r):
    best = []
    for k in range(len(EPSILONS)):
        ts = [r["times"][p][k] for p in r["peers"] if r["times"][p][k] is not None]
        best.append(min(ts) if ts else None)
    return best


def table(r):
    """Markdown table of one problem: seconds to each eps and the ratio to the best peer."""
    best_peer = _best_peer_times(r)
    rows, cols = r["shape"]
    lower = r.get("J_lower")
    bound = ("" if lower is None else f", certified J* >= {lower:.10g} "
             f"(J_best - that bound = {(r['J_best'] - lower) / abs(r['J_best']):.1e} J_best)")
    lines = [f"### {r['dataset']} ({rows} x {cols}), {r['setting']} "
             f"(fastrisk loss {r['loss']}), J_best = {r['J_best']:.10g}{bound}", "",
             "| method | " + " | ".join(f"t({eps:g}) s | ratio" for eps in EPSILONS) + " |",
             "|---|" + "---:|---:|" * len(EPSILONS)]
    for name, ts in r["times"].items():
        cells = []
        for k, t in enumerate(ts):
            if t is None:
                cells += ["-", "-"]
            else:
                ratio = "" if best_peer[k] is None else f"{t / best_peer[k]:.2f}"
                cells += [f"{t:.3f}", ratio]
        tag = " (peer)" if name in r["peers"] else ""
        lines.append(f"| {name}{tag} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(results):
    """Markdown table, one line per problem: the fastest fastrisk solver and the
    solver="auto" picked, at each eps, as ratios to the best peer."""
    lines = ["| data | setting | auto | " + " | ".join(
                 f"best fastrisk to {eps:g} | ratio | auto ratio" for eps in EPSILONS) + " |",
             "|---|---|---|" + "---|---:|---:|" * len(EPSILONS)]
    for r in results:
        cells = []
        for k, peer in enumerate(_best_peer_times(r)):
            ours = {n: ts[k] for n, ts in r["times"].items()
                    if n not in r["peers"] and ts[k] is not None}

            def ratio(t):
                return "-" if t is None else (f"{t / peer:.2f}" if peer else "no peer")

            best = min(ours, key=ours.get) if ours else None
            cells += [best or "-", ratio(ours.get(best)), ratio(ours.get(r["auto"]))]
        lines.append(f"| {r['dataset']} | {r['setting']} | {r['auto']} | " + " | ".join(cells)
                     + " |")
    return "\n".join(lines)


# ---- result files ----------------------------------------------------------------------

def result_path(results_dir, dataset, setting):
    return Path(results_dir) / "compare_peers" / f"{dataset}__{setting}.json"


def write_result(results_dir, r):
    """Store one problem's result (overwrites the previous result of that problem)."""
    path = result_path(results_dir, r["dataset"], r["setting"])
    path.parent.mkdir(parents=True, exist_ok=True)
    keep = ("dataset", "setting", "shape", "loss", "J_best", "times", "peers", "auto",
            "budget", "machine", "load", "date", "command")
    # J_lower: None for a result without a certified bound
    stored = dict({k: r[k] for k in keep}, J_lower=r.get("J_lower"))
    path.write_text(json.dumps(stored, indent=1) + "\n")
    return path


def read_results(results_dir):
    """All stored results, in the order of DATASETS, then setting name."""
    files = sorted((Path(results_dir) / "compare_peers").glob("*.json"))
    results = [json.loads(f.read_text()) for f in files]
    order = {d: i for i, d in enumerate(DATASETS)}
    return sorted(results, key=lambda r: (order.get(r["dataset"], len(order)), r["setting"]))


def other_reports(results_dir, exclude=None):
    """(name, markdown) of every other script's report in ``results_dir`` (not ``exclude``)."""
    out = []
    for path in sorted(Path(results_dir).glob("*")):
        if exclude is not None and path.resolve() == Path(exclude).resolve():
            continue
        if path.suffix == ".md":
            text = path.read_text().strip()
            levels = [len(m.group(1)) for m in re.finditer(r"^(#+) ", text, re.M)]
            shift = 3 - min(levels) if levels else 0       # the report's top level becomes ###
            text = re.sub(r"^(#+) ", lambda m: "#" * (len(m.group(1)) + shift) + " ", text,
                          flags=re.M)
            out.append((path.name, text))
        elif path.suffix == ".txt":
            out.append((path.name, "```\n" + path.read_text().rstrip() + "\n```"))
    return out


def render(results, others=()):
    out = ["# Benchmark results", "",
           "Generated by `python benchmarks/report.py` from the result files of the "
           "benchmark scripts (see benchmarks/README.md); do not edit by hand.", "",
           HOW_TO_READ, ""]
    if not results:
        out += ["No results of compare_peers.py yet: run `python benchmarks/report.py --run`.",
                ""]
    else:
        out += _peers_sections(results)
    for name, text in others:
        out += [f"## {name}", "", f"The report in `benchmarks/results/{name}`.", "", text, ""]
    return "\n".join(out)


def _peers_sections(results):
    out = ["## Runs", ""]
    runs = {}
    for r in results:
        runs.setdefault((r["command"], r["machine"], r["date"]), []).append(r)
    out += ["| date | command | problems | load average at start |", "|---|---|---|---|"]
    for (command, _, date), rs in runs.items():
        out.append(f"| {date} | `{command}` | {len(rs)} | {rs[0].get('load', '?')} |")
    out.append("")
    machines = sorted({r["machine"] for r in results})
    out += ["Machine" + ("s" if len(machines) > 1 else "") + ":", ""]
    out += [f"* {m}" for m in machines] + [""]
    out += ["## Summary", "", summary(results), ""]
    out += ["## Every problem", ""]
    for r in results:
        out += [table(r), ""]
    return out


def write_report(results_dir=RESULTS_DIR, report=REPORT):
    """Overwrite the report; returns the number of compare_peers problems in it."""
    results = read_results(results_dir)
    Path(report).write_text(render(results, other_reports(results_dir, exclude=report)))
    return len(results)


def run_grid(results_dir, budget):
    sys.path.insert(0, str(HERE))
    import compare_peers

    for dataset in DATASETS:
        for settings, solvers in GRID:
            argv = ["--datasets", dataset, "--settings", settings, "--solvers", solvers,
                    "--budget", f"{budget:g}"]
            if Path(results_dir).resolve() != RESULTS_DIR:
                argv += ["--results", str(results_dir)]
            compare_peers.main(argv)


def run_standard(names, results_dir, budget):
    """Run the named standard benchmarks, each in its own process, from the repository root."""
    root = HERE.parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(root), os.environ.get("PYTHONPATH")) if p))
    for name in names:
        print(f"== {name}", flush=True)
        if STANDARD_RUNS[name] is None:
            run_grid(results_dir, budget)
            continue
        script, *args = STANDARD_RUNS[name]
        subprocess.run([sys.executable, str(HERE / script), *args], cwd=root, env=env,
                       check=True)


def _run_names(value):
    names = list(STANDARD_RUNS) if value == "all" else value.split(",")
    unknown = [n for n in names if n not in STANDARD_RUNS]
    if unknown:
        raise SystemExit(f"--run: unknown benchmark(s) {', '.join(unknown)}; "
                         f"choose from {', '.join(STANDARD_RUNS)} or 'all'")
    return names


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", nargs="?", const="all", default=None, metavar="NAMES",
                        help="run the standard benchmarks first (all, or a comma-separated "
                             f"subset of {', '.join(STANDARD_RUNS)}; long)")
    parser.add_argument("--budget", type=float, default=GRID_BUDGET,
                        help=f"seconds per method and problem with --run (default {GRID_BUDGET:g})")
    parser.add_argument("--results", default=str(RESULTS_DIR),
                        help="directory of the result files (default benchmarks/results)")
    parser.add_argument("--out", default=str(REPORT), help="the report (overwritten)")
    args = parser.parse_args(argv)
    if args.run is not None:
        run_standard(_run_names(args.run), args.results, args.budget)
    n = write_report(args.results, args.out)
    print(f"{args.out}: {n} problems")


if __name__ == "__main__":
    main()
