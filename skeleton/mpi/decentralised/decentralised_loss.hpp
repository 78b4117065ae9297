// pfarm MPI engine, internal: the decentralised farm's hand-out again, under on_worker_loss (docs/reliability.md "A
// lost worker") and on_task_error retry ("Task errors"). Each claimer publishes its slot in rank 0's window after each
// claim (claim_beat), marks the tasks whose results it has put, and tells rank 0 of each failed run; rank 0
// (loss_host) watches the slots with the core's rule (pfarm/claim_watch.hpp) under on_worker_loss, and once every
// living claimer has ended hands the tasks nobody delivered to them again, point to point, then sends the outcome with
// the lost ranks. No collective includes a lost rank.
#pragma once

#include "one_sided.hpp"

#include "pfarm/claim_watch.hpp"

#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <string>
#include <vector>

namespace pfarm::detail {

/// Where the watch lies in the window's extra area (farm_window `extra`): one slot of 64 bytes per rank (the
/// claim_slot's five words, then rank 0's mark "presumed lost"), then one flag byte per task (1: its results are in).
struct watch_layout {
    static constexpr int slot_words = 8;
    static constexpr int mark_word = 5;
    watch_layout(int ranks, task_count tasks)
        : slots(header_bytes), flags(slots + 8 * slot_words * ranks), bytes(flags + static_cast<MPI_Aint>(tasks) - header_bytes) {}
    MPI_Aint slot(int rank) const { return slots + 8 * slot_words * rank; }
    MPI_Aint slots, flags, bytes;  ///< `bytes`: of the extra area
};

/// A claimer's side of the watch. Each write and put is completed by the claimer's next flush.
class claim_beat {
public:
    claim_beat(farm_window& window, const watch_layout& layout, int rank) : window_(window), layout_(layout), rank_(rank) {}
    /// It computes `c` now (count 0: it holds nothing, it has ended).
    void holds(chunk c);
    /// A sign of life between two tasks of its chunk (its beat alone).
    void beat();
    /// Whether rank 0 has presumed it lost (one atomic read and a flush): its results are then dropped.
    bool presumed_lost();
    /// The results of `c`, computed in `busy` seconds, are in rank 0's window (flushed): its flags follow, but for the
    /// tasks in `failed` (on_task_error retry: their runs failed).
    void delivered(chunk c, double busy, std::span<const task_count> failed = {});

private:
    farm_window& window_;
    const watch_layout& layout_;
    int rank_;
    std::int64_t slot_[5] = {};  ///< the slot being written: stays here until the flush
    std::int64_t done_ = 0, beat_ = 0;
    double busy_ = 0.0;
    std::vector<std::uint8_t> ones_;
};

/// Rank 0's watch and the end of the farm under on_worker_loss or on_task_error retry.
class loss_host {
public:
    /// `poison`: makes every rank's next claim find nothing (the counters' end, under stop). `watching`: the slots
    /// are watched (on_worker_loss). `attempts`: on_task_error retry's runs of a task in all (0: no retry).
    loss_host(MPI_Comm comm, farm_window& window, const watch_layout& layout, int ranks, int first_worker, task_count tasks,
              const worker_loss_rule& rule, task_count min_chunk, std::function<void()> poison, bool watching,
              int attempts);
    /// A run of task `task` on `rank` failed with `text` (on_task_error retry): rank 0's own, or told by a rank.
    void task_error(task_count task, int rank, const std::string& text);
    /// on_task_error retry's counts for the report: failed runs, and runs handed out again for them.
    task_count task_errors() const { return task_errors_; }
    task_count retried_tasks() const { return retried_; }
    /// A look at the slots, at most every few milliseconds unless `at_once`: the ranks presumed lost are marked, and under
    /// stop the farm fails.
    void watch(bool at_once = false);
    /// Waits, watching, until every living rank has ended (rank 0's own end is `mine`), handing the tasks nobody
    /// delivered to the ranks that ended (`compute_own` computes a piece on rank 0 when it is the only worker left;
    /// it returns rank 0's end after it), then sends every rank the outcome with the lost ranks and returns it.
    /// `idle` runs between two looks.
    outcome finish(rank_end mine, bool gentle, const std::function<rank_end(chunk)>& compute_own,
                   const std::function<void()>& idle);
    /// Each lost rank's part of the report: the tasks and seconds its last slot gave.
    std::vector<report_part> lost_parts() const;

private:
    void read_slots();
    void take_ends();
    /// Hands a piece of the queued tasks to each living rank that has ended (on_task_error retry: a failed task to
    /// another rank than its last one's while another lives).
    void hand_out();
    void end_of(int rank, const failure_header& h, const std::string& text);
    void presume_lost(int worker);

    MPI_Comm comm_;
    farm_window& window_;
    const watch_layout& layout_;
    int ranks_, first_;
    task_count tasks_;
    worker_loss_rule rule_;
    claim_watch watch_;
    std::function<void()> poison_;
    double last_look_ = -1.0;
    std::vector<std::int64_t> words_;    ///< every rank's slot as last read
    std::vector<claim_slot> slots_;      ///< the workers' slots
    std::vector<std::uint8_t> ended_;    ///< per worker: it has ended and waits (holds nothing)
    std::vector<std::uint8_t> watched_;  ///< per worker: watched (all but rank 0's own: a lost rank 0 ends the job)
    std::optional<outcome> failure_;     ///< the farm's failure: the lowest failed rank's, or a lost rank under stop
    std::int64_t mark_ = 1;
    bool watching_;
    int attempts_;
    struct failed_runs {
        int runs = 0, last_rank = -1;
        std::string last_text;
    };
    std::unordered_map<task_count, failed_runs> failed_runs_;  ///< on_task_error retry: per task whose run failed
    task_count task_errors_ = 0, retried_ = 0;
};

/// A run of task `task` failed with `text` on this rank (on_task_error retry): rank 0 is told (tag_failure, one message
/// below MPI's eager size, before this rank's end).
void send_task_error(MPI_Comm comm, int rank, task_count task, const std::string& text);

/// A rank other than 0 under on_worker_loss, once its claims have found nothing: sends rank 0 its end (`end()` gives
/// it, as it is then), and computes with `compute` each piece rank 0 hands it after it, until the outcome comes;
/// while it waits it runs `beat` every `interval` seconds (a sign of life for rank 0's watch).
outcome end_and_await_outcome(MPI_Comm comm, bool gentle, const std::function<rank_end()>& end,
                              const std::function<void(chunk)>& compute, const std::function<void()>& beat,
                              double interval);

}  // namespace pfarm::detail
