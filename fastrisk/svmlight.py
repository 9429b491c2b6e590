"""svmlight / libsvm text format: reading and writing, plain or compressed.

A line is ``label [qid:q] index:value ...  # comment``.  Indices are
1-based in LIBSVM files.  The reader's default ``zero_based="auto"`` takes the
base a header says (comment lines before the first data line reading
``Column indices are zero-based`` or ``one-based``: dump_svmlight writes the
first when it writes 0-based indices, as scikit-learn's writer does), and
without one treats the file as 0-based when any index 0 occurs.  Without a
header a 0-based file whose column 0 is empty is thus read 1-based, its
columns shifted by one: pass ``zero_based=True`` for such files.  ``.gz``,
``.bz2`` and ``.xz`` files are (de)compressed by their suffix.
"""

import bz2
import gzip
import lzma
import os
import warnings
import zlib

import numpy as np
import scipy.sparse as sp

from fastrisk.data import canonical_csr, check_sparse_structure, numeric_frame, refuse_masked

_OPENERS = {".gz": (gzip.open, "gzip"), ".bz2": (bz2.open, "bzip2"), ".xz": (lzma.open, "xz")}
# what the decompressors raise on corrupt or truncated data (OSError only without an errno:
# one with an errno is a real I/O error, reported as it is)
_DECODE_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError)
MAX_INDEX = 2**31 - 1  # largest index read without an explicit n_features
# indices are parsed as doubles, which hold every integer up to 2**53 exactly: a wider
# n_features would let a larger index in the file round to a different one
MAX_N_FEATURES = 2**53 - 1
_CHUNK_BYTES = 8 << 20  # lines are parsed in blocks of about this size
_FLOATS = (np.float32, np.float64)


def _check_path(path):
    """The file name of ``path`` (str or os.PathLike, or bytes) as a str, for messages."""
    try:
        return os.fsdecode(os.fspath(path))
    except TypeError:
        raise TypeError(f"path must be a file name (str or os.PathLike), got "
                        f"{type(path).__name__}") from None


def _compression(name):
    """(opener, format name) for the suffix of ``name``; (open, None) for a plain file."""
    return _OPENERS.get(os.path.splitext(name)[1].lower(), (open, None))


def _numbers(text, count):
    """The ``count`` numbers of whitespace-separated ``text`` as float64, or None when it
    holds anything else (NumPy's parser: no ``_`` digit separators, unlike float())."""
    if count == 0:  # np.fromstring reads whitespace alone as [-1.0]
        return np.empty(0) if not text.strip() else None
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # a token that is no number
        try:
            flat = np.fromstring(text, dtype=np.float64, sep=" ")
        except (ValueError, DeprecationWarning):
            return None
    return flat if flat.size == count else None


def _show(value):
    """A parsed index for a message: an integer in full, a huge one in exponent notation."""
    return str(int(value)) if value < 1e20 else f"{value:.6g}"


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
                if b"_" in parts[0]:  # float() reads Python's digit separators: "1_0" is 10
                    raise ValueError
                labels.append(float(parts[0]))
            except ValueError:
                raise ValueError(f"{path}: line {lineno}: bad label {parts[0][:20]!r}") from None
            rest = parts[1] if len(parts) > 1 else b""
            if rest.startswith(b"qid"):  # skipped (the reader returns no query ids)
                qid, rest = (rest.split(None, 1) + [b""])[:2]
                if not (qid.startswith(b"qid:") and qid[4:].isdigit()):
                    raise ValueError(f"{path}: line {lineno}: bad query id {qid[:20]!r} "
                                     "(qid:<non-negative integer>)")
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
        big = np.flatnonzero(self.index > max_raw)
        if big.size:
            raise ValueError(f"{path}: line {row(big[0])}: feature index "
                             f"{_show(self.index[big[0]])} {_too_big(max_raw)}")
        self.index = self.index.astype(np.int32 if max_raw < 2**31 else np.int64)
        limit = np.finfo(dtype).max
        # a finite value that the requested dtype cannot hold would become infinity there
        over = np.flatnonzero(np.abs(value) > limit) if dtype != np.float64 else ()
        if len(over):
            raise ValueError(f"{path}: line {row(over[0])}: value {float(value[over[0]])!r} is too "
                             f"large for dtype {np.dtype(dtype).name} (at most {limit:g}); "
                             "load it as float64")
        self.value = value.astype(dtype)
        self._check_duplicates(path)

    def _row(self, k):
        """Line number of the k-th feature of the chunk."""
        return self.linenos[np.searchsorted(np.cumsum(self.counts), k, side="right")]

    def _pairs(self, path, rests):
        """(index, value) of every feature: each token is exactly ``number:number``, its
        index written as digits (``_first_nondigit_index``)."""
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
        flat = None
        if n_tokens == n_colons and separated:  # lines without features give no token
            flat = _numbers(feats.replace(b":", b" "), 2 * n_colons)
        nondigit = None if flat is None else self._first_nondigit_index(raw, ws)
        del ws, raw
        if nondigit is not None:  # also NaN, infinite, negative and fractional indices
            k, token = nondigit
            raise ValueError(f"{path}: line {self._row(k)}: feature indices must be non-negative "
                             f"integers written as digits, got {token[:30]!r}")
        if flat is None:
            for lineno, rest in zip(self.linenos, rests):  # find the line at fault
                for token in rest.split():
                    if token.count(b":") != 1 or _numbers(token.replace(b":", b" "), 2) is None:
                        raise ValueError(f"{path}: line {lineno}: feature {token[:30]!r} is not "
                                         "of the form index:value with numbers")
            # every token parses alone, so the block should have parsed: never pass silently
            raise ValueError(f"{path}: a feature is not of the form index:value with numbers")
        return flat.reshape(-1, 2)

    @staticmethod
    def _first_nondigit_index(raw, ws):
        """(number, token) of the first feature whose index is not written as digits alone
        (LIBSVM's reader requires digits; the number parser would also read ``1e1``,
        ``+3`` or ``3.0`` as an index), or None.  ``raw`` holds the features of the chunk
        with one colon per token (checked by the caller), ``ws`` its separator bytes."""
        if raw.shape[0] == 0:
            return None
        starts = np.flatnonzero(~ws & np.concatenate(([True], ws[:-1])))
        marks = np.zeros(raw.shape[0] + 1, dtype=np.int8)
        marks[starts] = 1
        marks[np.flatnonzero(raw == 58)] -= 1  # ':' ends the index of its token
        inside = np.cumsum(marks[:-1], dtype=np.int8).astype(bool)
        bad = np.flatnonzero(inside & ((raw < 48) | (raw > 57)))
        if bad.size == 0:
            return None
        k = int(np.searchsorted(starts, bad[0], side="right")) - 1
        return k, raw[starts[k]:].tobytes().split(None, 1)[0]

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


def _read_blocks(path, name):
    """Blocks of about _CHUNK_BYTES of lines: (line number of the first, lines).

    Corrupt or truncated compressed data raises ValueError naming the file, with the
    decompressor's error as its cause.
    """
    opener, kind = _compression(name)
    lineno = 1
    with opener(path, "rb") as fh:
        while True:
            try:
                lines = fh.readlines(_CHUNK_BYTES)
            except _DECODE_ERRORS as exc:
                if kind is None or (isinstance(exc, OSError) and exc.errno is not None):
                    raise
                raise ValueError(f"{name} is not a valid {kind} file ({exc})") from exc
            if not lines:
                return
            yield lineno, lines
            lineno += len(lines)


_HEADER_BASES = ((b"column indices are zero-based", True),
                 (b"column indices are one-based", False))


def _header_base(lines):
    """The base the comment lines before the first data line state (module docstring),
    or None."""
    for line in lines:
        text = line.strip()
        if text and not text.startswith(b"#"):
            return None
        for phrase, base in _HEADER_BASES:
            if phrase in text.lower():
                return base
    return None


def check_zero_based(zero_based):
    """``zero_based`` of the reader: True, False (as Python bools: "is False" below must
    hold for np.False_ too) or "auto"; anything else raises naming it."""
    if isinstance(zero_based, (bool, np.bool_)):
        return bool(zero_based)
    if not isinstance(zero_based, str):
        raise TypeError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    if zero_based != "auto":
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    return zero_based


def load_svmlight(path, *, n_features=None, dtype=np.float64, zero_based="auto"):
    """Read an svmlight file; returns (X as canonical CSR, y as float64).

    ``n_features`` widens X (an error if the file has a larger index); without
    it, indices above 2**31 - 1 are refused (pass ``n_features`` for wider data).
    ``zero_based``: True, False or "auto" (the module docstring).  Lines with a
    label and no feature are empty rows.  Malformed lines, duplicate indices
    within a line, NaN and infinity raise ValueError with the line number; a
    corrupt compressed file raises ValueError naming it.  The file is parsed in
    blocks: memory is about the size of X plus one block.
    """
    return read_svmlight(path, n_features=n_features, dtype=dtype, zero_based=zero_based)[:2]


def read_svmlight(path, *, n_features=None, dtype=np.float64, zero_based="auto"):
    """``load_svmlight``, returning (X, y, whether the indices were read 0-based)."""
    name = _check_path(path)
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be float32 or float64, got {dtype!r}") from None
    if dtype not in _FLOATS:
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
    zero_based = check_zero_based(zero_based)
    if n_features is not None and (not isinstance(n_features, (int, np.integer))
                                   or isinstance(n_features, (bool, np.bool_))
                                   or not 1 <= n_features <= MAX_N_FEATURES):
        raise ValueError(f"n_features must be None or an integer from 1 to 2**53 - 1, got "
                         f"{n_features!r}")
    # largest raw index: n_features in a 1-based file (the exact bound is checked below)
    max_raw = MAX_INDEX if n_features is None else int(n_features)
    chunks = []
    for lineno, lines in _read_blocks(path, name):
        if lineno == 1 and zero_based == "auto":
            zero_based = _header_base(lines)
            zero_based = "auto" if zero_based is None else zero_based
        chunk = _Chunk(name, lines, lineno, dtype, max_raw)
        if chunk.labels.size:
            chunks.append(chunk)
    if not chunks:
        raise ValueError(f"{name}: no data lines")
    has_zero = any((c.index == 0).any() for c in chunks)
    if zero_based == "auto":
        zero_based = bool(has_zero)
    if zero_based is False:
        if has_zero:
            c = next(c for c in chunks if (c.index == 0).any())
            raise ValueError(f"{name}: line {c._row(np.flatnonzero(c.index == 0)[0])}: index 0 "
                             "in a 1-based file (pass zero_based=True)")
        for c in chunks:
            c.index -= 1
    width = max((int(c.index.max()) + 1 for c in chunks if c.index.size), default=0)
    if n_features is not None:
        if n_features < width:
            raise ValueError(f"n_features={n_features} but {name} has feature index {width}")
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
    return X, y, zero_based


def _rows_to_write(X):
    """X as CSR of float32/float64 with sorted, distinct column indices and finite values.

    The structure of a sparse X is checked before scipy converts it or anything reads
    its indices (scipy trusts them: an index out of range makes its routines write out
    of bounds).  Duplicate indices are summed into one entry, on a copy: the caller's
    arrays are only read.
    """
    if sp.issparse(X):
        if X.dtype.kind not in "biuf":
            raise TypeError(f"X must have a real numeric dtype, got {X.dtype}")
        canonical = check_sparse_structure(X, "X")
        if X.dtype not in _FLOATS:  # before any summing, which integers could overflow
            X = X.astype(np.float64)
        if X.format != "csr":
            X = X.tocsr()
            canonical = check_sparse_structure(X, "X")
        if not canonical:
            X = canonical_csr(X)
    else:
        X = numeric_frame(refuse_masked(X, "X"))
        try:
            X = np.asarray(X)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"X must be an array or a scipy sparse matrix ({exc})") from exc
        if X.dtype.kind not in "biuf":
            raise TypeError(f"X must have a real numeric dtype, got {X.dtype}")
        if X.ndim != 2:
            raise ValueError(f"X must be 2-dimensional, got shape {X.shape}")
        X = sp.csr_matrix(X if X.dtype in _FLOATS else X.astype(np.float64))
    if X.shape[0] == 0:
        raise ValueError(f"X has no rows (shape {X.shape}); an svmlight file needs a line")
    if not np.isfinite(X.data).all():  # also sums of duplicates that overflow
        raise ValueError("X contains NaN or infinity, which svmlight files cannot hold")
    return X


def _labels_to_write(y, n_samples):
    """y as a list of n_samples finite floats; a column vector (n_samples, 1) is accepted."""
    try:
        y = np.asarray(y)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"y must be a 1-dimensional array of numbers ({exc})") from exc
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be 1-dimensional, got shape {y.shape}")
    if y.dtype.kind not in "biuf":
        raise TypeError(f"y must have a real numeric dtype, got {y.dtype}")
    if y.shape[0] != n_samples:
        raise ValueError(f"y has {y.shape[0]} entries but X has {n_samples} rows")
    y = y.astype(np.float64)
    if not np.isfinite(y).all():
        raise ValueError("y contains NaN or infinity, which svmlight files cannot hold")
    return y.tolist()


def dump_svmlight(X, y, path, *, zero_based=False):
    """Write X (dense or sparse) and y in svmlight format; zero entries are skipped.

    Numbers are written with Python's shortest round-trip repr, so reading
    the file back gives the same bits.  Duplicate column indices of a sparse
    X are summed into one entry (X itself is not modified).  All arguments
    are checked before the file is opened: X and y must be real and finite,
    y must have one label per row of X, ``zero_based`` must be a bool.  A 0-based
    file starts with the header ``# Column indices are zero-based``, from which
    load_svmlight reads it back 0-based also when its column 0 is empty.
    """
    if not isinstance(zero_based, (bool, np.bool_)):
        raise TypeError(f"zero_based must be True or False, got {zero_based!r}")
    name = _check_path(path)
    X = _rows_to_write(X)
    y = _labels_to_write(y, X.shape[0])
    off = 0 if zero_based else 1
    indices, data, indptr = X.indices, X.data, X.indptr
    with _compression(name)[0](path, "wb") as fh:
        if zero_based:  # the header that load_svmlight's zero_based="auto" reads
            fh.write(b"# Column indices are zero-based\n")
        for i in range(X.shape[0]):
            lo, hi = indptr[i], indptr[i + 1]
            keep = data[lo:hi] != 0
            feats = " ".join(f"{j + off}:{v!r}" for j, v in
                             zip(indices[lo:hi][keep].tolist(), data[lo:hi][keep].tolist()))
            fh.write(f"{y[i]!r} {feats}".rstrip().encode() + b"\n")
