// pfarm MPI engine, internal: the farm's message tags and how the farmer and the workers receive messages
// (docs/skeleton.md "Protocol"). A message is received whole into a buffer of `inline_capacity` bytes without
// probing for it first where that can be done (a blocking MPI_Recv; with reclaim the farmer's receives are
// posted ahead, so that a victim's answer goes first); a message that would not fit sends its header alone,
// and its payload follows on its own tag (tag_results, tag_inputs), received by the rank that reads the header:
// a worker's inputs in place; a worker's results without blocking (following_payloads), so that a farmer or master
// never waits for a worker that computes. A check that must not block (between two tasks) and a wait that must
// leave the core to others (more ranks than cores: `gentle`) probe. Where a worker may be lost (on_worker_loss) the
// farmer's inbox receives without blocking, so that a sender that dies mid-message holds up nothing (farmer_inbox). Not installed; tests/mpi/test_messages.cpp
// includes it.
#pragma once

#include "wire.hpp"

#include "pfarm/mpi.hpp"

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace pfarm::detail {

constexpr int tag_request = 1;   // worker -> farmer: request, final results, failure
constexpr int tag_reply = 2;     // farmer -> worker: every reply (assign, stop, abort, reclaim, later)
constexpr int tag_clock = 3;     // the clock ping-pong at setup
constexpr int tag_released = 4;  // worker -> farmer: a victim's answer to a reclaim (served first: farmer_inbox)
constexpr int tag_results = 5;   // worker -> farmer: the results of a request too large to travel in it
constexpr int tag_inputs = 6;    // farmer -> worker: the inputs of a reply too large to travel in it
constexpr int tag_failure = 7;   // decentralised farm: each rank to rank 0 "done, and how"; rank 0 back: the outcome
constexpr int tag_outcome = 8;   // on_worker_loss: rank 0 -> each rank, the farm's outcome (no collective at the end)
constexpr int tag_after = 9;     // after a farm that lost ranks: rank 0 -> each living rank, what broadcast_string sends
constexpr int tag_lost = 10;     // hierarchical, on_worker_loss: a master -> rank 0, the ranks of its group it presumed lost
constexpr int tag_part = 11;     // hierarchical, on_worker_loss: a master -> rank 0, its part of the report
constexpr int tag_alive = 12;    // hierarchical, on_worker_loss: a worker of a master presumed lost -> rank 0, alive
constexpr int tag_more = 13;     // decentralised, on_worker_loss: rank 0 -> a rank that ended, tasks a lost rank left
constexpr int tag_setup = 14;    // the setup's end (end_setup): each rank -> rank 0 "past the setup"; rank 0 back: go

/// A message up to this size carries its payload; a larger one sends its header alone and its payload after.
constexpr std::size_t inline_capacity = 64 * 1024;

/// A receive posted ahead into its own buffer of inline_capacity bytes.
class posted_receive {
public:
    posted_receive() = default;
    posted_receive(const posted_receive&) = delete;
    posted_receive& operator=(const posted_receive&) = delete;
    ~posted_receive();
    /// Posts the receive of the next message from `source` with `tag` on `comm`.
    void post(MPI_Comm comm, int source, int tag);
    MPI_Request& request() noexcept { return request_; }
    /// After completion: who sent it, its size, its bytes (valid until the next post()).
    void completed(const MPI_Status& status);
    int source() const noexcept { return source_; }
    std::size_t bytes() const noexcept { return bytes_; }
    const std::byte* data() const noexcept { return buffer_.data(); }
    /// Cancels a receive still pending (at the end of the farm).
    void cancel();

private:
    MPI_Request request_ = MPI_REQUEST_NULL;
    wire_buffer buffer_;
    int source_ = -1;
    std::size_t bytes_ = 0;
};

/// Waits until one of `count` requests completes; returns its index. With `gentle` (more ranks than cores on
/// this node) it polls with a growing sleep instead of MPI's busy wait, so an idle rank frees its core.
/// `block` false: returns -1 at once when none has completed.
int wait_any(int count, MPI_Request* requests, MPI_Status& status, bool block, bool gentle);

/// Receives the next message from `source` with `tag` whole into `buffer` (at most inline_capacity bytes):
/// blocking with MPI_Recv, or (not `block`, or `gentle`) by a matched probe, polled with a growing sleep when
/// gentle. False when `block` is false and none has come. `status` names its source and size.
bool receive(MPI_Comm comm, int source, int tag, wire_buffer& buffer, bool block, bool gentle, MPI_Status& status);

/// A message the farmer received: who sent it, its bytes.
struct received_message {
    static constexpr std::size_t unknown = ~std::size_t{0};
    int source = -1;
    const std::byte* data = nullptr;
    MPI_Status status{};          ///< without reclaim: its receive's status
    std::size_t known = unknown;  ///< with reclaim: its size, read as its posted receive completed
    /// Its size in bytes, asked of MPI (MPI_Get_count) only when read: a failure's text, not every request.
    std::size_t bytes() const;
};

/// Results that follow their request on tag_results (too large to travel in it), received without blocking.
/// Without a single-copy transport (no CMA between ranks, or a network without RDMA) a large message moves only while
/// its sender is inside MPI, and a worker that sent its results ahead (prefetch) computes its next chunk meanwhile: a
/// blocking receive held the farmer until that worker's next MPI call, so that a farmer that computes barely
/// computed and prefetch made the run slower. A payload is received in place (nothing to do once in) or into a
/// buffer of its own, with the deliveries to make from it once it is in; the receiving rank polls, and waits for all
/// at the end.
class following_payloads {
public:
    /// A payload received into a buffer of its own, and what is to be done with it once in.
    struct payload {
        wire_buffer buffer;
        task_count first = 0;          ///< the first task whose results it carries
        std::size_t index_bytes = 0;   ///< results of any size: bytes of their index
        std::vector<chunk> deliveries; ///< the driver's: the results to deliver from it once it is in
    };
    following_payloads() = default;
    following_payloads(const following_payloads&) = delete;
    following_payloads& operator=(const following_payloads&) = delete;
    ~following_payloads();

    /// Posts the receive of `bytes` from `source` on `comm` (tag_results) into `into`: in place, nothing to deliver.
    void receive_in_place(std::byte* into, std::size_t bytes, int source, MPI_Comm comm);
    /// Posts the receive into a buffer of its own; the payload returned stays valid until it is handed back.
    payload& receive(std::size_t bytes, int source, MPI_Comm comm, task_count first, std::size_t index_bytes);
    /// Hands each payload that has come, in the order their receives were posted, to `arrived` (not those received
    /// in place); with `all`, waits for every one first.
    template <class Arrived>
    void complete(bool all, Arrived&& arrived) {
        if (requests_.empty()) return;
        const std::size_t n = test(all);
        for (std::size_t i = 0; i < n; ++i)
            if (done_[i]) arrived(static_cast<const payload&>(*done_[i]));
        recycle(n);
    }
    bool empty() const noexcept { return requests_.empty(); }
    /// Cancels the receives still pending (their sender is gone: on_worker_loss); nothing is delivered from them.
    void cancel();

private:
    std::size_t test(bool all);   ///< moves the completed ones to done_[0, n); returns n
    void recycle(std::size_t n);  ///< their buffers back to the spare ones
    std::vector<MPI_Request> requests_;
    std::vector<std::unique_ptr<payload>> pending_;  ///< beside requests_ (null: in place)
    std::vector<std::unique_ptr<payload>> done_, spare_;
    std::vector<int> indices_;
};

/// The farmer's inbox. Without reclaim it receives requests (tag_request, from any worker) as they come. With
/// reclaim a request and a victim's answer (tag_released) are posted ahead, and an answer goes first: it
/// carries tasks for a thief that waits, while a request queued beside it is mostly a worker that will wait
/// or be sent to ask a victim.
/// When a sender may die (`may_lose`: on_worker_loss) nothing is posted ahead and nothing is received blocking: a
/// receive matched to a message whose sender dies before its body has come would wait for ever (a message above
/// MPI's eager size travels after it is matched). Each message is matched by a probe (an answer first, with reclaim)
/// and received with MPI_Imrecv into a buffer of its own; next() tests those on their way and returns the first one
/// in whole (a sender's messages in the order they were matched), so that one that never comes holds up no other.
/// When the farmer session presumes a sender lost, the driver gives its receives up (abandon_from()): a matched
/// receive cannot be cancelled, so it stays pending in MPI for the process's lifetime, never waited on, with its
/// buffer; MPI_Finalize, which would wait for it, is skipped after a loss (pfarm::mpi::finalize).
class farmer_inbox {
public:
    farmer_inbox(MPI_Comm comm, bool reclaim, bool gentle, bool may_lose);
    /// The next message, or null when none has come and `block` is false. Valid until release().
    /// With `may_lose`, only next(false): a blocking wait is the driver's, between its deadlines.
    const received_message* next(bool block) {
        if (otherwise_ || !block) return next_otherwise(block);
        // Every request's path without reclaim: one MPI_Recv into the buffer, nothing else (inline: the round trip's).
        mpi::check(MPI_Recv(buffer_.data(), static_cast<int>(inline_capacity), MPI_BYTE, MPI_ANY_SOURCE, tag_request, comm_,
                            &message_.status),
                   "MPI_Recv");
        message_.source = message_.status.MPI_SOURCE;
        return &message_;
    }
    /// The message from next() is handled (with reclaim its receive is posted again).
    void release() {
        if (taken_ || returned_) release_otherwise();  // without reclaim nothing was posted ahead: every message's path, inline
    }
    /// Cancels the receives still posted (the farm is over); with `may_lose`, those on their way are given up.
    void close();
    /// With `may_lose`: gives up the receives on their way from every rank for which `lost(rank)` is true (the farmer
    /// session presumes it lost): they stay pending in MPI, never waited on, their buffers kept for the process's
    /// lifetime. A message of theirs already in whole is kept (the session drops it).
    template <class Lost>
    void abandon_from(Lost&& lost) {
        for (std::size_t i = 0; i < incoming_.size();)
            if (!incoming_[i]->in && lost(incoming_[i]->message.source)) abandon(i);
            else ++i;
    }
    /// With `may_lose`: how many messages are on their way (matched, not yet whole).
    std::size_t on_their_way() const noexcept;

private:
    /// may_lose: a message matched and received without blocking into its own buffer.
    struct incoming {
        MPI_Request request = MPI_REQUEST_NULL;
        received_message message;
        wire_buffer buffer;
        bool in = false;  ///< whole
    };
    const received_message* next_otherwise(bool block);  ///< next() with reclaim, or not blocking, or gentle, or may_lose
    const received_message* next_matched();  ///< may_lose: matches what has come, returns the first one in whole
    void abandon(std::size_t i);              ///< may_lose: gives up incoming_[i]
    void repost();  ///< reclaim: posts again the receive whose message next() returned
    void release_otherwise();  ///< release() with reclaim or may_lose
    MPI_Comm comm_;
    bool reclaim_, gentle_, may_lose_;
    bool otherwise_;  ///< reclaim_ || gentle_ || may_lose_: next(true) is not a plain MPI_Recv
    std::vector<std::unique_ptr<incoming>> incoming_;  ///< may_lose: on their way or in, in the order matched
    std::vector<std::unique_ptr<incoming>> spare_;     ///< may_lose: buffers to reuse
    std::unique_ptr<incoming> returned_;               ///< may_lose: next() returned it; back to spare_ at release()
    MPI_Request requests_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};  ///< reclaim: [0] released, [1] request
    posted_receive answer_, request_;
    posted_receive* taken_ = nullptr;  ///< reclaim: the receive whose message next() returned
    wire_buffer buffer_;               ///< without reclaim: the message received
    received_message message_;
};

/// Waits at most `seconds` for a message from `source` with `tag` on `comm` (polled, with a short sleep); true when one
/// has come (`status` names it, not received). For a sender that may be gone (on_worker_loss).
bool probe_until(MPI_Comm comm, int source, int tag, double seconds, MPI_Status& status);

/// Sends `bytes` to `to` on `tag` without waiting for it, ever: to a rank that may be gone (on_worker_loss). The bytes
/// are kept until the process ends (MPI may send them in place, later).
void send_detached(MPI_Comm comm, std::vector<std::byte> bytes, int to, int tag);

/// The end of one level's traffic (the flat farm, a group, or rank 0 and the masters), collective over `comm`, once the rank's farm
/// is over and its own sends are complete. A rank stopped by an abort may have sent messages after the request that
/// the abort answered (results that crossed it; each level's sessions retire it at the abort): those are received
/// and dropped by the level's receiving rank (`receives`: rank 0 of `comm`) until every rank of the level has
/// entered, so that no rank is left in a send that nobody receives. Called before the outcome is shared, so that no
/// send is pending while it is.
void end_traffic(MPI_Comm comm, bool receives, bool gentle);

}  // namespace pfarm::detail
