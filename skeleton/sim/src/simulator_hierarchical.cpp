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
//   - Metrics: the makespan is when the supermaster holds the last result; the workers' entries, imbalance, COV,
//     k (group 0's technique) and the trace are the report merged from the masters' parts (group_part,
//     pfarm/report_merge.hpp, as the MPI driver's; no calibration: each group's is its own); calibration_end is the
//     last group's barrier; the fluid bound is over the workers (masters and supermaster compute nothing).
#include "pfarm/hierarchy_plan.hpp"
#include "pfarm/master_session.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/report_merge.hpp"

#include "simulated_worker.hpp"
#include "simulator_events.hpp"
#include "simulator_model.hpp"

#include <algorithm>
#include <memory>

namespace pfarm::sim {

namespace model {

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
                                         .pool = true, .stragglers = {}, .task_errors = {}, .clock = {}, .worker_loss = {}, .own_worker = -1}});
    std::vector<int> master_of(up), local_of(up);
    for (int m = 0; m < k; ++m) {
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

    event_queue events;
    // A worker is served by its master (server m, 0..K-1), known to it by its index in its group; the supermaster
    // is server K.
    std::vector<worker_route> routes(up);
    for (std::size_t j = 0; j < up; ++j) routes[j] = {master_of[j], local_of[j]};
    simulated_workers workers(pl, costs, needs, run.prefetch, master_cost, std::move(routes), events);
    result out = result_for(pl, workers.total_work());
    const int top_server = k;

    // A master's actions: its replies go down to workers, its messages go up; each answer costs master_cost.
    const auto master_acts = [&](int m, const std::vector<master_action>& actions, double now, bool charged) {
        for (const master_action& a : actions) {
            if (a.what == master_action::kind::deliver) continue;
            if (charged) now += master_cost;
            if (a.what == master_action::kind::park) continue;
            if (a.what == master_action::kind::up) {
                auto e = event::at(now + up_latency, p + m, event::kind::to_server);
                e.server = top_server;
                e.from = m;
                e.mail = events.post(a.message);
                events.push(e);
                continue;
            }
            const int j = plan.members(m).at(static_cast<std::size_t>(a.worker));
            auto e = event::at(now + pl.latency, j, a.reply.what == reply_message::kind::reclaim ? event::kind::reclaim
                                                                                                 : event::kind::to_worker);
            e.reply = a.reply;
            events.push(e);
        }
        return now;
    };
    // Server s serves message m from `now`: the supermaster with its farmer session (each answer top_cost), a
    // master with its master session. Returns when the server is free again.
    const auto serve = [&](const event& m, double now) {
        const int s = m.server;
        if (s == top_server) {
            const request_message& message = events.mail(m.mail);
            ++out.farmer_messages;
            if (message.what == request_message::kind::ask) ++out.farmer_requests;
            for (const farmer_action& a : top.on_message(m.from, message, now, m.time)) {
                if (a.what == farmer_action::kind::deliver) continue;
                now += top_cost;
                if (a.what == farmer_action::kind::park) continue;
                auto e = event::at(now + up_latency, p + k, event::kind::to_server);
                e.server = a.worker;
                e.from = -1;
                e.reply = a.reply;
                events.push(e);
            }
            events.release(m.mail);
            return now;
        }
        ++out.master_messages;
        auto& master = *masters[static_cast<std::size_t>(s)];
        if (m.from < 0) return master_acts(s, master.on_reply(m.reply, now), now, true);
        const double end = master_acts(s, master.on_message(m.from, events.mail(m.mail), now, m.time), now, true);
        events.release(m.mail);
        return end;
    };

    servers service(k + 1);  // masters 0..K-1, the supermaster K
    for (std::size_t j = 0; j < up; ++j) workers.start(j, 0.0);
    for (int m = 0; m < k; ++m) master_acts(m, masters[static_cast<std::size_t>(m)]->start(0.0), 0.0, false);

    while (!events.empty()) {
        const event e = events.pop();
        if (e.what == event::kind::to_server) service.arrive(e, events);
        else if (e.what == event::kind::turn) service.turn(e, events, serve);
        else workers.handle(e);
    }
    bool all_over = top.over() && top.decisions().done();
    for (const auto& m : masters) all_over = all_over && m->over();
    if (!all_over)
        throw internal_error("simulator: the hierarchical farm stopped with " +
                             std::to_string(top.decisions().tasks() - top.decisions().completed_tasks()) +
                             " tasks not completed at the supermaster (technique '" + technique + "', masters' '" +
                             top_name + "')");

    // Its report: each master's part (its group's session), merged in group order (k: group 0's, as under MPI).
    std::vector<report_part> parts;
    for (int m = 0; m < k; ++m) {
        const auto& master = *masters[static_cast<std::size_t>(m)];
        parts.push_back(group_part(master, plan.members(m), 0));  // (served: master_messages counts them all)
        out.calibration_end = std::max(out.calibration_end, master.group().calibration_end());
        out.master_requests.push_back(master.up_requests());
        out.master_merged.push_back(master.merged_requests());
        out.master_chunks.push_back(static_cast<task_count>(master.chunks_received().size()));
    }
    merge_report(out, parts, trace_order::sent);
    out.makespan = top.last_result();
    return out;
}

}  // namespace model

}  // namespace pfarm::sim
