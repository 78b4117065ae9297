// The straggler rule (farmer.hpp "Stragglers", carried out by farmer_session) on a scripted farm: three workers,
// 30 tasks split statically ([0,10), [10,20), [20,30)), 0.1 s per task; workers 1 and 2 end at t = 1 while
// worker 0 is slow. Its chunk is overdue at 2 x 10 x 0.1 = 2 s; then workers 1 and 2 take it in two pieces and
// the first results of each task win (docs/reliability.md "Stragglers").
#include "pfarm/error.hpp"
#include "pfarm/farmer_session.hpp"
#include "pfarm/registry.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <map>

namespace {

using pfarm::chunk;
using pfarm::farmer_action;
using pfarm::reply_message;
using pfarm::request_message;

struct scripted {
    explicit scripted(double factor)
        : s(30, 3, pfarm::make_technique("static", {}, 3), {.keep_records = true, .stragglers = {factor, 0.0}}) {}

    /// Worker w's message; returns its reply (kind 0: none).
    reply_message::kind on(int w, const request_message& m, double now) {
        last.erase(w);
        take(s.on_message(w, m, now));
        const auto it = last.find(w);
        return it == last.end() ? reply_message::kind{} : it->second;
    }
    reply_message::kind ask(int w, chunk done, double now) {
        request_message m;
        m.done = done;
        m.seconds = 0.1 * static_cast<double>(done.count);
        m.finished = now;
        return on(w, m, now);
    }
    void take(const std::vector<farmer_action>& actions) {
        for (const auto& a : actions) {
            if (a.what == farmer_action::kind::deliver) {
                for (auto t = a.results.first; t < a.results.first + a.results.count; ++t) ++delivered[t];
                delivered_by[a.results.first] = a.worker;
            } else if (a.what == farmer_action::kind::send) {
                last[a.worker] = a.reply.what;
                work[a.worker] = a.reply.work;
            }
        }
    }
    /// Every task delivered exactly once.
    void every_task_once() const {
        for (pfarm::task_count t = 0; t < 30; ++t) {
            const auto it = delivered.find(t);
            EXPECT_TRUE(it != delivered.end() && it->second == 1) << "task " << t;
        }
    }

    pfarm::farmer_session s;
    std::map<pfarm::task_count, int> delivered;
    std::map<pfarm::task_count, int> delivered_by;  ///< first task of a delivered range -> worker
    std::map<int, reply_message::kind> last;
    std::map<int, chunk> work;
};

/// Hands out the three chunks, and workers 1 and 2 end theirs at t = 1: they wait for worker 0's.
void start(scripted& f) {
    for (int w = 0; w < 3; ++w) ASSERT_EQ(f.ask(w, {}, 0.0), reply_message::kind::assign);
    f.last.clear();
    EXPECT_EQ(f.ask(1, {10, 10}, 1.0), reply_message::kind{});  // parked: nothing overdue yet
    EXPECT_EQ(f.ask(2, {20, 10}, 1.0), reply_message::kind{});
    EXPECT_DOUBLE_EQ(f.s.deadline(), 2.0);
    f.take(f.s.on_timer(1.5));  // early: nothing happens
    EXPECT_TRUE(f.last.empty());
    f.take(f.s.on_timer(2.0));  // overdue: the two waiting workers take it in two pieces
    ASSERT_EQ(f.last[1], reply_message::kind::assign);
    ASSERT_EQ(f.last[2], reply_message::kind::assign);
    EXPECT_EQ(f.work[1].first, 0);
    EXPECT_EQ(f.work[1].count, 5);
    EXPECT_EQ(f.work[2].first, 5);
    EXPECT_EQ(f.work[2].count, 5);
    EXPECT_EQ(f.s.decisions().reruns(), 1);
    EXPECT_EQ(f.s.decisions().rerun_tasks(), 10);
}

TEST(FarmerStragglers, WithoutThemAnIdleWorkerIsStopped) {
    scripted f(0.0);
    for (int w = 0; w < 3; ++w) f.ask(w, {}, 0.0);
    EXPECT_EQ(f.ask(1, {10, 10}, 1.0), reply_message::kind::stop);
    EXPECT_EQ(f.s.deadline(), std::numeric_limits<double>::infinity());
}

TEST(FarmerStragglers, PiecesFirstThenTheSlowWorkerIsCancelledAndItsLateResultsDiscarded) {
    scripted f(2.0);
    start(f);
    EXPECT_EQ(f.ask(1, {0, 5}, 2.5), reply_message::kind::stop);  // nothing else left for it to do
    f.last.clear();
    EXPECT_EQ(f.ask(2, {5, 5}, 2.6), reply_message::kind::stop);
    EXPECT_EQ(f.last[0], reply_message::kind::cancel);  // worker 0 is told to drop [0, 10)
    EXPECT_EQ(f.work[0].first, 0);
    EXPECT_EQ(f.work[0].count, 10);
    EXPECT_FALSE(f.s.over());
    // Its results were on their way before the cancel reached it: discarded, and it is stopped.
    EXPECT_EQ(f.ask(0, {0, 10}, 2.7), reply_message::kind::stop);
    EXPECT_TRUE(f.s.over());
    f.every_task_once();
    EXPECT_EQ(f.delivered_by[0], 1);
    EXPECT_EQ(f.delivered_by[5], 2);
    EXPECT_EQ(f.s.decisions().completed_tasks(), 30);
    EXPECT_EQ(f.s.tasks_of(0), 0);                // its dropped chunk counts nowhere
    EXPECT_TRUE(f.s.chunks_of(0).empty());
    for (const auto& r : f.s.records()) EXPECT_NE(r.rank, 0);
}

TEST(FarmerStragglers, TheSlowWorkersResultsFirstCancelThePieces) {
    scripted f(2.0);
    start(f);
    f.last.clear();
    EXPECT_EQ(f.ask(0, {0, 10}, 2.2), reply_message::kind::stop);
    EXPECT_EQ(f.last[1], reply_message::kind::cancel);
    EXPECT_EQ(f.last[2], reply_message::kind::cancel);
    // Worker 1 read the cancel and dropped its piece; worker 2's results had left already.
    request_message dropped;
    dropped.what = request_message::kind::dropped;
    dropped.done = {0, 5};
    f.on(1, dropped, 2.3);
    EXPECT_EQ(f.ask(1, {}, 2.3), reply_message::kind::stop);
    EXPECT_EQ(f.ask(2, {5, 5}, 2.4), reply_message::kind::stop);
    EXPECT_TRUE(f.s.over());
    f.every_task_once();
    EXPECT_EQ(f.delivered_by[0], 0);
}

TEST(FarmerStragglers, APieceAndTheSlowWorkerShareTheChunkTaskByTask) {
    scripted f(2.0);
    start(f);
    EXPECT_EQ(f.ask(1, {0, 5}, 2.5), reply_message::kind::stop);
    f.last.clear();
    EXPECT_EQ(f.ask(0, {0, 10}, 2.6), reply_message::kind::stop);  // only [5, 10) is delivered from it
    EXPECT_EQ(f.last[2], reply_message::kind::cancel);
    EXPECT_EQ(f.delivered_by[5], 0);
    EXPECT_EQ(f.ask(2, {5, 5}, 2.7), reply_message::kind::stop);     // discarded
    EXPECT_TRUE(f.s.over());
    f.every_task_once();
}

TEST(FarmerStragglers, AFactorNotAboveOneIsRefused) {
    for (double factor : {0.5, 1.0, -2.0}) {
        try {
            scripted f(factor);
            ADD_FAILURE() << "factor " << factor << " accepted";
        } catch (const pfarm::invalid_argument& e) {
            EXPECT_EQ(e.argument(), "stragglers");
        }
    }
}

}  // namespace
