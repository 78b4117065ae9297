// Literature techniques beyond the five papers pfarm is built from (docs/techniques/README.md), each following
// its original publication, named in the code: fixed size chunking (fsc) and its modified form (mfsc), adaptive
// factoring (af), and adaptive weighted factoring (awf) with its variants awf-b, awf-c, awf-d, awf-e.
//
// The formulas were checked against two implementations by the techniques' authors' groups: the DLB tool of
// Carino & Banicescu (2007), kept in github.com/unibas-dmi-hpc/DLS4LB (C/DLS.c), and LB4OMP
// (github.com/unibas-dmi-hpc/LB4OMP, runtime/src/kmp_dispatch.cpp). Where pfarm has to decide something the
// sources leave open (or where they disagree), the comment above the class says what and why; the user-facing
// account is docs/techniques/literature.md.
//
// Cost: every next() is O(1) in the number of workers p. Work that touches every worker (re-freezing AWF
// weights at a batch boundary, re-summing AF's running sums against rounding drift) happens at most once per
// p hand-outs or p completions, so it is O(1) amortised.
#include "pfarm/detail/schedule_math.hpp"
#include "pfarm/detail/technique_families.hpp"
#include "pfarm/error.hpp"

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace pfarm::detail {

namespace {

std::string number(double v) {
    std::string s = std::to_string(v);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
}

/// A required finite positive real option: throws invalid_argument naming `argument` (its technique_options field).
double required_positive(const std::optional<double>& v, const char* argument, const std::string& why) {
    if (!v) throw invalid_argument(argument, "is required by " + why);
    if (!std::isfinite(*v) || *v <= 0.0)
        throw invalid_argument(argument, "is " + number(*v) + "; expected a finite value > 0");
    return *v;
}

double factoring_ratio(const technique_options& o) {
    const double x = o.factor.value_or(2.0);
    if (!std::isfinite(x) || x <= 0.0)
        throw invalid_argument("factor", "is " + number(x) + "; expected a finite value > 0");
    return x;
}

/// Clamps a non-negative real chunk size to [1, cap] before converting it (a cast of inf or of a value past
/// the range of task_count is undefined behaviour).
task_count clamp_chunk(double size, task_count cap) {
    if (!(size < static_cast<double>(cap))) return cap;  // also catches inf and NaN
    return at_least_one(ceil_count(size));
}

// ---------------------------------------------------------------------------------------------------------
/// fsc: Fixed Size Chunking, C. P. Kruskal and A. Weiss, "Allocating independent subtasks on parallel
/// processors", IEEE Transactions on Software Engineering SE-11(10):1001-1016, 1985.
/// Every chunk has the optimal fixed size of their analysis,
///     K = ( sqrt(2) N h / (sigma p sqrt(ln p)) )^(2/3),
/// N = tasks at the start, h = scheduling overhead per chunk (--overhead-h), sigma = standard deviation of the
/// task time (--sigma), h and sigma in the same time unit. pfarm rounds K up (ceil, as Carino & Banicescu's
/// DLB tool does; LB4OMP truncates) and keeps it >= 1. p = 1: ln 1 = 0 and K grows without bound as p -> 1
/// (with one worker, chunking only adds overhead), so the single worker gets one chunk of N. K > N is cut to N.
class fixed_size_chunking final : public technique {
public:
    fixed_size_chunking(double h, double sigma) : h_(h), sigma_(sigma) {}
    std::string name() const override { return "fsc"; }
    claim_form decentralised() const override { return claim_form::by_step; }  // one fixed size
    void start(const schedule_context& c) override { size_ = chunk_size(c.remaining, c.workers, h_, sigma_); }
    task_count next(int, task_count) override { return size_; }

    static task_count chunk_size(task_count n, int p, double h, double sigma) {
        if (p <= 1) return n;
        const double pd = p;
        const double k = std::sqrt(2.0) * static_cast<double>(n) * h / (sigma * pd * std::sqrt(std::log(pd)));
        return clamp_chunk(std::pow(k, 2.0 / 3.0), n);
    }

private:
    double h_, sigma_;
    task_count size_ = 1;
};

// ---------------------------------------------------------------------------------------------------------
/// mfsc: modified FSC, as defined in Carino & Banicescu's DLB tool (R. L. Carino and I. Banicescu, "A tool for
/// a two-level dynamic load balancing strategy in scientific applications", Scalable Computing: Practice and
/// Experience 8(3), 2007; DLS4LB C/DLS.c) and in LB4OMP (J. H. Mueller Korndoerfer, A. Eleliemy, A. Mohammed,
/// F. M. Ciorba, "LB4OMP: A dynamic load balancing library for multithreaded applications", IEEE TPDS
/// 33(4):830-841, 2022). A fixed chunk chosen so that the loop takes about as many chunks as FAC (fss, x = 2)
/// would: FAC needs about p log2(N/p) chunks, so with T = ceil(N/p)
///     K = floor(0.55 + T ln 2 / ln T)          (both sources, verbatim; T = 1 gives K = 1)
/// needs no h and no sigma. The count matches FAC's only approximately (the closed form ignores FAC's
/// rounding and its tail of 1s): within about 12% once N/p >= 100, and exactly in many cases.
class modified_fsc final : public technique {
public:
    std::string name() const override { return "mfsc"; }
    claim_form decentralised() const override { return claim_form::by_step; }  // one fixed size
    void start(const schedule_context& c) override { size_ = chunk_size(c.remaining, c.workers); }
    task_count next(int, task_count) override { return size_; }

    static task_count chunk_size(task_count n, int p) {
        const task_count t = ceil_div(n, p);
        if (t <= 1) return 1;
        const double td = static_cast<double>(t);
        return at_least_one(floor_count(0.55 + td * std::log(2.0) / std::log(td)));
    }

private:
    task_count size_ = 1;
};

// ---------------------------------------------------------------------------------------------------------
/// af: Adaptive Factoring, I. Banicescu and Z. Liu, "Adaptive factoring: a dynamic scheduling method tuned to
/// the rate of weight changes", Proc. High Performance Computing Symposium (HPC 2000), pp. 122-129, 2000;
/// as used in R. L. Carino and I. Banicescu, "Dynamic load balancing with adaptive factoring methods in
/// scientific applications", The Journal of Supercomputing 44(1):41-63, 2008.
/// Worker i has a mean mu_i and a standard deviation sigma_i of its per-task time. With R unassigned, worker j
/// gets
///     K_j = (D + 2 E R - sqrt(D^2 + 4 D E R)) / (2 mu_j),   D = sum_i sigma_i^2 / mu_i,  E = (sum_i 1/mu_i)^-1
/// (LB4OMP's form; DLS4LB's C/DLS.c sums sigma_i/mu_i for D, which is not a time and is taken as a slip).
/// pfarm evaluates it as 2 E^2 R^2 / (mu_j (D + 2 E R + sqrt(D^2 + 4 D E R))), the same value without the
/// cancellation of the first form when D >> E R, and rounds up (LB4OMP; DLS.c rounds to nearest + 0.05).
/// Decisions (docs/techniques/literature.md):
///  - Estimator. The farmer reports whole chunks (n tasks in t seconds), not single tasks. A chunk's per-task
///    time x = t/n has mean mu and variance sigma^2/n if task times are independent with variance sigma^2, so
///    mu_i = sum t / sum n (the n-weighted mean of the x's) and sigma_i^2 = sum n (x - mu_i)^2 / (m - 1) over
///    the worker's m chunks, which is unbiased for sigma^2; both are kept by a weighted Welford update.
///    sigma_i = 0 after one chunk (LB4OMP does the same with one sub-chunk).
///  - Start-up. A worker with no completed chunk gets ceil(N/(2p)), FAC's first-batch chunk (N = tasks at the
///    start). That is also the cap of every AF chunk, as in DLS.c (maxChunkSize): it keeps one early estimate
///    with sigma = 0 from handing a worker everything that is left.
///  - Workers with no data yet count in D and E as if they performed like the requester (LB4OMP's rule), so
///    D and E always describe p workers.
///  - O(1): D and 1/E over the workers with data are running sums updated in completed(); they are re-summed
///    exactly every p completions so that rounding drift cannot build up.
class adaptive_factoring final : public technique {
public:
    explicit adaptive_factoring(int p) { resize(p); }
    std::string name() const override { return "af"; }
    bool learns_from_times() const override { return true; }
    void start(const schedule_context& c) override {
        resize(c.workers);
        first_ = at_least_one(ceil_div(c.remaining, 2 * static_cast<task_count>(c.workers)));
    }
    task_count next(int w, task_count r) override {
        const worker& me = workers_[static_cast<std::size_t>(w)];
        if (me.chunks == 0) return first_;
        const double absent = static_cast<double>(p_ - known_);
        const double d = std::max(0.0, d_sum_ + absent * me.d);
        const double e = 1.0 / (e_inv_sum_ + absent * me.e_inv);
        const double er = e * static_cast<double>(r);
        const double k = 2.0 * er * er / (me.mu * (d + 2.0 * er + std::sqrt(d * d + 4.0 * d * er)));
        return clamp_chunk(k, first_);
    }
    void completed(int w, chunk done, double seconds) override {
        worker& me = workers_[static_cast<std::size_t>(w)];
        const double n = static_cast<double>(done.count);
        const double x = seconds / n;  // this chunk's per-task time
        me.tasks += n;
        const double delta = x - me.mu;
        me.mu += n / me.tasks * delta;  // chunks == 0: mu becomes x
        me.m2 += n * delta * (x - me.mu);
        ++me.chunks;
        const double variance = me.chunks > 1 ? std::max(0.0, me.m2 / static_cast<double>(me.chunks - 1)) : 0.0;
        const double d = variance / me.mu, e_inv = 1.0 / me.mu;
        if (me.chunks == 1) {
            ++known_;
        } else {
            d_sum_ -= me.d;
            e_inv_sum_ -= me.e_inv;
        }
        me.d = d;
        me.e_inv = e_inv;
        d_sum_ += d;
        e_inv_sum_ += e_inv;
        if (++since_resum_ == p_) resum();
    }

private:
    struct worker {
        task_count chunks = 0;  ///< completed chunks (m)
        double tasks = 0.0;     ///< sum n
        double mu = 0.0;        ///< mean per-task time
        double m2 = 0.0;        ///< sum n (x - mu)^2
        double d = 0.0;         ///< sigma^2 / mu, its term of D
        double e_inv = 0.0;     ///< 1 / mu, its term of 1/E
    };
    void resize(int p) {
        if (static_cast<int>(workers_.size()) == p) return;
        p_ = p;
        workers_.assign(static_cast<std::size_t>(p), worker{});
        known_ = 0;
        d_sum_ = e_inv_sum_ = 0.0;
    }
    void resum() {
        since_resum_ = 0;
        d_sum_ = e_inv_sum_ = 0.0;
        for (const worker& v : workers_) {
            if (v.chunks == 0) continue;
            d_sum_ += v.d;
            e_inv_sum_ += v.e_inv;
        }
    }
    int p_ = 1;
    std::vector<worker> workers_;
    int known_ = 0;              ///< workers with at least one completed chunk
    double d_sum_ = 0.0;         ///< D over the known workers
    double e_inv_sum_ = 0.0;     ///< 1/E over the known workers
    int since_resum_ = 0;
    task_count first_ = 1;       ///< ceil(N/(2p)): start-up chunk and cap
};

// ---------------------------------------------------------------------------------------------------------
/// The adaptive weighted factoring family. Weighted factoring (Hummel, Schmidt, Uma & Wein 1996; pfarm's dfss)
/// whose weights are learnt from the measured performance of the workers:
///  - awf: I. Banicescu, V. Velusamy and J. Devaprasad, "On the scalability of dynamic scheduling scientific
///    applications with adaptive weighted factoring", Cluster Computing 6(3):215-226, 2003.
///  - awf-b, awf-c, awf-d, awf-e: R. L. Carino and I. Banicescu, "Dynamic load balancing with adaptive
///    factoring methods in scientific applications", The Journal of Supercomputing 44(1):41-63, 2008.
/// Performance of worker i: its weighted average time per task, later measurements weighted more,
///     pi_i = sum_k k t_k / sum_k k n_k,
/// and its weight is its speed relative to the mean speed of the workers measured so far (m of them),
///     w_i = (1/pi_i) / ((1/m) sum_{measured} 1/pi_l)                        (mean 1 over measured workers)
/// (DLS.c: awap / pi_i normalised so that the weights add up to p; LB4OMP: the same over the PUs that have
/// data). A worker not measured yet keeps its initial weight: --weights scaled to mean 1, else 1 (LB4OMP's
/// rule; DLS.c gives such a worker its minimum chunk instead). The variants:
///  - awf-b: batches of p chunks (pfarm's stage_counter, as fss/dfss); chunk ceil(R_batch w_j / (x p)), x = 2
///    (--factor); the weights are recomputed at the start of every batch from all chunks completed so far and
///    stay fixed during the batch. k = the worker's own chunk index (1, 2, ...), t_k its compute time.
///  - awf-c: chunk ceil(R w_j / (x p)) with R at the request; the weights are recomputed after every
///    completed chunk (so every request sees the latest measurements).
///  - awf-d, awf-e: awf-b, awf-c with the scheduling overhead included in the chunk time (LB4OMP times from
///    one request to the next, DLS.c from the chunk's arrival to its end). pfarm's technique interface reports compute time
///    only, so pfarm charges t_k + h per chunk with h = --overhead-h (required); with that, D/E differ from B/C
///    exactly by the h added to every measured time (it weighs most on small chunks, so it moves weight toward
///    the workers that take larger chunks). A driver that reports request-to-request times would replace h.
///  - awf: adapts between time steps of an outer loop in the source. pfarm schedules one loop, so a batch plays
///    the time step: weights fixed during a batch, recomputed at each batch start from all chunks completed so
///    far, each chunk weighted by the (1-based) index of the batch it was handed out in (the source weights
///    time step s by s). Its first batch uses the initial weights (--weights, or equal). It coincides with
///    awf-b whenever every worker takes exactly one chunk per batch (e.g. pfarm-chunks' round-robin requests).
/// O(1): a request costs O(1); the per-batch recomputation touches every worker once per batch of p chunks.
class adaptive_weighted_factoring final : public technique {
public:
    enum class kind { time_step, batch, chunk };

    adaptive_weighted_factoring(std::string name, kind k, double overhead, const technique_options& o, int p)
        : name_(std::move(name)), kind_(k), overhead_(overhead), x_(factoring_ratio(o)), initial_(o.weights) {
        if (!initial_.empty() && static_cast<int>(initial_.size()) != p)
            throw invalid_argument("weights", "has " + std::to_string(initial_.size()) +
                                                    " values; expected one per worker (" + std::to_string(p) + ")");
        resize(p);
    }
    std::string name() const override { return name_; }
    bool learns_from_times() const override { return true; }
    void start(const schedule_context& c) override {
        resize(c.workers);
        stages_ = stage_counter(c.workers);
        applied_stage_ = -1;
    }
    task_count next(int w, task_count r) override {
        const auto j = static_cast<std::size_t>(w);
        const double pd = static_cast<double>(p_);
        if (kind_ == kind::chunk) {
            const double weight = workers_[j].inv > 0.0 ? workers_[j].inv * static_cast<double>(known_) / inv_sum_
                                                        : initial_[j];
            return at_least_one(ceil_count(static_cast<double>(r) * weight / (x_ * pd)));
        }
        const task_count r_batch = stages_.on_chunk(r);
        const int batch = stages_.last_stage();
        if (batch != applied_stage_) freeze_weights(batch);
        workers_[j].batch = batch;
        return at_least_one(ceil_count(static_cast<double>(r_batch) * frozen_[j] / (x_ * pd)));
    }
    void completed(int w, chunk done, double seconds) override {
        worker& me = workers_[static_cast<std::size_t>(w)];
        const double k = kind_ == kind::time_step ? static_cast<double>(me.batch + 1)  // batch index, 1-based
                                                  : static_cast<double>(++me.chunks);  // own chunk index
        me.weighted_time += k * (seconds + overhead_);
        me.weighted_tasks += k * static_cast<double>(done.count);
        const double inv = me.weighted_tasks / me.weighted_time;  // 1 / pi
        if (kind_ != kind::chunk) {  // batch kinds read inv at the next batch start only
            me.inv = inv;
            return;
        }
        if (me.inv > 0.0) {
            inv_sum_ += inv - me.inv;
        } else {
            inv_sum_ += inv;
            ++known_;
        }
        me.inv = inv;
        if (++since_resum_ == p_) {  // exact re-sum every p completions: no drift, O(1) amortised
            since_resum_ = 0;
            inv_sum_ = 0.0;
            for (const worker& v : workers_) inv_sum_ += v.inv;
        }
    }

private:
    struct worker {
        double weighted_time = 0.0;   ///< sum k (t_k + h)
        double weighted_tasks = 0.0;  ///< sum k n_k
        double inv = 0.0;             ///< 1 / pi, 0 while not measured
        task_count chunks = 0;        ///< completed chunks (awf-b..e's k)
        int batch = 0;                ///< batch of the chunk it holds (awf's k - 1)
    };
    void resize(int p) {
        if (static_cast<int>(workers_.size()) == p) return;
        p_ = p;
        workers_.assign(static_cast<std::size_t>(p), worker{});
        if (initial_.size() != static_cast<std::size_t>(p)) initial_.assign(static_cast<std::size_t>(p), 1.0);
        const double sum = std::accumulate(initial_.begin(), initial_.end(), 0.0);
        for (double& v : initial_) v *= static_cast<double>(p) / sum;  // mean 1
        frozen_ = initial_;
        known_ = 0;
        inv_sum_ = 0.0;
    }
    /// Batch start: weights from every chunk completed so far, fixed for the batch. O(p) once per p chunks.
    void freeze_weights(int batch) {
        applied_stage_ = batch;
        double sum = 0.0;
        int measured = 0;
        for (const worker& v : workers_) {
            if (v.inv <= 0.0) continue;
            sum += v.inv;
            ++measured;
        }
        for (std::size_t j = 0; j < workers_.size(); ++j)
            frozen_[j] = workers_[j].inv > 0.0 ? workers_[j].inv * static_cast<double>(measured) / sum : initial_[j];
    }

    std::string name_;
    kind kind_;
    double overhead_;  ///< h added to every chunk time (awf-d, awf-e), else 0
    double x_;
    std::vector<double> initial_;  ///< initial weights, mean 1
    int p_ = 1;
    std::vector<worker> workers_;
    std::vector<double> frozen_;   ///< batch kinds: the weights of the current batch
    stage_counter stages_;
    int applied_stage_ = -1;
    int known_ = 0;          ///< awf-c/e: measured workers
    double inv_sum_ = 0.0;   ///< awf-c/e: sum of 1/pi over measured workers
    int since_resum_ = 0;
};

using awf_kind = adaptive_weighted_factoring::kind;

technique_info awf_row(const char* name, awf_kind k, bool with_overhead, const char* description,
                       const char* parameters, const char* source) {
    const std::string label = name;
    return {label, "adaptive", description, parameters, source,
            [label, k, with_overhead](const technique_options& o, int p) -> std::unique_ptr<technique> {
                const double h = with_overhead
                                     ? required_positive(o.overhead, "overhead",
                                                         label + " (the scheduling overhead h per chunk, "
                                                                 "added to every measured chunk time)")
                                     : 0.0;
                return std::make_unique<adaptive_weighted_factoring>(label, k, h, o, p);
            }};
}

}  // namespace

std::vector<technique_info> literature_techniques() {
    const char* awf2003 =
        "Banicescu, Velusamy & Devaprasad, Cluster Computing 6(3):215-226, 2003 (AWF); checked against DLS4LB "
        "C/DLS.c and LB4OMP";
    const char* awf2008 =
        "Carino & Banicescu, J. Supercomputing 44(1):41-63, 2008 (AWF-B..E); checked against DLS4LB C/DLS.c and "
        "LB4OMP";
    return {
        awf_row("awf", awf_kind::time_step, false,
                "adaptive weighted factoring: weighted fss, weights from batch-index-weighted times, set per batch",
                "--weights w1,..,wP (initial, else equal), --factor X", awf2003),
        awf_row("awf-b", awf_kind::batch, false,
                "AWF-B: weighted fss batches, weights from chunk-index-weighted compute times, set per batch",
                "--weights (initial), --factor X", awf2008),
        awf_row("awf-c", awf_kind::chunk, false,
                "AWF-C: ceil(R w_j/(x p)) per request, weights updated after every chunk",
                "--weights (initial), --factor X", awf2008),
        awf_row("awf-d", awf_kind::batch, true,
                "AWF-D: AWF-B timing each chunk as compute time + scheduling overhead h",
                "--overhead-h H (required), --weights (initial), --factor X", awf2008),
        awf_row("awf-e", awf_kind::chunk, true,
                "AWF-E: AWF-C timing each chunk as compute time + scheduling overhead h",
                "--overhead-h H (required), --weights (initial), --factor X", awf2008),
        {"af", "adaptive",
         "adaptive factoring: (D + 2ER - sqrt(D^2 + 4DER)) / (2 mu_j) from measured means and deviations", "",
         "Banicescu & Liu, HPC Symposium 2000; Carino & Banicescu, J. Supercomputing 44(1):41-63, 2008; checked "
         "against LB4OMP and DLS4LB C/DLS.c",
         [](const technique_options&, int p) { return std::make_unique<adaptive_factoring>(p); }},
        {"fsc", "fixed-size",
         "fixed size chunking: (sqrt(2) N h / (sigma p sqrt(ln p)))^(2/3) (one chunk of N when p = 1)",
         "--overhead-h H (required), --sigma S (required)",
         "Kruskal & Weiss, IEEE Trans. Software Eng. SE-11(10):1001-1016, 1985",
         [](const technique_options& o, int) {
             const double h = required_positive(o.overhead, "overhead",
                                                "fsc (the scheduling overhead h per chunk, in task-time units)");
             const double sigma = required_positive(o.sigma, "sigma",
                                                    "fsc (the standard deviation of the task times, in the unit of h)");
             return std::make_unique<fixed_size_chunking>(h, sigma);
         }},
        {"mfsc", "fixed-size", "modified fsc: floor(0.55 + T ln2 / ln T), T = ceil(N/p): about as many chunks as fss",
         "", "Carino & Banicescu, SCPE 8(3), 2007 (DLS4LB C/DLS.c); Korndoerfer et al., IEEE TPDS 33(4), 2022 (LB4OMP)",
         [](const technique_options&, int) { return std::make_unique<modified_fsc>(); }},
    };
}

}  // namespace pfarm::detail
