// pfarm scheduling core: the farmer session's deadlines (farmer_session.hpp): the timer the driver keeps (stragglers
// and lost workers), presuming a silent worker lost, and what becomes of the chunks it held and of its late messages.
#include "pfarm/farmer_session.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <limits>

namespace pfarm {

double farmer_session::timer_deadline() const {
    double at = losing_ && retired_count_ < workers() ? loss_check_at_ : std::numeric_limits<double>::infinity();
    if (parked_.empty() || aborting_ || !farmer_.stragglers()) return at;
    // A chunk overdue at the last timer and not re-executed then waits for an event (a completion, an answer to a
    // reclaim), after which the parked workers are asked again anyway: only later deadlines call for a timer.
    return std::min(at, farmer_.straggler_deadline(timer_at_));
}

const std::vector<farmer_action>& farmer_session::on_timer(double now) {
    if (settling_ >= 0) not_settled();
    actions_.clear();
    stamp(now, now);
    timer_at_ = now;
    if (losing_ && now >= loss_check_at_) check_losses(now);
    if (!aborting_ && farmer_.stragglers()) reask_parked();
    return actions_;
}

void farmer_session::check_losses(double now) {
    const worker_loss_rule& rule = options_.worker_loss;
    // Checked a few times per slack: a loss is seen within about 1.25 x the slack past its chunk's deadline.
    loss_check_at_ = now + std::clamp(rule.slack / 4.0, 0.01, 1.0);
    std::vector<int> overdue;
    for (int v = 0; v < workers(); ++v) {
        const auto& w = workers_[static_cast<std::size_t>(v)];
        if (v == options_.own_worker || w.retired || w.lost) continue;
        if (now > farmer_.silent_past(v, rule)) overdue.push_back(v);
    }
    if (!overdue.empty()) lose(overdue);
}

void farmer_session::lose(std::span<const int> overdue) {
    for (const int worker : overdue) {
        auto& w = workers_[static_cast<std::size_t>(worker)];
        const bool awaiting = w.awaiting;  // its request (parked, or a thief's) has had no answer
        w.lost = true;
        lost_.push_back(worker);
        w.failures.clear();
        std::erase(parked_, worker);
        retire(worker);  // it is answered nothing more, and the end of the farm waits for it no more
        // Alive after all, it would wait for that answer for ever: it is told to stop, as from_lost() tells one that asks.
        if (awaiting) send(worker, reply(reply_message::kind::stop));
    }
    if (aborting_) return;
    if (options_.worker_loss.what == worker_loss_rule::kind::stop) {
        outcome_.what = farm_outcome::kind::worker_lost;
        outcome_.worker = overdue.front();
        outcome_.text = "no message within its deadline (on_worker_loss " + to_string(options_.worker_loss) +
                        "): presumed lost";
        abort_all();
        return;
    }
    const bool calibrating = farmer_.calibrating();
    for (const int worker : overdue) forget_held(worker);  // its chunks in flight were not computed by it
    for (const release_outcome& owed : farmer_.lose(overdue, now())) answer(owed.thief, owed.answer, false);
    bool anyone = false;  // a worker left to compute what they held
    for (int v = 0; v < workers() && !anyone; ++v) anyone = !farmer_.lost(v) && !workers_[static_cast<std::size_t>(v)].retired;
    if (!anyone && !farmer_.done()) {
        outcome_.what = farm_outcome::kind::worker_lost;
        outcome_.worker = overdue.back();
        outcome_.text = "presumed lost, and no worker is left to compute its tasks";
        abort_all();
        return;
    }
    if (calibrating && !farmer_.calibrating()) calibration_end_ = now();  // the barrier waited for them only
    reask_parked();  // their tasks, or the end of the calibration, for those that wait
}

void farmer_session::forget_held(int worker) {
    auto& w = workers_[static_cast<std::size_t>(worker)];
    for (int i = farmer_.held(worker) - 1; i >= 0; --i) {  // newest first: the indices of older ones stay valid
        const held_chunk h = w.held[i];
        w.chunks.erase(h.size_index);
        for (int j = 0; j < i; ++j)
            if (w.held[j].size_index > h.size_index) --w.held[j].size_index;
        if (!options_.keep_records) continue;
        records_.erase(records_.begin() + static_cast<std::ptrdiff_t>(h.record_index));
        for (int x = 0; x < workers(); ++x)
            for (int k = 0; k < farmer_.held(x); ++k) {
                if (x == worker && k >= i) continue;
                auto& held = workers_[static_cast<std::size_t>(x)].held[k];
                if (held.record_index > h.record_index) --held.record_index;
            }
    }
}

void farmer_session::from_lost(int worker, const request_message& m) {
    // Not counted: its tasks were handed out again. One that asks (still alive after all) is told to stop.
    if (m.what == request_message::kind::ask) send(worker, reply(reply_message::kind::stop));
    else if (m.what == request_message::kind::failure) send(worker, reply(reply_message::kind::abort));
}

}  // namespace pfarm
