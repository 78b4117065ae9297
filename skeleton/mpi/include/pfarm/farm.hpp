// pfarm: the MPI task farm, C++ API (seed 004 section 4: the user gives <I, O, f> and a technique).
//
//   std::vector<double> in = ..., out(in.size());
//   auto report = pfarm::farm(MPI_COMM_WORLD, std::span(in), std::span(out),
//                             [](const double& x, double& y) { y = x * x; }, {.technique = "gss"});
//
// Every rank calls farm() collectively, like an MPI collective; only rank 0's buffers are used (unless the
// input is replicated, when every rank reads its own copy). Rank 0 is the farmer; the others are workers; with
// `farmer_computes` rank 0 works too. Outputs land in rank 0's `out`, in task order, whatever the technique.
// The protocol (messages, tags, termination) is described in docs/skeleton.md.
#pragma once

#include "pfarm/calibration.hpp"
#include "pfarm/emulation.hpp"
#include "pfarm/error.hpp"
#include "pfarm/sample.hpp"
#include "pfarm/technique.hpp"
#include "pfarm/trace.hpp"

#include <mpi.h>

#include <concepts>
#include <cstddef>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace pfarm {

/// A task's worker function failed. Every rank of the farm throws it, naming the task and the message.
class worker_error : public error {
public:
    worker_error(task_count task, int rank, const std::string& message)
        : error("task " + std::to_string(task) + " failed on rank " + std::to_string(rank) + ": " + message),
          task_(task), rank_(rank), message_(message) {}
    task_count task() const noexcept { return task_; }
    int rank() const noexcept { return rank_; }
    const std::string& message() const noexcept { return message_; }

private:
    task_count task_;
    int rank_;
    std::string message_;
};

/// How the farmer reports progress on standard error.
enum class progress_mode {
    automatic,  ///< a bar when stderr is a terminal, occasional plain lines otherwise
    plain,      ///< occasional plain lines
    quiet,      ///< nothing
};

/// Who schedules the chunks (docs/skeleton.md "Decentralised farm").
enum class farmer_mode {
    flat,           ///< one farmer on rank 0 answers every request
    hierarchical,   ///< a supermaster and masters (not implemented under MPI yet: invalid_argument "farmer")
    decentralised,  ///< no farmer: every rank claims its own chunks from counters in MPI one-sided memory on rank 0
};

struct farm_options {
    std::string technique = "multi";       ///< any registry name (pfarm-chunks --help)
    technique_options parameters;          ///< the technique's parameters
    bool farmer_computes = false;          ///< rank 0 computes chunks too, serving requests between tasks
    bool prefetch = false;                 ///< a worker asks for its next chunk before computing the current one
    /// Work take-back (docs/skeleton.md "Reclaim"): once every task is handed out, an idle worker takes
    /// unstarted tasks back from the worker expected to finish last. Workers check for a reclaim between two
    /// tasks (one MPI_Iprobe per task). With prefetch too (a worker that asks ahead may take tasks back at once).
    bool reclaim = false;
    bool replicated_input = false;         ///< every rank holds the input: only task indices travel
    std::string trace;                     ///< write a trace: "run.csv" or "run.json" (rank 0; docs/traces.md)
    bool record_trace = false;             ///< keep the per-chunk trace in the report (implied by `trace`)
    progress_mode progress = progress_mode::quiet;
    /// Emulated heterogeneity: rank r sleeps (slowdown[r] - 1) x the compute time of each chunk, freeing its
    /// core. Empty: from the environment variable PFARM_SLOWDOWN="f0,f1,..." if set.
    std::vector<double> slowdown;
    /// Emulated load changes: from `time` seconds after the farm started, rank `worker` runs `factor` times
    /// slower (pfarm/emulation.hpp). Empty: from PFARM_LOAD_CHANGES="rank:time:factor,..." if set.
    std::vector<load_change> load_changes;
    /// Monitors to read beyond those the technique needs (their readings go to the trace): "loadavg" (with
    /// every request), "benchmark" and "latency" (once, at the start). The technique's needs are added
    /// automatically: statistical calibration reads loadavg and benchmark (and latency for multivariate)
    /// with the calibration result; weighted techniques without weights take the benchmark values as V_j
    /// and the run queue from loadavg with every request.
    std::vector<std::string> monitors;
    /// Who schedules: a flat farmer (default), hierarchical, or decentralised (docs/skeleton.md "Decentralised
    /// farm": the techniques whose chunks depend only on the scheduling step, or on the worker and what remains;
    /// no reclaim; no monitors).
    farmer_mode farmer = farmer_mode::flat;
    int masters = 0;  ///< hierarchical: masters (0 = one per node); >= 0
};

/// What a farm did. Per-rank vectors have one entry per rank (rank 0 is the farmer).
struct farm_report {
    std::string technique;
    int ranks = 0;
    int workers = 0;                 ///< the farm's workers: every rank but the farmer, or every rank when it computes
    bool sequential = false;         ///< one rank: the tasks ran in order on it
    task_count tasks = 0;
    double makespan = 0.0;           ///< start (calibration included) to the farmer holding the last result
    std::vector<task_count> tasks_per_rank;
    std::vector<std::vector<task_count>> chunks_per_rank;  ///< sizes in order, calibration task included
    std::vector<double> busy_per_rank;                     ///< seconds computing (emulated slowdown included)
    std::vector<double> finish_per_rank;                   ///< when its last chunk ended (farmer's clock)
    /// Rank of the farmer's worker 0: worker w is rank w + first_worker_rank (1; 0 when the farmer computes or the
    /// run is sequential). Entry w of the calibration's times and fitness belongs to that rank.
    int first_worker_rank = 1;
    std::optional<calibration_result> calibration;  ///< F, CV, k of eq. 8, when the technique calibrated
    std::optional<double> k;                        ///< the installment factor the technique used, where it has one
    double percent_imbalance = 0.0;  ///< of the workers' finish times (one that got no task: 0), as the simulator
    double cov = 0.0;
    double farmer_cpu_seconds = 0.0; ///< CPU time the farmer process used (shows whether it spun idle)
    task_count reclaims = 0;         ///< reclaims that moved tasks (farm_options::reclaim)
    task_count reclaimed_tasks = 0;  ///< tasks they moved
    std::vector<chunk_trace> trace;  ///< every chunk, on rank 0, when `trace` or `record_trace` was asked for
};

namespace detail {

/// The type-erased description of a task that the engine runs.
struct task_kernel {
    std::size_t in_bytes = 0;   ///< bytes of one input element
    std::size_t out_bytes = 0;  ///< bytes of the output of one task (all its output elements)
    /// Computes task `index` from `in` (one input element) into `out` (out_bytes). May throw.
    std::function<void(task_count index, const std::byte* in, std::byte* out)> run;
    /// Set on rank 0 when the caller's arguments are wrong: the engine makes every rank throw
    /// invalid_argument(bad_argument, bad_message) together, so nobody hangs.
    std::string bad_argument, bad_message;
};

/// The engine behind farm() and the C API. `tasks` and the buffers matter on rank 0 (and `in` on every rank
/// with replicated input). Elements travel as their bytes (a homogeneous cluster is assumed).
farm_report run_farm(MPI_Comm comm, const std::byte* in, std::byte* out, task_count tasks, const task_kernel& kernel,
                     const farm_options& options);

}  // namespace detail

/// Farms `fn` over `in` into `out` (rank 0's buffers). `fn` is called as fn(const In&, Out&) when
/// out.size() == in.size(), or fn(const In&, std::span<Out>) with out.size() / in.size() outputs per task.
/// Throws pfarm::invalid_argument (bad sizes, zero tasks, unknown technique: on every rank) and
/// pfarm::worker_error (a task threw: on every rank).
template <class In, class Out, class F>
    requires std::is_trivially_copyable_v<In> && std::is_trivially_copyable_v<Out>
farm_report farm(MPI_Comm comm, std::span<const In> in, std::span<Out> out, F&& fn, const farm_options& options = {}) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    // Outputs per task come from rank 0's buffers, the only ones that count: a worker's own `out` may be empty.
    unsigned long long outputs = in.empty() ? 1 : out.size() / in.size();
    MPI_Bcast(&outputs, 1, MPI_UNSIGNED_LONG_LONG, 0, comm);
    const auto ratio = static_cast<std::size_t>(outputs);
    detail::task_kernel kernel;
    // Only rank 0's sizes count; the engine broadcasts the verdict so every rank throws together.
    if (rank == 0 && !in.empty() && (out.size() % in.size() != 0 || ratio == 0)) {
        kernel.bad_argument = "out";
        kernel.bad_message = "has " + std::to_string(out.size()) + " elements for " + std::to_string(in.size()) +
                             " tasks; expected a whole multiple";
    }
    kernel.in_bytes = sizeof(In);
    kernel.out_bytes = sizeof(Out) * ratio;
    kernel.run = [&fn, ratio](task_count, const std::byte* x, std::byte* y) {
        In input;
        std::memcpy(&input, x, sizeof(In));
        if constexpr (std::is_invocable_v<F&, const In&, Out&>) {
            Out result{};
            fn(input, result);
            std::memcpy(y, &result, sizeof(Out));
            (void)ratio;
        } else {
            static_assert(std::is_invocable_v<F&, const In&, std::span<Out>>,
                          "the worker function must be callable as fn(const In&, Out&) or fn(const In&, std::span<Out>)");
            // The engine's buffers hold whole Out elements at multiples of sizeof(Out): suitably aligned.
            fn(input, std::span<Out>(reinterpret_cast<Out*>(y), ratio));
        }
    };
    return detail::run_farm(comm, reinterpret_cast<const std::byte*>(in.data()), reinterpret_cast<std::byte*>(out.data()),
                            static_cast<task_count>(in.size()), kernel, options);
}

/// Convenience overload for containers (std::vector, std::array).
template <class InRange, class OutRange, class F>
farm_report farm(MPI_Comm comm, const InRange& in, OutRange& out, F&& fn, const farm_options& options = {}) {
    return farm(comm, std::span(std::data(in), std::size(in)), std::span(std::data(out), std::size(out)),
                std::forward<F>(fn), options);
}

}  // namespace pfarm
