/* One scalar loss as a function pointer, chosen once per kernel call.
 *
 * Stochastic kernels (Pegasos family, PGS) evaluate one example at a time
 * between sparse row updates; they look the loss up here once, outside the
 * epoch loop, instead of switching on the loss id per example.
 */
#ifndef FR_LOSSFN_H
#define FR_LOSSFN_H

#include "fr_loss.h"

typedef double (*fr_loss_fn)(double f, double y, double p, double *deriv);

/* The loss function of id `kind`, or NULL for an unknown id. */
static inline fr_loss_fn fr_loss_pointer(int kind)
{
    switch (kind) {
#define FR_POINTER_CASE(ID, FN, NAME) \
    case ID: \
        return FN;
    FR_ALL_LOSSES(FR_POINTER_CASE)
#undef FR_POINTER_CASE
    default:
        return NULL;
    }
}

#endif
