// pfarm-chunks: what chunks will my loop get? Prints the chunk sizes of a technique, in hand-out order, when
// requests arrive round-robin and every worker keeps the per-task time given by --times (equal by default);
// --json adds each chunk's worker and first index, and the calibration (F, CV, k) when the technique calibrates.
#include "calibration_report.hpp"
#include "options.hpp"

#include "pfarm/round_robin.hpp"
#include "pfarm/simulator.hpp"

#include <nlohmann/json.hpp>

#include <iostream>

namespace {

/// pfarm-chunks' flags for what schedule_round_robin and the calibration name by their C++ names; the technique's
/// options are in the shared table (options.hpp).
constexpr pfarm::tools::flag_name chunks_flags[] = {
    {"iterations", "--iterations"},
    {"workers", "--workers"},
    {"availability", "--availability"},
    {"latency", "--latency"},
    {"benchmark", "--benchmark"},
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"pfarm-chunks: the chunk sizes a technique hands out, in order (calibration tasks included)"};
    pfarm::tools::technique_args args;
    pfarm::task_count iterations = 0;
    int workers = 0;
    bool json = false;
    std::string availability, latency, benchmark;
    app.add_option("--iterations,-I", iterations, "loop iterations (tasks) I >= 1")->required();
    app.add_option("--workers,-p", workers, "workers P >= 1")->required();
    pfarm::tools::add_technique_options(app, args, true);
    app.add_flag("--json", json, "print a JSON object with the worker of each chunk and the calibration (F, CV, k)");
    app.add_option("--availability", availability, "monitor readings a1,...,aP in (0,1] (statistical calibration)");
    app.add_option("--latency", latency, "monitor readings l1,...,lP in seconds (multivariate calibration)");
    app.add_option("--benchmark", benchmark, "monitor readings bm1,...,bmP (scales availability, eq. 5)");
    app.footer(pfarm::tools::technique_list());
    return pfarm::tools::run_tool("pfarm-chunks", app, argc, argv, [&] {
        // Every worker's state is kept (the farmer's and the technique's): a count no machine could hold is bad
        // input, not an allocation failure.
        constexpr int max_workers = 1 << 20;
        if (workers > max_workers)
            throw pfarm::invalid_argument("workers", "is " + std::to_string(workers) + "; expected at most " +
                                                         std::to_string(max_workers));
        const auto samples = pfarm::tools::samples_from(workers, availability, latency, benchmark);
        // auto simulates its candidates over the round robin's workers: no latency, no cost per request.
        const pfarm::candidate_predictor predictor = pfarm::sim::make_predictor(0.0, 0.0, {});
        const auto schedule =
            pfarm::schedule_round_robin(args.technique, iterations, workers, args.options, samples, &predictor);
        if (json) {
            nlohmann::json chunks = nlohmann::json::array();
            for (const auto& h : schedule.handouts)
                chunks.push_back({{"worker", h.worker}, {"first", h.work.first}, {"size", h.work.count},
                                  {"calibration", h.calibration}});
            nlohmann::json out{{"technique", args.technique}, {"iterations", iterations}, {"workers", workers},
                               {"chunks", chunks}};
            if (schedule.k) out["k"] = *schedule.k;
            if (schedule.calibration) out["calibration"] = pfarm::tools::calibration_json(*schedule.calibration);
            std::cout << out.dump() << "\n";
        } else {
            const char* separator = "";
            for (const auto& h : schedule.handouts) {
                std::cout << separator << h.work.count;
                separator = " ";
            }
            std::cout << "\n";
        }
        return 0;
    }, chunks_flags);
}
