// The C++ consumers' program (tests/find-package): the scheduling core and a farm over MPI, through pfarm::pfarm.
#include <pfarm/pfarm.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
    pfarm::mpi::environment env(&argc, &argv);
    const auto s = pfarm::schedule_round_robin("gss", 100, 4, {});
    std::vector<double> in(100), out(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<double>(i);
    const auto report = pfarm::farm(MPI_COMM_WORLD, in, out, [](const double& x, double& y) { y = x * x; },
                                    {.schedule = {.technique = "gss"}});
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != 0) return 0;
    for (std::size_t i = 0; i < in.size(); ++i)
        if (out[i] != in[i] * in[i]) return 1;
    std::printf("consumer: gss gave %zu chunks, first %lld; farmed %lld tasks on %d ranks\n", s.handouts.size(),
                static_cast<long long>(s.handouts.front().work.count), static_cast<long long>(report.tasks),
                report.ranks);
    return s.handouts.front().work.count == 25 ? 0 : 1;
}
