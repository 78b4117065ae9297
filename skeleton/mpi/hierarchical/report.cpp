// pfarm MPI engine, the hierarchical farm: its report from the parts (pfarm/report_merge.hpp; a master's part is the
// core's group_part: its group's session with the requests its workers sent it and its own requests up). Rank 0
// gathers the parts over the upper communicator (report.hpp) once the outcome is known and good, beside its own (its
// own worker's entries), and merges them; each master's report holds its group's entries.
#include "hierarchical.hpp"

namespace pfarm::detail {

void send_group_part(MPI_Comm up, const report_part& part) { (void)gather_parts(up, 0, part); }

std::vector<int> share_lost(MPI_Comm up, const std::vector<int>& mine) {
    int ranks = 0;
    mpi::check(MPI_Comm_size(up, &ranks), "MPI_Comm_size");
    const int count = static_cast<int>(mine.size());
    std::vector<int> counts(static_cast<std::size_t>(ranks)), at(static_cast<std::size_t>(ranks), 0);
    mpi::check(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, up), "MPI_Allgather");
    for (int r = 1; r < ranks; ++r) at[static_cast<std::size_t>(r)] = at[static_cast<std::size_t>(r) - 1] + counts[static_cast<std::size_t>(r) - 1];
    std::vector<int> all(static_cast<std::size_t>(at.back() + counts.back()));
    mpi::check(MPI_Allgatherv(mine.data(), count, MPI_INT, all.data(), counts.data(), at.data(), MPI_INT, up),
               "MPI_Allgatherv");
    return all;
}

farm_report group_report(const farm_options& options, int ranks, task_count tasks, const rank_layout& h, int g,
                         const farmer_session& group) {
    farm_report r = empty_report(options, ranks, tasks);
    report_part p = part_of(group, h.members.at(static_cast<std::size_t>(g)));
    p.records.clear();  // the trace is rank 0's
    p.calibration.reset();  // the group's own, indexed by its workers: no farm-wide calibration (group_part's rule)
    add_part(r, p);
    r.workers = h.workers;
    r.master_ranks = h.master;
    return r;
}

farm_report gather_report(MPI_Comm up, const farm_options& options, int ranks, task_count tasks, const rank_layout& h,
                          const farmer_session& top, task_count requests, double cpu0) {
    report_part own;  // rank 0's own worker: worker 0 of the supermaster's session (its other workers are the masters)
    if (h.computes) {
        own.workers.push_back({0, top.tasks_of(0), top.chunks_of(0), top.busy_of(0), top.finish_of(0)});
        for (const chunk_trace& c : top.records())  // (kept only with a trace)
            if (c.rank == 0) own.records.push_back(c);
        // Its task errors (on_task_error): only its own worker reports any to the supermaster's session.
        own.task_errors = top.task_errors(), own.retried_tasks = top.retried_tasks();
        for (const task_failure& f : top.failed()) own.failed.push_back({f.task, 0, f.text});
    }
    const std::vector<report_part> parts = gather_parts(up, 0, own);  // rank 0's, then the masters' in group order
    farm_report r = empty_report(options, ranks, tasks);
    r.workers = h.workers;
    r.master_ranks = h.master;
    for (std::size_t g = 0; g < parts.size(); ++g) {
        add_part(r, parts[g]);  // k: group 0's, as the simulator's
        if (g == 0) continue;
        r.master_requests.push_back(parts[g].served);
        r.master_merged.push_back(parts[g].merged);
    }
    std::vector<int> computing;
    for (int q = 0; q < ranks; ++q)
        if (h.worker_index[static_cast<std::size_t>(q)] >= 0) computing.push_back(q);
    finish_report(r, computing, trace_order::sent);  // (its trace: run_farm's finish_trace)
    r.makespan = top.last_result();
    r.farmer_requests = requests;
    r.farmer_cpu_seconds = cpu_seconds() - cpu0;
    return r;
}

}  // namespace pfarm::detail
