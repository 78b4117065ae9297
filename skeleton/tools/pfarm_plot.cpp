// pfarm-plot: turns a trace into gnuplot data, gnuplot scripts and PNG pictures.
//
//   pfarm-plot run.csv                 -> run-gantt.{dat,gp,png}, run-installments.{dat,gp,png}
//   pfarm-plot run.json --output out/r --script-only
//
// Reads the farm's trace (farm_options::trace, the apps' --trace: CSV or JSON) or the simulator's
// (pfarm-sim --trace), telling them apart by their content. Draws
//   - the Gantt chart: one row per worker (rank), a box per chunk from the start to the end of its computation,
//     calibration chunks in another colour;
//   - the installment sequence per worker (seed 004, Fig. 4): the chunk sizes in hand-out order over time on the
//     left axis, one panel and colour per worker, with bars on the right axis: the run queue or the 1-minute load
//     average that came with the worker's request, or, when the trace has neither (the simulator's, or a farm run
//     without monitors), the time per task of each chunk, (end - start) / count.
// The data and scripts stay next to the pictures so that a user can edit a script and re-run gnuplot on it.
// The format of the traces and the pictures are described in docs/traces.md.
#include "options.hpp"

#include "pfarm/error.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

/// One chunk, whatever the trace format: the worker computed tasks [first, first + count) from start to end.
struct chunk {
    int worker = 0;
    long long first = 0;
    long long count = 0;
    double start = 0.0;
    double end = 0.0;
    bool calibration = false;
    std::optional<double> run_queue;
    std::optional<double> load1;
};

struct trace {
    bool simulated = false;  ///< pfarm-sim's CSV (simulated time, "worker"); otherwise the farm's ("rank", seconds)
    std::string format;      ///< "farm CSV", "farm JSON", "simulator CSV"
    std::optional<std::string> technique;
    std::optional<long long> ranks, tasks;
    std::optional<double> makespan, imbalance;
    std::vector<chunk> chunks;
};

[[noreturn]] void fail(const std::string& where, const std::string& what) { throw pfarm::error(where + ": " + what); }

std::string number(double v) {
    if (std::isnan(v)) return "NaN";
    char buffer[32];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, v);
    return std::string(buffer, r.ptr);
}

/// `value` rounded to `digits` significant digits, for titles.
std::string rounded(double v, int digits = 4) {
    std::ostringstream out;
    out.precision(digits);
    out << v;
    return out.str();
}

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return {};
    const auto e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& line, char separator) {
    std::vector<std::string> fields;
    std::string::size_type begin = 0;
    while (true) {
        const auto comma = line.find(separator, begin);
        fields.push_back(trim(line.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin)));
        if (comma == std::string::npos) return fields;
        begin = comma + 1;
    }
}

template <class T>
std::optional<T> parse_number(const std::string& text) {
    T value{};
    const auto* end = text.data() + text.size();
    const auto r = std::from_chars(text.data(), end, value);
    if (text.empty() || r.ec != std::errc() || r.ptr != end) return std::nullopt;
    if constexpr (std::is_floating_point_v<T>)
        if (!std::isfinite(value)) return std::nullopt;
    return value;
}

/// Checks what every format shares; `where` names the file and line (or JSON element).
void check_chunk(const chunk& c, const std::string& where) {
    if (c.worker < 0) fail(where, "the worker/rank is " + std::to_string(c.worker) + "; expected >= 0");
    if (c.first < 0) fail(where, "'first' is " + std::to_string(c.first) + "; expected >= 0");
    if (c.count < 1) fail(where, "'count' is " + std::to_string(c.count) + "; expected >= 1");
    if (c.end < c.start)
        fail(where, "the chunk ends (" + number(c.end) + ") before it starts (" + number(c.start) + ")");
}

/// "# pfarm trace: technique multi, 5 ranks, 2000 tasks, makespan 1.2 s, imbalance 3.4 %, cov 0.01"
void parse_summary_comment(const std::string& line, trace& t) {
    const std::string marker = "pfarm trace:";
    const auto at = line.find(marker);
    if (at == std::string::npos) return;
    for (const auto& item : split(line.substr(at + marker.size()), ',')) {
        const auto words = split(item, ' ');
        if (words.size() < 2) continue;
        if (words[0] == "technique") t.technique = words[1];
        else if (words[0] == "makespan") t.makespan = parse_number<double>(words[1]);
        else if (words[0] == "imbalance") t.imbalance = parse_number<double>(words[1]);
        else if (words[1] == "ranks") t.ranks = parse_number<long long>(words[0]);
        else if (words[1] == "tasks") t.tasks = parse_number<long long>(words[0]);
    }
}

trace read_csv(const std::string& path, std::istream& in) {
    trace t;
    std::string line;
    int line_number = 0;
    std::vector<std::string> header;
    int header_line = 0;
    std::map<std::string, std::size_t> column;
    const auto need = [&](const std::string& name) {
        const auto it = column.find(name);
        if (it == column.end())
            fail(path + ":" + std::to_string(header_line), "the header has no column '" + name + "'");
        return it->second;
    };
    std::size_t c_worker = 0, c_first = 0, c_count = 0, c_start = 0, c_end = 0, c_calibration = 0;
    std::optional<std::size_t> c_run_queue, c_load1;
    while (std::getline(in, line)) {
        ++line_number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        const std::string where = path + ":" + std::to_string(line_number);
        if (trim(line).empty()) continue;
        if (trim(line)[0] == '#') {
            if (header.empty()) parse_summary_comment(line, t);
            continue;
        }
        if (header.empty()) {
            header = split(line, ',');
            header_line = line_number;
            for (std::size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
            if (column.count("rank") && column.count("started")) {
                t.format = "farm CSV";
                c_worker = need("rank");
                c_start = need("started");
                c_end = need("finished");
            } else if (column.count("worker") && column.count("start")) {
                t.format = "simulator CSV";
                t.simulated = true;
                c_worker = need("worker");
                c_start = need("start");
                c_end = need("end");
            } else {
                fail(where, "not a pfarm trace: the header '" + line +
                                "' is neither the farm's (rank,first,count,sent,started,finished,received,calibration,"
                                "...) nor pfarm-sim's (worker,first,count,start,end,calibration)");
            }
            c_first = need("first");
            c_count = need("count");
            c_calibration = need("calibration");
            if (column.count("run_queue")) c_run_queue = column["run_queue"];
            if (column.count("load1")) c_load1 = column["load1"];
            continue;
        }
        const auto fields = split(line, ',');
        if (fields.size() != header.size())
            fail(where, std::to_string(fields.size()) + " fields; the header (line " + std::to_string(header_line) +
                            ") has " + std::to_string(header.size()));
        const auto integer = [&](std::size_t i) {
            const auto v = parse_number<long long>(fields[i]);
            if (!v) fail(where, "column '" + header[i] + "': '" + fields[i] + "' is not an integer");
            return *v;
        };
        const auto real = [&](std::size_t i) {
            const auto v = parse_number<double>(fields[i]);
            if (!v) fail(where, "column '" + header[i] + "': '" + fields[i] + "' is not a finite number");
            return *v;
        };
        const auto optional_real = [&](const std::optional<std::size_t>& i) -> std::optional<double> {
            if (!i || fields[*i].empty()) return std::nullopt;
            return real(*i);
        };
        chunk c;
        const auto worker = integer(c_worker);
        if (worker > 1'000'000'000)
            fail(where, "column '" + header[c_worker] + "': " + fields[c_worker] + " is too large");
        c.worker = static_cast<int>(worker);
        c.first = integer(c_first);
        c.count = integer(c_count);
        c.start = real(c_start);
        c.end = real(c_end);
        const auto& flag = fields[c_calibration];
        if (flag == "1" || flag == "true") c.calibration = true;
        else if (flag != "0" && flag != "false")
            fail(where, "column 'calibration': '" + flag + "' is not 0 or 1");
        c.run_queue = optional_real(c_run_queue);
        c.load1 = optional_real(c_load1);
        check_chunk(c, where);
        t.chunks.push_back(c);
    }
    if (header.empty()) fail(path, "no header line: an empty file, or only comments");
    return t;
}

trace read_json(const std::string& path, const std::string& text) {
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        // e.what() is "[json.exception.parse_error.101] parse error at line L, column C: ..."
        std::string what = e.what();
        if (const auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
        fail(path, "not valid JSON: " + what);
    }
    trace t;
    t.format = "farm JSON";
    if (!doc.is_object() || !doc.contains("chunks") || !doc["chunks"].is_array())
        fail(path, "not a pfarm trace: expected an object with a \"chunks\" array");
    if (doc.contains("summary") && doc["summary"].is_object()) {
        const auto& s = doc["summary"];
        if (s.contains("technique") && s["technique"].is_string()) t.technique = s["technique"].get<std::string>();
        if (s.contains("ranks") && s["ranks"].is_number_integer()) t.ranks = s["ranks"].get<long long>();
        if (s.contains("tasks") && s["tasks"].is_number_integer()) t.tasks = s["tasks"].get<long long>();
        if (s.contains("makespan") && s["makespan"].is_number()) t.makespan = s["makespan"].get<double>();
        if (s.contains("percent_imbalance") && s["percent_imbalance"].is_number())
            t.imbalance = s["percent_imbalance"].get<double>();
    }
    const auto& chunks = doc["chunks"];
    for (std::size_t i = 0; i < chunks.size(); ++i) {
        const std::string where = path + ": chunks[" + std::to_string(i) + "]";
        const auto& j = chunks[i];
        if (!j.is_object()) fail(where, "is not an object");
        const auto integer = [&](const char* name) {
            if (!j.contains(name) || !j[name].is_number_integer())
                fail(where, std::string("\"") + name + "\" is missing or not an integer");
            return j[name].get<long long>();
        };
        const auto real = [&](const char* name) {
            if (!j.contains(name) || !j[name].is_number())
                fail(where, std::string("\"") + name + "\" is missing or not a number");
            return j[name].get<double>();
        };
        const auto optional_real = [&](const char* name) -> std::optional<double> {
            if (!j.contains(name) || j[name].is_null()) return std::nullopt;
            return real(name);
        };
        chunk c;
        const auto rank = integer("rank");
        if (rank > 1'000'000'000) fail(where, "\"rank\" is too large");
        c.worker = static_cast<int>(rank);
        c.first = integer("first");
        c.count = integer("count");
        c.start = real("started");
        c.end = real("finished");
        if (j.contains("calibration")) {
            if (!j["calibration"].is_boolean()) fail(where, "\"calibration\" is not true or false");
            c.calibration = j["calibration"].get<bool>();
        }
        c.run_queue = optional_real("run_queue");
        c.load1 = optional_real("load1");
        check_chunk(c, where);
        t.chunks.push_back(c);
    }
    return t;
}

trace read_trace(const std::string& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) fail(path, "is a folder, not a trace file");
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, std::string("cannot open the trace (") + std::strerror(errno) + ")");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) fail(path, "the trace is empty");
    trace t;
    if (text[first] == '{' || text[first] == '[') {
        t = read_json(path, text);
    } else {
        std::istringstream lines(text);
        t = read_csv(path, lines);
    }
    if (t.chunks.empty()) fail(path, "the trace has no chunks");
    return t;
}

/// What the bars of the installment chart show.
enum class bars { run_queue, load1, task_time };

bars choose_bars(const std::string& requested, const trace& t) {
    const bool has_queue = std::any_of(t.chunks.begin(), t.chunks.end(), [](const chunk& c) { return c.run_queue; });
    const bool has_load = std::any_of(t.chunks.begin(), t.chunks.end(), [](const chunk& c) { return c.load1; });
    if (requested == "auto") return has_queue ? bars::run_queue : has_load ? bars::load1 : bars::task_time;
    if (requested == "run-queue") {
        if (!has_queue) throw pfarm::invalid_argument("--bars", "run-queue: the trace has no run_queue readings");
        return bars::run_queue;
    }
    if (requested == "load1") {
        if (!has_load) throw pfarm::invalid_argument("--bars", "load1: the trace has no load1 readings");
        return bars::load1;
    }
    if (requested == "task-time") return bars::task_time;
    throw pfarm::invalid_argument("--bars", "is '" + requested + "'; expected auto, run-queue, load1 or task-time");
}

/// The bar of a chunk; the time per task in ms for the farm's traces (seconds would read 0.001), as is for the
/// simulator's (its own time unit).
double bar_value(bars b, const chunk& c, bool simulated) {
    switch (b) {
    case bars::run_queue: return c.run_queue.value_or(NAN);
    case bars::load1: return c.load1.value_or(NAN);
    case bars::task_time: return (c.end - c.start) / static_cast<double>(c.count) * (simulated ? 1.0 : 1000.0);
    }
    return NAN;
}

/// A gnuplot single-quoted string.
std::string quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        out += c;
        if (c == '\'') out += '\'';
    }
    return out + "'";
}

/// The terminal lines shared by both scripts: pngcairo where gnuplot has it, libgd's png otherwise.
std::string terminal(int width, int height, const std::string& png) {
    const auto size = std::to_string(width) + "," + std::to_string(height);
    return "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
           "    set terminal pngcairo noenhanced size " + size + " font ',10'\n"
           "} else {\n"
           "    set terminal png noenhanced size " + size + "\n"
           "}\n"
           "set output " + quote(png) + "\n";
}

void write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    if (!out) fail(path.string(), std::string("cannot write (") + std::strerror(errno) + ")");
    out << text;
    if (!out.flush()) fail(path.string(), "writing failed");
}

struct layout {
    std::vector<int> workers;  ///< sorted
    double end = 0.0;          ///< the makespan, or the last chunk's end
    long long tasks = 0;
    std::string noun;          ///< "rank" or "worker"
    std::string title;
    std::string time_label;
};

layout make_layout(const trace& t, const std::string& trace_name) {
    layout l;
    std::set<int> workers;
    for (const auto& c : t.chunks) {
        workers.insert(c.worker);
        l.end = std::max(l.end, c.end);
        l.tasks += c.count;
    }
    l.workers.assign(workers.begin(), workers.end());
    l.noun = t.simulated ? "worker" : "rank";
    std::ostringstream title;
    if (t.simulated) {
        title << "pfarm-sim trace " << trace_name << ": " << l.workers.size() << " workers, " << l.tasks
              << " tasks, last chunk ends at " << rounded(l.end);
        l.time_label = "simulated time";
    } else {
        if (t.makespan) l.end = std::max(l.end, *t.makespan);
        title << "pfarm trace " << trace_name << ": " << (t.technique ? "technique " + *t.technique + ", " : "")
              << (t.ranks ? std::to_string(*t.ranks) + " ranks, " : "") << t.tasks.value_or(l.tasks) << " tasks";
        if (t.makespan) title << ", makespan " << rounded(*t.makespan) << " s";
        if (t.imbalance) title << ", imbalance " << rounded(*t.imbalance, 3) << " %";
        l.time_label = "time since the farm started (s)";
    }
    l.title = title.str();
    return l;
}

struct files {
    fs::path dat, gp, png;
};

files names(const std::string& prefix, const std::string& what) {
    return {prefix + "-" + what + ".dat", prefix + "-" + what + ".gp", prefix + "-" + what + ".png"};
}

/// Gantt chart: data sorted by worker and start; `shade` alternates between neighbouring ordinary chunks.
void write_gantt(const trace& t, const layout& l, const files& f, const std::string& trace_path) {
    std::vector<chunk> sorted = t.chunks;
    std::stable_sort(sorted.begin(), sorted.end(), [](const chunk& a, const chunk& b) {
        return a.worker != b.worker ? a.worker < b.worker : a.start < b.start;
    });
    std::string dat = "# pfarm-plot Gantt data from " + trace_path + " (" + t.format + ")\n"
                      "# " + l.noun + " start end count first calibration shade\n";
    std::map<int, int> shade;
    bool any_calibration = false;
    for (const auto& c : sorted) {
        const int s = c.calibration ? 0 : shade[c.worker]++ % 2;
        any_calibration = any_calibration || c.calibration;
        dat += std::to_string(c.worker) + " " + number(c.start) + " " + number(c.end) + " " + std::to_string(c.count) +
               " " + std::to_string(c.first) + " " + (c.calibration ? "1" : "0") + " " + std::to_string(s) + "\n";
    }
    write_file(f.dat, dat);

    const int rows = static_cast<int>(l.workers.size());
    std::string ytics;
    for (int w : l.workers)
        ytics += (ytics.empty() ? "" : ", ") + quote(l.noun + " " + std::to_string(w)) + " " + std::to_string(w);
    std::ostringstream gp;
    gp << "# pfarm-plot: Gantt chart of " << trace_path << ": one row per " << l.noun
       << ", a box per chunk from the start to the end of its computation.\n"
       << "# Edit and re-run in this folder: gnuplot " << f.gp.filename().string() << "\n"
       << "# Data columns (" << f.dat.filename().string() << "): 1 " << l.noun
       << ", 2 start, 3 end, 4 count (tasks), 5 first task, 6 calibration (1/0), 7 shade (alternates per " << l.noun
       << ")\n"
       << terminal(1000, std::max(300, 140 + 36 * rows), f.png.filename().string())
       << "data = " << quote(f.dat.filename().string()) << "\n"
       << "end = " << number(l.end) << "\n"
       << "set title " << quote(l.title) << "\n"
       << "set xlabel " << quote(l.time_label) << "\n"
       << "set xrange [0:end * 1.02]\n"
       << "set yrange [" << number(l.workers.back() + 0.6) << ":" << number(l.workers.front() - 0.6) << "]\n"
       << "set ytics (" << ytics << ")\n"
       << "set grid xtics\n"
       << "set key above horizontal\n"
       << "set style fill solid 1.0 noborder\n"
       << "set arrow from end, graph 0 to end, graph 1 nohead dashtype 2 lc rgb 'gray30'\n"
       << "# chunk sizes are written inside the boxes that are wide enough\n"
       << "wide(x) = x > 0.04 * end\n"
       << "plot data using 2:($6 == 0 ? $1 : NaN):2:3:($1 - 0.38):($1 + 0.38):($7 == 0 ? 0x4477aa : 0x77aadd) \\\n"
       << "         with boxxyerror lc rgb variable notitle, \\\n";
    if (any_calibration)
        gp << "     data using 2:($6 == 1 ? $1 : NaN):2:3:($1 - 0.38):($1 + 0.38) \\\n"
           << "         with boxxyerror lc rgb '#ee7733' title 'calibration chunk', \\\n";
    gp << "     NaN with boxes lc rgb '#4477aa' title 'chunk (shades alternate)', \\\n"
       << "     data using (($2 + $3) / 2):1:(wide($3 - $2) ? sprintf('%d', $4) : '') \\\n"
       << "         with labels tc rgb 'white' notitle\n";
    write_file(f.gp, gp.str());
}

/// Installment chart: one panel per worker, its chunk sizes over time, and bars on the right axis.
void write_installments(const trace& t, const layout& l, const files& f, const std::string& trace_path, bars b,
                        bool by_index) {
    std::map<int, std::vector<chunk>> per_worker;
    for (const auto& c : t.chunks) per_worker[c.worker].push_back(c);
    long long largest = 1;
    double highest = 0.0;
    std::string dat = "# pfarm-plot installment data from " + trace_path + " (" + t.format + "), one block per " +
                      l.noun + " (gnuplot index 0, 1, ...)\n"
                      "# n start end count calibration bar " + l.noun + "\n";
    bool first_block = true;
    for (auto& [worker, chunks] : per_worker) {
        std::stable_sort(chunks.begin(), chunks.end(),
                         [](const chunk& a, const chunk& b) { return a.start < b.start; });
        if (!first_block) dat += "\n\n";
        first_block = false;
        dat += "# " + l.noun + " " + std::to_string(worker) + "\n";
        int n = 0;
        for (const auto& c : chunks) {
            const double bar = bar_value(b, c, t.simulated);
            largest = std::max(largest, c.count);
            if (!std::isnan(bar)) highest = std::max(highest, bar);
            dat += std::to_string(++n) + " " + number(c.start) + " " + number(c.end) + " " + std::to_string(c.count) +
                   " " + (c.calibration ? "1" : "0") + " " + number(bar) + " " + std::to_string(worker) + "\n";
        }
    }
    write_file(f.dat, dat);

    std::string bar_label, bar_key, bar_meaning;
    switch (b) {
    case bars::run_queue:
        bar_label = "run queue (bars)";
        bar_key = "run queue";
        bar_meaning = "bars: the run queue the worker read as it returned the chunk's results";
        break;
    case bars::load1:
        bar_label = "load average, 1 min (bars)";
        bar_key = "load average";
        bar_meaning = "bars: the 1-minute load average the worker read as it returned the chunk's results";
        break;
    case bars::task_time:
        bar_label = std::string("time per task") + (t.simulated ? "" : " (ms)") + " (bars)";
        bar_key = "time per task";
        bar_meaning = std::string("bars: time per task of each chunk, (end - start) / count") +
                      (t.simulated ? "" : ", in ms");
        break;
    }
    std::size_t most = 1;
    for (const auto& [worker, chunks] : per_worker) most = std::max(most, chunks.size());
    const int panels = static_cast<int>(per_worker.size());
    const int columns = panels <= 3 ? 1 : panels <= 8 ? 2 : static_cast<int>(std::ceil(std::sqrt(panels)));
    const int rows = (panels + columns - 1) / columns;
    std::string list;
    for (int w : l.workers) list += (list.empty() ? "" : " ") + std::to_string(w);

    std::ostringstream gp;
    gp << "# pfarm-plot: installment sizes of " << trace_path << ", one panel per " << l.noun
       << " (seed 004, Fig. 4):\n"
       << "# the chunk sizes in hand-out order " << (by_index ? "by installment number" : "at each chunk's start")
       << " (line, left axis), and on the right axis the " << bar_meaning << ".\n"
       << "# Edit and re-run in this folder: gnuplot " << f.gp.filename().string() << "\n"
       << "# Data columns (" << f.dat.filename().string() << ", one block per " << l.noun
       << "): 1 installment number, 2 start, 3 end, 4 count (tasks), 5 calibration (1/0), 6 bar value (NaN: none), 7 "
       << l.noun << "\n"
       << terminal(std::min(4000, 520 * columns), std::min(4000, 60 + 240 * rows), f.png.filename().string())
       << "data = " << quote(f.dat.filename().string()) << "\n"
       << "workers = " << quote(list) << "\n"
       << "end = " << number(l.end) << "\n"
       << "by_index = " << (by_index ? 1 : 0) << "   # 1: x is the installment number; 0: x is the chunk's start time\n"
       << "set multiplot layout " << rows << "," << columns << " title " << quote(l.title) << " . \"\\n\" . "
       << quote(bar_meaning) << "\n"
       << "if (by_index) {\n"
       << "    set xrange [0.4:" << most << ".6]\n"
       << "    set xlabel 'installment'\n"
       << "    set boxwidth 0.8\n"
       << "} else {\n"
       << "    set xrange [0:end * 1.02]\n"
       << "    set xlabel " << quote(l.time_label) << "\n"
       << "}\n"
       << "set yrange [0:" << number(std::ceil(static_cast<double>(largest) * 1.4)) << "]\n"
       << "set ylabel 'installment (tasks)'\n"
       << "set ytics nomirror\n"
       << "set y2range [0:" << number(highest > 0.0 ? highest * 1.4 : 1.0) << "]\n"
       << "set y2tics\n"
       << "set y2label " << quote(bar_label) << "\n"
       << "set key top right opaque font ',8'\n"
       << "set style fill transparent solid 0.25 border lc rgb 'gray40'\n"
       << "do for [i = 1:words(workers)] {\n"
       << "    set title " << quote(l.noun + " ") << " . word(workers, i)\n"
       << "    if (by_index) {\n"
       << "        plot data index (i - 1) using 1:6 axes x1y2 with boxes dashtype 2 lc rgb 'gray40' title "
       << quote(bar_key) << ", \\\n"
       << "             data index (i - 1) using 1:4 with linespoints lc i lw 1.5 pt 7 ps 0.6 title 'installment', \\\n"
       << "             data index (i - 1) using 1:($5 == 1 ? $4 : NaN) with points pt 6 ps 1.6 lc rgb 'black' "
          "title 'calibration'\n"
       << "    } else {\n"
       << "        # a bar spans its chunk, from start to end\n"
       << "        plot data index (i - 1) using (($2 + $3) / 2):6:2:3:(0):6 axes x1y2 with boxxyerror dashtype 2 "
          "lc rgb 'gray40' title " << quote(bar_key) << ", \\\n"
       << "             data index (i - 1) using 2:4 with linespoints lc i lw 1.5 pt 7 ps 0.6 title 'installment', \\\n"
       << "             data index (i - 1) using 2:($5 == 1 ? $4 : NaN) with points pt 6 ps 1.6 lc rgb 'black' "
          "title 'calibration'\n"
       << "    }\n"
       << "}\n"
       << "unset multiplot\n";
    write_file(f.gp, gp.str());
}

/// Runs `gnuplot script` in the script's folder. Returns false when the program cannot be started (not installed);
/// throws when gnuplot fails.
bool run_gnuplot(const std::string& program, const fs::path& script) {
    // The child changes into the script's folder: a program named by a relative path is resolved first.
    const std::string gnuplot =
        program.find('/') == std::string::npos ? program : fs::absolute(program).lexically_normal().string();
    const fs::path folder = script.has_parent_path() ? script.parent_path() : fs::path(".");
    const std::string name = script.filename().string();
    const char* argv[] = {gnuplot.c_str(), name.c_str(), nullptr};
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw pfarm::error(std::string("pipe: ") + std::strerror(errno));
    std::cout.flush();
    const pid_t pid = ::fork();
    if (pid < 0) throw pfarm::error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        // What failed (0: chdir, 1: exec) and its errno, through the close-on-exec pipe.
        int report[2] = {0, 0};
        ::close(pipe_fds[0]);
        if (::chdir(folder.c_str()) == 0) {
            ::execvp(gnuplot.c_str(), const_cast<char* const*>(argv));
            report[0] = 1;
        }
        report[1] = errno;
        [[maybe_unused]] const auto written = ::write(pipe_fds[1], report, sizeof report);
        ::_exit(127);
    }
    ::close(pipe_fds[1]);
    int report[2] = {0, 0};
    const auto got = ::read(pipe_fds[0], report, sizeof report);
    ::close(pipe_fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (got == static_cast<ssize_t>(sizeof report)) {
        if (report[0] == 0)
            fail(folder.string(), std::string("cannot change into it (") + std::strerror(report[1]) + ")");
        if (report[1] == ENOENT || report[1] == EACCES || report[1] == ENOTDIR) return false;
        fail(script.string(), "cannot run " + gnuplot + " (" + std::strerror(report[1]) + ")");
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail(script.string(), gnuplot + " failed (" +
                                  (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                                     : std::string("killed by a signal")) +
                                  "); its messages are above");
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"pfarm-plot: turns a pfarm trace (the farm's CSV or JSON, or pfarm-sim --trace's CSV) into gnuplot "
                 "data, scripts and PNGs: PREFIX-gantt (chunks per worker over time) and PREFIX-installments "
                 "(installment sizes per worker with the load as bars, seed 004 Fig. 4)"};
    std::string trace_path, prefix, bars_name = "auto", x_axis = "time", gnuplot = "gnuplot";
    bool script_only = false;
    app.add_option("trace", trace_path, "the trace file (CSV or JSON)")->required();
    app.add_option("--output,-o", prefix,
                   "prefix of the files written (default: the trace's path without its extension)");
    app.add_flag("--script-only", script_only, "write the data and gnuplot scripts, do not run gnuplot");
    app.add_option("--bars", bars_name,
                   "what the installment chart's bars show: auto (run_queue, else load1, else task-time), run-queue, "
                   "load1, task-time ((end - start) / count of each chunk)")
        ->capture_default_str();
    app.add_option("--x-axis", x_axis, "installment chart's x axis: time (each chunk at its start) or index")
        ->capture_default_str();
    app.add_option("--gnuplot", gnuplot, "the gnuplot program")->capture_default_str();
    return pfarm::tools::run_tool("pfarm-plot", app, argc, argv, [&] {
        if (x_axis != "time" && x_axis != "index")
            throw pfarm::invalid_argument("--x-axis", "is '" + x_axis + "'; expected time or index");
        const trace t = read_trace(trace_path);
        const bars b = choose_bars(bars_name, t);
        if (prefix.empty()) prefix = fs::path(trace_path).replace_extension("").string();
        const fs::path prefix_path(prefix);
        if (prefix_path.filename().empty())
            throw pfarm::invalid_argument("--output", "'" + prefix + "' has no file name part");
        if (prefix_path.has_parent_path()) {
            std::error_code ec;
            fs::create_directories(prefix_path.parent_path(), ec);
            if (ec)
                throw pfarm::invalid_argument("--output", "cannot create '" + prefix_path.parent_path().string() +
                                                              "' (" + ec.message() + ")");
        }
        const std::string trace_name = fs::path(trace_path).filename().string();
        const layout l = make_layout(t, trace_name);
        const files gantt = names(prefix, "gantt"), installments = names(prefix, "installments");
        write_gantt(t, l, gantt, trace_name);
        std::cout << gantt.dat.string() << "\n" << gantt.gp.string() << "\n";
        write_installments(t, l, installments, trace_name, b, x_axis == "index");
        std::cout << installments.dat.string() << "\n" << installments.gp.string() << "\n";
        if (script_only) return 0;
        for (const auto* f : {&gantt, &installments}) {
            if (!run_gnuplot(gnuplot, f->gp)) {
                const fs::path folder = f->gp.has_parent_path() ? f->gp.parent_path() : fs::path(".");
                throw pfarm::error("cannot run '" + gnuplot +
                                   "' (not found): is gnuplot installed? The data and scripts are written; make "
                                   "the pictures with: cd " + folder.string() + " && gnuplot " +
                                   gantt.gp.filename().string() + " " + installments.gp.filename().string());
            }
            if (!fs::exists(f->png)) fail(f->gp.string(), gnuplot + " ran but did not write " + f->png.string());
            std::cout << f->png.string() << "\n";
        }
        return 0;
    });
}
