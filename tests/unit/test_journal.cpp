// The journal file (pfarm/journal.hpp): records read back as written; a skipped task's failure replaces its fill
// and a later output the failure; a torn or corrupt tail is dropped and
// appending resumes after the last whole record; a journal of another workload, a file that is not a journal,
// a directory and an unwritable path are refused naming the argument.
#include "pfarm/error.hpp"
#include "pfarm/journal.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

std::string temp_path(const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / "pfarm-journal-test";
    std::filesystem::create_directories(dir);
    const auto p = dir / name;
    std::filesystem::remove_all(p);
    return p.string();
}

void write_three(const std::string& path) {
    pfarm::journal_writer w(path, 42, 10, 0);
    const double a = 1.5, b = 2.5;
    w.append(3, &a, sizeof a);
    w.append(7, &b, sizeof b);
    w.append(0, nullptr, 0);  // an empty result is a result
    w.close();
}

TEST(Journal, RecordsReadBackAsWritten) {
    const auto path = temp_path("three");
    write_three(path);
    const auto j = pfarm::read_journal(path, 42, 10);
    ASSERT_EQ(j.outputs.size(), 3u);
    double v = 0;
    std::memcpy(&v, j.outputs.at(7).data(), sizeof v);
    EXPECT_EQ(v, 2.5);
    EXPECT_TRUE(j.outputs.at(0).empty());
    EXPECT_EQ(j.dropped_bytes, 0u);
    EXPECT_EQ(j.valid_bytes, std::filesystem::file_size(path));
}

TEST(Journal, AFailedTaskReplacesItsFillAndALaterOutputReplacesTheFailure) {
    const auto path = temp_path("failed");
    {
        pfarm::journal_writer w(path, 42, 10, 0);
        const double fill = 0.0, ok = 4.5;
        w.append(2, &ok, sizeof ok);
        w.append(5, &fill, sizeof fill);  // a skipped task's fill, then its failure (on_task_error skip)
        w.append_failure(5, "flaky task 5");
        w.append(8, &fill, sizeof fill);
        w.append_failure(8, "eight");
        w.close();
    }
    auto j = pfarm::read_journal(path, 42, 10);
    EXPECT_EQ(j.outputs.size(), 1u);  // only task 2: a rerun computes 5 and 8 again
    EXPECT_EQ(j.outputs.count(5), 0u);
    ASSERT_EQ(j.failed.size(), 2u);
    EXPECT_EQ(j.failed.at(5), "flaky task 5");
    EXPECT_EQ(j.failed.at(8), "eight");
    {
        pfarm::journal_writer w(path, 42, 10, j.valid_bytes);  // the rerun: task 5 succeeds
        const double five = 5.5;
        w.append(5, &five, sizeof five);
        w.close();
    }
    j = pfarm::read_journal(path, 42, 10);
    ASSERT_EQ(j.outputs.count(5), 1u);
    double v = 0;
    std::memcpy(&v, j.outputs.at(5).data(), sizeof v);
    EXPECT_EQ(v, 5.5);
    EXPECT_EQ(j.failed.count(5), 0u);
    EXPECT_EQ(j.failed.count(8), 1u);
}

TEST(Journal, ALostRankIsNamedAndRestoresNothing) {
    const auto path = temp_path("lost");
    {
        pfarm::journal_writer w(path, 42, 10, 0);
        const double ok = 1.5;
        w.append(3, &ok, sizeof ok);
        w.append_lost(2, "rank 2 presumed lost");
        w.append_lost(12, "rank 12 presumed lost");  // a rank, not a task: beyond the task count is fine
        w.close();
    }
    const auto j = pfarm::read_journal(path, 42, 10);
    EXPECT_EQ(j.outputs.size(), 1u);
    EXPECT_EQ(j.failed.size(), 0u);
    ASSERT_EQ(j.lost.size(), 2u);
    EXPECT_EQ(j.lost[0], (std::pair<int, std::string>{2, "rank 2 presumed lost"}));
    EXPECT_EQ(j.lost[1].first, 12);
    EXPECT_EQ(j.dropped_bytes, 0u);
}

TEST(Journal, ARecordOfUnknownKindIsRefused) {
    const auto path = temp_path("kind");
    write_three(path);
    {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(32 + 4);  // the first record's flags, after the 32-byte header and its magic
        const std::uint32_t kind = 7;
        f.write(reinterpret_cast<const char*>(&kind), sizeof kind);
    }
    // its checksum does not cover the flags: the record stays whole, and its kind is refused by name
    try {
        pfarm::read_journal(path, 42, 10);
        FAIL() << "accepted a record of kind 7";
    } catch (const pfarm::invalid_argument& e) {
        EXPECT_EQ(e.argument(), "journal");
        EXPECT_NE(std::string(e.what()).find("unknown kind 7"), std::string::npos) << e.what();
    }
}

TEST(Journal, MissingOrEmptyFileIsANewJournal) {
    const auto path = temp_path("missing");
    EXPECT_TRUE(pfarm::read_journal(path, 1, 5).outputs.empty());
    std::ofstream(path).close();
    EXPECT_TRUE(pfarm::read_journal(path, 1, 5).outputs.empty());
}

TEST(Journal, TornTailIsDroppedAndAppendingResumesAfterTheLastWholeRecord) {
    const auto path = temp_path("torn");
    write_three(path);
    const auto whole = std::filesystem::file_size(path);
    std::filesystem::resize_file(path, whole - 5);  // the last record cut short, as by a kill mid-write
    auto j = pfarm::read_journal(path, 42, 10);
    EXPECT_EQ(j.outputs.size(), 2u);
    EXPECT_GT(j.dropped_bytes, 0u);
    {
        pfarm::journal_writer w(path, 42, 10, j.valid_bytes);
        const double c = 9.0;
        w.append(9, &c, sizeof c);
        w.close();
    }
    j = pfarm::read_journal(path, 42, 10);
    EXPECT_EQ(j.outputs.size(), 3u);
    EXPECT_TRUE(j.outputs.count(9));
    EXPECT_EQ(j.dropped_bytes, 0u);
}

TEST(Journal, CorruptRecordEndsTheJournalThere) {
    const auto path = temp_path("corrupt");
    write_three(path);
    {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(32 + 24 + 2);  // inside the first record's output bytes
        f.put('\x7f');
    }
    const auto j = pfarm::read_journal(path, 42, 10);
    EXPECT_TRUE(j.outputs.empty());
    EXPECT_GT(j.dropped_bytes, 0u);
}

TEST(Journal, AnotherWorkloadIsRefused) {
    const auto path = temp_path("other");
    write_three(path);
    try {
        (void)pfarm::read_journal(path, 43, 10);
        FAIL() << "another fingerprint was accepted";
    } catch (const pfarm::invalid_argument& e) {
        EXPECT_EQ(e.argument(), "journal");
        EXPECT_NE(std::string(e.what()).find("another workload"), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)pfarm::read_journal(path, 42, 11), pfarm::invalid_argument);  // another task count
}

TEST(Journal, NotAJournalDirectoryAndUnwritablePathAreRefused) {
    const auto path = temp_path("garbage");
    std::ofstream(path) << "time,rank\n0,1\n";
    EXPECT_THROW((void)pfarm::read_journal(path, 1, 5), pfarm::invalid_argument);
    const auto dir = temp_path("a-directory");
    std::filesystem::create_directories(dir);
    EXPECT_THROW((void)pfarm::read_journal(dir, 1, 5), pfarm::invalid_argument);
    EXPECT_THROW(pfarm::journal_writer(dir, 1, 5, 0), pfarm::invalid_argument);
    EXPECT_THROW(pfarm::journal_writer("/nonexistent-dir/j", 1, 5, 0), pfarm::invalid_argument);
}

TEST(Journal, RecordOutOfRangeIsRefused) {
    const auto path = temp_path("range");
    {
        pfarm::journal_writer w(path, 42, 100, 0);
        const double a = 1.0;
        w.append(50, &a, sizeof a);
        w.close();
    }
    // The same fingerprint with 10 tasks is refused by the task count before any record is read; a record
    // beyond the count can only come from a forged header, which the header checksum catches.
    EXPECT_THROW((void)pfarm::read_journal(path, 42, 10), pfarm::invalid_argument);
}

}  // namespace
