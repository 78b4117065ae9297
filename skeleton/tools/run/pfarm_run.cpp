// pfarm-run: the tool that farms shell commands over MPI ranks with pfarm's scheduling, speaking GNU parallel's
// command line (docs/run.md is its manual; the command line itself is run_cli.hpp). Its one job is the run on the
// ranks: the ranks' agreement before the farm, and the farm of the commands: each task starts one command on a worker
// rank, up to --jobs at once (run_slots.hpp, run_process.hpp), under the --halt, --timeout and --retries policy
// (run_policy.hpp, run_halt.hpp), and sends the records and output of the commands that ended to rank 0
// (run_output.hpp; with --line-buffer their lines as they come, run_lines.hpp), which prints the output, writes the
// job logs (run_joblog.hpp) and the journal (run_records.hpp), and the summary (run_summary.hpp). The commands come
// from GNU parallel's input sources and replacement strings (run_inputs.hpp), or a commands file (run_commands.hpp).
#include "farm_cli.hpp"
#include "options.hpp"
#include "run_cli.hpp"
#include "run_halt.hpp"
#include "run_inputs.hpp"
#include "run_joblog.hpp"
#include "run_lines.hpp"
#include "run_output.hpp"
#include "run_policy.hpp"
#include "run_process.hpp"
#include "run_records.hpp"
#include "run_slots.hpp"
#include "run_summary.hpp"

#include "pfarm/error.hpp"
#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace run = pfarm::tools::run;
using pfarm::task_count;
using run::outcome;
using run::task_result;

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

/// Whether rank `r` was lost during the farm (on_worker_loss continue: `lost` is the report's lost_ranks, the same on
/// every living rank). Nothing after such a farm may wait for it: no collective, no message from it.
bool is_lost(const std::vector<int>& lost, int r) { return std::find(lost.begin(), lost.end(), r) != lost.end(); }

/// After the farm, every living rank's `bytes` (packed job items: the commands that were still running when the farm
/// ended) reach rank 0, which hands each rank's to `arrive` in rank order. Point to point: the ranks in `lost` (dead)
/// take no part.
template <class Arrive>
void send_rest(const std::vector<char>& bytes, int rank, MPI_Comm comm, const std::vector<int>& lost, Arrive&& arrive) {
    int ranks = 1;
    pfarm::mpi::check(MPI_Comm_size(comm, &ranks), "MPI_Comm_size");
    constexpr std::size_t piece = std::size_t{1} << 30;
    if (rank != 0) {
        const unsigned long long size = bytes.size();
        pfarm::mpi::check(MPI_Send(&size, 1, MPI_UNSIGNED_LONG_LONG, 0, 0, comm), "MPI_Send");
        for (std::size_t at = 0; at < bytes.size(); at += piece)
            pfarm::mpi::check(MPI_Send(bytes.data() + at, static_cast<int>(std::min(piece, bytes.size() - at)), MPI_CHAR,
                                       0, 0, comm), "MPI_Send");
        return;
    }
    arrive(std::span<const char>(bytes));
    for (int r = 1; r < ranks; ++r) {
        if (is_lost(lost, r)) continue;
        unsigned long long size = 0;
        pfarm::mpi::check(MPI_Recv(&size, 1, MPI_UNSIGNED_LONG_LONG, r, 0, comm, MPI_STATUS_IGNORE), "MPI_Recv");
        std::vector<char> theirs(static_cast<std::size_t>(size));
        for (std::size_t at = 0; at < theirs.size(); at += piece)
            pfarm::mpi::check(MPI_Recv(theirs.data() + at, static_cast<int>(std::min(piece, theirs.size() - at)), MPI_CHAR,
                                       r, 0, comm, MPI_STATUS_IGNORE), "MPI_Recv");
        arrive(std::span<const char>(theirs));
    }
}

/// Rank 0's exit status on every living rank (a broadcast when no rank was lost, else point to point).
void share_status(int& status, int rank, const std::vector<int>& lost) {
    if (lost.empty()) {
        pfarm::mpi::check(MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
        return;
    }
    constexpr int tag = 17;
    if (rank != 0) {
        pfarm::mpi::check(MPI_Recv(&status, 1, MPI_INT, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        return;
    }
    int ranks = 1;
    pfarm::mpi::check(MPI_Comm_size(MPI_COMM_WORLD, &ranks), "MPI_Comm_size");
    for (int r = 1; r < ranks; ++r)
        if (!is_lost(lost, r)) pfarm::mpi::check(MPI_Send(&status, 1, MPI_INT, r, tag, MPI_COMM_WORLD), "MPI_Send");
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

int run_commands(const run::settings& s, const pfarm::farm_options& options, const std::vector<std::string>& words) {
    int rank = 0;
    pfarm::mpi::check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    const std::string journal = options.resume.journal;
    const bool journaled = !journal.empty();
    const run::halt_policy halt_policy =
        s.halt_on_error ? run::parse_halt("soon,fail=1") : run::parse_halt(s.halt);
    const run::timeout_spec timeout = s.timeout.empty() ? run::timeout_spec{} : run::parse_timeout(s.timeout);

    // Rank 0 reads the sources and makes the jobs; every rank gets the commands (the arguments stay on rank 0).
    run::job_list jobs;
    std::vector<std::string> env_values;
    checked_together(MPI_COMM_WORLD, [&] {
        if (rank != 0) return;
        jobs = run::read_jobs(s, words);
        for (const std::string& name : s.env)
            if (const char* v = std::getenv(name.c_str())) env_values.push_back(name + "=" + v);
    });
    std::vector<std::string>& commands = jobs.commands;
    broadcast_strings(commands, rank, MPI_COMM_WORLD);
    broadcast_strings(env_values, rank, MPI_COMM_WORLD);
    const auto tasks = static_cast<task_count>(commands.size());
    int ranks = 1;
    pfarm::mpi::check(MPI_Comm_size(MPI_COMM_WORLD, &ranks), "MPI_Comm_size");
    // --jobs: the commands this rank runs at once; every rank numbers its slots by the largest count.
    const int per_rank = run::parse_jobs(s.jobs, run::rank_cpus());
    int jobs_max = per_rank;
    pfarm::mpi::check(MPI_Allreduce(&per_rank, &jobs_max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    // {%} and PARALLEL_JOBSLOT: the slot, 1 to (ranks that run commands) x --jobs; rank 0 runs commands with
    // --farmer-computes, on one rank, and always under work stealing (every rank owns a range).
    const long slot_base =
        options.topology.farmer_computes || ranks == 1 || options.topology.farmer == pfarm::farmer_mode::stealing ? 1 : 0;
    const auto slot_of = [&](int on_rank, int slot) { return (on_rank + slot_base - 1) * jobs_max + slot + 1; };
    const auto shown = [&](task_count i, long slot) { return run::fill_slot(commands[static_cast<std::size_t>(i)], slot); };

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

    const bool lines = s.line_buffer;  // the commands' lines reach rank 0 as they come (checked beside the rest)
    const bool capture = s.output.empty() && !s.quiet && !s.ungroup && !lines;
    // The farms without a farmer put fixed-size records into rank 0's memory: no rank receives anything else.
    const bool farmerless = options.topology.farmer == pfarm::farmer_mode::decentralised ||
                            options.topology.farmer == pfarm::farmer_mode::stealing;
    if (capture && farmerless)  // every rank alike: no rank waits
        throw pfarm::invalid_argument("--farmer", std::string(options.topology.farmer == pfarm::farmer_mode::stealing
                                                                  ? "stealing"
                                                                  : "decentralised") +
                                                      " carries fixed-size records only, not the commands' output: add "
                                                      "-u, --output DIR or --quiet (or use flat)");
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
    std::optional<run::line_channel> line_out;
    if (lines) line_out.emplace(MPI_COMM_WORLD);
    std::optional<run::rank_records> records;
    if (journaled)
        checked_together(MPI_COMM_WORLD, [&] { records.emplace(run::rank_records_path(journal, rank), "--journal"); });

    std::uint64_t run_id = rank == 0 ? new_run_id() : 0;
    pfarm::mpi::check(MPI_Bcast(&run_id, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
    char host[sizeof(task_result::host)] = {};
    ::gethostname(host, sizeof host - 1);
    const std::vector<std::uint64_t> keys = run::record_keys(commands);

    // A worker's task: start its command in a free slot (up to --jobs at once, each with up to --retries runs), and
    // return the records and output of the commands that ended meanwhile: with --jobs 1, its own; with more, those
    // of the rank's commands that ended while it waited for a slot (after the farm, the rank sends those still
    // running then). Each is recorded the moment it ends and halts the others when --halt says so.
    run::halt_channel halt(MPI_COMM_WORLD);
    std::vector<std::string> environment = run::command_environment();
    for (const std::string& e : env_values) {
        const std::string prefix = e.substr(0, e.find('=') + 1);
        std::erase_if(environment, [&](const std::string& v) { return v.rfind(prefix, 0) == 0; });
        environment.push_back(e);
    }
    const std::string shell = run::command_shell();
    std::vector<double> runtimes;  // of this rank's commands that succeeded (--timeout N%)
    task_count local_failed = 0, local_succeeded = 0;
    const auto prepare = [&](task_count k, int slot, int attempt) {
        const task_count i = todo[static_cast<std::size_t>(k)];
        run::command_spec spec;
        spec.command = run::fill_slot(commands[static_cast<std::size_t>(i)], slot_of(rank, slot));
        spec.shell = shell;
        spec.timeout = timeout.limit(runtimes);
        spec.capture = capture;
        spec.lines = lines;
        if (halt_policy.when == run::halt_policy::now) spec.stop = [&] { return halt.halted(); };
        if (!s.output.empty()) {
            spec.stdout_path = task_file(s.output, i, tasks, ".out");
            spec.stderr_path = task_file(s.output, i, tasks, ".err");
        } else if (s.quiet) {
            spec.stdout_path = spec.stderr_path = "/dev/null";
        }
        spec.environment = environment;
        spec.environment.push_back("PFARM_TASK=" + std::to_string(i));
        spec.environment.push_back("PFARM_RANK=" + std::to_string(rank));
        spec.environment.push_back("PFARM_ATTEMPT=" + std::to_string(attempt));
        spec.environment.push_back("PARALLEL_SEQ=" + std::to_string(i + 1));
        spec.environment.push_back("PARALLEL_JOBSLOT=" + std::to_string(slot_of(rank, slot)));
        return spec;
    };
    run::job_slots slots(per_rank, s.retries, prepare, [&] { return halt.halted(); }, [&](const run::slot_job& j) {
        std::cerr << "pfarm-run: task " << todo[static_cast<std::size_t>(j.task)] << " (rank " << rank
                  << "): " << j.status.error << "\n";
    });
    const auto ended = [&](run::slot_job& j, std::vector<run::job_item>& items) {
        const task_count i = todo[static_cast<std::size_t>(j.task)];
        const task_result& r = j.record;
        if (r.what() == outcome::ok) runtimes.push_back(j.status.end - j.status.start), ++local_succeeded;
        else if (r.what() != outcome::killed) ++local_failed;
        if (records) records->append(i, r);  // before the result leaves this rank: a kill now loses nothing
        // This rank's own count decides at once; rank 0 decides on the counts of every rank as records arrive.
        if (halt_policy.reached(halt_policy.on_done ? local_succeeded + local_failed
                                : halt_policy.on_success ? local_succeeded : local_failed, tasks))
            halt.raise();
        items.push_back({j.task, slot_of(rank, j.slot), {r, std::move(j.status.out), std::move(j.status.err)},
                         {j.streamed[0], j.streamed[1]}});
    };
    auto command = [&](task_count k) {
        const task_count i = todo[static_cast<std::size_t>(k)];
        task_result r;
        r.command_hash = keys[static_cast<std::size_t>(i)];
        r.run = run_id;
        r.rank = rank;
        std::memcpy(r.host, host, sizeof r.host);
        std::vector<run::job_item> items;
        if (halt.halted()) {
            r.status = static_cast<std::uint8_t>(outcome::not_run);
            r.start = r.end = run::unix_time();
            items.push_back({k, slot_of(rank, 0), {r, "", ""}});
        } else {
            slots.start(k, r);
        }
        for (run::slot_job& j : slots.wait_below(static_cast<std::size_t>(per_rank))) ended(j, items);
        return run::pack_items(items);
    };

    const std::string& tag_template = s.tagstring;
    const auto tagstring_of = [&](task_count i, long slot) {  // --tagstring: the arguments unquoted, {%} the rank's slot
        std::string tag = tag_template;
        if (tag.find('{') != std::string::npos)
            tag = run::fill_slot(run::command_template(tag_template, jobs.args[static_cast<std::size_t>(i)].size())
                                     .expand(jobs.args[static_cast<std::size_t>(i)], static_cast<std::size_t>(i) + 1, false),
                                 slot);
        return tag;
    };
    run::tally counts;
    task_count failed_here = 0, succeeded_here = 0;
    int halt_status = 1;
    const auto logged = [&](task_count i, const task_result& r, std::size_t received, bool restored, long slot) {
        counts.add(i, r, restored);
        if (restored && (s.resume || s.resume_failed)) return;  // already in the log
        const outcome o = r.what();
        if (o != outcome::not_run && o != outcome::killed) log.add(i, r, received, restored, shown(i, slot));
        full_log.add(i, r, received, restored, shown(i, slot));
    };
    // --line-buffer with -k: a command's lines and its record travel apart; it has ended for the printer once both
    // have come (its record says how many bytes its lines carried).
    struct line_count {
        std::uint64_t received = 0, expected = 0;
        bool recorded = false;
    };
    std::vector<line_count> line_counts(rank == 0 && lines && s.keep_order ? commands.size() : 0);
    const auto lines_ended = [&](task_count i) {
        const line_count& c = line_counts[static_cast<std::size_t>(i)];
        if (c.recorded && c.received == c.expected) printer.add(static_cast<std::size_t>(i), "", "");
    };
    auto arrived = [&](run::job_item item) {  // rank 0, once per command run
        const task_count i = todo[static_cast<std::size_t>(item.task)];
        run::job_output& j = item.job;
        const long slot = item.slot;
        const outcome o = j.record.what();
        if (!tag_template.empty() && s.results.empty()) {
            const std::string tag = tagstring_of(i, slot);
            j.out = run::tag_lines(j.out, tag + '\t');
            j.err = run::tag_lines(j.err, tag + '\t');
        }
        if (lines) {  // its lines are printed (or held, -k) as they come
            if (s.keep_order) {
                line_counts[static_cast<std::size_t>(i)].expected = item.streamed[0] + item.streamed[1];
                line_counts[static_cast<std::size_t>(i)].recorded = true;
                lines_ended(i);
            }
        } else if (o == outcome::not_run || o == outcome::killed) {
            printer.skip(static_cast<std::size_t>(i));
        } else {
            printer.add(static_cast<std::size_t>(i), j.out, j.err);
        }
        logged(i, j.record, lines ? item.streamed[0] : j.out.size(), false, slot);
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
            logged(i, r, 0, true, r.rank + slot_base);
        }

    // --line-buffer: a piece of command k's lines, printed on rank 0 (or held with -k), --tagstring's tag before each
    // line; rank 0's own commands' pieces come here at once, the other ranks' through the line channel.
    const auto show_piece = [&](task_count k, long slot, int stream, std::string_view text, bool mid_line) {
        const task_count i = todo[static_cast<std::size_t>(k)];
        const std::string piece =
            tag_template.empty() ? std::string(text) : run::tag_lines(std::string(text), tagstring_of(i, slot) + '\t', mid_line);
        printer.line(static_cast<std::size_t>(i), stream, piece, mid_line);
        if (!line_counts.empty()) {
            line_counts[static_cast<std::size_t>(i)].received += text.size();
            lines_ended(i);
        }
    };
    const auto arrive_piece = [&](const run::line_message& m) { show_piece(m.task, m.slot, m.stream, m.text, m.mid_line); };
    if (lines) {  // the ranks' commands' pieces: printed on rank 0, sent to it from the others
        slots.on_lines(
            [&](const run::slot_job& j, const run::line_piece& piece) {
                if (rank == 0) show_piece(j.task, slot_of(rank, j.slot), piece.stream, piece.text, piece.mid_line);
                else line_out->send(j.task, slot_of(rank, j.slot), piece.stream, piece.text, piece.mid_line);
            },
            [&] {  // while a rank waits on its commands: rank 0 prints the other ranks' pieces, the others' sends move
                if (rank == 0) line_out->poll(arrive_piece);
                else line_out->progress();
            },
            0.01);
    }

    pfarm::farm_options o = options;
    o.resume.journal.clear();  // pfarm-run keeps its own journal, keyed by the commands
    if (lines && rank == 0) o.protocol.side_channel = [&] { return line_out->poll(arrive_piece); };
    pfarm::farm_report report;
    pfarm::mpi::communicator rest_comm(MPI_COMM_WORLD);  // the commands still running when the farm ends
    const auto arrived_items = [&](std::span<const char> bytes) {
        for (run::job_item& item : run::unpack_items(bytes)) arrived(std::move(item));
    };
    try {
        std::vector<run::job_item> rest;
        if (todo.empty()) {
        } else if (farmerless) {
            // Fixed-size records into rank 0's array (no output travels: checked above); logged when the farm ends.
            // A task's slot holds its own record, or travels after the farm with the records of other commands.
            constexpr std::uint8_t elsewhere = 255;
            std::vector<task_result> out(rank == 0 ? todo.size() : 0);
            std::vector<long> out_slot(out.size(), 0);
            report = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, static_cast<task_count>(todo.size())},
                                 std::span<task_result>(out), [&](task_count k, task_result& r) {
                                     std::vector<run::job_item> items = run::unpack_items(command(k));
                                     r = task_result{};
                                     r.status = elsewhere;
                                     if (items.size() == 1 && items.front().task == k && items.front().slot == slot_of(rank, 0))
                                         r = items.front().job.record;
                                     else
                                         std::move(items.begin(), items.end(), std::back_inserter(rest));
                                 }, o);
            for (std::size_t k = 0; k < out.size(); ++k)
                if (out[k].status != elsewhere)
                    arrived(run::job_item{static_cast<task_count>(k), slot_of(out[k].rank, 0), {out[k], "", ""}});
        } else {
            report = pfarm::farm_stream(MPI_COMM_WORLD, pfarm::index_range{0, static_cast<task_count>(todo.size())},
                                        command, [&](task_count, std::span<const char> bytes) { arrived_items(bytes); }, o);
        }
        for (run::slot_job& j : slots.wait_below(1)) ended(j, rest);
        if (line_out && rank == 0) line_out->drain(report.lost_ranks, arrive_piece);  // every line before the records
        else if (line_out) line_out->finish();
        send_rest(run::pack_items(rest), rank, rest_comm.get(), report.lost_ranks, arrived_items);
    } catch (...) {
        halt.abandon();
        if (line_out) line_out->abandon();
        if (records) records->remove_if_empty();
        throw;
    }
    const bool halted = halt.finish(report.lost_ranks);
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
    share_status(status, rank, report.lost_ranks);
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    std::optional<pfarm::mpi::environment> env;  // started once the command line holds no bad input

    CLI::App app;
    run::settings s;
    pfarm::farm_options options;
    run::add_run_options(app, s, options);

    bool ran = false;
    const int code = pfarm::tools::run_tool("pfarm-run", app, argc, argv, [&] {
        if (s.quiet && app.count("--progress") == 0) options.output.progress = pfarm::progress_mode::quiet;
        if (s.eta) options.output.progress = pfarm::progress_mode::plain;
        if (s.bar) options.output.progress = pfarm::progress_mode::automatic;
        const std::vector<std::string> words = app.remaining();
        run::check_command_line(s, options, words);
        pfarm::mpi::guard_startup(pfarm::mpi::startup_bound_seconds(), 255);  // run_tool reports a bad bound
        env.emplace(&argc, &argv);
        const int status = run_commands(s, options, words);
        ran = true;
        return status;
    });
    return ran || code == 0 ? code : 255;  // GNU parallel's status for bad input and errors
}
