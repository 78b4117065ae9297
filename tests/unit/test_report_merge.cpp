// Tests of the core's one report merge (pfarm/report_merge.hpp): parts into entries, what derives from them.
#include "pfarm/report_merge.hpp"

#include "pfarm/metrics.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using pfarm::report_part;
using pfarm::task_count;

report_part worker(int rank, task_count tasks, double finish, std::vector<task_count> chunks) {
    report_part p;
    pfarm::chunk_sizes sizes;
    for (task_count c : chunks) sizes.push_back(c);
    p.workers.push_back({rank, tasks, sizes, finish, finish});
    return p;
}

pfarm::calibration_result short_calibration() {
    pfarm::calibration_result c;
    c.times = {5e-6, 8e-6};
    c.fitness = {0.6, 0.4};
    return c;
}

TEST(ReportMerge, EntriesByRankImbalanceOverTheComputingRanksOnly) {
    pfarm::report_entries r;
    pfarm::size_entries(r, 3);
    pfarm::add_part(r, worker(1, 6, 4.0, {1, 5}));
    pfarm::add_part(r, worker(2, 4, 2.0, {1, 3}));
    pfarm::finish_report(r, {1, 2}, pfarm::trace_order::sent);
    EXPECT_EQ(r.tasks_per_rank, (std::vector<task_count>{0, 6, 4}));
    EXPECT_EQ(r.chunks_per_rank[1], (std::vector<task_count>{1, 5}));  // calibration chunk included
    EXPECT_EQ(pfarm::chunk_total(r), 4);
    const std::vector<double> finish{4.0, 2.0};  // rank 0 (the farmer, not computing) is left out
    EXPECT_DOUBLE_EQ(r.percent_imbalance, pfarm::percent_imbalance(finish));
    EXPECT_DOUBLE_EQ(r.cov, pfarm::coefficient_of_variation(finish));
}

TEST(ReportMerge, KAndCalibrationAreTheFirstPartsThatHaveOne) {
    pfarm::report_entries r;
    pfarm::size_entries(r, 2);
    report_part a = worker(0, 1, 1.0, {1});
    report_part b = worker(1, 1, 1.0, {1});
    b.k = 2.0;
    b.calibration = short_calibration();
    b.calibration->k = 1.5;
    report_part c = worker(1, 1, 1.0, {1});
    c.k = 3.0;
    pfarm::add_part(r, a);
    pfarm::add_part(r, b);
    pfarm::add_part(r, c);
    ASSERT_TRUE(r.k.has_value());
    EXPECT_EQ(*r.k, 2.0);
    ASSERT_TRUE(r.calibration.has_value());
    EXPECT_EQ(r.calibration->k, 1.5);
}

TEST(ReportMerge, ShortCalibrationNotedOnMeasuredTimesOnly) {
    for (const auto clock : {pfarm::report_clock::seconds, pfarm::report_clock::simulated}) {
        pfarm::report_entries r;
        pfarm::size_entries(r, 2);
        report_part p = worker(0, 1, 1.0, {1});
        p.calibration = short_calibration();
        pfarm::add_part(r, p);
        pfarm::finish_report(r, {0, 1}, pfarm::trace_order::sent, clock);
        ASSERT_TRUE(r.calibration.has_value());
        if (clock == pfarm::report_clock::seconds)
            EXPECT_NE(r.calibration->note.find("too short to tell the workers' speeds"), std::string::npos) << r.calibration->note;
        else
            EXPECT_TRUE(r.calibration->note.empty()) << r.calibration->note;  // a model's times carry no timing noise
    }
}

TEST(ReportMerge, TraceOrderedBySentOrByFirstTask) {
    for (const auto order : {pfarm::trace_order::sent, pfarm::trace_order::first}) {
        pfarm::report_entries r;
        pfarm::size_entries(r, 2);
        report_part a = worker(0, 2, 3.0, {2});
        a.records.push_back({0, 3, 2, 2.0, 2.0, 3.0, 3.0, false, {}});
        report_part b = worker(1, 3, 3.0, {3});
        b.records.push_back({1, 0, 3, 1.0, 1.0, 3.0, 3.0, false, {}});
        b.records.push_back({1, 5, 1, 0.5, 0.5, 1.0, 1.0, false, {}});
        pfarm::add_part(r, a);
        pfarm::add_part(r, b);
        pfarm::finish_report(r, {0, 1}, order);
        ASSERT_EQ(r.trace.size(), 3u);
        if (order == pfarm::trace_order::sent) {
            EXPECT_EQ(r.trace[0].first, 5);
            EXPECT_EQ(r.trace[1].first, 0);
            EXPECT_EQ(r.trace[2].first, 3);
        } else {
            EXPECT_EQ(r.trace[0].first, 0);
            EXPECT_EQ(r.trace[1].first, 3);
            EXPECT_EQ(r.trace[2].first, 5);
        }
    }
}

}  // namespace
