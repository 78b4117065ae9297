// pfarm MPI engine: the hierarchical farm (farm_options::topology.farmer = hierarchical; docs/hierarchical.md), the MPI
// transport of the core's sessions, as simulator_hierarchical.cpp is their transport in simulated time. This file
// puts the roles together (run_hierarchical):
//
//   - rank 0, the supermaster: a farmer_session whose workers are the masters (supermaster.cpp);
//   - K master ranks: a master_session each (master.cpp);
//   - every other rank a worker: the flat farm's worker side, unchanged (worker_side.cpp), on its group's
//     communicator, where its master is rank 0: a worker talks to its master exactly as to a flat farmer.
// The grouping and the plan (the groups' options, the supermaster's technique, the expected shares, the sessions'
// options) are grouping.cpp's and the core's hierarchy_plan; the report is report.cpp's. Two levels of
// communicators carry the traffic, one per group (its master is rank 0 there) and one over rank 0 and the masters,
// so that each level keeps the flat farm's tags and wire format (wire.hpp, messages.hpp) and no message of one
// level meets the other's. Times: every session runs on rank 0's clock (each rank's offset from clock_offsets,
// broadcast), so the groups' records and finish times and the supermaster's makespan compare. Once the outcome is
// known and good, each master sends its group's part of the report up to rank 0.
// With on_worker_loss a worker rank of a group may be lost: its master presumes it lost and its group computes its
// tasks (master.cpp); and a master may be lost: rank 0 presumes it lost and the other groups compute its chunks
// (supermaster.cpp). Both levels then end point to point among their living ranks, and the workers of a lost master
// learn the outcome from rank 0 on the farm's communicator (worker_side.cpp: `above`).
#include "hierarchical.hpp"

#include "pfarm/registry.hpp"

#include <algorithm>

namespace pfarm::detail {

namespace {

/// A communicator this farm made (MPI_Comm_split), freed at the end.
struct owned_comm {
    MPI_Comm comm = MPI_COMM_NULL;
    owned_comm() = default;
    owned_comm(const owned_comm&) = delete;
    owned_comm& operator=(const owned_comm&) = delete;
    ~owned_comm() {
        if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    }
    void split(MPI_Comm parent, int color, int key) {
        mpi::check(MPI_Comm_split(parent, color, key, &comm), "MPI_Comm_split");
        if (comm != MPI_COMM_NULL) mpi::check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    }
};

}  // namespace

farm_report run_hierarchical(const farm_run& run) {
    const MPI_Comm comm = run.comm;
    const int rank = run.rank, ranks = run.ranks;
    const farm_options& options = run.options;
    const shared_setup& setup = run.setup;
    const double cpu0 = cpu_seconds();
    const rank_layout h = layout_of(setup.group_of, setup.config.farmer_computes != 0);
    // Rank 0's view on every rank: the workers' technique and parameters, the supermaster's technique, the records,
    // each rank's clock offset.
    std::string technique = options.schedule.technique, top_name = options.topology.master_technique;
    technique_options parameters = options.schedule.parameters;
    share_technique(comm, rank, technique, parameters);
    broadcast_string(comm, top_name);
    int keep_records = !options.output.trace.empty() || options.output.record_trace ? 1 : 0;
    mpi::check(MPI_Bcast(&keep_records, 1, MPI_INT, 0, comm), "MPI_Bcast");
    std::vector<double> offsets = run.offsets;  // rank 0's, on every rank
    offsets.resize(static_cast<std::size_t>(ranks), 0.0);
    mpi::check(MPI_Bcast(offsets.data(), ranks, MPI_DOUBLE, 0, comm), "MPI_Bcast");

    const int g = h.group_of.at(static_cast<std::size_t>(rank));
    const bool is_master = g >= 0 && h.master[static_cast<std::size_t>(g)] == rank;
    owned_comm down, up;
    down.split(comm, g < 0 ? MPI_UNDEFINED : g, rank);         // a group: its master is rank 0 there
    up.split(comm, rank == 0 || is_master ? 0 : MPI_UNDEFINED, rank);  // rank 0 and the masters, in rank order
    end_setup(comm, rank, ranks);
    if (g >= 0 && !is_master)  // a worker, as in the flat farm; its master is its farmer
        return run_worker_side(run, down.comm, setup.config.worker_loss != 0 ? comm : MPI_COMM_NULL);

    if (rank == 0)
        return run_supermaster(run, up.comm, h, plan_of(h, technique, top_name, parameters, setup.config.tasks),
                               keep_records != 0, cpu0);
    // A master: its group's farm, facing its workers, on rank 0's clock (the driver passes every time).
    const hierarchy_plan plan = plan_of(h, technique, top_name, parameters, setup.config.tasks,
                                        {.prefetch = setup.config.prefetch != 0,
                                         .reclaim = setup.config.reclaim != 0,
                                         .request_cost = run.round_trip,
                                         .keep_records = keep_records != 0,
                                         .stragglers = {},
                                         .task_errors = task_errors_of(setup.config),
                                         .clock = {},
                                         // A worker of its group may be lost (docs/reliability.md "A lost worker"):
                                         // the master presumes it lost as a flat farmer does; never its own worker.
                                         .worker_loss = worker_loss_of(setup.config),
                                         .own_worker = h.computes ? 0 : -1});
    return run_master(run, up.comm, down.comm, h, plan, g, offsets);
}

}  // namespace pfarm::detail
