// Fuzzes pfarm-run's input (skeleton/tools/run/run_commands.hpp, run_inputs.hpp): the commands file
// (parse_commands) and the `:::` sources with their template (split_words, read_sources, make_jobs, gnu_quote). The
// first byte picks which; the rest is the file's text, or the words of a command line separated by newlines.
// Invariants beyond "no crash, no foreign exception":
// - a commands file: refusals name COMMANDS_FILE; every command is a line of the input, without '\n', '\r' at its
//   end or NUL, not blank, not a # comment; as many commands as such lines;
// - the sources: refusals are pfarm::invalid_argument; sources of values only (no `::::` file, which the fuzzer
//   does not read) of sizes n1..nk, none linked, expand (when the product is at most 20,000) to exactly
//   n1 x ... x nk jobs, each with one command; expanding twice gives the same;
// - gnu_quote of any value reads back as that value under the shell's quoting rules, and is the value itself only
//   when that has no character the shell would interpret.
#include "fuzz_support.hpp"

#include "run_commands.hpp"
#include "run_inputs.hpp"

#include <string>
#include <vector>

namespace {

namespace run = pfarm::tools::run;
using pfarm::fuzz::check;
using pfarm::fuzz::fail;

/// `quoted` read as one shell word made of plain characters, '...' runs and "..." runs (what gnu_quote writes).
std::string unquote(const std::string& quoted) {
    std::string out;
    for (std::size_t i = 0; i < quoted.size();) {
        if (quoted[i] == '\'' || quoted[i] == '"') {
            const std::size_t end = quoted.find(quoted[i], i + 1);
            check(end != std::string::npos, "gnu_quote left a quote open: " + quoted);
            out += quoted.substr(i + 1, end - i - 1);
            i = end + 1;
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
        const std::string q = run::gnu_quote(w);
        check(unquote(q) == w, "gnu_quote('" + w + "') = " + q + " does not read back");
        check(q != w || (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                            "0123456789-_.+/") == std::string::npos),
              "gnu_quote left '" + w + "' bare");
    }
    try {
        const run::job_words w = run::split_words(words, {});
        if (w.sources.empty()) return;
        std::size_t product = 1;
        for (const run::input_source& source : w.sources) {
            if (source.from_file || source.linked) return;  // files are not read here; linked sources pair, not multiply
            if (source.values.empty()) return;
            product = product > 20000 / source.values.size() ? 20001 : product * source.values.size();
        }
        if (product > 20000) return;  // make_jobs's own limit is 10^8; the fuzzer's memory is smaller
        const auto rows = run::read_sources(w, {});
        const run::job_list jobs = run::make_jobs(w.command, rows);
        check(jobs.commands.size() == product && jobs.args.size() == product,
              "the sources expanded to " + std::to_string(jobs.commands.size()) + " jobs, not " + std::to_string(product));
        check(run::make_jobs(w.command, rows).commands == jobs.commands, "expanding the same sources twice differs");
    } catch (const pfarm::invalid_argument& e) {
        check(!e.message().empty(), std::string("a refusal that says nothing: ") + e.what());
    } catch (const std::exception& e) {
        fail(std::string("a foreign exception escaped the sources: ") + e.what());
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
