// pfarm-matmul: matrix multiplication Z = X Y (as in Yang, Cheng & Shih, "On development of an efficient parallel
// loop self-scheduling for grid computing environments", and Yang et al., "A performance-based approach to loop
// self-scheduling on heterogeneous PC clusters") farmed one row of Z per task, in one of the former's four loop
// shapes (Fig. 1), checked against the sequential loop or by Freivalds' test. README.md has examples.
#include "app_support.hpp"
#include "matmul_kernel.hpp"

#include "farm_cli.hpp"
#include "pfarm/farm.hpp"
#include "pfarm/memory.hpp"
#include "pfarm/mpi.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <optional>

namespace {

namespace mm = pfarm::apps::matmul;
constexpr const char* tool = "pfarm-matmul";

struct app_args {
    int n = 512;
    std::string shape = "uniform";
    std::uint64_t seed = 1;
    std::string verify = "sequential";
    int rounds = 2;
    double tolerance = 1e-9;
    bool json = false;
};


int run(const app_args& a, pfarm::farm_options farm) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const mm::shape loop = mm::parse_shape(a.shape);
    if (a.verify != "sequential" && a.verify != "freivalds" && a.verify != "none")
        throw pfarm::invalid_argument("--verify", "is '" + a.verify + "'; expected sequential, freivalds or none");
    if (a.rounds < 1) throw pfarm::invalid_argument("--rounds", "is " + std::to_string(a.rounds) + "; expected >= 1");
    if (!(a.tolerance >= 0.0))
        throw pfarm::invalid_argument("--tolerance", "is " + std::to_string(a.tolerance) + "; expected >= 0");
    // Every rank generates X and Y from the seed (as in Yang et al. (HPLS), section 4.2: every node holds the
    // input matrices).
    // X, Y and Z: n x n doubles each on every rank, refused when no machine here holds them; an allocation that
    // still fails is an error on every rank.
    const auto nn = static_cast<std::uint64_t>(a.n > 0 ? a.n : 0) * static_cast<std::uint64_t>(a.n > 0 ? a.n : 0);
    const std::string matrices = "is " + std::to_string(a.n) + ": X, Y and Z, " + std::to_string(a.n) + " x " +
                                 std::to_string(a.n) + " doubles each";
    pfarm::apps::on_rank0(rank, [&] {  // rank 0's verdict on every rank: the ranks' memories may differ
        pfarm::check_fits_in_memory(nn, 3 * sizeof(double), "--size", matrices + " on every rank");
        return 0;
    });
    mm::problem p;
    std::vector<double> z;
    pfarm::apps::allocate_everywhere(rank, "--size", matrices, [&] {
        p = mm::make_problem(a.n, loop, a.seed);
        z.resize(static_cast<std::size_t>(p.n) * static_cast<std::size_t>(p.n));
    });
    farm.resume.journal_key = "pfarm-matmul " + std::to_string(a.n) + " " + a.shape + " " + std::to_string(a.seed);  // what determines the outputs (--journal)
    const pfarm::farm_report report =
        pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{0, p.n}, std::span<double>(z),
                    [&p](pfarm::task_count i, std::span<double> zi) { mm::row(p, static_cast<int>(i), zi); }, farm);
    if (rank != 0) return 0;

    const double checksum = std::accumulate(z.begin(), z.end(), 0.0);
    std::int64_t work = 0;
    for (int i = 0; i < p.n; ++i) work += p.work(i);
    std::optional<bool> verified;
    double error = 0.0, verify_seconds = 0.0;
    std::int64_t mismatches = 0;
    const auto start = std::chrono::steady_clock::now();
    if (a.verify == "sequential") {
        const mm::comparison c = mm::compare(z, mm::sequential(p), a.tolerance);
        error = c.max_rel_error, mismatches = c.mismatches, verified = c.ok();
    } else if (a.verify == "freivalds") {
        error = mm::freivalds_error(p, z, a.rounds, a.seed);
        verified = error <= a.tolerance;
    }
    verify_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    if (a.json) {
        nlohmann::json j = pfarm::tools::report_json(report);
        j["app"] = "matmul";
        j["size"] = p.n;
        j["shape"] = mm::to_string(loop);
        j["seed"] = a.seed;
        j["multiply_adds"] = work;
        j["checksum"] = checksum;
        j["verification"] = a.verify;
        j["verified"] = verified ? nlohmann::json(*verified) : nlohmann::json(nullptr);
        if (verified) {
            j["max_error"] = error;
            j["tolerance"] = a.tolerance;
            j["verify_seconds"] = verify_seconds;
            if (a.verify == "sequential") j["mismatches"] = mismatches;
            else j["rounds"] = a.rounds;
        }
        std::cout << j.dump() << "\n";
    } else {
        std::cout << tool << ": " << p.n << " x " << p.n << ", " << mm::to_string(loop) << " loop, " << p.n
                  << " tasks (rows of Z), " << work << " multiply-adds, seed " << a.seed << "\n";
        std::cout << "checksum (sum of Z) " << std::setprecision(17) << checksum << std::defaultfloat << "\n";
        if (verified) {
            const std::string how = a.verify == "sequential" ? "the sequential loop" : "Freivalds' test";
            std::cout << (*verified ? "verified: matches " + how : "NOT verified: differs from " + how) << " (max error "
                      << std::setprecision(3) << error << ", " << std::fixed << verify_seconds << " s)\n"
                      << std::defaultfloat;
        }
        pfarm::tools::print_report(std::cout, report);
    }
    if (verified && !*verified) {
        std::cerr << tool << ": verification failed (" << a.verify << "): max error " << error << " above "
                  << a.tolerance << "\n";
        return 1;
    }
    return pfarm::tools::completed_status(report);  // 3: every result is in, but a worker rank was lost
}

}  // namespace

int main(int argc, char** argv) {
    const pfarm::apps::app_session session(&argc, &argv);

    CLI::App app{"pfarm-matmul: Z = X Y farmed one row of Z per task (seeds 001, 003), in a uniform, increasing, "
                 "decreasing or random loop shape (Yang, Cheng & Shih 2007), checked"};
    app_args a;
    pfarm::farm_options farm;
    farm.protocol.replicated_input = true;  // every rank generates X and Y from the seed
    pfarm::tools::add_farm_options(app, farm);
    app.add_option("--size,-n", a.n, "n: X, Y and Z are n x n; n tasks (default 512)");
    app.add_option("--shape", a.shape,
                   "loop shape (Yang, Cheng & Shih 2007, Fig. 1): uniform (default), increasing, decreasing or random: row i of X "
                   "holds n, i+1, n-i or a random number of nonzeros, and its task costs that times n");
    app.add_option("--seed", a.seed, "seed of the random matrices (default 1)");
    app.add_option("--verify", a.verify,
                   "sequential (Yang, Cheng & Shih's serial loop on rank 0, O(n^3); default), freivalds (O(n^2) per round) or none");
    app.add_option("--rounds", a.rounds, "random vectors of Freivalds' test (default 2)");
    app.add_option("--tolerance", a.tolerance, "accepted relative error (default 1e-9)");
    app.add_flag("--json", a.json, "print the report and the result as one JSON object");
    return pfarm::apps::run_app(tool, app, argc, argv, session.rank, [&] { return run(a, farm); });
}
