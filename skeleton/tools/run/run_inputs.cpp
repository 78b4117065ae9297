// pfarm-run: GNU parallel's input sources, columns, jobs and replacement strings (run_inputs.hpp).
#include "run_inputs.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <regex>

namespace pfarm::tools::run {

bool is_separator(std::string_view word) { return word == ":::" || word == ":::+" || word == "::::" || word == "::::+"; }

job_words split_words(const std::vector<std::string>& words, const std::vector<std::string>& arg_files) {
    job_words w;
    for (const std::string& f : arg_files) w.sources.push_back({true, f, {}, false});
    std::size_t i = 0;
    for (; i < words.size() && !is_separator(words[i]); ++i) {
        if (!w.command.empty()) w.command += ' ';
        w.command += words[i];
    }
    while (i < words.size()) {
        const std::string sep = words[i++];
        const bool files = sep.rfind("::::", 0) == 0, linked = sep.back() == '+';
        if (linked && w.sources.empty())
            throw invalid_argument(sep, "links to the input source before it, and there is none");
        std::size_t n = 0;
        for (; i < words.size() && !is_separator(words[i]); ++i, ++n) {
            if (files) w.sources.push_back({true, words[i], {}, linked && n == 0});
            else if (n == 0) w.sources.push_back({false, "", {words[i]}, linked});
            else w.sources.back().values.push_back(words[i]);
        }
        if (n == 0)
            throw invalid_argument(sep, files ? "expected a file name after it" : "expected at least one value after it");
    }
    return w;
}

namespace {

std::string read_file(const std::string& path, const std::string& argument) {
    std::string text;
    if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw invalid_argument(argument, "'" + path + "' is a directory; expected a file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw invalid_argument(argument, "cannot open '" + path + "': " + std::strerror(errno));
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) throw invalid_argument(argument, "cannot read '" + path + "'");
    return text;
}

/// A file's values as GNU parallel reads arguments: split at `delimiter` (an empty line is an empty argument; a
/// last one without the delimiter counts).
std::vector<std::string> lines_of(const std::string& text, const std::string& delimiter) {
    std::vector<std::string> lines;
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t end = std::min(text.find(delimiter, at), text.size());
        lines.emplace_back(text, at, end - at);
        at = end + delimiter.size();
    }
    return lines;
}

bool blank_value(const std::string& v) {
    return std::all_of(v.begin(), v.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; });
}

}  // namespace

std::string parse_delimiter(const std::string& text) {
    if (text.empty()) throw invalid_argument("--delimiter", "is empty; expected a character or a C escape such as \\n");
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\\' || i + 1 == text.size()) {
            out += text[i];
            continue;
        }
        const char c = text[++i];
        if (c == 'n') out += '\n';
        else if (c == 't') out += '\t';
        else if (c == 'r') out += '\r';
        else if (c == 'a') out += '\a';
        else if (c == 'v') out += '\v';
        else if (c == 'f') out += '\f';
        else if (c == 'x' && i + 1 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1]))) {
            std::size_t n = 0;
            int v = 0;
            while (n < 2 && i + 1 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])))
                v = v * 16 + std::stoi(std::string(1, text[++i]), nullptr, 16), ++n;
            out += static_cast<char>(v);
        } else if (c >= '0' && c <= '7') {
            int v = c - '0';
            for (int n = 0; n < 2 && i + 1 < text.size() && text[i + 1] >= '0' && text[i + 1] <= '7'; ++n) v = v * 8 + (text[++i] - '0');
            out += static_cast<char>(v);
        } else {
            out += c;  // \\ and any other escaped character: itself
        }
    }
    return out;
}

std::vector<std::vector<std::vector<std::string>>> read_sources(const job_words& w, const read_settings& how) {
    const std::optional<std::string>& colsep = how.colsep;
    std::optional<std::regex> split;
    if (colsep) {
        if (colsep->empty()) throw invalid_argument("--colsep", "is empty; expected a regular expression");
        try {
            split.emplace(*colsep, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
            throw invalid_argument("--colsep", "'" + *colsep + "' is not a regular expression: " + e.what());
        }
    }
    std::map<std::string, std::vector<std::string>> files;  // each file read once (standard input can be read once)
    std::vector<input_source> sources = w.sources;
    if (sources.empty()) sources.push_back({true, "-", {}, false});
    std::vector<std::vector<std::vector<std::string>>> out;
    for (const input_source& s : sources) {
        const std::vector<std::string>* values = &s.values;
        if (s.from_file) {
            auto it = files.find(s.path);
            if (it == files.end())
                it = files.emplace(s.path, lines_of(read_file(s.path, w.sources.empty() ? "stdin" : "::::"), how.delimiter)).first;
            values = &it->second;
        }
        std::vector<std::vector<std::string>> rows;
        for (const std::string& v : *values) {
            if (how.skip_empty && blank_value(v)) continue;
            if (!split) {
                rows.push_back({v});
                continue;
            }
            std::vector<std::string> columns;
            std::sregex_token_iterator it(v.begin(), v.end(), *split, -1), end;
            for (; it != end; ++it) columns.push_back(*it);
            if (columns.empty()) columns.emplace_back();
            rows.push_back(std::move(columns));
        }
        if (s.linked && !out.empty()) {  // paired line by line with the previous source; the shorter decides
            auto& previous = out.back();
            previous.resize(std::min(previous.size(), rows.size()));
            for (std::size_t k = 0; k < previous.size(); ++k)
                previous[k].insert(previous[k].end(), rows[k].begin(), rows[k].end());
        } else {
            out.push_back(std::move(rows));
        }
    }
    return out;
}

std::string gnu_quote(std::string_view value) {
    if (value.empty()) return "''";
    const bool plain = std::all_of(value.begin(), value.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               std::string_view("-_.+/").find(c) != std::string_view::npos;
    });
    if (plain) return std::string(value);
    std::string out = "'";
    for (char c : value) {
        if (c == '\'') out += "'\"'\"'";
        else out += c;
    }
    out += "'";
    if (out.rfind("''", 0) == 0) out.erase(0, 2);  // GNU parallel drops the empty '' at either end
    if (out.size() >= 2 && out.compare(out.size() - 2, 2, "''") == 0) out.erase(out.size() - 2);
    return out;
}

std::string apply_modifier(const std::string& value, std::string_view modifier) {
    const auto basename = [](const std::string& v) {
        const std::size_t slash = v.rfind('/');
        return slash == std::string::npos ? v : v.substr(slash + 1);
    };
    const auto no_extension = [](const std::string& v) {  // s:\.[^/.]*$::
        const std::size_t dot = v.rfind('.');
        if (dot == std::string::npos || v.find('/', dot) != std::string::npos) return v;
        return v.substr(0, dot);
    };
    if (modifier.empty()) return value;
    if (modifier == ".") return no_extension(value);
    if (modifier == "/") return basename(value);
    if (modifier == "/.") return no_extension(basename(value));
    // "//": Perl's File::Basename::dirname
    std::string v = value;
    while (v.size() > 1 && v.back() == '/') v.pop_back();
    const std::size_t slash = v.rfind('/');
    if (slash == std::string::npos) return ".";
    v.erase(slash);
    while (v.size() > 1 && v.back() == '/') v.pop_back();
    return v.empty() ? "/" : v;
}

command_template::command_template(const std::string& text, std::size_t columns) {
    if (text.empty()) {
        no_command_ = true;
        return;
    }
    pieces_.emplace_back();
    bool replaced = false;
    for (std::size_t i = 0; i < text.size();) {
        if (text[i] != '{') {
            pieces_.back().text += text[i++];
            continue;
        }
        if (text.compare(i, 2, "{=") == 0) {
            const std::size_t end = text.find("=}", i + 2);
            throw invalid_argument(end == std::string::npos ? text.substr(i, 2) : text.substr(i, end + 2 - i),
                                   "GNU parallel's perl expression replacement strings ({= ... =}) are not supported; "
                                   "compute the value in the command, or give it as an input source");
        }
        const std::size_t close = text.find('}', i);
        const std::string inner = close == std::string::npos ? "" : text.substr(i + 1, close - i - 1);
        piece p;
        std::size_t k = 0;
        if (inner == "#") {
            p.kind = piece::seq;
        } else if (inner == "%") {
            p.kind = piece::slot;
            uses_slot_ = true;
        } else {
            const bool negative = !inner.empty() && inner[0] == '-';
            k = negative ? 1 : 0;
            std::size_t digits = k;
            while (digits < inner.size() && inner[digits] >= '0' && inner[digits] <= '9') ++digits;
            const std::string modifier = inner.substr(digits);
            const bool known = modifier.empty() || modifier == "." || modifier == "/" || modifier == "//" || modifier == "/.";
            if (close == std::string::npos || !known || (negative && digits == 1)) {  // not a replacement string: literal
                pieces_.back().text += text[i++];
                continue;
            }
            p.modifier = modifier;
            if (digits > k) {
                const std::string number = inner.substr(k, digits - k);
                if (number.size() > 9 || std::stol(number) == 0) {
                    pieces_.back().text += text[i++];  // {0}, {01...}: literal, as in GNU parallel
                    continue;
                }
                p.kind = piece::positional;
                p.position = negative ? -std::stol(number) : std::stol(number);
                if (static_cast<std::size_t>(std::labs(p.position)) > columns)
                    throw invalid_argument(text.substr(i, close + 1 - i),
                                           "the template uses it, but each job has " + std::to_string(columns) +
                                               " argument(s); expected {1} to {" + std::to_string(columns) + "}");
            } else {
                p.kind = piece::all;
            }
        }
        pieces_.push_back(std::move(p));
        pieces_.emplace_back();
        replaced = true;
        i = close + 1;
    }
    if (!replaced) {  // GNU parallel: the arguments are appended
        pieces_.back().text += ' ';
        pieces_.push_back({piece::all, "", 0, ""});
    }
}

std::string command_template::expand(const std::vector<std::string>& args, std::size_t seq, bool quote) const {
    const auto q = [quote](const std::string& v) { return quote ? gnu_quote(v) : v; };
    if (no_command_) {
        std::string c;
        for (std::size_t k = 0; k < args.size(); ++k) c += (k ? " " : "") + args[k];
        return c;
    }
    std::string c;
    for (const piece& p : pieces_) {
        switch (p.kind) {
        case piece::literal: c += p.text; break;
        case piece::seq: c += std::to_string(seq); break;
        case piece::slot: c += slot_marker; break;
        case piece::all:
            for (std::size_t k = 0; k < args.size(); ++k) c += (k ? " " : "") + q(apply_modifier(args[k], p.modifier));
            break;
        case piece::positional: {
            const long n = static_cast<long>(args.size());
            const long at = p.position > 0 ? p.position - 1 : n + p.position;
            if (at >= 0 && at < n) c += q(apply_modifier(args[static_cast<std::size_t>(at)], p.modifier));
            break;
        }
        }
    }
    return c;
}

std::string fill_slot(std::string command, long slot) {
    const std::string s = std::to_string(slot);
    for (std::size_t at = command.find(slot_marker); at != std::string::npos; at = command.find(slot_marker, at + s.size()))
        command.replace(at, slot_marker.size(), s);
    return command;
}

job_list make_jobs(const std::string& command, const std::vector<std::vector<std::vector<std::string>>>& rows) {
    std::size_t total = 1, columns = 0;
    for (const auto& source : rows) {
        if (source.empty()) return {};  // GNU parallel: an empty source, no jobs
        if (total > max_jobs / source.size())
            throw invalid_argument(":::", "the input sources' cross product has more than " + std::to_string(max_jobs) +
                                              " jobs; expected at most that (split the sweep)");
        total *= source.size();
        std::size_t widest = 0;
        for (const auto& row : source) widest = std::max(widest, row.size());
        columns += widest;
    }
    const command_template t(command, columns);
    job_list jobs;
    jobs.args.reserve(total);
    jobs.commands.reserve(total);
    std::vector<std::size_t> at(rows.size(), 0);  // each source's row, the last varying fastest
    for (std::size_t n = 0; n < total; ++n) {
        std::vector<std::string> args;
        for (std::size_t k = 0; k < rows.size(); ++k) {
            const auto& row = rows[k][at[k]];
            args.insert(args.end(), row.begin(), row.end());
        }
        if (t.uses_slot())
            for (const std::string& a : args)
                if (a.find('\x01') != std::string::npos)
                    throw invalid_argument("{%}", "an argument holds the byte 0x01, which {%} cannot be used with");
        jobs.commands.push_back(t.expand(args, n + 1));
        jobs.args.push_back(std::move(args));
        for (std::size_t k = at.size(); k-- > 0;) {
            if (++at[k] < rows[k].size()) break;
            at[k] = 0;
        }
    }
    return jobs;
}

}  // namespace pfarm::tools::run
