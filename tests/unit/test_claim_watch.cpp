// The decentralised farm's watch under on_worker_loss, in the core (pfarm/claim_watch.hpp): a claimer whose beat stops
// is presumed lost at the loss rule's deadline and not before, a beat or a hand-out restarts it, an unwatched one
// (rank 0's own) is never lost, the tasks nobody delivered go back in the farmer's pieces, and the refusals name
// their argument.
#include "pfarm/claim_watch.hpp"
#include "pfarm/error.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using pfarm::chunk;
using pfarm::claim_slot;
using pfarm::task_count;

pfarm::worker_loss_rule rule(double slack) {
    return pfarm::parse_worker_loss_rule("continue=" + std::to_string(slack), "on_worker_loss");
}

TEST(ClaimWatch, ASilentClaimerIsLostAtTheDeadlineOfOneTaskAndNotBefore) {
    // Worker 0 has done 10 tasks in 1 s (0.1 s a task) and holds a chunk: 4 x 0.1 + 0.5 = 0.9 s past the last beat.
    pfarm::claim_watch w(100, 2, rule(0.5), 1);
    std::vector<claim_slot> slots{{3, 10, 20, 10, 1.0}, {1, 30, 5, 0, 0.0}};
    const std::vector<std::uint8_t> watched{1, 1};
    EXPECT_TRUE(w.look(0.0, slots, watched).empty());
    slots[1].beat = 2;  // worker 1 beats; worker 0 does not
    EXPECT_TRUE(w.look(0.85, slots, watched).empty());
    EXPECT_EQ(w.look(0.95, slots, watched), std::vector<int>{0});
    EXPECT_TRUE(w.lost(0));
    EXPECT_FALSE(w.lost(1));
    EXPECT_EQ(w.living(), 1);
    EXPECT_EQ(w.lost_workers(), std::vector<int>{0});
    EXPECT_TRUE(w.look(5.0, slots, watched).size() == 1);  // worker 1, silent since 0.85 with the mean pace: lost too
    EXPECT_EQ(w.living(), 0);
}

TEST(ClaimWatch, ABeatOrAHandOutKeepsAClaimerAliveAndAnUnwatchedOneIsNeverLost) {
    pfarm::claim_watch w(100, 2, rule(0.5), 1);
    std::vector<claim_slot> slots{{1, 0, 10, 0, 0.0}, {1, 10, 10, 0, 0.0}};
    std::vector<std::uint8_t> watched{1, 1};
    w.look(0.0, slots, watched);
    // No task timed anywhere: a task is taken to last the slack, 4 x 0.5 + 0.5 = 2.5 s.
    slots[0].beat = 2;
    EXPECT_TRUE(w.look(2.4, slots, watched).empty());
    watched[1] = 0;  // worker 1 not watched, however long it is silent; worker 0, silent since 2.4 s, is lost
    EXPECT_EQ(w.look(100.0, slots, watched), std::vector<int>{0});
    watched[1] = 1;
    w.handed(1, 100.0);  // handed a piece at 100 s: its deadline runs from then
    EXPECT_TRUE(w.look(102.4, slots, watched).empty());
    EXPECT_EQ(w.look(102.6, slots, watched), std::vector<int>{1});
}

TEST(ClaimWatch, AClaimerHoldingNothingOwesItsBeatWithinTheSlack) {  // one that has ended and waits
    pfarm::claim_watch w(10, 1, rule(2.0), 1);
    const std::vector<claim_slot> slots{{5, 0, 0, 3, 0.3}};
    const std::vector<std::uint8_t> watched{1};
    w.look(1.0, slots, watched);
    EXPECT_TRUE(w.look(2.9, slots, watched).empty());
    EXPECT_EQ(w.look(3.1, slots, watched), std::vector<int>{0});
}

TEST(ClaimWatch, TheTasksNobodyDeliveredGoBackInPiecesAmongTheLiving) {
    pfarm::claim_watch w(20, 3, rule(1.0), 2);
    std::vector<std::uint8_t> delivered(20, 1);  // a flag goes from 0 to 1, never back
    EXPECT_EQ(w.next_piece().count, 0);
    for (task_count t : {3, 4, 5, 6, 7, 8, 9, 15}) delivered[static_cast<std::size_t>(t)] = 0;
    ASSERT_TRUE(w.queue_missing(delivered));
    // Three workers living: a share of what is left of the range each time (ceil(7/3) = 3, then max(ceil(4/3),
    // min_chunk 2) = 2, then 2), then the lone task 15 (min_chunk 2, but no more than there is).
    EXPECT_EQ(w.next_piece(), (chunk{3, 3}));
    EXPECT_EQ(w.next_piece(), (chunk{6, 2}));
    EXPECT_EQ(w.next_piece(), (chunk{8, 2}));
    EXPECT_EQ(w.next_piece(), (chunk{15, 1}));
    EXPECT_EQ(w.next_piece().count, 0);
    // Rebuilt from the flags: what was delivered since is not queued again.
    for (task_count t : {3, 4, 5, 6, 7, 8}) delivered[static_cast<std::size_t>(t)] = 1;
    ASSERT_TRUE(w.queue_missing(delivered));
    EXPECT_EQ(w.next_piece(), (chunk{9, 1}));
    EXPECT_EQ(w.next_piece(), (chunk{15, 1}));
    EXPECT_EQ(w.next_piece().count, 0);
    delivered[9] = delivered[15] = 1;
    EXPECT_FALSE(w.queue_missing(delivered));
    EXPECT_EQ(w.next_piece().count, 0);
}

TEST(ClaimWatch, PiecesShrinkAsWorkersAreLost) {
    pfarm::claim_watch w(12, 2, rule(0.1), 1);
    std::vector<claim_slot> slots{{1, 0, 6, 0, 0.0}, {1, 6, 6, 0, 0.0}};
    const std::vector<std::uint8_t> watched{1, 1};
    w.look(0.0, slots, watched);
    slots[1].beat = 2;
    ASSERT_EQ(w.look(1.0, slots, watched), std::vector<int>{0});
    std::vector<std::uint8_t> delivered(12, 1);
    for (task_count t = 0; t < 6; ++t) delivered[static_cast<std::size_t>(t)] = 0;
    ASSERT_TRUE(w.queue_missing(delivered));
    EXPECT_EQ(w.next_piece(), (chunk{0, 6}));  // one worker left: all of it
}

TEST(ClaimWatch, TheRefusalsNameTheirArgument) {
    const auto names = [](auto&& f, const std::string& argument) {
        try {
            f();
            ADD_FAILURE() << "no refusal naming " << argument;
        } catch (const pfarm::invalid_argument& e) {
            EXPECT_EQ(e.argument(), argument);
        }
    };
    names([] { pfarm::claim_watch(-1, 1, rule(1.0), 1); }, "tasks");
    names([] { pfarm::claim_watch(10, 0, rule(1.0), 1); }, "workers");
    names([] { pfarm::claim_watch(10, 1, rule(1.0), 0); }, "min_chunk");
    pfarm::worker_loss_rule bad = rule(1.0);
    bad.slack = 0.0;
    names([&] { pfarm::claim_watch(10, 1, bad, 1); }, "on_worker_loss");
    EXPECT_DOUBLE_EQ(pfarm::claim_watch::beat_interval(rule(2.0)), 0.5);
    EXPECT_DOUBLE_EQ(pfarm::claim_watch::beat_interval(rule(0.01)), 0.01);
    EXPECT_DOUBLE_EQ(pfarm::claim_watch::beat_interval(rule(60.0)), 1.0);
}

}  // namespace
