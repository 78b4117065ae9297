// The trace module (pfarm/trace.hpp): both formats written and read back exactly, the CSV schema byte for byte,
// the sample traces of tests/data (farm CSV and JSON, legacy pfarm-sim CSV), and the failures: an unwritable path
// or a full disk when writing; a missing, empty, binary, garbage or truncated file when reading, each an
// invalid_argument naming the argument passed in.
#include "test_support.hpp"

#include "pfarm/error.hpp"
#include "pfarm/trace.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace {

using pfarm::testing::expect_invalid;

std::string temp_path(const std::string& name) { return ::testing::TempDir() + "pfarm_test_trace_" + name; }

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void spit(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

std::string data(const std::string& name) { return std::string(PFARM_SOURCE_DIR) + "/tests/data/" + name; }

pfarm::trace_summary full_summary() {
    pfarm::trace_summary s;
    s.source = pfarm::trace_source::farm;
    s.technique = "multi";
    s.ranks = 3;
    s.workers = 2;
    s.tasks = 4;
    s.makespan = 1.5;
    s.percent_imbalance = 2.5;
    s.cov = 0.125;
    s.k = 2.0;
    return s;
}

/// Four tasks in three chunks, with times that do not print short in decimal and a partial monitor reading.
std::vector<pfarm::chunk_trace> some_chunks() {
    pfarm::chunk_trace a{1, 0, 1, 0.0, 0.25, 1.0, 1.5, true, {}};
    a.sample.availability = 0.5;
    a.sample.run_queue = 2.0;
    pfarm::chunk_trace b{2, 1, 2, 0.1, 0.1 + 0.2, 1.0 / 3.0, 0.7000000000000001, false, {}};
    b.sample.load1 = 9.18;
    b.sample.latency = 3e-5;
    b.sample.benchmark = 1234.5678;
    pfarm::chunk_trace c{1, 3, 1, 1.5, 1.4999999, 12345678.9, 12345679.0, false, {}};
    return {a, b, c};
}

void expect_same(const pfarm::trace_summary& a, const pfarm::trace_summary& b) {
    EXPECT_EQ(a.source, b.source);
    EXPECT_EQ(a.technique, b.technique);
    EXPECT_EQ(a.ranks, b.ranks);
    EXPECT_EQ(a.workers, b.workers);
    EXPECT_EQ(a.tasks, b.tasks);
    EXPECT_EQ(a.makespan, b.makespan);
    EXPECT_EQ(a.percent_imbalance, b.percent_imbalance);
    EXPECT_EQ(a.cov, b.cov);
    EXPECT_EQ(a.k, b.k);
}

void expect_same(const std::vector<pfarm::chunk_trace>& a, const std::vector<pfarm::chunk_trace>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].rank, b[i].rank) << i;
        EXPECT_EQ(a[i].first, b[i].first) << i;
        EXPECT_EQ(a[i].count, b[i].count) << i;
        EXPECT_EQ(a[i].sent, b[i].sent) << i;  // exactly: numbers are written in their shortest exact form
        EXPECT_EQ(a[i].started, b[i].started) << i;
        EXPECT_EQ(a[i].finished, b[i].finished) << i;
        EXPECT_EQ(a[i].received, b[i].received) << i;
        EXPECT_EQ(a[i].calibration, b[i].calibration) << i;
        EXPECT_EQ(a[i].sample.availability, b[i].sample.availability) << i;
        EXPECT_EQ(a[i].sample.run_queue, b[i].sample.run_queue) << i;
        EXPECT_EQ(a[i].sample.load1, b[i].sample.load1) << i;
        EXPECT_EQ(a[i].sample.latency, b[i].sample.latency) << i;
        EXPECT_EQ(a[i].sample.benchmark, b[i].sample.benchmark) << i;
    }
}

TEST(Trace, BothFormatsReadBackExactly) {
    for (const auto source : {pfarm::trace_source::farm, pfarm::trace_source::simulator}) {
        for (const char* name : {"round.csv", "round.json"}) {
            auto s = full_summary();
            s.source = source;
            if (source == pfarm::trace_source::simulator) s.ranks.reset();
            const std::string path = temp_path(name);
            pfarm::write_trace(path, s, some_chunks());
            const auto t = pfarm::read_trace(path);
            EXPECT_EQ(t.format, std::string(name).ends_with(".json") ? pfarm::trace_format::json : pfarm::trace_format::csv);
            expect_same(t.summary, s);
            expect_same(t.chunks, some_chunks());
        }
    }
}

TEST(Trace, AnEmptySummaryAndNoChunksReadBackEmpty) {
    for (const char* name : {"bare.csv", "bare.json"}) {
        const std::string path = temp_path(name);
        pfarm::write_trace(path, {}, {});
        const auto t = pfarm::read_trace(path);
        expect_same(t.summary, pfarm::trace_summary{});
        EXPECT_TRUE(t.chunks.empty());
    }
}

// The one schema, byte for byte: the summary comment, the header and the rows. Changing it breaks every reader
// of traces (pfarm-plot, pfarm-sim --costs, the scripts of benchmarks/): update docs/traces.md with it.
TEST(Trace, CsvSchemaByteForByte) {
    const std::string path = temp_path("schema.csv");
    pfarm::write_trace(path, full_summary(), some_chunks());
    EXPECT_EQ(slurp(path),
              "# pfarm trace: source farm, technique multi, 3 ranks, 2 workers, 4 tasks, makespan 1.5 s, "
              "imbalance 2.5 %, cov 0.125, k 2\n"
              "rank,first,count,sent,started,finished,received,calibration,availability,run_queue,load1,latency,benchmark\n"
              "1,0,1,0,0.25,1,1.5,1,0.5,2,,,\n"
              "2,1,2,0.1,0.30000000000000004,0.3333333333333333,0.7000000000000001,0,,,9.18,3e-05,1234.5678\n"
              "1,3,1,1.5,1.4999999,12345678.9,12345679,0,,,,,\n");
    auto s = full_summary();
    s.source = pfarm::trace_source::simulator;
    s.ranks.reset();
    s.k.reset();
    pfarm::write_trace(path, s, some_chunks());
    const std::string text = slurp(path);
    EXPECT_EQ(text.substr(0, text.find('\n')),
              "# pfarm trace: source simulator, technique multi, 2 workers, 4 tasks, makespan 1.5, imbalance 2.5 %, cov 0.125");
}

TEST(Trace, JsonSchema) {
    const std::string path = temp_path("schema.json");
    auto s = full_summary();
    s.tasks = 1;
    pfarm::write_trace(path, s, {some_chunks()[0]});
    EXPECT_EQ(slurp(path),
              "{\"summary\":{\"source\":\"farm\",\"technique\":\"multi\",\"ranks\":3,\"workers\":2,\"tasks\":1,"
              "\"makespan\":1.5,\"percent_imbalance\":2.5,\"cov\":0.125,\"k\":2},\n"
              "\"chunks\":[\n"
              "{\"rank\":1,\"first\":0,\"count\":1,\"sent\":0,\"started\":0.25,\"finished\":1,\"received\":1.5,"
              "\"calibration\":true,\"availability\":0.5,\"run_queue\":2}\n"
              "]}\n");
}

// The sample traces of tests/data: a farm CSV and JSON of the format before the one schema's summary items
// (no source, no workers), and a legacy pfarm-sim CSV.
TEST(Trace, ReadsTheSampleTraces) {
    const auto csv = pfarm::read_trace(data("trace-farm.csv"));
    EXPECT_EQ(csv.format, pfarm::trace_format::csv);
    EXPECT_EQ(csv.summary.source, pfarm::trace_source::farm);
    EXPECT_EQ(csv.summary.technique, "multi");
    EXPECT_EQ(csv.summary.ranks, 3);
    EXPECT_FALSE(csv.summary.workers);
    EXPECT_EQ(csv.summary.tasks, 200);
    EXPECT_EQ(csv.summary.makespan, 0.189714812);
    EXPECT_EQ(csv.summary.percent_imbalance, 2.14191552);
    EXPECT_EQ(csv.summary.cov, 0.0108255143);
    ASSERT_FALSE(csv.chunks.empty());
    EXPECT_EQ(csv.chunks[0].rank, 1);
    EXPECT_TRUE(csv.chunks[0].calibration);
    EXPECT_EQ(csv.chunks[0].started, 0.000667481);
    EXPECT_EQ(csv.chunks[0].sample.run_queue, 8.0);
    EXPECT_FALSE(csv.chunks[0].sample.latency);

    const auto json = pfarm::read_trace(data("trace-farm.json"));
    EXPECT_EQ(json.format, pfarm::trace_format::json);
    EXPECT_EQ(json.summary.technique, "gss");
    EXPECT_EQ(json.summary.tasks, 200);
    EXPECT_FALSE(json.summary.k);
    ASSERT_EQ(json.chunks.size(), 8u);
    EXPECT_EQ(json.chunks[0].count, 100);
    EXPECT_EQ(json.chunks[0].received, 0.117473405);
    EXPECT_EQ(json.chunks[0].sample.load1, 9.64);

    const auto sim = pfarm::read_trace(data("trace-sim.csv"));
    EXPECT_EQ(sim.format, pfarm::trace_format::legacy_simulator_csv);
    EXPECT_EQ(sim.summary.source, pfarm::trace_source::simulator);
    ASSERT_GE(sim.chunks.size(), 4u);
    EXPECT_EQ(sim.chunks[3].rank, 0);
    EXPECT_EQ(sim.chunks[3].first, 3);
    EXPECT_EQ(sim.chunks[3].count, 46);
    EXPECT_EQ(sim.chunks[3].sent, 4.0);  // start
    EXPECT_EQ(sim.chunks[3].started, 4.0);
    EXPECT_EQ(sim.chunks[3].finished, 50.0);  // end
    EXPECT_EQ(sim.chunks[3].received, 50.0);
}

/// Reads `path` with `argument` and expects an invalid_argument naming it whose message holds `words`.
void expect_refused(const std::string& path, const std::string& argument, const std::string& words) {
    const auto message = expect_invalid([&] { pfarm::read_trace(path, argument); }, argument);
    EXPECT_NE(message.find(words), std::string::npos) << "expected '" << words << "' in: " << message;
    EXPECT_NE(message.find(path), std::string::npos) << "the message does not name the file: " << message;
}

TEST(Trace, MissingEmptyBinaryAndGarbageFilesAreRefused) {
    expect_refused(temp_path("no-such-dir/none.csv"), "--costs", "cannot open the trace");
    const std::string folder = temp_path("folder");
    std::filesystem::create_directories(folder);
    expect_refused(folder, "--trace", "is a folder");
    const std::string path = temp_path("bad.csv");
    spit(path, "");
    expect_refused(path, "--costs", "the trace is empty");
    spit(path, " \n\r\n\t\n");
    expect_refused(path, "--trace", "the trace is empty");
    spit(path, std::string("\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0", 20));
    expect_refused(path, "--costs", "binary");
    spit(path, "\xff\xfe\x80\x81,\x90\n\x01\x02\n");
    expect_refused(path, "--trace", "not a pfarm trace");
    spit(path, "hello, world\nhow are you\n");
    expect_refused(path, "--costs", "not a pfarm trace");
    spit(path, "# pfarm trace: source farm\n# nothing else\n");
    expect_refused(path, "--trace", "no header line");
    spit(path, "{\"hello\": 1}\n");
    expect_refused(path, "--trace", "not a pfarm trace");
    spit(path, "[1, 2]\n");
    expect_refused(path, "--trace", "not a pfarm trace");
}

TEST(Trace, TruncatedTracesAreRefused) {
    for (const char* name : {"cut.csv", "cut.json"}) {
        const std::string path = temp_path(name);
        pfarm::write_trace(path, full_summary(), some_chunks());
        const std::string whole = slurp(path);
        const bool json = std::string(name).ends_with(".json");
        // Cut anywhere after the first line (short of the final line break alone): every cut is refused.
        for (std::size_t size = whole.find('\n') + 1; size + 1 < whole.size(); size += 7) {
            spit(path, whole.substr(0, size));
            const auto message = expect_invalid([&] { pfarm::read_trace(path, "--costs"); }, "--costs");
            EXPECT_NE(message.find(path), std::string::npos) << message;
            if (json) EXPECT_NE(message.find("not valid JSON"), std::string::npos) << size << ": " << message;
        }
        if (json) continue;
        // Cut after a whole row: the counts no longer add up to the summary's tasks.
        spit(path, whole.substr(0, whole.rfind('\n', whole.size() - 2) + 1));
        expect_refused(path, "--costs", "a truncated or incomplete trace");
        // Cut inside the last row.
        spit(path, whole.substr(0, whole.size() - 3));
        expect_refused(path, "--costs", "does not end with a line break");
    }
}

TEST(Trace, MalformedRowsNameTheLineOrElement) {
    const std::string header =
        "rank,first,count,sent,started,finished,received,calibration,availability,run_queue,load1,latency,benchmark\n";
    const std::string path = temp_path("rows.csv");
    spit(path, header + "1,0,1,0,0.5,abc,1,0,,,,,\n");
    expect_refused(path, "--trace", ":2: column 'finished': 'abc' is not a number");
    spit(path, header + "1,0,1,0,0.5,1e999,1,0,,,,,\n");
    expect_refused(path, "--trace", ":2: column 'finished': '1e999' is out of range");
    spit(path, header + "1,0,1,0,0.5,nan,1,0,,,,,\n");
    expect_refused(path, "--trace", ":2: column 'finished': 'nan' is not a finite number");
    spit(path, header + "1,0,1,0,0.5,1,1,0,,,,\n");
    expect_refused(path, "--trace", ":2: 12 fields; the header (line 1) has 13");
    spit(path, header + "1,0,0,0,0.5,1,1,0,,,,,\n");
    expect_refused(path, "--trace", ":2: 'count' is 0; expected >= 1");
    spit(path, header + "1,0,1,0,0.5,0.25,1,0,,,,,\n");
    expect_refused(path, "--trace", ":2: the chunk finishes (0.25) before it starts (0.5)");
    spit(path, header + "1.5,0,1,0,0.5,1,1,0,,,,,\n");
    expect_refused(path, "--trace", ":2: column 'rank': '1.5' is not an integer");
    spit(path, header + "1,0,1,0,0.5,1,1,maybe,,,,,\n");
    expect_refused(path, "--trace", ":2: column 'calibration': 'maybe' is not 0 or 1");
    spit(path, "rank,first,count,sent,started,finished,calibration\n1,0,1,0,0.5,1,0\n");
    expect_refused(path, "--trace", ":1: the header has no column 'received'");
    spit(path, "# pfarm trace: source cloud\n" + header);
    expect_refused(path, "--trace", ":1: summary item 'source cloud'");
    spit(path, "# pfarm trace: technique ss, many tasks\n" + header);
    expect_refused(path, "--trace", "'many' is not a count");

    const std::string json = temp_path("rows.json");
    spit(json, R"({"chunks":[{"rank":1,"first":0,"count":1,"sent":0,"finished":1,"received":1,"calibration":false}]})");
    expect_refused(json, "--costs", ": chunks[0]: \"started\" is missing or not a number");
    spit(json, R"({"chunks":[{"rank":1,"first":0,"count":1,"sent":0,"started":0,"finished":1,"received":1}]})");
    expect_refused(json, "--costs", ": chunks[0]: \"calibration\" is missing");
    spit(json, R"({"chunks":[{"rank":-1,"first":0,"count":1,"sent":0,"started":0,"finished":1,"received":1,"calibration":false}]})");
    expect_refused(json, "--costs", ": chunks[0]: 'rank' is -1; expected >= 0");
    spit(json, R"({"summary":{"workers":-2},"chunks":[]})");
    expect_refused(json, "--costs", ": summary: \"workers\" is -2; expected >= 0");
    spit(json, R"({"summary":{"ranks":"three"},"chunks":[]})");
    expect_refused(json, "--costs", ": summary: \"ranks\" is missing or not an integer");
    spit(json, R"({"summary":{"tasks":2},"chunks":[{"rank":1,"first":0,"count":1,"sent":0,"started":0,"finished":1,"received":1,"calibration":false}]})");
    expect_refused(json, "--costs", "the chunks hold 1 tasks but the summary says 2");
}

TEST(Trace, TheWriterFailsLoudly) {
    // An unwritable path.
    const auto message = expect_invalid(
        [] { pfarm::write_trace(temp_path("no-such-dir/run.csv"), full_summary(), some_chunks(), "--trace"); }, "--trace");
    EXPECT_NE(message.find("cannot open"), std::string::npos) << message;
    const std::string folder = temp_path("folder.json");
    std::filesystem::create_directories(folder);
    expect_invalid([&] { pfarm::write_trace(folder, full_summary(), some_chunks()); }, "trace");
    // A full disk: the write or the flush fails, and says so.
    if (std::filesystem::exists("/dev/full")) {
        const auto full = expect_invalid([] { pfarm::write_trace("/dev/full", full_summary(), some_chunks()); }, "trace");
        EXPECT_NE(full.find("writing failed (No space left on device)"), std::string::npos) << full;
    }
    // A write that fails part-way (here its temporary file cannot be made) leaves an existing trace as it was and
    // no temporary file behind.
    {
        const std::string kept = temp_path("kept.csv");
        spit(kept, "keep me\n");
        std::filesystem::create_directories(kept + ".tmp");
        expect_invalid([&] { pfarm::write_trace(kept, full_summary(), some_chunks(), "--trace"); }, "--trace");
        std::ifstream in(kept);
        std::string line;
        std::getline(in, line);
        EXPECT_EQ(line, "keep me");
        std::filesystem::remove(kept + ".tmp");
        pfarm::write_trace(kept, full_summary(), some_chunks(), "--trace");  // and a write that succeeds replaces it
        EXPECT_EQ(pfarm::read_trace(kept).chunks.size(), some_chunks().size());
        EXPECT_FALSE(std::filesystem::exists(kept + ".tmp"));
    }
    // Data that would not read back is refused before the file is touched.
    const std::string path = temp_path("refused.csv");
    spit(path, "keep me\n");
    auto wrong = some_chunks();
    wrong[1].count = 0;
    expect_invalid([&] { pfarm::write_trace(path, full_summary(), wrong, "--trace"); }, "--trace");
    wrong = some_chunks();
    wrong[2].finished = std::numeric_limits<double>::quiet_NaN();
    expect_invalid([&] { pfarm::write_trace(path, full_summary(), wrong, "--trace"); }, "--trace");
    wrong = some_chunks();
    wrong[0].sample.latency = std::numeric_limits<double>::infinity();
    expect_invalid([&] { pfarm::write_trace(path, full_summary(), wrong, "--trace"); }, "--trace");
    wrong = some_chunks();
    wrong.pop_back();  // 3 tasks for a summary of 4
    expect_invalid([&] { pfarm::write_trace(path, full_summary(), wrong, "--trace"); }, "--trace");
    for (const char* technique : {"a,b", "a b", "a\"b", "", "tab\there"}) {
        auto s = full_summary();
        s.technique = technique;
        expect_invalid([&] { pfarm::write_trace(path, s, some_chunks(), "--trace"); }, "--trace");
    }
    auto s = full_summary();
    s.makespan = std::numeric_limits<double>::infinity();
    expect_invalid([&] { pfarm::write_trace(path, s, some_chunks(), "--trace"); }, "--trace");
    EXPECT_EQ(slurp(path), "keep me\n");
}

}  // namespace
