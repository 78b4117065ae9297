// pfarm MPI engine: the farm's clock's anchors, and whether the TSC may be used at all (clock.hpp).
#include "clock.hpp"

#include "pfarm/error.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace pfarm::detail {

namespace {

/// About this long between anchors (seconds): the longest a read is the TSC's alone.
constexpr double anchor_interval = 1e-3;
/// An anchor that finds the TSC's prediction further than this from CLOCK_MONOTONIC ends the TSC's use on the thread
/// (seconds, plus `relative_tolerance` of the time since the last anchor: the scale's own error over a long idle
/// stretch; an anchor puts the clock back on CLOCK_MONOTONIC anyway, so a generous bound costs nothing).
constexpr double tolerance = 2e-6, relative_tolerance = 1e-3;

#if defined(__x86_64__)
/// A (CLOCK_MONOTONIC, TSC) pair read together: `seconds` always, and `ticks` the TSC half-way through the
/// clock_gettime call of the tightest of a few tries. False when no try was tight (its two TSC reads a microsecond or
/// more apart: preempted), or the TSC went backwards inside every try: such a pair is no anchor.
bool read_pair(double& seconds, std::uint64_t& ticks) {
    std::uint64_t best = ~std::uint64_t{0};
    for (int attempt = 0; attempt < 4; ++attempt) {
        const std::uint64_t before = __rdtsc();
        const double s = monotonic_seconds();
        const std::uint64_t after = __rdtsc();
        if (after >= before && after - before < best) {
            best = after - before;
            seconds = s;
            ticks = before + (after - before) / 2;
            if (best < 2000) return true;  // well under a microsecond at any TSC rate of today
        }
    }
    if (best == ~std::uint64_t{0}) seconds = monotonic_seconds();
    return false;
}
#endif

}  // namespace

void check_clock_choice() {
    const char* choice = std::getenv("PFARM_CLOCK");
    if (!choice || std::strcmp(choice, "monotonic") == 0 || std::strcmp(choice, "tsc") == 0) return;
    throw invalid_argument("PFARM_CLOCK", "is '" + std::string(choice) +
                                              "'; expected monotonic (never the TSC) or tsc (the default: the TSC where "
                                              "the CPU has an invariant one)");
}

bool farm_clock::tsc_allowed() {
#if defined(__x86_64__)
    // An invariant TSC (CPUID 0x80000007, EDX bit 8): it ticks at one rate whatever the core's frequency or sleep state.
    if (const char* choice = std::getenv("PFARM_CLOCK"); choice && std::strcmp(choice, "monotonic") == 0) return false;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return false;
    if (!__get_cpuid(0x80000007u, &a, &b, &c, &d)) return false;
    return (d & (1u << 8)) != 0;
#else
    return false;
#endif
}

double farm_clock::anchor() {
#if defined(__x86_64__)
    if (source_ == source::monotonic) return not_before(monotonic_seconds());
    if (source_ == source::undecided) {
        if (!tsc_allowed()) {
            source_ = source::monotonic;
            return not_before(monotonic_seconds());
        }
        source_ = source::measuring;  // first_ticks_ 0: no first anchor yet
    }
    double seconds = 0.0;
    std::uint64_t ticks = 0;
    if (!read_pair(seconds, ticks)) return not_before(seconds);  // preempted: the next read tries again
    if (first_ticks_ == 0) {
        first_seconds_ = anchor_seconds_ = seconds, first_ticks_ = anchor_ticks_ = ticks;
        return not_before(seconds);
    }
    if (ticks <= anchor_ticks_) {  // the TSC stood still or went backwards: not a clock to time chunks with
        source_ = source::monotonic;
        return not_before(seconds);
    }
    if (source_ == source::tsc) {  // where the TSC would have put this instant, against CLOCK_MONOTONIC
        const double predicted = anchor_seconds_ + static_cast<double>(ticks - anchor_ticks_) * seconds_per_tick_;
        if (std::abs(predicted - seconds) > tolerance + relative_tolerance * (seconds - anchor_seconds_)) {
            source_ = source::monotonic;
            return not_before(seconds);
        }
    }
    if (seconds - first_seconds_ >= anchor_interval) {  // the scale over the whole span so far
        seconds_per_tick_ = (seconds - first_seconds_) / static_cast<double>(ticks - first_ticks_);
        interval_ticks_ = static_cast<std::uint64_t>(anchor_interval / seconds_per_tick_);
        source_ = source::tsc;
    }
    anchor_seconds_ = seconds, anchor_ticks_ = ticks;
    return not_before(seconds);
#else
    source_ = source::monotonic;
    return not_before(monotonic_seconds());
#endif
}

}  // namespace pfarm::detail
