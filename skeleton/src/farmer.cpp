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
               int max_outstanding, bool reclaim)
    : tasks_(tasks), min_chunk_(min_chunk), policy_(std::move(policy)), max_outstanding_(max_outstanding),
      reclaim_(reclaim) {
    if (max_outstanding < 1 || max_outstanding > 2)
        throw invalid_argument("max_outstanding", "is " + std::to_string(max_outstanding) + "; expected 1 or 2");
    if (reclaim && max_outstanding != 1)
        throw invalid_argument("reclaim", "cannot be combined with prefetch (max_outstanding " +
                                              std::to_string(max_outstanding) + "): a worker gives tasks back from "
                                              "the one chunk it computes");
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

decision farmer::assign(int worker, task_count first, task_count count, bool calibration_task, double now) {
    auto& w = workers_[static_cast<std::size_t>(worker)];
    const chunk c{first, count};
    w.outstanding[w.held++] = count;
    w.current = c;
    w.assigned_at = now;
    w.reclaimable = reclaim_ && !calibration_task && count >= 2;
    return {decision::kind::assign, c, calibration_task};
}

decision farmer::stop_worker(int worker) {
    auto& w = workers_[static_cast<std::size_t>(worker)];
    w.stopped = true;
    --active_;
    if (active_ == 0 && remaining() > 0)
        throw internal_error("farmer: technique '" + policy_->name() + "' stopped every worker with " +
                             std::to_string(remaining()) + " tasks unassigned");
    return {decision::kind::stop, {}, false};
}

decision farmer::request(int worker, double now) {
    check_worker(worker);
    auto& w = workers_[static_cast<std::size_t>(worker)];
    if (w.stopped) return {decision::kind::stop, {}, false};
    const int limit = phase_ == phase::calibrating ? 1 : max_outstanding_;
    if (w.held >= limit)
        throw internal_error("farmer: worker " + std::to_string(worker) + " asked for work while holding " +
                             std::to_string(w.held) + " chunk(s)");
    if (w.waiting_for_victim)
        throw internal_error("farmer: worker " + std::to_string(worker) + " asked for work while waiting for a reclaim");

    if (phase_ == phase::calibrating) {
        if (w.calibrated) return {decision::kind::wait, {}, false};
        if (worker >= static_cast<int>(calibration_times_.size())) return stop_worker(worker);
        const task_count first = next_index_;
        next_index_ += 1;
        return assign(worker, first, 1, true, now);
    }
    const task_count left = remaining();
    if (left == 0) return reclaim_ ? reclaim_or_stop(worker, now) : stop_worker(worker);
    const task_count wanted = policy_->next(worker, left);
    if (wanted <= 0) return stop_worker(worker);
    const task_count count = std::min(left, std::max(wanted, min_chunk_));
    const task_count first = next_index_;
    next_index_ += count;
    return assign(worker, first, count, false, now);
}

double farmer::seconds_per_task(int worker) const {
    const auto& w = workers_[static_cast<std::size_t>(worker)];
    if (w.done_tasks > 0) return w.busy_seconds / static_cast<double>(w.done_tasks);
    double busy = 0.0;
    task_count done = 0;
    for (const auto& o : workers_) busy += o.busy_seconds, done += o.done_tasks;
    return done > 0 ? busy / static_cast<double>(done) : 0.0;  // 0: nobody has finished anything yet
}

decision farmer::reclaim_or_stop(int thief, double now) {
    // The share: the thief's part of the victim's unstarted tasks so that both finish together if their times
    // per task so far hold, t_v / (t_v + t_thief), kept within [1/3, 2/3]: a time per task measures the tasks
    // a worker happened to get as much as the worker (a Mandelbrot's cheap edge columns look like a fast
    // worker), and the clamp keeps one bad estimate from handing a thief most of a chunk (quality study:
    // docs/quality.md). The victim: the worker whose chunk promises the thief the largest gain, share x expected remaining time.
    // Expected remaining time = hand-out time + count x its seconds per task - now; a worker past that
    // estimate (slower than its history) is guessed to be half-way through. Without any history yet, chunks
    // are ranked by their size and split in half.
    const double thief_time = seconds_per_task(thief);
    int best = -1;
    double best_gain = 0.0, best_share = 0.5;
    for (int v = 0; v < workers(); ++v) {
        const auto& w = workers_[static_cast<std::size_t>(v)];
        if (v == thief || w.held != 1 || !w.reclaimable || w.thief >= 0 || w.current.count < 2) continue;
        const double t = seconds_per_task(v);
        double share = 0.5, gain = 0.0;
        if (t > 0.0 && thief_time > 0.0) share = std::clamp(t / (t + thief_time), 1.0 / 3.0, 2.0 / 3.0);
        if (t > 0.0) {
            const double whole = static_cast<double>(w.current.count) * t;
            double left = w.assigned_at + whole - now;
            if (left <= 0.0) left = 0.5 * whole;
            if (std::floor(left / t * share) < 1.0) continue;  // expected to give back nothing
            gain = share * left;
            if (gain <= 2.0 * request_cost_) continue;
        } else {
            gain = static_cast<double>(w.current.count);
        }
        if (gain > best_gain) best = v, best_gain = gain, best_share = share;
    }
    if (best < 0) {
        // A chunk that is being asked already may have tasks left once it answers: wait for that answer
        // (the driver re-asks waiting workers after every released()) rather than stop for good.
        for (const auto& w : workers_)
            if (w.thief >= 0 && w.held == 1 && w.reclaimable) return {decision::kind::wait, {}, false};
        return stop_worker(thief);
    }
    auto& victim = workers_[static_cast<std::size_t>(best)];
    victim.thief = thief;
    victim.reclaim_first = victim.current.first;
    workers_[static_cast<std::size_t>(thief)].waiting_for_victim = true;
    decision d{decision::kind::reclaim, {}, false};
    d.victim = best;
    d.share = best_share;
    d.thief_seconds = thief_time;
    return d;
}

release_outcome farmer::released(int victim, task_count given, double now) {
    check_worker(victim);
    auto& v = workers_[static_cast<std::size_t>(victim)];
    if (v.thief < 0)
        throw internal_error("farmer: worker " + std::to_string(victim) + " answered a reclaim nobody asked for");
    if (given < 0) throw invalid_argument("given", "is " + std::to_string(given) + "; expected >= 0");
    const int thief = v.thief;
    v.thief = -1;
    workers_[static_cast<std::size_t>(thief)].waiting_for_victim = false;
    const bool same_chunk = v.held == 1 && v.current.first == v.reclaim_first;
    if (given == 0) {
        if (same_chunk) v.reclaimable = false;  // nothing unstarted: do not ask this chunk again
        return {thief, reclaim_or_stop(thief, now)};
    }
    if (!same_chunk || given >= v.current.count)
        throw internal_error("farmer: worker " + std::to_string(victim) + " gave back " + std::to_string(given) +
                             " tasks of a chunk it does not hold whole");
    v.current.count -= given;
    v.outstanding[0] -= given;
    v.reclaimable = v.current.count >= 2;
    ++reclaims_;
    reclaimed_tasks_ += given;
    return {thief, assign(thief, v.current.first + v.current.count, given, false, now)};
}

double victim_share(const decision& d, double victim_seconds) {
    if (victim_seconds > 0.0 && d.thief_seconds > 0.0)
        return std::clamp(victim_seconds / (victim_seconds + d.thief_seconds), 1.0 / 3.0, 2.0 / 3.0);
    return d.share;
}

void farmer::set_request_cost(double seconds) {
    if (!(seconds >= 0.0) || !std::isfinite(seconds))
        throw invalid_argument("request_cost", "is " + std::to_string(seconds) + "; expected a finite value >= 0");
    request_cost_ = seconds;
}

std::vector<int> farmer::thieves() const {
    std::vector<int> out;
    for (int w = 0; w < workers(); ++w)
        if (workers_[static_cast<std::size_t>(w)].waiting_for_victim) out.push_back(w);
    return out;
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
    w.busy_seconds += seconds;
    w.done_tasks += count;
    if (w.held == 0) w.reclaimable = false;
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
