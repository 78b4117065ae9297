// Matrix multiplication Z = X Y (n x n), as Yang, Cheng & Shih, "On development of an efficient parallel loop
// self-scheduling for grid computing environments", and Yang et al., "A performance-based approach to loop
// self-scheduling on heterogeneous PC clusters" (HPLS), farm it: one task computes one row of Z, and every rank
// holds X and Y (HPLS, section 4.2: "every node has a copy of the input matrices locally").
//
// Yang, Cheng & Shih (Fig. 1, section 4.2.3) also run matrix multiplication as "simulated"
// increasing, decreasing and random workload loops. pfarm makes the work of row i really vary: row i of X
// holds nonzeros only in columns [lo_i, hi_i), and the task multiplies only those, so the product stays
// an ordinary X Y that any sequential code can check:
//   uniform     [0, n)              every row costs n^2 multiply-adds (a regular loop)
//   increasing  [0, i + 1)          X lower triangular: row i costs (i + 1) n
//   decreasing  [i, n)              X upper triangular: row i costs (n - i) n
//   random      [0, len_i)          len_i uniform in [1, n] from the seed
#pragma once

#include "compare.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace pfarm::apps::matmul {

enum class shape { uniform, increasing, decreasing, random };

/// "uniform", "increasing", "decreasing" or "random"; throws pfarm::invalid_argument("--shape") otherwise.
shape parse_shape(const std::string& text);
const char* to_string(shape s);

/// One instance, generated from a seed so that every rank builds the same matrices (row-major).
struct problem {
    int n = 0;
    shape loop = shape::uniform;
    std::vector<double> x;      ///< X, n x n, zero outside each row's [lo, hi)
    std::vector<double> y;      ///< Y, n x n
    std::vector<int> lo, hi;    ///< the nonzero columns of each row of X
    /// Multiply-adds of task i.
    std::int64_t work(int i) const { return static_cast<std::int64_t>(hi[static_cast<std::size_t>(i)] - lo[static_cast<std::size_t>(i)]) * n; }
};

/// The largest n accepted (three n x n matrices of doubles on every rank).
inline constexpr int max_n = 16384;

/// X (within the shape) and Y uniform in [-1, 1) from `seed` (splitmix64: the same on every platform).
/// Throws pfarm::invalid_argument("--size") unless 1 <= n <= max_n.
problem make_problem(int n, shape loop, std::uint64_t seed);

/// One task: z[k] = sum over j in [lo_i, hi_i) of X[i][j] Y[j][k], k in [0, n). z.size() must be n.
void row(const problem& p, int i, std::span<double> z);

/// Yang, Cheng & Shih's serial loop (k, i, j order, over all of X): Z row-major.
std::vector<double> sequential(const problem& p);

/// Freivalds' check: compares Z v with X (Y v) for `rounds` random vectors v from `seed`, in O(rounds n^2).
/// Returns the largest |(Z v)_i - (X Y v)_i| / (1 + sum_j |X_ij| |(Y v)_j| + sum_k |Z_ik| |v_k|)
/// seen: rounding-sized (about 1e-16 n) when Z is right, orders of magnitude larger for a wrong row.
double freivalds_error(const problem& p, std::span<const double> z, int rounds, std::uint64_t seed);

/// Outputs against the sequential loop (apps/common/compare.hpp).
using pfarm::apps::comparison;
using pfarm::apps::compare;

}  // namespace pfarm::apps::matmul
