// The simple self-scheduling techniques: static, ss, css, gss, fss, tss, fiss, tfss.
// Sources: Chronopoulos, Penmatsa, Yu & Yu, "Scalable loop self-scheduling schemes for heterogeneous clusters"
// (2005), section 2, and Yang et al., "A performance-based approach to loop self-scheduling on heterogeneous PC
// clusters", Table 1; chunk rules as docs/techniques/README.md ("Shared conventions") and simple.md state them.
#include "pfarm/detail/schedule_math.hpp"
#include "pfarm/detail/technique_families.hpp"
#include "pfarm/error.hpp"

#include <string>

namespace pfarm::detail {

namespace {

/// static: block; the first I mod p workers get ceil(I/p), the others floor(I/p); one chunk each.
class static_block final : public technique {
public:
    static_block(int p, std::string name) : name_(std::move(name)), given_(static_cast<std::size_t>(p), false) {}
    std::string name() const override { return name_; }
    claim_form decentralised() const override { return claim_form::by_step; }  // block s for step s
    void start(const schedule_context& c) override {  // a new round (a hierarchical master's pool: farmer.hpp)
        given_.assign(given_.size(), false);
        base_ = c.remaining / c.workers;
        extra_ = c.remaining % c.workers;
    }
    task_count next(int w, task_count) override {
        if (given_[static_cast<std::size_t>(w)]) return 0;
        given_[static_cast<std::size_t>(w)] = true;
        return base_ + (w < extra_ ? 1 : 0);
    }

private:
    std::string name_;
    std::vector<bool> given_;
    task_count base_ = 0, extra_ = 0;
};

/// ss (pure self-scheduling, SCH_TRAD) and css(k): a fixed chunk.
class fixed_chunk final : public technique {
public:
    fixed_chunk(std::string name, task_count size) : name_(std::move(name)), size_(size) {}
    std::string name() const override { return name_; }
    claim_form decentralised() const override { return claim_form::by_step; }
    task_count constant_chunk() const override { return size_; }
    void start(const schedule_context&) override {}
    task_count next(int, task_count) override { return size_; }

private:
    std::string name_;
    task_count size_;
};

/// gss (Polychronopoulos & Kuck 1987): ceil(R/p); min_chunk is applied by the farmer (GSS(k)).
class guided final : public technique {
public:
    std::string name() const override { return "gss"; }
    claim_form decentralised() const override { return claim_form::by_step; }
    void start(const schedule_context& c) override { p_ = c.workers; }
    task_count next(int, task_count r) override { return ceil_div(r, p_); }

private:
    task_count p_ = 1;
};

/// fss (Hummel, Schonberg & Flynn 1992): stages of p chunks of ceil(R_stage / (x p)).
class factoring final : public technique {
public:
    explicit factoring(double x) : x_(x) {}
    std::string name() const override { return "fss"; }
    claim_form decentralised() const override { return claim_form::by_step; }
    void start(const schedule_context& c) override {
        p_ = c.workers;
        stages_ = stage_counter(c.workers);
    }
    task_count next(int, task_count r) override {
        const task_count r_stage = stages_.on_chunk(r);
        return at_least_one(ceil_count(static_cast<double>(r_stage) / (x_ * static_cast<double>(p_))));
    }

private:
    double x_;
    int p_ = 1;
    stage_counter stages_;
};

/// tss (Tzen & Ni 1993): chunk i is F - (i-1) D; the farmer cuts the last one to what remains.
class trapezoid_ss final : public technique {
public:
    explicit trapezoid_ss(const technique_options& o) : first_(o.first), last_(o.last) {}
    std::string name() const override { return "tss"; }
    claim_form decentralised() const override { return claim_form::by_step; }
    void start(const schedule_context& c) override {
        t_ = trapezoid::make(c.remaining, c.workers, first_, last_);
    }
    task_count next(int, task_count) override { return t_.chunk(++i_); }

private:
    std::optional<task_count> first_, last_;
    trapezoid t_;
    task_count i_ = 0;
};

/// fiss (Philip & Das 1997): sigma stages, X = sigma + 2, C0 = floor(I/(Xp)),
/// B = floor(2I(1 - sigma/X) / (p sigma (sigma-1))); stage s < sigma-1 hands C0 + sB to each worker,
/// the last stage hands ceil(R/p), R taken at that stage's start.
class fixed_increase final : public technique {
public:
    explicit fixed_increase(int sigma) : sigma_(sigma) {}
    std::string name() const override { return "fiss"; }
    claim_form decentralised() const override { return claim_form::by_step; }
    void start(const schedule_context& c) override {
        p_ = c.workers;
        stages_ = stage_counter(c.workers);
        const double i = static_cast<double>(c.remaining), p = c.workers, s = sigma_, x = sigma_ + 2.0;
        c0_ = floor_count(i / (x * p));
        bump_ = floor_count(2.0 * i * (1.0 - s / x) / (p * s * (s - 1.0)));
    }
    task_count next(int, task_count r) override {
        const task_count r_stage = stages_.on_chunk(r);
        const int s = stages_.last_stage();
        if (s < sigma_ - 1) return at_least_one(c0_ + s * bump_);
        return ceil_div(r_stage, p_);
    }

private:
    int sigma_;
    int p_ = 1;
    stage_counter stages_;
    task_count c0_ = 0, bump_ = 0;
};

/// tfss (Chronopoulos et al. 2001): stages of p chunks, each floor(mean) of that stage's p TSS chunks
/// (uncut sequence); once fewer than p TSS chunks are left, stages of ceil(R/p), R at the stage's start.
class trapezoid_factoring final : public technique {
public:
    explicit trapezoid_factoring(const technique_options& o) : first_(o.first), last_(o.last) {}
    std::string name() const override { return "tfss"; }
    claim_form decentralised() const override { return claim_form::by_step; }
    void start(const schedule_context& c) override {
        p_ = c.workers;
        stages_ = stage_counter(c.workers);
        t_ = trapezoid::make(c.remaining, c.workers, first_, last_);
    }
    task_count next(int, task_count r) override {
        const task_count r_stage = stages_.on_chunk(r);
        const task_count s = stages_.last_stage();
        const task_count begin = s * p_ + 1;  // 1-based index of the stage's first TSS chunk
        if (begin + p_ - 1 <= t_.steps) {
            if (s != cached_stage_) {  // once per stage, so a request costs O(1) amortised
                task_count sum = 0;
                for (task_count i = begin; i < begin + p_; ++i) sum += t_.chunk(i);
                cached_stage_ = s;
                cached_size_ = at_least_one(sum / p_);
            }
            return cached_size_;
        }
        return ceil_div(r_stage, p_);
    }

private:
    std::optional<task_count> first_, last_;
    task_count p_ = 1;
    stage_counter stages_;
    trapezoid t_;
    task_count cached_stage_ = -1, cached_size_ = 1;
};

double positive_factor(const technique_options& o) {
    const double x = o.factor.value_or(2.0);
    if (!(x > 0.0) || !std::isfinite(x))
        throw invalid_argument("factor", "is " + std::to_string(x) + "; expected a finite value > 0");
    return x;
}

int stage_count(const technique_options& o) {
    const int s = o.stages.value_or(3);
    if (s < 2) throw invalid_argument("stages", "is " + std::to_string(s) + "; expected >= 2");
    return s;
}

}  // namespace

std::unique_ptr<technique> make_plain(const std::string& name, const technique_options& o, int) {
    if (name == "gss") return std::make_unique<guided>();
    if (name == "fss") return std::make_unique<factoring>(positive_factor(o));
    if (name == "tss") return std::make_unique<trapezoid_ss>(o);
    throw internal_error("make_plain: no plain technique '" + name + "'");
}

std::vector<technique_info> simple_techniques() {
    const std::string seed002 = "Chronopoulos, Penmatsa, Yu & Yu, IJCSE 2005, section 2";
    return {
        {"static", "simple", "one block per worker: the first I mod p get ceil(I/p), the others floor(I/p)", "",
         "Kruskal & Weiss 1985 (block partition)",
         [](const technique_options&, int p) { return std::make_unique<static_block>(p, "static"); }},
        {"deal", "single-round", "isometric single round (SCH_DEAL): the same blocks as static", "",
         "Gonzalez-Velez & Cole 2009, Table 2 mode 2",
         [](const technique_options&, int p) { return std::make_unique<static_block>(p, "deal"); }},
        {"ss", "simple", "pure self-scheduling: chunks of 1 (SCH_TRAD)", "", "Tang & Yew 1986; Gonzalez-Velez & Cole 2009 SCH_TRAD",
         [](const technique_options&, int) { return std::make_unique<fixed_chunk>("ss", 1); }},
        {"css", "simple", "chunk self-scheduling: fixed chunks of k", "--chunk K (required)",
         "Kruskal & Weiss 1985; Yang, Cheng & Shih 2007 CSS(k)",
         [](const technique_options& o, int) {
             if (!o.chunk) throw invalid_argument("chunk", "is required by css (a chunk size >= 1)");
             if (*o.chunk < 1)
                 throw invalid_argument("chunk", "is " + std::to_string(*o.chunk) + "; expected >= 1");
             return std::make_unique<fixed_chunk>("css", *o.chunk);
         }},
        {"gss", "simple", "guided self-scheduling: max(min_chunk, ceil(R/p))", "--min-chunk",
         "Polychronopoulos & Kuck 1987; Han & Chronopoulos",
         [](const technique_options&, int) { return std::make_unique<guided>(); }},
        {"fss", "simple", "factoring: stages of p chunks of ceil(R_stage/(x p)), x = 2", "--factor X, --min-chunk",
         "Hummel, Schonberg & Flynn 1992; " + seed002,
         [](const technique_options& o, int) { return std::make_unique<factoring>(positive_factor(o)); }},
        {"tss", "simple", "trapezoid: linearly decreasing chunks from F = I/(2p) to L = 1", "--first F, --last L",
         "Tzen & Ni 1993; " + seed002,
         [](const technique_options& o, int) { return std::make_unique<trapezoid_ss>(o); }},
        {"fiss", "simple", "fixed increase: sigma stages growing by a bump B", "--stages S",
         "Philip & Das 1997; " + seed002,
         [](const technique_options& o, int) { return std::make_unique<fixed_increase>(stage_count(o)); }},
        {"tfss", "simple", "trapezoid factoring: stages of p chunks, each the mean of p TSS chunks",
         "--first F, --last L", "Chronopoulos et al. 2001; " + seed002,
         [](const technique_options& o, int) { return std::make_unique<trapezoid_factoring>(o); }},
    };
}

}  // namespace pfarm::detail
