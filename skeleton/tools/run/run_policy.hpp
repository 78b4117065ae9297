// pfarm-run: when a run stops and what it exits with, as GNU parallel decides: --halt now|soon,fail|success=N|N%
// --timeout S or N% of the median run time, --retries N (runs in
// all) and the exit status (the failed commands, at most 101; a halting command's own status; 255 for errors).
#pragma once

#include "run_records.hpp"

#include <string>
#include <vector>

namespace pfarm::tools::run {

/// --halt: when the run stops starting (soon) or also kills (now) commands.
struct halt_policy {
    enum when_t { never, soon, now } when = never;
    bool on_success = false;  ///< success=...: halt on succeeded commands instead of failed ones
    bool on_done = false;     ///< done=...: halt on finished commands, whatever their outcome
    double count = 0;         ///< N commands, or N percent of the commands with `percent`
    bool percent = false;

    /// Whether `hits` commands (failed; succeeded with on_success; finished with on_done) of `total` reach it.
    bool reached(task_count hits, task_count total) const;
};

/// Parses GNU parallel's --halt: never, now|soon,fail|success|done=N|N%, and the old numbers 0 (never), 1
/// (soon,fail=1), 2 (now,fail=1). Throws invalid_argument naming --halt.
halt_policy parse_halt(const std::string& text);

/// --timeout: seconds, or a percentage of the median run time of the commands that succeeded on the rank.
struct timeout_spec {
    double seconds = 0;  ///< > 0: a fixed timeout
    double percent = 0;  ///< > 0: percent of the median
    /// The timeout for the next command, given the run times of the rank's commands that succeeded (0: none yet:
    /// a percentage needs 3 of them first).
    double limit(std::vector<double>& runtimes) const;
};

/// Parses --timeout: S (> 0, fractions allowed) or N% (> 0). Throws invalid_argument naming --timeout.
timeout_spec parse_timeout(const std::string& text);

/// GNU parallel's exit status (20221122, measured): `failed` commands, at most 101; after a halt on success, 0; after
/// a halt on a percentage (fail=N%, done=N%), the percentage of the `total` jobs that failed, rounded up; after a halt
/// on fail=1, the exit status of the command that failed (`halt_status`); after the other halts, `failed`.
int gnu_exit_status(task_count failed, task_count total, bool halted, const halt_policy& halt, int halt_status);

}  // namespace pfarm::tools::run
