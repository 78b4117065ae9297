// pfarm MPI engine, the hierarchical farm: rank 0, the supermaster. It makes the farmer session (the hierarchy plan's,
// pfarm/hierarchy_plan.hpp) whose workers are the masters, with its own technique (farm_options::topology.master_technique;
// default pfarm::default_master_technique, options pfarm::master_options), and runs it on the farmer's MPI transport
// (farmer_transport.hpp) over the upper communicator (rank 0 and the masters, in rank order). With
// farm_options::topology.farmer_computes it computes too, as the flat farmer does: its own worker is worker 0 of its
// session, one more unit beside the masters (a group of one: its chunks come from the supermaster's technique,
// weighted as one worker). A master's failure message carries the failed rank (the worker's, or the master's own),
// which the outcome names, so that every rank throws what the flat farmer's ranks throw. Once the farm is over and
// good, rank 0's report is gathered from the masters (report.cpp).
// With on_worker_loss (docs/reliability.md "A lost worker") a master may be lost: its session presumes a master
// lost by the flat farmer's rule (a master is one of its workers; a living master is never silent that long:
// master_session.hpp), and its chunks go to the other masters. The farm then ends point to point (end_living): each
// living master sends the ranks of its group it presumed lost, rank 0 sends the outcome, with every lost rank, to
// the living masters (each passes it on to its group), and to the workers of each master presumed lost directly,
// on the farm's communicator (their wait for their master's reply takes it: worker_side.cpp). A worker lost with its
// master (a node lost whole) is seen by nobody else, so rank 0 asks: it sends those workers the outcome first,
// each living one answers (tag_alive), and one that does not answer within the wait is lost too; then the final
// outcome, naming it, goes to the living masters and to every one of those workers (in case it lives after all).
// The report's parts come from the living masters.
#include "hierarchical.hpp"

#include "farmer_transport.hpp"
#include "messages.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace pfarm::detail {

namespace {

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

/// With on_worker_loss, the end of the farm over the living ranks, no collective: `lost_up` (upper ranks of the masters
/// presumed lost) grows by each master whose list of lost ranks does not come within `wait` seconds (gone after its
/// last results); the outcome `o` gets every lost rank (the masters, then each group's, in group order) and goes to the
/// living masters, and to the workers of the lost ones on `comm`.
void end_living(MPI_Comm comm, MPI_Comm up, const rank_layout& h, outcome& o, std::vector<int>& lost_up, double wait) {
    std::vector<int> from_groups;
    for (int g = 0; g < h.groups(); ++g) {
        const int q = g + 1;  // master g's upper rank
        if (contains(lost_up, q)) continue;
        MPI_Status status;
        if (!probe_until(up, q, tag_lost, wait, status)) {
            lost_up.push_back(q);
            continue;
        }
        int count = 0;
        mpi::check(MPI_Get_count(&status, MPI_INT, &count), "MPI_Get_count");
        std::vector<int> ranks(static_cast<std::size_t>(count));
        mpi::check(MPI_Recv(ranks.data(), count, MPI_INT, q, tag_lost, up, MPI_STATUS_IGNORE), "MPI_Recv");
        from_groups.insert(from_groups.end(), ranks.begin(), ranks.end());
    }
    o.lost.clear();
    std::vector<int> orphans;  // the workers of the masters presumed lost
    for (int q : lost_up) {
        const auto g = static_cast<std::size_t>(q - 1);
        o.lost.push_back(h.master[g]);
        for (int r : h.members[g])
            if (r != h.master[g]) orphans.push_back(r);
    }
    if (!orphans.empty()) {  // which of them live: each living one answers the outcome (worker_side.cpp)
        send_outcome_detached(comm, o, orphans);
        std::vector<int> silent = orphans;
        const double until = now() + wait;
        while (!silent.empty() && now() < until) {
            std::erase_if(silent, [comm](int r) {
                int flag = 0, alive = 0;
                mpi::check(MPI_Iprobe(r, tag_alive, comm, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
                if (flag) mpi::check(MPI_Recv(&alive, 1, MPI_INT, r, tag_alive, comm, MPI_STATUS_IGNORE), "MPI_Recv");
                return flag != 0;
            });
            if (!silent.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        o.lost.insert(o.lost.end(), silent.begin(), silent.end());
    }
    o.lost.insert(o.lost.end(), from_groups.begin(), from_groups.end());
    end_among_living(up, o, lost_up);
    send_outcome_detached(comm, o, orphans);
}

}  // namespace

farm_report run_supermaster(const farm_run& run, MPI_Comm up, const rank_layout& h, const hierarchy_plan& plan,
                            bool keep_records, double cpu0) {
    const MPI_Comm comm = run.comm;
    const int ranks = run.ranks;
    const farm_options& options = run.options;
    const shared_setup& setup = run.setup;
    const double t0 = run.t0;
    // The plan's session over the masters, on rank 0's clock; with a trace it keeps records of its own worker's
    // chunks (the trace's rank 0) and of the masters' (the report's master_trace). Its own worker's task errors go
    // to it as any worker's (the masters handle their workers').
    // With on_worker_loss a master is presumed lost by the flat farmer's rule; its own worker never.
    const bool losing = setup.config.worker_loss != 0;
    farmer_session_options o = plan.top_session();
    o.keep_records = keep_records;
    o.task_errors = task_errors_of(setup.config);
    o.clock = [t0] { return now() - t0; };
    o.worker_loss = worker_loss_of(setup.config);
    o.own_worker = plan.top_computes() ? 0 : -1;
    farmer_session session(setup.config.tasks, plan.units(), plan.make_top(), o);
    // Worker w is upper rank w + first: its own worker (rank 0) first when it computes, then the masters. Their times
    // are on rank 0's clock already; a failure names the rank its message carries (a master's by default), or 0.
    farmer_ranks at{.comm = up,
                    .first = 1 - plan.own(),
                    .offsets = std::vector<double>(static_cast<std::size_t>(h.groups()) + 1, 0.0),
                    .named = {},
                    .failure_names_rank = true,
                    .reclaim = false,
                    .may_lose = losing,
                    .driver_ends = losing};  // once the living masters have said whom they lost
    if (plan.own() != 0) at.named.push_back(0);
    at.named.insert(at.named.end(), h.master.begin(), h.master.end());
    farmer_transport_result done =
        run_farmer_transport(at, session, run);
    if (!losing) {
        if (done.result.what != farm_outcome::kind::ok) throw_outcome(done.result);
        return gather_report(up, options, ranks, setup.config.tasks, h, session, done.requests, cpu0);
    }
    // A master is given twice the slack to end its group (a worker there may owe a message for the slack).
    const double wait = 2.0 * worker_loss_of(setup.config).slack;
    std::vector<int> lost_up = done.lost_in_comm;
    end_living(comm, up, h, done.result, lost_up, wait);
    if (done.result.what != farm_outcome::kind::ok) throw_outcome(done.result);
    std::vector<int> living;
    for (int q = 1; q <= h.groups(); ++q)
        if (!contains(lost_up, q)) living.push_back(q);
    farm_report r = gather_report(up, options, ranks, setup.config.tasks, h, session, done.requests, cpu0, &living, wait);
    r.lost_ranks = done.result.lost;
    return r;
}

}  // namespace pfarm::detail
