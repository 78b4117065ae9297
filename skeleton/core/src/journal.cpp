// pfarm journal: reading, checking and appending the resumable farm's journal (pfarm/journal.hpp says the
// format and the loss window).
#include "pfarm/journal.hpp"

#include "pfarm/error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <limits>

namespace pfarm {

namespace {

constexpr char header_magic[8] = {'P', 'F', 'A', 'R', 'M', 'J', '1', '\n'};
constexpr std::uint32_t record_magic = 0x4a524543u;
constexpr std::uint32_t output_flag = 0;  ///< a record's second word: its bytes are a finished task's output
constexpr std::uint32_t failed_flag = 1;  ///< its bytes are a failed task's error text
constexpr std::uint32_t lost_flag = 2;    ///< its index is a rank presumed lost, its bytes a note
constexpr std::size_t header_bytes = 8 + 3 * sizeof(std::uint64_t);
constexpr std::size_t record_head = 2 * sizeof(std::uint32_t) + 2 * sizeof(std::uint64_t);
constexpr std::size_t batch_records = 64;
constexpr double batch_seconds = 1.0, sync_seconds = 10.0;

double seconds_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class T>
T load(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <class T>
void put(std::vector<std::byte>& out, T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + sizeof v);
}

std::uint64_t header_checksum(std::uint64_t fingerprint, std::uint64_t tasks) {
    return fnv1a(&tasks, sizeof tasks, fnv1a(&fingerprint, sizeof fingerprint));
}

}  // namespace

std::uint64_t fnv1a(const void* bytes, std::size_t size, std::uint64_t hash) {
    const auto* p = static_cast<const unsigned char*>(bytes);
    for (std::size_t i = 0; i < size; ++i) hash = (hash ^ p[i]) * 0x100000001b3ull;
    return hash;
}

journal_contents read_journal(const std::string& path, std::uint64_t fingerprint, task_count tasks,
                              const std::string& argument) {
    journal_contents j;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) return j;  // a new journal
        throw invalid_argument(argument, "'" + path + "': " + std::strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) throw invalid_argument(argument, "'" + path + "' is a directory; expected a journal file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw invalid_argument(argument, "'" + path + "' cannot be read");
    std::vector<std::byte> data(static_cast<std::size_t>(st.st_size));
    if (!data.empty() && !in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data.size())))
        throw invalid_argument(argument, "'" + path + "' cannot be read");
    if (data.empty()) return j;
    if (data.size() < header_bytes || std::memcmp(data.data(), header_magic, sizeof header_magic) != 0 ||
        load<std::uint64_t>(data.data() + 24) != header_checksum(load<std::uint64_t>(data.data() + 8),
                                                                 load<std::uint64_t>(data.data() + 16)))
        throw invalid_argument(argument, "'" + path + "' is not a pfarm journal (bad header)");
    j.fingerprint = load<std::uint64_t>(data.data() + 8);
    j.tasks = static_cast<task_count>(load<std::uint64_t>(data.data() + 16));
    if (j.tasks != tasks)
        throw invalid_argument(argument, "'" + path + "' belongs to a farm of " + std::to_string(j.tasks) +
                                             " tasks; this one has " + std::to_string(tasks) +
                                             " (another workload: use a new journal)");
    if (j.fingerprint != fingerprint)
        throw invalid_argument(argument, "'" + path + "' belongs to another workload (its inputs, output shape or "
                                         "options differ); use a new journal, or the run that wrote it");
    std::size_t at = header_bytes;
    while (at + record_head <= data.size()) {
        const std::byte* r = data.data() + at;
        if (load<std::uint32_t>(r) != record_magic) break;
        const auto index = static_cast<task_count>(load<std::uint64_t>(r + 8));
        const auto size = load<std::uint64_t>(r + 16);
        if (size > data.size() - at - record_head || data.size() - at - record_head - size < sizeof(std::uint64_t)) break;
        const std::uint64_t sum = fnv1a(r + 8, 16 + size);
        if (load<std::uint64_t>(r + record_head + size) != sum) break;
        const auto flags = load<std::uint32_t>(r + 4);
        const auto* text = reinterpret_cast<const char*>(r + record_head);
        if (flags == lost_flag) {  // a rank lost by the run that wrote it: named, nothing restored
            if (index < 0 || index > std::numeric_limits<int>::max())
                throw invalid_argument(argument, "'" + path + "' records rank " + std::to_string(index) + " lost");
            j.lost.emplace_back(static_cast<int>(index), std::string(text, static_cast<std::size_t>(size)));
            at += record_head + size + sizeof(std::uint64_t);
            continue;
        }
        if (flags != output_flag && flags != failed_flag)
            throw invalid_argument(argument, "'" + path + "' holds a record of unknown kind " + std::to_string(flags) +
                                                 " (written by a newer pfarm?)");
        if (index < 0 || index >= tasks)
            throw invalid_argument(argument, "'" + path + "' records task " + std::to_string(index) + " of " +
                                                 std::to_string(tasks));
        if (flags == failed_flag) {  // a task that failed (skipped): computed again by a rerun
            j.outputs.erase(index);
            j.failed[index].assign(text, static_cast<std::size_t>(size));
        } else {
            j.outputs[index].assign(r + record_head, r + record_head + size);
            j.failed.erase(index);
        }
        at += record_head + size + sizeof(std::uint64_t);
    }
    j.valid_bytes = at;
    j.dropped_bytes = data.size() - at;
    return j;
}

journal_writer::journal_writer(const std::string& path, std::uint64_t fingerprint, task_count tasks,
                               std::size_t valid_bytes, const std::string& argument)
    : path_(path), argument_(argument) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw invalid_argument(argument, "'" + path + "' is a directory; expected a journal file");
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw invalid_argument(argument, "'" + path + "' cannot be written: " + std::strerror(errno));
    if (valid_bytes == 0) {  // a new journal: its header
        std::vector<std::byte> header(reinterpret_cast<const std::byte*>(header_magic),
                                      reinterpret_cast<const std::byte*>(header_magic) + sizeof header_magic);
        put(header, fingerprint);
        put(header, static_cast<std::uint64_t>(tasks));
        put(header, header_checksum(fingerprint, static_cast<std::uint64_t>(tasks)));
        pending_ = std::move(header);
    }
    // Drop a torn tail, then append after the last whole record.
    if (::ftruncate(fd_, static_cast<off_t>(valid_bytes)) != 0 || ::lseek(fd_, static_cast<off_t>(valid_bytes), SEEK_SET) < 0) {
        const std::string why = std::strerror(errno);
        ::close(fd_);
        throw invalid_argument(argument, "'" + path + "' cannot be written: " + why);
    }
    write_pending(true);
    last_write_ = last_sync_ = seconds_now();
}

journal_writer::~journal_writer() {
    if (fd_ >= 0) {
        try {
            write_pending(true);
        } catch (...) {  // a destructor does not throw; close() reports failures
        }
        ::close(fd_);
    }
}

void journal_writer::append_failure(task_count index, const std::string& error) {
    append(index, error.data(), error.size(), failed_flag);
}

void journal_writer::append_lost(int rank, const std::string& note) { append(rank, note.data(), note.size(), lost_flag); }

void journal_writer::append(task_count index, const void* bytes, std::size_t size, std::uint32_t flags) {
    const std::size_t start = pending_.size();
    put(pending_, record_magic);
    put(pending_, flags);
    put(pending_, static_cast<std::uint64_t>(index));
    put(pending_, static_cast<std::uint64_t>(size));
    const auto* b = static_cast<const std::byte*>(bytes);
    pending_.insert(pending_.end(), b, b + size);
    put(pending_, fnv1a(pending_.data() + start + 8, 16 + size));
    ++records_;
    if (++pending_records_ >= batch_records) {
        write_pending(false);
    } else if (seconds_now() - last_write_ >= batch_seconds) {  // (a clock read per record: ~25 ns beside the record's copy)
        write_pending(false);
    }
}

void journal_writer::write_pending(bool sync) {
    const std::byte* p = pending_.data();
    std::size_t left = pending_.size();
    while (left > 0) {
        const ssize_t n = ::write(fd_, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw error("journal '" + path_ + "': a write failed: " + std::strerror(errno) + " (disk full?)");
        p += n, left -= static_cast<std::size_t>(n);
    }
    pending_.clear();
    pending_records_ = 0;
    const double now = seconds_now();
    last_write_ = now;
    if (sync || now - last_sync_ >= sync_seconds) {
        if (::fdatasync(fd_) != 0 && errno != EINVAL)
            throw error("journal '" + path_ + "': fdatasync failed: " + std::strerror(errno));
        last_sync_ = now;
    }
}

void journal_writer::close() {
    if (fd_ < 0) return;
    write_pending(true);
    if (::close(fd_) != 0) {
        fd_ = -1;
        throw error("journal '" + path_ + "': close failed: " + std::strerror(errno));
    }
    fd_ = -1;
}

}  // namespace pfarm
