// The emulation input (pfarm/emulation.hpp): the strict number-list parser, the WORKER:TIME:FACTOR load-change
// parsers, and the range check shared by the MPI farm and the simulator; every bad input names its argument.
#include "test_support.hpp"

#include "pfarm/emulation.hpp"
#include "pfarm/error.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace {

using pfarm::testing::expect_invalid;

TEST(EmulationNumbers, ParsesCommaLists) {
    EXPECT_EQ(pfarm::parse_numbers("1,2.5,3e-2", "--weights"), (std::vector<double>{1.0, 2.5, 0.03}));
    EXPECT_EQ(pfarm::parse_numbers("4", "--weights"), (std::vector<double>{4.0}));
    EXPECT_EQ(pfarm::parse_numbers(" 1 , 2 ", "--weights"), (std::vector<double>{1.0, 2.0}));
    EXPECT_EQ(pfarm::parse_numbers("+1,-2,.5,1e-300", "--weights"), (std::vector<double>{1.0, -2.0, 0.5, 1e-300}));
    // Python's repr of floats, as the benchmark scripts write them.
    EXPECT_EQ(pfarm::parse_numbers("1e-05,0.1,123456789.0", "--weights"),
              (std::vector<double>{1e-05, 0.1, 123456789.0}));
}

TEST(EmulationNumbers, RefusesAnythingElseNamingTheArgument) {
    for (const char* bad : {"", " ", "1,,2", "1,", ",1", "12abc", "abc", "nan", "NaN", "inf", "-inf", "infinity",
                            "1e999", "-1e999", "0x10", "1 2", "+-1", "--1", "1,2,nan", "1;2", "1.2.3"}) {
        const auto message = expect_invalid([bad] { pfarm::parse_numbers(bad, "--slowdown"); }, "--slowdown");
        EXPECT_NE(message.find("expected a comma-separated list of numbers"), std::string::npos) << bad << ": " << message;
    }
    EXPECT_NE(expect_invalid([] { pfarm::parse_numbers("1,12abc", "PFARM_SLOWDOWN"); }, "PFARM_SLOWDOWN")
                  .find("'12abc' is not a number"),
              std::string::npos);
    EXPECT_NE(expect_invalid([] { pfarm::parse_numbers("1e999", "x"); }, "x").find("'1e999' is out of range"),
              std::string::npos);
    EXPECT_NE(expect_invalid([] { pfarm::parse_numbers("1,,2", "x"); }, "x").find("item 2 is empty"), std::string::npos);
}

TEST(EmulationLoadChange, ParsesWorkerTimeFactor) {
    const auto c = pfarm::parse_load_change("2:100:1.5", "--load-change");
    EXPECT_EQ(c.worker, 2);
    EXPECT_EQ(c.time, 100.0);
    EXPECT_EQ(c.factor, 1.5);
    const auto d = pfarm::parse_load_change("0:0:0.25", "--load-change");
    EXPECT_EQ(d.worker, 0);
    EXPECT_EQ(d.time, 0.0);
    EXPECT_EQ(d.factor, 0.25);
    const auto e = pfarm::parse_load_change(" 3 : 1e-05 : 7.5 ", "--load-change");
    EXPECT_EQ(e.worker, 3);
    EXPECT_EQ(e.time, 1e-05);
    EXPECT_EQ(e.factor, 7.5);
}

TEST(EmulationLoadChange, RefusesMalformedOrOutOfRangeNamingTheArgument) {
    for (const char* bad : {"", "1:2", "1:2:3:4", "2:100:", ":1:2", "a:1:2", "1.5:0:1", "-1:0:1", "99999999999:0:1",
                            "1:x:1", "1:12abc:2", "1:1:2x", "1:nan:2", "1:inf:2", "1:1:inf", "1:1e999:2",
                            "1:-1:2", "1:1:0", "1:1:-2", "1,2,3", "1:2:3,4:5:6"})
        expect_invalid([bad] { pfarm::parse_load_change(bad, "--load-change"); }, "--load-change");
    const auto message = expect_invalid([] { pfarm::parse_load_change("1:2", "--load-change"); }, "--load-change");
    EXPECT_NE(message.find("'1:2' is not WORKER:TIME:FACTOR"), std::string::npos) << message;
    EXPECT_NE(expect_invalid([] { pfarm::parse_load_change("0:-1:2", "x"); }, "x").find("time -1"), std::string::npos);
    EXPECT_NE(expect_invalid([] { pfarm::parse_load_change("0:1:0", "x"); }, "x").find("factor 0"), std::string::npos);
}

TEST(EmulationLoadChange, ParsesTheEnvironmentListForm) {
    const auto list = pfarm::parse_load_changes("2:100:1.5,0:50:2", "PFARM_LOAD_CHANGES");
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[0].worker, 2);
    EXPECT_EQ(list[1].worker, 0);
    EXPECT_EQ(list[1].time, 50.0);
    EXPECT_EQ(list[1].factor, 2.0);
    EXPECT_EQ(pfarm::parse_load_changes("1:0:3", "PFARM_LOAD_CHANGES").size(), 1u);
    for (const char* bad : {"", " ", "1:2:3,", ",1:2:3", "1:2:3,,4:5:6", "1:2:3,4:5", "1:2:3;4:5:6", "1:nan:2"})
        expect_invalid([bad] { pfarm::parse_load_changes(bad, "PFARM_LOAD_CHANGES"); }, "PFARM_LOAD_CHANGES");
}

TEST(EmulationLoadChange, RangeCheckSharedByTheFarmAndTheSimulator) {
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    EXPECT_NO_THROW(pfarm::check_load_change({0, 0.0, 1.0}, 1, "load_changes"));
    EXPECT_NO_THROW(pfarm::check_load_change({3, 10.0, 0.5}, 4, "load_changes"));
    const pfarm::load_change bad[] = {{4, 1.0, 2.0}, {-1, 1.0, 2.0}, {0, -1.0, 2.0}, {0, nan, 2.0},
                                      {0, inf, 2.0}, {0, 1.0, 0.0}, {0, 1.0, -1.0}, {0, 1.0, inf}, {0, 1.0, nan}};
    for (const auto& c : bad) expect_invalid([c] { pfarm::check_load_change(c, 4, "load_changes"); }, "load_changes");
    const auto message = expect_invalid([] { pfarm::check_load_change({4, 1.0, 2.0}, 4, "--load-change"); }, "--load-change");
    EXPECT_NE(message.find("names worker 4; expected 0..3"), std::string::npos) << message;
}

}  // namespace
