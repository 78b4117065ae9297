// Fuzzes the trace reader (pfarm/trace.hpp read_trace: CSV, JSON, the legacy pfarm-sim CSV; pfarm-plot and
// pfarm-sim --costs read it): the input is the file.
// Invariants: a refusal is a pfarm::invalid_argument naming "--trace"; an accepted trace has ranks >= 0, first
// >= 0, counts >= 1, finite times with finished >= started, finite readings, and counts adding up to the
// summary's tasks when it has them; each chunk's rank, first and count are the integers the file holds (an
// independent reading of the file: no value wraps around); and the trace writes back (write_trace, CSV and
// JSON) and reads back the same, unless the writer refuses the one thing it alone checks, the technique's name.
#include "fuzz_support.hpp"

#include "pfarm/trace.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

namespace {

using pfarm::fuzz::check;
using pfarm::fuzz::fail;

bool same(const std::optional<double>& a, const std::optional<double>& b) { return a == b; }

bool same(const pfarm::chunk_trace& a, const pfarm::chunk_trace& b) {
    return a.rank == b.rank && a.first == b.first && a.count == b.count && a.sent == b.sent && a.started == b.started &&
           a.finished == b.finished && a.received == b.received && a.calibration == b.calibration &&
           same(a.sample.availability, b.sample.availability) && same(a.sample.run_queue, b.sample.run_queue) &&
           same(a.sample.load1, b.sample.load1) && same(a.sample.latency, b.sample.latency) &&
           same(a.sample.benchmark, b.sample.benchmark);
}

/// The (rank, first, count) of each chunk as the file writes them, read apart from read_trace: nlohmann for
/// JSON; for CSV the fields under the header's rank (or worker), first and count, with strtoll. Empty when the
/// CSV has a number out of long long's range (JSON integers beyond it are refused by read_trace).
std::optional<std::vector<std::array<long long, 3>>> integers_in(const std::string& text, bool json) {
    std::vector<std::array<long long, 3>> out;
    if (json) {
        const auto doc = nlohmann::json::parse(text);
        for (const auto& c : doc["chunks"]) {
            out.push_back({c["rank"].get<long long>(), c["first"].get<long long>(), c["count"].get<long long>()});
        }
        return out;
    }
    std::vector<std::string> header;
    int at[3] = {-1, -1, -1};
    std::size_t from = 0;
    while (from < text.size()) {
        const auto end = text.find('\n', from);
        std::string line = text.substr(from, end == std::string::npos ? std::string::npos : end - from);
        from = end == std::string::npos ? text.size() : end + 1;
        const auto first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos || line[first] == '#') continue;
        std::vector<std::string> fields;
        std::size_t f = 0;
        for (;;) {
            const auto comma = line.find(',', f);
            std::string field = line.substr(f, comma == std::string::npos ? std::string::npos : comma - f);
            const auto b = field.find_first_not_of(" \t\r"), e = field.find_last_not_of(" \t\r");
            fields.push_back(b == std::string::npos ? "" : field.substr(b, e - b + 1));
            if (comma == std::string::npos) break;
            f = comma + 1;
        }
        if (header.empty()) {
            header = fields;
            for (int i = 0; i < static_cast<int>(fields.size()); ++i) {
                if (fields[static_cast<std::size_t>(i)] == "rank" || fields[static_cast<std::size_t>(i)] == "worker") at[0] = i;
                if (fields[static_cast<std::size_t>(i)] == "first") at[1] = i;
                if (fields[static_cast<std::size_t>(i)] == "count") at[2] = i;
            }
            continue;
        }
        std::array<long long, 3> row{};
        for (int k = 0; k < 3; ++k) {
            const std::string& field = fields.at(static_cast<std::size_t>(at[k]));
            errno = 0;
            row[static_cast<std::size_t>(k)] = std::strtoll(field.c_str(), nullptr, 10);
            if (errno == ERANGE) return std::nullopt;
        }
        out.push_back(row);
    }
    return out;
}

void written_back(const pfarm::trace_file& t, const char* suffix) {
    static std::string path;
    path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/pfarm-fuzz-trace-" +
           std::to_string(getpid()) + suffix;
    try {
        pfarm::write_trace(path, t.summary, t.chunks, "out");
    } catch (const pfarm::invalid_argument& e) {
        check(std::string_view(e.what()).find("the technique's name") != std::string_view::npos,
              std::string("write_trace refuses what read_trace accepted: ") + e.what());
        return;
    }
    const auto again = pfarm::fuzz::accepts("again", [&] { return pfarm::read_trace(path, "again"); });
    std::remove(path.c_str());
    check(again.has_value(), std::string("a written trace does not read back (") + suffix + ")");
    check(again->chunks.size() == t.chunks.size(), std::string("read back with another chunk count (") + suffix + ")");
    for (std::size_t i = 0; i < t.chunks.size(); ++i)
        check(same(again->chunks[i], t.chunks[i]), "chunk " + std::to_string(i) + " reads back different (" + suffix + ")");
    const auto& a = again->summary;
    const auto& b = t.summary;
    check(a.source == b.source && a.technique == b.technique && a.ranks == b.ranks && a.workers == b.workers &&
              a.tasks == b.tasks && a.makespan == b.makespan && a.percent_imbalance == b.percent_imbalance &&
              a.cov == b.cov && a.k == b.k,
          std::string("the summary reads back different (") + suffix + ")");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& path = pfarm::fuzz::scratch_file(data, size);
    const auto t = pfarm::fuzz::accepts("--trace", [&] { return pfarm::read_trace(path, "--trace"); });
    if (!t) return 0;
    pfarm::task_count total = 0;
    for (const auto& c : t->chunks) {
        check(c.rank >= 0 && c.first >= 0 && c.count >= 1, "a chunk with rank, first or count out of range");
        for (const double v : {c.sent, c.started, c.finished, c.received}) check(std::isfinite(v), "a time that is not finite");
        check(c.finished >= c.started, "a chunk that finishes before it starts");
        for (const auto& r : {c.sample.availability, c.sample.run_queue, c.sample.load1, c.sample.latency, c.sample.benchmark})
            check(!r || std::isfinite(*r), "a reading that is not finite");
        check(!__builtin_add_overflow(total, c.count, &total), "the counts overflow");
    }
    check(!t->summary.tasks || *t->summary.tasks == total, "the counts do not add up to the summary's tasks");

    const std::string text(reinterpret_cast<const char*>(data), size);
    if (const auto integers = integers_in(text, t->format == pfarm::trace_format::json)) {
        check(integers->size() == t->chunks.size(), "the file holds " + std::to_string(integers->size()) + " chunks");
        for (std::size_t i = 0; i < integers->size(); ++i) {
            const auto& c = t->chunks[i];
            const auto& in_file = (*integers)[i];
            check(in_file[0] == c.rank && in_file[1] == c.first && in_file[2] == c.count,
                  "chunk " + std::to_string(i) + " reads as rank " + std::to_string(c.rank) + ", first " +
                      std::to_string(c.first) + ", count " + std::to_string(c.count) + "; the file says " +
                      std::to_string(in_file[0]) + ", " + std::to_string(in_file[1]) + ", " + std::to_string(in_file[2]));
        }
    }
    written_back(*t, ".csv");
    written_back(*t, ".json");
    return 0;
}
