// The cgroup monitor (docs/monitors.md, "cgroup"): exact readings from fake cgroup v1 and v2 trees (quotas,
// nesting, unlimited levels, competing threads, throttling deltas), errors naming the malformed file, the
// default availability monitor's choice, and a sane reading on this machine.
#include "pfarm/monitors.hpp"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;

/// A temporary directory standing in for "/", removed by the destructor; write() makes parent directories.
class cgroup_tree {
public:
    cgroup_tree() {
        std::string pattern = (fs::temp_directory_path() / "pfarm-cgroup-XXXXXX").string();
        if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
        path_ = pattern;
        load(4, 1);
    }
    ~cgroup_tree() {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    cgroup_tree(const cgroup_tree&) = delete;
    cgroup_tree& operator=(const cgroup_tree&) = delete;

    const fs::path& path() const { return path_; }
    fs::path at(const std::string& relative) const { return path_ / relative; }
    void write(const std::string& relative, const std::string& text) const {
        fs::create_directories((path_ / relative).parent_path());
        std::ofstream(path_ / relative) << text;
    }
    /// proc/loadavg and proc/stat: `cpus` online CPUs, `running` runnable threads machine-wide.
    void load(int cpus, int running) const {
        write("proc/loadavg", "0.50 0.40 0.30 1/200 999\n");
        std::string stat = "cpu  100 0 100 1000 0 0 0 0 0 0\n";
        for (int c = 0; c < cpus; ++c) stat += "cpu" + std::to_string(c) + " 25 0 25 250 0 0 0 0 0 0\n";
        stat += "intr 1 0\nctxt 2\nprocs_running " + std::to_string(running) + "\nprocs_blocked 0\n";
        write("proc/stat", stat);
    }
    /// A thread in state `state` ('R' runnable, 'S' sleeping).
    void thread(int tid, char state) const {
        write("proc/" + std::to_string(tid) + "/stat",
              std::to_string(tid) + " (a (b) c) " + state + " 1 1 1 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0\n");
    }

    /// cgroup v1, the cpu controller mounted at `mount` (relative to the root), the process in `cgroup`.
    void v1(const std::string& cgroup, const std::string& mount = "sys/fs/cgroup/cpu,cpuacct") const {
        write("proc/self/cgroup", "12:pids:/user.slice\n4:cpu,cpuacct:" + cgroup + "\n3:memory:/x\n0::/user.slice\n");
        write("proc/self/mountinfo",
              "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
              "30 22 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
              "31 30 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
              "32 30 0:28 / /" + mount + " rw,nosuid shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
              "33 30 0:29 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
        v1_level(mount, -1, 100000);
    }
    void v1_level(const std::string& directory, long long quota, long long period) const {
        write(directory + "/cpu.cfs_quota_us", std::to_string(quota) + "\n");
        write(directory + "/cpu.cfs_period_us", std::to_string(period) + "\n");
        write(directory + "/cpu.stat", "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n");
        write(directory + "/tasks", "");
    }
    /// cgroup v2 mounted at sys/fs/cgroup, the process in `cgroup`.
    void v2(const std::string& cgroup) const {
        write("proc/self/cgroup", "0::" + cgroup + "\n");
        write("proc/self/mountinfo", "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
                                     "30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev - cgroup2 cgroup2 rw,nsdelegate\n");
        write("sys/fs/cgroup/cgroup.threads", "");
        write("sys/fs/cgroup/cpu.stat", "usage_usec 5\nuser_usec 3\nsystem_usec 2\n");  // the root: no cpu.max
    }
    /// A v2 level with cpu.max `max` (no cpu.max when empty).
    void v2_level(const std::string& directory, const std::string& max) const {
        if (!max.empty()) write(directory + "/cpu.max", max + "\n");
        write(directory + "/cpu.stat", "usage_usec 10\nuser_usec 6\nsystem_usec 4\nnr_periods 0\nnr_throttled 0\n"
                                       "throttled_usec 0\nnr_bursts 0\nburst_usec 0\n");
        write(directory + "/cgroup.threads", "");
    }

private:
    fs::path path_;
};

template <class F>
void expect_cgroup_error(F&& body, const fs::path& source, const std::string& says) {
    try {
        body();
        ADD_FAILURE() << "no exception; expected monitor_error naming " << source;
    } catch (const pfarm::monitor_error& e) {
        const std::string what = e.what();
        EXPECT_EQ(e.monitor(), "cgroup") << what;
        EXPECT_EQ(e.source(), source.string()) << what;
        EXPECT_NE(what.find(source.string()), std::string::npos) << what;
        EXPECT_NE(what.find(says), std::string::npos) << what;
    }
}

TEST(CgroupMonitor, V1QuotaOfTheProcessCgroup) {
    cgroup_tree t;
    t.v1("/job");
    t.v1_level("sys/fs/cgroup/cpu,cpuacct/job", 20000, 100000);
    t.write("sys/fs/cgroup/cpu,cpuacct/job/tasks", "101\n102\n");
    t.thread(101, 'R');
    t.thread(102, 'S');
    pfarm::cgroup_monitor m(t.path());
    const pfarm::cgroup_reading r = m.read_details();
    EXPECT_EQ(r.version, 1);
    EXPECT_EQ(r.cgroup, "/job");
    EXPECT_EQ(r.directory, t.at("sys/fs/cgroup/cpu,cpuacct/job"));
    ASSERT_EQ(r.levels.size(), 2u);
    EXPECT_EQ(r.levels[1].cgroup, "/");
    EXPECT_FALSE(r.levels[1].quota_cores);
    EXPECT_EQ(r.levels[1].quota_us, -1);
    ASSERT_TRUE(r.limit_cores);
    EXPECT_DOUBLE_EQ(*r.limit_cores, 0.2);
    EXPECT_EQ(r.limit_directory, t.at("sys/fs/cgroup/cpu,cpuacct/job"));
    EXPECT_EQ(r.runnable, 1);
    EXPECT_DOUBLE_EQ(r.quota_availability, 0.2);
    EXPECT_DOUBLE_EQ(r.load.availability, 1.0);
    EXPECT_DOUBLE_EQ(r.availability, 0.2);
    ASSERT_TRUE(r.throttling);
    EXPECT_FALSE(r.throttling_delta);  // first read

    const pfarm::resource_sample s = m.read();
    EXPECT_DOUBLE_EQ(*s.availability, 0.2);
    EXPECT_DOUBLE_EQ(*s.run_queue, 20.0);  // 1 runnable x 4 CPUs / 0.2: a = min(1, cpus / Q) holds
    EXPECT_DOUBLE_EQ(*s.load1, 0.5);
    EXPECT_EQ(m.name(), "cgroup");
}

TEST(CgroupMonitor, V1ControllerMountedAloneAndUnlimited) {
    cgroup_tree t;
    t.v1("/", "sys/fs/cgroup/cpu");  // this machine's layout: cpu and cpuacct mounted apart
    t.load(2, 4);
    pfarm::cgroup_monitor m(t.path());
    const pfarm::cgroup_reading r = m.read_details();
    EXPECT_EQ(r.version, 1);
    ASSERT_EQ(r.levels.size(), 1u);
    EXPECT_EQ(r.directory, t.at("sys/fs/cgroup/cpu"));
    EXPECT_FALSE(r.limit_cores);
    EXPECT_FALSE(r.throttling);
    EXPECT_EQ(r.runnable, 0);
    EXPECT_DOUBLE_EQ(r.quota_availability, 1.0);
    EXPECT_DOUBLE_EQ(r.availability, 0.5);  // the load side alone: 2 CPUs, 4 runnable
    const pfarm::resource_sample s = m.read();
    EXPECT_DOUBLE_EQ(*s.run_queue, 4.0);
    EXPECT_FALSE(pfarm::cgroup_cpu_limit(t.path()));
    EXPECT_EQ(pfarm::make_availability_monitor(t.path())->name(), "loadavg");
}

TEST(CgroupMonitor, PeriodOfTheLimitingLevel) {
    cgroup_tree unlimited;
    unlimited.v1("/", "sys/fs/cgroup/cpu");
    EXPECT_FALSE(pfarm::cgroup_cpu_period(unlimited.path()));
    cgroup_tree nested;  // the tighter quota (0.25 core, 200 ms period) is the parent's: its period counts
    nested.v1("/job/step");
    nested.v1_level("sys/fs/cgroup/cpu,cpuacct/job", 50000, 200000);
    nested.v1_level("sys/fs/cgroup/cpu,cpuacct/job/step", 50000, 100000);
    ASSERT_TRUE(pfarm::cgroup_cpu_period(nested.path()));
    EXPECT_DOUBLE_EQ(*pfarm::cgroup_cpu_period(nested.path()), 0.2);
    cgroup_tree v2;
    v2.v2("/job");
    v2.v2_level("sys/fs/cgroup/job", "30000 50000");
    ASSERT_TRUE(pfarm::cgroup_cpu_period(v2.path()));
    EXPECT_DOUBLE_EQ(*pfarm::cgroup_cpu_period(v2.path()), 0.05);
    cgroup_tree none;  // no proc/self/cgroup: a kernel without cgroups
    std::filesystem::remove(none.at("proc/self/cgroup"));
    EXPECT_FALSE(pfarm::cgroup_cpu_period(none.path()));
}

TEST(CgroupMonitor, V2QuotaSharedByRunnableThreads) {
    cgroup_tree t;
    t.v2("/user.slice/job");
    t.v2_level("sys/fs/cgroup/user.slice", "max 100000");
    t.v2_level("sys/fs/cgroup/user.slice/job", "50000 100000");
    t.write("sys/fs/cgroup/user.slice/job/cgroup.threads", "7\n8\n9\n");
    t.thread(7, 'R');
    t.thread(8, 'R');
    t.thread(9, 'D');
    t.load(4, 2);
    pfarm::cgroup_monitor m(t.path());
    const pfarm::cgroup_reading r = m.read_details();
    EXPECT_EQ(r.version, 2);
    ASSERT_EQ(r.levels.size(), 3u);
    EXPECT_EQ(r.levels[0].cgroup, "/user.slice/job");
    EXPECT_EQ(r.levels[1].cgroup, "/user.slice");
    EXPECT_EQ(r.levels[1].quota_us, -1);
    EXPECT_EQ(r.levels[1].period_us, 100000);
    EXPECT_EQ(r.levels[2].cgroup, "/");
    EXPECT_EQ(r.levels[2].period_us, 0);  // the root has no cpu.max
    ASSERT_TRUE(r.limit_cores);
    EXPECT_DOUBLE_EQ(*r.limit_cores, 0.5);
    EXPECT_EQ(r.runnable, 2);
    EXPECT_DOUBLE_EQ(r.quota_availability, 0.25);
    EXPECT_DOUBLE_EQ(r.availability, 0.25);
    EXPECT_EQ(pfarm::make_availability_monitor(t.path())->name(), "cgroup");
}

TEST(CgroupMonitor, NestedTakesTheMostRestrictiveAncestorAndCountsItsSubtree) {
    cgroup_tree t;
    t.v2("/a/b/c");
    t.v2_level("sys/fs/cgroup/a", "30000 100000");        // 0.3 CPU: the limit
    t.v2_level("sys/fs/cgroup/a/b", "max 100000");
    t.v2_level("sys/fs/cgroup/a/b/c", "150000 100000");   // 1.5 CPU
    t.v2_level("sys/fs/cgroup/a/d", "");                  // a sibling sharing a's quota, no cpu.max of its own
    t.write("sys/fs/cgroup/a/b/c/cgroup.threads", "11\n");
    t.write("sys/fs/cgroup/a/d/cgroup.threads", "12\n13\n");
    t.thread(11, 'R');
    t.thread(12, 'R');
    t.thread(13, 'S');
    pfarm::cgroup_monitor m(t.path());
    const pfarm::cgroup_reading r = m.read_details();
    ASSERT_TRUE(r.limit_cores);
    EXPECT_DOUBLE_EQ(*r.limit_cores, 0.3);
    EXPECT_EQ(r.limit_directory, t.at("sys/fs/cgroup/a"));
    EXPECT_EQ(r.runnable, 2);  // 11 in a/b/c and 12 in a/d
    EXPECT_DOUBLE_EQ(r.availability, 0.15);
    EXPECT_DOUBLE_EQ(*pfarm::cgroup_cpu_limit(t.path()), 0.3);

    cgroup_tree v1;  // periods differ between levels: the quota in CPUs decides
    v1.v1("/p/q");
    v1.v1_level("sys/fs/cgroup/cpu,cpuacct/p", 50000, 50000);     // 1 CPU
    v1.v1_level("sys/fs/cgroup/cpu,cpuacct/p/q", 40000, 200000);  // 0.2 CPU: the limit
    v1.write("sys/fs/cgroup/cpu,cpuacct/p/q/tasks", "21\n");
    v1.thread(21, 'R');
    pfarm::cgroup_monitor m1(v1.path());
    const pfarm::cgroup_reading r1 = m1.read_details();
    ASSERT_EQ(r1.levels.size(), 3u);
    EXPECT_DOUBLE_EQ(*r1.levels[1].quota_cores, 1.0);
    EXPECT_DOUBLE_EQ(*r1.limit_cores, 0.2);
    EXPECT_EQ(r1.limit_directory, v1.at("sys/fs/cgroup/cpu,cpuacct/p/q"));
    EXPECT_DOUBLE_EQ(r1.availability, 0.2);
}

TEST(CgroupMonitor, LoadSideWinsWhenLower) {
    cgroup_tree t;
    t.v2("/job");
    t.v2_level("sys/fs/cgroup/job", "200000 100000");  // 2 CPUs for 1 runnable thread: no limit on it
    t.write("sys/fs/cgroup/job/cgroup.threads", "5\n");
    t.thread(5, 'R');
    t.load(4, 8);                                       // 4 CPUs, 8 runnable machine-wide: 0.5
    pfarm::cgroup_monitor m(t.path());
    const pfarm::cgroup_reading r = m.read_details();
    EXPECT_DOUBLE_EQ(r.quota_availability, 1.0);
    EXPECT_DOUBLE_EQ(r.availability, 0.5);
    EXPECT_DOUBLE_EQ(*m.read().run_queue, 8.0);
}

TEST(CgroupMonitor, AQuotaThatWasBindingOutweighsTheLoad) {
    cgroup_tree t;
    t.v2("/job");
    const std::string job = "sys/fs/cgroup/job";
    t.v2_level(job, "50000 100000");  // 0.5 CPU for 1 runnable thread
    t.write(job + "/cgroup.threads", "5\n");
    t.thread(5, 'R');
    t.load(4, 16);  // 4 CPUs, 16 runnable machine-wide: the load side says 0.25
    t.write(job + "/cpu.stat", "nr_periods 10\nnr_throttled 10\nthrottled_usec 900\n");
    pfarm::cgroup_monitor m(t.path());
    pfarm::cgroup_reading r = m.read_details();  // no previous read: the cgroup's life, throttled in every period
    EXPECT_DOUBLE_EQ(r.binding, 1.0);
    EXPECT_DOUBLE_EQ(r.availability, 0.5);
    EXPECT_DOUBLE_EQ(r.run_queue, 8.0);

    t.write(job + "/cpu.stat", "nr_periods 20\nnr_throttled 15\nthrottled_usec 1200\n");
    r = m.read_details();  // binding in 5 of the last 10 periods: half quota, half min(quota, load)
    EXPECT_DOUBLE_EQ(*r.throttled_fraction, 0.5);
    EXPECT_DOUBLE_EQ(r.binding, 0.5);
    EXPECT_DOUBLE_EQ(r.availability, 0.5 * 0.5 + 0.5 * 0.25);

    r = m.read_details();  // no period since: the cgroup's life again, 15 of 20
    EXPECT_FALSE(r.throttled_fraction);
    EXPECT_DOUBLE_EQ(r.binding, 0.75);
    EXPECT_DOUBLE_EQ(r.availability, 0.75 * 0.5 + 0.25 * 0.25);

    t.write(job + "/cpu.stat", "nr_periods 30\nnr_throttled 15\nthrottled_usec 1200\n");
    r = m.read_details();  // never binding in the last 10: the load side holds
    EXPECT_DOUBLE_EQ(r.binding, 0.0);
    EXPECT_DOUBLE_EQ(r.availability, 0.25);
    EXPECT_DOUBLE_EQ(r.run_queue, 16.0);
}

TEST(CgroupMonitor, QuotaAboveTheMachineIsCappedAtItsCpus) {
    cgroup_tree t;
    t.v2("/job");
    t.v2_level("sys/fs/cgroup/job", "800000 100000");  // 8 CPUs on a 2-CPU machine
    t.write("sys/fs/cgroup/job/cgroup.threads", "5\n6\n7\n");
    for (int tid : {5, 6, 7}) t.thread(tid, 'R');
    t.load(2, 3);
    pfarm::cgroup_monitor m(t.path());
    const pfarm::cgroup_reading r = m.read_details();
    EXPECT_DOUBLE_EQ(*r.limit_cores, 2.0);
    EXPECT_DOUBLE_EQ(r.quota_availability, 2.0 / 3.0);
    EXPECT_DOUBLE_EQ(r.availability, 2.0 / 3.0);
}

TEST(CgroupMonitor, V1LineWinsInHybridMountsAndASubtreeMountIsItsTop) {
    cgroup_tree hybrid;  // v1 cpu line and a 0:: line: the cpu controller is v1's
    hybrid.v1("/job");
    hybrid.v1_level("sys/fs/cgroup/cpu,cpuacct/job", 30000, 100000);
    EXPECT_EQ(pfarm::cgroup_monitor(hybrid.path()).read_details().version, 1);

    cgroup_tree container;  // a container without a cgroup namespace: the mount shows /docker/abc at its top
    container.write("proc/self/cgroup", "0::/docker/abc\n");
    container.write("proc/self/mountinfo",
                    "40 30 0:26 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n");
    container.v2_level("sys/fs/cgroup", "25000 100000");
    container.write("sys/fs/cgroup/cgroup.threads", "1\n");
    container.thread(1, 'R');
    const pfarm::cgroup_reading r = pfarm::cgroup_monitor(container.path()).read_details();
    ASSERT_EQ(r.levels.size(), 1u);
    EXPECT_EQ(r.levels[0].cgroup, "/docker/abc");
    EXPECT_EQ(r.directory, container.at("sys/fs/cgroup"));
    EXPECT_DOUBLE_EQ(r.availability, 0.25);

    cgroup_tree escaped;  // mountinfo writes a space in a mount point as \040
    escaped.write("proc/self/cgroup", "0::/j\n");
    escaped.write("proc/self/mountinfo", "40 30 0:26 / /my\\040cgroups rw - cgroup2 cgroup2 rw\n");
    escaped.v2_level("my cgroups/j", "10000 100000");
    escaped.write("my cgroups/cgroup.threads", "");
    EXPECT_DOUBLE_EQ(*pfarm::cgroup_cpu_limit(escaped.path()), 0.1);
}

TEST(CgroupMonitor, ThrottlingDeltasBetweenReads) {
    cgroup_tree t;
    t.v1("/job");
    const std::string job = "sys/fs/cgroup/cpu,cpuacct/job";
    t.v1_level(job, 20000, 100000);
    t.write(job + "/cpu.stat", "nr_periods 100\nnr_throttled 40\nthrottled_time 2000000000\n");
    pfarm::cgroup_monitor m(t.path());
    pfarm::cgroup_reading r = m.read_details();
    EXPECT_EQ(r.throttling->nr_periods, 100);
    EXPECT_EQ(r.throttling->nr_throttled, 40);
    EXPECT_DOUBLE_EQ(r.throttling->throttled_seconds, 2.0);
    EXPECT_FALSE(r.throttling_delta);
    EXPECT_FALSE(r.throttled_fraction);

    t.write(job + "/cpu.stat", "nr_periods 150\nnr_throttled 80\nthrottled_time 5000000000\n");
    r = m.read_details();
    ASSERT_TRUE(r.throttling_delta);
    EXPECT_EQ(r.throttling_delta->nr_periods, 50);
    EXPECT_EQ(r.throttling_delta->nr_throttled, 40);
    EXPECT_DOUBLE_EQ(r.throttling_delta->throttled_seconds, 3.0);
    ASSERT_TRUE(r.throttled_fraction);
    EXPECT_DOUBLE_EQ(*r.throttled_fraction, 0.8);

    r = m.read_details();  // no period passed: a delta of zero, no fraction
    ASSERT_TRUE(r.throttling_delta);
    EXPECT_EQ(r.throttling_delta->nr_periods, 0);
    EXPECT_FALSE(r.throttled_fraction);

    t.write(job + "/cpu.stat", "nr_periods 3\nnr_throttled 1\nthrottled_time 10\n");  // the cgroup made anew
    r = m.read_details();
    EXPECT_FALSE(r.throttling_delta);
    EXPECT_EQ(r.throttling->nr_periods, 3);

    cgroup_tree v2;  // v2 counts throttled time in microseconds
    v2.v2("/j");
    v2.v2_level("sys/fs/cgroup/j", "50000 100000");
    v2.write("sys/fs/cgroup/j/cpu.stat", "usage_usec 1\nnr_periods 10\nnr_throttled 5\nthrottled_usec 250000\n");
    pfarm::cgroup_monitor m2(v2.path());
    EXPECT_DOUBLE_EQ(m2.read_details().throttling->throttled_seconds, 0.25);
    v2.write("sys/fs/cgroup/j/cpu.stat", "usage_usec 1\nnr_periods 20\nnr_throttled 6\nthrottled_usec 300000\n");
    const pfarm::cgroup_reading d = m2.read_details();
    EXPECT_DOUBLE_EQ(*d.throttled_fraction, 0.1);
    EXPECT_NEAR(d.throttling_delta->throttled_seconds, 0.05, 1e-12);
}

TEST(CgroupMonitor, FollowsAMoveAndAQuotaChange) {
    cgroup_tree t;
    t.v2("/one");
    t.v2_level("sys/fs/cgroup/one", "20000 100000");
    t.v2_level("sys/fs/cgroup/two", "max 100000");
    t.write("sys/fs/cgroup/one/cpu.stat", "nr_periods 10\nnr_throttled 5\nthrottled_usec 7\n");
    pfarm::cgroup_monitor m(t.path());
    EXPECT_DOUBLE_EQ(m.read_details().availability, 0.2);
    t.write("sys/fs/cgroup/one/cpu.max", "60000 100000\n");  // the quota changed under the running job
    pfarm::cgroup_reading r = m.read_details();
    EXPECT_DOUBLE_EQ(r.availability, 0.6);
    EXPECT_TRUE(r.throttling_delta);
    t.write("proc/self/cgroup", "0::/two\n");  // moved to an unlimited cgroup
    r = m.read_details();
    EXPECT_EQ(r.cgroup, "/two");
    EXPECT_FALSE(r.limit_cores);
    EXPECT_DOUBLE_EQ(r.availability, 1.0);
    t.write("sys/fs/cgroup/two/cpu.max", "30000 100000\n");
    r = m.read_details();
    EXPECT_DOUBLE_EQ(r.availability, 0.3);
    EXPECT_FALSE(r.throttling_delta);  // another cgroup's counters than the last ones read
}

TEST(CgroupMonitor, ThreadsGoneSinceTheListingAreNotCounted) {
    cgroup_tree t;
    t.v2("/j");
    t.v2_level("sys/fs/cgroup/j", "40000 100000");
    t.write("sys/fs/cgroup/j/cgroup.threads", "31\n32\n");
    t.thread(31, 'R');  // 32 has no proc entry: it exited
    const pfarm::cgroup_reading r = pfarm::cgroup_monitor(t.path()).read_details();
    EXPECT_EQ(r.runnable, 1);
    EXPECT_DOUBLE_EQ(r.availability, 0.4);
}

TEST(CgroupMonitor, MalformedFilesAreNamed) {
    const std::string job = "sys/fs/cgroup/cpu,cpuacct/job";
    const auto v1_with = [&](const std::string& file, const std::string& text) {
        auto t = std::make_unique<cgroup_tree>();
        t->v1("/job");
        t->v1_level(job, 20000, 100000);
        t->write(file, text);
        return t;
    };
    const auto read = [](const cgroup_tree& t) { return [&t] { pfarm::cgroup_monitor(t.path()).read_details(); }; };
    for (const char* quota : {"abc\n", "0\n", "-2\n", "\n", "20000 1\n"}) {
        auto t = v1_with(job + "/cpu.cfs_quota_us", quota);
        expect_cgroup_error(read(*t), t->at(job + "/cpu.cfs_quota_us"), "malformed");
    }
    for (const char* period : {"0\n", "x\n", "-100000\n"}) {
        auto t = v1_with(job + "/cpu.cfs_period_us", period);
        expect_cgroup_error(read(*t), t->at(job + "/cpu.cfs_period_us"), "malformed");
    }
    {
        auto t = v1_with(job + "/cpu.stat", "nr_periods 5\nthrottled_time 9\n");
        expect_cgroup_error(read(*t), t->at(job + "/cpu.stat"), "nr_throttled");
    }
    {
        auto t = v1_with(job + "/cpu.stat", "nr_periods five\nnr_throttled 1\nthrottled_time 9\n");
        expect_cgroup_error(read(*t), t->at(job + "/cpu.stat"), "malformed line 'nr_periods five'");
    }
    {
        auto t = v1_with(job + "/tasks", "12\nabc\n");
        expect_cgroup_error(read(*t), t->at(job + "/tasks"), "not a thread id");
    }
    {
        auto t = v1_with(job + "/tasks", "77\n");
        t->write("proc/77/stat", "77 no-parentheses R\n");
        expect_cgroup_error(read(*t), t->at("proc/77/stat"), "malformed");
    }
    {
        auto t = v1_with("proc/self/cgroup", "this is not a cgroup line\n");
        expect_cgroup_error(read(*t), t->at("proc/self/cgroup"), "malformed line");
    }
    {
        auto t = v1_with("proc/self/cgroup", "3:memory:/x\n");
        expect_cgroup_error(read(*t), t->at("proc/self/cgroup"), "neither");
    }
    {
        auto t = v1_with("proc/self/mountinfo", "31 30 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
        expect_cgroup_error(read(*t), t->at("proc/self/mountinfo"), "not mounted");
    }
    {
        auto t = v1_with("proc/self/mountinfo", "31 30 0:27 / /sys/fs/cgroup/memory rw cgroup cgroup\n");
        expect_cgroup_error(read(*t), t->at("proc/self/mountinfo"), "malformed line");
    }
    {
        auto t = v1_with("proc/loadavg", "");  // v1_with wrote a valid one: now it is empty
        try {
            pfarm::cgroup_monitor(t->path()).read_details();
            ADD_FAILURE() << "no exception";
        } catch (const pfarm::monitor_error& e) {
            EXPECT_EQ(e.monitor(), "loadavg") << e.what();
            EXPECT_EQ(e.source(), t->at("proc/loadavg").string()) << e.what();
        }
    }
    {
        auto t = std::make_unique<cgroup_tree>();
        t->v1("/job");  // the job's directory is missing
        expect_cgroup_error(read(*t), t->at(job + "/cpu.cfs_quota_us"), "cannot be opened");
    }
    for (const char* max : {"20000\n", "x 100000\n", "max\n", "max 0\n", "0 100000\n", "20000 100000 7\n"}) {
        cgroup_tree t;
        t.v2("/j");
        t.v2_level("sys/fs/cgroup/j", max);
        expect_cgroup_error(read(t), t.at("sys/fs/cgroup/j/cpu.max"), "malformed");
    }
    {
        cgroup_tree t;
        t.v2("/j");
        t.v2_level("sys/fs/cgroup/j", "20000 100000");
        t.write("sys/fs/cgroup/j/cpu.stat", "usage_usec 5\nnr_periods 1\nnr_throttled 0\nthrottled_time 0\n");
        expect_cgroup_error(read(t), t.at("sys/fs/cgroup/j/cpu.stat"), "throttled_usec");  // v1's key in v2
    }
}

TEST(CgroupMonitor, DefaultAvailabilityMonitor) {
    cgroup_tree none;  // a kernel without cgroups: no proc/self/cgroup
    EXPECT_EQ(pfarm::make_availability_monitor(none.path())->name(), "loadavg");

    cgroup_tree unlimited;
    unlimited.v2("/j");
    unlimited.v2_level("sys/fs/cgroup/j", "max 100000");
    EXPECT_EQ(pfarm::make_availability_monitor(unlimited.path())->name(), "loadavg");

    cgroup_tree limited;
    limited.v2("/j");
    limited.v2_level("sys/fs/cgroup/j", "max 100000");
    limited.v2_level("sys/fs/cgroup/j/k", "");
    limited.write("proc/self/cgroup", "0::/j/k\n");
    limited.v2_level("sys/fs/cgroup/j", "70000 100000");  // the parent's quota holds the child
    auto m = pfarm::make_availability_monitor(limited.path());
    EXPECT_EQ(m->name(), "cgroup");
    EXPECT_DOUBLE_EQ(*m->read().availability, 0.7);

    cgroup_tree broken;  // cgroup files that exist but do not parse: an error, not the load side alone
    broken.v2("/j");
    broken.v2_level("sys/fs/cgroup/j", "lots 100000");
    expect_cgroup_error([&] { pfarm::make_availability_monitor(broken.path()); },
                        broken.at("sys/fs/cgroup/j/cpu.max"), "malformed");

    EXPECT_THROW(pfarm::make_availability_monitor(""), pfarm::invalid_argument);
    EXPECT_THROW(pfarm::cgroup_monitor{""}, pfarm::invalid_argument);
}

TEST(CgroupMonitor, MadeByTheRegistryWithItsRoot) {
    cgroup_tree t;
    t.v2("/j");
    t.v2_level("sys/fs/cgroup/j", "60000 100000");
    pfarm::monitor_options o;
    o.root = t.path();
    auto m = pfarm::make_monitor("cgroup", o);
    EXPECT_EQ(m->name(), "cgroup");
    EXPECT_DOUBLE_EQ(*m->read().availability, 0.6);
}

TEST(MonitorsHere, CgroupReadsThisMachine) {
    // Whatever this machine's cgroups are, the reading is sane and agrees with cgroup_cpu_limit.
    pfarm::cgroup_monitor m;
    const pfarm::cgroup_reading r = m.read_details();
    EXPECT_TRUE(r.version == 1 || r.version == 2);
    EXPECT_FALSE(r.levels.empty());
    EXPECT_GT(r.availability, 0.0);
    EXPECT_LE(r.availability, 1.0);
    EXPECT_LE(r.availability, r.load.availability);
    EXPECT_EQ(r.limit_cores.has_value(), pfarm::cgroup_cpu_limit().has_value());
    if (r.limit_cores) {
        EXPECT_GE(r.runnable, 1);  // the reader itself is running
    }
    EXPECT_EQ(pfarm::make_availability_monitor()->name(), r.limit_cores ? "cgroup" : "loadavg");
}

}  // namespace
