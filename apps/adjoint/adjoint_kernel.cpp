// The adjoint convolution's problem and its sequential loop, which the farmed tasks are checked against
// (adjoint_kernel.hpp).
#include "app_support.hpp"
#include "adjoint_kernel.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace pfarm::apps::adjoint {

namespace {

using pfarm::apps::splitmix64;

}  // namespace

problem make_problem(int n, std::uint64_t seed) {
    if (n < 1 || n > max_n)
        throw invalid_argument("--size", "is " + std::to_string(n) + "; expected 1 to " + std::to_string(max_n));
    problem p;
    p.n = n;
    const auto size = static_cast<std::size_t>(p.iterations());
    splitmix64 rng{seed};
    p.x = rng.uniform();
    p.a0.resize(size);
    p.b.resize(size);
    p.c.resize(size);
    for (auto* v : {&p.a0, &p.b, &p.c})
        for (double& e : *v) e = rng.uniform();
    return p;
}

std::vector<double> sequential(const problem& p) {
    std::vector<double> a(p.a0);
    const std::int64_t last = p.iterations();
    for (std::int64_t i = 1; i <= last; ++i)
        for (std::int64_t j = i; j <= last; ++j)
            a[static_cast<std::size_t>(i - 1)] = a[static_cast<std::size_t>(i - 1)] +
                                                 p.x * p.b[static_cast<std::size_t>(j - 1)] * p.c[static_cast<std::size_t>(j - i)];
    return a;
}

}  // namespace pfarm::apps::adjoint
