// pfarm: sizes that must fit in memory: the bytes a size argument asks for, computed with overflow checks and
// compared with the machine's physical memory before anything is allocated: bad input (pfarm::invalid_argument
// naming the argument), never std::bad_alloc.
#pragma once

#include "pfarm/error.hpp"

#include <unistd.h>

#include <cstdint>
#include <limits>
#include <string>

namespace pfarm {

/// This machine's physical memory in bytes (sysconf), or the largest uint64 when it cannot be read.
inline std::uint64_t physical_memory_bytes() {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return std::numeric_limits<std::uint64_t>::max();
    const auto p = static_cast<std::uint64_t>(pages), s = static_cast<std::uint64_t>(page);
    return p > std::numeric_limits<std::uint64_t>::max() / s ? std::numeric_limits<std::uint64_t>::max() : p * s;
}

/// "12.3 GiB": a byte count for messages.
inline std::string format_bytes(std::uint64_t bytes) {
    constexpr const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 6) v /= 1024.0, ++u;
    std::string s = std::to_string(v);
    s.resize(s.find('.') + (u == 0 ? 0 : 2));  // whole bytes, or one decimal
    return s + " " + units[u];
}

/// The bytes that `count` items of `each` bytes need (plus `extra`). Throws invalid_argument(argument, "<what>:
/// <bytes> in all, more than this machine's memory (<bytes>)") when the product overflows 64 bits or exceeds this
/// machine's physical memory: a size no machine here could hold is bad input, refused before any allocation.
/// `what` says the value and what it costs ("is 4294967295: rank 0 keeps 176 bytes per experiment"). Computed from
/// the arguments alone, so ranks given the same arguments on like machines refuse together.
inline std::uint64_t check_fits_in_memory(std::uint64_t count, std::uint64_t each, const std::string& argument,
                                          const std::string& what, std::uint64_t extra = 0) {
    constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    const bool overflows = each != 0 && (count > max / each || count * each > max - extra);
    const std::uint64_t limit = physical_memory_bytes();
    if (overflows || count * each + extra > limit)
        throw invalid_argument(argument, what + ": " +
                                             (overflows ? std::string("more than 2^64 bytes")
                                                        : format_bytes(count * each + extra) + " in all") +
                                             ", more than this machine's memory (" + format_bytes(limit) + ")");
    return count * each + extra;
}

}  // namespace pfarm
