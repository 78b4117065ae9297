// pfarm: the load-average monitor: processor availability a_i (Gonzalez-Velez & Cole, "Adaptive statistical
// scheduling of divisible workloads in heterogeneous systems") and run queue Q_i (Chronopoulos, Penmatsa, Yu & Yu,
// "Scalable loop self-scheduling schemes for heterogeneous clusters", section 3) from the kernel's own counters.
// Formulas in docs/monitors.md.
#pragma once

#include "pfarm/monitor.hpp"

#include <filesystem>

namespace pfarm {

/// Everything the load-average monitor reads and derives, for tools that show more than the sample.
struct loadavg_reading {
    double load1 = 0, load5 = 0, load15 = 0;  ///< /proc/loadavg, first three fields
    int procs_running = 0;                    ///< /proc/stat "procs_running": runnable now, the reader included
    int cpus = 0;                             ///< online CPUs: "cpuN" lines of /proc/stat
    double run_queue = 1;                     ///< Q = max(1, procs_running)
    double availability = 1;                  ///< a = min(1, cpus / Q)
};

/// Reads `<root>/proc/loadavg` and `<root>/proc/stat` on every read().
///
/// The reader is itself running when it reads, so procs_running counts it; the worker that asks is the
/// process the farm will run next, so Q = max(1, procs_running) is the run queue with the worker in it
/// (Chronopoulos et al.'s Q_i, for A_i = V_i / Q_i), and a new process sharing `cpus` CPUs fairly with the Q - 1 others
/// gets a = min(1, cpus / Q) of a CPU (Gonzalez-Velez & Cole's availability, in (0, 1]).
/// Provides availability, run_queue and load1. Missing or malformed files throw monitor_error naming the file.
class loadavg_monitor final : public monitor {
public:
    /// `root` replaces "/" in front of proc/..., so tests can point it at a directory of their own.
    explicit loadavg_monitor(std::filesystem::path root = "/");
    std::string name() const override { return "loadavg"; }
    resource_sample read() override;
    /// One reading with every number behind it.
    loadavg_reading read_details() const;

private:
    std::filesystem::path root_;
};

}  // namespace pfarm
