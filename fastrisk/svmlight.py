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
import warnings

import numpy as np
import scipy.sparse as sp

_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
MAX_INDEX = 2**31 - 1  # largest index read without an explicit n_features
_CHUNK_BYTES = 8 << 20  # lines are parsed in blocks of about this size


def _open(path, mode):
    return _OPENERS.get(os.path.splitext(os.fspath(path))[1].lower(), open)(path, mode)


class _Chunk:
    """One block of lines parsed: labels, features per row, raw indices and values."""

    def __init__(self, path, lines, first_lineno, dtype, max_raw):
        labels, rests, linenos = [], [], []
        for lineno, line in enumerate(lines, first_lineno):
            if b"#" in line:
                line = line.split(b"#", 1)[0]
            parts = line.split(None, 1)
            if not parts:
                continue
            try:
                labels.append(float(parts[0]))
            except ValueError:
                raise ValueError(f"{path}: line {lineno}: bad label {parts[0][:20]!r}") from None
            rest = parts[1] if len(parts) > 1 else b""
            if rest.startswith(b"qid:"):
                rest = rest.split(None, 1)[1] if len(rest.split(None, 1)) > 1 else b""
            rests.append(rest)
            linenos.append(lineno)
        self.labels = np.array(labels, dtype=np.float64)
        self.linenos = np.array(linenos, dtype=np.int64)
        if not np.isfinite(self.labels).all():
            raise ValueError(f"{path}: line {self.linenos[~np.isfinite(self.labels)][0]}: "
                             "bad label (NaN or infinity)")
        self.counts = np.array([r.count(b":") for r in rests], dtype=np.int64)
        pairs = self._pairs(path, rests)
        self.index = pairs[:, 0]
        value = pairs[:, 1]
        row = self._row
        if not np.isfinite(value).all():
            raise ValueError(f"{path}: line {row(np.flatnonzero(~np.isfinite(value))[0])}: "
                             "contains NaN or infinity")
        bad = np.flatnonzero((self.index != np.floor(self.index)) | (self.index < 0))
        if bad.size:
            raise ValueError(f"{path}: line {row(bad[0])}: feature indices must be non-negative "
                             f"integers, got {self.index[bad[0]]!r}")
        big = np.flatnonzero(self.index > max_raw)
        if big.size:
            raise ValueError(f"{path}: line {row(big[0])}: feature index {int(self.index[big[0]])} "
                             f"{_too_big(max_raw)}")
        self.index = self.index.astype(np.int32 if max_raw < 2**31 else np.int64)
        self.value = value.astype(dtype)
        self._check_duplicates(path)

    def _row(self, k):
        """Line number of the k-th feature of the chunk."""
        return self.linenos[np.searchsorted(np.cumsum(self.counts), k, side="right")]

    def _pairs(self, path, rests):
        """(index, value) of every feature: each token is exactly ``number:number``."""
        feats = b" ".join(rests)
        n_colons = int(self.counts.sum())
        # every token holds one colon: as many tokens as colons, and a separator between
        # any two consecutive colons.  Bytes up to 32 count as separators here; the control
        # characters among them that are not whitespace make the number parsing fail.
        raw = np.frombuffer(feats, dtype=np.uint8)
        ws = raw <= 32
        n_tokens = int(np.count_nonzero(ws[:-1] & ~ws[1:])) + bool(ws.size and not ws[0])
        separated = (np.diff(np.searchsorted(np.flatnonzero(ws), np.flatnonzero(raw == 58)))
                     > 0).all()
        del ws, raw
        flat = None
        if n_tokens == n_colons and separated:
            with warnings.catch_warnings():
                warnings.simplefilter("error", DeprecationWarning)  # a token that is no number
                try:
                    flat = np.fromstring(feats.replace(b":", b" "), dtype=np.float64, sep=" ")
                except (ValueError, DeprecationWarning):
                    pass
        if flat is None or flat.size != 2 * n_colons:
            for lineno, rest in zip(self.linenos, rests):  # find the line at fault
                for token in rest.split():
                    parts = token.split(b":")
                    try:
                        if len(parts) != 2:
                            raise ValueError
                        float(parts[0]), float(parts[1])
                    except ValueError:
                        raise ValueError(f"{path}: line {lineno}: feature {token[:30]!r} is not "
                                         "of the form index:value with numbers") from None
            raise ValueError(f"{path}: a feature is not of the form index:value with numbers")
        return flat.reshape(-1, 2)

    def _check_duplicates(self, path):
        """Indices within a line must be distinct (as scikit-learn's reader requires)."""
        index, counts = self.index, self.counts
        if index.size < 2:
            return
        ends = np.cumsum(counts)
        increasing = index[1:] > index[:-1]
        increasing[ends[(ends > 0) & (ends < index.size)] - 1] = True
        if increasing.all():
            return
        starts = ends - counts
        for r in np.unique(np.searchsorted(ends, np.flatnonzero(~increasing), side="right")):
            row = np.sort(index[starts[r]:ends[r]])
            dup = row[1:][row[1:] == row[:-1]]
            if dup.size:
                raise ValueError(f"{path}: line {self.linenos[r]}: duplicate feature index "
                                 f"{int(dup[0])}")


def _too_big(max_raw):
    if max_raw == MAX_INDEX:
        return "is above 2**31 - 1; if the data really has that many features, pass n_features"
    return f"is beyond n_features={max_raw}"


def load_svmlight(path, *, n_features=None, dtype=np.float64, zero_based="auto"):
    """Read an svmlight file; returns (X as canonical CSR, y as float64).

    ``n_features`` widens X (an error if the file has a larger index); without
    it, indices above 2**31 - 1 are refused (pass ``n_features`` for wider data).
    Malformed lines, duplicate indices within a line, NaN and infinity raise
    ValueError with the line number.  The file is parsed in blocks: memory is
    about the size of X plus one block.
    """
    if np.dtype(dtype) not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    if n_features is not None and (not isinstance(n_features, (int, np.integer))
                                   or isinstance(n_features, bool) or n_features < 1):
        raise ValueError(f"n_features must be None or an integer >= 1, got {n_features!r}")
    # largest raw index: n_features in a 1-based file (the exact bound is checked below)
    max_raw = MAX_INDEX if n_features is None else int(n_features)
    chunks, lineno = [], 1
    with _open(path, "rb") as fh:
        while True:
            lines = fh.readlines(_CHUNK_BYTES)
            if not lines:
                break
            chunk = _Chunk(path, lines, lineno, dtype, max_raw)
            lineno += len(lines)
            if chunk.labels.size:
                chunks.append(chunk)
    if not chunks:
        raise ValueError(f"{path}: no data lines")
    has_zero = any((c.index == 0).any() for c in chunks)
    if zero_based is False or (zero_based == "auto" and not has_zero):
        if has_zero:
            c = next(c for c in chunks if (c.index == 0).any())
            raise ValueError(f"{path}: line {c._row(np.flatnonzero(c.index == 0)[0])}: index 0 "
                             "in a 1-based file (pass zero_based=True)")
        for c in chunks:
            c.index -= 1
    width = max((int(c.index.max()) + 1 for c in chunks if c.index.size), default=0)
    if n_features is not None:
        if n_features < width:
            raise ValueError(f"n_features={n_features} but {path} has feature index {width}")
        width = int(n_features)
    counts = np.concatenate([c.counts for c in chunks])
    indptr = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    itype = np.int32 if max(width, indptr[-1]) < 2**31 else np.int64
    y = np.concatenate([c.labels for c in chunks])
    index = np.concatenate([c.index for c in chunks]).astype(itype, copy=False)
    value = np.concatenate([c.value for c in chunks])
    del chunks
    X = sp.csr_matrix((value, index, indptr.astype(itype)), shape=(y.size, max(width, 1)))
    X.sort_indices()  # lines may list their (distinct) indices in any order
    return X, y


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
