// pfarm-bench-load: the farm's memory under many small requests (docs/reliability.md "Load"). Every rank calls
// pfarm::farm over an index range of --tasks tasks, each writing --output-bytes bytes (1, 8 or 64), with
// --technique (ss: a chunk of one task per request, the most requests a farm can take), and reports each rank's
// peak resident set: the farmer's should grow with the outputs it holds (tasks x output bytes, which the caller
// allocates), not with the number of requests.
//
//   mpiexec -n N pfarm-bench-load [--tasks 1000000] [--technique ss] [--output-bytes 8] [--prefetch]
//
// Prints one JSON object on rank 0: per rank, "rss_before_mb" (resident after MPI_Init and, on rank 0, after the
// outputs are allocated and touched: what the caller holds) and "peak_rss_mb" (VmHWM, the peak resident set), and
// for the farmer "farm_growth_mb" (peak - before: what the farm itself added), "bytes_per_request" (that growth
// over the chunks handed out), the chunks, the seconds and the requests per second. benchmarks/load/run_load.py
// runs it at several sizes beside pfarm-sim (docs/reliability.md "Load").
#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

/// A field of /proc/self/status in MB ("VmRSS", "VmHWM"); -1 where it cannot be read.
double status_mb(const std::string& field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(field + ":", 0) == 0) {
            std::istringstream s(line.substr(field.size() + 1));
            double kb = -1;
            s >> kb;
            return kb / 1024.0;
        }
    return -1;
}

template <std::size_t Bytes>
struct output {
    unsigned char bytes[Bytes];
};

template <std::size_t Bytes>
nlohmann::json run(int rank, long long tasks, const pfarm::farm_options& options) {
    std::vector<output<Bytes>> out(rank == 0 ? static_cast<std::size_t>(tasks) : 0);
    for (auto& o : out) o.bytes[0] = 1;  // touched: resident before the farm, like a caller's results array
    const double before = status_mb("VmRSS");
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    const pfarm::farm_report r = pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, tasks}, out,
                                             [](pfarm::task_count i, output<Bytes>& y) { y.bytes[0] = static_cast<unsigned char>(i); }, options);
    const double seconds = MPI_Wtime() - t0;
    const double peak = status_mb("VmHWM");
    long long chunks = 0;
    for (const auto& c : r.chunks_per_rank) chunks += static_cast<long long>(c.size());
    double mine[2] = {before, peak};
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    std::vector<double> all(2 * static_cast<std::size_t>(ranks));
    MPI_Gather(mine, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    nlohmann::ordered_json j;
    if (rank != 0) return j;
    for (std::size_t q = 0; q < out.size(); ++q)  // every output arrived
        if (out[q].bytes[0] != static_cast<unsigned char>(q)) throw pfarm::error("task " + std::to_string(q) + "'s output is wrong");
    j["benchmark"] = "load";
    j["ranks"] = ranks;
    j["tasks"] = tasks;
    j["technique"] = options.schedule.technique;
    j["prefetch"] = options.protocol.prefetch;
    j["output_bytes"] = Bytes;
    j["outputs_mb"] = static_cast<double>(tasks) * Bytes / (1024.0 * 1024.0);
    j["chunks"] = chunks;
    j["seconds"] = seconds;
    j["requests_per_s"] = static_cast<double>(chunks) / seconds;
    j["farmer"] = {{"rss_before_mb", all[0]}, {"peak_rss_mb", all[1]}, {"farm_growth_mb", all[1] - all[0]},
                   {"bytes_per_request", (all[1] - all[0]) * 1024.0 * 1024.0 / static_cast<double>(chunks)}};
    nlohmann::json workers = nlohmann::json::array();
    for (int q = 1; q < ranks; ++q)
        workers.push_back({{"rank", q}, {"rss_before_mb", all[2 * q]}, {"peak_rss_mb", all[2 * q + 1]}});
    j["workers"] = workers;
    return j;
}

}  // namespace

int main(int argc, char** argv) {
    pfarm::mpi::environment env(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CLI::App app{"pfarm-bench-load: peak resident memory of a farm of many one-task requests"};
    long long tasks = 1000000;
    int bytes = 8;
    pfarm::farm_options options;
    options.schedule.technique = "ss";
    app.add_option("--tasks", tasks, "tasks (each a request with ss)")->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--technique", options.schedule.technique, "technique")->capture_default_str();
    app.add_option("--output-bytes", bytes, "bytes of one task's output: 1, 8 or 64")->check(CLI::IsMember({1, 8, 64}))->capture_default_str();
    app.add_flag("--prefetch", options.protocol.prefetch, "workers ask ahead");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return rank == 0 ? app.exit(e) : 0;
        if (rank == 0) std::fprintf(stderr, "pfarm-bench-load: %s\n", e.what());
        return 2;
    }
    try {
        const nlohmann::json j = bytes == 1 ? run<1>(rank, tasks, options) : bytes == 8 ? run<8>(rank, tasks, options)
                                                                                         : run<64>(rank, tasks, options);
        if (rank == 0) std::printf("%s\n", j.dump().c_str());
        return 0;
    } catch (const std::exception& e) {
        if (rank == 0) std::fprintf(stderr, "pfarm-bench-load: %s\n", e.what());
        return 2;
    }
}
