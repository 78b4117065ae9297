#include "pfarm/farmer.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace pfarm {

namespace {
/// Times below this are taken as this: a timer may return 0 for a very short task, and every technique
/// that learns from times divides by them. 1 ns is below any real timer's resolution.
constexpr double min_seconds = 1e-9;
}  // namespace

farmer::farmer(task_count tasks, int workers, std::unique_ptr<technique> policy, task_count min_chunk,
               int max_outstanding)
    : tasks_(tasks), min_chunk_(min_chunk), policy_(std::move(policy)), max_outstanding_(max_outstanding) {
    if (max_outstanding < 1 || max_outstanding > 2)
        throw invalid_argument("max_outstanding", "is " + std::to_string(max_outstanding) + "; expected 1 or 2");
    if (tasks < 1) throw invalid_argument("tasks", "is " + std::to_string(tasks) + "; expected >= 1");
    if (workers < 1) throw invalid_argument("workers", "is " + std::to_string(workers) + "; expected >= 1");
    if (min_chunk < 1)
        throw invalid_argument("min_chunk", "is " + std::to_string(min_chunk) + "; expected >= 1");
    if (!policy_) throw invalid_argument("technique", "is null");
    workers_.resize(static_cast<std::size_t>(workers));
    active_ = workers;
    if (policy_->needs_calibration() != calibration_mode::none) {
        phase_ = phase::calibrating;
        // More workers than tasks: only the first `tasks` workers calibrate; the rest are stopped at once.
        calibration_pending_ = static_cast<int>(std::min<task_count>(tasks, workers));
        calibration_times_.assign(static_cast<std::size_t>(calibration_pending_), 0.0);
        calibration_samples_.assign(static_cast<std::size_t>(calibration_pending_), resource_sample{});
    } else {
        policy_->start({tasks_, tasks_, workers, nullptr});
    }
}

void farmer::check_worker(int worker) const {
    if (worker < 0 || worker >= workers())
        throw invalid_argument("worker", "is " + std::to_string(worker) + "; expected 0.." +
                                             std::to_string(workers() - 1));
}

decision farmer::assign(int worker, task_count count, bool calibration_task) {
    auto& w = workers_[static_cast<std::size_t>(worker)];
    const chunk c{next_index_, count};
    next_index_ += count;
    w.outstanding[w.held++] = count;
    return {decision::kind::assign, c, calibration_task};
}

decision farmer::request(int worker) {
    check_worker(worker);
    auto& w = workers_[static_cast<std::size_t>(worker)];
    if (w.stopped) return {decision::kind::stop, {}, false};
    const int limit = phase_ == phase::calibrating ? 1 : max_outstanding_;
    if (w.held >= limit)
        throw internal_error("farmer: worker " + std::to_string(worker) + " asked for work while holding " +
                             std::to_string(w.held) + " chunk(s)");
    const auto stop = [&] {
        w.stopped = true;
        --active_;
        if (active_ == 0 && remaining() > 0)
            throw internal_error("farmer: technique '" + policy_->name() + "' stopped every worker with " +
                                 std::to_string(remaining()) + " tasks unassigned");
        return decision{decision::kind::stop, {}, false};
    };

    if (phase_ == phase::calibrating) {
        if (w.calibrated) return {decision::kind::wait, {}, false};
        if (worker >= static_cast<int>(calibration_times_.size())) return stop();
        return assign(worker, 1, true);
    }
    const task_count left = remaining();
    if (left == 0) return stop();
    const task_count wanted = policy_->next(worker, left);
    if (wanted <= 0) return stop();
    return assign(worker, std::min(left, std::max(wanted, min_chunk_)), false);
}

void farmer::complete(int worker, double seconds, const resource_sample* sample) {
    check_worker(worker);
    if (!(seconds >= 0.0) || !std::isfinite(seconds))
        throw invalid_argument("seconds", "is " + std::to_string(seconds) + "; expected a finite value >= 0");
    auto& w = workers_[static_cast<std::size_t>(worker)];
    if (w.held == 0)
        throw internal_error("farmer: worker " + std::to_string(worker) + " completed a chunk it does not hold");
    const task_count count = w.outstanding[0];
    w.outstanding[0] = w.outstanding[1];
    w.outstanding[1] = 0;
    --w.held;
    completed_ += count;
    if (phase_ == phase::calibrating && !w.calibrated) {
        w.calibrated = true;
        // The raw time: pfarm::calibrate has its own rule for a time of 0.
        calibration_times_[static_cast<std::size_t>(worker)] = seconds;
        if (sample) calibration_samples_[static_cast<std::size_t>(worker)] = *sample;
        if (--calibration_pending_ == 0) finish_calibration();
        return;
    }
    policy_->completed(worker, count, std::max(seconds, min_seconds));
}

void farmer::run_queue_changed(int worker, double queue) {
    check_worker(worker);
    if (!(queue >= 1.0) || !std::isfinite(queue))
        throw invalid_argument("run_queue", "is " + std::to_string(queue) + "; expected a finite value >= 1");
    policy_->run_queue_changed(worker, queue);
}

void farmer::finish_calibration() {
    phase_ = phase::scheduling;
    if (remaining() == 0) return;  // the calibration tasks were the whole loop
    calibration_ = calibrate(policy_->needs_calibration(), calibration_times_, calibration_samples_, tasks_);
    policy_->start({tasks_, remaining(), workers(), &*calibration_});
}

}  // namespace pfarm
