// pfarm scheduling core: techniques by name.
#pragma once

#include "pfarm/technique.hpp"

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace pfarm {

/// One row of the registry: what `pfarm-chunks --help` prints and the docs list.
struct technique_info {
    std::string name;         ///< registry name, lower case ("gss", "dfss", "awf-b")
    std::string family;       ///< docs page family ("simple", "weighted", "two-phase", "adaptive", ...)
    std::string description;  ///< one line
    std::string parameters;   ///< the options it reads, e.g. "--chunk (required), --min-chunk"
    std::string source;       ///< the publication whose formula it implements
    /// Builds the technique for `workers` workers; validates `options` (throws pfarm::invalid_argument).
    std::function<std::unique_ptr<technique>(const technique_options&, int workers)> make;
};

/// Every registered technique, in a stable documented order. Aliases (wf = dfss) are not listed here.
std::span<const technique_info> techniques();

/// The registry row for `name` (aliases resolved), or pfarm::unknown_name naming "technique" and
/// listing the accepted names.
const technique_info& find_technique(std::string_view name);

/// Builds technique `name` for `workers` workers with `options`. Throws pfarm::unknown_name ("technique") or
/// pfarm::invalid_argument naming the option by its technique_options field ("min_chunk", "weights", "chunk"),
/// never by a command-line flag.
std::unique_ptr<technique> make_technique(std::string_view name, const technique_options& options, int workers);

/// The most tasks a farm, a simulation or a schedule takes: 2^53, so that every count converts to a double exactly
/// and twice it still fits a task_count (the techniques compute with both). More is bad input, not an overflow.
constexpr task_count max_tasks = task_count{1} << 53;

/// Throws invalid_argument naming `argument` unless 1 <= tasks <= max_tasks ("is N; expected >= 1", "is N;
/// expected at most 9007199254740992 (2^53)").
void check_task_count(task_count tasks, const std::string& argument);

/// Checks the options every technique shares (min_chunk >= 1, weights/run_queue/times counts and signs,
/// finite positive values). Called by make_technique; exposed for the tools.
void validate_common_options(const technique_options& options, int workers);

}  // namespace pfarm
