// pfarm scheduling core: the decentralised farm's watch over its claimers under on_worker_loss (claim_watch.hpp):
// who is presumed lost, and what goes back.
#include "pfarm/claim_watch.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <string>

namespace pfarm {

claim_watch::claim_watch(task_count tasks, int workers, const worker_loss_rule& rule, task_count min_chunk)
    : tasks_(tasks), workers_(workers), rule_(rule), min_chunk_(min_chunk) {
    if (tasks < 0) throw invalid_argument("tasks", "is " + std::to_string(tasks) + "; expected >= 0");
    if (workers < 1) throw invalid_argument("workers", "is " + std::to_string(workers) + "; expected >= 1");
    if (min_chunk < 1) throw invalid_argument("min_chunk", "is " + std::to_string(min_chunk) + "; expected >= 1");
    check_worker_loss_rule(rule, "on_worker_loss");
    const auto n = static_cast<std::size_t>(workers);
    beat_.assign(n, 0), since_.assign(n, -1.0), lost_.assign(n, 0);
}

double claim_watch::beat_interval(const worker_loss_rule& rule) { return std::clamp(rule.slack / 4.0, 0.01, 1.0); }

std::vector<int> claim_watch::look(double now, std::span<const claim_slot> slots, std::span<const std::uint8_t> watched) {
    if (slots.size() != static_cast<std::size_t>(workers_) || watched.size() != slots.size())
        throw internal_error("claim_watch: a look with " + std::to_string(slots.size()) + " slots for " +
                             std::to_string(workers_) + " workers");
    double all_busy = 0.0;
    task_count all_done = 0;
    for (const claim_slot& s : slots) all_busy += s.busy, all_done += s.done;
    std::vector<int> lost;
    for (std::size_t w = 0; w < slots.size(); ++w) {
        if (lost_[w] || !watched[w]) continue;
        const claim_slot& s = slots[w];
        if (since_[w] < 0.0 || s.beat != beat_[w]) {
            beat_[w] = s.beat, since_[w] = now;
            continue;
        }
        const double pace = loss_pace(s.busy, s.done, all_busy, all_done, std::nullopt, rule_.slack);
        if (now > loss_deadline(rule_, since_[w], s.count > 0 ? 1 : 0, pace)) {
            lost_[w] = 1;
            lost_order_.push_back(static_cast<int>(w));
            lost.push_back(static_cast<int>(w));
        }
    }
    return lost;
}

void claim_watch::handed(int w, double now) { since_.at(static_cast<std::size_t>(w)) = now; }

bool claim_watch::queue_missing(std::span<const std::uint8_t> delivered, const std::function<bool(task_count)>& alone) {
    if (delivered.size() != static_cast<std::size_t>(tasks_))
        throw internal_error("claim_watch: " + std::to_string(delivered.size()) + " flags for " + std::to_string(tasks_) + " tasks");
    while (cursor_ < tasks_ && delivered[static_cast<std::size_t>(cursor_)]) ++cursor_;
    queued_.clear();
    for (task_count t = cursor_; t < tasks_; ++t) {
        if (delivered[static_cast<std::size_t>(t)]) continue;
        const bool own = alone && alone(t);
        const bool joins = !queued_.empty() && queued_.back().first + queued_.back().count == t && !own &&
                           !(alone && alone(queued_.back().first));
        if (joins) ++queued_.back().count;
        else queued_.push_back({t, 1});
    }
    return !queued_.empty();
}

chunk claim_watch::next_piece() {
    if (queued_.empty()) return {tasks_, 0};
    chunk& front = queued_.front();
    const task_count piece = returned_piece(front.count, living(), min_chunk_);
    const chunk c{front.first, piece};
    front.first += piece, front.count -= piece;
    if (front.count == 0) queued_.pop_front();
    return c;
}

}  // namespace pfarm
