// Resource monitors (docs/monitors.md): sane readings on this machine, exact readings
// from files of our own, clear failures naming the source, the registry, and the NWS-style forecaster.
#include "pfarm/monitors.hpp"

#include <gtest/gtest.h>

#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;

/// A temporary directory standing in for "/", removed by the destructor.
class fake_root {
public:
    fake_root() {
        std::string pattern = (fs::temp_directory_path() / "pfarm-monitors-XXXXXX").string();
        if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
        path_ = pattern;
        fs::create_directories(path_ / "proc");
    }
    ~fake_root() {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    fake_root(const fake_root&) = delete;
    fake_root& operator=(const fake_root&) = delete;

    const fs::path& path() const { return path_; }
    void write(const std::string& relative, const std::string& text) const {
        std::ofstream(path_ / relative) << text;
    }

private:
    fs::path path_;
};

const std::string stat_4_cpus(int running) {
    return "cpu  100 0 100 1000 0 0 0 0 0 0\n"
           "cpu0 25 0 25 250 0 0 0 0 0 0\ncpu1 25 0 25 250 0 0 0 0 0 0\n"
           "cpu2 25 0 25 250 0 0 0 0 0 0\ncpu3 25 0 25 250 0 0 0 0 0 0\n"
           "intr 12345 0 0\nctxt 6789\nbtime 1700000000\nprocesses 4242\n"
           "procs_running " + std::to_string(running) + "\nprocs_blocked 0\n";
}

/// Runs `body`, expects a monitor_error from `monitor` whose source and message name `source`.
template <class F>
void expect_monitor_error(F&& body, const std::string& monitor, const fs::path& source) {
    try {
        body();
        ADD_FAILURE() << "no exception; expected monitor_error naming " << source;
    } catch (const pfarm::monitor_error& e) {
        EXPECT_EQ(e.monitor(), monitor) << e.what();
        EXPECT_EQ(e.source(), source.string()) << e.what();
        EXPECT_NE(std::string(e.what()).find(source.string()), std::string::npos) << e.what();
    }
}

int affinity_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    return CPU_COUNT(&set);
}

/// What `nproc` prints (coreutils): the processing units this process may run on.
int nproc_command() {
    FILE* pipe = popen("nproc", "r");
    if (!pipe) return -1;
    int n = -1;
    if (std::fscanf(pipe, "%d", &n) != 1) n = -1;
    pclose(pipe);
    return n;
}

// ---- On this machine -------------------------------------------------------------------------------------

TEST(MonitorsHere, LoadavgIsSane) {
    pfarm::loadavg_monitor m;
    const pfarm::resource_sample s = m.read();
    ASSERT_TRUE(s.availability && s.run_queue && s.load1);
    EXPECT_GT(*s.availability, 0.0);
    EXPECT_LE(*s.availability, 1.0);
    EXPECT_GE(*s.run_queue, 1.0);
    EXPECT_GE(*s.load1, 0.0);
    EXPECT_FALSE(s.latency || s.benchmark || s.cores || s.node_key);
    const pfarm::loadavg_reading r = m.read_details();
    EXPECT_GE(r.cpus, 1);  // the online CPUs (fewer than configured where LXCFS narrows /proc/stat)
    EXPECT_LE(r.cpus, static_cast<int>(sysconf(_SC_NPROCESSORS_CONF)));
    EXPECT_DOUBLE_EQ(r.availability, std::min(1.0, r.cpus / r.run_queue));
}

TEST(MonitorsHere, HwlocCoresMatchNprocAndAffinity) {
    pfarm::hwloc_monitor m;
    const pfarm::resource_sample s = m.read();
    ASSERT_TRUE(s.cores && s.node_key);
    EXPECT_EQ(*s.cores, affinity_cpus());
    EXPECT_EQ(*s.cores, nproc_command()) << "nproc disagrees with hwloc";
    const pfarm::topology_summary t = m.topology();
    EXPECT_GE(t.packages, 1);
    EXPECT_GE(t.cores, t.packages);
    EXPECT_GE(t.pus, t.cores);
    EXPECT_GE(t.numa_nodes, 1);
    EXPECT_EQ(static_cast<int>(t.bound_pus.size()), *s.cores);
    EXPECT_GE(t.bound_cores, 1);
    EXPECT_LE(t.bound_cores, static_cast<int>(t.bound_pus.size()));
    EXPECT_TRUE(t.this_system);
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    EXPECT_EQ(*s.node_key, host);  // default grouping: one group per machine
    // The loadavg monitor counts the online CPUs, at least as many as this process may use.
    EXPECT_GE(pfarm::loadavg_monitor().read_details().cpus, *s.cores);
}

TEST(MonitorsHere, HwlocGroupingKeys) {
    pfarm::hwloc_options o;
    o.grouping = pfarm::node_grouping::package;
    pfarm::hwloc_monitor m(o);
    const std::string key = *m.read().node_key;
    EXPECT_NE(key.find("/package:"), std::string::npos) << key;
    o.grouping = pfarm::node_grouping::numa;
    EXPECT_NE(pfarm::hwloc_monitor(o).read().node_key->find("/numa:"), std::string::npos);
    EXPECT_EQ(pfarm::parse_node_grouping("numa"), pfarm::node_grouping::numa);
    EXPECT_THROW(pfarm::parse_node_grouping("rack"), pfarm::unknown_name);
}

TEST(MonitorsHere, BenchmarkKernelIsShortAndPositive) {
    const pfarm::kernel_result k = pfarm::run_cpu_kernel();
    EXPECT_GT(k.mops, 0.0);
    EXPECT_TRUE(std::isfinite(k.mops));
    EXPECT_LE(k.best_seconds, k.total_seconds);
    EXPECT_LT(k.total_seconds, 2.0) << "the kernel should take milliseconds";
    pfarm::benchmark_monitor m;
    const auto s = m.read();
    ASSERT_TRUE(s.benchmark);
    EXPECT_GT(*s.benchmark, 0.0);
    EXPECT_THROW(pfarm::run_cpu_kernel({0, 3}), pfarm::invalid_argument);
    EXPECT_THROW(pfarm::benchmark_monitor({1000, 0}), pfarm::invalid_argument);
}

TEST(MonitorsHere, BogomipsReadsOrNamesTheFile) {
    // x86 and Arm kernels print it; other architectures must fail naming the file, never return junk.
    try {
        const double b = pfarm::read_bogomips();
        EXPECT_GT(b, 0.0);
        EXPECT_TRUE(std::isfinite(b));
    } catch (const pfarm::monitor_error& e) {
        EXPECT_EQ(e.source(), "/proc/cpuinfo") << e.what();
    }
}

// ---- From files of our own -------------------------------------------------------------------------------

TEST(LoadavgMonitor, FormulaOnKnownFiles) {
    fake_root root;
    root.write("proc/loadavg", "3.50 2.00 1.25 9/400 12345\n");
    root.write("proc/stat", stat_4_cpus(8));
    pfarm::loadavg_monitor m(root.path());
    const auto r = m.read_details();
    EXPECT_EQ(r.cpus, 4);
    EXPECT_EQ(r.procs_running, 8);
    EXPECT_DOUBLE_EQ(r.load1, 3.5);
    EXPECT_DOUBLE_EQ(r.load5, 2.0);
    EXPECT_DOUBLE_EQ(r.load15, 1.25);
    EXPECT_DOUBLE_EQ(r.run_queue, 8.0);     // Q = procs_running, the worker included
    EXPECT_DOUBLE_EQ(r.availability, 0.5);  // a = min(1, 4 / 8)
    const auto s = m.read();
    EXPECT_DOUBLE_EQ(*s.availability, 0.5);
    EXPECT_DOUBLE_EQ(*s.run_queue, 8.0);
    EXPECT_DOUBLE_EQ(*s.load1, 3.5);

    root.write("proc/stat", stat_4_cpus(3));  // fewer runnable than CPUs: a whole CPU
    EXPECT_DOUBLE_EQ(*m.read().availability, 1.0);
    root.write("proc/stat", stat_4_cpus(0));  // a snapshot saying 0 still holds the worker: Q >= 1
    EXPECT_DOUBLE_EQ(*m.read().run_queue, 1.0);
}

TEST(LoadavgMonitor, MissingFilesAreNamed) {
    fake_root root;
    pfarm::loadavg_monitor m(root.path());
    expect_monitor_error([&] { m.read(); }, "loadavg", root.path() / "proc/loadavg");
    root.write("proc/loadavg", "0.1 0.2 0.3 1/100 1\n");
    expect_monitor_error([&] { m.read(); }, "loadavg", root.path() / "proc/stat");
    fake_root no_proc;
    fs::remove(no_proc.path() / "proc");
    expect_monitor_error([&] { pfarm::loadavg_monitor(no_proc.path()).read(); }, "loadavg",
                         no_proc.path() / "proc/loadavg");
}

TEST(LoadavgMonitor, MalformedFilesAreNamed) {
    fake_root root;
    pfarm::loadavg_monitor m(root.path());
    root.write("proc/stat", stat_4_cpus(2));
    for (const char* bad : {"", "abc def ghi\n", "0.5 0.4\n", "-1 0.2 0.3 1/2 3\n", "nan 1 1 1/1 1\n"}) {
        root.write("proc/loadavg", bad);
        expect_monitor_error([&] { m.read(); }, "loadavg", root.path() / "proc/loadavg");
    }
    root.write("proc/loadavg", "0.1 0.2 0.3 1/100 1\n");
    root.write("proc/stat", "cpu0 1 2 3\nprocs_blocked 0\n");
    expect_monitor_error([&] { m.read(); }, "loadavg", root.path() / "proc/stat");  // no procs_running
    root.write("proc/stat", "cpu0 1 2 3\nprocs_running lots\n");
    expect_monitor_error([&] { m.read(); }, "loadavg", root.path() / "proc/stat");
    root.write("proc/stat", "intr 1\nprocs_running 2\n");
    expect_monitor_error([&] { m.read(); }, "loadavg", root.path() / "proc/stat");  // no cpuN line
    EXPECT_THROW(pfarm::loadavg_monitor(""), pfarm::invalid_argument);
}

TEST(BogomipsMonitor, KnownAndMissing) {
    fake_root root;
    pfarm::bogomips_monitor m(root.path());
    expect_monitor_error([&] { m.read(); }, "bogomips", root.path() / "proc/cpuinfo");
    root.write("proc/cpuinfo", "processor\t: 0\nmodel name\t: X\nbogomips\t: 4000.00\n\n"
                               "processor\t: 1\nmodel name\t: X\nbogomips\t: 4200.00\n");
    EXPECT_DOUBLE_EQ(*m.read().benchmark, 4100.0);
    root.write("proc/cpuinfo", "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\n");  // Arm spelling
    EXPECT_DOUBLE_EQ(*m.read().benchmark, 50.0);
    root.write("proc/cpuinfo", "processor\t: 0\nmodel name\t: no benchmark here\n");
    expect_monitor_error([&] { m.read(); }, "bogomips", root.path() / "proc/cpuinfo");
    root.write("proc/cpuinfo", "bogomips\t: fast\n");
    expect_monitor_error([&] { m.read(); }, "bogomips", root.path() / "proc/cpuinfo");
}

TEST(HwlocMonitor, SyntheticTopology) {
    pfarm::hwloc_options o;
    o.synthetic = "pack:2 core:3 pu:2";
    o.grouping = pfarm::node_grouping::package;
    pfarm::hwloc_monitor m(o);
    const pfarm::topology_summary t = m.topology();
    EXPECT_EQ(t.packages, 2);
    EXPECT_EQ(t.cores, 6);
    EXPECT_EQ(t.pus, 12);
    EXPECT_EQ(t.numa_nodes, 1);
    EXPECT_FALSE(t.this_system);
    EXPECT_EQ(t.bound_pus.size(), 12u);  // not this machine: every PU
    EXPECT_EQ(t.bound_cores, 6);
    EXPECT_EQ(t.bound_packages, (std::vector<unsigned>{0, 1}));
    EXPECT_EQ(t.node_key, t.host + "/package:0+1");
    EXPECT_EQ(*m.read().cores, 12);
}

TEST(HwlocMonitor, FailuresNameTheSource) {
    fake_root root;
    pfarm::hwloc_options o;
    o.xml = root.path() / "missing.xml";
    pfarm::hwloc_monitor missing(o);  // the constructor does not touch the source
    expect_monitor_error([&] { missing.read(); }, "hwloc", o.xml);
    root.write("broken.xml", "<?xml version=\"1.0\"?><topology><object type=\"Machine\"");
    o.xml = root.path() / "broken.xml";
    pfarm::hwloc_monitor broken(o);
    expect_monitor_error([&] { broken.read(); }, "hwloc", o.xml);

    pfarm::hwloc_options bad;
    bad.synthetic = "pack:two";
    pfarm::hwloc_monitor nonsense(bad);
    expect_monitor_error([&] { nonsense.read(); }, "hwloc", "hwloc_topology_set_synthetic");
    bad.xml = "x.xml";
    EXPECT_THROW(pfarm::hwloc_monitor{bad}, pfarm::invalid_argument);
}

// ---- Registry, fakes, combination ------------------------------------------------------------------------

TEST(MonitorRegistry, EveryListedNameIsMade) {
    pfarm::monitor_options o;
    o.script = {pfarm::resource_sample{.availability = 0.5}};
    o.benchmark.iterations = 1000;
    for (const auto& info : pfarm::monitor_list()) {
        auto m = pfarm::make_monitor(info.name, o);
        ASSERT_TRUE(m) << info.name;
        EXPECT_FALSE(info.description.empty()) << info.name;
        if (info.name != "fake") EXPECT_EQ(m->name(), info.name);
    }
    EXPECT_EQ(pfarm::make_monitor("fake", o)->name(), "scripted");
}

TEST(MonitorRegistry, UnknownNameListsTheKnownOnes) {
    try {
        pfarm::make_monitor("loadavgg");
        ADD_FAILURE() << "no exception";
    } catch (const pfarm::unknown_name& e) {
        const std::string what = e.what();
        EXPECT_EQ(e.argument(), "monitor");
        EXPECT_NE(what.find("loadavgg"), std::string::npos) << what;
        for (const char* known : {"loadavg", "hwloc", "benchmark", "bogomips", "scripted", "fake"})
            EXPECT_NE(what.find(known), std::string::npos) << what;
    }
    try {
        pfarm::make_monitor("fake");  // no script
        ADD_FAILURE() << "no exception";
    } catch (const pfarm::invalid_argument& e) {
        EXPECT_EQ(e.argument(), "script");
    }
}

TEST(ScriptedMonitor, ReplaysThenHoldsAndChecksValues) {
    pfarm::scripted_monitor m({{.availability = 0.9, .latency = 1e-3}, {.availability = 0.4, .latency = 2e-3}});
    EXPECT_DOUBLE_EQ(*m.read().availability, 0.9);
    EXPECT_DOUBLE_EQ(*m.read().availability, 0.4);
    EXPECT_DOUBLE_EQ(*m.read().latency, 2e-3);
    auto bad = [](pfarm::resource_sample s) {
        try {
            pfarm::scripted_monitor m({pfarm::resource_sample{}, s});
            ADD_FAILURE() << "no exception";
        } catch (const pfarm::invalid_argument& e) {
            EXPECT_EQ(e.argument(), "script");
            EXPECT_NE(std::string(e.what()).find("sample 1"), std::string::npos) << e.what();
        }
    };
    bad({.availability = 0.0});
    bad({.availability = 1.5});
    bad({.run_queue = 0.5});
    bad({.latency = -1.0});
    bad({.benchmark = std::nan("")});
    bad({.cores = 0});
    EXPECT_THROW(pfarm::scripted_monitor({}), pfarm::invalid_argument);
}

TEST(ScriptedMonitor, PerWorkerForSimulatedCalibration) {
    const std::vector<double> a = {1.0, 0.5, 0.25}, l = {1e-4, 2e-4, 5e-3};
    auto workers = pfarm::scripted_monitor::per_worker(a, l);
    ASSERT_EQ(workers.size(), 3u);
    for (std::size_t j = 0; j < 3; ++j) {
        const auto s = workers[j]->read();
        EXPECT_DOUBLE_EQ(*s.availability, a[j]);
        EXPECT_DOUBLE_EQ(*s.latency, l[j]);
    }
    const std::vector<double> bad_a = {1.0, 0.0, 0.5}, short_l = {1e-4};
    try {
        pfarm::scripted_monitor::per_worker(bad_a, l);
        ADD_FAILURE() << "no exception";
    } catch (const pfarm::invalid_argument& e) {
        EXPECT_EQ(e.argument(), "availability");
        EXPECT_NE(std::string(e.what()).find("worker 1"), std::string::npos) << e.what();
    }
    try {
        pfarm::scripted_monitor::per_worker(a, short_l);
        ADD_FAILURE() << "no exception";
    } catch (const pfarm::invalid_argument& e) {
        EXPECT_EQ(e.argument(), "latency");
    }
}

TEST(CombinedMonitor, GoesOnWithoutAReadingNobodyNeeds) {
    fake_root empty;  // no proc/ files: the loadavg monitor fails
    std::vector<std::unique_ptr<pfarm::monitor>> parts;
    parts.push_back(std::make_unique<pfarm::loadavg_monitor>(empty.path()));
    parts.push_back(std::make_unique<pfarm::scripted_monitor>(
        std::vector<pfarm::resource_sample>{{.latency = 1e-3, .benchmark = 100.0}}));
    parts.push_back(std::make_unique<pfarm::scripted_monitor>(
        std::vector<pfarm::resource_sample>{{.availability = 0.7, .latency = 9.0}}));
    pfarm::combined_monitor m(std::move(parts));
    EXPECT_EQ(m.name(), "combined(loadavg+scripted+scripted)");
    const pfarm::resource_sample s = m.read();
    ASSERT_EQ(m.failures().size(), 1u);
    EXPECT_NE(m.failures()[0].find((empty.path() / "proc/loadavg").string()), std::string::npos);
    EXPECT_DOUBLE_EQ(*s.latency, 1e-3);  // the first monitor that provides a reading wins
    EXPECT_DOUBLE_EQ(*s.benchmark, 100.0);
    EXPECT_DOUBLE_EQ(*s.availability, 0.7);
    EXPECT_FALSE(s.run_queue);

    // Times-only calibration needs nothing; univariate regression needs availability (here present);
    // non-dedicated DTSS needs the run queue, which only the failed monitor reads: stop, saying why.
    EXPECT_NO_THROW(pfarm::require_readings(s, {}, "times-only calibration", m.failures()));
    EXPECT_NO_THROW(pfarm::require_readings(s, {pfarm::reading::availability}, "univariate", m.failures()));
    try {
        pfarm::require_readings(s, {pfarm::reading::run_queue, pfarm::reading::latency}, "dtss --run-queue",
                                m.failures());
        ADD_FAILURE() << "no exception";
    } catch (const pfarm::error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("dtss --run-queue needs run_queue"), std::string::npos) << what;
        EXPECT_EQ(what.find("latency"), std::string::npos) << what;
        EXPECT_NE(what.find("proc/loadavg"), std::string::npos) << what;
    }
}

// ---- Forecaster ------------------------------------------------------------------------------------------

/// A fixed pseudo-random sequence (PCG's LCG step), the same on every platform.
struct lcg {
    std::uint64_t state;
    double uniform() {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return (static_cast<double>(state >> 11) + 0.5) * 0x1.0p-53;
    }
};

/// The method with the least mean absolute error, computed here from the forecaster's own error figures.
pfarm::forecast_method least_error(const pfarm::forecaster& f) {
    auto best = pfarm::forecast_method::last_value;
    for (auto m : {pfarm::forecast_method::running_mean, pfarm::forecast_method::median,
                   pfarm::forecast_method::exponential_smoothing})
        if (*f.mean_absolute_error(m) < *f.mean_absolute_error(best)) best = m;
    return best;
}

void expect_best(const pfarm::forecaster& f, pfarm::forecast_method expected) {
    EXPECT_EQ(f.best_method(), expected) << "chose " << to_string(f.best_method());
    EXPECT_EQ(f.best_method(), least_error(f));
    EXPECT_DOUBLE_EQ(f.predict(), f.prediction(f.best_method()));
}

TEST(Forecaster, MethodsPredictWhatTheyDefine) {
    pfarm::forecaster f({.window = 3, .alpha = 0.5});
    EXPECT_THROW(f.predict(), pfarm::error);
    EXPECT_FALSE(f.mean_absolute_error(pfarm::forecast_method::median));
    for (double x : {1.0, 2.0, 9.0, 4.0}) f.observe(x);
    EXPECT_EQ(f.observations(), 4u);
    EXPECT_DOUBLE_EQ(f.prediction(pfarm::forecast_method::last_value), 4.0);
    EXPECT_DOUBLE_EQ(f.prediction(pfarm::forecast_method::running_mean), 4.0);
    EXPECT_DOUBLE_EQ(f.prediction(pfarm::forecast_method::median), 4.0);  // of {2, 9, 4}
    // s = 1; 0.5*2 + 0.5*1 = 1.5; 0.5*9 + 0.5*1.5 = 5.25; 0.5*4 + 0.5*5.25 = 4.625
    EXPECT_DOUBLE_EQ(f.prediction(pfarm::forecast_method::exponential_smoothing), 4.625);
    // last value predicted 1, 2, 9 for 2, 9, 4: errors 1, 7, 5
    EXPECT_DOUBLE_EQ(*f.mean_absolute_error(pfarm::forecast_method::last_value), 13.0 / 3);
    pfarm::forecaster even({.window = 4});
    for (double x : {1.0, 2.0, 9.0, 4.0}) even.observe(x);
    EXPECT_DOUBLE_EQ(even.prediction(pfarm::forecast_method::median), 3.0);  // (2 + 4) / 2
}

TEST(Forecaster, RampPicksLastValue) {
    pfarm::forecaster f;
    for (int t = 0; t < 100; ++t) f.observe(0.5 + 0.01 * t);
    expect_best(f, pfarm::forecast_method::last_value);
    EXPECT_NEAR(f.predict(), 0.5 + 0.01 * 99, 1e-12);
}

TEST(Forecaster, StationaryNoisePicksRunningMean) {
    pfarm::forecaster f;
    lcg g{42};
    for (int t = 0; t < 1000; ++t) f.observe(0.5 + 0.2 * (g.uniform() - 0.5));
    expect_best(f, pfarm::forecast_method::running_mean);
    EXPECT_NEAR(f.predict(), 0.5, 0.01);
}

TEST(Forecaster, SpikesPickMedian) {
    pfarm::forecaster f;  // a steady reading with every fifth one ten times higher (a periodic cron job)
    for (int t = 0; t < 100; ++t) f.observe(t % 5 == 4 ? 10.0 : 1.0);
    expect_best(f, pfarm::forecast_method::median);
    EXPECT_DOUBLE_EQ(f.predict(), 1.0);
}

TEST(Forecaster, NoisyTrendPicksExponentialSmoothing) {
    pfarm::forecaster f;  // a drifting level under alternating noise: the median lags, the last value jitters
    for (int t = 0; t < 100; ++t) f.observe(0.3 * t + (t % 2 ? 1.0 : -1.0));
    expect_best(f, pfarm::forecast_method::exponential_smoothing);
}

TEST(Forecaster, ErrorWindowFollowsAChangeOfRegime) {
    pfarm::forecaster cumulative, windowed({.error_window = 10});
    lcg g{7};
    for (int t = 0; t < 300; ++t) {
        const double x = 0.5 + 0.2 * (g.uniform() - 0.5);
        cumulative.observe(x);
        windowed.observe(x);
    }
    for (int t = 1; t <= 30; ++t) {  // then a steady climb
        cumulative.observe(0.6 + 0.02 * t);
        windowed.observe(0.6 + 0.02 * t);
    }
    expect_best(windowed, pfarm::forecast_method::last_value);
    EXPECT_NE(cumulative.best_method(), pfarm::forecast_method::last_value);
}

TEST(Forecaster, RejectsBadInput) {
    pfarm::forecaster f;
    EXPECT_THROW(f.observe(std::nan("")), pfarm::invalid_argument);
    EXPECT_THROW(f.observe(INFINITY), pfarm::invalid_argument);
    EXPECT_THROW(pfarm::forecaster({.window = 0}), pfarm::invalid_argument);
    EXPECT_THROW(pfarm::forecaster({.alpha = 0.0}), pfarm::invalid_argument);
    EXPECT_THROW(pfarm::forecaster({.alpha = 1.5}), pfarm::invalid_argument);
}

TEST(ForecastingMonitor, ForecastsEachReading) {
    std::vector<pfarm::resource_sample> script;
    for (int t = 0; t < 20; ++t)  // availability steady with spikes down; latency climbing
        script.push_back({.availability = t % 5 == 4 ? 0.1 : 0.8, .latency = 1e-4 * (t + 1), .cores = 4,
                          .node_key = "n0"});
    pfarm::forecasting_monitor m(std::make_unique<pfarm::scripted_monitor>(script));
    EXPECT_EQ(m.name(), "scripted+forecast");
    pfarm::resource_sample s;
    for (int t = 0; t < 20; ++t) s = m.read();
    EXPECT_DOUBLE_EQ(*s.availability, 0.8);         // the median ignores the spikes
    EXPECT_NEAR(*s.latency, 20e-4, 1e-12);           // the last value follows the climb
    EXPECT_EQ(*s.cores, 4);                          // passed through
    EXPECT_EQ(*s.node_key, "n0");
    EXPECT_FALSE(s.run_queue);                       // never read, never forecast
    ASSERT_TRUE(m.forecaster_for(pfarm::reading::availability));
    EXPECT_EQ(m.forecaster_for(pfarm::reading::availability)->observations(), 20u);
    EXPECT_EQ(m.forecaster_for(pfarm::reading::availability)->best_method(), pfarm::forecast_method::median);
    EXPECT_EQ(m.forecaster_for(pfarm::reading::latency)->best_method(), pfarm::forecast_method::last_value);
    EXPECT_EQ(m.forecaster_for(pfarm::reading::run_queue), nullptr);
    EXPECT_EQ(m.forecaster_for(pfarm::reading::cores), nullptr);
    EXPECT_THROW(pfarm::forecasting_monitor(nullptr), pfarm::invalid_argument);
}

TEST(ForecastingMonitor, OverTheLiveLoadMonitor) {
    pfarm::forecasting_monitor m(std::make_unique<pfarm::loadavg_monitor>());
    for (int i = 0; i < 3; ++i) {
        const auto s = m.read();
        ASSERT_TRUE(s.availability);
        EXPECT_GT(*s.availability, 0.0);  // forecasts stay within what was observed
        EXPECT_LE(*s.availability, 1.0);
    }
}

}  // namespace
