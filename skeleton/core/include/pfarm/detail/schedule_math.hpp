// pfarm internals: the arithmetic techniques share (clipping, apportionment, trapezoids, powers), once, here.
#pragma once

#include "pfarm/technique.hpp"

#include <cmath>
#include <span>
#include <vector>

namespace pfarm::detail {

/// ceil(a / b) for a >= 0, b > 0.
constexpr task_count ceil_div(task_count a, task_count b) noexcept { return (a + b - 1) / b; }

/// max(1, v): a dynamic technique never answers 0 while tasks remain (0 means "stop this worker").
constexpr task_count at_least_one(task_count v) noexcept { return v < 1 ? 1 : v; }

/// ceil(x) of a non-negative real as a task count, robust to x = 12.000000000001 from rounding.
inline task_count ceil_count(double x) {
    const double r = std::round(x);
    if (std::fabs(x - r) < 1e-9 * (1.0 + std::fabs(x))) return static_cast<task_count>(r);
    return static_cast<task_count>(std::ceil(x));
}

/// floor(x) with the same tolerance.
inline task_count floor_count(double x) {
    const double r = std::round(x);
    if (std::fabs(x - r) < 1e-9 * (1.0 + std::fabs(x))) return static_cast<task_count>(r);
    return static_cast<task_count>(std::floor(x));
}

/// Splits `total` into integer parts proportional to `weights`, summing exactly to `total`
/// (largest-remainder / Hamilton apportionment): floor(total w_i / sum w) each, then one more to each of the
/// largest remainders. Ties go to the lower index; remainders within 1e-9 (1 + total) of each other are ties,
/// so weights typed as rounded decimals (0.3, 0.1) split like the integers they stand for (3, 1).
/// Used by dealdyn-* (S' by F) and the two-phase schemes (their static part by weight).
std::vector<task_count> apportion(task_count total, std::span<const double> weights);

/// Trapezoid self-scheduling parameters (Tzen & Ni 1993, as in Chronopoulos, Penmatsa, Yu & Yu, "Scalable loop
/// self-scheduling schemes for heterogeneous clusters" (2005), section 2).
struct trapezoid {
    task_count first = 1;  ///< F
    task_count last = 1;   ///< L
    task_count steps = 1;  ///< N = ceil(2I / (F + L))
    task_count delta = 0;  ///< D = floor((F - L) / (N - 1)), 0 when N = 1

    /// F = floor(I / (2p)) (at least 1) unless given; L = 1 unless given. Throws invalid_argument on
    /// F < L or L < 1. `p` may be fractional (DTSS uses the total virtual power V).
    static trapezoid make(task_count iterations, double p, std::optional<task_count> first,
                          std::optional<task_count> last);
    /// Chunk i (1-based) of the uncut sequence, F - (i-1) D, at least 1.
    task_count chunk(task_count i) const noexcept { return at_least_one(first - (i - 1) * delta); }
};

/// Stage bookkeeping of the factoring family: a stage is `p` chunks, all sized from the unassigned
/// count R_stage taken when the stage starts.
class stage_counter {
public:
    explicit stage_counter(int p = 1) : p_(p) {}
    /// Call once per chunk, before sizing it: returns R_stage (the stage's start value).
    task_count on_chunk(task_count remaining) noexcept {
        if (in_stage_ == 0) stage_start_ = remaining;
        if (++in_stage_ == p_) {
            in_stage_ = 0;
            ++stage_;
        }
        return stage_start_;
    }
    /// Index of the stage the next chunk belongs to.
    int stage() const noexcept { return stage_; }
    /// Index of the stage the chunk just counted belongs to.
    int last_stage() const noexcept { return in_stage_ == 0 ? stage_ - 1 : stage_; }

private:
    int p_;
    int in_stage_ = 0;
    int stage_ = 0;
    task_count stage_start_ = 0;
};

/// Relative powers V_j = w_j / min(w) (Han & Chronopoulos, "Scalable loop self-scheduling schemes implemented on
/// large-scale clusters", section III, and Chronopoulos et al. 2005, section 3: V_j = Speed(P_j) / min Speed).
std::vector<double> virtual_powers(std::span<const double> weights);

/// The weights a weighted technique uses: `options.weights` if given, else 1/t_j from the calibration
/// times. Throws internal_error when neither is available (the technique asked for no calibration).
std::vector<double> weights_or_calibration(const technique_options& options, const schedule_context& context,
                                           const char* technique_name);

}  // namespace pfarm::detail
