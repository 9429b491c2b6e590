"""Input validation and the zero-copy row layout the kernels read.

``Dataset`` wraps X (scipy CSR or dense C-contiguous, float32 or float64,
int32 or int64 indices) without copying it when it already has that form, and
exposes it as ``(data, indices, indptr, dense)`` (see csrc/fr_rows.pxd).  The
intercept is a virtual constant feature of value ``intercept_scaling`` that
the kernels add on the fly (docs/math.md §1): X is never widened.

Conversions that do copy (documented, never silent in-place changes): CSC/COO
and other sparse formats to CSR (in canonical form: duplicates summed, indices
sorted), other real dtypes (bool, integers) to float64, dense arrays that are
not C-contiguous, CSR matrices whose index arrays differ in dtype or are not
contiguous (to int64).  CSR matrices with duplicate or unsorted column indices
are rejected (``X.sum_duplicates()`` fixes both), because the row norms the dual
solvers use would be wrong with duplicates.
"""

import numbers

import numpy as np
import scipy.sparse as sp

from fastrisk import _sdca

FLOAT_DTYPES = (np.float64, np.float32)
# the widest X: a float64 weight vector of n_features + 1 entries has under 2**63 bytes
MAX_COLUMNS = 2**60 - 2


def _finite_or_raise(values, name):
    if not np.isfinite(values).all():
        raise ValueError(f"{name} contains NaN or infinity")


def as_float64(a, name):
    """``a`` (an array or a scipy sparse matrix) cast to float64; a value beyond its range
    (longdouble input) is refused by name instead of becoming inf."""
    try:
        with np.errstate(over="raise"):
            return a.astype(np.float64, copy=False)
    except FloatingPointError:
        raise ValueError(f"{name} has values beyond the float64 range (largest magnitude "
                         f"{np.finfo(np.float64).max:.3g})") from None


def refuse_masked(a, name):
    """Refuse a numpy masked array with masked entries by name: np.asarray drops the mask,
    and the masked entries would be used as ordinary values."""
    if isinstance(a, np.ma.MaskedArray) and np.ma.is_masked(a):
        raise ValueError(f"{name} is a masked array with masked entries, whose values would "
                         f"be used as they are; fill them ({name}.filled(value)) or drop "
                         "those rows")
    return a


def numeric_frame(X):
    """A pandas DataFrame whose columns are all numeric, nullable ones (Float64, Int64,
    boolean) included, as a float64 array with NaN for missing values (which check_X then
    refuses); np.asarray would give such a frame the object dtype.  Anything else as is."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(X, "to_numpy") or isinstance(X, np.ndarray):
        return X
    try:
        kinds = [getattr(d, "kind", "O") for d in dtypes]
    except TypeError:  # a Series: one dtype
        return X
    if kinds and all(k in "biuf" for k in kinds):
        return X.to_numpy(dtype=np.float64, na_value=np.nan)
    return X


def _integer_vector(a, name):
    if not isinstance(a, np.ndarray) or a.ndim != 1 or a.dtype.kind not in "iu":
        raise TypeError(f"{name} must be a 1-d integer array, got "
                        f"{getattr(a, 'dtype', type(a).__name__)} of shape {np.shape(a)}")
    return a


def _check_index_range(lo, hi, size, name, what):
    if lo < 0 or hi >= size:
        bad = int(lo) if lo < 0 else int(hi)
        hint = " (1-based indices? subtract 1)" if bad == size else ""
        raise ValueError(f"{name} has {what} index {bad} out of range [0, {size}){hint}")


def _check_compressed(indptr, indices, n_data, n_major, n_minor, name, what):
    """Check compressed (CSR/CSC/BSR) index arrays; return True when canonical.

    ``indptr`` must have n_major + 1 non-decreasing entries from 0 to
    len(indices) == n_data, and every index lie in [0, n_minor).  Canonical
    means strictly increasing indices within each row (sorted, no duplicates).
    Vectorised O(n_major + nnz) passes that read the arrays and copy nothing
    the size of X except one boolean per stored entry.
    """
    indptr = _integer_vector(indptr, f"{name}.indptr")
    indices = _integer_vector(indices, f"{name}.indices")
    if indptr.shape[0] != n_major + 1:
        raise ValueError(f"{name}.indptr has {indptr.shape[0]} entries, expected {n_major + 1} "
                         f"(one more than the {n_major} {what[1]}s)")
    nnz = indices.shape[0]
    if indptr[0] != 0 or indptr[-1] != nnz or n_data != nnz:
        raise ValueError(f"{name}.indptr runs from {int(indptr[0])} to {int(indptr[-1])}, but "
                         f"it must run from 0 to len({name}.indices) = {nnz} = "
                         f"len({name}.data) = {n_data}")
    steps = indptr[1:] >= indptr[:-1]
    if not steps.all():
        raise ValueError(f"{name}.indptr decreases at {what[1]} {int(np.argmin(steps))}")
    if nnz == 0:
        return True
    increasing = indices[1:] > indices[:-1]
    starts = indptr[1:-1]
    increasing[starts[(starts > 0) & (starts < nnz)] - 1] = True  # across row ends
    canonical = bool(increasing.all())
    if canonical:  # the extremes of sorted rows are their first and last entries
        nonempty = indptr[1:] > indptr[:-1]
        lo = indices[indptr[:-1][nonempty]].min()
        hi = indices[indptr[1:][nonempty] - 1].max()
    else:
        lo, hi = indices.min(), indices.max()
    _check_index_range(lo, hi, n_minor, name, what[0])
    return canonical


def check_sparse_structure(X, name="X"):
    """Validate the stored arrays of a scipy sparse matrix against its shape.

    scipy does not check index ranges or ``indptr`` when a matrix is built
    from its arrays (or when they are reassigned), and neither its routines
    nor our kernels check them when they read; this check runs before any
    of them does.  CSR, CSC, BSR and COO are checked (the other formats are
    converted to CSR by scipy's Python code, whose result check_X checks).
    Returns True when a compressed format is canonical (sorted, no duplicate
    indices).  Raises TypeError / ValueError naming ``name``; copies nothing.
    """
    if len(X.shape) != 2:
        raise ValueError(f"{name} must be 2-dimensional, got shape {X.shape}")
    n, d = (int(s) for s in X.shape)
    if n < 0 or d < 0:
        raise ValueError(f"{name} has a negative shape {X.shape}")
    fmt = X.format
    if fmt not in ("csr", "csc", "bsr", "coo"):
        return False
    data = X.data
    if not isinstance(data, np.ndarray) or data.ndim != (3 if fmt == "bsr" else 1):
        raise TypeError(f"{name}.data must be a NumPy array with "
                        f"{3 if fmt == 'bsr' else 1} dimensions")
    if fmt == "csr":
        return _check_compressed(X.indptr, X.indices, data.shape[0], n, d, name, ("column", "row"))
    if fmt == "csc":
        return _check_compressed(X.indptr, X.indices, data.shape[0], d, n, name, ("row", "column"))
    if fmt == "bsr":
        r, c = X.blocksize
        if data.shape[1:] != (r, c) or n % r or d % c:
            raise ValueError(f"{name} has blocks {data.shape[1:]} that do not tile shape {X.shape}")
        return _check_compressed(X.indptr, X.indices, data.shape[0], n // r, d // c, name,
                                 ("block column", "block row"))
    coords = getattr(X, "coords", None) or (X.row, X.col)  # coo
    for axis, (idx, size) in enumerate(zip(coords, (n, d))):
        idx = _integer_vector(idx, f"{name}.coords[{axis}]")
        if idx.shape[0] != data.shape[0]:
            raise ValueError(f"{name} has {idx.shape[0]} coordinates and {data.shape} values")
        if idx.shape[0]:
            _check_index_range(idx.min(), idx.max(), size, name, ("row", "column")[axis])
    return False


def canonical_csr(X):
    """A canonical copy of the CSR matrix X (indices sorted, duplicates summed).

    scipy caches whether a matrix is canonical and ``sum_duplicates`` trusts that flag,
    which is stale once the index arrays were changed in place: the copy's flags are reset
    so that its indices are sorted whatever X's say.  Index arrays of another integer type,
    or of two types, become int64 (scipy's routines take int32 or int64)."""
    itype = X.indices.dtype if X.indices.dtype == X.indptr.dtype \
        and X.indices.dtype in (np.int32, np.int64) else np.int64
    X = sp.csr_matrix((X.data.copy(), X.indices.astype(itype), X.indptr.astype(itype)),
                      shape=X.shape)
    X.has_sorted_indices = False
    X.has_canonical_format = False
    X.sum_duplicates()
    return X


def _read_only(a):
    """A view of ``a`` that cannot be written through."""
    view = a.view()
    view.flags.writeable = False
    return view


def check_X(X, name="X", layout=True, repair=False):
    """Return X as C-contiguous dense or canonical CSR of float32/float64.

    No copy is made when X already has one of those forms.  A sparse X is
    checked by ``check_sparse_structure`` before anything reads its indices.
    ``layout`` False (prediction: the product ``X @ coef.T`` reads any order of
    a dense X and sums a CSR row's entries whatever their order): a dense X
    keeps its memory order and a CSR X its unsorted or duplicate indices.
    A CSR X with unsorted or duplicate indices is refused, or with ``repair``
    (the estimators, as scikit-learn's accept such X) replaced by its canonical copy.
    """
    if sp.issparse(X):
        if X.dtype.kind not in "biuf":
            raise TypeError(f"{name} must have a real numeric dtype, got {X.dtype}")
        canonical = check_sparse_structure(X, name)
        if X.format != "csr":
            X = X.tocsr()  # new arrays (scipy's BSR conversion can leave them unsorted)
            if not check_sparse_structure(X, name):
                X = canonical_csr(X)
            canonical = True
        if X.dtype not in FLOAT_DTYPES:
            X = as_float64(X, name)
        if not canonical and layout and repair:
            X = canonical_csr(X)
        elif not canonical and layout:
            # scipy's sum_duplicates does nothing while its cached flags say canonical
            stale = f"{name}.has_sorted_indices = False; " if X.has_canonical_format else ""
            raise ValueError(f"{name} has unsorted or duplicate column indices; call "
                             f"{stale}{name}.sum_duplicates() first")
        arrays = (X.data, X.indices, X.indptr)
        if X.indices.dtype != X.indptr.dtype or X.indices.dtype not in (np.int32, np.int64) \
                or not all(a.flags.c_contiguous for a in arrays):
            itype = X.indices.dtype if X.indices.dtype == X.indptr.dtype \
                and X.indices.dtype in (np.int32, np.int64) else np.int64
            X = sp.csr_matrix((np.ascontiguousarray(X.data), np.ascontiguousarray(X.indices, itype),
                               np.ascontiguousarray(X.indptr, itype)), shape=X.shape)
        data = X.data
    else:
        if type(X) is np.ndarray and X.dtype in FLOAT_DTYPES:
            pass
        else:
            refuse_masked(X, name)
            X = numeric_frame(X)
            try:
                X = np.asarray(X)
            except Exception as exc:
                raise TypeError(f"{name} must be an array or a scipy sparse matrix") from exc
            if X.dtype.kind not in "biuf":
                raise TypeError(f"{name} must have a real numeric dtype, got {X.dtype}")
            if X.dtype not in FLOAT_DTYPES:
                X = as_float64(X, name)
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-dimensional, got shape {X.shape}")
        if layout and not X.flags.c_contiguous:
            X = np.ascontiguousarray(X)
        data = X
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {X.shape})")
    if X.shape[1] > MAX_COLUMNS:
        raise ValueError(f"{name} has {X.shape[1]} columns, more than a float64 weight vector "
                         f"can hold (at most 2**60 - 2: its bytes must fit the address space)")
    _finite_or_raise(data, name)
    return X


def check_sample_weight(sample_weight, n_samples, name="sample_weight", positive_sum=True):
    """None, or a finite non-negative float64 vector of length n_samples with a positive sum
    (``positive_sum=False``: a zero sum too, for a part of the rows whose whole is checked
    elsewhere)."""
    if sample_weight is None:
        return None
    if sp.issparse(sample_weight):  # np.asarray makes it a 0-d object array
        raise TypeError(f"{name} must be an array, not a scipy sparse matrix; use "
                        f"{name}.toarray().ravel()")
    c = np.asarray(refuse_masked(sample_weight, name))
    if c.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {c.dtype}")
    c = as_float64(c, name)
    if c.ndim == 0:
        c = np.full(n_samples, float(c))
    if c.shape != (n_samples,):
        raise ValueError(f"{name} has shape {c.shape}, expected ({n_samples},)")
    _finite_or_raise(c, name)
    if (c < 0).any():
        raise ValueError(f"{name} must be non-negative")
    total = c.sum()
    if total <= 0 and positive_sum:
        raise ValueError(f"{name} must have a positive sum")
    if not np.isfinite(total):  # the risk (1/m) sum_i c_i l_i would overflow with it
        raise ValueError(f"{name} sums to infinity; rescale it (only its ratios and the "
                         "scale of the risk against alpha matter)")
    return np.ascontiguousarray(c)


def check_targets(y, n_samples, name="y"):
    """Real targets as a finite float64 vector of length n_samples."""
    y = _vector_like(_required(y, name), name)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {y.shape}")
    if y.shape[0] != n_samples:
        raise ValueError(f"{name} has {y.shape[0]} entries but X has {n_samples} rows")
    if y.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric for this loss, got dtype {y.dtype}")
    y = np.ascontiguousarray(as_float64(y, name))
    _finite_or_raise(y, name)
    return y


def _vector_like(y, name):
    """y as an array; a sparse matrix (np.asarray makes it a 0-d object) and a masked
    array with masked entries are refused."""
    refuse_masked(y, name)
    if sp.issparse(y):
        raise TypeError(f"{name} must be an array, not a scipy sparse matrix; use "
                        f"{name}.toarray().ravel()")
    return np.asarray(y)


def check_label_values(y, name="y"):
    """Refuse by name the values that are not class labels: complex numbers, NaN or
    infinity (floats, or float objects in an object array) and, in an object array,
    labels of types with no common order.  Returns y as an array (no copy of an array)."""
    y = _vector_like(y, name)
    if y.dtype.kind == "c":
        raise TypeError(f"{name} holds complex numbers, which are not class labels")
    if y.dtype.kind == "f":
        _finite_or_raise(y, name)
    elif y.dtype.kind == "O":
        if any(isinstance(v, (float, np.floating)) and not np.isfinite(v) for v in y.flat):
            raise ValueError(f"{name} contains NaN or infinity")
        _sorted_labels(y, name)
    return y


def _required(y, name):
    """Refuse a missing y by name (np.asarray makes None a 0-d object array)."""
    if y is None:
        raise ValueError(f"{name} is required: one label or target per row of X (only a "
                         f"loss without labels, such as 'novelty', takes {name}=None)")
    return y


def _check_labels(y, n_samples, name):
    y = check_label_values(_required(y, name), name)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {y.shape}")
    if y.shape[0] != n_samples:
        raise ValueError(f"{name} has {y.shape[0]} entries but X has {n_samples} rows")
    return y


def _sorted_labels(y, name):
    """np.unique(y, return_inverse=True), or a TypeError naming ``y`` when its labels have
    no common order (mixed types in an object array)."""
    try:
        return np.unique(y, return_inverse=True)
    except TypeError:
        types = sorted({type(v).__name__ for v in y.ravel()})
        raise TypeError(f"{name} mixes labels of types {types} that cannot be sorted; use "
                        "labels of one type") from None


def encode_labels(y, classes, name="y"):
    """(classes, index of each label in classes): classes given (a chunk of a stream may
    lack some) or the sorted distinct labels."""
    if classes is None:
        if y.dtype.kind in "biuf" and y.shape[0]:
            # at most two distinct values (binary labels): two comparisons, no sort
            lo, hi = y.min(), y.max()
            upper = y == hi
            if (upper | (y == lo)).all():
                if lo == hi:
                    return y[:1].copy(), np.zeros(y.shape[0], dtype=np.intp)
                return np.array([lo, hi], dtype=y.dtype), upper.astype(np.intp)
        return _sorted_labels(y, name)
    classes = check_label_values(classes, "classes")
    if classes.ndim != 1:
        raise ValueError(f"classes must be 1-dimensional, got shape {classes.shape}")
    classes = _sorted_labels(classes, "classes")[0]
    index = np.searchsorted(classes, y)
    if not (index < classes.shape[0]).all() or (classes[np.minimum(index, len(classes) - 1)]
                                                 != y).any():
        raise ValueError(f"{name} holds labels that are not in classes {classes.tolist()}")
    return classes, index


def encode_binary(y, n_samples, name="y", classes=None):
    """Map labels with exactly two values to -1/+1 (the larger value is +1).

    ``classes``: the two labels, when y may hold only one of them.
    Returns (y_pm, classes).
    """
    y = _check_labels(y, n_samples, name)
    classes, inverse = encode_labels(y, classes, name)
    if classes.shape[0] != 2:
        raise ValueError(
            f"{name} must hold exactly two classes for a binary loss, got {classes.shape[0]}"
        )
    return np.where(inverse == 1, 1.0, -1.0), classes


def encode_multiclass(y, n_samples, name="y", classes=None):
    """Map labels to class indices 0..k-1; returns (index, classes), k >= 2.

    ``classes``: all labels, when y may lack some of them.
    """
    y = _check_labels(y, n_samples, name)
    classes, inverse = encode_labels(y, classes, name)
    if classes.shape[0] < 2:
        raise ValueError(f"{name} must hold at least two classes, got {classes.shape[0]}")
    return inverse.astype(np.intp), classes


#: the largest intercept_scaling whose square is a float64
MAX_INTERCEPT_SCALING = 1e154


class Dataset:
    """X in kernel layout plus the intercept feature (docs/math.md §1).

    Attributes: ``X`` (validated matrix), ``data``, ``indices``, ``indptr``,
    ``dense`` (the row view of csrc/fr_rows.pxd), ``n_samples``,
    ``n_features``, ``bias`` (value of the constant feature, 0 for none) and
    ``n_weights`` (n_features + 1 with an intercept).  The column copy of X, once
    made (fastrisk/columns.py), is kept in ``_columns``.  ``repair``: see ``check_X``.
    """

    def __init__(self, X, *, intercept_scaling=0.0, name="X", repair=False):
        X = check_X(X, name, repair=repair)
        # the constant feature enters every row's squared norm (row_sqnorms), so its square
        # must be a float64: intercept_scaling <= 1e154
        if not isinstance(intercept_scaling, numbers.Real) or isinstance(intercept_scaling, bool) \
                or not 0 <= intercept_scaling <= MAX_INTERCEPT_SCALING:
            raise ValueError("intercept_scaling must be a finite number >= 0 and <= "
                             f"{MAX_INTERCEPT_SCALING!r}, got {intercept_scaling!r}")
        self.X = X
        self.n_samples, self.n_features = X.shape
        self.bias = float(intercept_scaling)
        self.n_weights = self.n_features + (self.bias != 0.0)
        self.dtype = X.dtype
        self._columns = None
        if sp.issparse(X):
            self.dense = False
            self.data, self.indices, self.indptr = X.data, X.indices, X.indptr
        else:
            self.dense = True
            n, d = X.shape
            itype = np.int32 if n * d < 2**31 - 1 else np.int64
            self.data = X.reshape(-1)
            self.indices = np.arange(d, dtype=itype)
            self.indptr = np.arange(0, (n + 1) * d, d, dtype=itype)
        # the kernels trust the index arrays checked above: the Dataset hands out read-only
        # views of them (X itself is the caller's, not copied, and must not change while
        # a Problem built on it is in use)
        self.data, self.indices, self.indptr = (_read_only(a) for a in
                                                (self.data, self.indices, self.indptr))

    @property
    def nnz(self):
        return int(self.indptr[-1])

    def row_sqnorms(self):
        """||x_i||^2 including the intercept feature, as float64 (one pass over the rows,
        no temporaries of X's size).

        Raises ValueError naming the first row whose squared norm overflows (entries near
        1e154 or more): the step sizes and curvature bounds of the solvers that read the
        norms would be infinite, and a dual step 1/||x_i||^2 would vanish for ever; only
        scaling X helps.
        """
        norms = _sdca.row_sqnorms(self.data, self.indices, self.indptr, self.dense, self.bias,
                                  np.empty(self.n_samples))
        bad = np.flatnonzero(~np.isfinite(norms))
        if bad.size:
            with_bias = f" with the intercept feature of value {self.bias:g}" if self.bias else ""
            raise ValueError(f"X: the squared norm of row {bad[0]}{with_bias} overflows float64 "
                             "(entries near 1e154 or more); scale X down")
        return norms

    def decision(self, w):
        """X w (+ bias * w[-1]) for a weight vector of length n_weights."""
        f = np.asarray(self.X @ w[: self.n_features], dtype=np.float64)
        return f + self.bias * w[-1] if self.bias else f

    def split(self, w):
        """(coef, intercept) from a full weight vector (intercept already scaled)."""
        if self.bias:
            return w[: self.n_features], float(w[-1] * self.bias)
        return w, 0.0
