/* Row-split epochs: the parts of one pass (one thread each) sum a short vector of
 * partial sums per row (a row's scores over each part's share of its entries).
 *
 * Memory: per part, one cache line with the part's published round, then two buffers
 * of ``width`` doubles (the round's parity), each rounded up to whole cache lines
 * (fr_split_stride bytes per part, from a 64-byte aligned base).  A part writes its
 * values into the buffer of the round's parity, publishes the round with a release
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

#define FR_LINE 64
#define FR_SPIN_YIELD 4096

#if defined(__x86_64__) || defined(__i386__)
#define fr_spin_pause() __builtin_ia32_pause()
#else
#define fr_spin_pause() ((void)0)
#endif

static inline size_t fr_split_stride(int64_t width)
{
    size_t buffer = ((size_t)width * sizeof(double) + FR_LINE - 1) / FR_LINE * FR_LINE;
    return FR_LINE + 2 * buffer;
}

/* sum[c] = sum over the parts p (in order) of part p's x[c], c < width; x and sum may
 * be the same array. */
static inline void fr_exchange(char *base, int part, int n_parts, const double *x,
                               double *sum, int64_t width, int64_t round)
{
    size_t stride = fr_split_stride(width);
    size_t buffer = (stride - FR_LINE) / 2;
    int p;
    int64_t c;
    long polls;
    char *own = base + (size_t)part * stride;
    double *out = (double *)(own + FR_LINE + (size_t)(round & 1) * buffer);
    const double *in;
    for (c = 0; c < width; ++c)
        out[c] = x[c];
    __atomic_store_n((int64_t *)own, round, __ATOMIC_RELEASE);
    for (p = 0; p < n_parts; ++p) {
        char *slot = base + (size_t)p * stride;
        polls = 0;
        while (__atomic_load_n((int64_t *)slot, __ATOMIC_ACQUIRE) < round) {
            if (++polls % FR_SPIN_YIELD == 0)
                sched_yield();
            else
                fr_spin_pause();
        }
        in = (const double *)(slot + FR_LINE + (size_t)(round & 1) * buffer);
        for (c = 0; c < width; ++c)
            sum[c] = p == 0 ? in[c] : sum[c] + in[c];
    }
}

#endif
