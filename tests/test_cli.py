"""The ``fastrisk`` command: train / predict / evaluate / info / demo, and one-line errors."""

import io
import re
import types
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score, roc_auc_score

import fastrisk as fr
from fastrisk.cli import main
from fastrisk.datasets import load_a9a


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """First 2000 a9a rows as svmlight (bz2) and the next 1000 as .npz (dense), with y."""
    X, y, _, _ = load_a9a()
    root = tmp_path_factory.mktemp("cli")
    train = root / "train.svm.bz2"
    fr.dump_svmlight(X[:2000], y[:2000], train)
    test = root / "test.npz"
    np.savez(test, X=X[2000:3000].toarray(), y=y[2000:3000])
    return root, train, test, X, y


def run(argv):
    out = io.StringIO()
    code = main([str(a) for a in argv], out=out)
    return code, out.getvalue()


def test_train_predict_evaluate_info(small, capsys):
    root, train, test, X, y = small
    model = root / "m.frm"
    code, out = run(["train", train, "--loss", "logistic", "--alpha", "1e-3", "--solver", "sdca",
                     "--tol", "1e-8", "-o", model, "--seed", "1", "--n-features", "123"])
    assert code == 0 and "saved to" in out and "solver sdca" in out
    assert "J(w) " in capsys.readouterr().err  # the progress line ("~": an estimate)
    # the same fit in-process: same data, parameters and seed give the same bits
    ref = fr.LinearClassifier(loss="logistic", alpha=1e-3, solver="sdca", tol=1e-8,
                              random_state=1).fit(X[:2000], y[:2000])
    m = fr.load(model)
    np.testing.assert_array_equal(m.coef, ref.coef_[0])
    code, out = run(["predict", model, test])
    pred = np.array([float(v) for v in out.split()])
    X_test = X[2000:3000].toarray()
    np.testing.assert_array_equal(pred, ref.predict(X_test))
    code, out = run(["evaluate", model, test])
    acc = float(re.search(r"accuracy\s+([\d.]+)", out).group(1))
    assert acc == pytest.approx(ref.score(X_test, y[2000:3000]), abs=1e-6)
    # the AUC of the model's scores, computed in NumPy from its weights, by scikit-learn
    # (printed with 6 decimals: within half a unit of the last)
    auc = float(re.search(r"^AUC\s+([\d.]+)$", out, re.M).group(1))
    scores = X_test @ m.coef + m.intercept
    assert abs(auc - roc_auc_score(y[2000:3000] == 1, scores)) <= 5e-7
    code, out = run(["info", model])
    assert code == 0 and "logistic" in out and "2000 x 123" in out and "sdca" in out


def test_predict_reads_data_with_the_training_files_index_base(tmp_path):
    """A training file in 0-based coding (index 0 present) and a test file in the same coding
    that lacks index 0: train records the base in the model, predict and evaluate read the
    test file 0-based, so the predictions are those of the model on the true rows."""
    train, test, model = tmp_path / "train.svm", tmp_path / "test.svm", tmp_path / "m.frm"
    train.write_text("1 0:1 1:2\n-1 0:-1 2:3\n1 0:2 2:-1\n-1 0:-2 1:1\n1 0:1.5\n-1 0:-1.5\n")
    test.write_text("1 1:5\n-1 2:-5\n")
    code, _ = run(["train", train, "--loss", "logistic", "--alpha", "1e-3", "-o", model, "-q"])
    assert code == 0
    m = fr.load(model)
    assert m.info["svmlight_zero_based"] is True
    rows = np.array([[0.0, 5.0, 0.0], [0.0, 0.0, -5.0]])
    code, out = run(["predict", model, test])
    assert code == 0
    np.testing.assert_array_equal([float(v) for v in out.split()], m.predict(rows))
    code, out = run(["evaluate", model, test])
    acc = float(re.search(r"accuracy\s+([\d.]+)", out).group(1))
    assert code == 0 and acc == pytest.approx(np.mean(m.predict(rows) == [1, -1]))
    code, out = run(["info", model])
    assert re.search(r"^svmlight_zero_based\s+True$", out, re.M)


@pytest.mark.parametrize("base", ["yes", 1, None])
def test_a_bad_index_base_in_the_model_is_blamed_on_the_model(tmp_path, capsys, base):
    # the data file is fine; the model's record of train's svmlight base is not
    data, model = tmp_path / "d.svm", tmp_path / "m.frm"
    data.write_text("1 1:1 2:2\n-1 1:-1 2:3\n1 1:2\n-1 2:1\n")
    assert run(["train", data, "--loss", "logistic", "-o", model, "-q"])[0] == 0
    m = fr.load(model)
    m.info["svmlight_zero_based"] = base
    m.save(model)
    assert run(["predict", model, data])[0] == 1
    err = capsys.readouterr().err
    assert f"MODEL {model}: info['svmlight_zero_based'] must be true, false or 'auto'" in err


def test_warnings_are_printed_on_one_line(tmp_path, capsys):
    # a solver stopped by its budget: the library's ConvergenceWarning as a one-line
    # "fastrisk: warning:", without Python's file:line and source line
    data = tmp_path / "d.svm"
    data.write_text("".join(f"{(-1) ** i} 1:{i % 5} 2:{i % 3}\n" for i in range(40)))
    code, _ = run(["train", data, "--solver", "bmrm", "--max-iter", "1", "--tol", "1e-12",
                   "-o", tmp_path / "m.frm", "-q"])
    err = capsys.readouterr().err
    assert code == 0
    lines = [line for line in err.splitlines() if "warning" in line.lower()]
    assert lines and all(line.startswith("fastrisk: warning: ") for line in lines)
    assert "cli.py" not in err


def test_regression_and_plot(small, tmp_path):
    root, train, _, X, y = small
    plot = tmp_path / "conv.png"
    code, out = run(["train", train, "--loss", "squared", "--alpha", "1e-2", "--solver", "sdca",
                     "-o", tmp_path / "r.frm", "--plot", plot, "--compare", "pegasos", "-q"])
    assert code == 0, out
    assert open(plot, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    code, out = run(["evaluate", tmp_path / "r.frm", train])
    assert code == 0
    # the metrics of the model's predictions on the training rows, computed in NumPy from
    # its weights, by scikit-learn (printed with 6 decimals: within half a unit of the last)
    m = fr.load(tmp_path / "r.frm")
    d = m.coef.shape[0]  # the file's width: its largest feature index
    assert X[:2000, d:].nnz == 0
    pred = X[:2000, :d] @ m.coef + m.intercept
    printed = dict(re.findall(r"^(\w+)\s+(-?[\d.]+)$", out, re.M))
    assert printed.keys() == {"RMSE", "MAE", "R2"}
    for name, value in [("RMSE", np.sqrt(mean_squared_error(y[:2000], pred))),
                        ("MAE", mean_absolute_error(y[:2000], pred)),
                        ("R2", r2_score(y[:2000], pred))]:
        assert abs(float(printed[name]) - value) <= 5e-7, name


@pytest.mark.parametrize("argv,where", [
    (["train", "nope.svm", "-o", "m.frm"], "DATA nope.svm: no such file"),
    (["train", "{train}", "--loss", "novelty", "-o", "m.frm"], "--loss novelty"),
    (["train", "{train}", "--solver", "sdca", "--penalty", "l1", "-o", "m.frm", "-q"],
     "takes penalties with an l2 term"),
    (["predict", "{train}", "{train}"], "MODEL"),
    (["info", "missing.frm"], "MODEL missing.frm: cannot read model file"),
    (["train", ".", "-o", "m.frm"], "DATA .: a directory, not a data file"),
    (["train", "text.npz", "-o", "m.frm"],
     "DATA text.npz: not an .npz archive (a zip file of .npy arrays)"),
    (["train", "{npz}", "-o", "m.frm", "--n-features", "200"],
     "holds 123 features, not --n-features 200"),
])
def test_user_errors_are_one_line(small, capsys, monkeypatch, tmp_path, argv, where):
    root, train, test, *_ = small
    monkeypatch.chdir(tmp_path)  # nothing may be written into the working directory
    (tmp_path / "text.npz").write_text("1 1:1\n")  # np.load would offer to unpickle it
    code, _ = run([a.format(train=train, npz=test) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert len(err) == 1 and err[0].startswith("fastrisk: error:") and where in err[0], err
    assert "Traceback" not in err[0]


@pytest.mark.parametrize("option,message", [
    (["--alpha", "-1"], "--alpha must be a finite number > 0"),
    (["--seed", "-1"], "--seed must be >= 0, got -1"),
    (["--seed", str(2**32)], f"--seed must be at most {2**32 - 1}"),
    (["--threads", "0"], "--threads must be >= 1, got 0"),
    (["--threads", "99999999999999999999"], "--threads must be at most 1024"),
])
def test_bad_option_value_exits_2(capsys, option, message):
    with pytest.raises(SystemExit) as exc:
        main(["train", "x.svm", "-o", "m", *option])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_data_from_a_pipe_and_plot_checked_before_fitting(tmp_path, monkeypatch, capsys):
    """DATA may be a FIFO (e.g. bash's <(zcat f.gz)): it is read like a file.  --plot without
    matplotlib is an error before any fit, so no model file is written."""
    import builtins
    import os
    import threading

    fifo, model = tmp_path / "data.svm", tmp_path / "m.frm"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text("1 1:1 2:2\n-1 1:-1 3:1\n"),
                              daemon=True)
    writer.start()
    code, out = run(["train", fifo, "-o", model, "-q"])
    writer.join(10)
    assert code == 0 and fr.load(model).n_features == 3
    model.unlink()
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    data = tmp_path / "d.svm"
    data.write_text("1 1:1\n-1 1:-1\n")
    code, _ = run(["train", data, "-o", model, "-q", "--plot", tmp_path / "p.png"])
    assert code == 1 and "--plot needs matplotlib" in capsys.readouterr().err
    assert not model.exists()


def test_demo(tmp_path):
    plot = tmp_path / "demo.png"
    code, out = run(["demo", "--time-limit", "0.5", "--plot", plot])
    assert code == 0, out
    # a9a with an l2-regularized linear model: ~85% test accuracy is the known level
    # (LIBSVM page, Platt 1998); 0.84 leaves room for the small solver differences
    acc = float(re.search(r"test accuracy: ([\d.]+)", out).group(1))
    assert acc > 0.84
    assert "solver comparison" in out and "sdca" in out
    assert plot.exists()


@pytest.fixture(scope="module")
def a9a_model(small):
    """A model on the 123 features of a9a, labels -1/+1."""
    root, train, *_ = small
    model = root / "a9a.frm"
    code, _ = run(["train", train, "--loss", "logistic", "--solver", "lbfgs", "-o", model,
                   "-q", "--n-features", "123"])
    assert code == 0
    return model


def test_evaluate_refuses_data_of_another_width(small, a9a_model, tmp_path, capsys):
    """A narrower file is not padded silently: 68 features against the model's 123."""
    rng = np.random.default_rng(0)
    narrow = tmp_path / "narrow.svm"
    fr.dump_svmlight(rng.random((40, 68)), np.where(np.arange(40) % 2, 1.0, -1.0), narrow)
    for command in ("evaluate", "predict"):
        code, out = run([command, a9a_model, narrow])
        err = capsys.readouterr().err
        assert code == 1 and out == ""
        assert "68 features, but the model was trained on 123" in err
        assert "--n-features 123" in err  # the way to say the file only lacks features
    wide = tmp_path / "wide.svm"
    fr.dump_svmlight(rng.random((40, 130)), np.ones(40), wide)
    code, _ = run(["evaluate", a9a_model, wide, "--n-features", "123"])
    assert code == 1 and "n_features=123" in capsys.readouterr().err
    # declared width: the padding is what the user asked for; scores match the estimator
    root, train, test, X, y = small
    part = tmp_path / "part.svm"
    fr.dump_svmlight(X[2000:2100, :100], y[2000:2100], part)  # largest index <= 100
    code, out = run(["evaluate", a9a_model, part, "--n-features", "123"])
    assert code == 0
    model = fr.load(a9a_model)
    X_part = sp.hstack([X[2000:2100, :100], sp.csr_matrix((100, 23))]).tocsr()
    acc = float(re.search(r"accuracy\s+([\d.]+)", out).group(1))
    assert acc == pytest.approx(np.mean(model.predict(X_part) == y[2000:2100]), abs=1e-6)


def test_evaluate_labels_outside_the_model_classes(small, a9a_model, tmp_path, capsys):
    root, train, test, X, y = small
    disjoint = tmp_path / "disjoint.npz"
    np.savez(disjoint, X=X[:50].toarray(), y=np.where(y[:50] > 0, 1.0, 0.0) + 5)
    code, out = run(["evaluate", a9a_model, disjoint])
    err = capsys.readouterr().err
    assert code == 1 and "disjoint from the model's classes (-1.0, 1.0)" in err and out == ""
    mixed = tmp_path / "mixed.npz"
    labels = y[:50].copy()
    labels[:5] = 7.0
    np.savez(mixed, X=X[:50].toarray(), y=labels)
    code, out = run(["evaluate", a9a_model, mixed])
    err = capsys.readouterr().err
    assert code == 0 and "accuracy" in out and "AUC" not in out
    assert "5 of 50 rows have labels that are not classes of the model" in err
    assert "AUC not computed" in err
    model = fr.load(a9a_model)
    acc = float(re.search(r"accuracy\s+([\d.]+)", out).group(1))
    assert acc == pytest.approx(np.mean(model.predict(X[:50]) == labels), abs=1e-6)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _result(it):
    """What Progress reads of a solver's Result."""
    return types.SimpleNamespace(objective=1.0 / it, gap=0.1 / it, n_iter=it)


def test_progress_writes_whole_lines_to_files_and_pipes():
    from fastrisk.cli import Progress

    stream = io.StringIO()  # not a terminal, like a file or a pipe
    progress = Progress("sdca", stream=stream, interval=0.0)
    for it in (1, 2, 3):
        progress(_result(it))
    progress.done()
    text = stream.getvalue()
    assert "\r" not in text and text.endswith("\n")
    assert [line.split(":")[0] for line in text.splitlines()] == ["sdca"] * 3
    # throttled: the first line at once, the last state by done()
    stream = io.StringIO()
    progress = Progress("sdca", stream=stream, interval=3600.0)
    for it in (1, 2, 3):
        progress(_result(it))
    progress.done()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and "it    1" in lines[0] and "it    3" in lines[1]
    # a terminal gets one line rewritten in place
    term = _Terminal()
    progress = Progress("sdca", stream=term)
    for it in (1, 2, 3):
        progress(_result(it))
    progress.done()
    assert term.getvalue().count("\r") == 3 and term.getvalue().count("\n") == 1


def _one_line_error(capsys):
    """The single stderr line of a failed command (no traceback)."""
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fastrisk: error:"), err
    return err[0]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """X 20 x 5, labels -1/+1, and a classifier trained on them (saved)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 5))
    y = np.where(rng.random(20) < 0.5, 1.0, -1.0)
    root = tmp_path_factory.mktemp("tiny")
    fr.LinearClassifier(solver="lbfgs").fit(X, y).save(root / "m.frm")
    return root, X, y


def _npy_text(header, data):
    text = header.encode("latin1")
    text += b" " * (-(10 + len(text) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + data


def _bad_npz(path, kind, X, y):
    """Write an .npz of the given fault."""
    csr = sp.csr_matrix(X)
    csr_arrays = dict(data=csr.data, indices=csr.indices, indptr=csr.indptr,
                      shape=np.array(csr.shape))
    if kind == "1-d X":
        np.savez(path, X=X[:, 0], y=y)
    elif kind == "short y":
        np.savez(path, X=X, y=y[:5])
    elif kind == "2-d y":
        np.savez(path, X=X, y=np.column_stack([y, y]))
    elif kind == "no y":
        np.savez(path, X=X)
    elif kind == "complex X":
        np.savez(path, X=X + 1j, y=y)
    elif kind == "float shape":
        np.savez(path, **{**csr_arrays, "shape": np.array(X.shape, dtype=float)}, y=y)
    elif kind == "huge shape":  # int(shape) beyond scipy's index range
        np.savez(path, **{**csr_arrays, "shape": np.array([20, 2**64 - 1], dtype=np.uint64)},
                 y=y)
    elif kind == "byte-string labels":
        np.savez(path, X=X, y=np.where(y > 0, b"yes", b"no"))
    elif kind == "float indices":
        np.savez(path, **{**csr_arrays, "indices": csr.indices.astype(float)}, y=y)
    elif kind == "index out of range":
        np.savez(path, **{**csr_arrays, "indices": csr.indices + 3}, y=y)
    elif kind == "one .npy":
        with open(path, "wb") as fh:
            np.save(fh, X)
    elif kind == "malformed header":  # numpy's header parser raises tokenize.TokenError
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("X.npy", _npy_text("{'descr': '<f8', 'fortran_order': False, "
                                          "'shape': (20, 5,, }", X.tobytes()))
            z.writestr("y.npy", _npy_text("{'descr': '<f8', 'fortran_order': False, "
                                          "'shape': (20,), }", y.tobytes()))


@pytest.mark.parametrize("kind,message", [
    ("1-d X", r"X must be 2-dimensional, got shape \(20,\)"),
    ("short y", r"y has shape \(5,\), expected \(20,\)"),
    ("2-d y", r"y has shape \(20, 2\), expected \(20,\)"),
    ("no y", "the .npz archive lacks 'y'"),
    ("complex X", r"X: Complex data not supported \(X must be real\)"),
    ("float shape", "shape must hold two integers >= 0"),
    ("huge shape", r"shape must hold two integers >= 0 and <= 2\*\*62"),
    ("byte-string labels", r"y holds byte strings \(dtype \|S3\): store the labels as str"),
    ("float indices", "indices must be a 1-d integer array"),
    ("index out of range", "X has column index 7 out of range"),
    ("one .npy", "not an .npz archive"),
    ("malformed header", r"not a readable \.npz archive \(TokenError"),
])
@pytest.mark.parametrize("command", ["train", "predict", "evaluate"])
def test_bad_npz_data_is_a_one_line_error(tiny, tmp_path, capsys, command, kind, message):
    root, X, y = tiny
    data = tmp_path / "bad.npz"
    _bad_npz(data, kind, X, y)
    argv = ["train", data, "-o", tmp_path / "out.frm", "-q"] if command == "train" else \
        [command, root / "m.frm", data]
    code, out = run(argv)
    assert code == 1 and out == ""
    line = _one_line_error(capsys)
    assert re.search(rf"DATA {re.escape(str(data))}: {message}", line), line


def test_evaluating_a_regressor_on_string_labels_is_a_one_line_error(tiny, tmp_path, capsys):
    """A regressor's metrics need numeric targets: labels read as strings are named as the
    data's fault (not a float conversion error from inside scikit-learn)."""
    root, X, y = tiny
    fr.LinearRegressor(solver="lbfgs").fit(X, y).save(tmp_path / "reg.frm")
    data = tmp_path / "labels.npz"
    np.savez(data, X=X, y=np.where(y > 0, "yes", "no"))
    code, out = run(["evaluate", tmp_path / "reg.frm", data])
    assert code == 1 and out == ""
    line = _one_line_error(capsys)
    assert line == ("fastrisk: error: DATA targets must be numbers for a squared model (a "
                    "regressor), got labels of dtype <U3"), line


@pytest.mark.parametrize("argv,option", [
    (["predict", "{model}", "{data}", "-o", "{missing}/out.txt"], "--output"),
    (["predict", "{model}", "{data}", "-o", "{dir}"], "--output"),
    (["train", "{data}", "-q", "-o", "{missing}/m.frm"], "--output"),
    (["train", "{data}", "-q", "-o", "{dir}/m.frm", "--plot", "{missing}/p.png"], "--plot"),
])
def test_unwritable_output_paths_are_one_line_errors(tiny, tmp_path, capsys, argv, option):
    root, X, y = tiny
    data = tmp_path / "d.npz"
    np.savez(data, X=X, y=y)
    paths = dict(model=root / "m.frm", data=data, missing=tmp_path / "missing", dir=tmp_path)
    code, out = run([a.format(**paths) for a in argv])
    assert code == 1
    line = _one_line_error(capsys)
    assert line.startswith(f"fastrisk: error: {option} {tmp_path}"), line
    assert "No such file or directory" in line or "Is a directory" in line, line


@pytest.mark.parametrize("command", ["info", "predict", "evaluate"])
def test_malformed_model_file_is_a_one_line_error(tiny, tmp_path, capsys, command):
    root, X, y = tiny
    model = tmp_path / "m.frm"
    with zipfile.ZipFile(root / "m.frm") as z:
        members = {n: z.read(n) for n in z.namelist()}
    members["coef.npy"] = _npy_text("{'descr': '<f8', 'fortran_order': False, "
                                    "'shape': (5,,, }", np.zeros(5).tobytes())
    with zipfile.ZipFile(model, "w") as z:
        for n, b in members.items():
            z.writestr(n, b)
    data = tmp_path / "d.npz"
    np.savez(data, X=X, y=y)
    code, out = run([command, model] + ([] if command == "info" else [data]))
    assert code == 1 and out == ""
    line = _one_line_error(capsys)
    assert f"MODEL {model}: not a valid fastrisk model file (coef: bad .npy header" in line


@pytest.mark.parametrize("exc,reported", [
    (PermissionError(13, "Permission denied", "x.frm"), True),
    (ValueError("alpha must be a finite number > 0\nsecond line"), True),
    (AttributeError("a bug"), False),
    (KeyError("a bug"), False),
])
def test_main_reports_input_errors_and_shows_bugs(monkeypatch, capsys, exc, reported):
    """ValueError, TypeError and OSError are the user's input (one line, status 1); any
    other exception is a bug and keeps its traceback."""
    import fastrisk.cli

    def fail(args, out):
        raise exc

    monkeypatch.setattr(fastrisk.cli, "cmd_info", fail)
    monkeypatch.delenv("FASTRISK_DEBUG", raising=False)
    if not reported:
        with pytest.raises(type(exc)):
            main(["info", "x.frm"])
        return
    assert main(["info", "x.frm"]) == 1
    assert _one_line_error(capsys) == f"fastrisk: error: {str(exc).splitlines()[0]}"


def test_unsorted_csr_npz_is_read_alike_by_all_commands(tiny, tmp_path, capsys):
    """Rows stored in reverse column order, one entry split into two duplicates: train,
    predict and evaluate all read the matrix scipy builds from the dense array."""
    root, X, y = tiny
    X = np.round(X * 8) / 8  # eighths: the split duplicates sum back exactly
    X[X == 0] = 1.0
    data, indices, indptr = [], [], [0]
    for row in X:
        cols = list(range(X.shape[1]))[::-1]
        values = list(row[::-1])
        cols.append(cols[0])  # column 4 twice: half of its value in each entry
        values[0] /= 2
        values.append(values[0])
        data += values
        indices += cols
        indptr.append(len(indices))
    unsorted = sp.csr_matrix((np.array(data), np.array(indices, dtype=np.int32),
                              np.array(indptr, dtype=np.int32)), shape=X.shape)
    assert not unsorted.has_canonical_format
    path = tmp_path / "unsorted.npz"
    np.savez(path, data=unsorted.data, indices=unsorted.indices, indptr=unsorted.indptr,
             shape=np.array(X.shape), y=y)
    model = tmp_path / "m.frm"
    code, _ = run(["train", path, "--loss", "logistic", "--solver", "lbfgs", "-q", "-o", model])
    assert code == 0, capsys.readouterr().err
    ref = fr.LinearClassifier(loss="logistic", solver="lbfgs", random_state=0).fit(
        sp.csr_matrix(X), y)
    np.testing.assert_array_equal(fr.load(model).coef, ref.coef_[0])
    code, out = run(["predict", model, path])
    assert code == 0
    np.testing.assert_array_equal([float(v) for v in out.split()], ref.predict(X))
    code, out = run(["evaluate", model, path])
    assert code == 0
    acc = float(re.search(r"accuracy\s+([\d.]+)", out).group(1))
    assert acc == pytest.approx(np.mean(ref.predict(X) == y), abs=1e-6)


def test_compare_solver_that_cannot_take_the_problem_is_refused_before_any_fit(
        tmp_path, monkeypatch, capsys):
    """--compare msdca with a binary loss and --compare sdca with an l1 penalty: one-line
    errors naming --compare and the solver's reason, before the main fit (fit is replaced
    by a failure) and without a model file; a solver that fits runs as before."""
    data, model = tmp_path / "d.svm", tmp_path / "m.frm"
    data.write_text("1 1:1 2:2\n-1 1:-1 3:1\n1 2:1\n-1 3:-2\n")

    def no_fit(self, *args, **kwargs):
        raise AssertionError("a fit ran")

    with monkeypatch.context() as m:
        m.setattr(fr.LinearClassifier, "fit", no_fit)
        for extra, reason in ((["--compare", "msdca"], "takes the softmax and multiclass_hinge"),
                              (["--penalty", "l1", "--compare", "sdca"],
                               "takes penalties with an l2 term")):
            code, _ = run(["train", data, "-o", model, "-q", *extra])
            err = capsys.readouterr().err
            assert code == 1 and err.startswith(f"fastrisk: error: --compare "
                                                f"{extra[-1]}: solver '{extra[-1]}' ")
            assert reason in err and not model.exists()
    code, _ = run(["train", data, "-o", model, "-q", "--loss", "logistic", "--compare", "newton"])
    assert code == 0 and model.exists()


def test_info_shows_the_feature_names(tmp_path):
    """A model fitted on a DataFrame: info lists its column names; without names, no row."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    named = fr.LinearClassifier().fit(pd.DataFrame(X, columns=["u", "v", "w"]), y)
    code, out = run(["info", named.save(tmp_path / "n.frm")])
    assert code == 0 and re.search(r"^features\s+u v w$", out, re.M)
    code, out = run(["info", fr.LinearClassifier().fit(X, y).save(tmp_path / "a.frm")])
    assert code == 0 and not re.search(r"^features", out, re.M)
