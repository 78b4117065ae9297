// pfarm MPI engine, internal: what the engine's files share. farm.cpp is the entry (run_farm), setup.cpp the
// agreement before the farm and the outcome after it, farmer_transport.cpp and worker_side.cpp the two transports of
// the core's sessions (farmer_session.hpp, worker_session.hpp), farmer_side.cpp the flat farm's rank 0 on the
// first, results.hpp a chunk's results (fixed or any size) in their message buffer, journaled.cpp a farm with a
// journal (only the tasks it lacks), decentralised/ and stealing/ the farms without a farmer (one_sided.hpp what they
// share), hierarchical/ the farm with a
// supermaster and masters, progress.cpp the progress line, wire.hpp the bytes on the wire, messages.hpp the tags
// and how a rank waits, clock.hpp the farm's clock (now()).
#pragma once

#include "clock.hpp"
#include "report.hpp"

#include "pfarm/emulation.hpp"
#include "pfarm/farm.hpp"
#include "pfarm/farmer_session.hpp"
#include "pfarm/monitor.hpp"

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pfarm::detail {

/// Emulated heterogeneity: per-rank slowdown and load changes over time (seconds since the start).
struct emulation {
    std::vector<double> slowdown;
    std::vector<load_change> changes;  ///< pfarm/emulation.hpp; the worker is the rank

    double factor(int rank, double t) const;  ///< slowdown x load change: how much slower rank computes at t
    double load(int rank, double t) const;    ///< the load change alone (1 before the first): what monitors see
    bool active() const { return !slowdown.empty() || !changes.empty(); }
    /// The sleep owed by a task of `compute` seconds that started at `start`: (factor - 1) x compute.
    double owed(int rank, double start, double compute) const;
};

/// Which readings the run takes (config_header::monitors).
enum monitor_bits : std::int32_t {
    loadavg_each = 1,         ///< availability, run queue, load1 with every request (the availability monitor)
    loadavg_calibration = 2,  ///< the same with a calibration result
    benchmark_once = 4,       ///< the benchmark kernel once at the start, sent with every reading
    latency_once = 8,         ///< the latency probe once at the start
};

/// Broadcast from rank 0 before the farm: the run's shape, or the error every rank throws.
struct config_header {
    std::int64_t tasks = 0;
    std::int32_t error = 0;  ///< 1: invalid argument, then argument and message follow
    std::int32_t farmer_computes = 0;
    std::int32_t prefetch = 0;
    std::int32_t reclaim = 0;
    std::int32_t replicated = 0;
    std::int32_t gentle_wait = 0;
    std::int32_t emulation_count = 0;  ///< doubles of emulation data that follow
    std::int32_t monitors = 0;         ///< monitor_bits
    std::int32_t readings_each = 0;    ///< every request carries readings
    std::int32_t readings_calibration = 0;  ///< a calibration result carries readings
    std::int32_t farmer = 0;                ///< farmer_mode
    std::int32_t victims = 0;               ///< victim_rule (farmer_mode::stealing)
    std::int32_t stragglers = 0;            ///< chunks may be cancelled: workers check for it between tasks
    double straggler_factor = 0.0;
    std::int32_t trace = 0;                 ///< rank 0 writes a trace at the end (farm.cpp finish_trace)
    /// Rank 0 (set after the broadcast): the calibration span in force, schedule_options::calibration_span or the
    /// automatic one from every rank's CPU quota period.
    double calibration_span = 0.0;
    std::int32_t task_errors = 0;           ///< task_error_rule::kind: 0 stop, else a worker goes on after a failed task
    std::int32_t task_attempts = 0;         ///< retry: runs of a task in all
    std::int32_t worker_loss = 0;           ///< worker_loss_rule::kind: 0 off, else the farm ends point to point
    double worker_loss_factor = 0.0;
    double worker_loss_slack = 0.0;
};

/// The run's on_worker_loss, as agreed.
inline worker_loss_rule worker_loss_of(const config_header& c) {
    return {static_cast<worker_loss_rule::kind>(c.worker_loss), c.worker_loss_factor, c.worker_loss_slack};
}

/// The run's on_task_error, as agreed.
inline task_error_rule task_errors_of(const config_header& c) {
    return {static_cast<task_error_rule::kind>(c.task_errors), c.task_attempts};
}

struct shared_setup {
    config_header config;
    emulation emulated;
    std::vector<std::string> extra_monitors;  ///< registry monitors the user asked for, read once at the start
    std::vector<int> group_of;  ///< hierarchical farm: each rank's group (-1: rank 0, the supermaster); else empty
    /// This rank's own CPU quota in CPUs (cgroup_cpu_limit(): its cgroup's and its ancestors' most restrictive), 0
    /// for none or unreadable; rank-local, not agreed. Its chunk times count at least their CPU time over it
    /// (quota_time.hpp).
    double quota_cores = 0.0;
};

/// Rank 0's `text` on every rank (collective).
void broadcast_string(MPI_Comm comm, std::string& text);
/// The same after a farm that lost ranks (`lost`, known on every rank: farm_report::lost_ranks): point to point to
/// the living ones, no collective; broadcast_string when none was lost.
void broadcast_string(MPI_Comm comm, std::string& text, const std::vector<int>& lost);

/// The run's description, agreed by every rank (rank 0's view wins), or an invalid_argument on every rank.
/// `policy` is made on rank 0.
shared_setup agree(MPI_Comm comm, int rank, int ranks, task_count tasks, const task_kernel& kernel,
                   const farm_options& options, std::unique_ptr<technique>& policy);

/// The end of every farm's setup, after its last collective: each rank tells rank 0 it is there and waits for rank
/// 0's go, which rank 0 sends once every rank has come (a barrier, and the one place where the startup's watch ends:
/// pfarm::mpi::startup_over). A rank passes it only after rank 0 has: a rank lost during the setup leaves rank 0
/// waiting, so that no rank begins the farm and every startup watch fires (status 4 on every living rank), never
/// rank 0's alone while the others wait for it in the farm. Rank 0's go goes without a wait on its delivery (a rank
/// lost just then is a lost worker of the farm).
void end_setup(MPI_Comm comm, int rank, int ranks);

/// Clock alignment for traces (Cristian's method): on rank 0, each rank's clock minus the farmer's.
std::vector<double> clock_offsets(MPI_Comm comm, int rank, int ranks, double t0, bool gentle, double* round_trip);

/// What the monitors read, as the run needs it; one per rank.
class sampler {
public:
    /// Rank `rank`'s sampler; `t0` is the farm's start on this rank's clock (emulated load changes are timed
    /// from it).
    sampler(const shared_setup& setup, int rank, double t0)
        : bits_(setup.config.monitors), extra_(setup.extra_monitors), emulated_(setup.emulated), rank_(rank), t0_(t0) {}
    /// Collective probes at the start (every rank calls it). Throws pfarm::error on every rank when a
    /// monitor could not read somewhere.
    void start(MPI_Comm comm, int rank);
    /// The reading that goes with a request whose completed chunk was (or not) a calibration task. Under
    /// emulation (slowdown, load changes) the load readings are the emulated load's, as in the simulator:
    /// availability min(1, 1/f), run queue max(1, f) for the rank's load-change factor f now (a slowdown is
    /// a slower processor, like a simulated worker's task time: it loads nothing).
    resource_sample read(bool calibration);

private:
    std::int32_t bits_;
    std::vector<std::string> extra_;
    const emulation& emulated_;
    int rank_;
    double t0_;
    resource_sample cached_;
    /// Availability, run queue and load1: make_availability_monitor() (cgroup under a CPU quota, loadavg
    /// otherwise), chosen in start() when the run reads them.
    std::unique_ptr<monitor> availability_;
};

/// One farm as run_farm hands it to each mode's driver: the communicator and this rank's place in it, the data and
/// the task kernel, the options and what every rank agreed of them, and what the farm measured before it began.
struct farm_run {
    MPI_Comm comm;  ///< the farm's own (never the user's)
    int rank, ranks;
    const std::byte* in;
    std::byte* out;
    const task_kernel& kernel;
    const farm_options& options;
    const shared_setup& setup;
    double t0;                           ///< the farm's start on this rank's clock: worker times are relative to it
    const std::vector<double>& offsets;  ///< on rank 0, each rank's clock minus its own (clock_offsets); else empty
    double round_trip;                   ///< the round trip to a worker, measured on rank 0 (clock_offsets) and broadcast
    sampler& monitors;                   ///< this rank's readings
};

/// The outcome every rank learns at the end (rank 0 fills it and broadcasts it).
struct outcome {
    farm_outcome::kind what = farm_outcome::kind::ok;
    int rank = 0;
    task_count task = -1;
    std::string text;
    std::vector<int> lost;  ///< on_worker_loss: the ranks presumed lost (send_outcome carries them to every rank)
};
void share_outcome(MPI_Comm comm, outcome& o);
/// With on_worker_loss on, the outcome goes point to point, with no collective that a lost rank would hold up: rank 0
/// sends it to every other rank of `comm` (a rank in `lost` is sent it too, in case it lives, and not waited for);
/// each of them receives it, dropping the farmer's messages that come before it.
void send_outcome(MPI_Comm comm, const outcome& o, const std::vector<int>& lost);
void receive_outcome(MPI_Comm comm, outcome& o, bool gentle);
/// receive_outcome without waiting: true when rank 0's outcome had come (read into `o`). `others_too`: any other
/// message from rank 0 that comes first is received and dropped (as receive_outcome drops it); else only the outcome
/// is looked for (a communicator that carries no farm message from rank 0 to this rank).
bool try_receive_outcome(MPI_Comm comm, outcome& o, bool others_too);
/// The outcome to each rank of `to` on `comm` (tag_outcome), never waited for: ranks that may be gone (the workers of
/// a hierarchical master presumed lost).
void send_outcome_detached(MPI_Comm comm, const outcome& o, const std::vector<int>& to);
[[noreturn]] void throw_outcome(const outcome& o);

/// Progress on one rank's standard error (progress.cpp): a bar on a terminal, plain lines otherwise, nothing when
/// quiet. update(done) with done = tasks ends the line; a mode that counts tasks handed out rather than completed
/// passes at most tasks - 1 until it knows they are done.
class progress_reporter {
public:
    progress_reporter(progress_mode mode, task_count tasks);
    void update(task_count done) {
        if (enabled_) show(done);
    }

private:
    void show(task_count done);
    task_count tasks_;
    double start_, last_ = 0.0, interval_ = 5.0;
    bool enabled_ = false, bar_ = false, finished_ = false;
};

/// The decentralised farm (decentralised.cpp). check_decentralised runs on rank 0 inside agree(): it throws the
/// invalid_argument every rank throws when the options ask for what this mode cannot do.
void check_decentralised(const farm_options& options, const technique& policy, int workers);
farm_report run_decentralised(const farm_run& run);

/// The work-stealing farm (skeleton/mpi/stealing/). check_stealing runs on rank 0 inside agree(): it throws the
/// invalid_argument every rank throws when the options ask for what this mode cannot do.
void check_stealing(const farm_options& options, const task_kernel& kernel, task_count tasks, int ranks);
farm_report run_stealing(const farm_run& run);

/// The hierarchical farm (skeleton/mpi/hierarchical/; these three in grouping.cpp). On rank 0 inside agree(): plan_hierarchy gives each rank's group from
/// farm_options::topology.masters and `nodes` (per rank: the lowest rank on its node), or throws the invalid_argument every
/// rank throws ("farmer": fewer than 3 ranks; "masters": more than (ranks - 1) / 2); hierarchy_workers counts the
/// computing ranks of such a plan (with farmer_computes the supermaster and the masters too); check_hierarchical throws when the options ask for what this mode cannot do (it
/// makes the supermaster's technique and each group's, so that their errors reach every rank before the farm).
std::vector<int> plan_hierarchy(const farm_options& options, int ranks, const std::vector<int>& nodes);
int hierarchy_workers(const std::vector<int>& group_of, bool computes);
void check_hierarchical(const farm_options& options, const task_kernel& kernel, task_count tasks,
                        const std::vector<int>& group_of);
farm_report run_hierarchical(const farm_run& run);

/// Rank 0's technique name and parameters on every rank (collective; decentralised.cpp): the modes whose other
/// ranks make techniques (the decentralised farm, the hierarchical masters) read rank 0's, never their own.
void share_technique(MPI_Comm comm, int rank, std::string& name, technique_options& o);

void write_trace(const std::string& path, const farm_report& r);
/// Collective, once a farm is over: rank 0 writes the trace of `r` to `path` when `wanted` (rank 0's choice, the same
/// on every rank) and every rank throws invalid_argument "trace" when the write failed (a full disk).
void finish_trace(MPI_Comm comm, int rank, bool wanted, const std::string& path, const farm_report& r);
double cpu_seconds();

/// run_farm with farm_options::resume.journal: farms only the tasks the journal does not hold (journaled.cpp).
farm_report run_journaled(MPI_Comm comm, const std::byte* in, std::byte* out, task_count tasks, const task_kernel& kernel,
                          const farm_options& options);

/// The farmer's side (rank 0) and a worker's side of one farm; each returns its rank's report.
farm_report run_farmer_side(const farm_run& run, std::unique_ptr<technique> policy);
/// A worker's side talks to its farmer over `comm`: the farm's communicator, or its group's in a hierarchical farm.
/// `above` (a worker of a hierarchical group, with on_worker_loss: the farm's communicator; else MPI_COMM_NULL): while
/// it waits for its master it also takes the outcome rank 0 sends there when its master is presumed lost.
farm_report run_worker_side(const farm_run& run, MPI_Comm comm, MPI_Comm above = MPI_COMM_NULL);

}  // namespace pfarm::detail
