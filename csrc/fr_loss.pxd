# Cython view of fr_loss.h (scalar losses, docs/math.md §2).

cdef extern from "fr_loss.h" nogil:
    enum:
        FR_OK
        FR_ERR_OVERFLOW
        FR_ERR_BAD_LOSS
    # the kernel ids, for Cython code that switches on a loss by name (their values and the
    # public names come from fr_loss.h's one list, FR_ALL_LOSSES)
    enum:
        FR_HINGE
        FR_SQUARED_HINGE
        FR_ZERO_MARGIN
        FR_SQUARED_ZERO_MARGIN
        FR_LOGISTIC
        FR_EXPONENTIAL
        FR_NOVELTY
        FR_SQUARED
        FR_ABSOLUTE
        FR_QUANTILE
        FR_EPSILON_INSENSITIVE
        FR_HUBER
        FR_POISSON
        FR_SMOOTHED_HINGE
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
