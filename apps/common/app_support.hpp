// What the apps share beyond pfarm_cli: quiet non-root ranks, a seeded generator for their inputs, and rank 0's
// work after the farm (its report and files) whose outcome every rank shares.
#pragma once

#include "options.hpp"

#include "pfarm/error.hpp"
#include "pfarm/memory.hpp"
#include "pfarm/mpi.hpp"
#include "pfarm/output_file.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <new>
#include <stdexcept>
#include <streambuf>
#include <string>

namespace pfarm::apps {

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

/// splitmix64 (Steele, Lea & Flood 2014): a tiny generator whose output is fixed by the seed on every rank, so
/// every rank generates the same input from it (replicated input: only indices travel).
struct splitmix64 {
    std::uint64_t state;
    std::uint64_t next() {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-52 - 1.0; }  // [-1, 1)
    int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }  // [0, n)
};

/// Under a runtime that survives a lost rank, bounds the job's startup (pfarm::mpi::guard_startup, with
/// PFARM_STARTUP_TIMEOUT's bound); a bad PFARM_STARTUP_TIMEOUT ends the process with status 2, naming it.
inline bool guard_startup() {
    try {
        pfarm::mpi::guard_startup(pfarm::mpi::startup_bound_seconds());
    } catch (const pfarm::invalid_argument& e) {
        std::fprintf(stderr, "pfarm: %s\n", e.what());
        std::exit(2);
    }
    return true;
}

/// What every app's main() sets up first: the startup's bound, MPI (finalised on exit), this rank, and quiet non-root
/// ranks.
struct app_session {
    app_session(int* argc, char*** argv) : guarded(guard_startup()), env(argc, argv), rank(world_rank()), quiet(rank) {}
    bool guarded;
    pfarm::mpi::environment env;
    int rank;
    root_speaks quiet;

private:
    static int world_rank() {
        int r = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        return r;
    }
};

/// Collective: runs `body` on rank 0 alone (the report, the files only rank 0 writes) and gives every rank its
/// outcome: the exit code it returns, or what it threw, thrown again on every rank (a pfarm::invalid_argument as
/// itself, naming its argument; anything else as a pfarm::error with its message). So a file that cannot be written
/// (a full disk) fails the run on every rank, never on rank 0 alone while the others report success. After a farm
/// that lost ranks (`lost`: farm_report::lost_ranks, known on every rank), and under a runtime that survives a lost
/// rank (one may die after the farm, while rank 0 writes), it goes point to point from rank 0 to the ranks not known
/// lost, with no collective that a dead rank would hold up.
inline int on_rank0(int rank, const std::vector<int>& lost, const std::function<int()>& body) {
    std::int32_t head[2] = {0, 0};  // what happened (0 returned, 1 invalid_argument, 2 other), the exit code
    std::string argument, message;
    if (rank == 0) {
        try {
            head[1] = body();
        } catch (const pfarm::invalid_argument& e) {
            head[0] = 1, argument = e.argument(), message = e.message();
        } catch (const std::exception& e) {
            head[0] = 2, message = e.what();
        }
    }
    int ranks = 1;
    pfarm::mpi::check(MPI_Comm_size(MPI_COMM_WORLD, &ranks), "MPI_Comm_size");
    constexpr int tag = 77;  // the apps' own message after the farm (MPI_COMM_WORLD: the farm used its own context)
    const auto share = [&](void* data, int count, MPI_Datatype type) {
        if (lost.empty() && !pfarm::mpi::runtime_survives_a_lost_rank()) {
            pfarm::mpi::check(MPI_Bcast(data, count, type, 0, MPI_COMM_WORLD), "MPI_Bcast");
        } else if (rank == 0) {
            for (int r = 1; r < ranks; ++r)
                if (std::find(lost.begin(), lost.end(), r) == lost.end())
                    pfarm::mpi::check(MPI_Send(data, count, type, r, tag, MPI_COMM_WORLD), "MPI_Send");
        } else {
            pfarm::mpi::check(MPI_Recv(data, count, type, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        }
    };
    share(head, 2, MPI_INT32_T);
    if (head[0] == 0) return head[1];
    for (std::string* text : {&argument, &message}) {
        auto length = static_cast<std::int64_t>(text->size());
        share(&length, 1, MPI_INT64_T);
        text->resize(static_cast<std::size_t>(length));
        if (length > 0) share(text->data(), static_cast<int>(length), MPI_CHAR);
    }
    if (head[0] == 1) throw pfarm::invalid_argument(argument, message);
    throw pfarm::error(message);
}
inline int on_rank0(int rank, const std::function<int()>& body) { return on_rank0(rank, {}, body); }

/// Collective: rank 0 checks that `path` (an output file; none when empty) can be written, before any work, without
/// touching what is there (pfarm/output_file.hpp); every rank throws its invalid_argument naming `flag`.
inline void check_output_everywhere(int rank, const std::string& path, const std::string& flag) {
    on_rank0(rank, [&] {
        if (!path.empty()) pfarm::check_output_path(path, flag);
        return 0;
    });
}

/// Collective: every rank runs `allocate` (what it allocates, nothing on a rank that keeps none) and every rank
/// learns whether one failed: std::bad_alloc or std::length_error on any rank is invalid_argument(argument, "<what>:
/// the allocation failed on rank R") on every rank, so no rank is left waiting for one that ran out of memory.
inline void allocate_everywhere(int rank, const std::string& argument, const std::string& what,
                                const std::function<void()>& allocate) {
    int failed = -1;  // the lowest rank whose allocation failed
    try {
        allocate();
    } catch (const std::bad_alloc&) {
        failed = rank;
    } catch (const std::length_error&) {
        failed = rank;
    }
    int size = 1;
    pfarm::mpi::check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
    int lowest = failed < 0 ? size : failed;
    pfarm::mpi::check(MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
    if (lowest < size)
        throw pfarm::invalid_argument(argument, what + ": the allocation failed on rank " + std::to_string(lowest) +
                                                    " (out of memory)");
}

/// Parses the command line and runs `body` as pfarm::tools::run_tool does (exit 2 with a message on bad input).
/// Anything else thrown would leave the other ranks waiting: it is reported with the rank, and the whole job
/// ends with MPI_Abort.
inline int run_app(const char* tool, CLI::App& app, int argc, char** argv, int rank, const std::function<int()>& body) {
    try {
        return pfarm::tools::run_tool(tool, app, argc, argv, body);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: rank %d: %s\n", tool, rank, e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
}

}  // namespace pfarm::apps
