// The calibrated modes of Gonzalez-Velez & Cole, "Adaptive statistical scheduling of divisible workloads in
// heterogeneous systems" (2009), Table 2: the single-round DEALDYN modes and
// the adaptive multi-round SCH_MULTI. (SCH_DEAL, the isometric single round, is `deal` in simple.cpp.)
#include "pfarm/detail/schedule_math.hpp"
#include "pfarm/detail/technique_families.hpp"
#include "pfarm/error.hpp"

#include <cmath>
#include <string>

namespace pfarm::detail {

namespace {

/// dealdyn-*: one round of S F_i tasks per worker, apportioned so that the round sums to exactly S
/// (largest remainder), S = the tasks left after calibration. F from the calibration `mode`.
class single_round final : public technique {
public:
    single_round(std::string name, calibration_mode mode, int p)
        : name_(std::move(name)), mode_(mode), given_(static_cast<std::size_t>(p), false) {}
    std::string name() const override { return name_; }
    calibration_mode needs_calibration() const override { return mode_; }
    void start(const schedule_context& c) override {
        if (c.calibration == nullptr) throw internal_error(name_ + ": started without a calibration");
        given_.assign(given_.size(), false);  // a new round (a hierarchical master's pool: farmer.hpp)
        shares_ = apportion(c.remaining, c.calibration->fitness);
    }
    task_count next(int w, task_count) override {
        const auto j = static_cast<std::size_t>(w);
        if (given_[j]) return 0;
        given_[j] = true;
        return shares_[j];
    }

private:
    std::string name_;
    calibration_mode mode_;
    std::vector<bool> given_;
    std::vector<task_count> shares_;
};

/// multi (SCH_MULTI, Gonzalez-Velez & Cole section 3.2 and eq. 9): after calibration, k = ln(S)^CV; in the first round
/// every worker gets max(1, floor(S'/k F_i + 0.5)) with the same S' (the tasks left after calibration);
/// afterwards each request gets max(1, floor(R/k F_i + 0.5)). F_i is refreshed from the worker's latest
/// per-task time (eq. 4 over the latest times of all workers); k stays fixed (--k pins it).
class multi_round final : public technique {
public:
    multi_round(const technique_options& o, int p)
        : pinned_k_(o.k), mode_(o.calibration.value_or(calibration_mode::times_only)),
          first_round_(static_cast<std::size_t>(p), true) {
        if (mode_ == calibration_mode::none)
            throw invalid_argument("calibration", "multi needs a calibration: times, univariate or multivariate");
        if (pinned_k_ && (!(*pinned_k_ > 0.0) || !std::isfinite(*pinned_k_)))
            throw invalid_argument("k", "is " + std::to_string(*pinned_k_) + "; expected a finite value > 0");
    }
    std::string name() const override { return "multi"; }
    calibration_mode needs_calibration() const override { return mode_; }
    void start(const schedule_context& c) override {
        if (c.calibration == nullptr) throw internal_error("multi: started without a calibration");
        k_ = pinned_k_.value_or(c.calibration->k);
        first_round_size_ = c.remaining;
        // F_i = (1/t_i) / sum_j (1/t_j), kept as the latest per-task times (fitted ones after a statistical
        // calibration) and their inverse sum, so that a refresh costs O(1) whatever p is.
        const auto& times = c.calibration->fitted.empty() ? c.calibration->times : c.calibration->fitted;
        inverse_.resize(times.size());
        inverse_sum_ = 0.0;
        for (std::size_t j = 0; j < inverse_.size(); ++j) inverse_sum_ += inverse_[j] = 1.0 / times[j];
    }
    task_count next(int w, task_count r) override {
        const auto j = static_cast<std::size_t>(w);
        const task_count s = first_round_[j] ? first_round_size_ : r;
        first_round_[j] = false;
        const double fitness = inverse_[j] / inverse_sum_;
        return at_least_one(floor_count(static_cast<double>(s) / k_ * fitness + 0.5));
    }
    void completed(int w, chunk done, double seconds) override {
        const auto j = static_cast<std::size_t>(w);
        const double inv = static_cast<double>(done.count) / seconds;  // 1 / (per-task time)
        inverse_sum_ += inv - inverse_[j];
        inverse_[j] = inv;
    }
    /// Empty until start(): when the calibration tasks were the whole loop, no k was ever computed.
    std::optional<double> installment_factor() const override {
        return first_round_size_ > 0 ? std::optional<double>(k_) : std::nullopt;
    }

private:
    std::optional<double> pinned_k_;
    calibration_mode mode_;
    std::vector<bool> first_round_;
    task_count first_round_size_ = 0;
    double k_ = 1.0;
    std::vector<double> inverse_;
    double inverse_sum_ = 0.0;
};

}  // namespace

std::vector<technique_info> calibrated_techniques() {
    const char* seed004 = "Gonzalez-Velez & Cole 2009";
    return {
        {"dealdyn-sm", "single-round", "one round of S F_i tasks, F from times-only calibration (SCH_DEALDYN_SM)",
         "", std::string(seed004) + ", Table 2 mode 5",
         [](const technique_options&, int p) {
             return std::make_unique<single_round>("dealdyn-sm", calibration_mode::times_only, p);
         }},
        {"dealdyn-lr", "single-round",
         "one round of S F_i tasks, F from times fitted to scaled availability, eq. 5 (SCH_DEALDYN_LR)", "",
         std::string(seed004) + ", eq. 5, Table 2 mode 3",
         [](const technique_options&, int p) {
             return std::make_unique<single_round>("dealdyn-lr", calibration_mode::univariate, p);
         }},
        {"dealdyn-mv", "single-round",
         "one round of S F_i tasks, F from times fitted to latency and availability, eq. 6 (SCH_DEALDYN_MV)", "",
         std::string(seed004) + ", eq. 6, Table 2 mode 4",
         [](const technique_options&, int p) {
             return std::make_unique<single_round>("dealdyn-mv", calibration_mode::multivariate, p);
         }},
        {"multi", "adaptive", "adaptive multi-round: floor(R/k F_i + 0.5), k = ln(S)^CV, F refreshed (SCH_MULTI)",
         "--k K (pin the installment factor), --calibration times|univariate|multivariate", std::string(seed004) + ", eqs. 4, 7-9, Table 1",
         [](const technique_options& o, int p) { return std::make_unique<multi_round>(o, p); }},
    };
}

}  // namespace pfarm::detail
