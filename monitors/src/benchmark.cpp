// The benchmark kernel and BogoMIPS. This file is compiled with optimisation in every build type (see
// monitors/CMakeLists.txt) so that the kernel's speed does not depend on CMAKE_BUILD_TYPE.
#include "pfarm/benchmark_monitor.hpp"

#include "detail.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

namespace pfarm {

namespace {

/// Keeps the kernel's result observable so that the compiler cannot drop the work.
volatile double kernel_sink = 0;
volatile std::uint64_t kernel_seed = 0x9e3779b97f4a7c15ULL;

/// One repetition: `iterations` steps of a xorshift generator (6 integer operations) feeding four
/// dependent multiply-add chains (8 floating-point operations) through one conversion. The chains depend on
/// the generator, and the result goes to a volatile, so nothing can be folded or skipped.
double kernel(std::uint64_t iterations, std::uint64_t seed) {
    std::uint64_t x = seed | 1;
    double a = 1.0, b = 0.5, c = 0.25, d = 0.125;
    for (std::uint64_t i = 0; i < iterations; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const double r = static_cast<double>(x >> 11) * 0x1.0p-53;
        a = a * 0.9999999 + r;
        b = b * 0.9999998 + a;
        c = c * 0.9999997 + r;
        d = d * 0.9999996 + c;
    }
    return a + b + c + d + static_cast<double>(x & 0xff);
}

}  // namespace

kernel_result run_cpu_kernel(const benchmark_options& options) {
    if (options.iterations == 0) throw invalid_argument("iterations", "is 0; expected >= 1");
    if (options.repetitions < 1)
        throw invalid_argument("repetitions", "is " + std::to_string(options.repetitions) + "; expected >= 1");
    using clock = std::chrono::steady_clock;
    kernel_result result;
    double best = std::numeric_limits<double>::infinity();
    for (int rep = 0; rep < options.repetitions; ++rep) {
        const auto start = clock::now();
        kernel_sink = kernel(options.iterations, kernel_seed + static_cast<std::uint64_t>(rep));
        const double seconds = std::chrono::duration<double>(clock::now() - start).count();
        result.total_seconds += seconds;
        best = std::min(best, seconds);
    }
    // A clock too coarse for the work would give 0: count it as one tick of a nanosecond.
    result.best_seconds = std::max(best, 1e-9);
    result.mops = static_cast<double>(options.iterations * kernel_operations_per_iteration) / result.best_seconds / 1e6;
    return result;
}

benchmark_monitor::benchmark_monitor(benchmark_options options) : options_(options) {
    if (options_.iterations == 0) throw invalid_argument("iterations", "is 0; expected >= 1");
    if (options_.repetitions < 1)
        throw invalid_argument("repetitions", "is " + std::to_string(options_.repetitions) + "; expected >= 1");
}

resource_sample benchmark_monitor::read() {
    resource_sample s;
    s.benchmark = run_cpu_kernel(options_).mops;
    return s;
}

double read_bogomips(const std::filesystem::path& root) {
    const auto path = detail::under_root(root, "proc/cpuinfo");
    const std::string text = detail::read_text_file("bogomips", path);
    std::istringstream in(text);
    std::string line;
    double sum = 0;
    int count = 0;
    while (std::getline(in, line)) {
        // "bogomips\t: 4192.06" (x86) or "BogoMIPS\t: 50.00" (Arm).
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string key = line.substr(0, colon);
        while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
        std::transform(key.begin(), key.end(), key.begin(), [](unsigned char ch) { return std::tolower(ch); });
        if (key != "bogomips") continue;
        std::istringstream value(line.substr(colon + 1));
        double v = 0;
        if (!(value >> v) || !std::isfinite(v) || v <= 0)
            throw monitor_error("bogomips", path.string(), "malformed line '" + line + "'");
        sum += v;
        ++count;
    }
    if (count == 0)
        throw monitor_error("bogomips", path.string(),
                            "has no 'bogomips' line (this architecture's kernel does not report it; "
                            "use the 'benchmark' monitor instead)");
    return sum / count;
}

bogomips_monitor::bogomips_monitor(std::filesystem::path root) : root_(std::move(root)) {
    if (root_.empty()) throw invalid_argument("root", "is empty; expected a directory such as /");
}

resource_sample bogomips_monitor::read() {
    resource_sample s;
    s.benchmark = read_bogomips(root_);
    return s;
}

}  // namespace pfarm
