// The cgroup monitor: finds the process's cgroup (v1 cpu controller or v2 unified hierarchy), reads the CPU
// quota of it and of every ancestor, the throttling counters and the competing threads of the most
// restrictive one, and combines the quota's share with the load-average availability (docs/monitors.md).
#include "pfarm/cgroup_monitor.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <sstream>
#include <string_view>
#include <system_error>

namespace pfarm {

namespace {

constexpr const char* monitor_name = "cgroup";

namespace fs = std::filesystem;

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

/// A whole decimal integer, or nothing.
std::optional<long long> parse_integer(std::string_view s) {
    s = trim(s);
    long long v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return v;
}

std::vector<std::string_view> split(std::string_view s, char separator) {
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    for (;;) {
        const std::size_t at = s.find(separator, start);
        parts.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
        if (at == std::string_view::npos) break;
        start = at + 1;
    }
    return parts;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

/// The whole of a small kernel file into `text`; 0, or the errno of the failure. open(2) and read(2) rather than a
/// stream: a read with every request opens a dozen such files, and a stream costs several times more.
int try_read(const fs::path& path, std::string& text) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    text.clear();
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0) {
            if (errno == EINTR) continue;
            const int e = errno;
            ::close(fd);
            return e;
        }
        if (n == 0) break;
        text.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return 0;
}

/// As try_read, but a failure throws monitor_error naming the file.
std::string read_file(const fs::path& path) {
    std::string text;
    if (const int e = try_read(path, text))
        throw monitor_error(monitor_name, path.string(), std::string("cannot be opened (") + std::strerror(e) + ")");
    return text;
}

/// The path `path` (written from the file-system root) under `root`.
fs::path under(const fs::path& root, std::string_view path) {
    while (!path.empty() && path.front() == '/') path.remove_prefix(1);
    return path.empty() ? root : root / fs::path(std::string(path));
}

/// The parent of a cgroup path ("/a/b" -> "/a", "/a" -> "/").
std::string parent_cgroup(const std::string& cgroup) {
    const std::size_t at = cgroup.find_last_of('/');
    return at == 0 || at == std::string::npos ? "/" : cgroup.substr(0, at);
}

/// Whether cgroup path `path` is `top` or below it.
bool is_within(const std::string& path, const std::string& top) {
    if (top == "/") return !path.empty() && path.front() == '/';
    return path == top || (path.size() > top.size() && path.compare(0, top.size(), top) == 0 && path[top.size()] == '/');
}

/// mountinfo writes space, tab, newline and backslash in paths as \ooo octal escapes.
std::string unescape_mount_path(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7' &&
            s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
            out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

/// Which hierarchy holds the cpu controller for this process, and the process's path in it.
struct membership {
    int version = 0;
    std::string cgroup;
};

membership parse_self_cgroup(const fs::path& path, const std::string& text) {
    std::istringstream in(text);
    std::string line;
    std::optional<membership> v1, v2;
    while (std::getline(in, line)) {
        if (trim(line).empty()) continue;
        const std::size_t a = line.find(':');
        const std::size_t b = a == std::string::npos ? std::string::npos : line.find(':', a + 1);
        if (b == std::string::npos || b + 1 >= line.size() || line[b + 1] != '/' || !parse_integer(line.substr(0, a)))
            throw monitor_error(monitor_name, path.string(),
                                "malformed line '" + line + "': expected <id>:<controllers>:/<path>");
        const std::string id = line.substr(0, a);
        const std::string controllers = line.substr(a + 1, b - a - 1);
        const std::string cgroup = line.substr(b + 1);
        if (id == "0" && controllers.empty()) {
            v2 = membership{2, cgroup};
        } else {
            for (std::string_view c : split(controllers, ','))
                if (c == "cpu") v1 = membership{1, cgroup};
        }
    }
    if (v1) return *v1;  // a v1 hierarchy with the cpu controller: the v2 one (if any) has no cpu controller then
    if (v2) return *v2;
    throw monitor_error(monitor_name, path.string(),
                        "names neither a cgroup v1 hierarchy with the cpu controller nor the unified (0::) one");
}

/// Where the hierarchy is mounted: the mount point (under root) and the cgroup path the mount shows at it.
struct mount_point {
    fs::path directory;
    std::string top;  ///< the cgroup path of the mount's top ("/" unless a sub-tree is mounted)
};

mount_point find_mount(const fs::path& path, const std::string& text, const membership& m) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (trim(line).empty()) continue;
        const std::size_t dash = line.find(" - ");
        if (dash == std::string::npos)
            throw monitor_error(monitor_name, path.string(), "malformed line '" + line + "': no ' - ' separator");
        std::istringstream before(line.substr(0, dash)), after(line.substr(dash + 3));
        std::string id, parent, device, top, point, fstype, source, options;
        if (!(before >> id >> parent >> device >> top >> point) || !(after >> fstype >> source >> options))
            throw monitor_error(monitor_name, path.string(), "malformed line '" + line + "': too few fields");
        bool wanted = false;
        if (m.version == 2) {
            wanted = fstype == "cgroup2";
        } else if (fstype == "cgroup") {
            for (std::string_view o : split(options, ','))
                if (o == "cpu") wanted = true;
        }
        if (!wanted) continue;
        top = unescape_mount_path(top);
        if (!is_within(m.cgroup, top)) continue;  // a mount of another part of the hierarchy
        return mount_point{fs::path(unescape_mount_path(point)), top};
    }
    throw monitor_error(monitor_name, path.string(),
                        std::string("has no ") + (m.version == 2 ? "cgroup2 mount" : "cgroup mount with the cpu controller") +
                            " showing " + m.cgroup + " (the hierarchy is not mounted here)");
}

/// The quota of one level. v2's root (and a level whose parent does not enable the cpu controller) has no
/// cpu.max: no quota there.
void read_quota(int version, cgroup_level& level) {
    if (version == 1) {
        const fs::path quota_path = level.directory / "cpu.cfs_quota_us";
        const fs::path period_path = level.directory / "cpu.cfs_period_us";
        const std::string quota_text = read_file(quota_path);
        const std::string period_text = read_file(period_path);
        const auto quota = parse_integer(quota_text);
        if (!quota || (*quota != -1 && *quota <= 0))
            throw monitor_error(monitor_name, quota_path.string(),
                                "malformed: expected -1 or a positive number of microseconds, got '" +
                                    first_line(quota_text) + "'");
        const auto period = parse_integer(period_text);
        if (!period || *period <= 0)
            throw monitor_error(monitor_name, period_path.string(),
                                "malformed: expected a positive number of microseconds, got '" +
                                    first_line(period_text) + "'");
        level.quota_us = *quota;
        level.period_us = *period;
    } else {
        const fs::path max_path = level.directory / "cpu.max";
        std::string text;
        if (const int e = try_read(max_path, text)) {
            if (e == ENOENT) return;
            throw monitor_error(monitor_name, max_path.string(), std::string("cannot be opened (") + std::strerror(e) + ")");
        }
        const auto fields = split(trim(text), ' ');
        long long quota = -1, period = 0;
        bool valid = fields.size() == 2;
        if (valid) {
            const auto p = parse_integer(fields[1]);
            valid = p && *p > 0;
            if (valid) period = *p;
        }
        if (valid && fields[0] != "max") {
            const auto q = parse_integer(fields[0]);
            valid = q && *q > 0;
            if (valid) quota = *q;
        }
        if (!valid)
            throw monitor_error(monitor_name, max_path.string(),
                                "malformed: expected '<quota> <period>' or 'max <period>' in microseconds, got '" +
                                    first_line(text) + "'");
        level.quota_us = quota;
        level.period_us = period;
    }
    if (level.quota_us > 0)
        level.quota_cores = static_cast<double>(level.quota_us) / static_cast<double>(level.period_us);
}

cgroup_throttling read_throttling(int version, const fs::path& directory) {
    const fs::path path = directory / "cpu.stat";
    const std::string text = read_file(path);
    const std::string time_key = version == 1 ? "throttled_time" : "throttled_usec";
    std::optional<long long> periods, throttled, time;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        const std::size_t space = line.find(' ');
        if (space == std::string::npos) continue;
        const std::string key = line.substr(0, space);
        std::optional<long long>* slot = key == "nr_periods"   ? &periods
                                         : key == "nr_throttled" ? &throttled
                                         : key == time_key       ? &time
                                                                 : nullptr;
        if (!slot) continue;
        *slot = parse_integer(std::string_view(line).substr(space + 1));
        if (!*slot || **slot < 0)
            throw monitor_error(monitor_name, path.string(), "malformed line '" + line + "'");
    }
    if (!periods || !throttled || !time)
        throw monitor_error(monitor_name, path.string(),
                            "lacks nr_periods, nr_throttled or " + time_key + " (the cpu controller's counters)");
    cgroup_throttling t;
    t.nr_periods = *periods;
    t.nr_throttled = *throttled;
    t.throttled_seconds = static_cast<double>(*time) / (version == 1 ? 1e9 : 1e6);
    return t;
}

/// Whether /proc/<tid>/stat says the thread is runnable ('R'). A thread that has gone since the cgroup listed
/// it is not; a file that does not parse is an error.
bool thread_runnable(const fs::path& root, std::string_view tid) {
    const fs::path path = under(root, "proc") / std::string(tid) / "stat";
    std::string text;
    if (try_read(path, text) != 0) return false;  // exited between the listing and now
    const std::size_t close = text.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos || close + 2 >= text.size() || text[close + 1] != ' ')
        throw monitor_error(monitor_name, path.string(), "malformed: expected '<pid> (<comm>) <state> ...'");
    return text[close + 2] == 'R';
}

/// Runnable threads of `directory` and every cgroup below it (tasks in v1, cgroup.threads in v2).
int count_runnable(const fs::path& root, int version, const fs::path& directory) {
    const char* list_name = version == 1 ? "tasks" : "cgroup.threads";
    int runnable = 0;
    const auto count_in = [&](const fs::path& dir) {
        const fs::path list = dir / list_name;
        const std::string text = read_file(list);
        std::istringstream in(text);
        std::string tid;
        while (in >> tid) {
            if (!parse_integer(tid) || *parse_integer(tid) <= 0)
                throw monitor_error(monitor_name, list.string(), "malformed: '" + tid + "' is not a thread id");
            if (thread_runnable(root, tid)) ++runnable;
        }
    };
    count_in(directory);
    std::error_code ec;
    for (fs::recursive_directory_iterator it(directory, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec)) {
        std::error_code type_ec;
        if (it->is_directory(type_ec) && !it->is_symlink(type_ec)) {
            std::error_code exists_ec;
            if (fs::exists(it->path() / list_name, exists_ec)) count_in(it->path());
        }
    }
    if (ec) throw monitor_error(monitor_name, directory.string(), "cannot list its sub-cgroups (" + ec.message() + ")");
    return runnable;
}

/// Where the process's cgroup and its ancestors are: version, path, levels with their directories (no quotas).
/// `self_text` is /proc/self/cgroup's content.
cgroup_reading locate(const fs::path& root, const std::string& self_text) {
    const membership m = parse_self_cgroup(under(root, "proc/self/cgroup"), self_text);
    const fs::path mountinfo_path = under(root, "proc/self/mountinfo");
    const mount_point mount = find_mount(mountinfo_path, read_file(mountinfo_path), m);
    cgroup_reading r;
    r.version = m.version;
    r.cgroup = m.cgroup;
    std::string cgroup = m.cgroup;
    for (;;) {
        cgroup_level level;
        level.cgroup = cgroup;
        const std::string relative = mount.top == "/" ? cgroup : cgroup.substr(mount.top.size());
        level.directory = under(under(root, mount.directory.string()), relative);
        r.levels.push_back(level);
        if (cgroup == mount.top || cgroup == "/") break;
        cgroup = parent_cgroup(cgroup);
    }
    r.directory = r.levels.front().directory;
    return r;
}

/// The quotas of `r`'s levels, read now, and the most restrictive one.
void read_quotas(cgroup_reading& r) {
    for (cgroup_level& level : r.levels) {
        read_quota(r.version, level);
        if (level.quota_cores && (!r.limit_cores || *level.quota_cores < *r.limit_cores)) {
            r.limit_cores = level.quota_cores;
            r.limit_directory = level.directory;
        }
    }
}

}  // namespace

cgroup_monitor::cgroup_monitor(std::filesystem::path root) : root_(std::move(root)), load_(root_) {
    if (root_.empty()) throw invalid_argument("root", "is empty; expected a directory such as /");
}

cgroup_reading cgroup_monitor::read_details() {
    // Which cgroup, every time (a process can be moved); where it is mounted, only when that changed (mountinfo
    // is the largest file read); the quotas every time (they can change under a running job).
    const std::string self_text = read_file(under(root_, "proc/self/cgroup"));
    if (self_text != self_text_ || layout_.levels.empty()) {
        layout_ = locate(root_, self_text);
        self_text_ = self_text;
    }
    cgroup_reading r = layout_;
    read_quotas(r);
    r.load = load_.read_details();
    r.availability = r.load.availability;
    r.run_queue = r.load.run_queue;
    if (!r.limit_cores) {
        previous_.reset();
        previous_directory_.clear();
        return r;
    }
    // A quota above the machine's CPUs limits nothing beyond them.
    r.limit_cores = std::min(*r.limit_cores, static_cast<double>(r.load.cpus));
    r.runnable = count_runnable(root_, r.version, r.limit_directory);
    r.quota_availability = std::min(1.0, *r.limit_cores / std::max(1, r.runnable));
    r.throttling = read_throttling(r.version, r.limit_directory);
    // Counters that went down belong to a cgroup made anew under the same name: no difference then.
    if (previous_ && previous_directory_ == r.limit_directory && r.throttling->nr_periods >= previous_->nr_periods &&
        r.throttling->nr_throttled >= previous_->nr_throttled &&
        r.throttling->throttled_seconds >= previous_->throttled_seconds) {
        cgroup_throttling d;
        d.nr_periods = r.throttling->nr_periods - previous_->nr_periods;
        d.nr_throttled = r.throttling->nr_throttled - previous_->nr_throttled;
        d.throttled_seconds = r.throttling->throttled_seconds - previous_->throttled_seconds;
        r.throttling_delta = d;
        if (d.nr_periods > 0)
            r.throttled_fraction = static_cast<double>(d.nr_throttled) / static_cast<double>(d.nr_periods);
    }
    // In a period where the cgroup was throttled its threads had the whole quota: the machine's load did not hold
    // them back, and a thread's share was the quota's. In the other periods the quota was not reached, and the
    // machine's load may be what held them.
    if (r.throttled_fraction)
        r.binding = std::min(1.0, *r.throttled_fraction);
    else if (r.throttling->nr_periods > 0)
        r.binding = std::min(1.0, static_cast<double>(r.throttling->nr_throttled) /
                                      static_cast<double>(r.throttling->nr_periods));
    r.availability = r.binding * r.quota_availability +
                     (1 - r.binding) * std::min(r.quota_availability, r.load.availability);
    r.run_queue = r.availability < 1 ? r.load.cpus / r.availability : r.load.run_queue;
    previous_ = r.throttling;
    previous_directory_ = r.limit_directory;
    return r;
}

resource_sample cgroup_monitor::read() {
    const cgroup_reading r = read_details();
    resource_sample s;
    s.availability = r.availability;
    s.run_queue = r.run_queue;
    s.load1 = r.load.load1;
    return s;
}

std::optional<double> cgroup_cpu_limit(const std::filesystem::path& root) {
    cgroup_reading r = locate(root, read_file(under(root, "proc/self/cgroup")));
    read_quotas(r);
    return r.limit_cores;
}

std::optional<double> cgroup_cpu_period(const std::filesystem::path& root) {
    std::error_code ec;
    if (!std::filesystem::exists(under(root, "proc/self/cgroup"), ec)) return std::nullopt;
    cgroup_reading r = locate(root, read_file(under(root, "proc/self/cgroup")));
    read_quotas(r);
    if (!r.limit_cores) return std::nullopt;
    for (const cgroup_level& level : r.levels)
        if (level.directory == r.limit_directory && level.period_us > 0) return static_cast<double>(level.period_us) * 1e-6;
    return std::nullopt;
}

std::unique_ptr<monitor> make_availability_monitor(const std::filesystem::path& root) {
    if (root.empty()) throw invalid_argument("root", "is empty; expected a directory such as /");
    std::error_code ec;
    if (!std::filesystem::exists(under(root, "proc/self/cgroup"), ec)) return std::make_unique<loadavg_monitor>(root);
    if (cgroup_cpu_limit(root)) return std::make_unique<cgroup_monitor>(root);
    return std::make_unique<loadavg_monitor>(root);
}

}  // namespace pfarm
