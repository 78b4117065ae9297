// Properties every technique must have, over many random (I, p, options) and random request orders:
// chunks >= 1, never more than what remains, every task index handed out exactly once (so the sizes add up to
// I), min_chunk respected except by the last chunk, deterministic, and the loop always finishes.
#include "pfarm/error.hpp"
#include "pfarm/farmer.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/round_robin.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using pfarm::task_count;

std::vector<std::string> technique_names() {
    std::vector<std::string> names;
    for (const auto& t : pfarm::techniques()) names.push_back(t.name);
    names.push_back("wf");
    return names;
}

/// Options that every technique accepts, with the required parameters set.
pfarm::technique_options random_options(std::mt19937_64& rng, int p, bool with_weights) {
    pfarm::technique_options o;
    std::uniform_real_distribution<double> speed(0.5, 4.0);
    o.min_chunk = std::uniform_int_distribution<task_count>(1, 6)(rng);
    o.chunk = std::uniform_int_distribution<task_count>(1, 50)(rng);
    o.overhead = std::uniform_real_distribution<double>(0.01, 2.0)(rng);
    o.sigma = std::uniform_real_distribution<double>(0.01, 2.0)(rng);
    o.static_percent = std::uniform_real_distribution<double>(0.0, 100.0)(rng);
    if (with_weights)
        for (int j = 0; j < p; ++j) o.weights.push_back(speed(rng));
    for (int j = 0; j < p; ++j) o.times.push_back(1.0 / speed(rng));
    return o;
}

struct record {
    int worker;
    pfarm::chunk work;
    bool calibration;
};

/// Drives a farmer with a random request order: at each step a random worker that holds a chunk completes it
/// (time = count x its per-task time, jittered) and asks again; parked (waiting) workers are re-asked once the
/// calibration barrier passes. Returns every hand-out.
std::vector<record> random_drive(const std::string& name, task_count tasks, int p, const pfarm::technique_options& o,
                                 std::uint64_t seed) {
    pfarm::farmer f(tasks, p, pfarm::make_technique(name, o, p), o.min_chunk);
    std::mt19937_64 rng(seed);
    // Monitor readings for the statistical calibrations (dealdyn-lr, dealdyn-mv).
    std::vector<pfarm::resource_sample> samples(static_cast<std::size_t>(p));
    for (auto& s : samples) {
        s.availability = std::uniform_real_distribution<double>(0.1, 1.0)(rng);
        s.latency = std::uniform_real_distribution<double>(1e-6, 1e-3)(rng);
        s.benchmark = std::uniform_real_distribution<double>(100.0, 400.0)(rng);
    }
    std::vector<record> out;
    std::vector<task_count> holding(static_cast<std::size_t>(p), 0);
    std::vector<int> parked;
    std::vector<int> busy;
    const auto ask = [&](int w) {
        const auto d = f.request(w);
        if (d.what == pfarm::decision::kind::assign) {
            out.push_back({w, d.work, d.calibration});
            holding[static_cast<std::size_t>(w)] = d.work.count;
            busy.push_back(w);
        } else if (d.what == pfarm::decision::kind::wait) {
            parked.push_back(w);
        }
    };
    for (int w = 0; w < p; ++w) ask(w);
    std::uniform_real_distribution<double> jitter(0.8, 1.25);
    while (!busy.empty()) {
        const std::size_t i = std::uniform_int_distribution<std::size_t>(0, busy.size() - 1)(rng);
        const int w = busy[i];
        busy.erase(busy.begin() + static_cast<long>(i));
        const double t = static_cast<double>(holding[static_cast<std::size_t>(w)]) * o.times[static_cast<std::size_t>(w)] * jitter(rng);
        holding[static_cast<std::size_t>(w)] = 0;
        f.complete(w, t, &samples[static_cast<std::size_t>(w)]);
        ask(w);
        if (!f.calibrating() && !parked.empty()) {
            std::vector<int> again;
            again.swap(parked);
            std::sort(again.begin(), again.end());
            for (int v : again) ask(v);
        }
    }
    EXPECT_TRUE(f.done()) << name << ": " << f.remaining() << " tasks never handed out";
    return out;
}

class EveryTechnique : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryTechnique, ChunksCoverTheLoopExactlyOnce) {
    const std::string name = GetParam();
    std::mt19937_64 rng(std::hash<std::string>{}(name));
    for (int trial = 0; trial < 60; ++trial) {
        const int p = std::uniform_int_distribution<int>(1, 12)(rng);
        const task_count tasks = trial % 5 == 0 ? std::uniform_int_distribution<task_count>(1, 2 * p)(rng)
                                                : std::uniform_int_distribution<task_count>(1, 5000)(rng);
        const auto o = random_options(rng, p, trial % 2 == 0);
        SCOPED_TRACE(name + " I=" + std::to_string(tasks) + " p=" + std::to_string(p) + " trial " + std::to_string(trial));
        const auto handouts = random_drive(name, tasks, p, o, rng());
        std::vector<int> seen(static_cast<std::size_t>(tasks), 0);
        task_count sum = 0;
        for (std::size_t i = 0; i < handouts.size(); ++i) {
            const auto& h = handouts[i];
            ASSERT_GE(h.work.count, 1);
            ASSERT_GE(h.work.first, 0);
            ASSERT_LE(h.work.first + h.work.count, tasks);
            for (task_count t = h.work.first; t < h.work.first + h.work.count; ++t) ++seen[static_cast<std::size_t>(t)];
            sum += h.work.count;
            if (h.calibration) {
                EXPECT_EQ(h.work.count, 1);
            } else if (sum != tasks) {  // every chunk but the one that takes the last tasks
                EXPECT_GE(h.work.count, o.min_chunk);
            }
        }
        EXPECT_EQ(sum, tasks);
        EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
    }
}

TEST_P(EveryTechnique, Deterministic) {
    const std::string name = GetParam();
    std::mt19937_64 rng(7);
    const auto o = random_options(rng, 5, true);
    std::vector<pfarm::resource_sample> samples(5);
    for (int j = 0; j < 5; ++j) {
        samples[static_cast<std::size_t>(j)].availability = 0.2 + 0.15 * j;
        samples[static_cast<std::size_t>(j)].latency = 1e-4 * (5 - j);
    }
    const auto a = pfarm::schedule_round_robin(name, 3000, 5, o, samples);
    const auto b = pfarm::schedule_round_robin(name, 3000, 5, o, samples);
    ASSERT_EQ(a.handouts.size(), b.handouts.size());
    for (std::size_t i = 0; i < a.handouts.size(); ++i) {
        EXPECT_EQ(a.handouts[i].worker, b.handouts[i].worker);
        EXPECT_EQ(a.handouts[i].work, b.handouts[i].work);
    }
}

TEST_P(EveryTechnique, MoreWorkersThanTasksStopTheSurplus) {
    const std::string name = GetParam();
    std::mt19937_64 rng(11);
    const auto o = random_options(rng, 8, false);
    std::vector<pfarm::resource_sample> samples(8);
    for (int j = 0; j < 8; ++j) samples[static_cast<std::size_t>(j)].availability = 0.1 * (j + 1), samples[static_cast<std::size_t>(j)].latency = 1e-3 / (j + 1);
    const auto s = pfarm::schedule_round_robin(name, 3, 8, o, samples);
    task_count sum = 0;
    for (const auto& h : s.handouts) sum += h.work.count;
    EXPECT_EQ(sum, 3);
}

TEST_P(EveryTechnique, RejectsZeroTasks) {
    std::mt19937_64 rng(3);
    const auto o = random_options(rng, 2, false);
    EXPECT_THROW(pfarm::schedule_round_robin(GetParam(), 0, 2, o), pfarm::invalid_argument);
}

/// Drives a farmer with reclaim on in a random order of events, as a driver would see them: a worker completes
/// its oldest chunk (and asks again), asks ahead (prefetch: when it holds one chunk), or a victim answers a
/// pending reclaim with victim_gives(), having started a random number of the tasks of the chunk it computes
/// (nothing to give when it holds nothing any more: it crossed its request). A thief waiting for its victim's
/// answer does nothing (its results travel with the request that waits for that answer). Returns every task's
/// number of runs (a task runs where its final chunk is).
std::vector<int> random_reclaim_drive(const std::string& name, task_count tasks, int p, const pfarm::technique_options& o,
                                      std::uint64_t seed, bool prefetch, task_count& reclaims) {
    pfarm::farmer f(tasks, p, pfarm::make_technique(name, o, p), o.min_chunk, prefetch ? 2 : 1, true);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::vector<pfarm::resource_sample> samples(static_cast<std::size_t>(p));
    for (auto& s : samples) s.availability = 0.5, s.latency = 1e-4, s.benchmark = 200.0;
    struct worker {
        std::vector<pfarm::chunk> held;  // oldest first; the oldest is being computed
        task_count next = 0;             // first task of the oldest chunk not started
        bool thief = false, parked = false, asked = false, ahead = true, stopped = false;
    };
    std::vector<worker> ws(static_cast<std::size_t>(p));
    for (auto& w : ws) w.ahead = prefetch;
    std::vector<std::pair<int, pfarm::decision>> pending;  // (victim, the reclaim it was sent)
    std::vector<int> runs(static_cast<std::size_t>(tasks), 0);
    double now = 0.0;
    const auto act = [&](int i, const pfarm::decision& d) {
        auto& w = ws[static_cast<std::size_t>(i)];
        switch (d.what) {
        case pfarm::decision::kind::assign:
            if (w.held.empty()) w.next = d.work.first;
            w.held.push_back(d.work);
            break;
        case pfarm::decision::kind::wait:
            EXPECT_TRUE(w.held.empty()) << "wait for a worker holding a chunk";
            w.parked = true;
            break;
        case pfarm::decision::kind::reclaim:
            EXPECT_NE(d.victim, i);
            EXPECT_GT(d.share, 0.0);
            EXPECT_LT(d.share, 1.0);
            w.thief = true;
            pending.push_back({d.victim, d});
            break;
        case pfarm::decision::kind::later:
            EXPECT_FALSE(w.held.empty()) << "later for a worker holding nothing";
            w.ahead = false;
            break;
        case pfarm::decision::kind::stop:
            EXPECT_TRUE(w.held.empty()) << "stop for a worker holding a chunk, with reclaim on";
            w.stopped = true;
            break;
        }
    };
    const auto ask_parked = [&] {
        for (int i = 0; i < p; ++i)
            if (ws[static_cast<std::size_t>(i)].parked && !f.calibrating())
                ws[static_cast<std::size_t>(i)].parked = false, act(i, f.request(i, now));
    };
    const auto ask = [&](int i) {  // a request: ahead when it still holds a chunk
        auto& w = ws[static_cast<std::size_t>(i)];
        w.asked = !w.held.empty();
        act(i, f.request(i, now));
    };
    for (int i = 0; i < p; ++i) ask(i);
    for (;;) {
        // Who may move: a worker holding one chunk that may ask ahead must do so before it completes it.
        std::vector<int> movers;
        for (int i = 0; i < p; ++i) {
            const auto& w = ws[static_cast<std::size_t>(i)];
            if (!w.thief && !w.held.empty()) movers.push_back(i);
        }
        if (movers.empty() && pending.empty()) break;
        now += unit(rng);
        if (!pending.empty() && (movers.empty() || unit(rng) < 0.4)) {
            const std::size_t k = std::uniform_int_distribution<std::size_t>(0, pending.size() - 1)(rng);
            const auto [v, asked] = pending[k];
            pending.erase(pending.begin() + static_cast<long>(k));
            auto& w = ws[static_cast<std::size_t>(v)];
            pfarm::chunk given{0, 0};
            if (!w.held.empty()) {
                const pfarm::chunk current = w.held[0];
                w.next = std::uniform_int_distribution<task_count>(std::max(w.next, current.first + 1),
                                                                   current.first + current.count)(rng);
                given = pfarm::victim_gives(asked, unit(rng) < 0.2 ? 0.0 : 0.5 + unit(rng), current, w.next,
                                            w.held.size() > 1 ? w.held[1] : pfarm::chunk{});
                for (auto& c : w.held)
                    if (given.count > 0 && given.first + given.count == c.first + c.count && given.first > c.first)
                        c.count -= given.count;
            }
            const auto out = f.released(v, given, now);
            ws[static_cast<std::size_t>(out.thief)].thief = false;
            act(out.thief, out.answer);
            ask_parked();  // thieves that waited for this answer ask again
            continue;
        }
        const int i = movers[std::uniform_int_distribution<std::size_t>(0, movers.size() - 1)(rng)];
        auto& w = ws[static_cast<std::size_t>(i)];
        if (w.ahead && w.held.size() == 1 && !w.asked && !f.calibrating()) {
            ask(i);  // prefetch: it asks for the next chunk while it computes this one
            continue;
        }
        const pfarm::chunk c = w.held.front();
        w.held.erase(w.held.begin());
        for (task_count t = c.first; t < c.first + c.count; ++t) ++runs[static_cast<std::size_t>(t)];
        if (!w.held.empty()) w.next = w.held.front().first;
        f.complete(i, static_cast<double>(c.count) * o.times[static_cast<std::size_t>(i)], &samples[static_cast<std::size_t>(i)]);
        // Its results travel with a request: for the chunk after the one it now holds, or with nothing in hand.
        if (w.held.empty() || w.ahead) ask(i);
        ask_parked();
    }
    EXPECT_TRUE(f.done()) << name << ": " << f.tasks() - f.completed_tasks() << " tasks not completed";
    EXPECT_TRUE(f.thieves().empty());
    reclaims = f.reclaims();
    return runs;
}

TEST_P(EveryTechnique, ReclaimKeepsEveryTaskExactlyOnce) {
    const std::string name = GetParam();
    std::mt19937_64 rng(std::hash<std::string>{}(name) ^ 0x5eed);
    task_count moved[2] = {0, 0};
    for (int trial = 0; trial < 40; ++trial) {
        const int p = std::uniform_int_distribution<int>(1, 10)(rng);
        const task_count tasks = trial % 5 == 0 ? std::uniform_int_distribution<task_count>(1, 2 * p)(rng)
                                                : std::uniform_int_distribution<task_count>(1, 3000)(rng);
        const auto o = random_options(rng, p, trial % 2 == 0);
        SCOPED_TRACE(name + " I=" + std::to_string(tasks) + " p=" + std::to_string(p) + " trial " + std::to_string(trial));
        for (bool prefetch : {false, true}) {
            SCOPED_TRACE(prefetch ? "prefetch" : "no prefetch");
            task_count reclaims = 0;
            const auto runs = random_reclaim_drive(name, tasks, p, o, rng(), prefetch, reclaims);
            EXPECT_TRUE(std::all_of(runs.begin(), runs.end(), [](int c) { return c == 1; }));
            moved[prefetch] += reclaims;
        }
    }
    EXPECT_GT(moved[0], 0) << "no reclaim ever moved a task: the drive does not exercise reclaim";
    EXPECT_GT(moved[1], 0) << "no reclaim ever moved a task with prefetch";
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryTechnique, ::testing::ValuesIn(technique_names()),
                         [](const auto& info) {
                             std::string n = info.param;
                             std::replace(n.begin(), n.end(), '-', '_');
                             return n;
                         });

}  // namespace
