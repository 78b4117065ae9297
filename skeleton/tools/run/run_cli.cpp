// pfarm-run's command line (run_cli.hpp).
#include "run_cli.hpp"

#include "farm_cli.hpp"
#include "options.hpp"
#include "run_commands.hpp"
#include "run_policy.hpp"

#include "pfarm/error.hpp"

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace pfarm::tools::run {

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

void add_run_options(CLI::App& app, settings& s, farm_options& options) {
    app.description(
        "pfarm-run: runs shell commands as the tasks of a pfarm farm over MPI ranks, with GNU parallel's command line.\n"
        "  mpiexec -n N pfarm-run [options] COMMAND ::: a b ::: 1 2     the cross product; {1} {2} the values, {} all\n"
        "  mpiexec -n N pfarm-run [options] COMMAND :::: FILE          each line a value (-a FILE; standard input)\n"
        "  mpiexec -n N pfarm-run [options] COMMANDS_FILE              one command per line (# comments skipped)\n"
        "Commands run under $SHELL (as GNU parallel) on worker ranks, with PFARM_TASK, PFARM_RANK, PFARM_ATTEMPT, "
        "PARALLEL_SEQ and PARALLEL_JOBSLOT set. Output is grouped per command on rank 0's stdout and stderr. Exit "
        "status: the number of failed commands (at most 101), 255 on bad input or an error. Manual: docs/run.md.");
    app.set_help_flag("-h,--help", "print this help and exit");
    app.prefix_command();  // the first word that is not an option starts the command or the commands file
    options.schedule.technique = "fss";  // commands' run times vary from one to the next: factoring (docs/run.md)
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
    app.add_flag("--line-buffer,--lb", s.line_buffer,
                 "print the commands' output line by line as it comes (whole lines; lines of several commands may "
                 "interleave), on rank 0's stdout and stderr");
    app.add_option("--results", s.results, "write each command's output to DIR/1/VALUE/.../{stdout,stderr,seq}");
    app.add_option("-a,--arg-file", s.arg_files, "an input source: each line of FILE is a value (repeatable)")
        ->allow_extra_args(false);
    app.add_option("--colsep", s.colsep, "split each value into columns {1} {2}... at this regular expression");
    app.add_option("-j,--jobs", s.jobs,
                   "commands at once per rank: N, or +N, -N, N% of the CPUs the rank may run on (default 1)");
    app.add_option("--env", s.env, "pass rank 0's value of this environment variable to every command (repeatable)")
        ->allow_extra_args(false);
    add_farm_options(app, options);
    // A failing command is an outcome in the job logs, never a task error: --retries and --halt say what follows it.
    app.remove_option(app.get_option("--on-task-error"));
    app.add_option_function<std::string>(
        "--on-task-error",
        [](const std::string&) {
            throw invalid_argument("--on-task-error", "does not apply to pfarm-run: a failing command is an outcome in "
                                                      "the job log, never a task error; use --retries N (N runs in all, "
                                                      "on the same rank) and --halt");
        },
        "not for pfarm-run: use --retries and --halt (docs/reliability.md \"Task errors\")");
    // The tools' --quiet (no progress) becomes pfarm-run's: no output from the commands, and no progress either.
    app.remove_option(app.get_option("--quiet"));
    app.add_flag("--quiet", s.quiet,
                 "discard the commands' stdout and stderr, no progress unless --progress is given, no report")
        ->excludes(output);
    app.add_flag("--group", s.group, "grouped output, the default (GNU parallel's --group)")->excludes(app.get_option("--ungroup"));
    app.add_flag("--will-cite", s.will_cite, "accepted for GNU parallel's command lines; pfarm-run prints no citation notice");
    app.add_flag("--eta", s.eta, "progress with the estimated time left, a line every 5 s (--progress plain)");
    app.add_flag("--bar", s.bar, "a progress bar on a terminal (--progress auto)");
    journal_retry->needs(app.get_option("--journal"));
    app.footer("Every farm option of the tools works here (--technique and its parameters, --farmer-computes, "
               "--prefetch, --reclaim, --trace, --journal, ...). Default technique: fss.\n\n" +
               technique_list());

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

namespace {

/// --line-buffer prints on rank 0 what the commands write, as it comes: refused beside the options that send the output
/// elsewhere, and with the farmer that has no rank to receive it while the farm runs.
void check_line_buffer(const settings& s, const farm_options& options) {
    if (!s.line_buffer) return;
    const auto refuse = [](const std::string& why) {
        return invalid_argument("--line-buffer", "passes the commands' lines on to rank 0's stdout and stderr as they "
                                                 "come; " + why);
    };
    if (s.ungroup) throw refuse("-u lets them write to the ranks' own instead: give one (GNU parallel refuses both too)");
    if (!s.output.empty()) throw refuse("--output DIR writes them to files instead: give one");
    if (!s.results.empty()) throw refuse("--results DIR writes them to its folder instead: give one");
    if (s.quiet) throw refuse("--quiet discards them: give one");
    if (options.topology.farmer == farmer_mode::decentralised || options.topology.farmer == farmer_mode::stealing)
        throw refuse(std::string("--farmer ") + (options.topology.farmer == farmer_mode::stealing ? "stealing" : "decentralised") +
                     " has no rank that receives them while the farm runs (use flat or hierarchical)");
}

}  // namespace

/// What the command line alone decides, checked by every rank alike before MPI starts (bad input costs no MPI
/// start-up).
void check_command_line(const settings& s, const farm_options& options, const std::vector<std::string>& words) {
    if (!s.timeout.empty()) parse_timeout(s.timeout);
    parse_halt(s.halt);
    if (s.retries < 0) throw invalid_argument("--retries", "is " + std::to_string(s.retries) + "; expected >= 0");
    parse_jobs(s.jobs, 1);
    if (s.jobs != "1" && options.protocol.stragglers > 0)
        throw invalid_argument("--jobs", "is '" + s.jobs + "'; with --stragglers a rank runs one command at a time (a "
                                         "re-executed chunk's dropped copy would carry the records of other commands)");
    if (s.resume && s.resume_failed)
        throw invalid_argument("--resume", "and --resume-failed exclude each other; give one");
    if ((s.resume || s.resume_failed) && (s.joblog.empty() || s.joblog == "-"))
        throw invalid_argument(s.resume ? "--resume" : "--resume-failed", "requires --joblog FILE (the log it resumes from)");
    for (const std::string& e : s.env)
        if (e.empty() || e == "_" || e.find('=') != std::string::npos)
            throw invalid_argument("--env", "is '" + e + "'; expected the name of an environment variable "
                                                   "(GNU parallel's --env _ and ~/.parallel/ignored_vars are not supported)");
    if (!words.empty() && !words.front().empty() && words.front()[0] == '-' && words.front() != "-") {
        if (const char* why = refused_option(words.front()))
            throw invalid_argument(words.front(), std::string("GNU parallel's option is not supported: it ") + why);
        throw invalid_argument(words.front(), "unknown option (pfarm-run --help lists them)");
    }
    if (s.null && !s.delimiter.empty()) throw invalid_argument("--null", "and --delimiter exclude each other; give one");
    check_line_buffer(s, options);
    if (!s.delimiter.empty()) parse_delimiter(s.delimiter);
    if (!s.tagstring.empty()) command_template(s.tagstring, static_cast<std::size_t>(-1));
    if (commands_file(words, s)) return;
    if (words.size() == 1 && s.arg_files.empty() && words[0].find('/') != std::string::npos && ::access(words[0].c_str(), X_OK) != 0)
        throw invalid_argument("COMMANDS_FILE", "cannot open '" + words[0] + "': " + std::strerror(errno) +
                                                           " (expected a commands file, or a command and its input sources)");
    const job_words w = split_words(words, s.arg_files);
    command_template(w.command, static_cast<std::size_t>(-1));  // refuses {= =}; positions are checked with the jobs
}

int parse_jobs(const std::string& text, int cpus) {
    const auto bad = [&](const std::string& why) { return invalid_argument("--jobs", "is '" + text + "'; " + why); };
    const char* expected = "expected N (commands at once per rank, >= 1), or +N, -N or N% of the CPUs the rank may "
                           "run on";
    std::string digits = text;
    const bool plus = !digits.empty() && digits.front() == '+', minus = !digits.empty() && digits.front() == '-';
    const bool percent = !digits.empty() && digits.back() == '%';
    if (plus || minus) digits.erase(0, 1);
    if (percent) digits.pop_back();
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos ||
        (percent && (plus || minus)))
        throw bad(expected);
    const long n = std::stol(digits);
    if (!plus && !minus && !percent) {
        if (n == 0) throw bad("GNU parallel's 0 (as many as possible) has no per-rank meaning here; give a number >= 1");
        return static_cast<int>(n);
    }
    const long c = std::max(cpus, 1);
    const long jobs = plus ? c + n : minus ? c - n : c * n / 100;
    return static_cast<int>(std::clamp<long>(jobs, 1, 1L << 20));
}

int rank_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(CPU_COUNT(&set), 1);
    const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? static_cast<int>(n) : 1;
}

/// The jobs of the command line (rank 0): their commands and arguments.
job_list read_jobs(const settings& s, const std::vector<std::string>& words) {
    if (commands_file(words, s)) {
        job_list jobs;
        jobs.commands = read_commands(words.front(), "COMMANDS_FILE");
        for (const auto& c : jobs.commands) jobs.args.push_back({c});
        return jobs;
    }
    const job_words w = split_words(words, s.arg_files);
    read_settings how;
    how.colsep = s.colsep;
    how.skip_empty = s.no_run_if_empty;
    if (s.null) how.delimiter = std::string(1, '\0');
    else if (!s.delimiter.empty()) how.delimiter = parse_delimiter(s.delimiter);
    return make_jobs(w.command, read_sources(w, how));
}

}  // namespace pfarm::tools::run
