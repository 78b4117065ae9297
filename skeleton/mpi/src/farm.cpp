// pfarm MPI engine: the entry, run_farm(): agree on the run (setup.cpp), then rank 0 runs the farmer's side
// (farmer_side.cpp) and every other rank a worker's side (worker_side.cpp), or every rank the decentralised farm
// (decentralised.cpp), the work-stealing farm (stealing.cpp) or the hierarchical one (hierarchical.cpp); one rank runs the tasks in order.
// The report's shape and the trace file are written here, once the farm is over (finish_trace: every rank learns
// whether the write succeeded). docs/skeleton.md describes the protocol.
#include "engine.hpp"
#include "results.hpp"

#include "pfarm/mpi.hpp"

#include <sys/resource.h>


namespace pfarm::detail {

/// The farm's trace through the one trace module (pfarm/trace.hpp): the report's summary and chunks.
void write_trace(const std::string& path, const farm_report& r) {
    trace_summary s;
    s.source = trace_source::farm;
    s.technique = r.technique, s.ranks = r.ranks, s.workers = r.workers, s.tasks = r.tasks;
    s.makespan = r.makespan, s.percent_imbalance = r.percent_imbalance, s.cov = r.cov, s.k = r.k;
    pfarm::write_trace(path, s, r.trace, "trace");
}

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}


/// One rank: every task in order, on this rank.
/// With on_task_error retry a failed task runs again at once (the one rank is the only worker), up to its attempts;
/// with skip its outputs become the fill and it is listed.
static farm_report run_sequential(const std::byte* in, std::byte* out, task_count tasks, const task_kernel& kernel,
                                  const farm_options& options, const task_error_rule& on_error) {
    farm_report r = empty_report(options, 1, tasks);
    r.sequential = true;
    const double t0 = now();
    progress_reporter progress(options.output.progress, tasks);
    chunk_results results;  // streamed results: one task at a time, delivered at once
    for (task_count i = 0; i < tasks; ++i) {
        const std::byte* input = in + static_cast<std::size_t>(i) * kernel.in_bytes;
        std::byte* output = kernel.streamed() ? nullptr : out + static_cast<std::size_t>(i) * kernel.out_bytes;
        for (int attempt = 1;; ++attempt) {
            std::string failed;
            try {
                if (output) {
                    kernel.run(i, input, output);
                } else {
                    results.begin(kernel, 1);
                    results.run(i, 0, input);
                }
                break;
            } catch (const std::exception& e) {
                failed = e.what();
            } catch (...) {
                failed = "unknown exception";
            }
            ++r.task_errors;
            if (on_error.what == task_error_rule::kind::retry && attempt < on_error.attempts) {
                ++r.retried_tasks;
                continue;
            }
            if (on_error.what != task_error_rule::kind::skip)
                throw worker_error(i, 0, failed);
            r.failed_tasks.push_back({i, 0, failed});
            if (!output) results.fill(0);
            else if (kernel.fill.size() == kernel.out_bytes) std::memcpy(output, kernel.fill.data(), kernel.out_bytes);
            else std::memset(output, 0, kernel.out_bytes);
            break;
        }
        if (kernel.streamed()) {
            try {  // as with several ranks (the farmer stops the farm with its message): a pfarm::error
                kernel.deliver(view_of(kernel, i, 1, results.payload(), results.index_bytes()));
            } catch (const std::exception& e) {
                throw error(e.what());
            }
        }
        progress.update(i + 1);
    }
    r.makespan = now() - t0;
    r.tasks_per_rank[0] = tasks;
    r.chunks_per_rank[0] = {tasks};
    r.busy_per_rank[0] = r.makespan;
    r.finish_per_rank[0] = r.makespan;
    r.trace.push_back({0, 0, tasks, 0.0, 0.0, r.makespan, r.makespan, false, {}});
    r.workers = 1;
    return r;
}

/// The trace, once the farm is over: rank 0 writes it (whole or not at all: pfarm/output_file.hpp) and every rank
/// learns the outcome, so that a write that fails (a full disk) is an invalid_argument "trace" on every rank, never
/// a success on the workers and a truncated file. `wanted` is rank 0's (config_header::trace): the same on every
/// rank, whatever the others' options say.
void finish_trace(MPI_Comm comm, int rank, bool wanted, const std::string& path, const farm_report& r) {
    if (!wanted) return;
    std::string failed;
    if (rank == 0) {
        try {
            write_trace(path, r);
        } catch (const invalid_argument& e) {
            failed = e.message();
        } catch (const std::exception& e) {
            failed = e.what();
        }
    }
    broadcast_string(comm, failed, r.lost_ranks);
    if (!failed.empty()) throw invalid_argument("trace", failed);
}

farm_report run_farm(MPI_Comm user_comm, const std::byte* in, std::byte* out, task_count tasks, const task_kernel& kernel,
                     const farm_options& options) {
    if (!options.resume.journal.empty()) return run_journaled(user_comm, in, out, tasks, kernel, options);
    mpi::communicator comm(user_comm);  // the farm's own context: never mixes with the user's messages
    const int rank = comm.rank(), ranks = comm.size();
    std::unique_ptr<technique> policy;
    const shared_setup setup = agree(comm.get(), rank, ranks, tasks, kernel, options, policy);
    const bool trace = setup.config.trace != 0;
    if (ranks == 1) {
        mpi::startup_over();
        farm_report r = run_sequential(in, out, tasks, kernel, options, task_errors_of(setup.config));
        finish_trace(comm.get(), rank, trace, options.output.trace, r);
        for (failed_task& f : r.failed_tasks) f.task += kernel.index_base;
        return r;
    }
    mpi::check(MPI_Barrier(comm.get()), "MPI_Barrier");
    const double t0 = now();  // every rank's clock starts here: worker times are relative to it
    double round_trip = 0.0;  // measured on rank 0 (clock_offsets): what a reclaim must win (farmer.hpp)
    const std::vector<double> offsets = clock_offsets(comm.get(), rank, ranks, t0, setup.config.gentle_wait != 0, &round_trip);
    // Every rank knows the round trip: the workers ask ahead (prefetch) about twice that before a chunk ends.
    mpi::check(MPI_Bcast(&round_trip, 1, MPI_DOUBLE, 0, comm.get()), "MPI_Bcast");
    sampler monitors(setup, rank, t0);
    monitors.start(comm.get(), rank);  // collective: latency probe, benchmark kernel (part of the makespan)
    farm_report r;
    // The flat farm's setup ends here (the other farms have their own first: each calls end_setup after it).
    if (setup.config.farmer == static_cast<std::int32_t>(farmer_mode::flat)) end_setup(comm.get(), rank, ranks);
    const farm_run run{comm.get(), rank, ranks, in, out, kernel, options, setup, t0, offsets, round_trip, monitors};
    if (setup.config.farmer == static_cast<std::int32_t>(farmer_mode::decentralised))
        r = run_decentralised(run);
    else if (setup.config.farmer == static_cast<std::int32_t>(farmer_mode::stealing))
        r = run_stealing(run);
    else if (setup.config.farmer == static_cast<std::int32_t>(farmer_mode::hierarchical))
        r = run_hierarchical(run);
    else if (rank == 0)
        r = run_farmer_side(run, std::move(policy));
    else
        r = run_worker_side(run, run.comm);
    if (!r.lost_ranks.empty()) mpi::note_lost_ranks();
    r.round_trip = round_trip;
    finish_trace(comm.get(), rank, trace, options.output.trace, r);
    for (failed_task& f : r.failed_tasks) f.task += kernel.index_base;  // as the user counts them
    return r;
}


}  // namespace pfarm::detail
