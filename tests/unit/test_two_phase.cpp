// The static part of the two-phase techniques (skeleton/core/src/techniques/two_phase.cpp, docs/techniques/two-phase.md):
// A = ceil(alpha S / 100) tasks apportioned by weight with the largest remainder (detail::apportion), ties to the
// lower worker index. Expected values are worked out by hand in the comments.
#include "pfarm/detail/schedule_math.hpp"
#include "pfarm/round_robin.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

namespace {

using pfarm::task_count;
using sizes = std::vector<task_count>;

sizes chunk_sizes(const std::string& technique, task_count iterations, int workers,
                  const pfarm::technique_options& options) {
    sizes out;
    for (const auto& h : pfarm::schedule_round_robin(technique, iterations, workers, options).handouts)
        out.push_back(h.work.count);
    return out;
}

pfarm::technique_options weighted(std::vector<double> weights, double static_percent) {
    pfarm::technique_options o;
    o.weights = std::move(weights);
    o.static_percent = static_percent;
    return o;
}

// Weights typed as rounded decimals. I = 26, alpha = 50: A = ceil(13) = 13, sum w = 1.083333.
// Exact shares 13 x 0.5 / 1.083333 = 6.0000018, 3.9999963, 2.9999982: floors 6, 3, 2 (11), the two tasks
// left to the two largest remainders (workers 1 and 2): 6, 4, 3, the exact ratio 6:4:3 of 1/2, 1/3, 1/4.
// The former rule (ceil in index order, the last worker the rest) gave 7, 4, 2: ceil(6.0000018) = 7.
// Phase 2: the other 13 by gss over 3 workers, ceil(13/3) = 5, ceil(8/3) = 3, 2, 1, 1, 1.
TEST(TwoPhaseSplit, RoundedDecimalWeightsGiveTheExactRatio) {
    const sizes got = chunk_sizes("n-gss", 26, 3, weighted({0.5, 0.333333, 0.25}, 50));
    EXPECT_EQ(got, (sizes{6, 4, 3, 5, 3, 2, 1, 1, 1}));
    EXPECT_EQ(chunk_sizes("n-gss", 26, 3, weighted({6, 4, 3}, 50)), got);
}

TEST(TwoPhaseSplit, ApportionOfTheIssueExample) {
    const std::vector<double> w{0.5, 0.333333, 0.25};
    EXPECT_EQ(pfarm::detail::apportion(13, w), (sizes{6, 4, 3}));
}

// The five workers of Yang, Cheng & Shih, "On development of an efficient parallel loop self-scheduling for grid
// computing environments" (Example 1), in both orders: A = ceil(0.8 x 2048) = 1639, sum w = 2666; exact shares 922.17,
// 327.68, 143.24, 122.96, 122.96 (for 1500, 533, 233, 200, 200): floors make 1636, the 3 left go to the
// remainders 0.96, 0.96, 0.68. The same worker gets the same share whatever its position (the former rule
// gave 923, 328, 144, 123, 121 in one order and 123, 123, 144, 328, 921 in the other).
TEST(TwoPhaseSplit, SharesDoNotDependOnTheWorkersOrder) {
    const sizes fast_first = chunk_sizes("n-gss", 2048, 5, weighted({1500, 533, 233, 200, 200}, 80));
    const sizes slow_first = chunk_sizes("n-gss", 2048, 5, weighted({200, 200, 233, 533, 1500}, 80));
    EXPECT_EQ(sizes(fast_first.begin(), fast_first.begin() + 5), (sizes{922, 328, 143, 123, 123}));
    EXPECT_EQ(sizes(slow_first.begin(), slow_first.begin() + 5), (sizes{123, 123, 143, 328, 922}));
    EXPECT_EQ(sizes(fast_first.begin() + 5, fast_first.end()), sizes(slow_first.begin() + 5, slow_first.end()));
}

// Tie-break: equal remainders give the extra task to the lower worker index. Equal weights, A = 4
// (I = 8, alpha = 50): 4/3 each, floors 1, 1, 1, the one left to worker 0: 2, 1, 1.
TEST(TwoPhaseSplit, TiesGoToTheLowerWorkerIndex) {
    const sizes got = chunk_sizes("n-gss", 8, 3, weighted({1, 1, 1}, 50));
    EXPECT_EQ(sizes(got.begin(), got.begin() + 3), (sizes{2, 1, 1}));
}

// Weights 0.3, 0.1 stand for 3 : 1. A = 2 (I = 4, alpha = 50): exact shares 1.5 and 0.5, a tie that goes to
// worker 0: 2 and 0. In doubles the remainders are 0.4999999999999998 and 0.5, which without the tie tolerance
// would give 1 and 1. Worker 1 (share 0) gets no first chunk and goes straight to phase 2 (gss on the 2 left:
// ceil(2/2) = 1, then 1).
TEST(TwoPhaseSplit, DecimalWeightsTieLikeTheIntegersTheyStandFor) {
    EXPECT_EQ(pfarm::detail::apportion(2, std::vector<double>{0.3, 0.1}), (sizes{2, 0}));
    EXPECT_EQ(pfarm::detail::apportion(2, std::vector<double>{3, 1}), (sizes{2, 0}));
    const sizes got = chunk_sizes("n-gss", 4, 2, weighted({0.3, 0.1}, 50));
    EXPECT_EQ(got, (sizes{2, 1, 1}));
    EXPECT_EQ(chunk_sizes("n-gss", 4, 2, weighted({3, 1}, 50)), got);
}

// hpls-* (weights 1/t from the calibration): times 1, 2, 3, 4, I = 1024: S = 1020 after the 4 calibration tasks,
// A = ceil(816) = 816, F = 0.48, 0.24, 0.16, 0.12: exact 391.68, 195.84, 130.56, 97.92, floors make 813, the 3
// left to the remainders 0.92, 0.84, 0.68: 392, 196, 130, 98 (the former rule: 392, 196, 131, 97).
TEST(TwoPhaseSplit, MeasuredWeightsAreApportionedToo) {
    pfarm::technique_options o;
    o.times = {1, 2, 3, 4};
    o.static_percent = 80;
    for (const char* name : {"hpls-gss", "hpls-fss", "hpls-tss", "n-tss"}) {
        const sizes got = chunk_sizes(name, 1024, 4, o);
        ASSERT_GE(got.size(), 8u) << name;
        EXPECT_EQ(sizes(got.begin(), got.begin() + 8), (sizes{1, 1, 1, 1, 392, 196, 130, 98})) << name;
        EXPECT_EQ(std::accumulate(got.begin(), got.end(), task_count{0}), 1024) << name;
    }
}

}  // namespace
