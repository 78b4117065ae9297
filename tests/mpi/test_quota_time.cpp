// A chunk's time under a CPU quota (skeleton/mpi/src/quota_time.hpp, internal): without a quota it is the wall time
// given, and reads no clock; with one, the larger of the wall time and the CPU time of the stretches between mark()
// and add() over the quota (what happens outside them, the farming between two tasks, not counted). No MPI, no cgroup:
// the quota is given (tests/cgroup/chunk_times.cpp checks it under a real one).
#include "quota_time.hpp"

#include <gtest/gtest.h>

#include <ctime>

namespace {

using pfarm::detail::process_cpu_seconds;
using pfarm::detail::quota_time;

/// Spins until the process has used `seconds` more CPU.
void burn(double seconds) {
    volatile double x = 0.0;
    for (const double end = process_cpu_seconds() + seconds; process_cpu_seconds() < end;) x = x + 1.0;
}

TEST(QuotaTime, WithoutAQuotaTheWallTime) {
    quota_time q(0.0);
    EXPECT_FALSE(q.active());
    q.begin(), q.mark();
    burn(0.005);
    q.add();
    EXPECT_EQ(q.seconds(0.001), 0.001);
    EXPECT_FALSE(quota_time(-1.0).active());
}

TEST(QuotaTime, AtLeastTheCpuTimeOverTheQuota) {
    quota_time q(0.25);
    ASSERT_TRUE(q.active());
    q.begin(), q.mark();
    burn(0.01);
    q.add();
    // 10 ms of CPU at a quarter of a CPU: at least 40 ms, whatever wall time the chunk showed.
    EXPECT_GE(q.seconds(0.012), 0.04);
    EXPECT_LT(q.seconds(0.012), 1.0);
    // A wall time longer than that stays (the rank shared its quota, or waited).
    EXPECT_EQ(q.seconds(5.0), 5.0);
}

TEST(QuotaTime, OnlyTheMarkedStretchesCount) {
    quota_time q(0.5);
    q.begin();
    for (int task = 0; task < 2; ++task) {
        q.mark();
        burn(0.005);
        q.add();
        burn(0.05);  // between two tasks: not the chunk's
    }
    const double s = q.seconds(0.0);
    EXPECT_GE(s, 0.02);  // 10 ms over 0.5
    EXPECT_LT(s, 0.1);   // the 100 ms between the tasks, over 0.5, would be 0.2 s more
    q.begin();           // the next chunk counts from zero
    EXPECT_EQ(q.seconds(0.0), 0.0);
}

}  // namespace
