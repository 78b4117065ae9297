// Fuzzes the simulator's per-task cost reader (pfarm/simulator.hpp load_costs, pfarm-sim --costs): one number
// per line with comments and blank lines, or a pfarm trace of an `ss` run (CSV or JSON); the input is the file.
// Invariants: a refusal is a pfarm::invalid_argument naming "--costs"; accepted costs are at least one, each
// finite and > 0 (what sim::workload::costs requires), and a workload of them simulates.
#include "fuzz_support.hpp"

#include "pfarm/simulator.hpp"

#include <cmath>
#include <string>

using pfarm::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& path = pfarm::fuzz::scratch_file(data, size);
    const auto costs = pfarm::fuzz::accepts("--costs", [&] { return pfarm::sim::load_costs(path, "--costs"); });
    if (!costs) return 0;
    check(!costs->empty(), "no costs accepted");
    for (std::size_t i = 0; i < costs->size(); ++i)
        check(std::isfinite((*costs)[i]) && (*costs)[i] > 0.0, "cost " + std::to_string(i) + " is not finite and > 0");
    if (costs->size() > 2000) return 0;
    pfarm::sim::platform pl;
    pl.task_times = {1.0, 2.0};
    pfarm::sim::workload wl;
    wl.tasks = static_cast<pfarm::task_count>(costs->size());
    wl.costs = *costs;
    try {
        const auto r = pfarm::sim::simulate(pl, wl, "gss", {});
        check(std::isfinite(r.makespan), "the makespan of accepted costs is not finite");
    } catch (const std::exception& e) {
        pfarm::fuzz::fail(std::string("simulate refuses costs load_costs accepted: ") + e.what());
    }
    return 0;
}
