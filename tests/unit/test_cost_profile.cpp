// Unit tests: the cost profile tells workers' speeds apart from the costs of the tasks they got.
#include "pfarm/cost_profile.hpp"
#include "pfarm/error.hpp"
#include "pfarm/farmer.hpp"
#include "pfarm/registry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

using pfarm::chunk;
using pfarm::cost_profile;
using pfarm::task_count;

/// A Mandelbrot-like profile over 2,000 tasks: cheap edges (cost 1), a middle ten times dearer.
double mandelbrot_like(task_count i) {
    const double x = (static_cast<double>(i) - 1000.0) / 300.0;
    return 1.0 + 9.0 * std::exp(-x * x);
}

double seconds_of(chunk c, double speed) {
    double s = 0.0;
    for (task_count i = c.first; i < c.first + c.count; ++i) s += mandelbrot_like(i);
    return s / speed;
}

// Three workers at speeds 1, 1/2 and 1/4 take decreasing chunks (a quarter of the remaining tasks over the workers,
// as fss does) when they finish, with 5% noise on each time: the slow workers' few chunks fall on cheap edges and
// dear middles by chance, and their seconds per task so far misjudge them; the profile does not.
TEST(CostProfile, TellsWorkersSpeedsApartFromTheirTasksCosts) {
    const std::vector<double> speed{1.0, 0.5, 0.25};
    cost_profile p(2000, 3);
    std::vector<double> free_at(3, 0.0), naive(3, 0.0), done(3, 0.0);
    for (task_count next = 0; next < 2000;) {
        const auto w = static_cast<std::size_t>(std::min_element(free_at.begin(), free_at.end()) - free_at.begin());
        const task_count n = std::min<task_count>(2000 - next, std::max<task_count>(1, (2000 - next + 11) / 12));
        const chunk c{next, n};
        next += n;
        const double s = seconds_of(c, speed[w]) * (1.0 + 0.05 * std::sin(1.7 * static_cast<double>(next)));
        free_at[w] += s, naive[w] += s, done[w] += static_cast<double>(n);
        p.record(static_cast<int>(w), c, s);
    }
    // Seconds per task so far put worker 2 more than 4.5 times slower than worker 0; the profile within 10% of 4.
    ASSERT_GT(naive[2] / done[2] / (naive[0] / done[0]), 4.5);
    EXPECT_NEAR(p.speed(0) / p.speed(1), 2.0, 0.2);
    EXPECT_NEAR(p.speed(0) / p.speed(2), 4.0, 0.4);
    // Predicted seconds per task on a range of the dear middle and one of the cheap edge: within 15% of the truth.
    for (const chunk c : {chunk{950, 100}, chunk{1800, 100}})
        for (int w = 0; w < 3; ++w)
            EXPECT_NEAR(p.seconds_per_task(w, c) * static_cast<double>(c.count) /
                            seconds_of(c, speed[static_cast<std::size_t>(w)]),
                        1.0, 0.15)
                << "worker " << w << ", tasks from " << c.first;
    // The middle bins cost several times the edge ones.
    EXPECT_GT(p.bin_cost(32) / p.bin_cost(0), 5.0);
}

TEST(CostProfile, EqualCostsGiveSecondsPerTask) {
    cost_profile p(1000, 2, 10);
    p.record(0, {0, 150}, 150.0);   // 1 s per task
    p.record(1, {150, 50}, 150.0);  // 3 s per task, sharing bin 1 with worker 0
    p.record(0, {200, 300}, 300.0);
    EXPECT_NEAR(p.seconds_per_task(0, {500, 100}), 1.0, 1e-6);
    EXPECT_NEAR(p.seconds_per_task(1, {500, 100}), 3.0, 1e-6);
    EXPECT_NEAR(p.speed(0) / p.speed(1), 3.0, 1e-6);
}

TEST(CostProfile, WorkersWithNoBinInCommonAreComparedAtEqualCosts) {
    cost_profile p(1000, 2, 10);
    p.record(0, {0, 100}, 100.0);    // bin 0 only
    p.record(1, {500, 100}, 400.0);  // bin 5 only
    EXPECT_NEAR(p.seconds_per_task(0, {0, 100}) / p.seconds_per_task(1, {0, 100}), 0.25, 1e-9);
    // A bin nobody computed costs what the nearest computed one does: bin 2 is nearer bin 0.
    EXPECT_NEAR(p.bin_cost(2), p.bin_cost(0), 1e-12);
    EXPECT_NEAR(p.bin_cost(4), p.bin_cost(5), 1e-12);
}

TEST(CostProfile, KnowsOnlyWorkersWithARecordAndIgnoresEmptyOrZeroTimes) {
    cost_profile p(100, 3);
    EXPECT_EQ(p.bins(), 64);
    EXPECT_FALSE(p.knows(0));
    p.record(0, {0, 10}, 0.0);
    p.record(0, {0, 0}, 1.0);
    EXPECT_FALSE(p.knows(0));
    p.record(1, {95, 20}, 2.0);  // indices past the loop fall in the last bin
    EXPECT_TRUE(p.knows(1));
    EXPECT_NEAR(p.seconds_per_task(1, {95, 20}), 0.1, 1e-9);
    EXPECT_EQ(cost_profile(10, 1).bins(), 10);  // no more bins than tasks
}

// A farm with reclaim fits after each chunk of its end game, and the fit then updates only the terms of the workers
// that recorded since: after 3,000 such fits (the terms summed afresh on the way, against rounding) the speeds and
// costs equal those of a profile given the same chunks and fitted once.
TEST(CostProfile, FittedAfterEveryChunkEqualsFittedOnce) {
    const int workers = 24;
    const task_count tasks = 20000;
    cost_profile each(tasks, workers), once(tasks, workers);
    const auto speed = [](int w) { return 0.25 + 0.125 * (w % 7); };
    int w = 0;
    for (task_count at = 0; at < tasks;) {
        const task_count n = std::min<task_count>(tasks - at, 1 + (tasks - at) / (4 * workers));
        const chunk c{at, n};
        const double s = seconds_of({c.first % 2000, c.count}, speed(w)) * (1.0 + 0.1 * std::sin(0.3 * at));
        each.record(w, c, s);
        once.record(w, c, s);
        (void)each.speed(w);  // a fit after every chunk
        at += n;
        w = (w + 7) % workers;
    }
    for (int v = 0; v < workers; ++v) EXPECT_NEAR(each.speed(v) / once.speed(v), 1.0, 1e-9) << "worker " << v;
    for (int b = 0; b < each.bins(); ++b) EXPECT_NEAR(each.bin_cost(b) / once.bin_cost(b), 1.0, 1e-9) << "bin " << b;
}

TEST(CostProfile, BadArgumentsAreNamed) {
    const auto names = [](auto&& make, const char* name) {
        try {
            make();
            ADD_FAILURE() << "no error for " << name;
        } catch (const pfarm::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
        }
    };
    names([] { cost_profile(0, 1); }, "tasks");
    names([] { cost_profile(10, 0); }, "workers");
    names([] { cost_profile(10, 1, 0); }, "bins");
}

// The farmer's reclaim judges a worker by the profile: tasks [0, 60) cost 1, [60, 200) cost 10; w0 runs at 0.25,
// w1 at 1 (css 40). w0's first chunk is cheap (4 s a task), w1's first half dear (5.5 s a task): by seconds per task
// so far w0 is the faster, and a thief would get 1/3 of its dear chunk (balanced_share(4, 8.5) clamped). The profile,
// fitted to these four chunks, puts the cost of w0's next chunk (tasks 80-119) above that of its first, and sends w1
// for more than that; at the victim, its own 40 s a task against the thief's pace there gives 2/3.
TEST(FarmerReclaim, JudgesASlowWorkerThatComputedCheapTasksByItsSpeed) {
    const auto cost = [](task_count i) { return i < 60 ? 1.0 : 10.0; };
    const auto seconds = [&](chunk c, double speed) {
        double s = 0.0;
        for (task_count i = c.first; i < c.first + c.count; ++i) s += cost(i);
        return s / speed;
    };
    pfarm::technique_options o;
    o.chunk = 40;
    pfarm::farmer f(200, 2, pfarm::make_technique("css", o, 2), 1, 1, true);
    ASSERT_EQ(f.request(0, 0.0).work, (chunk{0, 40}));
    ASSERT_EQ(f.request(1, 0.0).work, (chunk{40, 40}));
    f.complete(0, seconds({0, 40}, 0.25));  // 160 s
    ASSERT_EQ(f.request(0, 160.0).work, (chunk{80, 40}));
    f.complete(1, seconds({40, 40}, 1.0));  // 220 s
    ASSERT_EQ(f.request(1, 220.0).work, (chunk{120, 40}));
    f.complete(1, seconds({120, 40}, 1.0));
    ASSERT_EQ(f.request(1, 620.0).work, (chunk{160, 40}));
    f.complete(1, seconds({160, 40}, 1.0));
    const auto d = f.request(1, 1020.0);
    ASSERT_EQ(d.what, pfarm::decision::kind::reclaim);
    EXPECT_EQ(d.victim, 0);
    EXPECT_GT(d.share, 0.38);  // 0.42; seconds per task so far: 1/3
    EXPECT_GT(d.thief_seconds, 5.0);  // w1's pace on w0's chunk (10 s a task in truth)
    EXPECT_LT(d.thief_seconds, 11.0);
    // w0, at 40 s a task on its chunk, gives 2/3 of what it has not started.
    EXPECT_EQ(pfarm::victim_gives(d, 40.0, {80, 40}, 100), (chunk{107, 13}));
}

}  // namespace
