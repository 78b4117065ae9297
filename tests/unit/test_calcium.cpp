// The science of pfarm-calcium (apps/calcium): the generator, the binomial sampler, the gating kinetics, the
// GHK unitary current, the calcium balance, and the checks asked of the model on small N: a bell-shaped
// inward I-V curve peaking between -10 and +15 mV with |I(+60)| < 0.15 |I_peak|, the open count over a long
// pulse at N m_inf^2 within a few standard errors, the mean open count over many seeds at N m(t)^2 of the
// deterministic gating solution, the mean current linear in N, and experiments that depend only on (seed, index).
// Compiled only when the model library is linked (tests/CMakeLists.txt links it when apps are built).
#if __has_include("pfarm/calcium/model.hpp")

#include "test_support.hpp"
#include "pfarm/calcium/binomial.hpp"
#include "pfarm/calcium/model.hpp"
#include "pfarm/calcium/philox.hpp"
#include "pfarm/calcium/plot.hpp"
#include "pfarm/calcium/sweep.hpp"
#include "pfarm/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <vector>

namespace {

using namespace pfarm::calcium;

using pfarm::testing::expect_invalid;

// ---- random numbers ----------------------------------------------------------------------------------------

TEST(CalciumPhilox, RandomKnownAnswerVectors) {
    // Random123 tests/kat_vectors, philox4x32 10.
    EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (philox_counter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
    EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
              (philox_counter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
    EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
              (philox_counter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(CalciumPhilox, UniformsAreInTheUnitIntervalWithTheRightMoments) {
    uniform_stream u(seed_key(7), 1, 2, 3);
    double sum = 0.0, sum_sq = 0.0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) {
        const double x = u.next();
        ASSERT_GE(x, 0.0);
        ASSERT_LT(x, 1.0);
        sum += x;
        sum_sq += x * x;
    }
    EXPECT_NEAR(sum / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
    EXPECT_NEAR(sum_sq / n - (sum / n) * (sum / n), 1.0 / 12, 0.002);
    EXPECT_EQ(uniform53(0xffffffffu, 0xffffffffu) < 1.0, true);
    EXPECT_EQ(uniform53(0, 0), 0.0);
}

TEST(CalciumBinomial, StirlingTailMatchesLgamma) {
    for (int k = 0; k <= 40; ++k) {
        const double exact = std::lgamma(k + 1.0) - ((k + 0.5) * std::log(k + 1.0) - (k + 1.0) + 0.5 * std::log(2 * M_PI));
        // A table to k = 9, then three terms of the asymptotic series (relative error < 1e-8 from k = 10).
        EXPECT_NEAR(stirling_tail(k), exact, k <= 9 ? 1e-12 : 1e-8 * exact) << k;
    }
}

/// Chi-square of `draws` variates against the exact Binomial(n, p) pmf, bins with expectation >= 5.
void expect_binomial(std::uint64_t n, double p, std::uint64_t seed) {
    uniform_stream u(seed_key(seed), 0, 0, 0);
    const int draws = 40000;
    std::map<std::uint64_t, int> counts;
    double sum = 0.0, sum_sq = 0.0;
    for (int i = 0; i < draws; ++i) {
        const std::uint64_t k = binomial(n, p, u);
        ASSERT_LE(k, n);
        ++counts[k];
        sum += static_cast<double>(k);
        sum_sq += static_cast<double>(k) * static_cast<double>(k);
    }
    const double mean = sum / draws, var = sum_sq / draws - mean * mean;
    const double nd = static_cast<double>(n);
    EXPECT_NEAR(mean, nd * p, 5 * std::sqrt(nd * p * (1 - p) / draws)) << n << " " << p;
    EXPECT_NEAR(var / (nd * p * (1 - p)), 1.0, 0.05) << n << " " << p;
    // Bins: walk k upwards, closing a bin once its expectation reaches 5 (the last bin takes the upper tail).
    auto log_pmf = [&](double k) {
        return std::lgamma(nd + 1) - std::lgamma(k + 1) - std::lgamma(nd - k + 1) + k * std::log(p) + (nd - k) * std::log1p(-p);
    };
    // Bins in k order, each closed once its expectation reaches 5; a short last bin joins the one before.
    std::vector<double> bin_expected;
    std::vector<int> bin_observed;
    double expected = 0.0;
    int observed = 0;
    for (std::uint64_t k = 0; k <= n; ++k) {
        expected += draws * std::exp(log_pmf(static_cast<double>(k)));
        observed += counts.count(k) ? counts[k] : 0;
        if (expected >= 5.0) {
            bin_expected.push_back(expected);
            bin_observed.push_back(observed);
            expected = 0.0;
            observed = 0;
        }
    }
    ASSERT_FALSE(bin_expected.empty());
    bin_expected.back() += expected;
    bin_observed.back() += observed;
    double chi2 = 0.0;
    for (std::size_t b = 0; b < bin_expected.size(); ++b)
        chi2 += (bin_observed[b] - bin_expected[b]) * (bin_observed[b] - bin_expected[b]) / bin_expected[b];
    const auto bins = static_cast<double>(bin_expected.size());
    const double df = bins - 1;
    EXPECT_LT(chi2, df + 6 * std::sqrt(2 * df)) << "n " << n << " p " << p << " bins " << bins;
}

TEST(CalciumBinomial, MatchesTheExactDistributionInEveryRegime) {
    expect_binomial(20, 0.3, 1);       // inversion
    expect_binomial(1000, 0.004, 2);   // inversion, n p = 4
    expect_binomial(1000, 0.3, 3);     // BTRS
    expect_binomial(10000, 0.0125, 4); // BTRS near its lower edge (n p = 125)
    expect_binomial(200, 0.9, 5);      // symmetry: n - Binomial(n, 0.1)
    expect_binomial(100000, 0.5, 6);   // BTRS, wide
}

TEST(CalciumBinomial, EdgeCases) {
    uniform_stream u(seed_key(1), 0, 0, 0);
    EXPECT_EQ(binomial(0, 0.5, u), 0u);
    EXPECT_EQ(binomial(10, 0.0, u), 0u);
    EXPECT_EQ(binomial(10, 1.0, u), 10u);
    EXPECT_EQ(binomial(10, -0.5, u), 0u);
    EXPECT_EQ(binomial(10, 1.5, u), 10u);
    EXPECT_EQ(binomial(10, std::nan(""), u), 0u);
}

// ---- gating ----------------------------------------------------------------------------------------------

TEST(CalciumGating, RatesAsPublished) {
    EXPECT_DOUBLE_EQ(alpha_21(-5.0), 0.8);
    EXPECT_DOUBLE_EQ(beta_21(1.31), 0.1072);  // the removable singularity
    EXPECT_NEAR(beta_21(1.31 + 1e-9), 0.1072, 1e-10);
    EXPECT_NEAR(beta_21(1.31 - 1e-9), 0.1072, 1e-10);
    EXPECT_NEAR(beta_21(-20.0), 0.02 * (-21.31) / (std::exp(-21.31 / 5.36) - 1), 1e-14);
    EXPECT_NEAR(temperature_factor(36.0), std::pow(3.0, 1.5), 1e-12);
    EXPECT_DOUBLE_EQ(temperature_factor(21.0), 1.0);
    const gating_rates r = rates_at(0.0, 36.0);
    EXPECT_NEAR(r.alpha, alpha_21(0.0) * std::pow(3.0, 1.5), 1e-12);
    // m_inf rises monotonically from near 0 to near 1.
    double last = 0.0;
    for (double v = -100.0; v <= 100.0; v += 0.5) {
        EXPECT_GT(m_inf(v), last) << v;
        last = m_inf(v);
    }
    EXPECT_LT(open_probability(-80.0), 1e-4);
    EXPECT_GT(open_probability(60.0), 0.99);
}

/// exp(Q t) by scaling and squaring of a Taylor series.
matrix3 expm(const matrix3& q, double t) {
    int squarings = 0;
    double norm = 0.0;
    for (const auto& row : q)
        for (double v : row) norm = std::max(norm, std::fabs(v) * t);
    while (norm > 0.01) {
        norm /= 2;
        ++squarings;
    }
    const double h = t / std::pow(2.0, squarings);
    matrix3 result{}, term{};
    for (int i = 0; i < 3; ++i) result[i][i] = term[i][i] = 1.0;
    for (int k = 1; k < 20; ++k) {
        matrix3 next{};
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
                for (int l = 0; l < 3; ++l) next[i][j] += term[i][l] * q[l][j] * h / k;
        term = next;
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) result[i][j] += term[i][j];
    }
    for (int s = 0; s < squarings; ++s) {
        matrix3 sq{};
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
                for (int l = 0; l < 3; ++l) sq[i][j] += result[i][l] * result[l][j];
        result = sq;
    }
    return result;
}

TEST(CalciumGating, TransitionMatrixIsTheExactExponentialOfTheScheme) {
    for (const double v : {-80.0, -40.0, -10.0, 1.31, 20.0, 60.0}) {
        for (const double dt_ms : {0.01, 0.1, 1.0, 10.0}) {
            const gating_rates r = rates_at(v, 36.0);
            const double a = r.alpha, b = r.beta;
            // C0 -> C1 2a, C1 -> C0 b, C1 -> O a, O -> C1 2b.
            const matrix3 q{{{-2 * a, 2 * a, 0}, {b, -(a + b), a}, {0, 2 * b, -2 * b}}};
            const matrix3 exact = expm(q, dt_ms);
            const matrix3 m = transition_matrix(r, dt_ms);
            for (int i = 0; i < 3; ++i) {
                double row = 0.0;
                for (int j = 0; j < 3; ++j) {
                    EXPECT_NEAR(m[i][j], exact[i][j], 1e-10) << v << " mV, dt " << dt_ms << " ms, " << i << j;
                    EXPECT_GE(m[i][j], 0.0);
                    EXPECT_LE(m[i][j], 1.0);
                    row += m[i][j];
                }
                EXPECT_NEAR(row, 1.0, 1e-14);
            }
            // The stationary distribution Binomial(2, m_inf) is invariant.
            const auto pi = stationary(m_inf(v));
            for (int j = 0; j < 3; ++j) {
                double pj = 0.0;
                for (int i = 0; i < 3; ++i) pj += pi[i] * m[i][j];
                EXPECT_NEAR(pj, pi[j], 1e-14);
            }
        }
    }
    // Where p = rate x dt would exceed 1 (2a dt > 1 at +60 mV, dt = 1 ms), the exact matrix stays a matrix.
    EXPECT_GT(2 * rates_at(60.0, 36.0).alpha * 1.0, 1.0);
}

// ---- currents and calcium ------------------------------------------------------------------------------------

TEST(CalciumGhk, UnitaryCurrentAtZeroIsAboutMinus012pA) {
    const model_parameters m;
    const double ca_rest = m.ca_rest_nM * 1e-6;
    const double i0 = unitary_current_pA(0.0, ca_rest, m);
    // P z F ([Ca]i - [Ca]o): 3.1e-19 m^3/s x 2 x 96485 C/mol x (5e-5 - 2) mol/m^3 = -0.1196 pA.
    EXPECT_NEAR(i0, 3.1e-19 * 2 * faraday * (5e-5 - 2.0) * 1e12, 1e-15);
    EXPECT_NEAR(i0, -0.1196, 0.0005);
    // Continuous through V = 0 (the limit is handled, not divided by zero).
    EXPECT_NEAR(unitary_current_pA(1e-7, ca_rest, m), i0, 1e-8);
    EXPECT_NEAR(unitary_current_pA(-1e-7, ca_rest, m), i0, 1e-8);
    // The textbook form away from 0.
    const double v = -30.0, T = m.temperature_C + zero_celsius, x = 2 * faraday * v * 1e-3 / (gas_constant * T);
    const double textbook = m.permeability_cm3_s * 1e-6 * 4 * faraday * faraday * v * 1e-3 / (gas_constant * T) *
                            (ca_rest - m.ca_out_mM * std::exp(-x)) / (1 - std::exp(-x)) * 1e12;
    EXPECT_NEAR(unitary_current_pA(v, ca_rest, m), textbook, 1e-12);
    // Inward below the reversal potential RT/(zF) ln([Ca]o/[Ca]i) (about +141 mV), zero at it.
    const double e_rev = gas_constant * T / (2 * faraday) * std::log(m.ca_out_mM / ca_rest) * 1e3;
    for (double u = -120.0; u < e_rev - 1.0; u += 1.0) EXPECT_LT(unitary_current_pA(u, ca_rest, m), 0.0) << u;
    EXPECT_NEAR(unitary_current_pA(e_rev, ca_rest, m), 0.0, 1e-12);
    EXPECT_GT(unitary_current_pA(e_rev + 5.0, ca_rest, m), 0.0);
}

TEST(CalciumBalance, CalciumIntegratesTheChargeWithoutClearance) {
    model_parameters m;
    m.tau_ms = INFINITY;
    protocol p;
    p.channels = 300;
    p.steps = 2000;
    p.peak_duration_s = 0.01;
    const trace t = simulate(m, p, 0.0, {3, 0});
    // [Ca]i(n) - [Ca]rest = -(sum of I dt before n) / (2 F Vcell (1 + kappa)).
    const double per_pC = -1e-12 / (2 * faraday * cell_volume_m3(m) * (1 + m.kappa)) * 1e3;  // uM per pC
    double q = 0.0;
    for (std::size_t n = 0; n < t.ca_uM.size(); ++n) {
        EXPECT_NEAR(t.ca_uM[n] - m.ca_rest_nM * 1e-3, per_pC * q, 1e-9 * (1 + std::fabs(per_pC * q))) << n;
        q += t.current_pA[n] * p.dt_s;
    }
    EXPECT_GT(t.ca_uM.back(), t.ca_uM.front());
    for (std::size_t n = 0; n < t.open.size(); ++n)
        if (t.open[n] == 0) EXPECT_FALSE(std::signbit(t.current_pA[n])) << "a -0 current at step " << n;
}

TEST(CalciumBalance, CalciumApproachesInfluxTimesTauOnAPlateau) {
    model_parameters m;
    m.tau_ms = 5.0;
    protocol p;
    p.channels = 2000;
    p.steps = 10000;
    p.peak_duration_s = 0.06;  // 20 ms before and after: 4 tau
    const trace t = simulate(m, p, 0.0, {4, 0});
    const pulse_window w = window_of(p);
    const std::uint64_t end = w.on + w.length;
    double mean_i = 0.0;  // over the last 20 ms of the pulse
    for (std::uint64_t n = end - 2000; n < end; ++n) mean_i += t.current_pA[n] / 2000;
    const double steady = m.ca_rest_nM * 1e-3 + (-mean_i * 1e-12 / (2 * faraday * cell_volume_m3(m) * (1 + m.kappa))) *
                                                     m.tau_ms * 1e-3 * 1e3;
    EXPECT_NEAR(t.ca_uM[end - 1], steady, 0.02 * (steady - m.ca_rest_nM * 1e-3));
    // After the pulse [Ca]i relaxes to rest with tau.
    EXPECT_LT(t.ca_uM.back() - m.ca_rest_nM * 1e-3, 0.05 * (steady - m.ca_rest_nM * 1e-3));
}

// ---- experiments ---------------------------------------------------------------------------------------------

TEST(CalciumExperiment, PerChannelDrawsFollowTheDocumentedCounterLayout) {
    // A reference of the per-channel update from README.md: channel c uses word c % 4 of Philox block
    // {c / 4, step, index, 0} under key = seed (initial state: block {c / 4, 0, index, 1}), a state moving to
    // (u >= round(P[s][0] 2^32)) + (u >= round((P[s][0] + P[s][1]) 2^32)).
    const model_parameters m;
    protocol p;
    p.channels = 1003;  // not a multiple of 4 or of a batch
    p.steps = 60;
    p.peak_duration_s = 0.0003;
    const double peak = 5.0;
    const experiment_key ek{0x123456789abcdefull, 17};
    const trace t = simulate(m, p, peak, ek);

    auto q32 = [](double x) -> std::uint64_t {
        const double s = std::floor(std::clamp(x, 0.0, 1.0) * 4294967296.0 + 0.5);
        return s >= 4294967295.0 ? 0xFFFFFFFFu : static_cast<std::uint64_t>(s);
    };
    auto draw = [&](std::uint64_t c, std::uint32_t step, std::uint32_t stream) {
        return philox4x32_10({static_cast<std::uint32_t>(c / 4), step, 17, stream}, seed_key(ek.seed))[c % 4];
    };
    const auto pi = stationary(m_inf(p.holding_mV));
    std::vector<int> state(p.channels);
    for (std::uint64_t c = 0; c < p.channels; ++c) {
        const std::uint32_t u = draw(c, 0, 1);
        state[c] = (u >= q32(pi[0])) + (u >= q32(pi[0] + pi[1]));
    }
    const pulse_window w = window_of(p);
    for (std::uint32_t n = 0; n < p.steps; ++n) {
        const auto open = static_cast<std::uint32_t>(std::count(state.begin(), state.end(), 2));
        ASSERT_EQ(t.open[n], open) << "step " << n;
        const double v = voltage_at(w, p, peak, n);
        const matrix3 mat = transition_matrix(rates_at(v, m.temperature_C), p.dt_s * 1e3);
        for (std::uint64_t c = 0; c < p.channels; ++c) {
            const std::uint32_t u = draw(c, n, 0);
            const int s = state[c];
            state[c] = (u >= q32(mat[s][0])) + (u >= q32(mat[s][0] + mat[s][1]));
        }
    }
}

TEST(CalciumExperiment, DeterministicFromSeedAndIndexOnly) {
    const model_parameters m;
    protocol p;
    p.channels = 500;
    p.steps = 400;
    p.peak_duration_s = 0.002;
    for (const update_method u : {update_method::per_channel, update_method::population}) {
        p.update = u;
        // Run experiments 0..5 forwards and backwards: each is a function of (seed, index) alone.
        std::vector<trace> forward, backward(6);
        for (std::uint64_t i = 0; i < 6; ++i) forward.push_back(simulate(m, p, -10.0, {99, i}));
        for (std::uint64_t i = 6; i-- > 0;) backward[i] = simulate(m, p, -10.0, {99, i});
        for (std::uint64_t i = 0; i < 6; ++i) {
            EXPECT_EQ(forward[i].open, backward[i].open);
            EXPECT_EQ(0, std::memcmp(forward[i].current_pA.data(), backward[i].current_pA.data(), p.steps * sizeof(double)));
            EXPECT_EQ(0, std::memcmp(forward[i].ca_uM.data(), backward[i].ca_uM.data(), p.steps * sizeof(double)));
        }
        EXPECT_NE(forward[0].open, forward[1].open) << "different indices draw different numbers";
        EXPECT_NE(simulate(m, p, -10.0, {100, 0}).open, forward[0].open) << "different seeds draw different numbers";
    }
}

/// The plateau current of a small-N sweep over [-60, 60] mV.
std::vector<summary> small_sweep(update_method u, std::uint64_t channels, double step_mV) {
    sweep_config c;
    c.proto.channels = channels;
    c.proto.steps = 3000;
    c.proto.peak_duration_s = 0.02;
    c.proto.update = u;
    c.v_step_mV = step_mV;
    c.seed = 11;
    std::vector<summary> rows;
    for (std::uint64_t i = 0; i < experiment_count(c); ++i) {
        const double v = voltage_of(c, i);
        rows.push_back(summarize(simulate(c.model, c.proto, v, {c.seed, i}), c.proto, c.model, v));
    }
    return rows;
}

void expect_iv_science(const std::vector<summary>& rows, std::uint64_t channels, const model_parameters& model) {
    ASSERT_EQ(rows.size(), 25u);
    EXPECT_EQ(rows.front().peak_voltage_mV, -60.0);
    EXPECT_EQ(rows.back().peak_voltage_mV, 60.0);
    std::size_t at_peak = 0;
    for (std::size_t k = 0; k < rows.size(); ++k) {
        // Inward over the whole sweep.
        EXPECT_LE(rows[k].plateau_current_pA, 0.0) << rows[k].peak_voltage_mV;
        EXPECT_LE(rows[k].peak_current_pA, 0.0) << rows[k].peak_voltage_mV;
        EXPECT_LE(rows[k].charge_pC, 0.0) << rows[k].peak_voltage_mV;
        if (rows[k].plateau_current_pA < rows[at_peak].plateau_current_pA) at_peak = k;
    }
    const double v_peak = rows[at_peak].peak_voltage_mV, i_peak = rows[at_peak].plateau_current_pA;
    EXPECT_GE(v_peak, -10.0);
    EXPECT_LE(v_peak, 15.0);
    // Bell-shaped: |I| rises to the peak and falls after it (to within noise, 3% of the peak).
    for (std::size_t k = 1; k <= at_peak; ++k)
        EXPECT_LE(rows[k].plateau_current_pA, rows[k - 1].plateau_current_pA + 0.03 * std::fabs(i_peak)) << k;
    for (std::size_t k = at_peak + 1; k < rows.size(); ++k)
        EXPECT_GE(rows[k].plateau_current_pA, rows[k - 1].plateau_current_pA - 0.03 * std::fabs(i_peak)) << k;
    EXPECT_LT(std::fabs(rows.front().plateau_current_pA), 0.15 * std::fabs(i_peak));
    EXPECT_LT(std::fabs(rows.back().plateau_current_pA), 0.15 * std::fabs(i_peak));
    // And it follows the deterministic curve N m_inf^2 i(V).
    for (const summary& s : rows)
        EXPECT_NEAR(s.plateau_current_pA, expected_current_pA(s.peak_voltage_mV, channels, model), 0.05 * std::fabs(i_peak))
            << s.peak_voltage_mV;
}

TEST(CalciumScience, IvCurveIsBellShapedInwardPeakingBetweenMinus10And15) {
    const model_parameters m;
    expect_iv_science(small_sweep(update_method::per_channel, 2000, 5.0), 2000, m);
    expect_iv_science(small_sweep(update_method::population, 2000, 5.0), 2000, m);
    // The deterministic curve itself.
    double best_v = 0.0, best_i = 0.0;
    for (double v = -60.0; v <= 60.0; v += 0.125) {
        const double i = expected_current_pA(v, 10000, m);
        EXPECT_LT(i, 0.0);
        if (i < best_i) best_i = i, best_v = v;
    }
    EXPECT_GE(best_v, -10.0);
    EXPECT_LE(best_v, 15.0);
    EXPECT_LT(std::fabs(expected_current_pA(60.0, 10000, m)), 0.15 * std::fabs(best_i));
}

/// Mean open count over a long pulse against N m_inf^2, with the standard error from batch means.
void expect_open_mean(update_method u, double v, std::uint64_t seed) {
    const model_parameters m;
    protocol p;
    p.channels = 1000;
    p.steps = 100000;          // 1 s
    p.peak_duration_s = 0.98;  // from 10 ms to 990 ms
    p.update = u;
    const trace t = simulate(m, p, v, {seed, 0});
    const pulse_window w = window_of(p);
    const std::uint64_t first = w.on + 2000, batch = 1000;  // skip 20 ms of activation; 10 ms batches
    const std::uint64_t batches = (w.length - 2000) / batch;
    std::vector<double> means;
    double sum = 0.0, sum_sq = 0.0;
    for (std::uint64_t b = 0; b < batches; ++b) {
        double s = 0.0;
        for (std::uint64_t n = first + b * batch; n < first + (b + 1) * batch; ++n) {
            s += t.open[n];
            sum += t.open[n];
            sum_sq += static_cast<double>(t.open[n]) * t.open[n];
        }
        means.push_back(s / batch);
    }
    const double samples = static_cast<double>(batches * batch);
    const double mean = std::accumulate(means.begin(), means.end(), 0.0) / static_cast<double>(batches);
    double var_means = 0.0;
    for (const double x : means) var_means += (x - mean) * (x - mean);
    var_means /= static_cast<double>(batches - 1);
    const double se = std::sqrt(var_means / static_cast<double>(batches));
    const double po = open_probability(v), expected = static_cast<double>(p.channels) * po;
    EXPECT_NEAR(mean, expected, 4 * se) << to_string(u) << " at " << v << " mV: mean " << mean << ", N m_inf^2 "
                                        << expected << ", se " << se;
    // The open count is Binomial(N, m_inf^2) at equilibrium: its variance is N po (1 - po).
    const double var = sum_sq / samples - (sum / samples) * (sum / samples);
    EXPECT_NEAR(var / (static_cast<double>(p.channels) * po * (1 - po)), 1.0, 0.1) << to_string(u) << " at " << v;
}

TEST(CalciumScience, MeanOpenCountOverALongPulseIsNmInfSquared) {
    expect_open_mean(update_method::per_channel, -20.0, 1);
    expect_open_mean(update_method::per_channel, 10.0, 2);
    expect_open_mean(update_method::population, -20.0, 3);
    expect_open_mean(update_method::population, 10.0, 4);
}

/// The deterministic gating solution after a step from the holding voltage to v: each gate's open probability
/// m(t) = m_inf + (m0 - m_inf) e^{-(a + b) t}, the exact solution of dm/dt = a (1 - m) - b m with m0 = m_inf(holding).
double m_of_t(double v, double holding, double t_ms, double temperature_C) {
    const gating_rates r = rates_at(v, temperature_C);
    const double inf = r.alpha / (r.alpha + r.beta), m0 = m_inf(holding);
    return inf + (m0 - inf) * std::exp(-(r.alpha + r.beta) * t_ms);
}

/// The mean open count over many seeds at a few times after the pulse onset against N m(t)^2, within 4 standard
/// errors (the sample standard deviation over the seeds / sqrt(seeds)).
void expect_ensemble_open_count(update_method u, double v) {
    const model_parameters m;
    protocol p;
    p.channels = 100;
    p.update = u;
    p.steps = 600;              // 6 ms
    p.pulse_start_s = 0.001;    // onset at step 100
    p.peak_duration_s = 0.005;  // to the end
    const pulse_window w = window_of(p);
    ASSERT_EQ(w.on, 100u);
    const gating_rates r = rates_at(v, m.temperature_C);
    const double dt_ms = p.dt_s * 1e3;
    // Times where (a + b) t is 0.25, 0.5, 1, 2 and 4: through the activation and on the plateau; plus the onset
    // itself (k = 0: still the holding state, N m_inf(holding)^2).
    std::vector<std::uint64_t> ks{0};
    for (const double x : {0.25, 0.5, 1.0, 2.0, 4.0})
        ks.push_back(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(x / ((r.alpha + r.beta) * dt_ms)))));
    ASSERT_LT(ks.back(), w.length);
    const int seeds = 200;
    std::vector<double> sum(ks.size(), 0.0), sum_sq(ks.size(), 0.0);
    for (int s = 0; s < seeds; ++s) {
        const trace t = simulate(m, p, v, {static_cast<std::uint64_t>(1000 + s), 7});
        for (std::size_t i = 0; i < ks.size(); ++i) {
            const double open = t.open[w.on + ks[i]];  // the state at t = k dt after the onset
            sum[i] += open;
            sum_sq[i] += open * open;
        }
    }
    for (std::size_t i = 0; i < ks.size(); ++i) {
        const double mean = sum[i] / seeds;
        const double var = (sum_sq[i] - seeds * mean * mean) / (seeds - 1);
        const double se = std::sqrt(var / seeds);
        const double t_ms = static_cast<double>(ks[i]) * dt_ms;
        const double mt = m_of_t(v, p.holding_mV, t_ms, m.temperature_C);
        const double expected = static_cast<double>(p.channels) * mt * mt;
        // The open count of N independent channels is Binomial(N, m(t)^2): a floor on se for the holding state,
        // where almost every run has 0 open (se would be 0).
        const double floor_se = std::sqrt(static_cast<double>(p.channels) * mt * mt * (1 - mt * mt) / seeds);
        EXPECT_NEAR(mean, expected, 4 * std::max(se, floor_se) + 1e-9)
            << to_string(u) << " at " << v << " mV, t = " << t_ms << " ms: mean " << mean << ", N m(t)^2 " << expected
            << ", se " << se;
    }
}

TEST(CalciumScience, EnsembleMeanOpenCountFollowsTheDeterministicSolution) {
    expect_ensemble_open_count(update_method::per_channel, -10.0);
    expect_ensemble_open_count(update_method::per_channel, 20.0);
    expect_ensemble_open_count(update_method::population, -10.0);
    expect_ensemble_open_count(update_method::population, 20.0);
}

TEST(CalciumScience, MeanCurrentScalesLinearlyWithN) {
    // The plateau current per channel over many seeds is the same for N = 500, 1000, 2000 within statistical
    // error, and is the deterministic m_inf^2 i(V) (the calcium that flows in changes i by far less than 1e-3).
    const model_parameters m;
    const double v = 0.0;
    const int seeds = 40;
    std::vector<double> per_channel, se;
    for (const std::uint64_t n : {500u, 1000u, 2000u}) {
        for (const update_method u : {update_method::population, update_method::per_channel}) {
            if (u == update_method::per_channel && n != 1000u) continue;  // the per-channel method: one N (cost)
            protocol p;
            p.channels = n;
            p.update = u;
            p.steps = 2000;  // 20 ms
            p.peak_duration_s = 0.016;
            double sum = 0.0, sum_sq = 0.0;
            for (int s = 0; s < seeds; ++s) {
                const summary x = summarize(simulate(m, p, v, {static_cast<std::uint64_t>(77 + s), n}), p, m, v);
                const double i = x.plateau_current_pA / static_cast<double>(n);
                sum += i;
                sum_sq += i * i;
            }
            const double mean = sum / seeds;
            per_channel.push_back(mean);
            se.push_back(std::sqrt((sum_sq - seeds * mean * mean) / (seeds - 1) / seeds));
            const double expected = expected_current_pA(v, n, m) / static_cast<double>(n);
            EXPECT_NEAR(mean, expected, 4 * se.back() + 1e-3 * std::fabs(expected))
                << "N = " << n << " " << to_string(u) << ": mean current / N " << mean << " pA, expected " << expected;
        }
    }
    ASSERT_EQ(per_channel.size(), 4u);
    for (std::size_t i = 0; i < per_channel.size(); ++i)
        for (std::size_t j = i + 1; j < per_channel.size(); ++j)
            EXPECT_NEAR(per_channel[i], per_channel[j], 4 * std::hypot(se[i], se[j]))
                << "mean current / N differs between runs " << i << " and " << j;
    EXPECT_LT(per_channel[0], 0.0);  // inward
}

// ---- summaries, sweep and files -------------------------------------------------------------------------------

TEST(CalciumSummary, DefinitionsOnASyntheticTrace) {
    model_parameters m;
    protocol p;
    p.channels = 10;
    p.steps = 10;
    p.dt_s = 1e-3;
    p.peak_duration_s = 6e-3;  // steps 2..7
    const pulse_window w = window_of(p);
    ASSERT_EQ(w.on, 2u);
    ASSERT_EQ(w.length, 6u);
    trace t;
    t.open.assign(10, 0);
    t.current_pA = {0, 0, 0, -5, -12, -9, -10, -10, -30, 0};  // -30 is a tail, after the pulse
    t.ca_uM = {0.05, 0.05, 0.05, 0.06, 0.2, 0.3, 0.31, 0.3, 0.29, 0.28};
    const summary s = summarize(t, p, m, 7.5);
    EXPECT_EQ(s.peak_voltage_mV, 7.5);
    EXPECT_EQ(s.peak_current_pA, -12.0);           // the pulse only
    EXPECT_DOUBLE_EQ(s.plateau_current_pA, -29.0 / 3);  // steps 5, 6, 7
    EXPECT_DOUBLE_EQ(s.t90_ms, 2.0);                // step 4 is the first <= 0.9 x plateau
    EXPECT_DOUBLE_EQ(s.charge_pC, -76.0 * 1e-3);
    EXPECT_NEAR(s.delta_ca_uM, 0.26, 1e-12);
    // No inward plateau, no t90.
    t.current_pA.assign(10, 0.0);
    EXPECT_TRUE(std::isnan(summarize(t, p, m, 0.0).t90_ms));
}

TEST(CalciumSweep, VoltagesPresetsAndValidation) {
    sweep_config c;  // the default sweep: -60 to +60 mV in 2.5 mV steps
    EXPECT_EQ(voltage_count(c), 49u);
    EXPECT_EQ(experiment_count(c), 49u);
    EXPECT_EQ(voltage_of(c, 48), 60.0);
    c.v_step_mV = 5.0;
    EXPECT_EQ(voltage_count(c), 25u);
    EXPECT_EQ(experiment_count(c), 25u);
    EXPECT_EQ(voltage_of(c, 0), -60.0);
    EXPECT_EQ(voltage_of(c, 24), 60.0);
    EXPECT_EQ(voltage_of(c, 25), -60.0);  // repeats cycle the grid
    c.experiments = 60;
    EXPECT_EQ(experiment_count(c), 60u);
    EXPECT_EQ(voltage_of(c, 59), voltage_of(c, 9));

    auto none = [](const char*) { return false; };
    sweep_config light;
    apply_preset(light, "light", none);
    EXPECT_EQ(light.proto.channels, 10000u);
    EXPECT_EQ(light.proto.steps, 1000u);
    EXPECT_EQ(light.proto.peak_duration_s, 0.006);
    EXPECT_EQ(experiment_count(light), 9600u);
    EXPECT_EQ(voltage_count(light), 9601u);
    EXPECT_DOUBLE_EQ(voltage_of(light, 9599), 59.9875);
    sweep_config medium, heavy, single;
    apply_preset(medium, "medium", none);
    apply_preset(heavy, "heavy", none);
    apply_preset(single, "single-round", none);
    EXPECT_EQ(experiment_count(medium), 3840u);
    EXPECT_EQ(medium.proto.steps, 10000u);
    EXPECT_EQ(experiment_count(heavy), 960u);
    EXPECT_EQ(heavy.proto.steps, 100000u);
    EXPECT_EQ(heavy.proto.peak_duration_s, 0.6);
    EXPECT_EQ(experiment_count(single), 960u);
    EXPECT_EQ(single.proto.peak_duration_s, 0.06);
    for (const auto* s : {&light, &medium, &heavy, &single}) EXPECT_NO_THROW(validate(*s));
    // Explicit options win over the preset; the user's step means one experiment per voltage.
    sweep_config own;
    own.proto.channels = 50;
    own.v_step_mV = 10;
    apply_preset(own, "heavy", [](const char* o) { return std::string(o) == "--channels" || std::string(o) == "--voltage-step"; });
    EXPECT_EQ(own.proto.channels, 50u);
    EXPECT_EQ(own.proto.steps, 100000u);
    EXPECT_EQ(experiment_count(own), 13u);
    expect_invalid([] { sweep_config x; apply_preset(x, "huge", [](const char*) { return false; }); }, "--preset");

    sweep_config bad;
    bad.proto.channels = 0;
    expect_invalid([&] { validate(bad); }, "--channels");
    bad = {};
    bad.proto.peak_duration_s = 0.2;  // 10^4 steps of 10 us = 0.1 s
    expect_invalid([&] { validate(bad); }, "--peak-duration");
    bad = {};
    bad.v_step_mV = 0;
    expect_invalid([&] { validate(bad); }, "--voltage-step");
    bad = {};
    bad.model.kappa = -1;
    expect_invalid([&] { validate(bad); }, "--kappa");
    bad = {};
    bad.proto.pulse_start_s = 0.09;
    expect_invalid([&] { validate(bad); }, "--peak-duration");
    bad = {};
    bad.v_max_mV = -70;
    expect_invalid([&] { validate(bad); }, "--v-max");
    bad = {};
    bad.trace_stride = 0;
    expect_invalid([&] { validate(bad); }, "--trace-stride");
}

TEST(CalciumSweep, PulseTiming) {
    protocol p;  // 10^4 steps, 0.06 s: centred, 2000 steps of holding either side
    EXPECT_EQ(window_of(p).on, 2000u);
    EXPECT_EQ(window_of(p).length, 6000u);
    p.steps = 1000;
    p.peak_duration_s = 0.006;  // light: 2 ms, 6 ms, 2 ms
    EXPECT_EQ(window_of(p).on, 200u);
    EXPECT_EQ(window_of(p).length, 600u);
    p.pulse_start_s = 0.001;
    EXPECT_EQ(window_of(p).on, 100u);
}

TEST(CalciumFiles, SummaryCsvAndTraceFormats) {
    std::vector<summary> rows = {{-60.0, -1.5, -1.25, 0.5, -0.01, 0.001}, {-59.96875, 0, 0, NAN, 0, 0}};
    EXPECT_EQ(summary_csv(rows),
              "peak_voltage_mV,peak_current_pA,plateau_current_pA,t90_ms,charge_pC,delta_ca_uM\n"
              "-60.000000,-1.5,-1.25,0.5,-0.01,0.001\n"
              "-59.968750,0,0,nan,0,0\n");
    EXPECT_EQ(experiment_stem(7, 960), "exp_000007");
    EXPECT_EQ(experiment_stem(12, 10000000), "exp_0000012");
    sweep_config c;
    c.proto.channels = 10;
    c.proto.steps = 4;
    c.proto.peak_duration_s = 2e-5;
    trace t{{0, 1, 2, 0}, {0.0, -0.5, -1.0, -0.25}, {0.05, 0.05, 0.0501, 0.0502}};
    const std::string data = experiment_data(c, 3, 10.0, t);
    EXPECT_NE(data.find("# t_ms V_mV open I_pA Ca_uM\n0 -80 0 0 0.05\n0.01 10 1 -0.5 0.05\n0.02 10 2 -1 0.0501\n"
                        "0.03 -80 0 -0.25 0.0502\n"),
              std::string::npos)
        << data;
    c.trace_stride = 2;
    EXPECT_NE(experiment_data(c, 3, 10.0, t).find("0 -80 0 0 0.05\n0.02 10 2 -1 0.0501\n"), std::string::npos);
    EXPECT_NE(experiment_gnuplot(c, 3, 10.0).find("plot 'exp_000003.dat' using 1:5"), std::string::npos);
}

TEST(CalciumFiles, PngIsWellFormedAndDeterministic) {
    plot_spec spec;
    spec.title = "I-V curve";
    spec.series = {{{-60, 0, 60}, {-1, -10, -2}, {0, 0, 255}, true, true, "plateau"}};
    const std::string a = encode_png(render_plot(spec)), b = encode_png(render_plot(spec));
    EXPECT_EQ(a, b);
    ASSERT_GT(a.size(), 57u);
    EXPECT_EQ(a.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_EQ(a.substr(12, 4), "IHDR");
    EXPECT_EQ(a.substr(a.size() - 12), std::string("\0\0\0\0IEND\xae\x42\x60\x82", 12));
}

}  // namespace

#endif
