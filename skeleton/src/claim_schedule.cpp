// pfarm scheduling core: the decentralised farm's chunk arithmetic (claim_schedule.hpp): the replayed step
// sequence of a by_step technique and the claim of a by_worker technique.
#include "pfarm/claim_schedule.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <string>

namespace pfarm {

step_schedule::step_schedule(task_count tasks, int workers, std::unique_ptr<technique> policy, task_count min_chunk)
    : tasks_(tasks), workers_(workers), policy_(std::move(policy)), min_chunk_(min_chunk) {
    if (tasks < 0) throw invalid_argument("tasks", "is " + std::to_string(tasks) + "; expected >= 0");
    if (workers < 1) throw invalid_argument("workers", "is " + std::to_string(workers) + "; expected >= 1");
    if (min_chunk < 1) throw invalid_argument("min_chunk", "is " + std::to_string(min_chunk) + "; expected >= 1");
    if (!policy_ || policy_->decentralised() != claim_form::by_step)
        throw invalid_argument("technique", "'" + (policy_ ? policy_->name() : std::string("(none)")) +
                                                "' is not replayable by step (claim_form::by_step)");
    policy_->start({tasks, tasks, workers, nullptr});
    if (const task_count k = policy_->constant_chunk(); k > 0) constant_ = std::max(k, min_chunk_);
}

chunk step_schedule::at(task_count step) {
    if (asked_ && step == step_ - 1) return last_;
    if (step < step_) throw internal_error("step_schedule: step " + std::to_string(step) + " asked after step " +
                                           std::to_string(step_ - 1));
    asked_ = true;
    if (constant_ > 0) {  // the replay below, in closed form: count = min(left, max(k, min_chunk)) at every step
        step_ = step + 1;
        if (step >= tasks_ / constant_ + (tasks_ % constant_ != 0 ? 1 : 0)) return last_ = {tasks_, 0};
        const task_count first = step * constant_;
        return last_ = {first, std::min(constant_, tasks_ - first)};
    }
    while (step_ <= step) {
        const task_count left = tasks_ - next_;
        if (left <= 0) return last_ = {tasks_, 0};  // past the end: every later step is empty too
        const task_count wanted = policy_->next(static_cast<int>(step_ % workers_), left);
        if (wanted <= 0)
            throw internal_error("step_schedule: '" + policy_->name() + "' answered 0 at step " + std::to_string(step_) +
                                 " with " + std::to_string(left) + " tasks left");
        const task_count count = std::min(left, std::max(wanted, min_chunk_));
        last_ = {next_, count};
        next_ += count;
        ++step_;
    }
    return last_;
}

chunk claim_for(technique& policy, int worker, task_count tasks, task_count next, task_count min_chunk) {
    const task_count left = tasks - next;
    if (left <= 0) return {tasks, 0};
    const task_count wanted = policy.next(worker, left);
    if (wanted <= 0)
        throw internal_error("claim_for: '" + policy.name() + "' stopped worker " + std::to_string(worker) + " with " +
                             std::to_string(left) + " tasks left");
    return {next, std::min(left, std::max(wanted, min_chunk))};
}

}  // namespace pfarm
