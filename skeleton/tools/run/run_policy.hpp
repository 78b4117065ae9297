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
    double count = 0;         ///< N commands, or N percent of the commands with `percent`
    bool percent = false;

    /// Whether `hits` commands (failed, or succeeded with on_success) of `total` reach the threshold.
    bool reached(task_count hits, task_count total) const;
};

/// Parses GNU parallel's --halt: never, now|soon,fail|success=N|N%, and the old numbers 0 (never), 1 (soon,fail=1),
/// 2 (now,fail=1). Throws invalid_argument naming --halt (done=... is refused by name).
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

/// GNU parallel's exit status: `failed` commands, at most 101; with a halt caused by a failure, the exit status of
/// the command that caused it (`halt_status`); a halt on success: 0.
int gnu_exit_status(task_count failed, bool halted, bool halt_on_success, int halt_status);

}  // namespace pfarm::tools::run
