// pfarm traces: the one per-chunk record of a run, its summary, and the one file schema (CSV or JSON) with its
// writer and reader, shared by the MPI farm (farm_options::output.trace), pfarm-sim --trace and --costs, and
// pfarm-plot. The schema is described in docs/traces.md. No transport.
#pragma once

#include "pfarm/sample.hpp"
#include "pfarm/technique.hpp"

#include <optional>
#include <string>
#include <vector>

namespace pfarm {

/// One chunk as it ran. A farm's times are seconds since the farm started, on the farmer's clock; a
/// simulator's are simulated time, where `sent` = `started` (its start) and `finished` = `received` (its end).
struct chunk_trace {
    int rank = 0;           ///< the MPI rank that computed it; in a simulator trace, the 0-based worker
    task_count first = 0;
    task_count count = 0;
    double sent = 0.0;      ///< the farmer sent it
    double started = 0.0;   ///< the worker started computing
    double finished = 0.0;  ///< the worker finished computing
    double received = 0.0;  ///< its results reached the farmer
    bool calibration = false;
    resource_sample sample;  ///< the worker's monitor readings with its request (cores and node_key are not stored)
};

/// Which program wrote a trace.
enum class trace_source {
    farm,       ///< the MPI farm: seconds, `rank` an MPI rank (0 the farmer)
    simulator,  ///< pfarm-sim: simulated time, `rank` the 0-based worker
};

/// The run a trace belongs to. A field is empty when the trace does not record it (read_trace of an older or
/// hand-written trace); the farm and the simulator fill every field they have.
struct trace_summary {
    trace_source source = trace_source::farm;
    std::optional<std::string> technique;
    std::optional<int> ranks;             ///< farm: MPI ranks, the farmer included (the simulator has none)
    std::optional<int> workers;           ///< ranks that computed (farm), simulated workers (simulator)
    std::optional<task_count> tasks;      ///< when present, the chunks' counts add up to it
    std::optional<double> makespan;       ///< seconds (farm) or simulated time (simulator)
    std::optional<double> percent_imbalance;
    std::optional<double> cov;
    std::optional<double> k;              ///< the technique's installment factor, where it has one
};

/// How a trace file is stored.
enum class trace_format {
    csv,                   ///< a summary comment line, a header, one row per chunk
    json,                  ///< {"summary": {...}, "chunks": [{...}, ...]}
    legacy_simulator_csv,  ///< pfarm-sim's CSV before the one schema: worker,first,count,start,end,calibration
};

/// A trace as read back.
struct trace_file {
    trace_summary summary;
    std::vector<chunk_trace> chunks;  ///< in the order of the file (hand-out order for the farm and the simulator)
    trace_format format = trace_format::csv;
};

/// Writes a trace: JSON when `path` ends in ".json", CSV otherwise; numbers are written in the shortest form
/// that reads back exactly. Checks first what read_trace checks (counts >= 1, finished >= started, finite
/// numbers, the counts adding up to summary.tasks), so that whatever it writes reads back. Throws
/// pfarm::invalid_argument naming `argument` when the data would not read back, when the file cannot be opened,
/// or when writing or flushing it fails (a full disk: never a silently truncated trace).
void write_trace(const std::string& path, const trace_summary& summary, const std::vector<chunk_trace>& chunks,
                 const std::string& argument = "trace");

/// One chunk as a JSON trace holds it (an element of "chunks": one object, its numbers written exactly), for a
/// report that carries chunk records besides the trace file (a hierarchical farm's master_trace).
std::string chunk_json(const chunk_trace& c);

/// Reads a trace written by write_trace (or an older farm trace, or a legacy pfarm-sim CSV), telling JSON from
/// CSV by the content (JSON starts with '{'). Throws pfarm::invalid_argument naming `argument` ("--trace",
/// "--costs") when the file cannot be read or is not a complete, well-formed trace; the message names the file
/// Checks before a run that a trace can be written to `path` (its folder exists, it is not a folder, it can be
/// opened for writing), so that a typo costs nothing; an existing file is left as it is. invalid_argument naming
/// `argument` otherwise.
void check_trace_path(const std::string& path, const std::string& argument = "trace");

/// and the line (CSV) or the element (JSON).
trace_file read_trace(const std::string& path, const std::string& argument = "trace");

}  // namespace pfarm
