// pfarm monitors: one small interface returning a plain sample (DESIGN.md principle 3).
// Implementations (loadavg, hwloc, latency, benchmark, forecaster) come with the calibration issue; the
// scripted monitor is here from the start, for tests and the simulator.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pfarm {

/// What a monitor reads. A reading a monitor does not provide stays empty.
struct monitor_sample {
    std::optional<double> availability;  ///< CPU fraction a new process would get, in (0, 1]
    std::optional<double> run_queue;     ///< Q_i, processes in the run queue (>= 1 with ours)
    std::optional<double> load1;         ///< 1-minute load average
    std::optional<double> latency;       ///< seconds, round trip to the farmer
    std::optional<double> benchmark;     ///< bm_i, higher is faster
    std::optional<int> cores;            ///< cores available to this process
};

class monitor {
public:
    virtual ~monitor() = default;
    virtual std::string name() const = 0;
    /// Takes one reading. Throws pfarm::error naming the source when it cannot be read.
    virtual monitor_sample read() = 0;
};

/// Returns the given samples in turn, then the last one forever: for tests and simulated calibration.
class scripted_monitor final : public monitor {
public:
    explicit scripted_monitor(std::vector<monitor_sample> script);
    std::string name() const override { return "scripted"; }
    monitor_sample read() override;

private:
    std::vector<monitor_sample> script_;
    std::size_t next_ = 0;
};

}  // namespace pfarm
