"""Fuzz suite: every public entry point on malformed, extreme and unusual inputs.

Each case must end in a clear error -- ``ValueError`` or ``TypeError`` whose
message names the argument at fault -- or in a finite result that is checked
against an independent NumPy computation on the same data (objective values,
scores, predictions).  Never a crash, a hang or another exception type.  Valid input
must give a result: the only errors allowed on it are a documented refusal (a solver's
own, for a loss or penalty it does not take) and, where values are huge or the loss
(exponential, Poisson) genuinely overflows, a FloatingPointError telling what to change.

Entry points: ``Problem`` + ``fastrisk.solve`` with every solver of
``fastrisk.SOLVERS``; ``LinearClassifier`` / ``LinearRegressor`` ``fit``,
``partial_fit``, ``predict`` and ``decision_function``; the svmlight reader on
mutated bytes (against a line-by-line reference parser written here);
``fastrisk.load`` on truncated and edited model files; the command line
(``fastrisk.cli.main``, in process).

Inputs: CSR matrices with out-of-range (``n_features`` itself included),
negative, unsorted or duplicate indices, bad ``indptr`` (decreasing, past the
end, wrong length, not starting at 0), explicit zeros, index arrays of mixed
or unsigned dtypes; CSC / COO / sparse arrays; NaN and infinity in X, y,
sample weights and hyperparameters; empty data, one row, one column, one
class; huge and tiny values; float16, integer, bool, complex and object
dtypes; Fortran-ordered, strided and read-only arrays.

Deterministic: hypothesis runs with ``derandomize=True`` and a fixed example
budget per test (``FUZZ_EXAMPLES`` below).  For a longer search set the
environment variable, e.g.

    FASTRISK_FUZZ_EXAMPLES=2000 python -m pytest -q tests/test_fuzz.py

(each test then draws that many examples; still derandomized unless
``FASTRISK_FUZZ_SEED`` is set too, which seeds hypothesis with that integer).
A crash of the interpreter is a failure of the whole run; run the module in a
subprocess (as pytest does in CI) to see which test it was.
"""

import collections
import contextlib
import io
import json
import math
import os
import warnings
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import fastrisk as fr
from fastrisk.cli import main as cli_main
from fastrisk.data import check_sparse_structure
from fastrisk.losses import LOSSES

FUZZ_EXAMPLES = int(os.environ.get("FASTRISK_FUZZ_EXAMPLES", "100"))
_SEED = os.environ.get("FASTRISK_FUZZ_SEED")
FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    derandomize=_SEED is None,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def fuzz(test):
    test = FUZZ(test)
    return seed(int(_SEED))(test) if _SEED is not None else test


# ---- inputs ----------------------------------------------------------------------------

MALFORMATIONS = ("none", "index_eq_d", "index_big", "index_neg", "unsorted", "duplicate",
                 "indptr_decreasing", "indptr_past_end", "indptr_short", "indptr_start",
                 "mixed_itype", "uint_indices", "explicit_zero")
INVALID_STRUCTURE = {"index_eq_d", "index_big", "index_neg", "unsorted", "duplicate",
                     "indptr_decreasing", "indptr_past_end", "indptr_short", "indptr_start"}
SPECIAL = {"none": None, "nan": np.nan, "inf": np.inf, "-inf": -np.inf, "huge": 1e30,
           "tiny": 1e-300}


class Case:
    """A drawn X: the object passed in, its dense float64 values when it is valid input
    (None otherwise), why it is invalid, and whether its values are extreme."""

    def __init__(self, X, dense, invalid=None, extreme=False):
        self.X, self.dense, self.invalid, self.extreme = X, dense, invalid, extreme

    def __repr__(self):
        kind = type(self.X).__name__
        return f"Case({kind} {getattr(self.X, 'shape', '?')}, invalid={self.invalid})"


def _corrupt_csr(X, how, rng):
    """Replace X's arrays in place (bypassing scipy's checks, as a user's code could)."""
    indices, indptr, data = X.indices.copy(), X.indptr.copy(), X.data.copy()
    n, d = X.shape
    nonempty = np.flatnonzero(np.diff(indptr) > 0)
    if how in ("index_eq_d", "index_big", "index_neg") and X.nnz:
        k = rng.integers(X.nnz)
        indices[k] = {"index_eq_d": d, "index_big": 10**8, "index_neg": -1}[how]
        if how == "index_big":
            indices = indices.astype(np.int64)
            indptr = indptr.astype(np.int64)
    elif how in ("unsorted", "duplicate"):
        rows = [r for r in nonempty if indptr[r + 1] - indptr[r] >= 2]
        if not rows:
            return False
        r = rows[rng.integers(len(rows))]
        a, b = indptr[r], indptr[r + 1]
        if how == "unsorted":
            indices[a:b] = indices[a:b][::-1]
        else:
            indices[a + 1] = indices[a]
    elif how == "indptr_decreasing" and n >= 2 and X.nnz:
        r = rng.integers(1, n)
        indptr[r] = indptr[-1] + 1 if indptr[r] == 0 else -1
    elif how == "indptr_past_end":
        indptr[-1] += 1 + rng.integers(100)
    elif how == "indptr_short":
        indptr = indptr[:-1]
    elif how == "indptr_start" and X.nnz:
        indptr[0] = 1
    elif how == "mixed_itype":
        indices = indices.astype(np.int64)
        indptr = indptr.astype(np.int32)
    elif how == "uint_indices":
        indices = indices.astype(np.uint32)
        indptr = indptr.astype(np.uint64)
    elif how == "explicit_zero" and np.isfinite(data).any():
        # a finite entry: zeroing a NaN or infinity would make valid the X drawn invalid
        finite = np.flatnonzero(np.isfinite(data))
        data[finite[rng.integers(finite.size)]] = 0.0
    else:
        return False
    X.indices, X.indptr, X.data = indices, indptr, data
    return True


VALID_MALFORMATIONS = ("none", "mixed_itype", "uint_indices", "explicit_zero")
INVALID_KINDS = ("special", "dtype", "empty", "structure")


@st.composite
def matrices(draw, mode="any", min_rows=1, min_cols=1):
    """A Case: ``mode`` "valid" (finite real values, possibly extreme), "invalid" (one
    defect: NaN/inf, complex/object dtype, empty, or a malformed CSR) or "any"."""
    if mode == "any":
        mode = draw(st.sampled_from(["valid", "valid", "invalid"]))
    defect = draw(st.sampled_from(INVALID_KINDS)) if mode == "invalid" else None
    empty = defect == "empty"
    n = 0 if empty and draw(st.booleans()) else draw(st.integers(min_rows, 7))
    d = 0 if empty and n else draw(st.integers(min_cols, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    dense = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.6)
    specials = ["nan", "inf", "-inf"] if defect == "special" else ["none"] * 4 + ["huge", "tiny"]
    special = draw(st.sampled_from(specials))
    dtypes = ["object", "complex"] if defect == "dtype" else ["float64", "float32", "float16",
                                                               "int64", "bool"]
    dtype = draw(st.sampled_from(dtypes))
    if SPECIAL[special] is not None and dense.size:  # float16: huge is its largest value
        huge = dtype == "float16" and special == "huge"
        dense.flat[rng.integers(dense.size)] = 6e4 if huge else SPECIAL[special]
    if dtype in ("int64", "bool"):
        dense = np.nan_to_num(dense, posinf=0, neginf=0).round().clip(-3, 3)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        values = dense.astype(dtype)
        reference = values.astype(np.float64) if dtype != "complex" else None
    invalid = None
    if dtype == "complex":
        invalid = "dtype"
    elif not np.isfinite(reference).all():
        invalid = "nan"
    elif n == 0 or d == 0:
        invalid = "empty"
    elif dtype == "object":
        invalid = "object"  # the library refuses it; scikit-learn's validation converts it
    layouts = ["csr", "csr_array"] if defect == "structure" else [
        "dense", "fortran", "strided", "csr", "csc", "coo", "csr_array", "list"]
    layout = draw(st.sampled_from(layouts))
    if dtype in ("object", "float16") and layout not in ("dense", "list"):
        layout = "dense"
    if layout == "dense":
        X = values
    elif layout == "fortran":
        X = np.asfortranarray(values)
    elif layout == "strided":
        wide = np.zeros((n, 2 * d), dtype=values.dtype)
        wide[:, ::2] = values
        X = wide[:, ::2]
    elif layout == "list":
        X = values.tolist()
        if invalid == "object":
            invalid = None  # a list of Python floats
    else:
        X = {"csr": sp.csr_matrix, "csc": sp.csc_matrix, "coo": sp.coo_matrix,
             "csr_array": sp.csr_array}[layout](values)
    if draw(st.booleans()) and isinstance(X, np.ndarray):
        X.flags.writeable = False
    if layout in ("csr", "csr_array"):
        how = draw(st.sampled_from(sorted(INVALID_STRUCTURE) if defect == "structure"
                                   else VALID_MALFORMATIONS))
        if _corrupt_csr(X, how, rng):
            if how in INVALID_STRUCTURE:
                invalid = invalid or how
            elif how == "explicit_zero" and invalid is None:
                reference = np.zeros((n, d))
                for i in range(n):
                    for k in range(X.indptr[i], X.indptr[i + 1]):
                        reference[i, X.indices[k]] = X.data[k]
        if draw(st.booleans()):
            for a in (X.data, X.indices, X.indptr):
                a.flags.writeable = False
    return Case(X, reference if invalid in (None, "object") else None, invalid,
                extreme=special in ("huge", "tiny"))


def labels(m, task, rng, kind):
    """y for ``task`` with ``kind``: valid, nan, one class, strings, 2-d, wrong length."""
    if task == "binary" or task == "multiclass":
        k = 2 if task == "binary" else 3
        y = np.arange(m) % k if m else np.zeros(0)
        rng.shuffle(y)
        y = y.astype(float) * 2 - 1 if task == "binary" else y
    else:
        y = rng.normal(size=m)
        if task == "counts":
            y = np.abs(y).round()
    if kind == "nan" and m:
        y = y.astype(float)
        y[0] = np.nan
    elif kind == "one_class":
        y = np.ones(m)
    elif kind == "strings":
        y = np.array(["a", "b", "c"])[np.arange(m) % (2 if task == "binary" else 3)]
    elif kind == "wrong_length":
        y = np.resize(y, m + 1)
    elif kind == "two_d":
        y = np.column_stack([y, y])
    return y


HYPER_VALUES = [1e-3, 1.0, 0.0, -5.0, np.nan, np.inf, 1e300, 1e-300, "a", True, None]


def _finite(x):
    return np.all(np.isfinite(np.asarray(x, dtype=np.float64)))


def outcome(call, must_fail, names=(), extreme=False, refusal=None):
    """Run call() and judge how it ended.

    ``must_fail``: True for invalid input, which must end in a clear error -- a
    ValueError or TypeError naming one of ``names``; False for valid input, which must
    return a value, the only error allowed being one that ``refusal`` (a predicate on
    the message, or None for no refusal) recognizes as documented; None where either
    outcome is right (an edited file that may still be a valid model).  ``extreme``:
    huge values may legitimately overflow a loss, which the library reports as a
    FloatingPointError telling what to change.

    Returns the call's value, or None when it raised an error allowed here.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = call()
    except (ValueError, TypeError) as exc:
        message = str(exc)
        assert message, "an error without a message"
        if must_fail is False and not (refusal is not None and refusal(message)):
            raise
        if names and must_fail:
            assert any(n in message for n in names), f"{message!r} names none of {names}"
        return None
    except FloatingPointError as exc:
        assert extreme, f"FloatingPointError on ordinary input: {exc}"
        assert "scale" in str(exc) or "alpha" in str(exc) or "step" in str(exc), str(exc)
        return None
    assert not must_fail, f"accepted invalid input, returned {value!r:.200}"
    return value


# ---- Problem + solve ----------------------------------------------------------------------

def reference_penalty(regularizer, w):
    """Omega(w) in NumPy from its definition (docs/math.md §1, fastrisk/regularizers.py)."""
    name = regularizer.name
    if name == "l2":
        return 0.5 * np.dot(w, w)
    if name == "l1":
        return np.abs(w).sum()
    if name == "elasticnet":
        r = regularizer.l1_ratio
        return r * np.abs(w).sum() + 0.5 * (1.0 - r) * np.dot(w, w)
    if name == "lp":
        p = regularizer.p
        return np.sum(np.abs(w) ** p) ** (2.0 / p) / (2.0 * (p - 1.0))
    raise AssertionError(f"no NumPy reference for penalty {name!r}: add one here")


def reference_objective(problem, dense, y_encoded, w, loss, alpha, c):
    """alpha Omega(w) + (1/m) sum_i c_i l(<w, x_i>, y_i) in NumPy on the dense matrix."""
    m, d = dense.shape
    bias = problem.data.bias
    if LOSSES[loss].vector:
        k = problem.n_classes
        W = w.reshape(k, -1)
        F = dense @ W[:, :d].T + (bias * W[:, -1] if bias else 0.0)
        rows = np.arange(m)
        if loss == "softmax":
            values = np.logaddexp.reduce(F, axis=1) - F[rows, y_encoded]
        elif loss == "multiclass_hinge":  # max_j F_j - F_y + [j != y]
            values = (F - F[rows, y_encoded][:, None]
                      + (np.arange(k) != y_encoded[:, None])).max(axis=1)
        else:
            raise AssertionError(f"no NumPy reference for loss {loss!r}: add one here")
    else:
        f = dense @ w[:d] + (bias * w[-1] if bias else 0.0)
        values = LOSSES[loss].reference(f, y_encoded, problem.loss.param)[0]
    c = np.ones(m) if c is None else c
    return alpha * reference_penalty(problem.regularizer, w) + np.sum(c * values) / m


def solve_case(solver, fault, loss, penalty, intercept, seed_, data):
    """One input at fault at a time (or none): an error naming it, or a result whose
    objective the NumPy reference on the dense matrix confirms.  Returns how the case
    ended, "objective checked" when that reference was compared."""
    rng = np.random.default_rng(seed_)
    classes = LOSSES[loss].task in ("binary", "multiclass")
    # one row holds one class, a fault of y that fault="y" draws
    case = data.draw(matrices("invalid" if fault == "X" else "valid",
                              min_rows=2 if classes and fault == "none" else 1), label="case")
    y_kind = data.draw(st.sampled_from(["nan", "one_class", "strings", "wrong_length", "two_d"]
                                       if fault == "y" else ["valid", "strings"] if classes
                                       else ["valid"]), label="y")
    weights = data.draw(st.sampled_from(["nan", "negative", "zeros", "short"] if fault ==
                                        "weights" else ["none", "ones", "random"]),
                        label="weights")
    alpha = data.draw(st.sampled_from([0.0, -5.0, np.nan, np.inf, "a", True, None]
                                      if fault == "alpha" else [1e-3, 1.0, 3, 1e300, 1e-300]),
                      label="alpha")
    m = np.shape(case.X)[0] if hasattr(case.X, "shape") else len(case.X)
    task = LOSSES[loss].task
    y = labels(m, task, rng, y_kind)
    c = {"none": None, "ones": np.ones(m), "random": rng.random(m) + 0.1,
         "nan": np.r_[np.nan, np.ones(max(m - 1, 0))], "negative": -np.ones(m),
         "zeros": np.zeros(m), "short": np.ones(m + 1)}[weights]
    bad_alpha = fault == "alpha"
    # a classification task needs two classes: one row (or y_kind "one_class") has one
    bad_y = y_kind in ("nan", "wrong_length", "two_d") or (
        task in ("binary", "multiclass") and len(np.unique(y)) < 2) or (
        y_kind == "strings" and task not in ("binary", "multiclass"))
    bad_c = weights in ("nan", "negative", "zeros", "short") and m > 0
    must_fail = case.invalid is not None or bad_alpha or bad_y or bad_c
    names = ["X"] if case.invalid else []
    names += ["alpha"] if bad_alpha else []
    names += ["y", "class"] if bad_y else []
    names += ["sample_weight"] if bad_c else []

    problem = outcome(lambda: fr.Problem(case.X, y, loss=loss, penalty=penalty, alpha=alpha,
                                         sample_weight=c, fit_intercept=intercept),
                      must_fail, names, case.extreme)
    if problem is None:
        return "error on invalid input" if must_fail else "overflow reported"
    # the one refusal of valid input: the solver's own, for a loss or penalty it does not
    # take (fastrisk.solve prefixes the solvers that would work)
    reason = fr.SOLVERS[solver].why_not(problem)
    extreme = case.extreme or alpha in (1e300, 1e-300)
    # the exponential and Poisson losses genuinely overflow for large scores, which the
    # solvers report as a FloatingPointError (docs/math.md §2)
    may_overflow = extreme or loss in ("exponential", "poisson")
    result = outcome(lambda: fr.solve(problem, solver=solver, max_iter=3, tol=1e-3,
                                      random_state=0),
                     False, extreme=may_overflow,
                     refusal=lambda message: reason is not None
                     and message.startswith(f"{reason}; "))
    if result is None:
        return "refused or overflow reported"
    assert result.w.shape == (problem.n_weights,)
    assert math.isnan(result.gap) or result.gap >= 0.0, result.gap  # J(w) - J* >= 0
    if extreme:
        return "extreme values: objective not compared"
    assert _finite(result.w), result.w
    expected = reference_objective(problem, case.dense, problem.y, result.w, loss,
                                   problem.alpha, problem.sample_weight)
    # the kernels read exactly the matrix given
    assert problem.objective(result.w) == pytest.approx(expected, rel=1e-6, abs=1e-9)
    return "objective checked"


# examples of each solver's run that must reach the NumPy objective check
MIN_CHECKED = max(1, FUZZ_EXAMPLES // 20)


@pytest.mark.parametrize("solver", sorted(fr.SOLVERS))
def test_problem_and_solve(solver):
    """solve_case on every loss and penalty the solver takes; at least MIN_CHECKED of the
    examples end in the NumPy objective check."""
    info = fr.SOLVERS[solver]
    endings = collections.Counter()

    @fuzz
    @given(fault=st.sampled_from(["none"] * 4 + ["X", "y", "weights", "alpha"]),
           loss=st.sampled_from(info.losses()), penalty=st.sampled_from(info.penalties()),
           intercept=st.booleans(), seed_=st.integers(0, 100), data=st.data())
    def run(fault, loss, penalty, intercept, seed_, data):
        endings[solve_case(solver, fault, loss, penalty, intercept, seed_, data)] += 1

    run()
    assert endings["objective checked"] >= MIN_CHECKED, dict(endings)


# ---- estimators ---------------------------------------------------------------------------

ONLINE = ["pegasos", "rda", "pgs"]


@fuzz
@given(train=matrices("valid", min_rows=4), test=matrices(min_rows=0, min_cols=0),
       regressor=st.booleans(), solver=st.sampled_from(["auto", "sdca", "lbfgs", *ONLINE]),
       y_kind=st.sampled_from(["valid"] * 3 + ["nan", "one_class", "strings"]),
       seed_=st.integers(0, 100), param=st.sampled_from(["alpha", "tol", "max_iter",
                                                         "intercept_scaling", "n_threads"]),
       value=st.sampled_from(HYPER_VALUES + [3, 10**9]))
def test_estimators(train, test, regressor, solver, y_kind, seed_, param, value):
    rng = np.random.default_rng(seed_)
    m = train.dense.shape[0]
    y = labels(m, "regression" if regressor else "binary", rng, y_kind)
    est = (fr.LinearRegressor if regressor else fr.LinearClassifier)(
        solver=solver, max_iter=5, alpha=1e-2, random_state=0)
    def positive(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < math.inf

    valid_param = {"alpha": positive,
                   "tol": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
                   and 0 <= v < math.inf,
                   "max_iter": lambda v: isinstance(v, int) and not isinstance(v, bool)
                   and 0 < v <= 10**9 or v is None,
                   "intercept_scaling": lambda v: positive(v) and v <= 1e154,
                   "n_threads": lambda v: v is None or isinstance(v, int)
                   and not isinstance(v, bool) and v >= 1}[param](value)
    if param == "max_iter" and valid_param and value not in (None, 3):
        value = 3  # a valid budget, kept small
    if param == "n_threads" and valid_param and value is not None:
        value = min(value, 2)
    est.set_params(**{param: value})
    bad_y = y_kind == "nan" or (y_kind == "one_class" and not regressor) or (
        y_kind == "strings" and regressor)
    fitted = outcome(lambda: est.fit(train.X, y), not valid_param or bad_y,
                     [param] + (["y", "class", "Input"] if bad_y else []),
                     extreme=param == "alpha" and value in (1e300, 1e-300))
    if fitted is None:
        return
    assert _finite(est.coef_) and _finite(est.intercept_)
    # predictions on another matrix: invalid or of another width must fail naming X; an
    # object array of numbers is converted by scikit-learn's validation, so is valid here
    width_ok = test.invalid in (None, "object") and test.dense.shape[1] == train.dense.shape[1]
    for method in ("decision_function", "predict"):
        if method == "decision_function" and regressor:
            continue
        out = outcome(lambda: getattr(est, method)(test.X),
                      not width_ok,
                      ["X", "features", "array", "complex"])
        if out is None:
            continue
        scores = test.dense @ np.atleast_2d(est.coef_).T + est.intercept_
        if method == "decision_function" or regressor:
            if not test.extreme:
                np.testing.assert_allclose(np.asarray(out, dtype=float).reshape(scores.shape),
                                           scores, rtol=1e-9, atol=1e-12)
        else:
            assert set(np.unique(out)) <= set(est.classes_)
    if solver in ONLINE and hasattr(est, "partial_fit"):
        args = {} if regressor else {"classes": est.classes_}
        # labels of the kind fit took (strings: the classes 'a' and 'b' fit fixed)
        test_y = labels(np.shape(test.X)[0] if test.invalid != "empty" or
                        hasattr(test.X, "shape") else 0,
                        "regression" if regressor else "binary", rng,
                        "strings" if y_kind == "strings" else "valid")
        outcome(lambda: est.partial_fit(test.X, test_y, **args), not width_ok or len(test_y) == 0,
                ["X", "features", "sample", "Found array with 0"], extreme=test.extreme)


# ---- svmlight reader ------------------------------------------------------------------------

def reference_svmlight(text, zero_based="auto"):
    """A strict line-by-line reader: (dense rows as dicts, labels) or ValueError."""
    rows, labels_ = [], []
    for line in text.split(b"\n"):
        line = line.split(b"#", 1)[0].split()
        if not line:
            continue
        label = float(line[0])  # ValueError propagates
        if not math.isfinite(label):
            raise ValueError("label")
        feats = line[1:]
        if feats and feats[0].startswith(b"qid:"):
            feats = feats[1:]
        row = {}
        for tok in feats:
            parts = tok.split(b":")
            if len(parts) != 2 or b"_" in tok:
                raise ValueError("token")
            if not parts[0].isdigit():  # LIBSVM's format: an index is digits alone
                raise ValueError("index")
            idx, val = int(parts[0]), float(parts[1])
            if idx > 2**31 - 1 or not math.isfinite(val):
                raise ValueError("index or value")
            if idx in row:
                raise ValueError("duplicate")
            row[idx] = val
        rows.append(row)
        labels_.append(label)
    if not rows:
        raise ValueError("no data")
    has_zero = any(0 in r for r in rows)
    if not (zero_based is True or (zero_based == "auto" and has_zero)):
        if has_zero:
            raise ValueError("index 0")
        rows = [{k - 1: v for k, v in r.items()} for r in rows]
    return rows, labels_


SVM_ALPHABET = b"0123456789:. \n#-+eqidnafx\r\t\x00\xff"


@fuzz
@given(seed_=st.integers(0, 2**16), n_edits=st.integers(0, 6),
       zero_based=st.sampled_from(["auto", True, False]), suffix=st.sampled_from(["", ".gz"]),
       data=st.data())
def test_svmlight_reader_on_mutated_bytes(tmp_path_factory, seed_, n_edits, zero_based, suffix,
                                          data):
    rng = np.random.default_rng(seed_)
    X = sp.random(5, 6, density=0.5, format="csr", random_state=seed_)
    buf = io.BytesIO()
    path = tmp_path_factory.mktemp("svm") / f"f.svm{suffix}"
    fr.dump_svmlight(X, rng.choice([-1.0, 1.0, 2.5], 5), path)
    raw = (gzip_read(path) if suffix else path.read_bytes())
    raw = bytearray(raw)
    for _ in range(n_edits):
        pos = data.draw(st.integers(0, len(raw)))
        op = data.draw(st.sampled_from(["flip", "insert", "delete"]))
        char = SVM_ALPHABET[data.draw(st.integers(0, len(SVM_ALPHABET) - 1))]
        if op == "insert" or not raw:
            raw.insert(pos, char)
        elif op == "delete":
            del raw[min(pos, len(raw) - 1)]
        else:
            raw[min(pos, len(raw) - 1)] = char
    write_maybe_gz(path, bytes(raw))
    del buf
    try:
        expected = reference_svmlight(bytes(raw), zero_based)
    except (ValueError, OverflowError):
        expected = None
    got = outcome(lambda: fr.load_svmlight(path, zero_based=zero_based), expected is None,
                  [str(path), "line"])
    if got is None:
        return
    Xr, yr = got
    check_sparse_structure(Xr)
    assert Xr.has_canonical_format and _finite(Xr.data) and _finite(yr)
    rows, labs = expected
    np.testing.assert_array_equal(yr, labs)
    width = max([max(r) + 1 for r in rows if r] + [1])
    assert Xr.shape == (len(rows), width)
    dense = np.zeros(Xr.shape)
    for i, r in enumerate(rows):
        for j, v in r.items():
            dense[i, j] = v
    np.testing.assert_array_equal(Xr.toarray(), dense)


def gzip_read(path):
    import gzip

    with gzip.open(path, "rb") as fh:
        return fh.read()


def write_maybe_gz(path, raw):
    import gzip

    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as fh:
        fh.write(raw)


# ---- model files ----------------------------------------------------------------------------

def _saved_model(tmp_path_factory):
    rng = np.random.default_rng(0)
    model = fr.LinearModel(rng.normal(size=(3, 4)), rng.normal(size=3),
                           classes=np.array([1, 5, 9]), loss="softmax", penalty="l2",
                           alpha=1e-3, solver="lbfgs", n_samples=10, info={"gap": 0.5})
    path = tmp_path_factory.mktemp("model") / "m.frm"
    model.save(path)
    return model, path


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True)
    | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3),
                                                                       children, max_size=3),
    max_leaves=6)


@fuzz
@given(how=st.sampled_from(["truncate", "flip", "meta_value", "meta_replace", "member_swap",
                            "deep_json"]),
       pos=st.floats(0, 1), byte=st.integers(0, 255), key=st.sampled_from(
           ["loss", "loss_param", "penalty", "alpha", "solver", "n_samples", "n_features",
            "info", "arrays", "format_version", "fastrisk_version"]), value=JSON_VALUES)
def test_load_edited_model_files(tmp_path_factory, how, pos, byte, key, value):
    model, path = _saved_model(tmp_path_factory)
    raw = bytearray(path.read_bytes())
    if how == "truncate":
        raw = raw[: int(pos * len(raw))]
    elif how == "flip":
        raw[min(int(pos * len(raw)), len(raw) - 1)] = byte
    if how in ("truncate", "flip"):
        path.write_bytes(bytes(raw))
    else:
        with zipfile.ZipFile(path) as z:
            members = {n: z.read(n) for n in z.namelist()}
        meta = json.loads(np.load(io.BytesIO(members["meta.npy"])).tobytes())
        if how == "meta_value":
            meta[key] = value
            text = json.dumps(meta).encode()
        elif how == "meta_replace":
            text = json.dumps(value).encode()
        elif how == "deep_json":
            text = b"[" * int(1000 + pos * 200000) + b"]" * int(1000 + pos * 200000)
        if how == "member_swap":
            members["coef.npy"], members["intercept.npy"] = (members["intercept.npy"],
                                                             members["coef.npy"])
        else:
            npy = io.BytesIO()
            np.save(npy, np.frombuffer(text, dtype=np.uint8))
            members["meta.npy"] = npy.getvalue()
        with zipfile.ZipFile(path, "w") as z:
            for n, b in members.items():
                z.writestr(n, b)
    loaded = outcome(lambda: fr.load(path), None)
    if loaded is None:
        return
    # what loads predicts like the original (arrays are checksummed) with valid settings
    X = np.random.default_rng(1).normal(size=(5, 4))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert math.isfinite(loaded.alpha) and loaded.alpha > 0 and loaded.loss in LOSSES


# ---- command line -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def cli_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("clifuzz")
    rng = np.random.default_rng(0)
    X = sp.random(30, 6, density=0.5, format="csr", random_state=0)
    y = np.where(rng.random(30) < 0.5, 1.0, -1.0)
    fr.dump_svmlight(X, y, root / "good.svm")
    (root / "bad.svm").write_bytes(b"1 1:2\n2 3:x\n")
    (root / "dup.svm").write_bytes(b"1 1:2 1:3\n-1 2:1\n")
    (root / "huge.svm").write_bytes(b"1 1:2\n-1 1099511627776:1\n")
    (root / "empty.svm").write_bytes(b"")
    np.savez(root / "good.npz", data=X.data, indices=X.indices, indptr=X.indptr,
             shape=np.array(X.shape), y=y)
    np.savez(root / "badcsr.npz", data=X.data, indices=X.indices + 3, indptr=X.indptr,
             shape=np.array(X.shape), y=y)
    np.savez(root / "wide.npz", data=X.data, indices=X.indices, indptr=X.indptr,
             shape=np.array([30, 2**40]), y=y)
    np.savez(root / "obj.npz", X=np.array([[1, None]], dtype=object), y=np.ones(1))
    np.savez(root / "dense_nan.npz", X=np.full((3, 6), np.nan), y=np.ones(3))
    fr.LinearClassifier(max_iter=5).fit(X, y).save(root / "model.frm")
    (root / "junk.frm").write_bytes(b"PK\x03\x04junk")
    return root


CLI_DATA = ["good.svm", "bad.svm", "dup.svm", "huge.svm", "empty.svm", "good.npz", "badcsr.npz",
            "wide.npz", "obj.npz", "dense_nan.npz", "missing.svm"]
CLI_NUMBERS = ["1e-3", "0", "-1", "nan", "inf", "1e308", "abc", "3", "1e-300", ""]


@fuzz
@given(command=st.sampled_from(["train", "predict", "evaluate", "info"]),
       data=st.sampled_from(CLI_DATA), model=st.sampled_from(["model.frm", "junk.frm",
                                                               "good.svm", "none.frm"]),
       options=st.lists(st.tuples(st.sampled_from(
           ["--alpha", "--tol", "--max-iter", "--loss-param", "--l1-ratio", "--p",
            "--n-features", "--threads", "--time-limit", "--seed", "--solver", "--loss",
            "--penalty"]), st.sampled_from(CLI_NUMBERS + ["sdca", "hinge", "l1", "bmrm"])),
           max_size=3))
def test_cli(cli_files, command, data, model, options):
    root = cli_files
    argv = [command]
    if command == "train":
        argv += [str(root / data), "-o", str(root / "out.frm"), "-q", "--max-iter", "3"]
        for opt, val in options:
            argv += [opt, val]
    elif command in ("predict", "evaluate"):
        argv += [str(root / model), str(root / data)]
    else:
        argv += [str(root / model)]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = cli_main(argv, out=io.StringIO())
        except SystemExit as exc:  # argparse: a bad option value
            assert exc.code == 2
            return
    assert code in (0, 1), (argv, code)
    if code == 1:
        lines = err.getvalue().strip().splitlines()
        assert lines and lines[-1].startswith("fastrisk: error:"), err.getvalue()
        assert "Traceback" not in err.getvalue()


def test_degenerate_problems_found_by_the_fuzzer():
    """Cases the fuzzer found, kept as plain regressions: each result checked against its
    closed form, each refusal by its message."""
    # all-zero X: every loss derivative multiplies a zero row, so w stays 0, and
    # J(0) = 0.5 (0 - 0.5)^2 = 0.125 exactly (no penalty at 0)
    prob = fr.Problem(np.zeros((1, 1)), [0.5], loss="squared", penalty="l1")
    res = fr.solve(prob, solver="truncated_gradient", max_iter=3)
    assert np.array_equal(res.w, [0.0])
    assert res.objective == 0.125 and prob.objective(res.w) == 0.125
    # alpha so large that w* = 0 and J* = R(0) = 1 for the hinge loss
    res = fr.solve(fr.Problem(np.array([[1.0], [2.0]]), [1, -1], loss="hinge",
                              penalty="elasticnet", alpha=1e300), solver="bmrm")
    assert res.status == "converged" and np.array_equal(res.w, [0.0]) and res.objective == 1.0
    # cuts whose entries span more than HiGHS's range of matrix entries: a clear error
    with pytest.raises(FloatingPointError, match="outside HiGHS's range"):
        fr.solve(fr.Problem(np.array([[1.0], [1e30]]), [1, -1], loss="hinge", penalty="l1",
                            alpha=1e-3), solver="bmrm")


# Failures the fuzzer found on valid input, kept as plain regressions: each minimal case
# ends as the fuzz requires of valid input (a result, or a FloatingPointError telling what
# to change).

def test_lp_penalty_overflows_as_the_l2_penalty_does():
    """pgs on penalty='lp' (p = 2, the l2 penalty) overflows where it does with
    penalty='l2', and says so with the same FloatingPointError (Lp's value is inf there,
    not Python's OverflowError)."""
    X, y = np.array([[1.0], [2.0]]), [1, -1]
    for penalty in ("l2", "lp"):
        with pytest.raises(FloatingPointError, match="scale X"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy's overflow warning on the way
            fr.solve(fr.Problem(X, y, loss="hinge", penalty=penalty, alpha=1e-300),
                     solver="pgs", max_iter=3, random_state=0)


def test_prox_bundle_runs_at_a_tiny_alpha():
    """s = alpha t + tau_{1:t} squared underflows near alpha 1e-300: ||w||^2 is then
    summed from w, and J of the result is its NumPy value."""
    X, y = np.array([[0.3], [-1.2]]), np.array([1.0, -1.0])
    res = fr.solve(fr.Problem(X, y, loss="hinge", alpha=1e-300), solver="prox_bundle",
                   max_iter=3)
    J = 0.5e-300 * float(res.w @ res.w) + np.maximum(0.0, 1.0 - y * (X @ res.w)).mean()
    assert res.objective == pytest.approx(J, rel=1e-12)


@pytest.mark.parametrize("solver, column, penalty, alpha", [
    ("pegasos", [1e10, 1.0], "l2", 1e-300), ("pgs", [1e10, 1.0], "l2", 1e-300),
    ("rda", [1e-160, 0.0], "l1", 1e-3)])
def test_an_overflowed_iterate_is_named_by_its_solver(solver, column, penalty, alpha):
    """An overflowed iterate is named by its solver (the oracle's 'w contains NaN or
    infinity' would blame the caller), or the run ends with a finite result."""
    prob = fr.Problem(np.array(column)[:, None], [1, -1], loss="hinge", penalty=penalty,
                      alpha=alpha)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fr.solve(prob, solver=solver, max_iter=3, random_state=0)
    except FloatingPointError as exc:
        assert str(exc).startswith(f"{solver}: "), exc
    else:
        assert _finite(res.w) and math.isfinite(res.objective)


@pytest.mark.parametrize("column", [[0.0, 0.0], [1e-300, 0.0]])
def test_rda_default_gamma_on_a_zero_or_tiny_x(column):
    """G^2 / 2000 is 0 (or underflows) when every row of X is 0 or tiny, where any
    gamma > 0 serves: the loss's gradients (0 or below the threshold alpha t) leave
    w = 0, and J(0) = R(0) = 1 for the hinge."""
    prob = fr.Problem(np.array(column)[:, None], [1, -1], loss="hinge", penalty="l1",
                      alpha=1e-3)
    res = fr.solve(prob, solver="rda", max_iter=3, random_state=0)
    assert np.array_equal(res.w, [0.0]) and res.objective == 1.0


def test_random_state_and_start_are_checked_by_name_for_every_solver():
    """random_state must be None, an integer >= 0 or a numpy Generator for every solver
    (those whose steps are not random too: fastrisk.solve checks it); a start that is not
    numbers is a ValueError naming start, not numpy's conversion error."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    yb, y3 = np.where(X[:, 0] > 0, 1.0, -1.0), np.arange(30) % 3
    problems = [fr.Problem(X, yb, loss="logistic", alpha=1e-2),
                fr.Problem(X, yb, loss="logistic", penalty="l1", alpha=1e-2),
                fr.Problem(X, yb, loss="hinge", alpha=1e-2),
                fr.Problem(X, y3, loss="softmax", alpha=1e-2)]
    for name, info in fr.SOLVERS.items():
        prob = next(p for p in problems if info.why_not(p) is None)
        for bad in ("abc", 1.5, -1, True):
            with pytest.raises(ValueError, match="random_state must be None, an integer"):
                fr.solve(prob, name, random_state=bad, max_iter=2)
        fr.solve(prob, name, random_state=np.random.default_rng(1), max_iter=2)
        if info.start == "w":
            for bad in (object(), "abc"):
                with pytest.raises(ValueError, match="start"):
                    fr.solve(prob, name, start=bad, max_iter=2)
