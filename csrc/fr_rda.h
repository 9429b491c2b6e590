/* Helpers of the regularized dual averaging kernels (csrc/_rda.pyx, docs/math.md §6).
 *
 * fr_loss_pointer picks the scalar loss of fr_loss.h once per kernel call
 * (the switch stays outside the epoch loop); the loop then calls it through a
 * plain function pointer.
 */
#ifndef FR_RDA_H
#define FR_RDA_H

#include "fr_loss.h"

typedef double (*fr_loss_fn)(double f, double y, double p, double *d);

static inline fr_loss_fn fr_loss_pointer(int kind)
{
    switch (kind) {
#define FR_POINTER_CASE(ID, FN, NAME) case ID: return FN;
    FR_ALL_LOSSES(FR_POINTER_CASE)
#undef FR_POINTER_CASE
    default:
        return NULL;
    }
}

#endif
