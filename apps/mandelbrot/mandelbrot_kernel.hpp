// The Mandelbrot set of Han & Chronopoulos, "Scalable loop self-scheduling schemes implemented on large-scale
// clusters" (section V.A: MSetLSM and MSetLevel), as tasks:
// one task computes one column of the image (the paper's smallest schedulable unit), or one row.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

namespace pfarm::apps::mandelbrot {

/// The image: nx x ny points of [xmin, xmax] x [ymin, ymax], at most maxiter iterations per point.
/// The paper's domain is [-2, 2] x [-2, 2]. `bailout` is the bound on x^2 + y^2 that MSetLevel tests:
/// 4.0 (|z| < 2, the escape radius the paper means, default); the paper's pseudo-code literally writes 2.0,
/// a typo kept available as `--bailout 2`.
struct params {
    int nx = 600;
    int ny = 600;
    double xmin = -2.0, xmax = 2.0;
    double ymin = -2.0, ymax = 2.0;
    int maxiter = 2000;
    double bailout = 4.0;
};

/// Throws pfarm::invalid_argument naming the option ("--width", "--height", "--max-iterations", "--window",
/// "--bailout") when the image is not computable: fewer than 2 points a side (the paper divides by nx - 1),
/// an empty or non-finite range, maxiter < 1.
void validate(const params& p);

/// Parses --window's "xmin,xmax,ymin,ymax" into p; throws invalid_argument("--window", ...) unless it is four
/// finite numbers with xmin < xmax and ymin < ymax.
void parse_window(const std::string& text, params& p);

/// MSetLevel(cx, cy, maxiter): iterations until x^2 + y^2 reaches the bailout, at most maxiter.
inline std::uint32_t level(double cx, double cy, int maxiter, double bailout) {
    double x = 0.0, y = 0.0, x2 = 0.0, y2 = 0.0;
    int iter = 0;
    while (iter < maxiter && x2 + y2 < bailout) {
        const double temp = x2 - y2 + cx;
        y = 2.0 * x * y + cy;
        x = temp;
        x2 = x * x;
        y2 = y * y;
        ++iter;
    }
    return static_cast<std::uint32_t>(iter);
}

/// The point of column ix / row iy, as MSetLSM computes it.
inline double cx(const params& p, int ix) { return p.xmin + ix * (p.xmax - p.xmin) / (p.nx - 1); }
inline double cy(const params& p, int iy) { return p.ymin + iy * (p.ymax - p.ymin) / (p.ny - 1); }

/// One task by columns: out[iy] = MSet[ix][iy] for iy in [0, ny).
void column(const params& p, int ix, std::span<std::uint32_t> out);
/// One task by rows: out[ix] = MSet[ix][iy] for ix in [0, nx).
void row(const params& p, int iy, std::span<std::uint32_t> out);

/// MSetLSM, sequentially: MSet[ix][iy] at index ix * ny + iy (column-major, as the columns arrive).
std::vector<std::uint32_t> sequential(const params& p);

/// What the app prints of an image (held as by sequential()).
struct summary {
    std::uint64_t iterations = 0;  ///< sum of the levels over all pixels: the checksum (the total work)
    std::uint64_t hash = 0;        ///< FNV-1a (64 bit) of the levels in [ix][iy] order: position-sensitive
    std::uint64_t inside = 0;      ///< points that reached maxiter
};
summary summarize(std::span<const std::uint32_t> mset, int maxiter);

/// Writes the image as a binary PGM (P5, 8 bit): row 0 at ymax, column 0 at xmin; points of the set black,
/// the others shaded by log(level).
void write_pgm(std::ostream& out, const params& p, std::span<const std::uint32_t> mset);
/// The 8-bit shades write_pgm writes, row-major from the top row (ymax) down.
std::vector<std::uint8_t> shades(const params& p, std::span<const std::uint32_t> mset);

/// "columns" or "rows": how the image is cut into tasks. Throws invalid_argument("--by", ...) otherwise.
enum class decomposition { columns, rows };
decomposition parse_decomposition(const std::string& text);
const char* to_string(decomposition d);

}  // namespace pfarm::apps::mandelbrot
