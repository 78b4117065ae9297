// The C API (pfarm.h) over the C++ engine. Nothing escapes as an exception: every failure becomes a status.
// pfarm() itself is in c_entry.c: a C++ file cannot declare a global function named like namespace pfarm.
#define PFARM_NO_PFARM_FUNCTION
#include "pfarm.h"

#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"

#include <string>

namespace {

thread_local int last_status = PFARM_OK;
thread_local std::string last_message;
thread_local long long last_task = -1;
thread_local bool task_failed = false;
thread_local std::string task_failure;

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

int run(pfarm_worker_fn worker, const void* in_data, int in_length, MPI_Datatype in_type, void* out_data,
        int out_length, MPI_Datatype out_type, MPI_Comm comm, const pfarm::farm_options& options, pfarm_result* result,
        const std::string& bad_argument = {}, const std::string& bad_message = {}) {
    last_status = PFARM_OK;
    last_message.clear();
    last_task = -1;
    try {
        pfarm::detail::task_kernel kernel;
        int rank = 0;
        pfarm::mpi::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
        const std::size_t in_bytes = element_bytes(in_type, "in_type");
        const std::size_t out_bytes = element_bytes(out_type, "out_type");
        if (rank == 0) {
            if (!bad_argument.empty()) kernel.bad_argument = bad_argument, kernel.bad_message = bad_message;
            else if (!worker) kernel.bad_argument = "worker", kernel.bad_message = "is NULL";
            else if (in_length < 0) kernel.bad_argument = "in_length", kernel.bad_message = "is negative";
            else if (in_length > 0 && (!in_data || !out_data))
                kernel.bad_argument = !in_data ? "in_data" : "out_data", kernel.bad_message = "is NULL";
            else if (in_length > 0 && (out_length <= 0 || out_length % in_length != 0))
                kernel.bad_argument = "out_length",
                kernel.bad_message = "is " + std::to_string(out_length) + "; expected a positive multiple of in_length " +
                                     std::to_string(in_length);
        }
        // Outputs per task from rank 0's lengths, the only ones that count.
        long long outputs = in_length > 0 && out_length > 0 ? out_length / in_length : 1;
        pfarm::mpi::check(MPI_Bcast(&outputs, 1, MPI_LONG_LONG, 0, comm), "MPI_Bcast");
        const auto ratio = static_cast<std::size_t>(outputs > 0 ? outputs : 1);
        kernel.in_bytes = in_bytes;
        kernel.out_bytes = out_bytes * ratio;
        kernel.run = [worker](pfarm::task_count, const std::byte* in, std::byte* out) {
            task_failed = false;
            worker(in, out);
            if (task_failed) throw c_task_failure(task_failure);
        };
        const auto report = pfarm::detail::run_farm(comm, static_cast<const std::byte*>(in_data),
                                                    static_cast<std::byte*>(out_data), in_length, kernel, options);
        if (result) {
            result->makespan = report.makespan;
            result->percent_imbalance = report.percent_imbalance;
            result->cov = report.cov;
            result->k = report.k.value_or(0.0);
            result->ranks = report.ranks;
            result->sequential = report.sequential ? 1 : 0;
        }
    } catch (const pfarm::worker_error& e) {
        last_status = PFARM_ERROR_WORKER, last_message = e.what(), last_task = e.task();
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

const char* technique_of(enum scheduling sched) {
    switch (sched) {
    case SCH_TRAD: return "ss";
    case SCH_DEAL: return "deal";
    case SCH_DEALDYN_LR: return "dealdyn-lr";
    case SCH_DEALDYN_MV: return "dealdyn-mv";
    case SCH_DEALDYN_SM: return "dealdyn-sm";
    case SCH_MULTI: return "multi";
    }
    return nullptr;
}

}  // namespace

extern "C" {

void pfarm_sched(pfarm_worker_fn worker, void* in_data, int in_length, MPI_Datatype in_type, void* out_data,
                 int out_length, MPI_Datatype out_type, MPI_Comm comm, enum scheduling sched) {
    pfarm::farm_options options;
    const char* technique = technique_of(sched);
    if (technique) {
        options.technique = technique;
        run(worker, in_data, in_length, in_type, out_data, out_length, out_type, comm, options, nullptr);
    } else {  // reported collectively by the engine, like any bad argument
        run(worker, in_data, in_length, in_type, out_data, out_length, out_type, comm, options, nullptr, "sched",
            "is " + std::to_string(static_cast<int>(sched)) +
                "; expected SCH_TRAD, SCH_DEAL, SCH_DEALDYN_LR, SCH_DEALDYN_MV, SCH_DEALDYN_SM or SCH_MULTI");
    }
}

void pfarm_options_init(pfarm_options* o) {
    if (!o) return;
    *o = pfarm_options{};
    o->static_percent = -1.0;
}

int pfarm_run(pfarm_worker_fn worker, const void* in_data, int in_length, MPI_Datatype in_type, void* out_data,
              int out_length, MPI_Datatype out_type, MPI_Comm comm, const pfarm_options* o, pfarm_result* result) {
    pfarm::farm_options options;
    std::string bad_argument, bad_message;
    if (o) {
        if (o->technique) options.technique = o->technique;
        auto& p = options.parameters;
        if (o->min_chunk > 0) p.min_chunk = o->min_chunk;
        if (o->chunk > 0) p.chunk = o->chunk;
        if (o->factor > 0) p.factor = o->factor;
        if (o->first > 0) p.first = o->first;
        if (o->last > 0) p.last = o->last;
        if (o->stages > 0) p.stages = o->stages;
        if (o->static_percent >= 0) p.static_percent = o->static_percent;
        if (o->k > 0) p.k = o->k;
        if (o->weights && o->weight_count > 0) p.weights.assign(o->weights, o->weights + o->weight_count);
        options.farmer_computes = o->farmer_computes != 0;
        options.prefetch = o->prefetch != 0;
        options.reclaim = o->reclaim != 0;
        options.replicated_input = o->replicated_input != 0;
        options.progress = o->progress == 1 ? pfarm::progress_mode::plain
                         : o->progress == 2 ? pfarm::progress_mode::automatic
                                            : pfarm::progress_mode::quiet;
        if (o->trace) options.trace = o->trace;
        if (o->calibration) {
            try {
                p.calibration = pfarm::parse_calibration_mode(o->calibration);
            } catch (const pfarm::invalid_argument& e) {  // reported collectively, on every rank
                bad_argument = "calibration";
                bad_message = e.message();
            }
        }
    }
    return run(worker, in_data, in_length, in_type, out_data, out_length, out_type, comm, options, result, bad_argument,
               bad_message);
}

void pfarm_fail_task(const char* message) {
    task_failed = true;
    task_failure = message ? message : "pfarm_fail_task";
}

int pfarm_status(void) { return last_status; }
const char* pfarm_error_message(void) { return last_message.c_str(); }
long long pfarm_error_task(void) { return last_task; }

}  // extern "C"
