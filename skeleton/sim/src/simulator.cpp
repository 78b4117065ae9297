// pfarm simulator: the farm's protocol (the core's farmer_session and one worker_session per worker, the same
// objects the MPI engine runs) driven by a discrete-event model of a master-worker platform. The sessions decide
// everything a farm does (who is parked and asked again, prefetch, later, reclaim, stop, what travels); the model
// only gives messages their latency and the farmer its service time, and computes chunks. This file runs the flat
// farm (simulate()) and makes the workload's task costs; the simulated worker is simulated_worker.cpp, the events
// and the servers' service order simulator_events.hpp, the platform and cost files platform.cpp. The model, decided
// once for the three farms and documented here:
//
// Messages and the farmer
//   - Every worker sends its first request at t = 0. A message (request or reply) takes `latency` one way.
//   - The farmer is one server: it serves the messages that have reached it one at a time, in arrival order,
//     ties in arrival time broken by increasing worker index; a victim's answer to a reclaim goes before the
//     requests waiting, as in the MPI farmer. Serving a message = farmer_session::on_message() at the time the
//     service starts (its arrival dates its results); each answer in its actions (a reply sent, or the sender
//     parked) takes `overhead` of farmer time, one after the other, and each reply leaves when its answer's
//     service ends. A parked worker asked again and parked again costs nothing (the MPI farmer sends nothing);
//     storing results and final results cost nothing.
//   - A worker computes a chunk at once when its reply reaches it; its session says what it sends and when
//     (results with the next request; with prefetch a request ahead when it starts a chunk, not its
//     calibration task; final results after a stop; after a `later` it asks only with nothing in hand). A reply
//     that has not arrived when its chunk ends keeps it idle until it does.
//   - reclaim (run_options::reclaim, farmer.hpp "Reclaim"): a reclaim reaches the victim `latency` after its
//     service ends. The victim answers at the end of the task it is computing (task ends integrated over its
//     load changes; at once when it computes nothing), with worker_session::on_reclaim() and its seconds per
//     task measured on the chunk so far; in its last task it reads the reclaim when that ends, after its
//     chunk's end (so in its prefetched chunk, if one has come, else with nothing to give). A chunk that gives
//     tasks back ends earlier (and with it the next request).
//   - Events at the same time go by worker index, then by the order they were made, so two messages between
//     the same pair arrive in the order sent.
//   - A farmer that computes (run_options::farmer_computes, the MPI farm's --farmer-computes): worker 0 is its
//     own, in process: its messages and the replies to it take no latency, and it asks nothing ahead. The
//     farmer computes its tasks and serves between two of them: a message that reaches it idle while worker 0
//     computes is served from the end of that task on, with every message that comes while it serves (the
//     MPI farmer drains its queue between two of its tasks); the time spent serving is not added to worker 0's.
//
// Compute time
//   - Task i costs c_i (the workload shape, mean 1). A chunk [a, a+n) is base = (C[a+n] - C[a]) * task_time_w
//     seconds of work (C: prefix sums, O(1) per chunk). A load change (w, T, f) multiplies w's task time by f
//     from time T on (replacing the previous factor), so the work progresses at rate 1/f; the compute time
//     is integrated piecewise over w's load changes (a per-worker cursor keeps it amortised O(1)). The
//     seconds passed to farmer.complete() are the elapsed compute time, load changes included.
//
// Metrics (makespan, imbalance, COV: docs/architecture.md "Conventions every driver shares"): the report the core
// merges from the sessions' parts (pfarm/report_merge.hpp, merge_report()), as under MPI
//   - makespan: the time the last result reaches the farmer (with prefetch, results that waited at the worker
//     for the reply asked ahead arrive later than their chunk's end + latency).
//   - lower_bound: the fluid bound, the T at which the work all workers could do in [0, T] at speed
//     1 / (task_time_w * factor_w(t)) equals the total work (total_work / sum 1/task_time_w without load
//     changes). Overhead and latency are not in it.
//   - finish t_j: the end of worker j's last chunk (calibration task included), 0 when it got none;
//     percent imbalance = (max - mean) / max * p/(p-1) * 100 (0 when p = 1); COV = population stddev / mean.
//   - calibration_end: the simulated time at which the farmer served the result that passed the barrier
//     (0 when the technique needs no calibration). A worker's chunks are every chunk it was handed, its calibration
//     chunk included (the one chunk count of every mode and driver); `chunks` is their total.
//
// Workload shapes (every one has mean cost exactly 1, so total work = tasks)
//   - uniform: c_i = 1.   increasing: c_i = 2 (i + 0.5) / S.   decreasing: c_i = 2 (S - i - 0.5) / S.
//   - random: c_i uniform in [0.1, 1.9] from std::mt19937_64(seed) (53-bit draws: 0.1 + 1.8 (x >> 11) 2^-53,
//     portable across standard libraries), rescaled so that the mean is exactly 1.
//   - mandelbrot: the escape iteration counts of the columns of [-2, 1] x [-1.5, 1.5] on a 1024-column x
//     256-row grid, maxiter 256, every pixel counting at least one iteration (mandelbrot_columns.hpp, a table);
//     task i takes the profile linearly interpolated at its centre (i + 0.5) / S of the width, rescaled to mean 1.
//
// Simulated monitors: a request carries readings when the technique needs them (technique::needs(): a
// calibration result for statistical calibration, dealdyn-lr/-mv and multi --calibration; every request of the
// weighted techniques, for the run queue), read when the request is sent: availability = min(1, 1/factor),
// run_queue = max(1, factor), latency = 2 x latency (the round trip), benchmark = 1 / task_time, cores = 1
// (the MPI engine reads the same model under emulation).
// A scripted platform (platform::monitors) replaces these: a scripted availability a_j is worker j's CPU share,
// so simulate() divides its task time by a_j before anything else, and it reads a_j x min(1, 1/factor);
// scripted latency and benchmark readings are returned as they are.
// Otherwise the technique sees the platform only through measured times: options.times is passed through
// unchanged.
#include "pfarm/simulator.hpp"

#include "mandelbrot_columns.hpp"
#include "simulated_worker.hpp"
#include "simulator_events.hpp"
#include "simulator_model.hpp"

#include "pfarm/error.hpp"
#include "pfarm/farmer_session.hpp"
#include "pfarm/worker_session.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/report_merge.hpp"
#include "pfarm/sample.hpp"
#include "pfarm/trace.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace pfarm::sim {

using namespace model;

namespace {

constexpr const char* shape_names[] = {"uniform", "increasing", "decreasing", "random", "mandelbrot"};

// --- workload ------------------------------------------------------------------------------------------

void normalise_mean(std::vector<double>& costs) {
    double sum = 0.0;
    for (double c : costs) sum += c;
    const double scale = static_cast<double>(costs.size()) / sum;
    for (double& c : costs) c *= scale;
}

}  // namespace

workload_shape parse_shape(const std::string& name) {
    for (std::size_t i = 0; i < std::size(shape_names); ++i)
        if (name == shape_names[i]) return static_cast<workload_shape>(i);
    throw unknown_name("shape",
                       "unknown name '" + name + "'; expected one of: uniform, increasing, decreasing, random, mandelbrot");
}

std::string to_string(workload_shape shape) {
    const auto i = static_cast<std::size_t>(shape);
    if (i >= std::size(shape_names)) throw invalid_argument("shape", "is " + std::to_string(i) + "; not a shape");
    return shape_names[i];
}

std::vector<double> task_costs(const workload& w) {
    if (!w.costs.empty()) {
        if (static_cast<task_count>(w.costs.size()) != w.tasks)
            throw invalid_argument("costs", "has " + std::to_string(w.costs.size()) + " costs for " +
                                                  std::to_string(w.tasks) + " tasks");
        return w.costs;
    }
    check_task_count(w.tasks, "tasks");
    const auto n = static_cast<std::size_t>(w.tasks);
    const double s = static_cast<double>(w.tasks);
    std::vector<double> costs;
    try {  // one cost a task, 8 bytes each: a count no memory holds is bad input, not a crash
        costs.assign(n, 1.0);
    } catch (const std::exception&) {
        throw invalid_argument("tasks", "is " + std::to_string(w.tasks) + ": the simulator keeps a cost per task (" +
                                            std::to_string(n / (1024 * 1024) * 8) + " MiB), more than this machine gives");
    }
    switch (w.shape) {
    case workload_shape::uniform:
        break;
    case workload_shape::increasing:
        for (std::size_t i = 0; i < n; ++i) costs[i] = 2.0 * (static_cast<double>(i) + 0.5) / s;
        break;
    case workload_shape::decreasing:
        for (std::size_t i = 0; i < n; ++i) costs[i] = 2.0 * (s - static_cast<double>(i) - 0.5) / s;
        break;
    case workload_shape::random: {
        std::mt19937_64 gen(w.seed);
        for (auto& c : costs) c = 0.1 + 1.8 * static_cast<double>(gen() >> 11) * 0x1.0p-53;
        normalise_mean(costs);
        break;
    }
    case workload_shape::mandelbrot: {
        const auto& profile = mandelbrot_column_iterations;
        const double last = static_cast<double>(profile.size() - 1);
        for (std::size_t i = 0; i < n; ++i) {
            const double x = std::clamp((static_cast<double>(i) + 0.5) / s * static_cast<double>(profile.size()) - 0.5,
                                        0.0, last);
            const auto lo = static_cast<std::size_t>(x);
            const std::size_t hi = std::min(lo + 1, profile.size() - 1);
            const double frac = x - static_cast<double>(lo);
            costs[i] = profile[lo] * (1.0 - frac) + profile[hi] * frac;
        }
        normalise_mean(costs);
        break;
    }
    default:
        throw invalid_argument("shape", "is " + std::to_string(static_cast<int>(w.shape)) + "; not a shape");
    }
    return costs;
}

namespace model {

void merge_report(result& out, const std::vector<report_part>& parts, trace_order order) {
    const int p = static_cast<int>(out.workers.size());
    report_entries r;
    size_entries(r, p);
    for (const report_part& part : parts) add_part(r, part);
    std::vector<int> computing(out.workers.size());
    for (int j = 0; j < p; ++j) computing[static_cast<std::size_t>(j)] = j;
    finish_report(r, computing, order, report_clock::simulated);
    for (std::size_t j = 0; j < out.workers.size(); ++j)
        out.workers[j] = {std::move(r.chunks_per_rank[j]), r.tasks_per_rank[j], r.finish_per_rank[j]};
    out.chunks = chunk_total(r);
    out.percent_imbalance = r.percent_imbalance;
    out.cov = r.cov;
    out.k = r.k;
    out.choices = std::move(r.choices);
    out.calibration = std::move(r.calibration);
    out.calibration_note = out.calibration ? out.calibration->note : std::string();
    out.reclaims = r.reclaims;
    out.reclaimed_tasks = r.reclaimed_tasks;
    out.trace = std::move(r.trace);
}

}  // namespace model

farmer_kind parse_farmer(const std::string& name) {
    if (name == "flat") return farmer_kind::flat;
    if (name == "hierarchical") return farmer_kind::hierarchical;
    if (name == "decentralised") return farmer_kind::decentralised;
    if (name == "stealing") return farmer_kind::stealing;
    throw unknown_name("farmer", "unknown name '" + name + "'; expected one of: flat, hierarchical, decentralised, stealing");
}

std::string to_string(farmer_kind kind) {
    switch (kind) {
    case farmer_kind::flat: return "flat";
    case farmer_kind::hierarchical: return "hierarchical";
    case farmer_kind::decentralised: return "decentralised";
    case farmer_kind::stealing: return "stealing";
    }
    throw invalid_argument("farmer", "is " + std::to_string(static_cast<int>(kind)) + "; not a farmer");
}

result simulate(const platform& given, const workload& wl, const std::string& technique,
                const technique_options& options, const run_options& run) {
    check_victims(run);
    if (run.farmer != farmer_kind::stealing && run.victims != "random")  // contradictory: only thieves choose victims
        throw invalid_argument("victims", "is '" + run.victims + "'; only farmer = stealing has victims");
    if (run.farmer_computes && run.farmer != farmer_kind::flat)
        throw invalid_argument("farmer_computes", "is set; the simulator models a farmer that computes in the flat farm only");
    if (run.calibration_span != 0.0 && run.farmer != farmer_kind::flat)
        throw invalid_argument("calibration_span", "is set; the simulator models a calibration span in the flat farm only");
    if (given.setup != 0.0 && run.farmer != farmer_kind::flat)
        throw invalid_argument("setup", "is set; the simulator models a farm's setup time in the flat farm only");
    if (run.profile_bins != cost_profile::default_bins && run.farmer != farmer_kind::flat)
        throw invalid_argument("profile_bins", "is " + std::to_string(run.profile_bins) +
                                                   "; the simulator sets the cost profile's bins in the flat farm only");
    if (run.farmer == farmer_kind::hierarchical) return simulate_hierarchical(given, wl, technique, options, run);
    if (run.masters != 0)  // contradictory: only the hierarchical farmer has masters
        throw invalid_argument("masters", "is " + std::to_string(run.masters) + "; only farmer = hierarchical has masters");
    if (!run.master_technique.empty())
        throw invalid_argument("master_technique", "is '" + run.master_technique + "'; only farmer = hierarchical has masters");
    if (run.farmer == farmer_kind::decentralised) return simulate_decentralised(given, wl, technique, options, run);
    if (run.farmer == farmer_kind::stealing) return simulate_stealing(given, wl, technique, options, run);
    const platform pl = effective_platform(given);
    const std::vector<double> costs = task_costs(wl);
    const int p = static_cast<int>(pl.task_times.size());
    const auto up = static_cast<std::size_t>(p);
    const candidate_predictor predictor = make_predictor(pl.overhead, pl.latency, run);
    farmer_session farm(wl.tasks, p, make_technique(technique, options, p),
                        {.min_chunk = options.min_chunk, .prefetch = run.prefetch, .reclaim = run.reclaim,
                         .request_cost = pl.overhead + 2.0 * pl.latency,
                         .profile_bins = run.profile_bins, .keep_records = run.keep_trace,
                         .calibration_span = run.calibration_span, .stragglers = {}, .task_errors = {}, .clock = {}, .worker_loss = {},
                         .own_worker = run.farmer_computes ? 0 : -1,
                         .predictor = &predictor});
    const technique_needs& needs = farm.needs();

    event_queue events;
    // Every worker is served by the farmer (server 0), known to it by its index.
    std::vector<worker_route> routes(up);
    for (std::size_t j = 0; j < up; ++j) routes[j] = {0, static_cast<int>(j), run.farmer_computes && j == 0};
    simulated_workers workers(pl, costs, needs, run.prefetch, pl.overhead, std::move(routes), events);
    servers farmer_server(1);  // the farmer, one server
    if (run.farmer_computes)   // it serves between two tasks of its own worker (worker 0)
        farmer_server.set_gate(0, [&workers](double t) { return workers.task_end_at(0, t); });
    const auto latency_to = [&](int worker) { return run.farmer_computes && worker == 0 ? 0.0 : pl.latency; };
    result out = result_for(pl, workers.total_work());
    for (std::size_t j = 0; j < up; ++j) workers.start(j, pl.setup);  // every worker asks once the setup is over

    // Serves message m from time `now`, when the farmer turns to it; each answer (a reply, or a worker parked
    // by its own request) takes `overhead`, one after the other. Returns when the farmer is free again.
    const auto serve = [&](const event& m, double now) {
        const request_message& message = events.mail(m.mail);
        ++out.farmer_messages;
        if (message.what == request_message::kind::ask) ++out.farmer_requests;
        for (const farmer_action& a : farm.on_message(m.from, message, now, m.time)) {
            if (a.what == farmer_action::kind::deliver) continue;
            now += pl.overhead;
            if (a.what == farmer_action::kind::park) continue;
            auto e = event::at(now + latency_to(a.worker), a.worker,
                               a.reply.what == reply_message::kind::reclaim ? event::kind::reclaim : event::kind::to_worker);
            e.reply = a.reply;
            events.push(e);
        }
        events.release(m.mail);
        return now;
    };
    while (!events.empty()) {
        const event e = events.pop();
        if (e.what == event::kind::to_server) farmer_server.arrive(e, events);
        else if (e.what == event::kind::turn) farmer_server.turn(e, events, serve);
        else workers.handle(e);
    }
    const farmer& f = farm.decisions();
    if (!f.done() || !farm.over())
        throw internal_error("simulator: no request left with " + std::to_string(f.tasks() - f.completed_tasks()) +
                             " tasks not completed (technique '" + technique + "')");

    // Its report: the farmer session's part, merged.
    std::vector<int> ranks(up);
    for (int w = 0; w < p; ++w) ranks[static_cast<std::size_t>(w)] = w;
    merge_report(out, {part_of(farm, ranks)}, trace_order::sent);
    out.makespan = farm.last_result();
    out.calibration_end = farm.calibration_end();
    return out;
}

}  // namespace pfarm::sim
