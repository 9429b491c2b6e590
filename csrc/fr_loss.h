/* Scalar losses l(f, y) of docs/math.md §2 (Teo et al. 2007, Tables 1-2).
 *
 * Each loss is one static inline function returning l(f, y) and writing a
 * subgradient l'(f, y), plus its Fenchel conjugate l*(a) = sup_f a f - l(f, y)
 * (+inf outside the domain), l''(f, y) (`_curv`: the second derivative where
 * it exists, 0 on the flat pieces of piecewise-linear losses, the generalized
 * second derivative at the kinks of squared-hinge-type and Huber losses; the
 * curvature the proximal Newton solver of csrc/_cd.pyx uses), and l, l' and l''
 * in one call (`_derivs`, for the batch of the Newton-type solvers:
 * FR_DERIVS_FROM_PARTS composes the three functions; the logistic loss shares
 * its exp and reciprocal among them instead).  `p` is the loss parameter
 * (quantile tau, epsilon, huber delta, smoothed-hinge gamma); unused losses ignore it.
 * Batch loops pick the loss once per call (FR_LOSS_SWITCH), never per element.
 */
#ifndef FR_LOSS_H
#define FR_LOSS_H

#include <math.h>
#include <stddef.h>

enum {
    FR_OK = 0,
    FR_ERR_OVERFLOW = 1,   /* exp() overflowed: the loss value is not finite */
    FR_ERR_BAD_LOSS = 2
};

/* Every scalar loss once, as (kernel id, function prefix, public name): the enum, the
 * name table read by fastrisk.losses and the batch switches below are generated from this
 * list, so a new loss is one line here plus its functions (fastrisk/losses.py's table is
 * checked against fr_loss_names by tests/test_losses.py). */
#define FR_ALL_LOSSES(X) \
    X(FR_HINGE, fr_hinge, "hinge") \
    X(FR_SQUARED_HINGE, fr_squared_hinge, "squared_hinge") \
    X(FR_ZERO_MARGIN, fr_zero_margin, "zero_margin") \
    X(FR_SQUARED_ZERO_MARGIN, fr_squared_zero_margin, "squared_zero_margin") \
    X(FR_LOGISTIC, fr_logistic, "logistic") \
    X(FR_EXPONENTIAL, fr_exponential, "exponential") \
    X(FR_NOVELTY, fr_novelty, "novelty") \
    X(FR_SQUARED, fr_squared, "squared") \
    X(FR_ABSOLUTE, fr_absolute, "absolute") \
    X(FR_QUANTILE, fr_quantile, "quantile") \
    X(FR_EPSILON_INSENSITIVE, fr_epsilon_insensitive, "epsilon_insensitive") \
    X(FR_HUBER, fr_huber, "huber") \
    X(FR_POISSON, fr_poisson, "poisson") \
    X(FR_SMOOTHED_HINGE, fr_smoothed_hinge, "smoothed_hinge")

enum fr_loss_kind {
#define FR_ENUM_ENTRY(ID, FN, NAME) ID,
    FR_ALL_LOSSES(FR_ENUM_ENTRY)
#undef FR_ENUM_ENTRY
    FR_N_LOSSES
};

/* Public name of each kernel id, in enum order. */
static const char *const fr_loss_names[FR_N_LOSSES] = {
#define FR_NAME_ENTRY(ID, FN, NAME) NAME,
    FR_ALL_LOSSES(FR_NAME_ENTRY)
#undef FR_NAME_ENTRY
};

static inline double fr_sgn(double x) { return (x > 0) - (x < 0); }

/* FN##_derivs(f, y, p, &d, &h) = FN(f, y, p, &d) with h = FN##_curv(f, y, p) */
#define FR_DERIVS_FROM_PARTS(FN) \
static inline double FN##_derivs(double f, double y, double p, double *d, double *h) \
{ \
    *h = FN##_curv(f, y, p); \
    return FN(f, y, p, d); \
}

/* max(0, 1 - y f) */
static inline double fr_hinge(double f, double y, double p, double *d)
{
    (void)p;
    double z = y * f;
    *d = z < 1.0 ? -y : 0.0;
    return z < 1.0 ? 1.0 - z : 0.0;
}
static inline double fr_hinge_conj(double a, double y, double p)
{
    (void)p;
    double s = -a * y;
    return (s >= 0.0 && s <= 1.0) ? -s : INFINITY;
}
/* l'' = 0 where it exists (piecewise linear) */
static inline double fr_hinge_curv(double f, double y, double p) { (void)f; (void)y; (void)p; return 0.0; }
FR_DERIVS_FROM_PARTS(fr_hinge)

/* 0.5 max(0, 1 - y f)^2 */
static inline double fr_squared_hinge(double f, double y, double p, double *d)
{
    (void)p;
    double r = 1.0 - y * f;
    *d = r > 0.0 ? -y * r : 0.0;
    return r > 0.0 ? 0.5 * r * r : 0.0;
}
static inline double fr_squared_hinge_conj(double a, double y, double p)
{
    (void)p;
    double s = -a * y;
    return s >= 0.0 ? -s + 0.5 * a * a : INFINITY;
}
/* generalized l'' (Mangasarian 2002): 1 on the margin violators */
static inline double fr_squared_hinge_curv(double f, double y, double p) { (void)p; return y * f < 1.0 ? 1.0 : 0.0; }
FR_DERIVS_FROM_PARTS(fr_squared_hinge)

/* max(0, -y f) */
static inline double fr_zero_margin(double f, double y, double p, double *d)
{
    (void)p;
    double z = y * f;
    *d = z < 0.0 ? -y : 0.0;
    return z < 0.0 ? -z : 0.0;
}
static inline double fr_zero_margin_conj(double a, double y, double p)
{
    (void)p;
    double s = -a * y;
    return (s >= 0.0 && s <= 1.0) ? 0.0 : INFINITY;
}
static inline double fr_zero_margin_curv(double f, double y, double p) { (void)f; (void)y; (void)p; return 0.0; }
FR_DERIVS_FROM_PARTS(fr_zero_margin)

/* 0.5 max(0, -y f)^2 */
static inline double fr_squared_zero_margin(double f, double y, double p, double *d)
{
    (void)p;
    double z = y * f;
    *d = z < 0.0 ? y * z : 0.0;
    return z < 0.0 ? 0.5 * z * z : 0.0;
}
static inline double fr_squared_zero_margin_conj(double a, double y, double p)
{
    (void)p;
    return -a * y >= 0.0 ? 0.5 * a * a : INFINITY;
}
static inline double fr_squared_zero_margin_curv(double f, double y, double p) { (void)p; return y * f < 0.0 ? 1.0 : 0.0; }
FR_DERIVS_FROM_PARTS(fr_squared_zero_margin)

/* log(1 + exp(-y f)), stable for any |f| */
static inline double fr_logistic(double f, double y, double p, double *d)
{
    (void)p;
    double z = y * f;
    double e = exp(-fabs(z));                     /* in (0, 1]: never overflows */
    *d = z >= 0.0 ? -y * e / (1.0 + e) : -y / (1.0 + e);
    return (z >= 0.0 ? 0.0 : -z) + log1p(e);
}
static inline double fr_xlogx(double s) { return s > 0.0 ? s * log(s) : 0.0; }
static inline double fr_logistic_conj(double a, double y, double p)
{
    (void)p;
    double s = -a * y;
    return (s >= 0.0 && s <= 1.0) ? fr_xlogx(s) + fr_xlogx(1.0 - s) : INFINITY;
}
/* sigma(z) (1 - sigma(z)) = e / (1 + e)^2 with e = exp(-|z|) */
static inline double fr_logistic_curv(double f, double y, double p)
{
    (void)p;
    double e = exp(-fabs(y * f));
    return e / ((1.0 + e) * (1.0 + e));
}
/* one exp for l, l' and l'': e = exp(-|z|), r = 1 / (1 + e) */
static inline double fr_logistic_derivs(double f, double y, double p, double *d, double *h)
{
    (void)p;
    double z = y * f, e = exp(-fabs(z)), r = 1.0 / (1.0 + e);
    *d = -y * (z >= 0.0 ? e * r : r);
    *h = e * r * r;
    return (z >= 0.0 ? 0.0 : -z) + log1p(e);
}

/* exp(-y f): overflow gives inf, reported by the batch loop */
static inline double fr_exponential(double f, double y, double p, double *d)
{
    (void)p;
    double e = exp(-y * f);
    *d = -y * e;
    return e;
}
static inline double fr_exponential_conj(double a, double y, double p)
{
    (void)p;
    double s = -a * y;
    return s >= 0.0 ? fr_xlogx(s) - s : INFINITY;
}
static inline double fr_exponential_curv(double f, double y, double p) { (void)p; return exp(-y * f); }
FR_DERIVS_FROM_PARTS(fr_exponential)

/* max(0, 1 - f): one-class novelty detection, y unused */
static inline double fr_novelty(double f, double y, double p, double *d)
{
    (void)p; (void)y;
    *d = f < 1.0 ? -1.0 : 0.0;
    return f < 1.0 ? 1.0 - f : 0.0;
}
static inline double fr_novelty_conj(double a, double y, double p)
{
    (void)p; (void)y;
    return (a >= -1.0 && a <= 0.0) ? a : INFINITY;
}
static inline double fr_novelty_curv(double f, double y, double p) { (void)f; (void)y; (void)p; return 0.0; }
FR_DERIVS_FROM_PARTS(fr_novelty)

/* 0.5 (f - y)^2 */
static inline double fr_squared(double f, double y, double p, double *d)
{
    (void)p;
    double r = f - y;
    *d = r;
    return 0.5 * r * r;
}
static inline double fr_squared_conj(double a, double y, double p)
{
    (void)p;
    return a * y + 0.5 * a * a;
}
static inline double fr_squared_curv(double f, double y, double p) { (void)f; (void)y; (void)p; return 1.0; }
FR_DERIVS_FROM_PARTS(fr_squared)

/* |f - y| */
static inline double fr_absolute(double f, double y, double p, double *d)
{
    (void)p;
    double r = f - y;
    *d = fr_sgn(r);
    return fabs(r);
}
static inline double fr_absolute_conj(double a, double y, double p)
{
    (void)p;
    return fabs(a) <= 1.0 ? a * y : INFINITY;
}
static inline double fr_absolute_curv(double f, double y, double p) { (void)f; (void)y; (void)p; return 0.0; }
FR_DERIVS_FROM_PARTS(fr_absolute)

/* max(tau (f - y), (1 - tau)(y - f)), p = tau in (0, 1) */
static inline double fr_quantile(double f, double y, double p, double *d)
{
    double r = f - y;
    *d = r > 0.0 ? p : p - 1.0;
    return r > 0.0 ? p * r : (p - 1.0) * r;
}
static inline double fr_quantile_conj(double a, double y, double p)
{
    return (a >= p - 1.0 && a <= p) ? a * y : INFINITY;
}
static inline double fr_quantile_curv(double f, double y, double p) { (void)f; (void)y; (void)p; return 0.0; }
FR_DERIVS_FROM_PARTS(fr_quantile)

/* max(0, |f - y| - eps), p = eps >= 0 */
static inline double fr_epsilon_insensitive(double f, double y, double p, double *d)
{
    double r = f - y, e = fabs(r) - p;
    *d = e > 0.0 ? fr_sgn(r) : 0.0;
    return e > 0.0 ? e : 0.0;
}
static inline double fr_epsilon_insensitive_conj(double a, double y, double p)
{
    return fabs(a) <= 1.0 ? a * y + p * fabs(a) : INFINITY;
}
static inline double fr_epsilon_insensitive_curv(double f, double y, double p) { (void)f; (void)y; (void)p; return 0.0; }
FR_DERIVS_FROM_PARTS(fr_epsilon_insensitive)

/* 0.5 r^2 if |r| <= delta else delta (|r| - delta / 2), r = f - y, p = delta > 0 */
static inline double fr_huber(double f, double y, double p, double *d)
{
    double r = f - y, ar = fabs(r);
    *d = ar <= p ? r : p * fr_sgn(r);
    return ar <= p ? 0.5 * r * r : p * (ar - 0.5 * p);
}
static inline double fr_huber_conj(double a, double y, double p)
{
    return fabs(a) <= p ? a * y + 0.5 * a * a : INFINITY;
}
static inline double fr_huber_curv(double f, double y, double p) { return fabs(f - y) <= p ? 1.0 : 0.0; }
FR_DERIVS_FROM_PARTS(fr_huber)

/* exp(f) - y f, y >= 0 */
static inline double fr_poisson(double f, double y, double p, double *d)
{
    (void)p;
    double e = exp(f);
    *d = e - y;
    return e - y * f;
}
static inline double fr_poisson_conj(double a, double y, double p)
{
    (void)p;
    double s = a + y;
    return s >= 0.0 ? fr_xlogx(s) - s : INFINITY;
}
static inline double fr_poisson_curv(double f, double y, double p) { (void)y; (void)p; return exp(f); }
FR_DERIVS_FROM_PARTS(fr_poisson)

/* Smoothed hinge (Shalev-Shwartz & Zhang), p = gamma > 0:
 * 0 if z >= 1, 1 - z - gamma/2 if z <= 1 - gamma, (1 - z)^2 / (2 gamma) otherwise. */
static inline double fr_smoothed_hinge(double f, double y, double p, double *d)
{
    double z = y * f;
    if (z >= 1.0) { *d = 0.0; return 0.0; }
    if (z <= 1.0 - p) { *d = -y; return 1.0 - z - 0.5 * p; }
    *d = -y * (1.0 - z) / p;
    return 0.5 * (1.0 - z) * (1.0 - z) / p;
}
static inline double fr_smoothed_hinge_conj(double a, double y, double p)
{
    double s = -a * y;
    return (s >= 0.0 && s <= 1.0) ? -s + 0.5 * p * s * s : INFINITY;
}
static inline double fr_smoothed_hinge_curv(double f, double y, double p)
{
    double z = y * f;
    return (z < 1.0 && z > 1.0 - p) ? 1.0 / p : 0.0;
}
FR_DERIVS_FROM_PARTS(fr_smoothed_hinge)

/* Sum of c_i l(f_i, y_i) over i < n and g_i = c_i l'(f_i, y_i); c may be NULL
 * (all weights 1).  The switch runs once; each case is a plain loop.  A score that is
 * not finite (from a NaN or infinite weight) is an error even where the loss maps it to
 * a finite value (fmax(0, 1 - y f) is 0 for f = NaN). */
static inline int fr_loss_batch(int kind, double p, ptrdiff_t n, const double *f,
                                const double *y, const double *c, double *g,
                                double *value)
{
    double total = 0.0;
    int nonfinite = 0;
    ptrdiff_t i;
    switch (kind) {
#define FR_BATCH_CASE(ID, FN, NAME) \
    case ID: \
        for (i = 0; i < n; ++i) { \
            double d, v = FN(f[i], y[i], p, &d); \
            double w = c ? c[i] : 1.0; \
            total += w * v; \
            g[i] = w * d; \
            nonfinite |= !isfinite(f[i]); \
        } \
        break;
    FR_ALL_LOSSES(FR_BATCH_CASE)
#undef FR_BATCH_CASE
    default:
        return FR_ERR_BAD_LOSS;
    }
    *value = total;
    return isfinite(total) && !nonfinite ? FR_OK : FR_ERR_OVERFLOW;
}

/* Element-wise conjugate l*(a_i) into out (tests and dual objectives). */
static inline int fr_loss_conj_batch(int kind, double p, ptrdiff_t n, const double *a,
                                     const double *y, double *out)
{
    ptrdiff_t i;
    switch (kind) {
#define FR_CONJ_CASE(ID, FN, NAME) \
    case ID: \
        for (i = 0; i < n; ++i) out[i] = FN##_conj(a[i], y[i], p); \
        break;
    FR_ALL_LOSSES(FR_CONJ_CASE)
#undef FR_CONJ_CASE
    default:
        return FR_ERR_BAD_LOSS;
    }
    return FR_OK;
}

/* First and second derivatives for the Newton-type solvers: value = s sum c_i l(f_i, y_i),
 * d_i = l'(f_i, y_i) (unweighted: the dual point), g_i = s c_i l'(f_i, y_i) and
 * h_i = s c_i l''(f_i, y_i); c may be NULL (all weights 1).  A score that is not finite
 * is an error, as in fr_loss_batch. */
static inline int fr_loss_derivs_batch(int kind, double p, ptrdiff_t n, const double *f,
                                       const double *y, const double *c, double s,
                                       double *d, double *g, double *h, double *value)
{
    double total = 0.0;
    int nonfinite = 0;
    ptrdiff_t i;
    switch (kind) {
#define FR_DERIVS_CASE(ID, FN, NAME) \
    case ID: \
        for (i = 0; i < n; ++i) { \
            double di, hi, v = FN##_derivs(f[i], y[i], p, &di, &hi); \
            double w = c ? s * c[i] : s; \
            total += w * v; \
            d[i] = di; \
            g[i] = w * di; \
            h[i] = w * hi; \
            nonfinite |= !isfinite(f[i]); \
        } \
        break;
    FR_ALL_LOSSES(FR_DERIVS_CASE)
#undef FR_DERIVS_CASE
    default:
        return FR_ERR_BAD_LOSS;
    }
    *value = total;
    return isfinite(total) && !nonfinite ? FR_OK : FR_ERR_OVERFLOW;
}

/* l''(f, y) of one example (the generalized second derivative at kinks of l'; 0 for the
 * nonsmooth losses, whose l' is not differentiable: callers take smooth losses only). */
static inline double fr_loss_curv(int kind, double p, double f, double y)
{
    switch (kind) {
#define FR_CURV_CASE(ID, FN, NAME) \
    case ID: return FN##_curv(f, y, p);
    FR_ALL_LOSSES(FR_CURV_CASE)
#undef FR_CURV_CASE
    default: return 0.0;
    }
}

#endif
