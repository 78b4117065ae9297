// pfarm: benchmark values bm_i (eq. 5's relative performance rp'_i = bm_i / max bm in Gonzalez-Velez & Cole,
// "Adaptive statistical scheduling of divisible workloads in heterogeneous systems") and worker speeds V_j (the
// distributed schemes of Han & Chronopoulos, "Scalable loop self-scheduling schemes implemented on large-scale
// clusters", section III, and Chronopoulos, Penmatsa, Yu & Yu, "Scalable loop self-scheduling schemes for
// heterogeneous clusters", section 3). Higher is faster.
#pragma once

#include "pfarm/monitor.hpp"

#include <cstdint>
#include <filesystem>

namespace pfarm {

struct benchmark_options {
    /// Kernel iterations per repetition (about 2 ms on a 3 GHz core; each does kernel_operations_per_iteration).
    std::uint64_t iterations = std::uint64_t{1} << 20;
    /// Repetitions; the fastest one counts, so a context switch in one does not lower the value.
    int repetitions = 3;
};

/// Operations one kernel iteration counts: 7 integer (a xorshift step and a shift), 1 conversion to double,
/// 9 floating-point (a scaling and four multiply-add chains).
inline constexpr std::uint64_t kernel_operations_per_iteration = 17;

struct kernel_result {
    double mops = 0;           ///< million operations per second of the fastest repetition: the benchmark value
    double best_seconds = 0;   ///< the fastest repetition
    double total_seconds = 0;  ///< all repetitions
};

/// Runs the built-in CPU kernel: dependent chains of integer (xorshift) and floating-point (multiply-add)
/// work on one core, timed with steady_clock. Compiled with optimisation in every build type, so Debug and
/// Release builds report the same speed. Throws invalid_argument ("iterations", "repetitions") on 0.
kernel_result run_cpu_kernel(const benchmark_options& options = {});

/// The portable benchmark: resource_sample::benchmark = run_cpu_kernel().mops, a few milliseconds per read.
class benchmark_monitor final : public monitor {
public:
    explicit benchmark_monitor(benchmark_options options = {});
    std::string name() const override { return "benchmark"; }
    resource_sample read() override;

private:
    benchmark_options options_;
};

/// BogoMIPS as the kernel printed it at boot, from the "bogomips" lines of `<root>/proc/cpuinfo` (mean over
/// processors): the benchmark Gonzalez-Velez & Cole used (section 5). Throws monitor_error naming the file when it
/// is missing or has no such line (several architectures do not report it).
double read_bogomips(const std::filesystem::path& root = "/");

/// resource_sample::benchmark = read_bogomips(root).
class bogomips_monitor final : public monitor {
public:
    explicit bogomips_monitor(std::filesystem::path root = "/");
    std::string name() const override { return "bogomips"; }
    resource_sample read() override;

private:
    std::filesystem::path root_;
};

}  // namespace pfarm
