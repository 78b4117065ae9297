// pfarm-run: the tool that farms shell commands over MPI ranks with pfarm's scheduling (docs/run.md is its manual).
// Its one job is the run on the ranks: the command line, the ranks' agreement before the farm, the farm of the
// commands (each task runs one command on a worker rank: run_process.hpp; its outcome is a fixed-size record,
// run_records.hpp, streamed to rank 0 and kept in the --journal), what rank 0 makes of the records (the job log, the
// summary, the exit status) and the --halt-on-error message between ranks. The commands themselves come from
// run_commands.hpp (a commands file, or a GNU-parallel-style `TEMPLATE ::: a b ::: 1 2` grid).
#include "farm_cli.hpp"
#include "options.hpp"
#include "run_commands.hpp"
#include "run_process.hpp"
#include "run_records.hpp"

#include "pfarm/error.hpp"
#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace run = pfarm::tools::run;
using pfarm::task_count;
using run::outcome;
using run::task_result;

/// pfarm-run's own settings beside the farm's.
struct settings {
    std::string output;            ///< --output DIR: each command's stdout and stderr in files there
    bool quiet = false;            ///< --quiet: discard them (and no progress unless --progress is given)
    std::string joblog;            ///< --joblog FILE
    double timeout = 0.0;          ///< --timeout S
    bool timeout_given = false;    ///< without --timeout, commands run as long as they take
    int retries = 0;               ///< --retries N
    bool retry_failed = false;     ///< --retry-failed
    bool halt_on_error = false;    ///< --halt-on-error
    bool dry_run = false;          ///< --dry-run
    bool json = false;             ///< --json
};

// --- Agreement between the ranks -----------------------------------------------------------------------------

void broadcast_string(std::string& s, int root, MPI_Comm comm) {
    unsigned long long size = s.size();
    pfarm::mpi::check(MPI_Bcast(&size, 1, MPI_UNSIGNED_LONG_LONG, root, comm), "MPI_Bcast");
    s.resize(static_cast<std::size_t>(size));
    constexpr std::size_t piece = std::size_t{1} << 30;
    for (std::size_t at = 0; at < s.size(); at += piece)
        pfarm::mpi::check(MPI_Bcast(s.data() + at, static_cast<int>(std::min(piece, s.size() - at)), MPI_CHAR, root, comm),
                          "MPI_Bcast");
}

/// Every rank throws together: the lowest rank whose `failure` is set gives its argument and message to all.
void agree(const std::optional<pfarm::invalid_argument>& failure, MPI_Comm comm) {
    int rank = 0, ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    int mine = failure ? rank : ranks, first = ranks;
    pfarm::mpi::check(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
    if (first == ranks) return;
    std::string argument = failure ? failure->argument() : "", message = failure ? failure->message() : "";
    broadcast_string(argument, first, comm);
    broadcast_string(message, first, comm);
    throw pfarm::invalid_argument(argument, message);
}

/// Runs `check` and agrees on its verdict (an invalid_argument it throws).
template <class F>
void checked_together(MPI_Comm comm, F&& check) {
    std::optional<pfarm::invalid_argument> failure;
    try {
        check();
    } catch (const pfarm::invalid_argument& e) {
        failure = e;
    }
    agree(failure, comm);
}

/// Rank 0's commands reach every rank (NUL-separated: a command holds none).
void broadcast_commands(std::vector<std::string>& commands, int rank, MPI_Comm comm) {
    std::string all;
    if (rank == 0)
        for (const auto& c : commands) all.append(c).push_back('\0');
    broadcast_string(all, 0, comm);
    if (rank == 0) return;
    commands.clear();
    for (std::size_t at = 0; at < all.size();) {
        const std::size_t end = all.find('\0', at);
        commands.emplace_back(all, at, end - at);
        at = end + 1;
    }
}

/// --output DIR on this rank: created if missing, a folder, and writable (a file is created in it and removed).
void check_output(const std::string& dir, int rank) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw pfarm::invalid_argument("--output", "cannot create directory '" + dir + "': " + ec.message());
    if (!fs::is_directory(dir, ec)) throw pfarm::invalid_argument("--output", "'" + dir + "' is not a directory");
    const std::string probe = (fs::path(dir) / (".pfarm-run-probe-" + std::to_string(rank) + "-" + std::to_string(::getpid()))).string();
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        throw pfarm::invalid_argument("--output", "cannot write in '" + dir + "' (rank " + std::to_string(rank) + "): " +
                                                      std::strerror(errno));
    ::close(fd);
    ::unlink(probe.c_str());
}

// --- --halt-on-error ------------------------------------------------------------------------------------------

/// The first failure stops every rank from starting commands: the rank that saw it sends a one-int message to
/// every other rank on a communicator of its own; a rank probes for it before each command (MPI_Iprobe: about a
/// microsecond beside the millisecond a process takes to start). The commands already running end as they would;
/// the tasks not started yet are recorded as not run, and the farm runs to its end at once. finish() is collective:
/// every rank receives what was sent to it (rank 0, which may never probe, included) and completes its sends.
class halt_channel {
public:
    explicit halt_channel(MPI_Comm world) : comm_(world) {
        rank_ = comm_.rank();
        ranks_ = comm_.size();
        sent_.assign(static_cast<std::size_t>(ranks_), 0);
        received_.assign(static_cast<std::size_t>(ranks_), 0);
        requests_.assign(static_cast<std::size_t>(ranks_), MPI_REQUEST_NULL);
    }

    /// Whether some rank (this one included) has halted the run.
    bool halted() {
        while (!halted_ && ranks_ > 1) {
            int flag = 0;
            MPI_Status status;
            pfarm::mpi::check(MPI_Iprobe(MPI_ANY_SOURCE, tag, comm_.get(), &flag, &status), "MPI_Iprobe");
            if (!flag) break;
            receive_from(status.MPI_SOURCE);
        }
        return halted_;
    }

    /// This rank saw a failure: halt every rank.
    void raise() {
        if (raised_) return;
        raised_ = halted_ = true;
        for (int r = 0; r < ranks_; ++r) {
            if (r == rank_) continue;
            sent_[static_cast<std::size_t>(r)] = 1;
            pfarm::mpi::check(MPI_Isend(&token_, 1, MPI_INT, r, tag, comm_.get(), &requests_[static_cast<std::size_t>(r)]),
                              "MPI_Isend");
        }
    }

    /// Collective, after the farm: returns whether any rank halted the run.
    bool finish() {
        std::vector<int> expected(static_cast<std::size_t>(ranks_), 0);
        pfarm::mpi::check(MPI_Alltoall(sent_.data(), 1, MPI_INT, expected.data(), 1, MPI_INT, comm_.get()), "MPI_Alltoall");
        for (int r = 0; r < ranks_; ++r)
            if (expected[static_cast<std::size_t>(r)] && !received_[static_cast<std::size_t>(r)]) receive_from(r);
        pfarm::mpi::check(MPI_Waitall(ranks_, requests_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
        int mine = raised_ ? 1 : 0, any = 0;
        pfarm::mpi::check(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, comm_.get()), "MPI_Allreduce");
        return any != 0;
    }

    /// After a failed farm (not collective): drops the sends still pending.
    void abandon() noexcept {
        for (MPI_Request& r : requests_) {
            if (r == MPI_REQUEST_NULL) continue;
            int done = 0;
            MPI_Test(&r, &done, MPI_STATUS_IGNORE);
            if (!done) {
                MPI_Cancel(&r);
                MPI_Request_free(&r);
            }
        }
    }

private:
    void receive_from(int source) {
        int token = 0;
        pfarm::mpi::check(MPI_Recv(&token, 1, MPI_INT, source, tag, comm_.get(), MPI_STATUS_IGNORE), "MPI_Recv");
        received_[static_cast<std::size_t>(source)] = 1;
        halted_ = true;
    }

    static constexpr int tag = 16;
    pfarm::mpi::communicator comm_;
    int rank_ = 0, ranks_ = 1;
    int token_ = 1;
    bool halted_ = false, raised_ = false;
    std::vector<int> sent_, received_;
    std::vector<MPI_Request> requests_;
};

// --- The job log ------------------------------------------------------------------------------------------------

/// The job log (rank 0): a TSV file, one line per command as its record reaches rank 0, columns in docs/run.md.
class job_log {
public:
    void open(const std::string& path) {
        if (path.empty()) return;
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec))
            throw pfarm::invalid_argument("--joblog", "'" + path + "' is a directory; expected a file");
        fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        if (fd_ < 0) throw pfarm::invalid_argument("--joblog", "cannot write '" + path + "': " + std::strerror(errno));
        path_ = path;
        write("task\trank\thost\tstart\tend\truntime\tattempts\texit\tsignal\tstatus\tsource\tcommand\n");
    }
    ~job_log() {
        if (fd_ >= 0) ::close(fd_);
    }

    void add(task_count task, const task_result& r, bool restored, const std::string& command) {
        if (fd_ < 0) return;
        std::string line = std::to_string(task) + '\t' + std::to_string(r.rank) + '\t' + r.host + '\t' + fixed(r.start) + '\t' +
                           fixed(r.end) + '\t' + fixed(r.end - r.start) + '\t' + std::to_string(r.attempts) + '\t' +
                           std::to_string(r.exit_code) + '\t' + std::to_string(r.signal) + '\t' + run::to_string(r.what()) +
                           '\t' + (restored ? "journal" : "run") + '\t';
        for (char c : command) {
            if (c == '\\') line += "\\\\";
            else if (c == '\t') line += "\\t";
            else if (c == '\r') line += "\\r";
            else line += c;
        }
        line += '\n';
        write(line);
    }

private:
    static std::string fixed(double v) {
        char buffer[64];
        const auto r = std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::fixed, 3);
        return std::string(buffer, r.ptr);
    }
    void write(const std::string& s) {
        const char* p = s.data();
        std::size_t left = s.size();
        while (left > 0) {
            const ssize_t n = ::write(fd_, p, left);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) throw pfarm::error("job log '" + path_ + "': a write failed: " + std::strerror(errno));
            p += n, left -= static_cast<std::size_t>(n);
        }
    }
    int fd_ = -1;
    std::string path_;
};

// --- The summary ------------------------------------------------------------------------------------------------

struct tally {
    task_count ok = 0, failed = 0, timed_out = 0, not_run = 0, not_started = 0;
    task_count restored = 0, restored_ok = 0;  ///< from the journal (all outcomes) and of them succeeded
    std::vector<std::pair<task_count, task_result>> failures;  ///< the first few, for the summary

    void add(task_count task, const task_result& r, bool from_journal) {
        switch (r.what()) {
        case outcome::ok: ++ok; break;
        case outcome::failed: ++failed; break;
        case outcome::timed_out: ++timed_out; break;
        case outcome::not_run: ++not_run; break;
        case outcome::not_started: ++not_started; break;
        }
        if (from_journal) restored += 1, restored_ok += r.what() == outcome::ok;
        if (r.what() != outcome::ok && r.what() != outcome::not_run && failures.size() < 5) failures.emplace_back(task, r);
    }
    bool all_ok(task_count commands) const { return ok == commands; }
};

std::string describe(const task_result& r) {
    switch (r.what()) {
    case outcome::failed:
        return r.signal ? "killed by signal " + std::to_string(r.signal) : "exit " + std::to_string(r.exit_code);
    case outcome::timed_out: return "timed out";
    case outcome::not_started: return "not started";
    default: return run::to_string(r.what());
    }
}

void print_summary(std::ostream& out, const tally& t, task_count commands, bool halted,
                   const std::vector<std::string>& texts, const std::string& joblog) {
    out << "pfarm-run: " << commands << (commands == 1 ? " command: " : " commands: ") << t.ok << " succeeded";
    if (t.restored_ok > 0) out << " (" << t.restored_ok << " of them skipped: done in the journal)";
    if (t.failed > 0) out << ", " << t.failed << " failed";
    if (t.timed_out > 0) out << ", " << t.timed_out << " timed out";
    if (t.not_started > 0) out << ", " << t.not_started << " could not start";
    if (t.not_run > 0) out << ", " << t.not_run << " not run";
    if (halted) out << " (halted at the first failure)";
    const task_count failed_restored = t.restored - t.restored_ok;
    if (failed_restored > 0)
        out << "; " << failed_restored << (failed_restored == 1 ? " failure comes" : " failures come")
            << " from the journal (--retry-failed runs " << (failed_restored == 1 ? "it" : "them") << " again)";
    out << "\n";
    for (const auto& [task, r] : t.failures) {
        std::string c = texts[static_cast<std::size_t>(task)];
        if (c.size() > 80) c = c.substr(0, 77) + "...";
        out << "pfarm-run:   task " << task << " (" << describe(r) << ", rank " << r.rank << "): " << c << "\n";
    }
    const task_count bad = t.failed + t.timed_out + t.not_started;
    if (bad > static_cast<task_count>(t.failures.size()))
        out << "pfarm-run:   ... " << bad - static_cast<task_count>(t.failures.size()) << " more"
            << (joblog.empty() ? "" : " in the job log " + joblog) << "\n";
}

std::string number(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
}

// --- The run ----------------------------------------------------------------------------------------------------

std::string task_file(const std::string& dir, task_count task, task_count tasks, const char* suffix) {
    std::string digits = std::to_string(task);
    const std::size_t width = std::max<std::size_t>(6, std::to_string(std::max<task_count>(tasks - 1, 0)).size());
    if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
    return (std::filesystem::path(dir) / ("task_" + digits + suffix)).string();
}

std::uint64_t new_run_id() {
    std::random_device device;
    std::uint64_t id = (static_cast<std::uint64_t>(device()) << 32) ^ device();
    id ^= static_cast<std::uint64_t>(run::unix_time() * 1e6);
    return id == 0 ? 1 : id;
}

/// What the command line alone decides, checked by every rank alike before MPI starts (bad input costs no MPI
/// start-up): the settings, and the grid's or the commands file's words.
void check_command_line(const settings& s, const std::vector<std::string>& words) {
    if (s.timeout_given && !(s.timeout > 0 && std::isfinite(s.timeout)))
        throw pfarm::invalid_argument("--timeout", "is " + number(s.timeout) +
                                                        "; expected a number of seconds > 0 (leave it out for no timeout)");
    if (s.retries < 0) throw pfarm::invalid_argument("--retries", "is " + std::to_string(s.retries) + "; expected >= 0");
    if (words.empty())
        throw pfarm::invalid_argument("COMMANDS_FILE", "missing: expected a file of commands, one per line, or a command "
                                                       "template followed by ::: groups of values");
    if (!words.front().empty() && words.front()[0] == '-' && words.front() != "-")
        throw pfarm::invalid_argument(words.front(), "unknown option (pfarm-run --help lists them)");
    if (run::has_grid(words)) {
        run::check_grid(run::split_grid(words));
    } else if (words.size() > 1) {
        const auto option = std::find_if(words.begin() + 1, words.end(), [](const std::string& w) { return w.rfind("-", 0) == 0; });
        if (option != words.end())
            throw pfarm::invalid_argument(*option, "comes after the commands file '" + words[0] +
                                                       "'; options go before it (pfarm-run [options] COMMANDS_FILE)");
        throw pfarm::invalid_argument("COMMANDS_FILE", "expected one file, got " + std::to_string(words.size()) +
                                                           " words ('" + words[0] + "', '" + words[1] + "'" +
                                                           (words.size() > 2 ? ", ..." : "") +
                                                           "); a grid needs ::: before its values");
    }
}

int run_commands(const settings& s, const pfarm::farm_options& options, const std::vector<std::string>& words) {
    int rank = 0;
    pfarm::mpi::check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    const bool journaled = !options.resume.journal.empty();

    // Rank 0 reads the commands file or expands the grid (check_command_line passed); every rank gets them.
    std::vector<std::string> commands;
    checked_together(MPI_COMM_WORLD, [&] {
        if (rank != 0) return;
        commands = run::has_grid(words) ? run::expand_grid(run::split_grid(words))
                                        : run::read_commands(words.front(), "COMMANDS_FILE");
    });
    broadcast_commands(commands, rank, MPI_COMM_WORLD);
    const auto tasks = static_cast<task_count>(commands.size());

    if (s.dry_run) {  // the commands a run would start, in task order; nothing runs
        checked_together(MPI_COMM_WORLD, [&] {
            if (rank != 0) return;
            run::resume_plan plan;
            if (journaled) plan = run::prepare_journal(options.resume.journal, commands, s.retry_failed, false, "--journal");
            for (task_count i = 0; i < tasks; ++i)
                if (!plan.done.count(i)) std::cout << commands[static_cast<std::size_t>(i)] << "\n";
            std::cout.flush();
        });
        return 0;
    }

    if (!s.output.empty()) checked_together(MPI_COMM_WORLD, [&] { check_output(s.output, rank); });
    job_log log;
    run::resume_plan plan;
    checked_together(MPI_COMM_WORLD, [&] {
        if (rank != 0) return;
        log.open(s.joblog);
        if (journaled) plan = run::prepare_journal(options.resume.journal, commands, s.retry_failed, true, "--journal");
    });
    std::optional<run::rank_records> records;
    if (journaled)
        checked_together(MPI_COMM_WORLD, [&] { records.emplace(run::rank_records_path(options.resume.journal, rank), "--journal"); });

    std::uint64_t run_id = rank == 0 ? new_run_id() : 0;
    pfarm::mpi::check(MPI_Bcast(&run_id, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
    char host[sizeof(task_result::host)] = {};
    ::gethostname(host, sizeof host - 1);

    // A worker's task: run the command (retried up to --retries times), record it, halt the others on a failure.
    run::process_runner runner;
    halt_channel halt(MPI_COMM_WORLD);
    const std::vector<std::string> environment = run::command_environment();
    auto command = [&](task_count i) {
        task_result r;
        r.command_hash = run::command_hash(commands[static_cast<std::size_t>(i)]);
        r.run = run_id;
        r.rank = rank;
        std::memcpy(r.host, host, sizeof r.host);
        if (halt.halted()) {
            r.status = static_cast<std::uint8_t>(outcome::not_run);
            r.start = r.end = run::unix_time();
            return r;
        }
        run::command_spec spec;
        spec.command = commands[static_cast<std::size_t>(i)];
        spec.timeout = s.timeout_given ? s.timeout : 0.0;
        if (!s.output.empty()) {
            spec.stdout_path = task_file(s.output, i, tasks, ".out");
            spec.stderr_path = task_file(s.output, i, tasks, ".err");
        } else if (s.quiet) {
            spec.stdout_path = spec.stderr_path = "/dev/null";
        }
        for (int attempt = 1; attempt <= s.retries + 1; ++attempt) {
            spec.environment = environment;
            spec.environment.push_back("PFARM_TASK=" + std::to_string(i));
            spec.environment.push_back("PFARM_RANK=" + std::to_string(rank));
            spec.environment.push_back("PFARM_ATTEMPT=" + std::to_string(attempt));
            const run::command_status st = runner.run(spec);
            if (attempt == 1) r.start = st.start;
            r.end = st.end;
            r.attempts = attempt;
            r.exit_code = st.exit_code;
            r.signal = st.signal;
            r.status = static_cast<std::uint8_t>(st.what);
            if (!st.error.empty())
                std::cerr << "pfarm-run: task " << i << " (rank " << rank << "): " << st.error << "\n";
            if (st.what == outcome::ok || (s.halt_on_error && halt.halted())) break;
        }
        if (records) records->append(i, r);  // before the result leaves this rank: a kill now loses nothing
        if (s.halt_on_error && r.what() != outcome::ok) halt.raise();
        return r;
    };
    tally counts;
    auto arrived = [&](task_count i, const task_result& r) {  // rank 0, once per command
        const bool restored = r.run != run_id;
        counts.add(i, r, restored);
        log.add(i, r, restored, commands[static_cast<std::size_t>(i)]);
    };

    pfarm::farm_options o = options;
    if (journaled) o.resume.journal_key = run::journal_key(commands);
    pfarm::farm_report report;
    try {
        if (o.topology.farmer == pfarm::farmer_mode::decentralised) {
            // The decentralised farm carries fixed-size outputs into rank 0's array only (no streaming, no journal):
            // the job log is written when the farm ends.
            std::vector<task_result> out(rank == 0 ? static_cast<std::size_t>(tasks) : 0);
            report = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, std::span<task_result>(out),
                                 [&](task_count i, task_result& r) { r = command(i); }, o);
            for (std::size_t i = 0; i < out.size(); ++i) arrived(static_cast<task_count>(i), out[i]);
        } else {
            report = pfarm::farm_stream(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, command, arrived, o);
        }
    } catch (...) {
        halt.abandon();
        if (records) records->remove_if_empty();
        throw;
    }
    const bool halted = halt.finish();
    if (records) records->remove();  // the journal holds every record now

    int status = 0;
    if (rank == 0) {
        status = counts.all_ok(tasks) ? 0 : 1;
        if (s.json) {
            nlohmann::json j = pfarm::tools::report_json(report);
            j["commands"] = tasks;
            j["succeeded"] = counts.ok;
            j["failed"] = counts.failed;
            j["timed_out"] = counts.timed_out;
            j["not_started"] = counts.not_started;
            j["not_run"] = counts.not_run;
            j["from_journal"] = counts.restored;
            j["halted"] = halted;
            j["exit_status"] = status;
            std::cout << j.dump(2) << std::endl;
        } else if (!s.quiet) {
            pfarm::tools::print_report(std::cerr, report);
        }
        print_summary(std::cerr, counts, tasks, halted, commands, s.joblog);
    }
    pfarm::mpi::check(MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    std::optional<pfarm::mpi::environment> env;  // started once the command line holds no bad input

    CLI::App app{
        "pfarm-run: runs shell commands as the tasks of a pfarm farm over MPI ranks, scheduled adaptively.\n"
        "  mpiexec -n N pfarm-run [options] COMMANDS_FILE      one command per line (# comments, blank lines skipped)\n"
        "  mpiexec -n N pfarm-run [options] TEMPLATE ::: a b ::: 1 2\n"
        "                                                 the cross product; {1} {2} the values, {} all of them\n"
        "Each command runs under /bin/sh on a worker rank, with PFARM_TASK (its index from 0), PFARM_RANK and "
        "PFARM_ATTEMPT in its environment. Exit status: 0 when every command succeeded, 1 otherwise, 2 on bad "
        "input. Manual: docs/run.md."};
    app.set_help_flag("-h,--help", "print this help and exit");
    app.prefix_command();  // the first word that is not an option starts the commands file or the template
    settings s;
    pfarm::farm_options options;
    options.schedule.technique = "fss";  // commands' run times vary from one to the next: factoring (docs/run.md)
    auto* output = app.add_option("--output", s.output,
                                  "write each command's stdout and stderr to DIR/task_NNNNNN.out and .err (created; on "
                                  "the file system of the rank that runs it)");
    app.add_option("--joblog", s.joblog, "write the job log to FILE (TSV, one line per command; columns in docs/run.md)");
    app.add_option("--timeout", s.timeout,
                   "kill a command (SIGTERM to its process group, SIGKILL 1 s later) after S seconds; recorded as timed out");
    app.add_option("--retries", s.retries, "run a command that fails or times out again, up to N more times");
    auto* journal_retry = app.add_flag("--retry-failed", s.retry_failed,
                                       "with --journal: run again the commands the journal records as failed or timed out");
    app.add_flag("--halt-on-error", s.halt_on_error,
                 "at the first failure (after its retries), start no more commands; running ones end as they would");
    app.add_flag("--dry-run", s.dry_run, "print the commands that would run (after the journal's), run nothing");
    app.add_flag("--json", s.json, "print the farm report and the counts as JSON on stdout");
    pfarm::tools::add_farm_options(app, options);
    // The tools' --quiet (no progress) becomes pfarm-run's: no output from the commands, and no progress either.
    app.remove_option(app.get_option("--quiet"));
    app.add_flag("--quiet", s.quiet,
                 "discard the commands' stdout and stderr (default: the rank's own, which mpiexec forwards), no "
                 "progress unless --progress is given, no report")
        ->excludes(output);
    journal_retry->needs(app.get_option("--journal"));
    app.footer("Every farm option of the tools works here (--technique and its parameters, --farmer-computes, "
               "--prefetch, --reclaim, --trace, --journal, ...). Default technique: fss.\n\n" +
               pfarm::tools::technique_list());

    return pfarm::tools::run_tool("pfarm-run", app, argc, argv, [&] {
        if (s.quiet && app.count("--progress") == 0) options.output.progress = pfarm::progress_mode::quiet;
        s.timeout_given = app.count("--timeout") > 0;
        const std::vector<std::string> words = app.remaining();
        check_command_line(s, words);
        env.emplace(&argc, &argv);
        return run_commands(s, options, words);
    });
}
