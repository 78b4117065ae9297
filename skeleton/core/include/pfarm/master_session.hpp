// pfarm scheduling core: the master session, the protocol of a hierarchical master (Han & Chronopoulos, "Scalable
// loop self-scheduling schemes implemented on large-scale clusters", section IV; Chronopoulos, Penmatsa, Yu & Yu,
// "Scalable loop self-scheduling schemes for heterogeneous clusters", section 4.2): a worker session facing up and
// a farmer session facing down.
//
// Roles: a supermaster (a plain farmer_session whose workers are the masters), K masters (one master_session each)
// and the workers (plain worker_sessions, each talking to its master as to a flat farmer). The session computes
// nothing (a driver may add the master's own worker as one of its group's workers: farmer_computes): it keeps a task pool of the chunks the supermaster gave it, serves its workers from the pool with the
// workers' technique (its farmer session in pool mode, farmer.hpp "Pool"), gathers their results, and sends each
// chunk's results up when every task of it is in. Nothing of the protocol is written again here: the down side is
// farmer_session (barrier, parking, prefetch, reclaim within the group, records), the up side worker_session
// (ask, prefetch, results, final, failure); this class only connects them:
//
//   - a chunk the supermaster assigns joins the pool when its reply arrives (even while the up session still
//     computes the previous chunk: the reply it holds "ahead");
//   - the up session "computes" a chunk while its tasks are out in the group; the chunk ends when its last result is
//     in (its time: from its arrival to then);
//   - refill rule: a master asks for its next chunk once the hand-out reaches the newest chunk it holds (its first
//     chunk: once half of it is handed out), whether the older chunks' last results are in or not: while the request
//     is out its pool still holds the rest of that chunk. The up session has depth master_depth (worker_session.hpp
//     "Depth"; the supermaster allows as many chunks per master): the chunks whose last results are still coming
//     (a long task) do not hold the refill back, up to master_depth chunks; with that many held, the request waits
//     for the oldest chunk's results and goes with them. A `stop` from the supermaster closes the pool (the workers
//     are stopped, or take tasks back, once it is empty);
//   - results go up in the order the chunks came (the up session completes its oldest chunk first): a chunk
//     finished early waits at the master for the one before it; a complete chunk's results go with the master's
//     next request (Chronopoulos et al., section 4.2, Remark 3: one message), or at once when none will come (a
//     stop came);
//   - readings: when the supermaster's technique needs them, a master's request carries its group's: run queue
//     sum V_j / sum (V_j / Q_j) over its workers' latest readings (so that the weighted schemes' A = V / Q of the
//     master is the sum of its workers' A_j), availability their mean, benchmark their sum, latency their maximum,
//     cores the group size;
//   - failures: a worker's failure aborts the group (farmer_session) and is reported up as the master's failure,
//     with the worker's task and text unchanged (failed_worker() says which worker of the group; -1: the master
//     itself failed, abort()); an abort from the supermaster aborts the group;
//   - lost workers (options.group.worker_loss): a worker of the group silent past its deadline is presumed lost at
//     on_timer(), and its chunks go back to the group's pool side (farmer.hpp "Lost workers"): the ledger's chunks are
//     completed by whoever computes those tasks, each result credited once, so that every chunk's results still go
//     up once. The farm stopping for it (`stop`), or a group left without workers, goes up as a failure naming it.
//     The supermaster presumes a master lost by the same rule (its session's worker_loss, a master one of its workers),
//     and a master's chunk may take longer than that deadline while its group waits for a worker of its own to be
//     presumed lost: so a master that holds chunks and has sent nothing up for half the slack sends a keep-alive
//     (an up `results` message with no results, farmer_session.hpp "Lost workers") at on_timer(), and a master that
//     lives is never silent past its deadline; a dead one sends nothing and is presumed lost.
// Calibration happens in the group (the workers' technique, at the master, over its workers); the supermaster
// weights masters by the powers it is given (the sum of the workers' weights, or the group sizes), not by
// measured ones. Reclaim works within a group; there is none between masters (docs/hierarchical.md says why).
//
// A driver moves messages and keeps time as for a flat farm (docs/architecture.md, "The same request in the
// other drivers"):
//   master_session m(workers, make_technique(...), {...});
//   perform(m.start(now));                                      // its first request up
//   a worker's message:      perform(m.on_message(w, msg, now, arrived));
//   the supermaster's reply: perform(m.on_reply(reply, now, attachment));
//   the master is done when  m.over()
// Actions, in order: up m (send request m to the supermaster, with the results of chunk m.done when it carries
// any, and that chunk's attachment), send w r (reply r to worker w of the group), park w, deliver w c (store the
// results of chunk c, which the message being handled carries, into the held chunks `into`). Each up, send and park
// is one answer for a driver that charges service time.
//
// The ledger: the session holds each supermaster chunk (held()) from its reply until the message up that carries
// its results, with the driver's attachment for it (the MPI master's buffers: its inputs, its results; the
// simulator gives none). A driver keeps no list of its own: it finds a chunk's attachment through the session
// (holding(task)); a deliver action names the held chunks its results fall in, with their attachments (a worker's
// chunk may span two: the pool merges ranges that follow each other); and the up action that carries a chunk's
// results hands its attachment out, the chunk leaving the ledger, so that a driver that holds the message back
// (results still on their way to it) or sends it without blocking keeps the buffers as long as it needs them.
#pragma once

#include "pfarm/farmer_session.hpp"
#include "pfarm/worker_session.hpp"

#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace pfarm {

/// The most supermaster chunks a master holds at once, asked for included (the supermaster's
/// farmer_session_options::depth): those whose last results are still coming, the one it serves, the next one.
/// 8: on the Mandelbrot profile at 8,192 workers and 16 masters no master needed more (4 gave 1.180 of the bound,
/// 8 and 16 both 1.163; docs/hierarchical.md "Refill rule").
inline constexpr int master_depth = farmer::max_held;

struct master_session_options {
    /// Facing down: the group's farm (min_chunk, prefetch, reclaim, request_cost, keep_records); `pool` is set by
    /// the session.
    farmer_session_options group;
    /// The loop size the workers' technique is started with: the master's expected share of the loop (>= 1).
    task_count expected = 1;
    /// Facing up: what the supermaster's technique needs (technique_needs of its technique).
    bool readings_each = false;
    bool readings_calibration = false;
    /// V_j of its workers, for the readings it sends up (empty: 1 each).
    std::vector<double> powers;
};

/// A driver's own data for one held chunk, opaque to the session. A shared_ptr<void>: the session is compiled once
/// for every driver (a template parameter would move it into this header, and the simulator has no data to give), and
/// the data outlives the chunk's place in the ledger (a message up held back for results still on their way, a
/// send without blocking, those results themselves keep it), so ownership is shared, as the MPI transport already
/// shares its buffers with its pending sends. std::any would demand copyable data and allocate as much. The driver
/// gives one type and casts back to it (std::static_pointer_cast).
using chunk_attachment = std::shared_ptr<void>;

/// One supermaster chunk a master holds: from its reply until the message up that carries its results.
struct held_chunk {
    chunk work;
    task_count done = 0;          ///< tasks whose results are in
    double arrived = 0.0;         ///< when its reply came
    chunk_attachment attachment;  ///< the driver's, given with its reply (empty: none)
};

struct master_action {
    enum class kind { up, send, park, deliver };
    kind what = kind::up;
    int worker = -1;          ///< send, park, deliver: the worker, by its index in the group
    request_message message;  ///< up
    reply_message reply;      ///< send
    chunk results;            ///< deliver
    /// deliver: the held chunks `results` falls in, with their attachments (one of them may leave the ledger in the
    /// same event, its results going up).
    std::vector<held_chunk> into;
    /// up, when it carries the results of chunk message.done: that chunk's attachment (the chunk left the ledger).
    chunk_attachment attachment;
};

class master_session {
public:
    /// `workers` >= 1 in its group; `policy` is the workers' technique for `workers` workers.
    master_session(int workers, std::unique_ptr<technique> policy, const master_session_options& options);

    /// The actions of one event, valid until the next call.
    const std::vector<master_action>& start(double now);
    /// `attachment`: with an assign, the driver's data for its chunk, kept with it in the ledger.
    const std::vector<master_action>& on_reply(const reply_message& r, double now, chunk_attachment attachment = {});
    const std::vector<master_action>& on_message(int worker, const request_message& m, double now, double arrived = -1.0);
    /// The master itself failed: its group is aborted and the failure goes up.
    const std::vector<master_action>& abort(const std::string& why);
    /// Lost workers (options.group.worker_loss; docs/reliability.md "A lost worker"): when the driver must call
    /// on_timer() if no message comes before (infinity: no need), as for a flat farm's session, or the keep-alive is due.
    double deadline() const;
    /// The group's workers silent past the loss rule's deadline are presumed lost: with `continue` their tasks go to the
    /// group's other workers (the ledger counts their results as they come), with `stop`, or when no worker of the group
    /// is left, the group is aborted and the loss goes up as the master's failure, naming that worker. When it holds
    /// chunks and has sent nothing up for half the slack, a keep-alive goes up (the header's "lost workers").
    const std::vector<master_action>& on_timer(double now);
    /// The group's workers presumed lost, in the order they were (their indices in the group).
    const std::vector<int>& lost() const noexcept { return group_.lost(); }

    bool over() const noexcept { return up_.ended() && group_.over(); }
    const farmer_session& group() const noexcept { return group_; }
    const worker_session& up() const noexcept { return up_; }
    /// Tasks in its pool not handed out yet.
    task_count pool_left() const noexcept { return group_.decisions().remaining(); }
    /// Messages it sent up (keep-alives aside); of them requests (ask), and requests that carried a chunk's results
    /// (merged).
    task_count up_messages() const noexcept { return up_messages_; }
    task_count up_requests() const noexcept { return up_requests_; }
    task_count merged_requests() const noexcept { return merged_; }
    /// The chunks it got from the supermaster, in order (their sizes).
    const std::vector<task_count>& chunks_received() const noexcept { return received_; }
    /// Once a failure went up: the worker of the group whose failure it was (-1: the master itself, or none yet).
    int failed_worker() const noexcept { return failed_worker_; }
    /// The ledger: the supermaster's chunks it holds, oldest first (the header's opening comment says how long).
    const std::deque<held_chunk>& held() const noexcept { return held_; }
    /// The held chunk with task `task` (null: none).
    const held_chunk* holding(task_count task) const noexcept;

private:
    void take_group(const std::vector<farmer_action>& actions);
    void take_up(worker_session::actions actions);
    void settle(double now);
    bool refill_due() const;
    void credit(chunk results, std::vector<held_chunk>& into);
    void read(int worker, const request_message& m);
    resource_sample readings() const;
    task_count next_unhanded(const chunk& c) const;
    void report_failure();
    double keep_alive_due() const;  ///< when a keep-alive goes up (infinity: none is due)

    farmer_session group_;
    worker_session up_;
    std::vector<double> powers_;
    std::vector<resource_sample> latest_;  ///< each worker's latest readings
    std::deque<held_chunk> held_;          ///< the ledger: the supermaster's chunks it holds, oldest first
    std::vector<master_action> actions_;
    std::vector<task_count> received_;
    bool failure_sent_ = false;
    int failed_worker_ = -1;
    task_count up_messages_ = 0, up_requests_ = 0, merged_ = 0;
    double keep_alive_ = 0.0;  ///< the most seconds it stays silent up while it holds chunks (0: no loss rule)
    double now_ = 0.0;         ///< the time of the event being handled
    double last_up_ = 0.0;     ///< when its last message went up
};

/// The supermaster's technique when none is given: the workers' technique when it is one of the weighted schemes
/// (registry family "weighted": dgss, dfss, dtss, dfiss, dtfss give HDGSS, HDFSS, HDTSS... of the two papers above),
/// else fss (factoring), whose chunks over K masters shrink by stages, so that the supermaster answers a few
/// requests per master and stage whatever the workers' technique (with ss for the workers the masters still
/// refill their pools in large chunks).
std::string default_master_technique(const std::string& technique);

/// The options of the supermaster's technique `top` over masters grouping `groups` workers each (contiguously):
/// the workers' options with weights, times and run queues per master: a master's weight is the sum of its
/// workers' (their count when no weights are given), its time per task 1 / sum (1 / t_j), its run queue
/// sum V / sum (V / Q); min_chunk at least the largest group, so that a chunk gives each worker of a group a task
/// (a smaller chunk runs a master's pool dry before its next request is answered). When `top` is the default fss
/// (`defaulted`) and no factor is given, x = 4: a stage hands out a quarter of what is left, because a chunk is
/// a whole group's work at once and its cost is not known beforehand (x = 2 gave a master of the Mandelbrot
/// profile's costly middle columns 1.5 times its share: docs/hierarchical.md).
technique_options master_options(const technique_options& workers, const std::vector<int>& groups,
                                 const std::string& top = "", bool defaulted = false);

}  // namespace pfarm
