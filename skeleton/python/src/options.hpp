// pfarm Python module: the farm's keyword options (docs/python.md "Options"), every field of pfarm::farm_options by
// its C++ name, turned into a farm_options in one function.
#pragma once

#include "pfarm/farm.hpp"

#include <pybind11/pybind11.h>

namespace pfarm::python {

/// The options named by `kwargs` (keyword -> value) over farm_options' defaults, but for farmer_computes and reclaim,
/// true unless given (reclaim false by default in the decentralised farm). An unknown keyword is a TypeError
/// naming it, a value of the wrong type a TypeError naming the keyword, a value out of range a ValueError naming
/// the keyword (the engine checks the rest, on every rank together: the technique's name, its parameters against
/// the farm). `schedule` keeps a pointer to the pfarm.Schedule given: it must outlive the farm.
farm_options farm_options_from(const pybind11::dict& kwargs);

/// The keywords farm_options_from() accepts, in the order farm_options declares them.
pybind11::list option_names();

}  // namespace pfarm::python
