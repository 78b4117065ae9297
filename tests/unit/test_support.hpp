// Helpers shared by the unit tests.
#pragma once

#include "pfarm/error.hpp"
#include "pfarm/technique.hpp"

#include <gtest/gtest.h>

#include <string>

namespace pfarm::testing {

/// Runs `body` and expects a pfarm::invalid_argument whose argument() is `argument`: for the library, the C++ name
/// ("min_chunk", "task_times"), never a flag (pfarm/error.hpp). Returns its message (empty when nothing was
/// thrown), for tests that check more of it.
template <class F>
std::string expect_invalid(F&& body, const std::string& argument) {
    try {
        body();
        ADD_FAILURE() << "no pfarm::invalid_argument (expected one naming " << argument << ")";
    } catch (const pfarm::invalid_argument& e) {
        EXPECT_EQ(e.argument(), argument) << e.what();
        return e.what();
    }
    return {};
}

/// Options under which every registered technique runs: its required parameters set (the others ignore them).
inline technique_options runnable_options() {
    technique_options o;
    o.chunk = 7;       // css: chunk size (required)
    o.overhead = 0.5;  // fsc: scheduling overhead h
    o.sigma = 0.3;     // fsc: task-time standard deviation
    return o;
}

}  // namespace pfarm::testing
