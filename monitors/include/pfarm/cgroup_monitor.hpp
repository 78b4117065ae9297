// pfarm: the cgroup monitor: the CPU quota a process actually runs under (Slurm, containers, Kubernetes,
// systemd), cgroup v1 and v2, combined with the load-average availability. Formulas in docs/monitors.md.
#pragma once

#include "pfarm/loadavg_monitor.hpp"
#include "pfarm/monitor.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pfarm {

/// One cgroup on the way from the process's own cgroup up to the top of the mounted hierarchy.
struct cgroup_level {
    std::string cgroup;                 ///< its path in the hierarchy ("/", "/slurm/uid_0/job_12")
    std::filesystem::path directory;    ///< where its files are (under the cgroup mount)
    std::optional<double> quota_cores;  ///< quota / period in CPUs; empty: unlimited (-1, "max") or no cpu file here
    long long quota_us = -1;            ///< v1 cpu.cfs_quota_us, v2 cpu.max's first field; -1 when unlimited
    long long period_us = 0;            ///< v1 cpu.cfs_period_us, v2 cpu.max's second field; 0 when no cpu file
};

/// The throttling counters of one cgroup's cpu.stat (totals since the cgroup was made, or differences).
struct cgroup_throttling {
    long long nr_periods = 0;        ///< enforcement periods in which the cgroup had runnable threads
    long long nr_throttled = 0;      ///< of those, periods in which it ran out of quota
    double throttled_seconds = 0;    ///< v1 throttled_time (ns), v2 throttled_usec, in seconds
};

/// Everything the cgroup monitor reads and derives, for tools that show more than the sample.
struct cgroup_reading {
    int version = 0;                      ///< 1 (the cpu controller's v1 hierarchy) or 2 (the unified one)
    std::string cgroup;                   ///< the process's cgroup, as /proc/self/cgroup gives it
    std::filesystem::path directory;      ///< its directory
    std::vector<cgroup_level> levels;     ///< the process's cgroup first, then each parent up to the mount's top
    std::optional<double> limit_cores;    ///< the most restrictive quota of the levels, at most `cpus`; empty: none
    std::filesystem::path limit_directory;  ///< the level that sets limit_cores (empty without a limit)
    int runnable = 0;                     ///< threads in state R in that level and below (the reader included)
    std::optional<cgroup_throttling> throttling;        ///< cpu.stat of the limiting level (without a limit: empty)
    std::optional<cgroup_throttling> throttling_delta;  ///< since this monitor's previous read of the same level
    std::optional<double> throttled_fraction;  ///< delta nr_throttled / delta nr_periods; empty when no period passed
    double quota_availability = 1;        ///< min(1, limit_cores / max(1, runnable)); 1 without a limit
    /// How often the quota was binding (the cgroup throttled): throttled_fraction when a period passed since the
    /// previous read, else nr_throttled / nr_periods over the cgroup's life, else 0; 0 without a limit.
    double binding = 0;
    loadavg_reading load;                 ///< the load-average side, read from the same root
    /// binding x quota_availability + (1 - binding) x min(quota_availability, load.availability), in (0, 1];
    /// load.availability without a limit.
    double availability = 1;
    /// The run queue with the same share on the whole machine, so that availability = min(1, cpus / Q) as for
    /// loadavg: cpus / availability when availability < 1, else load.run_queue.
    double run_queue = 1;
};

/// Reads the CPU quota of the process's cgroup and of every ancestor, and the throttling counters of the
/// most restrictive one, on every read(); combines them with loadavg_monitor's availability.
///
/// Sources, all under `root`: proc/self/cgroup (which cgroup; a v1 line listing the cpu controller wins
/// over the v2 "0::" line), proc/self/mountinfo (where that hierarchy is mounted and which of its paths the
/// mount shows), then in each level's directory v1 cpu.cfs_quota_us + cpu.cfs_period_us or v2 cpu.max, and
/// cpu.stat at the limiting level; tasks (v1) or cgroup.threads (v2) and proc/<tid>/stat to count the
/// threads competing for the quota; proc/loadavg and proc/stat for the load side.
/// Provides availability, run_queue (cpus / availability) and load1 (the load side's). Missing or malformed
/// files throw monitor_error naming the file; a process in no cgroup with a quota reads the load side alone.
class cgroup_monitor final : public monitor {
public:
    /// `root` replaces "/" in front of proc/... and of the mount points mountinfo names, so tests can point it
    /// at a directory of their own.
    explicit cgroup_monitor(std::filesystem::path root = "/");
    std::string name() const override { return "cgroup"; }
    resource_sample read() override;
    /// One reading with every number behind it; updates the previous counters the deltas are taken from.
    cgroup_reading read_details();

private:
    std::filesystem::path root_;
    loadavg_monitor load_;
    std::string self_text_;   ///< /proc/self/cgroup when layout_ was found
    cgroup_reading layout_;   ///< the levels' directories for it (mountinfo is read again only when it changes)
    std::filesystem::path previous_directory_;
    std::optional<cgroup_throttling> previous_;
};

/// The process's CPU quota alone (no load side, no runnable count, no deltas): the most restrictive quota of
/// its cgroup and ancestors in CPUs, or empty when none is set. Throws monitor_error as cgroup_monitor does.
std::optional<double> cgroup_cpu_limit(const std::filesystem::path& root = "/");

/// The enforcement period (seconds) of the quota cgroup_cpu_limit() reports (v1 cpu.cfs_period_us, v2 cpu.max's
/// second field), or empty when no quota is set or `<root>/proc/self/cgroup` does not exist. A process under a
/// quota runs at full speed for its slice of each period: a timing much shorter than the period cannot see the
/// quota (the automatic calibration span, docs/calibration.md). Throws monitor_error as cgroup_monitor does.
std::optional<double> cgroup_cpu_period(const std::filesystem::path& root = "/");

/// The monitor pfarm reads availability, run queue and load1 from by default: "cgroup" when
/// `<root>/proc/self/cgroup` exists and cgroup_cpu_limit(root) is set, "loadavg" otherwise (a kernel without
/// cgroups, or no quota on the way up). Throws monitor_error when the cgroup files exist but cannot be read.
std::unique_ptr<monitor> make_availability_monitor(const std::filesystem::path& root = "/");

}  // namespace pfarm
