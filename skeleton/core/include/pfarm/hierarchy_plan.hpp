// pfarm scheduling core: the plan of a hierarchical farm, one for every driver of it (the MPI hierarchical farmer
// and the simulator): which workers form which group, each group's slice of the per-worker options, the
// supermaster's technique and its options over the masters, each group's expected share of the loop, and the
// options of the supermaster's and the masters' sessions (master_session.hpp). The drivers add only what is theirs:
// ranks and communicators, or simulated servers and latencies.
//
// Workers are numbered as the per-worker option lists are (weights, times, run_queue: one value per worker). Each
// belongs to a group 0..K-1, served by that group's master; when the supermaster computes, one worker is its own
// (group -1), a unit of its session beside the masters, as a group of one.
//
//   hierarchy_plan plan(hierarchy_plan::contiguous(p, k), {.technique = "gss", .options = o, .tasks = n,
//                                                          .group = {.prefetch = true, ...}});
//   farmer_session top(n, plan.units(), plan.make_top(), plan.top_session());
//   master_session m(plan.size(g), plan.make_group(g), plan.session_options(g));
#pragma once

#include "pfarm/farmer_session.hpp"
#include "pfarm/master_session.hpp"
#include "pfarm/registry.hpp"

#include <memory>
#include <string>
#include <vector>

namespace pfarm {

struct hierarchy_plan_options {
    std::string technique;         ///< the workers' technique, each group's
    /// The supermaster's technique over the masters; empty: default_master_technique(technique), with the x = 4 rule
    /// of master_options() for its default fss.
    std::string master_technique;
    /// The workers' options; the per-worker lists (weights, times, run_queue) hold one value per worker, or none.
    technique_options options;
    task_count tasks = 1;          ///< the loop size (>= 1)
    /// Each group's farm, facing its workers: prefetch, reclaim, request_cost, keep_records, clock. min_chunk is
    /// options.min_chunk.
    farmer_session_options group;
};

class hierarchy_plan {
public:
    /// `group_of`: per worker, its group (0..K-1, every group with at least one worker), or -1 for the supermaster's
    /// own worker (at most one). Throws invalid_argument naming the argument: "group_of", "weights", "times",
    /// "run_queue" (a list that is not one value per worker), "tasks", "master_technique" (an unknown name), or
    /// the technique's own error for options its technique cannot run with, in a group or at the supermaster.
    hierarchy_plan(std::vector<int> group_of, hierarchy_plan_options options);

    /// K groups over `workers` workers, contiguous and as equal as possible, the first `workers mod K` one larger.
    /// Throws invalid_argument("masters") unless 1 <= K <= workers.
    static std::vector<int> contiguous(int workers, int groups);

    int workers() const noexcept { return static_cast<int>(group_of_.size()); }
    int groups() const noexcept { return static_cast<int>(members_.size()); }
    /// Per worker: its group (-1: the supermaster's own worker).
    const std::vector<int>& group_of() const noexcept { return group_of_; }
    /// Group g's workers, ascending (worker i of its master's session is members(g)[i]).
    const std::vector<int>& members(int g) const { return members_.at(static_cast<std::size_t>(g)); }
    int size(int g) const { return static_cast<int>(members(g).size()); }
    /// The supermaster's own worker (-1: it does not compute).
    int own_worker() const noexcept { return own_worker_; }
    bool top_computes() const noexcept { return own_worker_ >= 0; }
    /// The supermaster's session: its own worker is its worker 0 when it computes, master g its worker g + own().
    int own() const noexcept { return top_computes() ? 1 : 0; }
    int units() const noexcept { return groups() + own(); }

    /// The workers' technique, and group g's options (the slice of the per-worker lists for its workers).
    const std::string& group_technique() const noexcept { return options_.technique; }
    const technique_options& group_options(int g) const { return group_options_.at(static_cast<std::size_t>(g)); }
    std::unique_ptr<technique> make_group(int g) const;

    /// The supermaster's technique over its units and its options (master_options() over the units' groups: its
    /// own worker a group of one).
    const std::string& top_technique() const noexcept { return top_name_; }
    const technique_options& top_options() const noexcept { return top_options_; }
    std::unique_ptr<technique> make_top() const;
    const technique_needs& top_needs() const noexcept { return top_needs_; }

    /// The loop size group g's technique starts with: the loop times g's share of the units' weights (>= 1).
    task_count expected(int g) const { return expected_.at(static_cast<std::size_t>(g)); }

    /// Group g's master session: the group's farm (hierarchy_plan_options::group with min_chunk), its expected
    /// share, the readings the supermaster's technique needs, its workers' weights as their powers.
    master_session_options session_options(int g) const;
    /// The supermaster's session: min_chunk of its technique, prefetch, depth master_depth, no reclaim. The driver
    /// sets keep_records and clock.
    farmer_session_options top_session() const;

private:
    std::vector<int> group_of_;
    hierarchy_plan_options options_;
    std::vector<std::vector<int>> members_;
    int own_worker_ = -1;
    std::vector<technique_options> group_options_;
    std::string top_name_;
    technique_options top_options_;
    technique_needs top_needs_;
    std::vector<task_count> expected_;
};

}  // namespace pfarm
