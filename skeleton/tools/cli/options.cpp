// Command-line options shared by the tools: the technique's options, monitor readings, the technique list and
// the tools' error handling (options.hpp).
#include "options.hpp"

#include "pfarm/emulation.hpp"
#include "pfarm/error.hpp"
#include "pfarm/registry.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iostream>
#include <sstream>

namespace pfarm::tools {

void add_technique_options(CLI::App& app, std::string& technique, technique_options& o, bool with_times) {
    app.add_option("--technique,-t", technique, "scheduling technique (see the list below)")->required();
    app.add_option("--min-chunk", o.min_chunk, "no chunk below K except the last (default 1)");
    app.add_option("--chunk", o.chunk, "css chunk size K");
    app.add_option("--factor", o.factor, "factoring ratio x of fss/dfss (default 2)");
    app.add_option("--first", o.first, "tss first chunk F (default floor(I/(2p)))");
    app.add_option("--last", o.last, "tss last chunk L (default 1)");
    app.add_option("--stages", o.stages, "fiss stages sigma (default 3)");
    app.add_option("--static-percent", o.static_percent, "alpha of the two-phase schemes, 0-100 (default 80)");
    app.add_option("--k", o.k, "pin multi's installment factor k");
    app.add_option_function<std::string>(
        "--calibration", [&o](const std::string& s) { o.calibration = parse_calibration_mode(s); },
        "multi's calibration: times (default), univariate, multivariate");
    app.add_option("--overhead-h", o.overhead, "fsc, awf-d, awf-e: scheduling overhead h per chunk, in task-time units");
    app.add_option("--sigma", o.sigma, "fsc: standard deviation of task times, in task-time units");
    app.add_option_function<std::string>(
        "--weights", [&o](const std::string& s) { o.weights = parse_numbers(s, "--weights"); },
        "worker powers w1,...,wP (weighted and two-phase schemes)");
    app.add_option_function<std::string>(
        "--run-queue", [&o](const std::string& s) { o.run_queue = parse_numbers(s, "--run-queue"); },
        "run-queue lengths q1,...,qP (non-dedicated mode, A_j = V_j/Q_j)");
    if (with_times)
        app.add_option_function<std::string>(
            "--times", [&o](const std::string& s) { o.times = parse_numbers(s, "--times"); },
            "per-task time of each worker t1,...,tP (adaptive techniques; default equal)");
}

std::vector<resource_sample> samples_from(int workers, const std::string& availability, const std::string& latency,
                                          const std::string& benchmark, const char* latency_option) {
    std::vector<resource_sample> samples;
    if (availability.empty() && latency.empty() && benchmark.empty()) return samples;
    // Sized by the lists, once their counts match `workers`: never by `workers` alone (--workers 2000000000).
    // Each reading within the range a monitor reports it in (pfarm/sample.hpp): a reading outside it is bad input,
    // whether or not the technique reads it.
    const auto fill = [&](const std::string& text, const char* argument, std::optional<double> resource_sample::*field,
                          bool (*in_range)(double), const char* range) {
        if (text.empty()) return;
        const auto values = parse_numbers(text, argument);
        if (static_cast<long>(values.size()) != workers)
            throw invalid_argument(argument, "has " + std::to_string(values.size()) + " values; expected one per worker (" +
                                                 std::to_string(workers) + ")");
        for (std::size_t i = 0; i < values.size(); ++i)
            if (!std::isfinite(values[i]) || !in_range(values[i])) {
                std::ostringstream value;
                value << values[i];
                throw invalid_argument(argument, "of worker " + std::to_string(i) + " is " + value.str() + "; expected " + range);
            }
        samples.resize(values.size());
        for (std::size_t i = 0; i < values.size(); ++i) samples[i].*field = values[i];
    };
    fill(availability, "--availability", &resource_sample::availability, [](double a) { return a > 0.0 && a <= 1.0; },
         "a value in (0, 1]");
    fill(latency, latency_option, &resource_sample::latency, [](double l) { return l >= 0.0; }, "a value >= 0 (seconds)");
    fill(benchmark, "--benchmark", &resource_sample::benchmark, [](double b) { return b > 0.0; }, "a value > 0");
    return samples;
}

std::string technique_list() {
    std::ostringstream out;
    out << "Techniques:\n";
    for (const auto& t : techniques()) {
        out << "  " << t.name << std::string(t.name.size() < 12 ? 12 - t.name.size() : 1, ' ') << t.description;
        if (!t.parameters.empty()) out << " [" << t.parameters << "]";
        out << "\n";
    }
    out << "  wf          alias of dfss\n";
    return out.str();
}

std::span<const flag_name> shared_flags() {
    static constexpr flag_name table[] = {
        // technique_options (add_technique_options), and "technique" (the registry's unknown_name)
        {"technique", "--technique"},
        {"min_chunk", "--min-chunk"},
        {"chunk", "--chunk"},
        {"factor", "--factor"},
        {"first", "--first"},
        {"last", "--last"},
        {"stages", "--stages"},
        {"static_percent", "--static-percent"},
        {"weights", "--weights"},
        {"run_queue", "--run-queue"},
        {"times", "--times"},
        {"k", "--k"},
        {"calibration", "--calibration"},
        {"overhead", "--overhead-h"},
        {"sigma", "--sigma"},
        // farm_options (add_farm_options)
        {"slowdown", "--slowdown"},
        {"load_changes", "--load-change"},
        {"monitors", "--monitors"},
        {"trace", "--trace"},
        {"journal", "--journal"},
        {"farmer", "--farmer"},
        {"victims", "--victims"},
        {"masters", "--masters"},
        {"master_technique", "--master-technique"},
        {"farmer_computes", "--farmer-computes"},
        {"prefetch", "--prefetch"},
        {"reclaim", "--reclaim"},
        {"stragglers", "--stragglers"},
        {"calibration_span", "--calibration-span"},
        {"on_task_error", "--on-task-error"},
        {"on_worker_loss", "--on-worker-loss"},
    };
    return table;
}

std::string flag_for(std::string_view argument, std::span<const flag_name> overrides) {
    for (const flag_name& f : overrides)
        if (f.argument == argument) return std::string(f.flag);
    for (const flag_name& f : shared_flags())
        if (f.argument == argument) return std::string(f.flag);
    return std::string(argument);
}

std::string tool_message(const invalid_argument& e, std::span<const flag_name> overrides) {
    return flag_for(e.argument(), overrides) + ": " + e.message();
}

namespace {
/// `tool: text` on standard error in one write, so that the ranks of an MPI tool that fail together print whole
/// lines (each rank's line stays one piece through mpiexec), never interleaved characters.
void print_error(const char* tool, const std::string& text) {
    const std::string line = std::string(tool) + ": " + text + "\n";
    std::cerr.write(line.data(), static_cast<std::streamsize>(line.size()));
    std::cerr.flush();
}
}  // namespace

int run_tool(const char* tool, CLI::App& app, int argc, char** argv, const std::function<int()>& body,
             std::span<const flag_name> overrides) {
    try {
        app.parse(argc, argv);
        const int code = body();
        // What the tool printed must have reached standard output (a full disk): never a silent success. (Ranks
        // other than 0 of an app print nothing: their std::cout has no buffer.)
        if (std::cout.rdbuf() != nullptr) {
            errno = 0;
            std::cout.flush();
            if (!std::cout) {
                const int e = errno;
                print_error(tool, std::string("standard output: writing failed (") + (e ? std::strerror(e) : "an I/O error") + ")");
                return 2;
            }
        }
        return code;
    } catch (const CLI::CallForHelp&) {
        std::cout << app.help();
        return 0;
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);
        print_error(tool, e.what());
        return 2;
    } catch (const pfarm::invalid_argument& e) {
        print_error(tool, tool_message(e, overrides));
        return 2;
    } catch (const pfarm::error& e) {
        print_error(tool, e.what());
        return 2;
    }
}

}  // namespace pfarm::tools
