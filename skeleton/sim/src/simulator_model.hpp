// pfarm simulator: what the flat, hierarchical, decentralised and work-stealing event loops start from and end with (simulator.cpp
// documents the model): the platform validated, the fluid bound, the result before the run, the report merged from
// the sessions' parts into it, the loops' entry points.
// The simulated worker is in simulated_worker.hpp, the events and servers in simulator_events.hpp. Internal header.
#pragma once

#include "pfarm/emulation.hpp"
#include "pfarm/error.hpp"
#include "pfarm/report_merge.hpp"
#include "pfarm/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace pfarm::sim::model {

inline std::string show(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
}


// --- validation ----------------------------------------------------------------------------------------

inline void check_time_per_task(double v, std::size_t index, const std::string& argument) {
    if (!std::isfinite(v) || v <= 0.0)
        throw invalid_argument(argument, "value " + std::to_string(index + 1) + " is " + show(v) +
                                             "; expected a finite value > 0");
}

inline void check_non_negative(double v, const std::string& argument) {
    if (!std::isfinite(v) || v < 0.0)
        throw invalid_argument(argument, "is " + show(v) + "; expected a finite value >= 0");
}

inline void validate(const platform& pl) {
    if (pl.task_times.empty()) throw invalid_argument("task_times", "is empty; expected at least one worker");
    for (std::size_t i = 0; i < pl.task_times.size(); ++i) check_time_per_task(pl.task_times[i], i, "task_times");
    check_non_negative(pl.overhead, "platform.overhead");  // technique_options has an overhead too
    check_non_negative(pl.latency, "latency");
    check_non_negative(pl.setup, "setup");
    if (pl.master_overhead) check_non_negative(*pl.master_overhead, "master_overhead");
    if (pl.supermaster_overhead) check_non_negative(*pl.supermaster_overhead, "supermaster_overhead");
    if (pl.master_latency) check_non_negative(*pl.master_latency, "master_latency");
    if (pl.atomic_overhead) check_non_negative(*pl.atomic_overhead, "atomic_overhead");
    if (pl.atomic_latency) check_non_negative(*pl.atomic_latency, "atomic_latency");
    for (const auto& c : pl.load_changes) check_load_change(c, static_cast<int>(pl.task_times.size()), "load_changes");
    if (!pl.monitors.empty() && pl.monitors.size() != pl.task_times.size())
        throw invalid_argument("monitors", "has " + std::to_string(pl.monitors.size()) + " entries; expected one per worker (" +
                                               std::to_string(pl.task_times.size()) + ")");
    for (std::size_t i = 0; i < pl.monitors.size(); ++i) {  // a reading is monitors.<field>, beside pl.latency
        const auto& m = pl.monitors[i];
        const auto bad = [i](const char* field, double v, const char* range) {
            return invalid_argument(std::string("monitors.") + field,
                                    "of worker " + std::to_string(i) + " is " + show(v) + "; expected " + range);
        };
        if (m.availability && !(*m.availability > 0.0 && *m.availability <= 1.0))
            throw bad("availability", *m.availability, "a value in (0, 1]");
        if (m.latency && !(std::isfinite(*m.latency) && *m.latency >= 0.0))
            throw bad("latency", *m.latency, "a finite value >= 0");
        if (m.benchmark && !(std::isfinite(*m.benchmark) && *m.benchmark > 0.0))
            throw bad("benchmark", *m.benchmark, "a finite value > 0");
    }
}

// --- the fluid bound --------------------------------------------------------------------------------------

/// The fluid bound with load changes: sweep the changes of all workers in time order.
inline double fluid_bound(const platform& pl, double work) {
    double rate = 0.0;  // work per second, all workers together
    std::vector<double> speed(pl.task_times.size());
    for (std::size_t j = 0; j < speed.size(); ++j) rate += speed[j] = 1.0 / pl.task_times[j];
    if (pl.load_changes.empty()) return work / rate;
    std::vector<load_change> changes = pl.load_changes;
    std::stable_sort(changes.begin(), changes.end(),
                     [](const load_change& a, const load_change& b) { return a.time < b.time; });
    double t = 0.0, done = 0.0;
    for (const auto& c : changes) {
        if (done + rate * (c.time - t) >= work) break;
        done += rate * (c.time - t);
        t = c.time;
        const auto j = static_cast<std::size_t>(c.worker);
        const double s = 1.0 / (pl.task_times[j] * c.factor);
        rate += s - speed[j];
        speed[j] = s;
    }
    return t + (work - done) / rate;
}

// --- what every event loop starts from -----------------------------------------------------------------

/// The platform a simulation runs on: `given` validated, and a scripted availability (the worker's CPU share)
/// stretching that worker's time per task.
inline platform effective_platform(const platform& given) {
    validate(given);
    platform pl = given;
    for (std::size_t j = 0; j < pl.monitors.size(); ++j)
        if (pl.monitors[j].availability) pl.task_times[j] /= *pl.monitors[j].availability;
    return pl;
}

/// A result before the run: its total work, the fluid bound and one entry per worker.
inline result result_for(const platform& pl, double total_work) {
    result out;
    out.total_work = total_work;
    out.lower_bound = fluid_bound(pl, total_work);
    out.workers.resize(pl.task_times.size());
    return out;
}

/// The run's report, from its sessions' parts (their ranks: worker indices), merged by the core as an MPI farm's
/// (pfarm/report_merge.hpp) with every worker computing, in simulated time: the workers' entries, the chunk total,
/// imbalance, COV, k, the calibration and its note, reclaims and the trace (in `order`) of `out` (simulator.cpp).
void merge_report(result& out, const std::vector<report_part>& parts, trace_order order);

/// The hierarchical farm's event loop (simulator_hierarchical.cpp); simulate() dispatches to it.
result simulate_hierarchical(const platform& platform, const workload& workload, const std::string& technique,
                             const technique_options& options, const run_options& run);

/// The decentralised farm's event loop (simulator_decentralised.cpp); simulate() dispatches to it.
result simulate_decentralised(const platform& platform, const workload& workload, const std::string& technique,
                              const technique_options& options, const run_options& run);

/// The work-stealing farm's event loop (simulator_stealing.cpp); simulate() dispatches to it.
result simulate_stealing(const platform& platform, const workload& workload, const std::string& technique,
                         const technique_options& options, const run_options& run);

/// run_options::victims is a victim rule ("random", "tree"; invalid_argument naming "victims" otherwise).
void check_victims(const run_options& run);

}  // namespace pfarm::sim::model
