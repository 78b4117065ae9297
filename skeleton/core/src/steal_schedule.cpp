// pfarm scheduling core: the work-stealing farm's arithmetic (pfarm/steal_schedule.hpp).
#include "pfarm/steal_schedule.hpp"

#include "pfarm/error.hpp"
#include "pfarm/registry.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

namespace pfarm {

victim_rule parse_victim_rule(const std::string& name, const std::string& argument) {
    if (name == "random") return victim_rule::random;
    if (name == "tree") return victim_rule::tree;
    throw invalid_argument(argument, "unknown name '" + name + "'; expected one of: random, tree");
}

std::string to_string(victim_rule rule) { return rule == victim_rule::tree ? "tree" : "random"; }

steal_range initial_range(task_count tasks, int ranks, int rank) {
    const auto P = static_cast<task_count>(ranks), J = static_cast<task_count>(rank);
    return {J * (tasks / P) + std::min(J, tasks % P), (J + 1) * (tasks / P) + std::min(J + 1, tasks % P)};
}

task_count steal_claim_rule::size(task_count remaining) const {
    const task_count n = constant > 0 ? constant : (remaining + ranks - 1) / ranks;
    return std::min(remaining, std::max({n, minimum, task_count{1}}));
}

steal_claim_rule make_steal_claim_rule(const std::string& technique, const technique_options& options, int ranks) {
    const std::unique_ptr<pfarm::technique> policy = make_technique(technique, options, ranks);  // its options checked
    steal_claim_rule rule;
    rule.minimum = options.min_chunk;
    rule.ranks = ranks;
    if (policy->name() == "gss") return rule;
    rule.constant = policy->constant_chunk();
    if (rule.constant > 0 && (policy->name() == "ss" || policy->name() == "css")) return rule;
    throw invalid_argument("technique", "is '" + technique + "'; the work-stealing farm claims with ss, css or gss (its rule "
                                        "over the owner's own range)");
}

victim_picker::victim_picker(victim_rule rule, int rank, int ranks, std::uint64_t seed)
    : rule_(rule), rank_(rank), ranks_(ranks) {
    std::seed_seq seq{static_cast<std::uint64_t>(seed & 0xffffffffu), seed >> 32, static_cast<std::uint64_t>(rank)};
    random_.seed(seq);
}

int victim_picker::next() {
    if (rule_ == victim_rule::tree) return tree_parent(rank_);
    if (ranks_ == 1) return -1;
    std::uniform_int_distribution<int> pick(0, ranks_ - 2);
    const int v = pick(random_);
    return v >= rank_ ? v + 1 : v;
}

double steal_backoff(int& failures, double round_trip, double seconds_per_task) {
    failures = std::min(failures + 1, 62);
    return std::min(static_cast<double>(std::uint64_t{1} << (failures - 1)) * round_trip,
                    std::max(steal_backoff_floor * round_trip, seconds_per_task / steal_polls_per_task));
}

int notice_counters(int ranks) { return static_cast<int>(std::ceil(std::sqrt(static_cast<double>(ranks)))); }

}  // namespace pfarm
