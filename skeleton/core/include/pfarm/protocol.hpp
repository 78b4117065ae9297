// pfarm scheduling core: the farm's messages, as the farmer and worker sessions exchange them.
//
// A transport (MPI, the simulator, an in-process loop) carries these between a farmer_session and its
// worker_sessions; how they are encoded on a wire is the transport's business (the MPI engine's is
// skeleton/mpi/src/wire.hpp). The rules of the exchange are in farmer_session.hpp and worker_session.hpp.
#pragma once

#include "pfarm/sample.hpp"
#include "pfarm/technique.hpp"

#include <cstdint>
#include <string>

namespace pfarm {

/// Worker -> farmer.
struct request_message {
    enum class kind : std::int32_t {
        ask = 1,       ///< "here are my results (if `done` holds any), give me work"
        final = 2,     ///< "here are my results; I want nothing more" (after a stop, with prefetch)
        failure = 3,   ///< "task failed_task threw `text`" (failed_task -1: the worker itself failed)
        released = 4,  ///< "I gave back `done`, the end of a chunk I hold" (count 0: nothing) after a reclaim
        /// "here are my results; I ask for nothing now" (prefetch: its next chunk came already); with no results
        /// (`done` count 0), a keep-alive: "I live and still compute what I hold" (farmer_session.hpp "Lost workers")
        results = 5,
        dropped = 6,   ///< "I dropped `done`, as told (cancel), without its results"
        /// "task failed_task, of a chunk I hold, threw `text`; I go on with the chunk" (on_task_error retry or skip:
        /// its results in the chunk's are the fill); sent when it fails, before the chunk's results
        task_error = 7,
    };
    kind what = kind::ask;
    chunk done;                 ///< ask/final: the chunk whose results travel with it (count 0: none)
    double seconds = 0.0;       ///< its compute time (emulated slowdown included)
    double started = 0.0;       ///< when it started and finished computing, on the farmer's clock
    double finished = 0.0;
    bool has_sample = false;    ///< `sample` holds the readings the request must carry
    resource_sample sample;
    task_count failed_task = -1;  ///< failure, task_error: the task
    std::string text;           ///< failure, task_error: the message
};

/// Farmer -> worker.
struct reply_message {
    enum class kind : std::int32_t {
        assign = 1,   ///< compute `work`
        stop = 2,     ///< nothing more: send the results you hold (final), then end
        abort = 3,    ///< the farm failed: end at once
        reclaim = 4,  ///< give back part of your unstarted tasks (victim_gives); answer with `released`
        later = 5,    ///< nothing now: ask again with nothing in hand, and ask ahead no more (prefetch)
        cancel = 6,   ///< drop chunk `work` (computed elsewhere: stragglers) and answer `dropped`, if you still hold it
    };
    kind what = kind::assign;
    bool calibration = false;    ///< assign: the chunk is this worker's calibration task
    chunk work;                  ///< assign, cancel
    double share = 0.0;          ///< reclaim: the farmer's share of the unstarted tasks
    double thief_seconds = 0.0;  ///< reclaim: the thief's expected seconds per task on the victim's chunk (0: unknown)
    double thief_busy = 0.0;     ///< reclaim: seconds of work the thief still holds
    int thieves = 1;             ///< reclaim: the idle workers the share is for (decision::thieves)
};

/// A reply of kind `what`, its other fields at their defaults.
inline reply_message reply(reply_message::kind what) {
    reply_message r;
    r.what = what;
    return r;
}

}  // namespace pfarm
