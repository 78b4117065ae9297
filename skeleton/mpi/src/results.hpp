// pfarm MPI engine, internal: a chunk's results as a rank computes them, in the message buffer they travel in
// (after the request header's room, wire.hpp): fixed-size results at i x out_bytes, or results of any size as
// an index of byte counts then each task's bytes (farm.hpp, variable_index_bytes). Used by a worker rank, by
// rank 0's own worker when its results are streamed, and by a one-rank run.
#pragma once

#include "wire.hpp"

#include "pfarm/farm.hpp"

#include <cstdint>
#include <cstring>

namespace pfarm::detail {

class chunk_results final : public result_writer {
public:
    /// Makes room for a chunk of `count` tasks (the buffer is reused: no allocation once warm).
    void begin(const task_kernel& kernel, task_count count) {
        kernel_ = &kernel;
        variable_ = kernel.variable();
        if (variable_) {
            index_bytes_ = variable_index_bytes(count);
            used_ = index_bytes_;
            buffer_.reserve(request_payload_offset + index_bytes_);
        } else {
            index_bytes_ = 0;
            used_ = 0;
            buffer_.reserve(request_payload_offset + static_cast<std::size_t>(count) * kernel.out_bytes);
        }
    }

    /// Runs task `task` (0-based), the chunk's `i`-th, on its input `in`. May throw what the task throws.
    void run(task_count task, task_count i, const std::byte* in) {
        if (variable_) {
            slot_ = i;
            before_ = used_;
            const std::uint64_t none = 0;  // a task that writes nothing has no results
            std::memcpy(payload() + static_cast<std::size_t>(i) * sizeof none, &none, sizeof none);
            kernel_->run_variable(task, in, *this);
        } else {
            kernel_->run(task, in, payload() + static_cast<std::size_t>(i) * kernel_->out_bytes);
        }
    }

    /// Task `i` of the chunk, the last run, failed (on_task_error retry or skip): its results become the fill (the
    /// kernel's, else zero bytes; of any size: empty, whatever it wrote before it threw).
    void fill(task_count i) {
        if (variable_) {
            const std::uint64_t none = 0;
            std::memcpy(payload() + static_cast<std::size_t>(i) * sizeof none, &none, sizeof none);
            used_ = before_;
            return;
        }
        std::byte* at = payload() + static_cast<std::size_t>(i) * kernel_->out_bytes;
        if (kernel_->fill.size() == kernel_->out_bytes) std::memcpy(at, kernel_->fill.data(), kernel_->out_bytes);
        else std::memset(at, 0, kernel_->out_bytes);
    }

    /// Bytes of the results of the first `done` tasks (all computed so far with results of any size).
    std::size_t bytes(task_count done) const {
        return variable_ ? used_ : static_cast<std::size_t>(done) * kernel_->out_bytes;
    }
    std::size_t index_bytes() const noexcept { return index_bytes_; }
    wire_buffer& buffer() noexcept { return buffer_; }
    std::byte* payload() noexcept { return buffer_.data() + request_payload_offset; }

private:
    void write(const void* bytes, std::size_t size) override {
        const std::size_t at = round_up(used_, kernel_->out_align);
        buffer_.reserve(request_payload_offset + at + size);
        if (size > 0) std::memcpy(payload() + at, bytes, size);
        const auto count = static_cast<std::uint64_t>(size);
        std::memcpy(payload() + static_cast<std::size_t>(slot_) * sizeof count, &count, sizeof count);
        used_ = at + size;
    }

    const task_kernel* kernel_ = nullptr;
    bool variable_ = false;  ///< kernel_->variable(), read once per chunk
    wire_buffer buffer_;
    std::size_t index_bytes_ = 0, used_ = 0;
    std::size_t before_ = 0;  ///< used_ before the last task ran (variable results)
    task_count slot_ = 0;
};

/// The view a sink receives of `count` results starting at task `first`, at `data` (where the results of chunk
/// `of`, holding them, start; default: they start at `first`).
inline results_view view_of(const task_kernel& kernel, task_count first, task_count count, const std::byte* data,
                            std::size_t index_bytes, task_count of = -1) {
    results_view v;
    v.first = first;
    v.count = count;
    v.skip = of < 0 ? 0 : first - of;
    v.data = data;
    v.out_bytes = kernel.out_bytes;
    v.variable = kernel.variable();
    v.align = kernel.out_align;
    v.index_bytes = index_bytes;
    return v;
}

}  // namespace pfarm::detail
