// The decentralised farm in the simulator (pfarm-sim --farmer decentralised, simulator_decentralised.cpp) and its
// claim session (pfarm/claim_schedule.hpp): every task once for every technique it serves, the flat farm's chunks,
// exact timings of the model (claims, prefetch, batches, the end), the host's contention and lost swaps, and the
// refusals it shares with the MPI driver.
#include "sim_checks.hpp"
#include "test_support.hpp"
#include "pfarm/claim_schedule.hpp"
#include "pfarm/error.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/round_robin.hpp"
#include "pfarm/simulator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace {

namespace sim = pfarm::sim;
using pfarm::chunk;
using pfarm::task_count;

using pfarm::testing::runnable_options;

sim::platform platform(std::vector<double> times, double service, double latency) {
    sim::platform p;
    p.task_times = std::move(times);
    p.atomic_overhead = service;
    p.atomic_latency = latency;
    return p;
}

sim::run_options decentralised(bool prefetch = false, bool trace = true) {
    sim::run_options r;
    r.farmer = sim::farmer_kind::decentralised;
    r.prefetch = prefetch;
    r.keep_trace = trace;
    return r;
}

void expect_every_task_once(const sim::result& r, task_count tasks, const std::string& what) {
    pfarm::testing::expect_trace_covers_loop_once(r, tasks, what);
}

// Every technique the registry says the mode serves (technique::decentralised()), over heterogeneous workers, with
// and without prefetch: every task once; a by_step technique hands out exactly the flat farmer's chunks under
// round-robin requests (the core's step_schedule, no second rule), a by_step claim is one atomic and every worker
// makes one more that finds nothing, and a by_worker claim is one swap plus the swaps it lost.
TEST(DecentralisedSimulator, EveryTaskOnceForEveryTechniqueItServes) {
    const std::vector<double> times = {1.0, 2.0, 0.5, 3.0, 1.5};
    const int p = static_cast<int>(times.size());
    std::set<std::string> served;
    for (const auto& t : pfarm::techniques()) {
        pfarm::technique_options o = runnable_options();
        if (pfarm::make_technique(t.name, o, p)->decentralised() == pfarm::claim_form::none) {
            o.weights = {1.0, 0.5, 2.0, 0.3, 0.7};
            if (pfarm::make_technique(t.name, o, p)->decentralised() == pfarm::claim_form::none) continue;
        }
        const auto form = pfarm::make_technique(t.name, o, p)->decentralised();
        served.insert(t.name);
        for (const task_count tasks : {1, 7, 613})
            for (const bool prefetch : {false, true}) {
                const std::string what = t.name + " tasks=" + std::to_string(tasks) + (prefetch ? " prefetch" : "");
                sim::workload w;
                w.tasks = tasks;
                w.shape = sim::workload_shape::random;
                const auto r = sim::simulate(platform(times, 0.01, 0.003), w, t.name, o, decentralised(prefetch));
                expect_every_task_once(r, tasks, what);
                if (form == pfarm::claim_form::by_step) {
                    const auto expected = pfarm::schedule_round_robin(t.name, tasks, p, o);
                    ASSERT_EQ(r.trace.size(), expected.handouts.size()) << what;
                    for (std::size_t i = 0; i < r.trace.size(); ++i)
                        EXPECT_EQ((chunk{r.trace[i].first, r.trace[i].count}), expected.handouts[i].work) << what << " chunk " << i;
                    EXPECT_EQ(r.host_atomics, r.chunks + p) << what;
                    EXPECT_EQ(r.lost_swaps, 0) << what;
                } else {  // a swap per chunk, one per lost swap, and a read before each retry that waited
                    EXPECT_GE(r.host_atomics, r.chunks + r.lost_swaps) << what;
                    EXPECT_LE(r.host_atomics, r.chunks + 2 * r.lost_swaps) << what;
                }
            }
    }
    EXPECT_EQ(served, (std::set<std::string>{"static", "deal", "ss", "css", "gss", "fss", "tss", "fiss", "tfss", "fsc",
                                             "mfsc", "dgss"}));
}

// With free atomics the decentralised farm is the flat farm with a free farmer: the same chunks to the same
// workers at the same times, load changes included.
TEST(DecentralisedSimulator, WithFreeAtomicsItIsTheFlatFarmWithAFreeFarmer) {
    for (const std::string name : {"ss", "gss", "fss", "tss", "fiss"}) {
        sim::platform pl = platform({1.0, 2.0, 3.0}, 0.0, 0.0);
        pl.load_changes = {{0, 20.0, 4.0}};
        sim::workload w;
        w.tasks = 300;
        w.shape = sim::workload_shape::mandelbrot;
        const auto flat = sim::simulate(pl, w, name, {}, {});
        const auto dec = sim::simulate(pl, w, name, {}, decentralised());
        EXPECT_DOUBLE_EQ(dec.makespan, flat.makespan) << name;
        for (std::size_t j = 0; j < 3; ++j) {
            EXPECT_EQ(dec.workers[j].chunks, flat.workers[j].chunks) << name << " worker " << j;
            EXPECT_DOUBLE_EQ(dec.workers[j].finish, flat.workers[j].finish) << name << " worker " << j;
        }
        EXPECT_DOUBLE_EQ(dec.percent_imbalance, flat.percent_imbalance) << name;
    }
}

// The model's times, by hand: one worker, three tasks of 1 s, ss, an atomic served in s = 0.1 one at a time,
// L = 0.01 one way. A claim is 2L + s = 0.12; after the claim that finds nothing the batch is put and flushed
// (2L) and the end message reaches the host (L).
TEST(DecentralisedSimulator, ClaimPrefetchAndTheEndCostWhatTheModelSays) {
    sim::workload w;
    w.tasks = 3;
    const auto plain = sim::simulate(platform({1.0}, 0.1, 0.01), w, "ss", {}, decentralised(false));
    EXPECT_NEAR(plain.makespan, 4 * 0.12 + 3.0 + 3 * 0.01, 1e-12);
    ASSERT_EQ(plain.trace.size(), 3u);
    EXPECT_NEAR(plain.trace[1].sent, 1.12, 1e-12);  // claimed when chunk 0 ended
    EXPECT_NEAR(plain.trace[1].started, 1.24, 1e-12);
    EXPECT_NEAR(plain.trace[1].finished, 2.24, 1e-12);
    for (const auto& c : plain.trace) EXPECT_NEAR(c.received, 3.48 + 0.02, 1e-12) << "one batch, put at the end";
    EXPECT_EQ(plain.host_atomics, 4);
    // prefetch: the next claim travels while a chunk computes, so only the first claim is waited for
    const auto ahead = sim::simulate(platform({1.0}, 0.1, 0.01), w, "ss", {}, decentralised(true));
    EXPECT_NEAR(ahead.makespan, 0.12 + 3.0 + 3 * 0.01, 1e-12);
    EXPECT_NEAR(ahead.trace[1].sent, 0.12, 1e-12) << "issued when chunk 0 started";
    EXPECT_NEAR(ahead.trace[1].started, 1.12, 1e-12);
    // the defaults are the measured ones
    sim::platform measured;
    measured.task_times = {1.0};
    const double claim = 2 * sim::default_atomic_latency + sim::default_atomic_overhead;
    EXPECT_NEAR(sim::simulate(measured, w, "ss", {}, decentralised()).makespan,
                4 * claim + 3.0 + 3 * sim::default_atomic_latency, 1e-12);
}

// Results travel in batches of decentralised_batch_chunks chunks: a full batch is put when it closes and is
// complete at the next claim's flush (the start of the next chunk); the rest goes after the last claim.
TEST(DecentralisedSimulator, ResultsTravelInBatches) {
    sim::workload w;
    w.tasks = 2500;
    const auto r = sim::simulate(platform({1.0}, 0.1, 0.01), w, "ss", {}, decentralised());
    ASSERT_EQ(r.trace.size(), 2500u);
    const std::size_t n = pfarm::decentralised_batch_chunks;
    std::set<double> received;
    for (const auto& c : r.trace) received.insert(c.received);
    EXPECT_EQ(received.size(), 3u) << "1024 + 1024 + 452";
    EXPECT_DOUBLE_EQ(r.trace[0].received, r.trace[n].started);
    EXPECT_DOUBLE_EQ(r.trace[n - 1].received, r.trace[n].started);
    EXPECT_DOUBLE_EQ(r.trace[n].received, r.trace[2 * n].started);
    EXPECT_NEAR(r.trace[2499].received, r.trace[2499].finished + 0.12 + 0.02, 1e-9);
    // a worker's batch put is complete a round trip after it is issued: with a fast host and prefetch, the
    // flush after a full batch waits for the put, not the claim
    const auto ahead = sim::simulate(platform({1.0}, 0.0, 0.01), w, "ss", {}, decentralised(true));
    EXPECT_NEAR(ahead.trace[n].started, ahead.trace[n - 1].finished + 0.02, 1e-9);
    EXPECT_NEAR(ahead.trace[n + 1].started, ahead.trace[n].finished, 1e-9);
}

// Many workers and tiny tasks: the host serves one atomic at a time, so the makespan is at least the atomics
// times the service time (every task a claim under ss, and one more per worker), and the host is what limits: it
// ends within a few claims of that bound. A by_worker technique loses swaps there, and still computes every task once.
TEST(DecentralisedSimulator, TheHostSerialisesTheAtomics) {
    const int p = 64;
    const double service = 1e-6, latency = 2e-7;
    sim::workload w;
    w.tasks = 20000;
    const auto r = sim::simulate(platform(std::vector<double>(p, 1e-9), service, latency), w, "ss", {}, decentralised());
    expect_every_task_once(r, w.tasks, "ss");
    EXPECT_EQ(r.host_atomics, w.tasks + p);
    EXPECT_GE(r.makespan, static_cast<double>(w.tasks) * service);
    EXPECT_GE(r.makespan, static_cast<double>(r.host_atomics) * service);
    EXPECT_LE(r.makespan, static_cast<double>(r.host_atomics) * service + 10 * (2 * latency + service));
    EXPECT_GT(r.makespan, 100 * r.lower_bound) << "the loop itself is nothing beside its claims";

    pfarm::technique_options o;
    o.weights.assign(p, 1.0);
    o.weights[0] = 5.0;
    w.tasks = 5000;
    const auto cas = sim::simulate(platform(std::vector<double>(p, 1e-9), service, latency), w, "dgss", o, decentralised());
    expect_every_task_once(cas, w.tasks, "dgss");
    EXPECT_GT(cas.lost_swaps, 0) << "workers that read the same index race for it";
    EXPECT_GE(cas.host_atomics, cas.chunks + cas.lost_swaps);
    EXPECT_LE(cas.host_atomics, cas.chunks + 2 * cas.lost_swaps);
    EXPECT_GE(cas.makespan, static_cast<double>(cas.host_atomics) * service);
}

// What the MPI driver refuses, refused alike: the core's one list (pfarm::check_decentralised, which the MPI engine
// calls too), naming the argument; a technique that needs a farmer names the technique and the techniques served.
TEST(DecentralisedSimulator, RefusesWhatTheMpiDriverRefuses) {
    using pfarm::testing::expect_invalid;
    const sim::platform pl = platform({1.0, 2.0}, 0.01, 0.01);
    sim::workload w;
    w.tasks = 40;
    int refused = 0;
    for (const auto& t : pfarm::techniques()) {
        const auto policy = pfarm::make_technique(t.name, runnable_options(), 2);
        if (policy->decentralised() != pfarm::claim_form::none) continue;
        ++refused;
        const std::string message =
            expect_invalid([&] { sim::simulate(pl, w, t.name, runnable_options(), decentralised()); }, "technique");
        EXPECT_NE(message.find("'" + t.name + "' cannot run with farmer = decentralised"), std::string::npos) << message;
        EXPECT_NE(message.find("this mode serves static, deal, ss"), std::string::npos) << message;
        try {  // the very message the MPI engine's check gives
            pfarm::check_decentralised(*policy, t.name, runnable_options(), 2, false);
            ADD_FAILURE() << t.name;
        } catch (const pfarm::invalid_argument& e) {
            EXPECT_EQ(message, e.what());
        }
    }
    EXPECT_GT(refused, 20);
    auto r = decentralised();
    r.reclaim = true;
    const std::string reclaim = expect_invalid([&] { sim::simulate(pl, w, "gss", {}, r); }, "reclaim");
    EXPECT_NE(reclaim.find("not available with farmer = decentralised"), std::string::npos) << reclaim;
    r = decentralised();
    r.masters = 2;
    expect_invalid([&] { sim::simulate(pl, w, "gss", {}, r); }, "masters");
    auto bad = pl;
    bad.atomic_overhead = -1.0;
    expect_invalid([&] { sim::simulate(bad, w, "gss", {}, decentralised()); }, "atomic_overhead");
    bad = pl;
    bad.atomic_latency = std::nan("");
    expect_invalid([&] { sim::simulate(bad, w, "gss", {}, decentralised()); }, "atomic_latency");
}

// The platform file's keys, next to the hierarchical ones.
TEST(DecentralisedSimulator, PlatformFileGivesTheAtomicCosts) {
    const std::string path = ::testing::TempDir() + "pfarm-decentralised-platform.json";
    {
        std::ofstream out(path);
        out << R"({"task_times": [1, 1], "atomic_overhead": 0.25, "atomic_latency": 0.125})";
    }
    const auto pl = sim::load_platform(path);
    EXPECT_EQ(pl.atomic_overhead, 0.25);
    EXPECT_EQ(pl.atomic_latency, 0.125);
    {
        std::ofstream out(path);
        out << R"({"task_times": [1, 1], "atomic_latency": -2})";
    }
    const std::string message = pfarm::testing::expect_invalid([&] { sim::load_platform(path, "--platform"); }, "--platform");
    EXPECT_NE(message.find("field 'atomic_latency' is -2"), std::string::npos) << message;
    std::remove(path.c_str());
}

// The claim session alone: a by_worker claim that loses retries from the value it found; the poisoned counters
// (a failure elsewhere) end every claim.
TEST(ClaimSession, ALostSwapRetriesFromTheValueFoundAndPoisonEnds) {
    pfarm::technique_options o;
    o.weights = {1, 3};
    pfarm::claim_schedule schedule(100, 2, pfarm::make_technique("dgss", o, 2), 1);
    pfarm::claim_session zero(schedule, 0), one(schedule, 1);
    std::int64_t next = 0;
    const pfarm::claim_op a = zero.begin(), b = one.begin();
    EXPECT_EQ(a.what, pfarm::claim_op::kind::compare_and_swap);
    EXPECT_EQ(a.compare, 0);
    EXPECT_EQ(a.operand, 25);  // ceil(100 / 4)
    EXPECT_EQ(one.end(pfarm::apply(b, next)), (chunk{0, 75}));
    EXPECT_EQ(next, 75);
    EXPECT_EQ(zero.end(pfarm::apply(a, next)), std::nullopt) << "the index moved";
    EXPECT_EQ(next, 75) << "a swap that lost changes nothing";
    EXPECT_EQ(zero.lost_swaps(), 1);
    EXPECT_LT(zero.backoff(), 2u) << "the first loss in a row waits 0 or 1 round trip";
    pfarm::claim_op retry = zero.begin();
    if (zero.backoff() > 0 || retry.what == pfarm::claim_op::kind::read) {  // it waited: it reads the index afresh
        EXPECT_EQ(retry.what, pfarm::claim_op::kind::read);
        EXPECT_EQ(zero.end(pfarm::apply(retry, next)), std::nullopt);
        EXPECT_EQ(zero.backoff(), 0u) << "the swap follows the read at once";
        retry = zero.begin();
    }
    EXPECT_EQ(retry.what, pfarm::claim_op::kind::compare_and_swap);
    EXPECT_EQ(retry.compare, 75);
    EXPECT_EQ(zero.end(pfarm::apply(retry, next)), (chunk{75, 7}));  // ceil(25 / 4)
    EXPECT_EQ(one.begin().compare, 75) << "the value its own swap left";
    EXPECT_EQ(one.end(pfarm::claim_poison + 82), (chunk{100, 0})) << "a failure elsewhere poisoned the index";
    pfarm::claim_schedule steps(100, 2, pfarm::make_technique("gss", {}, 2), 1);
    pfarm::claim_session s(steps, 0);
    EXPECT_EQ(s.begin().what, pfarm::claim_op::kind::fetch_and_add);
    EXPECT_EQ(s.end(0), (chunk{0, 50}));
    EXPECT_EQ(s.end(pfarm::claim_poison + 1), (chunk{100, 0}));
    EXPECT_EQ(s.handed_out(1), 50);
}

// Lost swaps in a row back off binary-exponentially (below 2^n round trips after the n-th, capped at the larger
// of claim_backoff_cap and the workers' bit width), a retry that waited reads the index first, a won swap
// resets the streak, and the draws depend on the worker only (a simulated run repeats).
TEST(ClaimSession, LostSwapsInARowBackOffExponentiallyAndAWinResets) {
    const auto losses = [](int workers, int worker, int n, std::vector<std::uint32_t>* drawn) {
        pfarm::technique_options o;
        o.weights.assign(static_cast<std::size_t>(workers), 1.0);
        pfarm::claim_schedule schedule(1000000, workers, pfarm::make_technique("dgss", o, workers), 1);
        pfarm::claim_session s(schedule, worker);
        std::int64_t next = 0;
        std::uint32_t largest = 0;
        for (int i = 1; i <= n; ++i) {
            pfarm::claim_op op = s.begin();
            if (op.what == pfarm::claim_op::kind::read) {
                EXPECT_EQ(s.end(pfarm::apply(op, next)), std::nullopt);
                EXPECT_EQ(s.backoff(), 0u);
                op = s.begin();
            }
            EXPECT_EQ(op.what, pfarm::claim_op::kind::compare_and_swap);
            next += 1;  // another worker claims first
            EXPECT_EQ(s.end(pfarm::apply(op, next)), std::nullopt);
            const auto cap = std::max<std::uint32_t>(pfarm::claim_backoff_cap,
                                                     std::bit_width(static_cast<unsigned>(workers)));
            EXPECT_LT(s.backoff(), std::uint32_t{1} << std::min<std::uint32_t>(static_cast<std::uint32_t>(i), cap))
                << "loss " << i;
            largest = std::max(largest, s.backoff());
            if (drawn) drawn->push_back(s.backoff());
        }
        EXPECT_EQ(s.lost_swaps(), n);
        // The next swap wins (nobody claims between): the streak starts again.
        pfarm::claim_op op = s.begin();
        if (op.what == pfarm::claim_op::kind::read) {
            EXPECT_EQ(s.end(pfarm::apply(op, next)), std::nullopt);
            op = s.begin();
        }
        EXPECT_TRUE(s.end(pfarm::apply(op, next)).has_value());
        EXPECT_EQ(s.backoff(), 0u);
        op = s.begin();
        next += 1;
        EXPECT_EQ(s.end(pfarm::apply(op, next)), std::nullopt);
        EXPECT_LT(s.backoff(), 2u) << "a loss after a win is the first of a new streak";
        return largest;
    };
    std::vector<std::uint32_t> a, b, c;
    EXPECT_GE(losses(2, 0, 40, &a), 1u << 9) << "40 losses in a row reach the cap's range (2^10)";
    losses(2, 0, 40, &b);
    losses(2, 1, 40, &c);
    EXPECT_EQ(a, b) << "the same worker draws the same waits";
    EXPECT_NE(a, c) << "another worker draws others";
    EXPECT_GE(losses(4096, 7, 60, nullptr), 1u << 12) << "4,096 workers raise the cap to 2^13";
}

}  // namespace
