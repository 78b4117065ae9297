// pfarm MPI engine, the hierarchical farm: its report from the parts (pfarm/report_merge.hpp; a master's part is the
// core's group_part: its group's session with the requests its workers sent it and its own requests up). Rank 0
// gathers the parts over the upper communicator (report.hpp) once the outcome is known and good, beside its own (its
// own worker's entries), and merges them; each master's report holds its group's entries. With on_worker_loss the
// parts travel point to point from the living masters (a master presumed lost has none: its group has no entries).
#include "hierarchical.hpp"

namespace pfarm::detail {

void send_group_part(MPI_Comm up, const report_part& part, bool point_to_point) {
    if (point_to_point) send_part(up, 0, part);
    else (void)gather_parts(up, 0, part);
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
                          const farmer_session& top, task_count requests, double cpu0, const std::vector<int>* living,
                          double wait) {
    report_part own;  // rank 0's own worker: worker 0 of the supermaster's session (its other workers are the masters)
    if (h.computes) {
        own.workers.push_back({0, top.tasks_of(0), top.chunks_of(0), top.busy_of(0), top.finish_of(0)});
        for (const chunk_trace& c : top.records())  // (kept only with a trace)
            if (c.rank == 0) own.records.push_back(c);
        // Its task errors (on_task_error): only its own worker reports any to the supermaster's session.
        own.task_errors = top.task_errors(), own.retried_tasks = top.retried_tasks();
        for (const task_failure& f : top.failed()) own.failed.push_back({f.task, 0, f.text});
    }
    // Rank 0's, then the masters' in group order (with on_worker_loss point to point, from the living masters only).
    const std::vector<report_part> parts = living ? receive_parts(up, own, *living, wait) : gather_parts(up, 0, own);
    farm_report r = empty_report(options, ranks, tasks);
    r.workers = h.workers;
    r.master_ranks = h.master;
    for (std::size_t g = 0; g < parts.size(); ++g) {
        add_part(r, parts[g]);  // k: group 0's, as the simulator's
        if (g == 0) continue;
        r.master_requests.push_back(parts[g].served);
        r.master_merged.push_back(parts[g].merged);
    }
    const int own_units = h.computes ? 1 : 0;  // the session's worker g + own_units is master g
    for (int g = 0; g < h.groups(); ++g) r.master_chunks.push_back(top.chunks_of(g + own_units));
    for (const chunk_trace& c : top.records())  // (kept only with a trace)
        if (c.rank >= own_units) {
            r.master_trace.push_back(c);
            r.master_trace.back().rank = h.master.at(static_cast<std::size_t>(c.rank - own_units));
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
