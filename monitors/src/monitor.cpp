// The monitor interface's shared parts: its error, reading names, sample checks, and the scripted monitor
// (monitor.hpp).
#include "pfarm/monitor.hpp"

#include "detail.hpp"

#include <cmath>

namespace pfarm {

monitor_error::monitor_error(std::string monitor, std::string source, const std::string& what_is_wrong)
    : error(monitor + " monitor: " + source + ": " + what_is_wrong), monitor_(std::move(monitor)),
      source_(std::move(source)) {}

std::string_view to_string(reading r) noexcept {
    switch (r) {
    case reading::availability: return "availability";
    case reading::run_queue: return "run_queue";
    case reading::load1: return "load1";
    case reading::latency: return "latency";
    case reading::benchmark: return "benchmark";
    case reading::cores: return "cores";
    case reading::node_key: return "node_key";
    }
    return "unknown";
}

bool has_reading(const resource_sample& s, reading r) noexcept {
    switch (r) {
    case reading::availability: return s.availability.has_value();
    case reading::run_queue: return s.run_queue.has_value();
    case reading::load1: return s.load1.has_value();
    case reading::latency: return s.latency.has_value();
    case reading::benchmark: return s.benchmark.has_value();
    case reading::cores: return s.cores.has_value();
    case reading::node_key: return s.node_key.has_value();
    }
    return false;
}

void require_readings(const resource_sample& sample, std::span<const reading> needed, std::string_view purpose,
                      std::span<const std::string> failures) {
    std::string missing;
    for (reading r : needed) {
        if (has_reading(sample, r)) continue;
        if (!missing.empty()) missing += ", ";
        missing += to_string(r);
    }
    if (missing.empty()) return;
    std::string message = std::string(purpose) + " needs " + missing + ", which no monitor provided";
    if (failures.empty()) {
        message += " (no monitor in use reads it)";
    } else {
        message += "; failed monitors:";
        for (const std::string& f : failures) message += "\n  " + f;
    }
    throw error(message);
}

namespace {

/// What is wrong with a sample's values, or nothing.
std::optional<std::string> sample_problem(const resource_sample& s) {
    auto bad = [](const std::optional<double>& value, bool in_range) {
        return value && (!std::isfinite(*value) || !in_range);
    };
    auto describe = [](const char* field, double value, const char* range) {
        return std::string(field) + " is " + detail::format_number(value) + "; expected " + range;
    };
    if (bad(s.availability, s.availability > 0.0 && s.availability <= 1.0))
        return describe("availability", *s.availability, "in (0, 1]");
    if (bad(s.run_queue, s.run_queue >= 1.0)) return describe("run_queue", *s.run_queue, ">= 1");
    if (bad(s.load1, s.load1 >= 0.0)) return describe("load1", *s.load1, ">= 0");
    if (bad(s.latency, s.latency >= 0.0)) return describe("latency", *s.latency, ">= 0 seconds");
    if (bad(s.benchmark, s.benchmark > 0.0)) return describe("benchmark", *s.benchmark, "> 0");
    if (s.cores && *s.cores < 1) return "cores is " + std::to_string(*s.cores) + "; expected >= 1";
    return std::nullopt;
}

}  // namespace

void validate_sample(const resource_sample& s, const std::string& argument) {
    if (auto problem = sample_problem(s)) throw invalid_argument(argument, *problem);
}

scripted_monitor::scripted_monitor(std::vector<resource_sample> script) : script_(std::move(script)) {
    if (script_.empty()) throw invalid_argument("script", "is empty; expected at least one sample");
    for (std::size_t i = 0; i < script_.size(); ++i)
        if (auto problem = sample_problem(script_[i]))
            throw invalid_argument("script", "sample " + std::to_string(i) + ": " + *problem);
}

resource_sample scripted_monitor::read() {
    const resource_sample& s = script_[next_];
    if (next_ + 1 < script_.size()) ++next_;
    return s;
}

std::vector<std::unique_ptr<monitor>> scripted_monitor::per_worker(std::span<const double> availability,
                                                                   std::span<const double> latency) {
    if (availability.size() != latency.size())
        throw invalid_argument("latency", "has " + std::to_string(latency.size()) + " values; expected " +
                                              std::to_string(availability.size()) + ", one per worker");
    std::vector<std::unique_ptr<monitor>> monitors;
    monitors.reserve(availability.size());
    for (std::size_t j = 0; j < availability.size(); ++j) {
        const std::string worker = "worker " + std::to_string(j) + ": ";
        resource_sample a, l;
        a.availability = availability[j];
        l.latency = latency[j];
        if (auto problem = sample_problem(a)) throw invalid_argument("availability", worker + *problem);
        if (auto problem = sample_problem(l)) throw invalid_argument("latency", worker + *problem);
        resource_sample s;
        s.availability = availability[j];
        s.latency = latency[j];
        monitors.push_back(std::make_unique<scripted_monitor>(std::vector<resource_sample>{s}));
    }
    return monitors;
}

combined_monitor::combined_monitor(std::vector<std::unique_ptr<monitor>> parts) : parts_(std::move(parts)) {
    if (parts_.empty()) throw invalid_argument("parts", "is empty; expected at least one monitor");
    for (const auto& p : parts_)
        if (!p) throw invalid_argument("parts", "holds a null monitor");
}

std::string combined_monitor::name() const {
    std::string n = "combined(";
    for (std::size_t i = 0; i < parts_.size(); ++i) n += (i ? "+" : "") + parts_[i]->name();
    return n + ")";
}

resource_sample combined_monitor::read() {
    failures_.clear();
    resource_sample merged;
    auto fill = [](auto& into, const auto& from) {
        if (!into && from) into = from;
    };
    for (const auto& part : parts_) {
        resource_sample s;
        try {
            s = part->read();
        } catch (const monitor_error& e) {
            failures_.emplace_back(e.what());
            continue;
        }
        fill(merged.availability, s.availability);
        fill(merged.run_queue, s.run_queue);
        fill(merged.load1, s.load1);
        fill(merged.latency, s.latency);
        fill(merged.benchmark, s.benchmark);
        fill(merged.cores, s.cores);
        fill(merged.node_key, s.node_key);
    }
    return merged;
}

}  // namespace pfarm
