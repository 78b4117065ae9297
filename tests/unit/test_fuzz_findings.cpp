// Regression tests of what the fuzz targets (tests/fuzz) found in pfarm's parsers, one test per finding
// (docs/reliability.md, "Fuzzing"): each input was accepted, wrapped around, overflowed or exhausted memory
// before its fix, and must now be refused with a pfarm::invalid_argument naming the argument and the file.
#include "test_support.hpp"

#include "mandelbrot_kernel.hpp"
#include "options.hpp"

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

}  // namespace
