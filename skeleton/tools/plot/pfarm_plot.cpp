// pfarm-plot: turns a trace into gnuplot data, gnuplot scripts and PNG pictures.
//
//   pfarm-plot run.csv                 -> run-gantt.{dat,gp,png}, run-installments.{dat,gp,png}
//   pfarm-plot run.json --output out/r --script-only
//
// Reads any pfarm trace, the farm's (farm_options::output.trace, the apps' --trace) or the simulator's (pfarm-sim
// --trace), CSV or JSON, through the one trace module (pfarm/trace.hpp). Draws
//   - the Gantt chart: one row per worker (rank), a box per chunk from the start to the end of its computation,
//     calibration chunks in another colour;
//   - the installment sequence per worker (Fig. 4 of Gonzalez-Velez & Cole, "Adaptive statistical scheduling of
//     divisible workloads in heterogeneous systems"): the chunk sizes in hand-out order over time on the
//     left axis, one panel and colour per worker, with bars on the right axis: the run queue or the 1-minute load
//     average that came with the worker's request, or, when the trace has neither (the simulator's, or a farm run
//     without monitors), the time per task of each chunk, (end - start) / count.
// The data and scripts stay next to the pictures so that a user can edit a script and re-run gnuplot on it.
// The format of the traces and the pictures are described in docs/traces.md.
#include "options.hpp"

#include "pfarm/error.hpp"
#include "pfarm/output_file.hpp"
#include "pfarm/trace.hpp"

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

using chunk = pfarm::chunk_trace;
using trace = pfarm::trace_file;

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

/// A simulator's trace: simulated time, 0-based workers; otherwise a farm's (seconds, MPI ranks).
bool simulated(const trace& t) { return t.summary.source == pfarm::trace_source::simulator; }

/// "farm CSV", "simulator JSON", "legacy simulator CSV", for the data files' comments.
std::string format_name(const trace& t) {
    if (t.format == pfarm::trace_format::legacy_simulator_csv) return "legacy simulator CSV";
    return std::string(simulated(t) ? "simulator " : "farm ") + (t.format == pfarm::trace_format::json ? "JSON" : "CSV");
}

/// The trace to draw, read through the one trace module; the errors name the file (and the line or element).
trace read(const std::string& path) {
    trace t = pfarm::read_trace(path, "trace");
    if (t.chunks.empty()) throw pfarm::invalid_argument("trace", path + ": the trace has no chunks");
    return t;
}

/// What the bars of the installment chart show.
enum class bars { run_queue, load1, task_time };

bars choose_bars(const std::string& requested, const trace& t) {
    const auto any = [&t](std::optional<double> pfarm::resource_sample::*reading) {
        return std::any_of(t.chunks.begin(), t.chunks.end(), [reading](const chunk& c) { return (c.sample.*reading).has_value(); });
    };
    const bool has_queue = any(&pfarm::resource_sample::run_queue), has_load = any(&pfarm::resource_sample::load1);
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
double bar_value(bars b, const chunk& c, bool in_simulated_time) {
    switch (b) {
    case bars::run_queue: return c.sample.run_queue.value_or(NAN);
    case bars::load1: return c.sample.load1.value_or(NAN);
    case bars::task_time:
        return (c.finished - c.started) / static_cast<double>(c.count) * (in_simulated_time ? 1.0 : 1000.0);
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
    pfarm::write_output_file(path.string(), "--output", text);  // whole or not at all, naming --output
}

struct layout {
    std::vector<int> workers;  ///< sorted
    double end = 0.0;          ///< the makespan, or the last chunk's end
    pfarm::task_count tasks = 0;
    std::string noun;          ///< "rank" or "worker"
    std::string title;
    std::string time_label;
};

layout make_layout(const trace& t, const std::string& trace_name) {
    layout l;
    std::set<int> workers;
    for (const auto& c : t.chunks) {
        workers.insert(c.rank);
        l.end = std::max(l.end, c.finished);
        l.tasks += c.count;
    }
    l.workers.assign(workers.begin(), workers.end());
    const auto& s = t.summary;
    l.noun = simulated(t) ? "worker" : "rank";
    std::ostringstream title;
    if (simulated(t)) {
        title << "pfarm-sim trace " << trace_name << ": " << (s.technique ? "technique " + *s.technique + ", " : "")
              << l.workers.size() << " workers, " << l.tasks << " tasks, last chunk ends at " << rounded(l.end);
        l.time_label = "simulated time";
    } else {
        if (s.makespan) l.end = std::max(l.end, *s.makespan);
        title << "pfarm trace " << trace_name << ": " << (s.technique ? "technique " + *s.technique + ", " : "")
              << (s.ranks ? std::to_string(*s.ranks) + " ranks, " : "") << s.tasks.value_or(l.tasks) << " tasks";
        if (s.makespan) title << ", makespan " << rounded(*s.makespan) << " s";
        if (s.percent_imbalance) title << ", imbalance " << rounded(*s.percent_imbalance, 3) << " %";
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
        return a.rank != b.rank ? a.rank < b.rank : a.started < b.started;
    });
    std::string dat = "# pfarm-plot Gantt data from " + trace_path + " (" + format_name(t) + ")\n"
                      "# " + l.noun + " start end count first calibration shade\n";
    std::map<int, int> shade;
    bool any_calibration = false;
    for (const auto& c : sorted) {
        const int s = c.calibration ? 0 : shade[c.rank]++ % 2;
        any_calibration = any_calibration || c.calibration;
        dat += std::to_string(c.rank) + " " + number(c.started) + " " + number(c.finished) + " " + std::to_string(c.count) +
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
    for (const auto& c : t.chunks) per_worker[c.rank].push_back(c);
    pfarm::task_count largest = 1;
    double highest = 0.0;
    std::string dat = "# pfarm-plot installment data from " + trace_path + " (" + format_name(t) + "), one block per " +
                      l.noun + " (gnuplot index 0, 1, ...)\n"
                      "# n start end count calibration bar " + l.noun + "\n";
    bool first_block = true;
    for (auto& [worker, chunks] : per_worker) {
        std::stable_sort(chunks.begin(), chunks.end(),
                         [](const chunk& a, const chunk& b) { return a.started < b.started; });
        if (!first_block) dat += "\n\n";
        first_block = false;
        dat += "# " + l.noun + " " + std::to_string(worker) + "\n";
        int n = 0;
        for (const auto& c : chunks) {
            const double bar = bar_value(b, c, simulated(t));
            largest = std::max(largest, c.count);
            if (!std::isnan(bar)) highest = std::max(highest, bar);
            dat += std::to_string(++n) + " " + number(c.started) + " " + number(c.finished) + " " + std::to_string(c.count) +
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
        bar_label = std::string("time per task") + (simulated(t) ? "" : " (ms)") + " (bars)";
        bar_key = "time per task";
        bar_meaning = std::string("bars: time per task of each chunk, (end - start) / count") +
                      (simulated(t) ? "" : ", in ms");
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
       << " (Gonzalez-Velez & Cole 2009, Fig. 4):\n"
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

/// pfarm-plot's trace is its positional argument "trace", not the farm's --trace (options.hpp's shared table).
constexpr pfarm::tools::flag_name plot_flags[] = {{"trace", "trace"}};

int main(int argc, char** argv) {
    CLI::App app{"pfarm-plot: turns a pfarm trace (the farm's CSV or JSON, or pfarm-sim --trace's CSV) into gnuplot "
                 "data, scripts and PNGs: PREFIX-gantt (chunks per worker over time) and PREFIX-installments "
                 "(installment sizes per worker with the load as bars, Gonzalez-Velez & Cole 2009, Fig. 4)"};
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
        const trace t = read(trace_path);
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
    }, plot_flags);
}
