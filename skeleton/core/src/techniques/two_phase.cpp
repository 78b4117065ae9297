// The alpha-based two-phase schemes: n-gss/fss/tss (Yang, Cheng & Shih, "On development of an efficient parallel
// loop self-scheduling for grid computing environments" (2007), "N_*"), an-gss/fss/tss (their adjusted "A_N_*",
// section 3.2, alpha from a heterogeneity ratio) and hpls-gss/fss/tss (Yang et al., "A performance-based approach
// to loop self-scheduling on heterogeneous PC clusters", section 3.1: performance function
// PF_j = (1/t_j) / sum (1/t_i) from measured times).
//
// Phase 1: A = ceil(alpha I / 100) tasks are split by weight as each worker's first chunk, apportioned by
// largest remainder (Hamilton: floor(A w_j / sum w) each, the tasks left to the largest remainders, a tie to
// the lower worker index; detail::apportion, shared with dealdyn-*), so the shares add up to exactly A and do
// not depend on the workers' order. Phase 2: the remaining I - A are scheduled by plain gss/fss/tss over p
// workers.
#include "pfarm/detail/schedule_math.hpp"
#include "pfarm/detail/technique_families.hpp"
#include "pfarm/error.hpp"

#include <algorithm>
#include <string>

namespace pfarm::detail {

namespace {

enum class alpha_rule {
    fixed,     ///< n-*, hpls-*: alpha = --static-percent
    adjusted,  ///< an-*: relatively homogeneous (HR >= alpha'/100) gives alpha = 100, else alpha'
};

enum class weight_source {
    given_or_calibrated,  ///< n-*, an-*: --weights (CPU speed, benchmark) or 1/t from calibration
    measured_times,       ///< hpls-*: always 1/t of the measured application times
};

class two_phase final : public technique {
public:
    two_phase(std::string name, std::string inner, alpha_rule rule, weight_source source,
              const technique_options& o, int p)
        : name_(std::move(name)), inner_name_(std::move(inner)), rule_(rule), source_(source), options_(o),
          first_done_(static_cast<std::size_t>(p), false) {
        alpha_percent_ = o.static_percent.value_or(80.0);
        if (!(alpha_percent_ >= 0.0 && alpha_percent_ <= 100.0))
            throw invalid_argument("static_percent",
                                   "is " + std::to_string(alpha_percent_) + "; expected 0 to 100");
        inner_ = make_plain(inner_name_, o, p);
    }
    std::string name() const override { return name_; }
    calibration_mode needs_calibration() const override {
        if (source_ == weight_source::measured_times || options_.weights.empty()) return calibration_mode::times_only;
        return calibration_mode::none;
    }
    void start(const schedule_context& c) override {
        first_done_.assign(first_done_.size(), false);  // a new round (a hierarchical master's pool: farmer.hpp)
        technique_options o = options_;
        if (source_ == weight_source::measured_times) o.weights.clear();  // PF_j from the measured times
        const std::vector<double> w = weights_or_calibration(o, c, name_.c_str());
        double alpha = alpha_percent_;
        if (rule_ == alpha_rule::adjusted) {
            heterogeneity_ratio_ = heterogeneity_ratio(w, "weights");
            if (heterogeneity_ratio_ >= alpha_percent_ / 100.0) alpha = 100.0;
        }
        const task_count total = ceil_count(alpha * static_cast<double>(c.remaining) / 100.0);
        shares_ = apportion(total, w);
        reserved_ = total;
        inner_->start({c.tasks, c.remaining - total, c.workers, c.calibration});
    }
    task_count next(int w, task_count r) override {
        const auto j = static_cast<std::size_t>(w);
        if (!first_done_[j]) {
            first_done_[j] = true;
            if (shares_[j] > 0) {
                reserved_ -= shares_[j];
                return shares_[j];
            }
        }
        const task_count dynamic = r - reserved_;  // what phase 2 may hand out without eating others' shares
        if (dynamic <= 0) return 0;
        return std::min(inner_->next(w, dynamic), dynamic);
    }
    void completed(int w, chunk done, double s) override { inner_->completed(w, done, s); }

private:
    std::string name_, inner_name_;
    alpha_rule rule_;
    weight_source source_;
    technique_options options_;
    std::unique_ptr<technique> inner_;
    std::vector<bool> first_done_;
    std::vector<task_count> shares_;
    task_count reserved_ = 0;
    double alpha_percent_ = 80.0;
    double heterogeneity_ratio_ = 1.0;
};

}  // namespace

std::vector<technique_info> two_phase_techniques() {
    std::vector<technique_info> rows;
    struct kind {
        const char* prefix;
        alpha_rule rule;
        weight_source source;
        const char* what;
        const char* source_text;
    };
    const kind kinds[] = {
        {"n-", alpha_rule::fixed, weight_source::given_or_calibrated,
         "alpha% of I split by weight as first chunks, the rest by ",
         "Yang, Cheng & Shih 2007, Table 1 (N_GSS/N_FSS/N_TSS)"},
        {"an-", alpha_rule::adjusted, weight_source::given_or_calibrated,
         "as n-*, alpha = 100 when the heterogeneity ratio min/max >= alpha'/100, the rest by ",
         "Yang, Cheng & Shih 2007, section 3.2 (A_N_GSS/A_N_FSS/A_N_TSS)"},
        {"hpls-", alpha_rule::fixed, weight_source::measured_times,
         "alpha% split by measured performance 1/t_j as first chunks, the rest by ",
         "Yang et al., a performance-based approach to loop self-scheduling (HPLS)"},
    };
    for (const kind& k : kinds) {
        for (const char* inner : {"gss", "fss", "tss"}) {
            const std::string name = std::string(k.prefix) + inner;
            const std::string in = inner;
            const alpha_rule rule = k.rule;
            const weight_source source = k.source;
            rows.push_back({name, "two-phase", std::string(k.what) + inner,
                            k.source == weight_source::measured_times
                                ? "--static-percent A (default 80), plus " + in + "'s options"
                                : "--weights (else measured), --static-percent A (default 80), plus " + in +
                                      "'s options",
                            k.source_text, [name, in, rule, source](const technique_options& o, int p) {
                                return std::make_unique<two_phase>(name, in, rule, source, o, p);
                            }});
        }
    }
    return rows;
}

}  // namespace pfarm::detail
