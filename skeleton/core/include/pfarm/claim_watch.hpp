// pfarm scheduling core: the decentralised farm's watch over its claimers under on_worker_loss (docs/reliability.md
// "A lost worker"). With no farmer, each claimer publishes a slot in rank 0's window (claim_slot: a beat, the chunk it
// holds, its pace so far) and marks each task whose results it has put; rank 0 looks at the slots. This is the rule
// only, transport-free: who is presumed lost (the loss rule's one deadline, loss_deadline in farmer.hpp, from the
// last change of its beat) and, once every living claimer has ended, which tasks nobody delivered, handed out again
// in pieces as the farmer hands out a lost worker's (returned_piece). The MPI side is
// skeleton/mpi/decentralised/decentralised_loss.cpp.
#pragma once

#include "pfarm/farmer.hpp"

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <vector>

namespace pfarm {

/// What a claimer publishes after each claim, and when it ends (one slot per worker).
struct claim_slot {
    std::int64_t beat = 0;              ///< how many times it has written its slot: a change is a sign of life
    std::int64_t first = 0, count = 0;  ///< the chunk it computes; count 0: none
    std::int64_t done = 0;              ///< tasks whose results it has put
    double busy = 0.0;                  ///< seconds it spent computing them
};

/// Rank 0's watch. A claimer beats (writes its slot's beat) after each claim, while it computes between two tasks at
/// least every beat_interval(rule), and as often while it waits for rank 0 once it has ended. It is presumed lost when
/// its beat has not changed for loss_deadline(rule, when rank 0 saw it change or handed it tasks, one task if its slot
/// holds a chunk, else none, its pace: its own seconds per task, else the mean over the slots, else the slack).
class claim_watch {
public:
    /// Seconds between two beats of a computing claimer: a quarter of the slack, within [10 ms, 1 s].
    static double beat_interval(const worker_loss_rule& rule);

    /// Throws invalid_argument naming "tasks", "workers" or "min_chunk"; the rule as check_worker_loss_rule.
    claim_watch(task_count tasks, int workers, const worker_loss_rule& rule, task_count min_chunk);

    /// A look at `now` (rank 0's clock): `slots[w]` is worker w's slot as read now; `watched[w]` == 0 for a worker
    /// not watched (rank 0's own). Returns the workers presumed lost at this look.
    std::vector<int> look(double now, std::span<const claim_slot> slots, std::span<const std::uint8_t> watched);
    /// Worker `w` was handed tasks at `now`: its deadline runs from then.
    void handed(int w, double now);
    /// Once every living claimer has ended: queues the tasks whose results nobody put (`delivered[t]` == 0), and
    /// returns whether any are queued; a task for which `alone(t)` holds (on_task_error retry: a task whose run
    /// failed) is queued as a piece of its own. O(tasks) over the whole farm (a cursor skips the delivered prefix).
    bool queue_missing(std::span<const std::uint8_t> delivered, const std::function<bool(task_count)>& alone = {});
    /// The next piece of the queued tasks for a worker that takes some (returned_piece among the living workers);
    /// count 0 when the queue is empty.
    chunk next_piece();
    /// A piece taken by next_piece() and not handed out goes back to the front of the queue.
    void put_back(chunk c) { queued_.push_front(c); }
    bool lost(int w) const { return lost_.at(static_cast<std::size_t>(w)) != 0; }
    /// The workers presumed lost so far, in the order they were.
    const std::vector<int>& lost_workers() const { return lost_order_; }
    int living() const { return workers_ - static_cast<int>(lost_order_.size()); }

private:
    task_count tasks_;
    int workers_;
    worker_loss_rule rule_;
    task_count min_chunk_;
    task_count cursor_ = 0;  ///< tasks [0, cursor_) are all delivered
    std::vector<std::int64_t> beat_;  ///< each worker's beat when it last changed
    std::vector<double> since_;       ///< when rank 0 saw that change (or handed it tasks); < 0: not yet looked at
    std::vector<std::uint8_t> lost_;
    std::vector<int> lost_order_;
    std::deque<chunk> queued_;
};

}  // namespace pfarm
