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
bytes of column norms once they are read.  While it is made, a counting sort holds
8 n_features bytes of counters per thread.  For dense input a column-major copy of
X.  The copy lives as long as the Dataset.
"""

import functools

import numpy as np

from fastrisk import _cd

COPY_GRAIN = 1_000_000            # nonzeros per thread of the column copy (one fork)


class Columns:
    """The column view of [X, intercept column]: ``values``, row ``indices`` and int64
    column pointers ``indptr`` (for dense X: the column-major values, ``indices =
    arange(m)`` shared by every column), ``dense``, and ``norms`` = ||x_j|| (computed
    when first read, by ``n_threads`` threads; only coordinate descent reads them)."""

    def __init__(self, values, indices, indptr, dense, n_threads=1):
        self.values, self.indices, self.indptr, self.dense = values, indices, indptr, dense
        self.n_threads = n_threads

    @functools.cached_property
    def norms(self):
        norms = np.empty(self.indptr.shape[0] - 1)
        _cd.column_norms(self.values, self.indptr, norms,
                         max(1, min(int(self.n_threads), self.values.shape[0] // COPY_GRAIN)))
        norms.flags.writeable = False
        return norms

    @property
    def arrays(self):
        """(values, indices, indptr, dense): the arguments of the column kernels."""
        return self.values, self.indices, self.indptr, self.dense

    @property
    def nbytes(self):
        """Bytes held by the copy (the norms once read)."""
        held = [self.values, self.indices, self.indptr] + (
            [self.__dict__["norms"]] if "norms" in self.__dict__ else [])
        return sum(a.nbytes for a in held)


def copy_nbytes(data):
    """Bytes of the column view of a sparse Dataset (``Columns.nbytes``), before it is made."""
    entries = data.nnz + (data.n_samples if data.bias else 0)
    return entries * (data.data.itemsize + data.indices.itemsize) + 8 * (data.n_weights + 1)


def column_view(data, n_threads=1):
    """:class:`Columns` of a Dataset (the copy of the module docstring), made on the
    first call and kept on the Dataset for the later ones.

    float32 values and int32 indices stay as they are.  A CSR matrix is transposed by
    ``_cd.csr_transpose`` (a counting sort over row blocks, one per thread); the output
    is the same for any ``n_threads``.
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
        blocks = max(1, min(int(n_threads), nnz // COPY_GRAIN))
        # row blocks of about nnz / blocks entries each
        bounds = np.searchsorted(data.indptr, np.arange(blocks + 1) * (nnz // blocks))
        bounds[0], bounds[-1] = 0, m
        _cd.csr_transpose(data.data, data.indices, data.indptr, bounds.astype(np.int64),
                          np.zeros((blocks, n), dtype=np.int64), values, indices, indptr)
        if bias:
            values[nnz:] = bias
            indices[nnz:] = np.arange(m, dtype=indices.dtype)
            indptr[n + 1] = nnz + m
    for a in (values, indices, indptr):
        a.flags.writeable = False
    data._columns = Columns(values, indices, indptr, bool(data.dense), n_threads)
    return data._columns


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
