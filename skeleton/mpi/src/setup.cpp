// pfarm MPI engine: what every rank agrees on before the farm (the run's shape, emulation, monitors, clock
// offsets, the readings to take) and the outcome every rank learns after it.
#include "engine.hpp"

#include "messages.hpp"

#include "pfarm/benchmark_monitor.hpp"
#include "pfarm/cgroup_monitor.hpp"
#include "pfarm/latency.hpp"
#include "pfarm/monitor_registry.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/simulator.hpp"
#include "pfarm/testing.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <sstream>
#include <thread>

namespace pfarm::detail {

double emulation::load(int rank, double t) const {
    double change = 1.0, when = -1.0;
    for (const auto& c : changes)
        if (c.worker == rank && c.time <= t && c.time >= when) change = c.factor, when = c.time;
    return change;
}

double emulation::factor(int rank, double t) const {
    const double f = static_cast<std::size_t>(rank) < slowdown.size() ? slowdown[static_cast<std::size_t>(rank)] : 1.0;
    return f * load(rank, t);
}

double emulation::owed(int rank, double start, double compute) const {
    return std::max(0.0, (factor(rank, start) - 1.0) * compute);
}

namespace {

/// A farm without a farmer, as its messages name it.
std::string farm_name(farmer_mode mode) { return mode == farmer_mode::stealing ? "work-stealing" : "decentralised"; }

/// The emulation asked for: farm_options::emulation (pfarm/testing.hpp), else the environment (PFARM_SLOWDOWN,
/// PFARM_LOAD_CHANGES), parsed and checked by the one emulation module (pfarm/emulation.hpp).
emulation emulation_from(const farm_options& options, int ranks) {
    emulation e;
    if (options.emulation) e = {options.emulation->slowdown, options.emulation->load_changes};
    std::string changes_argument = "load_changes";
    if (e.slowdown.empty())
        if (const char* env = std::getenv("PFARM_SLOWDOWN"); env && *env) e.slowdown = parse_numbers(env, "PFARM_SLOWDOWN");
    if (e.changes.empty())
        if (const char* env = std::getenv("PFARM_LOAD_CHANGES"); env && *env) {
            changes_argument = "PFARM_LOAD_CHANGES";
            e.changes = parse_load_changes(env, changes_argument);
        }
    for (double f : e.slowdown)
        if (!(f >= 1.0)) throw invalid_argument("slowdown", "factor " + std::to_string(f) + " is below 1");
    if (e.slowdown.size() > static_cast<std::size_t>(ranks))
        throw invalid_argument("slowdown", "has " + std::to_string(e.slowdown.size()) + " factors for " +
                                               std::to_string(ranks) + " ranks");
    for (const auto& c : e.changes) check_load_change(c, ranks, changes_argument);
    return e;
}

/// The readings the run takes: what the technique needs (technique::needs(), never its name), and the
/// monitors the user asked for: "loadavg" or "cgroup" with every request (either name means the availability
/// monitor, make_availability_monitor()), "benchmark" and "latency" (the MPI probe) once at the start, any
/// other monitor of the registry (monitor_registry.hpp) once at the start.
void choose_monitors(const technique_needs& needs, const farm_options& options, shared_setup& s) {
    std::int32_t bits = 0;
    const auto add = [&bits](reading r, std::int32_t loadavg_bit) {
        switch (r) {
        case reading::availability:
        case reading::run_queue:
        case reading::load1: bits |= loadavg_bit; break;
        case reading::benchmark: bits |= benchmark_once; break;
        case reading::latency: bits |= latency_once; break;
        default: break;
        }
    };
    for (reading r : needs.with_calibration) add(r, loadavg_calibration);
    for (reading r : needs.with_every_request) add(r, loadavg_each);
    for (const auto& name : options.schedule.monitors) {
        if (name == "loadavg" || name == "cgroup") bits |= loadavg_each;
        else if (name == "benchmark") bits |= benchmark_once;
        else if (name == "latency") bits |= latency_once;
        else {
            try {
                (void)make_monitor(name);
            } catch (const error& e) {
                throw invalid_argument("monitors", "unknown monitor '" + name + "'; expected latency or a monitor of the registry (pfarm-probe --help): " + e.what());
            }
            s.extra_monitors.push_back(name);
        }
    }
    s.config.monitors = bits;
    const bool any = bits != 0 || !s.extra_monitors.empty();
    // loadavg_each comes only from these two, so they say whether every request carries readings.
    s.config.readings_each = !needs.with_every_request.empty() || !options.schedule.monitors.empty() ? 1 : 0;
    s.config.readings_calibration = any ? 1 : 0;
}



}  // namespace

void broadcast_string(MPI_Comm comm, std::string& text) {
    int length = static_cast<int>(text.size());
    mpi::check(MPI_Bcast(&length, 1, MPI_INT, 0, comm), "MPI_Bcast");
    text.resize(static_cast<std::size_t>(length));
    if (length > 0) mpi::check(MPI_Bcast(text.data(), length, MPI_CHAR, 0, comm), "MPI_Bcast");
}

/// The run's description, agreed by every rank (rank 0's view wins), or an invalid_argument on every rank.
shared_setup agree(MPI_Comm comm, int rank, int ranks, task_count tasks, const task_kernel& kernel,
                   const farm_options& options, std::unique_ptr<technique>& policy) {
    shared_setup s;
    std::string argument, message;
    std::vector<double> emulation_data;
    // Each rank's node, named by its lowest rank (rank 0 learns them all: the hierarchical farm's masters = 0 puts
    // one master on each), and how many ranks share this rank's node (whether idle ranks wait gently, below).
    MPI_Comm node;
    mpi::check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    int local = 1, lowest = rank;
    MPI_Comm_size(node, &local);
    const int reduced = MPI_Allreduce(&rank, &lowest, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    mpi::check(reduced, "MPI_Allreduce");
    std::vector<int> nodes(static_cast<std::size_t>(rank == 0 ? ranks : 0));
    mpi::check(MPI_Gather(&lowest, 1, MPI_INT, nodes.data(), 1, MPI_INT, 0, comm), "MPI_Gather");
    if (rank == 0) {
        try {
            if (!kernel.bad_argument.empty()) throw invalid_argument(kernel.bad_argument, kernel.bad_message);
            if (tasks < 1) throw invalid_argument("in", "holds " + std::to_string(tasks) + " tasks; expected >= 1");
            check_task_count(tasks, "in");  // at most max_tasks (2^53)
            if (!kernel.run && !kernel.run_variable) throw invalid_argument("worker", "is empty");
            if (options.topology.masters < 0)
                throw invalid_argument("masters", "is " + std::to_string(options.topology.masters) + "; expected >= 0 (0: one per node)");
            if (options.topology.masters > 0 && options.topology.farmer != farmer_mode::hierarchical)  // contradictory options
                throw invalid_argument("masters", "is " + std::to_string(options.topology.masters) +
                                                      "; only farmer = hierarchical has masters");
            if (options.topology.victims != victim_rule::random && options.topology.farmer != farmer_mode::stealing)
                throw invalid_argument("victims", "is '" + to_string(options.topology.victims) +
                                                      "'; only farmer = stealing has victims");
            // the work-stealing farm: every rank owns a range and computes it (there is no farmer to exempt)
            int workers = ranks == 1 || options.topology.farmer == farmer_mode::stealing
                              ? ranks
                              : ranks - (options.topology.farmer_computes ? 0 : 1);
            if (options.topology.farmer == farmer_mode::hierarchical && ranks > 1) {  // one rank runs the tasks in order
                s.group_of = plan_hierarchy(options, ranks, nodes);
                workers = hierarchy_workers(s.group_of, options.topology.farmer_computes);
            }
            policy = make_technique(options.schedule.technique, options.schedule.parameters, workers);
            // Some parameters are checked only when a technique starts (tss's first and last against the tasks and
            // workers): start a copy here, so that such an error is every rank's before the farm, never rank 0's
            // alone while the workers wait for it. (A calibrating technique starts after its calibration, inside
            // the farm, where a failure stops every rank.)
            if (policy->needs_calibration() == calibration_mode::none) {
                const candidate_predictor predictor = sim::make_predictor(0.0, 0.0, {});  // auto's start() asks for one
                make_technique(options.schedule.technique, options.schedule.parameters, workers)
                    ->start({tasks, tasks, workers, nullptr, &predictor});
            }
            if (options.topology.farmer == farmer_mode::hierarchical) check_hierarchical(options, kernel, tasks, s.group_of);
            if (options.topology.farmer == farmer_mode::decentralised) {
                if (kernel.streamed())  // a journal hands results on through a sink too (journaled.cpp)
                    throw invalid_argument("farmer", "decentralised does not carry streamed results, results of any size or "
                                                     "a journal yet (its ranks put fixed-size outputs straight into rank 0's "
                                                     "window); use flat");
                if (options.schedule.learned)
                    throw invalid_argument("farmer", "decentralised serves no calibrating technique, so a learned schedule "
                                                     "has nothing to keep; use flat");
                check_decentralised(options, *policy, workers);
            }
            if (options.topology.farmer == farmer_mode::stealing) check_stealing(options, kernel, tasks, ranks);
            if (options.protocol.stragglers != 0.0) {
                if (!(options.protocol.stragglers > 1.0) || !std::isfinite(options.protocol.stragglers))
                    throw invalid_argument("stragglers", "is " + std::to_string(options.protocol.stragglers) +
                                                             "; expected 0 (off) or a finite factor > 1");
                if (options.topology.farmer != farmer_mode::flat)
                    throw invalid_argument("stragglers", "are handled by the flat farmer only; use --farmer flat");
            }
            check_task_error_rule(options.protocol.on_task_error, "on_task_error");
            if (options.protocol.on_task_error.what == task_error_rule::kind::retry &&
                options.topology.farmer == farmer_mode::stealing)
                throw invalid_argument("on_task_error", "retry is not served by the " + farm_name(options.topology.farmer) +
                                                            " farm (no rank hands tasks out again); use skip, or --farmer "
                                                            "flat, hierarchical or decentralised");
            // on_worker_loss: as asked; unset, continue where the runtime survives a lost rank and the farm has a
            // farmer or is decentralised (docs/reliability.md "A lost worker"); the work-stealing farm does not survive one.
            worker_loss_rule loss;
            const bool stealing = options.topology.farmer == farmer_mode::stealing;
            if (options.protocol.on_worker_loss) {
                loss = *options.protocol.on_worker_loss;
                check_worker_loss_rule(loss, "on_worker_loss");
                if (loss.what != worker_loss_rule::kind::off && stealing)
                    throw invalid_argument("on_worker_loss", "is not served by the work-stealing farm (its ranks' ranges "
                                                             "and its end involve every rank); use off, or --farmer flat, "
                                                             "hierarchical or decentralised");
            } else if (mpi::runtime_survives_a_lost_rank()) {
                if (!stealing) loss.what = worker_loss_rule::kind::go_on;
                else
                    std::cerr << "pfarm: warning: the MPI runtime keeps the job running after a rank dies, but the "
                              << "work-stealing farm does not survive a lost rank (a lost rank leaves the others "
                              << "waiting); use --farmer flat, hierarchical or decentralised, or start without recovery\n";
            }
            s.config.worker_loss = static_cast<std::int32_t>(loss.what);
            s.config.worker_loss_factor = loss.factor;
            s.config.worker_loss_slack = loss.slack;
            s.config.task_errors = static_cast<std::int32_t>(options.protocol.on_task_error.what);
            s.config.task_attempts = options.protocol.on_task_error.attempts;
            s.config.stragglers = options.protocol.stragglers != 0.0 ? 1 : 0;
            s.config.straggler_factor = options.protocol.stragglers;
            s.config.farmer = static_cast<std::int32_t>(options.topology.farmer);
            s.config.victims = static_cast<std::int32_t>(options.topology.victims);
            if (!options.output.trace.empty()) check_trace_path(options.output.trace);  // before any task runs, not after the sweep
            s.config.trace = options.output.trace.empty() ? 0 : 1;
            choose_monitors(policy->needs(), options, s);
            check_clock_choice();
            if (const auto& span = options.schedule.calibration_span; span && (!(*span >= 0.0) || !std::isfinite(*span))) {
                std::ostringstream value;
                value << *span;
                throw invalid_argument("calibration_span", "is " + value.str() + "; expected a finite value >= 0 (seconds)");
            }
            s.emulated = emulation_from(options, ranks);
            s.config.tasks = tasks;
            s.config.farmer_computes = options.topology.farmer_computes ? 1 : 0;
            s.config.prefetch = options.protocol.prefetch ? 1 : 0;
            s.config.reclaim = options.protocol.reclaim ? 1 : 0;
            s.config.replicated = options.protocol.replicated_input ? 1 : 0;
            for (double f : s.emulated.slowdown) emulation_data.push_back(f);
            emulation_data.push_back(-1.0);  // separator
            for (const auto& c : s.emulated.changes)
                emulation_data.insert(emulation_data.end(), {static_cast<double>(c.worker), c.time, c.factor});
        } catch (const invalid_argument& e) {
            s.config.error = 1;
            argument = e.argument();
            message = e.message();
        }
        s.config.emulation_count = static_cast<std::int32_t>(emulation_data.size());
    }
    mpi::check(MPI_Bcast(&s.config, sizeof(config_header), MPI_BYTE, 0, comm), "MPI_Bcast");
    if (s.config.error) {
        broadcast_string(comm, argument);
        broadcast_string(comm, message);
        throw invalid_argument(argument, message);
    }
    emulation_data.resize(static_cast<std::size_t>(s.config.emulation_count));
    if (!emulation_data.empty())
        mpi::check(MPI_Bcast(emulation_data.data(), s.config.emulation_count, MPI_DOUBLE, 0, comm), "MPI_Bcast");
    if (rank != 0) {  // decode: slowdown factors (>= 1), a -1 separator, then (rank, time, factor) triples
        std::size_t i = 0;
        while (i < emulation_data.size() && emulation_data[i] >= 0.0) s.emulated.slowdown.push_back(emulation_data[i++]);
        for (++i; i + 3 <= emulation_data.size(); i += 3)
            s.emulated.changes.push_back({static_cast<int>(emulation_data[i]), emulation_data[i + 1], emulation_data[i + 2]});
    }
    if (s.config.farmer == static_cast<std::int32_t>(farmer_mode::hierarchical) && ranks > 1) {
        s.group_of.resize(static_cast<std::size_t>(ranks));
        mpi::check(MPI_Bcast(s.group_of.data(), ranks, MPI_INT, 0, comm), "MPI_Bcast");
    }
    std::string extra;  // the registry monitors asked for, comma-separated
    for (const auto& name : s.extra_monitors) extra += (extra.empty() ? "" : ",") + name;
    broadcast_string(comm, extra);
    s.extra_monitors.clear();
    for (std::stringstream names(extra); std::getline(names, extra, ',');) s.extra_monitors.push_back(extra);
    // An idle rank busy-waits in MPI_Probe unless ranks outnumber the cores of its node: the machine's cores, or
    // fewer where a CPU quota (cgroup: Slurm, containers) limits the process, since a rank that spins then spends
    // its node's quota on waiting. A quota that cannot be read leaves the machine's cores (this only chooses how
    // to wait; the availability monitor reports such a failure where a technique needs the reading).
    double cores = std::max(1u, std::thread::hardware_concurrency());
    try {
        if (const auto limit = cgroup_cpu_limit()) {
            cores = std::min(cores, *limit);
            s.quota_cores = *limit;
        }
    } catch (const std::exception&) {
    }
    int gentle = static_cast<double>(local) > cores ? 1 : 0, any_gentle = 0;
    mpi::check(MPI_Allreduce(&gentle, &any_gentle, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
    s.config.gentle_wait = any_gentle;
    // The automatic calibration span: two periods of the longest CPU quota period any rank runs under (a quota
    // that cannot be read counts as none, as above), else 0.
    double period = 0.0, longest = 0.0;
    if (!options.schedule.calibration_span) try {
            period = cgroup_cpu_period().value_or(0.0);
        } catch (const std::exception&) {
        }
    mpi::check(MPI_Reduce(&period, &longest, 1, MPI_DOUBLE, MPI_MAX, 0, comm), "MPI_Reduce");
    if (rank == 0) s.config.calibration_span = options.schedule.calibration_span.value_or(2.0 * longest);
    return s;
}

void end_setup(MPI_Comm comm, int rank, int ranks) {
    if (rank != 0) {
        mpi::check(MPI_Send(nullptr, 0, MPI_BYTE, 0, tag_setup, comm), "MPI_Send");
        mpi::check(MPI_Recv(nullptr, 0, MPI_BYTE, 0, tag_setup, comm, MPI_STATUS_IGNORE), "MPI_Recv");
        mpi::startup_over();
        return;
    }
    for (int i = 1; i < ranks; ++i)
        mpi::check(MPI_Recv(nullptr, 0, MPI_BYTE, MPI_ANY_SOURCE, tag_setup, comm, MPI_STATUS_IGNORE), "MPI_Recv");
    mpi::startup_over();
    for (int r = 1; r < ranks; ++r) {
        MPI_Request go = MPI_REQUEST_NULL;
        mpi::check(MPI_Isend(nullptr, 0, MPI_BYTE, r, tag_setup, comm, &go), "MPI_Isend");
        mpi::check(MPI_Request_free(&go), "MPI_Request_free");
    }
}

/// Clock alignment for traces (Cristian's method): rank 0 exchanges ping-pongs with each worker in turn and keeps, per
/// worker, the one of least round trip, for the offset and for the round trip. A rank that is not running when a ping
/// comes (its CPU quota spent for the period, its core lent to another process) answers only when it runs again, up to
/// a quota period later (100 ms under the usual CPU quota), and a round trip taken then is that wait, not the
/// network's: each worker gets clock_pings ping-pongs, and one whose least is still over clock_suspect times the least
/// of all gets up to clock_retries more, until one is not. A rank whose quota is nearly spent may still answer every
/// ping late (on the emulated cluster of docs/cluster.md, a node at 0.2 of a core did in a third of the runs), so the
/// farm's round trip is the lower median of the workers' least round trips, not their mean. Returns, on rank 0, each
/// rank's offset: worker time since its start minus farmer time since the farmer's start at the same instant (0
/// elsewhere), so that farmer_time = worker_time - offset. Error: half the least round trip. With `gentle` every rank
/// waits for its message polling with a growing sleep (wait_any) after a short spin, which catches the next ping of
/// a series: a rank that spins while it waits for its turn spends its node's quota on it and is then not running.
std::vector<double> clock_offsets(MPI_Comm comm, int rank, int ranks, double t0, bool gentle, double* round_trip) {
    constexpr int clock_pings = 2, clock_retries = 6;
    constexpr double clock_suspect = 4.0;
    std::vector<double> offsets(static_cast<std::size_t>(rank == 0 ? ranks : 0), 0.0);
    *round_trip = 0.0;
    const auto receive_doubles = [&](double* into, int count, int source) {
        MPI_Request request = MPI_REQUEST_NULL;
        MPI_Status status;
        mpi::check(MPI_Irecv(into, count, MPI_DOUBLE, source, tag_clock, comm, &request), "MPI_Irecv");
        wait_any(1, &request, status, true, gentle);
    };
    if (rank == 0) {
        std::vector<double> least(static_cast<std::size_t>(ranks), std::numeric_limits<double>::infinity());
        // One ping-pong with worker r, kept when it is the least so far; `more` tells the worker whether another follows.
        const auto ping = [&](int r, bool more) {
            const double sent = now() - t0;
            const double message[2] = {sent, more ? 1.0 : 0.0};
            double theirs = 0.0;
            mpi::check(MPI_Send(message, 2, MPI_DOUBLE, r, tag_clock, comm), "MPI_Send");
            receive_doubles(&theirs, 1, r);
            const double received = now() - t0;
            auto& l = least[static_cast<std::size_t>(r)];
            if (received - sent < l) {
                l = received - sent;
                offsets[static_cast<std::size_t>(r)] = theirs - (sent + received) / 2.0;
            }
            return received - sent;
        };
        for (int r = 1; r < ranks; ++r)
            for (int i = 0; i < clock_pings; ++i) ping(r, true);
        const double all = *std::min_element(least.begin() + 1, least.end());
        for (int r = 1; r < ranks; ++r) {
            for (int i = 0; i < clock_retries && least[static_cast<std::size_t>(r)] > clock_suspect * all; ++i)
                ping(r, true);
            ping(r, false);  // the last: it tells the worker the setup's pings are over
        }
        std::vector<double> sorted(least.begin() + 1, least.end());
        std::nth_element(sorted.begin(), sorted.begin() + (ranks - 2) / 2, sorted.end());
        *round_trip = sorted[static_cast<std::size_t>((ranks - 2) / 2)];
    } else {
        for (double message[2] = {0.0, 1.0}; message[1] != 0.0;) {
            receive_doubles(message, 2, 0);
            const double mine = now() - t0;
            mpi::check(MPI_Send(&mine, 1, MPI_DOUBLE, 0, tag_clock, comm), "MPI_Send");
        }
    }
    return offsets;
}

void sampler::start(MPI_Comm comm, int rank) {
    if (bits_ & latency_once) cached_.latency = mpi::measure_latencies(comm)[static_cast<std::size_t>(rank)];
    int failed = 0, any = 0;
    std::string why;
    try {
        // Under emulation the load readings are the emulated load's (read()), and no monitor is read for them.
        if ((bits_ & (loadavg_each | loadavg_calibration)) && !emulated_.active())
            availability_ = make_availability_monitor();
        if (bits_ & benchmark_once) cached_.benchmark = benchmark_monitor().read().benchmark;
        for (const auto& name : extra_) {
            const resource_sample s = make_monitor(name)->read();
            if (s.availability) cached_.availability = s.availability;
            if (s.run_queue) cached_.run_queue = s.run_queue;
            if (s.load1) cached_.load1 = s.load1;
            if (s.benchmark) cached_.benchmark = s.benchmark;
            if (s.cores) cached_.cores = s.cores;
            if (s.node_key) cached_.node_key = s.node_key;
        }
    } catch (const std::exception& e) {
        failed = 1, why = e.what();
    }
    mpi::check(MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
    if (any) throw error("a monitor failed" + (why.empty() ? std::string(" on another rank") : ": " + why));
}

resource_sample sampler::read(bool calibration) {
    resource_sample s = cached_;
    if ((bits_ & loadavg_each) || (calibration && (bits_ & loadavg_calibration))) {
        if (emulated_.active()) {  // the simulator's model of the readings (simulator.cpp, "Simulated monitors")
            const double f = emulated_.load(rank_, now() - t0_);
            s.availability = std::min(1.0, 1.0 / f);
            s.run_queue = std::max(1.0, f);
            return s;
        }
        const resource_sample l = availability_->read();
        s.availability = l.availability;
        s.run_queue = l.run_queue;
        s.load1 = l.load1;
    }
    return s;
}

namespace {
struct outcome_header {
    std::int32_t kind = 0;  ///< farm_outcome::kind
    std::int32_t rank = 0;
    std::int64_t task = -1;
    std::int32_t text_length = 0;
    std::int32_t lost_count = 0;  ///< send_outcome: the lost ranks that follow the header
};
}  // namespace

void share_outcome(MPI_Comm comm, outcome& o) {
    outcome_header h{static_cast<std::int32_t>(o.what), o.rank, o.task, static_cast<std::int32_t>(o.text.size())};
    mpi::check(MPI_Bcast(&h, sizeof h, MPI_BYTE, 0, comm), "MPI_Bcast");
    o.what = static_cast<farm_outcome::kind>(h.kind);
    o.rank = h.rank;
    o.task = h.task;
    o.text.resize(static_cast<std::size_t>(h.text_length));
    if (h.text_length > 0) mpi::check(MPI_Bcast(o.text.data(), h.text_length, MPI_CHAR, 0, comm), "MPI_Bcast");
}

namespace {
/// The outcome's header, the lost ranks (std::int32_t each), then its text.
std::vector<std::byte> packed(const outcome& o) {
    const outcome_header h{static_cast<std::int32_t>(o.what), o.rank, o.task, static_cast<std::int32_t>(o.text.size()),
                           static_cast<std::int32_t>(o.lost.size())};
    const std::size_t lost = o.lost.size() * sizeof(std::int32_t);
    std::vector<std::byte> bytes(sizeof h + lost + o.text.size());
    std::memcpy(bytes.data(), &h, sizeof h);
    for (std::size_t i = 0; i < o.lost.size(); ++i) {
        const auto r = static_cast<std::int32_t>(o.lost[i]);
        std::memcpy(bytes.data() + sizeof h + i * sizeof r, &r, sizeof r);
    }
    std::memcpy(bytes.data() + sizeof h + lost, o.text.data(), o.text.size());
    return bytes;
}
}  // namespace

void send_outcome(MPI_Comm comm, const outcome& o, const std::vector<int>& lost) {
    int ranks = 0;
    mpi::check(MPI_Comm_size(comm, &ranks), "MPI_Comm_size");
    const std::vector<std::byte> bytes = packed(o);
    std::vector<MPI_Request> living;
    for (int r = 1; r < ranks; ++r) {
        if (std::find(lost.begin(), lost.end(), r) != lost.end()) {  // a rank that is gone never receives it
            send_detached(comm, bytes, r, tag_outcome);
            continue;
        }
        living.emplace_back();
        mpi::check(MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, r, tag_outcome, comm, &living.back()),
                   "MPI_Isend");
    }
    mpi::check(MPI_Waitall(static_cast<int>(living.size()), living.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
}

namespace {
/// The outcome in `bytes` (`count` of them), as packed() wrote it.
void unpack_outcome(const std::vector<std::byte>& bytes, int count, outcome& o) {
    outcome_header h;
    if (static_cast<std::size_t>(count) < sizeof h) throw internal_error("farm: a short outcome message");
    std::memcpy(&h, bytes.data(), sizeof h);
    const std::size_t lost = static_cast<std::size_t>(h.lost_count) * sizeof(std::int32_t);
    if (static_cast<std::size_t>(count) != sizeof h + lost + static_cast<std::size_t>(h.text_length))
        throw internal_error("farm: an outcome message of the wrong size");
    o.what = static_cast<farm_outcome::kind>(h.kind);
    o.rank = h.rank;
    o.task = h.task;
    o.lost.resize(static_cast<std::size_t>(h.lost_count));
    for (std::size_t i = 0; i < o.lost.size(); ++i) {
        std::int32_t r = 0;
        std::memcpy(&r, bytes.data() + sizeof h + i * sizeof r, sizeof r);
        o.lost[i] = r;
    }
    o.text.assign(reinterpret_cast<const char*>(bytes.data() + sizeof h + lost), static_cast<std::size_t>(h.text_length));
}

/// Receives the message from rank 0 that `status` names; true when it is the outcome (read into `o`).
bool take_outcome(MPI_Comm comm, const MPI_Status& status, outcome& o) {
    int count = 0;
    mpi::check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
    std::vector<std::byte> bytes(static_cast<std::size_t>(std::max(count, 1)));
    mpi::check(MPI_Recv(bytes.data(), count, MPI_BYTE, 0, status.MPI_TAG, comm, MPI_STATUS_IGNORE), "MPI_Recv");
    if (status.MPI_TAG != tag_outcome) return false;  // a reply that crossed the end (a stop to a rank presumed lost)
    unpack_outcome(bytes, count, o);
    return true;
}
}  // namespace

void receive_outcome(MPI_Comm comm, outcome& o, bool gentle) {
    for (double pause = 1e-5;;) {
        MPI_Status status;
        if (gentle) {  // more ranks than cores: poll with a growing sleep
            int flag = 0;
            mpi::check(MPI_Iprobe(0, MPI_ANY_TAG, comm, &flag, &status), "MPI_Iprobe");
            if (!flag) {
                std::this_thread::sleep_for(std::chrono::duration<double>(pause));
                pause = std::min(2.0 * pause, 1e-3);
                continue;
            }
        } else {
            mpi::check(MPI_Probe(0, MPI_ANY_TAG, comm, &status), "MPI_Probe");
        }
        if (take_outcome(comm, status, o)) return;
    }
}

bool try_receive_outcome(MPI_Comm comm, outcome& o, bool others_too) {
    MPI_Status status;
    int flag = 0;
    mpi::check(MPI_Iprobe(0, others_too ? MPI_ANY_TAG : tag_outcome, comm, &flag, &status), "MPI_Iprobe");
    return flag != 0 && take_outcome(comm, status, o);
}

void send_outcome_detached(MPI_Comm comm, const outcome& o, const std::vector<int>& to) {
    const std::vector<std::byte> bytes = packed(o);
    for (int r : to) send_detached(comm, bytes, r, tag_outcome);
}

void broadcast_string(MPI_Comm comm, std::string& text, const std::vector<int>& lost) {
    if (lost.empty()) {
        broadcast_string(comm, text);
        return;
    }
    int rank = 0, ranks = 0;
    mpi::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    mpi::check(MPI_Comm_size(comm, &ranks), "MPI_Comm_size");
    if (rank == 0) {
        for (int r = 1; r < ranks; ++r)
            if (std::find(lost.begin(), lost.end(), r) == lost.end())
                mpi::check(MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, r, tag_after, comm), "MPI_Send");
        return;
    }
    MPI_Status status;
    mpi::check(MPI_Probe(0, tag_after, comm, &status), "MPI_Probe");
    int count = 0;
    mpi::check(MPI_Get_count(&status, MPI_CHAR, &count), "MPI_Get_count");
    text.resize(static_cast<std::size_t>(count));
    mpi::check(MPI_Recv(text.data(), count, MPI_CHAR, 0, tag_after, comm, MPI_STATUS_IGNORE), "MPI_Recv");
}

void throw_outcome(const outcome& o) {
    if (!o.lost.empty()) mpi::note_lost_ranks();  // what follows must not wait for them (MPI_Finalize included)
    if (o.what == farm_outcome::kind::task_failed) throw worker_error(o.task, o.rank, o.text);
    throw error(o.text);
}

}  // namespace pfarm::detail
