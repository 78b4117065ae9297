// Properties every technique must have, over many random (I, p, options) and random message orders, driving
// the core's farmer and worker sessions (with and without prefetch and reclaim): chunks >= 1, never more than
// what remains, every task index handed out, computed and delivered exactly once (so the sizes add up to I),
// min_chunk respected except by the last chunk, deterministic, and the loop always finishes.
#include "pfarm/error.hpp"
#include "pfarm/farmer_session.hpp"
#include "pfarm/worker_session.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/round_robin.hpp"
#include "pfarm/simulator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using pfarm::task_count;

/// What `auto` chooses with: the simulator's flat farm, with a farmer cost per request.
const pfarm::candidate_predictor* predictor() {
    static const pfarm::candidate_predictor p = pfarm::sim::make_predictor(1e-3, 1e-4, {});
    return &p;
}

std::vector<std::string> technique_names() {
    std::vector<std::string> names;
    for (const auto& t : pfarm::techniques()) names.push_back(t.name);
    names.push_back("wf");
    return names;
}

/// Options that every technique accepts, with the required parameters set.
pfarm::technique_options random_options(std::mt19937_64& rng, int p, bool with_weights) {
    pfarm::technique_options o;
    std::uniform_real_distribution<double> speed(0.5, 4.0);
    o.min_chunk = std::uniform_int_distribution<task_count>(1, 6)(rng);
    o.chunk = std::uniform_int_distribution<task_count>(1, 50)(rng);
    o.overhead = std::uniform_real_distribution<double>(0.01, 2.0)(rng);
    o.sigma = std::uniform_real_distribution<double>(0.01, 2.0)(rng);
    o.static_percent = std::uniform_real_distribution<double>(0.0, 100.0)(rng);
    if (with_weights)
        for (int j = 0; j < p; ++j) o.weights.push_back(speed(rng));
    for (int j = 0; j < p; ++j) o.times.push_back(1.0 / speed(rng));
    return o;
}

struct record {
    int worker;
    pfarm::chunk work;
    bool calibration;
};

/// What a random drive saw.
/// The reply that assigns [first, first + count).
pfarm::reply_message assign(task_count first, task_count count) {
    pfarm::reply_message r;
    r.what = pfarm::reply_message::kind::assign;
    r.work = {first, count};
    return r;
}

struct drive_result {
    std::vector<record> handouts;  ///< every assign, in the order sent
    std::vector<int> computed;     ///< per task: how many times a worker computed it
    std::vector<int> delivered;    ///< per task: how many times its results reached the farmer
    task_count reclaims = 0;
};

/// Runs a farmer_session and one worker_session per worker (the core's protocol, nothing of it copied here)
/// over an in-process transport that delivers messages in a random order, keeping each pair's order (as MPI
/// does): at each step it hands the farmer the oldest message of a random worker, hands a worker its oldest
/// reply, or lets a computing worker finish its chunk (time = count x its per-task time, jittered). A reclaim
/// reaches a computing worker between two tasks, at a random one (after its last task when none is left).
/// `reply_first`: the farmer takes each message in two phases, receive() then settle(), as the MPI farmer does, and
/// checks that an answer first with the assign the session named ahead (upcoming()) is that assign; otherwise
/// on_message(), as the simulator does.
drive_result random_drive(const std::string& name, task_count tasks, int p, const pfarm::technique_options& o,
                          std::uint64_t seed, bool prefetch = false, bool reclaim = false, bool reply_first = false) {
    double now = 0.0;
    pfarm::farmer_session farm(tasks, p, pfarm::make_technique(name, o, p),
                               {.min_chunk = o.min_chunk, .prefetch = prefetch, .reclaim = reclaim, .clock = [&now] { return now; },
                                .predictor = predictor()});
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0), jitter(0.8, 1.25);
    // Monitor readings for the statistical calibrations (dealdyn-lr, dealdyn-mv).
    std::vector<pfarm::resource_sample> samples(static_cast<std::size_t>(p));
    for (auto& s : samples) {
        s.availability = std::uniform_real_distribution<double>(0.1, 1.0)(rng);
        s.latency = std::uniform_real_distribution<double>(1e-6, 1e-3)(rng);
        s.benchmark = std::uniform_real_distribution<double>(100.0, 400.0)(rng);
        s.run_queue = 1.0;
    }
    const auto needs = farm.needs();
    std::vector<pfarm::worker_session> workers;
    for (int w = 0; w < p; ++w)
        workers.emplace_back(pfarm::worker_session_options{.prefetch = prefetch,
                                                           .prefetch_lead = 0.5,
                                                           .readings_each = !needs.with_every_request.empty(),
                                                           .readings_calibration = !needs.with_calibration.empty()});
    std::vector<std::deque<pfarm::request_message>> up(static_cast<std::size_t>(p));
    std::vector<std::deque<pfarm::reply_message>> down(static_cast<std::size_t>(p));
    std::vector<task_count> next(static_cast<std::size_t>(p), 0);  // first task of its chunk not started
    drive_result out;
    out.computed.assign(static_cast<std::size_t>(tasks), 0);
    out.delivered.assign(static_cast<std::size_t>(tasks), 0);
    const auto worker_acts = [&](int w, pfarm::worker_session::actions actions) {
        for (const auto& a : actions) {
            if (a.what == pfarm::worker_action::kind::compute) {
                next[static_cast<std::size_t>(w)] = a.work.first;
                continue;
            }
            up[static_cast<std::size_t>(w)].push_back(a.message);
            if (a.readings) up[static_cast<std::size_t>(w)].back().has_sample = true,
                            up[static_cast<std::size_t>(w)].back().sample = samples[static_cast<std::size_t>(w)];
        }
    };
    const auto farmer_acts = [&](const std::vector<pfarm::farmer_action>& actions) {
        for (const auto& a : actions) {
            if (a.what == pfarm::farmer_action::kind::deliver) {
                for (task_count t = a.results.first; t < a.results.first + a.results.count; ++t)
                    ++out.delivered[static_cast<std::size_t>(t)];
            } else if (a.what == pfarm::farmer_action::kind::send) {
                if (a.reply.what == pfarm::reply_message::kind::assign)
                    out.handouts.push_back({a.worker, a.reply.work, a.reply.calibration});
                down[static_cast<std::size_t>(a.worker)].push_back(a.reply);
            }
        }
    };
    for (int w = 0; w < p; ++w) worker_acts(w, workers[static_cast<std::size_t>(w)].start());
    const auto finish_chunk = [&](int w) {
        auto& s = workers[static_cast<std::size_t>(w)];
        const pfarm::chunk c = s.current();
        for (task_count t = c.first; t < c.first + c.count; ++t) ++out.computed[static_cast<std::size_t>(t)];
        const double seconds = static_cast<double>(c.count) * o.times[static_cast<std::size_t>(w)] * jitter(rng);
        worker_acts(w, s.on_chunk_done(seconds, now, now + seconds));
    };
    for (std::size_t step = 0;; ++step) {
        if (step > 10'000'000) {
            ADD_FAILURE() << name << ": the drive does not end";
            break;
        }
        std::vector<int> moves;  // w: a message of w to the farmer; p + w: a reply to w; 2p + w: w computes
        for (int w = 0; w < p; ++w) {
            const auto j = static_cast<std::size_t>(w);
            if (!up[j].empty()) moves.push_back(w);
            if (!down[j].empty()) moves.push_back(p + w);
            if (workers[j].computing()) moves.push_back(2 * p + w);
        }
        if (moves.empty()) break;
        now += unit(rng);
        const int m = moves[std::uniform_int_distribution<std::size_t>(0, moves.size() - 1)(rng)];
        const int w = m % p;
        const auto j = static_cast<std::size_t>(w);
        auto& s = workers[j];
        if (m < p) {
            const pfarm::request_message msg = up[j].front();
            up[j].pop_front();
            if (reply_first) {
                const pfarm::reply_message ahead = farm.upcoming(w);  // what the MPI farmer writes while it waits
                const auto& first = farm.receive(w, msg);
                for (const auto& a : first)  // the assign named ahead is the one the request gets
                    if (ahead.work.count > 0 && a.what == pfarm::farmer_action::kind::send && a.worker == w &&
                        a.reply.what == pfarm::reply_message::kind::assign)
                        EXPECT_TRUE(a.reply.work == ahead.work) << name << ": worker " << w << " was named ["
                                                               << ahead.work.first << ", +" << ahead.work.count << ")";
                farmer_acts(first);
                farmer_acts(farm.settle());
            } else {
                farmer_acts(farm.on_message(w, msg, now));
            }
        } else if (m < 2 * p) {
            const pfarm::reply_message r = down[j].front();
            if (r.what != pfarm::reply_message::kind::reclaim) {
                down[j].pop_front();
                worker_acts(w, s.on_reply(r));
            } else if (!s.computing()) {
                down[j].pop_front();
                worker_acts(w, s.on_reclaim(r, 0, 0.0));
            } else {
                const pfarm::chunk c = s.current();
                const task_count lo = std::max(next[j], c.first + 1), hi = c.first + c.count - 1;
                if (lo > hi) {  // in its last task: it reads the reclaim once the chunk is done
                    finish_chunk(w);
                    continue;
                }
                down[j].pop_front();
                next[j] = std::uniform_int_distribution<task_count>(lo, hi)(rng);
                worker_acts(w, s.on_reclaim(r, next[j], unit(rng) < 0.2 ? 0.0 : 0.5 + unit(rng)));
            }
        } else if (s.ask_at() >= 0 && unit(rng) < 0.5) {  // prefetch: it reaches the task before which it asks ahead
            next[j] = std::max(next[j], s.ask_at());
            worker_acts(w, s.on_boundary(s.ask_at()));
        } else {
            finish_chunk(w);
        }
    }
    EXPECT_TRUE(farm.over()) << name << ": the farm did not end";
    EXPECT_TRUE(farm.decisions().done()) << name << ": " << farm.decisions().remaining() << " tasks never handed out";
    for (int w = 0; w < p; ++w) EXPECT_TRUE(workers[static_cast<std::size_t>(w)].ended()) << "worker " << w << " did not end";
    out.reclaims = farm.decisions().reclaims();
    return out;
}

class EveryTechnique : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryTechnique, ChunksCoverTheLoopExactlyOnce) {
    const std::string name = GetParam();
    std::mt19937_64 rng(std::hash<std::string>{}(name));
    for (int trial = 0; trial < 60; ++trial) {
        const int p = std::uniform_int_distribution<int>(1, 12)(rng);
        const task_count tasks = trial % 5 == 0 ? std::uniform_int_distribution<task_count>(1, 2 * p)(rng)
                                                : std::uniform_int_distribution<task_count>(1, 5000)(rng);
        const auto o = random_options(rng, p, trial % 2 == 0);
        SCOPED_TRACE(name + " I=" + std::to_string(tasks) + " p=" + std::to_string(p) + " trial " + std::to_string(trial));
        const auto drive = random_drive(name, tasks, p, o, rng(), trial % 3 == 1);  // a third with prefetch
        const auto& handouts = drive.handouts;
        EXPECT_TRUE(std::all_of(drive.delivered.begin(), drive.delivered.end(), [](int c) { return c == 1; }));
        EXPECT_TRUE(std::all_of(drive.computed.begin(), drive.computed.end(), [](int c) { return c == 1; }));
        std::vector<int> seen(static_cast<std::size_t>(tasks), 0);
        task_count sum = 0;
        for (std::size_t i = 0; i < handouts.size(); ++i) {
            const auto& h = handouts[i];
            ASSERT_GE(h.work.count, 1);
            ASSERT_GE(h.work.first, 0);
            ASSERT_LE(h.work.first + h.work.count, tasks);
            for (task_count t = h.work.first; t < h.work.first + h.work.count; ++t) ++seen[static_cast<std::size_t>(t)];
            sum += h.work.count;
            if (h.calibration) {
                EXPECT_EQ(h.work.count, 1);
            } else if (sum != tasks) {  // every chunk but the one that takes the last tasks
                EXPECT_GE(h.work.count, o.min_chunk);
            }
        }
        EXPECT_EQ(sum, tasks);
        EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
    }
}

/// receive() then settle() (the MPI farmer's way) hands out exactly what on_message() does, in the same order, with and without prefetch and reclaim, and every task's
/// results arrive once.
TEST_P(EveryTechnique, ReplyFirstMakesOnMessagesDecisions) {
    const std::string name = GetParam();
    std::mt19937_64 rng(std::hash<std::string>{}(name) + 1);
    for (int trial = 0; trial < 24; ++trial) {
        const int p = std::uniform_int_distribution<int>(1, 8)(rng);
        const task_count tasks = std::uniform_int_distribution<task_count>(1, 2000)(rng);
        const auto o = random_options(rng, p, trial % 2 == 0);
        const std::uint64_t seed = rng();
        const bool prefetch = trial % 3 == 1, reclaim = trial % 4 == 3;
        SCOPED_TRACE(name + " I=" + std::to_string(tasks) + " p=" + std::to_string(p) + " trial " + std::to_string(trial));
        const auto a = random_drive(name, tasks, p, o, seed, prefetch, reclaim);
        const auto b = random_drive(name, tasks, p, o, seed, prefetch, reclaim, true);
        ASSERT_EQ(a.handouts.size(), b.handouts.size());
        for (std::size_t i = 0; i < a.handouts.size(); ++i) {
            EXPECT_EQ(a.handouts[i].worker, b.handouts[i].worker);
            EXPECT_EQ(a.handouts[i].work, b.handouts[i].work);
            EXPECT_EQ(a.handouts[i].calibration, b.handouts[i].calibration);
        }
        EXPECT_TRUE(std::all_of(b.delivered.begin(), b.delivered.end(), [](int c) { return c == 1; }));
        EXPECT_EQ(a.reclaims, b.reclaims);
    }
}

/// farmer::upcoming() (the chunk receive() sends before the farmer decides it) is the chunk the next request
/// assigns, whenever it names one, whether the worker's results are completed before the request or after it
/// (reply first); it names one for a technique of constant chunk size past calibration, and never for another.
TEST_P(EveryTechnique, UpcomingIsTheChunkTheNextRequestAssigns) {
    const std::string name = GetParam();
    std::mt19937_64 rng(std::hash<std::string>{}(name) + 2);
    const auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    int known = 0;
    bool constant = false;
    for (int trial = 0; trial < 20; ++trial) {
        const int p = pick(1, 6);
        const task_count tasks = pick(1, 500);
        const auto o = random_options(rng, p, trial % 2 == 0);
        auto policy = pfarm::make_technique(name, o, p);
        constant = policy->constant_chunk() > 0;
        pfarm::farmer f(tasks, p, std::move(policy), o.min_chunk, 1, false, false, nullptr, 0.0, predictor());
        SCOPED_TRACE(name + " I=" + std::to_string(tasks) + " p=" + std::to_string(p) + " trial " + std::to_string(trial));
        std::vector<char> stopped(static_cast<std::size_t>(p), 0);
        for (int step = 0; step < 100000 && !f.done(); ++step) {
            const int w = pick(0, p - 1);
            if (stopped[static_cast<std::size_t>(w)]) continue;
            const bool holds = f.held(w) > 0, first = holds && !f.calibrating() && pick(0, 1) == 1;
            pfarm::resource_sample sample;  // what a statistical calibration fits to
            sample.availability = 0.3 + 0.1 * w;
            sample.latency = 1e-4 * (w + 1);
            sample.benchmark = 100.0 + 7.0 * w * w;
            const auto complete = [&] {
                f.complete(w, 1e-3 * (w + 1) * static_cast<double>(f.in_flight(w, 0).count), &sample);
            };
            if (holds && !first) complete();
            const pfarm::chunk u = f.upcoming(w);
            const pfarm::decision d = f.request(w, 0.0, first);
            if (first) complete();
            if (u.count > 0) {
                ++known;
                EXPECT_EQ(d.what, pfarm::decision::kind::assign);
                EXPECT_EQ(d.work, u);
            }
            if (d.what == pfarm::decision::kind::stop) stopped[static_cast<std::size_t>(w)] = 1;
        }
        EXPECT_TRUE(f.done());
    }
    if (constant) EXPECT_GT(known, 0);
    else EXPECT_EQ(known, 0);
}

TEST(FarmerSession, ReceiveAnswersBeforeTheResultsAndSettleTakesThemOrRefusesOtherCalls) {
    double now = 1.0;
    pfarm::farmer_session farm(10, 1, pfarm::make_technique("ss", {}, 1), {.clock = [&now] { return now; }});
    pfarm::request_message ask;
    auto first = farm.receive(0, ask);  // nothing in hand: all of it at once
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(first[0].what, pfarm::farmer_action::kind::send);
    EXPECT_TRUE(farm.settle().empty());
    // The chunk known ahead (ss: the next one), named before the request comes.
    EXPECT_EQ(farm.upcoming(0).what, pfarm::reply_message::kind::assign);
    EXPECT_EQ(farm.upcoming(0).work, (pfarm::chunk{1, 1}));
    ask.done = first[0].reply.work;
    ask.seconds = 0.5;
    const auto& reply = farm.receive(0, ask);  // results in hand: the reply only
    ASSERT_EQ(reply.size(), 1u);
    EXPECT_EQ(reply[0].what, pfarm::farmer_action::kind::send);
    EXPECT_EQ(reply[0].reply.work, (pfarm::chunk{1, 1}));
    EXPECT_THROW(farm.on_message(0, ask), pfarm::internal_error);  // settle() first
    EXPECT_THROW(farm.receive(0, ask), pfarm::internal_error);
    EXPECT_THROW(farm.upcoming(0), pfarm::internal_error);
    EXPECT_THROW(farm.on_timer(now), pfarm::internal_error);
    const auto& rest = farm.settle();
    ASSERT_EQ(rest.size(), 1u);
    EXPECT_EQ(rest[0].what, pfarm::farmer_action::kind::deliver);
    EXPECT_EQ(rest[0].results, (pfarm::chunk{0, 1}));
    EXPECT_EQ(farm.tasks_of(0), 1);
    EXPECT_EQ(farm.chunks_of(0).size(), 2u);  // the hand-out, recorded in settle()
    EXPECT_THROW(farm.settle(), pfarm::internal_error);  // nothing to settle
    ask.done = {1, 1};
    farm.receive(0, ask);
    EXPECT_TRUE(farm.abort("gone").empty());  // it computes (its next message is answered abort); nothing left to settle
    EXPECT_EQ(farm.tasks_of(0), 1);
    EXPECT_TRUE(farm.aborting());
    // A technique whose chunk sizes are not constant: never known ahead; answered first once calibration is past.
    pfarm::farmer_session gss(100, 1, pfarm::make_technique("gss", {}, 1), {.clock = [&now] { return now; }});
    pfarm::request_message next;
    const pfarm::chunk c = gss.receive(0, next)[0].reply.work;
    gss.settle();
    EXPECT_EQ(gss.upcoming(0).work.count, 0);
    next.done = c;
    ASSERT_EQ(gss.receive(0, next).size(), 1u);
    ASSERT_EQ(gss.settle().size(), 1u);  // its results
    // Timed: the same two phases with the driver's times (no clock needed).
    pfarm::farmer_session timed(4, 1, pfarm::make_technique("ss", {}, 1));
    pfarm::request_message t;
    EXPECT_THROW(timed.receive(0, t), pfarm::internal_error);  // no clock, no time
    t.done = timed.receive(0, t, 0.0)[0].reply.work;
    timed.settle();
    EXPECT_EQ(timed.receive(0, t, 1.0)[0].reply.work, (pfarm::chunk{1, 1}));
    EXPECT_EQ(timed.settle()[0].results, (pfarm::chunk{0, 1}));
}

/// The worker session builds every request: the plain ask with the chunk's results comes first among
/// on_chunk_done()'s actions, with the chunk's times.
TEST(WorkerSession, ChunkDoneSendsThePlainAskFirst) {
    pfarm::worker_session plain;
    plain.start();
    pfarm::reply_message r = assign(0, 4);
    plain.on_reply(r);
    const auto done = plain.on_chunk_done(1.0, 0.5, 1.5);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].what, pfarm::worker_action::kind::send);
    EXPECT_EQ(done[0].message.what, pfarm::request_message::kind::ask);
    EXPECT_EQ(done[0].message.done, (pfarm::chunk{0, 4}));
    EXPECT_EQ(done[0].message.seconds, 1.0);
    EXPECT_EQ(done[0].message.started, 0.5);
    EXPECT_EQ(done[0].message.finished, 1.5);
    EXPECT_FALSE(done[0].readings);
    EXPECT_FALSE(plain.computing());
    EXPECT_THROW(plain.on_chunk_done(1.0, 0.0, 1.0), pfarm::internal_error);  // nothing computed

    pfarm::worker_session readings({.readings_each = true});  // its requests carry readings: the session says so
    readings.start();
    readings.on_reply(r);
    const auto with = readings.on_chunk_done(1.0, 0.0, 1.0);
    ASSERT_EQ(with.size(), 1u);
    EXPECT_TRUE(with[0].readings);

    pfarm::worker_session prefetch({.prefetch = true, .prefetch_lead = 0.5});
    prefetch.start();
    prefetch.on_reply(r);
    const auto ahead = prefetch.on_boundary(prefetch.ask_at());  // the request ahead is out
    ASSERT_EQ(ahead.size(), 1u);
    EXPECT_EQ(ahead[0].message.done.count, 0);
    EXPECT_TRUE(prefetch.on_chunk_done(0.01, 0.0, 0.01).empty());  // the results wait for its reply (tasks short)
}

TEST_P(EveryTechnique, Deterministic) {
    const std::string name = GetParam();
    std::mt19937_64 rng(7);
    const auto o = random_options(rng, 5, true);
    std::vector<pfarm::resource_sample> samples(5);
    for (int j = 0; j < 5; ++j) {
        samples[static_cast<std::size_t>(j)].availability = 0.2 + 0.15 * j;
        samples[static_cast<std::size_t>(j)].latency = 1e-4 * (5 - j);
    }
    const auto a = pfarm::schedule_round_robin(name, 3000, 5, o, samples, predictor());
    const auto b = pfarm::schedule_round_robin(name, 3000, 5, o, samples, predictor());
    ASSERT_EQ(a.handouts.size(), b.handouts.size());
    for (std::size_t i = 0; i < a.handouts.size(); ++i) {
        EXPECT_EQ(a.handouts[i].worker, b.handouts[i].worker);
        EXPECT_EQ(a.handouts[i].work, b.handouts[i].work);
    }
}

TEST_P(EveryTechnique, MoreWorkersThanTasksStopTheSurplus) {
    const std::string name = GetParam();
    std::mt19937_64 rng(11);
    const auto o = random_options(rng, 8, false);
    std::vector<pfarm::resource_sample> samples(8);
    for (int j = 0; j < 8; ++j) samples[static_cast<std::size_t>(j)].availability = 0.1 * (j + 1), samples[static_cast<std::size_t>(j)].latency = 1e-3 / (j + 1);
    const auto s = pfarm::schedule_round_robin(name, 3, 8, o, samples, predictor());
    task_count sum = 0;
    for (const auto& h : s.handouts) sum += h.work.count;
    EXPECT_EQ(sum, 3);
}

TEST_P(EveryTechnique, RejectsZeroTasks) {
    std::mt19937_64 rng(3);
    const auto o = random_options(rng, 2, false);
    EXPECT_THROW(pfarm::schedule_round_robin(GetParam(), 0, 2, o), pfarm::invalid_argument);
}

TEST_P(EveryTechnique, ReclaimKeepsEveryTaskExactlyOnce) {
    const std::string name = GetParam();
    std::mt19937_64 rng(std::hash<std::string>{}(name) ^ 0x5eed);
    task_count moved[2] = {0, 0};
    for (int trial = 0; trial < 40; ++trial) {
        const int p = std::uniform_int_distribution<int>(1, 10)(rng);
        const task_count tasks = trial % 5 == 0 ? std::uniform_int_distribution<task_count>(1, 2 * p)(rng)
                                                : std::uniform_int_distribution<task_count>(1, 3000)(rng);
        const auto o = random_options(rng, p, trial % 2 == 0);
        SCOPED_TRACE(name + " I=" + std::to_string(tasks) + " p=" + std::to_string(p) + " trial " + std::to_string(trial));
        for (bool prefetch : {false, true}) {
            SCOPED_TRACE(prefetch ? "prefetch" : "no prefetch");
            const auto drive = random_drive(name, tasks, p, o, rng(), prefetch, true);
            EXPECT_TRUE(std::all_of(drive.computed.begin(), drive.computed.end(), [](int c) { return c == 1; }));
            EXPECT_TRUE(std::all_of(drive.delivered.begin(), drive.delivered.end(), [](int c) { return c == 1; }));
            moved[prefetch] += drive.reclaims;
        }
    }
    EXPECT_GT(moved[0], 0) << "no reclaim ever moved a task: the drive does not exercise reclaim";
    EXPECT_GT(moved[1], 0) << "no reclaim ever moved a task with prefetch";
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryTechnique, ::testing::ValuesIn(technique_names()),
                         [](const auto& info) {
                             std::string n = info.param;
                             std::replace(n.begin(), n.end(), '-', '_');
                             return n;
                         });

/// A worker with prefetch whose first chunk [0, 10) ends (10 s, 1 s a task) before the reply asked ahead: the
/// actions of on_chunk_done.
pfarm::worker_session::actions chunk_ends_before_its_reply(pfarm::worker_session& w) {
    w.start();
    w.on_reply(assign(0, 10));
    EXPECT_TRUE(w.computing());
    EXPECT_GT(w.ask_at(), 0);
    const auto ahead = w.on_boundary(w.ask_at());
    EXPECT_EQ(ahead.size(), 1u);
    EXPECT_EQ(ahead[0].message.what, pfarm::request_message::kind::ask);
    EXPECT_EQ(ahead[0].message.done.count, 0);
    return w.on_chunk_done(10.0, 0.0, 10.0);
}

}  // namespace

TEST(WorkerSession, ResultsOfAChunkThatEndsBeforeItsReplyGoAtOnceUnlessARequestWouldGoWithThem) {
    // Tasks long against the lead: no request would go at once after the reply, so the results go now.
    pfarm::worker_session long_tasks({.prefetch = true, .prefetch_lead = 1e-3});
    const auto now = chunk_ends_before_its_reply(long_tasks);
    ASSERT_EQ(now.size(), 1u);
    EXPECT_EQ(now[0].what, pfarm::worker_action::kind::send);
    EXPECT_EQ(now[0].message.what, pfarm::request_message::kind::results);
    EXPECT_EQ(now[0].message.done.first, 0);
    EXPECT_EQ(now[0].message.done.count, 10);
    // The reply then finds nothing in hand: the next chunk starts, with no results to send.
    const auto after = long_tasks.on_reply(assign(10, 10));
    ASSERT_EQ(after.size(), 1u);
    EXPECT_EQ(after[0].what, pfarm::worker_action::kind::compute);
    // Short tasks (the lead covers a chunk): the results wait for the reply, to go with the request after it.
    pfarm::worker_session short_tasks({.prefetch = true, .prefetch_lead = 100.0});
    EXPECT_EQ(chunk_ends_before_its_reply(short_tasks).size(), 0u);
    // A driver that cannot send while the reply may come holds them too.
    pfarm::worker_session held({.prefetch = true, .prefetch_lead = 1e-3, .results_early = false});
    EXPECT_EQ(chunk_ends_before_its_reply(held).size(), 0u);
}
