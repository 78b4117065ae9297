// The farm options every app shares (one spelling each) and the farm report as text and as JSON.
#include "farm_cli.hpp"

#include "calibration_report.hpp"

#include "pfarm/emulation.hpp"
#include "pfarm/error.hpp"
#include "pfarm/testing.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <numeric>
#include <ostream>
#include <sstream>

namespace pfarm::tools {

void add_farm_options(CLI::App& app, farm_options& o) {
    // Tools show progress unless told otherwise (the library itself is quiet by default).
    o.output.progress = progress_mode::automatic;
    add_technique_options(app, o.schedule.technique, o.schedule.parameters, false);
    app.get_option("--technique")->required(false)->default_str(o.schedule.technique);
    app.add_flag("--farmer-computes", o.topology.farmer_computes, "rank 0 computes chunks too (hierarchical: the supermaster and every master)");
    app.add_flag("--prefetch", o.protocol.prefetch, "workers ask for the next chunk before computing the current one");
    app.add_flag("--reclaim", o.protocol.reclaim,
                 "work take-back: once every task is handed out, an idle worker takes unstarted tasks back from the "
                 "worker expected to finish last (with --prefetch too)");
    app.add_option_function<std::string>(
        "--stragglers",
        [&o](const std::string& s) {
            const auto v = parse_numbers(s, "--stragglers");
            if (v.size() != 1 || (v[0] != 0.0 && !(v[0] > 1.0)))
                throw invalid_argument("--stragglers", "is '" + s + "'; expected 0 (off) or one factor > 1");
            o.protocol.stragglers = v[0];
        },
        "re-execute overdue chunks on idle workers once every task is handed out: FACTOR > 1, how many times its "
        "predicted time a chunk may take (0: off, the default; docs/reliability.md \"Stragglers\")");
    app.add_option_function<std::string>(
        "--calibration-span",
        [&o](const std::string& s) {
            const auto v = parse_numbers(s, "--calibration-span");
            if (v.size() != 1 || !(v[0] >= 0.0) || !std::isfinite(v[0]))
                throw invalid_argument("--calibration-span", "is '" + s + "'; expected one finite value >= 0 (seconds)");
            o.schedule.calibration_span = v[0];
        },
        "seconds each worker's calibration adds up to, on growing chunks (docs/calibration.md \"Calibration span\"); "
        "default: twice the longest CPU quota period of any rank's cgroup (0.2 s under the usual 100 ms), else 0 "
        "(one calibration task per worker)");
    app.add_option_function<std::string>(
        "--on-task-error",
        [&o](const std::string& s) { o.protocol.on_task_error = parse_task_error_rule(s, "--on-task-error"); },
        "a task that fails: stop (the farm stops, the default), retry[=N] (it runs again on another worker, up to N "
        "runs in all, 3 by default; then as stop; not with --farmer stealing), skip (the farm goes on; failed "
        "tasks are listed in the report and the journal, their outputs left value-initialised; docs/reliability.md "
        "\"Task errors\")");
    app.add_option_function<std::string>(
        "--on-worker-loss",
        [&o](const std::string& s) { o.protocol.on_worker_loss = parse_worker_loss_rule(s, "--on-worker-loss"); },
        "a worker rank that dies: off (the MPI runtime ends the job; --journal resumes it), stop (the farm stops on the "
        "living ranks, naming it), continue (its tasks go to the others; the report names it, exit status 3); "
        "stop=S / continue=S: presumed lost S seconds (default 5) past 4 times its chunk's expected time. Default: "
        "continue when started with mpirun --mca orte_enable_recovery 1 and the farm is not stealing, else off "
        "(docs/reliability.md \"A lost worker\")");
    app.add_flag("--replicated-input", o.protocol.replicated_input, "every rank holds the input: only indices travel");
    app.add_option_function<std::string>(
        "--farmer",
        [&o](const std::string& s) { o.topology.farmer = parse_farmer_mode(s); },
        "who schedules: flat (one farmer, the default), hierarchical (rank 0 a supermaster over --masters K masters, "
        "each serving a group of workers; docs/hierarchical.md), decentralised (every rank "
        "claims its own chunks from one-sided counters; static, ss, css, gss, fss, tss, fiss, tfss, fsc, mfsc, dgss with --weights), "
        "stealing (every rank claims from its own range and steals half of another's remainder when it is empty; ss, "
        "css, gss; docs/hierarchical.md \"Work stealing\")");
    app.add_option_function<std::string>(
        "--victims", [&o](const std::string& s) { o.topology.victims = parse_victim_rule(s, "--victims"); },
        "--farmer stealing: random (a victim drawn uniformly from the other ranks, the default) or tree (Tree "
        "Scheduling: always the parent in a binary tree of the ranks)");
    app.add_option("--masters", o.topology.masters,
                   "hierarchical farmer: masters (0 = one per node; K: ranks 1..N-1 in K contiguous groups, the first "
                   "rank of each its master, 1 <= K <= (N-1)/2)");
    app.add_option("--master-technique", o.topology.master_technique,
                   "hierarchical farmer: the supermaster's technique over the masters (default: the workers' technique "
                   "when it is a weighted scheme, dgss/dfss/dtss..., else fss with x = 4)");
    app.add_option("--trace", o.output.trace, "write a trace of every chunk: FILE.csv or FILE.json");
    app.add_option("--journal", o.resume.journal,
                   "resumable run: record each finished task in FILE; a rerun with the same FILE computes only the "
                   "tasks it lacks (docs/reliability.md)");
    app.add_option_function<std::string>(
        "--progress",
        [&o](const std::string& s) {
            if (s == "auto") o.output.progress = progress_mode::automatic;
            else if (s == "plain") o.output.progress = progress_mode::plain;
            else if (s == "quiet") o.output.progress = progress_mode::quiet;
            else throw invalid_argument("--progress", "is '" + s + "'; expected auto, plain or quiet");
        },
        "progress on stderr: auto (a bar on a terminal, lines otherwise), plain, quiet");
    app.add_flag_callback("--quiet", [&o] { o.output.progress = progress_mode::quiet; }, "no progress output");
    app.add_option_function<std::string>(
        "--monitors",
        [&o](const std::string& s) {
            std::stringstream in(s);
            std::string name;
            while (std::getline(in, name, ',')) o.schedule.monitors.push_back(name);
        },
        "extra monitors whose readings go to the trace (comma-separated): loadavg (with every request), latency "
        "(the MPI probe), or any monitor of the registry (pfarm-probe --help), read once at the start");
    app.add_option_function<std::string>(
        "--slowdown",
        [&o](const std::string& s) { o.emulation = testing::emulate(parse_numbers(s, "--slowdown"), o.emulation); },
        "emulated slowdown per rank f0,f1,... (>= 1; or PFARM_SLOWDOWN)");
    app.add_option_function<std::vector<std::string>>(
        "--load-change",
        [&o](const std::vector<std::string>& items) {
            std::vector<load_change> changes;
            for (const auto& item : items) changes.push_back(parse_load_change(item, "--load-change"));
            o.emulation = testing::emulate(changes, o.emulation);
        },
        "emulated load change RANK:TIME:FACTOR, repeatable (or PFARM_LOAD_CHANGES)");
}

void print_report(std::ostream& out, const farm_report& r) {
    out << "technique " << r.technique << ", " << r.ranks << " rank(s)" << (r.sequential ? " (sequential)" : "") << ", "
        << r.tasks << " tasks\n";
    out << std::fixed << std::setprecision(3) << "makespan " << r.makespan << " s, imbalance " << r.percent_imbalance
        << " %, cov " << std::setprecision(4) << r.cov;
    if (r.k) out << ", k " << *r.k;
    if (r.reclaims > 0) out << ", " << r.reclaims << " reclaims moved " << r.reclaimed_tasks << " tasks";
    if (r.reruns > 0) out << ", " << r.reruns << " overdue chunks re-executed (" << r.rerun_tasks << " tasks)";
    if (r.retried_tasks > 0) out << ", " << r.retried_tasks << " failed tasks run again";
    out << "\n";
    for (const technique_choice& c : r.choices) out << "auto chose " << choice_line(c) << "\n";
    if (!r.lost_ranks.empty()) {  // on_worker_loss continue: computed without them
        out << "lost rank(s):";
        for (int q : r.lost_ranks) out << " " << q;
        out << " (presumed dead; their tasks were computed by the others)\n";
    }
    if (!r.failed_tasks.empty()) {  // on_task_error skip: each failed task with its error, the first 20
        out << r.failed_tasks.size() << " task(s) failed and were skipped (outputs left value-initialised):\n";
        for (std::size_t k = 0; k < r.failed_tasks.size() && k < 20; ++k)
            out << "  task " << r.failed_tasks[k].task << " on rank " << r.failed_tasks[k].rank << ": "
                << r.failed_tasks[k].error << "\n";
        if (r.failed_tasks.size() > 20) out << "  ... and " << r.failed_tasks.size() - 20 << " more (all of them in the JSON report)\n";
    }
    const task_count attempts =
        std::accumulate(r.steal_attempts_per_rank.begin(), r.steal_attempts_per_rank.end(), task_count{0});
    if (attempts > 0)  // work stealing: the thieves' reads, the swaps that took tasks, and the swaps that lost
        out << "stealing: " << std::accumulate(r.steals_per_rank.begin(), r.steals_per_rank.end(), task_count{0})
            << " steals in " << attempts << " attempts, "
            << std::accumulate(r.lost_swaps_per_rank.begin(), r.lost_swaps_per_rank.end(), task_count{0})
            << " lost swaps\n";
    if (!r.master_ranks.empty())  // hierarchical: the supermaster's load (each master's is on its line)
        out << "hierarchical: rank 0 the supermaster answered " << r.farmer_requests << " requests from "
            << r.master_ranks.size() << " masters\n";
    if (r.calibration) {
        const int last = r.first_worker_rank + static_cast<int>(r.calibration->times.size()) - 1;
        out << "calibration, ranks " << r.first_worker_rank;
        if (last > r.first_worker_rank) out << "-" << last;
        out << ": " << calibration_line(*r.calibration) << "\n";
    }
    for (int q = 0; q < r.ranks; ++q) {
        const auto i = static_cast<std::size_t>(q);
        if (r.tasks_per_rank[i] == 0 && q == 0 && !r.sequential) continue;
        out << "  rank " << q << ": ";
        const auto master = std::find(r.master_ranks.begin(), r.master_ranks.end(), q);
        if (master != r.master_ranks.end()) {
            const auto g = static_cast<std::size_t>(master - r.master_ranks.begin());
            out << "master, answered " << (g < r.master_requests.size() ? r.master_requests[g] : 0) << " requests";
            if (r.tasks_per_rank[i] == 0) {  // (it computes only with farmer_computes)
                out << "\n";
                continue;
            }
            out << ", and ";
        }
        out << r.tasks_per_rank[i] << " tasks in " << r.chunks_per_rank[i].size()
            << " chunks, busy " << std::setprecision(3) << r.busy_per_rank[i] << " s";
        if (attempts > 0)
            out << ", " << r.steals_per_rank[i] << " steals in " << r.steal_attempts_per_rank[i] << " attempts, "
                << r.lost_swaps_per_rank[i] << " lost swaps";
        out << "\n";
    }
}

/// Each rank's chunk sizes as a JSON list of numbers (the report keeps them as runs: chunk_sizes).
std::vector<std::vector<task_count>> chunk_lists(const std::vector<chunk_sizes>& per_rank) {
    std::vector<std::vector<task_count>> lists;
    for (const chunk_sizes& sizes : per_rank) lists.push_back(sizes.to_vector());
    return lists;
}

nlohmann::json report_json(const farm_report& r) {
    nlohmann::json j{{"technique", r.technique},       {"ranks", r.ranks},
                     {"workers", r.workers},           {"sequential", r.sequential},
                     {"tasks", r.tasks},               {"makespan", r.makespan},
                     {"percent_imbalance", r.percent_imbalance}, {"cov", r.cov},
                     {"tasks_per_rank", r.tasks_per_rank},       {"chunks_per_rank", chunk_lists(r.chunks_per_rank)},
                     {"busy_per_rank", r.busy_per_rank},         {"finish_per_rank", r.finish_per_rank},
                     {"farmer_cpu_seconds", r.farmer_cpu_seconds}, {"round_trip", r.round_trip},
                     {"reclaims", r.reclaims},         {"reclaimed_tasks", r.reclaimed_tasks},
                     {"reruns", r.reruns},             {"rerun_tasks", r.rerun_tasks},
                     {"journaled", r.journaled},       {"learned", r.learned},
                     {"farmer_requests", r.farmer_requests},
                     {"task_errors", r.task_errors},   {"retried_tasks", r.retried_tasks}};
    nlohmann::json failed = nlohmann::json::array();
    for (const failed_task& f : r.failed_tasks) failed.push_back({{"task", f.task}, {"rank", f.rank}, {"error", f.error}});
    j["failed_tasks"] = failed;
    j["lost_ranks"] = r.lost_ranks;
    if (std::any_of(r.steal_attempts_per_rank.begin(), r.steal_attempts_per_rank.end(), [](task_count n) { return n > 0; }))
        j["stealing"] = {{"steal_attempts_per_rank", r.steal_attempts_per_rank},
                         {"steals_per_rank", r.steals_per_rank},
                         {"lost_swaps_per_rank", r.lost_swaps_per_rank}};
    if (!r.master_ranks.empty()) {
        j["masters"] = {{"ranks", r.master_ranks}, {"requests", r.master_requests}, {"merged", r.master_merged},
                        {"chunks", chunk_lists(r.master_chunks)}};
        if (!r.master_trace.empty()) {
            auto& t = j["masters"]["trace"] = nlohmann::json::array();
            for (const chunk_trace& c : r.master_trace) t.push_back(nlohmann::json::parse(chunk_json(c)));
        }
    }
    if (r.k) j["k"] = *r.k;
    if (!r.choices.empty()) j["choices"] = choices_json(r.choices);
    if (r.calibration) {
        nlohmann::json c = calibration_json(*r.calibration);
        std::vector<int> ranks;  // entry w of times and fitness is worker w's
        for (std::size_t w = 0; w < r.calibration->times.size(); ++w)
            ranks.push_back(r.first_worker_rank + static_cast<int>(w));
        c["ranks"] = ranks;
        j["calibration"] = c;
    }
    return j;
}

}  // namespace pfarm::tools
