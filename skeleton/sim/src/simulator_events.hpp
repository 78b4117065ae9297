// pfarm simulator: the one event type, the event queue and the servers' service order that the flat,
// hierarchical and decentralised event loops run on. Internal header.
//
// A server is the flat farmer, a hierarchical master or the supermaster, or the decentralised window host: it
// serves the messages that have reached it one at a time, in arrival order (ties by sender, then by the order the
// messages were sent), a master the supermaster's replies first (they refill its pool), then a victim's answer to
// a reclaim, then the rest. Its turn is an event after every other event at its time, so that the messages
// arriving together are all in when it chooses. A server may have a gate (the flat farmer whose rank computes): a
// message that reaches it idle waits until the gate opens; one that comes while it serves is served in the same run.
#pragma once

#include "pfarm/protocol.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <vector>

namespace pfarm::sim::model {

/// An event: a message reaching a server (a request, a result, a victim's answer, an atomic; a supermaster's
/// reply reaching a master), a message reaching a worker (a reply, an atomic's answer, a reclaim), a worker's
/// chunk ending or reaching its ask-ahead boundary, a lost swap's backoff ending, or a server's turn. Ordered by
/// time, then `who` (the worker, or the sender; turns last), then the order the events were made (so two messages
/// between the same pair stay in order).
struct event {
    enum class kind : std::uint8_t { to_server, to_worker, reclaim, chunk_end, boundary, retry, turn };
    double time = 0.0;
    int who = 0;
    std::uint64_t sequence = 0;
    kind what = kind::to_server;
    int server = 0;                ///< to_server, turn: which server (the loop numbers them from 0)
    int from = -1;                 ///< to_server: the sender's index at that server; -1: the supermaster
    bool answer_first = false;     ///< to_server: a victim's answer to a reclaim
    std::size_t mail = 0;          ///< to_server from a worker or a master: the request, in the mail pool
    reply_message reply;           ///< to_worker, reclaim; to_server from the supermaster
    std::uint64_t generation = 0;  ///< chunk_end, boundary: the chunk it belongs to (a shrunk chunk re-schedules)
    static event at(double time, int who, kind what) {
        event e;
        e.time = time;
        e.who = who;
        e.what = what;
        return e;
    }
    bool operator>(const event& o) const {
        if (time != o.time) return time > o.time;
        if (who != o.who) return who > o.who;
        return sequence > o.sequence;
    }
};

using event_heap = std::priority_queue<event, std::vector<event>, std::greater<>>;

/// The loop's events in time order, and the pool of requests in flight (an event carries its slot, so that
/// events stay small).
class event_queue {
public:
    void push(event e) {
        e.sequence = sequence_++;
        events_.push(e);
    }
    bool empty() const { return events_.empty(); }
    event pop() {
        const event e = events_.top();
        events_.pop();
        return e;
    }
    /// A request in flight: its slot in the pool, until release().
    std::size_t post(const request_message& m) {
        std::size_t slot = mail_.size();
        if (free_.empty()) mail_.push_back(m);
        else slot = free_.back(), free_.pop_back(), mail_[slot] = m;
        return slot;
    }
    request_message& mail(std::size_t slot) { return mail_[slot]; }
    void release(std::size_t slot) { free_.push_back(slot); }

private:
    event_heap events_;
    std::uint64_t sequence_ = 0;
    std::vector<request_message> mail_;
    std::vector<std::size_t> free_;
};

/// The servers of a loop, numbered 0..count-1, each serving its messages in the service order above.
class servers {
public:
    explicit servers(int count)
        : count_(count), replies_(static_cast<std::size_t>(count)), answers_(static_cast<std::size_t>(count)),
          inbox_(static_cast<std::size_t>(count)), turn_pending_(static_cast<std::size_t>(count), false),
          free_at_(static_cast<std::size_t>(count), 0.0), gate_(static_cast<std::size_t>(count)) {}

    /// Server s serves a message that reaches it idle at t only from gate(t) >= t on (the flat farmer whose rank
    /// computes: the end of the task its own worker computes at t).
    void set_gate(int s, std::function<double(double)> gate) { gate_.at(static_cast<std::size_t>(s)) = std::move(gate); }

    /// A to_server event: the message waits for its server's turn (at once when the server is free, or when it
    /// is serving: the same run of service; past its gate when it is idle).
    void arrive(const event& e, event_queue& q) {
        const auto s = static_cast<std::size_t>(e.server);
        (e.from < 0 ? replies_[s] : e.answer_first ? answers_[s] : inbox_[s]).push(e);
        if (turn_pending_[s]) return;
        const bool idle = e.time > free_at_[s];
        plan_turn(e.server, idle && gate_[s] ? gate_[s](e.time) : std::max(e.time, free_at_[s]), q);
    }

    /// A turn event: the server serves its next message, serve(message, now) returning when it is free again.
    template <class Serve>
    void turn(const event& e, event_queue& q, Serve&& serve) {
        const auto s = static_cast<std::size_t>(e.server);
        turn_pending_[s] = false;
        auto& from = !replies_[s].empty() ? replies_[s] : !answers_[s].empty() ? answers_[s] : inbox_[s];
        const event m = from.top();
        from.pop();
        free_at_[s] = serve(m, e.time);
        if (!inbox_[s].empty() || !answers_[s].empty() || !replies_[s].empty()) plan_turn(e.server, free_at_[s], q);
    }

    /// A server has a turn to come (a message waits).
    bool busy() const {
        for (bool pending : turn_pending_)
            if (pending) return true;
        return false;
    }

private:
    void plan_turn(int s, double t, event_queue& q) {
        event e = event::at(t, std::numeric_limits<int>::max() - count_ + 1 + s, event::kind::turn);
        e.server = s;
        q.push(e);
        turn_pending_[static_cast<std::size_t>(s)] = true;
    }

    int count_;
    std::vector<event_heap> replies_, answers_, inbox_;
    std::vector<bool> turn_pending_;
    std::vector<double> free_at_;
    std::vector<std::function<double(double)>> gate_;
};

}  // namespace pfarm::sim::model
