// pfarm simulator: the work-stealing farm's event loop (farmer_kind::stealing). No farmer and no shared work counter:
// every rank owns a contiguous range of the loop held as a (front, back) pair in its own window, claims from the
// front, and when its range is empty steals half of another rank's remainder from the back. The MPI farm's
// `--farmer stealing` (skeleton/mpi/stealing/stealing.cpp) follows the same model, and the arithmetic both use (the
// split, the claim rule, the steal's share, the victims, the backoff, the counters) is the core's
// (pfarm/steal_schedule.hpp). The model, decided once:
//
//   - The split: rank j owns [j S / p, (j + 1) S / p) as equal as possible (the first S mod p ranges one larger),
//     whatever the ranks' speeds, as Tree Scheduling's initial allocation (seed 002, section 6).
//   - Windows: every rank's window is a server (simulator_events.hpp) serving the atomics that reach it one at a
//     time, in arrival order (ties by rank), each taking `atomic_overhead` (default_atomic_overhead): the pair is one
//     64-bit word, so the owner's and the thieves' atomics on it are serialised. Everything between two ranks (an
//     atomic, a result put, a notice, the stop) takes `atomic_latency` one way (default_atomic_latency), the owner's
//     atomics on its own window too (an MPI atomic goes through the one-sided layer even to local memory). An atomic
//     acts when its service starts, and its answer leaves when the service ends.
//   - The owner's claim: one compare-and-swap on its own pair, (f, b) -> (f + n, b), from the pair it last saw; it
//     loses only when a thief lowered b since, and is then retried at once from the pair the swap returned (counted
//     in lost_swaps). n is the technique's rule over the owner's own remainder R = b - f: `ss` 1, `css` its chunk,
//     `gss` ceil(R / p) (guided self-scheduling as if the owner's range were a loop of its own shared by the p
//     ranks: large chunks while a range is long, single tasks at its end), clipped to [max(1, min_chunk), R]. The
//     owner knows without an atomic that its range is empty when its own claim took the last task; a claim whose
//     swap lost may find that the thieves took the rest, and the owner turns thief.
//   - A steal: the thief reads the victim's pair (one atomic round trip, counted in steal_attempts); when R >= 1
//     it swaps (f, b) -> (f, b - ceil(R / 2)) (one more round trip), taking [b - ceil(R / 2), b): half of what
//     remains, rounded up, so that a single task left behind a long one in progress moves to an idle rank. A swap
//     that loses (the owner claimed or another thief stole since the read) is retried from the pair it returned
//     while R >= 1 (lost_swaps). The thief then installs the stolen range in its own window with its first chunk
//     claimed (one atomic on its own window) and goes on as an owner. A read that finds the range empty is a failed
//     attempt: the thief waits 2^(n-1) atomic round trips (2 atomic_latency + atomic_overhead) after its n-th
//     failure in a row, and tries again (a success resets n); the wait is at most the larger of steal_backoff_floor round trips and 1 / steal_polls_per_task of the
//     seconds per task the thief has measured on its own chunks: a thief that waits loses a small part of a task,
//     and the simulator's events stay bounded on loops of long tasks. (What the cap changes at scale:
//     docs/measurements/2026-12-03-work-stealing-sim.md.)
//   - Victims: `random` (the default) draws a victim uniformly from the other ranks (std::mt19937_64 per rank,
//     seeded from run_options::victim_seed and the rank); `tree` is seed 002's Tree Scheduling (section 4.1): the
//     ranks form a binary tree in heap order and a thief always asks its parent, (j - 1) / 2, so that work only
//     travels down the tree, to the subtree of the rank that had it; the root (rank 0) never steals. One rank: no
//     victims at all.
//   - Results: a put to rank 0 per chunk, at its end, arriving `atomic_latency` later (a trace record's `received`).
//   - Termination without a farmer: a rank whose range is empty, as it turns thief, flushes its puts (complete one
//     round trip after the last is issued) and adds the tasks it computed since its last notice to one of
//     c = ceil(sqrt(p)) counters, counter j mod c, held by rank j mod c (one accumulate, served by that counter, a
//     server of its own taking atomic_overhead per notice): spread over c counters, the notices that come together
//     at the end (p of them, and one more per successful steal) do not queue at one rank. Rank 0, while it has no
//     chunk in hand (from when its own notice is complete), polls: it reads the c counters together (c reads, one
//     flush), and again after a backoff (the thieves' rule, its own failures) while their sum is short of S.
//     Counters only grow, so a sum of S read once means every result is at rank 0: the makespan is when that
//     poll's last answer reaches rank 0. Rank 0 then puts a stop flag into every rank's window (p puts); a thief
//     reads it locally before each attempt and stops. termination_messages counts the notices, the polls' reads
//     and the stop puts. A thief of `tree` stops trying earlier, once it has finished: its range is empty and its
//     parent had finished when it read its parent's window (a flag beside the pair, read with it; the root
//     finishes when its range is empty): no work can reach it any more, since work only travels down the tree. It
//     then waits for the stop.
//   - Metrics: makespan as above; the fluid bound as the other farms; host_atomics counts every atomic the windows
//     and the counters served (claims, reads, swaps, installs, notices, polls' reads); steals the swaps that took
//     tasks. Every task is computed exactly once: counted per task, an internal_error otherwise.
//   - Left out: the puts' bandwidth and their cost at rank 0 (as in the decentralised model), each claim's local
//     work, the input of a chunk (every rank holds the input, or the tasks are indices).
#include "pfarm/registry.hpp"
#include "pfarm/steal_schedule.hpp"

#include "simulated_worker.hpp"
#include "simulator_events.hpp"
#include "simulator_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

namespace pfarm::sim {

namespace model {

namespace {

/// A window's (front, back) pair: the owner's unclaimed tasks [front, back).
using range_pair = steal_range;

/// The atomic a rank has in flight (one at a time).
enum class op_kind : std::uint8_t { claim, read, swap, install };

/// A rank as the loop sees it.
struct rank_state {
    range_pair known;          ///< its own pair as it last saw it (its front is exact)
    op_kind op = op_kind::claim;
    int target = 0;            ///< the window its atomic acts on
    range_pair expected;       ///< claim, swap: the pair the swap expects; install: the pair it writes
    range_pair found;          ///< the pair the window held when the atomic acted
    bool succeeded = false;    ///< claim, swap: the swap took place
    chunk claimed{0, 0};       ///< claim, install: the chunk it took
    range_pair stolen;         ///< swap: the tasks it took
    double sent = 0.0;         ///< when the claim of the chunk in hand was issued
    chunk current{0, 0};
    double start = 0.0, end = 0.0;
    double put_done = 0.0;     ///< its last put is complete (a flush returns no earlier)
    task_count unreported = 0; ///< tasks computed since its last notice
    int failures = 0;          ///< failed steal attempts in a row
    /// tree: the rank has finished (its range empty and idle, and it is the root or its parent had finished), a flag
    /// in its window from this time on; a read returns it with the pair.
    double finished_at = std::numeric_limits<double>::infinity();
    bool found_finished = false;  ///< read: the victim had finished
    std::optional<victim_picker> victims;
};

}  // namespace

void check_victims(const run_options& run) { parse_victim_rule(run.victims); }

result simulate_stealing(const platform& given, const workload& wl, const std::string& technique,
                         const technique_options& options, const run_options& run) {
    check_victims(run);
    if (run.reclaim) throw invalid_argument("reclaim", "is on; the work-stealing farm has no farmer to reclaim (thieves steal)");
    if (run.prefetch) throw invalid_argument("prefetch", "is on; the work-stealing farm claims from its own window, with nothing to hide");
    const platform pl = effective_platform(given);
    const std::vector<double> costs = task_costs(wl);
    const int p = static_cast<int>(pl.task_times.size());
    const auto up = static_cast<std::size_t>(p);
    const steal_claim_rule rule = make_steal_claim_rule(technique, options, p);
    const victim_rule victims = parse_victim_rule(run.victims);
    const bool tree = victims == victim_rule::tree;
    const double service = pl.atomic_overhead.value_or(default_atomic_overhead);
    const double latency = pl.atomic_latency.value_or(default_atomic_latency);
    const double round_trip = 2.0 * latency + service;

    worker_compute compute(pl, costs);
    result out = result_for(pl, compute.total_work());
    std::vector<report_part> parts(up);
    std::vector<range_pair> window(up);  // the pairs in the windows
    std::vector<rank_state> ranks(up);
    const task_count S = wl.tasks;
    for (std::size_t j = 0; j < up; ++j) {
        parts[j].workers.push_back({static_cast<int>(j), 0, {}, 0.0, 0.0});
        window[j] = initial_range(S, p, static_cast<int>(j));
        ranks[j].known = window[j];
        ranks[j].victims.emplace(victims, static_cast<int>(j), p, run.victim_seed);
    }
    std::vector<std::uint8_t> computed(static_cast<std::size_t>(S), 0);  // per task: how many times

    event_queue events;
    // Servers 0..p-1: the ranks' windows; p + k: notice counter k, on rank k (k < counters).
    const int counters = notice_counters(p);
    servers windows(p + counters);
    std::vector<task_count> counted(static_cast<std::size_t>(counters), 0);  // the counters' values
    double stop_at = std::numeric_limits<double>::infinity();  // rank 0 knows it holds every result, puts the stop
    // Rank 0's poll of the counters: in flight, answers still to come, their sum, failed polls in a row, and
    // whether it polls now (it has no chunk in hand).
    bool polling = false, poll_in_flight = false;
    int poll_answers = 0, poll_failures = 0;
    task_count poll_sum = 0;
    double notice_done = 0.0;  // rank 0's last notice is complete (its flush returned)

    const auto send = [&](std::size_t j, int server, double t, std::size_t mail = 0) {
        auto e = event::at(t + latency, static_cast<int>(j), event::kind::to_server);
        e.server = server;
        e.from = static_cast<int>(j);
        e.mail = mail;
        events.push(e);
    };
    const auto issue = [&](std::size_t j, op_kind op, int target, double t) {
        ranks[j].op = op;
        ranks[j].target = target;
        send(j, target, t);
    };
    const auto claim = [&](std::size_t j, double t) {
        auto& r = ranks[j];
        r.expected = r.known;
        r.sent = t;
        issue(j, op_kind::claim, static_cast<int>(j), t);
    };
    // Rank j is a thief at t: it stops if the stop has reached it, else tries a victim (the tree's root, and a
    // rank alone, wait for the stop).
    const auto attempt = [&](std::size_t j, double t) {
        auto& r = ranks[j];
        if (t >= stop_at + latency) return;  // the stop has reached it: it ends
        const int v = r.victims->next();
        if (v < 0) {  // nothing to steal from (the tree's root, a rank alone): the stop ends it
            r.finished_at = t;
            return;
        }
        ++out.steal_attempts;
        r.sent = t;
        issue(j, op_kind::read, v, t);
    };
    // How long rank j waits after its n-th failure in a row (a steal attempt, or rank 0's poll).
    const auto backoff = [&](std::size_t j, int& failures) {
        const auto& mine = parts[j].workers.front();  // what it measured: seconds per task
        const double task = mine.tasks > 0 ? mine.busy / static_cast<double>(mine.tasks) : 0.0;
        return steal_backoff(failures, round_trip, task);
    };
    const auto failed_attempt = [&](std::size_t j, double t) {
        events.push(event::at(t + backoff(j, ranks[j].failures), static_cast<int>(j), event::kind::retry));
    };
    // Rank 0 reads every counter at t (one read each, issued together; a flush of them all).
    const auto poll = [&](double t) {
        if (!polling || poll_in_flight || t >= stop_at) return;
        poll_in_flight = true;
        poll_answers = counters;
        poll_sum = 0;
        for (int k = 0; k < counters; ++k) {
            ++out.termination_messages;
            send(0, p + k, t);
        }
    };
    // Rank j's range is empty and its chunk done at t: it reports what it computed, then turns thief.
    const auto idle = [&](std::size_t j, double t) {
        auto& r = ranks[j];
        if (r.unreported > 0) {  // to counter j mod counters, once its puts are flushed
            ++out.termination_messages;
            const double sent = std::max(t, r.put_done);
            send(j, p + static_cast<int>(j % static_cast<std::size_t>(counters)), sent, static_cast<std::size_t>(r.unreported));
            if (j == 0) notice_done = sent + round_trip;
            r.unreported = 0;
        }
        r.failures = 0;
        if (j == 0) {  // rank 0 polls while it has no chunk in hand, once its own notice is complete
            polling = true;
            poll_failures = 0;
            poll(std::max(t, notice_done));
        }
        attempt(j, t);
    };
    const auto start_chunk = [&](std::size_t j, chunk c, double t) {
        auto& r = ranks[j];
        for (task_count i = c.first; i < c.first + c.count; ++i)
            if (++computed[static_cast<std::size_t>(i)] != 1)
                throw internal_error("simulator: the work-stealing farm handed out task " + std::to_string(i) + " twice");
        if (j == 0) polling = false;
        r.current = c;
        r.start = t;
        r.end = compute.end(j, c.first, c.count, t);
        events.push(event::at(r.end, static_cast<int>(j), event::kind::chunk_end));
    };

    for (std::size_t j = 0; j < up; ++j) {
        if (ranks[j].known.size() > 0) claim(j, 0.0);
        else idle(j, 0.0);
    }

    // A window serves the atomic that reached it first, acting on its pair when the service starts; rank 0's
    // counter serves a notice.
    const auto serve = [&](const event& m, double now) {
        ++out.host_atomics;
        if (m.server >= p) {  // a counter: a notice adds to it, rank 0's poll reads it
            const auto k = static_cast<std::size_t>(m.server - p);
            if (m.from == 0 && m.mail == 0) {
                poll_sum += counted[k];
                auto e = event::at(now + service + latency, 0, event::kind::to_worker);
                e.server = m.server;  // a poll's answer
                events.push(e);
            } else {
                counted[k] += static_cast<task_count>(m.mail);
            }
            return now + service;
        }
        auto& r = ranks[static_cast<std::size_t>(m.from)];
        range_pair& w = window[static_cast<std::size_t>(m.server)];
        r.found = w;
        switch (r.op) {
        case op_kind::claim:
            r.succeeded = w == r.expected;
            if (r.succeeded) {
                r.claimed = {w.front, rule.size(w.size())};
                w.front += r.claimed.count;
            }
            break;
        case op_kind::swap:
            r.succeeded = w == r.expected;
            if (r.succeeded) {
                r.stolen = stolen_part(w);
                w = after_steal(w);
            }
            break;
        case op_kind::install:
            r.claimed = {r.expected.front, rule.size(r.expected.size())};
            w = {r.expected.front + r.claimed.count, r.expected.back};
            break;
        case op_kind::read:
            r.found_finished = ranks[static_cast<std::size_t>(m.server)].finished_at <= now;
            break;
        }
        events.push(event::at(now + service + latency, m.from, event::kind::to_worker));
        return now + service;
    };

    // Rank j's atomic's answer reached it at t.
    const auto answered = [&](std::size_t j, double t) {
        auto& r = ranks[j];
        switch (r.op) {
        case op_kind::claim:
            if (!r.succeeded) {  // a thief lowered the back: again from the pair the swap returned
                ++out.lost_swaps;
                r.known = r.found;
                if (r.known.size() == 0) idle(j, t);  // the thieves took the rest
                else {  // again from the pair the swap returned (`sent` stays the claim's first issue)
                    r.expected = r.known;
                    issue(j, op_kind::claim, static_cast<int>(j), t);
                }
                return;
            }
            r.known = {r.claimed.first + r.claimed.count, r.found.back};
            start_chunk(j, r.claimed, t);
            return;
        case op_kind::read:
        case op_kind::swap:
            if (r.op == op_kind::swap && r.succeeded) {
                ++out.steals;
                r.failures = 0;
                r.expected = r.stolen;  // installed in its own window, its first chunk claimed
                issue(j, op_kind::install, static_cast<int>(j), t);
                return;
            }
            if (r.op == op_kind::swap) ++out.lost_swaps;
            if (r.found.size() > 0) {  // a swap from what it found
                r.expected = r.found;
                issue(j, op_kind::swap, r.target, t);
                return;
            }
            if (tree && r.op == op_kind::read && r.found_finished) {  // its parent can get no more work: nor can it
                r.finished_at = t;
                return;
            }
            failed_attempt(j, t);
            return;
        case op_kind::install:
            r.known = {r.claimed.first + r.claimed.count, r.expected.back};
            start_chunk(j, r.claimed, t);
            return;
        }
    };

    while (!events.empty()) {
        const event e = events.pop();
        const auto j = static_cast<std::size_t>(e.who);
        switch (e.what) {
        case event::kind::to_server:
            windows.arrive(e, events);
            break;
        case event::kind::turn:
            windows.turn(e, events, serve);
            break;
        case event::kind::to_worker:
            if (e.server < p) {
                answered(j, e.time);
                break;
            }
            if (--poll_answers > 0) break;  // rank 0's poll: every counter has answered
            poll_in_flight = false;
            if (poll_sum == S) {  // every result is at rank 0: the stop goes to every rank
                out.makespan = e.time;
                stop_at = e.time;
                out.termination_messages += p;
            } else if (polling) {
                events.push(event::at(e.time + backoff(0, poll_failures), 0, event::kind::boundary));
            }
            break;
        case event::kind::boundary:  // rank 0 polls again
            poll(e.time);
            break;
        case event::kind::chunk_end: {
            auto& r = ranks[j];
            auto& w = parts[j].workers.front();
            w.chunks.push_back(r.current.count);
            w.tasks += r.current.count;
            w.busy += r.end - r.start;
            w.finish = r.end;
            r.unreported += r.current.count;
            r.put_done = e.time + 2.0 * latency;  // its results put to rank 0
            if (run.keep_trace)
                parts[j].records.push_back({static_cast<int>(j), r.current.first, r.current.count, r.sent, r.start, r.end,
                                            e.time + latency, false, {}});
            if (r.known.size() > 0) claim(j, e.time);
            else idle(j, e.time);
            break;
        }
        case event::kind::retry:
            attempt(j, e.time);
            break;
        default:
            throw internal_error("simulator: a work-stealing rank got an event of the session-driven loops");
        }
    }

    for (std::size_t i = 0; i < computed.size(); ++i)
        if (computed[i] != 1)
            throw internal_error("simulator: the work-stealing farm computed task " + std::to_string(i) + " " +
                                 std::to_string(computed[i]) + " times");
    task_count reported = 0;
    for (const task_count c : counted) reported += c;
    if (reported != S || windows.busy() || out.makespan == 0.0)
        throw internal_error("simulator: the work-stealing farm ended with " + std::to_string(reported) + " of " +
                             std::to_string(S) + " tasks reported");
    for (std::size_t j = 0; j < up; ++j)
        if (window[j].size() != 0) throw internal_error("simulator: a work-stealing range was left unclaimed");
    merge_report(out, parts, trace_order::first);
    return out;
}

}  // namespace model

}  // namespace pfarm::sim
