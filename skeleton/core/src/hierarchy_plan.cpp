// pfarm scheduling core: the plan of a hierarchical farm (hierarchy_plan.hpp): grouping, option slicing, the
// supermaster's technique and options, the groups' expected shares and the sessions' options, with their checks.
#include "pfarm/hierarchy_plan.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace pfarm {

namespace {

/// A per-worker list's values for `workers` (empty stays empty).
std::vector<double> slice(const std::vector<double>& list, const std::vector<int>& workers) {
    if (list.empty()) return list;
    std::vector<double> out;
    out.reserve(workers.size());
    for (int w : workers) out.push_back(list.at(static_cast<std::size_t>(w)));
    return out;
}

technique_options options_for(const technique_options& o, const std::vector<int>& workers) {
    technique_options s = o;
    s.weights = slice(o.weights, workers), s.times = slice(o.times, workers), s.run_queue = slice(o.run_queue, workers);
    return s;
}

void check_list(const char* argument, const std::vector<double>& list, std::size_t workers) {
    if (!list.empty() && list.size() != workers)
        throw invalid_argument(argument, "has " + std::to_string(list.size()) + " values; expected one per worker (" +
                                             std::to_string(workers) + ")");
}

}  // namespace

std::vector<int> hierarchy_plan::contiguous(int workers, int groups) {
    if (groups < 1 || groups > workers)
        throw invalid_argument("masters", "is " + std::to_string(groups) + "; expected 1.." + std::to_string(workers) +
                                              " (at most one master per worker) for the hierarchical farmer");
    std::vector<int> group_of;
    group_of.reserve(static_cast<std::size_t>(workers));
    for (int g = 0; g < groups; ++g)
        for (int i = 0; i < workers / groups + (g < workers % groups ? 1 : 0); ++i) group_of.push_back(g);
    return group_of;
}

hierarchy_plan::hierarchy_plan(std::vector<int> group_of, hierarchy_plan_options options)
    : group_of_(std::move(group_of)), options_(std::move(options)) {
    if (group_of_.empty()) throw invalid_argument("group_of", "is empty; expected one group per worker");
    int groups = 0;
    for (std::size_t w = 0; w < group_of_.size(); ++w) {
        const int g = group_of_[w];
        if (g < -1)
            throw invalid_argument("group_of", "worker " + std::to_string(w) + "'s group is " + std::to_string(g) +
                                                   "; expected a group 0..K-1, or -1 for the supermaster's own worker");
        if (g == -1) {
            if (own_worker_ >= 0)
                throw invalid_argument("group_of", "workers " + std::to_string(own_worker_) + " and " + std::to_string(w) +
                                                       " are both the supermaster's own worker (-1); expected at most one");
            own_worker_ = static_cast<int>(w);
        }
        groups = std::max(groups, g + 1);
    }
    members_.resize(static_cast<std::size_t>(groups));
    for (std::size_t w = 0; w < group_of_.size(); ++w)
        if (group_of_[w] >= 0) members_[static_cast<std::size_t>(group_of_[w])].push_back(static_cast<int>(w));
    for (int g = 0; g < groups; ++g)
        if (members_[static_cast<std::size_t>(g)].empty())
            throw invalid_argument("group_of", "group " + std::to_string(g) + " has no worker; expected groups 0..K-1, "
                                                                              "each with at least one worker");
    if (groups == 0) throw invalid_argument("group_of", "has no group; expected at least one master with a worker");
    const technique_options& o = options_.options;
    check_list("weights", o.weights, group_of_.size());
    check_list("times", o.times, group_of_.size());
    check_list("run_queue", o.run_queue, group_of_.size());
    if (options_.tasks < 1)
        throw invalid_argument("tasks", "is " + std::to_string(options_.tasks) + "; expected at least 1");

    const bool defaulted = options_.master_technique.empty();
    top_name_ = defaulted ? default_master_technique(options_.technique) : options_.master_technique;
    if (!defaulted) {
        try {
            (void)find_technique(top_name_);
        } catch (const unknown_name& e) {  // the supermaster's technique is its own option
            throw unknown_name("master_technique", e.message());
        }
    }
    // auto simulates its candidates through a predictor only a flat farmer has (pfarm/prediction.hpp).
    if (options_.technique == "auto")
        throw invalid_argument("technique", "auto is served by the flat farm only; use --farmer flat, or name a technique");
    if (top_name_ == "auto")
        throw invalid_argument("master_technique", "auto is served by the flat farm only; name a technique");

    for (int g = 0; g < groups; ++g) group_options_.push_back(options_for(o, members(g)));
    // The per-worker lists in unit order (its own worker first, then the groups'): master_options reads units
    // contiguously.
    technique_options by_unit = o;
    by_unit.weights.clear(), by_unit.times.clear(), by_unit.run_queue.clear();
    std::vector<int> sizes;
    for (int u = 0; u < units(); ++u) {
        const int g = u - own();
        const technique_options s = g < 0 ? options_for(o, {own_worker_}) : group_options(g);
        by_unit.weights.insert(by_unit.weights.end(), s.weights.begin(), s.weights.end());
        by_unit.times.insert(by_unit.times.end(), s.times.begin(), s.times.end());
        by_unit.run_queue.insert(by_unit.run_queue.end(), s.run_queue.begin(), s.run_queue.end());
        sizes.push_back(g < 0 ? 1 : size(g));
    }
    top_options_ = master_options(by_unit, sizes, top_name_, defaulted);
    top_needs_ = make_top()->needs();

    double total = 0.0;
    for (double w : top_options_.weights) total += w;
    for (int g = 0; g < groups; ++g) {
        (void)make_group(g);
        const double share = top_options_.weights.at(static_cast<std::size_t>(g + own())) / total;
        expected_.push_back(std::max<task_count>(1, std::llround(static_cast<double>(options_.tasks) * share)));
    }
}

std::unique_ptr<technique> hierarchy_plan::make_group(int g) const {
    return make_technique(options_.technique, group_options(g), size(g));
}

std::unique_ptr<technique> hierarchy_plan::make_top() const { return make_technique(top_name_, top_options_, units()); }

master_session_options hierarchy_plan::session_options(int g) const {
    master_session_options mo;
    mo.group = options_.group;
    mo.group.min_chunk = options_.options.min_chunk;
    mo.expected = expected(g);
    mo.readings_each = !top_needs_.with_every_request.empty();
    mo.readings_calibration = !top_needs_.with_calibration.empty();
    mo.powers = group_options(g).weights;
    return mo;
}

farmer_session_options hierarchy_plan::top_session() const {
    return {.min_chunk = top_options_.min_chunk,
            .prefetch = true,
            .depth = master_depth,  // a master holds up to this many chunks (master_session.hpp "Refill rule")
            .reclaim = false,
            .request_cost = 0.0,
            .keep_records = false,
            .learned = nullptr,
            .pool = false,
            .stragglers = {},
            .task_errors = {},
            .clock = {},
            .worker_loss = {},
            .own_worker = -1};
}

}  // namespace pfarm
