// pfarm: RAII over MPI: what pfarm initialises, duplicates or commits it frees (in the manner of MPL's
// environment.hpp), and MPI errors become exceptions.
#pragma once

#include "pfarm/error.hpp"

#include <mpi.h>

#include <string>

namespace pfarm::mpi {

/// An MPI failure, with the library's error string.
class mpi_error : public error {
public:
    mpi_error(const std::string& call, int code);
    int code() const noexcept { return code_; }

private:
    int code_;
};

/// Throws mpi_error(call, code).
[[noreturn]] void fail(int code, const char* call);

/// Throws mpi_error when `code` is not MPI_SUCCESS. Inline: the farm's round trip makes two MPI calls a side.
inline void check(int code, const char* call) {
    if (code != MPI_SUCCESS) [[unlikely]] fail(code, call);
}

/// A farm of this process ended with ranks presumed lost (farm_report::lost_ranks; docs/reliability.md "A lost
/// worker"): noted by the farm on every living rank.
void note_lost_ranks() noexcept;
bool lost_ranks_noted() noexcept;

/// Whether the MPI runtime keeps a job running after one of its ranks dies (Open MPI started with
/// orte_enable_recovery: its environment variable in every rank's environment).
bool runtime_survives_a_lost_rank() noexcept;

/// Seconds MPI_Finalize may take, under a runtime that survives a lost rank, before the process ends without it.
inline constexpr int finalize_bound_seconds = 10;

/// MPI_Finalize, unless a farm of this process lost ranks: under Open MPI 4.1's recovery mode MPI_Finalize is a
/// fence over every process of the job that can wait forever for a dead one (1 run in 8 of a four-rank test program
/// whose rank 2 was killed; docs/reliability.md). The process then ends without it, which that runtime accepts.
/// Under that runtime a rank may also die after the farm, where nothing notes it: MPI_Finalize is then given
/// finalize_bound_seconds, after which the process ends with exit status 3 (a rank was lost), saying so.
void finalize();

/// Under a runtime that survives a lost rank, a rank that dies before every rank has passed MPI_Init and the farm's
/// setup leaves the others waiting there for ever (Open MPI 4.1's startup fence, or a collective of the program or of
/// the farm's setup: docs/reliability.md "A lost worker", limits). guard_startup() bounds that wait: unless the farm
/// has passed its setup (startup_over(), which every farm calls at its setup's end, once rank 0 has) within
/// `seconds`, the process says so on standard error and ends with exit status `status` (the apps' 4; pfarm-run's 255,
/// as its other errors: its 1-100 count failed commands). It does nothing when the runtime
/// ends the job on a lost rank, when `seconds` is 0, or once called. The apps and pfarm-run call it before MPI_Init
/// with startup_bound_seconds(): a program of one's own that does long work of its own before its first farm
/// should not (or give it a bound that covers that work).
inline constexpr int startup_lost_status = 4;
void guard_startup(double seconds, int status = startup_lost_status);
void startup_over() noexcept;
/// PFARM_STARTUP_TIMEOUT (seconds; 0: off), else 120. invalid_argument naming "PFARM_STARTUP_TIMEOUT" when it is not a
/// finite number >= 0.
double startup_bound_seconds();

/// Initialises MPI if nobody has, and finalises only what it initialised (finalize()).
class environment {
public:
    environment(int* argc = nullptr, char*** argv = nullptr);
    ~environment();
    environment(const environment&) = delete;
    environment& operator=(const environment&) = delete;

private:
    bool owner_ = false;
};

/// A duplicate of a user's communicator, freed by the destructor: the farm's traffic never meets the
/// user's (no tag clash on their communicator). Its error handler returns codes, which pfarm turns into exceptions.
class communicator {
public:
    explicit communicator(MPI_Comm parent);
    ~communicator();
    communicator(communicator&& other) noexcept : comm_(other.comm_) { other.comm_ = MPI_COMM_NULL; }
    communicator& operator=(communicator&&) = delete;
    communicator(const communicator&) = delete;
    communicator& operator=(const communicator&) = delete;

    MPI_Comm get() const noexcept { return comm_; }
    int rank() const;
    int size() const;

private:
    MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace pfarm::mpi
