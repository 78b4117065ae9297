// pfarm: forecasts in the manner of the Network Weather Service (Wolski et al. 1999; Gonzalez-Velez & Cole,
// "Adaptive statistical scheduling of divisible workloads in heterogeneous systems", section 4, used NWS forecasts
// of availability and latency): several simple predictors run side by side on a short history, and the one with
// the least error on the past one-step predictions gives the forecast.
#pragma once

#include "pfarm/monitor.hpp"

#include <array>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string_view>

namespace pfarm {

enum class forecast_method {
    last_value,             ///< the latest observation
    running_mean,           ///< the mean of every observation so far
    median,                 ///< the median of the last `window` observations
    exponential_smoothing,  ///< s <- alpha x + (1 - alpha) s, started at the first observation
};
inline constexpr std::size_t forecast_method_count = 4;

/// "last_value", "running_mean", "median", "exponential_smoothing".
std::string_view to_string(forecast_method m) noexcept;

struct forecaster_options {
    /// Observations kept for the median (>= 1).
    std::size_t window = 20;
    /// Exponential smoothing's weight of the newest observation, in (0, 1].
    double alpha = 0.3;
    /// One-step errors each method is judged by: 0 keeps them all (the NWS's cumulative error), n > 0 the
    /// last n, so that the choice follows a change of regime within n readings.
    std::size_t error_window = 0;
};

/// Keeps a short history of one reading and predicts its next value.
///
/// On each observe(x), every method's prediction made before x arrived is scored by |prediction - x|.
/// predict() returns the prediction of the method with the least mean absolute error over the scored
/// predictions (all, or the last error_window; ties go to the method listed first in forecast_method).
class forecaster {
public:
    /// Throws invalid_argument naming "window" or "alpha" when out of range.
    explicit forecaster(forecaster_options options = {});

    /// Throws invalid_argument ("value") on NaN or infinity.
    void observe(double value);
    /// The best method's prediction of the next value; throws pfarm::error before the first observation.
    double predict() const;
    forecast_method best_method() const;
    /// What method `m` predicts now; throws pfarm::error before the first observation.
    double prediction(forecast_method m) const;
    /// Mean absolute error of `m`'s one-step predictions (see error_window); empty before the second
    /// observation.
    std::optional<double> mean_absolute_error(forecast_method m) const;
    std::size_t observations() const noexcept { return count_; }

private:
    forecaster_options options_;
    std::size_t count_ = 0;
    double last_ = 0, sum_ = 0, smoothed_ = 0;
    std::deque<double> history_;
    std::array<std::deque<double>, forecast_method_count> errors_;  // kept when error_window > 0
    std::array<double, forecast_method_count> error_sums_{};        // over all errors when error_window == 0
    std::size_t scored_ = 0;
};

/// Wraps a monitor and forecasts each of its numeric readings (availability, run_queue, load1, latency,
/// benchmark) with a forecaster of its own: read() reads the inner monitor once, observes every reading it
/// got, and returns the forecasts of those readings; cores and node_key pass through unchanged.
class forecasting_monitor final : public monitor {
public:
    /// Throws invalid_argument ("inner") when `inner` is null.
    explicit forecasting_monitor(std::unique_ptr<monitor> inner, forecaster_options options = {});
    /// "<inner>+forecast".
    std::string name() const override;
    resource_sample read() override;
    /// The forecaster of reading `r`, or nullptr when it has never been read (and for cores and node_key).
    const forecaster* forecaster_for(reading r) const;

private:
    std::unique_ptr<monitor> inner_;
    forecaster_options options_;
    std::array<std::optional<forecaster>, 5> forecasters_;
};

}  // namespace pfarm
