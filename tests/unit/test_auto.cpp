// The `auto` technique (docs/techniques/auto.md): it measures, simulates its candidates through the driver's predictor,
// goes on with its choice and chooses again when the speeds drift; every task still runs exactly once, the report
// records each choice, and a farm that cannot simulate refuses it naming the technique.
#include "test_support.hpp"

#include "pfarm/farmer_session.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/round_robin.hpp"
#include "pfarm/simulator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using pfarm::task_count;
using pfarm::testing::expect_invalid;
namespace sim = pfarm::sim;

sim::platform platform(std::vector<double> times, double overhead = 0.01) {
    sim::platform p;
    p.task_times = std::move(times);
    p.overhead = overhead;
    return p;
}

sim::workload loop(task_count tasks, sim::workload_shape shape = sim::workload_shape::random) {
    sim::workload w;
    w.tasks = tasks;
    w.shape = shape;
    return w;
}

void expect_every_task_once(const sim::result& r, task_count tasks) {
    task_count computed = 0;
    for (const auto& w : r.workers) {
        computed += w.tasks;
        EXPECT_EQ(w.chunks.total(), w.tasks);
    }
    EXPECT_EQ(computed, tasks);
}

/// The probes of a run of `tasks` tasks: the chunks handed out before its first choice, in the order they went, each
/// with whether it was its worker's first.
struct probe {
    pfarm::chunk_trace chunk;
    bool first = false;
};
std::vector<probe> probes(const sim::result& r, task_count tasks, int workers) {
    std::vector<probe> out;
    if (r.choices.empty()) {
        ADD_FAILURE() << "no choice";
        return out;
    }
    const task_count probed = tasks - r.choices.front().remaining;
    std::vector<int> seen(static_cast<std::size_t>(workers), 0);
    task_count handed = 0;
    for (const pfarm::chunk_trace& c : r.trace) {
        if (handed >= probed) break;
        handed += c.count;
        out.push_back({c, seen.at(static_cast<std::size_t>(c.rank))++ == 0});
    }
    EXPECT_EQ(handed, probed);
    return out;
}

TEST(Auto, IsRefusedWhereTheFarmCannotSimulate) {
    // A farmer session made without a predictor: auto starts at once (it needs no calibration) and refuses.
    expect_invalid([] { pfarm::farmer_session s(100, 4, pfarm::make_technique("auto", {}, 4)); }, "technique");
    expect_invalid([] { (void)pfarm::schedule_round_robin("auto", 100, 4, {}); }, "technique");
    sim::run_options hierarchical;
    hierarchical.farmer = sim::farmer_kind::hierarchical;
    hierarchical.masters = 2;
    expect_invalid([&] { (void)sim::simulate(platform({1, 1, 2, 2}), loop(200), "auto", {}, hierarchical); },
                   "technique");
    hierarchical.master_technique = "auto";  // the supermaster's own technique
    expect_invalid([&] { (void)sim::simulate(platform({1, 1, 2, 2}), loop(200), "gss", {}, hierarchical); },
                   "master_technique");
    sim::run_options decentralised;
    decentralised.farmer = sim::farmer_kind::decentralised;
    expect_invalid([&] { (void)sim::simulate(platform({1, 1, 2, 2}), loop(200), "auto", {}, decentralised); },
                   "technique");
}

TEST(Auto, MeasuresThenChoosesAndRecordsWhy) {
    const sim::platform p = platform({1.0, 1.0, 2.0, 4.0, 4.0, 0.5});
    const sim::result r = sim::simulate(p, loop(6000), "auto", {});
    expect_every_task_once(r, 6000);
    ASSERT_FALSE(r.choices.empty());
    const pfarm::technique_choice& first = r.choices.front();
    EXPECT_EQ(first.round, 0);
    EXPECT_EQ(first.why.rfind("measured over ", 0), 0u) << first.why;
    // A tenth of the loop went out in probes before the choice.
    EXPECT_LE(first.remaining, 6000 - 600);
    EXPECT_GT(first.remaining, 6000 - 600 - 6 * 25);
    EXPECT_NE(first.chosen, "auto");
    EXPECT_NO_THROW((void)pfarm::find_technique(first.chosen));
    // The chosen one is among the candidates, and its worst ratio to the best is within 0.3% of the least (the
    // candidates that near it are told apart by their next worst).
    ASSERT_GT(first.candidates.size(), 20u) << "every technique the options can build is a candidate";
    double least = 1e300;
    bool listed = false;
    for (const auto& [name, ratio] : first.candidates) {
        EXPECT_GE(ratio, 1.0) << name;
        EXPECT_NE(name, "css") << "css needs a chunk size these options do not give";
        least = std::min(least, ratio);
        if (name == first.chosen) {
            listed = true;
            EXPECT_DOUBLE_EQ(first.predicted, ratio);
        }
    }
    EXPECT_TRUE(listed);
    EXPECT_GE(first.predicted, least);
    EXPECT_LE(first.predicted, least * 1.003);
    EXPECT_GE(first.seconds, 0.0);
}

TEST(Auto, ChoosesAgainWhenAWorkersSpeedDrifts) {
    sim::platform p = platform({1.0, 1.0, 1.0, 1.0});
    // 8,000 tasks over four workers of speed 1: about 2,000 time units. Worker 2 becomes five times faster at 300,
    // after the first choice (at about 200).
    p.load_changes.push_back({2, 300.0, 0.2});
    const sim::result r = sim::simulate(p, loop(8000, sim::workload_shape::uniform), "auto", {});
    expect_every_task_once(r, 8000);
    ASSERT_GE(r.choices.size(), 2u) << "no choice after the load change";
    bool named = false;
    for (std::size_t c = 1; c < r.choices.size(); ++c) {
        EXPECT_EQ(r.choices[c].round, static_cast<int>(c));
        EXPECT_LT(r.choices[c].remaining, r.choices[c - 1].remaining);
        named = named || r.choices[c].why.rfind("worker 2's speed", 0) == 0;
    }
    EXPECT_TRUE(named) << r.choices[1].why;
    EXPECT_LE(r.choices.size(), 8u);
}

TEST(Auto, KeepsEveryTaskOnceUnderEveryProtocolAndSize) {
    for (const task_count tasks : {1, 3, 17, 500, 4000})
        for (int mode = 0; mode < 3; ++mode) {
            SCOPED_TRACE(std::to_string(tasks) + " tasks, mode " + std::to_string(mode));
            sim::run_options run;
            run.reclaim = mode >= 1;
            run.prefetch = mode == 2;
            const sim::result r =
                sim::simulate(platform({1.0, 3.0, 0.5, 2.0, 1.0, 1.0, 7.0, 1.5}), loop(tasks), "auto", {}, run);
            expect_every_task_once(r, tasks);
        }
}

TEST(Auto, BeatsTheMedianTechniqueAndStaysNearTheBestOnAFixedCase) {
    // A heterogeneous platform and a loop whose costs grow: static and the single rounds lose badly here, the
    // adaptive ones come close to the bound. auto must do better than the median of a spread of techniques and stay
    // within 25 % of the best of them (docs/techniques/auto.md gives how near it comes over many cases).
    const sim::platform p = platform({1.0, 0.25, 0.5, 1.0, 0.3, 0.7, 1.0, 0.4}, 0.02);
    const sim::workload w = loop(10000, sim::workload_shape::increasing);
    std::vector<double> makespans;
    for (const char* t : {"static", "ss", "gss", "fss", "tss", "af", "awf-b", "mfsc", "dfss", "multi"})
        makespans.push_back(sim::simulate(p, w, t, {}).makespan);
    std::sort(makespans.begin(), makespans.end());
    const double best = makespans.front(), median = makespans[makespans.size() / 2];
    const sim::result a = sim::simulate(p, w, "auto", {});
    EXPECT_LT(a.makespan, median);
    EXPECT_LE(a.makespan, 1.25 * best);
    EXPECT_GT(makespans.back(), 2.0 * best) << "the case must tell techniques apart";
}

TEST(Auto, MeasuresInLargerProbesWhereARequestCostsTheFarmerMuchAndTheFarmReclaims) {
    // Eight workers of a second per task; the farmer takes 2 s to serve a request. 4,000 uniform tasks: a tenth
    // measured, in first probes of ceil(400 / (4 x 8)) = 13 tasks. Served every 13 s by each of eight workers, the
    // farmer would be busy 16 s of every 13: with reclaim, a worker's later probes last 8 x 2 / 0.5 = 32 s (32 tasks;
    // docs/techniques/auto.md "What it does"). Without reclaim a probe too large cannot be taken back: all are 13.
    const sim::platform p = platform(std::vector<double>(8, 1.0), 2.0);
    for (const bool reclaim : {true, false}) {
        SCOPED_TRACE(reclaim ? "reclaim" : "no reclaim");
        sim::run_options run;
        run.reclaim = reclaim;
        run.keep_trace = true;
        const sim::result r = sim::simulate(p, loop(4000, sim::workload_shape::uniform), "auto", {}, run);
        expect_every_task_once(r, 4000);
        task_count probed = 0, larger = 0;
        for (const probe& c : probes(r, 4000, 8)) {
            probed += c.chunk.count;
            if (c.first || !reclaim) EXPECT_EQ(c.chunk.count, 13) << "worker " << c.chunk.rank;
            else larger += c.chunk.count == 32;
        }
        EXPECT_GE(probed, 400);
        if (reclaim) EXPECT_GT(larger, 0);
    }
}

TEST(Auto, LargerProbesStopAtTwiceTheWorkersShareOfTheTenth) {
    // Sixteen workers of a second per task, a farmer of 2 s per request, 4,000 uniform tasks with reclaim: first
    // probes of ceil(400 / (4 x 16)) = 7 tasks; a later probe would last 16 x 2 / 0.5 = 64 s (64 tasks), more than
    // twice a worker's share of the tenth (400 / 16 = 25), so it is 50: a pace measured on a loop's first tasks may
    // be far below the next ones'.
    sim::run_options run;
    run.reclaim = true;
    run.keep_trace = true;
    const sim::result r =
        sim::simulate(platform(std::vector<double>(16, 1.0), 2.0), loop(4000, sim::workload_shape::uniform), "auto", {},
                      run);
    expect_every_task_once(r, 4000);
    task_count later = 0;
    for (const probe& c : probes(r, 4000, 16)) {
        if (c.first) {
            EXPECT_EQ(c.chunk.count, 7) << "worker " << c.chunk.rank;
        } else {
            EXPECT_LE(c.chunk.count, 50) << "worker " << c.chunk.rank;
            later += c.chunk.count == 50;
        }
    }
    EXPECT_GT(later, 0);
}

TEST(Auto, FitsTheLoopsProfileToWhereItsChunksLay) {
    // Chunks of an increasing loop of 10,000 tasks (cost of task i: 2 (i + 0.5) / 10,000) over its first tenth, dealt
    // in turn to two workers of 1 and 3 seconds per task of cost 1: the increasing profile explains them exactly, with
    // those speeds; the uniform one takes the growing cost for noise.
    const pfarm::candidate_predictor predictor = sim::make_predictor(0.0, 0.0, {});
    ASSERT_TRUE(predictor.fit);
    std::vector<pfarm::measured_chunk> measured;
    const double per_cost[] = {1.0, 3.0};
    for (task_count first = 0; first < 1000; first += 50) {
        const int w = static_cast<int>(first / 50 % 2);
        double cost = 0.0;
        for (task_count i = first; i < first + 50; ++i) cost += 2.0 * (static_cast<double>(i) + 0.5) / 10000.0;
        measured.push_back({w, {first, 50}, cost * per_cost[w]});
    }
    const std::vector<pfarm::profile_fit> fits = predictor.fit(measured, 10000, 3);
    ASSERT_EQ(fits.size(), predictor.profiles.size());
    const auto at = [&](const char* name) {
        return static_cast<std::size_t>(std::find(predictor.profiles.begin(), predictor.profiles.end(), name) -
                                        predictor.profiles.begin());
    };
    const pfarm::profile_fit& increasing = fits.at(at("increasing"));
    EXPECT_LT(increasing.misfit, 1e-9);
    EXPECT_NEAR(increasing.seconds_per_cost[0], 1.0, 1e-9);
    EXPECT_NEAR(increasing.seconds_per_cost[1], 3.0, 1e-9);
    EXPECT_NEAR(increasing.seconds_per_cost[2], 3.0, 1e-9) << "a worker without a chunk is taken for the slowest";
    EXPECT_GT(fits.at(at("uniform")).misfit, 0.5);
    EXPECT_EQ(fits.at(at("random")).misfit, fits.at(at("uniform")).misfit) << "random's expected costs are uniform's";

    // auto over such a loop judges its candidates on that profile, and says so.
    const sim::result r = sim::simulate(platform({1.0, 3.0, 1.0, 2.0}), loop(10000, sim::workload_shape::increasing), "auto", {});
    ASSERT_FALSE(r.choices.empty());
    EXPECT_NE(r.choices.front().why.find("the loop's profile increasing"), std::string::npos) << r.choices.front().why;
    expect_every_task_once(r, 10000);
}

TEST(Auto, PfarmChunksShowsItsSchedule) {
    const pfarm::candidate_predictor predictor = sim::make_predictor(0.0, 0.0, {});
    const auto s = pfarm::schedule_round_robin("auto", 1000, 4, {}, {}, &predictor);
    task_count sum = 0;
    for (const auto& h : s.handouts) sum += h.work.count;
    EXPECT_EQ(sum, 1000);
}

}  // namespace
