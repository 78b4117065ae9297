// A small, dependency-free line plot written as PNG (the I-V curve's iv.png), so a sweep's picture exists
// whether or not gnuplot is installed; iv.gp redraws it with gnuplot. Deterministic: the same data give the
// same bytes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace pfarm::calcium {

struct rgb {
    std::uint8_t r = 0, g = 0, b = 0;
};

struct plot_series {
    std::vector<double> x, y;
    rgb color;
    bool lines = true;
    bool points = false;
    std::string label;
};

struct plot_spec {
    std::string title, x_label, y_label;
    int width = 800, height = 600;
    std::vector<plot_series> series;
};

/// An RGB image, row-major, 3 bytes a pixel.
struct image {
    int width = 0, height = 0;
    std::vector<std::uint8_t> pixels;
};

image render_plot(const plot_spec& spec);
/// The PNG file of an image (8-bit RGB, no interlace).
std::string encode_png(const image& img);
/// render_plot + encode_png into `path`, whole or not at all (pfarm/output_file.hpp); throws pfarm::invalid_argument
/// naming "--output" on I/O failure.
void write_png_plot(const std::filesystem::path& path, const plot_spec& spec);

}  // namespace pfarm::calcium
