// The load-average monitor: parsing /proc/loadavg and /proc/stat into availability and run queue
// (loadavg_monitor.hpp).
#include "pfarm/loadavg_monitor.hpp"

#include "detail.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

namespace pfarm {

namespace {

constexpr const char* monitor_name = "loadavg";

/// The three load averages, the first fields of /proc/loadavg ("0.52 0.58 0.59 2/467 12345").
void parse_loadavg(const std::filesystem::path& path, const std::string& text, loadavg_reading& r) {
    std::istringstream in(text);
    double values[3];
    for (double& v : values) {
        if (!(in >> v) || !std::isfinite(v) || v < 0)
            throw monitor_error(monitor_name, path.string(),
                                "malformed: expected three non-negative load averages, got '" +
                                    text.substr(0, text.find('\n')) + "'");
    }
    r.load1 = values[0];
    r.load5 = values[1];
    r.load15 = values[2];
}

/// procs_running and the number of "cpuN" lines of /proc/stat.
void parse_stat(const std::filesystem::path& path, const std::string& text, loadavg_reading& r) {
    std::istringstream in(text);
    std::string line;
    int cpus = 0;
    bool running_seen = false;
    while (std::getline(in, line)) {
        if (line.size() > 3 && line.compare(0, 3, "cpu") == 0 && std::isdigit(static_cast<unsigned char>(line[3]))) {
            ++cpus;
        } else if (line.compare(0, 14, "procs_running ") == 0) {
            std::istringstream fields(line.substr(14));
            long long n = -1;
            if (!(fields >> n) || n < 0 || n > 1'000'000'000)
                throw monitor_error(monitor_name, path.string(), "malformed procs_running line '" + line + "'");
            r.procs_running = static_cast<int>(n);
            running_seen = true;
        }
    }
    if (!running_seen) throw monitor_error(monitor_name, path.string(), "has no procs_running line");
    if (cpus == 0) throw monitor_error(monitor_name, path.string(), "has no cpuN lines (no online CPU listed)");
    r.cpus = cpus;
}

}  // namespace

loadavg_monitor::loadavg_monitor(std::filesystem::path root) : root_(std::move(root)) {
    if (root_.empty()) throw invalid_argument("root", "is empty; expected a directory such as /");
}

loadavg_reading loadavg_monitor::read_details() const {
    loadavg_reading r;
    const auto loadavg_path = detail::under_root(root_, "proc/loadavg");
    parse_loadavg(loadavg_path, detail::read_text_file(monitor_name, loadavg_path), r);
    const auto stat_path = detail::under_root(root_, "proc/stat");
    parse_stat(stat_path, detail::read_text_file(monitor_name, stat_path), r);
    // The reader is running while it reads, so procs_running >= 1 on a live system; a file saying 0 (a
    // snapshot, a test) still means at least the worker itself.
    r.run_queue = std::max(1, r.procs_running);
    r.availability = std::min(1.0, static_cast<double>(r.cpus) / r.run_queue);
    return r;
}

resource_sample loadavg_monitor::read() {
    const loadavg_reading r = read_details();
    resource_sample s;
    s.availability = r.availability;
    s.run_queue = r.run_queue;
    s.load1 = r.load1;
    return s;
}

}  // namespace pfarm
