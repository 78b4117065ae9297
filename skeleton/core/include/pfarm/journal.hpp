// pfarm journal: the append-only file that makes a farm resumable (farm_options::resume.journal, docs/reliability.md
// "Resume after a crash"). Rank 0 appends one record per finished task (its index and its output bytes) as
// results arrive; a rerun with the same journal restores those outputs and farms only the rest. No transport.
//
// File: a header, then records. Header: "PFARMJ1\n", then u64 fingerprint (what the journal belongs to: task
// count, output shape, inputs, and the caller's key, farm.hpp), u64 tasks, u64 checksum of the two. Record:
// u32 magic 0x4a524543 ("CERJ"), u32 flags (0: an output; 1: the task failed and was skipped, on_task_error skip:
// the bytes are its error's text, and a later record of the task replaces it; 2: a worker rank was presumed lost,
// on_worker_loss continue: the index is its rank and the bytes say why; any other value is refused), u64 index,
// u64 size, `size` bytes, u64 checksum (FNV-1a 64 of index, size and bytes). Little-endian (the machine's; a journal is read where it was written).
// Loss window: records are written to the file (write(2)) in batches: a record is written with those pending
// when 64 are pending or when it comes 1 second or more after the last write, and every pending record when the
// farm ends. There is no timer: a process killed (SIGKILL, a dead node's job) loses at most the last unwritten
// batch, up to 63 records that all came within 1 second of the last write, however long ago that was (slow
// tasks: until the next record comes). The file is fdatasync'ed at most every 10 seconds and at the end, so a machine
// crash loses at most the last 10 seconds. A torn or corrupt last record is detected by its checksum and
// dropped (the file is truncated to the last whole record before appending).
#pragma once

#include "pfarm/technique.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pfarm {

/// FNV-1a 64 over `bytes`, continuing from `hash` (the journal's checksum and fingerprint).
std::uint64_t fnv1a(const void* bytes, std::size_t size, std::uint64_t hash = 0xcbf29ce484222325ull);

/// What a journal holds: the finished tasks' outputs, by index.
struct journal_contents {
    std::uint64_t fingerprint = 0;
    task_count tasks = 0;
    std::unordered_map<task_count, std::vector<std::byte>> outputs;
    std::unordered_map<task_count, std::string> failed;  ///< tasks recorded failed (skipped), their error: not in outputs
    /// The ranks recorded lost by the runs that wrote the journal (on_worker_loss continue), in the order recorded,
    /// each with its note. A rank lost in two runs is listed twice.
    std::vector<std::pair<int, std::string>> lost;
    std::size_t valid_bytes = 0;    ///< the file's length up to its last whole record
    std::size_t dropped_bytes = 0;  ///< a torn or corrupt tail, dropped
};

/// Reads journal `path`. A missing or empty file: nothing journaled yet (nullopt-like: tasks == 0 and
/// valid_bytes == 0). Throws invalid_argument naming `argument` when the file is not a journal (bad header),
/// belongs to another workload (fingerprint or task count differ), or a record names a task out of range.
journal_contents read_journal(const std::string& path, std::uint64_t fingerprint, task_count tasks,
                              const std::string& argument = "journal");

/// Appends records to a journal (rank 0). Opening checks the path (throws invalid_argument naming `argument`
/// when it cannot be opened for writing, or is a directory), truncates a torn tail, and writes the header to a
/// new file.
class journal_writer {
public:
    journal_writer(const std::string& path, std::uint64_t fingerprint, task_count tasks, std::size_t valid_bytes,
                   const std::string& argument = "journal");
    ~journal_writer();
    journal_writer(const journal_writer&) = delete;
    journal_writer& operator=(const journal_writer&) = delete;

    /// Task `index` finished with output `bytes`: recorded, written with its batch (see the loss window).
    void append(task_count index, const void* bytes, std::size_t size) { append(index, bytes, size, 0); }
    /// Task `index` failed with `error` and was skipped: recorded so, replacing an output recorded before (its fill);
    /// a rerun computes it again.
    void append_failure(task_count index, const std::string& error);
    /// Worker rank `rank` was presumed lost and the farm went on without it (on_worker_loss continue): recorded with
    /// `note`, so that the journal names the ranks its runs lost.
    void append_lost(int rank, const std::string& note);
    /// Writes what is pending and syncs the file (the farm's end). Throws pfarm::error when a write fails.
    void close();
    std::size_t records() const noexcept { return records_; }

private:
    void append(task_count index, const void* bytes, std::size_t size, std::uint32_t flags);
    void write_pending(bool sync);

    int fd_ = -1;
    std::string path_, argument_;
    std::vector<std::byte> pending_;
    std::size_t pending_records_ = 0, records_ = 0;
    double last_write_ = 0.0, last_sync_ = 0.0;
};

}  // namespace pfarm
