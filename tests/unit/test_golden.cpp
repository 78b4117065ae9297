// Golden vectors from the papers, under pfarm's conventions (docs/techniques/README.md: pfarm follows the
// formulas; tests quote the tables where they agree). Where a table disagrees with its own formula, the comment
// says how.
#include "pfarm/round_robin.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace {

using pfarm::task_count;
using sizes = std::vector<task_count>;

sizes chunk_sizes(const std::string& technique, task_count iterations, int workers,
                  const pfarm::technique_options& options = {}, bool with_calibration = true) {
    sizes out;
    for (const auto& h : pfarm::schedule_round_robin(technique, iterations, workers, options).handouts)
        if (with_calibration || !h.calibration) out.push_back(h.work.count);
    return out;
}

sizes prefix(const sizes& s, std::size_t n) { return sizes(s.begin(), s.begin() + static_cast<long>(std::min(n, s.size()))); }

// Yang et al., "A performance-based approach to loop self-scheduling on heterogeneous PC clusters" (HPLS),
// Table 1: N = 1024, p = 4 (the table prints the first nine chunks).
TEST(GoldenYangHpls, Table1) {
    EXPECT_EQ(prefix(chunk_sizes("gss", 1024, 4), 9), (sizes{256, 192, 144, 108, 81, 61, 46, 34, 26}));
    EXPECT_EQ(prefix(chunk_sizes("fss", 1024, 4), 9), (sizes{128, 128, 128, 128, 64, 64, 64, 64, 32}));
    EXPECT_EQ(prefix(chunk_sizes("tss", 1024, 4), 9), (sizes{128, 120, 112, 104, 96, 88, 80, 72, 64}));
    pfarm::technique_options css;
    css.chunk = 128;
    EXPECT_EQ(chunk_sizes("css", 1024, 4, css), sizes(8, 128));
    EXPECT_EQ(chunk_sizes("ss", 1024, 4), sizes(1024, 1));
}

// Chronopoulos, Penmatsa, Yu & Yu, "Scalable loop self-scheduling schemes for heterogeneous clusters", Table 1:
// I = 1000, p = 4.
TEST(GoldenChronopoulosPenmatsaYuYu, Tss) {
    // The table prints all 16 steps (sum 1040, past the loop's end); pfarm cuts the 13th chunk to what remains.
    EXPECT_EQ(chunk_sizes("tss", 1000, 4), (sizes{125, 117, 109, 101, 93, 85, 77, 69, 61, 53, 45, 37, 28}));
}

TEST(GoldenChronopoulosPenmatsaYuYu, Fss) {
    // The table prints 62 and 32 where ceil(500/8) = 63 and ceil(248/8) = 31 (pfarm follows ceil).
    EXPECT_EQ(chunk_sizes("fss", 1000, 4), (sizes{125, 125, 125, 125, 63, 63, 63, 63, 31, 31, 31, 31, 16, 16, 16, 16,
                                                  8,   8,   8,   8,   4,  4,  4,  4,  2,  2,  2,  2,  1,  1,  1,  1}));
}

TEST(GoldenChronopoulosPenmatsaYuYu, Fiss) {
    EXPECT_EQ(chunk_sizes("fiss", 1000, 4), (sizes{50, 50, 50, 50, 83, 83, 83, 83, 117, 117, 117, 117}));
}

TEST(GoldenChronopoulosPenmatsaYuYu, Tfss) {
    // The table's last stage prints 17 x 4 (past the end); pfarm cuts it: 17 then the remaining 11.
    EXPECT_EQ(chunk_sizes("tfss", 1000, 4), (sizes{113, 113, 113, 113, 81, 81, 81, 81, 49, 49, 49, 49, 17, 11}));
}

// Yang, Cheng & Shih, "On development of an efficient parallel loop self-scheduling for grid computing
// environments", Table 1: I = 2048, five workers of 1500, 533, 233, 200, 200 MHz (fastest first).
// The -80 schemes' first five chunks (phase 1, A = 1639) differ from the table: the table rounds
// each share up in worker order and gives the last worker the rest (923, 328, 144, 123, 121; exact shares
// 922.17, 327.68, 143.24, 122.96, 122.96); pfarm apportions A by largest remainder (922, 328, 143, 123, 123:
// floors 1636, the 3 left to the remainders 0.96, 0.96, 0.68), docs/techniques/two-phase.md. A, and so phase 2,
// is unchanged: from the sixth chunk on the table is quoted as printed.
class GoldenYangChengShih : public ::testing::Test {
protected:
    pfarm::technique_options weighted() const {
        pfarm::technique_options o;
        o.weights = {1500, 533, 233, 200, 200};
        o.static_percent = 80;
        return o;
    }
};

TEST_F(GoldenYangChengShih, Gss) {
    EXPECT_EQ(chunk_sizes("gss", 2048, 5), (sizes{410, 328, 262, 210, 168, 134, 108, 86, 69, 55, 44, 35, 28, 23, 18,
                                                  14,  12,  9,   7,   6,   5,   4,   3,  2,  2,  2,  1,  1,  1,  1}));
}

TEST_F(GoldenYangChengShih, Gss80) {
    EXPECT_EQ(chunk_sizes("n-gss", 2048, 5, weighted()),
              (sizes{922, 328, 143, 123, 123, 82, 66, 53, 42, 34, 27, 21, 17, 14, 11, 9, 7, 6, 4, 4, 3, 2, 2, 1, 1, 1, 1,
                     1}));
}

TEST_F(GoldenYangChengShih, Fss80) {
    // The table prints eight 1s but counts N = 39: the formula gives nine (409 - 400 = 9 ones after the 3s).
    const sizes got = chunk_sizes("n-fss", 2048, 5, weighted());
    EXPECT_EQ(got, (sizes{922, 328, 143, 123, 123, 41, 41, 41, 41, 41, 21, 21, 21, 21, 21, 10, 10, 10, 10, 10, 5, 5, 5, 5,
                          5,   3,   3,   3,   3,   3,  1,  1,  1,  1,  1,  1,  1,  1,  1}));
    EXPECT_EQ(got.size(), 39u);
}

TEST_F(GoldenYangChengShih, Tss80) {
    EXPECT_EQ(chunk_sizes("n-tss", 2048, 5, weighted()),
              (sizes{922, 328, 143, 123, 123, 40, 38, 36, 34, 32, 30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 1}));
}

TEST_F(GoldenYangChengShih, PlainFssAndTss) {
    const sizes fss = chunk_sizes("fss", 2048, 5);
    EXPECT_EQ(prefix(fss, 10), (sizes{205, 205, 205, 205, 205, 103, 103, 103, 103, 103}));
    EXPECT_EQ(chunk_sizes("tss", 2048, 5),
              (sizes{204, 194, 184, 174, 164, 154, 144, 134, 124, 114, 104, 94, 84, 74, 64, 38}));
}

// Gonzalez-Velez & Cole, "Adaptive statistical scheduling of divisible workloads in heterogeneous systems",
// section 3.2.2: calibration times 1, 2, 3, 4; S = 68; k pinned to 2.
TEST(GoldenGonzalezVelezCole, FirstRound) {
    pfarm::technique_options o;
    o.times = {1, 2, 3, 4};
    o.k = 2;
    const sizes got = chunk_sizes("multi", 68, 4, o);
    EXPECT_EQ(prefix(got, 8), (sizes{1, 1, 1, 1, 15, 8, 5, 4}));
    EXPECT_EQ(std::accumulate(got.begin(), got.end(), task_count{0}), 68);
}

TEST(GoldenGonzalezVelezCole, UnpinnedK) {
    // k = ln(68)^CV with the population CV of 1, 2, 3, 4 (0.447): 1.90; the paper rounds it to about 2.
    pfarm::technique_options o;
    o.times = {1, 2, 3, 4};
    const auto s = pfarm::schedule_round_robin("multi", 68, 4, o);
    ASSERT_TRUE(s.k.has_value());
    EXPECT_NEAR(*s.k, 1.90, 0.01);
}

}  // namespace
