// What the apps share beyond pfarm_cli: quiet non-root ranks, and a seeded generator for their inputs.
#pragma once

#include "options.hpp"

#include "pfarm/mpi.hpp"

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <iostream>
#include <streambuf>

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

/// What every app's main() sets up first: MPI (finalised on exit), this rank, and quiet non-root ranks.
struct app_session {
    app_session(int* argc, char*** argv) : env(argc, argv), rank(world_rank()), quiet(rank) {}
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
