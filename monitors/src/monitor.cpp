#include "pfarm/monitor.hpp"

#include "pfarm/error.hpp"

namespace pfarm {

scripted_monitor::scripted_monitor(std::vector<resource_sample> script) : script_(std::move(script)) {
    if (script_.empty()) throw invalid_argument("script", "is empty; expected at least one sample");
}

resource_sample scripted_monitor::read() {
    const resource_sample& s = script_[next_];
    if (next_ + 1 < script_.size()) ++next_;
    return s;
}

}  // namespace pfarm
