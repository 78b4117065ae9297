// Bad input through the C++ API (docs/reliability.md "Bad input"), under mpiexec. The
// cases are the table below: each calls a farm collectively on every rank with one thing wrong and states what
// every rank must get (the same on every rank): an invalid_argument naming the argument, a worker_error naming the
// task, a pfarm::error whose message names what failed, or success for the edge cases that are not errors (more
// workers than tasks, an empty journal). After each case the work folder must be as before (an output path is
// absent or untouched: no half-written trace, a refused journal left as it was).
//
//   pfarm_badinput_api table WORKDIR      every case of the table (any number of ranks; 1 is the "one rank" run)
//   pfarm_badinput_api worker-exit        a task on a worker rank calls std::exit(3) in the middle of a farm
//   pfarm_badinput_api worker-exit0       ... std::exit(0)
//   pfarm_badinput_api worker-abort       ... std::abort()
//   pfarm_badinput_api farmer-exit        a task on rank 0 (the farmer computes) calls std::exit(3)
// The last four end the process: mpiexec must end the job with a non-zero exit and a message, never hang (the
// table in tests/badinput/cases.txt runs them with a timeout).
#include "../mpi/mpi_check.hpp"

#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/testing.hpp"

#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace {

constexpr pfarm::task_count tasks = 24;
std::string work;  // the work folder (rank 0's)

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void spit(const std::string& name, const std::string& bytes) {
    std::ofstream(fs::path(work) / name, std::ios::binary) << bytes;
}

/// The work folder's files and their bytes (rank 0): what a failed case must leave as it was.
std::map<std::string, std::string> snapshot() {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(work))
        files[fs::relative(e.path(), work).string()] = e.is_regular_file() ? slurp(e.path()) : std::string("<dir>");
    return files;
}

std::string in_work(const std::string& name) { return (fs::path(work) / name).string(); }

/// The fixture files, made by rank 0 before the cases.
void make_fixtures() {
    fs::remove_all(work);
    fs::create_directories(fs::path(work) / "folder");
    spit("existing.csv", "keep me\n");
    spit("garbage.journal", "hello, world\nhow are you\n");
    std::string binary;
    for (int i = 0; i < 256; ++i) binary += static_cast<char>(i);
    spit("binary.journal", binary);
    spit("truncated.journal", std::string("PFARMJ1\n", 8) + std::string(12, '\x01'));  // a header cut short
    spit("a-file", "not a folder\n");
}

/// What a call ended with, on this rank: "ok", "invalid_argument:ARG", "worker_error:TASK", "error:MESSAGE".
std::string outcome(const std::function<void()>& call) {
    try {
        call();
        return "ok";
    } catch (const pfarm::worker_error& e) {
        return "worker_error:" + std::to_string(e.task()) + ":" + e.message();
    } catch (const pfarm::invalid_argument& e) {
        return "invalid_argument:" + e.argument() + ":" + e.message();
    } catch (const pfarm::error& e) {
        return std::string("error:") + e.what();
    } catch (const std::exception& e) {
        return std::string("foreign:") + e.what();
    }
}

/// A farm of `tasks` doubles with options `o`: the shape most cases use.
void plain_farm(const pfarm::farm_options& o) {
    std::vector<double> in(rank_ == 0 ? tasks : 0, 2.0), out(in.size());
    pfarm::farm(MPI_COMM_WORLD, in, out, [](const double& x, double& y) { y = x * x; }, o);
}

struct api_case {
    std::string name;
    /// What every rank must get: "ok", "invalid_argument:ARG", "worker_error:TASK" or "error:TEXT" (a
    /// pfarm::error whose message contains TEXT).
    std::string expect;
    std::function<void()> call;
    /// The outcome comes from a std::bad_alloc that pfarm catches: skipped where operator new never throws it.
    bool needs_bad_alloc = false;
};

/// AddressSanitizer's operator new never throws std::bad_alloc: an allocation beyond its limit (1 TiB) ends the
/// process with a report, by design. A build with it (the sanitize preset) skips the cases that need the throw.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool new_throws_bad_alloc = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool new_throws_bad_alloc = false;
#else
constexpr bool new_throws_bad_alloc = true;
#endif
#else
constexpr bool new_throws_bad_alloc = true;
#endif

pfarm::farm_options with(const std::function<void(pfarm::farm_options&)>& set) {
    pfarm::farm_options o;
    o.schedule.technique = "gss";
    set(o);
    return o;
}

api_case options_case(const std::string& name, const std::string& argument,
                      const std::function<void(pfarm::farm_options&)>& set) {
    return {name, "invalid_argument:" + argument, [o = with(set)] { plain_farm(o); }};
}

std::vector<api_case> table(int ranks) {
    const int workers = ranks == 1 ? 1 : ranks - 1;
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    std::vector<api_case> t;
    // Task counts and the shapes of the buffers.
    t.push_back({"zero_tasks", "invalid_argument:in", [] {
                     std::vector<double> in, out;
                     pfarm::farm(MPI_COMM_WORLD, in, out, [](const double& x, double& y) { y = x; });
                 }});
    t.push_back({"outputs_not_a_multiple", "invalid_argument:out", [] {
                     std::vector<double> in(rank_ == 0 ? 10 : 0), out(rank_ == 0 ? 15 : 0);
                     pfarm::farm(MPI_COMM_WORLD, in, out, [](const double& x, double& y) { y = x; });
                 }});
    t.push_back({"range_reversed", "invalid_argument:range", [] {
                     std::vector<double> out(10);
                     pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{5, -5}, out, [](pfarm::task_count, double& y) { y = 1; });
                 }});
    t.push_back({"range_beyond_a_task_count", "invalid_argument:range", [] {  // last - first overflows
                     std::vector<double> out(10);
                     pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{LLONG_MIN + 1, LLONG_MAX}, out,
                                 [](pfarm::task_count, double& y) { y = 1; });
                 }});
    t.push_back({"range_huge_for_its_outputs", "invalid_argument:out", [] {  // 2^50 tasks, 10 outputs
                     std::vector<double> out(10);
                     pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, 1LL << 50}, out,
                                 [](pfarm::task_count, double& y) { y = 1; });
                 }});
    t.push_back({"range_beyond_2_53_tasks", "invalid_argument:range", [] {
                     std::vector<std::vector<int>> out;
                     pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, 1LL << 60}, out,
                                 [](pfarm::task_count) { return std::vector<int>(1, 1); }, {.schedule = {.technique = "ss"}});
                 }});
    t.push_back({"range_huge_results_of_any_size", "error:out: cannot hold", [] {  // no allocation before the farm
                     std::vector<std::vector<int>> out;
                     pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, 1LL << 50}, out,
                                 [](pfarm::task_count) { return std::vector<int>(1, 1); }, {.schedule = {.technique = "ss"}});
                 }, /*needs_bad_alloc=*/true});
    t.push_back({"more_workers_than_tasks", "ok", [] {
                     std::vector<double> in(rank_ == 0 ? 1 : 0, 3.0), out(in.size());
                     pfarm::farm(MPI_COMM_WORLD, in, out, [](const double& x, double& y) { y = x; }, {.schedule = {.technique = "multi"}});
                     if (rank_ == 0 && out[0] != 3.0) throw pfarm::error("wrong output");
                 }});
    // Techniques and their parameters: unknown, zero, negative, NaN, infinite, contradictory, wrong counts.
    t.push_back(options_case("technique_unknown", "technique", [](auto& o) { o.schedule.technique = "nope"; }));
    t.push_back(options_case("technique_empty", "technique", [](auto& o) { o.schedule.technique = ""; }));
    t.push_back(options_case("min_chunk_zero", "min_chunk", [](auto& o) { o.schedule.parameters.min_chunk = 0; }));
    t.push_back(options_case("min_chunk_negative", "min_chunk", [](auto& o) { o.schedule.parameters.min_chunk = -4; }));
    t.push_back(options_case("css_without_chunk", "chunk", [](auto& o) { o.schedule.technique = "css"; }));
    t.push_back(options_case("chunk_negative", "chunk", [](auto& o) { o.schedule.technique = "css", o.schedule.parameters.chunk = -1; }));
    t.push_back(options_case("factor_nan", "factor", [nan](auto& o) { o.schedule.technique = "fss", o.schedule.parameters.factor = nan; }));
    t.push_back(options_case("factor_inf", "factor", [inf](auto& o) { o.schedule.technique = "fss", o.schedule.parameters.factor = inf; }));
    t.push_back(options_case("k_negative", "k", [](auto& o) { o.schedule.technique = "multi", o.schedule.parameters.k = -1.0; }));
    t.push_back(options_case("static_percent_150", "static_percent",
                             [](auto& o) { o.schedule.technique = "n-gss", o.schedule.parameters.static_percent = 150.0; }));
    t.push_back(options_case("stages_one", "stages", [](auto& o) { o.schedule.technique = "fiss", o.schedule.parameters.stages = 1; }));
    t.push_back(options_case("tss_first_below_last", "first",  // checked when tss starts: agreed before the farm
                             [](auto& o) { o.schedule.technique = "tss", o.schedule.parameters.first = 2, o.schedule.parameters.last = 5; }));
    t.push_back(options_case("weights_wrong_count", "weights", [workers](auto& o) {
        o.schedule.technique = "dgss", o.schedule.parameters.weights.assign(static_cast<std::size_t>(workers) + 3, 1.0);
    }));
    t.push_back(options_case("weights_zero", "weights", [workers](auto& o) {
        o.schedule.technique = "dgss", o.schedule.parameters.weights.assign(static_cast<std::size_t>(workers), 1.0), o.schedule.parameters.weights[0] = 0;
    }));
    t.push_back(options_case("weights_negative", "weights", [workers](auto& o) {
        o.schedule.technique = "wf", o.schedule.parameters.weights.assign(static_cast<std::size_t>(workers), 1.0), o.schedule.parameters.weights.back() = -2;
    }));
    t.push_back(options_case("weights_nan", "weights", [workers, nan](auto& o) {
        o.schedule.technique = "dgss", o.schedule.parameters.weights.assign(static_cast<std::size_t>(workers), nan);
    }));
    // The engine's options.
    t.push_back(options_case("slowdown_below_one", "slowdown", [](auto& o) { o.emulation = pfarm::testing::emulate({0.5}); }));
    t.push_back(options_case("slowdown_nan", "slowdown", [nan](auto& o) { o.emulation = pfarm::testing::emulate({nan}); }));
    t.push_back(options_case("load_change_unknown_rank", "load_changes", [](auto& o) { o.emulation = pfarm::testing::emulate({}, {{99, 0.0, 2.0}}); }));
    t.push_back(options_case("load_change_factor_zero", "load_changes", [](auto& o) { o.emulation = pfarm::testing::emulate({}, {{0, 0.0, 0.0}}); }));
    t.push_back(options_case("monitor_unknown", "monitors", [](auto& o) { o.schedule.monitors = {"nope"}; }));
    t.push_back(options_case("stragglers_not_above_one", "stragglers", [](auto& o) { o.protocol.stragglers = 0.5; }));
    t.push_back(options_case("calibration_span_negative", "calibration_span", [](auto& o) { o.schedule.calibration_span = -0.1; }));
    t.push_back(options_case("calibration_span_nan", "calibration_span", [](auto& o) { o.schedule.calibration_span = std::nan(""); }));
    t.push_back(options_case("masters_negative", "masters", [](auto& o) { o.topology.masters = -1; }));
    if (ranks > 1) {  // one rank runs every task itself, whatever the farmer mode
        t.push_back(options_case("decentralised_with_reclaim", "reclaim",
                                 [](auto& o) { o.topology.farmer = pfarm::farmer_mode::decentralised, o.protocol.reclaim = true; }));
        t.push_back(options_case("decentralised_with_multi", "technique",
                                 [](auto& o) { o.topology.farmer = pfarm::farmer_mode::decentralised, o.schedule.technique = "multi"; }));
        t.push_back(options_case("decentralised_with_journal", "farmer", [](auto& o) {
            o.topology.farmer = pfarm::farmer_mode::decentralised, o.resume.journal = in_work("new.journal");
        }));
        t.push_back(options_case("decentralised_with_side_channel", "side_channel", [](auto& o) {
            o.topology.farmer = pfarm::farmer_mode::decentralised, o.protocol.side_channel = [] { return false; };
        }));
    }
    // Output paths: refused before any task runs, or, when the write fails at the end (a full disk), an error on
    // every rank; never a half-written file (the work folder is compared after each case).
    t.push_back(options_case("trace_is_a_folder", "trace", [](auto& o) { o.output.trace = in_work("folder"); }));
    t.push_back(options_case("trace_in_a_missing_folder", "trace", [](auto& o) { o.output.trace = in_work("no-such/run.csv"); }));
    t.push_back(options_case("trace_under_a_file", "trace", [](auto& o) { o.output.trace = in_work("a-file/run.csv"); }));
    t.push_back(options_case("trace_then_bad_technique", "technique", [](auto& o) {  // the existing trace untouched
        o.output.trace = in_work("existing.csv"), o.schedule.technique = "nope";
    }));
    if (fs::exists("/dev/full")) {
        t.push_back(options_case("trace_on_a_full_disk", "trace", [](auto& o) { o.output.trace = "/dev/full"; }));
        if (ranks > 1)
            t.push_back(options_case("trace_on_a_full_disk_decentralised", "trace", [](auto& o) {
                o.output.trace = "/dev/full", o.topology.farmer = pfarm::farmer_mode::decentralised;
            }));
        // A device is no journal: refused before any task runs.
        t.push_back(options_case("journal_on_a_full_disk", "journal", [](auto& o) { o.resume.journal = "/dev/full"; }));
    }
    // Journals: a folder, garbage, binary, a header cut short, a missing folder; an empty file is a new journal.
    t.push_back(options_case("journal_is_a_folder", "journal", [](auto& o) { o.resume.journal = in_work("folder"); }));
    t.push_back(options_case("journal_garbage", "journal", [](auto& o) { o.resume.journal = in_work("garbage.journal"); }));
    t.push_back(options_case("journal_binary", "journal", [](auto& o) { o.resume.journal = in_work("binary.journal"); }));
    t.push_back(options_case("journal_truncated_header", "journal", [](auto& o) { o.resume.journal = in_work("truncated.journal"); }));
    t.push_back(options_case("journal_new_then_bad_technique", "technique", [](auto& o) {  // no journal left behind
        o.resume.journal = in_work("new.journal"), o.schedule.technique = "nope";
    }));
    t.push_back(options_case("journal_in_a_missing_folder", "journal", [](auto& o) { o.resume.journal = in_work("no-such/j"); }));
    // A resumed farm's trace is in the tasks' own indices and holds only what was computed; a trace that cannot be
    // written then fails every rank, and the journal keeps the results (the next run restores them all).
    t.push_back({"journal_resume_with_trace", "ok", [] {
                     const std::string journal = in_work("resume.journal"), trace = in_work("resume.csv");
                     std::vector<double> out(tasks);
                     pfarm::farm_options o;
                     o.schedule.technique = "gss", o.resume.journal = journal;
                     const std::string first = outcome([&] {
                         pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, out, [](pfarm::task_count i, double& y) {
                             if (i >= 16) throw std::runtime_error("stop");
                             y = static_cast<double>(i);
                         }, {.schedule = {.technique = "ss"}, .resume = {.journal = journal}});
                     });
                     if (first.rfind("worker_error:", 0) != 0) throw pfarm::error("the first run: " + first);
                     o.output.trace = trace;
                     const pfarm::farm_report r = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, out,
                                                              [](pfarm::task_count i, double& y) { y = static_cast<double>(i); }, o);
                     if (rank_ == 0) {
                         const pfarm::trace_file t = pfarm::read_trace(trace);
                         // Tasks 16.. failed in the first run, so the last task was computed now: some chunk ends at
                         // `tasks` in the tasks' own indices (renumbered, they would end at the computed count).
                         pfarm::task_count covered = 0;
                         bool last = false;
                         for (const auto& c : t.chunks) {
                             if (c.first < 0 || c.first + c.count > tasks) throw pfarm::error("a chunk of the trace is out of range");
                             covered += c.count;
                             last = last || c.first + c.count == tasks;
                         }
                         if (r.journaled < 1 || covered != tasks - r.journaled || t.summary.tasks != covered || !last)
                             throw pfarm::error("the trace covers " + std::to_string(covered) + " tasks, " +
                                                std::to_string(r.journaled) + " restored");
                         for (pfarm::task_count i = 0; i < tasks; ++i)
                             if (out[static_cast<std::size_t>(i)] != static_cast<double>(i)) throw pfarm::error("a wrong output");
                     }
                     const std::string full = outcome([&] {  // everything restored: an empty trace, on a full disk
                         pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, out,
                                     [](pfarm::task_count i, double& y) { y = static_cast<double>(i); },
                                     {.schedule = {.technique = "gss"}, .output = {.trace = "/dev/full"}, .resume = {.journal = journal}});
                     });
                     if (full.rfind("invalid_argument:trace:", 0) != 0) throw pfarm::error("the /dev/full run: " + full);
                     if (rank_ == 0) {
                         fs::remove(journal), fs::remove(trace);
                     }
                 }});
    // Worker functions that fail: the farm stops on every rank, naming the task.
    t.push_back({"worker_throws", "worker_error:7", [] {
                     std::vector<double> in(rank_ == 0 ? tasks : 0, 1.0), out(in.size());
                     pfarm::farm(MPI_COMM_WORLD, in, out, [](pfarm::task_count i, const double& x, double& y) {
                         if (i == 7) throw std::runtime_error("seven");
                         y = x;
                     }, {.schedule = {.technique = "ss"}});
                 }});
    t.push_back({"worker_throws_a_non_exception", "worker_error:3", [] {
                     std::vector<double> out(tasks);
                     pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, out, [](pfarm::task_count i, double& y) {
                         if (i == 3) throw 42;
                         y = 1;
                     }, {.schedule = {.technique = "ss"}, .protocol = {.prefetch = true}});
                 }});
    t.push_back({"result_sink_throws", "error:full sink", [] {
                     pfarm::farm_stream(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, [](pfarm::task_count i) { return i; },
                                        [](pfarm::task_count i, const pfarm::task_count&) {
                                            if (i == 5) throw std::runtime_error("full sink");
                                        }, {.schedule = {.technique = "gss"}});
                 }});
    return t;
}

int run_table() {
    if (rank_ == 0) make_fixtures();
    MPI_Barrier(MPI_COMM_WORLD);
    const std::vector<api_case> cases = table(size_);
    int passed = 0, skipped = 0;
    for (const api_case& c : cases) {
        if (c.needs_bad_alloc && !new_throws_bad_alloc) {
            if (rank_ == 0) std::printf("case %-36s skipped: AddressSanitizer's operator new never throws std::bad_alloc\n", c.name.c_str());
            ++skipped;
            continue;
        }
        std::map<std::string, std::string> before;
        if (rank_ == 0) before = snapshot();
        const std::string got = outcome(c.call);
        // The expected prefix: invalid_argument:ARG: / worker_error:TASK: / ok / error:...TEXT...
        bool right;
        if (c.expect == "ok") right = got == "ok";
        else if (c.expect.rfind("error:", 0) == 0) right = got.rfind("error:", 0) == 0 && got.find(c.expect.substr(6)) != std::string::npos;
        else right = got.rfind(c.expect + ":", 0) == 0;
        int everywhere = 0, mine = right ? 1 : 0;
        MPI_Allreduce(&mine, &everywhere, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(right, "%s: got '%s', expected '%s'", c.name.c_str(), got.c_str(), c.expect.c_str());
        bool untouched = true;
        if (rank_ == 0 && c.expect != "ok") {
            const auto after = snapshot();
            untouched = after == before;
            CHECK(untouched, "%s: the work folder changed (%zu entries before, %zu after)", c.name.c_str(), before.size(),
                  after.size());
        }
        if (rank_ == 0) {
            std::printf("case %-36s %-4s %s\n", c.name.c_str(), everywhere == size_ && untouched ? "ok" : "FAIL", got.c_str());
            std::fflush(stdout);
        }
        passed += everywhere == size_ && untouched;
        if (rank_ == 0 && c.expect == "ok") fs::remove(in_work("new.journal"));
    }
    if (rank_ == 0)
        std::printf("%d of %zu cases as expected on all %d ranks (%d skipped)\n", passed,
                    cases.size() - static_cast<std::size_t>(skipped), size_, skipped);
    return verdict("badinput api (C++)");
}

/// A farm whose task 5 ends the process on the rank that runs it (`only_rank`: only there; -1: any rank).
int run_dying(const std::string& how) {
    pfarm::farm_options o;
    o.schedule.technique = "ss";
    o.topology.farmer_computes = how == "farmer-exit";
    const int killer = how == "farmer-exit" ? 0 : -1;
    std::vector<double> out(40);
    pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, 40}, out, [&](pfarm::task_count i, double& y) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        if ((killer < 0 && rank_ != 0 && i >= 5) || (killer == 0 && rank_ == 0)) {
            if (how == "worker-abort") std::abort();
            std::exit(how == "worker-exit0" ? 0 : 3);
        }
        y = 1;
    }, o);
    return verdict("badinput " + how + " (should never get here)") + 1;
}

}  // namespace

int main(int argc, char** argv) {
    pfarm::mpi::environment env(&argc, &argv);
    find_rank();
    const std::string mode = argc > 1 ? argv[1] : "table";
    if (mode == "table") {
        if (argc < 3) {
            if (rank_ == 0) std::fprintf(stderr, "usage: %s table WORKDIR\n", argv[0]);
            return 2;
        }
        work = argv[2];
        return run_table();
    }
    if (mode == "worker-exit" || mode == "worker-exit0" || mode == "worker-abort" || mode == "farmer-exit")
        return run_dying(mode);
    if (rank_ == 0) std::fprintf(stderr, "%s: unknown mode '%s'\n", argv[0], mode.c_str());
    return 2;
}
