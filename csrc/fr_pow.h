/* x^a for one fixed exponent a and many x > 0: table-driven, cheaper than
 * exp(a log x) (a table lookup and a short series instead of two transcendental
 * calls) and more accurate (a few ulps; exp(a log x) loses |a log x| ulps).
 *
 * Used by the PGS kernel (csrc/_pgs.pyx) for phi(theta_j) = |theta_j|^{q-1}
 * once per updated coordinate (docs/math.md §5).
 *
 * Write x = 2^e m with m in [1, 2), and let c_i = 1 + (i + 1/2) / FR_POW_M be
 * the centre of the sub-interval of m (i = the top FR_POW_BITS bits of m's
 * mantissa).  With r = (m - c_i) / c_i, |r| < 2^-(FR_POW_BITS + 1):
 *
 *     x^a = 2^{e a} * c_i^a * (1 + r)^a,
 *     (1 + r)^a = sum_k binom(a, k) r^k   (binomial series, FR_POW_DEGREE terms).
 *
 * 2^{e a} (for |e| <= FR_POW_EXP) and c_i^a are tabulated by fr_pow_init with
 * libm's pow; m - c_i is exact (both in [1, 2) on the same 2^-52 grid).  The
 * series is cut after r^6: the first omitted term is at most
 * |binom(a, 7)| 2^-63, which fr_pow_init checks is below 2^-55 (true for
 * a <= ~11, i.e. p >= ~1.09 in PGS); otherwise, and for x outside
 * [2^-FR_POW_EXP, 2^FR_POW_EXP) (subnormals, inf, nan included), fr_pow falls
 * back to exp(a log x).
 */
#ifndef FR_POW_H
#define FR_POW_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define FR_POW_BITS 8
#define FR_POW_M (1 << FR_POW_BITS)
#define FR_POW_EXP 64
#define FR_POW_DEGREE 6

typedef struct {
    double a;
    int series_ok;                      /* truncation error below 2^-55 */
    unsigned e_span;                    /* table path for 0 <= e + FR_POW_EXP < e_span */
    double binom[FR_POW_DEGREE + 1];    /* binom(a, k), k = 0..6 */
    double c_tab[FR_POW_M][2];          /* c_i^a and 1 / c_i */
    double two_pow[2 * FR_POW_EXP];     /* 2^{e a}, e = -FR_POW_EXP .. FR_POW_EXP - 1 */
} fr_pow_t;

static void fr_pow_init(fr_pow_t *P, double a)
{
    /* a = a_hi + a_lo with a_hi on a 2^-20 grid, so e * a_hi is exact and
     * 2^{e a} = 2^{e a_hi} 2^{e a_lo} carries no error from rounding e * a. */
    double a_hi = ldexp(nearbyint(ldexp(a, 20)), -20), a_lo = a - a_hi, b = 1.0;
    int k, i, e;
    P->a = a;
    for (k = 0; k <= FR_POW_DEGREE; k++) {
        P->binom[k] = b;
        b *= (a - k) / (k + 1);
    }
    P->series_ok = fabs(b) <= 256.0;    /* |binom(a, 7)| 2^-63 <= 2^-55 */
    P->e_span = P->series_ok ? 2 * FR_POW_EXP : 0;
    for (i = 0; i < FR_POW_M; i++) {
        double c = 1.0 + (i + 0.5) / FR_POW_M;
        P->c_tab[i][0] = pow(c, a);
        P->c_tab[i][1] = 1.0 / c;
    }
    for (e = -FR_POW_EXP; e < FR_POW_EXP; e++)
        P->two_pow[e + FR_POW_EXP] = pow(2.0, e * a_hi) * pow(2.0, e * a_lo);
}

/* x^a for x >= 0 and a > 0 (see the header comment; 0^a = 0 via the fallback). */
static inline double fr_pow(const fr_pow_t *P, double x)
{
    uint64_t bits, m_bits, c_bits;
    double m, c, r, s;
    int e, i, k;
    memcpy(&bits, &x, sizeof bits);
    e = (int)(bits >> 52) - 1023;
    if ((unsigned)(e + FR_POW_EXP) >= P->e_span)
        return exp(P->a * log(x));
    i = (int)((bits >> (52 - FR_POW_BITS)) & (FR_POW_M - 1));
    m_bits = (bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
    /* c_i: m's top FR_POW_BITS mantissa bits followed by 1 0 0 ... (the centre) */
    c_bits = (m_bits & ~((1ULL << (52 - FR_POW_BITS)) - 1)) | (1ULL << (51 - FR_POW_BITS));
    memcpy(&m, &m_bits, sizeof m);
    memcpy(&c, &c_bits, sizeof c);
    r = (m - c) * P->c_tab[i][1];
    s = P->binom[FR_POW_DEGREE];
    for (k = FR_POW_DEGREE - 1; k >= 0; k--)
        s = s * r + P->binom[k];
    return P->two_pow[e + FR_POW_EXP] * P->c_tab[i][0] * s;
}

#endif
