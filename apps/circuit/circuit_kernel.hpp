// Circuit satisfiability (Yang et al., "A performance-based approach to loop self-scheduling on heterogeneous PC
// clusters", section 4.4): which of the 2^n assignments of a combinational circuit's
// n Boolean inputs make its output 1, found by exhaustive search. The built-in circuit is the classic one of
// M. J. Quinn, "Parallel Programming in C with MPI and OpenMP" (McGraw-Hill, 2004), section 4.4 (n = 16),
// evaluated as his check_circuit does (short-circuit && and ||, so inputs cost different amounts): exactly 9
// of the 65,536 inputs satisfy it. `--circuit FILE` reads another circuit in the same form, an AND of ORs of
// inputs or their negations (see parse_circuit).
//
// A task checks one contiguous block of inputs; `tasks` blocks cover all 2^n, their sizes differing by at
// most 1. A task's output is one flag per input of a block of the largest size (the rest zero).
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pfarm::apps::circuit {

inline constexpr int inputs = 16;  ///< the built-in circuit's inputs
inline constexpr std::uint32_t combinations = 1u << inputs;
inline constexpr int max_variables = 26;  ///< a file circuit's inputs at most (2^26 flags: 64 MiB)

/// The built-in circuit's satisfying inputs as Quinn's program prints them, v[0] first (bit i of the input is v[i]).
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

/// A literal: input `variable`, negated or not.
struct literal {
    int variable = 0;
    bool negated = false;
    friend bool operator==(const literal&, const literal&) = default;
};

/// A circuit as an AND of clauses, each an OR of literals, over inputs x0 .. x(n-1); evaluated left to right
/// with short-circuit && and || as check_circuit is.
struct circuit {
    int variables = inputs;
    std::vector<std::vector<literal>> clauses;

    std::uint64_t combinations() const { return std::uint64_t{1} << variables; }
    bool satisfied(std::uint32_t z) const {
        for (const auto& clause : clauses) {
            bool any = false;
            for (const literal& l : clause)
                if ((((z >> l.variable) & 1u) != 0) != l.negated) {
                    any = true;
                    break;
                }
            if (!any) return false;
        }
        return true;
    }
};

/// Quinn's 16-input circuit as a `circuit` (the same 18 clauses as check_circuit, in its order).
circuit builtin();

/// Reads a circuit file. The format, line by line ('#' starts a comment, blank lines are ignored):
///   variables N            first, 1 <= N <= 26: the inputs x0 .. x(N-1)
///   x0 | !x1 | x3          one clause per line: literals xK or !xK (also ~xK) joined by '|'
/// The circuit's output is the AND of all clauses (at least one). Throws pfarm::invalid_argument("--circuit", ...)
/// naming the line on any error. `name` labels the messages.
circuit parse_circuit(std::istream& in, const std::string& name);
/// parse_circuit of the file at `path`; throws invalid_argument("--circuit", ...) when it cannot be read.
circuit read_circuit(const std::string& path);

/// The inputs a task checks: [first, first + count).
struct block {
    std::uint32_t first = 0;
    std::uint32_t count = 0;
};

/// Throws pfarm::invalid_argument("--tasks") unless 1 <= tasks <= total, and ("--repeat") unless repeat >= 1.
void validate(std::int64_t tasks, std::int64_t repeat, std::uint64_t total = combinations);

/// Task t of `tasks`: inputs [floor(t total / tasks), floor((t + 1) total / tasks)).
block task_block(std::uint32_t task, std::uint32_t tasks, std::uint64_t total = combinations);

/// Flags per task (the largest block): ceil(total / tasks).
std::uint32_t task_width(std::uint32_t tasks, std::uint64_t total = combinations);

/// One task of the built-in circuit: flags[k] = 1 when input first + k satisfies it, 0 otherwise and past the
/// block. Each input is evaluated `repeat` times (a work knob: the exhaustive search of 2^16 inputs alone takes
/// well under a millisecond); the answer does not change.
void run_task(std::uint32_t task, std::uint32_t tasks, int repeat, std::span<std::uint8_t> flags);
/// The same for any circuit.
void run_task(const circuit& c, std::uint32_t task, std::uint32_t tasks, int repeat, std::span<std::uint8_t> flags);

/// The satisfying inputs named by the tasks' flags (all tasks' outputs in task order), in increasing order.
std::vector<std::uint32_t> solutions(std::span<const std::uint8_t> flags, std::uint32_t tasks,
                                     std::uint64_t total = combinations);

/// Sequential exhaustive search (one evaluation per input) of the built-in circuit, or of any.
std::vector<std::uint32_t> sequential();
std::vector<std::uint32_t> sequential(const circuit& c);

/// An input as Quinn prints it: v[0] first, `n` digits.
std::string to_bits(std::uint32_t z, int n = inputs);

}  // namespace pfarm::apps::circuit
