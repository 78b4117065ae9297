// Checking a farmed loop's outputs against its sequential loop: shared by the apps with floating-point results.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>

namespace pfarm::apps {

/// Element i matches when |got - expected| <= tolerance x (1 + |expected|) (NaN never matches); the largest
/// absolute error and the largest relative error |got - expected| / (1 + |expected|) are both kept.
struct comparison {
    double max_abs_error = 0.0;
    double max_rel_error = 0.0;
    std::int64_t mismatches = 0;
    bool ok() const { return mismatches == 0; }
};

inline comparison compare(std::span<const double> got, std::span<const double> expected, double tolerance = 1e-9) {
    comparison r;
    if (got.size() != expected.size()) {
        r.mismatches = static_cast<std::int64_t>(std::max(got.size(), expected.size()));
        r.max_abs_error = r.max_rel_error = std::numeric_limits<double>::infinity();
        return r;
    }
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double e = std::abs(got[i] - expected[i]), rel = e / (1.0 + std::abs(expected[i]));
        if (!(rel <= tolerance)) ++r.mismatches;
        r.max_abs_error = std::isnan(e) ? e : std::max(r.max_abs_error, e);
        r.max_rel_error = std::isnan(rel) ? rel : std::max(r.max_rel_error, rel);
    }
    return r;
}

}  // namespace pfarm::apps
