# cython: language_level=3
"""Kernels of the bundle methods' inner problems (docs/math.md §4; Teo et al. 2007 eq. 12).

``simplex_active_set`` -- minimize ``f(beta) = 0.5 beta^T H beta - c^T beta``
over the simplex ``beta >= 0, sum beta = 1`` (BMRM's dual (12) with the slack
of ``sum alpha <= 1`` kept as the multiplier of the constant cut, see
fastrisk/solvers/qp.py) by a primal active-set method (Nocedal & Wright,
Algorithm 16.3) warm-started from a feasible beta.  The face F (the working
set of free variables) starts as the support of beta.  On the face, with a
reference variable r (the largest beta_i when the face is factored) and
``beta_r = 1 - sum of the others``, f is a quadratic in the other |F| - 1
variables with Hessian ``M = Z^T H Z + rho I`` (entries
``H_uv - H_ur - H_rv + H_rr``, plus the ridge rho); its Cholesky factor is
kept across steps: a variable entering adds a row (forward solve, O(|F|^2)),
one leaving deletes a row and Givens rotations restore the triangle
(O(|F|^2)); only the reference leaving refactors (O(|F|^3)).  Each step
solves for the face's minimizer x (two triangular solves), moves from beta_F
towards x until a variable reaches 0 (ratio test; that variable leaves F and
the face is solved again) and, at the face's minimizer, lets in the fixed
variable of smallest gradient if it is below every gradient of the face.
``g = H beta - c`` is recomputed from the rows of H with beta_j != 0
(O(k |F|)) after each step.  The ridge (and a floor rho on the Cholesky
pivots, reached only by rounding on dependent cuts) keeps M positive definite
when cuts repeat or are affinely dependent; along such directions f is flat
or linear and the ratio test stops the step at the boundary.

Stopping: the violation ``v = max_{beta_i > 0} g_i - min_i g_i`` bounds the
Frank-Wolfe duality gap ``beta^T g - min_i g_i >= f(beta) - min f``.  The run
stops when ``v <= tol``, or ``v <= rtol (f(beta) - f_lower)`` with ``f_lower``
a known lower bound of ``min f`` (BMRM passes the one from its best primal
value), or when no variable can enter at a face's minimizer (optimal up to
the ridge rho and rounding).  The result is scaled back onto the simplex
exactly and ``f`` is recomputed at it.

``cut_combination`` -- ``out = scale * sum_{i < k, beta_i != 0} beta_i A_i``
over the rows of the cut matrix with a non-zero multiplier, one pass over
those rows in column blocks (``out`` written once, each row read once, four
rows per sweep of a block).

``sample_combination`` -- ``out = X^T v`` (plus ``bias * sum v`` in the
intercept's slot) for cuts kept in the sample space (a = X^T g / m): one
pass over the rows of X with v_i != 0, scattering into ``out``, which is
written once to zero first (no temporary of length n_weights).
``sample_products`` -- ``X w``, the other product of those cuts.  Both
prefetch the weights their rows touch (fr_rows.pxd).

These run without the GIL; H is read through its row stride (a leading block
of a larger Gram matrix, no copy).
"""

import numpy as np
from cython cimport floating
from libc.math cimport INFINITY, fabs, sqrt
from libc.stdlib cimport free, malloc

from fr_rows cimport index_t, row_axpy, row_dot_ahead, row_view

cdef enum:
    QP_CONVERGED = 0
    QP_MAX_SOLVES = 1
    BLOCK = 2048  # columns per block of cut_combination (16 KB of out)
    REFINE = 1  # iterative refinement steps of a face solve


cdef double gradient(Py_ssize_t k, const double* H, Py_ssize_t ld, const double* c,
                     const double* beta, double* g) noexcept nogil:
    """g = H beta - c (one row of H per non-zero beta_j, H symmetric); returns
    f(beta) = 0.5 beta^T (g - c)."""
    cdef Py_ssize_t i, j
    cdef double b, f = 0.0
    cdef const double* row
    for i in range(k):
        g[i] = -c[i]
    for j in range(k):
        b = beta[j]
        if b != 0.0:
            row = H + j * ld
            for i in range(k):
                g[i] += b * row[i]
    for i in range(k):
        f += 0.5 * beta[i] * (g[i] - c[i])
    return f


cdef struct Face:
    # the free variables F[0..n-1], F[0] the reference r; with beta_r = 1 - sum of the
    # others, the face's Hessian in the other n - 1 variables is M = Z^T H Z + rho I,
    # M_pq = H_uv - H_ur - H_rv + H_rr + rho [p == q] (u = F[p + 1], v = F[q + 1]),
    # kept as its Cholesky factor L (row-major, leading dimension k)
    Py_ssize_t n
    Py_ssize_t* F
    double* L
    double rho


cdef inline double reduced(const double* H, Py_ssize_t ld, Py_ssize_t r, Py_ssize_t u,
                           Py_ssize_t v) noexcept nogil:
    return H[u * ld + v] - H[u * ld + r] - H[r * ld + v] + H[r * ld + r]


cdef void face_append(Face* face, Py_ssize_t k, const double* H, Py_ssize_t ld,
                      Py_ssize_t i) noexcept nogil:
    """Add variable i to the face: one new row of L by a forward solve, O(n^2)."""
    cdef Py_ssize_t m = face.n - 1, p, q, r = face.F[0]
    cdef double* L = face.L
    cdef double t, d
    face.F[face.n] = i
    face.n += 1
    if m < 0:
        return  # i is the reference
    d = reduced(H, ld, r, i, i) + face.rho
    for p in range(m):
        t = reduced(H, ld, r, i, face.F[p + 1])
        for q in range(p):
            t -= L[m * k + q] * L[p * k + q]
        t /= L[p * k + p]
        L[m * k + p] = t
        d -= t * t
    # d >= rho in exact arithmetic; rounding may eat it on (nearly) dependent cuts
    L[m * k + m] = sqrt(d if d > face.rho else face.rho)


cdef void face_refactor(Face* face, Py_ssize_t k, const double* H, Py_ssize_t ld,
                        const double* beta) noexcept nogil:
    """Factor from scratch with the largest beta as the reference (least likely to leave)."""
    cdef Py_ssize_t n = face.n, p, best = 0, i
    for p in range(1, n):
        if beta[face.F[p]] > beta[face.F[best]]:
            best = p
    i = face.F[0]
    face.F[0] = face.F[best]
    face.F[best] = i
    face.n = 1
    for p in range(1, n):
        face_append(face, k, H, ld, face.F[p])


cdef void face_remove(Face* face, Py_ssize_t k, const double* H, Py_ssize_t ld,
                      const double* beta, Py_ssize_t pos) noexcept nogil:
    """Drop F[pos]: delete its row of L and restore the triangle by Givens rotations of
    adjacent columns, O(n^2); the reference leaving means a new factorization."""
    cdef Py_ssize_t m = face.n - 1, q = pos - 1, s, j, t
    cdef double* L = face.L
    cdef double a, b, h, c, sn, x, y
    for s in range(pos, face.n - 1):
        face.F[s] = face.F[s + 1]
    face.n -= 1
    if pos == 0:
        face_refactor(face, k, H, ld, beta)
        return
    for s in range(q, m - 1):  # rows below move up; row s now reaches column s + 1
        for j in range(s + 2):
            L[s * k + j] = L[(s + 1) * k + j]
    for j in range(q, m - 1):
        a = L[j * k + j]
        b = L[j * k + j + 1]
        h = sqrt(a * a + b * b)
        c = a / h
        sn = b / h
        for t in range(j, m - 1):
            x = L[t * k + j]
            y = L[t * k + j + 1]
            L[t * k + j] = c * x + sn * y
            L[t * k + j + 1] = c * y - sn * x
        L[j * k + j + 1] = 0.0


cdef void triangular_solves(Face* face, Py_ssize_t k, double* y) noexcept nogil:
    """y <- M^{-1} y with M = L L^T (forward then backward substitution), O(n^2)."""
    cdef Py_ssize_t m = face.n - 1, p, q
    cdef double* L = face.L
    cdef double t
    for p in range(m):
        t = y[p]
        for q in range(p):
            t -= L[p * k + q] * y[q]
        y[p] = t / L[p * k + p]
    for p in range(m - 1, -1, -1):
        t = y[p]
        for q in range(p + 1, m):
            t -= L[q * k + p] * y[q]
        y[p] = t / L[p * k + p]


cdef void face_solve(Face* face, Py_ssize_t k, const double* H, Py_ssize_t ld,
                     const double* c, double* x, double* res) noexcept nogil:
    """x[p] = the minimizer of f + rho/2 |y|^2 on the face's affine hull at F[p]: with
    y = x[1:] the non-reference coordinates, (Z^T H Z + rho I) y = Z^T (c - H e_r).

    The reduced Hessian's entries are differences of Gram entries, which lose digits
    when cuts nearly coincide; a step (REFINE) of iterative refinement on the residual
    ``Z^T (H x - c) + rho y`` (the differences of the face's gradients, computed
    from H itself) recovers the accuracy of the bordered system, O(n^2).
    """
    cdef Py_ssize_t n = face.n, m = face.n - 1, p, q, r = face.F[0], u, it
    cdef double t, total
    cdef const double* row
    for p in range(m):
        u = face.F[p + 1]
        x[p + 1] = (c[u] - H[u * ld + r]) - (c[r] - H[r * ld + r])
    triangular_solves(face, k, x + 1)
    for it in range(REFINE + 1):
        total = 0.0
        for p in range(m):
            total += x[p + 1]
        x[0] = 1.0 - total
        if it == REFINE or m == 0:
            break
        for p in range(n):  # res = H_FF x - c_F
            row = H + face.F[p] * ld
            t = -c[face.F[p]]
            for q in range(n):
                t += row[face.F[q]] * x[q]
            res[p] = t
        t = res[0]
        for p in range(m):
            res[p] = t - res[p + 1] - face.rho * x[p + 1]
        triangular_solves(face, k, res)
        for p in range(m):
            x[p + 1] += res[p]


cdef int active_set(Py_ssize_t k, const double* H, Py_ssize_t ld, const double* c,
                    double* beta, double* g, double rho, double tol, double rtol,
                    double f_lower, long max_solves, long* n_solves, double* value,
                    double* violation, Py_ssize_t* F, unsigned char* in_face, double* L,
                    double* x) noexcept nogil:
    cdef Py_ssize_t i, r, hit, enter
    cdef double f, gmax, gmin, gface, ratio, step
    cdef double total = 0.0
    cdef bint may_enter = True, face_optimal = False
    cdef int status = QP_CONVERGED
    cdef double scale = 1e-300
    cdef Face face
    for i in range(k):  # rho and tol are relative to max(max_i |H_ii|, max_i |c_i|)
        scale = max(scale, fabs(H[i * ld + i]), fabs(c[i]))
    rho *= scale
    tol *= scale
    face.n = 0
    face.F = F
    face.L = L
    face.rho = rho
    f = gradient(k, H, ld, c, beta, g)
    n_solves[0] = 0
    for i in range(k):
        in_face[i] = beta[i] > 0.0
        if in_face[i]:
            F[face.n] = i
            face.n += 1
    face_refactor(&face, k, H, ld, beta)
    while True:
        gmax = -INFINITY
        gmin = INFINITY
        for i in range(k):
            if beta[i] > 0.0 and g[i] > gmax:
                gmax = g[i]
            if g[i] < gmin:
                gmin = g[i]
        violation[0] = gmax - gmin
        if violation[0] <= tol or violation[0] <= rtol * (f - f_lower):
            break
        enter = -1
        if may_enter:
            # the fixed variable of smallest gradient enters when it is below every
            # gradient of the face (at the face's KKT point those all equal -nu)
            gface = INFINITY
            for r in range(face.n):
                if g[F[r]] < gface:
                    gface = g[F[r]]
            for i in range(k):
                if not in_face[i] and g[i] < gface - tol and (enter < 0 or g[i] < g[enter]):
                    enter = i
            if enter >= 0:
                in_face[enter] = True
                face_append(&face, k, H, ld, enter)
            elif face_optimal:
                break  # KKT up to the ridge and rounding
        if n_solves[0] >= max_solves:
            status = QP_MAX_SOLVES
            break
        face_solve(&face, k, H, ld, c, x, x + k)
        n_solves[0] += 1
        # ratio test: move from beta_F towards the face minimizer x until a variable hits 0
        hit = -1
        step = 1.0
        for r in range(face.n):
            i = F[r]
            if x[r] < beta[i]:
                ratio = beta[i] / (beta[i] - x[r])
                if ratio < step:
                    step = ratio
                    hit = r
        for r in range(face.n):
            i = F[r]
            beta[i] = 0.0 if r == hit else max(beta[i] + step * (x[r] - beta[i]), 0.0)
        if hit >= 0:  # leave the face through the blocking variable; solve again first
            if step == 0.0 and F[hit] == enter and face_optimal:
                # entering at the face's minimizer, it would be positive in the new
                # face's minimizer in exact arithmetic: optimal up to rounding
                break
            in_face[F[hit]] = False
            face_remove(&face, k, H, ld, beta, hit)
        may_enter = face_optimal = hit < 0
        f = gradient(k, H, ld, c, beta, g)
    for i in range(k):
        total += beta[i]
    for i in range(k):
        beta[i] /= total
    value[0] = gradient(k, H, ld, c, beta, g)
    return status


def simplex_active_set(const double[:, :] H, const double[::1] c, double[::1] beta,
                       double rho, double tol, double rtol, double f_lower, long max_solves):
    """Run the active-set solver in place on ``beta`` (feasible on entry; module docstring).

    ``rho`` and ``tol`` are relative to ``max(max_i |H_ii|, max_i |c_i|)``.

    Returns (status, n_solves, f(beta), violation); status 0 converged, 1 max_solves
    reached (beta is then the last feasible point).
    """
    cdef Py_ssize_t k = c.shape[0]
    cdef double[::1] g = np.empty(k)
    cdef double[::1] L = np.empty(k * k)
    cdef double[::1] x = np.empty(2 * k + 1)
    cdef Py_ssize_t[::1] F = np.empty(k, dtype=np.intp)
    cdef unsigned char[::1] in_face = np.empty(k, dtype=np.uint8)
    cdef long n_solves = 0
    cdef double value = 0.0, violation = 0.0
    cdef int status
    if H.shape[0] != k or H.shape[1] != k or beta.shape[0] != k or k == 0:
        raise ValueError(f"simplex_active_set: H must be {k} x {k} and beta of length {k}, k > 0")
    if H.strides[1] != sizeof(double):
        raise ValueError("simplex_active_set: the rows of H must be contiguous")
    with nogil:
        status = active_set(k, &H[0, 0], H.strides[0] // sizeof(double), &c[0], &beta[0],
                            &g[0], rho, tol, rtol, f_lower, max_solves, &n_solves, &value,
                            &violation, &F[0], &in_face[0], &L[0], &x[0])
    return status, n_solves, value, violation


cdef inline void add_rows(double* out, Py_ssize_t j0, Py_ssize_t j1, const double* coef,
                          const double* r0, const double* r1, const double* r2,
                          const double* r3) noexcept nogil:
    """out[j0:j1] += coef[0] r0 + ... + coef[3] r3 (one sweep of the block for four rows)."""
    cdef Py_ssize_t j
    cdef double c0 = coef[0], c1 = coef[1], c2 = coef[2], c3 = coef[3]
    for j in range(j0, j1):
        out[j] += c0 * r0[j] + c1 * r1[j] + c2 * r2[j] + c3 * r3[j]


def cut_combination(const double[:, ::1] A, const double[::1] beta, double scale,
                    double[::1] out):
    """out = scale * sum_i beta_i A_i over the first len(beta) rows with beta_i != 0."""
    cdef Py_ssize_t k = beta.shape[0], n = A.shape[1], i, j, s, j0, j1, n_support = 0
    cdef Py_ssize_t* support
    cdef double* coef
    cdef const double* row
    if k > A.shape[0] or out.shape[0] != n:
        raise ValueError("cut_combination: beta longer than A or out of the wrong length")
    support = <Py_ssize_t*> malloc((k + 1) * sizeof(Py_ssize_t))
    coef = <double*> malloc((k + 1) * sizeof(double))
    if support == NULL or coef == NULL:
        free(support)
        free(coef)
        raise MemoryError()
    for i in range(k):
        if beta[i] != 0.0:
            support[n_support] = i
            coef[n_support] = scale * beta[i]
            n_support += 1
    with nogil:
        j0 = 0
        while j0 < n:
            j1 = j0 + BLOCK if j0 + BLOCK < n else n
            for j in range(j0, j1):
                out[j] = 0.0
            s = 0
            while s + 4 <= n_support:  # four rows per sweep of the block
                add_rows(&out[0], j0, j1, coef + s, &A[support[s], 0], &A[support[s + 1], 0],
                         &A[support[s + 2], 0], &A[support[s + 3], 0])
                s += 4
            while s < n_support:
                row = &A[support[s], 0]
                for j in range(j0, j1):
                    out[j] += coef[s] * row[j]
                s += 1
            j0 = j1
    free(support)
    free(coef)


def sample_combination(const floating[::1] data, const index_t[::1] indices,
                       const index_t[::1] indptr, bint dense, double bias,
                       const double[::1] v, double[::1] out, bint accumulate=False):
    """out = X^T v, with out[-1] = bias * sum(v) when bias != 0 (X as in fr_rows.pxd);
    ``accumulate``: out += X^T v (and bias * sum(v)) instead."""
    cdef Py_ssize_t m = indptr.shape[0] - 1, D = out.shape[0], d = D - (bias != 0.0)
    cdef Py_ssize_t i, kk, nnz, j
    cdef double vi, total = 0.0
    cdef const floating* val
    cdef const index_t* idx
    if v.shape[0] != m:
        raise ValueError("sample_combination: v must have one entry per row of X")
    with nogil:
        if not accumulate:
            for j in range(D):
                out[j] = 0.0
        for i in range(m):
            vi = v[i]
            total += vi
            if vi == 0.0:
                continue
            nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
            row_axpy(vi, val, idx, nnz, &out[0])
        if bias != 0.0:
            out[d] = bias * total + (out[d] if accumulate else 0.0)


def sample_products(const floating[::1] data, const index_t[::1] indices,
                    const index_t[::1] indptr, bint dense, double bias,
                    const double[::1] w, double[::1] out):
    """out = X w (+ bias * w[-1] when bias != 0), the weights prefetched ahead
    across row ends (the products of the cuts kept in the sample space)."""
    cdef Py_ssize_t m = indptr.shape[0] - 1, D = w.shape[0], d = D - (bias != 0.0)
    cdef Py_ssize_t i, nnz, end
    cdef const floating* val
    cdef const index_t* idx
    if out.shape[0] != m:
        raise ValueError("sample_products: out must have one entry per row of X")
    with nogil:
        end = indptr[m]
        for i in range(m):
            nnz = row_view(&data[0], &indices[0], &indptr[0], dense, i, &val, &idx)
            out[i] = row_dot_ahead(val, idx, nnz, nnz if dense else end - indptr[i], &w[0], 1)
            if bias != 0.0:
                out[i] += bias * w[d]
