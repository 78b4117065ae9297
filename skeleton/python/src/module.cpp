// pfarm Python module (pfarm._pfarm): one farm over the C++ engine (pfarm::detail::run_farm) with a Python worker
// function, the report and the learned schedule as Python objects. The pure-Python package (skeleton/python/pfarm)
// builds map, imap_unordered and the Executor on farm(); docs/python.md describes both layers.
//
// The GIL: farm() releases it for the whole engine (MPI, the farmer's decisions, waiting) and every task takes it
// back for the call into Python (one PyGILState_Ensure per task; per chunk on rank 0 to unpickle a chunk's results).
// A task's exception travels as text (the engine's worker_error message): pfarm._errors.encode_exception makes it
// (the traceback and the pickled exception), pfarm._errors decodes it where the farm raises.
#include "options.hpp"

#include "pfarm/farm.hpp"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <Python.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace py = pybind11;

namespace pfarm::python {
namespace {

/// Holds the GIL for a scope, on a thread that released it (or never had it): PyGILState_Ensure / Release.
class gil_hold {
public:
    gil_hold() : state_(PyGILState_Ensure()) {}
    ~gil_hold() { PyGILState_Release(state_); }
    gil_hold(const gil_hold&) = delete;
    gil_hold& operator=(const gil_hold&) = delete;

private:
    PyGILState_STATE state_;
};

/// What one farm's tasks call, read with the GIL held. Lives on farm()'s stack for the whole farm; the engine's
/// std::function objects capture a pointer to it (copying them never touches a Python reference count).
struct farm_context {
    py::object fn;              ///< the user's function
    task_count offset = 0;      ///< farm task i is the caller's task offset + i (a window of a longer list)
    py::object items;           ///< task i's argument is items[offset + i]; None: the index offset + i itself
    bool star = false;          ///< call fn(*items[i]) instead of fn(items[i])
    bool rows = false;          ///< task i's argument is a row of a NumPy array: its bytes are the task's input
    py::dtype row_dtype;
    std::vector<py::ssize_t> row_shape;
    bool fixed = false;         ///< results are arrays of out_dtype x out_shape, copied as bytes (no pickle)
    py::dtype out_dtype;
    std::vector<py::ssize_t> out_shape;
    std::size_t out_bytes = 0;
    py::object results;         ///< rank 0, pickled results: a list, results[i] = task i's result
    py::object sink;            ///< rank 0, pickled results, instead of `results`: sink(first, [result, ...]), 1024 at most
    py::object encode_error;    ///< exception -> text (pfarm._errors.encode_exception)
    py::object dumps, loads, protocol, asarray, ascontiguousarray;

    /// The user's function on task i (GIL held). Throws py::error_already_set.
    py::object call(task_count i, const std::byte* in) const {
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // Ctrl-C (main thread only) fails the task
        py::object item;
        if (rows) {
            py::array row(row_dtype, row_shape, static_cast<const void*>(in));  // a copy: the task may keep it
            item = row_shape.empty() ? py::object(row[py::tuple()]) : py::object(std::move(row));
        } else if (items.is_none()) {
            item = py::int_(offset + i);
        } else {
            item = py::reinterpret_steal<py::object>(PySequence_GetItem(items.ptr(), static_cast<Py_ssize_t>(offset + i)));
            if (!item) throw py::error_already_set();
        }
        PyObject* r = star ? PyObject_Call(fn.ptr(), item.ptr(), nullptr) : PyObject_CallOneArg(fn.ptr(), item.ptr());
        if (!r) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(r);
    }

    /// The text a failed task's exception travels as (GIL held, error indicator cleared).
    std::string describe(py::error_already_set& e) const {
        try {
            if (e.trace()) PyException_SetTraceback(e.value().ptr(), e.trace().ptr());  // the frames, for the text
            return encode_error(e.value()).cast<std::string>();
        } catch (py::error_already_set& again) {
            return std::string(e.what()) + " (and encoding it failed: " + again.what() + ")";
        }
    }
};

/// Runs `body` with the GIL; a Python exception becomes a std::runtime_error carrying context.describe()'s text,
/// thrown once the GIL is released again (the engine's worker_error carries it to every rank).
template <class Body>
void with_python(const farm_context& context, Body&& body) {
    std::string failure;
    {
        gil_hold gil;
        try {
            body();
            return;
        } catch (py::error_already_set& e) {
            failure = context.describe(e);
        } catch (const std::exception& e) {
            failure = e.what();
        }
    }
    throw std::runtime_error(failure);
}

class farm_error_types {
public:
    static py::object& worker_error() {
        static py::object type;
        return type;
    }
    static py::object& farm_error() {
        static py::object type;
        return type;
    }
};

/// The MPI_Comm whose handle mpi4py gives (MPI._handleof): a pointer in Open MPI, an integer in MPICH.
template <class Comm = MPI_Comm>
Comm comm_of(std::uintptr_t handle) {
    if constexpr (std::is_pointer_v<Comm>) return reinterpret_cast<Comm>(handle);
    else return static_cast<Comm>(handle);
}

std::vector<py::ssize_t> shape_of(const py::tuple& t) {
    std::vector<py::ssize_t> shape;
    for (const py::handle d : t) shape.push_back(d.cast<py::ssize_t>());
    return shape;
}

std::size_t bytes_of(const py::dtype& dtype, const std::vector<py::ssize_t>& shape) {
    std::size_t n = static_cast<std::size_t>(dtype.itemsize());
    for (const auto d : shape) n *= static_cast<std::size_t>(d);
    return n;
}

py::object farm(std::uintptr_t comm_handle, long long tasks, long long offset, const py::dict& options, py::object fn, py::object items,
                bool star, py::object rows, py::object row_dtype, py::tuple row_shape, py::object out,
                py::object out_dtype, py::tuple out_shape, py::object results, py::object sink, py::object encode_error) {
    const farm_options farm_opts = farm_options_from(options);
    const MPI_Comm comm = comm_of(comm_handle);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);

    farm_context context;
    context.fn = std::move(fn);
    context.items = std::move(items);
    context.star = star;
    context.offset = static_cast<task_count>(offset);
    context.encode_error = std::move(encode_error);
    const py::module_ pickle = py::module_::import("pickle");
    context.dumps = pickle.attr("dumps");
    context.loads = pickle.attr("loads");
    context.protocol = pickle.attr("HIGHEST_PROTOCOL");
    context.results = std::move(results);
    context.sink = std::move(sink);

    detail::task_kernel kernel;
    const std::byte* in = nullptr;
    std::byte* out_data = nullptr;
    if (!row_dtype.is_none()) {
        context.rows = true;
        context.row_dtype = py::dtype::from_args(row_dtype);
        context.row_shape = shape_of(row_shape);
        kernel.in_bytes = bytes_of(context.row_dtype, context.row_shape);
        if (!rows.is_none()) in = static_cast<const std::byte*>(py::array(rows).data()) + static_cast<std::size_t>(offset) * kernel.in_bytes;
    }
    if (!out_dtype.is_none()) {
        context.fixed = true;
        context.out_dtype = py::dtype::from_args(out_dtype);
        context.out_shape = shape_of(out_shape);
        context.out_bytes = bytes_of(context.out_dtype, context.out_shape);
        context.asarray = py::module_::import("numpy").attr("asarray");
        context.ascontiguousarray = py::module_::import("numpy").attr("ascontiguousarray");
        if (!out.is_none()) out_data = static_cast<std::byte*>(py::array(out).mutable_data()) + static_cast<std::size_t>(offset) * context.out_bytes;
        kernel.out_bytes = context.out_bytes;
        const farm_context* c = &context;
        kernel.run = [c](task_count i, const std::byte* x, std::byte* y) {
            with_python(*c, [&] {
                const py::object r = c->call(i, x);
                py::array a = c->asarray(r, c->out_dtype);  // ascontiguousarray would make a scalar 1-d
                if (!(a.flags() & py::array::c_style)) a = c->ascontiguousarray(a);
                bool same = static_cast<std::size_t>(a.ndim()) == c->out_shape.size();
                for (std::size_t d = 0; same && d < c->out_shape.size(); ++d) same = a.shape(static_cast<py::ssize_t>(d)) == c->out_shape[d];
                if (!same) {  // a Python ValueError, so that it travels like any exception of the task
                    const std::string message = "out_shape: task " + std::to_string(i) + " returned an array of shape " +
                                                py::str(py::tuple(a.attr("shape"))).cast<std::string>() + "; expected " +
                                                py::str(py::tuple(py::cast(c->out_shape))).cast<std::string>();
                    PyErr_SetString(PyExc_ValueError, message.c_str());
                    throw py::error_already_set();
                }
                std::memcpy(y, a.data(), c->out_bytes);
            });
        };
    } else {
        const farm_context* c = &context;
        kernel.out_align = 1;
        kernel.run_variable = [c](task_count i, const std::byte* x, detail::result_writer& w) {
            with_python(*c, [&] {
                const py::object r = c->call(i, x);
                PyObject* b = PyObject_CallFunctionObjArgs(c->dumps.ptr(), r.ptr(), c->protocol.ptr(), nullptr);
                if (!b) throw py::error_already_set();
                const auto bytes = py::reinterpret_steal<py::bytes>(b);
                w.write(PyBytes_AS_STRING(b), static_cast<std::size_t>(PyBytes_GET_SIZE(b)));
            });
        };
        if (rank == 0) {
            kernel.deliver = [c](const detail::results_view& v) {
                with_python(*c, [&] {
                    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
                    // To the sink in pieces of at most sink_batch results: rank 0 never holds a whole chunk as objects.
                    constexpr std::size_t sink_batch = 1024;
                    py::list chunk;
                    task_count chunk_first = c->offset + v.first;
                    const bool to_list = !c->results.is_none();
                    v.for_each([&](task_count i, const std::byte* bytes, std::size_t size) {
                        PyObject* view = PyMemoryView_FromMemory(const_cast<char*>(reinterpret_cast<const char*>(bytes)),
                                                                 static_cast<Py_ssize_t>(size), PyBUF_READ);
                        if (!view) throw py::error_already_set();
                        const auto held = py::reinterpret_steal<py::object>(view);
                        PyObject* r = PyObject_CallOneArg(c->loads.ptr(), view);
                        if (!r) throw py::error_already_set();
                        if (to_list) {
                            if (PyList_SetItem(c->results.ptr(), static_cast<Py_ssize_t>(c->offset + i), r) != 0) throw py::error_already_set();
                        } else {
                            chunk.append(py::reinterpret_steal<py::object>(r));
                            if (chunk.size() == sink_batch) {
                                c->sink(chunk_first, chunk);
                                chunk = py::list();
                                chunk_first = c->offset + i + 1;
                            }
                        }
                    });
                    if (!to_list && !chunk.empty()) c->sink(chunk_first, chunk);
                });
            };
        }
    }
    kernel.identity = "python " + py::str(py::getattr(context.fn, "__qualname__", py::str("function"))).cast<std::string>();

    farm_report report;
    std::exception_ptr failed;
    {
        py::gil_scoped_release release;
        try {
            report = detail::run_farm(comm, in, out_data, static_cast<task_count>(tasks), kernel, farm_opts);
        } catch (...) {
            failed = std::current_exception();
        }
    }
    if (failed) {
        try {
            std::rethrow_exception(failed);
        } catch (const worker_error& e) {
            PyErr_SetObject(farm_error_types::worker_error().ptr(),
                            py::make_tuple(e.task(), e.rank(), e.message()).ptr());
            throw py::error_already_set();
        } catch (const pfarm::invalid_argument& e) {
            throw py::value_error(e.what());
        } catch (const pfarm::error& e) {
            PyErr_SetString(farm_error_types::farm_error().ptr(), e.what());
            throw py::error_already_set();
        }
    }
    return py::cast(std::move(report));
}

std::vector<std::vector<task_count>> chunk_lists(const std::vector<chunk_sizes>& per_rank) {
    std::vector<std::vector<task_count>> lists;
    for (const auto& sizes : per_rank) lists.emplace_back(sizes.begin(), sizes.end());
    return lists;
}

}  // namespace
}  // namespace pfarm::python

PYBIND11_MODULE(_pfarm, m) {
    using namespace pfarm;
    using namespace pfarm::python;
    m.doc() = "pfarm's compiled core: one farm over the C++ engine (use the pfarm package, not this module)";

    farm_error_types::farm_error() = py::reinterpret_borrow<py::object>(
        py::exception<pfarm::error>(m, "FarmError", PyExc_RuntimeError));
    farm_error_types::worker_error() = py::reinterpret_borrow<py::object>(
        py::exception<pfarm::worker_error>(m, "WorkerError", PyExc_RuntimeError));

    m.def("farm", &pfarm::python::farm, py::arg("comm_handle"), py::arg("tasks"), py::arg("offset"), py::arg("options"), py::arg("fn"),
          py::kw_only(), py::arg("items") = py::none(), py::arg("star") = false, py::arg("rows") = py::none(),
          py::arg("row_dtype") = py::none(), py::arg("row_shape") = py::tuple(), py::arg("out") = py::none(),
          py::arg("out_dtype") = py::none(), py::arg("out_shape") = py::tuple(), py::arg("results") = py::none(),
          py::arg("sink") = py::none(), py::arg("encode_error") = py::none(),
          "Runs one farm collectively on the communicator whose C handle is comm_handle (see pfarm/_spmd.py)");
    m.def("check_options", [](const py::dict& kwargs) { (void)farm_options_from(kwargs); },
          "Raises TypeError/ValueError naming the first bad keyword option");
    m.def("option_names", &option_names, "The farm's keyword options, by their C++ names");

    py::class_<calibration_result>(m, "Calibration", "Calibration (Gonzalez-Velez & Cole, section 3.1)")
        .def_property_readonly("mode", [](const calibration_result& c) { return to_string(c.mode); })
        .def_readonly("times", &calibration_result::times, "each worker's calibration task time (s)")
        .def_readonly("fitness", &calibration_result::fitness, "F: each worker's share, sums to 1")
        .def_property_readonly("F", [](const calibration_result& c) { return c.fitness; }, "alias of fitness")
        .def_property_readonly("cv", [](const calibration_result& c) { return c.stats.cv; }, "CV of the times")
        .def_property_readonly("CV", [](const calibration_result& c) { return c.stats.cv; }, "alias of cv")
        .def_readonly("k", &calibration_result::k, "installment factor k = ln(S)^CV")
        .def_readonly("note", &calibration_result::note)
        .def("__repr__", [](const calibration_result& c) {
            return "Calibration(mode=" + to_string(c.mode) + ", F=" + py::str(py::cast(c.fitness)).cast<std::string>() +
                   ", CV=" + std::to_string(c.stats.cv) + ", k=" + std::to_string(c.k) + ")";
        });

    py::class_<chunk_trace>(m, "Chunk", "One chunk of the trace (seconds on the farmer's clock)")
        .def_readonly("rank", &chunk_trace::rank)
        .def_readonly("first", &chunk_trace::first)
        .def_readonly("count", &chunk_trace::count)
        .def_readonly("sent", &chunk_trace::sent)
        .def_readonly("started", &chunk_trace::started)
        .def_readonly("finished", &chunk_trace::finished)
        .def_readonly("received", &chunk_trace::received)
        .def_readonly("calibration", &chunk_trace::calibration);

    py::class_<farm_report>(m, "Report", "What a farm did (pfarm::farm_report); per-rank lists have one entry per rank")
        .def(py::init<>())
        .def_readonly("technique", &farm_report::technique)
        .def_readonly("ranks", &farm_report::ranks)
        .def_readonly("workers", &farm_report::workers)
        .def_readonly("sequential", &farm_report::sequential)
        .def_readonly("tasks", &farm_report::tasks)
        .def_readonly("makespan", &farm_report::makespan)
        .def_readonly("tasks_per_rank", &farm_report::tasks_per_rank)
        .def_property_readonly("chunks_per_rank", [](const farm_report& r) { return chunk_lists(r.chunks_per_rank); })
        .def_readonly("busy_per_rank", &farm_report::busy_per_rank)
        .def_readonly("finish_per_rank", &farm_report::finish_per_rank)
        .def_readonly("first_worker_rank", &farm_report::first_worker_rank)
        .def_readonly("calibration", &farm_report::calibration)
        .def_readonly("learned", &farm_report::learned)
        .def_readonly("journaled", &farm_report::journaled)
        .def_readonly("k", &farm_report::k)
        .def_property_readonly(
            "choices",
            [](const farm_report& r) {
                py::list out;
                for (const technique_choice& c : r.choices) {
                    py::dict candidates;
                    for (const auto& [name, ratio] : c.candidates) candidates[py::str(name)] = ratio;
                    py::dict d;
                    d["round"] = c.round, d["remaining"] = c.remaining, d["chosen"] = c.chosen;
                    d["predicted"] = c.predicted, d["seconds"] = c.seconds, d["why"] = c.why;
                    d["candidates"] = candidates;
                    out.append(d);
                }
                return out;
            },
            "technique 'auto': each choice as a dict (round, remaining, chosen, predicted, seconds, why, candidates)")
        .def_readonly("percent_imbalance", &farm_report::percent_imbalance)
        .def_property_readonly("imbalance", [](const farm_report& r) { return r.percent_imbalance; },
                               "alias of percent_imbalance")
        .def_readonly("cov", &farm_report::cov)
        .def_readonly("farmer_cpu_seconds", &farm_report::farmer_cpu_seconds)
        .def_readonly("round_trip", &farm_report::round_trip)
        .def_readonly("reclaims", &farm_report::reclaims)
        .def_readonly("reclaimed_tasks", &farm_report::reclaimed_tasks)
        .def_readonly("reruns", &farm_report::reruns)
        .def_readonly("rerun_tasks", &farm_report::rerun_tasks)
        .def_readonly("task_errors", &farm_report::task_errors)
        .def_readonly("retried_tasks", &farm_report::retried_tasks)
        .def_readonly("lost_ranks", &farm_report::lost_ranks)
        .def_readonly("trace", &farm_report::trace)
        .def_readonly("farmer_requests", &farm_report::farmer_requests)
        .def_readonly("master_ranks", &farm_report::master_ranks)
        .def_readonly("master_requests", &farm_report::master_requests)
        .def_readonly("master_merged", &farm_report::master_merged)
        .def_property_readonly("master_chunks", [](const farm_report& r) { return chunk_lists(r.master_chunks); })
        .def_readonly("master_trace", &farm_report::master_trace)
        .def("__repr__", [](const farm_report& r) {
            return "Report(technique=" + r.technique + ", tasks=" + std::to_string(r.tasks) + ", ranks=" +
                   std::to_string(r.ranks) + ", makespan=" + std::to_string(r.makespan) + ", percent_imbalance=" +
                   std::to_string(r.percent_imbalance) + ")";
        });

    py::class_<schedule>(m, "Schedule", "A schedule that learns across farms (pass it as schedule=)")
        .def(py::init<>())
        .def_property_readonly("learned", &schedule::learned)
        .def("recalibrate", &schedule::recalibrate)
        .def_property_readonly("seconds_per_task", &schedule::seconds_per_task)
        .def_property_readonly("learned_calls", &schedule::learned_calls)
        .def_property_readonly("calibrated_calls", &schedule::calibrated_calls);
}
