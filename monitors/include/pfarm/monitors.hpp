// pfarm: every resource monitor of pfarm::monitors (umbrella header).
#pragma once

#include "pfarm/benchmark_monitor.hpp"
#include "pfarm/cgroup_monitor.hpp"
#include "pfarm/forecaster.hpp"
#include "pfarm/hwloc_monitor.hpp"
#include "pfarm/loadavg_monitor.hpp"
#include "pfarm/monitor.hpp"
#include "pfarm/monitor_registry.hpp"
