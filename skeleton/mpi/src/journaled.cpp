// pfarm MPI engine: a farm with a journal (farm_options::resume.journal; the file is pfarm/journal.hpp). Rank 0 reads
// the journal, every rank learns which tasks remain, and the engine farms only those, through a kernel that
// maps the farm's task j to the remaining task's index: its results are journaled as they arrive, then stored
// (or handed to the caller's sink) under their own index. The journaled tasks' outputs are restored first.
// docs/reliability.md "Resume after a crash".
#include "engine.hpp"
#include "results.hpp"

#include "pfarm/journal.hpp"
#include "pfarm/mpi.hpp"

#include <filesystem>
#include <optional>

namespace pfarm::detail {

namespace {

/// What identifies the workload: the task count, the output shape, the inputs (rank 0's bytes), what the
/// function computes beyond them (kernel.identity) and the caller's key.
std::uint64_t fingerprint(const std::byte* in, task_count tasks, const task_kernel& kernel, const farm_options& options) {
    const std::string shape = std::to_string(tasks) + "|" + std::to_string(kernel.in_bytes) + "|" +
                              std::to_string(kernel.out_bytes) + "|" + (kernel.variable() ? "variable" : "fixed") + "|" +
                              std::to_string(kernel.out_align) + "|" + kernel.identity + "|" + options.resume.journal_key;
    std::uint64_t h = fnv1a(shape.data(), shape.size());
    if (in && kernel.in_bytes > 0) h = fnv1a(in, static_cast<std::size_t>(tasks) * kernel.in_bytes, h);
    return h;
}

/// Hands task `index`'s bytes to the caller's sink as a view of one task (its layout, farm.hpp results_view).
void deliver_one(const task_kernel& kernel, task_count index, const std::byte* bytes, std::size_t size,
                 std::vector<std::byte>& scratch) {
    if (!kernel.variable()) {
        kernel.deliver(view_of(kernel, index, 1, bytes, 0));
        return;
    }
    // Index (one count padded to 64 bytes) then the bytes, in a buffer aligned for any T up to 64.
    const std::size_t index_bytes = variable_index_bytes(1);
    scratch.resize(index_bytes + size + 64);
    auto* base = reinterpret_cast<std::byte*>(round_up(reinterpret_cast<std::uintptr_t>(scratch.data()), 64));
    const auto count = static_cast<std::uint64_t>(size);
    std::memcpy(base, &count, sizeof count);
    if (size > 0) std::memcpy(base + index_bytes, bytes, size);
    kernel.deliver(view_of(kernel, index, 1, base, index_bytes));
}

}  // namespace

farm_report run_journaled(MPI_Comm comm, const std::byte* in, std::byte* out, task_count tasks, const task_kernel& kernel,
                          const farm_options& options) {
    int rank = 0;
    mpi::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    // Rank 0: read the journal and open it for appending; every rank learns the verdict and what remains.
    std::optional<journal_writer> writer;
    journal_contents journaled;
    std::string argument = kernel.bad_argument, message = kernel.bad_message;
    std::vector<task_count> remaining;
    // Rank 0: whether this run makes the journal file. A run refused before any result (a bad option found by the
    // engine's agreement) then leaves no journal behind: the file it made holds nothing but a header.
    std::error_code ec;
    const bool created = rank == 0 && !std::filesystem::exists(std::filesystem::symlink_status(options.resume.journal, ec));
    const auto forget_new_journal = [&] {
        if (!created || (writer && writer->records() > 0)) return;
        writer.reset();
        std::filesystem::remove(options.resume.journal, ec);
    };
    if (rank == 0 && argument.empty() && tasks >= 1) {
        try {
            if (!options.output.trace.empty()) check_trace_path(options.output.trace);  // written here, after the farm (below)
            const std::uint64_t print = fingerprint(in, tasks, kernel, options);
            journaled = read_journal(options.resume.journal, print, tasks);
            writer.emplace(options.resume.journal, print, tasks, journaled.valid_bytes);
            for (task_count i = 0; i < tasks; ++i)
                if (!journaled.outputs.count(i)) remaining.push_back(i);
            for (const auto& [i, bytes] : journaled.outputs)
                if (!kernel.variable() && bytes.size() != kernel.out_bytes)
                    throw invalid_argument("journal", "'" + options.resume.journal + "' holds " + std::to_string(bytes.size()) +
                                                          " bytes for task " + std::to_string(i) + "; this farm's tasks give " +
                                                          std::to_string(kernel.out_bytes));
        } catch (const invalid_argument& e) {
            argument = e.argument(), message = e.message();
        }
    }
    long long count = static_cast<long long>(remaining.size());
    // 0: go on; 1: the caller's arguments or the journal are wrong: the engine's agreement makes every rank
    // throw rank 0's verdict together (the engine's own checks, zero tasks included, come with it).
    // flags[1]: rank 0 wants a trace. The farm below runs on the remaining tasks renumbered, so its trace is written
    // here once its chunks carry the tasks' own indices (and, when the journal held everything, as an empty trace).
    int flags[2] = {!argument.empty() || tasks < 1 ? 1 : 0, options.output.trace.empty() ? 0 : 1};
    mpi::check(MPI_Bcast(flags, 2, MPI_INT, 0, comm), "MPI_Bcast");
    const int bad = flags[0];
    const bool trace = flags[1] != 0;
    if (bad) {
        task_kernel failed = kernel;
        failed.bad_argument = argument, failed.bad_message = message;
        farm_options plain = options;
        plain.resume.journal.clear();
        try {
            return run_farm(comm, in, out, tasks, failed, plain);
        } catch (...) {
            forget_new_journal();
            throw;
        }
    }
    mpi::check(MPI_Bcast(&count, 1, MPI_LONG_LONG, 0, comm), "MPI_Bcast");
    remaining.resize(static_cast<std::size_t>(count));
    if (count > 0)
        mpi::check(MPI_Bcast(remaining.data(), static_cast<int>(count), MPI_INT64_T, 0, comm), "MPI_Bcast");

    // Restore the journaled outputs on rank 0 (to the sink first, as a rerun would deliver them).
    std::vector<std::byte> scratch;
    if (rank == 0) {
        for (task_count i = 0; i < tasks; ++i) {
            const auto found = journaled.outputs.find(i);
            if (found == journaled.outputs.end()) continue;
            if (kernel.streamed()) deliver_one(kernel, i, found->second.data(), found->second.size(), scratch);
            else std::memcpy(out + static_cast<std::size_t>(i) * kernel.out_bytes, found->second.data(), kernel.out_bytes);
        }
    }
    const auto restored = static_cast<task_count>(tasks - count);
    farm_report report;
    if (count == 0) {  // everything was journaled
        int ranks = 1;
        MPI_Comm_size(comm, &ranks);
        report = empty_report(options, ranks, tasks);
    } else {
        // The farm of the remaining tasks: task j is remaining[j]. Inputs travel compacted (rank 0 gathers them),
        // or, replicated, each rank reads its own copy by the task's index.
        const bool replicated = options.protocol.replicated_input;
        std::vector<std::byte> compact;
        if (rank == 0 && !replicated && kernel.in_bytes > 0 && in) {
            compact.resize(static_cast<std::size_t>(count) * kernel.in_bytes);
            for (std::size_t j = 0; j < remaining.size(); ++j)
                std::memcpy(compact.data() + j * kernel.in_bytes, in + static_cast<std::size_t>(remaining[j]) * kernel.in_bytes,
                            kernel.in_bytes);
        }
        task_kernel mapped;
        mapped.in_bytes = replicated ? 0 : kernel.in_bytes;
        mapped.out_bytes = kernel.out_bytes;
        mapped.out_align = kernel.out_align;
        mapped.fill = kernel.fill;
        const auto input = [&](task_count j, const std::byte* x) {
            const task_count i = remaining[static_cast<std::size_t>(j)];
            return replicated ? (in ? in + static_cast<std::size_t>(i) * kernel.in_bytes : nullptr) : x;
        };
        if (kernel.variable())
            mapped.run_variable = [&](task_count j, const std::byte* x, result_writer& w) {
                kernel.run_variable(remaining[static_cast<std::size_t>(j)], input(j, x), w);
            };
        else
            mapped.run = [&](task_count j, const std::byte* x, std::byte* y) {
                kernel.run(remaining[static_cast<std::size_t>(j)], input(j, x), y);
            };
        mapped.deliver = [&](const results_view& v) {  // rank 0: journal, then store under the task's own index
            v.for_each([&](task_count j, const std::byte* bytes, std::size_t size) {
                const task_count i = remaining[static_cast<std::size_t>(j)];
                writer->append(i, bytes, size);
                if (kernel.streamed()) deliver_one(kernel, i, bytes, size, scratch);
                else std::memcpy(out + static_cast<std::size_t>(i) * kernel.out_bytes, bytes, kernel.out_bytes);
            });
        };
        farm_options rest = options;
        rest.resume.journal.clear();
        rest.output.trace.clear();  // written below, in the tasks' own indices
        rest.output.record_trace = options.output.record_trace || trace;
        rest.protocol.replicated_input = false;  // nothing travels with replicated input: in_bytes is 0
        try {
            report = run_farm(comm, compact.empty() ? nullptr : compact.data(), nullptr, count, mapped, rest);
        } catch (...) {
            forget_new_journal();  // only when no result was journaled
            throw;
        }
        report.tasks = tasks;
        for (auto& c : report.trace) c.first = remaining[static_cast<std::size_t>(c.first)];  // a chunk's first task
        for (auto& f : report.failed_tasks) {  // skipped: journaled as failed, after their fill (a rerun computes them)
            f.task = remaining[static_cast<std::size_t>(f.task)];
            if (rank == 0) writer->append_failure(f.task, f.error);
            f.task += kernel.index_base;  // as the user counts them
        }
    }
    {
        farm_report computed = report;  // the trace holds what was computed: `count` tasks
        computed.tasks = count;
        // A failed write throws on every rank; the journal's pending records are still written as the writer goes
        // (its destructor), so a rerun restores them.
        finish_trace(comm, rank, trace, options.output.trace, computed);
    }
    // The journal's last batch: a failure to write it is an error on every rank.
    std::string failed;
    if (rank == 0) {
        try {
            for (const int lost : report.lost_ranks)  // on_worker_loss continue: the journal names them too
                writer->append_lost(lost, "rank " + std::to_string(lost) +
                                              " presumed lost (no message within its deadline); its tasks were computed by the others");
            writer->close();
        } catch (const std::exception& e) {
            failed = e.what();
        }
    }
    broadcast_string(comm, failed, report.lost_ranks);
    if (!failed.empty()) throw error(failed);
    report.journaled = restored;
    return report;
}

}  // namespace pfarm::detail
