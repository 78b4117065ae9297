// pfarm simulator: the predictor `auto` asks (pfarm/prediction.hpp): a candidate technique's makespan over the
// platform `auto` measured, simulated by the flat farm of this simulator for each loop profile it considers, and how
// well each profile explains the chunks measured.
#include "pfarm/simulator.hpp"

#include "pfarm/error.hpp"
#include "pfarm/prediction.hpp"
#include "pfarm/registry.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>

namespace pfarm::sim {

namespace {

/// The loop profiles a prediction covers: the cost profile of the tasks left is not known when `auto` chooses, so a
/// candidate is judged on every shape of the simulator, each of mean cost 1: the four of Yang, Cheng & Shih (Fig. 1)
/// and the Mandelbrot columns' (costs concentrated in a band of the loop).
constexpr workload_shape prediction_profiles[] = {workload_shape::uniform, workload_shape::increasing,
                                                  workload_shape::decreasing, workload_shape::random,
                                                  workload_shape::mandelbrot};

/// The bins of the cost profile of a simulated farm that reclaims (farmer::set_profile_bins): the candidates' end
/// games fit it after every chunk, O(bins cubed) a fit, most of a choice's cost at the farm's 64 bins. The farm itself
/// keeps its 64; with 16 in the predictions the choices are as good (docs/techniques/auto.md "Its cost").
constexpr int prediction_profile_bins = 16;

/// The random profile laid over a loop is a realisation of its own, not the one a simulated loop may use (seed 1).
constexpr std::uint64_t laid_random_seed = 0x5eed;

/// Profile `s` laid over a loop of `tasks` tasks, mean cost 1.
std::vector<double> laid_costs(workload_shape s, task_count tasks) {
    workload w;
    w.tasks = tasks;
    w.shape = s;
    w.seed = laid_random_seed;
    return task_costs(w);
}

/// Each worker's seconds per task of cost 1 and the misfit, for chunk costs `cost` (the mean cost of each measured
/// chunk's tasks under the profile).
profile_fit fit_one(const std::vector<measured_chunk>& measured, const std::vector<double>& cost, int workers) {
    const auto p = static_cast<std::size_t>(workers);
    std::vector<double> sum(p, 0.0), weight(p, 0.0);
    std::vector<double> y(measured.size(), 0.0);
    for (std::size_t k = 0; k < measured.size(); ++k) {
        const measured_chunk& m = measured[k];
        const auto w = static_cast<std::size_t>(m.worker);
        const double n = static_cast<double>(m.done.count);
        y[k] = std::log(m.seconds / n / cost[k]);
        sum[w] += n * y[k];
        weight[w] += n;
    }
    profile_fit f;
    f.seconds_per_cost.assign(p, 0.0);
    double slowest = 0.0;
    for (std::size_t w = 0; w < p; ++w)
        if (weight[w] > 0.0) slowest = std::max(slowest, f.seconds_per_cost[w] = std::exp(sum[w] / weight[w]));
    for (double& t : f.seconds_per_cost)
        if (!(t > 0.0)) t = slowest > 0.0 ? slowest : 1.0;
    double squares = 0.0, total = 0.0;
    for (std::size_t k = 0; k < measured.size(); ++k) {
        const auto w = static_cast<std::size_t>(measured[k].worker);
        const double n = static_cast<double>(measured[k].done.count);
        const double r = y[k] - sum[w] / weight[w];
        squares += n * r * r;
        total += n;
    }
    f.misfit = total > 0.0 ? std::sqrt(squares / total) : 0.0;
    return f;
}

/// The profiles laid over a loop, kept between calls: `auto` fits after every few chunks (its drift check) and
/// predicts every candidate on each profile that explains its chunks, and laying a profile over the loop costs as much
/// as the loop's length. Each is made when first asked for; references stay valid (entries are never removed).
class laid_profiles {
public:
    /// Profile `profile`'s costs laid over a loop of `loop_tasks` tasks (the random profile: one realisation).
    const std::vector<double>& costs(std::size_t profile, task_count loop_tasks) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto& c = costs_[{profile, loop_tasks}];
        if (c.empty()) c = laid_costs(prediction_profiles[profile], loop_tasks);
        return c;
    }

    /// The prefix sums of its expected costs: the random profile's expectation is uniform, its realisation is not
    /// the loop's.
    const std::vector<double>& expected_prefix(std::size_t profile, task_count loop_tasks) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto& p = prefix_[{profile, loop_tasks}];
        if (p.empty()) {
            const workload_shape shape = prediction_profiles[profile];
            const std::vector<double> costs =
                laid_costs(shape == workload_shape::random ? workload_shape::uniform : shape, loop_tasks);
            p.assign(costs.size() + 1, 0.0);
            for (std::size_t i = 0; i < costs.size(); ++i) p[i + 1] = p[i] + costs[i];
        }
        return p;
    }

private:
    std::mutex mutex_;
    std::map<std::pair<std::size_t, task_count>, std::vector<double>> costs_, prefix_;
};

}  // namespace

candidate_predictor make_predictor(double overhead, double latency, const run_options& run) {
    run_options flat;
    flat.prefetch = run.prefetch;
    flat.reclaim = run.reclaim;
    flat.farmer_computes = run.farmer_computes;
    flat.profile_bins = prediction_profile_bins;
    candidate_predictor out;
    for (workload_shape s : prediction_profiles) out.profiles.push_back(to_string(s));
    out.request_seconds = overhead;
    out.reclaim = run.reclaim;
    const auto laid = std::make_shared<laid_profiles>();
    out.predict = [overhead, latency, flat, laid](const platform_estimate& measured, task_count tasks, const std::string& name,
                                            const technique_options& options) {
        const int p = static_cast<int>(measured.seconds_per_task.size());
        // A fixed chunk size makes one chunk per `c` tasks: past max_simulated_chunks, the loop is simulated with
        // fewer, heavier tasks and the per-message costs scaled alike, which keeps its work and its farmer's load.
        const task_count fixed = make_technique(name, options, p)->constant_chunk();
        const task_count c = std::max(fixed, options.min_chunk);
        task_count scale = 1;
        if (fixed > 0 && tasks / c > max_simulated_chunks)
            scale = static_cast<task_count>(
                std::ceil(static_cast<double>(tasks) / static_cast<double>(max_simulated_chunks * c)));
        const auto s = static_cast<double>(scale);
        platform pl;
        pl.load_changes = measured.load_changes;
        pl.overhead = overhead * s;
        pl.latency = latency * s;
        workload wl;
        wl.tasks = std::max<task_count>(1, (tasks + scale - 1) / scale);
        std::vector<double> makespans;
        if (measured.profile >= 0) {  // one profile, laid over the loop: the remaining tasks' costs, in groups of scale
            if (measured.profile >= static_cast<int>(std::size(prediction_profiles)) || measured.loop_tasks < tasks)
                throw invalid_argument("platform", "names profile " + std::to_string(measured.profile) + " over " +
                                                       std::to_string(measured.loop_tasks) + " tasks for " +
                                                       std::to_string(tasks) + " remaining");
            const std::vector<double>& all = laid->costs(static_cast<std::size_t>(measured.profile), measured.loop_tasks);
            wl.costs.assign(static_cast<std::size_t>(wl.tasks), 0.0);
            for (task_count i = 0; i < tasks; ++i)
                wl.costs[static_cast<std::size_t>(i / scale)] += all[static_cast<std::size_t>(measured.loop_tasks - tasks + i)];
            pl.task_times = measured.seconds_per_task;
            makespans.push_back(simulate(pl, wl, name, options, flat).makespan);
            return makespans;
        }
        for (double t : measured.seconds_per_task) pl.task_times.push_back(t * s);
        for (workload_shape shape : prediction_profiles) {
            wl.shape = shape;
            makespans.push_back(simulate(pl, wl, name, options, flat).makespan);
        }
        return makespans;
    };
    out.fit = [laid](const std::vector<measured_chunk>& measured,
                                                               task_count loop_tasks, int workers) {
        std::vector<profile_fit> fits;
        std::vector<measured_chunk> usable;
        for (const measured_chunk& m : measured)
            if (m.done.count > 0 && m.seconds > 0.0 && m.done.first >= 0 && m.done.first + m.done.count <= loop_tasks &&
                m.worker >= 0 && m.worker < workers)
                usable.push_back(m);
        if (usable.empty() || loop_tasks <= 0) return fits;
        for (std::size_t profile = 0; profile < std::size(prediction_profiles); ++profile) {
            const std::vector<double>& prefix = laid->expected_prefix(profile, loop_tasks);
            std::vector<double> chunk_cost;
            bool positive = true;
            for (const measured_chunk& m : usable) {
                const auto a = static_cast<std::size_t>(m.done.first), b = a + static_cast<std::size_t>(m.done.count);
                chunk_cost.push_back((prefix[b] - prefix[a]) / static_cast<double>(m.done.count));
                positive = positive && chunk_cost.back() > 0.0;
            }
            if (!positive) {  // a profile that says the measured tasks cost nothing cannot explain their times
                fits.push_back({std::vector<double>(static_cast<std::size_t>(workers), 1.0),
                                std::numeric_limits<double>::infinity()});
                continue;
            }
            fits.push_back(fit_one(usable, chunk_cost, workers));
        }
        return fits;
    };
    return out;
}

}  // namespace pfarm::sim
