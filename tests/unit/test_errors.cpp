// Bad input gets a pfarm::invalid_argument naming the argument and the accepted range, never a silent default.
#include "test_support.hpp"
#include "pfarm/calibration.hpp"
#include "pfarm/error.hpp"
#include "pfarm/farmer.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/round_robin.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace {

/// The shared check, and the message names the argument too.
template <class F>
void expect_invalid(F&& body, const std::string& argument) {
    const std::string what = pfarm::testing::expect_invalid(std::forward<F>(body), argument);
    if (!what.empty()) EXPECT_NE(what.find(argument), std::string::npos) << what;
}

TEST(Errors, UnknownTechniqueListsTheKnownOnes) {
    try {
        pfarm::make_technique("gsss", {}, 4);
        ADD_FAILURE() << "no exception";
    } catch (const pfarm::unknown_name& e) {
        EXPECT_EQ(e.argument(), "technique");
        EXPECT_NE(std::string(e.what()).find("gsss"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("multi"), std::string::npos);
    }
}

TEST(Errors, CssWithoutChunk) { expect_invalid([] { pfarm::make_technique("css", {}, 4); }, "chunk"); }

TEST(Errors, WeightsOfTheWrongCount) {
    pfarm::technique_options o;
    o.weights = {1, 2, 3};
    expect_invalid([&] { pfarm::make_technique("dgss", o, 4); }, "weights");
}

TEST(Errors, NonPositiveOrNanWeights) {
    pfarm::technique_options o;
    o.weights = {1, 0, 3, 4};
    expect_invalid([&] { pfarm::make_technique("dfss", o, 4); }, "weights");
    o.weights = {1, -2, 3, 4};
    expect_invalid([&] { pfarm::make_technique("dfss", o, 4); }, "weights");
    o.weights = {1, std::nan(""), 3, 4};
    expect_invalid([&] { pfarm::make_technique("dfss", o, 4); }, "weights");
}

TEST(Errors, NonPositiveOrNanTimes) {
    pfarm::technique_options o;
    o.times = {1, 0, 1, 1};
    expect_invalid([&] { pfarm::make_technique("multi", o, 4); }, "times");
    o.times = {1, std::numeric_limits<double>::infinity(), 1, 1};
    expect_invalid([&] { pfarm::make_technique("multi", o, 4); }, "times");
    EXPECT_THROW(pfarm::fitness_from_times(std::vector<double>{1.0, -1.0}), pfarm::invalid_argument);
    EXPECT_THROW(pfarm::fitness_from_times(std::vector<double>{1.0, std::nan("")}), pfarm::invalid_argument);
}

TEST(Errors, ZeroTasksAndWorkers) {
    expect_invalid([] { pfarm::schedule_round_robin("gss", 0, 4, {}); }, "iterations");
    expect_invalid([] { pfarm::schedule_round_robin("gss", 10, 0, {}); }, "workers");
    expect_invalid([] { pfarm::farmer(0, 2, pfarm::make_technique("gss", {}, 2)); }, "tasks");
}

TEST(Errors, OutOfRangeParameters) {
    pfarm::technique_options o;
    o.min_chunk = 0;
    expect_invalid([&] { pfarm::make_technique("gss", o, 2); }, "min_chunk");
    o = {};
    o.stages = 1;
    expect_invalid([&] { pfarm::make_technique("fiss", o, 2); }, "stages");
    o = {};
    o.static_percent = 120;
    expect_invalid([&] { pfarm::make_technique("n-gss", o, 2); }, "static_percent");
    o = {};
    o.factor = 0;
    expect_invalid([&] { pfarm::make_technique("fss", o, 2); }, "factor");
    o = {};
    o.k = -1;
    expect_invalid([&] { pfarm::make_technique("multi", o, 2); }, "k");
    o = {};
    o.first = 2;
    o.last = 5;
    expect_invalid([&] { pfarm::schedule_round_robin("tss", 100, 2, o); }, "first");
    o = {};
    o.run_queue = {1, 0.5};
    expect_invalid([&] { pfarm::make_technique("dtss", o, 2); }, "run_queue");
}

TEST(Errors, FarmerRejectsBadTimesAndWorkers) {
    pfarm::farmer f(10, 2, pfarm::make_technique("ss", {}, 2));
    ASSERT_EQ(f.request(0).what, pfarm::decision::kind::assign);
    expect_invalid([&] { f.complete(0, -1.0); }, "seconds");
    expect_invalid([&] { f.complete(0, std::nan("")); }, "seconds");
    expect_invalid([&] { f.request(5); }, "worker");
    // A zero time (a timer too coarse for a short task) is legal: it is taken as 1 ns.
    EXPECT_NO_THROW(f.complete(0, 0.0));
}

TEST(Calibration, TimesOnlyFitnessAndK) {
    const auto c = pfarm::calibrate_times_only(std::vector<double>{1, 2, 3, 4}, 68);
    EXPECT_NEAR(c.fitness[0], 0.48, 0.001);
    EXPECT_NEAR(c.fitness[1], 0.24, 0.001);
    EXPECT_NEAR(c.fitness[2], 0.16, 0.001);
    EXPECT_NEAR(c.fitness[3], 0.12, 0.001);
    EXPECT_NEAR(c.stats.mean, 2.5, 1e-12);
    EXPECT_NEAR(c.stats.stddev, std::sqrt(1.25), 1e-12);  // population; the paper prints the sample 1.3
    EXPECT_NEAR(c.k, std::pow(std::log(68.0), std::sqrt(1.25) / 2.5), 1e-12);
    // Fig. 2: k = 1 for CV = 0 at every S, and grows with S and CV.
    EXPECT_DOUBLE_EQ(pfarm::installment_factor(10, 0.0), 1.0);
    EXPECT_DOUBLE_EQ(pfarm::installment_factor(1000000, 0.0), 1.0);
    EXPECT_LT(pfarm::installment_factor(100, 0.4), pfarm::installment_factor(10000, 0.4));
    EXPECT_LT(pfarm::installment_factor(100, 0.2), pfarm::installment_factor(100, 0.8));
}

TEST(Calibration, AdaptationExampleOfSeed004) {
    // w4 twice as fast during its first chunk: per-task times 1, 2, 3, 2 give F = 0.43, 0.215, 0.14, 0.215.
    const auto f = pfarm::fitness_from_times(std::vector<double>{1, 2, 3, 2});
    EXPECT_NEAR(f[0], 0.43, 0.005);
    EXPECT_NEAR(f[1], 0.215, 0.005);
    EXPECT_NEAR(f[2], 0.14, 0.005);
    EXPECT_NEAR(f[3], 0.215, 0.005);
}

TEST(Farmer, MultiAdaptsToAFasterWorker) {
    // The worked example of Gonzalez-Velez & Cole, "Adaptive statistical scheduling of divisible workloads in
    // heterogeneous systems", section 3.2.2: calibration 1, 2, 3, 4; S = 68; k = 2; w4 runs its first chunk of 4
    // in 8 instead of 16 and asks first (at t = 8 after the barrier, before anyone else): its next chunk is 3.
    pfarm::technique_options o;
    o.k = 2;
    pfarm::farmer f(68, 4, pfarm::make_technique("multi", o, 4));
    for (int w = 0; w < 4; ++w) ASSERT_TRUE(f.request(w).calibration);
    for (int w = 0; w < 4; ++w) f.complete(w, w + 1.0);
    const pfarm::task_count first[] = {15, 8, 5, 4};
    for (int w = 0; w < 4; ++w) EXPECT_EQ(f.request(w).work.count, first[w]);
    f.complete(3, 8.0);
    EXPECT_EQ(f.request(3).work.count, 3);
}

TEST(Farmer, SurplusWorkersStopAtOnce) {
    pfarm::farmer f(2, 5, pfarm::make_technique("gss", {}, 5));
    EXPECT_EQ(f.request(0).what, pfarm::decision::kind::assign);
    EXPECT_EQ(f.request(1).what, pfarm::decision::kind::assign);
    for (int w = 2; w < 5; ++w) EXPECT_EQ(f.request(w).what, pfarm::decision::kind::stop);
}

TEST(Farmer, CalibrationBarrierMakesEarlyWorkersWait) {
    pfarm::farmer f(20, 2, pfarm::make_technique("dealdyn-sm", {}, 2));
    ASSERT_TRUE(f.request(0).calibration);
    ASSERT_TRUE(f.request(1).calibration);
    f.complete(0, 1.0);
    EXPECT_EQ(f.request(0).what, pfarm::decision::kind::wait);
    EXPECT_TRUE(f.calibrating());
    f.complete(1, 3.0);
    EXPECT_FALSE(f.calibrating());
    // 18 left after calibration, F = 0.75, 0.25: one round of 13.5 -> 14 and 4.5 -> 4 (largest remainder).
    const auto a = f.request(0), b = f.request(1);
    EXPECT_EQ(a.work.count + b.work.count, 18);
    EXPECT_EQ(a.work.count, 14);
    f.complete(0, 14.0);
    EXPECT_EQ(f.request(0).what, pfarm::decision::kind::stop);
}

}  // namespace
