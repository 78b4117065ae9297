// pfarm-run: the list of commands a run farms from a commands file, one per line (the `:::` sources and templates
// are run_inputs.hpp's). Pure text handling: no MPI, no processes.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pfarm::tools::run {

/// The commands of a commands file's text: one per line; empty and blank lines and lines whose first non-blank
/// character is '#' are skipped ('\r' counts as blank); a line's trailing '\r's are dropped (a file written on
/// Windows). Throws
/// pfarm::invalid_argument naming `argument` when a line holds a NUL byte, or when no command is left
/// ("holds no commands"); `where` names the file in the message.
std::vector<std::string> parse_commands(std::string_view text, const std::string& where, const std::string& argument);

/// Reads commands file `path` ("-": standard input) and parses it (parse_commands). Throws invalid_argument
/// naming `argument` when it cannot be read.
std::vector<std::string> read_commands(const std::string& path, const std::string& argument);

}  // namespace pfarm::tools::run
