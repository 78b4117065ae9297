// pfarm-run: the commands of a run from a commands file (run_commands.hpp).
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

bool blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'; }

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

}  // namespace pfarm::tools::run
