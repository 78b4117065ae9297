// pfarm-sim: runs a technique through the farmer state machine (or, for the decentralised farm, the claim sessions;
// for the work-stealing farm, the simulator's model of owners and thieves)
// in simulated time (pfarm/simulator.hpp has the model) and prints the makespan against the fluid lower bound, the imbalance, the calibration (F, CV, k)
// and every worker's chunks.
#include "calibration_report.hpp"
#include "options.hpp"

#include "pfarm/emulation.hpp"
#include "pfarm/error.hpp"
#include "pfarm/simulator.hpp"
#include "pfarm/trace.hpp"

#include <nlohmann/json.hpp>

#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

namespace {

/// The simulated run as a trace in the one schema (pfarm/trace.hpp): the farmer session's records, in simulated
/// time; the rank column holds the 0-based worker.
void write_trace(const std::string& path, const std::string& technique, const pfarm::sim::workload& wl,
                 const pfarm::sim::result& r) {
    pfarm::trace_summary s;
    s.source = pfarm::trace_source::simulator;
    s.technique = technique, s.workers = static_cast<int>(r.workers.size()), s.tasks = wl.tasks;
    s.makespan = r.makespan, s.percent_imbalance = r.percent_imbalance, s.cov = r.cov, s.k = r.k;
    pfarm::write_trace(path, s, r.trace, "--trace");
}

nlohmann::json to_json(const std::string& technique, const pfarm::sim::workload& wl, const pfarm::sim::result& r,
                       bool stealing) {
    nlohmann::json workers = nlohmann::json::array();
    for (const auto& w : r.workers)
        workers.push_back({{"chunks", w.chunks.to_vector()}, {"tasks", w.tasks}, {"finish", w.finish}});
    nlohmann::json out{{"technique", technique},
                       {"tasks", wl.tasks},
                       {"shape", wl.costs.empty() ? pfarm::sim::to_string(wl.shape) : std::string("measured")},
                       {"makespan", r.makespan},
                       {"lower_bound", r.lower_bound},
                       {"ratio", r.makespan / r.lower_bound},
                       {"total_work", r.total_work},
                       {"percent_imbalance", r.percent_imbalance},
                       {"cov", r.cov},
                       {"chunks", r.chunks},
                       {"calibration_end", r.calibration_end},
                       {"reclaims", r.reclaims},
                       {"reclaimed_tasks", r.reclaimed_tasks},
                       {"farmer_messages", r.farmer_messages},
                       {"farmer_requests", r.farmer_requests},
                       {"workers", workers}};
    if (wl.shape == pfarm::sim::workload_shape::random) out["seed"] = wl.seed;
    if (!r.master_requests.empty()) {
        out["master_messages"] = r.master_messages;
        out["master_requests"] = r.master_requests;
        out["master_merged"] = r.master_merged;
        out["master_chunks"] = r.master_chunks;
    }
    if (r.host_atomics > 0) {  // decentralised, stealing
        out["host_atomics"] = r.host_atomics;
        out["lost_swaps"] = r.lost_swaps;
    }
    if (stealing) {
        out["steal_attempts"] = r.steal_attempts;
        out["steals"] = r.steals;
        out["termination_messages"] = r.termination_messages;
    }
    if (r.k) out["k"] = *r.k;
    if (!r.choices.empty()) out["choices"] = pfarm::tools::choices_json(r.choices);
    if (!r.calibration_note.empty()) out["calibration_note"] = r.calibration_note;
    if (r.calibration) out["calibration"] = pfarm::tools::calibration_json(*r.calibration);
    return out;
}

void print_summary(const std::string& technique, const pfarm::sim::workload& wl, const pfarm::sim::result& r,
                   bool stealing) {
    std::cout << std::setprecision(6);
    std::cout << "technique        " << technique << "\n"
              << "tasks            " << wl.tasks << " (" << (wl.costs.empty() ? pfarm::sim::to_string(wl.shape) : std::string("measured costs")) << "), " << r.workers.size()
              << " workers\n"
              << "makespan         " << r.makespan << "\n"
              << "lower bound      " << r.lower_bound << "\n"
              << "ratio            " << r.makespan / r.lower_bound << "\n"
              << "imbalance        " << r.percent_imbalance << " %\n"
              << "COV              " << r.cov << "\n"
              << "chunks           " << r.chunks << "\n"
              << "k                ";
    if (r.k)
        std::cout << *r.k << "\n";
    else
        std::cout << "-\n";
    std::cout << "calibration end  " << r.calibration_end << "\n";
    if (r.reclaims > 0 || r.reclaimed_tasks > 0)
        std::cout << "reclaims         " << r.reclaims << " (" << r.reclaimed_tasks << " tasks moved)\n";
    if (!r.master_requests.empty()) {
        pfarm::task_count up = 0, merged = 0;
        for (std::size_t m = 0; m < r.master_requests.size(); ++m) up += r.master_requests[m], merged += r.master_merged[m];
        std::cout << "masters          " << r.master_requests.size() << " (served " << r.master_messages
                  << " messages; sent " << up << " requests up, " << merged << " with results)\n"
                  << "supermaster      " << r.farmer_messages << " messages, " << r.farmer_requests << " requests\n";
    }
    if (stealing)
        std::cout << "steals           " << r.steals << " of " << r.steal_attempts << " attempts (" << r.host_atomics
                  << " atomics, " << r.lost_swaps << " compare-and-swaps lost, " << r.termination_messages
                  << " termination messages)\n";
    else if (r.host_atomics > 0)
        std::cout << "window host      " << r.host_atomics << " atomics (" << r.lost_swaps << " compare-and-swaps lost)\n";
    if (r.calibration) std::cout << "calibration      " << pfarm::tools::calibration_line(*r.calibration) << "\n";
    for (const pfarm::technique_choice& c : r.choices) std::cout << "auto             " << pfarm::tools::choice_line(c) << "\n";
    std::cout << "\n"
              << "worker    chunks     tasks      finish\n";
    for (std::size_t j = 0; j < r.workers.size(); ++j) {
        const auto& w = r.workers[j];
        std::cout << std::setw(6) << j << std::setw(10) << w.chunks.size() << std::setw(10) << w.tasks << std::setw(12)
                  << w.finish << "\n";
    }
}

/// pfarm-sim's flags for what the simulator names by its C++ names (pfarm/simulator.hpp); the technique's options
/// are in the shared table (options.hpp).
constexpr pfarm::tools::flag_name sim_flags[] = {
    {"tasks", "--tasks"},
    {"task_times", "--task-times"},
    {"platform.overhead", "--overhead"},
    {"latency", "--latency"},
    {"shape", "--shape"},
    {"costs", "--costs"},
    {"monitors.availability", "--availability"},
    {"monitors.latency", "--latency-readings"},
    {"monitors.benchmark", "--benchmark"},
    {"farmer", "--farmer"},
    {"masters", "--masters"},
    {"master_technique", "--master-technique"},
    {"master_overhead", "--master-overhead"},
    {"supermaster_overhead", "--supermaster-overhead"},
    {"master_latency", "--master-latency"},
    {"atomic_overhead", "--atomic-overhead"},
    {"atomic_latency", "--atomic-latency"},
    {"victims", "--victims"},
    {"prefetch", "--prefetch"},
    {"farmer_computes", "--farmer-computes"},
    {"calibration_span", "--calibration-span"},
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"pfarm-sim: runs a technique through the farmer state machine in simulated time"};
    pfarm::tools::technique_args args;
    pfarm::sim::workload wl;
    std::string task_times, platform_file, shape = "uniform", trace;
    std::optional<double> overhead, latency;
    std::vector<std::string> load_changes;
    bool json = false, reclaim = false, prefetch = false, farmer_computes = false;
    std::string farmer = "flat", master_technique, victims = "random";
    std::uint64_t victim_seed = 1;
    int masters = 0;
    double calibration_span = 0.0;
    std::optional<double> master_overhead, supermaster_overhead, master_latency, atomic_overhead, atomic_latency;
    app.add_option("--tasks,-S", wl.tasks, "tasks S >= 1 (required unless --costs gives them)");
    auto* times_option = app.add_option("--task-times", task_times, "per-worker time per unit task t1,...,tP");
    auto* platform_option =
        app.add_option("--platform", platform_file,
                       "JSON platform {\"task_times\": [...], \"overhead\": x, \"latency\": y, \"setup\": s, \"load_changes\": "
                       "[{\"worker\": w, \"time\": t, \"factor\": f}], \"master_overhead\": x, "
                       "\"supermaster_overhead\": x, \"master_latency\": y, \"atomic_overhead\": x, \"atomic_latency\": y}");
    times_option->excludes(platform_option);
    app.add_option("--overhead", overhead, "farmer service time per request (default 0; overrides the platform file)");
    app.add_option("--latency", latency, "one-way message latency (default 0; overrides the platform file)");
    app.add_option("--load-change", load_changes,
                   "WORKER:TIME:FACTOR: from TIME on, WORKER's task time is multiplied by FACTOR (repeatable; "
                   "added to the platform file's)")
        ->take_all();
    app.add_option("--shape", shape, "task cost profile: uniform, increasing, decreasing, random, mandelbrot")
        ->capture_default_str();
    app.add_option("--seed", wl.seed, "seed of the random shape")->capture_default_str();
    std::string costs_file;
    app.add_option("--costs", costs_file,
                   "replay measured per-task costs instead of a shape: one number per line, or a trace (CSV or JSON) of "
                   "an ss run (--tasks may then be left out)");
    app.add_flag("--reclaim", reclaim,
                 "work take-back: once every task is handed out, an idle worker takes unstarted tasks back from the "
                 "worker expected to finish last");
    app.add_flag("--prefetch", prefetch,
                 "a worker asks for its next chunk when it starts one, hiding the request's cost (the farm's --prefetch)");
    app.add_flag("--farmer-computes", farmer_computes,
                 "flat: worker 0 is the farmer's own (the farm's --farmer-computes): no latency to it, and the farmer "
                 "serves the others only between two of its tasks");
    app.add_option("--calibration-span", calibration_span,
                   "flat: seconds each worker's calibration adds up to, on growing chunks (the farm's --calibration-span, "
                   "0.2 s by default under a CPU quota; docs/calibration.md \"Calibration span\"); default 0: one "
                   "calibration task per worker");
    app.add_option("--farmer", farmer,
                   "flat (one farmer), hierarchical (a supermaster, --masters K masters, workers; docs/hierarchical.md), "
                   "decentralised (no farmer: workers claim chunks with atomics on a window host; docs/skeleton.md), "
                   "or stealing (the MPI --farmer stealing: every rank owns an equal range, idle ranks steal half of another's; "
                   "docs/hierarchical.md)")
        ->capture_default_str();
    app.add_option("--victims", victims,
                   "stealing: random (a victim drawn uniformly from the other ranks) or tree (Tree Scheduling: always the "
                   "parent in a binary tree of the ranks)")
        ->capture_default_str();
    app.add_option("--victim-seed", victim_seed, "stealing: seed of the random victims")->capture_default_str();
    app.add_option("--masters", masters, "hierarchical: K masters over contiguous groups of workers, 1 <= K <= workers");
    app.add_option("--master-technique", master_technique,
                   "hierarchical: the supermaster's technique over the masters (default: the workers' technique when "
                   "it is weighted, dgss/dfss/dtss/dfiss/dtfss, else fss)");
    app.add_option("--master-overhead", master_overhead,
                   "hierarchical: a master's service time per answer (default --overhead; overrides the platform file)");
    app.add_option("--supermaster-overhead", supermaster_overhead,
                   "hierarchical: the supermaster's service time per answer (default --overhead; overrides the platform file)");
    app.add_option("--master-latency", master_latency,
                   "hierarchical: one-way latency between a master and the supermaster (default --latency; overrides the "
                   "platform file)");
    const auto shown = [](double v) {
        std::ostringstream text;
        text << v;
        return text.str();
    };
    app.add_option("--atomic-overhead", atomic_overhead,
                   "decentralised: the window host's service time per atomic, one at a time (default " +
                       shown(pfarm::sim::default_atomic_overhead) + ", measured; overrides the platform file)");
    app.add_option("--atomic-latency", atomic_latency,
                   "decentralised: one-way latency between a worker and the window host (default " +
                       shown(pfarm::sim::default_atomic_latency) + ", measured; overrides the platform file)");
    app.add_flag("--json", json, "print a JSON object instead of the summary");
    app.add_option("--trace", trace,
                   "write a trace of every chunk, FILE.csv or FILE.json, in the farm's schema (docs/traces.md)");
    pfarm::tools::add_technique_options(app, args, false);
    std::string availability, latency_readings, benchmark;
    app.add_option("--availability", availability,
                   "scripted availability a1,...,aP in (0,1]: each worker's CPU share (stretches its task time)");
    app.add_option("--latency-readings", latency_readings, "scripted latency readings l1,...,lP (seconds)");
    app.add_option("--benchmark", benchmark, "scripted benchmark readings bm1,...,bmP");
    app.footer(pfarm::tools::technique_list());
    return pfarm::tools::run_tool("pfarm-sim", app, argc, argv, [&] {
        pfarm::sim::platform pl;
        if (platform_option->count() > 0)
            pl = pfarm::sim::load_platform(platform_file, "--platform");
        else if (times_option->count() > 0)
            pl.task_times = pfarm::parse_numbers(task_times, "--task-times");
        else
            throw pfarm::invalid_argument("--task-times", "is required (or --platform FILE)");
        if (overhead) pl.overhead = *overhead;
        if (latency) pl.latency = *latency;
        if (master_overhead) pl.master_overhead = *master_overhead;
        if (supermaster_overhead) pl.supermaster_overhead = *supermaster_overhead;
        if (master_latency) pl.master_latency = *master_latency;
        if (atomic_overhead) pl.atomic_overhead = *atomic_overhead;
        if (atomic_latency) pl.atomic_latency = *atomic_latency;
        for (const auto& text : load_changes) pl.load_changes.push_back(pfarm::parse_load_change(text, "--load-change"));
        if (!availability.empty() || !latency_readings.empty() || !benchmark.empty())
            pl.monitors = pfarm::tools::samples_from(static_cast<int>(pl.task_times.size()), availability,
                                                     latency_readings, benchmark, "--latency-readings");
        wl.shape = pfarm::sim::parse_shape(shape);
        if (!costs_file.empty()) {
            wl.costs = pfarm::sim::load_costs(costs_file, "--costs");
            if (wl.tasks == 0) wl.tasks = static_cast<pfarm::task_count>(wl.costs.size());
        }
        pfarm::sim::run_options run;
        run.keep_trace = !trace.empty();
        run.reclaim = reclaim;
        run.prefetch = prefetch;
        run.farmer_computes = farmer_computes;
        run.calibration_span = calibration_span;
        run.farmer = pfarm::sim::parse_farmer(farmer);
        run.masters = masters;
        run.master_technique = master_technique;
        run.victims = victims;
        run.victim_seed = victim_seed;
        const auto r = pfarm::sim::simulate(pl, wl, args.technique, args.options, run);
        if (!trace.empty()) write_trace(trace, args.technique, wl, r);
        const bool stealing = run.farmer == pfarm::sim::farmer_kind::stealing;
        if (json)
            std::cout << to_json(args.technique, wl, r, stealing).dump() << "\n";
        else
            print_summary(args.technique, wl, r, stealing);
        return 0;
    }, sim_flags);
}
