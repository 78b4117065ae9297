// pfarm simulator: the platform model that the flat, hierarchical and decentralised event loops share (simulator.cpp documents
// it: validation, load changes, the fluid bound, events, simulated monitors, a worker's state). Internal header.
#pragma once

#include "pfarm/emulation.hpp"
#include "pfarm/error.hpp"
#include "pfarm/simulator.hpp"
#include "pfarm/worker_session.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
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

// --- load changes --------------------------------------------------------------------------------------

/// One worker's load changes, sorted by time (stable: of two changes at the same time the later one given wins).
struct worker_load {
    std::vector<std::pair<double, double>> changes;  ///< (time, factor)
    std::size_t cursor = 0;                          ///< changes[0, cursor) have time <= the last start asked
};

/// The end of `base` seconds of work started at `start` (start is non-decreasing per worker).
inline double compute_end(worker_load& load, double start, double base) {
    const auto& ch = load.changes;
    std::size_t i = load.cursor;
    while (i < ch.size() && ch[i].first <= start) ++i;
    load.cursor = i;
    double factor = i == 0 ? 1.0 : ch[i - 1].second;
    double t = start, left = base;
    for (;;) {
        const double next = i < ch.size() ? ch[i].first : std::numeric_limits<double>::infinity();
        const double capacity = (next - t) / factor;  // base seconds doable before the next change
        if (left <= capacity) return t + left * factor;
        left -= capacity;
        t = next;
        factor = ch[i].second;
        ++i;
    }
}

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

/// prefix[i]: the cost of tasks [0, i), so a chunk's base work is one subtraction.
inline std::vector<double> prefix_sums(const std::vector<double>& costs) {
    std::vector<double> prefix(costs.size() + 1, 0.0);
    for (std::size_t i = 0; i < costs.size(); ++i) prefix[i + 1] = prefix[i] + costs[i];
    return prefix;
}

/// Each worker's load changes, sorted by time.
inline std::vector<worker_load> worker_loads(const platform& pl) {
    std::vector<worker_load> loads(pl.task_times.size());
    for (const auto& c : pl.load_changes) loads[static_cast<std::size_t>(c.worker)].changes.emplace_back(c.time, c.factor);
    for (auto& l : loads)
        std::stable_sort(l.changes.begin(), l.changes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return loads;
}

/// A result before the run: its total work, the fluid bound and one entry per worker.
inline result result_for(const platform& pl, double total_work) {
    result out;
    out.total_work = total_work;
    out.lower_bound = fluid_bound(pl, total_work);
    out.workers.resize(pl.task_times.size());
    return out;
}

// --- the event loop --------------------------------------------------------------------------------------

/// An event: a message reaching the farmer (a request or final results, a victim's answer to a reclaim), a
/// message reaching a worker (the farmer's reply, a reclaim), a worker's chunk ending, or the farmer's turn to
/// serve a message of its inbox. Ties in time go by worker index (the farmer's turn last), then by the order
/// the events were made (so two messages between the same pair stay in order).
struct event {
    enum class kind : std::uint8_t { to_farmer, reply, reclaim, chunk_end, boundary, farmer_turn };
    double time = 0.0;
    int worker = 0;
    std::uint64_t sequence = 0;
    kind what = kind::to_farmer;
    bool answer_first = false;     ///< to_farmer: a victim's answer (served before the requests waiting)
    std::size_t mail = 0;          ///< to_farmer: the request_message, in the mail pool
    reply_message reply;           ///< reply, reclaim
    std::uint64_t generation = 0;  ///< chunk_end, boundary: the chunk it belongs to (a shrunk chunk re-schedules)
    static event at(double time, int worker, kind what) {
        event e;
        e.time = time;
        e.worker = worker;
        e.what = what;
        return e;
    }
    bool operator>(const event& o) const {
        if (time != o.time) return time > o.time;
        if (worker != o.worker) return worker > o.worker;
        return sequence > o.sequence;
    }
};

/// The load factor of a worker at time t (1 before its first change).
inline double factor_at(const worker_load& load, double t) {
    const auto it = std::upper_bound(load.changes.begin(), load.changes.end(), t,
                                     [](double v, const auto& c) { return v < c.first; });
    return it == load.changes.begin() ? 1.0 : std::prev(it)->second;
}

/// What a worker's monitors would read at time t (the model is at the top of this file).
inline resource_sample simulated_sample(const platform& pl, const worker_load& load, std::size_t worker, double t) {
    const double factor = factor_at(load, t);
    resource_sample s;
    s.availability = std::min(1.0, 1.0 / factor);
    s.run_queue = std::max(1.0, factor);
    s.latency = 2.0 * pl.latency;
    s.benchmark = 1.0 / pl.task_times[worker];
    s.cores = 1;
    if (!pl.monitors.empty()) {
        const resource_sample& scripted = pl.monitors[worker];
        if (scripted.availability) s.availability = *scripted.availability * *s.availability;
        if (scripted.latency) s.latency = scripted.latency;
        if (scripted.benchmark) s.benchmark = scripted.benchmark;
    }
    return s;
}

/// A worker as the simulator sees it: its session (the protocol) and the timing of the chunk it computes.
struct worker_state {
    explicit worker_state(const worker_session_options& o) : session(o) {}
    worker_session session;
    double start = 0.0, end = 0.0;
    std::uint64_t generation = 0;  ///< bumped when its chunk changes or shrinks: a stale chunk_end is ignored
};

/// The hierarchical farm's event loop (simulator_hierarchical.cpp); simulate() dispatches to it.
result simulate_hierarchical(const platform& platform, const workload& workload, const std::string& technique,
                             const technique_options& options, const run_options& run);

/// The decentralised farm's event loop (simulator_decentralised.cpp); simulate() dispatches to it.
result simulate_decentralised(const platform& platform, const workload& workload, const std::string& technique,
                              const technique_options& options, const run_options& run);

}  // namespace pfarm::sim::model
