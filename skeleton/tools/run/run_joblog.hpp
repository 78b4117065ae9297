// pfarm-run: the job logs rank 0 writes and reads. --joblog is GNU parallel's (Seq Host Starttime JobRuntime Send
// Receive Exitval Signal Command; a newline in a command written as a NUL byte, as GNU parallel does, so every row
// is one line; "-" is standard output), which --resume and --resume-failed read back; --joblog-full is pfarm-run's
// own TSV (rank, end, attempts, status, source). No MPI.
#pragma once

#include "run_records.hpp"

#include <set>
#include <string>

namespace pfarm::tools::run {

/// A job log being written: GNU parallel's columns, or pfarm-run's (`full`).
class job_log {
public:
    job_log() = default;
    ~job_log();
    job_log(const job_log&) = delete;
    job_log& operator=(const job_log&) = delete;

    /// Opens `path` ("-": standard output; empty: no log). `append`: add to an existing log without a new header
    /// (--resume). Throws invalid_argument naming `argument` when it cannot be written.
    void open(const std::string& path, bool full, bool append, const std::string& argument);
    /// One row: command `task` (from 0) with record `r`, `received` bytes of stdout, `restored` from the journal.
    void add(task_count task, const task_result& r, std::size_t received, bool restored, const std::string& command);

private:
    void write(const std::string& s);
    int fd_ = -1;
    bool close_ = false, full_ = false;
    std::string path_;
};

/// GNU parallel's Exitval and Signal of a record: -1 and 15 for a timeout, 0 and the signal when killed.
std::pair<int, int> gnu_exit_and_signal(const task_result& r);

/// The commands a GNU parallel job log records (--resume: all of them; `failed_again`, --resume-failed: those that
/// exited 0 without a signal), their text as written (a NUL back to a newline). A missing file holds none. Throws
/// invalid_argument naming `argument` when it is not a GNU parallel job log.
std::multiset<std::string> joblog_commands(const std::string& path, bool failed_again, const std::string& argument);

}  // namespace pfarm::tools::run
