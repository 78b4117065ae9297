// pfarm-circuit: circuit satisfiability (Yang et al., "A performance-based approach to loop self-scheduling on
// heterogeneous PC clusters", section 4.4) by exhaustive search over the 2^n inputs of a circuit (the
// classic 16-input one, or one read with --circuit FILE), farmed as blocks of inputs, reporting every
// satisfying assignment; checked against the built-in circuit's nine known solutions or, for a file circuit,
// against a sequential search on rank 0.
// README.md beside this file has examples.
#include "app_support.hpp"
#include "circuit_kernel.hpp"

#include "farm_cli.hpp"
#include "pfarm/farm.hpp"
#include "pfarm/memory.hpp"
#include "pfarm/mpi.hpp"

#include <mpi.h>

#include <cstdio>
#include <iostream>
#include <numeric>
#include <string>

namespace {

namespace st = pfarm::apps::circuit;
constexpr const char* tool = "pfarm-circuit";

struct app_args {
    std::int64_t tasks = 1024;
    std::int64_t repeat = 2000;
    std::string circuit_file;
    bool list = true;
    bool json = false;
};


int run(const app_args& a, pfarm::farm_options farm) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    // Every rank reads the file (the input is replicated); the same errors everywhere.
    const bool from_file = !a.circuit_file.empty();
    const st::circuit c = from_file ? st::read_circuit(a.circuit_file) : st::builtin();
    const std::uint64_t total = c.combinations();
    st::validate(a.tasks, a.repeat, total);
    const auto tasks = static_cast<std::uint32_t>(a.tasks);
    const int repeat = static_cast<int>(a.repeat);
    const std::uint32_t width = st::task_width(tasks, total);

    // A flag per input combination on every rank: refused when no machine here holds them; an allocation that
    // still fails is an error on every rank.
    const std::string combinations = "has " + std::to_string(total) + " input combinations, a byte each";
    pfarm::apps::on_rank0(rank, [&] {  // rank 0's verdict on every rank: the ranks' memories may differ
        pfarm::check_fits_in_memory(std::uint64_t{tasks} * width, 1, "--circuit", combinations + " on every rank");
        return 0;
    });
    std::vector<std::uint8_t> flags;
    pfarm::apps::allocate_everywhere(rank, "--circuit", combinations,
                                     [&] { flags.resize(std::size_t{tasks} * width); });
    farm.resume.journal_key = "pfarm-circuit " + std::to_string(a.tasks) + " " + std::to_string(a.repeat) + " " + a.circuit_file;  // what determines the outputs (--journal)
    const pfarm::farm_report report = pfarm::farm(
        MPI_COMM_WORLD, pfarm::index_range{0, tasks}, std::span<std::uint8_t>(flags),
        [&c, from_file, tasks, repeat](pfarm::task_count i, std::span<std::uint8_t> f) {
            const auto t = static_cast<std::uint32_t>(i);
            if (from_file) st::run_task(c, t, tasks, repeat, f);
            else st::run_task(t, tasks, repeat, f);  // Quinn's check_circuit, as compiled code
        },
        farm);
    if (rank != 0) return 0;

    const std::vector<std::uint32_t> found = st::solutions(flags, tasks, total);
    const std::vector<std::uint32_t> expected = from_file ? st::sequential(c) : st::known_solutions();
    const bool verified = found == expected;
    const std::string against = from_file ? "a sequential search of the same circuit" : "the circuit's 9 known solutions";

    if (a.json) {
        nlohmann::json j = pfarm::tools::report_json(report);
        j["app"] = "circuit";
        j["circuit"] = from_file ? a.circuit_file : std::string("builtin");
        j["inputs"] = c.variables;
        j["clauses"] = c.clauses.size();
        j["combinations"] = total;
        j["repeat"] = repeat;
        j["solutions"] = found.size();
        j["expected_solutions"] = expected.size();
        nlohmann::json bits = nlohmann::json::array();
        for (const std::uint32_t z : found) bits.push_back(st::to_bits(z, c.variables));
        j["satisfying_inputs"] = bits;
        j["verification"] = from_file ? "sequential" : "known";
        j["verified"] = verified;
        std::cout << j.dump() << "\n";
    } else {
        const auto smallest = static_cast<std::uint32_t>(total / tasks);
        std::cout << tool << ": " << total << " inputs of the " << c.variables << "-input circuit "
                  << (from_file ? "'" + a.circuit_file + "'" : std::string("(built-in, Quinn's)")) << " ("
                  << c.clauses.size() << " clauses) in " << tasks << " tasks of "
                  << (smallest == width ? std::to_string(width) : std::to_string(smallest) + "-" + std::to_string(width))
                  << " inputs, each evaluated " << repeat << " times\n";
        std::cout << found.size() << " satisfying inputs" << (a.list && !found.empty() ? " (x0 first):" : "") << "\n";
        if (a.list)
            for (const std::uint32_t z : found) std::cout << "  " << st::to_bits(z, c.variables) << "  (" << z << ")\n";
        std::cout << (verified ? "verified: identical to " : "NOT verified: differs from ") << against << "\n";
        pfarm::tools::print_report(std::cout, report);
    }
    if (!verified) {
        std::cerr << tool << ": verification failed: found " << found.size() << " satisfying inputs; expected "
                  << expected.size() << " (" << against << ")\n";
        return 1;
    }
    return pfarm::tools::completed_status(report);  // 3: every result is in, but a worker rank was lost
}

}  // namespace

int main(int argc, char** argv) {
    const pfarm::apps::app_session session(&argc, &argv);

    CLI::App app{"pfarm-circuit: circuit satisfiability (Yang et al., HPLS): exhaustive search of a circuit's 2^n inputs (the "
                 "classic 16-input circuit, or --circuit FILE), farmed as blocks of inputs, reporting every "
                 "satisfying assignment"};
    app_args a;
    pfarm::farm_options farm;
    farm.protocol.replicated_input = true;  // a task's input is its block number, which every rank holds
    pfarm::tools::add_farm_options(app, farm);
    app.add_option("--circuit", a.circuit_file,
                   "read the circuit from FILE: 'variables N' then one clause per line, e.g. 'x0 | !x3' (README.md); "
                   "default: the built-in 16-input circuit");
    app.add_option("--tasks", a.tasks, "blocks the 2^n inputs are cut into, 1 to 2^n (default 1024)");
    app.add_option("--repeat", a.repeat, "evaluations of the circuit per input: the work knob (default 2000)");
    app.add_flag("--list,!--no-list", a.list,
                 "print every satisfying input, x0 first as Quinn prints them (default); --no-list: the count only");
    app.add_flag("--json", a.json, "print the report and the result as one JSON object");
    return pfarm::apps::run_app(tool, app, argc, argv, session.rank, [&] { return run(a, farm); });
}
