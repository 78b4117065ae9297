// The hierarchical farmer: the farmer's pool mode, the master session (refill before the pool runs dry and
// without waiting for an older chunk's last result, every task once under random event orders, merged up-messages,
// failures), and the simulator's hierarchical runs
// (every technique with 2 and 4 masters, the supermaster's request count against the flat farmer's, the weighted
// H-techniques, options and errors).
#include "test_support.hpp"
#include "pfarm/error.hpp"
#include "pfarm/farmer_session.hpp"
#include "pfarm/master_session.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/simulator.hpp"
#include "pfarm/worker_session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

namespace sim = pfarm::sim;
using pfarm::chunk;
using pfarm::task_count;

using pfarm::testing::runnable_options;

// --- the farmer's pool mode -----------------------------------------------------------------------------------

TEST(FarmerPool, WaitsOnAnEmptyPoolCutsChunksAtRangesAndStopsOnceClosed) {
    pfarm::farmer f(100, 2, pfarm::make_technique("css", runnable_options(), 2), 1, 2, false, true);
    EXPECT_EQ(f.request(0).what, pfarm::decision::kind::wait);  // nothing yet, more to come
    f.add_tasks({40, 10});
    f.add_tasks({10, 5});
    auto d = f.request(0);
    ASSERT_EQ(d.what, pfarm::decision::kind::assign);
    EXPECT_EQ(d.work, (chunk{40, 7}));
    d = f.request(1);
    EXPECT_EQ(d.work, (chunk{47, 3})) << "cut at the end of the first range";
    d = f.request(1);
    EXPECT_EQ(d.work, (chunk{10, 5}));
    EXPECT_EQ(f.request(0).what, pfarm::decision::kind::later) << "one holding a chunk does not keep its results waiting";
    f.complete(0, 1.0);
    EXPECT_EQ(f.request(0).what, pfarm::decision::kind::wait);
    EXPECT_FALSE(f.done());
    f.complete(1, 1.0), f.complete(1, 1.0);
    EXPECT_FALSE(f.done()) << "not done while the pool is open";
    f.close_pool();
    EXPECT_TRUE(f.done());
    EXPECT_EQ(f.request(0).what, pfarm::decision::kind::stop);
}

TEST(FarmerPool, MergesAFollowingRangeAndRestartsASingleRoundTechnique) {
    pfarm::farmer f(8, 2, pfarm::make_technique("static", {}, 2), 1, 1, false, true);
    f.add_tasks({0, 8});
    f.add_tasks({8, 8});  // follows: one range of 16
    EXPECT_EQ(f.pool().size(), 1u);
    EXPECT_EQ(f.request(0).work, (chunk{0, 8})) << "started at the first request, over the 16 in the pool";
    f.complete(0, 1.0);
    const auto d = f.request(0);  // its round is over: a new round over the 8 left
    ASSERT_EQ(d.what, pfarm::decision::kind::assign);
    EXPECT_EQ(d.work, (chunk{8, 4}));
}

TEST(FarmerPool, CalibrationWaitsForTasksAndAWorkerLeftWithoutOneStops) {
    pfarm::farmer f(10, 3, pfarm::make_technique("multi", {}, 3), 1, 1, false, true);
    ASSERT_TRUE(f.calibrating());
    f.add_tasks({0, 2});
    EXPECT_TRUE(f.request(0).calibration);
    EXPECT_TRUE(f.request(1).calibration);
    EXPECT_EQ(f.request(2).what, pfarm::decision::kind::wait);
    f.complete(0, 1.0), f.complete(1, 2.0);
    EXPECT_TRUE(f.calibrating());
    f.close_pool();
    EXPECT_EQ(f.request(2).what, pfarm::decision::kind::stop);
    EXPECT_FALSE(f.calibrating());
    EXPECT_TRUE(f.done());
}

// --- the master session, driven by hand and at random -------------------------------------------------------------

/// A hierarchical farm in process: a supermaster session, masters, worker sessions, with every message in a bag
/// from which a seeded generator picks the next event; chunks are computed in one step (reclaims answered
/// between their first and second task), so that every interleaving the protocol allows can come up. Each chunk a
/// master receives gets an attachment (a transport's buffers: here a count per task of the results stored into it),
/// which deliver actions fill and the up action that carries the chunk's results hands back.
struct random_farm {
    struct buffers {
        chunk work;
        std::vector<int> stored;  ///< per task of `work`: results stored into it
    };
    struct message {
        enum class to { supermaster, master, worker } where;
        int who = 0;    ///< the sender (to supermaster, to master from a worker) or the receiver
        int group = 0;  ///< to master: which master
        bool from_top = false;
        pfarm::request_message request;
        pfarm::reply_message reply;
    };
    task_count tasks;
    std::vector<int> first_of, size_of;
    std::unique_ptr<pfarm::farmer_session> top;
    std::vector<std::unique_ptr<pfarm::master_session>> masters;
    std::vector<pfarm::worker_session> workers;
    std::vector<message> bag;
    std::vector<task_count> computed, delivered_top;
    std::vector<task_count> sent_up;  ///< per task: its results went up from its chunk's attachment
    int deepest = 0;  ///< the most chunks a master held at once (its up session's)
    std::mt19937_64 random;

    /// Lost workers: worker `dead` (-1: none) dies after `dead_after` events: it computes nothing more, and what is
    /// sent to it is lost (what it sent before comes). The masters run the loss rule `loss`; time moves by 1 ms per
    /// event, and when nothing is left to happen the clock jumps past every deadline and the masters' timers run.
    int dead = -1, dead_after = 0;
    random_farm(task_count n, int k, int p, const std::string& technique, bool prefetch, bool reclaim, std::uint64_t seed,
                pfarm::worker_loss_rule loss = {})
        : tasks(n), computed(static_cast<std::size_t>(n), 0), delivered_top(static_cast<std::size_t>(n), 0),
          sent_up(static_cast<std::size_t>(n), 0), random(seed) {
        auto top_options = pfarm::master_options(runnable_options(), groups(k, p));
        top = std::make_unique<pfarm::farmer_session>(
            n, k, pfarm::make_technique(pfarm::default_master_technique(technique), top_options, k),
            pfarm::farmer_session_options{.min_chunk = top_options.min_chunk, .prefetch = true, .depth = pfarm::master_depth});
        for (int m = 0; m < k; ++m) {
            pfarm::master_session_options o;
            o.group.prefetch = prefetch;
            o.group.reclaim = reclaim;
            o.group.worker_loss = loss;
            o.expected = n * size_of[static_cast<std::size_t>(m)] / p + 1;
            o.readings_each = !top->needs().with_every_request.empty();
            masters.push_back(std::make_unique<pfarm::master_session>(
                size_of[static_cast<std::size_t>(m)],
                pfarm::make_technique(technique, runnable_options(), size_of[static_cast<std::size_t>(m)]), o));
        }
        for (int j = 0; j < p; ++j)
            workers.emplace_back(pfarm::worker_session_options{.prefetch = prefetch, .prefetch_lead = 0.5,
                                                               .readings_each = !masters[0]->group().needs().with_every_request.empty()});
    }
    std::vector<int> groups(int k, int p) {
        for (int m = 0, at = 0; m < k; ++m) {
            size_of.push_back(p / k + (m < p % k ? 1 : 0));
            first_of.push_back(at);
            at += size_of.back();
        }
        return size_of;
    }
    int master_of(int j) const {
        int m = 0;
        while (m + 1 < static_cast<int>(first_of.size()) && first_of[static_cast<std::size_t>(m + 1)] <= j) ++m;
        return m;
    }
    void from_worker(int j, pfarm::worker_session::actions actions) {
        for (const auto& a : actions) {
            if (a.what == pfarm::worker_action::kind::compute) continue;  // computed when it is picked (below)
            message m{message::to::master, j, master_of(j), false, a.message, {}};
            if (a.readings) m.request.has_sample = true, m.request.sample.run_queue = 1.0;
            bag.push_back(m);
        }
    }
    void from_master(int m, const std::vector<pfarm::master_action>& actions) {
        for (const auto& a : actions) {
            if (a.what == pfarm::master_action::kind::deliver) {  // into the attachments of the chunks it names
                task_count stored = 0;
                for (const pfarm::held_chunk& h : a.into) {
                    auto& b = *std::static_pointer_cast<buffers>(h.attachment);
                    ASSERT_EQ(b.work, h.work);
                    for (task_count t = std::max(a.results.first, h.work.first);
                         t < std::min(a.results.first + a.results.count, h.work.first + h.work.count); ++t, ++stored)
                        ++b.stored[static_cast<std::size_t>(t - h.work.first)];
                }
                ASSERT_EQ(stored, a.results.count) << "a delivery names every chunk its results fall in";
            }
            if (a.what == pfarm::master_action::kind::up && a.message.done.count > 0) {  // from its attachment
                ASSERT_NE(a.attachment, nullptr) << "an up action carrying results hands their chunk's attachment out";
                const auto& b = *std::static_pointer_cast<buffers>(a.attachment);
                ASSERT_EQ(b.work, a.message.done);
                for (task_count t = b.work.first; t < b.work.first + b.work.count; ++t) {
                    ASSERT_EQ(b.stored[static_cast<std::size_t>(t - b.work.first)], 1) << "task " << t << " stored once";
                    ++sent_up[static_cast<std::size_t>(t)];
                }
                ASSERT_EQ(masters[static_cast<std::size_t>(m)]->holding(b.work.first), nullptr) << "it left the ledger";
            }
            if (a.what == pfarm::master_action::kind::up) bag.push_back({message::to::supermaster, m, 0, false, a.message, {}});
            if (a.what == pfarm::master_action::kind::send)
                bag.push_back({message::to::worker, first_of[static_cast<std::size_t>(m)] + a.worker, m, false, {}, a.reply});
        }
    }
    /// Runs to the end; returns the number of events.
    int run(double& now) {
        for (int j = 0; j < static_cast<int>(workers.size()); ++j) from_worker(j, workers[static_cast<std::size_t>(j)].start());
        for (int m = 0; m < static_cast<int>(masters.size()); ++m) from_master(m, masters[static_cast<std::size_t>(m)]->start(now));
        int events = 0, timers = 0;
        std::vector<int> computing;  // workers with a chunk to compute
        for (;;) {
            const bool died = dead >= 0 && events >= dead_after;
            computing.clear();
            for (int j = 0; j < static_cast<int>(workers.size()); ++j)
                if (workers[static_cast<std::size_t>(j)].computing() && !(died && j == dead)) computing.push_back(j);
            const std::size_t choices = bag.size() + computing.size();
            const bool masters_over =
                std::all_of(masters.begin(), masters.end(), [](const auto& m) { return m->over(); });
            if (choices == 0 && dead >= 0 && !masters_over && ++timers < 10) {  // only deadlines are left
                now += 1000.0;
                for (int m = 0; m < static_cast<int>(masters.size()); ++m)
                    from_master(m, masters[static_cast<std::size_t>(m)]->on_timer(now));
                continue;
            }
            if (choices == 0) break;
            const std::size_t pick = std::uniform_int_distribution<std::size_t>(0, choices - 1)(random);
            now += dead >= 0 ? 0.001 : 1.0;
            ++events;
            if (pick >= bag.size()) {  // a worker computes its chunk (asking ahead first, as at its boundary)
                const int j = computing[pick - bag.size()];
                auto& w = workers[static_cast<std::size_t>(j)];
                if (w.ask_at() >= 0) from_worker(j, w.on_boundary(w.ask_at()));
                const chunk c = w.current();
                for (task_count t = c.first; t < c.first + c.count; ++t) ++computed[static_cast<std::size_t>(t)];
                from_worker(j, w.on_chunk_done(1.0, now - 1.0, now));
                continue;
            }
            // Messages between the same two parties arrive in the order sent (MPI's non-overtaking rule): the
            // oldest message of the picked one's channel goes.
            std::size_t first = 0;
            const auto same = [&](const message& a, const message& b) {
                return a.where == b.where && a.who == b.who && a.group == b.group && a.from_top == b.from_top;
            };
            while (!same(bag[first], bag[pick])) ++first;
            const message m = bag[first];
            bag.erase(bag.begin() + static_cast<long>(first));
            switch (m.where) {
            case message::to::supermaster:
                for (const auto& a : top->on_message(m.who, m.request, now)) {
                    if (a.what == pfarm::farmer_action::kind::deliver)
                        for (task_count t = a.results.first; t < a.results.first + a.results.count; ++t)
                            ++delivered_top[static_cast<std::size_t>(t)];
                    if (a.what == pfarm::farmer_action::kind::send)
                        bag.push_back({message::to::master, -1, a.worker, true, {}, a.reply});
                }
                break;
            case message::to::master: {
                auto& master = *masters[static_cast<std::size_t>(m.group)];
                if (m.from_top && m.reply.what == pfarm::reply_message::kind::assign)
                    from_master(m.group, master.on_reply(m.reply, now,
                                                         std::make_shared<buffers>(buffers{
                                                             m.reply.work, std::vector<int>(static_cast<std::size_t>(m.reply.work.count))})));
                else if (m.from_top) from_master(m.group, master.on_reply(m.reply, now));
                else from_master(m.group, master.on_message(m.who - first_of[static_cast<std::size_t>(m.group)], m.request, now));
                deepest = std::max(deepest, master.up().held());
                break;
            }
            case message::to::worker: {
                if (died && m.who == dead) break;  // lost with it
                auto& w = workers[static_cast<std::size_t>(m.who)];
                if (m.reply.what == pfarm::reply_message::kind::reclaim) {
                    const chunk c = w.current();
                    // it has started the first task of its chunk (when it computes one)
                    from_worker(m.who, w.on_reclaim(m.reply, w.computing() ? c.first + 1 : 0, w.computing() ? 1.0 : 0.0));
                } else {
                    from_worker(m.who, w.on_reply(m.reply));
                }
                break;
            }
            }
        }
        return events;
    }
};

class MasterSessionRandom : public ::testing::TestWithParam<std::string> {};

TEST_P(MasterSessionRandom, EveryTaskOnceUnderRandomEventOrders) {
    int deepest = 0;
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
        const bool prefetch = seed % 2 == 0, reclaim = seed % 3 == 0;
        random_farm farm(157, seed % 2 == 0 ? 2 : 3, 8, GetParam(), prefetch, reclaim, seed);
        double now = 0.0;
        farm.run(now);
        SCOPED_TRACE("seed " + std::to_string(seed));
        EXPECT_TRUE(farm.top->over());
        for (const auto& m : farm.masters) {
            EXPECT_TRUE(m->over());
            EXPECT_TRUE(m->held().empty()) << "every chunk left the ledger with its results";
        }
        for (const auto& w : farm.workers) EXPECT_TRUE(w.ended());
        for (task_count t = 0; t < farm.tasks; ++t) {
            ASSERT_EQ(farm.computed[static_cast<std::size_t>(t)], 1) << "task " << t << " computed once";
            ASSERT_EQ(farm.delivered_top[static_cast<std::size_t>(t)], 1) << "task " << t << " reached the supermaster once";
            ASSERT_EQ(farm.sent_up[static_cast<std::size_t>(t)], 1) << "task " << t << " went up from its chunk's attachment";
        }
        EXPECT_TRUE(farm.top->decisions().done());
        EXPECT_LE(farm.deepest, pfarm::master_depth);
        deepest = std::max(deepest, farm.deepest);
    }
    EXPECT_GT(deepest, 2) << "some master held more than two chunks (the refill rule)";
}

/// A lost worker inside a group (farmer.hpp "Lost workers" in pool mode): a worker of group 0 dies at a random point;
/// its master presumes it lost past its deadline and hands its chunks to the group's other workers, and every task's
/// results still reach the supermaster exactly once, each from its chunk's attachment, every ledger emptied.
TEST_P(MasterSessionRandom, ALostWorkerInAGroupEveryTaskOnceUnderRandomEventOrders) {
    int lost = 0;
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
        const bool prefetch = seed % 2 == 0, reclaim = seed % 3 == 0;
        random_farm farm(157, 2, 7, GetParam(), prefetch, reclaim, seed, {pfarm::worker_loss_rule::kind::go_on, 4.0, 100.0});
        farm.dead = static_cast<int>(seed % 4);  // one of group 0's four workers
        farm.dead_after = static_cast<int>(5 + 13 * seed);
        double now = 0.0;
        farm.run(now);
        SCOPED_TRACE("seed " + std::to_string(seed));
        ASSERT_TRUE(farm.top->over());
        EXPECT_EQ(farm.top->outcome().what, pfarm::farm_outcome::kind::ok);
        for (const auto& m : farm.masters) {
            EXPECT_TRUE(m->over());
            EXPECT_TRUE(m->held().empty()) << "every chunk left the ledger with its results";
        }
        const auto& gone = farm.masters[0]->lost();
        EXPECT_LE(gone.size(), 1u);
        if (!gone.empty()) EXPECT_EQ(gone[0], farm.dead) << "only the dead worker is presumed lost";
        lost += static_cast<int>(gone.size());
        EXPECT_TRUE(farm.masters[1]->lost().empty());
        for (int j = 0; j < static_cast<int>(farm.workers.size()); ++j)
            if (j != farm.dead) EXPECT_TRUE(farm.workers[static_cast<std::size_t>(j)].ended()) << "worker " << j;
        for (task_count t = 0; t < farm.tasks; ++t) {
            ASSERT_EQ(farm.delivered_top[static_cast<std::size_t>(t)], 1) << "task " << t << " reached the supermaster once";
            ASSERT_EQ(farm.sent_up[static_cast<std::size_t>(t)], 1) << "task " << t << " went up from its chunk's attachment";
        }
        EXPECT_TRUE(farm.top->decisions().done());
    }
    EXPECT_GT(lost, 0) << "some run lost its worker while it held work";
}

INSTANTIATE_TEST_SUITE_P(Techniques, MasterSessionRandom,
                         ::testing::Values("ss", "gss", "fss", "tss", "static", "dtss", "dgss", "multi", "dealdyn-sm",
                                           "n-gss", "awf-c", "css"));

/// A master with two workers, driven by hand: it asks for more before its pool runs dry, and a chunk's results go up
/// with a later request (merged).
TEST(MasterSession, RefillsBeforeThePoolRunsDryAndMergesResultsWithTheNextRequest) {
    pfarm::master_session_options o;
    o.expected = 40;
    pfarm::master_session m(2, pfarm::make_technique("ss", {}, 2), o);
    auto acts = m.start(0.0);
    ASSERT_EQ(acts.size(), 1u);
    EXPECT_EQ(acts[0].what, pfarm::master_action::kind::up);
    EXPECT_EQ(acts[0].message.what, pfarm::request_message::kind::ask);
    pfarm::request_message ask;
    acts = m.on_message(0, ask, 0.1);  // a worker asks before any task is in: parked
    ASSERT_EQ(acts.size(), 1u);
    EXPECT_EQ(acts[0].what, pfarm::master_action::kind::park);
    pfarm::reply_message a;
    a.work = {0, 10};
    acts = m.on_reply(a, 1.0);  // the parked worker gets task 0
    ASSERT_GE(acts.size(), 1u);
    EXPECT_EQ(acts[0].what, pfarm::master_action::kind::send);
    EXPECT_EQ(acts[0].reply.work, (chunk{0, 1}));
    // Worker 1 asks, worker 0 returns task 0 and asks..., until an up request goes; the supermaster's replies come
    // at once (chunks of 10 after the first).
    chunk held[2] = {{0, 1}, {}};
    double t = 2.0;
    task_count asked_with_left = -1, next = 10;
    bool merged = false;
    for (int round = 0; round < 40 && !merged; ++round) {
        for (int w = 0; w < 2 && !merged; ++w) {
            pfarm::request_message r;
            r.done = held[w];
            r.seconds = 1.0, r.started = t - 1.0, r.finished = t;
            std::vector<pfarm::master_action> out = m.on_message(w, r, t += 1.0);
            for (const auto& x : out) {
                if (x.what == pfarm::master_action::kind::send) held[x.worker] = x.reply.work;
                if (x.what != pfarm::master_action::kind::up) continue;
                EXPECT_EQ(x.message.what, pfarm::request_message::kind::ask);
                if (asked_with_left < 0) asked_with_left = m.pool_left();
                if (x.message.done.count > 0) {
                    EXPECT_EQ(x.message.done, (chunk{0, 10})) << "the first chunk's results, with a request";
                    merged = true;
                    continue;
                }
                pfarm::reply_message b;
                b.work = {next, 10};
                next += 10;
                for (const auto& y : m.on_reply(b, t += 1.0))
                    if (y.what == pfarm::master_action::kind::send) held[y.worker] = y.reply.work;
            }
        }
    }
    ASSERT_GE(asked_with_left, 0) << "the master asked for more";
    EXPECT_GT(asked_with_left, 0) << "before its pool ran dry";
    EXPECT_TRUE(merged);
    EXPECT_EQ(m.merged_requests(), 1);
    EXPECT_EQ(m.up_messages(), m.up_requests()) << "no results went alone";
}

/// The refill rule (docs/hierarchical.md "Refill rule"): a master asks for its next chunk once the hand-out reaches
/// the newest chunk it holds, even while an older chunk's last result is still out (a long task), up to
/// master_depth chunks; then the request waits and goes with that chunk's results.
TEST(MasterSession, TheRefillDoesNotWaitForAnOlderChunksLastResult) {
    pfarm::master_session_options o;
    o.expected = 100;
    pfarm::master_session m(2, pfarm::make_technique("ss", {}, 2), o);
    m.start(0.0);
    double t = 1.0;
    task_count next = 0, requests_out = 1;  // the first ask is out
    chunk held[2] = {};
    std::vector<pfarm::master_action> out;
    const auto take = [&](const std::vector<pfarm::master_action>& acts) {
        out.assign(acts.begin(), acts.end());
        for (const auto& x : out) {
            if (x.what == pfarm::master_action::kind::send) held[x.worker] = x.reply.work;
            if (x.what == pfarm::master_action::kind::up && x.message.what == pfarm::request_message::kind::ask)
                ++requests_out;
        }
    };
    const auto answer_up = [&] {  // the supermaster answers every request out with a chunk of 4
        while (requests_out > 0) {
            --requests_out;
            pfarm::reply_message r;
            r.work = {next, 4};
            next += 4;
            take(m.on_reply(r, t += 1.0));
        }
    };
    answer_up();
    pfarm::request_message ask;
    take(m.on_message(0, ask, t += 1.0));
    take(m.on_message(1, ask, t += 1.0));
    ASSERT_EQ(held[1], (chunk{1, 1})) << "worker 1 holds task 1 of the first chunk, and keeps it (a long task)";
    // Worker 0 computes everything else; the master keeps asking while task 1 is out, until it holds master_depth
    // chunks and its pool is empty.
    for (int step = 0; step < 200; ++step) {
        answer_up();
        pfarm::request_message r;
        r.done = held[0];
        r.seconds = 1.0, r.started = t - 1.0, r.finished = t;
        held[0] = {};
        take(m.on_message(0, r, t += 1.0));
        if (held[0].count == 0) break;  // parked: the pool is empty
    }
    EXPECT_EQ(static_cast<int>(m.chunks_received().size()), pfarm::master_depth)
        << "it asked for more while task 1 was out, up to master_depth chunks";
    EXPECT_EQ(m.up_requests(), pfarm::master_depth) << "one per chunk; the next one waits: it holds master_depth";
    EXPECT_EQ(m.merged_requests(), 0) << "the first chunk's results are not in";
    EXPECT_EQ(m.pool_left(), 0);
    // Task 1's result comes: the first chunk is complete, and its results go up with the request that waited.
    pfarm::request_message r;
    r.done = {1, 1};
    r.seconds = 1.0, r.started = 0.0, r.finished = t;
    take(m.on_message(1, r, t += 1.0));
    bool up = false;
    for (const auto& x : out)
        if (x.what == pfarm::master_action::kind::up) {
            EXPECT_EQ(x.message.what, pfarm::request_message::kind::ask);
            EXPECT_EQ(x.message.done, (chunk{0, 4}));
            up = true;
        }
    EXPECT_TRUE(up);
    EXPECT_EQ(m.up_requests(), pfarm::master_depth + 1);
    EXPECT_EQ(m.merged_requests(), 1);
}

/// The ledger: each chunk keeps the driver's attachment from its reply until the up action that carries its results
/// hands it out; a worker's chunk that spans two held chunks (the pool merged them) is delivered into both, with
/// their attachments; a complete chunk whose results wait for the reply asked ahead stays in the ledger until then.
TEST(MasterSession, TheLedgerKeepsEachChunksAttachmentUntilItsResultsGoUp) {
    pfarm::master_session_options o;
    o.expected = 25;
    pfarm::master_session m(2, pfarm::make_technique("css", runnable_options(), 2), o);  // chunks of 7
    m.start(0.0);
    const auto first = std::make_shared<int>(1), second = std::make_shared<int>(2), third = std::make_shared<int>(3);
    pfarm::reply_message a;
    a.work = {0, 10};
    m.on_reply(a, 1.0, first);
    ASSERT_EQ(m.held().size(), 1u);
    EXPECT_EQ(m.held().front().attachment, first);
    pfarm::request_message ask;
    for (const auto& x : m.on_message(0, ask, 2.0))
        if (x.what == pfarm::master_action::kind::send) EXPECT_EQ(x.reply.work, (chunk{0, 7}));
    EXPECT_EQ(m.up_requests(), 2) << "3 of 10 left: the refill is due";
    pfarm::reply_message b;
    b.work = {10, 10};
    m.on_reply(b, 3.0, second);
    ASSERT_NE(m.holding(12), nullptr);
    EXPECT_EQ(m.holding(12)->attachment, second);
    EXPECT_EQ(m.holding(20), nullptr);
    for (const auto& x : m.on_message(1, ask, 4.0))
        if (x.what == pfarm::master_action::kind::send) EXPECT_EQ(x.reply.work, (chunk{7, 7})) << "it spans both";
    pfarm::request_message r;
    r.done = {7, 7};
    r.seconds = 1.0, r.started = 4.0, r.finished = 5.0;
    bool delivered = false;
    for (const auto& x : m.on_message(1, r, 5.0))
        if (x.what == pfarm::master_action::kind::deliver) {
            ASSERT_EQ(x.into.size(), 2u);
            EXPECT_EQ(x.into[0].work, (chunk{0, 10}));
            EXPECT_EQ(x.into[0].attachment, first);
            EXPECT_EQ(x.into[1].work, (chunk{10, 10}));
            EXPECT_EQ(x.into[1].attachment, second);
            delivered = true;
        }
    EXPECT_TRUE(delivered);
    EXPECT_EQ(m.up_requests(), 3) << "the pool is empty: the refill went";
    r.done = {0, 7};
    r.started = 2.0, r.finished = 6.0;
    for (const auto& x : m.on_message(0, r, 6.0)) EXPECT_NE(x.what, pfarm::master_action::kind::up);
    ASSERT_NE(m.holding(0), nullptr) << "complete, its results wait for the reply asked ahead";
    EXPECT_EQ(m.holding(0)->done, 10);
    pfarm::reply_message c;
    c.work = {20, 5};
    bool up = false;
    for (const auto& x : m.on_reply(c, 7.0, third))
        if (x.what == pfarm::master_action::kind::up && x.message.done.count > 0) {
            EXPECT_EQ(x.message.done, (chunk{0, 10}));
            EXPECT_EQ(x.attachment, first) << "handed out with the results";
            up = true;
        }
    EXPECT_TRUE(up);
    EXPECT_EQ(m.holding(0), nullptr) << "the first chunk left the ledger";
    ASSERT_EQ(m.held().size(), 2u);
    EXPECT_EQ(m.held().front().work, (chunk{10, 10}));
    EXPECT_EQ(m.held().front().done, 4);
    EXPECT_EQ(m.held().back().attachment, third);
}

TEST(MasterSession, DepthNeedsNoReclaimAndABoundedWorkerSession) {
    using pfarm::testing::expect_invalid;
    expect_invalid([] { pfarm::farmer f(10, 2, pfarm::make_technique("ss", {}, 2), 1, 3, true); }, "max_outstanding");
    expect_invalid([] { pfarm::farmer f(10, 2, pfarm::make_technique("ss", {}, 2), 1, pfarm::farmer::max_held + 1); },
                   "max_outstanding");
    expect_invalid([] { pfarm::worker_session w({.prefetch = true, .depth = pfarm::farmer::max_held + 1}); }, "depth");
    pfarm::farmer f(10, 2, pfarm::make_technique("ss", {}, 2), 1, 3);
    expect_invalid([&] { f.set_stragglers({2.0, 0.0}); }, "stragglers");
    for (int i = 0; i < 3; ++i) EXPECT_EQ(f.request(0).work, (chunk{i, 1}));
    f.complete(0, 1.0);
    EXPECT_EQ(f.in_flight(0, 0), (chunk{1, 1})) << "the oldest completes first";
    EXPECT_EQ(f.held(0), 2);
}

TEST(MasterSession, AWorkerFailureAbortsTheGroupAndGoesUp) {
    pfarm::master_session m(2, pfarm::make_technique("ss", {}, 2), {});
    m.start(0.0);
    pfarm::reply_message a;
    a.work = {0, 4};
    m.on_reply(a, 1.0);
    pfarm::request_message ask;
    m.on_message(0, ask, 1.5);
    pfarm::request_message failure;
    failure.what = pfarm::request_message::kind::failure;
    failure.failed_task = 0;
    failure.text = "boom";
    bool up = false;
    for (const auto& x : m.on_message(0, failure, 2.0))
        if (x.what == pfarm::master_action::kind::up) {
            EXPECT_EQ(x.message.what, pfarm::request_message::kind::failure);
            EXPECT_EQ(x.message.failed_task, 0);
            EXPECT_EQ(x.message.text, "boom") << "the worker's text goes up unchanged";
            up = true;
        }
    EXPECT_TRUE(up);
    EXPECT_EQ(m.failed_worker(), 0) << "whose failure it was";
    EXPECT_TRUE(m.group().aborting());
}

TEST(MasterSession, TheMastersOwnFailureGoesUpAsNoWorkersFailure) {
    pfarm::master_session m(2, pfarm::make_technique("ss", {}, 2), {});
    m.start(0.0);
    EXPECT_EQ(m.failed_worker(), -1);
    bool up = false;
    for (const auto& x : m.abort("MPI_Recv failed"))
        if (x.what == pfarm::master_action::kind::up) {
            EXPECT_EQ(x.message.what, pfarm::request_message::kind::failure);
            EXPECT_EQ(x.message.failed_task, -1);
            EXPECT_EQ(x.message.text, "MPI_Recv failed");
            up = true;
        }
    EXPECT_TRUE(up);
    EXPECT_EQ(m.failed_worker(), -1);
}

// --- the simulator ----------------------------------------------------------------------------------------------

sim::platform platform(std::vector<double> times, double overhead = 0.01, double latency = 0.005) {
    sim::platform p;
    p.task_times = std::move(times);
    p.overhead = overhead;
    p.latency = latency;
    return p;
}

sim::run_options hierarchical(int masters, bool prefetch = false, bool reclaim = false) {
    sim::run_options r;
    r.farmer = sim::farmer_kind::hierarchical;
    r.masters = masters;
    r.prefetch = prefetch;
    r.reclaim = reclaim;
    r.keep_trace = true;
    return r;
}

void expect_every_task_once(const sim::result& r, task_count tasks) {
    std::vector<int> seen(static_cast<std::size_t>(tasks), 0);
    for (const auto& c : r.trace)
        for (task_count t = c.first; t < c.first + c.count; ++t) ++seen[static_cast<std::size_t>(t)];
    for (task_count t = 0; t < tasks; ++t) ASSERT_EQ(seen[static_cast<std::size_t>(t)], 1) << "task " << t;
    task_count total = 0;
    for (const auto& w : r.workers) total += w.tasks;
    EXPECT_EQ(total, tasks);
    EXPECT_EQ(static_cast<task_count>(r.trace.size()), r.chunks);
    EXPECT_GE(r.makespan, r.lower_bound * (1.0 - 1e-12));
}

class HierarchicalEveryTechnique : public ::testing::TestWithParam<std::string> {};

TEST_P(HierarchicalEveryTechnique, EveryTaskExactlyOnceWithTwoAndFourMasters) {
    const auto p = platform({1, 2, 1.5, 3, 1, 1, 2, 4, 1, 1.2, 1, 2});
    sim::workload w;
    w.tasks = 700;
    w.shape = sim::workload_shape::random;
    if (GetParam() == "auto") {  // it simulates its candidates through a predictor only the flat farm has
        try {
            (void)sim::simulate(p, w, "auto", runnable_options(), hierarchical(2));
            FAIL() << "auto under the hierarchical farm was not refused";
        } catch (const pfarm::invalid_argument& e) {
            EXPECT_EQ(e.argument(), "technique") << e.what();
        }
        return;
    }
    for (int masters : {2, 4})
        for (int mode = 0; mode < 3; ++mode) {
            SCOPED_TRACE(std::to_string(masters) + " masters, mode " + std::to_string(mode));
            const auto r = sim::simulate(p, w, GetParam(), runnable_options(), hierarchical(masters, mode == 2, mode >= 1));
            expect_every_task_once(r, w.tasks);
            ASSERT_EQ(r.master_requests.size(), static_cast<std::size_t>(masters));
        }
}

std::vector<std::string> technique_names() {
    std::vector<std::string> names;
    for (const auto& t : pfarm::techniques()) names.push_back(t.name);
    return names;
}

INSTANTIATE_TEST_SUITE_P(Registry, HierarchicalEveryTechnique, ::testing::ValuesIn(technique_names()),
                         [](const auto& info) {
                             std::string n = info.param;
                             std::replace(n.begin(), n.end(), '-', '_');
                             return n;
                         });

TEST(HierarchicalSimulator, TheSupermasterAnswersAFewPercentOfTheFlatFarmersRequests) {
    const auto p = platform(std::vector<double>(64, 1.0), 0.001, 0.0005);
    sim::workload w;
    w.tasks = 20000;
    const auto flat = sim::simulate(p, w, "ss", {}, {});
    const auto hier = sim::simulate(p, w, "ss", {}, hierarchical(4));
    EXPECT_EQ(flat.farmer_requests, 20000 + 64 - 0) << "ss: one request per task, and the last one of each worker";
    EXPECT_LT(hier.farmer_requests * 50, flat.farmer_requests) << "under 2% of the flat farmer's requests";
    task_count up = 0, merged = 0;
    for (std::size_t m = 0; m < hier.master_requests.size(); ++m) up += hier.master_requests[m], merged += hier.master_merged[m];
    EXPECT_EQ(up, hier.farmer_requests) << "every request the supermaster served came from a master";
    task_count chunks = 0;
    for (task_count c : hier.master_chunks) chunks += c;
    EXPECT_EQ(hier.farmer_messages, hier.farmer_requests + chunks - merged)
        << "each chunk's results went up in one message: with a request, else alone or final";
    EXPECT_GE(merged, up - 4 * pfarm::master_depth)
        << "a chunk's results go with a request but for those held when the stop came (Chronopoulos, Penmatsa, Yu & Yu 2005, Remark 3)";
    expect_every_task_once(hier, w.tasks);
}

TEST(HierarchicalSimulator, WeightedHTechniquesShareTheLoopByGroupPower) {
    // Group 0 is four times as fast as group 1; weights given: HDGSS, HDFSS, HDTSS at the supermaster.
    const auto p = platform({0.25, 0.25, 0.25, 1, 1, 1}, 0.001, 0.0005);
    pfarm::technique_options o;
    o.weights = {4, 4, 4, 1, 1, 1};
    sim::workload w;
    w.tasks = 6000;
    for (const char* t : {"dgss", "dfss", "dtss"}) {
        SCOPED_TRACE(t);
        EXPECT_EQ(pfarm::default_master_technique(t), t);
        const auto r = sim::simulate(p, w, t, o, hierarchical(2));
        expect_every_task_once(r, w.tasks);
        if (std::string(t) == "dgss") continue;  // R A_j / A per request: the first askers take most (below)
        const task_count fast = r.workers[0].tasks + r.workers[1].tasks + r.workers[2].tasks;
        const task_count slow = r.workers[3].tasks + r.workers[4].tasks + r.workers[5].tasks;
        EXPECT_NEAR(static_cast<double>(fast) / static_cast<double>(slow), 4.0, 0.6);
        EXPECT_LT(r.makespan, 1.15 * r.lower_bound) << "flat: dfss 1.000, dtss 1.046 of the bound";
    }
    // HDGSS: the supermaster's first chunk to master 0 is R x 12 / 15.
    auto top = pfarm::make_technique("dgss", pfarm::master_options(o, {3, 3}), 2);
    top->start({6000, 6000, 2, nullptr});
    EXPECT_EQ(top->next(0, 6000), 4800);
    EXPECT_EQ(top->next(1, 1200), 240);
    EXPECT_EQ(pfarm::default_master_technique("ss"), "fss");
    EXPECT_EQ(pfarm::default_master_technique("wf"), "dfss");
}

TEST(HierarchicalSimulator, MasterOptionsSumTheGroups) {
    pfarm::technique_options o;
    o.weights = {1, 2, 3, 4, 5};
    o.times = {1, 1, 2, 2, 2};
    o.run_queue = {1, 2, 1, 1, 1};
    const auto m = pfarm::master_options(o, {2, 3});
    EXPECT_EQ(m.weights, (std::vector<double>{3, 12}));
    EXPECT_DOUBLE_EQ(m.times[0], 0.5);
    EXPECT_DOUBLE_EQ(m.times[1], 2.0 / 3.0);
    EXPECT_DOUBLE_EQ(m.run_queue[0], 3.0 / 2.0);  // V = 3, A = 1/1 + 2/2 = 2
    EXPECT_EQ(m.min_chunk, 3) << "at least the largest group";
    EXPECT_FALSE(m.factor) << "not the default fss: the workers' factor (none)";
    EXPECT_EQ(pfarm::master_options(o, {2, 3}, "fss", true).factor, 4.0);
    o.factor = 3.0;
    EXPECT_EQ(pfarm::master_options(o, {2, 3}, "fss", true).factor, 3.0) << "a factor given is kept";
}

TEST(HierarchicalSimulator, PlatformLevelsChangeTheRun) {
    auto p = platform(std::vector<double>(16, 1.0), 0.01, 0.001);
    sim::workload w;
    w.tasks = 4000;
    const auto base = sim::simulate(p, w, "ss", {}, hierarchical(4));
    p.supermaster_overhead = 0.5;
    p.master_latency = 0.2;
    const auto slow_top = sim::simulate(p, w, "ss", {}, hierarchical(4));
    EXPECT_GT(slow_top.makespan, base.makespan) << "the supermaster's service and the upper latency are charged";
    p.master_overhead = 0.5;  // ss over four workers per master now saturates the masters (2 answers per task time)
    const auto slow_masters = sim::simulate(p, w, "ss", {}, hierarchical(4));
    EXPECT_GT(slow_masters.makespan, 1.5 * slow_top.makespan);
}

TEST(HierarchicalSimulator, BadOptionsNameTheirField) {
    const auto p = platform({1, 1, 1});
    sim::workload w;
    w.tasks = 30;
    using pfarm::testing::expect_invalid;
    expect_invalid([&] { sim::simulate(p, w, "gss", {}, hierarchical(0)); }, "masters");
    expect_invalid([&] { sim::simulate(p, w, "gss", {}, hierarchical(4)); }, "masters");
    auto r = hierarchical(2);
    r.master_technique = "nope";
    expect_invalid([&] { sim::simulate(p, w, "gss", {}, r); }, "master_technique");
    auto bad = p;
    bad.master_overhead = -1.0;
    expect_invalid([&] { sim::simulate(bad, w, "gss", {}, hierarchical(2)); }, "master_overhead");
    EXPECT_EQ(sim::parse_farmer("hierarchical"), sim::farmer_kind::hierarchical);
    expect_invalid([] { sim::parse_farmer("tree"); }, "farmer");
}

}  // namespace
