// pfarm-calcium: the calcium-channel parameter sweep of Gonzalez-Velez & Cole, "Adaptive statistical scheduling of
// divisible workloads in heterogeneous systems", section 5, farmed over MPI by pfarm.
// Each task is one experiment (a voltage pulse applied to N stochastic L-type channels) over an index range;
// its result, streamed to rank 0 as it arrives, is the summary (six doubles) followed by the text of the
// experiment's data file; rank 0 writes every file (no shared file system needed) and keeps only the summaries,
// in sweep order. See apps/calcium/README.md.
#include "pfarm/calcium/model.hpp"
#include "pfarm/calcium/sweep.hpp"

#include "app_support.hpp"
#include "farm_cli.hpp"
#include "options.hpp"

#include "pfarm/error.hpp"
#include "pfarm/farm.hpp"
#include "pfarm/memory.hpp"
#include "pfarm/mpi.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace {

namespace ca = pfarm::calcium;

static_assert(std::is_trivially_copyable_v<ca::summary>);

/// Rank 0 makes the output directory; every rank learns whether it could, so all fail together.
void prepare_output(const ca::sweep_config& c, int rank) {
    int ok = 1;
    std::string message;
    if (rank == 0) {
        std::error_code ec;
        std::filesystem::create_directories(c.output, ec);
        if (!ec && !c.summary_only) std::filesystem::create_directories(ca::experiments_dir(c), ec);
        if (ec || !std::filesystem::is_directory(c.output)) {
            ok = 0;
            message = "cannot create directory '" + c.output + "'" + (ec ? ": " + ec.message() : "");
        }
    }
    pfarm::mpi::check(MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    if (!ok) throw pfarm::invalid_argument("--output", rank == 0 ? message : "rank 0 cannot create the directory");
}

/// The memory a sweep needs, from the arguments alone (the same on every rank, so every rank refuses together):
/// rank 0 keeps a summary, its summary.csv row and at most an I-V point per experiment; a worker keeps one
/// experiment's trace (an open count, a current and a calcium level per step) and its data file's text twice.
void check_memory(const ca::sweep_config& c) {
    const std::uint64_t experiments = ca::experiment_count(c);
    constexpr std::uint64_t csv_row = 128;  // the longest summary.csv row, with margin
    constexpr std::uint64_t per_experiment = sizeof(ca::summary) + csv_row + sizeof(ca::iv_point) + sizeof(double);
    pfarm::check_fits_in_memory(experiments, per_experiment, "--experiments",
                                "is " + std::to_string(experiments) + " experiments: rank 0 keeps " +
                                    std::to_string(per_experiment) + " bytes per experiment");
    constexpr std::uint64_t text_row = 64;  // the longest data-file line, with margin
    const std::uint64_t rows = c.summary_only ? 0 : c.proto.steps / c.trace_stride + 1;
    constexpr std::uint64_t per_step = sizeof(std::uint32_t) + 2 * sizeof(double);
    pfarm::check_fits_in_memory(c.proto.steps, per_step, "--steps",
                                "is " + std::to_string(c.proto.steps) + ": a worker keeps an experiment's trace (" +
                                    std::to_string(per_step) + " bytes a step) and its data file's text",
                                2 * text_row * rows);  // rows <= 2^32: no overflow
}

int finish(const ca::sweep_config& c, const std::vector<ca::summary>& out, const pfarm::farm_report& report, bool json);

int run(const ca::sweep_config& c, const pfarm::farm_options& options, bool json) {
    int rank = 0;
    pfarm::mpi::check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    ca::validate(c);  // the same arguments on every rank: every rank throws together
    pfarm::apps::on_rank0(rank, [&] {  // rank 0's verdict on every rank: the ranks' memories may differ
        check_memory(c);
        return 0;
    });
    prepare_output(c, rank);

    const std::uint64_t experiments = ca::experiment_count(c);
    // A task's result: its summary's bytes, then its data file's text (none with --summary-only).
    auto experiment = [&c](pfarm::task_count i) {
        const auto index = static_cast<std::uint64_t>(i);
        const double peak_mV = ca::voltage_of(c, index);
        const ca::trace t = ca::simulate(c.model, c.proto, peak_mV, {c.seed, index});
        const ca::summary s = ca::summarize(t, c.proto, c.model, peak_mV);
        std::vector<char> result(sizeof s);
        std::memcpy(result.data(), &s, sizeof s);
        if (!c.summary_only) {
            const std::string data = ca::experiment_data(c, index, peak_mV, t);
            result.insert(result.end(), data.begin(), data.end());
        }
        return result;
    };
    // Rank 0's summaries, allocated before the farm; a failed allocation is an error on every rank.
    std::vector<ca::summary> out;
    pfarm::apps::allocate_everywhere(rank, "--experiments",
                                     "is " + std::to_string(experiments) + ": rank 0's summary per experiment",
                                     [&] { out.resize(rank == 0 ? experiments : 0); });
    auto arrived = [&c, &out](pfarm::task_count i, std::span<const char> result) {
        const auto index = static_cast<std::uint64_t>(i);
        if (result.size() < sizeof(ca::summary))
            throw pfarm::internal_error("experiment " + std::to_string(index) + " returned " + std::to_string(result.size()) + " bytes");
        std::memcpy(&out[index], result.data(), sizeof(ca::summary));
        if (out[index].peak_voltage_mV != ca::voltage_of(c, index))  // every row is the experiment it should be
            throw pfarm::internal_error("summary row " + std::to_string(index) + " does not belong to experiment " +
                                        std::to_string(index));
        if (!c.summary_only)
            ca::write_experiment_files(c, index, out[index].peak_voltage_mV,
                                       std::string_view(result.data() + sizeof(ca::summary), result.size() - sizeof(ca::summary)));
    };
    pfarm::farm_options o = options;
    o.resume.journal_key = "pfarm-calcium " + ca::sweep_json(c);  // every parameter that determines the files
    const pfarm::farm_report report = pfarm::farm_stream(
        MPI_COMM_WORLD, pfarm::index_range{0, static_cast<pfarm::task_count>(experiments)}, experiment, arrived, o);
    // Rank 0 writes the sweep's files and reports; every rank shares the outcome (a failed write included).
    return pfarm::apps::on_rank0(rank, report.lost_ranks, [&] { return finish(c, out, report, json); });
}

/// Rank 0, after the farm: the sweep's files and the report; the exit code.
int finish(const ca::sweep_config& c, const std::vector<ca::summary>& out, const pfarm::farm_report& report, bool json) {
    const std::uint64_t experiments = ca::experiment_count(c);
    ca::write_sweep_files(c, out);
    const std::vector<ca::iv_point> curve = ca::iv_curve(c, out);
    const ca::iv_point& peak = ca::iv_peak(curve);
    if (json) {
        nlohmann::json j = pfarm::tools::report_json(report);
        j["output"] = c.output;
        j["experiments"] = experiments;
        j["voltages"] = ca::voltage_count(c);
        j["iv_peak_mV"] = peak.voltage_mV;
        j["iv_peak_pA"] = peak.plateau_mean_pA;
        std::cout << j.dump(2) << "\n";
    } else {
        pfarm::tools::print_report(std::cout, report);
        std::cout << "calcium sweep: " << experiments << " experiments over " << ca::voltage_count(c)
                  << " voltages, " << c.proto.channels << " channels x " << c.proto.steps << " steps ("
                  << ca::to_string(c.proto.update) << ")\n";
        std::cout << std::setprecision(6) << "I-V peak: " << peak.plateau_mean_pA << " pA (plateau) at "
                  << peak.voltage_mV << " mV\n";
        std::cout << "output: " << c.output << " (summary.csv, iv.dat, iv.gp, iv.png, sweep.json"
                  << (c.summary_only ? "" : "; experiments/exp_*.dat and .gp") << ")\n";
    }
    return pfarm::tools::completed_status(report);  // 3: every result is in, but a worker rank was lost
}

}  // namespace

int main(int argc, char** argv) {
    const pfarm::apps::app_session session(&argc, &argv);  // MPI, and rank 0 alone speaks (one message, not one a rank)

    CLI::App app{
        "pfarm-calcium: a parameter sweep of stochastic L-type calcium channels on a spherical cell (Gonzalez-Velez "
        "& Cole 2009, section 5), farmed over MPI. Experiment i pulses from the holding voltage to v-min + (i mod V) x "
        "voltage-step; rows of OUTPUT/summary.csv are in experiment order. Model: a literature reconstruction "
        "(apps/calcium/README.md)."};
    app.set_help_flag("-h,--help", "print this help and exit");
    ca::sweep_config c;
    pfarm::farm_options options;
    bool json = false;
    std::string preset, update = "per-channel";
    double dt_us = c.proto.dt_s * 1e6;

    app.add_option("--preset", preset,
                   "light | medium | heavy (Table 5) | single-round (Table 3); explicit options override it");
    app.add_option("--channels", c.proto.channels, "channels N per experiment")->capture_default_str();
    app.add_option("--steps", c.proto.steps, "time steps T per experiment (of --dt, 10 us)")->capture_default_str();
    app.add_option("--peak-duration", c.proto.peak_duration_s, "pulse duration, s (within steps x dt)")
        ->capture_default_str();
    app.add_option("--pulse-start", c.proto.pulse_start_s, "pulse start, s (default: the pulse is centred)");
    app.add_option("--voltage-step", c.v_step_mV, "step of the peak-voltage grid, mV")->capture_default_str();
    app.add_option("--v-min", c.v_min_mV, "lowest peak voltage, mV")->capture_default_str();
    app.add_option("--v-max", c.v_max_mV, "highest peak voltage, mV")->capture_default_str();
    app.add_option("--experiments", c.experiments,
                   "experiments S (default: one per grid voltage; more repeat the grid with new random numbers)");
    app.add_option("--holding-voltage", c.proto.holding_mV, "holding voltage, mV")->capture_default_str();
    app.add_option("--dt", dt_us, "time step, us")->capture_default_str();
    app.add_option("--seed", c.seed, "global seed (experiment i draws from Philox under (seed, i))")
        ->capture_default_str();
    app.add_option("--update", update, "per-channel (O(N) per step, the paper's cost) | population (binomial)")
        ->capture_default_str();
    app.add_option("--temperature", c.model.temperature_C, "temperature, C (rates x 3^((T-21)/10); GHK)")
        ->capture_default_str();
    app.add_option("--permeability", c.model.permeability_cm3_s, "single-channel GHK permeability, cm^3/s")
        ->capture_default_str();
    app.add_option("--ca-out", c.model.ca_out_mM, "[Ca]o, mM")->capture_default_str();
    app.add_option("--ca-rest", c.model.ca_rest_nM, "[Ca]i at rest, nM")->capture_default_str();
    app.add_option("--radius", c.model.radius_um, "cell radius, um")->capture_default_str();
    app.add_option("--kappa", c.model.kappa, "endogenous buffer capacity")->capture_default_str();
    app.add_option("--tau", c.model.tau_ms, "[Ca]i clearance time constant, ms (inf: none)")->capture_default_str();
    app.add_option("--output", c.output, "output directory, written by rank 0 only (no shared file system needed)")
        ->capture_default_str();
    app.add_flag("--summary-only", c.summary_only, "write only the sweep's files, no per-experiment files");
    app.add_option("--trace-stride", c.trace_stride, "write every k-th step to the data files")
        ->capture_default_str();
    app.add_flag("--json", json, "print the farm report as JSON (with the output directory)");
    pfarm::tools::add_farm_options(app, options);
    app.footer("Presets (Gonzalez-Velez & Cole 2009): light, medium, heavy (Table 5), single-round (Table 3).\n\n" +
               pfarm::tools::technique_list());

    return pfarm::tools::run_tool("pfarm-calcium", app, argc, argv, [&] {
        c.proto.dt_s = dt_us * 1e-6;
        c.proto.update = ca::parse_update_method(update);
        if (!preset.empty())
            ca::apply_preset(c, preset, [&app](const char* option) { return app.count(option) > 0; });
        return run(c, options, json);
    });
}
