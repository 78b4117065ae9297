// Statistical calibration (Gonzalez-Velez & Cole, "Adaptive statistical scheduling of divisible workloads in
// heterogeneous systems", section 3.1.1): coefficients against values worked out by hand (not a
// second call to GSL), fitted-time fitness against eq. 4, and every failure case's defined behaviour.
#include "pfarm/calibration.hpp"
#include "pfarm/error.hpp"
#include "pfarm/round_robin.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

namespace {

using v = std::vector<double>;

std::vector<pfarm::resource_sample> samples(const v& availability, const v& latency = {}, const v& benchmark = {}) {
    std::vector<pfarm::resource_sample> s(availability.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        s[i].availability = availability[i];
        if (!latency.empty()) s[i].latency = latency[i];
        if (!benchmark.empty()) s[i].benchmark = benchmark[i];
    }
    return s;
}

TEST(Regression, UnivariateByHand) {
    // a = 0.25, 0.5, 0.75, 1; t = 1, 3, 2, 5. Means 0.625 and 2.75; Sxy = 1.375, Sxx = 0.3125;
    // c1 = Sxy / Sxx = 4.4, c0 = 2.75 - 4.4 x 0.625 = 0; residuals -0.1, 0.8, -1.3, 0.6: RSS = 2.7.
    const auto fit = pfarm::fit_univariate(v{1, 3, 2, 5}, v{0.25, 0.5, 0.75, 1.0});
    ASSERT_EQ(fit.coefficients.size(), 2u);
    EXPECT_NEAR(fit.coefficients[0], 0.0, 1e-12);
    EXPECT_NEAR(fit.coefficients[1], 4.4, 1e-12);
    EXPECT_NEAR(fit.residual_sum_of_squares, 2.7, 1e-12);
}

TEST(Regression, MultivariateByHand) {
    // Columns 1, l = 0..4, q = a'^2 with a' = 0.2, 0.4, ..., 1 (q = 0.04, 0.16, 0.36, 0.64, 1). The vector
    // e = (1, -3, 3, -1, 0) is orthogonal to all three (sum 0; l.e = -3 + 6 - 3 = 0; q.e = 0.04 - 0.48 + 1.08
    // - 0.64 = 0), so t = 1 + 2 l + 3 q + 0.1 e has least-squares coefficients exactly (1, 2, 3) and
    // RSS = 0.01 x |e|^2 = 0.2.
    const v l{0, 1, 2, 3, 4}, a{0.2, 0.4, 0.6, 0.8, 1.0}, e{1, -3, 3, -1, 0};
    v t(5);
    for (std::size_t i = 0; i < 5; ++i) t[i] = 1 + 2 * l[i] + 3 * a[i] * a[i] + 0.1 * e[i];
    const auto fit = pfarm::fit_multivariate(t, l, a);
    ASSERT_EQ(fit.coefficients.size(), 3u);
    EXPECT_NEAR(fit.coefficients[0], 1.0, 1e-9);
    EXPECT_NEAR(fit.coefficients[1], 2.0, 1e-9);
    EXPECT_NEAR(fit.coefficients[2], 3.0, 1e-9);
    EXPECT_NEAR(fit.residual_sum_of_squares, 0.2, 1e-9);
}

TEST(Regression, ScaledAvailability) {
    // a'_i = a_i x bm_i / max(bm).
    const auto s = pfarm::scaled_availability(v{1.0, 0.5, 0.8}, v{200, 400, 100});
    EXPECT_DOUBLE_EQ(s[0], 0.5);
    EXPECT_DOUBLE_EQ(s[1], 0.5);
    EXPECT_DOUBLE_EQ(s[2], 0.2);
    EXPECT_EQ(pfarm::scaled_availability(v{0.3, 0.6}, {}), (v{0.3, 0.6}));
    EXPECT_THROW(pfarm::scaled_availability(v{0.3, 0.0}, {}), pfarm::invalid_argument);
}

TEST(Calibrate, UnivariateFitnessIsEq4OnFittedTimes) {
    // Exact line t = 4 - 3 a: fitted = measured, so F is eq. 4 on the times.
    const v a{0.5, 0.8, 1.0}, t{2.5, 1.6, 1.0};
    const auto c = pfarm::calibrate(pfarm::calibration_mode::univariate, t, samples(a), 100);
    EXPECT_EQ(c.mode, pfarm::calibration_mode::univariate);
    EXPECT_TRUE(c.note.empty()) << c.note;
    const auto expected = pfarm::fitness_from_times(t);
    for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(c.fitness[i], expected[i], 1e-12);
    EXPECT_NEAR(c.fit.coefficients[0], 4.0, 1e-12);
    EXPECT_NEAR(c.fit.coefficients[1], -3.0, 1e-12);
}

TEST(Calibrate, UnivariateSmoothsANoisyTime) {
    // Worker 1's measured time is a fluke; the fit pulls it back towards the availability trend.
    const v a{0.25, 0.5, 0.75, 1.0}, t{4.0, 1.0, 2.0, 1.0};
    const auto c = pfarm::calibrate(pfarm::calibration_mode::univariate, t, samples(a), 100);
    ASSERT_EQ(c.mode, pfarm::calibration_mode::univariate) << c.note;
    EXPECT_GT(c.fitted[1], 1.0);
    EXPECT_LT(c.fitness[1], pfarm::fitness_from_times(t)[1]);
    EXPECT_NEAR(std::accumulate(c.fitness.begin(), c.fitness.end(), 0.0), 1.0, 1e-12);
}

TEST(Calibrate, NegativeFittedTimeFallsBackToTimesOnly) {
    // a = 0.1, 0.8, 0.9, 1; t = 20, 1, 1, 1: c0 = 21.71, c1 = -22.8, fitted(1.0) = -1.09.
    const v t{20, 1, 1, 1};
    const auto c = pfarm::calibrate(pfarm::calibration_mode::univariate, t, samples(v{0.1, 0.8, 0.9, 1.0}), 100);
    EXPECT_EQ(c.mode, pfarm::calibration_mode::times_only);
    EXPECT_NE(c.note.find("fitted time of worker 3"), std::string::npos) << c.note;
    EXPECT_EQ(c.fitness, pfarm::fitness_from_times(t));
}

TEST(Calibrate, UnderDeterminedAndSingularFallBack) {
    const auto one = pfarm::calibrate(pfarm::calibration_mode::univariate, v{2.0}, samples(v{0.5}), 10);
    EXPECT_EQ(one.mode, pfarm::calibration_mode::times_only);
    EXPECT_NE(one.note.find("under-determined"), std::string::npos) << one.note;

    const auto equal = pfarm::calibrate(pfarm::calibration_mode::univariate, v{1, 2, 3}, samples(v{0.5, 0.5, 0.5}), 10);
    EXPECT_EQ(equal.mode, pfarm::calibration_mode::times_only);
    EXPECT_NE(equal.note.find("singular"), std::string::npos) << equal.note;

    const auto two = pfarm::calibrate(pfarm::calibration_mode::multivariate, v{1, 2}, samples(v{0.5, 1}, v{1e-3, 2e-3}), 10);
    EXPECT_EQ(two.mode, pfarm::calibration_mode::times_only);
    EXPECT_NE(two.note.find("under-determined"), std::string::npos) << two.note;

    // Equal latencies make the column l a multiple of the constant column: rank 2.
    const auto flat = pfarm::calibrate(pfarm::calibration_mode::multivariate, v{1, 2, 3, 4},
                                       samples(v{1, 0.8, 0.6, 0.4}, v{1e-3, 1e-3, 1e-3, 1e-3}), 10);
    EXPECT_EQ(flat.mode, pfarm::calibration_mode::times_only);
    EXPECT_NE(flat.note.find("singular"), std::string::npos) << flat.note;
    for (const auto* c : {&one, &equal, &two, &flat}) {
        EXPECT_NEAR(std::accumulate(c->fitness.begin(), c->fitness.end(), 0.0), 1.0, 1e-12);
        for (double f : c->fitness) EXPECT_GT(f, 0.0);
    }
}

TEST(Calibrate, ZeroTimeFromACoarseTimer) {
    // Worker 1's task was too short for the timer: it is taken as fast as the fastest measured worker.
    const auto c = pfarm::calibrate(pfarm::calibration_mode::times_only, v{2.0, 0.0, 1.0}, {}, 10);
    EXPECT_NE(c.note.find("timer"), std::string::npos);
    EXPECT_EQ(c.times, (v{2.0, 1.0, 1.0}));
    EXPECT_NEAR(c.fitness[1], 0.4, 1e-12);
    const auto all = pfarm::calibrate(pfarm::calibration_mode::times_only, v{0.0, 0.0}, {}, 10);
    EXPECT_EQ(all.fitness, (v{0.5, 0.5}));
}

TEST(Calibrate, BadReadingsAreErrorsNamingThem) {
    EXPECT_THROW(pfarm::calibrate(pfarm::calibration_mode::times_only, v{1.0, std::nan("")}, {}, 10), pfarm::invalid_argument);
    EXPECT_THROW(pfarm::calibrate(pfarm::calibration_mode::times_only, v{1.0, -1.0}, {}, 10), pfarm::invalid_argument);
    EXPECT_THROW(pfarm::calibrate(pfarm::calibration_mode::univariate, v{1.0, 2.0}, samples(v{0.5, INFINITY}), 10),
                 pfarm::invalid_argument);
    auto missing = samples(v{0.5, 0.7});
    missing[1].availability.reset();
    try {
        pfarm::calibrate(pfarm::calibration_mode::univariate, v{1.0, 2.0}, missing, 10);
        ADD_FAILURE() << "no exception";
    } catch (const pfarm::invalid_argument& e) {  // bad input, naming the reading (a tool shows --availability)
        EXPECT_EQ(e.argument(), "availability");
        EXPECT_NE(e.message().find("worker 1"), std::string::npos) << e.what();
    }
    try {
        pfarm::calibrate(pfarm::calibration_mode::multivariate, v{1.0, 2.0, 3.0}, samples(v{0.5, 0.7, 0.9}), 10);
        ADD_FAILURE() << "no exception";
    } catch (const pfarm::invalid_argument& e) {
        EXPECT_EQ(e.argument(), "latency");
        EXPECT_NE(e.message().find("worker 0"), std::string::npos) << e.what();
    }
}

TEST(Calibrate, DealdynGivesLessToLessAvailableWorkers) {
    const v a{1.0, 0.5, 0.25, 0.8}, l{1e-4, 2e-4, 3e-4, 1e-4};
    const std::vector<pfarm::resource_sample> s = samples(a, l);
    // dealdyn-lr: equal base speed, so worker j's time is 1 / a_j (not linear in a: the fit only smooths it).
    // dealdyn-mv: times that follow eq. 6, t = 5 + 1000 l - 4 a^2 (1.1, 4.2, 5.05, 2.54).
    pfarm::technique_options lr, mv;
    for (std::size_t j = 0; j < 4; ++j) {
        lr.times.push_back(1.0 / a[j]);
        mv.times.push_back(5.0 + 1000.0 * l[j] - 4.0 * a[j] * a[j]);
    }
    for (const char* name : {"dealdyn-lr", "dealdyn-mv"}) {
        const auto r = pfarm::schedule_round_robin(name, 1000, 4, std::string(name) == "dealdyn-lr" ? lr : mv, s);
        std::vector<pfarm::task_count> per_worker(4, 0);
        for (const auto& h : r.handouts) per_worker[static_cast<std::size_t>(h.worker)] += h.work.count;
        EXPECT_GT(per_worker[0], per_worker[3]) << name;
        EXPECT_GT(per_worker[3], per_worker[1]) << name;
        EXPECT_GT(per_worker[1], per_worker[2]) << name;
    }
}

TEST(Calibrate, ModeNames) {
    EXPECT_EQ(pfarm::parse_calibration_mode("univariate"), pfarm::calibration_mode::univariate);
    EXPECT_THROW(pfarm::parse_calibration_mode("bivariate"), pfarm::unknown_name);
}

}  // namespace

namespace {

TEST(Statistics, HeterogeneityAndPerformanceRatios) {
    // The example cluster of Yang, Cheng & Shih, "On development of an efficient parallel loop self-scheduling for
    // grid computing environments" (section 3.2, Example 1): 200, 200, 233, 533, 1500 MHz gives HR = 200 / 1500.
    EXPECT_DOUBLE_EQ(pfarm::heterogeneity_ratio(std::vector<double>{1500, 533, 233, 200, 200}), 200.0 / 1500.0);
    EXPECT_DOUBLE_EQ(pfarm::heterogeneity_ratio(std::vector<double>{3, 3}), 1.0);
    EXPECT_THROW(pfarm::heterogeneity_ratio(std::vector<double>{1, 0}), pfarm::invalid_argument);
    // Yang et al., "A performance-based approach to loop self-scheduling on heterogeneous PC clusters", section
    // 3.1: PF_j = (1/t_j) / sum (1/t_i); times 1, 2, 4 give 4/7, 2/7, 1/7.
    const auto pf = pfarm::performance_ratio(std::vector<double>{1, 2, 4});
    EXPECT_NEAR(pf[0], 4.0 / 7.0, 1e-15);
    EXPECT_NEAR(pf[1], 2.0 / 7.0, 1e-15);
    EXPECT_NEAR(pf[2], 1.0 / 7.0, 1e-15);
}

}  // namespace
