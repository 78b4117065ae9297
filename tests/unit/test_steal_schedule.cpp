// The work-stealing farm's arithmetic in the core (pfarm/steal_schedule.hpp), which the MPI driver and the simulator
// both use: the split covers the loop once, the claim rule, the steal's share, the tree's parents, the victims, the
// backoff's bounds, the counters, the packed pair, and the refusals naming their argument.
#include "pfarm/error.hpp"
#include "pfarm/steal_schedule.hpp"

#include <gtest/gtest.h>

#include <set>

namespace {

using pfarm::task_count;

TEST(StealSchedule, TheSplitCoversTheLoopOnceAsEqualAsPossible) {
    for (const task_count tasks : {0, 1, 5, 17, 1000, 1001})
        for (const int ranks : {1, 2, 3, 7, 64}) {
            task_count next = 0;
            for (int j = 0; j < ranks; ++j) {
                const pfarm::steal_range r = pfarm::initial_range(tasks, ranks, j);
                EXPECT_EQ(r.front, next);
                EXPECT_TRUE(r.size() == tasks / ranks || r.size() == tasks / ranks + 1);
                EXPECT_EQ(r.size() == tasks / ranks + 1, j < tasks % ranks) << tasks << " over " << ranks << ", rank " << j;
                next = r.back;
            }
            EXPECT_EQ(next, tasks);
        }
}

TEST(StealSchedule, ClaimRulesOverTheOwnersRemainder) {
    pfarm::technique_options css;
    css.chunk = 4;
    EXPECT_EQ(pfarm::make_steal_claim_rule("ss", {}, 4).size(100), 1);
    EXPECT_EQ(pfarm::make_steal_claim_rule("css", css, 4).size(100), 4);
    EXPECT_EQ(pfarm::make_steal_claim_rule("css", css, 4).size(3), 3);  // clipped to what remains
    const auto gss = pfarm::make_steal_claim_rule("gss", {}, 4);
    EXPECT_EQ(gss.size(100), 25);
    EXPECT_EQ(gss.size(5), 2);
    EXPECT_EQ(gss.size(1), 1);
    pfarm::technique_options min3;
    min3.min_chunk = 3;
    EXPECT_EQ(pfarm::make_steal_claim_rule("gss", min3, 4).size(5), 3);
    EXPECT_EQ(pfarm::make_steal_claim_rule("gss", min3, 4).size(2), 2);
    for (const char* name : {"fss", "static", "auto", "multi", "tss"}) {
        try {
            pfarm::make_steal_claim_rule(name, {}, 4);
            ADD_FAILURE() << name << " accepted";
        } catch (const pfarm::invalid_argument& e) {
            EXPECT_EQ(e.argument(), "technique") << name;
        }
    }
}

TEST(StealSchedule, AThiefTakesHalfTheRemainderRoundedUpFromTheBack) {
    EXPECT_EQ(pfarm::steal_size(1), 1);
    EXPECT_EQ(pfarm::steal_size(2), 1);
    EXPECT_EQ(pfarm::steal_size(7), 4);
    const pfarm::steal_range found{10, 17};
    EXPECT_EQ(pfarm::after_steal(found), (pfarm::steal_range{10, 13}));
    EXPECT_EQ(pfarm::stolen_part(found), (pfarm::steal_range{13, 17}));
    EXPECT_EQ(pfarm::stolen_part({4, 5}), (pfarm::steal_range{4, 5}));  // a single task moves
}

TEST(StealSchedule, VictimsTreeParentsAndRandomOthers) {
    EXPECT_EQ(pfarm::tree_parent(0), -1);
    EXPECT_EQ(pfarm::tree_parent(1), 0);
    EXPECT_EQ(pfarm::tree_parent(2), 0);
    EXPECT_EQ(pfarm::tree_parent(6), 2);
    pfarm::victim_picker tree(pfarm::victim_rule::tree, 5, 8, 1);
    EXPECT_EQ(tree.next(), 2);
    pfarm::victim_picker alone(pfarm::victim_rule::random, 0, 1, 1);
    EXPECT_EQ(alone.next(), -1);
    pfarm::victim_picker random(pfarm::victim_rule::random, 2, 4, 1), again(pfarm::victim_rule::random, 2, 4, 1);
    std::set<int> seen;
    for (int i = 0; i < 200; ++i) {
        const int v = random.next();
        EXPECT_EQ(v, again.next());  // a function of the seed and the rank
        seen.insert(v);
    }
    EXPECT_EQ(seen, (std::set<int>{0, 1, 3}));
    EXPECT_EQ(pfarm::parse_victim_rule("tree"), pfarm::victim_rule::tree);
    try {
        pfarm::parse_victim_rule("ring", "--victims");
        ADD_FAILURE() << "ring accepted";
    } catch (const pfarm::invalid_argument& e) {
        EXPECT_EQ(e.argument(), "--victims");
    }
}

TEST(StealSchedule, BackoffDoublesUpToItsCap) {
    int failures = 0;
    EXPECT_DOUBLE_EQ(pfarm::steal_backoff(failures, 1.0, 0.0), 1.0);
    EXPECT_DOUBLE_EQ(pfarm::steal_backoff(failures, 1.0, 0.0), 2.0);
    EXPECT_EQ(failures, 2);
    for (int i = 0; i < 100; ++i) pfarm::steal_backoff(failures, 1.0, 0.0);
    EXPECT_DOUBLE_EQ(pfarm::steal_backoff(failures, 1.0, 0.0), pfarm::steal_backoff_floor);
    EXPECT_DOUBLE_EQ(pfarm::steal_backoff(failures, 1.0, 1e5), 1e5 / pfarm::steal_polls_per_task);
}

TEST(StealSchedule, CountersAndThePackedPair) {
    EXPECT_EQ(pfarm::notice_counters(1), 1);
    EXPECT_EQ(pfarm::notice_counters(4), 2);
    EXPECT_EQ(pfarm::notice_counters(5), 3);
    for (const pfarm::steal_range r : {pfarm::steal_range{0, 0}, pfarm::steal_range{3, 9},
                                       pfarm::steal_range{pfarm::steal_max_tasks - 1, pfarm::steal_max_tasks}})
        EXPECT_EQ(pfarm::unpack_range(pfarm::pack_range(r)), r);
}

}  // namespace
