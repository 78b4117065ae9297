// Philox4x32-10, the counter-based generator of Salmon et al. (SC'11, "Parallel random numbers: as easy as
// 1, 2, 3"), written here from its published definition (the same function as Random123's philox4x32_R(10, ...);
// tests/unit/test_calcium.cpp checks Random123's known-answer vectors). A counter-based generator is a pure
// function of (counter, key): any experiment, step and channel block can be drawn in any order, on any rank,
// with the same result, which is what makes the calcium sweep byte-identical under every technique.
#pragma once

#include <array>
#include <cstdint>

namespace pfarm::calcium {

using philox_counter = std::array<std::uint32_t, 4>;
using philox_key = std::array<std::uint32_t, 2>;

namespace detail {
inline constexpr std::uint32_t philox_m0 = 0xD2511F53u, philox_m1 = 0xCD9E8D57u;
inline constexpr std::uint32_t philox_w0 = 0x9E3779B9u, philox_w1 = 0xBB67AE85u;
}  // namespace detail

/// The ten-round Philox4x32 bijection of `ctr` under `key`.
constexpr philox_counter philox4x32_10(philox_counter ctr, philox_key key) noexcept {
    using detail::philox_m0, detail::philox_m1;
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            key[0] += detail::philox_w0;
            key[1] += detail::philox_w1;
        }
        const std::uint64_t p0 = static_cast<std::uint64_t>(philox_m0) * ctr[0];
        const std::uint64_t p1 = static_cast<std::uint64_t>(philox_m1) * ctr[2];
        ctr = {static_cast<std::uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<std::uint32_t>(p1),
               static_cast<std::uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<std::uint32_t>(p0)};
    }
    return ctr;
}

/// The key of a global seed: its low and high 32-bit words.
constexpr philox_key seed_key(std::uint64_t seed) noexcept {
    return {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
}

/// A uniform double in [0, 1) from two 32-bit words: 53 random bits (a, b as in genrand_res53).
constexpr double uniform53(std::uint32_t a, std::uint32_t b) noexcept {
    return (static_cast<double>(a >> 5) * 67108864.0 + static_cast<double>(b >> 6)) * (1.0 / 9007199254740992.0);
}

/// A sequential stream of uniforms over the counters {i, c1, c2, c3}, i = 0, 1, 2, ...: two doubles per block.
/// Used by the population update, whose binomial draws consume a variable number of uniforms.
class uniform_stream {
public:
    constexpr uniform_stream(philox_key key, std::uint32_t c1, std::uint32_t c2, std::uint32_t c3) noexcept
        : key_(key), ctr_{0, c1, c2, c3} {}
    /// The next uniform in [0, 1).
    constexpr double next() noexcept {
        if (used_ == 2) {
            block_ = philox4x32_10(ctr_, key_);
            ++ctr_[0];
            used_ = 0;
        }
        const double u = uniform53(block_[2 * used_], block_[2 * used_ + 1]);
        ++used_;
        return u;
    }

private:
    philox_key key_;
    philox_counter ctr_;
    philox_counter block_{};
    int used_ = 2;
};

}  // namespace pfarm::calcium
