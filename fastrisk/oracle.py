"""The risk oracle (docs/math.md §3, BMRM section 4): w -> (R_emp(w), dR_emp(w)).

``R_emp(w) = (1/m) sum_i c_i l(<w, x_i>, y_i)`` and
``dR_emp(w) = (1/m) X^T g`` with ``g_i = c_i l'(f_i, y_i)``.  The rows are
split into contiguous partitions; each partition returns its partial sums
(``partial``) and the oracle adds them in partition order: the multiplexer
of BMRM Figure 2.  Inside a partition the compiled kernel runs OpenMP
threads without the GIL.  Any object with ``n_samples``, ``n_weights`` and
``__call__(w) -> (risk, gradient)`` is a RiskOracle to the batch solvers.

Two ways to compute ``X^T g`` (csrc/_oracle.pyx, csrc/_voracle.pyx):

* rows: each thread scatters the rows of its block into a gradient buffer of its
  own (n_weights doubles, times k for a vector loss), and the buffers are added
  in thread order;
* columns: a pass over the rows gives g, then ``(X^T g)_j = sum_i x_ij g_i`` is
  summed column by column from the column copy of X (fastrisk/columns.py), the
  columns shared out among the threads: no buffer per thread, no reduction, and
  the output has the same bits for every thread count.

The rule (``use_columns``, the one place it is decided): the columns when X is
sparse, the oracle has one partition, a thread's gradient buffer exceeds
COLUMN_BYTES, and either several threads run or the column path holds no more
memory than the row path's buffers on one thread.  Past the core's cache the row
scatter's writes miss it and set the time, and the threads' buffers must be
zeroed and added on every call; the column sums read g (or the m x k row
gradients), which stay in cache.  Below it the row path is as fast and costs no
copy.  The copy costs about the size of X (fastrisk/columns.py), made on the
first call and kept with the Dataset: on one thread it is made only where it
replaces larger buffers (a vector loss on text data, where the row path holds
2 n_weights k doubles).  Set the oracle's ``columns`` attribute to False
(``problem.oracle.columns = False``) to keep the row path, or True to take the
column path whenever X is sparse with one partition.
"""

import copy
import math
from typing import Protocol

import numpy as np

from fastrisk import _oracle, _voracle
from fastrisk.columns import column_view, copy_nbytes, nnz_chunks
from fastrisk.config import resolve_n_threads
from fastrisk.losses import psd_factor

COLUMN_BYTES = 4 << 20  # a thread's gradient buffer above this: the column path
CHUNK_NNZ = 1 << 16     # stored entries per chunk of the column path's two passes


class RiskOracle(Protocol):
    n_samples: int
    n_weights: int

    def __call__(self, w):  # pragma: no cover - protocol
        """Return (R_emp(w), a subgradient of R_emp at w)."""


def checked_output(output, n_weights):
    """A user-defined oracle's ``(risk, subgradient)`` as (float, float64 vector), or an
    error naming what is wrong: TypeError / ValueError for another shape, and
    FloatingPointError for a non-finite risk or subgradient, from which no solver can go on
    (a NaN risk compares false with everything, so a bound test would read it as met)."""
    try:
        value, grad = output
        value, grad = float(value), np.asarray(grad, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("the oracle must return (risk, subgradient): a real number and a "
                        f"real vector, got {type(output).__name__}") from None
    if grad.shape != (n_weights,):
        raise ValueError(f"the oracle returned a subgradient of shape {grad.shape}, "
                         f"expected ({n_weights},)")
    if not (math.isfinite(value) and np.isfinite(grad).all()):
        raise FloatingPointError(f"the oracle returned a non-finite "
                                 f"{'risk' if not math.isfinite(value) else 'subgradient'} "
                                 f"(risk {value!r}); a solver cannot go on from it")
    return value, grad


class CheckedOracle:
    """A user-defined RiskOracle whose outputs pass ``checked_output``; its other attributes
    are the wrapped oracle's.  fastrisk's own oracles that check (or cannot produce) bad
    outputs say so with ``checked = True`` and are used as they are."""

    checked = True

    def __init__(self, oracle):
        self.oracle = oracle

    def __getattr__(self, name):
        if name == "oracle":  # not set yet: no recursion through __getattr__
            raise AttributeError(name)
        return getattr(self.oracle, name)

    def __call__(self, w):
        return checked_output(self.oracle(w), self.oracle.n_weights)


def partition_rows(n_samples, n_partitions):
    """Contiguous [start, stop) row ranges.

    ``n_partitions`` is a count (ranges of nearly equal size) or a sequence
    of partition sizes summing to ``n_samples`` (e.g. the row counts of the
    files or blocks a DaskOracle holds, so both oracles add the same sums).
    """
    if isinstance(n_partitions, (list, tuple, np.ndarray)):
        sizes = np.asarray(n_partitions)
        # each size in [1, n_samples] before the sum (a wrapped int64 sum could match)
        if sizes.ndim != 1 or sizes.size == 0 or sizes.dtype.kind not in "iu" \
                or (sizes < 1).any() or (sizes > n_samples).any() \
                or sum(int(size) for size in sizes) != n_samples:
            raise ValueError("n_partitions as a sequence must hold positive integer partition "
                             f"sizes summing to {n_samples}, got {n_partitions!r}")
        edges = np.concatenate([[0], np.cumsum(sizes)])
    elif not isinstance(n_partitions, (int, np.integer)) or isinstance(n_partitions, bool) \
            or n_partitions < 1:
        raise ValueError(f"n_partitions must be an integer >= 1 or a sequence of sizes, "
                         f"got {n_partitions!r}")
    else:
        edges = np.linspace(0, n_samples, min(int(n_partitions), n_samples) + 1).astype(np.intp)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def check_weights(w, n_weights, name="w"):
    """w as a contiguous float64 vector of length n_weights (TypeError / ValueError otherwise)."""
    a = np.asarray(w)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real numeric vector, got dtype {a.dtype}")
    if a.shape != (n_weights,):
        raise ValueError(f"{name} has shape {a.shape}, expected ({n_weights},)")
    return np.ascontiguousarray(a, dtype=np.float64)


def _check_rows(data, y, sample_weight, *, classes=None):
    """The arrays an oracle's kernel indexes by row: y (and class indices) and weights."""
    from fastrisk.data import Dataset

    if not isinstance(data, Dataset):
        raise TypeError(f"data must be a fastrisk.Dataset, got {type(data).__name__}")
    m = data.n_samples
    y = np.asarray(y)
    if y.dtype.kind not in "biuf" or y.shape != (m,):
        raise ValueError(f"y must be a numeric vector of length {m}, got {y.dtype} {y.shape}")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError("y contains NaN or infinity")
    if classes is not None and m and (y.min() < 0 or y.max() >= classes):
        raise ValueError(f"y must hold class indices in [0, {classes})")
    if sample_weight is not None:
        c = np.asarray(sample_weight)
        if c.dtype != np.float64 or c.shape != (m,):
            raise ValueError(f"sample_weight must be a float64 vector of length {m} or None")
        if not (np.isfinite(c).all() and (c >= 0).all()):
            raise ValueError("sample_weight must be finite and non-negative")


def _check_task_targets(loss, y):
    """The targets the kernel of ``loss`` reads: -1/+1 for a binary loss (Problem and the
    estimators encode other labels), non-negative counts for the Poisson loss."""
    task = loss.spec.task
    if task == "binary" and not np.isin(y, (-1.0, 1.0)).all():
        raise ValueError(f"y must hold the labels -1 and +1 for the {loss.name} loss (a "
                         "Problem encodes other labels)")
    if task == "counts" and (y < 0).any():
        raise ValueError(f"y must be non-negative for the {loss.name} loss")


def use_columns(columns, data, n_partitions, n_threads, buffer_bytes, row_bytes=0,
                extra_bytes=0):
    """Whether an oracle computes X^T g from the column copy of X (the rule of the
    module docstring).  ``columns``: the oracle's setting, "auto", True or False;
    ``buffer_bytes``: the size of the block of memory a thread's row scatter writes to;
    ``row_bytes``: the row path's buffers on one thread; ``extra_bytes``: what the
    column path holds besides the copy."""
    if not (columns is True or columns is False or columns == "auto"):
        raise ValueError(f"columns must be 'auto', True or False, got {columns!r}")
    if data.dense or n_partitions != 1 or columns is False:
        return False
    if columns is True:
        return True
    return buffer_bytes > COLUMN_BYTES and (
        n_threads > 1 or copy_nbytes(data) + extra_bytes <= row_bytes)


class _Multiplexer:
    """Adds the partitions' partial sums in partition order (BMRM Figure 2)."""

    def _buffer(self, name, make):
        """The buffer ``name``, made by ``make()`` on first use; kept in ``_buffers``,
        which a view (VectorOracle.feature_major_view) shares."""
        if name not in self._buffers:
            self._buffers[name] = make()
        return self._buffers[name]

    def _column_args(self):
        """(column view arrays, row chunks, column chunks): the column path's view of X."""
        def make():
            cols = column_view(self.data, self.n_threads)
            return (cols.values, cols.indices, cols.indptr,
                    nnz_chunks(self.data.indptr, CHUNK_NNZ), nnz_chunks(cols.indptr, CHUNK_NNZ))
        return self._buffer("columns", make)

    def _check_w(self, w):
        return check_weights(w, self.n_weights)

    def _bounds(self, k):
        if not isinstance(k, (int, np.integer)) or not 0 <= k < len(self.partitions):
            raise ValueError(f"k must be a partition number in [0, {len(self.partitions)}), "
                             f"got {k!r}")
        return self.partitions[k]

    def __call__(self, w):
        w = self._check_w(w)
        self.n_calls += 1
        value, grad = self.partial(w, 0)
        for k in range(1, len(self.partitions)):
            v, g = self.partial(w, k)
            value += v
            grad += g
        return value / self.n_samples, grad / self.n_samples


class LocalOracle(_Multiplexer):
    """Scalar-loss oracle over row partitions of a Dataset, compiled kernel inside.

    Each call also leaves g (``g_i = c_i l'(f_i, y_i)``, length n_samples)
    in ``multipliers``: the gradient is ``X^T g / n_samples``, which bundle
    methods store in this sample-space form (fastrisk/solvers/bmrm.py); and
    the scores ``f = X w`` of the same pass in ``scores``, which the proximal
    bundle method reuses instead of a pass over X (fastrisk/solvers/prox_bundle.py).
    ``columns``: "auto" (``use_columns``), True or False; an attribute, which may be
    set later.
    """

    def __init__(self, data, loss, y, sample_weight=None, *, n_partitions=1, n_threads=None,
                 columns="auto"):
        _check_rows(data, y, sample_weight)
        if not hasattr(loss, "spec") or loss.spec.vector:
            raise TypeError(f"loss must be a scalar fastrisk.Loss, got {loss!r}")
        _check_task_targets(loss, np.asarray(y))
        self.data, self.loss = data, loss
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.c = np.empty(0) if sample_weight is None else np.ascontiguousarray(sample_weight)
        self.n_samples, self.n_weights = data.n_samples, data.n_weights
        self.n_threads = resolve_n_threads(n_threads)
        self.partitions = partition_rows(self.n_samples, n_partitions)
        self.columns = columns
        use_columns(columns, data, 1, 1, 0)
        self._buffers = {}
        self.multipliers = np.zeros(self.n_samples)
        self.scores = np.zeros(self.n_samples)
        self.n_calls = 0

    @property
    def _workspace(self):
        """The row path's buffers, (n_threads, 2 n_weights): each thread's w interleaved
        with its gradient (also lent to the Newton and dual-gap kernels); made on first use."""
        return self._buffer("rows", lambda: np.empty((self.n_threads, 2 * self.n_weights)))

    def uses_columns(self):
        """Whether a call takes the column path (``use_columns``)."""
        buffer = 16 * self.n_weights  # w interleaved with the gradient
        return use_columns(self.columns, self.data, len(self.partitions), self.n_threads,
                           buffer, buffer)

    def partial(self, w, k, out=None, scores=None):
        """(sum_i c_i l_i, X^T g) over partition k, unnormalized; X^T g written into
        ``out`` (a float64 vector of length n_weights) when given; ``scores`` (length
        n_samples; default the attribute ``scores``) receives the partition's
        f_i = <w, x_i>."""
        w = self._check_w(w)
        start, stop = self._bounds(k)
        if out is not None and not (isinstance(out, np.ndarray) and out.dtype == np.float64
                                    and out.shape == (self.n_weights,)
                                    and out.flags.c_contiguous and out.flags.writeable):
            raise ValueError(f"out must be a writeable contiguous float64 vector of length "
                             f"{self.n_weights}")
        grad = np.empty(self.n_weights) if out is None else out
        d = self.data
        g = self.multipliers[start:stop]
        if scores is None:
            scores = self.scores
        if self.uses_columns():
            value, status = _oracle.risk_gradient_columns(
                d.data, d.indices, d.indptr, d.bias, *self._column_args(), w,
                self.loss.spec.kernel_id, self.loss.param, self.y, self.c, grad, g, scores,
                self.n_threads)
        else:
            value, status = _oracle.risk_gradient(
                d.data, d.indices, d.indptr, d.dense, d.bias, w, self.loss.spec.kernel_id,
                self.loss.param, self.y, self.c, start, stop, grad,
                self._workspace, self.n_threads, g, scores)
        if status != _oracle.STATUS_OK:
            if not np.isfinite(w).all():  # looked at only here: no cost on the usual path
                raise ValueError("w contains NaN or infinity")
            raise FloatingPointError(
                f"the {self.loss.name} loss is not finite at these weights (a score or its "
                "loss overflowed); scale X down or increase alpha")
        return value, grad

    def with_scores(self, w):
        """(R_emp(w), dR_emp(w), f) with the scores f_i = <w, x_i> of the same pass."""
        w = self._check_w(w)
        self.n_calls += 1
        f = np.empty(self.n_samples)
        value, grad = self.partial(w, 0, scores=f)
        for k in range(1, len(self.partitions)):
            v, g = self.partial(w, k, scores=f)
            value += v
            grad += g
        return value / self.n_samples, grad / self.n_samples, f


class VectorOracle(_Multiplexer):
    """Vector-loss oracle: w is W (k x n_weights) flattened, compiled kernel inside.

    ``F = X W^T``; the loss acts on each row of F (``losses.vector_loss`` is
    its NumPy statement).  ``y_index`` holds class indices, or the (m, k)
    target matrix for ``multivariate_regression``.  ``cost`` and ``beta``
    (scaled_soft_margin: Delta, default 0/1, and its exponent) and ``M``
    (multivariate_regression, PSD; the kernel takes its factor ``psd_factor(M)``) are the
    losses' parameters.  The kernel
    (csrc/_voracle.pyx) reads W feature-major and runs ``n_threads`` OpenMP
    threads with fixed-order sums.

    w is W flattened class-major (scikit-learn's ``(k, n_weights / k)`` order), or
    feature-major (``w[j k + c] = W[c, j]``, the kernel's own order, which it then
    reads without a conversion) on the view ``feature_major_view()``;
    ``to_class_major`` and ``from_class_major`` convert.  ``columns``: as for
    LocalOracle.
    """

    feature_major = False

    def __init__(self, data, loss_name, y_index, n_classes, sample_weight=None, *, n_partitions=1,
                 n_threads=None, cost=None, beta=1.0, M=None, columns="auto"):
        if loss_name not in _voracle.LOSS_IDS:
            raise ValueError(f"loss_name must be one of {sorted(_voracle.LOSS_IDS)}, "
                             f"got {loss_name!r}")
        self.data, self.loss_name = data, loss_name
        self.kernel_id = _voracle.LOSS_IDS[loss_name]
        k = int(n_classes)
        empty = np.empty((0, 0))
        self._Y, self._P, self._S = empty, empty, empty
        if loss_name == "multivariate_regression":
            self._Y = np.ascontiguousarray(y_index, dtype=np.float64)
            if self._Y.shape != (data.n_samples, k):
                raise ValueError(f"y must be a target matrix of shape {(data.n_samples, k)}, "
                                 f"got {self._Y.shape}")
            M = np.asarray(M, dtype=np.float64)
            if M.shape != (k, k) or not np.allclose(M, M.T):
                raise ValueError(f"M must be a symmetric ({k}, {k}) matrix")
            self._P = psd_factor(M)  # the kernel sums 0.5 ||L r||^2, L^T L = M
            self.y = np.empty(0, dtype=np.int64)
        else:
            _check_rows(data, y_index, sample_weight, classes=k)
            self.y = np.ascontiguousarray(y_index, dtype=np.int64)
        if loss_name == "scaled_soft_margin":
            cost = 1.0 - np.eye(k) if cost is None else np.asarray(cost, dtype=np.float64)
            if cost.shape != (k, k) or (np.diag(cost) != 0).any() or (cost < 0).any():
                raise ValueError(f"cost must be a non-negative ({k}, {k}) matrix with zero diagonal")
            if not isinstance(beta, (int, float, np.number)) or not beta >= 0:
                raise ValueError(f"beta must be a number >= 0, got {beta!r}")
            self._P = np.ascontiguousarray(cost)
            self._S = np.ascontiguousarray(cost ** beta)
        self.c = np.empty(0) if sample_weight is None else sample_weight
        self.n_classes = k
        self.n_samples = data.n_samples
        self.n_weights = k * data.n_weights
        self.n_threads = resolve_n_threads(n_threads)
        self.partitions = partition_rows(self.n_samples, n_partitions)
        self.columns = columns
        use_columns(columns, data, 1, 1, 0)
        self._buffers = {}
        self.n_calls = 0

    def uses_columns(self):
        """Whether a call takes the column path (``use_columns``)."""
        kp = _voracle.padded_classes(self.n_classes)
        buffer = 8 * self.data.n_weights * kp
        rows = 8 * np.prod(_voracle.workspace_shape(1, self.data.n_weights, self.n_classes))
        return use_columns(self.columns, self.data, len(self.partitions), self.n_threads,
                           buffer, rows, 8 * self.n_samples * kp)

    def __call__(self, w):
        if len(self.partitions) > 1:
            return super().__call__(w)
        self.n_calls += 1
        return self.partial(w, 0, 1.0 / self.n_samples)

    def partial(self, w, k, scale=1.0):
        """(sum_i c_i l_i, gradient in W flattened) over partition k, times ``scale``."""
        w = self._check_w(w)
        start, stop = self._bounds(k)
        grad = np.empty(self.n_weights)
        d, nk, D = self.data, self.n_classes, self.data.n_weights
        if self.uses_columns():
            U, scratch = self._buffer("column buffers", lambda: _voracle.column_buffers(
                self.n_threads, self.n_samples, nk))
            if self.feature_major and _voracle.padded_classes(nk) == nk:
                layout = np.empty((0, 0))  # W and its gradient read and written in place
            else:
                layout = self._buffer("layout", lambda: _voracle.column_layout(D, nk))
            value = _voracle.vector_risk_gradient_columns(
                d.data, d.indices, d.indptr, d.bias, *self._column_args(), w, nk,
                self.kernel_id, self.y, self._Y, self._P, self._S, self.c, scale, grad,
                layout, U, scratch, self.n_threads, self.feature_major)
        else:
            workspace = self._buffer("rows", lambda: np.empty(
                _voracle.workspace_shape(self.n_threads, D, nk)))
            value = _voracle.vector_risk_gradient(
                d.data, d.indices, d.indptr, d.dense, d.bias, w, nk, self.kernel_id,
                self.y, self._Y, self._P, self._S, self.c, start, stop, scale, grad,
                workspace, self.n_threads, self.feature_major)
        if not math.isfinite(value):
            if not np.isfinite(w).all():  # looked at only here: no cost on the usual path
                raise ValueError("w contains NaN or infinity")
            raise FloatingPointError(
                f"the {self.loss_name} loss is not finite at these weights (a score or its "
                "loss overflowed); scale X down or increase alpha")
        return value, grad

    def feature_major_view(self):
        """This oracle taking and returning W feature-major (``w[j k + c] = W[c, j]``).

        The view shares the data and the workspace: it must not be called while this
        oracle runs in another thread."""
        view = copy.copy(self)
        view.feature_major, view.n_calls = True, 0
        return view

    def to_class_major(self, w):
        """W flattened class-major, a new array, from w in this oracle's layout."""
        w = self._check_w(w)
        if not self.feature_major:
            return w.copy()
        return w.reshape(-1, self.n_classes).T.ravel()

    def from_class_major(self, w):
        """w in this oracle's layout, a new array, from W flattened class-major."""
        w = self._check_w(w)
        if not self.feature_major:
            return w.copy()
        return w.reshape(self.n_classes, -1).T.ravel()
