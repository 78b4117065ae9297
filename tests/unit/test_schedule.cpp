// pfarm::schedule, the schedule that learns across calls (pfarm/schedule.hpp): nothing to start from before a
// calibrating call; afterwards F follows the measured times per task; a worker with no task keeps a share;
// recalibrate(), another worker count or calibration mode, and a technique that does not calibrate all mean
// "calibrate"; the farmer starts from a learned calibration with no calibration tasks.
#include "pfarm/farmer.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/schedule.hpp"

#include <gtest/gtest.h>

namespace {

TEST(Schedule, LearnsTimesPerTaskAndStartsFromThem) {
    pfarm::schedule s;
    EXPECT_FALSE(s.start(pfarm::calibration_mode::times_only, 3, 100));
    s.learn(pfarm::calibration_mode::times_only, true, {10, 20, 0}, {1.0, 1.0, 0.0});  // 0.1 s, 0.05 s, no task
    ASSERT_TRUE(s.learned());
    EXPECT_DOUBLE_EQ(s.seconds_per_task()[0], 0.1);
    EXPECT_DOUBLE_EQ(s.seconds_per_task()[1], 0.05);
    EXPECT_DOUBLE_EQ(s.seconds_per_task()[2], 0.1);  // never measured: as slow as the slowest
    const auto c = s.start(pfarm::calibration_mode::times_only, 3, 100);
    ASSERT_TRUE(c);
    EXPECT_NEAR(c->fitness[1], 2.0 * c->fitness[0], 1e-12);  // twice as fast, twice the share
    EXPECT_GT(c->fitness[2], 0.0);
    EXPECT_EQ(s.calibrated_calls(), 1);
}

TEST(Schedule, CalibratesAgainWhenAskedOrWhenTheRunChanges) {
    pfarm::schedule s;
    s.learn(pfarm::calibration_mode::times_only, true, {5, 5}, {1.0, 2.0});
    EXPECT_FALSE(s.start(pfarm::calibration_mode::times_only, 3, 50));   // another worker count
    EXPECT_FALSE(s.start(pfarm::calibration_mode::univariate, 2, 50));   // another calibration mode
    EXPECT_FALSE(s.start(pfarm::calibration_mode::none, 2, 50));         // a technique that does not calibrate
    EXPECT_TRUE(s.start(pfarm::calibration_mode::times_only, 2, 50));
    s.recalibrate();
    EXPECT_FALSE(s.start(pfarm::calibration_mode::times_only, 2, 50));
    s.learn(pfarm::calibration_mode::none, false, {5, 5}, {1.0, 1.0});  // gss & co. teach nothing
    EXPECT_FALSE(s.learned());
}

TEST(Schedule, TheFarmerStartsFromALearnedCalibrationWithoutCalibrationTasks) {
    pfarm::schedule s;
    s.learn(pfarm::calibration_mode::times_only, true, {10, 10}, {1.0, 3.0});
    const auto learned = s.start(pfarm::calibration_mode::times_only, 2, 100);
    ASSERT_TRUE(learned);
    pfarm::farmer f(100, 2, pfarm::make_technique("multi", {}, 2), 1, 1, false, false, &*learned);
    EXPECT_FALSE(f.calibrating());
    const auto fast = f.request(0), slow = f.request(1);
    EXPECT_EQ(fast.what, pfarm::decision::kind::assign);
    EXPECT_GT(fast.work.count, 1);             // not a calibration task
    EXPECT_GT(fast.work.count, slow.work.count);  // the learned F: worker 0 is three times faster
    pfarm::farmer calibrating(100, 2, pfarm::make_technique("multi", {}, 2));
    EXPECT_TRUE(calibrating.calibrating());
}

}  // namespace
