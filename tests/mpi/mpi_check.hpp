// What the scenario-driven MPI tests share (test_farm.cpp, test_api.cpp, test_decentralised.cpp): the rank, a
// CHECK that counts a failure and says where on which rank instead of aborting (so every rank reaches the same
// collectives and nobody hangs), and the verdict over every rank that becomes the exit status.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <string>

inline int rank_ = 0, size_ = 1, failures_ = 0;

#define CHECK(cond, ...)                                                                                    \
    do {                                                                                                    \
        if (!(cond)) {                                                                                      \
            ++failures_;                                                                                    \
            std::fprintf(stderr, "[rank %d] %s:%d: CHECK(%s) failed: ", rank_, __FILE__, __LINE__, #cond); \
            std::fprintf(stderr, __VA_ARGS__);                                                              \
            std::fprintf(stderr, "\n");                                                                     \
        }                                                                                                   \
    } while (0)

/// Sets rank_ and size_ (after MPI_Init).
inline void find_rank() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

/// Collective: the failed checks of every rank; rank 0 prints the scenario's verdict. The exit status: 0 or 1.
inline int verdict(const std::string& scenario) {
    int total = 0;
    MPI_Allreduce(&failures_, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank_ == 0) std::printf("%s: %s (%d failed checks)\n", scenario.c_str(), total == 0 ? "ok" : "FAILED", total);
    return total == 0 ? 0 : 1;
}
