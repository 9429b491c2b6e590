# Cython view of fr_conj.h (regularizer maps, docs/math.md §5, §6); cimport from kernels.

cdef extern from "fr_conj.h" nogil:
    double fr_soft_threshold(double x, double t)
    double fr_norm_inf(Py_ssize_t n, const double* u)
    double fr_norm(Py_ssize_t n, const double* u, double r)
    double fr_shrink(Py_ssize_t n, const double* v, double t, double scale, double* out)
    double fr_lp_link(Py_ssize_t n, const double* u, double r, double* out)
    double fr_lp_link_inverse(Py_ssize_t n, const double* w, double r, double* out)
    double fr_lp_prox_coords(Py_ssize_t n, const double* a, double lam, double p, double* out)
