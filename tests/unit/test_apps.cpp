// The apps' compute kernels, without MPI: what each task computes, against direct formulas, the sequential
// loops and known results (apps/*/README.md). The kernels are built with the apps (PFARM_BUILD_TOOLS); without
// them this file holds no tests.
#if __has_include("mandelbrot_kernel.hpp") && __has_include("adjoint_kernel.hpp") && \
    __has_include("matmul_kernel.hpp") && __has_include("circuit_kernel.hpp")
#include "test_support.hpp"
#include "adjoint_kernel.hpp"
#include "mandelbrot_kernel.hpp"
#include "matmul_kernel.hpp"
#include "circuit_kernel.hpp"

#include "pfarm/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

namespace {

using pfarm::testing::expect_invalid;

// ---- Mandelbrot (Han & Chronopoulos, "Scalable loop self-scheduling schemes implemented on large-scale
// clusters", section V.A: MSetLSM / MSetLevel) ----

namespace mb = pfarm::apps::mandelbrot;

TEST(AppMandelbrot, LevelFollowsMSetLevel) {
    EXPECT_EQ(mb::level(0.0, 0.0, 100, 2.0), 100u);   // the origin never escapes
    EXPECT_EQ(mb::level(-1.0, 0.0, 50, 2.0), 50u);    // period-2 cycle 0, -1, 0, ...
    EXPECT_EQ(mb::level(0.5, 0.0, 100, 4.0), 5u);     // 0.5, 0.75, 1.0625, 1.63, 3.15: out after 5
    EXPECT_EQ(mb::level(0.5, 0.0, 100, 2.0), 4u);
    EXPECT_EQ(mb::level(1.0, 1.0, 100, 2.0), 1u);     // x^2 + y^2 = 2 is not < 2
    EXPECT_EQ(mb::level(0.25, 0.0, 1000, 4.0), 1000u);  // the cusp belongs to the set
    EXPECT_EQ(mb::level(0.26, 0.0, 1000, 4.0), 30u);
    // The paper's bailout 2 loses the antenna: c = -1.9 is in the set, yet x^2 = 3.61 stops MSetLevel at once.
    EXPECT_EQ(mb::level(-1.9, 0.0, 100, 4.0), 100u);
    EXPECT_EQ(mb::level(-1.9, 0.0, 100, 2.0), 1u);
}

TEST(AppMandelbrot, ColumnsAndRowsMatchTheSequentialLoop) {
    mb::params p;
    p.nx = 37, p.ny = 23, p.maxiter = 300;
    const auto mset = mb::sequential(p);
    ASSERT_EQ(mset.size(), 37u * 23u);
    std::vector<std::uint32_t> col(23), row(37);
    for (int ix = 0; ix < p.nx; ++ix) {
        mb::column(p, ix, col);
        for (int iy = 0; iy < p.ny; ++iy) ASSERT_EQ(col[static_cast<std::size_t>(iy)], mset[static_cast<std::size_t>(ix * 23 + iy)]);
    }
    for (int iy = 0; iy < p.ny; ++iy) {
        mb::row(p, iy, row);
        for (int ix = 0; ix < p.nx; ++ix) ASSERT_EQ(row[static_cast<std::size_t>(ix)], mset[static_cast<std::size_t>(ix * 23 + iy)]);
    }
    // MSetLSM's grid includes both ends of the domain.
    EXPECT_DOUBLE_EQ(mb::cx(p, 0), -2.0);
    EXPECT_DOUBLE_EQ(mb::cx(p, p.nx - 1), 2.0);
    EXPECT_DOUBLE_EQ(mb::cy(p, p.ny - 1), 2.0);
}

TEST(AppMandelbrot, InsideCountEstimatesTheKnownArea) {
    // The Mandelbrot set's area is about 1.5066 (Förstemann 2012); the grid's inside fraction of [-2, 2]^2
    // estimates it. Pixel counting with finite maxiter overestimates slightly.
    mb::params p;
    p.nx = p.ny = 201, p.maxiter = 2000, p.bailout = 4.0;
    const auto s = mb::summarize(mb::sequential(p), p.maxiter);
    const double area = 16.0 * static_cast<double>(s.inside) / (201.0 * 201.0);
    EXPECT_GT(area, 1.40);
    EXPECT_LT(area, 1.70);
}

TEST(AppMandelbrot, SummaryIsPositionSensitive) {
    const std::vector<std::uint32_t> a{1, 2, 3, 10}, b{2, 1, 3, 10};
    const auto sa = mb::summarize(a, 10), sb = mb::summarize(b, 10);
    EXPECT_NE(sa.hash, sb.hash);
    EXPECT_EQ(sa.iterations, 16u);
    EXPECT_EQ(sa.inside, 1u);
}

TEST(AppMandelbrot, WritesAPgm) {
    mb::params p;
    p.nx = 5, p.ny = 3, p.maxiter = 10;
    std::ostringstream out;
    mb::write_pgm(out, p, mb::sequential(p));
    const std::string text = out.str();
    ASSERT_EQ(text.rfind("P5\n5 3\n255\n", 0), 0u);
    EXPECT_EQ(text.size(), std::string("P5\n5 3\n255\n").size() + 15);
}

TEST(AppMandelbrot, DefaultsAreSeed000sWithTheEscapeRadiusTwo) {
    const mb::params p;
    EXPECT_EQ(p.bailout, 4.0);  // x^2 + y^2 < 4, i.e. |z| < 2; the pseudo-code's 2.0 is a typo (--bailout 2)
    EXPECT_EQ(p.xmin, -2.0);
    EXPECT_EQ(p.xmax, 2.0);
    EXPECT_EQ(p.ymin, -2.0);
    EXPECT_EQ(p.ymax, 2.0);
}

TEST(AppMandelbrot, ChecksumIsTheTotalIterationCount) {
    mb::params p;
    p.nx = 7, p.ny = 5, p.maxiter = 50;
    std::uint64_t total = 0;
    for (int ix = 0; ix < p.nx; ++ix)
        for (int iy = 0; iy < p.ny; ++iy) total += mb::level(mb::cx(p, ix), mb::cy(p, iy), p.maxiter, p.bailout);
    EXPECT_EQ(mb::summarize(mb::sequential(p), p.maxiter).iterations, total);
}

TEST(AppMandelbrot, ParsesTheWindow) {
    mb::params p;
    mb::parse_window("-1.8,0.5,-1.2,1.2", p);
    EXPECT_EQ(p.xmin, -1.8);
    EXPECT_EQ(p.xmax, 0.5);
    EXPECT_EQ(p.ymin, -1.2);
    EXPECT_EQ(p.ymax, 1.2);
    EXPECT_DOUBLE_EQ(mb::cx(p, 0), -1.8);
    for (const char* bad : {"", "1,2,3", "1,2,3,4,5", "a,1,2,3", "2,1,0,1", "0,1,1,1", "0,1,0,inf"}) {
        mb::params q;
        expect_invalid([&] { mb::parse_window(bad, q); }, "--window");
    }
}

TEST(AppMandelbrot, RejectsBadImages) {
    mb::params p;
    p.nx = 1;
    expect_invalid([&] { mb::validate(p); }, "--width");
    p = {}, p.ny = 0;
    expect_invalid([&] { mb::validate(p); }, "--height");
    p = {}, p.maxiter = 0;
    expect_invalid([&] { mb::validate(p); }, "--max-iterations");
    p = {}, p.xmax = p.xmin;
    expect_invalid([&] { mb::validate(p); }, "--window");
    p = {}, p.ymin = std::numeric_limits<double>::quiet_NaN();
    expect_invalid([&] { mb::validate(p); }, "--window");
    p = {}, p.bailout = -1;
    expect_invalid([&] { mb::validate(p); }, "--bailout");
    EXPECT_NO_THROW(mb::validate(mb::params{}));
    expect_invalid([] { mb::parse_decomposition("diagonals"); }, "--by");
    EXPECT_EQ(mb::parse_decomposition("rows"), mb::decomposition::rows);
}

// ---- Adjoint convolution (Han & Chronopoulos, section V.A) ----

namespace cv = pfarm::apps::adjoint;

TEST(AppAdjoint, ElementIsTheLoopOfSeed000) {
    const cv::problem p = cv::make_problem(3, 42);  // N*N = 9 iterations
    ASSERT_EQ(p.iterations(), 9);
    // The paper's loop with 1-based arrays, literally.
    std::vector<double> a(10), b(10), c(9);
    for (int i = 1; i <= 9; ++i) a[static_cast<std::size_t>(i)] = p.a0[static_cast<std::size_t>(i - 1)], b[static_cast<std::size_t>(i)] = p.b[static_cast<std::size_t>(i - 1)];
    for (int k = 0; k < 9; ++k) c[static_cast<std::size_t>(k)] = p.c[static_cast<std::size_t>(k)];
    for (int I = 1; I <= 9; ++I)
        for (int J = I; J <= 9; ++J) a[static_cast<std::size_t>(I)] += p.x * b[static_cast<std::size_t>(J)] * c[static_cast<std::size_t>(J - I)];
    for (int I = 1; I <= 9; ++I) EXPECT_NEAR(cv::element(p, I), a[static_cast<std::size_t>(I)], 1e-14) << "I = " << I;
    // The last iteration has one term: A(N^2) + X B(N^2) C(0).
    EXPECT_DOUBLE_EQ(cv::element(p, 9), p.a0[8] + p.x * p.b[8] * p.c[0]);
}

TEST(AppAdjoint, SequentialAgreesWithTheTasks) {
    const cv::problem p = cv::make_problem(9, 7);
    const auto a = cv::sequential(p);
    ASSERT_EQ(a.size(), 81u);
    std::vector<double> tasks(81);
    for (std::int64_t i = 1; i <= 81; ++i) tasks[static_cast<std::size_t>(i - 1)] = cv::element(p, i);
    const auto c = cv::compare(tasks, a);
    EXPECT_TRUE(c.ok());
    EXPECT_LT(c.max_abs_error, 1e-12);
    tasks[40] += 1e-3;
    EXPECT_EQ(cv::compare(tasks, a).mismatches, 1);
    tasks[40] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_FALSE(cv::compare(tasks, a).ok());
}

TEST(AppAdjoint, ArraysComeFromTheSeed) {
    const cv::problem p = cv::make_problem(5, 1), q = cv::make_problem(5, 1), r = cv::make_problem(5, 2);
    EXPECT_EQ(p.b, q.b);
    EXPECT_EQ(p.c, q.c);
    EXPECT_EQ(p.x, q.x);
    EXPECT_NE(p.b, r.b);
    for (const auto* v : {&p.a0, &p.b, &p.c})
        for (double e : *v) EXPECT_TRUE(e >= -1.0 && e < 1.0) << e;
    expect_invalid([] { cv::make_problem(0, 1); }, "--size");
    expect_invalid([] { cv::make_problem(cv::max_n + 1, 1); }, "--size");
}

// ---- Matrix multiplication (Yang, Cheng & Shih, "On development of an efficient parallel loop self-scheduling for
// grid computing environments"; Yang et al., "A performance-based approach to loop self-scheduling on heterogeneous
// PC clusters") ----

namespace mm = pfarm::apps::matmul;

std::vector<double> naive_product(const mm::problem& p) {
    const auto n = static_cast<std::size_t>(p.n);
    std::vector<double> z(n * n, 0.0);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t k = 0; k < n; ++k)
            for (std::size_t j = 0; j < n; ++j) z[i * n + k] += p.x[i * n + j] * p.y[j * n + k];
    return z;
}

TEST(AppMatmul, ShapesSetTheWorkOfEachRow) {
    const int n = 10;
    const auto u = mm::make_problem(n, mm::shape::uniform, 3);
    const auto inc = mm::make_problem(n, mm::shape::increasing, 3);
    const auto dec = mm::make_problem(n, mm::shape::decreasing, 3);
    const auto rnd = mm::make_problem(n, mm::shape::random, 3);
    for (int i = 0; i < n; ++i) {
        EXPECT_EQ(u.work(i), n * n);
        EXPECT_EQ(inc.work(i), (i + 1) * n);
        EXPECT_EQ(dec.work(i), (n - i) * n);
        EXPECT_GE(rnd.work(i), n);
        EXPECT_LE(rnd.work(i), n * n);
    }
    // X is zero outside each row's band: lower triangular for increasing, upper for decreasing.
    for (std::size_t i = 0; i < 10; ++i)
        for (std::size_t j = 0; j < 10; ++j) {
            if (j > i) {
                EXPECT_EQ(inc.x[i * 10 + j], 0.0);
            }
            if (j < i) {
                EXPECT_EQ(dec.x[i * 10 + j], 0.0);
            }
        }
    EXPECT_EQ(u.y, inc.y);  // Y does not depend on the shape
    std::set<std::int64_t> lengths;
    for (int i = 0; i < n; ++i) lengths.insert(rnd.work(i));
    EXPECT_GT(lengths.size(), 3u);
    expect_invalid([] { mm::parse_shape("triangular"); }, "--shape");
    expect_invalid([] { mm::make_problem(0, mm::shape::uniform, 1); }, "--size");
    EXPECT_EQ(mm::parse_shape("decreasing"), mm::shape::decreasing);
}

TEST(AppMatmul, RowsMakeTheProduct) {
    for (const auto s : {mm::shape::uniform, mm::shape::increasing, mm::shape::decreasing, mm::shape::random}) {
        const auto p = mm::make_problem(17, s, 11);
        const auto expected = naive_product(p);
        std::vector<double> z(17 * 17);
        for (int i = 0; i < 17; ++i) mm::row(p, i, std::span<double>(z).subspan(static_cast<std::size_t>(i) * 17, 17));
        EXPECT_TRUE(mm::compare(z, expected, 1e-13).ok()) << mm::to_string(s);
        EXPECT_TRUE(mm::compare(mm::sequential(p), expected, 1e-13).ok()) << mm::to_string(s);
        EXPECT_LT(mm::freivalds_error(p, z, 3, 5), 1e-13) << mm::to_string(s);
    }
}

TEST(AppMatmul, ClosedFormWithTheIdentity) {
    // X upper triangular times Y: with Y = I, Z is X itself.
    auto p = mm::make_problem(6, mm::shape::decreasing, 2);
    std::fill(p.y.begin(), p.y.end(), 0.0);
    for (std::size_t i = 0; i < 6; ++i) p.y[i * 6 + i] = 1.0;
    std::vector<double> z(6);
    for (int i = 0; i < 6; ++i) {
        mm::row(p, i, z);
        for (std::size_t k = 0; k < 6; ++k) EXPECT_EQ(z[k], p.x[static_cast<std::size_t>(i) * 6 + k]);
    }
}

TEST(AppMatmul, ChecksCatchAWrongRow) {
    const auto p = mm::make_problem(64, mm::shape::random, 9);
    auto z = mm::sequential(p);
    EXPECT_LT(mm::freivalds_error(p, z, 2, 1), 1e-12);
    for (std::size_t k = 0; k < 64; ++k) z[5 * 64 + k] = 0.0;  // a task whose result never arrived
    EXPECT_GT(mm::freivalds_error(p, z, 2, 1), 1e-6);
    EXPECT_EQ(mm::compare(z, mm::sequential(p)).mismatches, 64);
}

// ---- Circuit satisfiability (Yang et al., section 4.4; Quinn's 16-input circuit) ----

namespace st = pfarm::apps::circuit;

TEST(AppCircuit, TheCircuitHasItsNineKnownSolutions) {
    const auto known = st::known_solutions();
    ASSERT_EQ(known.size(), 9u);
    for (const auto z : known) EXPECT_TRUE(st::check_circuit(z)) << st::to_bits(z);
    EXPECT_EQ(st::sequential(), known);
    // By hand: the clauses force v2..v8 = 1011111 and v12..v15 = 1001; v0 v1 and v9 v10 v11 have 3 choices each.
    for (const auto z : known) {
        const std::string bits = st::to_bits(z);
        EXPECT_EQ(bits.substr(2, 7), "1011111");
        EXPECT_EQ(bits.substr(12), "1001");
    }
    EXPECT_EQ(st::to_bits(known.front()), "1010111110011001");
}

TEST(AppCircuit, BlocksCoverEveryInputOnce) {
    for (const std::uint32_t tasks : {1u, 3u, 7u, 1000u, 1024u, 65535u, 65536u}) {
        std::uint32_t next = 0, widest = 0;
        for (std::uint32_t t = 0; t < tasks; ++t) {
            const auto b = st::task_block(t, tasks);
            ASSERT_EQ(b.first, next) << tasks;
            next += b.count;
            widest = std::max(widest, b.count);
            ASSERT_GE(b.count + 1, st::task_width(tasks));  // sizes differ by at most 1
        }
        EXPECT_EQ(next, st::combinations) << tasks;
        EXPECT_EQ(widest, st::task_width(tasks)) << tasks;
    }
}

TEST(AppCircuit, TasksFindTheSolutions) {
    for (const std::uint32_t tasks : {1u, 7u, 1000u}) {
        const std::uint32_t width = st::task_width(tasks);
        std::vector<std::uint8_t> flags(std::size_t{tasks} * width, 7);
        for (std::uint32_t t = 0; t < tasks; ++t)
            st::run_task(t, tasks, tasks == 7 ? 3 : 1, std::span<std::uint8_t>(flags).subspan(std::size_t{t} * width, width));
        EXPECT_EQ(st::solutions(flags, tasks), st::known_solutions()) << tasks;
        EXPECT_EQ(std::count(flags.begin(), flags.end(), 1), 9) << tasks;  // padding is cleared too
    }
}

TEST(AppCircuit, RejectsBadSizes) {
    expect_invalid([] { st::validate(0, 1); }, "--tasks");
    expect_invalid([] { st::validate(65537, 1); }, "--tasks");
    expect_invalid([] { st::validate(8, 0); }, "--repeat");
    EXPECT_NO_THROW(st::validate(65536, 1));
    expect_invalid([] { st::validate(17, 1, 16); }, "--tasks");
}

TEST(AppCircuit, TheBuiltInCircuitAsClausesIsQuinns) {
    const st::circuit c = st::builtin();
    EXPECT_EQ(c.variables, 16);
    EXPECT_EQ(c.clauses.size(), 18u);
    for (std::uint32_t z = 0; z < st::combinations; ++z) ASSERT_EQ(c.satisfied(z), st::check_circuit(z)) << z;
    EXPECT_EQ(st::sequential(c), st::known_solutions());
}

TEST(AppCircuit, ReadsAFileCircuitAndFindsItsSolutions) {
    // tests/data/circuit-small.txt: (x0 xor x1) and x2 and (x3 implies x0): inputs 5, 6, 13.
    std::istringstream in("# comment\n\nvariables 4\nx0 | x1\n!x0 | !x1   # not both\nx2\n~x3 | x0\n");
    const st::circuit c = st::parse_circuit(in, "small");
    EXPECT_EQ(c.variables, 4);
    ASSERT_EQ(c.clauses.size(), 4u);
    EXPECT_EQ(c.clauses[1], (std::vector<st::literal>{{0, true}, {1, true}}));
    const std::vector<std::uint32_t> expected{5, 6, 13};
    EXPECT_EQ(st::sequential(c), expected);
    EXPECT_EQ(st::to_bits(5, 4), "1010");
    EXPECT_EQ(st::to_bits(13, 4), "1011");
    for (const std::uint32_t tasks : {1u, 3u, 16u}) {
        const std::uint32_t width = st::task_width(tasks, c.combinations());
        std::vector<std::uint8_t> flags(std::size_t{tasks} * width, 7);
        for (std::uint32_t t = 0; t < tasks; ++t)
            st::run_task(c, t, tasks, 2, std::span<std::uint8_t>(flags).subspan(std::size_t{t} * width, width));
        EXPECT_EQ(st::solutions(flags, tasks, c.combinations()), expected) << tasks;
    }
}

TEST(AppCircuit, RejectsBadCircuitFiles) {
    for (const char* bad : {"", "x0 | x1\n", "variables 0\nx0\n", "variables 27\nx0\n", "variables 2\n",
                            "variables 2\nx2\n", "variables 2\nx0 | y1\n", "variables 2\nx0 ||x1\n",
                            "variables 2 3\nx0\n"}) {
        std::istringstream in(bad);
        expect_invalid([&] { st::parse_circuit(in, "bad"); }, "--circuit");
    }
    expect_invalid([] { st::read_circuit("/nonexistent/circuit.txt"); }, "--circuit");
}

}  // namespace

#endif  // the apps' kernels
