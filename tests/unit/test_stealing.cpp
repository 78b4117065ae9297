// The work-stealing farm of the simulator (pfarm-sim --farmer stealing, simulator_stealing.cpp): every task once
// over loop shapes, speeds, load changes and sizes, the exact timing of one rank, what the victim rules change (tree:
// work only travels down the tree), a run is a function of its seed, and the refusals name their argument.
#include "sim_checks.hpp"
#include "test_support.hpp"
#include "pfarm/error.hpp"
#include "pfarm/simulator.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

namespace sim = pfarm::sim;
using pfarm::task_count;

sim::platform platform(std::vector<double> times, double service = 1e-4, double latency = 1e-3) {
    sim::platform p;
    p.task_times = std::move(times);
    p.atomic_overhead = service;
    p.atomic_latency = latency;
    return p;
}

sim::run_options stealing(const std::string& victims = "random", std::uint64_t seed = 1) {
    sim::run_options r;
    r.farmer = sim::farmer_kind::stealing;
    r.victims = victims;
    r.victim_seed = seed;
    r.keep_trace = true;
    return r;
}

sim::workload loop(task_count tasks, sim::workload_shape shape = sim::workload_shape::uniform) {
    sim::workload w;
    w.tasks = tasks;
    w.shape = shape;
    w.seed = 7;
    return w;
}

/// Every task once, each result at rank 0 strictly before the makespan, and the termination's messages.
void expect_every_task_once(const sim::result& r, task_count tasks, const std::string& what) {
    pfarm::testing::expect_trace_covers_loop_once(r, tasks, what, true);
    // one notice at least from every rank that computed, and the stop to every rank
    EXPECT_GE(r.termination_messages, static_cast<task_count>(r.workers.size()) + 1) << what;
}

/// Where worker j's chunks may come from under `tree` victims: its own initial range or an ancestor's.
bool from_ancestor(int j, task_count first, task_count tasks, int p) {
    const auto owner = [&](task_count t) {  // the rank whose initial range holds task t
        for (int k = 0; k < p; ++k) {
            const auto K = static_cast<task_count>(k), P = static_cast<task_count>(p);
            if (t < (K + 1) * (tasks / P) + std::min(K + 1, tasks % P)) return k;
        }
        return p;
    };
    const int o = owner(first);
    for (int a = j;; a = (a - 1) / 2) {
        if (a == o) return true;
        if (a == 0) return false;
    }
}

TEST(StealingSimulator, EveryTaskOnceOverShapesSpeedsAndRules) {
    const std::vector<std::vector<double>> speeds = {{1.0}, {1.0, 1.0, 1.0, 1.0}, {1.0, 2.0, 0.5, 3.0, 1.5, 1.0, 4.0}};
    for (const auto shape : {sim::workload_shape::uniform, sim::workload_shape::random, sim::workload_shape::mandelbrot})
        for (const auto& times : speeds)
            for (const std::string technique : {"ss", "gss", "css"})
                for (const std::string victims : {"random", "tree"}) {
                    pfarm::technique_options o;
                    o.chunk = 3;
                    const std::string what = sim::to_string(shape) + " " + technique + " " + victims + " p=" +
                                             std::to_string(times.size());
                    const auto r = sim::simulate(platform(times), loop(503, shape), technique, o, stealing(victims));
                    expect_every_task_once(r, 503, what);
                    if (technique == "ss") EXPECT_EQ(r.chunks, 503) << what;
                    if (times.size() == 1) EXPECT_EQ(r.steal_attempts, 0) << what;  // no victim to try
                }
}

// One rank, ss, uniform tasks of 1 s: each claim is a round trip to its own window (2 L + s), the chunk computes;
// after the last the flush of the puts (2 L), the notice and its flush (2 L + s), then the poll of the one counter
// (2 L + s) end the run.
TEST(StealingSimulator, OneRankTimingIsExact) {
    const double s = 1e-4, L = 1e-3;
    const auto r = sim::simulate(platform({1.0}, s, L), loop(10), "ss", {}, stealing("random"));
    EXPECT_NEAR(r.makespan, 10 * (1.0 + 2 * L + s) + 6 * L + 2 * s, 1e-9);
    EXPECT_EQ(r.host_atomics, 12);  // 10 claims, the notice and the poll's read
    EXPECT_EQ(r.termination_messages, 3);  // the notice, the poll's read and the stop
    EXPECT_EQ(r.steals, 0);
    EXPECT_EQ(r.lost_swaps, 0);
    ASSERT_EQ(r.trace.size(), 10u);
    EXPECT_NEAR(r.trace[3].sent, 3 * (1.0 + 2 * L + s), 1e-9);
    EXPECT_NEAR(r.trace[3].started, 3 * (1.0 + 2 * L + s) + 2 * L + s, 1e-9);
    EXPECT_NEAR(r.trace[3].received, r.trace[3].finished + L, 1e-9);
}

TEST(StealingSimulator, MoreRanksThanTasks) {
    for (const std::string victims : {"random", "tree"}) {
        const auto r = sim::simulate(platform(std::vector<double>(9, 1.0)), loop(4), "ss", {}, stealing(victims));
        expect_every_task_once(r, 4, victims);
        int idle = 0;
        for (const auto& w : r.workers) idle += w.tasks == 0;
        EXPECT_GE(idle, 5) << victims;
    }
}

// The static split ignores the speeds; random stealing moves the slow ranks' work to the fast ones.
TEST(StealingSimulator, RandomStealingBalancesHeterogeneousRanks) {
    const std::vector<double> times = {1.0, 2.0, 4.0, 8.0};
    const auto r = sim::simulate(platform(times), loop(2000), "ss", {}, stealing("random"));
    expect_every_task_once(r, 2000, "heterogeneous");
    const double static_split = 500 * 8.0;  // the slowest rank's share alone
    EXPECT_LT(r.makespan, 1.05 * r.lower_bound);
    EXPECT_LT(r.makespan, 0.3 * static_split);
    EXPECT_GT(r.steals, 0);
    EXPECT_GT(r.workers[0].tasks, r.workers[3].tasks * 4);
}

// A rank slowed tenfold halfway: thieves take its remainder.
TEST(StealingSimulator, LoadChangeIsAbsorbedByThieves) {
    auto pl = platform({1.0, 1.0, 1.0, 1.0});
    pl.load_changes.push_back({2, 50.0, 10.0});
    const auto r = sim::simulate(pl, loop(400), "ss", {}, stealing("random"));
    expect_every_task_once(r, 400, "load change");
    EXPECT_LT(r.makespan, 1.1 * r.lower_bound);
    EXPECT_LT(r.workers[2].tasks, 70);  // 50 before the change, a few after
}

// tree: a rank only ever computes tasks of its own initial range or an ancestor's (work travels down the tree),
// and the root never steals; random victims take work from anywhere, so the two differ.
TEST(StealingSimulator, TreeVictimsAreTheParentRandomOnesAreNot) {
    const int p = 15;
    const task_count tasks = 3000;
    const auto tree = sim::simulate(platform(std::vector<double>(p, 1.0)), loop(tasks, sim::workload_shape::mandelbrot),
                                    "ss", {}, stealing("tree"));
    const auto random = sim::simulate(platform(std::vector<double>(p, 1.0)), loop(tasks, sim::workload_shape::mandelbrot),
                                      "ss", {}, stealing("random"));
    expect_every_task_once(tree, tasks, "tree");
    expect_every_task_once(random, tasks, "random");
    int outside = 0;
    for (const auto& c : tree.trace) EXPECT_TRUE(from_ancestor(c.rank, c.first, tasks, p)) << c.rank << " " << c.first;
    for (const auto& c : random.trace) outside += !from_ancestor(c.rank, c.first, tasks, p);
    EXPECT_GT(outside, 0);
    EXPECT_EQ(tree.workers[0].tasks, tasks / p);  // the root computes its own range only
    EXPECT_GT(tree.steals, 0);
    EXPECT_NE(tree.makespan, random.makespan);
    // the leaves' heavy ranges get no help under tree victims
    EXPECT_GT(tree.makespan, 1.2 * random.makespan);
}

TEST(StealingSimulator, ARunIsAFunctionOfItsSeed) {
    const auto run = [](std::uint64_t seed) {
        return sim::simulate(platform({1.0, 2.0, 1.0, 3.0, 1.0, 1.0}), loop(900, sim::workload_shape::mandelbrot), "ss",
                             {}, stealing("random", seed));
    };
    const auto a = run(3), b = run(3), c = run(4);
    EXPECT_EQ(a.makespan, b.makespan);
    EXPECT_EQ(a.steal_attempts, b.steal_attempts);
    ASSERT_EQ(a.trace.size(), b.trace.size());
    for (std::size_t i = 0; i < a.trace.size(); ++i) {
        EXPECT_EQ(a.trace[i].rank, b.trace[i].rank);
        EXPECT_EQ(a.trace[i].first, b.trace[i].first);
        EXPECT_EQ(a.trace[i].started, b.trace[i].started);
    }
    bool differs = a.steal_attempts != c.steal_attempts || a.makespan != c.makespan;
    for (std::size_t w = 0; w < a.workers.size() && !differs; ++w) differs = a.workers[w].tasks != c.workers[w].tasks;
    EXPECT_TRUE(differs);
}

// gss claims ceil(R / p) of the owner's own remainder, at least min_chunk.
TEST(StealingSimulator, GssClaimsOverTheOwnRange) {
    const auto r = sim::simulate(platform({1.0, 1.0}), loop(200), "gss", {}, stealing("tree"));
    ASSERT_FALSE(r.workers[0].chunks.empty());
    EXPECT_EQ(r.workers[0].chunks.to_vector().front(), 50);  // ceil(100 / 2)
    pfarm::technique_options o;
    o.min_chunk = 30;
    const auto m = sim::simulate(platform({1.0, 1.0}), loop(200), "gss", o, stealing("tree"));
    for (const auto c : m.workers[0].chunks.to_vector()) EXPECT_TRUE(c >= 30 || c == m.workers[0].chunks.to_vector().back());
}

TEST(StealingSimulator, RefusalsNameTheArgument) {
    using pfarm::testing::expect_invalid;
    const auto pl = platform({1.0, 1.0});
    auto bad = stealing("ring");
    EXPECT_NE(expect_invalid([&] { sim::simulate(pl, loop(10), "ss", {}, bad); }, "victims").find("random, tree"),
              std::string::npos);
    sim::run_options flat;
    flat.victims = "tree";
    expect_invalid([&] { sim::simulate(pl, loop(10), "ss", {}, flat); }, "victims");
    expect_invalid([&] { sim::simulate(pl, loop(10), "fss", {}, stealing()); }, "technique");
    auto reclaim = stealing();
    reclaim.reclaim = true;
    expect_invalid([&] { sim::simulate(pl, loop(10), "ss", {}, reclaim); }, "reclaim");
    auto prefetch = stealing();
    prefetch.prefetch = true;
    expect_invalid([&] { sim::simulate(pl, loop(10), "ss", {}, prefetch); }, "prefetch");
    EXPECT_EQ(sim::parse_farmer("stealing"), sim::farmer_kind::stealing);
    EXPECT_EQ(sim::to_string(sim::farmer_kind::stealing), "stealing");
}

}  // namespace
