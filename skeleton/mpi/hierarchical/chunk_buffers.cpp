// pfarm MPI engine, the hierarchical farm: a master's chunk buffers (hierarchical.hpp chunk_buffers), found through its
// session's ledger: its workers' results stored into them, the inputs of a slice of them, results of any size packed
// for the message up. master.cpp moves the bytes.
#include "hierarchical.hpp"

#include "results.hpp"

#include "pfarm/error.hpp"

#include <cstring>

namespace pfarm::detail {

const held_chunk& holding(const master_session& session, int rank, task_count task) {
    if (const held_chunk* h = session.holding(task)) return *h;
    throw internal_error("hierarchical farm: rank " + std::to_string(rank) + " holds no chunk with task " +
                         std::to_string(task));
}

void store_results(const task_kernel& kernel, int rank, chunk c, const std::vector<held_chunk>& into, const std::byte* data,
                   std::size_t index_bytes, task_count first) {
    if (!kernel.variable()) {
        const std::size_t out = kernel.out_bytes;
        task_count stored = 0;
        for (const held_chunk& h : into) {
            const task_count lo = std::max(c.first, h.work.first), hi = std::min(c.first + c.count, h.work.first + h.work.count);
            if (hi <= lo) continue;
            std::memcpy(buffers(h).results->data() + request_payload_offset + static_cast<std::size_t>(lo - h.work.first) * out,
                        data + static_cast<std::size_t>(lo - first) * out, static_cast<std::size_t>(hi - lo) * out);
            stored += hi - lo;
        }
        if (stored != c.count)
            throw internal_error("hierarchical farm: rank " + std::to_string(rank) + " got results for [" +
                                 std::to_string(c.first) + ", +" + std::to_string(c.count) +
                                 "), not all of them in chunks it holds");
        return;
    }
    view_of(kernel, c.first, c.count, data, index_bytes, first).for_each([&](task_count task, const std::byte* bytes, std::size_t size) {
        const auto h = std::find_if(into.begin(), into.end(), [&](const held_chunk& x) {
            return task >= x.work.first && task < x.work.first + x.work.count;
        });
        if (h == into.end())
            throw internal_error("hierarchical farm: rank " + std::to_string(rank) + " got results for task " +
                                 std::to_string(task) + ", in no chunk it holds");
        buffers(*h).variable[static_cast<std::size_t>(task - h->work.first)].assign(bytes, bytes + size);
    });
}

const std::byte* inputs_of(const master_session& session, int rank, const task_kernel& kernel, chunk work,
                           std::shared_ptr<wire_buffer>& keep) {
    const std::size_t in = kernel.in_bytes;
    const held_chunk& first = holding(session, rank, work.first);
    if (work.first + work.count <= first.work.first + first.work.count) {
        keep = buffers(first).inputs;
        return keep->data() + static_cast<std::size_t>(work.first - first.work.first) * in;
    }
    keep = std::make_shared<wire_buffer>();  // it spans two chunks (the pool merged them)
    keep->reserve(static_cast<std::size_t>(work.count) * in);
    for (task_count t = work.first; t < work.first + work.count;) {
        const held_chunk& h = holding(session, rank, t);
        const task_count end = std::min(work.first + work.count, h.work.first + h.work.count);
        std::memcpy(keep->data() + static_cast<std::size_t>(t - work.first) * in,
                    buffers(h).inputs->data() + static_cast<std::size_t>(t - h.work.first) * in,
                    static_cast<std::size_t>(end - t) * in);
        t = end;
    }
    return keep->data();
}

std::size_t pack_variable(const task_kernel& kernel, const chunk_buffers& c, task_count count, std::size_t& index) {
    index = variable_index_bytes(count);
    std::size_t bytes = index;
    for (const auto& r : c.variable) bytes = round_up(bytes, kernel.out_align) + r.size();
    c.results->reserve(request_payload_offset + bytes);
    std::byte* payload = c.results->data() + request_payload_offset;
    std::size_t at = index;
    for (std::size_t i = 0; i < c.variable.size(); ++i) {
        const auto& r = c.variable[i];
        const auto size = static_cast<std::uint64_t>(r.size());
        std::memcpy(payload + i * sizeof size, &size, sizeof size);
        at = round_up(at, kernel.out_align);
        if (!r.empty()) std::memcpy(payload + at, r.data(), r.size());
        at += r.size();
    }
    return bytes;
}

}  // namespace pfarm::detail
