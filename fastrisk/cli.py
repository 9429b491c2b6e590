"""The ``fastrisk`` command: train, predict, evaluate, info, demo.

    fastrisk train DATA [--loss L --penalty P --alpha A --solver S ...] -o MODEL [--plot PNG]
                        [--scheduler tcp://host:8786 [--partitions N]]
    fastrisk predict MODEL DATA [-o OUT] [--n-features N]
    fastrisk evaluate MODEL DATA [--n-features N]
    fastrisk info MODEL
    fastrisk demo [--plot PNG]

DATA is an svmlight/libsvm file (``.gz``, ``.bz2``, ``.xz`` compressed too) or
an ``.npz`` archive holding ``y`` and either ``X`` (dense) or the CSR arrays
``data``, ``indices``, ``indptr``, ``shape`` (read with ``allow_pickle=False``).
All commands read DATA alike: X must be 2-d, real and finite and y hold one
label or target per row; CSR arrays with unsorted or duplicate column indices
are made canonical (duplicates summed), as the estimators do when they fit.
``predict`` and ``evaluate`` refuse DATA whose width differs from the model's:
an svmlight file is as wide as its largest index, so a file that merely lacks
the highest features needs ``--n-features`` (the model's width) to say so.
svmlight indices are read as fastrisk.load_svmlight's ``zero_based="auto"``
does; ``train`` records in the model file whether its DATA was read 0-based,
and ``predict`` and ``evaluate`` read their DATA the same way (a test file in
0-based coding without an index 0 would otherwise be read 1-based).
User errors print one line ``fastrisk: error: ...`` naming the argument at
fault and exit with status 1 (2 for command-line syntax errors, from argparse):
invalid input files and options (ValueError, TypeError) and files that cannot be
read or written (OSError); other exceptions are bugs and show their traceback.
``train --scheduler ADDRESS`` computes the risk oracle on a Dask cluster
(DATA read here, its row partitions scattered to the workers; batch solvers only).
"""

import argparse
import math
import os
import struct
import sys
import time
import tokenize
import warnings
import zipfile

import numpy as np
import scipy.sparse as sp

from fastrisk.config import MAX_THREADS
from fastrisk.losses import LOSSES
from fastrisk.regularizers import PENALTIES
from fastrisk.solvers import SOLVERS, solvers_for
from fastrisk.solvers._checks import SIZE_MAX


class UserError(Exception):
    """An error caused by the command line or the input files: reported in one line."""


def _first_line(exc):
    """The first line of an exception's message, or its type name when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# ---- data files -------------------------------------------------------------------------

# What np.load raises on a damaged .npz archive or a malformed .npy header inside it
# (zipfile, ast.literal_eval and the tokenizer of numpy's header parser, np.dtype), besides
# ValueError, TypeError and OSError.
_NPZ_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError,
               SyntaxError, tokenize.TokenError, LookupError, OverflowError, RecursionError,
               struct.error)


def _read_npz(path):
    """(X, y) as stored in an .npz archive: dense ``X`` or the CSR arrays; not yet checked."""
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic != b"PK\x03\x04":  # np.load would try it as a pickle and advise unpickling
        raise ValueError("not an .npz archive (a zip file of .npy arrays)")
    archive = np.load(path, allow_pickle=False)
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError("not an .npz archive (np.load read a single .npy array)")
    with archive as z:
        names = ("X", "y") if "X" in z.files else ("data", "indices", "indptr", "shape", "y")
        missing = [k for k in names if k not in z.files]
        if missing:
            raise ValueError(f"the .npz archive lacks {', '.join(map(repr, missing))} (it holds "
                             f"{', '.join(map(repr, z.files)) or 'nothing'})")
        if "X" in z.files:
            X = z["X"]
        else:
            shape = z["shape"]
            if shape.shape != (2,) or shape.dtype.kind not in "iu" or (shape < 0).any() \
                    or (shape > SIZE_MAX).any():
                raise ValueError(f"shape must hold two integers >= 0 and <= 2**62, got "
                                 f"{shape!r:.60}")
            arrays = {k: z[k] for k in ("data", "indices", "indptr")}
            for k in ("indices", "indptr"):
                if arrays[k].ndim != 1 or arrays[k].dtype.kind not in "iu":
                    raise ValueError(f"{k} must be a 1-d integer array, got "
                                     f"{arrays[k].dtype} of shape {arrays[k].shape}")
            if arrays["data"].ndim != 1:
                raise ValueError(f"data must be 1-d, got shape {arrays['data'].shape}")
            X = sp.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]),
                              shape=(int(shape[0]), int(shape[1])))
        y = z["y"]
    return X, y


def _check_data(X, y):
    """X as the library reads it (``check_X``: 2-d, real, finite, canonical CSR) and y a
    vector of labels or targets, one per row.

    An unsorted CSR X, or one with duplicate column indices, is made canonical
    (duplicates summed) after its index arrays are checked, as the estimators do
    when they fit: train, predict and evaluate accept the same files.
    """
    from fastrisk.data import check_X
    from fastrisk.estimators import _check_structure

    X = check_X(_check_structure(X), "X", repair=True)
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y has shape {y.shape}, expected ({X.shape[0]},): one label or "
                         "target per row of X")
    if y.dtype.kind == "S":  # scikit-learn refuses byte-string labels
        raise TypeError(f"y holds byte strings (dtype {y.dtype}): store the labels as str "
                        "(np.str_) or numbers")
    if y.dtype.kind not in "biufU":
        raise TypeError(f"y must hold numbers, bools or strings, got dtype {y.dtype}")
    return X, y


# the model-file info entry that records how the training file's svmlight indices were read
ZERO_BASED_INFO = "svmlight_zero_based"


def load_data(path, n_features=None, arg="DATA", zero_based="auto"):
    """(X, y, whether svmlight indices were read 0-based; None for .npz) from an svmlight
    file (read with ``zero_based``) or an .npz archive (see the module docstring), checked
    by ``_check_data``; any fault of the file is a UserError naming ``arg`` and the file."""
    from fastrisk.svmlight import read_svmlight

    path = os.fspath(path)
    if not os.path.exists(path):
        raise UserError(f"{arg} {path}: no such file")
    if os.path.isdir(path):
        raise UserError(f"{arg} {path}: a directory, not a data file")
    try:
        if path.endswith(".npz"):
            try:
                X, y = _read_npz(path)
            except _NPZ_ERRORS as exc:
                raise ValueError(f"not a readable .npz archive ({type(exc).__name__}: "
                                 f"{_first_line(exc)})") from exc
            base = None
        else:
            X, y, base = read_svmlight(path, n_features=n_features, zero_based=zero_based)
        X, y = _check_data(X, y)
        if n_features is not None and X.shape[1] != n_features:
            raise ValueError(f"the archive holds {X.shape[1]} features, not --n-features "
                             f"{n_features} (an .npz is read at its own width)")
        return X, y, base
    except (ValueError, TypeError, OSError) as exc:
        raise UserError(f"{arg} {path}: {_first_line(exc)}") from None
    except MemoryError as exc:  # e.g. an .npz whose shape claims 2**62 features
        raise UserError(f"{arg} {path}: not enough memory to read it ({exc})") from None


def _load_model(path):
    from fastrisk.model import load

    try:
        return load(path)
    except (ValueError, OSError) as exc:
        raise UserError(f"MODEL {exc}") from None


# ---- progress line and plot --------------------------------------------------------------


class Progress:
    """Callback printing progress ``solver: it N  J(w) = ...  bound = ...`` to a stream.

    On a terminal one line is rewritten in place (carriage returns); to a file
    or a pipe whole lines are written, at most one every ``interval`` seconds,
    and ``done`` writes the last state if it was not written yet.
    """

    def __init__(self, label, stream=None, interval=1.0):
        self.label, self.width, self.interval = label, 0, interval
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        self.live = bool(isatty and isatty())
        self.last_time, self.pending = -math.inf, None

    def __call__(self, res):
        bound = "n/a" if math.isnan(res.gap) else f"{res.gap:.2e}"
        history = getattr(res, "history", None)
        exact = history is None or not history.exact or history.exact[-1]   # "~": an estimate
        line = (f"{self.label}: it {res.n_iter:4d}  J(w) {'=' if exact else '~'} "
                f"{res.objective:.8f}  bound = {bound}")
        if self.live:
            self.stream.write("\r" + line.ljust(self.width))
            self.width = len(line)
        elif time.monotonic() - self.last_time >= self.interval:
            self.stream.write(line + "\n")
            self.last_time, self.pending = time.monotonic(), None
        else:
            self.pending = line
            return True
        self.stream.flush()
        return True

    def done(self):
        if self.live and self.width:
            self.stream.write("\n")
        elif self.pending is not None:
            self.stream.write(self.pending + "\n")
            self.pending = None
        self.stream.flush()


def _exact_entries(history):
    """The history's columns restricted to its exact, finite objectives."""
    cols = history.as_arrays()
    keep = cols["exact"].astype(bool) & np.isfinite(cols["objective"]) if len(history) \
        else np.zeros(0, dtype=bool)
    return {k: cols[k][keep] if len(history) else np.zeros(0)
            for k in ("seconds", "objective", "bound")}


def plot_convergence(runs, path, title):
    """Objective gap J(w_t) - J_best against seconds for several solvers (log scale).

    ``runs``: {solver: History}; J_best is the smallest objective any run reached.
    Only the exact entries of a history are drawn (an estimate, e.g. SDCA's between its
    exact checks, can be below J*).  Dashed lines are the certified bounds where the
    solver has one.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError("--plot needs matplotlib: pip install 'fastrisk[plot]'") from None
    exact = {name: _exact_entries(h) for name, h in runs.items()}
    exact = {name: e for name, e in exact.items() if len(e["objective"])}
    if not exact:
        raise UserError("--plot: no run recorded an exact objective")
    best = min(e["objective"].min() for e in exact.values())
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, e in exact.items():
        t = e["seconds"]
        gap = np.maximum(e["objective"] - best, 1e-16) / abs(best)
        (line,) = ax.semilogy(t, gap, label=name)
        bound = e["bound"] / abs(best)
        if np.isfinite(bound).any():
            ax.semilogy(t, np.where(bound > 0, bound, np.nan), "--", color=line.get_color(),
                        alpha=0.6)
    ax.set_xlabel("seconds")
    ax.set_ylabel("(J(w) - J_best) / J_best   (dashed: certified bound)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except (OSError, ValueError) as exc:
        raise UserError(f"--plot {path}: {exc}") from None
    plt.close(fig)


# ---- commands ---------------------------------------------------------------------------


def _estimator(args, solver, callback=None):
    from fastrisk.estimators import LinearClassifier, LinearRegressor

    task = LOSSES[args.loss].task
    kw = dict(loss=args.loss, penalty=args.penalty, alpha=args.alpha, loss_param=args.loss_param,
              l1_ratio=args.l1_ratio, p=args.p, solver=solver, tol=args.tol,
              max_iter=args.max_iter, time_limit=args.time_limit,
              fit_intercept=not args.no_intercept, random_state=args.seed,
              n_threads=args.threads, callback=callback, scheduler=args.scheduler,
              n_partitions=args.partitions)
    if task in ("binary", "multiclass"):
        return LinearClassifier(**kw)
    if task in ("regression", "counts"):
        return LinearRegressor(**kw)
    raise UserError(f"--loss {args.loss}: the command trains classifiers and regressors only")


def _fit(est, X, y, label, quiet):
    progress = None if quiet else Progress(label)
    est.set_params(callback=progress)
    try:
        est.fit(X, y)
    finally:
        if progress:
            progress.done()
    return est


def _check_scheduler(args):
    """One-line errors for --scheduler: oracle-only solvers, dask.distributed installed, an
    address that parses."""
    from fastrisk.estimators import dask_solvers

    for option, name in [("--solver", args.solver)] + [("--compare", s) for s in args.compare]:
        if name != "auto" and not SOLVERS[name].oracle_only:
            raise UserError(f"{option} {name}: a solver that cannot run with --scheduler; use "
                            f"auto or one of {', '.join(dask_solvers())}")
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise UserError("--scheduler needs dask.distributed: pip install 'fastrisk[dask]'") \
            from None
    from fastrisk.distributed import check_address

    check_address(args.scheduler, "--scheduler")


def _check_plot(args):
    """--plot needs matplotlib: checked before any fit, not after the model is saved."""
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UserError("--plot needs matplotlib: pip install 'fastrisk[plot]'") from None


def _check_compare(args, X):
    """--compare solvers that cannot take the problem, refused before the main fit rather
    than after it: the loss, the penalty and the presence of rows decide (every problem of
    a one-vs-rest fit has the same), so a two-row problem of DATA's width stands for them.
    A problem that cannot even be built is left to the main fit to report."""
    from fastrisk.problem import Problem

    if not args.compare or X.shape[0] < 2:
        return
    labels = [-1.0, 1.0] if LOSSES[args.loss].task == "binary" else [0.0, 1.0]
    try:
        probe = Problem(X[:2], np.array(labels), loss=args.loss, penalty=args.penalty,
                        alpha=args.alpha, loss_param=args.loss_param, l1_ratio=args.l1_ratio,
                        p=args.p)
    except (ValueError, TypeError):
        return
    for name in args.compare:
        reason = SOLVERS[name].why_not(probe)
        if reason is not None:
            raise UserError(f"--compare {name}: {reason}")


def cmd_train(args, out):
    _check_plot(args)
    if args.scheduler is not None:
        _check_scheduler(args)
    X, y, base = load_data(args.data, n_features=args.n_features)
    _check_compare(args, X)
    runs = {}
    try:
        est = _fit(_estimator(args, args.solver), X, y, args.solver, args.quiet)
    except OSError as exc:  # the scheduler cannot be reached
        if args.scheduler is None:
            raise
        raise UserError(f"--scheduler {args.scheduler}: {_first_line(exc)}") from None
    runs[est.solver_ if isinstance(est.solver_, str) else args.solver] = est.history_
    for name in args.compare:
        other = _fit(_estimator(args, name), X, y, name, args.quiet)
        runs[name] = other.history_
    model = est.to_model()
    if base is not None:  # DATA's files for predict and evaluate are read the same way
        model.info[ZERO_BASED_INFO] = base
    try:
        model.save(args.output)
    except OSError as exc:
        raise UserError(f"--output {args.output}: {exc.strerror or _first_line(exc)}") from None
    print(f"trained {type(est).__name__} on {X.shape[0]} x {X.shape[1]} with solver "
          f"{est.solver_}: J(w) = {np.max(est.objective_):.8g}, certified gap "
          f"{np.max(est.gap_):.3g}, {est.n_iter_} iterations, status {est.status_}; "
          f"saved to {args.output}", file=out)
    if args.plot:
        if any(isinstance(h, list) for h in runs.values()):
            raise UserError("--plot: one-vs-rest fits have one history per class; plot a binary "
                            "or vector-loss problem")
        plot_convergence(runs, args.plot, f"{args.loss} / {args.penalty}, alpha={args.alpha:g}")
        print(f"convergence plot written to {args.plot}", file=out)


def _model_data(args, model):
    """(X, y) of DATA for a model: the same width, or a UserError naming --n-features.
    The model's record of how train read its svmlight indices must be one train writes."""
    base = model.info.get(ZERO_BASED_INFO, "auto")
    if not (base is True or base is False or base == "auto"):
        raise UserError(f"MODEL {args.model}: info[{ZERO_BASED_INFO!r}] must be true, false or "
                        f"'auto' (how train read its svmlight indices), got {base!r}")
    X, y, _ = load_data(args.data, n_features=args.n_features, zero_based=base)
    if X.shape[1] != model.n_features:
        hint = ""
        if X.shape[1] < model.n_features and args.n_features is None \
                and not os.fspath(args.data).endswith(".npz"):
            hint = (f"; if the file only lacks the highest features (svmlight files store no "
                    f"zeros), pass --n-features {model.n_features}")
        raise UserError(f"DATA {args.data}: {X.shape[1]} features, but the model was trained "
                        f"on {model.n_features}{hint}")
    return X, y


def cmd_predict(args, out):
    model = _load_model(args.model)
    X, _ = _model_data(args, model)
    pred = model.predict(X)
    lines = (f"{v}\n" if model.is_classifier else f"{float(v)!r}\n" for v in pred)
    if args.output is None:
        out.writelines(lines)
        return
    try:
        with open(args.output, "w") as fh:
            fh.writelines(lines)
    except OSError as exc:
        raise UserError(f"--output {args.output}: {exc.strerror or _first_line(exc)}") from None


def evaluate(model, X, y, notes=None):
    """{metric: value}: accuracy (+ AUC for two classes) or RMSE / MAE / R^2.

    Labels none of which is a class of the model raise UserError; ``notes`` (a
    list) receives a sentence for labels partly outside the model's classes and
    for an AUC that cannot be computed.
    """
    from sklearn import metrics

    notes = [] if notes is None else notes
    if model.is_classifier:
        y = np.asarray(y)
        if y.dtype.kind in "fc" and model.classes.dtype.kind in "iub":
            y = y.astype(model.classes.dtype) if np.all(y == np.round(y)) else y
        known = np.isin(y, model.classes)
        shown = ", ".join(map(str, model.classes[:10]))
        if not known.any():
            raise UserError(f"DATA labels ({', '.join(map(str, np.unique(y)[:10]))}) are "
                            f"disjoint from the model's classes ({shown}): wrong data or "
                            "a different label coding")
        if not known.all():
            notes.append(f"{int((~known).sum())} of {len(y)} rows have labels that are not "
                         f"classes of the model ({shown}); they count as errors")
        scores = {"accuracy": metrics.accuracy_score(y, model.predict(X))}
        if len(model.classes) == 2:
            if known.all() and len(np.unique(y)) == 2:
                scores["AUC"] = metrics.roc_auc_score(y == model.classes[1],
                                                      model.decision_function(X))
            else:
                notes.append("AUC not computed: it needs the labels of both classes and "
                             "no others")
        return scores
    y = np.asarray(y)
    if y.dtype.kind not in "biuf":
        raise UserError(f"DATA targets must be numbers for a {model.loss} model (a regressor), "
                        f"got labels of dtype {y.dtype}")
    pred = model.predict(X)
    return {"RMSE": math.sqrt(metrics.mean_squared_error(y, pred)),
            "MAE": metrics.mean_absolute_error(y, pred), "R2": metrics.r2_score(y, pred)}


def cmd_evaluate(args, out):
    model = _load_model(args.model)
    X, y = _model_data(args, model)
    notes = []
    for name, value in evaluate(model, X, y, notes).items():
        print(f"{name:9s}{value:.6f}", file=out)
    for note in notes:
        print(f"fastrisk: note: {note}", file=sys.stderr)


def cmd_info(args, out):
    m = _load_model(args.model)
    rows = [("format", f"fastrisk linear model, written by fastrisk {m.fastrisk_version}"),
            ("loss", m.loss + ("" if m.loss_param is None else f" (param {m.loss_param:g})")),
            ("penalty", m.penalty), ("alpha", f"{m.alpha:g}"), ("solver", m.solver),
            *[(k, f"{v:g}") for k, v in (("l1_ratio", m.l1_ratio), ("p", m.p)) if v is not None],
            ("trained on", f"{m.n_samples} x {m.n_features}"),
            *([("features", " ".join(m.feature_names[:20])
                + (" ..." if len(m.feature_names) > 20 else ""))]
              if m.feature_names is not None else []),
            ("classes", "-" if m.classes is None else " ".join(map(str, m.classes[:20]))),
            ("coef", f"shape {m.coef.shape}, {int(np.count_nonzero(m.coef))} nonzeros")]
    rows += [(k, f"{v:.8g}" if isinstance(v, float) else str(v)) for k, v in m.info.items()]
    width = max(18, max(len(k) for k, _ in rows) + 1)
    for k, v in rows:
        print(f"{k:{width}s}{v}", file=out)


def cmd_demo(args, out):
    """a9a, logistic loss, l2, alpha=1e-4: live progress, test accuracy, a solver comparison."""
    import fastrisk as fr
    from fastrisk.datasets import load_a9a
    from fastrisk.estimators import LinearClassifier

    _check_plot(args)
    X, y, X_test, y_test = load_a9a()
    loss, alpha = "logistic", 1e-4
    print(f"a9a (bundled): {X.shape[0]} training and {X_test.shape[0]} test rows, {X.shape[1]} "
          f"features\nmodel: {loss} loss, l2 penalty, alpha = {alpha:g}, intercept; "
          "solver='auto'", file=out)
    est = LinearClassifier(loss=loss, alpha=alpha, solver="auto", tol=1e-6, random_state=0)
    progress = Progress("training", stream=out)
    est.set_params(callback=progress)
    start = time.perf_counter()
    est.fit(X, y)
    elapsed = time.perf_counter() - start
    progress.done()
    print(f"solver '{est.solver_}' ({est.status_}, {est.n_iter_} iterations, {elapsed:.2f} s): "
          f"J(w) = {est.objective_:.8f}, certified gap {est.gap_:.2e}", file=out)
    print(f"test accuracy: {est.score(X_test, y_test):.4f}\n", file=out)

    print(f"solver comparison on the same problem (time limit {args.time_limit:g} s each, "
          f"tol 1e-6):", file=out)
    problem = fr.Problem(X, y, loss=loss, alpha=alpha, fit_intercept=True)
    rows, runs = [], {}
    for name in [info.name for info in solvers_for(problem)]:
        try:
            start = time.perf_counter()
            res = fr.solve(problem, solver=name, tol=1e-6, time_limit=args.time_limit,
                           random_state=0)
            rows.append((name, time.perf_counter() - start, res))
            runs[name] = res.history
        except (ImportError, ValueError, NotImplementedError) as exc:
            rows.append((name, None, str(exc).splitlines()[0][:50]))
    best = min((r.objective for _, t, r in rows if t is not None), default=math.nan)
    print(f"{'solver':14s}{'seconds':>9s}{'iters':>7s}{'J(w)':>13s}{'rel. gap':>10s}"
          f"{'bound':>10s}  status", file=out)
    for name, seconds, res in rows:
        if seconds is None:
            print(f"{name:14s}  not available ({res})", file=out)
            continue
        bound = "-" if math.isnan(res.gap) else f"{res.gap:.1e}"
        name = f"{name} (auto)" if name == est.solver_ else name
        print(f"{name:14s}{seconds:9.2f}{res.n_iter:7d}{res.objective:13.8f}"
              f"{(res.objective - best) / best:10.1e}{bound:>10s}  {res.status}", file=out)
    print("rel. gap: (J(w) - best J) / best J; bound: the solver's certified bound on J(w) - J* "
          "('-': none)", file=out)
    certified = [(t, name) for name, t, r in rows
                 if t is not None and r.status == "converged" and not math.isnan(r.gap)]
    if certified:
        print(f"fastest to a certified tol 1e-6 here: {min(certified)[1]}; solver='auto' picked "
              f"{est.solver_!r} by the rule of fastrisk/solvers/auto.py (measured at tol 1e-3 "
              "over the benchmark grid of benchmarks/compare_binary.py)", file=out)
    if args.plot and runs:
        plot_convergence(runs, args.plot, f"a9a, {loss} / l2, alpha={alpha:g}")
        print(f"convergence plot written to {args.plot}", file=out)


# ---- argument parsing -------------------------------------------------------------------


def _positive_float(name):
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not value > 0 or not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{name} must be a finite number > 0, got {text}")
        return value

    return parse


def _int_in(name, low, high=None):
    """An argparse type: an integer from ``low`` to ``high`` (None: no upper bound)."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{name} must be >= {low}, got {text}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"{name} must be at most {high}, got {text}")
        return value

    return parse


def _positive_int(name):
    return _int_in(name, 1)


def _solver_list(text):
    names = [s for s in text.split(",") if s]
    for s in names:
        if s not in SOLVERS:
            raise argparse.ArgumentTypeError(f"unknown solver {s!r}; choose from {sorted(SOLVERS)}")
    return names


def build_parser():
    parser = argparse.ArgumentParser(
        prog="fastrisk", description="Regularized risk minimization for linear models.")
    from fastrisk import __version__

    parser.add_argument("--version", action="version", version=f"fastrisk {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("train", help="fit a model on DATA and save it")
    p.add_argument("data", metavar="DATA", help="svmlight/libsvm file (may be compressed) or .npz")
    p.add_argument("-o", "--output", required=True, metavar="MODEL", help="model file to write")
    p.add_argument("--n-features", type=_positive_int("--n-features"), default=None,
                   help="width of X (svmlight files: default the largest index present)")
    p.add_argument("--loss", default="hinge", choices=sorted(LOSSES), metavar="LOSS",
                   help=f"one of {', '.join(sorted(LOSSES))} (default hinge)")
    p.add_argument("--penalty", default="l2", choices=sorted(PENALTIES), help="default l2")
    p.add_argument("--alpha", type=_positive_float("--alpha"), default=1e-4,
                   help="regularization strength, as SGDClassifier's alpha (default 1e-4)")
    with_param = ", ".join(f"{name} {spec.param[0]}" for name, spec in sorted(LOSSES.items())
                           if spec.param is not None)
    p.add_argument("--loss-param", type=float, default=None,
                   help=f"loss parameter ({with_param})")
    p.add_argument("--l1-ratio", type=float, default=0.15, help="elastic net mixing (default 0.15)")
    p.add_argument("--p", type=float, default=2.0, help="exponent of the lp penalty (default 2)")
    p.add_argument("--solver", default="auto", choices=["auto", *sorted(SOLVERS)], metavar="SOLVER",
                   help=f"auto or one of {', '.join(sorted(SOLVERS))} (default auto)")
    p.add_argument("--tol", type=_positive_float("--tol"), default=1e-4,
                   help="relative certified bound on J(w) - J* to stop at (default 1e-4)")
    p.add_argument("--max-iter", type=_positive_int("--max-iter"), default=None)
    p.add_argument("--time-limit", type=_positive_float("--time-limit"), default=None,
                   help="seconds")
    p.add_argument("--no-intercept", action="store_true", help="fit no intercept")
    p.add_argument("--threads", type=_int_in("--threads", 1, MAX_THREADS), default=None,
                   help="threads (default all cores)")
    p.add_argument("--seed", type=_int_in("--seed", 0, 2**32 - 1), default=0,
                   help="random seed of stochastic solvers (0 to 2**32 - 1)")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="Dask scheduler (tcp://host:8786): compute the risk oracle on its "
                        "workers (solvers auto, "
                        f"{', '.join(n for n in sorted(SOLVERS) if SOLVERS[n].oracle_only)})")
    p.add_argument("--partitions", type=_positive_int("--partitions"), default=None,
                   metavar="N", help="row partitions of the risk oracle (default 1, with "
                                     "--scheduler the number of worker threads)")
    p.add_argument("--plot", metavar="PNG", help="write a convergence plot (needs matplotlib)")
    p.add_argument("--compare", type=_solver_list, default=[], metavar="S1,S2",
                   help="also run these solvers on the same problem and add them to --plot")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("predict", help="print one prediction per row of DATA")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("data", metavar="DATA")
    p.add_argument("-o", "--output", metavar="OUT", help="write to this file instead of stdout")
    p.add_argument("--n-features", type=_positive_int("--n-features"), default=None,
                   help="width of DATA (svmlight files: default the largest index present)")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("evaluate", help="accuracy and AUC, or RMSE, MAE and R^2, on DATA")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("data", metavar="DATA")
    p.add_argument("--n-features", type=_positive_int("--n-features"), default=None,
                   help="width of DATA (svmlight files: default the largest index present)")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("info", help="describe a model file")
    p.add_argument("model", metavar="MODEL")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("demo", help="train on the bundled a9a and compare solvers")
    p.add_argument("--time-limit", type=_positive_float("--time-limit"), default=2.0,
                   help="seconds per solver in the comparison (default 2)")
    p.add_argument("--plot", metavar="PNG", help="write a convergence plot (needs matplotlib)")
    p.set_defaults(func=cmd_demo)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"fastrisk: warning: {_first_line(message)}", file=sys.stderr)


def main(argv=None, out=None):
    """Entry point of the ``fastrisk`` script; returns the exit status."""
    out = sys.stdout if out is None else out
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            # the library's and scikit-learn's warnings (a solver that stopped short of
            # tol, an undefined metric) on one line like the notes, without Python's
            # source line; FASTRISK_DEBUG=1 keeps Python's format
            if not os.environ.get("FASTRISK_DEBUG"):
                warnings.showwarning = _show_warning
            args.func(args, out)
    except UserError as exc:
        print(f"fastrisk: error: {exc}", file=sys.stderr)
        return 1
    except (ValueError, TypeError, FloatingPointError) as exc:
        # validation errors of the library name the argument at fault;
        # FASTRISK_DEBUG=1 shows the traceback instead
        if os.environ.get("FASTRISK_DEBUG"):
            raise
        print(f"fastrisk: error: {_first_line(exc)}", file=sys.stderr)
        return 1
    except MemoryError as exc:  # e.g. an .npz whose shape claims 2**40 features
        print(f"fastrisk: error: not enough memory for this problem ({exc})", file=sys.stderr)
        return 1
    except BrokenPipeError:  # output piped into a command that stopped reading (head)
        sys.stdout = open(os.devnull, "w")
        return 0
    except OSError as exc:  # a file the library reads or writes (the message names it)
        if os.environ.get("FASTRISK_DEBUG"):
            raise
        print(f"fastrisk: error: {_first_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nfastrisk: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
