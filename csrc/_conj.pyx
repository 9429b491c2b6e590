# cython: language_level=3
"""Array kernels for the regularizers' maps (csrc/fr_conj.h; docs/math.md §5, §6).

Inputs are read-only-safe ``const double[::1]`` vectors, ``out`` is
preallocated by the caller (fastrisk/regularizers.py validates and may pass
``out`` aliasing the input).  Every loop runs without the GIL.
"""

from fr_conj cimport fr_norm, fr_shrink, fr_lp_link, fr_lp_link_inverse, fr_lp_prox_coords


cdef inline void _same_length(Py_ssize_t n, Py_ssize_t m) except *:
    if n != m:
        raise ValueError(f"out has length {m}, expected {n}")


def norm(const double[::1] u, double r):
    """||u||_r, r >= 1."""
    cdef double result
    with nogil:
        result = fr_norm(u.shape[0], &u[0] if u.shape[0] else NULL, r)
    return result


def shrink(const double[::1] v, double t, double scale, double[::1] out):
    """out = scale * sgn(v) max(|v| - t, 0); returns ||out||_2^2."""
    cdef double sq
    _same_length(v.shape[0], out.shape[0])
    if v.shape[0] == 0:
        return 0.0
    with nogil:
        sq = fr_shrink(v.shape[0], &v[0], t, scale, &out[0])
    return sq


def lp_link(const double[::1] u, double r, double[::1] out):
    """out = grad(||u||_r^2 / 2); returns ||u||_r (= ||out||_{r/(r-1)})."""
    cdef double N
    _same_length(u.shape[0], out.shape[0])
    if u.shape[0] == 0:
        return 0.0
    with nogil:
        N = fr_lp_link(u.shape[0], &u[0], r, &out[0])
    return N


def lp_link_inverse(const double[::1] w, double r, double[::1] out):
    """The u with lp_link(u, r) = w; returns ||w||_{r/(r-1)} (= ||u||_r)."""
    cdef double N
    _same_length(w.shape[0], out.shape[0])
    if w.shape[0] == 0:
        return 0.0
    with nogil:
        N = fr_lp_link_inverse(w.shape[0], &w[0], r, &out[0])
    return N


def lp_prox_coords(const double[::1] a, double lam, double p, double[::1] out):
    """out_i = sgn(a_i) x_i, x_i + lam x_i^{p-1} = |a_i|; returns ||out||_p."""
    cdef double N
    _same_length(a.shape[0], out.shape[0])
    if a.shape[0] == 0:
        return 0.0
    with nogil:
        N = fr_lp_prox_coords(a.shape[0], &a[0], lam, p, &out[0])
    return N
