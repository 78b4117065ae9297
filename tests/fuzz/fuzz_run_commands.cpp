// Fuzzes pfarm-run's input (skeleton/tools/run/run_commands.hpp): the commands file (parse_commands) and the ::: grid
// (has_grid, split_grid, expand_grid, shell_quote). The first byte picks which; the rest is the file's text, or the
// words of a command line separated by newlines.
// Invariants beyond "no crash, no foreign exception":
// - a commands file: refusals name COMMANDS_FILE; every command is a line of the input, without '\n', '\r' at its
//   end or NUL, not blank, not a # comment; as many commands as such lines;
// - a grid: refusals name ':::' or 'COMMAND'; an accepted grid of groups g1..gn expands (when the product is at
//   most 20,000) to exactly |g1| x ... x |gn| commands;
//   expanding twice gives the same; a template without braces gives TEMPLATE followed by the quoted values;
// - shell_quote of any value reads back as that value under the shell's single-quote rules, and is the value
//   itself only when that has no character the shell would interpret.
#include "fuzz_support.hpp"

#include "run_commands.hpp"

#include <string>
#include <vector>

namespace {

namespace run = pfarm::tools::run;
using pfarm::fuzz::check;
using pfarm::fuzz::fail;

/// `quoted` read as one shell word made of plain characters and '...' runs and \' (what shell_quote writes).
std::string unquote(const std::string& quoted) {
    std::string out;
    for (std::size_t i = 0; i < quoted.size();) {
        if (quoted[i] == '\'') {
            const std::size_t end = quoted.find('\'', i + 1);
            check(end != std::string::npos, "shell_quote left a quote open: " + quoted);
            out += quoted.substr(i + 1, end - i - 1);
            i = end + 1;
        } else if (quoted[i] == '\\' && i + 1 < quoted.size()) {
            out += quoted[i + 1];
            i += 2;
        } else {
            out += quoted[i++];
        }
    }
    return out;
}

void commands_file(const std::string& text) {
    const auto commands = pfarm::fuzz::accepts("COMMANDS_FILE", [&] { return run::parse_commands(text, "f", "COMMANDS_FILE"); });
    if (!commands) return;
    std::size_t lines = 0;
    for (std::size_t at = 0; at < text.size();) {
        std::size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(at, end - at);
        at = end + 1;
        while (!line.empty() && line.back() == '\r') line.pop_back();
        const std::size_t first = line.find_first_not_of(" \t\v\f\r");
        if (first != std::string::npos && line[first] != '#') ++lines;
    }
    check(commands->size() == lines, "parse_commands kept " + std::to_string(commands->size()) + " of " +
                                         std::to_string(lines) + " command lines");
    for (const std::string& c : *commands) {
        check(c.find('\n') == std::string::npos && c.find('\0') == std::string::npos, "a command holds a newline or NUL");
        check(c.empty() || c.back() != '\r', "a command ends in \\r");
        check(text.find(c) != std::string::npos, "a command is not a line of the file");
    }
}

void grid(const std::string& text) {
    std::vector<std::string> words;
    for (std::size_t at = 0; at <= text.size();) {
        std::size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        words.push_back(text.substr(at, end - at));
        at = end + 1;
    }
    for (const std::string& w : words) {
        const std::string q = run::shell_quote(w);
        check(unquote(q) == w, "shell_quote('" + w + "') = " + q + " does not read back");
        check(q != w || (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                            "0123456789_@%+=:,./-") == std::string::npos),
              "shell_quote left '" + w + "' bare");
    }
    if (!run::has_grid(words)) return;
    run::grid g;
    try {
        g = run::split_grid(words);
    } catch (const pfarm::invalid_argument& e) {
        check(e.argument() == ":::" || e.argument() == "COMMAND", std::string("split_grid refusal names ") + e.what());
        return;
    } catch (const std::exception& e) {
        fail(std::string("a foreign exception escaped split_grid: ") + e.what());
    }
    check(!g.command.empty() && !g.groups.empty(), "split_grid accepted a grid without template or groups");
    std::size_t product = 1;
    for (const auto& values : g.groups) {
        check(!values.empty(), "split_grid accepted an empty group");
        product = product > 20000 / values.size() ? 20001 : product * values.size();
    }
    if (product > 20000) return;  // expand_grid's own limit is 10^8; the fuzzer's memory is smaller
    std::vector<std::string> commands;
    try {
        commands = run::expand_grid(g);
    } catch (const pfarm::invalid_argument& e) {
        check(e.argument() == ":::", std::string("expand_grid refusal names ") + e.what());
        return;
    } catch (const std::exception& e) {
        fail(std::string("a foreign exception escaped expand_grid: ") + e.what());
    }
    check(commands.size() == product, "the grid expanded to " + std::to_string(commands.size()) + " commands, not " +
                                          std::to_string(product));
    check(commands == run::expand_grid(g), "expanding the same grid twice differs");
    const bool replaces = g.command.find('{') != std::string::npos;
    if (!replaces) {
        std::vector<std::size_t> at(g.groups.size(), 0);
        std::string first = g.command;
        for (const auto& values : g.groups) first += ' ' + run::shell_quote(values[0]);
        check(commands[0] == first, "without replacement strings, the first command is '" + commands[0] + "', not '" + first + "'");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 4096) return 0;
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    if (data[0] % 2 == 0) commands_file(text);
    else grid(text);
    return 0;
}
