// Fuzzes the apps' own input parsers: pfarm-mandelbrot's --window xmin,xmax,ymin,ymax and --by
// (apps/mandelbrot/mandelbrot_kernel.hpp) and pfarm-circuit's --circuit file (apps/circuit/circuit_kernel.hpp
// parse_circuit). The first byte picks the parser, the rest is the text.
// Invariants: a refusal is a pfarm::invalid_argument naming the flag; an accepted window is four finite numbers
// written in the one number grammar of pfarm (decimal numbers with blanks around them; no hexadecimal, nan or
// inf) with xmin < xmax and ymin < ymax, and passes mandelbrot::validate; an accepted circuit has 1 to
// max_variables inputs and at least one clause, every clause non-empty with every literal an existing input.
#include "fuzz_support.hpp"

#include "circuit_kernel.hpp"
#include "mandelbrot_kernel.hpp"

#include <cmath>
#include <sstream>
#include <string>

namespace {

using pfarm::fuzz::accepts;
using pfarm::fuzz::check;
namespace mb = pfarm::apps::mandelbrot;
namespace st = pfarm::apps::circuit;

void window(const std::string& text) {
    const auto p = accepts("--window", [&] {
        mb::params p;
        mb::parse_window(text, p);
        return p;
    });
    if (!p) return;
    check(text.find_first_not_of("0123456789+-.eE, \t\r\n") == std::string::npos, "'" + text + "' accepted as a window");
    check(std::isfinite(p->xmin) && std::isfinite(p->xmax) && std::isfinite(p->ymin) && std::isfinite(p->ymax) &&
              p->xmin < p->xmax && p->ymin < p->ymax,
          "'" + text + "' gave an empty or infinite window");
    check(accepts("--window", [&] {
              mb::validate(*p);
              return true;
          }).has_value(),
          "'" + text + "': validate refuses an accepted window");
}

void by(const std::string& text) {
    if (const auto d = accepts("--by", [&] { return mb::parse_decomposition(text); }))
        check(text == "rows" || text == "row" || text == "columns" || text == "column", "'" + text + "' accepted as --by");
}

void circuit(const std::string& text) {
    const auto c = accepts("--circuit", [&] {
        std::istringstream in(text);
        return st::parse_circuit(in, "fuzz.txt");
    });
    if (!c) return;
    check(c->variables >= 1 && c->variables <= st::max_variables, "variables out of range");
    check(!c->clauses.empty(), "a circuit without clauses");
    for (const auto& clause : c->clauses) {
        check(!clause.empty(), "an empty clause");
        for (const auto& l : clause) check(l.variable >= 0 && l.variable < c->variables, "a literal of no input");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    switch (data[0] % 3) {
    case 0: window(text); break;
    case 1: by(text); break;
    default: circuit(text); break;
    }
    return 0;
}
