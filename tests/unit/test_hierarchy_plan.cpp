// The hierarchy plan (pfarm/hierarchy_plan.hpp) that the MPI hierarchical farmer and the simulator share: contiguous
// grouping, groups from any assignment with or without the supermaster's own worker, the slices of the per-worker
// lists, the supermaster's technique and options in unit order, the expected shares, the sessions' options, and
// the errors, each naming its argument.
#include "test_support.hpp"
#include "pfarm/error.hpp"
#include "pfarm/hierarchy_plan.hpp"
#include "pfarm/master_session.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace {

using pfarm::hierarchy_plan;
using pfarm::hierarchy_plan_options;
using pfarm::task_count;
using pfarm::technique_options;

hierarchy_plan_options plan_options(const std::string& technique, const technique_options& o, task_count tasks,
                                    const std::string& master_technique = "") {
    hierarchy_plan_options p;
    p.technique = technique;
    p.master_technique = master_technique;
    p.options = o;
    p.tasks = tasks;
    return p;
}

/// The argument named by the invalid_argument `body` throws ("" when it throws none).
std::string argument_of(const std::function<void()>& body) {
    try {
        body();
    } catch (const pfarm::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()), e.argument() + ": " + e.message());
        return e.argument();
    }
    return "";
}

TEST(HierarchyPlan, ContiguousGroupsAreAsEqualAsPossibleTheFirstOnesLarger) {
    EXPECT_EQ(hierarchy_plan::contiguous(7, 3), (std::vector<int>{0, 0, 0, 1, 1, 2, 2}));
    EXPECT_EQ(hierarchy_plan::contiguous(12, 5), (std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 4, 4}));
    EXPECT_EQ(hierarchy_plan::contiguous(4, 4), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(hierarchy_plan::contiguous(5, 1), (std::vector<int>(5, 0)));
    EXPECT_EQ(argument_of([] { (void)hierarchy_plan::contiguous(4, 5); }), "masters");
    EXPECT_EQ(argument_of([] { (void)hierarchy_plan::contiguous(4, 0); }), "masters");
    try {
        (void)hierarchy_plan::contiguous(12, 13);
        ADD_FAILURE() << "13 masters over 12 workers";
    } catch (const pfarm::invalid_argument& e) {
        EXPECT_EQ(e.message(), "is 13; expected 1..12 (at most one master per worker) for the hierarchical farmer");
    }
}

TEST(HierarchyPlan, GroupsFromAnAssignmentWithTheSupermastersOwnWorker) {
    // Workers 0..4: worker 2 is the supermaster's own, groups interleaved.
    const hierarchy_plan plan({1, 0, -1, 0, 1}, plan_options("gss", technique_options{}, 100));
    EXPECT_EQ(plan.workers(), 5);
    EXPECT_EQ(plan.groups(), 2);
    EXPECT_EQ(plan.members(0), (std::vector<int>{1, 3}));
    EXPECT_EQ(plan.members(1), (std::vector<int>{0, 4}));
    EXPECT_EQ(plan.size(1), 2);
    EXPECT_EQ(plan.own_worker(), 2);
    EXPECT_TRUE(plan.top_computes());
    EXPECT_EQ(plan.own(), 1);
    EXPECT_EQ(plan.units(), 3);

    const hierarchy_plan plain(hierarchy_plan::contiguous(5, 2), plan_options("gss", technique_options{}, 100));
    EXPECT_FALSE(plain.top_computes());
    EXPECT_EQ(plain.own_worker(), -1);
    EXPECT_EQ(plain.units(), 2);
    EXPECT_EQ(plain.members(0), (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(plain.members(1), (std::vector<int>{3, 4}));
}

TEST(HierarchyPlan, EachGroupGetsItsWorkersSliceOfThePerWorkerLists) {
    technique_options o;
    o.weights = {1, 2, 3, 4, 5};
    o.times = {0.5, 1, 1.5, 2, 2.5};
    o.run_queue = {1, 1, 2, 1, 3};
    o.min_chunk = 2;
    auto p = plan_options("dgss", o, 1000);
    p.group = {.prefetch = true, .reclaim = true, .request_cost = 0.25, .keep_records = true};
    const hierarchy_plan plan({1, 0, -1, 0, 1}, p);
    EXPECT_EQ(plan.group_options(0).weights, (std::vector<double>{2, 4}));
    EXPECT_EQ(plan.group_options(0).times, (std::vector<double>{1, 2}));
    EXPECT_EQ(plan.group_options(0).run_queue, (std::vector<double>{1, 1}));
    EXPECT_EQ(plan.group_options(1).weights, (std::vector<double>{1, 5}));
    EXPECT_EQ(plan.group_options(1).run_queue, (std::vector<double>{1, 3}));
    EXPECT_EQ(plan.group_options(1).min_chunk, 2) << "the other options are the workers'";
    EXPECT_EQ(plan.make_group(1)->name(), "dgss");

    const pfarm::master_session_options mo = plan.session_options(1);
    EXPECT_EQ(mo.powers, (std::vector<double>{1, 5}));
    EXPECT_EQ(mo.group.min_chunk, 2);
    EXPECT_TRUE(mo.group.prefetch);
    EXPECT_TRUE(mo.group.reclaim);
    EXPECT_EQ(mo.group.request_cost, 0.25);
    EXPECT_TRUE(mo.group.keep_records);
    EXPECT_EQ(mo.expected, plan.expected(1));

    // Without lists, the slices stay empty and the powers default in the session (1 each).
    const hierarchy_plan bare(hierarchy_plan::contiguous(4, 2), plan_options("gss", technique_options{}, 10));
    EXPECT_TRUE(bare.group_options(0).weights.empty());
    EXPECT_TRUE(bare.group_options(1).times.empty());
    EXPECT_TRUE(bare.session_options(0).powers.empty());
}

TEST(HierarchyPlan, TheSupermastersOptionsAreMasterOptionsOverItsUnitsInUnitOrder) {
    technique_options o;
    o.weights = {1, 2, 3, 4, 5};
    o.times = {1, 1, 2, 4, 4};
    const hierarchy_plan plan({1, 0, -1, 0, 1}, plan_options("dgss", o, 1000));
    // Units: its own worker (worker 2), group 0 (workers 1, 3), group 1 (workers 0, 4).
    technique_options by_unit = o;
    by_unit.weights = {3, 2, 4, 1, 5};
    by_unit.times = {2, 1, 4, 1, 4};
    const technique_options expected = pfarm::master_options(by_unit, {1, 2, 2}, "dgss", true);
    EXPECT_EQ(plan.top_technique(), "dgss") << "a weighted workers' technique is the supermaster's by default";
    EXPECT_EQ(plan.top_options().weights, (std::vector<double>{3, 6, 6}));
    EXPECT_EQ(plan.top_options().weights, expected.weights);
    EXPECT_EQ(plan.top_options().times, expected.times);
    EXPECT_EQ(plan.top_options().min_chunk, 2) << "at least the largest group";
    EXPECT_EQ(plan.make_top()->name(), "dgss");
    EXPECT_FALSE(plan.top_needs().with_every_request.empty()) << "dgss reads the run queue with every request";
    EXPECT_TRUE(plan.session_options(0).readings_each);

    // Contiguous groups: the simulator's own reading, master_options over the lists as given.
    technique_options c;
    c.weights = {1, 2, 3, 4, 5, 6, 7};
    const hierarchy_plan contiguous(hierarchy_plan::contiguous(7, 3), plan_options("gss", c, 500));
    const technique_options direct = pfarm::master_options(c, {3, 2, 2}, "fss", true);
    EXPECT_EQ(contiguous.top_technique(), "fss");
    EXPECT_EQ(contiguous.top_options().weights, direct.weights);
    EXPECT_EQ(contiguous.top_options().weights, (std::vector<double>{6, 9, 13}));
    EXPECT_EQ(contiguous.top_options().factor, 4.0) << "the default fss stages a quarter of what is left";
    EXPECT_FALSE(contiguous.session_options(0).readings_each) << "fss reads nothing";
    EXPECT_EQ(contiguous.units(), 3);

    const hierarchy_plan given(hierarchy_plan::contiguous(7, 3), plan_options("gss", c, 500, "fss"));
    EXPECT_EQ(given.top_technique(), "fss");
    EXPECT_FALSE(given.top_options().factor.has_value()) << "a technique given keeps its own default factor";

    const pfarm::farmer_session_options top = contiguous.top_session();
    EXPECT_EQ(top.min_chunk, contiguous.top_options().min_chunk);
    EXPECT_TRUE(top.prefetch);
    EXPECT_EQ(top.depth, pfarm::master_depth);
    EXPECT_FALSE(top.reclaim);
    EXPECT_FALSE(top.pool);
}

TEST(HierarchyPlan, EachGroupExpectsItsShareOfTheUnitsWeightsAtLeastOneTask) {
    technique_options o;
    o.weights = {1, 1, 2, 4};
    const hierarchy_plan plan({0, 0, 1, -1}, plan_options("gss", o, 1000));
    // Units' weights: own 4, group 0 2, group 1 2: shares 1/4 each.
    EXPECT_EQ(plan.expected(0), 250);
    EXPECT_EQ(plan.expected(1), 250);
    const hierarchy_plan three(hierarchy_plan::contiguous(3, 3), plan_options("gss", technique_options{}, 10));
    EXPECT_EQ(three.expected(0), 3);  // 10 / 3 rounded
    EXPECT_EQ(three.expected(2), 3);
    const hierarchy_plan tiny(hierarchy_plan::contiguous(4, 4), plan_options("gss", technique_options{}, 1));
    EXPECT_EQ(tiny.expected(3), 1) << "a share rounding to none still starts with one task";
}

TEST(HierarchyPlan, BadInputIsAnErrorNamingTheArgument) {
    const auto plan = [](std::vector<int> group_of, hierarchy_plan_options o) {
        return [group_of, o] { (void)hierarchy_plan(group_of, o); };
    };
    const auto gss = plan_options("gss", technique_options{}, 100);
    EXPECT_EQ(argument_of(plan({}, gss)), "group_of");
    EXPECT_EQ(argument_of(plan({0, 2}, gss)), "group_of") << "group 1 has no worker";
    EXPECT_EQ(argument_of(plan({-1, 0, -1}, gss)), "group_of") << "two own workers";
    EXPECT_EQ(argument_of(plan({0, -2}, gss)), "group_of");
    EXPECT_EQ(argument_of(plan({-1}, gss)), "group_of") << "no master";
    technique_options o;
    o.weights = {1, 2};
    EXPECT_EQ(argument_of(plan({0, 0, 1}, plan_options("dgss", o, 100))), "weights");
    o = {};
    o.times = {1, 2, 3, 4};
    EXPECT_EQ(argument_of(plan({0, 0, 1}, plan_options("gss", o, 100))), "times");
    o = {};
    o.run_queue = {1};
    EXPECT_EQ(argument_of(plan({0, 0, 1}, plan_options("gss", o, 100))), "run_queue");
    EXPECT_EQ(argument_of(plan({0, 1}, plan_options("gss", {}, 0))), "tasks");
    try {
        (void)hierarchy_plan({0, 1}, plan_options("gss", {}, 100, "nosuch"));
        ADD_FAILURE() << "an unknown supermaster technique";
    } catch (const pfarm::unknown_name& e) {
        EXPECT_EQ(e.argument(), "master_technique");
    }
    EXPECT_EQ(argument_of(plan({0, 1}, plan_options("nosuch", {}, 100))), "technique");
    // A technique's own error, in a group: css needs its chunk size.
    EXPECT_FALSE(argument_of(plan({0, 1}, plan_options("css", {}, 100))).empty());
    EXPECT_EQ(argument_of(plan({0, 1}, plan_options("css", pfarm::testing::runnable_options(), 100))), "");
}

}  // namespace
