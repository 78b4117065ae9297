// pfarm: the hwloc monitor: the machine's topology, the processing units this process may run on, and a
// grouping key for the hierarchical farmer. hwloc stays behind this header (monitors are
// plug-ins: no caller sees hwloc).
#pragma once

#include "pfarm/monitor.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace pfarm {

/// How hwloc_monitor groups workers (resource_sample::node_key).
enum class node_grouping {
    host,     ///< "<hostname>": one group per machine (one master per node, the hierarchy of
              ///< Han & Chronopoulos, "Scalable loop self-scheduling schemes implemented on large-scale clusters")
    package,  ///< "<hostname>/package:<i>": one group per processor package (socket) the process is bound to
    numa,     ///< "<hostname>/numa:<i>": one group per NUMA node the process is bound to
};

struct hwloc_options {
    node_grouping grouping = node_grouping::host;
    /// A synthetic topology instead of this machine, e.g. "pack:2 core:4 pu:2" (hwloc's synthetic syntax).
    std::string synthetic;
    /// An XML topology (from `lstopo file.xml`) instead of this machine.
    std::filesystem::path xml;
};

/// What hwloc says about the machine and this process.
struct topology_summary {
    int packages = 0, cores = 0, pus = 0, numa_nodes = 0;  ///< whole machine (hwloc_get_nbobjs_by_type)
    std::vector<unsigned> bound_pus;   ///< OS indexes of the PUs this process is bound to (all when unbound)
    int bound_cores = 0;               ///< physical cores holding at least one bound PU
    std::vector<unsigned> bound_packages;    ///< logical indexes of packages holding a bound PU
    std::vector<unsigned> bound_numa_nodes;  ///< logical indexes of NUMA nodes holding a bound PU
    std::string host;                  ///< gethostname()
    std::string node_key;              ///< the grouping key (see node_grouping)
    bool this_system = true;           ///< false for synthetic and XML topologies
};

/// Loads the topology on the first read() (a few milliseconds) and keeps it; the binding is read each time.
/// Provides cores (the number of PUs this process is bound to: what `nproc` prints) and node_key.
/// hwloc failures throw monitor_error naming the hwloc call (or the XML file).
class hwloc_monitor final : public monitor {
public:
    explicit hwloc_monitor(hwloc_options options = {});
    ~hwloc_monitor() override;
    hwloc_monitor(const hwloc_monitor&) = delete;
    hwloc_monitor& operator=(const hwloc_monitor&) = delete;

    std::string name() const override { return "hwloc"; }
    resource_sample read() override;
    /// The topology and the binding, as read now.
    topology_summary topology();

private:
    struct impl;
    hwloc_options options_;
    std::unique_ptr<impl> impl_;
};

/// "host", "package", "numa"; throws unknown_name (argument "grouping") for anything else.
node_grouping parse_node_grouping(std::string_view text);
std::string_view to_string(node_grouping g) noexcept;

}  // namespace pfarm
