// pfarm MPI engine: rank 0 of the flat farm. It makes the farmer session over every other rank (and its own worker
// when the farmer computes): the technique, the stragglers' timer, the learned schedule (no calibration tasks); runs
// it on the farmer's MPI transport (farmer_transport.hpp), worker w being rank w + first; and builds rank 0's report
// from the session, learning the schedule for the next run.
#include "engine.hpp"
#include "farmer_transport.hpp"

#include "pfarm/farmer_session.hpp"
#include "pfarm/simulator.hpp"

#include <algorithm>
#include <optional>

namespace pfarm::detail {

namespace {

/// Rank 0's report from its session once the farm is over and good (the trace file is written by run_farm,
/// farm.cpp), the schedule learned from it.
farm_report report_of(const farmer_session& session, const farm_options& options, int ranks, int first,
                      const shared_setup& setup, const std::optional<calibration_result>& learned, task_count requests,
                      double farmer_cpu) {
    farm_report r = empty_report(options, ranks, setup.config.tasks);
    r.farmer_requests = requests;
    std::vector<int> computing;  // worker w is rank w + first
    for (int w = 0; w < session.workers(); ++w) computing.push_back(w + first);
    add_part(r, part_of(session, computing));
    r.workers = session.workers();
    r.makespan = session.last_result();
    r.farmer_cpu_seconds = farmer_cpu;
    const farmer& f = session.decisions();
    finish_report(r, computing, trace_order::sent);
    r.learned = learned.has_value();
    for (int w : session.lost()) r.lost_ranks.push_back(w + first);
    if (options.schedule.learned)  // per worker: the report's per-rank entries from worker 0's rank on
        options.schedule.learned->learn(f.policy().needs_calibration(), !learned,
                                        {r.tasks_per_rank.begin() + first, r.tasks_per_rank.end()},
                                        {r.busy_per_rank.begin() + first, r.busy_per_rank.end()});
    return r;
}

}  // namespace

farm_report run_farmer_side(const farm_run& run, std::unique_ptr<technique> policy) {
    const shared_setup& setup = run.setup;
    const farm_options& options = run.options;
    const double t0 = run.t0, round_trip = run.round_trip;
    const int first = setup.config.farmer_computes ? 0 : 1;  // rank of worker 0: rank 0's own worker when it computes
    const int workers = run.ranks - first;
    // From farm_options::schedule.learned: no calibration tasks.
    const std::optional<calibration_result> learned =
        options.schedule.learned ? options.schedule.learned->start(policy->needs_calibration(), workers, setup.config.tasks)
                                 : std::nullopt;
    // `auto`'s candidates are simulated over this farm's measured round trip: half of it each way, and as much again
    // for the farmer's service of a request (docs/techniques/auto.md "The model").
    sim::run_options protocol;
    protocol.prefetch = setup.config.prefetch != 0;
    protocol.reclaim = setup.config.reclaim != 0;
    protocol.farmer_computes = first == 0;  // served between two tasks of this rank's own: the prediction waits alike
    const candidate_predictor predictor = sim::make_predictor(round_trip / 2.0, round_trip / 2.0, protocol);
    farmer_session session(setup.config.tasks, workers, std::move(policy),
                           {.min_chunk = options.schedule.parameters.min_chunk,
                            .prefetch = setup.config.prefetch != 0,
                            .reclaim = setup.config.reclaim != 0,
                            .request_cost = round_trip,
                            .keep_records = !options.output.trace.empty() || options.output.record_trace,
                            .learned = learned ? &*learned : nullptr,
                            .calibration_span = setup.config.calibration_span,
                            // A chunk is overdue past its predicted time x factor plus a few round trips (at least 1 ms).
                            .stragglers = {setup.config.straggler_factor, std::max(4.0 * round_trip, 1e-3)},
                            .task_errors = task_errors_of(setup.config),
                            .clock = [t0] { return now() - t0; },
                            .worker_loss = worker_loss_of(setup.config),
                            .own_worker = first == 0 ? 0 : -1,
                            .predictor = &predictor});
    farmer_ranks at{.comm = run.comm, .first = first, .offsets = run.offsets, .named = {},
                    .failure_names_rank = false, .reclaim = setup.config.reclaim != 0,
                    .may_lose = setup.config.worker_loss != 0, .driver_ends = false};
    for (int w = 0; w < workers; ++w) at.named.push_back(w + first);  // a worker's failure names its rank
    const double cpu0 = cpu_seconds();
    const farmer_transport_result done = run_farmer_transport(at, session, run);
    if (done.result.what != farm_outcome::kind::ok) throw_outcome(done.result);
    return report_of(session, options, run.ranks, first, setup, learned, done.requests, cpu_seconds() - cpu0);
}

}  // namespace pfarm::detail
