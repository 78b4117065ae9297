// pfarm benchmark, part 1: the cost of one scheduling decision (docs/benchmarks.md, section 1).
//
// For every technique of the registry and p = 4, 64, 1024 workers, the farmer state machine is driven the
// way the MPI farmer drives it: workers ask in round-robin order, and each request first completes the
// worker's previous chunk. A decision is that pair, farmer::complete(w, seconds) + farmer::request(w).
// Construction and calibration are not timed (manual time): a fresh farmer is built and calibrated
// untimed, then decisions are timed while tasks remain unassigned, up to a cap per farmer. Techniques
// that hand out few chunks per loop (static: p) get several farmers per timed batch so that a batch is
// long enough to time (at most 64 farmers, warm in the cache).
//
//   pfarm-bench-chunks                           Google Benchmark, console output
//   pfarm-bench-chunks --benchmark_format=json   JSON (or --benchmark_out=FILE --benchmark_out_format=json)
//   pfarm-bench-chunks --targets [--strict]      also prints, after the run, a table per technique:
//                                                ns/decision at p = 4, 64, 1024, t(1024)/t(4), and the target
//
// The counter `ns_per_decision` is the number to read: the median over the timed batches of a run of the
// batch's time per decision (`ns_per_decision_mean` is the mean, which a preempted batch inflates);
// real_time is per timed batch (thousands of decisions).
// --targets exits non-zero when a benchmark did not produce a result; with --strict also when a target is
// missed (the default does not, because absolute times on shared machines are noise).
#include "pfarm/farmer.hpp"
#include "pfarm/registry.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

using pfarm::task_count;

constexpr int worker_counts[] = {4, 64, 1024};
constexpr task_count loop_tasks = 1'000'000;         ///< I: a large loop, so that no technique runs dry early
constexpr std::int64_t decisions_per_farmer = 1 << 16;  ///< cap of timed decisions on one farmer (ss, css)
constexpr std::int64_t decisions_per_batch = 1 << 12;   ///< a timed batch holds about this many
constexpr std::int64_t max_farmers_per_batch = 64;

/// The targets (docs/performance.md "Targets"): adaptive techniques (registry family "adaptive": multi, awf*,
/// af) 200 ns, the others 50 ns (simple, weighted, two-phase, single-round, fixed-size: closed formulas).
bool is_adaptive(const pfarm::technique_info& info) { return info.family == "adaptive"; }
double target_ns(const pfarm::technique_info& info) { return is_adaptive(info) ? 200.0 : 50.0; }

/// The options every technique gets: the required ones set (css chunk, fsc h and sigma, awf-d/-e h), the
/// rest at their defaults. Weighted techniques get no --weights, so they calibrate like in a real run.
pfarm::technique_options options_for(const std::string&) {
    pfarm::technique_options o;
    o.chunk = 16;
    o.overhead = 1e-5;  // seconds: fsc reads it in task-time units, which only changes its chunk size
    o.sigma = 1e-4;
    return o;
}

/// Per-task time of worker w: four speed classes, so that adaptive techniques see heterogeneity.
double per_task_seconds(int w) { return 1e-4 * (1.0 + 0.5 * static_cast<double>(w % 4)); }

/// Monitor readings for the calibration task: varied availability, latency and benchmark so that the
/// statistical calibrations (dealdyn-lr, dealdyn-mv) have a well-posed fit.
pfarm::resource_sample sample_for(int w) {
    pfarm::resource_sample s;
    s.availability = 1.0 / (1.0 + 0.5 * static_cast<double>(w % 4));
    s.latency = 1e-5 * (1.0 + static_cast<double>(w % 5));
    s.benchmark = 100.0 * (1.0 + static_cast<double>(w % 3));
    s.run_queue = 1.0;
    return s;
}

/// One farmer plus the round-robin driver state of its workers.
class decision_loop {
public:
    decision_loop(const std::string& technique, int workers)
        : farmer_(loop_tasks, workers, pfarm::make_technique(technique, options_for(technique), workers)),
          held_(static_cast<std::size_t>(workers), 0), stopped_(static_cast<std::size_t>(workers), false),
          speed_(static_cast<std::size_t>(workers)) {
        for (int w = 0; w < workers; ++w) speed_[static_cast<std::size_t>(w)] = per_task_seconds(w);
        for (int i = 0; i < 64; ++i) jitter_[i] = 1.0 + 0.1 * std::sin(0.7 * i);  // deterministic noise
        calibrate();
    }

    /// Untimed: every worker runs its calibration task (when the technique asks for one), then the barrier.
    void calibrate() {
        if (!farmer_.calibrating()) return;
        const int p = farmer_.workers();
        for (int w = 0; w < p; ++w) {
            const pfarm::decision d = farmer_.request(w);
            if (d.what == pfarm::decision::kind::stop) stopped_[static_cast<std::size_t>(w)] = true;
        }
        for (int w = 0; w < p; ++w) {
            if (stopped_[static_cast<std::size_t>(w)]) continue;
            const pfarm::resource_sample s = sample_for(w);
            farmer_.complete(w, speed_[static_cast<std::size_t>(w)], &s);
        }
    }

    /// Timed: up to `limit` decisions while tasks remain unassigned. Returns the decisions made.
    std::int64_t run(std::int64_t limit) {
        const int p = farmer_.workers();
        std::int64_t made = 0;
        while (made < limit && farmer_.remaining() > 0) {
            const int w = cursor_;
            cursor_ = cursor_ + 1 == p ? 0 : cursor_ + 1;
            const auto j = static_cast<std::size_t>(w);
            if (stopped_[j]) {
                if (++skipped_ > p) break;  // everybody stopped: the technique is done with this loop
                continue;
            }
            skipped_ = 0;
            if (held_[j] > 0) {
                farmer_.complete(w, static_cast<double>(held_[j]) * speed_[j] * jitter_[made & 63]);
                held_[j] = 0;
            }
            const pfarm::decision d = farmer_.request(w);
            benchmark::DoNotOptimize(d);
            if (d.what == pfarm::decision::kind::assign)
                held_[j] = d.work.count;
            else if (d.what == pfarm::decision::kind::stop)
                stopped_[j] = true;
            ++made;
        }
        return made;
    }

private:
    pfarm::farmer farmer_;
    std::vector<task_count> held_;
    std::vector<bool> stopped_;
    std::vector<double> speed_;
    double jitter_[64];
    int cursor_ = 0;
    int skipped_ = 0;
};

void bm_decision(benchmark::State& state, std::string technique, int workers) {
    // How many decisions one farmer yields (static: p; gss: about p ln(I/p); ss: the cap), so a batch can
    // hold enough farmers to be timed well.
    std::int64_t per_farmer = 0;
    try {
        per_farmer = decision_loop(technique, workers).run(decisions_per_farmer);
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
        return;
    }
    if (per_farmer < 1) {
        state.SkipWithError("the technique made no decision");
        return;
    }
    // At most max_farmers_per_batch farmers, built just before the batch runs, so that they are as warm in
    // the cache as a farmer that is serving requests (thousands of cold farmers would time cache misses).
    const auto farmers = static_cast<std::size_t>(
        std::clamp<std::int64_t>((decisions_per_batch + per_farmer - 1) / per_farmer, 1, max_farmers_per_batch));
    double total_seconds = 0.0;
    std::int64_t total_decisions = 0;
    std::vector<double> per_batch;  // ns per decision of each batch
    std::vector<std::unique_ptr<decision_loop>> batch(farmers);
    for (auto _ : state) {
        for (auto& f : batch) f = std::make_unique<decision_loop>(technique, workers);  // untimed
        std::int64_t made = 0;
        const auto start = std::chrono::steady_clock::now();
        for (auto& f : batch) made += f->run(decisions_per_farmer);
        const auto stop = std::chrono::steady_clock::now();
        const double seconds = std::chrono::duration<double>(stop - start).count();
        state.SetIterationTime(seconds);
        total_seconds += seconds;
        total_decisions += made;
        per_batch.push_back(1e9 * seconds / static_cast<double>(std::max<std::int64_t>(made, 1)));
    }
    state.SetItemsProcessed(total_decisions);
    // The median over the batches: a batch during which the process was preempted (a shared machine) is an
    // outlier that the median ignores and the mean does not.
    std::sort(per_batch.begin(), per_batch.end());
    state.counters["ns_per_decision"] = per_batch.empty() ? 0.0 : per_batch[per_batch.size() / 2];
    state.counters["ns_per_decision_mean"] =
        total_decisions > 0 ? 1e9 * total_seconds / static_cast<double>(total_decisions) : 0.0;
    state.counters["decisions_per_batch"] = static_cast<double>(total_decisions) / static_cast<double>(state.iterations());
    state.counters["p"] = workers;
}

std::string benchmark_name(const std::string& technique, int p) { return "decision/" + technique + "/p:" + std::to_string(p); }

/// Every technique but `auto`: its decisions are its chosen technique's behind one call, and what it adds is its
/// choices (simulations), whose cost the report gives (choices[].seconds) and docs/techniques/auto.md "Its cost"
/// measures.
bool timed(const pfarm::technique_info& info) { return info.name != "auto"; }

void register_all() {
    for (const auto& info : pfarm::techniques())
        if (timed(info))
            for (int p : worker_counts)
                benchmark::RegisterBenchmark(benchmark_name(info.name, p).c_str(), bm_decision, info.name, p)
                    ->UseManualTime()
                    ->Unit(benchmark::kMicrosecond);
}

/// The console reporter, keeping ns_per_decision of every run (the median aggregate when repeated).
class collecting_reporter : public benchmark::ConsoleReporter {
public:
    void ReportRuns(const std::vector<Run>& runs) override {
        for (const Run& run : runs) {
            const std::string& name = run.run_name.function_name;  // without "/manual_time"
            if (run.error_occurred) {
                errors_[name] = run.error_message;
                continue;
            }
            const auto it = run.counters.find("ns_per_decision");
            if (it == run.counters.end()) continue;
            const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
            if (run.run_type == Run::RT_Iteration) {
                if (!has_median_.count(name)) ns_[name].push_back(it->second.value);
            } else if (median) {
                has_median_[name] = true;
                ns_[name] = {it->second.value};
            }
        }
        ConsoleReporter::ReportRuns(runs);
    }
    /// The median of the repetitions of `name` (or its median aggregate), or NaN when it did not run.
    double ns(const std::string& name) const {
        const auto it = ns_.find(name);
        if (it == ns_.end() || it->second.empty()) return std::nan("");
        std::vector<double> v = it->second;
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    }
    const std::map<std::string, std::string>& errors() const { return errors_; }

private:
    std::map<std::string, std::vector<double>> ns_;
    std::map<std::string, bool> has_median_;
    std::map<std::string, std::string> errors_;
};

/// The table of the targets. Returns the number of techniques that miss a target; counts in
/// `failures` those whose benchmark failed.
int print_targets(const collecting_reporter& r, int& failures) {
    const double log_bound = std::log2(1024.0) / std::log2(4.0);  // t(1024)/t(4) of a cost growing as log p
    std::printf("\nScheduling decision cost (complete + request), ns per decision; targets: 50 ns (simple and\n"
                "weighted, two-phase, single-round, fixed-size), 200 ns (adaptive); growth t(1024)/t(4) <= %.0f\n"
                "(a logarithm: log2(1024)/log2(4)).\n\n",
                log_bound);
    std::printf("%-12s %-12s %9s %9s %9s %8s %7s  %s\n", "technique", "family", "p=4", "p=64", "p=1024", "growth", "target",
                "verdict");
    int misses = 0;
    std::size_t timed_techniques = 0;
    for (const auto& info : pfarm::techniques()) {
        if (!timed(info)) continue;
        ++timed_techniques;
        double t[3];
        for (int i = 0; i < 3; ++i) t[i] = r.ns(benchmark_name(info.name, worker_counts[i]));
        const double target = target_ns(info);
        const double worst = std::max({t[0], t[1], t[2]});
        const double growth = t[2] / t[0];
        const bool failed = std::any_of(r.errors().begin(), r.errors().end(), [&](const auto& e) {
            return e.first.rfind("decision/" + info.name + "/", 0) == 0;
        });
        if (std::isnan(t[0]) && std::isnan(t[1]) && std::isnan(t[2]) && !failed) continue;  // filtered out
        std::string verdict;
        if (failed) {
            verdict = "ERROR (see below)";
            ++failures;
        } else if (std::isnan(t[0]) || std::isnan(t[1]) || std::isnan(t[2])) {
            verdict = "incomplete (filtered)";
        } else {
            if (worst > target) {
                char text[64];
                std::snprintf(text, sizeof text, "MISS (%.1fx the target)", worst / target);
                verdict = text;
            }
            if (growth > log_bound) verdict += verdict.empty() ? "MISS (grows faster than log p)" : ", grows faster than log p";
            if (verdict.empty()) verdict = "ok";
            else ++misses;
        }
        std::printf("%-12s %-12s %9.1f %9.1f %9.1f %8.2f %7.0f  %s\n", info.name.c_str(), info.family.c_str(), t[0], t[1],
                    t[2], growth, target, verdict.c_str());
    }
    for (const auto& [name, message] : r.errors()) std::printf("error: %s: %s\n", name.c_str(), message.c_str());
    std::printf("\n%d of %zu techniques miss a target (auto is not timed: its decisions are its choice's).\n", misses,
                timed_techniques);
    return misses;
}

}  // namespace

int main(int argc, char** argv) {
    bool targets = false, strict = false;
    std::vector<char*> args;
    for (int i = 0; i < argc; ++i) {
        if (i > 0 && std::strcmp(argv[i], "--targets") == 0) {
            targets = true;
        } else if (i > 0 && std::strcmp(argv[i], "--strict") == 0) {
            strict = true;
        } else {
            args.push_back(argv[i]);
        }
    }
    int count = static_cast<int>(args.size());
    benchmark::Initialize(&count, args.data());
    if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;
    register_all();
    if (!targets) {
        benchmark::RunSpecifiedBenchmarks();
        benchmark::Shutdown();
        return 0;
    }
    collecting_reporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    int failures = 0;
    const int misses = print_targets(reporter, failures);
    std::fflush(stdout);
    if (failures > 0 || !reporter.errors().empty()) return 1;
    return strict && misses > 0 ? 1 : 0;
}
