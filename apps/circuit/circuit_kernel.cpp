// Circuit satisfiability's kernel: the built-in circuit, the circuit file parser, the blocks of inputs a task
// checks, and the sequential search (circuit_kernel.hpp).
#include "circuit_kernel.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <istream>
#include <sstream>
#include <string>

namespace pfarm::apps::circuit {

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

circuit builtin() {
    circuit c;
    c.variables = inputs;
    auto p = [](int v) { return literal{v, false}; };
    auto n = [](int v) { return literal{v, true}; };
    c.clauses = {{p(0), p(1)},   {n(1), n(3)},  {p(2), p(3)},   {n(3), n(4)},   {p(4), n(5)},   {p(5), n(6)},
                 {p(5), p(6)},   {p(6), n(15)}, {p(7), n(8)},   {n(7), n(13)},  {p(8), p(9)},   {p(8), n(9)},
                 {n(9), n(10)},  {p(9), p(11)}, {p(10), p(11)}, {p(12), p(13)}, {p(13), n(14)}, {p(14), p(15)}};
    return c;
}

namespace {

std::string trim(const std::string& s) {
    std::size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
    return s.substr(b, e - b);
}

}  // namespace

circuit parse_circuit(std::istream& in, const std::string& name) {
    circuit c;
    c.variables = 0;
    std::string line;
    int number = 0;
    auto fail = [&](const std::string& why) {
        throw invalid_argument("--circuit", name + ":" + std::to_string(number) + ": " + why);
    };
    while (std::getline(in, line)) {
        ++number;
        if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
        line = trim(line);
        if (line.empty()) continue;
        if (c.variables == 0) {
            std::istringstream words(line);
            std::string keyword, rest;
            long long n = 0;
            if (!(words >> keyword >> n) || keyword != "variables" || (words >> rest))
                fail("expected 'variables N' first, got '" + line + "'");
            if (n < 1 || n > max_variables)
                fail("variables is " + std::to_string(n) + "; expected 1 to " + std::to_string(max_variables));
            c.variables = static_cast<int>(n);
            continue;
        }
        std::vector<literal> clause;
        std::size_t pos = 0;
        while (true) {
            const std::size_t bar = line.find('|', pos);
            std::string text = trim(line.substr(pos, bar == std::string::npos ? std::string::npos : bar - pos));
            literal l;
            if (!text.empty() && (text[0] == '!' || text[0] == '~')) l.negated = true, text = trim(text.substr(1));
            if (text.size() < 2 || text[0] != 'x' ||
                !std::all_of(text.begin() + 1, text.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }) ||
                text.size() > 4)
                fail("bad literal '" + text + "' in '" + line + "'; expected xK or !xK");
            l.variable = std::stoi(text.substr(1));
            if (l.variable >= c.variables)
                fail("x" + std::to_string(l.variable) + " is not an input; expected x0 to x" + std::to_string(c.variables - 1));
            clause.push_back(l);
            if (bar == std::string::npos) break;
            pos = bar + 1;
        }
        c.clauses.push_back(std::move(clause));
    }
    if (c.variables == 0) fail("no 'variables N' line");
    if (c.clauses.empty()) fail("no clauses");
    return c;
}

circuit read_circuit(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw invalid_argument("--circuit", "'" + path + "' cannot be read");
    return parse_circuit(in, path);
}

void validate(std::int64_t tasks, std::int64_t repeat, std::uint64_t total) {
    if (tasks < 1 || static_cast<std::uint64_t>(tasks) > total)
        throw invalid_argument("--tasks", "is " + std::to_string(tasks) + "; expected 1 to " + std::to_string(total));
    if (repeat < 1 || repeat > 1'000'000'000)
        throw invalid_argument("--repeat", "is " + std::to_string(repeat) + "; expected 1 to 1000000000");
}

block task_block(std::uint32_t task, std::uint32_t tasks, std::uint64_t total) {
    const auto first = static_cast<std::uint32_t>(std::uint64_t{task} * total / tasks);
    const auto end = static_cast<std::uint32_t>((std::uint64_t{task} + 1) * total / tasks);
    return {first, end - first};
}

std::uint32_t task_width(std::uint32_t tasks, std::uint64_t total) {
    return static_cast<std::uint32_t>((total + tasks - 1) / tasks);
}

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

void run_task(const circuit& c, std::uint32_t task, std::uint32_t tasks, int repeat, std::span<std::uint8_t> flags) {
    const block b = task_block(task, tasks, c.combinations());
    std::fill(flags.begin(), flags.end(), std::uint8_t{0});
    for (std::uint32_t k = 0; k < b.count; ++k) {
        bool satisfied = false;
        for (int r = 0; r < repeat; ++r) {
            volatile std::uint32_t z = b.first + k;
            satisfied = c.satisfied(z);
        }
        flags[k] = satisfied ? 1 : 0;
    }
}

std::vector<std::uint32_t> solutions(std::span<const std::uint8_t> flags, std::uint32_t tasks, std::uint64_t total) {
    std::vector<std::uint32_t> found;
    const std::uint32_t width = task_width(tasks, total);
    for (std::uint32_t t = 0; t < tasks; ++t) {
        const block b = task_block(t, tasks, total);
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

std::vector<std::uint32_t> sequential(const circuit& c) {
    std::vector<std::uint32_t> found;
    const std::uint64_t total = c.combinations();
    for (std::uint64_t z = 0; z < total; ++z)
        if (c.satisfied(static_cast<std::uint32_t>(z))) found.push_back(static_cast<std::uint32_t>(z));
    return found;
}

std::string to_bits(std::uint32_t z, int n) {
    std::string s(static_cast<std::size_t>(n), '0');
    for (int i = 0; i < n; ++i)
        if ((z >> i) & 1u) s[static_cast<std::size_t>(i)] = '1';
    return s;
}

}  // namespace pfarm::apps::circuit
