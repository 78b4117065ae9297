// pfarm MPI engine, internal: the farm's clock, seconds on CLOCK_MONOTONIC's time line (docs/skeleton.md "The
// farm's clock"). A worker reads it twice per chunk, on the round trip's path, so a read must be cheap: where the
// CPU has an invariant TSC (x86-64), a read is the TSC scaled from an anchor, a (CLOCK_MONOTONIC, TSC) pair taken
// again whenever about a millisecond has passed since the last one (a fraction of a clock_gettime call's cost). The
// scale is measured, never assumed: from the thread's first anchor to its latest,
// so it sharpens as the run goes on. Every read is clock_gettime until the scale is known (the first millisecond),
// and for good once an anchor finds the TSC off the time line by more than its tolerance (a TSC not synchronised
// across the cores a thread moved between, a VM moved to another host), or with PFARM_CLOCK=monotonic. A read is
// never earlier than the thread's previous one, and is off CLOCK_MONOTONIC by at most the drift over one anchor
// interval (a microsecond or so), whatever the TSC does. Not installed; tests/mpi/test_clock.cpp includes it.
#pragma once

#include <cstdint>
#include <ctime>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace pfarm::detail {

/// CLOCK_MONOTONIC in seconds (the vDSO).
inline double monotonic_seconds() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

class farm_clock {
public:
    enum class source { undecided, measuring, tsc, monotonic };

    /// Seconds on CLOCK_MONOTONIC's time line; never less than this object's previous read.
    double now() {
#if defined(__x86_64__)
        if (source_ == source::tsc) {
            const std::uint64_t since = __rdtsc() - anchor_ticks_;  // unsigned: a TSC gone backwards reads huge
            if (since < interval_ticks_) [[likely]]  // below 2^63: converted as signed, one instruction
                return not_before(anchor_seconds_ + static_cast<double>(static_cast<std::int64_t>(since)) * seconds_per_tick_);
        }
#endif
        return anchor();
    }

    /// Where its reads come from now (tests, and the benchmark's clock line).
    source from() const noexcept { return source_; }
    /// Whether this CPU and the environment let the TSC be used: an invariant TSC on x86-64, and not
    /// PFARM_CLOCK=monotonic (read at a clock's first read).
    static bool tsc_allowed();

private:
    double anchor();  ///< clock_gettime, and with the TSC a new anchor (clock.cpp)
    double not_before(double seconds) {
        if (seconds < last_) seconds = last_;
        last_ = seconds;
        return seconds;
    }

    source source_ = source::undecided;
    std::uint64_t first_ticks_ = 0, anchor_ticks_ = 0, interval_ticks_ = 0;
    double first_seconds_ = 0.0, anchor_seconds_ = 0.0, seconds_per_tick_ = 0.0, last_ = 0.0;
};

/// PFARM_CLOCK, when set, must name a source: "monotonic" (never the TSC) or "tsc" (the TSC where the CPU allows it,
/// as when unset); else invalid_argument naming PFARM_CLOCK (the farm's setup checks it, so no value is ignored).
void check_clock_choice();

/// The farm's clock: every rank's engine reads this, one clock per thread, and setup measures the ranks' offsets
/// with it (clock_offsets), so ranks' clocks are never assumed equal.
inline constinit thread_local farm_clock the_farm_clock{};
inline double now() { return the_farm_clock.now(); }

}  // namespace pfarm::detail
