// Fuzzes the tools' command-line parsing of a technique and its parameters as pfarm-chunks does it
// (skeleton/tools/cli/options.hpp: add_technique_options, samples_from, run_tool's error path), then the technique
// those options build (pfarm/registry.hpp make_technique) through schedule_round_robin. The input is the
// argument list, one argument per line.
// Invariants: parsing ends in a CLI11 parse error, a pfarm::invalid_argument whose argument the tool shows as a
// flag ("--min-chunk", never a C++ name), or a schedule; no other exception escapes; a schedule hands out
// chunks of at least 1 and at least min(--min-chunk, what remains), each to a worker that exists, contiguous
// from task 0, adding up to --iterations exactly.
#include "fuzz_support.hpp"

#include "options.hpp"

#include "pfarm/registry.hpp"
#include "pfarm/round_robin.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace {

using pfarm::fuzz::check;
using pfarm::fuzz::fail;

constexpr pfarm::tools::flag_name chunks_flags[] = {
    {"iterations", "--iterations"}, {"workers", "--workers"},  {"availability", "--availability"},
    {"latency", "--latency"},       {"benchmark", "--benchmark"},
};

// Bounds of the schedule run (the parse itself sees any value): a loop this size schedules in microseconds.
constexpr pfarm::task_count max_iterations = 4000;
constexpr int max_workers = 64;

void check_schedule(const pfarm::round_robin_schedule& s, pfarm::task_count iterations, int workers,
                    pfarm::task_count min_chunk, const std::string& technique) {
    pfarm::task_count next = 0;
    for (const auto& h : s.handouts) {
        const std::string where = technique + ": chunk [" + std::to_string(h.work.first) + ", +" +
                                  std::to_string(h.work.count) + ") to worker " + std::to_string(h.worker);
        check(h.worker >= 0 && h.worker < workers, where + ": no such worker");
        check(h.work.first == next, where + ": expected it to start at " + std::to_string(next));
        check(h.work.count >= 1 && h.work.count <= iterations - next, where + ": beyond what remains");
        check(h.calibration || h.work.count >= std::min(min_chunk, iterations - next), where + ": below min_chunk");
        next += h.work.count;
    }
    check(next == iterations, technique + ": the chunks add up to " + std::to_string(next) + ", not " +
                                  std::to_string(iterations));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> args{"pfarm-chunks"};
    std::string current;
    for (std::size_t i = 0; i < size; ++i) {
        if (data[i] == '\n') args.push_back(std::move(current)), current.clear();
        else current += static_cast<char>(data[i]);
    }
    if (!current.empty()) args.push_back(std::move(current));
    if (args.size() > 64) return 0;
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());

    CLI::App app{"pfarm-chunks"};
    pfarm::tools::technique_args t;
    pfarm::task_count iterations = 0;
    int workers = 0;
    std::string availability, latency, benchmark;
    app.add_option("--iterations,-I", iterations)->required();
    app.add_option("--workers,-p", workers)->required();
    pfarm::tools::add_technique_options(app, t, true);
    app.add_option("--availability", availability);
    app.add_option("--latency", latency);
    app.add_option("--benchmark", benchmark);
    try {
        app.parse(static_cast<int>(argv.size()), argv.data());
        const auto samples = pfarm::tools::samples_from(workers, availability, latency, benchmark);
        if (iterations > max_iterations || workers > max_workers) {
            // Only whether the options are valid: the registry's checks, without a schedule of this size. A
            // technique holds a few numbers per worker, so a worker count in the billions asks for that much
            // memory: what a huge count should give is the bad-input table's (tests/badinput), not a parser's.
            if (workers <= 4096) (void)pfarm::make_technique(t.technique, t.options, workers);
            return 0;
        }
        const auto schedule = pfarm::schedule_round_robin(t.technique, iterations, workers, t.options, samples);
        check_schedule(schedule, iterations, workers, t.options.min_chunk, t.technique);
    } catch (const CLI::ParseError&) {
        // CLI11's own refusal (an unknown flag, a value that is not a number): run_tool prints it, exit 2
    } catch (const pfarm::invalid_argument& e) {
        const std::string flag = pfarm::tools::flag_for(e.argument(), chunks_flags);
        check(flag.starts_with("--"), std::string("the tool would name no flag: ") + e.what());
        check(!e.message().empty(), std::string("an empty message: ") + e.what());
    } catch (const pfarm::error& e) {
        fail(std::string("not an invalid_argument: ") + e.what());
    } catch (const std::exception& e) {
        fail(std::string("a foreign exception escaped: ") + e.what());
    }
    return 0;
}
