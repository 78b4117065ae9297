// Fuzzes the simulator's platform file reader (pfarm/simulator.hpp load_platform, pfarm-sim --platform): the
// input is the file. A platform it accepts is then simulated (50 tasks; gss, multi or dealdyn-mv by the input's
// size, so that the monitors' readings are read too), and by the decentralised farm (gss: its atomic costs).
// Invariants: a refusal is a pfarm::invalid_argument naming "--platform" and the file; an accepted platform has
// task times finite and > 0, overhead and latency finite and >= 0, load changes of existing workers with finite
// time >= 0 and factor > 0, and one monitor entry per worker or none; the simulator accepts every platform the
// reader accepts (the reader checks what the simulator checks, so a bad value is reported with its file and
// field), and its run hands out exactly the 50 tasks with a finite makespan.
#include "fuzz_support.hpp"

#include "pfarm/simulator.hpp"

#include <cmath>
#include <string>
#include <utility>

namespace {

using pfarm::fuzz::check;
using pfarm::fuzz::fail;

bool finite_at_least(double v, double low) { return std::isfinite(v) && v >= low; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& path = pfarm::fuzz::scratch_file(data, size, ".json");
    const auto pl = pfarm::fuzz::accepts("--platform", [&] { return pfarm::sim::load_platform(path, "--platform"); });
    if (!pl) return 0;
    const auto p = static_cast<int>(pl->task_times.size());
    check(p >= 1, "no workers");
    for (const double t : pl->task_times) check(std::isfinite(t) && t > 0.0, "a task time that is not finite and > 0");
    check(finite_at_least(pl->overhead, 0.0) && finite_at_least(pl->latency, 0.0), "overhead or latency out of range");
    for (const auto& c : pl->load_changes)
        check(c.worker >= 0 && c.worker < p && finite_at_least(c.time, 0.0) && std::isfinite(c.factor) && c.factor > 0.0,
              "a load change out of range");
    check(pl->monitors.empty() || static_cast<int>(pl->monitors.size()) == p, "monitors: not one per worker");
    for (const auto& v : {pl->atomic_overhead, pl->atomic_latency})
        check(!v || finite_at_least(*v, 0.0), "atomic_overhead or atomic_latency out of range");
    if (p > 256) return 0;  // the run below stays quick

    const char* techniques[] = {"gss", "multi", "dealdyn-mv"};
    const char* technique = techniques[size % 3];
    pfarm::sim::workload wl;
    wl.tasks = 50;
    try {
        pfarm::sim::run_options decentralised;
        decentralised.farmer = pfarm::sim::farmer_kind::decentralised;
        for (const auto& [name, run] : {std::pair{std::string(technique), pfarm::sim::run_options{}},
                                        std::pair{std::string("gss, decentralised"), decentralised}}) {
            const auto r = pfarm::sim::simulate(*pl, wl, run.farmer == decentralised.farmer ? "gss" : technique, {}, run);
            pfarm::task_count handed = 0;
            for (const auto& w : r.workers) handed += w.tasks;
            check(handed == wl.tasks, name + ": " + std::to_string(handed) + " tasks computed, not 50");
            check(std::isfinite(r.makespan) && r.makespan >= 0.0, name + ": makespan is not finite");
        }
    } catch (const pfarm::invalid_argument& e) {
        fail(std::string("load_platform accepted what simulate refuses: ") + e.what());
    } catch (const std::exception& e) {
        fail(std::string(technique) + " on an accepted platform: " + e.what());
    }
    return 0;
}
