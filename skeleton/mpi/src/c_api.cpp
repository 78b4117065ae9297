// The C API (pfarm.h) over the C++ engine: every entry point becomes one c_call, checked on every rank and agreed
// on collectively before the engine runs. Nothing escapes as an exception: every failure becomes a status.
// pfarm() itself is in c_entry.c: a C++ file cannot declare a global function named like namespace pfarm.
#define PFARM_NO_PFARM_FUNCTION
#include "pfarm.h"

#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/registry.hpp"

#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace {

thread_local int last_status = PFARM_OK;
thread_local std::string last_message;
thread_local long long last_task = -1;
thread_local bool task_failed = false;
thread_local std::string task_failure;
thread_local std::vector<pfarm::failed_task> last_failed;  ///< the last call's skipped tasks, by index
thread_local std::vector<int> last_lost;                   ///< the last call's ranks presumed lost

/// Thrown by the kernel when the worker called pfarm_fail_task.
struct c_task_failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// The C name of the argument a C++ error names (pfarm.h, pfarm_error_message): the C++ names of the options are
/// pfarm_options' field names; farm()'s `in` and `out` are pfarm_run's in_length and out_length.
std::string c_name(const std::string& argument) {
    if (argument == "in") return "in_length";
    if (argument == "out") return "out_length";
    return argument;
}

/// Bytes of one element of a contiguous datatype, or invalid_argument naming `argument`.
std::size_t element_bytes(MPI_Datatype type, const char* argument) {
    if (type == MPI_DATATYPE_NULL) throw pfarm::invalid_argument(argument, "is MPI_DATATYPE_NULL");
    int size = 0;
    MPI_Aint lower = 0, extent = 0;
    pfarm::mpi::check(MPI_Type_size(type, &size), "MPI_Type_size");
    pfarm::mpi::check(MPI_Type_get_extent(type, &lower, &extent), "MPI_Type_get_extent");
    if (size <= 0 || lower != 0 || extent != size)
        throw pfarm::invalid_argument(argument, "is not contiguous (size " + std::to_string(size) + ", extent " +
                                                    std::to_string(extent) + "); pfarm moves elements as their bytes");
    return static_cast<std::size_t>(size);
}

const char* technique_of(int sched);

/// One call of the C API, whichever entry point it came through (pfarm/pfarm_sched, pfarm_run, pfarm_run_tasks,
/// pfarm_run_range): the caller's arguments as this rank passed them.
struct c_call {
    pfarm_worker_fn worker = nullptr;  ///< pfarm, pfarm_run: the task function without index and user_data
    pfarm_task_fn task = nullptr;      ///< pfarm_run_tasks, pfarm_run_range
    const char* function = "worker";   ///< the C name of the task function's parameter: "worker" or "task"
    bool range = false;                ///< pfarm_run_range: no input; the tasks are first..first+count-1
    const void* in_data = nullptr;
    long long tasks = 0;  ///< in_length, or pfarm_run_range's count
    long long first = 0;  ///< pfarm_run_range's first index
    MPI_Datatype in_type = MPI_DATATYPE_NULL;
    void* out_data = nullptr;
    long long out_length = 0;
    MPI_Datatype out_type = MPI_DATATYPE_NULL;
    MPI_Comm comm = MPI_COMM_NULL;
    const pfarm_options* options = nullptr;  ///< pfarm_run* (NULL: defaults)
    /// pfarm/pfarm_sched: the enum scheduling mode instead of options, as an int (C passes any int value)
    std::optional<int> sched;
};

/// What every rank needs of rank 0's arguments (the only lengths that count): broadcast before the farm.
struct shape {
    long long outputs = 1;          ///< output elements per task
    long long first = 0;            ///< pfarm_run_range's first index
    unsigned long long in_bytes = 0, out_bytes = 0;  ///< element sizes; 0: rank 0's datatype is bad
};

/// The engine's options from the C call (pfarm_options' fields, or the enum scheduling mode); `user_data` is
/// this rank's. Throws invalid_argument for what is wrong on this rank.
pfarm::farm_options settings(const c_call& c, void*& user_data) {
    pfarm::farm_options options;
    user_data = nullptr;
    if (c.sched) {
        const char* technique = technique_of(*c.sched);
        if (!technique)
            throw pfarm::invalid_argument(
                "sched", "is " + std::to_string(*c.sched) +
                             "; expected SCH_TRAD, SCH_DEAL, SCH_DEALDYN_LR, SCH_DEALDYN_MV, SCH_DEALDYN_SM, SCH_MULTI or SCH_AUTO");
        options.schedule.technique = technique;
        return options;
    }
    const pfarm_options* o = c.options;
    if (!o) return options;
    if (o->size != sizeof(pfarm_options))
        throw pfarm::invalid_argument("options", "size is " + std::to_string(o->size) + "; expected " +
                                                     std::to_string(sizeof(pfarm_options)) +
                                                     " (call pfarm_options_init first, and build against this "
                                                     "library's pfarm.h)");
    if (o->schedule.technique) options.schedule.technique = o->schedule.technique;
    auto& p = options.schedule.parameters;
    // 0 (static_percent, calibration_span: below 0) means the default; any other value goes to the technique, which checks it, so a
    // negative or NaN value is an error naming the field, never the default in disguise.
    if (o->schedule.min_chunk != 0) p.min_chunk = o->schedule.min_chunk;
    if (o->schedule.chunk != 0) p.chunk = o->schedule.chunk;
    if (o->schedule.factor != 0) p.factor = o->schedule.factor;
    if (o->schedule.first != 0) p.first = o->schedule.first;
    if (o->schedule.last != 0) p.last = o->schedule.last;
    if (o->schedule.stages != 0) p.stages = o->schedule.stages;
    if (!(o->schedule.static_percent < 0)) p.static_percent = o->schedule.static_percent;
    if (!(o->schedule.calibration_span < 0)) options.schedule.calibration_span = o->schedule.calibration_span;
    if (o->schedule.k != 0) p.k = o->schedule.k;
    if (o->schedule.weight_count < 0 || (o->schedule.weight_count > 0) != (o->schedule.weights != nullptr))
        throw pfarm::invalid_argument("weights", std::string(o->schedule.weights ? "is set" : "is NULL") + " with weight_count " +
                                                     std::to_string(o->schedule.weight_count) +
                                                     "; expected both (one weight per worker) or neither");
    if (o->schedule.weights) p.weights.assign(o->schedule.weights, o->schedule.weights + o->schedule.weight_count);
    options.topology.farmer_computes = o->topology.farmer_computes != 0;
    options.protocol.prefetch = o->protocol.prefetch != 0;
    options.protocol.reclaim = o->protocol.reclaim != 0;
    options.protocol.stragglers = o->protocol.stragglers;
    options.protocol.replicated_input = o->protocol.replicated_input != 0;
    if (o->protocol.on_task_error)  // names "on_task_error"
        options.protocol.on_task_error = pfarm::parse_task_error_rule(o->protocol.on_task_error, "on_task_error");
    if (o->loss.on_worker_loss)  // names "on_worker_loss"
        options.protocol.on_worker_loss = pfarm::parse_worker_loss_rule(o->loss.on_worker_loss, "on_worker_loss");
    if (o->output.progress < 0 || o->output.progress > 2)
        throw pfarm::invalid_argument("progress", "is " + std::to_string(o->output.progress) + "; expected 0 (quiet), 1 (plain) or 2 (bar)");
    options.output.progress = o->output.progress == 1 ? pfarm::progress_mode::plain
                     : o->output.progress == 2 ? pfarm::progress_mode::automatic
                                        : pfarm::progress_mode::quiet;
    if (o->output.trace) options.output.trace = o->output.trace;
    if (o->resume.journal) options.resume.journal = o->resume.journal;
    if (o->resume.journal_key) options.resume.journal_key = o->resume.journal_key;
    if (o->topology.farmer) options.topology.farmer = pfarm::parse_farmer_mode(o->topology.farmer);  // names "farmer"
    if (o->topology.victims) options.topology.victims = pfarm::parse_victim_rule(o->topology.victims);  // names "victims"
    options.topology.masters = o->topology.masters;
    if (o->topology.master_technique) options.topology.master_technique = o->topology.master_technique;
    if (o->schedule.calibration) p.calibration = pfarm::parse_calibration_mode(o->schedule.calibration);  // names "calibration"
    user_data = o->user_data;
    return options;
}

/// The checks of rank 0's lengths and buffers (the other ranks' are never read). Throws invalid_argument.
void check_lengths(const c_call& c) {
    const char* length = c.range ? "count" : "in_length";
    pfarm::check_task_count(c.tasks, length);  // 1 to 2^53
    if (c.range && c.first > std::numeric_limits<long long>::max() - (c.tasks - 1))
        throw pfarm::invalid_argument("first", "is " + std::to_string(c.first) + "; the last index first + count - 1 (count " +
                                                   std::to_string(c.tasks) + ") does not fit a long long");
    if (!c.range && !c.in_data) throw pfarm::invalid_argument("in_data", "is NULL");
    if (!c.out_data) throw pfarm::invalid_argument("out_data", "is NULL");
    if (c.out_length <= 0 || c.out_length % c.tasks != 0)
        throw pfarm::invalid_argument("out_length", "is " + std::to_string(c.out_length) + "; expected a positive multiple of " +
                                                        length + " " + std::to_string(c.tasks));
}

/// The one way a bad argument becomes an error on every rank: each rank brings its own verdict (empty
/// `argument`: nothing wrong here), and every rank throws the lowest bad rank's invalid_argument, or none throws.
void agree_on_arguments(MPI_Comm comm, int rank, int ranks, std::string argument, std::string message) {
    const int mine = argument.empty() ? ranks : rank;
    int first_bad = ranks;
    pfarm::mpi::check(MPI_Allreduce(&mine, &first_bad, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
    if (first_bad == ranks) return;
    for (std::string* text : {&argument, &message}) {
        int length = static_cast<int>(text->size());
        pfarm::mpi::check(MPI_Bcast(&length, 1, MPI_INT, first_bad, comm), "MPI_Bcast");
        text->resize(static_cast<std::size_t>(length));
        if (length > 0) pfarm::mpi::check(MPI_Bcast(text->data(), length, MPI_CHAR, first_bad, comm), "MPI_Bcast");
    }
    throw pfarm::invalid_argument(argument, message);
}

/// Every C entry point: checks the arguments on each rank and agrees on them (agree_on_arguments), then farms.
/// The engine (run_farm) still validates rank 0's options (technique, parameters) and broadcasts that verdict.
int run(const c_call& c, pfarm_result* result) {
    last_status = PFARM_OK;
    last_message.clear();
    last_task = -1;
    last_failed.clear();
    last_lost.clear();
    shape s;
    try {
        if (c.comm == MPI_COMM_NULL) throw pfarm::invalid_argument("comm", "is MPI_COMM_NULL");  // nobody to agree with
        int rank = 0, ranks = 1;
        pfarm::mpi::check(MPI_Comm_rank(c.comm, &rank), "MPI_Comm_rank");
        pfarm::mpi::check(MPI_Comm_size(c.comm, &ranks), "MPI_Comm_size");
        // This rank's verdict on what it passed; rank 0's also covers the lengths and buffers, which only it uses.
        std::string argument, message;
        pfarm::farm_options options;
        void* user_data = nullptr;
        try {
            if (!c.task && !c.worker) throw pfarm::invalid_argument(c.function, "is NULL");
            options = settings(c, user_data);
            if (!c.range) s.in_bytes = element_bytes(c.in_type, "in_type");
            s.out_bytes = element_bytes(c.out_type, "out_type");
            if (rank == 0) {
                check_lengths(c);
                s.outputs = c.out_length / c.tasks;
                s.first = c.first;
            }
        } catch (const pfarm::invalid_argument& e) {
            argument = e.argument(), message = e.message();
        }
        // Rank 0's shape; a datatype of another size than rank 0's would misread every element.
        const shape own = s;
        pfarm::mpi::check(MPI_Bcast(&s, sizeof s, MPI_BYTE, 0, c.comm), "MPI_Bcast");
        if (rank != 0)  // (rank 0's size 0: its datatype is bad, and rank 0 reports that)
            for (const auto& [name, bytes, rank0] : {std::tuple{"in_type", own.in_bytes, s.in_bytes},
                                                     std::tuple{"out_type", own.out_bytes, s.out_bytes}})
                if (argument.empty() && rank0 != 0 && bytes != rank0)
                    argument = name, message = "has " + std::to_string(bytes) + " bytes on rank " + std::to_string(rank) +
                                               "; rank 0's has " + std::to_string(rank0) + " (every rank's must match)";
        agree_on_arguments(c.comm, rank, ranks, argument, message);

        pfarm::detail::task_kernel kernel;
        kernel.in_bytes = static_cast<std::size_t>(s.in_bytes);
        kernel.out_bytes = static_cast<std::size_t>(s.out_bytes * static_cast<unsigned long long>(s.outputs));
        if (c.range) kernel.identity = "index range from " + std::to_string(s.first);  // part of a journal's fingerprint
        if (c.range) kernel.index_base = s.first;  // skipped tasks are listed by the index the task function received
        kernel.run = [&c, first = s.first, user_data](pfarm::task_count index, const std::byte* in, std::byte* out) {
            task_failed = false;
            if (!c.task) c.worker(in, out);
            else if (c.range) c.task(first + index, nullptr, out, user_data);
            else c.task(index, in, out, user_data);
            if (task_failed) throw c_task_failure(task_failure);
        };
        const auto report = pfarm::detail::run_farm(c.comm, static_cast<const std::byte*>(c.range ? nullptr : c.in_data),
                                                    static_cast<std::byte*>(c.out_data), c.tasks, kernel, options);
        if (result) {
            result->makespan = report.makespan;
            result->percent_imbalance = report.percent_imbalance;
            result->cov = report.cov;
            result->k = report.k.value_or(0.0);
            result->ranks = report.ranks;
            result->sequential = report.sequential ? 1 : 0;
        }
        last_failed = report.failed_tasks;
        last_lost = report.lost_ranks;
    } catch (const pfarm::worker_error& e) {  // named by the index the task function received
        last_status = PFARM_ERROR_WORKER;
        last_task = e.task() + s.first;
        last_message = pfarm::worker_error(last_task, e.rank(), e.message()).what();
    } catch (const pfarm::invalid_argument& e) {
        last_status = PFARM_ERROR_ARGUMENT, last_message = c_name(e.argument()) + ": " + e.message();
    } catch (const pfarm::mpi::mpi_error& e) {
        last_status = PFARM_ERROR_MPI, last_message = e.what();
    } catch (const std::exception& e) {
        last_status = PFARM_ERROR_INTERNAL, last_message = e.what();
    } catch (...) {
        last_status = PFARM_ERROR_INTERNAL, last_message = "unknown exception";
    }
    return last_status;
}

const char* technique_of(int sched) {
    switch (sched) {
    case SCH_TRAD: return "ss";
    case SCH_DEAL: return "deal";
    case SCH_DEALDYN_LR: return "dealdyn-lr";
    case SCH_DEALDYN_MV: return "dealdyn-mv";
    case SCH_DEALDYN_SM: return "dealdyn-sm";
    case SCH_MULTI: return "multi";
    case SCH_AUTO: return "auto";
    }
    return nullptr;
}

}  // namespace

extern "C" {

void pfarm_sched(pfarm_worker_fn worker, void* in_data, int in_length, MPI_Datatype in_type, void* out_data,
                 int out_length, MPI_Datatype out_type, MPI_Comm comm, enum scheduling sched) {
    c_call c;
    c.worker = worker, c.in_data = in_data, c.tasks = in_length, c.in_type = in_type;
    c.out_data = out_data, c.out_length = out_length, c.out_type = out_type, c.comm = comm, c.sched = static_cast<int>(sched);
    run(c, nullptr);
}

void pfarm_options_init_size(pfarm_options* o, size_t size) {
    if (!o) return;
    if (size != sizeof(pfarm_options)) {  // another header's struct: its layout is unknown here, only `size` is sure
        if (size >= sizeof o->size) o->size = size;
        return;
    }
    *o = pfarm_options{};
    o->size = size;
    o->schedule.static_percent = -1.0;
    o->schedule.calibration_span = -1.0;
}

void(pfarm_options_init)(pfarm_options* o) { pfarm_options_init_size(o, sizeof(pfarm_options)); }

int pfarm_run(pfarm_worker_fn worker, const void* in_data, int in_length, MPI_Datatype in_type, void* out_data,
              int out_length, MPI_Datatype out_type, MPI_Comm comm, const pfarm_options* options, pfarm_result* result) {
    c_call c;
    c.worker = worker, c.in_data = in_data, c.tasks = in_length, c.in_type = in_type;
    c.out_data = out_data, c.out_length = out_length, c.out_type = out_type, c.comm = comm, c.options = options;
    return run(c, result);
}

int pfarm_run_tasks(pfarm_task_fn task, const void* in_data, long long in_length, MPI_Datatype in_type, void* out_data,
                    long long out_length, MPI_Datatype out_type, MPI_Comm comm, const pfarm_options* options,
                    pfarm_result* result) {
    c_call c;
    c.task = task, c.function = "task", c.in_data = in_data, c.tasks = in_length, c.in_type = in_type;
    c.out_data = out_data, c.out_length = out_length, c.out_type = out_type, c.comm = comm, c.options = options;
    return run(c, result);
}

int pfarm_run_range(pfarm_task_fn task, long long first, long long count, void* out_data, long long out_length,
                    MPI_Datatype out_type, MPI_Comm comm, const pfarm_options* options, pfarm_result* result) {
    c_call c;
    c.task = task, c.function = "task", c.range = true, c.first = first, c.tasks = count;
    c.out_data = out_data, c.out_length = out_length, c.out_type = out_type, c.comm = comm, c.options = options;
    return run(c, result);
}

void pfarm_fail_task(const char* message) {
    task_failed = true;
    task_failure = message ? message : "pfarm_fail_task";
}

int pfarm_status(void) { return last_status; }
const char* pfarm_error_message(void) { return last_message.c_str(); }
long long pfarm_error_task(void) { return last_task; }
int pfarm_finalize(void) {
    try {
        pfarm::mpi::finalize();
        return 0;
    } catch (...) {
        return 1;
    }
}
int pfarm_lost_count(void) { return static_cast<int>(last_lost.size()); }
int pfarm_lost_rank(int k) { return k >= 0 && k < pfarm_lost_count() ? last_lost[static_cast<std::size_t>(k)] : -1; }
long long pfarm_failed_count(void) { return static_cast<long long>(last_failed.size()); }
long long pfarm_failed_task(long long k) {
    return k >= 0 && k < pfarm_failed_count() ? last_failed[static_cast<std::size_t>(k)].task : -1;
}
const char* pfarm_failed_error(long long k) {
    return k >= 0 && k < pfarm_failed_count() ? last_failed[static_cast<std::size_t>(k)].error.c_str() : "";
}

}  // extern "C"
