// The distributed (speed-weighted) schemes: dgss, dfss (= weighted factoring, alias wf), dtss, dfiss, dtfss.
// Sources: Chronopoulos, Andonie, Benche & Grosu 2001 (distributed self-scheduling), as reviewed in
// Chronopoulos, Penmatsa, Yu & Yu, "Scalable loop self-scheduling schemes for heterogeneous clusters" (2005),
// section 3, and Han & Chronopoulos, "Scalable loop self-scheduling schemes implemented on large-scale clusters",
// section III; weighted factoring: Hummel, Schmidt, Uma & Wein 1996.
//
// V_j = w_j / min(w) is the virtual power of worker j, Q_j its run-queue length (1 when dedicated) and
// A_j = V_j / Q_j its available computing power; A = sum A_j. pfarm keeps A_j real-valued (Chronopoulos et al.
// 2005 floor it, which makes a loaded slow worker's power 0 and stalls it; the real value keeps it working slower).
#include "pfarm/detail/schedule_math.hpp"
#include "pfarm/detail/technique_families.hpp"
#include "pfarm/error.hpp"

#include <cmath>
#include <string>

namespace pfarm::detail {

namespace {

/// What every weighted scheme shares: the powers, the run queues, A_j and A.
class weighted_base : public technique {
public:
    weighted_base(std::string name, const technique_options& o, int p)
        : name_(std::move(name)), options_(o), p_(p),
          q_(o.run_queue.empty() ? std::vector<double>(static_cast<std::size_t>(p), 1.0) : o.run_queue) {}
    std::string name() const override { return name_; }
    calibration_mode needs_calibration() const override {
        return options_.weights.empty() ? calibration_mode::times_only : calibration_mode::none;
    }
    /// The run queue with every request: A_j = V_j / Q_j follows the load (Chronopoulos et al. 2005, section 3,
    /// non-dedicated mode).
    technique_needs needs() const override {
        technique_needs n = technique::needs();
        n.with_every_request = {reading::run_queue};
        return n;
    }
    void start(const schedule_context& c) override {
        p_ = c.workers;
        std::vector<double> w = weights_or_calibration(options_, c, name_.c_str());
        // Powers measured by calibration were measured under the run queue the workers reported meanwhile (their
        // readings reached run_queue_changed before start): a worker's power on its own is Q_j times that, so
        // that A_j = V_j / Q_j counts its load once, and only changes of load move it afterwards.
        if (options_.weights.empty())
            for (std::size_t j = 0; j < w.size() && j < q_.size(); ++j) w[j] *= q_[j];
        v_ = virtual_powers(w);
        a_.resize(v_.size());
        total_ = 0.0;
        for (std::size_t j = 0; j < v_.size(); ++j) total_ += a_[j] = v_[j] / q_[j];
        started(c);
    }
    void run_queue_changed(int w, double q) override {
        const auto j = static_cast<std::size_t>(w);
        q_[j] = q;
        if (a_.empty()) return;  // before start(): start() reads q_
        const double a = v_[j] / q;
        total_ += a - a_[j];
        a_[j] = a;
        powers_changed(w);
    }

protected:
    virtual void started(const schedule_context&) {}
    virtual void powers_changed(int) {}
    double share(int w) const { return a_[static_cast<std::size_t>(w)] / total_; }  ///< A_j / A

    std::string name_;
    technique_options options_;
    int p_ = 1;
    std::vector<double> v_, q_, a_;
    double total_ = 0.0;  ///< A
};

/// dgss: ceil(R A_j / A).
class dgss final : public weighted_base {
public:
    using weighted_base::weighted_base;
    /// With known weights, ceil(R A_j / A) is a pure function of j and R (the run queues fixed at --run-queue);
    /// without them it calibrates, which needs a farmer.
    claim_form decentralised() const override {
        return options_.weights.empty() ? claim_form::none : claim_form::by_worker;
    }
    task_count next(int w, task_count r) override {
        return at_least_one(ceil_count(static_cast<double>(r) * share(w)));
    }
};

/// dfss (weighted factoring): stages of p chunks, ceil(R_stage A_j / (x A)).
class dfss final : public weighted_base {
public:
    dfss(std::string name, const technique_options& o, int p) : weighted_base(std::move(name), o, p) {
        x_ = o.factor.value_or(2.0);
        if (!(x_ > 0.0) || !std::isfinite(x_))
            throw invalid_argument("factor", "is " + std::to_string(x_) + "; expected a finite value > 0");
    }
    task_count next(int w, task_count r) override {
        const task_count r_stage = stages_.on_chunk(r);
        return at_least_one(ceil_count(static_cast<double>(r_stage) * share(w) / x_));
    }

private:
    void started(const schedule_context& c) override { stages_ = stage_counter(c.workers); }
    double x_ = 2.0;
    stage_counter stages_;
};

/// dtss: TSS with F = floor(I/(2A)); a request of worker j consumes A_j trapezoid steps:
/// chunk round(A_j (Cur - D (A_j - 1)/2)), then Cur -= A_j D. When more than half of the A_j have changed
/// since the trapezoid was (re)built, it is rebuilt from the remaining tasks with p = A (Chronopoulos et al. 2005,
/// section 3.1, the master's step 2(b)).
class dtss final : public weighted_base {
public:
    using weighted_base::weighted_base;
    task_count next(int w, task_count r) override {
        if (rebuild_) build(r);
        const double a = a_[static_cast<std::size_t>(w)];
        const double size = a * (current_ - static_cast<double>(t_.delta) * (a - 1.0) / 2.0);
        current_ -= a * static_cast<double>(t_.delta);
        return at_least_one(static_cast<task_count>(std::llround(size)));
    }

private:
    void started(const schedule_context& c) override { build(c.remaining); }
    void build(task_count iterations) {
        t_ = trapezoid::make(iterations, total_, options_.first, options_.last);
        current_ = static_cast<double>(t_.first);
        snapshot_ = a_;
        flags_.assign(a_.size(), false);
        changed_ = 0;
        rebuild_ = false;
    }
    void powers_changed(int w) override {
        const auto j = static_cast<std::size_t>(w);
        const bool now = a_[j] != snapshot_[j];
        if (now != flags_[j]) changed_ += now ? 1 : -1;
        flags_[j] = now;
        if (2 * changed_ > p_) rebuild_ = true;  // applied at the next request, with R known
    }
    trapezoid t_;
    double current_ = 0.0;
    std::vector<double> snapshot_;
    std::vector<bool> flags_;
    int changed_ = 0;
    bool rebuild_ = false;
};

/// dfiss: FISS stages; stage s < sigma-1 hands out p (C0 + sB) in total, worker j getting its A_j/A share
/// (floor, at least 1); the last stage hands ceil(R_stage A_j / A).
class dfiss final : public weighted_base {
public:
    dfiss(std::string name, const technique_options& o, int p) : weighted_base(std::move(name), o, p) {
        sigma_ = o.stages.value_or(3);
        if (sigma_ < 2) throw invalid_argument("stages", "is " + std::to_string(sigma_) + "; expected >= 2");
    }
    task_count next(int w, task_count r) override {
        const task_count r_stage = stages_.on_chunk(r);
        const int s = stages_.last_stage();
        const double part = share(w);
        if (s < sigma_ - 1)
            return at_least_one(floor_count(static_cast<double>(p_ * (c0_ + s * bump_)) * part));
        return at_least_one(ceil_count(static_cast<double>(r_stage) * part));
    }

private:
    void started(const schedule_context& c) override {
        stages_ = stage_counter(c.workers);
        const double i = static_cast<double>(c.remaining), p = c.workers, s = sigma_, x = sigma_ + 2.0;
        c0_ = floor_count(i / (x * p));
        bump_ = floor_count(2.0 * i * (1.0 - s / x) / (p * s * (s - 1.0)));
    }
    int sigma_ = 3;
    stage_counter stages_;
    task_count c0_ = 0, bump_ = 0;
};

/// dtfss: TFSS stages; the stage's total (the sum of its p TSS chunks) is shared by A_j/A (floor, at
/// least 1); once fewer than p TSS chunks are left, ceil(R_stage A_j / A).
class dtfss final : public weighted_base {
public:
    using weighted_base::weighted_base;
    task_count next(int w, task_count r) override {
        const task_count r_stage = stages_.on_chunk(r);
        const task_count s = stages_.last_stage();
        const task_count p = p_;
        const task_count begin = s * p + 1;
        if (begin + p - 1 <= t_.steps) {
            if (s != cached_stage_) {
                cached_total_ = 0;
                for (task_count i = begin; i < begin + p; ++i) cached_total_ += t_.chunk(i);
                cached_stage_ = s;
            }
            return at_least_one(floor_count(static_cast<double>(cached_total_) * share(w)));
        }
        return at_least_one(ceil_count(static_cast<double>(r_stage) * share(w)));
    }

private:
    void started(const schedule_context& c) override {
        stages_ = stage_counter(c.workers);
        t_ = trapezoid::make(c.remaining, c.workers, options_.first, options_.last);
    }
    stage_counter stages_;
    trapezoid t_;
    task_count cached_stage_ = -1, cached_total_ = 0;
};

template <class T>
technique_info row(const char* name, const char* description, const char* parameters) {
    return {name, "weighted", description, parameters,
            "Chronopoulos et al. 2001; Chronopoulos, Penmatsa, Yu & Yu 2005 section 3; Han & Chronopoulos section III",
            [name](const technique_options& o, int p) { return std::make_unique<T>(name, o, p); }};
}

}  // namespace

std::vector<technique_info> weighted_techniques() {
    const char* common = "--weights w1,..,wP (else measured by calibration), --run-queue q1,..,qP";
    auto fss_row = row<dfss>("dfss", "distributed factoring (weighted factoring): ceil(R_stage A_j/(x A))",
                             "--weights, --run-queue, --factor X");
    fss_row.source = "Hummel, Schmidt, Uma & Wein 1996 (weighted factoring); Chronopoulos, Penmatsa, Yu & Yu 2005 section 3";
    return {
        row<dgss>("dgss", "distributed guided: ceil(R A_j / A)", common),
        fss_row,
        row<dtss>("dtss", "distributed trapezoid: A_j trapezoid steps per request, rebuilt when most A_j change",
                  "--weights, --run-queue, --first F, --last L"),
        row<dfiss>("dfiss", "distributed fixed increase: FISS stage totals shared by A_j / A",
                   "--weights, --run-queue, --stages S"),
        row<dtfss>("dtfss", "distributed trapezoid factoring: TFSS stage totals shared by A_j / A",
                   "--weights, --run-queue, --first F, --last L"),
    };
}

}  // namespace pfarm::detail
