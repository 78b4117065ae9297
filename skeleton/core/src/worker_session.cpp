// pfarm scheduling core: the worker session (worker_session.hpp says what it owns and the action order).
#include "pfarm/worker_session.hpp"

#include "pfarm/error.hpp"
#include "pfarm/farmer.hpp"

#include <algorithm>
#include <cmath>

namespace pfarm {

worker_session::worker_session(const worker_session_options& options) : options_(options) {
    if (options.depth < 0 || options.depth > farmer::max_held)
        throw invalid_argument("depth", "is " + std::to_string(options.depth) + "; expected 0 (from prefetch) or 1.." +
                                            std::to_string(farmer::max_held));
    depth_ = options.depth > 0 ? options.depth : options.prefetch ? 2 : 1;
    driver_asks_ = depth_ > 2;
}

void worker_session::push_ahead(const reply_message& r) {
    if (static_cast<int>(ahead_count_) + 1 >= std::max(depth_, 2)) [[unlikely]]
        too_many_ahead();
    ahead_[ahead_count_++] = r;
}

void worker_session::too_many_ahead() const {
    throw internal_error("worker session: more replies ahead than its depth (" + std::to_string(depth_) + ") allows");
}

reply_message worker_session::pop_ahead() {
    const reply_message r = ahead_[0];
    if (--ahead_count_ > 0) [[unlikely]]  // more than one ahead: a hierarchical master (depth > 2)
        for (std::size_t i = 0; i < ahead_count_; ++i) ahead_[i] = ahead_[i + 1];
    return r;
}

int worker_session::held() const noexcept {
    return (computing_ || holds_results_ ? 1 : 0) + static_cast<int>(ahead_count_) + (out_ ? 1 : 0);
}

worker_action& worker_session::add(worker_action::kind what) {
    if (used_ == slots_.size()) throw internal_error("worker session: more than four actions for one event");
    worker_action& a = slots_[used_++];
    a.what = what;
    a.work = {};
    if (what == worker_action::kind::compute) return a;  // a compute action is its chunk only (the message is a send's)
    a.message.what = request_message::kind::ask;
    a.message.done = {};
    a.message.seconds = a.message.started = a.message.finished = 0.0;
    a.message.has_sample = false;
    a.message.failed_task = -1;
    a.message.text.clear();
    a.readings = a.calibration = false;
    return a;
}

void worker_session::ask(request_message::kind kind, bool with_results) {
    worker_action& a = add(worker_action::kind::send);
    a.message.what = kind;
    if (with_results) {
        a.message.done = current_;
        a.message.seconds = seconds_;
        a.message.started = started_;
        a.message.finished = finished_;
        holds_results_ = false;
    }
    a.calibration = with_results && current_calibration_;
    a.readings = options_.readings_each || (a.calibration && options_.readings_calibration);
}

worker_session::actions worker_session::start() {
    used_ = 0;
    prefetching_ = depth_ > 1;
    ask(request_message::kind::ask, false);
    return {slots_.data(), used_};
}

void worker_session::begin(const reply_message& r) {
    current_ = r.work;
    current_calibration_ = r.calibration;
    computing_ = true;
    holds_results_ = true;
    // Ask for the chunk after this one before it ends, unless one is asked already or this is the calibration
    // task: prefetch_lead before its end, estimated from the last chunk's pace (halfway with none yet).
    ask_at_ = -1;
    if (prefetching_ && !driver_asks_ && !out_ && !r.calibration) {
        const task_count at = plan_ask(r);
        if (at <= r.work.first) {
            ask(request_message::kind::ask, false);
            out_ = true;
        } else {
            ask_at_ = at;
        }
    }
    worker_action& a = add(worker_action::kind::compute);
    a.work = current_;
}

/// Before which task of chunk `r` to ask ahead: prefetch_lead before its end at the last chunk's pace (at least
/// before its last task), halfway with no pace yet.
task_count worker_session::plan_ask(const reply_message& r) const {
    task_count left = r.work.count / 2;
    if (seconds_per_task_ > 0.0) {  // a lead of a whole chunk or more (infinity: a master, ask at once) asks at its start
        const double lead = lead_tasks();
        left = lead >= static_cast<double>(r.work.count) ? r.work.count : static_cast<task_count>(lead);
    }
    return r.work.first + std::max<task_count>(0, r.work.count - std::max<task_count>(1, left));
}

/// The current chunk is done and its results held; `r` is the reply to the request asked ahead.
void worker_session::advance(const reply_message& r) {
    switch (r.what) {
    case reply_message::kind::assign:
        // The results go now; the request for the chunk after r's goes with them when it is due at once (short
        // tasks; depth > 2: when the driver asked while it held `depth` chunks), else alone, prefetch_lead before
        // r's chunk ends (begin(); depth > 2: at ask_ahead()).
        if (!out_ && (driver_asks_ ? wanted_ : plan_ask(r) <= r.work.first)) {
            ask(request_message::kind::ask, true);
            out_ = true;
        } else {
            ask(request_message::kind::results, true);
        }
        wanted_ = false;
        begin(r);
        return;
    case reply_message::kind::later:  // the pool is empty: ask again with nothing in hand, and never ahead
        ask(request_message::kind::ask, true);
        prefetching_ = wanted_ = false;
        return;
    case reply_message::kind::stop:
        ask(request_message::kind::final, true);
        ended_ = true;
        return;
    default:
        throw internal_error("worker session: reply kind " + std::to_string(static_cast<int>(r.what)) + " asked ahead");
    }
}

worker_session::actions worker_session::on_reply_slow(const reply_message& r) {
    used_ = 0;
    if (r.what == reply_message::kind::cancel) {
        cancel(r.work);
        return {slots_.data(), used_};
    }
    if (ended_) throw internal_error("worker session: a reply after the end");
    if (r.what == reply_message::kind::reclaim) throw internal_error("worker session: a reclaim goes to on_reclaim");
    if (r.what == reply_message::kind::abort) {  // at once, whatever it was doing
        ended_ = aborted_ = true;
        computing_ = false;
        return {slots_.data(), used_};
    }
    if (failed_) return {slots_.data(), used_};  // replies in flight when it failed: it waits for the abort
    if (computing_) {              // prefetch: the reply for the chunk after those it holds
        out_ = false;
        push_ahead(r);
        return {slots_.data(), used_};
    }
    if (holds_results_) {  // its chunk ended before this reply came (none was ahead)
        out_ = false;
        advance(r);
        return {slots_.data(), used_};
    }
    out_ = false;  // (a chunk cancelled while its request ahead was out: this is its answer)
    switch (r.what) {
    case reply_message::kind::assign: begin(r); break;
    case reply_message::kind::stop: ended_ = true; break;
    case reply_message::kind::later:  // asked ahead, then its chunk was cancelled: ask again, never ahead
        ask(request_message::kind::ask, false);
        prefetching_ = false;
        break;
    default:
        throw internal_error("worker session: reply kind " + std::to_string(static_cast<int>(r.what)) +
                             " with nothing in hand");
    }
    return {slots_.data(), used_};
}

worker_session::actions worker_session::on_chunk_done_slow(double seconds, double started, double finished) {
    used_ = 0;
    if (!computing_) throw internal_error("worker session: a chunk ended that was not being computed");
    computing_ = false;
    ask_at_ = -1;  // not reached (a chunk shrunk by a reclaim): the results go with a plain request
    seconds_ = seconds, started_ = started, finished_ = finished;
    // The pace that plans asking ahead (plan_ask, merge_expected): read only when prefetching.
    if (prefetching_ && current_.count > 0 && !current_calibration_)
        seconds_per_task_ = seconds / static_cast<double>(current_.count);
    if (ahead_count_ > 0) {
        advance(pop_ahead());
    } else if (options_.results_early && !driver_asks_ && !merge_expected()) {
        // The reply asked ahead has not come, and the request after it would not go at once (tasks long against
        // prefetch_lead): nothing is to be gained by holding the results for it, so they go now, while the farmer
        // answers. Held, they would leave only once the reply is in, and reach a farmer that serves between its own
        // tasks (farmer_computes) one of its tasks later (docs/skeleton.md "Prefetch").
        ask(request_message::kind::results, true);
    }  // else advance() when the reply comes: the results may go with the next request
    return {slots_.data(), used_};
}

bool worker_session::merge_expected() const {
    if (seconds_per_task_ <= 0.0) return true;  // no pace yet
    return lead_tasks() >= static_cast<double>(current_.count);
}

worker_session::actions worker_session::on_reclaim(const reply_message& r, task_count next_task,
                                                             double seconds_per_task) {
    used_ = 0;
    if (r.what != reply_message::kind::reclaim) throw internal_error("worker session: on_reclaim without a reclaim");
    chunk given{current_.first + current_.count, 0};
    if (computing_ && !failed_) {
        decision asked{decision::kind::reclaim, {}, false};
        asked.share = r.share;
        asked.thief_seconds = r.thief_seconds;
        asked.thief_busy = r.thief_busy;
        asked.thieves = r.thieves;
        // (reclaim: depth 2 at most, farmer.hpp, so at most one reply ahead)
        const bool prefetched = ahead_count_ > 0 && ahead_[0].what == reply_message::kind::assign;
        given = victim_gives(asked, seconds_per_task, current_, next_task, prefetched ? ahead_[0].work : chunk{});
        if (given.count > 0) {  // the unstarted end of the chunk it computes, or of the prefetched one
            if (given.first + given.count == current_.first + current_.count) current_.count -= given.count;
            else ahead_[0].work.count -= given.count;
        }
    }
    // A request ahead planned past the new end of its chunk goes before its last task, or now.
    const task_count last = current_.first + current_.count - 1;
    const bool ask_now = ask_at_ >= 0 && computing_ && std::min(ask_at_, last) <= next_task;
    if (ask_at_ > last) ask_at_ = last;
    worker_action& a = add(worker_action::kind::send);
    a.message.what = request_message::kind::released;
    a.message.done = given;
    if (ask_now) {
        ask(request_message::kind::ask, false);
        out_ = true;
        ask_at_ = -1;
    }
    return {slots_.data(), used_};
}

/// Chunk `c` was computed elsewhere: if it is the one being computed, or its results are still held, it goes
/// without its results (`dropped`), and the worker goes on as after a chunk, with nothing to send. Otherwise its
/// results have gone already and the cancel is stale: nothing happens.
void worker_session::cancel(chunk c) {
    const bool holds = (computing_ || holds_results_) && current_.first == c.first && current_.count == c.count;
    if (!holds || ended_ || failed_) return;
    computing_ = holds_results_ = false;
    ask_at_ = -1;
    worker_action& a = add(worker_action::kind::send);
    a.message.what = request_message::kind::dropped;
    a.message.done = c;
    if (!out_ && ahead_count_ == 0) {
        ask(request_message::kind::ask, false);
        return;
    }
    if (ahead_count_ == 0) return;  // its answer comes as to a worker with nothing in hand
    const reply_message r = pop_ahead();
    switch (r.what) {
    case reply_message::kind::assign: begin(r); return;
    case reply_message::kind::stop: ended_ = true; return;  // the farmer retires it on `dropped`
    case reply_message::kind::later:
        ask(request_message::kind::ask, false);
        prefetching_ = false;
        return;
    default: throw internal_error("worker session: reply kind " + std::to_string(static_cast<int>(r.what)) + " asked ahead");
    }
}

worker_session::actions worker_session::on_boundary(task_count next_task) {
    used_ = 0;
    if (ask_at_ >= 0 && computing_ && !failed_ && next_task >= ask_at_) {
        ask_at_ = -1;
        ask(request_message::kind::ask, false);
        out_ = true;
    }
    return {slots_.data(), used_};
}

bool worker_session::asks_ahead() const noexcept {
    return driver_asks_ && prefetching_ && !ended_ && !failed_ &&
           (ahead_count_ == 0 || ahead_[ahead_count_ - 1].what == reply_message::kind::assign);
}

worker_session::actions worker_session::ask_ahead(bool with_results) {
    used_ = 0;
    if (!asks_ahead() || out_ || !computing_ || current_calibration_) return {slots_.data(), used_};
    if (!with_results && held() < depth_) {
        ask(request_message::kind::ask, false);
        out_ = true;
        wanted_ = false;
    } else {
        wanted_ = true;  // it goes with the results of the chunk computed (advance(), on_chunk_done())
    }
    return {slots_.data(), used_};
}

worker_session::actions worker_session::on_failure(task_count task, const std::string& what) {
    used_ = 0;
    failed_ = true;
    computing_ = false;
    worker_action& a = add(worker_action::kind::send);
    a.message.what = request_message::kind::failure;
    a.message.failed_task = task;
    a.message.text = what;
    return {slots_.data(), used_};
}

worker_session::actions worker_session::on_task_error(task_count task, const std::string& what) {
    used_ = 0;
    if (ended_ || failed_) return {slots_.data(), used_};  // aborted meanwhile, or failing: nothing more goes
    worker_action& a = add(worker_action::kind::send);
    a.message.what = request_message::kind::task_error;
    a.message.failed_task = task;
    a.message.text = what;
    return {slots_.data(), used_};
}

}  // namespace pfarm
