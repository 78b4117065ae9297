// The farm's clock (skeleton/mpi/src/clock.hpp, internal): it stays on CLOCK_MONOTONIC's time line, never goes
// back, follows a sleep, reads the TSC once its scale is known where the CPU allows it, and not with
// PFARM_CLOCK=monotonic; any other PFARM_CLOCK but tsc is an error naming it. No MPI: the clock is the engine's,
// but needs none.
#include "clock.hpp"

#include "pfarm/error.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace {

using pfarm::detail::farm_clock;
using pfarm::detail::monotonic_seconds;

/// Reads `clock` between two reads of CLOCK_MONOTONIC for `seconds`; returns how many reads fell outside
/// [before - slack, after + slack].
int outside(farm_clock& clock, double seconds, double slack) {
    int bad = 0;
    for (const double end = monotonic_seconds() + seconds; monotonic_seconds() < end;) {
        const double before = monotonic_seconds(), t = clock.now(), after = monotonic_seconds();
        if (t < before - slack || t > after + slack) ++bad;
    }
    return bad;
}

TEST(FarmClock, StaysOnTheMonotonicTimeLine) {
    farm_clock clock;
    // 50 ms of reads: the first millisecond measures the TSC's scale, then reads interpolate between anchors.
    EXPECT_EQ(outside(clock, 0.05, 5e-6), 0);
    if (farm_clock::tsc_allowed()) EXPECT_EQ(clock.from(), farm_clock::source::tsc) << "the TSC is allowed but unused";
    else EXPECT_EQ(clock.from(), farm_clock::source::monotonic);
}

TEST(FarmClock, NeverGoesBack) {
    farm_clock clock;
    double last = clock.now();
    int back = 0;
    for (int i = 0; i < 2000000; ++i) {
        const double t = clock.now();
        back += t < last;
        last = t;
    }
    EXPECT_EQ(back, 0);
}

TEST(FarmClock, FollowsASleep) {
    farm_clock clock;
    (void)outside(clock, 0.003, 1.0);  // past the first anchors: the TSC's scale is known where it is allowed
    for (int i = 0; i < 3; ++i) {
        const double m0 = monotonic_seconds(), c0 = clock.now();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const double c1 = clock.now(), m1 = monotonic_seconds();
        EXPECT_NEAR(c1 - c0, m1 - m0, 1e-5);  // the read after a long idle is a fresh anchor
        EXPECT_EQ(outside(clock, 0.002, 5e-6), 0);
    }
}

TEST(FarmClock, MonotonicOnlyWhenAsked) {
    ASSERT_EQ(setenv("PFARM_CLOCK", "monotonic", 1), 0);
    farm_clock clock;
    EXPECT_EQ(outside(clock, 0.005, 0.0), 0);  // every read is CLOCK_MONOTONIC itself
    EXPECT_EQ(clock.from(), farm_clock::source::monotonic);
    EXPECT_FALSE(farm_clock::tsc_allowed());
    unsetenv("PFARM_CLOCK");
}

TEST(FarmClock, AnUnknownChoiceIsAnError) {
    EXPECT_NO_THROW(pfarm::detail::check_clock_choice());  // unset
    for (const char* good : {"monotonic", "tsc"}) {
        ASSERT_EQ(setenv("PFARM_CLOCK", good, 1), 0);
        EXPECT_NO_THROW(pfarm::detail::check_clock_choice()) << good;
    }
    ASSERT_EQ(setenv("PFARM_CLOCK", "rdtsc", 1), 0);
    try {
        pfarm::detail::check_clock_choice();
        ADD_FAILURE() << "no exception";
    } catch (const pfarm::invalid_argument& e) {
        EXPECT_EQ(e.argument(), "PFARM_CLOCK");
        EXPECT_NE(e.message().find("'rdtsc'"), std::string::npos) << e.what();
    }
    unsetenv("PFARM_CLOCK");
}

}  // namespace
