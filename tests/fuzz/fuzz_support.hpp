// What every pfarm fuzz target shares: the one way to report a broken invariant (abort, so that libFuzzer
// saves the input), the contract of a parser's refusal (a pfarm::invalid_argument naming the argument the
// caller passed, nothing else escapes), and a scratch file for the readers that take a path.
#pragma once

#include "pfarm/error.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <unistd.h>

namespace pfarm::fuzz {

/// A broken invariant: says which and aborts (libFuzzer writes the input to crash-<sha1>).
[[noreturn]] inline void fail(const std::string& what) {
    std::fprintf(stderr, "pfarm fuzz: invariant broken: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

inline void check(bool holds, const std::string& what) {
    if (!holds) fail(what);
}

/// Runs `parse`: its value when it accepts the input; empty when it refuses it the documented way, a
/// pfarm::invalid_argument whose argument() is `argument` and whose what() is "argument: message" with a message.
/// Any other exception (a std::invalid_argument from std::stod, an internal_error, a json exception) is a finding.
template <class F>
auto accepts(std::string_view argument, F&& parse) -> std::optional<decltype(parse())> {
    try {
        return parse();
    } catch (const pfarm::invalid_argument& e) {
        check(e.argument() == argument, "refusal names '" + e.argument() + "', not '" + std::string(argument) + "': " + e.what());
        check(!e.message().empty(), "refusal of '" + std::string(argument) + "' says nothing");
        check(std::string_view(e.what()).starts_with(std::string(argument) + ": "), std::string("what() is ") + e.what());
        return std::nullopt;
    } catch (const pfarm::error& e) {
        fail(std::string("a pfarm::error that is not invalid_argument: ") + e.what());
    } catch (const std::exception& e) {
        fail(std::string("a foreign exception escaped the parser: ") + e.what());
    }
}

/// A scratch file of this process (under $TMPDIR, else /tmp), rewritten with `bytes` on every call: for the
/// readers that take a path.
/// The file is removed when the process exits normally (a crash leaves it: the input is in libFuzzer's artifact).
inline const std::string& scratch_file(const std::uint8_t* bytes, std::size_t size, std::string_view suffix = "") {
    struct removed_at_exit {
        std::string path;
        ~removed_at_exit() {
            if (!path.empty()) std::remove(path.c_str());
        }
    };
    static removed_at_exit file;
    std::string& path = file.path;
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir && *dir ? dir : "/tmp") + "/pfarm-fuzz-" + std::to_string(getpid()) + std::string(suffix);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes), static_cast<std::streamsize>(size));
    out.close();
    if (!out) fail("cannot write the scratch file " + path);
    return path;
}

}  // namespace pfarm::fuzz
