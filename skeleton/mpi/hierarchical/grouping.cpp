// pfarm MPI engine, the hierarchical farm: which rank does what. plan_hierarchy groups the ranks (on rank 0 inside
// agree()): masters = K splits ranks 1..N-1 into K contiguous blocks, the first rank of each its master; masters = 0
// gives one master per node (the ranks sharing memory, MPI_COMM_TYPE_SHARED). rank_layout reads each rank's role
// from that grouping, and plan_of gives the core's hierarchy plan (pfarm/hierarchy_plan.hpp) over the computing
// ranks; check_hierarchical refuses, before the farm, what this mode cannot do.
#include "hierarchical.hpp"

#include "pfarm/registry.hpp"

#include <algorithm>
#include <map>

namespace pfarm::detail {

rank_layout layout_of(const std::vector<int>& group_of, bool computes) {
    rank_layout h;
    h.group_of = group_of;
    h.computes = computes;
    int groups = 0;
    for (int g : group_of) groups = std::max(groups, g + 1);
    h.master.assign(static_cast<std::size_t>(groups), -1);
    h.members.resize(static_cast<std::size_t>(groups));
    h.worker_index.assign(group_of.size(), -1);
    for (int r = 0; r < static_cast<int>(group_of.size()); ++r) {
        const int g = group_of[static_cast<std::size_t>(r)];
        if (g < 0) {  // rank 0
            if (computes) h.worker_index[static_cast<std::size_t>(r)] = h.workers++;
            continue;
        }
        auto& master = h.master[static_cast<std::size_t>(g)];
        const bool first = master < 0;
        if (first) master = r;
        if (!first || computes) {
            h.members[static_cast<std::size_t>(g)].push_back(r);
            h.worker_index[static_cast<std::size_t>(r)] = h.workers++;
        }
    }
    return h;
}

std::vector<int> rank_layout::worker_groups() const {
    std::vector<int> groups(static_cast<std::size_t>(workers));
    for (std::size_t r = 0; r < group_of.size(); ++r)
        if (worker_index[r] >= 0) groups[static_cast<std::size_t>(worker_index[r])] = group_of[r];
    return groups;
}

hierarchy_plan plan_of(const rank_layout& h, const std::string& technique, const std::string& master_technique,
                       const technique_options& parameters, task_count tasks, const farmer_session_options& group) {
    return hierarchy_plan(h.worker_groups(), {.technique = technique,
                                              .master_technique = master_technique,
                                              .options = parameters,
                                              .tasks = tasks,
                                              .group = group});
}

std::vector<int> plan_hierarchy(const farm_options& options, int ranks, const std::vector<int>& nodes) {
    if (ranks < 3)
        throw invalid_argument("farmer", "hierarchical needs at least 3 ranks (a supermaster, a master and a worker); this "
                                         "farm has " + std::to_string(ranks) + "; use flat");
    std::vector<int> group(static_cast<std::size_t>(ranks), -1);
    const int others = ranks - 1;  // every rank but the supermaster
    if (options.topology.masters > 0) {  // K contiguous blocks of ranks 1..N-1, as equal as possible, the first ones larger
        const int k = options.topology.masters;
        if (2 * k > others)
            throw invalid_argument("masters", "is " + std::to_string(k) + "; expected 1.." + std::to_string(others / 2) +
                                                  " with " + std::to_string(ranks) + " ranks (rank 0 is the supermaster "
                                                  "and each master needs at least one worker)");
        const std::vector<int> blocks = hierarchy_plan::contiguous(others, k);
        std::copy(blocks.begin(), blocks.end(), group.begin() + 1);
        return group;
    }
    // One master per node: the ranks of a node but rank 0 form a group when they are two or more; a rank alone on
    // its node (rank 0 apart) joins the group before it (the first group when none is before it); with no node of
    // two, every rank but 0 is one group.
    std::map<int, std::vector<int>> by_node;
    for (int r = 1; r < ranks; ++r) by_node[nodes.at(static_cast<std::size_t>(r))].push_back(r);
    std::vector<std::vector<int>> groups;
    std::vector<int> alone_before;  // ranks alone on their node before the first group
    for (const auto& [node, members] : by_node) {
        if (members.size() >= 2) groups.push_back(members);
        else if (groups.empty()) alone_before.push_back(members[0]);
        else groups.back().push_back(members[0]);
    }
    if (groups.empty()) groups.emplace_back();
    auto& first = groups.front();
    first.insert(first.end(), alone_before.begin(), alone_before.end());
    for (std::size_t g = 0; g < groups.size(); ++g) {
        std::sort(groups[g].begin(), groups[g].end());
        for (int r : groups[g]) group[static_cast<std::size_t>(r)] = static_cast<int>(g);
    }
    // Groups are numbered by their master (their lowest rank), so that group g's master comes before group g+1's.
    std::vector<int> order(groups.size());
    for (std::size_t g = 0; g < groups.size(); ++g) order[g] = static_cast<int>(g);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return groups[static_cast<std::size_t>(a)][0] < groups[static_cast<std::size_t>(b)][0]; });
    std::vector<int> renumber(groups.size());
    for (std::size_t i = 0; i < order.size(); ++i) renumber[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
    for (int& g : group)
        if (g >= 0) g = renumber[static_cast<std::size_t>(g)];
    return group;
}

int hierarchy_workers(const std::vector<int>& group_of, bool computes) { return layout_of(group_of, computes).workers; }

void check_hierarchical(const farm_options& options, const task_kernel& kernel, task_count tasks,
                        const std::vector<int>& group_of) {
    (void)kernel;
    if (options.schedule.learned)
        throw invalid_argument("farmer", "hierarchical does not learn a schedule (each group calibrates on its own, "
                                         "with its tasks); use flat with farm_options::schedule.learned");
    if (!options.topology.master_technique.empty()) {
        try {
            find_technique(options.topology.master_technique);
        } catch (const unknown_name& e) {  // the supermaster's technique is its own option
            throw unknown_name("master_technique", e.message());
        }
    }
    if (group_of.empty()) return;  // one rank: the tasks run in order, nothing else to check
    // The plan makes the supermaster's technique and each group's, so that their errors are every rank's.
    (void)plan_of(layout_of(group_of, options.topology.farmer_computes), options.schedule.technique, options.topology.master_technique,
                  options.schedule.parameters, tasks);
}

}  // namespace pfarm::detail
