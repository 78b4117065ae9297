// pfarm Python module: keyword options -> pfarm::farm_options (options.hpp), the one place that maps them.
#include "options.hpp"

#include "pfarm/calibration.hpp"
#include "pfarm/testing.hpp"

#include <pybind11/stl.h>

#include <cmath>
#include <functional>
#include <map>

namespace py = pybind11;

namespace pfarm::python {
namespace {

[[noreturn]] void type_error(const std::string& key, const std::string& expected, const py::handle& value) {
    throw py::type_error(key + ": expected " + expected + ", got " + std::string(py::str(py::type::of(value).attr("__name__"))));
}
[[noreturn]] void value_error(const std::string& key, const std::string& message) {
    throw py::value_error(key + ": " + message);
}

bool to_bool(const std::string& key, const py::handle& v) {
    if (!py::isinstance<py::bool_>(v)) type_error(key, "True or False", v);
    return v.cast<bool>();
}
// An integer (bool refused: True is no count), within [low, high].
long long to_int(const std::string& key, const py::handle& v, long long low, long long high) {
    if (py::isinstance<py::bool_>(v) || !py::isinstance(v, py::module_::import("numbers").attr("Integral")))
        type_error(key, "an integer", v);
    long long x = 0;
    try {
        x = py::int_(py::reinterpret_borrow<py::object>(v)).cast<long long>();
    } catch (const py::cast_error&) {
        value_error(key, "is out of range");
    }
    if (x < low || x > high)
        value_error(key, "is " + std::to_string(x) + "; expected " + std::to_string(low) + " to " + std::to_string(high));
    return x;
}
double to_double(const std::string& key, const py::handle& v) {
    if (py::isinstance<py::bool_>(v) || !py::isinstance(v, py::module_::import("numbers").attr("Real")))
        type_error(key, "a number", v);
    const double x = py::float_(py::reinterpret_borrow<py::object>(v)).cast<double>();
    if (!std::isfinite(x)) value_error(key, "is not finite");
    return x;
}
std::string to_string(const std::string& key, const py::handle& v) {
    if (!py::isinstance<py::str>(v) && !py::isinstance(v, py::module_::import("os").attr("PathLike")))
        type_error(key, "a string", v);
    return py::str(py::module_::import("os").attr("fspath")(v)).cast<std::string>();
}
std::vector<double> to_doubles(const std::string& key, const py::handle& v) {
    if (py::isinstance<py::str>(v) || !py::isinstance<py::iterable>(v)) type_error(key, "a sequence of numbers", v);
    std::vector<double> out;
    for (const py::handle item : py::reinterpret_borrow<py::iterable>(v)) out.push_back(to_double(key, item));
    return out;
}
std::vector<std::string> to_strings(const std::string& key, const py::handle& v) {
    if (py::isinstance<py::str>(v) || !py::isinstance<py::iterable>(v)) type_error(key, "a sequence of strings", v);
    std::vector<std::string> out;
    for (const py::handle item : py::reinterpret_borrow<py::iterable>(v)) out.push_back(to_string(key, item));
    return out;
}

using setter = std::function<void(farm_options&, const std::string&, const py::handle&)>;

// farm_options' fields (technique_options' by their leaf names), in declaration order.
const std::vector<std::pair<std::string, setter>>& setters() {
    static const std::vector<std::pair<std::string, setter>> table = {
        {"technique", [](farm_options& o, const std::string& k, const py::handle& v) { o.schedule.technique = to_string(k, v); }},
        {"min_chunk", [](farm_options& o, const std::string& k, const py::handle& v) {
             o.schedule.parameters.min_chunk = to_int(k, v, 1, max_tasks); }},
        {"chunk", [](farm_options& o, const std::string& k, const py::handle& v) { o.schedule.parameters.chunk = to_int(k, v, 1, max_tasks); }},
        {"factor", [](farm_options& o, const std::string& k, const py::handle& v) { o.schedule.parameters.factor = to_double(k, v); }},
        {"first", [](farm_options& o, const std::string& k, const py::handle& v) { o.schedule.parameters.first = to_int(k, v, 1, max_tasks); }},
        {"last", [](farm_options& o, const std::string& k, const py::handle& v) { o.schedule.parameters.last = to_int(k, v, 1, max_tasks); }},
        {"stages", [](farm_options& o, const std::string& k, const py::handle& v) {
             o.schedule.parameters.stages = static_cast<int>(to_int(k, v, 1, 1 << 30)); }},
        {"static_percent", [](farm_options& o, const std::string& k, const py::handle& v) { o.schedule.parameters.static_percent = to_double(k, v); }},
        {"weights", [](farm_options& o, const std::string& k, const py::handle& v) { o.schedule.parameters.weights = to_doubles(k, v); }},
        {"run_queue", [](farm_options& o, const std::string& k, const py::handle& v) { o.schedule.parameters.run_queue = to_doubles(k, v); }},
        {"times", [](farm_options& o, const std::string& k, const py::handle& v) { o.schedule.parameters.times = to_doubles(k, v); }},
        {"k", [](farm_options& o, const std::string& k, const py::handle& v) { o.schedule.parameters.k = to_double(k, v); }},
        {"calibration", [](farm_options& o, const std::string& k, const py::handle& v) {
             const std::string name = to_string(k, v);
             try {
                 o.schedule.parameters.calibration = parse_calibration_mode(name);
             } catch (const pfarm::invalid_argument&) {
                 value_error(k, "is '" + name + "'; expected times, univariate or multivariate");
             }
         }},
        {"overhead", [](farm_options& o, const std::string& k, const py::handle& v) { o.schedule.parameters.overhead = to_double(k, v); }},
        {"sigma", [](farm_options& o, const std::string& k, const py::handle& v) { o.schedule.parameters.sigma = to_double(k, v); }},
        {"farmer_computes", [](farm_options& o, const std::string& k, const py::handle& v) { o.topology.farmer_computes = to_bool(k, v); }},
        {"prefetch", [](farm_options& o, const std::string& k, const py::handle& v) { o.protocol.prefetch = to_bool(k, v); }},
        {"reclaim", [](farm_options& o, const std::string& k, const py::handle& v) { o.protocol.reclaim = to_bool(k, v); }},
        {"stragglers", [](farm_options& o, const std::string& k, const py::handle& v) {
             o.protocol.stragglers = to_double(k, v);
             if (o.protocol.stragglers != 0.0 && o.protocol.stragglers <= 1.0)
                 value_error(k, "is " + py::str(py::float_(o.protocol.stragglers)).cast<std::string>() + "; expected 0 (off) or a factor > 1");
         }},
        {"replicated_input", [](farm_options& o, const std::string& k, const py::handle& v) { o.protocol.replicated_input = to_bool(k, v); }},
        {"on_task_error", [](farm_options& o, const std::string& k, const py::handle& v) {
             // "stop" or "retry[=N]". No "skip": a skipped task has no result to unpickle (docs/python.md).
             const std::string rule = to_string(k, v);
             if (rule == "skip") value_error(k, "is 'skip', which the Python package does not serve; expected stop, retry or retry=N");
             try {
                 o.protocol.on_task_error = parse_task_error_rule(rule, k);
             } catch (const invalid_argument& e) {
                 value_error(k, e.message());
             }
         }},
        {"on_worker_loss", [](farm_options& o, const std::string& k, const py::handle& v) {
             try {
                 o.protocol.on_worker_loss = parse_worker_loss_rule(to_string(k, v), k);
             } catch (const invalid_argument& e) {
                 value_error(k, e.message());
             }
         }},
        {"trace", [](farm_options& o, const std::string& k, const py::handle& v) { o.output.trace = to_string(k, v); }},
        {"record_trace", [](farm_options& o, const std::string& k, const py::handle& v) { o.output.record_trace = to_bool(k, v); }},
        {"progress", [](farm_options& o, const std::string& k, const py::handle& v) {
             if (py::isinstance<py::bool_>(v)) {
                 o.output.progress = v.cast<bool>() ? progress_mode::automatic : progress_mode::quiet;
                 return;
             }
             const std::string name = to_string(k, v);
             if (name == "automatic") o.output.progress = progress_mode::automatic;
             else if (name == "plain") o.output.progress = progress_mode::plain;
             else if (name == "quiet") o.output.progress = progress_mode::quiet;
             else value_error(k, "is '" + name + "'; expected automatic, plain, quiet, True or False");
         }},
        {"slowdown", [](farm_options& o, const std::string& k, const py::handle& v) { o.emulation = testing::emulate(to_doubles(k, v), o.emulation); }},
        {"load_changes", [](farm_options& o, const std::string& k, const py::handle& v) {
             if (py::isinstance<py::str>(v) || !py::isinstance<py::iterable>(v))
                 type_error(k, "a sequence of (worker, time, factor)", v);
             std::vector<load_change> changes;
             for (const py::handle item : py::reinterpret_borrow<py::iterable>(v)) {
                 if (!py::isinstance<py::sequence>(item) || py::len(item) != 3)
                     type_error(k, "a sequence of (worker, time, factor)", item);
                 const auto t = py::reinterpret_borrow<py::sequence>(item);
                 changes.push_back({static_cast<int>(to_int(k, t[0], 0, 1 << 30)), to_double(k, t[1]), to_double(k, t[2])});
             }
             o.emulation = testing::emulate(o.emulation ? o.emulation->slowdown : std::vector<double>{}, std::move(changes));
         }},
        {"monitors", [](farm_options& o, const std::string& k, const py::handle& v) { o.schedule.monitors = to_strings(k, v); }},
        {"schedule", [](farm_options& o, const std::string& k, const py::handle& v) {
             if (v.is_none()) {
                 o.schedule.learned = nullptr;
                 return;
             }
             try {
                 o.schedule.learned = v.cast<pfarm::schedule*>();
             } catch (const py::cast_error&) {
                 type_error(k, "a pfarm.Schedule or None", v);
             }
         }},
        {"journal", [](farm_options& o, const std::string& k, const py::handle& v) { o.resume.journal = to_string(k, v); }},
        {"journal_key", [](farm_options& o, const std::string& k, const py::handle& v) { o.resume.journal_key = to_string(k, v); }},
        {"farmer", [](farm_options& o, const std::string& k, const py::handle& v) {
             const std::string name = to_string(k, v);
             try {
                 o.topology.farmer = parse_farmer_mode(name, k);
             } catch (const pfarm::invalid_argument& e) {
                 value_error(k, e.message());
             }
         }},
        {"victims", [](farm_options& o, const std::string& k, const py::handle& v) {
             const std::string name = to_string(k, v);
             try {
                 o.topology.victims = pfarm::parse_victim_rule(name, k);
             } catch (const pfarm::invalid_argument& e) {
                 value_error(k, e.message());
             }
         }},
        {"masters", [](farm_options& o, const std::string& k, const py::handle& v) {
             o.topology.masters = static_cast<int>(to_int(k, v, 0, 1 << 30)); }},
        {"master_technique", [](farm_options& o, const std::string& k, const py::handle& v) { o.topology.master_technique = to_string(k, v); }},
    };
    return table;
}

}  // namespace

farm_options farm_options_from(const py::dict& kwargs) {
    static const std::map<std::string, const setter*> by_name = [] {
        std::map<std::string, const setter*> m;
        for (const auto& [name, set] : setters()) m.emplace(name, &set);
        return m;
    }();
    // Python's defaults where they differ from the C++ ones (docs/python.md "Options"): every rank computes (rank 0
    // serves requests between two of its tasks), and an idle worker takes unstarted tasks back from the one expected
    // to finish last (reclaim; not in the decentralised and work-stealing farms, which have none). Python tasks cost a microsecond or
    // more each, which hides the probe per task that reclaim costs.
    farm_options options;
    options.topology.farmer_computes = true;
    options.protocol.reclaim = true;
    bool reclaim_given = false;
    for (const auto& [key, value] : kwargs) {
        const std::string name = py::str(key).cast<std::string>();
        const auto found = by_name.find(name);
        if (found == by_name.end())
            throw py::type_error("unexpected keyword argument '" + name + "' (pfarm.OPTIONS lists the farm's options)");
        (*found->second)(options, name, value);
        reclaim_given = reclaim_given || name == "reclaim";
    }
    if (!reclaim_given &&
        (options.topology.farmer == farmer_mode::decentralised || options.topology.farmer == farmer_mode::stealing))
        options.protocol.reclaim = false;
    return options;
}

py::list option_names() {
    py::list names;
    for (const auto& entry : setters()) names.append(entry.first);
    return names;
}

}  // namespace pfarm::python
