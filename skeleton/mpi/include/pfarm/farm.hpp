// pfarm: the MPI task farm, C++ API (Gonzalez-Velez & Cole, "Adaptive statistical scheduling of divisible workloads
// in heterogeneous systems", section 4: the user gives <I, O, f> and a technique).
//
//   std::vector<double> in = ..., out(in.size());
//   auto report = pfarm::farm(MPI_COMM_WORLD, std::span(in), std::span(out),
//                             [](const double& x, double& y) { y = x * x; }, {.schedule = {.technique = "gss"}});
//
// Every rank calls farm() collectively, like an MPI collective; only rank 0's buffers are used (unless the
// input is replicated, when every rank reads its own copy). Rank 0 is the farmer; the others are workers; with
// `farmer_computes` rank 0 works too. Outputs land in rank 0's `out`, in task order, whatever the technique.
// The shapes beside it (docs/using-pfarm.md): an index range instead of an input array (index_range), results
// of any size (a task returns std::vector<T>), results streamed to a callback on rank 0 as they arrive
// (farm_stream), and a schedule that learns across calls (schedule_options::learned, pfarm/schedule.hpp).
// The protocol (messages, tags, termination) is described in docs/skeleton.md.
#pragma once

#include "pfarm/calibration.hpp"
#include "pfarm/chunk_sizes.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/error.hpp"
#include "pfarm/farmer.hpp"
#include "pfarm/report_merge.hpp"
#include "pfarm/schedule.hpp"
#include "pfarm/sample.hpp"
#include "pfarm/steal_schedule.hpp"
#include "pfarm/technique.hpp"
#include "pfarm/trace.hpp"

#include <mpi.h>

#include <concepts>
#include <cstddef>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <ranges>
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

/// Who schedules the chunks (docs/hierarchical.md "When to choose flat, hierarchical, decentralised or stealing").
enum class farmer_mode {
    flat,           ///< one farmer on rank 0 answers every request
    hierarchical,   ///< rank 0 a supermaster, masters with task pools, the other ranks workers (docs/hierarchical.md)
    decentralised,  ///< no farmer: every rank claims its own chunks from counters in MPI one-sided memory on rank 0
    stealing,       ///< no farmer: every rank owns a range in its own window, claims from it, and steals when it is empty
};

/// "flat", "hierarchical", "decentralised", "stealing" (the tools' --farmer, the C API's farmer); invalid_argument
/// naming `argument` otherwise.
inline farmer_mode parse_farmer_mode(const std::string& name, const std::string& argument = "farmer") {
    if (name == "flat") return farmer_mode::flat;
    if (name == "hierarchical") return farmer_mode::hierarchical;
    if (name == "decentralised") return farmer_mode::decentralised;
    if (name == "stealing") return farmer_mode::stealing;
    throw invalid_argument(argument, "is '" + name + "'; expected flat, hierarchical, decentralised or stealing");
}

/// What decides the chunk sizes.
struct schedule_options {
    std::string technique = "multi";  ///< any registry name (pfarm-chunks --help)
    technique_options parameters;     ///< the technique's parameters
    /// Monitors to read beyond those the technique needs (their readings go to the trace): "loadavg" or "cgroup"
    /// (with every request), "benchmark" and "latency" (once, at the start). The technique's needs are added
    /// automatically: statistical calibration reads loadavg and benchmark (and latency for multivariate) with the
    /// calibration result; weighted techniques without weights take the benchmark values as V_j and the run queue
    /// from loadavg with every request.
    std::vector<std::string> monitors;
    /// A schedule that learns across calls (pfarm/schedule.hpp): rank 0's is read and updated; a technique that
    /// calibrates starts from what it learned and runs no calibration tasks. Null: every call calibrates.
    pfarm::schedule* learned = nullptr;
    /// The compute time (seconds, finite, >= 0) each worker's calibration must add up to: a worker keeps
    /// calibrating on growing chunks until it does (docs/calibration.md "Calibration span"), so that a CPU quota
    /// (cgroup: Slurm, containers) that lets a short task run at full speed inside its slice is seen; with a span,
    /// af and awf-* start from such a calibration too. Empty: automatic, twice the longest CPU quota period of any
    /// rank's cgroup (0.2 s under the usual 100 ms period) when some rank runs under a quota, else 0 (one
    /// calibration task per worker). Flat farmer only (a hierarchical master calibrates on one task per worker).
    std::optional<double> calibration_span;
};

/// Who schedules and who computes.
struct topology_options {
    /// A flat farmer (default), hierarchical (docs/hierarchical.md: rank 0 the supermaster, `masters` masters,
    /// every technique, reclaim within a group; not with a learned schedule), or decentralised (docs/skeleton.md
    /// "Decentralised farm": the techniques whose chunks depend only on the scheduling step, or on the worker and
    /// what remains; no reclaim; no monitors), or stealing (docs/hierarchical.md "Work stealing": ss, css, gss;
    /// every rank computes; no prefetch, reclaim, monitors or on_worker_loss).
    farmer_mode farmer = farmer_mode::flat;
    /// stealing: a thief's victim, random or tree (pfarm/steal_schedule.hpp); tree with another farmer: "victims"
    victim_rule victims = victim_rule::random;
    /// hierarchical: masters (0 = one per node, MPI_COMM_TYPE_SHARED); K > 0 splits ranks 1..N-1 into K contiguous
    /// groups, the first rank of each its master (1 <= K <= (N - 1) / 2); >= 0
    int masters = 0;
    /// hierarchical: the supermaster's technique over the masters (any registry name; empty: the workers' technique
    /// when it is a weighted scheme, dgss/dfss/dtss... giving HDGSS/HDFSS/HDTSS, else fss with x = 4, which keeps the
    /// supermaster's requests few; pfarm::default_master_technique)
    std::string master_technique;
    /// The ranks that schedule compute chunks too, serving requests between two of their tasks: rank 0 (flat,
    /// decentralised), the supermaster and every master (hierarchical; docs/hierarchical.md)
    bool farmer_computes = false;
};

/// How tasks and results travel between the farmer and the workers.
struct protocol_options {
    bool prefetch = false;  ///< a worker asks for its next chunk before computing the current one
    /// Work take-back (docs/skeleton.md "Reclaim"): once every task is handed out, an idle worker takes unstarted
    /// tasks back from the worker expected to finish last. Workers check for a reclaim between two tasks (one
    /// MPI_Iprobe per task). With prefetch too (a worker that asks ahead may take tasks back at once).
    bool reclaim = false;
    /// Stragglers (docs/reliability.md "Stragglers"): 0 (off), or a factor > 1: once every task is handed out, a
    /// chunk that has taken this many times what its worker's measured speed predicts is re-executed by idle
    /// workers, in pieces; the first results of each task win, the other copy is dropped. Workers check for a
    /// cancel between two tasks (one MPI_Iprobe per task). A task may then run twice: its function must give the
    /// same results each time and have no side effect that a second run would harm. Flat farmer only.
    double stragglers = 0.0;
    bool replicated_input = false;  ///< every rank holds the input: only task indices travel
    /// What a task that throws leads to (docs/reliability.md "Task errors"): stop (the default: the farm stops on
    /// every rank with worker_error), retry (the task runs again, on another worker where there is one, up to
    /// `attempts` runs in all; then the farm stops as with stop, naming the task and its last error; not in the
    /// decentralised farm), or skip (the farm goes on: the task is listed in farm_report::failed_tasks and in the
    /// journal, and its outputs are the fill: each output element value-initialised, Out{}; a result of any size
    /// empty). A retried task may run twice: its function must give the same results each time. A task's process
    /// that crashes is not a task error: it ends the job (docs/reliability.md).
    task_error_rule on_task_error;
    /// A worker rank that is lost (it died: a kill, a crash, the OOM killer, its node; docs/reliability.md "A lost
    /// worker"): off (a runtime that ends the whole job when a rank dies; the journal resumes it), stop (the farm
    /// stops on the living ranks, naming it: pfarm::error), or continue (its unfinished tasks go to the others and the
    /// farm ends with every result; farm_report::lost_ranks names it). A worker is presumed lost when it sends nothing
    /// past 4 times its chunk's expected time plus a slack (5 s; parse_worker_loss_rule "continue=S"). Unset: continue
    /// when the MPI runtime keeps the job running after a rank dies (Open MPI started with orte_enable_recovery) and
    /// the farm is flat or hierarchical, else off. Flat and hierarchical farmers (hierarchical: a worker rank inside a
    /// group, presumed lost by its master; a lost master or rank 0 is not survived); not the decentralised farm.
    std::optional<worker_loss_rule> on_worker_loss;
    /// Traffic of the caller's own that rank 0 serves while it farms (docs/skeleton.md "A side channel"): called on the
    /// rank that farms (rank 0 of the flat farm, the hierarchical supermaster) whenever it finds no farm message waiting,
    /// and after each task of its own when it computes (farmer_computes), it receives what has come on the caller's own
    /// communicator (an MPI_Comm_dup of theirs, never the farm's) without blocking, handles it, and returns whether
    /// anything came. While set, the farmer polls for the farm's messages (a pause that grows from nothing to 0.5 ms
    /// while neither has anything) instead of blocking in MPI_Recv. The workers send on it from their tasks; the farm
    /// never waits for what is on it: the caller receives what is left after the farm. Empty (the default, and on
    /// every other rank): nothing is polled. Not with farmer = decentralised (no rank serves messages while it runs),
    /// nor on one rank (no farmer: the tasks run in order). C++ only.
    std::function<bool()> side_channel;
};

/// What the farm shows and records beside the results.
struct output_options {
    progress_mode progress = progress_mode::quiet;
    std::string trace;          ///< write a trace: "run.csv" or "run.json" (rank 0; docs/traces.md)
    bool record_trace = false;  ///< keep the per-chunk trace in the report (implied by `trace`)
};

/// A farm that survives being stopped (pfarm/journal.hpp, docs/reliability.md).
struct resume_options {
    /// A journal file: rank 0 records each finished task's output; a rerun with the same journal restores those
    /// and farms only the rest.
    std::string journal;
    /// What else determines the outputs beyond the inputs and their shape (an app's options): a journal written
    /// with another key is refused.
    std::string journal_key;
};

namespace testing {
struct emulation;  // pfarm/testing.hpp
}

/// A farm's options, grouped by concern; every field has a default, so a call names only what it changes:
///   pfarm::farm(comm, in, out, fn, {.schedule = {.technique = "gss"}, .protocol = {.prefetch = true}});
struct farm_options {
    schedule_options schedule;
    topology_options topology;
    protocol_options protocol;
    output_options output;
    resume_options resume;
    /// Emulated heterogeneity for tests and benchmarks (pfarm/testing.hpp, testing::emulate); null: from the
    /// environment variables PFARM_SLOWDOWN and PFARM_LOAD_CHANGES when set, else none. Rank 0's is sent to every rank.
    std::shared_ptr<const testing::emulation> emulation;
};

/// What a farm did. Per-rank vectors have one entry per rank (rank 0 is the farmer). The entries the scheduling
/// sessions make (per rank: tasks, chunk sizes, busy and finish times; k, the calibration, imbalance, COV, reclaims,
/// re-executions, task errors, the trace) are report_entries' (pfarm/report_merge.hpp), as in the simulator.
struct farm_report : report_entries {
    std::string technique;
    int ranks = 0;
    int workers = 0;                 ///< the farm's workers: every rank but the farmer, or every rank when it computes
    bool sequential = false;         ///< one rank: the tasks ran in order on it
    task_count tasks = 0;
    double makespan = 0.0;           ///< start (calibration included) to the farmer holding the last result
    /// Rank of the farmer's worker 0: worker w is rank w + first_worker_rank (1; 0 when the farmer computes or the
    /// run is sequential). Entry w of the calibration's times and fitness belongs to that rank.
    int first_worker_rank = 1;
    bool learned = false;           ///< the calibration came from schedule_options::learned: no calibration tasks ran
    task_count journaled = 0;       ///< tasks restored from resume_options::journal, not computed (the rest were farmed)
    double farmer_cpu_seconds = 0.0; ///< CPU time the farmer process used (shows whether it spun idle)
    /// on_worker_loss stop or continue: the ranks presumed lost, in the order they were (their tasks were computed
    /// elsewhere with continue), on every living rank. Empty otherwise.
    std::vector<int> lost_ranks;
    /// Requests for work (asks) that reached rank 0 over MPI: the flat farmer's from its workers, the hierarchical
    /// supermaster's from the masters (its load); 0 in the decentralised farm (no rank serves requests).
    task_count farmer_requests = 0;
    std::vector<int> master_ranks;          ///< hierarchical: the masters' ranks (computing only with farmer_computes), by group
    std::vector<task_count> master_requests;  ///< hierarchical, rank 0: the asks each master's workers sent it
    /// hierarchical, rank 0: of each master's requests up, those that carried a chunk's results (Chronopoulos,
    /// Penmatsa, Yu & Yu, "Scalable loop self-scheduling schemes for heterogeneous clusters", section 4.2, Remark 3:
    /// results and the next request in one message)
    std::vector<task_count> master_merged;
};

/// The tasks [first, last) of a farm with no input array: the worker function receives the task index.
struct index_range {
    task_count first = 0;
    task_count last = 0;
    /// last - first: the number of tasks; 0 when last <= first or when the difference does not fit a task_count
    /// (farm() refuses both as "range").
    task_count size() const noexcept {
        task_count n = 0;
        return last > first && !__builtin_sub_overflow(last, first, &n) ? n : 0;
    }
};

namespace detail {

/// Variable-size results on the wire and in the sinks: a chunk's payload is an index of `count` 64-bit byte
/// counts, padded to 64 bytes, then each task's bytes, each starting at a multiple of the result's alignment.
constexpr std::size_t round_up(std::size_t bytes, std::size_t to) { return (bytes + to - 1) / to * to; }
constexpr std::size_t variable_index_bytes(task_count count) {
    return round_up(static_cast<std::size_t>(count) * sizeof(std::uint64_t), 64);
}

/// A chunk's results handed to a sink on rank 0 (tasks 0-based, as the engine counts them).
struct results_view {
    task_count first = 0, count = 0;
    const std::byte* data = nullptr;  ///< fixed: count x out_bytes; variable: the index, then the bytes
    std::size_t out_bytes = 0;        ///< fixed: bytes of one task's results
    bool variable = false;
    std::size_t align = 1;            ///< variable: alignment of each task's bytes
    std::size_t index_bytes = 0;      ///< variable: bytes of the index (from the message: a reclaim may have cut the chunk)
    task_count skip = 0;              ///< `data` holds `skip` tasks before `first`, not delivered (computed elsewhere first)

    /// Calls f(task, bytes, size) for every task of the chunk, in order.
    template <class F>
    void for_each(F&& f) const {
        if (!variable) {
            for (task_count i = 0; i < count; ++i)
                f(first + i, data + static_cast<std::size_t>(skip + i) * out_bytes, out_bytes);
            return;
        }
        std::size_t at = index_bytes;
        for (task_count i = 0; i < skip + count; ++i) {
            std::uint64_t size = 0;
            std::memcpy(&size, data + static_cast<std::size_t>(i) * sizeof size, sizeof size);
            if (i >= skip) f(first + i - skip, data + at, static_cast<std::size_t>(size));
            at = round_up(at + static_cast<std::size_t>(size), align);
        }
    }
};

/// Where a task with results of any size writes them: once, the whole result.
class result_writer {
public:
    virtual void write(const void* bytes, std::size_t size) = 0;

protected:
    ~result_writer() = default;
};

/// The type-erased description of a task that the engine runs.
struct task_kernel {
    std::size_t in_bytes = 0;   ///< bytes of one input element (0: an index range, no inputs travel)
    std::size_t out_bytes = 0;  ///< bytes of the output of one task (all its output elements); 0 when variable
    /// Computes task `index` (0-based) from `in` (one input element) into `out` (out_bytes). May throw.
    std::function<void(task_count index, const std::byte* in, std::byte* out)> run;
    /// Instead of `run`: a task whose results have any size writes them to the writer (once). May throw.
    std::function<void(task_count index, const std::byte* in, result_writer& out)> run_variable;
    std::size_t out_align = 1;  ///< variable: the alignment of the result's elements (<= 64)
    /// Rank 0: takes each chunk's results as they arrive, instead of `out` (streamed results). May throw: the
    /// farm then stops on every rank with that message.
    std::function<void(const results_view&)> deliver;
    /// What the user's function computes beyond the task's index and input (an index range's first index): part
    /// of a journal's fingerprint.
    std::string identity;
    /// Fixed-size outputs: the out_bytes a failed task's outputs become with on_task_error skip (its Out{} each);
    /// empty: zero bytes. Variable results: a failed task's result is empty.
    std::vector<std::byte> fill;
    /// The first index the user sees (an index range's range.first): failed_tasks are reported from it.
    task_count index_base = 0;
    /// Set on rank 0 when the caller's arguments are wrong: the engine makes every rank throw
    /// invalid_argument(bad_argument, bad_message) together, so nobody hangs.
    std::string bad_argument, bad_message;

    bool variable() const noexcept { return static_cast<bool>(run_variable); }
    /// Whether results go to `deliver` rather than straight into `out` (variable results always do).
    bool streamed() const noexcept { return static_cast<bool>(deliver); }
};

/// The engine behind farm() and the C API. `tasks` and the buffers matter on rank 0 (and `in` on every rank
/// with replicated input). Elements travel as their bytes (a homogeneous cluster is assumed).
farm_report run_farm(MPI_Comm comm, const std::byte* in, std::byte* out, task_count tasks, const task_kernel& kernel,
                     const farm_options& options);

/// Calls fn with the task index first when it takes it: fn(index, args...), else fn(args...).
template <class F, class... A>
decltype(auto) call_task(F& fn, task_count index, A&&... args) {
    if constexpr (std::is_invocable_v<F&, task_count, A&&...>) return fn(index, std::forward<A>(args)...);
    else return fn(std::forward<A>(args)...);
}

template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {
    using value_type = T;
};

/// A task's inputs: a contiguous, sized range of trivially copyable elements (std::vector, std::array, std::span,
/// a C array), not an index_range.
template <class R>
concept task_inputs = !std::is_same_v<std::remove_cvref_t<R>, index_range> && std::ranges::contiguous_range<const R&> &&
                      std::ranges::sized_range<const R&> && std::is_trivially_copyable_v<std::ranges::range_value_t<R>>;

/// Where the tasks' outputs go: a contiguous, sized, writable range of trivially copyable elements.
template <class R>
concept task_outputs = std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
                       std::is_trivially_copyable_v<std::ranges::range_value_t<R>> &&
                       !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R>>>;

/// The span over a task_inputs or task_outputs range.
template <class R>
auto as_span(R&& r) {
    return std::span(std::ranges::data(r), std::ranges::size(r));
}

/// What a task returns: std::vector<T> (results of any size) or one trivially copyable value.
template <class R>
void check_result_type() {
    if constexpr (is_vector<R>::value) {
        static_assert(std::is_trivially_copyable_v<typename is_vector<R>::value_type>,
                      "a task's std::vector<T> result needs a trivially copyable T");
        static_assert(alignof(typename is_vector<R>::value_type) <= 64, "results are aligned up to alignas(64)");
    } else {
        static_assert(std::is_trivially_copyable_v<R> && !std::is_void_v<R>,
                      "a streamed task returns std::vector<T> or a trivially copyable value");
    }
}

/// The fill of a failed task's `count` outputs of type Out (on_task_error skip): each Out{} where Out can be
/// value-initialised, zero bytes otherwise.
template <class Out>
std::vector<std::byte> fill_of(std::size_t count) {
    std::vector<std::byte> bytes(sizeof(Out) * count);
    if constexpr (std::is_default_constructible_v<Out>) {
        const Out value{};
        for (std::size_t i = 0; i < count; ++i) std::memcpy(bytes.data() + i * sizeof(Out), &value, sizeof(Out));
    }
    return bytes;
}

/// A kernel for tasks that return a value (R): fixed size (out_bytes) or, for std::vector<T>, any size.
/// `call(index, in)` runs the user's function on task `index` (0-based) and input bytes `in`.
template <class R, class Call>
task_kernel returning_kernel(std::size_t in_bytes, Call call) {
    check_result_type<R>();
    task_kernel k;
    k.in_bytes = in_bytes;
    if constexpr (is_vector<R>::value) {
        using T = typename is_vector<R>::value_type;
        k.out_align = alignof(T);
        k.run_variable = [call](task_count i, const std::byte* in, result_writer& out) {
            const R r = call(i, in);
            out.write(r.data(), r.size() * sizeof(T));
        };
    } else {
        k.out_bytes = sizeof(R);
        k.fill = fill_of<R>(1);
        k.run = [call](task_count i, const std::byte* in, std::byte* out) {
            const R r = call(i, in);
            std::memcpy(out, &r, sizeof(R));
        };
    }
    return k;
}

/// Hands each task's result of a view to on_result(index, ...) with the task's absolute index (first + i).
template <class R, class Sink>
std::function<void(const results_view&)> result_sink(task_count first, Sink& on_result) {
    return [first, &on_result](const results_view& v) {
        v.for_each([&](task_count i, const std::byte* bytes, std::size_t size) {
            if constexpr (is_vector<R>::value) {
                using T = typename is_vector<R>::value_type;
                // Each task's bytes start at a multiple of alignof(T) in a 64-byte aligned buffer.
                on_result(first + i, std::span<const T>(reinterpret_cast<const T*>(bytes), size / sizeof(T)));
            } else {
                R r;
                std::memcpy(&r, bytes, sizeof(R));
                on_result(first + i, static_cast<const R&>(r));
            }
        });
    };
}

/// Checks `range` on rank 0 (the engine makes every rank throw rank 0's verdict) and names it in the kernel's
/// identity (a journal's fingerprint).
inline void check_range(int rank, const index_range& range, task_kernel& kernel) {
    kernel.identity = "index range from " + std::to_string(range.first);
    kernel.index_base = range.first;
    if (rank == 0 && range.last <= range.first)
        kernel.bad_argument = "range", kernel.bad_message = "is [" + std::to_string(range.first) + ", " +
                                                           std::to_string(range.last) + "): no tasks; expected first < last";
    else if (rank == 0 && (range.size() == 0 || range.size() > max_tasks))  // 0: last - first overflows
        kernel.bad_argument = "range", kernel.bad_message = "is [" + std::to_string(range.first) + ", " +
                                                           std::to_string(range.last) + "): more than " +
                                                           std::to_string(max_tasks) + " (2^53) tasks";
}

/// Outputs per task: rank 0's out.size() / tasks, broadcast (a worker's own `out` may be empty). On rank 0, a size
/// that is not a whole multiple becomes the kernel's bad argument "out" (unless one is already set).
inline std::size_t outputs_per_task(MPI_Comm comm, int rank, task_count tasks, std::size_t out_size, task_kernel& kernel) {
    unsigned long long outputs = tasks <= 0 ? 1 : out_size / static_cast<std::size_t>(tasks);
    MPI_Bcast(&outputs, 1, MPI_UNSIGNED_LONG_LONG, 0, comm);
    if (rank == 0 && kernel.bad_argument.empty() && tasks > 0 &&
        (out_size % static_cast<std::size_t>(tasks) != 0 || outputs == 0))
        kernel.bad_argument = "out", kernel.bad_message = "has " + std::to_string(out_size) + " elements for " +
                                                          std::to_string(tasks) + " tasks; expected a whole multiple";
    return static_cast<std::size_t>(outputs);
}

}  // namespace detail

/// Farms `fn` over `in` into `out` (rank 0's buffers; any contiguous ranges: std::vector, std::array, std::span, a
/// C array, of trivially copyable In and Out). `fn` is called as fn(const In&, Out&) when
/// out.size() == in.size(), or fn(const In&, std::span<Out>) with out.size() / in.size() outputs per task;
/// either form may take the task's index first: fn(task_count index, const In&, ...).
/// Throws pfarm::invalid_argument (bad sizes, zero tasks, unknown technique: on every rank) and
/// pfarm::worker_error (a task threw: on every rank; unless protocol_options::on_task_error retries or skips it).
template <class InRange, class OutRange, class F>
    requires detail::task_inputs<InRange> && detail::task_outputs<OutRange>
farm_report farm(MPI_Comm comm, const InRange& inputs, OutRange&& outputs, F&& fn, const farm_options& options = {}) {
    using In = std::ranges::range_value_t<InRange>;
    using Out = std::ranges::range_value_t<OutRange>;
    const std::span<const In> in = detail::as_span(inputs);
    const std::span<Out> out = detail::as_span(outputs);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    detail::task_kernel kernel;
    const std::size_t ratio = detail::outputs_per_task(comm, rank, static_cast<task_count>(in.size()), out.size(), kernel);
    kernel.in_bytes = sizeof(In);
    kernel.out_bytes = sizeof(Out) * ratio;
    kernel.fill = detail::fill_of<Out>(ratio);
    kernel.run = [&fn, ratio](task_count i, const std::byte* x, std::byte* y) {
        In input;
        std::memcpy(&input, x, sizeof(In));
        if constexpr (std::is_invocable_v<F&, const In&, Out&> || std::is_invocable_v<F&, task_count, const In&, Out&>) {
            Out result{};
            detail::call_task(fn, i, static_cast<const In&>(input), result);
            std::memcpy(y, &result, sizeof(Out));
            (void)ratio;
        } else {
            static_assert(std::is_invocable_v<F&, const In&, std::span<Out>> ||
                              std::is_invocable_v<F&, task_count, const In&, std::span<Out>>,
                          "the worker function must be callable as fn([index,] const In&, Out&) or "
                          "fn([index,] const In&, std::span<Out>)");
            // The engine's buffers hold whole Out elements at multiples of sizeof(Out): suitably aligned.
            detail::call_task(fn, i, static_cast<const In&>(input), std::span<Out>(reinterpret_cast<Out*>(y), ratio));
        }
    };
    return detail::run_farm(comm, reinterpret_cast<const std::byte*>(in.data()), reinterpret_cast<std::byte*>(out.data()),
                            static_cast<task_count>(in.size()), kernel, options);
}

/// Farms `fn` over the indices of `range` into `out` (rank 0's buffer; range.size() x k elements): fn is called
/// as fn(task_count index, Out&), or fn(task_count index, std::span<Out>) with k outputs per task. No input
/// travels: a worker computes from the index alone.
template <class OutRange, class F>
    requires detail::task_outputs<OutRange>
farm_report farm(MPI_Comm comm, index_range range, OutRange&& outputs, F&& fn, const farm_options& options = {}) {
    using Out = std::ranges::range_value_t<OutRange>;
    const std::span<Out> out = detail::as_span(outputs);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    const task_count tasks = std::max<task_count>(range.size(), 0);
    detail::task_kernel kernel;
    detail::check_range(rank, range, kernel);
    const std::size_t ratio = detail::outputs_per_task(comm, rank, tasks, out.size(), kernel);
    kernel.out_bytes = sizeof(Out) * ratio;
    kernel.fill = detail::fill_of<Out>(ratio);
    const task_count first = range.first;
    kernel.run = [&fn, ratio, first](task_count i, const std::byte*, std::byte* y) {
        if constexpr (std::is_invocable_v<F&, task_count, Out&>) {
            Out result{};
            fn(first + i, result);
            std::memcpy(y, &result, sizeof(Out));
            (void)ratio;
        } else {
            static_assert(std::is_invocable_v<F&, task_count, std::span<Out>>,
                          "the worker function must be callable as fn(task_count index, Out&) or "
                          "fn(task_count index, std::span<Out>)");
            fn(first + i, std::span<Out>(reinterpret_cast<Out*>(y), ratio));
        }
    };
    return detail::run_farm(comm, nullptr, reinterpret_cast<std::byte*>(out.data()), tasks, kernel, options);
}

/// Streams results: farms `fn` over `in` (rank 0's input) and hands each task's result to on_result on rank 0
/// as its chunk arrives, instead of storing it. fn is called as fn([task_count index,] const In&) and returns
/// std::vector<T> (any number of elements, trivially copyable T) or one trivially copyable value R.
/// on_result(task_count index, std::span<const T>) (or (index, const R&)) is called on rank 0 only, once per
/// task, from inside this call (never concurrently): chunks in the order their results arrive, the tasks of a
/// chunk in index order. The span is valid during the call only. If it throws, the farm stops on every rank.
template <class InRange, class F, class OnResult>
    requires detail::task_inputs<InRange>
farm_report farm_stream(MPI_Comm comm, const InRange& inputs, F&& fn, OnResult&& on_result,
                        const farm_options& options = {}) {
    using In = std::ranges::range_value_t<InRange>;
    const std::span<const In> in = detail::as_span(inputs);
    using R = std::decay_t<decltype(detail::call_task(fn, task_count{}, std::declval<const In&>()))>;
    detail::task_kernel kernel = detail::returning_kernel<R>(sizeof(In), [&fn](task_count i, const std::byte* x) {
        In input;
        std::memcpy(&input, x, sizeof(In));
        return detail::call_task(fn, i, static_cast<const In&>(input));
    });
    kernel.deliver = detail::result_sink<R>(0, on_result);
    return detail::run_farm(comm, reinterpret_cast<const std::byte*>(in.data()), nullptr, static_cast<task_count>(in.size()),
                            kernel, options);
}

/// Streams results over an index range: fn(task_count index) returns std::vector<T> or a value; on_result as
/// above, with the task's index in the range.
template <class F, class OnResult>
farm_report farm_stream(MPI_Comm comm, index_range range, F&& fn, OnResult&& on_result, const farm_options& options = {}) {
    using R = std::decay_t<std::invoke_result_t<F&, task_count>>;
    const task_count first = range.first;
    detail::task_kernel kernel =
        detail::returning_kernel<R>(0, [&fn, first](task_count i, const std::byte*) { return fn(first + i); });
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    detail::check_range(rank, range, kernel);
    kernel.deliver = detail::result_sink<R>(first, on_result);
    return detail::run_farm(comm, nullptr, nullptr, std::max<task_count>(range.size(), 0), kernel, options);
}

/// Results of any size, in task order: fn([index,] const In&) returns std::vector<T>; rank 0's `out` becomes
/// one vector per task (other ranks' `out` is left alone).
template <class InRange, class T, class F>
    requires detail::task_inputs<InRange> && std::is_trivially_copyable_v<T>
farm_report farm(MPI_Comm comm, const InRange& inputs, std::vector<std::vector<T>>& out, F&& fn,
                 const farm_options& options = {}) {
    using In = std::ranges::range_value_t<InRange>;
    const std::span<const In> in = detail::as_span(inputs);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) out.assign(in.size(), {});
    auto store = [&out](task_count i, std::span<const T> r) { out[static_cast<std::size_t>(i)].assign(r.begin(), r.end()); };
    return farm_stream(comm, in, std::forward<F>(fn), store, options);
}

/// Results of any size over an index range: fn(task_count index) returns std::vector<T>; rank 0's out[i] holds
/// task range.first + i's result.
template <class T, class F>
    requires std::is_trivially_copyable_v<T>
farm_report farm(MPI_Comm comm, index_range range, std::vector<std::vector<T>>& out, F&& fn,
                 const farm_options& options = {}) {
    // Sized when the first result arrives (on rank 0), after the farm has agreed on the range: a huge range is then
    // an error on every rank (the farm stops with it), not an allocation failure on rank 0 alone.
    const task_count first = range.first;
    const auto tasks = static_cast<std::size_t>(range.size());
    bool sized = false;
    auto store = [&out, &sized, first, tasks](task_count i, std::span<const T> r) {
        if (!sized) {
            try {
                out.assign(tasks, {});
            } catch (const std::exception&) {  // std::bad_alloc, std::length_error
                throw invalid_argument("out", "cannot hold one result vector for each of the " + std::to_string(tasks) +
                                                  " tasks of the range");
            }
            sized = true;
        }
        out[static_cast<std::size_t>(i - first)].assign(r.begin(), r.end());
    };
    return farm_stream(comm, range, std::forward<F>(fn), store, options);
}

}  // namespace pfarm
