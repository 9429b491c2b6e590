# cython: language_level=3
"""Kernels of the bundle methods' inner problems (MATH.md 4; seed 004 eq. 12).

``simplex_active_set`` -- minimize ``f(beta) = 0.5 beta^T H beta - c^T beta``
over the simplex ``beta >= 0, sum beta = 1`` (BMRM's dual (12) with the slack
of ``sum alpha <= 1`` kept as the multiplier of the constant cut, see
fastrisk/solvers/qp.py) by a primal active-set method (Nocedal & Wright,
Algorithm 16.3) warm-started from a feasible beta.  The face F (the working
set of free variables) starts as the support of beta.  Each step solves the
face's KKT system ``[H_FF + rho I, 1; 1^T, 0] [x; nu] = [c_F; 1]`` by LU with
partial pivoting (|F| + 1 unknowns, |F| the active cuts: tens), moves from
beta_F towards x until a variable reaches 0 (ratio test; that variable leaves
F and the face is solved again) and, at the face's minimizer, lets in the
fixed variable of smallest gradient if it is below every gradient of the
face.  ``g = H beta - c`` is recomputed from the rows of H with beta_j != 0
(O(k |F|)) after each step.

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

Both run without the GIL; H is read through its row stride (a leading block
of a larger Gram matrix, no copy).
"""

import numpy as np
from libc.math cimport INFINITY, fabs
from libc.stdlib cimport free, malloc

cdef enum:
    QP_CONVERGED = 0
    QP_MAX_SOLVES = 1
    QP_SINGULAR = 2
    BLOCK = 2048  # columns per block of cut_combination (16 KB of out)


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


cdef bint lu_solve(Py_ssize_t n, double* K, double* x) noexcept nogil:
    """Solve K x = b in place (b given in x), K (n x n, row-major) overwritten; partial pivoting.

    Returns False on an exactly zero pivot.
    """
    cdef Py_ssize_t i, j, r, p
    cdef double t, pivot
    for r in range(n):
        p = r
        for i in range(r + 1, n):
            if fabs(K[i * n + r]) > fabs(K[p * n + r]):
                p = i
        if K[p * n + r] == 0.0:
            return False
        if p != r:
            for j in range(r, n):
                t = K[r * n + j]
                K[r * n + j] = K[p * n + j]
                K[p * n + j] = t
            t = x[r]
            x[r] = x[p]
            x[p] = t
        pivot = K[r * n + r]
        for i in range(r + 1, n):
            t = K[i * n + r] / pivot
            if t != 0.0:
                for j in range(r + 1, n):
                    K[i * n + j] -= t * K[r * n + j]
                x[i] -= t * x[r]
    for r in range(n - 1, -1, -1):
        t = x[r]
        for j in range(r + 1, n):
            t -= K[r * n + j] * x[j]
        x[r] = t / K[r * n + r]
    return True


cdef int active_set(Py_ssize_t k, const double* H, Py_ssize_t ld, const double* c,
                    double* beta, double* g, double rho, double tol, double rtol,
                    double f_lower, long max_solves, long* n_solves, double* value,
                    double* violation, Py_ssize_t* F, unsigned char* in_face, double* K,
                    double* x) noexcept nogil:
    cdef Py_ssize_t i, j, n = 0, r, hit, enter
    cdef double f, gmax, gmin, gface, ratio, step
    cdef double total = 0.0
    cdef bint may_enter = True, face_optimal = False
    cdef int status = QP_CONVERGED
    f = gradient(k, H, ld, c, beta, g)
    n_solves[0] = 0
    for i in range(k):
        in_face[i] = beta[i] > 0.0
        if in_face[i]:
            F[n] = i
            n += 1
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
            for r in range(n):
                if g[F[r]] < gface:
                    gface = g[F[r]]
            for i in range(k):
                if not in_face[i] and g[i] < gface - tol and (enter < 0 or g[i] < g[enter]):
                    enter = i
            if enter >= 0:
                F[n] = enter
                in_face[enter] = True
                n += 1
            elif face_optimal:
                break  # KKT up to the ridge and rounding
        if n_solves[0] >= max_solves:
            status = QP_MAX_SOLVES
            break
        # KKT system of the face: [H_FF + rho I, 1; 1^T, 0] [beta_F; nu] = [c_F; 1]
        for r in range(n):
            for j in range(n):
                K[r * (n + 1) + j] = H[F[r] * ld + F[j]]
            K[r * (n + 1) + r] += rho
            K[r * (n + 1) + n] = 1.0
            K[n * (n + 1) + r] = 1.0
            x[r] = c[F[r]]
        K[n * (n + 1) + n] = 0.0
        x[n] = 1.0
        n_solves[0] += 1
        if not lu_solve(n + 1, K, x):
            status = QP_SINGULAR
            break
        # ratio test: move from beta_F towards the face minimizer x until a variable hits 0
        hit = -1
        step = 1.0
        for r in range(n):
            i = F[r]
            if x[r] < beta[i]:
                ratio = beta[i] / (beta[i] - x[r])
                if ratio < step:
                    step = ratio
                    hit = r
        for r in range(n):
            i = F[r]
            beta[i] = 0.0 if r == hit else max(beta[i] + step * (x[r] - beta[i]), 0.0)
        if hit >= 0:  # leave the face through the blocking variable; solve again first
            if step == 0.0 and F[hit] == enter:
                break  # the entering direction is blocked at once: optimal up to rounding
            in_face[F[hit]] = False
            n -= 1
            F[hit] = F[n]
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

    Returns (status, n_solves, f(beta), violation); status 0 converged, 1 max_solves
    reached, 2 a KKT system was singular (beta is then the last feasible point).
    """
    cdef Py_ssize_t k = c.shape[0]
    cdef double[::1] g = np.empty(k)
    cdef double[::1] K = np.empty((k + 1) * (k + 1))
    cdef double[::1] x = np.empty(k + 1)
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
                            &violation, &F[0], &in_face[0], &K[0], &x[0])
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
