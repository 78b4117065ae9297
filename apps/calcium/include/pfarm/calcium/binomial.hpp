// Binomial variates computed by pfarm's own code (not <random>, whose algorithms differ between standard
// libraries), so that a population update is reproducible everywhere from the same uniforms.
#pragma once

#include "pfarm/calcium/philox.hpp"

#include <cstdint>

namespace pfarm::calcium {

/// A Binomial(n, p) variate drawn from `uniforms`. For min(p, 1-p) * n < 10: inversion (a walk up the
/// cumulative distribution, one uniform); otherwise Hormann's BTRS transformed rejection with squeeze
/// ("The generation of binomial random variates", J. Stat. Comput. Simul. 46, 1993), two uniforms per try.
/// p outside [0, 1] is clamped; n = 0 or p = 0 gives 0, p = 1 gives n.
std::uint64_t binomial(std::uint64_t n, double p, uniform_stream& uniforms);

/// The Stirling series tail log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi)/2] that BTRS uses.
double stirling_tail(double k);

}  // namespace pfarm::calcium
