"""LinearModel: a fitted linear model and its file format (npz + JSON, never pickle).

A model file is a NumPy ``.npz`` archive (a zip file) holding exactly these
members:

* ``meta``: the UTF-8 bytes of a JSON object (uint8 array) with the format
  name and version, the fastrisk version that wrote it, the loss and its
  parameter, the penalty, alpha, the solver, the training data shape and
  solver facts (objective, certified gap, status, iterations), and the
  SHA-256 of every array below;
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
file and what is wrong.  Arrays are stored as raw bytes, so a round trip is
bit-exact.  A model with NaN or infinite coefficients is refused on saving.
"""

import hashlib
import json
import numbers
import math
import os
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


def _json_number(x):
    """Floats for JSON; NaN and inf are written as strings (JSON has no such numbers)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else repr(x)


def _from_json_number(x):
    return None if x is None else float(x)


def scores_to_proba(f, loss):
    """Class probabilities from decision scores f: logistic gives sigmoid(f) (one-vs-rest
    columns normalized to sum 1), softmax gives softmax(f)."""
    if f.ndim == 1:
        p = expit(f)
        return np.column_stack([1.0 - p, p])
    if loss == "softmax":
        return softmax(f, axis=1)
    p = expit(f)
    return p / p.sum(axis=1, keepdims=True)


class LinearModel:
    """A fitted linear model: scores ``f = X coef^T + intercept``.

    Attributes: ``coef`` (float64, (n_features,) or (n_classes, n_features)),
    ``intercept`` (float or (n_classes,) array), ``classes`` (labels for
    classifiers, else None), ``loss``, ``loss_param``, ``penalty``, ``alpha``,
    ``solver``, ``n_samples`` and ``n_features`` (training data shape),
    ``fastrisk_version`` and ``info`` (dict of solver facts: objective, gap,
    status, n_iter, fit_intercept, ...; JSON-serializable values only).
    """

    def __init__(self, coef, intercept, *, loss, penalty, alpha, solver, n_samples,
                 classes=None, loss_param=None, info=None, fastrisk_version=None):
        from fastrisk import __version__
        from fastrisk.losses import Loss
        from fastrisk.problem import check_alpha

        Loss(loss, loss_param)  # a known loss with a valid parameter (ValueError otherwise)
        alpha = check_alpha(alpha)
        if not isinstance(n_samples, numbers.Integral) or isinstance(n_samples, bool) \
                or n_samples < 0:
            raise ValueError(f"n_samples must be an integer >= 0, got {n_samples!r}")
        coef = np.asarray(coef, dtype=np.float64)
        if coef.ndim not in (1, 2) or coef.shape[-1] == 0:
            raise ValueError(f"coef must have shape (n_features,) or (n_classes, n_features), "
                             f"got {coef.shape}")
        intercept = np.asarray(intercept, dtype=np.float64)
        expected = () if coef.ndim == 1 else (coef.shape[0],)
        if intercept.shape != expected:
            raise ValueError(f"intercept has shape {intercept.shape}, expected {expected}")
        if classes is not None:
            classes = np.asarray(classes)
            if classes.dtype.kind not in _CLASS_KINDS or classes.ndim != 1:
                raise ValueError("classes must be a 1-d array of numbers, bools or strings")
            if np.unique(classes).shape[0] != classes.shape[0] or (
                    classes.dtype.kind == "f" and not np.isfinite(classes).all()):
                raise ValueError("classes must be distinct (and finite)")
            n_scores = 1 if coef.ndim == 1 else coef.shape[0]
            if not (classes.shape[0] == n_scores or (n_scores == 1 and classes.shape[0] == 2)):
                raise ValueError(f"{classes.shape[0]} classes do not fit coef of shape {coef.shape}")
        self.coef = coef
        self.intercept = float(intercept) if coef.ndim == 1 else intercept
        self.classes = classes
        self.loss = loss
        self.loss_param = None if loss_param is None else float(loss_param)
        self.penalty = str(penalty)
        self.alpha = float(alpha)
        self.solver = str(solver)
        self.n_samples = int(n_samples)
        self.n_features = int(coef.shape[-1])
        self.info = dict(info or {})
        self.fastrisk_version = __version__ if fastrisk_version is None else str(fastrisk_version)

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
        from fastrisk.data import check_X

        X = check_X(X)
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features, but the model expects {self.n_features}")
        return X

    def decision_function(self, X):
        """Scores: (n,) for one score per row, (n, n_classes) otherwise."""
        X = self._check_X(X)
        return np.asarray(X @ self.coef.T, dtype=np.float64) + self.intercept

    def predict(self, X):
        """Class labels for classifiers; exp(score) for poisson; else the score."""
        f = self.decision_function(X)
        if self.is_classifier:
            if f.ndim == 1:
                return self.classes[(f > 0).astype(np.intp)]
            return self.classes[np.argmax(f, axis=1)]
        return np.exp(f) if self.loss == "poisson" else f

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
            "alpha": _json_number(self.alpha),
            "solver": self.solver,
            "n_samples": self.n_samples,
            "n_features": self.n_features,
            "info": {k: _json_number(v) if isinstance(v, float) else v
                     for k, v in self.info.items()},
            "arrays": {k: {"dtype": a.dtype.str, "shape": list(a.shape), "sha256": _sha256(a)}
                       for k, a in arrays.items()},
        }

    def _arrays(self):
        arrays = {"coef": self.coef, "intercept": np.asarray(self.intercept, dtype=np.float64)}
        if self.classes is not None:
            arrays["classes"] = self.classes
        return arrays

    def save(self, path):
        """Write the model to ``path`` (any name; written atomically through a temp file)."""
        path = os.fspath(path)
        if not (np.isfinite(self.coef).all() and np.isfinite(self.intercept).all()):
            raise ValueError("coef or intercept contains NaN or infinity (a diverged fit?); "
                             "such a model predicts nothing meaningful and is not saved")
        meta = json.dumps(self._meta(), sort_keys=True, allow_nan=False).encode("utf-8")
        tmp = f"{path}.tmp{os.getpid()}"
        try:
            with open(tmp, "wb") as fh:
                np.savez(fh, meta=np.frombuffer(meta, dtype=np.uint8), **self._arrays())
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        return path

    def to_estimator(self):
        """A fitted LinearClassifier / LinearRegressor with this model's weights."""
        from fastrisk.estimators import estimator_from_model

        return estimator_from_model(self)


def _bad(path, why):
    return ValueError(f"{path}: not a valid fastrisk model file ({why})")


def _read_npy(z, info, path):
    """One stored .npy member: its header must describe exactly the member's size."""
    name = info.filename[:-4]
    with z.open(info) as fh:
        try:
            version = np.lib.format.read_magic(fh)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = read_header(fh)
        except ValueError as exc:
            raise _bad(path, f"{name}: bad .npy header ({exc})") from None
        if dtype.hasobject:
            raise _bad(path, f"{name} is an object array (would need pickle; refused)")
        nbytes = math.prod(shape) * dtype.itemsize
        if fh.tell() + nbytes != info.file_size:
            raise _bad(path, f"{name}: header claims shape {shape} of {dtype} ({nbytes} bytes), "
                             f"but the member holds {info.file_size - fh.tell()} bytes")
        raw = fh.read(nbytes)
    a = np.frombuffer(raw, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    return np.array(a, order="C")  # a writeable copy in C order


def _read_members(path):
    """{name: array} of the archive, sizes checked against the zip directory first."""
    names = {"meta.npy"} | {f"{k}.npy" for k in _ARRAYS}
    size = os.path.getsize(path)
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
        for info in infos:
            if info.filename not in names or len(infos) > len(names):
                raise _bad(path, f"unexpected member {info.filename!r}")
            if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size \
                    or info.header_offset + info.compress_size > size:
                raise _bad(path, f"member {info.filename!r} is compressed or larger than the file")
            if info.filename == "meta.npy" and info.file_size > MAX_META_BYTES:
                raise _bad(path, f"metadata of {info.file_size} bytes (at most {MAX_META_BYTES})")
        return {info.filename[:-4]: _read_npy(z, info, path) for info in infos}


def _check_meta(meta, path):
    """The metadata fields a model is built from: types and ranges."""
    from fastrisk.regularizers import PENALTIES

    def need(key, ok, what):
        if key not in meta:
            raise _bad(path, f"metadata lacks {key!r}")
        if not ok(meta[key]):
            raise _bad(path, f"metadata {key!r} must be {what}, got {meta[key]!r:.80}")

    def integer(lo):
        return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= lo

    need("penalty", lambda v: v in PENALTIES, f"one of {PENALTIES}")
    need("solver", lambda v: isinstance(v, str), "a string")
    need("fastrisk_version", lambda v: isinstance(v, str), "a string")
    need("n_samples", integer(0), "an integer >= 0")
    need("n_features", integer(1), "an integer >= 1")
    need("info", lambda v: isinstance(v, dict) and all(
        isinstance(x, (str, int, float, bool, type(None))) for x in v.values()),
        "an object of numbers, strings, booleans and nulls")
    need("arrays", lambda v: isinstance(v, dict) and all(
        isinstance(a, dict) and isinstance(a.get("dtype"), str)
        and isinstance(a.get("sha256"), str) and isinstance(a.get("shape"), list)
        and all(integer(0)(n) for n in a["shape"]) for a in v.values()),
        "an object of {dtype, shape, sha256} records")
    for key in ("alpha", "loss_param"):
        need(key, lambda v: v is None or isinstance(v, (int, float, str)) and not
             isinstance(v, bool), "a number")


def load(path):
    """Read a model written by ``LinearModel.save`` / ``estimator.save``; see the module docstring."""
    path = os.fspath(path)
    try:
        with open(path, "rb"):
            pass
        arrays = _read_members(path)
    except OSError as exc:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: cannot read model file ({exc.strerror})") from None
        raise _bad(path, f"unreadable archive: {exc}") from None
    except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile, NotImplementedError) as exc:
        raise _bad(path, f"unreadable archive: {exc}") from None
    if "meta" not in arrays:
        raise _bad(path, "no 'meta' member")
    meta_array = arrays.pop("meta")
    if meta_array.dtype != np.uint8 or meta_array.ndim != 1:
        raise _bad(path, "metadata is not a uint8 vector")
    try:
        meta = json.loads(meta_array.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise _bad(path, f"metadata is not JSON: {str(exc)[:80]}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise _bad(path, "metadata is not an object with the fastrisk format name")
    if meta.get("format_version") != FORMAT_VERSION:
        raise _bad(path, f"format version {meta.get('format_version')!r:.20}; this fastrisk "
                         f"reads version {FORMAT_VERSION}")
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
    if not (np.isfinite(coef).all() and np.isfinite(arrays["intercept"]).all()):
        raise _bad(path, "coef or intercept contains NaN or infinity")
    info = {k: _from_json_number(v) if isinstance(v, str) and v in ("nan", "inf", "-inf")
            else v for k, v in meta["info"].items()}
    try:
        return LinearModel(
            coef, arrays["intercept"], classes=arrays.get("classes"), loss=meta.get("loss"),
            loss_param=_from_json_number(meta["loss_param"]), penalty=meta["penalty"],
            alpha=_from_json_number(meta["alpha"]), solver=meta["solver"],
            n_samples=meta["n_samples"], info=info, fastrisk_version=meta["fastrisk_version"])
    except (TypeError, ValueError) as exc:
        raise _bad(path, str(exc)) from None
