// pfarm scheduling core: the farmer's calibration phase (farmer.hpp "Calibration span"): the size of each worker's
// next calibration chunk, the barrier, and the calibration the technique starts from.
#include "pfarm/farmer.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace pfarm {

namespace {
/// Calibration tasks that may still go to a worker that has calibrated on some already (farmer.hpp "Calibration
/// span"): `cap` in all, less the `handed` ones, less one kept for each of the first `calibrating` workers that has
/// had none yet.
template <class Workers>
task_count calibration_budget(task_count cap, task_count handed, const Workers& workers, std::size_t calibrating) {
    task_count unstarted = 0;
    for (std::size_t v = 0; v < calibrating; ++v)
        if (workers[v].calibration_tasks == 0 && workers[v].held == 0 && !workers[v].calibrated) ++unstarted;
    return cap - handed - unstarted;
}

/// The calibration `living` of the workers not `lost` (in worker order) made one entry per worker again: a lost worker
/// gets the slowest time measured (and fitted), and the fitness is eq. 4 over them all, so that a technique that plans
/// per worker keeps it the least (the others' relative fitness is that of the living workers' calibration). The
/// statistics, k and the fit stay the living workers'.
calibration_result with_lost_workers(calibration_result living, const std::vector<bool>& lost) {
    const auto widen = [&](std::vector<double>& values) {
        if (values.empty()) return;
        const double slowest = *std::max_element(values.begin(), values.end());
        std::vector<double> all;
        std::size_t at = 0;
        for (const bool gone : lost) all.push_back(gone ? slowest : values[at++]);
        values.swap(all);
    };
    widen(living.times);
    widen(living.fitted);
    living.fitness = fitness_from_times(living.fitted.empty() ? living.times : living.fitted);
    std::string who;
    for (std::size_t v = 0; v < lost.size(); ++v)
        if (lost[v]) who += (who.empty() ? "" : ", ") + std::to_string(v);
    living.note = (living.note.empty() ? "" : living.note + "; ") + "worker(s) " + who +
                  " lost during calibration: left out, given the slowest time measured";
    return living;
}
}  // namespace

task_count farmer::next_calibration_chunk(const worker_state& w) const {
    if (w.calibration_tasks == 0) return 1;
    double wanted = 2.0 * static_cast<double>(w.calibration_last);
    if (w.calibration_seconds > 0.0)  // the tasks that reach the span at its pace so far, if fewer
        wanted = std::min(wanted, std::ceil((span_ - w.calibration_seconds) * static_cast<double>(w.calibration_tasks) /
                                            w.calibration_seconds));
    return std::max<task_count>(1, static_cast<task_count>(wanted));
}

std::optional<decision> farmer::calibration_request(int worker, worker_state& w, double now) {
    if (w.calibrated) return chunk_while_others_calibrate(worker, w, now);
    if (pool_) {
        if (remaining() > 0) return assign(worker, take_from_pool(1).first, 1, true, now);
        if (!returned_.empty()) {  // a lost worker's calibration task: this worker's calibration task now
            chunk& front = returned_.front();
            const task_count first = front.first;
            ++front.first;
            if (--front.count == 0) returned_.pop_front();
            return assign(worker, first, 1, true, now);
        }
        if (!closed_) return decision{decision::kind::wait, {}, false};
        w.calibrated = true;  // nothing left to calibrate on: the barrier no longer waits for it
        if (!loss_tolerant_) {  // and it stops
            const decision d = stop_worker(worker);
            if (--calibration_pending_ == 0) finish_calibration();
            return d;
        }
        // Lost workers: tasks may still come back to it; it waits for the barrier, or asks as any worker past it.
        if (--calibration_pending_ == 0) finish_calibration();
        if (phase_ == phase::calibrating) return decision{decision::kind::wait, {}, false};
        return std::nullopt;
    }
    // More workers than tasks: the others do not calibrate. Stopped, unless a calibration task may come back.
    if (worker >= static_cast<int>(calibration_times_.size()))
        return loss_tolerant_ ? decision{decision::kind::wait, {}, false} : stop_worker(worker);
    const task_count count =
        w.calibration_tasks == 0
            ? 1
            : std::min(next_calibration_chunk(w),
                       calibration_budget(calibration_cap_, next_index_, workers_, calibration_times_.size()));
    if (remaining() > 0 && count > 0) return hand_next(worker, std::min(count, remaining()), true, now);
    end_calibration_of(worker, w);  // the budget (or the loop) was taken by the others: what it measured so far
    if (phase_ == phase::calibrating) return decision{decision::kind::wait, {}, false};
    return std::nullopt;
}

bool farmer::calibration_completed(int worker, worker_state& w, task_count count, double seconds,
                                   const resource_sample* sample) {
    if (w.calibrated) return false;  // a chunk handed while it waited for the barrier: not a measurement
    w.calibration_tasks += count;
    w.calibration_seconds += seconds;
    w.calibration_last = count;
    w.calibration_last_seconds = seconds;
    if (sample) calibration_samples_[static_cast<std::size_t>(worker)] = *sample;
    if (pool_ || w.calibration_seconds >= span_ || remaining() == 0 ||
        calibration_budget(calibration_cap_, next_index_, workers_, calibration_times_.size()) < 1)
        end_calibration_of(worker, w);
    return true;
}

decision farmer::chunk_while_others_calibrate(int worker, const worker_state& w, double now) {
    if (pool_ || span_ <= 0.0 || worker >= static_cast<int>(calibration_times_.size()) || w.calibration_tasks == 0 ||
        remaining() == 0)
        return {decision::kind::wait, {}, false};
    // The slower of its latest chunk's pace and its whole calibration's: a chunk that ran into costlier tasks
    // counts, and so does a quota that a short chunk ran inside of.
    const double latest = w.calibration_last_seconds / static_cast<double>(std::max<task_count>(1, w.calibration_last));
    const double pace = std::max(latest, w.calibration_seconds / static_cast<double>(w.calibration_tasks));
    const double wanted = pace > 0.0 ? std::ceil(0.25 * span_ / pace) : 2.0 * static_cast<double>(w.calibration_last);
    const task_count count =
        std::min(static_cast<task_count>(std::clamp(wanted, 1.0, static_cast<double>(remaining()))),
                 calibration_budget(calibration_cap_, next_index_, workers_, calibration_times_.size()));
    if (count < 1) return {decision::kind::wait, {}, false};
    return hand_next(worker, count, true, now);
}

void farmer::end_calibration_of(int worker, worker_state& w) {
    w.calibrated = true;
    // Seconds per task over its calibration chunks (one task without a span: its time). The raw value:
    // pfarm::calibrate has its own rule for a time of 0.
    calibration_times_[static_cast<std::size_t>(worker)] =
        w.calibration_tasks > 0 ? w.calibration_seconds / static_cast<double>(w.calibration_tasks) : 0.0;
    if (--calibration_pending_ == 0) finish_calibration();
}

void farmer::finish_calibration() {
    phase_ = phase::scheduling;
    if (remaining() == 0 && (!pool_ || closed_)) return;  // the calibration tasks were the whole loop
    if (lost_count_ == 0) [[likely]] {
        calibration_ = calibrate(calibration_mode_, calibration_times_, calibration_samples_, loop_size());
    } else {  // lost workers leave the calibration (farmer.hpp "Lost workers")
        std::vector<double> times;
        std::vector<resource_sample> samples;
        std::vector<bool> lost;
        for (std::size_t v = 0; v < calibration_times_.size(); ++v) {
            lost.push_back(workers_[v].lost);
            if (workers_[v].lost) continue;
            times.push_back(calibration_times_[v]);
            samples.push_back(calibration_samples_[v]);
        }
        if (times.empty()) return;  // every worker that calibrated is lost: nobody is left to schedule for
        calibration_ = with_lost_workers(calibrate(calibration_mode_, times, samples, loop_size()), lost);
    }
    calibration_->span = span_;
    if (pool_) return;  // started at the next request
    policy_->start({tasks_, remaining(), workers(), &*calibration_, predictor_});
    started_ = true;
    // A technique calibrated only for the span learns from the calibration chunks as from any other chunk.
    if (policy_->needs_calibration() == calibration_mode::none)
        for (int v = 0; v < static_cast<int>(calibration_times_.size()); ++v) {
            const auto& w = workers_[static_cast<std::size_t>(v)];
            if (w.calibration_tasks > 0 && !w.lost)
                policy_->completed(v, chunk{-1, w.calibration_tasks}, std::max(w.calibration_seconds, min_seconds));
        }
}

}  // namespace pfarm
