// pfarm MPI engine: rank 0's side, the MPI transport of a farmer_session (farmer_session.hpp owns every rule:
// the barrier, parking, chunks in flight, reclaim, stop, abort, records and metrics). This file only receives
// requests (and the results that follow one, without waiting for them: following_payloads), stores the results
// the session accepts, sends the replies it decides (the assign of the chunk known ahead written while it waits),
// and, when the farmer computes, runs rank 0's own worker (own_worker.hpp), between two of whose tasks it serves
// the requests.
#include "engine.hpp"
#include "messages.hpp"
#include "own_worker.hpp"
#include "results.hpp"
#include "wire.hpp"

#include "pfarm/farmer_session.hpp"
#include "pfarm/mpi.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <thread>

namespace pfarm::detail {

namespace {

class farmer_side {
public:
    farmer_side(MPI_Comm comm, int ranks, const std::byte* in, std::byte* out, const task_kernel& kernel,
                const farm_options& options, const shared_setup& setup, std::unique_ptr<technique> policy, double t0,
                sampler& monitors, std::vector<double> offsets, double round_trip)
        : comm_(comm), in_(in), out_(out), kernel_(kernel), options_(options), setup_(setup), monitors_(monitors),
          offsets_(std::move(offsets)), first_worker_rank_(setup.config.farmer_computes ? 0 : 1), t0_(t0),
          report_(empty_report(options, ranks, setup.config.tasks)), progress_(options.output.progress, setup.config.tasks),
          learned_(options.schedule.learned
                       ? options.schedule.learned->start(policy->needs_calibration(), ranks - first_worker_rank_, setup.config.tasks)
                       : std::nullopt),
          session_(setup.config.tasks, ranks - first_worker_rank_, std::move(policy),
                   {.min_chunk = options.schedule.parameters.min_chunk,
                    .prefetch = setup.config.prefetch != 0,
                    .reclaim = setup.config.reclaim != 0,
                    .request_cost = round_trip,
                    .keep_records = !options.output.trace.empty() || options.output.record_trace,
                    .learned = learned_ ? &*learned_ : nullptr,
                    .calibration_span = setup.config.calibration_span,
                    // A chunk is overdue past its predicted time x factor plus a few round trips (at least 1 ms).
                    .stragglers = {setup.config.straggler_factor, std::max(4.0 * round_trip, 1e-3)},
                    .task_errors = task_errors_of(setup.config),
                    .clock = [t0] { return now() - t0; },
                    .worker_loss = worker_loss_of(setup.config),
                    .own_worker = setup.config.farmer_computes ? 0 : -1}),
          own_(kernel, setup, monitors, 0, [t0] { return now() - t0; }),
          inbox_(comm, setup.config.reclaim != 0, setup.config.gentle_wait != 0) {}

    farm_report run() {
        const double cpu0 = cpu_seconds();
        try {
            if (first_worker_rank_ == 0) own_.start(), serve_own();  // its first request is there at once
            while (!session_.over()) {
                if (own_.computing()) {
                    compute_own_task();
                    drain_messages();
                    if (session_.deadline() <= clock()) on_timer();
                    continue;
                }
                const double due = session_.deadline();  // stragglers: workers wait for a chunk to become overdue
                if (due == std::numeric_limits<double>::infinity()) {
                    handle(*inbox_.next(true));
                } else if (const received_message* m = inbox_.next(false)) {
                    handle(*m);
                } else if (clock() >= due) {
                    on_timer();
                } else if (setup_.config.gentle_wait != 0) {  // more ranks than cores: the core is another's meanwhile
                    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(due - clock(), 1e-4)));
                }  // else polled again at once, as a blocking receive would
            }
            finish_transport();
        } catch (const std::exception& e) {
            // The farmer itself failed (a calibration that cannot proceed, an MPI error): every worker is
            // stopped, the one whose request was being handled included; the others as they ask.
            // Rank 0's own worker, when computing, finishes its chunk like a remote worker and is stopped by the
            // answer to its next request (a sink that throws while rank 0 computes: the farm would wait for it).
            own_.drop_requests();
            perform(session_.abort(e.what()));
            while (!session_.over()) {
                if (own_.computing()) compute_own_task();
                else handle(*inbox_.next(true));
            }
            finish_transport();
        }
        outcome o;
        const farm_outcome& f = session_.outcome();
        o.what = f.what;
        o.rank = f.worker + first_worker_rank_;
        o.task = f.task;
        o.text = f.what == farm_outcome::kind::worker_failed || f.what == farm_outcome::kind::worker_lost
                     ? "rank " + std::to_string(o.rank) + ": " + f.text
                     : f.text;
        if (o.what == farm_outcome::kind::ok && !results_missing_.empty()) {
            o.what = farm_outcome::kind::worker_lost;
            o.text = results_missing_;
        }
        if (setup_.config.worker_loss != 0) {  // no collective: a rank may be gone (on_worker_loss)
            o.lost = lost_ranks();
            for (int r : o.lost) {  // one presumed lost that lives and waits for a reply is told to stop
                reply_message stop;
                stop.what = reply_message::kind::stop;
                const reply_header h = encode(stop);
                std::vector<std::byte> bytes(sizeof h);
                std::memcpy(bytes.data(), &h, sizeof h);
                send_detached(comm_, std::move(bytes), r, tag_reply);
            }
            send_outcome(comm_, o, o.lost);
        } else {
            end_traffic(comm_, true, setup_.config.gentle_wait != 0);  // what workers sent after their abort, dropped
            share_outcome(comm_, o);
        }
        if (o.what != farm_outcome::kind::ok) throw_outcome(o);
        return report(cpu_seconds() - cpu0);
    }

private:
    double clock() const { return now() - t0_; }

    void on_timer() {
        perform(session_.on_timer(clock()));
        serve_own();
    }

    void drain_messages() {
        while (const received_message* m = inbox_.next(false)) handle(*m);
    }

    /// Hands message `m` to the session; its results land in out_ (a payload that followed it is received
    /// in place first). Its receive is posted again whatever happens.
    void handle(const received_message& m) {
        try {
            const int rank = m.source;
            request_header h;
            std::memcpy(&h, m.data, sizeof h);
            decode(h, offsets_[static_cast<std::size_t>(rank)], message_);
            delivering_ = message_.done;
            if (message_.what == request_message::kind::failure || message_.what == request_message::kind::task_error) {
                const auto* text = reinterpret_cast<const char*>(m.data + request_payload_offset);
                message_.text.assign(text, m.bytes() - request_payload_offset);
            }
            results_ = m.data + request_payload_offset;
            index_bytes_ = static_cast<std::size_t>(h.index_bytes);
            if (h.results_follow) {  // too large to travel in the request: they follow, received without blocking
                const auto bytes = static_cast<std::size_t>(h.results_bytes);
                results_ = nullptr;
                // Into a buffer of their own for the sink, or when part of them may be delivered already (stragglers:
                // a chunk re-executed), delivered once in; else in place, in out_.
                // Retry: a failed task's fill must not land over its later result.
                if (kernel_.streamed() || setup_.config.stragglers || setup_.config.task_errors == static_cast<std::int32_t>(task_error_rule::kind::retry))
                    following_ = &payloads_.receive(bytes, rank, comm_, h.first, index_bytes_);
                else
                    payloads_.receive_in_place(out_ + static_cast<std::size_t>(h.first) * kernel_.out_bytes, bytes, rank, comm_);
            }
            if (message_.what == request_message::kind::ask) ++report_.farmer_requests;
            // The replies that may go before the results are accounted go first (the session's rule), the rest after.
            perform(session_.receive(rank - first_worker_rank_, message_));  // it reads the clock if it must
            perform(session_.settle());
            following_ = nullptr;
            write_ahead(session_.upcoming(rank - first_worker_rank_));
            serve_own();
            if (!payloads_.empty()) payloads_.complete(false, [this](const auto& p) { deliver_following(p); });
        } catch (...) {
            following_ = nullptr;
            inbox_.release();
            throw;
        }
        inbox_.release();
    }

    /// Results that followed their request, in now: delivered as the session said when the request was handled.
    void deliver_following(const following_payloads::payload& p) {
        if (session_.aborting()) return;  // the farm failed: nobody's results are kept, and a sink that threw is not called again
        for (const chunk& c : p.deliveries) deliver_from(c, p.buffer.data(), p.index_bytes, p.first);
    }

    /// The results of `c` to the sink or into out_, from `data`, which holds results from task `first` on (a
    /// delivery may be part of its message's chunk: stragglers).
    void deliver_from(chunk c, const std::byte* data, std::size_t index_bytes, task_count first) {
        if (kernel_.streamed())
            kernel_.deliver(view_of(kernel_, c.first, c.count, data, index_bytes, first));
        else
            std::memcpy(out_ + static_cast<std::size_t>(c.first) * kernel_.out_bytes,
                        data + static_cast<std::size_t>(c.first - first) * kernel_.out_bytes,
                        static_cast<std::size_t>(c.count) * kernel_.out_bytes);
    }

    /// Carries out the session's actions: the replies first (a worker waits for them), then the results to
    /// store, which are at results_ (a remote worker's message) and wait for nobody.
    void perform(const std::vector<farmer_action>& actions) {
        bool deliver = false;
        for (const farmer_action& a : actions) {
            if (a.what == farmer_action::kind::deliver) {
                deliver = true;
            } else if (a.what == farmer_action::kind::send) {
                if (a.worker + first_worker_rank_ == 0) own_.on_reply(a.reply);
                else send(a.worker + first_worker_rank_, a.reply);
            }
        }
        if (!deliver) return;
        for (const farmer_action& a : actions) {
            if (a.what != farmer_action::kind::deliver) continue;
            const bool own = a.worker + first_worker_rank_ == 0;
            // a.results may be part of the message's chunk (stragglers): its results start at delivering_.first.
            if (own) {  // computed into out_ directly, or into its own buffer when streamed
                if (kernel_.streamed())
                    deliver_from(a.results, own_.results().payload(), own_.results().index_bytes(), delivering_.first);
            } else if (following_) {  // they follow the message: delivered once in
                following_->deliveries.push_back(a.results);
            } else if (results_) {  // in the message (a payload that followed into out_ is there already)
                deliver_from(a.results, results_, index_bytes_, delivering_.first);
            }
            progress_.update(session_.decisions().completed_tasks());
        }
    }

    /// Bytes of the inputs a reply carries (0: none, or they follow it).
    std::size_t payload_of(const reply_message& r) const {
        if (r.what != reply_message::kind::assign || setup_.config.replicated) return 0;
        return static_cast<std::size_t>(r.work.count) * kernel_.in_bytes;
    }

    /// Writes reply `r` (header and inputs) into send_ when it travels as one message; returns its bytes (0: it does
    /// not: its inputs follow, and send_ is left as it was).
    std::size_t encode_into_send(const reply_message& r) {
        const std::size_t payload = payload_of(r);
        if (reply_payload_offset + payload > inline_capacity) return 0;
        written_ahead_ = {};  // send_ no longer holds the assign written ahead
        send_.reserve(reply_payload_offset + payload);
        const reply_header h = encode(r);
        std::memcpy(send_.data(), &h, sizeof h);
        if (payload > 0)
            std::memcpy(send_.data() + reply_payload_offset, in_ + static_cast<std::size_t>(r.work.first) * kernel_.in_bytes,
                        payload);
        return payload > 0 ? reply_payload_offset + payload : sizeof h;
    }

    /// While the farmer waits: the assign the next request will get when the session knows it already
    /// (farmer_session::upcoming), written into send_ ahead, so that its send only sends it.
    void write_ahead(const reply_message& r) {
        if (r.work.count == 0 || r.work == written_ahead_) return;
        written_ahead_bytes_ = encode_into_send(r);
        written_ahead_ = written_ahead_bytes_ > 0 ? r.work : chunk{};
    }

    /// A reply with its inputs; inputs too large to travel in it follow, sent from in_ without blocking.
    void send(int rank, const reply_message& r) {
        if (r.work == written_ahead_ && r.what == reply_message::kind::assign && !r.calibration) {  // in send_ already
            mpi::check(MPI_Send(send_.data(), static_cast<int>(written_ahead_bytes_), MPI_BYTE, rank, tag_reply, comm_), "MPI_Send");
            return;
        }
        if (const std::size_t bytes = encode_into_send(r); bytes > 0) {
            mpi::check(MPI_Send(send_.data(), static_cast<int>(bytes), MPI_BYTE, rank, tag_reply, comm_), "MPI_Send");
        } else {
            const std::size_t payload = payload_of(r);
            reply_header h = encode(r);
            h.inputs_follow = 1;
            mpi::check(MPI_Send(&h, sizeof h, MPI_BYTE, rank, tag_reply, comm_), "MPI_Send");
            pending_.emplace_back();
            pending_to_.push_back(rank);
            mpi::check(MPI_Isend(in_ + static_cast<std::size_t>(r.work.first) * kernel_.in_bytes, static_cast<int>(payload),
                                 MPI_BYTE, rank, tag_inputs, comm_, &pending_.back()),
                       "MPI_Isend");
            if (pending_.size() >= 64) complete_sends(false);
        }
    }

    /// The ranks presumed lost (on_worker_loss).
    std::vector<int> lost_ranks() const {
        std::vector<int> ranks;
        for (int w : session_.lost()) ranks.push_back(w + first_worker_rank_);
        return ranks;
    }

    /// The inputs sent without blocking: drops those delivered (`all`: waits for every one; those to a rank presumed
    /// lost are let go, never received).
    void complete_sends(bool all) {
        if (pending_.empty()) return;
        if (all && !session_.lost().empty()) {
            const std::vector<int> lost = lost_ranks();
            for (std::size_t i = 0; i < pending_.size(); ++i)
                if (std::find(lost.begin(), lost.end(), pending_to_[i]) != lost.end())
                    mpi::check(MPI_Request_free(&pending_[i]), "MPI_Request_free");
        }
        if (all) {
            mpi::check(MPI_Waitall(static_cast<int>(pending_.size()), pending_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
            pending_.clear();
            pending_to_.clear();
            return;
        }
        int done = 0;
        std::vector<int> indices(pending_.size());
        mpi::check(MPI_Testsome(static_cast<int>(pending_.size()), pending_.data(), &done, indices.data(), MPI_STATUSES_IGNORE),
                   "MPI_Testsome");
        std::size_t kept = 0;  // pending_to_ beside pending_
        for (std::size_t i = 0; i < pending_.size(); ++i)
            if (pending_[i] != MPI_REQUEST_NULL) pending_[kept] = pending_[i], pending_to_[kept] = pending_to_[i], ++kept;
        pending_.resize(kept), pending_to_.resize(kept);
    }

    /// The farm is over: every input sent has been received (each worker reads every reply before it ends),
    /// and the receives posted ahead are cancelled.
    void finish_transport() {
        complete_sends(true);
        inbox_.close();
        // Results still on their way are received; delivered unless the farm failed (nobody's results are kept then).
        const bool deliver = !session_.aborting();
        const auto arrived = [&](const auto& p) {
            if (deliver) deliver_following(p);
        };
        if (setup_.config.worker_loss == 0) {
            payloads_.complete(true, arrived);
            return;
        }
        // A rank may be gone with its results on their way: waited for a slack's time at most, then the farm fails.
        const double until = clock() + worker_loss_of(setup_.config).slack;
        while (!payloads_.empty() && clock() < until) payloads_.complete(false, arrived);
        if (!payloads_.empty()) {
            payloads_.cancel();
            results_missing_ = "results that followed their request did not arrive within " +
                               std::to_string(worker_loss_of(setup_.config).slack) +
                               " s (a rank lost with its results on their way); rerun with the journal to compute "
                               "what is missing";
        }
    }

    // --- rank 0's own worker (farmer computes) ------------------------------------------------------------

    void serve_own() {
        if (first_worker_rank_ != 0) return;  // the farmer does not compute: no own worker to serve (every message's path)
        own_.serve([this](const request_message& m) {
            delivering_ = m.done;
            perform(session_.on_message(0, m));
        });
    }

    /// Rank 0's own worker's next task: computed in place in out_, or into its own buffer when results are streamed
    /// (delivered from there when the session accepts them).
    void compute_own_task() {
        const task_count i = own_.next();
        own_.compute_one(in_ + static_cast<std::size_t>(i) * kernel_.in_bytes,
                         kernel_.streamed() ? nullptr : out_ + static_cast<std::size_t>(i) * kernel_.out_bytes,
                         [this] { drain_messages(); });
        serve_own();
    }

    farm_report report(double farmer_cpu) {
        std::vector<int> computing;  // worker w is rank w + first_worker_rank_
        for (int w = 0; w < session_.workers(); ++w) computing.push_back(w + first_worker_rank_);
        add_part(report_, part_of(session_, computing));
        report_.workers = session_.workers();
        report_.makespan = session_.last_result();
        report_.farmer_cpu_seconds = farmer_cpu;
        const farmer& f = session_.decisions();
        if (f.calibration()) report_.calibration = *f.calibration();
        finish_report(report_, computing, trace_order::sent);  // the trace file is written by run_farm (farm.cpp)
        report_.learned = learned_.has_value();
        report_.lost_ranks = lost_ranks();
        if (options_.schedule.learned)  // per worker: the report's per-rank entries from worker 0's rank on
            options_.schedule.learned->learn(f.policy().needs_calibration(), !learned_,
                                     {report_.tasks_per_rank.begin() + first_worker_rank_, report_.tasks_per_rank.end()},
                                     {report_.busy_per_rank.begin() + first_worker_rank_, report_.busy_per_rank.end()});
        return std::move(report_);
    }

    MPI_Comm comm_;
    const std::byte* in_;
    std::byte* out_;
    const task_kernel& kernel_;
    const farm_options& options_;
    const shared_setup& setup_;
    sampler& monitors_;
    std::vector<double> offsets_;  ///< per rank: its clock minus the farmer's (clock_offsets)
    int first_worker_rank_;                   ///< rank of worker 0: 0 when the farmer computes, else 1
    double t0_;
    farm_report report_;
    progress_reporter progress_;
    std::optional<calibration_result> learned_;      ///< from farm_options::schedule.learned: no calibration tasks
    farmer_session session_;
    own_worker own_;                                 ///< rank 0's own worker, when the farmer computes
    farmer_inbox inbox_;
    request_message message_;
    chunk delivering_;                    ///< the chunk whose results the message being handled carries
    const std::byte* results_ = nullptr;  ///< the results in the message being handled (null: in place already)
    std::size_t index_bytes_ = 0;         ///< their index, with results of any size
    following_payloads payloads_;          ///< results too large for their request, on their way
    following_payloads::payload* following_ = nullptr;  ///< while a message is handled: its results, when they follow into a buffer
    wire_buffer send_;                    ///< a reply that travels as one message, written here
    chunk written_ahead_;                      ///< send_ holds the assign of this chunk (write_ahead(); count 0: none)
    std::size_t written_ahead_bytes_ = 0;      ///< and its bytes
    std::vector<MPI_Request> pending_;    ///< inputs sent without blocking
    std::vector<int> pending_to_;         ///< beside pending_: the rank each goes to
    std::string results_missing_;         ///< on_worker_loss: results on their way that never came (the farm fails)
};

}  // namespace

farm_report run_farmer_side(MPI_Comm comm, int ranks, const std::byte* in, std::byte* out, const task_kernel& kernel,
                            const farm_options& options, const shared_setup& setup, std::unique_ptr<technique> policy,
                            double t0, sampler& monitors, std::vector<double> offsets, double round_trip) {
    return farmer_side(comm, ranks, in, out, kernel, options, setup, std::move(policy), t0, monitors, std::move(offsets),
                       round_trip)
        .run();
}

}  // namespace pfarm::detail
