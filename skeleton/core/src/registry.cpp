// pfarm scheduling core: the technique registry: the table of every technique, the options every technique
// shares and their checks, and make_technique (registry.hpp).
#include "pfarm/registry.hpp"

#include "pfarm/detail/technique_families.hpp"
#include "pfarm/error.hpp"

#include <cmath>
#include <string>

namespace pfarm {

namespace {

struct alias {
    std::string_view name, target;
};
constexpr alias aliases[] = {{"wf", "dfss"}};

std::vector<technique_info> build_table() {
    std::vector<technique_info> all;
    for (auto family : {detail::simple_techniques, detail::weighted_techniques, detail::two_phase_techniques,
                        detail::calibrated_techniques, detail::literature_techniques,
                        detail::auto_techniques}) {
        for (auto& row : family()) all.push_back(std::move(row));
    }
    return all;
}

const std::vector<technique_info>& table() {
    static const std::vector<technique_info> rows = build_table();
    return rows;
}

void check_per_worker(const std::vector<double>& values, int workers, const char* argument, double minimum,
                      const char* range) {
    if (values.empty()) return;
    if (static_cast<long>(values.size()) != workers)
        throw invalid_argument(argument, "has " + std::to_string(values.size()) + " values; expected one per worker (" +
                                             std::to_string(workers) + ")");
    for (std::size_t i = 0; i < values.size(); ++i) {
        const double v = values[i];
        if (!std::isfinite(v) || v < minimum || (minimum == 0.0 && v <= 0.0))
            throw invalid_argument(argument, "value " + std::to_string(i + 1) + " is " + std::to_string(v) +
                                                 "; expected " + range);
    }
}

}  // namespace

std::span<const technique_info> techniques() { return table(); }

const technique_info& find_technique(std::string_view name) {
    for (const alias& a : aliases)
        if (a.name == name) name = a.target;
    for (const auto& row : table())
        if (row.name == name) return row;
    std::string known;
    for (const auto& row : table()) known += (known.empty() ? "" : ", ") + row.name;
    for (const alias& a : aliases) known += ", " + std::string(a.name);
    throw unknown_name("technique", "unknown name '" + std::string(name) + "'; expected one of: " + known);
}

void check_task_count(task_count tasks, const std::string& argument) {
    if (tasks < 1) throw invalid_argument(argument, "is " + std::to_string(tasks) + "; expected >= 1");
    if (tasks > max_tasks)
        throw invalid_argument(argument, "is " + std::to_string(tasks) + "; expected at most " + std::to_string(max_tasks) +
                                             " (2^53)");
}

void validate_common_options(const technique_options& o, int workers) {
    if (workers < 1) throw invalid_argument("workers", "is " + std::to_string(workers) + "; expected >= 1");
    if (o.min_chunk < 1)
        throw invalid_argument("min_chunk", "is " + std::to_string(o.min_chunk) + "; expected >= 1");
    check_per_worker(o.weights, workers, "weights", 0.0, "a finite value > 0");
    check_per_worker(o.run_queue, workers, "run_queue", 1.0, "a finite value >= 1");
    check_per_worker(o.times, workers, "times", 0.0, "a finite value > 0");
    const auto positive = [](const std::optional<double>& v, const char* argument) {
        if (v && (!std::isfinite(*v) || *v <= 0.0))
            throw invalid_argument(argument, "is " + std::to_string(*v) + "; expected a finite value > 0");
    };
    positive(o.factor, "factor");
    positive(o.k, "k");
    positive(o.overhead, "overhead");
    positive(o.sigma, "sigma");
    if (o.chunk && *o.chunk < 1) throw invalid_argument("chunk", "is " + std::to_string(*o.chunk) + "; expected >= 1");
    if (o.stages && *o.stages < 2)
        throw invalid_argument("stages", "is " + std::to_string(*o.stages) + "; expected >= 2");
    if (o.static_percent && !(*o.static_percent >= 0.0 && *o.static_percent <= 100.0))
        throw invalid_argument("static_percent", "is " + std::to_string(*o.static_percent) + "; expected 0 to 100");
}

std::unique_ptr<technique> make_technique(std::string_view name, const technique_options& options, int workers) {
    const technique_info& row = find_technique(name);
    validate_common_options(options, workers);
    return row.make(options, workers);
}

}  // namespace pfarm
