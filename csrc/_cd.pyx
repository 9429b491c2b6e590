# cython: language_level=3
"""Column kernels of the l1 / elastic-net proximal Newton solver (fastrisk/solvers/cd.py).

newGLMNET (Yuan, Ho & Lin 2012, Algorithm 3): at w, with per-example first and
second derivatives g_i = c_i l'(f_i) / m and h_i = c_i l''(f_i) / m, coordinate
descent minimizes the quadratic model

    q(d) = G^T d + 0.5 d^T (X^T diag(h) X + (lam2 + nu) I) d + lam1 ||w + d||_1,
    G = X^T g + lam2 w,

over a working set W of columns, keeping X d in ``xtd`` (``inner_cd``) or, on
the Gram matrix X_W^T diag(h) X_W of a small working set, H d (``gram_rows`` or
``gram_columns``, ``inner_cd_gram``); a backtracking line search along d then gives
the next w.
X is read by columns: ``(data, indices, indptr, dense)`` is the CSC view made
once by the solver (for a dense matrix: the column-major copy, ``indices =
arange(m)`` shared by every column, ``indptr[j] = j m``), the intercept's
constant column included; ``gram_rows`` reads the rows (the Dataset's row view).
Every function runs without the GIL; status codes of fr_loss.h are returned.
"""

import numpy as np
from cython cimport floating
from cython.parallel cimport prange, threadid
from libc.float cimport DBL_MAX
from libc.math cimport INFINITY, fabs, sqrt
from libc.stdint cimport int64_t, uint16_t, uint64_t
from libc.string cimport memcpy

from fr_rows cimport FR_PREFETCH_DISTANCE, fr_prefetch, index_t
from fr_loss cimport FR_OK, fr_loss_derivs_batch

cdef extern from "fr_sdca.h" nogil:
    void fr_shuffle(int64_t* a, int64_t n, uint64_t* state)

STATUS_OK = FR_OK

# rows per block of the derivative passes (at most DERIV_BLOCKS blocks: larger ones beyond)
DEF DERIV_ROWS = 8192
DEF DERIV_BLOCKS = 64
# a coordinate step shorter than TINY_STEP times its limit is not taken (LIBLINEAR's 1e-12
# for its limit 10)
cdef double TINY_STEP = 1e-13


cdef int derivs_blocked(int loss, double loss_param, Py_ssize_t m, const double* f,
                        const double* y, const double* c, double inv_m, double* d, double* g,
                        double* h, double* value, int n_threads) noexcept nogil:
    """fr_loss_derivs_batch over row blocks, the blocks' losses summed in block order.

    The blocks depend on m alone, so the bits do not depend on n_threads (the blocks
    run on up to n_threads threads).
    """
    cdef double sums[DERIV_BLOCKS]
    cdef int codes[DERIV_BLOCKS]
    cdef Py_ssize_t b, lo, size = DERIV_ROWS
    cdef Py_ssize_t n_blocks
    cdef int status = FR_OK
    if m > DERIV_ROWS * DERIV_BLOCKS:
        size = (m + DERIV_BLOCKS - 1) // DERIV_BLOCKS
    n_blocks = (m + size - 1) // size
    n_threads = n_threads if n_threads < n_blocks else <int>n_blocks
    for b in prange(n_blocks, num_threads=n_threads, schedule="static"):
        lo = b * size
        codes[b] = fr_loss_derivs_batch(loss, loss_param, min(size, m - lo), f + lo, y + lo,
                                        NULL if c == NULL else c + lo, inv_m, d + lo, g + lo,
                                        h + lo, &sums[b])
    value[0] = 0.0
    for b in range(n_blocks):
        value[0] += sums[b]
        status = codes[b] if status == FR_OK else status
    return status


def derivatives(int loss, double loss_param, const double[::1] f, const double[::1] y,
                const double[::1] c, double inv_m, double[::1] d, double[::1] g,
                double[::1] h, int n_threads=1):
    """(inv_m sum c_i l(f_i), status); d = l'(f), g = inv_m c l'(f), h = inv_m c l''(f)
    (``derivs_blocked``: the same bits for any n_threads)."""
    cdef double value = 0.0
    cdef int status
    cdef const double* cp = &c[0] if c.shape[0] else NULL
    with nogil:
        status = derivs_blocked(loss, loss_param, f.shape[0], &f[0], &y[0], cp, inv_m,
                                &d[0], &g[0], &h[0], &value, n_threads)
    return value, status


cdef inline void entries_scales(const floating* v, int64_t n, double* norm,
                                double* top) noexcept nogil:
    """norm = sqrt(sum_k v[k]^2) over a column's n entries, summed in double in their order
    (the same bits wherever a column's norm is computed), and top = max_k |v[k]| (0 for an
    empty column)."""
    cdef int64_t k
    cdef double s = 0.0, t = 0.0, a
    for k in range(n):
        a = fabs(<double>v[k])
        s = s + a * a
        t = a if a > t else t
    norm[0] = sqrt(s)
    top[0] = t


cdef void count_rows(const index_t* indices, const index_t* indptr, int64_t lo, int64_t hi,
                     int shift, int64_t* counts) noexcept nogil:
    """counts[j >> shift] += 1 for the entries (columns j) of rows lo..hi-1 (the counters
    prefetched FR_PREFETCH_DISTANCE entries ahead: one per column, they miss the cache on
    wide data)."""
    cdef int64_t k, end = indptr[hi]
    for k in range(indptr[lo], end):
        if k + FR_PREFETCH_DISTANCE < end:
            fr_prefetch(&counts[indices[k + FR_PREFETCH_DISTANCE] >> shift])
        counts[indices[k] >> shift] += 1


cdef void scatter_rows(const floating* data, const index_t* indices, const index_t* indptr,
                       int64_t lo, int64_t hi, int shift, int64_t* nxt, floating* out_data,
                       index_t* out_indices, uint16_t* code) noexcept nogil:
    """Append the entries of rows lo..hi-1 to their buckets (columns j >> shift; nxt[b]:
    bucket b's next slot), with the column's offset in its bucket in ``code`` when
    shift > 0.

    With one column per bucket the slots are scattered over the output (one cache miss
    each on wide data): the counter of the entry 2 D ahead and the slots of the entry D
    ahead are prefetched (D = FR_PREFETCH_DISTANCE).
    """
    cdef int64_t i, k, q, b, end = indptr[hi], mask = (<int64_t>1 << shift) - 1
    for i in range(lo, hi):
        for k in range(indptr[i], indptr[i + 1]):
            if k + 2 * FR_PREFETCH_DISTANCE < end:
                fr_prefetch(&nxt[indices[k + 2 * FR_PREFETCH_DISTANCE] >> shift])
            if k + FR_PREFETCH_DISTANCE < end:
                q = nxt[indices[k + FR_PREFETCH_DISTANCE] >> shift]
                fr_prefetch(&out_data[q])
                fr_prefetch(&out_indices[q])
            b = indices[k] >> shift
            q = nxt[b]
            nxt[b] = q + 1
            out_data[q] = data[k]
            out_indices[q] = <index_t>i
            if shift > 0:
                code[q] = <uint16_t>(indices[k] & mask)


def bucket_counts(const index_t[::1] indices, const index_t[::1] indptr,
                  const int64_t[::1] bounds, int shift, int64_t[:, ::1] counts):
    """counts[t, b] += the entries of rows bounds[t]..bounds[t+1]-1 in bucket b, the
    columns b 2^shift .. (b + 1) 2^shift - 1 (``csr_transpose``'s first pass; row block t
    read by thread t)."""
    cdef Py_ssize_t t
    for t in prange(counts.shape[0], nogil=True, num_threads=counts.shape[0],
                    schedule="static", chunksize=1):
        count_rows(&indices[0], &indptr[0], bounds[t], bounds[t + 1], shift, &counts[t, 0])


def csr_transpose(const floating[::1] data, const index_t[::1] indices,
                  const index_t[::1] indptr, int64_t n_cols, const int64_t[::1] bounds,
                  int shift, int64_t[:, ::1] counts, uint16_t[::1] code,
                  floating[:, ::1] scratch_data, index_t[:, ::1] scratch_idx,
                  int64_t[:, ::1] local, floating[::1] out_data, index_t[::1] out_indices,
                  int64_t[::1] out_indptr, double[::1] norms, double[::1] maxabs):
    """CSC arrays of a CSR matrix by a counting sort of its entries into buckets of 2^shift
    consecutive columns, and then of each bucket by column; ``norms[j] = ||x_j||`` and
    ``maxabs[j] = max_i |x_ij|`` too when ``norms`` is not empty.

    ``counts``: ``bucket_counts``'s, one row per row block (rows bounds[t]..bounds[t+1]-1,
    read by thread t); a serial prefix sum over (bucket, block) turns them into each
    block's first slot in each bucket.  The blocks append their entries, in row order, to
    their buckets, with the column's offset in the bucket in ``code``.  With one column per
    bucket (shift = 0) that is the whole sort.  With wider buckets, few of them, each is
    written at a few places at a time, and then sorted by the offsets while its entries
    are in the cache (the buckets in parallel; thread p with its rows of ``scratch_*``, as
    long as the largest bucket, and of ``local``, 2^shift + 1 counters): on data much
    larger than the cache this costs less than one column per bucket, which writes every
    entry to a cache line of its own.  Within a column the entries come in row order
    whatever the number of blocks (row indices sorted; each norm summed in that order: the
    output is the same for any thread count and shift); the input rows need not be
    sorted.  ``out_indptr`` has n_cols + 1 entries and ``norms`` and ``maxabs`` (unless
    empty) n_cols or more; the extra ones are left alone.
    """
    cdef Py_ssize_t t, b, n_blocks = counts.shape[0], n_buckets = counts.shape[1]
    cdef int64_t c, lo, hi, pos = 0, width = <int64_t>1 << shift
    cdef bint with_scales = norms.shape[0] > 0
    with nogil:
        for b in range(n_buckets):
            if shift == 0:
                out_indptr[b] = pos
            for t in range(n_blocks):
                c = counts[t, b]
                counts[t, b] = pos
                pos += c
        out_indptr[n_cols] = pos
    for t in prange(n_blocks, nogil=True, num_threads=n_blocks, schedule="static",
                    chunksize=1):
        scatter_rows(&data[0], &indices[0], &indptr[0], bounds[t], bounds[t + 1], shift,
                     &counts[t, 0], &out_data[0], &out_indices[0],
                     &code[0] if shift > 0 else NULL)
    if shift == 0 and not with_scales:
        return
    # the last block's next slot in bucket b is now the bucket's end
    for b in prange(n_buckets, nogil=True, num_threads=local.shape[0], schedule="guided"):
        lo = counts[n_blocks - 1, b - 1] if b > 0 else 0
        hi = counts[n_blocks - 1, b]
        if shift == 0:
            entries_scales(&out_data[0] + lo, hi - lo, &norms[b], &maxabs[b])
        else:
            sort_bucket(&code[lo], hi - lo, min(n_cols - (b << shift), width),
                        &local[threadid(), 0], &scratch_data[threadid(), 0],
                        &scratch_idx[threadid(), 0], &out_data[lo], &out_indices[lo],
                        &out_indptr[b << shift], lo,
                        &norms[b << shift] if with_scales else NULL,
                        &maxabs[b << shift] if with_scales else NULL)


cdef void sort_bucket(const uint16_t* code, int64_t n, int64_t width, int64_t* count,
                      floating* tmp_data, index_t* tmp_idx, floating* data, index_t* idx,
                      int64_t* indptr, int64_t offset, double* norms,
                      double* maxabs) noexcept nogil:
    """Counting sort of a bucket's n entries (data, idx) by their column offsets ``code``
    (stable: row order kept), through tmp_*; indptr[j] = offset + the first slot of its
    j-th column, norms[j] and maxabs[j] its norm and largest |entry| (when not NULL), for
    j < width."""
    cdef int64_t q, j, s = 0, c
    for j in range(width + 1):
        count[j] = 0
    for q in range(n):
        count[code[q] + 1] += 1
    for j in range(width):
        s = s + count[j + 1]
        count[j + 1] = s
        indptr[j] = offset + count[j]
    for q in range(n):
        c = count[code[q]]
        count[code[q]] = c + 1
        tmp_data[c] = data[q]
        tmp_idx[c] = idx[q]
    memcpy(data, tmp_data, n * sizeof(floating))
    memcpy(idx, tmp_idx, n * sizeof(index_t))
    if norms != NULL:
        # count[j] is now the end of column j (and the start of column j + 1)
        q = 0
        for j in range(width):
            entries_scales(tmp_data + q, count[j] - q, &norms[j], &maxabs[j])
            q = count[j]


def column_scales(const floating[::1] data, const int64_t[::1] indptr, double[::1] norms,
                  double[::1] maxabs, int n_threads):
    """norms[j] = ||x_j|| (the Gap Safe sphere test) and maxabs[j] = max_i |x_ij| (the
    largest change of a score per unit move of w_j: ``step_limit``) from the column
    view's values.

    Each column summed in its own order: the bits do not depend on n_threads.
    """
    cdef Py_ssize_t j
    for j in prange(norms.shape[0], nogil=True, num_threads=n_threads, schedule="static"):
        entries_scales(&data[0] + indptr[j], indptr[j + 1] - indptr[j], &norms[j], &maxabs[j])


cdef inline double step_limit(double score_step, double top) noexcept nogil:
    """The largest move of a coordinate in one step: score_step / top, top = max_i |x_ij|,
    so that no score moves by more than score_step (fastrisk/solvers/cd.py
    ``score_step``); score_step for an empty column, and kept finite (a limit of inf
    would zero every step: TINY_STEP * inf)."""
    cdef double limit
    if top <= 0.0:
        return score_step
    limit = score_step / top
    return limit if limit < DBL_MAX else DBL_MAX


def step_limits(double score_step, const double[::1] maxabs):
    """``step_limit`` of each column of maxabs (the Gram inner solve and its Newton steps
    on the support read them by position in the working set)."""
    out = np.empty(maxabs.shape[0])
    cdef double[::1] o = out
    cdef Py_ssize_t j
    for j in range(maxabs.shape[0]):
        o[j] = step_limit(score_step, maxabs[j])
    return out


cdef inline void column(const floating* data, const index_t* indices, const int64_t* indptr,
                        bint dense, Py_ssize_t j, const floating** val,
                        const index_t** idx, Py_ssize_t* nnz) noexcept nogil:
    cdef int64_t start = indptr[j]
    val[0] = data + start
    idx[0] = indices if dense else indices + start
    nnz[0] = indptr[j + 1] - start


def column_stats(const floating[::1] data, const index_t[::1] indices,
                 const int64_t[::1] indptr, bint dense, const double[::1] g,
                 const double[::1] h, const int64_t[::1] cols, double[::1] grad,
                 double[::1] hdiag, int n_threads):
    """grad[j] = sum_i x_ij g_i and hdiag[j] = sum_i x_ij^2 h_i for j in cols.

    An empty ``h``: grad only (hdiag is not written).  Columns are independent, each
    summed in row order: the bits do not depend on n_threads.
    """
    cdef Py_ssize_t s, k, j, nnz, n = cols.shape[0]
    cdef const floating* val
    cdef const index_t* idx
    cdef double a, b, x
    cdef bint with_h = h.shape[0] > 0  # a loop invariant: the compiler unswitches it
    for s in prange(n, nogil=True, num_threads=n_threads, schedule="static"):
        j = cols[s]
        # by assignment, so that prange makes val / idx / nnz private to each thread
        # (``column``'s out-pointers would leave them shared)
        val = &data[indptr[j]]
        idx = &indices[0] if dense else &indices[indptr[j]]
        nnz = indptr[j + 1] - indptr[j]
        a = 0.0
        b = 0.0
        for k in range(nnz):
            x = val[k]
            a = a + x * g[idx[k]]
            if with_h:
                b = b + x * x * h[idx[k]]
        grad[j] = a
        if with_h:
            hdiag[j] = b


def column_axpy(const floating[::1] data, const index_t[::1] indices,
                const int64_t[::1] indptr, bint dense, Py_ssize_t j, double a,
                double[::1] f):
    """f += a x_j."""
    cdef Py_ssize_t k, nnz
    cdef const floating* val
    cdef const index_t* idx
    with nogil:
        column(&data[0], &indices[0], &indptr[0], dense, j, &val, &idx, &nnz)
        for k in range(nnz):
            f[idx[k]] += a * val[k]


def kept_sums(const int64_t[::1] kept, const double[::1] grad, const double[::1] w,
              double lam1):
    """Sums over the columns j in ``kept`` of the objective and its dual (cd.py step 2).

    Returns (max |grad_j|, sum |w_j|, sum w_j^2, sum max(|grad_j| - lam1, 0)^2), each
    accumulated in the order of ``kept``.
    """
    cdef Py_ssize_t s, j
    cdef double top = 0.0, l1 = 0.0, sq = 0.0, shrunk = 0.0, a
    with nogil:
        for s in range(kept.shape[0]):
            j = kept[s]
            a = fabs(grad[j])
            top = a if a > top else top
            l1 += fabs(w[j])
            sq += w[j] * w[j]
            if a > lam1:
                shrunk += (a - lam1) * (a - lam1)
    return top, l1, sq, shrunk


def screen(int64_t[::1] kept, const double[::1] grad, const double[::1] norms,
           const double[::1] w, double s, double radius, double threshold,
           int64_t[::1] moved):
    """Gap Safe sphere test: drop from ``kept`` the columns with
    s |grad_j| + norms_j radius < threshold.

    ``kept`` is compacted in place (order preserved); the dropped columns with
    w_j != 0 go to ``moved``.  Returns (number kept, number moved).
    """
    cdef Py_ssize_t r, j, n_kept = 0, n_moved = 0
    with nogil:
        for r in range(kept.shape[0]):
            j = kept[r]
            if s * fabs(grad[j]) + norms[j] * radius < threshold:
                if w[j] != 0.0:
                    moved[n_moved] = j
                    n_moved += 1
            else:
                kept[n_kept] = j
                n_kept += 1
    return n_kept, n_moved


def working_set(const int64_t[::1] kept, double[::1] grad, const double[::1] w, double lam1,
                double lam2, double threshold, int64_t[::1] working):
    """Optimality violations and newGLMNET's working set (cd.py step 3).

    For j in ``kept``: grad_j += lam2 w_j (G_j, the smooth part's derivative); the
    violation is the minimum-norm subgradient |G_j + lam1 sign(w_j)| (w_j != 0) or
    max(|G_j| - lam1, 0) (w_j = 0); ``working`` receives, in the order of ``kept``,
    the columns with w_j != 0 or |G_j| >= threshold.  Returns (|W|, sum of the
    violations, largest violation).
    """
    cdef Py_ssize_t r, j, n_w = 0
    cdef double G, v, total = 0.0, top = 0.0
    with nogil:
        for r in range(kept.shape[0]):
            j = kept[r]
            G = grad[j] + lam2 * w[j]
            grad[j] = G
            if w[j] > 0.0:
                v = fabs(G + lam1)
            elif w[j] < 0.0:
                v = fabs(G - lam1)
            else:
                v = fabs(G) - lam1
                v = v if v > 0.0 else 0.0
            total += v
            top = v if v > top else top
            if w[j] != 0.0 or fabs(G) >= threshold:
                working[n_w] = j
                n_w += 1
    return n_w, total, top


cdef inline bint coordinate_step(double G, double H, double wj, double lam1, double keep,
                                 double limit, double* viol, double* z) noexcept nogil:
    """One coordinate of q at w_j + d_j = wj, model gradient G and curvature H.

    Returns False (skip: inner shrinking) for a zero coordinate whose G lies strictly
    inside (-lam1, lam1) by more than ``keep``; otherwise sets the violation (the
    minimum-norm subgradient of q along the coordinate) and the exact minimizer z
    of q along it (the soft-thresholded Newton step), clipped to [-limit, limit] and
    0 below TINY_STEP limit: LIBLINEAR's clip to [-10, 10] and its 1e-12, for limit 10,
    in the units of the column's scale (``step_limit``).  G is
    the smooth part's derivative: G + lam1 and G - lam1 are the one-sided derivatives of
    q at w_j + d_j = 0.
    """
    cdef double Gp = G + lam1, Gn = G - lam1
    viol[0] = 0.0
    if wj == 0.0:
        if Gp < 0.0:
            viol[0] = -Gp
        elif Gn > 0.0:
            viol[0] = Gn
        elif Gp > keep and Gn < -keep:
            return False
    elif wj > 0.0:
        viol[0] = fabs(Gp)
    else:
        viol[0] = fabs(Gn)
    if Gp < H * wj:
        z[0] = -Gp / H
    elif Gn > H * wj:
        z[0] = -Gn / H
    else:
        z[0] = -wj
    if fabs(z[0]) < TINY_STEP * limit:
        z[0] = 0.0
    z[0] = limit if z[0] > limit else (-limit if z[0] < -limit else z[0])
    return True


def inner_cd(const floating[::1] data, const index_t[::1] indices, const int64_t[::1] indptr,
             bint dense, const double[::1] h, int64_t[::1] active, Py_ssize_t n_active,
             const double[::1] grad, const double[::1] hdiag, const double[::1] w,
             double[::1] wpd, double[::1] xtd, const double[::1] maxabs, double score_step,
             double lam1,
             double lam2, double nu, double stop, Py_ssize_t max_passes, double shrink_scale,
             uint64_t[::1] rng):
    """Coordinate descent on the quadratic model q (newGLMNET's inner loop).

    ``wpd`` = w + d on the working set ``active[:n_active]`` (read and updated),
    ``xtd`` = X d (updated); ``grad`` = G and ``hdiag`` = diag of the model's Hessian
    without lam2 + nu; ``maxabs`` and ``score_step`` set the largest move of each
    coordinate in one step (``step_limit``).  Each
    pass visits the working columns in a shuffled order
    (splitmix64 stream ``rng``), takes the exact minimizer of q along the
    coordinate (``coordinate_step``), and skips for the following passes a zero
    coordinate whose model gradient lies strictly inside (-lam1, lam1) by more than
    the previous pass's largest violation times ``shrink_scale`` (inner shrinking).
    Stops when the sum of the violations (minimum-norm subgradient of q) is at most
    ``stop`` over the whole working set.  Each coordinate reads its column twice:
    a pass costs O(nnz(X_W)).  Returns (passes, whether the stopping rule was met).
    """
    cdef Py_ssize_t p, s, k, j, nnz, n_qp = n_active
    cdef const floating* val
    cdef const index_t* idx
    cdef double G, viol, z, gnorm1, gmax, gmax_old = INFINITY
    cdef double lam2nu = lam2 + nu
    cdef bint done = False
    with nogil:
        p = 0
        while p < max_passes:
            p += 1
            gnorm1 = 0.0
            gmax = 0.0
            fr_shuffle(&active[0], n_qp, &rng[0])
            s = 0
            while s < n_qp:
                j = active[s]
                column(&data[0], &indices[0], &indptr[0], dense, j, &val, &idx, &nnz)
                G = 0.0
                for k in range(nnz):
                    G += val[k] * h[idx[k]] * xtd[idx[k]]
                G += grad[j] + (wpd[j] - w[j]) * lam2nu
                if not coordinate_step(G, hdiag[j] + lam2nu, wpd[j], lam1,
                                       gmax_old * shrink_scale,
                                       step_limit(score_step, maxabs[j]), &viol, &z):
                    n_qp -= 1
                    active[s] = active[n_qp]
                    active[n_qp] = j
                    continue
                gmax = viol if viol > gmax else gmax
                gnorm1 += viol
                s += 1
                if z == 0.0:
                    continue
                wpd[j] += z
                for k in range(nnz):
                    xtd[idx[k]] += z * val[k]
            if gnorm1 <= stop:
                if n_qp == n_active:
                    done = True
                    break
                n_qp = n_active
                gmax_old = INFINITY
            else:
                gmax_old = gmax
    return p, done


def gram_rows(const floating[::1] data, const index_t[::1] indices,
              const int64_t[::1] indptr, bint dense, double bias, const int64_t[::1] pos,
              const double[::1] h, double[:, ::1] H, double[::1] vbuf, int64_t[::1] pbuf):
    """H = X_W^T diag(h) X_W, the model's Hessian on the working set W, from the rows of X
    (``gram_columns`` reads W's columns instead: the cheaper one is used).

    ``(data, indices, indptr, dense)`` is the row view of X (a Dataset's), without the
    intercept column; ``pos[j]`` is column j's position in W or -1, ``pos`` has one
    entry more than X has columns: the intercept column (of value ``bias`` in every
    row).  ``vbuf`` and ``pbuf`` hold one row's entries in W (|W| entries each).
    Each row adds h_i x_ia x_ib for its pairs a <= b (in the row's order) to H[pos_a,
    pos_b], whichever triangle that is (no branch on the positions' order); the end
    folds every pair's two triangle entries into their sum: the cost is nnz(X) +
    sum_i r_i^2 / 2, r_i the row's nonzeros in W.
    """
    cdef Py_ssize_t i, k, r, a, b, pa, start, nnz, n = H.shape[0]
    cdef Py_ssize_t n_features = pos.shape[0] - 1, m = indptr.shape[0] - 1
    cdef Py_ssize_t bias_pos = pos[n_features]
    cdef const floating* val
    cdef const index_t* idx
    cdef double hv
    with nogil:
        for a in range(n):
            for b in range(n):
                H[a, b] = 0.0
        for i in range(m):
            if h[i] == 0.0:
                continue
            start = indptr[i]
            nnz = indptr[i + 1] - start
            val = &data[0] + start
            idx = &indices[0] if dense else &indices[0] + start
            r = 0
            for k in range(nnz):
                pa = pos[idx[k]]
                if pa >= 0 and val[k] != 0.0:
                    pbuf[r] = pa
                    vbuf[r] = val[k]
                    r += 1
            if bias_pos >= 0:
                pbuf[r] = bias_pos
                vbuf[r] = bias
                r += 1
            for a in range(r):
                hv = h[i] * vbuf[a]
                pa = pbuf[a]
                for b in range(a, r):
                    H[pa, pbuf[b]] += hv * vbuf[b]
        for a in range(n):
            for b in range(a):
                H[a, b] += H[b, a]
                H[b, a] = H[a, b]


def gram_cross(const floating[::1] data, const index_t[::1] indices,
               const int64_t[::1] indptr, bint dense, double bias,
               const floating[::1] cdata, const index_t[::1] cindices,
               const int64_t[::1] cindptr, bint cdense, const int64_t[::1] pos,
               const int64_t[::1] added, const double[::1] h, double[:, ::1] B):
    """B[k, pos[j]] = sum_i h_i x_ia x_ij, a = added[k], for the columns j with pos[j] >= 0:
    the rows of the Gram matrix of a working set that new columns add to it.

    ``(data, indices, indptr, dense)`` is the row view of X (a Dataset's, without the
    intercept column; ``pos`` has one entry more than X has columns: the intercept, of value
    ``bias`` in every row), ``(cdata, cindices, cindptr, cdense)`` its column view
    (``column_view``, the intercept its last column).  Column a's entries give the rows
    that touch it, each row's entries the other factor: the cost is the sum over those
    rows of their nonzeros, against nnz(X) + sum_i r_i^2 / 2 for the whole matrix.  Each
    entry is summed over the rows in row order.
    """
    cdef Py_ssize_t k, t, q, i, p, start, nnz, cnnz, n = B.shape[1]
    cdef Py_ssize_t n_features = pos.shape[0] - 1
    cdef Py_ssize_t bias_pos = pos[n_features]
    cdef const floating* cval
    cdef const index_t* cidx
    cdef const floating* val
    cdef const index_t* idx
    cdef double v
    with nogil:
        for k in range(added.shape[0]):
            for p in range(n):
                B[k, p] = 0.0
            column(&cdata[0], &cindices[0], &cindptr[0], cdense, added[k], &cval, &cidx, &cnnz)
            for t in range(cnnz):
                i = cidx[t]
                v = h[i] * cval[t]
                if v == 0.0:
                    continue
                start = indptr[i]
                nnz = indptr[i + 1] - start
                val = &data[0] + start
                idx = &indices[0] if dense else &indices[0] + start
                for q in range(nnz):
                    p = pos[idx[q]]
                    if p >= 0:
                        B[k, p] += v * val[q]
                if bias_pos >= 0:
                    B[k, bias_pos] += v * bias


def gram_columns(const floating[::1] data, const index_t[::1] indices,
                 const int64_t[::1] indptr, bint dense, const int64_t[::1] working,
                 const double[::1] h, double[:, ::1] H, int64_t[::1] row_end,
                 int64_t[::1] entry_pos, double[::1] entry_val):
    """H = X_W^T diag(h) X_W, the model's Hessian on the working set W, from W's columns.

    Sparse X: the entries of X_W in rows with h_i != 0 are sorted into rows (a counting
    sort: ``row_end`` has m + 1 entries, ``entry_pos`` and ``entry_val`` nnz(X_W);
    within a row the entries come in the order of W), then each row adds h_i x_ia x_ib
    to H[a, b] for its pairs of positions a <= b (the upper triangle), summed over the
    rows in row order, and the lower triangle is copied from it.  Only W's columns are
    read: the cost is 2 nnz(X_W) + m + sum_i r_i^2 / 2, r_i the row's nonzeros in W.
    Dense X: each pair of columns a <= b is summed over the rows in row order
    (m |W|^2 / 2; the buffers are not used and may be empty).
    """
    cdef Py_ssize_t i, k, a, b, r, lo, hi, pa, nnz, n = H.shape[0]
    cdef Py_ssize_t m = row_end.shape[0] - 1
    cdef const floating* val
    cdef const floating* other
    cdef const index_t* idx
    cdef double hv
    with nogil:
        if dense:
            m = indptr[1] - indptr[0] if indptr.shape[0] > 1 else 0
            for a in range(n):
                val = &data[0] + indptr[working[a]]
                for b in range(a, n):
                    other = &data[0] + indptr[working[b]]
                    hv = 0.0
                    for i in range(m):
                        hv += h[i] * val[i] * other[i]
                    H[a, b] = hv
                    H[b, a] = hv
        else:
            for a in range(n):
                for b in range(a, n):
                    H[a, b] = 0.0
            for i in range(m + 1):
                row_end[i] = 0
            for a in range(n):  # row_end[i + 1] = entries of row i in W
                column(&data[0], &indices[0], &indptr[0], dense, working[a], &val, &idx, &nnz)
                for k in range(nnz):
                    if h[idx[k]] != 0.0 and val[k] != 0.0:
                        row_end[idx[k] + 1] += 1
            for i in range(m):  # row_end[i + 1] = first slot of row i + 1
                row_end[i + 1] += row_end[i]
            for a in range(n):  # row_end[i]: next free slot of row i, its end once filled
                column(&data[0], &indices[0], &indptr[0], dense, working[a], &val, &idx, &nnz)
                for k in range(nnz):
                    if h[idx[k]] != 0.0 and val[k] != 0.0:
                        r = row_end[idx[k]]
                        entry_pos[r] = a
                        entry_val[r] = val[k]
                        row_end[idx[k]] = r + 1
            lo = 0
            for i in range(m):
                hi = row_end[i]
                for r in range(lo, hi):
                    hv = h[i] * entry_val[r]
                    pa = entry_pos[r]
                    for k in range(r, hi):
                        H[pa, entry_pos[k]] += hv * entry_val[k]
                lo = hi
            for a in range(n):
                for b in range(a):
                    H[a, b] = H[b, a]


def inner_cd_gram(const double[:, ::1] H, int64_t[::1] active, const double[::1] grad,
                  const double[::1] w, double[::1] wpd, double[::1] q,
                  const double[::1] limit, double lam1, double lam2, double nu, double stop,
                  Py_ssize_t max_passes, double shrink_scale, uint64_t[::1] rng):
    """``inner_cd`` on the Gram matrix H = X_W^T diag(h) X_W of the working set.

    The same passes, order rule, steps, shrinking and stopping rule as ``inner_cd``,
    over positions 0..|W|-1 (``active``: a permutation of them; ``grad``, ``w``,
    ``wpd``, ``limit`` (``step_limits``) indexed by position), keeping q = H d (zero on entry) instead of X d:
    a coordinate costs O(1) to read and O(|W|) to move, so a pass costs at most
    O(|W|^2) whatever nnz(X_W).  X d is left to the caller.  Returns (passes,
    whether the stopping rule was met).
    """
    cdef Py_ssize_t p, s, k, j, n_active = active.shape[0], n_qp = active.shape[0]
    cdef double G, viol, z, gnorm1, gmax, gmax_old = INFINITY
    cdef double lam2nu = lam2 + nu
    cdef bint done = False
    with nogil:
        p = 0
        while p < max_passes:
            p += 1
            gnorm1 = 0.0
            gmax = 0.0
            fr_shuffle(&active[0], n_qp, &rng[0])
            s = 0
            while s < n_qp:
                j = active[s]
                G = grad[j] + q[j] + (wpd[j] - w[j]) * lam2nu
                if not coordinate_step(G, H[j, j] + lam2nu, wpd[j], lam1,
                                       gmax_old * shrink_scale, limit[j], &viol, &z):
                    n_qp -= 1
                    active[s] = active[n_qp]
                    active[n_qp] = j
                    continue
                gmax = viol if viol > gmax else gmax
                gnorm1 += viol
                s += 1
                if z == 0.0:
                    continue
                wpd[j] += z
                for k in range(n_active):
                    q[k] += z * H[j, k]
            if gnorm1 <= stop:
                if n_qp == n_active:
                    done = True
                    break
                n_qp = n_active
                gmax_old = INFINITY
            else:
                gmax_old = gmax
    return p, done


def column_combination(const floating[::1] data, const index_t[::1] indices,
                       const int64_t[::1] indptr, bint dense, const int64_t[::1] cols,
                       const double[::1] coef, double[::1] f):
    """f = sum_s coef[s] x_{cols[s]} (columns with coef 0 are not read)."""
    cdef Py_ssize_t s, k, nnz
    cdef const floating* val
    cdef const index_t* idx
    cdef double a
    with nogil:
        for k in range(f.shape[0]):
            f[k] = 0.0
        for s in range(cols.shape[0]):
            a = coef[s]
            if a == 0.0:
                continue
            column(&data[0], &indices[0], &indptr[0], dense, cols[s], &val, &idx, &nnz)
            for k in range(nnz):
                f[idx[k]] += a * val[k]


def line_search(int loss, double loss_param, double[::1] f, const double[::1] xtd,
                const double[::1] y, const double[::1] c, double inv_m,
                const int64_t[::1] active, Py_ssize_t n_active, double[::1] w,
                const double[::1] wpd, const double[::1] grad, double lam1, double lam2,
                double loss_value, double sigma, int max_steps, double slack, double[::1] work,
                double[::1] d, double[::1] g, double[::1] h, int n_threads=1):
    """Armijo backtracking along d = wpd - w (Yuan, Ho & Lin 2012, eq. (19)-(20)).

    Accepts the first t in 1, 1/2, 1/4, ... with F(w + t d) - F(w) <= sigma t Delta + slack
    (``slack``: the round-off of evaluating F, so that steps toward the optimum are
    still taken when F no longer decreases in floating point),
    Delta = G^T d + lam1 (||w + d||_1 - ||w||_1) (the reg. terms over the working
    set; the others do not move).  On success w and f = X w are updated in place and
    ``d``, ``g``, ``h`` hold ``derivatives`` at the new f (each trial point's loss is
    evaluated with its derivatives, ``derivs_blocked`` on n_threads: the next Newton
    iteration needs them there).
    Returns (t, loss value at the new point, status); t = 0 when no step passed (``d``,
    ``g``, ``h`` then hold those of a rejected point).
    """
    cdef Py_ssize_t i, s, j, m = f.shape[0]
    cdef int step, status = FR_OK
    cdef double delta = 0.0, reg_old = 0.0, reg_new, t = 1.0, value = 0.0, x, dj
    cdef const double* cp = &c[0] if c.shape[0] else NULL
    with nogil:
        for s in range(n_active):
            j = active[s]
            dj = wpd[j] - w[j]
            delta += grad[j] * dj + lam1 * (fabs(wpd[j]) - fabs(w[j]))
            reg_old += lam1 * fabs(w[j]) + 0.5 * lam2 * w[j] * w[j]
        for step in range(max_steps):
            reg_new = 0.0
            for s in range(n_active):
                j = active[s]
                x = w[j] + t * (wpd[j] - w[j])
                reg_new += lam1 * fabs(x) + 0.5 * lam2 * x * x
            for i in range(m):
                work[i] = f[i] + t * xtd[i]
            status = derivs_blocked(loss, loss_param, m, &work[0], &y[0], cp, inv_m, &d[0],
                                    &g[0], &h[0], &value, n_threads)
            if status != FR_OK:
                value = INFINITY
                status = FR_OK
            if value + reg_new - loss_value - reg_old <= sigma * t * delta + slack:
                for s in range(n_active):
                    j = active[s]
                    w[j] += t * (wpd[j] - w[j])
                for i in range(m):
                    f[i] += t * xtd[i]
                break
            t *= 0.5
        else:
            t = 0.0
            value = loss_value
    return t, value, status
