/* Lazily scaled weight vector w = scale * v (docs/math.md §5).
 *
 * The shrink w <- a w is `scale *= a` in O(1); a sparse update w += c x is
 * v += (c / scale) x in O(nnz(x)) (fr_scaled.pxd, which is generic over the
 * row dtypes); sqnorm = ||v||^2 is kept incrementally so ||w||^2 =
 * scale^2 sqnorm and the projection onto a ball are O(1).  When the scale
 * leaves [FR_SCALE_MIN, FR_SCALE_MAX] (checked after every scaling) it is
 * folded into v in O(d), which happens once every ~1e9-fold change.
 *
 * Exact lazy averaging (optional, u != NULL while `averaging` is set): the
 * running sum of the iterates recorded with fr_scaled_accumulate is
 * sum_t w_t = S v - u, where S is the sum of the recorded scales and every
 * change dv of v adds S dv to u (so the change counts only for later
 * iterates).  Folding materialises u <- u - S v and restarts S at 0.  S v
 * and u cancel to within S / scale times |w| (a shrinking scale makes v
 * large while S still holds the early, larger scales), so a shrink or an
 * iterate record also folds once S > FR_AVG_AMPLIFY * scale: rounding in the average then
 * stays below ~1e-11 |w|, at one O(d) fold per ~1e5 Pegasos steps.
 * Weights are always float64.
 */
#ifndef FR_SCALED_H
#define FR_SCALED_H

#include <math.h>
#include <stddef.h>

#define FR_SCALE_MIN 1e-9
#define FR_SCALE_MAX 1e9
#define FR_AVG_AMPLIFY 1e5

/* Prefetch hint for the weights the next row will touch: the epoch loops are
 * bound by cache misses on v for large d (IMDB bigrams: 1.5M weights). */
#if defined(__GNUC__) || defined(__clang__)
#define FR_PREFETCH(ptr) __builtin_prefetch((ptr), 1, 1)
#else
#define FR_PREFETCH(ptr) ((void)(ptr))
#endif

typedef struct {
    double *v;        /* length d */
    double *u;        /* averaging correction, length d (NULL: no averaging) */
    ptrdiff_t d;
    double scale;     /* w = scale * v */
    double sqnorm;    /* ||v||^2 */
    double S;         /* sum of the recorded scales since the last fold */
    long long n_avg;  /* number of recorded iterates */
    int averaging;    /* record iterates into (S, u) */
} fr_scaled;

/* ||w||^2 */
static inline double fr_scaled_sqnorm(const fr_scaled *w)
{
    return w->scale * w->scale * w->sqnorm;
}

/* Fold the scale into v: w unchanged, scale = 1, ||v||^2 recomputed exactly. */
static inline void fr_scaled_fold(fr_scaled *w)
{
    ptrdiff_t j;
    double s = w->scale, sq = 0.0;
    if (w->averaging && w->u != NULL) {
        for (j = 0; j < w->d; ++j) w->u[j] -= w->S * w->v[j];
        w->S = 0.0;
    }
    for (j = 0; j < w->d; ++j) {
        w->v[j] *= s;
        sq += w->v[j] * w->v[j];
    }
    w->scale = 1.0;
    w->sqnorm = sq;
}

/* w <- a w.  a = 0 sets w to zero (one O(d) pass: only Pegasos' first step). */
static inline void fr_scaled_shrink(fr_scaled *w, double a)
{
    ptrdiff_t j;
    if (a == 0.0) {
        w->scale = 1.0;
        fr_scaled_fold(w);
        for (j = 0; j < w->d; ++j) w->v[j] = 0.0;
        w->sqnorm = 0.0;
        return;
    }
    w->scale *= a;
    if (fabs(w->scale) < FR_SCALE_MIN || fabs(w->scale) > FR_SCALE_MAX
        || (w->averaging && fabs(w->S) > FR_AVG_AMPLIFY * fabs(w->scale)))
        fr_scaled_fold(w);
}

/* Project onto the ball ||w|| <= radius; returns ||w|| after projection. */
static inline double fr_scaled_project(fr_scaled *w, double radius)
{
    double norm = sqrt(fr_scaled_sqnorm(w));
    if (norm > radius) {
        fr_scaled_shrink(w, radius / norm);
        return radius;
    }
    return norm;
}

/* Record the current w into the running average. */
static inline void fr_scaled_accumulate(fr_scaled *w)
{
    if (w->averaging) {
        w->S += w->scale;
        w->n_avg += 1;
        if (fabs(w->S) > FR_AVG_AMPLIFY * fabs(w->scale)) fr_scaled_fold(w);
    }
}

/* out <- mean of the recorded iterates (requires n_avg > 0). */
static inline void fr_scaled_average(const fr_scaled *w, double *out)
{
    ptrdiff_t j;
    double inv = 1.0 / (double)w->n_avg;
    for (j = 0; j < w->d; ++j) out[j] = (w->S * w->v[j] - w->u[j]) * inv;
}

#endif
