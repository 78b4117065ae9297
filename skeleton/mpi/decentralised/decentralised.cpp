// pfarm MPI engine: the decentralised farm (farm_options::topology.farmer = decentralised). No rank serves requests:
// every computing rank claims its own chunks from counters in MPI one-sided memory on rank 0 (one window made by
// MPI_Win_allocate, one MPI_Win_lock_all epoch for the whole farm, never a lock per claim), reads its inputs
// from that window (MPI_Get) unless the input is replicated, and puts its results into it (MPI_Put), where rank 0
// finds them in task order at the end. The chunk arithmetic is the core's (pfarm/claim_schedule.hpp): a by_step
// technique is claimed with one MPI_Fetch_and_op on the step counter, a by_worker one with MPI_Compare_and_swap
// on the next task index. docs/skeleton.md "Decentralised farm" has the scheme and its measured claim rate. Under
// on_worker_loss, each claim is published to rank 0's watch and a lost rank's tasks are computed again; under
// on_task_error retry, a task whose run failed is computed again by another rank (decentralised_loss.hpp).
#include "decentralised_loss.hpp"
#include "engine.hpp"
#include "messages.hpp"
#include "one_sided.hpp"
#include "wire.hpp"

#include "pfarm/claim_schedule.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/registry.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

namespace pfarm::detail {

/// Rank 0's technique name and parameters on every rank: the options other ranks passed are not read, as in
/// the flat farm (only rank 0's view counts). Also the hierarchical farm's (engine.hpp).
void share_technique(MPI_Comm comm, int rank, std::string& name, technique_options& o) {
    broadcast_string(comm, name);
    std::vector<double> v;
    if (rank == 0) {
        const auto scalar = [&v](const auto& x) {
            v.push_back(x ? 1.0 : 0.0);
            v.push_back(x ? static_cast<double>(*x) : 0.0);
        };
        v.push_back(static_cast<double>(o.min_chunk));
        scalar(o.chunk), scalar(o.factor), scalar(o.first), scalar(o.last), scalar(o.stages), scalar(o.static_percent);
        scalar(o.k), scalar(o.overhead), scalar(o.sigma);
        v.push_back(o.calibration ? 1.0 : 0.0);
        v.push_back(o.calibration ? static_cast<double>(static_cast<int>(*o.calibration)) : 0.0);
        for (const auto* list : {&o.weights, &o.run_queue, &o.times}) {
            v.push_back(static_cast<double>(list->size()));
            v.insert(v.end(), list->begin(), list->end());
        }
    }
    int size = static_cast<int>(v.size());
    mpi::check(MPI_Bcast(&size, 1, MPI_INT, 0, comm), "MPI_Bcast");
    v.resize(static_cast<std::size_t>(size));
    mpi::check(MPI_Bcast(v.data(), size, MPI_DOUBLE, 0, comm), "MPI_Bcast");
    if (rank == 0) return;
    std::size_t i = 0;
    o = technique_options{};
    o.min_chunk = static_cast<task_count>(v[i++]);
    const auto scalar = [&](auto& x) {
        const bool has = v[i++] != 0.0;
        const double value = v[i++];
        if (has) x = static_cast<typename std::remove_reference_t<decltype(x)>::value_type>(value);
    };
    scalar(o.chunk), scalar(o.factor), scalar(o.first), scalar(o.last), scalar(o.stages), scalar(o.static_percent);
    scalar(o.k), scalar(o.overhead), scalar(o.sigma);
    const bool has_mode = v[i++] != 0.0;
    const int mode = static_cast<int>(v[i++]);
    if (has_mode) o.calibration = static_cast<calibration_mode>(mode);
    for (auto* list : {&o.weights, &o.run_queue, &o.times}) {
        const auto n = static_cast<std::size_t>(v[i++]);
        list->assign(v.begin() + static_cast<std::ptrdiff_t>(i), v.begin() + static_cast<std::ptrdiff_t>(i + n));
        i += n;
    }
}

namespace {

constexpr MPI_Aint step_at = 0;   ///< by_step: the next scheduling step
constexpr MPI_Aint next_at = 8;   ///< by_worker: the next task index
/// Results wait in a batch until it holds this many bytes or chunks (or the rank has no more work); a chunk with
/// more results than this travels alone (pfarm/claim_schedule.hpp: the simulator models the same batches).
constexpr std::size_t batch_bytes = decentralised_batch_bytes;
constexpr std::size_t batch_chunks = decentralised_batch_chunks;

/// One rank's claims, the transport of a claim_session (pfarm/claim_schedule.hpp: the session says which atomic
/// operation a claim issues and what the answer means). begin() issues the operation of the next claim, end()
/// completes it with the flush that also completes this rank's earlier puts, and returns the chunk (count 0:
/// nothing more, the schedule's end or another rank's failure). Between the two the rank may compute (prefetch:
/// the claim travels meanwhile).
class claimer {
public:
    claimer(farm_window& window, std::unique_ptr<technique> policy, int worker, int workers, task_count tasks,
            task_count min_chunk)
        : window_(window), schedule_(tasks, workers, std::move(policy), min_chunk), session_(schedule_, worker) {
        if (schedule_.form() != claim_form::by_worker) return;
        // A lost swap's backoff is counted in atomic round trips: the fastest of four reads of the index.
        for (int i = 0; i < 4; ++i) {
            std::int64_t value = 0;
            const double t = MPI_Wtime();
            mpi::check(MPI_Fetch_and_op(nullptr, &value, MPI_INT64_T, 0, next_at, MPI_NO_OP, window_.get()),
                       "MPI_Fetch_and_op");
            window_.flush();
            round_trip_ = std::min(round_trip_, MPI_Wtime() - t);
        }
    }

    void begin() {
        op_ = session_.begin();
        const MPI_Aint at = op_.counter == claim_op::target::step ? step_at : next_at;
        if (op_.what == claim_op::kind::fetch_and_add)
            mpi::check(MPI_Fetch_and_op(&op_.operand, &result_, MPI_INT64_T, 0, at, MPI_SUM, window_.get()), "MPI_Fetch_and_op");
        else if (op_.what == claim_op::kind::compare_and_swap)
            mpi::check(MPI_Compare_and_swap(&op_.operand, &op_.compare, &result_, MPI_INT64_T, 0, at, window_.get()),
                       "MPI_Compare_and_swap");
        else if (op_.what == claim_op::kind::read)
            mpi::check(MPI_Fetch_and_op(nullptr, &result_, MPI_INT64_T, 0, at, MPI_NO_OP, window_.get()), "MPI_Fetch_and_op");
    }

    chunk end() {
        window_.flush();
        for (;;) {
            if (const std::optional<chunk> c = session_.end(result_)) return *c;
            // The swap lost: wait the session's backoff, then retry (after a wait, from a fresh read of the index).
            if (const std::uint32_t slots = session_.backoff(); slots > 0)
                for (const double until = MPI_Wtime() + slots * round_trip_; MPI_Wtime() < until;) {
                }
            begin();
            window_.flush();
        }
    }

    /// This rank failed: every other rank's next claim finds nothing (both counters, whichever form).
    void poison_counters() {
        std::int64_t ignored = 0;
        for (MPI_Aint at : {step_at, next_at})
            mpi::check(MPI_Fetch_and_op(&claim_poison, &ignored, MPI_INT64_T, 0, at, MPI_SUM, window_.get()), "MPI_Fetch_and_op");
        window_.flush();
    }

    /// Tasks handed out so far, as rank 0 reads them for its progress line (by_step: the start of the next step).
    task_count handed_out() {
        std::int64_t value = 0;
        mpi::check(MPI_Fetch_and_op(nullptr, &value, MPI_INT64_T, 0, schedule_.form() == claim_form::by_step ? step_at : next_at,
                                    MPI_NO_OP, window_.get()),
                   "MPI_Fetch_and_op");
        window_.flush();
        return session_.handed_out(value);
    }

private:
    farm_window& window_;
    claim_schedule schedule_;
    claim_session session_;
    claim_op op_;  ///< the operation in flight: its operands stay here until the flush
    std::int64_t result_ = 0;
    double round_trip_ = 1.0;  ///< by_worker: one atomic's round trip, measured at construction (the backoff's unit)
};

class decentralised_farm {
public:
    explicit decentralised_farm(const farm_run& farm)
        : run_(farm), tasks_(run_.setup.config.tasks), first_worker_(run_.setup.config.farmer_computes ? 0 : 1),
          fetch_inputs_(!run_.setup.config.replicated && run_.kernel.in_bytes > 0),
          keep_records_(!run_.options.output.trace.empty() || run_.options.output.record_trace),
          losses_(run_.setup.config.worker_loss != 0),
          retry_(run_.setup.config.task_errors == static_cast<std::int32_t>(task_error_rule::kind::retry)),
          reissue_(losses_ || retry_), layout_(run_.ranks, run_.setup.config.tasks),
          window_(run_.comm, run_.rank, run_.setup.config.tasks, fetch_inputs_ ? run_.kernel.in_bytes : 0, run_.kernel.out_bytes, false,
                  reissue_ ? layout_.bytes : 0) {}

    farm_report run() {
        const double cpu0 = cpu_seconds();
        std::string name = run_.options.schedule.technique;
        technique_options parameters = run_.options.schedule.parameters;
        share_technique(run_.comm, run_.rank, name, parameters);
        const int workers = run_.ranks - first_worker_;
        std::unique_ptr<technique> policy = make_technique(name, parameters, workers);
        const std::optional<double> k = policy->installment_factor();
        claimer claims(window_, std::move(policy), run_.rank - first_worker_, workers, tasks_, parameters.min_chunk);
        if (run_.rank == 0) {  // the counters start at 0 and rank 0's input is in the window before anyone claims;
            // the whole window is zeroed now, so that its pages are mapped before the claims start (a first touch
            // by a put costs a page fault in the middle of the farm)
            std::memset(window_.local(0), 0, static_cast<std::size_t>(window_.bytes()));
            if (fetch_inputs_ && window_.in_size() > 0)
                std::memcpy(window_.local(window_.in_at()), run_.in, static_cast<std::size_t>(window_.in_size()));
            mpi::check(MPI_Win_sync(window_.get()), "MPI_Win_sync");
        }
        end_setup(run_.comm, run_.rank, run_.ranks);  // a barrier: nobody claims before rank 0's window is ready

        progress_reporter progress(run_.rank == 0 ? run_.options.output.progress : progress_mode::quiet, tasks_);
        if (reissue_) {
            if (run_.rank >= first_worker_) beat_.emplace(window_, layout_, run_.rank);
            if (run_.rank == 0)
                host_.emplace(run_.comm, window_, layout_, run_.ranks, first_worker_, tasks_, worker_loss_of(run_.setup.config),
                              parameters.min_chunk, [&claims] { claims.poison_counters(); }, losses_,
                              retry_ ? run_.setup.config.task_attempts : 0);
        }
        if (run_.rank >= first_worker_) work(claims, progress);
        if (reissue_) return end_point_to_point(claims, progress, k, cpu0);
        window_.flush();  // this rank's results are all in rank 0's window (work() sent its last batch)

        // The end, point to point (a non-blocking collective would leave its progress function in every later MPI
        // poll of the process): each rank tells rank 0 it is done, its results flushed, and how (failure_header);
        // once all have, rank 0 holds every result and answers each rank with the outcome.
        const bool gentle = run_.setup.config.gentle_wait != 0;
        const rank_end mine{failure_, failure_text_};
        outcome o = run_.rank == 0 ? collect_outcome(run_.comm, run_.ranks, mine, gentle, [&] {
            if (run_.options.output.progress != progress_mode::quiet) progress.update(claimed_not_done(claims));
        })
                               : report_and_await_outcome(run_.comm, mine, gentle);
        if (o.what != farm_outcome::kind::ok) throw_outcome(o);
        if (run_.rank == 0) take_outputs(progress);
        const double makespan = now() - run_.t0;
        return report(makespan, k, cpu_seconds() - cpu0);
    }

private:
    /// The end under on_worker_loss or on_task_error retry, point to point (decentralised_loss.hpp): rank 0 watches
    /// until every living rank has ended, hands out again what nobody delivered, and sends the outcome with the lost
    /// ranks; the report's parts travel point to point. The window is abandoned (MPI_Win_free is collective, and a rank
    /// may die after the outcome as well as before).
    farm_report end_point_to_point(claimer& claims, progress_reporter& progress, std::optional<double> k, double cpu0) {
        if (beat_) beat_->holds({tasks_, 0});  // it holds nothing now: while it waits it owes only its beats
        window_.flush();  // this rank's results, flags and slot are in rank 0's window
        const bool gentle = run_.setup.config.gentle_wait != 0;
        const auto end = [this] { return rank_end{failure_, failure_text_}; };
        outcome o = run_.rank == 0
                        ? host_->finish(end(), gentle, [&](chunk c) { return compute_piece(claims, c), end(); },
                                        [&] {
                                            if (run_.options.output.progress != progress_mode::quiet)
                                                progress.update(claimed_not_done(claims));
                                        })
                        : end_and_await_outcome(
                              run_.comm, gentle, end, [&](chunk c) { compute_piece(claims, c); },
                              [this] {
                                  if (losses_) beat_->beat(), window_.flush();
                              },
                              losses_ ? claim_watch::beat_interval(worker_loss_of(run_.setup.config)) : 1.0);
        window_.abandon();
        if (o.what != farm_outcome::kind::ok) throw_outcome(o);
        if (run_.rank == 0) take_outputs(progress);
        // Point to point even without a loss: a rank may die after the outcome (its part is then left out).
        farm_report r = report(now() - run_.t0, k, cpu_seconds() - cpu0, &o.lost);
        r.lost_ranks = o.lost;
        if (run_.rank == 0 && retry_) r.task_errors = host_->task_errors(), r.retried_tasks = host_->retried_tasks();
        return r;
    }

    /// Rank 0, once every rank has ended: the outputs out of the window, in task order.
    void take_outputs(progress_reporter& progress) {
        mpi::check(MPI_Win_sync(window_.get()), "MPI_Win_sync");
        if (window_.out_size() > 0)
            std::memcpy(run_.out, window_.local(window_.out_at()), static_cast<std::size_t>(window_.out_size()));
        progress.update(tasks_);
    }

    /// A piece handed by rank 0 at the end (tasks a lost rank left, or a task whose run failed, under retry):
    /// computed, its results and flags put and flushed (nothing when this rank has failed, or rank 0 presumed it lost
    /// meanwhile).
    void compute_piece(claimer& claims, const chunk& c) {
        if (failure_) return;
        const double claimed = clock();  // when the piece came: its trace record's "sent"
        beat_->holds(c);
        window_.flush();
        next_beat_ = clock() + claim_watch::beat_interval(worker_loss_of(run_.setup.config));
        const std::byte* inputs = chunk_inputs(c);
        const std::size_t out_bytes = static_cast<std::size_t>(c.count) * run_.kernel.out_bytes;
        results_.reserve(out_bytes);
        const double started = clock();
        if (!compute(claims, c, inputs, results_.data())) return;
        const double finished = clock();
        if (losses_ && beat_->presumed_lost()) return;
        if (out_bytes > 0)
            window_.put(results_.data(), out_bytes, window_.out_at() + static_cast<MPI_Aint>(c.first * static_cast<task_count>(run_.kernel.out_bytes)));
        window_.flush();
        beat_->delivered(c, finished - started, chunk_failed_);
        beat_->holds({tasks_, 0});
        window_.flush();
        sizes_.push_back(c.count);
        busy_ += finished - started;
        finish_ = finished;
        if (keep_records_) records_.push_back({c.first, c.count, claimed, started, finished, clock()});
    }

    /// The inputs of chunk `c`: rank 0's own, or fetched from the window.
    const std::byte* chunk_inputs(const chunk& c) {
        const std::byte* inputs = run_.in + static_cast<std::size_t>(c.first) * run_.kernel.in_bytes;
        if (!fetch_inputs_ || run_.rank == 0) return inputs;  // rank 0 reads its own input; the others fetch theirs
        const std::size_t in_bytes = static_cast<std::size_t>(c.count) * run_.kernel.in_bytes;
        inputs_.reserve(in_bytes);
        window_.get(inputs_.data(), in_bytes, window_.in_at() + static_cast<MPI_Aint>(c.first * run_.kernel.in_bytes));
        window_.flush();
        return inputs_.data();
    }

    /// Computes chunk `c` into `results` (run_chunk_tasks); false when a task failed the farm (fail() has run). Under
    /// on_worker_loss rank 0 watches, and a claimer beats, between two tasks. Under on_task_error retry its failed
    /// runs are told to rank 0 and left in chunk_failed_ (their flags stay unset).
    bool compute(claimer& claims, const chunk& c, const std::byte* inputs, std::byte* results) {
        const std::function<void()> between = !losses_ ? std::function<void()>{} : [this] {
            if (host_) host_->watch();
            if (beat_ && clock() >= next_beat_) {  // a sign of life for rank 0's watch while the chunk computes
                beat_->beat();
                window_.flush();
                next_beat_ = clock() + claim_watch::beat_interval(worker_loss_of(run_.setup.config));
            }
        };
        chunk_failed_.clear();
        if (const auto f = run_chunk_tasks(run_.kernel, run_.setup, run_.rank, run_.t0, c, inputs, results, retry_ ? runs_failed_ : failed_,
                                           between))
            return fail(claims, f->task, f->text), false;
        for (const failed_task& f : runs_failed_) {
            chunk_failed_.push_back(f.task);
            if (run_.rank == 0) host_->task_error(f.task, 0, f.error);
            else send_task_error(run_.comm, run_.rank, f.task, f.error);
        }
        runs_failed_.clear();
        return true;
    }

    double clock() const { return now() - run_.t0; }

    /// Rank 0's progress while the farm runs: the tasks claimed so far, short of the total until every rank has
    /// reported its results in (the final line comes from the outcome).
    task_count claimed_not_done(claimer& claims) const { return std::min(claims.handed_out(), tasks_ - 1); }

    /// Claims and computes chunks until a claim finds nothing (the end, or a failure elsewhere) or a task throws.
    void work(claimer& claims, progress_reporter& progress) {
        const bool prefetch = run_.setup.config.prefetch != 0;
        try {
            double claimed = clock();
            claims.begin();
            chunk next = claims.end();
            while (next.count > 0) {
                const chunk c = next;
                if (beat_) {  // rank 0's watch sees the chunk before it is computed
                    beat_->holds(c), window_.flush();
                    next_beat_ = clock() + claim_watch::beat_interval(worker_loss_of(run_.setup.config));
                }
                double claimed_next = 0.0;
                if (prefetch) claimed_next = keep_records_ ? clock() : 0.0, claims.begin();  // the next claim travels while this one computes
                const std::byte* inputs = chunk_inputs(c);
                // The chunk's results go after the batch waiting in results_ (nothing of it is in flight now: a
                // batch put is completed by the flush of the claim that follows it, and then the batch restarts).
                const std::size_t out_bytes = static_cast<std::size_t>(c.count) * run_.kernel.out_bytes;
                results_.reserve(batched_ + out_bytes);
                std::byte* results = results_.data() + batched_;
                const double started = clock();
                if (!compute(claims, c, inputs, results)) return;
                const double finished = clock();
                if (losses_ && beat_->presumed_lost()) return;  // alive after all: its results are dropped, it ends
                const MPI_Aint at = window_.out_at() + static_cast<MPI_Aint>(c.first * static_cast<task_count>(run_.kernel.out_bytes));
                bool sent = false;
                if (out_bytes >= batch_bytes || beat_) {  // a large chunk travels alone, after the batch before it
                    // (with the hand-out again every chunk does: its flags follow its results)
                    if (batched_ > 0) window_.put_batch(results_.data(), batched_, batch_at_, batch_lengths_);
                    window_.put(results, out_bytes, at);
                    sent = true;
                } else if (out_bytes > 0) {
                    batch_at_.push_back(at);
                    batch_lengths_.push_back(static_cast<int>(out_bytes));
                    if (batched_ + out_bytes >= batch_bytes || batch_at_.size() == batch_chunks) {
                        window_.put_batch(results_.data(), batched_ + out_bytes, batch_at_, batch_lengths_);
                        sent = true;
                    }
                }
                batched_ += out_bytes;
                if (!prefetch) claimed_next = keep_records_ ? clock() : 0.0, claims.begin();
                next = claims.end();  // its flush completes the batch's put too: those results are in rank 0's window
                if (beat_) beat_->delivered(c, finished - started, chunk_failed_);  // completed by the next flush
                sizes_.push_back(c.count);
                busy_ += finished - started;
                finish_ = finished;
                if (keep_records_) records_.push_back({c.first, c.count, claimed, started, finished, 0.0});
                if (sent || next.count == 0) batch_done(!sent && next.count == 0);
                claimed = claimed_next;
                if (run_.rank == 0 && run_.options.output.progress != progress_mode::quiet) progress.update(claimed_not_done(claims));
            }
        } catch (const std::exception& e) {  // not a task's fault (an MPI error): the farm still ends everywhere
            fail(claims, -1, e.what());
        }
    }

    /// The batch's put has completed (`send`: put it first, and complete it): its chunks' results are in rank 0's
    /// window, their records get that time, and the batch restarts empty.
    void batch_done(bool send) {
        if (send && !batch_at_.empty()) {
            window_.put_batch(results_.data(), batched_, batch_at_, batch_lengths_);
            window_.flush();
        }
        if (keep_records_) {
            const double now_ = clock();
            for (std::size_t i = batch_first_record_; i < records_.size(); ++i) records_[i].flushed = now_;
            batch_first_record_ = records_.size();
        }
        batched_ = 0;
        batch_at_.clear();
        batch_lengths_.clear();
    }

    void fail(claimer& claims, task_count task, const std::string& text) {
        failure_ = failure_header{task, static_cast<std::int32_t>(text.size()), 1, run_.rank};
        failure_text_ = text;
        try {
            claims.poison_counters();
        } catch (const std::exception&) {  // the window itself failed: the reduction still ends the farm here
        }
    }

    /// Rank 0 gets every rank's chunks (and their records with a trace), on its clock; a worker its own counts.
    /// `lost` (under on_worker_loss): the parts travel point to point, a lost rank's from rank 0's watch.
    farm_report report(double makespan, std::optional<double> k, double cpu, const std::vector<int>* lost = nullptr) {
        farm_report r = empty_report(run_.options, run_.ranks, tasks_);
        r.workers = run_.ranks - first_worker_;
        // On this rank's clock.
        report_part mine = own_part(run_.rank, {run_.rank, sizes_.total(), sizes_, busy_, finish_}, records_, keep_records_, failed_);
        r.k = k;  // the parts carry none (add_part keeps it)
        merge_rank_parts(run_.comm, run_.rank, run_.ranks, std::move(mine), run_.offsets, first_worker_, r, lost,
                         lost && run_.rank == 0 ? host_->lost_parts() : std::vector<report_part>{},
                         2.0 * worker_loss_of(run_.setup.config).slack);
        if (run_.rank != 0) return r;
        r.makespan = makespan;
        r.farmer_cpu_seconds = cpu;  // the trace file is written by run_farm (farm.cpp), every rank told
        return r;
    }

    const farm_run& run_;  ///< the farm as run_farm hands it
    task_count tasks_;
    int first_worker_;
    bool fetch_inputs_;
    bool keep_records_;  ///< a trace was asked for: every chunk's times travel to rank 0
    bool losses_;        ///< on_worker_loss: the farm survives a lost claimer (decentralised_loss.hpp)
    bool retry_;         ///< on_task_error retry: a failed run's task is computed again by another rank
    bool reissue_;       ///< either: rank 0 hands out again, at the end, what nobody delivered
    watch_layout layout_;
    farm_window window_;
    std::optional<claim_beat> beat_;  ///< under on_worker_loss, a computing rank's side of the watch
    double next_beat_ = 0.0;          ///< when it beats next between two tasks
    std::optional<loss_host> host_;   ///< under on_worker_loss, rank 0's watch
    wire_buffer inputs_;
    wire_buffer results_;  ///< the batch: its chunks' results one after another, 64-byte aligned (so are the outputs
                           ///< the worker function sees: each chunk's start is a multiple of out_bytes)
    std::size_t batched_ = 0;  ///< bytes of results_ in the batch
    std::vector<MPI_Aint> batch_at_;  ///< where each chunk of the batch goes in the window
    std::vector<int> batch_lengths_;  ///< and its bytes
    std::size_t batch_first_record_ = 0;
    chunk_sizes sizes_;  ///< this rank's chunks, in claim order
    double busy_ = 0.0, finish_ = 0.0;
    std::vector<chunk_record> records_;
    std::optional<failure_header> failure_;
    std::vector<failed_task> failed_;  ///< on_task_error skip: this rank's failed tasks
    std::vector<failed_task> runs_failed_;  ///< on_task_error retry: the failed runs of the chunk just computed
    std::vector<task_count> chunk_failed_;  ///< and their tasks (their flags stay unset)
    std::string failure_text_;
};

}  // namespace

void check_decentralised(const farm_options& options, const technique& policy, int workers) {
    // the technique and reclaim: the core's one list, which the simulator refuses too
    pfarm::check_decentralised(policy, options.schedule.technique, options.schedule.parameters, workers, options.protocol.reclaim);
    if (!options.schedule.monitors.empty())
        throw invalid_argument("monitors", "are not available with farmer = decentralised: no request carries readings "
                                           "(leave monitors empty)");
    if (options.protocol.side_channel)
        throw invalid_argument("side_channel", "is not served with farmer = decentralised: no rank receives messages "
                                               "while the farm runs (use flat or hierarchical)");
}

farm_report run_decentralised(const farm_run& run) { return decentralised_farm(run).run(); }

}  // namespace pfarm::detail
