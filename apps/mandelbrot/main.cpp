// pfarm-mandelbrot: the Mandelbrot set of Han & Chronopoulos, "Scalable loop self-scheduling schemes implemented on
// large-scale clusters" (section V.A, MSetLSM), farmed one column (or row) per task, checked
// against the sequential loop, optionally written as a PGM image. README.md beside this file has examples.
#include "app_support.hpp"
#include "mandelbrot_kernel.hpp"

#include "farm_cli.hpp"
#include "pfarm/calcium/plot.hpp"
#include "pfarm/farm.hpp"
#include "pfarm/memory.hpp"
#include "pfarm/mpi.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <optional>
#include <sstream>

namespace {

namespace mb = pfarm::apps::mandelbrot;
constexpr const char* tool = "pfarm-mandelbrot";

struct app_args {
    mb::params image;
    std::string by = "columns";
    std::string verify = "sequential";
    std::string output;
    std::string window;
    bool json = false;
};


double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string hex(std::uint64_t v) {
    std::ostringstream s;
    s << std::hex << std::setw(16) << std::setfill('0') << v;
    return s.str();
}

bool is_png(const std::string& path) {
    return path.size() >= 4 && (path.compare(path.size() - 4, 4, ".png") == 0 || path.compare(path.size() - 4, 4, ".PNG") == 0);
}

int finish(const app_args& a, const mb::params& p, bool columns, int tasks, mb::decomposition by,
           std::vector<std::uint32_t>& out, const pfarm::farm_report& report);

int run(const app_args& a, pfarm::farm_options farm) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    mb::params image = a.image;
    if (!a.window.empty()) mb::parse_window(a.window, image);
    const mb::params& p = image;
    mb::validate(p);
    const mb::decomposition by = mb::parse_decomposition(a.by);
    if (a.verify != "sequential" && a.verify != "none")
        throw pfarm::invalid_argument("--verify", "is '" + a.verify + "'; expected sequential or none");
    // --output must be writable before the farm runs (an existing image is left as it is until the new one is whole).
    pfarm::apps::check_output_everywhere(rank, a.output, "--output");

    // One task per column (the paper's unit) or per row: a range of indices, no input travels.
    const bool columns = by == mb::decomposition::columns;
    const int tasks = columns ? p.nx : p.ny;
    const std::size_t per_task = static_cast<std::size_t>(columns ? p.ny : p.nx);
    // Rank 0's peak after the farm: the levels (4 bytes a point), their column-major copy and the sequential image
    // it is verified against (4 each), and the file's pixels (at most 8 bytes a point, PNG); refused before any
    // allocation when no machine here holds them, and an allocation that still fails is an error on every rank.
    const std::uint64_t points = static_cast<std::uint64_t>(p.nx) * static_cast<std::uint64_t>(p.ny);  // < 2^62
    const std::string image_size = "is " + std::to_string(p.nx) + " (--height " + std::to_string(p.ny) + "): " +
                                   std::to_string(points) + " points";
    pfarm::apps::on_rank0(rank, [&] {  // rank 0's verdict on every rank: the ranks' memories may differ
        pfarm::check_fits_in_memory(points, 20, "--width", image_size + ", 20 bytes each on rank 0");
        return 0;
    });
    std::vector<std::uint32_t> out;
    pfarm::apps::allocate_everywhere(rank, "--width", image_size,
                                     [&] { out.resize(static_cast<std::size_t>(tasks) * per_task); });
    farm.resume.journal_key = "pfarm-mandelbrot " + std::to_string(p.nx) + "x" + std::to_string(p.ny) + " [" + std::to_string(p.xmin) + "," +
                         std::to_string(p.xmax) + "]x[" + std::to_string(p.ymin) + "," + std::to_string(p.ymax) + "] " +
                         std::to_string(p.maxiter) + " " + std::to_string(p.bailout) + " " + a.by;  // what determines the outputs (--journal)
    const pfarm::farm_report report = pfarm::farm(
        MPI_COMM_WORLD, pfarm::index_range{0, tasks}, std::span<std::uint32_t>(out),
        [&p, columns](pfarm::task_count i, std::span<std::uint32_t> levels) {
            if (columns) mb::column(p, static_cast<int>(i), levels);
            else mb::row(p, static_cast<int>(i), levels);
        },
        farm);
    // Rank 0 verifies, writes the image and reports; every rank shares the outcome (a failed write included).
    return pfarm::apps::on_rank0(rank, report.lost_ranks, [&] { return finish(a, p, columns, tasks, by, out, report); });
}

/// Rank 0, after the farm: the image, its verification, the file and the report; the exit code.
int finish(const app_args& a, const mb::params& p, bool columns, int tasks, mb::decomposition by,
           std::vector<std::uint32_t>& out, const pfarm::farm_report& report) {
    // The image as MSet[ix][iy] (column-major), whatever the decomposition.
    std::vector<std::uint32_t> mset;
    if (columns) {
        mset = std::move(out);
    } else {
        mset.resize(out.size());
        for (std::size_t iy = 0; iy < static_cast<std::size_t>(p.ny); ++iy)
            for (std::size_t ix = 0; ix < static_cast<std::size_t>(p.nx); ++ix)
                mset[ix * static_cast<std::size_t>(p.ny) + iy] = out[iy * static_cast<std::size_t>(p.nx) + ix];
    }
    const mb::summary s = mb::summarize(mset, p.maxiter);

    std::optional<bool> verified;
    std::size_t mismatches = 0;
    double verify_seconds = 0.0;
    if (a.verify == "sequential") {
        const auto start = std::chrono::steady_clock::now();
        const std::vector<std::uint32_t> expected = mb::sequential(p);
        verify_seconds = seconds_since(start);
        for (std::size_t i = 0; i < mset.size(); ++i) mismatches += mset[i] != expected[i] ? 1 : 0;
        verified = mismatches == 0;
    }
    if (!a.output.empty()) {  // whole or not at all (a full disk leaves no truncated image)
        pfarm::write_output_file(a.output, "--output", [&](std::ostream& file) {
            if (is_png(a.output)) {
                // 8-bit RGB through the calcium app's dependency-free PNG encoder (deflate via zlib where built).
                const std::vector<std::uint8_t> gray = mb::shades(p, mset);
                pfarm::calcium::image img;
                img.width = p.nx, img.height = p.ny;
                img.pixels.reserve(gray.size() * 3);
                for (const std::uint8_t g : gray) img.pixels.insert(img.pixels.end(), {g, g, g});
                const std::string bytes = pfarm::calcium::encode_png(img);
                file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
            } else {
                mb::write_pgm(file, p, mset);
            }
        });
    }

    if (a.json) {
        nlohmann::json j = pfarm::tools::report_json(report);
        j["app"] = "mandelbrot";
        j["width"] = p.nx;
        j["height"] = p.ny;
        j["xmin"] = p.xmin, j["xmax"] = p.xmax, j["ymin"] = p.ymin, j["ymax"] = p.ymax;
        j["max_iterations"] = p.maxiter;
        j["bailout"] = p.bailout;
        j["by"] = mb::to_string(by);
        j["checksum"] = s.iterations;  // the total iteration count over all pixels
        j["iterations"] = s.iterations;
        j["hash"] = hex(s.hash);
        j["inside"] = s.inside;
        j["verification"] = a.verify;
        j["verified"] = verified ? nlohmann::json(*verified) : nlohmann::json(nullptr);
        if (verified) j["mismatches"] = mismatches, j["verify_seconds"] = verify_seconds;
        if (!a.output.empty()) j["output"] = a.output;
        std::cout << j.dump() << "\n";
    } else {
        std::cout << tool << ": " << p.nx << " x " << p.ny << " points of [" << p.xmin << ", " << p.xmax << "] x ["
                  << p.ymin << ", " << p.ymax << "], max " << p.maxiter << " iterations, bailout " << p.bailout << "; "
                  << tasks << " tasks (" << mb::to_string(by) << ")\n";
        std::cout << "checksum " << s.iterations << " (total iterations over all pixels), hash " << hex(s.hash)
                  << ", " << s.inside << " points inside\n";
        if (verified)
            std::cout << (*verified ? "verified: identical to the sequential MSetLSM"
                                    : "NOT verified: differs from the sequential MSetLSM at " +
                                          std::to_string(mismatches) + " points")
                      << " (" << std::fixed << std::setprecision(3) << verify_seconds << " s)\n"
                      << std::defaultfloat;
        if (!a.output.empty()) std::cout << "image written to " << a.output << "\n";
        pfarm::tools::print_report(std::cout, report);
    }
    if (verified && !*verified) {
        std::cerr << tool << ": verification failed: " << mismatches << " points differ from the sequential MSetLSM\n";
        return 1;
    }
    return pfarm::tools::completed_status(report);  // 3: every result is in, but a worker rank was lost
}

}  // namespace

int main(int argc, char** argv) {
    const pfarm::apps::app_session session(&argc, &argv);

    CLI::App app{"pfarm-mandelbrot: the Mandelbrot set (Han & Chronopoulos's MSetLSM) farmed one column or row per task, "
                 "checked against the sequential loop"};
    app_args a;
    pfarm::farm_options farm;
    farm.protocol.replicated_input = true;  // a task's input is its index, which every rank holds
    pfarm::tools::add_farm_options(app, farm);
    app.add_option("--width,--nx", a.image.nx, "points along x: the columns (default 600)");
    app.add_option("--height,--ny", a.image.ny, "points along y: the rows (default 600)");
    app.add_option("--max-iterations,--max-iter", a.image.maxiter, "iterations per point at most (default 2000)");
    app.add_option("--window", a.window,
                   "the domain as xmin,xmax,ymin,ymax (default -2,2,-2,2, Han & Chronopoulos's; Yang, Cheng & Shih's: --window=-1.8,0.5,-1.2,1.2; write = before a leading minus)");
    app.add_option("--xmin", a.image.xmin, "domain left edge (default -2; --window sets all four)");
    app.add_option("--xmax", a.image.xmax, "domain right edge (default 2)");
    app.add_option("--ymin", a.image.ymin, "domain bottom edge (default -2)");
    app.add_option("--ymax", a.image.ymax, "domain top edge (default 2)");
    app.add_option("--bailout", a.image.bailout,
                   "iterate while x^2 + y^2 < BAILOUT: 4 (|z| < 2, default); 2 is Han & Chronopoulos's pseudo-code literally, a typo");
    app.add_option("--by", a.by, "one task per column (default, as Han & Chronopoulos) or per row: columns|rows");
    app.add_option("--verify", a.verify, "sequential (recompute on rank 0 and compare, default) or none");
    app.add_option("--output,-o", a.output, "write the image to FILE: PNG if FILE ends in .png, else binary PGM");
    app.add_flag("--json", a.json, "print the report and the result as one JSON object");
    return pfarm::apps::run_app(tool, app, argc, argv, session.rank, [&] { return run(a, farm); });
}
