// Fuzzes the farmer session (pfarm/farmer_session.hpp) with event sequences decoded from the input: a farm of
// 1-8 workers and 1-400 tasks, a technique from the registry, prefetch and reclaim on or off, some options and
// weights, then events in an order the input picks among those a real farm allows. Each worker is a real
// worker_session (pfarm/worker_session.hpp), so that every message is one a worker could send; the transport is
// the MPI engine's: per worker, requests arrive in the order sent, a victim's `released` travels apart (its own
// tag), so what the worker sends after it may overtake it (finding F1), replies arrive in the order sent; anything
// else interleaves freely. A worker computes its chunk task by task (a reclaim is read between two tasks); up to
// twice per run, a task fails or the farmer itself fails (abort), with or without reclaim (findings F2, F3). With
// stragglers on, the driver's timer fires whenever the session has a deadline (the clock jumps to it), so that
// chunks become overdue, are re-executed in pieces and cancelled. When the input runs out, the farm runs on in a
// fixed order until nothing can happen.
// Invariants, after every event: every chunk handed out is within the tasks and made only of tasks nobody holds
// (so each task is assigned to one worker at a time, a reclaimed range only once given back unstarted), but for
// a piece of a chunk re-executed (stragglers: tasks held by one other worker, none delivered); a task is computed
// once (twice at most with stragglers); results are delivered only by a worker holding them, for tasks it
// computed, each task once; the farmer's
// completed count is the delivered count; nothing is sent to a worker after its abort, nor after its stop but
// the abort answering its own failure; the session
// never throws (an internal_error is a bug). At the end: the session is over exactly when every worker has
// ended and no message is left; without a failure every task was computed exactly once and delivered once, and
// the outcome is ok; with one, the outcome says so.
// For an odd number of tasks the farmer takes each message in two phases, receive() then settle(), as the MPI farmer
// does, and checks that an assign it answers with is the one upcoming() named before (decided from a value drawn
// anyway, so that the corpus decodes as before); otherwise on_message(), as the simulator does.
#include "fuzz_support.hpp"

#include "pfarm/farmer_session.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/worker_session.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

using pfarm::fuzz::check;
using pfarm::fuzz::fail;
using pfarm::task_count;

unsigned bit(int w) { return 1u << w; }

struct worker {
    explicit worker(const pfarm::worker_session_options& o) : session(o) {}
    pfarm::worker_session session;
    std::deque<pfarm::request_message> requests;  // to the farmer, in order (tag_request)
    std::deque<pfarm::request_message> released;  // to the farmer, apart (tag_released)
    std::deque<pfarm::reply_message> replies;     // from the farmer, in order
    task_count next = 0;                          // computing: the first task of its chunk not started
    task_count done_in_chunk = 0;                 // tasks of its chunk computed
    double started = 0.0;
    bool stopped = false, aborted = false;        // the farmer sent it stop / abort
    bool failed = false;
};

class farm {
public:
    explicit farm(FuzzedDataProvider& in) : in_(in) {}

    void run() {
        const int p = in_.ConsumeIntegralInRange(1, 8);
        tasks_ = in_.ConsumeIntegralInRange<task_count>(1, 400);
        const auto all = pfarm::techniques();
        technique_ = all[in_.ConsumeIntegralInRange<std::size_t>(0, all.size() - 1)].name;
        const bool prefetch = in_.ConsumeBool(), reclaim = in_.ConsumeBool();
        stragglers_ = in_.ConsumeBool();
        // Up to two failures (a task, or the farmer itself): a worker whose request ahead reaches an aborting
        // farmer before its own failure message (finding F2), a victim that fails while a reclaim is on its way
        // to it (finding F3).
        failures_ = in_.ConsumeIntegralInRange(0, 2);
        pfarm::technique_options o;
        o.chunk = in_.ConsumeIntegralInRange<task_count>(1, 32);
        o.min_chunk = in_.ConsumeIntegralInRange<task_count>(1, 4);
        if (in_.ConsumeBool())
            for (int w = 0; w < p; ++w) o.weights.push_back(in_.ConsumeIntegralInRange(1, 8));
        for (int w = 0; w < p; ++w) seconds_per_task_.push_back(1e-3 * in_.ConsumeIntegralInRange(1, 50));
        std::unique_ptr<pfarm::technique> policy;
        try {
            policy = pfarm::make_technique(technique_, o, p);
        } catch (const pfarm::invalid_argument&) {
            return;  // a technique that needs an option not drawn here
        }
        reply_first_ = tasks_ % 2 == 1;
        what_ = technique_ + (prefetch ? " +prefetch" : "") + (reclaim ? " +reclaim" : "") +
                (stragglers_ ? " +stragglers" : "") + (reply_first_ ? " +reply first" : "") + ", " + std::to_string(p) +
                " workers, " + std::to_string(tasks_) + " tasks";
        session_ = std::make_unique<pfarm::farmer_session>(
            tasks_, p, std::move(policy),
            pfarm::farmer_session_options{.min_chunk = o.min_chunk, .prefetch = prefetch, .reclaim = reclaim,
                                          .request_cost = 1e-4, .keep_records = true,
                                          .stragglers = {stragglers_ ? 2.0 : 0.0, 1e-3},
                                          .clock = [this] { return now_; }});
        holders_.assign(static_cast<std::size_t>(tasks_), 0u);
        computed_by_.assign(static_cast<std::size_t>(tasks_), 0u);
        delivered_by_.assign(static_cast<std::size_t>(tasks_), -1);
        computed_.assign(static_cast<std::size_t>(tasks_), 0);
        const auto& needs = session_->needs();
        for (int w = 0; w < p; ++w)
            workers_.emplace_back(pfarm::worker_session_options{.prefetch = prefetch,
                                                                .prefetch_lead = 2e-3,
                                                                .readings_each = !needs.with_every_request.empty(),
                                                                .readings_calibration = !needs.with_calibration.empty()});
        for (int w = 0; w < p; ++w) perform(w, workers_[static_cast<std::size_t>(w)].session.start());
        for (long step = 0;; ++step) {
            if (step > 1'000'000) fail(what_ + ": no end after a million events");
            if (!event()) break;
            invariants();
        }
        finished();
    }

private:
    enum kind { farmer_request, farmer_released, reply, compute, task_fails, farmer_fails, timer, kinds };

    worker& at(int w) { return workers_[static_cast<std::size_t>(w)]; }
    unsigned& holders(task_count t) { return holders_[static_cast<std::size_t>(t)]; }
    int p() const { return static_cast<int>(workers_.size()); }

    bool possible(kind k, int w) {
        worker& x = at(w);
        switch (k) {
        // A victim's `released` may be overtaken by what it sends after it (finding F1).
        case farmer_request: return !x.requests.empty();
        case farmer_released: return !x.released.empty();
        case reply: return !x.replies.empty();
        case compute: return x.session.computing();
        case task_fails:  // the farm may be aborting already
            return failures_ > 0 && x.session.computing() && !x.failed;
        case farmer_fails: return w == 0 && failures_ > 0 && !session_->aborting() && !session_->over();
        case timer: return w == 0 && session_->deadline() < std::numeric_limits<double>::infinity();
        default: return false;
        }
    }

    /// One event, the input choosing which of those possible (the first possible from its choice on). False when
    /// none is possible: the farm has ended or is stuck.
    bool event() {
        const int choices = kinds * p();
        const int from = in_.ConsumeIntegralInRange(0, choices - 1);
        for (int i = 0; i < choices; ++i) {
            const int c = (from + i) % choices;
            const auto k = static_cast<kind>(c % kinds);
            const int w = c / kinds;
            if (!possible(k, w)) continue;
            now_ += 1e-4 * in_.ConsumeIntegralInRange(0, 3);
            happen(k, w);
            return true;
        }
        return false;
    }

    void happen(kind k, int w) {
        worker& x = at(w);
        if (verbose_) {
            static const char* names[] = {"farmer<-request", "farmer<-released", "reply->", "compute", "task fails",
                                          "farmer fails", "timer"};
            std::fprintf(stderr, "t=%.4f %s worker %d", now_, names[k], w);
            if (k == farmer_request || k == farmer_released) {
                const auto& m = k == farmer_request ? x.requests.front() : x.released.front();
                std::fprintf(stderr, " kind %d done [%lld,+%lld)", static_cast<int>(m.what),
                             static_cast<long long>(m.done.first), static_cast<long long>(m.done.count));
            } else if (k == reply) {
                const auto& r = x.replies.front();
                std::fprintf(stderr, " kind %d work [%lld,+%lld)", static_cast<int>(r.what),
                             static_cast<long long>(r.work.first), static_cast<long long>(r.work.count));
            } else if (k == compute) {
                std::fprintf(stderr, " next %lld of [%lld,+%lld)", static_cast<long long>(x.next),
                             static_cast<long long>(x.session.current().first), static_cast<long long>(x.session.current().count));
            }
            std::fprintf(stderr, "\n");
        }
        switch (k) {
        case farmer_request: {
            const pfarm::request_message m = x.requests.front();
            x.requests.pop_front();
            farmer_handles(w, m);
            return;
        }
        case farmer_released: {
            const pfarm::request_message m = x.released.front();
            x.released.pop_front();
            farmer_handles(w, m);
            return;
        }
        case reply: {
            const pfarm::reply_message r = x.replies.front();
            x.replies.pop_front();
            if (r.what == pfarm::reply_message::kind::reclaim) {
                const bool computing = x.session.computing();
                const double pace = computing && x.done_in_chunk > 0 ? seconds_per_task_[static_cast<std::size_t>(w)] : 0.0;
                perform(w, x.session.on_reclaim(r, computing ? x.next : 0, pace));
                if (computing) {
                    const pfarm::chunk c = x.session.current();
                    check(x.next <= c.first + c.count, what_ + ": a reclaim took back a started task of worker " + std::to_string(w));
                }
            } else {
                perform(w, x.session.on_reply(r));
            }
            return;
        }
        case compute: {
            const pfarm::chunk c = x.session.current();
            if (x.next < c.first + c.count) {
                if (x.session.ask_at() >= 0 && x.next >= x.session.ask_at()) perform(w, x.session.on_boundary(x.next));
                const task_count t = x.next++;
                check(t >= 0 && t < tasks_, what_ + ": worker " + std::to_string(w) + " computes task " + std::to_string(t));
                check((holders(t) & bit(w)) != 0, what_ + ": worker " + std::to_string(w) + " computes task " +
                                                      std::to_string(t) + ", which the farmer did not give it");
                check(++computed_[static_cast<std::size_t>(t)] <= (stragglers_ ? 2 : 1),
                      what_ + ": task " + std::to_string(t) + " computed " + std::to_string(computed_[static_cast<std::size_t>(t)]) + " times");
                computed_by_[static_cast<std::size_t>(t)] |= bit(w);
                ++x.done_in_chunk;
            } else {
                const double seconds = static_cast<double>(x.done_in_chunk) * seconds_per_task_[static_cast<std::size_t>(w)];
                perform(w, x.session.on_chunk_done(seconds, x.started, x.started + seconds));
            }
            return;
        }
        case task_fails: {
            --failures_;
            failed_ = x.failed = true;
            const task_count task = x.next;
            perform(w, x.session.on_failure(in_.ConsumeBool() ? task : -1, "fuzz: the task threw"));
            return;
        }
        case farmer_fails:
            --failures_;
            failed_ = true;
            farmer_acts(session_->abort("fuzz: the farmer failed"));
            return;
        case timer:  // the driver's clock reaches the session's deadline
            now_ = std::max(now_, session_->deadline());
            farmer_acts(session_->on_timer(now_));
            return;
        default: return;
        }
    }

    /// The worker's actions: its messages leave, a chunk starts.
    void perform(int w, pfarm::worker_session::actions actions) {
        worker& x = at(w);
        for (const auto& a : actions) {
            if (a.what == pfarm::worker_action::kind::compute) {
                check(a.work.count >= 1, what_ + ": an empty chunk to compute");
                x.next = a.work.first;
                x.done_in_chunk = 0;
                x.started = now_;
                continue;
            }
            pfarm::request_message m = a.message;
            if (a.readings) {
                m.has_sample = true;
                m.sample.availability = 0.25 + 0.25 * (w % 4);
                m.sample.run_queue = 1.0 + (w % 3);
                m.sample.load1 = 1.0;
                m.sample.latency = 1e-4 * (1 + w);
                m.sample.benchmark = 100.0 * (1 + w);
            }
            // A victim gives back the unstarted end of a chunk it holds: it will not compute those tasks, which
            // the farmer may hand out again once it knows (from this message, or from the results it sends next).
            if (m.what == pfarm::request_message::kind::released)
                for (task_count t = m.done.first; t < m.done.first + m.done.count; ++t) {
                    check(t >= 0 && t < tasks_ && holders(t) == bit(w) && computed_[static_cast<std::size_t>(t)] == 0,
                          what_ + ": worker " + std::to_string(w) + " gives back task " + std::to_string(t) +
                              " that it does not hold unstarted, alone");
                    holders(t) = 0;
                }
            (m.what == pfarm::request_message::kind::released ? x.released : x.requests).push_back(m);
        }
    }

    void farmer_handles(int w, const pfarm::request_message& m) {
        try {
            if (reply_first_) {  // the upcoming assign named first, as the MPI farmer writes it while it waits
                const pfarm::reply_message ahead = session_->upcoming(w);
                const auto& first = session_->receive(w, m, now_);
                for (const auto& a : first)
                    if (ahead.work.count > 0 && a.what == pfarm::farmer_action::kind::send && a.worker == w &&
                        a.reply.what == pfarm::reply_message::kind::assign)
                        check(a.reply.work == ahead.work, what_ + ": worker " + std::to_string(w) +
                                                              " was assigned another chunk than upcoming() named");
                farmer_acts(first);
                farmer_acts(session_->settle());
            } else {
                farmer_acts(session_->on_message(w, m, now_));
            }
        } catch (const std::exception& e) {
            fail(what_ + ": the farmer session threw on a message of kind " + std::to_string(static_cast<int>(m.what)) +
                 " from worker " + std::to_string(w) + ": " + e.what());
        }
    }

    void farmer_acts(const std::vector<pfarm::farmer_action>& actions) {
        using pfarm::reply_message;
        for (const auto& a : actions) {
            check(a.worker >= 0 && a.worker < p(), what_ + ": an action for worker " + std::to_string(a.worker));
            worker& x = at(a.worker);
            const std::string who = what_ + ": worker " + std::to_string(a.worker);
            switch (a.what) {
            case pfarm::farmer_action::kind::deliver:
                check(!failed_ || !session_->aborting(), who + ": results delivered after the abort");
                for (task_count t = a.results.first; t < a.results.first + a.results.count; ++t) {
                    check(t >= 0 && t < tasks_, who + ": results of task " + std::to_string(t));
                    const auto i = static_cast<std::size_t>(t);
                    check((computed_by_[i] & bit(a.worker)) != 0, who + ": delivers task " + std::to_string(t) +
                                                                       ", which it did not compute");
                    check(delivered_by_[i] < 0, who + ": delivers task " + std::to_string(t) + ", delivered already by " +
                                                    std::to_string(delivered_by_[i]));
                    delivered_by_[i] = a.worker;
                    ++delivered_;
                }
                break;
            case pfarm::farmer_action::kind::park:
                check(!x.stopped && !x.aborted, who + ": parked after its stop or abort");
                break;
            case pfarm::farmer_action::kind::send:
                // After a stop, only the abort that answers its own failure (a failed worker waits for it), or a cancel
                // of the chunk it computes (stragglers).
                check(!x.aborted && (!x.stopped || (x.failed && a.reply.what == reply_message::kind::abort) ||
                                     a.reply.what == reply_message::kind::cancel),
                      who + ": sent reply kind " + std::to_string(static_cast<int>(a.reply.what)) + " after its stop or abort");
                if (a.reply.what == reply_message::kind::assign) {
                    const pfarm::chunk c = a.reply.work;
                    check(c.count >= 1 && c.first >= 0 && c.first + c.count <= tasks_,
                          who + ": chunk [" + std::to_string(c.first) + ", +" + std::to_string(c.count) + ") out of the tasks");
                    for (task_count t = c.first; t < c.first + c.count; ++t) {
                        const bool piece = stragglers_ && holders(t) != 0 && (holders(t) & bit(a.worker)) == 0;
                        check(delivered_by_[static_cast<std::size_t>(t)] < 0 && (holders(t) == 0 || piece),
                              who + ": gets task " + std::to_string(t) + ", held by mask " + std::to_string(holders(t)) +
                                  ", delivered by " + std::to_string(delivered_by_[static_cast<std::size_t>(t)]));
                        holders(t) |= bit(a.worker);
                    }
                }
                if (a.reply.what == reply_message::kind::stop) x.stopped = true;
                if (a.reply.what == reply_message::kind::abort) x.aborted = true;
                x.replies.push_back(a.reply);
                break;
            }
        }
    }

    void invariants() {
        check(session_->decisions().completed_tasks() == delivered_ || session_->aborting(),
              what_ + ": the farmer counts " + std::to_string(session_->decisions().completed_tasks()) +
                  " tasks completed, " + std::to_string(delivered_) + " delivered");
        // Aborted, a worker may still send what it sent before reading its abort (findings F2, F3): the MPI
        // engine's farm communicator is freed with those messages unreceived, the session ignores them.
        if (session_->over() && !session_->aborting())
            for (int w = 0; w < p(); ++w)
                check(at(w).requests.empty() && at(w).released.empty(),
                      what_ + ": over, with a message of worker " + std::to_string(w) + " still on its way");
    }

    void finished() {
        for (int w = 0; w < p(); ++w) {
            check(at(w).session.ended(), what_ + ": nothing can happen and worker " + std::to_string(w) + " has not ended");
            check(at(w).requests.empty() && at(w).released.empty() && at(w).replies.empty(),
                  what_ + ": messages left for or from worker " + std::to_string(w));
        }
        check(session_->over(), what_ + ": every worker ended, and the session is not over");
        if (failed_) {
            check(session_->outcome().what != pfarm::farm_outcome::kind::ok, what_ + ": a failure, and the outcome is ok");
            return;
        }
        check(session_->outcome().what == pfarm::farm_outcome::kind::ok, what_ + ": no failure, and the outcome is not ok");
        check(delivered_ == tasks_, what_ + ": " + std::to_string(delivered_) + " tasks delivered");
        for (task_count t = 0; t < tasks_; ++t)
            check(computed_[static_cast<std::size_t>(t)] >= 1 && delivered_by_[static_cast<std::size_t>(t)] >= 0,
                  what_ + ": task " + std::to_string(t) + " computed " + std::to_string(computed_[static_cast<std::size_t>(t)]) +
                      " times");
    }

    FuzzedDataProvider& in_;
    const bool verbose_ = std::getenv("PFARM_FUZZ_VERBOSE") != nullptr;  // prints every event (to study a finding)
    std::string technique_, what_;
    task_count tasks_ = 0;
    int failures_ = 0;
    bool failed_ = false;
    double now_ = 0.0;
    std::vector<double> seconds_per_task_;
    std::unique_ptr<pfarm::farmer_session> session_;
    std::vector<worker> workers_;
    bool stragglers_ = false;
    bool reply_first_ = false;  ///< the farmer takes messages in two phases (receive, settle)
    std::vector<unsigned> holders_;      // per task: the workers it was handed to (a bit each), but given back
    std::vector<unsigned> computed_by_;  // per task: the workers that computed it
    std::vector<int> delivered_by_;      // per task: the worker whose results were delivered (-1: none yet)
    std::vector<int> computed_;
    task_count delivered_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    farm f(in);
    f.run();
    return 0;
}
