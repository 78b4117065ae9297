// pfarm MPI engine: the MPI transport of a farmer_session (farmer_transport.hpp); farmer_session.hpp owns every rule:
// the barrier, parking, chunks in flight, reclaim, stragglers, stop, abort, records and metrics. This file only
// receives requests (and the results that follow one, without waiting for them: following_payloads), stores the
// results the session accepts, sends the replies it decides (the assign of the chunk known ahead written while it
// waits), and, when the rank computes, runs its own worker (own_worker.hpp), between two of whose tasks it serves
// the requests. With a side channel (protocol_options::side_channel) it polls the farm's messages and the channel in
// turn instead of blocking in a receive. With on_worker_loss nothing waits for a rank that may be dead: messages are
// received without blocking between the session's deadlines (a receive whose sender the session presumes lost is
// given up) and replies are sent without waiting.
#include "farmer_transport.hpp"

#include "messages.hpp"
#include "own_worker.hpp"
#include "results.hpp"
#include "wire.hpp"

#include "pfarm/mpi.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <list>
#include <thread>

namespace pfarm::detail {

namespace {

class farmer_transport {
public:
    farmer_transport(const farmer_ranks& ranks, farmer_session& session, const std::byte* in, std::byte* out,
                     const task_kernel& kernel, const shared_setup& setup, progress_mode progress, sampler& monitors,
                     double t0, const std::function<bool()>& side)
        : comm_(ranks.comm), in_(in), out_(out), kernel_(kernel), setup_(setup), offsets_(ranks.offsets),
          named_(ranks.named), first_(ranks.first), failure_names_rank_(ranks.failure_names_rank), t0_(t0),
          // Into a buffer of their own for the sink, or when part of them may be delivered already (stragglers: a
          // chunk re-executed), delivered once in; else in place, in out_.
          // Retry: a failed task's fill must not land over its later result.
          buffered_(kernel.streamed() || setup.config.stragglers ||
                    setup.config.task_errors == static_cast<std::int32_t>(task_error_rule::kind::retry)),
          may_lose_(ranks.may_lose), driver_ends_(ranks.driver_ends),
          progress_(progress, setup.config.tasks), session_(session),
          own_(kernel, setup, monitors, 0, [t0] { return now() - t0; }),
          inbox_(ranks.comm, ranks.reclaim, setup.config.gentle_wait != 0, may_lose_), side_(side),
          has_side_(static_cast<bool>(side)) {}

    farmer_transport_result run() {
        try {
            if (first_ == 0) own_.start(), serve_own();  // its first request is there at once
            while (!session_.over()) {
                if (own_.computing()) {
                    compute_own_task();
                    drain_messages();
                    if (has_side_) side_();
                    if (session_.deadline() <= clock()) on_timer();
                    continue;
                }
                serve_next();
            }
            finish_transport();
        } catch (const std::exception& e) {
            // The farmer itself failed (a calibration that cannot proceed, an MPI error, a sink that threw): every
            // worker is stopped, the one whose request was being handled included; the others as they ask, or, with
            // on_worker_loss, once presumed lost (the deadlines go on: a dead worker never asks).
            // Its own worker, when computing, finishes its chunk like a remote worker and is stopped by the
            // answer to its next request (a sink that throws while this rank computes: the farm would wait for it).
            own_.drop_requests();
            perform(session_.abort(e.what()));
            serve_own();
            while (!session_.over()) {
                if (own_.computing()) compute_own_task();
                else serve_next();
            }
            finish_transport();
        }
        farmer_transport_result r;
        outcome& o = r.result;
        const farm_outcome& f = session_.outcome();
        o.what = f.what;
        o.rank = f.what == farm_outcome::kind::farmer_failed || f.worker < 0 ? 0 : named_.at(static_cast<std::size_t>(f.worker));
        o.task = f.task;
        o.text = f.what == farm_outcome::kind::worker_failed || f.what == farm_outcome::kind::worker_lost
                     ? "rank " + std::to_string(o.rank) + ": " + f.text
                     : f.text;
        if (o.what == farm_outcome::kind::ok && !results_missing_.empty()) {
            o.what = farm_outcome::kind::worker_lost;
            o.text = results_missing_;
        }
        if (may_lose_) {  // no collective: a rank may be gone (on_worker_loss)
            o.lost = lost_ranks();
            r.lost_in_comm = lost_in_comm();
            if (!driver_ends_) end_among_living(comm_, o, r.lost_in_comm);
        } else {
            end_traffic(comm_, true, setup_.config.gentle_wait != 0);  // what workers sent after their abort, dropped
            share_outcome(comm_, o);
        }
        r.requests = requests_;
        return r;
    }

private:
    double clock() const { return now() - t0_; }

    /// The next message, or the session's timer when it is due first: a blocking receive where the session has no
    /// deadline and there is no side channel (every message's path without stragglers, on_worker_loss or a side
    /// channel), else polled between the deadlines, the side channel polled while nothing comes.
    void serve_next() {
        const double due = session_.deadline();  // stragglers: workers wait for a chunk to become overdue
        if (due == std::numeric_limits<double>::infinity() && !has_side_) {  // every message's path without one
            handle(*inbox_.next(true));
        } else if (const received_message* m = inbox_.next(false)) {
            handle(*m);
            idle_polls_ = 0;
        } else if (clock() >= due) {
            on_timer();
        } else if (has_side_) {
            wait_on_side(due);
        } else if (setup_.config.gentle_wait != 0) {  // more ranks than cores: the core is another's meanwhile
            std::this_thread::sleep_for(std::chrono::duration<double>(std::min(due - clock(), 1e-4)));
        }  // else polled again at once, as a blocking receive would
    }

    void on_timer() {
        perform(session_.on_timer(clock()));
        serve_own();
        // A message on its way from a worker the session now presumes lost will not come whole (its sender died
        // after it was matched): its receive is given up (farmer_inbox::abandon_from).
        if (may_lose_ && !session_.lost().empty())
            inbox_.abandon_from([this](int rank) {
                return std::find(session_.lost().begin(), session_.lost().end(), rank - first_) != session_.lost().end();
            });
    }

    void drain_messages() {
        while (const received_message* m = inbox_.next(false)) handle(*m);
    }

    /// No farm message waits: the side channel is polled; when nothing came there either, after 200 quick polls the
    /// farmer pauses, from 2 us growing to 0.5 ms (not past `due`), so that a farmer that waits long frees its core.
    void wait_on_side(double due) {
        if (side_()) {
            idle_polls_ = 0;
            return;
        }
        if (++idle_polls_ <= 200) return;
        const double pause = std::min(2e-6 * std::pow(2.0, std::min(idle_polls_ - 200, 8)), 5e-4);
        std::this_thread::sleep_for(std::chrono::duration<double>(std::min(due - clock(), pause)));
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
            if (message_.what == request_message::kind::failure || message_.what == request_message::kind::task_error)
                read_text(m, rank - first_);
            results_ = m.data + request_payload_offset;
            index_bytes_ = static_cast<std::size_t>(h.index_bytes);
            if (h.results_follow) {  // too large to travel in the request: they follow, received without blocking
                const auto bytes = static_cast<std::size_t>(h.results_bytes);
                results_ = nullptr;
                if (buffered_)
                    following_ = &payloads_.receive(bytes, rank, comm_, h.first, index_bytes_);
                else
                    payloads_.receive_in_place(out_ + static_cast<std::size_t>(h.first) * kernel_.out_bytes, bytes, rank, comm_);
            }
            if (message_.what == request_message::kind::ask) ++requests_;
            // The replies that may go before the results are accounted go first (the session's rule), the rest after.
            perform(session_.receive(rank - first_, message_));  // it reads the clock if it must
            perform(session_.settle());
            following_ = nullptr;
            write_ahead(session_.upcoming(rank - first_));
            serve_own();
            if (!payloads_.empty()) payloads_.complete(false, [this](const auto& p) { deliver_following(p); });
        } catch (...) {
            following_ = nullptr;
            inbox_.release();
            throw;
        }
        inbox_.release();
    }

    /// The text of worker w's failure or task error, in message `m`; a failure may carry the rank it names first
    /// (ranks.failure_names_rank): the first failure is the farm's, so the rank of one that comes while the farm
    /// aborts is not kept.
    void read_text(const received_message& m, int w) {
        std::size_t at = request_payload_offset;
        const std::size_t bytes = m.bytes();
        if (failure_names_rank_ && message_.what == request_message::kind::failure) {
            std::int64_t failed = named_.at(static_cast<std::size_t>(w));
            if (bytes >= at + failure_rank_bytes) std::memcpy(&failed, m.data + at, failure_rank_bytes);
            if (!session_.aborting()) named_[static_cast<std::size_t>(w)] = static_cast<int>(failed);
            at += failure_rank_bytes;
        }
        message_.text.assign(reinterpret_cast<const char*>(m.data + std::min(bytes, at)), bytes - std::min(bytes, at));
    }

    /// Results that followed their request, in now: delivered as the session said when the request was handled.
    void deliver_following(const following_payloads::payload& p) {
        if (session_.aborting()) return;  // the farm failed: nobody's results are kept, and a sink that threw is not called again
        for (const chunk& c : p.deliveries) deliver_from(c, p.buffer.data(), p.index_bytes, p.first);
    }

    /// The results of `c` to the sink or into out_, from `data`, which holds results from task `first` on (a
    /// delivery may be part of its message's chunk: stragglers, a failed task left out).
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
                if (a.worker + first_ == 0) own_.on_reply(a.reply);
                else send(a.worker + first_, a.reply);
            }
        }
        if (!deliver) return;
        for (const farmer_action& a : actions) {
            if (a.what != farmer_action::kind::deliver) continue;
            const bool own = a.worker + first_ == 0;
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
        if (may_lose_) [[unlikely]] return send_without_waiting(rank, r);
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
            pending_bytes_.emplace_back();
            mpi::check(MPI_Isend(in_ + static_cast<std::size_t>(r.work.first) * kernel_.in_bytes, static_cast<int>(payload),
                                 MPI_BYTE, rank, tag_inputs, comm_, &pending_.back()),
                       "MPI_Isend");
            if (pending_.size() >= 64) complete_sends(false);
        }
    }

    /// send() where a rank may be dead (on_worker_loss): a blocking send larger than MPI's eager size waits for its
    /// receiver, for ever if it died after asking. The reply is copied and sent without waiting; complete_sends() drops
    /// it once sent, and lets go of those to ranks presumed lost.
    void send_without_waiting(int rank, const reply_message& r) {
        std::size_t bytes = encode_into_send(r);
        const bool inputs_follow = bytes == 0;
        if (inputs_follow) {
            reply_header h = encode(r);
            h.inputs_follow = 1;
            send_.reserve(sizeof h);
            std::memcpy(send_.data(), &h, sizeof h);
            bytes = sizeof h;
            written_ahead_ = {};
        }
        pending_.emplace_back();
        pending_to_.push_back(rank);
        pending_bytes_.emplace_back(send_.data(), send_.data() + bytes);
        mpi::check(MPI_Isend(pending_bytes_.back().data(), static_cast<int>(bytes), MPI_BYTE, rank, tag_reply, comm_,
                             &pending_.back()),
                   "MPI_Isend");
        if (inputs_follow) {
            pending_.emplace_back();
            pending_to_.push_back(rank);
            pending_bytes_.emplace_back();  // from in_, which outlives the farm
            mpi::check(MPI_Isend(in_ + static_cast<std::size_t>(r.work.first) * kernel_.in_bytes, static_cast<int>(payload_of(r)),
                                 MPI_BYTE, rank, tag_inputs, comm_, &pending_.back()),
                       "MPI_Isend");
        }
        if (pending_.size() >= 64) complete_sends(false);
    }

    /// The ranks presumed lost (on_worker_loss), as farmer_ranks::named names them.
    std::vector<int> lost_ranks() const {
        std::vector<int> ranks;
        for (int w : session_.lost()) ranks.push_back(named_.at(static_cast<std::size_t>(w)));
        return ranks;
    }

    /// The same as ranks of the communicator.
    std::vector<int> lost_in_comm() const {
        std::vector<int> ranks;
        for (int w : session_.lost()) ranks.push_back(w + first_);
        return ranks;
    }

    /// The sends made without blocking (inputs; with on_worker_loss, every reply): drops those delivered (`all`: waits
    /// for every one; those to a rank presumed lost are let go, never received, their bytes kept for the process's
    /// lifetime, since MPI may still read them).
    void complete_sends(bool all) {
        if (pending_.empty()) return;
        if (all && !session_.lost().empty()) {
            static std::list<std::vector<std::byte>> let_go;
            const std::vector<int> lost = lost_in_comm();
            for (std::size_t i = 0; i < pending_.size(); ++i)
                if (std::find(lost.begin(), lost.end(), pending_to_[i]) != lost.end()) {
                    mpi::check(MPI_Request_free(&pending_[i]), "MPI_Request_free");
                    if (!pending_bytes_[i].empty()) let_go.push_back(std::move(pending_bytes_[i]));
                }
        }
        if (all) {
            mpi::check(MPI_Waitall(static_cast<int>(pending_.size()), pending_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
            pending_.clear();
            pending_to_.clear();
            pending_bytes_.clear();
            return;
        }
        int done = 0;
        std::vector<int> indices(pending_.size());
        mpi::check(MPI_Testsome(static_cast<int>(pending_.size()), pending_.data(), &done, indices.data(), MPI_STATUSES_IGNORE),
                   "MPI_Testsome");
        std::size_t kept = 0;  // pending_to_ and pending_bytes_ beside pending_
        for (std::size_t i = 0; i < pending_.size(); ++i)
            if (pending_[i] != MPI_REQUEST_NULL) {
                pending_[kept] = pending_[i], pending_to_[kept] = pending_to_[i];
                pending_bytes_[kept] = std::move(pending_bytes_[i]);
                ++kept;
            }
        pending_.resize(kept), pending_to_.resize(kept), pending_bytes_.resize(kept);
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
        if (!may_lose_) {
            payloads_.complete(true, arrived);
            return;
        }
        // A rank may be gone with its results on their way: waited for a slack's time at most, then the farm fails.
        const double slack = worker_loss_of(setup_.config).slack;
        const double until = clock() + slack;
        while (!payloads_.empty() && clock() < until) payloads_.complete(false, arrived);
        if (!payloads_.empty()) {
            payloads_.cancel();
            results_missing_ = "results that followed their request did not arrive within " + std::to_string(slack) +
                               " s (a rank lost with its results on their way); rerun with the journal to compute what "
                               "is missing";
        }
    }

    // --- this rank's own worker (it computes) ------------------------------------------------------------

    void serve_own() {
        if (first_ != 0) return;  // this rank does not compute: no own worker to serve (every message's path)
        own_.serve([this](const request_message& m) {
            delivering_ = m.done;
            perform(session_.on_message(0, m));
        });
    }

    /// Its own worker's next task: computed in place in out_, or into its own buffer when results are streamed
    /// (delivered from there when the session accepts them).
    void compute_own_task() {
        const task_count i = own_.next();
        own_.compute_one(in_ + static_cast<std::size_t>(i) * kernel_.in_bytes,
                         kernel_.streamed() ? nullptr : out_ + static_cast<std::size_t>(i) * kernel_.out_bytes,
                         [this] { drain_messages(); });
        serve_own();
    }

    MPI_Comm comm_;
    const std::byte* in_;
    std::byte* out_;
    const task_kernel& kernel_;
    const shared_setup& setup_;
    std::vector<double> offsets_;  ///< per rank: its clock minus this rank's
    std::vector<int> named_;       ///< per session worker: the rank its failure names (farmer_ranks::named)
    int first_;                    ///< rank of worker 0: 0 when this rank computes, else 1
    bool failure_names_rank_;
    double t0_;
    bool buffered_;                ///< results that follow their request go into a buffer of their own
    bool may_lose_;                ///< on_worker_loss: a rank may die; nothing waits for one (receives, replies)
    bool driver_ends_;             ///< the driver sends the outcome (farmer_ranks::driver_ends)
    progress_reporter progress_;
    farmer_session& session_;
    own_worker own_;               ///< this rank's own worker, when it computes
    farmer_inbox inbox_;
    request_message message_;
    task_count requests_ = 0;             ///< the asks received
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
    std::vector<std::vector<std::byte>> pending_bytes_;  ///< beside pending_: a reply's copy (on_worker_loss), or empty
    std::string results_missing_;         ///< on_worker_loss: results on their way that never came (the farm fails)
    const std::function<bool()>& side_;   ///< the caller's side channel (empty: none)
    bool has_side_;
    int idle_polls_ = 0;                  ///< with a side channel: polls in a row that found nothing
};

}  // namespace

void end_among_living(MPI_Comm comm, const outcome& o, const std::vector<int>& lost) {
    for (int rank : lost) {  // one presumed lost that lives and waits for a reply is told to stop
        reply_message stop;
        stop.what = reply_message::kind::stop;
        const reply_header h = encode(stop);
        std::vector<std::byte> bytes(sizeof h);
        std::memcpy(bytes.data(), &h, sizeof h);
        send_detached(comm, std::move(bytes), rank, tag_reply);
    }
    send_outcome(comm, o, lost);
}

farmer_transport_result run_farmer_transport(const farmer_ranks& ranks, farmer_session& session, const farm_run& run) {
    return farmer_transport(ranks, session, run.in, run.out, run.kernel, run.setup, run.options.output.progress,
                            run.monitors, run.t0, run.options.protocol.side_channel)
        .run();
}

}  // namespace pfarm::detail
