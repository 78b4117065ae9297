// pfarm calibration: statistics, not messaging (DESIGN.md principle 4).
//
// Seed 004 (Gonzalez-Velez & Cole 2009), section 3.1: each worker runs one task; its time t_i gives the
// fitness F_i = (1/t_i) / sum_j (1/t_j) (eq. 4); the dispersion of the times gives CV = sigma / mean (eq. 7,
// population sigma) and the installment factor k = ln(S)^CV (eq. 8).
#pragma once

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

/// How a calibration turns measured times into F.
enum class calibration_mode {
    none,         ///< the technique needs no calibration
    times_only,   ///< eq. 4 on the measured times
    univariate,   ///< eq. 5 fit on availability (calibration issue)
    multivariate  ///< eq. 6 fit on latency and availability (calibration issue)
};

/// The outcome of a calibration: what the schedulers read.
struct calibration_result {
    calibration_mode mode = calibration_mode::times_only;
    std::vector<double> times;    ///< measured time of the one calibration task per worker
    std::vector<double> fitness;  ///< F, positive, sums to 1
    statistics stats;             ///< of `times`
    double k = 1.0;               ///< ln(S)^CV
    std::string note;             ///< why a statistical mode fell back to times-only, empty otherwise
};

/// Times-only calibration (Algorithm 1 of seed 004, times-only branch) for a run of `total_tasks` tasks.
calibration_result calibrate_times_only(std::span<const double> times, std::int64_t total_tasks);

}  // namespace pfarm
