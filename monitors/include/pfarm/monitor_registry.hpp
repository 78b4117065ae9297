// pfarm: monitors created by name, for tools and for users who pick them on a
// command line. The MPI latency probe needs a communicator and lives in pfarm::skeleton (pfarm/latency.hpp).
#pragma once

#include "pfarm/benchmark_monitor.hpp"
#include "pfarm/hwloc_monitor.hpp"
#include "pfarm/monitor.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pfarm {

/// What the monitors made by name read; each monitor uses only its own part.
struct monitor_options {
    std::filesystem::path root = "/";    ///< loadavg, cgroup, bogomips: where proc/ (and the cgroup mounts) live
    hwloc_options hwloc;                 ///< hwloc
    benchmark_options benchmark;         ///< benchmark
    std::vector<resource_sample> script; ///< scripted (fake): the samples it returns
};

struct monitor_info {
    std::string name;
    std::string description;
};

/// Every name make_monitor knows, with a one-line description, in a fixed order.
const std::vector<monitor_info>& monitor_list();

/// Creates the monitor called `name`. Throws unknown_name (argument "monitor") listing the known names;
/// "scripted"/"fake" without options.script throws invalid_argument ("script").
std::unique_ptr<monitor> make_monitor(std::string_view name, const monitor_options& options = {});

}  // namespace pfarm
