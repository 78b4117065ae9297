// pfarm metrics: the balance of a run's finishing times, one definition shared by the simulator and the MPI farm's
// report.
#pragma once

#include <span>

namespace pfarm {

/// Percent imbalance of finishing times t_j: (max - mean) / max * p/(p-1) * 100; 0 when p = 1 or max = 0.
double percent_imbalance(std::span<const double> finish);

/// Coefficient of variation of finishing times: population stddev / mean; 0 when the mean is 0.
double coefficient_of_variation(std::span<const double> finish);

}  // namespace pfarm
