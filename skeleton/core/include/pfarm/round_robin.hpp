// pfarm scheduling core: the chunk sequence of a technique under round-robin requests (pfarm-chunks).
#pragma once

#include "pfarm/calibration.hpp"
#include "pfarm/sample.hpp"
#include "pfarm/technique.hpp"

#include <span>

#include <optional>
#include <string>
#include <vector>

namespace pfarm {

/// One hand-out of a round-robin schedule.
struct handout {
    int worker = 0;
    chunk work;
    bool calibration = false;
};

struct round_robin_schedule {
    std::vector<handout> handouts;  ///< in hand-out order, calibration tasks included
    std::optional<double> k;        ///< the technique's installment factor, where it has one
    std::optional<calibration_result> calibration;  ///< F, CV, k of eq. 8, when the technique calibrated
};

/// Drives a farmer_session with requests arriving round-robin (worker 0, 1, ..., p-1, 0, ...): in each round
/// every worker still active sends the results of its chunk, which took count x options.times[w] (1 when no
/// times are given), with its next request, in index order (a parked worker is asked again by the session). `samples` (one per worker, or none) are the
/// monitor readings that statistical calibration fits the times to. Throws invalid_argument on bad input, naming
/// "iterations", "workers", "samples" or a technique option by its field name ("min_chunk"). `predictor`: the
/// simulator `auto` chooses with (pfarm/prediction.hpp); without one, `auto` is refused naming "technique".
round_robin_schedule schedule_round_robin(const std::string& technique, task_count iterations, int workers,
                                          const technique_options& options,
                                          std::span<const resource_sample> samples = {},
                                          const candidate_predictor* predictor = nullptr);

}  // namespace pfarm
