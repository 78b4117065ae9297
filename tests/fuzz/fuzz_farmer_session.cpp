// Fuzzes the farmer session (pfarm/farmer_session.hpp) with event sequences decoded from the input: a farm of
// 1-8 workers and 1-400 tasks, a technique from the registry, prefetch and reclaim on or off, some options and
// weights, then events in an order the input picks among those a real farm allows. Each worker is a real
// worker_session (pfarm/worker_session.hpp), so that every message is one a worker could send; the transport is
// the MPI engine's: per worker, requests arrive in the order sent, a victim's `released` travels apart (its own
// tag), so what the worker sends after it may overtake it (finding F1), replies arrive in the order sent; anything
// else interleaves freely. A worker computes its chunk task by task (a reclaim is read between two tasks); up to
// twice per run, a task fails or the farmer itself fails (abort), with or without reclaim (findings F2, F3). With
// stragglers on, the driver's timer fires whenever the session has a deadline (the clock jumps to it), so that
// chunks become overdue, are re-executed in pieces and cancelled. The input may turn the loss rule on (go_on or
// stop, a small slack, worker 0 the farmer's own or not; farmer_session_options::worker_loss): then up to twice per
// run a worker goes silent, either dead (it reads nothing and sends nothing more; each message it sent and the
// farmer has not received is delivered or lost, as the input says, but its first request) or slow (alive: it
// goes on later), and the driver's clock runs to the session's deadline, on_timer() after on_timer(), until the
// session presumes it lost (1000 calls past its deadline at most) while it holds a chunk (the timer event does it
// later otherwise, and is the farm's last choice when nothing else can happen). When the input runs out, the farm
// runs on in a fixed order until nothing can happen.
// Invariants, after every event: every chunk handed out is within the tasks and made only of tasks nobody holds
// (so each task is assigned to one worker at a time, a reclaimed range only once given back unstarted), but for
// a piece of a chunk re-executed (stragglers: tasks held by one other worker, none delivered); a task is computed
// once (twice at most with stragglers); results are delivered only by a worker holding them, for tasks it
// computed, each task once; the farmer's
// completed count is the delivered count; nothing is sent to a worker after its abort, nor after its stop but
// the abort answering its own failure; a worker presumed lost is never presumed lost again (nor the own worker),
// its results are never delivered (what it computed and was not delivered does not count, its tasks are nobody's
// until handed out again), it is neither parked nor assigned, and is sent only stop (it asks) or abort (it failed);
// the session never throws (an internal_error is a bug); a dead worker the session waits for (holding a chunk, or
// owing an answer to a reclaim) has a deadline (farmer::silent_past), and is presumed lost within 1000 timer calls
// past it. At the end: no dead worker awaits being presumed lost;
// the session is over exactly when every living worker has ended (one presumed lost, alive, too) and no message
// is left but a lost worker's; without a failure or a loss every task was computed exactly once and delivered
// once, and the outcome is ok; with a failure (one that reached the farmer from a worker not lost), the outcome
// says so; with a loss under stop, the outcome is worker_lost naming the first lost worker; under go_on, with a
// worker never lost, the outcome is ok and every task delivered exactly once (with none left, worker_lost naming
// a lost worker, or ok with every task delivered).
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
    bool heard = false;  // the farmer has had a message from it
    bool dead = false;   // it sends nothing more and reads nothing
    bool lost = false;   // the session presumed it lost (it may be alive: slow)
    bool told_later = false;  // the farmer sent it `later` and has had no request from it since: it owes one
};

class farm {
public:
    explicit farm(FuzzedDataProvider& in) : in_(in) {}

    void run() {
        const int p = in_.ConsumeIntegralInRange(1, 8);
        tasks_ = in_.ConsumeIntegralInRange<task_count>(1, 400);
        // auto is left out: its chunks are its candidates' (drawn here), its choice needs the simulator's predictor
        // (Auto.* and the registry's property tests drive it), and the seeds keep decoding to the techniques they
        // were found with.
        std::vector<std::string> all;
        for (const auto& t : pfarm::techniques())
            if (t.name != "auto") all.push_back(t.name);
        technique_ = all[in_.ConsumeIntegralInRange<std::size_t>(0, all.size() - 1)];
        const bool prefetch = in_.ConsumeBool(), reclaim = in_.ConsumeBool();
        // One byte: bit 0 stragglers; bits 1-3 the loss rule (0-3 off, 4-6 go_on, 7 stop), whose own values are
        // drawn only when it is on, so that an input with it off decodes as it did before lost workers.
        const auto mode = in_.ConsumeIntegral<std::uint8_t>();
        stragglers_ = (mode & 1u) != 0;
        const unsigned loss = (mode >> 1) & 7u;
        if (loss >= 4) {
            loss_ = {loss == 7 ? pfarm::worker_loss_rule::kind::stop : pfarm::worker_loss_rule::kind::go_on,
                     1.0 + in_.ConsumeIntegralInRange(1, 4), 1e-3 * in_.ConsumeIntegralInRange(1, 50)};
            silences_ = 2 - in_.ConsumeIntegralInRange(0, 2);  // two when the input has run out
            own_worker_ = in_.ConsumeBool() ? 0 : -1;
        }
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
                (stragglers_ ? " +stragglers" : "") + (reply_first_ ? " +reply first" : "") +
                (losing() ? " +loss " + pfarm::to_string(loss_) + " x" + std::to_string(loss_.factor) : "") +
                (own_worker_ >= 0 ? " +own worker 0" : "") + ", " + std::to_string(p) +
                " workers, " + std::to_string(tasks_) + " tasks";
        session_ = std::make_unique<pfarm::farmer_session>(
            tasks_, p, std::move(policy),
            pfarm::farmer_session_options{.min_chunk = o.min_chunk, .prefetch = prefetch, .reclaim = reclaim,
                                          .request_cost = 1e-4, .keep_records = true,
                                          .stragglers = {stragglers_ ? 2.0 : 0.0, 1e-3},
                                          .clock = [this] { return now_; },
                                          .worker_loss = loss_,
                                          .own_worker = own_worker_});
        if (verbose_) std::fprintf(stderr, "%s\n", what_.c_str());
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
    // goes_silent only with the loss rule on (kinds_with_loss), so that the choice of an event decodes as before.
    enum kind { farmer_request, farmer_released, reply, compute, task_fails, farmer_fails, timer, kinds,
                goes_silent = kinds, kinds_with_loss };

    worker& at(int w) { return workers_[static_cast<std::size_t>(w)]; }
    unsigned& holders(task_count t) { return holders_[static_cast<std::size_t>(t)]; }
    int p() const { return static_cast<int>(workers_.size()); }
    bool losing() const { return loss_.what != pfarm::worker_loss_rule::kind::off; }
    /// A dead worker the session must still find lost: not lost yet nor aborted, and the session waits for a message
    /// from it (it holds a chunk, owes an answer to a reclaim, or owes the request a `later` asked for).
    /// A thief waiting for its victim's answer: its deadline runs from the answer (farmer.hpp "Lost workers"), which
    /// comes from a living victim or when a dead one is presumed lost.
    bool waits_for_victim(int w) const {
        const std::vector<int> thieves = session_->decisions().thieves();
        return std::find(thieves.begin(), thieves.end(), w) != thieves.end();
    }
    bool awaits_loss(int w) const {
        const worker& x = workers_[static_cast<std::size_t>(w)];
        const auto& d = session_->decisions();
        return x.dead && !x.lost && !x.aborted && !waits_for_victim(w) && (d.held(w) > 0 || d.asked(w) || x.told_later);
    }
    bool any_dead_unlost() const {
        for (int w = 0; w < p(); ++w)
            if (awaits_loss(w)) return true;
        return false;
    }
    /// Every dead worker the session waits for has a deadline (farmer::silent_past): one without would be waited
    /// for for ever.
    bool dead_have_deadlines() const {
        for (int w = 0; w < p(); ++w)
            if (awaits_loss(w) && !(session_->decisions().silent_past(w, loss_) < std::numeric_limits<double>::infinity()))
                return false;
        return true;
    }
    bool overdue_dead() const {
        for (int w = 0; w < p(); ++w)
            if (awaits_loss(w) && session_->decisions().silent_past(w, loss_) < now_) return true;
        return false;
    }
    std::string dead_state() const {
        std::string s;
        for (int w = 0; w < p(); ++w)
            if (awaits_loss(w))
                s += "; worker " + std::to_string(w) + " holds " + std::to_string(session_->decisions().held(w)) +
                     " chunks, silent past " + std::to_string(session_->decisions().silent_past(w, loss_)) + " (now " +
                     std::to_string(now_) + ", deadline " + std::to_string(session_->deadline()) + ")";
        return s;
    }

    bool possible(kind k, int w) {
        worker& x = at(w);
        switch (k) {
        // A victim's `released` may be overtaken by what it sends after it (finding F1).
        case farmer_request: return !x.requests.empty();
        case farmer_released: return !x.released.empty();
        case reply: return !x.replies.empty();
        case compute: return !x.dead && x.session.computing();
        case task_fails:  // the farm may be aborting already
            return failures_ > 0 && !x.dead && x.session.computing() && !x.failed;
        case farmer_fails: return w == 0 && failures_ > 0 && !session_->aborting() && !session_->over();
        case timer:
            if (!losing()) return w == 0 && session_->deadline() < std::numeric_limits<double>::infinity();
            // With the loss rule the session has a deadline until it is over: the timer is needed for stragglers, or
            // to find a dead worker lost. Last of the choices, so that a farm running on calls it only when nothing
            // else can happen.
            return w == p() - 1 && (stragglers_ || any_dead_unlost()) &&
                   session_->deadline() < std::numeric_limits<double>::infinity();
        case goes_silent:
            return silences_ > 0 && w != own_worker_ && !x.dead && !x.lost && !x.session.ended() && !session_->over();
        default: return false;
        }
    }

    /// One event, the input choosing which of those possible (the first possible from its choice on). False when
    /// none is possible: the farm has ended or is stuck.
    bool event() {
        const int n = losing() ? kinds_with_loss : kinds;
        const int choices = n * p();
        const int from = in_.ConsumeIntegralInRange(0, choices - 1);
        for (int i = 0; i < choices; ++i) {
            const int c = (from + i) % choices;
            const auto k = static_cast<kind>(c % n);
            const int w = c / n;
            if (!possible(k, w)) continue;
            now_ += 1e-4 * in_.ConsumeIntegralInRange(0, 3);
            // A dead worker that is not found lost: the timer alone is left, and it must find it within 1000 calls
            // past its deadline (farmer::silent_past; the session looks a few times per slack).
            const bool waiting = k == timer && losing() && any_dead_unlost();
            idle_timers_ = waiting ? idle_timers_ + 1 : 0;
            overdue_timers_ = waiting && overdue_dead() ? overdue_timers_ + 1 : 0;
            if (idle_timers_ > 1000 && !dead_have_deadlines())
                fail(what_ + ": a dead worker the session waits for has no deadline" + dead_state());
            if (overdue_timers_ > 1000)
                fail(what_ + ": a dead worker not presumed lost within 1000 timer calls past its deadline" + dead_state());
            happen(k, w);
            return true;
        }
        return false;
    }

    void happen(kind k, int w) {
        worker& x = at(w);
        if (verbose_) {
            static const char* names[] = {"farmer<-request", "farmer<-released", "reply->", "compute", "task fails",
                                          "farmer fails", "timer", "goes silent"};
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
                ++x.done_in_chunk;
                if (x.lost) return;  // slow: what it computes now is not counted (its tasks went to the others)
                check((holders(t) & bit(w)) != 0, what_ + ": worker " + std::to_string(w) + " computes task " +
                                                      std::to_string(t) + ", which the farmer did not give it");
                check(++computed_[static_cast<std::size_t>(t)] <= (stragglers_ ? 2 : 1),
                      what_ + ": task " + std::to_string(t) + " computed " + std::to_string(computed_[static_cast<std::size_t>(t)]) + " times");
                computed_by_[static_cast<std::size_t>(t)] |= bit(w);
            } else {
                const double seconds = static_cast<double>(x.done_in_chunk) * seconds_per_task_[static_cast<std::size_t>(w)];
                perform(w, x.session.on_chunk_done(seconds, x.started, x.started + seconds));
            }
            return;
        }
        case task_fails: {
            --failures_;
            x.failed = true;  // the farm fails when its message comes (the session drops it from a lost worker)
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
            timer_fires();
            return;
        case goes_silent: silent(w); return;
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
            if (m.what == pfarm::request_message::kind::released && !x.lost)
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
        at(w).heard = true;
        if (m.what == pfarm::request_message::kind::ask) at(w).told_later = false;
        if (m.what == pfarm::request_message::kind::failure && !at(w).lost) failed_ = true;
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

    /// A worker goes silent (the loss rule is on): it dies (sends nothing more; what it sent is still delivered or
    /// lost, as the input says, but for its first request: a worker the farmer never heard of holds nothing to be
    /// found lost by), or it is slow (alive, and sends later). The driver's clock then runs to the session's deadline
    /// until the session presumes it lost, while it holds a chunk at a pace the farmer knows; otherwise the timer
    /// event finds it later.
    void silent(int w) {
        worker& x = at(w);
        --silences_;
        if (in_.ConsumeBool()) {
            x.dead = true;
            x.replies.clear();  // never read; nothing sent to it needs an answer
            for (auto* q : {&x.requests, &x.released}) {
                std::deque<pfarm::request_message> kept;
                for (std::size_t i = 0; i < q->size(); ++i)
                    if ((q == &x.requests && i == 0 && !x.heard) || in_.ConsumeBool()) kept.push_back((*q)[i]);
                q->swap(kept);
            }
        }
        if (verbose_) std::fprintf(stderr, "  worker %d is %s\n", w, x.dead ? "dead" : "slow");
        for (int overdue = 0; !x.lost;) {
            const auto& d = session_->decisions();
            const double deadline = d.silent_past(w, loss_);
            if (x.aborted || x.session.ended() || d.held(w) == 0 || waits_for_victim(w)) break;
            check(deadline < std::numeric_limits<double>::infinity(),
                  what_ + ": worker " + std::to_string(w) + " holds a chunk and has no deadline");
            if (now_ > deadline && ++overdue > 1000)
                fail(what_ + ": worker " + std::to_string(w) + " not presumed lost within 1000 timer calls past its deadline" +
                     dead_state());
            timer_fires();
        }
    }

    /// The driver's clock reaches the session's deadline.
    void timer_fires() {
        now_ = std::max(now_, session_->deadline());
        try {
            farmer_acts(session_->on_timer(now_));
        } catch (const std::exception& e) {
            fail(what_ + ": the farmer session threw on a timer: " + e.what());
        }
    }

    /// The workers the session has presumed lost since the last call: their tasks are nobody's (they went back), and
    /// what they computed and was not delivered is wasted.
    void note_losses() {
        const auto& lost = session_->lost();
        for (; seen_lost_ < lost.size(); ++seen_lost_) {
            const int w = lost[seen_lost_];
            check(w >= 0 && w < p() && w != own_worker_ && !at(w).lost,
                  what_ + ": worker " + std::to_string(w) + " presumed lost (again, or the own worker)");
            at(w).lost = true;
            for (task_count t = 0; t < tasks_; ++t) {
                const auto i = static_cast<std::size_t>(t);
                holders_[i] &= ~bit(w);
                if ((computed_by_[i] & bit(w)) != 0 && delivered_by_[i] < 0) --computed_[i];
            }
        }
    }

    void farmer_acts(const std::vector<pfarm::farmer_action>& actions) {
        using pfarm::reply_message;
        note_losses();
        for (const auto& a : actions) {
            check(a.worker >= 0 && a.worker < p(), what_ + ": an action for worker " + std::to_string(a.worker));
            worker& x = at(a.worker);
            const std::string who = what_ + ": worker " + std::to_string(a.worker);
            check(!x.lost || (a.what == pfarm::farmer_action::kind::send &&
                              (a.reply.what == reply_message::kind::stop || a.reply.what == reply_message::kind::abort)),
                  who + ": presumed lost, and action " + std::to_string(static_cast<int>(a.what)) + " reply kind " +
                      std::to_string(static_cast<int>(a.reply.what)));
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
                if (a.reply.what == reply_message::kind::later) x.told_later = true;
                if (a.reply.what == reply_message::kind::abort) x.aborted = true;
                if (!x.dead) x.replies.push_back(a.reply);
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
                check(at(w).lost || (at(w).requests.empty() && at(w).released.empty()),
                      what_ + ": over, with a message of worker " + std::to_string(w) + " still on its way");
    }

    void finished() {
        if (verbose_)
            std::fprintf(stderr, "end: outcome %d (worker %d), %zu lost, %lld delivered\n",
                         static_cast<int>(session_->outcome().what), session_->outcome().worker, session_->lost().size(),
                         static_cast<long long>(delivered_));
        check(!any_dead_unlost(), what_ + ": nothing can happen, and a dead worker is not presumed lost" + dead_state());
        for (int w = 0; w < p(); ++w) {
            if (at(w).dead) continue;  // its messages were delivered (or lost when it died); it reads nothing
            check(at(w).session.ended(), what_ + ": nothing can happen and worker " + std::to_string(w) + " has not ended" +
                                             (at(w).lost ? " (presumed lost, alive)" : ""));
            check(at(w).requests.empty() && at(w).released.empty() && at(w).replies.empty(),
                  what_ + ": messages left for or from worker " + std::to_string(w));
        }
        check(session_->over(), what_ + ": every worker ended, and the session is not over");
        const auto& lost = session_->lost();
        const auto& outcome = session_->outcome();
        const bool lost_named = outcome.what == pfarm::farm_outcome::kind::worker_lost &&
                                std::find(lost.begin(), lost.end(), outcome.worker) != lost.end();
        if (!failed_ && !lost.empty()) {
            if (loss_.what == pfarm::worker_loss_rule::kind::stop) {
                check(lost_named && outcome.worker == lost.front(),
                      what_ + ": stop on a loss, and the outcome does not name the first lost worker");
                return;
            }
            // go_on: the farm ends with every result while a worker is left (none is stopped while tasks may still
            // come back); with none left, it may stop.
            const bool survivor = std::any_of(workers_.begin(), workers_.end(), [](const worker& x) { return !x.lost; });
            if (!survivor && outcome.what != pfarm::farm_outcome::kind::ok) {
                check(lost_named, what_ + ": every worker lost, and the outcome does not name one");
                return;
            }
        }
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
    pfarm::worker_loss_rule loss_;  ///< off unless the input turns it on
    int own_worker_ = -1;
    int silences_ = 0;              ///< workers left to go silent (die, or be slow)
    std::size_t seen_lost_ = 0;     ///< session_->lost() taken into account
    int idle_timers_ = 0;           ///< timer events in a row while a dead worker awaits its loss
    int overdue_timers_ = 0;        ///< of those, past such a worker's deadline
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
