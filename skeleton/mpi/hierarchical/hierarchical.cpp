// pfarm MPI engine: the hierarchical farm (farm_options::farmer = hierarchical; docs/hierarchical.md), the MPI
// transport of the core's sessions, as simulator_hierarchical.cpp is their transport in simulated time:
//
//   - rank 0, the supermaster: a farmer_session whose workers are the masters, with its own technique
//     (farm_options::master_technique; default pfarm::default_master_technique, options pfarm::master_options);
//   - K master ranks: a master_session each ("a worker session facing up and a farmer session facing down",
//     master_session.hpp);
//   - every other rank a worker: the flat farm's worker side, unchanged (worker_side.cpp), on its group's
//     communicator, where its master is rank 0: a worker talks to its master exactly as to a flat farmer.
// With farm_options::farmer_computes the supermaster and every master compute too, as the flat farmer does: each
// runs its own worker (own_worker.hpp) as worker 0 of its session, between two of whose tasks it serves the others.
// The supermaster's own worker is one more unit beside the masters (a group of one: its chunks come from the
// supermaster's technique, weighted as one worker); a master's is one more worker of its group.
//
// Grouping (plan_hierarchy, on rank 0 inside agree()): masters = K splits ranks 1..N-1 into K contiguous blocks,
// the first rank of each its master; masters = 0 gives one master per node (MPI_Comm_split_type with
// MPI_COMM_TYPE_SHARED). Two levels of communicators carry the traffic, one per group (its master is rank 0 there)
// and one over rank 0 and the masters, so that each level keeps the flat farm's tags and wire format (wire.hpp,
// messages.hpp) and no message of one level meets the other's.
//
// Every rule of the protocol is in the sessions; this file moves bytes and keeps the buffers:
//   - a master keeps the inputs of each chunk the supermaster gave it (they go down in slices, with the replies its
//     session decides) and a results buffer per chunk, which its workers' results fill as its session delivers them
//     (a worker's chunk may span two of them: the pool merges ranges that follow each other); results too large for
//     their request follow it and are received without blocking, stored once in (following_payloads);
//   - the chunk's results go up in the message the session says (an `up` action with the chunk in `done`): its
//     next request with them, in one message (seed 002, Remark 3), alone (`results`, while later chunks are held),
//     or its final results; a message up whose chunk still waits for results on their way is held back until they
//     are in, and those after it behind it;
//   - a worker's failure goes up with the worker's task and text; this transport adds the worker's rank (the
//     session's failed_worker()), so that every rank throws what the flat farmer's ranks throw.
// Times: every session runs on rank 0's clock (each rank's offset from clock_offsets, broadcast), so the groups'
// records and finish times and the supermaster's makespan compare. Once the outcome is known and good, each master
// sends its group's part of the report up to rank 0.
#include "engine.hpp"
#include "messages.hpp"
#include "own_worker.hpp"
#include "results.hpp"
#include "wire.hpp"

#include "pfarm/master_session.hpp"
#include "pfarm/metrics.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/registry.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <thread>

namespace pfarm::detail {

namespace {

/// Who is who, from each rank's group (shared_setup::group_of; -1: rank 0, the supermaster) and whether the
/// supermaster and the masters compute (farm_options::farmer_computes).
struct hierarchy {
    std::vector<int> group_of;
    bool computes = false;
    std::vector<int> master;                ///< per group: its master's rank, the lowest of the group
    /// per group: its workers' ranks, ascending (its master first when it computes: worker 0 of its session)
    std::vector<std::vector<int>> members;
    std::vector<int> worker_index;          ///< per rank: its index among every computing rank in rank order (-1: none)
    int workers = 0;

    int groups() const { return static_cast<int>(master.size()); }
    /// The supermaster's session: its own worker (when it computes) is its worker 0, master g its worker g + own().
    int own() const { return computes ? 1 : 0; }
    int units() const { return groups() + own(); }
    std::vector<int> sizes() const {
        std::vector<int> s;
        for (const auto& m : members) s.push_back(static_cast<int>(m.size()));
        return s;
    }
};

hierarchy hierarchy_of(const std::vector<int>& group_of, bool computes) {
    hierarchy h;
    h.group_of = group_of;
    h.computes = computes;
    int groups = 0;
    for (int g : group_of) groups = std::max(groups, g + 1);
    h.master.assign(static_cast<std::size_t>(groups), -1);
    h.members.resize(static_cast<std::size_t>(groups));
    h.worker_index.assign(group_of.size(), -1);
    for (int r = 0; r < static_cast<int>(group_of.size()); ++r) {
        const int g = group_of[static_cast<std::size_t>(r)];
        if (g < 0) {  // rank 0
            if (computes) h.worker_index[static_cast<std::size_t>(r)] = h.workers++;
            continue;
        }
        auto& master = h.master[static_cast<std::size_t>(g)];
        const bool first = master < 0;
        if (first) master = r;
        if (!first || computes) {
            h.members[static_cast<std::size_t>(g)].push_back(r);
            h.worker_index[static_cast<std::size_t>(r)] = h.workers++;
        }
    }
    return h;
}

/// A per-worker list (weights, times, run queues: one per computing rank, in rank order) for the computing ranks
/// `ranks`; empty stays empty.
std::vector<double> of_ranks(const std::vector<double>& list, const hierarchy& h, const std::vector<int>& ranks) {
    if (list.empty()) return list;
    std::vector<double> out;
    for (int r : ranks) out.push_back(list.at(static_cast<std::size_t>(h.worker_index[static_cast<std::size_t>(r)])));
    return out;
}

/// The workers' options for computing ranks `ranks` (their slice of the per-worker lists).
technique_options options_of(const technique_options& o, const hierarchy& h, const std::vector<int>& ranks) {
    technique_options s = o;
    s.weights = of_ranks(o.weights, h, ranks), s.times = of_ranks(o.times, h, ranks), s.run_queue = of_ranks(o.run_queue, h, ranks);
    return s;
}

/// The workers' options for group g.
technique_options group_options(const technique_options& o, const hierarchy& h, int g) {
    return options_of(o, h, h.members[static_cast<std::size_t>(g)]);
}

/// The supermaster's technique and options over its units: its own worker first when it computes (a group of one:
/// rank 0), then the masters (master_options over the groups, in group order).
struct top_plan {
    std::string name;
    technique_options options;
};

top_plan top_of(const std::string& technique, const std::string& master_technique, const technique_options& o,
                const hierarchy& h) {
    top_plan t;
    const bool defaulted = master_technique.empty();
    t.name = defaulted ? default_master_technique(technique) : master_technique;
    technique_options grouped = o;  // the per-worker lists in unit order: master_options reads units contiguously
    grouped.weights.clear(), grouped.times.clear(), grouped.run_queue.clear();
    std::vector<int> sizes;
    for (int u = 0; u < h.units(); ++u) {
        const int g = u - h.own();
        const technique_options s = g < 0 ? options_of(o, h, {0}) : group_options(o, h, g);
        grouped.weights.insert(grouped.weights.end(), s.weights.begin(), s.weights.end());
        grouped.times.insert(grouped.times.end(), s.times.begin(), s.times.end());
        grouped.run_queue.insert(grouped.run_queue.end(), s.run_queue.begin(), s.run_queue.end());
        sizes.push_back(g < 0 ? 1 : static_cast<int>(h.members[static_cast<std::size_t>(g)].size()));
    }
    t.options = master_options(grouped, sizes, t.name, defaulted);
    return t;
}

/// The loop size group g's technique starts with: the loop times its share of the units' weights.
task_count expected_share(task_count tasks, const top_plan& top, const hierarchy& h, int g) {
    double total = 0.0;
    for (double w : top.options.weights) total += w;
    const double share = top.options.weights.at(static_cast<std::size_t>(g + h.own())) / total;
    return std::max<task_count>(1, std::llround(static_cast<double>(tasks) * share));
}

/// A communicator this farm made (MPI_Comm_split), freed at the end.
struct owned_comm {
    MPI_Comm comm = MPI_COMM_NULL;
    owned_comm() = default;
    owned_comm(const owned_comm&) = delete;
    owned_comm& operator=(const owned_comm&) = delete;
    ~owned_comm() {
        if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    }
    void split(MPI_Comm parent, int color, int key) {
        mpi::check(MPI_Comm_split(parent, color, key, &comm), "MPI_Comm_split");
        if (comm != MPI_COMM_NULL) mpi::check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    }
};

/// Sends without blocking, keeping each buffer alive until its send is complete.
class pending_sends {
public:
    void add(MPI_Request r, std::shared_ptr<wire_buffer> keep) {
        sends_.push_back({r, std::move(keep)});
        if (sends_.size() >= 64) complete(false);
    }
    /// Drops the sends that are complete (`all`: waits for every one).
    void complete(bool all) {
        for (auto& s : sends_) {
            if (all) {
                mpi::check(MPI_Wait(&s.request, MPI_STATUS_IGNORE), "MPI_Wait");
            } else {
                int done = 0;
                mpi::check(MPI_Test(&s.request, &done, MPI_STATUS_IGNORE), "MPI_Test");
            }
        }
        std::erase_if(sends_, [](const send& s) { return s.request == MPI_REQUEST_NULL; });
    }

private:
    struct send {
        MPI_Request request;
        std::shared_ptr<wire_buffer> keep;
    };
    std::vector<send> sends_;
};

/// The readings a trace record keeps (trace.hpp: cores and node_key are not stored), in the order they are packed.
std::array<const std::optional<double>*, 5> readings_of(const resource_sample& s) {
    return {&s.availability, &s.run_queue, &s.load1, &s.latency, &s.benchmark};
}
std::array<std::optional<double>*, 5> readings_of(resource_sample& s) {
    return {&s.availability, &s.run_queue, &s.load1, &s.latency, &s.benchmark};
}

/// A master's failure message up carries, before the text, the rank whose failure it is (the worker's, or its own).
constexpr std::size_t failure_rank_bytes = sizeof(std::int64_t);

// ---- rank 0 --------------------------------------------------------------------------------------------------

/// The supermaster: the MPI transport of a farmer_session over the masters (as farmer_side.cpp is over workers;
/// it never reclaims), and over its own worker (worker 0 of the session) when it computes. Results land in `out` or
/// go to the sink, as in the flat farm.
class supermaster {
public:
    supermaster(MPI_Comm up, const std::byte* in, std::byte* out, const task_kernel& kernel, const farm_options& options,
                const shared_setup& setup, const hierarchy& h, const top_plan& top, double t0, sampler& monitors,
                bool keep_records)
        : up_(up), in_(in), out_(out), kernel_(kernel), setup_(setup), h_(h), first_(1 - h.own()),
          progress_(options.progress, setup.config.tasks),
          session_(setup.config.tasks, h.units(), make_technique(top.name, top.options, h.units()),
                   {.min_chunk = top.options.min_chunk,
                    .prefetch = true,
                    .depth = master_depth,  // a master holds up to this many chunks (master_session.hpp "Refill rule")
                    .reclaim = false,
                    .request_cost = 0.0,
                    .keep_records = keep_records && h.computes,  // its own worker's chunks (the trace's rank 0)
                    .stragglers = {},  // refused in a hierarchical farm (setup.cpp)
                    .clock = [t0] { return now() - t0; }}),
          inbox_(up, false, setup.config.gentle_wait != 0) {
        if (h.computes) own_.emplace(kernel, setup, monitors, 0, [t0] { return now() - t0; });
    }

    outcome run() {
        try {
            if (own_) own_->start(), serve_own();
            while (!session_.over()) {
                if (own_ && own_->computing()) {  // a task, then the masters' messages that came meanwhile
                    const task_count i = own_->next();
                    own_->compute_one(in_ + static_cast<std::size_t>(i) * kernel_.in_bytes,
                                      kernel_.streamed() ? nullptr : out_ + static_cast<std::size_t>(i) * kernel_.out_bytes,
                                      [this] { drain(); });
                    serve_own();
                    drain();
                    continue;
                }
                handle(*inbox_.next(true));
            }
            // Results still on their way: received and delivered (a sink that throws fails the farm, as below).
            payloads_.complete(true, [this](const auto& p) { deliver_following(p); });
        } catch (const std::exception& e) {  // it failed itself (an MPI error): every master is aborted
            if (own_) own_->drop_requests();
            perform(session_.abort(e.what()));
            while (!session_.over()) handle(*inbox_.next(true));
        }
        payloads_.complete(true, [](const auto&) {});  // the farm failed: received, and nobody's results are kept
        sends_.complete(true);
        inbox_.close();
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
    void drain() {
        while (const received_message* m = inbox_.next(false)) handle(*m);
    }

    /// Its own worker's requests, to the session (worker 0); the results of its chunk are in out_ already, or in its
    /// own buffer when they are streamed.
    void serve_own() {
        if (!own_) return;
        own_->serve([this](const request_message& m) {
            if (m.what == request_message::kind::failure && !session_.aborting()) failed_rank_ = 0;
            own_results_ = true;
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
            perform(session_.on_message(master + h_.own(), message_));
        } catch (...) {
            following_ = nullptr;
            throw;
        }
        following_ = nullptr;
        if (!payloads_.empty()) payloads_.complete(false, [this](const auto& p) { deliver_following(p); });
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
                                            own_->results().index_bytes()));
            } else if (following_) {  // they follow the message: delivered once in
                following_->deliveries.push_back(a.results);
            } else if (kernel_.streamed())
                kernel_.deliver(view_of(kernel_, a.results.first, a.results.count, results_, index_bytes_));
            else if (results_)
                std::memcpy(out_ + static_cast<std::size_t>(a.results.first) * kernel_.out_bytes, results_,
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
    const hierarchy& h_;
    int first_;  ///< upper-communicator rank of the session's worker 0: 0 (its own worker) when it computes, else 1
    progress_reporter progress_;
    farmer_session session_;
    std::optional<own_worker> own_;      ///< rank 0's own worker, when it computes
    bool own_results_ = false;           ///< the message being handled is its own worker's
    farmer_inbox inbox_;
    request_message message_;
    const std::byte* results_ = nullptr;
    std::size_t index_bytes_ = 0;
    wire_buffer send_;
    following_payloads payloads_;                        ///< the masters' results too large for their request
    following_payloads::payload* following_ = nullptr;  ///< while a message is handled: its results, when they follow into a buffer
    pending_sends sends_;
    task_count requests_ = 0;
    int failed_rank_ = 0;
};

// ---- a master ------------------------------------------------------------------------------------------------

/// A master: the MPI transport of a master_session, between the supermaster (upper communicator, rank 0) and its
/// group (group communicator: itself rank 0, its workers 1..n). When it computes, its own worker is worker 0 of its
/// group (`workers` starts with its own rank) and the others are their group rank.
class master_side {
public:
    master_side(MPI_Comm up, MPI_Comm down, int rank, const std::byte* in, const task_kernel& kernel,
                const shared_setup& setup, std::vector<int> workers, std::unique_ptr<technique> policy,
                const master_session_options& options, double t0, const std::vector<double>& offsets, sampler& monitors)
        : up_(up), down_(down), rank_(rank), in_(in), kernel_(kernel), setup_(setup), workers_(std::move(workers)),
          first_(workers_.front() == rank ? 0 : 1), t0_(t0), offset_(offsets.at(static_cast<std::size_t>(rank))),
          session_(static_cast<int>(workers_.size()), std::move(policy), options),
          inputs_travel_(!setup.config.replicated && kernel.in_bytes > 0) {
        for (int r : workers_) offsets_.push_back(offsets.at(static_cast<std::size_t>(r)));
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
            progress_following(true);  // the last results on their way, and the messages up that wait for them
        } catch (const std::exception& e) {  // the master itself failed: its group is aborted, the failure goes up
            if (own_) own_->drop_requests();
            store_following_ = false;  // the farm fails: results still on their way are not kept
            perform(session_.abort(e.what()));
            while (!session_.over()) step();
            progress_following(true);
        }
        sends_.complete(true);
        for (posted_receive* p : {&reply_, &answer_, &request_}) p->cancel();
        outcome o;
        share_outcome(up_, o);    // rank 0's verdict...
        share_outcome(down_, o);  // ...for the group
        return o;
    }

    const farmer_session& session_group() const noexcept { return session_.group(); }

    /// Its group's part of the report, packed for rank 0: per worker (rank, tasks, busy, finish, chunk sizes as runs:
    /// their count, then size and repeat of each), the
    /// reclaims, the requests its workers sent it, its own requests up and how many carried results, k, the records
    /// (with their readings).
    std::vector<double> packed() const {
        const farmer_session& g = session_.group();
        std::vector<double> v;
        v.push_back(static_cast<double>(workers_.size()));
        for (int w = 0; w < static_cast<int>(workers_.size()); ++w) {
            const auto& chunks = g.chunks_of(w);
            v.insert(v.end(), {static_cast<double>(workers_[static_cast<std::size_t>(w)]), static_cast<double>(g.tasks_of(w)),
                               g.busy_of(w), g.finish_of(w), static_cast<double>(chunks.runs().size())});
            for (const chunk_sizes::run& c : chunks.runs()) v.insert(v.end(), {static_cast<double>(c.size), static_cast<double>(c.repeat)});
        }
        const std::optional<double> k = g.decisions().policy().installment_factor();
        v.insert(v.end(), {static_cast<double>(g.decisions().reclaims()), static_cast<double>(g.decisions().reclaimed_tasks()),
                           static_cast<double>(served_), static_cast<double>(session_.up_requests()),
                           static_cast<double>(session_.merged_requests()), k ? 1.0 : 0.0, k.value_or(0.0),
                           static_cast<double>(g.records().size())});
        for (const chunk_trace& c : g.records()) {
            v.insert(v.end(), {static_cast<double>(workers_[static_cast<std::size_t>(c.rank)]), static_cast<double>(c.first),
                               static_cast<double>(c.count), c.sent, c.started, c.finished, c.received, c.calibration ? 1.0 : 0.0});
            for (const std::optional<double>* x : readings_of(c.sample)) v.insert(v.end(), {x->has_value() ? 1.0 : 0.0, x->value_or(0.0)});
        }
        return v;
    }

private:
    /// Rank 0's clock, read here.
    double clock() const { return now() - t0_ - offset_; }

    void post() {
        reply_.post(up_, 0, tag_reply);
        requests_[0] = reply_.request();
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
        sends_.complete(false);
        if (!payloads_.empty()) progress_following(false);
        return true;
    }

    /// Its own worker's next task, its input from the chunk of the pool that holds it (or the caller's input), its
    /// results into its own buffer (stored into their chunks when the session accepts them).
    void compute_own_task() {
        const task_count i = own_->next();
        const std::byte* input = nullptr;
        if (inputs_travel_) {
            const held& c = holding(i);
            input = c.inputs->data() + static_cast<std::size_t>(i - c.work.first) * kernel_.in_bytes;
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
            perform(session_.on_message(0, m, clock()));
        });
    }

    /// The supermaster's reply: a chunk's inputs are kept for the group; the receive is posted again before the
    /// session acts (its actions may send up, and the supermaster may be sending the next reply meanwhile).
    void take_reply() {
        reply_header h;
        std::memcpy(&h, reply_.data(), sizeof h);
        const reply_message r = decode(h);
        if (r.what == reply_message::kind::assign) try {
            held c;
            c.work = r.work;
            if (inputs_travel_) {
                const std::size_t bytes = static_cast<std::size_t>(r.work.count) * kernel_.in_bytes;
                c.inputs = std::make_shared<wire_buffer>();
                c.inputs->reserve(bytes);
                if (h.inputs_follow)
                    mpi::check(MPI_Recv(c.inputs->data(), static_cast<int>(bytes), MPI_BYTE, 0, tag_inputs, up_, MPI_STATUS_IGNORE),
                               "MPI_Recv");
                else
                    std::memcpy(c.inputs->data(), reply_.data() + reply_payload_offset, bytes);
            }
            c.results = std::make_shared<wire_buffer>();
            if (kernel_.variable()) c.variable.resize(static_cast<std::size_t>(r.work.count));
            else c.results->reserve(request_payload_offset + static_cast<std::size_t>(r.work.count) * kernel_.out_bytes);
            held_.push_back(std::move(c));
        } catch (...) {  // the abort that follows still comes this way
            reply_.post(up_, 0, tag_reply);
            requests_[0] = reply_.request();
            throw;
        }
        reply_.post(up_, 0, tag_reply);
        requests_[0] = reply_.request();
        perform(session_.on_reply(r, clock()));
    }

    /// A worker's message (a request, or a victim's answer); its receive is posted again once it is handled.
    void take_request(posted_receive& p, int tag, int index) {
        try {
            const int worker = p.source() - first_;
            request_header h;
            std::memcpy(&h, p.data(), sizeof h);
            decode(h, offsets_.at(static_cast<std::size_t>(worker)), message_);
            if (message_.what == request_message::kind::failure) {
                const auto* text = reinterpret_cast<const char*>(p.data() + request_payload_offset);
                message_.text.assign(text, p.bytes() - request_payload_offset);
            }
            payload_ = p.data() + request_payload_offset;
            index_bytes_ = static_cast<std::size_t>(h.index_bytes);
            if (h.results_follow) {  // too large to travel in the request: they follow, received without blocking
                following_ = &payloads_.receive(static_cast<std::size_t>(h.results_bytes), p.source(), down_, h.first,
                                                index_bytes_);
                payload_ = nullptr;
            }
            if (message_.what == request_message::kind::ask) ++served_;
            perform(session_.on_message(worker, message_, clock()));
        } catch (...) {
            following_ = nullptr;
            p.post(down_, MPI_ANY_SOURCE, tag);
            requests_[index] = p.request();
            throw;
        }
        p.post(down_, MPI_ANY_SOURCE, tag);
        requests_[index] = p.request();
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
                count_pending(a.results, 1);
            } else {
                store(a.results, payload_, index_bytes_, a.results.first);
            }
        }
        following_ = nullptr;  // its own worker's requests (serve_own) carry their results in its own buffer
        for (const master_action& a : actions)
            if (a.what == master_action::kind::up) up(a.message);
        serve_own();
    }

    /// A message up goes now, unless the chunk whose results it carries still waits for some, or a message before it
    /// waits: messages up go in the order the session says.
    void up(const request_message& m) {
        if (waiting_up_.empty() && ready(m)) send_up(m);
        else waiting_up_.push_back(m);
    }

    bool ready(const request_message& m) const {
        if (m.done.count == 0) return true;
        for (const held& h : held_)
            if (h.work == m.done) return h.pending == 0;
        return true;  // send_up says what is wrong
    }

    /// Results that followed their request and have come are stored (all: waits for every one), and the messages
    /// up that waited for them go.
    void progress_following(bool all) {
        payloads_.complete(all, [this](const following_payloads::payload& p) {
            for (const chunk& c : p.deliveries) {
                if (store_following_) store(c, p.buffer.data(), p.index_bytes, p.first);
                count_pending(c, -1);
            }
        });
        while (!waiting_up_.empty() && ready(waiting_up_.front())) {
            send_up(waiting_up_.front());
            waiting_up_.pop_front();
        }
    }

    /// Deliveries into the chunks that hold tasks of `c`, from results still on their way: `by` more.
    void count_pending(chunk c, int by) {
        for (held& h : held_)
            if (std::max(c.first, h.work.first) < std::min(c.first + c.count, h.work.first + h.work.count)) h.pending += by;
    }

    struct held {
        chunk work;
        std::shared_ptr<wire_buffer> inputs;   ///< its inputs (none with replicated input or an index range)
        std::shared_ptr<wire_buffer> results;  ///< fixed size: at request_payload_offset + i x out_bytes
        std::vector<std::vector<std::byte>> variable;  ///< results of any size, per task, until they go up
        int pending = 0;  ///< deliveries into it from results still on their way (following_payloads)
    };

    held& holding(task_count task) {
        for (held& h : held_)
            if (task >= h.work.first && task < h.work.first + h.work.count) return h;
        throw internal_error("hierarchical farm: rank " + std::to_string(rank_) + " holds no chunk with task " +
                             std::to_string(task));
    }

    /// The results of chunk `c` (a worker's), from `data`, which holds results from task `first` on, into the chunks
    /// they belong to.
    void store(chunk c, const std::byte* data, std::size_t index_bytes, task_count first) {
        if (!kernel_.variable()) {
            const std::size_t out = kernel_.out_bytes;
            task_count stored = 0;
            for (held& h : held_) {
                const task_count lo = std::max(c.first, h.work.first), hi = std::min(c.first + c.count, h.work.first + h.work.count);
                if (hi <= lo) continue;
                std::memcpy(h.results->data() + request_payload_offset + static_cast<std::size_t>(lo - h.work.first) * out,
                            data + static_cast<std::size_t>(lo - first) * out, static_cast<std::size_t>(hi - lo) * out);
                stored += hi - lo;
            }
            if (stored != c.count)
                throw internal_error("hierarchical farm: rank " + std::to_string(rank_) + " got results for [" +
                                     std::to_string(c.first) + ", +" + std::to_string(c.count) +
                                     "), not all of them in chunks it holds");
            return;
        }
        view_of(kernel_, c.first, c.count, data, index_bytes, first).for_each([&](task_count task, const std::byte* bytes, std::size_t size) {
            held& h = holding(task);
            h.variable[static_cast<std::size_t>(task - h.work.first)].assign(bytes, bytes + size);
        });
    }

    /// Inputs of `work` (a slice of the chunks it holds), contiguous: in place when one chunk holds them all.
    const std::byte* inputs_of(chunk work, std::shared_ptr<wire_buffer>& keep) {
        const std::size_t in = kernel_.in_bytes;
        for (held& h : held_)
            if (work.first >= h.work.first && work.first + work.count <= h.work.first + h.work.count) {
                keep = h.inputs;
                return h.inputs->data() + static_cast<std::size_t>(work.first - h.work.first) * in;
            }
        keep = std::make_shared<wire_buffer>();  // it spans two chunks (the pool merged them)
        keep->reserve(static_cast<std::size_t>(work.count) * in);
        for (task_count t = work.first; t < work.first + work.count;) {
            held& h = holding(t);
            const task_count end = std::min(work.first + work.count, h.work.first + h.work.count);
            std::memcpy(keep->data() + static_cast<std::size_t>(t - work.first) * in,
                        h.inputs->data() + static_cast<std::size_t>(t - h.work.first) * in, static_cast<std::size_t>(end - t) * in);
            t = end;
        }
        return keep->data();
    }

    /// A reply to worker `worker` of the group, with its inputs; sent without blocking when it carries them, so that
    /// a worker still computing does not hold up the master.
    void send_down(int worker, const reply_message& r) {
        reply_header h = encode(r);
        const int to = worker + first_;
        const std::size_t payload =
            r.what == reply_message::kind::assign && inputs_travel_ ? static_cast<std::size_t>(r.work.count) * kernel_.in_bytes : 0;
        if (payload == 0) {
            mpi::check(MPI_Send(&h, sizeof h, MPI_BYTE, to, tag_reply, down_), "MPI_Send");
            return;
        }
        std::shared_ptr<wire_buffer> keep;
        const std::byte* inputs = inputs_of(r.work, keep);
        MPI_Request request;
        if (reply_payload_offset + payload <= inline_capacity) {
            auto message = std::make_shared<wire_buffer>();
            message->reserve(reply_payload_offset + payload);
            std::memcpy(message->data(), &h, sizeof h);
            std::memcpy(message->data() + reply_payload_offset, inputs, payload);
            mpi::check(MPI_Isend(message->data(), static_cast<int>(reply_payload_offset + payload), MPI_BYTE, to, tag_reply,
                                 down_, &request),
                       "MPI_Isend");
            sends_.add(request, std::move(message));
            return;
        }
        h.inputs_follow = 1;
        auto header = std::make_shared<wire_buffer>();
        header->put(h);
        mpi::check(MPI_Isend(header->data(), sizeof h, MPI_BYTE, to, tag_reply, down_, &request), "MPI_Isend");
        sends_.add(request, std::move(header));
        mpi::check(MPI_Isend(inputs, static_cast<int>(payload), MPI_BYTE, to, tag_inputs, down_, &request), "MPI_Isend");
        sends_.add(request, std::move(keep));
    }

    /// A message to the supermaster; with the results of its chunk `m.done` when it carries them (they follow
    /// without blocking when they do not fit in it).
    void send_up(const request_message& m) {
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
        const auto found = std::find_if(held_.begin(), held_.end(), [&](const held& c) { return c.work == m.done; });
        if (found == held_.end())
            throw internal_error("hierarchical farm: rank " + std::to_string(rank_) + " sends up the results of [" +
                                 std::to_string(m.done.first) + ", +" + std::to_string(m.done.count) + "), a chunk it does not hold");
        std::shared_ptr<wire_buffer> buffer = found->results;
        std::size_t bytes = static_cast<std::size_t>(m.done.count) * kernel_.out_bytes;
        if (kernel_.variable()) {  // the index of sizes, then each task's bytes at a multiple of the alignment (farm.hpp)
            const std::size_t index = variable_index_bytes(m.done.count);
            bytes = index;
            for (const auto& r : found->variable) bytes = round_up(bytes, kernel_.out_align) + r.size();
            buffer->reserve(request_payload_offset + bytes);
            std::byte* payload = buffer->data() + request_payload_offset;
            std::size_t at = index;
            for (std::size_t i = 0; i < found->variable.size(); ++i) {
                const auto& r = found->variable[i];
                const auto size = static_cast<std::uint64_t>(r.size());
                std::memcpy(payload + i * sizeof size, &size, sizeof size);
                at = round_up(at, kernel_.out_align);
                if (!r.empty()) std::memcpy(payload + at, r.data(), r.size());
                at += r.size();
            }
            h.index_bytes = static_cast<std::int64_t>(index);
        }
        held_.erase(found);
        h.results_bytes = static_cast<std::int64_t>(bytes);
        if (request_payload_offset + bytes <= inline_capacity) {
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
    double t0_, offset_;           ///< its own clock's offset from rank 0's
    master_session session_;
    std::optional<own_worker> own_;  ///< its own worker, when it computes
    bool inputs_travel_;
    std::deque<held> held_;        ///< the chunks whose inputs or results it keeps, in the order they came
    posted_receive reply_, answer_, request_;
    MPI_Request requests_[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};  ///< reply, answer, request
    request_message message_;
    const std::byte* payload_ = nullptr;  ///< the results in the worker's message being handled
    std::size_t index_bytes_ = 0;
    following_payloads payloads_;         ///< its workers' results too large for their request, on their way
    following_payloads::payload* following_ = nullptr;  ///< while a worker's message is handled: its results, when they follow
    std::deque<request_message> waiting_up_;  ///< messages up held back for results on their way, in order
    bool store_following_ = true;         ///< false once the master failed: results still on their way are not kept
    wire_buffer failure_;
    pending_sends sends_;
    task_count served_ = 0;
};

/// Rank 0's report from the masters' packed parts (in group order) and the supermaster's session.
farm_report assemble(const farm_options& options, int ranks, task_count tasks, const hierarchy& h, const supermaster& top,
                     const std::vector<double>& all, const std::vector<int>& counts, double cpu) {
    farm_report r = empty_report(options, ranks, tasks);
    r.workers = h.workers;
    r.master_ranks = h.master;
    std::size_t at = 0;
    const auto next = [&] { return all.at(at++); };
    for (int g = 0; g < h.groups(); ++g) {
        const std::size_t end = at + static_cast<std::size_t>(counts.at(static_cast<std::size_t>(g + 1)));
        const auto n = static_cast<int>(next());
        for (int w = 0; w < n; ++w) {
            const auto q = static_cast<std::size_t>(next());
            r.tasks_per_rank[q] = static_cast<task_count>(next());
            r.busy_per_rank[q] = next();
            r.finish_per_rank[q] = next();
            const auto runs = static_cast<std::size_t>(next());
            for (std::size_t c = 0; c < runs; ++c) {
                const auto size = static_cast<task_count>(next());
                r.chunks_per_rank[q].append(size, static_cast<task_count>(next()));
            }
        }
        r.reclaims += static_cast<task_count>(next());
        r.reclaimed_tasks += static_cast<task_count>(next());
        r.master_requests.push_back(static_cast<task_count>(next()));
        next();  // its requests up (the supermaster counts them all)
        r.master_merged.push_back(static_cast<task_count>(next()));
        const bool has_k = next() != 0.0;
        const double k = next();
        if (g == 0 && has_k) r.k = k;  // as the simulator: group 0's
        const auto records = static_cast<std::size_t>(next());
        for (std::size_t c = 0; c < records; ++c) {
            chunk_trace t;
            t.rank = static_cast<int>(next());
            t.first = static_cast<task_count>(next());
            t.count = static_cast<task_count>(next());
            t.sent = next(), t.started = next(), t.finished = next(), t.received = next();
            t.calibration = next() != 0.0;
            for (std::optional<double>* x : readings_of(t.sample)) {
                const bool has = next() != 0.0;
                const double value = next();
                if (has) *x = value;
            }
            r.trace.push_back(t);
        }
        if (at != end) throw internal_error("hierarchical farm: master " + std::to_string(g) + "'s report does not add up");
    }
    if (h.computes) {  // rank 0's own worker: worker 0 of the supermaster's session
        const farmer_session& s = top.session();
        r.tasks_per_rank[0] = s.tasks_of(0);
        r.chunks_per_rank[0] = s.chunks_of(0);
        r.busy_per_rank[0] = s.busy_of(0);
        r.finish_per_rank[0] = s.finish_of(0);
        for (const chunk_trace& c : s.records())  // (kept only with a trace)
            if (c.rank == 0) r.trace.push_back(c);
    }
    std::stable_sort(r.trace.begin(), r.trace.end(), [](const chunk_trace& a, const chunk_trace& b) { return a.sent < b.sent; });
    std::vector<double> finish;
    for (int q = 0; q < ranks; ++q)
        if (h.worker_index[static_cast<std::size_t>(q)] >= 0) finish.push_back(r.finish_per_rank[static_cast<std::size_t>(q)]);
    r.percent_imbalance = percent_imbalance(finish);
    r.cov = coefficient_of_variation(finish);
    r.makespan = top.session().last_result();
    r.farmer_requests = top.requests();
    r.farmer_cpu_seconds = cpu;
    return r;  // (its trace: run_farm's finish_trace)
}

}  // namespace

std::vector<int> plan_hierarchy(const farm_options& options, int ranks, const std::vector<int>& nodes) {
    if (ranks < 3)
        throw invalid_argument("farmer", "hierarchical needs at least 3 ranks (a supermaster, a master and a worker); this "
                                         "farm has " + std::to_string(ranks) + "; use flat");
    std::vector<int> group(static_cast<std::size_t>(ranks), -1);
    const int others = ranks - 1;  // every rank but the supermaster
    if (options.masters > 0) {  // K contiguous blocks of ranks 1..N-1, as equal as possible, the first ones larger
        const int k = options.masters;
        if (2 * k > others)
            throw invalid_argument("masters", "is " + std::to_string(k) + "; expected 1.." + std::to_string(others / 2) +
                                                  " with " + std::to_string(ranks) + " ranks (rank 0 is the supermaster "
                                                  "and each master needs at least one worker)");
        int r = 1;
        for (int g = 0; g < k; ++g)
            for (int i = 0; i < others / k + (g < others % k ? 1 : 0); ++i) group[static_cast<std::size_t>(r++)] = g;
        return group;
    }
    // One master per node: the ranks of a node but rank 0 form a group when they are two or more; a rank alone on
    // its node (rank 0 apart) joins the group before it (the first group when none is before it); with no node of
    // two, every rank but 0 is one group.
    std::map<int, std::vector<int>> by_node;
    for (int r = 1; r < ranks; ++r) by_node[nodes.at(static_cast<std::size_t>(r))].push_back(r);
    std::vector<std::vector<int>> groups;
    std::vector<int> alone_before;  // ranks alone on their node before the first group
    for (const auto& [node, members] : by_node) {
        if (members.size() >= 2) groups.push_back(members);
        else if (groups.empty()) alone_before.push_back(members[0]);
        else groups.back().push_back(members[0]);
    }
    if (groups.empty()) groups.emplace_back();
    auto& first = groups.front();
    first.insert(first.end(), alone_before.begin(), alone_before.end());
    for (std::size_t g = 0; g < groups.size(); ++g) {
        std::sort(groups[g].begin(), groups[g].end());
        for (int r : groups[g]) group[static_cast<std::size_t>(r)] = static_cast<int>(g);
    }
    // Groups are numbered by their master (their lowest rank), so that group g's master comes before group g+1's.
    std::vector<int> order(groups.size());
    for (std::size_t g = 0; g < groups.size(); ++g) order[g] = static_cast<int>(g);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return groups[static_cast<std::size_t>(a)][0] < groups[static_cast<std::size_t>(b)][0]; });
    std::vector<int> renumber(groups.size());
    for (std::size_t i = 0; i < order.size(); ++i) renumber[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
    for (int& g : group)
        if (g >= 0) g = renumber[static_cast<std::size_t>(g)];
    return group;
}

int hierarchy_workers(const std::vector<int>& group_of, bool computes) { return hierarchy_of(group_of, computes).workers; }

void check_hierarchical(const farm_options& options, const task_kernel& kernel, task_count tasks,
                        const std::vector<int>& group_of) {
    (void)kernel;
    if (options.schedule)
        throw invalid_argument("farmer", "hierarchical does not learn a schedule (each group calibrates on its own, "
                                         "with its tasks); use flat with farm_options::schedule");
    if (!options.master_technique.empty()) {
        try {
            find_technique(options.master_technique);
        } catch (const unknown_name& e) {  // the supermaster's technique is its own option
            throw unknown_name("master_technique", e.message());
        }
    }
    if (group_of.empty()) return;  // one rank: the tasks run in order, nothing else to check
    const hierarchy h = hierarchy_of(group_of, options.farmer_computes);
    const top_plan top = top_of(options.technique, options.master_technique, options.parameters, h);
    (void)make_technique(top.name, top.options, h.units());
    for (int g = 0; g < h.groups(); ++g) {
        (void)make_technique(options.technique, group_options(options.parameters, h, g),
                             static_cast<int>(h.members[static_cast<std::size_t>(g)].size()));
        (void)expected_share(tasks, top, h, g);
    }
}

farm_report run_hierarchical(MPI_Comm comm, int rank, int ranks, const std::byte* in, std::byte* out,
                             const task_kernel& kernel, const farm_options& options, const shared_setup& setup, double t0,
                             std::vector<double> offsets, double round_trip, sampler& monitors) {
    const double cpu0 = cpu_seconds();
    const hierarchy h = hierarchy_of(setup.group_of, setup.config.farmer_computes != 0);
    // Rank 0's view on every rank: the workers' technique and parameters, the supermaster's technique, the records,
    // each rank's clock offset.
    std::string technique = options.technique, top_name = options.master_technique;
    technique_options parameters = options.parameters;
    share_technique(comm, rank, technique, parameters);
    broadcast_string(comm, top_name);
    int keep_records = !options.trace.empty() || options.record_trace ? 1 : 0;
    mpi::check(MPI_Bcast(&keep_records, 1, MPI_INT, 0, comm), "MPI_Bcast");
    offsets.resize(static_cast<std::size_t>(ranks), 0.0);
    mpi::check(MPI_Bcast(offsets.data(), ranks, MPI_DOUBLE, 0, comm), "MPI_Bcast");

    const int g = h.group_of.at(static_cast<std::size_t>(rank));
    const bool is_master = g >= 0 && h.master[static_cast<std::size_t>(g)] == rank;
    owned_comm down, up;
    down.split(comm, g < 0 ? MPI_UNDEFINED : g, rank);         // a group: its master is rank 0 there
    up.split(comm, rank == 0 || is_master ? 0 : MPI_UNDEFINED, rank);  // rank 0 and the masters, in rank order
    if (g >= 0 && !is_master)  // a worker, as in the flat farm; its master is its farmer
        return run_worker_side(down.comm, rank, ranks, in, kernel, options, setup, t0, monitors, round_trip);

    const top_plan top = top_of(technique, top_name, parameters, h);
    if (rank == 0) {
        supermaster s(up.comm, in, out, kernel, options, setup, h, top, t0, monitors, keep_records != 0);
        const outcome o = s.run();
        if (o.what != farm_outcome::kind::ok) throw_outcome(o);
        // The masters' parts of the report.
        int none = 0;
        std::vector<int> counts(static_cast<std::size_t>(h.groups() + 1)), at(counts.size());
        mpi::check(MPI_Gather(&none, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, up.comm), "MPI_Gather");
        int total = 0;
        for (std::size_t i = 0; i < counts.size(); ++i) at[i] = total, total += counts[i];
        std::vector<double> all(static_cast<std::size_t>(total));
        mpi::check(MPI_Gatherv(nullptr, 0, MPI_DOUBLE, all.data(), counts.data(), at.data(), MPI_DOUBLE, 0, up.comm),
                   "MPI_Gatherv");
        return assemble(options, ranks, setup.config.tasks, h, s, all, counts, cpu_seconds() - cpu0);
    }

    // A master.
    const auto size = static_cast<int>(h.members[static_cast<std::size_t>(g)].size());
    const technique_options mine = group_options(parameters, h, g);
    const technique_needs top_needs = make_technique(top.name, top.options, h.units())->needs();
    master_session_options mo;
    mo.group = {.min_chunk = parameters.min_chunk,
                .prefetch = setup.config.prefetch != 0,
                .reclaim = setup.config.reclaim != 0,
                .request_cost = round_trip,
                .keep_records = keep_records != 0,
                .stragglers = {},
                .clock = {}};  // the driver passes every time (rank 0's clock)
    mo.expected = expected_share(setup.config.tasks, top, h, g);
    mo.readings_each = !top_needs.with_every_request.empty();
    mo.readings_calibration = !top_needs.with_calibration.empty();
    mo.powers = mine.weights;
    master_side m(up.comm, down.comm, rank, in, kernel, setup, h.members[static_cast<std::size_t>(g)],
                  make_technique(technique, mine, size), mo, t0, offsets, monitors);
    const outcome o = m.run();
    if (o.what != farm_outcome::kind::ok) throw_outcome(o);
    const std::vector<double> part = m.packed();
    const int count = static_cast<int>(part.size());
    mpi::check(MPI_Gather(&count, 1, MPI_INT, nullptr, 1, MPI_INT, 0, up.comm), "MPI_Gather");
    mpi::check(MPI_Gatherv(part.data(), count, MPI_DOUBLE, nullptr, nullptr, nullptr, MPI_DOUBLE, 0, up.comm), "MPI_Gatherv");
    farm_report r = empty_report(options, ranks, setup.config.tasks);  // its group's entries
    const farmer_session& group = m.session_group();
    for (int w = 0; w < size; ++w) {
        const auto q = static_cast<std::size_t>(h.members[static_cast<std::size_t>(g)][static_cast<std::size_t>(w)]);
        r.tasks_per_rank[q] = group.tasks_of(w);
        r.chunks_per_rank[q] = group.chunks_of(w);
        r.busy_per_rank[q] = group.busy_of(w);
        r.finish_per_rank[q] = group.finish_of(w);
    }
    r.workers = h.workers;
    r.master_ranks = h.master;
    return r;
}

}  // namespace pfarm::detail
