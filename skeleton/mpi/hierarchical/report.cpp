// pfarm MPI engine, the hierarchical farm: its report. Each master packs its group's part (its workers' tasks,
// times and chunk sizes, its reclaims and requests, k, the records with their readings) into doubles, rank 0
// gathers them over the upper communicator once the outcome is known and good, and assembles the farm's report
// with its own session's (its own worker's entries, the makespan); each master's report holds its group's entries.
#include "hierarchical.hpp"

#include "pfarm/metrics.hpp"

#include <algorithm>
#include <array>
#include <optional>

namespace pfarm::detail {

namespace {

/// The readings a trace record keeps (trace.hpp: cores and node_key are not stored), in the order they are packed.
std::array<const std::optional<double>*, 5> readings_of(const resource_sample& s) {
    return {&s.availability, &s.run_queue, &s.load1, &s.latency, &s.benchmark};
}
std::array<std::optional<double>*, 5> readings_of(resource_sample& s) {
    return {&s.availability, &s.run_queue, &s.load1, &s.latency, &s.benchmark};
}

/// Rank 0's report from the masters' packed parts (in group order) and the supermaster's session.
farm_report assemble(const farm_options& options, int ranks, task_count tasks, const rank_layout& h, const farmer_session& top,
                     task_count requests, const std::vector<double>& all, const std::vector<int>& counts, double cpu) {
    farm_report r = empty_report(options, ranks, tasks);
    r.workers = h.workers;
    r.master_ranks = h.master;
    std::size_t at = 0;
    const auto next = [&] { return all.at(at++); };
    for (int g = 0; g < h.groups(); ++g) {
        const std::size_t end = at + static_cast<std::size_t>(counts.at(static_cast<std::size_t>(g + 1)));
        const auto n = static_cast<int>(next());
        for (int w = 0; w < n; ++w) {
            const auto q = static_cast<std::size_t>(next());
            r.tasks_per_rank[q] = static_cast<task_count>(next());
            r.busy_per_rank[q] = next();
            r.finish_per_rank[q] = next();
            const auto runs = static_cast<std::size_t>(next());
            for (std::size_t c = 0; c < runs; ++c) {
                const auto size = static_cast<task_count>(next());
                r.chunks_per_rank[q].append(size, static_cast<task_count>(next()));
            }
        }
        r.reclaims += static_cast<task_count>(next());
        r.reclaimed_tasks += static_cast<task_count>(next());
        r.master_requests.push_back(static_cast<task_count>(next()));
        next();  // its requests up (the supermaster counts them all)
        r.master_merged.push_back(static_cast<task_count>(next()));
        const bool has_k = next() != 0.0;
        const double k = next();
        if (g == 0 && has_k) r.k = k;  // as the simulator: group 0's
        const auto records = static_cast<std::size_t>(next());
        for (std::size_t c = 0; c < records; ++c) {
            chunk_trace t;
            t.rank = static_cast<int>(next());
            t.first = static_cast<task_count>(next());
            t.count = static_cast<task_count>(next());
            t.sent = next(), t.started = next(), t.finished = next(), t.received = next();
            t.calibration = next() != 0.0;
            for (std::optional<double>* x : readings_of(t.sample)) {
                const bool has = next() != 0.0;
                const double value = next();
                if (has) *x = value;
            }
            r.trace.push_back(t);
        }
        if (at != end) throw internal_error("hierarchical farm: master " + std::to_string(g) + "'s report does not add up");
    }
    if (h.computes) {  // rank 0's own worker: worker 0 of the supermaster's session
        r.tasks_per_rank[0] = top.tasks_of(0);
        r.chunks_per_rank[0] = top.chunks_of(0);
        r.busy_per_rank[0] = top.busy_of(0);
        r.finish_per_rank[0] = top.finish_of(0);
        for (const chunk_trace& c : top.records())  // (kept only with a trace)
            if (c.rank == 0) r.trace.push_back(c);
    }
    std::stable_sort(r.trace.begin(), r.trace.end(), [](const chunk_trace& a, const chunk_trace& b) { return a.sent < b.sent; });
    std::vector<double> finish;
    for (int q = 0; q < ranks; ++q)
        if (h.worker_index[static_cast<std::size_t>(q)] >= 0) finish.push_back(r.finish_per_rank[static_cast<std::size_t>(q)]);
    r.percent_imbalance = percent_imbalance(finish);
    r.cov = coefficient_of_variation(finish);
    r.makespan = top.last_result();
    r.farmer_requests = requests;
    r.farmer_cpu_seconds = cpu;
    return r;  // (its trace: run_farm's finish_trace)
}

}  // namespace

/// Per worker (rank, tasks, busy, finish, chunk sizes as runs: their count, then size and repeat of each), the
/// reclaims, the requests its workers sent it, its own requests up and how many carried results, k, the records
/// (with their readings).
std::vector<double> pack_group(const master_session& s, const std::vector<int>& workers, task_count served) {
    const farmer_session& g = s.group();
    std::vector<double> v;
    v.push_back(static_cast<double>(workers.size()));
    for (int w = 0; w < static_cast<int>(workers.size()); ++w) {
        const auto& chunks = g.chunks_of(w);
        v.insert(v.end(), {static_cast<double>(workers[static_cast<std::size_t>(w)]), static_cast<double>(g.tasks_of(w)),
                           g.busy_of(w), g.finish_of(w), static_cast<double>(chunks.runs().size())});
        for (const chunk_sizes::run& c : chunks.runs()) v.insert(v.end(), {static_cast<double>(c.size), static_cast<double>(c.repeat)});
    }
    const std::optional<double> k = g.decisions().policy().installment_factor();
    v.insert(v.end(), {static_cast<double>(g.decisions().reclaims()), static_cast<double>(g.decisions().reclaimed_tasks()),
                       static_cast<double>(served), static_cast<double>(s.up_requests()),
                       static_cast<double>(s.merged_requests()), k ? 1.0 : 0.0, k.value_or(0.0),
                       static_cast<double>(g.records().size())});
    for (const chunk_trace& c : g.records()) {
        v.insert(v.end(), {static_cast<double>(workers[static_cast<std::size_t>(c.rank)]), static_cast<double>(c.first),
                           static_cast<double>(c.count), c.sent, c.started, c.finished, c.received, c.calibration ? 1.0 : 0.0});
        for (const std::optional<double>* x : readings_of(c.sample)) v.insert(v.end(), {x->has_value() ? 1.0 : 0.0, x->value_or(0.0)});
    }
    return v;
}

void send_group_part(MPI_Comm up, const std::vector<double>& part) {
    const int count = static_cast<int>(part.size());
    mpi::check(MPI_Gather(&count, 1, MPI_INT, nullptr, 1, MPI_INT, 0, up), "MPI_Gather");
    mpi::check(MPI_Gatherv(part.data(), count, MPI_DOUBLE, nullptr, nullptr, nullptr, MPI_DOUBLE, 0, up), "MPI_Gatherv");
}

farm_report group_report(const farm_options& options, int ranks, task_count tasks, const rank_layout& h, int g,
                         const farmer_session& group) {
    farm_report r = empty_report(options, ranks, tasks);
    const std::vector<int>& members = h.members.at(static_cast<std::size_t>(g));
    for (std::size_t w = 0; w < members.size(); ++w) {
        const auto q = static_cast<std::size_t>(members[w]);
        const int i = static_cast<int>(w);
        r.tasks_per_rank[q] = group.tasks_of(i);
        r.chunks_per_rank[q] = group.chunks_of(i);
        r.busy_per_rank[q] = group.busy_of(i);
        r.finish_per_rank[q] = group.finish_of(i);
    }
    r.workers = h.workers;
    r.master_ranks = h.master;
    return r;
}

farm_report gather_report(MPI_Comm up, const farm_options& options, int ranks, task_count tasks, const rank_layout& h,
                          const farmer_session& top, task_count requests, double cpu0) {
    int none = 0;
    std::vector<int> counts(static_cast<std::size_t>(h.groups() + 1)), at(counts.size());
    mpi::check(MPI_Gather(&none, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, up), "MPI_Gather");
    int total = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) at[i] = total, total += counts[i];
    std::vector<double> all(static_cast<std::size_t>(total));
    mpi::check(MPI_Gatherv(nullptr, 0, MPI_DOUBLE, all.data(), counts.data(), at.data(), MPI_DOUBLE, 0, up), "MPI_Gatherv");
    return assemble(options, ranks, tasks, h, top, requests, all, counts, cpu_seconds() - cpu0);
}

}  // namespace pfarm::detail
