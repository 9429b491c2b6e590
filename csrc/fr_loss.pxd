# Cython view of fr_loss.h (scalar losses, docs/math.md §2).

cdef extern from "fr_loss.h" nogil:
    enum:
        FR_OK
        FR_ERR_OVERFLOW
        FR_ERR_BAD_LOSS
    # the number of kernel ids (the ids and the public names come from fr_loss.h's one list,
    # FR_ALL_LOSSES; Python reads them through fr_loss_names)
    enum:
        FR_N_LOSSES
    const char* const fr_loss_names[]
    int fr_loss_batch(int kind, double p, Py_ssize_t n, const double* f, const double* y,
                      const double* c, double* g, double* value)
    int fr_loss_conj_batch(int kind, double p, Py_ssize_t n, const double* a, const double* y,
                           double* out)
    int fr_loss_derivs_batch(int kind, double p, Py_ssize_t n, const double* f, const double* y,
                             const double* c, double s, double* d, double* g, double* h,
                             double* value)
    double fr_loss_curv(int kind, double p, double f, double y)
