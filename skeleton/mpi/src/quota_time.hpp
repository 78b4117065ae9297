// pfarm MPI engine, internal: a chunk's compute time as the farmer judges a worker by, when the rank runs under a CPU
// quota (docs/calibration.md "Chunk times under a CPU quota"): at least the CPU time its tasks took divided by the
// quota, the time the same work takes at the pace the rank can keep.
//
// Why: a quota lets a cgroup run `quota` of CPU time in each period at the core's full speed, then stops it until the
// next period. A rank that idled before a chunk (waiting for its reply, at the calibration barrier) has its slice
// unspent, and a chunk of up to about two slices runs at full speed across a period's end: on a node at 0.2 of a
// core, a 35 ms calcium experiment took 39 ms of wall time where the rank's pace is 175 ms, and its calibration read
// the node almost twice as fast as it is. CPU time over the quota does not depend on where in the period the chunk
// fell. It is a lower bound of the sustained time (the quota is the most a process of the cgroup can get, shared
// with whatever else runs in it), so the time reported is the larger of it and the wall time.
#pragma once

#include <algorithm>
#include <ctime>

namespace pfarm::detail {

/// The process's CPU time in seconds, every thread (a task's own threads included).
inline double process_cpu_seconds() noexcept {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// A worker's CPU time over a chunk, and the chunk's time from it. Inactive (no quota: `cores` 0) it reads no clock
/// and gives the wall time back unchanged.
class quota_time {
public:
    /// `cores`: the rank's CPU quota in CPUs (shared_setup::quota_cores), 0 for none.
    explicit quota_time(double cores) noexcept : cores_(cores > 0.0 ? cores : 0.0) {}
    bool active() const noexcept { return cores_ > 0.0; }
    /// A chunk begins: its CPU time counts from zero.
    void begin() noexcept { cpu_ = 0.0; }
    /// A stretch of the chunk's work begins (a task, or the whole chunk).
    void mark() noexcept {
        if (active()) mark_ = process_cpu_seconds();
    }
    /// The stretch begun at mark() ends: its CPU time is added to the chunk's.
    void add() noexcept {
        if (active()) cpu_ += process_cpu_seconds() - mark_;
    }
    /// The chunk's time, given its measured compute (wall) time: max(wall, CPU time / quota).
    double seconds(double wall) const noexcept { return active() ? std::max(wall, cpu_ / cores_) : wall; }

private:
    double cores_;
    double cpu_ = 0.0;
    double mark_ = 0.0;
};

}  // namespace pfarm::detail
