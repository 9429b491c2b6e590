"""The column view of a Dataset: X copied once into column order, shared by its users.

The row layout (fastrisk/data.py) serves every kernel that walks the rows.  Three
computations walk the columns instead: coordinate descent and its regularization path
(fastrisk/solvers/cd.py, fastrisk/regpath.py) and, on sparse data with threads, the
oracles' ``X^T g`` (fastrisk/oracle.py), where a thread that owns a range of columns
sums ``g_j = sum_i x_ij g_i`` on its own, with no private gradient buffer and no
reduction.  ``column_view`` makes the copy once per Dataset and keeps it on the
Dataset, so that all of them share it.

Memory: for CSR input a CSC copy, i.e. the values and row indices of X again
(nnz (itemsize + index size) bytes) plus m entries for the intercept column and
8 (n_weights + 1) bytes of column pointers: about the size of X; and 8 n_weights
bytes each of column norms and column maxima once they are made (together).  While it is made,
the sort (``transpose``) holds 2 nnz bytes of column offsets (none for copies up to
DIRECT_BYTES) and, per thread, the entries of the largest bucket of columns again and
8 (2^shift + 1) bytes of counters.  For dense input a column-major copy of X.  The copy lives as
long as the Dataset.
"""

import numpy as np

from fastrisk import _cd

COPY_GRAIN = 1_000_000            # nonzeros per thread of the column copy (one fork)
MAX_BUCKETS = 256                 # column buckets of the copy's first pass (write streams)
DIRECT_BYTES = 32 << 20           # copies up to a last-level cache: one column per bucket


class Columns:
    """The column view of [X, intercept column]: ``values``, row ``indices`` and int64
    column pointers ``indptr`` (for dense X: the column-major values, ``indices =
    arange(m)`` shared by every column), ``dense``, and the column scales ``norms`` =
    ||x_j|| and ``maxabs`` = max_i |x_ij|, made together (with the copy when asked
    for, else when either is first read, by ``n_threads`` threads); only coordinate
    descent reads the scales."""

    def __init__(self, values, indices, indptr, dense, n_threads=1, scales=None):
        self.values, self.indices, self.indptr, self.dense = values, indices, indptr, dense
        self.n_threads = n_threads
        self._scales = scales  # (norms, maxabs)

    def _made_scales(self):
        if self._scales is None:
            n_cols = self.indptr.shape[0] - 1
            norms, maxabs = np.empty(n_cols), np.empty(n_cols)
            _cd.column_scales(self.values, self.indptr, norms, maxabs,
                              max(1, min(int(self.n_threads), self.values.shape[0] // COPY_GRAIN)))
            norms.flags.writeable = maxabs.flags.writeable = False
            self._scales = norms, maxabs
        return self._scales

    @property
    def norms(self):
        return self._made_scales()[0]

    @property
    def maxabs(self):
        return self._made_scales()[1]

    @property
    def arrays(self):
        """(values, indices, indptr, dense): the arguments of the column kernels."""
        return self.values, self.indices, self.indptr, self.dense

    @property
    def nbytes(self):
        """Bytes held by the copy (and the column scales once made)."""
        held = [self.values, self.indices, self.indptr, *(self._scales or ())]
        return sum(a.nbytes for a in held)


def copy_nbytes(data):
    """Bytes of the column view of a sparse Dataset (``Columns.nbytes``), before it is made."""
    entries = data.nnz + (data.n_samples if data.bias else 0)
    return entries * (data.data.itemsize + data.indices.itemsize) + 8 * (data.n_weights + 1)


def bucket_shift(n_cols, nbytes):
    """log2 of the columns per bucket of ``_cd.csr_transpose`` for a copy of ``nbytes``: 0
    (one column per bucket) when the copy fits in DIRECT_BYTES, whose scattered writes the
    cache then absorbs; else the fewest that make at most MAX_BUCKETS buckets (at most
    2^16, the range of the kernel's column offsets)."""
    shift = 0
    while nbytes > DIRECT_BYTES and shift < 16 and n_cols > MAX_BUCKETS << shift:
        shift += 1
    return shift


def transpose(data, indices, indptr, n_cols, n_blocks, shift, values, row_indices,
              col_indptr, norms, maxabs):
    """Write the CSC arrays of the CSR matrix (data, indices, indptr) with ``n_cols``
    columns into values[:nnz], row_indices[:nnz] and col_indptr[:n_cols + 1], and its
    column scales into norms[:n_cols] and maxabs[:n_cols] unless they are empty
    (``_cd.csr_transpose``:
    ``n_blocks`` row blocks of about nnz / n_blocks entries, one per thread; buckets of
    2^shift columns).  The output does not depend on ``n_blocks`` or ``shift``."""
    m, nnz = indptr.shape[0] - 1, int(indptr[-1])
    bounds = np.searchsorted(indptr, np.arange(n_blocks + 1) * (nnz // n_blocks))
    bounds[0], bounds[-1] = 0, m
    bounds = bounds.astype(np.int64)
    counts = np.zeros((n_blocks, ((n_cols - 1) >> shift) + 1 if n_cols else 0), dtype=np.int64)
    _cd.bucket_counts(indices, indptr, bounds, shift, counts)
    biggest = int(counts.sum(axis=0).max(initial=0)) if shift else 0
    _cd.csr_transpose(data, indices, indptr, n_cols, bounds, shift, counts,
                      np.empty(nnz if shift else 0, np.uint16),
                      np.empty((n_blocks, biggest), dtype=data.dtype),
                      np.empty((n_blocks, biggest), dtype=indices.dtype),
                      np.empty((n_blocks, (1 << shift) + 1 if shift else 0), np.int64),
                      values, row_indices, col_indptr, norms, maxabs)


def column_view(data, n_threads=1, scales=False):
    """:class:`Columns` of a Dataset (the copy of the module docstring), made on the
    first call and kept on the Dataset for the later ones.

    float32 values and int32 indices stay as they are.  A CSR matrix is transposed by
    ``_cd.csr_transpose`` (a counting sort by buckets of columns, then within each bucket
    while it is in the cache; row blocks and buckets split over the threads); the output
    is the same for any ``n_threads``.  ``scales=True``: the CSR copy computes the column
    scales as it sorts each bucket (otherwise they are computed when first read).
    """
    cached = getattr(data, "_columns", None)
    if cached is not None:
        return cached
    m, n, bias = data.n_samples, data.n_features, data.bias
    n_weights = data.n_weights
    if data.dense:
        X = data.X
        A = X if not bias else np.hstack([X, np.full((m, 1), bias, dtype=X.dtype)])
        values = np.ascontiguousarray(A.T).reshape(-1)
        indices = np.arange(m, dtype=np.int32 if m < 2**31 - 1 else np.int64)
        indptr = np.arange(0, (n_weights + 1) * m, m, dtype=np.int64)
    else:
        nnz = data.nnz
        extra = m if bias else 0
        values = np.empty(nnz + extra, dtype=data.dtype)
        indices = np.empty(nnz + extra, dtype=data.indices.dtype)
        indptr = np.empty(n_weights + 1, dtype=np.int64)
        norms, maxabs = (np.empty(n_weights if scales else 0) for _ in range(2))
        transpose(data.data, data.indices, data.indptr, n,
                  max(1, min(int(n_threads), nnz // COPY_GRAIN)),
                  bucket_shift(n, copy_nbytes(data)),
                  values, indices, indptr, norms, maxabs)
        if bias:
            values[nnz:] = bias
            indices[nnz:] = np.arange(m, dtype=indices.dtype)
            indptr[n + 1] = nnz + m
            if scales:
                _cd.column_scales(values, indptr[n:], norms[n:], maxabs[n:], 1)
    made = (values, indices, indptr) + ((norms, maxabs) if scales and not data.dense else ())
    for a in made:
        a.flags.writeable = False
    data._columns = Columns(*made[:3], bool(data.dense), n_threads, made[3:] or None)
    return data._columns


def check_columns(columns, data):
    """``columns`` when it is the column view of ``data`` (the one ``column_view(data)``
    made and keeps on it), else ValueError: the view of another matrix of the same width
    would be read as this one's."""
    if columns is not getattr(data, "_columns", None) or not isinstance(columns, Columns):
        raise ValueError("columns must be column_view(problem.data), the column copy of "
                         "this problem's data")
    return columns


def nnz_chunks(indptr, grain):
    """Bounds of consecutive chunks of rows (or columns, from the column pointers) with
    about ``grain`` stored entries each: an intp array from 0 to len(indptr) - 1.  The
    chunks depend on the data alone, so sums made chunk by chunk and added in chunk
    order have the same bits for every thread count."""
    n, nnz = indptr.shape[0] - 1, int(indptr[-1])
    n_chunks = max(1, min(n, nnz // max(int(grain), 1)))
    bounds = np.searchsorted(indptr, np.arange(n_chunks + 1) * (nnz / n_chunks)).astype(np.intp)
    bounds[0], bounds[-1] = 0, n
    return bounds
