// pfarm-run: the tool that farms shell commands over MPI ranks with pfarm's scheduling, speaking GNU parallel's
// command line (docs/run.md is its manual). Its one job is the run on the ranks: the command line, the ranks'
// agreement before the farm, and the farm of the commands: each task runs one command on a worker rank
// (run_process.hpp) under the --halt, --timeout and --retries policy (run_policy.hpp, run_halt.hpp), and sends its
// record and output to rank 0 (run_output.hpp), which prints the output, writes the job logs (run_joblog.hpp) and
// the journal (run_records.hpp), and the summary (run_summary.hpp). The commands come from GNU parallel's input
// sources and replacement strings (run_inputs.hpp), or a commands file (run_commands.hpp).
#include "farm_cli.hpp"
#include "options.hpp"
#include "run_commands.hpp"
#include "run_halt.hpp"
#include "run_inputs.hpp"
#include "run_joblog.hpp"
#include "run_output.hpp"
#include "run_policy.hpp"
#include "run_process.hpp"
#include "run_records.hpp"
#include "run_summary.hpp"

#include "pfarm/error.hpp"
#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <span>
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
    bool ungroup = false;          ///< -u: the commands write to the rank's own stdout and stderr
    std::string joblog, joblog_full;
    std::string timeout;           ///< --timeout S or N%
    int retries = 0;               ///< --retries N: runs in all (0 and 1: one)
    bool retry_failed = false;     ///< --retry-failed (with --journal)
    bool resume = false, resume_failed = false;
    std::string halt = "never";    ///< --halt
    bool halt_on_error = false;    ///< --halt-on-error: --halt soon,fail=1
    bool dry_run = false, json = false;
    bool keep_order = false, tag = false;
    std::string results;           ///< --results DIR
    std::vector<std::string> arg_files;  ///< -a FILE
    std::optional<std::string> colsep;
    std::string delimiter;         ///< -d: the values' delimiter in files and standard input
    bool null = false;             ///< -0: NUL-delimited
    bool no_run_if_empty = false;  ///< -r: skip values of nothing but blanks
    std::string tagstring;         ///< --tagstring STR: lines tagged with STR expanded (arguments unquoted)
    int jobs = 1;                  ///< --jobs N per rank
    std::vector<std::string> env;  ///< --env NAME
};

/// GNU parallel options pfarm-run refuses, and why.
const char* refused_option(const std::string& word) {
    static const std::pair<const char*, const char*> refused[] = {
        {"--pipe", "splits standard input into blocks for the commands"}, {"--pipepart", "splits a file into blocks"},
        {"-S", "runs commands on remote hosts over ssh; pfarm-run runs them on the MPI ranks"},
        {"--sshlogin", "runs commands over ssh; pfarm-run runs them on the MPI ranks"},
        {"--sshloginfile", "runs commands over ssh; pfarm-run runs them on the MPI ranks"},
        {"--slf", "runs commands over ssh"}, {"--transferfile", "copies files over ssh"}, {"--return", "copies files over ssh"},
        {"--trc", "copies files over ssh"}, {"--onall", "runs on every ssh host"}, {"--nonall", "runs on every ssh host"},
        {"-X", "puts several arguments in one command"}, {"-m", "puts several arguments in one command"},
        {"-N", "puts several arguments in one command"}, {"--max-args", "puts several arguments in one command"},
        {"-n", "puts several arguments in one command"}, {"-L", "puts several lines in one command"},
        {"--xargs", "puts several arguments in one command"}, {"--semaphore", "is a counting semaphore"},
        {"--tmux", "runs commands in tmux"}, {"--fifo", "gives the command a fifo"}, {"--cat", "gives the command a file"},
        {"--files", "prints output file names"}, {"--shuf", "shuffles the jobs"}, {"--delay", "delays starts"},
        {"--load", "holds back starts on a busy host"}, {"--memfree", "holds back starts on a host short of memory"},
        {"--noswap", "holds back starts on a swapping host"}, {"--plus", "adds replacement strings"},
        {"--line-buffer", "prints output line by line as it comes; pfarm-run prints each command's output whole "
                          "when it ends (grouped), or passes it through with -u"},
        {"--lb", "prints output line by line as it comes; pfarm-run prints it whole per command, or -u"},
        {"--header", "takes a header line for the columns"}, {"--trim", "trims arguments"}, {"-I", "renames {}"},
        {"--sqlmaster", "uses a database"}, {"--sqlworker", "uses a database"}, {"--limit", "runs a limit command"},
        {"--nice", "renices the commands"}, {"--ctag", "tags lines in colour"}, {"--tty", "gives commands the terminal"},
        {"--interactive", "asks before each command"}, {"-p", "asks before each command"}, {"--compress", "compresses output"},
        {"--group-by", "groups input lines"}};
    const std::string name = word.substr(0, word.find('='));
    for (const auto& [option, why] : refused)
        if (name == option) return why;
    return nullptr;
}

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

/// Rank 0's strings reach every rank (NUL-separated: a command holds none).
void broadcast_strings(std::vector<std::string>& strings, int rank, MPI_Comm comm) {
    std::string all;
    if (rank == 0)
        for (const auto& c : strings) all.append(c).push_back('\0');
    broadcast_string(all, 0, comm);
    if (rank == 0) return;
    strings.clear();
    for (std::size_t at = 0; at < all.size();) {
        const std::size_t end = all.find('\0', at);
        strings.emplace_back(all, at, end - at);
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

/// The shell commands run under, as GNU parallel picks it: $PARALLEL_SHELL, else $SHELL, else /bin/sh.
std::string command_shell() {
    for (const char* name : {"PARALLEL_SHELL", "SHELL"})
        if (const char* v = std::getenv(name); v && *v) return v;
    return "/bin/sh";
}

/// Whether the words are an old-style commands file: one word naming a regular file that is not executable
/// (GNU parallel would try to run it as the command and fail), with no input source.
bool commands_file(const std::vector<std::string>& words, const settings& s) {
    if (words.size() != 1 || !s.arg_files.empty()) return false;
    if (words[0] == "-") return true;
    struct stat st{};
    return ::stat(words[0].c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) == 0;
}

/// What the command line alone decides, checked by every rank alike before MPI starts (bad input costs no MPI
/// start-up).
void check_command_line(const settings& s, const std::vector<std::string>& words) {
    if (!s.timeout.empty()) run::parse_timeout(s.timeout);
    run::parse_halt(s.halt);
    if (s.retries < 0) throw pfarm::invalid_argument("--retries", "is " + std::to_string(s.retries) + "; expected >= 0");
    if (s.jobs != 1)
        throw pfarm::invalid_argument("--jobs", "is " + std::to_string(s.jobs) + "; pfarm-run runs one command at a time "
                                      "per rank: start N ranks per node for N commands at once (mpiexec --map-by ppr:N:node)");
    if (s.resume && s.resume_failed)
        throw pfarm::invalid_argument("--resume", "and --resume-failed exclude each other; give one");
    if ((s.resume || s.resume_failed) && (s.joblog.empty() || s.joblog == "-"))
        throw pfarm::invalid_argument(s.resume ? "--resume" : "--resume-failed", "requires --joblog FILE (the log it resumes from)");
    for (const std::string& e : s.env)
        if (e.empty() || e == "_" || e.find('=') != std::string::npos)
            throw pfarm::invalid_argument("--env", "is '" + e + "'; expected the name of an environment variable "
                                                   "(GNU parallel's --env _ and ~/.parallel/ignored_vars are not supported)");
    if (!words.empty() && !words.front().empty() && words.front()[0] == '-' && words.front() != "-") {
        if (const char* why = refused_option(words.front()))
            throw pfarm::invalid_argument(words.front(), std::string("GNU parallel's option is not supported: it ") + why);
        throw pfarm::invalid_argument(words.front(), "unknown option (pfarm-run --help lists them)");
    }
    if (s.null && !s.delimiter.empty()) throw pfarm::invalid_argument("--null", "and --delimiter exclude each other; give one");
    if (!s.delimiter.empty()) run::parse_delimiter(s.delimiter);
    if (!s.tagstring.empty()) run::command_template(s.tagstring, static_cast<std::size_t>(-1));
    if (commands_file(words, s)) return;
    if (words.size() == 1 && s.arg_files.empty() && words[0].find('/') != std::string::npos && ::access(words[0].c_str(), X_OK) != 0)
        throw pfarm::invalid_argument("COMMANDS_FILE", "cannot open '" + words[0] + "': " + std::strerror(errno) +
                                                           " (expected a commands file, or a command and its input sources)");
    const run::job_words w = run::split_words(words, s.arg_files);
    run::command_template(w.command, static_cast<std::size_t>(-1));  // refuses {= =}; positions are checked with the jobs
}

/// The jobs of the command line (rank 0): their commands and arguments.
run::job_list read_jobs(const settings& s, const std::vector<std::string>& words) {
    if (commands_file(words, s)) {
        run::job_list jobs;
        jobs.commands = run::read_commands(words.front(), "COMMANDS_FILE");
        for (const auto& c : jobs.commands) jobs.args.push_back({c});
        return jobs;
    }
    const run::job_words w = run::split_words(words, s.arg_files);
    run::read_settings how;
    how.colsep = s.colsep;
    how.skip_empty = s.no_run_if_empty;
    if (s.null) how.delimiter = std::string(1, '\0');
    else if (!s.delimiter.empty()) how.delimiter = run::parse_delimiter(s.delimiter);
    return run::make_jobs(w.command, run::read_sources(w, how));
}

int run_commands(const settings& s, const pfarm::farm_options& options, const std::vector<std::string>& words) {
    int rank = 0;
    pfarm::mpi::check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    const std::string journal = options.journal;
    const bool journaled = !journal.empty();
    const run::halt_policy halt_policy =
        s.halt_on_error ? run::parse_halt("soon,fail=1") : run::parse_halt(s.halt);
    const run::timeout_spec timeout = s.timeout.empty() ? run::timeout_spec{} : run::parse_timeout(s.timeout);

    // Rank 0 reads the sources and makes the jobs; every rank gets the commands (the arguments stay on rank 0).
    run::job_list jobs;
    std::vector<std::string> env_values;
    checked_together(MPI_COMM_WORLD, [&] {
        if (rank != 0) return;
        jobs = read_jobs(s, words);
        for (const std::string& name : s.env)
            if (const char* v = std::getenv(name.c_str())) env_values.push_back(name + "=" + v);
    });
    std::vector<std::string>& commands = jobs.commands;
    broadcast_strings(commands, rank, MPI_COMM_WORLD);
    broadcast_strings(env_values, rank, MPI_COMM_WORLD);
    const auto tasks = static_cast<task_count>(commands.size());
    int ranks = 1;
    pfarm::mpi::check(MPI_Comm_size(MPI_COMM_WORLD, &ranks), "MPI_Comm_size");
    // {%} and PARALLEL_JOBSLOT: the rank's slot, 1 to the number of ranks that run commands on the flat farmer.
    const long slot_base = options.farmer_computes || ranks == 1 ? 1 : 0;
    const auto shown = [&](task_count i, int on_rank) {
        return run::fill_slot(commands[static_cast<std::size_t>(i)], on_rank + slot_base);
    };

    // What is done already: the journal's records (keyed by the commands), or --resume's job log.
    run::resume_plan plan;
    checked_together(MPI_COMM_WORLD, [&] {
        if (rank != 0) return;
        if (journaled) plan = run::prepare_journal(journal, commands, s.retry_failed, !s.dry_run, "--journal");
        if (plan.dropped_other > 0 && !s.dry_run)
            std::cerr << "pfarm-run: --journal: dropped " << plan.dropped_other << " record(s) of commands that are not "
                      << "among these (changed or removed from the sweep)\n";
        if (s.resume || s.resume_failed) {
            std::multiset<std::string> logged =
                run::joblog_commands(s.joblog, s.resume_failed, s.resume ? "--resume" : "--resume-failed");
            for (task_count i = 0; i < tasks; ++i) {
                const auto it = logged.find(commands[static_cast<std::size_t>(i)]);
                if (it == logged.end() || plan.done.count(i)) continue;
                logged.erase(it);
                task_result r;
                r.status = static_cast<std::uint8_t>(outcome::ok);
                plan.done[i] = r;  // in the log: not run again, and not logged again
            }
        }
    });
    std::vector<task_count> todo;  // the tasks of this run's farm, by their index among the commands
    if (rank == 0)
        for (task_count i = 0; i < tasks; ++i)
            if (!plan.done.count(i)) todo.push_back(i);
    unsigned long long todo_count = todo.size();
    pfarm::mpi::check(MPI_Bcast(&todo_count, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
    todo.resize(static_cast<std::size_t>(todo_count));
    pfarm::mpi::check(MPI_Bcast(todo.data(), static_cast<int>(todo.size()), MPI_INT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");

    if (s.dry_run) {  // the commands a run would start, in task order; nothing runs
        if (rank == 0) {
            for (task_count i : todo) {  // {%} is known once a rank runs the command
                std::string c = commands[static_cast<std::size_t>(i)];
                for (std::size_t at = c.find(run::slot_marker); at != std::string::npos; at = c.find(run::slot_marker, at))
                    c.replace(at, run::slot_marker.size(), "{%}");
                std::cout << c << "\n";
            }
            std::cout.flush();
        }
        return 0;
    }

    const bool capture = s.output.empty() && !s.quiet && !s.ungroup;
    if (capture && options.farmer == pfarm::farmer_mode::decentralised)  // every rank alike: no rank waits
        throw pfarm::invalid_argument("--farmer", "decentralised carries fixed-size records only, not the commands' "
                                                  "output: add -u, --output DIR or --quiet (or use flat)");
    if (!s.output.empty()) checked_together(MPI_COMM_WORLD, [&] { check_output(s.output, rank); });
    run::job_log log, full_log;
    run::output_printer printer({s.keep_order, s.tag, s.results}, jobs.args, rank == 0 ? commands.size() : 0);
    std::optional<run::rank_records> journal_out;
    checked_together(MPI_COMM_WORLD, [&] {
        if (rank != 0) return;
        log.open(s.joblog, false, s.resume || s.resume_failed, "--joblog");
        full_log.open(s.joblog_full, true, false, "--joblog-full");
        printer.open();
        if (journaled) journal_out.emplace(journal, "--journal", true);
    });
    std::optional<run::rank_records> records;
    if (journaled)
        checked_together(MPI_COMM_WORLD, [&] { records.emplace(run::rank_records_path(journal, rank), "--journal"); });

    std::uint64_t run_id = rank == 0 ? new_run_id() : 0;
    pfarm::mpi::check(MPI_Bcast(&run_id, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
    char host[sizeof(task_result::host)] = {};
    ::gethostname(host, sizeof host - 1);
    const std::vector<std::uint64_t> keys = run::record_keys(commands);

    // A worker's task: run the command (up to --retries runs), record it, halt the others when --halt says so.
    run::process_runner runner;
    run::halt_channel halt(MPI_COMM_WORLD);
    std::vector<std::string> environment = run::command_environment();
    for (const std::string& e : env_values) {
        const std::string prefix = e.substr(0, e.find('=') + 1);
        std::erase_if(environment, [&](const std::string& v) { return v.rfind(prefix, 0) == 0; });
        environment.push_back(e);
    }
    const std::string shell = command_shell();
    std::vector<double> runtimes;  // of this rank's commands that succeeded (--timeout N%)
    task_count local_failed = 0, local_succeeded = 0;
    auto command = [&](task_count k) {
        const task_count i = todo[static_cast<std::size_t>(k)];
        task_result r;
        r.command_hash = keys[static_cast<std::size_t>(i)];
        r.run = run_id;
        r.rank = rank;
        std::memcpy(r.host, host, sizeof r.host);
        if (halt.halted()) {
            r.status = static_cast<std::uint8_t>(outcome::not_run);
            r.start = r.end = run::unix_time();
            return run::pack(r, "", "");
        }
        run::command_spec spec;
        spec.command = run::fill_slot(commands[static_cast<std::size_t>(i)], rank + slot_base);
        spec.shell = shell;
        spec.timeout = timeout.limit(runtimes);
        spec.capture = capture;
        if (halt_policy.when == run::halt_policy::now) spec.stop = [&] { return halt.halted(); };
        if (!s.output.empty()) {
            spec.stdout_path = task_file(s.output, i, tasks, ".out");
            spec.stderr_path = task_file(s.output, i, tasks, ".err");
        } else if (s.quiet) {
            spec.stdout_path = spec.stderr_path = "/dev/null";
        }
        run::command_status st;
        const int runs = std::max(s.retries, 1);
        for (int attempt = 1; attempt <= runs; ++attempt) {
            spec.environment = environment;
            spec.environment.push_back("PFARM_TASK=" + std::to_string(i));
            spec.environment.push_back("PFARM_RANK=" + std::to_string(rank));
            spec.environment.push_back("PFARM_ATTEMPT=" + std::to_string(attempt));
            spec.environment.push_back("PARALLEL_SEQ=" + std::to_string(i + 1));
            spec.environment.push_back("PARALLEL_JOBSLOT=" + std::to_string(rank + slot_base));
            st = runner.run(spec);
            if (attempt == 1) r.start = st.start;
            r.end = st.end;
            r.attempts = attempt;
            r.exit_code = st.exit_code;
            r.signal = st.signal;
            r.status = static_cast<std::uint8_t>(st.what);
            if (!st.error.empty())
                std::cerr << "pfarm-run: task " << i << " (rank " << rank << "): " << st.error << "\n";
            if (st.what == outcome::ok || st.what == outcome::killed || halt.halted()) break;
        }
        if (r.what() == outcome::ok) runtimes.push_back(st.end - st.start), ++local_succeeded;
        else if (r.what() != outcome::killed) ++local_failed;
        if (records) records->append(i, r);  // before the result leaves this rank: a kill now loses nothing
        // This rank's own count decides at once; rank 0 decides on the counts of every rank as records arrive.
        if (halt_policy.reached(halt_policy.on_done ? local_succeeded + local_failed
                                : halt_policy.on_success ? local_succeeded : local_failed, tasks))
            halt.raise();
        return run::pack(r, st.out, st.err);
    };

    const std::string& tag_template = s.tagstring;
    run::tally counts;
    task_count failed_here = 0, succeeded_here = 0;
    int halt_status = 1;
    const auto logged = [&](task_count i, const task_result& r, std::size_t received, bool restored) {
        counts.add(i, r, restored);
        if (restored && (s.resume || s.resume_failed)) return;  // already in the log
        const outcome o = r.what();
        if (o != outcome::not_run && o != outcome::killed) log.add(i, r, received, restored, shown(i, r.rank));
        full_log.add(i, r, received, restored, shown(i, r.rank));
    };
    auto arrived = [&](task_count k, run::job_output j) {  // rank 0, once per command run
        const task_count i = todo[static_cast<std::size_t>(k)];
        const outcome o = j.record.what();
        if (!tag_template.empty() && s.results.empty()) {  // --tagstring: the arguments unquoted, {%} the rank's slot
            std::string tag = tag_template;
            if (tag.find('{') != std::string::npos)
                tag = run::fill_slot(run::command_template(tag_template, jobs.args[static_cast<std::size_t>(i)].size())
                                         .expand(jobs.args[static_cast<std::size_t>(i)], static_cast<std::size_t>(i) + 1, false),
                                     j.record.rank + slot_base);
            j.out = run::tag_lines(j.out, tag + '\t');
            j.err = run::tag_lines(j.err, tag + '\t');
        }
        if (o == outcome::not_run || o == outcome::killed) printer.skip(static_cast<std::size_t>(i));
        else printer.add(static_cast<std::size_t>(i), j.out, j.err);
        logged(i, j.record, j.out.size(), false);
        if (journal_out) journal_out->append(i, j.record);
        if (o == outcome::ok) ++succeeded_here;
        else if (o != outcome::not_run && o != outcome::killed) {
            ++failed_here;
            halt_status = j.record.exit_code > 0 ? j.record.exit_code : 1;
        }
        if (halt_policy.reached(halt_policy.on_done ? succeeded_here + failed_here
                                : halt_policy.on_success ? succeeded_here : failed_here, tasks))
            halt.raise();
    };
    if (rank == 0)
        for (const auto& [i, r] : plan.done) {
            printer.skip(static_cast<std::size_t>(i));
            logged(i, r, 0, true);
        }

    pfarm::farm_options o = options;
    o.journal.clear();  // pfarm-run keeps its own journal, keyed by the commands
    pfarm::farm_report report;
    try {
        if (todo.empty()) {
        } else if (o.farmer == pfarm::farmer_mode::decentralised) {
            // Fixed-size records into rank 0's array (no output travels: checked above); logged when the farm ends.
            std::vector<task_result> out(rank == 0 ? todo.size() : 0);
            report = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, static_cast<task_count>(todo.size())},
                                 std::span<task_result>(out), [&](task_count k, task_result& r) { r = run::unpack(command(k)).record; }, o);
            for (std::size_t k = 0; k < out.size(); ++k) arrived(static_cast<task_count>(k), run::job_output{out[k], "", ""});
        } else {
            report = pfarm::farm_stream(MPI_COMM_WORLD, pfarm::index_range{0, static_cast<task_count>(todo.size())},
                                        command, [&](task_count k, std::span<const char> bytes) { arrived(k, run::unpack(bytes)); }, o);
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
        status = run::gnu_exit_status(counts.failures_count(), tasks, halted, halt_policy, halt_status);
        if (s.json) {
            nlohmann::json j = todo.empty() ? nlohmann::json::object() : pfarm::tools::report_json(report);
            j["commands"] = tasks;
            j["succeeded"] = counts.ok;
            j["failed"] = counts.failed;
            j["timed_out"] = counts.timed_out;
            j["not_started"] = counts.not_started;
            j["not_run"] = counts.not_run;
            j["killed"] = counts.killed;
            j["from_journal"] = counts.restored;
            j["halted"] = halted;
            j["exit_status"] = status;
            std::cout << j.dump(2) << std::endl;
        } else if (!s.quiet && !todo.empty()) {
            pfarm::tools::print_report(std::cerr, report);
        }
        run::print_summary(std::cerr, counts, tasks, halted, commands, s.joblog);
    }
    pfarm::mpi::check(MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    std::optional<pfarm::mpi::environment> env;  // started once the command line holds no bad input

    CLI::App app{
        "pfarm-run: runs shell commands as the tasks of a pfarm farm over MPI ranks, with GNU parallel's command line.\n"
        "  mpiexec -n N pfarm-run [options] COMMAND ::: a b ::: 1 2     the cross product; {1} {2} the values, {} all\n"
        "  mpiexec -n N pfarm-run [options] COMMAND :::: FILE          each line a value (-a FILE; standard input)\n"
        "  mpiexec -n N pfarm-run [options] COMMANDS_FILE              one command per line (# comments skipped)\n"
        "Commands run under $SHELL (as GNU parallel) on worker ranks, with PFARM_TASK, PFARM_RANK, PFARM_ATTEMPT, "
        "PARALLEL_SEQ and PARALLEL_JOBSLOT set. Output is grouped per command on rank 0's stdout and stderr. Exit "
        "status: the number of failed commands (at most 101), 255 on bad input or an error. Manual: docs/run.md."};
    app.set_help_flag("-h,--help", "print this help and exit");
    app.prefix_command();  // the first word that is not an option starts the command or the commands file
    settings s;
    pfarm::farm_options options;
    options.technique = "fss";  // commands' run times vary from one to the next: factoring (docs/run.md)
    auto* output = app.add_option("--output", s.output,
                                  "write each command's stdout and stderr to DIR/task_NNNNNN.out and .err (created; on "
                                  "the file system of the rank that runs it)");
    app.add_option("--joblog", s.joblog, "write GNU parallel's job log to FILE ('-': standard output)");
    app.add_option("--joblog-full", s.joblog_full,
                   "write pfarm-run's job log to FILE (TSV: task, rank, host, start, end, runtime, attempts, exit, "
                   "signal, status, source, command)");
    app.add_flag("--resume", s.resume, "skip the commands the --joblog FILE holds, append to it");
    app.add_flag("--resume-failed", s.resume_failed, "skip the commands the --joblog FILE holds as succeeded, append to it");
    app.add_option("--timeout", s.timeout,
                   "kill a command (SIGTERM to its process group, SIGKILL 1 s later) after S seconds, or N% of the "
                   "median run time of the rank's commands that succeeded");
    app.add_option("--retries", s.retries, "run a command that fails or times out up to N times in all");
    auto* journal_retry = app.add_flag("--retry-failed", s.retry_failed,
                                       "with --journal: run again the commands the journal records as failed or timed out");
    app.add_option("--halt", s.halt, "never (default), or now|soon,fail|success|done=N|N%: stop at failures, successes or ends");
    app.add_flag("--halt-on-error", s.halt_on_error, "--halt soon,fail=1");
    app.add_flag("--dry-run", s.dry_run, "print the commands that would run (after the journal's), run nothing");
    app.add_flag("--json", s.json, "print the farm report and the counts as JSON on stdout");
    app.add_flag("-k,--keep-order", s.keep_order, "print the commands' output in their order");
    app.add_flag("--tag", s.tag, "start each output line with the command's arguments and a tab");
    app.add_option("--tagstring", s.tagstring, "start each output line with STR (replacement strings expanded) and a tab");
    app.add_option("-d,--delimiter", s.delimiter, "values in files and standard input end with DELIM (C escapes: \\n, \\0, \\t)");
    app.add_flag("-0,--null", s.null, "values in files and standard input end with a NUL byte (find -print0)");
    app.add_flag("-r,--no-run-if-empty", s.no_run_if_empty, "skip values of nothing but blanks");
    app.add_flag("-u,--ungroup", s.ungroup, "let the commands write to the rank's stdout and stderr directly");
    app.add_option("--results", s.results, "write each command's output to DIR/1/VALUE/.../{stdout,stderr,seq}");
    app.add_option("-a,--arg-file", s.arg_files, "an input source: each line of FILE is a value (repeatable)")
        ->allow_extra_args(false);
    app.add_option("--colsep", s.colsep, "split each value into columns {1} {2}... at this regular expression");
    app.add_option("-j,--jobs", s.jobs, "commands at once per rank (1; start more ranks for more)");
    app.add_option("--env", s.env, "pass rank 0's value of this environment variable to every command (repeatable)")
        ->allow_extra_args(false);
    pfarm::tools::add_farm_options(app, options);
    // The tools' --quiet (no progress) becomes pfarm-run's: no output from the commands, and no progress either.
    app.remove_option(app.get_option("--quiet"));
    app.add_flag("--quiet", s.quiet,
                 "discard the commands' stdout and stderr, no progress unless --progress is given, no report")
        ->excludes(output);
    bool eta = false, bar = false, will_cite = false;
    bool group = false;
    app.add_flag("--group", group, "grouped output, the default (GNU parallel's --group)")->excludes(app.get_option("--ungroup"));
    app.add_flag("--will-cite", will_cite, "accepted for GNU parallel's command lines; pfarm-run prints no citation notice");
    app.add_flag("--eta", eta, "progress with the estimated time left, a line every 5 s (--progress plain)");
    app.add_flag("--bar", bar, "a progress bar on a terminal (--progress auto)");
    journal_retry->needs(app.get_option("--journal"));
    app.footer("Every farm option of the tools works here (--technique and its parameters, --farmer-computes, "
               "--prefetch, --reclaim, --trace, --journal, ...). Default technique: fss.\n\n" +
               pfarm::tools::technique_list());

    bool ran = false;
    const int code = pfarm::tools::run_tool("pfarm-run", app, argc, argv, [&] {
        if (s.quiet && app.count("--progress") == 0) options.progress = pfarm::progress_mode::quiet;
        if (eta) options.progress = pfarm::progress_mode::plain;
        if (bar) options.progress = pfarm::progress_mode::automatic;
        const std::vector<std::string> words = app.remaining();
        check_command_line(s, words);
        env.emplace(&argc, &argv);
        const int status = run_commands(s, options, words);
        ran = true;
        return status;
    });
    return ran || code == 0 ? code : 255;  // GNU parallel's status for bad input and errors
}
