// pfarm-run's parts without MPI (skeleton/tools/run/run_*.hpp): the commands file and the ::: grid, GNU parallel's input
// sources and replacement strings, running a command (exit status, output files, timeout of a whole process group,
// the guard that kills a command when its rank dies, output handed on line by line), --halt, --timeout and the exit
// status, the job logs, grouped and line-buffered output and --results, and the records a rerun resumes from (the
// journal keyed by the commands).
#include "run_commands.hpp"
#include "run_inputs.hpp"
#include "run_joblog.hpp"
#include "run_output.hpp"
#include "run_policy.hpp"
#include "run_process.hpp"
#include "run_records.hpp"

#include "pfarm/error.hpp"
#include "pfarm/journal.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
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

TEST(RunProcess, LineBufferedOutputIsHandedOnAsItComes) {
    const fs::path dir = scratch("lines");
    const std::string go = (dir / "go").string();
    run::process_runner runner;
    struct piece {
        int stream;
        std::string text;  // a copy: the piece's text is valid during the call only
        bool mid_line;
    };
    std::vector<piece> pieces;
    int ticks = 0;
    bool go_made = false;
    runner.on_lines(
        [&](const run::line_piece& p) {
            pieces.push_back({p.stream, std::string(p.text), p.mid_line});
            if (p.text == "first\n") {  // the command waits for this file before it goes on: it still runs
                std::ofstream(go) << "go\n";
                go_made = true;
            }
        },
        [&] { ++ticks; }, 0.01);
    // "first", then (once the handler has seen it, and 50 ms later, so that a tick of 10 ms comes) a line of 200,000
    // bytes, a line on stderr, and a last line without a newline; a command that never saw its file says so and fails.
    run::command_spec s = spec_of("echo first; i=0; while [ ! -e " + go + " ]; do i=$((i+1)); if [ $i -gt 400 ]; then "
                                  "echo 'no go'; exit 1; fi; sleep 0.05; done; sleep 0.05; "
                                  "head -c 200000 /dev/zero | tr '\\0' x; "
                                  "echo; echo e1 >&2; printf 'last'");
    s.lines = true;
    s.stdout_path = (dir / "not-written").string();
    const run::command_status st = runner.run(s);
    EXPECT_EQ(st.what, run::outcome::ok) << st.error;
    EXPECT_TRUE(go_made);
    EXPECT_FALSE(fs::exists(dir / "not-written"));  // lines: the paths are ignored
    EXPECT_GT(ticks, 0);
    std::string out, err;
    std::vector<bool> out_mid;
    std::vector<std::string> out_texts;
    for (const auto& p : pieces) {
        EXPECT_LE(p.text.size(), run::line_piece_bytes);
        (p.stream == 1 ? out : err) += p.text;
        if (p.stream == 1) out_mid.push_back(p.mid_line), out_texts.push_back(p.text);
    }
    ASSERT_FALSE(pieces.empty());
    EXPECT_EQ(pieces.front().text, "first\n");
    EXPECT_EQ(out, "first\n" + std::string(200000, 'x') + "\nlast");
    EXPECT_EQ(err, "e1\n");
    // The long line in pieces of line_piece_bytes (each but the first mid-line), each whole line otherwise, the last
    // line as it is at the end.
    EXPECT_EQ(out_texts.back(), "last");
    EXPECT_FALSE(out_mid.back());
    EXPECT_FALSE(out_mid.front());
    std::size_t cut = 0;
    for (std::size_t k = 1; k < out_texts.size(); ++k) {
        EXPECT_EQ(out_mid[k], out_texts[k - 1].back() != '\n') << "piece " << k;
        if (k + 1 == out_texts.size() || out_texts[k].back() == '\n') continue;
        ++cut;
        EXPECT_EQ(out_texts[k].size(), run::line_piece_bytes);
    }
    EXPECT_EQ(cut, 200000 / run::line_piece_bytes);  // 3 cuts: pieces of 65,536 bytes, then the rest with its newline
    fs::remove_all(dir);
}

run::task_result result_of(const std::string& command, run::outcome o) {
    run::task_result r;
    r.command_hash = run::command_hash(command);
    r.status = static_cast<std::uint8_t>(o);
    r.attempts = 1;
    if (o == run::outcome::ok) r.exit_code = 0;
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

TEST(RunRecords, AJournalIsKeyedByTheCommandsSoAGrownSweepRunsOnlyTheNewOnes) {
    const fs::path dir = scratch("merge");
    const std::string journal = (dir / "j").string();
    const std::vector<std::string> first{"c0", "c1", "c2", "c0"};  // c0 twice: two commands, two records
    const auto keys = run::record_keys(first);
    EXPECT_NE(keys[0], keys[3]);
    const auto record = [&](std::size_t i, run::outcome o) {
        run::task_result r = result_of(first[i], o);
        r.command_hash = keys[i];
        return r;
    };
    {
        run::rank_records j(journal, "--journal");  // what rank 0 appended
        j.append(0, record(0, run::outcome::ok));
        j.append(1, record(1, run::outcome::failed));
    }
    {
        run::rank_records side(run::rank_records_path(journal, 2), "--journal");  // a rank's file, not merged yet
        side.append(2, record(2, run::outcome::not_run));
        side.append(3, record(3, run::outcome::ok));
    }
    const run::resume_plan dry = run::prepare_journal(journal, first, false, false, "--journal");
    EXPECT_EQ(dry.merged, 2);
    EXPECT_TRUE(fs::exists(run::rank_records_path(journal, 2)));  // nothing written without `write`

    // The sweep grew and changed: "c1" is now "c1 changed" (a new command), "c4" is new, the rest are in order.
    const std::vector<std::string> grown{"c0", "c1 changed", "c2", "c0", "c4"};
    const run::resume_plan plan = run::prepare_journal(journal, grown, false, true, "--journal");
    EXPECT_TRUE(plan.journal_exists);
    EXPECT_EQ(plan.dropped_not_run, 1);  // c2 never ran
    EXPECT_EQ(plan.dropped_other, 1);    // c1's record: not a command of this sweep
    std::vector<pfarm::task_count> kept;
    for (const auto& [i, r] : plan.done) kept.push_back(i);
    EXPECT_EQ(kept, (std::vector<pfarm::task_count>{0, 3}));
    EXPECT_FALSE(fs::exists(run::rank_records_path(journal, 2)));
    EXPECT_EQ(run::read_records(journal).size(), 2u);  // rewritten with what is kept

    // --retry-failed drops failures; a failure is kept otherwise.
    {
        run::rank_records j(journal, "--journal", true);
        run::task_result r = result_of("c4", run::outcome::failed);
        r.command_hash = run::record_keys(grown)[4];
        j.append(4, r);
    }
    EXPECT_EQ(run::prepare_journal(journal, grown, false, false, "--journal").done.count(4), 1u);
    const run::resume_plan retry = run::prepare_journal(journal, grown, true, true, "--journal");
    EXPECT_EQ(retry.dropped_failed, 1);
    EXPECT_EQ(retry.done.count(4), 0u);
    fs::remove_all(dir);
}

TEST(RunRecords, AJournalOfOtherCommandsIsRefused) {
    const fs::path dir = scratch("other");
    const std::string journal = (dir / "j").string();
    {
        run::rank_records j(journal, "--journal");
        j.append(0, result_of("another command", run::outcome::ok));
    }
    std::string m;
    EXPECT_EQ(refusal([&] { run::prepare_journal(journal, {"a", "b"}, false, true, "--journal"); }, &m), "--journal");
    EXPECT_NE(m.find("belongs to other commands"), std::string::npos) << m;
    std::ofstream(journal + "3") << "not a journal at all, but long enough to hold a header";
    EXPECT_EQ(refusal([&] { run::prepare_journal(journal + "3", {"a", "b"}, false, true, "--journal"); }, &m), "--journal");
    EXPECT_NE(m.find("not a pfarm-run journal"), std::string::npos) << m;

    // No journal yet: records files beside it are left over from another run and go.
    { run::rank_records side(run::rank_records_path(journal + "4", 0), "--journal"); }
    const run::resume_plan fresh = run::prepare_journal(journal + "4", {"a"}, false, true, "--journal");
    EXPECT_FALSE(fresh.journal_exists);
    EXPECT_FALSE(fs::exists(run::rank_records_path(journal + "4", 0)));
    fs::remove_all(dir);
}

std::vector<std::string> jobs_of(const std::vector<std::string>& words, std::optional<std::string> colsep = {}) {
    const run::job_words w = run::split_words(words, {});
    run::read_settings how;
    how.colsep = colsep;
    return run::make_jobs(w.command, run::read_sources(w, how)).commands;
}

TEST(RunInputs, SourcesAreCrossedFirstSlowestAndLinkedOnesPaired) {
    EXPECT_EQ(jobs_of({"sim --v {1} --seed {2}", ":::", "-60", "-55", ":::", "1", "2"}),
              (std::vector<std::string>{"sim --v -60 --seed 1", "sim --v -60 --seed 2", "sim --v -55 --seed 1",
                                        "sim --v -55 --seed 2"}));
    EXPECT_EQ(jobs_of({"echo", ":::", "a", "b", "c", ":::+", "1", "2"}), (std::vector<std::string>{"echo a 1", "echo b 2"}));
    const fs::path dir = scratch("inputs");
    std::ofstream(dir / "f") << "x\n\ny z";
    EXPECT_EQ(jobs_of({"echo", "::::", (dir / "f").string(), ":::", "1"}),
              (std::vector<std::string>{"echo x 1", "echo '' 1", "echo 'y z' 1"}));
    EXPECT_EQ(jobs_of({"echo {2} {1}", ":::", "a,b", "c,,d"}, ","),
              (std::vector<std::string>{"echo b a", "echo '' c"}));
    EXPECT_EQ(jobs_of({":::", "echo a", "echo b"}), (std::vector<std::string>{"echo a", "echo b"}));  // values are commands
    EXPECT_TRUE(jobs_of({"echo", "::::", (dir / "f").string(), ":::+", "1"}).size() == 1);
    std::string m;
    EXPECT_EQ(refusal([&] { jobs_of({"echo", "::::", (dir / "none").string()}); }, &m), "::::");
    EXPECT_NE(m.find("cannot open"), std::string::npos) << m;
    EXPECT_EQ(refusal([] { jobs_of({"echo", ":::+", "a"}); }), ":::+");
    EXPECT_EQ(refusal([] { jobs_of({"echo", ":::", "a", ":::"}); }), ":::");
    EXPECT_EQ(refusal([] { jobs_of({"echo", ":::", "a"}, "("); }), "--colsep");
    // -0, -d and -r on a file source.
    std::ofstream(dir / "z", std::ios::binary) << std::string("a\0b c\0\0  \0", 10);
    run::read_settings how;
    how.delimiter = run::parse_delimiter("\\0");
    how.skip_empty = true;
    const run::job_words zw = run::split_words({"echo", "::::", (dir / "z").string()}, {});
    EXPECT_EQ(run::make_jobs(zw.command, run::read_sources(zw, how)).commands, (std::vector<std::string>{"echo a", "echo 'b c'"}));
    EXPECT_EQ(run::parse_delimiter("\\t"), "\t");
    EXPECT_EQ(run::parse_delimiter("\\x41,"), "A,");
    EXPECT_EQ(run::parse_delimiter("::"), "::");
    EXPECT_EQ(refusal([] { run::parse_delimiter(""); }), "--delimiter");
    fs::remove_all(dir);
}

TEST(RunInputs, HugeProductsAreRefused) {
    std::vector<std::string> words{"echo"};
    for (int g = 0; g < 3; ++g) {
        words.push_back(":::");
        for (int v = 0; v < 1000; ++v) words.push_back(std::to_string(v));
    }
    std::string m;
    EXPECT_EQ(refusal([&] {
        const run::job_words w = run::split_words(words, {});
        run::make_jobs(w.command, run::read_sources(w, {}));
    }, &m), ":::");
    EXPECT_NE(m.find("100000000"), std::string::npos) << m;
}

TEST(RunInputs, ReplacementStringsAsGnuParallel) {
    EXPECT_EQ(jobs_of({"echo {.} {/} {//} {/.} {#}", ":::", "dir/sub/f.tar.gz", "/a", ".bashrc", "a/b/", "f"}),
              (std::vector<std::string>{"echo dir/sub/f.tar f.tar.gz dir/sub f.tar 1", "echo /a a / a 2",
                                        "echo '' .bashrc . '' 3", "echo a/b/ '' a '' 4", "echo f f . f 5"}));
    EXPECT_EQ(jobs_of({"echo {2.} {1/} {-1}", ":::", "a/x", ":::", "q.r"}), (std::vector<std::string>{"echo q x q.r"}));
    EXPECT_EQ(jobs_of({"echo {1}", ":::", "a b", "it's", "'", "$HOME", "", "a+b/c"}),
              (std::vector<std::string>{"echo 'a b'", "echo 'it'\"'\"'s'", "echo \"'\"", "echo '$HOME'", "echo ''",
                                        "echo a+b/c"}));
    // Braces that are no replacement string stay: awk programs, ${VAR}, {x}, {0}, bash's {1..3}.
    EXPECT_EQ(jobs_of({"awk '{print $1}' ${HOME} {x} {0} {1..3} {1}", ":::", "f"}),
              (std::vector<std::string>{"awk '{print $1}' ${HOME} {x} {0} {1..3} f"}));
    const auto slot = jobs_of({"echo {%}", ":::", "a"});
    EXPECT_EQ(run::fill_slot(slot[0], 3), "echo 3");
    std::string m;
    EXPECT_EQ(refusal([] { jobs_of({"echo {= s/a/b/ =}", ":::", "a"}); }, &m), "{= s/a/b/ =}");
    EXPECT_NE(m.find("perl expression"), std::string::npos) << m;
    EXPECT_EQ(refusal([] { jobs_of({"echo {3}", ":::", "a", ":::", "b"}); }, &m), "{3}");
    EXPECT_NE(m.find("each job has 2 argument(s)"), std::string::npos) << m;
}

TEST(RunPolicy, HaltTimeoutAndExitStatusAsGnuParallel) {
    const run::halt_policy soon = run::parse_halt("soon,fail=2");
    EXPECT_EQ(soon.when, run::halt_policy::soon);
    EXPECT_FALSE(soon.reached(1, 10));
    EXPECT_TRUE(soon.reached(2, 10));
    const run::halt_policy pct = run::parse_halt("now,success=30%");
    EXPECT_TRUE(pct.on_success && pct.percent);
    EXPECT_FALSE(pct.reached(2, 10));
    EXPECT_TRUE(pct.reached(3, 10));
    EXPECT_EQ(run::parse_halt("2").when, run::halt_policy::now);
    EXPECT_FALSE(run::parse_halt("never").reached(5, 5));
    const run::halt_policy done = run::parse_halt("soon,done=50%");
    EXPECT_TRUE(done.on_done && done.reached(5, 10) && !done.reached(4, 10));
    for (const char* bad : {"now", "later,fail=1", "soon,fail=0", "soon,fail=1.5", "now,gone=1", "soon,fail=200%"})
        EXPECT_EQ(refusal([&] { run::parse_halt(bad); }), "--halt") << bad;
    EXPECT_EQ(run::parse_timeout("2.5").seconds, 2.5);
    const run::timeout_spec t = run::parse_timeout("200%");
    std::vector<double> runtimes{1.0, 3.0};
    EXPECT_EQ(t.limit(runtimes), 0.0);  // fewer than 3 successes: no timeout yet
    runtimes.push_back(2.0);
    EXPECT_DOUBLE_EQ(t.limit(runtimes), 4.0);
    for (const char* bad : {"0", "-1", "x", "%", "1s"}) EXPECT_EQ(refusal([&] { run::parse_timeout(bad); }), "--timeout") << bad;
    // As GNU parallel 20221122 exits (its values measured with -j1 on 'exit {}' ::: 5 3 0 0 and ::: 0 3 2).
    const run::halt_policy first = run::parse_halt("now,fail=1"), two = run::parse_halt("soon,fail=2");
    EXPECT_EQ(run::gnu_exit_status(0, 4, false, soon, 0), 0);
    EXPECT_EQ(run::gnu_exit_status(7, 9, false, soon, 0), 7);
    EXPECT_EQ(run::gnu_exit_status(500, 900, false, soon, 0), 101);
    EXPECT_EQ(run::gnu_exit_status(1, 4, true, first, 5), 5);  // the failed command's own status
    EXPECT_EQ(run::gnu_exit_status(2, 4, true, two, 3), 2);
    EXPECT_EQ(run::gnu_exit_status(2, 4, true, run::parse_halt("soon,fail=50%"), 3), 50);
    EXPECT_EQ(run::gnu_exit_status(3, 4, true, pct, 4), 0);
    EXPECT_EQ(run::gnu_exit_status(1, 3, true, run::parse_halt("soon,done=2"), 3), 1);
    EXPECT_EQ(run::gnu_exit_status(1, 3, true, done, 3), 34);
}

TEST(RunJoblog, GnuRowsSurviveAnyCommandTextAndResumeReadsThem) {
    const fs::path dir = scratch("joblog");
    const std::string path = (dir / "log").string();
    {
        run::job_log log;
        log.open(path, false, false, "--joblog");
        log.add(0, result_of("a", run::outcome::ok), 4, false, "echo 'a\nb'\tc");
        run::task_result failed = result_of("b", run::outcome::failed);
        failed.exit_code = 3;
        log.add(1, failed, 0, false, "exit 3");
        run::task_result killed = result_of("c", run::outcome::failed);
        killed.exit_code = -1, killed.signal = 9;
        log.add(2, killed, 0, false, "kill -9 $$");
    }
    const std::string text = slurp(path);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4) << text;  // header and 3 rows: the newline became a NUL
    std::string row = "\t0\t4\t0\t0\techo 'a";
    row += '\0';
    row += "b'\tc\n";
    EXPECT_NE(text.find(row), std::string::npos) << text;
    EXPECT_NE(text.find("\t0\t0\t0\t9\tkill -9 $$\n"), std::string::npos) << text;
    EXPECT_EQ(run::joblog_commands(path, false, "--resume"),
              (std::multiset<std::string>{"echo 'a\nb'\tc", "exit 3", "kill -9 $$"}));
    EXPECT_EQ(run::joblog_commands(path, true, "--resume-failed"), (std::multiset<std::string>{"echo 'a\nb'\tc"}));
    {
        run::job_log log;  // --resume appends without a second header
        log.open(path, false, true, "--joblog");
        log.add(3, result_of("d", run::outcome::ok), 0, false, "echo d");
    }
    EXPECT_EQ(run::joblog_commands(path, false, "--resume").size(), 4u);
    std::ofstream(dir / "other") << "task\trank\n";
    EXPECT_EQ(refusal([&] { run::joblog_commands((dir / "other").string(), false, "--resume"); }), "--resume");
    EXPECT_TRUE(run::joblog_commands((dir / "none").string(), false, "--resume").empty());
    fs::remove_all(dir);
}

TEST(RunOutput, PackedJobsAndOrderedTaggedOutput) {
    run::task_result r = result_of("x", run::outcome::ok);
    const run::job_output j = run::unpack(run::pack(r, "out\n", "err\n"));
    EXPECT_EQ(j.out, "out\n");
    EXPECT_EQ(j.err, "err\n");
    EXPECT_EQ(j.record.command_hash, r.command_hash);
    EXPECT_THROW(run::unpack(std::vector<char>(10)), pfarm::error);
    EXPECT_EQ(run::apply_modifier("a/b.c", "/."), "b");

    const fs::path dir = scratch("results");
    const std::vector<std::vector<std::string>> args{{"a", "1"}, {"b/c", "2"}};
    run::output_printer printer({true, false, (dir / "res").string()}, args, 2);
    printer.open();
    printer.add(1, "second\n", "");
    EXPECT_FALSE(fs::exists(dir / "res" / "1" / "b\\_c" / "2" / "2" / "stdout"));  // -k: held for command 0
    printer.add(0, "first\n", "e\n");
    EXPECT_EQ(slurp(dir / "res" / "1" / "a" / "2" / "1" / "stdout"), "first\n");
    EXPECT_EQ(slurp(dir / "res" / "1" / "a" / "2" / "1" / "stderr"), "e\n");
    EXPECT_EQ(slurp(dir / "res" / "1" / "b\\_c" / "2" / "2" / "stdout"), "second\n");
    EXPECT_EQ(slurp(dir / "res" / "1" / "b\\_c" / "2" / "2" / "seq"), "2");
    fs::remove_all(dir);
}

TEST(RunOutput, LineBufferedPiecesTaggedAndInOrderWithKeepOrder) {
    run::job_item item{3, 2, {result_of("x", run::outcome::ok), "", ""}, {12, 5}};
    const std::vector<run::job_item> back = run::unpack_items(run::pack_items({item}));
    ASSERT_EQ(back.size(), 1u);
    EXPECT_EQ(back[0].streamed[0], 12u);
    EXPECT_EQ(back[0].streamed[1], 5u);
    EXPECT_EQ(run::tag_lines("b\nc\n", "t\t", true), "b\nt\tc\n");

    const fs::path dir = scratch("lines");
    const auto printed = [&](const std::string& name) { return slurp(dir / name); };
    const auto fresh = [&](const std::string& name) { return ::open((dir / name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644); };
    const std::vector<std::vector<std::string>> args{{"a"}, {"b"}, {"c"}};
    {  // printed as the pieces come, each line tagged; a piece that continues a line gets no tag at its start
        const int out = fresh("out"), err = fresh("err");
        run::output_printer printer({false, true, "", out, err}, args, 3);
        printer.line(1, 1, "b1\nb2", false);
        printer.line(0, 2, "a-err\n", false);
        printer.line(1, 1, "-rest\n", true);
        EXPECT_EQ(printed("out"), "b\tb1\nb\tb2-rest\n");
        EXPECT_EQ(printed("err"), "a\ta-err\n");
        ::close(out), ::close(err);
    }
    {  // -k: the first command that has not ended prints as its pieces come; the others' are held until their turn
        const int out = fresh("out"), err = fresh("err");
        run::output_printer printer({true, true, "", out, err}, args, 3);
        printer.line(2, 1, "c1\n", false);
        printer.line(1, 1, "b1\n", false);
        printer.line(0, 1, "a1\n", false);
        EXPECT_EQ(printed("out"), "a\ta1\n");  // command 0: live
        printer.add(0, "", "");                // it ended: command 1's held lines, and it is live now
        EXPECT_EQ(printed("out"), "a\ta1\nb\tb1\n");
        printer.line(1, 1, "b2\n", false);
        printer.line(2, 1, "c2\n", false);
        EXPECT_EQ(printed("out"), "a\ta1\nb\tb1\nb\tb2\n");
        printer.add(2, "", "");  // command 2 ended before command 1: held still
        EXPECT_EQ(printed("out"), "a\ta1\nb\tb1\nb\tb2\n");
        printer.add(1, "", "");
        EXPECT_EQ(printed("out"), "a\ta1\nb\tb1\nb\tb2\nc\tc1\nc\tc2\n");
        EXPECT_EQ(printed("err"), "");
        ::close(out), ::close(err);
    }
    fs::remove_all(dir);
}

}  // namespace
