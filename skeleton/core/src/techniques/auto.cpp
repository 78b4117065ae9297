// The `auto` technique (docs/techniques/auto.md): it hands out a tenth of the loop in small chunks to measure the
// workers, fits the predictor's loop profiles to where the measured chunks lay, then simulates every candidate
// technique through the driver's predictor (pfarm/prediction.hpp) over the platform and the profiles that explain
// the measurement (or over every profile when none does), goes on with the one whose predicted makespan is nearest the
// best in every case, and chooses again when the workers' speeds drift apart from the ones it chose with. It is a
// technique like any other to the farmer: a switch starts the new technique over the tasks still unassigned; chunks
// in flight are untouched.
#include "pfarm/calibration.hpp"
#include "pfarm/detail/technique_families.hpp"
#include "pfarm/error.hpp"
#include "pfarm/prediction.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace pfarm::detail {

namespace {

/// A worker's speed relative to the others has drifted when it moved past this fraction of the one chosen with.
constexpr double drift_threshold = 0.5;
/// Choosing again is worth it only while this many tasks per worker are left unassigned.
constexpr task_count rechoose_min_tasks_per_worker = 4;
/// The platforms a choice is judged on include the measured ones with tasks this many times as costly.
constexpr double task_scale = 16.0;
/// Before its first choice it hands out this share of the loop in small chunks (probes_per_worker per worker) and
/// measures the workers over them: a calibration task per worker says little of the loop when its costs vary.
constexpr double measured_share = 0.1;
constexpr int probes_per_worker = 4;
/// A worker's probes after its first last long enough that serving every worker's probes keeps the farmer busy at
/// most this share of the time (its seconds per request from the predictor): where a request costs the farmer as
/// much as a few tasks, small probes would have the workers queue at the farmer while it measures.
constexpr double probe_farmer_load = 0.5;
/// Such a probe is at most this many times the worker's share of the measured tenth: its pace was measured on the
/// loop's first tasks, which may cost far less than the next ones (a loop whose cost grows from nothing).
constexpr task_count probe_most_shares = 2;
/// The load to come a choice must meet: the fastest worker becomes this many times slower this share of the way
/// through what is left.
constexpr double load_factor = 4.0;
constexpr double load_delay = 0.25;
/// A worker's pace is compared once it has completed this many tasks (in one chunk or more) since the last choice: a pace
/// over fewer tasks is the tasks' costs as much as the worker's speed.
constexpr task_count drift_min_tasks = 32;
/// A choice after the first simulates only this many candidates: the best of the first choice (and the one in use).
constexpr std::size_t rechoose_candidates = 8;
/// The most choices in one farm (the first included): each costs a round of simulations.
constexpr int max_choices = 8;
/// A loop profile explains the chunks measured when the root mean square of the log of their measured over fitted
/// times is at most this; the profiles a choice is judged on are those within profile_margin of the best fit.
constexpr double profile_explains = 0.25;
constexpr double profile_margin = 0.1;
/// Candidates whose worst ratio to the best is within this fraction of the least are told apart by their next worst.
constexpr double tie_margin = 0.003;
/// The chunks kept for the fit since the last choice: the latest ones, this many at most (half are let go at once).
constexpr std::size_t max_measured_chunks = 4096;

std::string percent(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%+.0f%%", v * 100.0);
    return text;
}

class auto_technique final : public technique {
public:
    auto_technique(const technique_options& options, int workers)
        : options_(options), workers_(workers), done_(static_cast<std::size_t>(workers)) {}

    std::string name() const override { return "auto"; }
    bool learns_from_times() const override { return true; }

    void start(const schedule_context& context) override {
        if (!context.predictor || !context.predictor->predict)
            throw invalid_argument("technique", "auto simulates its candidates, which this farm cannot (the flat MPI "
                                                "farm and the simulator's flat farm can); choose a technique");
        context_ = context;
        if (context.calibration && context.calibration->times.size() == static_cast<std::size_t>(workers_))
            pace_ = context.calibration->times;  // a calibration span's (farmer.hpp): the paces to start from
        const double measured = measured_share * static_cast<double>(context.remaining);
        measuring_ = static_cast<task_count>(std::ceil(measured));
        probe_ = std::max<task_count>(options_.min_chunk,
                                      static_cast<task_count>(std::ceil(measured / (probes_per_worker * workers_))));
    }

    task_count next(int worker, task_count remaining) override {
        left_ = remaining;
        if (!inner_) {
            task_count completed = 0;
            for (const since_choice& d : done_) completed += d.count;
            // Measuring: probes until measured_share of the loop is handed out and half of it completed (probes
            // larger than probe_ hand the share out before most of it is measured).
            if (handed_ < measuring_ || 2 * completed < measuring_) {
                const task_count size = std::min(probe(worker), remaining);
                handed_ += size;
                return size;
            }
            choose(remaining, "measured over " + std::to_string(completed) + " tasks");
        } else if (!why_again_.empty()) {
            std::string why = std::move(why_again_);
            why_again_.clear();
            choose(remaining, why);
        }
        const task_count size = inner_->next(worker, remaining);
        // A worker told to stop stays stopped: a technique chosen after would plan a share for it that nobody takes.
        if (size == 0) settled_ = true;
        return size;
    }

    void completed(int worker, chunk done, double seconds) override {
        if (done.first >= 0) {  // one chunk, where it lay: what the profile fit takes
            if (measured_.size() == max_measured_chunks)
                measured_.erase(measured_.begin(), measured_.begin() + max_measured_chunks / 2);
            measured_.push_back({worker, done, seconds});
            ++measured_since_;
        }
        if (inner_) inner_->completed(worker, done, seconds);
        busy_ += seconds;
        auto& d = done_[static_cast<std::size_t>(worker)];
        d.count += done.count;
        d.seconds += seconds;
        d.chunks += 1;
        if (inner_ && why_again_.empty() && static_cast<int>(choices_.size()) < max_choices) why_again_ = drifted();
    }

    void run_queue_changed(int worker, double queue) override {
        if (inner_) inner_->run_queue_changed(worker, queue);
    }

    std::optional<double> installment_factor() const override {
        return inner_ ? inner_->installment_factor() : std::nullopt;
    }

    const std::vector<technique_choice>* choices() const override { return &choices_; }

private:
    /// A loop profile that explains the measurement: its index among the predictor's profiles, and each worker's
    /// seconds per task of cost 1 fitted on it.
    struct explaining_profile {
        int index = 0;
        std::vector<double> seconds_per_cost;
    };

    struct since_choice {
        task_count count = 0;
        double seconds = 0.0;
        int chunks = 0;
    };

    /// The size of `worker`'s next probe: probe_, or in a farm that reclaims, for a worker already measured, enough
    /// tasks at its pace to last workers x (the farmer's seconds per request) / probe_farmer_load, at most
    /// probe_most_shares times its share of the measured tenth. Without reclaim a probe stays probe_: one too large
    /// for a worker whose load then rises could not be taken back.
    task_count probe(int worker) const {
        const since_choice& d = done_[static_cast<std::size_t>(worker)];
        const double request = context_.predictor->request_seconds;
        if (!context_.predictor->reclaim || d.count == 0 || !(d.seconds > 0.0) || !(request > 0.0)) return probe_;
        const double span = request * workers_ / probe_farmer_load, pace = d.seconds / static_cast<double>(d.count);
        const auto share = static_cast<task_count>(std::ceil(static_cast<double>(measuring_) / workers_));
        const task_count most = std::max(probe_, probe_most_shares * share);
        return std::clamp(static_cast<task_count>(std::ceil(span / pace)), probe_, most);
    }

    /// The pace of each worker of `among` relative to their mean pace in `pace`.
    static std::vector<double> relative(const std::vector<double>& pace, const std::vector<std::size_t>& among) {
        double sum = 0.0;
        for (std::size_t w : among) sum += pace[w];
        std::vector<double> r;
        for (std::size_t w : among) r.push_back(pace[w] * static_cast<double>(among.size()) / sum);
        return r;
    }

    /// Each worker's seconds per task over what it completed since the last choice; a worker that completed nothing
    /// since keeps its earlier pace, or without one (nothing completed yet) gets the slowest pace measured: a worker
    /// too slow to have finished a chunk is taken for the slowest.
    std::vector<double> measured() const {
        std::vector<double> pace = pace_;
        pace.resize(static_cast<std::size_t>(workers_), 0.0);
        double slowest = 0.0;
        for (std::size_t w = 0; w < pace.size(); ++w) {
            if (done_[w].count > 0 && done_[w].seconds > 0.0)
                pace[w] = done_[w].seconds / static_cast<double>(done_[w].count);
            slowest = std::max(slowest, pace[w]);
        }
        for (double& t : pace)
            if (!(t > 0.0)) t = slowest > 0.0 ? slowest : 1.0;  // nothing measured at all: equal speeds
        return pace;
    }

    /// Why to choose again, or empty: among the workers that completed drift_min_tasks tasks since the last choice, one
    /// whose speed relative to theirs moved past the threshold, while enough tasks are left for a new choice to matter
    /// and no worker has been told to stop. With a loop profile that explains the measurement, the speeds are fitted on
    /// its costs (checked once every `workers` chunks: a fit costs a pass over the chunks since the choice); without,
    /// they are seconds per task.
    std::string drifted() {
        if (settled_ || left_ < rechoose_min_tasks_per_worker * workers_) return {};  // too few left to matter
        // Only the workers measured since the choice are compared, with each other: their tasks came from the same
        // stretch of the loop, so a loop whose costs change along it does not pass for a change of speed.
        std::vector<std::size_t> among;
        for (std::size_t w = 0; w < done_.size(); ++w)
            if (done_[w].count >= drift_min_tasks && done_[w].seconds > 0.0) among.push_back(w);
        if (among.size() < 2) return {};
        std::vector<double> now;
        if (!profiles_.empty()) {
            if (measured_since_ % workers_ != 0) return {};
            const std::vector<profile_fit> fits = context_.predictor->fit(measured_, context_.tasks, workers_);
            const auto best = static_cast<std::size_t>(profiles_.front().index);
            if (best >= fits.size()) return {};  // nothing measured it can fit
            now = fits[best].seconds_per_cost;
        } else {
            now = measured();
        }
        const std::vector<double> before = relative(pace_, among), after = relative(now, among);
        for (std::size_t i = 0; i < among.size(); ++i) {
            const double change = after[i] / before[i] - 1.0;
            if (std::abs(change) > drift_threshold)
                return "worker " + std::to_string(among[i]) + "'s speed relative to the others drifted " +
                       percent(-change / (1.0 + change));
        }
        return {};
    }

    /// The first choice: the loop profiles that explain the chunks measured (misfit at most profile_explains and
    /// within profile_margin of the best), best first, into profiles_, each with every worker's fitted seconds per task
    /// of cost 1. None when no profile explains them.
    void find_profiles() {
        const std::vector<profile_fit> fits = context_.predictor->fit(measured_, context_.tasks, workers_);
        double best = std::numeric_limits<double>::infinity();
        for (const profile_fit& f : fits) best = std::min(best, f.misfit);
        if (!(best <= profile_explains)) return;
        for (std::size_t i = 0; i < fits.size(); ++i)
            if (fits[i].misfit <= best + profile_margin) profiles_.push_back({static_cast<int>(i), fits[i].seconds_per_cost});
        std::stable_sort(profiles_.begin(), profiles_.end(), [&](const explaining_profile& x, const explaining_profile& y) {
            return fits[static_cast<std::size_t>(x.index)].misfit < fits[static_cast<std::size_t>(y.index)].misfit;
        });
    }

    /// A later choice: each profile of profiles_ refitted to the chunks completed since the last choice (the speeds
    /// now, on the loop's costs); a worker that completed none, or a profile the fit returns nothing for, keeps its
    /// earlier fit.
    void refit_profiles() {
        const std::vector<profile_fit> fits = context_.predictor->fit(measured_, context_.tasks, workers_);
        for (explaining_profile& p : profiles_) {
            const auto i = static_cast<std::size_t>(p.index);
            if (i >= fits.size()) continue;
            for (std::size_t w = 0; w < p.seconds_per_cost.size(); ++w)
                if (done_[w].count > 0) p.seconds_per_cost[w] = fits[i].seconds_per_cost[w];
        }
    }

    void choose(task_count remaining, const std::string& why) {
        const auto begun = std::chrono::steady_clock::now();
        pace_ = measured();
        // The profiles the measured chunks fit: each laid over the whole loop, with the workers' speeds fitted to it,
        // which tells a worker's speed apart from the costs of the tasks it got, and the tasks left from those measured.
        bool fitted = false;  // whether this choice is judged on the profiles that explain the measurement
        if (remaining <= context_.tasks && context_.predictor->fit && !measured_.empty()) {
            if (choices_.empty()) find_profiles();
            else refit_profiles();
            fitted = !profiles_.empty();
        }
        if (fitted) pace_ = profiles_.front().seconds_per_cost;
        calibration_ = calibrate_times_only(pace_, static_cast<std::int64_t>(std::max<task_count>(context_.tasks, 1)));
        const auto fastest = static_cast<int>(std::min_element(pace_.begin(), pace_.end()) - pace_.begin());
        double speed = 0.0;
        for (double t : pace_) speed += 1.0 / t;
        const double horizon = static_cast<double>(remaining) / speed;
        const auto mean_of = [](const std::vector<double>& pace) {
            double mean = 0.0;
            for (double t : pace) mean += t / static_cast<double>(pace.size());
            return std::vector<double>(pace.size(), mean);
        };
        // A load to come: the fastest worker slows down a quarter of the way through, which a choice that hands out
        // most of the loop at once cannot meet.
        const std::vector<load_change> load = {{fastest, load_delay * horizon, load_factor}};
        std::vector<platform_estimate> platforms;
        std::string profiles;
        if (fitted) {
            // Each profile that explains the measurement, laid over the loop: with the fitted speeds, every worker at
            // their mean (a fit over few chunks may still mistake a task's cost for a worker's speed), and the load to
            // come.
            for (const explaining_profile& p : profiles_) {
                platforms.push_back({p.seconds_per_cost, {}, p.index, context_.tasks});
                platforms.push_back({mean_of(p.seconds_per_cost), {}, p.index, context_.tasks});
                platforms.push_back({p.seconds_per_cost, load, p.index, context_.tasks});
                profiles += (profiles.empty() ? "" : ", ") + context_.predictor->profiles.at(static_cast<std::size_t>(p.index));
            }
        } else {
            // No profile explains it: every profile, stretched over the tasks left, on the measured paces and every
            // worker at the mean pace (a pace measured over a few tasks mixes the worker's speed with the cost of the
            // tasks it happened to get, so a choice must hold up if the measured differences were the tasks' and not
            // the workers'); each with tasks `task_scale` times as costly (the first tasks of a loop whose cost grows
            // misjudge the work against the farmer's cost per request); and the load to come.
            std::vector<double> scaled = pace_;
            for (double& t : scaled) t *= task_scale;
            platforms = {{pace_, {}}, {mean_of(pace_), {}}, {scaled, {}}, {mean_of(scaled), {}}, {pace_, load}};
        }
        struct candidate {
            std::string name;
            std::vector<double> makespans;
        };
        std::vector<candidate> candidates;
        for (const technique_info& row : techniques()) {
            if (row.name == "auto") continue;
            if (!shortlist_.empty() && std::find(shortlist_.begin(), shortlist_.end(), row.name) == shortlist_.end())
                continue;
            try {
                const auto made = row.make(options_, workers_);
                const technique_needs needs = made->needs();
                if (needs.calibration != calibration_mode::none && needs.calibration != calibration_mode::times_only)
                    continue;  // fits to monitor readings auto does not take
                if (!needs.with_every_request.empty()) continue;
                candidate c{row.name, {}};
                for (const platform_estimate& platform : platforms) {
                    const std::vector<double> m = context_.predictor->predict(platform, remaining, row.name, options_);
                    c.makespans.insert(c.makespans.end(), m.begin(), m.end());
                }
                candidates.push_back(std::move(c));
            } catch (const invalid_argument&) {
                continue;  // a candidate the options cannot build (css without a chunk size, tss's first past the loop)
            }
        }
        if (candidates.empty()) throw invalid_argument("technique", "auto found no candidate these options can build");
        const std::size_t cases = candidates.front().makespans.size();
        std::vector<double> best(cases, std::numeric_limits<double>::infinity());
        for (const candidate& c : candidates)
            for (std::size_t j = 0; j < cases; ++j) best[j] = std::min(best[j], c.makespans.at(j));
        // A candidate is judged on the whole run: the time the workers computed so far, per worker, before what it
        // predicts, so that a case whose remaining tasks cost little does not weigh like the whole loop.
        const double before = busy_ / static_cast<double>(workers_);
        technique_choice choice;
        choice.remaining = remaining;
        choice.round = static_cast<int>(choices_.size());
        choice.why = profiles.empty() ? why : why + "; the loop's profile " + profiles;
        // Each candidate's worst and next worst ratio to the best over the cases (the next worst is the worst when
        // there is one case); the worst goes to the report.
        double least_worst = std::numeric_limits<double>::infinity();
        std::vector<double> next_worst;
        for (const candidate& c : candidates) {
            double worst = 1.0, next = 1.0;
            for (std::size_t j = 0; j < cases; ++j) {
                const double r = std::max(1.0, (before + c.makespans[j]) / (before + best[j]));
                if (r > worst) next = worst, worst = r;
                else if (r > next) next = r;
            }
            choice.candidates.emplace_back(c.name, worst);
            next_worst.push_back(cases > 1 ? next : worst);
            least_worst = std::min(least_worst, worst);
        }
        // Among the candidates whose worst ratio is within tie_margin of the least, the one whose next worst is least.
        double chosen_next = std::numeric_limits<double>::infinity();
        for (std::size_t i = 0; i < candidates.size(); ++i) {
            const double worst = choice.candidates[i].second;
            if (worst <= least_worst * (1.0 + tie_margin) && next_worst[i] < chosen_next) {
                chosen_next = next_worst[i];
                choice.chosen = candidates[i].name;
                choice.predicted = worst;
            }
        }
        if (shortlist_.empty()) {  // the first choice: its best candidates are the ones a later choice weighs
            auto ranked = choice.candidates;
            std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
            for (std::size_t i = 0; i < ranked.size() && i < rechoose_candidates; ++i) shortlist_.push_back(ranked[i].first);
        } else if (std::find(shortlist_.begin(), shortlist_.end(), choice.chosen) == shortlist_.end()) {
            shortlist_.push_back(choice.chosen);
        }

        inner_ = make_technique(choice.chosen, options_, workers_);
        schedule_context context = context_;
        context.remaining = remaining;
        context.calibration = &calibration_;
        context.predictor = nullptr;
        inner_->start(context);
        if (inner_->learns_from_times())  // it starts from the speeds measured so far, as after a calibration
            for (int w = 0; w < workers_; ++w) inner_->completed(w, chunk{-1, 1}, pace_[static_cast<std::size_t>(w)]);
        std::fill(done_.begin(), done_.end(), since_choice{});
        measured_.clear();
        measured_since_ = 0;
        choice.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
        choices_.push_back(std::move(choice));
    }

    technique_options options_;
    int workers_;
    schedule_context context_;
    calibration_result calibration_;    ///< built from pace_ for the technique chosen
    std::vector<double> pace_;          ///< seconds per task of each worker the last choice was made with
    std::vector<since_choice> done_;    ///< what each worker completed since the last choice (or since the start)
    task_count measuring_ = 0;          ///< tasks handed out in probes before the first choice
    task_count probe_ = 1;              ///< the size of a probe
    task_count handed_ = 0;             ///< tasks handed out in probes so far
    task_count left_ = 0;               ///< tasks unassigned at the last request
    double busy_ = 0.0;                 ///< the seconds every worker computed, summed
    std::unique_ptr<technique> inner_;  ///< the technique chosen
    std::string why_again_;             ///< set when the speeds drifted: the next request chooses again
    bool settled_ = false;              ///< the technique chosen told a worker to stop: no choice after that
    std::vector<std::string> shortlist_;  ///< the candidates of a choice after the first
    std::vector<technique_choice> choices_;
    std::vector<measured_chunk> measured_;  ///< the latest chunks completed since the last choice, where they lay
    long long measured_since_ = 0;          ///< how many chunks were completed since the last choice
    std::vector<explaining_profile> profiles_;  ///< find_profiles(), refit_profiles(): best first
};

}  // namespace

std::vector<technique_info> auto_techniques() {
    return {{"auto", "auto",
             "simulates every candidate over the measured platform after the calibration, goes on with the one "
             "nearest the best over the loop profiles, and chooses again when the speeds drift",
             "the options of its candidates (--min-chunk, --chunk, --factor, ...)",
             "pfarm (docs/techniques/auto.md); after DLS4LB's SimAS and LB4OMP's Auto4OMP",
             [](const technique_options& o, int workers) -> std::unique_ptr<technique> {
                 return std::make_unique<auto_technique>(o, workers);
             }}};
}

}  // namespace pfarm::detail
