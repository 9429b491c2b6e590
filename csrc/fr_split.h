/* Row-split epochs: the parts of one pass (one thread each) visit the same rows in the
 * same order, each owns a range of the weights, and for every row they sum a short
 * vector of partial sums (the row's scores over each part's share of its entries).
 *
 * fr_split describes one part: its coordinate range [bounds[part], bounds[part + 1]),
 * which is the stored entries [fr_split_start, fr_split_end) of row i (``cuts``, from
 * _sdca.row_cuts: row i's entries below each inner bound; a row's entries are sorted),
 * the exchange's memory ``slots`` shared by the parts, the count of its exchanges
 * ``round`` and, for a pass that shrinks rows, its copy of the row order.
 *
 * Exchange memory: per part, one cache line with the part's published round, then two
 * buffers of ``width`` doubles (the round's parity), each rounded up to whole cache
 * lines (fr_split_stride bytes per part, from a 64-byte aligned base).  A part writes
 * its values into the buffer of the round's parity, publishes the round with a release
 * store, and reads every part's buffer once that part's published round reaches it
 * (acquire loads); the sums run over the parts in order, so every part gets the same
 * bits.  Two buffers suffice: a part that publishes round r + 2 has read round r + 1
 * from every part, which each published after reading round r.  The wait spins (each
 * part runs on its own core) and yields the core after FR_SPIN_YIELD polls, so that an
 * oversubscribed machine still makes progress. */
#ifndef FR_SPLIT_H
#define FR_SPLIT_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define FR_LINE 64
#define FR_SPIN_YIELD 4096

#if defined(__x86_64__) || defined(__i386__)
#define fr_spin_pause() __builtin_ia32_pause()
#else
#define fr_spin_pause() ((void)0)
#endif

typedef struct {
    const int64_t *bounds;
    const int64_t *cuts;
    int64_t n_rows;
    int part;
    int n_parts;
    char *slots;
    int64_t round;
    int64_t *order;
} fr_split;

/* Inside one OpenMP parallel region: the thread count and a barrier (an
 * orphaned directive binds to the region of the calling thread). */
static inline int fr_num_threads(void)
{
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

static inline void fr_barrier(void)
{
#ifdef _OPENMP
#pragma omp barrier
#endif
}

static inline size_t fr_split_stride(int64_t width)
{
    size_t buffer = ((size_t)width * sizeof(double) + FR_LINE - 1) / FR_LINE * FR_LINE;
    return FR_LINE + 2 * buffer;
}

/* Bytes to allocate for the exchange of n_parts parts (with the slack to align them). */
static inline size_t fr_split_bytes(int n_parts, int64_t width)
{
    return FR_LINE + (size_t)n_parts * fr_split_stride(width);
}

/* parts[0 .. n_parts) for one epoch, from zeroed exchange memory ``raw`` of
 * fr_split_bytes; ``order`` NULL. */
static inline void fr_split_init(fr_split *parts, int n_parts, const int64_t *bounds,
                                 const int64_t *cuts, int64_t n_rows, unsigned char *raw)
{
    int p;
    char *slots = (char *)raw + (FR_LINE - (uintptr_t)raw % FR_LINE) % FR_LINE;
    for (p = 0; p < n_parts; ++p) {
        parts[p].bounds = bounds;
        parts[p].cuts = cuts;
        parts[p].n_rows = n_rows;
        parts[p].part = p;
        parts[p].n_parts = n_parts;
        parts[p].slots = slots;
        parts[p].round = 0;
        parts[p].order = NULL;
    }
}

/* The part's entries of row i: [fr_split_start, fr_split_end) of its nnz. */
static inline int64_t fr_split_start(const fr_split *sp, int64_t i)
{
    return sp->part > 0 ? sp->cuts[(int64_t)(sp->part - 1) * sp->n_rows + i] : 0;
}

static inline int64_t fr_split_end(const fr_split *sp, int64_t i, int64_t nnz)
{
    return sp->part < sp->n_parts - 1 ? sp->cuts[(int64_t)sp->part * sp->n_rows + i] : nnz;
}

/* x[c] <- the sum over the parts (in order) of each part's x[c], c < width: the part's
 * next round. */
static inline void fr_exchange(fr_split *sp, double *x, int64_t width)
{
    size_t stride = fr_split_stride(width);
    size_t buffer = (stride - FR_LINE) / 2;
    int p;
    int64_t c, round = ++sp->round;
    long polls;
    char *own = sp->slots + (size_t)sp->part * stride;
    double *out = (double *)(own + FR_LINE + (size_t)(round & 1) * buffer);
    const double *in;
    for (c = 0; c < width; ++c)
        out[c] = x[c];
    __atomic_store_n((int64_t *)own, round, __ATOMIC_RELEASE);
    for (p = 0; p < sp->n_parts; ++p) {
        char *slot = sp->slots + (size_t)p * stride;
        polls = 0;
        while (__atomic_load_n((int64_t *)slot, __ATOMIC_ACQUIRE) < round) {
            if (++polls % FR_SPIN_YIELD == 0)
                sched_yield();
            else
                fr_spin_pause();
        }
        in = (const double *)(slot + FR_LINE + (size_t)(round & 1) * buffer);
        for (c = 0; c < width; ++c)
            x[c] = p == 0 ? in[c] : x[c] + in[c];
    }
}

/* The sum of the parts' x, in part order. */
static inline double fr_exchange_sum(fr_split *sp, double x)
{
    fr_exchange(sp, &x, 1);
    return x;
}

#endif
