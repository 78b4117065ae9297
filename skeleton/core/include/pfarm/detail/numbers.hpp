// Strict conversion of text to numbers, shared by the core's parsers (emulation.cpp, trace.cpp, the measured
// costs of simulator.cpp), so that every option and file of pfarm accepts one number grammar. Internal header.
#pragma once

#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>
#include <system_error>

namespace pfarm::detail {

/// `text` without the blanks (spaces, tabs, CR, LF) around it.
inline std::string_view trim(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return {};
    const auto last = text.find_last_not_of(" \t\r\n");
    return text.substr(first, last - first + 1);
}

/// A number read from text, or why there is none.
struct number_result {
    double value = 0.0;
    const char* problem = nullptr;  ///< null when `value` holds the number; otherwise what is wrong with the text
};

/// A decimal number, whole text: an optional sign, digits with an optional point, an optional exponent ("1",
/// "-2.5", "+3e-2"), finite and within double's range. Blanks, hexadecimal, "nan", "inf", trailing characters
/// ("12abc") and magnitudes beyond double ("1e999", "1e-999") are refused.
inline number_result parse_number(std::string_view text) {
    if (!text.empty() && text.front() == '+') {
        text.remove_prefix(1);
        if (!text.empty() && text.front() == '-') return {0.0, "is not a number"};
    }
    if (text.empty()) return {0.0, "is not a number"};
    double value = 0.0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value, std::chars_format::general);
    if (ec == std::errc::result_out_of_range) return {0.0, "is out of range"};
    if (ec != std::errc() || ptr != end) return {0.0, "is not a number"};
    if (!std::isfinite(value)) return {0.0, "is not a finite number"};
    return {value, nullptr};
}

/// A decimal integer, whole text: an optional '-' and digits, within long long. Empty otherwise.
inline std::optional<long long> parse_integer(std::string_view text) {
    long long value = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
    return value;
}

}  // namespace pfarm::detail
