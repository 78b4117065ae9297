// pfarm MPI engine, internal: the farm's report over MPI. Each scheduling session's part (the core's report_part,
// pfarm/report_merge.hpp, which also holds the merge: add_part, finish_report) travels to rank 0 as doubles
// (gather_parts, the one serialiser over MPI); empty_report sizes a farm_report for the merge.
#pragma once

#include "pfarm/farm.hpp"
#include "pfarm/report_merge.hpp"

#include <mpi.h>

#include <vector>

namespace pfarm::detail {

/// Every rank's part to `root`, in rank order (collective over `comm`); empty on the other ranks. A part's
/// calibration does not travel: only a farm of one session reports one, from rank 0's own.
std::vector<report_part> gather_parts(MPI_Comm comm, int root, const report_part& mine);

/// gather_parts point to point, where a rank of `comm` may be gone (on_worker_loss): send_part sends this rank's part
/// to `root` (tag_part); receive_parts, on `root`, receives those of the ranks `from`, waiting at most `seconds` for
/// each (one that does not come is empty), and returns `mine` then one part per other rank in rank order (empty for
/// a rank not in `from`).
void send_part(MPI_Comm comm, int root, const report_part& mine);
std::vector<report_part> receive_parts(MPI_Comm comm, const report_part& mine, const std::vector<int>& from, double seconds);

/// A report with its per-rank vectors sized and zero: technique, ranks, tasks and the first worker's rank from the
/// options.
farm_report empty_report(const farm_options& options, int ranks, task_count tasks);

}  // namespace pfarm::detail
