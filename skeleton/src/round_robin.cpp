// Drives the farmer state machine with round-robin requests: the chunk sequence pfarm-chunks prints.
#include "pfarm/round_robin.hpp"

#include "pfarm/error.hpp"
#include "pfarm/farmer.hpp"
#include "pfarm/registry.hpp"

namespace pfarm {

round_robin_schedule schedule_round_robin(const std::string& technique, task_count iterations, int workers,
                                          const technique_options& options,
                                          std::span<const resource_sample> samples) {
    if (iterations < 1)
        throw invalid_argument("--iterations", "is " + std::to_string(iterations) + "; expected >= 1");
    if (workers < 1) throw invalid_argument("--workers", "is " + std::to_string(workers) + "; expected >= 1");
    if (!samples.empty() && static_cast<long>(samples.size()) != workers)
        throw invalid_argument("samples", "has " + std::to_string(samples.size()) + " entries; expected one per worker (" +
                                              std::to_string(workers) + ")");
    farmer f(iterations, workers, make_technique(technique, options, workers), options.min_chunk);
    const auto p = static_cast<std::size_t>(workers);
    std::vector<task_count> outstanding(p, 0);
    std::vector<bool> stopped(p, false);
    round_robin_schedule out;
    while (!f.done()) {
        bool busy = false;
        for (std::size_t w = 0; w < p; ++w) {
            if (outstanding[w] == 0) continue;
            const double per_task = options.times.empty() ? 1.0 : options.times[w];
            f.complete(static_cast<int>(w), static_cast<double>(outstanding[w]) * per_task,
                       samples.empty() ? nullptr : &samples[w]);
            outstanding[w] = 0;
        }
        for (std::size_t w = 0; w < p; ++w) {
            if (stopped[w]) continue;
            const decision d = f.request(static_cast<int>(w));
            if (d.what == decision::kind::assign) {
                out.handouts.push_back({static_cast<int>(w), d.work, d.calibration});
                outstanding[w] = d.work.count;
                busy = true;
            } else if (d.what == decision::kind::stop) {
                stopped[w] = true;
            }
        }
        if (!busy && !f.done() && !f.calibrating())
            throw internal_error("round robin: no worker got work with " + std::to_string(f.remaining()) +
                                 " tasks unassigned");
    }
    out.k = f.policy().installment_factor();
    if (f.calibration() != nullptr) out.calibration = *f.calibration();
    return out;
}

}  // namespace pfarm
