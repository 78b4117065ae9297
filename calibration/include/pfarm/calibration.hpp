// pfarm calibration: fitness F, CV and installment factor k from measured times and monitor readings; statistics
// only, no messaging.
//
// Gonzalez-Velez & Cole, "Adaptive statistical scheduling of divisible workloads in heterogeneous systems" (2009),
// section 3.1: each worker runs one task; its time t_i gives the
// fitness F_i = (1/t_i) / sum_j (1/t_j) (eq. 4); the dispersion of the times gives CV = sigma / mean (eq. 7,
// population sigma) and the installment factor k = ln(S)^CV (eq. 8).
#pragma once

#include "pfarm/sample.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace pfarm {

/// Mean, population standard deviation and coefficient of variation of a sample.
struct statistics {
    double mean = 0.0;
    double stddev = 0.0;  ///< population (divides by n), as eq. 7 defines it
    double cv = 0.0;      ///< stddev / mean
};

/// Population statistics of `values`. Throws pfarm::invalid_argument (naming `argument`) if it is empty
/// or holds a value that is not finite and positive.
statistics describe(std::span<const double> values, const std::string& argument = "times");

/// Eq. 4: F_i = (1/t_i) / sum_j (1/t_j). Every t_i must be finite and > 0 (else invalid_argument naming
/// `argument`). The result is positive and sums to 1.
std::vector<double> fitness_from_times(std::span<const double> times, const std::string& argument = "times");

/// Eq. 8: k = ln(S)^CV, S = all tasks of the run (S >= 1), CV >= 0. k is 1 when CV = 0 at every S.
/// For S < 3, ln(S) < 1.1 and k would fall below 1: pfarm clamps k to at least 1, because k < 1 would hand
/// out more than the remaining work in the first round.
double installment_factor(std::int64_t total_tasks, double cv);

/// Heterogeneity ratio of Yang, Cheng & Shih, "On development of an efficient parallel loop self-scheduling for grid
/// computing environments", section 3.2: HR = min(bm) / max(bm) of the workers' benchmark values (or
/// speeds), in (0, 1]; 1 is a homogeneous system. Values must be finite and > 0 (invalid_argument naming
/// `argument`).
double heterogeneity_ratio(std::span<const double> benchmark, const std::string& argument = "benchmark");

/// Performance ratio of Yang et al., "A performance-based approach to loop self-scheduling on heterogeneous PC
/// clusters" (HPLS), section 3.1: PF_j = (1/t_j) / sum_i (1/t_i) from measured application times, the share of
/// the static phase worker j gets. Numerically eq. 4 on the same times.
std::vector<double> performance_ratio(std::span<const double> times, const std::string& argument = "times");

/// How a calibration turns measured times into F.
enum class calibration_mode {
    none,         ///< the technique needs no calibration
    times_only,   ///< eq. 4 on the measured times
    univariate,   ///< eq. 5 fit on availability (calibration issue)
    multivariate  ///< eq. 6 fit on latency and availability (calibration issue)
};

/// A least-squares fit: coefficients c0, c1[, c2] and the residual sum of squares.
struct linear_fit {
    std::vector<double> coefficients;
    double residual_sum_of_squares = 0.0;
};

/// The outcome of a calibration: what the schedulers read.
struct calibration_result {
    calibration_mode mode = calibration_mode::times_only;
    std::vector<double> times;    ///< each worker's measured time per calibration task (one task without a span)
    std::vector<double> fitness;  ///< F, positive, sums to 1
    statistics stats;             ///< of `times`
    double k = 1.0;               ///< ln(S)^CV
    std::vector<double> fitted;   ///< the fitted times F was computed from (statistical modes), else empty
    linear_fit fit;               ///< the regression (statistical modes), else empty
    std::string note;             ///< what was repaired or why a statistical mode fell back, empty otherwise
    /// The calibration span the times were measured over (seconds; the farmer's, farmer.hpp "Calibration span"):
    /// each worker calibrated until its calibration chunks took this long (or reached their cap); 0: one task each.
    double span = 0.0;
};

/// Times-only calibration (Algorithm 1 of Gonzalez-Velez & Cole, times-only branch) for a run of `total_tasks` tasks.
calibration_result calibrate_times_only(std::span<const double> times, std::int64_t total_tasks);

/// Parses "times", "univariate", "multivariate" (technique_options::calibration, the --calibration option);
/// unknown_name naming "calibration" otherwise.
calibration_mode parse_calibration_mode(const std::string& name);
std::string to_string(calibration_mode mode);

/// Scaled availability a'_i = a_i * bm_i / max(bm) (Gonzalez-Velez & Cole, section 3.1.1). Without benchmark values
/// (`benchmark` empty) every rp_i is 1 and a' = a. Throws invalid_argument on non-finite or non-positive input.
std::vector<double> scaled_availability(std::span<const double> availability, std::span<const double> benchmark);

/// Eq. 5: t = c0 + c1 a', through gsl_fit_linear. Throws pfarm::error when the fit is under-determined
/// (fewer than 2 workers) or singular (all a' equal).
linear_fit fit_univariate(std::span<const double> times, std::span<const double> scaled_availability);

/// Eq. 6: t = c0 + c1 l + c2 a'^2, through gsl_multifit_linear. Throws pfarm::error when under-determined
/// (fewer than 3 workers) or singular (the design matrix has rank < 3).
linear_fit fit_multivariate(std::span<const double> times, std::span<const double> latency,
                            std::span<const double> scaled_availability);

/// Algorithm 1 of Gonzalez-Velez & Cole in any mode. `samples` (one per worker; ignored for times-only) supply
/// availability, latency and benchmark. What goes wrong in practice has one defined behaviour each
/// (docs/calibration.md):
/// - a time of 0 (a timer too coarse for a very short task) is replaced by the smallest positive time measured
///   (all 0: equal times), with a note;
/// - a negative, NaN or infinite time or reading: invalid_argument naming it and the worker;
/// - a reading the mode needs is missing: pfarm::error naming the reading and the worker (the run stops);
/// - an under-determined or singular fit, or a fitted time that is not finite and positive: times-only on the
///   measured times, with the reason in `note`.
/// F is always positive and sums to 1.
calibration_result calibrate(calibration_mode mode, std::span<const double> times,
                             std::span<const resource_sample> samples, std::int64_t total_tasks);

}  // namespace pfarm
