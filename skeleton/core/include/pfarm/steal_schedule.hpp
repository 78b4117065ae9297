// pfarm scheduling core: the arithmetic of the work-stealing farm (farmer "stealing"), once for its two drivers: the
// MPI engine (skeleton/mpi/stealing/stealing.cpp) and the simulator (skeleton/sim/src/simulator_stealing.cpp, whose
// opening comment has the whole model). Every rank owns a contiguous range of the loop, a (front, back) pair: the
// equal static split, the owner's claim rule over its own remainder, a thief's share of a victim's remainder, the
// victim a thief asks (random, or its parent in Tree Scheduling's binary tree), a thief's backoff, the notice counters
// that detect the end without a farmer, and the pair as one 64-bit word (what one MPI atomic swaps). No transport.
#pragma once

#include "pfarm/technique.hpp"

#include <cstdint>
#include <random>
#include <string>

namespace pfarm {

/// How a thief chooses its victim: `random` draws one uniformly from the other ranks; `tree` is Tree Scheduling's
/// (seed 002, section 4.1): the ranks form a binary tree in heap order and a thief always asks its parent, so work only
/// travels down the tree; the root (rank 0) never steals.
enum class victim_rule { random, tree };

/// "random" or "tree" (the tools' --victims, the C API's victims, the simulator's run_options::victims);
/// invalid_argument naming `argument` otherwise.
victim_rule parse_victim_rule(const std::string& name, const std::string& argument = "victims");
std::string to_string(victim_rule rule);

/// An owner's unclaimed tasks [front, back).
struct steal_range {
    task_count front = 0, back = 0;
    task_count size() const { return back - front; }
    bool operator==(const steal_range&) const = default;
};

/// Rank `rank`'s first range of `tasks` over `ranks`: [j S / p, (j + 1) S / p), as equal as possible (the first S mod p
/// ranges one larger), whatever the ranks' speeds (Tree Scheduling's initial allocation, seed 002 section 6).
steal_range initial_range(task_count tasks, int ranks, int rank);

/// What a thief takes of a remainder of `remaining` >= 1 tasks: half, rounded up (so that a single task left behind
/// a long one in progress moves to an idle rank), from the back.
inline task_count steal_size(task_count remaining) { return (remaining + 1) / 2; }

/// The victim range after a steal from `found` (non-empty) and the tasks the thief takes.
inline steal_range after_steal(const steal_range& found) { return {found.front, found.back - steal_size(found.size())}; }
inline steal_range stolen_part(const steal_range& found) { return {found.back - steal_size(found.size()), found.back}; }

/// Tree Scheduling: the parent of `rank` in the binary tree in heap order; -1 for the root.
inline int tree_parent(int rank) { return rank == 0 ? -1 : (rank - 1) / 2; }

/// The owner's claim rule over its own remainder R: `ss` 1, `css` its chunk, `gss` ceil(R / p) (guided
/// self-scheduling as if the owner's range were a loop of its own shared by the p ranks), clipped to
/// [max(1, min_chunk), R].
struct steal_claim_rule {
    task_count constant = 0;  ///< ss, css: every chunk; 0: gss
    task_count minimum = 1;
    int ranks = 1;
    task_count size(task_count remaining) const;
};

/// The claim rule of `technique` (its options checked as the registry checks them) over `ranks` ranks; invalid_argument
/// naming "technique" for any technique but ss, css and gss.
steal_claim_rule make_steal_claim_rule(const std::string& technique, const technique_options& options, int ranks);

/// The victims rank `rank` of `ranks` asks, one per attempt: next() gives a rank, or -1 when it has none (the tree's
/// root, a rank alone). `random` draws with std::mt19937_64 seeded from `seed` and the rank, so that a run repeats.
class victim_picker {
public:
    victim_picker(victim_rule rule, int rank, int ranks, std::uint64_t seed);
    int next();

private:
    victim_rule rule_;
    int rank_, ranks_;
    std::mt19937_64 random_;
};

/// A thief's longest wait between two failed attempts: 1 / steal_polls_per_task of the seconds per task it has
/// measured on its own chunks, and at least steal_backoff_floor atomic round trips.
inline constexpr double steal_polls_per_task = 256.0;
inline constexpr double steal_backoff_floor = 16.0;

/// How long a thief waits after a failed attempt (or rank 0 after a poll of the counters short of the tasks):
/// `failures` (failures in a row before this one) is counted up, and the wait is 2^(n-1) round trips after the n-th,
/// at most the larger of steal_backoff_floor round trips and seconds_per_task / steal_polls_per_task.
double steal_backoff(int& failures, double round_trip, double seconds_per_task);

/// The notice counters that detect the end without a farmer: c = ceil(sqrt(ranks)), counter k held by rank k; rank j
/// adds the tasks it completed to counter j mod c, and rank 0 sums them all.
int notice_counters(int ranks);

/// The pair as the one 64-bit word an MPI atomic swaps: front in the low 32 bits, back in the high 32 bits, so a
/// farm holds at most steal_max_tasks tasks.
inline constexpr task_count steal_max_tasks = (task_count{1} << 32) - 1;
inline std::int64_t pack_range(const steal_range& r) {
    return static_cast<std::int64_t>((static_cast<std::uint64_t>(r.back) << 32) | static_cast<std::uint64_t>(r.front));
}
inline steal_range unpack_range(std::int64_t word) {
    const auto w = static_cast<std::uint64_t>(word);
    return {static_cast<task_count>(w & 0xffffffffu), static_cast<task_count>(w >> 32)};
}

}  // namespace pfarm
