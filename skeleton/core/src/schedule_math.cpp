// The arithmetic the techniques share (apportionment, trapezoid parameters, virtual powers, weights from a
// calibration), once for all of them, not in each technique; declarations in detail/schedule_math.hpp.
#include "pfarm/detail/schedule_math.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <numeric>
#include <string>

namespace pfarm::detail {

std::vector<task_count> apportion(task_count total, std::span<const double> weights) {
    const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
    std::vector<task_count> parts(weights.size(), 0);
    if (weights.empty() || total <= 0) return parts;
    std::vector<double> remainders(weights.size());
    task_count given = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
        const double exact = static_cast<double>(total) * weights[i] / sum;
        parts[i] = floor_count(exact);
        if (parts[i] > total) parts[i] = total;
        remainders[i] = exact - static_cast<double>(parts[i]);
        given += parts[i];
    }
    std::vector<std::size_t> order(weights.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return remainders[a] > remainders[b]; });
    // Remainders within the ceil/floor tolerance of the largest of their run are a tie, and a tie goes to the
    // lower index: weights typed as 0.3, 0.1 give remainders 0.4999999999999998 and 0.5 where 3, 1 give 0.5
    // twice, and both must split 2 tasks as 2 + 0.
    const double tie = 1e-9 * (1.0 + static_cast<double>(total));
    for (std::size_t g = 0; g < order.size();) {
        std::size_t e = g + 1;
        while (e < order.size() && remainders[order[g]] - remainders[order[e]] <= tie) ++e;
        std::sort(order.begin() + static_cast<std::ptrdiff_t>(g), order.begin() + static_cast<std::ptrdiff_t>(e));
        g = e;
    }
    // Floating error can leave `given` a little off in either direction; settle it one task at a time.
    for (std::size_t i = 0; given < total; i = (i + 1) % order.size(), ++given) ++parts[order[i]];
    for (std::size_t i = order.size(); given > total; --given) {
        i = (i == 0 ? order.size() : i) - 1;
        while (parts[order[i]] == 0) i = (i == 0 ? order.size() : i) - 1;
        --parts[order[i]];
    }
    return parts;
}

trapezoid trapezoid::make(task_count iterations, double p, std::optional<task_count> first,
                          std::optional<task_count> last) {
    trapezoid t;
    t.last = last.value_or(1);
    if (t.last < 1) throw invalid_argument("last", "is " + std::to_string(t.last) + "; expected >= 1");
    const auto default_first = static_cast<task_count>(std::floor(static_cast<double>(iterations) / (2.0 * p)));
    t.first = first.value_or(std::max<task_count>(default_first, 1));
    if (t.first < 1) throw invalid_argument("first", "is " + std::to_string(t.first) + "; expected >= 1");
    if (t.first < t.last)
        throw invalid_argument("first", "is " + std::to_string(t.first) + ", below the last chunk size " +
                                            std::to_string(t.last) + "; expected a first chunk >= the last");
    t.steps = std::max<task_count>(1, ceil_div(2 * iterations, t.first + t.last));
    t.delta = t.steps > 1 ? (t.first - t.last) / (t.steps - 1) : 0;
    return t;
}

std::vector<double> virtual_powers(std::span<const double> weights) {
    const double wmin = *std::min_element(weights.begin(), weights.end());
    std::vector<double> v(weights.begin(), weights.end());
    for (double& x : v) x /= wmin;
    return v;
}

std::vector<double> weights_or_calibration(const technique_options& options, const schedule_context& context,
                                           const char* technique_name) {
    if (!options.weights.empty()) return options.weights;
    if (context.calibration == nullptr)
        throw internal_error(std::string("technique '") + technique_name +
                             "' has neither weights nor a calibration");
    std::vector<double> w;
    w.reserve(context.calibration->times.size());
    for (double t : context.calibration->times) w.push_back(1.0 / t);
    return w;
}

}  // namespace pfarm::detail
