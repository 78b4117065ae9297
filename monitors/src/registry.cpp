// Monitors by name: the list make_monitor knows and the factory (monitor_registry.hpp).
#include "pfarm/monitor_registry.hpp"

#include "pfarm/cgroup_monitor.hpp"
#include "pfarm/loadavg_monitor.hpp"

namespace pfarm {

const std::vector<monitor_info>& monitor_list() {
    static const std::vector<monitor_info> list = {
        {"loadavg", "availability a = min(1, cpus/Q), run queue Q = max(1, procs_running), load1 (/proc)"},
        {"cgroup", "availability from the CPU quota of the cgroup and its ancestors (v1 cpu.cfs_quota_us, v2 "
                   "cpu.max), the threads competing for it, its throttling (cpu.stat) and loadavg's; run queue, load1"},
        {"hwloc", "cores (PUs this process is bound to) and node_key (host, package or NUMA grouping)"},
        {"benchmark", "bm_i: built-in CPU kernel, million operations per second (a few ms)"},
        {"bogomips", "bm_i: BogoMIPS from /proc/cpuinfo (Gonzalez-Velez & Cole's benchmark; x86 and Arm)"},
        {"scripted", "fake readings for tests and the simulator: returns the given samples in turn"},
        {"fake", "alias of scripted"},
    };
    return list;
}

std::unique_ptr<monitor> make_monitor(std::string_view name, const monitor_options& options) {
    if (name == "loadavg") return std::make_unique<loadavg_monitor>(options.root);
    if (name == "cgroup") return std::make_unique<cgroup_monitor>(options.root);
    if (name == "hwloc") return std::make_unique<hwloc_monitor>(options.hwloc);
    if (name == "benchmark") return std::make_unique<benchmark_monitor>(options.benchmark);
    if (name == "bogomips") return std::make_unique<bogomips_monitor>(options.root);
    if (name == "scripted" || name == "fake") return std::make_unique<scripted_monitor>(options.script);
    std::string known;
    for (const auto& m : monitor_list()) known += (known.empty() ? "" : ", ") + m.name;
    throw unknown_name("monitor", "unknown name '" + std::string(name) + "'; expected one of: " + known +
                                      " (the MPI latency probe is pfarm::mpi::latency_monitor in pfarm/latency.hpp)");
}

}  // namespace pfarm
