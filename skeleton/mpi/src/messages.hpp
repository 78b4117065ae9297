// pfarm MPI engine, internal: the farm's message tags and how the farmer and the workers wait for messages
// (docs/skeleton.md "Protocol"). Not installed; tests/mpi/test_messages.cpp includes it.
#pragma once

#include <mpi.h>

namespace pfarm::detail {

constexpr int tag_request = 1;   // worker -> farmer: request, final results, failure
constexpr int tag_reply = 2;     // farmer -> worker: every reply (assign, stop, abort, reclaim, later)
constexpr int tag_clock = 3;     // the clock ping-pong at setup
constexpr int tag_released = 4;  // worker -> farmer: a victim's answer to a reclaim (served first: next_farmer_message)

/// Waits for a message and takes it out of MPI's matching (a matched probe: the receive need not match it
/// again). With `gentle` (more ranks than cores on this node) it polls with a growing sleep instead of
/// MPI_Mprobe's busy wait, so an idle rank frees its core for a rank that computes.
MPI_Message wait_message(MPI_Comm comm, int source, int tag, MPI_Status* status, bool gentle);

/// The farmer's next message on the farm's own communicator `comm`. With `reclaim`, a victim's answer
/// (tag_released) goes first: it carries tasks for a thief that waits, while a request queued beside it is
/// mostly a worker that will wait or be sent to ask a victim; then the first message of any tag. Without,
/// requests only (tag_request). `block` false: MPI_MESSAGE_NULL when none has come.
MPI_Message next_farmer_message(MPI_Comm comm, bool reclaim, bool block, bool gentle, MPI_Status& status);

}  // namespace pfarm::detail
