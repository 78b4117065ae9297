// pfarm emulation input: parses number lists and WORKER:TIME:FACTOR load changes, strictly, and range-checks
// load changes (pfarm/emulation.hpp).
#include "pfarm/emulation.hpp"

#include "pfarm/detail/numbers.hpp"

#include "pfarm/error.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <string_view>

namespace pfarm {

namespace {

constexpr const char* list_example = "; expected a comma-separated list of numbers like 1,2.5,3";
constexpr const char* change_form = "WORKER:TIME:FACTOR (e.g. 2:100:1.5; under MPI, WORKER is the rank)";

std::string show(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
}

/// `text` cut at every `separator`: "a,,b" gives three items, "" one empty item.
std::vector<std::string_view> split(std::string_view text, char separator) {
    std::vector<std::string_view> items;
    for (;;) {
        const auto at = text.find(separator);
        items.push_back(text.substr(0, at));
        if (at == std::string_view::npos) return items;
        text.remove_prefix(at + 1);
    }
}

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

}  // namespace

std::vector<double> parse_numbers(const std::string& text, const std::string& argument) {
    if (detail::trim(text).empty()) throw invalid_argument(argument, std::string("is empty") + list_example);
    const auto items = split(text, ',');
    std::vector<double> values;
    values.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
        const std::string_view item = detail::trim(items[i]);
        if (item.empty())
            throw invalid_argument(argument, quoted(text) + ": item " + std::to_string(i + 1) + " is empty" + list_example);
        const auto n = detail::parse_number(item);
        if (n.problem) throw invalid_argument(argument, quoted(item) + " " + n.problem + list_example);
        values.push_back(n.value);
    }
    return values;
}

load_change parse_load_change(const std::string& text, const std::string& argument) {
    const auto bad = [&](const std::string& why) { return invalid_argument(argument, quoted(text) + " " + why); };
    const auto parts = split(text, ':');
    if (parts.size() != 3) throw bad(std::string("is not ") + change_form);
    load_change c;
    const std::string_view worker = detail::trim(parts[0]);
    const auto w = detail::parse_integer(worker);
    if (!w || *w < 0 || *w > std::numeric_limits<int>::max())
        throw bad("has worker " + quoted(worker) + "; expected an index >= 0");
    c.worker = static_cast<int>(*w);
    const auto number = [&](std::string_view field, const char* what) {
        const std::string_view t = detail::trim(field);
        const auto n = detail::parse_number(t);
        if (n.problem) throw bad(std::string("has ") + what + " " + quoted(t) + ", which " + n.problem);
        return n.value;
    };
    c.time = number(parts[1], "time");
    c.factor = number(parts[2], "factor");
    if (c.time < 0.0) throw bad("has time " + show(c.time) + "; expected a finite value >= 0");
    if (c.factor <= 0.0) throw bad("has factor " + show(c.factor) + "; expected a finite value > 0");
    return c;
}

std::vector<load_change> parse_load_changes(const std::string& text, const std::string& argument) {
    if (detail::trim(text).empty())
        throw invalid_argument(argument, std::string("is empty; expected ") + change_form + ", comma-separated");
    const auto items = split(text, ',');
    std::vector<load_change> changes;
    changes.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (detail::trim(items[i]).empty())
            throw invalid_argument(argument, quoted(text) + ": item " + std::to_string(i + 1) + " is empty; expected " +
                                                 change_form + ", comma-separated");
        changes.push_back(parse_load_change(std::string(items[i]), argument));
    }
    return changes;
}

void check_load_change(const load_change& c, int workers, const std::string& argument) {
    std::ostringstream quoted_entry;
    quoted_entry << '\'' << c.worker << ':' << c.time << ':' << c.factor << "' ";
    const std::string entry = quoted_entry.str();
    if (c.worker < 0 || c.worker >= workers)
        throw invalid_argument(argument, entry + "names worker " + std::to_string(c.worker) + "; expected 0.." +
                                             std::to_string(workers - 1));
    if (!std::isfinite(c.time) || c.time < 0.0)
        throw invalid_argument(argument, entry + "has time " + show(c.time) + "; expected a finite value >= 0");
    if (!std::isfinite(c.factor) || c.factor <= 0.0)
        throw invalid_argument(argument, entry + "has factor " + show(c.factor) + "; expected a finite value > 0");
}

}  // namespace pfarm
