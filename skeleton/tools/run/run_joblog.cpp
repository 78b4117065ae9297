// pfarm-run: GNU parallel's job log and pfarm-run's full one, written by rank 0, and read back for --resume
// (run_joblog.hpp).
#include "run_joblog.hpp"

#include "pfarm/error.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace pfarm::tools::run {

namespace {

std::string fixed(double v, int width = 0) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%*.3f", width, v);
    return buffer;
}

}  // namespace

job_log::~job_log() {
    if (close_ && fd_ >= 0) ::close(fd_);
}

void job_log::open(const std::string& path, bool full, bool append, const std::string& argument) {
    if (path.empty()) return;
    full_ = full;
    path_ = path;
    bool has_header = false;
    if (path == "-") {
        fd_ = 1;
    } else {
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec))
            throw invalid_argument(argument, "'" + path + "' is a directory; expected a file");
        has_header = append && std::filesystem::file_size(path, ec) > 0 && !ec;
        fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | (append ? 0 : O_TRUNC) | O_APPEND | O_CLOEXEC, 0644);
        if (fd_ < 0) throw invalid_argument(argument, "cannot write '" + path + "': " + std::strerror(errno));
        close_ = true;
    }
    if (has_header) return;
    write(full ? "task\trank\thost\tstart\tend\truntime\tattempts\texit\tsignal\tstatus\tsource\tcommand\n"
               : "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n");
}

std::pair<int, int> gnu_exit_and_signal(const task_result& r) {
    if (r.what() == outcome::timed_out) return {-1, SIGTERM};
    if (r.signal != 0) return {0, r.signal};
    return {r.exit_code, 0};
}

void job_log::add(task_count task, const task_result& r, std::size_t received, bool restored, const std::string& command) {
    if (fd_ < 0) return;
    std::string line;
    if (full_) {
        line = std::to_string(task) + '\t' + std::to_string(r.rank) + '\t' + r.host + '\t' + fixed(r.start) + '\t' +
               fixed(r.end) + '\t' + fixed(r.end - r.start) + '\t' + std::to_string(r.attempts) + '\t' +
               std::to_string(r.exit_code) + '\t' + std::to_string(r.signal) + '\t' + to_string(r.what()) + '\t' +
               (restored ? "journal" : "run") + '\t';
        for (char c : command) {
            if (c == '\\') line += "\\\\";
            else if (c == '\t') line += "\\t";
            else if (c == '\r') line += "\\r";
            else if (c == '\n') line += "\\n";
            else line += c;
        }
    } else {
        const auto [exit_value, signal] = gnu_exit_and_signal(r);
        line = std::to_string(task + 1) + '\t' + r.host + '\t' + fixed(r.start) + '\t' + fixed(r.end - r.start, 10) +
               "\t0\t" + std::to_string(received) + '\t' + std::to_string(exit_value) + '\t' + std::to_string(signal) + '\t';
        for (char c : command) line += c == '\n' ? '\0' : c;  // GNU parallel's convention: one row per line
    }
    line += '\n';
    write(line);
}

void job_log::write(const std::string& s) {
    const char* p = s.data();
    std::size_t left = s.size();
    while (left > 0) {
        const ssize_t n = ::write(fd_, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw error("job log '" + path_ + "': a write failed: " + std::strerror(errno));
        p += n, left -= static_cast<std::size_t>(n);
    }
}

std::multiset<std::string> joblog_commands(const std::string& path, bool failed_again, const std::string& argument) {
    std::multiset<std::string> commands;
    std::ifstream in(path, std::ios::binary);
    if (!in) return commands;
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::size_t line = 0;
    for (std::size_t at = 0; at < text.size(); ++line) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        const std::string row = text.substr(at, end - at);
        at = end + 1;
        if (line == 0) {
            if (row.rfind("Seq\tHost\tStarttime", 0) != 0)
                throw invalid_argument(argument, "'" + path + "' is not a GNU parallel job log (its first line is not "
                                                 "'Seq Host Starttime ...'); --resume reads the log --joblog writes");
            continue;
        }
        std::vector<std::string> fields;
        std::size_t from = 0;
        for (int k = 0; k < 8; ++k) {
            const std::size_t tab = row.find('\t', from);
            if (tab == std::string::npos) break;
            fields.push_back(row.substr(from, tab - from));
            from = tab + 1;
        }
        if (fields.size() != 8)
            throw invalid_argument(argument, "'" + path + "' line " + std::to_string(line + 1) +
                                                 " has fewer than 9 tab-separated columns");
        std::string command = row.substr(from);
        for (char& c : command)
            if (c == '\0') c = '\n';
        if (failed_again && (fields[6] != "0" || fields[7] != "0")) continue;
        commands.insert(std::move(command));
    }
    return commands;
}

}  // namespace pfarm::tools::run
