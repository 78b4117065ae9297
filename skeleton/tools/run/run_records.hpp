// pfarm-run: what a finished command leaves behind, and how a rerun finds it. The record of one command, each
// rank's own file of the records of the commands it ran (written the moment each one ends, so a killed job loses
// no finished command), the journal (the same records, keyed by the command itself) and what a rerun keeps. No MPI.
#pragma once

#include "run_process.hpp"

#include "pfarm/technique.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

namespace pfarm::tools::run {

/// One command's outcome: the farm's output of its task, streamed to rank 0 for the job log and kept by the
/// journal (its bytes are the journal's record).
struct task_result {
    std::uint64_t command_hash = 0;  ///< record_key() of the command that ran: ties a record to its command
    std::uint64_t run = 0;           ///< the pfarm-run invocation that ran it (a record restored from the journal has another)
    double start = 0.0, end = 0.0;   ///< Unix time: its first attempt's start, its last attempt's end
    std::int32_t rank = -1;          ///< the rank that ran it
    std::int32_t attempts = 0;       ///< attempts made (1 + retries used; 0: not run)
    std::int32_t exit_code = -1;     ///< the last attempt's exit status; -1 when it did not exit
    std::int32_t signal = 0;         ///< the signal that ended the last attempt; 0 when it exited
    std::uint8_t status = 0;         ///< an outcome
    char host[63] = {};              ///< the rank's host name, cut to 62 bytes, NUL-terminated

    outcome what() const noexcept { return static_cast<outcome>(status); }
};
static_assert(std::is_trivially_copyable_v<task_result> && sizeof(task_result) == 112);

/// FNV-1a 64 of the command's text.
std::uint64_t command_hash(const std::string& command);

/// The key of a command's record: command_hash of its text, mixed with its occurrence (0 for its first in the list
/// of commands, 1 for the next identical one...): a journal is keyed by the commands themselves, not their places.
std::uint64_t record_key(const std::string& command, std::size_t occurrence);

/// record_key of each command of `commands`.
std::vector<std::uint64_t> record_keys(const std::vector<std::string>& commands);

/// The file of rank `rank`'s records beside journal `journal`: JOURNAL.rank-R.
std::string rank_records_path(const std::string& journal, int rank);

/// A rank's records file: one fixed-size record (magic, task index, task_result, FNV-1a checksum) appended with one
/// write(2) as each command ends, before its result leaves the rank. A process killed after that write keeps the
/// record (the data is in the kernel); the file is fdatasync'ed at most every 10 seconds and when closed.
class rank_records {
public:
    /// Creates (truncates, unless `append`) `path`. Throws invalid_argument naming `argument` when it cannot.
    rank_records(std::string path, const std::string& argument, bool append = false);
    ~rank_records();
    rank_records(const rank_records&) = delete;
    rank_records& operator=(const rank_records&) = delete;

    /// Appends task `index`'s record. Throws pfarm::error when the write fails.
    void append(task_count index, const task_result& result);
    /// Closes and deletes the file (the run ended and the journal holds every record).
    void remove();
    /// Deletes the file if it holds no record (a run that failed before any command ended).
    void remove_if_empty() {
        if (records_ == 0) remove();
    }

private:
    int fd_ = -1;
    std::size_t records_ = 0;
    std::string path_;
    double last_sync_ = 0.0;
};

/// Every whole record of records file `path` with a right checksum, in order, up to the first that is not.
std::vector<task_result> read_records(const std::string& path);

/// Reads records file `path`: every whole record with a right checksum, up to the first that is not (a torn
/// tail); records of tasks >= `tasks` are skipped.
std::map<task_count, task_result> read_rank_records(const std::string& path, task_count tasks);

/// What a rerun starts from: the commands the journal (with the ranks' records) says are done.
struct resume_plan {
    bool journal_exists = false;
    std::map<task_count, task_result> done;  ///< by the index of the command now: restored, not run again
    task_count dropped_failed = 0;           ///< failed, timed-out, killed or not-started records dropped (--retry-failed)
    task_count dropped_not_run = 0;          ///< records of commands a halted run never started, dropped
    task_count dropped_other = 0;            ///< records of commands that are not among these (a changed command)
    task_count merged = 0;                   ///< records found in the ranks' files
};

/// Rank 0, before a run with journal `journal` over `commands`. The journal is a records file (the same records as
/// the ranks' files, rank 0 appends each record that reaches it); a record belongs to a command by its record_key,
/// so a sweep that has grown runs only its new commands, and a changed command is a new one. Reads the journal and
/// the ranks' records files beside it and decides what the rerun keeps: every command that ran, except failed
/// ones when `retry_failed` and commands that never ran. With `write`, writes the journal anew (JOURNAL.tmp,
/// renamed over it) with what is kept (records of commands not among these are dropped), then deletes the ranks'
/// records files. Throws invalid_argument naming `argument` when the file is not a pfarm-run journal, or when it
/// holds records and none of them is of these commands (another sweep's journal).
resume_plan prepare_journal(const std::string& journal, const std::vector<std::string>& commands, bool retry_failed,
                            bool write, const std::string& argument);

}  // namespace pfarm::tools::run
