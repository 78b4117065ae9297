// pfarm scheduling core: the farmer session (farmer_session.hpp says what it owns and the action order).
#include "pfarm/farmer_session.hpp"

#include "pfarm/error.hpp"

#include <algorithm>

namespace pfarm {

farmer_session::farmer_session(task_count tasks, int workers, std::unique_ptr<technique> policy,
                               const farmer_session_options& options)
    : farmer_(tasks, workers, std::move(policy), options.min_chunk,
              options.depth > 0 ? options.depth : options.prefetch ? 2 : 1, options.reclaim,
               options.pool, options.learned, options.calibration_span, options.predictor),
      options_(options) {
    needs_ = farmer_.policy().needs();
    // Chunk sizes that read no measured time (no completion, no reading, no calibration): a claim form says so.
    replies_first_ = farmer_.policy().decentralised() != claim_form::none && !options.reclaim && !options.pool &&
                     options.stragglers.factor == 0.0 && options.task_errors.what != task_error_rule::kind::retry;
    check_task_error_rule(options.task_errors);
    farmer_.set_retry(options.task_errors.what == task_error_rule::kind::retry);
    if (options.reclaim) farmer_.set_request_cost(options.request_cost);
    if (options.profile_bins != cost_profile::default_bins) farmer_.set_profile_bins(options.profile_bins);
    farmer_.set_stragglers(options.stragglers);
    check_worker_loss_rule(options.worker_loss);
    losing_ = options.worker_loss.what != worker_loss_rule::kind::off;
    if (losing_) replies_first_ = false;  // every request is timed: a chunk's deadline starts when it is handed out
    farmer_.set_loss_tolerant(options.worker_loss.what == worker_loss_rule::kind::go_on);
    workers_.resize(static_cast<std::size_t>(workers));
    parked_.reserve(static_cast<std::size_t>(workers));
}

void farmer_session::not_settled() const {
    throw internal_error("farmer session: a call before settle() after receive()");
}

void farmer_session::bad_worker(int worker) const {
    throw invalid_argument("worker", "is " + std::to_string(worker) + "; expected 0.." + std::to_string(workers() - 1));
}

const farmer_session::worker_state& farmer_session::state(int worker) const {
    check(worker);
    return workers_[static_cast<std::size_t>(worker)];
}

void farmer_session::retire(int worker) {
    auto& w = workers_[static_cast<std::size_t>(worker)];
    if (w.retired) return;
    w.retired = true;
    w.awaiting = false;
    ++retired_count_;
}

void farmer_session::stamp(double now, double arrived) {
    now_ = now;
    arrived_ = arrived < 0.0 ? now : arrived;
    timed_ = true;
}

void farmer_session::unstamped() {
    if (!options_.clock) throw internal_error("farmer session: a message without a time needs options.clock");
    timed_ = false;
}

const std::vector<farmer_action>& farmer_session::on_message(int worker, const request_message& m, double now,
                                                             double arrived) {
    stamp(now, arrived);
    return handle(worker, m);
}

const std::vector<farmer_action>& farmer_session::on_message(int worker, const request_message& m) {
    unstamped();
    return handle(worker, m);
}

bool farmer_session::answers_first(int worker, const request_message& m) const {
    check(worker);
    return answers_first_unchecked(worker, m);
}

void farmer_session::begin_settling(int worker, const request_message& m) {
    actions_.clear();
    settling_ = worker;
    settling_message_ = &m;
}

reply_message farmer_session::upcoming(int worker) const {
    check(worker);
    reply_message r = reply(reply_message::kind::assign);
    r.work = farmer_.upcoming(worker);
    return r;
}

const std::vector<farmer_action>& farmer_session::receive(int worker, const request_message& m, double now,
                                                          double arrived) {
    stamp(now, arrived);
    return receive_at(worker, m);
}

const std::vector<farmer_action>& farmer_session::receive_untimed(int worker, const request_message& m) {
    unstamped();
    return receive_at(worker, m);
}

const std::vector<farmer_action>& farmer_session::receive_at(int worker, const request_message& m) {
    if (!answers_first(worker, m)) {  // all of it now: settle() has nothing left
        handle(worker, m);
        settling_message_ = nullptr;
        settling_ = worker;
        return actions_;
    }
    if (const chunk c = farmer_.upcoming(worker); c.count > 0) return answer_known(worker, m, c);  // the farmer decides in settle()
    begin_settling(worker, m);
    auto& w = workers_[static_cast<std::size_t>(worker)];
    w.awaiting = true;
    answer(worker, farmer_.request(worker, request_time(), true), true);  // assign or stop (nothing parks here)
    return actions_;
}

const std::vector<farmer_action>& farmer_session::settle() {
    if (settling_ < 0) throw internal_error("farmer session: settle() without receive()");
    const int worker = settling_;
    const request_message* m = settling_message_;
    settling_ = -1;
    settling_message_ = nullptr;
    actions_.clear();
    if (!m) return actions_;
    if (const chunk sent = settling_sent_; sent.count > 0) {  // its reply has gone: the farmer's decision is recorded now
        settling_sent_ = {};
        const decision d = farmer_.request(worker, request_time(), true);
        if (d.what != decision::kind::assign || d.work != sent)
            throw internal_error("farmer session: worker " + std::to_string(worker) + " was sent [" +
                                 std::to_string(sent.first) + ", +" + std::to_string(sent.count) +
                                 ") ahead of the farmer's decision, which differs");
        answer(worker, d, true);
        actions_.clear();  // the reply it adds went at receive()
    }
    accept(worker, *m);
    // A stop answered before its last results were accepted: it holds nothing now (answer() retires at once otherwise).
    const auto& w = workers_[static_cast<std::size_t>(worker)];
    if (w.stop_sent && farmer_.held(worker) == 0) retire(worker);
    return actions_;
}

double farmer_session::now() {
    if (!timed_) now_ = arrived_ = options_.clock(), timed_ = true;
    return now_;
}

double farmer_session::arrival() {
    now();
    return arrived_;
}

const std::vector<farmer_action>& farmer_session::handle(int worker, const request_message& m) {
    check(worker);
    actions_.clear();
    auto& w = workers_[static_cast<std::size_t>(worker)];
    if (w.lost) [[unlikely]] {
        from_lost(worker, m);
        return actions_;
    }
    if (w.retired) {
        // Aborting, a worker is retired by the abort that answers whatever it asked last; what it sent before
        // reading that abort may still come (a failure after asking ahead, an answer to a reclaim that crossed
        // its failure: docs/reliability.md findings F2, F3). Nothing of it matters any more.
        if (aborting_) return actions_;
        throw internal_error("farmer session: a message from worker " + std::to_string(worker) + ", which has ended");
    }
    if (aborting_) {  // the farm is over: nobody's results are kept, everybody is stopped
        if (m.what == request_message::kind::final) {
            retire(worker);
        } else if (m.what == request_message::kind::released) {  // a victim's answer: its thief was aborted
            if (w.stop_sent) retire(worker);                     // a stopped worker's last message
        } else if (m.what == request_message::kind::dropped) {  // it let a cancelled chunk go
            if (w.stop_sent) retire(worker);                        // and, stopped already, ends
        } else if (m.what == request_message::kind::results && w.stop_sent && m.done.count > 0 &&
                   farmer_.held(worker) > 0 && farmer_.in_flight(worker, farmer_.held(worker) - 1).first == m.done.first) {
            // Stopped, it sent the results of its last chunk before reading the stop: reading it, it ends with no
            // further message (a reclaim shrinks a chunk from its end: its first task names it still).
            retire(worker);
        } else if (m.what == request_message::kind::results || m.what == request_message::kind::task_error) {
            // it computes a chunk: its next request is answered abort
        } else {
            send(worker, reply(reply_message::kind::abort));
            retire(worker);
        }
        return actions_;
    }
    switch (m.what) {
    case request_message::kind::failure:
        outcome_.what = m.failed_task >= 0 ? farm_outcome::kind::task_failed : farm_outcome::kind::worker_failed;
        outcome_.worker = worker;
        outcome_.task = m.failed_task;
        outcome_.text = m.text;
        w.awaiting = true;  // it waits for the abort
        abort_all();
        return actions_;
    case request_message::kind::task_error:
        task_error(worker, m);
        return actions_;
    case request_message::kind::released:
        if (w.release_inferred) {
            w.release_inferred = false;  // handled already, from the request that overtook it
        } else {
            release(worker, m.done, true);
        }
        if (w.stop_sent && farmer_.held(worker) == 0 && !farmer_.asked(worker)) retire(worker);  // stopped while its answer was due
        return actions_;
    case request_message::kind::dropped: {
        const bool held = farmer_.held(worker) > 0 && farmer_.cancelled(worker);
        const chunk c = held ? farmer_.in_flight(worker, 0) : chunk{};
        if (!held || c.first != m.done.first || c.count != m.done.count)
            throw internal_error("farmer session: worker " + std::to_string(worker) + " dropped [" +
                                 std::to_string(m.done.first) + ", +" + std::to_string(m.done.count) +
                                 "), which was not cancelled");
        discard(worker);
        if (w.stop_sent && farmer_.held(worker) == 0 && !farmer_.asked(worker) && !w.release_inferred) retire(worker);
        if (farmer_.retrying() || farmer_.loss_tolerant()) reask_parked();  // those waiting for its chunk's end (farmer.hpp "Retry")
        return actions_;
    }
    case request_message::kind::ask:
    case request_message::kind::results:
    case request_message::kind::final: {
        const bool was_calibrating = farmer_.calibrating();
        if (m.done.count > 0) {
            // A victim's answer to a reclaim travels apart from its requests (the MPI engine's own tag), so the
            // results of the chunk it shrank may come first (finding F1): they say what it gave back, the end
            // of its oldest chunk past them. That answer is handled now, and the `released` itself ignored.
            if (farmer_.asked(worker) && farmer_.held(worker) > 0) {
                const chunk c = farmer_.in_flight(worker, 0);
                if (m.done.first == c.first && m.done.count < c.count) {
                    release(worker, {c.first + m.done.count, c.count - m.done.count}, false);
                    w.release_inferred = true;
                }
            }
            accept(worker, m);
            // Thieves that waited ask again once the chunk is in: asked before, they could pick the worker again
            // as a victim, for the chunk that has just ended. With stragglers, a chunk in may end a re-execution,
            // or the loop: those waiting for an overdue chunk ask again.
            // With retry or loss tolerance, the idle wait for a chunk in flight elsewhere: it may have ended the loop.
            if (w.release_inferred || farmer_.stragglers() || farmer_.retrying() || farmer_.loss_tolerant()) reask_parked();
        } else if (m.what == request_message::kind::results && losing_) [[unlikely]] {
            farmer_.heard(worker, now());  // a keep-alive: its oldest chunk's deadline runs again from now
        }
        // The run queue travels with every request that must carry readings (technique_needs), results or not.
        if (m.has_sample && m.sample.run_queue && *m.sample.run_queue >= 1.0 && *m.sample.run_queue != w.last_queue) {
            w.last_queue = *m.sample.run_queue;
            farmer_.run_queue_changed(worker, *m.sample.run_queue);
        }
        if (m.what == request_message::kind::results) {  // nothing to answer; the barrier may have passed
            if (was_calibrating && !farmer_.calibrating()) {
                calibration_end_ = now();
                reask_parked();
            } else if (m.done.count > 0 && farmer_.reclaiming()) {
                reask_parked();  // reclaim's end game: a worker told to wait asks again once a chunk is in (farmer.hpp)
            }
            // Stopped while this chunk was out, and its results sent before the stop came (a worker whose reply ahead
            // was late sends them at once; worker_session.hpp): they were its last, no final follows.
            if (w.stop_sent && farmer_.held(worker) == 0 && !farmer_.asked(worker) && !w.release_inferred) retire(worker);
            return actions_;
        }
        if (m.what == request_message::kind::final) {
            if (!w.stop_sent || farmer_.held(worker) > 0)
                throw internal_error("farmer session: final results from worker " + std::to_string(worker) +
                                     ", which still holds work or was not stopped");
            if (!farmer_.asked(worker) && !w.release_inferred) retire(worker);  // else once its answer to a reclaim is in
            return actions_;
        }
        if (w.awaiting)
            throw internal_error("farmer session: worker " + std::to_string(worker) + " asked twice without a reply");
        w.awaiting = true;
        if (was_calibrating && !farmer_.calibrating()) {  // the barrier passed: the parked go first
            calibration_end_ = now();
            reask_parked();
        }
        const bool calibrating = farmer_.calibrating();
        const task_count reruns = farmer_.reruns();
        answer(worker, farmer_.request(worker, request_time()), true);
        if (farmer_.reruns() != reruns) reask_parked();  // a chunk re-executed: those waiting take its other pieces
        // Reclaim's end game (farmer.hpp "Reclaim"): a worker told to wait asks again once a chunk is in, after the
        // worker that completed it has had its answer (the sooner one to finish what is left).
        else if (m.done.count > 0 && farmer_.reclaiming()) reask_parked();
        if (calibrating && !farmer_.calibrating()) {  // pool mode: the stop of a worker left to calibrate passed it
            calibration_end_ = now();
            reask_parked();
        }
        return actions_;
    }
    }
    throw internal_error("farmer session: message kind " + std::to_string(static_cast<int>(m.what)));
}

inline farmer_session::held_chunk farmer_session::pop_held(int worker) {
    auto& w = workers_[static_cast<std::size_t>(worker)];
    const held_chunk h = w.held[0];
    w.held[0] = w.held[1];  // two at most but for a hierarchical master's deeper pipeline (farmer::max_held)
    if (const int n = farmer_.held(worker); n > 2) [[unlikely]]
        for (int i = 2; i < n; ++i) w.held[i - 1] = w.held[i];
    return h;
}

void farmer_session::accept(int worker, const request_message& m) {
    auto& w = workers_[static_cast<std::size_t>(worker)];
    if (farmer_.held(worker) == 0)
        throw internal_error("farmer session: results from worker " + std::to_string(worker) + ", which holds no chunk");
    if (farmer_.cancelled(worker)) {  // computed elsewhere; these results left before the cancel reached it
        const chunk c = farmer_.in_flight(worker, 0);
        if (c.first != m.done.first || c.count != m.done.count)
            throw internal_error("farmer session: worker " + std::to_string(worker) + " returned results for [" +
                                 std::to_string(m.done.first) + ", +" + std::to_string(m.done.count) +
                                 "), not its cancelled chunk [" + std::to_string(c.first) + ", +" + std::to_string(c.count) + ")");
        discard(worker);
        return;
    }
    const held_chunk h = pop_held(worker);  // the oldest chunk in flight; farmer_.complete() below drops it there too
    const task_count size = w.chunks[h.size_index];
    if (options_.keep_records) {
        chunk_trace& r = records_[h.record_index];
        if (r.first != m.done.first || r.count != m.done.count)
            throw internal_error("farmer session: worker " + std::to_string(worker) + " returned results for [" +
                                 std::to_string(m.done.first) + ", +" + std::to_string(m.done.count) + "), not its chunk [" +
                                 std::to_string(r.first) + ", +" + std::to_string(r.count) + ")");
        r.started = m.started;
        r.finished = m.finished;
        r.received = arrival();
        if (m.has_sample) r.sample = m.sample;
    } else if (size != m.done.count) {
        throw internal_error("farmer session: worker " + std::to_string(worker) + " returned " +
                             std::to_string(m.done.count) + " results for a chunk of " + std::to_string(size));
    }
    if (!w.failures.empty()) [[unlikely]] {
        accept_failures(worker, m);
        return;
    }
    const completion& done = farmer_.complete(worker, m.seconds, m.has_sample ? &m.sample : nullptr, m.finished);
    for (const chunk& d : done.deliver) actions_.push_back({farmer_action::kind::deliver, worker, {}, d});
    for (const auto& [holder, c] : done.cancel) {
        reply_message r = reply(reply_message::kind::cancel);
        r.work = c;
        send(holder, r);
    }
    w.tasks += m.done.count;
    w.busy += m.seconds;
    w.finish = m.finished;
    if (farmer_.done()) last_result_ = arrival();  // the last result: the makespan
}

void farmer_session::task_error(int worker, const request_message& m) {
    auto& w = workers_[static_cast<std::size_t>(worker)];
    if (options_.task_errors.what == task_error_rule::kind::stop)
        throw internal_error("farmer session: worker " + std::to_string(worker) + " went on after task " +
                             std::to_string(m.failed_task) + " failed, which on_task_error stop does not allow");
    bool held = false;  // a task of a chunk it holds, and no more than once per run
    for (int i = 0; i < farmer_.held(worker) && !held; ++i) {
        const chunk c = farmer_.in_flight(worker, i);
        held = m.failed_task >= c.first && m.failed_task < c.first + c.count;
    }
    for (const task_failure& f : w.failures) held = held && f.task != m.failed_task;
    if (!held)
        throw internal_error("farmer session: worker " + std::to_string(worker) + " reported task " +
                             std::to_string(m.failed_task) + " failed, which is not a task of a chunk it holds");
    w.failures.push_back({m.failed_task, worker, m.text});
    ++task_errors_;
    if (options_.task_errors.what == task_error_rule::kind::retry &&
        farmer_.failures_of(m.failed_task) + 1 >= options_.task_errors.attempts) {
        // Its last attempt: the farm stops as with on_task_error stop, naming it and its last error (the text
        // unchanged: a binding may decode it). The worker goes on computing; its next request is answered abort.
        outcome_.what = farm_outcome::kind::task_failed;
        outcome_.worker = worker;
        outcome_.task = m.failed_task;
        outcome_.text = m.text;
        abort_all();
    }
}

void farmer_session::accept_failures(int worker, const request_message& m) {
    auto& w = workers_[static_cast<std::size_t>(worker)];
    std::vector<task_failure> mine;  // the failures of this chunk; those of a chunk held after it stay
    std::erase_if(w.failures, [&](const task_failure& f) {
        const bool in = f.task >= m.done.first && f.task < m.done.first + m.done.count;
        if (in) mine.push_back(f);
        return in;
    });
    std::vector<task_count> tasks;
    for (const task_failure& f : mine) tasks.push_back(f.task);
    const bool retry = options_.task_errors.what == task_error_rule::kind::retry;
    const completion& done = farmer_.complete(worker, m.seconds, m.has_sample ? &m.sample : nullptr, m.finished,
                                              retry ? std::span<const task_count>(tasks) : std::span<const task_count>());
    for (const chunk& d : done.deliver) actions_.push_back({farmer_action::kind::deliver, worker, {}, d});
    for (const auto& [holder, c] : done.cancel) {
        reply_message r = reply(reply_message::kind::cancel);
        r.work = c;
        send(holder, r);
    }
    if (!retry) {  // skip: a failure whose results (the fill) are delivered here is listed
        for (task_failure& f : mine)
            for (const chunk& d : done.deliver)
                if (f.task >= d.first && f.task < d.first + d.count) failed_.push_back(std::move(f));
    }
    w.tasks += m.done.count;
    w.busy += m.seconds;
    w.finish = m.finished;
    if (farmer_.done()) last_result_ = arrival();
}

void farmer_session::discard(int worker) {
    auto& w = workers_[static_cast<std::size_t>(worker)];
    if (!w.failures.empty()) [[unlikely]] {  // failures of the chunk dropped count for nothing
        const chunk c = farmer_.in_flight(worker, 0);
        std::erase_if(w.failures, [c](const task_failure& f) { return f.task >= c.first && f.task < c.first + c.count; });
    }
    const held_chunk h = pop_held(worker);
    farmer_.drop(worker, losing_ ? now() : 0.0);
    // It counts nowhere: not in the worker's chunks, not in the records (the chunk's results came from elsewhere).
    w.chunks.erase(h.size_index);
    for (int i = 0; i < farmer_.held(worker); ++i)
        if (w.held[i].size_index > h.size_index) --w.held[i].size_index;
    if (!options_.keep_records) return;
    records_.erase(records_.begin() + static_cast<std::ptrdiff_t>(h.record_index));
    for (int x = 0; x < workers(); ++x)
        for (int i = 0; i < farmer_.held(x); ++i) {
            auto& held = workers_[static_cast<std::size_t>(x)].held[i];
            if (held.record_index > h.record_index) --held.record_index;
        }
}

void farmer_session::release(int worker, chunk given, bool reask) {
    if (given.count > 0) shrink(worker, given);
    const release_outcome o = farmer_.released(worker, given, now());
    if (o.thief >= 0) answer(o.thief, o.answer, true);  // none when the thief was lost meanwhile
    if (reask) reask_parked();  // thieves that waited for this answer ask again
}

void farmer_session::shrink(int worker, chunk given) {
    auto& w = workers_[static_cast<std::size_t>(worker)];
    for (int i = 0; i < farmer_.held(worker); ++i) {
        const chunk c = farmer_.in_flight(worker, i);  // the one copy of its chunks; released() checks the rest
        if (c.first + c.count != given.first + given.count) continue;
        w.chunks.set(w.held[i].size_index, w.chunks[w.held[i].size_index] - given.count);
        if (options_.keep_records) records_[w.held[i].record_index].count -= given.count;
        return;
    }
    throw internal_error("farmer session: worker " + std::to_string(worker) + " gave back tasks it does not hold");
}

void farmer_session::answer(int worker, const decision& d, bool direct) {
    auto& w = workers_[static_cast<std::size_t>(worker)];
    switch (d.what) {
    case decision::kind::wait:
        parked_.push_back(worker);
        if (direct) actions_.push_back({farmer_action::kind::park, worker, {}, {}});
        return;
    case decision::kind::reclaim: {  // the thief waits while its victim is asked
        reply_message r = reply(reply_message::kind::reclaim);
        r.share = d.share;
        r.thief_seconds = d.thief_seconds;
        r.thief_busy = d.thief_busy;
        r.thieves = d.thieves;
        send(d.victim, r);
        return;
    }
    case decision::kind::later:
        w.awaiting = false;
        send(worker, reply(reply_message::kind::later));
        return;
    case decision::kind::stop:
        w.awaiting = false;
        w.stop_sent = true;
        send(worker, reply(reply_message::kind::stop));
        // Else its final results follow, or its answer to a reclaim sent before this stop.
        if (farmer_.held(worker) == 0 && !farmer_.asked(worker) && !w.release_inferred) retire(worker);
        return;
    case decision::kind::assign: {
        w.awaiting = false;
        held_chunk& h = w.held[farmer_.held(worker) - 1];  // the chunk the farmer has just put in flight
        h.size_index = w.chunks.size();
        w.chunks.push_back(d.work.count);
        if (options_.keep_records) {
            h.record_index = records_.size();
            records_.push_back({worker, d.work.first, d.work.count, now(), 0.0, 0.0, 0.0, d.calibration, {}});
        }
        reply_message r = reply(reply_message::kind::assign);
        r.calibration = d.calibration;
        r.work = d.work;
        send(worker, r);
        return;
    }
    }
}

void farmer_session::reask_parked(bool even_calibrating) {
    if ((farmer_.calibrating() && !even_calibrating) || parked_.empty()) return;
    std::sort(parked_.begin(), parked_.end());
    std::vector<int> ready;
    ready.swap(parked_);
    parked_.reserve(ready.capacity());
    for (int w : ready) answer(w, farmer_.request(w, request_time()), false);
}

void farmer_session::abort_all() {
    aborting_ = true;
    parked_.clear();
    for (int w = 0; w < workers(); ++w) {
        if (!workers_[static_cast<std::size_t>(w)].awaiting) continue;  // it computes: its next message is answered abort
        send(w, reply(reply_message::kind::abort));
        retire(w);
    }
}

const std::vector<farmer_action>& farmer_session::abort(const std::string& why) {
    settling_ = -1;  // the farm fails: results left to settle are not kept
    settling_message_ = nullptr;
    settling_sent_ = {};
    actions_.clear();
    if (!aborting_) {
        outcome_.what = farm_outcome::kind::farmer_failed;
        outcome_.text = why;
        abort_all();
    }
    return actions_;
}

void farmer_session::reask_pool() {
    const bool calibrating = farmer_.calibrating();
    reask_parked(true);
    if (calibrating && !farmer_.calibrating()) {  // the barrier passed while they were asked: those parked by it go now
        calibration_end_ = now_;
        reask_parked();
    }
}

const std::vector<farmer_action>& farmer_session::add_tasks(chunk range, double now) {
    if (settling_ >= 0) not_settled();
    actions_.clear();
    stamp(now, now);
    farmer_.add_tasks(range);
    if (!aborting_) reask_pool();  // a calibration task or a chunk for those that found the pool empty
    return actions_;
}

const std::vector<farmer_action>& farmer_session::close_pool(double now) {
    if (settling_ >= 0) not_settled();
    actions_.clear();
    stamp(now, now);
    farmer_.close_pool();
    if (!aborting_) reask_pool();  // those still waiting are stopped, or take tasks back
    return actions_;
}

}  // namespace pfarm
