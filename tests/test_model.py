"""LinearModel file format: bit-exact round trips, and clear errors on damaged files."""

import io
import os
import json
import math
import re
import struct
import tokenize
import warnings
import zipfile
from fractions import Fraction

import numpy as np
import pytest

import fastrisk as fr
from fastrisk.model import LinearModel


def _model(classes=("a", "b", "c"), loss="softmax"):
    rng = np.random.default_rng(0)
    k = len(classes)
    coef = rng.normal(size=(k, 7)) if k > 2 else rng.normal(size=7)
    # values whose bits a lossy format would change: -0.0, subnormals, huge, tiny
    coef.flat[:4] = [-0.0, 5e-324, 1.7976931348623157e308, 1e-300]
    intercept = rng.normal(size=k) if k > 2 else -0.0
    return LinearModel(coef, intercept, classes=np.asarray(classes), loss=loss, penalty="l2",
                       alpha=1e-4, solver="bmrm", n_samples=100,
                       info={"objective": 0.25, "gap": float("nan"), "status": "converged"})


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("classes,loss", [
    (("a", "b", "c"), "softmax"),            # strings, native multiclass
    ((3, 7, 11, 12), "hinge"),               # ints, one-vs-rest
    ((False, True), "logistic"),             # bools, binary
    ((-1.5, 2.0), "hinge"),                  # floats, binary
])
def test_round_trip_is_bit_exact(tmp_path, classes, loss):
    model = _model(classes, loss)
    path = model.save(tmp_path / "m.frm")
    back = fr.load(path)
    assert _same_bits(back.coef, model.coef)
    assert _same_bits(np.float64(back.intercept) if np.ndim(back.intercept) == 0 else
                      back.intercept, np.asarray(model.intercept, dtype=np.float64))
    assert _same_bits(back.classes, model.classes)
    assert (back.loss, back.penalty, back.alpha, back.solver, back.n_samples, back.n_features) == \
        (model.loss, "l2", 1e-4, "bmrm", 100, 7)
    assert back.info["status"] == "converged" and np.isnan(back.info["gap"])
    assert back.fastrisk_version == fr.__version__
    # the file name is kept as given (np.savez would append .npz to a str path)
    assert path.endswith("m.frm")


def test_regression_model_round_trip_and_prediction(tmp_path):
    rng = np.random.default_rng(1)
    coef = rng.normal(size=5)
    model = LinearModel(coef, 0.5, loss="poisson", penalty="l1", alpha=1e-3, solver="lbfgs",
                        n_samples=20)
    back = fr.load(model.save(tmp_path / "r.frm"))
    assert back.classes is None and _same_bits(back.coef, coef)
    X = rng.normal(size=(4, 5))
    # poisson predicts the mean exp(<w, x> + b); exact same arithmetic, so 1e-15 relative
    np.testing.assert_allclose(back.predict(X), np.exp(X @ coef + 0.5), rtol=1e-15)


def test_predictions_against_numpy():
    m = _model((3, 7, 11), "logistic")
    m.coef[:] = np.random.default_rng(2).normal(size=m.coef.shape)
    X = np.random.default_rng(3).normal(size=(6, 7))
    F = X @ m.coef.T + m.intercept
    np.testing.assert_array_equal(m.predict(X), np.array([3, 7, 11])[F.argmax(1)])
    P = 1 / (1 + np.exp(-F))
    # OvR logistic probabilities: sigmoids normalized per row; 1e-12 covers expit vs exp rounding
    np.testing.assert_allclose(m.predict_proba(X), P / P.sum(1, keepdims=True), rtol=1e-12)
    with pytest.raises(ValueError, match="X has 3 features, but the model expects 7"):
        m.predict(X[:, :3])


def _layouts(X):
    """X as given (dense, C order), in Fortran order, as canonical CSR and as CSR with its
    rows' entries reversed and one entry split into two duplicates; the last three are
    what prediction must read without a copy."""
    import scipy.sparse as sp

    C = sp.csr_matrix(X)
    rows = [np.arange(C.indptr[i], C.indptr[i + 1])[::-1] for i in range(C.shape[0])]
    order = np.concatenate(rows)
    data, indices = C.data[order].copy(), C.indices[order].copy()
    half = data[0] / 2  # the first stored entry as two halves (an exact split)
    data = np.concatenate([[half], data])
    data[1] = half
    indices = np.concatenate([[indices[0]], indices])
    indptr = C.indptr.copy()
    indptr[1:] += 1
    messy = sp.csr_matrix((data, indices, indptr), shape=C.shape)
    assert not messy.has_canonical_format
    return [np.asfortranarray(X), C, messy]


def test_prediction_reads_any_order_without_copying_or_refusing():
    """LinearModel and the estimators predict from a Fortran-ordered X and from a CSR X
    with unsorted and duplicate indices as from X itself (the same numbers up to the order
    of the sums), without copying those layouts (numpy's and scipy's products read them
    as they are) and without modifying them."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 6))
    X[rng.random(X.shape) < 0.5] = 0.0
    y = np.where(X[:, 0] + X[:, 1] > 0, 1, -1)
    est = fr.LinearClassifier(loss="logistic", alpha=1e-2, solver="lbfgs", tol=1e-8).fit(X, y)
    model = est.to_model()
    from fastrisk.data import check_X
    from fastrisk.estimators import _check_X

    for Z in _layouts(X)[::2]:  # the layouts a fit would copy are read as they are
        assert check_X(Z, layout=False) is Z and _check_X(est, Z, reset=False) is Z
    F = X @ model.coef.T + model.intercept  # NumPy's product on X as given
    for predictor in (est, model):
        ref = predictor.decision_function(X)
        np.testing.assert_allclose(np.ravel(ref), np.ravel(F), rtol=1e-12, atol=1e-12)
        for Z in _layouts(X):
            before = Z.copy()
            np.testing.assert_allclose(predictor.decision_function(Z), ref, rtol=1e-12,
                                       atol=1e-12)
            np.testing.assert_array_equal(predictor.predict(Z), predictor.predict(X))
            if hasattr(Z, "indices"):
                assert np.array_equal(Z.data, before.data)
                assert np.array_equal(Z.indices, before.indices)
            else:
                assert np.array_equal(Z, before) and Z.flags.f_contiguous


def test_prediction_checks_what_it_reads():
    """Without the layout copies, prediction still refuses what its product cannot read:
    out-of-range indices, non-finite values, the wrong number of features."""
    import scipy.sparse as sp

    model = _model((3, 7, 11), "logistic")
    bad = sp.csr_matrix((np.ones(2), np.array([0, 9]), np.array([0, 1, 2])), shape=(2, 7))
    with pytest.raises(ValueError, match="X"):
        model.predict(bad)
    X = np.asfortranarray(np.random.default_rng(0).normal(size=(4, 7)))
    X[1, 2] = np.nan
    with pytest.raises(ValueError, match="X"):
        model.predict(X)
    with pytest.raises(ValueError, match="X has 3 features"):
        model.predict(np.asfortranarray(X[:, 3:6]))


def test_predict_proba_only_for_probabilistic_losses():
    with pytest.raises(AttributeError, match="hinge"):
        _model((1, 2), "hinge").predict_proba(np.ones((1, 7)))


def test_truncated_file(tmp_path):
    path = _model().save(tmp_path / "m.frm")
    raw = open(path, "rb").read()
    for cut in (0, 10, len(raw) // 2, len(raw) - 1):
        open(path, "wb").write(raw[:cut])
        with pytest.raises(ValueError, match="not a valid fastrisk model file"):
            fr.load(path)


def test_flipped_byte_anywhere_is_detected(tmp_path):
    path = _model().save(tmp_path / "m.frm")
    raw = bytearray(open(path, "rb").read())
    # zip CRCs catch changes in member data; the checksums in meta catch a consistent rewrite
    for pos in range(0, len(raw), max(1, len(raw) // 40)):
        bad = raw.copy()
        bad[pos] ^= 0xFF
        open(path, "wb").write(bytes(bad))
        try:
            back = fr.load(path)
        except ValueError as exc:
            assert "not a valid fastrisk model file" in str(exc)
        else:  # the flipped byte was in zip bookkeeping that does not change any content
            ref = _model()
            assert _same_bits(back.coef, ref.coef) and _same_bits(back.classes, ref.classes)


def _rewrite(path, change):
    """Re-write the archive with consistent zip CRCs after ``change(members)``."""
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    change(members)
    with zipfile.ZipFile(path, "w") as z:
        for n, b in members.items():
            z.writestr(n, b)


def _npy(a):
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=True)
    return buf.getvalue()


def _meta_of(members):
    return json.loads(np.load(io.BytesIO(members["meta.npy"])).tobytes())


def test_consistently_altered_array_fails_checksum(tmp_path):
    path = _model().save(tmp_path / "m.frm")

    def change(members):
        coef = np.load(io.BytesIO(members["coef.npy"]))
        coef[0, 0] = 1.0
        members["coef.npy"] = _npy(coef)

    _rewrite(path, change)
    with pytest.raises(ValueError, match="checksum of coef"):
        fr.load(path)


@pytest.mark.parametrize("what,message", [
    ("version", "format version 99"),
    ("shape", "metadata says"),
    ("missing", "do not match the metadata"),
    ("pickle", "object array"),
    ("json", "metadata is not JSON"),
])
def test_inconsistent_files(tmp_path, what, message):
    path = _model().save(tmp_path / "m.frm")

    def set_meta(members, meta):
        members["meta.npy"] = _npy(np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))

    def change(members):
        meta = _meta_of(members)
        if what == "version":
            meta["format_version"] = 99
            set_meta(members, meta)
        elif what == "shape":
            meta["arrays"]["coef"]["shape"] = [7, 3]
            set_meta(members, meta)
        elif what == "missing":
            del members["classes.npy"]
        elif what == "pickle":  # an object array would need pickle to load: refused
            members["classes.npy"] = _npy(np.array(["a", 1, None], dtype=object))
        elif what == "json":
            members["meta.npy"] = _npy(np.frombuffer(b"{not json", dtype=np.uint8))

    _rewrite(path, change)
    with pytest.raises(ValueError, match=message):
        fr.load(path)


def test_extra_or_repeated_member_is_named(tmp_path):
    """An archive with a member too many names that member (or the repeated name), not the
    first valid one; a path given as bytes is read like a str path."""
    path = _model().save(tmp_path / "m.frm")
    assert fr.load(os.fsencode(path)).loss == fr.load(path).loss
    _rewrite(path, lambda members: members.update({"evil.npy": _npy(np.zeros(2))}))
    with pytest.raises(ValueError, match="unexpected member 'evil.npy'"):
        fr.load(path)
    path = _model().save(tmp_path / "d.frm")
    with zipfile.ZipFile(path, "a") as z, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile: "Duplicate name"
        z.writestr("coef.npy", _npy(np.zeros((3, 7))))
    with pytest.raises(ValueError, match="member 'coef.npy' occurs twice"):
        fr.load(path)


def test_missing_file_and_bad_arguments(tmp_path):
    with pytest.raises(FileNotFoundError, match="cannot read model file"):
        fr.load(tmp_path / "nope.frm")
    with pytest.raises(ValueError, match="intercept has shape"):
        LinearModel(np.ones((3, 4)), 0.0, loss="hinge", penalty="l2", alpha=1.0, solver="x",
                    n_samples=1)
    with pytest.raises(ValueError, match="loss must be one of"):
        LinearModel(np.ones(4), 0.0, loss="nope", penalty="l2", alpha=1.0, solver="x",
                    n_samples=1)


@pytest.mark.parametrize("key, value, expected", [
    ("n_iter", "x", "an integer >= 0"), ("n_iter", -1, "an integer >= 0"),
    ("fit_intercept", "false", "a bool"), ("intercept_scaling", "1", "a number or None"),
    ("objective", [1.0], "a number or None"), ("gap", 10 ** 400, "a number or None")])
def test_estimator_from_a_model_with_a_foreign_info_entry(key, value, expected):
    """A model's info is free JSON: the entries an estimator reads back are checked, and a
    value of another type names the entry (bool("false") would be True)."""
    model = _model()
    model.info[key] = value
    with pytest.raises(ValueError, match=rf"^model\.info\['{key}'\] must be {expected}, "):
        fr.estimator_from_model(model)


def test_save_and_load_name_a_path_that_is_not_one(tmp_path):
    for call in (lambda: _model().save(5), lambda: fr.load(5)):
        with pytest.raises(TypeError, match=r"^path must be a file path \(str, bytes or "
                                            r"os\.PathLike\), got int$"):
            call()
    path = _model().save(os.fsencode(tmp_path / "m.frm"))  # bytes: a file name, decoded
    assert (tmp_path / "m.frm").is_file() and fr.load(path).n_samples == _model().n_samples


def _set_meta(members, meta_bytes):
    members["meta.npy"] = _npy(np.frombuffer(meta_bytes, dtype=np.uint8))


def _saved_with_meta(tmp_path, key, value):
    """The path of a saved model whose metadata field ``key`` is replaced by ``value``
    (valid JSON, consistent zip CRCs: only the loader's rules can refuse it)."""
    path = _model().save(tmp_path / "m.frm")

    def change(members):
        meta = _meta_of(members)
        meta[key] = value
        _set_meta(members, json.dumps(meta).encode())

    _rewrite(path, change)
    return path


def test_claimed_huge_shape_is_rejected_before_any_allocation(tmp_path):
    """A 2 MB member whose .npy header (and metadata) claim 2**28 float64 (2 GiB) is refused
    from the sizes in the zip directory: tracemalloc sees no large allocation."""
    import tracemalloc

    path = _model(classes=(1, 2)).save(tmp_path / "m.frm")
    shape = (2**28,)

    def change(members):
        npy = _npy(np.zeros(2**18))  # 2 MB of data
        header = npy[: npy.index(b"\n") + 1]
        fake = header.replace(b"(262144,)", str(shape).encode())
        fake = fake[:-1].ljust(len(header) - 1) + b"\n"  # same header length
        members["coef.npy"] = fake + npy[len(header):]
        meta = _meta_of(members)
        meta["arrays"]["coef"]["shape"] = list(shape)
        meta["n_features"] = shape[0]
        _set_meta(members, json.dumps(meta).encode())

    _rewrite(path, change)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"header claims shape \(268435456,\)"):
            fr.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20  # far below the 2 GiB the header claims (file: ~2 MB)


def test_compressed_member_is_refused(tmp_path):
    path = _model().save(tmp_path / "m.frm")
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for n, b in members.items():
            z.writestr(n, b)
    with pytest.raises(ValueError, match="compressed"):
        fr.load(path)


@pytest.mark.parametrize("meta,message", [
    (b"[1, 2, 3]", "not an object"),
    (b"[" * 100000 + b"]" * 100000, "not JSON"),  # RecursionError inside json
    (b'"a string"', "not an object"),
    (b'{"n": ' + b"9" * 5000 + b"}", "not JSON"),  # past Python's int-from-string limit
])
def test_metadata_that_is_not_an_object(tmp_path, meta, message):
    path = _model().save(tmp_path / "m.frm")
    _rewrite(path, lambda members: _set_meta(members, meta))
    with pytest.raises(ValueError, match=message):
        fr.load(path)


@pytest.mark.parametrize("key,value,message", [
    ("alpha", "nan", "alpha must be a finite number > 0"),
    ("alpha", -5, "alpha must be a finite number > 0"),
    ("alpha", "inf", "alpha must be a finite number > 0"),
    ("alpha", [1], "'alpha' must be a number"),
    ("loss_param", 2.0, "takes no parameter"),  # softmax has no parameter
    ("loss", "nope", "loss must be one of"),
    ("penalty", {"a": 1}, "penalty must be one of"),
    ("n_samples", -1, "n_samples must be an integer >= 0"),
    ("n_samples", 1.5, "n_samples must be an integer >= 0"),
    ("n_features", "7", "'n_features' must be an integer >= 1"),
    ("info", [], "info must be a dict"),
    ("info", {"a": {"b": 1}}, r"info\['a'\] must be a number, string, bool or None"),
    ("solver", None, "solver must be a string"),
    ("arrays", {"coef": 1}, "'arrays' must be an object"),
    ("alpha", "abc", "'alpha' must be a number"),  # strings only for NaN and infinity
    pytest.param("alpha", 10**400, "alpha must be a finite number > 0, got inf",
                 id="alpha-beyond-float-range"),
    ("format_version", True, "'format_version' must be an integer"),
    ("format_version", 1.0, "'format_version' must be an integer"),
])
def test_metadata_values_are_checked(tmp_path, key, value, message):
    with pytest.raises(ValueError, match=message):
        fr.load(_saved_with_meta(tmp_path, key, value))


def test_wrong_dtype_of_coef(tmp_path):
    path = _model().save(tmp_path / "m.frm")

    def change(members):
        coef = np.ones((3, 7), dtype=np.float32)
        members["coef.npy"] = _npy(coef)
        meta = _meta_of(members)
        meta["arrays"]["coef"].update(dtype=coef.dtype.str, sha256=fr.model._sha256(coef))
        _set_meta(members, json.dumps(meta).encode())

    _rewrite(path, change)
    with pytest.raises(ValueError, match="coef and intercept must be float64"):
        fr.load(path)


def test_nan_coefficients_are_neither_saved_nor_loaded(tmp_path):
    model = _model()
    model.coef[0, 1] = np.nan
    with pytest.raises(ValueError, match="coef or intercept contains NaN"):
        model.save(tmp_path / "m.frm")
    assert not (tmp_path / "m.frm").exists()
    path = _model().save(tmp_path / "m.frm")

    def change(members):  # a consistent file (checksums updated) with a NaN coefficient
        coef = np.load(io.BytesIO(members["coef.npy"]))
        coef[0, 1] = np.nan
        members["coef.npy"] = _npy(coef)
        meta = _meta_of(members)
        meta["arrays"]["coef"]["sha256"] = fr.model._sha256(coef)
        _set_meta(members, json.dumps(meta).encode())

    _rewrite(path, change)
    with pytest.raises(ValueError, match=r"m\.frm: not a valid .*coef contains NaN"):
        fr.load(path)


def _npy_bytes(header, data=b"", version=(1, 0)):
    """A .npy member with this header text (padded as numpy pads it) and these data bytes."""
    length_format = "<H" if version == (1, 0) else "<I"
    prefix = 6 + 2 + struct.calcsize(length_format)
    text = header.encode("latin1")
    text += b" " * (-(prefix + len(text) + 1) % 64) + b"\n"
    return (b"\x93NUMPY" + bytes(version) + struct.pack(length_format, len(text)) + text
            + data)


_COEF_BYTES = np.zeros((3, 7)).tobytes()


@pytest.mark.parametrize("member,header,data,cause,message", [
    # numpy's header parser falls back to its Python 2 tokenizer, which fails on unbalanced
    # parentheses with tokenize.TokenError
    pytest.param("coef", "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 7,, }",
                 _COEF_BYTES, tokenize.TokenError, "bad .npy header", id="coef-tokenize"),
    pytest.param("meta", "{'descr': '|u1', 'fortran_order': False, 'shape': ((, }", b"{}",
                 tokenize.TokenError, "bad .npy header", id="meta-tokenize"),
    pytest.param("coef", "{'descr': {[1]: 2}, 'fortran_order': False, 'shape': (3, 7), }",
                 _COEF_BYTES, TypeError, "bad .npy header", id="unhashable-key"),
    pytest.param("coef", "{'descr': (), 'fortran_order': False, 'shape': (3, 7), }",
                 _COEF_BYTES, IndexError, "bad .npy header", id="empty-descr-tuple"),
    pytest.param("coef", "{'descr': 'V0', 'fortran_order': False, 'shape': (3, 7), }", b"",
                 ValueError, "bad .npy header", id="zero-itemsize"),  # np.frombuffer refuses
    # (-3) * (-7) * 8 bytes is the member's size
    pytest.param("coef", "{'descr': '<f8', 'fortran_order': False, 'shape': (-3, -7), }",
                 _COEF_BYTES, None, "a negative dimension", id="negative-shape"),
])
def test_malformed_npy_header(tmp_path, member, header, data, cause, message):
    path = _model().save(tmp_path / "m.frm")
    _rewrite(path, lambda members: members.update({f"{member}.npy": _npy_bytes(header, data)}))
    with pytest.raises(ValueError, match=rf"m\.frm: not a valid fastrisk model file "
                                         rf"\({member}: .*{message}") as info:
        fr.load(path)
    if cause is not None:
        assert type(info.value.__cause__) is cause


def test_unknown_npy_version(tmp_path):
    path = _model().save(tmp_path / "m.frm")
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 7), }"
    _rewrite(path, lambda members: members.update(
        {"coef.npy": _npy_bytes(header, _COEF_BYTES, version=(9, 0))}))
    with pytest.raises(ValueError, match=r"m\.frm: .*unknown \.npy format version \(9, 0\)"):
        fr.load(path)


_KW = dict(penalty="l2", alpha=1.0, solver="x", n_samples=3)


@pytest.mark.parametrize("coef,classes,loss,message", [
    (np.ones(5), [7], "hinge", "classes has 1 labels"),
    (np.ones(5), [1, 2, 3], "hinge", "classes has 3 labels"),
    (np.ones((1, 5)), [7], "softmax", "classes has 1 labels"),
    (np.ones((1, 5)), [7, 8], "hinge", "classes has 2 labels"),  # one row: not 2 scores
    (np.ones((3, 5)), [7, 8], "softmax", "classes has 2 labels"),
    (np.ones(5), None, "hinge", "classes is required"),
    (np.ones(5), [7, 8], "squared", "classes must be None"),
    (np.ones((2, 5)), None, "squared", r"must have shape \(n_features,\)"),
])
def test_classes_must_fit_the_loss_and_coef(coef, classes, loss, message):
    intercept = 0.0 if coef.ndim == 1 else np.zeros(coef.shape[0])
    with pytest.raises(ValueError, match=message):
        LinearModel(coef, intercept, classes=classes, loss=loss, **_KW)


def test_a_file_with_one_class_is_refused(tmp_path):
    path = _model(classes=(3, 7), loss="hinge").save(tmp_path / "m.frm")

    def change(members):  # a consistent file (checksums updated) with one class
        classes = np.array([3])
        members["classes.npy"] = _npy(classes)
        meta = _meta_of(members)
        meta["arrays"]["classes"].update(shape=[1], sha256=fr.model._sha256(classes))
        _set_meta(members, json.dumps(meta).encode())

    _rewrite(path, change)
    with pytest.raises(ValueError, match=r"m\.frm: not a valid .*classes has 1 labels"):
        fr.load(path)


@pytest.mark.parametrize("changes,error,message", [
    ({"coef": np.array([1.0, np.nan, 0, 0, 0])}, ValueError, "coef contains NaN or infinity"),
    ({"intercept": np.inf}, ValueError, "intercept contains NaN or infinity"),
    ({"coef": np.ones(5) * 1j}, TypeError, "coef must be an array of real numbers"),
    ({"coef": ["1"] * 5}, TypeError, "coef must be an array of real numbers"),
    ({"penalty": "foo"}, ValueError, "penalty must be one of"),
    ({"solver": None}, TypeError, "solver must be a string"),
    ({"fastrisk_version": 3}, TypeError, "fastrisk_version must be a string"),
    ({"n_samples": True}, ValueError, "n_samples must be an integer >= 0"),
    ({"info": {"a": [1]}}, TypeError, r"info\['a'\] must be a number, string, bool or None"),
    ({"info": {"a": np.ones(2)}}, TypeError, r"info\['a'\] must be a number"),
    ({"info": {"a": 1j}}, TypeError, r"info\['a'\] must be a number"),
    ({"info": {1: 2}}, TypeError, "info keys must be strings"),
    ({"info": [("a", 1)]}, TypeError, "info must be a dict or None"),
])
def test_constructor_refuses_what_load_refuses(changes, error, message):
    kw = dict(coef=np.ones(5), intercept=0.0, classes=[-1, 1], loss="hinge", **_KW)
    kw.update(changes)
    with pytest.raises(error, match=message):
        LinearModel(**kw)


@pytest.mark.parametrize("key,value,message", [
    ("penalty", "foo", "penalty must be one of"),
    ("solver", 5, "solver must be a string"),
    ("n_samples", -1, "n_samples must be an integer >= 0"),
    ("info", {"a": [1]}, r"info\['a'\] must be a number, string, bool or None"),
    ("fastrisk_version", 3, "fastrisk_version must be a string"),
    ("loss", "squared", "classes must be None"),
    ("alpha", 0, "alpha must be a finite number > 0"),
])
def test_one_rule_set_for_constructor_and_file(tmp_path, key, value, message):
    """The same value gets the same message from the constructor and, in a file, from load."""
    with pytest.raises(ValueError, match=rf"m\.frm: not a valid fastrisk model file "
                                         rf"\({message}"):
        fr.load(_saved_with_meta(tmp_path, key, value))
    kw = dict(coef=np.ones((3, 7)), intercept=np.zeros(3), classes=["a", "b", "c"],
              loss="softmax", penalty="l2", alpha=1e-4, solver="bmrm", n_samples=100)
    kw[key] = value
    with pytest.raises((ValueError, TypeError), match=message):
        LinearModel(**kw)


def test_info_numpy_scalars_are_stored_as_python_values(tmp_path):
    info = {"a": np.float32(1.5), "b": np.int64(3), "c": np.bool_(True), "d": np.str_("x"),
            "e": None, "f": np.float64(np.inf)}
    model = LinearModel(np.ones(5), 0.0, loss="squared", info=info, **_KW)
    back = fr.load(model.save(tmp_path / "m.frm"))
    expected = {"a": 1.5, "b": 3, "c": True, "d": "x", "e": None, "f": float("inf")}
    for m in (model, back):
        assert m.info == expected
        assert {k: type(v) for k, v in m.info.items()} == {k: type(v) for k, v in expected.items()}


def test_save_checks_attributes_changed_after_construction(tmp_path):
    model = LinearModel(np.ones(5), 0.0, loss="squared", **_KW)
    model.info["trace"] = [1, 2]
    with pytest.raises(TypeError, match=r"info\['trace'\] must be a number"):
        model.save(tmp_path / "m.frm")
    model.info.clear()
    model.penalty = "foo"
    with pytest.raises(ValueError, match="penalty must be one of"):
        model.save(tmp_path / "m.frm")
    assert list(tmp_path.iterdir()) == []


def test_save_keeps_links_and_special_files(tmp_path):
    """A symbolic link keeps pointing at its target, which receives the model; a FIFO is
    written through and stays a FIFO (an atomic replace would put a regular file in its
    place); a path in a missing directory is named in the error, not the temp file."""
    import stat
    import threading

    model = LinearModel(np.arange(4.0), 0.5, loss="squared", **_KW)
    target, link = tmp_path / "target.frm", tmp_path / "link.frm"
    model.save(target)
    link.symlink_to(target)
    other = LinearModel(np.ones(4), 0.0, loss="squared", **_KW)
    other.save(link)
    assert link.is_symlink() and np.array_equal(fr.load(target).coef, np.ones(4))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.frm", "target.frm"]

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    try:
        model.save(fifo)
    finally:
        # the save wrote and closed the FIFO: the reader ends (it may still be running when
        # save returns, and a writer opened then finds no reader once it has gone: ENXIO)
        reader.join(10)
        if reader.is_alive():  # the save never opened the FIFO: unblock the reader
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            reader.join(10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    (tmp_path / "copy.frm").write_bytes(received[0])
    assert np.array_equal(fr.load(tmp_path / "copy.frm").coef, model.coef)

    missing = tmp_path / "no" / "m.frm"
    with pytest.raises(FileNotFoundError, match=re.escape(f"{missing}'") + "$"):
        model.save(missing)


def _edit_meta(path, change):
    """Re-write the saved model at ``path`` with ``change(meta)`` applied to its metadata."""
    def edit(members):
        meta = _meta_of(members)
        change(meta)
        _set_meta(members, json.dumps(meta).encode())

    _rewrite(path, edit)
    return path


@pytest.mark.parametrize("cls,params,key,value", [
    (fr.LinearRegressor, dict(penalty="elasticnet", alpha=1.0), "l1_ratio", 0.9),
    (fr.LinearClassifier, dict(loss="logistic", penalty="lp", alpha=0.1), "p", 1.3),
])
def test_penalty_parameter_round_trips_into_the_estimator(tmp_path, cls, params, key, value):
    """l1_ratio (elasticnet) and p (lp) go from the estimator into the model, the file and
    the estimator rebuilt from it, whose objective on the training data is the saved one
    (with the estimators' defaults 0.15 and 2.0 it is another number)."""
    from sklearn.datasets import make_regression

    X, y = make_regression(60, 5, noise=1.0, random_state=0)
    y = y > 0 if cls is fr.LinearClassifier else y
    est = cls(**params, **{key: value}, fit_intercept=False, tol=1e-8).fit(X, y)
    model = est.to_model()
    other = "p" if key == "l1_ratio" else "l1_ratio"
    back = fr.load(model.save(tmp_path / "m.frm"))
    for m in (model, back):
        assert getattr(m, key) == value and getattr(m, other) is None
    rebuilt = fr.estimator_from_model(back)
    assert rebuilt.get_params()[key] == value
    saved = back.info["objective"]
    J = rebuilt._problem(X, y, None, 1).objective(rebuilt.coef_.ravel())
    # the same J at the same w as the solver computed it, up to the order of the sums
    assert J == pytest.approx(saved, rel=1e-12)
    default = cls(**{**rebuilt.get_params(), "l1_ratio": 0.15, "p": 2.0})
    assert default._problem(X, y, None, 1).objective(rebuilt.coef_.ravel()) != \
        pytest.approx(saved, rel=1e-3)


def test_penalty_parameter_of_another_penalty_is_not_kept():
    """The Problem ignores the parameter its penalty does not take (the estimators carry
    defaults for both): so does the model, which keeps None for it."""
    m = LinearModel(np.ones(5), 0.0, loss="squared", penalty="l2", alpha=1.0, solver="x",
                    n_samples=3, l1_ratio=0.5, p=1.5)
    assert (m.l1_ratio, m.p) == (None, None)
    m = LinearModel(np.ones(5), 0.0, loss="squared", penalty="elasticnet", alpha=1.0,
                    solver="x", n_samples=3, l1_ratio=np.float32(0.5), p=7)
    assert (m.l1_ratio, m.p) == (0.5, None) and type(m.l1_ratio) is float


def test_file_without_the_newer_fields_loads(tmp_path):
    """A file without the optional fields l1_ratio, p and info_strings loads: l1_ratio and
    p are None (not recorded), the estimator rebuilt from it takes the estimators' defaults,
    and "nan" / "inf" / "-inf" in info read as floats, as such a writer means them."""
    model = LinearModel(np.ones(5), 0.0, loss="squared", penalty="elasticnet", alpha=1.0,
                        solver="cd", n_samples=3, l1_ratio=0.9,
                        info={"objective": 1.5, "gap": float("nan"), "bound": float("-inf")})

    def strip(meta):
        for key in ("l1_ratio", "p", "info_strings", "feature_names"):
            del meta[key]

    back = fr.load(_edit_meta(model.save(tmp_path / "m.frm"), strip))
    assert (back.penalty, back.l1_ratio, back.p) == ("elasticnet", None, None)
    assert back.feature_names is None
    assert np.isnan(back.info["gap"]) and back.info["bound"] == -np.inf
    assert fr.estimator_from_model(back).get_params()["l1_ratio"] == 0.15
    # and it saves again: None is written as null
    again = fr.load(back.save(tmp_path / "again.frm"))
    assert (again.l1_ratio, again.p) == (None, None)


@pytest.mark.parametrize("penalty,key,value,message", [
    ("elasticnet", "l1_ratio", 1.5, "l1_ratio must be a finite number >= 0 and <= 1, got 1.5"),
    ("elasticnet", "l1_ratio", -0.1, "l1_ratio must be a finite number >= 0 and <= 1"),
    ("elasticnet", "l1_ratio", float("nan"), "l1_ratio must be a finite number"),
    ("elasticnet", "l1_ratio", True, "l1_ratio must be a finite number"),
    ("lp", "p", 1.0, "p must be a finite number > 1 and <= 2, got 1.0"),
    ("lp", "p", 2.5, "p must be a finite number > 1 and <= 2"),
    ("lp", "p", float("inf"), "p must be a finite number > 1 and <= 2"),
])
def test_invalid_penalty_parameter_is_refused_by_name(tmp_path, penalty, key, value, message):
    """The constructor refuses what the penalty's regularizer refuses, and load refuses it
    in a file with the same message."""
    kw = dict(loss="squared", penalty=penalty, alpha=1.0, solver="x", n_samples=3)
    with pytest.raises(ValueError, match=re.escape(message)):
        LinearModel(np.ones(5), 0.0, **kw, **{key: value})
    path = LinearModel(np.ones(5), 0.0, **kw).save(tmp_path / "m.frm")
    stored = value if isinstance(value, bool) or np.isfinite(value) else repr(value)
    _edit_meta(path, lambda meta: meta.update({key: stored}))
    if isinstance(value, bool):  # JSON true is no number
        message = f"'{key}' must be a number or null"
    with pytest.raises(ValueError, match=r"m\.frm: not a valid fastrisk model file \(.*"
                                         + re.escape(message)):
        fr.load(path)


@pytest.mark.parametrize("key,value", [("l1_ratio", "abc"), ("p", [2.0]), ("p", {})])
def test_penalty_parameter_in_a_file_must_be_a_number(tmp_path, key, value):
    path = LinearModel(np.ones(5), 0.0, loss="squared", penalty="lp", alpha=1.0, solver="x",
                       n_samples=3, p=1.5).save(tmp_path / "m.frm")
    _edit_meta(path, lambda meta: meta.update({key: value}))
    with pytest.raises(ValueError, match=f"'{key}' must be a number or null"):
        fr.load(path)


def test_info_strings_and_floats_round_trip_with_their_type(tmp_path):
    """The strings "inf", "nan" and "-inf" stay strings and the non-finite floats stay
    floats; in the JSON both are those strings (what every reader takes for the floats),
    and info_strings names the strings."""
    info = {"a": "inf", "b": "nan", "c": "-inf", "d": float("inf"), "e": float("-inf"),
            "f": float("nan"), "g": "NaN", "h": "", "i": -0.0, "j": 10**4299, "k": True,
            "l": None, "m": 2**70}
    model = LinearModel(np.ones(5), 0.0, loss="squared", info=info, **_KW)
    path = model.save(tmp_path / "m.frm")
    back = fr.load(path)
    for m in (model, back):
        assert m.info.keys() == info.keys()
        for k, v in info.items():
            w = m.info[k]
            assert type(w) is type(v), k
            assert (np.isnan(w) if k == "f" else w == v), k
    assert math.copysign(1.0, back.info["i"]) == -1.0
    with zipfile.ZipFile(path) as z:
        meta = _meta_of({n: z.read(n) for n in z.namelist()})
    assert [meta["info"][k] for k in "abcdef"] == ["inf", "nan", "-inf", "inf", "-inf", "nan"]
    assert meta["info_strings"] == ["a", "b", "c"]


@pytest.mark.parametrize("value,message", [
    ({"a": 1}, "'info_strings' must be a list of strings"),
    ([1], "'info_strings' must be a list of strings"),
    (["status"], "'info_strings' names 'status', which is not an info value"),
    (["missing"], "'info_strings' names 'missing'"),
])
def test_info_strings_in_a_file_are_checked(tmp_path, value, message):
    with pytest.raises(ValueError, match=message):
        fr.load(_saved_with_meta(tmp_path, "info_strings", value))


@pytest.mark.parametrize("value,message", [
    pytest.param(10**4300, r"info\['x'\] must be an integer of at most 4300 digits",
                 id="4301-digits"),
    pytest.param(-(10**4300), r"info\['x'\] must be an integer of at most 4300 digits",
                 id="minus-4301-digits"),
    pytest.param(Fraction(10**400), r"info\['x'\] is beyond the float range",
                 id="huge-fraction"),
])
def test_info_values_json_cannot_carry_are_refused(value, message):
    """An integer longer than a JSON reader reads back, or a real number beyond the float
    range, is refused by name rather than failing in save or later in load."""
    with pytest.raises(ValueError, match=message):
        LinearModel(np.ones(5), 0.0, loss="squared", info={"x": value}, **_KW)


def test_feature_names_go_with_the_model(tmp_path):
    """The training DataFrame's column names go from the estimator into the model, its file
    and the estimator rebuilt from it; a DataFrame with those columns in another order is
    refused (prediction matches columns by position), in order it predicts as the
    estimator; arrays without names are read by position as before."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5))
    y = np.where(X[:, 0] + 0.1 > 0, 1, -1)
    df = pd.DataFrame(X, columns=list("abcde"))
    est = fr.LinearClassifier(random_state=0).fit(df, y)
    model = fr.load(est.save(tmp_path / "m.frm"))
    assert model.feature_names == tuple("abcde")
    # the same products, summed in the memory order of each layout (the frame's is by
    # columns, X's by rows)
    for data in (df, X):
        np.testing.assert_allclose(model.decision_function(data), est.decision_function(df),
                                   rtol=1e-13)
    with pytest.raises(ValueError, match=r"^X has columns \['e', 'd', 'c', 'b', 'a'\] but the "
                                         r"model was fitted on \['a', 'b', 'c', 'd', 'e'\]"):
        model.predict(df[list("edcba")])
    back = fr.estimator_from_model(model)
    assert list(back.feature_names_in_) == list("abcde")
    with pytest.raises(ValueError, match="feature names"):
        back.predict(df[list("edcba")])
    assert fr.LinearClassifier().fit(X, y).to_model().feature_names is None
    for bad in (["a", "a", "b", "c", "d"], ["a", "b"], [1, 2, 3, 4, 5], "abcde"):
        with pytest.raises(ValueError, match="^feature_names must be None or 5 distinct"):
            LinearModel(np.ones(5), 0.0, loss="squared", penalty="l2", alpha=1.0, solver="x",
                        n_samples=3, feature_names=bad)
    path = model.save(tmp_path / "n.frm")
    _edit_meta(path, lambda meta: meta.update({"feature_names": [1, 2, 3, 4, 5]}))
    with pytest.raises(ValueError, match=r"n\.frm: not a valid fastrisk model file "
                                         r"\(feature_names must be None or 5 distinct"):
        fr.load(path)


def test_entry_points_name_a_wrong_first_argument():
    X = np.ones((3, 2))
    with pytest.raises(TypeError, match="^problem must be a fastrisk Problem"):
        fr.solve(X)
    with pytest.raises(TypeError, match="^problem must be a fastrisk Problem"):
        fr.solve(None)
    with pytest.raises(TypeError, match="^model must be a fastrisk LinearModel"):
        fr.estimator_from_model(X)
    with pytest.raises(TypeError, match="^path must be a file path"):
        fr.load(123)


def test_a_problem_whose_weight_vectors_exceed_physical_memory_is_refused(monkeypatch):
    # with overcommit the vectors' allocation would succeed and the process be killed on
    # touching them: refused before the run, naming the sizes
    import fastrisk.solvers as solvers
    import scipy.sparse as sp
    X = sp.csr_matrix((np.ones(2), np.array([0, 3]), np.array([0, 1, 2])), shape=(2, 1000))
    problem = fr.Problem(X, np.array([1.0, -1.0]), loss="logistic")
    monkeypatch.setattr(solvers, "_physical_memory", lambda: 8000)
    with pytest.raises(MemoryError, match="1000 weights: two float64 vectors"):
        fr.solve(problem, solver="sdca")
    monkeypatch.setattr(solvers, "_physical_memory", lambda: 10**9)
    assert fr.solve(problem, solver="sdca").status == "converged"


def test_one_vs_rest_probabilities_of_very_negative_scores():
    """sigmoid(f_k) / sum_j sigmoid(f_j) against NumPy for moderate scores, and finite where
    every sigmoid underflows (scores below -745): there it is the softmax of the scores,
    as sigmoid(f) = e^f (1 + o(1)) for f -> -inf."""
    from fastrisk.model import scores_to_proba

    f = np.array([[0.3, -1.2, 2.0], [-5.0, 4.0, 0.0]])
    p = 1.0 / (1.0 + np.exp(-f))
    np.testing.assert_allclose(scores_to_proba(f, "logistic"), p / p.sum(1, keepdims=True),
                               rtol=1e-14)
    low = np.array([[-800.0, -801.0, -803.0]])
    e = np.exp(low - low.max())
    np.testing.assert_allclose(scores_to_proba(low, "logistic"), e / e.sum(), rtol=1e-12)
