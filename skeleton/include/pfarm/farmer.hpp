// pfarm scheduling core: the farmer state machine (DESIGN.md principle 1).
//
// It knows the tasks left, the workers, each worker's outstanding chunk and its last time, and answers
// "worker w asks: what does it get?". It is transport-free: the discrete-event simulator and the MPI
// farmer drive the same object. Protocol for a driver:
//
//   farmer f(tasks, workers, make_technique(...));
//   on a request from w:    auto d = f.request(w);   // assign (a chunk), wait, or stop
//   on w's chunk finished:  f.complete(w, seconds);  // compute time of its outstanding chunk
//   after each complete():  re-ask the workers that got `wait`, in increasing index, while
//                           f.calibrating() is false (the calibration barrier has passed)
//   the loop is over when   f.done()
//
// A worker holds at most `max_outstanding` chunks (1, or 2 with prefetch: it asks for the next chunk before
// computing the current one); complete() always completes its oldest chunk. Calibration tasks are one at a
// time whatever the limit.
#pragma once

#include "pfarm/technique.hpp"

#include <memory>
#include <vector>

namespace pfarm {

/// The farmer's answer to a request.
struct decision {
    enum class kind { assign, wait, stop };
    kind what = kind::stop;
    chunk work;                ///< valid when what == assign
    bool calibration = false;  ///< the chunk is this worker's calibration task
};

class farmer {
public:
    /// `tasks` >= 1 (else invalid_argument "tasks"), `workers` >= 1 (else invalid_argument "workers").
    farmer(task_count tasks, int workers, std::unique_ptr<technique> policy, task_count min_chunk = 1,
           int max_outstanding = 1);

    /// Worker `worker` asks for work (its previous chunk, if any, must have been complete()d).
    decision request(int worker);

    /// Worker `worker`'s outstanding chunk finished after `seconds` (>= 0, finite) of compute time. For a
    /// calibration task, `sample` carries the worker's monitor readings (statistical calibration needs them).
    void complete(int worker, double seconds, const resource_sample* sample = nullptr);

    /// Tells the technique that worker `worker`'s run queue is now `queue` (>= 1).
    void run_queue_changed(int worker, double queue);

    bool done() const noexcept { return completed_ == tasks_; }
    bool calibrating() const noexcept { return phase_ == phase::calibrating; }
    task_count tasks() const noexcept { return tasks_; }
    task_count remaining() const noexcept { return tasks_ - next_index_; }
    task_count completed_tasks() const noexcept { return completed_; }
    int workers() const noexcept { return static_cast<int>(workers_.size()); }
    const technique& policy() const noexcept { return *policy_; }
    /// The calibration result, or null when the technique needs none (or before the barrier).
    const calibration_result* calibration() const noexcept { return calibration_ ? &*calibration_ : nullptr; }

private:
    enum class phase { calibrating, scheduling };
    struct worker_state {
        task_count outstanding[2] = {0, 0};  ///< sizes of the chunks in flight, oldest first
        int held = 0;                        ///< how many of them are in flight
        bool calibrated = false;             ///< its calibration task is done
        bool stopped = false;
    };

    void finish_calibration();
    void check_worker(int worker) const;
    decision assign(int worker, task_count count, bool calibration_task);

    task_count tasks_;
    task_count min_chunk_;
    std::unique_ptr<technique> policy_;
    std::vector<worker_state> workers_;
    std::vector<double> calibration_times_;
    std::vector<resource_sample> calibration_samples_;
    std::optional<calibration_result> calibration_;
    phase phase_ = phase::scheduling;
    task_count next_index_ = 0;  ///< first unassigned task
    task_count completed_ = 0;   ///< tasks whose chunk has completed
    int calibration_pending_ = 0;
    int active_ = 0;             ///< workers not stopped
    int max_outstanding_ = 1;
};

}  // namespace pfarm
