// Fuzzes the journal reader (pfarm/journal.hpp read_journal, farm_options::resume.journal): the input is the file. The
// fingerprint and task count asked for are the header's own (when there is one), so that the fuzzer reaches the
// records. Invariants: a refusal is a pfarm::invalid_argument naming "journal"; an accepted journal's valid and
// dropped bytes add up to the file's size, every restored task is within [0, tasks), and what was accepted,
// written again through journal_writer, reads back the same.
#include "fuzz_support.hpp"

#include "pfarm/journal.hpp"

#include <cstring>
#include <string>

using pfarm::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& path = pfarm::fuzz::scratch_file(data, size);
    std::uint64_t fingerprint = 1, tasks = 10;
    if (size >= 24) std::memcpy(&fingerprint, data + 8, 8), std::memcpy(&tasks, data + 16, 8);
    if (tasks == 0 || tasks > (1ull << 40)) tasks = 10;
    const auto j = pfarm::fuzz::accepts("journal", [&] {
        return pfarm::read_journal(path, fingerprint, static_cast<pfarm::task_count>(tasks));
    });
    if (!j) return 0;
    check(j->valid_bytes + j->dropped_bytes == size, "valid and dropped bytes do not add up to the file");
    for (const auto& [i, bytes] : j->outputs) check(i >= 0 && static_cast<std::uint64_t>(i) < tasks, "a task out of range");
    if (j->outputs.empty()) return 0;
    const std::string copy = path + ".copy";
    std::remove(copy.c_str());
    {
        pfarm::journal_writer w(copy, fingerprint, static_cast<pfarm::task_count>(tasks), 0);
        for (const auto& [i, bytes] : j->outputs) w.append(i, bytes.data(), bytes.size());
        w.close();
    }
    const auto again = pfarm::read_journal(copy, fingerprint, static_cast<pfarm::task_count>(tasks));
    check(again.outputs == j->outputs && again.dropped_bytes == 0, "a journal written again does not read back the same");
    return 0;
}
