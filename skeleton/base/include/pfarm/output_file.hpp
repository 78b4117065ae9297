// pfarm: the one way pfarm writes an output file (traces, the apps' images, data and reports, the tools' files):
// checked before the run without touching what is there, then written whole or not at all (docs/reliability.md,
// "Bad input").
//
// - check_output_path(): before any work, that the file can be written: its folder exists, it is not a folder, it
//   opens for writing. An existing file is left as it is (opened for appending, never truncated) and a file that
//   did not exist is not left behind.
// - write_output_file(): the bytes go to PATH.tmp, which is renamed to PATH once written, flushed and closed; on
//   any failure (a full disk) PATH.tmp is removed and PATH is left as it was, and the error names the argument.
//   A path that exists and is not a regular file (a device such as /dev/null or /dev/full, a pipe, a symbolic link)
//   is written in place: nothing can be renamed over it; a failure is still an error.
#pragma once

#include "pfarm/error.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <system_error>

namespace pfarm {

namespace detail {
inline std::string cannot_write(const std::string& noun, const std::string& path, const std::string& why) {
    return "cannot write " + (noun.empty() ? std::string() : noun + " ") + "'" + path + "': " + why;
}
}  // namespace detail

/// Throws invalid_argument naming `argument` unless `path` can be written; `noun` ("the trace") goes into the
/// message: "cannot write the trace 'PATH': cannot open it (No such file or directory)".
inline void check_output_path(const std::string& path, const std::string& argument, const std::string& noun = "") {
    if (path.empty()) throw invalid_argument(argument, "is empty; expected a file name");
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw invalid_argument(argument, "'" + path + "' is a directory; expected a file name");
    const bool existed = std::filesystem::exists(std::filesystem::symlink_status(path, ec));
    errno = 0;
    std::ofstream probe(path, std::ios::binary | std::ios::app);  // never truncates
    if (!probe)
        throw invalid_argument(argument, detail::cannot_write(noun, path, std::string("cannot open it (") + std::strerror(errno) + ")"));
    probe.close();
    if (!existed) std::filesystem::remove(path, ec);
}

/// Writes what `write` puts on the stream to `path`, whole or not at all (see the top of this file). Throws
/// invalid_argument naming `argument` when the file cannot be opened, written, flushed, closed or renamed; an
/// exception from `write` itself leaves nothing behind either and is passed on.
inline void write_output_file(const std::string& path, const std::string& argument,
                              const std::function<void(std::ostream&)>& write, const std::string& noun = "") {
    namespace fs = std::filesystem;
    if (path.empty()) throw invalid_argument(argument, "is empty; expected a file name");
    std::error_code ec;
    const fs::file_status target = fs::symlink_status(path, ec);
    if (fs::is_directory(target))
        throw invalid_argument(argument, "'" + path + "' is a directory; expected a file name");
    const bool in_place = fs::exists(target) && !fs::is_regular_file(target);  // a device, a pipe, a link
    const std::string written = in_place ? path : path + ".tmp";
    const auto fail = [&](const std::string& why) {
        if (!in_place) fs::remove(written, ec);
        return invalid_argument(argument, detail::cannot_write(noun, path, why));
    };
    errno = 0;
    std::ofstream out(written, std::ios::binary | std::ios::trunc);
    if (!out) {
        const std::string why = std::strerror(errno);
        throw invalid_argument(argument, detail::cannot_write(noun, path, in_place ? "cannot open it (" + why + ")"
                                                                                   : "cannot open it for writing ('" + written + "': " + why + ")"));
    }
    try {
        errno = 0;
        write(out);
    } catch (...) {
        out.close();
        if (!in_place) fs::remove(written, ec);
        throw;
    }
    int e = out ? 0 : errno;  // a buffer that could not be written out failed the stream on the way
    if (out) {
        errno = 0;
        out.flush();
        e = errno;
    }
    const std::string left = in_place ? "" : "; '" + path + "' is left as it was";
    if (!out) throw fail(std::string("writing failed (") + (e ? std::strerror(e) : "an I/O error") + ")" + left);
    errno = 0;
    out.close();
    if (out.fail()) throw fail(std::string("closing failed (") + std::strerror(errno) + ")" + left);
    if (in_place) return;
    fs::rename(written, path, ec);
    if (ec) throw fail("cannot rename '" + written + "' to it (" + ec.message() + ")");
}

/// write_output_file for bytes at hand.
inline void write_output_file(const std::string& path, const std::string& argument, std::string_view bytes,
                              const std::string& noun = "") {
    write_output_file(path, argument, [bytes](std::ostream& out) { out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); }, noun);
}

}  // namespace pfarm
