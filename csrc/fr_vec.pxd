# Row operations and per-row vector losses for k-output linear models (docs/math.md §2).
#
# The weights are stored feature-major: the k weights of feature j are
# contiguous at ``wt[j q : j q + k]`` (block stride q >= k: a kernel may pad
# the blocks, e.g. to a multiple of 4 for fr_vec.h).  A row's k scores then read one short
# contiguous block per stored entry (the loop over k vectorizes), and its
# k-wide gradient contribution scatters into the same block layout.  The
# intercept is the constant feature ``d`` of value ``b`` (as in fr_rows.pxd).

from libc.math cimport exp, log
from libc.stdint cimport int32_t, int64_t
from cython cimport floating

from fr_rows cimport index_t

cdef extern from "fr_vec.h" nogil:
    void fr_axpy_k(double a, const double* src, double* dst, Py_ssize_t k)
    void fr_axpy2_k(double a0, const double* src0, double a1, const double* src1, double* dst,
                    Py_ssize_t k)
    void fr_prefetch_block(const double* p, Py_ssize_t k)
    void fr_prefetch_bytes(const void* p, Py_ssize_t nbytes)
    enum: FR_VEC_PREFETCH
    enum: FR_VEC_MAX_NV
    void fr_vec_scores_d32(const double* val, const int32_t* idx, Py_ssize_t nnz,
                           Py_ssize_t ahead, const double* wt, Py_ssize_t q, double* s, int nv)
    void fr_vec_scores_d64(const double* val, const int64_t* idx, Py_ssize_t nnz,
                           Py_ssize_t ahead, const double* wt, Py_ssize_t q, double* s, int nv)
    void fr_vec_scores_f32(const float* val, const int32_t* idx, Py_ssize_t nnz,
                           Py_ssize_t ahead, const double* wt, Py_ssize_t q, double* s, int nv)
    void fr_vec_scores_f64(const float* val, const int64_t* idx, Py_ssize_t nnz,
                           Py_ssize_t ahead, const double* wt, Py_ssize_t q, double* s, int nv)
    void fr_vec_scatter_d32(const double* val, const int32_t* idx, Py_ssize_t nnz,
                            const double* g, Py_ssize_t q, double* gt, int nv)
    void fr_vec_scatter_d64(const double* val, const int64_t* idx, Py_ssize_t nnz,
                            const double* g, Py_ssize_t q, double* gt, int nv)
    void fr_vec_scatter_f32(const float* val, const int32_t* idx, Py_ssize_t nnz,
                            const double* g, Py_ssize_t q, double* gt, int nv)
    void fr_vec_scatter_f64(const float* val, const int64_t* idx, Py_ssize_t nnz,
                            const double* g, Py_ssize_t q, double* gt, int nv)

cdef enum:
    FR_VEC_SOFTMAX = 0
    FR_VEC_MULTICLASS_HINGE = 1
    FR_VEC_SCALED_SOFT_MARGIN = 2
    FR_VEC_MULTIVARIATE_REGRESSION = 3
    FR_VEC_N_LOSSES = 4


cdef inline void row_scores(const floating* val, const index_t* idx, Py_ssize_t nnz,
                            Py_ssize_t ahead, double b, Py_ssize_t d, const double* wt,
                            Py_ssize_t k, Py_ssize_t q, double* s) noexcept nogil:
    """s[c] = <x, w_c> (+ b w_{c,d}) for the k classes.

    ``ahead`` (>= nnz) is the number of entries of idx that may be read from
    the row start: in CSR the next rows' indices follow, so the blocks of the
    next row are prefetched while this one ends (as fr_rows.row_dot_ahead).
    The prefetch covers q doubles per block.  With k a multiple of 4 up to
    4 FR_VEC_MAX_NV the register-blocked C kernel (fr_vec.h) runs instead.
    """
    cdef Py_ssize_t p, c
    if k % 4 == 0 and k <= 4 * FR_VEC_MAX_NV:
        if floating is double and index_t is int32_t:
            fr_vec_scores_d32(val, idx, nnz, ahead, wt, q, s, <int>(k // 4))
        elif floating is double:
            fr_vec_scores_d64(val, idx, nnz, ahead, wt, q, s, <int>(k // 4))
        elif index_t is int32_t:
            fr_vec_scores_f32(val, idx, nnz, ahead, wt, q, s, <int>(k // 4))
        else:
            fr_vec_scores_f64(val, idx, nnz, ahead, wt, q, s, <int>(k // 4))
        if b != 0.0:
            fr_axpy_k(b, wt + d * q, s, k)
        return
    for c in range(k):
        s[c] = 0.0
    for p in range(0, nnz - 1, 2):  # entries in pairs (fr_axpy2_k)
        if p + FR_VEC_PREFETCH < ahead:
            fr_prefetch_block(&wt[idx[p + FR_VEC_PREFETCH] * q], q)
        if p + 1 + FR_VEC_PREFETCH < ahead:
            fr_prefetch_block(&wt[idx[p + 1 + FR_VEC_PREFETCH] * q], q)
        fr_axpy2_k(val[p], wt + idx[p] * q, val[p + 1], wt + idx[p + 1] * q, s, k)
    if nnz % 2:
        fr_axpy_k(val[nnz - 1], wt + idx[nnz - 1] * q, s, k)
    if b != 0.0:
        fr_axpy_k(b, wt + d * q, s, k)


cdef inline void row_scatter(const floating* val, const index_t* idx, Py_ssize_t nnz,
                             double b, Py_ssize_t d, const double* g, Py_ssize_t k,
                             Py_ssize_t q, const int* active, Py_ssize_t n_active,
                             double* gt) noexcept nogil:
    """gt[j q + c] += x_j g[c] over the stored entries j (and the intercept).

    ``active`` lists the classes with g[c] != 0 when there are fewer than k
    (hinge-type losses touch two), so only those are written; with
    ``n_active == k`` the whole block is updated in one contiguous loop.
    No prefetch: the row's gather has just read the same blocks.
    """
    cdef Py_ssize_t p, c, a
    cdef double x
    cdef double* blk
    if n_active == 0:
        return
    if n_active == k and k % 4 == 0 and k <= 4 * FR_VEC_MAX_NV:
        if floating is double and index_t is int32_t:
            fr_vec_scatter_d32(val, idx, nnz, g, q, gt, <int>(k // 4))
        elif floating is double:
            fr_vec_scatter_d64(val, idx, nnz, g, q, gt, <int>(k // 4))
        elif index_t is int32_t:
            fr_vec_scatter_f32(val, idx, nnz, g, q, gt, <int>(k // 4))
        else:
            fr_vec_scatter_f64(val, idx, nnz, g, q, gt, <int>(k // 4))
        if b != 0.0:
            fr_axpy_k(b, g, gt + d * q, k)
        return
    if n_active == k:
        for p in range(nnz):
            fr_axpy_k(val[p], g, gt + idx[p] * q, k)
        if b != 0.0:
            fr_axpy_k(b, g, gt + d * q, k)
        return
    for p in range(nnz):
        x = val[p]
        blk = gt + idx[p] * q
        for a in range(n_active):
            blk[active[a]] += x * g[active[a]]
    if b != 0.0:
        blk = gt + d * q
        for a in range(n_active):
            blk[active[a]] += b * g[active[a]]


cdef inline Py_ssize_t first_argmax(const double* t, Py_ssize_t k) noexcept nogil:
    """Index of the first maximum of t[0..k) (NumPy's argmax tie rule)."""
    cdef Py_ssize_t c, best = 0
    for c in range(1, k):
        if t[c] > t[best]:
            best = c
    return best


cdef inline double vector_loss_row(int loss, const double* s, Py_ssize_t k, int64_t yi,
                                   const double* Yi, const double* P, const double* S,
                                   double ci, double* g, int* active,
                                   Py_ssize_t* n_active) noexcept nogil:
    """Loss of one row at scores s and its gradient g in s, both times ci.

    softmax: log sum_c exp(s_c) - s_y, g = softmax(s) - e_y, evaluated as
    log sum_c exp(s_c - M) + (M - s_y) with M = max_c s_c: no exp overflows, and the
    log term (in [0, log k]) is not lost when |M| dwarfs it;
    multiclass_hinge: max_c (s_c - s_y + [c != y]), g = e_{c*} - e_y;
    scaled_soft_margin: max_c S_yc (s_c - s_y + P_yc) with P the cost matrix and
    S = P^beta, g = S_{y c*} (e_{c*} - e_y) (BMRM Table 2);
    multivariate_regression: 0.5 r^T M r with r = s - Y_i, g = M r, from P = L with
    L^T L = M (``losses.psd_factor``) as 0.5 ||L r||^2 and L^T (L r).
    c* is the first maximizer, the y term counting as 0.  ``active`` receives
    the classes with a nonzero g (all k for softmax and regression).  Softmax takes
    g = NULL for the loss alone.
    """
    cdef Py_ssize_t c, star
    cdef double mx, z, e, value, scale
    if loss == FR_VEC_SOFTMAX:
        mx = s[0]
        for c in range(1, k):
            if s[c] > mx:
                mx = s[c]
        z = 0.0
        for c in range(k):
            e = exp(s[c] - mx)
            z += e
            if g != NULL:
                g[c] = e
            active[c] = <int>c
        n_active[0] = k
        if g != NULL:
            for c in range(k):
                g[c] = ci * (g[c] / z)
            g[yi] -= ci
        return ci * (log(z) + (mx - s[yi]))
    if loss == FR_VEC_MULTIVARIATE_REGRESSION:
        # P is L with L^T L = M: value = ||L r||^2, a sum of squares (>= 0, accurate for
        # r near M's null space), g = L^T (L r)
        value = 0.0
        for c in range(k):
            g[c] = 0.0
            active[c] = <int>c
        for star in range(k):
            z = 0.0
            for c in range(k):
                z += P[star * k + c] * (s[c] - Yi[c])
            value += z * z
            for c in range(k):
                g[c] += z * P[star * k + c]
        for c in range(k):
            g[c] *= ci
        n_active[0] = k
        return ci * 0.5 * value
    # hinge-type: g[c] is reused as the terms, then cleared
    for c in range(k):
        if c == yi:
            g[c] = 0.0
        elif loss == FR_VEC_MULTICLASS_HINGE:
            g[c] = s[c] - s[yi] + 1.0
        else:
            g[c] = S[yi * k + c] * (s[c] - s[yi] + P[yi * k + c])
    star = first_argmax(g, k)
    value = g[star]
    for c in range(k):
        g[c] = 0.0
    n_active[0] = 0
    if star != yi:
        scale = 1.0 if loss == FR_VEC_MULTICLASS_HINGE else S[yi * k + star]
        if scale != 0.0 and ci != 0.0:
            g[star] = ci * scale
            g[yi] = -ci * scale
            active[0] = <int>star
            active[1] = <int>yi
            n_active[0] = 2
    return ci * value
