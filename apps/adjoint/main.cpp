// pfarm-adjoint: the adjoint convolution of Han & Chronopoulos, "Scalable loop self-scheduling schemes implemented
// on large-scale clusters" (section V.A), one task per iteration I of the outer loop (costs decreasing with I),
// checked against the sequential loop. README.md beside this file has examples.
#include "app_support.hpp"
#include "adjoint_kernel.hpp"

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

namespace cv = pfarm::apps::adjoint;
constexpr const char* tool = "pfarm-adjoint";

struct app_args {
    int n = 120;
    std::uint64_t seed = 1;
    std::string verify = "sequential";
    double tolerance = 1e-9;
    bool json = false;
};


int run(const app_args& a, pfarm::farm_options farm) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (a.verify != "sequential" && a.verify != "none")
        throw pfarm::invalid_argument("--verify", "is '" + a.verify + "'; expected sequential or none");
    if (!(a.tolerance >= 0.0))
        throw pfarm::invalid_argument("--tolerance", "is " + std::to_string(a.tolerance) + "; expected >= 0");
    // Every rank generates the same arrays from the seed: only task indices travel.
    // Every rank keeps four arrays of N*N doubles (A0, B, C and the results) and rank 0 a fifth to verify them:
    // refused when no machine here holds them; an allocation that still fails is an error on every rank.
    const auto nn = static_cast<std::uint64_t>(a.n > 0 ? a.n : 0) * static_cast<std::uint64_t>(a.n > 0 ? a.n : 0);
    const std::string arrays = "is " + std::to_string(a.n) + ": " + std::to_string(nn) + " iterations, 5 doubles each";
    pfarm::apps::on_rank0(rank, [&] {  // rank 0's verdict on every rank: the ranks' memories may differ
        pfarm::check_fits_in_memory(nn, 5 * sizeof(double), "--size", arrays);
        return 0;
    });
    cv::problem p;
    std::vector<double> out;
    pfarm::apps::allocate_everywhere(rank, "--size", arrays, [&] {
        p = cv::make_problem(a.n, a.seed);
        out.resize(static_cast<std::size_t>(p.iterations()));
    });
    farm.resume.journal_key = "pfarm-adjoint " + std::to_string(a.n) + " " + std::to_string(a.seed);  // what determines the outputs (--journal)
    const pfarm::farm_report report =  // I = 1 .. N*N
        pfarm::farm(MPI_COMM_WORLD, pfarm::index_range{1, p.iterations() + 1}, std::span<double>(out),
                    [&p](pfarm::task_count i, double& ai) { ai = cv::element(p, i); }, farm);
    if (rank != 0) return 0;

    const double checksum = std::accumulate(out.begin(), out.end(), 0.0);
    std::optional<cv::comparison> check;
    double verify_seconds = 0.0;
    if (a.verify == "sequential") {
        const auto start = std::chrono::steady_clock::now();
        const std::vector<double> expected = cv::sequential(p);
        verify_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        check = cv::compare(out, expected, a.tolerance);
    }

    if (a.json) {
        nlohmann::json j = pfarm::tools::report_json(report);
        j["app"] = "adjoint";
        j["size"] = p.n;
        j["iterations"] = p.iterations();
        j["inner_iterations"] = static_cast<double>(p.iterations()) * static_cast<double>(p.iterations() + 1) / 2.0;
        j["seed"] = a.seed;
        j["checksum"] = checksum;
        j["verification"] = a.verify;
        j["verified"] = check ? nlohmann::json(check->ok()) : nlohmann::json(nullptr);
        if (check) {
            j["max_abs_error"] = check->max_abs_error;
            j["mismatches"] = check->mismatches;
            j["tolerance"] = a.tolerance;
            j["verify_seconds"] = verify_seconds;
        }
        std::cout << j.dump() << "\n";
    } else {
        std::cout << tool << ": N = " << p.n << ", " << p.iterations() << " tasks (iterations I of the outer loop), seed "
                  << a.seed << "\n";
        std::cout << "checksum (sum of A) " << std::setprecision(17) << checksum << std::defaultfloat << "\n";
        if (check)
            std::cout << (check->ok() ? "verified: matches the sequential loop"
                                      : "NOT verified: " + std::to_string(check->mismatches) +
                                            " elements differ from the sequential loop")
                      << " (max |error| " << std::setprecision(3) << check->max_abs_error << ", " << std::fixed
                      << verify_seconds << " s)\n"
                      << std::defaultfloat;
        pfarm::tools::print_report(std::cout, report);
    }
    if (check && !check->ok()) {
        std::cerr << tool << ": verification failed: " << check->mismatches
                  << " elements differ from the sequential loop (max |error| " << check->max_abs_error << ")\n";
        return 1;
    }
    return pfarm::tools::completed_status(report);  // 3: every result is in, but a worker rank was lost
}

}  // namespace

int main(int argc, char** argv) {
    const pfarm::apps::app_session session(&argc, &argv);

    CLI::App app{"pfarm-adjoint: the adjoint convolution of Han & Chronopoulos farmed one outer iteration per task "
                 "(decreasing costs), checked against the sequential loop"};
    app_args a;
    pfarm::farm_options farm;
    farm.protocol.replicated_input = true;  // every rank generates the arrays from the seed
    pfarm::tools::add_farm_options(app, farm);
    app.add_option("--size,-n", a.n, "N: the loop has N*N iterations, the I-th costs N*N - I + 1 (default 120; "
                                     "Han & Chronopoulos used 800)");
    app.add_option("--seed", a.seed, "seed of the random arrays X, A, B, C (default 1)");
    app.add_option("--verify", a.verify, "sequential (recompute on rank 0 and compare, default) or none");
    app.add_option("--tolerance", a.tolerance, "accepted |error| / (1 + |A|) against the sequential loop (default 1e-9)");
    app.add_flag("--json", a.json, "print the report and the result as one JSON object");
    return pfarm::apps::run_app(tool, app, argc, argv, session.rank, [&] { return run(a, farm); });
}
