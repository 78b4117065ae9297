// pfarm-run: one shell command as a child process, its timeout, and the guard that kills it if the rank dies
// (run_process.hpp).
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

/// The guard: remembers the process group of the running command ("+PGID" when one starts, "-" once it has
/// ended, before it is reaped) and, when its input closes with a command still running, kills that group. It
/// ignores the signals a dying job sends around, and sits in its own process group.
constexpr const char* guard_script =
    "trap '' HUP INT TERM PIPE\n"
    "current=\n"
    "while read -r line; do\n"
    "  case $line in\n"
    "    +*) current=${line#+} ;;\n"
    "    -) current= ;;\n"
    "  esac\n"
    "done\n"
    "if [ -n \"$current\" ]; then kill -s KILL -- \"-$current\" 2>/dev/null; fi\n"
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

/// Waits until process `pid` has ended (left as a zombie, not reaped: its process group stays valid) or
/// `deadline` (monotonic seconds; infinity: no limit) has passed. Returns whether it ended.
bool wait_until(pid_t pid, double deadline) {
    // A pidfd wakes us exactly when it ends; without one (kernels before 5.3), poll waitid a few times a second.
    static bool no_pidfd = false;
    int pidfd = -1;
#ifdef SYS_pidfd_open
    if (!no_pidfd) {
        pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
        if (pidfd < 0 && errno == ENOSYS) no_pidfd = true;
    }
#endif
    fd_holder holder(pidfd);
    double pause = 0.0005;
    for (;;) {
        siginfo_t info{};
        info.si_pid = 0;
        if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0) {
            if (info.si_pid == pid) return true;
        } else if (errno == ECHILD) {
            return true;  // already reaped: SIGCHLD ignored in this process (the kernel reaps), nothing to wait for
        }
        const double left = deadline - monotonic();
        if (left <= 0) return false;
        if (pidfd >= 0) {
            pollfd p{pidfd, POLLIN, 0};
            const double ms = std::min(left * 1000.0 + 1.0, 3600e3);
            ::poll(&p, 1, static_cast<int>(ms));
        } else {
            std::this_thread::sleep_for(std::chrono::duration<double>(std::min(pause, left)));
            pause = std::min(pause * 1.5, 0.05);
        }
    }
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
    if (guard_ < 0) start_guard();
    command_status st;
    st.start = unix_time();
    const auto not_started = [&](const std::string& why) {
        st.what = outcome::not_started;
        st.error = why;
        st.end = unix_time();
        return st;
    };
    // The output files are opened here, so that a failure names the file.
    const auto open_output = [](const std::string& path) {
        return fd_holder(path.empty() ? -1 : ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    };
    // Captured output goes to unlinked files in $TMPDIR (a pipe would need reading while the command runs).
    const auto temporary = []() {
        const char* dir = std::getenv("TMPDIR");
        std::string path = std::string(dir && *dir ? dir : "/tmp") + "/pfarm-run-XXXXXX";
        const int fd = ::mkostemp(path.data(), O_CLOEXEC);
        if (fd >= 0) ::unlink(path.c_str());
        return fd_holder(fd);
    };
    fd_holder out = spec.capture ? temporary() : open_output(spec.stdout_path);
    fd_holder err = spec.capture ? temporary() : open_output(spec.stderr_path);
    if (spec.capture && (out.fd < 0 || err.fd < 0))
        return not_started(std::string("cannot create a file in $TMPDIR for its output: ") + std::strerror(errno));
    if (!spec.capture && !spec.stdout_path.empty() && out.fd < 0)
        return not_started("cannot open '" + spec.stdout_path + "' for writing: " + std::strerror(errno));
    if (!spec.capture && !spec.stderr_path.empty() && err.fd < 0)
        return not_started("cannot open '" + spec.stderr_path + "' for writing: " + std::strerror(errno));

    spawn_setup s;
    posix_spawn_file_actions_addopen(&s.actions, 0, "/dev/null", O_RDONLY, 0);
    if (out.fd >= 0) posix_spawn_file_actions_adddup2(&s.actions, out.fd, 1);
    if (err.fd >= 0) posix_spawn_file_actions_adddup2(&s.actions, err.fd, 2);
    s.close_the_rest();
    std::vector<char*> env;
    for (const auto& e : spec.environment) env.push_back(const_cast<char*>(e.c_str()));
    env.push_back(nullptr);
    pid_t pid = -1;
    if (const int rc = s.spawn(pid, spec.command, env.data(), spec.shell); rc != 0)
        return not_started("cannot start the shell '" + spec.shell + "': " + std::strerror(rc));
    std::string started = std::to_string(pid);  // "+PGID\n" (appended: GCC 12 warns about "+" + string, bug 105329)
    started.insert(started.begin(), '+');
    started.push_back('\n');
    tell_guard(started);

    const double begun = monotonic();
    const double deadline = spec.timeout > 0 ? begun + spec.timeout : INFINITY;
    bool timed_out = false, killed = false;
    bool ended = false;
    while (!ended) {
        const double until = spec.stop ? std::min(deadline, monotonic() + 0.05) : deadline;
        ended = wait_until(pid, until);
        if (ended || monotonic() >= deadline) break;
        if (spec.stop && spec.stop()) {
            killed = true;
            break;
        }
    }
    if (!ended) {
        timed_out = !killed;
        ::kill(-pid, SIGTERM);  // the whole group: the shell and what it started
        wait_until(pid, monotonic() + spec.grace);
        ::kill(-pid, SIGKILL);  // what ignored SIGTERM, or outlived the shell; the group is still ours (not reaped)
        wait_until(pid, INFINITY);
    }
    tell_guard("-\n");  // before reaping: the guard never kills a group whose leader is gone
    siginfo_t info{};
    int reaped = 0;
    while ((reaped = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED)) != 0 && errno == EINTR) {
    }
    st.end = unix_time();
    if (reaped != 0) {  // reaped by the kernel (SIGCHLD ignored): its status is lost
        st.what = timed_out ? outcome::timed_out : outcome::failed;
        st.error = "its exit status was lost (SIGCHLD is ignored in this process)";
        return st;
    }
    if (info.si_code == CLD_EXITED) {
        st.exit_code = info.si_status;
    } else {
        st.signal = info.si_status;
    }
    st.what = killed ? outcome::killed : timed_out ? outcome::timed_out : st.exit_code == 0 ? outcome::ok : outcome::failed;
    if (spec.capture) {
        st.out = read_all(out.fd);
        st.err = read_all(err.fd);
    }
    return st;
}

}  // namespace pfarm::tools::run
