// pfarm-run's parts without MPI (skeleton/tools/run/run_*.hpp): the commands file and the ::: grid, running a command
// (exit status, output files, timeout of a whole process group, the guard that kills a command when its rank
// dies), and the records a rerun resumes from (the ranks' records files and their merge into the journal).
#include "run_commands.hpp"
#include "run_process.hpp"
#include "run_records.hpp"

#include "pfarm/error.hpp"
#include "pfarm/journal.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace {

namespace run = pfarm::tools::run;
namespace fs = std::filesystem;

/// The argument an invalid_argument names when `f` throws one ("" when it throws nothing).
template <class F>
std::string refusal(F&& f, std::string* message = nullptr) {
    try {
        f();
    } catch (const pfarm::invalid_argument& e) {
        if (message) *message = e.message();
        return e.argument();
    }
    return "";
}

std::vector<std::string> grid_of(std::initializer_list<std::string> words) {
    const std::vector<std::string> w(words);
    return run::expand_grid(run::split_grid(w));
}

/// A fresh folder under the test's working directory.
fs::path scratch(const std::string& name) {
    const fs::path p = fs::current_path() / ("run-unit-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(p);
    fs::create_directories(p);
    return p;
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// Whether process `pid` is gone or a zombie (it runs no more), waiting up to `seconds`.
bool ends_within(pid_t pid, double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
        std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
        std::string text;
        if (!std::getline(stat, text)) return true;
        const auto close = text.rfind(')');
        if (close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z') return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

run::command_spec spec_of(const std::string& command) {
    run::command_spec s;
    s.command = command;
    s.environment = run::command_environment();
    return s;
}

TEST(RunCommands, LinesWithoutBlanksAndComments) {
    EXPECT_EQ(run::parse_commands("echo a\n\n   \n  # a comment\n sim --v 1 \r\n#x\nlast", "f", "COMMANDS_FILE"),
              (std::vector<std::string>{"echo a", " sim --v 1 ", "last"}));
    // Fuzz finding R1 (docs/reliability.md): stray carriage returns made a blank line a command.
    EXPECT_EQ(run::parse_commands(" \r\r\necho x\r\r\n", "f", "COMMANDS_FILE"), (std::vector<std::string>{"echo x"}));
}

TEST(RunCommands, EmptyOrBinaryFilesAreRefused) {
    std::string message;
    EXPECT_EQ(refusal([] { run::parse_commands("# nothing\n\n", "f", "COMMANDS_FILE"); }, &message), "COMMANDS_FILE");
    EXPECT_NE(message.find("holds no commands"), std::string::npos) << message;
    EXPECT_EQ(refusal([] { run::parse_commands("", "f", "COMMANDS_FILE"); }), "COMMANDS_FILE");
    EXPECT_EQ(refusal([] { run::parse_commands(std::string("echo\0x\n", 7), "f", "COMMANDS_FILE"); }, &message), "COMMANDS_FILE");
    EXPECT_NE(message.find("line 1 holds a NUL byte"), std::string::npos) << message;
    EXPECT_EQ(refusal([] { run::read_commands("/nonexistent/commands", "COMMANDS_FILE"); }, &message), "COMMANDS_FILE");
    EXPECT_NE(message.find("cannot open '/nonexistent/commands'"), std::string::npos) << message;
    EXPECT_EQ(refusal([] { run::read_commands("/", "COMMANDS_FILE"); }, &message), "COMMANDS_FILE");
    EXPECT_NE(message.find("is a directory"), std::string::npos) << message;
}

TEST(RunCommands, GridIsTheCrossProductFirstGroupSlowest) {
    EXPECT_EQ(grid_of({"sim", "--v", "{1}", "--seed", "{2}", ":::", "-60", "-55", ":::", "1", "2"}),
              (std::vector<std::string>{"sim --v -60 --seed 1", "sim --v -60 --seed 2", "sim --v -55 --seed 1",
                                        "sim --v -55 --seed 2"}));
    EXPECT_EQ(grid_of({"sim {2}/{1}", ":::", "a", ":::", "x", "y", "z"}),
              (std::vector<std::string>{"sim x/a", "sim y/a", "sim z/a"}));
}

TEST(RunCommands, GridAppendsWithoutReplacementStringsAndQuotes) {
    EXPECT_EQ(grid_of({"echo", ":::", "a", "b"}), (std::vector<std::string>{"echo a", "echo b"}));
    EXPECT_EQ(grid_of({"echo {}", ":::", "a", ":::", "1"}), (std::vector<std::string>{"echo a 1"}));
    EXPECT_EQ(grid_of({"echo {1}", ":::", "a b", "it's", "$HOME", ""}),
              (std::vector<std::string>{"echo 'a b'", "echo 'it'\\''s'", "echo '$HOME'", "echo ''"}));
    // Braces that are no replacement string stay as they are: awk programs, ${VAR}, {01}.
    EXPECT_EQ(grid_of({"awk '{print $1}' ${HOME} {x} {01} {1}", ":::", "f"}),
              (std::vector<std::string>{"awk '{print $1}' ${HOME} {x} {01} f"}));
    EXPECT_EQ(run::shell_quote("-60.5"), "-60.5");
    EXPECT_EQ(run::shell_quote("a;b"), "'a;b'");
}

TEST(RunCommands, MalformedGridsAreRefused) {
    std::string m;
    EXPECT_EQ(refusal([] { grid_of({"echo {3}", ":::", "a", ":::", "b"}); }, &m), ":::");
    EXPECT_NE(m.find("'{3}', but the grid has 2 group(s)"), std::string::npos) << m;
    EXPECT_EQ(refusal([] { grid_of({"echo {0}", ":::", "a"}); }), ":::");
    EXPECT_EQ(refusal([] { grid_of({"echo", ":::"}); }, &m), ":::");
    EXPECT_NE(m.find("group 1 has no values"), std::string::npos) << m;
    EXPECT_EQ(refusal([] { grid_of({"echo", ":::", ":::", "a"}); }, &m), ":::");
    EXPECT_NE(m.find("group 1 has no values"), std::string::npos) << m;
    EXPECT_EQ(refusal([] { grid_of({"echo", ":::", "a", ":::"}); }, &m), ":::");
    EXPECT_NE(m.find("group 2 has no values"), std::string::npos) << m;
    EXPECT_EQ(refusal([] { grid_of({":::", "a"}); }), "COMMAND");
    EXPECT_EQ(refusal([] { grid_of({"echo", "::::", "file"}); }, &m), ":::");
    EXPECT_NE(m.find("from a file"), std::string::npos) << m;
    EXPECT_EQ(refusal([] { grid_of({"echo", ":::", "a", ":::+", "b"}); }), ":::");
    EXPECT_EQ(refusal([] { grid_of({"mv {} {.}.txt", ":::", "a"}); }, &m), ":::");
    EXPECT_NE(m.find("'{.}'"), std::string::npos) << m;
    EXPECT_EQ(refusal([] { grid_of({"echo {#}", ":::", "a"}); }), ":::");
    EXPECT_EQ(refusal([] { grid_of({"echo {2/}", ":::", "a", ":::", "b"}); }), ":::");
    EXPECT_TRUE(run::has_grid(std::vector<std::string>{"x", "::::", "f"}));
    EXPECT_FALSE(run::has_grid(std::vector<std::string>{"commands.txt"}));
}

TEST(RunCommands, HugeGridsAreRefused) {
    std::vector<std::string> words{"echo"};
    for (int g = 0; g < 3; ++g) {
        words.push_back(":::");
        for (int v = 0; v < 1000; ++v) words.push_back(std::to_string(v));
    }
    std::string m;
    EXPECT_EQ(refusal([&] { run::expand_grid(run::split_grid(words)); }, &m), ":::");
    EXPECT_NE(m.find("more than 100000000 commands"), std::string::npos) << m;
}

TEST(RunProcess, ExitStatusOutputFilesAndEnvironment) {
    const fs::path dir = scratch("exit");
    run::process_runner runner;
    run::command_spec s = spec_of("echo out $PFARM_TASK; echo err >&2; read x; echo \"[$x]\"; exit 3");
    s.environment.push_back("PFARM_TASK=7");
    s.stdout_path = (dir / "o").string();
    s.stderr_path = (dir / "e").string();
    const run::command_status st = runner.run(s);
    EXPECT_EQ(st.what, run::outcome::failed);
    EXPECT_EQ(st.exit_code, 3);
    EXPECT_EQ(st.signal, 0);
    EXPECT_LE(st.start, st.end);
    EXPECT_EQ(slurp(dir / "o"), "out 7\n[]\n");  // stdin is /dev/null
    EXPECT_EQ(slurp(dir / "e"), "err\n");

    s.command = "kill -s USR1 $$";
    const run::command_status killed = runner.run(s);
    EXPECT_EQ(killed.what, run::outcome::failed);
    EXPECT_EQ(killed.signal, SIGUSR1);
    EXPECT_EQ(killed.exit_code, -1);

    s.command = "true";
    EXPECT_EQ(runner.run(s).what, run::outcome::ok);
    s.stdout_path = (dir / "missing" / "o").string();
    const run::command_status not_started = runner.run(s);
    EXPECT_EQ(not_started.what, run::outcome::not_started);
    EXPECT_NE(not_started.error.find("missing/o"), std::string::npos) << not_started.error;
    fs::remove_all(dir);
}

TEST(RunProcess, TheLaunchVariablesAreLeftOut) {
    ::setenv("PMIX_RANK", "3", 1);
    ::setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    ::setenv("PFARM_TASK", "99", 1);
    ::setenv("OMPI_MCA_btl", "self", 1);
    const std::vector<std::string> env = run::command_environment();
    const auto has = [&](const std::string& prefix) {
        return std::any_of(env.begin(), env.end(), [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
    };
    EXPECT_FALSE(has("PMIX_RANK="));
    EXPECT_FALSE(has("OMPI_COMM_WORLD_RANK="));
    EXPECT_FALSE(has("PFARM_TASK="));
    EXPECT_TRUE(has("OMPI_MCA_btl=self"));  // the user's own MCA settings stay
    for (const char* v : {"PMIX_RANK", "OMPI_COMM_WORLD_RANK", "PFARM_TASK", "OMPI_MCA_btl"}) ::unsetenv(v);
}

TEST(RunProcess, ATimeoutKillsTheWholeGroup) {
    const fs::path dir = scratch("timeout");
    run::process_runner runner;
    // A child in the background that would outlive the shell, and a shell that ignores SIGTERM.
    run::command_spec s = spec_of("sleep 30 & echo $! > " + (dir / "child").string() + "; trap '' TERM; wait; sleep 30");
    s.timeout = 0.3;
    s.grace = 0.3;
    const auto t0 = std::chrono::steady_clock::now();
    const run::command_status st = runner.run(s);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(st.what, run::outcome::timed_out);
    EXPECT_EQ(st.signal, SIGKILL);  // the shell ignored SIGTERM: SIGKILL after the grace
    EXPECT_LT(took, 5.0);
    const pid_t child = std::stoi(slurp(dir / "child"));
    EXPECT_TRUE(ends_within(child, 5.0)) << "the background child of a timed-out command survived";

    s.command = "sleep 30";  // ends on SIGTERM
    s.timeout = 0.2;
    const run::command_status term = runner.run(s);
    EXPECT_EQ(term.what, run::outcome::timed_out);
    EXPECT_EQ(term.signal, SIGTERM);
    fs::remove_all(dir);
}

TEST(RunProcess, TheGuardKillsTheCommandWhenItsRankDies) {
    const fs::path dir = scratch("guard");
    const std::string pid_file = (dir / "pid").string();
    const pid_t rank = ::fork();
    ASSERT_GE(rank, 0);
    if (rank == 0) {  // the "rank": runs a long command, and is killed with SIGKILL meanwhile
        run::process_runner runner;
        runner.run(spec_of("echo $$ > " + pid_file + ".tmp; mv " + pid_file + ".tmp " + pid_file + "; sleep 60"));
        ::_exit(0);
    }
    pid_t command = 0;
    for (int i = 0; i < 500 && command == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        std::ifstream in(pid_file);
        in >> command;
    }
    ASSERT_GT(command, 0) << "the command did not start";
    ::kill(rank, SIGKILL);
    int status = 0;
    ::waitpid(rank, &status, 0);
    EXPECT_TRUE(ends_within(command, 5.0)) << "the command outlived its rank";
    fs::remove_all(dir);
}

run::task_result result_of(const std::string& command, run::outcome o) {
    run::task_result r;
    r.command_hash = run::command_hash(command);
    r.status = static_cast<std::uint8_t>(o);
    r.attempts = 1;
    return r;
}

TEST(RunRecords, RankRecordsReadBackUpToATornTail) {
    const fs::path dir = scratch("records");
    const std::string path = (dir / "j.rank-1").string();
    {
        run::rank_records records(path, "--journal");
        records.append(0, result_of("a", run::outcome::ok));
        records.append(5, result_of("b", run::outcome::failed));
        records.append(9, result_of("c", run::outcome::ok));  // beyond the 6 tasks read below: skipped
    }
    std::ofstream(path, std::ios::app) << "torn";
    const auto read = run::read_rank_records(path, 6);
    ASSERT_EQ(read.size(), 2u);
    EXPECT_EQ(read.at(5).what(), run::outcome::failed);
    EXPECT_EQ(read.at(0).command_hash, run::command_hash("a"));
    EXPECT_EQ(refusal([&] { run::rank_records((dir / "no" / "j.rank-0").string(), "--journal"); }), "--journal");
    fs::remove_all(dir);
}

TEST(RunRecords, ARerunMergesTheRanksRecordsAndDropsWhatMustRunAgain) {
    const fs::path dir = scratch("merge");
    const std::string journal = (dir / "j").string();
    const std::vector<std::string> commands{"c0", "c1", "c2", "c3", "c4"};
    const std::uint64_t print = 12345;
    {
        pfarm::journal_writer w(journal, print, 5, 0);
        for (auto [i, o] : {std::pair{0, run::outcome::ok}, {1, run::outcome::failed}, {2, run::outcome::not_run}}) {
            const run::task_result r = result_of(commands[static_cast<std::size_t>(i)], o);
            w.append(i, &r, sizeof r);
        }
        w.close();
    }
    {
        run::rank_records side(run::rank_records_path(journal, 2), "--journal");
        side.append(3, result_of("c3", run::outcome::ok));
        side.append(0, result_of("c0", run::outcome::ok));  // already in the journal
        side.append(4, result_of("stale command", run::outcome::ok));  // not this run's command: ignored
    }
    const run::resume_plan dry = run::prepare_journal(journal, commands, false, false, "--journal");
    EXPECT_EQ(dry.merged, 1);
    EXPECT_TRUE(fs::exists(run::rank_records_path(journal, 2)));  // nothing written without `write`

    const run::resume_plan plan = run::prepare_journal(journal, commands, false, true, "--journal");
    EXPECT_TRUE(plan.journal_exists);
    EXPECT_EQ(plan.merged, 1);
    EXPECT_EQ(plan.dropped_not_run, 1);
    EXPECT_EQ(plan.dropped_failed, 0);
    std::vector<pfarm::task_count> kept;
    for (const auto& [i, r] : plan.done) kept.push_back(i);
    EXPECT_EQ(kept, (std::vector<pfarm::task_count>{0, 1, 3}));
    EXPECT_FALSE(fs::exists(run::rank_records_path(journal, 2)));
    EXPECT_EQ(pfarm::read_journal(journal, print, 5).outputs.size(), 3u);  // rewritten with the same fingerprint

    const run::resume_plan retry = run::prepare_journal(journal, commands, true, true, "--journal");
    EXPECT_EQ(retry.dropped_failed, 1);
    EXPECT_EQ(pfarm::read_journal(journal, print, 5).outputs.size(), 2u);
    fs::remove_all(dir);
}

TEST(RunRecords, AJournalOfOtherCommandsIsRefused) {
    const fs::path dir = scratch("other");
    const std::string journal = (dir / "j").string();
    {
        pfarm::journal_writer w(journal, 1, 2, 0);
        const run::task_result r = result_of("another command", run::outcome::ok);
        w.append(1, &r, sizeof r);
        w.close();
    }
    std::string m;
    EXPECT_EQ(refusal([&] { run::prepare_journal(journal, {"a", "b"}, false, true, "--journal"); }, &m), "--journal");
    EXPECT_NE(m.find("belongs to other commands"), std::string::npos) << m;
    EXPECT_EQ(refusal([&] { run::prepare_journal(journal, {"a", "b", "c"}, false, true, "--journal"); }, &m), "--journal");
    EXPECT_NE(m.find("farm of 2 tasks"), std::string::npos) << m;
    {
        pfarm::journal_writer w(journal + "2", 1, 2, 0);
        const double other = 1.0;  // a record of another program's size
        w.append(0, &other, sizeof other);
        w.close();
    }
    EXPECT_EQ(refusal([&] { run::prepare_journal(journal + "2", {"a", "b"}, false, true, "--journal"); }, &m), "--journal");
    EXPECT_NE(m.find("not written by pfarm-run"), std::string::npos) << m;
    std::ofstream(journal + "3") << "not a journal at all, but long enough to hold a header";
    EXPECT_EQ(refusal([&] { run::prepare_journal(journal + "3", {"a", "b"}, false, true, "--journal"); }), "--journal");

    // No journal yet: records files beside it are left over from another run and go.
    { run::rank_records side(run::rank_records_path(journal + "4", 0), "--journal"); }
    const run::resume_plan fresh = run::prepare_journal(journal + "4", {"a"}, false, true, "--journal");
    EXPECT_FALSE(fresh.journal_exists);
    EXPECT_FALSE(fs::exists(run::rank_records_path(journal + "4", 0)));
    fs::remove_all(dir);
}

}  // namespace
