// pfarm-run: the list of commands a run farms, from a commands file (one per line) or from a GNU-parallel-style
// grid (`TEMPLATE ::: a b ::: 1 2`, the cross product). Pure text handling: no MPI, no processes.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pfarm::tools::run {

/// The most commands a grid may expand to (a typo in a grid should not fill the memory).
inline constexpr std::size_t max_grid_commands = 100'000'000;

/// The commands of a commands file's text: one per line; empty and blank lines and lines whose first non-blank
/// character is '#' are skipped ('\r' counts as blank); a line's trailing '\r's are dropped (a file written on
/// Windows). Throws
/// pfarm::invalid_argument naming `argument` when a line holds a NUL byte, or when no command is left
/// ("holds no commands"); `where` names the file in the message.
std::vector<std::string> parse_commands(std::string_view text, const std::string& where, const std::string& argument);

/// Reads commands file `path` ("-": standard input) and parses it (parse_commands). Throws invalid_argument
/// naming `argument` when it cannot be read.
std::vector<std::string> read_commands(const std::string& path, const std::string& argument);

/// A grid: the command template and its groups of values (`TEMPLATE ::: a b ::: 1 2`).
struct grid {
    std::string command;
    std::vector<std::vector<std::string>> groups;
};

/// Whether `words` (the command line after pfarm-run's options) hold a grid: a word ":::" (or GNU parallel's
/// "::::", ":::+", "::::+", refused by split_grid).
bool has_grid(std::span<const std::string> words);

/// Splits `words` into a grid: the words before the first ":::" joined by spaces are the template, each ":::" starts
/// a group of values. Throws invalid_argument naming ":::" when a group has no values or a separator is one of GNU
/// parallel's that pfarm-run lacks ("::::" arguments from a file, ":::+" linked groups), and naming "COMMAND" when
/// no template comes before the first ":::".
grid split_grid(std::span<const std::string> words);

/// The grid's commands, in GNU parallel's order: the first group varies slowest. In the template, `{N}` (N >= 1)
/// is the value of group N and `{}` all the values separated by spaces, each value shell-quoted (shell_quote); a
/// template without `{}` or `{N}` gets the values appended, separated by spaces. Any other brace is literal (awk's
/// '{print $1}', ${HOME}). Throws invalid_argument naming ":::" when `{N}` names a group the grid lacks, when the
/// template uses one of GNU parallel's replacement strings pfarm-run lacks ({.} {/} {//} {/.} {#} {%}, with or
/// without a group number), or when the product exceeds max_grid_commands.
std::vector<std::string> expand_grid(const grid& g);

/// The refusals of expand_grid, without expanding (every rank checks the command line alike).
void check_grid(const grid& g);

/// `value` as one word for /bin/sh: unchanged when it holds only characters the shell takes literally
/// (letters, digits and `_@%+=:,./-`, not empty), else in single quotes (a quote inside written '\'').
std::string shell_quote(std::string_view value);

}  // namespace pfarm::tools::run
