// pfarm: RAII over MPI: the environment, the farm's duplicated communicator, MPI errors as exceptions, and the
// bounds on a startup and a finalisation that a lost rank would hold up (mpi.hpp).
#include "pfarm/mpi.hpp"

#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

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

bool runtime_survives_a_lost_rank() noexcept {
    const char* v = std::getenv("OMPI_MCA_orte_enable_recovery");
    if (!v) return false;
    std::string s(v);
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s == "1" || s == "true" || s == "yes" || s == "on";
}

namespace {
struct startup_state {
    std::mutex guard;
    std::condition_variable changed;
    bool over = false, armed = false;
};
startup_state& startup() {
    static startup_state* s = new startup_state;  // never destroyed: its thread may outlive main's statics
    return *s;
}
}  // namespace

void guard_startup(double seconds, int status) {
    if (seconds <= 0.0 || !runtime_survives_a_lost_rank()) return;
    startup_state& s = startup();
    {
        std::lock_guard<std::mutex> lock(s.guard);
        if (s.armed || s.over) return;
        s.armed = true;
    }
    std::thread([seconds, status, &s] {
        std::unique_lock<std::mutex> lock(s.guard);
        if (s.changed.wait_for(lock, std::chrono::duration<double>(seconds), [&s] { return s.over; })) return;
        std::fprintf(stderr, "pfarm: the job's startup (MPI_Init, then the setup of the first farm, every rank taking "
                             "part) did not end within %g s: a rank was lost before the farm began (exit status %d; "
                             "PFARM_STARTUP_TIMEOUT sets the bound; docs/reliability.md \"A lost worker\")\n",
                     seconds, status);
        std::_Exit(status);
    }).detach();
}

void startup_over() noexcept {
    startup_state& s = startup();
    std::lock_guard<std::mutex> lock(s.guard);
    if (s.over) return;
    s.over = true;
    s.changed.notify_all();
}

double startup_bound_seconds() {
    const char* v = std::getenv("PFARM_STARTUP_TIMEOUT");
    if (!v) return 120.0;
    char* end = nullptr;
    const double seconds = std::strtod(v, &end);
    if (end == v || *end != '\0' || !std::isfinite(seconds) || seconds < 0.0)
        throw invalid_argument("PFARM_STARTUP_TIMEOUT", std::string("is '") + v + "'; expected seconds >= 0 (0: off)");
    return seconds;
}

void finalize() {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (finalised || lost_ranks_noted()) return;
    if (runtime_survives_a_lost_rank())
        std::thread([] {
            std::this_thread::sleep_for(std::chrono::seconds(finalize_bound_seconds));
            std::fprintf(stderr, "pfarm: MPI_Finalize did not return within %d s: a rank was lost after the farm "
                                 "(exit status 3)\n", finalize_bound_seconds);
            std::_Exit(3);
        }).detach();
    MPI_Finalize();
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
