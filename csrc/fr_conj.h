/* Closed-form conjugate (link) maps of the regularizers (docs/math.md §5, §6).
 *
 * Omega = ||w||_1, elastic net and ||w||_p^2 / (2(p-1)) enter the solvers
 * through three maps, each returning a norm of its output so that callers
 * never need a second pass:
 *
 *   fr_shrink:   out = scale * S_t(v),  S_t(v)_i = sgn(v_i) max(|v_i| - t, 0)
 *                (soft-threshold: prox of t||.||_1; elastic-net prox and
 *                conjugate gradient are the same map with another scale);
 *   fr_lp_link:  out = grad(||u||_r^2 / 2) = ||u||_r^{2-r} |u_i|^{r-1} sgn(u_i),
 *                whose inverse is the same map with the dual exponent
 *                r' = r / (r - 1) (fr_lp_link_inverse);
 *   fr_lp_prox_coords: the coordinate equations of the Lp prox.
 *
 * Vectors are double (weights are always float64).  Norms are computed
 * relative to max |u_i| so that no power over- or underflows.
 */
#ifndef FR_CONJ_H
#define FR_CONJ_H

#include <math.h>
#include <stddef.h>

/* max_i |u_i| (0 for n = 0). */
static inline double fr_norm_inf(ptrdiff_t n, const double *u)
{
    double m = 0.0;
    for (ptrdiff_t i = 0; i < n; ++i) {
        double a = fabs(u[i]);
        if (a > m) m = a;
    }
    return m;
}

/* ||u||_r for r >= 1, as m * (sum (|u_i|/m)^r)^(1/r) with m = max |u_i|. */
static inline double fr_norm(ptrdiff_t n, const double *u, double r)
{
    double m = fr_norm_inf(n, u), s = 0.0;
    if (m == 0.0 || !isfinite(m)) return m;
    if (r == 2.0) {
        for (ptrdiff_t i = 0; i < n; ++i) { double a = u[i] / m; s += a * a; }
        return m * sqrt(s);
    }
    if (r == 1.0) {
        for (ptrdiff_t i = 0; i < n; ++i) s += fabs(u[i]);
        return s;
    }
    for (ptrdiff_t i = 0; i < n; ++i) s += pow(fabs(u[i]) / m, r);
    return m * pow(s, 1.0 / r);
}

/* S_t(x) = sgn(x) max(|x| - t, 0), t >= 0: the prox of t |.| (the one soft-threshold of
 * the C code; fastrisk.regularizers.soft_threshold is its Python face). */
static inline double fr_soft_threshold(double x, double t)
{
    return x > t ? x - t : (x < -t ? x + t : 0.0);
}

/* out = scale * S_t(v) (out may alias v); returns ||out||_2^2. */
static inline double fr_shrink(ptrdiff_t n, const double *v, double t, double scale, double *out)
{
    double sq = 0.0;
    for (ptrdiff_t i = 0; i < n; ++i) {
        double o = scale * fr_soft_threshold(v[i], t);
        out[i] = o;
        sq += o * o;
    }
    return sq;
}

/* out = grad(||u||_r^2 / 2), r > 1 (out may alias u); returns ||u||_r, which
 * equals ||out||_{r'} with 1/r + 1/r' = 1.  Written as
 * out_i = N (|u_i| / N)^{r-1} sgn(u_i), N = ||u||_r, so every power has a
 * base in [0, 1]. */
static inline double fr_lp_link(ptrdiff_t n, const double *u, double r, double *out)
{
    double N = fr_norm(n, u, r);
    if (r == 2.0) {                               /* the identity, exactly */
        for (ptrdiff_t i = 0; i < n; ++i) out[i] = u[i];
        return N;
    }
    for (ptrdiff_t i = 0; i < n; ++i) {
        double a = fabs(u[i]);
        double o = N > 0.0 ? N * pow(a / N, r - 1.0) : 0.0;
        out[i] = u[i] < 0.0 ? -o : o;
    }
    return N;
}

/* Inverse of fr_lp_link(., r): the link of the dual exponent r / (r - 1). */
static inline double fr_lp_link_inverse(ptrdiff_t n, const double *w, double r, double *out)
{
    return fr_lp_link(n, w, r / (r - 1.0), out);
}

/* Coordinates of the Lp prox for a fixed multiplier lam >= 0 and 1 < p <= 2:
 * x_i = sgn(a_i) s_i^{1/(p-1)} where s_i >= 0 solves the convex increasing
 * equation  s^{1/(p-1)} + lam s = |a_i|  (i.e. x + lam x^{p-1} = |a_i|).
 * Newton from the right (s0 = min(|a|^{p-1}, |a|/lam), where the left side
 * is >= |a|) decreases monotonically to the root.  Returns ||x||_p. */
static inline double fr_lp_prox_coords(ptrdiff_t n, const double *a, double lam, double p,
                                       double *out)
{
    double k = 1.0 / (p - 1.0);
    for (ptrdiff_t i = 0; i < n; ++i) {
        double b = fabs(a[i]), x;
        if (b == 0.0 || lam == 0.0) {
            x = b;
        } else {
            double s = pow(b, p - 1.0);
            if (b / lam < s) s = b / lam;
            for (int it = 0; it < 100; ++it) {
                double sk1 = pow(s, k - 1.0);
                double g = sk1 * s + lam * s - b;
                double step = g / (k * sk1 + lam);
                if (!(step > 1e-16 * s)) break;   /* converged (or g <= 0 by rounding) */
                s -= step;
            }
            x = pow(s, k);
        }
        out[i] = a[i] < 0.0 ? -x : x;
    }
    return fr_norm(n, out, p);
}

#endif
