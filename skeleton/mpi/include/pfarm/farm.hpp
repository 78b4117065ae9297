// pfarm: the MPI task farm, C++ API (Gonzalez-Velez & Cole, "Adaptive statistical scheduling of divisible workloads
// in heterogeneous systems", section 4: the user gives <I, O, f> and a technique).
//
//   std::vector<double> in = ..., out(in.size());
//   auto report = pfarm::farm(MPI_COMM_WORLD, std::span(in), std::span(out),
//                             [](const double& x, double& y) { y = x * x; }, {.schedule = {.technique = "gss"}});
//
// Every rank calls farm() collectively, like an MPI collective; only rank 0's buffers are used (unless the
// input is replicated, when every rank reads its own copy). Rank 0 is the farmer; the others are workers; with
// `farmer_computes` rank 0 works too. Outputs land in rank 0's `out`, in task order, whatever the technique.
// The shapes beside it (docs/using-pfarm.md): an index range instead of an input array (index_range), results
// of any size (a task returns std::vector<T>), results streamed to a callback on rank 0 as they arrive
// (farm_stream), and a schedule that learns across calls (schedule_options::learned, pfarm/schedule.hpp).
// The protocol (messages, tags, termination) is described in docs/skeleton.md.
#pragma once

#include "pfarm/calibration.hpp"
#include "pfarm/chunk_sizes.hpp"
#include "pfarm/registry.hpp"
#include "pfarm/error.hpp"
#include "pfarm/farm_options.hpp"
#include "pfarm/farmer.hpp"
#include "pfarm/report_merge.hpp"
#include "pfarm/schedule.hpp"
#include "pfarm/sample.hpp"
#include "pfarm/steal_schedule.hpp"
#include "pfarm/technique.hpp"
#include "pfarm/trace.hpp"

#include <mpi.h>

#include <concepts>
#include <cstddef>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace pfarm {

/// A task's worker function failed. Every rank of the farm throws it, naming the task and the message.
class worker_error : public error {
public:
    worker_error(task_count task, int rank, const std::string& message)
        : error("task " + std::to_string(task) + " failed on rank " + std::to_string(rank) + ": " + message),
          task_(task), rank_(rank), message_(message) {}
    task_count task() const noexcept { return task_; }
    int rank() const noexcept { return rank_; }
    const std::string& message() const noexcept { return message_; }

private:
    task_count task_;
    int rank_;
    std::string message_;
};

/// The tasks [first, last) of a farm with no input array: the worker function receives the task index.
struct index_range {
    task_count first = 0;
    task_count last = 0;
    /// last - first: the number of tasks; 0 when last <= first or when the difference does not fit a task_count
    /// (farm() refuses both as "range").
    task_count size() const noexcept {
        task_count n = 0;
        return last > first && !__builtin_sub_overflow(last, first, &n) ? n : 0;
    }
};

namespace detail {

/// Variable-size results on the wire and in the sinks: a chunk's payload is an index of `count` 64-bit byte
/// counts, padded to 64 bytes, then each task's bytes, each starting at a multiple of the result's alignment.
constexpr std::size_t round_up(std::size_t bytes, std::size_t to) { return (bytes + to - 1) / to * to; }
constexpr std::size_t variable_index_bytes(task_count count) {
    return round_up(static_cast<std::size_t>(count) * sizeof(std::uint64_t), 64);
}

/// A chunk's results handed to a sink on rank 0 (tasks 0-based, as the engine counts them).
struct results_view {
    task_count first = 0, count = 0;
    const std::byte* data = nullptr;  ///< fixed: count x out_bytes; variable: the index, then the bytes
    std::size_t out_bytes = 0;        ///< fixed: bytes of one task's results
    bool variable = false;
    std::size_t align = 1;            ///< variable: alignment of each task's bytes
    std::size_t index_bytes = 0;      ///< variable: bytes of the index (from the message: a reclaim may have cut the chunk)
    task_count skip = 0;              ///< `data` holds `skip` tasks before `first`, not delivered (computed elsewhere first)

    /// Calls f(task, bytes, size) for every task of the chunk, in order.
    template <class F>
    void for_each(F&& f) const {
        if (!variable) {
            for (task_count i = 0; i < count; ++i)
                f(first + i, data + static_cast<std::size_t>(skip + i) * out_bytes, out_bytes);
            return;
        }
        std::size_t at = index_bytes;
        for (task_count i = 0; i < skip + count; ++i) {
            std::uint64_t size = 0;
            std::memcpy(&size, data + static_cast<std::size_t>(i) * sizeof size, sizeof size);
            if (i >= skip) f(first + i - skip, data + at, static_cast<std::size_t>(size));
            at = round_up(at + static_cast<std::size_t>(size), align);
        }
    }
};

/// Where a task with results of any size writes them: once, the whole result.
class result_writer {
public:
    virtual void write(const void* bytes, std::size_t size) = 0;

protected:
    ~result_writer() = default;
};

/// The type-erased description of a task that the engine runs.
struct task_kernel {
    std::size_t in_bytes = 0;   ///< bytes of one input element (0: an index range, no inputs travel)
    std::size_t out_bytes = 0;  ///< bytes of the output of one task (all its output elements); 0 when variable
    /// Computes task `index` (0-based) from `in` (one input element) into `out` (out_bytes). May throw.
    std::function<void(task_count index, const std::byte* in, std::byte* out)> run;
    /// Instead of `run`: a task whose results have any size writes them to the writer (once). May throw.
    std::function<void(task_count index, const std::byte* in, result_writer& out)> run_variable;
    std::size_t out_align = 1;  ///< variable: the alignment of the result's elements (<= 64)
    /// Rank 0: takes each chunk's results as they arrive, instead of `out` (streamed results). May throw: the
    /// farm then stops on every rank with that message.
    std::function<void(const results_view&)> deliver;
    /// What the user's function computes beyond the task's index and input (an index range's first index): part
    /// of a journal's fingerprint.
    std::string identity;
    /// Fixed-size outputs: the out_bytes a failed task's outputs become with on_task_error skip (its Out{} each);
    /// empty: zero bytes. Variable results: a failed task's result is empty.
    std::vector<std::byte> fill;
    /// The first index the user sees (an index range's range.first): failed_tasks are reported from it.
    task_count index_base = 0;
    /// Set on rank 0 when the caller's arguments are wrong: the engine makes every rank throw
    /// invalid_argument(bad_argument, bad_message) together, so nobody hangs.
    std::string bad_argument, bad_message;

    bool variable() const noexcept { return static_cast<bool>(run_variable); }
    /// Whether results go to `deliver` rather than straight into `out` (variable results always do).
    bool streamed() const noexcept { return static_cast<bool>(deliver); }
};

/// The engine behind farm() and the C API. `tasks` and the buffers matter on rank 0 (and `in` on every rank
/// with replicated input). Elements travel as their bytes (a homogeneous cluster is assumed).
farm_report run_farm(MPI_Comm comm, const std::byte* in, std::byte* out, task_count tasks, const task_kernel& kernel,
                     const farm_options& options);

/// Calls fn with the task index first when it takes it: fn(index, args...), else fn(args...).
template <class F, class... A>
decltype(auto) call_task(F& fn, task_count index, A&&... args) {
    if constexpr (std::is_invocable_v<F&, task_count, A&&...>) return fn(index, std::forward<A>(args)...);
    else return fn(std::forward<A>(args)...);
}

template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {
    using value_type = T;
};

/// A task's inputs: a contiguous, sized range of trivially copyable elements (std::vector, std::array, std::span,
/// a C array), not an index_range.
template <class R>
concept task_inputs = !std::is_same_v<std::remove_cvref_t<R>, index_range> && std::ranges::contiguous_range<const R&> &&
                      std::ranges::sized_range<const R&> && std::is_trivially_copyable_v<std::ranges::range_value_t<R>>;

/// Where the tasks' outputs go: a contiguous, sized, writable range of trivially copyable elements.
template <class R>
concept task_outputs = std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
                       std::is_trivially_copyable_v<std::ranges::range_value_t<R>> &&
                       !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R>>>;

/// The span over a task_inputs or task_outputs range.
template <class R>
auto as_span(R&& r) {
    return std::span(std::ranges::data(r), std::ranges::size(r));
}

/// What a task returns: std::vector<T> (results of any size) or one trivially copyable value.
template <class R>
void check_result_type() {
    if constexpr (is_vector<R>::value) {
        static_assert(std::is_trivially_copyable_v<typename is_vector<R>::value_type>,
                      "a task's std::vector<T> result needs a trivially copyable T");
        static_assert(alignof(typename is_vector<R>::value_type) <= 64, "results are aligned up to alignas(64)");
    } else {
        static_assert(std::is_trivially_copyable_v<R> && !std::is_void_v<R>,
                      "a streamed task returns std::vector<T> or a trivially copyable value");
    }
}

/// The fill of a failed task's `count` outputs of type Out (on_task_error skip): each Out{} where Out can be
/// value-initialised, zero bytes otherwise.
template <class Out>
std::vector<std::byte> fill_of(std::size_t count) {
    std::vector<std::byte> bytes(sizeof(Out) * count);
    if constexpr (std::is_default_constructible_v<Out>) {
        const Out value{};
        for (std::size_t i = 0; i < count; ++i) std::memcpy(bytes.data() + i * sizeof(Out), &value, sizeof(Out));
    }
    return bytes;
}

/// A kernel for tasks that return a value (R): fixed size (out_bytes) or, for std::vector<T>, any size.
/// `call(index, in)` runs the user's function on task `index` (0-based) and input bytes `in`.
template <class R, class Call>
task_kernel returning_kernel(std::size_t in_bytes, Call call) {
    check_result_type<R>();
    task_kernel k;
    k.in_bytes = in_bytes;
    if constexpr (is_vector<R>::value) {
        using T = typename is_vector<R>::value_type;
        k.out_align = alignof(T);
        k.run_variable = [call](task_count i, const std::byte* in, result_writer& out) {
            const R r = call(i, in);
            out.write(r.data(), r.size() * sizeof(T));
        };
    } else {
        k.out_bytes = sizeof(R);
        k.fill = fill_of<R>(1);
        k.run = [call](task_count i, const std::byte* in, std::byte* out) {
            const R r = call(i, in);
            std::memcpy(out, &r, sizeof(R));
        };
    }
    return k;
}

/// Hands each task's result of a view to on_result(index, ...) with the task's absolute index (first + i).
template <class R, class Sink>
std::function<void(const results_view&)> result_sink(task_count first, Sink& on_result) {
    return [first, &on_result](const results_view& v) {
        v.for_each([&](task_count i, const std::byte* bytes, std::size_t size) {
            if constexpr (is_vector<R>::value) {
                using T = typename is_vector<R>::value_type;
                // Each task's bytes start at a multiple of alignof(T) in a 64-byte aligned buffer.
                on_result(first + i, std::span<const T>(reinterpret_cast<const T*>(bytes), size / sizeof(T)));
            } else {
                R r;
                std::memcpy(&r, bytes, sizeof(R));
                on_result(first + i, static_cast<const R&>(r));
            }
        });
    };
}

/// Checks `range` on rank 0 (the engine makes every rank throw rank 0's verdict) and names it in the kernel's
/// identity (a journal's fingerprint).
inline void check_range(int rank, const index_range& range, task_kernel& kernel) {
    kernel.identity = "index range from " + std::to_string(range.first);
    kernel.index_base = range.first;
    if (rank == 0 && range.last <= range.first)
        kernel.bad_argument = "range", kernel.bad_message = "is [" + std::to_string(range.first) + ", " +
                                                           std::to_string(range.last) + "): no tasks; expected first < last";
    else if (rank == 0 && (range.size() == 0 || range.size() > max_tasks))  // 0: last - first overflows
        kernel.bad_argument = "range", kernel.bad_message = "is [" + std::to_string(range.first) + ", " +
                                                           std::to_string(range.last) + "): more than " +
                                                           std::to_string(max_tasks) + " (2^53) tasks";
}

/// Outputs per task: rank 0's out.size() / tasks, broadcast (a worker's own `out` may be empty). On rank 0, a size
/// that is not a whole multiple becomes the kernel's bad argument "out" (unless one is already set).
inline std::size_t outputs_per_task(MPI_Comm comm, int rank, task_count tasks, std::size_t out_size, task_kernel& kernel) {
    unsigned long long outputs = tasks <= 0 ? 1 : out_size / static_cast<std::size_t>(tasks);
    MPI_Bcast(&outputs, 1, MPI_UNSIGNED_LONG_LONG, 0, comm);
    if (rank == 0 && kernel.bad_argument.empty() && tasks > 0 &&
        (out_size % static_cast<std::size_t>(tasks) != 0 || outputs == 0))
        kernel.bad_argument = "out", kernel.bad_message = "has " + std::to_string(out_size) + " elements for " +
                                                          std::to_string(tasks) + " tasks; expected a whole multiple";
    return static_cast<std::size_t>(outputs);
}

}  // namespace detail

/// Farms `fn` over `in` into `out` (rank 0's buffers; any contiguous ranges: std::vector, std::array, std::span, a
/// C array, of trivially copyable In and Out). `fn` is called as fn(const In&, Out&) when
/// out.size() == in.size(), or fn(const In&, std::span<Out>) with out.size() / in.size() outputs per task;
/// either form may take the task's index first: fn(task_count index, const In&, ...).
/// Throws pfarm::invalid_argument (bad sizes, zero tasks, unknown technique: on every rank) and
/// pfarm::worker_error (a task threw: on every rank; unless protocol_options::on_task_error retries or skips it).
template <class InRange, class OutRange, class F>
    requires detail::task_inputs<InRange> && detail::task_outputs<OutRange>
farm_report farm(MPI_Comm comm, const InRange& inputs, OutRange&& outputs, F&& fn, const farm_options& options = {}) {
    using In = std::ranges::range_value_t<InRange>;
    using Out = std::ranges::range_value_t<OutRange>;
    const std::span<const In> in = detail::as_span(inputs);
    const std::span<Out> out = detail::as_span(outputs);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    detail::task_kernel kernel;
    const std::size_t ratio = detail::outputs_per_task(comm, rank, static_cast<task_count>(in.size()), out.size(), kernel);
    kernel.in_bytes = sizeof(In);
    kernel.out_bytes = sizeof(Out) * ratio;
    kernel.fill = detail::fill_of<Out>(ratio);
    kernel.run = [&fn, ratio](task_count i, const std::byte* x, std::byte* y) {
        In input;
        std::memcpy(&input, x, sizeof(In));
        if constexpr (std::is_invocable_v<F&, const In&, Out&> || std::is_invocable_v<F&, task_count, const In&, Out&>) {
            Out result{};
            detail::call_task(fn, i, static_cast<const In&>(input), result);
            std::memcpy(y, &result, sizeof(Out));
            (void)ratio;
        } else {
            static_assert(std::is_invocable_v<F&, const In&, std::span<Out>> ||
                              std::is_invocable_v<F&, task_count, const In&, std::span<Out>>,
                          "the worker function must be callable as fn([index,] const In&, Out&) or "
                          "fn([index,] const In&, std::span<Out>)");
            // The engine's buffers hold whole Out elements at multiples of sizeof(Out): suitably aligned.
            detail::call_task(fn, i, static_cast<const In&>(input), std::span<Out>(reinterpret_cast<Out*>(y), ratio));
        }
    };
    return detail::run_farm(comm, reinterpret_cast<const std::byte*>(in.data()), reinterpret_cast<std::byte*>(out.data()),
                            static_cast<task_count>(in.size()), kernel, options);
}

/// Farms `fn` over the indices of `range` into `out` (rank 0's buffer; range.size() x k elements): fn is called
/// as fn(task_count index, Out&), or fn(task_count index, std::span<Out>) with k outputs per task. No input
/// travels: a worker computes from the index alone.
template <class OutRange, class F>
    requires detail::task_outputs<OutRange>
farm_report farm(MPI_Comm comm, index_range range, OutRange&& outputs, F&& fn, const farm_options& options = {}) {
    using Out = std::ranges::range_value_t<OutRange>;
    const std::span<Out> out = detail::as_span(outputs);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    const task_count tasks = std::max<task_count>(range.size(), 0);
    detail::task_kernel kernel;
    detail::check_range(rank, range, kernel);
    const std::size_t ratio = detail::outputs_per_task(comm, rank, tasks, out.size(), kernel);
    kernel.out_bytes = sizeof(Out) * ratio;
    kernel.fill = detail::fill_of<Out>(ratio);
    const task_count first = range.first;
    kernel.run = [&fn, ratio, first](task_count i, const std::byte*, std::byte* y) {
        if constexpr (std::is_invocable_v<F&, task_count, Out&>) {
            Out result{};
            fn(first + i, result);
            std::memcpy(y, &result, sizeof(Out));
            (void)ratio;
        } else {
            static_assert(std::is_invocable_v<F&, task_count, std::span<Out>>,
                          "the worker function must be callable as fn(task_count index, Out&) or "
                          "fn(task_count index, std::span<Out>)");
            fn(first + i, std::span<Out>(reinterpret_cast<Out*>(y), ratio));
        }
    };
    return detail::run_farm(comm, nullptr, reinterpret_cast<std::byte*>(out.data()), tasks, kernel, options);
}

/// Streams results: farms `fn` over `in` (rank 0's input) and hands each task's result to on_result on rank 0
/// as its chunk arrives, instead of storing it. fn is called as fn([task_count index,] const In&) and returns
/// std::vector<T> (any number of elements, trivially copyable T) or one trivially copyable value R.
/// on_result(task_count index, std::span<const T>) (or (index, const R&)) is called on rank 0 only, once per
/// task, from inside this call (never concurrently): chunks in the order their results arrive, the tasks of a
/// chunk in index order. The span is valid during the call only. If it throws, the farm stops on every rank.
template <class InRange, class F, class OnResult>
    requires detail::task_inputs<InRange>
farm_report farm_stream(MPI_Comm comm, const InRange& inputs, F&& fn, OnResult&& on_result,
                        const farm_options& options = {}) {
    using In = std::ranges::range_value_t<InRange>;
    const std::span<const In> in = detail::as_span(inputs);
    using R = std::decay_t<decltype(detail::call_task(fn, task_count{}, std::declval<const In&>()))>;
    detail::task_kernel kernel = detail::returning_kernel<R>(sizeof(In), [&fn](task_count i, const std::byte* x) {
        In input;
        std::memcpy(&input, x, sizeof(In));
        return detail::call_task(fn, i, static_cast<const In&>(input));
    });
    kernel.deliver = detail::result_sink<R>(0, on_result);
    return detail::run_farm(comm, reinterpret_cast<const std::byte*>(in.data()), nullptr, static_cast<task_count>(in.size()),
                            kernel, options);
}

/// Streams results over an index range: fn(task_count index) returns std::vector<T> or a value; on_result as
/// above, with the task's index in the range.
template <class F, class OnResult>
farm_report farm_stream(MPI_Comm comm, index_range range, F&& fn, OnResult&& on_result, const farm_options& options = {}) {
    using R = std::decay_t<std::invoke_result_t<F&, task_count>>;
    const task_count first = range.first;
    detail::task_kernel kernel =
        detail::returning_kernel<R>(0, [&fn, first](task_count i, const std::byte*) { return fn(first + i); });
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    detail::check_range(rank, range, kernel);
    kernel.deliver = detail::result_sink<R>(first, on_result);
    return detail::run_farm(comm, nullptr, nullptr, std::max<task_count>(range.size(), 0), kernel, options);
}

/// Results of any size, in task order: fn([index,] const In&) returns std::vector<T>; rank 0's `out` becomes
/// one vector per task (other ranks' `out` is left alone).
template <class InRange, class T, class F>
    requires detail::task_inputs<InRange> && std::is_trivially_copyable_v<T>
farm_report farm(MPI_Comm comm, const InRange& inputs, std::vector<std::vector<T>>& out, F&& fn,
                 const farm_options& options = {}) {
    using In = std::ranges::range_value_t<InRange>;
    const std::span<const In> in = detail::as_span(inputs);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) out.assign(in.size(), {});
    auto store = [&out](task_count i, std::span<const T> r) { out[static_cast<std::size_t>(i)].assign(r.begin(), r.end()); };
    return farm_stream(comm, in, std::forward<F>(fn), store, options);
}

/// Results of any size over an index range: fn(task_count index) returns std::vector<T>; rank 0's out[i] holds
/// task range.first + i's result.
template <class T, class F>
    requires std::is_trivially_copyable_v<T>
farm_report farm(MPI_Comm comm, index_range range, std::vector<std::vector<T>>& out, F&& fn,
                 const farm_options& options = {}) {
    // Sized when the first result arrives (on rank 0), after the farm has agreed on the range: a huge range is then
    // an error on every rank (the farm stops with it), not an allocation failure on rank 0 alone.
    const task_count first = range.first;
    const auto tasks = static_cast<std::size_t>(range.size());
    bool sized = false;
    auto store = [&out, &sized, first, tasks](task_count i, std::span<const T> r) {
        if (!sized) {
            try {
                out.assign(tasks, {});
            } catch (const std::exception&) {  // std::bad_alloc, std::length_error
                throw invalid_argument("out", "cannot hold one result vector for each of the " + std::to_string(tasks) +
                                                  " tasks of the range");
            }
            sized = true;
        }
        out[static_cast<std::size_t>(i - first)].assign(r.begin(), r.end());
    };
    return farm_stream(comm, range, std::forward<F>(fn), store, options);
}

}  // namespace pfarm
