// The decentralised farm's chunk arithmetic (pfarm/claim_schedule.hpp): which techniques the registry says it
// serves, and that the replayed step sequence is the flat farmer's under round-robin requests.
#include "pfarm/claim_schedule.hpp"
#include "pfarm/error.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/round_robin.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>
#include <string>

namespace {

pfarm::technique_options with_chunk(pfarm::technique_options o = {}) {
    o.chunk = 7;
    o.overhead = 0.01;
    o.sigma = 0.5;
    return o;
}

// The registry's answer, technique by technique: the step-only ones are by_step, dgss is by_worker with known
// weights only, and every other technique (measured, calibrated, weighted with state, two-phase) says none.
TEST(ClaimSchedule, RegistrySaysWhichTechniquesTheDecentralisedFarmServes) {
    const std::set<std::string> by_step = {"static", "deal", "ss", "css", "gss", "fss", "tss", "fiss", "tfss", "fsc", "mfsc"};
    const int p = 4;
    pfarm::technique_options weighted = with_chunk();
    weighted.weights = {1, 2, 3, 4};
    for (const auto& t : pfarm::techniques()) {
        const auto plain = pfarm::make_technique(t.name, with_chunk(), p)->decentralised();
        const auto known = pfarm::make_technique(t.name, weighted, p)->decentralised();
        if (by_step.count(t.name)) {
            EXPECT_EQ(plain, pfarm::claim_form::by_step) << t.name;
            EXPECT_EQ(known, pfarm::claim_form::by_step) << t.name;
        } else if (t.name == "dgss") {
            EXPECT_EQ(plain, pfarm::claim_form::none) << "dgss without weights calibrates";
            EXPECT_EQ(known, pfarm::claim_form::by_worker);
        } else {
            EXPECT_EQ(plain, pfarm::claim_form::none) << t.name;
            EXPECT_EQ(known, pfarm::claim_form::none) << t.name;
        }
    }
}

// Replaying a by_step technique gives, step by step, the chunks the farmer hands out when the workers ask in
// turn (pfarm-chunks' round robin): the decentralised farm hands out the flat farm's chunks, in another order
// of workers only.
TEST(ClaimSchedule, StepSequenceIsTheRoundRobinSequence) {
    for (const std::string name : {"static", "deal", "ss", "css", "gss", "fss", "tss", "fiss", "tfss", "fsc", "mfsc"})
        for (const int p : {1, 3, 7})
            for (const pfarm::task_count tasks : {1, 5, 157, 1000})
                for (const pfarm::task_count min_chunk : {1, 4}) {
                    pfarm::technique_options o = with_chunk();
                    o.min_chunk = min_chunk;
                    const auto expected = pfarm::schedule_round_robin(name, tasks, p, o);
                    pfarm::step_schedule steps(tasks, p, pfarm::make_technique(name, o, p), min_chunk);
                    std::size_t s = 0;
                    for (; s < expected.handouts.size(); ++s) {
                        const pfarm::chunk c = steps.at(static_cast<pfarm::task_count>(s));
                        ASSERT_EQ(c, expected.handouts[s].work) << name << " p=" << p << " I=" << tasks << " step " << s;
                    }
                    EXPECT_EQ(steps.at(static_cast<pfarm::task_count>(s)).count, 0) << name << ": past the end";
                    EXPECT_EQ(steps.at(static_cast<pfarm::task_count>(s) + 1000).count, 0);
                }
}

// A rank asks for its own steps only, in increasing order, skipping the others' steps.
TEST(ClaimSchedule, SkippedStepsAreReplayedAndBackwardsIsAnError) {
    const int p = 4;
    pfarm::step_schedule steps(100, p, pfarm::make_technique("gss", {}, p), 1);
    // gss over 100 with p = 4: 25, 19, 14, 11, 8, 6, ...
    EXPECT_EQ(steps.at(2), (pfarm::chunk{44, 14}));
    EXPECT_EQ(steps.at(2), (pfarm::chunk{44, 14}));  // the same step again (rank 0's progress line reads it)
    EXPECT_EQ(steps.at(4), (pfarm::chunk{69, 8}));
    EXPECT_THROW(steps.at(3), pfarm::internal_error);
}

// A technique with a constant chunk (ss, css) is not replayed: a step's chunk is arithmetic, so a claim costs
// O(1) whatever the number of ranks (the replay made it O(ranks)). The counting technique below would be asked
// a trillion times by a replay; it is asked never.
TEST(ClaimSchedule, ConstantChunksAreComputedNotReplayed) {
    struct counting_fixed final : pfarm::technique {
        long long* asked;
        explicit counting_fixed(long long* a) : asked(a) {}
        std::string name() const override { return "counting"; }
        pfarm::claim_form decentralised() const override { return pfarm::claim_form::by_step; }
        pfarm::task_count constant_chunk() const override { return 3; }
        void start(const pfarm::schedule_context&) override {}
        pfarm::task_count next(int, pfarm::task_count) override { return ++*asked, 3; }
    };
    long long asked = 0;
    const pfarm::task_count tasks = pfarm::task_count{1} << 50;
    pfarm::step_schedule steps(tasks, 64, std::make_unique<counting_fixed>(&asked), 5);  // min_chunk 5 > 3
    EXPECT_EQ(steps.at(7), (pfarm::chunk{35, 5}));
    EXPECT_EQ(steps.at(1'000'000'000'000), (pfarm::chunk{5'000'000'000'000, 5}));
    EXPECT_EQ(steps.at(1'000'000'000'000), (pfarm::chunk{5'000'000'000'000, 5}));  // the same step again
    EXPECT_THROW(steps.at(8), pfarm::internal_error);                               // backwards
    const pfarm::task_count last = tasks / 5;  // tasks = 5 last + 4: the last chunk is clipped to 4
    EXPECT_EQ(steps.at(last), (pfarm::chunk{5 * last, 4}));
    EXPECT_EQ(steps.at(last + 1).count, 0);
    EXPECT_EQ(asked, 0);
}

TEST(ClaimSchedule, OnlyByStepTechniquesReplay) {
    EXPECT_THROW(pfarm::step_schedule(10, 2, pfarm::make_technique("multi", {}, 2), 1), pfarm::invalid_argument);
    pfarm::technique_options o;
    o.weights = {1, 3};
    EXPECT_THROW(pfarm::step_schedule(10, 2, pfarm::make_technique("dgss", o, 2), 1), pfarm::invalid_argument);
}

// dgss with known weights: a claim is ceil(R V_j / V) of what remains, clipped like the farmer's.
TEST(ClaimSchedule, ByWorkerClaimIsTheWeightedShareOfWhatRemains) {
    pfarm::technique_options o;
    o.weights = {1, 3};
    auto dgss = pfarm::make_technique("dgss", o, 2);
    dgss->start({100, 100, 2, nullptr});
    EXPECT_EQ(pfarm::claim_for(*dgss, 1, 100, 0, 1), (pfarm::chunk{0, 75}));
    EXPECT_EQ(pfarm::claim_for(*dgss, 0, 100, 75, 1), (pfarm::chunk{75, 7}));    // ceil(25 / 4)
    EXPECT_EQ(pfarm::claim_for(*dgss, 0, 100, 75, 10), (pfarm::chunk{75, 10}));  // min_chunk
    EXPECT_EQ(pfarm::claim_for(*dgss, 1, 100, 98, 10), (pfarm::chunk{98, 2}));   // cut to what remains
    EXPECT_EQ(pfarm::claim_for(*dgss, 1, 100, 100, 1).count, 0);
}

}  // namespace
