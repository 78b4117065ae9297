// pfarm scheduling core: what the `auto` technique asks of its driver (a makespan predictor over the platform it
// measured) and what it records of its choices (docs/techniques/auto.md).
//
// `auto` chooses a technique by simulating the candidates over the platform it measured. The simulator is not part of
// the core (it drives the core: skeleton/sim), so the core defines only the question and the answer's form: a driver
// that can simulate hands the farmer a predictor (farmer_session_options::predictor), which the technique reads from
// its schedule_context. The predictor knows what the technique cannot see: the farm's transport (latency, the
// farmer's service time per request), its protocol (reclaim, prefetch, min_chunk), and the loop profiles it
// considers.
#pragma once

#include "pfarm/emulation.hpp"
#include "pfarm/technique.hpp"

#include <functional>
#include <string>
#include <vector>

namespace pfarm {

/// The platform as `auto` measured it: each worker's seconds per task (over its calibration chunks and the chunks it
/// completed since), > 0.
struct platform_estimate {
    std::vector<double> seconds_per_task;
    /// Load changes to assume (time from the choice on): a scenario of what the measurement cannot foresee.
    std::vector<load_change> load_changes;
    /// -1: every profile, each stretched over the remaining tasks with mean cost 1 (the measured tasks' costs say
    /// nothing of the rest). Else the one profile of this index (candidate_predictor::profiles), laid over the whole
    /// loop of `loop_tasks` tasks with the remaining ones at its end, and seconds_per_task a worker's seconds per task
    /// of cost 1 (the loop's mean cost): the profile_fit of the chunks measured.
    int profile = -1;
    task_count loop_tasks = 0;
};

/// A chunk a worker completed: where it lay in the loop, and its compute time.
struct measured_chunk {
    int worker = 0;
    chunk done;
    double seconds = 0.0;
};

/// How one loop profile explains the chunks measured: each worker's seconds per task of cost 1 fitted to them (the
/// profile laid over the whole loop), and the root mean square of the log of measured over fitted chunk times,
/// weighted by task count.
struct profile_fit {
    std::vector<double> seconds_per_cost;
    double misfit = 0.0;
};

/// The makespans candidate `technique` (with `options`) is predicted to take over `tasks` remaining tasks on
/// `platform`: with platform.profile -1, one per loop profile the predictor considers, always in the same order and of
/// the same count; else the one over that profile (docs/techniques/auto.md "The model"). Throws what make_technique
/// throws for a candidate it cannot build.
using makespan_predictor = std::function<std::vector<double>(
    const platform_estimate& platform, task_count tasks, const std::string& technique, const technique_options& options)>;

/// What a driver that can simulate gives the farmer (farmer_session_options::predictor), and the farmer each start()
/// (schedule_context::predictor).
struct candidate_predictor {
    makespan_predictor predict;
    /// Each profile's fit (in the order of `profiles`) to the chunks measured over a loop of `loop_tasks` tasks with
    /// `workers` workers; a worker without a chunk gets the slowest fitted seconds per cost.
    std::function<std::vector<profile_fit>(const std::vector<measured_chunk>& measured, task_count loop_tasks,
                                           int workers)>
        fit;
    /// The profiles' names, in the order of predict's answer ("uniform", "increasing", ...), for the report.
    std::vector<std::string> profiles;
    /// The farmer's seconds to serve one request, as the predictions take it: `auto` sizes its measuring chunks so
    /// that serving them does not hold the workers up (docs/techniques/auto.md "What it does").
    double request_seconds = 0.0;
    /// Whether the farm takes back unstarted tasks (reclaim): only then does `auto` make a probe larger than its first,
    /// since a chunk too large for its worker is then given back in part.
    bool reclaim = false;
};

/// One choice of `auto`: when, what, and why.
struct technique_choice {
    task_count remaining = 0;  ///< tasks unassigned when it chose
    int round = 0;             ///< 0: the first choice; n: the n-th choice again after the speeds drifted
    std::string chosen;        ///< the registry name of the technique it went on with
    /// The chosen one's worst ratio to the best over the cases it was judged on, each of the whole run's predicted
    /// makespan (the seconds the workers computed so far, per worker, plus the prediction of the rest).
    double predicted = 0.0;
    /// Every candidate considered with its worst such ratio (>= 1), in registry order.
    std::vector<std::pair<std::string, double>> candidates;
    double seconds = 0.0;      ///< the wall-clock time the choice took (the simulations)
    std::string why;           ///< "calibrated", or which worker's speed drifted by how much
};

}  // namespace pfarm
