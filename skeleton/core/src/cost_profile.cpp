// pfarm scheduling core: a loop's cost profile learned from completed chunks (cost_profile.hpp says the model).
#include "pfarm/cost_profile.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace pfarm {

namespace {
/// The smoothness penalty's weight, relative to the mean diagonal of the chunks' Gram matrix: large enough to settle
/// what the chunks leave open, small enough that a cost step the chunks pin is kept.
constexpr double smoothness = 1e-3;
/// A ridge, relative to the same scale, that keeps the solve regular when the data fit exactly.
constexpr double ridge = 1e-12;
/// The lowest cost a bin is given, relative to the mean (noise can drive a bin's fitted cost to zero or below).
constexpr double lowest_cost = 1e-3;
/// eliminated_ is summed afresh after this many of its terms were replaced one by one, so that the rounding of
/// subtracting and adding terms does not build up.
constexpr int fresh_after_updates = 1024;

/// Solves m x = b in place (m: n x n, row-major, overwritten; b becomes x) by Gaussian elimination with partial
/// pivoting; n is at most the profile's bins. A zero pivot leaves its unknown at 0.
void solve(std::vector<double>& m, std::vector<double>& b, std::size_t n) {
    for (std::size_t col = 0; col < n; ++col) {
        std::size_t pivot = col;
        for (std::size_t r = col + 1; r < n; ++r)
            if (std::abs(m[r * n + col]) > std::abs(m[pivot * n + col])) pivot = r;
        if (m[pivot * n + col] == 0.0) continue;
        if (pivot != col) {
            for (std::size_t k = 0; k < n; ++k) std::swap(m[col * n + k], m[pivot * n + k]);
            std::swap(b[col], b[pivot]);
        }
        for (std::size_t r = col + 1; r < n; ++r) {
            const double f = m[r * n + col] / m[col * n + col];
            if (f == 0.0) continue;
            for (std::size_t k = col; k < n; ++k) m[r * n + k] -= f * m[col * n + k];
            b[r] -= f * b[col];
        }
    }
    for (std::size_t col = n; col-- > 0;) {
        double s = b[col];
        for (std::size_t k = col + 1; k < n; ++k) s -= m[col * n + k] * b[k];
        b[col] = m[col * n + col] != 0.0 ? s / m[col * n + col] : 0.0;
    }
}

/// Solves m x = b in place for a symmetric positive definite m (n x n, row-major; its lower triangle is overwritten
/// by the Cholesky factor) and returns true, or returns false, with b untouched, where a pivot is not positive (the
/// form is only semi-definite, or rounding made it so). Half the work of solve(): the form the fit solves is
/// positive definite (its ridge), and a farm with reclaim fits after every chunk of its end game.
bool solve_positive_definite(std::vector<double>& m, std::vector<double>& b, std::size_t n) {
    // The first `len` entries of rows x and y of m, multiplied and summed in four independent sums: one sum waits for
    // each addition before the next, four let the processor overlap them.
    const auto dot = [&m, n](std::size_t x, std::size_t y, std::size_t len) {
        const double* u = &m[x * n];
        const double* v = &m[y * n];
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        std::size_t k = 0;
        for (; k + 4 <= len; k += 4)
            s0 += u[k] * v[k], s1 += u[k + 1] * v[k + 1], s2 += u[k + 2] * v[k + 2], s3 += u[k + 3] * v[k + 3];
        for (; k < len; ++k) s0 += u[k] * v[k];
        return (s0 + s1) + (s2 + s3);
    };
    for (std::size_t j = 0; j < n; ++j) {
        const double d = m[j * n + j] - dot(j, j, j);
        if (!(d > 0.0)) return false;
        const double l = std::sqrt(d);
        m[j * n + j] = l;
        for (std::size_t i = j + 1; i < n; ++i) m[i * n + j] = (m[i * n + j] - dot(i, j, j)) / l;
    }
    std::vector<double> y(b);
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t k = 0; k < i; ++k) y[i] -= m[i * n + k] * y[k];
        y[i] /= m[i * n + i];
    }
    for (std::size_t i = n; i-- > 0;) {
        for (std::size_t k = i + 1; k < n; ++k) y[i] -= m[k * n + i] * y[k];
        y[i] /= m[i * n + i];
    }
    b = std::move(y);
    return true;
}

/// Union-find over bins and workers (workers after the bins): the connected groups the fit solves one by one.
struct union_find {
    std::vector<std::size_t> parent;
    explicit union_find(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), std::size_t{0}); }
    std::size_t find(std::size_t x) {
        while (parent[x] != x) x = parent[x] = parent[parent[x]];
        return x;
    }
    void join(std::size_t a, std::size_t b) { parent[find(a)] = find(b); }
};
}  // namespace

cost_profile::cost_profile(task_count tasks, int workers, int bins) : tasks_(tasks) {
    if (tasks < 1) throw invalid_argument("tasks", "is " + std::to_string(tasks) + "; expected >= 1");
    if (workers < 1) throw invalid_argument("workers", "is " + std::to_string(workers) + "; expected >= 1");
    if (bins < 1) throw invalid_argument("bins", "is " + std::to_string(bins) + "; expected >= 1");
    const auto n = static_cast<std::size_t>(std::min<task_count>(tasks, bins));
    gram_.assign(n * n, 0.0);
    cross_.resize(static_cast<std::size_t>(workers));
    q_.assign(static_cast<std::size_t>(workers), 0.0);
    cost_.assign(n, 1.0);
    speed_.assign(static_cast<std::size_t>(workers), 0.0);
    recorded_.assign(static_cast<std::size_t>(workers), 0);
    eliminated_.assign(n * n, 0.0);
    applied_.resize(static_cast<std::size_t>(workers));
    applied_q_.assign(static_cast<std::size_t>(workers), 0.0);
}

template <class F>
void cost_profile::for_each_bin(chunk c, F&& f) const {
    const auto n = static_cast<task_count>(cost_.size());
    for (task_count at = c.first, end = c.first + c.count; at < end;) {
        // Bin b holds the indices i with floor(n i / tasks) = b; the last one every index past the loop.
        const auto b = n * std::clamp<task_count>(at, 0, tasks_ - 1) / tasks_;
        const task_count bin_end = b + 1 == n ? end : std::min(end, ((b + 1) * tasks_ + n - 1) / n);
        const task_count in_bin = std::max<task_count>(1, bin_end - at);
        f(static_cast<int>(b), in_bin);
        at += in_bin;
    }
}

void cost_profile::record(int worker, chunk c, double seconds) {
    if (!(seconds > 0.0) || !std::isfinite(seconds) || c.count < 1 || q_.empty()) return;
    const std::size_t n = cost_.size();
    const double count = static_cast<double>(c.count);
    auto& h = cross_[static_cast<std::size_t>(worker)];
    if (h.empty()) h.assign(n, 0.0);
    // No allocation: this runs at every completion of a farm with reclaim.
    for_each_bin(c, [&](int i, task_count ni) {
        const auto row = static_cast<std::size_t>(i) * n;
        for_each_bin(c, [&](int j, task_count nj) {
            gram_[row + static_cast<std::size_t>(j)] += static_cast<double>(ni) * static_cast<double>(nj) / count;
        });
        h[static_cast<std::size_t>(i)] += seconds * static_cast<double>(ni) / count;
    });
    q_[static_cast<std::size_t>(worker)] += seconds * seconds / count;
    recorded_[static_cast<std::size_t>(worker)] = 1;
    fitted_ = false;
}

void cost_profile::update_eliminated() const {
    const std::size_t n = cost_.size();
    // Adds sign x h h^T / q over the bins where h is not zero.
    std::vector<std::size_t> touched;
    const auto add = [&](const std::vector<double>& h, double q, double sign) {
        if (!(q > 0.0) || h.empty()) return;
        touched.clear();
        for (std::size_t b = 0; b < n; ++b)
            if (h[b] != 0.0) touched.push_back(b);
        for (std::size_t i : touched) {
            const double hi = sign * h[i] / q;
            for (std::size_t j : touched) eliminated_[i * n + j] += hi * h[j];
        }
    };
    const int replaced = static_cast<int>(std::count(recorded_.begin(), recorded_.end(), char{1}));
    const bool afresh = updates_ + replaced > fresh_after_updates;
    if (afresh) {
        std::fill(eliminated_.begin(), eliminated_.end(), 0.0);
        updates_ = 0;
    } else {
        updates_ += replaced;
    }
    for (std::size_t w = 0; w < q_.size(); ++w) {
        if (!afresh && !recorded_[w]) continue;
        if (!afresh) add(applied_[w], applied_q_[w], -1.0);
        applied_[w] = cross_[w];
        applied_q_[w] = q_[w];
        add(applied_[w], applied_q_[w], 1.0);
        recorded_[w] = 0;
    }
}

void cost_profile::fit() const {
    if (fitted_) return;
    fitted_ = true;
    const std::size_t n = cost_.size(), workers = q_.size();
    update_eliminated();
    union_find g(n + workers);
    for (std::size_t w = 0; w < workers; ++w)
        if (q_[w] > 0.0)
            for (std::size_t b = 0; b < n; ++b)
                if (cross_[w][b] > 0.0) g.join(n + w, b);
    std::vector<bool> computed(n);
    for (std::size_t b = 0; b < n; ++b) computed[b] = gram_[b * n + b] > 0.0;
    for (std::size_t b = 0; b + 1 < n; ++b)
        if (computed[b] && computed[b + 1]) g.join(b, b + 1);  // the smoothness links them
    std::vector<bool> done(n, false);
    for (std::size_t first = 0; first < n; ++first) {
        if (!computed[first] || done[first]) continue;
        // One connected group: its computed bins.
        const std::size_t root = g.find(first);
        std::vector<std::size_t> bins;
        for (std::size_t b = first; b < n; ++b)
            if (computed[b] && g.find(b) == root) bins.push_back(b), done[b] = true;
        const std::size_t m = bins.size();
        std::vector<double> a(m * m);
        double trace = 0.0;
        // The group's form: its Gram matrix less its workers' eliminated speeds (a worker's terms lie on the bins it
        // computed, which are all in its group).
        for (std::size_t i = 0; i < m; ++i) {
            for (std::size_t j = 0; j < m; ++j) a[i * m + j] = gram_[bins[i] * n + bins[j]];
            trace += a[i * m + i];
            for (std::size_t j = 0; j < m; ++j) a[i * m + j] -= eliminated_[bins[i] * n + bins[j]];
        }
        const double scale = trace / static_cast<double>(m);
        for (std::size_t i = 0; i < m; ++i) {
            a[i * m + i] += ridge * scale;
            if (i + 1 < m && bins[i + 1] == bins[i] + 1) {  // adjacent bins: (c_i - c_{i+1})^2
                const double l = smoothness * scale;
                a[i * m + i] += l, a[(i + 1) * m + i + 1] += l;
                a[i * m + i + 1] -= l, a[(i + 1) * m + i] -= l;
            }
        }
        std::vector<double> c(m, 1.0);
        std::vector<double> factor = a;
        if (!solve_positive_definite(factor, c, m)) solve(a, c, m);
        double sum = std::accumulate(c.begin(), c.end(), 0.0);
        if (!(sum > 0.0) || !std::isfinite(sum)) {  // no fit: equal costs
            std::fill(c.begin(), c.end(), 1.0);
            sum = static_cast<double>(m);
        }
        const double mean = sum / static_cast<double>(m);
        for (std::size_t i = 0; i < m; ++i) cost_[bins[i]] = std::max(c[i] / mean, lowest_cost);
    }
    // Bins nobody computed cost what the nearest computed bin costs (the lower one at a tie).
    for (std::size_t b = 0; b < n; ++b) {
        if (computed[b]) continue;
        for (std::size_t d = 1; d < n; ++d) {
            if (b >= d && computed[b - d]) { cost_[b] = cost_[b - d]; break; }
            if (b + d < n && computed[b + d]) { cost_[b] = cost_[b + d]; break; }
        }
    }
    // Each speed from its worker's equations: s_w = (h_w . c) / q_w.
    for (std::size_t w = 0; w < workers; ++w) {
        if (!(q_[w] > 0.0)) continue;
        double hc = 0.0;
        for (std::size_t b = 0; b < n; ++b) hc += cross_[w][b] * cost_[b];
        speed_[w] = hc / q_[w];
    }
}

double cost_profile::speed(int worker) const {
    fit();
    return speed_[static_cast<std::size_t>(worker)];
}

double cost_profile::bin_cost(int b) const {
    fit();
    return cost_[static_cast<std::size_t>(b)];
}

double cost_profile::seconds_per_task(int worker, chunk c) const {
    fit();
    const double s = speed_[static_cast<std::size_t>(worker)];
    if (!(s > 0.0) || c.count < 1) return 0.0;
    double units = 0.0;
    for_each_bin(c, [&](int b, task_count in_bin) {
        units += static_cast<double>(in_bin) * cost_[static_cast<std::size_t>(b)];
    });
    return units / s / static_cast<double>(c.count);
}

}  // namespace pfarm
