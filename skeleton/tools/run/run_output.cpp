// pfarm-run: grouped, line-buffered, ordered and tagged output, and the --results folder (run_output.hpp).
#include "run_output.hpp"

#include "pfarm/error.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace pfarm::tools::run {

std::vector<char> pack(const task_result& record, const std::string& out, const std::string& err) {
    std::vector<char> bytes(sizeof record + 2 * sizeof(std::uint64_t) + out.size() + err.size());
    char* p = bytes.data();
    std::memcpy(p, &record, sizeof record), p += sizeof record;
    const std::uint64_t sizes[2] = {out.size(), err.size()};
    std::memcpy(p, sizes, sizeof sizes), p += sizeof sizes;
    std::memcpy(p, out.data(), out.size()), p += out.size();
    std::memcpy(p, err.data(), err.size());
    return bytes;
}

job_output unpack(std::span<const char> bytes) {
    job_output j;
    std::uint64_t sizes[2] = {};
    if (bytes.size() < sizeof j.record + sizeof sizes) throw error("pfarm-run: a command's result is too short");
    std::memcpy(&j.record, bytes.data(), sizeof j.record);
    std::memcpy(sizes, bytes.data() + sizeof j.record, sizeof sizes);
    const std::size_t head = sizeof j.record + sizeof sizes;
    if (bytes.size() - head != sizes[0] + sizes[1]) throw error("pfarm-run: a command's result has the wrong size");
    j.out.assign(bytes.data() + head, sizes[0]);
    j.err.assign(bytes.data() + head + sizes[0], sizes[1]);
    return j;
}

std::vector<char> pack_items(const std::vector<job_item>& items) {
    std::vector<char> bytes(sizeof(std::uint64_t));
    const std::uint64_t count = items.size();
    std::memcpy(bytes.data(), &count, sizeof count);
    for (const job_item& item : items) {
        const std::vector<char> job = pack(item.job.record, item.job.out, item.job.err);
        const std::int64_t head[5] = {item.task, item.slot, static_cast<std::int64_t>(job.size()),
                                      static_cast<std::int64_t>(item.streamed[0]), static_cast<std::int64_t>(item.streamed[1])};
        const char* h = reinterpret_cast<const char*>(head);
        bytes.insert(bytes.end(), h, h + sizeof head);
        bytes.insert(bytes.end(), job.begin(), job.end());
    }
    return bytes;
}

std::vector<job_item> unpack_items(std::span<const char> bytes) {
    std::uint64_t count = 0;
    if (bytes.size() < sizeof count) throw error("pfarm-run: a task's result is too short");
    std::memcpy(&count, bytes.data(), sizeof count);
    std::vector<job_item> items;
    std::size_t at = sizeof count;
    for (std::uint64_t n = 0; n < count; ++n) {
        std::int64_t head[5] = {};
        if (bytes.size() - at < sizeof head) throw error("pfarm-run: a task's result is cut short");
        std::memcpy(head, bytes.data() + at, sizeof head);
        at += sizeof head;
        if (head[2] < 0 || bytes.size() - at < static_cast<std::uint64_t>(head[2]))
            throw error("pfarm-run: a task's result is cut short");
        job_item item;
        item.task = head[0];
        item.slot = static_cast<long>(head[1]);
        item.streamed[0] = static_cast<std::uint64_t>(head[3]);
        item.streamed[1] = static_cast<std::uint64_t>(head[4]);
        item.job = unpack(bytes.subspan(at, static_cast<std::size_t>(head[2])));
        at += static_cast<std::size_t>(head[2]);
        items.push_back(std::move(item));
    }
    if (at != bytes.size()) throw error("pfarm-run: a task's result has the wrong size");
    return items;
}

void write_all(int fd, const std::string& text, const char* what) {
    const char* p = text.data();
    std::size_t left = text.size();
    while (left > 0) {
        const ssize_t n = ::write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw error(std::string("pfarm-run: writing ") + what + " failed: " + std::strerror(errno));
        p += n, left -= static_cast<std::size_t>(n);
    }
}

output_printer::output_printer(output_settings s, const std::vector<std::vector<std::string>>& args, std::size_t tasks)
    : s_(std::move(s)), args_(args) {
    if (s_.keep_order) {
        done_.assign(tasks, 0);
        held_.resize(tasks);
    }
}

void output_printer::open() {
    if (s_.results.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(s_.results, ec);
    if (ec) throw invalid_argument("--results", "cannot create directory '" + s_.results + "': " + ec.message());
    if (!std::filesystem::is_directory(s_.results, ec))
        throw invalid_argument("--results", "'" + s_.results + "' is not a directory");
}

std::string output_printer::tagged(std::size_t task, const std::string& text) const {
    if (!s_.tag || text.empty()) return text;
    return tag_lines(text, tag_of(task) + '\t');
}

std::string output_printer::tag_of(std::size_t task) const {
    std::string tag;
    for (std::size_t k = 0; k < args_[task].size(); ++k) tag += (k ? " " : "") + args_[task][k];
    return tag;
}

std::string tag_lines(const std::string& text, const std::string& tag, bool mid_line) {
    std::string out;
    out.reserve(text.size() + tag.size() * 8);
    bool line_start = !mid_line;
    for (char c : text) {
        if (line_start) out += tag;
        out += c;
        line_start = c == '\n';
    }
    return out;
}

void output_printer::emit(std::size_t task, const std::string& out, const std::string& err) {
    if (!s_.results.empty()) {  // GNU parallel's layout: DIR/1/VALUE1/2/VALUE2/{seq,stdout,stderr}
        namespace fs = std::filesystem;
        fs::path dir(s_.results);
        for (std::size_t k = 0; k < args_[task].size(); ++k) {
            std::string value;
            for (char c : args_[task][k]) {
                if (c == '\\') value += "\\\\";
                else if (c == '/') value += "\\_";
                else value += c;
            }
            dir /= std::to_string(k + 1);
            dir /= value.empty() ? std::string("\\0") : value;
        }
        std::error_code ec;
        fs::create_directories(dir, ec);
        if (ec) throw error("pfarm-run: --results: cannot create '" + dir.string() + "': " + ec.message());
        const auto put = [&](const char* name, const std::string& text) {
            const std::string path = (dir / name).string();
            const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd < 0) throw error("pfarm-run: --results: cannot write '" + path + "': " + std::strerror(errno));
            try {
                write_all(fd, text, "--results");
            } catch (...) {
                ::close(fd);
                throw;
            }
            ::close(fd);
        };
        put("seq", std::to_string(task + 1));
        put("stdout", out);
        put("stderr", err);
        return;
    }
    write_all(s_.out_fd, tagged(task, out), "standard output");
    write_all(s_.err_fd, tagged(task, err), "standard error");
}

void output_printer::line(std::size_t task, int stream, const std::string& text, bool mid_line) {
    if (!s_.keep_order || task == next_) {
        const std::string shown = s_.tag ? tag_lines(text, tag_of(task) + '\t', mid_line) : text;
        write_all(stream == 1 ? s_.out_fd : s_.err_fd, shown, stream == 1 ? "standard output" : "standard error");
        return;
    }
    (stream == 1 ? held_[task].first : held_[task].second) += text;  // tagged when printed: the pieces join up
}

void output_printer::add(std::size_t task, std::string out, std::string err) {
    if (!s_.keep_order) {
        emit(task, out, err);
        return;
    }
    done_[task] = 2;
    held_[task].first += out;  // after the lines held (--line-buffer)
    held_[task].second += err;
    flush();
}

void output_printer::skip(std::size_t task) {
    if (!s_.keep_order) return;
    done_[task] = 1;
    flush();
}

void output_printer::flush() {
    while (next_ < done_.size() && done_[next_]) {
        auto& [out, err] = held_[next_];
        if (done_[next_] == 2) emit(next_, out, err);
        std::string().swap(out);
        std::string().swap(err);
        ++next_;
    }
    // --line-buffer: the first command that has not ended prints as its lines come; what it printed meanwhile, now.
    if (next_ < done_.size() && (!held_[next_].first.empty() || !held_[next_].second.empty())) {
        auto& [out, err] = held_[next_];
        emit(next_, out, err);
        std::string().swap(out);
        std::string().swap(err);
    }
}

}  // namespace pfarm::tools::run
