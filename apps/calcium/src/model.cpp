// The calcium-channel model of pfarm-calcium: its parameter checks and one experiment's simulation (model.hpp).
#include "pfarm/calcium/model.hpp"

#include "pfarm/calcium/binomial.hpp"
#include "pfarm/calcium/philox.hpp"
#include "pfarm/error.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

namespace pfarm::calcium {

namespace {

std::string show(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

void require(bool ok, const char* option, double value, const std::string& expected) {
    if (!ok) throw invalid_argument(option, "is " + show(value) + "; expected " + expected);
}

/// x / (1 - exp(-x)), 1 at x = 0.
double ghk_factor(double x) {
    if (x == 0.0) return 1.0;
    return x / -std::expm1(-x);
}

/// A probability as a 32-bit threshold: a uniform word u falls below it with probability round(p 2^32) / 2^32.
std::uint32_t threshold32(double p) {
    const double scaled = std::floor(std::clamp(p, 0.0, 1.0) * 4294967296.0 + 0.5);
    return scaled >= 4294967295.0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(scaled);
}

// The counter's last word names what a draw is for (README.md, "Random numbers").
constexpr std::uint32_t stream_gating = 0;          // per-channel: {block, step, index, 0}
constexpr std::uint32_t stream_initial = 1;         // per-channel: {block, 0, index, 1}
constexpr std::uint32_t stream_population_init = 2; // population: uniform_stream(step 0, index, 2)
constexpr std::uint32_t stream_population_step = 3; // population: uniform_stream(step, index, 3 + draw), 6 draws

/// Cumulative thresholds of the rows of a transition matrix: new state = (u >= lo[s]) + (u >= hi[s]).
struct row_thresholds {
    std::array<std::uint32_t, 3> lo{}, hi{};
};
row_thresholds thresholds_of(const matrix3& m) {
    row_thresholds t;
    for (int s = 0; s < 3; ++s) {
        t.lo[s] = threshold32(m[s][0]);
        t.hi[s] = threshold32(m[s][0] + m[s][1]);
    }
    return t;
}

/// Philox4x32-10 of the counters {first + b, c1, c2, c3}, b = 0..count-1 (count <= batch), as four word arrays.
/// Structure of arrays so that the compiler vectorises the rounds across blocks; integer arithmetic only, so
/// every instruction set gives the same words (step_channels' target_clones picks AVX2 where the CPU has it).
constexpr std::size_t batch = 64;
struct philox_words {
    alignas(64) std::uint32_t w[4][batch];
};
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
inline void philox_batch(philox_words& out, std::uint32_t first, std::uint32_t c1, std::uint32_t c2, std::uint32_t c3,
                  philox_key key) {
    std::uint32_t* x0 = out.w[0];
    std::uint32_t* x1 = out.w[1];
    std::uint32_t* x2 = out.w[2];
    std::uint32_t* x3 = out.w[3];
    for (std::size_t b = 0; b < batch; ++b) {
        x0[b] = first + static_cast<std::uint32_t>(b);
        x1[b] = c1;
        x2[b] = c2;
        x3[b] = c3;
    }
    std::uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += detail::philox_w0;
            k1 += detail::philox_w1;
        }
        for (std::size_t b = 0; b < batch; ++b) {
            const std::uint64_t p0 = static_cast<std::uint64_t>(detail::philox_m0) * x0[b];
            const std::uint64_t p1 = static_cast<std::uint64_t>(detail::philox_m1) * x2[b];
            const std::uint32_t y0 = static_cast<std::uint32_t>(p1 >> 32) ^ x1[b] ^ k0;
            const std::uint32_t y2 = static_cast<std::uint32_t>(p0 >> 32) ^ x3[b] ^ k1;
            x0[b] = y0;
            x1[b] = static_cast<std::uint32_t>(p1);
            x2[b] = y2;
            x3[b] = static_cast<std::uint32_t>(p0);
        }
    }
}

/// Advances every channel one step; returns the open count after it. Channel c uses word c % 4 of the
/// Philox block {c / 4, step, index, stream}.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("avx2", "default")))
#endif
std::uint64_t step_channels(std::vector<std::uint8_t>& state, const row_thresholds& t, philox_key key,
                            std::uint32_t step, std::uint32_t index, std::uint32_t stream) {
    const std::size_t n = state.size();
    std::uint8_t* s = state.data();
    std::uint64_t open = 0;
    const std::uint32_t lo0 = t.lo[0], lo1 = t.lo[1], lo2 = t.lo[2], hi0 = t.hi[0], hi1 = t.hi[1], hi2 = t.hi[2];
    philox_words words;
    alignas(64) std::uint32_t uniforms[4 * batch];
    for (std::size_t first = 0; first < n; first += 4 * batch) {
        philox_batch(words, static_cast<std::uint32_t>(first / 4), step, index, stream, key);
        for (std::size_t b = 0; b < batch; ++b)
            for (std::size_t k = 0; k < 4; ++k) uniforms[4 * b + k] = words.w[k][b];
        const std::size_t count = std::min(4 * batch, n - first);
        std::uint8_t* cs = s + first;
        std::uint32_t opened = 0;
        for (std::size_t c = 0; c < count; ++c) {
            const std::uint32_t u = uniforms[c];
            const std::uint8_t old = cs[c];
            const std::uint32_t lo = old == 0 ? lo0 : (old == 1 ? lo1 : lo2);
            const std::uint32_t hi = old == 0 ? hi0 : (old == 1 ? hi1 : hi2);
            const auto next = static_cast<std::uint8_t>((u >= lo) + (u >= hi));
            cs[c] = next;
            opened += next >> 1;
        }
        open += opened;
    }
    return open;
}

/// Conditional probabilities of the population update: from state s, first "far" then "near" among the rest.
struct population_step {
    double p02, p01_rest;  // from C0: to O; then to C1 among those not to O
    double p10, p12_rest;  // from C1: to C0; then to O among those not to C0
    double p21, p20_rest;  // from O: to C1; then to C0 among those not to C1
};
double conditional(double p, double taken) { return taken >= 1.0 ? 0.0 : std::clamp(p / (1.0 - taken), 0.0, 1.0); }
population_step population_of(const matrix3& m) {
    return {m[0][2], conditional(m[0][1], m[0][2]), m[1][0], conditional(m[1][2], m[1][0]),
            m[2][1], conditional(m[2][0], m[2][1])};
}

}  // namespace

std::string to_string(update_method m) { return m == update_method::per_channel ? "per-channel" : "population"; }

update_method parse_update_method(const std::string& text) {
    if (text == "per-channel") return update_method::per_channel;
    if (text == "population") return update_method::population;
    throw invalid_argument("--update", "is '" + text + "'; expected per-channel or population");
}

void validate(const model_parameters& m) {
    require(std::isfinite(m.temperature_C) && m.temperature_C > -zero_celsius && m.temperature_C <= 100.0,
            "--temperature", m.temperature_C, "a temperature in (-273.15, 100] C");
    require(std::isfinite(m.permeability_cm3_s) && m.permeability_cm3_s > 0.0, "--permeability",
            m.permeability_cm3_s, "a finite value > 0 (cm^3/s)");
    require(std::isfinite(m.ca_out_mM) && m.ca_out_mM > 0.0, "--ca-out", m.ca_out_mM, "a finite value > 0 (mM)");
    require(std::isfinite(m.ca_rest_nM) && m.ca_rest_nM > 0.0, "--ca-rest", m.ca_rest_nM, "a finite value > 0 (nM)");
    require(std::isfinite(m.radius_um) && m.radius_um > 0.0, "--radius", m.radius_um, "a finite value > 0 (um)");
    require(std::isfinite(m.kappa) && m.kappa >= 0.0, "--kappa", m.kappa, "a finite value >= 0");
    require(m.tau_ms > 0.0 && !std::isnan(m.tau_ms), "--tau", m.tau_ms, "a value > 0 (ms; inf: no clearance)");
}

void validate(const protocol& p) {
    require(p.channels >= 1 && p.channels <= 0xFFFFFFFFull, "--channels", static_cast<double>(p.channels),
            "1 to 4294967295");
    require(p.steps >= 1 && p.steps <= 0xFFFFFFFFull, "--steps", static_cast<double>(p.steps), "1 to 4294967295");
    require(std::isfinite(p.dt_s) && p.dt_s > 0.0, "--dt", p.dt_s * 1e6, "a finite value > 0 (us)");
    require(std::isfinite(p.holding_mV) && std::fabs(p.holding_mV) <= 500.0, "--holding-voltage", p.holding_mV,
            "a voltage in [-500, 500] mV");
    const double total = static_cast<double>(p.steps) * p.dt_s;
    require(std::isfinite(p.peak_duration_s) && p.peak_duration_s > 0.0, "--peak-duration", p.peak_duration_s,
            "a duration > 0 (s)");
    require(std::llround(p.peak_duration_s / p.dt_s) >= 1, "--peak-duration", p.peak_duration_s,
            "at least one time step");
    if (std::isnan(p.pulse_start_s)) {
        require(p.peak_duration_s <= total * (1.0 + 1e-9), "--peak-duration", p.peak_duration_s,
                "at most the simulated time steps x dt = " + show(total) + " s");
    } else {
        require(std::isfinite(p.pulse_start_s) && p.pulse_start_s >= 0.0, "--pulse-start", p.pulse_start_s,
                "a time >= 0 (s)");
        require(p.pulse_start_s + p.peak_duration_s <= total * (1.0 + 1e-9), "--peak-duration", p.peak_duration_s,
                "at most steps x dt - pulse start = " + show(total - p.pulse_start_s) + " s");
    }
}

pulse_window window_of(const protocol& p) {
    const auto length = static_cast<std::uint64_t>(std::max<long long>(1, std::llround(p.peak_duration_s / p.dt_s)));
    const std::uint64_t len = std::min(length, p.steps);
    std::uint64_t on = 0;
    if (std::isnan(p.pulse_start_s)) on = (p.steps - len) / 2;
    else on = std::min<std::uint64_t>(static_cast<std::uint64_t>(std::llround(p.pulse_start_s / p.dt_s)), p.steps - len);
    return {on, len};
}

double temperature_factor(double temperature_C) { return std::pow(3.0, (temperature_C - 21.0) / 10.0); }

double alpha_21(double V) { return 1.6 / (1.0 + std::exp(-0.072 * (V + 5.0))); }

double beta_21(double V) {
    // 0.02 (V - 1.31) / (exp((V - 1.31)/5.36) - 1) = 0.02 * 5.36 * y / (e^y - 1), y = (V - 1.31)/5.36.
    const double y = (V - 1.31) / 5.36;
    const double f = y == 0.0 ? 1.0 : y / std::expm1(y);
    return 0.02 * 5.36 * f;
}

gating_rates rates_at(double V, double temperature_C) {
    const double phi = temperature_factor(temperature_C);
    return {alpha_21(V) * phi, beta_21(V) * phi};
}

double m_inf(double V) {
    const double a = alpha_21(V), b = beta_21(V);
    return a / (a + b);
}

double open_probability(double V) {
    const double m = m_inf(V);
    return m * m;
}

matrix3 transition_matrix(const gating_rates& r, double dt_ms) {
    const double m = r.alpha / (r.alpha + r.beta);
    const double e = -std::expm1(-(r.alpha + r.beta) * dt_ms);
    const double p = m * e, q = (1.0 - m) * e;  // one gate: closed -> open, open -> closed
    return {{{(1 - p) * (1 - p), 2 * p * (1 - p), p * p},
             {q * (1 - p), (1 - q) * (1 - p) + q * p, (1 - q) * p},
             {q * q, 2 * q * (1 - q), (1 - q) * (1 - q)}}};
}

std::array<double, 3> stationary(double m) { return {(1 - m) * (1 - m), 2 * m * (1 - m), m * m}; }

ghk_linear unitary_current_linear(double V_mV, const model_parameters& model) {
    const double T = model.temperature_C + zero_celsius;
    const double x = valence * faraday * (V_mV * 1e-3) / (gas_constant * T);
    const double pzf = model.permeability_cm3_s * 1e-6 * valence * faraday;  // A per (mol/m^3 = mM)
    // i = P z F (ci x/(1 - e^-x) - co x e^-x/(1 - e^-x)), and x e^-x/(1 - e^-x) = (-x)/(1 - e^x).
    return {pzf * ghk_factor(x) * 1e12, -pzf * model.ca_out_mM * ghk_factor(-x) * 1e12};
}

double unitary_current_pA(double V_mV, double ca_in_mM, const model_parameters& model) {
    const ghk_linear g = unitary_current_linear(V_mV, model);
    return g.slope_pA_per_mM * ca_in_mM + g.offset_pA;
}

double cell_volume_m3(const model_parameters& model) {
    const double r = model.radius_um * 1e-6;
    return 4.0 / 3.0 * std::numbers::pi * r * r * r;
}

double expected_current_pA(double V_mV, std::uint64_t channels, const model_parameters& model) {
    return static_cast<double>(channels) * open_probability(V_mV) *
           unitary_current_pA(V_mV, model.ca_rest_nM * 1e-6, model);
}

trace simulate(const model_parameters& model, const protocol& p, double peak_mV, const experiment_key& ek) {
    validate(model);
    validate(p);
    const pulse_window w = window_of(p);
    const philox_key key = seed_key(ek.seed);
    const auto index = static_cast<std::uint32_t>(ek.index);
    const double dt_ms = p.dt_s * 1e3;

    // The two voltages of the protocol: transition matrices and GHK coefficients, computed once.
    const double volts[2] = {p.holding_mV, peak_mV};
    matrix3 matrices[2];
    ghk_linear ghk[2];
    for (int v = 0; v < 2; ++v) {
        matrices[v] = transition_matrix(rates_at(volts[v], model.temperature_C), dt_ms);
        ghk[v] = unitary_current_linear(volts[v], model);
    }
    // Calcium, exactly integrated over a step at constant current I: c' = c_rest + J tau + (c - c_rest - J tau) d,
    // J = -I / (2 F Vcell (1 + kappa)), d = exp(-dt / tau). In mM (= mol/m^3), I in pA.
    const double ca_rest = model.ca_rest_nM * 1e-6;
    const double influx_per_pA = -1e-12 / (valence * faraday * cell_volume_m3(model) * (1.0 + model.kappa));  // mM/s
    const bool clears = std::isfinite(model.tau_ms);
    const double tau_s = model.tau_ms * 1e-3;
    const double decay = clears ? std::exp(-p.dt_s / tau_s) : 1.0;

    trace out;
    out.open.resize(p.steps);
    out.current_pA.resize(p.steps);
    out.ca_uM.resize(p.steps);

    // The initial state: the stationary distribution at the holding voltage.
    const std::array<double, 3> pi = stationary(m_inf(p.holding_mV));
    std::vector<std::uint8_t> channels;
    std::uint64_t counts[3] = {0, 0, 0};
    std::uint64_t open = 0;
    row_thresholds thr[2];
    population_step pop[2];
    if (p.update == update_method::per_channel) {
        const matrix3 initial{{{pi[0], pi[1], pi[2]}, {pi[0], pi[1], pi[2]}, {pi[0], pi[1], pi[2]}}};
        const row_thresholds init = thresholds_of(initial);
        channels.assign(p.channels, 0);
        open = step_channels(channels, init, key, 0, index, stream_initial);
        for (int v = 0; v < 2; ++v) thr[v] = thresholds_of(matrices[v]);
    } else {
        uniform_stream u(key, 0, index, stream_population_init);
        counts[2] = binomial(p.channels, pi[2], u);
        counts[1] = binomial(p.channels - counts[2], conditional(pi[1], pi[2]), u);
        counts[0] = p.channels - counts[2] - counts[1];
        open = counts[2];
        for (int v = 0; v < 2; ++v) pop[v] = population_of(matrices[v]);
    }

    double ca = ca_rest;
    for (std::uint64_t n = 0; n < p.steps; ++n) {
        const int v = (n >= w.on && n - w.on < w.length) ? 1 : 0;
        // No open channel, no current (+0, not the -0 of 0 x a negative unitary current).
        const double current =
            open == 0 ? 0.0 : static_cast<double>(open) * (ghk[v].slope_pA_per_mM * ca + ghk[v].offset_pA);
        out.open[n] = static_cast<std::uint32_t>(open);
        out.current_pA[n] = current;
        out.ca_uM[n] = ca * 1e3;
        // [Ca]i over [t, t + dt) under this step's current.
        if (clears) {
            const double target = ca_rest + influx_per_pA * current * tau_s;
            ca = target + (ca - target) * decay;
        } else {
            ca += influx_per_pA * current * p.dt_s;
        }
        // Gating over [t, t + dt) at this step's voltage.
        const auto step = static_cast<std::uint32_t>(n);
        if (p.update == update_method::per_channel) {
            open = step_channels(channels, thr[v], key, step, index, stream_gating);
        } else {
            const population_step& q = pop[v];
            std::uint64_t moved[6];
            const double probs[6] = {q.p02, q.p01_rest, q.p10, q.p12_rest, q.p21, q.p20_rest};
            const std::uint64_t from[3] = {counts[0], counts[1], counts[2]};
            for (int d = 0; d < 6; ++d) {
                uniform_stream u(key, step, index, stream_population_step + static_cast<std::uint32_t>(d));
                const std::uint64_t pool = (d % 2 == 0) ? from[d / 2] : from[d / 2] - moved[d - 1];
                moved[d] = binomial(pool, probs[d], u);
            }
            // moved: 0 C0->O, 1 C0->C1, 2 C1->C0, 3 C1->O, 4 O->C1, 5 O->C0
            counts[0] = from[0] - moved[0] - moved[1] + moved[2] + moved[5];
            counts[1] = from[1] - moved[2] - moved[3] + moved[1] + moved[4];
            counts[2] = from[2] - moved[4] - moved[5] + moved[0] + moved[3];
            open = counts[2];
        }
    }
    return out;
}

summary summarize(const trace& t, const protocol& p, const model_parameters& model, double peak_mV) {
    const pulse_window w = window_of(p);
    summary s;
    s.peak_voltage_mV = peak_mV;
    const std::uint64_t end = w.on + w.length;
    double peak = 0.0;
    for (std::uint64_t n = w.on; n < end; ++n) peak = std::min(peak, t.current_pA[n]);
    s.peak_current_pA = peak;
    const std::uint64_t plateau_steps = std::max<std::uint64_t>(1, w.length / 2);
    double sum = 0.0;
    for (std::uint64_t n = end - plateau_steps; n < end; ++n) sum += t.current_pA[n];
    s.plateau_current_pA = sum / static_cast<double>(plateau_steps);
    s.t90_ms = std::numeric_limits<double>::quiet_NaN();
    if (s.plateau_current_pA < 0.0) {
        const double level = 0.9 * s.plateau_current_pA;
        for (std::uint64_t n = w.on; n < end; ++n) {
            if (t.current_pA[n] <= level) {
                s.t90_ms = static_cast<double>(n - w.on) * p.dt_s * 1e3;
                break;
            }
        }
    }
    double charge = 0.0, ca_max = model.ca_rest_nM * 1e-3;
    for (std::size_t n = 0; n < t.current_pA.size(); ++n) {
        charge += t.current_pA[n];
        ca_max = std::max(ca_max, t.ca_uM[n]);
    }
    s.charge_pC = charge * p.dt_s;
    s.delta_ca_uM = ca_max - model.ca_rest_nM * 1e-3;
    return s;
}

}  // namespace pfarm::calcium
