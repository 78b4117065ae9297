// Circuit satisfiability (seed 003, section 4.4): which of the 2^16 assignments of a combinational circuit's
// 16 Boolean inputs make its output 1, found by exhaustive search. The circuit is the classic one of
// M. J. Quinn, "Parallel Programming in C with MPI and OpenMP" (McGraw-Hill, 2004), section 4.4, evaluated
// as his check_circuit does (short-circuit && and ||, so inputs cost different amounts): exactly 9 of the
// 65,536 inputs satisfy it.
//
// A task checks one contiguous block of inputs; `tasks` blocks cover all 2^16, their sizes differing by at
// most 1. A task's output is one flag per input of a block of the largest size (the rest zero).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace pfarm::apps::sat {

inline constexpr int inputs = 16;
inline constexpr std::uint32_t combinations = 1u << inputs;

/// The satisfying inputs as Quinn's program prints them, v[0] first (bit i of the input is v[i]).
inline constexpr std::array<std::string_view, 9> known_solutions_text = {
    "1010111110011001", "0110111110011001", "1110111110011001", "1010111110111001", "0110111110111001",
    "1110111110111001", "1010111111011001", "0110111111011001", "1110111111011001"};

/// The same nine as input values z, in increasing order.
std::vector<std::uint32_t> known_solutions();

/// Quinn's check_circuit: is the output 1 for input z (bit i of z is input v[i])?
inline bool check_circuit(std::uint32_t z) {
    bool v[inputs];
    for (int i = 0; i < inputs; ++i) v[i] = (z >> i) & 1u;
    return (v[0] || v[1]) && (!v[1] || !v[3]) && (v[2] || v[3]) && (!v[3] || !v[4]) && (v[4] || !v[5]) &&
           (v[5] || !v[6]) && (v[5] || v[6]) && (v[6] || !v[15]) && (v[7] || !v[8]) && (!v[7] || !v[13]) &&
           (v[8] || v[9]) && (v[8] || !v[9]) && (!v[9] || !v[10]) && (v[9] || v[11]) && (v[10] || v[11]) &&
           (v[12] || v[13]) && (v[13] || !v[14]) && (v[14] || v[15]);
}

/// The inputs a task checks: [first, first + count).
struct block {
    std::uint32_t first = 0;
    std::uint32_t count = 0;
};

/// Throws pfarm::invalid_argument("--tasks") unless 1 <= tasks <= 2^16, and ("--repeat") unless repeat >= 1.
void validate(std::int64_t tasks, std::int64_t repeat);

/// Task t of `tasks`: inputs [floor(t 2^16 / tasks), floor((t + 1) 2^16 / tasks)).
block task_block(std::uint32_t task, std::uint32_t tasks);

/// Flags per task (the largest block): ceil(2^16 / tasks).
std::uint32_t task_width(std::uint32_t tasks);

/// One task: flags[k] = 1 when input first + k satisfies the circuit, 0 otherwise and past the block.
/// Each input is evaluated `repeat` times (a work knob: the exhaustive search of 2^16 inputs alone takes
/// well under a millisecond); the answer does not change.
void run_task(std::uint32_t task, std::uint32_t tasks, int repeat, std::span<std::uint8_t> flags);

/// The satisfying inputs named by the tasks' flags (all tasks' outputs in task order), in increasing order.
std::vector<std::uint32_t> solutions(std::span<const std::uint8_t> flags, std::uint32_t tasks);

/// Sequential exhaustive search (one evaluation per input).
std::vector<std::uint32_t> sequential();

/// An input as Quinn prints it: v[0] first.
std::string to_bits(std::uint32_t z);

}  // namespace pfarm::apps::sat
