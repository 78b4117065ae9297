// Regression tests of what the fuzz targets (tests/fuzz) found, one test per finding (docs/reliability.md,
// "Fuzzing"): in pfarm's parsers, each input is one a parser could accept, wrap around, overflow on or exhaust
// memory with, and must be refused with a pfarm::invalid_argument naming the argument and the file; in the farmer
// session (F1-F3), each message order is one that could make it throw internal_error, and must end the farm as it
// should.
#include "test_support.hpp"

#include "mandelbrot_kernel.hpp"
#include "options.hpp"

#include "pfarm/farmer_session.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/simulator.hpp"
#include "pfarm/trace.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <fstream>
#include <string>

namespace {

using pfarm::testing::expect_invalid;

std::string write_file(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + "pfarm_test_fuzz_findings_" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

void expect_words(const std::string& message, const std::string& words) {
    EXPECT_NE(message.find(words), std::string::npos) << "expected '" << words << "' in: " << message;
}

// T1: a rank below INT_MIN was cast to int before the range check: -4294967295 read as rank 1.
TEST(FuzzFindings, TraceRankBelowIntMinIsRefusedNotWrapped) {
    const std::string csv = write_file("rank.csv", "rank,first,count,sent,started,finished,received,calibration\n"
                                                   "-4294967295,0,1,0,0,0,0,0\n");
    const std::string json = write_file("rank.json", R"({"chunks":[{"rank":-4294967295,"first":0,"count":1,"sent":0,)"
                                                     R"("started":0,"finished":0,"received":0,"calibration":false}]})");
    for (const auto& path : {csv, json}) {
        const auto message = expect_invalid([&] { pfarm::read_trace(path, "--trace"); }, "--trace");
        expect_words(message, path);
        expect_words(message, "'rank' is -4294967295; expected >= 0");
    }
}

// T2: the counts were summed without an overflow check (signed overflow, undefined behaviour) to compare them with
// the summary's tasks.
TEST(FuzzFindings, TraceCountsBeyondLongLongAreRefused) {
    const std::string path =
        write_file("overflow.csv", "# pfarm trace: source farm, 1 tasks\n"
                                   "rank,first,count,sent,started,finished,received,calibration\n"
                                   "1,0,9223372036854775807,0,0,0,0,0\n1,0,9223372036854775807,0,0,0,0,0\n");
    const auto message = expect_invalid([&] { pfarm::read_trace(path, "--trace"); }, "--trace");
    expect_words(message, "the chunks hold more than 9223372036854775807 tasks in all");
}

// T3: a CSV trace's technique name may hold any byte; written back as JSON, a byte beyond ASCII made a file that
// read_trace refuses (not UTF-8). The writer refuses such a name, so that what it writes reads back.
TEST(FuzzFindings, TraceWriterRefusesATechniqueNameBeyondAscii) {
    pfarm::trace_summary s;
    s.technique = "mu\x8elti";
    pfarm::chunk_trace c;
    c.count = 1;
    const auto message = expect_invalid(
        [&] { pfarm::write_trace(::testing::TempDir() + "pfarm_test_fuzz_findings_name.json", s, {c}, "--trace"); },
        "--trace");
    expect_words(message, "the technique's name 'mu?lti' holds");
}

// C1: a cost read from a trace is finished - started, which overflowed to infinity for finite ends.
TEST(FuzzFindings, CostOfAnInfiniteDurationIsRefused) {
    const std::string path = write_file("costs.csv", "rank,first,count,sent,started,finished,received,calibration\n"
                                                     "1,0,1,0,-1e308,1e308,0,0\n");
    const auto message = expect_invalid([&] { pfarm::sim::load_costs(path, "--costs"); }, "--costs");
    expect_words(message, path + ": chunk 0 lasts inf");
    expect_words(message, "expected a finite time");
}

// P1: load_platform left the monitors' readings unchecked; simulate() refused them later without the file's name.
TEST(FuzzFindings, PlatformMonitorReadingsAreCheckedWithTheirFileAndField) {
    const struct {
        const char* reading;
        const char* words;
    } cases[] = {{R"("availability": 2)", "monitors[0].availability' is 2; expected a value in (0, 1]"},
                 {R"("availability": 0)", "monitors[0].availability' is 0; expected a value in (0, 1]"},
                 {R"("latency": -1)", "monitors[0].latency' is -1; expected a finite value >= 0"},
                 {R"("benchmark": 0)", "monitors[0].benchmark' is 0; expected a finite value > 0"}};
    for (const auto& c : cases) {
        const std::string path =
            write_file("platform.json", std::string(R"({"task_times": [1], "monitors": [{)") + c.reading + "}]}");
        const auto message = expect_invalid([&] { pfarm::sim::load_platform(path, "--platform"); }, "--platform");
        expect_words(message, path);
        expect_words(message, c.words);
    }
}

// O1: pfarm-chunks --workers 2000000000 --availability 1 sized the readings by --workers before comparing the
// list's count with it: a 270 GB allocation (std::bad_alloc, or the fuzzer's out-of-memory).
TEST(FuzzFindings, ReadingsOfAHugeWorkerCountAreRefusedBeforeAllocating) {
    const auto message =
        expect_invalid([] { pfarm::tools::samples_from(INT_MAX, "1", "", ""); }, "--availability");
    expect_words(message, "has 1 values; expected one per worker (2147483647)");
}

// M1: pfarm-mandelbrot --window read numbers with std::stod, which takes hexadecimal ("0x1p1" is 2) where every
// other option of pfarm refuses it.
TEST(FuzzFindings, MandelbrotWindowKeepsToTheOneNumberGrammar) {
    namespace mb = pfarm::apps::mandelbrot;
    for (const char* bad : {"0x1p1,4,-1,1", "-2,2,-1,0x1", "-2,2,-1,1e999"}) {
        mb::params p;
        expect_invalid([&] { mb::parse_window(bad, p); }, "--window");
    }
    mb::params p;
    mb::parse_window(" -2, 2 ,-1.5,1.5", p);  // blanks around the items, as in every list of pfarm
    EXPECT_EQ(p.xmin, -2.0);
    EXPECT_EQ(p.ymax, 1.5);
}

// --- the farmer session -----------------------------------------------------------------------------------

using pfarm::farmer_action;
using pfarm::reply_message;
using pfarm::request_message;

/// A farmer session of `tasks` tasks split statically over two workers, with reclaim and/or prefetch.
pfarm::farmer_session two_workers(pfarm::task_count tasks, bool reclaim, bool prefetch) {
    return pfarm::farmer_session(tasks, 2, pfarm::make_technique("static", {}, 2),
                                 {.prefetch = prefetch, .reclaim = reclaim, .keep_records = true});
}

request_message ask(pfarm::chunk done = {}, double seconds = 0.0) {
    request_message m;
    m.done = done;
    m.seconds = seconds;
    return m;
}

request_message message(request_message::kind what, pfarm::chunk done = {}) {
    request_message m;
    m.what = what;
    m.done = done;
    return m;
}

/// The one reply of `actions` to `worker` (fails the test when there is none).
reply_message reply_to(const std::vector<farmer_action>& actions, int worker) {
    for (const auto& a : actions)
        if (a.what == farmer_action::kind::send && a.worker == worker) return a.reply;
    ADD_FAILURE() << "no reply to worker " << worker;
    return {};
}

// F1: a victim's `released` (its own MPI tag) overtaken by the results of the chunk it shrank must not make the
// session throw "returned results for [0, +3), not its chunk [0, +5)": the results say what it gave back.
TEST(FuzzFindings, VictimResultsThatOvertakeItsReleaseAreTheRelease) {
    auto s = two_workers(10, true, false);
    ASSERT_EQ(reply_to(s.on_message(0, ask(), 0.0), 0).work.count, 5);
    ASSERT_EQ(reply_to(s.on_message(1, ask(), 0.0), 1).work.first, 5);
    // Worker 1 ends its chunk early and becomes a thief: worker 0 is asked for tasks back.
    const reply_message reclaim = reply_to(s.on_message(1, ask({5, 5}, 0.1), 0.1), 0);
    ASSERT_EQ(reclaim.what, reply_message::kind::reclaim);
    // Worker 0 gives back [3, 5), computes [0, 3), and its results reach the farmer before its `released`.
    std::vector<farmer_action> actions;
    ASSERT_NO_THROW(actions = s.on_message(0, ask({0, 3}, 0.3), 0.3));
    bool delivered = false;
    for (const auto& a : actions)
        if (a.what == farmer_action::kind::deliver) delivered = a.worker == 0 && a.results.first == 0 && a.results.count == 3;
    EXPECT_TRUE(delivered);
    const reply_message thief = reply_to(actions, 1);
    EXPECT_EQ(thief.what, reply_message::kind::assign);
    EXPECT_EQ(thief.work.first, 3);
    EXPECT_EQ(thief.work.count, 2);
    EXPECT_EQ(reply_to(actions, 0).what, reply_message::kind::stop);
    EXPECT_FALSE(s.over());  // worker 0's `released` is still to come
    ASSERT_NO_THROW(s.on_message(0, message(request_message::kind::released, {3, 2}), 0.31));
    EXPECT_EQ(reply_to(s.on_message(1, ask({3, 2}, 0.05), 0.35), 1).what, reply_message::kind::stop);
    EXPECT_TRUE(s.over());
    EXPECT_EQ(s.outcome().what, pfarm::farm_outcome::kind::ok);
    EXPECT_EQ(s.decisions().completed_tasks(), 10);
    EXPECT_EQ(s.tasks_of(0), 3);
    EXPECT_EQ(s.tasks_of(1), 7);
}

// F2: with prefetch, worker 0's request ahead reaches a farmer aborting for worker 1's failure: answered abort,
// worker 0 is retired; its own failure, sent before it read that abort, is ignored (not "a message from worker 0,
// which has ended").
TEST(FuzzFindings, FailureOfAWorkerAbortedAlreadyIsIgnored) {
    auto s = two_workers(10, false, true);
    s.on_message(0, ask(), 0.0);
    s.on_message(1, ask(), 0.0);
    request_message failure = message(request_message::kind::failure);
    failure.failed_task = 7;
    failure.text = "worker 1's task threw";
    s.on_message(1, failure, 0.1);
    EXPECT_TRUE(s.aborting());
    EXPECT_EQ(reply_to(s.on_message(0, ask(), 0.2), 0).what, reply_message::kind::abort);  // its request ahead
    EXPECT_TRUE(s.over());
    failure.failed_task = 2;
    failure.text = "worker 0's task threw";
    std::vector<farmer_action> actions;
    ASSERT_NO_THROW(actions = s.on_message(0, failure, 0.3));
    EXPECT_TRUE(actions.empty());
    EXPECT_EQ(s.outcome().worker, 1);  // the first failure is the one reported
    EXPECT_EQ(s.outcome().task, 7);
}

// F3: a victim fails while a reclaim is on its way to it; aborted and retired on its failure, it then answers the
// reclaim (nothing given), which is ignored (not "a message from worker 0, which has ended").
TEST(FuzzFindings, AnswerToAReclaimAfterTheVictimsFailureIsIgnored) {
    auto s = two_workers(10, true, false);
    s.on_message(0, ask(), 0.0);
    s.on_message(1, ask(), 0.0);
    ASSERT_EQ(reply_to(s.on_message(1, ask({5, 5}, 0.1), 0.1), 0).what, reply_message::kind::reclaim);
    request_message failure = message(request_message::kind::failure);
    failure.failed_task = 1;
    failure.text = "worker 0's task threw";
    const auto& actions = s.on_message(0, failure, 0.2);
    EXPECT_EQ(reply_to(actions, 0).what, reply_message::kind::abort);
    EXPECT_EQ(reply_to(actions, 1).what, reply_message::kind::abort);  // the thief, waiting
    EXPECT_TRUE(s.over());
    ASSERT_NO_THROW(s.on_message(0, message(request_message::kind::released, {5, 0}), 0.3));
    EXPECT_EQ(s.outcome().what, pfarm::farm_outcome::kind::task_failed);
}

}  // namespace
