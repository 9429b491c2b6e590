/* Dual coordinate steps of SDCA (docs/math.md §7; Shalev-Shwartz & Zhang 2013; Takac et al. 2013).
 *
 * Dual variables are kept in the "negative derivative" scale: at the optimum
 * u_i = -l'(<w, x_i>, y_i) and v = (1 / (lambda n)) sum_i c_i u_i x_i, with
 * w = v for the l2 penalty (w = soft(v, kappa) for the elastic net).  For the
 * binary losses s_i = y_i u_i is the alpha_i of the paper (hinge: in [0, 1]).
 *
 * A step maximises the dual along one coordinate (or its separable surrogate
 * in a mini-batch):
 *
 *     u = argmax_u  -l*(-u) - (u - u0) f - (q / 2) (u - u0)^2
 *
 * with f = <w, x_i> and q = c_i ||x_i||^2 / (lambda n) (times the mini-batch
 * factor beta).  Every supported loss has a closed form except the logistic,
 * exponential and Poisson losses, solved inexactly, to the tolerance tol, by
 * safeguarded 1-D Newton iterations (the closed forms ignore tol).  Kernels pick the step
 * function once per call (fr_sdca_step_for), never per row.
 */
#ifndef FR_SDCA_H
#define FR_SDCA_H

#include <math.h>
#include <stdint.h>
#include "fr_conj.h"
#include "fr_loss.h"

typedef double (*fr_sdca_step_fn)(double u0, double f, double y, double p, double q,
                                   double tol);
typedef double (*fr_loss_fn)(double f, double y, double p, double *d);
typedef double (*fr_conj_fn)(double a, double y, double p);

static inline double fr_clip(double x, double lo, double hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

/* hinge: -l*(-u) = s on s = y u in [0, 1]  ->  s = clip(s0 + (1 - y f) / q, 0, 1) */
static inline double fr_hinge_sdca_step(double u0, double f, double y, double p, double q,
                                        double tol)
{
    (void)tol;
    (void)p;
    return y * fr_clip(y * u0 + (1.0 - y * f) / q, 0.0, 1.0);
}

/* squared hinge: -l*(-u) = s - s^2 / 2 on s >= 0 */
static inline double fr_squared_hinge_sdca_step(double u0, double f, double y, double p, double q,
                                                double tol)
{
    (void)tol;
    (void)p;
    double s = (1.0 - y * f + q * y * u0) / (1.0 + q);
    return y * (s > 0.0 ? s : 0.0);
}

/* smoothed hinge (gamma = p): -l*(-u) = s - gamma s^2 / 2 on s in [0, 1] */
static inline double fr_smoothed_hinge_sdca_step(double u0, double f, double y, double p, double q,
                                                 double tol)
{
    (void)tol;
    return y * fr_clip((1.0 - y * f + q * y * u0) / (p + q), 0.0, 1.0);
}

/* logistic: -l*(-u) = H(s) = -s log s - (1 - s) log(1 - s), s = y u in [0, 1].
 * Solved in t = logit(s): s = sigma(t) and 1 - s = sigma(-t) both come from
 * e = exp(-|t|) without cancellation (the role of the alpha / C - alpha
 * pair of Yu, Huang & Lin 2011, Section 3), and the optimality condition
 *
 *     F(t) = t + y f + q (sigma(t) - s0) = 0,    F'(t) = 1 + q s (1 - s) >= 1,
 *
 * gives |t - t*| <= |F(t)|.  The step is inexact (Yu, Huang & Lin 2011,
 * Algorithm 3): it returns the first Newton iterate with |F(t)| <= tol (plus
 * the rounding floor FR_DUAL_ROOT_FLOOR), so the dual point sigma(t) stays
 * strictly feasible for any tol; the driver shrinks tol over the epochs.
 * The root lies between t_b = -y f and t_a = logit(s0), where F is known
 * without an exp: F(t_b) = q (sigma(-y f) - s0) (from the exp of the loss
 * value) and F(t_a) = t_a + y f (one log); they have opposite signs as sigma
 * increases.  Newton starts from the end with the smaller Newton step; an
 * iterate that leaves the bracket is replaced by bisection. */
/* F's terms carry relative rounding errors of ~1e-16: the floor of the test on |F|
 * (here and in fr_exp_dual_root) */
#define FR_DUAL_ROOT_FLOOR 1e-15
#define FR_DUAL_ROOT_MAX_ITER 100

/* sigma(t) and 1 - sigma(t) from e = exp(-|t|) */
static inline void fr_sigmoid_pair(double t, double e, double *s, double *s1)
{
    double d = 1.0 / (1.0 + e);
    *s = t >= 0.0 ? d : e * d;
    *s1 = t >= 0.0 ? e * d : d;
}

/* The root t of F within tol, from s0 = y u0, z = y f and eb = exp(-|z|);
 * stores e = exp(-|t|) for sigma(t) and H(sigma(t)). */
static inline double fr_logistic_dual_root(double s0, double z, double q, double tol, double eb,
                                           double *e_out)
{
    double tb = -z, sb, sb1, Fb, ta, Fa, lo, hi, t, e, s, s1, F, step_a, step_b, floor_;
    int it;
    fr_sigmoid_pair(tb, eb, &sb, &sb1);
    Fb = q * (sb - s0);
    floor_ = tol + FR_DUAL_ROOT_FLOOR * (fabs(z) + q + 1.0);
    if (fabs(Fb) <= floor_) {
        *e_out = eb;
        return tb;
    }
    step_b = Fb / (1.0 + q * sb * sb1);
    if (s0 > 0.0 && s0 < 1.0) {
        ta = log(s0 / (1.0 - s0));
        Fa = ta - tb;
        step_a = Fa / (1.0 + q * s0 * (1.0 - s0));
    } else {   /* s0 at an end: the bracket end [-z - q (1 - s0), -z + q s0] */
        ta = Fb > 0.0 ? tb - q * (1.0 - s0) : tb + q * s0;
        step_a = INFINITY;
    }
    lo = Fb > 0.0 ? ta : tb;
    hi = Fb > 0.0 ? tb : ta;
    t = fabs(step_a) < fabs(step_b) ? ta - step_a : tb - step_b;
    for (it = 0; ; ++it) {
        if (!(t > lo && t < hi))
            t = 0.5 * (lo + hi);
        e = exp(-fabs(t));
        fr_sigmoid_pair(t, e, &s, &s1);
        F = t + z + q * (s - s0);
        if (fabs(F) <= floor_ + FR_DUAL_ROOT_FLOOR * fabs(t)
                || hi - lo <= FR_DUAL_ROOT_FLOOR * (1.0 + fabs(t)) || it == FR_DUAL_ROOT_MAX_ITER)
            break;
        if (F > 0.0) hi = t; else lo = t;
        t -= F / (1.0 + q * s * s1);
    }
    *e_out = e;
    return t;
}

static inline double fr_logistic_sdca_step(double u0, double f, double y, double p, double q,
                                           double tol)
{
    double z = y * f, e, s, s1, t;
    (void)p;
    t = fr_logistic_dual_root(y * u0, z, q, tol, exp(-fabs(z)), &e);
    fr_sigmoid_pair(t, e, &s, &s1);
    return y * s;
}

/* exponential and Poisson: -l*(-u) = r - r log r on r >= 0, with r = y u, z = y f
 * (exponential, exp(-y f)) and r = y - u, z = -f (Poisson, exp(f) - y f).  In t = log r
 * the step's optimality condition is
 *
 *     F(t) = t + z + q (e^t - r0) = 0,    F'(t) = 1 + q e^t >= 1,    F'' > 0,
 *
 * (r0: the r of u0), whose root is t* = a - W(q e^a), a = q r0 - z, W Lambert's function.
 * F is convex, so Newton's iterates from a point with F >= 0 decrease monotonically to t*,
 * and a Newton step from a point with F < 0 lands at F >= 0.  The start is the lower of
 * two such points: log r0 when F(log r0) = log r0 + z >= 0, else the Newton step from it;
 * and, when that is far (F(log r0) > 1) or r0 = 0, a - (L - log L + log L / (2 L)) with
 * L = log(q) + a >= 1 (x = q e^a >= e: Hoorfar & Hassani 2008, Theorem 2.7, bound W(x)
 * below by log x - log log x + log log x / (2 log x) and above by the same with
 * e / (e - 1) for 1/2, so this start is within 1.09 log(L) / L of t*; else a itself,
 * where F = q e^a > 0).
 * The step is inexact like the logistic's: from the right of t*, |r - r*| <= e^t F(t)
 * (F' >= 1) and the 1-D dual's slope is F(t), so r falls short of the coordinate's
 * maximum by at most F^2 e^t; it stops when that is at most tol^2 / 4 (the logistic's
 * bound, |F| |s - s*| <= tol tol / 4), or at the rounding floor of F. */
static inline double fr_exp_dual_root(double r0, double z, double q, double tol,
                                      double *r_out)
{
    double a, L, t, start, Fa, e, F, tol2 = 0.25 * tol * tol;
    int it;
    r0 = r0 > 0.0 ? r0 : 0.0;  /* a dual from elsewhere may sit outside the domain */
    a = q * r0 - z;
    start = INFINITY;
    Fa = INFINITY;
    if (r0 > 0.0) {
        t = log(r0);
        Fa = t + z;
        start = Fa >= 0.0 ? t : t - Fa / (1.0 + q * r0);
    }
    if (Fa > 1.0) {
        L = log(q) + a;
        t = L >= 1.0 ? a - L + log(L) * (1.0 - 0.5 / L) : a;
        start = t < start ? t : start;
    }
    t = start;
    for (it = 0; ; ++it) {
        e = exp(t);
        F = t + z + q * (e - r0);
        if (fabs(F) <= FR_DUAL_ROOT_FLOOR * (fabs(t) + fabs(z) + q * (e + r0) + 1.0)
                || (F > 0.0 && F * F * e <= tol2) || it == FR_DUAL_ROOT_MAX_ITER)
            break;
        t -= F / (1.0 + q * e);
    }
    *r_out = e;
    return t;
}

static inline double fr_exponential_sdca_step(double u0, double f, double y, double p,
                                              double q, double tol)
{
    double r;
    (void)p;
    fr_exp_dual_root(y * u0, y * f, q, tol, &r);
    return y * r;
}

static inline double fr_poisson_sdca_step(double u0, double f, double y, double p, double q,
                                          double tol)
{
    double r;
    (void)p;
    fr_exp_dual_root(y - u0, -f, q, tol, &r);
    return y - r;
}

/* squared: -l*(-u) = u y - u^2 / 2, unconstrained */
static inline double fr_squared_sdca_step(double u0, double f, double y, double p, double q,
                                          double tol)
{
    (void)tol;
    (void)p;
    return (y - f + q * u0) / (1.0 + q);
}

/* huber (delta = p): -l*(-u) = u y - u^2 / 2 on |u| <= delta (the squared loss's step in
 * the box of the derivatives the loss takes) */
static inline double fr_huber_sdca_step(double u0, double f, double y, double p, double q,
                                        double tol)
{
    return fr_clip(fr_squared_sdca_step(u0, f, y, p, q, tol), -p, p);
}

/* The maximizer of u y - (u - u0) f - (q / 2) (u - u0)^2, the step of the losses whose
 * -l*(-u) is u y on a box (absolute, quantile; epsilon-insensitive adds -eps |u|), before
 * the box */
static inline double fr_linear_dual_step(double u0, double f, double y, double q)
{
    return u0 + (y - f) / q;
}

/* absolute: -l*(-u) = u y on |u| <= 1 */
static inline double fr_absolute_sdca_step(double u0, double f, double y, double p, double q,
                                           double tol)
{
    (void)tol;
    (void)p;
    return fr_clip(fr_linear_dual_step(u0, f, y, q), -1.0, 1.0);
}

/* quantile (tau = p): -l*(-u) = u y on -tau <= u <= 1 - tau (the absolute loss's step
 * in the box of the pinball's slopes) */
static inline double fr_quantile_sdca_step(double u0, double f, double y, double p, double q,
                                           double tol)
{
    (void)tol;
    return fr_clip(fr_linear_dual_step(u0, f, y, q), -p, 1.0 - p);
}

/* epsilon-insensitive (eps = p): -l*(-u) = u y - eps |u| on |u| <= 1 */
static inline double fr_epsilon_insensitive_sdca_step(double u0, double f, double y, double p,
                                                      double q, double tol)
{
    (void)tol;
    return fr_clip(fr_soft_threshold(fr_linear_dual_step(u0, f, y, q), p / q), -1.0, 1.0);
}

/* Shrinking (LIBLINEAR-style, for the losses with a box-constrained dual):
 * the ascent direction G of the dual along the coordinate and where it sits:
 * -1 at the lower end of the box, +1 at the upper end, 0 inside.  For the
 * binary losses both are taken for s = y u (the alpha_i of LIBLINEAR, box
 * [0, 1]), so rows of both labels share one scale for the thresholds, as in
 * LIBLINEAR; thresholds in the u scale (signs mixed across labels) keep far
 * more rows active at small alpha. */
typedef double (*fr_sdca_grad_fn)(double u, double f, double y, double p, int *bound);

static inline int fr_box_end(double u, double lo, double hi)
{
    return u <= lo ? -1 : (u >= hi ? 1 : 0);
}

static inline double fr_hinge_sdca_grad(double u, double f, double y, double p, int *bound)
{
    (void)p;
    *bound = fr_box_end(y * u, 0.0, 1.0);
    return 1.0 - y * f;
}

static inline double fr_smoothed_hinge_sdca_grad(double u, double f, double y, double p, int *bound)
{
    *bound = fr_box_end(y * u, 0.0, 1.0);
    return 1.0 - p * y * u - y * f;
}

static inline double fr_squared_hinge_sdca_grad(double u, double f, double y, double p, int *bound)
{
    (void)p;
    *bound = y * u <= 0.0 ? -1 : 0;
    return 1.0 - y * u - y * f;
}

static inline double fr_huber_sdca_grad(double u, double f, double y, double p, int *bound)
{
    *bound = fr_box_end(u, -p, p);
    return y - u - f;
}

static inline double fr_absolute_sdca_grad(double u, double f, double y, double p, int *bound)
{
    (void)p;
    *bound = fr_box_end(u, -1.0, 1.0);
    return y - f;
}

static inline double fr_quantile_sdca_grad(double u, double f, double y, double p, int *bound)
{
    *bound = fr_box_end(u, -p, 1.0 - p);
    return y - f;
}

static inline double fr_epsilon_insensitive_sdca_grad(double u, double f, double y, double p,
                                                      int *bound)
{
    *bound = fr_box_end(u, -1.0, 1.0);
    if (u > 0.0) return y - f - p;
    if (u < 0.0) return y - f + p;
    return fr_soft_threshold(y - f, p);   /* at the kink: the least violation */
}

#define FR_SDCA_BOX_LOSSES(X) \
    X(FR_HINGE, fr_hinge) \
    X(FR_SQUARED_HINGE, fr_squared_hinge) \
    X(FR_SMOOTHED_HINGE, fr_smoothed_hinge) \
    X(FR_HUBER, fr_huber) \
    X(FR_ABSOLUTE, fr_absolute) \
    X(FR_QUANTILE, fr_quantile) \
    X(FR_EPSILON_INSENSITIVE, fr_epsilon_insensitive)

/* The shrinking gradient of a loss, or NULL when its dual has no box (logistic, exponential,
 * Poisson, squared). */
static inline fr_sdca_grad_fn fr_sdca_grad_for(int kind)
{
    switch (kind) {
#define FR_GRAD_CASE(ID, FN) case ID: return FN##_sdca_grad;
    FR_SDCA_BOX_LOSSES(FR_GRAD_CASE)
#undef FR_GRAD_CASE
    default: return NULL;
    }
}

/* X-macro: the losses with a dual step (those with a box-constrained dual, then the others). */
#define FR_SDCA_UNBOXED_LOSSES(X) \
    X(FR_LOGISTIC, fr_logistic) \
    X(FR_EXPONENTIAL, fr_exponential) \
    X(FR_POISSON, fr_poisson) \
    X(FR_SQUARED, fr_squared)

#define FR_SDCA_LOSSES(X) FR_SDCA_BOX_LOSSES(X) FR_SDCA_UNBOXED_LOSSES(X)

/* Whether a loss's step stops at the tolerance it is given (those without a closed form:
 * logistic, exponential, Poisson); the closed-form steps ignore it. */
static inline int fr_sdca_inexact(int kind)
{
    return kind == FR_LOGISTIC || kind == FR_EXPONENTIAL || kind == FR_POISSON;
}

/* The step of a loss, or NULL when it has none. */
static inline fr_sdca_step_fn fr_sdca_step_for(int kind)
{
    switch (kind) {
#define FR_STEP_CASE(ID, FN) case ID: return FN##_sdca_step;
    FR_SDCA_LOSSES(FR_STEP_CASE)
#undef FR_STEP_CASE
    default: return NULL;
    }
}

/* One visit of a row by single-coordinate SDCA: every loss-dependent quantity
 * in one call (one indirect call per row instead of four), with the loss's
 * inline functions specialised into it.  Returns the new dual value
 * u = step(u0, f, q, tol) and stores l(f, y), the conjugate term -l*(-u), and
 * the shrinking direction G with its box end (G = 0, bound = 0 without a box). */
typedef double (*fr_sdca_visit_fn)(double u0, double f, double y, double p, double q,
                                   double tol, double *loss, double *dual, double *G,
                                   int *bound);

static inline double fr_unboxed_sdca_grad(double u, double f, double y, double p, int *bound)
{
    (void)u; (void)f; (void)y; (void)p;
    *bound = 0;
    return 0.0;
}

#define FR_DEFINE_SDCA_VISIT(FN, GRAD) \
    static double FN##_sdca_visit(double u0, double f, double y, double p, double q, \
                                  double tol, double *loss, double *dual, double *G, \
                                  int *bound) \
    { \
        double deriv, u; \
        *loss = FN(f, y, p, &deriv); \
        *G = GRAD(u0, f, y, p, bound); \
        u = FN##_sdca_step(u0, f, y, p, q, tol); \
        *dual = -FN##_conj(-u, y, p); \
        return u; \
    }
#define FR_BOX_VISIT(ID, FN) FR_DEFINE_SDCA_VISIT(FN, FN##_sdca_grad)
FR_SDCA_BOX_LOSSES(FR_BOX_VISIT)
FR_DEFINE_SDCA_VISIT(fr_squared, fr_unboxed_sdca_grad)
FR_DEFINE_SDCA_VISIT(fr_exponential, fr_unboxed_sdca_grad)
FR_DEFINE_SDCA_VISIT(fr_poisson, fr_unboxed_sdca_grad)
#undef FR_BOX_VISIT
#undef FR_DEFINE_SDCA_VISIT

/* The logistic visit shares its transcendental calls: e_b = exp(-|y f|) gives
 * the loss log(1 + e_b) + max(-y f, 0) (with one log1p) and F at t_b; the
 * root's e = exp(-|t|) gives H(sigma(t)) = log(1 + e) + max(-t, 0) + (1 - s) t
 * (one log1p; none when the step stops at t_b, where H = l(f) + s y f). */
static double fr_logistic_sdca_visit(double u0, double f, double y, double p, double q,
                                     double tol, double *loss, double *dual, double *G,
                                     int *bound)
{
    double z = y * f, eb = exp(-fabs(z)), e, s, s1, t;
    (void)p;
    *G = fr_unboxed_sdca_grad(u0, f, y, p, bound);
    *loss = (z >= 0.0 ? 0.0 : -z) + log1p(eb);
    t = fr_logistic_dual_root(y * u0, z, q, tol, eb, &e);
    fr_sigmoid_pair(t, e, &s, &s1);
    if (t == -z)
        *dual = *loss + s * z;
    else
        *dual = (t >= 0.0 ? 0.0 : -t) + log1p(e) + s1 * t;
    return y * s;
}

static inline fr_sdca_visit_fn fr_sdca_visit_for(int kind)
{
    switch (kind) {
#define FR_VISIT_CASE(ID, FN) case ID: return FN##_sdca_visit;
    FR_SDCA_LOSSES(FR_VISIT_CASE)
#undef FR_VISIT_CASE
    default: return NULL;
    }
}

/* The loss value l(f, y) and its conjugate, looked up once per call. */
static inline fr_loss_fn fr_loss_for(int kind)
{
    switch (kind) {
#define FR_LOSS_CASE(ID, FN, NAME) case ID: return FN;
    FR_ALL_LOSSES(FR_LOSS_CASE)
#undef FR_LOSS_CASE
    default: return NULL;
    }
}

static inline fr_conj_fn fr_conj_for(int kind)
{
    switch (kind) {
#define FR_CONJ_FOR_CASE(ID, FN, NAME) case ID: return FN##_conj;
    FR_ALL_LOSSES(FR_CONJ_FOR_CASE)
#undef FR_CONJ_FOR_CASE
    default: return NULL;
    }
}

/* The visiting order: splitmix64 (Steele, Lea & Flood 2014) drives a
 * Fisher-Yates shuffle of a[0:n) in place.  j = floor(r32 (k + 1) / 2^32)
 * (multiply-shift, no division) is uniform up to a bias below n / 2^32;
 * beyond 2^32 rows a (slower) modulo keeps it exact enough. */
static inline uint64_t fr_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline void fr_shuffle(int64_t *a, int64_t n, uint64_t *state)
{
    int64_t k, j, t;
    for (k = n - 1; k > 0; --k) {
        uint64_t r = fr_splitmix64(state);
        j = k < 0xFFFFFFFFLL ? (int64_t)(((r >> 32) * (uint64_t)(k + 1)) >> 32)
                             : (int64_t)(r % (uint64_t)(k + 1));
        t = a[k]; a[k] = a[j]; a[j] = t;
    }
}

/* Smallest curvature used in a step: a row of norm 0 (q = 0) maximises its
 * conjugate term alone; a tiny q gives that maximiser without 0/0. */
#define FR_SDCA_QMIN 1e-100

#endif
