// pfarm-run: the commands one rank runs at once (--jobs N): up to N, each in a slot of its own from its first
// attempt to its last (a command that fails runs again in its slot, --retries), and those that ended. No MPI.
#pragma once

#include "run_process.hpp"
#include "run_records.hpp"

#include <functional>
#include <optional>
#include <vector>

namespace pfarm::tools::run {

/// A command in a slot: its task, its attempts, its record as they end.
struct slot_job {
    task_count task = 0;    ///< the caller's number for it (the farm's task)
    int slot = 0;           ///< 0 to jobs - 1
    int attempt = 0;        ///< attempts started
    task_result record;     ///< start (first attempt), end, attempts, exit status, signal, outcome (last attempt)
    command_status status;  ///< the last attempt's (its output, when captured)
    std::uint64_t streamed[2] = {0, 0};  ///< line-buffered: bytes of stdout and stderr handed on, every attempt's
};

/// Up to `jobs` commands running at once on this rank, each run up to `runs` times in all until it succeeds, is
/// killed, or the run halts.
class job_slots {
public:
    /// `prepare(task, slot, attempt)`: what that attempt runs. `halted()`: whether the run has halted (a failed
    /// command is then not run again). `report(job)`: an attempt ended with an error text (status.error).
    job_slots(int jobs, int runs, std::function<command_spec(task_count, int, int)> prepare,
              std::function<bool()> halted, std::function<void(const slot_job&)> report);

    int jobs() const noexcept { return static_cast<int>(slots_.size()); }
    /// Commands running (in their slots).
    std::size_t running() const noexcept { return runner_.running(); }
    /// Starts the first attempt of `task` (its record's fixed fields in `record`) in a free slot: there must be
    /// one (running() < jobs()); throws pfarm::error otherwise.
    void start(task_count task, const task_result& record);
    /// Waits until fewer than `below` commands run (0 < below); returns the jobs that ended since the last call,
    /// after their last attempt, in the order they ended.
    std::vector<slot_job> wait_below(std::size_t below);
    /// Line-buffered commands (command_spec::lines): each piece of their output goes to `lines` with its job as it
    /// comes, from inside wait_below; `tick` is called at least every `period` seconds while it waits.
    void on_lines(std::function<void(const slot_job&, const line_piece&)> lines, std::function<void()> tick,
                  double period);

private:
    void launch(std::size_t slot);
    bool settle(std::size_t slot, command_status st);

    process_runner runner_;
    int runs_;
    std::function<command_spec(task_count, int, int)> prepare_;
    std::function<bool()> halted_;
    std::function<void(const slot_job&)> report_;
    std::vector<std::optional<slot_job>> slots_;
    std::vector<slot_job> ended_;
};

}  // namespace pfarm::tools::run
