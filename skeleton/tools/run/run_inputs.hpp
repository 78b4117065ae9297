// pfarm-run: GNU parallel's input sources and replacement strings. The words after pfarm-run's options split into
// the command template and the input sources (`:::` values, `::::` files, `:::+`/`::::+` linked to the previous
// source, `-a FILE`, standard input when there is none), `--colsep` columns, and the jobs: the cross product of the
// sources (the first varying slowest), each expanded into its command with `{}`, `{.}`, `{/}`, `{//}`, `{/.}`, `{#}`,
// `{%}` and their positional forms. Pure text handling: no MPI, no processes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pfarm::tools::run {

/// The most jobs the sources may expand to (a typo should not fill the memory).
inline constexpr std::size_t max_jobs = 100'000'000;

/// One input source: values given on the command line, or the lines of a file ("-": standard input).
struct input_source {
    bool from_file = false;
    std::string path;                 ///< from_file: the file
    std::vector<std::string> values;  ///< otherwise: the values
    bool linked = false;              ///< `:::+` / `::::+`: paired with the previous source line by line
};

/// The command line after pfarm-run's options: the template's words and the sources after it.
struct job_words {
    std::string command;  ///< the words before the first separator, joined by spaces (empty: the values are the commands)
    std::vector<input_source> sources;
};

/// Whether `word` is one of GNU parallel's source separators (`:::`, `:::+`, `::::`, `::::+`).
bool is_separator(std::string_view word);

/// Splits `words` (what follows the options) into the template and the sources; `arg_files` (`-a FILE`, in order)
/// come first. Throws invalid_argument naming the separator when one has nothing after it.
job_words split_words(const std::vector<std::string>& words, const std::vector<std::string>& arg_files);

/// Each source's rows (one per value or line; a row is its columns: one without a column separator), the files read
/// (standard input once, whatever number of sources name it). Throws invalid_argument naming `::::` or `stdin` when
/// a file cannot be read, `--colsep` when it is not a valid regular expression.
/// How values are read: `colsep` splits them into columns; `delimiter` ends a value read from a file or standard
/// input (default: a newline; GNU parallel's -d, -0); `skip_empty` drops values of nothing but blanks (-r).
struct read_settings {
    std::optional<std::string> colsep;
    std::string delimiter = "\n";
    bool skip_empty = false;
};
std::vector<std::vector<std::vector<std::string>>> read_sources(const job_words& w, const read_settings& how);

/// GNU parallel's -d argument: C escapes (\n, \t, \r, \0, \\, \xHH, \NNN octal) become their bytes. Throws
/// invalid_argument naming --delimiter when it is empty.
std::string parse_delimiter(const std::string& text);

/// A parsed command template.
class command_template {
public:
    /// Parses `text`; throws invalid_argument naming the replacement string for one pfarm-run lacks (`{= ... =}`,
    /// GNU parallel's perl expressions) or a positional one beyond `columns` (the columns each job has).
    command_template(const std::string& text, std::size_t columns);
    /// The command of job `seq` (from 1) with arguments `args`, each shell-quoted unless not `quote` (--tagstring). `{%}` becomes `slot_marker`, which the rank that runs
    /// the job replaces with its slot (fill_slot).
    std::string expand(const std::vector<std::string>& args, std::size_t seq, bool quote = true) const;
    bool uses_slot() const noexcept { return uses_slot_; }

private:
    struct piece {
        enum kind_t { literal, all, positional, seq, slot } kind = literal;
        std::string text;      ///< literal
        long position = 0;     ///< positional: from 1, or from the end when negative
        std::string modifier;  ///< "", ".", "/", "//", "/."
    };
    std::vector<piece> pieces_;
    bool no_command_ = false;  ///< no template: the arguments, unquoted, are the command
    bool uses_slot_ = false;
};

/// The marker `{%}` leaves in a command until the rank running it knows its slot.
inline constexpr std::string_view slot_marker = "\x01{%}\x01";

/// `command` with every slot_marker replaced by `slot`.
std::string fill_slot(std::string command, long slot);

/// The jobs: the arguments of each (the cross product of the sources, linked ones paired, the first source varying
/// slowest) and their commands. Throws invalid_argument naming `:::` beyond max_jobs.
struct job_list {
    std::vector<std::vector<std::string>> args;
    std::vector<std::string> commands;
};
job_list make_jobs(const std::string& command, const std::vector<std::vector<std::vector<std::string>>>& rows);

/// `value` as one shell word, as GNU parallel quotes it: unchanged when it holds only letters, digits and `-_.+/`,
/// else in single quotes, a quote inside written '"'"' (the empty string is '').
std::string gnu_quote(std::string_view value);

/// GNU parallel's modifiers: `.` drops the extension, `/` keeps the base name, `//` the directory (Perl's dirname),
/// `/.` the base name without extension.
std::string apply_modifier(const std::string& value, std::string_view modifier);

}  // namespace pfarm::tools::run
