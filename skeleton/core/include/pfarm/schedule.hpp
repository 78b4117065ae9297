// pfarm: a schedule that learns across calls. A time-stepping code farms the same loop every step; passed to
// each farm (farm_options::schedule.learned), a schedule keeps what the farm learned about the workers (the
// calibration's F, CV and k, and every worker's latest time per task), so that the next call starts from it
// and runs no calibration tasks, like TBB's affinity_partitioner. docs/using-pfarm.md "Schedules that learn".
//
// The rule: after each call, a worker's time per task is its busy time over its tasks in that call (a worker
// that got no task keeps its earlier time); the next call's calibration is the times-only calibration of those
// times (Algorithm 1 of Gonzalez-Velez & Cole, "Adaptive statistical scheduling of divisible workloads in
// heterogeneous systems": F proportional to 1/t, CV of t, k = ln(S)^CV for that call's S tasks). So a
// worker that slowed down between two calls gets a smaller share in the following one. The schedule calibrates
// again when asked (recalibrate()), when the worker count or the technique's calibration mode changes, and
// never for a technique that does not calibrate (gss, awf-b, ... adapt within each call on their own).
#pragma once

#include "pfarm/calibration.hpp"
#include "pfarm/technique.hpp"

#include <optional>
#include <vector>

namespace pfarm {

class schedule {
public:
    /// Whether a later call can start from what was learned (a calibrating technique ran at least once).
    bool learned() const noexcept { return !seconds_per_task_.empty(); }
    /// The next call calibrates again, then learns from there.
    void recalibrate() noexcept { seconds_per_task_.clear(); }
    /// Every worker's latest time per task (seconds; worker w as in the farm's report), empty before learning.
    const std::vector<double>& seconds_per_task() const noexcept { return seconds_per_task_; }
    /// Calls that started from what was learned, and calls that calibrated.
    int learned_calls() const noexcept { return learned_calls_; }
    int calibrated_calls() const noexcept { return calibrated_calls_; }

    // --- for the drivers ---------------------------------------------------------------------------------
    /// The calibration a farm of `tasks` tasks on `workers` workers with a technique calibrating in `mode`
    /// starts from; nothing when it must calibrate (mode none: the technique does not calibrate at all).
    std::optional<calibration_result> start(calibration_mode mode, int workers, task_count tasks);
    /// What a call taught: per worker, tasks computed and seconds busy computing them. `mode` is the
    /// technique's calibration mode (none: nothing is learned), `calibrated` whether this call calibrated.
    void learn(calibration_mode mode, bool calibrated, const std::vector<task_count>& tasks,
               const std::vector<double>& busy);

private:
    std::vector<double> seconds_per_task_;
    calibration_mode mode_ = calibration_mode::none;
    int learned_calls_ = 0, calibrated_calls_ = 0;
};

}  // namespace pfarm
