// Command-line options shared by the tools and the apps (pfarm-chunks, pfarm-sim, farm_cli.hpp): one spelling each.
#pragma once

#include "pfarm/error.hpp"
#include "pfarm/sample.hpp"
#include "pfarm/technique.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <span>
#include <string>
#include <string_view>
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

/// A library argument name (pfarm::invalid_argument::argument(): the C++ name, "min_chunk") and the flag a tool
/// sets it with ("--min-chunk"). The library names arguments by their C++ names and the tools by their flags
/// (pfarm/error.hpp); this is where one becomes the other.
struct flag_name {
    std::string_view argument;
    std::string_view flag;
};

/// The one table: the C++ names of what the shared options set (add_technique_options, --times, add_farm_options)
/// and their flags. A tool passes its own flags as overrides (pfarm-sim: "task_times" is --task-times).
std::span<const flag_name> shared_flags();

/// The flag of library argument `argument`: from `overrides` first, then shared_flags(); a name in neither (a
/// flag already, "--bars"; an environment variable, "PFARM_SLOWDOWN") is returned as it is.
std::string flag_for(std::string_view argument, std::span<const flag_name> overrides = {});

/// The tool's message for `e`: "<flag>: <what is wrong>", the argument named by flag_for.
std::string tool_message(const invalid_argument& e, std::span<const flag_name> overrides = {});

/// Runs `body`; on pfarm::error or CLI parse error prints "<tool>: <message>" to stderr and returns 2. A
/// pfarm::invalid_argument's message starts with the flag (tool_message with `overrides`).
int run_tool(const char* tool, CLI::App& app, int argc, char** argv, const std::function<int()>& body,
             std::span<const flag_name> overrides = {});

}  // namespace pfarm::tools
