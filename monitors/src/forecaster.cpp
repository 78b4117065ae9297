// The NWS-style forecaster and the forecasting monitor that wraps another monitor (forecaster.hpp).
#include "pfarm/forecaster.hpp"

#include "detail.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace pfarm {

namespace {
constexpr std::array<forecast_method, forecast_method_count> all_methods = {
    forecast_method::last_value, forecast_method::running_mean, forecast_method::median,
    forecast_method::exponential_smoothing};

constexpr std::array<reading, 5> numeric_readings = {reading::availability, reading::run_queue, reading::load1,
                                                     reading::latency, reading::benchmark};

std::optional<double>* field(resource_sample& s, reading r) {
    switch (r) {
    case reading::availability: return &s.availability;
    case reading::run_queue: return &s.run_queue;
    case reading::load1: return &s.load1;
    case reading::latency: return &s.latency;
    case reading::benchmark: return &s.benchmark;
    default: return nullptr;
    }
}
}  // namespace

std::string_view to_string(forecast_method m) noexcept {
    switch (m) {
    case forecast_method::last_value: return "last_value";
    case forecast_method::running_mean: return "running_mean";
    case forecast_method::median: return "median";
    case forecast_method::exponential_smoothing: return "exponential_smoothing";
    }
    return "unknown";
}

forecaster::forecaster(forecaster_options options) : options_(options) {
    if (options_.window < 1) throw invalid_argument("window", "is 0; expected >= 1");
    if (!(options_.alpha > 0 && options_.alpha <= 1))
        throw invalid_argument("alpha", "is " + detail::format_number(options_.alpha) + "; expected in (0, 1]");
}

double forecaster::prediction(forecast_method m) const {
    if (count_ == 0) throw error("forecaster: no observation yet; observe() a value before predicting");
    switch (m) {
    case forecast_method::last_value: return last_;
    case forecast_method::running_mean: return sum_ / static_cast<double>(count_);
    case forecast_method::median: {
        std::vector<double> v(history_.begin(), history_.end());
        const std::size_t mid = v.size() / 2;
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
        if (v.size() % 2 == 1) return v[mid];
        const double upper = v[mid];
        const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
        return (lower + upper) / 2;
    }
    case forecast_method::exponential_smoothing: return smoothed_;
    }
    throw internal_error("forecaster: unknown method");
}

void forecaster::observe(double value) {
    if (!std::isfinite(value))
        throw invalid_argument("value", "is " + detail::format_number(value) + "; expected a finite number");
    if (count_ > 0) {
        for (std::size_t i = 0; i < forecast_method_count; ++i) {
            const double e = std::abs(prediction(all_methods[i]) - value);
            if (options_.error_window == 0) {
                error_sums_[i] += e;
            } else {
                errors_[i].push_back(e);
                if (errors_[i].size() > options_.error_window) errors_[i].pop_front();
            }
        }
        ++scored_;
        smoothed_ = options_.alpha * value + (1 - options_.alpha) * smoothed_;
    } else {
        smoothed_ = value;
    }
    last_ = value;
    sum_ += value;
    ++count_;
    history_.push_back(value);
    if (history_.size() > options_.window) history_.pop_front();
}

std::optional<double> forecaster::mean_absolute_error(forecast_method m) const {
    const auto i = static_cast<std::size_t>(m);
    if (scored_ == 0) return std::nullopt;
    if (options_.error_window == 0) return error_sums_[i] / static_cast<double>(scored_);
    double sum = 0;  // summed afresh: a running sum of a sliding window drifts by rounding
    for (double x : errors_[i]) sum += x;
    return sum / static_cast<double>(errors_[i].size());
}

forecast_method forecaster::best_method() const {
    forecast_method best = forecast_method::last_value;
    std::optional<double> best_error;
    for (forecast_method m : all_methods) {
        const auto e = mean_absolute_error(m);
        if (e && (!best_error || *e < *best_error)) {
            best = m;
            best_error = e;
        }
    }
    return best;
}

double forecaster::predict() const { return prediction(best_method()); }

forecasting_monitor::forecasting_monitor(std::unique_ptr<monitor> inner, forecaster_options options)
    : inner_(std::move(inner)), options_(options) {
    if (!inner_) throw invalid_argument("inner", "is null; expected a monitor to forecast");
    forecaster check(options_);  // validates the options now rather than at the first read
}

std::string forecasting_monitor::name() const { return inner_->name() + "+forecast"; }

resource_sample forecasting_monitor::read() {
    resource_sample s = inner_->read();
    for (std::size_t i = 0; i < numeric_readings.size(); ++i) {
        std::optional<double>* value = field(s, numeric_readings[i]);
        if (!*value) continue;
        if (!forecasters_[i]) forecasters_[i].emplace(options_);
        forecasters_[i]->observe(**value);
        *value = forecasters_[i]->predict();
    }
    return s;
}

const forecaster* forecasting_monitor::forecaster_for(reading r) const {
    for (std::size_t i = 0; i < numeric_readings.size(); ++i)
        if (numeric_readings[i] == r) return forecasters_[i] ? &*forecasters_[i] : nullptr;
    return nullptr;
}

}  // namespace pfarm
