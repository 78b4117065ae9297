// pfarm-probe: prints, as one JSON document, what every monitor reads on this machine, and under mpirun on
// every rank, with each rank's round trip to rank 0: what pfarm bases its decisions on (docs/monitors.md).
#include "options.hpp"

#include "pfarm/latency.hpp"
#include "pfarm/monitors.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/output_file.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

namespace {

using json = nlohmann::ordered_json;

struct probe_args {
    int samples = 1;
    int interval_ms = 200;
    int round_trips = 11;
    std::string grouping = "host";
    std::string output;
    bool compact = false;
};

/// pfarm-probe's flags for what the monitors and the latency probe name by their C++ names (options.hpp).
constexpr pfarm::tools::flag_name probe_flags[] = {
    {"grouping", "--grouping"},
    {"round_trips", "--round-trips"},
};

void put(json& j, const char* key, const std::optional<double>& v) {
    if (v) j[key] = *v;
}

/// Runs `body` into j[key]; a monitor that cannot read its source leaves {"error": message} instead.
template <class F>
void section(json& j, const char* key, std::vector<std::string>& failures, F&& body) {
    try {
        j[key] = body();
    } catch (const pfarm::monitor_error& e) {
        j[key] = json{{"error", e.what()}};
        failures.emplace_back(e.what());
    }
}

json throttling_json(const std::optional<pfarm::cgroup_throttling>& t) {
    if (!t) return nullptr;
    return json{{"nr_periods", t->nr_periods}, {"nr_throttled", t->nr_throttled},
                {"throttled_s", t->throttled_seconds}};
}

template <class T>
json optional_json(const std::optional<T>& v) {
    return v ? json(*v) : json(nullptr);
}

/// The cgroup monitor's reading: the levels walked, the limit, the competing threads, the throttling.
json cgroup_json(const pfarm::cgroup_reading& c, json forecast) {
    json levels = json::array();
    for (const pfarm::cgroup_level& l : c.levels)
        levels.push_back({{"cgroup", l.cgroup},
                          {"directory", l.directory.string()},
                          {"quota_us", l.quota_us},
                          {"period_us", l.period_us},
                          {"quota_cores", optional_json(l.quota_cores)}});
    json out = {{"version", c.version},
                {"cgroup", c.cgroup},
                {"directory", c.directory.string()},
                {"levels", levels},
                {"limit_cores", optional_json(c.limit_cores)},
                {"limit_directory", c.limit_cores ? json(c.limit_directory.string()) : json(nullptr)},
                {"runnable", c.runnable},
                {"throttling", throttling_json(c.throttling)},
                {"throttling_delta", throttling_json(c.throttling_delta)},
                {"throttled_fraction", optional_json(c.throttled_fraction)},
                {"quota_availability", c.quota_availability},
                {"binding", c.binding},
                {"load_availability", c.load.availability},
                {"availability", c.availability},
                {"run_queue", c.run_queue}};
    if (!forecast.is_null()) out["forecast"] = std::move(forecast);
    return out;
}

std::string host_name() {
    char name[HOST_NAME_MAX + 1] = {};
    if (gethostname(name, sizeof name - 1) != 0) return "unknown";
    return name;
}

/// This rank's readings except latency, which is collective and added afterwards.
json probe_local(const probe_args& args, MPI_Comm comm, pfarm::resource_sample& sample,
                 std::vector<std::string>& failures) {
    json j;
    // Load first, before the benchmark kernels of the ranks load the CPUs themselves. The load average and the
    // cgroup are read in the same rounds, so that the cgroup's throttling delta spans the last interval.
    pfarm::loadavg_monitor load;
    pfarm::cgroup_monitor cgroup;
    pfarm::forecaster availability, run_queue, load1, cgroup_availability;
    pfarm::loadavg_reading r;
    pfarm::cgroup_reading c;
    std::string load_error, cgroup_error;
    for (int i = 0; i < args.samples; ++i) {
        if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(args.interval_ms));
        if (load_error.empty()) {
            try {
                r = load.read_details();
                availability.observe(r.availability);
                run_queue.observe(r.run_queue);
                load1.observe(r.load1);
            } catch (const pfarm::monitor_error& e) {
                load_error = e.what();
            }
        }
        if (cgroup_error.empty()) {
            try {
                c = cgroup.read_details();
                cgroup_availability.observe(c.availability);
            } catch (const pfarm::monitor_error& e) {
                cgroup_error = e.what();
            }
        }
    }
    auto forecast = [](const pfarm::forecaster& f) {
        return json{{"prediction", f.predict()}, {"method", std::string(to_string(f.best_method()))},
                    {"observations", f.observations()}};
    };
    const auto failed = [&](const char* key, const std::string& message) {
        j[key] = json{{"error", message}};
        failures.push_back(message);
    };
    if (!load_error.empty()) {
        failed("loadavg", load_error);
    } else {
        json out = {{"availability", r.availability}, {"run_queue", r.run_queue}, {"load1", r.load1},
                    {"load5", r.load5},   {"load15", r.load15},       {"procs_running", r.procs_running},
                    {"cpus", r.cpus}};
        if (args.samples > 1)
            out["forecast"] = {{"availability", forecast(availability)},
                               {"run_queue", forecast(run_queue)},
                               {"load1", forecast(load1)}};
        j["loadavg"] = std::move(out);
    }
    if (!cgroup_error.empty())
        failed("cgroup", cgroup_error);
    else
        j["cgroup"] = cgroup_json(c, args.samples > 1 ? json{{"availability", forecast(cgroup_availability)}} : json());
    // The sample's availability comes from the monitor the farm reads by default (cgroup in a cgroup with a
    // CPU quota, loadavg otherwise); when that choice itself fails, the farm would stop, and the sample has none.
    section(j, "availability_from", failures, [&] {
        const std::string from = pfarm::make_availability_monitor()->name();
        if (from == "cgroup" && cgroup_error.empty()) {
            sample.availability = c.availability;
            sample.run_queue = c.run_queue;
            sample.load1 = c.load.load1;
        } else if (from == "loadavg" && load_error.empty()) {
            sample.availability = r.availability;
            sample.run_queue = r.run_queue;
            sample.load1 = r.load1;
        }
        return json(from);
    });
    section(j, "hwloc", failures, [&] {
        pfarm::hwloc_options o;
        o.grouping = pfarm::parse_node_grouping(args.grouping);
        pfarm::hwloc_monitor hw(o);
        const pfarm::topology_summary t = hw.topology();
        sample.cores = static_cast<int>(t.bound_pus.size());
        sample.node_key = t.node_key;
        return json{{"packages", t.packages},
                    {"cores", t.cores},
                    {"pus", t.pus},
                    {"numa_nodes", t.numa_nodes},
                    {"bound_pus", t.bound_pus},
                    {"bound_cores", t.bound_cores},
                    {"bound_packages", t.bound_packages},
                    {"bound_numa_nodes", t.bound_numa_nodes},
                    {"cores_available", t.bound_pus.size()},
                    {"grouping", args.grouping},
                    {"node_key", t.node_key}};
    });
    pfarm::mpi::check(MPI_Barrier(comm), "MPI_Barrier");
    section(j, "benchmark", failures, [&] {
        const pfarm::kernel_result k = pfarm::run_cpu_kernel();
        sample.benchmark = k.mops;
        return json{{"mops", k.mops}, {"best_seconds", k.best_seconds}, {"total_seconds", k.total_seconds}};
    });
    pfarm::mpi::check(MPI_Barrier(comm), "MPI_Barrier");
    section(j, "bogomips", failures, [&] { return json{{"bogomips", pfarm::read_bogomips()}}; });
    return j;
}

int run(const probe_args& args) {
    pfarm::mpi::communicator farm(MPI_COMM_WORLD);
    const int rank = farm.rank(), size = farm.size();
    pfarm::resource_sample sample;
    std::vector<std::string> failures;
    json j = {{"rank", rank}, {"host", host_name()}};
    j.update(probe_local(args, farm.get(), sample, failures));
    pfarm::mpi::latency_options lo;
    lo.round_trips = args.round_trips;
    const std::vector<double> latencies = pfarm::mpi::measure_latencies(farm.get(), lo);
    sample.latency = latencies[static_cast<std::size_t>(rank)];
    j["latency_to_rank0_s"] = *sample.latency;
    json s = json::object();
    put(s, "availability", sample.availability);
    put(s, "run_queue", sample.run_queue);
    put(s, "load1", sample.load1);
    put(s, "latency", sample.latency);
    put(s, "benchmark", sample.benchmark);
    if (sample.cores) s["cores"] = *sample.cores;
    if (sample.node_key) s["node_key"] = *sample.node_key;
    j["sample"] = s;

    // Every rank's document to rank 0, in rank order.
    const std::string mine = j.dump();
    int length = static_cast<int>(mine.size());
    std::vector<int> lengths(static_cast<std::size_t>(rank == 0 ? size : 0));
    pfarm::mpi::check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, farm.get()), "MPI_Gather");
    std::vector<int> offsets(lengths.size());
    std::string all;
    if (rank == 0) {
        long long total = 0;
        for (std::size_t r = 0; r < lengths.size(); ++r) {
            offsets[r] = static_cast<int>(total);
            total += lengths[r];
        }
        if (total > INT_MAX) throw pfarm::error("pfarm-probe: the ranks' reports exceed 2 GiB");
        all.resize(static_cast<std::size_t>(total));
    }
    pfarm::mpi::check(MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                                  0, farm.get()),
                      "MPI_Gatherv");
    if (rank != 0) return 0;

    json doc = {{"size", size}, {"ranks", json::array()}};
    for (std::size_t r = 0; r < lengths.size(); ++r) {
        json one = json::parse(all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
        for (const char* key : {"loadavg", "cgroup", "availability_from", "hwloc", "benchmark", "bogomips"})
            if (one[key].contains("error"))
                std::cerr << "pfarm-probe: rank " << r << ": " << one[key]["error"].get<std::string>() << '\n';
        doc["ranks"].push_back(std::move(one));
    }
    const std::string text = doc.dump(args.compact ? -1 : 2) + "\n";
    if (args.output.empty()) {
        std::cout << text << std::flush;
    } else {
        pfarm::write_output_file(args.output, "--output", text);  // whole or not at all (a full disk: an error)
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    pfarm::mpi::environment env(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    CLI::App app{"pfarm-probe: prints as JSON what pfarm's monitors read on this machine; under mpirun, on every "
                 "rank, with its round trip to rank 0"};
    probe_args args;
    app.add_option("--samples", args.samples, "Load readings to take (more than 1 adds NWS-style forecasts)")
        ->check(CLI::Range(1, 1000));
    app.add_option("--interval-ms", args.interval_ms, "Milliseconds between load readings")
        ->check(CLI::Range(0, 60000));
    app.add_option("--round-trips", args.round_trips, "Timed ping-pongs per rank; the median is the latency")
        ->check(CLI::Range(1, 100000));
    app.add_option("--grouping", args.grouping, "node_key grouping: host, package or numa")
        ->check(CLI::IsMember({"host", "package", "numa"}));
    app.add_option("--output,-o", args.output, "Write the JSON to this file instead of standard output");
    app.add_flag("--compact", args.compact, "One line of JSON instead of indented");
    // As the other pfarm tools: help on standard output and 0; bad input as "pfarm-probe: <message>" and 2.
    // Every rank parses the same arguments, so every rank leaves the same way; rank 0 alone speaks.
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        if (rank == 0) std::cout << app.help();
        return 0;
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return rank == 0 ? app.exit(e) : 0;
        if (rank == 0) std::cerr << "pfarm-probe: " << e.what() << "\n";
        return 2;
    }
    // An unwritable --output is bad input too: found before probing (an existing file left as it is), and every
    // rank learns it.
    std::string unwritable;
    if (rank == 0 && !args.output.empty()) {
        try {
            pfarm::check_output_path(args.output, "--output");
        } catch (const pfarm::invalid_argument& e) {
            unwritable = e.message();
        }
    }
    int refused = unwritable.empty() ? 0 : 1;
    MPI_Bcast(&refused, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (refused) {
        if (rank == 0) std::cerr << "pfarm-probe: --output: " << unwritable << "\n";
        return 2;
    }
    try {
        return run(args);
    } catch (const pfarm::invalid_argument& e) {  // as above, but named by its flag; the other ranks may be waiting
        std::fprintf(stderr, "pfarm-probe: rank %d: %s\n", rank, pfarm::tools::tool_message(e, probe_flags).c_str());
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    } catch (const std::exception& e) {
        // A rank that fails leaves the others waiting in a collective: say why, then end the whole job.
        std::fprintf(stderr, "pfarm-probe: rank %d: %s\n", rank, e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
}
