// Fuzzes the emulation input's parsers (pfarm/emulation.hpp): number lists (--weights, --slowdown,
// --task-times, PFARM_SLOWDOWN), one load change WORKER:TIME:FACTOR (--load-change), a list of them
// (PFARM_LOAD_CHANGES) with check_load_change, and the name lookups of the same kind (parse_calibration_mode,
// sim::parse_shape). The first byte picks the parser and the worker count, the rest is the text.
// Invariants: a refusal is a pfarm::invalid_argument naming the argument passed; an accepted list has one value
// per comma-separated item, each written only with the characters of a decimal number, finite, and reading back
// as itself from its shortest text; an accepted load change has exactly WORKER:TIME:FACTOR with worker >= 0,
// finite time >= 0, finite factor > 0, and check_load_change accepts it exactly when its worker exists.
#include "fuzz_support.hpp"

#include "pfarm/calibration.hpp"
#include "pfarm/emulation.hpp"
#include "pfarm/simulator.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

namespace {

using pfarm::fuzz::accepts;
using pfarm::fuzz::check;

std::size_t count_of(const std::string& text, char c) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), c)); }

std::string shortest(double v) {
    char buffer[32];
    return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, v).ptr);
}

/// Only what a decimal number is written with, and blanks around the items.
bool decimal_characters(const std::string& text) {
    return text.find_first_not_of("0123456789+-.eE, \t\r\n:") == std::string::npos;
}

void numbers(const std::string& text) {
    const auto values = accepts("--weights", [&] { return pfarm::parse_numbers(text, "--weights"); });
    if (!values) return;
    check(values->size() == count_of(text, ',') + 1, "'" + text + "': " + std::to_string(values->size()) + " values");
    check(decimal_characters(text), "'" + text + "' accepted as numbers");
    for (const double v : *values) {
        check(std::isfinite(v), "'" + text + "' gave a value that is not finite");
        const auto again = pfarm::parse_numbers(shortest(v), "again");
        check(again.size() == 1 && again[0] == v, "'" + text + "': " + shortest(v) + " does not read back");
    }
}

void valid_change(const pfarm::load_change& c, const std::string& text) {
    check(c.worker >= 0, "'" + text + "': worker " + std::to_string(c.worker));
    check(std::isfinite(c.time) && c.time >= 0.0, "'" + text + "': time " + shortest(c.time));
    check(std::isfinite(c.factor) && c.factor > 0.0, "'" + text + "': factor " + shortest(c.factor));
}

void load_change(const std::string& text, int workers) {
    const auto c = accepts("--load-change", [&] { return pfarm::parse_load_change(text, "--load-change"); });
    if (!c) return;
    check(count_of(text, ':') == 2 && decimal_characters(text), "'" + text + "' accepted as a load change");
    valid_change(*c, text);
    const bool fits = accepts("load_changes", [&] {
                          pfarm::check_load_change(*c, workers, "load_changes");
                          return true;
                      }).has_value();
    check(fits == (c->worker < workers), "'" + text + "': check_load_change with " + std::to_string(workers) + " workers");
}

void load_changes(const std::string& text) {
    const auto list = accepts("PFARM_LOAD_CHANGES", [&] { return pfarm::parse_load_changes(text, "PFARM_LOAD_CHANGES"); });
    if (!list) return;
    check(list->size() == count_of(text, ',') + 1, "'" + text + "': " + std::to_string(list->size()) + " changes");
    check(count_of(text, ':') == 2 * list->size() && decimal_characters(text), "'" + text + "' accepted as load changes");
    for (const auto& c : *list) valid_change(c, text);
}

void names(const std::string& text) {
    if (const auto mode = accepts("calibration", [&] { return pfarm::parse_calibration_mode(text); }))
        check(text == "times" || text == "times-only" || pfarm::to_string(*mode) == text, "'" + text + "' is a calibration mode");
    if (const auto shape = accepts("shape", [&] { return pfarm::sim::parse_shape(text); }))
        check(pfarm::sim::to_string(*shape) == text, "'" + text + "' is a shape");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const int workers = 1 + (data[0] >> 3);  // 1..32
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    switch (data[0] % 4) {
    case 0: numbers(text); break;
    case 1: load_change(text, workers); break;
    case 2: load_changes(text); break;
    default: names(text); break;
    }
    return 0;
}
