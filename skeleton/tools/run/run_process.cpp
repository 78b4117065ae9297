// pfarm-run: shell commands as child processes, one or several at once, their output (files, or lines through pipes),
// their timeouts, and the guard that kills them if the rank dies (run_process.hpp).
#include "run_process.hpp"

#include "pfarm/error.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

extern char** environ;

namespace pfarm::tools::run {

namespace {

/// The guard: remembers the process groups of the running commands ("+PGID" when one starts, "-PGID" once it has
/// ended, before it is reaped) and, when its input closes with commands still running, kills those groups. It
/// ignores the signals a dying job sends around, and sits in its own process group.
constexpr const char* guard_script =
    "trap '' HUP INT TERM PIPE\n"
    "running=' '\n"
    "while read -r line; do\n"
    "  case $line in\n"
    "    +*) running=\"$running${line#+} \" ;;\n"
    "    -*) g=${line#-}; running=\"${running%% $g *} ${running#* $g }\" ;;\n"
    "  esac\n"
    "done\n"
    "for g in $running; do kill -s KILL -- \"-$g\" 2>/dev/null; done\n"
    "exit 0\n";

double monotonic() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// A file descriptor closed by its destructor.
struct fd_holder {
    int fd = -1;
    fd_holder() = default;
    explicit fd_holder(int f) : fd(f) {}
    fd_holder(const fd_holder&) = delete;
    fd_holder& operator=(const fd_holder&) = delete;
    ~fd_holder() {
        if (fd >= 0) ::close(fd);
    }
};

/// posix_spawn's attributes and file actions, destroyed by the destructor. The child gets its own process group,
/// an empty signal mask and the default action for the signals an MPI library or shell may have changed, and no
/// descriptor above 2 (the rank's sockets and pipes stay with the rank).
struct spawn_setup {
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t actions;
    spawn_setup() {
        posix_spawnattr_init(&attr);
        posix_spawn_file_actions_init(&actions);
        sigset_t none, defaults;
        sigemptyset(&none);
        sigemptyset(&defaults);
        for (int s : {SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGALRM, SIGTERM, SIGUSR1, SIGUSR2, SIGCHLD, SIGTSTP, SIGTTIN,
                      SIGTTOU, SIGXCPU, SIGXFSZ})
            sigaddset(&defaults, s);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &defaults);
        posix_spawnattr_setpgroup(&attr, 0);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    }
    ~spawn_setup() {
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attr);
    }
    spawn_setup(const spawn_setup&) = delete;
    spawn_setup& operator=(const spawn_setup&) = delete;

    void close_the_rest() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
        posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
    }

    /// Runs `shell` -c `script` with `environment`; returns the error number (0: started, `pid` set).
    int spawn(pid_t& pid, const std::string& script, char* const* environment, const std::string& shell = "/bin/sh") {
        const char* argv[] = {shell.c_str(), "-c", script.c_str(), nullptr};
        return posix_spawnp(&pid, shell.c_str(), &actions, &attr, const_cast<char* const*>(argv), environment);
    }
};

/// Whether process `pid` has ended (left as a zombie, not reaped: its process group stays valid).
bool has_ended(pid_t pid) {
    siginfo_t info{};
    info.si_pid = 0;
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0) return info.si_pid == pid;
    return errno == ECHILD;  // already reaped: SIGCHLD ignored in this process (the kernel reaps)
}

/// A pidfd of `pid` (readable once it ends), or -1 where the kernel has none (before 5.3).
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
    return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
    (void)pid;
    return -1;
#endif
}

/// The whole content of file `fd`, from its start.
std::string read_all(int fd) {
    std::string text;
    char buffer[65536];
    for (off_t at = 0;;) {
        const ssize_t n = ::pread(fd, buffer, sizeof buffer, at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buffer, static_cast<std::size_t>(n));
        at += n;
    }
    return text;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

const char* to_string(outcome o) {
    switch (o) {
    case outcome::ok: return "ok";
    case outcome::failed: return "failed";
    case outcome::timed_out: return "timeout";
    case outcome::not_run: return "not-run";
    case outcome::not_started: return "not-started";
    case outcome::killed: return "killed";
    }
    return "unknown";
}

double unix_time() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::vector<std::string> command_environment() {
    // Slurm's srun sets the step's and the task's variables besides the job's; Open MPI takes a process that has
    // SLURM_STEP_ID (or SLURM_STEPID) and SLURM_NODELIST for a rank of an srun step and aborts its MPI_Init when
    // no PMI is there ("direct launched using srun"). The job's variables (SLURM_JOB_ID, SLURM_JOB_NODELIST,
    // SLURM_CPUS_ON_NODE...) stay: mpirun inside a command finds the allocation by them, as in a batch script.
    static constexpr std::string_view prefixes[] = {
        "OMPI_COMM_WORLD_", "OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir=",
        "OMPI_MCA_shmem_RUNTIME_QUERY_hint=", "OMPI_MCA_mpi_oversubscribe=", "OMPI_APP_CTX_NUM_PROCS=", "OMPI_ARGV=",
        "OMPI_COMMAND=", "OMPI_FILE_LOCATION=", "OMPI_FIRST_RANKS=", "OMPI_NUM_APP_CTX=", "OMPI_UNIVERSE_SIZE=",
        "PMIX_", "PMI_", "SLURM_STEP_", "SLURM_STEPID=", "SLURM_PROCID=", "SLURM_LOCALID=", "SLURM_NODEID=",
        "SLURM_TASK_PID=", "SLURM_GTIDS=", "SLURM_LAUNCH_NODE_IPADDR=", "SLURM_SRUN_COMM_", "SLURM_CPU_BIND",
        "SLURM_DISTRIBUTION=", "SLURM_MPI_TYPE=", "SLURM_PMIX", "SLURM_TOPOLOGY_ADDR", "PFARM_TASK=", "PFARM_RANK=",
        "PFARM_ATTEMPT="};
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e) {
        const std::string_view v(*e);
        if (std::none_of(std::begin(prefixes), std::end(prefixes), [&](std::string_view p) { return starts_with(v, p); }))
            env.emplace_back(v);
    }
    return env;
}

/// A command started and not yet returned by wait: its process, its output files, and where its end stands.
struct process_runner::child {
    std::uint64_t id = 0;
    pid_t pid = -1;
    fd_holder out, err, pidfd;  ///< lines: out and err are the pipes' ends to read
    bool capture = false;
    bool lines = false;
    bool open[2] = {false, false};  ///< lines: the pipe may bring more (no end of file yet)
    std::string pending[2];         ///< lines: what came after the last piece handed on
    bool mid[2] = {false, false};   ///< lines: the last piece handed on ended mid-line (cut at line_piece_bytes)
    std::function<bool()> stop;
    double deadline = INFINITY;  ///< monotonic seconds: its timeout
    double grace = 1.0;
    enum class phase { running, terminating, killed } now = phase::running;
    double kill_at = INFINITY;  ///< terminating: when SIGKILL follows the SIGTERM
    bool timed_out = false, stopped = false;
    command_status st;
};

process_runner::process_runner() = default;

process_runner::~process_runner() {
    if (guard_socket_ >= 0) ::close(guard_socket_);
    if (guard_ > 0) {
        int status = 0;
        while (::waitpid(guard_, &status, 0) < 0 && errno == EINTR) {
        }
    }
}

void process_runner::start_guard() {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        throw error(std::string("pfarm-run: cannot start the guard of the commands: socketpair: ") + std::strerror(errno));
    fd_holder theirs(pair[1]);
    guard_socket_ = pair[0];
    spawn_setup s;
    posix_spawn_file_actions_adddup2(&s.actions, pair[1], 0);
    posix_spawn_file_actions_addopen(&s.actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&s.actions, 2, "/dev/null", O_WRONLY, 0);
    s.close_the_rest();
    const std::vector<std::string> env_strings = command_environment();
    std::vector<char*> env;
    for (const auto& e : env_strings) env.push_back(const_cast<char*>(e.c_str()));
    env.push_back(nullptr);
    if (const int rc = s.spawn(guard_, guard_script, env.data()); rc != 0) {
        guard_ = -1;
        throw error(std::string("pfarm-run: cannot start the guard of the commands (/bin/sh): ") + std::strerror(rc));
    }
}

void process_runner::tell_guard(const std::string& line) {
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
        const ssize_t n = ::send(guard_socket_, p, left, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // the guard is gone: the command runs unguarded, which only matters if this rank dies
        p += n, left -= static_cast<std::size_t>(n);
    }
}

command_status process_runner::run(const command_spec& spec) {
    if (!children_.empty()) throw error("pfarm-run: process_runner::run with commands running");
    command_status failed;
    if (!start(0, spec, failed)) return failed;
    for (;;)
        if (auto ended = wait(INFINITY); !ended.empty()) return std::move(ended.front().second);
}

bool process_runner::start(std::uint64_t id, const command_spec& spec, command_status& failed) {
    if (guard_ < 0) start_guard();
    auto c = std::make_unique<child>();
    c->id = id;
    c->st.start = unix_time();
    const auto not_started = [&](const std::string& why) {
        failed = command_status{};
        failed.what = outcome::not_started;
        failed.error = why;
        failed.start = c->st.start;
        failed.end = unix_time();
        return false;
    };
    // The output files are opened here, so that a failure names the file.
    const auto open_output = [](const std::string& path) {
        return path.empty() ? -1 : ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    };
    // Captured output goes to unlinked files in $TMPDIR (a pipe would need reading while the command runs).
    const auto temporary = []() {
        const char* dir = std::getenv("TMPDIR");
        std::string path = std::string(dir && *dir ? dir : "/tmp") + "/pfarm-run-XXXXXX";
        const int fd = ::mkostemp(path.data(), O_CLOEXEC);
        if (fd >= 0) ::unlink(path.c_str());
        return fd;
    };
    c->capture = spec.capture && !spec.lines;
    c->lines = spec.lines;
    fd_holder write_ends[2];  // lines: the pipes' ends the command writes to, closed here once it has them
    if (c->lines) {
        if (!lines_) throw error("pfarm-run: a command's output is line-buffered, but nothing takes its lines");
        for (int s = 0; s < 2; ++s) {
            int ends[2];
            if (::pipe2(ends, O_CLOEXEC) != 0)
                return not_started(std::string("cannot create a pipe for its output: ") + std::strerror(errno));
            (s == 0 ? c->out : c->err).fd = ends[0];
            write_ends[s].fd = ends[1];
            ::fcntl(ends[0], F_SETFL, ::fcntl(ends[0], F_GETFL) | O_NONBLOCK);
            c->open[s] = true;
        }
    } else {
        c->out.fd = c->capture ? temporary() : open_output(spec.stdout_path);
        c->err.fd = c->capture ? temporary() : open_output(spec.stderr_path);
    }
    if (c->capture && (c->out.fd < 0 || c->err.fd < 0))
        return not_started(std::string("cannot create a file in $TMPDIR for its output: ") + std::strerror(errno));
    if (!c->capture && !c->lines && !spec.stdout_path.empty() && c->out.fd < 0)
        return not_started("cannot open '" + spec.stdout_path + "' for writing: " + std::strerror(errno));
    if (!c->capture && !c->lines && !spec.stderr_path.empty() && c->err.fd < 0)
        return not_started("cannot open '" + spec.stderr_path + "' for writing: " + std::strerror(errno));

    spawn_setup s;
    posix_spawn_file_actions_addopen(&s.actions, 0, "/dev/null", O_RDONLY, 0);
    const int out_fd = c->lines ? write_ends[0].fd : c->out.fd, err_fd = c->lines ? write_ends[1].fd : c->err.fd;
    if (out_fd >= 0) posix_spawn_file_actions_adddup2(&s.actions, out_fd, 1);
    if (err_fd >= 0) posix_spawn_file_actions_adddup2(&s.actions, err_fd, 2);
    s.close_the_rest();
    std::vector<char*> env;
    for (const auto& e : spec.environment) env.push_back(const_cast<char*>(e.c_str()));
    env.push_back(nullptr);
    if (const int rc = s.spawn(c->pid, spec.command, env.data(), spec.shell); rc != 0)
        return not_started("cannot start the shell '" + spec.shell + "': " + std::strerror(rc));
    std::string started = std::to_string(c->pid);  // "+PGID\n" (appended: GCC 12 warns about "+" + string, bug 105329)
    started.insert(started.begin(), '+');
    started.push_back('\n');
    tell_guard(started);
    c->pidfd.fd = open_pidfd(c->pid);
    c->stop = spec.stop;
    c->grace = spec.grace;
    c->deadline = spec.timeout > 0 ? monotonic() + spec.timeout : INFINITY;
    children_.push_back(std::move(c));
    return true;
}

void process_runner::on_lines(std::function<void(const line_piece&)> lines, std::function<void()> tick, double period) {
    lines_ = std::move(lines);
    tick_ = std::move(tick);
    tick_period_ = period;
}

/// Reads what command `c`'s pipes hold (`to_the_end`: until they are empty, and the last line without a newline goes
/// too; else a few reads per pipe, so that no command holds the others' lines back) and hands the whole lines on.
void process_runner::read_lines(child& c, bool to_the_end) {
    for (int s = 0; s < 2; ++s) {
        std::string& p = c.pending[s];
        fd_holder& fd = s == 0 ? c.out : c.err;
        char buffer[65536];
        for (int reads = 0; c.open[s] && reads < (to_the_end ? 1024 : 16);) {
            const ssize_t n = ::read(fd.fd, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                if (n == 0) c.open[s] = false;  // every writer is gone
                break;                           // or nothing more now
            }
            ++reads;
            p.append(buffer, static_cast<std::size_t>(n));
            std::size_t at = 0;  // whole lines, up to line_piece_bytes a piece; a longer line in pieces of that size
            while (p.size() - at >= line_piece_bytes || p.find('\n', at) != std::string::npos) {
                const std::size_t window = std::min(p.size() - at, line_piece_bytes);
                const std::size_t newline = p.rfind('\n', at + window - 1);
                const bool cut = newline == std::string::npos || newline < at;
                const std::size_t bytes = cut ? line_piece_bytes : newline + 1 - at;
                lines_(line_piece{c.id, s + 1, std::string_view(p.data() + at, bytes), c.mid[s]});
                c.mid[s] = cut;
                at += bytes;
            }
            p.erase(0, at);
        }
        if (to_the_end && !p.empty()) {
            lines_(line_piece{c.id, s + 1, p, c.mid[s]});
            p.clear();
        }
    }
}

std::vector<std::pair<std::uint64_t, command_status>> process_runner::wait(double limit) {
    std::vector<std::pair<std::uint64_t, command_status>> done;
    const double until = monotonic() + limit;
    double pause = 0.0005;  // without pidfds: poll waitid, more slowly as the wait goes on
    double next_tick = monotonic() + tick_period_;
    for (;;) {
        double next = until;  // the next moment something is due
        for (auto& c : children_)
            if (c->lines) read_lines(*c, false);
        if (tick_ && monotonic() >= next_tick) {
            tick_();
            next_tick = monotonic() + tick_period_;
        }
        if (tick_ && !children_.empty()) next = std::min(next, next_tick);
        for (std::size_t k = 0; k < children_.size();) {
            child& c = *children_[k];
            bool ended = has_ended(c.pid);
            const double now = monotonic();
            if (c.now == child::phase::running && !ended) {
                if (now >= c.deadline) c.timed_out = true;
                else if (c.stop && c.stop()) c.stopped = true;
                if (c.timed_out || c.stopped) {
                    ::kill(-c.pid, SIGTERM);  // the whole group: the shell and what it started
                    c.now = child::phase::terminating;
                    c.kill_at = now + c.grace;
                }
            }
            if (c.now == child::phase::terminating && (ended || now >= c.kill_at)) {
                ::kill(-c.pid, SIGKILL);  // what ignored SIGTERM, or outlived the shell; the group is still ours (not reaped)
                c.now = child::phase::killed;
                ended = has_ended(c.pid);
            }
            if (ended && c.now != child::phase::terminating) {
                done.emplace_back(c.id, reap(c));
                children_.erase(children_.begin() + static_cast<std::ptrdiff_t>(k));
                continue;
            }
            if (c.now == child::phase::running) {
                next = std::min(next, c.deadline);
                if (c.stop) next = std::min(next, now + 0.05);  // the stop is polled every 50 ms
            } else if (c.now == child::phase::terminating) {
                next = std::min(next, c.kill_at);
            }
            ++k;
        }
        const double now = monotonic();
        if (!done.empty() || now >= until || children_.empty()) return done;
        const double left = std::max(next - now, 0.0);
        std::vector<pollfd> fds;  // the commands' ends (pidfds), and the pipes of line-buffered ones
        bool every_end = true;
        for (const auto& c : children_) {
            if (c->pidfd.fd >= 0) fds.push_back(pollfd{c->pidfd.fd, POLLIN, 0});
            else every_end = false;
            for (int s = 0; s < 2; ++s)
                if (c->lines && c->open[s]) fds.push_back(pollfd{(s == 0 ? c->out : c->err).fd, POLLIN, 0});
        }
        if (every_end) {
            ::poll(fds.data(), fds.size(), static_cast<int>(std::min(left * 1000.0 + 1.0, 3600e3)));
        } else if (!fds.empty()) {
            ::poll(fds.data(), fds.size(), static_cast<int>(std::min(pause, left) * 1000.0 + 1.0));
            pause = std::min(pause * 1.5, 0.05);
        } else {
            std::this_thread::sleep_for(std::chrono::duration<double>(std::min(pause, left)));
            pause = std::min(pause * 1.5, 0.05);
        }
    }
}

command_status process_runner::reap(child& c) {
    if (c.lines) read_lines(c, true);  // what it wrote last (its end of file, unless a process it left holds the pipe)
    command_status st = std::move(c.st);
    std::string ended = std::to_string(c.pid);  // "-PGID\n": before reaping, the guard never kills a group whose leader is gone
    ended.insert(ended.begin(), '-');
    ended.push_back('\n');
    tell_guard(ended);
    siginfo_t info{};
    int reaped = 0;
    while ((reaped = ::waitid(P_PID, static_cast<id_t>(c.pid), &info, WEXITED)) != 0 && errno == EINTR) {
    }
    st.end = unix_time();
    if (reaped != 0) {  // reaped by the kernel (SIGCHLD ignored): its status is lost
        st.what = c.timed_out ? outcome::timed_out : outcome::failed;
        st.error = "its exit status was lost (SIGCHLD is ignored in this process)";
        return st;
    }
    if (info.si_code == CLD_EXITED) {
        st.exit_code = info.si_status;
    } else {
        st.signal = info.si_status;
    }
    st.what = c.stopped     ? outcome::killed
              : c.timed_out ? outcome::timed_out
              : st.exit_code == 0 ? outcome::ok
                                  : outcome::failed;
    if (c.capture) {
        st.out = read_all(c.out.fd);
        st.err = read_all(c.err.fd);
    }
    return st;
}

}  // namespace pfarm::tools::run
