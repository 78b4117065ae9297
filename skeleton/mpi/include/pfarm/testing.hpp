// pfarm testing support: emulated heterogeneity for the farm (farm_options::emulation), so tests and benchmarks
// make ranks slower, or change their speed during a run, on one machine. Not meant for production runs: real
// heterogeneity and load are measured, never declared.
#pragma once

#include "pfarm/emulation.hpp"

#include <memory>
#include <utility>
#include <vector>

namespace pfarm::testing {

/// Rank r sleeps (slowdown[r] - 1) x the compute time of each chunk, freeing its core; from `time` seconds after
/// the farm started, rank `worker` of a load change runs `factor` times slower (pfarm/emulation.hpp). An empty
/// list takes the environment's (PFARM_SLOWDOWN="f0,f1,...", PFARM_LOAD_CHANGES="rank:time:factor,...").
/// The farm checks both (factors >= 1, at most one per rank; load changes as check_load_change).
struct emulation {
    std::vector<double> slowdown;
    std::vector<load_change> load_changes;
};

/// farm_options::emulation with these per-rank slowdown factors and load changes:
///   options.emulation = pfarm::testing::emulate({1, 1, 3});           // rank 2 three times slower
///   options.emulation = pfarm::testing::emulate({}, {{1, 0.5, 4.0}});  // rank 1 four times slower after 0.5 s
inline std::shared_ptr<const emulation> emulate(std::vector<double> slowdown, std::vector<load_change> load_changes = {}) {
    return std::make_shared<const emulation>(emulation{std::move(slowdown), std::move(load_changes)});
}

/// farm_options::emulation with the last of `ranks` ranks `factor` times slower, the others at full speed.
inline std::shared_ptr<const emulation> last_rank_slower(int ranks, double factor) {
    std::vector<double> slowdown(static_cast<std::size_t>(ranks), 1.0);
    slowdown.back() = factor;
    return emulate(std::move(slowdown));
}

/// `base` (may be null) with its slowdown factors replaced.
inline std::shared_ptr<const emulation> emulate(std::vector<double> slowdown, const std::shared_ptr<const emulation>& base) {
    return emulate(std::move(slowdown), base ? base->load_changes : std::vector<load_change>{});
}

/// `base` (may be null) with these load changes added to its own.
inline std::shared_ptr<const emulation> emulate(const std::vector<load_change>& load_changes,
                                                const std::shared_ptr<const emulation>& base) {
    emulation e = base ? *base : emulation{};
    e.load_changes.insert(e.load_changes.end(), load_changes.begin(), load_changes.end());
    return std::make_shared<const emulation>(std::move(e));
}

}  // namespace pfarm::testing
