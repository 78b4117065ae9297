// The adjoint convolution of Han & Chronopoulos, "Scalable loop self-scheduling schemes implemented on large-scale
// clusters", section V.A:
//
//   FOR I = 1 TO N*N DO
//     FOR J = I TO N*N DO
//       A(I) = A(I) + X * B(J) * C(J - I)
//
// One task is one iteration I of the outer loop; its cost, N*N - I + 1 multiply-adds, decreases with I
// (the paper's O(N^2 - i)), which is what makes the loop hard to balance. The paper runs N = 800 on random arrays.
#pragma once

#include "compare.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace pfarm::apps::adjoint {

/// The arrays of one instance, generated from a seed so that every rank builds the same ones.
struct problem {
    int n = 0;               ///< N: the loop has N*N iterations
    double x = 0.0;          ///< the scalar X
    std::vector<double> a0;  ///< A(I) before the loop, at a0[I - 1]
    std::vector<double> b;   ///< B(J) at b[J - 1]
    std::vector<double> c;   ///< C(K), K = 0 .. N*N - 1, at c[K]
    std::int64_t iterations() const { return static_cast<std::int64_t>(n) * n; }
};

/// The largest N accepted: N*N tasks and three arrays of N*N doubles.
inline constexpr int max_n = 20000;

/// X, A, B and C uniform in [-1, 1) from `seed` (splitmix64: the same on every platform).
/// Throws pfarm::invalid_argument("--size") unless 1 <= n <= max_n.
problem make_problem(int n, std::uint64_t seed);

/// A(I) after the loop, for one I in [1, N*N]: the body of one task.
inline double element(const problem& p, std::int64_t i) {
    const auto first = static_cast<std::size_t>(i - 1);
    const std::size_t count = static_cast<std::size_t>(p.iterations()) - first;  // J = I .. N*N
    const double* b = p.b.data() + first;  // B(J) = b[J - I]
    const double* c = p.c.data();          // C(J - I) = c[J - I]
    double a = p.a0[first];
    for (std::size_t k = 0; k < count; ++k) a = a + p.x * b[k] * c[k];
    return a;
}

/// The whole loop, sequentially: A(I) at [I - 1].
std::vector<double> sequential(const problem& p);

/// Outputs against the sequential loop (apps/common/compare.hpp).
using pfarm::apps::comparison;
using pfarm::apps::compare;

}  // namespace pfarm::apps::adjoint
