// Times-only calibration and the statistics behind it: F, CV, k, and the heterogeneity and performance ratios
// (calibration.hpp; regression.cpp holds the statistical modes).
#include "pfarm/calibration.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace pfarm {

namespace {
void check_times(std::span<const double> values, const std::string& argument) {
    if (values.empty()) throw invalid_argument(argument, "is empty; expected one value per worker");
    for (std::size_t i = 0; i < values.size(); ++i) {
        const double v = values[i];
        if (!std::isfinite(v) || v <= 0.0)
            throw invalid_argument(argument, "entry " + std::to_string(i) + " is " + std::to_string(v) +
                                                 "; expected a finite value > 0");
    }
}
}  // namespace

statistics describe(std::span<const double> values, const std::string& argument) {
    check_times(values, argument);
    const double n = static_cast<double>(values.size());
    double sum = 0.0;
    for (double v : values) sum += v;
    const double mean = sum / n;
    double squares = 0.0;
    for (double v : values) squares += (v - mean) * (v - mean);
    const double stddev = std::sqrt(squares / n);
    return {mean, stddev, stddev / mean};
}

std::vector<double> fitness_from_times(std::span<const double> times, const std::string& argument) {
    check_times(times, argument);
    // Normalise by the smallest time first so that 1/t stays in range for extreme inputs.
    const double tmin = *std::min_element(times.begin(), times.end());
    std::vector<double> f(times.size());
    double sum = 0.0;
    for (std::size_t i = 0; i < times.size(); ++i) {
        f[i] = tmin / times[i];
        sum += f[i];
    }
    for (double& v : f) v /= sum;
    return f;
}

double installment_factor(std::int64_t total_tasks, double cv) {
    if (total_tasks < 1) throw invalid_argument("tasks", "is " + std::to_string(total_tasks) + "; expected >= 1");
    if (!std::isfinite(cv) || cv < 0.0)
        throw invalid_argument("cv", "is " + std::to_string(cv) + "; expected a finite value >= 0");
    const double k = std::pow(std::log(static_cast<double>(total_tasks)), cv);
    return std::max(1.0, k);
}

double heterogeneity_ratio(std::span<const double> benchmark, const std::string& argument) {
    check_times(benchmark, argument);
    return *std::min_element(benchmark.begin(), benchmark.end()) / *std::max_element(benchmark.begin(), benchmark.end());
}

std::vector<double> performance_ratio(std::span<const double> times, const std::string& argument) {
    return fitness_from_times(times, argument);
}

calibration_result calibrate_times_only(std::span<const double> times, std::int64_t total_tasks) {
    calibration_result r;
    r.mode = calibration_mode::times_only;
    r.times.assign(times.begin(), times.end());
    r.stats = describe(times, "times");
    r.fitness = fitness_from_times(times, "times");
    r.k = installment_factor(total_tasks, r.stats.cv);
    return r;
}

}  // namespace pfarm
