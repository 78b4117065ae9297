// The Mandelbrot set's kernel: one column or row as a task, the sequential loop, the summary and the image files
// (mandelbrot_kernel.hpp).
#include "mandelbrot_kernel.hpp"

#include "pfarm/emulation.hpp"
#include "pfarm/error.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <vector>

namespace pfarm::apps::mandelbrot {

void validate(const params& p) {
    if (p.nx < 2) throw invalid_argument("--width", "is " + std::to_string(p.nx) + "; expected at least 2");
    if (p.ny < 2) throw invalid_argument("--height", "is " + std::to_string(p.ny) + "; expected at least 2");
    if (p.maxiter < 1) throw invalid_argument("--max-iterations", "is " + std::to_string(p.maxiter) + "; expected at least 1");
    if (!std::isfinite(p.xmin) || !std::isfinite(p.xmax) || !(p.xmin < p.xmax))
        throw invalid_argument("--window", "the x range [" + std::to_string(p.xmin) + ", " + std::to_string(p.xmax) +
                                             "] is empty or not finite; expected xmin < xmax");
    if (!std::isfinite(p.ymin) || !std::isfinite(p.ymax) || !(p.ymin < p.ymax))
        throw invalid_argument("--window", "the y range [" + std::to_string(p.ymin) + ", " + std::to_string(p.ymax) +
                                             "] is empty or not finite; expected ymin < ymax");
    if (!std::isfinite(p.bailout) || !(p.bailout > 0.0))
        throw invalid_argument("--bailout", "is " + std::to_string(p.bailout) + "; expected a positive number");
}

void parse_window(const std::string& text, params& p) {
    // pfarm's one number grammar (pfarm::parse_numbers: no hexadecimal, nan, inf or magnitudes beyond double).
    std::vector<double> v;
    try {
        v = pfarm::parse_numbers(text, "--window");
    } catch (const pfarm::invalid_argument&) {
        v.clear();
    }
    if (v.size() != 4) throw invalid_argument("--window", "is '" + text + "'; expected four numbers xmin,xmax,ymin,ymax");
    p.xmin = v[0], p.xmax = v[1], p.ymin = v[2], p.ymax = v[3];
    if (!(p.xmin < p.xmax) || !(p.ymin < p.ymax))
        throw invalid_argument("--window", "is '" + text + "'; expected xmin < xmax and ymin < ymax");
}

void column(const params& p, int ix, std::span<std::uint32_t> out) {
    const double x = cx(p, ix);
    for (int iy = 0; iy < p.ny; ++iy) out[static_cast<std::size_t>(iy)] = level(x, cy(p, iy), p.maxiter, p.bailout);
}

void row(const params& p, int iy, std::span<std::uint32_t> out) {
    const double y = cy(p, iy);
    for (int ix = 0; ix < p.nx; ++ix) out[static_cast<std::size_t>(ix)] = level(cx(p, ix), y, p.maxiter, p.bailout);
}

std::vector<std::uint32_t> sequential(const params& p) {
    const auto ny = static_cast<std::size_t>(p.ny);
    std::vector<std::uint32_t> mset(static_cast<std::size_t>(p.nx) * ny);
    // MSetLSM's loop order: iy outer, ix inner.
    for (int iy = 0; iy < p.ny; ++iy) {
        const double y = cy(p, iy);
        for (int ix = 0; ix < p.nx; ++ix)
            mset[static_cast<std::size_t>(ix) * ny + static_cast<std::size_t>(iy)] = level(cx(p, ix), y, p.maxiter, p.bailout);
    }
    return mset;
}

summary summarize(std::span<const std::uint32_t> mset, int maxiter) {
    summary s;
    s.hash = 14695981039346656037ull;
    for (const std::uint32_t v : mset) {
        for (int b = 0; b < 4; ++b) {
            s.hash ^= (v >> (8 * b)) & 0xffu;
            s.hash *= 1099511628211ull;
        }
        s.iterations += v;
        if (v >= static_cast<std::uint32_t>(maxiter)) ++s.inside;
    }
    return s;
}

void write_pgm(std::ostream& out, const params& p, std::span<const std::uint32_t> mset) {
    out << "P5\n" << p.nx << ' ' << p.ny << "\n255\n";
    const std::vector<std::uint8_t> pixels = shades(p, mset);
    out.write(reinterpret_cast<const char*>(pixels.data()), static_cast<std::streamsize>(pixels.size()));
}

std::vector<std::uint8_t> shades(const params& p, std::span<const std::uint32_t> mset) {
    const double scale = 255.0 / std::log(1.0 + p.maxiter);
    std::vector<std::uint8_t> pixels;
    pixels.reserve(static_cast<std::size_t>(p.nx) * static_cast<std::size_t>(p.ny));
    for (int iy = p.ny - 1; iy >= 0; --iy) {
        for (int ix = 0; ix < p.nx; ++ix) {
            const std::uint32_t v = mset[static_cast<std::size_t>(ix) * static_cast<std::size_t>(p.ny) +
                                         static_cast<std::size_t>(iy)];
            const int shade = v >= static_cast<std::uint32_t>(p.maxiter)
                                  ? 0
                                  : std::clamp(static_cast<int>(std::lround(scale * std::log(1.0 + v))), 1, 255);
            pixels.push_back(static_cast<std::uint8_t>(shade));
        }
    }
    return pixels;
}

decomposition parse_decomposition(const std::string& text) {
    if (text == "columns" || text == "column") return decomposition::columns;
    if (text == "rows" || text == "row") return decomposition::rows;
    throw invalid_argument("--by", "is '" + text + "'; expected columns or rows");
}

const char* to_string(decomposition d) { return d == decomposition::columns ? "columns" : "rows"; }

}  // namespace pfarm::apps::mandelbrot
