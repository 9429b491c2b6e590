# Cython view of fr_lossfn.h: one scalar loss as a function pointer.

cdef extern from "fr_lossfn.h" nogil:
    ctypedef double (*fr_loss_fn)(double f, double y, double p, double* deriv) noexcept nogil
    fr_loss_fn fr_loss_pointer(int kind)
