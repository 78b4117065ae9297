// pfarm monitors: one small interface returning a plain sample (DESIGN.md principle 3).
// Implementations (loadavg, hwloc, latency, benchmark, forecaster) come with the calibration issue; the
// scripted monitor is here from the start, for tests and the simulator.
#pragma once

#include "pfarm/sample.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pfarm {

class monitor {
public:
    virtual ~monitor() = default;
    virtual std::string name() const = 0;
    /// Takes one reading. Throws pfarm::error naming the source when it cannot be read.
    virtual resource_sample read() = 0;
};

/// Returns the given samples in turn, then the last one forever: for tests and simulated calibration.
class scripted_monitor final : public monitor {
public:
    explicit scripted_monitor(std::vector<resource_sample> script);
    std::string name() const override { return "scripted"; }
    resource_sample read() override;

private:
    std::vector<resource_sample> script_;
    std::size_t next_ = 0;
};

}  // namespace pfarm
