// pfarm scheduling core: the technique interface, the one way the farmer asks a technique for a chunk size.
//
// A technique is a small policy object that the farmer state machine (farmer.hpp) only calls through the
// hooks below. It never sees a transport. Shared arithmetic (clipping to what remains, minimum chunk,
// task indices) lives in the farmer, once; a technique only answers "how many would you give worker w,
// with R tasks unassigned?".
#pragma once

#include "pfarm/calibration.hpp"
#include "pfarm/sample.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pfarm {

using task_count = std::int64_t;

/// A contiguous range of task indices [first, first + count).
struct chunk {
    task_count first = 0;
    task_count count = 0;
    friend bool operator==(const chunk&, const chunk&) = default;
};

/// Every parameter a technique may read. Unset means "the technique's documented default"; a technique
/// that *requires* a parameter (css needs `chunk`) throws pfarm::invalid_argument when it is unset.
/// Parameters a technique does not use are ignored (pfarm-chunks --help lists what each one reads).
/// Errors name a parameter by its field name here ("min_chunk", "static_percent", "overhead"); the tools show the
/// flag beside it ("--min-chunk", "--static-percent", "--overhead-h").
struct technique_options {
    task_count min_chunk = 1;             ///< --min-chunk: no chunk below this except the last
    std::optional<task_count> chunk;      ///< --chunk: css chunk size
    std::optional<double> factor;         ///< --factor: fss x (default 2)
    std::optional<task_count> first;      ///< --first: tss F (default floor(I/(2p)))
    std::optional<task_count> last;       ///< --last: tss L (default 1)
    std::optional<int> stages;            ///< --stages: fiss sigma (default 3)
    std::optional<double> static_percent; ///< --static-percent: alpha of the two-phase schemes (default 80)
    std::vector<double> weights;          ///< --weights: V_j, one per worker, > 0
    std::vector<double> run_queue;        ///< --run-queue: Q_j, one per worker, >= 1 (non-dedicated mode)
    std::vector<double> times;            ///< --times: per-task time of each worker (pfarm-chunks, simulator)
    std::optional<double> k;              ///< --k: pin multi's installment factor
    std::optional<calibration_mode> calibration;  ///< --calibration: multi's mode (default times-only)
    std::optional<double> overhead;       ///< --overhead-h h: scheduling overhead per chunk (fsc, awf-d, awf-e)
    std::optional<double> sigma;          ///< --sigma: std deviation of task times (fsc)
};

struct candidate_predictor;  // pfarm/prediction.hpp
struct technique_choice;     // pfarm/prediction.hpp

/// What a technique is told when scheduling starts (after calibration, if it asked for one).
struct schedule_context {
    task_count tasks = 0;      ///< I: all tasks of the loop (calibration tasks included)
    task_count remaining = 0;  ///< tasks still unassigned when scheduling starts
    int workers = 0;           ///< p
    const calibration_result* calibration = nullptr;  ///< null when the technique asked for none
    /// The driver's simulator of candidate techniques (only `auto` reads it), or null where the driver has none.
    const candidate_predictor* predictor = nullptr;
};

/// What a technique needs from the farm beyond its tasks' compute times: its calibration and the monitor
/// readings its requests must carry. Every driver reads this, never a technique's name or family.
struct technique_needs {
    calibration_mode calibration = calibration_mode::none;
    std::vector<reading> with_calibration;    ///< readings sent with a calibration task's result
    std::vector<reading> with_every_request;  ///< readings sent with every request (non-dedicated mode)
};

/// The readings a calibration mode fits to: availability and benchmark (eq. 5), and latency (eq. 6).
inline std::vector<reading> calibration_readings(calibration_mode mode) {
    switch (mode) {
    case calibration_mode::univariate: return {reading::availability, reading::benchmark};
    case calibration_mode::multivariate: return {reading::availability, reading::benchmark, reading::latency};
    default: return {};
    }
}

/// Whether a technique's chunks can be computed on every rank without a farmer (the decentralised farm,
/// docs/skeleton.md "Decentralised farm"), and how.
enum class claim_form {
    none,       ///< no: its chunks depend on measured times, calibration or readings that only a farmer collects
    by_step,    ///< its answer to the s-th request depends on s alone (asked as worker s mod p, no completions):
                ///< every rank replays the same sequence, so a claim is one fetch-and-add on the step counter
    by_worker,  ///< next(w, R) is a pure function of the worker and the tasks unassigned (no state, nothing
                ///< measured): a claim is a compare-and-swap of the next task index
};

/// The interface every technique implements. Hooks are called by the farmer only:
///   needs_calibration() once, start() once, then next()/completed() in any interleaving. A farmer over a growing
///   pool (a hierarchical master, farmer.hpp "Pool") calls start() again when next() answers 0 with tasks in the
///   pool: start() begins a new round over `remaining` (a single-round technique forgets who got its share).
class technique {
public:
    virtual ~technique() = default;

    /// The registry name ("gss", "multi", ...).
    virtual std::string name() const = 0;

    /// Whether the farmer must run one calibration task per worker (and wait for all) before start().
    virtual calibration_mode needs_calibration() const { return calibration_mode::none; }

    /// What the farm must provide: by default the calibration above and the readings it fits to. A technique
    /// without --weights calibrates (times-only) to measure its workers' powers, under every driver.
    virtual technique_needs needs() const {
        const calibration_mode mode = needs_calibration();
        return {mode, calibration_readings(mode), {}};
    }

    /// Whether its chunk sizes follow the times completed() reports and nothing else measured (af, awf and its
    /// variants). Under a calibration span (farmer.hpp "Calibration span") the farmer calibrates such a technique
    /// too, times-only, and reports each worker's calibration chunks to completed() right after start(), so that
    /// its first chunks already follow the workers' measured speeds instead of being equal.
    virtual bool learns_from_times() const { return false; }

    /// Scheduling starts: `remaining` tasks are left to hand out.
    virtual void start(const schedule_context& context) = 0;

    /// The size worker `worker` should get now, with `remaining` (> 0) tasks unassigned. The farmer clips
    /// the answer to [max(1, min_chunk), remaining]; answering 0 means "nothing more for this worker": it is
    /// told to stop (single-round techniques do this once they have handed out their round); with reclaim, while
    /// tasks are unassigned, it takes a piece of them instead (farmer.hpp "Reclaim").
    virtual task_count next(int worker, task_count remaining) = 0;

    /// Worker `worker` finished the tasks `done` in `seconds` of compute time. `done` is where they lay in the loop
    /// (auto fits the loop's cost profile to it), or has first = -1 when they were not one chunk (a worker's
    /// calibration tasks reported together after a calibration span).
    virtual void completed(int worker, chunk done, double seconds) { (void)worker, (void)done, (void)seconds; }

    /// Worker `worker`'s run-queue length changed to `queue` (>= 1): non-dedicated mode of
    /// Chronopoulos, Penmatsa, Yu & Yu, "Scalable loop self-scheduling schemes for heterogeneous clusters", section 3.
    virtual void run_queue_changed(int worker, double queue) { (void)worker, (void)queue; }

    /// How the decentralised farm may claim this technique's chunks (claim_form). The default says it cannot:
    /// a technique declares the form its next() already has; it is called after construction, before start().
    virtual claim_form decentralised() const { return claim_form::none; }

    /// The size next() always answers, whoever asks and whatever remains (ss: 1, css: k), or 0 when it varies.
    /// The decentralised farm then finds a step's chunk by arithmetic (step_schedule) instead of replaying the
    /// steps before it: O(1) per claim, not O(ranks).
    virtual task_count constant_chunk() const { return 0; }

    /// The installment factor k, for techniques that have one.
    virtual std::optional<double> installment_factor() const { return std::nullopt; }

    /// The techniques it chose to go on with, for a technique that chooses (`auto`), in order; null otherwise.
    virtual const std::vector<technique_choice>* choices() const { return nullptr; }
};

}  // namespace pfarm
