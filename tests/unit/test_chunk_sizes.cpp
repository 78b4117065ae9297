// chunk_sizes (pfarm/chunk_sizes.hpp): a worker's chunk sizes as runs, read and changed like a sequence; checked
// against a std::vector doing the same operations in random order.
#include "pfarm/chunk_sizes.hpp"
#include "pfarm/error.hpp"

#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <vector>

namespace {

using pfarm::chunk_sizes;
using pfarm::task_count;
using sizes = std::vector<task_count>;

TEST(ChunkSizes, AMillionChunksOfOneAreOneRun) {
    chunk_sizes s;
    for (int i = 0; i < 1'000'000; ++i) s.push_back(1);
    EXPECT_EQ(s.size(), 1'000'000u);
    EXPECT_EQ(s.total(), 1'000'000);
    ASSERT_EQ(s.runs().size(), 1u);
    EXPECT_EQ(s.runs()[0], (chunk_sizes::run{1, 1'000'000}));
    EXPECT_EQ(s[999'999], 1);
}

TEST(ChunkSizes, ReadsLikeTheSequence) {
    const chunk_sizes s{15, 8, 3, 3, 3, 1, 1};
    EXPECT_EQ(s, (sizes{15, 8, 3, 3, 3, 1, 1}));
    EXPECT_EQ(s.to_vector(), (sizes{15, 8, 3, 3, 3, 1, 1}));
    EXPECT_EQ(s.runs().size(), 4u);
    EXPECT_EQ(s.front(), 15);
    EXPECT_EQ(s.back(), 1);
    EXPECT_EQ(s[4], 3);
    EXPECT_EQ(s.total(), 34);
    EXPECT_EQ(s.drop_front(1), (sizes{8, 3, 3, 3, 1, 1}));
    EXPECT_EQ(s.drop_front(4), (sizes{3, 1, 1}));
    EXPECT_TRUE(s.drop_front(7).empty());
    EXPECT_FALSE(s == (sizes{15, 8, 3, 3, 3, 1}));
    std::ostringstream text;
    text << s << chunk_sizes{} << chunk_sizes{2, 2};
    EXPECT_EQ(text.str(), "[15, 8, 3 x 3, 1, 1][][2, 2]");
}

TEST(ChunkSizes, OutOfRangeIsAnInternalError) {
    chunk_sizes s{4, 4};
    EXPECT_THROW(s[2], pfarm::internal_error);
    EXPECT_THROW(s.erase(2), pfarm::internal_error);
    EXPECT_THROW(s.set(5, 1), pfarm::internal_error);
    EXPECT_THROW(s.drop_front(3), pfarm::internal_error);
    EXPECT_THROW(s.append(1, 0), pfarm::internal_error);
}

// Random pushes, sets and erases, mostly near the end as the farmer session makes them: the same sequence as a
// vector, runs canonical (no empty run, no two neighbours of one size), total and count kept.
TEST(ChunkSizes, RandomEditsMatchAVector) {
    std::mt19937_64 rng(20261124);
    for (int round = 0; round < 200; ++round) {
        chunk_sizes s;
        sizes v;
        for (int op = 0; op < 300; ++op) {
            const auto value = static_cast<task_count>(rng() % 3);  // few values: many runs to merge and split
            const int what = static_cast<int>(rng() % 4);
            if (v.empty() || what <= 1) {
                s.push_back(value), v.push_back(value);
                continue;
            }
            const std::size_t back = std::min<std::size_t>(v.size(), rng() % 2 ? 2 : v.size());
            const std::size_t i = v.size() - 1 - static_cast<std::size_t>(rng() % back);
            if (what == 2) {
                s.set(i, value), v[i] = value;
            } else {
                s.erase(i), v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
            }
            ASSERT_EQ(s, v) << "round " << round << " op " << op;
        }
        ASSERT_EQ(s.to_vector(), v);
        task_count total = 0;
        for (task_count x : v) total += x;
        EXPECT_EQ(s.total(), total);
        for (std::size_t r = 0; r < s.runs().size(); ++r) {
            EXPECT_GT(s.runs()[r].repeat, 0);
            if (r > 0) EXPECT_NE(s.runs()[r].size, s.runs()[r - 1].size);
        }
        EXPECT_EQ(s, chunk_sizes(v));  // canonical: equal sequences, equal runs
    }
}

}  // namespace
