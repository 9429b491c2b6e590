# Cython view of fr_loss.h (scalar losses, docs/math.md §2).

cdef extern from "fr_loss.h" nogil:
    enum:
        FR_OK
        FR_ERR_OVERFLOW
        FR_ERR_BAD_LOSS
    enum:
        FR_N_LOSSES
    const char* const fr_loss_names[]
    int fr_loss_batch(int kind, double p, Py_ssize_t n, const double* f, const double* y,
                      const double* c, double* g, double* value)
    int fr_loss_conj_batch(int kind, double p, Py_ssize_t n, const double* a, const double* y,
                           double* out)
