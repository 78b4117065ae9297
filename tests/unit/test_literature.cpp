// The literature techniques (skeleton/core/src/techniques/literature.cpp, docs/techniques/literature.md): fsc, mfsc,
// af, awf, awf-b, awf-c, awf-d, awf-e. Expected values are computed by hand from the formulas in the comments.
#include "pfarm/error.hpp"
#include "pfarm/farmer.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/round_robin.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace {

using pfarm::task_count;
using sizes = std::vector<task_count>;

const std::vector<std::string> literature = {"awf", "awf-b", "awf-c", "awf-d", "awf-e", "af", "fsc", "mfsc"};

sizes chunk_sizes(const std::string& technique, task_count iterations, int workers,
                  const pfarm::technique_options& options = {}) {
    sizes out;
    for (const auto& h : pfarm::schedule_round_robin(technique, iterations, workers, options).handouts)
        out.push_back(h.work.count);
    return out;
}

/// Chunk sizes of one worker, in order, from a round-robin schedule.
sizes chunks_of(const std::string& technique, task_count iterations, int workers, int worker,
                const pfarm::technique_options& options) {
    sizes out;
    for (const auto& h : pfarm::schedule_round_robin(technique, iterations, workers, options).handouts)
        if (h.worker == worker) out.push_back(h.work.count);
    return out;
}

task_count total(const sizes& s) { return std::accumulate(s.begin(), s.end(), task_count{0}); }

pfarm::technique_options fsc_options(double h, double sigma) {
    pfarm::technique_options o;
    o.overhead = h;
    o.sigma = sigma;
    return o;
}

pfarm::technique_options with_times(std::vector<double> times) {
    pfarm::technique_options o;
    o.times = std::move(times);
    return o;
}

/// Asks worker `w` for work and returns the size it got (fails the test on wait/stop).
task_count ask(pfarm::farmer& f, int w) {
    const auto d = f.request(w);
    EXPECT_EQ(d.what, pfarm::decision::kind::assign) << "worker " << w;
    return d.work.count;
}

std::string argument_of(const std::string& technique, const pfarm::technique_options& o, int p = 4) {
    try {
        (void)pfarm::make_technique(technique, o, p);
    } catch (const pfarm::invalid_argument& e) {
        return e.argument();
    }
    return "(nothing thrown)";
}

// ------------------------------------------------------------------------------------------------------- fsc
TEST(LiteratureFsc, HandComputedChunk) {
    // K = (sqrt(2) N h / (sigma p sqrt(ln p)))^(2/3), N = 1000, p = 4, h = 0.5, sigma = 1:
    // sqrt(2) * 1000 * 0.5 = 707.1068; 1 * 4 * sqrt(ln 4) = 4 * 1.1774100 = 4.7096401; ratio 150.14030;
    // 150.14030^(2/3) = 28.2487 -> ceil 29. 34 chunks of 29 = 986, the last cut to the remaining 14.
    sizes expected(34, 29);
    expected.push_back(14);
    EXPECT_EQ(chunk_sizes("fsc", 1000, 4, fsc_options(0.5, 1.0)), expected);

    // N = 10000, p = 16, h = 1, sigma = 2: sqrt(2) * 10000 / (2 * 16 * sqrt(ln 16)) = 14142.136 / 53.2837
    // = 265.4131; ^(2/3) = 41.2998 -> 42. 238 chunks of 42 = 9996, then 4.
    const sizes s = chunk_sizes("fsc", 10000, 16, fsc_options(1.0, 2.0));
    ASSERT_EQ(s.size(), 239u);
    EXPECT_EQ(s.front(), 42);
    EXPECT_EQ(s.back(), 4);
    EXPECT_EQ(total(s), 10000);
}

TEST(LiteratureFsc, OneWorkerGetsTheWholeLoop) {
    // ln 1 = 0: K grows without bound as p -> 1; pfarm gives the single worker one chunk of N.
    EXPECT_EQ(chunk_sizes("fsc", 777, 1, fsc_options(0.5, 1.0)), sizes{777});
}

TEST(LiteratureFsc, HugeOptimumIsCutToTheLoop) {
    // K = inf in double arithmetic: no undefined conversion, one chunk of N (the second worker is stopped).
    EXPECT_EQ(chunk_sizes("fsc", 50, 2, fsc_options(1e300, 1e-300)), sizes{50});
    // Tiny h: K < 1 is raised to 1.
    EXPECT_EQ(chunk_sizes("fsc", 5, 2, fsc_options(1e-9, 100.0)), sizes(5, 1));
}

TEST(LiteratureFsc, MissingOrBadParametersThrowNamingTheOption) {
    EXPECT_EQ(argument_of("fsc", {}), "overhead");
    EXPECT_EQ(argument_of("fsc", fsc_options(0.5, 1.0)), "(nothing thrown)");
    pfarm::technique_options no_sigma;
    no_sigma.overhead = 0.5;
    EXPECT_EQ(argument_of("fsc", no_sigma), "sigma");
    pfarm::technique_options no_h;
    no_h.sigma = 1.0;
    EXPECT_EQ(argument_of("fsc", no_h), "overhead");
    EXPECT_EQ(argument_of("fsc", fsc_options(-1.0, 1.0)), "overhead");
    EXPECT_EQ(argument_of("fsc", fsc_options(1.0, 0.0)), "sigma");
    EXPECT_THROW(pfarm::schedule_round_robin("fsc", 100, 4, {}), pfarm::invalid_argument);
}

// ------------------------------------------------------------------------------------------------------ mfsc
TEST(LiteratureMfsc, HandComputedChunk) {
    // T = ceil(1000/4) = 250; 0.55 + 250 ln 2 / ln 250 = 0.55 + 173.287 / 5.52146 = 31.934 -> 31.
    // 32 chunks of 31 = 992, then 8: 33 chunks where fss takes 32 (the closed form is an approximation).
    sizes expected(32, 31);
    expected.push_back(8);
    EXPECT_EQ(chunk_sizes("mfsc", 1000, 4), expected);
    // p = 1: T = 1000, 0.55 + 1000 * 0.693147 / 6.907755 = 100.89 -> 100: ten chunks, as fss's ten.
    EXPECT_EQ(chunk_sizes("mfsc", 1000, 1), sizes(10, 100));
    // T = 1 (no more tasks than workers): ln 1 = 0, chunks of 1.
    EXPECT_EQ(chunk_sizes("mfsc", 3, 8), sizes(3, 1));
}

TEST(LiteratureMfsc, ChunkCountEqualsFssWhereTheClosedFormIsExact) {
    // FAC (fss, x = 2) takes about p log2(N/p) chunks; mfsc's K = T ln 2 / ln T is N over that count.
    // These (N, p) give exactly fss's count:
    for (auto [n, p] : std::vector<std::pair<task_count, int>>{
             {1000, 1}, {1000, 2}, {1000, 3}, {1000, 8}, {5000, 5}, {100000, 2}, {100000, 3}, {1000000, 4}}) {
        SCOPED_TRACE("N=" + std::to_string(n) + " p=" + std::to_string(p));
        EXPECT_EQ(chunk_sizes("mfsc", n, p).size(), chunk_sizes("fss", n, p).size());
    }
}

TEST(LiteratureMfsc, ChunkCountCloseToFssOtherwise) {
    // Elsewhere the closed form (LB4OMP and DLS4LB use it verbatim) is within 12% of fss's count once
    // N/p >= 100 (computed over this grid; the largest gaps are about 11%, e.g. N = 1024, p = 4: 32 vs 36).
    for (task_count n : {1000, 1024, 2048, 5000, 10000, 100000, 1000000}) {
        for (int p : {1, 2, 3, 4, 5, 8, 16, 64, 256}) {
            if (n / p < 100) continue;
            SCOPED_TRACE("N=" + std::to_string(n) + " p=" + std::to_string(p));
            const double mfsc = static_cast<double>(chunk_sizes("mfsc", n, p).size());
            const double fss = static_cast<double>(chunk_sizes("fss", n, p).size());
            EXPECT_NEAR(mfsc / fss, 1.0, 0.12);
        }
    }
}

// -------------------------------------------------------------------------------------------------------- af
TEST(LiteratureAf, FirstChunksAreFacsFirstBatch) {
    // No timing data yet: ceil(N/(2p)) = ceil(1000/8) = 125 for each worker.
    const sizes s = chunk_sizes("af", 1000, 4);
    EXPECT_EQ(sizes(s.begin(), s.begin() + 4), sizes(4, 125));
}

TEST(LiteratureAf, FasterWorkerGetsBiggerChunksOnceTimesArrive) {
    // N = 1000, p = 2, per-task times 1 and 4 (constant, so sigma = 0 and D = 0: K_j = E R / mu_j,
    // E = 1 / (1/1 + 1/4) = 0.8), capped at ceil(N/(2p)) = 250:
    //   start-up 250, 250 (R = 500); worker 0: 0.8 * 500 = 400 -> cap 250 (R = 250); worker 1: 0.8 * 250 / 4 =
    //   50 (R = 200); worker 0: 160 (R = 40); worker 1: 8 (R = 32); worker 0: 25.6 -> 26 (R = 6);
    //   worker 1: 1.2 -> 2 (R = 4); worker 0: 3.2 -> 4 (R = 0).
    EXPECT_EQ(chunk_sizes("af", 1000, 2, with_times({1, 4})), (sizes{250, 250, 250, 50, 160, 8, 26, 2, 4}));
}

TEST(LiteratureAf, FormulaWithMeasuredDeviation) {
    // Driving the farmer: N = 10000, p = 2, start-up chunks ceil(10000/4) = 2500 (also the cap).
    pfarm::farmer f(10000, 2, pfarm::make_technique("af", {}, 2));
    EXPECT_EQ(ask(f, 0), 2500);
    EXPECT_EQ(ask(f, 1), 2500);
    f.complete(0, 2500.0);  // worker 0: x = 1.0 per task
    f.complete(1, 5000.0);  // worker 1: x = 2.0 per task
    // mu = 1, 2; sigma = 0, 0: K_0 = E R / mu_0 = (1/1.5) * 5000 = 3333 -> cap 2500.
    EXPECT_EQ(ask(f, 0), 2500);
    f.complete(0, 3000.0);  // x = 1.2
    // Worker 0: two chunks of 2500 with x = 1.0 and 1.2: mu = 1.1, sigma^2 = (2500 * 0.1^2 + 2500 * 0.1^2) / 1
    // = 50 (chunk means of 2500 tasks that differ by 0.2 imply a large per-task deviation).
    // D = 50 / 1.1 = 45.4545; 1/E = 1/1.1 + 1/2 = 1.4090909, E = 0.7096774; R = 2500, E R = 1774.1935.
    // K_0 = (D + 2 E R - sqrt(D^2 + 4 D E R)) / (2 mu_0) = (3593.8416 - 569.7718) / 2.2 = 1374.57 -> 1375
    // (with sigma = 0 it would be E R / mu_0 = 1612.9 -> 1613: the deviation makes the chunk smaller).
    EXPECT_EQ(ask(f, 0), 1375);
}

// ------------------------------------------------------------------------------------------------------- awf
TEST(LiteratureAwf, AwfBWeightsMoveTowardTheFasterWorker) {
    // N = 1000, p = 2, times 1 and 4, round robin (each worker sends its results with its next request, in turn).
    // Batch 1 (equal weights): ceil(1000/4) = 250 each, R = 500. Batch 2 starts when worker 0 asks, with only its
    // own time known (worker 1's result comes with its request after): weights 1 and the initial 1, so
    // ceil(500/4) = 125 each, R = 250. Batch 3 sees both: pi = 1 and 4, weights (1/pi) / mean(1/pi) = 1.6 and
    // 0.4: ceil(250 * 1.6 / 4) = 100, ceil(250 * 0.4 / 4) = 25; then 50, 13 (R = 125) ...
    EXPECT_EQ(chunk_sizes("awf-b", 1000, 2, with_times({1, 4})),
              (sizes{250, 250, 125, 125, 100, 25, 50, 13, 25, 7, 12, 3, 6, 2, 3, 1, 2, 1}));
    const sizes fast = chunks_of("awf-b", 1000, 2, 0, with_times({1, 4}));
    const sizes slow = chunks_of("awf-b", 1000, 2, 1, with_times({1, 4}));
    for (std::size_t i = 2; i < std::min(fast.size(), slow.size()); ++i) EXPECT_GT(fast[i], slow[i]) << "batch " << i;
}

TEST(LiteratureAwf, AwfCWeightsMoveTowardTheFasterWorker) {
    // Per request ceil(R w_j / (2p)): 250 (R = 750), ceil(750/4) = 188 (R = 562); worker 0 reports (only it
    // measured: weight 1): ceil(562/4) = 141 (R = 421); worker 1 reports: 1/pi = 1 and 0.25, weight
    // 0.25 x 2 / 1.25 = 0.4: ceil(421 * 0.4 / 4) = 43 ...
    const sizes s = chunk_sizes("awf-c", 1000, 2, with_times({1, 4}));
    EXPECT_EQ(sizes(s.begin(), s.begin() + 4), (sizes{250, 188, 141, 43}));
    EXPECT_EQ(total(s), 1000);
    const sizes fast = chunks_of("awf-c", 1000, 2, 0, with_times({1, 4}));
    const sizes slow = chunks_of("awf-c", 1000, 2, 1, with_times({1, 4}));
    for (std::size_t i = 1; i + 2 < std::min(fast.size(), slow.size()); ++i) EXPECT_GT(fast[i], slow[i]) << i;
}

TEST(LiteratureAwf, InitialWeightsFromOptions) {
    // --weights 3,1 scaled to mean 1: 1.5, 0.5: batch 1 of awf-b is 1000 * 1.5 / 4 = 375 and 125.
    pfarm::technique_options o;
    o.weights = {3, 1};
    const sizes s = chunk_sizes("awf-b", 1000, 2, o);
    EXPECT_EQ(sizes(s.begin(), s.begin() + 2), (sizes{375, 125}));
    // Batch 2 starts with only worker 0 measured: its weight 1, worker 1 keeps its initial 0.5: 125 and
    // ceil(62.5) = 63 (R = 312). Equal per-task times: the measured weights are equal from batch 3 on (78 each).
    EXPECT_EQ(sizes(s.begin() + 2, s.begin() + 6), (sizes{125, 63, 78, 78}));
}

TEST(LiteratureAwf, AwfDChargesTheOverheadPerChunk) {
    // As above, with h = 125 added to every chunk time. Batch 2 (only worker 0 measured) is 125 and 63 as for
    // awf-b. Batch 3 (R = 312): worker 0's chunks weigh k = 1, 2: 1/pi = (375 + 2 x 125) / (500 + 2 x 250) =
    // 0.625; worker 1's: 125 / (125 + 125) = 0.5; weights 1.111 and 0.889: ceil(86.7) = 87, ceil(69.3) = 70
    // (awf-b, without h: 78 and 78).
    pfarm::technique_options o;
    o.weights = {3, 1};
    o.overhead = 125;
    const sizes d = chunk_sizes("awf-d", 1000, 2, o);
    EXPECT_EQ(sizes(d.begin(), d.begin() + 6), (sizes{375, 125, 125, 63, 87, 70}));
    EXPECT_NE(d, chunk_sizes("awf-b", 1000, 2, o));
    EXPECT_NE(chunk_sizes("awf-e", 1000, 2, o), chunk_sizes("awf-c", 1000, 2, o));
}

TEST(LiteratureAwf, OverheadVariantsRequireOverheadH) {
    EXPECT_EQ(argument_of("awf-d", {}), "overhead");
    EXPECT_EQ(argument_of("awf-e", {}), "overhead");
    EXPECT_EQ(argument_of("awf-b", {}), "(nothing thrown)");
    pfarm::technique_options bad;
    bad.factor = -1.0;
    EXPECT_EQ(argument_of("awf-c", bad), "factor");
    pfarm::technique_options wrong_count;
    wrong_count.weights = {1, 2, 3};
    EXPECT_EQ(argument_of("awf", wrong_count), "weights");
}

/// The scenario that separates the batch kinds: p = 2, N = 10000; worker 0 takes both chunks of batch 2 and
/// slows down in between. Returns worker 0's first chunk of batch 3.
task_count third_batch_chunk(const std::string& technique) {
    pfarm::farmer f(10000, 2, pfarm::make_technique(technique, {}, 2));
    EXPECT_EQ(ask(f, 0), 2500);  // batch 1, equal weights: ceil(10000 / 4)
    EXPECT_EQ(ask(f, 1), 2500);
    f.complete(0, 2500.0);       // x = 1: 1/pi_0 = 1
    f.complete(1, 2500.0);       // x = 1: 1/pi_1 = 1
    EXPECT_EQ(ask(f, 0), 1250);  // batch 2 (R = 5000): w = 1, 1: ceil(5000 / 4)
    f.complete(0, 2500.0);       // x = 2: worker 0 slowed down
    // The batch kinds keep the batch's weights: again 1250. (Weights updated now would give worker 0
    // pi_0 = (1*2500 + 2*2500) / (1*2500 + 2*1250) = 1.5, w_0 = (2/3) * 2 / (2/3 + 1) = 0.8 and
    // ceil(5000 * 0.8 / 4) = 1000.)
    EXPECT_EQ(ask(f, 0), 1250);
    f.complete(0, 2500.0);  // x = 2
    return ask(f, 0);       // batch 3, R = 2500
}

TEST(LiteratureAwf, BatchKindsFreezeWeightsPerBatchAndWeightDifferently) {
    // awf-b: k = worker 0's own chunk index 1, 2, 3: pi_0 = (2500 + 2*2500 + 3*2500) / (2500 + 2*1250 + 3*1250)
    // = 15000 / 8750; 1/pi_0 = 0.583333, w_0 = 0.583333 * 2 / 1.583333 = 0.736842 -> ceil(2500 * w_0 / 4) = 461.
    EXPECT_EQ(third_batch_chunk("awf-b"), 461);
    // awf: k = the batch index of each chunk, 1, 2, 2: pi_0 = (2500 + 2*2500 + 2*2500) / (2500 + 2*1250 +
    // 2*1250) = 12500 / 7500; 1/pi_0 = 0.6, w_0 = 0.6 * 2 / 1.6 = 0.75 -> ceil(2500 * 0.75 / 4) = 469.
    EXPECT_EQ(third_batch_chunk("awf"), 469);
}

TEST(LiteratureAwf, AwfCAdaptsAfterEveryChunk) {
    // The same start as above, with awf-c: after worker 0's slow second chunk its weight drops at once.
    pfarm::farmer f(10000, 2, pfarm::make_technique("awf-c", {}, 2));
    EXPECT_EQ(ask(f, 0), 2500);  // ceil(10000 / 4)
    EXPECT_EQ(ask(f, 1), 1875);  // ceil(7500 / 4)
    f.complete(0, 2500.0);       // x = 1; only measured worker: w_0 = 1
    EXPECT_EQ(ask(f, 0), 1407);  // ceil(5625 / 4) = 1407
    f.complete(0, 2814.0);       // x = 2: pi_0 = (2500 + 2 * 2814) / (2500 + 2 * 1407) = 8128 / 5314
    f.complete(1, 1875.0);       // x = 1: pi_1 = 1
    // 1/pi_0 = 0.653789, w_0 = 0.653789 * 2 / 1.653789 = 0.790656; R = 4218: ceil(4218 * 0.790656 / 4) = 834.
    EXPECT_EQ(ask(f, 0), 834);
}

// ------------------------------------------------------------------------------------------------ all eight
TEST(LiteratureRegistry, RowsAndFamilies) {
    for (const auto& name : literature) {
        const auto& row = pfarm::find_technique(name);
        EXPECT_EQ(row.family, name == "fsc" || name == "mfsc" ? "fixed-size" : "adaptive") << name;
        EXPECT_FALSE(row.description.empty()) << name;
        EXPECT_FALSE(row.source.empty()) << name;
    }
}

TEST(LiteratureRegistry, EveryTechniqueSumsToTheLoop) {
    pfarm::technique_options o = fsc_options(0.3, 1.5);
    for (const auto& name : literature) {
        for (int p : {1, 2, 3, 7, 16}) {
            for (task_count n : {1, 2, 5, 17, 100, 1000, 4099}) {
                o.times.clear();
                for (int j = 0; j < p; ++j) o.times.push_back(1.0 + 0.75 * j);
                const sizes s = chunk_sizes(name, n, p, o);
                SCOPED_TRACE(name + " N=" + std::to_string(n) + " p=" + std::to_string(p));
                EXPECT_EQ(total(s), n);
                for (task_count c : s) EXPECT_GE(c, 1);
            }
        }
    }
}

}  // namespace
