// One convention per API for naming a bad argument (pfarm/error.hpp). The C++ library names it by its
// C++ name (the parameter, or the field of the options struct: "min_chunk", "task_times"), never by a
// command-line flag ("--min-chunk"), which only the tools show (tests/cli). These tests drive every technique of
// the registry through every driver of the core, the simulator's own inputs, the calibration and the monitors
// with bad input, and fail on any argument spelt like a flag.
#include "test_support.hpp"

#include "pfarm/calibration.hpp"
#include "pfarm/emulation.hpp"
#include "pfarm/error.hpp"
#include "pfarm/farmer.hpp"
#include "pfarm/monitors.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/round_robin.hpp"
#include "pfarm/simulator.hpp"
#include "pfarm/trace.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace {

using pfarm::technique_options;

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

/// Runs `body`; when it throws pfarm::invalid_argument, checks the name: not a flag, what() is "<argument>: ...",
/// and `expected` when given. Returns whether it threw invalid_argument about the options: a statistical
/// calibration without its readings (the round robin given no samples) names the reading that is missing, which is
/// about the samples, not the option under test.
bool check_name(const std::function<void()>& body, const std::string& expected, const std::string& context) {
    try {
        body();
    } catch (const pfarm::invalid_argument& e) {
        const std::string what = e.what();
        if (e.message().starts_with("missing for worker")) {  // calibration's readings (calibration/src/regression.cpp)
            EXPECT_TRUE(e.argument() == "availability" || e.argument() == "latency" || e.argument() == "benchmark")
                << context << ": " << what;
            return false;
        }
        EXPECT_FALSE(e.argument().empty()) << context << ": " << what;
        EXPECT_NE(e.argument().rfind("--", 0), 0u) << context << ": a library error names a flag: " << what;
        EXPECT_EQ(what, e.argument() + ": " + e.message()) << context;
        if (!expected.empty()) EXPECT_EQ(e.argument(), expected) << context << ": " << what;
        return true;
    }
    return false;
}

/// One bad technique option and the field name every error about it must carry ("" for "whatever is missing").
struct bad_option {
    std::string label;
    std::function<void(technique_options&)> set;
    std::string expected;
};

std::vector<bad_option> bad_options() {
    return {
        {"nothing set (a required option missing)", [](technique_options&) {}, ""},
        {"min_chunk 0", [](technique_options& o) { o.min_chunk = 0; }, "min_chunk"},
        {"chunk 0", [](technique_options& o) { o.chunk = 0; }, "chunk"},
        {"factor 0", [](technique_options& o) { o.factor = 0.0; }, "factor"},
        {"factor nan", [](technique_options& o) { o.factor = nan; }, "factor"},
        {"first 0", [](technique_options& o) { o.first = 0; }, "first"},
        {"last 0", [](technique_options& o) { o.last = 0; }, "last"},
        {"first below last", [](technique_options& o) { o.first = 2, o.last = 5; }, "first"},
        {"stages 1", [](technique_options& o) { o.stages = 1; }, "stages"},
        {"static_percent 120", [](technique_options& o) { o.static_percent = 120.0; }, "static_percent"},
        {"static_percent -1", [](technique_options& o) { o.static_percent = -1.0; }, "static_percent"},
        {"weights: one for 3 workers", [](technique_options& o) { o.weights = {1.0}; }, "weights"},
        {"weights: a negative one", [](technique_options& o) { o.weights = {1.0, -1.0, 1.0}; }, "weights"},
        {"run_queue 0.5", [](technique_options& o) { o.run_queue = {1.0, 0.5, 1.0}; }, "run_queue"},
        {"times: a zero", [](technique_options& o) { o.times = {1.0, 0.0, 1.0}; }, "times"},
        {"k 0", [](technique_options& o) { o.k = 0.0; }, "k"},
        {"calibration none", [](technique_options& o) { o.calibration = pfarm::calibration_mode::none; },
         "calibration"},
        {"overhead -1", [](technique_options& o) { o.overhead = -1.0; }, "overhead"},
        {"sigma 0", [](technique_options& o) { o.sigma = 0.0; }, "sigma"},
    };
}

TEST(ArgumentNames, EveryTechniqueUnderEveryDriverNamesTheField) {
    constexpr int workers = 3;
    constexpr pfarm::task_count tasks = 40;
    pfarm::sim::platform platform;
    platform.task_times = {1.0, 2.0, 3.0};
    pfarm::sim::workload workload;
    workload.tasks = tasks;
    int thrown = 0;
    const pfarm::candidate_predictor predictor = pfarm::sim::make_predictor(0.0, 0.0, {});  // for auto
    for (const auto& t : pfarm::techniques()) {
        for (const auto& bad : bad_options()) {
            // The bad option on top of the required ones (css's chunk, fsc's overhead and sigma), or nothing at all.
            technique_options o;
            if (!bad.expected.empty()) o.chunk = 3, o.overhead = 0.1, o.sigma = 0.5;
            bad.set(o);
            const std::string context = t.name + ", " + bad.label;
            const bool made = check_name([&] { (void)pfarm::make_technique(t.name, o, workers); }, bad.expected,
                                         context + ", make_technique");
            const bool scheduled = check_name(
                [&] { (void)pfarm::schedule_round_robin(t.name, tasks, workers, o, {}, &predictor); }, bad.expected,
                context + ", schedule_round_robin");
            const bool simulated = check_name([&] { (void)pfarm::sim::simulate(platform, workload, t.name, o); },
                                              bad.expected, context + ", simulate");
            // What make_technique refuses, every driver refuses (some options are checked later, at start()).
            if (made) EXPECT_TRUE(scheduled && simulated) << context;
            EXPECT_EQ(scheduled, simulated) << context;
            thrown += made;
        }
    }
    // Options every technique validates (min_chunk, weights...) throw for each of them.
    EXPECT_GT(thrown, static_cast<int>(pfarm::techniques().size()) * 10);
}

TEST(ArgumentNames, TheSimulatorsOwnInputs) {
    const auto platform_of = [](std::vector<double> times) {
        pfarm::sim::platform p;
        p.task_times = std::move(times);
        return p;
    };
    const auto workload_of = [](pfarm::task_count tasks) {
        pfarm::sim::workload w;
        w.tasks = tasks;
        return w;
    };
    const auto simulate = [&](const pfarm::sim::platform& p, const pfarm::sim::workload& w) {
        return [=] { (void)pfarm::sim::simulate(p, w, "gss", {}); };
    };
    struct input {
        std::string label;
        std::function<void()> body;
        std::string expected;
    };
    auto overhead = platform_of({1.0, 1.0});
    overhead.overhead = -1.0;
    auto latency = platform_of({1.0, 1.0});
    latency.latency = nan;
    auto change = platform_of({1.0, 1.0});
    change.load_changes = {{5, 1.0, 2.0}};
    auto availability = platform_of({1.0, 1.0});
    availability.monitors.resize(2);
    availability.monitors[0].availability = 0.0;
    auto latency_reading = platform_of({1.0, 1.0});
    latency_reading.monitors.resize(2);
    latency_reading.monitors[1].latency = -1.0;
    auto benchmark = platform_of({1.0, 1.0});
    benchmark.monitors.resize(2);
    benchmark.monitors[1].benchmark = -1.0;
    auto monitors = platform_of({1.0, 1.0});
    monitors.monitors.resize(3);
    auto costs = workload_of(3);
    costs.costs = {1.0};
    auto shape = workload_of(3);
    shape.shape = static_cast<pfarm::sim::workload_shape>(99);
    const std::vector<input> inputs{
        {"no workers", simulate(platform_of({}), workload_of(10)), "task_times"},
        {"a task time of 0", simulate(platform_of({1.0, 0.0}), workload_of(10)), "task_times"},
        {"overhead -1", simulate(overhead, workload_of(10)), "platform.overhead"},
        {"latency nan", simulate(latency, workload_of(10)), "latency"},
        {"a load change of worker 5", simulate(change, workload_of(10)), "load_changes"},
        {"availability 0", simulate(availability, workload_of(10)), "monitors.availability"},
        {"latency reading -1", simulate(latency_reading, workload_of(10)), "monitors.latency"},
        {"benchmark -1", simulate(benchmark, workload_of(10)), "monitors.benchmark"},
        {"3 monitors for 2 workers", simulate(monitors, workload_of(10)), "monitors"},
        {"0 tasks", simulate(platform_of({1.0}), workload_of(0)), "tasks"},
        {"1 cost for 3 tasks", simulate(platform_of({1.0}), costs), "costs"},
        {"shape 99", simulate(platform_of({1.0}), shape), "shape"},
        {"parse_shape", [] { (void)pfarm::sim::parse_shape("spiral"); }, "shape"},
        {"load_platform", [] { (void)pfarm::sim::load_platform("/nonexistent/pfarm/platform.json"); }, "platform"},
        {"load_costs", [] { (void)pfarm::sim::load_costs("/nonexistent/pfarm/costs.txt"); }, "costs"},
    };
    for (const auto& in : inputs) EXPECT_TRUE(check_name(in.body, in.expected, in.label)) << in.label << ": no error";
}

TEST(ArgumentNames, RoundRobinFarmerCalibrationAndMonitors) {
    const std::vector<double> one_negative{1.0, -1.0};
    std::vector<pfarm::resource_sample> samples(2);
    samples[0].availability = 0.5, samples[1].availability = -0.5;
    const std::vector<double> times{1.0, 2.0};
    struct input {
        std::string label;
        std::function<void()> body;
        std::string expected;
    };
    pfarm::monitor_options both_topologies;
    both_topologies.hwloc.synthetic = "pack:1 pu:1";
    both_topologies.hwloc.xml = "/nonexistent.xml";
    pfarm::monitor_options no_iterations;
    no_iterations.benchmark.iterations = 0;
    pfarm::monitor_options no_root;
    no_root.root = "";
    pfarm::forecaster_options no_window;
    no_window.window = 0;
    const std::vector<input> inputs{
        {"iterations 0", [] { (void)pfarm::schedule_round_robin("gss", 0, 2, {}); }, "iterations"},
        {"workers 0", [] { (void)pfarm::schedule_round_robin("gss", 10, 0, {}); }, "workers"},
        {"unknown technique", [] { (void)pfarm::schedule_round_robin("nope", 10, 2, {}); }, "technique"},
        {"farmer tasks 0", [] { pfarm::farmer(0, 2, pfarm::make_technique("gss", {}, 2)); }, "tasks"},
        {"farmer min_chunk 0", [] { pfarm::farmer(10, 2, pfarm::make_technique("gss", {}, 2), 0); }, "min_chunk"},
        {"calibration mode", [] { (void)pfarm::parse_calibration_mode("sometimes"); }, "calibration"},
        {"calibration times empty", [] { (void)pfarm::calibrate(pfarm::calibration_mode::times_only, {}, {}, 10); },
         "times"},
        {"calibration time nan",
         [] { (void)pfarm::calibrate(pfarm::calibration_mode::times_only, std::vector<double>{1.0, nan}, {}, 10); },
         "times"},
        {"calibration availability -0.5",
         [&] { (void)pfarm::calibrate(pfarm::calibration_mode::univariate, times, samples, 10); }, "availability"},
        {"installment_factor", [] { (void)pfarm::installment_factor(0, 0.5); }, "tasks"},
        {"fitness_from_times", [&] { (void)pfarm::fitness_from_times(one_negative); }, "times"},
        {"heterogeneity_ratio", [&] { (void)pfarm::heterogeneity_ratio(one_negative); }, "benchmark"},
        {"unknown monitor", [] { (void)pfarm::make_monitor("nope"); }, "monitor"},
        {"scripted without a script", [] { (void)pfarm::make_monitor("scripted"); }, "script"},
        {"hwloc with two topologies", [&] { (void)pfarm::make_monitor("hwloc", both_topologies); }, "synthetic"},
        {"benchmark of 0 iterations", [&] { (void)pfarm::make_monitor("benchmark", no_iterations); }, "iterations"},
        {"loadavg without a root", [&] { (void)pfarm::make_monitor("loadavg", no_root); }, "root"},
        {"forecaster window 0", [&] { pfarm::forecaster f(no_window); }, "window"},
        {"node grouping", [] { (void)pfarm::parse_node_grouping("rack"); }, "grouping"},
    };
    for (const auto& in : inputs) EXPECT_TRUE(check_name(in.body, in.expected, in.label)) << in.label << ": no error";
}

}  // namespace
