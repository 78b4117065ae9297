// pfarm scheduling core: the chunks the decentralised farm claims, computed where they are claimed (no farmer).
//
// A technique whose claim_form (technique.hpp) is `by_step` hands out the same sequence whoever asks: chunk s is
// its answer to the s-th request, asked as worker s mod p with no completion reported, clipped as the farmer
// clips ([max(1, min_chunk), R]). Every rank replays that sequence with its own copy of the technique, so a claim
// only needs the step number (one atomic fetch-and-add): the chunk's first task and size follow from it.
// A `by_worker` technique's chunk is a pure function of the worker and the tasks unassigned: a claim reads the
// next task index, sizes its chunk from it and publishes the new index with one compare-and-swap.
// A rank's claims are a claim_session over a claim_schedule: which atomic operation a claim issues on the window
// host's counters, and what the host's answer means (a chunk, the end, or a lost swap to retry). This is the
// arithmetic and the claim rule only, once for both drivers: skeleton/mpi/src/decentralised.cpp issues the
// operations with MPI one-sided calls, the simulator (skeleton/sim/src/simulator_decentralised.cpp) in simulated time.
#pragma once

#include "pfarm/technique.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

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

/// A technique's chunks as the decentralised farm claims them: a `by_step` technique's replayed sequence
/// (step_schedule), or a `by_worker` technique itself (claim_for). An MPI rank makes its own; the simulator makes
/// one for all its workers, which is the same: chunk s is a function of s alone and the host serves the steps in
/// increasing order, and a by_worker next() has no state (claim_form).
class claim_schedule {
public:
    /// Throws invalid_argument ("technique") when `policy`'s claim_form is none; "tasks", "workers", "min_chunk"
    /// as step_schedule. Starts the technique.
    claim_schedule(task_count tasks, int workers, std::unique_ptr<technique> policy, task_count min_chunk);

    claim_form form() const { return form_; }
    task_count tasks() const { return tasks_; }
    int workers() const { return workers_; }
    /// by_step: the chunk of step `step` (step_schedule::at: steps asked in increasing order).
    chunk step(task_count step);
    /// by_worker: the chunk `worker` claims when tasks [0, next) are handed out (claim_for).
    chunk from(int worker, task_count next);

private:
    claim_form form_;
    task_count tasks_, min_chunk_;
    int workers_;
    std::optional<step_schedule> steps_;
    std::unique_ptr<technique> policy_;
};

/// Added to both counters when a rank fails: every later claim sees a value past any schedule and stops.
inline constexpr std::int64_t claim_poison = std::int64_t{1} << 62;

/// One atomic operation of a claim on the window host's two 64-bit counters.
struct claim_op {
    enum class kind : std::uint8_t {
        none,              ///< nothing to issue: the claim is decided (a by_worker rank saw the end)
        fetch_and_add,     ///< MPI_Fetch_and_op, MPI_SUM of `operand`
        compare_and_swap,  ///< MPI_Compare_and_swap: `operand` replaces the counter if it holds `compare`
        read,              ///< MPI_Fetch_and_op, MPI_NO_OP: the counter's value, unchanged (a retry's fresh start)
    };
    enum class target : std::uint8_t { step, next };  ///< the step counter (by_step) or the next task index (by_worker)
    kind what = kind::none;
    target counter = target::step;
    std::int64_t operand = 0;
    std::int64_t compare = 0;
};

/// The window host's side of `op`, as MPI performs it: returns the counter's value before and updates it.
std::int64_t apply(const claim_op& op, std::int64_t& counter);

/// One rank's claims (docs/skeleton.md "Decentralised farm"). begin() says which operation the next claim issues:
/// by_step, a fetch-and-add of 1 on the step counter; by_worker, a compare-and-swap of the next task index from the
/// value this rank last saw to that value plus its chunk. end() reads the host's answer (the counter's value before
/// the operation): the chunk claimed, count 0 when nothing is left (the schedule's end, or a failure elsewhere
/// poisoned the counters), or nothing when the swap lost, after which begin() retries from the value found.
class claim_session {
public:
    claim_session(claim_schedule& schedule, int worker)
        : schedule_(schedule), worker_(worker), random_(0x9E3779B97F4A7C15ull * (static_cast<std::uint64_t>(worker) + 1)) {}

    claim_op begin();
    /// `value`: the answer to the operation begin() gave (ignored when it was `none`).
    std::optional<chunk> end(std::int64_t value);
    /// Tasks handed out when the counter of this form reads `value` (rank 0's progress line).
    task_count handed_out(std::int64_t value);
    /// Compare-and-swaps of this rank that lost (another rank claimed first) and were retried.
    task_count lost_swaps() const { return lost_; }
    /// After end() gave nothing: how long to wait before the retry's begin(), in round trips of one atomic (the
    /// driver's unit: the MPI driver measures it, the simulator knows it). After the n-th lost swap in a row of a
    /// claim, binary exponential backoff: uniform in [0, 2^min(n, cap)) with cap = max(claim_backoff_cap, bits of
    /// the workers), from a generator seeded by the worker, so that a simulated run repeats; a retry after a wait
    /// first reads the index afresh (claim_op::kind::read, then end() gives nothing with no wait) and swaps from
    /// that, since the value the lost swap found has aged meanwhile. 0 otherwise.
    std::uint32_t backoff() const { return backoff_; }

private:
    claim_schedule& schedule_;
    int worker_;
    claim_op op_;
    chunk wanted_{0, 0};      ///< by_worker: the chunk the swap in flight claims
    std::int64_t guess_ = 0;  ///< by_worker: the next task index this rank last saw
    task_count lost_ = 0;
    std::uint32_t streak_ = 0;   ///< losses in a row of the claim in progress
    std::uint32_t backoff_ = 0;  ///< the wait before its retry, in atomic round trips
    std::uint64_t random_;       ///< splitmix64 state
    bool refresh_ = false;       ///< the retry starts by reading the index (it waited)
};

/// The least cap of the backoff after lost swaps: up to 2^10 - 1 atomic round trips (about 0.35 ms at the
/// simulator's default 0.34 us); more workers than 2^10 raise it to their bit width.
inline constexpr std::uint32_t claim_backoff_cap = 10;

/// Results travel in batches (the MPI driver; the simulator models the same): a rank stages its chunks' results
/// and puts them when the batch holds this many bytes or chunks, or when it has no more work; a chunk with more
/// results than `decentralised_batch_bytes` travels alone.
inline constexpr std::size_t decentralised_batch_bytes = std::size_t{256} << 10;
inline constexpr std::size_t decentralised_batch_chunks = 1024;

/// The decentralised farm's refusals, one list for the MPI engine and the simulator: a technique whose claim_form
/// is none is invalid_argument "technique" (naming `name` and the techniques served), reclaim is
/// invalid_argument "reclaim".
void check_decentralised(const technique& policy, const std::string& name, const technique_options& parameters,
                         int workers, bool reclaim);

/// The techniques the decentralised farm serves with `parameters` over `workers`, for an error message: the
/// registry's answer (technique::decentralised()), never a list kept here. A technique that needs a parameter to
/// say (css's chunk, the weights) is tried with one.
std::string decentralised_techniques(const technique_options& parameters, int workers);

}  // namespace pfarm
