// Internals shared by the monitors' sources: reading small kernel files, formatting numbers for messages.
#pragma once

#include "pfarm/monitor.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace pfarm::detail {

/// `root` joined with a path written from the file-system root ("proc/loadavg").
inline std::filesystem::path under_root(const std::filesystem::path& root, const char* relative) {
    return root / relative;
}

/// The whole of a small file; throws monitor_error(monitor, path, reason) when it cannot be read.
inline std::string read_text_file(const std::string& monitor, const std::filesystem::path& path) {
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const int e = errno;
        throw monitor_error(monitor, path.string(),
                            std::string("cannot be opened (") + (e ? std::strerror(e) : "unknown reason") + ")");
    }
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw monitor_error(monitor, path.string(), "read failed");
    return text;
}

/// A number as a message shows it: shortest form that reads back the same ("0.5", "1e-06").
inline std::string format_number(double value) {
    std::ostringstream out;
    out.precision(10);
    out << value;
    return out.str();
}

}  // namespace pfarm::detail
