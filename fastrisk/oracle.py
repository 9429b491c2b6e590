"""The risk oracle (MATH.md 3, BMRM section 4): w -> (R_emp(w), dR_emp(w)).

``R_emp(w) = (1/m) sum_i c_i l(<w, x_i>, y_i)`` and
``dR_emp(w) = (1/m) X^T g`` with ``g_i = c_i l'(f_i, y_i)``.  The rows are
split into contiguous partitions; each partition returns its partial sums
(``partial``) and the oracle adds them in partition order: the multiplexer
of BMRM Figure 2.  Inside a partition the compiled kernel runs OpenMP
threads without the GIL.  Any object with ``n_samples``, ``n_weights`` and
``__call__(w) -> (risk, gradient)`` is a RiskOracle to the batch solvers.
"""

from typing import Protocol

import numpy as np

from fastrisk import _oracle
from fastrisk.config import resolve_n_threads
from fastrisk.losses import vector_loss


class RiskOracle(Protocol):
    n_samples: int
    n_weights: int

    def __call__(self, w):  # pragma: no cover - protocol
        """Return (R_emp(w), a subgradient of R_emp at w)."""


def partition_rows(n_samples, n_partitions):
    """Contiguous [start, stop) row ranges.

    ``n_partitions`` is a count (ranges of nearly equal size) or a sequence
    of partition sizes summing to ``n_samples`` (e.g. the row counts of the
    files or blocks a DaskOracle holds, so both oracles add the same sums).
    """
    if isinstance(n_partitions, (list, tuple, np.ndarray)):
        sizes = np.asarray(n_partitions)
        if sizes.ndim != 1 or sizes.size == 0 or sizes.dtype.kind not in "iu" \
                or (sizes < 1).any() or sizes.sum() != n_samples:
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


def check_weights(w, n_weights):
    """w as a contiguous float64 vector of length n_weights (ValueError otherwise)."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    if w.shape != (n_weights,):
        raise ValueError(f"w has shape {w.shape}, expected ({n_weights},)")
    return w


class _Multiplexer:
    """Adds the partitions' partial sums in partition order (BMRM Figure 2)."""

    def _check_w(self, w):
        return check_weights(w, self.n_weights)

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
    methods store in this sample-space form (fastrisk/solvers/bmrm.py).
    """

    def __init__(self, data, loss, y, sample_weight=None, *, n_partitions=1, n_threads=None):
        self.data, self.loss = data, loss
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.c = np.empty(0) if sample_weight is None else sample_weight
        self.n_samples, self.n_weights = data.n_samples, data.n_weights
        self.n_threads = resolve_n_threads(n_threads)
        self.partitions = partition_rows(self.n_samples, n_partitions)
        self._workspace = np.empty((self.n_threads, 2 * self.n_weights))
        self.multipliers = np.zeros(self.n_samples)
        self.n_calls = 0

    def partial(self, w, k, out=None, scores=None):
        """(sum_i c_i l_i, X^T g) over partition k, unnormalized; X^T g written into
        ``out`` (a float64 vector of length n_weights) when given; ``scores`` (length
        n_samples, optional) receives the partition's f_i = <w, x_i>."""
        w = self._check_w(w)
        start, stop = self.partitions[k]
        grad = np.empty(self.n_weights) if out is None else out
        d = self.data
        g = self.multipliers[start:stop]
        value, status = _oracle.risk_gradient(
            d.data, d.indices, d.indptr, d.dense, d.bias, w, self.loss.spec.kernel_id,
            self.loss.param, self.y, self.c, start, stop, grad,
            self._workspace, self.n_threads, g, scores)
        if status != _oracle.STATUS_OK:
            raise FloatingPointError(
                f"the {self.loss.name} loss overflowed (exp of a score above ~709); "
                "scale X down or increase alpha")
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
    """Multiclass oracle: w is W (k x n_weights) flattened; F = X W^T, NumPy/scipy inside."""

    def __init__(self, data, loss_name, y_index, n_classes, sample_weight=None, *, n_partitions=1):
        self.data, self.loss_name = data, loss_name
        self.y = np.asarray(y_index, dtype=np.intp)
        self.c = sample_weight
        self.n_classes = n_classes
        self.n_samples = data.n_samples
        self.n_weights = n_classes * data.n_weights
        self.partitions = partition_rows(self.n_samples, n_partitions)
        self.n_calls = 0

    def partial(self, w, k):
        """(sum_i c_i l_i, gradient in W flattened) over partition k, unnormalized."""
        d = self.data
        W = self._check_w(w).reshape(self.n_classes, d.n_weights)
        start, stop = self.partitions[k]
        X = d.X[start:stop]
        F = np.asarray(X @ W[:, : d.n_features].T)
        if d.bias:
            F += d.bias * W[:, -1]
        values, G = vector_loss(self.loss_name, F, self.y[start:stop])
        if self.c is not None:
            values = values * self.c[start:stop]
            G *= self.c[start:stop, None]
        grad = np.empty((self.n_classes, d.n_weights))
        grad[:, : d.n_features] = np.asarray(X.T @ G).T
        if d.bias:
            grad[:, -1] = d.bias * G.sum(axis=0)
        return float(values.sum()), grad.ravel()
