// pfarm-sat: circuit satisfiability (seed 003) by exhaustive search over the 2^16 inputs of the classic
// 16-input circuit, farmed as blocks of inputs, checked against the circuit's known nine solutions.
// README.md beside this file has examples.
#include "sat_kernel.hpp"

#include "farm_cli.hpp"
#include "pfarm/farm.hpp"
#include "pfarm/mpi.hpp"

#include <mpi.h>

#include <cstdio>
#include <iostream>
#include <numeric>
#include <string>

namespace {

namespace st = pfarm::apps::sat;
constexpr const char* tool = "pfarm-sat";

struct app_args {
    std::int64_t tasks = 1024;
    std::int64_t repeat = 2000;
    bool list = false;
    bool json = false;
};

/// Rank 0 alone speaks on std::cout and std::cerr: every rank parses the same arguments and throws the same
/// errors, so one message is enough.
class root_speaks {
public:
    explicit root_speaks(int rank) {
        if (rank != 0) out_ = std::cout.rdbuf(nullptr), err_ = std::cerr.rdbuf(nullptr);
    }
    ~root_speaks() {
        if (out_) std::cout.rdbuf(out_), std::cerr.rdbuf(err_);
    }
    root_speaks(const root_speaks&) = delete;
    root_speaks& operator=(const root_speaks&) = delete;

private:
    std::streambuf* out_ = nullptr;
    std::streambuf* err_ = nullptr;
};

int run(const app_args& a, const pfarm::farm_options& farm) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    st::validate(a.tasks, a.repeat);
    const auto tasks = static_cast<std::uint32_t>(a.tasks);
    const int repeat = static_cast<int>(a.repeat);
    const std::uint32_t width = st::task_width(tasks);

    std::vector<std::uint32_t> index(tasks);
    std::iota(index.begin(), index.end(), 0u);
    std::vector<std::uint8_t> flags(std::size_t{tasks} * width);
    const pfarm::farm_report report = pfarm::farm(
        MPI_COMM_WORLD, std::span<const std::uint32_t>(index), std::span<std::uint8_t>(flags),
        [tasks, repeat](const std::uint32_t& t, std::span<std::uint8_t> f) { st::run_task(t, tasks, repeat, f); }, farm);
    if (rank != 0) return 0;

    const std::vector<std::uint32_t> found = st::solutions(flags, tasks);
    const std::vector<std::uint32_t> known = st::known_solutions();
    const bool verified = found == known;

    if (a.json) {
        nlohmann::json j = pfarm::tools::report_json(report);
        j["app"] = "sat";
        j["inputs"] = st::inputs;
        j["combinations"] = st::combinations;
        j["repeat"] = repeat;
        j["solutions"] = found.size();
        j["expected_solutions"] = known.size();
        nlohmann::json bits = nlohmann::json::array();
        for (const std::uint32_t z : found) bits.push_back(st::to_bits(z));
        j["satisfying_inputs"] = bits;
        j["verification"] = "known";
        j["verified"] = verified;
        std::cout << j.dump() << "\n";
    } else {
        const std::uint32_t smallest = st::combinations / tasks;
        std::cout << tool << ": " << st::combinations << " inputs of the 16-input circuit in " << tasks << " tasks of "
                  << (smallest == width ? std::to_string(width) : std::to_string(smallest) + "-" + std::to_string(width))
                  << " inputs, each evaluated " << repeat << " times\n";
        std::cout << found.size() << " satisfying inputs\n";
        if (a.list)
            for (const std::uint32_t z : found) std::cout << "  " << st::to_bits(z) << "  (" << z << ")\n";
        std::cout << (verified ? "verified: exactly the circuit's 9 known solutions"
                               : "NOT verified: the circuit has exactly 9 known solutions")
                  << "\n";
        pfarm::tools::print_report(std::cout, report);
    }
    if (!verified) {
        std::cerr << tool << ": verification failed: found " << found.size()
                  << " satisfying inputs; expected the circuit's 9 known solutions\n";
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    pfarm::mpi::environment env(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    root_speaks quiet(rank);

    CLI::App app{"pfarm-sat: circuit satisfiability (seed 003): exhaustive search of the classic 16-input circuit's "
                 "2^16 inputs, farmed as blocks of inputs, checked against its 9 known solutions"};
    app_args a;
    pfarm::farm_options farm;
    farm.replicated_input = true;  // a task's input is its block number, which every rank holds
    pfarm::tools::add_farm_options(app, farm);
    app.add_option("--tasks", a.tasks, "blocks the 65536 inputs are cut into, 1 to 65536 (default 1024)");
    app.add_option("--repeat", a.repeat, "evaluations of the circuit per input: the work knob (default 2000)");
    app.add_flag("--list", a.list, "print the satisfying inputs (v0 first, as Quinn prints them)");
    app.add_flag("--json", a.json, "print the report and the result as one JSON object");
    try {
        return pfarm::tools::run_tool(tool, app, argc, argv, [&] { return run(a, farm); });
    } catch (const std::exception& e) {
        // Anything else leaves the other ranks waiting: say why, then end the whole job.
        std::fprintf(stderr, "%s: rank %d: %s\n", tool, rank, e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
}
