// The MPI flat farmer: a driver of pfarm::farmer (the transport-free state machine) over MPI.
//
// Protocol (docs/skeleton.md has the full description). All traffic is on a duplicate of the user's
// communicator, so tags never clash with the user's messages.
//   setup:    rank 0 validates and broadcasts a config (tasks, flags, emulation) or an error every rank throws.
//   worker -> farmer, tag 1 (request):  [request_header][results of the chunk it completed, if any]
//             kind request   = "here are my results (if count > 0), give me work"
//             kind final     = "here are my results, I want nothing more" (after a stop, with prefetch)
//             kind failure   = "task failed_task threw", followed by the message text
//   worker -> farmer, tag 4 (released): [request_header] of kind released only, "I gave back tasks
//             [first, first + count) of my chunk" (count may be 0); the farmer serves these before the
//             requests waiting (messages.hpp, next_farmer_message)
//   farmer -> worker, tag 2 (reply):    [reply_header][inputs of the chunk, unless the input is replicated]
//             kind assign / stop / abort
//             kind reclaim   = "give back `share` of your unstarted tasks" (--reclaim): the worker answers with
//                              `released` between two tasks, or at once while it waits for a reply. Every
//                              farmer -> worker message uses tag 2, so a worker sees them in the order sent.
//             kind later     = "nothing now: ask again with nothing in hand" (--reclaim with --prefetch, the
//                              pool is empty): the worker sends its results with a plain request, and no more
//                              prefetch requests.
//   end:      rank 0 broadcasts the outcome (ok, worker failure, farmer error); every rank returns or throws.
// Workers' requests carry their previous chunk's results (piggybacking, seed 002 section 5) and its compute
// time, which the farmer feeds to the technique.
#include "pfarm/farm.hpp"

#include "messages.hpp"

#include "pfarm/benchmark_monitor.hpp"
#include "pfarm/farmer.hpp"
#include "pfarm/latency.hpp"
#include "pfarm/loadavg_monitor.hpp"
#include "pfarm/metrics.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/registry.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <thread>

namespace pfarm::detail {

namespace {

enum request_kind : std::int32_t { request_work = 1, final_results = 2, failure = 3, released_work = 4 };
enum reply_kind : std::int32_t { assign_work = 1, stop_work = 2, abort_work = 3, reclaim_work = 4, later_work = 5 };

/// resource_sample on the wire: plain doubles and a presence mask.
struct wire_sample {
    double values[5] = {0, 0, 0, 0, 0};  // availability, run_queue, load1, latency, benchmark
    std::int32_t cores = 0;
    std::uint32_t present = 0;
};

wire_sample to_wire(const resource_sample& s) {
    wire_sample w;
    const std::optional<double>* fields[5] = {&s.availability, &s.run_queue, &s.load1, &s.latency, &s.benchmark};
    for (int i = 0; i < 5; ++i)
        if (*fields[i]) w.values[i] = **fields[i], w.present |= 1u << i;
    if (s.cores) w.cores = *s.cores, w.present |= 1u << 5;
    return w;
}

resource_sample from_wire(const wire_sample& w) {
    resource_sample s;
    std::optional<double>* fields[5] = {&s.availability, &s.run_queue, &s.load1, &s.latency, &s.benchmark};
    for (int i = 0; i < 5; ++i)
        if (w.present & (1u << i)) *fields[i] = w.values[i];
    if (w.present & (1u << 5)) s.cores = w.cores;
    return s;
}

struct request_header {
    std::int32_t kind = request_work;
    std::int32_t reserved = 0;
    std::int64_t first = 0;   ///< the completed chunk (count 0: none)
    std::int64_t count = 0;
    double seconds = 0.0;     ///< its compute time, emulated slowdown included
    double started = 0.0;     ///< worker clock, seconds since the farm started there
    double finished = 0.0;
    std::int64_t failed_task = -1;
    wire_sample sample;
};

struct reply_header {
    std::int32_t kind = assign_work;
    std::int32_t calibration = 0;
    std::int64_t first = 0;
    std::int64_t count = 0;
    double share = 0.0;  ///< reclaim: the farmer's share of the unstarted tasks to give back (victim_gives)
    double thief_seconds = 0.0;  ///< reclaim: the thief's seconds per task
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
};

/// Which readings the run takes (config_header::monitors).
enum monitor_bits : std::int32_t {
    loadavg_each = 1,         ///< loadavg with every request (run queue of the weighted schemes, or asked for)
    loadavg_calibration = 2,  ///< loadavg with the calibration result (availability, statistical calibration)
    benchmark_once = 4,       ///< the benchmark kernel once at the start, sent with every request
    latency_once = 8,         ///< the latency probe once at the start
    benchmark_weights = 16,   ///< the benchmark values become the weights V_j of a weighted technique
};

/// What the monitors read, as the run needs it; the farmer (when it computes) and the workers use one each.
class sampler {
public:
    explicit sampler(std::int32_t bits) : bits_(bits) {}
    /// Collective probes at the start (every rank calls it). Throws pfarm::error on every rank when a
    /// benchmark could not run somewhere.
    void start(MPI_Comm comm, int rank) {
        if (bits_ & latency_once) cached_.latency = mpi::measure_latencies(comm)[static_cast<std::size_t>(rank)];
        if (bits_ & (benchmark_once | benchmark_weights)) {
            int failed = 0, any = 0;
            std::string why;
            try {
                cached_.benchmark = benchmark_monitor().read().benchmark;
            } catch (const std::exception& e) {
                failed = 1, why = e.what();
            }
            mpi::check(MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
            if (any) throw error("the benchmark monitor failed" + (why.empty() ? std::string(" on another rank") : ": " + why));
        }
    }
    /// The reading that goes with a request whose completed chunk was (or not) a calibration task.
    resource_sample read(bool calibration) {
        resource_sample s = cached_;
        if ((bits_ & loadavg_each) || (calibration && (bits_ & loadavg_calibration))) {
            const resource_sample l = loadavg_.read();
            s.availability = l.availability;
            s.run_queue = l.run_queue;
            s.load1 = l.load1;
        }
        return s;
    }
    std::optional<double> benchmark() const { return cached_.benchmark; }

private:
    std::int32_t bits_;
    resource_sample cached_;
    loadavg_monitor loadavg_;
};

std::int32_t monitors_needed(const technique& policy, const farm_options& options) {
    std::int32_t bits = 0;
    const auto mode = policy.needs_calibration();
    if (mode == calibration_mode::univariate || mode == calibration_mode::multivariate)
        bits |= loadavg_calibration | benchmark_once;
    if (mode == calibration_mode::multivariate) bits |= latency_once;
    const technique_info& info = find_technique(options.technique);
    const bool measured = info.name.rfind("hpls-", 0) == 0;  // hpls-* weighs by measured times by definition
    if (options.parameters.weights.empty() && !measured && (info.family == "weighted" || info.family == "two-phase"))
        bits |= benchmark_weights;
    if (info.family == "weighted") bits |= loadavg_each;
    for (const auto& name : options.monitors) {
        if (name == "loadavg") bits |= loadavg_each;
        else if (name == "benchmark") bits |= benchmark_once;
        else if (name == "latency") bits |= latency_once;
        else throw invalid_argument("monitors", "unknown monitor '" + name + "'; expected loadavg, benchmark or latency");
    }
    return bits;
}

/// Broadcast from rank 0 after the farm.
struct outcome_header {
    std::int32_t kind = 0;  ///< 0 ok, 1 worker failure, 2 farmer error
    std::int32_t rank = 0;
    std::int64_t task = -1;
    std::int32_t text_length = 0;
};

double now() { return MPI_Wtime(); }

/// Clock alignment for traces: rank 0 exchanges one ping-pong with each worker in turn (Cristian's method).
/// Returns, on rank 0, each rank's offset: worker time since its start minus farmer time since the farmer's
/// start at the same instant (0 elsewhere), so that farmer_time = worker_time - offset. Error: half a round trip.
std::vector<double> clock_offsets(MPI_Comm comm, int rank, int ranks, double t0, double* round_trip) {
    std::vector<double> offsets(static_cast<std::size_t>(rank == 0 ? ranks : 0), 0.0);
    *round_trip = 0.0;
    if (rank == 0) {
        for (int r = 1; r < ranks; ++r) {
            const double sent = now() - t0;
            double theirs = 0.0;
            mpi::check(MPI_Send(&sent, 1, MPI_DOUBLE, r, tag_clock, comm), "MPI_Send");
            mpi::check(MPI_Recv(&theirs, 1, MPI_DOUBLE, r, tag_clock, comm, MPI_STATUS_IGNORE), "MPI_Recv");
            const double received = now() - t0;
            offsets[static_cast<std::size_t>(r)] = theirs - (sent + received) / 2.0;
            *round_trip += (received - sent) / (ranks - 1);
        }
    } else {
        double ping = 0.0;
        mpi::check(MPI_Recv(&ping, 1, MPI_DOUBLE, 0, tag_clock, comm, MPI_STATUS_IGNORE), "MPI_Recv");
        const double mine = now() - t0;
        mpi::check(MPI_Send(&mine, 1, MPI_DOUBLE, 0, tag_clock, comm), "MPI_Send");
    }
    return offsets;
}

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

/// Receives the matched message into `buffer` (grown, never shrunk: no allocation once warm).
int receive(MPI_Message& message, const MPI_Status& status, std::vector<std::byte>& buffer) {
    int bytes = 0;
    mpi::check(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
    if (buffer.size() < static_cast<std::size_t>(bytes)) buffer.resize(static_cast<std::size_t>(bytes) * 3 / 2 + 64);
    mpi::check(MPI_Mrecv(buffer.data(), bytes, MPI_BYTE, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
    return bytes;
}

/// The chunks a worker holds (at most two, with prefetch), oldest first: a fixed ring, no allocation.
struct flight {
    task_count first = 0, count = 0;
    double sent = 0.0;
    bool calibration = false;
};
class in_flight {
public:
    bool empty() const noexcept { return size_ == 0; }
    void push(const flight& f) {
        if (size_ == 2) throw internal_error("farm: a worker holds more than two chunks");
        slots_[(head_ + size_++) % 2] = f;
    }
    flight pop() {
        if (size_ == 0) throw internal_error("farm: results for a chunk that is not in flight");
        const flight f = slots_[head_];
        head_ = (head_ + 1) % 2;
        --size_;
        return f;
    }
    /// The chunk ending at given.first + given.count gave `given` back (reclaim). Returns its position
    /// counted from the newest (0: the newest, 1: the one before).
    int shrink(const chunk& given) {
        for (int i = 0; i < size_; ++i) {
            flight& f = slots_[(head_ + size_ - 1 - i) % 2];
            if (f.first + f.count == given.first + given.count && given.first > f.first) {
                f.count -= given.count;
                return i;
            }
        }
        throw internal_error("farm: tasks given back from a chunk that is not in flight");
    }

private:
    flight slots_[2];
    int head_ = 0, size_ = 0;
};

void send_bytes(MPI_Comm comm, const std::vector<std::byte>& buffer, std::size_t bytes, int rank, int tag) {
    mpi::check(MPI_Send(buffer.data(), static_cast<int>(bytes), MPI_BYTE, rank, tag, comm), "MPI_Send");
}

/// Emulated heterogeneity: per-rank slowdown and load changes over time (seconds since the start).
struct emulation {
    std::vector<double> slowdown;
    std::vector<load_change> changes;  ///< pfarm/emulation.hpp; the worker is the rank

    double factor(int rank, double t) const {
        double f = static_cast<std::size_t>(rank) < slowdown.size() ? slowdown[static_cast<std::size_t>(rank)] : 1.0;
        double change = 1.0, when = -1.0;
        for (const auto& c : changes)
            if (c.worker == rank && c.time <= t && c.time >= when) change = c.factor, when = c.time;
        return f * change;
    }
    bool active() const { return !slowdown.empty() || !changes.empty(); }
};

/// The options' emulation, or the environment's (PFARM_SLOWDOWN, PFARM_LOAD_CHANGES) where the options have
/// none; parsed and range-checked by pfarm/emulation.hpp, the slowdowns checked here.
emulation emulation_from(const farm_options& options, int ranks) {
    emulation e{options.slowdown, options.load_changes};
    std::string changes_argument = "load_changes";
    if (e.slowdown.empty())
        if (const char* env = std::getenv("PFARM_SLOWDOWN"); env && *env) e.slowdown = parse_numbers(env, "PFARM_SLOWDOWN");
    if (e.changes.empty())
        if (const char* env = std::getenv("PFARM_LOAD_CHANGES"); env && *env) {
            changes_argument = "PFARM_LOAD_CHANGES";
            e.changes = parse_load_changes(env, changes_argument);
        }
    for (double f : e.slowdown)
        if (!(f >= 1.0)) throw invalid_argument("slowdown", "factor " + std::to_string(f) + " is below 1");
    if (e.slowdown.size() > static_cast<std::size_t>(ranks))
        throw invalid_argument("slowdown", "has " + std::to_string(e.slowdown.size()) + " factors for " +
                                               std::to_string(ranks) + " ranks");
    for (const auto& c : e.changes) check_load_change(c, ranks, changes_argument);
    return e;
}

/// The emulated slowdown of a task that started at `start` and computed `compute` seconds: an emulated slow
/// rank sleeps (factor - 1) x compute after it, freeing its core.
double emulation_owed(const emulation& e, int rank, double start, double compute) {
    return std::max(0.0, (e.factor(rank, start) - 1.0) * compute);
}

void sleep_for(double seconds) { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); }

struct shared_setup {
    config_header config;
    emulation emulated;
};

void broadcast_string(MPI_Comm comm, std::string& text) {
    int length = static_cast<int>(text.size());
    mpi::check(MPI_Bcast(&length, 1, MPI_INT, 0, comm), "MPI_Bcast");
    text.resize(static_cast<std::size_t>(length));
    if (length > 0) mpi::check(MPI_Bcast(text.data(), length, MPI_CHAR, 0, comm), "MPI_Bcast");
}

/// The run's description, agreed by every rank (rank 0's view wins), or an invalid_argument on every rank.
shared_setup agree(MPI_Comm comm, int rank, int ranks, task_count tasks, const task_kernel& kernel,
                   const farm_options& options, std::unique_ptr<technique>& policy) {
    shared_setup s;
    std::string argument, message;
    std::vector<double> emulation_data;
    if (rank == 0) {
        try {
            if (!kernel.bad_argument.empty()) throw invalid_argument(kernel.bad_argument, kernel.bad_message);
            if (tasks < 1) throw invalid_argument("in", "holds " + std::to_string(tasks) + " tasks; expected >= 1");
            if (!kernel.run) throw invalid_argument("worker", "is empty");
            const int workers = ranks == 1 ? 1 : ranks - (options.farmer_computes ? 0 : 1);
            policy = make_technique(options.technique, options.parameters, workers);
            s.config.monitors = monitors_needed(*policy, options);
            s.emulated = emulation_from(options, ranks);
            s.config.tasks = tasks;
            s.config.farmer_computes = options.farmer_computes ? 1 : 0;
            s.config.prefetch = options.prefetch ? 1 : 0;
            s.config.reclaim = options.reclaim ? 1 : 0;
            s.config.replicated = options.replicated_input ? 1 : 0;
            for (double f : s.emulated.slowdown) emulation_data.push_back(f);
            emulation_data.push_back(-1.0);  // separator
            for (const auto& c : s.emulated.changes)
                emulation_data.insert(emulation_data.end(), {static_cast<double>(c.worker), c.time, c.factor});
        } catch (const invalid_argument& e) {
            s.config.error = 1;
            argument = e.argument();
            message = e.what();
            message = message.substr(std::min(message.size(), argument.size() + 2));
        }
        s.config.emulation_count = static_cast<std::int32_t>(emulation_data.size());
    }
    mpi::check(MPI_Bcast(&s.config, sizeof(config_header), MPI_BYTE, 0, comm), "MPI_Bcast");
    if (s.config.error) {
        broadcast_string(comm, argument);
        broadcast_string(comm, message);
        throw invalid_argument(argument, message);
    }
    emulation_data.resize(static_cast<std::size_t>(s.config.emulation_count));
    if (!emulation_data.empty())
        mpi::check(MPI_Bcast(emulation_data.data(), s.config.emulation_count, MPI_DOUBLE, 0, comm), "MPI_Bcast");
    if (rank != 0) {  // decode: slowdown factors (>= 1), a -1 separator, then (rank, time, factor) triples
        std::size_t i = 0;
        while (i < emulation_data.size() && emulation_data[i] >= 0.0) s.emulated.slowdown.push_back(emulation_data[i++]);
        for (++i; i + 3 <= emulation_data.size(); i += 3)
            s.emulated.changes.push_back({static_cast<int>(emulation_data[i]), emulation_data[i + 1], emulation_data[i + 2]});
    }
    // An idle rank busy-waits in MPI_Probe unless ranks outnumber the cores of its node.
    MPI_Comm node;
    mpi::check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    int local = 1;
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    int gentle = static_cast<unsigned>(local) > cores ? 1 : 0, any_gentle = 0;
    mpi::check(MPI_Allreduce(&gentle, &any_gentle, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
    s.config.gentle_wait = any_gentle;
    return s;
}

/// The outcome every rank learns at the end; rank 0 fills it.
struct outcome {
    outcome_header header;
    std::string text;
};

[[noreturn]] void throw_outcome(const outcome& o) {
    if (o.header.kind == 1) throw worker_error(o.header.task, o.header.rank, o.text);
    throw error(o.text);
}

void share_outcome(MPI_Comm comm, outcome& o) {
    o.header.text_length = static_cast<std::int32_t>(o.text.size());
    mpi::check(MPI_Bcast(&o.header, sizeof(outcome_header), MPI_BYTE, 0, comm), "MPI_Bcast");
    o.text.resize(static_cast<std::size_t>(o.header.text_length));
    if (o.header.text_length > 0)
        mpi::check(MPI_Bcast(o.text.data(), o.header.text_length, MPI_CHAR, 0, comm), "MPI_Bcast");
}

/// Progress on the farmer's standard error: a bar on a terminal, plain lines otherwise, nothing when quiet.
class progress_reporter {
public:
    progress_reporter(progress_mode mode, task_count tasks) : tasks_(tasks), start_(now()) {
        const bool terminal = isatty(STDERR_FILENO) != 0;
        enabled_ = mode != progress_mode::quiet;
        bar_ = mode == progress_mode::automatic && terminal;
        interval_ = bar_ ? 0.2 : 5.0;
    }
    void update(task_count done) {
        if (!enabled_) return;
        const double t = now();
        if (done < tasks_ && t - last_ < interval_) return;
        last_ = t;
        const double elapsed = t - start_, rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0;
        const double left = rate > 0 ? static_cast<double>(tasks_ - done) / rate : 0.0;
        const int percent = static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(tasks_));
        std::ostringstream line;
        if (bar_) {
            const int width = 30, filled = percent * width / 100;
            line << "\rpfarm [" << std::string(static_cast<std::size_t>(filled), '#')
                 << std::string(static_cast<std::size_t>(width - filled), ' ') << "] ";
        } else {
            line << "pfarm: ";
        }
        line << done << "/" << tasks_ << " tasks (" << percent << "%), " << std::fixed << std::setprecision(1) << rate
             << " tasks/s, " << left << " s left";
        if (!bar_ || done == tasks_) line << "\n";
        std::fputs(line.str().c_str(), stderr);
        std::fflush(stderr);
    }

private:
    task_count tasks_;
    double start_, last_ = -1e9, interval_ = 5.0;
    bool enabled_ = false, bar_ = false;
};

/// The farm's trace through the one trace module (pfarm/trace.hpp): the report's summary and chunks.
void write_trace(const std::string& path, const farm_report& r) {
    trace_summary s;
    s.source = trace_source::farm;
    s.technique = r.technique, s.ranks = r.ranks, s.workers = r.workers, s.tasks = r.tasks;
    s.makespan = r.makespan, s.percent_imbalance = r.percent_imbalance, s.cov = r.cov, s.k = r.k;
    pfarm::write_trace(path, s, r.trace, "trace");
}

void finish_report(farm_report& r) {
    std::vector<double> finish;
    for (int q = 0; q < r.ranks; ++q)
        if (r.tasks_per_rank[static_cast<std::size_t>(q)] > 0) finish.push_back(r.finish_per_rank[static_cast<std::size_t>(q)]);
    r.workers = static_cast<int>(finish.size());
    r.percent_imbalance = percent_imbalance(finish);
    r.cov = coefficient_of_variation(finish);
}

farm_report empty_report(const farm_options& options, int ranks, task_count tasks) {
    farm_report r;
    r.technique = options.technique;
    r.ranks = ranks;
    r.tasks = tasks;
    r.tasks_per_rank.assign(static_cast<std::size_t>(ranks), 0);
    r.chunks_per_rank.assign(static_cast<std::size_t>(ranks), {});
    r.busy_per_rank.assign(static_cast<std::size_t>(ranks), 0.0);
    r.finish_per_rank.assign(static_cast<std::size_t>(ranks), 0.0);
    return r;
}

/// One rank: every task in order, on this rank.
farm_report run_sequential(const std::byte* in, std::byte* out, task_count tasks, const task_kernel& kernel,
                           const farm_options& options) {
    farm_report r = empty_report(options, 1, tasks);
    r.sequential = true;
    const double t0 = now();
    progress_reporter progress(options.progress, tasks);
    for (task_count i = 0; i < tasks; ++i) {
        try {
            kernel.run(i, in + static_cast<std::size_t>(i) * kernel.in_bytes, out + static_cast<std::size_t>(i) * kernel.out_bytes);
        } catch (const std::exception& e) {
            throw worker_error(i, 0, e.what());
        } catch (...) {
            throw worker_error(i, 0, "unknown exception");
        }
        progress.update(i + 1);
    }
    r.makespan = now() - t0;
    r.tasks_per_rank[0] = tasks;
    r.chunks_per_rank[0] = {tasks};
    r.busy_per_rank[0] = r.makespan;
    r.finish_per_rank[0] = r.makespan;
    r.trace.push_back({0, 0, tasks, 0.0, 0.0, r.makespan, r.makespan, false, {}});
    finish_report(r);
    if (!options.trace.empty()) write_trace(options.trace, r);
    return r;
}

/// Rank 0's side.
class farmer_driver {
public:
    farmer_driver(MPI_Comm comm, int ranks, const std::byte* in, std::byte* out, task_count tasks,
                  const task_kernel& kernel, const farm_options& options, const shared_setup& setup,
                  std::unique_ptr<technique> policy, double t0, sampler& monitors, std::vector<double> offsets,
                  double round_trip)
        : comm_(comm), in_(in), out_(out), kernel_(kernel), options_(options), setup_(setup),
          monitors_(monitors), offsets_(std::move(offsets)),
          offset_(setup.config.farmer_computes ? 0 : 1), t0_(t0),
          report_(empty_report(options, ranks, tasks)), progress_(options.progress, tasks),
          farmer_(tasks, ranks - offset_, std::move(policy), options.parameters.min_chunk, setup.config.prefetch ? 2 : 1,
                  setup.config.reclaim != 0) {
        if (setup.config.reclaim) farmer_.set_request_cost(round_trip);
        tracing_ = !options.trace.empty() || options.record_trace;
        const auto workers = static_cast<std::size_t>(ranks - offset_);
        inflight_.assign(workers, in_flight{});
        told_to_stop_.assign(workers, false);
        finished_.assign(workers, false);
        last_queue_.assign(workers, 0.0);
        parked_.reserve(workers);
        remote_left_ = ranks - 1;

    }

    farm_report run() {
        const double cpu0 = cpu_seconds();
        try {
            if (offset_ == 0) serve(0);
            while (!over()) {
                if (own_.count > 0) {
                    compute_own_task();
                    drain_messages();
                    continue;
                }
                MPI_Status status;
                MPI_Message message = next_message(status, true);
                handle(message, status);
            }
        } catch (const worker_error&) {
            throw;
        } catch (const std::exception& e) {
            // The farmer itself failed (a calibration that cannot proceed, an MPI error): stop every worker,
            // the one whose request was being handled included.
            fail(outcome_header{2, 0, -1, 0}, e.what());
            if (unanswered_ > 0) reply_end(unanswered_, abort_work);
            while (remote_left_ > 0) {
                MPI_Status status;
                MPI_Message message = next_message(status, true);
                handle(message, status);
            }
        }
        share_outcome(comm_, outcome_);
        if (outcome_.header.kind != 0) throw_outcome(outcome_);
        report_.makespan = last_result_;
        report_.farmer_cpu_seconds = cpu_seconds() - cpu0;
        report_.k = farmer_.policy().installment_factor();
        report_.reclaims = farmer_.reclaims();
        report_.reclaimed_tasks = farmer_.reclaimed_tasks();
        if (farmer_.calibration()) report_.calibration = *farmer_.calibration();
        report_.trace.assign(trace_.begin(), trace_.end());
        finish_report(report_);
        if (!options_.trace.empty()) write_trace(options_.trace, report_);
        return std::move(report_);
    }

private:
    struct own_chunk {
        task_count first = 0, count = 0, next = 0;
        double started = 0.0, compute = 0.0;
        bool calibration = false;
    };

    bool over() const {
        const bool own_done = offset_ == 1 || own_stopped_;
        return remote_left_ == 0 && own_done && (aborting_ || farmer_.done());
    }
    double clock() const { return now() - t0_; }
    std::size_t slot(int rank) const { return static_cast<std::size_t>(rank - offset_); }

    void drain_messages() {
        for (;;) {
            MPI_Status status;
            MPI_Message message = next_message(status, false);
            if (message == MPI_MESSAGE_NULL) return;
            handle(message, status);
        }
    }

    /// The farmer's next message: with reclaim a victim's answer first (next_farmer_message).
    MPI_Message next_message(MPI_Status& status, bool block) {
        return next_farmer_message(comm_, setup_.config.reclaim != 0, block, setup_.config.gentle_wait != 0, status);
    }

    void handle(MPI_Message& message, const MPI_Status& status) {
        receive(message, status, buffer_);
        request_header h;
        std::memcpy(&h, buffer_.data(), sizeof h);
        const int rank = status.MPI_SOURCE;
        const int w = static_cast<int>(slot(rank));
        const double t = clock();
        if (aborting_) {  // the farm is over: collect nobody's results, stop everybody
            if (h.kind == final_results)
                retire(rank);
            else if (h.kind != released_work)  // a victim's answer: its thief was aborted by fail()
                reply_end(rank, abort_work);
            return;
        }
        if (h.kind == released_work) {
            const chunk given{h.first, h.count};
            if (given.count > 0) shrink(rank, given);
            const release_outcome o = farmer_.released(w, given, t);
            act(o.thief + offset_, o.answer);
            serve_parked();  // thieves that waited for this answer ask again
            return;
        }
        if (h.kind == failure) {
            const char* text = reinterpret_cast<const char*>(buffer_.data() + sizeof h);
            int bytes = 0;
            MPI_Get_count(&status, MPI_BYTE, &bytes);
            const std::string message(text, static_cast<std::size_t>(bytes) - sizeof h);
            if (h.failed_task >= 0)
                fail(outcome_header{1, rank, h.failed_task, 0}, message);
            else  // the worker itself failed, not a task (a monitor that cannot read its source)
                fail(outcome_header{2, rank, -1, 0}, "rank " + std::to_string(rank) + ": " + message);
            reply_end(rank, abort_work);
            return;
        }
        if (h.kind == request_work) unanswered_ = rank;
        if (h.count > 0) accept_results(rank, h, t);
        if (h.kind == final_results) {
            if (told_to_stop_[static_cast<std::size_t>(w)] && inflight_[static_cast<std::size_t>(w)].empty()) retire(rank);
            return;
        }
        serve(rank);
        serve_parked();
    }

    void accept_results(int rank, const request_header& h, double t) {
        const auto w = slot(rank);
        const std::size_t bytes = static_cast<std::size_t>(h.count) * kernel_.out_bytes;
        std::memcpy(out_ + static_cast<std::size_t>(h.first) * kernel_.out_bytes, buffer_.data() + sizeof h, bytes);
        const flight f = inflight_[w].pop();
        if (h.sample.present == 0) {  // no monitor reading: the common, cheap path
            farmer_.complete(static_cast<int>(w), h.seconds);
            if (tracing_) trace_.push_back({rank, f.first, f.count, f.sent, h.started - offsets_[static_cast<std::size_t>(rank)],
                                            h.finished - offsets_[static_cast<std::size_t>(rank)], t, f.calibration, {}});
        } else {
            const resource_sample sample = from_wire(h.sample);
            farmer_.complete(static_cast<int>(w), h.seconds, &sample);
            if (sample.run_queue && *sample.run_queue >= 1.0 && *sample.run_queue != last_queue_[w]) {
                last_queue_[w] = *sample.run_queue;
                farmer_.run_queue_changed(static_cast<int>(w), *sample.run_queue);
            }
            if (tracing_) trace_.push_back({rank, f.first, f.count, f.sent, h.started - offsets_[static_cast<std::size_t>(rank)],
                                            h.finished - offsets_[static_cast<std::size_t>(rank)], t, f.calibration, sample});
        }
        record(rank, h.count, h.seconds, t);
    }

    void record(int rank, task_count count, double seconds, double t) {
        const auto q = static_cast<std::size_t>(rank);
        report_.tasks_per_rank[q] += count;
        report_.busy_per_rank[q] += seconds;
        report_.finish_per_rank[q] = t;
        last_result_ = std::max(last_result_, t);
        progress_.update(farmer_.completed_tasks());
    }

    /// Serves a request of `rank` (the farmer's own when rank == 0 and it computes).
    void serve(int rank) {
        act(rank, farmer_.request(static_cast<int>(slot(rank)), farmer_.reclaiming() ? clock() : 0.0));
    }

    /// Carries out the farmer's decision `d` for `rank`.
    void act(int rank, const decision& d) {
        const auto w = slot(rank);
        if (rank == unanswered_) unanswered_ = -1;  // answered below: a reply, a stop, parked, or a reclaim
        if (d.what == decision::kind::wait) {
            parked_.push_back(rank);
            return;
        }
        if (d.what == decision::kind::reclaim) {  // `rank` waits while the victim is asked
            const int victim = d.victim + offset_;
            if (victim == 0) {
                give_back_own(d);
            } else {
                reply_header r{reclaim_work, 0, 0, 0, d.share, d.thief_seconds};
                send_header(victim, r);
            }
            return;
        }
        if (d.what == decision::kind::later) {  // it holds a chunk; it asks again once that is done
            if (rank == 0) throw internal_error("farm: the farmer's own request was answered 'later'");
            send_header(rank, {later_work, 0, 0, 0, 0.0, 0.0});
            return;
        }
        if (d.what == decision::kind::stop) {
            told_to_stop_[w] = true;
            if (rank == 0) {
                own_stopped_ = true;
            } else if (inflight_[w].empty()) {
                reply_end(rank, stop_work);
            } else {
                send_header(rank, {stop_work, 0, 0, 0, 0.0, 0.0});  // a final results message will follow
            }
            return;
        }
        const double t = clock();
        report_.chunks_per_rank[static_cast<std::size_t>(rank)].push_back(d.work.count);
        inflight_[w].push({d.work.first, d.work.count, t, d.calibration});
        if (rank == 0) {
            own_ = {d.work.first, d.work.count, d.work.first, t, 0.0, d.calibration};
            return;
        }
        const reply_header r{assign_work, d.calibration ? 1 : 0, d.work.first, d.work.count, 0.0, 0.0};
        std::size_t bytes = sizeof r;
        if (!setup_.config.replicated) bytes += static_cast<std::size_t>(d.work.count) * kernel_.in_bytes;
        if (send_.size() < bytes) send_.resize(bytes * 3 / 2 + 64);
        std::memcpy(send_.data(), &r, sizeof r);
        if (!setup_.config.replicated)
            std::memcpy(send_.data() + sizeof r, in_ + static_cast<std::size_t>(d.work.first) * kernel_.in_bytes,
                        bytes - sizeof r);
        send_bytes(comm_, send_, bytes, rank, tag_reply);
    }

    void serve_parked() {
        if (farmer_.calibrating() || parked_.empty()) return;
        std::sort(parked_.begin(), parked_.end());
        std::vector<int> ready;
        ready.swap(parked_);
        for (int rank : ready) serve(rank);
    }

    void send_header(int rank, const reply_header& r) {
        mpi::check(MPI_Send(&r, sizeof r, MPI_BYTE, rank, tag_reply, comm_), "MPI_Send");
    }

    /// Tells `rank` to stop (or abort) and counts it out.
    void reply_end(int rank, std::int32_t kind) {
        if (rank == 0) {
            own_stopped_ = true;
            return;
        }
        send_header(rank, {kind, 0, 0, 0, 0.0, 0.0});
        retire(rank);
    }

    void retire(int rank) {
        auto w = slot(rank);
        if (finished_[w]) return;
        finished_[w] = true;
        --remote_left_;
    }

    void fail(const outcome_header& h, const std::string& text) {
        if (!aborting_) {
            outcome_.header = h;
            outcome_.text = text;
        }
        aborting_ = true;
        own_.count = 0;
        own_stopped_ = true;
        for (int rank : parked_) reply_end(rank, abort_work);
        parked_.clear();
        for (int thief : farmer_.thieves()) reply_end(thief + offset_, abort_work);  // their victims' answers are ignored
    }

    /// Rank `rank` gave `given` back from a chunk in flight: its records shrink with it.
    void shrink(int rank, const chunk& given) {
        const int from_newest = inflight_[slot(rank)].shrink(given);
        auto& sizes = report_.chunks_per_rank[static_cast<std::size_t>(rank)];
        sizes[sizes.size() - 1 - static_cast<std::size_t>(from_newest)] -= given.count;
    }

    /// The farmer's own chunk is the victim (it computes): between two of its tasks, nothing is started.
    void give_back_own(const decision& asked) {
        const task_count done = own_.next - own_.first;
        chunk given{own_.first + own_.count, 0};
        if (own_.count > 0) {
            given = victim_gives(asked, done > 0 ? own_.compute / static_cast<double>(done) : 0.0,
                                 {own_.first, own_.count}, own_.next);
            if (given.count > 0) {
                own_.count -= given.count;
                shrink(0, given);
            }
        }
        const release_outcome o = farmer_.released(0, given, clock());
        act(o.thief + offset_, o.answer);
        serve_parked();
    }

    void compute_own_task() {
        const task_count i = own_.next;
        const double start = now();
        try {
            kernel_.run(i, in_ + static_cast<std::size_t>(i) * kernel_.in_bytes, out_ + static_cast<std::size_t>(i) * kernel_.out_bytes);
        } catch (const std::exception& e) {
            fail(outcome_header{1, 0, i, 0}, e.what());
            return;
        } catch (...) {
            fail(outcome_header{1, 0, i, 0}, "unknown exception");
            return;
        }
        own_.compute += now() - start;
        if (++own_.next < own_.first + own_.count) return;
        // Emulated slowdown of rank 0: sleep in slices, serving requests meanwhile.
        double extra = setup_.emulated.active() ? (setup_.emulated.factor(0, own_.started) - 1.0) * own_.compute : 0.0;
        const double seconds = own_.compute + std::max(0.0, extra);
        while (extra > 0.0) {
            const double slice = std::min(extra, 2e-4), s0 = now();
            std::this_thread::sleep_for(std::chrono::duration<double>(slice));
            drain_messages();
            extra -= now() - s0;
        }
        const double t = clock();
        const flight f = inflight_[0].pop();
        const task_count count = own_.count;
        own_.count = 0;
        const resource_sample sample = monitors_.read(own_.calibration);
        if (tracing_) trace_.push_back({0, f.first, f.count, f.sent, f.sent, t, t, f.calibration, sample});
        farmer_.complete(0, seconds, &sample);
        record(0, count, seconds, t);
        serve(0);
        serve_parked();
    }

    MPI_Comm comm_;
    const std::byte* in_;
    std::byte* out_;
    const task_kernel& kernel_;
    const farm_options& options_;
    const shared_setup& setup_;
    sampler& monitors_;
    std::vector<double> offsets_;  ///< per rank: its clock minus the farmer's (clock_offsets)
    int offset_;
    double t0_;
    farm_report report_;
    progress_reporter progress_;
    farmer farmer_;
    std::vector<in_flight> inflight_;  ///< each worker's chunks in flight
    bool tracing_ = false;             ///< keep a record per chunk (a trace file or record_trace asked for it)
    std::deque<chunk_trace> trace_;    ///< grows without copying what it holds
    std::vector<bool> told_to_stop_, finished_;
    std::vector<double> last_queue_;
    std::vector<int> parked_;
    std::vector<std::byte> buffer_, send_;
    own_chunk own_;
    bool own_stopped_ = false;
    bool aborting_ = false;
    int remote_left_ = 0;
    int unanswered_ = -1;  ///< a remote rank whose request is being handled and has no answer yet
    double last_result_ = 0.0;
    outcome outcome_;
};

/// A worker could not read a monitor it needs.
struct monitor_failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// A worker rank's side.
class worker_driver {
public:
    worker_driver(MPI_Comm comm, int rank, const std::byte* in, const task_kernel& kernel, const shared_setup& setup,
                  double t0, sampler& monitors)
        : comm_(comm), rank_(rank), in_(in), kernel_(kernel), setup_(setup), t0_(t0), monitors_(monitors) {}

    farm_report run(const farm_options& options, int ranks) {
        farm_report r = empty_report(options, ranks, setup_.config.tasks);
        try {
            send_request(request_work, nullptr);
            if (setup_.config.prefetch)
                run_prefetching(r);
            else
                run_plain(r);
        } catch (const monitor_failure& e) {
            // Not a task's fault: tell the farmer (task -1), which stops the farm with this message.
            chunk_buffer c;
            c.failure = e.what();
            send_failure(c);
            drain_until_abort(c);
        }
        outcome o;
        share_outcome(comm_, o);
        if (o.header.kind != 0) throw_outcome(o);
        return r;
    }

private:
    struct chunk_buffer {
        reply_header header;
        std::vector<std::byte> data;
        double started = 0.0, finished = 0.0, seconds = 0.0;
        std::int64_t failed_task = -1;
        std::string failure;
    };

    /// Receives the farmer's next message, whatever it is, into `c`.
    void receive_message(chunk_buffer& c) {
        MPI_Status status;
        MPI_Message message = wait_message(comm_, 0, tag_reply, &status, setup_.config.gentle_wait != 0);
        receive(message, status, c.data);
        std::memcpy(&c.header, c.data.data(), sizeof c.header);
    }

    /// Waits for the farmer's next reply (one that came while computing first: prefetch). A reclaim that
    /// arrives meanwhile is about a chunk this worker has finished: it gives nothing back.
    void receive_reply(chunk_buffer& c) {
        if (ahead_ready_) {
            std::swap(c, ahead_);
            ahead_ready_ = false;
            return;
        }
        for (;;) {
            receive_message(c);
            if (c.header.kind != reclaim_work) return;
            send_released(0, 0);
        }
    }

    void send_released(task_count first, task_count count) {
        request_header h;
        h.kind = released_work;
        h.first = first;
        h.count = count;
        mpi::check(MPI_Send(&h, sizeof h, MPI_BYTE, 0, tag_released, comm_), "MPI_Send");
    }

    /// Between two tasks of chunk `c` (the next to start is `next`): answers a reclaim if one has arrived. With
    /// prefetch, the reply for the chunk after `c` may come first: it is kept in ahead_, and a reclaim behind
    /// it may take tasks from it (victim_gives: the end of whichever chunk has more unstarted tasks).
    void answer_reclaim(chunk_buffer& c, task_count next) {
        for (;;) {
            int flag = 0;
            mpi::check(MPI_Iprobe(0, tag_reply, comm_, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
            if (!flag) return;
            if (ahead_ready_) {
                receive_message(reclaim_);
            } else {
                receive_message(ahead_);
                if (ahead_.header.kind != reclaim_work) {
                    if (!setup_.config.prefetch)
                        throw internal_error("farm: rank " + std::to_string(rank_) + " got reply kind " +
                                             std::to_string(ahead_.header.kind) + " while computing");
                    ahead_ready_ = true;
                    continue;
                }
                std::swap(ahead_, reclaim_);
            }
            if (reclaim_.header.kind != reclaim_work)
                throw internal_error("farm: rank " + std::to_string(rank_) + " got reply kind " +
                                     std::to_string(reclaim_.header.kind) + " while holding a prefetched reply");
            decision asked{decision::kind::reclaim, {}, false};
            asked.share = reclaim_.header.share;
            asked.thief_seconds = reclaim_.header.thief_seconds;
            const double mine = (now() - t0_ - c.started) / static_cast<double>(next - c.header.first);
            const bool prefetched = ahead_ready_ && ahead_.header.kind == assign_work;
            const chunk current{c.header.first, c.header.count};
            const chunk given = victim_gives(asked, mine, current, next,
                                             prefetched ? chunk{ahead_.header.first, ahead_.header.count} : chunk{});
            if (given.count > 0) {  // the end of the chunk it computes, or of the prefetched one
                chunk_buffer& from = given.first + given.count == current.first + current.count ? c : ahead_;
                from.header.count -= given.count;
            }
            send_released(given.first, given.count);
        }
    }

    /// Computes chunk `c` into results_ (after the request header). False when a task threw.
    bool compute(chunk_buffer& c, farm_report& r) {
        const std::size_t bytes = sizeof(request_header) + static_cast<std::size_t>(c.header.count) * kernel_.out_bytes;
        if (results_.size() < bytes) results_.resize(bytes * 3 / 2 + 64);
        const std::byte* inputs = setup_.config.replicated ? in_ + static_cast<std::size_t>(c.header.first) * kernel_.in_bytes
                                                           : c.data.data() + sizeof(reply_header);
        c.started = now() - t0_;
        const bool reclaim = setup_.config.reclaim != 0, emulated = setup_.emulated.active();
        double owed = 0.0;  // emulated slowdown: sleep owed, paid in slices of >= 1 ms
        for (std::size_t i = 0; i < static_cast<std::size_t>(c.header.count); ++i) {
            const task_count task = c.header.first + static_cast<task_count>(i);
            const double task_start = emulated ? now() - t0_ : 0.0;
            try {
                kernel_.run(task, inputs + i * kernel_.in_bytes, results_.data() + sizeof(request_header) + i * kernel_.out_bytes);
            } catch (const std::exception& e) {
                c.failed_task = task, c.failure = e.what();
                return false;
            } catch (...) {
                c.failed_task = task, c.failure = "unknown exception";
                return false;
            }
            if (emulated) {
                owed += emulation_owed(setup_.emulated, rank_, task_start, now() - t0_ - task_start);
                if (owed >= 1e-3) sleep_for(owed), owed = 0.0;
            }
            if (reclaim && i + 1 < static_cast<std::size_t>(c.header.count)) answer_reclaim(c, task + 1);
        }
        if (owed > 0.0) sleep_for(owed);
        c.seconds = now() - t0_ - c.started;  // emulated slowdown included
        c.finished = now() - t0_;
        const auto q = static_cast<std::size_t>(rank_);
        r.tasks_per_rank[q] += c.header.count;
        r.chunks_per_rank[q].push_back(c.header.count);
        r.busy_per_rank[q] += c.seconds;
        return true;
    }

    void send_request(std::int32_t kind, const chunk_buffer* done) {
        request_header h;
        h.kind = kind;
        try {
            h.sample = to_wire(monitors_.read(done && done->header.calibration));
        } catch (const std::exception& e) {
            throw monitor_failure(e.what());
        }
        std::size_t bytes = sizeof h;
        if (done) {
            h.first = done->header.first;
            h.count = done->header.count;
            h.seconds = done->seconds;
            h.started = done->started;
            h.finished = done->finished;
            bytes += static_cast<std::size_t>(h.count) * kernel_.out_bytes;
        }
        if (results_.size() < bytes) results_.resize(bytes * 3 / 2 + 64);
        std::memcpy(results_.data(), &h, sizeof h);
        mpi::check(MPI_Send(results_.data(), static_cast<int>(bytes), MPI_BYTE, 0, tag_request, comm_), "MPI_Send");
    }

    void send_failure(const chunk_buffer& c) {
        request_header h;
        h.kind = failure;
        h.failed_task = c.failed_task;
        std::vector<std::byte> message(sizeof h + c.failure.size());
        std::memcpy(message.data(), &h, sizeof h);
        std::memcpy(message.data() + sizeof h, c.failure.data(), c.failure.size());
        mpi::check(MPI_Send(message.data(), static_cast<int>(message.size()), MPI_BYTE, 0, tag_request, comm_), "MPI_Send");
    }

    /// After a failure: replies may still be in flight (a prefetched chunk); read them until the abort.
    void drain_until_abort(chunk_buffer& scratch) {
        do receive_reply(scratch);
        while (scratch.header.kind != abort_work);
    }

    void run_plain(farm_report& r) {
        chunk_buffer c;
        for (;;) {
            receive_reply(c);
            if (c.header.kind != assign_work) return;
            if (!compute(c, r)) {
                send_failure(c);
                drain_until_abort(c);
                return;
            }
            send_request(request_work, &c);
        }
    }

    /// Prefetch: ask for the next chunk before computing the current one; results ride on the request after.
    /// A calibration task is never prefetched past: the next chunk waits for the calibration barrier, which
    /// waits for this worker's calibration result. After a `later` answer (reclaim, the pool is empty) the
    /// worker asks only with nothing in hand.
    void run_prefetching(farm_report& r) {
        chunk_buffer a, b;
        receive_reply(a);
        bool ahead = true, asked = false;  // still prefetching; a request for the chunk after `a` is out
        while (a.header.kind == assign_work) {
            if (!asked && ahead && a.header.calibration == 0) {
                send_request(request_work, nullptr);  // ask for b while a computes
                asked = true;
            }
            if (!compute(a, r)) {
                send_failure(a);
                drain_until_abort(b);
                return;
            }
            if (!asked) {  // nothing asked ahead: the results go with a plain request
                send_request(request_work, &a);
                receive_reply(a);
                continue;
            }
            receive_reply(b);
            if (b.header.kind == abort_work) return;
            if (b.header.kind == stop_work) {
                send_request(final_results, &a);
                return;
            }
            send_request(request_work, &a);  // a's results, and a request for the chunk after b (or a plain one)
            if (b.header.kind == later_work) {
                ahead = asked = false;
                receive_reply(a);
                continue;
            }
            std::swap(a, b);  // b is assigned; the request for the chunk after it is out
        }
    }

    MPI_Comm comm_;
    int rank_;
    const std::byte* in_;
    const task_kernel& kernel_;
    const shared_setup& setup_;
    double t0_;
    sampler& monitors_;
    std::vector<std::byte> results_;
    chunk_buffer reclaim_;      ///< receives reclaim messages while computing
    chunk_buffer ahead_;        ///< prefetch with reclaim: the reply for the next chunk, received while computing
    bool ahead_ready_ = false;  ///< ahead_ holds a reply not yet used
};

}  // namespace

farm_report run_farm(MPI_Comm user_comm, const std::byte* in, std::byte* out, task_count tasks, const task_kernel& kernel,
                     const farm_options& options) {
    mpi::communicator comm(user_comm);  // the farm's own context: never mixes with the user's messages
    const int rank = comm.rank(), ranks = comm.size();
    std::unique_ptr<technique> policy;
    const shared_setup setup = agree(comm.get(), rank, ranks, tasks, kernel, options, policy);
    if (ranks == 1) return run_sequential(in, out, tasks, kernel, options);
    mpi::check(MPI_Barrier(comm.get()), "MPI_Barrier");
    const double t0 = now();  // every rank's clock starts here: worker times are relative to it
    double round_trip = 0.0;  // mean over the workers, measured on rank 0: what a reclaim must win (farmer.hpp)
    const std::vector<double> offsets = clock_offsets(comm.get(), rank, ranks, t0, &round_trip);
    sampler monitors(setup.config.monitors);
    monitors.start(comm.get(), rank);  // collective: latency probe, benchmark kernel (part of the makespan)
    if (setup.config.monitors & benchmark_weights) {
        // A weighted technique without --weights: the workers' benchmark values are their powers V_j.
        double mine = monitors.benchmark().value_or(1.0);
        std::vector<double> all(rank == 0 ? static_cast<std::size_t>(ranks) : 0);
        mpi::check(MPI_Gather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, comm.get()), "MPI_Gather");
        if (rank == 0) {
            technique_options parameters = options.parameters;
            parameters.weights.assign(all.begin() + (setup.config.farmer_computes ? 0 : 1), all.end());
            policy = make_technique(options.technique, parameters, static_cast<int>(parameters.weights.size()));
        }
    }
    if (rank == 0)
        return farmer_driver(comm.get(), ranks, in, out, tasks, kernel, options, setup, std::move(policy), t0, monitors,
                             offsets, round_trip)
            .run();
    return worker_driver(comm.get(), rank, in, kernel, setup, t0, monitors).run(options, ranks);
}

}  // namespace pfarm::detail
