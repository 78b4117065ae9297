// pfarm: the schedule that learns across calls (pfarm/schedule.hpp says the rule).
#include "pfarm/schedule.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <cmath>

namespace pfarm {

std::optional<calibration_result> schedule::start(calibration_mode mode, int workers, task_count tasks) {
    if (mode == calibration_mode::none || !learned() || mode != mode_ ||
        seconds_per_task_.size() != static_cast<std::size_t>(workers))
        return std::nullopt;
    calibration_result r = calibrate_times_only(seconds_per_task_, tasks);
    r.mode = mode;
    r.note = "learned by earlier calls (pfarm::schedule): no calibration tasks";
    return r;
}

void schedule::learn(calibration_mode mode, bool calibrated, const std::vector<task_count>& tasks,
                     const std::vector<double>& busy) {
    if (mode == calibration_mode::none) return;
    if (tasks.size() != busy.size())
        throw internal_error("schedule: " + std::to_string(tasks.size()) + " task counts for " +
                             std::to_string(busy.size()) + " busy times");
    if (mode != mode_ || seconds_per_task_.size() != tasks.size()) seconds_per_task_.assign(tasks.size(), 0.0);
    mode_ = mode;
    for (std::size_t w = 0; w < tasks.size(); ++w)
        if (tasks[w] > 0 && busy[w] > 0.0 && std::isfinite(busy[w]))
            seconds_per_task_[w] = busy[w] / static_cast<double>(tasks[w]);
    // A worker never measured (no task yet): as slow as the slowest measured one, so that it gets a share.
    double slowest = 0.0;
    for (double t : seconds_per_task_) slowest = std::max(slowest, t);
    if (slowest <= 0.0) {  // nothing measured at all (tasks too short for the clock): learn nothing
        seconds_per_task_.clear();
        return;
    }
    for (double& t : seconds_per_task_)
        if (t <= 0.0) t = slowest;
    ++(calibrated ? calibrated_calls_ : learned_calls_);
}

}  // namespace pfarm
