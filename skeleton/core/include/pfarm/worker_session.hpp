// pfarm scheduling core: the worker session, the farm's protocol on a worker's side, for every driver.
//
// It turns the farmer's replies (protocol.hpp) and the end of its chunks into the actions a driver performs:
// which requests to send, with which results and readings, when to ask ahead (prefetch), what `later`,
// `stop` and `abort` mean, and what to give back when a reclaim arrives (victim_gives). A driver computes
// the chunks and keeps time:
//
//   worker_session s({.prefetch = ..., .readings_each = ..., .readings_calibration = ...});
//   perform(s.start());                                  // the first request
//   on a reply r (not a reclaim):  perform(s.on_reply(r));
//   the chunk computed ended:      perform(s.on_chunk_done(seconds, started, finished));
//   a reclaim r, between two tasks of the chunk computed (`next_task` the first not started, `seconds_per_task`
//   measured on it so far, 0: none finished), or at once when computing nothing:
//                                  perform(s.on_reclaim(r, next_task, seconds_per_task));
//                                  // current() may have shrunk: compute only up to its end
//   about to start task ask_at() of the chunk computed (prefetch):  perform(s.on_boundary(ask_at()));
//   with depth > 2, when the driver wants one more chunk:           perform(s.ask_ahead());
//   a cancel (stragglers), between two tasks or when computing nothing: perform(s.on_reply(r)), then compute
//                                  current() from its start if it changed, nothing if !computing()
//   a task threw (or a monitor failed: task -1):  perform(s.on_failure(task, what));
//   a task threw, with on_task_error retry or skip: its outputs made the fill, perform(s.on_task_error(task, what)),
//                                  and the chunk goes on (from any state that computes it, compute first included)
//   the worker is done when        s.ended()
//
// Actions, in order:
//   send m, readings   send request `m` to the farmer; when `readings` is set the driver first reads the
//                      technique's readings (with_calibration when m carries a calibration result, else
//                      with_every_request) into m.sample
//   compute c          start computing chunk c (current()): the driver computes it task by task
// With prefetch a worker asks for its next chunk while it computes one (not past its calibration task: the next
// chunk waits for the calibration barrier), prefetch_lead before its end (ask_at()), so the reply arrives while
// it computes; the chunk's results then travel with the request after, or alone (`results`) at once when its chunk
// ends before the reply and tasks are long against prefetch_lead (the request after would not go at once: nothing
// to merge them with; where the driver allows it: worker_session_options::results_early). After `later` it asks
// only with nothing in hand.
// Depth (a hierarchical master facing its supermaster, master_session.hpp): with depth d > 2 it may hold d chunks,
// the one it computes and up to d - 1 replies ahead, and it asks ahead only when the driver says so
// (ask_ahead(): one request out at a time, none during a calibration task; it goes with the results of the chunk
// computed when d chunks are held, or when the driver says so because it ends that chunk next). A chunk's results
// go when the driver ends it: with that request, else alone (`results`) while replies ahead remain, else with a
// plain request.
#pragma once

#include "pfarm/farmer.hpp"
#include "pfarm/protocol.hpp"

#include <array>
#include <cmath>
#include <span>
#include <string>
#include <vector>

namespace pfarm {

struct worker_session_options {
    bool prefetch = false;
    /// Prefetch: how long before the end of its chunk a worker asks for the next one (seconds; the driver's
    /// estimate of a request's round trip, with a margin). It asks before the task from which about this much
    /// of the chunk is left (estimated from its previous chunk's seconds per task; halfway through its first),
    /// so that the farmer commits the next chunk as late as it can without the worker waiting for it. Infinity:
    /// ask at the start of every chunk but the first.
    double prefetch_lead = 0.0;
    /// The most chunks it holds (computed and ahead): 0 for 2 with prefetch, else 1; 3..farmer::max_held: asks
    /// ahead by ask_ahead() only (a hierarchical master).
    int depth = 0;
    bool readings_each = false;         ///< every request carries readings (technique_needs::with_every_request)
    bool readings_calibration = false;  ///< a calibration result carries readings (technique_needs::with_calibration)
    /// Prefetch: a chunk that ends before the reply asked ahead sends its results at once when no request would
    /// go with them (`results`), rather than when the reply comes. Off where the driver cannot send while that
    /// reply may be on its way (the MPI worker when replies carry inputs: two blocking sends of a size that waits
    /// for its receive, one each way, would deadlock). With reclaim too (the farmer does not retire the victim of a
    /// busy thief whose results came early: farmer::released; docs/skeleton.md "Prefetch").
    bool results_early = true;
};

struct worker_action {
    enum class kind { send, compute };
    kind what = kind::send;
    request_message message;  ///< send (a compute action leaves it as it was)
    bool readings = false;    ///< send: fill message.sample with the readings first
    bool calibration = false; ///< send: the readings go with a calibration result
    chunk work;               ///< compute
};

class worker_session {
public:
    /// The actions of one event, valid until the next call.
    using actions = std::span<const worker_action>;

    explicit worker_session(const worker_session_options& options = {});

    actions start();
    /// A reply other than reclaim (those go to on_reclaim).
    actions on_reply(const reply_message& r) {
        if (r.what == reply_message::kind::assign && plain_idle()) [[likely]] {
            // A chunk to compute with nothing else in hand and nothing to ask ahead: the round trip's path (inline).
            current_ = r.work;
            current_calibration_ = r.calibration;
            computing_ = holds_results_ = true;
            ask_at_ = -1;
            worker_action& a = slots_[0];
            a.what = worker_action::kind::compute;
            a.work = r.work;
            used_ = 1;
            return {slots_.data(), used_};
        }
        return on_reply_slow(r);
    }
    /// The chunk being computed ended after `seconds` of compute time, between `started` and `finished`. The request
    /// after it comes first among the actions, built from the chunk's times (the plain ask with its results, on the
    /// round trip's path, is the first thing decided); the session's own accounting follows it in the same call.
    actions on_chunk_done(double seconds, double started, double finished) {
        if (computing_ && ahead_count_ == 0 && !out_) [[likely]] {  // the plain ask with the chunk's results (inline)
            worker_action& a = slots_[0];
            a.what = worker_action::kind::send;
            a.message.what = request_message::kind::ask;
            a.message.done = current_;
            a.message.seconds = seconds, a.message.started = started, a.message.finished = finished;
            a.message.has_sample = false;
            a.message.failed_task = -1;
            if (!a.message.text.empty()) [[unlikely]] a.message.text.clear();
            a.calibration = current_calibration_;
            a.readings = options_.readings_each || (current_calibration_ && options_.readings_calibration);
            used_ = 1;
            computing_ = holds_results_ = wanted_ = false;
            ask_at_ = -1;
            seconds_ = seconds, started_ = started, finished_ = finished;
            if (prefetching_ && current_.count > 0 && !current_calibration_)
                seconds_per_task_ = seconds / static_cast<double>(current_.count);
            return {slots_.data(), used_};
        }
        return on_chunk_done_slow(seconds, started, finished);
    }
    actions on_reclaim(const reply_message& r, task_count next_task, double seconds_per_task);
    actions on_failure(task_count task, const std::string& what);
    /// Task `task` of the chunk computed threw `what`, and the farm goes on (on_task_error retry or skip): the report
    /// (`task_error`) goes now, before the chunk's results; nothing else changes.
    actions on_task_error(task_count task, const std::string& what);
    /// The chunk computed reached task `next_task` (>= ask_at()): the request ahead goes now.
    actions on_boundary(task_count next_task);
    /// Before which task of the chunk computed the request ahead goes (-1: none pending).
    task_count ask_at() const noexcept { return ask_at_; }
    /// Depth > 2: ask for one more chunk now, or with the results of the chunk computed when it holds `depth` chunks
    /// already or `with_results` is set (the driver ends that chunk next); nothing while a request is out, during a
    /// calibration task, once !asks_ahead().
    actions ask_ahead(bool with_results = false);
    /// Depth > 2: whether a request ahead may still go (not after a `stop` or `later` came, nor after the end).
    bool asks_ahead() const noexcept;
    /// A request ahead is out, not answered yet.
    bool request_out() const noexcept { return out_; }
    /// Chunks it holds: the one computed (or whose results it holds), the replies ahead, a request out.
    int held() const noexcept;

    bool ended() const noexcept { return ended_; }
    bool aborted() const noexcept { return aborted_; }
    bool computing() const noexcept { return computing_; }
    /// The chunk being computed (its end moves earlier when a reclaim takes tasks back).
    chunk current() const noexcept { return current_; }
    bool current_is_calibration() const noexcept { return current_calibration_; }
    /// Replies that arrived while computing (prefetch), not used yet, oldest first.
    std::span<const reply_message> ahead() const noexcept { return {ahead_.data(), ahead_count_}; }

private:
    /// Nothing computed or held, nothing asked or received ahead, no prefetch, not failed or ended: an assign is only
    /// computed.
    bool plain_idle() const noexcept {
        return !computing_ && !holds_results_ && !prefetching_ && ahead_count_ == 0 && !out_ && !failed_ && !ended_;
    }
    actions on_reply_slow(const reply_message& r);
    actions on_chunk_done_slow(double seconds, double started, double finished);
    void ask(request_message::kind kind, bool with_results);
    void cancel(chunk c);
    void begin(const reply_message& r);
    void advance(const reply_message& r);
    task_count plan_ask(const reply_message& r) const;
    /// Whether a request after the chunk just ended would go at once (its results may wait to go with it).
    bool merge_expected() const;
    /// prefetch_lead in tasks at the last chunk's pace, rounded up (a worker with a pace only: seconds_per_task_ > 0):
    /// how many tasks before its chunk's end a request goes ahead; a chunk of no more tasks asks at its start.
    double lead_tasks() const { return std::ceil(options_.prefetch_lead / seconds_per_task_); }

    worker_session_options options_;
    worker_action& add(worker_action::kind what);  ///< the next action slot, reset
    std::array<worker_action, 4> slots_;              ///< reused: an action holds a whole message
    std::size_t used_ = 0;
    void push_ahead(const reply_message& r);
    reply_message pop_ahead();
    [[noreturn]] void too_many_ahead() const;

    int depth_ = 1;              ///< options_.depth resolved
    bool driver_asks_ = false;   ///< depth > 2: asks ahead at ask_ahead() only
    bool prefetching_ = false;
    bool out_ = false;           ///< a request ahead is out, not answered yet
    bool wanted_ = false;        ///< depth > 2: the driver asked while it held `depth` chunks: it goes with the next results
    bool computing_ = false;     ///< current_ is being computed
    bool holds_results_ = false; ///< current_'s results are not sent yet
    bool current_calibration_ = false;
    bool failed_ = false, ended_ = false, aborted_ = false;
    chunk current_;
    double seconds_ = 0.0, started_ = 0.0, finished_ = 0.0;
    std::array<reply_message, farmer::max_held - 1> ahead_;  ///< replies ahead, oldest first
    std::size_t ahead_count_ = 0;
    task_count ask_at_ = -1;       ///< prefetch: the task before which to ask ahead
    double seconds_per_task_ = 0.0;  ///< of its last chunk (0: none yet)
};

}  // namespace pfarm
