// pfarm MPI engine, internal: the MPI transport of a farmer_session, for the rank that farms (rank 0 of the flat
// farm's communicator, or of the upper communicator of the hierarchical farm, whose workers are the masters). It
// receives the workers' messages, hands them to the session, performs its actions and sends its replies, runs the
// rank's own worker when it computes, polls the caller's side channel while it would otherwise wait, and ends with
// the outcome every rank of the communicator learns (farmer_transport.cpp). It keeps no rule of the protocol and
// builds no report: each driver makes its session and its report around it (flat/farmer_side.cpp,
// hierarchical/supermaster.cpp). A hierarchical master, which has its own transport, ends its group's farm after a
// lost worker as this transport ends the flat farm (end_among_living).
#pragma once

#include "engine.hpp"

#include "pfarm/farmer_session.hpp"

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace pfarm::detail {

/// How the session's workers sit on the communicator, and whom a failure names.
struct farmer_ranks {
    MPI_Comm comm = MPI_COMM_NULL;
    /// Communicator rank of the session's worker 0, worker w being rank w + first: 0 when this rank computes
    /// (its own worker is worker 0), else 1.
    int first = 1;
    /// Per communicator rank: its clock minus this rank's (clock_offsets; zeros where the times are on this
    /// rank's clock already).
    std::vector<double> offsets;
    /// Per session worker: the rank the outcome names when that worker's failure is the farm's.
    std::vector<int> named;
    /// A failure message carries, before its text, the rank whose failure it is (failure_rank_bytes, wire.hpp):
    /// the outcome names that rank instead.
    bool failure_names_rank = false;
    /// Victims' answers to a reclaim are served first (farmer_inbox).
    bool reclaim = false;
    /// A worker of the communicator may be lost (on_worker_loss): nothing waits for one, and the farm ends point to
    /// point (send_outcome) instead of with collectives.
    bool may_lose = false;
    /// With may_lose: the transport does not end the farm on the other ranks (no outcome sent); its driver does, once
    /// it has learned more (the hierarchical supermaster: the ranks the masters lost).
    bool driver_ends = false;
};

/// What the transport leaves once the farm is over: the outcome, learned by every rank of the communicator
/// (collective: end_traffic then share_outcome; with may_lose point to point), and the requests (asks) the workers sent.
struct farmer_transport_result {
    outcome result;
    task_count requests = 0;
    /// With may_lose: the communicator ranks of the workers presumed lost, in the order they were (`result.lost` names
    /// them as farmer_ranks::named does).
    std::vector<int> lost_in_comm;
};

/// With on_worker_loss, the end of a farm among the living ranks of `comm`, from its rank 0 (the flat farmer, a
/// hierarchical master): a stop to each rank in `lost` (presumed lost: in case it lives and waits for a reply), sent
/// without waiting, then the outcome `o` to every other rank point to point (send_outcome).
void end_among_living(MPI_Comm comm, const outcome& o, const std::vector<int>& lost);

/// Runs `session` over `ranks` until it is over. Results land in `run.out` (task i at i x out_bytes) or go to the
/// kernel's sink; inputs are read from `run.in`; the caller's side channel (protocol_options::side_channel) is polled
/// whenever no farm message waits and after each task of its own. It does not throw the outcome: the driver does,
/// after anything it must do first.
farmer_transport_result run_farmer_transport(const farmer_ranks& ranks, farmer_session& session, const farm_run& run);

}  // namespace pfarm::detail
