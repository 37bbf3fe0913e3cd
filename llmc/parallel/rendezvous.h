// The bootstrap exchange that hands rank 0's NCCL unique id to every other rank before ncclCommInitRank.
//
// Rendezvous (--rendezvous, else default_rendezvous): how the 128-byte id travels.
//   tcp://HOST:PORT  rank 0 listens on PORT (all IPv4 addresses), the others connect to HOST. The torchrun
//                    default is MASTER_PORT+1: torchrun's own store already listens on MASTER_PORT.
//   file:PATH        rank 0 writes PATH atomically on a filesystem every rank sees; the others poll for it.
//                    Rank 0 removes it once everyone joined (cleanup_rendezvous): a stale id would hang
//                    a later run.
//   mpi              MPI_Bcast through the MPI library loaded at run time (dlopen: no build dependency on
//                    MPI).
// A world of one needs no exchange: bootstrap_broadcast returns at once (default_rendezvous gives None).
// Host-only.
#pragma once
#include <cstddef>
#include <functional>

#include "llmc/host/rendezvous_spec.h"

// Rank 0's `bytes` bytes at `data` reach every rank's `data`. Every rank calls it. All waits together are
// bounded by timeout_s (for mpi the MPI library bounds them: mpirun starts and aborts all ranks together).
// Throws std::runtime_error with one line naming the rendezvous and the rank, e.g.
// "rendezvous tcp://node1:29501: rank 1 could not reach rank 0 within 60 s (Connection refused)".
void bootstrap_broadcast(const Rendezvous& r, int rank, int world_size, void* data, size_t bytes,
                         double timeout_s);

// After every rank has joined (the caller runs a collective first): rank 0 removes a file rendezvous' file so
// the next run cannot read a stale id (a failure is only a warning on stderr). No-op otherwise.
void cleanup_rendezvous(const Rendezvous& r, int rank);

// TCP, the connecting side: whether socket fd is connected to itself. Connecting to a port of the ephemeral
// range that nobody listens on yet can pick that very port as the local one and "succeed" (TCP simultaneous
// open); the socket then holds the port, and rank 0's listen on it fails with "Address already in use" even
// after a plain close. When so, its close is made a reset (the port is free again at once) and true is
// returned: the caller closes it and tries again.
bool drop_self_connection(int fd);

// The mpi path with the library's symbols looked up through `sym` (dlsym on the loaded library; tests pass
// fakes). Open MPI when "ompi_mpi_comm_world" resolves (handles are pointers to ompi_mpi_comm_world /
// ompi_mpi_byte), else the MPICH ABI (int handles). MPI_Init, MPI_Bcast from rank 0, MPI_Finalize.
void mpi_broadcast_with(const std::function<void*(const char*)>& sym, void* data, size_t bytes);
