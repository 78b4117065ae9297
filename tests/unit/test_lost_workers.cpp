// Lost workers (farmer.hpp "Lost workers", farmer_session_options::worker_loss) on a scripted farm: three workers,
// 30 tasks; a worker that goes silent holding a chunk is presumed lost at on_timer() past its deadline (4 x its
// chunk's expected time at the pace measured + the slack), and its tasks go to the others, or the farm stops.
#include "pfarm/error.hpp"
#include "pfarm/calibration.hpp"
#include "pfarm/farmer_session.hpp"
#include "pfarm/registry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>

namespace {

using pfarm::chunk;
using pfarm::farm_outcome;
using pfarm::farmer_action;
using pfarm::reply_message;
using pfarm::request_message;
using pfarm::worker_loss_rule;

worker_loss_rule go_on(double slack = 0.5) { return {worker_loss_rule::kind::go_on, 4.0, slack}; }
worker_loss_rule stop(double slack = 0.5) { return {worker_loss_rule::kind::stop, 4.0, slack}; }

struct scripted {
    explicit scripted(worker_loss_rule rule, const std::string& technique = "static", bool prefetch = false,
                      bool reclaim = false, int workers = 3, pfarm::task_count tasks = 30)
        : tasks(tasks),
          s(tasks, workers, pfarm::make_technique(technique, {}, workers),
            {.prefetch = prefetch, .reclaim = reclaim, .keep_records = true, .clock = {}, .worker_loss = rule}) {}

    /// Worker w's message at `now`; returns its reply (kind 0: none).
    reply_message::kind on(int w, const request_message& m, double now) {
        last.erase(w);
        take(s.on_message(w, m, now));
        const auto it = last.find(w);
        return it == last.end() ? reply_message::kind{} : it->second;
    }
    reply_message::kind ask(int w, chunk done, double now, request_message::kind what = request_message::kind::ask) {
        request_message m;
        m.what = what;
        m.done = done;
        m.seconds = 0.1 * static_cast<double>(done.count);  // 0.1 s per task
        m.started = now - m.seconds;
        m.finished = now;
        if (readings) {  // distinct per worker, so that a fit over any two of them is determined
            m.has_sample = true;
            m.sample.availability = 0.25 + 0.25 * w;
            m.sample.benchmark = 100.0 * (1 + w);
            m.sample.latency = 1e-4 * (1 + w * w);
            m.sample.run_queue = 1.0;
        }
        return on(w, m, now);
    }
    void timer(double now) { take(s.on_timer(now)); }
    void take(const std::vector<farmer_action>& actions) {
        for (const auto& a : actions) {
            if (a.what == farmer_action::kind::deliver) {
                for (auto t = a.results.first; t < a.results.first + a.results.count; ++t) ++delivered[t];
            } else if (a.what == farmer_action::kind::send) {
                last[a.worker] = a.reply.what;
                if (a.reply.what == reply_message::kind::assign) work[a.worker] = a.reply.work;
                if (a.reply.what == reply_message::kind::reclaim) reclaims[a.worker] = a.reply;
            }
        }
    }
    void every_task_once() const {
        for (pfarm::task_count t = 0; t < tasks; ++t) {
            const auto it = delivered.find(t);
            EXPECT_TRUE(it != delivered.end() && it->second == 1) << "task " << t;
        }
    }
    /// Worker w computes what it was given last and asks, until it is stopped; returns when it was.
    void drain(int w, double& now) {
        for (int i = 0; i < 1000 && last[w] == reply_message::kind::assign; ++i) {
            now += 0.1 * static_cast<double>(work[w].count);
            ask(w, work[w], now);
        }
    }

    /// Workers 0 and 1 (the living ones) compute what they are given until stopped, the clock ticking a second
    /// between rounds (the timer presumes the others lost), from `now` until the farm is over (200 rounds at most).
    void run_out(double now) {
        for (int i = 0; i < 200 && !s.over(); ++i) {
            drain(0, now);
            drain(1, now);
            if (!s.over()) timer(now += 1.0);
        }
    }

    pfarm::task_count tasks;
    pfarm::farmer_session s;
    bool readings = false;  ///< requests carry monitor readings (a statistical calibration needs them)
    std::map<pfarm::task_count, int> delivered;
    std::map<int, reply_message::kind> last;
    std::map<int, chunk> work;
    std::map<int, reply_message> reclaims;
};

void start(scripted& f, int workers = 3) {
    for (int w = 0; w < workers; ++w) ASSERT_EQ(f.ask(w, {}, 0.0), reply_message::kind::assign) << "worker " << w;
}

TEST(LostWorkers, ASilentWorkersChunkGoesToTheOthersAndTheFarmEndsWithEveryResult) {
    scripted f(go_on());
    start(f);
    EXPECT_EQ(f.work[2], (chunk{20, 10}));
    EXPECT_EQ(f.ask(0, {0, 10}, 1.0), reply_message::kind{});  // parked: worker 2's chunk may yet be lost
    EXPECT_EQ(f.ask(1, {10, 10}, 1.0), reply_message::kind{});
    // Its deadline: handed out at 0, 10 tasks at 0.1 s, x 4, + 0.5 s = 4.5 s.
    EXPECT_LE(f.s.deadline(), 4.5);
    f.timer(4.4);
    EXPECT_TRUE(f.s.lost().empty());
    f.timer(4.6);
    ASSERT_EQ(f.s.lost(), std::vector<int>{2});
    EXPECT_EQ(f.s.decisions().returned_tasks(), 10);
    ASSERT_EQ(f.last[0], reply_message::kind::assign);  // the parked take its tasks, in pieces
    ASSERT_EQ(f.last[1], reply_message::kind::assign);
    EXPECT_EQ(f.work[0], (chunk{20, 5}));  // each a share of what is left of it among the 2 workers left
    EXPECT_EQ(f.work[1], (chunk{25, 3}));
    double now = 4.6;
    f.drain(0, now);
    f.drain(1, now);
    EXPECT_EQ(f.last[0], reply_message::kind::stop);
    EXPECT_EQ(f.last[1], reply_message::kind::stop);
    EXPECT_TRUE(f.s.over());
    EXPECT_EQ(f.s.outcome().what, farm_outcome::kind::ok);
    f.every_task_once();
    // The records and chunk sizes hold what was computed: the lost worker's chunk is in neither.
    pfarm::task_count recorded = 0;
    for (const auto& r : f.s.records()) recorded += r.count;
    EXPECT_EQ(recorded, 30);
    EXPECT_EQ(f.s.chunks_of(2).size(), 0u);
}

TEST(LostWorkers, StopEndsTheFarmNamingTheLostWorker) {
    scripted f(stop());
    start(f);
    EXPECT_EQ(f.ask(0, {0, 10}, 1.0), reply_message::kind::stop);  // without loss tolerance the idle stop at once
    f.timer(4.6);  // workers 1 and 2 are silent past their deadline (4.5)
    ASSERT_EQ(f.s.lost(), (std::vector<int>{1, 2}));
    EXPECT_EQ(f.s.outcome().what, farm_outcome::kind::worker_lost);
    EXPECT_EQ(f.s.outcome().worker, 1);  // the first
    EXPECT_NE(f.s.outcome().text.find("presumed lost"), std::string::npos);
    EXPECT_TRUE(f.s.over());

    scripted g(stop());
    start(g);
    g.ask(0, {0, 10}, 1.0);
    g.timer(4.6 - 3.0);  // nobody past a deadline yet
    g.ask(1, {10, 10}, 2.0);
    g.timer(4.6);
    ASSERT_EQ(g.s.lost(), std::vector<int>{2});
    EXPECT_EQ(g.s.outcome().worker, 2);
    EXPECT_TRUE(g.s.over());
}

TEST(LostWorkers, AWorkerWithinItsDeadlineIsNotLostAndOffNeverLoses) {
    scripted f(go_on(2.0));
    start(f);
    f.ask(0, {0, 10}, 1.0);
    f.timer(6.0);  // 4 + 2 = 6: not past it
    EXPECT_TRUE(f.s.lost().empty());
    f.ask(2, {20, 10}, 6.0);
    f.ask(1, {10, 10}, 6.1);
    EXPECT_TRUE(f.s.over());
    f.every_task_once();

    scripted off({});
    EXPECT_EQ(off.s.deadline(), std::numeric_limits<double>::infinity());
}

TEST(LostWorkers, ALostWorkerThatComesBackIsStoppedAndItsResultsAreNotCounted) {
    scripted f(go_on());
    start(f);
    f.ask(0, {0, 10}, 1.0);
    f.ask(1, {10, 10}, 1.0);
    f.timer(4.6);
    ASSERT_EQ(f.s.lost(), std::vector<int>{2});
    EXPECT_EQ(f.ask(2, {20, 10}, 4.7), reply_message::kind::stop);  // alive after all: its results went elsewhere
    EXPECT_EQ(f.delivered.count(20), 0u);
    double now = 4.7;
    f.drain(0, now);
    f.drain(1, now);
    EXPECT_TRUE(f.s.over());
    f.every_task_once();
}

TEST(LostWorkers, WithPrefetchBothChunksItHeldGoBack) {
    scripted f(go_on(), "ss", true, false, 2, 10);
    ASSERT_EQ(f.ask(0, {}, 0.0), reply_message::kind::assign);
    ASSERT_EQ(f.ask(1, {}, 0.0), reply_message::kind::assign);
    EXPECT_EQ(f.ask(1, {}, 0.05), reply_message::kind::assign);  // asks ahead: it holds two chunks of one task
    double now = 0.0;
    for (int i = 0; i < 3; ++i) {  // worker 0 alone goes on
        now += 0.1;
        f.ask(0, f.work[0], now);
    }
    f.timer(1.0);  // worker 1: 0 + 4 x 1 x 0.1 + 0.5; worker 0 asked at 0.3: its deadline is 1.2
    ASSERT_EQ(f.s.lost(), std::vector<int>{1});
    EXPECT_EQ(f.s.decisions().returned_tasks(), 2);
    f.drain(0, now);
    EXPECT_TRUE(f.s.over());
    f.every_task_once();
}

TEST(LostWorkers, LostDuringCalibrationTheBarrierPassesWithoutIt) {
    scripted f(go_on(), "multi");
    start(f);  // one calibration task each
    EXPECT_EQ(f.ask(0, f.work[0], 0.1), reply_message::kind{});  // parked at the barrier
    EXPECT_EQ(f.ask(1, f.work[1], 0.1), reply_message::kind{});
    EXPECT_TRUE(f.s.decisions().calibrating());
    f.timer(1.0);  // 0 + 4 x 1 x 0.1 + 0.5 = 0.9
    ASSERT_EQ(f.s.lost(), std::vector<int>{2});
    EXPECT_FALSE(f.s.decisions().calibrating());
    EXPECT_EQ(f.last[0], reply_message::kind::assign);
    f.run_out(1.0);
    EXPECT_TRUE(f.s.over());
    f.every_task_once();
}

TEST(LostWorkers, AVictimLostWhileAskedAnswersItsThief) {
    scripted f(go_on(), "static", false, true);
    start(f);
    f.ask(0, {0, 10}, 1.0);  // idle with everything handed out: reclaim from 1 or 2
    ASSERT_FALSE(f.reclaims.empty());
    const int victim = f.reclaims.begin()->first;
    const int other = 3 - victim;
    f.ask(other, f.work[other], 1.2);
    f.timer(4.6);  // the victim never answers
    ASSERT_EQ(f.s.lost(), std::vector<int>{victim});
    double now = 4.6;
    for (int i = 0; i < 100 && !f.s.over(); ++i) {
        f.drain(0, now);
        f.drain(other, now);
        if (!f.s.over()) f.timer(now += 0.5);
    }
    EXPECT_TRUE(f.s.over());
    f.every_task_once();
}

TEST(LostWorkers, AThiefLeftAloneTakesItsLostVictimsTasks) {
    // Two workers (the session fuzzer's finding): the thief is the only one left to compute what its victim held, so
    // it is answered with those tasks, not a stop that would end the farm worker_lost with a worker alive.
    scripted f(go_on(), "static", false, true, 2, 20);
    start(f, 2);
    EXPECT_EQ(f.ask(0, {0, 10}, 1.0), reply_message::kind{});  // a thief: worker 1 is asked for a reclaim
    ASSERT_EQ(f.reclaims.count(1), 1u);
    f.timer(4.6);  // worker 1 never answers: lost past 4.5
    ASSERT_EQ(f.s.lost(), std::vector<int>{1});
    ASSERT_EQ(f.last[0], reply_message::kind::assign);
    double now = 4.6;
    f.drain(0, now);
    EXPECT_TRUE(f.s.over());
    EXPECT_EQ(f.s.outcome().what, farm_outcome::kind::ok);
    f.every_task_once();
}

// Workers past their deadlines at one look are lost together (farmer::lose of a span): each before any thief owed an
// answer is answered, so that no answer names one of them, and a thief among them is answered nothing.
TEST(LostWorkers, WorkersLostTogetherAreAllLostBeforeAnyThiefIsAnswered) {
    for (const bool thief_lost : {false, true}) {
        pfarm::farmer f(30, 3, pfarm::make_technique("static", {}, 3), 1, 1, true);
        f.set_loss_tolerant(true);
        EXPECT_EQ(f.request(0).work, (chunk{0, 10}));
        EXPECT_EQ(f.request(1).work, (chunk{10, 10}));
        EXPECT_EQ(f.request(2).work, (chunk{20, 10}));
        f.complete(0, 1.0);
        const auto asked = f.request(0, 1.0);
        ASSERT_EQ(asked.what, pfarm::decision::kind::reclaim);
        const int victim = asked.victim, other = 3 - asked.victim;
        const std::vector<int> lost = thief_lost ? std::vector<int>{victim, 0} : std::vector<int>{victim, other};
        const auto owed = f.lose(lost, 2.0);
        for (const int w : lost) EXPECT_TRUE(f.lost(w)) << "worker " << w;
        EXPECT_EQ(f.returned_tasks(), thief_lost ? 10 : 20);
        if (thief_lost) {
            EXPECT_TRUE(owed.empty()) << "the thief was lost with its victim: it is answered nothing";
            continue;
        }
        ASSERT_EQ(owed.size(), 1u);
        EXPECT_EQ(owed[0].thief, 0);
        ASSERT_EQ(owed[0].answer.what, pfarm::decision::kind::assign) << "not a reclaim from the other lost worker";
        EXPECT_GE(owed[0].answer.work.first, 10);
    }
}

TEST(LostWorkers, EveryWorkerLostStopsTheFarm) {
    scripted f(go_on(), "static", false, false, 2, 20);
    ASSERT_EQ(f.ask(0, {}, 0.0), reply_message::kind::assign);
    ASSERT_EQ(f.ask(1, {}, 0.0), reply_message::kind::assign);
    f.ask(0, {0, 10}, 1.0);
    EXPECT_EQ(f.last[0], reply_message::kind{});
    f.timer(4.6);  // worker 1 lost: worker 0 takes its tasks
    ASSERT_EQ(f.last[0], reply_message::kind::assign);
    f.timer(100.0);  // and is lost too
    EXPECT_EQ(f.s.outcome().what, farm_outcome::kind::worker_lost);
    EXPECT_TRUE(f.s.over());
}

TEST(LostWorkers, AWorkerDeadInItsFirstChunkIsLostBeforeAnyTaskIsTimed) {
    // Two workers, one task: worker 1 waits while worker 0's chunk is in flight, and nobody will ever time a task if
    // worker 0 is dead. Its deadline takes a task to last the slack: 0 + 4 x 1 x 0.5 + 0.5 = 2.5.
    scripted f(go_on(), "ss", false, false, 2, 1);
    ASSERT_EQ(f.ask(0, {}, 0.0), reply_message::kind::assign);
    EXPECT_EQ(f.ask(1, {}, 0.0), reply_message::kind{});  // parked: worker 0's chunk may come back
    EXPECT_DOUBLE_EQ(f.s.decisions().silent_past(0, go_on()), 2.5);
    f.timer(2.4);
    EXPECT_TRUE(f.s.lost().empty());
    f.timer(2.6);
    ASSERT_EQ(f.s.lost(), std::vector<int>{0});
    ASSERT_EQ(f.last[1], reply_message::kind::assign);
    EXPECT_EQ(f.work[1], (chunk{0, 1}));
    double now = 2.6;
    f.drain(1, now);
    EXPECT_TRUE(f.s.over());
    EXPECT_EQ(f.s.outcome().what, farm_outcome::kind::ok);
    f.every_task_once();

    // A calibration learned by an earlier farm of the loop gives each worker its pace before any task is timed here.
    const pfarm::calibration_result learned = pfarm::calibrate_times_only(std::vector<double>{0.2, 0.4}, 10);
    pfarm::farmer g(10, 2, pfarm::make_technique("multi", {}, 2), 1, 1, false, false, &learned);
    g.set_loss_tolerant(true);
    const pfarm::decision d = g.request(1, 1.0);
    ASSERT_EQ(d.what, pfarm::decision::kind::assign);
    EXPECT_DOUBLE_EQ(g.silent_past(1, go_on()), 1.0 + 4.0 * static_cast<double>(d.work.count) * 0.4 + 0.5);
    // A time of 0 measured (a timer too coarse for the tasks) is a pace: the slack alone.
    ASSERT_EQ(g.request(0, 1.0).what, pfarm::decision::kind::assign);
    g.complete(0, 0.0, nullptr, 1.5);
    EXPECT_DOUBLE_EQ(g.silent_past(1, go_on()), 1.5);
}

TEST(LostWorkers, AVictimDeadAfterItsLastResultsIsLostWhileItsAnswerToAReclaimIsDue) {
    // Worker 1 is asked for a reclaim, crosses it with its last results and dies before reading it: it holds nothing,
    // and its thief waits for its answer. The answer's deadline: the slack from its last results (1.1 + 0.5).
    scripted f(go_on(), "static", false, true, 2, 20);
    start(f, 2);
    EXPECT_EQ(f.ask(0, {0, 10}, 1.0), reply_message::kind{});  // a thief
    ASSERT_EQ(f.reclaims.count(1), 1u);
    EXPECT_EQ(f.ask(1, {10, 10}, 1.1), reply_message::kind::stop);  // nothing left for it; its answer is still due
    EXPECT_FALSE(f.s.over());
    EXPECT_DOUBLE_EQ(f.s.decisions().silent_past(1, go_on()), 1.6);
    f.timer(1.7);
    ASSERT_EQ(f.s.lost(), std::vector<int>{1});
    EXPECT_EQ(f.last[0], reply_message::kind::stop);  // answered as if it gave nothing: nothing is left
    EXPECT_TRUE(f.s.over());
    EXPECT_EQ(f.s.outcome().what, farm_outcome::kind::ok);
    f.every_task_once();
}

TEST(LostWorkers, AWorkerToldLaterThatDiesIsLostWhileItsRequestIsDue) {
    // With prefetch, a worker that asks ahead when nothing is left is told `later`: it sends its last results, and owes
    // a request with nothing in hand. Dead before it, it is lost the slack after its last results (0.2 + 0.5).
    scripted f(go_on(), "ss", true, false, 1, 2);
    ASSERT_EQ(f.ask(0, {}, 0.0), reply_message::kind::assign);
    ASSERT_EQ(f.ask(0, {}, 0.01), reply_message::kind::assign);  // asks ahead
    EXPECT_EQ(f.ask(0, {0, 1}, 0.1), reply_message::kind::later);
    EXPECT_EQ(f.ask(0, {1, 1}, 0.2, request_message::kind::results), reply_message::kind{});
    EXPECT_FALSE(f.s.over());
    EXPECT_DOUBLE_EQ(f.s.decisions().silent_past(0, go_on()), 0.7);
    f.timer(0.6);
    EXPECT_TRUE(f.s.lost().empty());
    f.timer(0.8);
    ASSERT_EQ(f.s.lost(), std::vector<int>{0});
    EXPECT_TRUE(f.s.over());
    EXPECT_EQ(f.s.outcome().what, farm_outcome::kind::ok);
    f.every_task_once();
}

TEST(LostWorkers, LostDuringCalibrationItsShareGoesToTheLiving) {
    // Techniques that plan a share per worker: the share of worker 2, lost at its calibration task, is handed out in
    // pieces to the others once they have had theirs, instead of stopping them with it unassigned.
    for (const char* technique : {"an-gss", "n-fss", "hpls-tss", "dealdyn-sm", "multi"}) {
        SCOPED_TRACE(technique);
        scripted f(go_on(), technique);
        start(f);  // one calibration task each
        EXPECT_EQ(f.ask(0, f.work[0], 0.1), reply_message::kind{});  // parked at the barrier
        EXPECT_EQ(f.ask(1, f.work[1], 0.1), reply_message::kind{});
        f.timer(1.0);  // 0 + 4 x 1 x 0.1 + 0.5 = 0.9
        ASSERT_EQ(f.s.lost(), std::vector<int>{2});
        EXPECT_FALSE(f.s.decisions().calibrating());
        f.run_out(1.0);
        EXPECT_TRUE(f.s.over());
        EXPECT_EQ(f.s.outcome().what, farm_outcome::kind::ok);
        f.every_task_once();
    }
}

TEST(LostWorkers, LostDuringCalibrationItLeavesTheFit) {
    // dealdyn-lr fits the calibration times to the workers' availability: worker 2, lost at its calibration task, has
    // sent no readings. The fit is over workers 0 and 1; worker 2 is given the slowest time, and its share goes to
    // them.
    scripted f(go_on(), "dealdyn-lr");
    f.readings = true;
    start(f);
    EXPECT_EQ(f.ask(0, f.work[0], 0.1), reply_message::kind{});
    EXPECT_EQ(f.ask(1, f.work[1], 0.1), reply_message::kind{});
    f.timer(1.0);
    ASSERT_EQ(f.s.lost(), std::vector<int>{2});
    const pfarm::calibration_result* c = f.s.decisions().calibration();
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->mode, pfarm::calibration_mode::univariate) << c->note;
    EXPECT_EQ(c->fit.coefficients.size(), 2u);
    ASSERT_EQ(c->fitness.size(), 3u);
    EXPECT_LE(c->fitness[2], std::min(c->fitness[0], c->fitness[1]));
    EXPECT_NE(c->note.find("worker(s) 2 lost during calibration"), std::string::npos) << c->note;
    f.run_out(1.0);
    EXPECT_TRUE(f.s.over());
    EXPECT_EQ(f.s.outcome().what, farm_outcome::kind::ok);
    f.every_task_once();
}

TEST(LostWorkers, AWorkerPastItsShareWaitsWhileAnotherShareIsOut) {
    // static: worker 0 has computed its share before worker 1 asks for its own. Stopped then, it could not take worker
    // 1's share back if worker 1 is lost: it waits, and takes it.
    scripted f(go_on(), "static", false, false, 2, 20);
    ASSERT_EQ(f.ask(0, {}, 0.0), reply_message::kind::assign);
    EXPECT_EQ(f.ask(0, {0, 10}, 1.0), reply_message::kind{});  // parked, not stopped
    ASSERT_EQ(f.ask(1, {}, 1.0), reply_message::kind::assign);
    EXPECT_EQ(f.work[1], (chunk{10, 10}));
    f.timer(5.6);  // 1 + 4 x 10 x 0.1 + 0.5 = 5.5
    ASSERT_EQ(f.s.lost(), std::vector<int>{1});
    ASSERT_EQ(f.last[0], reply_message::kind::assign);
    double now = 5.6;
    f.drain(0, now);
    EXPECT_TRUE(f.s.over());
    EXPECT_EQ(f.s.outcome().what, farm_outcome::kind::ok);
    f.every_task_once();

    // Without a loss it is stopped once the last share is in, and the chunks are static's.
    scripted g(go_on(), "static", false, false, 2, 20);
    g.ask(0, {}, 0.0);
    EXPECT_EQ(g.ask(0, {0, 10}, 1.0), reply_message::kind{});
    g.ask(1, {}, 1.0);
    EXPECT_EQ(g.ask(1, {10, 10}, 2.0), reply_message::kind::stop);
    EXPECT_EQ(g.last[0], reply_message::kind::stop);
    EXPECT_TRUE(g.s.over());
    EXPECT_EQ(g.s.chunks_of(0).size(), 1u);
    EXPECT_EQ(g.s.chunks_of(1).size(), 1u);
    g.every_task_once();
}

TEST(LostWorkers, AThiefWhoseVictimGivesNothingTakesTheTasksThatWentBack) {
    // Worker 2 is a thief waiting for worker 0's answer when worker 3 is lost; worker 0 then gives nothing. The tasks
    // of worker 3 wait to be handed out again: the thief takes a piece of them (a share among the 3 workers left), not
    // another reclaim (of worker 1).
    scripted f(go_on(), "static", false, true, 4, 42);
    start(f, 4);  // [0, 11), [11, 11), [22, 10), [32, 10)
    EXPECT_EQ(f.ask(2, {22, 10}, 0.5), reply_message::kind{});
    ASSERT_EQ(f.reclaims.count(0), 1u);  // the victim with the most to give
    f.reclaims.clear();
    f.timer(4.6);  // worker 3: 4 x 10 x 0.1 + 0.5 = 4.5; workers 0 and 1: 4 x 11 x 0.1 + 0.5 = 4.9
    ASSERT_EQ(f.s.lost(), std::vector<int>{3});
    request_message none;
    none.what = request_message::kind::released;
    none.done = {11, 0};
    f.on(0, none, 4.7);
    EXPECT_EQ(f.reclaims.count(1), 0u);
    ASSERT_EQ(f.last[2], reply_message::kind::assign);
    EXPECT_EQ(f.work[2], (chunk{32, 4}));
    double now = 4.7;
    f.ask(0, {0, 11}, now);
    f.ask(1, {11, 11}, now);
    for (int i = 0; i < 100 && !f.s.over(); ++i) {
        for (int w : {0, 1, 2}) f.drain(w, now);
        if (!f.s.over()) f.timer(now += 0.5);
    }
    EXPECT_TRUE(f.s.over());
    EXPECT_EQ(f.s.outcome().what, farm_outcome::kind::ok);
    f.every_task_once();
}

// Pool mode (a hierarchical master's group, farmer.hpp "Pool"): a lost worker's chunk goes back before the pool's
// tasks, in pieces among the living, and the farm is done once the pool is closed with every task completed once.
TEST(LostWorkers, InPoolModeALostWorkersChunkGoesToTheOthersBeforeThePool) {
    pfarm::farmer f(30, 3, pfarm::make_technique("static", {}, 3), 1, 1, false, true);
    f.set_loss_tolerant(true);
    f.add_tasks({100, 30});
    EXPECT_EQ(f.request(0).work, (chunk{100, 10}));
    EXPECT_EQ(f.request(1).work, (chunk{110, 10}));
    EXPECT_EQ(f.request(2).work, (chunk{120, 10}));
    f.complete(0, 1.0);
    f.add_tasks({200, 4});
    EXPECT_EQ(f.lose(2, 2.0).thief, -1);
    EXPECT_TRUE(f.lost(2));
    EXPECT_EQ(f.returned_tasks(), 10);
    auto d = f.request(0, 2.0);
    ASSERT_EQ(d.what, pfarm::decision::kind::assign);
    EXPECT_EQ(d.work, (chunk{120, 5})) << "the lost chunk first, a share of it among the two left";
    f.complete(1, 1.0);
    EXPECT_EQ(f.request(1, 2.0).work, (chunk{125, 3})) << "a share of what is left of it";
    pfarm::task_count next = 128;  // the rest of it, in pieces, then the pool
    for (int w = 0;; w = 1 - w) {
        f.complete(w, 1.0);
        d = f.request(w, 3.0);
        ASSERT_EQ(d.what, pfarm::decision::kind::assign);
        if (next == 130) break;
        EXPECT_EQ(d.work.first, next);
        next += d.work.count;
    }
    EXPECT_EQ(d.work.first, 200) << "then the pool";
    f.complete(1, 1.0);  // the last piece
    f.complete(0, 1.0);
    while ((d = f.request(0, 4.0)).what == pfarm::decision::kind::assign) f.complete(0, 1.0);
    EXPECT_EQ(d.what, pfarm::decision::kind::wait) << "the pool is open";
    EXPECT_EQ(f.completed_tasks(), 34);
    EXPECT_FALSE(f.done());
    f.close_pool();
    EXPECT_TRUE(f.done());
    EXPECT_EQ(f.request(0, 5.0).what, pfarm::decision::kind::stop);
    EXPECT_EQ(f.request(2, 5.0).what, pfarm::decision::kind::stop) << "a lost worker is stopped";
}

// Pool mode calibrates one task per worker as its tasks come: a lost worker's calibration task is the next worker's
// calibration task, and one left without a task once the pool is closed waits (tasks may still come back) instead of
// stopping, the barrier no longer waiting for it.
TEST(LostWorkers, InPoolModeACalibrationTaskGoesBackAndAWorkerWithoutOneWaits) {
    {
        pfarm::farmer f(10, 3, pfarm::make_technique("multi", {}, 3), 1, 1, false, true);
        f.set_loss_tolerant(true);
        f.add_tasks({0, 2});
        EXPECT_EQ(f.request(0).work, (chunk{0, 1}));
        EXPECT_EQ(f.request(1).work, (chunk{1, 1}));
        EXPECT_EQ(f.request(2).what, pfarm::decision::kind::wait);
        f.lose(1, 1.0);
        const auto d = f.request(2, 1.0);
        ASSERT_EQ(d.what, pfarm::decision::kind::assign);
        EXPECT_TRUE(d.calibration);
        EXPECT_EQ(d.work, (chunk{1, 1})) << "the lost worker's calibration task";
        f.complete(0, 1.0), f.complete(2, 2.0);
        EXPECT_FALSE(f.calibrating()) << "the barrier waited for the living only";
        f.close_pool();
        EXPECT_TRUE(f.done());
    }
    {
        pfarm::farmer f(10, 3, pfarm::make_technique("multi", {}, 3), 1, 1, false, true);
        f.set_loss_tolerant(true);
        f.add_tasks({0, 2});
        f.request(0), f.request(1);
        f.complete(0, 1.0);
        f.close_pool();
        EXPECT_EQ(f.request(2).what, pfarm::decision::kind::wait) << "worker 1's task may come back";
        EXPECT_TRUE(f.calibrating());
        f.lose(1, 2.0);
        EXPECT_FALSE(f.calibrating());
        const auto d = f.request(2, 2.0);
        ASSERT_EQ(d.what, pfarm::decision::kind::assign);
        EXPECT_EQ(d.work, (chunk{1, 1}));
        f.complete(2, 1.0);
        EXPECT_TRUE(f.done());
        EXPECT_EQ(f.completed_tasks(), 2);
    }
}

TEST(LostWorkers, TheRuleParsesAndRefusesWhatItDoesNotKnow) {
    EXPECT_EQ(pfarm::parse_worker_loss_rule("off").what, worker_loss_rule::kind::off);
    EXPECT_EQ(pfarm::parse_worker_loss_rule("stop").what, worker_loss_rule::kind::stop);
    const worker_loss_rule c = pfarm::parse_worker_loss_rule("continue=2.5");
    EXPECT_EQ(c.what, worker_loss_rule::kind::go_on);
    EXPECT_DOUBLE_EQ(c.slack, 2.5);
    EXPECT_EQ(pfarm::to_string(c), "continue=2.5");
    for (const char* bad : {"", "on", "continue=", "continue=0", "continue=-1", "continue=x", "off=3", "stop=inf"}) {
        try {
            pfarm::parse_worker_loss_rule(bad);
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const pfarm::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("on_worker_loss"), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(pfarm::farmer_session(10, 2, pfarm::make_technique("ss", {}, 2),
                                       {.clock = {}, .worker_loss = {worker_loss_rule::kind::go_on, 1.0, 1.0}}),
                 pfarm::invalid_argument);
}

}  // namespace
