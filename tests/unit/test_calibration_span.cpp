// The calibration span (farmer.hpp "Calibration span", docs/calibration.md): each worker calibrates on growing
// chunks until their compute time adds up to the span, so that a CPU quota whose slice lets a short task run at full
// speed is seen; none of it changes a farm without a span; af and awf-b start from such a calibration.
#include "pfarm/error.hpp"
#include "pfarm/farmer.hpp"
#include "pfarm/registry.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace {

/// A worker under a CPU quota of `quota` cores enforced every `period` seconds (cgroup cfs): it runs at full speed
/// (`per_task` seconds a task) for quota x period of each period, then waits for the next. Wall time of a chunk.
struct quota_worker {
    double per_task = 1e-3;
    double quota = 1.0;
    double period = 0.1;
    double clock = 0.0;  ///< its wall clock; its quota slice restarts at each multiple of `period`
    double run(pfarm::task_count count) {
        if (quota >= 1.0) {  // no quota: exact arithmetic
            clock += per_task * static_cast<double>(count);
            return per_task * static_cast<double>(count);
        }
        const double start = clock;
        double work = per_task * static_cast<double>(count);
        while (work > 0.0) {
            const double period_start = std::floor(clock / period + 1e-12) * period;
            const double slice_end = period_start + quota * period;
            if (clock >= slice_end - 1e-15) {
                clock = period_start + period;
                continue;
            }
            const double step = std::min(work, slice_end - clock);
            clock += step;
            work -= step;
        }
        return clock - start;
    }
};

/// Runs the calibration of farmer `f` with the workers taking turns; returns each worker's calibration chunk sizes.
std::vector<std::vector<pfarm::task_count>> calibrate(pfarm::farmer& f, std::vector<quota_worker>& w) {
    std::vector<std::vector<pfarm::task_count>> sizes(w.size());
    std::vector<bool> done(w.size(), false);
    for (int guard = 0; f.calibrating() && guard < 10000; ++guard)
        for (std::size_t i = 0; i < w.size() && f.calibrating(); ++i) {
            if (done[i]) continue;
            const pfarm::decision d = f.request(static_cast<int>(i));
            if (d.what != pfarm::decision::kind::assign || !d.calibration) {
                done[i] = true;  // calibrated: it waits for the barrier, or its request passed it (its first chunk)
                if (d.what == pfarm::decision::kind::assign) f.complete(static_cast<int>(i), w[i].run(d.work.count));
                continue;
            }
            sizes[i].push_back(d.work.count);
            f.complete(static_cast<int>(i), w[i].run(d.work.count));
        }
    EXPECT_FALSE(f.calibrating());
    return sizes;
}

TEST(CalibrationSpan, NoneIsOneTaskPerWorkerAsBefore) {
    pfarm::farmer f(1000, 2, pfarm::make_technique("multi", {}, 2));
    EXPECT_EQ(f.calibration_span(), 0.0);
    std::vector<quota_worker> w{{1e-3, 1.0}, {1e-3, 0.2}};
    const auto sizes = calibrate(f, w);
    EXPECT_EQ(sizes, (std::vector<std::vector<pfarm::task_count>>{{1}, {1}}));
    ASSERT_TRUE(f.calibration());
    EXPECT_DOUBLE_EQ(f.calibration()->times[0], 1e-3);  // the one task's time, exactly
    EXPECT_DOUBLE_EQ(f.calibration()->fitness[1], 0.5);  // a 1 ms task runs inside the 20 ms slice: blind to the quota
    EXPECT_EQ(f.calibration()->span, 0.0);
}

TEST(CalibrationSpan, GrowsEachWorkersChunksUntilItsTimeReachesTheSpan) {
    // Times in 1/1024 s, exact in binary: 1 and 4 units a task, a span of 256 units.
    const double unit = 1.0 / 1024;
    pfarm::farmer f(100000, 2, pfarm::make_technique("multi", {}, 2), 1, 1, false, false, nullptr, 256 * unit);
    std::vector<quota_worker> w{{unit, 1.0}, {4 * unit, 1.0}};
    const auto sizes = calibrate(f, w);
    // Doubling while its pace says more are needed, then what reaches the span at that pace: worker 0 has 255 units
    // after 1 + 2 + ... + 128 tasks and needs 1 more; worker 1 has 124 after 31 tasks, its pace asks for 33 and
    // doubling allows 32, which leave it 1 task short. Worker 1 reaches the span first: while worker 0 calibrates it
    // gets a chunk of a quarter of the span at its pace (64 units, 16 tasks), not counted in its calibration.
    EXPECT_EQ(sizes[0], (std::vector<pfarm::task_count>{1, 2, 4, 8, 16, 32, 64, 128, 1}));
    EXPECT_EQ(sizes[1], (std::vector<pfarm::task_count>{1, 2, 4, 8, 16, 32, 1, 16}));
    EXPECT_EQ(f.calibration_tasks(0), 256);
    EXPECT_EQ(f.calibration_tasks(1), 64);
    ASSERT_TRUE(f.calibration());
    EXPECT_EQ(f.calibration()->times[0], unit);  // seconds per task over its calibration chunks
    EXPECT_EQ(f.calibration()->times[1], 4 * unit);
    EXPECT_NEAR(f.calibration()->fitness[0], 0.8, 1e-12);
    EXPECT_EQ(f.calibration()->span, 0.25);
    EXPECT_EQ(f.remaining(), 100000 - 336);
}

TEST(CalibrationSpan, SeesACpuQuotaThatOneShortTaskCannot) {
    // Quotas 0.8 and 0.2 of a core, 100 ms periods, 0.4 ms tasks (Mandelbrot's columns on the emulated cluster).
    pfarm::farmer f(20000, 2, pfarm::make_technique("multi", {}, 2), 1, 1, false, false, nullptr, 0.2);
    std::vector<quota_worker> w{{4e-4, 0.8}, {4e-4, 0.2}};
    calibrate(f, w);
    ASSERT_TRUE(f.calibration());
    // Speeds 4 to 1: F near 0.8 and 0.2 (one period's phase is the error left).
    EXPECT_NEAR(f.calibration()->fitness[0], 0.8, 0.06);
    EXPECT_NEAR(f.calibration()->fitness[1], 0.2, 0.06);
}

TEST(CalibrationSpan, TakesAtMostHalfTheLoop) {
    // 50 calibration tasks in all at most, however short they are; each worker takes them at its own pace.
    pfarm::farmer f(100, 2, pfarm::make_technique("dealdyn-sm", {}, 2), 1, 1, false, false, nullptr, 10.0);
    std::vector<quota_worker> w{{1e-3, 1.0}, {2e-3, 1.0}};
    const auto sizes = calibrate(f, w);
    EXPECT_EQ(f.calibration_tasks(0) + f.calibration_tasks(1), 50);
    EXPECT_EQ(sizes[0], (std::vector<pfarm::task_count>{1, 2, 4, 8, 16}));
    EXPECT_EQ(sizes[1], (std::vector<pfarm::task_count>{1, 2, 4, 8, 4}));  // the last: what the budget held
    ASSERT_TRUE(f.calibration());
    EXPECT_NEAR(f.calibration()->fitness[0], 2.0 / 3.0, 1e-12);
    // Fewer tasks than twice the workers: one each, as without a span.
    pfarm::farmer g(3, 2, pfarm::make_technique("dealdyn-sm", {}, 2), 1, 1, false, false, nullptr, 10.0);
    std::vector<quota_worker> v{{1e-3, 1.0}, {1e-3, 1.0}};
    EXPECT_EQ(calibrate(g, v), (std::vector<std::vector<pfarm::task_count>>{{1}, {1}}));
}

TEST(CalibrationSpan, AdaptiveTechniquesStartFromItsMeasurements) {
    for (const char* name : {"af", "awf-b"}) {
        SCOPED_TRACE(name);
        // Without a span they do not calibrate: their first chunks are equal whatever the workers.
        pfarm::farmer plain(20000, 2, pfarm::make_technique(name, {}, 2));
        EXPECT_FALSE(plain.calibrating());
        EXPECT_EQ(plain.request(0).work.count, plain.request(1).work.count);
        // With one, the quota-limited worker's first chunk is well below the other's (awf-b: weights 1.6 and 0.4,
        // a quarter; af: the fast one's is capped at R/(2p), the slow one's 0.2 of what is left then, 0.6).
        pfarm::farmer f(20000, 2, pfarm::make_technique(name, {}, 2), 1, 1, false, false, nullptr, 0.2);
        EXPECT_TRUE(f.calibrating());
        std::vector<quota_worker> w{{4e-4, 0.8}, {4e-4, 0.2}};
        calibrate(f, w);
        ASSERT_TRUE(f.calibration());
        const double fast = static_cast<double>(f.request(0).work.count);
        const double slow = static_cast<double>(f.request(1).work.count);
        EXPECT_LT(slow / fast, 0.7);
    }
}

TEST(CalibrationSpan, IgnoredByAHierarchicalMastersPool) {
    pfarm::farmer f(100, 2, pfarm::make_technique("af", {}, 2), 1, 1, false, true, nullptr, 0.2);
    EXPECT_EQ(f.calibration_span(), 0.0);
    EXPECT_FALSE(f.calibrating());  // af calibrates only under a span
}

TEST(CalibrationSpan, BadSpansAreErrorsNamingIt) {
    for (double bad : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
        try {
            pfarm::farmer f(100, 2, pfarm::make_technique("multi", {}, 2), 1, 1, false, false, nullptr, bad);
            ADD_FAILURE() << "no exception for " << bad;
        } catch (const pfarm::invalid_argument& e) {
            EXPECT_EQ(e.argument(), "calibration_span");
        }
    }
}

}  // namespace
