// Command-line options shared by the tools (pfarm-chunks, pfarm-sim, later the apps): one spelling each.
#pragma once

#include "pfarm/sample.hpp"
#include "pfarm/technique.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace pfarm::tools {

/// The technique and its parameters, as the user gave them on the command line.
struct technique_args {
    std::string technique;
    technique_options options;
};

/// Adds --technique and every technique parameter (--min-chunk, --chunk, --factor, --first, --last,
/// --stages, --static-percent, --weights, --run-queue, --k, --overhead-h, --sigma) to `app`. Number lists are
/// parsed by pfarm::parse_numbers (pfarm/emulation.hpp).
/// `with_times` adds --times (pfarm-chunks; the simulator has --task-times instead).
void add_technique_options(CLI::App& app, std::string& technique, technique_options& options, bool with_times);
inline void add_technique_options(CLI::App& app, technique_args& args, bool with_times) {
    add_technique_options(app, args.technique, args.options, with_times);
}

/// Per-worker monitor readings from comma lists (each may be empty); no samples when all three are empty.
/// Throws invalid_argument naming the option whose count differs from `workers`.
std::vector<resource_sample> samples_from(int workers, const std::string& availability, const std::string& latency,
                                          const std::string& benchmark, const char* latency_option = "--latency");

/// The text of `--help`'s technique list: one line per technique with its description.
std::string technique_list();

/// Runs `body`; on pfarm::error or CLI parse error prints "<tool>: <message>" to stderr and returns 2.
int run_tool(const char* tool, CLI::App& app, int argc, char** argv, const std::function<int()>& body);

}  // namespace pfarm::tools
