// Task errors without stopping the farm (farmer.hpp "Retry", farmer_session_options::task_errors, worker_session
// on_task_error) on a scripted farm: three workers, 30 tasks split statically ([0,10), [10,20), [20,30)); a worker
// reports a failed task while it computes, then sends its chunk's results.
#include "pfarm/error.hpp"
#include "pfarm/farmer_session.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/worker_session.hpp"

#include <gtest/gtest.h>

#include <map>

namespace {

using pfarm::chunk;
using pfarm::farmer_action;
using pfarm::reply_message;
using pfarm::request_message;
using pfarm::task_error_rule;

struct scripted {
    scripted(task_error_rule rule, int workers = 3)
        : s(30, workers, pfarm::make_technique("static", {}, workers), {.task_errors = rule}) {}

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
    void fail(int w, pfarm::task_count task, const std::string& text, double now) {
        request_message m;
        m.what = request_message::kind::task_error;
        m.failed_task = task;
        m.text = text;
        EXPECT_EQ(on(w, m, now), reply_message::kind{});  // nothing answers a report: the worker goes on
    }
    void take(const std::vector<farmer_action>& actions) {
        for (const auto& a : actions) {
            if (a.what == farmer_action::kind::deliver) {
                for (auto t = a.results.first; t < a.results.first + a.results.count; ++t) ++delivered[t];
            } else if (a.what == farmer_action::kind::send) {
                last[a.worker] = a.reply.what;
                work[a.worker] = a.reply.work;
            }
        }
    }
    void every_task_once() const {
        for (pfarm::task_count t = 0; t < 30; ++t) {
            const auto it = delivered.find(t);
            EXPECT_TRUE(it != delivered.end() && it->second == 1) << "task " << t;
        }
    }

    pfarm::farmer_session s;
    std::map<pfarm::task_count, int> delivered;
    std::map<int, reply_message::kind> last;
    std::map<int, chunk> work;
};

task_error_rule retry(int attempts) { return {task_error_rule::kind::retry, attempts}; }

void start(scripted& f, int workers = 3) {
    for (int w = 0; w < workers; ++w) ASSERT_EQ(f.ask(w, {}, 0.0), reply_message::kind::assign);
}

TEST(TaskErrors, RetryRunsAFailedTaskAgainOnAnotherWorker) {
    scripted f(retry(3));
    start(f);
    f.fail(0, 3, "boom", 0.4);
    // Its chunk's results come without task 3's, and it waits: task 3 is for another worker, not for it.
    EXPECT_EQ(f.ask(0, {0, 10}, 1.0), reply_message::kind{});
    EXPECT_EQ(f.delivered.count(3), 0u);
    EXPECT_EQ(f.s.decisions().completed_tasks(), 9);
    EXPECT_EQ(f.s.decisions().failures_of(3), 1);
    ASSERT_EQ(f.ask(1, {10, 10}, 1.1), reply_message::kind::assign);  // worker 1 takes task 3, alone
    EXPECT_EQ(f.work[1], (chunk{3, 1}));
    EXPECT_EQ(f.s.retried_tasks(), 1);
    EXPECT_EQ(f.ask(2, {20, 10}, 1.2), reply_message::kind{});  // waits: task 3 may fail again
    f.ask(1, {3, 1}, 1.3);  // task 3 done: everybody stops
    EXPECT_EQ(f.last[0], reply_message::kind::stop);
    EXPECT_EQ(f.last[1], reply_message::kind::stop);
    EXPECT_EQ(f.last[2], reply_message::kind::stop);
    EXPECT_TRUE(f.s.over());
    EXPECT_EQ(f.s.outcome().what, pfarm::farm_outcome::kind::ok);
    EXPECT_TRUE(f.s.failed().empty());
    EXPECT_EQ(f.s.task_errors(), 1);
    f.every_task_once();
}

TEST(TaskErrors, RetryStopsTheFarmAtTheLastAttemptNamingTheTask) {
    scripted f(retry(2));
    start(f);
    f.fail(0, 3, "boom", 0.4);
    f.ask(0, {0, 10}, 1.0);
    ASSERT_EQ(f.ask(1, {10, 10}, 1.1), reply_message::kind::assign);
    ASSERT_EQ(f.work[1], (chunk{3, 1}));
    f.fail(1, 3, "boom again", 1.2);  // its second attempt of two
    EXPECT_TRUE(f.s.aborting());
    EXPECT_EQ(f.s.outcome().what, pfarm::farm_outcome::kind::task_failed);
    EXPECT_EQ(f.s.outcome().task, 3);
    EXPECT_EQ(f.s.outcome().worker, 1);
    EXPECT_EQ(f.s.outcome().text, "boom again");  // its last error
    EXPECT_EQ(f.last[0], reply_message::kind::abort);  // worker 0 was waiting
    EXPECT_EQ(f.ask(1, {3, 1}, 1.3), reply_message::kind::abort);
    EXPECT_EQ(f.ask(2, {20, 10}, 1.4), reply_message::kind::abort);
    EXPECT_TRUE(f.s.over());
}

TEST(TaskErrors, RetryCountsEveryAttemptAcrossWorkers) {
    scripted f(retry(4));
    start(f);
    f.fail(0, 5, "1", 0.1);
    f.ask(0, {0, 10}, 1.0);
    ASSERT_EQ(f.ask(1, {10, 10}, 1.0), reply_message::kind::assign);  // attempt 2 on worker 1
    f.fail(1, 5, "2", 1.1);
    f.ask(1, {5, 1}, 1.2);  // worker 1 failed it last: worker 0, waiting, takes it (attempt 3)
    EXPECT_EQ(f.last[0], reply_message::kind::assign);
    EXPECT_EQ(f.work[0], (chunk{5, 1}));
    EXPECT_EQ(f.s.decisions().failures_of(5), 2);
    f.fail(0, 5, "3", 1.3);
    EXPECT_FALSE(f.s.aborting());
    f.ask(0, {5, 1}, 1.4);  // worker 1, waiting, takes attempt 4
    EXPECT_EQ(f.last[1], reply_message::kind::assign);
    EXPECT_EQ(f.work[1], (chunk{5, 1}));
    f.ask(1, {5, 1}, 1.5);
    EXPECT_FALSE(f.s.over());  // worker 2 computes still
    f.ask(2, {20, 10}, 1.6);
    EXPECT_TRUE(f.s.over());
    EXPECT_EQ(f.s.outcome().what, pfarm::farm_outcome::kind::ok);
    EXPECT_EQ(f.s.decisions().failures_of(5), 3);
    EXPECT_EQ(f.s.retried_tasks(), 3);
    f.every_task_once();
}

TEST(TaskErrors, RetryOnTheSameWorkerWhenItIsTheOnlyOne) {
    scripted f(retry(3), 1);
    ASSERT_EQ(f.ask(0, {}, 0.0), reply_message::kind::assign);
    ASSERT_EQ(f.work[0], (chunk{0, 30}));
    f.fail(0, 29, "x", 1.0);
    ASSERT_EQ(f.ask(0, {0, 30}, 2.0), reply_message::kind::assign);
    EXPECT_EQ(f.work[0], (chunk{29, 1}));
    EXPECT_EQ(f.ask(0, {29, 1}, 2.1), reply_message::kind::stop);
    EXPECT_TRUE(f.s.over());
    f.every_task_once();
}

TEST(TaskErrors, SkipListsExactlyTheFailedTasksAndDeliversTheirFill) {
    scripted f({task_error_rule::kind::skip});
    start(f);
    f.fail(0, 3, "three", 0.3);
    f.fail(2, 25, "twenty-five", 0.5);
    f.fail(2, 29, "twenty-nine", 0.9);
    f.ask(0, {0, 10}, 1.0);
    f.ask(1, {10, 10}, 1.0);
    f.ask(2, {20, 10}, 1.0);
    EXPECT_TRUE(f.s.over());
    EXPECT_EQ(f.s.outcome().what, pfarm::farm_outcome::kind::ok);
    f.every_task_once();  // a skipped task's results (the fill) are delivered once, as any
    ASSERT_EQ(f.s.failed().size(), 3u);
    EXPECT_EQ(f.s.failed()[0].task, 3);
    EXPECT_EQ(f.s.failed()[0].worker, 0);
    EXPECT_EQ(f.s.failed()[0].text, "three");
    EXPECT_EQ(f.s.failed()[1].task, 25);
    EXPECT_EQ(f.s.failed()[1].worker, 2);
    EXPECT_EQ(f.s.failed()[2].task, 29);
    EXPECT_EQ(f.s.failed()[2].text, "twenty-nine");
    EXPECT_EQ(f.s.retried_tasks(), 0);
}

TEST(TaskErrors, AReportOfATaskNotHeldIsAnInternalError) {
    scripted f({task_error_rule::kind::skip});
    start(f);
    request_message m;
    m.what = request_message::kind::task_error;
    m.failed_task = 15;  // worker 0 holds [0, 10)
    EXPECT_THROW(f.s.on_message(0, m, 0.1), pfarm::internal_error);
    scripted stop({});
    start(stop);
    m.failed_task = 3;
    EXPECT_THROW(stop.s.on_message(0, m, 0.1), pfarm::internal_error);  // stop: a worker must not go on
}

TEST(TaskErrors, WorkerReportsAFailedTaskAndGoesOn) {
    pfarm::worker_session w;
    w.start();
    reply_message r;
    r.what = reply_message::kind::assign;
    r.work = {0, 4};
    w.on_reply(r);
    const auto sent = w.on_task_error(2, "bad input");
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].message.what, request_message::kind::task_error);
    EXPECT_EQ(sent[0].message.failed_task, 2);
    EXPECT_EQ(sent[0].message.text, "bad input");
    EXPECT_TRUE(w.computing());
    const auto done = w.on_chunk_done(0.4, 0.0, 0.4);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].message.what, request_message::kind::ask);
    EXPECT_EQ(done[0].message.done, (chunk{0, 4}));
}

TEST(TaskErrors, RuleIsReadFromItsName) {
    EXPECT_EQ(pfarm::parse_task_error_rule("stop").what, task_error_rule::kind::stop);
    EXPECT_EQ(pfarm::parse_task_error_rule("skip").what, task_error_rule::kind::skip);
    const task_error_rule r = pfarm::parse_task_error_rule("retry");
    EXPECT_EQ(r.what, task_error_rule::kind::retry);
    EXPECT_EQ(r.attempts, 3);
    EXPECT_EQ(pfarm::parse_task_error_rule("retry=7").attempts, 7);
    EXPECT_EQ(pfarm::to_string(pfarm::parse_task_error_rule("retry=7")), "retry=7");
    for (const char* bad : {"", "Retry", "retry=", "retry=1", "retry=0", "retry=-2", "retry=1001", "retry=3x", "abort"}) {
        try {
            pfarm::parse_task_error_rule(bad, "--on-task-error");
            ADD_FAILURE() << bad;
        } catch (const pfarm::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("--on-task-error"), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(pfarm::check_task_error_rule({task_error_rule::kind::retry, 1}), pfarm::invalid_argument);
    EXPECT_THROW(pfarm::farmer_session(10, 2, pfarm::make_technique("ss", {}, 2),
                                       {.task_errors = {task_error_rule::kind::retry, 1}}),
                 pfarm::invalid_argument);
}

}  // namespace
