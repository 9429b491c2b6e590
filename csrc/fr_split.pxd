# Row-split epochs (csrc/fr_split.h): one part per thread, its entries of each row and
# the exchange of the rows' partial sums.
from libc.stdint cimport int64_t

cdef extern from "fr_split.h" nogil:
    ctypedef struct fr_split:
        const int64_t* bounds
        const int64_t* cuts
        int64_t n_rows
        int part
        int n_parts
        char* slots
        int64_t round
        int64_t* order
    int fr_num_threads()
    void fr_barrier()
    size_t fr_split_bytes(int n_parts, int64_t width)
    void fr_split_init(fr_split* parts, int n_parts, const int64_t* bounds,
                       const int64_t* cuts, int64_t n_rows, unsigned char* raw)
    int64_t fr_split_start(const fr_split* sp, int64_t i)
    int64_t fr_split_end(const fr_split* sp, int64_t i, int64_t nnz)
    void fr_exchange(fr_split* sp, double* x, int64_t width)
    double fr_exchange_sum(fr_split* sp, double x)
