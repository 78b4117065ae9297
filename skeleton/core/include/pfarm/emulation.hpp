// pfarm emulation input: the one load-change type, and the one strict parser of the emulation options (number
// lists such as --slowdown, PFARM_SLOWDOWN, --task-times; load changes WORKER:TIME:FACTOR such as --load-change,
// PFARM_LOAD_CHANGES), with the range checks that the MPI farm and the simulator share. No transport.
#pragma once

#include <string>
#include <vector>

namespace pfarm {

/// From `time` on, worker `worker`'s task time is multiplied by `factor`, replacing any earlier factor of that
/// worker (1 restores its base speed). Under MPI the worker is the rank and the time is seconds since the farm
/// started (farm_options::emulation); in the simulator the worker is the 0-based worker index and the time
/// is simulated time (sim::platform::load_changes).
struct load_change {
    int worker = 0;
    double time = 0.0;
    double factor = 1.0;
};

/// Parses a comma-separated list of numbers, "1,2.5,3e-2" (blanks around an item are allowed). Strict: an
/// empty list or item ("1,,2", "1,"), trailing characters ("12abc"), "nan", "inf", hexadecimal and magnitudes
/// beyond double ("1e999") throw pfarm::invalid_argument naming `argument`, as the caller spells it: a tool its
/// flag ("--slowdown"), the farm the environment variable ("PFARM_SLOWDOWN"), library code the field.
std::vector<double> parse_numbers(const std::string& text, const std::string& argument);

/// Parses "WORKER:TIME:FACTOR", e.g. "2:100:1.5": WORKER an integer >= 0, TIME a finite number >= 0, FACTOR a
/// finite number > 0 (numbers as in parse_numbers). Throws pfarm::invalid_argument naming `argument`. Whether
/// WORKER exists is for check_load_change, once the number of workers is known.
load_change parse_load_change(const std::string& text, const std::string& argument);

/// Parses a comma-separated list of load changes, "2:100:1.5,0:50:2" (the form of PFARM_LOAD_CHANGES); an empty
/// list or item throws pfarm::invalid_argument naming `argument`.
std::vector<load_change> parse_load_changes(const std::string& text, const std::string& argument);

/// The range check shared by the farm and the simulator: worker in [0, workers), time finite and >= 0, factor
/// finite and > 0. Throws pfarm::invalid_argument naming `argument`.
void check_load_change(const load_change& change, int workers, const std::string& argument);

}  // namespace pfarm
