// pfarm scheduling core: chunk_sizes, a worker's chunk sizes kept as runs of equal sizes (chunk_sizes.hpp).
#include "pfarm/chunk_sizes.hpp"

#include "pfarm/error.hpp"

#include <algorithm>
#include <ostream>

#include <string>

namespace pfarm {

chunk_sizes::chunk_sizes(std::initializer_list<task_count> sizes) {
    for (task_count s : sizes) push_back(s);
}

chunk_sizes::chunk_sizes(const std::vector<task_count>& sizes) {
    for (task_count s : sizes) push_back(s);
}

void chunk_sizes::append(task_count size, task_count repeat) {
    if (repeat < 1) throw internal_error("chunk_sizes::append: repeat " + std::to_string(repeat) + "; expected >= 1");
    if (!runs_.empty() && runs_.back().size == size)
        runs_.back().repeat += repeat;
    else
        runs_.push_back({size, repeat});
    count_ += static_cast<std::size_t>(repeat);
    total_ += size * repeat;
}

chunk_sizes chunk_sizes::drop_front(std::size_t n) const {
    if (n > count_) throw internal_error("chunk_sizes::drop_front: " + std::to_string(n) + " of " + std::to_string(count_));
    chunk_sizes rest;
    for (const run& r : runs_) {
        const auto skip = static_cast<task_count>(std::min<std::size_t>(n, static_cast<std::size_t>(r.repeat)));
        n -= static_cast<std::size_t>(skip);
        if (r.repeat > skip) rest.append(r.size, r.repeat - skip);
    }
    return rest;
}

std::pair<std::size_t, task_count> chunk_sizes::locate(std::size_t i) const {
    if (i >= count_) throw internal_error("chunk_sizes: entry " + std::to_string(i) + " of " + std::to_string(count_));
    std::size_t after = count_;  // entries from the start of run r on
    for (std::size_t r = runs_.size(); r-- > 0;) {
        after -= static_cast<std::size_t>(runs_[r].repeat);
        if (i >= after) return {r, static_cast<task_count>(i - after)};
    }
    throw internal_error("chunk_sizes: runs do not add up to the count");
}

void chunk_sizes::set(std::size_t i, task_count size) {
    const auto [r, offset] = locate(i);
    const run was = runs_[r];
    if (was.size == size) return;
    total_ += size - was.size;
    // run r becomes up to three: the entries before i, i itself, the entries after
    runs_.erase(runs_.begin() + static_cast<std::ptrdiff_t>(r));
    std::size_t at = r;
    if (was.repeat - offset - 1 > 0) runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(r), run{was.size, was.repeat - offset - 1});
    runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(r), run{size, 1});
    if (offset > 0) runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(r), run{was.size, offset}), at = r + 1;
    merge_around(at);
}

void chunk_sizes::erase(std::size_t i) {
    const auto r = locate(i).first;
    total_ -= runs_[r].size;
    --runs_[r].repeat;
    --count_;
    merge_around(r);
}

void chunk_sizes::merge_around(std::size_t at) {
    const auto gone = [this](std::size_t r) { runs_.erase(runs_.begin() + static_cast<std::ptrdiff_t>(r)); };
    if (runs_[at].repeat == 0) {
        gone(at);
        if (at > 0 && at < runs_.size() && runs_[at - 1].size == runs_[at].size) runs_[at - 1].repeat += runs_[at].repeat, gone(at);
        return;
    }
    if (at + 1 < runs_.size() && runs_[at + 1].size == runs_[at].size) runs_[at].repeat += runs_[at + 1].repeat, gone(at + 1);
    if (at > 0 && runs_[at - 1].size == runs_[at].size) runs_[at - 1].repeat += runs_[at].repeat, gone(at);
}

std::vector<task_count> chunk_sizes::to_vector() const { return {begin(), end()}; }

bool chunk_sizes::operator==(const std::vector<task_count>& sizes) const {
    if (sizes.size() != count_) return false;
    auto it = sizes.begin();
    for (const run& r : runs_)
        for (task_count k = 0; k < r.repeat; ++k)
            if (*it++ != r.size) return false;
    return true;
}

std::ostream& operator<<(std::ostream& out, const chunk_sizes& sizes) {
    out << '[';
    const char* comma = "";
    for (const chunk_sizes::run& r : sizes.runs()) {
        if (r.repeat > 2) {
            out << comma << r.size << " x " << r.repeat;
        } else {
            for (task_count k = 0; k < r.repeat; ++k, comma = ", ") out << (k ? ", " : comma) << r.size;
        }
        comma = ", ";
    }
    return out << ']';
}

}  // namespace pfarm
