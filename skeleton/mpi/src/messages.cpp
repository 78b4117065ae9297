// pfarm MPI engine: receives posted ahead, the wait on them, and the farmer's inbox order (messages.hpp).
#include "messages.hpp"

#include "pfarm/mpi.hpp"

#include <algorithm>
#include <chrono>
#include <list>
#include <mutex>
#include <thread>

namespace pfarm::detail {

posted_receive::~posted_receive() { cancel(); }

void posted_receive::post(MPI_Comm comm, int source, int tag) {
    buffer_.reserve(inline_capacity);
    mpi::check(MPI_Irecv(buffer_.data(), static_cast<int>(inline_capacity), MPI_BYTE, source, tag, comm, &request_),
               "MPI_Irecv");
}

void posted_receive::completed(const MPI_Status& status) {
    int bytes = 0;
    mpi::check(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
    source_ = status.MPI_SOURCE;
    bytes_ = static_cast<std::size_t>(bytes);
    request_ = MPI_REQUEST_NULL;
}

void posted_receive::cancel() {
    if (request_ == MPI_REQUEST_NULL) return;
    MPI_Cancel(&request_);
    MPI_Wait(&request_, MPI_STATUS_IGNORE);  // no throw: also called from the destructor
    request_ = MPI_REQUEST_NULL;
}

namespace {
/// Tries `test` until it succeeds: once when not `block`, else 200 quick tries and then with a pause that grows to
/// 0.5 ms, so that a rank waiting on a shared core leaves it to the ranks that compute.
template <class Test>
bool poll(Test test, bool block) {
    if (test()) return true;
    if (!block) return false;
    for (int spin = 0; spin < 200; ++spin)
        if (test()) return true;
    for (auto pause = std::chrono::microseconds(2);; pause = std::min(pause * 2, std::chrono::microseconds(500))) {
        std::this_thread::sleep_for(pause);
        if (test()) return true;
    }
}
/// A spent buffer holder from `spare` to use again, or a new one: buffers keep their capacity between messages.
template <class T>
std::unique_ptr<T> reuse_or_make(std::vector<std::unique_ptr<T>>& spare) {
    if (spare.empty()) return std::make_unique<T>();
    std::unique_ptr<T> x = std::move(spare.back());
    spare.pop_back();
    return x;
}

}  // namespace

int wait_any(int count, MPI_Request* requests, MPI_Status& status, bool block, bool gentle) {
    int index = MPI_UNDEFINED, flag = 0;
    if (block && !gentle) {
        mpi::check(MPI_Waitany(count, requests, &index, &status), "MPI_Waitany");
        return index;
    }
    const bool found = poll([&] {
        mpi::check(MPI_Testany(count, requests, &index, &flag, &status), "MPI_Testany");
        return flag && index != MPI_UNDEFINED;
    }, block);
    return found ? index : -1;
}

bool receive(MPI_Comm comm, int source, int tag, wire_buffer& buffer, bool block, bool gentle, MPI_Status& status) {
    buffer.reserve(inline_capacity);
    if (block && !gentle) {
        mpi::check(MPI_Recv(buffer.data(), static_cast<int>(inline_capacity), MPI_BYTE, source, tag, comm, &status), "MPI_Recv");
        return true;
    }
    MPI_Message message = MPI_MESSAGE_NULL;
    const bool found = poll([&] {
        int flag = 0;
        mpi::check(MPI_Improbe(source, tag, comm, &flag, &message, &status), "MPI_Improbe");
        return flag != 0;
    }, block);
    if (!found) return false;
    int bytes = 0;
    mpi::check(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
    mpi::check(MPI_Mrecv(buffer.data(), bytes, MPI_BYTE, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
    return true;
}

following_payloads::~following_payloads() {
    for (MPI_Request& r : requests_)  // an exception unwinds the farm: the worker's send is received and dropped
        if (r != MPI_REQUEST_NULL) MPI_Wait(&r, MPI_STATUS_IGNORE);
}

void send_detached(MPI_Comm comm, std::vector<std::byte> bytes, int to, int tag) {
    static std::mutex guard;
    static std::list<std::vector<std::byte>> kept;  // a few bytes per rank lost, for the process's lifetime
    std::lock_guard<std::mutex> lock(guard);
    const std::vector<std::byte>& b = kept.emplace_back(std::move(bytes));
    MPI_Request request;
    mpi::check(MPI_Isend(b.data(), static_cast<int>(b.size()), MPI_BYTE, to, tag, comm, &request), "MPI_Isend");
    mpi::check(MPI_Request_free(&request), "MPI_Request_free");
}

void following_payloads::cancel() {
    // A receive already matched to a message whose sender died mid-way is never cancelled nor completed: it is given
    // a second, then abandoned with its buffer (kept for the process's lifetime: MPI may still write into it).
    static std::list<std::unique_ptr<payload>> abandoned;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    for (std::size_t i = 0; i < requests_.size(); ++i) {
        MPI_Request& r = requests_[i];
        if (r == MPI_REQUEST_NULL) continue;
        mpi::check(MPI_Cancel(&r), "MPI_Cancel");
        int done = 0;
        while (!done && std::chrono::steady_clock::now() < until)
            mpi::check(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (!done && pending_[i]) abandoned.push_back(std::move(pending_[i]));
        r = MPI_REQUEST_NULL;  // (a receive in place writes into the caller's output, which outlives the farm)
    }
    requests_.clear();
    pending_.clear();
}

void following_payloads::receive_in_place(std::byte* into, std::size_t bytes, int source, MPI_Comm comm) {
    MPI_Request r = MPI_REQUEST_NULL;
    mpi::check(MPI_Irecv(into, static_cast<int>(bytes), MPI_BYTE, source, tag_results, comm, &r), "MPI_Irecv");
    requests_.push_back(r);
    pending_.push_back(nullptr);
}

following_payloads::payload& following_payloads::receive(std::size_t bytes, int source, MPI_Comm comm, task_count first,
                                                         std::size_t index_bytes) {
    std::unique_ptr<payload> p = reuse_or_make(spare_);
    p->buffer.reserve(bytes);
    p->first = first;
    p->index_bytes = index_bytes;
    p->deliveries.clear();
    MPI_Request r = MPI_REQUEST_NULL;
    mpi::check(MPI_Irecv(p->buffer.data(), static_cast<int>(bytes), MPI_BYTE, source, tag_results, comm, &r), "MPI_Irecv");
    requests_.push_back(r);
    pending_.push_back(std::move(p));
    return *pending_.back();
}

std::size_t following_payloads::test(bool all) {
    const int count = static_cast<int>(requests_.size());
    done_.clear();
    if (all) {
        mpi::check(MPI_Waitall(count, requests_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
        for (auto& p : pending_) done_.push_back(std::move(p));
        requests_.clear();
        pending_.clear();
        return done_.size();
    }
    indices_.resize(requests_.size());
    int n = 0;
    mpi::check(MPI_Testsome(count, requests_.data(), &n, indices_.data(), MPI_STATUSES_IGNORE), "MPI_Testsome");
    if (n == MPI_UNDEFINED || n == 0) return 0;
    // Completed requests are MPI_REQUEST_NULL now; keep the others in order (a worker's payloads match in order).
    std::sort(indices_.begin(), indices_.begin() + n);
    for (int i = 0; i < n; ++i) done_.push_back(std::move(pending_[static_cast<std::size_t>(indices_[static_cast<std::size_t>(i)])]));
    std::size_t kept = 0;
    for (std::size_t i = 0; i < requests_.size(); ++i) {
        if (requests_[i] == MPI_REQUEST_NULL) continue;
        requests_[kept] = requests_[i];
        pending_[kept] = std::move(pending_[i]);
        ++kept;
    }
    requests_.resize(kept);
    pending_.resize(kept);
    return done_.size();
}

void following_payloads::recycle(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        if (done_[i]) spare_.push_back(std::move(done_[i]));
    done_.clear();
}

std::size_t received_message::bytes() const {
    if (known != unknown) return known;
    int count = 0;
    mpi::check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
    return static_cast<std::size_t>(count);
}

farmer_inbox::farmer_inbox(MPI_Comm comm, bool reclaim, bool gentle, bool may_lose)
    : comm_(comm), reclaim_(reclaim), gentle_(gentle), may_lose_(may_lose), otherwise_(reclaim || gentle || may_lose) {
    buffer_.reserve(inline_capacity);
    message_.data = buffer_.data();
    if (!reclaim_ || may_lose_) return;  // with may_lose nothing is posted ahead: matched by a probe instead
    answer_.post(comm_, MPI_ANY_SOURCE, tag_released);
    requests_[0] = answer_.request();
    request_.post(comm_, MPI_ANY_SOURCE, tag_request);
    requests_[1] = request_.request();
}

const received_message* farmer_inbox::next_otherwise(bool block) {
    if (may_lose_) [[unlikely]] {
        if (block) throw internal_error("farmer_inbox: a blocking next() where a sender may be lost");
        return next_matched();
    }
    MPI_Status status;
    if (!reclaim_) {
        if (!receive(comm_, MPI_ANY_SOURCE, tag_request, buffer_, block, gentle_, status)) return nullptr;
        message_ = {status.MPI_SOURCE, buffer_.data(), status, received_message::unknown};
        return &message_;
    }
    int index = -1, flag = 0;
    mpi::check(MPI_Test(&requests_[0], &flag, &status), "MPI_Test");  // a victim's answer first
    if (flag) index = 0;
    else index = wait_any(2, requests_, status, block, gentle_);      // then whatever comes
    if (index < 0) return nullptr;
    taken_ = index == 0 ? &answer_ : &request_;
    taken_->request() = MPI_REQUEST_NULL;
    taken_->completed(status);
    message_ = {taken_->source(), taken_->data(), status, taken_->bytes()};
    return &message_;
}

const received_message* farmer_inbox::next_matched() {
    int flag = 0;
    MPI_Message matched = MPI_MESSAGE_NULL;
    MPI_Status status;
    if (reclaim_)  // a victim's answer first
        mpi::check(MPI_Improbe(MPI_ANY_SOURCE, tag_released, comm_, &flag, &matched, &status), "MPI_Improbe");
    if (!flag) mpi::check(MPI_Improbe(MPI_ANY_SOURCE, tag_request, comm_, &flag, &matched, &status), "MPI_Improbe");
    if (flag) {
        std::unique_ptr<incoming> x = reuse_or_make(spare_);
        int bytes = 0;
        mpi::check(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
        x->buffer.reserve(std::max(static_cast<std::size_t>(bytes), inline_capacity));
        x->in = false;
        x->message = {status.MPI_SOURCE, x->buffer.data(), status, static_cast<std::size_t>(bytes)};
        mpi::check(MPI_Imrecv(x->buffer.data(), bytes, MPI_BYTE, &matched, &x->request), "MPI_Imrecv");
        incoming_.push_back(std::move(x));
    }
    for (std::size_t i = 0; i < incoming_.size(); ++i) {
        incoming& x = *incoming_[i];
        if (!x.in) {
            int done = 0;
            // An error here is the message's, not the farm's (its sender died mid-way, and MPI says so instead of
            // waiting): nothing came, the receive is given up; the session presumes the sender lost at its deadline.
            if (MPI_Test(&x.request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
                abandon(i--);
                continue;
            }
            x.in = done != 0;
        }
        if (!x.in) continue;
        bool earlier = false;  // one of its sender's matched before it, not in yet (an earlier one in went first)
        for (std::size_t j = 0; j < i && !earlier; ++j) earlier = incoming_[j]->message.source == x.message.source;
        if (earlier) continue;
        returned_ = std::move(incoming_[i]);
        incoming_.erase(incoming_.begin() + static_cast<std::ptrdiff_t>(i));
        return &returned_->message;
    }
    return nullptr;
}

void farmer_inbox::abandon(std::size_t i) {
    // MPI may still write into the buffer: it is kept, with the request, for the process's lifetime (one message per
    // lost rank: a worker waits for the answer to its request).
    static std::mutex guard;
    static std::list<std::unique_ptr<incoming>> abandoned;
    std::lock_guard<std::mutex> lock(guard);
    abandoned.push_back(std::move(incoming_[i]));
    incoming_.erase(incoming_.begin() + static_cast<std::ptrdiff_t>(i));
}

std::size_t farmer_inbox::on_their_way() const noexcept {
    std::size_t n = 0;
    for (const auto& x : incoming_) n += x->in ? 0 : 1;
    return n;
}

void farmer_inbox::release_otherwise() {
    if (taken_) repost();
    if (returned_) spare_.push_back(std::move(returned_));
}

void farmer_inbox::repost() {
    const bool answer = taken_ == &answer_;
    taken_->post(comm_, MPI_ANY_SOURCE, answer ? tag_released : tag_request);
    requests_[answer ? 0 : 1] = taken_->request();
    taken_ = nullptr;
}

void farmer_inbox::close() {
    while (!incoming_.empty()) {  // may_lose: messages from ranks presumed lost (the others have ended)
        incoming& x = *incoming_.back();
        int done = x.in ? 1 : 0;
        if (!done && MPI_Test(&x.request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) x.in = true;
        if (x.in) incoming_.pop_back();
        else abandon(incoming_.size() - 1);
    }
    for (MPI_Request& r : requests_)
        if (r != MPI_REQUEST_NULL) {
            MPI_Cancel(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            r = MPI_REQUEST_NULL;
        }
    answer_.request() = MPI_REQUEST_NULL;
    request_.request() = MPI_REQUEST_NULL;
}

void end_traffic(MPI_Comm comm, bool receives, bool gentle) {
    MPI_Request barrier = MPI_REQUEST_NULL;
    mpi::check(MPI_Ibarrier(comm, &barrier), "MPI_Ibarrier");
    if (!receives) {
        mpi::check(MPI_Wait(&barrier, MPI_STATUS_IGNORE), "MPI_Wait");
        return;
    }
    std::vector<std::byte> dropped;
    for (;;) {
        int entered = 0;
        mpi::check(MPI_Test(&barrier, &entered, MPI_STATUS_IGNORE), "MPI_Test");
        if (entered) return;
        int flag = 0;
        MPI_Message message;
        MPI_Status status;
        mpi::check(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &message, &status), "MPI_Improbe");
        if (!flag) {
            if (gentle) std::this_thread::sleep_for(std::chrono::microseconds(20));
            continue;
        }
        int bytes = 0;
        mpi::check(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
        dropped.resize(static_cast<std::size_t>(std::max(bytes, 1)));
        mpi::check(MPI_Mrecv(dropped.data(), bytes, MPI_BYTE, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
    }
}

bool probe_until(MPI_Comm comm, int source, int tag, double seconds, MPI_Status& status) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
        int flag = 0;
        mpi::check(MPI_Iprobe(source, tag, comm, &flag, &status), "MPI_Iprobe");
        if (flag) return true;
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

}  // namespace pfarm::detail
