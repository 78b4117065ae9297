// The hwloc monitor: topology, binding and grouping key read through hwloc, which no other file sees
// (hwloc_monitor.hpp).
#include "pfarm/hwloc_monitor.hpp"

#include "detail.hpp"

#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <set>

namespace pfarm {

namespace {

constexpr const char* monitor_name = "hwloc";

std::string errno_text(int e) { return e ? std::strerror(e) : "unknown reason"; }

/// hwloc_bitmap_t with a destructor.
struct bitmap {
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    bitmap() {
        if (!set) throw monitor_error(monitor_name, "hwloc_bitmap_alloc", "out of memory");
    }
    ~bitmap() { hwloc_bitmap_free(set); }
    bitmap(const bitmap&) = delete;
    bitmap& operator=(const bitmap&) = delete;
};

std::string host_name() {
    char name[HOST_NAME_MAX + 1] = {};
    if (gethostname(name, sizeof name - 1) != 0)
        throw monitor_error(monitor_name, "gethostname", errno_text(errno));
    return name;
}

std::string join_indexes(const std::vector<unsigned>& indexes) {
    std::string out;
    for (std::size_t i = 0; i < indexes.size(); ++i) out += (i ? "+" : "") + std::to_string(indexes[i]);
    return out;
}

}  // namespace

struct hwloc_monitor::impl {
    hwloc_topology_t topology = nullptr;
    ~impl() {
        if (topology) hwloc_topology_destroy(topology);
    }
};

hwloc_monitor::hwloc_monitor(hwloc_options options) : options_(std::move(options)) {
    if (!options_.synthetic.empty() && !options_.xml.empty())
        throw invalid_argument("synthetic", "is set together with xml; expected at most one topology source");
}

hwloc_monitor::~hwloc_monitor() = default;

topology_summary hwloc_monitor::topology() {
    if (!impl_) {
        auto loaded = std::make_unique<impl>();
        if (hwloc_topology_init(&loaded->topology) != 0)
            throw monitor_error(monitor_name, "hwloc_topology_init", errno_text(errno));
        if (!options_.synthetic.empty() &&
            hwloc_topology_set_synthetic(loaded->topology, options_.synthetic.c_str()) != 0)
            throw monitor_error(monitor_name, "hwloc_topology_set_synthetic",
                                "invalid synthetic description '" + options_.synthetic + "'");
        if (!options_.xml.empty()) {
            errno = 0;
            if (hwloc_topology_set_xml(loaded->topology, options_.xml.c_str()) != 0)
                throw monitor_error(monitor_name, options_.xml.string(),
                                    "hwloc cannot read this XML topology (" + errno_text(errno) + ")");
        }
        errno = 0;
        if (hwloc_topology_load(loaded->topology) != 0) {
            if (!options_.xml.empty())  // a bad file is the likely cause: name it
                throw monitor_error(monitor_name, options_.xml.string(),
                                    "hwloc_topology_load failed on this XML topology (" + errno_text(errno) + ")");
            throw monitor_error(monitor_name, "hwloc_topology_load", errno_text(errno));
        }
        impl_ = std::move(loaded);
    }
    hwloc_topology_t topo = impl_->topology;

    topology_summary t;
    t.packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    t.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    t.pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    t.numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    t.this_system = hwloc_topology_is_thissystem(topo) != 0;
    t.host = host_name();
    if (t.pus < 1) throw monitor_error(monitor_name, "hwloc_get_nbobjs_by_type", "the topology has no PU");

    // The PUs this process may run on. A synthetic or XML topology is not this machine: all of its PUs.
    bitmap bound;
    if (t.this_system) {
        if (hwloc_get_cpubind(topo, bound.set, HWLOC_CPUBIND_PROCESS) != 0 &&
            hwloc_get_cpubind(topo, bound.set, HWLOC_CPUBIND_THREAD) != 0)
            throw monitor_error(monitor_name, "hwloc_get_cpubind", errno_text(errno));
        hwloc_bitmap_and(bound.set, bound.set, hwloc_topology_get_topology_cpuset(topo));
        if (hwloc_bitmap_iszero(bound.set))
            throw monitor_error(monitor_name, "hwloc_get_cpubind", "the process is bound to no PU of the topology");
    } else {
        hwloc_bitmap_copy(bound.set, hwloc_topology_get_topology_cpuset(topo));
    }

    std::set<unsigned> cores, packages;
    for (int i = 0; i < t.pus; ++i) {
        hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, static_cast<unsigned>(i));
        if (!pu || !hwloc_bitmap_isset(bound.set, pu->os_index)) continue;
        t.bound_pus.push_back(pu->os_index);
        if (hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, pu))
            cores.insert(core->logical_index);
        if (hwloc_obj_t pack = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, pu))
            packages.insert(pack->logical_index);
    }
    std::sort(t.bound_pus.begin(), t.bound_pus.end());
    t.bound_cores = static_cast<int>(cores.size());
    t.bound_packages.assign(packages.begin(), packages.end());
    for (int i = 0; i < t.numa_nodes; ++i) {
        hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
        if (node && node->cpuset && hwloc_bitmap_intersects(node->cpuset, bound.set))
            t.bound_numa_nodes.push_back(node->logical_index);
    }

    switch (options_.grouping) {
    case node_grouping::host: t.node_key = t.host; break;
    case node_grouping::package:
        // A machine without package objects (some virtual machines) is one package.
        t.node_key = t.host + "/package:" + (t.bound_packages.empty() ? "0" : join_indexes(t.bound_packages));
        break;
    case node_grouping::numa:
        t.node_key = t.host + "/numa:" + (t.bound_numa_nodes.empty() ? "0" : join_indexes(t.bound_numa_nodes));
        break;
    }
    return t;
}

resource_sample hwloc_monitor::read() {
    const topology_summary t = topology();
    resource_sample s;
    s.cores = static_cast<int>(t.bound_pus.size());
    s.node_key = t.node_key;
    return s;
}

node_grouping parse_node_grouping(std::string_view text) {
    if (text == "host") return node_grouping::host;
    if (text == "package") return node_grouping::package;
    if (text == "numa") return node_grouping::numa;
    throw unknown_name("grouping", "unknown name '" + std::string(text) + "'; expected one of: host, package, numa");
}

std::string_view to_string(node_grouping g) noexcept {
    switch (g) {
    case node_grouping::host: return "host";
    case node_grouping::package: return "package";
    case node_grouping::numa: return "numa";
    }
    return "unknown";
}

}  // namespace pfarm
