// pfarm MPI engine, the hierarchical farm: rank 0, the supermaster. It makes the farmer session (the hierarchy plan's,
// pfarm/hierarchy_plan.hpp) whose workers are the masters, with its own technique (farm_options::topology.master_technique;
// default pfarm::default_master_technique, options pfarm::master_options), and runs it on the farmer's MPI transport
// (farmer_transport.hpp) over the upper communicator (rank 0 and the masters, in rank order). With
// farm_options::topology.farmer_computes it computes too, as the flat farmer does: its own worker is worker 0 of its
// session, one more unit beside the masters (a group of one: its chunks come from the supermaster's technique,
// weighted as one worker). A master's failure message carries the failed rank (the worker's, or the master's own),
// which the outcome names, so that every rank throws what the flat farmer's ranks throw. Once the farm is over and
// good, rank 0's report is gathered from the masters (report.cpp), with the worker ranks they presumed lost
// (on_worker_loss). The masters themselves are not presumed lost: the upper level ends with collectives.
#include "hierarchical.hpp"

#include "farmer_transport.hpp"

namespace pfarm::detail {

farm_report run_supermaster(MPI_Comm up, int ranks, const std::byte* in, std::byte* out, const task_kernel& kernel,
                            const farm_options& options, const shared_setup& setup, const rank_layout& h,
                            const hierarchy_plan& plan, double t0, sampler& monitors, bool keep_records, double cpu0) {
    // The plan's session over the masters, on rank 0's clock; it keeps records of its own worker's chunks only (the
    // trace's rank 0). Its own worker's task errors go to it as any worker's (the masters handle their workers').
    farmer_session_options o = plan.top_session();
    o.keep_records = keep_records && h.computes;
    o.task_errors = task_errors_of(setup.config);
    o.clock = [t0] { return now() - t0; };
    farmer_session session(setup.config.tasks, plan.units(), plan.make_top(), o);
    // Worker w is upper rank w + first: its own worker (rank 0) first when it computes, then the masters. Their times
    // are on rank 0's clock already; a failure names the rank its message carries (a master's by default), or 0.
    farmer_ranks at{.comm = up,
                    .first = 1 - plan.own(),
                    .offsets = std::vector<double>(static_cast<std::size_t>(h.groups()) + 1, 0.0),
                    .named = {},
                    .failure_names_rank = true,
                    .reclaim = false,
                    .may_lose = false};  // a master is not presumed lost
    if (plan.own() != 0) at.named.push_back(0);
    at.named.insert(at.named.end(), h.master.begin(), h.master.end());
    farmer_transport_result done =
        run_farmer_transport(at, session, in, out, kernel, setup, options.output.progress, monitors, t0,
                             options.protocol.side_channel);
    // on_worker_loss: the ranks the masters presumed lost, learned here as on every rank of the upper level.
    if (setup.config.worker_loss != 0) done.result.lost = share_lost(up, {});
    if (done.result.what != farm_outcome::kind::ok) throw_outcome(done.result);
    farm_report r = gather_report(up, options, ranks, setup.config.tasks, h, session, done.requests, cpu0);
    r.lost_ranks = done.result.lost;
    return r;
}

}  // namespace pfarm::detail
