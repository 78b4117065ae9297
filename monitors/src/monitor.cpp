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

void require_readings(const resource_sample& sample, std::initializer_list<reading> needed,
                      std::string_view purpose, std::span<const std::string> failures) {
    std::string missing;
    for (reading r : needed) {
        if (has_reading(sample, r)) continue;
        if (!missing.empty()) missing += ", ";
        missing += to_string(r);
    }
    if (missing.empty()) return;
    std::string message = std::string(purpose) + " needs " + missing + ", which no monitor provided";
    if (failures.empty()) {
        message += " (no monitor that reads it is in use)";
    } else {
        message += "; failed monitors:";
        for (const std::string& f : failures) message += "\n  " + f;
    }
    throw error(message);
}

void validate_sample(const resource_sample& s, const std::string& argument) {
    auto check = [&](const std::optional<double>& value, const char* field, bool ok, const char* range) {
        if (!value) return;
        if (!std::isfinite(*value) || !ok)
            throw invalid_argument(argument, std::string(field) + " is " + detail::format_number(*value) +
                                                 "; expected " + range);
    };
    check(s.availability, "availability", s.availability && *s.availability > 0 && *s.availability <= 1,
          "in (0, 1]");
    check(s.run_queue, "run_queue", s.run_queue && *s.run_queue >= 1, ">= 1");
    check(s.load1, "load1", s.load1 && *s.load1 >= 0, ">= 0");
    check(s.latency, "latency", s.latency && *s.latency >= 0, ">= 0 seconds");
    check(s.benchmark, "benchmark", s.benchmark && *s.benchmark > 0, "> 0");
    if (s.cores && *s.cores < 1)
        throw invalid_argument(argument, "cores is " + std::to_string(*s.cores) + "; expected >= 1");
}

scripted_monitor::scripted_monitor(std::vector<resource_sample> script) : script_(std::move(script)) {
    if (script_.empty()) throw invalid_argument("script", "is empty; expected at least one sample");
    for (std::size_t i = 0; i < script_.size(); ++i) {
        try {
            validate_sample(script_[i], "script");
        } catch (const invalid_argument& e) {
            throw invalid_argument("script", "sample " + std::to_string(i) + ": " +
                                                 std::string(e.what()).substr(std::string("script: ").size()));
        }
    }
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
        resource_sample s;
        s.availability = availability[j];
        s.latency = latency[j];
        try {
            validate_sample(s, "worker " + std::to_string(j));
        } catch (const invalid_argument& e) {
            const bool bad_availability = !(std::isfinite(availability[j]) && availability[j] > 0 &&
                                            availability[j] <= 1);
            throw invalid_argument(bad_availability ? "availability" : "latency", e.what());
        }
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
