// pfarm: the one error family (DESIGN.md principle 6).
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
        : error(argument + ": " + what_is_wrong), argument_(argument) {}
    /// The offending argument, as the user spelt it ("--chunk", "weights", "tasks").
    const std::string& argument() const noexcept { return argument_; }

private:
    std::string argument_;
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
