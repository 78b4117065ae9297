// pfarm-run: running shell commands as child processes, one or several at once. posix_spawn (safe in an MPI process: no
// fork of the rank's registered memory), SHELL -c COMMAND in its own process group, stdin from /dev/null, stdout and
// stderr to files, captured (for grouped output), handed on line by line as they come (--line-buffer), inherited or
// discarded; a timeout that kills the whole group; and a guard per rank that kills the running commands' groups when
// the rank dies (a job killed with SIGKILL leaves no command behind). No MPI.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

namespace pfarm::tools::run {

/// How a command ended.
enum class outcome : std::uint8_t {
    ok = 0,           ///< exited with status 0
    failed = 1,       ///< exited with another status, or was killed by a signal it was not sent by pfarm-run
    timed_out = 2,    ///< ran past its timeout: its group got SIGTERM, then SIGKILL
    not_run = 3,      ///< never started: the run halted at a failure first (--halt-on-error)
    not_started = 4,  ///< could not be started (an output file could not be opened, the shell could not be run)
    killed = 5,       ///< killed by pfarm-run because the run halted (--halt now)
};

/// "ok", "failed", "timeout", "not-run", "not-started", "killed" (the job log's status column).
const char* to_string(outcome o);

/// One command to run.
struct command_spec {
    std::string command;                   ///< run as SHELL -c COMMAND
    std::string shell = "/bin/sh";         ///< a path, or a name looked up in PATH
    std::vector<std::string> environment;  ///< NAME=VALUE: its whole environment
    std::string stdout_path, stderr_path;  ///< files (created or truncated); empty: the rank's own stdout / stderr
    bool capture = false;                  ///< stdout and stderr into command_status::out and err (paths ignored)
    /// stdout and stderr through pipes, handed on in whole lines as they come (process_runner::on_lines; paths and
    /// capture ignored)
    bool lines = false;
    std::function<bool()> stop;            ///< polled while it runs (every 50 ms); true: kill it (outcome killed)
    double timeout = 0.0;                  ///< seconds; 0: none
    double grace = 1.0;                    ///< after the timeout's SIGTERM, seconds before SIGKILL
};

/// What became of it.
struct command_status {
    outcome what = outcome::not_started;
    int exit_code = -1;  ///< 0-255 when it exited; -1 otherwise
    int signal = 0;      ///< the signal that ended it; 0 when it exited
    std::string error;   ///< not_started: why; otherwise empty, or why the exit status is unknown
    std::string out, err;  ///< captured stdout and stderr (command_spec::capture)
    double start = 0.0, end = 0.0;  ///< Unix time, seconds
};

/// What a line-buffered command (command_spec::lines) wrote, as it comes: whole lines of one stream, as many as one
/// read brought, at most line_piece_bytes; a line longer than that goes in pieces of that size (each but the first
/// `mid_line`); the command's last line, when it ends without a newline, goes as it is once the command has ended.
struct line_piece {
    std::uint64_t id = 0;   ///< the command's (start's id)
    int stream = 1;         ///< 1 stdout, 2 stderr
    std::string_view text;  ///< valid during the call
    bool mid_line = false;  ///< it continues the line of this stream's piece before
};

/// A line longer than this travels in pieces of this size.
constexpr std::size_t line_piece_bytes = 64 * 1024;

/// Runs commands, one at a time (run) or several at once (start, then wait). Owns the guard: a /bin/sh process in
/// its own process group that reads the groups of the running commands from a socket; when the socket closes
/// while commands have not been reaped (the rank died, SIGKILL included), it kills those groups with SIGKILL.
class process_runner {
public:
    process_runner();
    ~process_runner();  ///< closes the guard's socket (the guard exits, killing what still runs) and reaps the guard
    process_runner(const process_runner&) = delete;
    process_runner& operator=(const process_runner&) = delete;

    /// Runs `spec` to its end (or its timeout's), with no other command running. Never throws for the command's
    /// own failures (they are in the status); throws pfarm::error when the guard cannot be started.
    command_status run(const command_spec& spec);

    /// Starts `spec` as command `id` (the caller's number for it) beside those running. Returns false when it could
    /// not start: `failed` then holds its not_started status. Throws pfarm::error when the guard cannot be started.
    bool start(std::uint64_t id, const command_spec& spec, command_status& failed);
    /// Waits until one running command or more have ended (each by its end, its timeout's or its stop), or `limit`
    /// seconds have passed (infinity: no limit); returns those that ended, with their ids.
    std::vector<std::pair<std::uint64_t, command_status>> wait(double limit);
    /// The commands started and not yet returned by wait.
    std::size_t running() const noexcept { return children_.size(); }
    /// Line-buffered commands' output goes to `lines` as it comes, from inside wait() (and the last pieces before
    /// wait returns the command); `tick` is called from wait() at least every `period` seconds while it waits.
    void on_lines(std::function<void(const line_piece&)> lines, std::function<void()> tick, double period);

private:
    struct child;
    void start_guard();
    void tell_guard(const std::string& line);
    command_status reap(child& c);
    void read_lines(child& c, bool to_the_end);

    std::function<void(const line_piece&)> lines_;
    std::function<void()> tick_;
    double tick_period_ = 0.0;

    int guard_socket_ = -1;
    pid_t guard_ = -1;
    std::vector<std::unique_ptr<child>> children_;
};

/// This process's environment for a command: without the variables of the MPI launch (Open MPI's OMPI_COMM_WORLD_*,
/// the launch's OMPI_MCA_orte_*, OMPI_MCA_ess*, OMPI_MCA_pmix* and a few more, PMIX_*, PMI_*, and under srun the
/// step's and the task's SLURM_STEP_*, SLURM_STEPID, SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID...; the job's
/// SLURM_JOB_* stay), so that a command that is itself an MPI program starts as a singleton instead of joining the
/// job or taking itself for a rank of the srun step; and without PFARM_TASK, PFARM_RANK and PFARM_ATTEMPT, which
/// pfarm-run sets for each command.
std::vector<std::string> command_environment();

/// Seconds since the Unix epoch.
double unix_time();

}  // namespace pfarm::tools::run
