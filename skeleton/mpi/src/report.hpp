// pfarm MPI engine, internal: the farm's report in every mode. Each scheduling session emits its part (per worker:
// its rank, tasks, chunk sizes, busy and finish times; the session's counters, k and records); a part travels to
// rank 0 as doubles (gather_parts, the one serialiser over MPI); one merge puts the parts into the farm_report and
// computes what is derived from them (imbalance and COV over the computing ranks, the trace's order, the
// calibration's note).
#pragma once

#include "pfarm/farm.hpp"
#include "pfarm/farmer_session.hpp"

#include <mpi.h>

#include <optional>
#include <vector>

namespace pfarm::detail {

/// One computing rank's entries of the report.
struct worker_part {
    int rank = 0;
    task_count tasks = 0;
    chunk_sizes chunks;  ///< in hand-out order, calibration chunks included (the one chunk count of every mode)
    double busy = 0.0;
    double finish = 0.0;  ///< on rank 0's clock; 0 for a worker that got nothing
};

/// What one scheduling session (the flat farmer, a master, the supermaster, a decentralised rank) knows of the run.
struct report_part {
    std::vector<worker_part> workers;
    task_count reclaims = 0, reclaimed_tasks = 0, reruns = 0, rerun_tasks = 0;
    task_count served = 0;       ///< requests its workers sent it
    task_count up_requests = 0;  ///< a master's requests up to the supermaster
    task_count merged = 0;       ///< of those, the ones that carried a chunk's results
    std::optional<double> k;
    std::vector<chunk_trace> records;  ///< `rank` the farm's rank (kept only with a trace)
    std::vector<failed_task> failed;   ///< on_task_error skip: `rank` the farm's rank, `task` 0-based (the engine's)
    task_count task_errors = 0, retried_tasks = 0;
};

/// A session's part: its worker w is the farm's rank ranks[w] (the records' ranks mapped the same way).
report_part part_of(const farmer_session& session, const std::vector<int>& ranks);

/// Every rank's part to `root`, in rank order (collective over `comm`); empty on the other ranks.
std::vector<report_part> gather_parts(MPI_Comm comm, int root, const report_part& mine);

/// A report with its per-rank vectors sized and zero: technique, ranks, tasks and the first worker's rank from the
/// options.
farm_report empty_report(const farm_options& options, int ranks, task_count tasks);

/// Adds a part's workers' entries, counters, k (the first part's that has one) and records to `r`.
void add_part(farm_report& r, const report_part& part);

/// How the trace's records are ordered.
enum class trace_order {
    sent,   ///< by hand-out time (the farmers)
    first,  ///< by first task (the decentralised farm's claims)
};

/// What derives from the parts: imbalance and COV of the finish times of `computing` (the ranks that compute, one
/// that got nothing counting 0), the trace ordered, the calibration's note when its tasks were too short to time.
void finish_report(farm_report& r, const std::vector<int>& computing, trace_order order);

}  // namespace pfarm::detail
