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

/// A report with its per-rank vectors sized and zero: technique, ranks, tasks and the first worker's rank from the
/// options.
farm_report empty_report(const farm_options& options, int ranks, task_count tasks);

}  // namespace pfarm::detail
