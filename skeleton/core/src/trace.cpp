// pfarm traces: writes and reads the one trace schema, CSV and JSON, with the checks that make a written trace
// read back and a truncated or foreign file fail with a message naming the file (pfarm/trace.hpp,
// docs/traces.md).
#include "pfarm/trace.hpp"

#include "pfarm/detail/numbers.hpp"

#include "pfarm/error.hpp"
#include "pfarm/output_file.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>

namespace pfarm {

namespace {

// --- the schema -------------------------------------------------------------------------------------------

/// The CSV header, in this order; the JSON keys of a chunk are the same names.
constexpr const char* csv_header =
    "rank,first,count,sent,started,finished,received,calibration,availability,run_queue,load1,latency,benchmark";
constexpr const char* summary_marker = "pfarm trace:";

/// The monitor readings a trace stores, by column name.
struct reading {
    const char* name;
    std::optional<double> resource_sample::*field;
};
constexpr reading readings[] = {{"availability", &resource_sample::availability},
                                {"run_queue", &resource_sample::run_queue},
                                {"load1", &resource_sample::load1},
                                {"latency", &resource_sample::latency},
                                {"benchmark", &resource_sample::benchmark}};

const char* to_string(trace_source s) { return s == trace_source::simulator ? "simulator" : "farm"; }

std::optional<trace_source> source_named(std::string_view name) {
    if (name == "farm") return trace_source::farm;
    if (name == "simulator") return trace_source::simulator;
    return std::nullopt;
}

/// Shortest text that reads back as the same double.
std::string exact(double v) {
    char buffer[32];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, v);
    return std::string(buffer, r.ptr);
}

/// What is wrong with a chunk, or empty: the checks of both the writer and the reader.
std::string chunk_problem(const chunk_trace& c) {
    if (c.rank < 0) return "'rank' is " + std::to_string(c.rank) + "; expected >= 0";
    if (c.first < 0) return "'first' is " + std::to_string(c.first) + "; expected >= 0";
    if (c.count < 1) return "'count' is " + std::to_string(c.count) + "; expected >= 1";
    const std::pair<const char*, double> times[] = {
        {"sent", c.sent}, {"started", c.started}, {"finished", c.finished}, {"received", c.received}};
    for (const auto& [name, value] : times)
        if (!std::isfinite(value)) return std::string("'") + name + "' is " + exact(value) + "; expected a finite number";
    if (c.finished < c.started)
        return "the chunk finishes (" + exact(c.finished) + ") before it starts (" + exact(c.started) + ")";
    for (const auto& r : readings)
        if (const auto& v = c.sample.*r.field; v && !std::isfinite(*v))
            return std::string("'") + r.name + "' is " + exact(*v) + "; expected a finite number or none";
    return {};
}

/// The counts must add up to the summary's tasks, when it has them: a trace cut after a whole row does not.
std::string total_problem(const trace_summary& s, const std::vector<chunk_trace>& chunks) {
    if (!s.tasks) return {};
    task_count total = 0;
    for (const auto& c : chunks)  // counts are >= 1 here (chunk_problem); their sum must not overflow
        if (__builtin_add_overflow(total, c.count, &total))
            return "the chunks hold more than " + std::to_string(LLONG_MAX) + " tasks in all";
    if (total == *s.tasks) return {};
    return "the chunks hold " + std::to_string(total) + " tasks but the summary says " + std::to_string(*s.tasks) +
           " (a truncated or incomplete trace)";
}

std::string printable(std::string_view text);  // the reader's, below

/// What is wrong with a summary the writer is given, or empty.
std::string summary_problem(const trace_summary& s) {
    if (s.technique) {
        if (s.technique->empty()) return "the technique's name is empty";
        for (const unsigned char ch : *s.technique)
            if (ch <= ' ' || ch == ',' || ch == '"' || ch == '\\' || ch >= 0x7f)  // >= 0x80: not UTF-8 alone, JSON refuses it
                return "the technique's name '" + printable(*s.technique) +
                       "' holds a blank, a comma, a quote, a control character or a byte beyond ASCII";
    }
    if (s.ranks && *s.ranks < 0) return "ranks is " + std::to_string(*s.ranks) + "; expected >= 0";
    if (s.workers && *s.workers < 0) return "workers is " + std::to_string(*s.workers) + "; expected >= 0";
    if (s.tasks && *s.tasks < 0) return "tasks is " + std::to_string(*s.tasks) + "; expected >= 0";
    const std::pair<const char*, const std::optional<double>*> numbers[] = {
        {"makespan", &s.makespan}, {"percent_imbalance", &s.percent_imbalance}, {"cov", &s.cov}, {"k", &s.k}};
    for (const auto& [name, value] : numbers)
        if (*value && !std::isfinite(**value))
            return std::string(name) + " is " + exact(**value) + "; expected a finite number";
    return {};
}

bool ends_with(const std::string& text, std::string_view suffix) {
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// --- the writer ---------------------------------------------------------------------------------------------

std::string csv_summary(const trace_summary& s) {
    std::string line = std::string("# ") + summary_marker + " source " + to_string(s.source);
    if (s.technique) line += ", technique " + *s.technique;
    if (s.ranks) line += ", " + std::to_string(*s.ranks) + " ranks";
    if (s.workers) line += ", " + std::to_string(*s.workers) + " workers";
    if (s.tasks) line += ", " + std::to_string(*s.tasks) + " tasks";
    if (s.makespan) line += ", makespan " + exact(*s.makespan) + (s.source == trace_source::farm ? " s" : "");
    if (s.percent_imbalance) line += ", imbalance " + exact(*s.percent_imbalance) + " %";
    if (s.cov) line += ", cov " + exact(*s.cov);
    if (s.k) line += ", k " + exact(*s.k);
    return line + "\n";
}

void write_csv(std::ostream& out, const trace_summary& s, const std::vector<chunk_trace>& chunks) {
    out << csv_summary(s) << csv_header << "\n";
    std::string line;
    for (const auto& c : chunks) {
        line = std::to_string(c.rank) + ',' + std::to_string(c.first) + ',' + std::to_string(c.count) + ',' +
               exact(c.sent) + ',' + exact(c.started) + ',' + exact(c.finished) + ',' + exact(c.received) + ',' +
               (c.calibration ? '1' : '0');
        for (const auto& r : readings) {
            line += ',';
            if (const auto& v = c.sample.*r.field) line += exact(*v);
        }
        line += '\n';
        out << line;
    }
}

void write_json(std::ostream& out, const trace_summary& s, const std::vector<chunk_trace>& chunks) {
    // Written by hand, one chunk per line: a trace may hold millions of chunks, too many for a JSON tree.
    // Names need no escaping: summary_problem() refuses quotes, backslashes and control characters.
    out << "{\"summary\":{\"source\":\"" << to_string(s.source) << "\"";
    if (s.technique) out << ",\"technique\":\"" << *s.technique << "\"";
    if (s.ranks) out << ",\"ranks\":" << *s.ranks;
    if (s.workers) out << ",\"workers\":" << *s.workers;
    if (s.tasks) out << ",\"tasks\":" << *s.tasks;
    if (s.makespan) out << ",\"makespan\":" << exact(*s.makespan);
    if (s.percent_imbalance) out << ",\"percent_imbalance\":" << exact(*s.percent_imbalance);
    if (s.cov) out << ",\"cov\":" << exact(*s.cov);
    if (s.k) out << ",\"k\":" << exact(*s.k);
    out << "},\n\"chunks\":[";
    for (std::size_t i = 0; i < chunks.size(); ++i) out << (i ? ",\n" : "\n") << chunk_json(chunks[i]);
    out << "\n]}\n";
}

// --- the reader ---------------------------------------------------------------------------------------------

/// Throws the reader's errors: invalid_argument(argument, "where: what").
struct failure {
    const std::string& argument;
    [[noreturn]] void operator()(const std::string& where, const std::string& what) const {
        throw invalid_argument(argument, where + ": " + what);
    }
};

/// A line of a file that may not be text, fit to quote in a message.
std::string printable(std::string_view text) {
    std::string out;
    for (const char ch : text.substr(0, 80)) out += (ch >= ' ' && ch < 0x7f) ? ch : '?';
    return text.size() > 80 ? out + "..." : out;
}

std::vector<std::string_view> split_trimmed(std::string_view line, char separator) {
    std::vector<std::string_view> fields;
    for (;;) {
        const auto at = line.find(separator);
        fields.push_back(detail::trim(line.substr(0, at)));
        if (at == std::string_view::npos) return fields;
        line.remove_prefix(at + 1);
    }
}

/// "# pfarm trace: source farm, technique multi, 5 ranks, 4 workers, 2000 tasks, makespan 1.2 s, imbalance 3.4 %,
/// cov 0.01, k 2.5": the items it knows (any order, any subset); others are ignored.
void parse_summary_comment(std::string_view line, trace_summary& s, const std::string& where, const failure& fail) {
    const auto at = line.find(summary_marker);
    if (at == std::string_view::npos) return;
    for (const auto item : split_trimmed(line.substr(at + std::strlen(summary_marker)), ',')) {
        std::vector<std::string_view> words;
        for (const auto w : split_trimmed(item, ' '))
            if (!w.empty()) words.push_back(w);
        if (words.size() < 2) continue;
        const auto number = [&](std::string_view text) {
            const auto n = detail::parse_number(text);
            if (n.problem) fail(where, "summary item '" + std::string(item) + "': '" + std::string(text) + "' " + n.problem);
            return n.value;
        };
        const auto count = [&](std::string_view text) {
            const auto n = detail::parse_integer(text);
            if (!n || *n < 0 || *n > INT_MAX)
                fail(where, "summary item '" + std::string(item) + "': '" + std::string(text) + "' is not a count");
            return *n;
        };
        if (words[0] == "source") {
            const auto source = source_named(words[1]);
            if (!source) fail(where, "summary item '" + std::string(item) + "': expected source farm or simulator");
            s.source = *source;
        } else if (words[0] == "technique") s.technique = std::string(words[1]);
        else if (words[0] == "makespan") s.makespan = number(words[1]);
        else if (words[0] == "imbalance") s.percent_imbalance = number(words[1]);
        else if (words[0] == "cov") s.cov = number(words[1]);
        else if (words[0] == "k") s.k = number(words[1]);
        else if (words[1] == "ranks") s.ranks = static_cast<int>(count(words[0]));
        else if (words[1] == "workers") s.workers = static_cast<int>(count(words[0]));
        else if (words[1] == "tasks") {
            const auto n = detail::parse_integer(words[0]);
            if (!n || *n < 0) fail(where, "summary item '" + std::string(item) + "': '" + std::string(words[0]) + "' is not a count");
            s.tasks = *n;
        }
    }
}

trace_file read_csv(const std::string& path, const std::string& text, const failure& fail) {
    trace_file t;
    std::vector<std::string> header;
    std::map<std::string, std::size_t> column;
    std::size_t header_line = 0;
    // Columns: rank first count sent started finished received calibration (the legacy CSV maps onto them).
    std::size_t c_rank = 0, c_first = 0, c_count = 0, c_sent = 0, c_started = 0, c_finished = 0, c_received = 0,
                c_calibration = 0;
    std::vector<std::pair<std::size_t, std::optional<double> resource_sample::*>> c_readings;
    bool summary_seen = false;
    std::size_t number = 0;
    std::string_view rest = text;
    while (!rest.empty()) {
        const auto end = rest.find('\n');
        std::string_view line = rest.substr(0, end);
        rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
        ++number;
        const std::string where = path + ":" + std::to_string(number);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const std::string_view content = detail::trim(line);
        if (content.empty()) continue;
        if (end == std::string_view::npos)  // the writer ends every line: a cut file does not
            fail(where, "the last line does not end with a line break (a truncated trace?)");
        if (content.front() == '#') {
            if (header.empty() && !summary_seen && content.find(summary_marker) != std::string_view::npos) {
                parse_summary_comment(content, t.summary, where, fail);
                summary_seen = true;
            }
            continue;
        }
        const auto fields = split_trimmed(line, ',');
        if (header.empty()) {
            header_line = number;
            for (std::size_t i = 0; i < fields.size(); ++i) {
                header.emplace_back(fields[i]);
                if (!column.emplace(header.back(), i).second)
                    fail(where, "the header names column '" + header.back() + "' twice");
            }
            const auto need = [&](const char* name) {
                const auto it = column.find(name);
                if (it == column.end()) fail(where, std::string("the header has no column '") + name + "'");
                return it->second;
            };
            if (column.count("rank")) {
                c_rank = need("rank"), c_sent = need("sent"), c_started = need("started");
                c_finished = need("finished"), c_received = need("received");
                for (const auto& r : readings)
                    if (const auto it = column.find(r.name); it != column.end()) c_readings.emplace_back(it->second, r.field);
            } else if (column.count("worker") && column.count("start")) {
                t.format = trace_format::legacy_simulator_csv;
                t.summary.source = trace_source::simulator;
                c_rank = need("worker"), c_sent = c_started = need("start"), c_finished = c_received = need("end");
            } else {
                fail(where, "not a pfarm trace: the header '" + printable(line) + "' is not " + csv_header +
                                " (nor the legacy pfarm-sim worker,first,count,start,end,calibration)");
            }
            c_first = need("first"), c_count = need("count"), c_calibration = need("calibration");
            continue;
        }
        if (fields.size() != header.size())
            fail(where, std::to_string(fields.size()) + " fields; the header (line " + std::to_string(header_line) +
                            ") has " + std::to_string(header.size()));
        const auto integer = [&](std::size_t i) {
            const auto v = detail::parse_integer(fields[i]);
            if (!v) fail(where, "column '" + header[i] + "': '" + printable(fields[i]) + "' is not an integer");
            return *v;
        };
        const auto real = [&](std::size_t i) {
            const auto v = detail::parse_number(fields[i]);
            if (v.problem) fail(where, "column '" + header[i] + "': '" + printable(fields[i]) + "' " + v.problem);
            return v.value;
        };
        chunk_trace c;
        const auto rank = integer(c_rank);
        if (rank > INT_MAX) fail(where, "column '" + header[c_rank] + "': " + std::string(fields[c_rank]) + " is too large");
        // Checked before the cast (chunk_problem's words): -4294967295 must not become rank 1.
        if (rank < 0) fail(where, "'rank' is " + std::to_string(rank) + "; expected >= 0");
        c.rank = static_cast<int>(rank);
        c.first = integer(c_first);
        c.count = integer(c_count);
        c.sent = real(c_sent);
        c.started = real(c_started);
        c.finished = real(c_finished);
        c.received = real(c_received);
        const auto flag = fields[c_calibration];
        if (flag == "1" || flag == "true") c.calibration = true;
        else if (flag != "0" && flag != "false")
            fail(where, "column 'calibration': '" + printable(flag) + "' is not 0 or 1");
        for (const auto& [i, field] : c_readings)
            if (!fields[i].empty()) c.sample.*field = real(i);
        if (const auto problem = chunk_problem(c); !problem.empty()) fail(where, problem);
        t.chunks.push_back(c);
    }
    if (header.empty()) fail(path, "no header line: only comments or blank lines");
    return t;
}

trace_file read_json(const std::string& path, const std::string& text, const failure& fail) {
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        // e.what() is "[json.exception.parse_error.101] parse error at line L, column C: ..."
        std::string what = e.what();
        if (const auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
        fail(path, "not valid JSON: " + what);
    }
    trace_file t;
    t.format = trace_format::json;
    if (!doc.is_object() || !doc.contains("chunks") || !doc["chunks"].is_array())
        fail(path, "not a pfarm trace: expected an object with a \"chunks\" array");
    const auto integer = [&](const nlohmann::json& j, const std::string& where, const char* name, long long max) {
        if (!j.contains(name) || !j[name].is_number_integer())
            fail(where, std::string("\"") + name + "\" is missing or not an integer");
        if (j[name].is_number_unsigned() ? j[name].get<unsigned long long>() > static_cast<unsigned long long>(max)
                                         : j[name].get<long long>() > max)
            fail(where, std::string("\"") + name + "\" is too large");
        return j[name].get<long long>();
    };
    const auto real = [&](const nlohmann::json& j, const std::string& where, const char* name) {
        if (!j.contains(name) || !j[name].is_number())
            fail(where, std::string("\"") + name + "\" is missing or not a number");
        return j[name].get<double>();
    };
    if (doc.contains("summary")) {
        const auto& s = doc["summary"];
        const std::string where = path + ": summary";
        if (!s.is_object()) fail(where, "is not an object");
        if (s.contains("source")) {
            const auto source = s["source"].is_string() ? source_named(s["source"].get<std::string>()) : std::nullopt;
            if (!source) fail(where, "\"source\" is " + s["source"].dump() + "; expected \"farm\" or \"simulator\"");
            t.summary.source = *source;
        }
        if (s.contains("technique")) {
            if (!s["technique"].is_string()) fail(where, "\"technique\" is not a string");
            t.summary.technique = s["technique"].get<std::string>();
        }
        const auto count = [&](const char* name, long long max) {
            const auto n = integer(s, where, name, max);
            if (n < 0) fail(where, std::string("\"") + name + "\" is " + std::to_string(n) + "; expected >= 0");
            return n;
        };
        if (s.contains("ranks")) t.summary.ranks = static_cast<int>(count("ranks", INT_MAX));
        if (s.contains("workers")) t.summary.workers = static_cast<int>(count("workers", INT_MAX));
        if (s.contains("tasks")) t.summary.tasks = count("tasks", LLONG_MAX);
        if (s.contains("makespan")) t.summary.makespan = real(s, where, "makespan");
        if (s.contains("percent_imbalance")) t.summary.percent_imbalance = real(s, where, "percent_imbalance");
        if (s.contains("cov")) t.summary.cov = real(s, where, "cov");
        if (s.contains("k")) t.summary.k = real(s, where, "k");
    }
    const auto& chunks = doc["chunks"];
    t.chunks.reserve(chunks.size());
    for (std::size_t i = 0; i < chunks.size(); ++i) {
        const std::string where = path + ": chunks[" + std::to_string(i) + "]";
        const auto& j = chunks[i];
        if (!j.is_object()) fail(where, "is not an object");
        chunk_trace c;
        const auto rank = integer(j, where, "rank", INT_MAX);
        // Checked before the cast (chunk_problem's words): -4294967295 must not become rank 1.
        if (rank < 0) fail(where, "'rank' is " + std::to_string(rank) + "; expected >= 0");
        c.rank = static_cast<int>(rank);
        c.first = integer(j, where, "first", LLONG_MAX);
        c.count = integer(j, where, "count", LLONG_MAX);
        c.sent = real(j, where, "sent");
        c.started = real(j, where, "started");
        c.finished = real(j, where, "finished");
        c.received = real(j, where, "received");
        if (!j.contains("calibration") || !j["calibration"].is_boolean())
            fail(where, "\"calibration\" is missing or not true or false");
        c.calibration = j["calibration"].get<bool>();
        for (const auto& r : readings)
            if (j.contains(r.name) && !j[r.name].is_null()) c.sample.*r.field = real(j, where, r.name);
        if (const auto problem = chunk_problem(c); !problem.empty()) fail(where, problem);
        t.chunks.push_back(c);
    }
    return t;
}

}  // namespace

std::string chunk_json(const chunk_trace& c) {
    std::string line = "{\"rank\":" + std::to_string(c.rank) + ",\"first\":" + std::to_string(c.first) +
                       ",\"count\":" + std::to_string(c.count) + ",\"sent\":" + exact(c.sent) + ",\"started\":" +
                       exact(c.started) + ",\"finished\":" + exact(c.finished) + ",\"received\":" + exact(c.received) +
                       ",\"calibration\":" + (c.calibration ? "true" : "false");
    for (const auto& r : readings)
        if (const auto& v = c.sample.*r.field) line += std::string(",\"") + r.name + "\":" + exact(*v);
    line += '}';
    return line;
}

void write_trace(const std::string& path, const trace_summary& summary, const std::vector<chunk_trace>& chunks,
                 const std::string& argument) {
    const auto refuse = [&](const std::string& what) {
        return invalid_argument(argument, "cannot write the trace '" + path + "': " + what);
    };
    if (path.empty()) throw invalid_argument(argument, "is empty; expected a file name (FILE.csv or FILE.json)");
    if (const auto problem = summary_problem(summary); !problem.empty()) throw refuse(problem);
    for (std::size_t i = 0; i < chunks.size(); ++i)
        if (const auto problem = chunk_problem(chunks[i]); !problem.empty())
            throw refuse("chunk " + std::to_string(i) + ": " + problem);
    if (const auto problem = total_problem(summary, chunks); !problem.empty()) throw refuse(problem);
    // Whole or not at all: through PATH.tmp, renamed once complete (a full disk leaves PATH as it was).
    write_output_file(path, argument, [&](std::ostream& out) {
        if (ends_with(path, ".json")) write_json(out, summary, chunks);
        else write_csv(out, summary, chunks);
    }, "the trace");
}

void check_trace_path(const std::string& path, const std::string& argument) {
    if (path.empty()) throw invalid_argument(argument, "is empty; expected a file name (FILE.csv or FILE.json)");
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw invalid_argument(argument, "'" + path + "' is a directory; expected a file name (FILE.csv or FILE.json)");
    const bool existed = std::filesystem::exists(path, ec);
    errno = 0;
    std::ofstream probe(path, std::ios::binary | std::ios::app);  // never truncates
    if (!probe)
        throw invalid_argument(argument, "cannot write the trace '" + path + "': cannot open it (" + std::strerror(errno) + ")");
    probe.close();
    if (!existed) std::filesystem::remove(path, ec);
}

trace_file read_trace(const std::string& path, const std::string& argument) {
    const failure fail{argument};
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) fail(path, "is a folder, not a trace file");
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, std::string("cannot open the trace (") + std::strerror(errno) + ")");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad()) fail(path, std::string("cannot read the trace (") + std::strerror(errno) + ")");
    const std::string text = buffer.str();
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) fail(path, "the trace is empty");
    if (text.find('\0') != std::string::npos) fail(path, "not a pfarm trace: a binary file (it holds NUL bytes)");
    trace_file t = text[first] == '{' ? read_json(path, text, fail) : read_csv(path, text, fail);
    if (const auto problem = total_problem(t.summary, t.chunks); !problem.empty()) fail(path, problem);
    return t;
}

}  // namespace pfarm
