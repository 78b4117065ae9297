// The discrete-event simulator (pfarm/simulator.hpp; the model is documented at the top of simulator.cpp):
// bounds for every technique, the worked example of Gonzalez-Velez & Cole 2009, load changes, the message/overhead timing model,
// the workload shapes, scale, and input validation.
#include "test_support.hpp"
#include "pfarm/error.hpp"
#include "pfarm/farmer.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/simulator.hpp"
#include "pfarm/trace.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace {

namespace sim = pfarm::sim;
using pfarm::task_count;
using sizes = std::vector<task_count>;
using sim::workload_shape;

sim::platform make_platform(std::vector<double> times, double overhead = 0.0, double latency = 0.0) {
    sim::platform p;
    p.task_times = std::move(times);
    p.overhead = overhead;
    p.latency = latency;
    return p;
}

sim::workload make_workload(task_count tasks, workload_shape shape = workload_shape::uniform, std::uint64_t seed = 1) {
    sim::workload w;
    w.tasks = tasks;
    w.shape = shape;
    w.seed = seed;
    return w;
}

using pfarm::testing::runnable_options;

sizes prefix(const pfarm::chunk_sizes& all, std::size_t n) {
    const sizes s = all.to_vector();
    return sizes(s.begin(), s.begin() + static_cast<long>(std::min(n, s.size())));
}

/// Every task handed out exactly once, in order; worker totals and chunk counts agree with the trace (a worker's
/// chunks are all it was handed, its calibration chunk included: the one chunk count).
void expect_consistent(const sim::result& r, task_count tasks) {
    task_count total = 0, listed = 0;
    for (const auto& w : r.workers) {
        total += w.tasks;
        listed += static_cast<task_count>(w.chunks.size());
        EXPECT_EQ(w.tasks, std::accumulate(w.chunks.begin(), w.chunks.end(), task_count{0}));
    }
    EXPECT_EQ(total, tasks);
    EXPECT_EQ(r.chunks, listed);
    if (!r.trace.empty()) {
        ASSERT_EQ(static_cast<task_count>(r.trace.size()), r.chunks);
        task_count next = 0;
        for (const auto& c : r.trace) {
            EXPECT_EQ(c.first, next);
            EXPECT_GE(c.count, 1);
            EXPECT_LT(c.started, c.finished);
            next += c.count;
        }
        EXPECT_EQ(next, tasks);
    }
}

using pfarm::testing::expect_invalid;

std::filesystem::path temp_file(const std::string& name, const std::string& text) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("pfarm_test_simulator_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                       "_" + name);
    std::ofstream(path) << text;
    return path;
}

// --- bounds -------------------------------------------------------------------------------------------------

TEST(SimulatorBounds, MakespanAtLeastLowerBoundForEveryTechnique) {
    struct scenario {
        const char* name;
        sim::platform platform;
        task_count tasks;
    };
    std::vector<scenario> scenarios{
        {"equal", make_platform({1, 1, 1, 1}), 500},
        {"heterogeneous, overhead and latency", make_platform({1, 2, 3, 4}, 0.01, 0.005), 500},
        {"one worker", make_platform({0.5}), 37},
        {"more workers than tasks", make_platform({1, 2, 1, 3, 1}), 3},
    };
    sim::platform loaded = make_platform({1, 1.5, 2}, 0.02, 0.01);
    loaded.load_changes = {{0, 40.0, 3.0}, {2, 10.0, 0.5}, {0, 120.0, 1.0}};
    scenarios.push_back({"load changes", loaded, 400});

    // Every registered technique, plus multi under each calibration mode.
    std::vector<std::pair<std::string, pfarm::technique_options>> runs_of;
    for (const auto& info : pfarm::techniques()) runs_of.emplace_back(info.name, runnable_options());
    for (auto mode : {pfarm::calibration_mode::univariate, pfarm::calibration_mode::multivariate}) {
        auto o = runnable_options();
        o.calibration = mode;
        runs_of.emplace_back("multi", o);
    }
    int runs = 0;
    for (const auto& [name, options] : runs_of) {
        for (const auto& s : scenarios) {
            for (auto shape : {workload_shape::uniform, workload_shape::increasing, workload_shape::decreasing,
                               workload_shape::random, workload_shape::mandelbrot}) {
                SCOPED_TRACE(name + " / " + s.name + " / " + sim::to_string(shape));
                const auto r = sim::simulate(s.platform, make_workload(s.tasks, shape, 7), name, options,
                                             {.keep_trace = true});
                EXPECT_GE(r.makespan, r.lower_bound * (1.0 - 1e-12));
                EXPECT_GT(r.lower_bound, 0.0);
                EXPECT_NEAR(r.total_work, static_cast<double>(s.tasks), 1e-9 * static_cast<double>(s.tasks));
                EXPECT_GE(r.percent_imbalance, 0.0);
                EXPECT_GE(r.cov, 0.0);
                expect_consistent(r, s.tasks);
                ++runs;
            }
        }
    }
    EXPECT_GT(runs, 0);
}

TEST(SimulatorBounds, StaticWithinOneTaskTimeOfTheBound) {
    for (double t : {1.0, 2.5}) {
        for (task_count tasks : {1000, 1003, 7}) {
            SCOPED_TRACE("task time " + std::to_string(t) + ", tasks " + std::to_string(tasks));
            const auto r = sim::simulate(make_platform({t, t, t, t}), make_workload(tasks), "static", {});
            EXPECT_DOUBLE_EQ(r.lower_bound, static_cast<double>(tasks) * t / 4.0);
            EXPECT_GE(r.makespan, r.lower_bound);
            EXPECT_LE(r.makespan - r.lower_bound, t);
            EXPECT_EQ(r.chunks, 4);
            EXPECT_EQ(r.calibration_end, 0.0);
            EXPECT_FALSE(r.k.has_value());
        }
    }
}

// --- Gonzalez-Velez & Cole's worked example-------------------------------------------------------------------------

// Gonzalez-Velez & Cole 2009, Table 1: SCH_MULTI, k = 2, four workers of 1, 2, 3, 4 time units per
// task, 68 tasks. Calibration (one task each) ends at t = 4 (the slowest worker); S' = 64 tasks remain and
// F = (0.48, 0.24, 0.16, 0.12), constant (the workers keep their speed, so the refreshed F is the same).
// Derived by hand (t relative to the barrier, R = unassigned, chunk = max(1, floor(R/2 F_i + 0.5)), ties in
// increasing worker index):
//   t=0  first round, same S' = 64: 15, 8, 5, 4                                    R 32
//   t=15 w1: 8 (R 24), w3: 2 (R 22)     t=16 w2: 3 (R 19), w4: 1 (R 18)
//   t=20 w4: 1 (R 17)   t=21 w3: 1 (R 16)   t=22 w2: 2 (R 14)   t=23 w1: 3 (R 11)
//   t=24 w3: 1 (R 10), w4: 1 (R 9)   t=26 w1: 2 (R 7), w2: 1 (R 6)   t=27 w3: 1 (R 5)
//   t=28 w1: 1, w2: 1, w4: 1 (R 2)   t=29 w1: 1 (R 1)   t=30 w1: 1 (R 0)
// Finishes (relative): w1 31, w2 30, w3 30, w4 32. The paper's lists agree until t = 27 (w1 15,8,3;
// w2 8,3,2; w3 5,2,1; w4 4,1,1,1); its last single tasks follow a hand rule the paper does not state.
TEST(SimulatorSeed004, Table1) {
    pfarm::technique_options o;
    o.k = 2;
    const auto r = sim::simulate(make_platform({1, 2, 3, 4}), make_workload(68), "multi", o, {.keep_trace = true});
    expect_consistent(r, 68);
    EXPECT_EQ(r.calibration_end, 4.0);
    double last = 0.0;
    for (const auto& w : r.workers) last = std::max(last, w.finish);
    EXPECT_EQ(last - r.calibration_end, 32.0);
    EXPECT_EQ(r.makespan, 36.0);
    ASSERT_TRUE(r.k.has_value());
    EXPECT_EQ(*r.k, 2.0);
    ASSERT_EQ(r.workers.size(), 4u);

    // Each worker's chunks start with its calibration task (the one chunk count); the table's lists follow it.
    for (std::size_t j = 0; j < 4; ++j) ASSERT_GE(r.workers[j].chunks.size(), 2u);
    for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(r.workers[j].chunks[0], 1);
    const auto after = [&r](std::size_t j) { return r.workers[j].chunks.drop_front(1); };

    // The first round after calibration.
    EXPECT_EQ(after(0)[0], 15);
    EXPECT_EQ(after(1)[0], 8);
    EXPECT_EQ(after(2)[0], 5);
    EXPECT_EQ(after(3)[0], 4);

    // The paper's Table 1 until t = 27 after the barrier.
    EXPECT_EQ(prefix(after(0), 3), (sizes{15, 8, 3}));
    EXPECT_EQ(prefix(after(1), 3), (sizes{8, 3, 2}));
    EXPECT_EQ(prefix(after(2), 3), (sizes{5, 2, 1}));
    EXPECT_EQ(prefix(after(3), 4), (sizes{4, 1, 1, 1}));

    // The whole run, as derived above.
    EXPECT_EQ(after(0), (sizes{15, 8, 3, 2, 1, 1, 1}));
    EXPECT_EQ(after(1), (sizes{8, 3, 2, 1, 1}));
    EXPECT_EQ(after(2), (sizes{5, 2, 1, 1, 1}));
    EXPECT_EQ(after(3), (sizes{4, 1, 1, 1, 1}));
    EXPECT_EQ(r.workers[0].finish, 35.0);
    EXPECT_EQ(r.workers[1].finish, 34.0);
    EXPECT_EQ(r.workers[2].finish, 34.0);
    EXPECT_EQ(r.workers[3].finish, 36.0);
    EXPECT_EQ(r.chunks, 4 + 7 + 5 + 5 + 5);
    EXPECT_NEAR(r.lower_bound, 68.0 / (1.0 + 1.0 / 2 + 1.0 / 3 + 1.0 / 4), 1e-12);

    // Calibration chunks first, one task each, in worker order; every worker starts at t = 0.
    for (int j = 0; j < 4; ++j) {
        EXPECT_TRUE(r.trace[static_cast<std::size_t>(j)].calibration);
        EXPECT_EQ(r.trace[static_cast<std::size_t>(j)].rank, j);
        EXPECT_EQ(r.trace[static_cast<std::size_t>(j)].started, 0.0);
    }
    // Metrics of the finish times (35, 34, 34, 36).
    const double mean = 34.75;
    EXPECT_NEAR(r.percent_imbalance, (36.0 - mean) / 36.0 * 4.0 / 3.0 * 100.0, 1e-12);
    EXPECT_NEAR(r.cov, std::sqrt((0.0625 + 0.5625 + 0.5625 + 1.5625) / 4.0) / mean, 1e-12);
}

// The run's calibration is in the result: the paper's F = 0.48, 0.24, 0.16, 0.12 as printed, and eq. 7/8
// with the population sigma of 1, 2, 3, 4 (1.118, CV 0.447, k = ln(68)^0.447 = 1.904; the paper prints the
// sample sigma 1.3, CV 0.5, k ~ 2). A pinned k (--k 2) is the technique's; the calibration keeps eq. 8's.
// A technique that does not calibrate has none.
TEST(SimulatorSeed004, CalibrationInTheResult) {
    pfarm::technique_options o;
    o.k = 2;
    const auto r = sim::simulate(make_platform({1, 2, 3, 4}), make_workload(68), "multi", o);
    ASSERT_TRUE(r.calibration.has_value());
    const auto& c = *r.calibration;
    EXPECT_EQ(c.times, (std::vector<double>{1, 2, 3, 4}));
    const std::vector<double> paper{0.48, 0.24, 0.16, 0.12};
    ASSERT_EQ(c.fitness.size(), 4u);
    for (std::size_t j = 0; j < 4; ++j) EXPECT_NEAR(c.fitness[j], paper[j], 1e-12) << "worker " << j;
    EXPECT_DOUBLE_EQ(c.stats.mean, 2.5);
    EXPECT_NEAR(c.stats.stddev, std::sqrt(1.25), 1e-12);
    EXPECT_NEAR(c.stats.cv, std::sqrt(1.25) / 2.5, 1e-12);
    EXPECT_NEAR(c.k, std::pow(std::log(68.0), std::sqrt(1.25) / 2.5), 1e-12);
    ASSERT_TRUE(r.k.has_value());
    EXPECT_EQ(*r.k, 2.0);
    EXPECT_FALSE(sim::simulate(make_platform({1, 2, 3, 4}), make_workload(68), "gss", {}).calibration.has_value());
}

// --- load changes ---------------------------------------------------------------------------------------------

TEST(SimulatorLoadChange, SlowedWorkerGetsFewerTasksAndTheBoundRises) {
    const auto base = make_platform({1, 1, 1, 1});
    auto slowed = base;
    slowed.load_changes = {{1, 100.0, 4.0}};
    // Equal workers calibrate to CV = 0, so k = ln(S)^0 = 1 and the first round would hand out everything:
    // pin k = 4 so that multi keeps tasks back and can react to the slowdown (its first chunks of 125 end
    // at t = 126, after the change).
    auto o = runnable_options();
    o.k = 4;
    const auto before = sim::simulate(base, make_workload(2000), "multi", o);
    const auto after = sim::simulate(slowed, make_workload(2000), "multi", o);
    expect_consistent(after, 2000);
    EXPECT_LT(after.workers[1].tasks, before.workers[1].tasks);
    EXPECT_GT(after.lower_bound, before.lower_bound);
    EXPECT_DOUBLE_EQ(before.lower_bound, 500.0);
    // 400 units of work by t = 100, then 3 + 1/4 units per second: 100 + 1600 / 3.25.
    EXPECT_NEAR(after.lower_bound, 100.0 + 1600.0 / 3.25, 1e-9);
    EXPECT_GE(after.makespan, after.lower_bound);
}

TEST(SimulatorLoadChange, ComputeTimeIsIntegratedOverTheChanges) {
    // One worker, 10 unit tasks of 1 s; from t = 5 its task time doubles, from t = 9 it is 4x (the earlier
    // change at t = 9 is replaced by the later one given at the same time).
    auto p = make_platform({1});
    p.load_changes = {{0, 5.0, 2.0}, {0, 9.0, 3.0}, {0, 9.0, 4.0}};
    const auto r = sim::simulate(p, make_workload(10), "static", {}, {.keep_trace = true});
    // [0,5): 5 tasks; [5,9): 2 tasks; then 3 tasks at 4 s each: 9 + 12 = 21.
    ASSERT_EQ(r.trace.size(), 1u);
    EXPECT_DOUBLE_EQ(r.trace[0].finished, 21.0);
    EXPECT_DOUBLE_EQ(r.makespan, 21.0);
    EXPECT_DOUBLE_EQ(r.lower_bound, 21.0);
    EXPECT_EQ(r.percent_imbalance, 0.0);
    EXPECT_EQ(r.cov, 0.0);
}

TEST(SimulatorLoadChange, StatisticalCalibrationReadsTheSimulatedMonitors) {
    // dealdyn-lr fits t = c0 + c1 a' with a' = availability x benchmark / max(benchmark); the simulated
    // monitors read availability 1/factor and benchmark 1/task_time, so the fit exists on a heterogeneous
    // platform and the slow workers get less.
    auto p = make_platform({1, 2, 4, 1});
    p.load_changes = {{3, 0.0, 2.0}};
    const auto r = sim::simulate(p, make_workload(400), "dealdyn-lr", {});
    expect_consistent(r, 400);
    EXPECT_TRUE(r.calibration_note.empty()) << r.calibration_note;
    EXPECT_GT(r.workers[0].tasks, r.workers[1].tasks);
    EXPECT_GT(r.workers[1].tasks, r.workers[2].tasks);
    EXPECT_GT(r.workers[0].tasks, r.workers[3].tasks);  // worker 3 runs at half speed from t = 0
    // Equal workers: every a' is 1, the fit is singular, and calibration falls back to times-only (a note).
    const auto equal = sim::simulate(make_platform({1, 1, 1}), make_workload(300), "dealdyn-lr", {});
    expect_consistent(equal, 300);
    EXPECT_FALSE(equal.calibration_note.empty());
}

// --- the message and service model ----------------------------------------------------------------------------

TEST(SimulatorTiming, OverheadAndLatency) {
    // ss, one worker, 3 unit tasks; overhead 0.5, latency 0.25: request arrives 0.25, served until 0.75,
    // reply arrives 1.0, compute 1-2, next request arrives 2.25, ... last result reaches the farmer at 6.25.
    const auto r = sim::simulate(make_platform({1}, 0.5, 0.25), make_workload(3), "ss", {}, {.keep_trace = true});
    ASSERT_EQ(r.trace.size(), 3u);
    EXPECT_DOUBLE_EQ(r.trace[0].started, 1.0);
    EXPECT_DOUBLE_EQ(r.trace[1].started, 3.0);
    EXPECT_DOUBLE_EQ(r.trace[2].started, 5.0);
    EXPECT_DOUBLE_EQ(r.workers[0].finish, 6.0);
    EXPECT_DOUBLE_EQ(r.makespan, 6.25);
    EXPECT_DOUBLE_EQ(r.lower_bound, 3.0);
}

TEST(SimulatorTiming, ASetupDelaysTheFirstRequestsAndCountsInTheMakespan) {
    // As OverheadAndLatency, the first request sent at 2 (the setup): every time 2 later. A load change keeps its time
    // from the farm's start: worker 0 twice as slow from 6.5 on, so the third task (from 7) takes 2.
    auto pl = make_platform({1}, 0.5, 0.25);
    pl.setup = 2.0;
    const auto r = sim::simulate(pl, make_workload(3), "ss", {}, {.keep_trace = true});
    ASSERT_EQ(r.trace.size(), 3u);
    EXPECT_DOUBLE_EQ(r.trace[0].started, 3.0);
    EXPECT_DOUBLE_EQ(r.trace[2].started, 7.0);
    EXPECT_DOUBLE_EQ(r.makespan, 8.25);
    pl.load_changes = {{0, 6.5, 2.0}};
    EXPECT_DOUBLE_EQ(sim::simulate(pl, make_workload(3), "ss", {}).makespan, 9.25);
    pfarm::testing::expect_invalid([&] { sim::simulate(pl, make_workload(3), "ss", {}, {.farmer = sim::farmer_kind::decentralised}); },
                                   "setup");
    pl.setup = -1.0;
    pfarm::testing::expect_invalid([&] { sim::simulate(pl, make_workload(3), "ss", {}); }, "setup");
}

TEST(SimulatorTiming, TheFarmerServesOneRequestAtATimeTiesByWorkerIndex) {
    // Both requests arrive at 0; worker 0 is served first (0-1), worker 1 queues (1-2).
    const auto r = sim::simulate(make_platform({1, 1}, 1.0), make_workload(4), "ss", {}, {.keep_trace = true});
    ASSERT_EQ(r.trace.size(), 4u);
    const std::vector<std::pair<int, double>> expected{{0, 1.0}, {1, 2.0}, {0, 3.0}, {1, 4.0}};
    for (std::size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(r.trace[i].rank, expected[i].first) << i;
        EXPECT_DOUBLE_EQ(r.trace[i].started, expected[i].second) << i;
    }
    EXPECT_DOUBLE_EQ(r.makespan, 5.0);
}

TEST(SimulatorTiming, ParkedWorkersAreAnsweredFirstWhenTheBarrierPasses) {
    // multi, worker 0 slow (4 s/task), worker 1 fast (1 s/task), overhead 1. Calibration: w0 served 0-1,
    // computes 1-5; w1 served 1-2, computes 2-3, asks at 3 and gets `wait` (3-4). w0's result at 5 passes the
    // barrier: the parked w1 is answered first (5-6), then w0 (6-7).
    const auto r = sim::simulate(make_platform({4, 1}, 1.0), make_workload(20), "multi", {}, {.keep_trace = true});
    EXPECT_DOUBLE_EQ(r.calibration_end, 5.0);
    ASSERT_GE(r.trace.size(), 4u);
    EXPECT_TRUE(r.trace[0].calibration && r.trace[1].calibration);
    EXPECT_EQ(r.trace[2].rank, 1);
    EXPECT_DOUBLE_EQ(r.trace[2].started, 6.0);
    EXPECT_EQ(r.trace[3].rank, 0);
    EXPECT_DOUBLE_EQ(r.trace[3].started, 7.0);
    expect_consistent(r, 20);
}

TEST(SimulatorTiming, AFarmerThatComputesServesBetweenItsOwnTasks) {
    // ss, worker 0 the farmer's own (1 s a task), worker 1 at 0.5 s, no costs. Both are served at 0; worker 1 asks
    // at 0.5, while worker 0 computes its task: it is served when that task ends (1.0), before worker 0's own
    // request of the same moment, and its results reach the farmer at 1.5. A farmer that only farms serves it at
    // 0.5, and both end at 1.0.
    sim::run_options computes;
    computes.keep_trace = true;
    computes.farmer_computes = true;
    const auto r = sim::simulate(make_platform({1, 0.5}), make_workload(3), "ss", {}, computes);
    ASSERT_EQ(r.trace.size(), 3u);
    EXPECT_EQ(r.trace[2].rank, 1);
    EXPECT_DOUBLE_EQ(r.trace[2].started, 1.0);
    EXPECT_DOUBLE_EQ(r.makespan, 1.5);
    EXPECT_DOUBLE_EQ(sim::simulate(make_platform({1, 0.5}), make_workload(3), "ss", {}).makespan, 1.0);

    // Its own worker's messages take no latency, and it asks nothing ahead: 2 tasks of 1 s with latency 0.25 end
    // at 2.0 (3.25 for a worker across the network: 0.25 + 0.25 before each task, and the results' 0.25).
    for (bool prefetch : {false, true}) {
        computes.prefetch = prefetch;
        EXPECT_DOUBLE_EQ(sim::simulate(make_platform({1}, 0.0, 0.25), make_workload(2), "ss", {}, computes).makespan, 2.0);
    }
    EXPECT_DOUBLE_EQ(sim::simulate(make_platform({1}, 0.0, 0.25), make_workload(2), "ss", {}).makespan, 3.25);

    // Every technique keeps every task exactly once with it too: SimulatorReclaim.EveryTechniqueKeepsEveryTaskExactlyOnce.

    // The other farms do not model it.
    sim::run_options hierarchical;
    hierarchical.farmer_computes = true;
    hierarchical.farmer = sim::farmer_kind::hierarchical;
    hierarchical.masters = 1;
    expect_invalid([&] { sim::simulate(make_platform({1, 1}), make_workload(4), "ss", {}, hierarchical); }, "farmer_computes");
}

TEST(SimulatorTiming, ACalibrationSpanGrowsEachWorkersCalibrationChunks) {
    // multi on two workers of 1 s and 3 s a task, a span of 5 s: each worker's calibration chunks double (1, 2, ...)
    // until their time adds up to the span, or fewer when its pace says fewer reach it. Worker 0: 1, 2, then 2 (3 s
    // of 5 done, 2 more at 1 s), reaching the span at 5; worker 1: 1 (3 s), then 1, reaching it at 6. Worker 0 does
    // not wait idle for the barrier: at 5 it gets a quarter of the span at its pace (ceil(1.25) = 2 tasks), which
    // are not measurements; the barrier passes at 6 with times 1 and 3. Without the span each calibrates on one task
    // and the barrier is at 3.
    sim::run_options spanned;
    spanned.keep_trace = true;
    spanned.calibration_span = 5.0;
    const auto r = sim::simulate(make_platform({1, 3}), make_workload(40), "multi", {}, spanned);
    std::vector<task_count> calibration[2];
    for (const auto& t : r.trace)
        if (t.calibration) calibration[t.rank].push_back(t.count);
    EXPECT_EQ(calibration[0], (std::vector<task_count>{1, 2, 2, 2}));
    EXPECT_EQ(calibration[1], (std::vector<task_count>{1, 1}));
    EXPECT_DOUBLE_EQ(r.calibration_end, 6.0);
    ASSERT_TRUE(r.calibration);
    EXPECT_EQ(r.calibration->times, (std::vector<double>{1.0, 3.0}));
    expect_consistent(r, 40);
    EXPECT_DOUBLE_EQ(sim::simulate(make_platform({1, 3}), make_workload(40), "multi", {}).calibration_end, 3.0);

    // Only the flat farm models it, and a span is a finite number of seconds >= 0.
    sim::run_options hierarchical;
    hierarchical.calibration_span = 1.0;
    hierarchical.farmer = sim::farmer_kind::hierarchical;
    hierarchical.masters = 1;
    expect_invalid([&] { sim::simulate(make_platform({1, 1}), make_workload(4), "multi", {}, hierarchical); },
                   "calibration_span");
    sim::run_options negative;
    negative.calibration_span = -1.0;
    expect_invalid([&] { sim::simulate(make_platform({1, 1}), make_workload(4), "multi", {}, negative); },
                   "calibration_span");
}

TEST(SimulatorTiming, MoreWorkersThanTasks) {
    for (const char* technique : {"gss", "multi", "static"}) {
        SCOPED_TRACE(technique);
        const auto r = sim::simulate(make_platform({1, 1, 1, 1, 1}), make_workload(3), technique, runnable_options());
        expect_consistent(r, 3);
        EXPECT_EQ(r.workers[3].finish, 0.0);
        EXPECT_EQ(r.workers[4].finish, 0.0);
        EXPECT_DOUBLE_EQ(r.makespan, 1.0);
        EXPECT_DOUBLE_EQ(r.percent_imbalance, (1.0 - 0.6) / 1.0 * 5.0 / 4.0 * 100.0);
    }
}

// --- workload shapes ----------------------------------------------------------------------------------------

TEST(SimulatorWorkload, ShapesHaveMeanCostOne) {
    for (auto shape : {workload_shape::uniform, workload_shape::increasing, workload_shape::decreasing,
                       workload_shape::random, workload_shape::mandelbrot}) {
        EXPECT_EQ(sim::parse_shape(sim::to_string(shape)), shape);
        for (task_count n : {1, 2, 1000, 4097}) {
            SCOPED_TRACE(sim::to_string(shape) + " " + std::to_string(n));
            const auto c = sim::task_costs(make_workload(n, shape, 3));
            ASSERT_EQ(static_cast<task_count>(c.size()), n);
            EXPECT_NEAR(std::accumulate(c.begin(), c.end(), 0.0), static_cast<double>(n), 1e-9 * static_cast<double>(n));
            for (double v : c) EXPECT_GT(v, 0.0);
        }
    }
    const auto inc = sim::task_costs(make_workload(100, workload_shape::increasing));
    const auto dec = sim::task_costs(make_workload(100, workload_shape::decreasing));
    EXPECT_TRUE(std::is_sorted(inc.begin(), inc.end()));
    EXPECT_TRUE(std::equal(inc.begin(), inc.end(), dec.rbegin()));
    EXPECT_DOUBLE_EQ(inc.front(), 0.01);
    EXPECT_DOUBLE_EQ(inc.back(), 1.99);

    const auto a = sim::task_costs(make_workload(1000, workload_shape::random, 5));
    const auto b = sim::task_costs(make_workload(1000, workload_shape::random, 5));
    const auto c = sim::task_costs(make_workload(1000, workload_shape::random, 6));
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    EXPECT_GT(*std::min_element(a.begin(), a.end()), 0.05);
    EXPECT_LT(*std::max_element(a.begin(), a.end()), 2.0);

    // Mandelbrot columns: cheap at the left edge (x = -2), expensive through the set, symmetric work away
    // from it; far from uniform.
    const auto m = sim::task_costs(make_workload(1000, workload_shape::mandelbrot));
    const auto [lo, hi] = std::minmax_element(m.begin(), m.end());
    EXPECT_GT(*hi / *lo, 10.0);
    EXPECT_LT(m.front(), 1.0);
    EXPECT_GT(m[600], 1.0);  // x = -0.2: through the main cardioid
}

// The Mandelbrot shape's table (skeleton/sim/src/mandelbrot_columns.hpp) is the escape counts it says: computed
// again here, a column at a time, and compared with a loop of one task per column.
TEST(SimulatorWorkload, MandelbrotIsTheEscapeCountsOfItsColumns) {
    constexpr int columns = 1024, rows = 256, maxiter = 256;
    std::vector<double> counts(columns, 0.0);
    for (int c = 0; c < columns; ++c) {
        const double x0 = -2.0 + (c + 0.5) * 3.0 / columns;
        for (int r = 0; r < rows; ++r) {  // the whole column, not the half the table doubles
            const double y0 = -1.5 + (r + 0.5) * 3.0 / rows;
            double x = 0.0, y = 0.0;
            int n = 0;
            while (n < maxiter && x * x + y * y <= 4.0) {
                const double xt = x * x - y * y + x0;
                y = 2.0 * x * y + y0;
                x = xt;
                ++n;
            }
            counts[static_cast<std::size_t>(c)] += n;
        }
    }
    const auto m = sim::task_costs(make_workload(columns, workload_shape::mandelbrot));
    ASSERT_EQ(m.size(), counts.size());
    double total = 0.0;
    for (double n : counts) total += n;
    for (std::size_t c = 0; c < counts.size(); ++c)
        EXPECT_NEAR(m[c], counts[c] * columns / total, 1e-12) << "column " << c;
}

// --- scale ------------------------------------------------------------------------------------------------------

TEST(SimulatorScale, GssAndSsWithAThousandWorkers) {
#ifdef NDEBUG
    const task_count tasks = 1'000'000;  // the spec's size: a million tasks, a thousand workers
#else
    const task_count tasks = 200'000;  // Debug builds: the same shape of run, smaller
#endif
    std::vector<double> times(1000);
    for (std::size_t j = 0; j < times.size(); ++j) times[j] = 1.0 + 0.25 * static_cast<double>(j % 7);
    auto p = make_platform(times, 1e-4, 5e-5);
    p.load_changes = {{3, 50.0, 2.0}, {999, 10.0, 0.5}};
    for (const char* technique : {"gss", "ss"}) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto r = sim::simulate(p, make_workload(tasks, workload_shape::random), technique, {});
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::cout << "[ timing   ] " << technique << ": " << tasks << " tasks x 1000 workers in " << seconds << " s\n";
        expect_consistent(r, tasks);
        EXPECT_GE(r.makespan, r.lower_bound);
        if (std::string(technique) == "ss") EXPECT_EQ(r.chunks, tasks);
        EXPECT_LT(seconds, 60.0);
    }
}

// --- input validation -------------------------------------------------------------------------------------------

// The simulator names its inputs by their C++ names (pfarm-sim shows its flags instead: tests/cli).
TEST(SimulatorInput, BadInputsThrow) {
    const auto run = [](sim::platform p, task_count tasks = 10, const std::string& technique = "gss",
                        pfarm::technique_options o = {}) {
        return [=] { sim::simulate(p, make_workload(tasks), technique, o); };
    };
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    expect_invalid(run(make_platform({1, 1}), 0), "tasks");
    expect_invalid(run(make_platform({1, 1}), -3), "tasks");
    expect_invalid(run(make_platform({})), "task_times");
    for (double bad : {0.0, -1.0, nan, inf}) {
        const auto message = expect_invalid(run(make_platform({1, bad})), "task_times");
        EXPECT_NE(message.find("value 2 is "), std::string::npos) << message;
        if (bad != 0.0) {
            // platform::overhead beside technique_options::overhead (named "overhead", pfarm-sim's --overhead-h)
            expect_invalid(run(make_platform({1}, bad, 0.0)), "platform.overhead");
            expect_invalid(run(make_platform({1}, 0.0, bad)), "latency");
        }
    }
    pfarm::technique_options no_h;
    no_h.overhead = -1.0;
    expect_invalid(run(make_platform({1}), 10, "fsc", no_h), "overhead");
    const auto scripted = [](auto set) {
        auto p = make_platform({1, 1});
        p.monitors.resize(2);
        set(p.monitors[1]);
        return p;
    };
    expect_invalid(run(scripted([](pfarm::resource_sample& s) { s.availability = 1.5; })), "monitors.availability");
    expect_invalid(run(scripted([](pfarm::resource_sample& s) { s.latency = -1.0; })), "monitors.latency");
    expect_invalid(run(scripted([](pfarm::resource_sample& s) { s.benchmark = 0.0; })), "monitors.benchmark");
    auto one_reading = make_platform({1, 1});
    one_reading.monitors.resize(1);
    expect_invalid(run(one_reading), "monitors");
    const auto with_change = [](pfarm::load_change c) {
        auto p = make_platform({1, 1});
        p.load_changes = {c};
        return p;
    };
    expect_invalid(run(with_change({2, 1.0, 2.0})), "load_changes");
    expect_invalid(run(with_change({-1, 1.0, 2.0})), "load_changes");
    expect_invalid(run(with_change({0, -1.0, 2.0})), "load_changes");
    expect_invalid(run(with_change({0, nan, 2.0})), "load_changes");
    expect_invalid(run(with_change({0, 1.0, 0.0})), "load_changes");
    expect_invalid(run(with_change({0, 1.0, inf})), "load_changes");
    expect_invalid(run(make_platform({1}), 10, "no-such-technique"), "technique");
    expect_invalid(run(make_platform({1}), 10, "css"), "chunk");
    EXPECT_THROW(sim::parse_shape("spiral"), pfarm::unknown_name);
    expect_invalid([] { sim::parse_shape("spiral"); }, "shape");
    expect_invalid([] { sim::task_costs(make_workload(0)); }, "tasks");
    auto short_costs = make_workload(3);
    short_costs.costs = {1.0, 2.0};
    expect_invalid([&] { sim::task_costs(short_costs); }, "costs");

    // Legal edge cases.
    EXPECT_NO_THROW(sim::simulate(with_change({1, 0.0, 1.0}), make_workload(1), "gss", {}));
}

// --load-change's parser is pfarm::parse_load_change, tested in test_emulation.cpp.

TEST(SimulatorInput, JsonPlatformFile) {
    const auto good = temp_file("good.json", R"({"task_times": [1, 2.5, 3], "overhead": 0.01, "latency": 0.002,
        "load_changes": [{"worker": 1, "time": 10, "factor": 2}, {"worker": 0, "time": 5.5, "factor": 0.5}]})");
    const auto p = sim::load_platform(good.string());
    EXPECT_EQ(p.task_times, (std::vector<double>{1, 2.5, 3}));
    EXPECT_EQ(p.overhead, 0.01);
    EXPECT_EQ(p.latency, 0.002);
    ASSERT_EQ(p.load_changes.size(), 2u);
    EXPECT_EQ(p.load_changes[0].worker, 1);
    EXPECT_EQ(p.load_changes[0].time, 10.0);
    EXPECT_EQ(p.load_changes[0].factor, 2.0);
    EXPECT_EQ(p.load_changes[1].worker, 0);
    EXPECT_EQ(p.load_changes[1].time, 5.5);
    EXPECT_EQ(p.load_changes[1].factor, 0.5);
    EXPECT_NO_THROW(sim::simulate(p, make_workload(100), "fss", {}));

    const auto with_setup = temp_file("setup.json", R"({"task_times": [1], "setup": 0.25})");
    EXPECT_EQ(sim::load_platform(with_setup.string()).setup, 0.25);
    const auto bad_setup = temp_file("bad_setup.json", R"({"task_times": [1], "setup": -1})");
    EXPECT_NE(pfarm::testing::expect_invalid([&] { sim::load_platform(bad_setup.string(), "--platform"); }, "--platform")
                  .find("'setup'"),
              std::string::npos);

    const auto minimal = temp_file("minimal.json", R"({"task_times": [2]})");
    const auto m = sim::load_platform(minimal.string());
    EXPECT_EQ(m.task_times, (std::vector<double>{2}));
    EXPECT_EQ(m.overhead, 0.0);
    EXPECT_EQ(m.latency, 0.0);
    EXPECT_TRUE(m.load_changes.empty());

    // Malformed files: the message names the file and the field.
    const std::vector<std::pair<std::string, std::string>> bad{
        {"{\"task_times\": [1, 2", ""},
        {"[1, 2]", ""},
        {R"({"overhead": 1})", "task_times"},
        {R"({"task_times": []})", "task_times"},
        {R"({"task_times": 3})", "task_times"},
        {R"({"task_times": [1, "2"]})", "task_times[1]"},
        {R"({"task_times": [1, 0]})", "task_times[1]"},
        {R"({"task_times": [1], "overhead": -1})", "overhead"},
        {R"({"task_times": [1], "latency": "fast"})", "latency"},
        {R"({"task_times": [1], "overheads": 1})", "overheads"},
        {R"({"task_times": [1], "load_changes": {}})", "load_changes"},
        {R"({"task_times": [1], "load_changes": [{"worker": 1, "time": 0, "factor": 2}]})", "load_changes[0].worker"},
        {R"({"task_times": [1], "load_changes": [{"worker": 0, "time": -1, "factor": 2}]})", "load_changes[0].time"},
        {R"({"task_times": [1], "load_changes": [{"worker": 0, "time": 1, "factor": 0}]})", "load_changes[0].factor"},
        {R"({"task_times": [1], "load_changes": [{"worker": 0, "time": 1}]})", "load_changes[0].factor"},
        {R"({"task_times": [1], "load_changes": [{"worker": 0.5, "time": 1, "factor": 1}]})", "load_changes[0].worker"},
    };
    for (std::size_t i = 0; i < bad.size(); ++i) {
        const auto path = temp_file("bad" + std::to_string(i) + ".json", bad[i].first);
        SCOPED_TRACE(bad[i].first);
        try {
            sim::load_platform(path.string());
            ADD_FAILURE() << "no exception";
        } catch (const pfarm::invalid_argument& e) {
            const std::string what = e.what();
            EXPECT_EQ(e.argument(), "platform");
            EXPECT_NE(what.find(path.string()), std::string::npos) << what;
            if (!bad[i].second.empty()) EXPECT_NE(what.find("'" + bad[i].second + "'"), std::string::npos) << what;
        }
        std::filesystem::remove(path);
    }
    expect_invalid([] { sim::load_platform("/nonexistent/pfarm/platform.json"); }, "platform");
    // A caller names the argument as it likes: pfarm-sim passes its flag.
    expect_invalid([] { sim::load_platform("/nonexistent/pfarm/platform.json", "--platform"); }, "--platform");
    std::filesystem::remove(good);
    std::filesystem::remove(minimal);
}

}  // namespace

namespace {

// Issue 3: statistical calibration in the simulator on a scripted platform. Equal base speeds; the scripted
// availabilities 1, 0.7, 0.5, 0.85 are the workers' CPU shares, so the less available ones are slower, and the
// calibrations (times fitted to availability, eq. 5, or to latency and squared availability, eq. 6) give them
// fewer tasks. The linear models only approximate t ~ 1/a, so the single rounds land within 15% of the bound
// here (measured 1.10 and 1.03) and multi, which corrects F as times arrive, within 2% (1.001). Far below
// a = 0.5 the approximation degrades: with a = 0.3, dealdyn-lr measured 1.37 (docs/calibration.md).
TEST(SimulatorScripted, StatisticalCalibrationGivesLessToLessAvailableWorkers) {
    pfarm::sim::platform pl;
    pl.task_times = {1.0, 1.0, 1.0, 1.0};
    const double a[] = {1.0, 0.7, 0.5, 0.85}, l[] = {2e-4, 1e-4, 3e-4, 1.5e-4};
    for (int j = 0; j < 4; ++j) {
        pfarm::resource_sample s;
        s.availability = a[j];
        s.latency = l[j];
        pl.monitors.push_back(s);
    }
    pfarm::sim::workload wl;
    wl.tasks = 4000;
    const std::pair<const char*, std::optional<pfarm::calibration_mode>> runs[] = {
        {"dealdyn-lr", std::nullopt},
        {"dealdyn-mv", std::nullopt},
        {"multi", pfarm::calibration_mode::univariate},
        {"multi", pfarm::calibration_mode::multivariate}};
    for (const auto& [name, mode] : runs) {
        pfarm::technique_options o;
        o.calibration = mode;
        const auto r = pfarm::sim::simulate(pl, wl, name, o);
        const auto n = [&](int j) { return r.workers[static_cast<std::size_t>(j)].tasks; };
        EXPECT_GT(n(0), n(3)) << name;
        EXPECT_GT(n(3), n(1)) << name;
        EXPECT_GT(n(1), n(2)) << name;
        EXPECT_LT(r.makespan / r.lower_bound, mode ? 1.02 : 1.15) << name;
    }
}

TEST(SimulatorScripted, ReadingsMustBeOnePerWorkerAndInRange) {
    pfarm::sim::platform pl;
    pl.task_times = {1.0, 1.0};
    pl.monitors.resize(1);
    pfarm::sim::workload wl;
    wl.tasks = 10;
    EXPECT_THROW(pfarm::sim::simulate(pl, wl, "gss", {}), pfarm::invalid_argument);
    pl.monitors.resize(2);
    pl.monitors[1].availability = 1.5;
    EXPECT_THROW(pfarm::sim::simulate(pl, wl, "gss", {}), pfarm::invalid_argument);
}

}  // namespace

namespace {

// Measured costs replace the shape: a farm trace of an ss run (one task per chunk) or a plain list.
TEST(SimulatorCosts, ReplaysATraceOrAList) {
    const std::string trace = ::testing::TempDir() + "pfarm-costs-trace.csv";
    {
        std::ofstream out(trace);
        out << "# pfarm trace: technique ss\n"
            << "rank,first,count,sent,started,finished,received,calibration,availability,run_queue,load1,latency,benchmark\n"
            << "1,1,1,0,0.5,2.5,2.6,0,,,,,\n"
            << "2,0,1,0,0.1,1.1,1.2,0,,,,,\n";
    }
    EXPECT_EQ(pfarm::sim::load_costs(trace), (std::vector<double>{1.0, 2.0}));
    const std::string list = ::testing::TempDir() + "pfarm-costs.txt";
    {
        std::ofstream out(list);
        out << "3\n1\n";
    }
    pfarm::sim::workload wl;
    wl.tasks = 2;
    wl.costs = pfarm::sim::load_costs(list);
    pfarm::sim::platform pl;
    pl.task_times = {1.0};
    const auto r = pfarm::sim::simulate(pl, wl, "ss", {});
    EXPECT_DOUBLE_EQ(r.makespan, 4.0);
    EXPECT_DOUBLE_EQ(r.lower_bound, 4.0);
    wl.tasks = 3;
    EXPECT_THROW(pfarm::sim::simulate(pl, wl, "ss", {}), pfarm::invalid_argument);
    {
        std::ofstream out(list);
        out << "3\n-1\n";
    }
    EXPECT_THROW(pfarm::sim::load_costs(list), pfarm::invalid_argument);
}

// Any trace the trace module writes replays: JSON too, and pfarm-sim's own (the simulator source); chunks of
// more than one task, a task missing and a broken trace are refused, naming "costs" (or what the caller passes).
TEST(SimulatorCosts, ReplaysAnyTraceOfTheOneSchema) {
    pfarm::trace_summary s;
    s.technique = "ss", s.tasks = 3;
    std::vector<pfarm::chunk_trace> chunks = {{1, 2, 1, 0.0, 0.5, 3.5, 3.6, false, {}},
                                              {2, 0, 1, 0.0, 0.1, 1.1, 1.2, false, {}},
                                              {1, 1, 1, 0.0, 1.5, 3.5, 3.6, false, {}}};
    for (const char* name : {"pfarm-costs-trace.json", "pfarm-costs-trace-sim.csv"}) {
        const std::string path = ::testing::TempDir() + name;
        s.source = std::string(name).find("sim") != std::string::npos ? pfarm::trace_source::simulator
                                                                      : pfarm::trace_source::farm;
        pfarm::write_trace(path, s, chunks);
        EXPECT_EQ(pfarm::sim::load_costs(path), (std::vector<double>{1.0, 2.0, 3.0})) << name;
    }
    const std::string path = ::testing::TempDir() + "pfarm-costs-trace-bad.csv";
    pfarm::write_trace(path, s, {chunks[1], {1, 1, 2, 0.0, 1.5, 3.5, 3.6, false, {}}});  // tasks 1 and 2 together
    const auto message = expect_invalid([&] { pfarm::sim::load_costs(path); }, "costs");
    EXPECT_NE(message.find("technique ss"), std::string::npos) << message;
    expect_invalid([&] { pfarm::sim::load_costs(path, "--costs"); }, "--costs");
    s.tasks = 2;
    pfarm::write_trace(path, s, {chunks[0], chunks[2]});  // task 0 missing
    expect_invalid([&] { pfarm::sim::load_costs(path); }, "costs");
    {
        std::ofstream out(path);
        out << "rank,first,count,sent,started,finished,received,calibration\n1,0,1,0,0.5,abc,1,0\n";
    }
    const auto broken = expect_invalid([&] { pfarm::sim::load_costs(path); }, "costs");
    EXPECT_NE(broken.find(":2: column 'finished'"), std::string::npos) << broken;
}

}  // namespace

// --- reclaim (work take-back) ------------------------------------------------------------------------------

namespace {

/// With reclaim the trace is not in task order: every task must still be in exactly one chunk, and a worker
/// computes one chunk at a time.
void expect_reclaim_consistent(const sim::result& r, task_count tasks) {
    std::vector<int> seen(static_cast<std::size_t>(tasks), 0);
    std::vector<std::vector<std::pair<double, double>>> spans(r.workers.size());
    task_count total = 0;
    for (const auto& c : r.trace) {
        EXPECT_GE(c.count, 1);
        EXPECT_LT(c.started, c.finished);
        for (task_count t = c.first; t < c.first + c.count; ++t) ++seen[static_cast<std::size_t>(t)];
        spans[static_cast<std::size_t>(c.rank)].emplace_back(c.started, c.finished);
    }
    for (const auto& w : r.workers) total += w.tasks;
    EXPECT_EQ(total, tasks);
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
    for (auto& s : spans) {
        std::sort(s.begin(), s.end());
        for (std::size_t i = 1; i < s.size(); ++i) EXPECT_LE(s[i - 1].second, s[i].first + 1e-9);
    }
}

}  // namespace

TEST(SimulatorReclaim, EveryTechniqueKeepsEveryTaskExactlyOnce) {
    sim::platform loaded = make_platform({1, 1.5, 2, 6}, 0.02, 0.01);
    loaded.load_changes = {{0, 40.0, 3.0}, {2, 10.0, 0.5}, {0, 120.0, 1.0}, {3, 30.0, 4.0}};
    task_count moved[2] = {0, 0};
    for (const auto& info : pfarm::techniques()) {
        for (auto shape : {workload_shape::uniform, workload_shape::random, workload_shape::mandelbrot}) {
            for (bool prefetch : {false, true}) {
                for (bool reclaim : {false, true}) {
                    for (bool computes : {false, true}) {  // the farmer's own worker is worker 0 (a victim too)
                        SCOPED_TRACE(info.name + " / " + sim::to_string(shape) + (prefetch ? " / prefetch" : "") +
                                     (reclaim ? " / reclaim" : "") + (computes ? " / farmer computes" : ""));
                        const auto r = sim::simulate(
                            loaded, make_workload(600, shape, 3), info.name, runnable_options(),
                            {.keep_trace = true, .reclaim = reclaim, .prefetch = prefetch, .farmer_computes = computes});
                        EXPECT_GE(r.makespan, r.lower_bound * (1.0 - 1e-12));
                        expect_reclaim_consistent(r, 600);
                        if (!reclaim) EXPECT_EQ(r.reclaims, 0);
                        moved[prefetch] += r.reclaimed_tasks;
                    }
                }
            }
        }
    }
    EXPECT_GT(moved[0], 0);
    EXPECT_GT(moved[1], 0);
}

TEST(SimulatorPrefetch, HidesTheRequestCost) {
    // Four equal workers, ss, a request costing the farmer 0.1 and a round trip of 0.2 against tasks of 1: without
    // prefetch every task waits for its reply (about 0.3 each); with prefetch the reply arrives while the task
    // before computes, and the farmer (0.1 per answer, 4 workers) keeps up.
    const auto platform = make_platform({1, 1, 1, 1}, 0.1, 0.1);
    const auto plain = sim::simulate(platform, make_workload(400), "ss", {});
    const auto ahead = sim::simulate(platform, make_workload(400), "ss", {}, {.keep_trace = true, .prefetch = true});
    EXPECT_GT(plain.makespan, 1.25 * plain.lower_bound);
    EXPECT_LT(ahead.makespan, 1.02 * ahead.lower_bound);
    EXPECT_EQ(ahead.chunks, 400);
    expect_reclaim_consistent(ahead, 400);
    // A worker computes its chunks back to back once the first has arrived.
    for (std::size_t i = 1; i < ahead.trace.size(); ++i) {
        const auto& c = ahead.trace[i];
        if (c.rank == 0 && c.first > 3) {
            const auto previous = std::find_if(ahead.trace.rbegin() + static_cast<long>(ahead.trace.size() - i),
                                               ahead.trace.rend(), [](const auto& x) { return x.rank == 0; });
            ASSERT_NE(previous, ahead.trace.rend());
            EXPECT_NEAR(c.started, previous->finished, 1e-9);
        }
    }
}

TEST(SimulatorPrefetch, WithReclaimTakesTheTailBack) {
    // static on times 1, 1, 1, 4 with prefetch: the three fast workers finish at 100, ask with nothing in hand
    // (their prefetch request got `later`), and take the slow worker's unstarted tasks back.
    const auto platform = make_platform({1, 1, 1, 4}, 0.01, 0.0);
    const auto r = sim::simulate(platform, make_workload(400), "static", {},
                                 {.keep_trace = true, .reclaim = true, .prefetch = true});
    EXPECT_GT(r.reclaims, 0);
    EXPECT_LT(r.makespan, 1.1 * r.lower_bound);
    expect_reclaim_consistent(r, 400);
}

TEST(SimulatorReclaim, StaticOnAHeterogeneousPlatformComesCloseToTheBound) {
    // Four equal blocks of 100; the worker of time 4 would finish at 400. With reclaim the three fast workers
    // take its unstarted tasks back: the makespan comes near the bound 400 / 3.25 = 123.1.
    const auto platform = make_platform({1, 1, 1, 4}, 0.01, 0.0);
    const auto plain = sim::simulate(platform, make_workload(400), "static", {});
    const auto taken = sim::simulate(platform, make_workload(400), "static", {}, {.keep_trace = true, .reclaim = true});
    EXPECT_NEAR(plain.makespan, 400.0, 1.0);
    EXPECT_EQ(plain.reclaims, 0);
    EXPECT_GT(taken.reclaims, 0);
    EXPECT_LT(taken.makespan, 1.1 * taken.lower_bound);
    expect_reclaim_consistent(taken, 400);
}

TEST(SimulatorReclaim, TheEndGameKeepsASlowWorkerOffTheLastTask) {
    // ss, 12 unit tasks, task times 1 and 4, no overhead. Worker 1 computes task 1 (0-4) and task 6 (4-8), worker 0
    // the others up to task 10 (8-9). At 8 worker 1 asks for the last task, task 11: it would end it at 12, worker
    // 0 at 10 after the task it holds (plus one task's allowance: 11 < 12), so worker 1 waits; worker 0 takes it at
    // 9 and the loop ends at 10. Without reclaim's end game worker 1 takes it and the loop ends at 12.
    const auto platform = make_platform({1, 4}, 0.0, 0.0);
    const auto plain = sim::simulate(platform, make_workload(12), "ss", {}, {.keep_trace = true});
    const auto r = sim::simulate(platform, make_workload(12), "ss", {}, {.keep_trace = true, .reclaim = true});
    EXPECT_DOUBLE_EQ(plain.makespan, 12.0);
    EXPECT_DOUBLE_EQ(r.makespan, 10.0);
    EXPECT_EQ(r.workers[1].tasks, 2);
    EXPECT_EQ(r.reclaims, 0);  // nothing was taken back: the last task never went to the slow worker
    expect_reclaim_consistent(r, 12);
    // With a service time per request every task still runs once.
    const auto served = sim::simulate(make_platform({1, 4}, 0.5, 0.0), make_workload(12), "ss", {},
                                      {.keep_trace = true, .reclaim = true});
    expect_reclaim_consistent(served, 12);
}

TEST(SimulatorReclaim, AVictimsAnswerGoesBeforeAQueuedRequest) {
    // static, 30 unit tasks, times 0.5, 1, 1, overhead 0.5: blocks of 10 served 0-0.5, 0.5-1, 1-1.5; w0 ends
    // at 5.5 and is sent to take back from w1 (5.5-6); w1 answers at its task boundary 6 with 3 of its 5
    // unstarted tasks (share 2/3: its pace, the others' mean, against w0's 0.5 s a task), which w0 computes
    // 6.5-8. At 8 both w0 and w1 ask (w1 has just ended tasks 10-16): w0 goes first and is sent to w1 (8-8.5),
    // which is past its estimate and looks half-way. w1's answer (0: it has finished) reaches the farmer at 8.5
    // while w1's request (there since 8) still waits. The answer goes first (8.5-9): w0 is sent to w2, which
    // answers at its boundary 9.5 with task 29 (of 28-29); w0 computes it 10-10.5, the makespan. Served in
    // arrival order, w1's request would have gone first and w1 been sent to w2 (8.5-9): w1 computes task 29
    // 10-11, and the makespan is 11.
    const auto r = sim::simulate(make_platform({0.5, 1, 1}, 0.5), make_workload(30), "static", {},
                                 {.keep_trace = true, .reclaim = true});
    ASSERT_EQ(r.trace.size(), 5u);
    EXPECT_EQ(r.trace[3].rank, 0);
    EXPECT_EQ(r.trace[3].first, 17);
    EXPECT_DOUBLE_EQ(r.trace[3].started, 6.5);
    EXPECT_EQ(r.trace[4].rank, 0);
    EXPECT_EQ(r.trace[4].first, 29);
    EXPECT_EQ(r.trace[4].count, 1);
    EXPECT_DOUBLE_EQ(r.trace[4].started, 10.0);
    EXPECT_DOUBLE_EQ(r.makespan, 10.5);
    expect_reclaim_consistent(r, 30);
}

TEST(SimulatorReclaim, AParkedThiefAskedAgainCostsNothingWhenItWaitsAgain) {
    // static, 60 unit tasks on 6 workers (times 2, 1, 2, 2, 4, 2), overhead 1. Worker 4 (4 s/task) holds tasks
    // 40-49 from 5 and is asked in the tail, on behalf of w1 and of w2, idle beside it from 21; it answers at its
    // task boundary 25 with 46-49 (5/6 of its 5 unstarted tasks, the share for two thieves), cut in two: 46-47
    // go to w1 (25-26), 48-49 to w2 when it is asked again (26-27). Workers parked meanwhile are asked again after
    // every answer; when they get `wait` again no message leaves the farmer and no overhead is charged, so the
    // reply to w1 leaves at 26 and w1 starts then. w2 ends 48-49 at 31, the makespan (33 with the whole answer to
    // w1, which computed 47-49 26-29 while w4 ended at 33).
    const auto r = sim::simulate(make_platform({2, 1, 2, 2, 4, 2}, 1.0), make_workload(60), "static", {},
                                 {.keep_trace = true, .reclaim = true});
    const auto it = std::find_if(r.trace.begin(), r.trace.end(), [](const auto& c) { return c.first == 46; });
    ASSERT_NE(it, r.trace.end());
    EXPECT_EQ(it->rank, 1);
    EXPECT_EQ(it->count, 2);
    EXPECT_DOUBLE_EQ(it->started, 26.0);
    const auto piece = std::find_if(r.trace.begin(), r.trace.end(), [](const auto& c) { return c.first == 48; });
    ASSERT_NE(piece, r.trace.end());
    EXPECT_EQ(piece->rank, 2);
    EXPECT_EQ(piece->count, 2);
    EXPECT_DOUBLE_EQ(piece->started, 27.0);
    EXPECT_DOUBLE_EQ(r.makespan, 31.0);
    expect_reclaim_consistent(r, 60);
}

TEST(SimulatorRunQueue, TheFirstRequestsReadingCounts) {
    // dgss with equal weights; worker 0 carries a run queue of 4 from t = 0 (load factor 4), worker 1 none:
    // A = 1/4 and 1, shares 0.2 and 0.8. Worker 0's first request (no results yet) carries that reading, so its
    // first chunk is ceil(100 x 0.2) = 20 and it never gets more: 20 tasks in all (50 if the reading of a
    // request without results were dropped).
    auto p = make_platform({1, 1});
    p.load_changes = {{0, 0.0, 4.0}};
    pfarm::technique_options o;
    o.weights = {1, 1};
    const auto r = sim::simulate(p, make_workload(100), "dgss", o);
    EXPECT_EQ(r.workers[0].tasks, 20);
    EXPECT_EQ(r.workers[0].chunks.front(), 20);
}

TEST(SimulatorRunQueue, CalibratedPowersCountTheLoadOnce) {
    // dgss without weights calibrates: worker 0, loaded 4 times, takes 4 s for its calibration task, worker 1
    // 1 s, so the measured powers are 1/4 and 1; they were measured under run queues 4 and 1, so the powers on
    // their own are equal, and A_j = V_j / Q_j gives back 1/4 and 1: worker 0 gets a fifth of the work (about
    // 200 of 1,000 tasks) and both end near the bound 800. Dividing the measured power by Q again would give
    // it 1/16 and overload worker 1 (940 tasks, 1.18 times the bound).
    auto p = make_platform({1, 1});
    p.load_changes = {{0, 0.0, 4.0}};
    const auto r = sim::simulate(p, make_workload(1000), "dgss", {});
    EXPECT_NEAR(static_cast<double>(r.workers[0].tasks), 200.0, 5.0);
    EXPECT_LT(r.makespan, 1.01 * r.lower_bound);
}

TEST(SimulatorReclaim, NothingToTakeBackOnAnEvenPlatform) {
    // Equal workers and equal blocks finish together: the first idle worker finds no victim worth asking.
    const auto r = sim::simulate(make_platform({1, 1, 1, 1}, 0.01), make_workload(400), "static", {},
                                 {.reclaim = true});
    EXPECT_EQ(r.reclaims, 0);
    EXPECT_EQ(r.chunks, 4);
}

TEST(SimulatorReclaim, AFarmerProfileOfFewerBinsStillDeliversEveryTask) {
    // auto's predictions reclaim with a coarser cost profile (run_options::profile_bins): the same protocol, every task
    // once, and a bad count named.
    const auto platform = make_platform({1, 2, 4, 8}, 0.01);
    for (int bins : {1, 16, 64}) {
        const auto r = sim::simulate(platform, make_workload(2000, workload_shape::mandelbrot), "fss", {},
                                     {.reclaim = true, .profile_bins = bins});
        task_count tasks = 0;
        for (const auto& w : r.workers) tasks += w.tasks;
        EXPECT_EQ(tasks, 2000) << bins << " bins";
        EXPECT_GT(r.reclaims, 0) << bins << " bins";
    }
    expect_invalid([&] { sim::simulate(platform, make_workload(100), "fss", {}, {.reclaim = true, .profile_bins = 0}); },
                   "profile_bins");
    sim::run_options hierarchical;
    hierarchical.farmer = sim::farmer_kind::hierarchical;
    hierarchical.masters = 2;
    hierarchical.reclaim = true;
    hierarchical.profile_bins = 16;
    expect_invalid([&] { sim::simulate(platform, make_workload(100), "fss", {}, hierarchical); }, "profile_bins");
}

TEST(FarmerReclaim, ErrorsNameTheArgumentOrTheBrokenProtocol) {
    pfarm::farmer f(10, 2, pfarm::make_technique("static", {}, 2), 1, 1, true);
    expect_invalid([&] { f.set_request_cost(-1.0); }, "request_cost");
    expect_invalid([&] { f.set_profile_bins(0); }, "profile_bins");
    EXPECT_THROW(f.released(0, {5, 0}), pfarm::internal_error);  // nobody asked worker 0 for anything
    ASSERT_EQ(f.request(0, 0.0).what, pfarm::decision::kind::assign);  // tasks 0..4
    ASSERT_EQ(f.request(1, 0.0).what, pfarm::decision::kind::assign);  // tasks 5..9
    f.complete(1, 1.0);
    const auto d = f.request(1, 1.0);  // the pool is empty: worker 0's chunk is the victim
    ASSERT_EQ(d.what, pfarm::decision::kind::reclaim);
    EXPECT_EQ(d.victim, 0);
    EXPECT_THROW(f.request(1, 1.0), pfarm::internal_error);  // a thief waits for its answer
    EXPECT_THROW(f.set_profile_bins(16), pfarm::internal_error);  // the profile has a completion in it
    expect_invalid([&] { f.released(0, {5, -1}); }, "given");
    pfarm::farmer g(10, 2, pfarm::make_technique("static", {}, 2), 1, 1, true);
    g.request(0, 0.0), g.request(1, 0.0), g.complete(1, 1.0);
    ASSERT_EQ(g.request(1, 1.0).what, pfarm::decision::kind::reclaim);
    EXPECT_THROW(g.released(0, {0, 5}), pfarm::internal_error);  // it cannot give back all 5: one has started
    EXPECT_THROW(g.released(0, {2, 2}), pfarm::internal_error);  // not the end of its chunk [0, 5)
    pfarm::farmer h(10, 2, pfarm::make_technique("static", {}, 2), 1, 1, true);
    h.request(0, 0.0), h.request(1, 0.0), h.complete(1, 1.0);
    ASSERT_EQ(h.request(1, 1.0).what, pfarm::decision::kind::reclaim);
    const auto o = h.released(0, {3, 2}, 1.5);  // tasks 3, 4 go to worker 1
    EXPECT_EQ(o.thief, 1);
    ASSERT_EQ(o.answer.what, pfarm::decision::kind::assign);
    EXPECT_EQ(o.answer.work, (pfarm::chunk{3, 2}));
    EXPECT_EQ(h.reclaims(), 1);
    EXPECT_EQ(h.reclaimed_tasks(), 2);
    h.complete(0, 3.0);  // worker 0 completes tasks 0..2
    h.complete(1, 2.0);
    EXPECT_TRUE(h.done());
}

// static keeps worker 2's block until worker 2 asks. With reclaim a worker past its block takes a piece of the
// unassigned tasks (a share among the 3 workers) instead of stopping: worker 2 may be busy long after (a chunk of the
// technique `auto` went on from). Without reclaim it stops, as the technique says.
TEST(FarmerReclaim, AWorkerPastItsShareTakesAPieceOfTheUnassignedTasks) {
    pfarm::farmer f(30, 3, pfarm::make_technique("static", {}, 3), 1, 1, true);
    EXPECT_EQ(f.request(0, 0.0).work, (pfarm::chunk{0, 10}));
    EXPECT_EQ(f.request(1, 0.0).work, (pfarm::chunk{10, 10}));
    f.complete(1, 1.0);
    const auto piece = f.request(1, 1.0);
    ASSERT_EQ(piece.what, pfarm::decision::kind::assign);
    EXPECT_EQ(piece.work, (pfarm::chunk{20, 4}));  // ceil(10 / 3)
    EXPECT_EQ(f.request(2, 1.5).work, (pfarm::chunk{24, 6}));  // its block, cut to what is left
    f.complete(0, 2.0), f.complete(1, 2.0), f.complete(2, 2.0);
    EXPECT_TRUE(f.done());
    pfarm::farmer g(30, 3, pfarm::make_technique("static", {}, 3), 1, 1, false);
    g.request(0, 0.0), g.request(1, 0.0), g.complete(1, 1.0);
    EXPECT_EQ(g.request(1, 1.0).what, pfarm::decision::kind::stop);
}

// With prefetch: a worker that asks while holding a chunk and finds the pool empty gets `later`; a victim
// holding two chunks gives back from the newer, never all of it.
TEST(FarmerReclaim, WithPrefetchTheNewerChunkGivesBack) {
    pfarm::technique_options o;
    o.chunk = 3;
    pfarm::farmer f(12, 2, pfarm::make_technique("css", o, 2), 1, 2, true);
    EXPECT_EQ(f.request(0, 0.0).work, (pfarm::chunk{0, 3}));
    EXPECT_EQ(f.request(0, 0.0).work, (pfarm::chunk{3, 3}));  // prefetched
    EXPECT_EQ(f.request(1, 0.0).work, (pfarm::chunk{6, 3}));
    EXPECT_EQ(f.request(1, 0.0).work, (pfarm::chunk{9, 3}));
    f.complete(1, 3.0);
    EXPECT_EQ(f.request(1, 3.0).what, pfarm::decision::kind::later);  // holds [9, 12): ask again when done
    f.complete(1, 3.0);
    const auto d = f.request(1, 6.0);  // nothing in hand now: worker 0's newer chunk [3, 6) is the victim
    ASSERT_EQ(d.what, pfarm::decision::kind::reclaim);
    EXPECT_EQ(d.victim, 0);
    EXPECT_THROW(f.released(0, {3, 3}), pfarm::internal_error);  // all of a chunk: never
    const auto o2 = f.released(0, {4, 2}, 6.5);
    ASSERT_EQ(o2.answer.what, pfarm::decision::kind::assign);
    EXPECT_EQ(o2.answer.work, (pfarm::chunk{4, 2}));
    f.complete(0, 6.0);  // [0, 3)
    f.complete(0, 2.0);  // [3, 4)
    f.complete(1, 2.0);  // [4, 6)
    EXPECT_TRUE(f.done());
}

// css 10 over 40 tasks, prefetch: w0 holds [0, 10) and [10, 20), w1 [20, 30) and [30, 40). w0 does its first chunk
// at 1 s/task, w1 at 0.1 s/task. At 10.5 w1 asks ahead holding [30, 40) (busy 10 x 0.1 = 1 s): w0, guessed half-way
// through [10, 20), is asked for part of it on w1's behalf.
namespace {

void busy_thief_sent_to_w0(pfarm::farmer& f) {
    EXPECT_EQ(f.request(0, 0.0).work, (pfarm::chunk{0, 10}));
    EXPECT_EQ(f.request(0, 0.0).work, (pfarm::chunk{10, 10}));
    EXPECT_EQ(f.request(1, 0.0).work, (pfarm::chunk{20, 10}));
    EXPECT_EQ(f.request(1, 0.0).work, (pfarm::chunk{30, 10}));
    f.complete(0, 10.0);
    f.complete(1, 1.0);
    const auto ahead = f.request(1, 10.5);
    ASSERT_EQ(ahead.what, pfarm::decision::kind::reclaim);
    EXPECT_EQ(ahead.victim, 0);
    EXPECT_GT(ahead.thief_busy, 0.0);
}

/// css with chunks of 10 over `tasks` on `workers`, with reclaim (`held`: chunks a worker may hold, 2 with prefetch).
pfarm::farmer css10_with_reclaim(pfarm::task_count tasks, int workers, int held) {
    pfarm::technique_options o;
    o.chunk = 10;
    return pfarm::farmer(tasks, workers, pfarm::make_technique("css", o, workers), 1, held, true);
}

}  // namespace

TEST(FarmerReclaim, NothingForABusyThiefKeepsTheVictimForTheNext) {
    // w0 gives nothing (its thief is busy): w1 is told `later`, and w0 stays a victim, so that w1, asking again with
    // nothing in hand, is sent to it again (a victim flagged "asked no more" after such an answer kept its whole
    // chunk to the end: a quality-study run went from 1.09 to 2.63 of the bound).
    pfarm::farmer f = css10_with_reclaim(40, 2, 2);
    busy_thief_sent_to_w0(f);
    const auto nothing = f.released(0, {20, 0}, 10.6);
    EXPECT_EQ(nothing.thief, 1);
    EXPECT_EQ(nothing.answer.what, pfarm::decision::kind::later);
    f.complete(1, 1.0);
    const auto again = f.request(1, 11.6);
    ASSERT_EQ(again.what, pfarm::decision::kind::reclaim);
    EXPECT_EQ(again.victim, 0);
    EXPECT_EQ(again.thief_busy, 0.0);
}

TEST(FarmerReclaim, NothingForABusyThiefWhoseResultsCameMeanwhileKeepsTheVictimAndAsksItAgain) {
    // As above, but w1's chunk ends before w0's answer and its results come at once (worker_session's early
    // results): w1 holds nothing when w0 answers "nothing". w0 gave nothing because w1 was busy when asked, not
    // because it had nothing unstarted, so it stays a victim, and w1, idle now, is sent to it again at once.
    // (Judged by w1's state at the answer, w0 was retired as a victim and kept a 292-task chunk to 2.6 times the
    // bound in a quality-study run with prefetch and reclaim.)
    pfarm::farmer f = css10_with_reclaim(40, 2, 2);
    busy_thief_sent_to_w0(f);
    f.complete(1, 1.0);  // [30, 40): its results, before w0's answer
    const auto nothing = f.released(0, {20, 0}, 11.6);
    EXPECT_EQ(nothing.thief, 1);
    ASSERT_EQ(nothing.answer.what, pfarm::decision::kind::reclaim);
    EXPECT_EQ(nothing.answer.victim, 0);
    EXPECT_EQ(nothing.answer.thief_busy, 0.0);
    const auto given = f.released(0, {15, 5}, 11.7);
    ASSERT_EQ(given.answer.what, pfarm::decision::kind::assign);
    EXPECT_EQ(given.answer.work, (pfarm::chunk{15, 5}));
}

TEST(FarmerReclaim, AVictimsAnswerIsCutForEveryIdleWorker) {
    // css 10 over 40 tasks, four workers: w1-w3 end their chunks in 1 s (0.1 s/task), w0 holds [0, 10) and at 5 s
    // has shown 1 s/task. w1 asks with w2 and w3 idle beside it: the share is for the three (3 t_v / (3 t_v +
    // t_thief) = 0.97, kept within 1 - 1/9), and the answer is cut into a piece for each, w1's first.
    pfarm::farmer f = css10_with_reclaim(40, 4, 1);
    for (int w = 0; w < 4; ++w) EXPECT_EQ(f.request(w, 0.0).work, (pfarm::chunk{10 * w, 10}));
    for (int w = 1; w < 4; ++w) f.complete(w, 1.0);
    const auto d = f.request(1, 5.0);
    ASSERT_EQ(d.what, pfarm::decision::kind::reclaim);
    EXPECT_EQ(d.victim, 0);
    EXPECT_EQ(d.thieves, 3);
    EXPECT_NEAR(d.share, 8.0 / 9.0, 1e-12);
    EXPECT_EQ(f.request(2, 5.0).what, pfarm::decision::kind::wait);  // w0 is being asked
    EXPECT_EQ(f.request(3, 5.0).what, pfarm::decision::kind::wait);
    // w0 at 1 s/task, task 5 next: 8/9 of its 5 unstarted tasks (a single thief would get 2/3: 3 of them).
    const pfarm::chunk given = pfarm::victim_gives(d, 1.0, {0, 10}, 5);
    EXPECT_EQ(given, (pfarm::chunk{6, 4}));
    const auto o1 = f.released(0, given, 5.5);
    EXPECT_EQ(o1.thief, 1);
    ASSERT_EQ(o1.answer.what, pfarm::decision::kind::assign);
    EXPECT_EQ(o1.answer.work, (pfarm::chunk{6, 2}));
    EXPECT_EQ(f.request(2, 5.5).work, (pfarm::chunk{8, 1}));  // the driver asks those waiting again
    EXPECT_EQ(f.request(3, 5.5).work, (pfarm::chunk{9, 1}));
    f.complete(0, 6.0);
    for (int w = 1; w < 4; ++w) f.complete(w, 0.2);
    EXPECT_TRUE(f.done());
    EXPECT_EQ(f.reclaimed_tasks(), 4);
}

// css 10 over 150 tasks, three workers at 0.1 s/task; from 1 s w0 computes [30, 40) far slower. Each second w1
// and w2 end a chunk and take the next. At 3 s w0 has taken twice its chunk's expected time (1 s), not more; at
// 4 s it would still end (guessed as long again to go: at 7 s) before the others finish the pool (9.1 s); at 5 s
// it would end at 9 s, after the others' 8.1 s plus one of its tasks (0.4 s at the pace it has shown): w1, with 30
// tasks still unassigned, is sent to take its unstarted tasks back, for all the others (share n t_v / (n t_v +
// t_thief) for n = 2, kept within 1 - 1/6).
namespace {

pfarm::decision far_behind_w0_asked(pfarm::farmer& f) {
    for (int w = 0; w < 3; ++w) f.request(w, 0.0);
    for (int w = 0; w < 3; ++w) f.complete(w, 1.0);
    for (int w = 0; w < 3; ++w) EXPECT_EQ(f.request(w, 1.0).work, (pfarm::chunk{30 + 10 * w, 10}));
    pfarm::decision d;
    for (double t = 2.0; t <= 5.0; t += 1.0)
        for (int w = 1; w < 3 && d.what != pfarm::decision::kind::reclaim; ++w) {
            f.complete(w, 1.0);
            d = f.request(w, t);
            if (t < 5.0) EXPECT_EQ(d.what, pfarm::decision::kind::assign) << "at " << t << " s, worker " << w;
        }
    return d;
}

}  // namespace

TEST(FarmerReclaim, AWorkerFarBehindGivesBackBeforeThePoolRunsDry) {
    pfarm::farmer f = css10_with_reclaim(150, 3, 1);
    const pfarm::decision d = far_behind_w0_asked(f);
    ASSERT_EQ(d.what, pfarm::decision::kind::reclaim);
    EXPECT_EQ(d.victim, 0);
    EXPECT_EQ(f.remaining(), 30);
    EXPECT_EQ(d.thieves, 2);
    EXPECT_NEAR(d.share, 5.0 / 6.0, 1e-12);
    // w0 at 0.8 s/task, task 35 next: 5/6 of its 5 unstarted tasks go to w1.
    const pfarm::chunk given = pfarm::victim_gives(d, 0.8, {30, 10}, 35);
    EXPECT_EQ(given, (pfarm::chunk{36, 4}));
    const auto back = f.released(0, given, 5.4);
    EXPECT_EQ(back.thief, 1);
    EXPECT_EQ(back.answer.work, (pfarm::chunk{36, 4}));
    // w0, done with what it kept, takes the pool's next chunk as any worker.
    f.complete(1, 0.4);
    f.complete(0, 4.8);
    EXPECT_EQ(f.request(0, 5.8).work, (pfarm::chunk{120, 10}));
}

TEST(FarmerReclaim, AThiefGivenNothingBeforeThePoolRunsDryTakesThePoolsNextChunk) {
    pfarm::farmer f = css10_with_reclaim(150, 3, 1);
    ASSERT_EQ(far_behind_w0_asked(f).what, pfarm::decision::kind::reclaim);
    const auto nothing = f.released(0, {40, 0}, 5.4);  // its last task had started
    EXPECT_EQ(nothing.thief, 1);
    ASSERT_EQ(nothing.answer.what, pfarm::decision::kind::assign);
    EXPECT_EQ(nothing.answer.work, (pfarm::chunk{120, 10}));
}

TEST(FarmerReclaim, VictimGivesFromTheChunkWithMoreUnstartedTasks) {
    pfarm::decision d;
    d.share = 0.5;
    // Computing [0, 10), task 1 next: half of the 9 unstarted tasks, from its end.
    EXPECT_EQ(pfarm::victim_gives(d, 0.0, {0, 10}, 1), (pfarm::chunk{6, 4}));
    // 6 left of [0, 10) and a prefetched [10, 13): half of 9 from the current chunk, which has more.
    EXPECT_EQ(pfarm::victim_gives(d, 0.0, {0, 10}, 4, {10, 3}), (pfarm::chunk{6, 4}));
    // 2 left of [0, 10) and a prefetched [10, 20): half of 12 from the prefetched chunk, keeping one task of it.
    EXPECT_EQ(pfarm::victim_gives(d, 0.0, {0, 10}, 8, {10, 10}), (pfarm::chunk{14, 6}));
    EXPECT_EQ(pfarm::victim_gives(d, 0.0, {0, 2}, 2, {2, 4}), (pfarm::chunk{4, 2}));
    // Times decide the share: a victim 2x slower than the thief gives 2/3.
    d.thief_seconds = 1.0;
    EXPECT_EQ(pfarm::victim_gives(d, 2.0, {0, 10}, 1), (pfarm::chunk{4, 6}));
    EXPECT_EQ(pfarm::victim_gives(d, 2.0, {0, 10}, 10).count, 0);       // nothing unstarted
    EXPECT_EQ(pfarm::victim_gives(d, 2.0, {0, 3}, 3, {3, 1}).count, 0);  // a prefetched chunk of one task stays whole
    // A current chunk none of whose tasks has started keeps its first task too (released() takes only an end):
    // 2/3 of [12, 14) and a prefetched [16, 18) would be 2 tasks of the current chunk, its whole.
    EXPECT_EQ(pfarm::victim_gives(d, 2.0, {12, 2}, 12, {16, 2}), (pfarm::chunk{13, 1}));
    EXPECT_EQ(pfarm::victim_gives(d, 2.0, {12, 1}, 12).count, 0);
    // For three idle thieves together: 3 x 2 / (3 x 2 + 1) = 6/7 of the 9 unstarted tasks, 7 of them.
    d.thieves = 3;
    EXPECT_EQ(pfarm::victim_gives(d, 2.0, {0, 10}, 1), (pfarm::chunk{3, 7}));
}
