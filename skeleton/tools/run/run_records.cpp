// pfarm-run: the record of a finished command, the ranks' records files, the journal, and what a rerun keeps
// (run_records.hpp).
#include "run_records.hpp"

#include "pfarm/error.hpp"
#include "pfarm/journal.hpp"

#include <map>
#include <string_view>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace pfarm::tools::run {

namespace {

constexpr std::uint32_t record_magic = 0x31525250u;  // "PRR1"
struct side_record {
    std::uint32_t magic = record_magic;
    std::uint32_t reserved = 0;
    std::uint64_t index = 0;
    task_result result;
    std::uint64_t checksum = 0;  ///< FNV-1a 64 of index and result
};
static_assert(std::is_trivially_copyable_v<side_record> && sizeof(side_record) == 8 + 8 + sizeof(task_result) + 8);

std::uint64_t checksum_of(const side_record& r) {
    return fnv1a(&r.result, sizeof r.result, fnv1a(&r.index, sizeof r.index));
}

double monotonic() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// The ranks' records files beside `journal` (JOURNAL.rank-R).
std::vector<std::filesystem::path> rank_files(const std::string& journal) {
    namespace fs = std::filesystem;
    std::vector<fs::path> files;
    const fs::path j(journal);
    const fs::path folder = j.has_parent_path() ? j.parent_path() : fs::path(".");
    const std::string prefix = j.filename().string() + ".rank-";
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
        if (name.find_first_not_of("0123456789", prefix.size()) != std::string::npos) continue;
        files.push_back(it->path());
    }
    return files;
}

}  // namespace

std::uint64_t command_hash(const std::string& command) { return fnv1a(command.data(), command.size()); }

std::string rank_records_path(const std::string& journal, int rank) { return journal + ".rank-" + std::to_string(rank); }

rank_records::rank_records(std::string path, const std::string& argument, bool append) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | (append ? 0 : O_TRUNC) | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0)
        throw invalid_argument(argument, "cannot write this rank's records file '" + path_ + "' beside the journal: " +
                                             std::strerror(errno));
    last_sync_ = monotonic();
}

rank_records::~rank_records() {
    if (fd_ >= 0) {
        ::fdatasync(fd_);
        ::close(fd_);
    }
}

void rank_records::append(task_count index, const task_result& result) {
    side_record r;
    r.index = static_cast<std::uint64_t>(index);
    r.result = result;
    r.checksum = checksum_of(r);
    ssize_t n = 0;
    do {
        n = ::write(fd_, &r, sizeof r);
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof r))
        throw error("records file '" + path_ + "': a write failed: " + (n < 0 ? std::strerror(errno) : "short write") +
                    " (disk full?)");
    ++records_;
    if (const double now = monotonic(); now - last_sync_ >= 10.0) {
        ::fdatasync(fd_);
        last_sync_ = now;
    }
}

void rank_records::remove() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    ::unlink(path_.c_str());
}

std::vector<task_result> read_records(const std::string& path) {
    std::vector<task_result> records;
    std::ifstream in(path, std::ios::binary);
    side_record r;
    while (in.read(reinterpret_cast<char*>(&r), sizeof r)) {
        if (r.magic != record_magic || r.checksum != checksum_of(r)) break;
        records.push_back(r.result);
    }
    return records;
}

std::map<task_count, task_result> read_rank_records(const std::string& path, task_count tasks) {
    std::map<task_count, task_result> records;
    std::ifstream in(path, std::ios::binary);
    side_record r;
    while (in.read(reinterpret_cast<char*>(&r), sizeof r)) {
        if (r.magic != record_magic || r.checksum != checksum_of(r)) break;
        if (r.index < static_cast<std::uint64_t>(tasks)) records[static_cast<task_count>(r.index)] = r.result;
    }
    return records;
}

std::uint64_t record_key(const std::string& command, std::size_t occurrence) {
    std::uint64_t h = command_hash(command);
    if (occurrence == 0) return h;
    const std::string tail = "\n#" + std::to_string(occurrence);
    return fnv1a(tail.data(), tail.size(), h);
}

std::vector<std::uint64_t> record_keys(const std::vector<std::string>& commands) {
    std::map<std::string_view, std::size_t> seen;
    std::vector<std::uint64_t> keys;
    keys.reserve(commands.size());
    for (const std::string& c : commands) keys.push_back(record_key(c, seen[c]++));
    return keys;
}

resume_plan prepare_journal(const std::string& journal, const std::vector<std::string>& commands, bool retry_failed,
                            bool write, const std::string& argument) {
    namespace fs = std::filesystem;
    resume_plan plan;
    std::error_code ec;
    if (fs::is_directory(journal, ec)) throw invalid_argument(argument, "'" + journal + "' is a directory; expected a file");
    {
        std::ifstream in(journal, std::ios::binary);
        std::uint32_t magic = 0;
        if (in) in.read(reinterpret_cast<char*>(&magic), sizeof magic);
        if (in.gcount() > 0 && (in.gcount() != sizeof magic || magic != record_magic))
            throw invalid_argument(argument, "'" + journal + "' is not a pfarm-run journal (bad header); use a new journal");
        plan.journal_exists = in.gcount() > 0;
    }
    const std::vector<fs::path> files = rank_files(journal);
    // Every record by its command's key; the ranks' files are newer than the journal.
    std::map<std::uint64_t, task_result> records;
    task_count in_journal = 0;
    for (const auto& r : read_records(journal)) records[r.command_hash] = r, ++in_journal;
    std::size_t from_files = 0;
    for (const auto& f : files)
        for (const auto& r : read_records(f.string())) records[r.command_hash] = r, ++from_files;
    const std::vector<std::uint64_t> keys = record_keys(commands);
    std::map<std::uint64_t, task_count> index_of;
    for (std::size_t i = 0; i < keys.size(); ++i) index_of[keys[i]] = static_cast<task_count>(i);
    task_count matched = 0;
    std::vector<task_result> kept;
    for (const auto& [key, r] : records) {
        const auto it = index_of.find(key);
        if (it == index_of.end()) {
            ++plan.dropped_other;
            continue;
        }
        ++matched;
        const outcome o = r.what();
        if (o == outcome::not_run) {
            ++plan.dropped_not_run;
        } else if (retry_failed && o != outcome::ok) {
            ++plan.dropped_failed;
        } else {
            plan.done[it->second] = r;
            kept.push_back(r);
        }
    }
    if (!records.empty() && matched == 0)
        throw invalid_argument(argument, "'" + journal + "' belongs to other commands (none of its " +
                                             std::to_string(records.size()) +
                                             " commands is among these); use a new journal, or the commands that wrote it");
    plan.merged = static_cast<task_count>(from_files);
    if (!write) return plan;
    const std::string tmp = journal + ".tmp";
    ::unlink(tmp.c_str());
    {
        rank_records out(tmp, argument);
        for (const task_result& r : kept) out.append(0, r);
    }
    if (::rename(tmp.c_str(), journal.c_str()) != 0)
        throw invalid_argument(argument, "cannot replace '" + journal + "' with '" + tmp + "': " + std::strerror(errno));
    for (const auto& f : files) fs::remove(f, ec);
    return plan;
}

}  // namespace pfarm::tools::run
