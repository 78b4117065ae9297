// Binomial variates from pfarm-calcium's own counter-based uniforms: inversion for small means, BTRS otherwise
// (binomial.hpp).
#include "pfarm/calcium/binomial.hpp"

#include <cmath>

namespace pfarm::calcium {

double stirling_tail(double k) {
    // log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi)/2] for k = 0..9 (checked against lgamma in the
    // unit tests); beyond, the asymptotic series 1/12 - 1/360 + 1/1260 in powers of 1/(k + 1).
    static constexpr double small[] = {0.0810614667953272,  0.0413406959554092,  0.0276779256849983,
                                       0.02079067210376509, 0.0166446911898211,  0.0138761288230707,
                                       0.0118967099458917,  0.0104112652619720,  0.00925546218271273,
                                       0.00833056343336287};
    if (k <= 9.0) return small[static_cast<int>(k)];
    const double kp1 = k + 1.0, kp1sq = kp1 * kp1;
    return (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / 1260.0 / kp1sq) / kp1sq) / kp1;
}

namespace {

/// Inversion (BINV of Kachitvichyanukul & Schmeiser 1988) for p <= 1/2 and small n p.
std::uint64_t binomial_inversion(std::uint64_t n, double p, uniform_stream& uniforms) {
    const double q = 1.0 - p, s = p / q, a = (static_cast<double>(n) + 1.0) * s;
    const double r0 = std::exp(static_cast<double>(n) * std::log1p(-p));
    for (;;) {
        double u = uniforms.next(), r = r0;
        std::uint64_t x = 0;
        while (u > r) {
            u -= r;
            ++x;
            if (x > n) break;  // rounding left a sliver of u beyond the total mass: draw again
            r *= a / static_cast<double>(x) - s;
        }
        if (x <= n) return x;
    }
}

/// BTRS for p <= 1/2 and n p >= 10.
std::uint64_t binomial_btrs(std::uint64_t n, double p, uniform_stream& uniforms) {
    const double nd = static_cast<double>(n), q = 1.0 - p;
    const double spq = std::sqrt(nd * p * q);
    const double b = 1.15 + 2.53 * spq;
    const double a = -0.0873 + 0.0248 * b + 0.01 * p;
    const double c = nd * p + 0.5;
    const double alpha = (2.83 + 5.1 / b) * spq;
    const double v_r = 0.92 - 4.2 / b;
    const double r = p / q;
    const double m = std::floor((nd + 1.0) * p);
    for (;;) {
        const double u = uniforms.next() - 0.5;
        double v = uniforms.next();
        const double us = 0.5 - std::fabs(u);
        if (us <= 0.0) continue;
        const double k = std::floor((2.0 * a / us + b) * u + c);
        if (k < 0.0 || k > nd) continue;
        if (us >= 0.07 && v <= v_r) return static_cast<std::uint64_t>(k);
        if (v <= 0.0) return static_cast<std::uint64_t>(k);  // log(0) = -inf lies under any bound
        v = std::log(v * alpha / (a / (us * us) + b));
        const double bound = (m + 0.5) * std::log((m + 1.0) / (r * (nd - m + 1.0))) +
                             (nd + 1.0) * std::log((nd - m + 1.0) / (nd - k + 1.0)) +
                             (k + 0.5) * std::log(r * (nd - k + 1.0) / (k + 1.0)) + stirling_tail(m) +
                             stirling_tail(nd - m) - stirling_tail(k) - stirling_tail(nd - k);
        if (v <= bound) return static_cast<std::uint64_t>(k);
    }
}

}  // namespace

std::uint64_t binomial(std::uint64_t n, double p, uniform_stream& uniforms) {
    if (!(p > 0.0) || n == 0) return 0;  // NaN lands here too
    if (p >= 1.0) return n;
    if (p > 0.5) return n - binomial(n, 1.0 - p, uniforms);
    if (static_cast<double>(n) * p < 10.0) return binomial_inversion(n, p, uniforms);
    return binomial_btrs(n, p, uniforms);
}

}  // namespace pfarm::calcium
