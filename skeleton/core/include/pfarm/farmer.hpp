// pfarm scheduling core: the farmer, the transport-free decision machine of a farm: what a worker that asks gets.
//
// It knows the tasks left, the workers, the chunks each holds and their times, and answers "worker w asks: what
// does it get?". The MPI farmers and the simulator drive the same object, through farmer_session. Protocol for a
// driver:
//
//   farmer f(tasks, workers, make_technique(...));
//   on a request from w:    auto d = f.request(w);   // assign (a chunk), wait, or stop
//   on w's chunk finished:  f.complete(w, seconds);  // compute time of its outstanding chunk
//   after each complete():  re-ask the workers that got `wait`, in increasing index, while
//                           f.calibrating() is false (the calibration barrier has passed)
//   the loop is over when   f.done()
//
// A worker holds at most `max_outstanding` chunks (1, or 2 with prefetch; up to max_held for a hierarchical master:
// master_session.hpp "Refill rule"); complete() completes its oldest. Calibration chunks go one at a time. Reclaim
// and stragglers take back or re-execute one of two chunks at most: with them the limit is 1 or 2.
//
// Calibration span (docs/calibration.md "Calibration span"): a technique that calibrates gets one calibration task
// per worker, and with a span of S > 0 seconds each worker keeps calibrating until the compute time of its
// calibration chunks adds up to S: its next calibration chunk is twice its last, or fewer when its pace so far
// says fewer reach S, cut so that all calibration chunks stay within max(p, floor(I / 2)) tasks, one kept for each
// of the p workers yet to start; when none is left it stops. Its time: seconds per task over its calibration
// chunks (with S = 0: its one task's time, as without a span). A worker that has reached the span while others have
// not does not wait idle at the barrier: it gets chunks that take about a quarter of the span at its pace (the slower
// of its latest calibration chunk's and its whole calibration's), handed as calibration chunks (no prefetch, no
// reclaim) within the same budget; they are work, not measurements: their times are not the calibration's, and those
// still in flight when the barrier passes are reported to the technique as any chunk. (A worker's last chunk before
// the span may cost far more than its pace so far says, a Mandelbrot's middle columns after its edge columns, and the
// others would wait for it.) A task far shorter than a CPU quota's period runs at full speed inside the quota's
// slice, so only a span of a few periods sees the quota. With S > 0 a technique
// that learns from times (technique::learns_from_times: af, awf...) is calibrated too, times-only, and told each
// worker's calibration chunks through completed() once it starts. Pool mode (a hierarchical master) takes no span.
//
// Four optional rules, each off unless asked for:
// - Reclaim (docs/skeleton.md "Reclaim"): once every task is handed out, a worker that asks with nothing in hand
//   gets `reclaim` naming a victim expected to have unstarted tasks, or `wait` while the only victims are being
//   asked already. Before that, in the end game, a worker gets `wait` (`later` while it holds a chunk) when the
//   workers holding chunks would finish every unassigned task before it would finish one chunk (outrun()); the
//   driver asks it again after any chunk comes in. A worker the technique answers 0 (past its share) while tasks
//   are unassigned is not stopped: it takes a piece of them (piece_of()), as it would take unstarted ones back.
//   An idle thief asks for every worker idle by the victim's answer (decision::thieves), and the answer is cut
//   into a piece for each, the others handed whole before new tasks (again_for()); before the pool runs dry, a
//   worker that would end the loop last with unstarted tasks is asked for them on behalf of all (far_behind()).
//   Workers' speeds are judged apart from their tasks' costs by the loop's cost profile (cost_profile.hpp). The
//   victim's answer (victim_gives()) goes to released(), which gives the thief that range,
//   another reclaim, or stop; a thief still busy (prefetch) gets `later` when no victim will outlast it. A started
//   task is never given back, so every task runs exactly once; each reclaim moves a task, ends the asking of that
//   worker until its next chunk, or answers `later`, so the loop ends.
// - Pool (a hierarchical master; docs/hierarchical.md "The rules, once, in the core"): tasks arrive as ranges
//   (add_tasks(), close_pool()) and `tasks` is only the loop size the technique starts with. A chunk is cut at the
//   end of the pool's first range; a request that finds the pool empty while it is open gets `wait` (`later` when
//   the worker holds a chunk, whose results the master's refill may wait for); a technique that answered 0 starts a
//   new round over the pool; reclaim only once the pool is closed and empty; done() only once it is closed.
// - Stragglers (set_stragglers(); docs/reliability.md "Stragglers and hung nodes"): a chunk that has taken `factor`
//   times what its worker's seconds per task predict, plus `slack`, is re-executed in pieces by the workers that ask
//   with nothing in hand; the first results win, task by task, and the losers are told to drop theirs (complete()'s
//   `cancel`, then drop()). A worker that asks while some chunk may still become overdue gets `wait`: the driver
//   asks it again after straggler_deadline() or after any completion.
// - Retry (set_retry(); docs/reliability.md "Task errors"): a task that failed (complete()'s `failed`) is not
//   delivered nor counted done; it waits in a queue and is handed out again, alone, before any new chunk, to the
//   first worker that asks other than the one it last failed on (that one takes it only when every other worker has
//   stopped). Once every task is handed out, a worker with nothing in hand waits (rather than stops) while a chunk is
//   still in flight elsewhere, whose tasks may fail and need another worker; one that asks ahead gets `later`.
// - Lost workers (set_loss_tolerant(), lose(); docs/reliability.md "A lost worker"): a worker that is gone (its rank
//   died) is stopped, and the tasks of the chunks it held go back: handed out again in pieces, before any new chunk,
//   to the workers that ask (a chunk of it being re-executed goes on without it; a piece of a re-execution it held
//   is handed out again by that re-execution). A piece is a share of what is left among the workers not stopped.
//   No worker is stopped while tasks may still come back: once every task is handed out, a worker with nothing in
//   hand waits (as with retry) while a chunk is in flight elsewhere, whose worker may be lost too; a worker whose
//   share the technique has handed out (it answers 0: static, dealdyn-*, the shares of n-*) waits while tasks are
//   unassigned, and once a worker has been lost it takes a piece of them instead (the technique may keep a share for
//   the lost worker that nobody else would take). A worker lost before the calibration barrier passes leaves the
//   calibration: the calibration is computed over the living workers, and the lost one is given the slowest time
//   measured (fitted), so that a technique that plans per worker keeps it the least. In pool mode (a hierarchical
//   master's group) the tasks that went back are handed out before the pool's (the master's ledger counts their
//   results as they come from whoever computes them), a calibration task that went back is another worker's
//   calibration task, and a worker left with nothing to calibrate on once the pool is closed leaves the barrier and
//   waits (rather than stops) while tasks may still come back.
#pragma once

#include "pfarm/cost_profile.hpp"
#include "pfarm/technique.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pfarm {

/// The farmer's answer to a request.
struct decision {
    enum class kind { assign, wait, stop, reclaim, later };
    kind what = kind::stop;
    chunk work;                ///< valid when what == assign
    bool calibration = false;  ///< the chunk is this worker's calibration task
    int victim = -1;           ///< reclaim: the worker to ask for tasks back
    double share = 0.0;        ///< reclaim: the fraction (0, 1) of its unstarted tasks it should give back
    double thief_seconds = 0.0;  ///< reclaim: the thief's expected seconds per task on the victim's chunk (0: unknown)
    double thief_busy = 0.0;     ///< reclaim: seconds of work the thief still holds (prefetch; 0: it is idle)
    int thieves = 1;             ///< reclaim: the idle workers the share is for (the thief and those idle with it)
};

/// The range a victim gives back for reclaim `d`: floor(u x share) of its u unstarted tasks, from the unstarted
/// end of the chunk it holds with more of them. The share is decided where the best estimate is, at the
/// victim: from its own seconds per task in the chunk it is computing (`victim_seconds`, 0 when it has
/// finished no task of it) and the thief's on the same tasks (`d.thief_seconds`: the farmer's estimate from the
/// loop's cost profile, cost_profile.hpp), t_v / (t_v + t_thief) kept within [1/3, 2/3],
/// so that both finish together; for n = `d.thieves` idle workers together, n t_v / (n t_v + t_thief) within
/// [1/3, 1 - 1/(3n)]; without both times, the farmer's `d.share`. A thief still busy for
/// `d.thief_busy` seconds gets that share of what the victim has beyond that. `current` is the chunk it computes, `next_task` the
/// first task of it not started, `prefetched` (count 0: none) a chunk it holds and has not started. It keeps
/// at least the first task of either (no chunk in flight is left empty: released() takes only an end), even of a
/// current chunk none of whose tasks has started. Count 0: nothing to give.
chunk victim_gives(const decision& d, double victim_seconds, chunk current, task_count next_task, chunk prefetched = {});

/// Straggler handling (see "Stragglers" above; docs/reliability.md): off while factor is 0.
struct straggler_rule {
    double factor = 0.0;  ///< overdue past factor x its predicted time (> 1 when on)
    double slack = 0.0;   ///< plus this many seconds (>= 0)
};

/// What a task that throws leads to (farm_options::protocol.on_task_error; docs/reliability.md "Task errors").
struct task_error_rule {
    enum class kind {
        stop,   ///< the farm stops on every rank, naming the task (the default)
        retry,  ///< the task runs again, on another worker where there is one, up to `attempts` runs in all
        skip,   ///< the farm goes on; the task is listed as failed and its outputs are the fill
    };
    kind what = kind::stop;
    int attempts = 3;  ///< retry: runs of a task in all, first included (2..max_attempts)
    static constexpr int max_attempts = 1000;
};

/// "stop", "skip", "retry" (3 attempts) or "retry=N" (N in 2..1000 attempts in all); invalid_argument naming
/// `argument` otherwise.
task_error_rule parse_task_error_rule(const std::string& text, const std::string& argument = "on_task_error");
/// The rule as parse_task_error_rule reads it ("retry=3").
std::string to_string(const task_error_rule& rule);
/// invalid_argument naming `argument` when the rule's attempts are out of range (retry: 2..max_attempts).
void check_task_error_rule(const task_error_rule& rule, const std::string& argument = "on_task_error");

/// When a worker is presumed lost (farm_options::protocol.on_worker_loss; docs/reliability.md "A lost worker"): no
/// message from it past `factor` times the time its chunk in flight should take at its pace (seconds per task so far;
/// the others' before it has one), plus `slack` seconds. Off: a worker is never presumed lost (a runtime that ends
/// the whole job when a rank dies).
struct worker_loss_rule {
    enum class kind {
        off,    ///< nobody is presumed lost
        stop,   ///< the farm stops on every living rank, naming the lost worker
        go_on,  ///< its tasks go to the others, and the farm ends with every result ("continue")
    };
    kind what = kind::off;
    double factor = 4.0;  ///< > 1
    double slack = 5.0;   ///< seconds, > 0
};

/// "off", "stop", "continue" or "continue=S" / "stop=S" (S: the slack in seconds, > 0); invalid_argument naming
/// `argument` otherwise.
worker_loss_rule parse_worker_loss_rule(const std::string& text, const std::string& argument = "on_worker_loss");
/// The rule as parse_worker_loss_rule reads it ("continue=5").
std::string to_string(const worker_loss_rule& rule);
/// invalid_argument naming `argument` when the rule is out of range (factor > 1, slack > 0, both finite).
void check_worker_loss_rule(const worker_loss_rule& rule, const std::string& argument = "on_worker_loss");
/// The seconds per task the loss rule judges a worker by: its own (`busy` seconds over `done` tasks) once it has
/// finished a task; else the mean over every worker (`all_busy` over `all_done`); else `learned` (a time a calibration
/// of an earlier farm gives it); else, before any task has been timed, the slack.
double loss_pace(double busy, task_count done, double all_busy, task_count all_done, std::optional<double> learned,
                 double slack);
/// When a worker silent since `since`, holding `held` tasks at `pace` seconds each, is presumed lost under `rule`:
/// since + factor x held x pace + slack (holding nothing but owing a message: since + slack). The one deadline of the
/// loss rule: the farmer's (farmer::silent_past) and the decentralised farm's watch (pfarm/claim_watch.hpp).
double loss_deadline(const worker_loss_rule& rule, double since, task_count held, double pace);
/// The piece of `count` tasks that went back (a lost worker's) handed to the next worker that takes some: a share
/// among the `workers` left, at least `min_chunk` (the farmer's and the decentralised farm's watch).
task_count returned_piece(task_count count, int workers, task_count min_chunk);

/// What complete() decided besides counting the chunk done.
struct completion {
    std::vector<chunk> deliver;               ///< the ranges of the chunk whose results to keep (all of it, but for a re-executed one)
    std::vector<std::pair<int, chunk>> cancel;  ///< workers to tell to drop a chunk they hold, computed elsewhere
};

/// What released() returns: the thief and its answer.
struct release_outcome {
    int thief = -1;
    decision answer;
};

class farmer {
public:
    /// The most chunks a worker may hold (max_outstanding).
    static constexpr int max_held = 8;

    /// `tasks` >= 1 (else invalid_argument "tasks"), `workers` >= 1 (else invalid_argument "workers"),
    /// 1 <= max_outstanding <= max_held, at most 2 with reclaim (else invalid_argument "max_outstanding").
    /// `reclaim` turns work take-back on. `learned`: a calibration kept from an
    /// earlier farm of the same loop (pfarm/schedule.hpp), one fitness per worker: a technique that calibrates
    /// starts from it at once, with no calibration tasks (null, or another worker count: it calibrates).
    /// `calibration_span`: the compute time each worker's calibration must add up to (see "Calibration span"
    /// above; seconds, finite, >= 0, else invalid_argument "calibration_span"); ignored in pool mode.
    /// `predictor`: the driver's simulator of candidate techniques (pfarm/prediction.hpp), handed to every start() of
    /// the technique (only `auto` reads it); it must outlive the farmer. Null: the driver has none.
    farmer(task_count tasks, int workers, std::unique_ptr<technique> policy, task_count min_chunk = 1,
           int max_outstanding = 1, bool reclaim = false, bool pool = false,
           const calibration_result* learned = nullptr, double calibration_span = 0.0,
           const candidate_predictor* predictor = nullptr);

    /// Pool mode: the range `range` (count >= 1) joins the pool (appended; merged with the last range when it
    /// follows it). Throws internal_error without pool mode or once the pool is closed.
    void add_tasks(chunk range);
    /// Pool mode: nothing more will be added.
    void close_pool();
    bool pooled() const noexcept { return pool_; }
    bool pool_closed() const noexcept { return closed_; }
    /// Pool mode: the ranges not handed out yet, in hand-out order.
    const std::deque<chunk>& pool() const noexcept { return pool_ranges_; }

    /// Worker `worker` asks for work (holding fewer than max_outstanding chunks). `now` is the
    /// driver's clock (seconds, any origin, non-decreasing); only reclaim reads it, to estimate which
    /// worker has the most work left. `completing`: its oldest chunk's results are in hand, to be complete()d
    /// right after (farmer_session's reply first), so that chunk does not count against the limit.
    decision request(int worker, double now = 0.0, bool completing = false);

    /// The chunk that request(worker, now, true) will assign when it is known without asking the technique: the
    /// technique's chunk size is constant (technique::constant_chunk: whoever asks, whatever remains), scheduling
    /// has started (past calibration, not a pool), tasks are left and the worker was not stopped. Count 0 otherwise.
    /// Nothing changes: the request itself follows (farmer_session's reply first sends this chunk before it).
    chunk upcoming(int worker) const noexcept {
        const auto& w = workers_[static_cast<std::size_t>(worker)];
        const task_count left = remaining();
        if (constant_ == 0 || phase_ == phase::calibrating || pool_ || w.stopped || left <= 0) return {};
        return {next_index_, std::min(left, constant_)};
    }

    /// The victim of a reclaim gave back the tasks `given`: the end of a chunk it holds, not all of it (count
    /// 0: it had none unstarted, or its chunk had already ended). Returns the waiting thief and its answer.
    release_outcome released(int victim, chunk given, double now = 0.0);

    /// What a reclaim must win to be worth asking: the driver's estimate of one request's round trip
    /// (seconds, >= 0; default 0). A victim is asked only when share x its expected remaining time exceeds
    /// twice this.
    void set_request_cost(double seconds);

    /// Reclaim: the bins of the loop's cost profile (cost_profile.hpp; default cost_profile::default_bins), >= 1, else
    /// invalid_argument "profile_bins"; before the first completion (the profile starts empty). Fewer bins make each
    /// fit cheaper (O(bins cubed)), for `auto`'s predictions (docs/techniques/auto.md "Its cost").
    void set_profile_bins(int bins);

    /// Worker `worker`'s outstanding chunk finished after `seconds` (>= 0, finite) of compute time, at `finished`
    /// (the driver's clock; read by the straggler rule only). For a calibration task, `sample` carries the worker's
    /// monitor readings (statistical calibration needs them). Retry: `failed` lists tasks of the chunk that failed
    /// (see "Retry"); they are left out of `deliver` and queued to run again (those delivered already elsewhere, a
    /// re-executed chunk's, are not). The answer stays valid until the next call.
    const completion& complete(int worker, double seconds, const resource_sample* sample = nullptr, double finished = 0.0,
                               std::span<const task_count> failed = {});

    /// Retry (see "Retry"): failed tasks run again. Off by default; set before the first request.
    void set_retry(bool on) { retry_ = on; }
    bool retrying() const noexcept { return retry_; }
    /// Retry: the failed runs of task `task` so far (0: none).
    int failures_of(task_count task) const;
    /// Retry: tasks waiting to run again, and those running again now.
    std::size_t retries_waiting() const noexcept { return retry_queue_.size(); }
    task_count retried_tasks() const noexcept { return retried_; }  ///< re-runs handed out so far

    /// Straggler handling: the rule (factor 0: off; else factor > 1, slack >= 0, finite; invalid_argument "stragglers").
    void set_stragglers(const straggler_rule& rule);
    bool stragglers() const noexcept { return straggle_.factor > 0.0; }
    /// When the next chunk in flight that could be re-executed becomes overdue after `after` (infinity: none).
    double straggler_deadline(double after) const;
    /// Whether worker `worker`'s oldest chunk was cancelled (re-executed elsewhere) and not dropped yet.
    bool cancelled(int worker) const { return workers_.at(static_cast<std::size_t>(worker)).cancelled; }
    /// Worker `worker` no longer holds its oldest chunk, cancelled: it dropped it, or its results were discarded, at
    /// `now` (the driver's clock; read by the loss rule only).
    void drop(int worker, double now = 0.0);
    /// Chunks re-executed so far, and tasks handed out again for them.
    task_count reruns() const noexcept { return reruns_started_; }
    task_count rerun_tasks() const noexcept { return rerun_tasks_; }

    /// Lost workers (see "Lost workers"): a worker with nothing in hand waits while a chunk is in flight elsewhere.
    /// Off by default; set before the first request. In pool mode too (a hierarchical master: a worker of its group).
    void set_loss_tolerant(bool on);
    /// Worker `worker` is gone at `now` (see "Lost workers"): it is stopped and asked nothing more, and the tasks it
    /// held go back. Returns the answer owed to a thief that waited for its answer to a reclaim (thief -1: none).
    /// While the farm calibrates it leaves the calibration (the barrier no longer waits for it).
    release_outcome lose(int worker, double now = 0.0);
    /// Workers `lost`, gone together at `now` (past their deadlines at one look): each is lost as by lose() before
    /// any thief owed an answer is answered, so that no answer names one of them (a victim, say). Returns the
    /// answers owed, to the thieves not among them.
    std::vector<release_outcome> lose(std::span<const int> lost, double now);
    bool lost(int worker) const { return workers_.at(static_cast<std::size_t>(worker)).lost; }
    bool loss_tolerant() const noexcept { return loss_tolerant_; }
    /// When worker `worker` is past the deadline of `rule`: holding a chunk, `factor` x the chunk's tasks x its
    /// seconds per task (its own; else the others' mean; else the time a calibration learned by an earlier farm gives
    /// it; else, before any task has been timed, the slack: a task is taken to last at most that) + the slack, from
    /// when the chunk was handed out, its last one ended or it last said it lives (heard()). Holding none, while it owes a message (its answer to a
    /// reclaim, or the request a `later` asked for; both due at once): the slack from when it was asked for it or
    /// came to hold nothing, whichever is later. Infinity: it holds nothing and owes nothing, is lost already, or is a
    /// thief waiting for its victim's answer (it waits for the farmer; its chunk's deadline runs again from the answer).
    double silent_past(int worker, const worker_loss_rule& rule) const;
    /// Worker `worker` said at `now` that it lives and still computes what it holds (a keep-alive: a hierarchical
    /// master whose group takes longer than its chunk's deadline, master_session.hpp): the loss rule's deadline of
    /// its oldest chunk runs again from then.
    void heard(int worker, double now) { workers_.at(static_cast<std::size_t>(worker)).heard_at = now; }
    /// Tasks that went back from lost workers so far, and those waiting to be handed out again.
    task_count returned_tasks() const noexcept { return returned_tasks_; }
    bool returns_waiting() const noexcept { return !returned_.empty(); }

    /// Tells the technique that worker `worker`'s run queue is now `queue` (>= 1).
    void run_queue_changed(int worker, double queue);

    bool done() const noexcept { return completed_ == tasks_ && (!pool_ || closed_); }
    bool calibrating() const noexcept { return phase_ == phase::calibrating; }
    /// Tasks of the loop (pool mode: received so far) and those not handed out yet.
    task_count tasks() const noexcept { return tasks_; }
    task_count remaining() const noexcept { return tasks_ - next_index_; }
    task_count completed_tasks() const noexcept { return completed_; }
    int workers() const noexcept { return static_cast<int>(workers_.size()); }
    bool reclaiming() const noexcept { return reclaim_; }
    /// Reclaims answered with at least one task, and tasks moved by them.
    task_count reclaims() const noexcept { return reclaims_; }
    task_count reclaimed_tasks() const noexcept { return reclaimed_tasks_; }
    /// How many chunks worker `worker` holds (0 to max_outstanding), and the i-th of them, oldest first (shrunk by
    /// reclaims).
    int held(int worker) const { return workers_.at(static_cast<std::size_t>(worker)).held; }
    chunk in_flight(int worker, int i) const { return workers_.at(static_cast<std::size_t>(worker)).in_flight[i]; }
    /// Whether worker `worker` is being asked to give tasks back (its answer is due).
    bool asked(int worker) const { return workers_.at(static_cast<std::size_t>(worker)).thief >= 0; }
    /// held(worker) == 1 && !asked(worker) without their bounds checks (`worker` must be valid): farmer_session's
    /// reply first asks it on every request.
    bool holds_one_unasked(int worker) const noexcept {
        const auto& w = workers_[static_cast<std::size_t>(worker)];
        return w.held == 1 && w.thief < 0;
    }
    /// Workers waiting for a victim's answer (a driver that aborts must answer them too).
    std::vector<int> thieves() const;
    const technique& policy() const noexcept { return *policy_; }
    /// The calibration span in force (0 in pool mode).
    double calibration_span() const noexcept { return span_; }
    /// Tasks worker `worker` computed as calibration (0 before its first calibration chunk completes).
    task_count calibration_tasks(int worker) const { return workers_.at(static_cast<std::size_t>(worker)).calibration_tasks; }
    /// The calibration result, or null when the farm does not calibrate (or before the barrier). Under a
    /// calibration span, a technique that learns from times has one too (times-only).
    const calibration_result* calibration() const noexcept { return calibration_ ? &*calibration_ : nullptr; }

private:
    enum class phase { calibrating, scheduling };
    struct worker_state {
        chunk in_flight[max_held];           ///< the chunks it holds, oldest first (shrunk by reclaims)
        int held = 0;                        ///< how many of them are in flight
        bool calibrated = false;             ///< its calibration is done
        task_count calibration_tasks = 0;    ///< tasks of its completed calibration chunks
        task_count calibration_last = 0;     ///< the size of its latest calibration chunk
        double calibration_last_seconds = 0.0;  ///< its compute time
        double calibration_seconds = 0.0;    ///< their compute time
        bool stopped = false;
        bool lost = false;                   ///< lose(): gone, its tasks handed out again
        bool drained = false;                ///< lost workers: the technique answered it 0 (its share is handed out)
        // Reclaim bookkeeping: what the farmer knows of its chunks and its speed.
        double assigned_at[max_held] = {};   ///< when the chunks in flight were handed out (the driver's clock)
        std::uint64_t version = 0;           ///< bumped whenever the chunks it holds change
        bool reclaimable = false;            ///< may still be asked to give tasks back
        int thief = -1;                      ///< a reclaim is pending: the worker waiting for its answer
        double asked_at = 0.0;               ///< when the pending reclaim was sent (the driver's clock)
        bool asks_again = false;             ///< answered `later`, and has not asked since
        double later_at = 0.0;               ///< when it was answered `later`
        double idle_at = 0.0;                ///< when it came to hold no chunk (its last chunk's end, or its drop)
        std::uint64_t asked_version = 0;     ///< its version when the pending reclaim was sent
        bool asked_for_busy = false;         ///< the pending reclaim's thief still held chunks (thief_busy > 0)
        int asked_pieces = 1;                ///< the pieces the pending reclaim's answer is cut into (ask())
        bool waiting_for_victim = false;     ///< this worker is a thief waiting for an answer
        double answered_at = 0.0;            ///< when its last wait for a victim's answer ended (the loss rule reads it)
        double heard_at = 0.0;               ///< its last keep-alive (heard(); the loss rule reads it)
        double busy_seconds = 0.0;           ///< compute time of its completed chunks
        task_count done_tasks = 0;           ///< tasks of its completed chunks
        // Stragglers: what its oldest chunk is to a re-execution.
        double free_at = 0.0;                ///< when its last chunk ended (a chunk ahead starts then)
        bool cancelled = false;              ///< its oldest chunk was cancelled; drop() is to come
        int rerun_of = -1;                   ///< its oldest chunk is being re-executed: the rerun's index
        int piece_of = -1;                   ///< its oldest chunk is a piece of that rerun
    };
    /// A chunk being re-executed.
    struct rerun {
        int id = 0;                          ///< what workers' rerun_of and piece_of hold
        int victim = -1;
        chunk work;                          ///< the victim's chunk
        task_count next = 0;                 ///< its first task not handed out again
        task_count piece = 1;                ///< the size of a piece
        task_count done = 0;                 ///< tasks of its pieces completed
        std::vector<std::pair<int, chunk>> out;  ///< the pieces in flight: holder, piece
        std::vector<chunk> finished;         ///< the pieces completed
        std::vector<chunk> again;            ///< pieces whose holder was lost, to hand out again first
    };

    void finish_calibration();
    /// Worker `worker` has calibrated: its time per task is recorded, and the barrier may pass.
    void end_calibration_of(int worker, worker_state& w);
    /// The size of worker `worker`'s next calibration chunk (see "Calibration span"), at least 1.
    task_count next_calibration_chunk(const worker_state& w) const;
    /// A request while the farm calibrates: its answer, or nullopt when the calibration has just ended and the request
    /// is answered as any other.
    std::optional<decision> calibration_request(int worker, worker_state& w, double now);
    /// A completed chunk while the farm calibrates: whether it was a measurement of the calibration (taken into the
    /// worker's time).
    bool calibration_completed(int worker, worker_state& w, task_count count, double seconds,
                               const resource_sample* sample);
    /// Under a span, a chunk for a worker that has reached it while others have not (see "Calibration span"), or
    /// `wait` when the calibration budget is spent.
    decision chunk_while_others_calibrate(int worker, const worker_state& w, double now);
    /// The next `count` (<= remaining()) unassigned tasks, from the front of the range, to `worker` (as a
    /// calibration chunk when `calibration`). Not in pool mode, whose tasks come from take_from_pool().
    decision hand_next(int worker, task_count count, bool calibration, double now);
    void check_worker(int worker) const {
        if (worker < 0 || worker >= static_cast<int>(workers_.size())) [[unlikely]] bad_worker(worker);
    }
    [[noreturn]] void bad_worker(int worker) const;
    decision assign(int worker, task_count first, task_count count, bool calibration_task, double now);
    static void pop_oldest(worker_state& w);  ///< its oldest chunk in flight is gone (completed or dropped)
    chunk take_from_pool(task_count count);  ///< pool mode: the next `count` tasks, cut at the first range's end
    task_count loop_size() const noexcept { return pool_ ? expected_ : tasks_; }
    decision take_back(int worker, double now);
    decision stop_worker(int worker);
    /// `later` for `worker`: it asks again once it holds nothing (a request the loss rule waits for).
    decision later(int worker, double now);
    /// The technique stopped every worker with tasks unassigned: internal_error naming it.
    [[noreturn]] void stranded() const;
    double seconds_per_task(int worker) const;
    /// Reclaim: the seconds per task `worker` is expected to take over `c`, from the loop's cost profile once the
    /// worker has completed a chunk, else seconds_per_task().
    double pace(int worker, chunk c) const;
    /// Reclaim: the expected seconds of the chunks `worker` holds, at its paces; `largest` becomes the largest of
    /// them (left as it is when none is larger).
    double held_seconds(int worker, chunk& largest) const;
    /// Reclaim's end game: whether the other workers would finish every unassigned task before `worker` would finish
    /// the least chunk (see "Reclaim"); then it gets nothing now.
    bool outrun(int worker, double now) const;
    /// When the workers other than `worker` that hold a chunk would finish every unassigned task, after what they
    /// hold, at `seconds_per(v, c)`: their fluid finish plus the least time of one task (infinity: none holds one).
    template <class SecondsPer>
    double others_finish(int worker, double now, SecondsPer seconds_per) const;
    /// Reclaim before the pool runs dry: the next worker in turn if it would end the loop last with unstarted tasks
    /// (see far_behind() in farmer.cpp), else -1.
    int far_behind(int thief, double now);
    /// `thief` asks `victim` to give back for all the other workers (far_behind()).
    decision ask_for_all(int thief, int victim, double now);
    /// `thief` asks `victim` for `share` of its unstarted tasks (decision::reclaim's fields); its answer is cut into
    /// `pieces`, the first the thief's, the others for the next that ask (shares_).
    decision ask(int thief, int victim, double share, double thief_seconds, double busy, int thieves, int pieces,
                 double now);
    /// Stragglers: when worker v's oldest chunk becomes overdue (infinity: it may not be re-executed, or there
    /// is no time to judge by).
    double overdue_at(int v) const;
    decision rerun_or_stop(int worker, double now);  ///< a worker with nothing in hand, nothing left to hand out
    decision hand_piece(int worker, rerun& r, double now);
    rerun& rerun_by_id(int id);
    void end_rerun(int id);
    /// Retry: a queued task for `worker` (one it did not fail last, unless every other worker has stopped), handed
    /// out; stop-like outcome otherwise (count 0).
    decision retry_for(int worker, double now);
    /// Once every task is handed out, a worker with nothing in hand and nothing to retry: stop, or (retry) wait while a
    /// chunk is in flight elsewhere.
    decision idle_end(int worker);
    /// Lost workers: the next piece of the ranges that went back, for `worker`.
    decision hand_returned(int worker, double now);
    /// A piece of `count` tasks, a share of them among the workers not stopped (at least min_chunk): what a worker
    /// takes of a lost worker's tasks, of a chunk re-executed, or (reclaim, lost workers) of the unassigned tasks a
    /// technique keeps for another worker.
    task_count piece_of(task_count count) const;
    /// Reclaim: the thieves a share is for: `thief` and the workers besides it and `victim` (-1: none) that hold
    /// nothing and wait, or are expected to end what they hold by `by` (>= `now`).
    int thieves_by(int thief, int victim, double now, double by) const;
    /// Work handed out again before any new chunk: a failed task to retry, else a lost worker's tasks; stop-like
    /// (count 0) when there is none for `worker`.
    decision again_for(int worker, double now);
    /// A thief left with nothing in hand (its victim gave nothing, or was lost): what request() would answer it once
    /// every task is handed out (work handed out again first, then take_back).
    decision idle_thief(int thief, double now);
    /// Lost workers: the technique answered 0 for `worker` while tasks are unassigned (see "Lost workers").
    decision past_share(int worker, double now);
    /// Lost workers: lose()'s bookkeeping for `worker`; returns the thief it owes an answer to (-1: none), which is
    /// no longer waiting.
    int forsake(int worker, double now);
    /// The answer owed to thief `thief` whose victim was lost: `later` while it holds chunks, else what it takes.
    decision owed_answer(int thief, double now);
    /// Lost workers: the seconds per task silent_past() reads for `worker`.
    double loss_pace(int worker, double slack) const;
    /// Retry: takes `failed` out of completion_.deliver and queues them; returns how many were queued.
    task_count retry_failed(int worker, std::span<const task_count> failed);

    task_count tasks_;
    task_count min_chunk_;
    std::unique_ptr<technique> policy_;
    const candidate_predictor* predictor_ = nullptr;
    task_count constant_ = 0;  ///< the technique's constant chunk size clipped to min_chunk (upcoming()), else 0
    std::vector<worker_state> workers_;
    std::vector<double> calibration_times_;
    std::vector<resource_sample> calibration_samples_;
    std::optional<calibration_result> calibration_;
    phase phase_ = phase::scheduling;
    double span_ = 0.0;           ///< the calibration span (seconds; 0: one task per worker)
    calibration_mode calibration_mode_ = calibration_mode::none;  ///< the mode it calibrates in
    task_count calibration_cap_ = 1;  ///< the most calibration tasks of all workers together under a span
    task_count next_index_ = 0;  ///< first unassigned task (pool mode: tasks handed out)
    task_count completed_ = 0;   ///< tasks whose chunk has completed
    int calibration_pending_ = 0;
    int active_ = 0;             ///< workers not stopped
    int next_looked_at_ = 0;     ///< reclaim: the worker far_behind() looks at next
    int max_outstanding_ = 1;
    bool reclaim_ = false;
    double request_cost_ = 0.0;
    cost_profile profile_;  ///< reclaim: what a worker's tasks cost, to judge its speed by (cost_profile.hpp)
    /// Reclaim: the least seconds per task of any completed chunk (outrun()'s cheap bound).
    double fastest_ = std::numeric_limits<double>::infinity();
    /// Times below this are taken as this: a timer may return 0 for a very short task, and every technique that learns
    /// from times divides by them. 1 ns is below any real timer's resolution.
    static constexpr double min_seconds = 1e-9;
    task_count reclaims_ = 0;
    task_count reclaimed_tasks_ = 0;
    bool pool_ = false, closed_ = false;  ///< pool mode, and nothing more will be added
    bool started_ = false;                ///< the technique has been started (pool mode: at the first chunk from the pool)
    task_count expected_ = 0;             ///< pool mode: the loop size the technique is started with
    std::deque<chunk> pool_ranges_;       ///< pool mode: the ranges not handed out
    straggler_rule straggle_;
    std::vector<rerun> reruns_;           ///< the chunks being re-executed
    task_count reruns_started_ = 0, rerun_tasks_ = 0;
    int next_rerun_id_ = 0;
    completion completion_;               ///< complete()'s answer, reused
    // Retry.
    struct failed_run {
        task_count task = 0;
        int failures = 0;   ///< its failed runs so far
        int last = -1;      ///< the worker of the last one
    };
    bool retry_ = false;
    std::deque<failed_run> retry_queue_;  ///< tasks to run again, in the order they failed
    std::unordered_map<task_count, int> failures_;  ///< failed runs of every task that failed at least once
    task_count retried_ = 0;
    // Lost workers.
    bool loss_tolerant_ = false;
    std::deque<chunk> returned_;          ///< tasks of lost workers' chunks, to hand out again, in the order they went back
    std::deque<chunk> shares_;            ///< pieces of a reclaim's answer for the idle besides its thief, each handed whole
    task_count returned_tasks_ = 0;
    int lost_count_ = 0;                  ///< workers lost so far
};

}  // namespace pfarm
