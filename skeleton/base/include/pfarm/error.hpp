// pfarm: the one error family: every error pfarm throws is a pfarm::error, and bad input names the argument.
//
// How an invalid_argument names its argument (docs/using-pfarm.md, "Errors"), one convention per API:
// - The C++ library (pfarm::core, pfarm::sim, pfarm::calibration, pfarm::monitors, farm()) names the argument by
//   its C++ name: the parameter, or the field of the options struct that holds it ("min_chunk", "weights",
//   "task_times", "load_changes", "tasks", "technique"), never a command-line flag. An element of a list keeps
//   the list's name, with the element in the message ("task_times": "value 3 is -1; ..."). Where one call would
//   name two things alike, the one outside technique_options is qualified by what holds it ("platform.overhead"
//   beside technique_options::overhead; "monitors.latency", a scripted reading, beside platform::latency).
// - A function that takes the argument's name as a parameter (the trace reader and writer, the number-list and
//   load-change parsers, load_platform, load_costs) names what its caller passed; a value read from the
//   environment names the variable ("PFARM_SLOWDOWN").
// - The C API (pfarm.h) reports the C names: pfarm_options' fields and pfarm_run's parameters (pfarm.h lists
//   where they differ from the C++ names).
// - The command-line tools name the flag ("--min-chunk"): they rename the library's names in one place, where
//   they print the error (pfarm::tools::flag_for, skeleton/tools/cli/options.hpp).
#pragma once

#include <stdexcept>
#include <string>

namespace pfarm {

/// Base of every exception pfarm throws.
class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Bad input: the message names the argument and the accepted range.
class invalid_argument : public error {
public:
    invalid_argument(const std::string& argument, const std::string& what_is_wrong)
        : error(argument + ": " + what_is_wrong), argument_(argument), message_(what_is_wrong) {}
    /// The offending argument: its C++ name in the library ("min_chunk", "weights", "tasks"), its C name in the C
    /// API, the flag in the tools ("--min-chunk"); see the top of this file.
    const std::string& argument() const noexcept { return argument_; }
    /// What is wrong with it, without its name: what() is argument() + ": " + message().
    const std::string& message() const noexcept { return message_; }

private:
    std::string argument_;
    std::string message_;
};

/// A name that is not in a registry (technique, monitor, platform shape).
class unknown_name : public invalid_argument {
public:
    using invalid_argument::invalid_argument;
};

/// A broken internal invariant: a bug in pfarm, never the user's fault.
class internal_error : public error {
public:
    using error::error;
};

}  // namespace pfarm
