// pfarm monitors: the one small interface every resource monitor implements, returning a plain sample (tests
// inject fakes through it).
// The implementations have a header each (loadavg_monitor.hpp, cgroup_monitor.hpp, hwloc_monitor.hpp,
// benchmark_monitor.hpp, forecaster.hpp; the MPI latency probe is pfarm/latency.hpp in pfarm::skeleton), the
// registry by name is monitor_registry.hpp, and pfarm/monitors.hpp includes them all. docs/monitors.md
// describes each one.
#pragma once

#include "pfarm/error.hpp"
#include "pfarm/sample.hpp"

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pfarm {

class monitor {
public:
    virtual ~monitor() = default;
    virtual std::string name() const = 0;
    /// Takes one reading. Throws pfarm::monitor_error naming the source (a file, a library call) when it
    /// cannot be read. Constructors only check their arguments; the source is touched by read().
    virtual resource_sample read() = 0;
};

/// A monitor could not read its source: `/proc/loadavg` is missing or malformed, hwloc failed to load the
/// topology... The message is "<monitor> monitor: <source>: <what is wrong>".
class monitor_error : public error {
public:
    monitor_error(std::string monitor, std::string source, const std::string& what_is_wrong);
    /// The monitor's registry name ("loadavg", "hwloc", ...).
    const std::string& monitor() const noexcept { return monitor_; }
    /// What could not be read: a path ("/proc/loadavg") or a library call ("hwloc_topology_load").
    const std::string& source() const noexcept { return source_; }

private:
    std::string monitor_;
    std::string source_;
};

/// "availability", "run_queue", ... (the resource_sample field's name).
std::string_view to_string(reading r) noexcept;

/// Whether `sample` holds `r`.
bool has_reading(const resource_sample& sample, reading r) noexcept;

/// Checks `sample` against the user's choice: when a reading in `needed` is missing, throws pfarm::error
/// "<purpose> needs <readings>, which no monitor provided" followed by `failures` (why monitors failed).
/// This is how the farm goes on without a reading only where nobody needs it.
void require_readings(const resource_sample& sample, std::span<const reading> needed, std::string_view purpose,
                      std::span<const std::string> failures = {});
inline void require_readings(const resource_sample& sample, std::initializer_list<reading> needed,
                             std::string_view purpose, std::span<const std::string> failures = {}) {
    require_readings(sample, std::span<const reading>(needed.begin(), needed.size()), purpose, failures);
}

/// Checks a sample's values: availability in (0, 1], run_queue >= 1, load1 >= 0, latency >= 0,
/// benchmark > 0, cores >= 1, all finite; throws pfarm::invalid_argument naming `argument` otherwise.
void validate_sample(const resource_sample& sample, const std::string& argument);

/// Returns the given samples in turn, then the last one forever: for tests and the simulator, where
/// statistical calibration runs on chosen availability and latency per worker. Registry names "scripted"
/// and "fake". Every sample is checked with validate_sample (argument "script").
class scripted_monitor final : public monitor {
public:
    explicit scripted_monitor(std::vector<resource_sample> script);
    std::string name() const override { return "scripted"; }
    resource_sample read() override;

    /// One constant monitor per worker: worker j reads availability[j] and latency[j] (seconds).
    /// Throws invalid_argument ("availability" or "latency") on different lengths or values out of range.
    static std::vector<std::unique_ptr<monitor>> per_worker(std::span<const double> availability,
                                                            std::span<const double> latency);

private:
    std::vector<resource_sample> script_;
    std::size_t next_ = 0;
};

/// Several monitors read as one: each field comes from the first monitor that provides it. A monitor that
/// throws monitor_error leaves its fields empty and its message in failures(); pass those to
/// require_readings so that a missing reading that a technique needs stops the run with the reason.
class combined_monitor final : public monitor {
public:
    explicit combined_monitor(std::vector<std::unique_ptr<monitor>> parts);
    /// "combined(loadavg+hwloc+...)".
    std::string name() const override;
    resource_sample read() override;
    /// The messages of the monitors that failed in the last read() (empty when all succeeded).
    const std::vector<std::string>& failures() const noexcept { return failures_; }

private:
    std::vector<std::unique_ptr<monitor>> parts_;
    std::vector<std::string> failures_;
};

}  // namespace pfarm
