// Drives the farmer state machine with round-robin requests: the chunk sequence pfarm-chunks prints.
#include "pfarm/round_robin.hpp"

#include "pfarm/error.hpp"
#include "pfarm/farmer_session.hpp"
#include "pfarm/registry.hpp"

namespace pfarm {

namespace {
constexpr std::size_t max_handouts = std::size_t{1} << 22;  ///< chunks a schedule may hold (32 bytes each: 128 MiB)
}  // namespace

round_robin_schedule schedule_round_robin(const std::string& technique, task_count iterations, int workers,
                                          const technique_options& options,
                                          std::span<const resource_sample> samples,
                                          const candidate_predictor* predictor) {
    check_task_count(iterations, "iterations");
    if (workers < 1) throw invalid_argument("workers", "is " + std::to_string(workers) + "; expected >= 1");
    if (!samples.empty() && static_cast<long>(samples.size()) != workers)
        throw invalid_argument("samples", "has " + std::to_string(samples.size()) + " entries; expected one per worker (" +
                                              std::to_string(workers) + ")");
    farmer_session f(iterations, workers, make_technique(technique, options, workers), {.min_chunk = options.min_chunk, .stragglers = {}, .task_errors = {}, .clock = {}, .worker_loss = {}, .own_worker = -1, .predictor = predictor});
    const auto p = static_cast<std::size_t>(workers);
    std::vector<chunk> outstanding(p);
    std::vector<bool> asking(p, true), parked(p, false);
    round_robin_schedule out;
    const auto perform = [&](const std::vector<farmer_action>& actions) {
        for (const farmer_action& a : actions) {
            const auto w = static_cast<std::size_t>(a.worker);
            parked[w] = a.what == farmer_action::kind::park;
            if (a.what != farmer_action::kind::send) continue;
            if (a.reply.what == reply_message::kind::assign) {
                if (out.handouts.size() == max_handouts)  // every chunk is kept: a bound, not an exhausted memory
                    throw invalid_argument("iterations", "is " + std::to_string(iterations) + ": " + technique +
                                                             " hands out more than " + std::to_string(max_handouts) +
                                                             " chunks; expected a schedule of fewer chunks");
                out.handouts.push_back({a.worker, a.reply.work, a.reply.calibration});
                outstanding[w] = a.reply.work;
            } else {
                asking[w] = false;  // stop
            }
        }
    };
    while (!f.over()) {
        bool any = false;
        for (std::size_t w = 0; w < p; ++w) {  // each worker still active sends its results and asks, in turn
            if (!asking[w] || parked[w]) continue;  // a parked worker is answered by the session
            any = true;
            request_message m;
            m.done = outstanding[w];
            if (m.done.count > 0) {
                m.seconds = static_cast<double>(m.done.count) * (options.times.empty() ? 1.0 : options.times[w]);
                if (!samples.empty()) m.has_sample = true, m.sample = samples[w];
            }
            outstanding[w] = {};
            perform(f.on_message(static_cast<int>(w), m, 0.0));
        }
        if (!any && !f.over())
            throw internal_error("round robin: no worker asks with " + std::to_string(f.decisions().remaining()) +
                                 " tasks unassigned");
    }
    const farmer& decisions = f.decisions();
    out.k = decisions.policy().installment_factor();
    if (decisions.calibration() != nullptr) out.calibration = *decisions.calibration();
    return out;
}

}  // namespace pfarm
