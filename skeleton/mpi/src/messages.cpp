#include "messages.hpp"

#include "pfarm/mpi.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace pfarm::detail {

MPI_Message wait_message(MPI_Comm comm, int source, int tag, MPI_Status* status, bool gentle) {
    MPI_Message message = MPI_MESSAGE_NULL;
    if (!gentle) {
        mpi::check(MPI_Mprobe(source, tag, comm, &message, status), "MPI_Mprobe");
        return message;
    }
    int flag = 0;
    for (int spin = 0; spin < 200; ++spin) {
        mpi::check(MPI_Improbe(source, tag, comm, &flag, &message, status), "MPI_Improbe");
        if (flag) return message;
    }
    auto pause = std::chrono::microseconds(2);
    for (;;) {
        mpi::check(MPI_Improbe(source, tag, comm, &flag, &message, status), "MPI_Improbe");
        if (flag) return message;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(500));
    }
}

MPI_Message next_farmer_message(MPI_Comm comm, bool reclaim, bool block, bool gentle, MPI_Status& status) {
    int flag = 0;
    MPI_Message message = MPI_MESSAGE_NULL;
    if (reclaim) {
        mpi::check(MPI_Improbe(MPI_ANY_SOURCE, tag_released, comm, &flag, &message, &status), "MPI_Improbe");
        if (flag) return message;
    }
    const int tag = reclaim ? MPI_ANY_TAG : tag_request;  // the farm's communicator carries nothing else then
    if (block) return wait_message(comm, MPI_ANY_SOURCE, tag, &status, gentle);
    mpi::check(MPI_Improbe(MPI_ANY_SOURCE, tag, comm, &flag, &message, &status), "MPI_Improbe");
    return flag ? message : MPI_MESSAGE_NULL;
}

}  // namespace pfarm::detail
