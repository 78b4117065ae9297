// A lost master (docs/reliability.md "A lost worker", "In the hierarchical farm"): the supermaster's farmer session,
// whose workers are the masters (depth master_depth), presumes a silent master lost by the flat farm's rule and hands
// its chunks to the other master; a master that lives sends keep-alives (a `results` message with no results) while
// its chunks are out in its group, and the supermaster then does not presume it lost (farmer::heard); the master
// session sends them at on_timer() once it has been silent up for half the slack.
#include "pfarm/farmer_session.hpp"
#include "pfarm/master_session.hpp"
#include "pfarm/registry.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <map>

namespace {

using pfarm::chunk;
using pfarm::farm_outcome;
using pfarm::farmer_action;
using pfarm::reply_message;
using pfarm::request_message;
using pfarm::worker_loss_rule;

worker_loss_rule go_on(double slack) { return {worker_loss_rule::kind::go_on, 4.0, slack}; }

/// The supermaster's session over two masters, 200 tasks, fss, as hierarchy_plan::top_session() makes it, with the
/// loss rule; the masters' messages scripted, 0.01 s per task.
struct supermaster {
    supermaster()
        : s(tasks, 2, pfarm::make_technique("fss", {}, 2),
            {.prefetch = true, .depth = pfarm::master_depth, .worker_loss = go_on(0.5)}) {}

    reply_message::kind send(int m, request_message::kind what, chunk done, double now) {
        request_message r;
        r.what = what;
        r.done = done;
        r.seconds = 0.01 * static_cast<double>(done.count);
        r.started = now - r.seconds;
        r.finished = now;
        last.erase(m);
        take(s.on_message(m, r, now));
        const auto it = last.find(m);
        return it == last.end() ? reply_message::kind{} : it->second;
    }
    void take(const std::vector<farmer_action>& actions) {
        for (const auto& a : actions) {
            if (a.what == farmer_action::kind::deliver) {
                for (auto t = a.results.first; t < a.results.first + a.results.count; ++t) ++delivered[t];
            } else if (a.what == farmer_action::kind::send) {
                last[a.worker] = a.reply.what;
                if (a.reply.what == reply_message::kind::assign) work[a.worker] = a.reply.work;
            }
        }
    }
    /// Master m computes what it was given last and asks, until it is stopped or told to wait.
    void drain(int m, double& now) {
        for (int i = 0; i < 1000 && last[m] == reply_message::kind::assign; ++i) {
            now += 0.01 * static_cast<double>(work[m].count);
            send(m, request_message::kind::ask, work[m], now);
        }
    }
    void every_task_once() const {
        for (pfarm::task_count t = 0; t < tasks; ++t) {
            const auto it = delivered.find(t);
            EXPECT_TRUE(it != delivered.end() && it->second == 1) << "task " << t;
        }
    }

    static constexpr pfarm::task_count tasks = 200;
    pfarm::farmer_session s;
    std::map<pfarm::task_count, int> delivered;
    std::map<int, reply_message::kind> last;
    std::map<int, chunk> work;
};

TEST(LostMasters, ASilentMasterIsPresumedLostAndItsChunkGoesToTheOtherMaster) {
    supermaster f;
    ASSERT_EQ(f.send(0, request_message::kind::ask, {}, 0.0), reply_message::kind::assign);
    ASSERT_EQ(f.send(1, request_message::kind::ask, {}, 0.0), reply_message::kind::assign);
    const chunk held = f.work[1];  // master 1 dies holding it
    double now = 0.0;
    f.drain(0, now);  // master 0 goes on until it waits for master 1's chunk
    EXPECT_NE(f.last[0], reply_message::kind::stop);
    // Master 1's deadline: handed out at 0, its tasks at master 0's pace (0.01 s) x 4, + 0.5 s.
    const double due = 4.0 * 0.01 * static_cast<double>(held.count) + 0.5;
    f.take(f.s.on_timer(due - 0.01));
    EXPECT_TRUE(f.s.lost().empty());
    f.take(f.s.on_timer(std::max(now, due) + 0.2));
    ASSERT_EQ(f.s.lost(), std::vector<int>{1});
    EXPECT_EQ(f.s.decisions().returned_tasks(), held.count);
    now = std::max(now, due) + 0.2;
    f.drain(0, now);
    EXPECT_TRUE(f.s.over());
    EXPECT_EQ(f.s.outcome().what, farm_outcome::kind::ok);
    f.every_task_once();
}

TEST(LostMasters, AMasterThatSendsKeepAlivesIsNotPresumedLost) {
    supermaster f;
    ASSERT_EQ(f.send(0, request_message::kind::ask, {}, 0.0), reply_message::kind::assign);
    ASSERT_EQ(f.send(1, request_message::kind::ask, {}, 0.0), reply_message::kind::assign);
    const chunk held = f.work[1];
    double now = 0.0;
    f.drain(0, now);
    // Master 1's group takes 10 s over its chunk (a worker of its own lost there first): it says it lives every 0.25 s.
    for (double t = 0.25; t < 10.0; t += 0.25) {
        EXPECT_EQ(f.send(1, request_message::kind::results, {}, t), reply_message::kind{});
        f.take(f.s.on_timer(t + 0.1));
        ASSERT_TRUE(f.s.lost().empty()) << "at " << t;
    }
    // Silent from then on, it is presumed lost at its deadline from its last keep-alive.
    f.take(f.s.on_timer(9.75 + 4.0 * 0.01 * static_cast<double>(held.count) + 0.5 + 0.3));
    ASSERT_EQ(f.s.lost(), std::vector<int>{1});
    now = 11.0;
    f.drain(0, now);
    EXPECT_TRUE(f.s.over());
    f.every_task_once();
}

TEST(LostMasters, AKeepAliveEndsNothingAndResultsStillCount) {
    supermaster f;
    ASSERT_EQ(f.send(0, request_message::kind::ask, {}, 0.0), reply_message::kind::assign);
    ASSERT_EQ(f.send(1, request_message::kind::ask, {}, 0.0), reply_message::kind::assign);
    double now = 0.0;
    f.drain(0, now);
    EXPECT_EQ(f.send(1, request_message::kind::results, {}, 2.0), reply_message::kind{});
    now = 2.5;
    EXPECT_NE(f.send(1, request_message::kind::ask, f.work[1], now), reply_message::kind{});  // answered
    f.drain(1, now);
    f.drain(0, now);
    EXPECT_TRUE(f.s.lost().empty());
    EXPECT_TRUE(f.s.over());
    f.every_task_once();
}

/// A master of two workers with the loss rule (slack 1 s), its first chunk in its group.
struct master {
    explicit master(bool losing) : m(2, pfarm::make_technique("fss", {}, 2), options(losing)) {
        take(m.start(0.0));
        reply_message r;
        r.what = reply_message::kind::assign;
        r.work = {0, 100};
        take(m.on_reply(r, 0.0));
        request_message ask;
        take(m.on_message(0, ask, 0.0));
        take(m.on_message(1, ask, 0.0));
    }
    static pfarm::master_session_options options(bool losing) {
        pfarm::master_session_options o;
        o.expected = 100;
        if (losing) o.group.worker_loss = go_on(1.0);
        return o;
    }
    void take(const std::vector<pfarm::master_action>& actions) {
        for (const auto& a : actions)
            if (a.what == pfarm::master_action::kind::up) up.push_back(a.message);
    }
    pfarm::master_session m;
    std::vector<request_message> up;
};

TEST(LostMasters, AMasterSendsAKeepAliveWhenSilentUpForHalfTheSlack) {
    master g(true);
    ASSERT_FALSE(g.up.empty());
    const std::size_t before = g.up.size();
    EXPECT_LE(g.m.deadline(), 0.5);  // its last message up went at 0
    g.take(g.m.on_timer(0.5));
    ASSERT_EQ(g.up.size(), before + 1);
    EXPECT_EQ(g.up.back().what, request_message::kind::results);
    EXPECT_EQ(g.up.back().done.count, 0);
    EXPECT_GT(g.m.deadline(), 0.5);  // the next one half the slack later
    EXPECT_LE(g.m.deadline(), 1.0);
    g.take(g.m.on_timer(0.7));
    EXPECT_EQ(g.up.size(), before + 1);  // not due yet
}

TEST(LostMasters, WithoutTheLossRuleAMasterSendsNoKeepAlive) {
    master g(false);
    EXPECT_EQ(g.m.deadline(), std::numeric_limits<double>::infinity());
    const std::size_t before = g.up.size();
    g.take(g.m.on_timer(100.0));
    EXPECT_EQ(g.up.size(), before);
}

}  // namespace
