#include <pfarm/mpi.hpp>
#include <pfarm/round_robin.hpp>

#include <cstdio>

int main() {
    const auto s = pfarm::schedule_round_robin("gss", 100, 4, {});
    std::printf("consumer: gss gave %zu chunks, first %lld\n", s.handouts.size(),
                static_cast<long long>(s.handouts.front().work.count));
    return s.handouts.front().work.count == 25 ? 0 : 1;
}
