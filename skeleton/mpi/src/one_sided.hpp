// pfarm MPI engine, internal: what the two farms without a farmer share (decentralised/, stealing/): their one-sided
// window over every rank (one MPI_Win_allocate, one MPI_Win_lock_all epoch for the whole farm), how a rank runs a
// chunk's tasks, their end, point to point (each rank tells rank 0 it is done and how, and rank 0 answers every rank
// with the farm's outcome), and their report (every rank's part merged on rank 0).
#pragma once

#include "engine.hpp"

#include "pfarm/mpi.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pfarm::detail {

inline constexpr MPI_Aint header_bytes = 64;
inline constexpr std::size_t piece = std::size_t{1} << 30;  ///< one MPI_Get/MPI_Put moves at most this many bytes

/// A farm's window: on rank 0, a header of 64 bytes (the farm's counters), `extra` bytes after it (the decentralised
/// farm's watch under on_worker_loss), the inputs (unless replicated or empty) and the outputs, 64-byte aligned; on
/// every other rank the header alone when `header_everywhere` (the work-stealing farm's ranges), else no memory.
/// Locked for every rank (MPI_Win_lock_all) from construction to destruction, which frees it (collective: every rank
/// destroys it together) unless it was abandoned.
class farm_window {
public:
    farm_window(MPI_Comm comm, int rank, task_count tasks, std::size_t in_bytes, std::size_t out_bytes,
                bool header_everywhere = false, MPI_Aint extra = 0) {
        const auto n = static_cast<MPI_Aint>(tasks);
        in_size_ = static_cast<MPI_Aint>(in_bytes) * n;
        out_size_ = static_cast<MPI_Aint>(out_bytes) * n;
        extra = (extra + 63) / 64 * 64;
        const MPI_Aint bytes =
            rank == 0 ? header_bytes + extra + in_size_ + out_size_ + 64 : header_everywhere ? header_bytes : 0;
        // Across nodes the window needs a one-sided component that works over their network: Open MPI 4.1's
        // osc/rdma needs RDMA hardware, and over TCP only osc/pt2pt serves (switched off by Debian's
        // openmpi-mca-params.conf), so the error says which setting makes it work.
        mpi::check(MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, comm, &base_, &win_),
                   "MPI_Win_allocate (the decentralised farm's window over every rank; across nodes over TCP, Open "
                   "MPI 4.1 needs --mca osc pt2pt,sm; docs/cluster.md)");
        bytes_ = bytes;
        std::int64_t at[2] = {0, 0};
        if (rank == 0) {  // the outputs start 64-byte aligned, so rank 0's final copy out of them is too
            at[0] = header_bytes + extra;
            const auto end = reinterpret_cast<std::uintptr_t>(base_) + static_cast<std::uintptr_t>(at[0] + in_size_);
            at[1] = at[0] + in_size_ + static_cast<std::int64_t>((64 - end % 64) % 64);
        }
        mpi::check(MPI_Bcast(at, 2, MPI_INT64_T, 0, comm), "MPI_Bcast");
        in_at_ = at[0], out_at_ = at[1];
        mpi::check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), "MPI_Win_lock_all");
    }
    ~farm_window() {
        if (abandoned_) return;
        MPI_Win_unlock_all(win_);
        MPI_Win_free(&win_);
    }
    /// A rank of the farm was lost: the window is left as it is (MPI_Win_free is collective and would wait for the
    /// lost rank; the process skips MPI_Finalize after a loss, pfarm::mpi::finalize).
    void abandon() { abandoned_ = true; }
    farm_window(const farm_window&) = delete;
    farm_window& operator=(const farm_window&) = delete;

    MPI_Win get() const { return win_; }
    std::byte* local(MPI_Aint at) { return static_cast<std::byte*>(base_) + at; }  ///< this rank's memory
    MPI_Aint in_at() const { return in_at_; }
    MPI_Aint out_at() const { return out_at_; }
    MPI_Aint in_size() const { return in_size_; }
    MPI_Aint out_size() const { return out_size_; }
    MPI_Aint bytes() const { return bytes_; }  ///< of this rank's memory

    /// Moves `bytes` between `local` and rank 0's window at `at`, in pieces MPI counts can hold; completed by
    /// the next flush.
    void put(const std::byte* local, std::size_t bytes, MPI_Aint at) {
        for (std::size_t done = 0; done < bytes; done += piece) {
            const int n = static_cast<int>(std::min(piece, bytes - done));
            mpi::check(MPI_Put(local + done, n, MPI_BYTE, 0, at + static_cast<MPI_Aint>(done), n, MPI_BYTE, win_), "MPI_Put");
        }
    }
    void get(std::byte* local, std::size_t bytes, MPI_Aint at) {
        for (std::size_t done = 0; done < bytes; done += piece) {
            const int n = static_cast<int>(std::min(piece, bytes - done));
            mpi::check(MPI_Get(local + done, n, MPI_BYTE, 0, at + static_cast<MPI_Aint>(done), n, MPI_BYTE, win_), "MPI_Get");
        }
    }
    /// Puts a batch: `bytes` of results, packed in `local` one chunk after another, to `at[i]` (`lengths[i]`
    /// bytes each), with one MPI_Put through an hindexed target datatype (one call per batch, not per chunk).
    void put_batch(const std::byte* local, std::size_t bytes, std::vector<MPI_Aint>& at, std::vector<int>& lengths) {
        if (at.size() == 1) return put(local, bytes, at[0]);
        MPI_Datatype target;
        mpi::check(MPI_Type_create_hindexed(static_cast<int>(at.size()), lengths.data(), at.data(), MPI_BYTE, &target),
                   "MPI_Type_create_hindexed");
        mpi::check(MPI_Type_commit(&target), "MPI_Type_commit");
        const int rc = MPI_Put(local, static_cast<int>(bytes), MPI_BYTE, 0, 0, 1, target, win_);
        MPI_Type_free(&target);  // the put in flight keeps what it needs (MPI_Type_free)
        mpi::check(rc, "MPI_Put");
    }
    /// Completes this rank's operations on `target`'s memory (at the target too).
    void flush(int target = 0) { mpi::check(MPI_Win_flush(target, win_), "MPI_Win_flush"); }
    /// Completes this rank's operations on every rank's memory.
    void flush_all() { mpi::check(MPI_Win_flush_all(win_), "MPI_Win_flush_all"); }

private:
    void* base_ = nullptr;
    MPI_Win win_ = MPI_WIN_NULL;
    MPI_Aint in_at_ = 0, out_at_ = 0, in_size_ = 0, out_size_ = 0, bytes_ = 0;
    bool abandoned_ = false;
};

/// A task that failed a chunk (run_chunk_tasks): its index and what it threw.
struct chunk_failure {
    task_count task = -1;
    std::string text;
};

/// Runs the tasks of chunk `c` from `inputs` into `results` (each at its offset by the kernel's sizes) on rank `rank`,
/// `t0` its clock's start: a task that throws under on_task_error skip or retry is noted in `failed` (its outputs the
/// kernel's fill, or zero) and the chunk goes on; under stop it ends the chunk, returned; an emulated slowdown sleeps what it owes in
/// slices of at least 1 ms (as worker_side.cpp); `between`, when set, runs after each task.
std::optional<chunk_failure> run_chunk_tasks(const task_kernel& kernel, const shared_setup& setup, int rank, double t0,
                                             const chunk& c, const std::byte* inputs, std::byte* results,
                                             std::vector<failed_task>& failed, const std::function<void()>& between);

/// The end of the farm, on tag_failure: each rank to rank 0 (done, and whether and how it failed; its text
/// follows), then rank 0's answer to each (the outcome: `failed` holds its farm_outcome::kind; its text follows).
struct failure_header {
    std::int64_t task = -1;  ///< the task that threw; -1: the rank failed otherwise (an MPI error)
    std::int32_t length = 0;  ///< bytes of the text that follows
    std::int32_t failed = 0;
    std::int32_t rank = 0;
};

/// How a rank ends: its failure (none: it is done, its results flushed) and the failure's text.
struct rank_end {
    std::optional<failure_header> failure;
    std::string text;
};

/// Rank 0: waits (running `idle` between two tests, without holding a core when `gentle`: docs/skeleton.md "Waiting
/// without spinning") until every rank of `comm` has said it is done, then sends each the outcome: ok, or the failure
/// of the lowest failed rank (`mine` is rank 0's own).
outcome collect_outcome(MPI_Comm comm, int ranks, const rank_end& mine, bool gentle, const std::function<void()>& idle);

/// Another rank: tells rank 0 it is done (its results flushed) and how, then waits for the outcome without holding a
/// core when `gentle`.
outcome report_and_await_outcome(MPI_Comm comm, const rank_end& mine, bool gentle);

/// A chunk as a claiming rank saw it (its own clock since the farm's start).
struct chunk_record {
    std::int64_t first = 0, count = 0;
    double claimed = 0.0, started = 0.0, finished = 0.0, flushed = 0.0;
};

/// Rank `rank`'s part of the report, on its clock: its worker line `w`, its chunks' `records` when `keep_records` (a
/// trace was asked for) and its failed tasks.
report_part own_part(int rank, worker_part w, const std::vector<chunk_record>& records, bool keep_records,
                     const std::vector<failed_task>& failed);

/// The report of a farm without a farmer, into `r` (empty_report's): every rank's part `mine` (on its own clock)
/// gathered on rank 0, shifted to rank 0's clock by `offsets` (clock_offsets) and merged, the ranks from
/// `first_computing` on computing; on any other rank, its own part alone (no times, trace or failed tasks: those are
/// rank 0's). `lost` (on_worker_loss, after a loss): the parts travel point to point from the ranks it does not name
/// (send_part, receive_parts; a lost rank alive after all sends none), a lost rank's part being its entry in
/// `lost_parts` on rank 0 (its tasks, no chunks); rank 0 waits `wait` seconds at most for each part (a rank that died
/// after the outcome sends none).
void merge_rank_parts(MPI_Comm comm, int rank, int ranks, report_part mine, const std::vector<double>& offsets,
                      int first_computing, farm_report& r, const std::vector<int>* lost = nullptr,
                      std::vector<report_part> lost_parts = {}, double wait = 0.0);

}  // namespace pfarm::detail

