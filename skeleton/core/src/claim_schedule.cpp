// pfarm scheduling core: the decentralised farm's chunk arithmetic and claim rule (claim_schedule.hpp): the
// replayed step sequence of a by_step technique, the claim of a by_worker technique, a rank's claim session, and
// the mode's refusals.
#include "pfarm/claim_schedule.hpp"

#include "pfarm/error.hpp"
#include "pfarm/registry.hpp"

#include <algorithm>
#include <bit>
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

claim_schedule::claim_schedule(task_count tasks, int workers, std::unique_ptr<technique> policy, task_count min_chunk)
    : form_(policy ? policy->decentralised() : claim_form::none), tasks_(tasks), min_chunk_(min_chunk), workers_(workers) {
    if (form_ == claim_form::by_step) {
        steps_.emplace(tasks, workers, std::move(policy), min_chunk);
        return;
    }
    if (form_ == claim_form::none)
        throw invalid_argument("technique", "'" + (policy ? policy->name() : std::string("(none)")) +
                                                "' cannot be claimed without a farmer (claim_form::none)");
    if (tasks < 0) throw invalid_argument("tasks", "is " + std::to_string(tasks) + "; expected >= 0");
    if (workers < 1) throw invalid_argument("workers", "is " + std::to_string(workers) + "; expected >= 1");
    if (min_chunk < 1) throw invalid_argument("min_chunk", "is " + std::to_string(min_chunk) + "; expected >= 1");
    policy_ = std::move(policy);
    policy_->start({tasks, tasks, workers, nullptr});
}

chunk claim_schedule::step(task_count step) {
    if (!steps_) throw internal_error("claim_schedule: step() of a by_worker technique");
    return steps_->at(step);
}

chunk claim_schedule::from(int worker, task_count next) {
    if (!policy_) throw internal_error("claim_schedule: from() of a by_step technique");
    return claim_for(*policy_, worker, tasks_, next, min_chunk_);
}

std::int64_t apply(const claim_op& op, std::int64_t& counter) {
    const std::int64_t before = counter;
    if (op.what == claim_op::kind::fetch_and_add) counter += op.operand;
    else if (op.what == claim_op::kind::compare_and_swap && counter == op.compare) counter = op.operand;
    return before;
}

claim_op claim_session::begin() {
    if (schedule_.form() == claim_form::by_step) {
        op_ = {claim_op::kind::fetch_and_add, claim_op::target::step, 1, 0};
        return op_;
    }
    // by_worker: size the chunk from the last value seen (exact when nobody claimed since) and swap it in if the
    // index still holds that value; end() retries from the value found otherwise. After a backoff, the value
    // found is read afresh first.
    if (refresh_) {
        refresh_ = false;
        op_ = {claim_op::kind::read, claim_op::target::next, 0, 0};
        return op_;
    }
    wanted_ = schedule_.from(worker_, guess_);
    if (wanted_.count == 0) {  // the index only grows: guess_ >= tasks is the end for good
        op_ = {};
        return op_;
    }
    op_ = {claim_op::kind::compare_and_swap, claim_op::target::next, guess_ + wanted_.count, guess_};
    return op_;
}

std::optional<chunk> claim_session::end(std::int64_t value) {
    if (schedule_.form() == claim_form::by_step)
        return value >= claim_poison ? chunk{schedule_.tasks(), 0} : schedule_.step(value);
    backoff_ = 0;
    if (op_.what == claim_op::kind::read) {  // a retry's fresh start: swap from this value now
        if (value >= claim_poison) return chunk{schedule_.tasks(), 0};
        guess_ = value;
        return std::nullopt;
    }
    if (op_.what == claim_op::kind::none) {
        streak_ = 0;
        return wanted_;
    }
    if (value == op_.compare) {
        guess_ = op_.operand;
        streak_ = 0;
        return wanted_;
    }
    if (value >= claim_poison) return chunk{schedule_.tasks(), 0};
    guess_ = value;  // another rank claimed first: retry from what it left, after a backoff (claim_session::backoff)
    ++lost_;
    const auto cap = std::max<std::uint32_t>(claim_backoff_cap,
                                             static_cast<std::uint32_t>(std::bit_width(static_cast<unsigned>(schedule_.workers()))));
    streak_ = std::min(streak_ + 1, cap);
    random_ += 0x9E3779B97F4A7C15ull;  // splitmix64
    std::uint64_t z = random_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    backoff_ = static_cast<std::uint32_t>(z & ((std::uint64_t{1} << streak_) - 1));
    refresh_ = backoff_ > 0;
    return std::nullopt;
}

task_count claim_session::handed_out(std::int64_t value) {
    if (value >= claim_poison) return schedule_.tasks();
    if (schedule_.form() == claim_form::by_worker) return std::min<task_count>(value, schedule_.tasks());
    const chunk c = schedule_.step(value);
    return c.count == 0 ? schedule_.tasks() : c.first;
}

std::string decentralised_techniques(const technique_options& parameters, int workers) {
    std::string list;
    for (const technique_info& t : techniques()) {
        technique_options o = parameters;
        if (!o.chunk) o.chunk = 1;
        if (!o.overhead) o.overhead = 1.0;
        if (!o.sigma) o.sigma = 1.0;
        std::string note;
        for (int attempt = 0; attempt < 2; ++attempt) {
            try {
                if (t.make(o, workers)->decentralised() != claim_form::none) {
                    list += (list.empty() ? "" : ", ") + t.name + note;
                    break;
                }
            } catch (const error&) {
            }
            if (!o.weights.empty()) break;
            o.weights.assign(static_cast<std::size_t>(workers), 1.0);
            note = " (with weights)";
        }
    }
    return list;
}

void check_decentralised(const technique& policy, const std::string& name, const technique_options& parameters,
                         int workers, bool reclaim) {
    if (policy.decentralised() == claim_form::none) {
        throw invalid_argument(
            "technique", "'" + name +
                             "' cannot run with farmer = decentralised: its chunks depend on measured times, a "
                             "calibration, readings or which worker asked before, which only a farmer collects; this "
                             "mode serves " + decentralised_techniques(parameters, workers));
    }
    if (reclaim)
        throw invalid_argument("reclaim", "is not available with farmer = decentralised: no farmer knows the chunks in "
                                          "flight to choose a victim and give its tasks to a thief");
}

}  // namespace pfarm
