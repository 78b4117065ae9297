// The parameter sweep of pfarm-calcium: presets (Tables 3 and 5 of Gonzalez-Velez & Cole, "Adaptive statistical
// scheduling of divisible workloads in heterogeneous systems"), how experiments map to voltages and
// seeds, and the files a sweep writes. No MPI here.
#pragma once

#include "pfarm/calcium/model.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace pfarm::calcium {

struct sweep_config {
    model_parameters model;
    protocol proto;
    double v_min_mV = -60.0;
    double v_max_mV = 60.0;
    double v_step_mV = 2.5;
    std::uint64_t experiments = 0;  ///< 0: one per voltage of the grid
    std::uint64_t seed = 2007;
    std::string output = "calcium-out";
    bool summary_only = false;      ///< no per-experiment files
    std::uint64_t trace_stride = 1; ///< write every k-th step to the data files
    std::string preset;             ///< the preset applied, if any (for the record)
};

/// The presets: "light", "medium", "heavy" (Table 5) and "single-round" (Table 3). They set --channels,
/// --steps, --peak-duration, --voltage-step and --experiments; `given(option)` says which of those the user
/// gave explicitly, which the preset leaves alone (with the user's --voltage-step and no --experiments, one
/// experiment per voltage). Throws pfarm::unknown_name for another name.
template <class Given>
void apply_preset(sweep_config& c, const std::string& name, Given&& given);
/// The preset names, for --help.
std::vector<std::string> preset_names();

/// The voltages of the grid: v_min + k step for k = 0, 1, ... while <= v_max (a 1e-9 step tolerance).
std::uint64_t voltage_count(const sweep_config& c);
/// Experiments of the sweep: `experiments`, or the number of voltages when it is 0.
std::uint64_t experiment_count(const sweep_config& c);
/// Experiment i has peak voltage v_min + (i mod voltage_count) step; its random numbers come from (seed, i).
double voltage_of(const sweep_config& c, std::uint64_t index);
/// Throws pfarm::invalid_argument naming the option on a bad sweep (model and protocol included).
void validate(const sweep_config& c);

// ---- files ---------------------------------------------------------------------------------------------------

inline constexpr const char* summary_header =
    "peak_voltage_mV,peak_current_pA,plateau_current_pA,t90_ms,charge_pC,delta_ca_uM";
/// summary.csv: the header and one row per experiment, in experiment (sweep) order.
std::string summary_csv(const std::vector<summary>& rows);

/// The I-V curve, one point per voltage of the grid (means over the repeats of that voltage).
struct iv_point {
    double voltage_mV = 0.0;
    double plateau_mean_pA = 0.0;
    double peak_mean_pA = 0.0;
    double plateau_sd_pA = 0.0;  ///< over repeats; 0 with one
    std::uint64_t repeats = 0;
    double expected_pA = 0.0;    ///< N m_inf^2 i(V, [Ca]rest)
};
std::vector<iv_point> iv_curve(const sweep_config& c, const std::vector<summary>& rows);
/// The voltage of the most negative mean plateau current (the I-V peak).
const iv_point& iv_peak(const std::vector<iv_point>& curve);

/// "exp_000123": the stem of experiment i's files (at least six digits).
std::string experiment_stem(std::uint64_t index, std::uint64_t experiments);
std::filesystem::path experiments_dir(const sweep_config& c);

/// The data file of one experiment (`data`: experiment_data's text, made where the experiment ran) and the
/// gnuplot script that draws it, into experiments_dir(c) (on rank 0). Throws pfarm::invalid_argument "--output" on
/// I/O failure.
void write_experiment_files(const sweep_config& c, std::uint64_t index, double peak_mV, std::string_view data);
std::string experiment_data(const sweep_config& c, std::uint64_t index, double peak_mV, const trace& t);
std::string experiment_gnuplot(const sweep_config& c, std::uint64_t index, double peak_mV);

/// The sweep's own files in c.output: summary.csv, iv.dat, iv.gp, iv.png, sweep.json.
void write_sweep_files(const sweep_config& c, const std::vector<summary>& rows);
std::string iv_data(const sweep_config& c, const std::vector<iv_point>& curve);
std::string iv_gnuplot(const sweep_config& c);
/// The sweep's parameters as JSON text (everything that determines summary.csv).
std::string sweep_json(const sweep_config& c);

/// Writes `text` to `path` (binary, whole), throwing pfarm::invalid_argument "--output" naming the path on failure
/// (pfarm/output_file.hpp). The text goes to `path`.tmp first, renamed to `path` once whole: a file under its final
/// name is never half-written, and a failed write (a full disk) leaves no .tmp behind.
void write_file(const std::filesystem::path& path, std::string_view text);

// ---- template definition ---------------------------------------------------------------------------------------

struct preset_values {
    const char* name;
    std::uint64_t channels, steps;
    double peak_duration_s, voltage_step_mV;
    std::uint64_t experiments;
};
const preset_values& find_preset(const std::string& name);

template <class Given>
void apply_preset(sweep_config& c, const std::string& name, Given&& given) {
    const preset_values& p = find_preset(name);
    c.preset = p.name;
    if (!given("--channels")) c.proto.channels = p.channels;
    if (!given("--steps")) c.proto.steps = p.steps;
    if (!given("--peak-duration")) c.proto.peak_duration_s = p.peak_duration_s;
    const bool own_step = given("--voltage-step");
    if (!own_step) c.v_step_mV = p.voltage_step_mV;
    // The table's experiment count belongs to the table's step: with the user's step, one per voltage.
    if (!given("--experiments")) c.experiments = own_step ? 0 : p.experiments;
}

}  // namespace pfarm::calcium
