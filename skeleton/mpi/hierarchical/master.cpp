// pfarm MPI engine, the hierarchical farm: a master. The MPI transport of a master_session ("a worker session facing
// up and a farmer session facing down", master_session.hpp) between the supermaster (upper communicator, rank 0)
// and its group (group communicator: itself rank 0, its workers 1..n, each talking to it exactly as to a flat
// farmer). Every rule of the protocol is in the session; this file moves bytes and fills the buffers:
//   - each chunk the supermaster gives it has its buffers (chunk_buffers: its inputs, which go down in slices with
//     the replies its session decides, and its results), given to the session with the chunk's reply as the chunk's
//     attachment: the session's ledger (master_session.hpp) is the one list of the chunks it holds, and a chunk's
//     buffers are found through it (holding(task));
//   - its workers' results fill the buffers of the held chunks the session's deliver action names (a worker's chunk
//     may span two of them: the pool merges ranges that follow each other); results too large for their request
//     follow it and are received without blocking, stored once in (following_payloads), into the buffers their
//     deliveries named, which they keep (their chunk may have left the ledger meanwhile) and count as pending;
//   - the chunk's results go up in the message the session says (an `up` action with the chunk in `done`, its
//     buffers handed out with it as the chunk leaves the ledger): its next request with them, in one message, alone
//     (`results`, while later chunks are held), or its final results; a message up whose chunk still waits for
//     results on their way is held back, with the chunk's buffers, until they are in, and those after it behind it;
//   - a worker's failure goes up with the worker's task and text; this transport adds the worker's rank (the
//     session's failed_worker()), so that every rank throws what the flat farmer's ranks throw.
// With farm_options::topology.farmer_computes its own worker (own_worker.hpp) is worker 0 of its group, between two of whose
// tasks it serves the others.
// With on_worker_loss (docs/reliability.md "A lost worker") a worker of its group may die: as the flat farmer's
// transport does, its workers' messages come through the farmer's inbox without blocking (farmer_inbox: matched, then
// received into their own buffers), polled with the supermaster's reply between the session's deadlines (on_timer
// presumes silent workers lost, and their receives on their way are given up); replies go without waiting; a
// keep-alive goes up while its chunks are out in its group longer than half the slack (master_session.hpp), so that
// the supermaster, which presumes a silent master lost, does not presume it lost; and the farm ends point to point:
// the ranks it lost go up, the outcome comes down from rank 0 with every lost rank, and goes on to its group's living
// ranks (send_outcome).
#include "hierarchical.hpp"

#include "farmer_transport.hpp"
#include "messages.hpp"
#include "own_worker.hpp"
#include "results.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <thread>

namespace pfarm::detail {

namespace {

/// A master: the MPI transport of a master_session, between the supermaster (upper communicator, rank 0) and its
/// group (group communicator: itself rank 0, its workers 1..n). When it computes, its own worker is worker 0 of its
/// group (`workers` starts with its own rank) and the others are their group rank.
class master_side {
public:
    master_side(MPI_Comm up, MPI_Comm down, int rank, const std::byte* in, const task_kernel& kernel,
                const shared_setup& setup, std::vector<int> workers, std::unique_ptr<technique> policy,
                const master_session_options& options, double t0, const std::vector<double>& offsets, sampler& monitors)
        : up_(up), down_(down), rank_(rank), in_(in), kernel_(kernel), setup_(setup), workers_(std::move(workers)),
          first_(workers_.front() == rank ? 0 : 1), t0_(t0), clock_offset_(offsets.at(static_cast<std::size_t>(rank))),
          session_(static_cast<int>(workers_.size()), std::move(policy), options),
          inputs_travel_(!setup.config.replicated && kernel.in_bytes > 0), may_lose_(setup.config.worker_loss != 0) {
        for (int r : workers_) offsets_.push_back(offsets.at(static_cast<std::size_t>(r)));
        if (may_lose_) inbox_ = std::make_unique<farmer_inbox>(down, setup.config.reclaim != 0, setup.config.gentle_wait != 0, true);
        if (first_ == 0) own_.emplace(kernel, setup, monitors, rank, [this] { return clock(); });
    }

    outcome run() {
        post();
        try {
            perform(session_.start(clock()));
            if (own_) own_->start(), serve_own();
            while (!session_.over()) {
                if (own_ && own_->computing()) {  // a task, then the messages that came meanwhile
                    compute_own_task();
                    drain();
                    continue;
                }
                step();
            }
            finish_following();  // the last results on their way, and the messages up that wait for them
        } catch (const std::exception& e) {  // the master itself failed: its group is aborted, the failure goes up
            if (own_) own_->drop_requests();
            store_following_ = false;  // the farm fails: results still on their way are not kept
            perform(session_.abort(e.what()));
            while (!session_.over()) step();
            finish_following();
        }
        const bool gentle = setup_.config.gentle_wait != 0;
        if (may_lose_) return end_living(gentle);
        sends_.complete(true);
        for (posted_receive* p : {&reply_, &answer_, &request_}) p->cancel();
        end_traffic(down_, true, gentle);  // what its workers sent after their abort, dropped
        end_traffic(up_, false, gentle);
        outcome o;
        share_outcome(up_, o);    // rank 0's verdict...
        share_outcome(down_, o);  // ...for the group
        return o;
    }

    const farmer_session& session_group() const noexcept { return session_.group(); }

    /// Its group's part of the report (report.cpp).
    report_part part() const { return group_part(session_, workers_, served_); }

private:
    /// Rank 0's clock, read here.
    double clock() const { return now() - t0_ - clock_offset_; }

    /// The world ranks of its workers presumed lost, in the order they were.
    std::vector<int> lost_ranks() const {
        std::vector<int> ranks;
        for (int w : session_.lost()) ranks.push_back(workers_.at(static_cast<std::size_t>(w)));
        return ranks;
    }

    /// The same as ranks of its group's communicator.
    std::vector<int> lost_in_group() const {
        std::vector<int> ranks;
        for (int w : session_.lost()) ranks.push_back(w + first_);
        return ranks;
    }

    /// With on_worker_loss, the end of its farm, point to point (a master may be lost): the ranks of its group it
    /// presumed lost go to rank 0, which sends back the outcome with every lost rank (supermaster.cpp), and the
    /// outcome goes to its group's living ranks (a stop first to each one presumed lost, in case it lives and waits
    /// for a reply).
    outcome end_living(bool gentle) {
        sends_.let_go(lost_in_group());
        sends_.complete(true);
        reply_.cancel();
        inbox_->close();
        const std::vector<int> lost = lost_ranks();
        mpi::check(MPI_Send(lost.data(), static_cast<int>(lost.size()), MPI_INT, 0, tag_lost, up_), "MPI_Send");
        outcome o;
        receive_outcome(up_, o, gentle);  // (a stop or a reply that crossed its end, dropped)
        end_among_living(down_, o, lost_in_group());  // as the flat farmer ends
        return o;
    }

    void post() {
        reply_.post(up_, 0, tag_reply);
        requests_[0] = reply_.request();
        if (may_lose_) return;  // its workers' messages come through the inbox
        if (setup_.config.reclaim) {
            answer_.post(down_, MPI_ANY_SOURCE, tag_released);
            requests_[1] = answer_.request();
        }
        request_.post(down_, MPI_ANY_SOURCE, tag_request);
        requests_[2] = request_.request();
    }

    /// The next message (next(true)); while its workers' results are on their way it polls for them too, and stores
    /// those that come, sending the messages up that waited for them: blocking on messages alone could wait for a
    /// worker that waits, through the supermaster, for one of those messages up.
    void step() {
        while (!payloads_.empty()) {
            if (next(false)) return;
            progress_following(false);
            if (setup_.config.gentle_wait) std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
        next(true);
    }

    /// The messages that have come, handled, and the results on their way that have come, stored.
    void drain() {
        while (next(false)) {}
        if (!payloads_.empty()) progress_following(false);
    }

    /// The next message: the supermaster's reply first (it refills the pool), then a victim's answer (a thief waits
    /// for it), then whatever comes. Not `block`: false at once when none has come.
    bool next(bool block) {
        if (may_lose_) [[unlikely]] return next_or_timer(block);
        MPI_Status status;
        int index = -1;
        for (int i = 0; i < 2 && index < 0; ++i) {
            if (requests_[i] == MPI_REQUEST_NULL) continue;  // no victim's answer is awaited without reclaim
            int flag = 0;
            mpi::check(MPI_Test(&requests_[i], &flag, &status), "MPI_Test");
            if (flag) index = i;
        }
        if (index < 0) index = wait_any(3, requests_, status, block, setup_.config.gentle_wait != 0);
        if (index < 0) return false;
        posted_receive& p = index == 0 ? reply_ : index == 1 ? answer_ : request_;
        p.request() = MPI_REQUEST_NULL;
        p.completed(status);
        if (index == 0) take_reply();
        else take_request(p, index == 1 ? tag_released : tag_request, index);
        after_message();
        return true;
    }

    /// next() with on_worker_loss: the supermaster's reply first, then its workers' messages from the inbox, else the
    /// session's timer once its deadline has passed, polled (not `block`: false at once when none of them is due).
    bool next_or_timer(bool block) {
        for (;;) {
            if (requests_[0] != MPI_REQUEST_NULL) {
                MPI_Status status;
                int flag = 0;
                mpi::check(MPI_Test(&requests_[0], &flag, &status), "MPI_Test");
                if (flag) {
                    reply_.request() = MPI_REQUEST_NULL;
                    reply_.completed(status);
                    take_reply();
                    after_message();
                    return true;
                }
            }
            if (const received_message* m = inbox_->next(false)) {
                try {
                    take_message(m->source, m->data, m->bytes());
                } catch (...) {
                    inbox_->release();
                    throw;
                }
                inbox_->release();
                after_message();
                return true;
            }
            if (clock() >= session_.deadline()) {
                on_timer();
                after_message();
                return true;
            }
            if (!block) return false;
            if (setup_.config.gentle_wait) std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
    }

    /// The session's timer: its workers silent past their deadline are presumed lost, and the messages on their way
    /// from them given up (farmer_inbox::abandon_from); results that were to follow a request of theirs will not come.
    void on_timer() {
        perform(session_.on_timer(clock()));
        if (session_.lost().empty()) return;
        const std::vector<int> lost = lost_in_group();
        inbox_->abandon_from([&](int rank) { return std::find(lost.begin(), lost.end(), rank) != lost.end(); });
        for (const awaited& a : awaited_)  // (once the farm fails nothing of them is kept: they are given up at the end)
            if (store_following_ && std::find(lost.begin(), lost.end(), a.source) != lost.end() && !a.into.empty())
                throw error("hierarchical farm: rank " + std::to_string(workers_.at(static_cast<std::size_t>(a.source - first_))) +
                            " was presumed lost with its results on their way; rerun with the journal to compute what is "
                            "missing");
    }

    /// What follows each message: sends complete dropped, results on their way stored.
    void after_message() {
        sends_.complete(false);
        if (!payloads_.empty()) progress_following(false);
    }

    /// Its own worker's next task, its input from the chunk of the pool that holds it (or the caller's input), its
    /// results into its own buffer (stored into their chunks when the session accepts them).
    void compute_own_task() {
        const task_count i = own_->next();
        const std::byte* input = nullptr;
        if (inputs_travel_) {
            const held_chunk& c = holding(session_, rank_, i);
            input = buffers(c).inputs->data() + static_cast<std::size_t>(i - c.work.first) * kernel_.in_bytes;
        } else {
            input = in_ + static_cast<std::size_t>(i) * kernel_.in_bytes;  // replicated, or an index range
        }
        own_->compute_one(input, nullptr, [this] { drain(); });
        serve_own();
    }

    /// Its own worker's requests, to the session (worker 0), with their results in its own buffer.
    void serve_own() {
        if (!own_) return;
        own_->serve([this](const request_message& m) {
            payload_ = own_->results().payload();
            index_bytes_ = own_->results().index_bytes();
            payload_first_ = m.done.first;
            perform(session_.on_message(0, m, clock()));
        });
    }

    /// The supermaster's reply: a chunk's buffers (its inputs for the group, room for its results) go to the session
    /// with it; the receive is posted again before the session acts (its actions may send up, and the supermaster
    /// may be sending the next reply meanwhile).
    void take_reply() {
        reply_header h;
        std::memcpy(&h, reply_.data(), sizeof h);
        const reply_message r = decode(h);
        std::shared_ptr<chunk_buffers> c;
        if (r.what == reply_message::kind::assign) try {
            c = std::make_shared<chunk_buffers>();
            if (inputs_travel_) {
                const std::size_t bytes = static_cast<std::size_t>(r.work.count) * kernel_.in_bytes;
                c->inputs = std::make_shared<wire_buffer>();
                c->inputs->reserve(bytes);
                if (h.inputs_follow)
                    mpi::check(MPI_Recv(c->inputs->data(), static_cast<int>(bytes), MPI_BYTE, 0, tag_inputs, up_, MPI_STATUS_IGNORE),
                               "MPI_Recv");
                else
                    std::memcpy(c->inputs->data(), reply_.data() + reply_payload_offset, bytes);
            }
            c->results = std::make_shared<wire_buffer>();
            if (kernel_.variable()) c->variable.resize(static_cast<std::size_t>(r.work.count));
            else c->results->reserve(request_payload_offset + static_cast<std::size_t>(r.work.count) * kernel_.out_bytes);
        } catch (...) {  // the abort that follows still comes this way
            reply_.post(up_, 0, tag_reply);
            requests_[0] = reply_.request();
            throw;
        }
        reply_.post(up_, 0, tag_reply);
        requests_[0] = reply_.request();
        perform(session_.on_reply(r, clock(), std::move(c)));
    }

    /// A worker's message (a request, or a victim's answer); its receive is posted again once it is handled.
    void take_request(posted_receive& p, int tag, int index) {
        try {
            take_message(p.source(), p.data(), p.bytes());
        } catch (...) {
            p.post(down_, MPI_ANY_SOURCE, tag);
            requests_[index] = p.request();
            throw;
        }
        p.post(down_, MPI_ANY_SOURCE, tag);
        requests_[index] = p.request();
    }

    /// The message `data` (`bytes` long) from group rank `source`, to the session.
    void take_message(int source, const std::byte* data, std::size_t bytes) {
        try {
            const int worker = source - first_;
            request_header h;
            std::memcpy(&h, data, sizeof h);
            decode(h, offsets_.at(static_cast<std::size_t>(worker)), message_);
            if (message_.what == request_message::kind::failure || message_.what == request_message::kind::task_error) {
                const auto* text = reinterpret_cast<const char*>(data + request_payload_offset);
                message_.text.assign(text, bytes - request_payload_offset);
            }
            payload_ = data + request_payload_offset;
            index_bytes_ = static_cast<std::size_t>(h.index_bytes);
            payload_first_ = message_.done.first;
            if (h.results_follow) {  // too large to travel in the request: they follow, received without blocking
                following_ = &payloads_.receive(static_cast<std::size_t>(h.results_bytes), source, down_, h.first,
                                                index_bytes_);
                awaited_.push_back({following_, {}, source});
                payload_ = nullptr;
            }
            if (message_.what == request_message::kind::ask) ++served_;
            perform(session_.on_message(worker, message_, clock()));
        } catch (...) {
            following_ = nullptr;
            throw;
        }
    }

    /// The replies to workers first (they wait), then the results into their chunks' buffers (or, when they follow
    /// the message, once in), then the messages up (one may carry the chunk just completed: it waits for results
    /// still on their way). Its own worker's replies are handed to it, and its requests to the session once these
    /// actions are done.
    void perform(const std::vector<master_action>& actions) {
        for (const master_action& a : actions) {
            if (a.what != master_action::kind::send) continue;
            if (a.worker + first_ == 0) own_->on_reply(a.reply);
            else send_down(a.worker, a.reply);
        }
        for (const master_action& a : actions) {
            if (a.what != master_action::kind::deliver) continue;
            if (following_) {
                following_->deliveries.push_back(a.results);
                awaited_.back().into.push_back(a.into);  // they keep the chunks' buffers until the results are in
                for (const held_chunk& h : a.into) ++buffers(h).pending;
            } else {
                // a.results may be part of the message's chunk (a failed task left out: on_task_error retry)
                store_results(kernel_, rank_, a.results, a.into, payload_, index_bytes_, payload_first_);
            }
        }
        following_ = nullptr;  // its own worker's requests (serve_own) carry their results in its own buffer
        for (const master_action& a : actions)
            if (a.what == master_action::kind::up) up(a.message, a.attachment);
        serve_own();
    }

    /// A message up goes now, unless the chunk whose results it carries still waits for some, or a message before it
    /// waits: messages up go in the order the session says.
    void up(const request_message& m, const chunk_attachment& attachment) {
        auto* results = static_cast<chunk_buffers*>(attachment.get());
        if (m.what == request_message::kind::failure && may_lose_) {
            // The farm fails: the failure goes at once, not behind results that may wait for a lost worker's (what
            // waited is of no use once the supermaster aborts the farm).
            waiting_up_.clear();
            send_up(m, nullptr);
            return;
        }
        if (waiting_up_.empty() && (!results || results->pending == 0)) send_up(m, results);
        else waiting_up_.push_back({m, std::static_pointer_cast<chunk_buffers>(attachment)});
    }

    /// Results that followed their request and have come are stored (all: waits for every one), and the messages
    /// up that waited for them go.
    void progress_following(bool all) {
        payloads_.complete(all, [this](const following_payloads::payload& p) {
            const auto w = std::find_if(awaited_.begin(), awaited_.end(), [&](const awaited& a) { return a.payload == &p; });
            if (w == awaited_.end())
                throw internal_error("hierarchical farm: rank " + std::to_string(rank_) + " got results it did not await");
            const std::vector<std::vector<held_chunk>> into = std::move(w->into);
            awaited_.erase(w);  // first: no entry outlives its payload, whatever happens below
            for (std::size_t i = 0; i < p.deliveries.size(); ++i) {
                if (store_following_) store_results(kernel_, rank_, p.deliveries[i], into.at(i), p.buffer.data(), p.index_bytes, p.first);
                for (const held_chunk& h : into.at(i)) --buffers(h).pending;
            }
        });
        while (!waiting_up_.empty() && (!waiting_up_.front().results || waiting_up_.front().results->pending == 0)) {
            send_up(waiting_up_.front().message, waiting_up_.front().results.get());
            waiting_up_.pop_front();
        }
    }

    /// The results still on their way once the farm is over, and the messages up that wait for them. With
    /// on_worker_loss a payload of a worker presumed lost may never come: those whose results were not kept (its
    /// messages after it was presumed lost) are waited for a slack's time at most, then given up.
    void finish_following() {
        if (!may_lose_) {
            progress_following(true);
            return;
        }
        const double until = clock() + worker_loss_of(setup_.config).slack;
        while (!payloads_.empty() && clock() < until) {
            progress_following(false);
            if (setup_.config.gentle_wait) std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
        if (payloads_.empty()) return;
        for (const awaited& a : awaited_)
            if (store_following_ && !a.into.empty())
                throw error("hierarchical farm: results that followed their request did not arrive within " +
                            std::to_string(worker_loss_of(setup_.config).slack) + " s (rank " +
                            std::to_string(workers_.at(static_cast<std::size_t>(a.source - first_))) +
                            " lost with its results on their way); rerun with the journal to compute what is missing");
        payloads_.cancel();
        awaited_.clear();
    }

    /// A message up held back, with the buffers of the chunk whose results it carries (none: it carries none).
    struct waiting {
        request_message message;
        std::shared_ptr<chunk_buffers> results;
    };

    /// A payload of results on its way, and per delivery from it the held chunks it goes into.
    struct awaited {
        const following_payloads::payload* payload = nullptr;
        std::vector<std::vector<held_chunk>> into;
        int source = -1;  ///< its sender's group rank
    };

    /// A reply to worker `worker` of the group, with its inputs; sent without blocking when it carries them, so that
    /// a worker still computing does not hold up the master.
    void send_down(int worker, const reply_message& r) {
        reply_header h = encode(r);
        const int to = worker + first_;
        const std::size_t payload =
            r.what == reply_message::kind::assign && inputs_travel_ ? static_cast<std::size_t>(r.work.count) * kernel_.in_bytes : 0;
        if (payload == 0 && !may_lose_) {
            mpi::check(MPI_Send(&h, sizeof h, MPI_BYTE, to, tag_reply, down_), "MPI_Send");
            return;
        }
        if (payload == 0) {  // on_worker_loss: nothing waits for a rank that may be dead
            auto header = std::make_shared<wire_buffer>();
            header->put(h);
            MPI_Request request;
            mpi::check(MPI_Isend(header->data(), sizeof h, MPI_BYTE, to, tag_reply, down_, &request), "MPI_Isend");
            sends_.add(request, std::move(header), to);
            return;
        }
        std::shared_ptr<wire_buffer> keep;
        const std::byte* inputs = inputs_of(session_, rank_, kernel_, r.work, keep);
        MPI_Request request;
        if (reply_payload_offset + payload <= inline_capacity) {
            auto message = std::make_shared<wire_buffer>();
            message->reserve(reply_payload_offset + payload);
            std::memcpy(message->data(), &h, sizeof h);
            std::memcpy(message->data() + reply_payload_offset, inputs, payload);
            mpi::check(MPI_Isend(message->data(), static_cast<int>(reply_payload_offset + payload), MPI_BYTE, to, tag_reply,
                                 down_, &request),
                       "MPI_Isend");
            sends_.add(request, std::move(message), to);
            return;
        }
        h.inputs_follow = 1;
        auto header = std::make_shared<wire_buffer>();
        header->put(h);
        mpi::check(MPI_Isend(header->data(), sizeof h, MPI_BYTE, to, tag_reply, down_, &request), "MPI_Isend");
        sends_.add(request, std::move(header), to);
        mpi::check(MPI_Isend(inputs, static_cast<int>(payload), MPI_BYTE, to, tag_inputs, down_, &request), "MPI_Isend");
        sends_.add(request, std::move(keep), to);
    }

    /// A message to the supermaster; with the results of its chunk `m.done` when it carries them, from that chunk's
    /// buffers `results` (they follow without blocking when they do not fit in it).
    void send_up(const request_message& m, const chunk_buffers* results) {
        request_header h = encode(m);
        if (m.what == request_message::kind::failure) {
            const int failed = session_.failed_worker();
            const std::int64_t who = failed >= 0 ? workers_.at(static_cast<std::size_t>(failed)) : rank_;
            const std::size_t text = std::min(m.text.size(), inline_capacity - request_payload_offset - failure_rank_bytes);
            failure_.reserve(request_payload_offset + failure_rank_bytes + text);
            std::memcpy(failure_.data(), &h, sizeof h);
            std::memcpy(failure_.data() + request_payload_offset, &who, failure_rank_bytes);
            std::memcpy(failure_.data() + request_payload_offset + failure_rank_bytes, m.text.data(), text);
            mpi::check(MPI_Send(failure_.data(), static_cast<int>(request_payload_offset + failure_rank_bytes + text), MPI_BYTE,
                                0, tag_request, up_),
                       "MPI_Send");
            return;
        }
        if (m.done.count == 0) {
            mpi::check(MPI_Send(&h, sizeof h, MPI_BYTE, 0, tag_request, up_), "MPI_Send");
            return;
        }
        if (!results)
            throw internal_error("hierarchical farm: rank " + std::to_string(rank_) + " sends up the results of [" +
                                 std::to_string(m.done.first) + ", +" + std::to_string(m.done.count) + ") without their buffers");
        std::shared_ptr<wire_buffer> buffer = results->results;
        std::size_t bytes = static_cast<std::size_t>(m.done.count) * kernel_.out_bytes;
        if (kernel_.variable()) {  // the index of sizes, then each task's bytes at a multiple of the alignment (farm.hpp)
            std::size_t index = 0;
            bytes = pack_variable(kernel_, *results, m.done.count, index);
            h.index_bytes = static_cast<std::int64_t>(index);
        }
        h.results_bytes = static_cast<std::int64_t>(bytes);
        // With on_worker_loss they travel in it whatever their size, as a worker's do (worker_side.cpp): rank 0
        // receives each message whole, and nothing of a master lost on the way is left to wait for.
        if (request_payload_offset + bytes <= inline_capacity || may_lose_) {
            std::memcpy(buffer->data(), &h, sizeof h);
            mpi::check(MPI_Send(buffer->data(), static_cast<int>(request_payload_offset + bytes), MPI_BYTE, 0, tag_request, up_),
                       "MPI_Send");
            return;
        }
        h.results_follow = 1;
        mpi::check(MPI_Send(&h, sizeof h, MPI_BYTE, 0, tag_request, up_), "MPI_Send");
        MPI_Request request;
        mpi::check(MPI_Isend(buffer->data() + request_payload_offset, static_cast<int>(bytes), MPI_BYTE, 0, tag_results, up_,
                             &request),
                   "MPI_Isend");
        sends_.add(request, std::move(buffer));
    }

    MPI_Comm up_, down_;
    int rank_;
    const std::byte* in_;          ///< the caller's input (read by its own worker with replicated input or an index range)
    const task_kernel& kernel_;
    const shared_setup& setup_;
    std::vector<int> workers_;     ///< its workers' ranks: worker i is rank i + first_ of the group communicator
    int first_;                    ///< 0 when it computes (its own worker is worker 0), else 1
    std::vector<double> offsets_;  ///< per worker: its clock minus rank 0's
    double t0_, clock_offset_;           ///< its own clock's offset from rank 0's
    master_session session_;
    std::optional<own_worker> own_;  ///< its own worker, when it computes
    bool inputs_travel_;
    bool may_lose_;                       ///< on_worker_loss: a worker of its group may die; nothing waits for one
    std::unique_ptr<farmer_inbox> inbox_;  ///< on_worker_loss: its workers' messages (else answer_ and request_)
    posted_receive reply_, answer_, request_;
    MPI_Request requests_[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};  ///< reply, answer, request
    request_message message_;
    const std::byte* payload_ = nullptr;  ///< the results in the worker's message being handled
    std::size_t index_bytes_ = 0;
    task_count payload_first_ = 0;        ///< the first task whose results payload_ holds
    following_payloads payloads_;         ///< its workers' results too large for their request, on their way
    following_payloads::payload* following_ = nullptr;  ///< while a worker's message is handled: its results, when they follow
    std::vector<awaited> awaited_;        ///< the payloads of payloads_, with the buffers their deliveries go into
    std::deque<waiting> waiting_up_;      ///< messages up held back for results on their way, in order
    bool store_following_ = true;         ///< false once the master failed: results still on their way are not kept
    wire_buffer failure_;
    pending_sends sends_;
    task_count served_ = 0;
};

}  // namespace

farm_report run_master(const farm_run& run, MPI_Comm up, MPI_Comm down, const rank_layout& h, const hierarchy_plan& plan,
                       int g, const std::vector<double>& offsets) {
    const shared_setup& setup = run.setup;
    master_side m(up, down, run.rank, run.in, run.kernel, setup, h.members.at(static_cast<std::size_t>(g)),
                  plan.make_group(g), plan.session_options(g), run.t0, offsets, run.monitors);
    const outcome o = m.run();
    if (o.what != farm_outcome::kind::ok) throw_outcome(o);
    send_group_part(up, m.part(), setup.config.worker_loss != 0);
    farm_report r = group_report(run.options, run.ranks, setup.config.tasks, h, g, m.session_group());
    r.lost_ranks = o.lost;  // every group's (on_worker_loss)
    return r;
}

}  // namespace pfarm::detail
