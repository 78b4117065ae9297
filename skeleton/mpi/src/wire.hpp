// pfarm MPI engine, internal: the wire format, the one place where the protocol's messages (protocol.hpp)
// become bytes. A message is a fixed header padded to a multiple of 64 bytes (request_payload_offset,
// reply_payload_offset), then its payload: a request's results, a reply's inputs, a failure's text; a payload
// too large to travel in the message follows it on its own tag (messages.hpp). Buffers are 64-byte aligned,
// so every element a user's function reads or writes in them is aligned for its type up to alignas(64).
#pragma once

#include "pfarm/protocol.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

namespace pfarm::detail {

constexpr std::size_t payload_offset = 64;  ///< where a message's payload starts; a multiple of any alignment up to 64

/// resource_sample on the wire: plain doubles and a presence mask.
struct wire_sample {
    double values[5] = {0, 0, 0, 0, 0};  // availability, run_queue, load1, latency, benchmark
    std::int32_t cores = 0;
    std::uint32_t present = 0;
};

struct request_header {
    std::int32_t kind = 1;          ///< request_message::kind
    std::int32_t results_follow = 0;  ///< 1: the results did not fit and follow on tag_results (messages.hpp)
    std::int64_t first = 0;         ///< the completed (or given-back) chunk
    std::int64_t count = 0;
    double seconds = 0.0;
    double started = 0.0;           ///< worker clock, seconds since the farm started there
    double finished = 0.0;
    std::int64_t failed_task = -1;
    wire_sample sample;
    std::int64_t results_bytes = 0;  ///< the results' bytes (with results of any size: their index included)
    std::int64_t index_bytes = 0;    ///< results of any size: bytes of their index (farm.hpp variable_index_bytes)
};

struct reply_header {
    std::int32_t kind = 1;  ///< reply_message::kind
    std::int32_t calibration = 0;
    std::int64_t first = 0;
    std::int64_t count = 0;
    double share = 0.0;
    double thief_seconds = 0.0;
    double thief_busy = 0.0;
    std::int32_t inputs_follow = 0;  ///< 1: the inputs did not fit and follow on tag_inputs (messages.hpp)
    std::int32_t thieves = 1;        ///< reclaim: reply_message::thieves
};

static_assert(sizeof(request_header) <= 2 * payload_offset && sizeof(reply_header) <= payload_offset);
constexpr std::size_t request_payload_offset = 2 * payload_offset;  ///< the request header needs 120 bytes
constexpr std::size_t reply_payload_offset = payload_offset;
/// A hierarchical master's failure message up carries, before the text, the rank whose failure it is (the worker's,
/// or its own).
constexpr std::size_t failure_rank_bytes = sizeof(std::int64_t);

inline wire_sample to_wire(const resource_sample& s) {
    wire_sample w;
    const std::optional<double>* fields[5] = {&s.availability, &s.run_queue, &s.load1, &s.latency, &s.benchmark};
    for (int i = 0; i < 5; ++i)
        if (*fields[i]) w.values[i] = **fields[i], w.present |= 1u << i;
    if (s.cores) w.cores = *s.cores, w.present |= 1u << 5;
    return w;
}

inline resource_sample from_wire(const wire_sample& w) {
    resource_sample s;
    std::optional<double>* fields[5] = {&s.availability, &s.run_queue, &s.load1, &s.latency, &s.benchmark};
    for (int i = 0; i < 5; ++i)
        if (w.present & (1u << i)) *fields[i] = w.values[i];
    if (w.present & (1u << 5)) s.cores = w.cores;
    return s;
}

/// A request's header (its payload, results or text, follows at request_payload_offset). Clock times are
/// the worker's own; the farmer turns them into its clock with the offset it measured.
/// Writes `m` into `h`, a header fresh from its default construction (in place in a send buffer, or a local).
inline void encode_into(request_header& h, const request_message& m) {
    h.kind = static_cast<std::int32_t>(m.what);
    h.first = m.done.first;
    h.count = m.done.count;
    h.seconds = m.seconds;
    h.started = m.started;
    h.finished = m.finished;
    h.failed_task = m.failed_task;
    if (m.has_sample) h.sample = to_wire(m.sample);
}

inline request_header encode(const request_message& m) {
    request_header h;
    encode_into(h, m);
    return h;
}

/// Decodes `h` into `m` (its text, if any, is the caller's); `offset` = worker clock - farmer clock.
inline void decode(const request_header& h, double offset, request_message& m) {
    m.what = static_cast<request_message::kind>(h.kind);
    m.done = {h.first, h.count};
    m.seconds = h.seconds;
    m.started = h.started - offset;
    m.finished = h.finished - offset;
    m.failed_task = h.failed_task;
    m.has_sample = h.sample.present != 0;
    if (m.has_sample) m.sample = from_wire(h.sample);
}

inline reply_header encode(const reply_message& r) {
    return {static_cast<std::int32_t>(r.what), r.calibration ? 1 : 0, r.work.first, r.work.count, r.share,
            r.thief_seconds, r.thief_busy, 0, r.thieves};
}

inline reply_message decode(const reply_header& h) {
    reply_message r;
    r.what = static_cast<reply_message::kind>(h.kind);
    r.calibration = h.calibration != 0;
    r.work = {h.first, h.count};
    r.share = h.share;
    r.thief_seconds = h.thief_seconds;
    r.thief_busy = h.thief_busy;
    r.thieves = std::max<std::int32_t>(1, h.thieves);
    return r;
}

/// A message buffer, 64-byte aligned, grown and never shrunk (no allocation once warm). Its new bytes are zeroed
/// as it grows, so that their pages are faulted in here and not inside a timed task: a worker rank's tasks write
/// their results into such a buffer, and the page faults alone made its first task (the calibration task) several
/// times longer on a short task, which a times-only calibration read as a slower rank
/// (mpi.farm.alignment checks that a worker's first task faults no page of its outputs in).
class wire_buffer {
public:
    std::byte* data() noexcept { return data_.get(); }
    const std::byte* data() const noexcept { return data_.get(); }
    std::size_t size() const noexcept { return size_; }
    void reserve(std::size_t bytes) {
        if (bytes <= size_) return;
        const std::size_t grown = (bytes * 3 / 2 + 127) / 64 * 64;
        std::unique_ptr<std::byte[], deleter> next(static_cast<std::byte*>(::operator new(grown, std::align_val_t{64})));
        if (size_) std::memcpy(next.get(), data_.get(), size_);
        std::memset(next.get() + size_, 0, grown - size_);
        data_ = std::move(next);
        size_ = grown;
    }
    template <class T>
    void put(const T& header) {
        reserve(sizeof(T));
        std::memcpy(data(), &header, sizeof(T));
    }
    template <class T>
    T get() const {
        T header;
        std::memcpy(&header, data(), sizeof(T));
        return header;
    }

private:
    struct deleter {
        void operator()(std::byte* p) const noexcept { ::operator delete(p, std::align_val_t{64}); }
    };
    std::unique_ptr<std::byte[], deleter> data_;
    std::size_t size_ = 0;
};

}  // namespace pfarm::detail
