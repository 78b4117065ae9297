// pfarm scheduling core: the farmer session, the farm's protocol on the farmer's side, for every driver.
//
// It turns the messages that reach the farmer (protocol.hpp) into the actions a driver performs, around the
// decision machine `farmer` (farmer.hpp). It owns every rule a driver would otherwise write again: the
// calibration barrier (parking and re-asking), the chunks in flight (the farmer's, the one copy), results
// accepted only for the chunk they belong to, reclaim on the farmer's side (asking the victim, shrinking its
// chunk and its records, re-asking the thieves that waited), stop/final/retire, aborting every worker on a
// failure, task errors that do not stop the farm (options.task_errors: retried or skipped and listed), the
// readings a technique needs, the run-queue changes it is told, and its part of the report (per worker: tasks, chunk
// sizes, busy and finish times; the chunk records), which pfarm/report_merge.hpp merges and derives metrics from. A
// driver (MPI engine, simulator, round robin, tests) only moves messages and keeps time:
//
//   farmer_session s(tasks, workers, make_technique(...), {.prefetch = ..., .reclaim = ...});
//   for each message m from worker w:  perform(s.receive(w, m, now));  perform(s.settle());
//   if the farmer itself fails:        for (auto& a : s.abort(what)) perform(a);
//   the farm is over when              s.over()   (every worker retired)
// A message is received in two phases: receive() returns the replies that may go at once, settle() the rest (the
// results to store, and what depends on them). Where a reply cannot depend on the message's results the session
// answers first and accounts the results in settle(), after the reply has gone; otherwise receive() does it all and
// settle() returns nothing. The decisions are the same either way, and a driver performs the actions of both in
// order. on_message() is receive() and settle() in one call, for a driver that sends nothing in between (a simulator,
// a test).
//
// Actions, in order (a driver may store the results after sending the replies of the same call, as the MPI
// engine does to keep storing off the workers' critical path):
//   deliver w, chunk   the results of `chunk` travel in the message being handled: store them
//   send w, reply      send `reply` to worker w (a reclaim goes to the victim; its thief waits)
//   park w             w's request gets no reply yet (the calibration barrier, or a victim is being asked);
//                      a parked worker is asked again by the session itself: when the barrier passes (before
//                      the request that passed it is answered) and after every victim's answer
// A send or park is one answer: a driver that models the farmer's service time charges it per answer (a
// parked worker asked again and parked again costs nothing: no message goes in or out).
// With stragglers (options.stragglers), a deliver may cover only part of the message's chunk (a chunk
// re-executed elsewhere: the tasks whose results came first from there are not delivered again), a send may be
// a `cancel` to a worker that is not asking (its chunk was computed elsewhere), and a driver must call
// on_timer() at deadline() when no message has come by then. Results of a cancelled chunk that still come are
// discarded; its worker's `dropped` says that it has let it go.
//
// Lost workers (options.worker_loss; docs/reliability.md "A lost worker"): a worker holding a chunk, or owing a message
// with nothing in hand (an answer to a reclaim, the request a `later` asked for), that sends nothing past the rule's
// deadline (farmer::silent_past) is presumed lost; the driver calls on_timer() at deadline() as with stragglers.
// With `continue` its tasks go to the others (farmer.hpp "Lost workers") and the farm ends without it; with `stop`
// the farm stops (outcome worker_lost). Either way it is retired, and lost() names it; a message that still comes
// from it is not counted: a request is answered `stop`, anything else dropped (one whose request had no answer yet
// when it was presumed lost is sent `stop` then). A `results` message with no results is a keep-alive: it answers
// nothing, and the deadline of the worker's oldest chunk runs again from it (farmer::heard; a hierarchical master
// sends one while its group computes longer than that deadline: master_session.hpp).
//
// Pool mode (options.pool; a hierarchical master, master_session.hpp): the tasks come as ranges through
// add_tasks() and stop coming at close_pool() (farmer.hpp "Pool" has the rules); both ask the parked workers
// again, calibration or not, and return the actions.
#pragma once

#include "pfarm/chunk_sizes.hpp"
#include "pfarm/farmer.hpp"
#include "pfarm/protocol.hpp"
#include "pfarm/trace.hpp"

#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace pfarm {

struct farmer_session_options {
    task_count min_chunk = 1;
    bool prefetch = false;        ///< a worker may hold two chunks (it asks ahead)
    /// The most chunks a worker may hold, when more than prefetch's two (up to farmer::max_held, without reclaim
    /// and stragglers): a supermaster over hierarchical masters (master_depth, master_session.hpp). 0: from prefetch.
    int depth = 0;
    bool reclaim = false;         ///< work take-back (farmer.hpp "Reclaim")
    double request_cost = 0.0;    ///< reclaim: one request's round trip, what a reclaim must win (seconds)
    /// reclaim: the bins of the loop's cost profile (farmer::set_profile_bins; >= 1, else invalid_argument
    /// "profile_bins").
    int profile_bins = cost_profile::default_bins;
    bool keep_records = false;    ///< keep a chunk_trace per chunk (records())
    /// A calibration learned by an earlier farm of the same loop (pfarm/schedule.hpp): a technique that
    /// calibrates starts from it, with no calibration tasks (farmer's constructor). Read at construction only.
    const calibration_result* learned = nullptr;
    /// The compute time each worker's calibration adds up to (farmer.hpp "Calibration span"; seconds, >= 0).
    double calibration_span = 0.0;
    /// Hand out from a pool of ranges that grows (add_tasks, close_pool) instead of [0, tasks); `tasks` is then the
    /// loop size the technique is started with (farmer.hpp "Pool").
    bool pool = false;
    /// Stragglers: re-execute overdue chunks on idle workers (farmer.hpp "Stragglers"; factor 0: off).
    straggler_rule stragglers;
    /// What a task that fails leads to (farmer.hpp task_error_rule; docs/reliability.md "Task errors"): with retry or
    /// skip, a worker reports each failed task (request `task_error`) and goes on with its chunk; retry runs it again
    /// (farmer.hpp "Retry") and stops the farm at its last attempt; skip delivers its fill and lists it (failed()).
    task_error_rule task_errors;
    /// The driver's clock (seconds, non-decreasing), for on_message() without a time: the session reads it only
    /// when it needs the time (reclaim, records, the calibration barrier, the last result), so that a driver
    /// pays no clock read on the common path.
    std::function<double()> clock;
    /// When a worker is presumed lost, and what follows (farmer.hpp worker_loss_rule; off by default).
    worker_loss_rule worker_loss;
    /// The driver's own worker (a farmer that computes: worker 0), never presumed lost; -1: none.
    int own_worker = -1;
    /// The driver's simulator of candidate techniques, for `auto` (pfarm/prediction.hpp); it must outlive the session.
    /// Null: the driver cannot simulate, and `auto` is refused when it starts.
    const candidate_predictor* predictor = nullptr;
};

struct farmer_action {
    enum class kind { deliver, send, park };
    kind what = kind::send;
    int worker = 0;
    reply_message reply;  ///< send
    chunk results;        ///< deliver
};

/// A task that failed and was skipped (task_error_rule skip): its index, the worker it failed on, the error's text.
struct task_failure {
    task_count task = -1;
    int worker = -1;
    std::string text;
};

/// How the farm ended.
struct farm_outcome {
    enum class kind { ok, task_failed, worker_failed, farmer_failed, worker_lost };
    kind what = kind::ok;
    int worker = -1;       ///< task_failed, worker_failed, worker_lost: who
    task_count task = -1;  ///< task_failed: which task
    std::string text;
};

class farmer_session {
public:
    /// Throws invalid_argument as farmer's constructor does (tasks, workers, min_chunk, technique).
    farmer_session(task_count tasks, int workers, std::unique_ptr<technique> policy,
                   const farmer_session_options& options = {});

    /// Worker `worker`'s message `m`, first phase: the replies that go at once. It is handled at `now` (the driver's
    /// clock, seconds, non-decreasing) and reached the farmer at `arrived` (<= now; default now), which dates its
    /// results. settle() follows before any other call but abort(), which drops what was left to settle; `m` must stay
    /// valid until then. The actions stay valid until the next call.
    /// The fast path: a request with results and no readings, from a worker holding that one chunk, past calibration,
    /// without reclaim, stragglers or a pool, and a technique whose chunk sizes read no measured time (technique.hpp:
    /// claim_form not none) is answered before its results are accounted (settle() accounts them). Where the farmer
    /// knows the chunk without asking the technique (upcoming(): a constant chunk size, as ss and css have), receive()
    /// only sends it, and settle() makes the request (checked to decide that chunk), then accepts the results.
    const std::vector<farmer_action>& receive(int worker, const request_message& m, double now, double arrived = -1.0);
    /// The same, the time read from options.clock only where it is needed (handled as it arrives): off the fast path.
    /// The chunk known ahead is answered inline (the round trip's path of ss and css).
    const std::vector<farmer_action>& receive(int worker, const request_message& m) {
        if (settling_ < 0 && worker >= 0 && worker < workers() && options_.clock && answers_first_unchecked(worker, m))
            [[likely]] {
            if (const chunk c = farmer_.upcoming(worker); c.count > 0) [[likely]] {
                timed_ = false;
                return answer_known(worker, m, c);
            }
        }
        return receive_untimed(worker, m);
    }
    /// Second phase of receive(): the results to deliver, and what depends on them (none where receive() did it all).
    const std::vector<farmer_action>& settle();
    /// receive() and settle() in one call, the deliveries before the replies.
    const std::vector<farmer_action>& on_message(int worker, const request_message& m, double now,
                                                 double arrived = -1.0);
    const std::vector<farmer_action>& on_message(int worker, const request_message& m);
    /// The assign the next plain request of `worker` will get when the farmer knows it without asking the technique
    /// (farmer::upcoming); an assign of no tasks otherwise. A driver may encode it while it waits, so that receive()'s
    /// reply, when it is that assign, only needs sending.
    reply_message upcoming(int worker) const;
    /// The farmer itself failed (an exception while handling a message): every worker is stopped with abort.
    const std::vector<farmer_action>& abort(const std::string& why);
    /// Stragglers and lost workers: when the driver must call on_timer() if no message comes before (infinity: no
    /// need). Workers parked while a chunk elsewhere may become overdue are asked again then; workers silent past the
    /// loss rule's deadline are presumed lost.
    double deadline() const {
        return farmer_.stragglers() || losing_ ? timer_deadline() : std::numeric_limits<double>::infinity();
    }
    const std::vector<farmer_action>& on_timer(double now);
    /// Pool mode: range `range` joins the pool at `now`; the parked workers are asked again.
    const std::vector<farmer_action>& add_tasks(chunk range, double now);
    /// Pool mode: nothing more will come; the parked workers are asked again (stop, or reclaim).
    const std::vector<farmer_action>& close_pool(double now);

    bool over() const noexcept { return retired_count_ == workers(); }
    bool aborting() const noexcept { return aborting_; }
    const farm_outcome& outcome() const noexcept { return outcome_; }
    int workers() const noexcept { return farmer_.workers(); }
    const farmer& decisions() const noexcept { return farmer_; }
    const technique_needs& needs() const noexcept { return needs_; }

    // Its part of the report, per worker index (pfarm/report_merge.hpp; docs/architecture.md, "Conventions every
    // driver shares").
    task_count tasks_of(int worker) const { return state(worker).tasks; }
    const chunk_sizes& chunks_of(int worker) const { return state(worker).chunks; }  ///< sizes, hand-out order, calibration included
    double busy_of(int worker) const { return state(worker).busy; }
    double finish_of(int worker) const { return state(worker).finish; }  ///< end of its last chunk (0: none)
    double last_result() const noexcept { return last_result_; }        ///< the makespan: the last result arrived
    double calibration_end() const noexcept { return calibration_end_; }  ///< when the barrier passed (0: none)
    const std::vector<chunk_trace>& records() const noexcept { return records_; }  ///< hand-out order
    /// on_task_error skip: the tasks whose results are the fill, in the order their chunks came in.
    const std::vector<task_failure>& failed() const noexcept { return failed_; }
    /// Lost workers, in the order they were presumed lost.
    const std::vector<int>& lost() const noexcept { return lost_; }
    /// on_task_error retry or skip: task failures reported (retry: each failed run), and re-runs handed out (retry).
    task_count task_errors() const noexcept { return task_errors_; }
    task_count retried_tasks() const noexcept { return farmer_.retried_tasks(); }

private:
    struct held_chunk {
        std::size_t size_index = 0;    ///< its entry in chunks
        std::size_t record_index = 0;  ///< its entry in records_ (keep_records)
    };
    struct worker_state {
        held_chunk held[farmer::max_held];  ///< where the farmer's chunks in flight (farmer::held, in_flight) are recorded, oldest first
        bool awaiting = false;   ///< has a request with no reply yet (parked, or a thief)
        bool stop_sent = false;
        bool retired = false;
        bool release_inferred = false;  ///< its answer to a reclaim was inferred from its results; the `released` is to come
        bool lost = false;              ///< presumed lost (options.worker_loss), retired
        double last_queue = 0.0;
        task_count tasks = 0;
        chunk_sizes chunks;
        double busy = 0.0, finish = 0.0;
        std::vector<task_failure> failures;  ///< failed tasks of the chunks it holds (on_task_error retry, skip)
    };

    const std::vector<farmer_action>& handle(int worker, const request_message& m);
    void stamp(double now, double arrived);  ///< the event being handled happens at `now` (arrived: < 0 for now)
    void unstamped();  ///< its time is read from options.clock if it is needed
    double now();      ///< the time of the message being handled (read from the clock at most once)
    double arrival();  ///< when it reached the farmer
    const worker_state& state(int worker) const;
    /// receive()'s fast path: whether worker's message m may be answered before its results are accounted.
    bool answers_first(int worker, const request_message& m) const;
    /// answers_first() for a worker in range, nothing left to settle.
    bool answers_first_unchecked(int worker, const request_message& m) const noexcept {
        const auto& w = workers_[static_cast<std::size_t>(worker)];
        return replies_first_ && m.what == request_message::kind::ask && m.done.count > 0 && !m.has_sample && !aborting_ &&
               !w.retired && !w.awaiting && !w.release_inferred && !farmer_.calibrating() && farmer_.holds_one_unasked(worker);
    }
    /// receive()'s answer with the chunk known ahead, `c`: the reply only; settle() makes the request and checks it.
    const std::vector<farmer_action>& answer_known(int worker, const request_message& m, chunk c) {
        actions_.clear();
        settling_ = worker;
        settling_message_ = &m;
        settling_sent_ = c;
        actions_.push_back({farmer_action::kind::send, worker, {reply_message::kind::assign, false, c}, {}});
        return actions_;
    }
    const std::vector<farmer_action>& receive_untimed(int worker, const request_message& m);
    const std::vector<farmer_action>& receive_at(int worker, const request_message& m);  ///< receive() once timed_ is set
    void begin_settling(int worker, const request_message& m);  ///< receive() answers first; settle() follows
    double timer_deadline() const;  ///< deadline() with stragglers or lost workers
    void check_losses(double now);  ///< on_timer(): the workers silent past the loss rule's deadline are lost
    /// Workers `overdue` are presumed lost together (one look of check_losses()): all of them before any decision
    /// that could name one (a thief's answer, a parked worker's chunk or victim).
    void lose(std::span<const int> overdue);
    void from_lost(int worker, const request_message& m);  ///< a message from a worker presumed lost
    void forget_held(int worker);  ///< a lost worker's chunks in flight leave its chunk sizes and the records
    void check(int worker) const {
        if (worker < 0 || worker >= workers()) [[unlikely]] bad_worker(worker);
        if (settling_ >= 0) [[unlikely]] not_settled();
    }
    [[noreturn]] void not_settled() const;
    [[noreturn]] void bad_worker(int worker) const;
    void answer(int worker, const decision& d, bool direct);
    void accept(int worker, const request_message& m);
    void release(int worker, chunk given, bool reask);  ///< a victim gave back `given` (count 0: nothing)
    void task_error(int worker, const request_message& m);       ///< a `task_error` request
    void accept_failures(int worker, const request_message& m);  ///< accept() of a chunk with failed tasks
    void discard(int worker);  ///< its oldest chunk, cancelled, is gone: from its records and the farmer's
    double request_time() { return options_.reclaim || farmer_.stragglers() || losing_ ? now() : 0.0; }
    void shrink(int worker, chunk given);
    void reask_parked(bool even_calibrating = false);
    void reask_pool();  ///< pool mode: after a range arrived or the pool closed
    void abort_all();
    void retire(int worker);
    void send(int worker, const reply_message& r) { actions_.push_back({farmer_action::kind::send, worker, r, {}}); }
    held_chunk pop_held(int worker);  ///< where its oldest chunk is recorded, which leaves the farmer's chunks in flight

    farmer farmer_;
    farmer_session_options options_;
    technique_needs needs_;
    std::vector<worker_state> workers_;
    std::vector<int> parked_;
    std::vector<farmer_action> actions_;
    std::vector<chunk_trace> records_;
    int retired_count_ = 0;
    bool aborting_ = false;
    farm_outcome outcome_;
    std::vector<task_failure> failed_;
    task_count task_errors_ = 0;
    double last_result_ = 0.0, calibration_end_ = 0.0;
    double now_ = 0.0, arrived_ = 0.0;  ///< the message being handled: its times, once known
    bool timed_ = false;                ///< now_ and arrived_ are known
    bool replies_first_ = false;        ///< receive() may answer before accepting: its technique reads no measured time
    int settling_ = -1;                 ///< receive() took this worker's message; settle() is due
    const request_message* settling_message_ = nullptr;
    chunk settling_sent_;               ///< receive() sent this chunk before the farmer decided it (farmer::upcoming)
    double timer_at_ = -std::numeric_limits<double>::infinity();  ///< the last on_timer()
    bool losing_ = false;           ///< options.worker_loss is on
    double loss_check_at_ = 0.0;    ///< when on_timer() next looks for lost workers
    std::vector<int> lost_;
};

}  // namespace pfarm
