// pfarm simulator: the hierarchical farm's event loop, a driver of the core's sessions (a farmer_session as the
// supermaster, one master_session per master, one worker_session per worker) in simulated time. It adds servers
// and a second latency to the flat model of simulator.cpp and changes nothing else of it:
//
//   - Workers are grouped contiguously: K groups as equal as possible, the first p mod K one larger. A worker talks
//     to its master exactly as to the flat farmer (its session, its compute model, reclaim, prefetch; `latency`
//     one way).
//   - Every master and the supermaster is one server, like the flat farmer: it serves the messages that reached it
//     one at a time in arrival order (ties by sender: workers by index, then masters by index), a master the
//     supermaster's replies first (they refill its pool), then a victim's answer to a reclaim (as the MPI driver
//     does, skeleton/mpi/src/hierarchical.cpp). A master's inbox holds its workers' messages and the supermaster's replies; serving one is
//     master_session::on_message() or on_reply(), and each answer among its actions (a reply to a worker, a worker
//     parked, a message up) takes `master_overhead` (default `overhead`), one after the other. The supermaster
//     serves the masters' messages with farmer_session::on_message(), each answer taking `supermaster_overhead`
//     (default `overhead`). Messages between a master and the supermaster take `master_latency` (default `latency`).
//   - At t = 0 every worker asks its master and every master asks the supermaster (at no cost).
//   - Metrics: the makespan is when the supermaster holds the last result; finish times, chunks and imbalance are
//     the workers', from their masters' sessions (calibration_end: the last group's barrier; k: group 0's
//     technique); the fluid bound is over the workers (masters and supermaster compute nothing).
#include "pfarm/hierarchy_plan.hpp"
#include "pfarm/master_session.hpp"
#include "pfarm/metrics.hpp"
#include "pfarm/registry.hpp"

#include "simulator_model.hpp"

#include <memory>
#include <queue>

namespace pfarm::sim {

namespace model {

namespace {

/// An event of the hierarchical loop: a message reaching a server (a master or the supermaster), a reply or a
/// reclaim reaching a worker, a worker's chunk ending or reaching its ask-ahead boundary, or a server's turn.
/// Ordered by time, then `who` (the sender or the worker; turns last), then creation order.
struct hevent {
    enum class kind : std::uint8_t { to_server, to_worker, reclaim, chunk_end, boundary, turn };
    double time = 0.0;
    int who = 0;
    std::uint64_t sequence = 0;
    kind what = kind::to_server;
    int server = 0;             ///< to_server, turn: masters 0..K-1, the supermaster K
    int from = -1;              ///< to_server: the sender (a worker of the group, or a master); -1: the supermaster
    bool answer_first = false;  ///< to_server: a victim's answer to a reclaim
    std::size_t mail = 0;       ///< to_server from a worker or a master: the request, in the mail pool
    reply_message reply;        ///< to_worker, reclaim; to_server from the supermaster
    std::uint64_t generation = 0;
    bool operator>(const hevent& o) const {
        if (time != o.time) return time > o.time;
        if (who != o.who) return who > o.who;
        return sequence > o.sequence;
    }
};

using queue = std::priority_queue<hevent, std::vector<hevent>, std::greater<>>;

}  // namespace

result simulate_hierarchical(const platform& given, const workload& wl, const std::string& technique,
                             const technique_options& options, const run_options& run) {
    const platform pl = effective_platform(given);
    const std::vector<double> costs = task_costs(wl);
    const int p = static_cast<int>(pl.task_times.size());
    const auto up = static_cast<std::size_t>(p);
    const int k = run.masters;
    std::vector<int> group_of = hierarchy_plan::contiguous(p, k);
    validate_common_options(options, p);
    const double master_cost = pl.master_overhead.value_or(pl.overhead);
    const double top_cost = pl.supermaster_overhead.value_or(pl.overhead);
    const double up_latency = pl.master_latency.value_or(pl.latency);

    const hierarchy_plan plan(std::move(group_of),
                              {.technique = technique,
                               .master_technique = run.master_technique,
                               .options = options,
                               .tasks = wl.tasks,
                               .group = {.prefetch = run.prefetch, .reclaim = run.reclaim,
                                         .request_cost = master_cost + 2.0 * pl.latency, .keep_records = run.keep_trace,
                                         .pool = true, .stragglers = {}, .clock = {}}});
    std::vector<int> groups, first_of, master_of(up), local_of(up);
    for (int m = 0; m < k; ++m) {
        groups.push_back(plan.size(m));
        first_of.push_back(plan.members(m).front());
        for (int i = 0; i < plan.size(m); ++i) {
            const auto j = static_cast<std::size_t>(plan.members(m)[static_cast<std::size_t>(i)]);
            master_of[j] = m, local_of[j] = i;
        }
    }
    const std::string& top_name = plan.top_technique();
    farmer_session top(wl.tasks, k, plan.make_top(), plan.top_session());
    std::vector<std::unique_ptr<master_session>> masters;
    for (int m = 0; m < k; ++m)
        masters.push_back(std::make_unique<master_session>(plan.size(m), plan.make_group(m), plan.session_options(m)));
    const technique_needs& needs = masters[0]->group().needs();

    const std::vector<double> prefix = prefix_sums(costs);
    std::vector<worker_load> loads = worker_loads(pl);
    result out = result_for(pl, prefix.back());
    std::vector<worker_state> state;
    state.reserve(up);
    for (std::size_t j = 0; j < up; ++j)
        state.emplace_back(worker_session_options{.prefetch = run.prefetch,
                                                  .prefetch_lead = 2.0 * (2.0 * pl.latency + master_cost),
                                                  .readings_each = !needs.with_every_request.empty(),
                                                  .readings_calibration = !needs.with_calibration.empty()});

    queue events;
    std::uint64_t sequence = 0;
    const auto push = [&](hevent e) {
        e.sequence = sequence++;
        events.push(e);
    };
    std::vector<request_message> mail;
    std::vector<std::size_t> free_mail;
    const auto post = [&](const request_message& m) {
        std::size_t slot = mail.size();
        if (free_mail.empty()) mail.push_back(m);
        else slot = free_mail.back(), free_mail.pop_back(), mail[slot] = m;
        return slot;
    };
    const int top_server = k;
    const auto at = [](double time, int who, hevent::kind what) {
        hevent e;
        e.time = time, e.who = who, e.what = what;
        return e;
    };

    const auto task_end = [&](std::size_t j, task_count i) {
        const auto& s = state[j];
        const auto first = static_cast<std::size_t>(s.session.current().first);
        const double base = (prefix[first + static_cast<std::size_t>(i) + 1] - prefix[first]) * pl.task_times[j];
        return loads[j].changes.empty() ? s.start + base : compute_end(loads[j], s.start, base);
    };
    const auto set_end = [&](std::size_t j, double end) {
        auto& s = state[j];
        s.end = end;
        auto e = at(end, static_cast<int>(j), hevent::kind::chunk_end);
        e.generation = ++s.generation;
        push(e);
    };
    const auto plan_boundary = [&](std::size_t j) {
        const auto& s = state[j];
        const task_count ask = s.session.ask_at();
        if (ask < 0) return;
        auto e = at(task_end(j, ask - s.session.current().first - 1), static_cast<int>(j), hevent::kind::boundary);
        e.generation = s.generation;
        push(e);
    };
    const auto perform = [&](std::size_t j, worker_session::actions actions, double t) {
        for (const worker_action& a : actions) {
            if (a.what == worker_action::kind::compute) {
                state[j].start = t;
                set_end(j, task_end(j, a.work.count - 1));
                plan_boundary(j);
                continue;
            }
            const std::size_t slot = post(a.message);
            if (a.readings) {
                mail[slot].has_sample = true;
                mail[slot].sample = simulated_sample(pl, loads[j], j, t);
            }
            auto e = at(t + pl.latency, static_cast<int>(j), hevent::kind::to_server);
            e.server = master_of[j];
            e.from = local_of[j];
            e.mail = slot;
            e.answer_first = a.message.what == request_message::kind::released;
            push(e);
        }
    };
    const auto victim_answers = [&](std::size_t j, double t, const reply_message& asked) {  // as in simulator.cpp
        auto& s = state[j];
        if (!s.session.computing()) {
            perform(j, s.session.on_reclaim(asked, 0, 0.0), t);
            return;
        }
        const chunk c = s.session.current();
        task_count lo = 0, hi = c.count - 1;
        while (lo < hi) {
            const task_count mid = lo + (hi - lo) / 2;
            if (task_end(j, mid) >= t) hi = mid;
            else lo = mid + 1;
        }
        if (lo == c.count - 1) {
            auto again = at(s.end, static_cast<int>(j), hevent::kind::reclaim);
            again.reply = asked;
            push(again);
            return;
        }
        const double boundary = task_end(j, lo);
        perform(j, s.session.on_reclaim(asked, c.first + lo + 1, (boundary - s.start) / static_cast<double>(lo + 1)), boundary);
        if (s.session.current().count != c.count) {
            set_end(j, task_end(j, s.session.current().count - 1));
            plan_boundary(j);
        }
    };
    // A master's actions: its replies go down to workers, its messages go up; each answer costs master_cost.
    const auto master_acts = [&](int m, const std::vector<master_action>& actions, double now, bool charged) {
        for (const master_action& a : actions) {
            if (a.what == master_action::kind::deliver) continue;
            if (charged) now += master_cost;
            if (a.what == master_action::kind::park) continue;
            if (a.what == master_action::kind::up) {
                auto e = at(now + up_latency, p + m, hevent::kind::to_server);
                e.server = top_server;
                e.from = m;
                e.mail = post(a.message);
                push(e);
                continue;
            }
            const int j = first_of[static_cast<std::size_t>(m)] + a.worker;
            auto e = at(now + pl.latency, j, a.reply.what == reply_message::kind::reclaim ? hevent::kind::reclaim
                                                                                          : hevent::kind::to_worker);
            e.reply = a.reply;
            push(e);
        }
        return now;
    };
    const auto serve = [&](int s, const hevent& m, double now) {
        if (s == top_server) {
            ++out.farmer_messages;
            if (mail[m.mail].what == request_message::kind::ask) ++out.farmer_requests;
            for (const farmer_action& a : top.on_message(m.from, mail[m.mail], now, m.time)) {
                if (a.what == farmer_action::kind::deliver) continue;
                now += top_cost;
                if (a.what == farmer_action::kind::park) continue;
                auto e = at(now + up_latency, p + k, hevent::kind::to_server);
                e.server = a.worker;
                e.from = -1;
                e.reply = a.reply;
                push(e);
            }
            free_mail.push_back(m.mail);
            return now;
        }
        ++out.master_messages;
        auto& master = *masters[static_cast<std::size_t>(s)];
        if (m.from < 0) return master_acts(s, master.on_reply(m.reply, now), now, true);
        const double end = master_acts(s, master.on_message(m.from, mail[m.mail], now, m.time), now, true);
        free_mail.push_back(m.mail);
        return end;
    };

    const auto servers = static_cast<std::size_t>(k + 1);
    std::vector<queue> inbox(servers), answers(servers), replies(servers);  // served replies first, then answers
    std::vector<bool> turn_pending(servers, false);
    std::vector<double> free_at(servers, 0.0);
    const auto turn = [&](int s, double t) {
        auto e = at(t, std::numeric_limits<int>::max() - (k + 1) + s, hevent::kind::turn);
        e.server = s;
        push(e);
        turn_pending[static_cast<std::size_t>(s)] = true;
    };
    for (std::size_t j = 0; j < up; ++j) perform(j, state[j].session.start(), 0.0);
    for (int m = 0; m < k; ++m) master_acts(m, masters[static_cast<std::size_t>(m)]->start(0.0), 0.0, false);

    while (!events.empty()) {
        const hevent e = events.top();
        events.pop();
        const auto j = static_cast<std::size_t>(e.who);
        switch (e.what) {
        case hevent::kind::turn: {
            const auto s = static_cast<std::size_t>(e.server);
            turn_pending[s] = false;
            auto& from = !replies[s].empty() ? replies[s] : !answers[s].empty() ? answers[s] : inbox[s];
            const hevent m = from.top();
            from.pop();
            free_at[s] = serve(e.server, m, e.time);
            if (!inbox[s].empty() || !answers[s].empty() || !replies[s].empty()) turn(e.server, free_at[s]);
            break;
        }
        case hevent::kind::to_server: {
            const auto s = static_cast<std::size_t>(e.server);
            (e.from < 0 ? replies[s] : e.answer_first ? answers[s] : inbox[s]).push(e);
            if (!turn_pending[s]) turn(e.server, std::max(e.time, free_at[s]));
            break;
        }
        case hevent::kind::to_worker:
            perform(j, state[j].session.on_reply(e.reply), e.time);
            break;
        case hevent::kind::chunk_end: {
            auto& s = state[j];
            if (e.generation != s.generation) break;
            perform(j, s.session.on_chunk_done(s.end - s.start, s.start, s.end), e.time);
            break;
        }
        case hevent::kind::reclaim:
            victim_answers(j, e.time, e.reply);
            break;
        case hevent::kind::boundary: {
            auto& s = state[j];
            if (e.generation != s.generation || s.session.ask_at() < 0) break;
            perform(j, s.session.on_boundary(s.session.ask_at()), e.time);
            break;
        }
        }
    }
    bool all_over = top.over() && top.decisions().done();
    for (const auto& m : masters) all_over = all_over && m->over();
    if (!all_over)
        throw internal_error("simulator: the hierarchical farm stopped with " +
                             std::to_string(top.decisions().tasks() - top.decisions().completed_tasks()) +
                             " tasks not completed at the supermaster (technique '" + technique + "', masters' '" +
                             top_name + "')");

    const bool calibrated = needs.calibration != calibration_mode::none;
    std::vector<double> finish(up);
    for (int m = 0; m < k; ++m) {
        const farmer_session& g = masters[static_cast<std::size_t>(m)]->group();
        for (int i = 0; i < groups[static_cast<std::size_t>(m)]; ++i) {
            const auto jj = static_cast<std::size_t>(first_of[static_cast<std::size_t>(m)] + i);
            auto& r = out.workers[jj];
            const auto& sizes = g.chunks_of(i);
            r.chunks = sizes.drop_front(calibrated && !sizes.empty() ? 1 : 0);
            r.tasks = g.tasks_of(i);
            r.finish = finish[jj] = g.finish_of(i);
            out.chunks += static_cast<task_count>(sizes.size());
        }
        for (chunk_trace c : g.records()) {
            c.rank += first_of[static_cast<std::size_t>(m)];
            out.trace.push_back(c);
        }
        out.reclaims += g.decisions().reclaims();
        out.reclaimed_tasks += g.decisions().reclaimed_tasks();
        out.calibration_end = std::max(out.calibration_end, g.calibration_end());
        const auto& master = *masters[static_cast<std::size_t>(m)];
        out.master_requests.push_back(master.up_requests());
        out.master_merged.push_back(master.merged_requests());
        out.master_chunks.push_back(static_cast<task_count>(master.chunks_received().size()));
    }
    std::stable_sort(out.trace.begin(), out.trace.end(), [](const chunk_trace& a, const chunk_trace& b) { return a.sent < b.sent; });
    out.makespan = top.last_result();
    out.percent_imbalance = pfarm::percent_imbalance(finish);
    out.cov = pfarm::coefficient_of_variation(finish);
    out.k = masters[0]->group().decisions().policy().installment_factor();
    return out;
}

}  // namespace model

}  // namespace pfarm::sim
