// pfarm metrics: percent imbalance and COV of the workers' finishing times (metrics.hpp).
#include "pfarm/metrics.hpp"

#include <algorithm>
#include <cmath>

namespace pfarm {

double percent_imbalance(std::span<const double> finish) {
    if (finish.size() < 2) return 0.0;
    const double max = *std::max_element(finish.begin(), finish.end());
    if (max <= 0.0) return 0.0;
    double sum = 0.0;
    for (double t : finish) sum += t;
    const double p = static_cast<double>(finish.size());
    return (max - sum / p) / max * p / (p - 1.0) * 100.0;
}

double coefficient_of_variation(std::span<const double> finish) {
    if (finish.empty()) return 0.0;
    double sum = 0.0;
    for (double t : finish) sum += t;
    const double mean = sum / static_cast<double>(finish.size());
    if (mean <= 0.0) return 0.0;
    double squares = 0.0;
    for (double t : finish) squares += (t - mean) * (t - mean);
    return std::sqrt(squares / static_cast<double>(finish.size())) / mean;
}

}  // namespace pfarm
