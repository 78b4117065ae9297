#include "sat_kernel.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <string>

namespace pfarm::apps::sat {

std::vector<std::uint32_t> known_solutions() {
    std::vector<std::uint32_t> z;
    for (const std::string_view text : known_solutions_text) {
        std::uint32_t value = 0;
        for (std::size_t i = 0; i < text.size(); ++i)
            if (text[i] == '1') value |= 1u << i;
        z.push_back(value);
    }
    std::sort(z.begin(), z.end());
    return z;
}

void validate(std::int64_t tasks, std::int64_t repeat) {
    if (tasks < 1 || tasks > static_cast<std::int64_t>(combinations))
        throw invalid_argument("--tasks", "is " + std::to_string(tasks) + "; expected 1 to " + std::to_string(combinations));
    if (repeat < 1 || repeat > 1'000'000'000)
        throw invalid_argument("--repeat", "is " + std::to_string(repeat) + "; expected 1 to 1000000000");
}

block task_block(std::uint32_t task, std::uint32_t tasks) {
    const auto first = static_cast<std::uint32_t>(std::uint64_t{task} * combinations / tasks);
    const auto end = static_cast<std::uint32_t>((std::uint64_t{task} + 1) * combinations / tasks);
    return {first, end - first};
}

std::uint32_t task_width(std::uint32_t tasks) { return (combinations + tasks - 1) / tasks; }

void run_task(std::uint32_t task, std::uint32_t tasks, int repeat, std::span<std::uint8_t> flags) {
    const block b = task_block(task, tasks);
    std::fill(flags.begin(), flags.end(), std::uint8_t{0});
    for (std::uint32_t k = 0; k < b.count; ++k) {
        bool satisfied = false;
        for (int r = 0; r < repeat; ++r) {
            // Read through a volatile so that the compiler evaluates the circuit every time.
            volatile std::uint32_t z = b.first + k;
            satisfied = check_circuit(z);
        }
        flags[k] = satisfied ? 1 : 0;
    }
}

std::vector<std::uint32_t> solutions(std::span<const std::uint8_t> flags, std::uint32_t tasks) {
    std::vector<std::uint32_t> found;
    const std::uint32_t width = task_width(tasks);
    for (std::uint32_t t = 0; t < tasks; ++t) {
        const block b = task_block(t, tasks);
        for (std::uint32_t k = 0; k < b.count; ++k)
            if (flags[std::size_t{t} * width + k]) found.push_back(b.first + k);
    }
    return found;
}

std::vector<std::uint32_t> sequential() {
    std::vector<std::uint32_t> found;
    for (std::uint32_t z = 0; z < combinations; ++z)
        if (check_circuit(z)) found.push_back(z);
    return found;
}

std::string to_bits(std::uint32_t z) {
    std::string s(inputs, '0');
    for (int i = 0; i < inputs; ++i)
        if ((z >> i) & 1u) s[static_cast<std::size_t>(i)] = '1';
    return s;
}

}  // namespace pfarm::apps::sat
