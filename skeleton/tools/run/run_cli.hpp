// pfarm-run's command line: its own options beside the farm's (GNU parallel's, and pfarm-run's), GNU parallel's
// options it refuses by name, the checks every rank makes before MPI starts, and the jobs the words after the
// options make (input sources and a template, or a commands file). No MPI.
#pragma once

#include "run_inputs.hpp"

#include "pfarm/farm.hpp"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace pfarm::tools::run {

/// pfarm-run's own settings beside the farm's.
struct settings {
    std::string output;            ///< --output DIR: each command's stdout and stderr in files there
    bool quiet = false;            ///< --quiet: discard them (and no progress unless --progress is given)
    bool ungroup = false;          ///< -u: the commands write to the rank's own stdout and stderr
    bool line_buffer = false;      ///< --line-buffer: rank 0 prints the commands' lines as they come
    std::string joblog, joblog_full;
    std::string timeout;           ///< --timeout S or N%
    int retries = 0;               ///< --retries N: runs in all (0 and 1: one)
    bool retry_failed = false;     ///< --retry-failed (with --journal)
    bool resume = false, resume_failed = false;
    std::string halt = "never";    ///< --halt
    bool halt_on_error = false;    ///< --halt-on-error: --halt soon,fail=1
    bool dry_run = false, json = false;
    bool keep_order = false, tag = false;
    std::string results;           ///< --results DIR
    std::vector<std::string> arg_files;  ///< -a FILE
    std::optional<std::string> colsep;
    std::string delimiter;         ///< -d: the values' delimiter in files and standard input
    bool null = false;             ///< -0: NUL-delimited
    bool no_run_if_empty = false;  ///< -r: skip values of nothing but blanks
    std::string tagstring;         ///< --tagstring STR: lines tagged with STR expanded (arguments unquoted)
    std::string jobs = "1";        ///< --jobs N|+N|-N|N% per rank (parse_jobs)
    std::vector<std::string> env;  ///< --env NAME
    bool eta = false, bar = false;  ///< --eta, --bar: the farm's progress, plain or automatic
    bool group = false, will_cite = false;  ///< accepted for GNU parallel's command lines; no effect
};

/// Registers pfarm-run's options and the farm's (add_farm_options; --quiet becomes pfarm-run's own) on `app`.
void add_run_options(CLI::App& app, settings& s, farm_options& options);

/// Why GNU parallel's option `word` is refused ("it ..."), or nullptr when pfarm-run does not know it as one.
const char* refused_option(const std::string& word);

/// The shell commands run under, as GNU parallel picks it: $PARALLEL_SHELL, else $SHELL, else /bin/sh.
std::string command_shell();

/// Whether `words` are a commands file: one word naming a regular file that is not executable (GNU parallel would
/// try to run it as the command and fail), or "-", with no -a source.
bool commands_file(const std::vector<std::string>& words, const settings& s);

/// What the command line alone decides, checked by every rank alike before MPI starts (bad input costs no MPI
/// start-up). Throws invalid_argument naming the argument.
void check_command_line(const settings& s, const farm_options& options, const std::vector<std::string>& words);

/// The commands a rank runs at once for --jobs `text`, given the CPUs the rank may run on: N (N >= 1); +N and -N,
/// that many more or fewer than `cpus`; N%, N percent of `cpus` (rounded down); the last three at least 1. GNU
/// parallel's 0 (as many as possible) and a file holding the number are refused: throws invalid_argument naming
/// --jobs.
int parse_jobs(const std::string& text, int cpus);

/// The CPUs this process may run on (its affinity mask: the cores an MPI launcher bound the rank to, or the node's).
int rank_cpus();

/// The jobs of the command line (rank 0 reads the sources or the commands file): commands and arguments.
job_list read_jobs(const settings& s, const std::vector<std::string>& words);

}  // namespace pfarm::tools::run
