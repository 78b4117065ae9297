// pfarm scheduling core: the chunks the decentralised farm claims, computed where they are claimed (no farmer).
//
// A technique whose claim_form (technique.hpp) is `by_step` hands out the same sequence whoever asks: chunk s is
// its answer to the s-th request, asked as worker s mod p with no completion reported, clipped as the farmer
// clips ([max(1, min_chunk), R]). Every rank replays that sequence with its own copy of the technique, so a claim
// only needs the step number (one atomic fetch-and-add): the chunk's first task and size follow from it.
// A `by_worker` technique's chunk is a pure function of the worker and the tasks unassigned: a claim reads the
// next task index, sizes its chunk from it and publishes the new index with one compare-and-swap.
// This is the arithmetic only; skeleton/mpi/src/decentralised.cpp holds the counters in MPI one-sided memory.
#pragma once

#include "pfarm/technique.hpp"

#include <memory>

namespace pfarm {

/// The chunk sequence of a `by_step` technique, replayed on one rank. Steps must be asked in increasing order
/// (a rank's claims only go forward); each call replays the steps between the previous one and this one, so a
/// rank's replay costs O(steps of the whole run) in total, O(1) per step: with p ranks claiming in turn, about p
/// steps per claim. A technique with a constant chunk (technique::constant_chunk: ss, css, the ones with the
/// most steps) is not replayed: step s is [s k, +k), clipped, in O(1).
class step_schedule {
public:
    /// Throws invalid_argument ("technique") when `policy` is not `by_step`, as the farmer's constructor does for
    /// tasks, workers and min_chunk. Calls policy->start().
    step_schedule(task_count tasks, int workers, std::unique_ptr<technique> policy, task_count min_chunk);

    /// The chunk of step `step` (0-based); count 0 once the steps have handed out every task. Throws
    /// internal_error when `step` is below a step asked before.
    chunk at(task_count step);

    task_count tasks() const { return tasks_; }

private:
    task_count tasks_;
    int workers_;
    std::unique_ptr<technique> policy_;
    task_count min_chunk_;
    task_count step_ = 0;       ///< the next step to replay
    task_count next_ = 0;       ///< its first task
    chunk last_{0, 0};          ///< the chunk of step_ - 1
    task_count constant_ = 0;   ///< every chunk's size when the technique's is constant (min_chunk applied), else 0
    bool asked_ = false;
};

/// The chunk a `by_worker` technique gives worker `worker` when tasks [0, next) are handed out: first `next`,
/// its wish clipped to [max(1, min_chunk), tasks - next]; count 0 when nothing is left. Throws internal_error
/// when the technique stops a worker with tasks left (no `by_worker` technique does).
chunk claim_for(technique& policy, int worker, task_count tasks, task_count next, task_count min_chunk);

}  // namespace pfarm
