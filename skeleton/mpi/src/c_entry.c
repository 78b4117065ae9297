/* The paper's pfarm() (Gonzalez-Velez & Cole, "Adaptive statistical scheduling of divisible workloads in
 * heterogeneous systems", Fig. 5): C, because in C++ the name belongs to namespace pfarm. */
#include "pfarm.h"

void pfarm(pfarm_worker_fn worker, void *in_data, int in_length, MPI_Datatype in_type, void *out_data, int out_length,
           MPI_Datatype out_type, MPI_Comm comm, enum scheduling sched) {
    pfarm_sched(worker, in_data, in_length, in_type, out_data, out_length, out_type, comm, sched);
}
