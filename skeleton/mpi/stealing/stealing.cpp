// pfarm MPI engine: the work-stealing farm (farm_options::topology.farmer = stealing). No farmer and no shared work
// counter: every rank owns a contiguous range of the loop, a (front, back) pair in one 64-bit word of its own
// one-sided memory, claims its chunks from the front of it and, once it is empty, steals half of another rank's
// remainder from the back. The model and its arithmetic are the simulator's (skeleton/sim/src/simulator_stealing.cpp
// has it whole; pfarm/steal_schedule.hpp the arithmetic both use):
//   - one window over every rank (one_sided.hpp: MPI_Win_allocate, one MPI_Win_lock_all epoch): each rank's 64-byte
//     header holds its pair, its `finished` flag (tree), the stop flag and a notice counter; rank 0's memory also
//     holds the inputs (unless replicated) and the outputs;
//   - the owner claims with MPI_Compare_and_swap on its own pair, (f, b) -> (f + n, b), n the technique's rule over
//     its remainder; a swap that lost (a thief lowered b) is retried from the pair it returned;
//   - a thief reads a victim's pair (and, under tree, its flag), swaps (f, b) -> (f, b - ceil(R / 2)) with
//     MPI_Compare_and_swap, retried while R >= 1, installs the stolen range in its own pair with its first chunk
//     claimed (MPI_Fetch_and_op MPI_REPLACE) and goes on as an owner; a failed attempt backs off (steal_backoff);
//   - results go to rank 0's outputs by MPI_Put, one per chunk; inputs come by MPI_Get unless replicated;
//   - the end without a farmer: a rank whose range is empty flushes its puts and adds the tasks it completed to
//     notice counter (rank mod c) with MPI_Fetch_and_op; rank 0, while it has no chunk, sums the c counters (with
//     the thieves' backoff between two polls); a sum equal to the tasks means every result is in its window, and it
//     puts the stop flag into every rank's memory. Then each rank tells rank 0 it is done (one_sided.hpp).
//   - a task that throws (on_task_error stop) or an MPI error: the rank puts the stop flag everywhere and empties
//     every pair, so that every rank stops at its next claim or attempt; the lowest failed rank's failure is the
//     farm's.
#include "engine.hpp"
#include "one_sided.hpp"
#include "wire.hpp"

#include "pfarm/mpi.hpp"
#include "pfarm/steal_schedule.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

namespace pfarm::detail {

namespace {

constexpr MPI_Aint pair_at = 0;      ///< the rank's (front, back) pair (pack_range)
constexpr MPI_Aint finished_at = 8;  ///< tree: 1 once no work can reach the rank any more
constexpr MPI_Aint stop_at = 16;     ///< 1: the farm is over (every result is at rank 0, or a rank failed)
constexpr MPI_Aint counter_at = 24;  ///< notice counter k on rank k (k < notice_counters)
constexpr std::uint64_t victim_seed = 1;  ///< the random victims' seed (the simulator's default)

class stealing_farm {
public:
    explicit stealing_farm(const farm_run& farm)
        : run_(farm), tasks_(run_.setup.config.tasks),
          fetch_inputs_(!run_.setup.config.replicated && run_.kernel.in_bytes > 0),
          keep_records_(!run_.options.output.trace.empty() || run_.options.output.record_trace),
          gentle_(run_.setup.config.gentle_wait != 0), tree_(run_.setup.config.victims == static_cast<std::int32_t>(victim_rule::tree)),
          counters_(notice_counters(run_.ranks)),
          victims_(static_cast<victim_rule>(run_.setup.config.victims), run_.rank, run_.ranks, victim_seed),
          window_(run_.comm, run_.rank, run_.setup.config.tasks, fetch_inputs_ ? run_.kernel.in_bytes : 0, run_.kernel.out_bytes, true) {}

    farm_report run() {
        const double cpu0 = cpu_seconds();
        std::string name = run_.options.schedule.technique;
        technique_options parameters = run_.options.schedule.parameters;
        share_technique(run_.comm, run_.rank, name, parameters);
        rule_ = make_steal_claim_rule(name, parameters, run_.ranks);
        known_ = initial_range(tasks_, run_.ranks, run_.rank);
        // Every rank's header starts zeroed with its own range; rank 0's whole memory is zeroed now, so that its pages
        // are mapped before the puts start, and holds the inputs before anyone fetches one.
        std::memset(window_.local(0), 0, static_cast<std::size_t>(window_.bytes()));
        const std::int64_t word = pack_range(known_);
        std::memcpy(window_.local(pair_at), &word, sizeof word);
        if (run_.rank == 0 && fetch_inputs_ && window_.in_size() > 0)
            std::memcpy(window_.local(window_.in_at()), run_.in, static_cast<std::size_t>(window_.in_size()));
        mpi::check(MPI_Win_sync(window_.get()), "MPI_Win_sync");
        end_setup(run_.comm, run_.rank, run_.ranks);  // a barrier: every window is ready before the first put
        // The backoff's unit: the fastest of four reads of another rank's pair.
        for (int i = 0; i < 4; ++i) {
            const double t = MPI_Wtime();
            fetch((run_.rank + 1) % run_.ranks, pair_at);
            round_trip_ = std::min(round_trip_, MPI_Wtime() - t);
        }
        progress_reporter progress(run_.rank == 0 ? run_.options.output.progress : progress_mode::quiet, tasks_);
        progress_ = &progress;
        work();
        window_.flush_all();  // every put and atomic of this rank is complete
        const rank_end mine{failure_, failure_text_};
        const outcome o = run_.rank == 0 ? collect_outcome(run_.comm, run_.ranks, mine, gentle_, [] {})
                                     : report_and_await_outcome(run_.comm, mine, gentle_);
        if (o.what != farm_outcome::kind::ok) throw_outcome(o);
        if (run_.rank == 0) {
            mpi::check(MPI_Win_sync(window_.get()), "MPI_Win_sync");
            if (window_.out_size() > 0)
                std::memcpy(run_.out, window_.local(window_.out_at()), static_cast<std::size_t>(window_.out_size()));
            progress.update(tasks_);
        }
        const double makespan = now() - run_.t0;
        return report(makespan, cpu_seconds() - cpu0);
    }

private:
    double clock() const { return now() - run_.t0; }

    // ---- atomics, each completed before it returns ----

    std::int64_t fetch(int target, MPI_Aint at) {
        std::int64_t value = 0;
        mpi::check(MPI_Fetch_and_op(nullptr, &value, MPI_INT64_T, target, at, MPI_NO_OP, window_.get()), "MPI_Fetch_and_op");
        window_.flush(target);
        return value;
    }
    /// target's pair becomes `desired` if it holds `expected`; returns what it held.
    steal_range swap(int target, const steal_range& expected, const steal_range& desired) {
        const std::int64_t compare = pack_range(expected), replace = pack_range(desired);
        std::int64_t found = 0;
        mpi::check(MPI_Compare_and_swap(&replace, &compare, &found, MPI_INT64_T, target, pair_at, window_.get()),
                   "MPI_Compare_and_swap");
        window_.flush(target);
        return unpack_range(found);
    }
    /// An atomic `op` (MPI_REPLACE, MPI_SUM) of `value` on target's word at `at`; completed by the caller's flush.
    void issue(int target, MPI_Aint at, std::int64_t value, MPI_Op op) {
        std::int64_t ignored = 0;
        mpi::check(MPI_Fetch_and_op(&value, &ignored, MPI_INT64_T, target, at, op, window_.get()), "MPI_Fetch_and_op");
    }

    double seconds_per_task() const { return done_ > 0 ? busy_ / static_cast<double>(done_) : 0.0; }

    /// Claims, computes and steals until the stop (the end, or a failure anywhere) or this rank fails.
    void work() {
        try {
            for (;;) {
                while (known_.size() > 0)
                    if (!claim()) return;
                notice();
                if (!steal()) return;
            }
        } catch (const std::exception& e) {  // not a task's fault (an MPI error): the farm still ends everywhere
            fail(-1, e.what());
        }
    }

    /// The owner's claim from the front of its own pair; false when this rank failed.
    bool claim() {
        const double claimed = keep_records_ ? clock() : 0.0;
        const task_count n = rule_.size(known_.size());
        const steal_range want{known_.front + n, known_.back};
        const steal_range found = swap(run_.rank, known_, want);
        if (found != known_) {  // a thief lowered the back (or a failure emptied the pair): again from what it held
            ++lost_swaps_;
            known_ = found;
            return true;
        }
        known_ = want;
        return compute({found.front, n}, claimed);
    }

    /// A thief's attempts until it steals (true: it owns a range again, its first chunk computed) or the stop
    /// (false). Rank 0 also polls the notice counters while it has no chunk, and puts the stop once they sum to the
    /// tasks.
    bool steal() {
        int failures = 0, poll_failures = 0;
        double next_try = 0.0, next_poll = 0.0, pause = round_trip_;
        bool finished = false;  // no work can reach this rank any more (tree): it waits for the stop
        for (;;) {
            if (fetch(run_.rank, stop_at) != 0) return false;
            if (run_.rank == 0 && clock() >= next_poll) {
                if (poll()) return false;
                next_poll = clock() + steal_backoff(poll_failures, round_trip_, seconds_per_task());
            }
            if (!finished && clock() >= next_try) {
                const int v = victims_.next();
                if (v < 0) {  // the tree's root: it never steals
                    finished = true;
                    mark_finished();
                } else {
                    ++attempts_;
                    const double claimed = keep_records_ ? clock() : 0.0;
                    std::int64_t pair = 0, flag = 0;
                    mpi::check(MPI_Fetch_and_op(nullptr, &pair, MPI_INT64_T, v, pair_at, MPI_NO_OP, window_.get()),
                               "MPI_Fetch_and_op");
                    if (tree_)
                        mpi::check(MPI_Fetch_and_op(nullptr, &flag, MPI_INT64_T, v, finished_at, MPI_NO_OP, window_.get()),
                                   "MPI_Fetch_and_op");
                    window_.flush(v);
                    for (steal_range found = unpack_range(pair); found.size() > 0;) {
                        const steal_range held = swap(v, found, after_steal(found));
                        if (held == found) {
                            ++steals_;
                            return install(stolen_part(found), claimed);
                        }
                        ++lost_swaps_;
                        found = held;
                    }
                    if (tree_ && flag != 0) {  // its parent can get no more work: nor can it
                        finished = true;
                        mark_finished();
                    } else {
                        next_try = clock() + steal_backoff(failures, round_trip_, seconds_per_task());
                    }
                }
            }
            // Wait for the next attempt or poll; a rank that has finished for the stop, checked less and less often.
            double until = finished ? clock() + pause : next_try;
            if (finished) pause = std::min(pause * 2.0, 100e-6);
            if (run_.rank == 0) until = std::min(until, next_poll);
            wait_until(until);
        }
    }

    void wait_until(double until) {
        if (gentle_) {
            const double left = until - clock();
            if (left > 0.0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
            return;
        }
        while (clock() < until) {
        }
    }

    void mark_finished() {
        issue(run_.rank, finished_at, 1, MPI_REPLACE);
        window_.flush(run_.rank);
    }

    /// The stolen range goes into this rank's pair with its first chunk claimed; that chunk is computed.
    bool install(const steal_range& stolen, double claimed) {
        const task_count n = rule_.size(stolen.size());
        known_ = {stolen.front + n, stolen.back};
        issue(run_.rank, pair_at, pack_range(known_), MPI_REPLACE);
        window_.flush(run_.rank);
        return compute({stolen.front, n}, claimed);
    }

    /// This rank's range is empty: its results are flushed to rank 0, then the tasks it completed since its last
    /// notice go to its counter.
    void notice() {
        if (unreported_ == 0) return;
        window_.flush(0);
        in_flight_[0] = in_flight_[1] = false;
        const double flushed = keep_records_ ? clock() : 0.0;
        for (std::size_t i = first_unflushed_; i < records_.size(); ++i) records_[i].flushed = flushed;
        first_unflushed_ = records_.size();
        const int counter = run_.rank % counters_;
        issue(counter, counter_at, unreported_, MPI_SUM);
        window_.flush(counter);
        unreported_ = 0;
    }

    /// Rank 0: true when the counters sum to the tasks, after it has put the stop into every rank's memory.
    bool poll() {
        std::vector<std::int64_t> values(static_cast<std::size_t>(counters_), 0);
        for (int k = 0; k < counters_; ++k)
            mpi::check(MPI_Fetch_and_op(nullptr, &values[static_cast<std::size_t>(k)], MPI_INT64_T, k, counter_at, MPI_NO_OP,
                                        window_.get()),
                       "MPI_Fetch_and_op");
        window_.flush_all();
        task_count sum = 0;
        for (const std::int64_t v : values) sum += v;
        if (sum < tasks_) {
            progress_->update(sum);
            return false;
        }
        for (int q = 0; q < run_.ranks; ++q) issue(q, stop_at, 1, MPI_REPLACE);
        window_.flush_all();
        return true;
    }

    /// Computes chunk `c` and puts its results to rank 0; false when a task threw (and on_task_error is stop).
    bool compute(chunk c, double claimed) {
        const std::size_t in_bytes = static_cast<std::size_t>(c.count) * run_.kernel.in_bytes;
        const std::byte* inputs = nullptr;
        if (fetch_inputs_ && run_.rank != 0) {  // rank 0 reads its own input; the others fetch theirs
            inputs_.reserve(in_bytes);
            window_.get(inputs_.data(), in_bytes, window_.in_at() + static_cast<MPI_Aint>(c.first * run_.kernel.in_bytes));
            window_.flush(0);
            in_flight_[0] = in_flight_[1] = false;
            inputs = inputs_.data();
        } else {
            inputs = run_.in + static_cast<std::size_t>(c.first) * run_.kernel.in_bytes;
        }
        // Two result buffers: this chunk's results go to the one whose put is complete (the other may be in flight).
        if (in_flight_[next_buffer_]) {
            window_.flush(0);
            in_flight_[0] = in_flight_[1] = false;
        }
        wire_buffer& buffer = results_[next_buffer_];
        const std::size_t out_bytes = static_cast<std::size_t>(c.count) * run_.kernel.out_bytes;
        buffer.reserve(out_bytes);
        std::byte* results = buffer.data();
        const double started = clock();
        if (const auto f = run_chunk_tasks(run_.kernel, run_.setup, run_.rank, run_.t0, c, inputs, results, failed_, {}))
            return fail(f->task, f->text), false;
        const double finished = clock();
        if (out_bytes > 0) {
            window_.put(results, out_bytes, window_.out_at() + static_cast<MPI_Aint>(c.first * static_cast<task_count>(run_.kernel.out_bytes)));
            in_flight_[next_buffer_] = true;
            next_buffer_ ^= 1;
        }
        sizes_.push_back(c.count);
        done_ += c.count;
        unreported_ += c.count;
        busy_ += finished - started;
        finish_ = finished;
        if (keep_records_) records_.push_back({c.first, c.count, claimed, started, finished, 0.0});
        return true;
    }

    /// This rank failed: the stop goes to every rank and every pair is emptied, so that each stops at its next claim
    /// or attempt.
    void fail(task_count task, const std::string& text) {
        failure_ = failure_header{task, static_cast<std::int32_t>(text.size()), 1, run_.rank};
        failure_text_ = text;
        try {
            for (int q = 0; q < run_.ranks; ++q) issue(q, stop_at, 1, MPI_REPLACE);
            window_.flush_all();
            for (int q = 0; q < run_.ranks; ++q) issue(q, pair_at, pack_range({}), MPI_REPLACE);
            window_.flush_all();
        } catch (const std::exception&) {  // the window itself failed: the outcome still ends the farm here
        }
    }

    /// Rank 0 gets every rank's chunks, steals and lost swaps (and their records with a trace), on its clock; another
    /// rank its own.
    farm_report report(double makespan, double cpu) {
        farm_report r = empty_report(run_.options, run_.ranks, tasks_);
        r.workers = run_.ranks;
        r.first_worker_rank = 0;
        worker_part w{run_.rank, sizes_.total(), sizes_, busy_, finish_};
        w.steal_attempts = attempts_, w.steals = steals_, w.lost_swaps = lost_swaps_;
        merge_rank_parts(run_.comm, run_.rank, run_.ranks, own_part(run_.rank, std::move(w), records_, keep_records_, failed_), run_.offsets, 0, r);
        if (run_.rank != 0) return r;
        r.makespan = makespan;
        r.farmer_cpu_seconds = cpu;
        return r;
    }

    const farm_run& run_;  ///< the farm as run_farm hands it
    task_count tasks_;
    bool fetch_inputs_, keep_records_, gentle_, tree_;
    int counters_;
    victim_picker victims_;
    farm_window window_;
    steal_claim_rule rule_;
    steal_range known_;  ///< this rank's pair as it last saw it (its front is exact: only the owner moves it)
    double round_trip_ = 1.0;
    progress_reporter* progress_ = nullptr;
    wire_buffer inputs_;
    wire_buffer results_[2];
    bool in_flight_[2] = {false, false};  ///< a put from that buffer may not be complete yet
    int next_buffer_ = 0;
    chunk_sizes sizes_;  ///< this rank's chunks, in claim order
    task_count done_ = 0, unreported_ = 0, attempts_ = 0, steals_ = 0, lost_swaps_ = 0;
    double busy_ = 0.0, finish_ = 0.0;
    std::vector<chunk_record> records_;
    std::size_t first_unflushed_ = 0;
    std::optional<failure_header> failure_;
    std::vector<failed_task> failed_;
    std::string failure_text_;
};

}  // namespace

void check_stealing(const farm_options& options, const task_kernel& kernel, task_count tasks, int ranks) {
    make_steal_claim_rule(options.schedule.technique, options.schedule.parameters, ranks);  // "technique"
    if (tasks > steal_max_tasks)
        throw invalid_argument("in", "holds " + std::to_string(tasks) + " tasks; the work-stealing farm holds a range in 32 "
                                     "bits, at most " + std::to_string(steal_max_tasks) + " tasks (use decentralised or flat)");
    if (kernel.streamed())  // a journal hands results on through a sink too (journaled.cpp)
        throw invalid_argument("farmer", "stealing does not carry streamed results, results of any size or a journal (its "
                                         "ranks put fixed-size outputs straight into rank 0's window); use flat");
    if (options.schedule.learned)
        throw invalid_argument("farmer", "stealing serves no calibrating technique, so a learned schedule has nothing to "
                                         "keep; use flat");
    if (options.protocol.prefetch)
        throw invalid_argument("prefetch", "is on; the work-stealing farm claims from its own window, with nothing to hide");
    if (options.protocol.reclaim)
        throw invalid_argument("reclaim", "is on; the work-stealing farm has no farmer to reclaim (thieves steal)");
    if (!options.schedule.monitors.empty())
        throw invalid_argument("monitors", "are not available with farmer = stealing: no request carries readings "
                                           "(leave monitors empty)");
    if (options.protocol.side_channel)
        throw invalid_argument("side_channel", "is not served with farmer = stealing: no rank receives messages while the "
                                               "farm runs (use flat or hierarchical)");
}

farm_report run_stealing(const farm_run& run) { return stealing_farm(run).run(); }

}  // namespace pfarm::detail
