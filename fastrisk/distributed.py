"""The risk oracle on a Dask cluster (BMRM section 4 and Figure 2; docs/math.md §3).

``DaskOracle`` is the multiplexer of BMRM Figure 2 across machines: the data
are cut into row partitions that live on the Dask workers (loaded there from
svmlight files, computed there from a dask array / dataframe, or scattered
once from an in-memory matrix) and are never sent again.  A partition keeps
only the columns its rows use (``Partition.cols``, also kept on the client):
each call sends partition k ``w[cols_k]`` and gets back ``(X_k^T g)[cols_k]``,
not two dense vectors of the full width.  Workers on the client's host
(a LocalCluster, or workers started next to the client) skip even that: w
and each partition's gradient live in shared-memory blocks the client owns,
so a call moves only the call messages (the client writes w once, each
worker writes its full-width partial gradient, the client adds them).  The
calls go straight from the client to one ``PartitionActor`` per partition,
on the worker holding it (no scheduler and no task per call); the worker
runs the compiled kernel
(``LocalOracle.partial``: GIL released, ``n_threads`` OpenMP threads, default
the worker's thread count, and the partitions of one worker run one at a
time, so the workers do not oversubscribe the cores).  The client adds the
partial sums in partition order.  The sums are the ones ``LocalOracle`` adds
for the same partition sizes and thread count (see ``DaskOracle.__call__``
for why the column restriction changes no bit), so ``DaskOracle(w)`` equals
``LocalOracle(..., n_partitions=oracle.partition_sizes,
n_threads=oracle.n_threads, columns=False)(w)`` bit for bit (the row path of
fastrisk/oracle.py, which the workers run), and every batch solver (BMRM,
proximal bundle, L-BFGS) runs on it unchanged through
``Problem.from_oracle`` (see ``make_dask_problem``).

Failures: a call that loses a worker places new actors next to the surviving
or rebuilt partitions and is repeated.  Partitions built by tasks (files,
dask collections) are recomputed on the remaining workers from their source.  Scattered partitions survive when
``from_array(..., replicas=r)`` kept r copies on distinct workers (distinct
keys, so Dask's memory manager does not drop them as redundant replicas):
the call is repeated on a surviving copy.  When every copy of a partition is
gone the call raises ``PartitionLostError``; it never returns a partial sum.
"""

import os
import time
import weakref

import numpy as np
import scipy.sparse as sp

from fastrisk.data import (MAX_INTERCEPT_SCALING, Dataset, _check_labels, _required,
                           check_sample_weight, check_targets, check_X)
from fastrisk.losses import Loss
from fastrisk.oracle import LocalOracle, check_weights, partition_rows
from fastrisk.solvers._checks import check_bool, check_int, check_number

_GONE = ("lost", "cancelled", "error")
POLL_SECONDS = 0.5  # how often a waiting call checks that its actors' workers are alive


class PartitionLostError(RuntimeError):
    """A data partition was lost with its worker and cannot be rebuilt."""


def _distributed():
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - the extra is in the test deps
        raise ImportError("fastrisk.distributed needs dask.distributed: "
                          "pip install 'fastrisk[dask]'") from exc
    return distributed


def check_address(address, name="client"):
    """``address`` if it parses as a scheduler address, else ValueError naming ``name``.

    Checked before a Client is built: a Client whose constructor fails on a malformed
    address leaves a half-built object whose finalizer waits forever when the
    interpreter exits."""
    _distributed()
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address)
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name} must be a scheduler address such as 'tcp://host:8786', "
                         f"got {address!r} ({exc})") from None
    return address


def connect(address, name="client", **options):
    """A new Client of the scheduler at ``address`` (checked first: ``check_address``)."""
    return _distributed().Client(check_address(address, name), **options)


# ---------------------------------------------------------------- worker side
# A "chunk" is the raw (X, y, sample_weight or None) of one partition; a
# "partition" is the LocalOracle a worker builds over it and keeps.

def _load_svmlight_chunk(path, n_features, dtype, zero_based):
    from fastrisk.svmlight import load_svmlight

    X, y = load_svmlight(path, n_features=n_features, dtype=dtype, zero_based=zero_based)
    return X, y, None


def _block_chunk(X, y, c):
    """A chunk from one row block of a dask collection (dataframe blocks become arrays)."""
    X = X if sp.issparse(X) else np.asarray(X)
    return X, np.asarray(y).ravel(), None if c is None else np.asarray(c).ravel()


def _chunk_summary(chunk, task):
    """(rows, columns, distinct labels for binary losses, sum of sample weights) of one chunk.

    The labels of a chunk are checked here, where a dask y is first computed (NaN or
    infinity is no class label: np.unique would make it one)."""
    X, y, c = chunk
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got a block of shape {X.shape}")
    labels = np.unique(_check_labels(y, X.shape[0], "y")) if task == "binary" else None
    return X.shape[0], X.shape[1], labels, (float(np.sum(c)) if c is not None else X.shape[0])


def used_columns(X, n_features, bias):
    """The sorted weight indices one partition touches: the stored columns of a
    sparse X (all columns of a dense one), then the intercept."""
    used = np.zeros(n_features + (bias != 0.0), dtype=bool)
    if sp.issparse(X):
        used[X.indices] = True
    else:
        used[:n_features] = True
    used[0] |= not used[:n_features].any()  # rows without entries: keep one (unwritten) column
    used[n_features:] = True  # the intercept
    return np.flatnonzero(used)


class Partition:
    """One partition on a worker: the LocalOracle over its rows and only the
    columns they use (docs/math.md §3, partition-local gradients).

    ``cols`` are the weight indices the rows touch; X is stored with its
    column indices renumbered 0..len(cols)-1 (order kept), so ``partial``
    takes ``w[cols]`` and returns ``(X^T g)[cols]``.  The kernel runs the same
    floating-point operations in the same order as on the full width: only
    the indices differ.  The other gradient entries of the full-width kernel
    are its initial +0.0 (no row writes them).
    """

    def __init__(self, chunk, loss, task, classes, n_features, bias, n_threads):
        X, y, c = chunk
        m = X.shape[0]
        if X.shape[1] > n_features or (not sp.issparse(X) and X.shape[1] != n_features):
            raise ValueError(f"a partition has {X.shape[1]} features, expected {n_features}")
        # checked before its indices are read and renumbered (an index out of range would
        # index another column); a sparse X becomes canonical CSR
        X = check_X(X, "X")
        self.cols = used_columns(X, n_features, bias)
        if sp.issparse(X):
            local = np.searchsorted(self.cols, X.indices).astype(X.indices.dtype)
            X = sp.csr_matrix((X.data, local, X.indptr),
                              shape=(m, self.cols.size - (bias != 0.0)))
        data = Dataset(X, intercept_scaling=bias)
        if task == "binary":
            y = np.asarray(y).ravel()
            if y.shape[0] != m:
                raise ValueError(f"y has {y.shape[0]} entries for a partition of {m} rows")
            y = np.where(y == classes[1], 1.0, -1.0)
        elif task == "novelty":
            y = np.zeros(m)
        else:
            y = check_targets(y, m)  # counts: the oracle refuses negative ones
        # the row path: the sums of LocalOracle's partitions (its column path adds others);
        # a partition's weights may sum to 0, the whole's sum is checked by DaskOracle
        self.oracle = LocalOracle(data, loss, y, check_sample_weight(c, m, positive_sum=False),
                                  n_partitions=1, n_threads=n_threads, columns=False)

    def conjugates_at_zero(self):
        """c_i l*(0, y_i) of the rows (for the risk floor of BMRM's first cut)."""
        o = self.oracle
        conj = o.loss.conjugate(np.zeros(o.n_samples), o.y)
        return conj * o.c if o.c.size else conj


class PartitionActor:
    """The Dask actor that runs ``Partition.partial`` on the worker holding the
    partition: calls go from the client to that worker directly (no scheduler,
    no task per call), and w[cols] and the gradient travel as raw buffers."""

    def __init__(self, partition):
        self.partition = partition

    def columns(self):
        return self.partition.cols

    def partial(self, w_cols):
        """(sum_i c_i l_i, (X^T g)[cols], compute seconds, pid)."""
        start = time.perf_counter()
        value, grad = self.partition.oracle.partial(w_cols, 0)
        return value, grad, time.perf_counter() - start, os.getpid()

    def attach(self, token, w_name, out_name, n_weights):
        """Map the client's shared-memory buffers of w and of this partition's gradient.

        True when ``token`` matches what the client wrote at the start of the w
        buffer (this worker shares the client's host and /dev/shm); else False
        and calls go through ``partial``."""
        self.detach()
        try:
            self._w = _open_shared(w_name, n_weights + 2)
            self._out = _open_shared(out_name, n_weights)
        except (OSError, ValueError):
            self.detach()
            return False
        if self._w[0] != token:
            self.detach()
            return False
        return True

    def detach(self):
        self._w = self._out = None

    def partial_shared(self):
        """``partial`` through the shared buffers: reads w, writes the full-width gradient
        (+0.0 outside cols, like a full-width kernel); returns (value, seconds, pid)."""
        start = time.perf_counter()
        cols = self.partition.cols
        w = self._w[2:]
        full = cols.size == w.shape[0]
        if full:
            value, _ = self.partition.oracle.partial(w, 0, out=self._out)
        else:
            value, grad = self.partition.oracle.partial(w[cols], 0)
            self._out[:] = 0.0
            self._out[cols] = grad
        return value, time.perf_counter() - start, os.getpid()


SHM_DIR = "/dev/shm"  # where POSIX shared memory lives on Linux (a tmpfs)


def _shared_memory_fits(nbytes):
    """False when the shared-memory file system has less than ``nbytes`` free: tmpfs
    accepts a block's size and the first write beyond its space kills the process with
    SIGBUS (e.g. a container's 64 MiB /dev/shm), so such blocks go over the network."""
    try:
        st = os.statvfs(SHM_DIR)
    except OSError:  # not Linux: shared memory is not a size-limited tmpfs there
        return True
    return nbytes <= st.f_bavail * st.f_frsize


def _open_shared(name, n):
    """n float64 of the client's shared-memory block ``name``, mapped from /dev/shm.

    Mapped as a file rather than through ``multiprocessing.shared_memory``,
    whose resource tracker (shared with the client by workers it spawned)
    would take the block as this process's and unlink it or lose track of it."""
    return np.memmap(os.path.join("/dev/shm", name.lstrip("/")), dtype=np.float64, mode="r+",
                     shape=(n,))


# ---------------------------------------------------------------- client side

def check_known_chunks(v, name):
    """ValueError naming ``name`` when the dask array v has chunks of unknown size (after
    boolean indexing, for instance): its rows cannot be matched to X's or y's."""
    if any(np.isnan(size) for sizes in v.chunks for size in sizes):
        raise ValueError(f"{name} has unknown chunk sizes (shape {v.shape}); call "
                         f"{name}.compute_chunk_sizes() first")


def _unlink_all(blocks):
    for block in blocks:
        block.close()
        block.unlink()


def get_client(client=None):
    """A dask Client: the given one, a new one connected to an address, or the current one."""
    distributed = _distributed()
    if client is None:
        try:
            return distributed.get_client()
        except ValueError:
            raise ValueError("no Dask client: pass client= (a Client or a scheduler "
                             "address such as 'tcp://host:8786')") from None
    if isinstance(client, str):
        return connect(client)
    return check_client(client)


def check_client(client, name="client"):
    """``client`` if it is a dask Client, else TypeError naming the argument ``name``."""
    if not isinstance(client, _distributed().Client):
        raise TypeError(f"{name} must be a dask Client, an address or None, got {client!r}")
    return client


def _novelty_targets(y, n_samples, options):
    """``y``, or for a novelty loss given no y the zero targets that Problem uses (any
    other loss refuses a missing y by name)."""
    if y is not None:
        return y
    loss = options.get("loss", "hinge")
    loss = loss if isinstance(loss, Loss) else Loss(loss, options.get("loss_param"))
    return np.zeros(n_samples) if loss.spec.task == "novelty" else _required(y, "y")


class DaskOracle:
    """R_emp(w) and a subgradient, computed on Dask workers; see the module docstring.

    Build it with ``from_array`` (split an in-memory X), ``from_svmlight``
    (one partition per file, loaded on the workers) or ``from_dask`` (one
    partition per row block of a dask array / dataframe).  Attributes:
    ``n_samples``, ``n_weights``, ``n_features``, ``bias``, ``loss``,
    ``classes_`` (binary losses), ``partition_sizes``, ``n_threads``,
    ``risk_floor`` (``-(1/m) sum_i c_i l*(0, y_i) <= R_emp``, BMRM's first cut),
    ``columns`` (the weight indices of each partition, ``slice(None)`` for
    all), ``n_calls`` and ``last_timing`` (wall seconds of the last call, the
    kernel seconds of each partition and the pid of the worker that ran it:
    the rest is communication and the client's sums), ``transport`` ("shared
    memory" or "network") and ``last_bytes`` (array bytes the last call sent
    over the network: 0 through shared memory).
    """

    checked = True  # the compiled kernels over checked partitions (Problem.from_oracle)

    def __init__(self, client, chunks, *, loss="hinge", loss_param=None, fit_intercept=False,
                 intercept_scaling=1.0, n_features=None, n_threads=None, shared_memory=True):
        """Turn chunk futures (X, y, sample_weight) on the workers into partitions.

        Prefer the ``from_*`` constructors.  ``chunks[k]`` is the future of
        partition k's chunk, or a list of futures of identical copies (on
        distinct workers) to fall back on when a worker is lost.
        ``n_threads``: OpenMP threads per partition call (None: the smallest
        thread count of the cluster's workers).  ``shared_memory``: pass w and
        the gradients through shared memory to the workers on the client's
        host (False: always over the network).
        """
        self.client = client
        n_features = check_int(n_features, "n_features", low=1, allow_none=True)
        self.loss = loss if isinstance(loss, Loss) else Loss(loss, loss_param)
        if self.loss.spec.vector:
            raise ValueError(f"DaskOracle supports the scalar losses, not {self.loss.name!r}")
        check_bool(fit_intercept, "fit_intercept")
        if fit_intercept:
            check_number(intercept_scaling, "intercept_scaling", low=0.0,
                         high=MAX_INTERCEPT_SCALING, low_open=True)
        if n_threads is None:  # a worker runs one partition at a time on all its threads
            n_threads = min(w["nthreads"] for w in client.scheduler_info()["workers"].values())
        n_threads = check_int(n_threads, "n_threads", low=1)
        if not chunks:
            raise ValueError("no data partitions")
        copies = [c if isinstance(c, (list, tuple)) else [c] for c in chunks]
        chunks = [c[0] for c in copies]
        task = self.loss.spec.task
        summaries = client.gather([client.submit(_chunk_summary, chunk, task, pure=False)
                                   for chunk in chunks])
        rows = [s[0] for s in summaries]
        if max(rows) < 1:
            raise ValueError(f"the data have no rows (partition sizes {rows})")
        if min(rows) < 1:  # e.g. row blocks a filter emptied: they add nothing to the sums
            keep = [k for k, r in enumerate(rows) if r > 0]
            copies, chunks, summaries, rows = ([seq[k] for k in keep] for seq in
                                               (copies, chunks, summaries, rows))
        width = max(s[1] for s in summaries)
        if n_features is not None:
            if n_features < width:
                raise ValueError(f"n_features={n_features} but the data have {width} columns")
            width = int(n_features)
        self.classes_ = None
        if task == "binary":
            self.classes_ = np.unique(np.concatenate([s[2] for s in summaries]))
            if self.classes_.shape[0] != 2:
                raise ValueError("y must hold exactly two classes for a binary loss, got "
                                 f"{self.classes_.shape[0]}")
        if sum(s[3] for s in summaries) <= 0:
            raise ValueError("sample_weight must have a positive sum")
        self.bias = float(intercept_scaling) if fit_intercept else 0.0
        self.n_features = width
        self.n_weights = width + (self.bias != 0.0)
        self.n_samples = int(sum(rows))
        self.partition_sizes = rows
        self.n_threads = int(n_threads)
        # copies are built where their chunk lives (never two on one worker)
        where = client.who_has([c for cs in copies if len(cs) > 1 for c in cs])
        self.copies = [
            [client.submit(Partition, chunk, self.loss, task, self.classes_, width, self.bias,
                           self.n_threads, pure=False,
                           workers=list(where[chunk.key]) if chunk.key in where else None)
             for chunk in chunk_copies]
            for chunk_copies in copies]
        for part in self.all_partitions:
            if part.exception() is not None:
                part.result()  # raises the worker's validation error here
        # the weight indices of each partition, kept here: w[cols] out, (X^T g)[cols] back
        cols = client.gather([client.submit(getattr, part, "cols", pure=False)
                              for part in self.partitions])
        self.columns = [slice(None) if c.size == self.n_weights else c for c in cols]
        conj = client.gather([client.submit(Partition.conjugates_at_zero, part, pure=False)
                              for part in self.partitions])
        self.risk_floor = float(-np.concatenate(conj).mean())
        self.n_calls = 0
        self.last_timing = None
        self.last_bytes = None
        self._actors, self._handles = [], []  # the actor futures and their call handles
        self._direct_client = None
        if not isinstance(shared_memory, (bool, np.bool_)):
            raise ValueError(f"shared_memory must be a bool, got {shared_memory!r}")
        self.use_shared_memory = bool(shared_memory)
        self._shared = None  # (SharedMemory blocks, w buffer, gradient buffers) when in use
        self.transport = None  # "shared memory" or "network", set when the actors are placed

    # -- constructors -----------------------------------------------------

    @classmethod
    def from_array(cls, client, X, y, *, sample_weight=None, n_partitions=None, replicas=1,
                   **options):
        """Split an in-memory X (CSR or dense) into contiguous row partitions and scatter them.

        ``n_partitions`` is a count (default: the cluster's worker threads) or a
        list of sizes; ``replicas >= 2`` keeps that many copies of each
        partition on distinct workers, so that the loss of ``replicas - 1``
        workers is survived.  X and y are checked as ``Problem`` checks them (other sparse
        formats are converted to CSR, a copy); X itself is not modified.
        """
        client = get_client(client)
        # Problem's checks, before the rows are sliced: scipy's row slicing drops the
        # entries of a column index out of range instead of reporting them
        X = check_X(X, "X")
        m = X.shape[0]
        y = _check_labels(_novelty_targets(y, m, options), m, "y")  # shape, no NaN or inf
        c = check_sample_weight(sample_weight, m)
        if n_partitions is None:
            n_partitions = max(1, sum(w["nthreads"] for w in
                                      client.scheduler_info()["workers"].values()))
        workers = sorted(client.scheduler_info()["workers"])
        replicas = check_int(replicas, "replicas", low=1, high=len(workers))  # <= workers
        copies = []
        for k, (a, b) in enumerate(partition_rows(m, n_partitions)):
            chunk = (X[a:b], y[a:b], None if c is None else c[a:b])
            copies.append([client.scatter([chunk], workers=[workers[(k + r) % len(workers)]],
                                          hash=False)[0] for r in range(replicas)])
        return cls(client, copies, **options)

    @classmethod
    def from_svmlight(cls, client, paths, *, n_features=None, dtype=np.float64,
                      zero_based="auto", **options):
        """One partition per svmlight file, read by a worker (the files must be
        readable there); a lost partition is re-read from its file.  ``zero_based`` as in
        ``load_svmlight``: "auto" decides per file (a header, else an index 0), so files
        of one 0-based coding without the header need ``zero_based=True``."""
        client = get_client(client)
        if isinstance(paths, (str, os.PathLike)) or not len(paths):
            raise ValueError("paths must be a non-empty list of svmlight files")
        from fastrisk.svmlight import check_zero_based

        zero_based = check_zero_based(zero_based)  # here, not on every worker
        n_features = check_int(n_features, "n_features", low=1, allow_none=True)
        paths = [os.fspath(p) for p in paths]
        chunks = [client.submit(_load_svmlight_chunk, p, n_features, dtype, zero_based,
                                pure=False) for p in paths]
        return cls(client, chunks, n_features=n_features, **options)

    @classmethod
    def from_dask(cls, client, X, y, *, sample_weight=None, **options):
        """One partition per row block of a dask array or dataframe ``X``.

        ``y`` (and ``sample_weight``) are dask arrays / series with the same row
        blocks, or in-memory vectors (split along X's blocks).  The blocks are
        computed on the workers; a lost partition is recomputed from its graph.
        """
        import dask
        import dask.array as da

        client = get_client(client)
        if hasattr(X, "to_dask_array"):
            X = X.to_dask_array(lengths=True)
        if not isinstance(X, da.Array) or X.ndim != 2:
            raise TypeError("X must be a 2-d dask array or a dask dataframe")
        check_known_chunks(X, "X")
        X = X.rechunk({1: -1})
        y = _novelty_targets(y, X.shape[0], options)
        sizes = X.chunks[0]
        edges = np.concatenate([[0], np.cumsum(sizes)])

        def blocks(v, name):
            if v is None:
                return [None] * len(sizes)
            if hasattr(v, "to_dask_array"):
                v = v.to_dask_array(lengths=True)
            if isinstance(v, da.Array):
                # the shape here; the values where the blocks are computed (_chunk_summary,
                # Partition), so that v is computed once
                check_known_chunks(v, name)
                if v.ndim not in (1, 2) or v.shape[1:] not in ((), (1,)):
                    raise ValueError(f"{name} must be 1-dimensional, got shape {v.shape}")
                if v.shape[0] != X.shape[0]:
                    raise ValueError(f"{name} has {v.shape[0]} entries but X has {X.shape[0]} rows")
                return list(v.rechunk((sizes,) + v.chunks[1:]).to_delayed().ravel())
            if name == "y":
                v = _check_labels(v, X.shape[0], name)  # shape, no NaN or infinity
            else:
                v = check_sample_weight(v, X.shape[0], name)
            return [v[a:b] for a, b in zip(edges[:-1], edges[1:])]

        chunk = dask.delayed(_block_chunk, pure=True)
        parts = [chunk(xb, yb, cb) for xb, yb, cb in
                 zip(X.to_delayed().ravel(), blocks(y, "y"), blocks(sample_weight, "sample_weight"))]
        return cls(client, client.compute(parts), **options)

    # -- the oracle -------------------------------------------------------

    @property
    def partitions(self):
        """The future of the copy of each partition that calls use (the first one alive)."""
        live = [next((p for p in copies if p.status not in _GONE), None)
                for copies in self.copies]
        lost = [k for k, p in enumerate(live) if p is None]
        if lost:
            raise PartitionLostError(
                f"partitions {lost} were lost with their workers and cannot be rebuilt "
                "(scattered data: build the oracle with replicas >= 2, or from files / "
                "dask collections, which are recomputed)")
        return live

    @property
    def all_partitions(self):
        return [p for copies in self.copies for p in copies]

    def _place_actors(self):
        """A PartitionActor next to the live copy of each partition (a partition
        built by a task and lost with its worker is recomputed first)."""
        self._release_actors()
        parts = self.partitions
        where = self.client.who_has(parts)
        self._actors = [self.client.submit(PartitionActor, part, actor=True, pure=False,
                                           workers=list(where.get(part.key, ())) or None,
                                           allow_other_workers=True)
                        for part in parts]
        with self._actor_client().as_current():  # the handles call through this client
            self._handles = [actor.result() for actor in self._actors]
            self.transport = "shared memory" if self._attach_shared() else "network"

    def _attach_shared(self):
        """Give every actor the shared buffers; True when all of them could map them.

        The client owns one block for w (after a random token and a spare slot)
        and one full-width gradient block per partition.  An actor maps them
        only if it runs on this host: it checks the token it reads against the
        one sent with the call."""
        if not self.use_shared_memory:
            return False
        from multiprocessing import shared_memory

        n = self.n_weights
        if self._shared is None:
            if not _shared_memory_fits(8 * (n + 2) + 8 * max(n, 1) * len(self.copies)):
                return False
            blocks = [shared_memory.SharedMemory(create=True, size=8 * (n + 2))]
            blocks += [shared_memory.SharedMemory(create=True, size=8 * max(n, 1))
                       for _ in self.copies]
            w_buf = np.ndarray((n + 2,), dtype=np.float64, buffer=blocks[0].buf)
            outs = [np.ndarray((n,), dtype=np.float64, buffer=b.buf) for b in blocks[1:]]
            self._shared = (blocks, w_buf, outs)
            self._free_shared = weakref.finalize(self, _unlink_all, blocks)
        blocks, w_buf, _ = self._shared
        w_buf[0] = token = float(np.random.default_rng().integers(1, 2**52))
        calls = [h.attach(token, blocks[0].name, blocks[k + 1].name, n)
                 for k, h in enumerate(self._handles)]
        if all(self._result(call) for call in calls):
            return True
        for call in [h.detach() for h in self._handles]:
            self._result(call)
        return False

    def _actor_client(self):
        """A client that sends actor calls to the workers directly: the given
        one if it was made with ``direct_to_workers=True``, else a second
        connection to the same scheduler (the default relays every call, w and
        gradients included, through the scheduler)."""
        if self.client.direct_to_workers:
            return self.client
        if self._direct_client is None:
            self._direct_client = _distributed().Client(
                self.client.scheduler.address, security=self.client.security,
                direct_to_workers=True, set_as_default=False)
            # closed with the oracle (or when it is collected), before its cluster goes
            self._close_direct = weakref.finalize(self, self._direct_client.close)
        return self._direct_client

    def _release_actors(self):
        for actor in self._actors:
            actor.release()
        self._actors, self._handles = [], []

    def _result(self, call):
        """The result of one actor call, or OSError once an actor's worker is gone
        (a call to a dead worker can wait for the actor's recomputation forever)."""
        while True:
            try:
                return call.result(timeout=POLL_SECONDS)
            except TimeoutError:
                if any(actor.status != "finished" for actor in self._actors):
                    raise OSError("a worker holding a partition actor was lost") from None

    def partials(self, w):
        """[(value, (X^T g)[cols], compute seconds, worker pid)] of every partition, in order.

        Each partition's actor receives ``w[cols]`` and runs the kernel; the
        calls run concurrently on the workers.  A call that lost a worker is
        repeated on actors placed next to the surviving (or recomputed) copies,
        at most once per copy; the results are used only when complete.
        """
        distributed = _distributed()
        if not self.copies:
            raise ValueError("the DaskOracle is closed: its partitions were released")
        w = check_weights(w, self.n_weights)
        n_copies = max(len(c) for c in self.copies)
        for attempt in range(n_copies + 1):
            try:
                if not self._handles:
                    self._place_actors()
                if self.transport == "shared memory":
                    _, w_buf, outs = self._shared
                    w_buf[2:] = w
                    calls = [actor.partial_shared() for actor in self._handles]
                    self.last_bytes = 0
                    return [(v, out, sec, pid) for (v, sec, pid), out in
                            zip([self._result(call) for call in calls], outs)]
                calls = [actor.partial(w[cols]) for actor, cols in zip(self._handles, self.columns)]
                results = [self._result(call) for call in calls]
                self.last_bytes = sum(w[cols].nbytes + r[1].nbytes
                                      for cols, r in zip(self.columns, results))
                return results
            except PartitionLostError:
                raise
            except (OSError, RuntimeError, distributed.client.FutureCancelledError) as exc:
                # a worker died: its actors (and maybe partitions) are gone
                self._release_actors()
                if attempt == n_copies:
                    raise PartitionLostError(
                        f"the oracle call failed {attempt + 1} times with lost workers (scattered "
                        "data: build the oracle with replicas >= 2)") from exc

    def __call__(self, w):
        """(R_emp(w), gradient): the partial sums added in partition order.

        ``grad[cols_k] += g_k`` for k = 0, 1, ... gives the bits of the local
        oracle's ``g_0 + g_1 + ...`` over full-width partials: there a
        partial is +0.0 outside its columns, and adding +0.0 changes no value
        except -0.0, which no entry can be (each is a sum started at +0.0, and
        in round-to-nearest such a sum is never -0.0).
        """
        start = time.perf_counter()
        results = self.partials(w)
        self.n_calls += 1
        value = results[0][0]
        for v, _, _, _ in results[1:]:
            value += v
        if self.transport == "shared memory":  # full-width partial gradients
            grad = results[0][1] if len(results) == 1 else results[0][1] + results[1][1]
            for _, g, _, _ in results[2:]:
                grad += g
        else:
            grad = np.zeros(self.n_weights)
            for (_, g, _, _), cols in zip(results, self.columns):
                grad[cols] += g
        self.last_timing = (time.perf_counter() - start, [r[2] for r in results],
                            [r[3] for r in results])
        return value / self.n_samples, np.divide(grad, self.n_samples,
                                                 out=None if grad is results[0][1] else grad)

    def local_equivalent(self, X, y, sample_weight=None):
        """The LocalOracle over the same data that adds the same sums (for checks)."""
        from fastrisk.data import encode_binary

        data = Dataset(X, intercept_scaling=self.bias)
        m = data.n_samples
        if self.loss.spec.task == "binary":
            y = encode_binary(y, m)[0]
        elif self.loss.spec.task == "novelty":
            y = np.zeros(m)
        return LocalOracle(data, self.loss, y, check_sample_weight(sample_weight, m),
                           n_partitions=self.partition_sizes, n_threads=self.n_threads,
                           columns=False)

    def close(self):
        """Release the actors and partitions on the workers; later calls raise ValueError."""
        self._release_actors()
        for p in self.all_partitions:
            p.release()
        self.copies = []
        if self._shared is not None:
            self._free_shared()
            self._shared = None
        if self._direct_client is not None:
            self._close_direct()
            self._direct_client = None


def make_dask_problem(source, y=None, *, client=None, loss="hinge", penalty="l2", alpha=1e-4,
                      loss_param=None, l1_ratio=0.15, p=2.0, sample_weight=None,
                      fit_intercept=False, intercept_scaling=1.0, n_partitions=None,
                      n_features=None, n_threads=None, replicas=1, zero_based="auto"):
    """A fastrisk Problem whose risk oracle runs on a Dask cluster.

    ``source``: a list of svmlight file paths (y and sample_weight unused; their
    index base ``zero_based`` as in ``DaskOracle.from_svmlight``),
    a dask array / dataframe (``y`` a dask or in-memory vector), or an
    in-memory X (CSR or dense) split into ``n_partitions``.  ``client``: a
    dask Client, a scheduler address (``"tcp://host:8786"``) or None for the
    current client.  ``replicas``: copies of each in-memory partition (files and
    dask collections are recomputed instead).  ``n_threads``: OpenMP threads
    per partition call (default: the workers' thread count; a worker runs its
    partitions one at a time).
    The other arguments mean what they mean in ``Problem``.
    Solve with ``fastrisk.solve(problem, solver="bmrm" | "prox_bundle" |
    "lbfgs")``; ``problem.oracle`` is the DaskOracle and ``problem.classes_``
    the original binary labels.
    """
    from fastrisk.problem import Problem, check_alpha
    from fastrisk.regularizers import make_regularizer

    # the problem's own arguments first, before any data are sent to the workers
    check_alpha(alpha)
    make_regularizer(penalty, l1_ratio=l1_ratio, p=p)
    if isinstance(source, (list, tuple)) and not source:
        raise ValueError("source is empty: pass svmlight files, a dask collection or an X")
    if isinstance(source, (str, os.PathLike)):
        raise ValueError(f"source must be a list of svmlight files, a dask collection or an "
                         f"in-memory X; got the single path {os.fspath(source)!r}: pass "
                         f"[{os.fspath(source)!r}]")
    client = get_client(client)
    options = {"loss": loss, "loss_param": loss_param, "fit_intercept": fit_intercept,
               "intercept_scaling": intercept_scaling, "n_threads": n_threads}
    if isinstance(source, (list, tuple)) and source and \
            all(isinstance(s, (str, os.PathLike)) for s in source):
        oracle = DaskOracle.from_svmlight(client, source, n_features=n_features,
                                          zero_based=zero_based, **options)
    elif hasattr(source, "dask"):
        oracle = DaskOracle.from_dask(client, source, y, sample_weight=sample_weight,
                                      n_features=n_features, **options)
    else:
        oracle = DaskOracle.from_array(client, source, y, sample_weight=sample_weight,
                                       n_partitions=n_partitions, n_features=n_features,
                                       replicas=replicas, **options)
    return Problem.from_oracle(oracle, penalty=penalty, alpha=alpha, l1_ratio=l1_ratio, p=p,
                               n_features=oracle.n_features, bias=oracle.bias, loss=oracle.loss,
                               classes=oracle.classes_)
