// pfarm core: the one report of a farm (report_merge.hpp): a session's part, the merge of the parts and what derives
// from it.
#include "pfarm/report_merge.hpp"

#include "pfarm/metrics.hpp"

#include <algorithm>
#include <cstdio>

namespace pfarm {

namespace {

/// Calibration tasks shorter than this (seconds) measure the machine's timing noise about as much as the workers'
/// speeds: on the 2-core development VM a 5 us task reads 4 to 16 us from run to run (docs/calibration.md).
constexpr double short_calibration_task = 1e-4;

/// Says so in the calibration's note when its longest task was that short and no calibration span made each
/// worker's measurement longer.
void note_short_calibration(calibration_result& c) {
    if (c.times.empty() || c.span >= short_calibration_task) return;
    const double longest = *std::max_element(c.times.begin(), c.times.end());
    if (!(longest < short_calibration_task)) return;
    char text[256];
    std::snprintf(text, sizeof text,
                  "calibration tasks of at most %.3g us are too short to tell the workers' speeds from timing noise: "
                  "F may be noise (give --weights, or a loop whose first tasks are longer)",
                  longest * 1e6);
    c.note = c.note.empty() ? std::string(text) : c.note + "; " + text;
}

}  // namespace

report_part part_of(const farmer_session& s, const std::vector<int>& ranks) {
    report_part p;
    for (int w = 0; w < s.workers(); ++w)
        p.workers.push_back({ranks.at(static_cast<std::size_t>(w)), s.tasks_of(w), s.chunks_of(w), s.busy_of(w), s.finish_of(w)});
    const farmer& f = s.decisions();
    p.reclaims = f.reclaims(), p.reclaimed_tasks = f.reclaimed_tasks(), p.reruns = f.reruns(), p.rerun_tasks = f.rerun_tasks();
    p.k = f.policy().installment_factor();
    if (const std::vector<technique_choice>* c = f.policy().choices()) p.choices = *c;
    if (const calibration_result* c = f.calibration()) p.calibration = *c;
    p.records = s.records();
    for (chunk_trace& c : p.records) c.rank = ranks.at(static_cast<std::size_t>(c.rank));
    p.task_errors = s.task_errors(), p.retried_tasks = s.retried_tasks();
    for (const task_failure& f : s.failed()) p.failed.push_back({f.task, ranks.at(static_cast<std::size_t>(f.worker)), f.text});
    return p;
}

report_part group_part(const master_session& s, const std::vector<int>& workers, task_count served) {
    report_part p = part_of(s.group(), workers);
    p.calibration.reset();
    p.served = served;
    p.up_requests = s.up_requests();
    p.merged = s.merged_requests();
    return p;
}

void size_entries(report_entries& r, int ranks) {
    const auto n = static_cast<std::size_t>(ranks);
    r.tasks_per_rank.assign(n, 0);
    r.chunks_per_rank.assign(n, {});
    r.busy_per_rank.assign(n, 0.0);
    r.finish_per_rank.assign(n, 0.0);
    r.steal_attempts_per_rank.assign(n, 0);
    r.steals_per_rank.assign(n, 0);
    r.lost_swaps_per_rank.assign(n, 0);
}

void add_part(report_entries& r, const report_part& p) {
    for (const worker_part& w : p.workers) {
        const auto q = static_cast<std::size_t>(w.rank);
        r.tasks_per_rank.at(q) = w.tasks;
        r.chunks_per_rank.at(q) = w.chunks;
        r.busy_per_rank.at(q) = w.busy;
        r.finish_per_rank.at(q) = w.finish;
        r.steal_attempts_per_rank.at(q) = w.steal_attempts;
        r.steals_per_rank.at(q) = w.steals;
        r.lost_swaps_per_rank.at(q) = w.lost_swaps;
    }
    r.reclaims += p.reclaims, r.reclaimed_tasks += p.reclaimed_tasks;
    r.reruns += p.reruns, r.rerun_tasks += p.rerun_tasks;
    if (!r.k && p.k) r.k = p.k;
    if (!r.calibration && p.calibration) r.calibration = p.calibration;
    if (r.choices.empty()) r.choices = p.choices;
    r.trace.insert(r.trace.end(), p.records.begin(), p.records.end());
    r.failed_tasks.insert(r.failed_tasks.end(), p.failed.begin(), p.failed.end());
    r.task_errors += p.task_errors, r.retried_tasks += p.retried_tasks;
}

void finish_report(report_entries& r, const std::vector<int>& computing, trace_order order, report_clock clock) {
    std::vector<double> finish;
    for (int q : computing) finish.push_back(r.finish_per_rank.at(static_cast<std::size_t>(q)));
    r.percent_imbalance = percent_imbalance(finish);
    r.cov = coefficient_of_variation(finish);
    if (order == trace_order::sent)
        std::stable_sort(r.trace.begin(), r.trace.end(), [](const chunk_trace& a, const chunk_trace& b) { return a.sent < b.sent; });
    else
        std::sort(r.trace.begin(), r.trace.end(), [](const chunk_trace& a, const chunk_trace& b) { return a.first < b.first; });
    if (r.calibration && clock == report_clock::seconds) note_short_calibration(*r.calibration);
    std::sort(r.failed_tasks.begin(), r.failed_tasks.end(),
              [](const failed_task& a, const failed_task& b) { return a.task < b.task; });
}

task_count chunk_total(const report_entries& r) {
    task_count n = 0;
    for (const chunk_sizes& c : r.chunks_per_rank) n += static_cast<task_count>(c.size());
    return n;
}

}  // namespace pfarm
