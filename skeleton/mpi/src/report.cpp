// pfarm MPI engine: the farm's report over MPI (report.hpp): a session's part's one serialiser (doubles, gathered on
// rank 0, collectively or point to point) and the report the merge (pfarm/report_merge.hpp) fills.
#include "report.hpp"

#include "messages.hpp"

#include "pfarm/mpi.hpp"

#include <array>
#include <span>
#include <string>

namespace pfarm::detail {

namespace {

/// The readings a trace record keeps (trace.hpp: cores and node_key are not stored), in the order they are packed.
std::array<const std::optional<double>*, 5> readings_of(const resource_sample& s) {
    return {&s.availability, &s.run_queue, &s.load1, &s.latency, &s.benchmark};
}
std::array<std::optional<double>*, 5> readings_of(resource_sample& s) {
    return {&s.availability, &s.run_queue, &s.load1, &s.latency, &s.benchmark};
}

/// A part as doubles: the workers (rank, tasks, busy, finish, steal attempts, steals, lost swaps, chunk sizes as runs: their count, then size and repeat
/// of each), the counters, k, the records with their readings. Task counts stay below 2^53 (max_tasks): exact.
void pack(const report_part& p, std::vector<double>& v) {
    v.push_back(static_cast<double>(p.workers.size()));
    for (const worker_part& w : p.workers) {
        v.insert(v.end(), {static_cast<double>(w.rank), static_cast<double>(w.tasks), w.busy, w.finish,
                           static_cast<double>(w.steal_attempts), static_cast<double>(w.steals),
                           static_cast<double>(w.lost_swaps), static_cast<double>(w.chunks.runs().size())});
        for (const chunk_sizes::run& c : w.chunks.runs()) v.insert(v.end(), {static_cast<double>(c.size), static_cast<double>(c.repeat)});
    }
    v.insert(v.end(), {static_cast<double>(p.reclaims), static_cast<double>(p.reclaimed_tasks), static_cast<double>(p.reruns),
                       static_cast<double>(p.rerun_tasks), static_cast<double>(p.served), static_cast<double>(p.up_requests),
                       static_cast<double>(p.merged), p.k ? 1.0 : 0.0, p.k.value_or(0.0),
                       static_cast<double>(p.records.size())});
    for (const chunk_trace& c : p.records) {
        v.insert(v.end(), {static_cast<double>(c.rank), static_cast<double>(c.first), static_cast<double>(c.count), c.sent,
                           c.started, c.finished, c.received, c.calibration ? 1.0 : 0.0});
        for (const std::optional<double>* x : readings_of(c.sample)) v.insert(v.end(), {x->has_value() ? 1.0 : 0.0, x->value_or(0.0)});
    }
    v.insert(v.end(), {static_cast<double>(p.task_errors), static_cast<double>(p.retried_tasks),
                       static_cast<double>(p.failed.size())});
    for (const failed_task& f : p.failed) {  // the error's text a byte per double (texts are short)
        v.insert(v.end(), {static_cast<double>(f.task), static_cast<double>(f.rank), static_cast<double>(f.error.size())});
        for (const char c : f.error) v.push_back(static_cast<double>(static_cast<unsigned char>(c)));
    }
}

report_part unpack(std::span<const double> v) {
    std::size_t at = 0;
    const auto next = [&] {
        if (at >= v.size()) throw internal_error("a report part does not add up");
        return v[at++];
    };
    const auto count = [&] { return static_cast<task_count>(next()); };
    report_part p;
    p.workers.resize(static_cast<std::size_t>(next()));
    for (worker_part& w : p.workers) {
        w.rank = static_cast<int>(next());
        w.tasks = count();
        w.busy = next();
        w.finish = next();
        w.steal_attempts = count(), w.steals = count(), w.lost_swaps = count();
        const auto runs = static_cast<std::size_t>(next());
        for (std::size_t c = 0; c < runs; ++c) {
            const task_count size = count();
            w.chunks.append(size, count());
        }
    }
    p.reclaims = count(), p.reclaimed_tasks = count(), p.reruns = count(), p.rerun_tasks = count();
    p.served = count(), p.up_requests = count(), p.merged = count();
    const bool has_k = next() != 0.0;
    const double k = next();
    if (has_k) p.k = k;
    p.records.resize(static_cast<std::size_t>(next()));
    for (chunk_trace& t : p.records) {
        t.rank = static_cast<int>(next());
        t.first = count();
        t.count = count();
        t.sent = next(), t.started = next(), t.finished = next(), t.received = next();
        t.calibration = next() != 0.0;
        for (std::optional<double>* x : readings_of(t.sample)) {
            const bool has = next() != 0.0;
            const double value = next();
            if (has) *x = value;
        }
    }
    p.task_errors = count(), p.retried_tasks = count();
    p.failed.resize(static_cast<std::size_t>(next()));
    for (failed_task& f : p.failed) {
        f.task = count();
        f.rank = static_cast<int>(next());
        f.error.resize(static_cast<std::size_t>(next()));
        for (char& c : f.error) c = static_cast<char>(static_cast<unsigned char>(next()));
    }
    if (at != v.size()) throw internal_error("a report part does not add up");
    return p;
}

}  // namespace

std::vector<report_part> gather_parts(MPI_Comm comm, int root, const report_part& mine) {
    int rank = 0, ranks = 1;
    mpi::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    mpi::check(MPI_Comm_size(comm, &ranks), "MPI_Comm_size");
    std::vector<double> packed;
    pack(mine, packed);
    const int count = static_cast<int>(packed.size());
    std::vector<int> counts(static_cast<std::size_t>(rank == root ? ranks : 0)), at(counts.size());
    mpi::check(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, root, comm), "MPI_Gather");
    int total = 0;
    for (std::size_t q = 0; q < counts.size(); ++q) at[q] = total, total += counts[q];
    std::vector<double> all(static_cast<std::size_t>(total));
    mpi::check(MPI_Gatherv(packed.data(), count, MPI_DOUBLE, all.data(), counts.data(), at.data(), MPI_DOUBLE, root, comm),
               "MPI_Gatherv");
    std::vector<report_part> parts;
    for (std::size_t q = 0; q < counts.size(); ++q)
        parts.push_back(unpack(std::span<const double>(all).subspan(static_cast<std::size_t>(at[q]), static_cast<std::size_t>(counts[q]))));
    return parts;
}

void send_part(MPI_Comm comm, int root, const report_part& mine) {
    std::vector<double> packed;
    pack(mine, packed);
    mpi::check(MPI_Send(packed.data(), static_cast<int>(packed.size()), MPI_DOUBLE, root, tag_part, comm), "MPI_Send");
}

std::vector<report_part> receive_parts(MPI_Comm comm, const report_part& mine, const std::vector<int>& from, double seconds) {
    int rank = 0, ranks = 1;
    mpi::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    mpi::check(MPI_Comm_size(comm, &ranks), "MPI_Comm_size");
    std::vector<report_part> parts(static_cast<std::size_t>(ranks));
    parts[0] = mine;
    for (int q : from) {
        if (q == rank) continue;
        MPI_Status status;
        if (!probe_until(comm, q, tag_part, seconds, status)) continue;  // gone after the farm: its part is empty
        int count = 0;
        mpi::check(MPI_Get_count(&status, MPI_DOUBLE, &count), "MPI_Get_count");
        std::vector<double> v(static_cast<std::size_t>(count));
        mpi::check(MPI_Recv(v.data(), count, MPI_DOUBLE, q, tag_part, comm, MPI_STATUS_IGNORE), "MPI_Recv");
        parts[static_cast<std::size_t>(q)] = unpack(v);
    }
    return parts;
}

farm_report empty_report(const farm_options& options, int ranks, task_count tasks) {
    farm_report r;
    r.technique = options.schedule.technique;
    r.ranks = ranks;
    r.first_worker_rank = ranks == 1 || options.topology.farmer_computes ? 0 : 1;
    r.tasks = tasks;
    size_entries(r, ranks);
    return r;
}

}  // namespace pfarm::detail
