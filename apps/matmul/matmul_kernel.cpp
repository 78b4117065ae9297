// Matrix multiplication's kernel: the problem for each loop shape, one row of Z as a task, the sequential loop
// and Freivalds' check (matmul_kernel.hpp).
#include "app_support.hpp"
#include "matmul_kernel.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <cmath>

namespace pfarm::apps::matmul {

namespace {

using pfarm::apps::splitmix64;

}  // namespace

shape parse_shape(const std::string& text) {
    if (text == "uniform") return shape::uniform;
    if (text == "increasing") return shape::increasing;
    if (text == "decreasing") return shape::decreasing;
    if (text == "random") return shape::random;
    throw invalid_argument("--shape", "is '" + text + "'; expected uniform, increasing, decreasing or random");
}

const char* to_string(shape s) {
    switch (s) {
        case shape::uniform: return "uniform";
        case shape::increasing: return "increasing";
        case shape::decreasing: return "decreasing";
        case shape::random: return "random";
    }
    return "?";
}

problem make_problem(int n, shape loop, std::uint64_t seed) {
    if (n < 1 || n > max_n)
        throw invalid_argument("--size", "is " + std::to_string(n) + "; expected 1 to " + std::to_string(max_n));
    problem p;
    p.n = n;
    p.loop = loop;
    const auto un = static_cast<std::size_t>(n);
    p.lo.resize(un);
    p.hi.resize(un);
    splitmix64 rng{seed};
    for (int i = 0; i < n; ++i) {
        const auto ui = static_cast<std::size_t>(i);
        switch (loop) {
            case shape::uniform: p.lo[ui] = 0, p.hi[ui] = n; break;
            case shape::increasing: p.lo[ui] = 0, p.hi[ui] = i + 1; break;
            case shape::decreasing: p.lo[ui] = i, p.hi[ui] = n; break;
            case shape::random: p.lo[ui] = 0, p.hi[ui] = 1 + rng.below(n); break;
        }
    }
    p.x.assign(un * un, 0.0);
    p.y.resize(un * un);
    for (std::size_t i = 0; i < un; ++i)
        for (std::size_t j = 0; j < un; ++j) {
            const double v = rng.uniform();  // drawn for every entry, so Y does not depend on the shape
            if (static_cast<int>(j) >= p.lo[i] && static_cast<int>(j) < p.hi[i]) p.x[i * un + j] = v;
        }
    for (double& v : p.y) v = rng.uniform();
    return p;
}

void row(const problem& p, int i, std::span<double> z) {
    const auto un = static_cast<std::size_t>(p.n);
    const auto ui = static_cast<std::size_t>(i);
    std::fill(z.begin(), z.end(), 0.0);
    double* out = z.data();
    // i-j-k order: the inner loop runs along rows of Y and Z (contiguous, vectorisable); each Z[i][k] still
    // sums its terms in increasing j, as Yang, Cheng & Shih's loop does.
    for (auto j = static_cast<std::size_t>(p.lo[ui]); j < static_cast<std::size_t>(p.hi[ui]); ++j) {
        const double xij = p.x[ui * un + j];
        const double* yj = p.y.data() + j * un;
        for (std::size_t k = 0; k < un; ++k) out[k] += xij * yj[k];
    }
}

std::vector<double> sequential(const problem& p) {
    const auto n = static_cast<std::size_t>(p.n);
    std::vector<double> z(n * n);
    // Y transposed, so that the inner loop reads column k of Y contiguously; the loop and its summation order
    // are Yang, Cheng & Shih's.
    std::vector<double> yt(n * n);
    for (std::size_t j = 0; j < n; ++j)
        for (std::size_t k = 0; k < n; ++k) yt[k * n + j] = p.y[j * n + k];
    const double* x = p.x.data();
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t i = 0; i < n; ++i) {
            double s = 0.0;
            for (std::size_t j = 0; j < n; ++j) s += x[i * n + j] * yt[k * n + j];
            z[i * n + k] = s;
        }
    return z;
}

double freivalds_error(const problem& p, std::span<const double> z, int rounds, std::uint64_t seed) {
    const auto n = static_cast<std::size_t>(p.n);
    splitmix64 rng{seed ^ 0x5deece66dull};
    std::vector<double> v(n), yv(n);
    double worst = 0.0;
    for (int r = 0; r < rounds; ++r) {
        for (double& e : v) e = rng.uniform();
        for (std::size_t j = 0; j < n; ++j) {
            double s = 0.0;
            for (std::size_t k = 0; k < n; ++k) s += p.y[j * n + k] * v[k];
            yv[j] = s;
        }
        for (std::size_t i = 0; i < n; ++i) {
            double xyv = 0.0, scale = 0.0, zv = 0.0;
            for (std::size_t j = 0; j < n; ++j) {
                xyv += p.x[i * n + j] * yv[j];
                scale += std::abs(p.x[i * n + j]) * std::abs(yv[j]);
            }
            for (std::size_t k = 0; k < n; ++k) {
                zv += z[i * n + k] * v[k];
                scale += std::abs(z[i * n + k]) * std::abs(v[k]);
            }
            const double e = std::abs(zv - xyv) / (1.0 + scale);
            if (std::isnan(e)) return e;
            worst = std::max(worst, e);
        }
    }
    return worst;
}

}  // namespace pfarm::apps::matmul
