"""Calibration of adaptive RDA's default step size (fastrisk/solvers/rda.py, ADAPTIVE_ETA).

One pass of l1-logistic (alpha 1e-4, no intercept) over each data set, five row orders
(``random_state`` 0-4), with eta = K / rms_i ||x_i|| for several K (the default is K =
ADAPTIVE_ETA) and, for reference, Xiao's schedule with its default gamma.  Each cell
shows the range over the five orders of J(w) / J* - 1 (J* from cd at tol 1e-9) and of
the nonzeros of w.

Usage (from the repository root):
    python benchmarks/rda_eta.py [--datasets a9a,imdb] [--ks 1,2,3,4,6]

Writes benchmarks/results/rda_eta.md (regenerated) and prints the command.
"""

import argparse
import math
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import fastrisk as fr  # noqa: E402
from compare_peers import load_dataset, machine  # noqa: E402
from fastrisk.solvers.rda import ADAPTIVE_ETA  # noqa: E402

DATASETS = "a9a,w8a,ijcnn1,reuters,phishing,mushrooms,imdb"
SEEDS = range(5)


def cell(prob, J_star, options):
    """'min..max of J / J* - 1, nonzeros min-max' over the row orders."""
    gaps, nnz = [], []
    for seed in SEEDS:
        res = fr.solve(prob, solver="rda", max_iter=1, random_state=seed, check_every=0,
                       **options)
        gaps.append(res.objective / J_star - 1)
        nnz.append(int((res.w != 0).sum()))
    return f"{min(gaps):+.1%}..{max(gaps):+.1%}, {min(nnz)}-{max(nnz)}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=DATASETS)
    ap.add_argument("--ks", default="1,2,3,4,6", help="multipliers K of 1 / rms ||x_i||")
    ap.add_argument("--alpha", type=float, default=1e-4)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "rda_eta.md"))
    args = ap.parse_args(argv)
    command = "python benchmarks/rda_eta.py " + " ".join(argv if argv is not None
                                                          else sys.argv[1:])
    print(command, flush=True)
    ks = [float(k) for k in args.ks.split(",")]
    head = ["data", "nonzeros of w*", "Xiao, default gamma"] + [
        f"K = {k:g}" + (" (default)" if k == ADAPTIVE_ETA else "") for k in ks]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in args.datasets.split(","):
        X, y = load_dataset(name)
        prob = fr.Problem(X, y, loss="logistic", penalty="l1", alpha=args.alpha)
        opt = fr.solve(prob, solver="cd", tol=1e-9)
        rms = math.sqrt(float(prob.data.row_sqnorms().mean()))
        row = [name, str(int((opt.w != 0).sum())), cell(prob, opt.objective, {})]
        row += [cell(prob, opt.objective, {"adaptive": True, "eta": k / rms}) for k in ks]
        lines.append("| " + " | ".join(row) + " |")
        print(lines[-1], flush=True)
    text = (f"# Adaptive RDA: one pass against eta\n\nCommand: `{command}`\n\n"
            f"Machine: {machine()}; load average at the end {os.getloadavg()[0]:.1f}\n\n"
            f"l1-logistic, alpha {args.alpha:g}, no intercept; each cell: the range over "
            f"random_state {SEEDS.start}-{SEEDS.stop - 1} of J(w) / J* - 1 after one pass, "
            f"then of the nonzeros of w; eta = K / rms_i ||x_i||.\n\n" + "\n".join(lines) + "\n")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
