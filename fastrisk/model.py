"""LinearModel: a fitted linear model and its file format (npz + JSON, never pickle).

A model file is a NumPy ``.npz`` archive (a zip file) holding exactly these
members:

* ``meta``: the UTF-8 bytes of a JSON object (uint8 array) with the format
  name and version, the fastrisk version that wrote it, the loss and its
  parameter, the penalty and its parameter (``l1_ratio`` for "elasticnet",
  ``p`` for "lp"; null for the other), alpha, the solver, the training data
  shape and solver facts (``info``: objective, certified gap,
  iterations; JSON numbers, strings, booleans and nulls), and the SHA-256 of
  every array below;
* ``coef`` (float64, shape (n_features,) or (n_classes, n_features));
* ``intercept`` (float64, shape () or (n_classes,));
* ``classes`` (classifiers only; any non-object dtype: ints, floats, bools, strings).

Reading never unpickles and checks sizes before it reads any array: the
members must be stored uncompressed (as ``np.savez`` writes them), so no
member can expand beyond the file's own size; each member's ``.npy`` header
must describe exactly the bytes the zip directory gives it, and the shapes and
dtypes the metadata claims.  Then come the format version, the metadata's
fields (types, finite hyperparameters in range), the checksums and finite
coefficients.  A truncated or altered file raises ``ValueError`` naming the
file and what is wrong; when the zip, ``.npy`` header or JSON parser found the
fault, its exception is the ``__cause__``.  Arrays are stored as raw bytes, so a
round trip is bit-exact.

JSON has no NaN or infinity: a non-finite float is written as the string
"nan", "inf" or "-inf" (in ``info`` as well, so that every reader of the format
reads it as that float), and ``info_strings`` lists the keys of the ``info``
values that are strings spelled so, which load keeps strings.

Versions: ``load`` reads ``FORMAT_VERSION`` only and ignores metadata fields it
does not know.  A field that readers of the same version may ignore without
misreading the model is added without a new version and is optional on reading:
``l1_ratio``, ``p``, ``feature_names`` and ``info_strings`` are such fields.  A file
without ``feature_names`` loads a model without them; one without ``l1_ratio``
or ``p`` loads with None for them (not recorded: the objective and gap in its
``info`` refer to a value the file does not tell), and one without
``info_strings`` reads every "nan", "inf" and "-inf" in ``info`` as a float.

The model's values follow one set of rules, ``_check_model``: the constructor
applies them, ``save`` again (attributes may have been changed since, e.g.
coefficients that became NaN), and ``load`` through the constructor.  So a model
that constructs saves and loads back, and a file that loads holds a model the
constructor accepts.
"""

import hashlib
import json
import math
import numbers
import os
import struct
import tokenize
import zipfile

import numpy as np
from scipy.special import expit, softmax

FORMAT_NAME = "fastrisk-linear-model"
FORMAT_VERSION = 1
_ARRAYS = ("coef", "intercept", "classes")
MAX_META_BYTES = 1 << 20  # the JSON metadata; a model's is a few kB
_CLASS_KINDS = "iufbUS"  # numbers, bools, strings: no objects, no pickle


def _sha256(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


_NONFINITE = ("nan", "inf", "-inf")  # the floats JSON lacks, as _json_number writes them
# Python's json reads an integer of at most 4300 digits (its int-from-string limit) and
# writes none longer, so an info integer is below this bound in magnitude
_INFO_INT_BOUND = 10**4300


def _json_number(x):
    """Floats for JSON; NaN and inf are written as strings (JSON has no such numbers)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else repr(x)


def _from_json_number(x):
    """The inverse of ``_json_number`` (a JSON integer beyond the float range gives +-inf)."""
    if x is None:
        return None
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def scores_to_proba(f, loss):
    """Class probabilities from decision scores f: a binary loss (logistic) gives sigmoid(f)
    (one-vs-rest columns normalized to sum 1), a vector loss (softmax) softmax(f)."""
    from fastrisk.losses import LOSSES

    if f.ndim == 1:
        p = expit(f)
        return np.column_stack([1.0 - p, p])
    if LOSSES[loss].vector:
        return softmax(f, axis=1)
    # sigmoid(f_k) / sum_j sigmoid(f_j) as the softmax of log sigmoid(f) = -log(1 + e^-f):
    # every sigmoid underflows to 0 when all scores are below about -745, the ratio does not
    return softmax(-np.logaddexp(0.0, -f), axis=1)


def _real_array(a, name):
    """``a`` as a float64 array; numbers only (no strings or complex values to convert)."""
    try:
        a = np.asarray(a)
    except (TypeError, ValueError) as exc:  # ragged nested sequences
        raise TypeError(f"{name} must be an array of real numbers") from exc
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {a.dtype}")
    a = a.astype(np.float64, copy=False)
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return a


def _info_value(key, v):
    """One value of ``info`` as the JSON scalar it is saved as: None, bool, int, float or str
    (NumPy scalars become their Python equal); anything else raises TypeError, and an
    integer JSON cannot carry back (see ``_INFO_INT_BOUND``) or a real number beyond the
    float range raises ValueError."""
    if v is None or isinstance(v, (bool, np.bool_)):
        return v if v is None else bool(v)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, numbers.Integral):
        v = int(v)
        if not -_INFO_INT_BOUND < v < _INFO_INT_BOUND:
            raise ValueError(f"info[{key!r}] must be an integer of at most 4300 digits (what "
                             "a JSON reader reads back)")
        return v
    if isinstance(v, numbers.Real):
        try:
            return float(v)
        except OverflowError:  # e.g. a Fraction beyond the float range
            raise ValueError(f"info[{key!r}] is beyond the float range") from None
    raise TypeError(f"info[{key!r}] must be a number, string, bool or None, got "
                    f"{type(v).__name__}")


def _penalty_params(penalty, l1_ratio, p):
    """{"l1_ratio": ..., "p": ...} as the model keeps them: the parameter ``penalty`` takes,
    checked by its regularizer as the Problem checks it (None stays None: not recorded, as
    in a file without these fields), and None for the parameter it does not take
    (which the Problem ignores too, so the estimators' default for it is dropped)."""
    from fastrisk.regularizers import make_regularizer

    kept = {"l1_ratio": None, "p": None}
    name = make_regularizer(penalty).parameter  # the penalty's own record of its parameter
    value = {"l1_ratio": l1_ratio, "p": p}.get(name)
    if value is not None:
        kept[name] = getattr(make_regularizer(penalty, **{name: value}), name)
    return kept


def _check_model(coef, intercept, classes, loss, loss_param, penalty, alpha, solver, n_samples,
                 info, fastrisk_version, l1_ratio=None, p=None, feature_names=None):
    """The rules of a valid model: its attributes as a dict, or ValueError / TypeError naming
    the argument at fault.  ``LinearModel()`` applies them, and so ``load`` does too.

    A classifier (a loss whose task is binary or multiclass) has ``classes``: k >= 2
    distinct labels, with one score (coef of shape (n_features,)) for k = 2 or one score
    per class (coef of shape (k, n_features)); any other model (regression, counts,
    novelty) has no classes and one score.  ``l1_ratio`` and ``p``: see ``_penalty_params``.
    ``feature_names``: None, or one distinct string per feature (the columns of the
    training DataFrame, scikit-learn's ``feature_names_in_``).
    ``info`` holds JSON scalars only (see ``_info_value``).
    """
    from fastrisk import __version__
    from fastrisk.losses import Loss
    from fastrisk.problem import check_alpha
    from fastrisk.regularizers import PENALTIES
    from fastrisk.solvers._checks import check_choice, check_int

    task = Loss(loss, loss_param).spec.task  # a known loss with a valid parameter
    alpha = check_alpha(alpha)
    check_choice(penalty, "penalty", PENALTIES)
    penalty_params = _penalty_params(penalty, l1_ratio, p)
    n_samples = check_int(n_samples, "n_samples", 0)
    if not isinstance(solver, str):
        raise TypeError(f"solver must be a string, got {solver!r:.80}")
    if not isinstance(fastrisk_version, (str, type(None))):
        raise TypeError(f"fastrisk_version must be a string or None, got {fastrisk_version!r:.80}")
    coef = _real_array(coef, "coef")
    if coef.ndim not in (1, 2) or 0 in coef.shape:
        raise ValueError(f"coef must have shape (n_features,) or (n_classes, n_features), "
                         f"got {coef.shape}")
    intercept = _real_array(intercept, "intercept")
    expected = () if coef.ndim == 1 else (coef.shape[0],)
    if intercept.shape != expected:
        raise ValueError(f"intercept has shape {intercept.shape}, expected {expected}")
    if task not in ("binary", "multiclass"):
        if classes is not None:
            raise ValueError(f"classes must be None: the loss {loss!r} ({task}) makes a "
                             "model without classes")
        if coef.ndim != 1:
            raise ValueError(f"coef of a model without classes (loss {loss!r}) must have "
                             f"shape (n_features,), got {coef.shape}")
    elif classes is None:
        raise ValueError(f"classes is required: the loss {loss!r} makes a classifier")
    else:
        classes = np.asarray(classes)
        if classes.dtype.kind == "O" and all(isinstance(c, str) for c in classes.flat):
            classes = classes.astype(str)  # strings held as Python objects (pandas labels)
        if classes.dtype.kind not in _CLASS_KINDS or classes.ndim != 1:
            raise ValueError(f"classes must be a 1-d array of numbers, bools or strings, got "
                             f"shape {classes.shape} and dtype {classes.dtype}")
        if np.unique(classes).shape[0] != classes.shape[0] or (
                classes.dtype.kind == "f" and not np.isfinite(classes).all()):
            raise ValueError("classes must be distinct (and finite)")
        k = 2 if coef.ndim == 1 else coef.shape[0]  # one score separates two classes
        if classes.shape[0] != k or k < 2:
            raise ValueError(f"classes has {classes.shape[0]} labels, but a classifier needs "
                             f"2 for coef of shape (n_features,) and k >= 2 for coef of "
                             f"shape (k, n_features); coef has shape {coef.shape}")
    if feature_names is not None:
        names = list(np.asarray(feature_names, dtype=object).ravel()) \
            if not isinstance(feature_names, str) else None
        if names is None or not all(isinstance(n, str) for n in names) \
                or len(names) != coef.shape[-1] or len(set(names)) != len(names):
            raise ValueError(f"feature_names must be None or {coef.shape[-1]} distinct strings "
                             f"(one per feature), got {feature_names!r:.80}")
        feature_names = tuple(names)
    if not isinstance(info, (dict, type(None))):
        raise TypeError(f"info must be a dict or None, got {type(info).__name__}")
    for key in info or {}:
        if not isinstance(key, str):
            raise TypeError(f"info keys must be strings, got {key!r:.80}")
    return {
        "coef": coef,
        "intercept": float(intercept) if coef.ndim == 1 else intercept,
        "classes": classes,
        "loss": loss,
        "loss_param": None if loss_param is None else float(loss_param),
        "penalty": penalty,
        **penalty_params,
        "alpha": alpha,
        "solver": solver,
        "n_samples": n_samples,
        "n_features": int(coef.shape[-1]),
        "feature_names": feature_names,
        "info": {str(k): _info_value(k, v) for k, v in (info or {}).items()},
        "fastrisk_version": __version__ if fastrisk_version is None else fastrisk_version,
    }


class LinearModel:
    """A fitted linear model: scores ``f = X coef^T + intercept``.

    Attributes: ``coef`` (float64, (n_features,) or (n_classes, n_features)),
    ``intercept`` (float or (n_classes,) array), ``classes`` (labels for
    classifiers, else None), ``loss``, ``loss_param``, ``penalty``, ``l1_ratio``
    (penalty "elasticnet", else None), ``p`` (penalty "lp", else None), ``alpha``,
    ``solver``, ``n_samples`` and ``n_features`` (training data shape), ``feature_names``
    (a tuple of the training DataFrame's column names, or None), ``fastrisk_version`` and
    ``info`` (dict of solver facts: objective, gap,
    status, n_iter, fit_intercept, ...).

    The arguments must make a model ``save`` can write and ``load`` reads back
    (ValueError or TypeError naming the argument otherwise): finite ``coef`` and
    ``intercept``; ``classes`` exactly for the classification losses, two labels
    for ``coef`` of shape (n_features,) (one score) and k >= 2 labels for k rows
    of ``coef`` (one score per class); a known ``penalty``; ``l1_ratio`` and ``p``
    in the ranges the penalty's regularizer accepts, or None (not recorded); the one the
    penalty does not take is ignored and kept as None (as the Problem ignores it);
    string ``solver`` and ``fastrisk_version``.  ``info`` maps strings to None,
    bools, numbers and strings, the values JSON stores (NumPy scalars are stored
    as the equal Python bool, int or float; lists, dicts and arrays are refused).
    """

    def __init__(self, coef, intercept, *, loss, penalty, alpha, solver, n_samples,
                 classes=None, loss_param=None, l1_ratio=None, p=None, info=None,
                 fastrisk_version=None, feature_names=None):
        checked = _check_model(coef, intercept, classes, loss, loss_param, penalty, alpha,
                               solver, n_samples, info, fastrisk_version, l1_ratio, p,
                               feature_names)
        for name, value in checked.items():
            setattr(self, name, value)

    @property
    def task(self):
        from fastrisk.losses import LOSSES

        return LOSSES[self.loss].task

    @property
    def is_classifier(self):
        return self.classes is not None

    def __repr__(self):
        kind = f"{len(self.classes)} classes" if self.is_classifier else "regression"
        return (f"LinearModel(loss={self.loss!r}, penalty={self.penalty!r}, alpha={self.alpha:g}, "
                f"solver={self.solver!r}, n_features={self.n_features}, {kind})")

    # ---- prediction -------------------------------------------------------------------

    def _check_X(self, X):
        """X checked for prediction; a DataFrame's columns must be the training ones in
        their order when the model has ``feature_names`` (the columns are matched by
        position: another order would be read as other features)."""
        from fastrisk.data import check_X

        columns = getattr(X, "columns", None)
        if self.feature_names is not None and columns is not None \
                and tuple(str(c) for c in columns) != self.feature_names:
            raise ValueError(f"X has columns {list(columns)[:10]!r:.200} but the model was "
                             f"fitted on {list(self.feature_names)[:10]!r:.200} (in this "
                             "order); select them with X[list(model.feature_names)]")
        X = check_X(X, layout=False)
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features, but the model expects "
                             f"{self.n_features}")
        return X

    def decision_function(self, X):
        """Scores: (n,) for one score per row, (n, n_classes) otherwise."""
        X = self._check_X(X)
        return np.asarray(X @ self.coef.T, dtype=np.float64) + self.intercept

    def predict(self, X):
        """Class labels for classifiers; else the score, or the loss's inverse link of it
        (poisson: exp(score), the predicted mean)."""
        from fastrisk.losses import LOSSES

        f = self.decision_function(X)
        if self.is_classifier:
            if f.ndim == 1:
                return self.classes[(f > 0).astype(np.intp)]
            return self.classes[np.argmax(f, axis=1)]
        link = LOSSES[self.loss].inverse_link
        return f if link is None else link(f)

    def predict_proba(self, X):
        """Class probabilities (logistic: sigmoid, one-vs-rest normalized; softmax)."""
        from fastrisk.losses import LOSSES

        if not (self.is_classifier and LOSSES[self.loss].probabilistic):
            raise AttributeError(f"predict_proba is not available for the {self.loss} loss")
        return scores_to_proba(self.decision_function(X), self.loss)

    # ---- file format ------------------------------------------------------------------

    def _meta(self):
        arrays = self._arrays()
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "fastrisk_version": self.fastrisk_version,
            "loss": self.loss,
            "loss_param": _json_number(self.loss_param),
            "penalty": self.penalty,
            "l1_ratio": _json_number(self.l1_ratio),
            "p": _json_number(self.p),
            "alpha": _json_number(self.alpha),
            "solver": self.solver,
            "n_samples": self.n_samples,
            "n_features": self.n_features,
            "feature_names": None if self.feature_names is None else list(self.feature_names),
            "info": {k: _json_number(v) if isinstance(v, float) else v
                     for k, v in self.info.items()},
            # the strings among those that read as non-finite floats: they stay strings
            "info_strings": sorted(k for k, v in self.info.items()
                                   if isinstance(v, str) and v in _NONFINITE),
            "arrays": {k: {"dtype": a.dtype.str, "shape": list(a.shape), "sha256": _sha256(a)}
                       for k, a in arrays.items()},
        }

    def _arrays(self):
        arrays = {"coef": self.coef, "intercept": np.asarray(self.intercept, dtype=np.float64)}
        if self.classes is not None:
            arrays["classes"] = self.classes
        return arrays

    def save(self, path):
        """Write the model to ``path`` (any name).

        A regular file is written atomically: a temp file in the same directory replaces
        it once complete.  A symbolic link keeps pointing where it did (its target is the
        file replaced), and a path that exists but is not a regular file (a device such as
        /dev/stdout, a FIFO) is written through in place, never replaced.  The attributes
        may have been changed since the model was built, so they pass the constructor's
        checks again first: what is written is what ``load`` accepts.
        """
        path = _file_path(path)
        if not (np.isfinite(self.coef).all() and np.isfinite(self.intercept).all()):
            raise ValueError("coef or intercept contains NaN or infinity (a diverged fit?); "
                             "such a model predicts nothing meaningful and is not saved")
        model = LinearModel(self.coef, self.intercept, classes=self.classes, loss=self.loss,
                            loss_param=self.loss_param, penalty=self.penalty, alpha=self.alpha,
                            l1_ratio=self.l1_ratio, p=self.p, solver=self.solver,
                            n_samples=self.n_samples, info=self.info,
                            fastrisk_version=self.fastrisk_version,
                            feature_names=self.feature_names)
        meta = json.dumps(model._meta(), sort_keys=True, allow_nan=False).encode("utf-8")
        members = dict(meta=np.frombuffer(meta, dtype=np.uint8), **model._arrays())
        target = os.path.realpath(path)
        special = os.path.exists(target) and not os.path.isfile(target)
        tmp = target if special else f"{target}.tmp{os.getpid()}"
        try:
            with open(tmp, "wb") as fh:  # a directory raises IsADirectoryError here
                np.savez(fh, **members)
            if not special:
                os.replace(tmp, target)
        except OSError as exc:
            if exc.filename not in (None, tmp):
                raise
            # the error names the path asked for, not the temp file (and a failed write, on
            # a full disk or device, names one at all)
            raise OSError(exc.errno, exc.strerror, path) from None
        finally:
            if not special and os.path.exists(tmp):
                os.remove(tmp)
        return path


def _bad(path, why):
    return ValueError(f"{path}: not a valid fastrisk model file ({why})")


# What zipfile raises on a damaged archive, besides OSError (which ``load`` reports
# itself): its own errors, EOFError on truncation, NotImplementedError for features it
# lacks, ValueError (names that are not UTF-8, bad offsets) and struct.error on short
# records.
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError,
               ValueError, OverflowError, struct.error)
# What numpy's .npy header parser raises on a malformed header: ast.literal_eval
# (SyntaxError, ValueError, TypeError for unhashable keys), the tokenizer of its
# Python 2 fallback (TokenError), descr_to_dtype and np.dtype (ValueError,
# TypeError, IndexError, OverflowError, RecursionError); np.frombuffer and
# reshape on a dtype or shape the header describes (ValueError); and the zip
# errors of the member it reads from.
_HEADER_ERRORS = (TypeError, LookupError, SyntaxError, tokenize.TokenError, RecursionError,
                  *_ZIP_ERRORS)
_NPY_VERSIONS = ((1, 0), (2, 0), (3, 0))


def _read_npy(z, info, path):
    """One stored .npy member: its header must describe exactly the member's size.

    Only the calls into zipfile and numpy are guarded, so the errors raised here for
    what they return are not caught and reworded again.
    """
    name = info.filename[:-4]
    try:
        fh = z.open(info)
    except _ZIP_ERRORS as exc:
        raise _bad(path, f"{name}: unreadable member ({exc})") from exc
    with fh:
        try:
            version = np.lib.format.read_magic(fh)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            header = read_header(fh) if version in _NPY_VERSIONS else None
        except _HEADER_ERRORS as exc:
            raise _bad(path, f"{name}: bad .npy header ({exc})") from exc
        if header is None:
            raise _bad(path, f"{name}: unknown .npy format version {version}")
        shape, fortran, dtype = header
        if dtype.hasobject:
            raise _bad(path, f"{name} is an object array (would need pickle; refused)")
        if any(n < 0 for n in shape):
            raise _bad(path, f"{name}: header claims shape {shape}, a negative dimension")
        nbytes = math.prod(shape) * dtype.itemsize
        if fh.tell() + nbytes != info.file_size:
            raise _bad(path, f"{name}: header claims shape {shape} of {dtype} ({nbytes} bytes), "
                             f"but the member holds {info.file_size - fh.tell()} bytes")
        try:
            raw = fh.read(nbytes)
        except _ZIP_ERRORS as exc:  # e.g. a CRC that does not match
            raise _bad(path, f"{name}: unreadable member ({exc})") from exc
    try:
        a = np.frombuffer(raw, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    except _HEADER_ERRORS as exc:  # e.g. a zero itemsize, a shape beyond numpy's limits
        raise _bad(path, f"{name}: bad .npy header ({exc})") from exc
    return np.array(a, order="C")  # a writeable copy in C order


def _read_members(path):
    """{name: array} of the archive, sizes checked against the zip directory first."""
    names = {"meta.npy"} | {f"{k}.npy" for k in _ARRAYS}
    size = os.path.getsize(path)
    try:
        z = zipfile.ZipFile(path)
    except _ZIP_ERRORS as exc:
        raise _bad(path, f"unreadable archive: {exc}") from exc
    with z:
        infos, seen = z.infolist(), set()
        for info in infos:
            if info.filename not in names:
                raise _bad(path, f"unexpected member {info.filename!r}")
            if info.filename in seen:
                raise _bad(path, f"member {info.filename!r} occurs twice")
            seen.add(info.filename)
            if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size \
                    or info.header_offset + info.compress_size > size:
                raise _bad(path, f"member {info.filename!r} is compressed or larger than the file")
            if info.flag_bits & 0x1:  # zipfile would raise RuntimeError asking for a password
                raise _bad(path, f"member {info.filename!r} is encrypted")
            if info.filename == "meta.npy" and info.file_size > MAX_META_BYTES:
                raise _bad(path, f"metadata of {info.file_size} bytes (at most {MAX_META_BYTES})")
        return {info.filename[:-4]: _read_npy(z, info, path) for info in infos}


def _check_meta(meta, path):
    """The fields of the file format: the version, the array records and the JSON form of the
    numbers.  The model's own values (loss, penalty, alpha, info, ...) need only be present:
    ``load`` builds the model, whose constructor applies the rules of ``_check_model``."""

    def need(key, ok, what):
        if key not in meta:
            raise _bad(path, f"metadata lacks {key!r}")
        if not ok(meta[key]):
            raise _bad(path, f"metadata {key!r} must be {what}, got {meta[key]!r:.80}")

    def integer(lo):
        return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= lo

    def number(v):  # as _json_number writes it
        return v is None or (v in _NONFINITE if isinstance(v, str) else
                             isinstance(v, (int, float)) and not isinstance(v, bool))

    need("format_version", integer(0), "an integer")
    if meta["format_version"] != FORMAT_VERSION:
        raise _bad(path, f"format version {meta['format_version']!r:.20}; this fastrisk "
                         f"reads version {FORMAT_VERSION}")
    for key in ("loss", "penalty", "solver", "fastrisk_version", "n_samples", "info"):
        if key not in meta:
            raise _bad(path, f"metadata lacks {key!r}")
    need("n_features", integer(1), "an integer >= 1")
    need("arrays", lambda v: isinstance(v, dict) and all(
        isinstance(a, dict) and isinstance(a.get("dtype"), str)
        and isinstance(a.get("sha256"), str) and isinstance(a.get("shape"), list)
        and all(integer(0)(n) for n in a["shape"]) for a in v.values()),
        "an object of {dtype, shape, sha256} records")
    for key in ("alpha", "loss_param"):
        need(key, number, "a number")
    for key in ("l1_ratio", "p"):  # optional: see the module docstring
        if key in meta:
            need(key, number, "a number or null")
    if "info_strings" in meta:
        need("info_strings", lambda v: isinstance(v, list) and all(isinstance(k, str) for k in v),
             "a list of strings")
        info = meta["info"]
        for key in meta["info_strings"]:
            if not (isinstance(info, dict) and info.get(key) in _NONFINITE):
                raise _bad(path, f"metadata 'info_strings' names {key!r:.80}, which is not an "
                                 f"info value 'nan', 'inf' or '-inf'")


def _file_path(path):
    """``path`` (str, bytes or os.PathLike) as a str; TypeError naming it otherwise."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"path must be a file path (str, bytes or os.PathLike), got "
                        f"{type(path).__name__}")
    return os.fsdecode(path)


def load(path):
    """Read a model written by ``LinearModel.save`` / ``estimator.save``; see the module docstring.

    Raises FileNotFoundError for a missing file and ValueError naming the file for anything
    else that is not a valid model file, whatever parser (zip, .npy header, JSON) finds it.
    """
    path = _file_path(path)
    try:
        with open(path, "rb"):
            pass
        arrays = _read_members(path)
    except OSError as exc:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: cannot read model file ({exc.strerror})") from None
        raise _bad(path, f"unreadable archive: {exc}") from exc
    if "meta" not in arrays:
        raise _bad(path, "no 'meta' member")
    meta_array = arrays.pop("meta")
    if meta_array.dtype != np.uint8 or meta_array.ndim != 1:
        raise _bad(path, "metadata is not a uint8 vector")
    try:
        meta = json.loads(meta_array.tobytes().decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError, JSONDecodeError, ...
        raise _bad(path, f"metadata is not JSON: {str(exc)[:80]}") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise _bad(path, "metadata is not an object with the fastrisk format name")
    _check_meta(meta, path)
    specs = meta["arrays"]
    expected = {"coef", "intercept"} | ({"classes"} if "classes" in specs else set())
    if set(specs) != expected or set(arrays) != expected:
        raise _bad(path, f"members {sorted(arrays)} do not match the metadata {sorted(specs)}")
    for name, a in arrays.items():
        spec = specs[name]
        if a.dtype.str != spec["dtype"] or list(a.shape) != spec["shape"]:
            raise _bad(path, f"{name} has dtype {a.dtype.str} shape {a.shape}, metadata says "
                             f"{spec['dtype']:.20} {tuple(spec['shape'])}")
        if _sha256(a) != spec["sha256"]:
            raise _bad(path, f"checksum of {name} does not match (altered file)")
    coef = arrays["coef"]
    if coef.dtype != np.float64 or arrays["intercept"].dtype != np.float64:
        raise _bad(path, "coef and intercept must be float64")
    if coef.ndim not in (1, 2) or coef.shape[-1] != meta["n_features"]:
        raise _bad(path, f"coef shape {coef.shape} does not match n_features "
                         f"{meta['n_features']}")
    info, strings = meta["info"], set(meta.get("info_strings", ()))
    if isinstance(info, dict):
        info = {k: _from_json_number(v) if isinstance(v, str) and v in _NONFINITE
                and k not in strings else v for k, v in info.items()}
    try:
        return LinearModel(
            coef, arrays["intercept"], classes=arrays.get("classes"), loss=meta["loss"],
            loss_param=_from_json_number(meta["loss_param"]), penalty=meta["penalty"],
            l1_ratio=_from_json_number(meta.get("l1_ratio")), p=_from_json_number(meta.get("p")),
            alpha=_from_json_number(meta["alpha"]), solver=meta["solver"],
            n_samples=meta["n_samples"], info=info, fastrisk_version=meta["fastrisk_version"],
            feature_names=meta.get("feature_names"))
    except (TypeError, ValueError) as exc:
        raise _bad(path, str(exc)) from exc
