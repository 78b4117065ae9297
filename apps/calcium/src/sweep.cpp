// pfarm-calcium's parameter sweep: presets, experiment-to-voltage mapping, and the files a sweep writes (sweep.hpp).
#include "pfarm/calcium/sweep.hpp"

#include "pfarm/output_file.hpp"

#include "pfarm/calcium/plot.hpp"
#include "pfarm/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace pfarm::calcium {

namespace {

// Locale-independent number formatting (std::to_chars): the files are byte-identical wherever they are written.
void append_fixed(std::string& out, double v, int precision) {
    char buffer[64];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::fixed, precision);
    out.append(buffer, r.ptr);
}
void append_general(std::string& out, double v, int precision = 9) {
    char buffer[64];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::general, precision);
    out.append(buffer, r.ptr);
}
void append_uint(std::string& out, std::uint64_t v) {
    char buffer[32];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, v);
    out.append(buffer, r.ptr);
}
std::string general(double v, int precision = 9) {
    std::string s;
    append_general(s, v, precision);
    return s;
}

constexpr preset_values presets[] = {
    // Table 5: 10^4 channels; 10^3, 10^4, 10^5 steps; pulses 6, 60, 600 ms; steps of 0.0125, 0.03125, 0.125 mV.
    {"light", 10000, 1000, 0.006, 0.0125, 9600},
    {"medium", 10000, 10000, 0.06, 0.03125, 3840},
    {"heavy", 10000, 100000, 0.6, 0.125, 960},
    // Table 3: 10^4 channels, 10^4 steps, a 0.06 s pulse, 0.125 mV steps, 960 experiments.
    {"single-round", 10000, 10000, 0.06, 0.125, 960},
};

}  // namespace

std::vector<std::string> preset_names() {
    std::vector<std::string> names;
    for (const auto& p : presets) names.emplace_back(p.name);
    return names;
}

const preset_values& find_preset(const std::string& name) {
    for (const auto& p : presets)
        if (name == p.name) return p;
    throw unknown_name("--preset", "unknown name '" + name + "'; expected one of: light, medium, heavy, single-round");
}

std::uint64_t voltage_count(const sweep_config& c) {
    return static_cast<std::uint64_t>(std::floor((c.v_max_mV - c.v_min_mV) / c.v_step_mV + 1e-9)) + 1;
}

std::uint64_t experiment_count(const sweep_config& c) { return c.experiments ? c.experiments : voltage_count(c); }

double voltage_of(const sweep_config& c, std::uint64_t index) {
    return c.v_min_mV + static_cast<double>(index % voltage_count(c)) * c.v_step_mV;
}

void validate(const sweep_config& c) {
    validate(c.model);
    validate(c.proto);
    auto bad = [](const char* option, double v, const std::string& expected) {
        throw invalid_argument(option, "is " + general(v, 12) + "; expected " + expected);
    };
    if (!std::isfinite(c.v_min_mV) || std::fabs(c.v_min_mV) > 500.0) bad("--v-min", c.v_min_mV, "a voltage in [-500, 500] mV");
    if (!std::isfinite(c.v_max_mV) || std::fabs(c.v_max_mV) > 500.0) bad("--v-max", c.v_max_mV, "a voltage in [-500, 500] mV");
    if (c.v_max_mV < c.v_min_mV) bad("--v-max", c.v_max_mV, ">= --v-min (" + general(c.v_min_mV) + ")");
    if (!std::isfinite(c.v_step_mV) || c.v_step_mV <= 0.0) bad("--voltage-step", c.v_step_mV, "a step > 0 (mV)");
    if ((c.v_max_mV - c.v_min_mV) / c.v_step_mV > 1e9)
        bad("--voltage-step", c.v_step_mV, "at most 1e9 voltages between --v-min and --v-max");
    if (experiment_count(c) > 0xFFFFFFFFull)
        bad("--experiments", static_cast<double>(experiment_count(c)), "at most 4294967295 experiments");
    if (c.trace_stride < 1) bad("--trace-stride", 0.0, ">= 1");
    if (c.output.empty()) throw invalid_argument("--output", "is empty; expected a directory");
}

// ---- files ---------------------------------------------------------------------------------------------------

std::string summary_csv(const std::vector<summary>& rows) {
    std::string out = summary_header;
    out += '\n';
    for (const summary& s : rows) {
        append_fixed(out, s.peak_voltage_mV, 6);
        for (const double v : {s.peak_current_pA, s.plateau_current_pA, s.t90_ms, s.charge_pC, s.delta_ca_uM}) {
            out += ',';
            append_general(out, v);
        }
        out += '\n';
    }
    return out;
}

std::vector<iv_point> iv_curve(const sweep_config& c, const std::vector<summary>& rows) {
    const std::uint64_t nv = std::min<std::uint64_t>(voltage_count(c), rows.size());
    std::vector<iv_point> curve(nv);
    std::vector<double> sum_sq(nv, 0.0);
    for (std::uint64_t k = 0; k < nv; ++k) {
        curve[k].voltage_mV = voltage_of(c, k);
        curve[k].expected_pA = expected_current_pA(curve[k].voltage_mV, c.proto.channels, c.model);
    }
    for (std::uint64_t i = 0; i < rows.size(); ++i) {
        iv_point& p = curve[i % voltage_count(c)];
        p.plateau_mean_pA += rows[i].plateau_current_pA;
        p.peak_mean_pA += rows[i].peak_current_pA;
        sum_sq[i % voltage_count(c)] += rows[i].plateau_current_pA * rows[i].plateau_current_pA;
        ++p.repeats;
    }
    for (std::uint64_t k = 0; k < nv; ++k) {
        iv_point& p = curve[k];
        const double n = static_cast<double>(p.repeats);
        p.plateau_mean_pA /= n;
        p.peak_mean_pA /= n;
        p.plateau_sd_pA = p.repeats > 1 ? std::sqrt(std::max(0.0, (sum_sq[k] - n * p.plateau_mean_pA * p.plateau_mean_pA) / (n - 1.0))) : 0.0;
    }
    return curve;
}

const iv_point& iv_peak(const std::vector<iv_point>& curve) {
    if (curve.empty()) throw internal_error("iv_peak of an empty curve");
    return *std::min_element(curve.begin(), curve.end(), [](const iv_point& a, const iv_point& b) {
        return a.plateau_mean_pA < b.plateau_mean_pA;
    });
}

std::string experiment_stem(std::uint64_t index, std::uint64_t experiments) {
    std::string digits;
    append_uint(digits, index);
    std::string width;
    append_uint(width, experiments > 0 ? experiments - 1 : 0);
    const std::size_t w = std::max<std::size_t>(6, width.size());
    return "exp_" + std::string(w > digits.size() ? w - digits.size() : 0, '0') + digits;
}

std::filesystem::path experiments_dir(const sweep_config& c) { return std::filesystem::path(c.output) / "experiments"; }

std::string experiment_data(const sweep_config& c, std::uint64_t index, double peak_mV, const trace& t) {
    const pulse_window w = window_of(c.proto);
    std::string out = "# pfarm-calcium experiment " + std::to_string(index) + ": peak voltage ";
    append_fixed(out, peak_mV, 6);
    out += " mV, holding " + general(c.proto.holding_mV) + " mV, " + std::to_string(c.proto.channels) + " channels, " +
           std::to_string(c.proto.steps) + " steps of " + general(c.proto.dt_s * 1e6) + " us, pulse steps [" +
           std::to_string(w.on) + ", " + std::to_string(w.on + w.length) + "), seed " + std::to_string(c.seed) +
           ", update " + to_string(c.proto.update) + "\n";
    out += "# t_ms V_mV open I_pA Ca_uM\n";
    const double dt_ms = c.proto.dt_s * 1e3;
    out.reserve(out.size() + t.open.size() / c.trace_stride * 48);
    for (std::uint64_t n = 0; n < t.open.size(); n += c.trace_stride) {
        append_general(out, static_cast<double>(n) * dt_ms, 10);
        out += ' ';
        append_general(out, voltage_at(w, c.proto, peak_mV, n), 10);
        out += ' ';
        append_uint(out, t.open[n]);
        out += ' ';
        append_general(out, t.current_pA[n], 9);
        out += ' ';
        append_general(out, t.ca_uM[n], 9);
        out += '\n';
    }
    return out;
}

std::string experiment_gnuplot(const sweep_config& c, std::uint64_t index, double peak_mV) {
    const std::string stem = experiment_stem(index, experiment_count(c));
    std::string v;
    append_fixed(v, peak_mV, 4);
    return "# gnuplot script of pfarm-calcium experiment " + std::to_string(index) +
           ": run `gnuplot " + stem + ".gp` in this directory to draw " + stem + ".png\n"
           "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 900,900 } "
           "else { set terminal png size 900,900 }\n"
           "set output '" + stem + ".png'\n"
           "set multiplot layout 3,1 title 'experiment " + std::to_string(index) + ": pulse to " + v + " mV, " +
           std::to_string(c.proto.channels) + " channels'\n"
           "set grid\nunset key\nset xlabel 't (ms)'\n"
           "set ylabel '[Ca]_i (uM)'\nplot '" + stem + ".dat' using 1:5 with lines lw 2\n"
           "set ylabel 'I_{Ca} (pA)'\nplot '" + stem + ".dat' using 1:4 with lines\n"
           "set ylabel 'open channels'\nplot '" + stem + ".dat' using 1:3 with lines\n"
           "unset multiplot\n";
}

void write_file(const std::filesystem::path& path, std::string_view text) {
    pfarm::write_output_file(path.string(), "--output", text);  // through PATH.tmp, renamed once whole
}

void write_experiment_files(const sweep_config& c, std::uint64_t index, double peak_mV, std::string_view data) {
    const auto dir = experiments_dir(c);
    const std::string stem = experiment_stem(index, experiment_count(c));
    write_file(dir / (stem + ".dat"), data);
    write_file(dir / (stem + ".gp"), experiment_gnuplot(c, index, peak_mV));
}

std::string iv_data(const sweep_config& c, const std::vector<iv_point>& curve) {
    std::string out = "# pfarm-calcium I-V curve: " + std::to_string(c.proto.channels) +
                      " channels, means over the repeats of each voltage; expected = N m_inf^2 i(V, [Ca]rest)\n"
                      "# V_mV plateau_mean_pA peak_mean_pA plateau_sd_pA repeats expected_pA\n";
    for (const iv_point& p : curve) {
        append_fixed(out, p.voltage_mV, 6);
        for (const double v : {p.plateau_mean_pA, p.peak_mean_pA, p.plateau_sd_pA}) {
            out += ' ';
            append_general(out, v);
        }
        out += ' ';
        append_uint(out, p.repeats);
        out += ' ';
        append_general(out, p.expected_pA);
        out += '\n';
    }
    return out;
}

std::string iv_gnuplot(const sweep_config& c) {
    return "# gnuplot script of a pfarm-calcium I-V curve: `gnuplot iv.gp` in this directory redraws iv.png\n"
           "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 800,600 } "
           "else { set terminal png size 800,600 }\n"
           "set output 'iv.png'\n"
           "set title 'I-V curve, " + std::to_string(c.proto.channels) + " channels'\n"
           "set xlabel 'peak voltage (mV)'\nset ylabel 'current (pA)'\nset grid\nset key bottom right\n"
           "plot 'iv.dat' using 1:2 with linespoints pt 7 ps 0.6 title 'plateau (mean)', \\\n"
           "     'iv.dat' using 1:3 with points pt 5 ps 0.5 title 'peak (mean)', \\\n"
           "     'iv.dat' using 1:6 with lines dt 2 lc rgb 'gray40' title 'N m_{inf}^2 i(V)'\n";
}

std::string sweep_json(const sweep_config& c) {
    nlohmann::ordered_json j;
    j["app"] = "pfarm-calcium";
    j["model"] = "reconstruction: HH m^2 L-type gating (Huguenard & McCormick 1992), GHK unitary current "
                 "(Guia et al. 2001), well-mixed buffered sphere (see apps/calcium/README.md)";
    if (!c.preset.empty()) j["preset"] = c.preset;
    j["channels"] = c.proto.channels;
    j["steps"] = c.proto.steps;
    j["dt_us"] = c.proto.dt_s * 1e6;
    j["holding_mV"] = c.proto.holding_mV;
    j["peak_duration_s"] = c.proto.peak_duration_s;
    const pulse_window w = window_of(c.proto);
    j["pulse_steps"] = {w.on, w.on + w.length};
    j["update"] = to_string(c.proto.update);
    j["v_min_mV"] = c.v_min_mV;
    j["v_max_mV"] = c.v_max_mV;
    j["voltage_step_mV"] = c.v_step_mV;
    j["voltages"] = voltage_count(c);
    j["experiments"] = experiment_count(c);
    j["seed"] = c.seed;
    j["temperature_C"] = c.model.temperature_C;
    j["permeability_cm3_s"] = c.model.permeability_cm3_s;
    j["ca_out_mM"] = c.model.ca_out_mM;
    j["ca_rest_nM"] = c.model.ca_rest_nM;
    j["radius_um"] = c.model.radius_um;
    j["kappa"] = c.model.kappa;
    if (std::isfinite(c.model.tau_ms)) j["tau_ms"] = c.model.tau_ms;
    else j["tau_ms"] = "inf";
    j["unitary_current_0mV_pA"] = unitary_current_pA(0.0, c.model.ca_rest_nM * 1e-6, c.model);
    j["summary_only"] = c.summary_only;
    j["trace_stride"] = c.trace_stride;
    return j.dump(2) + "\n";
}

void write_sweep_files(const sweep_config& c, const std::vector<summary>& rows) {
    const std::filesystem::path dir(c.output);
    write_file(dir / "summary.csv", summary_csv(rows));
    const std::vector<iv_point> curve = iv_curve(c, rows);
    write_file(dir / "iv.dat", iv_data(c, curve));
    write_file(dir / "iv.gp", iv_gnuplot(c));
    write_file(dir / "sweep.json", sweep_json(c));
    plot_spec spec;
    spec.title = "I-V curve, " + std::to_string(c.proto.channels) + " channels";
    spec.x_label = "peak voltage (mV)";
    spec.y_label = "current (pA)";
    plot_series plateau{{}, {}, {0, 90, 200}, true, true, "plateau (mean)"};
    plot_series peak{{}, {}, {210, 60, 30}, false, true, "peak (mean)"};
    plot_series expected{{}, {}, {130, 130, 130}, true, false, "N m_inf^2 i(V)"};
    for (const iv_point& p : curve) {
        for (auto* s : {&plateau, &peak, &expected}) s->x.push_back(p.voltage_mV);
        plateau.y.push_back(p.plateau_mean_pA);
        peak.y.push_back(p.peak_mean_pA);
        expected.y.push_back(p.expected_pA);
    }
    spec.series = {expected, plateau, peak};
    write_png_plot(dir / "iv.png", spec);
}

}  // namespace pfarm::calcium
