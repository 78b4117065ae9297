// pfarm simulator: the simulated worker, one model for the flat, hierarchical and decentralised event loops: its
// speed under load changes, its chunk's compute time, what its monitors read, and (flat and hierarchical) its
// worker_session: what it sends and when, its prefetch lead, its answer to a reclaim. Internal header.
#pragma once

#include "simulator_events.hpp"

#include "pfarm/simulator.hpp"
#include "pfarm/technique.hpp"
#include "pfarm/worker_session.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace pfarm::sim::model {

/// One worker's load changes, sorted by time (stable: of two changes at the same time the later one given wins).
struct worker_load {
    std::vector<std::pair<double, double>> changes;  ///< (time, factor)
    std::size_t cursor = 0;                          ///< changes[0, cursor) have time <= the last start asked
};

/// The end of `base` seconds of work started at `start` (start is non-decreasing per worker).
double compute_end(worker_load& load, double start, double base);

/// The load factor of a worker at time t (1 before its first change).
double factor_at(const worker_load& load, double t);

/// The workers' compute: the task costs (prefix sums, so a chunk's work is one subtraction), each worker's time
/// per task and its load changes.
class worker_compute {
public:
    /// `pl` is the effective platform (effective_platform()); it must outlive this.
    worker_compute(const platform& pl, const std::vector<double>& costs);
    /// The sum of the task costs.
    double total_work() const { return prefix_.back(); }
    /// When worker j, starting tasks [first, first + count) at `start`, ends them, load changes included. Its
    /// starts must not decrease between calls, but for the same start.
    double end(std::size_t j, task_count first, task_count count, double start) {
        const auto lo = static_cast<std::size_t>(first);
        const double base = (prefix_[lo + static_cast<std::size_t>(count)] - prefix_[lo]) * pl_.task_times[j];
        return loads_[j].changes.empty() ? start + base : compute_end(loads_[j], start, base);
    }
    /// What worker j's monitors read at time t (simulator.cpp, "Simulated monitors").
    resource_sample sample(std::size_t j, double t) const;

private:
    const platform& pl_;
    std::vector<double> prefix_;
    std::vector<worker_load> loads_;
};

/// Where a worker's messages go: the server that serves it (event::server) and its index there (event::from).
struct worker_route {
    int server = 0;
    int from = 0;
    bool in_process = false;  ///< the server's own worker (run_options::farmer_computes): no latency, no prefetch
};

/// The workers of a farm driven by their worker_sessions (flat and hierarchical): each computes a chunk at once
/// when its reply reaches it, asks ahead at its boundary (prefetch), answers a reclaim between two tasks, and
/// sends what its session says, `latency` one way to its server.
class simulated_workers {
public:
    /// `server_cost`: the service time of the workers' server per answer (the prefetch lead is two round trips
    /// of a request: its latency both ways and that service). `pl` and `events` must outlive this.
    simulated_workers(const platform& pl, const std::vector<double>& costs, const technique_needs& needs,
                      bool prefetch, double server_cost, std::vector<worker_route> routes, event_queue& events);

    double total_work() const { return compute_.total_work(); }
    /// Worker j's session starts at t: its first request leaves.
    void start(std::size_t j, double t) { perform(j, state_[j].session.start(), t); }
    /// A worker's event (to_worker, reclaim, chunk_end, boundary) acts; false for the others.
    bool handle(const event& e);
    /// The end of the task worker j computes at t (t itself when it computes nothing then, or a task ends at t).
    double task_end_at(std::size_t j, double t);

private:
    struct worker_state {
        explicit worker_state(const worker_session_options& o) : session(o) {}
        worker_session session;
        double start = 0.0, end = 0.0;
        std::uint64_t generation = 0;  ///< bumped when its chunk changes or shrinks: a stale chunk_end is ignored
    };

    double task_end(std::size_t j, task_count k);
    void set_end(std::size_t j, double end);
    void plan_boundary(std::size_t j);
    void perform(std::size_t j, worker_session::actions actions, double t);
    void victim_answers(std::size_t j, double t, const reply_message& asked);

    const platform& pl_;
    worker_compute compute_;
    std::vector<worker_route> routes_;
    event_queue& events_;
    std::vector<worker_state> state_;
};

}  // namespace pfarm::sim::model
