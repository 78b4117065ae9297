// pfarm-run: the record of a finished command, the ranks' records files, and their merge into the journal before
// a rerun (run_records.hpp).
#include "run_records.hpp"

#include "pfarm/error.hpp"
#include "pfarm/journal.hpp"

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

/// The journal's header (pfarm/journal.hpp): "PFARMJ1\n", u64 fingerprint, u64 tasks, u64 checksum.
struct journal_header {
    bool present = false;  ///< a file with a header (an empty or missing file is a journal not begun)
    std::uint64_t fingerprint = 0;
};

journal_header read_header(const std::string& path, task_count tasks, const std::string& argument) {
    journal_header h;
    std::ifstream in(path, std::ios::binary);
    if (!in) return h;  // missing (or unreadable: read_journal below names the problem when the engine opens it)
    char bytes[32] = {};
    in.read(bytes, sizeof bytes);
    if (in.gcount() == 0) return h;
    if (in.gcount() < 32 || std::memcmp(bytes, "PFARMJ1\n", 8) != 0) {
        read_journal(path, 0, tasks, argument);  // throws its own "not a pfarm journal" for a bad header
        throw invalid_argument(argument, "'" + path + "' is not a pfarm journal (bad header)");
    }
    h.present = true;
    std::memcpy(&h.fingerprint, bytes + 8, sizeof h.fingerprint);
    return h;
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

std::string journal_key(const std::vector<std::string>& commands) {
    std::uint64_t h = fnv1a(nullptr, 0);
    for (const std::string& c : commands) {
        h = fnv1a(c.data(), c.size(), h);
        h = fnv1a("\n", 1, h);
    }
    return "pfarm-run 1: " + std::to_string(commands.size()) + " commands, FNV-1a " + std::to_string(h) +
           ", record " + std::to_string(sizeof(task_result)) + " bytes";
}

std::string rank_records_path(const std::string& journal, int rank) { return journal + ".rank-" + std::to_string(rank); }

rank_records::rank_records(std::string path, const std::string& argument) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
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

resume_plan prepare_journal(const std::string& journal, const std::vector<std::string>& commands, bool retry_failed,
                            bool write, const std::string& argument) {
    resume_plan plan;
    const auto tasks = static_cast<task_count>(commands.size());
    const journal_header header = read_header(journal, tasks, argument);
    const std::vector<std::filesystem::path> files = rank_files(journal);
    const auto remove_rank_files = [&] {
        if (!write) return;
        for (const auto& f : files) {
            std::error_code ec;
            std::filesystem::remove(f, ec);
        }
    };
    if (!header.present) {  // a new journal: records files beside it are left over from another one
        remove_rank_files();
        return plan;
    }
    plan.journal_exists = true;
    const journal_contents contents = read_journal(journal, header.fingerprint, tasks, argument);
    const auto belongs = [&](task_count i, const task_result& r) { return r.command_hash == command_hash(commands[static_cast<std::size_t>(i)]); };
    for (const auto& [i, bytes] : contents.outputs) {
        if (bytes.size() != sizeof(task_result))
            throw invalid_argument(argument, "'" + journal + "' was not written by pfarm-run (task " + std::to_string(i) +
                                                 " has a record of " + std::to_string(bytes.size()) + " bytes); use a new journal");
        task_result r;
        std::memcpy(&r, bytes.data(), sizeof r);
        if (!belongs(i, r))
            throw invalid_argument(argument, "'" + journal + "' belongs to other commands (task " + std::to_string(i) +
                                                 " was another command); use a new journal, or the commands that wrote it");
        plan.done[i] = r;
    }
    for (const auto& f : files)
        for (const auto& [i, r] : read_rank_records(f.string(), tasks))
            if (belongs(i, r) && plan.done.emplace(i, r).second) ++plan.merged;
    for (auto it = plan.done.begin(); it != plan.done.end();) {
        const outcome o = it->second.what();
        if (o == outcome::not_run) {
            ++plan.dropped_not_run;
            it = plan.done.erase(it);
        } else if (retry_failed && o != outcome::ok) {
            ++plan.dropped_failed;
            it = plan.done.erase(it);
        } else {
            ++it;
        }
    }
    if (!write) return plan;
    if (plan.merged > 0 || plan.dropped_failed > 0 || plan.dropped_not_run > 0) {
        const std::string tmp = journal + ".tmp";
        ::unlink(tmp.c_str());
        {
            journal_writer out(tmp, header.fingerprint, tasks, 0, argument);
            for (const auto& [i, r] : plan.done) out.append(i, &r, sizeof r);
            out.close();
        }
        if (::rename(tmp.c_str(), journal.c_str()) != 0)
            throw invalid_argument(argument, "cannot replace '" + journal + "' with '" + tmp + "': " + std::strerror(errno));
    }
    remove_rank_files();
    return plan;
}

}  // namespace pfarm::tools::run
