// pfarm simulator: the predictor `auto` asks (pfarm/prediction.hpp): a candidate technique's makespan over the
// platform `auto` measured, simulated by the flat farm of this simulator for each loop profile it considers.
#include "pfarm/simulator.hpp"

#include "pfarm/prediction.hpp"
#include "pfarm/registry.hpp"

#include <algorithm>
#include <cmath>

namespace pfarm::sim {

namespace {

/// The loop profiles a prediction covers: the cost profile of the tasks left is not known when `auto` chooses, so a
/// candidate is judged on every shape of the simulator, each of mean cost 1: the four of Yang, Cheng & Shih (Fig. 1)
/// and the Mandelbrot columns' (costs concentrated in a band of the loop).
constexpr workload_shape prediction_profiles[] = {workload_shape::uniform, workload_shape::increasing,
                                                  workload_shape::decreasing, workload_shape::random,
                                                  workload_shape::mandelbrot};

}  // namespace

candidate_predictor make_predictor(double overhead, double latency, const run_options& run) {
    run_options flat;
    flat.prefetch = run.prefetch;
    flat.reclaim = run.reclaim;
    flat.farmer_computes = run.farmer_computes;
    candidate_predictor out;
    for (workload_shape s : prediction_profiles) out.profiles.push_back(to_string(s));
    out.predict = [overhead, latency, flat](const platform_estimate& measured, task_count tasks, const std::string& name,
                                            const technique_options& options) {
        const int p = static_cast<int>(measured.seconds_per_task.size());
        // A fixed chunk size makes one chunk per `c` tasks: past max_simulated_chunks, the loop is simulated with
        // fewer, heavier tasks and the per-message costs scaled alike, which keeps its work and its farmer's load.
        const task_count fixed = make_technique(name, options, p)->constant_chunk();
        const task_count c = std::max(fixed, options.min_chunk);
        double scale = 1.0;
        if (fixed > 0 && tasks / c > max_simulated_chunks)
            scale = std::ceil(static_cast<double>(tasks) / static_cast<double>(max_simulated_chunks * c));
        platform pl;
        for (double t : measured.seconds_per_task) pl.task_times.push_back(t * scale);
        pl.load_changes = measured.load_changes;
        pl.overhead = overhead * scale;
        pl.latency = latency * scale;
        workload wl;
        wl.tasks = std::max<task_count>(1, static_cast<task_count>(std::ceil(static_cast<double>(tasks) / scale)));
        std::vector<double> makespans;
        for (workload_shape s : prediction_profiles) {
            wl.shape = s;
            makespans.push_back(simulate(pl, wl, name, options, flat).makespan);
        }
        return makespans;
    };
    return out;
}

}  // namespace pfarm::sim
