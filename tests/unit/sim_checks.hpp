// Checks the simulator's unit tests share: a farm without a farmer (decentralised, stealing) computed every task once.
#pragma once

#include "pfarm/simulator.hpp"

#include <gtest/gtest.h>

#include <string>

namespace pfarm::testing {

/// The trace's chunks, in task order, cover [0, tasks) once each and agree with the workers' counts and chunks; each
/// was started after it was sent, finished after it started, and its results reached rank 0 after it finished and by
/// the makespan (`strictly`: after and before); the makespan is at least the fluid bound.
inline void expect_trace_covers_loop_once(const sim::result& r, task_count tasks, const std::string& what,
                                          bool strictly = false) {
    task_count next = 0, counted = 0, chunks = 0;
    for (const auto& c : r.trace) {
        ASSERT_EQ(c.first, next) << what << ": a gap or an overlap at task " << next;
        ASSERT_GT(c.count, 0) << what;
        next += c.count;
        EXPECT_LE(c.sent, c.started) << what;
        EXPECT_LT(c.started, c.finished) << what;
        if (strictly) {
            EXPECT_LT(c.finished, c.received) << what;
            EXPECT_LT(c.received, r.makespan) << what;
        } else {
            EXPECT_LE(c.finished, c.received) << what;
            EXPECT_LE(c.received, r.makespan) << what;
        }
    }
    EXPECT_EQ(next, tasks) << what;
    for (const auto& w : r.workers) {
        counted += w.tasks;
        chunks += static_cast<task_count>(w.chunks.size());
    }
    EXPECT_EQ(counted, tasks) << what;
    EXPECT_EQ(chunks, r.chunks) << what;
    EXPECT_EQ(static_cast<task_count>(r.trace.size()), r.chunks) << what;
    EXPECT_GE(r.makespan, r.lower_bound) << what;
}

}  // namespace pfarm::testing
