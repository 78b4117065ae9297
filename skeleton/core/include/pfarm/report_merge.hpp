// pfarm core: the one report of a farm in every mode and every driver. Each scheduling session emits its part (per
// worker: its rank, tasks, chunk sizes, busy and finish times; the session's counters, k, calibration and records);
// one merge puts the parts into the report's entries and derives from them what every mode reports alike:
// imbalance and COV over the computing ranks, the trace's order, k, the calibration and its note. The MPI engine
// (skeleton/mpi/src/report.hpp, which carries parts to rank 0) and the simulator (skeleton/sim) both build their
// reports here. No transport.
//
// The one chunk count: a worker's chunk sizes are every chunk it was handed, in hand-out order, its calibration
// chunk included (farmer_session::chunks_of); their sum is the tasks it computed, and a report's chunk total is the
// sum of their counts.
#pragma once

#include "pfarm/calibration.hpp"
#include "pfarm/chunk_sizes.hpp"
#include "pfarm/farmer_session.hpp"
#include "pfarm/master_session.hpp"
#include "pfarm/prediction.hpp"
#include "pfarm/trace.hpp"

#include <optional>
#include <string>
#include <vector>

namespace pfarm {

/// A task that failed and was skipped (protocol_options::on_task_error skip).
struct failed_task {
    task_count task = -1;  ///< its index (an index range's: from range.first)
    int rank = -1;         ///< the rank it failed on
    std::string error;     ///< what it threw (its what(); "unknown exception" for another type)
};

/// One computing rank's entries of the report.
struct worker_part {
    int rank = 0;
    task_count tasks = 0;
    chunk_sizes chunks;   ///< in hand-out order, calibration chunk included (the one chunk count)
    double busy = 0.0;
    double finish = 0.0;  ///< on the report's clock; 0 for a worker that got nothing
    /// The work-stealing farm: its reads of a victim's range, its swaps that took tasks, and its compare-and-swaps
    /// (claims on its own range, steals) that lost and were retried.
    task_count steal_attempts = 0, steals = 0, lost_swaps = 0;
};

/// What one scheduling session (a flat farmer, a master, the supermaster, a decentralised rank) knows of the run.
struct report_part {
    std::vector<worker_part> workers;
    task_count reclaims = 0, reclaimed_tasks = 0, reruns = 0, rerun_tasks = 0;
    task_count served = 0;       ///< requests its workers sent it
    task_count up_requests = 0;  ///< a master's requests up to the supermaster
    task_count merged = 0;       ///< of those, the ones that carried a chunk's results
    std::optional<double> k;
    /// Its calibration, whose entry w is its worker w's. Only a farm with one session over all its workers reports
    /// one (a master's group calibrates alone: group_part leaves it out).
    std::optional<calibration_result> calibration;
    std::vector<chunk_trace> records;  ///< `rank` the farm's rank (kept only with a trace)
    std::vector<failed_task> failed;   ///< on_task_error skip: `rank` the farm's rank, `task` 0-based (the engine's)
    task_count task_errors = 0, retried_tasks = 0;
    std::vector<technique_choice> choices;  ///< what `auto` chose, when and why (technique::choices)
};

/// A session's part: its worker w is the farm's rank ranks[w] (the records' ranks mapped the same way).
report_part part_of(const farmer_session& session, const std::vector<int>& ranks);

/// A master's part: its group's session (`workers`: its workers' ranks) with the requests its workers sent it
/// (`served`) and its own requests up; no calibration (each group's is its own).
report_part group_part(const master_session& session, const std::vector<int>& workers, task_count served);

/// The entries of a report that the parts make. Per-rank vectors have one entry per rank of the farm (a simulator's
/// ranks are its workers).
struct report_entries {
    std::vector<task_count> tasks_per_rank;
    std::vector<chunk_sizes> chunks_per_rank;  ///< sizes in order, calibration chunk included (the one chunk count)
    std::vector<double> busy_per_rank;         ///< seconds computing (emulated slowdown included; its chunks' times as
                                               ///< reported: under a CPU quota at least their CPU time over it)
    std::vector<double> finish_per_rank;       ///< when its last chunk ended (the farmer's clock)
    /// The work-stealing farm, per rank (worker_part): reads of a victim's range, steals that took tasks, and
    /// compare-and-swaps that lost; all zero in the other farms.
    std::vector<task_count> steal_attempts_per_rank, steals_per_rank, lost_swaps_per_rank;
    std::optional<calibration_result> calibration;  ///< F, CV, k of eq. 8, when the technique calibrated
    std::optional<double> k;                        ///< the installment factor the technique used, where it has one
    /// The technique `auto` chose, when and why, in order (the first part's that has any); empty for another technique.
    std::vector<technique_choice> choices;
    double percent_imbalance = 0.0;  ///< (max - mean) / max * p/(p-1) * 100 of the computing ranks' finish times
    double cov = 0.0;                ///< population stddev / mean of the same
    task_count reclaims = 0;         ///< reclaims that moved tasks (protocol_options::reclaim)
    task_count reclaimed_tasks = 0;  ///< tasks they moved
    task_count reruns = 0;           ///< overdue chunks re-executed (protocol_options::stragglers)
    task_count rerun_tasks = 0;      ///< tasks handed out again for them (tasks_per_rank counts what each computed)
    /// on_task_error skip: the tasks that failed, their outputs the fill, by task index (rank 0). Empty otherwise.
    std::vector<failed_task> failed_tasks;
    task_count task_errors = 0;      ///< on_task_error retry or skip: failed runs of tasks (each retry's included)
    task_count retried_tasks = 0;    ///< on_task_error retry: runs handed out again for failed tasks
    std::vector<chunk_trace> trace;  ///< every chunk, when a trace was asked for
};

/// Sizes `r`'s per-rank vectors to `ranks` entries, all zero.
void size_entries(report_entries& r, int ranks);

/// Adds a part's workers' entries, counters, k and calibration (each the first part's that has one), records and
/// failed tasks to `r`.
void add_part(report_entries& r, const report_part& part);

/// How the trace's records are ordered.
enum class trace_order {
    sent,   ///< by hand-out time (the farmers)
    first,  ///< by first task (the decentralised farm's claims)
};

/// What the report's times are.
enum class report_clock {
    seconds,    ///< measured (an MPI farm): a calibration's times carry the machine's timing noise
    simulated,  ///< a model's (the simulator): no timing noise
};

/// What derives from the parts: imbalance and COV of the finish times of `computing` (the ranks that compute, one
/// that got nothing counting 0), the trace ordered, the failed tasks by task, and with measured times the
/// calibration's note when its tasks were too short to time.
void finish_report(report_entries& r, const std::vector<int>& computing, trace_order order,
                   report_clock clock = report_clock::seconds);

/// The chunks of every rank: the sum of their counts.
task_count chunk_total(const report_entries& r);

}  // namespace pfarm
