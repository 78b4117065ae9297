// pfarm simulator: the farm's protocol (the core's farmer_session and one worker_session per worker, the same
// objects the MPI engine runs) driven by a discrete-event model of a master-worker platform. The sessions decide
// everything a farm does (who is parked and asked again, prefetch, later, reclaim, stop, what travels); this file
// only gives messages their latency and the farmer its service time, and computes chunks. The model, decided once
// and documented here:
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
//
// Compute time
//   - Task i costs c_i (the workload shape, mean 1). A chunk [a, a+n) is base = (C[a+n] - C[a]) * task_time_w
//     seconds of work (C: prefix sums, O(1) per chunk). A load change (w, T, f) multiplies w's task time by f
//     from time T on (replacing the previous factor), so the work progresses at rate 1/f; the compute time
//     is integrated piecewise over w's load changes (a per-worker cursor keeps it amortised O(1)). The
//     seconds passed to farmer.complete() are the elapsed compute time, load changes included.
//
// Metrics (DESIGN.md "Metrics"): the farmer session's, as under MPI
//   - makespan: the time the last result reaches the farmer (with prefetch, results that waited at the worker
//     for the reply asked ahead arrive later than their chunk's end + latency).
//   - lower_bound: the fluid bound, the T at which the work all workers could do in [0, T] at speed
//     1 / (task_time_w * factor_w(t)) equals the total work (total_work / sum 1/task_time_w without load
//     changes). Overhead and latency are not in it.
//   - finish t_j: the end of worker j's last chunk (calibration task included), 0 when it got none;
//     percent imbalance = (max - mean) / max * p/(p-1) * 100 (0 when p = 1); COV = population stddev / mean.
//   - calibration_end: the simulated time at which the farmer served the result that passed the barrier
//     (0 when the technique needs no calibration). chunks counts calibration tasks too.
//
// Workload shapes (every one has mean cost exactly 1, so total work = tasks)
//   - uniform: c_i = 1.   increasing: c_i = 2 (i + 0.5) / S.   decreasing: c_i = 2 (S - i - 0.5) / S.
//   - random: c_i uniform in [0.1, 1.9] from std::mt19937_64(seed) (53-bit draws: 0.1 + 1.8 (x >> 11) 2^-53,
//     portable across standard libraries), rescaled so that the mean is exactly 1.
//   - mandelbrot: the escape iteration counts of the columns of [-2, 1] x [-1.5, 1.5] on a 1024-column x
//     256-row grid, maxiter 256, every pixel counting at least one iteration; task i takes the profile linearly
//     interpolated at its centre (i + 0.5) / S of the width, rescaled to mean 1. The profile is computed once.
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

#include "pfarm/detail/numbers.hpp"
#include "simulator_model.hpp"

#include "pfarm/error.hpp"
#include "pfarm/farmer_session.hpp"
#include "pfarm/worker_session.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/sample.hpp"
#include "pfarm/trace.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <queue>
#include <random>
#include <sstream>

namespace pfarm::sim {

using namespace model;

namespace {

constexpr const char* shape_names[] = {"uniform", "increasing", "decreasing", "random", "mandelbrot"};

// --- workload ------------------------------------------------------------------------------------------

constexpr int mandelbrot_columns = 1024;
constexpr int mandelbrot_rows = 256;  // even: the profile sums the upper half and doubles it (symmetry)
constexpr int mandelbrot_maxiter = 256;

const std::vector<double>& mandelbrot_profile() {
    static const std::vector<double> profile = [] {
        std::vector<double> columns(mandelbrot_columns, 0.0);
        for (int c = 0; c < mandelbrot_columns; ++c) {
            const double x0 = -2.0 + (c + 0.5) * 3.0 / mandelbrot_columns;
            double sum = 0.0;
            for (int r = 0; r < mandelbrot_rows / 2; ++r) {
                const double y0 = (r + 0.5) * 3.0 / mandelbrot_rows;
                double x = 0.0, y = 0.0;
                int n = 0;
                while (n < mandelbrot_maxiter && x * x + y * y <= 4.0) {
                    const double xt = x * x - y * y + x0;
                    y = 2.0 * x * y + y0;
                    x = xt;
                    ++n;
                }
                sum += n;
            }
            columns[static_cast<std::size_t>(c)] = 2.0 * sum;
        }
        return columns;
    }();
    return profile;
}

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

platform load_platform(const std::string& path, const std::string& argument) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))  // it opens, but reading it throws std::ios_base::failure
        throw invalid_argument(argument, "'" + path + "' is a directory; expected a platform file (JSON)");
    std::ifstream in(path);
    if (!in) throw invalid_argument(argument, "cannot open '" + path + "'");
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw invalid_argument(argument, "'" + path + "' is not valid JSON: " + e.what());
    }
    const auto bad = [&](const std::string& field, const std::string& why) {
        return invalid_argument(argument, "'" + path + "': field '" + field + "' " + why);
    };
    if (!j.is_object()) throw invalid_argument(argument, "'" + path + "': expected a JSON object");
    for (const auto& [key, value] : j.items()) {
        (void)value;
        if (key != "task_times" && key != "overhead" && key != "latency" && key != "load_changes" && key != "monitors" &&
            key != "master_overhead" && key != "supermaster_overhead" && key != "master_latency" &&
            key != "atomic_overhead" && key != "atomic_latency")
            throw bad(key, "is unknown; expected task_times, overhead, latency, load_changes, monitors, master_overhead, "
                           "supermaster_overhead, master_latency, atomic_overhead, atomic_latency");
    }
    const auto number = [&](const nlohmann::json& v, const std::string& field) {
        if (!v.is_number()) throw bad(field, "is " + v.dump() + "; expected a number");
        return v.get<double>();
    };
    platform pl;
    if (!j.contains("task_times")) throw bad("task_times", "is missing; expected a list of per-task times");
    const auto& times = j["task_times"];
    if (!times.is_array() || times.empty())
        throw bad("task_times", "is " + times.dump() + "; expected a non-empty list of numbers > 0");
    for (std::size_t i = 0; i < times.size(); ++i) {
        const std::string field = "task_times[" + std::to_string(i) + "]";
        const double v = number(times[i], field);
        if (!(v > 0.0) || !std::isfinite(v)) throw bad(field, "is " + show(v) + "; expected a finite value > 0");
        pl.task_times.push_back(v);
    }
    for (const char* field : {"overhead", "latency"}) {
        if (!j.contains(field)) continue;
        const double v = number(j[field], field);
        if (!(v >= 0.0) || !std::isfinite(v)) throw bad(field, "is " + show(v) + "; expected a finite value >= 0");
        (std::string(field) == "overhead" ? pl.overhead : pl.latency) = v;
    }
    for (const char* field : {"master_overhead", "supermaster_overhead", "master_latency"}) {  // hierarchical farm
        if (!j.contains(field)) continue;
        const double v = number(j[field], field);
        if (!(v >= 0.0) || !std::isfinite(v)) throw bad(field, "is " + show(v) + "; expected a finite value >= 0");
        const std::string name = field;
        (name == "master_overhead" ? pl.master_overhead : name == "supermaster_overhead" ? pl.supermaster_overhead
                                                                                          : pl.master_latency) = v;
    }
    for (const char* field : {"atomic_overhead", "atomic_latency"}) {  // decentralised farm
        if (!j.contains(field)) continue;
        const double v = number(j[field], field);
        if (!(v >= 0.0) || !std::isfinite(v)) throw bad(field, "is " + show(v) + "; expected a finite value >= 0");
        (std::string(field) == "atomic_overhead" ? pl.atomic_overhead : pl.atomic_latency) = v;
    }
    if (j.contains("load_changes")) {
        const auto& list = j["load_changes"];
        if (!list.is_array()) throw bad("load_changes", "is " + list.dump() + "; expected a list of objects");
        for (std::size_t i = 0; i < list.size(); ++i) {
            const std::string at = "load_changes[" + std::to_string(i) + "]";
            const auto& item = list[i];
            if (!item.is_object())
                throw bad(at, "is " + item.dump() + "; expected {\"worker\": W, \"time\": T, \"factor\": F}");
            for (const auto& [key, value] : item.items()) {
                (void)value;
                if (key != "worker" && key != "time" && key != "factor")
                    throw bad(at + "." + key, "is unknown; expected worker, time, factor");
            }
            for (const char* key : {"worker", "time", "factor"})
                if (!item.contains(key)) throw bad(at + "." + key, "is missing");
            load_change c;
            const auto& w = item["worker"];
            if (!w.is_number_integer() || w.get<long long>() < 0 ||
                w.get<long long>() >= static_cast<long long>(pl.task_times.size()))
                throw bad(at + ".worker", "is " + w.dump() + "; expected 0.." + std::to_string(pl.task_times.size() - 1));
            c.worker = w.get<int>();
            c.time = number(item["time"], at + ".time");
            c.factor = number(item["factor"], at + ".factor");
            if (!(c.time >= 0.0) || !std::isfinite(c.time))
                throw bad(at + ".time", "is " + show(c.time) + "; expected a finite value >= 0");
            if (!(c.factor > 0.0) || !std::isfinite(c.factor))
                throw bad(at + ".factor", "is " + show(c.factor) + "; expected a finite value > 0");
            pl.load_changes.push_back(c);
        }
    }
    if (j.contains("monitors")) {
        const auto& list = j["monitors"];
        if (!list.is_array() || list.size() != pl.task_times.size())
            throw bad("monitors", "is " + list.dump() + "; expected a list of one object per worker");
        for (std::size_t i = 0; i < list.size(); ++i) {
            const std::string at = "monitors[" + std::to_string(i) + "]";
            if (!list[i].is_object()) throw bad(at, "is " + list[i].dump() + "; expected an object");
            resource_sample s;
            for (const auto& [key, value] : list[i].items()) {
                if (key == "availability") s.availability = number(value, at + ".availability");
                else if (key == "latency") s.latency = number(value, at + ".latency");
                else if (key == "benchmark") s.benchmark = number(value, at + ".benchmark");
                else throw bad(at + "." + key, "is unknown; expected availability, latency, benchmark");
            }
            // The ranges of validate(), here too, so that a bad reading is reported with its file and field.
            if (s.availability && !(*s.availability > 0.0 && *s.availability <= 1.0))
                throw bad(at + ".availability", "is " + show(*s.availability) + "; expected a value in (0, 1]");
            if (s.latency && !(std::isfinite(*s.latency) && *s.latency >= 0.0))
                throw bad(at + ".latency", "is " + show(*s.latency) + "; expected a finite value >= 0");
            if (s.benchmark && !(std::isfinite(*s.benchmark) && *s.benchmark > 0.0))
                throw bad(at + ".benchmark", "is " + show(*s.benchmark) + "; expected a finite value > 0");
            pl.monitors.push_back(s);
        }
    }
    return pl;
}

std::vector<double> load_costs(const std::string& path, const std::string& argument) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw invalid_argument(argument, "'" + path + "' is a directory; expected a file of costs or a trace");
    std::ifstream in(path);
    if (!in) throw invalid_argument(argument, "cannot read '" + path + "'");
    // A trace (pfarm/trace.hpp) when its first line that is neither blank nor a comment is JSON or a CSV header.
    std::string line;
    std::vector<double> plain;
    std::size_t number = 0;
    bool trace = false;
    while (std::getline(in, line)) {
        ++number;
        const auto text = detail::trim(line);
        if (text.empty() || text.front() == '#') continue;
        const auto first_field = text.substr(0, text.find(','));
        if (plain.empty() && (text.front() == '{' || first_field == "rank" || first_field == "worker")) {
            trace = true;
            break;
        }
        const auto where = path + ":" + std::to_string(number) + ": ";
        const auto v = detail::parse_number(text);
        if (v.problem) throw invalid_argument(argument, where + "'" + std::string(text) + "' " + v.problem);
        if (!(v.value > 0.0)) throw invalid_argument(argument, where + "cost " + std::string(text) + " is not > 0");
        plain.push_back(v.value);
    }
    if (trace) {
        const trace_file t = read_trace(path, argument);
        std::vector<std::pair<task_count, double>> indexed;  // (first task, time)
        indexed.reserve(t.chunks.size());
        for (std::size_t i = 0; i < t.chunks.size(); ++i) {
            const auto& c = t.chunks[i];
            if (c.count != 1)
                throw invalid_argument(argument, path + ": chunk " + std::to_string(i) + " holds " +
                                                      std::to_string(c.count) +
                                                      " tasks: record costs with technique ss (chunks of one task)");
            const double seconds = c.finished - c.started;
            if (!std::isfinite(seconds))  // both ends finite, their difference beyond double (-1e308 to 1e308)
                throw invalid_argument(argument, path + ": chunk " + std::to_string(i) + " lasts " + show(seconds) +
                                                      " (finished - started); expected a finite time");
            indexed.emplace_back(c.first, seconds > 0.0 ? seconds : 1e-9);
        }
        std::sort(indexed.begin(), indexed.end());
        for (std::size_t i = 0; i < indexed.size(); ++i) {
            if (indexed[i].first != static_cast<task_count>(i))
                throw invalid_argument(argument, path + ": task " + std::to_string(i) + " is missing or recorded twice");
            plain.push_back(indexed[i].second);
        }
    }
    if (plain.empty()) throw invalid_argument(argument, path + ": no costs");
    return plain;
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
        const auto& profile = mandelbrot_profile();
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

farmer_kind parse_farmer(const std::string& name) {
    if (name == "flat") return farmer_kind::flat;
    if (name == "hierarchical") return farmer_kind::hierarchical;
    if (name == "decentralised") return farmer_kind::decentralised;
    throw unknown_name("farmer", "unknown name '" + name + "'; expected one of: flat, hierarchical, decentralised");
}

std::string to_string(farmer_kind kind) {
    switch (kind) {
    case farmer_kind::flat: return "flat";
    case farmer_kind::hierarchical: return "hierarchical";
    case farmer_kind::decentralised: return "decentralised";
    }
    throw invalid_argument("farmer", "is " + std::to_string(static_cast<int>(kind)) + "; not a farmer");
}

result simulate(const platform& given, const workload& wl, const std::string& technique,
                const technique_options& options, const run_options& run) {
    if (run.farmer == farmer_kind::hierarchical) return simulate_hierarchical(given, wl, technique, options, run);
    if (run.masters != 0)  // contradictory: only the hierarchical farmer has masters
        throw invalid_argument("masters", "is " + std::to_string(run.masters) + "; only farmer = hierarchical has masters");
    if (!run.master_technique.empty())
        throw invalid_argument("master_technique", "is '" + run.master_technique + "'; only farmer = hierarchical has masters");
    if (run.farmer == farmer_kind::decentralised) return simulate_decentralised(given, wl, technique, options, run);
    const platform pl = effective_platform(given);
    const std::vector<double> costs = task_costs(wl);
    const int p = static_cast<int>(pl.task_times.size());
    const auto up = static_cast<std::size_t>(p);
    farmer_session farm(wl.tasks, p, make_technique(technique, options, p),
                        {.min_chunk = options.min_chunk, .prefetch = run.prefetch, .reclaim = run.reclaim,
                         .request_cost = pl.overhead + 2.0 * pl.latency, .keep_records = run.keep_trace, .stragglers = {}, .clock = {}});
    const technique_needs& needs = farm.needs();

    const std::vector<double> prefix = prefix_sums(costs);
    std::vector<worker_load> loads = worker_loads(pl);
    result out = result_for(pl, prefix.back());
    std::vector<worker_state> state;
    state.reserve(up);
    for (std::size_t j = 0; j < up; ++j)
        state.emplace_back(worker_session_options{.prefetch = run.prefetch,
                                                  .prefetch_lead = 2.0 * (2.0 * pl.latency + pl.overhead),
                                                  .readings_each = !needs.with_every_request.empty(),
                                                  .readings_calibration = !needs.with_calibration.empty()});

    std::vector<event> storage;
    storage.reserve(3 * up);
    std::priority_queue<event, std::vector<event>, std::greater<>> events(std::greater<>{}, std::move(storage));
    std::uint64_t sequence = 0;
    const auto push = [&](event e) {
        e.sequence = sequence++;
        events.push(e);
    };
    // Messages to the farmer wait in a pool (an event carries its index), so that events stay small.
    std::vector<request_message> mail;
    std::vector<std::size_t> free_mail;

    // The end of task k (0-based) of worker j's chunk, load changes included.
    const auto task_end = [&](std::size_t j, task_count k) {
        const auto& s = state[j];
        const auto first = static_cast<std::size_t>(s.session.current().first);
        const double base = (prefix[first + static_cast<std::size_t>(k) + 1] - prefix[first]) * pl.task_times[j];
        return loads[j].changes.empty() ? s.start + base : compute_end(loads[j], s.start, base);
    };
    // Worker j's chunk now ends at `end` (it started, or shrank): its chunk_end event.
    const auto set_end = [&](std::size_t j, double end) {
        auto& s = state[j];
        s.end = end;
        auto e = event::at(end, static_cast<int>(j), event::kind::chunk_end);
        e.generation = ++s.generation;
        push(e);
    };
    // Prefetch: worker j asks ahead before task ask_at() of its chunk (worker_session.hpp): an event at the end
    // of the task before it.
    const auto plan_boundary = [&](std::size_t j) {
        const auto& s = state[j];
        const task_count at = s.session.ask_at();
        if (at < 0) return;
        auto e = event::at(task_end(j, at - s.session.current().first - 1), static_cast<int>(j), event::kind::boundary);
        e.generation = s.generation;
        push(e);
    };
    // Worker j's session acts at time t: its messages leave for the farmer, a chunk starts computing.
    const auto perform = [&](std::size_t j, worker_session::actions actions, double t) {
        for (const worker_action& a : actions) {
            if (a.what == worker_action::kind::compute) {
                state[j].start = t;
                set_end(j, task_end(j, a.work.count - 1));
                plan_boundary(j);
                continue;
            }
            std::size_t slot = mail.size();
            if (free_mail.empty()) mail.push_back(a.message);
            else slot = free_mail.back(), free_mail.pop_back(), mail[slot] = a.message;
            if (a.readings) {  // the readings it must carry, taken as it sends
                mail[slot].has_sample = true;
                mail[slot].sample = simulated_sample(pl, loads[j], j, t);
            }
            auto e = event::at(t + pl.latency, static_cast<int>(j), event::kind::to_farmer);
            e.mail = slot;
            e.answer_first = a.message.what == request_message::kind::released;
            push(e);
        }
    };
    for (std::size_t j = 0; j < up; ++j) perform(j, state[j].session.start(), 0.0);  // every worker asks at t = 0

    // A reclaim reaches victim v at time t. It answers between two tasks of the chunk it computes (the first
    // boundary at or after t), its seconds per task measured on the chunk so far; computing its last task, it
    // reads the reclaim when that ends (after its chunk_end, made earlier); computing nothing, at once.
    const auto victim_answers = [&](std::size_t j, double t, const reply_message& asked) {
        auto& s = state[j];
        if (!s.session.computing()) {
            perform(j, s.session.on_reclaim(asked, 0, 0.0), t);
            return;
        }
        const chunk c = s.session.current();
        task_count lo = 0, hi = c.count - 1;  // boundaries 0 .. count-2; hi = none left
        while (lo < hi) {
            const task_count mid = lo + (hi - lo) / 2;
            if (task_end(j, mid) >= t) hi = mid;
            else lo = mid + 1;
        }
        if (lo == c.count - 1) {  // in its last task
            auto again = event::at(s.end, static_cast<int>(j), event::kind::reclaim);
            again.reply = asked;
            push(again);
            return;
        }
        const double boundary = task_end(j, lo);
        perform(j, s.session.on_reclaim(asked, c.first + lo + 1, (boundary - s.start) / static_cast<double>(lo + 1)), boundary);
        if (s.session.current().count != c.count) {
            set_end(j, task_end(j, s.session.current().count - 1));
            plan_boundary(j);  // the request ahead, planned again for the shorter chunk
        }
    };

    // Serves message m from time `now`, when the farmer turns to it; each answer (a reply, or a worker parked
    // by its own request) takes `overhead`, one after the other. Returns when the farmer is free again.
    const auto serve = [&](const event& m, double now) {
        ++out.farmer_messages;
        if (mail[m.mail].what == request_message::kind::ask) ++out.farmer_requests;
        for (const farmer_action& a : farm.on_message(m.worker, mail[m.mail], now, m.time)) {
            if (a.what == farmer_action::kind::deliver) continue;
            now += pl.overhead;
            if (a.what == farmer_action::kind::park) continue;
            auto e = event::at(now + pl.latency, a.worker,
                               a.reply.what == reply_message::kind::reclaim ? event::kind::reclaim : event::kind::reply);
            e.reply = a.reply;
            push(e);
        }
        free_mail.push_back(m.mail);
        return now;
    };
    // The farmer's inbox: the messages that have reached it and wait for its service, victims' answers apart
    // (served first). A farmer_turn event (after every other event at its time, so that messages arriving
    // together are all in) serves one of them.
    std::priority_queue<event, std::vector<event>, std::greater<>> inbox, answers;
    bool turn_pending = false;  // a farmer_turn event is in the queue
    double farmer_free = 0.0;
    const auto farmer_turn = [&](double t) {
        push(event::at(t, std::numeric_limits<int>::max(), event::kind::farmer_turn));
        turn_pending = true;
    };
    while (!events.empty()) {
        const event e = events.top();
        events.pop();
        const auto j = static_cast<std::size_t>(e.worker);
        switch (e.what) {
        case event::kind::farmer_turn: {
            turn_pending = false;
            auto& from = answers.empty() ? inbox : answers;
            const event m = from.top();
            from.pop();
            farmer_free = serve(m, e.time);
            if (!inbox.empty() || !answers.empty()) farmer_turn(farmer_free);
            break;
        }
        case event::kind::to_farmer:  // it waits in the inbox for its turn
            (e.answer_first ? answers : inbox).push(e);
            if (!turn_pending) farmer_turn(std::max(e.time, farmer_free));
            break;
        case event::kind::reply:
            perform(j, state[j].session.on_reply(e.reply), e.time);
            break;
        case event::kind::chunk_end: {
            auto& s = state[j];
            if (e.generation != s.generation) break;  // its chunk shrank: a later chunk_end replaces this one
            perform(j, s.session.on_chunk_done(s.end - s.start, s.start, s.end), e.time);
            break;
        }
        case event::kind::reclaim:
            victim_answers(j, e.time, e.reply);
            break;
        case event::kind::boundary: {
            auto& s = state[j];
            if (e.generation != s.generation || s.session.ask_at() < 0) break;  // its chunk changed, or it asked
            perform(j, s.session.on_boundary(s.session.ask_at()), e.time);
            break;
        }
        }
    }
    const farmer& f = farm.decisions();
    out.reclaims = f.reclaims();
    out.reclaimed_tasks = f.reclaimed_tasks();
    if (!f.done() || !farm.over())
        throw internal_error("simulator: no request left with " + std::to_string(f.tasks() - f.completed_tasks()) +
                             " tasks not completed (technique '" + technique + "')");

    // Metrics and records: the farmer session's.
    const bool calibrated = needs.calibration != calibration_mode::none;
    for (int w = 0; w < p; ++w) {
        auto& r = out.workers[static_cast<std::size_t>(w)];
        const auto& sizes = farm.chunks_of(w);
        r.chunks = sizes.drop_front(calibrated && !sizes.empty() ? 1 : 0);
        r.tasks = farm.tasks_of(w);
        r.finish = farm.finish_of(w);
        out.chunks += static_cast<task_count>(sizes.size());
    }
    out.trace = farm.records();
    out.makespan = farm.last_result();
    out.calibration_end = farm.calibration_end();
    out.percent_imbalance = farm.percent_imbalance();
    out.cov = farm.cov();
    out.k = f.policy().installment_factor();
    if (f.calibration() != nullptr) out.calibration = *f.calibration();
    if (const auto* c = f.calibration()) out.calibration_note = c->note;
    return out;
}

}  // namespace pfarm::sim
