// pfarm-run: the commands of a run from a commands file or a ::: grid (run_commands.hpp).
#include "run_commands.hpp"

#include "pfarm/error.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

namespace pfarm::tools::run {

namespace {

constexpr std::string_view separator = ":::";

bool blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'; }

/// GNU parallel's separators that pfarm-run does not take, and what to do instead.
const char* unsupported_separator(std::string_view word) {
    if (word == "::::" || word == "::::+") return "arguments from a file ('::::') are not supported; list the values after ':::'";
    if (word == ":::+") return "linked groups (':::+') are not supported; pfarm-run builds the cross product of ':::' groups";
    return nullptr;
}

/// The length of a GNU parallel replacement string that pfarm-run lacks at `at` (a '{'), or 0.
std::size_t unsupported_replacement(std::string_view s, std::size_t at) {
    std::size_t i = at + 1;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    for (std::string_view tail : {"//}", "/.}", ".}", "/}"})
        if (s.substr(i, tail.size()) == tail) return i + tail.size() - at;
    if (i == at + 1)
        for (std::string_view tail : {"#}", "%}"})
            if (s.substr(i, tail.size()) == tail) return i + tail.size() - at;
    return 0;
}

}  // namespace

std::vector<std::string> parse_commands(std::string_view text, const std::string& where, const std::string& argument) {
    std::vector<std::string> commands;
    std::size_t line = 0, at = 0;
    while (at < text.size()) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        std::string_view s = text.substr(at, end - at);
        at = end + 1;
        ++line;
        while (!s.empty() && s.back() == '\r') s.remove_suffix(1);  // CRLF (and stray CRs) at the end
        if (s.find('\0') != std::string_view::npos)
            throw invalid_argument(argument, "'" + where + "' line " + std::to_string(line) +
                                                 " holds a NUL byte; expected a text file of shell commands");
        std::size_t first = 0;
        while (first < s.size() && blank(s[first])) ++first;
        if (first == s.size() || s[first] == '#') continue;
        commands.emplace_back(s);
    }
    if (commands.empty())
        throw invalid_argument(argument, "'" + where + "' holds no commands (" + std::to_string(line) +
                                             " lines, none but blank lines and # comments); expected one command per line");
    return commands;
}

std::vector<std::string> read_commands(const std::string& path, const std::string& argument) {
    std::string text;
    if (path == "-") {
        text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
        return parse_commands(text, "standard input", argument);
    }
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw invalid_argument(argument, "'" + path + "' is a directory; expected a file of commands, one per line");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw invalid_argument(argument, "cannot open '" + path + "': " + std::strerror(errno));
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) throw invalid_argument(argument, "cannot read '" + path + "'");
    return parse_commands(text, path, argument);
}

bool has_grid(std::span<const std::string> words) {
    for (const std::string& w : words)
        if (w == separator || unsupported_separator(w)) return true;
    return false;
}

grid split_grid(std::span<const std::string> words) {
    grid g;
    std::size_t i = 0;
    for (; i < words.size() && words[i] != separator; ++i) {
        if (const char* why = unsupported_separator(words[i])) throw invalid_argument(":::", why);
        if (!g.command.empty()) g.command += ' ';
        g.command += words[i];
    }
    if (g.command.empty())
        throw invalid_argument("COMMAND", "missing: expected a command template before the first ':::' "
                                          "(pfarm-run 'sim --v {1} --seed {2}' ::: -60 -55 ::: 1 2)");
    for (; i < words.size(); ++i) {
        if (const char* why = unsupported_separator(words[i])) throw invalid_argument(":::", why);
        if (words[i] == separator) {
            if (!g.groups.empty() && g.groups.back().empty())
                throw invalid_argument(":::", "group " + std::to_string(g.groups.size()) +
                                                  " has no values; expected at least one after each ':::'");
            g.groups.emplace_back();
        } else {
            g.groups.back().push_back(words[i]);
        }
    }
    if (g.groups.empty() || g.groups.back().empty())
        throw invalid_argument(":::", "group " + std::to_string(std::max<std::size_t>(g.groups.size(), 1)) +
                                          " has no values; expected at least one after each ':::'");
    return g;
}

std::string shell_quote(std::string_view value) {
    const auto literal = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
    };
    bool plain = !value.empty();
    for (char c : value) plain = plain && literal(c);
    if (plain) return std::string(value);
    std::string out = "'";
    for (char c : value) {
        if (c == '\'') out += "'\\''";
        else out += c;
    }
    return out + "'";
}

namespace {

/// A piece of a template: literal text, or a reference to a group (0: {}, all of them).
struct piece {
    std::string text;
    std::size_t group = 0;
    bool literal = true;
};

/// The template of `g` cut into pieces; refusals name ":::".
std::vector<piece> template_pieces(const grid& g) {
    std::vector<piece> pieces(1);
    bool replaced = false;
    const std::string& t = g.command;
    for (std::size_t i = 0; i < t.size();) {
        if (t[i] == '{') {
            if (const std::size_t n = unsupported_replacement(t, i))
                throw invalid_argument(":::", "the template uses '" + t.substr(i, n) +
                                                  "', a GNU parallel replacement string pfarm-run does not have; it has {} "
                                                  "and {N} (a command reads its task index from $PFARM_TASK)");
            std::size_t j = i + 1;
            while (j < t.size() && t[j] >= '0' && t[j] <= '9') ++j;
            if (j < t.size() && t[j] == '}' && (j == i + 1 || t[i + 1] != '0' || j == i + 2)) {
                std::size_t group = 0;
                if (j > i + 1) {
                    if (j - i - 1 > 9) group = g.groups.size() + 1;  // absurdly large: refused below
                    else group = std::stoul(t.substr(i + 1, j - i - 1));
                    if (group == 0 || group > g.groups.size())
                        throw invalid_argument(":::", "the template uses '" + t.substr(i, j + 1 - i) + "', but the grid has " +
                                                          std::to_string(g.groups.size()) + " group(s) of values; expected {1} to {" +
                                                          std::to_string(g.groups.size()) + "} or {}");
                }
                pieces.push_back({"", group, false});
                pieces.emplace_back();
                replaced = true;
                i = j + 1;
                continue;
            }
        }
        pieces.back().text += t[i++];
    }
    if (!replaced) {  // GNU parallel: the values are appended
        pieces.back().text += ' ';
        pieces.push_back({"", 0, false});
    }
    return pieces;
}

/// The number of commands of `g`; refused (naming ":::") beyond max_grid_commands.
std::size_t commands_of(const grid& g) {
    std::size_t total = 1;
    for (const auto& values : g.groups) {
        if (values.empty()) throw invalid_argument(":::", "a group has no values");
        if (total > max_grid_commands / values.size())
            throw invalid_argument(":::", "the grid's cross product has more than " + std::to_string(max_grid_commands) +
                                              " commands; expected at most that (split the sweep, or use a commands file)");
        total *= values.size();
    }
    return total;
}

}  // namespace

void check_grid(const grid& g) {
    template_pieces(g);
    commands_of(g);
}

std::vector<std::string> expand_grid(const grid& g) {
    const std::vector<piece> pieces = template_pieces(g);
    const std::size_t total = commands_of(g);
    std::vector<std::vector<std::string>> quoted(g.groups.size());
    for (std::size_t k = 0; k < g.groups.size(); ++k)
        for (const std::string& v : g.groups[k]) quoted[k].push_back(shell_quote(v));

    std::vector<std::string> commands;
    commands.reserve(total);
    std::vector<std::size_t> at(g.groups.size(), 0);  // the value of each group, the last one varying fastest
    for (std::size_t n = 0; n < total; ++n) {
        std::string c;
        for (const piece& p : pieces) {
            if (p.literal) {
                c += p.text;
            } else if (p.group > 0) {
                c += quoted[p.group - 1][at[p.group - 1]];
            } else {
                for (std::size_t k = 0; k < at.size(); ++k) c += (k ? " " : "") + quoted[k][at[k]];
            }
        }
        commands.push_back(std::move(c));
        for (std::size_t k = at.size(); k-- > 0;) {
            if (++at[k] < g.groups[k].size()) break;
            at[k] = 0;
        }
    }
    return commands;
}

}  // namespace pfarm::tools::run
