// pfarm-run: the commands' output as GNU parallel groups it. A worker captures a command's stdout and stderr and
// sends them to rank 0 with its record (one message: pack/unpack); rank 0 prints each command's output whole, in
// one write per stream (no line of one command is ever torn by another's), as the commands end or in their order
// (-k), each line tagged with its arguments (--tag), or writes it into GNU parallel's --results layout. With
// --line-buffer rank 0 prints each piece of whole lines as it comes instead (with -k: the first unfinished command's
// as they come, the others' held until it is their turn). No MPI.
#pragma once

#include "run_records.hpp"

#include <span>
#include <string>
#include <vector>

namespace pfarm::tools::run {

/// A finished command as it travels to rank 0: its record, then its stdout and stderr.
struct job_output {
    task_result record;
    std::string out, err;
};

/// A finished command with the farm's task it ran for and the slot that ran it ({%}): several travel together in
/// one task's result when a rank runs commands at once (--jobs), and after the farm those still running then.
struct job_item {
    task_count task = 0;  ///< the farm's task
    long slot = 1;        ///< {%}: from 1
    job_output job;
    /// --line-buffer: bytes of stdout and stderr its lines carried to rank 0 (every attempt's), so that rank 0 knows
    /// when all have come: they travel apart from the record
    std::uint64_t streamed[2] = {0, 0};
};

/// The bytes of `items` (a task's result: the commands that ended on the rank while it ran, any number).
std::vector<char> pack_items(const std::vector<job_item>& items);
/// Back from those bytes; throws pfarm::error when they are not packed items.
std::vector<job_item> unpack_items(std::span<const char> bytes);

/// The bytes of `j` (the farm's result of its task).
std::vector<char> pack(const task_result& record, const std::string& out, const std::string& err);
/// Back from those bytes; throws pfarm::error when they are not a packed job (a short message).
job_output unpack(std::span<const char> bytes);

/// How rank 0 shows the commands' output.
struct output_settings {
    bool keep_order = false;  ///< -k: in the commands' order
    bool tag = false;         ///< --tag: each line starts with the command's arguments and a tab
    std::string results;      ///< --results DIR: DIR/1/VALUE/2/VALUE.../{stdout,stderr,seq} instead of printing
    int out_fd = 1, err_fd = 2;  ///< where the commands' stdout and stderr are printed
};

/// Rank 0's printer of the commands' output.
class output_printer {
public:
    /// `args`: each command's arguments (for --tag and --results); `tasks`: the number of commands.
    output_printer(output_settings s, const std::vector<std::vector<std::string>>& args, std::size_t tasks);

    /// Creates the --results folder; throws invalid_argument naming --results when it cannot.
    void open();
    /// Command `task` ended with this output: printed now, or once the commands before it are (-k).
    void add(std::size_t task, std::string out, std::string err);
    /// Command `task` has no output in this run (restored from the journal, never started): -k goes past it.
    void skip(std::size_t task);
    /// --line-buffer: a piece of whole lines of command `task`'s stream (1 stdout, 2 stderr), tagged (--tag) unless
    /// `mid_line` (it continues a line): printed now, or with -k held until the commands before it have ended (add or
    /// skip); the command's add() then comes with its output empty.
    void line(std::size_t task, int stream, const std::string& text, bool mid_line);

private:
    void flush();
    void emit(std::size_t task, const std::string& out, const std::string& err);
    std::string tagged(std::size_t task, const std::string& text) const;
    std::string tag_of(std::size_t task) const;  ///< --tag: the command's arguments, separated by spaces

    output_settings s_;
    const std::vector<std::vector<std::string>>& args_;
    std::vector<char> done_;  ///< -k: 0 pending, 1 no output, 2 output held
    std::vector<std::pair<std::string, std::string>> held_;  ///< -k: output waiting for the commands before it
    std::size_t next_ = 0;
};

/// `text` with `tag` at the start of each of its lines (`mid_line`: but the first, which continues a line).
std::string tag_lines(const std::string& text, const std::string& tag, bool mid_line = false);

/// Writes all of `text` to file descriptor `fd` (one write unless the system splits it); throws pfarm::error.
void write_all(int fd, const std::string& text, const char* what);

}  // namespace pfarm::tools::run
