// The calcium-channel model of pfarm-calcium: N voltage-gated L-type calcium channels on a spherical cell,
// a voltage pulse from a holding potential, the summed unitary currents and the calcium they bring in.
//
// A RECONSTRUCTION from the literature (Gonzalez-Velez & Cole, "Adaptive statistical scheduling of divisible
// workloads in heterogeneous systems", section 5, names the model; the authors' rate constants are not published
// in what we can read): see apps/calcium/README.md for every source and decision.
//   gating     C0 <-> C1 <-> O, C0->C1 2a, C1->C0 b, C1->O a, O->C1 2b (two independent HH m gates, m^2, no
//              inactivation); a = 1.6 / (1 + exp(-0.072 (V + 5))), b = 0.02 (V - 1.31) / (exp((V - 1.31)/5.36) - 1)
//              per ms, both times phi = 3^((T - 21)/10) (Huguenard & McCormick 1992, after Kay & Wong 1987);
//   unitary    Goldman-Hodgkin-Katz flux, z = 2, P = 3.1e-13 cm^3/s (Guia et al. 2001);
//   calcium    a well-mixed sphere: d[Ca]i/dt = -I / (2 F Vcell (1 + kappa)) - ([Ca]i - [Ca]rest) / tau.
// No MPI here: the unit tests drive it directly.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace pfarm::calcium {

inline constexpr double faraday = 96485.33212;        ///< C/mol
inline constexpr double gas_constant = 8.314462618;   ///< J/(mol K)
inline constexpr double zero_celsius = 273.15;        ///< K
inline constexpr int valence = 2;                     ///< z of Ca2+

/// The physical parameters (defaults: README.md, "Model").
struct model_parameters {
    double temperature_C = 36.0;         ///< T of phi = 3^((T - 21)/10) and of the GHK equation
    double permeability_cm3_s = 3.1e-13; ///< single-channel GHK permeability P
    double ca_out_mM = 2.0;              ///< [Ca]o
    double ca_rest_nM = 50.0;            ///< [Ca]i at rest (and at t = 0)
    double radius_um = 10.0;             ///< radius of the spherical cell
    double kappa = 50.0;                 ///< endogenous buffer capacity (40-75 in the literature)
    double tau_ms = 100.0;               ///< first-order clearance time constant of [Ca]i
};

/// How the channels advance over one time step.
enum class update_method {
    per_channel,  ///< every channel draws one uniform per step: O(channels x steps), the paper's cost model
    population,   ///< binomial draws over the counts in C0, C1, O: O(steps)
};
std::string to_string(update_method m);
update_method parse_update_method(const std::string& text);  ///< "per-channel" | "population"; throws

/// One experiment's stimulus and resolution (the voltage of the pulse is per experiment).
struct protocol {
    std::uint64_t channels = 10000;
    std::uint64_t steps = 10000;
    double dt_s = 1e-5;             ///< 10 microseconds
    double holding_mV = -80.0;
    double peak_duration_s = 0.06;
    /// When the pulse starts; NaN: centred in the simulated time, (steps dt - peak duration) / 2.
    double pulse_start_s = std::numeric_limits<double>::quiet_NaN();
    update_method update = update_method::per_channel;
};

/// Throws pfarm::invalid_argument naming the option ("--channels", "--kappa", ...) on a value out of range.
void validate(const model_parameters& model);
void validate(const protocol& p);

/// The steps of the pulse: V = peak for step n in [on, on + length), holding otherwise.
struct pulse_window {
    std::uint64_t on = 0;
    std::uint64_t length = 0;
};
pulse_window window_of(const protocol& p);

// ---- gating ----------------------------------------------------------------------------------------------

/// phi = 3^((T - 21)/10).
double temperature_factor(double temperature_C);
/// The opening rate a(V) of one gate at 21 C, per ms.
double alpha_21(double V_mV);
/// The closing rate b(V) of one gate at 21 C, per ms (its removable singularity at 1.31 mV handled).
double beta_21(double V_mV);

struct gating_rates {
    double alpha = 0.0;  ///< per ms, temperature factor included
    double beta = 0.0;
};
gating_rates rates_at(double V_mV, double temperature_C);
/// m_inf = a / (a + b) (independent of temperature); the steady-state open probability is m_inf^2.
double m_inf(double V_mV);
double open_probability(double V_mV);

using matrix3 = std::array<std::array<double, 3>, 3>;
/// The exact transition probabilities over dt (row: from C0, C1, O; column: to C0, C1, O). Each gate flips
/// closed->open with m_inf e and open->closed with (1 - m_inf) e, e = 1 - exp(-(a + b) dt); the state is the
/// number of open gates of the two.
matrix3 transition_matrix(const gating_rates& r, double dt_ms);
/// The stationary distribution over (C0, C1, O): Binomial(2, m_inf).
std::array<double, 3> stationary(double m);

// ---- currents and calcium ----------------------------------------------------------------------------------

/// The single-channel current in pA (negative: inward) from the GHK flux equation
/// i = P z^2 F^2 V/(RT) ([Ca]i - [Ca]o exp(-zFV/RT)) / (1 - exp(-zFV/RT)), with its V -> 0 limit P z F ([Ca]i - [Ca]o).
double unitary_current_pA(double V_mV, double ca_in_mM, const model_parameters& model);
/// The same, as i = slope * [Ca]i (mM) + offset: what the time loop evaluates.
struct ghk_linear {
    double slope_pA_per_mM = 0.0;
    double offset_pA = 0.0;
};
ghk_linear unitary_current_linear(double V_mV, const model_parameters& model);
/// Volume of the spherical cell, m^3.
double cell_volume_m3(const model_parameters& model);
/// The expected plateau current N m_inf^2 i(V, [Ca]rest) in pA: the deterministic I-V curve.
double expected_current_pA(double V_mV, std::uint64_t channels, const model_parameters& model);

// ---- an experiment -------------------------------------------------------------------------------------------

/// Where an experiment's random numbers come from: the global seed and the experiment's index. Every draw is
/// Philox4x32-10 of a counter naming (what, step, index), under the key = seed (README.md, "Random numbers").
struct experiment_key {
    std::uint64_t seed = 0;
    std::uint64_t index = 0;
};

/// The time course, one row per step n (t = n dt): the command voltage over [t, t + dt), the open channels,
/// the current and [Ca]i at t (the state before the step's update).
struct trace {
    std::vector<std::uint32_t> open;
    std::vector<double> current_pA;
    std::vector<double> ca_uM;
};

trace simulate(const model_parameters& model, const protocol& p, double peak_mV, const experiment_key& key);

/// The numbers summary.csv has per experiment (README.md, "Summary numbers").
struct summary {
    double peak_voltage_mV = 0.0;
    double peak_current_pA = 0.0;     ///< the most negative current during the pulse
    double plateau_current_pA = 0.0;  ///< mean current over the last half of the pulse
    double t90_ms = 0.0;              ///< pulse onset to the first current at or below 90% of the plateau (NaN if plateau >= 0)
    double charge_pC = 0.0;           ///< integral of the current over the whole trace
    double delta_ca_uM = 0.0;         ///< the highest [Ca]i of the trace minus [Ca]rest
};
summary summarize(const trace& t, const protocol& p, const model_parameters& model, double peak_mV);

/// The voltage of step n.
inline double voltage_at(const pulse_window& w, const protocol& p, double peak_mV, std::uint64_t n) {
    return (n >= w.on && n - w.on < w.length) ? peak_mV : p.holding_mV;
}

}  // namespace pfarm::calcium
