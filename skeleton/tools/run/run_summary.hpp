// pfarm-run: the summary rank 0 prints on stderr at the end of a run: the counts of each outcome and the first
// failed commands. No MPI.
#pragma once

#include "run_records.hpp"

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace pfarm::tools::run {

/// The outcomes of a run's commands, counted as their records reach rank 0.
struct tally {
    task_count ok = 0, failed = 0, timed_out = 0, not_run = 0, not_started = 0;
    task_count restored = 0, restored_ok = 0;  ///< from the journal (all outcomes) and of them succeeded
    std::vector<std::pair<task_count, task_result>> failures;  ///< the first few, for the summary

    void add(task_count task, const task_result& r, bool from_journal) {
        switch (r.what()) {
        case outcome::ok: ++ok; break;
        case outcome::failed: ++failed; break;
        case outcome::timed_out: ++timed_out; break;
        case outcome::not_run: ++not_run; break;
        case outcome::not_started: ++not_started; break;
        case outcome::killed: ++killed; break;
        }
        if (from_journal) restored += 1, restored_ok += r.what() == outcome::ok;
        if (r.what() != outcome::ok && r.what() != outcome::not_run && r.what() != outcome::killed && failures.size() < 5) failures.emplace_back(task, r);
    }
    task_count killed = 0;
    bool all_ok(task_count commands) const { return ok == commands; }
    /// Commands that count as failed in the exit status: failed, timed out, not started.
    task_count failures_count() const { return failed + timed_out + not_started; }
};

/// "pfarm-run: N commands: ... succeeded, ... failed" and the first failed commands (their text from `texts`).
void print_summary(std::ostream& out, const tally& t, task_count commands, bool halted, const std::vector<std::string>& texts,
                   const std::string& joblog);

}  // namespace pfarm::tools::run
