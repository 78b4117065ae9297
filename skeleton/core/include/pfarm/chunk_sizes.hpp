// pfarm scheduling core: the sizes of the chunks one worker was handed, in hand-out order, kept as runs of equal
// sizes, so that the memory a farm's report takes grows with the changes of chunk size and not with the number of
// requests (a million chunks of size 1 are one run, not a million entries; docs/reliability.md "Load").
//
// It reads like a sequence of task counts: size(), operator[], front(), back(), a forward iterator, equality with
// another chunk_sizes or a std::vector<task_count>; push_back appends. set() and erase() change one entry (the
// farmer session shrinks a reclaimed chunk and forgets a cancelled one: always one of a worker's last two, so both
// are O(1) there; anywhere else they are O(runs)). Runs stay canonical (no two neighbours of one size, no empty
// run), so two equal sequences have equal runs.
#pragma once

#include "pfarm/technique.hpp"

#include <cstddef>
#include <initializer_list>
#include <iosfwd>
#include <iterator>
#include <vector>

namespace pfarm {

class chunk_sizes {
public:
    /// `repeat` chunks of `size` tasks each, one after the other.
    struct run {
        task_count size = 0;
        task_count repeat = 0;
        bool operator==(const run&) const = default;
    };

    /// Forward iterator over the sizes (a value, not a reference: the sizes are not stored one by one).
    class const_iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = task_count;
        using difference_type = std::ptrdiff_t;
        using pointer = void;
        using reference = task_count;

        const_iterator() = default;
        task_count operator*() const { return (*runs_)[run_].size; }
        const_iterator& operator++() {
            if (++offset_ == (*runs_)[run_].repeat) ++run_, offset_ = 0;
            return *this;
        }
        const_iterator operator++(int) {
            const_iterator was = *this;
            ++*this;
            return was;
        }
        bool operator==(const const_iterator& o) const { return run_ == o.run_ && offset_ == o.offset_; }

    private:
        friend class chunk_sizes;
        const_iterator(const std::vector<run>* runs, std::size_t at, task_count offset) : runs_(runs), run_(at), offset_(offset) {}
        const std::vector<run>* runs_ = nullptr;
        std::size_t run_ = 0;
        task_count offset_ = 0;
    };
    using value_type = task_count;
    using iterator = const_iterator;

    chunk_sizes() = default;
    chunk_sizes(std::initializer_list<task_count> sizes);
    explicit chunk_sizes(const std::vector<task_count>& sizes);

    /// Appends one chunk of `size`: inline, as the farmer session and every worker call it once per chunk.
    void push_back(task_count size) {
        if (!runs_.empty() && runs_.back().size == size) [[likely]] {
            ++runs_.back().repeat, ++count_, total_ += size;
            return;
        }
        append(size, 1);
    }
    /// Appends `repeat` chunks of `size` (repeat >= 1).
    void append(task_count size, task_count repeat);
    /// The sequence without its first `n` entries (n <= size()).
    chunk_sizes drop_front(std::size_t n) const;

    std::size_t size() const noexcept { return count_; }
    bool empty() const noexcept { return count_ == 0; }
    /// Entry i; inline where the session reads it, in the last run (the chunks in flight are the latest).
    task_count operator[](std::size_t i) const {
        if (i < count_ && i >= count_ - static_cast<std::size_t>(runs_.back().repeat)) [[likely]]
            return runs_.back().size;
        return runs_[locate(i).first].size;
    }
    task_count front() const { return runs_.front().size; }
    task_count back() const { return runs_.back().size; }
    task_count total() const noexcept { return total_; }  ///< the sum of the sizes: the tasks handed out
    void set(std::size_t i, task_count size);
    void erase(std::size_t i);
    void clear() noexcept { runs_.clear(), count_ = 0, total_ = 0; }

    const std::vector<run>& runs() const noexcept { return runs_; }
    std::vector<task_count> to_vector() const;

    const_iterator begin() const { return {&runs_, 0, 0}; }
    const_iterator end() const { return {&runs_, runs_.size(), 0}; }

    bool operator==(const chunk_sizes& o) const { return runs_ == o.runs_; }
    bool operator==(const std::vector<task_count>& sizes) const;

private:
    /// The run holding entry i, and i's offset in it (i < size()); searched from the back, where the changes are.
    std::pair<std::size_t, task_count> locate(std::size_t i) const;
    void merge_around(std::size_t at);  ///< merges run `at` with equal neighbours and drops it when empty

    std::vector<run> runs_;
    std::size_t count_ = 0;
    task_count total_ = 0;
};

/// Writes the sizes as a list, a run of more than two as "SIZE x REPEAT": "[15, 8, 3, 1 x 1000]".
std::ostream& operator<<(std::ostream& out, const chunk_sizes& sizes);

}  // namespace pfarm
