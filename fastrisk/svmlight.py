"""svmlight / libsvm text format: reading and writing, plain or compressed.

A line is ``label [qid:q] index:value ...  # comment``.  Indices are
1-based by default (``zero_based=False``), as in LIBSVM files; ``"auto"``
treats the file as 0-based when any index 0 occurs.  ``.gz``, ``.bz2`` and
``.xz`` files are (de)compressed by their suffix.
"""

import bz2
import gzip
import lzma
import os

import numpy as np
import scipy.sparse as sp

_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def _open(path, mode):
    return _OPENERS.get(os.path.splitext(os.fspath(path))[1].lower(), open)(path, mode)


def load_svmlight(path, *, n_features=None, dtype=np.float64, zero_based="auto"):
    """Read an svmlight file; returns (X as canonical CSR, y as float64).

    ``n_features`` widens X (an error if the file has a larger index).
    Malformed lines raise ValueError with the line number.
    """
    if np.dtype(dtype) not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    labels, counts, tokens = [], [], []
    with _open(path, "rb") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.split(b"#", 1)[0].split()
            if not line:
                continue
            try:
                labels.append(float(line[0]))
            except ValueError:
                raise ValueError(f"{path}: line {lineno}: bad label {line[0][:20]!r}") from None
            feats = line[2:] if len(line) > 1 and line[1].startswith(b"qid:") else line[1:]
            counts.append(len(feats))
            tokens.extend(feats)
    if not labels:
        raise ValueError(f"{path}: no data lines")
    pairs = b" ".join(tokens).replace(b":", b" ")
    bad = ValueError(f"{path}: a feature is not of the form index:value with numbers")
    try:
        flat = np.fromstring(pairs.decode("ascii", "replace"), dtype=np.float64, sep=" ")
    except ValueError:
        raise bad from None
    if flat.size != 2 * len(tokens):
        raise bad
    flat = flat.reshape(-1, 2)
    index, value = flat[:, 0], flat[:, 1]
    if (index != np.round(index)).any() or (index < 0).any():
        raise ValueError(f"{path}: feature indices must be non-negative integers")
    index = index.astype(np.int64)
    if zero_based is False or (zero_based == "auto" and not (index == 0).any()):
        if (index == 0).any():
            raise ValueError(f"{path}: index 0 in a 1-based file (pass zero_based=True)")
        index -= 1
    width = int(index.max()) + 1 if index.size else 0
    if n_features is not None:
        if n_features < width:
            raise ValueError(f"n_features={n_features} but {path} has feature index {width}")
        width = int(n_features)
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    itype = np.int32 if max(width, indptr[-1]) < 2**31 else np.int64
    X = sp.csr_matrix(
        (value.astype(dtype), index.astype(itype), indptr.astype(itype)),
        shape=(len(labels), max(width, 1)),
    )
    X.sum_duplicates()
    if not np.isfinite(X.data).all():
        raise ValueError(f"{path}: contains NaN or infinity")
    return X, np.asarray(labels)


def dump_svmlight(X, y, path, *, zero_based=False):
    """Write X (dense or sparse) and y in svmlight format; zero entries are skipped.

    Numbers are written with Python's shortest round-trip repr, so reading
    the file back gives the same bits.
    """
    X = sp.csr_matrix(X)
    y = np.asarray(y, dtype=np.float64).ravel().tolist()
    if len(y) != X.shape[0]:
        raise ValueError(f"y has {len(y)} entries but X has {X.shape[0]} rows")
    X.sum_duplicates()
    X.eliminate_zeros()
    off = 0 if zero_based else 1
    with _open(path, "wb") as fh:
        for i in range(X.shape[0]):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            feats = " ".join(f"{j + off}:{v!r}" for j, v in zip(X.indices[lo:hi].tolist(), X.data[lo:hi].tolist()))
            fh.write(f"{y[i]!r} {feats}".rstrip().encode() + b"\n")
