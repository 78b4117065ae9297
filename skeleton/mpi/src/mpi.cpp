// pfarm: RAII over MPI: the environment, the farm's duplicated communicator, and MPI errors as exceptions
// (mpi.hpp).
#include "pfarm/mpi.hpp"

#include <atomic>

namespace pfarm::mpi {

namespace {
std::string describe(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
    return std::string(text, static_cast<std::size_t>(length));
}
}  // namespace

mpi_error::mpi_error(const std::string& call, int code) : error(call + ": " + describe(code)), code_(code) {}

void fail(int code, const char* call) { throw mpi_error(call, code); }

environment::environment(int* argc, char*** argv) {
    int initialised = 0;
    check(MPI_Initialized(&initialised), "MPI_Initialized");
    if (!initialised) {
        check(MPI_Init(argc, argv), "MPI_Init");
        owner_ = true;
    }
}

namespace {
std::atomic<bool> lost_noted{false};
}  // namespace

void note_lost_ranks() noexcept { lost_noted.store(true); }
bool lost_ranks_noted() noexcept { return lost_noted.load(); }

void finalize() {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (!finalised && !lost_ranks_noted()) MPI_Finalize();
}

environment::~environment() {
    if (owner_) finalize();
}

communicator::communicator(MPI_Comm parent) {
    if (parent == MPI_COMM_NULL) throw invalid_argument("comm", "is MPI_COMM_NULL");
    check(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
}

communicator::~communicator() {
    if (comm_ == MPI_COMM_NULL) return;
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (!finalised) MPI_Comm_free(&comm_);
}

int communicator::rank() const {
    int r = 0;
    check(MPI_Comm_rank(comm_, &r), "MPI_Comm_rank");
    return r;
}

int communicator::size() const {
    int s = 0;
    check(MPI_Comm_size(comm_, &s), "MPI_Comm_size");
    return s;
}

}  // namespace pfarm::mpi
