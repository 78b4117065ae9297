// pfarm: what a resource monitor reads: a plain struct shared by the monitors that
// produce it, the calibration that fits times to it, and the schedulers that weigh workers by it.
#pragma once

#include <optional>
#include <string>

namespace pfarm {

/// One reading of a worker's resources. A reading a monitor does not provide stays empty.
struct resource_sample {
    std::optional<double> availability;  ///< CPU fraction a new process would get, in (0, 1]
    std::optional<double> run_queue;     ///< Q_i: runnable processes, counting the worker itself (>= 1)
    std::optional<double> load1;         ///< 1-minute load average
    std::optional<double> latency;       ///< seconds, round trip to the farmer
    std::optional<double> benchmark;     ///< bm_i, higher is faster
    std::optional<int> cores;            ///< cores available to this process
    /// Which group this worker belongs to, for the hierarchical farmer: workers with equal keys share a node
    /// (by default the host name; see docs/monitors.md for the finer package and NUMA groupings).
    std::optional<std::string> node_key;
};

/// One field of a resource_sample, for saying which readings a technique needs (technique::needs()).
enum class reading { availability, run_queue, load1, latency, benchmark, cores, node_key };

}  // namespace pfarm
