// pfarm MPI engine, the hierarchical farm: rank 0, the supermaster. The MPI transport of a farmer_session (the
// hierarchy plan's, pfarm/hierarchy_plan.hpp) whose workers are the masters, with its own technique
// (farm_options::topology.master_technique; default pfarm::default_master_technique, options pfarm::master_options), on the
// upper communicator (rank 0 and the masters, in rank order). With farm_options::topology.farmer_computes it computes too,
// as the flat farmer does: its own worker (own_worker.hpp) is worker 0 of its session, one more unit beside the
// masters (a group of one: its chunks come from the supermaster's technique, weighted as one worker), between two
// of whose tasks it serves the masters. A master's failure message carries the failed rank (the worker's, or the
// master's own), so that every rank throws what the flat farmer's ranks throw.
#include "hierarchical.hpp"

#include "messages.hpp"
#include "own_worker.hpp"
#include "results.hpp"

#include <algorithm>
#include <optional>

namespace pfarm::detail {

namespace {

/// The supermaster: the MPI transport of a farmer_session over the masters (as farmer_side.cpp is over workers;
/// it never reclaims), and over its own worker (worker 0 of the session) when it computes. Results land in `out` or
/// go to the sink, as in the flat farm.
class supermaster {
public:
    supermaster(MPI_Comm up, const std::byte* in, std::byte* out, const task_kernel& kernel, const farm_options& options,
                const shared_setup& setup, const rank_layout& h, const hierarchy_plan& plan, double t0, sampler& monitors,
                bool keep_records)
        : up_(up), in_(in), out_(out), kernel_(kernel), setup_(setup), h_(h), plan_(plan), first_(1 - plan.own()),
          progress_(options.output.progress, setup.config.tasks),
          session_(setup.config.tasks, plan.units(), plan.make_top(),
                   session_options(plan, keep_records && h.computes, t0, task_errors_of(setup.config))),
          inbox_(up, false, setup.config.gentle_wait != 0) {
        if (h.computes) own_.emplace(kernel, setup, monitors, 0, [t0] { return now() - t0; });
    }

    outcome run() {
        try {
            if (own_) own_->start(), serve_own();
            while (!session_.over()) {
                if (own_ && own_->computing()) {  // a task, then the masters' messages that came meanwhile
                    compute_own_task();
                    drain();
                    continue;
                }
                handle(*inbox_.next(true));
            }
            // Results still on their way: received and delivered (a sink that throws fails the farm, as below).
            payloads_.complete(true, [this](const auto& p) { deliver_following(p); });
        } catch (const std::exception& e) {  // it failed itself (an MPI error): every master is aborted
            if (own_) own_->drop_requests();
            // Its own worker, when computing, finishes its chunk like a master's and is stopped by the answer to
            // its next request (a sink that throws while rank 0 computes: the farm would wait for it).
            perform(session_.abort(e.what()));
            while (!session_.over()) {
                if (own_ && own_->computing()) compute_own_task();
                else handle(*inbox_.next(true));
            }
        }
        payloads_.complete(true, [](const auto&) {});  // the farm failed: received, and nobody's results are kept
        sends_.complete(true);
        inbox_.close();
        end_traffic(up_, true, setup_.config.gentle_wait != 0);  // what the masters sent after their abort, dropped
        outcome o;
        const farm_outcome& f = session_.outcome();
        o.what = f.what;
        o.task = f.task;
        o.rank = f.what == farm_outcome::kind::farmer_failed ? 0 : failed_rank_;
        o.text = f.what == farm_outcome::kind::worker_failed ? "rank " + std::to_string(o.rank) + ": " + f.text : f.text;
        share_outcome(up_, o);
        return o;
    }

    const farmer_session& session() const noexcept { return session_; }
    task_count requests() const noexcept { return requests_; }

private:
    /// The plan's session over the masters, on rank 0's clock; it keeps records of its own worker's chunks only
    /// (the trace's rank 0).
    /// Its own worker's task errors go to it as any worker's (the masters handle their workers').
    static farmer_session_options session_options(const hierarchy_plan& plan, bool keep_records, double t0,
                                                  const task_error_rule& task_errors) {
        farmer_session_options o = plan.top_session();
        o.keep_records = keep_records;
        o.task_errors = task_errors;
        o.clock = [t0] { return now() - t0; };
        return o;
    }

    void drain() {
        while (const received_message* m = inbox_.next(false)) handle(*m);
    }

    /// Its own worker's next task (messages that come meanwhile handled between two tasks), then its requests.
    void compute_own_task() {
        const task_count i = own_->next();
        own_->compute_one(in_ + static_cast<std::size_t>(i) * kernel_.in_bytes,
                          kernel_.streamed() ? nullptr : out_ + static_cast<std::size_t>(i) * kernel_.out_bytes,
                          [this] { drain(); });
        serve_own();
    }

    /// Its own worker's requests, to the session (worker 0); the results of its chunk are in out_ already, or in its
    /// own buffer when they are streamed.
    void serve_own() {
        if (!own_) return;
        own_->serve([this](const request_message& m) {
            if (m.what == request_message::kind::failure && !session_.aborting()) failed_rank_ = 0;
            own_results_ = true;
            results_first_ = m.done.first;
            try {
                perform(session_.on_message(0, m));
            } catch (...) {
                own_results_ = false;
                throw;
            }
            own_results_ = false;
        });
    }

    void handle(const received_message& m) {
        request_header h;
        std::memcpy(&h, m.data, sizeof h);
        const int master = m.source - 1;  // rank 0 and the masters, in rank order, on the upper communicator
        decode(h, 0.0, message_);  // a master's times are on rank 0's clock already
        if (message_.what == request_message::kind::failure) {
            std::int64_t failed = h_.master.at(static_cast<std::size_t>(master));
            const std::size_t bytes = m.bytes();
            if (bytes >= request_payload_offset + failure_rank_bytes)
                std::memcpy(&failed, m.data + request_payload_offset, failure_rank_bytes);
            const auto* text = reinterpret_cast<const char*>(m.data + request_payload_offset + failure_rank_bytes);
            message_.text.assign(text, bytes - std::min(bytes, request_payload_offset + failure_rank_bytes));
            if (!session_.aborting()) failed_rank_ = static_cast<int>(failed);  // the first failure is the farm's
        }
        results_ = m.data + request_payload_offset;
        results_first_ = message_.done.first;
        index_bytes_ = static_cast<std::size_t>(h.index_bytes);
        if (h.results_follow) {  // too large to travel in the request: they follow, received without blocking
            const auto bytes = static_cast<std::size_t>(h.results_bytes);
            results_ = nullptr;
            if (kernel_.streamed())  // into a buffer of their own, delivered once in (farmer_side.cpp's rule)
                following_ = &payloads_.receive(bytes, m.source, up_, h.first, index_bytes_);
            else
                payloads_.receive_in_place(out_ + static_cast<std::size_t>(h.first) * kernel_.out_bytes, bytes, m.source, up_);
        }
        if (message_.what == request_message::kind::ask) ++requests_;
        try {
            perform(session_.on_message(master + plan_.own(), message_));
        } catch (...) {
            following_ = nullptr;
            throw;
        }
        following_ = nullptr;
        // Once the farm fails nobody's results are kept: a sink that failed is not called again (it would throw
        // again, out of the abort that must still stop every master).
        if (!payloads_.empty())
            payloads_.complete(false, [this](const auto& p) {
                if (!session_.aborting()) deliver_following(p);
            });
    }

    /// A master's results that followed its request, in now: streamed as the session said when it was handled.
    void deliver_following(const following_payloads::payload& p) {
        for (const chunk& c : p.deliveries)
            kernel_.deliver(view_of(kernel_, c.first, c.count, p.buffer.data(), p.index_bytes, p.first));
    }

    /// The replies first, then the results to store (farmer_side.cpp's order), then its own worker's requests.
    void perform(const std::vector<farmer_action>& actions) {
        for (const farmer_action& a : actions) {
            if (a.what != farmer_action::kind::send) continue;
            if (a.worker + first_ == 0) own_->on_reply(a.reply);
            else send(a.worker + first_, a.reply);
        }
        for (const farmer_action& a : actions) {
            if (a.what != farmer_action::kind::deliver) continue;
            if (own_results_) {  // computed in place in out_, or into its own buffer when streamed
                if (kernel_.streamed())
                    kernel_.deliver(view_of(kernel_, a.results.first, a.results.count, own_->results().payload(),
                                            own_->results().index_bytes(), results_first_));
            } else if (following_) {  // they follow the message: delivered once in
                following_->deliveries.push_back(a.results);
            } else if (kernel_.streamed())
                kernel_.deliver(view_of(kernel_, a.results.first, a.results.count, results_, index_bytes_, results_first_));
            else if (results_)  // (a delivery may be part of the message's chunk: a failed task left out, retry)
                std::memcpy(out_ + static_cast<std::size_t>(a.results.first) * kernel_.out_bytes,
                            results_ + static_cast<std::size_t>(a.results.first - results_first_) * kernel_.out_bytes,
                            static_cast<std::size_t>(a.results.count) * kernel_.out_bytes);
            progress_.update(session_.decisions().completed_tasks());
        }
        serve_own();
    }

    /// A reply to a master with its chunk's inputs; inputs too large to travel in it follow without blocking.
    void send(int to, const reply_message& r) {
        reply_header h = encode(r);
        std::size_t payload = 0;
        if (r.what == reply_message::kind::assign && !setup_.config.replicated)
            payload = static_cast<std::size_t>(r.work.count) * kernel_.in_bytes;
        const std::byte* inputs = in_ + static_cast<std::size_t>(r.work.first) * kernel_.in_bytes;
        if (payload == 0) {
            mpi::check(MPI_Send(&h, sizeof h, MPI_BYTE, to, tag_reply, up_), "MPI_Send");
        } else if (reply_payload_offset + payload <= inline_capacity) {
            send_.reserve(reply_payload_offset + payload);
            std::memcpy(send_.data(), &h, sizeof h);
            std::memcpy(send_.data() + reply_payload_offset, inputs, payload);
            mpi::check(MPI_Send(send_.data(), static_cast<int>(reply_payload_offset + payload), MPI_BYTE, to, tag_reply, up_),
                       "MPI_Send");
        } else {
            h.inputs_follow = 1;
            mpi::check(MPI_Send(&h, sizeof h, MPI_BYTE, to, tag_reply, up_), "MPI_Send");
            MPI_Request request;
            mpi::check(MPI_Isend(inputs, static_cast<int>(payload), MPI_BYTE, to, tag_inputs, up_, &request), "MPI_Isend");
            sends_.add(request, nullptr);  // the caller's input outlives the farm
        }
    }

    MPI_Comm up_;
    const std::byte* in_;
    std::byte* out_;
    const task_kernel& kernel_;
    const shared_setup& setup_;
    const rank_layout& h_;
    const hierarchy_plan& plan_;
    int first_;  ///< upper-communicator rank of the session's worker 0: 0 (its own worker) when it computes, else 1
    progress_reporter progress_;
    farmer_session session_;
    std::optional<own_worker> own_;      ///< rank 0's own worker, when it computes
    bool own_results_ = false;           ///< the message being handled is its own worker's
    farmer_inbox inbox_;
    request_message message_;
    const std::byte* results_ = nullptr;
    task_count results_first_ = 0;       ///< the first task whose results results_ (or its own worker's buffer) holds
    std::size_t index_bytes_ = 0;
    wire_buffer send_;
    following_payloads payloads_;                        ///< the masters' results too large for their request
    following_payloads::payload* following_ = nullptr;  ///< while a message is handled: its results, when they follow into a buffer
    pending_sends sends_;
    task_count requests_ = 0;
    int failed_rank_ = 0;
};

}  // namespace

farm_report run_supermaster(MPI_Comm up, int ranks, const std::byte* in, std::byte* out, const task_kernel& kernel,
                            const farm_options& options, const shared_setup& setup, const rank_layout& h,
                            const hierarchy_plan& plan, double t0, sampler& monitors, bool keep_records, double cpu0) {
    supermaster s(up, in, out, kernel, options, setup, h, plan, t0, monitors, keep_records);
    const outcome o = s.run();
    if (o.what != farm_outcome::kind::ok) throw_outcome(o);
    return gather_report(up, options, ranks, setup.config.tasks, h, s.session(), s.requests(), cpu0);
}

}  // namespace pfarm::detail
