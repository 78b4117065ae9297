// pfarm simulator: the platform and cost parsers, load_platform() (a platform file, JSON) and load_costs() (measured
// per-task costs: a list of numbers, or a trace of an ss run), each error naming the caller's argument, the file
// and the field or line.
#include "pfarm/simulator.hpp"

#include "pfarm/detail/numbers.hpp"
#include "simulator_model.hpp"

#include "pfarm/error.hpp"
#include "pfarm/sample.hpp"
#include "pfarm/trace.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace pfarm::sim {

using model::show;

platform load_platform(const std::string& path, const std::string& argument) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))  // it opens, but reading it throws std::ios_base::failure
        throw invalid_argument(argument, "'" + path + "' is a directory; expected a platform file (JSON)");
    std::ifstream in(path);
    if (!in) throw invalid_argument(argument, "cannot open '" + path + "'");
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw invalid_argument(argument, "'" + path + "' is not valid JSON: " + e.what());
    }
    const auto bad = [&](const std::string& field, const std::string& why) {
        return invalid_argument(argument, "'" + path + "': field '" + field + "' " + why);
    };
    if (!j.is_object()) throw invalid_argument(argument, "'" + path + "': expected a JSON object");
    for (const auto& [key, value] : j.items()) {
        (void)value;
        if (key != "task_times" && key != "overhead" && key != "latency" && key != "setup" && key != "load_changes" &&
            key != "monitors" &&
            key != "master_overhead" && key != "supermaster_overhead" && key != "master_latency" &&
            key != "atomic_overhead" && key != "atomic_latency")
            throw bad(key, "is unknown; expected task_times, overhead, latency, setup, load_changes, monitors, master_overhead, "
                           "supermaster_overhead, master_latency, atomic_overhead, atomic_latency");
    }
    const auto number = [&](const nlohmann::json& v, const std::string& field) {
        if (!v.is_number()) throw bad(field, "is " + v.dump() + "; expected a number");
        return v.get<double>();
    };
    platform pl;
    if (!j.contains("task_times")) throw bad("task_times", "is missing; expected a list of per-task times");
    const auto& times = j["task_times"];
    if (!times.is_array() || times.empty())
        throw bad("task_times", "is " + times.dump() + "; expected a non-empty list of numbers > 0");
    for (std::size_t i = 0; i < times.size(); ++i) {
        const std::string field = "task_times[" + std::to_string(i) + "]";
        const double v = number(times[i], field);
        if (!(v > 0.0) || !std::isfinite(v)) throw bad(field, "is " + show(v) + "; expected a finite value > 0");
        pl.task_times.push_back(v);
    }
    for (const char* field : {"overhead", "latency", "setup"}) {
        if (!j.contains(field)) continue;
        const double v = number(j[field], field);
        if (!(v >= 0.0) || !std::isfinite(v)) throw bad(field, "is " + show(v) + "; expected a finite value >= 0");
        const std::string name = field;
        (name == "overhead" ? pl.overhead : name == "latency" ? pl.latency : pl.setup) = v;
    }
    for (const char* field : {"master_overhead", "supermaster_overhead", "master_latency"}) {  // hierarchical farm
        if (!j.contains(field)) continue;
        const double v = number(j[field], field);
        if (!(v >= 0.0) || !std::isfinite(v)) throw bad(field, "is " + show(v) + "; expected a finite value >= 0");
        const std::string name = field;
        (name == "master_overhead" ? pl.master_overhead : name == "supermaster_overhead" ? pl.supermaster_overhead
                                                                                          : pl.master_latency) = v;
    }
    for (const char* field : {"atomic_overhead", "atomic_latency"}) {  // decentralised farm
        if (!j.contains(field)) continue;
        const double v = number(j[field], field);
        if (!(v >= 0.0) || !std::isfinite(v)) throw bad(field, "is " + show(v) + "; expected a finite value >= 0");
        (std::string(field) == "atomic_overhead" ? pl.atomic_overhead : pl.atomic_latency) = v;
    }
    if (j.contains("load_changes")) {
        const auto& list = j["load_changes"];
        if (!list.is_array()) throw bad("load_changes", "is " + list.dump() + "; expected a list of objects");
        for (std::size_t i = 0; i < list.size(); ++i) {
            const std::string at = "load_changes[" + std::to_string(i) + "]";
            const auto& item = list[i];
            if (!item.is_object())
                throw bad(at, "is " + item.dump() + "; expected {\"worker\": W, \"time\": T, \"factor\": F}");
            for (const auto& [key, value] : item.items()) {
                (void)value;
                if (key != "worker" && key != "time" && key != "factor")
                    throw bad(at + "." + key, "is unknown; expected worker, time, factor");
            }
            for (const char* key : {"worker", "time", "factor"})
                if (!item.contains(key)) throw bad(at + "." + key, "is missing");
            load_change c;
            const auto& w = item["worker"];
            if (!w.is_number_integer() || w.get<long long>() < 0 ||
                w.get<long long>() >= static_cast<long long>(pl.task_times.size()))
                throw bad(at + ".worker", "is " + w.dump() + "; expected 0.." + std::to_string(pl.task_times.size() - 1));
            c.worker = w.get<int>();
            c.time = number(item["time"], at + ".time");
            c.factor = number(item["factor"], at + ".factor");
            if (!(c.time >= 0.0) || !std::isfinite(c.time))
                throw bad(at + ".time", "is " + show(c.time) + "; expected a finite value >= 0");
            if (!(c.factor > 0.0) || !std::isfinite(c.factor))
                throw bad(at + ".factor", "is " + show(c.factor) + "; expected a finite value > 0");
            pl.load_changes.push_back(c);
        }
    }
    if (j.contains("monitors")) {
        const auto& list = j["monitors"];
        if (!list.is_array() || list.size() != pl.task_times.size())
            throw bad("monitors", "is " + list.dump() + "; expected a list of one object per worker");
        for (std::size_t i = 0; i < list.size(); ++i) {
            const std::string at = "monitors[" + std::to_string(i) + "]";
            if (!list[i].is_object()) throw bad(at, "is " + list[i].dump() + "; expected an object");
            resource_sample s;
            for (const auto& [key, value] : list[i].items()) {
                if (key == "availability") s.availability = number(value, at + ".availability");
                else if (key == "latency") s.latency = number(value, at + ".latency");
                else if (key == "benchmark") s.benchmark = number(value, at + ".benchmark");
                else throw bad(at + "." + key, "is unknown; expected availability, latency, benchmark");
            }
            // The ranges of validate(), here too, so that a bad reading is reported with its file and field.
            if (s.availability && !(*s.availability > 0.0 && *s.availability <= 1.0))
                throw bad(at + ".availability", "is " + show(*s.availability) + "; expected a value in (0, 1]");
            if (s.latency && !(std::isfinite(*s.latency) && *s.latency >= 0.0))
                throw bad(at + ".latency", "is " + show(*s.latency) + "; expected a finite value >= 0");
            if (s.benchmark && !(std::isfinite(*s.benchmark) && *s.benchmark > 0.0))
                throw bad(at + ".benchmark", "is " + show(*s.benchmark) + "; expected a finite value > 0");
            pl.monitors.push_back(s);
        }
    }
    return pl;
}

std::vector<double> load_costs(const std::string& path, const std::string& argument) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw invalid_argument(argument, "'" + path + "' is a directory; expected a file of costs or a trace");
    std::ifstream in(path);
    if (!in) throw invalid_argument(argument, "cannot read '" + path + "'");
    // A trace (pfarm/trace.hpp) when its first line that is neither blank nor a comment is JSON or a CSV header.
    std::string line;
    std::vector<double> plain;
    std::size_t number = 0;
    bool trace = false;
    while (std::getline(in, line)) {
        ++number;
        const auto text = detail::trim(line);
        if (text.empty() || text.front() == '#') continue;
        const auto first_field = text.substr(0, text.find(','));
        if (plain.empty() && (text.front() == '{' || first_field == "rank" || first_field == "worker")) {
            trace = true;
            break;
        }
        const auto where = path + ":" + std::to_string(number) + ": ";
        const auto v = detail::parse_number(text);
        if (v.problem) throw invalid_argument(argument, where + "'" + std::string(text) + "' " + v.problem);
        if (!(v.value > 0.0)) throw invalid_argument(argument, where + "cost " + std::string(text) + " is not > 0");
        plain.push_back(v.value);
    }
    if (trace) {
        const trace_file t = read_trace(path, argument);
        std::vector<std::pair<task_count, double>> indexed;  // (first task, time)
        indexed.reserve(t.chunks.size());
        for (std::size_t i = 0; i < t.chunks.size(); ++i) {
            const auto& c = t.chunks[i];
            if (c.count != 1)
                throw invalid_argument(argument, path + ": chunk " + std::to_string(i) + " holds " +
                                                      std::to_string(c.count) +
                                                      " tasks: record costs with technique ss (chunks of one task)");
            const double seconds = c.finished - c.started;
            if (!std::isfinite(seconds))  // both ends finite, their difference beyond double (-1e308 to 1e308)
                throw invalid_argument(argument, path + ": chunk " + std::to_string(i) + " lasts " + show(seconds) +
                                                      " (finished - started); expected a finite time");
            indexed.emplace_back(c.first, seconds > 0.0 ? seconds : 1e-9);
        }
        std::sort(indexed.begin(), indexed.end());
        for (std::size_t i = 0; i < indexed.size(); ++i) {
            if (indexed[i].first != static_cast<task_count>(i))
                throw invalid_argument(argument, path + ": task " + std::to_string(i) + " is missing or recorded twice");
            plain.push_back(indexed[i].second);
        }
    }
    if (plain.empty()) throw invalid_argument(argument, path + ": no costs");
    return plain;
}

}  // namespace pfarm::sim
