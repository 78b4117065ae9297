// The I-V curve as a PNG, written without a plotting library: axes, ticks, text and the PNG encoding (plot.hpp).
#include "pfarm/calcium/plot.hpp"

#include "pfarm/output_file.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

#ifdef PFARM_CALCIUM_HAVE_ZLIB
#include <zlib.h>
#endif

namespace pfarm::calcium {

namespace {

// A 5x7 bitmap font: seven rows of five bits (bit 4 = leftmost column).
struct glyph {
    char c;
    std::array<std::uint8_t, 7> rows;
};
constexpr glyph font[] = {
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}}, {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}}, {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}}, {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}}, {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}}, {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {'-', {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}}, {'+', {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}}, {',', {0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08}},
    {'(', {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}}, {')', {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}},
    {'[', {0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E}}, {']', {0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E}},
    {':', {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00}}, {'/', {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}},
    {'=', {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00}}, {'_', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F}},
    {'^', {0x04, 0x0A, 0x11, 0x00, 0x00, 0x00, 0x00}}, {'e', {0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E}},
    {'A', {0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}}, {'B', {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E}},
    {'C', {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}}, {'D', {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C}},
    {'E', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}}, {'F', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10}},
    {'G', {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}}, {'H', {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
    {'I', {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}}, {'J', {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C}},
    {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}}, {'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F}},
    {'M', {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}}, {'N', {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}},
    {'O', {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}}, {'P', {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10}},
    {'Q', {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}}, {'R', {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11}},
    {'S', {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}}, {'T', {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
    {'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}}, {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04}},
    {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}}, {'X', {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11}},
    {'Y', {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04}}, {'Z', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}},
    {'a', {0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F}}, {'b', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E}},
    {'c', {0x00, 0x00, 0x0E, 0x10, 0x10, 0x11, 0x0E}}, {'d', {0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F}},
    {'f', {0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08}}, {'g', {0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x0E}},
    {'h', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11}}, {'i', {0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E}},
    {'j', {0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0C}}, {'k', {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12}},
    {'l', {0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}}, {'m', {0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11}},
    {'n', {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11}}, {'o', {0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E}},
    {'p', {0x00, 0x00, 0x1E, 0x11, 0x1E, 0x10, 0x10}}, {'q', {0x00, 0x00, 0x0D, 0x13, 0x0F, 0x01, 0x01}},
    {'r', {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10}}, {'s', {0x00, 0x00, 0x0E, 0x10, 0x0E, 0x01, 0x1E}},
    {'t', {0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06}}, {'u', {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D}},
    {'v', {0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04}}, {'w', {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0A}},
    {'x', {0x00, 0x00, 0x11, 0x0A, 0x04, 0x0A, 0x11}}, {'y', {0x00, 0x00, 0x11, 0x11, 0x0F, 0x01, 0x0E}},
    {'z', {0x00, 0x00, 0x1F, 0x02, 0x04, 0x08, 0x1F}},
};

constexpr int text_scale = 2;
constexpr int glyph_advance = 6 * text_scale;

class canvas {
public:
    explicit canvas(int w, int h) : img_{w, h, std::vector<std::uint8_t>(static_cast<std::size_t>(w) * h * 3, 255)} {}

    void set(int x, int y, rgb c) {
        if (x < clip_x0_ || y < clip_y0_ || x > clip_x1_ || y > clip_y1_) return;
        if (x < 0 || y < 0 || x >= img_.width || y >= img_.height) return;
        auto* p = &img_.pixels[(static_cast<std::size_t>(y) * img_.width + x) * 3];
        p[0] = c.r;
        p[1] = c.g;
        p[2] = c.b;
    }
    void fill(int x0, int y0, int x1, int y1, rgb c) {
        for (int y = y0; y <= y1; ++y)
            for (int x = x0; x <= x1; ++x) set(x, y, c);
    }
    /// A line `thick` pixels wide (Bresenham with a square brush).
    void line(int x0, int y0, int x1, int y1, rgb c, int thick = 1) {
        const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
        const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
        int err = dx + dy;
        for (;;) {
            fill(x0 - thick / 2, y0 - thick / 2, x0 + (thick - 1) / 2, y0 + (thick - 1) / 2, c);
            if (x0 == x1 && y0 == y1) break;
            const int e2 = 2 * err;
            if (e2 >= dy) {
                err += dy;
                x0 += sx;
            }
            if (e2 <= dx) {
                err += dx;
                y0 += sy;
            }
        }
    }
    void text(int x, int y, const std::string& s, rgb c) {
        for (const char ch : s) {
            for (const glyph& g : font) {
                if (g.c != ch) continue;
                for (int row = 0; row < 7; ++row)
                    for (int col = 0; col < 5; ++col)
                        if (g.rows[row] & (0x10 >> col))
                            fill(x + col * text_scale, y + row * text_scale, x + (col + 1) * text_scale - 1,
                                 y + (row + 1) * text_scale - 1, c);
                break;
            }
            x += glyph_advance;
        }
    }
    void clip(int x0, int y0, int x1, int y1) {
        clip_x0_ = x0;
        clip_y0_ = y0;
        clip_x1_ = x1;
        clip_y1_ = y1;
    }
    void unclip() { clip(0, 0, img_.width - 1, img_.height - 1); }
    image take() { return std::move(img_); }

private:
    image img_;
    int clip_x0_ = 0, clip_y0_ = 0, clip_x1_ = 1 << 30, clip_y1_ = 1 << 30;
};

int text_width(const std::string& s) { return static_cast<int>(s.size()) * glyph_advance; }

double nice_step(double range) {
    const double raw = range / 6.0;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double norm = raw / mag;
    return (norm < 1.5 ? 1.0 : norm < 3.0 ? 2.0 : norm < 7.0 ? 5.0 : 10.0) * mag;
}

std::string tick_label(double v, double step) {
    if (std::fabs(v) < step * 1e-9) v = 0.0;
    char buffer[64];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::general, 6);
    return std::string(buffer, r.ptr);
}

struct axis {
    double lo = 0.0, hi = 1.0, step = 0.2;
};

axis make_axis(double lo, double hi, bool pad) {
    if (!(hi > lo)) {
        lo -= 1.0;
        hi += 1.0;
    }
    if (pad) {  // a margin on the sides that are not zero (a curve hanging from zero keeps zero as its top)
        const double margin = 0.05 * (hi - lo);
        if (lo != 0.0) lo -= margin;
        if (hi != 0.0) hi += margin;
    }
    axis a;
    a.step = nice_step(hi - lo);
    a.lo = std::floor(lo / a.step) * a.step;
    a.hi = std::ceil(hi / a.step) * a.step;
    return a;
}

// ---- PNG -------------------------------------------------------------------------------------------------------

std::uint32_t crc32(const std::uint8_t* data, std::size_t n, std::uint32_t crc = 0) {
    static const auto table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    crc = ~crc;
    for (std::size_t i = 0; i < n; ++i) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

void put32(std::string& out, std::uint32_t v) {
    out.push_back(static_cast<char>(v >> 24));
    out.push_back(static_cast<char>(v >> 16));
    out.push_back(static_cast<char>(v >> 8));
    out.push_back(static_cast<char>(v));
}

void chunk(std::string& out, const char* type, const std::string& data) {
    put32(out, static_cast<std::uint32_t>(data.size()));
    std::string body(type, 4);
    body += data;
    out += body;
    put32(out, crc32(reinterpret_cast<const std::uint8_t*>(body.data()), body.size()));
}

/// A zlib stream of `raw`: deflate through zlib when built with it, else stored (uncompressed) blocks.
std::string zlib_stream(const std::vector<std::uint8_t>& raw) {
#ifdef PFARM_CALCIUM_HAVE_ZLIB
    uLongf size = compressBound(static_cast<uLong>(raw.size()));
    std::string deflated(size, '\0');
    if (compress2(reinterpret_cast<Bytef*>(deflated.data()), &size, raw.data(), static_cast<uLong>(raw.size()), 9) ==
        Z_OK) {
        deflated.resize(size);
        return deflated;
    }
#endif
    std::string out = {'\x78', '\x01'};
    std::size_t pos = 0;
    do {
        const std::size_t n = std::min<std::size_t>(65535, raw.size() - pos);
        const bool last = pos + n == raw.size();
        out.push_back(last ? '\x01' : '\x00');
        out.push_back(static_cast<char>(n & 0xFF));
        out.push_back(static_cast<char>(n >> 8));
        out.push_back(static_cast<char>(~n & 0xFF));
        out.push_back(static_cast<char>((~n >> 8) & 0xFF));
        out.append(reinterpret_cast<const char*>(raw.data() + pos), n);
        pos += n;
    } while (pos < raw.size());
    std::uint32_t a = 1, b = 0;
    for (const std::uint8_t byte : raw) {
        a = (a + byte) % 65521;
        b = (b + a) % 65521;
    }
    put32(out, (b << 16) | a);
    return out;
}

}  // namespace

std::string encode_png(const image& img) {
    std::vector<std::uint8_t> raw;
    raw.reserve(static_cast<std::size_t>(img.height) * (img.width * 3 + 1));
    for (int y = 0; y < img.height; ++y) {
        raw.push_back(0);  // filter: none
        const auto* row = &img.pixels[static_cast<std::size_t>(y) * img.width * 3];
        raw.insert(raw.end(), row, row + static_cast<std::size_t>(img.width) * 3);
    }
    std::string out = "\x89PNG\r\n\x1a\n";
    std::string header;
    put32(header, static_cast<std::uint32_t>(img.width));
    put32(header, static_cast<std::uint32_t>(img.height));
    header += std::string{'\x08', '\x02', '\x00', '\x00', '\x00'};  // 8 bits, RGB, deflate, adaptive, no interlace
    chunk(out, "IHDR", header);
    chunk(out, "IDAT", zlib_stream(raw));
    chunk(out, "IEND", "");
    return out;
}

image render_plot(const plot_spec& spec) {
    canvas cv(spec.width, spec.height);
    const int left = 100, right = spec.width - 30, top = 60, bottom = spec.height - 70;
    double xmin = INFINITY, xmax = -INFINITY, ymin = 0.0, ymax = 0.0;
    for (const auto& s : spec.series) {
        for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
            if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
            xmin = std::min(xmin, s.x[i]);
            xmax = std::max(xmax, s.x[i]);
            ymin = std::min(ymin, s.y[i]);
            ymax = std::max(ymax, s.y[i]);
        }
    }
    if (!std::isfinite(xmin)) xmin = 0.0, xmax = 1.0;
    const axis ax = make_axis(xmin, xmax, false), ay = make_axis(ymin, ymax, true);
    auto px = [&](double x) { return left + static_cast<int>(std::lround((x - ax.lo) / (ax.hi - ax.lo) * (right - left))); };
    auto py = [&](double y) { return bottom - static_cast<int>(std::lround((y - ay.lo) / (ay.hi - ay.lo) * (bottom - top))); };
    const rgb black{0, 0, 0}, grid{225, 225, 225}, zero{150, 150, 150};

    // Grid, ticks and labels.
    for (double x = ax.lo; x <= ax.hi + ax.step * 1e-9; x += ax.step) {
        const int X = px(x);
        cv.line(X, top, X, bottom, grid);
        cv.line(X, bottom, X, bottom + 5, black);
        const std::string label = tick_label(x, ax.step);
        cv.text(X - text_width(label) / 2, bottom + 10, label, black);
    }
    for (double y = ay.lo; y <= ay.hi + ay.step * 1e-9; y += ay.step) {
        const int Y = py(y);
        cv.line(left, Y, right, Y, grid);
        cv.line(left - 5, Y, left, Y, black);
        const std::string label = tick_label(y, ay.step);
        cv.text(left - 10 - text_width(label), Y - 7, label, black);
    }
    if (ay.lo < 0.0 && ay.hi > 0.0) cv.line(left, py(0.0), right, py(0.0), zero);
    cv.line(left, top, left, bottom, black);
    cv.line(left, bottom, right, bottom, black);
    cv.line(right, top, right, bottom, black);
    cv.line(left, top, right, top, black);
    cv.text((left + right - text_width(spec.title)) / 2, 18, spec.title, black);
    cv.text((left + right - text_width(spec.x_label)) / 2, bottom + 38, spec.x_label, black);
    cv.text(10, top - 26, spec.y_label, black);

    // The series, clipped to the frame.
    cv.clip(left + 1, top + 1, right - 1, bottom - 1);
    for (const auto& s : spec.series) {
        bool have_last = false;
        int lx = 0, ly = 0;
        for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
            if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
                have_last = false;
                continue;
            }
            const int X = px(s.x[i]), Y = py(s.y[i]);
            if (s.lines && have_last) cv.line(lx, ly, X, Y, s.color, 2);
            if (s.points) cv.fill(X - 2, Y - 2, X + 2, Y + 2, s.color);
            lx = X;
            ly = Y;
            have_last = true;
        }
    }
    // The legend, bottom right (the I-V curve's corners are empty: it hangs from zero at both ends).
    int ly = bottom - 20 - 22 * static_cast<int>(spec.series.size() - 1);
    for (const auto& s : spec.series) {
        const int lx = right - 20 - text_width(s.label) - 40;
        if (s.lines) cv.line(lx, ly + 7, lx + 30, ly + 7, s.color, 2);
        if (s.points) cv.fill(lx + 13, ly + 5, lx + 17, ly + 9, s.color);
        cv.text(lx + 40, ly, s.label, black);
        ly += 22;
    }
    cv.unclip();
    return cv.take();
}

void write_png_plot(const std::filesystem::path& path, const plot_spec& spec) {
    const std::string bytes = encode_png(render_plot(spec));
    pfarm::write_output_file(path.string(), "--output", bytes);  // through PATH.tmp, renamed once whole
}

}  // namespace pfarm::calcium
