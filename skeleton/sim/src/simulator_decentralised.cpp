// pfarm simulator: the decentralised farm's event loop, a driver of the core's claim sessions (pfarm/claim_schedule.hpp:
// one claim_session per worker over one claim_schedule, the claim rule the MPI driver runs,
// skeleton/mpi/src/decentralised.cpp) in simulated time. No farmer; the model, decided once:
//
//   - The window host (rank 0 under MPI, computing nothing: farmer_computes off) holds the counters. It serves the
//     atomic operations that reach it one at a time, in arrival order (ties by worker index; a server of
//     simulator_events.hpp, as the flat farmer), each taking `atomic_overhead` (default_atomic_overhead): the
//     counters are one memory location each, so concurrent atomics on them are serialised. An operation acts on its
//     counter when its service starts (claim_op, apply()), and its answer leaves when the service ends. Everything
//     between a worker and the host (an atomic, a result put, the end message) takes `atomic_latency`
//     (default_atomic_latency) one way.
//   - A worker runs the MPI driver's loop: it issues its first claim at t = 0 and waits for the answer (the flush);
//     the chunk computes at once (the simulated worker's compute model, simulated_worker.hpp: task costs, task
//     times, load changes, a scripted availability); when it ends, the worker stages its results, issues its next
//     claim and waits. With prefetch the next claim is issued when a chunk starts and its answer is read when the
//     chunk ends. A compare-and-swap that lost is retried when its answer is read (after the chunk, with prefetch),
//     from the value it found, after the session's backoff (claim_session::backoff) in round trips of one atomic
//     (2 atomic_latency + atomic_overhead). The session reads an answer when the host serves the operation, not when
//     it reaches the worker: the same thing (the worker does nothing with it in between), and one claim_schedule
//     serves every worker in step order.
//   - Results travel in batches (decentralised_batch_chunks chunks; the byte limit is not modelled, the simulator
//     knows no result sizes). A batch is put when it closes; a put is complete one round trip after it is issued,
//     so the flush that follows returns at the later of its claim's answer and that. After the claim that finds
//     nothing, the rest of the batch is put and flushed (one round trip), then the end message leaves for the host.
//   - Metrics: the makespan is when the host holds every result, the last end message's arrival (rank 0 then
//     answers each rank with the outcome, not modelled). A trace record per chunk, in hand-out order (the order of
//     first task): `sent` when its claim was issued, `started`/`finished` its compute, `received` when the flush that
//     completed its batch's put returned on the worker, as the MPI driver records. Each worker's entries and records
//     are its part of the report, merged by the core as the MPI driver's ranks' (pfarm/report_merge.hpp: imbalance,
//     COV, k, the trace's order). The fluid bound as in the flat model; host_atomics and lost_swaps count the host's
//     work.
//   - Left out: the puts' bandwidth and their cost at the host (no result sizes, as the flat model's messages); the
//     input fetch (MPI_Get and a flush per chunk) of a rank whose input is neither replicated nor an index range;
//     each claim's local work on the worker (the task call, two clock reads, staging: about 1 us a claim on the
//     development machine, docs/skeleton.md "Claim rate"), which runs in parallel on the workers.
#include "pfarm/claim_schedule.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/report_merge.hpp"

#include "simulated_worker.hpp"
#include "simulator_events.hpp"
#include "simulator_model.hpp"

#include <algorithm>
#include <optional>

namespace pfarm::sim {

namespace model {

namespace {

/// A worker as the loop sees it: its claim session, the claim in flight, the chunk it computes, its batch.
struct claimant {
    claimant(claim_schedule& schedule, int worker) : session(schedule, worker) {}
    claim_session session;
    claim_op op;                   ///< the operation in flight (one at a time)
    std::optional<chunk> answer;   ///< what the session read from the host's answer (nothing: a lost swap)
    bool answered = false;         ///< the answer has reached the worker
    bool waiting = false;          ///< in the flush: the answer acts as soon as it is here
    double claim_sent = 0.0;       ///< when the claim in flight was first issued (a retry keeps it)
    chunk current{0, 0};
    double current_sent = 0.0, start = 0.0, end = 0.0;
    double put_done = 0.0;         ///< the last put is complete (flushes wait for it)
    std::size_t batch = 0;         ///< chunks staged since the last put
    bool batch_sent = false;       ///< the batch was put at the chunk's end; the next flush completes it
};

}  // namespace

result simulate_decentralised(const platform& given, const workload& wl, const std::string& technique,
                              const technique_options& options, const run_options& run) {
    const platform pl = effective_platform(given);
    const std::vector<double> costs = task_costs(wl);
    const int p = static_cast<int>(pl.task_times.size());
    const auto up = static_cast<std::size_t>(p);
    std::unique_ptr<pfarm::technique> policy = make_technique(technique, options, p);
    check_decentralised(*policy, technique, options, p, run.reclaim);  // the MPI driver's refusals, the same list
    const std::optional<double> k = policy->installment_factor();
    claim_schedule schedule(wl.tasks, p, std::move(policy), options.min_chunk);
    const double service = pl.atomic_overhead.value_or(default_atomic_overhead);
    const double latency = pl.atomic_latency.value_or(default_atomic_latency);

    worker_compute compute(pl, costs);
    result out = result_for(pl, compute.total_work());
    // Each worker's part of the report, as an MPI rank's (its entries, its records, the technique's k).
    std::vector<report_part> parts(up);
    for (std::size_t j = 0; j < up; ++j) {
        parts[j].workers.push_back({static_cast<int>(j), 0, {}, 0.0, 0.0});
        parts[j].k = k;
    }
    std::vector<claimant> workers;
    workers.reserve(up);
    for (int j = 0; j < p; ++j) workers.emplace_back(schedule, j);

    event_queue events;
    const auto push = [&](double time, int worker, event::kind what) { events.push(event::at(time, worker, what)); };
    servers host(1);                                  // the window host, serving the atomics
    std::int64_t step_counter = 0, next_counter = 0;  // its counters

    // Worker j issues its claim's operation at t (a retry keeps the claim's first time); an operation the session
    // decided alone (nothing left) is answered at once.
    const auto issue = [&](std::size_t j, double t) {
        auto& w = workers[j];
        w.op = w.session.begin();
        w.answered = false;
        if (w.op.what == claim_op::kind::none) {
            w.answer = w.session.end(0);
            w.answered = true;
            return;
        }
        auto e = event::at(t + latency, static_cast<int>(j), event::kind::to_server);
        e.from = static_cast<int>(j);
        events.push(e);
    };
    const auto new_claim = [&](std::size_t j, double t) {
        workers[j].claim_sent = t;
        issue(j, t);
    };
    // Worker j's batch got to the host: the flush that completed its put returned at t (its records' `received`).
    std::vector<std::vector<std::size_t>> batches(run.keep_trace ? up : 0);  // per worker: its batch's records
    const auto batch_received = [&](std::size_t j, double t) {
        if (!run.keep_trace) return;
        for (std::size_t i : batches[j]) parts[j].records[i].received = t;
        batches[j].clear();
    };

    // Worker j starts chunk c at t (its claim's flush returned).
    const auto start_chunk = [&](std::size_t j, chunk c, double t) {
        auto& w = workers[j];
        w.current = c;
        w.current_sent = w.claim_sent;
        w.start = t;
        w.end = compute.end(j, c.first, c.count, t);
        push(w.end, static_cast<int>(j), event::kind::chunk_end);
        if (run.prefetch) new_claim(j, t);  // the next claim travels while this chunk computes
    };
    // Worker j is in its flush and its answer is here at t: retry a lost swap, or go on with the chunk claimed.
    const auto resolve = [&](std::size_t j, double t) {
        auto& w = workers[j];
        if (!w.answer) {  // the swap lost (or a retry's read came back): the session retries, still in the flush,
            // after its backoff in atomic round trips
            const double wait = static_cast<double>(w.session.backoff()) * (2.0 * latency + service);
            w.answered = false;
            if (wait > 0.0) push(t + wait, static_cast<int>(j), event::kind::retry);
            else issue(j, t);
            return;
        }
        const chunk c = *w.answer;
        w.answered = false;
        w.waiting = false;
        const double flushed = std::max(t, w.put_done);  // the flush also completes the batch put before it
        if (w.batch_sent) {
            batch_received(j, flushed);
            w.batch_sent = false;
        }
        if (c.count > 0) {
            start_chunk(j, c, flushed);
            return;
        }
        double done = flushed;
        if (w.batch > 0) {  // the rest of the batch: put and flushed, one round trip
            done += 2.0 * latency;
            batch_received(j, done);
            w.batch = 0;
        }
        out.makespan = std::max(out.makespan, done + latency);  // the end message reaches the host
    };
    // Worker j is in its flush at t: its answer acts if it is here (a retry the session decides alone, nothing
    // left, is here at once).
    const auto settle = [&](std::size_t j, double t) {
        auto& w = workers[j];
        while (w.waiting && w.answered) resolve(j, t);
    };

    for (std::size_t j = 0; j < up; ++j) {
        new_claim(j, 0.0);
        workers[j].waiting = true;
        settle(j, 0.0);
    }

    // The host serves the atomic that reached it first: it acts on its counter when its service starts, and its
    // answer leaves when the service ends.
    const auto serve = [&](const event& m, double now) {
        auto& w = workers[static_cast<std::size_t>(m.who)];
        std::int64_t& counter = w.op.counter == claim_op::target::step ? step_counter : next_counter;
        const std::int64_t value = apply(w.op, counter);
        ++out.host_atomics;
        w.answer = w.session.end(value);
        push(now + service + latency, m.who, event::kind::to_worker);
        return now + service;
    };
    while (!events.empty()) {
        const event e = events.pop();
        const auto j = static_cast<std::size_t>(e.who);
        switch (e.what) {
        case event::kind::to_server:
            host.arrive(e, events);
            break;
        case event::kind::turn:
            host.turn(e, events, serve);
            break;
        case event::kind::to_worker:
            workers[j].answered = true;
            settle(j, e.time);
            break;
        case event::kind::chunk_end: {
            auto& w = workers[j];
            auto& r = parts[j].workers.front();
            r.chunks.push_back(w.current.count);
            r.tasks += w.current.count;
            r.busy += w.end - w.start;
            r.finish = w.end;
            if (run.keep_trace) {
                batches[j].push_back(parts[j].records.size());
                parts[j].records.push_back({static_cast<int>(j), w.current.first, w.current.count, w.current_sent, w.start, w.end,
                                     0.0, false, {}});
            }
            if (++w.batch == decentralised_batch_chunks) {  // the batch is full: put now, completed by the next flush
                w.batch = 0;
                w.batch_sent = true;
                w.put_done = e.time + 2.0 * latency;
            }
            if (!run.prefetch) new_claim(j, e.time);
            w.waiting = true;
            settle(j, e.time);
            break;
        }
        case event::kind::retry:
            issue(j, e.time);
            settle(j, e.time);
            break;
        default:
            throw internal_error("simulator: a decentralised worker got an event of the session-driven loops");
        }
    }

    task_count total = 0;
    for (const auto& part : parts) total += part.workers.front().tasks;
    for (const auto& w : workers) out.lost_swaps += w.session.lost_swaps();
    for (const auto& w : workers)
        if (w.waiting || host.busy()) throw internal_error("simulator: a decentralised worker waits with no event left");
    if (total != wl.tasks)
        throw internal_error("simulator: the decentralised farm computed " + std::to_string(total) + " of " +
                             std::to_string(wl.tasks) + " tasks (technique '" + technique + "')");
    merge_report(out, parts, trace_order::first);
    return out;
}

}  // namespace model

}  // namespace pfarm::sim
