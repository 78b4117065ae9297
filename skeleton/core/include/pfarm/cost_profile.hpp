// pfarm scheduling core: a loop's cost profile learned from completed chunks, which tells a worker's speed apart from
// the costs of the tasks it happened to get.
#pragma once

#include "pfarm/technique.hpp"

#include <vector>

namespace pfarm {

/// A worker's seconds per task so far measure the tasks it got as much as the worker: a Mandelbrot's edge columns cost
/// a tenth of its middle ones, and a slow worker that computed edge columns looks fast. The profile models a chunk's
/// seconds per task as (the mean cost of its tasks) / (its worker's speed), with one cost per task for each of `bins`
/// equal bins of consecutive task indices and one speed per worker.
///
/// The fit: each completed chunk k of worker w gives the equation f_k . c = tau_k s_w, where f_k holds the fractions
/// of its tasks in each bin, tau_k its seconds per task, c the bins' costs and s_w the worker's speed, weighted by its
/// task count. Eliminating the speeds leaves a quadratic form in c; to it is added a small penalty on the differences
/// of adjacent bins' costs, which settles what the chunks leave open (how the cost varies inside a range only one
/// chunk covered, the costs beside it) towards the smoothest profile. The costs minimise the form with their mean
/// fixed at 1 (one linear solve), and each speed follows from its worker's equations.
///
/// Two workers are compared through chunks that share bins or lie side by side (the smoothness links the cost at the
/// end of one to that at the start of the next): with a self-scheduling technique each worker's chunks lie all over the
/// loop, beside other workers' chunks. Each connected group of workers and computed bins is fitted on its own, with its
/// bins' costs averaging 1, so that workers with nothing in common are compared at equal costs, which is what seconds
/// per task assume. A bin nobody computed a task of costs what its nearest computed bin costs (the lower one at a tie).
///
/// Recording a chunk costs O(bins squared) at most; the fit runs when a prediction is asked after a record and costs
/// O(bins cubed) plus O(bins squared) per worker that recorded since the last fit (the eliminated speeds' terms are
/// kept summed and updated for those workers only): neither grows with the loop, and a farm's end game, which fits
/// after each completed chunk, does not pay for every worker at each fit.
class cost_profile {
public:
    cost_profile() = default;
    /// A profile of tasks [0, tasks) (indices past the end fall in the last bin) for `workers` workers.
    cost_profile(task_count tasks, int workers, int bins = default_bins);
    /// The bins a farm's profile has unless told otherwise: fine enough for a Mandelbrot's band of costly columns.
    static constexpr int default_bins = 64;

    /// Worker `worker` computed `c` in `seconds` (> 0; others are ignored).
    void record(int worker, chunk c, double seconds);
    /// Whether `worker` has a recorded chunk: only then is seconds_per_task() for it.
    bool knows(int worker) const { return !q_.empty() && q_[static_cast<std::size_t>(worker)] > 0.0; }
    /// The seconds per task `worker` is expected to take over `c` (knows(worker) must hold).
    double seconds_per_task(int worker, chunk c) const;
    /// Worker `worker`'s speed relative to the costs (tasks of cost 1 per second; knows(worker) must hold).
    double speed(int worker) const;
    /// The cost per task of bin `b` (1 on average over the computed bins of a connected group).
    double bin_cost(int b) const;
    int bins() const noexcept { return static_cast<int>(cost_.size()); }

private:
    /// f(bin, tasks of `c` in it) for each bin `c` covers, in order.
    template <class F>
    void for_each_bin(chunk c, F&& f) const;
    void fit() const;
    /// Brings eliminated_ up to date with the workers that recorded since the last fit (afresh now and then, against
    /// rounding drift).
    void update_eliminated() const;

    task_count tasks_ = 0;
    std::vector<double> gram_;                ///< bins x bins: sum over chunks of count f f^T
    std::vector<std::vector<double>> cross_;  ///< per worker (empty until its first record), per bin: sum of count tau f
    std::vector<double> q_;                   ///< per worker: sum of count tau^2
    mutable std::vector<char> recorded_;      ///< per worker: whether it recorded since the last fit
    /// bins x bins: sum over workers of cross cross^T / q (the speeds eliminated), as of each worker's `applied_`.
    mutable std::vector<double> eliminated_;
    mutable std::vector<std::vector<double>> applied_;  ///< per worker: the cross_ its term in eliminated_ was made of
    mutable std::vector<double> applied_q_;             ///< per worker: the q_ of that term (0: none)
    mutable int updates_ = 0;                           ///< terms replaced since eliminated_ was last summed afresh
    mutable std::vector<double> cost_;        ///< per bin
    mutable std::vector<double> speed_;       ///< per worker
    mutable bool fitted_ = true;
};

}  // namespace pfarm
