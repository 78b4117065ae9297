// Statistical calibration of Gonzalez-Velez & Cole, "Adaptive statistical scheduling of divisible workloads in
// heterogeneous systems", section 3.1.1: times fitted to scaled availability (eq. 5) or to
// latency and squared scaled availability (eq. 6) through GSL, then F by eq. 4 on the fitted times.
// GSL's error handler is off while pfarm calls it (an error is pfarm's to report, never an abort); every status is
// checked.
#include "pfarm/calibration.hpp"
#include "pfarm/error.hpp"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_multifit.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

namespace pfarm {

namespace {

/// Turns GSL's abort-on-error handler off for the scope, and restores the previous one.
class gsl_handler_off {
public:
    gsl_handler_off() : previous_(gsl_set_error_handler_off()) {}
    ~gsl_handler_off() { gsl_set_error_handler(previous_); }
    gsl_handler_off(const gsl_handler_off&) = delete;
    gsl_handler_off& operator=(const gsl_handler_off&) = delete;

private:
    gsl_error_handler_t* previous_;
};

void check_gsl(int status, const char* call) {
    if (status != GSL_SUCCESS) throw error(std::string(call) + " failed: " + gsl_strerror(status));
}

void check_readings(std::span<const double> values, const std::string& what) {
    for (std::size_t i = 0; i < values.size(); ++i)
        if (!std::isfinite(values[i]) || values[i] < 0.0)
            throw invalid_argument(what, "of worker " + std::to_string(i) + " is " + std::to_string(values[i]) +
                                             "; expected a finite value >= 0");
}

bool all_equal(std::span<const double> v) {
    return std::all_of(v.begin(), v.end(), [&](double x) { return x == v.front(); });
}

/// The reading `get` of every sample, or invalid_argument naming the reading that is missing: bad input, whether
/// a tool's list lacks it (pfarm-chunks --calibration univariate without --availability) or no monitor reads it.
template <class Get>
std::vector<double> readings(std::span<const resource_sample> samples, const char* name, Get get) {
    std::vector<double> out;
    out.reserve(samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
        const std::optional<double> v = get(samples[i]);
        if (!v)
            throw invalid_argument(name, "missing for worker " + std::to_string(i) +
                                             ": the calibration needs it from every worker (a monitor that reads it, "
                                             "or a value per worker)");
        out.push_back(*v);
    }
    check_readings(out, name);
    return out;
}

}  // namespace

calibration_mode parse_calibration_mode(const std::string& name) {
    if (name == "times" || name == "times-only") return calibration_mode::times_only;
    if (name == "univariate") return calibration_mode::univariate;
    if (name == "multivariate") return calibration_mode::multivariate;
    throw unknown_name("calibration", "unknown mode '" + name + "'; expected times, univariate or multivariate");
}

std::string to_string(calibration_mode mode) {
    switch (mode) {
    case calibration_mode::none: return "none";
    case calibration_mode::times_only: return "times";
    case calibration_mode::univariate: return "univariate";
    case calibration_mode::multivariate: return "multivariate";
    }
    return "unknown";
}

std::vector<double> scaled_availability(std::span<const double> availability, std::span<const double> benchmark) {
    for (std::size_t i = 0; i < availability.size(); ++i)
        if (!std::isfinite(availability[i]) || availability[i] <= 0.0 || availability[i] > 1.0)
            throw invalid_argument("availability", "of worker " + std::to_string(i) + " is " +
                                                       std::to_string(availability[i]) + "; expected a value in (0, 1]");
    std::vector<double> scaled(availability.begin(), availability.end());
    if (benchmark.empty()) return scaled;
    if (benchmark.size() != availability.size())
        throw invalid_argument("benchmark", "has " + std::to_string(benchmark.size()) + " values; expected " +
                                                std::to_string(availability.size()));
    for (std::size_t i = 0; i < benchmark.size(); ++i)
        if (!std::isfinite(benchmark[i]) || benchmark[i] <= 0.0)
            throw invalid_argument("benchmark", "of worker " + std::to_string(i) + " is " +
                                                    std::to_string(benchmark[i]) + "; expected a finite value > 0");
    const double best = *std::max_element(benchmark.begin(), benchmark.end());
    for (std::size_t i = 0; i < scaled.size(); ++i) scaled[i] *= benchmark[i] / best;
    return scaled;
}

linear_fit fit_univariate(std::span<const double> times, std::span<const double> a) {
    if (times.size() != a.size()) throw invalid_argument("availability", "count differs from the times' count");
    if (times.size() < 2) throw error("univariate fit is under-determined: " + std::to_string(times.size()) +
                                      " worker(s) for 2 coefficients");
    if (all_equal(a)) throw error("univariate fit is singular: every worker has the same scaled availability");
    gsl_handler_off guard;
    double c0 = 0, c1 = 0, cov00 = 0, cov01 = 0, cov11 = 0, sumsq = 0;
    check_gsl(gsl_fit_linear(a.data(), 1, times.data(), 1, times.size(), &c0, &c1, &cov00, &cov01, &cov11, &sumsq),
              "gsl_fit_linear");
    if (!std::isfinite(c0) || !std::isfinite(c1)) throw error("univariate fit gave non-finite coefficients");
    return {{c0, c1}, sumsq};
}

linear_fit fit_multivariate(std::span<const double> times, std::span<const double> latency,
                            std::span<const double> a) {
    const std::size_t n = times.size(), p = 3;
    if (latency.size() != n || a.size() != n)
        throw invalid_argument("latency", "or availability count differs from the times' count");
    if (n < p) throw error("multivariate fit is under-determined: " + std::to_string(n) +
                           " worker(s) for 3 coefficients");
    gsl_handler_off guard;
    const std::unique_ptr<gsl_matrix, decltype(&gsl_matrix_free)> x(gsl_matrix_alloc(n, p), gsl_matrix_free);
    const std::unique_ptr<gsl_vector, decltype(&gsl_vector_free)> y(gsl_vector_alloc(n), gsl_vector_free);
    const std::unique_ptr<gsl_vector, decltype(&gsl_vector_free)> c(gsl_vector_alloc(p), gsl_vector_free);
    const std::unique_ptr<gsl_matrix, decltype(&gsl_matrix_free)> cov(gsl_matrix_alloc(p, p), gsl_matrix_free);
    const std::unique_ptr<gsl_multifit_linear_workspace, decltype(&gsl_multifit_linear_free)> work(
        gsl_multifit_linear_alloc(n, p), gsl_multifit_linear_free);
    if (!x || !y || !c || !cov || !work) throw error("multivariate fit: GSL could not allocate its workspace");
    for (std::size_t i = 0; i < n; ++i) {
        gsl_matrix_set(x.get(), i, 0, 1.0);
        gsl_matrix_set(x.get(), i, 1, latency[i]);
        gsl_matrix_set(x.get(), i, 2, a[i] * a[i]);
        gsl_vector_set(y.get(), i, times[i]);
    }
    double chisq = 0;
    check_gsl(gsl_multifit_linear(x.get(), y.get(), c.get(), cov.get(), &chisq, work.get()), "gsl_multifit_linear");
    // gsl_multifit_linear solves through an SVD; a rank-deficient design (equal latencies, say) is singular.
    const std::size_t rank = gsl_multifit_linear_rank(1e-10, work.get());
    if (rank < p)
        throw error("multivariate fit is singular: the design matrix [1, l, a'^2] has rank " + std::to_string(rank) +
                    " < 3 (equal latencies or availabilities?)");
    linear_fit fit{{gsl_vector_get(c.get(), 0), gsl_vector_get(c.get(), 1), gsl_vector_get(c.get(), 2)}, chisq};
    for (double v : fit.coefficients)
        if (!std::isfinite(v)) throw error("multivariate fit gave non-finite coefficients");
    return fit;
}

calibration_result calibrate(calibration_mode mode, std::span<const double> measured,
                             std::span<const resource_sample> samples, std::int64_t total_tasks) {
    if (measured.empty()) throw invalid_argument("times", "is empty; expected one per worker");
    std::vector<double> times(measured.begin(), measured.end());
    check_readings(times, "times");
    std::string note;
    // A timer too coarse for a very short task reads 0: such a worker is taken to be as fast as the fastest
    // measured one (all 0: all equal), rather than infinitely fast.
    double smallest = 0.0;
    for (double t : times)
        if (t > 0.0 && (smallest == 0.0 || t < smallest)) smallest = t;
    if (std::any_of(times.begin(), times.end(), [](double t) { return t == 0.0; })) {
        note = "calibration time 0 (below the timer's resolution) replaced by the smallest measured time";
        for (double& t : times)
            if (t == 0.0) t = smallest > 0.0 ? smallest : 1.0;
    }
    calibration_result result = calibrate_times_only(times, total_tasks);
    result.note = note;
    if (mode == calibration_mode::times_only || mode == calibration_mode::none) return result;

    if (samples.size() != times.size())
        throw invalid_argument("samples", "has " + std::to_string(samples.size()) + " entries; expected one per worker (" +
                                              std::to_string(times.size()) + ")");
    const auto availability = readings(samples, "availability", [](const resource_sample& s) { return s.availability; });
    std::vector<double> benchmark;
    if (std::all_of(samples.begin(), samples.end(), [](const resource_sample& s) { return s.benchmark.has_value(); }))
        benchmark = readings(samples, "benchmark", [](const resource_sample& s) { return s.benchmark; });
    const auto scaled = scaled_availability(availability, benchmark);
    std::vector<double> latency;
    if (mode == calibration_mode::multivariate)
        latency = readings(samples, "latency", [](const resource_sample& s) { return s.latency; });

    const auto fall_back = [&](const std::string& why) {
        result.mode = calibration_mode::times_only;
        result.note = (note.empty() ? "" : note + "; ") + to_string(mode) + " calibration fell back to times-only: " + why;
        return result;
    };
    linear_fit fit;
    try {
        fit = mode == calibration_mode::univariate ? fit_univariate(times, scaled)
                                                   : fit_multivariate(times, latency, scaled);
    } catch (const invalid_argument&) {
        throw;
    } catch (const error& e) {
        return fall_back(e.what());
    }
    std::vector<double> fitted(times.size());
    for (std::size_t i = 0; i < times.size(); ++i) {
        const auto& c = fit.coefficients;
        fitted[i] = mode == calibration_mode::univariate ? c[0] + c[1] * scaled[i]
                                                         : c[0] + c[1] * latency[i] + c[2] * scaled[i] * scaled[i];
        if (!std::isfinite(fitted[i]) || fitted[i] <= 0.0)
            return fall_back("the fitted time of worker " + std::to_string(i) + " is " + std::to_string(fitted[i]));
    }
    result.mode = mode;
    result.fitness = fitness_from_times(fitted, "fitted times");
    result.fitted = std::move(fitted);
    result.fit = std::move(fit);
    return result;
}

}  // namespace pfarm
