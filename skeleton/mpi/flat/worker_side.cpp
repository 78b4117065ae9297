// pfarm MPI engine: a worker rank's side, the MPI transport of a worker_session (worker_session.hpp owns
// every rule: prefetch, later, stop, reclaim, failure). This file only receives replies, computes chunks task by
// task (with emulated slowdown), reads the monitors a request must carry, and sends.
// A worker of a hierarchical group with on_worker_loss (`above`: the farm's communicator) may outlive its master: its
// sends to its master and its waits for it then also look for the outcome rank 0 sends it on `above` when it presumes
// the master lost (supermaster.cpp), and with it the worker ends; what it had on its way to the dead master is let
// go (its buffers kept for the process's lifetime, since MPI may still read them).
#include "engine.hpp"
#include "messages.hpp"
#include "quota_time.hpp"
#include "results.hpp"
#include "wire.hpp"

#include "pfarm/mpi.hpp"
#include "pfarm/worker_session.hpp"

#include <chrono>
#include <memory>
#include <thread>

namespace pfarm::detail {

namespace {

/// The outcome rank 0 sent this worker, whose master it presumed lost: the farm is over for it.
struct orphaned {
    outcome result;
};

void sleep_for(double seconds) { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); }

class worker_side {
public:
    worker_side(MPI_Comm comm, int rank, const std::byte* in, const task_kernel& kernel, const shared_setup& setup,
                double t0, sampler& monitors, double round_trip, MPI_Comm above)
        : comm_(comm), above_(above), rank_(rank), in_(in), kernel_(kernel), setup_(setup), t0_(t0), monitors_(monitors),
          session_({.prefetch = setup.config.prefetch != 0,
                    .prefetch_lead = 2.0 * round_trip,
                    .readings_each = setup.config.readings_each != 0,
                    .readings_calibration = setup.config.readings_calibration != 0,
                    // A reply without inputs is a header: sent without waiting for its receive, it cannot deadlock
                    // with results sent while it comes (worker_session_options::results_early).
                    .results_early = setup.config.replicated != 0 || kernel.in_bytes == 0}) {
        reply_.reserve(inline_capacity);
    }

    farm_report run(const farm_options& options, int ranks) {
        report_ = empty_report(options, ranks, setup_.config.tasks);
        outcome o;
        try {
            perform(session_.start());
            while (!session_.ended()) {
                if (session_.computing()) compute();
                else receive_one();
            }
            finish_transport();
            if (setup_.config.worker_loss != 0) receive_final_outcome(o);
        } catch (const orphaned& x) {  // its master was presumed lost: rank 0 told it the outcome
            o = x.result;
            abandoned_ = true;
            answer_alive(o);
        }
        if (setup_.config.worker_loss != 0) {  // no collective: a rank may be gone (on_worker_loss)
            report_.lost_ranks = o.lost;  // every rank knows: what follows the farm must not wait for them
        } else {
            end_traffic(comm_, false, setup_.config.gentle_wait != 0);  // its farmer (or master) drops what crossed the abort
            share_outcome(comm_, o);
        }
        if (o.what != farm_outcome::kind::ok) throw_outcome(o);
        return std::move(report_);
    }

private:
    double clock() const { return now() - t0_; }

    /// Receives the farmer's next message and hands it to the session. A reclaim is answered with the chunk's
    /// progress (`next` the first task not started; the session ignores it when nothing is being computed).
    void receive_one(task_count next = 0) {
        if (above_ != MPI_COMM_NULL) [[unlikely]] {
            MPI_Request r;
            mpi::check(MPI_Irecv(reply_.data(), static_cast<int>(inline_capacity), MPI_BYTE, 0, tag_reply, comm_, &r), "MPI_Irecv");
            wait_or_orphaned(r);
        } else if (setup_.config.gentle_wait != 0) {
            MPI_Status status;
            receive(comm_, 0, tag_reply, reply_, true, true, status);
        } else {  // every reply's path: one MPI_Recv into the buffer
            mpi::check(MPI_Recv(reply_.data(), static_cast<int>(inline_capacity), MPI_BYTE, 0, tag_reply, comm_, MPI_STATUS_IGNORE),
                       "MPI_Recv");
        }
        take(next);
    }

    /// The reply just received into reply_ goes to the session. Its inputs stay in its buffer, which becomes their
    /// slot's (the slot's goes back to receiving replies: no copy), or are received into their slot when they follow it.
    void take(task_count next) {
        reply_header h;
        std::memcpy(&h, reply_.data(), sizeof h);
        const reply_message r = decode(h);
        const bool own_inputs = r.what == reply_message::kind::assign && inputs_travel_;
        if (plain_ && r.what == reply_message::kind::assign && !session_.computing()) {
            // Nothing happens between two tasks and nothing is held: the chunk is computed now, its inputs read where
            // they arrived (in the reply, or received into slot 0), and the next reply is received once its request
            // has gone.
            perform(session_.on_reply(r));
            if (!session_.computing()) return;
            const std::byte* inputs = in_ + static_cast<std::size_t>(r.work.first) * kernel_.in_bytes;
            if (own_inputs) inputs = h.inputs_follow ? receive_inputs(0, r.work) : reply_.data() + reply_payload_offset;
            compute_plain(inputs);
            return;
        }
        if (own_inputs) {
            const int i = free_slot();
            if (h.inputs_follow) {
                receive_inputs(i, r.work);
                slot_offset_[i] = 0;
            } else {
                std::swap(inputs_[i], reply_);
                reply_.reserve(inline_capacity);  // the next reply is received into it
                slot_offset_[i] = reply_payload_offset;
            }
            slot_first_[i] = r.work.first;
        }
        if (r.what == reply_message::kind::reclaim) {
            const chunk c = session_.current();
            const double spt = next > c.first ? (clock() - started_) / static_cast<double>(next - c.first) : 0.0;
            perform(session_.on_reclaim(r, next, spt));
        } else {
            perform(session_.on_reply(r));
        }
    }

    /// The inputs of chunk `c`, too large to travel in its reply, received into slot `i`; returns where they are.
    const std::byte* receive_inputs(int i, chunk c) {
        const std::size_t bytes = static_cast<std::size_t>(c.count) * kernel_.in_bytes;
        inputs_[i].reserve(bytes);
        if (above_ != MPI_COMM_NULL) [[unlikely]] {
            MPI_Request r;
            mpi::check(MPI_Irecv(inputs_[i].data(), static_cast<int>(bytes), MPI_BYTE, 0, tag_inputs, comm_, &r), "MPI_Irecv");
            wait_or_orphaned(r);
            return inputs_[i].data();
        }
        mpi::check(MPI_Recv(inputs_[i].data(), static_cast<int>(bytes), MPI_BYTE, 0, tag_inputs, comm_, MPI_STATUS_IGNORE),
                   "MPI_Recv");
        return inputs_[i].data();
    }

    /// The input slot not holding the chunk being computed (with prefetch, one chunk computes while the next
    /// one's inputs arrive).
    int free_slot() const { return session_.computing() && slot_first_[0] == session_.current().first ? 1 : 0; }

    const std::byte* inputs_of(const chunk& c) const {
        if (!inputs_travel_) return in_ + static_cast<std::size_t>(c.first) * kernel_.in_bytes;
        for (int i = 0; i < 2; ++i)
            if (slot_first_[i] == c.first) return inputs_[i].data() + slot_offset_[i];
        throw internal_error("farm: rank " + std::to_string(rank_) + " has no inputs for its chunk");
    }

    /// Inlined: on a chunk's path the compiler then sees which actions the session can give there (after a reply:
    /// none to send), which keeps a round trip's instructions at what they are without the loss paths.
    [[gnu::always_inline]] void perform(worker_session::actions actions) {
        for (const worker_action& a : actions)  // a compute action: run() sees session_.computing()
            if (a.what == worker_action::kind::send && !send(a)) return;  // the session's slots now hold its failure
    }

    /// The readings a request must carry, into `h`. A monitor that fails is not a task's fault: the farm stops
    /// with its message (performed here), and false is returned.
    [[gnu::noinline]] bool read_monitors(request_header& h, bool calibration) {
        std::string failed;
        try {
            h.sample = to_wire(monitors_.read(calibration));
            return true;
        } catch (const std::exception& e) {
            failed = e.what();
        }
        perform(session_.on_failure(-1, failed));
        return false;
    }

    bool send(const worker_action& a) { return send(a.message, a.readings, a.calibration); }

    /// Sends request m, with the readings first when `readings` (false: a monitor failed, and the failure went
    /// instead). Results travel in it when they fit (one message: its header is written in place before them), else
    /// they follow on tag_results, sent without blocking from the results buffer, which is not reused until that
    /// send is complete. With on_worker_loss they always travel in it, whatever their size: the farmer receives each
    /// message whole into a buffer of its own (farmer_inbox), so that a worker that dies while its results are on
    /// their way leaves a request that never came, and its chunk goes to the others, not a request whose results
    /// never follow.
    bool send(const request_message& m, bool readings, bool calibration) {
        // The chunk's results, computed in place after the header's room in results_[current_], go with it.
        chunk_results& results = results_[current_];
        const bool with_results = m.what != request_message::kind::released && m.what != request_message::kind::failure &&
                                  m.what != request_message::kind::task_error && m.done.count > 0;
        const std::size_t bytes = with_results ? results.bytes(m.done.count) : 0;
        const bool fits = request_payload_offset + bytes <= inline_capacity || setup_.config.worker_loss != 0;
        if (!with_results || !fits) return send_header_alone(m, readings, calibration, bytes);
        // Every chunk's request: its header default-constructed in place before the results, one message.
        request_header& h = *::new (static_cast<void*>(results.buffer().data())) request_header;
        encode_into(h, m);
        if (readings && !read_monitors(h, calibration)) return false;
        h.results_bytes = static_cast<std::int64_t>(bytes);
        h.index_bytes = static_cast<std::int64_t>(results.index_bytes());
        send_to_farmer(results.buffer().data(), static_cast<int>(request_payload_offset + bytes), tag_request);
        return true;
    }

    /// send() for a request whose header goes alone: a victim's answer, a failure (its text after it), a request
    /// without results, or one whose results (`bytes`) follow it. Out of line: the chunk's path is send()'s.
    [[gnu::noinline]] bool send_header_alone(const request_message& m, bool readings, bool calibration, std::size_t bytes) {
        request_header& h = *::new (static_cast<void*>(&header_)) request_header;
        encode_into(h, m);
        if (readings && !read_monitors(h, calibration)) return false;
        if (m.what == request_message::kind::released) {
            send_to_farmer(&h, sizeof h, tag_released);
            return true;
        }
        if (m.what == request_message::kind::failure || m.what == request_message::kind::task_error) {
            // the text, cut to what one message carries
            const std::size_t text = std::min(m.text.size(), inline_capacity - request_payload_offset);
            failure_.reserve(request_payload_offset + text);
            std::memcpy(failure_.data(), &h, sizeof h);
            std::memcpy(failure_.data() + request_payload_offset, m.text.data(), text);
            send_to_farmer(failure_.data(), static_cast<int>(request_payload_offset + text), tag_request);
            return true;
        }
        if (m.done.count == 0) {
            send_to_farmer(&h, sizeof h, tag_request);
            return true;
        }
        chunk_results& results = results_[current_];
        h.results_bytes = static_cast<std::int64_t>(bytes);
        h.index_bytes = static_cast<std::int64_t>(results.index_bytes());
        h.results_follow = 1;
        mpi::check(MPI_Send(&h, sizeof h, MPI_BYTE, 0, tag_request, comm_), "MPI_Send");
        mpi::check(MPI_Isend(results.payload(), static_cast<int>(bytes), MPI_BYTE, 0, tag_results, comm_, &sending_[current_]),
                   "MPI_Isend");
        current_ = 1 - current_;  // the next chunk computes into the other buffer
        return true;
    }

    /// Computes the session's current chunk into results_ (its payload), answering reclaims between tasks, paying
    /// emulated slowdown, asking ahead (prefetch).
    void compute() {
        const chunk c = session_.current();
        chunk_results& results = start_chunk(c);
        const std::byte* inputs = inputs_of(c);
        started_ = clock();
        quota_.begin(), quota_.mark();
        double owed = 0.0;  // emulated slowdown: sleep owed, paid in slices of >= 1 ms
        // The chunk's end moves only when a reclaim takes tasks back, which needs listening.
        for (task_count task = c.first; task < session_.current().first + session_.current().count; ++task) {
            const auto i = static_cast<std::size_t>(task - c.first);
            const double task_start = emulated_ ? clock() : 0.0;
            if (!run_task(results, task, i, inputs)) return;
            if (emulated_) {
                owed += setup_.emulated.owed(rank_, task_start, clock() - task_start);
                if (owed >= 1e-3) sleep_for(owed), owed = 0.0;
            }
            // Results sent ahead move only while this rank is in MPI where there is no single-copy transport: a
            // test per task keeps them going while it computes (the farmer receives them without waiting).
            if (sending_[0] != MPI_REQUEST_NULL || sending_[1] != MPI_REQUEST_NULL) progress_sends();
            if (task + 1 == session_.ask_at()) perform(session_.on_boundary(task + 1));  // prefetch: ask ahead now
            // Between two tasks: a reclaim, or a cancel (stragglers), may come.
            if (listen_ && task + 1 < session_.current().first + session_.current().count) {
                answer_messages(task + 1);  // one MPI_Iprobe per task
                // Aborted, or cancelled: computing nothing, or the chunk asked ahead from its start.
                if (!session_.computing() || session_.current().first != c.first) return;
            }
        }
        if (owed > 0.0) sleep_for(owed);
        end_chunk(session_.current());
    }

    /// compute() where nothing happens between two tasks (plain_), from `inputs`: the round trip's path, kept apart so
    /// that it stays short (docs/performance.md).
    void compute_plain(const std::byte* inputs) {
        const chunk c = session_.current();
        chunk_results& results = start_chunk(c);
        started_ = clock();
        quota_.begin(), quota_.mark();
        for (task_count i = 0; i < c.count; ++i) {
            if (!run_task(results, c.first + i, static_cast<std::size_t>(i), inputs)) return;
            if (sending_[0] != MPI_REQUEST_NULL || sending_[1] != MPI_REQUEST_NULL) progress_sends();
        }
        end_chunk(c);
    }

    /// The results buffer for chunk `c`, ready (its results of two chunks ago, if still on their way, waited for).
    [[gnu::always_inline]] chunk_results& start_chunk(chunk c) {
        if (sending_[current_] != MPI_REQUEST_NULL)
            mpi::check(MPI_Wait(&sending_[current_], MPI_STATUS_IGNORE), "MPI_Wait");
        chunk_results& results = results_[current_];
        results.begin(kernel_, c.count);
        return results;
    }

    /// Runs task `task`, the chunk's `i`-th, on its input in `inputs`; false when the chunk must not go on (a task threw
    /// and the farm fails: task_failed).
    bool run_task(chunk_results& results, task_count task, std::size_t i, const std::byte* inputs) {
        try {
            results.run(task, static_cast<task_count>(i), inputs + i * kernel_.in_bytes);
            return true;
        } catch (const std::exception& e) {
            return task_failed(results, task, i, e.what());
        } catch (...) {
            return task_failed(results, task, i, "unknown exception");
        }
    }

    /// A task of the chunk threw: the farm fails, and false is returned; with on_task_error retry or skip, its results
    /// become the fill, the session reports it, and the chunk goes on (true). Out of line, off the task loop.
    [[gnu::noinline]] bool task_failed(chunk_results& results, task_count task, std::size_t i, const char* what) {
        if (setup_.config.task_errors != 0) {
            results.fill(static_cast<task_count>(i));
            perform(session_.on_task_error(task, what));
            return !session_.ended();
        }
        perform(session_.on_failure(task, what));
        return false;
    }

    /// Chunk `done` has been computed (started_ is when it started): the session's request goes, with the chunk's time
    /// under its CPU quota if it has one (quota_time.hpp), then the report's counts.
    [[gnu::always_inline]] void end_chunk(chunk done) {
        const double finished = clock();
        const double busy = finished - started_;
        quota_.add();
        perform(session_.on_chunk_done(quota_.seconds(busy), started_, finished));
        const auto q = static_cast<std::size_t>(rank_);  // the report's counts, once the request has gone
        report_.tasks_per_rank[q] += done.count;
        report_.chunks_per_rank[q].push_back(done.count);
        report_.busy_per_rank[q] += busy;
    }

    /// Between two tasks: the farmer's messages that have come (a reclaim, a reply asked ahead, an abort).
    void answer_messages(task_count next) {
        MPI_Status status;
        while (receive(comm_, 0, tag_reply, reply_, false, false, status)) take(next);
    }

    /// Lets the results on their way move on (MPI_Test: completes them when they are through).
    [[gnu::noinline]] void progress_sends() {
        for (MPI_Request& r : sending_) {
            if (r == MPI_REQUEST_NULL) continue;
            int flag = 0;
            mpi::check(MPI_Test(&r, &flag, MPI_STATUS_IGNORE), "MPI_Test");
        }
    }

    /// The farm is over for this rank: its results have all arrived.
    void finish_transport() { mpi::check(MPI_Waitall(2, sending_, MPI_STATUSES_IGNORE), "MPI_Waitall"); }

    /// A message to its farmer (or master): a blocking send, or, when its master may be lost (`above`), one that also
    /// ends when rank 0 tells it the outcome.
    void send_to_farmer(const void* data, int bytes, int tag) {
        if (above_ == MPI_COMM_NULL) [[likely]] {
            mpi::check(MPI_Send(data, bytes, MPI_BYTE, 0, tag, comm_), "MPI_Send");
            return;
        }
        send_to_master(data, bytes, tag);
    }

    /// send_to_farmer() where its master may be lost (out of line: the chunk's path is the plain send).
    [[gnu::noinline]] void send_to_master(const void* data, int bytes, int tag) {
        MPI_Request r;
        mpi::check(MPI_Isend(data, bytes, MPI_BYTE, 0, tag, comm_, &r), "MPI_Isend");
        wait_or_orphaned(r);
    }

    /// Waits for `r` (to or from its master); throws orphaned when rank 0's outcome comes on `above` first (its master
    /// was presumed lost), `r` let go (its buffer is this object's, which is then kept: run_worker_side).
    void wait_or_orphaned(MPI_Request& r) {
        for (;;) {
            int done = 0;
            mpi::check(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test");
            if (done) return;
            orphaned x;
            if (try_receive_outcome(above_, x.result, false)) {
                mpi::check(MPI_Request_free(&r), "MPI_Request_free");
                throw x;
            }
            if (setup_.config.gentle_wait != 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
    }

    /// With on_worker_loss, the outcome once its farm is over: from its farmer (or master), or, when its master may
    /// be lost (`above`), from whichever of its master and rank 0 sends it first.
    void receive_final_outcome(outcome& o) {
        if (above_ == MPI_COMM_NULL) return receive_outcome(comm_, o, setup_.config.gentle_wait != 0);
        for (;;) {
            if (try_receive_outcome(comm_, o, true)) return;
            if (try_receive_outcome(above_, o, false)) return answer_alive(o);
            if (setup_.config.gentle_wait != 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
    }

    /// Rank 0 sent this worker, whose master it presumed lost, the outcome: it says it lives (rank 0 names the workers
    /// that do not: lost with their master), and takes the final outcome that follows.
    void answer_alive(outcome& o) {
        const int alive = 1;
        mpi::check(MPI_Send(&alive, 1, MPI_INT, 0, tag_alive, above_), "MPI_Send");
        while (!try_receive_outcome(above_, o, false))
            if (setup_.config.gentle_wait != 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }

public:
    /// Rank 0 ended its farm while something of it was on its way to or from its dead master (orphaned).
    bool abandoned() const noexcept { return abandoned_; }

private:

    MPI_Comm comm_;
    MPI_Comm above_;  ///< where rank 0 sends the outcome when it presumes its master lost (MPI_COMM_NULL: never)
    bool abandoned_ = false;
    int rank_;
    const std::byte* in_;
    const task_kernel& kernel_;
    const shared_setup& setup_;
    double t0_;
    sampler& monitors_;
    request_header header_;  ///< a request whose header goes alone (send())
    worker_session session_;
    farm_report report_;
    wire_buffer reply_;               ///< the farmer's reply being handled
    chunk_results results_[2];        ///< a chunk's results; two, so one can be sent while the next computes
    MPI_Request sending_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int current_ = 0;                 ///< the results buffer of the chunk computed next
    wire_buffer failure_;
    wire_buffer inputs_[2];                 ///< a chunk's inputs; with prefetch the next one's arrive in the other
    task_count slot_first_[2] = {-1, -1};   ///< the first task of the chunk each holds
    std::size_t slot_offset_[2] = {0, 0};   ///< where its inputs start: after the reply's header when it was the reply
    double started_ = 0.0;
    quota_time quota_{setup_.quota_cores};  ///< the chunk's CPU time, under a CPU quota
    const bool listen_ = setup_.config.reclaim != 0 || setup_.config.stragglers != 0;  ///< reads the farmer's messages between two tasks (a reclaim, a cancel may come)
    const bool emulated_ = setup_.emulated.active();  ///< pays emulated slowdown per task
    /// Nothing happens between two tasks (no reclaim, no stragglers, no emulated slowdown, no prefetch): a chunk is
    /// computed as its reply comes (compute_plain).
    const bool plain_ = !listen_ && !emulated_ && setup_.config.prefetch == 0;
    const bool inputs_travel_ = !setup_.config.replicated && kernel_.in_bytes > 0;  ///< an assign carries its inputs
};

}  // namespace

farm_report run_worker_side(const farm_run& run, MPI_Comm comm, MPI_Comm above) {
    auto side = std::make_unique<worker_side>(comm, run.rank, run.in, run.kernel, run.setup, run.t0, run.monitors,
                                              run.round_trip, above);
    try {
        farm_report r = side->run(run.options, run.ranks);
        if (side->abandoned()) (void)side.release();  // MPI may still read its buffers: kept for the process's lifetime
        return r;
    } catch (...) {
        if (side->abandoned()) (void)side.release();
        throw;
    }
}

}  // namespace pfarm::detail
